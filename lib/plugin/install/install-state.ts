/**
 * The files pnpm 11 leaves in `node_modules` after an install, written as the running release
 * writes them (`pnpm-releases.ts` says how each release's workspace state differs),
 * so that pnpm's next `pnpm install` (its optimistic repeat-install check, which runs right
 * after `hooks.updateConfig`) finds the project up to date, and a later real install reads
 * them as its own (docs/native-install.md says which pnpm source each rule comes from):
 *
 * - `.modules.yaml`: the layout of the last install (JSON, despite the name);
 * - `.pnpm/lock.yaml`: the current lockfile, the main document of `pnpm-lock.yaml` for a full
 *   install;
 * - `.pnpm-workspace-state-v1.json`: what the up-to-date check compares, written last (so that
 *   an install cut short is never taken for up to date), with the `validation` block pnpm
 *   writes: the digests of every project's manifest and of the files the install read, and a
 *   time from the filesystem's clock. With it, pnpm's check proves the project up to date from
 *   these alone; without it (pnpm's older form), pnpm accepts the state too, but first reads
 *   the whole lockfile again to write the block itself (about 120 ms for alotta's).
 */
import fs from 'node:fs'
import path from 'node:path'
import { createHash, randomBytes } from 'node:crypto'
import { writeAtomically } from './atomic-write.js'
import type { PnpmConfig } from '../pnpm-config.js'
import { stateFormOf, type StateForm } from './pnpm-releases.js'

/** A project of the install, as the state files list it. */
export interface RecordedProject {
  /** The importer id (`.` for the root). */
  id: string
  dir: string
  manifest: { name?: string, version?: string, [field: string]: unknown }
}

/** What the state files say about one native install. */
export interface InstallRecord {
  /** The workspace root (the lockfile's directory). */
  rootDir: string
  /** `<rootDir>/node_modules`. */
  modulesDir: string
  /** The versioned store directory (`…/v11`). */
  storeDir: string
  /** pnpm's version, e.g. `11.28.11`. */
  pnpmVersion: string
  /** Every project, the root first, then by directory (pnpm's order). */
  projects: RecordedProject[]
  /** depPath → alias → where it was hoisted. */
  hoistedDependencies: Record<string, Record<string, 'private' | 'public'>>
  hoistPattern?: string[]
  publicHoistPattern?: string[]
  /** Packages whose row requires a build, in pnpm's walk order (pnpm ran none of them). */
  requireBuild: string[]
  /** Packages imported with their build's side effects from pnpm's cache (pnpm's `isBuilt`). */
  builtFromCache?: string[]
  /** The patch files of `patchedDependencies` (absolute), in their order: pnpm validates them first. */
  patchFiles?: string[]
  /** The projects whose own scripts wait for `pnpm rebuild` (scripts off), by importer id: pnpm lists them first. */
  pendingProjects: string[]
  /** The optional packages pnpm skips on this platform. */
  skipped: string[]
  /** The text of `pnpm-lock.yaml`'s own document (the current lockfile of a full install). */
  lockfileText: string
  /** `.package-map.json`'s text, when the release writes one (`packageMapText`). */
  packageMap?: string
  /** The registries, when the release records them in `.modules.yaml`. */
  registries?: Record<string, unknown>
}

/** `registriesByScope` without the default registry, scopes sorted. */
function registryRoutes (config: Record<string, unknown>): Record<string, unknown> {
  const byScope = (config.registriesByScope ?? {}) as Record<string, unknown>
  return Object.fromEntries(Object.keys(byScope).filter((k) => k !== 'default').sort().map((k) => [k, byScope[k]]))
}

/**
 * The settings as `form`'s release records them: configured values, a store dir resolved and
 * versioned, `ignoredOptionalDependencies` sorted (pnpm's install sorts the configured list in
 * place for the lockfile's settings before it records the state).
 */
function stateSettings (config: PnpmConfig & Record<string, unknown>, rootDir: string, form: StateForm): Record<string, unknown> {
  const settings: Record<string, unknown> = {}
  for (const key of [...form.settings, ...form.more]) {
    let value = config[key]
    if (value === undefined) continue
    if (key === 'storeDir') value = path.join(path.resolve(rootDir, value as string), 'v11')
    if (key === 'ignoredOptionalDependencies' && Array.isArray(value)) value = [...value].sort()
    settings[key] = value
  }
  if (form.registryRoutes) settings.registryRoutes = registryRoutes(config)
  return settings
}

