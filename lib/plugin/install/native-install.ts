/**
 * The native frozen install: when `pnpm install` would install the lockfile as it is into an
 * empty `node_modules`, the plugin lays out all of it in `hooks.updateConfig`, which pnpm 11
 * runs before its optimistic up-to-date check, and writes pnpm's state files last. pnpm then
 * finds the project up to date and exits ("Already up to date"). A workspace is installed
 * whole, every project's `node_modules` with the root's virtual store (`workspace-projects.ts`).
 *
 * All or nothing: it runs only for the installs it reproduces exactly (checked against stock
 * pnpm, release by release, by the e2e tests: `pnpm-releases.ts`), and anything else (the
 * reasons `planInstall` gives: settings, lockfile, projects, packages) is left to pnpm, untouched.
 * It writes the workspace state, the file pnpm's check reads, only once everything else is in
 * place, so a failure or a kill halfway never leaves a `node_modules` pnpm takes for up to date:
 * pnpm just installs over it. docs/native-install.md has the rules and their sources.
 */
import fs from 'node:fs'
import path from 'node:path'
import { linkStoredPackages, symlinkAllModules, type PackageImportMethod, type StoredPackageResult } from '../../api/import.js'
import { enginesChecker, enginesNodeVersion, installableHere, projectEnginesRefused, type SupportedArchitectures } from './installable.js'
import { writeLayoutState, writeWorkspaceState, type InstallRecord } from './install-state.js'
import { currentLockfileText, readLockfileFile, type LockfileFile } from './lockfile-file.js'
import { downloadToStore, fetchUnsupported, networkConcurrencyOf, networkOf, registryOf } from '../registry-fetch.js'
import { firstFailure } from '../first-failure.js'
import { checkSupplyChain, type CheckedLockfile, type CheckLog, type SupplyChainCheck, type SupplyChainConfig } from './supply-chain.js'
import { lockfileContentHash } from './lockfile-hash.js'
import { lockfileMode, type PnpmConfig } from '../pnpm-config.js'
import { configReasons } from './config-rules.js'
import { hoist, importerDependencies } from './hoist.js'
import { runProjectScripts, workspaceScripts, type ProjectScripts } from './project-scripts.js'
import { projectsGraph } from './projects-graph.js'
import { buildConcurrency } from './build-schedule.js'
import { extendedProject, hookedManifest, importerOutOfDateUnder, linkedProjectsOutOfDate, lockedSettingsRewritten, lockfileConfigMismatch, parseOverrides } from './frozen-check.js'
import { workspaceCatalogsPruned, type ConfiguredCatalogs } from './catalogs.js'
import { checkProjectBins, commandsThroughSkippedLinks, linkBins, linkImporterBinsOnce } from './bin-links.js'
import { removeLeftovers } from './leftovers.js'
import { registerProject } from './project-registry.js'
import { UnsupportedShim } from './bin-shim.js'
import { isSemver } from './semver-range.js'
import { blobModeRule, keepsBundled, nativeRelease, tarballRowsOf, type PnpmRelease } from './pnpm-releases.js'
import { parseRegistryDepPath, planVirtualStore, DEPENDENCY_GROUPS, type PlannedPackage } from './virtual-store.js'
import { progressed } from './progress.js'
import { dimmed } from '../report.js'
import { packagesNeedPnpm } from '../why-not.js'
import { directDependencies, type DirectDependency } from './direct-dependencies.js'
import { lookUpBuilds, rowsRequireBuild, sideEffectsCacheKeys, sideEffectsMiss, unbuiltReasons, type CacheKeys, type LookedUpBuild } from './side-effects.js'
import { noteInstalledNatively } from '../code-cache.js'
import { patchedPackages } from './patches.js'
import { packageMapText } from './package-map.js'
import { buildContext, buildSettingsReason, buildSettingsUnsupported, patchSettingsUnsupported, pnpmPaths, runMissedBuilds, type BuildFailed } from './builds-on-miss.js'
import { findWorkspaceProjects, readManifestAt, type Manifest, type WorkspaceProject } from './workspace-projects.js'
import * as binding from '../../../index.js'

/** pnpm's settings the native install reads, besides the head start's. */
export interface NativeInstallConfig extends PnpmConfig, SupplyChainConfig {
  dir?: string
  workspaceDir?: string
  storeDir?: string
  pnpmHomeDir?: string
  pnpmfile?: string[]
  globalPnpmfile?: string
  ignorePnpmfile?: boolean
  ignoreScripts?: boolean
  allowBuilds?: Record<string, unknown>
  dangerouslyAllowAllBuilds?: boolean
  supportedArchitectures?: SupportedArchitectures
  autoInstallPeers?: boolean
  excludeLinksFromLockfile?: boolean
  extendNodePath?: boolean
  preferSymlinkedExecutables?: boolean
  nodeExperimentalPackageMap?: boolean
  registriesByPrefix?: Record<string, unknown>
  overrides?: Record<string, string>
  patchedDependencies?: Record<string, string>
  packageExtensions?: Record<string, unknown>
  ignoredOptionalDependencies?: string[]
  catalogs?: ConfiguredCatalogs
  workspacePackagePatterns?: string[]
  hoistWorkspacePackages?: boolean
  linkWorkspacePackages?: boolean
  dedupeDirectDeps?: boolean
  injectWorkspacePackages?: boolean
  optimisticRepeatInstall?: boolean
  saveWorkspaceState?: boolean
  userAgent?: string
  [setting: string]: unknown
}

/** pnpm's warnings linking the projects' commands, by where its output has them. */
export interface LinkWarnings {
  afterImport: string[]
  afterSummary: string[]
}

/** A project as pnpm's install logs it once it has linked its dependencies. */
export interface ProjectLayout {
  /** Its directory, as pnpm names it (the one pnpm runs in: pnpm's `dir`). */
  dir: string
  /** Its manifest as read, and as pnpm's `readPackage` hooks give it (the overrides applied). */
  manifest: Manifest
  updated: Manifest
  direct: DirectDependency[]
}

export interface NativeInstallSummary {
  /** Whether everything was laid out and the state written. */
  installed: boolean
  /** Why it did not run, when it did not. */
  skipped?: string
  packages: number
  ms: number
  /** Milliseconds since the start at the end of each phase that ran, in order. */
  phases: Record<string, number>
  /** The tarballs it downloaded into the store (a cold store), whether or not it then installed. */
  downloaded: string[]
  /** When the workspace state's validation was recorded (filesystem clock, ns), if it has one. */
  validatedAtNs?: number
  /**
   * The project's lifecycle stages pnpm runs after the layout, if any: then the workspace state
   * is left for pnpm to write, and pnpm's own install finds every package in place and runs them.
   */
  pnpmRunsScripts?: string[]
  /**
   * The projects' own lifecycle stages, still to run natively once the install has been reported
   * (pnpm runs them after its summary): `run` runs them, then writes the workspace state.
   */
  projectScripts?: { shown: string[], run: () => Promise<{ validatedAtNs: number | undefined } | { failed: Error, id: string }> }
  /** Where it installed, for the report pnpm's reporter prints (when it installed, or a build failed). */
  layout?: {
    storeDir: string
    virtualStoreDir: string
    /** Every project (pnpm's summary lists the dependencies of the one it runs in; the others' records only its ndjson reporter shows). */
    projects: ProjectLayout[]
    workspace?: { dir: string, projects: number }
    /** Whether the release's install logs its import method where its reporter sees it (`importMethodLogged`). */
    importMethodLogged: boolean
  }
  /** The warnings pnpm's supply-chain check would have given, in its words (when it installed). */
  warnings?: string[]
  /**
   * What pnpm's supply-chain check would have logged of itself (when it installed and pnpm's own
   * install does not run after it), and the lockfile it names (pnpm names it when it keeps verdicts).
   */
  checkLog?: CheckLog
  /**
   * The warnings pnpm would have given linking the projects' commands (a command's file not there
   * under `@zkochan/cmd-shim`): after its import, and where its lifecycle stage links them again, after its summary.
   */
  linkWarnings?: LinkWarnings
  /**
   * A required package's build that failed (`skipped` says so too): the layout stays as pnpm's
   * failed build step leaves it, nothing recorded, and the install is to end with this error.
   */
  failed?: Error
}

