/**
 * Linking from the store: pnpm 11's `importPackage`, `symlinkAllModules` and `hardLinkDir`, and
 * `linkPackages`, which links a whole lockfile's packages and their dependency symlinks in one
 * native call. This file validates arguments, flattens `Map`s into arrays for the binding and
 * turns failures into pnpm's coded errors; the work happens on the native link pool.
 */
import * as binding from '../../index.js'
import { checkAbsolutePath, checkAbsolutePathNamed, checkObject, checkOptionalBoolean, checkOptionalEnum, checkOptionalString, checkString } from './args.js'
import { PnpmError, invalidArgument, pnpmErrorOf } from './errors.js'
import { COMPATS, type StoreCompat } from './dir.js'
import { checkStoreDirExists } from './store-dir.js'

/** pnpm's `packageImportMethod` values; any other is a `TypeError` (`ERR_INVALID_ARG_VALUE`). */
export const PACKAGE_IMPORT_METHODS = ['auto', 'hardlink', 'copy', 'clone', 'clone-or-copy'] as const
export type PackageImportMethod = typeof PACKAGE_IMPORT_METHODS[number]

export interface SideEffectsDiff {
  added?: Map<string, string>
  deleted?: string[]
  /** Side-effects symlinks (pnpm 11.28): relative link path → target, created after the files. */
  symlinks?: Map<string, string>
}

export interface PackageFilesResponse {
  resolvedFrom?: 'store' | 'local-dir' | 'remote'
  /** Relative path in the package → absolute path of its blob in the store. */
  filesMap: Map<string, string>
  packageImportMethod?: PackageImportMethod
  sideEffectsMaps?: Map<string, SideEffectsDiff>
  requiresBuild?: boolean
}

/**
 * Paths are absolute (a relative one is a `TypeError`; `@cas/native/worker` resolves them
 * against `process.cwd()` first, as pnpm's worker does): `storeDir`, `targetDir` and every blob
 * path in `filesResponse`.
 */
export interface ImportPackageOptions {
  storeDir: string
  packageImportMethod?: PackageImportMethod
  filesResponse: PackageFilesResponse
  sideEffectsCacheKey?: string
  targetDir: string
  /** The package is going to run build scripts: it is cloned or copied, never hard-linked. */
  requiresBuild?: boolean
  force?: boolean
  keepModulesDir?: boolean
  disableRelinkLocalDirDeps?: boolean
  safeToSkip?: boolean
  /**
   * Whose reading of the side-effects diff to reproduce. `'@pnpm/worker@1100'` (the default):
   * every file the diff lists as deleted is left out. `'pnpm@11.28'`: pnpm 11.28.11's worker,
   * which keeps the package's files under `node_modules/` (its bundled dependencies, which older
   * writers list as deleted) though the diff lists them.
   */
  compat?: StoreCompat
}

/** How a package was imported, `'clone' | 'hardlink' | 'copy'` (the binding's type). */
export type { ImportMethodUsed, LeftOutReason, LinkCounts } from '../../index.js'

export interface ImportPackageResult {
  isBuilt: boolean
  /** `undefined` when the package was already there. */
  importMethod: binding.ImportMethodUsed | undefined
}

/**
 * pnpm 11's `importPackage`: links (or clones, or copies) one package from the store into
 * `targetDir`. Rejects with `ERR_PNPM_<errno>` or `ERR_PNPM_LINKING_FAILED`, the message
 * prefixed with `[importPackage <targetDir>] `. A `filesMap` key that would leave `targetDir`
 * (`../x`) fails with `ERR_PNPM_UNSAFE_FILE_PATH` before anything is written.
 */
