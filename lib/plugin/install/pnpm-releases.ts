/**
 * The pnpm 11 releases the native install runs under, and what differs between them in what it
 * writes. Each release's published bundle was read module by module (the workspace state, the
 * up-to-date check, `.modules.yaml`, the lockfile, bins, hoisting, lifecycle order), and each
 * release enabled here passes the native-install end-to-end specs (`npm run test:pnpm-versions`
 * runs them against every one; docs/native-install.md, "pnpm releases", says what was compared).
 * A release not in the table (older, newer, or a prerelease) keeps the head start only: its
 * files may differ in ways no one has checked.
 *
 * What differs, and matters to the native install, is the workspace state
 * (`.pnpm-workspace-state-v1.json`), the file pnpm's up-to-date check reads:
 * - the settings it records, which grew in 11.28.7 (`autoDedupe`), 11.28.9 (the store and
 *   virtual store, `trustLockfile`, `dangerouslyAllowAllBuilds`, the registry routes) and 11.28.11
 *   (`extendNodePath`, `runtime`);
 * - its `validation` block (the digests and the filesystem time the check trusts, from 11.28.7),
 *   whose projects' commands (`workspaceBins`) came in 11.28.9 and `localDependencies` in
 *   11.28.10. Without it, every release takes the state as its older form (the check then
 *   compares modification times, as releases before 11.28.7 do).
 * The lockfile verifier's recorded verdicts carry other checks before 11.28.7 (`verdictChecks`),
 * and 11.28.4 keeps its metadata cache in another place and format (not read: the registry is
 * asked instead).
 * And the shims: paths in double quotes before 11.28.11, their helpers called as `command -p`
 * in 11.27.1 to 11.28.2 (`run_helper` from 11.28.3) and with the caller's PATH in 11.27.1 (no
 * PATH guard: `shimWriter`), their target from `$basedir` in 11.27.1 and 11.28.0
 * (`$basedir_abs`, resolved with `cd -P`, from 11.28.1), and before 11.28.10 the frozen install's
 * build step (a package whose build pnpm denies) links the package's own commands without
 * `NODE_PATH`, keeping its dependencies' shims that it reads back (under 4 KiB to 11.28.0:
 * `keptShimBytes`). The rest of the layout (`.modules.yaml`, `.pnpm/lock.yaml`, the virtual store,
 * hoisting) is the same in all of them for the installs the native install takes.
 * 11.22.0 (the release most public monorepos pin) writes more otherwise: `@zkochan/cmd-shim`'s
 * shims, `.package-map.json`, the registries in `.modules.yaml`, and more (`byVersion`): among
 * them the side-effects cache's keys before 11.28.1 (`sideEffectsKeys`), and, before 11.18.0,
 * which optional packages a frozen install skips (`skipRule`). 11.28.3 links each dependency it
 * skips to its working directory (`skippedLinks`). Releases before 11.7.0 record
 * other settings and no lockfile verdicts, and write pnpm's own shims: not checked.
 */

import type { ProjectLinkForm } from './project-registry.js'
import type { ProjectHoisting } from './hoist.js'
import type { ShimQuoting, ShimWriter } from './bin-shim.js'
import type { BuildStepNodePath } from './bin-links.js'
import type { SideEffectsKeyForm } from './side-effects.js'
import type { SkippedLinks, SkipRule } from './virtual-store.js'
import type { PeerEdgeRule } from './peer-edges.js'
import type { ShimBase, ShimHelpers } from './sh-shim-prelude.js'
import { compareVersions, isSemver } from './semver-range.js'
import type { BlobModeRule } from '../../api/import.js'
import type { AddFilesFromDirCompat } from '../../api/dir.js'

/** The settings every pnpm 11 release from 11.15.1 records in the workspace state, in its order. */
const BASE_SETTINGS = [
  'enableGlobalVirtualStore', 'allowBuilds', 'autoInstallPeers', 'catalogs',
  'dedupeDirectDeps', 'dedupeInjectedDeps', 'dedupePeerDependents', 'dedupePeers', 'dev',
  'excludeLinksFromLockfile', 'hoistPattern', 'hoistWorkspacePackages',
  'ignoredOptionalDependencies', 'injectWorkspacePackages', 'linkWorkspacePackages', 'minimumReleaseAge',
  'minimumReleaseAgeStrict', 'minimumReleaseAgeExclude', 'minimumReleaseAgeIgnoreMissingTime', 'nodeLinker',
  'optional', 'overrides', 'packageExtensions', 'patchedDependencies', 'peersSuffixMaxLength',
  'preferWorkspacePackages', 'production', 'publicHoistPattern',
  'supportedArchitectures', 'trustPolicy', 'trustPolicyExclude', 'trustPolicyIgnoreAfter',
  'workspacePackagePatterns',
] as const

