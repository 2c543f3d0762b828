/**
 * The pnpm plugin's head start on a warm install: before pnpm looks at a single package, the
 * lockfile's virtual store is linked natively in one batch, and every package linked is added
 * to pnpm's *current* lockfile (the record of what `node_modules` already holds). pnpm then
 * finds those packages in place: it neither reads them from the store nor imports them, and
 * does everything else for them as for any package (dependency links, bins, hoisting). It
 * installs the rest (anything the store lacks, builds, platform-specific and optional packages,
 * patches) its own way. pnpm's `preResolution` hook is documented as the place to modify the
 * lockfile objects.
 *
 * It only runs where that holds and for the layout it knows, decided from the settings pnpm
 * passes to `hooks.updateConfig`: a `--frozen-lockfile` install (or one in CI, frozen by
 * default), pnpm putting found
 * packages back into its graph (see `pnpmRelinksCurrentPackages`), `nodeLinker: isolated`, a
 * per-project virtual store, the whole workspace installed, no pacquet. Nothing it does is
 * needed: if it is off or fails, pnpm simply installs everything itself.
 *
 * Not on a plain `pnpm install`, though pnpm takes the same frozen path there when the lockfile
 * is up to date: pnpm decides that after this hook, from more than the hook is shown (whether
 * it mended merge conflicts in the lockfile it passes, its checks of local tarballs and of
 * linked workspace packages), and where it then resolves, packages recorded as already in
 * place change what it links. The native install, which runs before pnpm reads anything,
 * takes the plain installs whose lockfile it can prove up to date.
 */
import fs from 'node:fs'
import path from 'node:path'
import { linkStoredPackages, type LeftOutReason, type PackageImportMethod } from '../api/import.js'
import { layoutUnsupported, lockfileMode, type PnpmConfig } from './pnpm-config.js'
import { planVirtualStore, type DependencyGroup, type LockfileObject } from './install/virtual-store.js'
import { extendedProject, hookedManifest, importerOutOfDateUnder, lockfileConfigMismatch, parseOverrides, type FrozenCheckConfig, type LockedImporter } from './install/frozen-check.js'
import { blobModeRule, frozenCheckRules, keepsBundled, peerEdgeRuleOf } from './install/pnpm-releases.js'
import { peerSatisfactionEdges, type PeerEdges } from './install/peer-edges.js'
import { userAgentPnpmVersion } from './config-dependency.js'

/** What pnpm passes to `hooks.preResolution` (pnpm 11). */
export interface PreResolutionContext {
  wantedLockfile: LockfileObject
  currentLockfile: LockfileObject
  existsNonEmptyWantedLockfile: boolean
  lockfileDir: string
  /** The versioned store directory (`…/v11`). */
  storeDir: string
}

export interface PrelinkSummary {
  /** Target directories linked (or found in place), in lockfile order. */
  linked: string[]
  /**
   * Packages left for pnpm to install: those the store could not serve as they are, then those
   * only pnpm installs (`pnpm-only`: platform-specific or optional ones, with optional
   * dependencies, patched or not from a registry).
   */
  leftOut: Array<{ depPath: string, reason: LeftOutReason | 'pnpm-only' }>
  /** Why nothing was attempted, when nothing was. */
  skipped?: string
  ms: number
}

/** `.modules.yaml` (pnpm writes it as JSON): the hoist patterns of the last install. */
interface ModulesState { hoistPattern?: string[] | string, publicHoistPattern?: string[] | string }

/** The root `node_modules` (a configured `modulesDir` may be absolute). */
const modulesDirOf = (config: PnpmConfig, lockfileDir: string): string =>
  path.resolve(lockfileDir, config.modulesDir ?? 'node_modules')

