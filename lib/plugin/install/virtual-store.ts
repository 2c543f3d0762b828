/**
 * Where pnpm 11's isolated layout (`nodeLinker: isolated`) puts a lockfile's packages, and which
 * of them can be laid out ahead of pnpm without changing what pnpm would have done.
 *
 * Input is pnpm's in-memory lockfile (`packages` keyed by dependency path, snapshot fields
 * merged in), as pnpm hands it to a pnpmfile's `preResolution` hook. A package is taken only
 * when its whole installation is plain linking: a registry package (`resolution` holds nothing
 * but an integrity), not patched (unless `patched`: the native install takes patched packages from
 * pnpm's side-effects cache), every dependency a registry package, reachable from an
 * importer through the dependency groups being installed. For the head start also not
 * platform-specific (`os`/`cpu`/`libc`: pnpm decides what to skip), not optional, with no
 * optional dependencies (pnpm relinks those itself); the native install, which lays out
 * everything or nothing, decides those by pnpm's platform and engines rules
 * (`LayoutOptions.installable`, `enginesMet`) and skips what pnpm would skip: the optional
 * packages not installable here, and what only they reach (`skipWalk`).
 * Whether it runs build scripts is only known from its store row, so that is checked natively
 * (`linkStoredPackages`).
 */
import path from 'node:path'
import * as binding from '../../../index.js'
import type { StoredPackage } from '../../api/import.js'
import { depPathToFilename, refToRelative, tryGetPackageId } from '@pnpm/deps.path'
import { prunedSnapshot, skipsPeerEdge, type PeerEdges } from './peer-edges.js'

/** The parts of pnpm's in-memory lockfile this reads. */
export interface LockfileObject {
  importers: Record<string, Partial<Record<DependencyGroup, Record<string, string>>>>
  packages?: Record<string, PackageSnapshot>
}

export interface PackageSnapshot {
  /** Its package id, where pnpm wrote one (else the dependency path gives it). */
  id?: string
  /** A package not from a registry names itself (pnpm's `nameVerFromPkgSnapshot`). */
  name?: string
  resolution?: Record<string, unknown>
  version?: string
  dependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
  optional?: boolean
  patched?: boolean
  /** Platform fields: a list (whose entries that are not strings pnpm's check ignores), or one string. */
  os?: Array<string | null> | string
  cpu?: Array<string | null> | string
  libc?: Array<string | null> | string
  engines?: Record<string, string>
  hasBin?: boolean
  bundledDependencies?: string[] | boolean
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}

export type DependencyGroup = 'dependencies' | 'devDependencies' | 'optionalDependencies'
/** The dependency groups of an importer, in the order pnpm lists them. */
export const DEPENDENCY_GROUPS: DependencyGroup[] = ['dependencies', 'devDependencies', 'optionalDependencies']

export interface LayoutOptions {
  /**
   * The lockfile's directory, when a package may depend on a project of the workspace (a
   * `link:` dependency, relative to it: a peer that is a project). Without it such packages
   * are left to pnpm.
   */
  lockfileDir?: string
  /** Absolute: `<lockfileDir>/node_modules/.pnpm` unless configured otherwise. */
  virtualStoreDir: string
  /** pnpm's `virtualStoreDirMaxLength` (its default: 120 on Linux and macOS, 60 on Windows). */
  virtualStoreDirMaxLength?: number
  /** The groups being installed (`--prod`, `--dev`, `--no-optional` drop some). */
  include: Record<DependencyGroup, boolean>
  /**
   * `engineStrict`: the head start (no `installable`) leaves packages declaring `engines` to pnpm,
   * which may refuse them; the native install leaves only a required one whose engines do not fit.
   */
  engineStrict?: boolean
  /**
   * Whether a package's platform fits here (`installableHere`). Without it, platform-specific
   * packages, optional ones and their optional dependencies are left to pnpm; with it (the
   * native install, which lays out everything or nothing) every package is planned or skipped
   * as pnpm installs or skips it (`skipWalk`): a skipped one not laid out, not linked to.
   */
  installable?: (name: string, snapshot: PackageSnapshot, optional: boolean) => boolean
  /**
   * With `installable`: whether this Node meets the package's `engines` as pnpm checks them
   * (`undefined`: it cannot tell, and pnpm decides wherever the answer matters).
   */
  enginesMet?: (snapshot: PackageSnapshot) => boolean | undefined
  /** Patched packages are planned too (the native install takes them from pnpm's side-effects cache). */
  patched?: boolean
  /** With `installable`: the running release's rule (`edges` when not said). */
  skipRule?: SkipRule
  /**
   * The optional peers pnpm's lockfile filter does not follow, when the install leaves a group
   * out (`peerSatisfactionEdges`): not walked, and not linked to unless reached otherwise.
   * Without it every edge is followed, as pnpm does when every group is installed.
   */
  skippedPeerEdges?: PeerEdges
  /**
   * Where a package's dependency that is skipped is linked to: pnpm 11.28.3's working directory
   * (`SkippedLinks`); not linked when not said.
   */
  skippedLinkTarget?: string
}