/** `.modules.yaml` and `.pnpm/lock.yaml`: written before the workspace state. */
export function writeLayoutState (record: InstallRecord, config: PnpmConfig & Record<string, unknown>): void {
  const modules: Record<string, unknown> = {
    hoistedDependencies: record.hoistedDependencies,
    hoistPattern: record.hoistPattern,
    included: { dependencies: true, devDependencies: true, optionalDependencies: true },
    injectedDeps: {},
    // pnpm lists builds it left undecided (none here: those installs are left to it), and
    // only when its build step had something to take: with scripts on, a package to build (or
    // built); with scripts off, a package to patch (`builtFromCache` then has only those).
    ignoredBuilds: (config.ignoreScripts !== true ? record.requireBuild.length : 0) + (record.builtFromCache?.length ?? 0) > 0 ? [] : undefined,
    layoutVersion: 5,
    nodeLinker: 'isolated',
    packageManager: `pnpm@${record.pnpmVersion}`,
    // With scripts off, every build is pending: the projects', then the packages' in pnpm's walk order.
    pendingBuilds: config.ignoreScripts === true ? [...record.pendingProjects, ...record.requireBuild] : [],
    publicHoistPattern: record.publicHoistPattern,
    prunedAt: new Date().toUTCString(),
    registries: record.registries,
    // pnpm sorts them as JS sorts strings.
    skipped: [...record.skipped].sort(),
    storeDir: record.storeDir,
    virtualStoreDir: '.pnpm',
    virtualStoreDirMaxLength: config.virtualStoreDirMaxLength,
    allowBuilds: config.allowBuilds,
  }
  writeAtomically(path.join(record.modulesDir, '.pnpm', 'lock.yaml'), record.lockfileText)
  if (record.packageMap != null) writeAtomically(path.join(record.modulesDir, '.package-map.json'), record.packageMap)
  writeAtomically(path.join(record.modulesDir, '.modules.yaml'), JSON.stringify(modules, null, 2))
}

/** How long pnpm's digests are: hex characters of a SHA-256. */
const DIGEST_LENGTH = 32

/** A file as pnpm's validation records it: its times and size (as JS numbers) and its digest. */
export interface FileSignature { mtimeNs: number, ctimeNs: number, size: number, digest: string }

export function signatureOf (file: string): FileSignature | undefined {
  let stat: fs.BigIntStats
  try {
    stat = fs.statSync(file, { bigint: true })
  } catch {
    return undefined
  }
  if (!stat.isFile()) return undefined
  const digest = createHash('sha256').update(fs.readFileSync(file)).digest('hex').slice(0, DIGEST_LENGTH)
  return { mtimeNs: Number(stat.mtimeNs), ctimeNs: Number(stat.ctimeNs), size: Number(stat.size), digest }
}

/** pnpm's encoding of a length in its value digest: 8 bytes, little-endian. */
function feedLength (hash: ReturnType<typeof createHash>, length: number): void {
  const bytes = Buffer.alloc(8)
  bytes.writeBigUInt64LE(BigInt(length))
  hash.update(bytes)
}

/**
 * Feeds a JSON value in pnpm's tagged encoding: `[` and the length for an array, `{`, the
 * count and each key (by length and bytes, in byte order, undefined members left out) for an
 * object, `t`/`f`, `#` or `s` and the length and bytes of the text for scalars, `n` otherwise.
 */
function feedValue (hash: ReturnType<typeof createHash>, value: unknown): void {
  if (Array.isArray(value)) {
    hash.update('[')
    feedLength(hash, value.length)
    for (const item of value) feedValue(hash, item)
  } else if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, item]) => item !== undefined)
      .map(([key, item]): [Buffer, unknown] => [Buffer.from(key), item]).sort(([a], [b]) => Buffer.compare(a, b))
    hash.update('{')
    feedLength(hash, entries.length)
    for (const [key, item] of entries) {
      feedLength(hash, key.length)
      hash.update(key)
      feedValue(hash, item)
    }
  } else if (typeof value === 'boolean') {
    hash.update(value ? 't' : 'f')
  } else if (typeof value === 'number' || typeof value === 'string') {
    hash.update(typeof value === 'number' ? '#' : 's')
    const text = Buffer.from(String(value))
    feedLength(hash, text.length)
    hash.update(text)
  } else {
    hash.update('n')
  }
}

/** pnpm's digest of a project manifest. */
export function manifestDigest (manifest: unknown): string {
  const hash = createHash('sha256')
  feedValue(hash, manifest)
  return hash.digest('hex').slice(0, DIGEST_LENGTH)
}