export async function importPackage (opts: ImportPackageOptions): Promise<ImportPackageResult> {
  checkObject('opts', opts)
  checkAbsolutePath('storeDir', opts.storeDir)
  checkAbsolutePath('targetDir', opts.targetDir)
  const fr = opts.filesResponse
  checkObject('filesResponse', fr)
  const files = flattenFilesMap('filesResponse.filesMap', fr.filesMap)
  checkOptionalEnum('packageImportMethod', opts.packageImportMethod, PACKAGE_IMPORT_METHODS)
  checkOptionalEnum('filesResponse.packageImportMethod', fr.packageImportMethod, PACKAGE_IMPORT_METHODS)
  checkOptionalString('sideEffectsCacheKey', opts.sideEffectsCacheKey)
  checkOptionalEnum('compat', opts.compat, COMPATS)
  const diff = sideEffectsDiff('filesResponse.sideEffectsMaps', fr.sideEffectsMaps, opts.sideEffectsCacheKey)
  // A batch of one: the same native path as linkPackages.
  const raw = await binding.linkPackages({
    storeDir: opts.storeDir,
    packageImportMethod: fr.packageImportMethod ?? opts.packageImportMethod ?? 'auto',
    packages: [{
      targetDir: opts.targetDir,
      paths: files.paths,
      blobPaths: files.blobPaths,
      sideEffectsCacheKey: opts.sideEffectsCacheKey,
      ...diff,
      resolvedFrom: fr.resolvedFrom,
      requiresBuild: Boolean(opts.requiresBuild),
      force: Boolean(opts.force),
      keepModulesDir: Boolean(opts.keepModulesDir),
      disableRelinkLocalDirDeps: Boolean(opts.disableRelinkLocalDirDeps),
      safeToSkip: Boolean(opts.safeToSkip),
    }],
    symlinks: NO_SYMLINKS,
    keepBundled: opts.compat === 'pnpm@11.28',
  })
  if (raw.error != null) throw importError(opts.targetDir, raw.error)
  return { isBuilt: raw.isBuilt[0], importMethod: raw.importMethods[0] ?? undefined }
}

export interface SymlinkDep {
  /** Alias → absolute directory of the package to link to. */
  children: Record<string, string>
  /** The `node_modules` directory the links go into (absolute). */
  modules: string
  /** The package's own name; a child with this alias (a self-reference) is skipped. */
  name: string
}

/**
 * pnpm 11's `symlinkAllModules`: relative directory symlinks `<modules>/<alias>` → child, for
 * every dep. Invalid aliases fail with `ERR_PNPM_INVALID_DEPENDENCY_NAME`; other failures with
 * `ERR_PNPM_<errno>` (or `ERR_PNPM_SYMLINK_FAILED` for a link onto its own target), prefixed
 * `[symlinkAllModules] `.
 */
export async function symlinkAllModules (opts: { deps: SymlinkDep[] }): Promise<undefined> {
  checkObject('opts', opts)
  const raw = await binding.symlinkAllModules(flattenDeps('deps', opts.deps))
  if (raw.error != null) throw pnpmErrorOf(raw.error, `[symlinkAllModules] ${raw.error.message}`)
  return undefined
}

/**
 * pnpm 11's `hardLinkDir` (all paths absolute): replaces each of `destDirs` with a hard-linked copy of `src`
 * (without any `node_modules`). Failures: `ERR_PNPM_<errno>`.
 * Like pnpm, an existing but empty `src` fails with `ERR_PNPM_ENOENT`.
 */
export async function hardLinkDir (src: string, destDirs: string[]): Promise<void> {
  checkAbsolutePath('src', src)
  if (!Array.isArray(destDirs)) throw invalidArgument('destDirs', 'an array of absolute paths', destDirs)
  destDirs.forEach((d, i) => checkAbsolutePath(`destDirs[${i}]`, d))
  const raw = await binding.hardLinkDir(src, destDirs)
  if (raw.error != null) throw pnpmErrorOf(raw.error)
}

