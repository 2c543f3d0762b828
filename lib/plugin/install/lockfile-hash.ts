/**
 * The content hash pnpm 11 files its verdicts on lockfiles under (`lockfile-verified.jsonl`,
 * see supply-chain.ts): pnpm's `hashObject` (`@pnpm/crypto.object-hasher`: object-hash 3 with
 * the options below) of the lockfile as pnpm holds it in memory once read (lockfile/fs
 * `read.ts`, `convertToLockfileObject`), not of the file's bytes. So a fresh clone of a lockfile pnpm verified on this machine, at another
 * path, with other file times, or laid out differently in YAML, is the same lockfile to pnpm.
 *
 * The object is rebuilt from the native install's own reading of the file (lockfile-file.ts),
 * which holds the same values, shared the same way (a package's fields in every snapshot of
 * it): object-hash writes an object it meets a second time as a back reference, so sharing
 * changes the hash. What pnpm's reading adds or shares that is not rebuilt here gives no hash
 * (and the verdict is looked up by path only, as before).
 */
import objectHash from 'object-hash'
import type { LockfileFile } from './lockfile-file.js'
import type { PackageSnapshot } from './virtual-store.js'

/**
 * pnpm's `hashObject`: SHA-256 in base64, types not told apart, keys and array entries in any
 * order. Called through object-hash itself: pnpm's package would bring all of ramda into the
 * plugin's bundle.
 */
export const hashObject = (value: unknown): string => objectHash(value, {
  algorithm: 'sha256', encoding: 'base64', respectType: false, unorderedArrays: true, unorderedObjects: true, unorderedSets: true,
})

/**
 * A YAML alias (`*name`) or merge key (`<<:`): js-yaml shares the value it repeats, which the
 * native reader hands back as copies. pnpm never writes either.
 */
const SHARED_YAML_VALUE = /(?:^|[\s[{,])(?:\*[^\s,\]}]|<<\s*:)/m

/** Hosts whose tarball URLs pnpm's reader may mark `gitHosted` (`isGitHostedTarballUrl`). */
const GIT_HOSTS = new Set(['codeload.github.com', 'bitbucket.org', 'gitlab.com'])

function hostOf (url: unknown): string | undefined {
  try {
    return typeof url === 'string' ? new URL(url).hostname.toLowerCase() : undefined
  } catch {
    return undefined
  }
}

/**
 * Whether pnpm's reader changes the package's resolution: it gives a `file:` snapshot without
 * one a directory resolution, and flags a git host's archive URL `gitHosted`.
 */
function resolutionRewritten (snapshot: PackageSnapshot): boolean {
  const resolution = snapshot.resolution as Record<string, unknown> | undefined
  if (resolution == null) return true
  return resolution.type === undefined && resolution.gitHosted == null && GIT_HOSTS.has(hostOf(resolution.tarball) ?? '')
}

/** pnpm's in-memory `patchedDependencies`: each entry's hash (the file has `{ hash, path }` or the hash), or `null`: not read here. */
function patchHashes (patched: unknown): Record<string, unknown> | undefined | null {
  if (patched == null) return undefined
  if (typeof patched !== 'object' || Array.isArray(patched)) return null
  const hashes: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(patched)) {
    if (typeof value === 'string') hashes[key] = value
    else if (typeof value === 'object' && value !== null) hashes[key] = (value as { hash?: unknown }).hash
    else return null
  }
  return hashes
}

/** The importer fields rebuilt as pnpm's reader gives them. */
const IMPORTER_FIELDS = new Set(['specifiers', 'dependencies', 'devDependencies', 'optionalDependencies', 'publishDirectory', 'linkDirectory'])

/**
 * pnpm's content hash of the lockfile read from `text` (its main document) as `lockfile`, or
 * `undefined` where pnpm's in-memory object is not rebuilt exactly.
 */
export function lockfileContentHash (lockfile: LockfileFile, text: string): string | undefined {
  if (SHARED_YAML_VALUE.test(text)) return undefined
  if (Object.values(lockfile.packages ?? {}).some(resolutionRewritten)) return undefined
  const patchedDependencies = patchHashes(lockfile.patchedDependencies)
  if (patchedDependencies === null) return undefined
  const importers: Record<string, unknown> = {}
  for (const [id, importer] of Object.entries(lockfile.importers)) {
    // pnpm's importer keeps its other fields too (dependenciesMeta): not rebuilt here.
    if (Object.keys(importer).some((key) => !IMPORTER_FIELDS.has(key))) return undefined
    // pnpm's importer: the file's other fields as they are (the publish directory's), its
    // specifiers, and each group, `undefined` where the file has none.
    const { specifiers, dependencies, devDependencies, optionalDependencies, ...publish } = importer
    importers[id] = { ...publish, specifiers, dependencies, devDependencies, optionalDependencies }
  }
  return hashObject({ ...lockfile, patchedDependencies, packages: lockfile.packages ?? {}, importers })
}
