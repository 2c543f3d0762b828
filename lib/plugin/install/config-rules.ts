/**
 * The native install's rules about pnpm's settings: which settings ask for an install it does
 * not reproduce. Every rule is checked, so that the explain command can list all of them; the
 * install itself goes by the first (`configUnsupported` in `native-install.ts`). Each reason is
 * the short form the trace shows; `why-not.ts` words it for users.
 */
import path from 'node:path'
import { layoutUnsupported, lockfileMode } from '../pnpm-config.js'
import { nativeRelease } from './pnpm-releases.js'
import type { NativeInstallConfig } from './native-install.js'

type Rule = (config: NativeInstallConfig) => string | undefined

/** Whether the public hoisting pattern is `*` alone (pnpm's config sets it so for `shamefullyHoist`). */
const hoistsEverythingPublicly = (config: NativeInstallConfig): boolean =>
  Array.isArray(config.publicHoistPattern) && config.publicHoistPattern.length === 1 && config.publicHoistPattern[0] === '*'

/** Whether the workspace is its root alone: no `packages` globs, or only the root's (`projectsOf` in `native-install.ts`). */
const rootAlone = (config: NativeInstallConfig): boolean =>
  config.workspaceDir == null || (config.workspacePackagePatterns ?? ['.']).every((pattern) => pattern === '.' || pattern === './')

const RULES: Rule[] = [
  (config) => lockfileMode(config, true) == null ? 'pnpm resolves (preferFrozenLockfile false, --fix-lockfile, --update-checksums or no lockfile)' : undefined,
  (config) => layoutUnsupported(config),
  // pnpm runs plugins' updateConfig first: another pnpmfile's could still change the settings.
  (config) => (config.pnpmfile ?? []).length > 1 ? 'other pnpmfiles' : undefined,
  (config) => config.optimisticRepeatInstall === false ? 'optimisticRepeatInstall false' : undefined,
  (config) => config.saveWorkspaceState === false ? 'saveWorkspaceState false' : undefined,
  (config) => config.production === false || config.dev === false || config.optional === false ? 'not every dependency group is installed' : undefined,
  (config) => config.lockfileDir == null || config.dir == null ? 'no lockfile dir' : undefined,
  (config) => config.workspaceDir != null && config.lockfileDir != null && path.resolve(config.workspaceDir) !== path.resolve(config.lockfileDir) ? 'a workspace root elsewhere' : undefined,
  // Below the workspace root pnpm installs the whole workspace (recursiveInstall); elsewhere it is its own.
  (config) => config.lockfileDir != null && config.dir != null && config.workspaceDir == null && path.resolve(config.dir) !== path.resolve(config.lockfileDir) ? 'a project below the lockfile dir' : undefined,
  (config) => config.recursiveInstall === false && config.workspaceDir != null ? 'recursiveInstall false (pnpm installs some projects only)' : undefined,
  (config) => config.dedupeDirectDeps === true ? 'dedupeDirectDeps' : undefined,
  // With no packages globs but the root's, there is no project to inject: the layout is pnpm's usual one.
  (config) => config.injectWorkspacePackages === true && !rootAlone(config) ? 'injectWorkspacePackages (projects injected as copies)' : undefined,
  (config) => config.modulesDir != null && config.modulesDir !== 'node_modules' ? 'a modulesDir of its own' : undefined,
  (config) => config.virtualStoreDir != null ? 'a virtualStoreDir of its own' : undefined,
  // shamefullyHoist is pnpm's shorthand for publicHoistPattern ['*'], which pnpm's config has made of it by now.
  (config) => config.hoist === false || (config.shamefullyHoist === true && !hoistsEverythingPublicly(config)) ? 'hoisting settings' : undefined,
  (config) => !Array.isArray(config.hoistPattern) || !Array.isArray(config.publicHoistPattern) ? 'hoist patterns' : undefined,
  (config) => config.preferSymlinkedExecutables === true ? 'bin settings' : undefined,
  (config) => config.nodeExperimentalPackageMap === true ? 'nodeExperimentalPackageMap' : undefined,
  () => process.platform === 'win32' ? 'Windows (its shims are of other kinds)' : undefined,
  (config) => config.ignorePnpmfile === true ? '--ignore-pnpmfile' : undefined,
  (config) => Object.keys(config.registriesByPrefix ?? {}).length > 0 ? 'registries by prefix' : undefined,
  (config) => config.useGitBranchLockfile === true || config.mergeGitBranchLockfiles === true ? 'git branch lockfiles' : undefined,
  // pnpm only reads such a store (no downloads into it, no builds' results recorded); the native install may write to it.
  (config) => (config as { frozenStore?: unknown }).frozenStore === true ? 'frozenStore' : undefined,
]

/**
 * Every reason the settings (under pnpm `version`, which must be a release the native install
 * reproduces: `pnpm-releases.ts`) ask for an install this does not reproduce, in the order the
 * install checks them.
 */
export function configReasons (config: NativeInstallConfig, version: string | undefined): string[] {
  const release = nativeRelease(version)
  const reasons = typeof release === 'string' ? [release] : []
  for (const rule of RULES) {
    const why = rule(config)
    if (why != null) reasons.push(why)
  }
  return reasons
}