export interface LinkPackage {
  /** Where the package goes (absolute). */
  targetDir: string
  /** The package's store-index key (`<integrity>\t<name>@<version>`): the file map is read natively. */
  filesIndexFile?: string
  /** Or the file map itself. */
  filesMap?: Map<string, string>
  sideEffectsMaps?: Map<string, SideEffectsDiff>
  sideEffectsCacheKey?: string
  /**
   * With `filesMap`: side-effects symlinks (relative link path → target) to create after the
   * files, as pnpm hands them to an `importPackage` hook. A link that would go below another
   * symlink fails (`ERR_PNPM_LINKING_FAILED`), one whose path leaves `targetDir` too
   * (`ERR_PNPM_UNSAFE_FILE_PATH`).
   */
  symlinks?: Map<string, string>
  packageImportMethod?: PackageImportMethod
  resolvedFrom?: 'store' | 'local-dir' | 'remote'
  requiresBuild?: boolean
  force?: boolean
  keepModulesDir?: boolean
  disableRelinkLocalDirDeps?: boolean
  safeToSkip?: boolean
}

export interface LinkPackagesOptions {
  /** An existing store (absolute path; a missing one is `ERR_PNPM_ENOENT`, never created). Every `targetDir` and blob path is absolute too. */
  storeDir: string
  packageImportMethod?: PackageImportMethod
  packages: LinkPackage[]
  /** `symlinkAllModules`'s deps, linked after every package was imported. */
  symlinks?: SymlinkDep[]
}

export interface LinkPackagesResult {
  /** Per package, in order: what `importPackage` would have returned. */
  results: ImportPackageResult[]
  counts: binding.LinkCounts
  /** What pnpm would log as warnings (filename conflicts, copy fallback, moved entities). */
  warnings: string[]
  /** Wall times of the phases and of the whole native call. */
  importMs: number
  symlinkMs: number
  totalMs: number
}

/**
 * Imports many packages as one native batch (work-stealing over the link pool), then creates
 * all dependency symlinks. With `filesIndexFile` the file maps are read from the store's
 * `index.db` natively and never cross into JS. The first failure rejects like `importPackage`
 * (or `symlinkAllModules`) would.
 */