/**
 * Where a release links a package's dependency that it skips (an optional one not installable
 * here): nowhere, or (11.28.3 alone) to its working directory. That release's graph gives a
 * skipped dependency an empty location, and its linker resolves the empty path against the
 * working directory: `../../../..` from a package's `node_modules` when pnpm runs at the lockfile's
 * directory. 11.28.4 gives it no location again (its changelog: "Fixed frozen installs creating
 * symlinks to the working directory for skipped optional dependencies"). Its side-effects cache
 * keys hash that dependency as `''`, as they hash any child that is not a package of the graph.
 */
export type SkippedLinks = 'none' | 'working directory'

/** A package to lay out: what `linkStoredPackages` takes, and the lockfile key it came from. */
export interface PlannedPackage extends StoredPackage {
  depPath: string
  /** pnpm's id of the package (`packageIdFromSnapshot`): the one it fetches once, whatever the peers' variants, and logs. */
  packageId: string
  /**
   * Its snapshot as pnpm's filtered lockfile has it, where that differs from the lockfile's (a
   * skipped peer edge dropped, `skippedPeerEdges`): what pnpm compares the current lockfile's with.
   */
  filteredSnapshot?: PackageSnapshot
}

/** pnpm's own rule for a package's directory in the virtual store (`@pnpm/deps.path`, the release pnpm 11.28 bundles). */
export { depPathToFilename }

/** `name@version(peers…)` → name and version; `undefined` for anything but a registry path. */
export function parseRegistryDepPath (depPath: string): { name: string, version: string } | undefined {
  const at = depPath.indexOf('@', 1)
  if (at === -1) return undefined
  const paren = depPath.indexOf('(')
  const version = depPath.slice(at + 1, paren === -1 ? depPath.length : paren)
  // Versions with a scheme (`file:`, `link:`, URLs, `npm+registry:`) are not plain registry ones.
  if (version === '' || version.includes(':') || version.includes('/')) return undefined
  return { name: depPath.slice(0, at), version }
}

/**
 * The dependency path an `alias: ref` entry points to, by pnpm's own rule (`refToRelative`: a
 * ref that is itself a path, an `npm:` alias's `name@version`, or else `alias@ref`). A `link:`
 * ref gives `alias@link:…`, which names no package in the lockfile.
 */
export function refToDepPath (alias: string, ref: string): string {
  return refToRelative(ref, alias) ?? `${alias}@${ref}`
}

/** A registry package as it is: an integrity and nothing else in its resolution, not patched (unless `patched`). */
function plainRegistryPackage (depPath: string, snapshot: PackageSnapshot, patched = false): boolean {
  const resolution = snapshot.resolution ?? {}
  return typeof resolution.integrity === 'string' && Object.keys(resolution).length === 1 &&
    (patched || (!depPath.includes('patch_hash=') && snapshot.patched !== true))
}