/** The dependency groups a native install installs: all of them (`--prod` and the like are pnpm's). */
const ALL_GROUPS = { dependencies: true, devDependencies: true, optionalDependencies: true }

/** The lockfile fields a frozen install of this kind has (anything else is left to pnpm). */
const KNOWN_LOCKFILE_FIELDS = new Set(['lockfileVersion', 'settings', 'importers', 'packages', 'pnpmfileChecksum', 'overrides', 'catalogs', 'patchedDependencies', 'packageExtensionsChecksum', 'ignoredOptionalDependencies'])

/** Why the settings ask for an install this does not reproduce (`undefined`: they do not): the first of `configReasons`. */
function configUnsupported (config: NativeInstallConfig, version: string | undefined): string | undefined {
  return configReasons(config, version)[0]
}

/**
 * The projects with their manifests as pnpm's checks of the lockfile read them, through its
 * read-package hooks (`hookedManifest`), or why that is not known here.
 */
function projectsAsChecked (projects: WorkspaceProject[], config: NativeInstallConfig, rootDir: string): WorkspaceProject[] | string {
  const overrides = parseOverrides(config.overrides, config.catalogs)
  if (typeof overrides === 'string') return overrides
  const extended = extendedProject(config.packageExtensions, projects.map((p) => p.manifest))
  if (extended != null) return `packageExtensions extend the workspace project ${extended}`
  const checked: WorkspaceProject[] = []
  for (const project of projects) {
    const manifest = hookedManifest(project.manifest, overrides, config.ignoredOptionalDependencies, rootDir, project.dir)
    if (typeof manifest === 'string') return `${project.id === '.' ? 'package.json' : `${project.id}/package.json`}: ${manifest}`
    checked.push({ ...project, manifest })
  }
  return checked
}

/** Why pnpm's frozen check would find `project`'s importer out of date (its manifest as pnpm checks it), or its manifest is one this does not model. */
function projectUnsupported (lockfile: LockfileFile, project: WorkspaceProject, config: NativeInstallConfig, release: PnpmRelease): string | undefined {
  const { manifest, id } = project
  const where = id === '.' ? 'package.json' : `${id}/package.json`
  const meta = manifest.dependenciesMeta
  if (meta != null && typeof meta === 'object' && Object.values(meta).some((m) => (m as { injected?: unknown } | null)?.injected === true)) {
    return `${where}: injected dependencies (dependenciesMeta.*.injected: copies of projects pnpm makes and keeps in sync)`
  }
  // A project's own bundled dependencies matter only when it is packed: pnpm installs its
  // importer as the lockfile has it (checked for the root only, as before workspaces).
  const bundles = id === '.' && (manifest.bundleDependencies != null || manifest.bundledDependencies != null)
  if (manifest.pnpm != null || manifest.dependenciesMeta != null || bundles) {
    return `${where} fields this does not model`
  }
  const outdated = importerOutOfDateUnder(release, lockfile.importers[id], manifest, config.autoInstallPeers !== false, lockfile.catalogs)
  if (outdated != null) return `the lockfile is not up to date with ${where} (${outdated})`
  // Not linked (`linkDirectory: false`), a publish directory changes nothing pnpm lays out.
  const publishConfig = manifest.publishConfig as { directory?: unknown, linkDirectory?: unknown } | undefined
  if (publishConfig?.directory != null && publishConfig.linkDirectory !== false) return `${where}: a publish directory (publishConfig.directory) pnpm links in the project's place`
  return undefined
}

/**
 * A `link:` dependency whose directory is not there (left to pnpm), if any: an importer's
 * (relative to its directory) or a package's (relative to the root's). pnpm links a directory
 * that is not a project of the workspace as it links a project (a symbolic link, the commands
 * its package.json declares), but a missing one dangling, with no commands.
 */
function missingLinkTarget (lockfile: LockfileFile, projects: WorkspaceProject[], rootDir: string): string | undefined {
  const missing = (deps: Record<string, string> | undefined, from: string): string | undefined => {
    const [alias, ref] = Object.entries(deps ?? {}).find(([, ref]) => ref.startsWith('link:') && !isDirectory(path.resolve(from, ref.slice('link:'.length)))) ?? []
    return alias == null ? undefined : `${alias}@${ref}: a link to a directory that is not there`
  }
  for (const { id, dir } of projects) {
    for (const group of DEPENDENCY_GROUPS) {
      const why = missing(lockfile.importers[id][group], dir)
      if (why != null) return why
    }
  }
  for (const snapshot of Object.values(lockfile.packages ?? {})) {
    const why = missing(snapshot.dependencies, rootDir) ?? missing(snapshot.optionalDependencies, rootDir)
    if (why != null) return why
  }
  return undefined
}

function isDirectory (dir: string): boolean {
  return fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true
}

/**
 * Why the lockfile is not one pnpm would install as it is into these projects (`undefined`: it
 * is). A frozen install and a plain one that finds the lockfile up to date take the same path
 * in pnpm, after the same checks (the plain one resolves where the frozen one refuses); the
 * plain one also records today's lockfile settings in the current lockfile. Every project's
 * importer is checked against its manifest, and the projects must be the lockfile's importers.
 */