export async function linkPackages (opts: LinkPackagesOptions): Promise<LinkPackagesResult> {
  checkObject('opts', opts)
  checkAbsolutePath('storeDir', opts.storeDir)
  checkOptionalEnum('packageImportMethod', opts.packageImportMethod, PACKAGE_IMPORT_METHODS)
  if (!Array.isArray(opts.packages)) throw invalidArgument('packages', 'an array', opts.packages)
  // Packages with nothing but a target dir and an index key (a lockfile's usual case) cross
  // into Rust as two NUL-joined strings; the others as objects, after them.
  const compactIndex: number[] = []
  const fullIndex: number[] = []
  const targetDirs: string[] = []
  const keys: string[] = []
  const full: binding.LinkPackageInput[] = []
  opts.packages.forEach((p, i) => {
    const name = `packages[${i}]`
    checkObject(name, p)
    checkAbsolutePath(`${name}.targetDir`, p.targetDir)
    if (p.filesIndexFile != null) checkString(`${name}.filesIndexFile`, p.filesIndexFile)
    if (isCompact(p)) {
      compactIndex.push(i)
      targetDirs.push(p.targetDir)
      keys.push(p.filesIndexFile!)
      return
    }
    checkOptionalString(`${name}.sideEffectsCacheKey`, p.sideEffectsCacheKey)
    checkOptionalEnum(`${name}.packageImportMethod`, p.packageImportMethod, PACKAGE_IMPORT_METHODS)
    const common = {
      targetDir: p.targetDir,
      sideEffectsCacheKey: p.sideEffectsCacheKey,
      packageImportMethod: p.packageImportMethod,
      resolvedFrom: p.resolvedFrom,
      requiresBuild: Boolean(p.requiresBuild),
      force: Boolean(p.force),
      keepModulesDir: Boolean(p.keepModulesDir),
      disableRelinkLocalDirDeps: Boolean(p.disableRelinkLocalDirDeps),
      safeToSkip: Boolean(p.safeToSkip),
    }
    fullIndex.push(i)
    if (p.filesIndexFile != null) {
      full.push({ ...common, filesIndexFile: p.filesIndexFile })
      return
    }
    if (p.filesMap == null) throw invalidArgument(`${name}.filesIndexFile`, 'a non-empty string (or filesMap a Map)', p.filesIndexFile)
    const files = flattenFilesMap(`${name}.filesMap`, p.filesMap)
    const diff = sideEffectsDiff(`${name}.sideEffectsMaps`, p.sideEffectsMaps, p.sideEffectsCacheKey)
    full.push({ ...common, paths: files.paths, blobPaths: files.blobPaths, ...diff, ...flattenSymlinks(`${name}.symlinks`, p.symlinks, diff) })
  })
  const symlinks = flattenDeps('symlinks', opts.symlinks ?? [])
  checkStoreDirExists(opts.storeDir)
  const raw = await binding.linkPackages({
    storeDir: opts.storeDir,
    packageImportMethod: opts.packageImportMethod ?? 'auto',
    compactCount: targetDirs.length,
    compactTargetDirs: targetDirs.join('\0'),
    compactFilesIndexFiles: keys.join('\0'),
    packages: full,
    symlinks,
  })
  // Native order: the compact packages, then the others.
  const order = [...compactIndex, ...fullIndex]
  if (raw.error != null) {
    if (raw.symlinkError) {
      throw pnpmErrorOf(raw.error, `[symlinkAllModules] ${raw.error.message}`)
    }
    const target = raw.errorIndex == null ? '' : opts.packages[order[raw.errorIndex]].targetDir
    throw importError(target, raw.error)
  }
  const results = new Array<ImportPackageResult>(order.length)
  for (let k = 0; k < order.length; k++) {
    results[order[k]] = { isBuilt: raw.isBuilt[k], importMethod: raw.importMethods[k] ?? undefined }
  }
  return {
    results,
    counts: raw.counts,
    warnings: raw.warnings,
    importMs: raw.importMs,
    symlinkMs: raw.symlinkMs,
    totalMs: raw.totalMs,
  }
}

/** `symlinkAllModules` deps for a batch that makes no links. */
const NO_SYMLINKS: binding.SymlinkDepsInput = { modules: '', names: '', childCounts: [], aliases: '', targets: '' }

export interface StoredPackage {
  /** The package's store-index key (`<integrity>\t<name>@<version>`). */
  filesIndexFile: string
  /** What the row's manifest must name, as pnpm's `expectedPkg` when it reads the package. */
  name: string
  version: string
  /** Where the package goes (absolute); it must end with `/<name>` (its dependencies are linked beside it). */
  targetDir: string
  /** Its dependency links: alias → absolute directory of the package linked to. */
  children?: Record<string, string>
  /**
   * pnpm will not run its build scripts (denied by `allowBuilds`, or scripts are off), so a
   * row that requires a build does not leave it out (default `false`).
   */
  buildIgnored?: boolean
  /**
   * The side-effects cache key pnpm would import it with if its row requires a build (and the
   * build is not ignored): linked with the row's diff under this key applied, as pnpm imports a
   * built package, or left out (`no-side-effects`) when the row has none.
   */
  sideEffectsCacheKey?: string
  /**
   * A patched package's key if its row does not require a build: linked with the diff under it
   * applied (pnpm imports a patched package with its cached side effects whether or not it
   * builds), or left out (`no-side-effects`).
   */
  patchedSideEffectsCacheKey?: string
}

/** What `linkStoredPackages`' `blobModeRule` may be. */
export const BLOB_MODE_RULES = ['none', 'exact', 'linkable'] as const
export type BlobModeRule = typeof BLOB_MODE_RULES[number]