/** Before 11.15.1: without `supportedArchitectures`. */
const SETTINGS_11_15_0 = BASE_SETTINGS.filter((setting) => setting !== 'supportedArchitectures')

/** 11.28.9's list: the store location, builds allowed wholesale, `trustLockfile`, the virtual store's. */
const SETTINGS_11_28_9 = [
  'enableGlobalVirtualStore', 'allowBuilds', 'autoInstallPeers', 'catalogs', 'dangerouslyAllowAllBuilds',
  'dedupeDirectDeps', 'dedupeInjectedDeps', 'dedupePeerDependents', 'dedupePeers', 'dev',
  'excludeLinksFromLockfile', 'hoistPattern', 'hoistWorkspacePackages',
  'ignoredOptionalDependencies', 'injectWorkspacePackages', 'linkWorkspacePackages', 'minimumReleaseAge',
  'minimumReleaseAgeStrict', 'minimumReleaseAgeExclude', 'minimumReleaseAgeIgnoreMissingTime', 'nodeLinker',
  'optional', 'overrides', 'packageExtensions', 'patchedDependencies', 'peersSuffixMaxLength',
  'preferWorkspacePackages', 'production', 'publicHoistPattern', 'storeDir',
  'supportedArchitectures', 'trustLockfile', 'trustPolicy', 'trustPolicyExclude', 'trustPolicyIgnoreAfter',
  'virtualStoreDir', 'virtualStoreDirMaxLength', 'workspacePackagePatterns',
] as const

/** 11.28.11's list: 11.28.9's with `extendNodePath` and `runtime`. */
const SETTINGS_11_28_11 = [
  'enableGlobalVirtualStore', 'allowBuilds', 'autoInstallPeers', 'catalogs', 'dangerouslyAllowAllBuilds',
  'dedupeDirectDeps', 'dedupeInjectedDeps', 'dedupePeerDependents', 'dedupePeers', 'dev',
  'excludeLinksFromLockfile', 'extendNodePath', 'hoistPattern', 'hoistWorkspacePackages',
  'ignoredOptionalDependencies', 'injectWorkspacePackages', 'linkWorkspacePackages', 'minimumReleaseAge',
  'minimumReleaseAgeStrict', 'minimumReleaseAgeExclude', 'minimumReleaseAgeIgnoreMissingTime', 'nodeLinker',
  'optional', 'overrides', 'packageExtensions', 'patchedDependencies', 'peersSuffixMaxLength',
  'preferWorkspacePackages', 'production', 'publicHoistPattern', 'runtime', 'storeDir',
  'supportedArchitectures', 'trustLockfile', 'trustPolicy', 'trustPolicyExclude', 'trustPolicyIgnoreAfter',
  'virtualStoreDir', 'virtualStoreDirMaxLength', 'workspacePackagePatterns',
] as const

/** How a release writes the workspace state. */
export interface StateForm {
  /** The settings it records, in its order (each only when set). */
  settings: readonly string[]
  /** The settings it records after them (`autoDedupe` from 11.28.7). */
  more: readonly string[]
  /** Whether it records the registry routes (`registryRoutes`, from 11.28.9). */
  registryRoutes: boolean
  /**
   * Its `validation` block: none (before 11.28.7), without the lockfile's local dependencies
   * (11.28.7 to 11.28.9), or with them (from 11.28.10).
   */
  validation: 'none' | 'files' | 'local-dependencies'
  /** Whether the `validation` block records the projects' commands (`workspaceBins`, from 11.28.9). */
  workspaceBins: boolean
}