/** `undefined`: no earlier install; `null`: a state this cannot read. */
function readModulesState (config: PnpmConfig, lockfileDir: string): ModulesState | undefined | null {
  let text: string
  try {
    text = fs.readFileSync(path.join(modulesDirOf(config, lockfileDir), '.modules.yaml'), 'utf8')
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null
  }
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** pnpm's comparison of patterns (deep equality, a missing one as `[]`); a pattern may be a string. */
const samePatterns = (a: unknown, b: unknown): boolean =>
  JSON.stringify(a ?? []) === JSON.stringify(b ?? [])

/**
 * Whether pnpm will put the packages its current lockfile lists back into its dependency graph
 * (pnpm's `includeUnchangedDeps`): then it links their dependencies, bins and self-references
 * and hoists them as for any other package, and only their store read and import are skipped.
 * Otherwise it would leave them out of all of that, and the tree would not be what a plain
 * install makes. pnpm includes them when the hoist patterns differ from the last install's
 * (on a first install: whenever there is one) or the lockfile drops packages.
 */
function pnpmRelinksCurrentPackages (config: PnpmConfig, ctx: PreResolutionContext): boolean {
  // The patterns as pnpm derives them from the settings (its `applyDerivedConfig`).
  const hoistPattern = config.hoist === false || config.symlink === false ? undefined : config.hoistPattern
  let publicHoistPattern = config.publicHoistPattern
  if (config.shamefullyHoist === true) publicHoistPattern = ['*']
  if (config.shamefullyHoist === false || config.symlink === false || publicHoistPattern === '' ||
    (Array.isArray(publicHoistPattern) && publicHoistPattern.length === 1 && publicHoistPattern[0] === '')) {
    publicHoistPattern = undefined
  }
  const last = readModulesState(config, ctx.lockfileDir)
  if (last === null) return false
  const wanted = ctx.wantedLockfile.packages ?? {}
  return !samePatterns(last?.hoistPattern, hoistPattern) ||
    !samePatterns(last?.publicHoistPattern, publicHoistPattern) ||
    Object.keys(ctx.currentLockfile.packages ?? {}).some((depPath) => wanted[depPath] == null)
}

/** Why this install is not one the head start knows how to lay out (`undefined`: it is). */
function unsupported (config: PnpmConfig | undefined, ctx: PreResolutionContext): string | undefined {
  if (config == null) return 'pnpm did not call hooks.updateConfig'
  if (lockfileMode(config, ctx.existsNonEmptyWantedLockfile) !== 'frozen') return 'not a --frozen-lockfile install'
  const layout = layoutUnsupported(config)
  if (layout != null) return layout
  // Installing only the current project of a workspace: the other projects' packages are not wanted.
  if (config.recursiveInstall === false && Object.keys(ctx.wantedLockfile.importers ?? {}).length > 1) return 'recursiveInstall false'
  if (config.lockfileDir != null && path.resolve(config.lockfileDir) !== path.resolve(ctx.lockfileDir)) return 'another lockfile dir'
  if (!ctx.existsNonEmptyWantedLockfile) return 'no lockfile'
  if (!pnpmRelinksCurrentPackages(config, ctx)) return 'pnpm would not relink packages found in place (same hoist patterns as the last install)'
  return undefined
}

/**
 * Why pnpm may refuse this frozen install after the hook (`undefined`: it will not, as far as
 * the lockfile and the manifests tell): then nothing is linked, so that `node_modules` stays as
 * stock leaves it.
 */
function frozenRefusal (config: PnpmConfig & FrozenCheckConfig, ctx: PreResolutionContext): string | undefined {
  const lockfile = ctx.wantedLockfile as LockfileObject & Parameters<typeof lockfileConfigMismatch>[0]
  const mismatch = lockfileConfigMismatch(lockfile, config, ctx.lockfileDir)
  if (mismatch != null) return mismatch
  const overrides = parseOverrides(config.overrides, config.catalogs)
  if (typeof overrides === 'string') return overrides
  // The running release's check: the head start runs under any.
  const rules = frozenCheckRules(userAgentPnpmVersion(config.userAgent))
  for (const [id, importer] of Object.entries(lockfile.importers ?? {})) {
    let read: Record<string, unknown>
    try {
      read = JSON.parse(fs.readFileSync(path.join(ctx.lockfileDir, id, 'package.json'), 'utf8'))
    } catch {
      return `the manifest of ${id} is not a package.json this reads`
    }
    const extended = extendedProject(config.packageExtensions, [read])
    if (extended != null) return `packageExtensions extend the workspace project ${extended}`
    // pnpm checks each project's manifest through its read-package hooks.
    const manifest = hookedManifest(read, overrides, config.ignoredOptionalDependencies, ctx.lockfileDir, path.join(ctx.lockfileDir, id))
    if (typeof manifest === 'string') return `${id}'s package.json: ${manifest}`
    const outdated = importerOutOfDateUnder(rules, importer as LockedImporter, manifest, config.autoInstallPeers !== false, lockfile.catalogs)
    if (outdated != null) return `the lockfile is not up to date with ${id}'s package.json (${outdated}): pnpm refuses a frozen install`
  }
  return undefined
}

/**
 * The optional peers pnpm's filter does not follow in this install: only when it leaves a
 * dependency group out (`--prod`, `--dev`, `--no-optional`), by the running release's rule.
 * Without this, a peer only a devDependency provided would be laid out and then removed by pnpm.
 */
function skippedPeerEdges (config: PnpmConfig, include: Record<DependencyGroup, boolean>, lockfile: LockfileObject): PeerEdges | undefined {
  if (Object.values(include).every(Boolean)) return undefined
  return peerSatisfactionEdges(lockfile, peerEdgeRuleOf(userAgentPnpmVersion(config.userAgent)), config.resolvePeersFromWorkspaceRoot !== false)
}

/**
 * Links what it can of `ctx.wantedLockfile`'s virtual store and records it in
 * `ctx.currentLockfile`. `config` is what `hooks.updateConfig` received.
 */
export async function prelinkVirtualStore (ctx: PreResolutionContext, config: PnpmConfig | undefined, packageImportMethod: PackageImportMethod): Promise<PrelinkSummary> {
  const started = performance.now()
  const done = (summary: Omit<PrelinkSummary, 'ms'>): PrelinkSummary => ({ ...summary, ms: performance.now() - started })
  const skipped = unsupported(config, ctx)
  if (skipped != null) return done({ linked: [], leftOut: [], skipped })
  const cfg = config!
  const include: Record<DependencyGroup, boolean> = {
    dependencies: cfg.production !== false,
    devDependencies: cfg.dev !== false,
    optionalDependencies: cfg.optional !== false,
  }
  const current = ctx.currentLockfile.packages ?? {}
  const plan = planVirtualStore(ctx.wantedLockfile, {
    virtualStoreDir: cfg.virtualStoreDir != null
      ? path.resolve(ctx.lockfileDir, cfg.virtualStoreDir)
      : path.join(modulesDirOf(cfg, ctx.lockfileDir), '.pnpm'),
    virtualStoreDirMaxLength: cfg.virtualStoreDirMaxLength,
    include,
    engineStrict: cfg.engineStrict,
    skippedPeerEdges: skippedPeerEdges(cfg, include, ctx.wantedLockfile),
  })
  // What pnpm refuses, in the order it finds it: the lockfile's names, then the manifests.
  const refused = plan.refused ?? frozenRefusal(cfg as PnpmConfig & FrozenCheckConfig, ctx)
  if (refused != null) return done({ linked: [], leftOut: [], skipped: refused })
  const planned = plan.planned.filter((p) => current[p.depPath] == null)
  const pnpmOnly = plan.notPlanned
    .filter((depPath) => current[depPath] == null && ctx.wantedLockfile.packages?.[depPath] != null)
    .map((depPath) => ({ depPath, reason: 'pnpm-only' as const }))
  if (planned.length === 0) return done({ linked: [], leftOut: pnpmOnly })
  // A store that does not exist yet holds nothing (and linkStoredPackages refuses it).
  if (!fs.existsSync(ctx.storeDir)) return done({ linked: [], leftOut: [...planned.map((p) => ({ depPath: p.depPath, reason: 'not-in-store' as const })), ...pnpmOnly] })
  const pnpmVersion = userAgentPnpmVersion(cfg.userAgent)
  const { results } = await linkStoredPackages({
    storeDir: ctx.storeDir,
    packageImportMethod,
    verifyStoreIntegrity: cfg.verifyStoreIntegrity ?? true,
    strictStorePkgContentCheck: cfg.strictStorePkgContentCheck ?? true,
    blobModeRule: blobModeRule(pnpmVersion),
    keepBundled: keepsBundled(pnpmVersion),
    packages: planned,
  })
  const linked: string[] = []
  const leftOut: PrelinkSummary['leftOut'] = []
  ctx.currentLockfile.packages = current
  results.forEach((r, i) => {
    const { depPath, targetDir, filteredSnapshot } = planned[i]
    if (r.linked) {
      // As pnpm's filtered lockfile has it, which pnpm compares it with to find it in place.
      current[depPath] = filteredSnapshot ?? ctx.wantedLockfile.packages![depPath]
      linked.push(targetDir)
    } else {
      leftOut.push({ depPath, reason: r.leftOut! })
    }
  })
  return done({ linked, leftOut: [...leftOut, ...pnpmOnly] })
}