function lockfileUnsupported (lockfile: LockfileFile, projects: WorkspaceProject[], config: NativeInstallConfig, rootDir: string, release: PnpmRelease): string | { hooked: WorkspaceProject[] } {
  if (lockfile.lockfileVersion !== '9.0') return `lockfileVersion ${String(lockfile.lockfileVersion)}`
  const unknown = Object.keys(lockfile).find((f) => !KNOWN_LOCKFILE_FIELDS.has(f))
  if (unknown != null) return `the lockfile has ${unknown}`
  const importers = Object.keys(lockfile.importers)
  const ids = projects.map((p) => p.id)
  if (importers.length !== ids.length || !ids.every((id) => Object.hasOwn(lockfile.importers, id))) {
    return `the workspace's projects (${ids.join(', ')}) are not the lockfile's importers (${importers.join(', ')})`
  }
  // pnpm resolves a lockfile without dependencies, --frozen-lockfile or not.
  if (importers.every((id) => Object.keys(lockfile.importers[id].specifiers ?? {}).length === 0 && DEPENDENCY_GROUPS.every((group) => Object.keys(lockfile.importers[id][group] ?? {}).length === 0))) {
    return 'a lockfile without dependencies'
  }
  // A plain install resolves then, and writes the lockfile again: it is its own remedy.
  const mismatch = lockfileConfigMismatch(lockfile, config, rootDir)
  if (mismatch != null) return lockfileMode(config, true) === 'if up to date' ? `a plain install, which resolves: ${mismatch}` : mismatch
  const checked = projectsAsChecked(projects, config, rootDir)
  if (typeof checked === 'string') return checked
  if (lockfileMode(config, true) === 'if up to date') {
    // pnpm's plain install also checks that the projects are still linked as their ranges say.
    const links = projects.length > 1 ? linkedProjectsOutOfDate(lockfile.importers, checked, config.linkWorkspacePackages === true) : undefined
    if (links != null) return `a plain install: ${links}`
    const rewritten = lockedSettingsRewritten(lockfile.settings, config)
    if (rewritten != null) return rewritten
  }
  const missing = missingLinkTarget(lockfile, projects, rootDir)
  if (missing != null) return missing
  // The lockfile must be up to date with every package.json, or a frozen install fails (pnpm says why).
  for (const project of checked) {
    const why = projectUnsupported(lockfile, project, config, release)
    if (why != null) return why
  }
  const pruned = workspaceCatalogsPruned(config, projects.map((p) => p.manifest), lockfile.catalogs)
  if (pruned != null) return pruned
  return { hooked: checked }
}

/**
 * The projects pnpm installs: the root alone, or every project of its workspace (found by the
 * `packages` globs), or why they are not known here. An install from a directory below the
 * workspace root installs the whole workspace, when that directory is one of its projects.
 */
function projectsOf (config: NativeInstallConfig, rootDir: string): WorkspaceProject[] | string {
  const patterns = config.workspaceDir != null ? config.workspacePackagePatterns ?? ['.'] : ['.']
  if (!Array.isArray(patterns)) return 'workspace patterns'
  const projects = findWorkspaceProjects(rootDir, patterns)
  if (typeof projects === 'string') return projects
  if (projects[0]?.id !== '.') return 'no package.json'
  const dir = path.resolve(config.dir!)
  if (!projects.some((p) => p.dir === dir)) return 'pnpm runs in a directory that is not a project of the workspace'
  const [invalid] = binding.invalidDependencyAliases(projects.flatMap((p) => p.id !== '.' && p.manifest.name != null ? [String(p.manifest.name)] : []))
  if (invalid != null) return `a workspace project named ${JSON.stringify(invalid)}, which pnpm hoists by its own rules`
  return projects
}

/** The versioned store pnpm would use, when it can be told without pnpm: configured, or the default on this disk. */
function configuredStoreDir (config: NativeInstallConfig, rootDir: string): string | undefined {
  if (config.storeDir != null) return path.join(path.resolve(rootDir, config.storeDir), 'v11')
  if (config.pnpmHomeDir == null) return undefined
  const store = path.join(config.pnpmHomeDir, 'store', 'v11')
  // pnpm keeps its default store on the project's disk (elsewhere it picks another place).
  let existing = store
  while (!fs.existsSync(existing) && path.dirname(existing) !== existing) existing = path.dirname(existing)
  try {
    return fs.statSync(existing).dev === fs.statSync(rootDir).dev ? store : undefined
  } catch {
    return undefined
  }
}

/** Where pnpm downloads a registry package from: its registry's `<name>/-/<basename>-<version>.tgz`. */
function tarballUrl (name: string, version: string, config: NativeInstallConfig): string {
  return `${registryOf(name, config)}${name}/-/${name.slice(name.lastIndexOf('/') + 1)}-${version}.tgz`
}

/** Downloads `packages` into the store, `limit` at a time, each URL to `downloaded`; the first that fails, if any. */
async function downloadAll (lockfile: LockfileFile, packages: PlannedPackage[], storeDir: string, config: NativeInstallConfig, limit: number, downloaded: string[], compat: ReturnType<typeof tarballRowsOf>): Promise<string | undefined> {
  return await firstFailure(packages, limit, async (p) => {
    const url = tarballUrl(p.name, p.version, config)
    const result = await downloadToStore({
      url,
      integrity: lockfile.packages![p.depPath].resolution!.integrity as string,
      storeDir,
      filesIndexFile: p.filesIndexFile,
      maxTarballUnpackedSize: typeof config.maxTarballUnpackedSize === 'number' ? config.maxTarballUnpackedSize : undefined,
      network: networkOf(config),
      compat,
    })
    if (result == null) return url
    downloaded.push(url)
    progressed('downloaded', [{ packageId: p.packageId }])
    return undefined
  })
}

/** `node_modules` is empty but for what pnpm put there before any hook (config dependencies). */
function modulesDirIsFresh (modulesDir: string): boolean {
  try {
    return fs.readdirSync(modulesDir).every((entry) => entry === '.pnpm-config')
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
  }
}

/**
 * Why a project whose own scripts pnpm's install runs after the layout (`scripts.pnpmRuns`) is
 * left to pnpm when pnpm's build step has packages to record (builds it denies, or takes from
 * its cache, `first` among them): its install over a complete layout takes none through its
 * build step, so it would not record them as stock does. (The install's and the explain
 * command's words.)
 */
export function projectScriptsWithBuilds (scripts: { pnpmRuns: string[], whyPnpmRuns?: string }, builds: 'denies' | 'takes from its cache', first: string): string {
  return `the project's ${scripts.pnpmRuns.join(', ')}, which pnpm runs after the layout (${scripts.whyPnpmRuns!}), and pnpm then records the builds it ${builds} (${first}, …) otherwise than stock`
}

/**
 * A package pnpm's build step would record in this install, as the install finds it while it
 * links: a build it denies (the row requires one), else one it takes from its cache; none:
 * `undefined`. From the store's rows, unverified (`requires`: whether each planned package's
 * row requires a build; `builds`: the allowed ones, looked up).
 */
export function buildStepPackage (plan: InstallPlan, config: NativeInstallConfig, builds: LookedUpBuild[], requires: Array<boolean | undefined>): { builds: 'denies' | 'takes from its cache', depPath: string } | undefined {
  const denied = plan.planned.find((p, i) => requires[i] === true && buildIgnored(p, config))
  if (denied != null) return { builds: 'denies', depPath: denied.depPath }
  const cached = builds.find((b) => b.recorded === 'cached')
  return cached != null ? { builds: 'takes from its cache', depPath: cached.depPath } : undefined
}

/** Whether pnpm leaves the build scripts of `pkg` unrun (denied, or scripts off): then its build needs no pnpm. */
export function buildIgnored (pkg: PlannedPackage, config: NativeInstallConfig): boolean {
  if (config.ignoreScripts === true) return true
  if (config.dangerouslyAllowAllBuilds === true) return false
  const allow = config.allowBuilds ?? {}
  return allow[pkg.name] === false || allow[`${pkg.name}@${pkg.version}`] === false
}