export interface PnpmRelease {
  version: string
  /** Whether the native install runs under it (it passed the e2e specs); else why not. */
  native: true | string
  state: StateForm
  /** How its shims quote the target and `NODE_PATH`. */
  shimQuoting: ShimQuoting
  /** How its shims' prelude runs the system helpers. */
  shimHelpers: ShimHelpers
  /** Where its own shims take their target from: `$basedir` before 11.28.1, `$basedir_abs` from it. */
  shimBase: ShimBase
  /** Whose shims it writes: `@zkochan/cmd-shim` 9's (9.0.6 to 11.20.0, 9.0.7 to 11.27.0) or pnpm's own (its first form in 11.27.1). */
  shimWriter: ShimWriter
  /** Whether it writes `node_modules/.package-map.json` (11.8 to 11.26). */
  packageMap: boolean
  /** Whether `.modules.yaml` records the registries (to 11.22.0). */
  modulesRegistries: boolean
  /** Whether a project's `.bin` has the commands of its dependencies' auto-installed peers (from 11.28.1). */
  peerBins: boolean
  /** Which shims its frozen install's build step gives a `NODE_PATH` (`BuildStepNodePath`: all from 11.28.10). */
  buildStepNodePath: BuildStepNodePath
  /**
   * The size from which its bin linker writes a shim again rather than read it back to keep it
   * (`CMD_SHIM_MAX_SIZE`): 4 KiB to 11.28.0, 64 KiB from 11.28.1. 11.28.0's shims with a
   * `NODE_PATH` are about that size: its build step keeps some and writes others again without.
   */
  keptShimBytes: number
  /**
   * The checks a verdict in `lockfile-verified.jsonl` must say it made for this release to skip
   * its check of the lockfile (`canTrustPastCheck` of its verifiers).
   */
  verdictChecks: readonly string[]
  /** How it keys its side-effects cache (`format=2` from 11.28.1, `recursive` before). */
  sideEffectsKeys: SideEffectsKeyForm
  /** How its lockfile filter decides what is skipped (`edges` from 11.18.0, `first-reach` before). */
  skipRule: SkipRule
  /**
   * Which optional peers its lockfile filter does not follow when a dependency group is left
   * out (`--prod`): none before 11.28.0, any from it, those the package's peer suffix names
   * from 11.28.7 (`peer-edges.ts`).
   */
  peerEdgeRule: PeerEdgeRule
  /**
   * Whether its install logs the import method in pnpm's own thread (`reportPackageImported`,
   * from 11.18.0): before, only the importer in its workers does, so its reporter never has one,
   * and never prints where the packages were linked from (the store and virtual store lines).
   */
  importMethodLogged: boolean
  /**
   * How its default reporter goes back over the frame it redraws: by the rows the terminal shows
   * (`ansi-diff`, told the terminal's width), or by the newlines it wrote (11.8.0 and 11.9.0),
   * which falls a row short for each line the terminal wrapped, so that every redraw after a
   * line wider than the terminal leaves a copy of the frame's top lines above it.
   */
  reporterRedraw: ReporterRedraw
  /** Where it links a package's dependency that it skips: nowhere, or its working directory (11.28.3). */
  skippedLinks: SkippedLinks
  /** Whether its verdicts' policy records `minimumReleaseAgeIgnoreMissingTime` (from 11.23.0). */
  verdictMissingTime: boolean
  /**
   * What its lockfile check lets through, with a warning, under `minimumReleaseAgeIgnoreMissingTime`:
   * any version it finds no publish time for (to 11.22.0: `runAgeCheck`), or only a package whose
   * full metadata has no `time` at all (from 11.23.0).
   */
  missingTimePassed: 'version' | 'metadata'
  /** Whether its frozen check finds an importer out of date whose catalog dependency is locked at another version than the lockfile's catalog entry (from 11.22.0). */
  catalogResolutions: boolean
  /** Whether its frozen check compares whether a project's publish directory is linked (`linkDirectory`, from 11.26.0). */
  publishLinks: boolean
  /** Whether its current lockfile keeps the importers' publish directory fields (from 11.28.0: `currentLockfileText`). */
  currentLockfilePublish: boolean
  /** How it hoists a workspace's projects: linked only (to 11.27.1), or their names reserved and recorded. */
  projectHoisting: ProjectHoisting
  /** Whether its verdicts' policy records the named registries' digest (`namedRegistriesRouting`, from 11.20.0). */
  verdictRouting: boolean
  /**
   * How its install lists the project in the store (`project-registry.ts`): a relative link made
   * with `symlink-dir` (to 11.28.8), or an absolute one (from 11.28.9).
   */
  projectLink: ProjectLinkForm
  /**
   * Whose `addFilesFromDir` its build step's side-effects upload is (the walk and the diff):
   * `@pnpm/worker@1100`'s to 11.28.0 (symlinks followed), 11.28.10's from 11.28.1 (symlinks
   * recorded, the older diff), pnpm 11.28's from 11.28.11 (symlinks recorded, base files under
   * `node_modules/` not deleted, `added` in walk order); `undefined`: one not written here.
   */
  buildUpload: AddFilesFromDirCompat | undefined
  /**
   * Whether the native install runs the builds the side-effects cache lacks under it, its build
   * step reproduced (from 11.28.1, whose build step differs from 11.28.11's only in its
   * upload's diff, `buildUpload`, its links after a build, `relinksBuilt`, the links it leaves
   * to an optional package whose build failed, `unlinksFailedOptional` (such a build left to
   * pnpm), the name a project's script errors give it, `ownScriptId`, and, to 11.28.6, the
   * ignored builds it keeps from an earlier `.modules.yaml`, which a fresh layout has none of;
   * docs/build-step-by-release.md); else it leaves them to pnpm.
   */
  runsBuilds: boolean
  /**
   * Whether its build step removes the links in the projects' and the private hoisting's
   * `node_modules` to an optional package whose build failed, with its directory (from
   * 11.28.4); before, the links stay, leading nowhere, and its next install (after a native
   * layout, its own in the same run) builds the package again: the native install leaves an
   * optional package's build to pnpm under it (`failsWithLinksLeft`).
   */
  unlinksFailedOptional: boolean
  /**
   * Whether the error of a failed script names the package by the `_id` its manifest gives
   * (to 11.28.3: `{ _id, ...manifest }`), else by its name and version. Only a project's
   * manifest can have one: pnpm's reader of a dependency's sets it to its name and version.
   */
  ownScriptId: boolean
  /**
   * Whether its build step links the commands again after a build that can change them (a patch,
   * or scripts run in a package with commands: the package's own `.bin` and its dependents', the
   * private hoisting's), forced (from 11.28.10); before, the shims of the first link stay.
   */
  relinksBuilt: boolean
  /**
   * Whether its build step records a patched package whose build it denies (its row requires
   * one) under the patch's key (before 11.27.0); from 11.27.0 it records nothing for it.
   */
  uploadsDeniedPatched: boolean
}