/**
 * Why pnpm must install this one itself (`undefined`: it need not). The native install's
 * platforms and engines are the skip walk's (`skipWalk`); the head start leaves every package
 * pnpm may skip to pnpm.
 */
function needsPnpm (depPath: string, snapshot: PackageSnapshot, opts: LayoutOptions): PackageLeftToPnpm | undefined {
  if (opts.patched !== true && (depPath.includes('patch_hash=') || snapshot.patched === true)) return 'patched'
  if (!plainRegistryPackage(depPath, snapshot, opts.patched)) return 'not-registry'
  const platformBound = snapshot.os != null || snapshot.cpu != null || snapshot.libc != null
  if (opts.installable == null &&
    (platformBound || snapshot.optional === true || snapshot.optionalDependencies != null || (opts.engineStrict === true && snapshot.engines != null))) return 'pnpm-decides'
  const local = Object.entries(dependenciesOf(snapshot, opts)).some(([alias, ref]) => !linkedProject(ref, opts) && parseRegistryDepPath(refToDepPath(alias, ref)) == null)
  return local ? 'local-dependency' : undefined
}

/** Whether `ref` is a `link:` to a project of the workspace that this layout links packages to. */
const linkedProject = (ref: string, opts: LayoutOptions): boolean => opts.lockfileDir != null && ref.startsWith('link:')

/** The dependencies a package is linked to: its optional ones too when every package is planned. */
function dependenciesOf (snapshot: PackageSnapshot, opts: LayoutOptions): Record<string, string> {
  return opts.installable == null || snapshot.optionalDependencies == null
    ? snapshot.dependencies ?? {}
    : { ...snapshot.dependencies, ...snapshot.optionalDependencies }
}

/**
 * Every dependency path reachable from the importers through the included groups (optional
 * dependencies only when those are included), not through `skippedPeerEdges`: the packages of
 * pnpm's filtered lockfile.
 */
export function reachable (lockfile: LockfileObject, include: Record<DependencyGroup, boolean>, skippedPeerEdges?: PeerEdges): Set<string> {
  const seen = new Set<string>()
  const stack: string[] = []
  const visit = (deps: Record<string, string> | undefined, parent?: string): void => {
    if (deps == null) return
    for (const alias in deps) {
      const ref = deps[alias]
      // `link:` ones are projects of the workspace: linked to, not installed.
      if (ref.startsWith('link:') || (parent != null && skipsPeerEdge(skippedPeerEdges, parent, alias))) continue
      const depPath = refToDepPath(alias, ref)
      if (!seen.has(depPath)) {
        seen.add(depPath)
        stack.push(depPath)
      }
    }
  }
  for (const importer of Object.values(lockfile.importers ?? {})) {
    for (const group of DEPENDENCY_GROUPS) {
      if (include[group]) visit(importer[group])
    }
  }
  for (let depPath = stack.pop(); depPath != null; depPath = stack.pop()) {
    const snapshot = lockfile.packages?.[depPath]
    visit(snapshot?.dependencies, depPath)
    if (include.optionalDependencies) visit(snapshot?.optionalDependencies, depPath)
  }
  return seen
}

/** What pnpm's frozen install makes of the packages the importers reach, by its lockfile filter. */
interface SkipWalk {
  /** Laid out: reached through edges from the importers and from installed packages only. */
  installed: Set<string>
  /** Not laid out, and listed in `.modules.yaml`'s `skipped`. */
  skipped: Set<string>
  /** Those whose fate this cannot tell or pnpm refuses: left to pnpm, each with why. */
  undecided: Map<string, PackageLeftToPnpm>
}

/**
 * Whether `depPath` fits here as pnpm's `packageIsInstallable` asks (`optional`: as an optional
 * package, whose platform its name may say), with its engines' verdict (`undefined`: they could
 * not be read). A name not read from a registry path fits, so that it is installed and left to
 * pnpm.
 */
