/**
 * Patched packages (`patchedDependencies`), for the native install. pnpm 11.28.11 applies a
 * patch in its build step and records the patched files in the store's side-effects cache
 * under a key ending in `;patch=<hash>`; a later install that finds them there imports the
 * package patched and marks it built (docs/native-install.md, "Builds from the side-effects
 * cache"). This reads which package pnpm patches with which patch, and checks the lockfile
 * agrees, as pnpm's frozen install checks it (lockfile/settings-checker `calcPatchHashes`,
 * patching/config `getPatchInfo`).
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { SIMPLE_RULE } from './side-effects.js'

/**
 * pnpm's hash of a patch file (crypto.hash `createHexHashFromFile`): SHA-256, hex, of its text
 * read as UTF-8 with CRLF line ends made LF; `undefined` when it cannot be read.
 */
export function patchFileHash (file: string): string | undefined {
  try {
    return createHash('sha256').update(fs.readFileSync(file, 'utf8').split('\r\n').join('\n')).digest('hex')
  } catch {
    return undefined
  }
}

/** The patch hash pnpm applies to each `name` or `name@version` key, or why this cannot tell. */
export type PatchHashes = Map<string, string>

/**
 * The configured patches' hashes, when they are what the lockfile records (pnpm refuses or
 * re-resolves a lockfile whose `patchedDependencies` differ), or why the install is left to
 * pnpm: a patch file missing (pnpm fails with ERR_PNPM_PATCH_NOT_FOUND), a key with a version
 * range (pnpm picks among ranges by semver).
 */
export function patchHashes (configured: Record<string, string> | undefined, locked: Record<string, string> | undefined, rootDir: string): PatchHashes | string {
  const hashes: PatchHashes = new Map()
  for (const [key, file] of Object.entries(configured ?? {})) {
    if (!SIMPLE_RULE.test(key)) return `a patchedDependencies key with a version range (${key})`
    const hash = patchFileHash(path.resolve(rootDir, file))
    if (hash == null) return `the patch file of ${key} cannot be read`
    hashes.set(key, hash)
  }
  const lockedKeys = Object.keys(locked ?? {})
  if (lockedKeys.length !== hashes.size || lockedKeys.some((key) => hashes.get(key) !== locked![key])) return 'patchedDependencies differ from the lockfile'
  return hashes
}

/** The hash of the patch pnpm applies to `name@version` (`undefined`: none): the exact version's, else the name's. */
export function patchOf (hashes: PatchHashes, name: string, version: string): string | undefined {
  return hashes.get(`${name}@${version}`) ?? hashes.get(name)
}

/**
 * The patch hash of the package a dependency path names (`name@1.0.0(patch_hash=…)(peer@1.0.0)`),
 * if any: the first of the groups that end the path, as pnpm reads it (deps/path
 * `indexOfDepPathSuffix`), not one inside a peer's group (`a@1.0.0(peer@2.0.0(patch_hash=…))`).
 */
export function patchHashInDepPath (depPath: string): string | undefined {
  // The groups start after the last character outside parentheses.
  let depth = 0
  let start = 0
  for (let i = depPath.length - 1; i >= 0; i--) {
    if (depPath[i] === ')') depth++
    else if (depPath[i] === '(') depth--
    else if (depth === 0) {
      start = i + 1
      break
    }
  }
  return /^\(patch_hash=([0-9a-f]+)\)/.exec(depPath.slice(start))?.[1]
}

/**
 * Each planned package pnpm patches, by dependency path, with its patch's hash (`locked`: the
 * lockfile's `patchedDependencies`); or why the install is left to pnpm (see `patchHashes`; a
 * package whose dependency path names another patch than the one pnpm would apply, or none).
 */
export function patchedPackages (locked: unknown, planned: Array<{ depPath: string, name: string, version: string }>, config: { patchedDependencies?: Record<string, string> }, rootDir: string): Map<string, string> | string {
  const hashes = patchHashes(config.patchedDependencies, locked as Record<string, string> | undefined, rootDir)
  if (typeof hashes === 'string') return hashes
  const patched = new Map<string, string>()
  for (const p of planned) {
    const hash = patchOf(hashes, p.name, p.version)
    if (hash !== patchHashInDepPath(p.depPath)) return `${p.depPath}: not the patch pnpm would apply to it`
    if (hash != null) patched.set(p.depPath, hash)
  }
  return patched
}