/** How a release's default reporter moves back to the top of its frame (`reporterRedraw`). */
export type ReporterRedraw = 'rows' | 'newlines'

/** What a release's lockfile verifier requires of a recorded verdict: 11.28.4's. */
const VERDICT_CHECKS_11_28_4 = ['tarballUrlBinding', 'revisionHistoryBinding', 'integrityRequired', 'resolutionShapeCheck', 'dependencyAliasCheck']
/** 11.28.5 and 11.28.6: with the `variations` resolutions'. */
const VERDICT_CHECKS_11_28_5 = [...VERDICT_CHECKS_11_28_4, 'variationResolutionsVerified', 'variationResolutionCheck']
/** From 11.28.7: no revision history check. */
const VERDICT_CHECKS_11_28_7 = VERDICT_CHECKS_11_28_5.filter((check) => check !== 'revisionHistoryBinding')
/** Before 11.25.0: 11.28.4's without the revision history check. */
const VERDICT_CHECKS_11_24 = VERDICT_CHECKS_11_28_4.filter((check) => check !== 'revisionHistoryBinding')
/** Before 11.9.0: without the required integrity either. */
const VERDICT_CHECKS_11_8 = VERDICT_CHECKS_11_24.filter((check) => check !== 'integrityRequired')
function verdictChecksOf (version: string): readonly string[] {
  if (compareVersions(version, '11.9.0') < 0) return VERDICT_CHECKS_11_8
  if (compareVersions(version, '11.25.0') < 0) return VERDICT_CHECKS_11_24
  if (compareVersions(version, '11.28.4') <= 0) return VERDICT_CHECKS_11_28_4
  return ['11.28.5', '11.28.6'].includes(version) ? VERDICT_CHECKS_11_28_5 : VERDICT_CHECKS_11_28_7
}