export interface LinkStoredPackagesOptions {
  /** An existing store (absolute path; a missing one is `ERR_PNPM_ENOENT`, never created). */
  storeDir: string
  packageImportMethod?: PackageImportMethod
  /** Check every blob as pnpm's `verifyStoreIntegrity` does (default `true`). */
  verifyStoreIntegrity?: boolean
  /** A row naming another package leaves it out (default `true`); else it is a warning and also leaves it out. */
  strictStorePkgContentCheck?: boolean
  /**
   * The running pnpm's rule for a store blob whose bits drifted from its name's mode:
   * `linkable` (from 11.28.6, the default: a drifted group write is linked too, anything else
   * copied with its name's mode), `exact` (11.28.1 to 11.28.5: linked only with exactly its
   * name's bits), `none` (before 11.28.1: every blob linked, and copied, as it is).
   */
  blobModeRule?: BlobModeRule
  /**
   * Whether a side-effects diff leaves the package's files under `node_modules/` (its bundled
   * dependencies) in place though it lists them as deleted, as pnpm 11.28.11's reader does (the
   * default); `false`: as the releases before it, which leave them out (older writers list them).
   */
  keepBundled?: boolean
  packages: StoredPackage[]
}

export interface StoredPackageResult {
  linked: boolean
  /** `undefined` when it was already there or left out. */
  importMethod?: binding.ImportMethodUsed
  /** Why it was not linked. */
  leftOut?: binding.LeftOutReason
  /** For `unreadable` and `failed`: the error. */
  reason?: string
  /** Linked although its row requires a build, which `buildIgnored` said pnpm ignores. */
  buildIgnored?: boolean
  /** Linked with its build's side effects (under `sideEffectsCacheKey`): pnpm's `isBuilt`. */
  built?: boolean
}

export interface LinkStoredPackagesResult {
  /** Per package, in order. */
  results: StoredPackageResult[]
  counts: binding.LinkCounts
  warnings: string[]
  readMs: number
  importMs: number
  symlinkMs: number
  totalMs: number
}

/**
 * Links the packages the store can serve as they are, each with its dependency links, and
 * leaves the others out instead of failing: no row, a blob that fails verification, a build to
 * run (only the package manager decides about builds), a row naming another package, or an
 * import that fails. Nothing of a left-out package stays behind. The pnpm plugin lays out a
 * lockfile's virtual store with it before pnpm runs, and lets pnpm install what was left out.
 * Rejects only when the store index cannot be read.
 */