/** What the layout needs, once the install is known to be one this reproduces. */
export interface InstallPlan {
  rootDir: string
  modulesDir: string
  virtualStoreDir: string
  storeDir: string
  lockfile: LockfileFile
  lockfileText: string
  /** Every project, the root first. */
  projects: WorkspaceProject[]
  /** The same with their manifests as pnpm's `readPackage` hooks give them (the overrides applied), as its checks read them. */
  hooked: WorkspaceProject[]
  planned: PlannedPackage[]
  /** The optional packages pnpm skips here. */
  skipped: string[]
  /** Every package pnpm's lockfile check looks at: the planned ones and the skipped ones. */
  checked: Array<{ name: string, version: string }>
  /**
   * What becomes of the projects' own lifecycle scripts: run natively after the layout (in the
   * order of `native`), or, when that cannot be done as pnpm does it, by pnpm's own install
   * after the layout (`pnpmRuns`, with why in `whyPnpmRuns`).
   */
  scripts: ProjectScripts & { native?: NativeProjectScripts, pnpmRuns: string[], whyPnpmRuns?: string }
  /** The side-effects cache keys of the packages pnpm builds or patches (see side-effects.ts). */
  cacheKeys: Map<string, CacheKeys>
  /** The planned packages in pnpm's walk order (`WholePlan.installOrder`). */
  installOrder: string[]
  /** The pnpm release whose files are written. */
  release: PnpmRelease
}

/** How the projects' scripts run natively: their order, how many at a time, whether each project's commands are linked again before its scripts. */
interface NativeProjectScripts { graph: Map<string, string[]>, concurrency: number, relink: boolean }

/** pnpm's `shouldPipeOwnLifecycleHooks`: a quiet loglevel with a reporter that shows lines (the default one, append-only). */
function quietReporter (config: NativeInstallConfig): boolean {
  const reporter = config.reporter
  return (config.loglevel === 'warn' || config.loglevel === 'error') && (reporter == null || reporter === 'default' || reporter === 'append-only')
}

/**
 * How the projects' own scripts run natively (the projects' graph, how many at a time), or why
 * not as pnpm runs them: then pnpm's own install runs them after the layout.
 */
function nativeProjectScripts (scripts: ProjectScripts, projects: WorkspaceProject[], config: NativeInstallConfig, version: string): NativeProjectScripts | string {
  // (Whether pnpm was started by its entry script is known only inside pnpm: `installNatively` asks.)
  const why = buildSettingsReason(config, version)
  if (why != null) return why
  if (config.preferSymlinkedExecutables === true) return 'preferSymlinkedExecutables (pnpm gives the scripts a NODE_PATH of its own)'
  if (config.nodeExperimentalPackageMap === true) return 'nodeExperimentalPackageMap (pnpm gives the scripts a package map)'
  const concurrency = buildConcurrency(config.childConcurrency)
  if (concurrency == null) return `childConcurrency ${String(config.childConcurrency)} (pnpm resolves it against the processors)`
  // pnpm's install then orders the projects by name, none waiting for another.
  if (config.sort === false) return 'sort: false'
  // Every project is a node of pnpm's schedule (which ones have started when one fails matters).
  const graph = projects.length > 1
    ? projectsGraph(projects, { catalogs: config.catalogs as Record<string, Record<string, unknown>> | undefined, linkWorkspacePackages: config.linkWorkspacePackages === true })
    : new Map(projects.map((p) => [p.dir, []]))
  if (typeof graph === 'string') return `the projects' order: ${graph}`
  return { graph, concurrency, relink: projects.some((p) => p.id !== '.' && commandMadeByScript(p)) }
}

/**
 * Whether a workspace project declares a command whose file is not there yet (a script of its
 * own may make it): pnpm links each project's commands again before its scripts, and a shim
 * written for a file that was missing is then written for the file that is there.
 */
function commandMadeByScript (project: WorkspaceProject): boolean {
  const { bin, directories } = project.manifest as { bin?: unknown, directories?: { bin?: unknown } }
  if (bin == null) return directories?.bin != null && !fs.existsSync(path.join(project.dir, String(directories.bin)))
  const files = typeof bin === 'string' ? [bin] : typeof bin === 'object' ? Object.values(bin as Record<string, unknown>) : []
  return files.some((file) => typeof file !== 'string' || !fs.existsSync(path.join(project.dir, file)))
}

/**
 * The plan of the install into an empty `node_modules` (a fresh clone's), as `release` writes
 * it, under settings `configUnsupported` took, or why it is left to pnpm. Reads the project,
 * writes nothing (the explain command runs it too).
 */
export function planInstall (config: NativeInstallConfig, release: PnpmRelease, phase: (name: string) => void = () => {}): InstallPlan | string {
  const rootDir = path.resolve(config.lockfileDir!)
  const modulesDir = path.join(rootDir, 'node_modules')
  const read = readLockfileFile(rootDir)
  if (typeof read === 'string') return read
  const { lockfile, text } = read
  const projects = projectsOf(config, rootDir)
  if (typeof projects === 'string') return projects
  const stale = lockfileUnsupported(lockfile, projects, config, rootDir, release)
  if (typeof stale === 'string') return stale
  const projectScripts = workspaceScripts(projects, config.ignoreScripts === true)
  if (projectScripts.leftToPnpm != null) return projectScripts.leftToPnpm
  const native = projectScripts.runs.length > 0 ? nativeProjectScripts(projectScripts, projects, config, release.version) : undefined
  const scripts = typeof native === 'string'
    ? { ...projectScripts, pnpmRuns: projectScripts.shown, whyPnpmRuns: native }
    : { ...projectScripts, native, pnpmRuns: [] }
  const storeDir = configuredStoreDir(config, rootDir)
  if (storeDir == null) return 'the store is not known before pnpm picks it'

  phase('lockfile')
  const virtualStoreDir = path.join(modulesDir, '.pnpm')
  const nodeVersion = enginesNodeVersion(config.nodeVersion)
  for (const { manifest } of projects) {
    const ownEngines = projectEnginesRefused(manifest.engines, release.version, nodeVersion, config.engineStrict === true)
    if (ownEngines != null) return ownEngines
  }
  const { refused, planned, notPlanned, leftToPnpm, skipped, installOrder } = planVirtualStore(lockfile, {
    lockfileDir: rootDir,
    virtualStoreDir,
    virtualStoreDirMaxLength: config.virtualStoreDirMaxLength,
    include: ALL_GROUPS,
    engineStrict: config.engineStrict,
    installable: (name, snapshot, optional) => installableHere(name, snapshot, config.supportedArchitectures, optional),
    enginesMet: enginesChecker(nodeVersion),
    patched: true,
    skipRule: release.skipRule,
    skippedLinkTarget: release.skippedLinks === 'working directory' ? process.cwd() : undefined,
  })
  if (refused != null) return refused
  if (notPlanned.length > 0) return packagesNeedPnpm(leftToPnpm!)
  const throughSkipped = release.skippedLinks === 'working directory' && skipped.length > 0 ? commandsThroughSkippedLinks(lockfile, new Set(skipped), process.cwd()) : undefined
  if (throughSkipped != null) return throughSkipped
  // pnpm checks every package of the lockfile, reached or not, before it installs any.
  if (planned.length + skipped.length !== Object.keys(lockfile.packages ?? {}).length) return 'the lockfile has packages no importer reaches'
  // pnpm checks every package, the skipped ones too (named as pnpm names them).
  const checked = [...planned, ...skipped.map((depPath) => {
    const { name, version } = parseRegistryDepPath(depPath)!
    return { depPath, name, version: lockfile.packages![depPath].version ?? version }
  })]
  const nonSemver = checked.find((p) => !isSemver(p.version))
  if (config.trustLockfile !== true && nonSemver != null) return `${nonSemver.depPath}: a version pnpm's lockfile check refuses`
  // A build pnpm runs or a patch it applies comes from its side-effects cache, under pnpm's key.
  const patched = patchedPackages(lockfile.patchedDependencies, planned, config, rootDir)
  if (typeof patched === 'string') return patched
  const cacheKeys = sideEffectsCacheKeys(lockfile, planned, config, patched, release.sideEffectsKeys)
  if (typeof cacheKeys === 'string') return cacheKeys
  return { rootDir, modulesDir, virtualStoreDir, storeDir, lockfile, lockfileText: text, projects, hooked: stale.hooked, planned, installOrder, skipped, checked, scripts, cacheKeys, release }
}