const BEFORE_VALIDATION: StateForm = { settings: BASE_SETTINGS, more: [], registryRoutes: false, validation: 'none', workspaceBins: false }
const WITHOUT_ARCHITECTURES: StateForm = { ...BEFORE_VALIDATION, settings: SETTINGS_11_15_0 }
const FIRST_VALIDATION: StateForm = { settings: BASE_SETTINGS, more: ['autoDedupe'], registryRoutes: false, validation: 'files', workspaceBins: false }
const STORE_IN_STATE: StateForm = { settings: SETTINGS_11_28_9, more: ['autoDedupe'], registryRoutes: true, validation: 'files', workspaceBins: true }
const LOCAL_DEPENDENCIES: StateForm = { ...STORE_IN_STATE, validation: 'local-dependencies' }
const NODE_PATH_IN_STATE: StateForm = { ...LOCAL_DEPENDENCIES, settings: SETTINGS_11_28_11 }

/** The releases whose own shims run their helpers as `command -p <helper>` (no `run_helper`), 11.27.1's with no PATH guard. */
const COMMAND_P_HELPERS = new Set(['11.27.1', '11.28.0', '11.28.1', '11.28.2'])

/**
 * What differs by version alone: the shims' writer (pnpm's own from 11.27.1, its first form in
 * 11.27.1 alone), `.package-map.json`
 * (to 11.26), the registries in `.modules.yaml` (to 11.22.0), the auto-installed peers' commands
 * in a project's `.bin` (from 11.28.1), the build step's shims with a `NODE_PATH` (from
 * 11.28.10), the store's list of projects by relative links (to 11.28.8), the checks of a
 * recorded verdict and its policy's fields, the versions its check passes without a publish
 * time (any, to 11.22.0), how a workspace's projects are hoisted (to 11.27.1),
 * the frozen check of catalog resolutions (from 11.22.0) and of linked publish directories (from
 * 11.26.0), the build step's side-effects upload (its walk and diff; what it records of a denied
 * patched package, to 11.26.0), the build step reproduced (from 11.28.1), its commands linked
 * again after a build (from 11.28.10), a failed optional package's links removed (from 11.28.4)
 * and a script's error naming a project by its own `_id` (to 11.28.3), the optional peers
 * its lockfile filter skips when a group is left out (from 11.28.0), the import method logged
 * where its reporter sees it (from 11.18.0), its default reporter's redraw by newlines (11.8
 * and 11.9), the links 11.28.3 makes to its working directory for the dependencies it skips.
 */
const byVersion = (version: string): Pick<PnpmRelease, 'buildUpload' | 'runsBuilds' | 'relinksBuilt' | 'unlinksFailedOptional' | 'ownScriptId' | 'uploadsDeniedPatched' | 'shimWriter' | 'packageMap' | 'modulesRegistries' | 'peerBins' | 'buildStepNodePath' | 'keptShimBytes' | 'projectLink' | 'sideEffectsKeys' | 'verdictChecks' | 'verdictMissingTime' | 'missingTimePassed' | 'verdictRouting' | 'projectHoisting' | 'catalogResolutions' | 'publishLinks' | 'currentLockfilePublish' | 'shimBase' | 'skipRule' | 'peerEdgeRule' | 'importMethodLogged' | 'reporterRedraw' | 'skippedLinks'> => ({
  shimWriter: compareVersions(version, '11.21.0') < 0 ? 'cmd-shim 9.0.6' : compareVersions(version, '11.27.0') <= 0 ? 'cmd-shim 9.0.7' : version === '11.27.1' ? 'pnpm 11.27.1' : 'pnpm',
  packageMap: compareVersions(version, '11.8.0') >= 0 && compareVersions(version, '11.27.0') < 0,
  modulesRegistries: compareVersions(version, '11.22.0') <= 0,
  peerBins: compareVersions(version, '11.28.1') >= 0,
  buildStepNodePath: compareVersions(version, '11.28.10') >= 0 ? 'all' : 'dependencies',
  keptShimBytes: (compareVersions(version, '11.28.1') >= 0 ? 64 : 4) * 1024,
  projectLink: compareVersions(version, '11.28.9') < 0 ? 'relative' : 'absolute',
  sideEffectsKeys: compareVersions(version, '11.28.1') >= 0 ? 'format=2' : 'recursive',
  skipRule: compareVersions(version, '11.18.0') >= 0 ? 'edges' : 'first-reach',
  importMethodLogged: compareVersions(version, '11.18.0') >= 0,
  reporterRedraw: compareVersions(version, '11.8.0') >= 0 && compareVersions(version, '11.10.0') < 0 ? 'newlines' : 'rows',
  peerEdgeRule: compareVersions(version, '11.28.0') < 0 ? 'none' : compareVersions(version, '11.28.7') < 0 ? 'optional-peers' : 'bound-peers',
  skippedLinks: version === '11.28.3' ? 'working directory' : 'none',
  verdictChecks: verdictChecksOf(version),
  verdictMissingTime: compareVersions(version, '11.23.0') >= 0,
  missingTimePassed: compareVersions(version, '11.23.0') >= 0 ? 'metadata' : 'version',
  verdictRouting: compareVersions(version, '11.20.0') >= 0,
  projectHoisting: compareVersions(version, '11.28.0') < 0 ? 'linked' : 'reserved',
  catalogResolutions: compareVersions(version, '11.22.0') >= 0,
  publishLinks: compareVersions(version, '11.26.0') >= 0,
  currentLockfilePublish: compareVersions(version, '11.28.0') >= 0,
  shimBase: compareVersions(version, '11.28.1') >= 0 ? 'basedir_abs' : 'basedir',
  buildUpload: compareVersions(version, '11.28.0') <= 0 ? '@pnpm/worker@1100' : compareVersions(version, '11.28.11') >= 0 ? 'pnpm@11.28' : 'pnpm@11.28.10',
  uploadsDeniedPatched: compareVersions(version, '11.27.0') < 0,
  runsBuilds: compareVersions(version, '11.28.1') >= 0,
  relinksBuilt: compareVersions(version, '11.28.10') >= 0,
  unlinksFailedOptional: compareVersions(version, '11.28.4') >= 0,
  ownScriptId: compareVersions(version, '11.28.3') <= 0,
})