export async function linkStoredPackages (opts: LinkStoredPackagesOptions): Promise<LinkStoredPackagesResult> {
  checkObject('opts', opts)
  checkAbsolutePath('storeDir', opts.storeDir)
  checkOptionalEnum('packageImportMethod', opts.packageImportMethod, PACKAGE_IMPORT_METHODS)
  checkOptionalBoolean('verifyStoreIntegrity', opts.verifyStoreIntegrity)
  checkOptionalBoolean('strictStorePkgContentCheck', opts.strictStorePkgContentCheck)
  checkOptionalEnum('blobModeRule', opts.blobModeRule, BLOB_MODE_RULES)
  checkOptionalBoolean('keepBundled', opts.keepBundled)
  if (!Array.isArray(opts.packages)) throw invalidArgument('packages', 'an array', opts.packages)
  const deps: SymlinkDep[] = opts.packages.map((p, i) => {
    const name = `packages[${i}]`
    checkObject(name, p)
    checkString(`${name}.filesIndexFile`, p.filesIndexFile)
    checkString(`${name}.name`, p.name)
    checkString(`${name}.version`, p.version)
    checkAbsolutePath(`${name}.targetDir`, p.targetDir)
    checkOptionalBoolean(`${name}.buildIgnored`, p.buildIgnored)
    checkOptionalString(`${name}.sideEffectsCacheKey`, p.sideEffectsCacheKey)
    checkOptionalString(`${name}.patchedSideEffectsCacheKey`, p.patchedSideEffectsCacheKey)
    // On Windows a path may separate with `\`, also inside a scoped name.
    const slashed = process.platform === 'win32' ? p.targetDir.replace(/\\/g, '/') : p.targetDir
    if (!slashed.endsWith(`/${p.name}`)) {
      throw invalidArgument(`${name}.targetDir`, `a path ending with /${p.name}`, p.targetDir, 'ERR_INVALID_ARG_VALUE')
    }
    const modules = p.targetDir.slice(0, -p.name.length - 1)
    return { name: p.name, modules, children: p.children ?? {} }
  })
  const symlinks = flattenDeps('packages', deps)
  checkStoreDirExists(opts.storeDir)
  const raw = await binding.linkStoredPackages({
    storeDir: opts.storeDir,
    packageImportMethod: opts.packageImportMethod ?? 'auto',
    verifyStoreIntegrity: opts.verifyStoreIntegrity ?? true,
    strictStorePkgContentCheck: opts.strictStorePkgContentCheck ?? true,
    blobModeRule: opts.blobModeRule,
    keepBundled: opts.keepBundled,
    count: opts.packages.length,
    filesIndexFiles: opts.packages.map((p) => p.filesIndexFile).join('\0'),
    names: opts.packages.map((p) => p.name).join('\0'),
    versions: opts.packages.map((p) => p.version).join('\0'),
    targetDirs: opts.packages.map((p) => p.targetDir).join('\0'),
    symlinks,
    buildsIgnored: opts.packages.some((p) => p.buildIgnored === true) ? opts.packages.map((p) => p.buildIgnored === true) : undefined,
    sideEffectsCacheKeys: optionalColumn(opts.packages, (p) => p.sideEffectsCacheKey),
    patchedCacheKeys: optionalColumn(opts.packages, (p) => p.patchedSideEffectsCacheKey),
  })
  if (raw.error != null) throw pnpmErrorOf(raw.error)
  const results = raw.importMethods.map((importMethod): StoredPackageResult => ({ linked: true, importMethod: importMethod ?? undefined }))
  for (const { index, reason, message } of raw.leftOut) {
    results[index] = { linked: false, leftOut: reason, ...(message != null ? { reason: message } : {}) }
  }
  for (const i of raw.buildsIgnored) results[i].buildIgnored = true
  for (const i of raw.built) results[i].built = true
  return { results, counts: raw.counts, warnings: raw.warnings, readMs: raw.readMs, importMs: raw.importMs, symlinkMs: raw.symlinkMs, totalMs: raw.totalMs }
}

/** A column of optional strings, NUL-joined (`''` where absent); `undefined` when none has one. */
function optionalColumn (packages: StoredPackage[], value: (p: StoredPackage) => string | undefined): string | undefined {
  return packages.some((p) => value(p) != null) ? packages.map((p) => value(p) ?? '').join('\0') : undefined
}

function isCompact (p: LinkPackage): boolean {
  // NULs in either string were refused by the argument checks, so they can be NUL-joined.
  return p.filesIndexFile != null &&
    p.sideEffectsCacheKey == null && p.packageImportMethod == null && (p.resolvedFrom == null || p.resolvedFrom === 'store') &&
    !p.requiresBuild && !p.force && !p.keepModulesDir && !p.disableRelinkLocalDirDeps && !p.safeToSkip
}

function importError (targetDir: string, error: binding.NativeError): PnpmError {
  return pnpmErrorOf(error, `[importPackage ${targetDir}] ${error.message}`)
}

interface FlatSideEffects {
  sideEffectsAddedPaths?: string[]
  sideEffectsAddedBlobPaths?: string[]
  sideEffectsDeleted?: string[]
  symlinkPaths?: string[]
  symlinkTargets?: string[]
}

