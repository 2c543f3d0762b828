/**
 * The native frozen install: when `pnpm install` would install the lockfile as it is into an
 * empty `node_modules`, the plugin lays out all of it in `hooks.updateConfig`, which pnpm 11
 * runs before its optimistic up-to-date check, and writes pnpm's state files last. pnpm then
 * finds the project up to date and exits ("Already up to date").
 *
 * All or nothing: it runs only for the installs it reproduces exactly (checked against stock
 * pnpm, release by release, by the e2e tests: `pnpm-releases.ts`), and anything else (see
 * `unsupported`) is left to pnpm, untouched. It writes the workspace state, the file pnpm's check reads, only once everything
 * else is in place, so a failure or a kill halfway never leaves a `node_modules` pnpm takes for
 * up to date: pnpm just installs over it. docs/native-install.md has the rules and their sources.
 */
import fs from 'node:fs'
import path from 'node:path'
import { linkStoredPackages, symlinkAllModules, type PackageImportMethod, type StoredPackageResult } from '../../api/import.js'
import { enginesMet, enginesNodeVersion, installableHere, projectEnginesRefused, type SupportedArchitectures } from './installable.js'
import { writeLayoutState, writeWorkspaceState, type InstallRecord } from './install-state.js'
import { readLockfileFile, type LockfileFile } from './lockfile-file.js'
import { downloadToStore, fetchUnsupported, networkConcurrencyOf, networkOf, registryOf } from '../registry-fetch.js'
import { firstFailure } from '../first-failure.js'
import { checkSupplyChain, type SupplyChainConfig } from './supply-chain.js'
import { layoutUnsupported, lockfileMode, type PnpmConfig } from '../pnpm-config.js'
import { hoist, rootDependencies } from './hoist.js'
import { projectScripts, type ProjectScripts } from './project-scripts.js'
import { importerOutOfDate, lockedSettingsRewritten, lockfileConfigMismatch } from './frozen-check.js'
import { workspaceCatalogsPruned, type ConfiguredCatalogs } from './catalogs.js'
import { linkBins } from './bin-links.js'
import { removeLeftovers } from './leftovers.js'
import { UnsupportedShim } from './bin-shim.js'
import { isSemver } from './semver-range.js'
import { nativeRelease, type PnpmRelease } from './pnpm-releases.js'
import { parseRegistryDepPath, planVirtualStore, DEPENDENCY_GROUPS, type PlannedPackage } from './virtual-store.js'

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
  catalogs?: ConfiguredCatalogs
  optimisticRepeatInstall?: boolean
  saveWorkspaceState?: boolean
  userAgent?: string
  [setting: string]: unknown
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
}

/** The lockfile fields a frozen install of this kind has (anything else is left to pnpm). */
const KNOWN_LOCKFILE_FIELDS = new Set(['lockfileVersion', 'settings', 'importers', 'packages', 'pnpmfileChecksum', 'overrides', 'catalogs'])
const MANIFEST_FILES = ['package.json', 'package.json5', 'package.yaml']

/** Why the settings ask for an install this does not reproduce (`undefined`: they do not). */
function configUnsupported (config: NativeInstallConfig): string | undefined {
  if (lockfileMode(config, true) == null) return 'pnpm resolves (preferFrozenLockfile false, --fix-lockfile, --update-checksums or no lockfile)'
  const layout = layoutUnsupported(config)
  if (layout != null) return layout
  // pnpm runs plugins' updateConfig first: another pnpmfile's could still change the settings.
  if ((config.pnpmfile ?? []).length > 1) return 'other pnpmfiles'
  if (config.optimisticRepeatInstall === false) return 'optimisticRepeatInstall false'
  if (config.saveWorkspaceState === false) return 'saveWorkspaceState false'
  if (config.production === false || config.dev === false || config.optional === false) return 'not every dependency group is installed'
  if (config.lockfileDir == null || config.dir == null || path.resolve(config.dir) !== path.resolve(config.lockfileDir)) return 'a project below the lockfile dir'
  if (config.workspaceDir != null && path.resolve(config.workspaceDir) !== path.resolve(config.lockfileDir)) return 'a workspace root elsewhere'
  if (config.modulesDir != null && config.modulesDir !== 'node_modules') return 'a modulesDir of its own'
  if (config.virtualStoreDir != null) return 'a virtualStoreDir of its own'
  if (config.hoist === false || config.shamefullyHoist === true) return 'hoisting settings'
  if (!Array.isArray(config.hoistPattern) || !Array.isArray(config.publicHoistPattern)) return 'hoist patterns'
  if (config.extendNodePath === false || config.preferSymlinkedExecutables === true) return 'bin settings'
  if (config.nodeExperimentalPackageMap === true) return 'nodeExperimentalPackageMap'
  if (process.platform === 'win32') return 'Windows (its shims are of other kinds)'
  if (config.ignorePnpmfile === true) return '--ignore-pnpmfile'
  if (Object.keys(config.registriesByPrefix ?? {}).length > 0) return 'registries by prefix'
  if (Object.keys(config.patchedDependencies ?? {}).length > 0) return 'patched dependencies'
  if (Object.keys(config.packageExtensions ?? {}).length > 0) return 'package extensions'
  if (config.useGitBranchLockfile === true || config.mergeGitBranchLockfiles === true) return 'git branch lockfiles'
  return undefined
}