/**
 * The virtual store, every package in place (those the store lacks downloaded first, as pnpm
 * would), or why it stopped; each package's result, for the builds it ignored; the packages
 * whose build or patch the side-effects cache lacks, imported unbuilt for it to run
 * (`builds-on-miss.ts`), with whether each one's row requires a build.
 */
async function linkVirtualStore (plan: InstallPlan, config: NativeInstallConfig, importMethod: PackageImportMethod, phase: (name: string) => void, downloaded: string[]): Promise<{ stopped: string } | { results: StoredPackageResult[], toBuild: number[], rowBuilds: boolean[] }> {
  const { storeDir, lockfile, planned } = plan
  // A build pnpm runs or a patch it applies is imported from its side-effects cache, or left to pnpm.
  const packages = planned.map((p) => {
    const keys = plan.cacheKeys.get(p.depPath)
    return { ...p, buildIgnored: buildIgnored(p, config), sideEffectsCacheKey: keys?.key, patchedSideEffectsCacheKey: keys?.patched }
  })
  // A build or patch the cache lacks is run natively, when pnpm's build step can be reproduced
  // (and pnpm's own install does not follow to run the project's scripts: see layOut). A build
  // step that cannot be is the reason first, as the explain command words it (under a release
  // whose builds are pnpm's, the project's scripts are pnpm's for that same reason).
  // What the running pnpm writes in the store for what is downloaded.
  const rows = tarballRowsOf(plan.release.version)
  const projectScripts = plan.scripts.pnpmRuns.length > 0 ? `the project's ${plan.scripts.pnpmRuns.join(', ')} (${plan.scripts.whyPnpmRuns!})` : undefined
  const cannotBuild = buildSettingsUnsupported(config, plan.release.version) ?? projectScripts
  // A patched package whose build pnpm does not allow: patched in pnpm's build step on every
  // install, nothing looked up; imported unbuilt with those the cache lacks, below (no script of
  // it runs: under more releases than builds).
  const eachTime = new Set(planned.flatMap((p, i) => plan.cacheKeys.get(p.depPath)?.eachTime === true ? [i] : []))
  const cannotPatch = eachTime.size > 0 ? projectScripts ?? patchSettingsUnsupported(config, plan.release) : undefined
  const missed = (r: StoredPackageResult, at: number): boolean => r.leftOut === 'no-side-effects' && (eachTime.has(at) ? cannotPatch : cannotBuild) == null
  const leftOutWhy = async (at: number, result: StoredPackageResult): Promise<string> => {
    const { depPath } = planned[at]
    if (result.leftOut !== 'no-side-effects') return `${depPath}: ${result.leftOut!}${result.reason != null ? ` (${result.reason})` : ''}`
    if (eachTime.has(at)) return `${depPath}: patched, and pnpm applies the patch itself (its build is not allowed), and ${cannotPatch!}`
    // Builds pnpm recorded as changing nothing stop every clone (pnpm runs them again each
    // time): all said first, whichever the cache lacks this time.
    const { everyInstall } = cannotBuild != null ? unbuiltReasons(await lookUpBuilds(storeDir, planned, plan.cacheKeys), cannotBuild) : {}
    if (everyInstall != null) return everyInstall
    return sideEffectsMiss(depPath, [packages[at].sideEffectsCacheKey, packages[at].patchedSideEffectsCacheKey], cannotBuild)
  }
  const link = async (some: typeof packages, method = importMethod): Promise<StoredPackageResult[]> => (await linkStoredPackages({
    storeDir,
    packageImportMethod: method,
    verifyStoreIntegrity: config.verifyStoreIntegrity ?? true,
    strictStorePkgContentCheck: config.strictStorePkgContentCheck ?? true,
    blobModeRule: blobModeRule(plan.release.version),
    keepBundled: keepsBundled(plan.release.version),
    packages: some,
  })).results
  // pnpm fetches a package once, whatever its peers' variants: it counts it once as found in the
  // store or downloaded, and downloads it once (`idOf`: its package id).
  const idOf = (at: number): string => planned[at].packageId
  const counted = new Set<string>()
  const reusedOnce = (indexes: number[]): PlannedPackage[] => indexes.filter((at) => !counted.has(idOf(at)) && counted.add(idOf(at))).map((at) => planned[at])
  const oncePerPackage = (indexes: number[]): PlannedPackage[] => [...new Map(indexes.map((at) => [idOf(at), planned[at]])).values()]
  // A store that does not exist yet holds nothing (and linkStoredPackages refuses it).
  const storeExists = fs.existsSync(storeDir)
  const results = planned.map((): StoredPackageResult => ({ linked: false, leftOut: 'no-side-effects' }))
  const looked = planned.flatMap((_, i) => eachTime.has(i) ? [] : [i])
  const first = storeExists ? await link(looked.map((i) => packages[i])) : looked.map((): StoredPackageResult => ({ linked: false, leftOut: 'not-in-store' }))
  looked.forEach((at, k) => { results[at] = first[k] })
  reportAdded(looked.map((at) => planned[at]), first, reusedOnce(looked.filter((at) => results[at].linked)))
  const cannot = results.findIndex((r, at) => !r.linked && r.leftOut !== 'not-in-store' && !missed(r, at))
  if (cannot !== -1) return { stopped: await leftOutWhy(cannot, results[cannot]) }
  const missing = results.flatMap((r, i) => r.linked || missed(r, i) ? [] : [i])
  // What was downloaded (pnpm counts the rest as reused), by package.
  for (const at of missing) counted.add(idOf(at))
  if (missing.length > 0) {
    // A cold store: the packages it lacks are downloaded as pnpm would, then linked.
    phase('linked from the store')
    const why = fetchUnsupported(config)
    if (why != null) return { stopped: `${missing.length} packages are not in the store, and ${why}` }
    const failed = await downloadAll(lockfile, oncePerPackage(missing), storeDir, config, networkConcurrencyOf(config), downloaded, rows)
    if (failed != null) return { stopped: `${failed} did not download` }
    phase('downloaded')
    const second = await link(missing.map((i) => packages[i]))
    reportAdded(missing.map((at) => planned[at]), second, [])
    const notLinked = second.findIndex((r, k) => !r.linked && !missed(r, missing[k]))
    if (notLinked !== -1) return { stopped: await leftOutWhy(missing[notLinked], second[notLinked]) }
    missing.forEach((at, k) => { results[at] = second[k] })
  }
  // As pnpm imports a package it will build or patch: unbuilt, with files of its own.
  const toBuild = results.flatMap((r, i) => missed(r, i) ? [i] : [])
  if (toBuild.length === 0) return { results, toBuild, rowBuilds: [] }
  // A build that runs is not ignored; one pnpm denies (a package patched each time) is, as pnpm
  // denies it (an undecided one requires a build pnpm asks about: left to it).
  const unbuiltPackages = toBuild.map((i) => ({ ...packages[i], buildIgnored: !eachTime.has(i) || packages[i].buildIgnored, sideEffectsCacheKey: undefined, patchedSideEffectsCacheKey: undefined }))
  // (A store that does not exist yet holds nothing: only packages patched each time can be here then.)
  const linkUnbuilt = async (some: typeof unbuiltPackages): Promise<StoredPackageResult[]> => fs.existsSync(storeDir)
    ? await link(some, importMethod === 'copy' ? 'copy' : 'clone-or-copy')
    : some.map((): StoredPackageResult => ({ linked: false, leftOut: 'not-in-store' }))
  const unbuilt = await linkUnbuilt(unbuiltPackages)
  // Only a package patched each time can be missing from the store here (it was not looked up).
  const absent = unbuilt.flatMap((r, k) => r.leftOut === 'not-in-store' ? [k] : [])
  for (const k of absent) counted.add(idOf(toBuild[k]))
  if (absent.length > 0) {
    const why = fetchUnsupported(config)
    if (why != null) return { stopped: `${absent.length} packages are not in the store, and ${why}` }
    const failed = await downloadAll(lockfile, oncePerPackage(absent.map((k) => toBuild[k])), storeDir, config, networkConcurrencyOf(config), downloaded, rows)
    if (failed != null) return { stopped: `${failed} did not download` }
    const again = await linkUnbuilt(absent.map((k) => unbuiltPackages[k]))
    absent.forEach((k, j) => { unbuilt[k] = again[j] })
  }
  // pnpm counts a package it found in the store as reused: those imported unbuilt were not counted above.
  reportAdded(toBuild.map((at) => planned[at]), unbuilt, reusedOnce(toBuild.filter((_, k) => unbuilt[k].linked)))
  const failed = unbuilt.findIndex((r) => !r.linked)
  if (failed !== -1) return { stopped: await leftOutWhy(toBuild[failed], unbuilt[failed]) }
  toBuild.forEach((at, k) => { results[at] = { ...unbuilt[k], buildIgnored: eachTime.has(at) && unbuilt[k].buildIgnored === true } })
  return { results, toBuild, rowBuilds: unbuilt.map((r) => r.buildIgnored === true) }
}