/** The diff for `key`, flattened; its `symlinks` are placed natively after the files. */
function sideEffectsDiff (name: string, maps: Map<string, SideEffectsDiff> | undefined, key: string | undefined): FlatSideEffects {
  if (!key || maps == null) return {}
  if (!(maps instanceof Map)) throw invalidArgument(name, 'a Map', maps)
  const diff = maps.get(key)
  if (diff == null) return {}
  const entryName = `${name}.get(${JSON.stringify(key)})`
  const added = diff.added == null ? { paths: [], blobPaths: [] } : flattenFilesMap(`${entryName}.added`, diff.added)
  return {
    sideEffectsAddedPaths: added.paths,
    sideEffectsAddedBlobPaths: added.blobPaths,
    sideEffectsDeleted: diff.deleted ?? [],
    ...flattenSymlinks(`${entryName}.symlinks`, diff.symlinks, {}),
  }
}

/** A package's own `symlinks`, else those of its side-effects diff. */
function flattenSymlinks (name: string, symlinks: Map<string, string> | undefined, diff: FlatSideEffects): Pick<FlatSideEffects, 'symlinkPaths' | 'symlinkTargets'> {
  if (symlinks == null) return { symlinkPaths: diff.symlinkPaths, symlinkTargets: diff.symlinkTargets }
  if (!(symlinks instanceof Map)) throw invalidArgument(name, 'a Map', symlinks)
  const symlinkPaths: string[] = []
  const symlinkTargets: string[] = []
  for (const [k, v] of symlinks) {
    if (typeof k !== 'string' || typeof v !== 'string') throw invalidArgument(name, 'a Map of strings to strings', symlinks)
    symlinkPaths.push(k)
    symlinkTargets.push(v)
  }
  return { symlinkPaths, symlinkTargets }
}

function flattenFilesMap (name: string, map: unknown): { paths: string[], blobPaths: string[] } {
  if (!(map instanceof Map)) throw invalidArgument(name, 'a Map', map)
  const paths: string[] = []
  const blobPaths: string[] = []
  for (const [k, v] of map) {
    if (typeof k !== 'string' || typeof v !== 'string') throw invalidArgument(name, 'a Map of strings to strings', map)
    if (k.includes('\0')) throw invalidArgument(name, 'a Map whose keys have no NUL characters', map, 'ERR_INVALID_ARG_VALUE')
    checkAbsolutePathNamed(() => `${name}.get(${JSON.stringify(k)})`, v)
    paths.push(k)
    blobPaths.push(v)
  }
  return { paths, blobPaths }
}

function flattenDeps (name: string, deps: unknown): binding.SymlinkDepsInput {
  if (!Array.isArray(deps)) throw invalidArgument(name, 'an array', deps)
  const modules: string[] = []
  const names: string[] = []
  const childCounts: number[] = []
  const aliases: string[] = []
  const targets: string[] = []
  deps.forEach((d, i) => {
    checkObject(`${name}[${i}]`, d)
    checkObject(`${name}[${i}].children`, d.children)
    checkAbsolutePath(`${name}[${i}].modules`, d.modules)
    if (typeof d.name !== 'string') throw invalidArgument(`${name}[${i}].name`, 'a string', d.name)
    let count = 0
    for (const alias of Object.keys(d.children)) {
      const target = d.children[alias]
      if (alias.includes('\0')) throw invalidArgument(`${name}[${i}].children`, 'an object whose keys have no NUL characters', d.children, 'ERR_INVALID_ARG_VALUE')
      checkAbsolutePathNamed(() => `${name}[${i}].children[${JSON.stringify(alias)}]`, target)
      aliases.push(alias)
      targets.push(target)
      count++
    }
    if (d.name.includes('\0')) throw invalidArgument(`${name}[${i}].name`, 'a string without NUL characters', d.name, 'ERR_INVALID_ARG_VALUE')
    modules.push(d.modules)
    names.push(d.name)
    childCounts.push(count)
  })
  return { modules: modules.join('\0'), names: names.join('\0'), childCounts, aliases: aliases.join('\0'), targets: targets.join('\0') }
}
