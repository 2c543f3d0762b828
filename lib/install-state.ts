/**
 * The files pnpm 11.28 leaves in `node_modules` after an install, written as pnpm writes them,
 * so that pnpm's next `pnpm install` (its optimistic repeat-install check, which runs right
 * after `hooks.updateConfig`) finds the project up to date, and a later real install reads
 * them as its own (docs/native-install.md says which pnpm source each rule comes from):
 *
 * - `.modules.yaml`: the layout of the last install (JSON, despite the name);
 * - `.pnpm/lock.yaml`: the current lockfile, the main document of `pnpm-lock.yaml` for a full
 *   install;
 * - `.pnpm-workspace-state-v1.json`: what the up-to-date check compares, written last (so that
 *   an install cut short is never taken for up to date), in pnpm's older form without the
 *   `validation` block: pnpm accepts it when no input changed after `lastValidatedTimestamp`,
 *   and adds the block itself on that first check.
 */
import fs from 'node:fs'
import path from 'node:path'
import { writeAtomically } from './atomic-write.js'
import type { PnpmConfig } from './prelink.js'

/** The settings pnpm records in the workspace state, in its order. */
const STATE_SETTINGS = [
  'enableGlobalVirtualStore', 'allowBuilds', 'autoInstallPeers', 'catalogs', 'dangerouslyAllowAllBuilds',
  'dedupeDirectDeps', 'dedupeInjectedDeps', 'dedupePeerDependents', 'dedupePeers', 'dev',
  'excludeLinksFromLockfile', 'extendNodePath', 'hoistPattern', 'hoistWorkspacePackages',
  'ignoredOptionalDependencies', 'injectWorkspacePackages', 'linkWorkspacePackages', 'minimumReleaseAge',
  'minimumReleaseAgeStrict', 'minimumReleaseAgeExclude', 'minimumReleaseAgeIgnoreMissingTime', 'nodeLinker',
  'optional', 'overrides', 'packageExtensions', 'patchedDependencies', 'peersSuffixMaxLength',
  'preferWorkspacePackages', 'production', 'publicHoistPattern', 'runtime', 'storeDir',
  'supportedArchitectures', 'trustLockfile', 'trustPolicy', 'trustPolicyExclude', 'trustPolicyIgnoreAfter',
  'virtualStoreDir', 'virtualStoreDirMaxLength', 'workspacePackagePatterns', 'autoDedupe',
] as const

/** What the state files say about one native install. */
export interface InstallRecord {
  /** The project (and lockfile) directory. */
  rootDir: string
  /** `<rootDir>/node_modules`. */
  modulesDir: string
  /** The versioned store directory (`…/v11`). */
  storeDir: string
  /** pnpm's version, e.g. `11.28.11`. */
  pnpmVersion: string
  /** The project's `package.json`. */
  manifest: { name?: string, version?: string }
  /** depPath → alias → where it was hoisted. */
  hoistedDependencies: Record<string, Record<string, 'private' | 'public'>>
  hoistPattern?: string[]
  publicHoistPattern?: string[]
  /** Packages whose row requires a build, in lockfile order (pnpm ran none of them). */
  requireBuild: string[]
  /** The text of `pnpm-lock.yaml`'s own document (the current lockfile of a full install). */
  lockfileText: string
}

/** `registriesByScope` without the default registry, scopes sorted. */
function registryRoutes (config: Record<string, unknown>): Record<string, unknown> {
  const byScope = (config.registriesByScope ?? {}) as Record<string, unknown>
  return Object.fromEntries(Object.keys(byScope).filter((k) => k !== 'default').sort().map((k) => [k, byScope[k]]))
}

/** The settings as pnpm records them: configured values, a store dir resolved and versioned. */
function stateSettings (config: PnpmConfig & Record<string, unknown>, rootDir: string): Record<string, unknown> {
  const settings: Record<string, unknown> = {}
  for (const key of STATE_SETTINGS) {
    let value = config[key]
    if (value === undefined) continue
    if (key === 'storeDir') value = path.join(path.resolve(rootDir, value as string), 'v11')
    settings[key] = value
  }
  settings.registryRoutes = registryRoutes(config)
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
    // only when it looked at builds at all: scripts on, and something to build.
    ignoredBuilds: config.ignoreScripts !== true && record.requireBuild.length > 0 ? [] : undefined,
    layoutVersion: 5,
    nodeLinker: 'isolated',
    packageManager: `pnpm@${record.pnpmVersion}`,
    // With scripts off, every build is pending (pnpm's order depends on its own timing).
    pendingBuilds: config.ignoreScripts === true ? record.requireBuild : [],
    publicHoistPattern: record.publicHoistPattern,
    prunedAt: new Date().toUTCString(),
    skipped: [],
    storeDir: record.storeDir,
    virtualStoreDir: '.pnpm',
    virtualStoreDirMaxLength: config.virtualStoreDirMaxLength,
    allowBuilds: config.allowBuilds,
  }
  writeAtomically(path.join(record.modulesDir, '.pnpm', 'lock.yaml'), record.lockfileText)
  writeAtomically(path.join(record.modulesDir, '.modules.yaml'), JSON.stringify(modules, null, 2))
}

/** The workspace state: the last file of an install, whose presence says it is complete. */
export function writeWorkspaceState (record: InstallRecord, config: PnpmConfig & Record<string, unknown>): void {
  const { name, version } = record.manifest
  const state = {
    lastValidatedTimestamp: Date.now(),
    projects: { [record.rootDir]: { name, version } },
    pnpmfiles: config.pnpmfile ?? [],
    settings: stateSettings(config, record.rootDir),
    filteredInstall: false,
    configDependencies: config.configDependencies,
  }
  writeAtomically(path.join(record.modulesDir, '.pnpm-workspace-state-v1.json'), `${JSON.stringify(state, undefined, 2)}\n`)
}