/** The time on the filesystem's clock: the mtime of a file made for the purpose, as pnpm reads it. */
function filesystemNowNs (dir: string): number | undefined {
  const probe = path.join(dir, `.pnpm-validation-probe-${process.pid}-${randomBytes(4).toString('hex')}`)
  try {
    fs.writeFileSync(probe, '')
    return Number(fs.statSync(probe, { bigint: true }).mtimeNs)
  } catch {
    return undefined
  } finally {
    try {
      fs.rmSync(probe, { force: true })
    } catch {}
  }
}

const isEmptyGroup = (deps: unknown): boolean => deps == null || Object.keys(deps).length === 0

/**
 * pnpm's digest of the workspace's commands, by importer: of every project's name, `bin` and
 * `directories.bin` (the projects with either), recorded for the root and for each project with
 * dependencies of any kind (`undefined`: no project has commands).
 */
function workspaceBinsOf (projects: RecordedProject[]): Record<string, string> | undefined {
  const bins = Object.fromEntries(projects.flatMap(({ id, manifest }) => {
    const bin = manifest.bin ?? null
    const directory = (manifest.directories as { bin?: unknown } | undefined)?.bin ?? null
    return bin === null && directory === null ? [] : [[id, { name: manifest.name ?? null, bin, directory }]]
  }))
  if (Object.keys(bins).length === 0) return undefined
  const digest = manifestDigest(bins)
  const withDependencies = ({ id, manifest }: RecordedProject): boolean => id === '.' ||
    !['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].every((group) => isEmptyGroup(manifest[group]))
  return Object.fromEntries(projects.filter(withDependencies).map(({ id }) => [id, digest]))
}

/**
 * The `validation` block pnpm records: the patch files', the loaded pnpmfiles' and the
 * lockfile's signatures, the lockfile's digest, each project's manifest's, the projects'
 * commands' (from 11.28.9, `form.workspaceBins`), and (from 11.28.10) the
 * lockfile's local dependencies (none: the native install takes registry packages and
 * workspace links only); none before 11.28.7 (`form`). `undefined` where it cannot be made as
 * pnpm makes it (no filesystem clock).
 */
function validationOf (record: InstallRecord, pnpmfiles: string[], form: StateForm): Record<string, unknown> | undefined {
  if (form.validation === 'none') return undefined
  const files: Record<string, FileSignature> = {}
  // pnpm's shared inputs: the patch files, then the pnpmfiles (workspace/state `sharedInputPaths`).
  for (const file of [...(record.patchFiles ?? []), ...pnpmfiles]) {
    const signature = signatureOf(file)
    if (signature != null) files[file] = signature
  }
  const lockfilePath = path.join(record.rootDir, 'pnpm-lock.yaml')
  const lockfile = signatureOf(lockfilePath)
  if (lockfile == null) return undefined
  files[lockfilePath] = lockfile
  const recordedAtNs = filesystemNowNs(record.modulesDir)
  if (recordedAtNs == null) return undefined
  return {
    recordedAtNs,
    files,
    lockfile: lockfile.digest,
    manifests: Object.fromEntries(record.projects.map(({ id, manifest }) => [id, manifestDigest(manifest)])),
    ...(form.workspaceBins ? { workspaceBins: workspaceBinsOf(record.projects) } : {}),
    ...(form.validation === 'local-dependencies' ? { localDependencies: { [lockfile.digest]: {} } } : {}),
  }
}

/**
 * The workspace state: the last file of an install, whose presence says it is complete. Returns
 * when its validation was recorded (ns), if it has one.
 */
export function writeWorkspaceState (record: InstallRecord, config: PnpmConfig & Record<string, unknown>): number | undefined {
  const pnpmfiles = (config.pnpmfile ?? []) as string[]
  const form = stateFormOf(record.pnpmVersion)
  const validation = validationOf(record, pnpmfiles, form)
  const state = {
    lastValidatedTimestamp: validation != null ? Math.trunc((validation.recordedAtNs as number) / 1e6) : Date.now(),
    projects: Object.fromEntries(record.projects.map(({ dir, manifest }) => [dir, { name: manifest.name, version: manifest.version }])),
    pnpmfiles,
    settings: stateSettings(config, record.rootDir, form),
    filteredInstall: false,
    configDependencies: config.configDependencies,
    validation,
  }
  writeAtomically(path.join(record.modulesDir, '.pnpm-workspace-state-v1.json'), `${JSON.stringify(state, undefined, 2)}\n`)
  return validation?.recordedAtNs as number | undefined
}