/** Tells the progress of `some` packages linked (`results`, in their order), `reused` of them (once per package) found in the store. */
function reportAdded (some: PlannedPackage[], results: StoredPackageResult[], reused: PlannedPackage[]): void {
  progressed('reused', reused.map((p) => ({ packageId: p.packageId })))
  progressed('added', results.flatMap((r, k) => r.linked ? [{ to: some[k].targetDir, method: r.importMethod }] : []))
}

/**
 * Lays out `plan` and records it last (with the time its validation was recorded at, if any),
 * or says why it stopped, with nothing recorded (pnpm installs over what is there).
 * `supplyChainAnswer`: the registry's answer to pnpm's check of the packages' ages, awaited
 * before anything but the virtual store. `publicLinks` is given the links the hoisting makes in
 * the root's `node_modules` (alias → directory), `linkWarnings` pnpm's warnings linking commands.
 */
async function layOut (plan: InstallPlan, config: NativeInstallConfig, importMethod: PackageImportMethod, supplyChain: Pick<SupplyChainCheck, 'registry' | 'verdict'>, phase: (name: string) => void, downloaded: string[], publicLinks: Record<string, string>, linkWarnings: LinkWarnings): Promise<{ stopped: string } | BuildFailed | { validatedAtNs: number | undefined } | { pnpmRunsScripts: string[] } | { projectScripts: NonNullable<NativeInstallSummary['projectScripts']> }> {
  const { rootDir, modulesDir, virtualStoreDir, storeDir, lockfile, projects, planned } = plan
  // pnpm's own install runs the project's scripts and would record no build of its build step
  // over a complete layout: what the store's rows say is told before anything is laid out, so
  // that pnpm installs as stock (its list of the projects' dependencies included). Packages the
  // store lacks are found once linked (below).
  if (plan.scripts.pnpmRuns.length > 0 && config.ignoreScripts !== true && fs.existsSync(storeDir)) {
    const requires = await rowsRequireBuild(storeDir, planned.map((p) => p.filesIndexFile))
    const withBuilds = buildStepPackage(plan, config, await lookUpBuilds(storeDir, planned, plan.cacheKeys), requires)
    if (withBuilds != null) return { stopped: projectScriptsWithBuilds(plan.scripts, withBuilds.builds, withBuilds.depPath) }
  }
  // pnpm's install lists the project in the store when it opens it, before it links anything.
  try {
    await registerProject(storeDir, rootDir, plan.release.projectLink)
  } catch (err) {
    return { stopped: `the store's list of projects: ${(err as Error).message}` }
  }
  const linking = linkVirtualStore(plan, config, importMethod, phase, downloaded)
  // pnpm's record of its check of the lockfile, worked out while the store links when the
  // registry is not asked (it may hash the lockfile), added once the install is done.
  const supplyChainAnswer = supplyChain.registry
  let recordVerdict = supplyChainAnswer == null ? supplyChain.verdict?.() : undefined
  // The projects' direct dependencies and the hoisting, worked out while the store links too.
  const dirByDepPath = new Map(planned.map((p) => [p.depPath, p.targetDir]))
  const importers = projects.map((p) => ({ ...importerDependencies(lockfile, p.id, p.dir, (depPath) => dirByDepPath.get(depPath)), modulesDir: path.join(p.dir, 'node_modules') }))
  const hoistPattern = config.hoistPattern as string[]
  const publicHoistPattern = config.publicHoistPattern as string[]
  const workspaceProjects = config.hoistWorkspacePackages === false
    ? []
    : projects.flatMap((p) => p.id !== '.' && typeof p.manifest.name === 'string' && p.manifest.name !== '' ? [{ id: p.id, name: p.manifest.name, dir: p.dir }] : [])
  const hoisted = hoist(lockfile, planned, { importers, hoistPattern, publicHoistPattern, workspaceProjects, projectHoisting: plan.release.projectHoisting })
  Object.assign(publicLinks, hoisted.publicLinks)
  const virtualStore = await linking
  if ('stopped' in virtualStore) return virtualStore
  const { results, toBuild, rowBuilds } = virtualStore
  phase('virtual store')
  // The virtual store is in place but nothing is recorded: pnpm checks again, and installs over it or refuses.
  const unchecked = await supplyChainAnswer
  if (unchecked != null) return { stopped: unchecked }
  if (supplyChainAnswer != null) {
    recordVerdict = supplyChain.verdict?.()
    phase('supply chain')
  }
  const building = new Set(toBuild.map((i) => planned[i].depPath))
  // In pnpm's walk order, which its `pendingBuilds` lists them in.
  const walkIndex = new Map(plan.installOrder.map((depPath, i) => [depPath, i]))
  const requireBuild = planned.filter((_, i) => results[i].buildIgnored === true).map((p) => p.depPath).sort((a, b) => walkIndex.get(a)! - walkIndex.get(b)!)
  // Recorded as pnpm records them: those from its cache, and those built here (below).
  const builtFromCache = planned.filter((_, i) => results[i].built === true || building.has(planned[i].depPath)).map((p) => p.depPath)
  // pnpm's own install over a complete layout takes no package through its build step, so it
  // would not record the denied or cached builds as stock does (`ignoredBuilds: []`). Told
  // before the projects' links (those the store lacked are known only now): pnpm links them
  // itself then, and lists the projects' dependencies as stock does.
  const buildStep = [...requireBuild, ...builtFromCache]
  if (plan.scripts.pnpmRuns.length > 0 && buildStep.length > 0 && config.ignoreScripts !== true) {
    return { stopped: projectScriptsWithBuilds(plan.scripts, requireBuild.length > 0 ? 'denies' : 'takes from its cache', buildStep[0]) }
  }
  // The projects' links and hoisting: only once every package is in place.
  await symlinkAllModules({
    deps: [
      ...importers.map((i) => ({ name: '', modules: i.modulesDir, children: i.id === '.' ? { ...i.direct, ...hoisted.publicLinks } : i.direct })),
      { name: '', modules: path.join(virtualStoreDir, 'node_modules'), children: hoisted.privateLinks },
    ],
  })
  phase('links')
  const binOptions: Parameters<typeof linkBins>[2] = {
    importers,
    virtualStoreDir,
    hoisted,
    publicHoistPattern,
    ignoreScripts: config.ignoreScripts === true,
    extendsNodePath: config.extendNodePath !== false && hoistPattern.length > 0,
    autoInstallPeers: config.autoInstallPeers !== false,
    shimQuoting: plan.release.shimQuoting,
    shimHelpers: plan.release.shimHelpers,
    shimWriter: plan.release.shimWriter,
    shimBase: plan.release.shimBase,
    peerBins: plan.release.peerBins,
    buildStepNodePath: plan.release.buildStepNodePath,
    keptShimBytes: plan.release.keptShimBytes,
    // pnpm takes each package with a build through its build step, and denies it there; with
    // scripts off it has a build step only when patches are configured (nothing runs in it then).
    throughBuildStep: new Set(config.ignoreScripts === true && Object.keys(config.patchedDependencies ?? {}).length === 0 ? [] : planned.filter((_, i) => results[i].buildIgnored === true || building.has(planned[i].depPath)).map((p) => p.depPath)),
    // Filled when an optional package's build fails and it is removed.
    removed: new Set(),
    warn: (message) => linkWarnings.afterImport.push(message),
    warnAfterSummary: (message) => linkWarnings.afterSummary.push(message),
  }
  try {
    if (toBuild.length === 0) linkBins(lockfile, planned, binOptions)
    else {
      // pnpm links the projects' commands after its build step (a build sees none of them, and
      // a failed one leaves none): checked now, written after the builds.
      linkBins(lockfile, planned, binOptions, 'before builds')
      checkProjectBins(lockfile, planned, binOptions)
    }
  } catch (err) {
    // Laid out but not recorded: pnpm installs over it.
    if (err instanceof UnsupportedShim) return { stopped: err.message }
    throw err
  }

  phase('bins')
  if (toBuild.length > 0) {
    // Before anything is recorded: a case it does not build as pnpm would leaves the install to
    // pnpm; a build that fails ends it there, nothing recorded, as pnpm's build step does.
    const stopped = await runMissedBuilds(plan, config, {
      at: toBuild,
      rowBuilds,
      throughBuildStep: new Set(planned.flatMap((p, i) => results[i].buildIgnored === true || results[i].built === true ? [p.targetDir] : [])),
      roots: importers.flatMap((i) => Object.values(i.direct)),
      modulesDirs: importers.map((i) => i.modulesDir),
      removed: binOptions.removed!,
    }, () => linkBins(lockfile, planned, binOptions, 'before builds'))
    if (typeof stopped === 'string') return { stopped }
    if ('failed' in stopped) return stopped
    // The projects' commands, after the builds (none of an optional package skipped there).
    try {
      linkBins(lockfile, planned, binOptions, 'projects')
    } catch (err) {
      // Scripts have run: never handed back to pnpm (which would run them again).
      return { failed: err as Error, depPath: stopped.skippedOptional[0] ?? planned[toBuild[0]].depPath }
    }
    phase('builds')
  }
  const record: InstallRecord = {
    rootDir,
    modulesDir,
    storeDir,
    pnpmVersion: plan.release.version,
    projects,
    hoistedDependencies: hoisted.record,
    hoistPattern,
    publicHoistPattern,
    requireBuild,
    builtFromCache,
    patchFiles: Object.values(config.patchedDependencies ?? {}).map((file) => path.resolve(rootDir, file)),
    pendingProjects: plan.scripts.pendingProjects,
    skipped: plan.skipped,
    lockfileText: currentLockfileText(plan.lockfileText, plan.release.currentLockfilePublish),
    packageMap: plan.release.packageMap
      ? packageMapText(lockfile, { lockfileDir: rootDir, rootModulesDir: modulesDir, virtualStoreDir, virtualStoreDirMaxLength: config.virtualStoreDirMaxLength as number, importerNames: Object.fromEntries(projects.map((p) => [p.id, p.manifest.name as string | undefined])), include: ALL_GROUPS })
      : undefined,
    registries: plan.release.modulesRegistries ? config.registries as Record<string, unknown> | undefined : undefined,
  }
  writeLayoutState(record, config)
  // pnpm's own install, finding the project not up to date, runs the scripts and writes the state.
  if (plan.scripts.pnpmRuns.length > 0) {
    phase('state')
    return { pnpmRunsScripts: plan.scripts.pnpmRuns }
  }
  const { native } = plan.scripts
  if (native != null) {
    // pnpm runs them after its summary: the caller reports first, then runs them.
    phase('state')
    const ctx = {
      ...buildContext(config, rootDir, virtualStoreDir, pnpmPaths()!),
      initCwd: process.cwd(),
      // Not the privately hoisted packages' commands, which a dependency's build has.
      extraBinPaths: (config.extraBinPaths as string[] | undefined) ?? [],
      // A project's own `_id` names it in a failed script's error, to 11.28.3.
      ownId: plan.release.ownScriptId,
      // Outside a workspace pnpm's install is not recursive: the scripts write to the terminal
      // (but for a quiet loglevel with a reporter showing lines, which pipes them).
      ...(config.workspaceDir == null && !quietReporter(config) ? { stdio: 'inherit' as const, announce: (script: string) => process.stderr.write(`${dimmed(`$ ${script}`)}\n`) } : {}),
    }
    return {
      projectScripts: {
        shown: plan.scripts.shown,
        run: async () => {
          // As pnpm's runner links each project's commands before its scripts (only a shim for a file then missing can change).
          const relink = native.relink ? (id: string) => linkBins(lockfile, planned, { ...binOptions, importers: importers.filter((i) => i.id === id) }, 'projects') : undefined
          const failure = await runProjectScripts(projects, plan.scripts.runs, native.graph, native.concurrency, ctx, relink)
          if (failure == null) {
            recordVerdict?.()
            return { validatedAtNs: writeWorkspaceState(record, config) }
          }
          try {
            linkImporterBinsOnce(lockfile, planned, binOptions, new Set(failure.unstarted))
          } catch {
            // The script's failure is what the install ends with; the shims stay as they are.
          }
          return failure
        },
      },
    }
  }
  recordVerdict?.()
  const validatedAtNs = writeWorkspaceState(record, config)
  phase('state')
  return { validatedAtNs }
}