function fitOf (depPath: string, snapshot: PackageSnapshot, optional: boolean, opts: LayoutOptions): { fits: boolean, engines: boolean | undefined } {
  const name = parseRegistryDepPath(depPath)?.name
  const engines = snapshot.engines == null ? true : opts.enginesMet?.(snapshot)
  return { fits: (name == null || opts.installable!(name, snapshot, optional)) && engines !== false, engines }
}

/**
 * pnpm's walk of the lockfile for a frozen install (with `installable` and `enginesMet`), in
 * its order: edges taken breadth-first from the importers (their dependencies and
 * devDependencies required, their optional ones optional), a package's `dependencies`
 * required and its `optionalDependencies` optional, whatever package they come from. A
 * package that does not fit here as an optional package (its platform, read with what its
 * name says, or its engines) is not installed through an optional edge, and a required edge
 * installs it anyway; only installed packages' edges are followed. Every other package reached
 * through any edge is skipped if the lockfile marks it `optional` (else pnpm would install it
 * unlinked: left to pnpm). Left to pnpm too: engines it cannot read where they decide, and,
 * under `engineStrict`, a required package that does not fit as a required one (its declared
 * platform, its engines) and that the lockfile does not mark optional: pnpm refuses it.
 */
function skipWalk (lockfile: LockfileObject, reached: Set<string>, opts: LayoutOptions): SkipWalk {
  const packages = lockfile.packages ?? {}
  const walk: SkipWalk = { installed: new Set(), skipped: new Set(), undecided: new Map() }
  /** Reached by an edge that is not an optional dependency's, from an importer or an installed package. */
  const required = new Set<string>()
  /** Each package's verdict, once: whether it fits as an optional package, and its engines'. */
  const verdicts = new Map<string, { fits: boolean, engines: boolean | undefined }>()
  const verdictOf = (depPath: string, snapshot: PackageSnapshot): { fits: boolean, engines: boolean | undefined } => {
    let verdict = verdicts.get(depPath)
    if (verdict == null) verdicts.set(depPath, verdict = fitOf(depPath, snapshot, true, opts))
    return verdict
  }
  const queue: Array<{ depPath: string, optional: boolean }> = []
  const follow = (deps: Record<string, string> | undefined, optional: boolean, parent?: string): void => {
    if (deps == null) return
    for (const alias in deps) {
      const ref = deps[alias]
      if (parent != null && skipsPeerEdge(opts.skippedPeerEdges, parent, alias)) continue
      if (!ref.startsWith('link:')) queue.push({ depPath: refToDepPath(alias, ref), optional })
    }
  }
  for (const importer of Object.values(lockfile.importers ?? {})) {
    if (opts.include.dependencies) follow(importer.dependencies, false)
    if (opts.include.devDependencies) follow(importer.devDependencies, false)
    if (opts.include.dependencies && opts.include.optionalDependencies) follow(importer.optionalDependencies, true)
  }
  for (let next = 0; next < queue.length; next++) {
    const { depPath, optional } = queue[next]
    if (!optional) required.add(depPath)
    const snapshot = packages[depPath]
    if (walk.installed.has(depPath) || snapshot == null) continue
    if (optional && !verdictOf(depPath, snapshot).fits) continue
    walk.installed.add(depPath)
    follow(snapshot.dependencies, false, depPath)
    if (opts.include.optionalDependencies) follow(snapshot.optionalDependencies, true, depPath)
  }
  for (const depPath of reached) {
    const snapshot = packages[depPath]
    if (snapshot == null || walk.installed.has(depPath)) continue
    const skips = verdicts.get(depPath)?.fits === false || snapshot.optional === true
    if (skips) walk.skipped.add(depPath)
    else walk.undecided.set(depPath, 'unmarked-under-skipped')
  }
  for (const depPath of walk.installed) {
    const snapshot = packages[depPath]
    if (!required.has(depPath)) {
      // Installed through optional edges only (its verdict is in): it fits, unless its engines could not be read.
      if (verdictOf(depPath, snapshot).engines === undefined) walk.undecided.set(depPath, 'engines-unread')
      continue
    }
    // A required package's fit matters only where pnpm refuses one that does not fit.
    if (opts.engineStrict !== true || snapshot.optional === true) continue
    const { fits, engines } = fitOf(depPath, snapshot, false, opts)
    if (!fits || engines !== true) walk.undecided.set(depPath, 'engine-strict')
  }
  return walk
}