type Manifest = Record<string, unknown> & { name?: string, version?: string }

/**
 * Why the lockfile is not one pnpm would install as it is into this project (`undefined`: it
 * is). A frozen install and a plain one that finds the lockfile up to date take the same path
 * in pnpm, after the same checks (the plain one resolves where the frozen one refuses); the
 * plain one also records today's lockfile settings in the current lockfile.
 */
function lockfileUnsupported (lockfile: LockfileFile, manifest: Manifest, config: NativeInstallConfig, rootDir: string): string | undefined {
  if (lockfile.lockfileVersion !== '9.0') return `lockfileVersion ${String(lockfile.lockfileVersion)}`
  const unknown = Object.keys(lockfile).find((f) => !KNOWN_LOCKFILE_FIELDS.has(f))
  if (unknown != null) return `the lockfile has ${unknown}`
  const importers = Object.keys(lockfile.importers)
  if (importers.length !== 1 || importers[0] !== '.') return 'a workspace of several projects'
  // pnpm resolves a lockfile without dependencies, --frozen-lockfile or not.
  if (Object.keys(lockfile.importers['.'].specifiers ?? {}).length === 0 && Object.keys(lockfile.importers['.'].dependencies ?? {}).length === 0) return 'a lockfile without dependencies'
  const mismatch = lockfileConfigMismatch(lockfile, config, rootDir)
  if (mismatch != null) return mismatch
  if (lockfileMode(config, true) === 'if up to date') {
    const rewritten = lockedSettingsRewritten(lockfile.settings, config)
    if (rewritten != null) return rewritten
  }
  // The lockfile must be up to date with package.json, or a frozen install fails (pnpm says why).
  const importer = lockfile.importers['.']
  if (manifest.peerDependencies != null || manifest.pnpm != null || manifest.dependenciesMeta != null || manifest.bundleDependencies != null || manifest.bundledDependencies != null) {
    return 'package.json fields this does not model'
  }
  const outdated = importerOutOfDate(importer, manifest, config.autoInstallPeers !== false, lockfile.catalogs)
  if (outdated != null) return `the lockfile is not up to date with package.json (${outdated})`
  const pruned = workspaceCatalogsPruned(config, [manifest], lockfile.catalogs)
  if (pruned != null) return pruned
  // A dependency in two groups: pnpm links one of them, by rules not modelled here.
  const declared = DEPENDENCY_GROUPS.flatMap((group) => Object.keys((manifest[group] ?? {}) as object))
  if (new Set(declared).size !== declared.length) return 'a dependency in two groups of package.json'
  return undefined
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
async function downloadAll (lockfile: LockfileFile, packages: PlannedPackage[], storeDir: string, config: NativeInstallConfig, limit: number, downloaded: string[]): Promise<string | undefined> {
  return await firstFailure(packages, limit, async (p) => {
    const url = tarballUrl(p.name, p.version, config)
    const result = await downloadToStore({
      url,
      integrity: lockfile.packages![p.depPath].resolution!.integrity as string,
      storeDir,
      filesIndexFile: p.filesIndexFile,
      maxTarballUnpackedSize: typeof config.maxTarballUnpackedSize === 'number' ? config.maxTarballUnpackedSize : undefined,
      network: networkOf(config),
    })
    if (result == null) return url
    downloaded.push(url)
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

function readProjectManifest (rootDir: string): Manifest | undefined {
  for (const file of MANIFEST_FILES) {
    try {
      const text = fs.readFileSync(path.join(rootDir, file), 'utf8')
      return file === 'package.json' ? JSON.parse(text) as Manifest : undefined
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return undefined
    }
  }
  return undefined
}

/** Whether pnpm leaves the build scripts of `pkg` unrun (denied, or scripts off): then its build needs no pnpm. */
function buildIgnored (pkg: PlannedPackage, config: NativeInstallConfig): boolean {
  if (config.ignoreScripts === true) return true
  if (config.dangerouslyAllowAllBuilds === true) return false
  const allow = config.allowBuilds ?? {}
  return allow[pkg.name] === false || allow[`${pkg.name}@${pkg.version}`] === false
}

/** What the layout needs, once the install is known to be one this reproduces. */
interface InstallPlan {
  rootDir: string
  modulesDir: string
  virtualStoreDir: string
  storeDir: string
  lockfile: LockfileFile
  lockfileText: string
  manifest: Manifest
  planned: PlannedPackage[]
  /** The optional packages pnpm skips here. */
  skipped: string[]
  /** Every package pnpm's lockfile check looks at: the planned ones and the skipped ones. */
  checked: Array<{ name: string, version: string }>
  /** What becomes of the project's own lifecycle scripts. */
  scripts: ProjectScripts
  /** The pnpm release whose files are written. */
  release: PnpmRelease
}

/** The plan of the install, or why it is left to pnpm. */
function planInstall (config: NativeInstallConfig, version: string | undefined, phase: (name: string) => void): InstallPlan | string {
  const release = nativeRelease(version)
  if (typeof release === 'string') return release
  const why = configUnsupported(config)
  if (why != null) return why
  const rootDir = path.resolve(config.lockfileDir!)
  const modulesDir = path.join(rootDir, 'node_modules')
  if (!modulesDirIsFresh(modulesDir)) return 'node_modules is not empty'
  const read = readLockfileFile(rootDir)
  if (typeof read === 'string') return read
  const { lockfile, text } = read
  const manifest = readProjectManifest(rootDir)
  if (manifest == null) return 'no package.json'
  const stale = lockfileUnsupported(lockfile, manifest, config, rootDir)
  if (stale != null) return stale
  const scripts = projectScripts(manifest, rootDir, config.ignoreScripts === true)
  if (scripts.leftToPnpm != null) return scripts.leftToPnpm
  const storeDir = configuredStoreDir(config, rootDir)
  if (storeDir == null) return 'the store is not known before pnpm picks it'

  phase('lockfile')
  const virtualStoreDir = path.join(modulesDir, '.pnpm')
  const nodeVersion = enginesNodeVersion(config.nodeVersion)
  const ownEngines = projectEnginesRefused(manifest.engines, release.version, nodeVersion, config.engineStrict === true)
  if (ownEngines != null) return ownEngines
  const { refused, planned, notPlanned, skipped } = planVirtualStore(lockfile, {
    virtualStoreDir,
    virtualStoreDirMaxLength: config.virtualStoreDirMaxLength,
    include: { dependencies: true, devDependencies: true, optionalDependencies: true },
    engineStrict: config.engineStrict,
    installable: (name, snapshot, optional) => installableHere(name, snapshot, config.supportedArchitectures, optional),
    enginesMet: (snapshot) => enginesMet(snapshot, nodeVersion),
  })
  if (refused != null) return refused
  if (notPlanned.length > 0) return `${notPlanned.length} packages need pnpm (${notPlanned[0]}, …)`
  // pnpm checks every package of the lockfile, reached or not, before it installs any.
  if (planned.length + skipped.length !== Object.keys(lockfile.packages ?? {}).length) return 'the lockfile has packages no importer reaches'
  // pnpm checks every package, the skipped ones too (named as pnpm names them).
  const checked = [...planned, ...skipped.map((depPath) => {
    const { name, version } = parseRegistryDepPath(depPath)!
    return { depPath, name, version: lockfile.packages![depPath].version ?? version }
  })]
  const nonSemver = checked.find((p) => !isSemver(p.version))
  if (config.trustLockfile !== true && nonSemver != null) return `${nonSemver.depPath}: a version pnpm's lockfile check refuses`
  return { rootDir, modulesDir, virtualStoreDir, storeDir, lockfile, lockfileText: text, manifest, planned, skipped, checked, scripts, release }
}

/**
 * The virtual store, every package in place (those the store lacks downloaded first, as pnpm
 * would), or why it stopped; each package's result, for the builds it ignored.
 */
async function linkVirtualStore (plan: InstallPlan, config: NativeInstallConfig, importMethod: PackageImportMethod, phase: (name: string) => void, downloaded: string[]): Promise<{ stopped: string } | { results: StoredPackageResult[] }> {
  const { storeDir, lockfile, planned } = plan
  const packages = planned.map((p) => ({ ...p, buildIgnored: buildIgnored(p, config) }))
  const link = async (some: typeof packages): Promise<StoredPackageResult[]> => (await linkStoredPackages({
    storeDir,
    packageImportMethod: importMethod,
    verifyStoreIntegrity: config.verifyStoreIntegrity ?? true,
    strictStorePkgContentCheck: config.strictStorePkgContentCheck ?? true,
    packages: some,
  })).results
  // A store that does not exist yet holds nothing (and linkStoredPackages refuses it).
  const storeExists = fs.existsSync(storeDir)
  const results = storeExists ? await link(packages) : packages.map((): StoredPackageResult => ({ linked: false, leftOut: 'not-in-store' }))
  const cannot = results.findIndex((r) => !r.linked && r.leftOut !== 'not-in-store')
  if (cannot !== -1) return { stopped: `${planned[cannot].depPath}: ${results[cannot].leftOut!}` }
  const missing = results.flatMap((r, i) => r.linked ? [] : [i])
  if (missing.length > 0) {
    // A cold store: the packages it lacks are downloaded as pnpm would, then linked.
    phase('linked from the store')
    const why = fetchUnsupported(config)
    if (why != null) return { stopped: `${missing.length} packages are not in the store, and ${why}` }
    const failed = await downloadAll(lockfile, missing.map((i) => planned[i]), storeDir, config, networkConcurrencyOf(config), downloaded)
    if (failed != null) return { stopped: `${failed} did not download` }
    phase('downloaded')
    const second = await link(missing.map((i) => packages[i]))
    const notLinked = second.findIndex((r) => !r.linked)
    if (notLinked !== -1) return { stopped: `${planned[missing[notLinked]].depPath}: ${second[notLinked].leftOut!}` }
    missing.forEach((at, k) => { results[at] = second[k] })
  }
  return { results }
}

/**
 * Lays out `plan` and records it last (with the time its validation was recorded at, if any),
 * or says why it stopped, with nothing recorded (pnpm installs over what is there).
 * `supplyChainAnswer`: the registry's answer to pnpm's check of the packages' ages, awaited
 * before anything but the virtual store.
 */
async function layOut (plan: InstallPlan, config: NativeInstallConfig, importMethod: PackageImportMethod, supplyChainAnswer: Promise<string | undefined> | undefined, phase: (name: string) => void, downloaded: string[]): Promise<{ stopped: string } | { validatedAtNs: number | undefined } | { pnpmRunsScripts: string[] }> {
  const { rootDir, modulesDir, virtualStoreDir, storeDir, lockfile, manifest, planned } = plan
  const virtualStore = await linkVirtualStore(plan, config, importMethod, phase, downloaded)
  if ('stopped' in virtualStore) return virtualStore
  const { results } = virtualStore
  phase('virtual store')
  // The virtual store is in place but nothing is recorded: pnpm checks again, and installs over it or refuses.
  const unchecked = await supplyChainAnswer
  if (unchecked != null) return { stopped: unchecked }
  if (supplyChainAnswer != null) phase('supply chain')
  // The root's links and hoisting: only once every package is in place.
  const dirByDepPath = new Map(planned.map((p) => [p.depPath, p.targetDir]))
  const direct = rootDependencies(lockfile, (depPath) => dirByDepPath.get(depPath))
  const hoistPattern = config.hoistPattern as string[]
  const publicHoistPattern = config.publicHoistPattern as string[]
  const hoisted = hoist(lockfile, planned, { direct, hoistPattern, publicHoistPattern })
  await symlinkAllModules({
    deps: [
      { name: '', modules: modulesDir, children: { ...direct, ...hoisted.publicLinks } },
      { name: '', modules: path.join(virtualStoreDir, 'node_modules'), children: hoisted.privateLinks },
    ],
  })
  phase('links')
  try {
    linkBins(lockfile, planned, {
      modulesDir,
      virtualStoreDir,
      direct,
      hoisted,
      publicHoistPattern,
      ignoreScripts: config.ignoreScripts === true,
      extendsNodePath: config.extendNodePath !== false && hoistPattern.length > 0,
      autoInstallPeers: config.autoInstallPeers !== false,
      shimQuoting: plan.release.shimQuoting,
      buildStepNodePath: plan.release.buildStepNodePath,
      // With scripts on, pnpm takes each package with a build through its build step, and denies it there.
      throughBuildStep: new Set(config.ignoreScripts === true ? [] : planned.filter((_, i) => results[i].buildIgnored === true).map((p) => p.depPath)),
    })
  } catch (err) {
    // Laid out but not recorded: pnpm installs over it.
    if (err instanceof UnsupportedShim) return { stopped: err.message }
    throw err
  }

  phase('bins')
  const requireBuild = planned.filter((_, i) => results[i].buildIgnored === true).map((p) => p.depPath)
  // pnpm's own install over a complete layout takes no package through its build step, so it
  // would not record the denied builds as stock does (`ignoredBuilds: []`).
  if (plan.scripts.pnpmRuns.length > 0 && requireBuild.length > 0 && config.ignoreScripts !== true) {
    return { stopped: `the project's ${plan.scripts.pnpmRuns.join(', ')} with builds pnpm denies (${requireBuild[0]}, …)` }
  }
  const record: InstallRecord = {
    rootDir,
    modulesDir,
    storeDir,
    pnpmVersion: plan.release.version,
    manifest,
    hoistedDependencies: hoisted.record,
    hoistPattern,
    publicHoistPattern,
    requireBuild,
    projectPendingBuild: plan.scripts.pendingBuild,
    skipped: plan.skipped,
    lockfileText: plan.lockfileText,
  }
  writeLayoutState(record, config)
  // pnpm's own install, finding the project not up to date, runs the scripts and writes the state.
  if (plan.scripts.pnpmRuns.length > 0) {
    phase('state')
    return { pnpmRunsScripts: plan.scripts.pnpmRuns }
  }
  const validatedAtNs = writeWorkspaceState(record, config)
  phase('state')
  return { validatedAtNs }
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
  const done = (packages: number, skipped?: string, more: Pick<NativeInstallSummary, 'validatedAtNs' | 'pnpmRunsScripts'> = {}): NativeInstallSummary =>
    ({ installed: skipped == null, packages, ms: performance.now() - started, phases, downloaded, ...(skipped != null ? { skipped } : {}), ...more })

  // Before anything else, and whether or not it then runs: what a killed one left goes.
  if (config.lockfileDir != null) removeLeftovers(path.join(path.resolve(config.lockfileDir), 'node_modules'))
  const plan = planInstall(config, pnpmVersion, phase)
  if (typeof plan === 'string') return done(0, plan)
  // pnpm's check of the packages' ages asks the registry while the virtual store is linked, as
  // pnpm's own does while it installs.
  const supplyChain = checkSupplyChain(path.join(plan.rootDir, 'pnpm-lock.yaml'), plan.checked, config, Date.now(), plan.release.verdictChecks)
  if (supplyChain.leftToPnpm != null) return done(0, supplyChain.leftToPnpm)
  phase('plan')
  try {
    const laidOut = await layOut(plan, config, importMethod, supplyChain.registry, phase, downloaded)
    if ('stopped' in laidOut) return done(0, laidOut.stopped)
    return done(plan.planned.length, undefined, 'pnpmRunsScripts' in laidOut ? laidOut : { validatedAtNs: laidOut.validatedAtNs })
  } finally {
    supplyChain.cancel()
  }
}