/** The plan's lockfile as pnpm's supply-chain check looks up its verdicts: by path, then by content. */
export function checkedLockfile (plan: Pick<InstallPlan, 'rootDir' | 'lockfile' | 'lockfileText'>): CheckedLockfile {
  // Hashed once at most: looking a verdict up and recording one may both want it.
  let hashed: { hash: string | undefined } | undefined
  return { path: path.join(plan.rootDir, 'pnpm-lock.yaml'), contentHash: () => (hashed ??= { hash: lockfileContentHash(plan.lockfile, plan.lockfileText) }).hash }
}

/** A linked directory's manifest for the summary: a project's as read, else the folder's own. */
function linkedManifest (projects: WorkspaceProject[]): (dir: string) => Manifest | undefined {
  const byDir = new Map(projects.map((p) => [p.dir, p.manifest]))
  return (dir) => {
    const manifest = byDir.get(dir) ?? readManifestAt(dir)
    return typeof manifest === 'object' ? manifest : undefined
  }
}

/** The projects as pnpm's install logs them (the one it runs in named as pnpm names it, `config.dir`); the root's hoisting (`publicLinks`) is the root's. */
function projectLayouts (plan: InstallPlan, config: NativeInstallConfig, publicLinks: Record<string, string>): ProjectLayout[] {
  const cwd = path.resolve(config.dir!)
  return plan.projects.map((project, i): ProjectLayout => ({
    dir: project.dir === cwd ? config.dir! : project.dir,
    manifest: project.manifest,
    updated: plan.hooked[i].manifest,
    direct: directDependencies(plan.lockfile, plan.skipped, plan.rootDir, linkedManifest(plan.projects), project.id === '.' ? publicLinks : {}, project.id),
  }))
}