const release = (version: string, state: StateForm, shimQuoting: ShimQuoting = 'double'): PnpmRelease =>
  ({ version, native: true, state, shimQuoting, shimHelpers: COMMAND_P_HELPERS.has(version) ? 'command -p' : 'run_helper', ...byVersion(version) })

/** Every release checked, oldest first. */
export const PNPM_RELEASES: readonly PnpmRelease[] = [
  // `@zkochan/cmd-shim`'s shims, `.package-map.json` (from 11.8.0), and more (`byVersion`).
  // Before 11.15.1 no `supportedArchitectures` in the state; before 11.18.0 the lockfile filter
  // skips by the first path to a package (`skipRule`).
  ...['11.7.0', '11.8.0', '11.9.0', '11.10.0', '11.11.0', '11.12.0', '11.13.0', '11.13.1', '11.14.0', '11.15.0'].map((v) => release(v, WITHOUT_ARCHITECTURES)),
  ...['11.15.1', '11.16.0', '11.17.0', '11.18.0', '11.19.0', '11.20.0', '11.21.0', '11.22.0', '11.23.0', '11.24.0', '11.25.0', '11.26.0', '11.27.0'].map((v) => release(v, BEFORE_VALIDATION)),
  // pnpm's own cmd-shim, before its shims had a PATH guard (`shimWriter`), helpers through
  // `command -p`, targets from `$basedir` (`shimBase`).
  release('11.27.1', BEFORE_VALIDATION),
  // Helpers through `command -p` (`run_helper` from 11.28.3), 11.28.0's shims without `cd -P`
  // (`shimBase`), read back under 4 KiB only (`keptShimBytes`).
  release('11.28.0', BEFORE_VALIDATION),
  ...['11.28.1', '11.28.2'].map((v) => release(v, BEFORE_VALIDATION)),
  // It links the optional packages it skips (other platforms' builds) to its working directory
  // (`skippedLinks`); where that links commands, the install is left to it.
  release('11.28.3', BEFORE_VALIDATION),
  ...['11.28.4', '11.28.5', '11.28.6'].map((v) => release(v, BEFORE_VALIDATION)),
  release('11.28.7', FIRST_VALIDATION),
  release('11.28.8', FIRST_VALIDATION),
  release('11.28.9', STORE_IN_STATE),
  release('11.28.10', LOCAL_DEPENDENCIES),
  release('11.28.11', NODE_PATH_IN_STATE, 'single'),
]