/**
 * How a release's lockfile filter decides what a frozen install skips: by required and optional
 * edges, breadth first (`skipWalk`, from 11.19.0), or by the first path that reaches each
 * package, depth first (`firstReachWalk`, before).
 */
export type SkipRule = 'edges' | 'first-reach'

/**
 * The walk of the releases before 11.19.0 (their `filterLockfileByImportersAndEngine`): depth
 * first from the importers (each one's dependencies, devDependencies and optional ones spread
 * into one object), a package's dependencies then its optional ones, and the first path to reach
 * a package decides for it and everything first reached through it. Below a package that is not
 * installable nothing is (what the lockfile marks optional there is skipped, whether or not it
 * fits); elsewhere a package the lockfile marks optional is skipped when it does not fit here,
 * and any other is installed (pnpm warns of one that does not fit; under `engineStrict` it
 * refuses it: left to pnpm). The installed packages come in the walk's order, which pnpm's
 * dependency graph follows. One installed that no path of installed packages reaches would be
 * laid out unlinked: left to pnpm.
 */
function firstReachWalk (lockfile: LockfileObject, opts: LayoutOptions): SkipWalk {
  const packages = lockfile.packages ?? {}
  const walk: SkipWalk = { installed: new Set(), skipped: new Set(), undecided: new Map() }
  const picked = new Set<string>()
  const entriesOf = (groups: Array<Record<string, string> | undefined>): Array<[string, string]> =>
    Object.entries(Object.assign({}, ...groups.filter((g) => g != null)) as Record<string, string>).filter(([, ref]) => !ref.startsWith('link:'))
  const visit = (deps: Array<[string, string]>, parentInstallable: boolean): void => {
    for (const [alias, ref] of deps) {
      const depPath = refToDepPath(alias, ref)
      const snapshot = packages[depPath]
      if (picked.has(depPath) || snapshot == null) continue
      picked.add(depPath)
      let installable = parentInstallable
      if (snapshot.optional === true) {
        const { fits, engines } = fitOf(depPath, snapshot, true, opts)
        if (parentInstallable && engines === undefined) walk.undecided.set(depPath, 'engines-unread')
        installable = parentInstallable && fits
        if (!installable) walk.skipped.add(depPath)
      } else if (parentInstallable && opts.engineStrict === true) {
        const { fits, engines } = fitOf(depPath, snapshot, false, opts)
        if (!fits || engines !== true) walk.undecided.set(depPath, 'engine-strict')
      }
      if (!walk.skipped.has(depPath)) walk.installed.add(depPath)
      visit(entriesOf([snapshot.dependencies, opts.include.optionalDependencies ? snapshot.optionalDependencies : undefined]), installable)
    }
  }
  const importers = Object.values(lockfile.importers ?? {})
  visit(importers.flatMap((importer) => entriesOf([
    opts.include.dependencies ? importer.dependencies : undefined,
    opts.include.devDependencies ? importer.devDependencies : undefined,
    opts.include.optionalDependencies ? importer.optionalDependencies : undefined,
  ])), true)
  // What paths of installed packages reach: the rest is laid out unlinked.
  const linked = new Set<string>()
  const pending = importers.flatMap((importer) => DEPENDENCY_GROUPS.filter((g) => opts.include[g]).flatMap((g) => entriesOf([importer[g]]))).map(([alias, ref]) => refToDepPath(alias, ref))
  for (let depPath = pending.pop(); depPath != null; depPath = pending.pop()) {
    if (linked.has(depPath) || !walk.installed.has(depPath)) continue
    linked.add(depPath)
    const snapshot = packages[depPath]
    pending.push(...entriesOf([snapshot.dependencies, opts.include.optionalDependencies ? snapshot.optionalDependencies : undefined]).map(([alias, ref]) => refToDepPath(alias, ref)))
  }
  for (const depPath of walk.installed) if (!linked.has(depPath)) walk.undecided.set(depPath, 'unmarked-under-skipped')
  return walk
}