/**
 * Installs the lockfile natively if this install is one it reproduces; otherwise does nothing
 * and says why. `pnpmVersion` is the version pnpm's `userAgent` names.
 */
export async function installNatively (config: NativeInstallConfig, pnpmVersion: string | undefined, importMethod: PackageImportMethod): Promise<NativeInstallSummary> {
  const started = performance.now()
  const phases: Record<string, number> = {}
  const phase = (name: string): void => { phases[name] = Math.round(performance.now() - started) }
  const downloaded: string[] = []
  const done = (packages: number, skipped?: string, more: Pick<NativeInstallSummary, 'validatedAtNs' | 'pnpmRunsScripts' | 'projectScripts' | 'layout' | 'warnings' | 'checkLog' | 'linkWarnings'> = {}): NativeInstallSummary => {
    // The plugin's code cache is worth making once the whole native install has run (code-cache.ts).
    if (skipped == null) noteInstalledNatively()
    return { installed: skipped == null, packages, ms: performance.now() - started, phases, downloaded, ...(skipped != null ? { skipped } : {}), ...more }
  }

  // Before anything else, and whether or not it then runs: what a killed one left goes.
  if (config.lockfileDir != null) removeLeftovers(path.join(path.resolve(config.lockfileDir), 'node_modules'))
  const why = configUnsupported(config, pnpmVersion) ??
    (modulesDirIsFresh(path.join(path.resolve(config.lockfileDir!), 'node_modules')) ? undefined : 'node_modules is not empty')
  if (why != null) return done(0, why)
  // configUnsupported took the release: one of the table's native ones.
  const planned = planInstall(config, nativeRelease(pnpmVersion) as PnpmRelease, phase)
  if (typeof planned === 'string') return done(0, planned)
  // What an earlier install left in a project's node_modules is pnpm's to prune or keep (the
  // plan is a fresh clone's, which has none: the explain command plans for one).
  const used = planned.projects.find((p) => p.id !== '.' && !modulesDirIsFresh(path.join(p.dir, 'node_modules')))
  if (used != null) return done(0, `${used.id}/node_modules is not empty`)
  // A pnpm started otherwise than by its entry script (a single executable) runs the projects' scripts itself.
  const plan = planned.scripts.native != null && pnpmPaths() == null
    ? { ...planned, scripts: { ...planned.scripts, native: undefined, pnpmRuns: planned.scripts.shown, whyPnpmRuns: 'a pnpm not started by its entry script' } }
    : planned
  // pnpm's check of the packages' ages asks the registry while the virtual store is linked, as
  // pnpm's own does while it installs.
  const supplyChain = checkSupplyChain(checkedLockfile(plan), plan.checked, config, Date.now(), plan.release)
  if (supplyChain.leftToPnpm != null) return done(0, supplyChain.leftToPnpm)
  phase('plan')
  progressed('resolved', plan.planned.map((p) => ({ packageId: p.packageId })))
  try {
    const publicLinks: Record<string, string> = {}
    const linkWarnings: LinkWarnings = { afterImport: [], afterSummary: [] }
    const laidOut = await layOut(plan, config, importMethod, supplyChain, phase, downloaded, publicLinks, linkWarnings)
    if ('stopped' in laidOut) return done(0, laidOut.stopped)
    const layout = {
      storeDir: plan.storeDir,
      virtualStoreDir: plan.virtualStoreDir,
      projects: projectLayouts(plan, config, publicLinks),
      ...(config.workspaceDir != null ? { workspace: { dir: config.workspaceDir, projects: plan.projects.length } } : {}),
      importMethodLogged: plan.release.importMethodLogged,
    }
    if ('failed' in laidOut) return { ...done(plan.planned.length, `${laidOut.depPath}: its build failed (${laidOut.failed.message.replace(/\n/g, ': ')})`, { layout }), failed: laidOut.failed }
    const warnings = supplyChain.warnings ?? []
    const checkLog = supplyChain.log()
    if ('validatedAtNs' in laidOut) return done(plan.planned.length, undefined, { validatedAtNs: laidOut.validatedAtNs, layout, warnings, checkLog, linkWarnings })
    // pnpm's own install, running the project's scripts over the layout, makes its check and
    // links the projects' commands again, both times: it logs that check and gives those warnings itself.
    return done(plan.planned.length, undefined, { ...laidOut, layout, warnings, ...('pnpmRunsScripts' in laidOut ? {} : { checkLog, linkWarnings }) })
  } finally {
    supplyChain.cancel()
  }
}