/** The release `version` names, when the native install runs under it; else why it does not. */
export function nativeRelease (version: string | undefined): PnpmRelease | string {
  const found = PNPM_RELEASES.find((r) => r.version === version)
  if (found == null) {
    const range = `${PNPM_RELEASES[0].version} to ${PNPM_RELEASES.at(-1)!.version}`
    return `pnpm ${version ?? '(unknown version)'} is not one of the releases checked (${range})`
  }
  return found.native === true ? found : `pnpm ${found.version}: ${found.native}`
}

/** `version`, or the newest release's for a version not said or not a release's (the rules below by version take it for the newest). */
const orNewest = (version: string | undefined): string => version != null && isSemver(version) ? version : PNPM_RELEASES.at(-1)!.version

/**
 * The rule pnpm `version` applies to a store blob's bits before it links the blob (the
 * linker's `blobModeRule`): none before 11.28.1 (linked as it is), exactly its name's bits to
 * 11.28.5, `isLinkableStoreMode` from 11.28.6 (a drifted group write linked too). A version
 * not said, or not a release's, is taken for the newest.
 */
export function blobModeRule (version: string | undefined): BlobModeRule {
  const known = orNewest(version)
  if (compareVersions(known, '11.28.6') >= 0) return 'linkable'
  return compareVersions(known, '11.28.1') < 0 ? 'none' : 'exact'
}

/**
 * Whether pnpm `version` keeps a built package's bundled dependencies (its files under
 * `node_modules/`) that the side-effects diff it restores lists as deleted (the linker's
 * `keepBundled`): from 11.28.11, whose upload no longer lists them; the releases before it
 * leave them out, as their uploads list them. A version not said, or not a release's, is taken
 * for the newest.
 */
export function keepsBundled (version: string | undefined): boolean {
  return compareVersions(orNewest(version), '11.28.11') >= 0
}

/** What a release's frozen check compares besides the specifiers (`catalogResolutions`, `publishLinks`). */
export type FrozenCheckRules = Pick<PnpmRelease, 'catalogResolutions' | 'publishLinks'>

/**
 * The frozen check of pnpm `version`, in the table or not (the head start runs under any
 * release): by its version, the newest's for a version not said.
 */
export function frozenCheckRules (version: string | undefined): FrozenCheckRules {
  const { catalogResolutions, publishLinks } = byVersion(orNewest(version))
  return { catalogResolutions, publishLinks }
}

/**
 * Which optional peers pnpm `version`'s lockfile filter does not follow when a group is left out
 * (the head start runs under any release): by its version, the newest's for a version not said.
 */
export function peerEdgeRuleOf (version: string | undefined): PeerEdgeRule {
  return byVersion(orNewest(version)).peerEdgeRule
}

/**
 * How pnpm `version`'s default reporter redraws (the plugin's lines go through it under any
 * release): by its version, the newest's for a version not said.
 */
export function reporterRedrawOf (version: string | undefined): ReporterRedraw {
  return byVersion(orNewest(version)).reporterRedraw
}

/**
 * Whether pnpm `version` takes a custom fetcher's `{ delegate }` answer (from 11.12.0): before,
 * it takes any answer for the fetched package, and its built-in fetchers, passed as the fetch's
 * fourth argument, are called by the fetcher itself. A version not said is taken for the newest.
 */
export function takesFetcherDelegation (version: string | undefined): boolean {
  return compareVersions(orNewest(version), '11.12.0') >= 0
}

/**
 * Whose store-index rows pnpm `version` writes for the tarballs it downloads (its worker's
 * `normalizeBundledManifest` and `pkgRequiresBuild`): from 11.28.0 the manifest's `gypfile` is
 * kept and `gypfile: false` leaves a root `binding.gyp` out of `requiresBuild` (`'pnpm@11.28'`);
 * before, neither (`'@pnpm/worker@1100'`'s rows). A version not said, or not a release's, is
 * taken for the newest.
 */
export function tarballRowsOf (version: string | undefined): '@pnpm/worker@1100' | 'pnpm@11.28' {
  return compareVersions(orNewest(version), '11.28.0') >= 0 ? 'pnpm@11.28' : '@pnpm/worker@1100'
}

/** How `version` writes the workspace state (the newest release's form for one not in the table, which never installs natively). */
export function stateFormOf (version: string): StateForm {
  return (PNPM_RELEASES.find((r) => r.version === version) ?? PNPM_RELEASES.at(-1)!).state
}