/**
 * Why pnpm refuses this lockfile's names (`undefined`: it does not): a dependency alias of an
 * importer or a package that is not a valid package name (pnpm's lockfile verification), or a
 * package whose name, read from its dependency path, is not one (pnpm's placement check in the
 * virtual store); both by validate-npm-package-name's old-package rule. A dependency path or
 * version holding a NUL is refused too. Nothing is laid out then: pnpm refuses in its words.
 */
export function refusedNames (lockfile: LockfileObject): string | undefined {
  const aliases = new Set<string>()
  const names = new Set<string>()
  const addAliases = (deps: Record<string, string> | undefined): void => {
    for (const alias of Object.keys(deps ?? {})) aliases.add(alias)
  }
  for (const importer of Object.values(lockfile.importers ?? {})) DEPENDENCY_GROUPS.forEach((group) => addAliases(importer[group]))
  for (const [depPath, snapshot] of Object.entries(lockfile.packages ?? {})) {
    addAliases(snapshot.dependencies)
    addAliases(snapshot.optionalDependencies)
    if (depPath.includes('\0') || snapshot.version?.includes('\0') === true) return `the lockfile has a NUL in ${JSON.stringify(depPath)}`
    const at = depPath.indexOf('@', 1)
    names.add(at === -1 ? depPath : depPath.slice(0, at))
  }
  const [alias] = binding.invalidDependencyAliases([...aliases])
  if (alias != null) return `the lockfile names a dependency ${JSON.stringify(alias)}, which pnpm refuses (ERR_PNPM_INVALID_DEPENDENCY_NAME)`
  const [name] = binding.invalidDependencyAliases([...names])
  if (name != null) return `the lockfile has a package named ${JSON.stringify(name)}, which pnpm refuses to place (ERR_PNPM_INVALID_DEPENDENCY_NAME)`
  return undefined
}

/**
 * Why a package is left to pnpm (`why-not.ts` words them): no lockfile entry (a `link:` or
 * `file:` dependency), not a plain registry package (`git`, a tarball URL, a directory), patched,
 * with a dependency that is not a registry package, an optional one pnpm skips here that is not
 * a plain registry package or has such a dependency (pnpm checks it), reached only through
 * skipped packages but not marked optional, `engines` not read here, refused under `engineStrict`,
 * or (the head start) one pnpm may skip.
 */
export type PackageLeftToPnpm = 'not-in-lockfile' | 'not-registry' | 'patched' | 'local-dependency' | 'skipped-not-registry' |
  'unmarked-under-skipped' | 'engines-unread' | 'engine-strict' | 'pnpm-decides'

/** What becomes of the packages the importers reach. */
export interface WholePlan {
  /** Why nothing is planned: pnpm refuses the lockfile's names (`refusedNames`). */
  refused?: string
  planned: PlannedPackage[]
  /** Dependency paths pnpm must install itself. */
  notPlanned: string[]
  /** Why each of `notPlanned` is (with `installable`, the native install's plan). */
  leftToPnpm?: Map<string, PackageLeftToPnpm>
  /** Dependency paths of the packages pnpm skips here (`installable`): optional ones and what only they reach. */
  skipped: string[]
  /**
   * The installed packages in the order pnpm's filter of the lockfile walks them (breadth-first
   * from the importers), which its dependency graph and so its `pendingBuilds` follow.
   */
  installOrder: string[]
}

/**
 * Every package the importers reach: planned (the ones that can be linked ahead of pnpm, with
 * their target directories, store-index keys and dependency links, in lockfile order), left to
 * pnpm, or skipped; none when pnpm refuses the lockfile's names (`refused`).
 */
