/**
 * pnpm's settings as the plugin reads them from `hooks.updateConfig`, and the rules the head
 * start and the native install share about them: which command pnpm was started for, whether
 * it installs the lockfile as it is, and which layouts the plugin lays out at all.
 */
import type { PackageImportMethod } from '../api/import.js'

/** The pnpm settings the plugin reads (from `hooks.updateConfig`). */
export interface PnpmConfig {
  lockfileDir?: string
  /** `pnpm/<version> …`: the running pnpm. */
  userAgent?: string
  frozenLockfile?: boolean
  frozenLockfileIfExists?: boolean
  preferFrozenLockfile?: boolean
  ci?: boolean
  hoist?: boolean
  hoistPattern?: string[] | string
  publicHoistPattern?: string[] | string
  virtualStoreOnly?: boolean
  configDependencies?: Record<string, unknown>
  shamefullyHoist?: boolean
  symlink?: boolean
  dryRun?: boolean
  resolutionOnly?: boolean
  filterProd?: string[]
  nodeLinker?: string
  enableGlobalVirtualStore?: boolean
  enableModulesDir?: boolean
  virtualStoreType?: string
  virtualStoreDir?: string
  modulesDir?: string
  virtualStoreDirMaxLength?: number
  production?: boolean
  dev?: boolean
  optional?: boolean
  /** pnpm's default is `true`: the root project's devDependencies provide peers to every project. */
  resolvePeersFromWorkspaceRoot?: boolean
  engineStrict?: boolean
  force?: boolean
  lockfileOnly?: boolean
  filter?: string[]
  recursiveInstall?: boolean
  sharedWorkspaceLockfile?: boolean
  packageImportMethod?: PackageImportMethod
  verifyStoreIntegrity?: boolean
  strictStorePkgContentCheck?: boolean
  useLockfile?: boolean
  fixLockfile?: boolean
  updateChecksums?: boolean
}

/**
 * Whether pnpm installs from the lockfile as it is: `--frozen-lockfile`, or in CI (pnpm 11's
 * `frozenLockfileIfExists`, on by default there) when there is a lockfile.
 */
export function installsFrozen (config: PnpmConfig, existsNonEmptyWantedLockfile: boolean): boolean {
  if (config.frozenLockfile === true) return true
  const ifExists = config.frozenLockfileIfExists ?? (config.ci === true && config.lockfileOnly !== true &&
    config.resolutionOnly !== true && config.frozenLockfile !== false && config.preferFrozenLockfile !== false)
  return ifExists && existsNonEmptyWantedLockfile
}

/**
 * How pnpm 11.28 treats the lockfile of this install (`undefined`: it resolves whatever the
 * lockfile says): `frozen`, it installs the lockfile as it is or refuses it (`installsFrozen`);
 * `if up to date`, a plain `pnpm install` with `preferFrozenLockfile` (the default), which takes
 * the same frozen path when the lockfile is up to date with every project and its settings, and
 * resolves otherwise. `--fix-lockfile` and `--update-checksums` always resolve, and without
 * lockfile use there is nothing to install as it is.
 */
export function lockfileMode (config: PnpmConfig, existsNonEmptyWantedLockfile: boolean): 'frozen' | 'if up to date' | undefined {
  if (config.useLockfile === false || config.fixLockfile === true || config.updateChecksums === true) return undefined
  if (installsFrozen(config, existsNonEmptyWantedLockfile)) return 'frozen'
  return config.preferFrozenLockfile !== false ? 'if up to date' : undefined
}

/**
 * Why the settings ask for a layout neither the head start nor the native install lays out
 * (`undefined`: they do not): only pnpm 11's isolated layout, with a virtual store per project,
 * the whole workspace installed from its lockfile as it is (resolving installs link only what
 * is new), and something to write.
 */
export function layoutUnsupported (config: PnpmConfig): string | undefined {
  if (config.dryRun === true || config.resolutionOnly === true) return 'nothing is to be written'
  if ((config.nodeLinker ?? 'isolated') !== 'isolated') return `nodeLinker ${config.nodeLinker}`
  if (config.enableGlobalVirtualStore === true) return 'enableGlobalVirtualStore'
  if (config.enableModulesDir === false) return 'enableModulesDir false'
  if ((config.virtualStoreType ?? 'project') !== 'project') return `virtualStoreType ${config.virtualStoreType}`
  if (config.force === true) return '--force'
  if (config.lockfileOnly === true) return '--lockfile-only'
  if ((config.filter?.length ?? 0) > 0 || (config.filterProd?.length ?? 0) > 0) return '--filter'
  if (config.sharedWorkspaceLockfile === false) return 'sharedWorkspaceLockfile false'
  if (config.symlink === false) return 'symlink false'
  if (config.virtualStoreOnly === true) return 'virtualStoreOnly'
  // pacquet (pnpm's Rust engine, declared in configDependencies) takes the install over and
  // reads the current lockfile from disk, not pnpm's copy this would add to.
  if (config.configDependencies?.pacquet != null || config.configDependencies?.['@pnpm/pacquet'] != null) return 'pacquet installs'
  return undefined
}

/** pnpm's commands that install, by every name they go by. */
const INSTALL = new Set(['install', 'i'])
/** pnpm's other commands that change `node_modules` (their first word decides). */
const OTHER_COMMANDS = new Set(['add', 'update', 'up', 'upgrade', 'remove', 'rm', 'uninstall', 'un', 'link', 'ln', 'unlink', 'import', 'rebuild', 'rb', 'fetch', 'dedupe', 'prune', 'deploy'])

/**
 * Whether pnpm was started to install (`pnpm install`, `pnpm i`). pnpm reads a pnpmfile's hooks
 * once, when it loads the file, and a `preResolution` hook also keeps pnpm off its fast lockfile
 * update (taken by `pnpm add` and friends when the lockfile only needs a few changes) and off a
 * pnpr server. So the head start is offered to install commands only.
 */
export function startedToInstall (argv: string[] = process.argv.slice(2)): boolean {
  const command = argv.find((a) => INSTALL.has(a) || OTHER_COMMANDS.has(a))
  return command != null && INSTALL.has(command)
}