export function planVirtualStore (lockfile: LockfileObject, opts: LayoutOptions): WholePlan {
  const refused = refusedNames(lockfile)
  if (refused != null) return { refused, planned: [], notPlanned: [], skipped: [], installOrder: [] }
  const maxLength = opts.virtualStoreDirMaxLength ?? (process.platform === 'win32' ? 60 : 120)
  // A package is the target of many dependency links: its directory is computed once.
  const dirs = new Map<string, string>()
  const dirOf = (depPath: string, name?: string): string => {
    let dir = dirs.get(depPath)
    if (dir == null) {
      dir = path.join(opts.virtualStoreDir, depPathToFilename(depPath, maxLength), 'node_modules', name ?? parseRegistryDepPath(depPath)!.name)
      dirs.set(depPath, dir)
    }
    return dir
  }
  const reached = reachable(lockfile, opts.include, opts.skippedPeerEdges)
  const planned: PlannedPackage[] = []
  const notPlanned: string[] = [...reached].filter((depPath) => lockfile.packages?.[depPath] == null)
  const leftToPnpm = new Map<string, PackageLeftToPnpm>(notPlanned.map((depPath) => [depPath, 'not-in-lockfile']))
  const walk = opts.installable != null
    ? (opts.skipRule === 'first-reach' ? firstReachWalk(lockfile, opts) : skipWalk(lockfile, reached, opts))
    : { installed: reached, skipped: new Set<string>(), undecided: new Map<string, PackageLeftToPnpm>() }
  const { installed, skipped } = walk
  for (const [depPath, snapshot] of Object.entries(lockfile.packages ?? {})) {
    if (!reached.has(depPath)) continue
    const parsed = parseRegistryDepPath(depPath)
    // A skipped package is only checked by pnpm (its name, version, age): a plain registry one with registry dependencies.
    const pnpmChecks = skipped.has(depPath) && (parsed == null || !plainRegistryPackage(depPath, snapshot, opts.patched) ||
      Object.entries(dependenciesOf(snapshot, opts)).some(([alias, ref]) => parseRegistryDepPath(refToDepPath(alias, ref)) == null))
    const undecided = walk.undecided.get(depPath)
    if (undecided != null || pnpmChecks) {
      notPlanned.push(depPath)
      leftToPnpm.set(depPath, undecided ?? 'skipped-not-registry')
      continue
    }
    if (!installed.has(depPath)) continue
    const needs = parsed == null ? 'not-registry' : needsPnpm(depPath, snapshot, opts)
    if (parsed == null || needs != null) {
      notPlanned.push(depPath)
      leftToPnpm.set(depPath, needs!)
      continue
    }
    // As pnpm names it: the name from the path, the version the snapshot's if it has one.
    const name = parsed.name
    const version = snapshot.version ?? parsed.version
    const children: Record<string, string> = {}
    for (const [alias, ref] of Object.entries(dependenciesOf(snapshot, opts))) {
      if (linkedProject(ref, opts)) {
        children[alias] = path.resolve(opts.lockfileDir!, ref.slice('link:'.length))
        continue
      }
      const child = refToDepPath(alias, ref)
      if (!skipped.has(child)) {
        if (!(skipsPeerEdge(opts.skippedPeerEdges, depPath, alias) && !reached.has(child))) children[alias] = dirOf(child)
      } else if (opts.skippedLinkTarget != null) children[alias] = opts.skippedLinkTarget
    }
    const filtered = prunedSnapshot(depPath, snapshot, opts.skippedPeerEdges, reached)
    planned.push({
      depPath,
      packageId: snapshot.id ?? tryGetPackageId(depPath as Parameters<typeof tryGetPackageId>[0]),
      name,
      version,
      targetDir: dirOf(depPath, name),
      filesIndexFile: `${snapshot.resolution!.integrity as string}\t${name}@${version}`,
      children,
      ...(filtered !== snapshot ? { filteredSnapshot: filtered } : {}),
    })
  }
  return { planned, notPlanned, leftToPnpm, skipped: [...skipped], installOrder: [...installed] }
}
