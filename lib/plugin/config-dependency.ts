/**
 * The entry point of `@cas/pnpm-plugin-native`, the config dependency pnpm loads before it
 * installs anything (its root `pnpmfile.cjs` is `module.exports = require('../dist/pnpm-plugin.js')`).
 *
 * An install must never fail because of it. The hooks of `pnpmfile.ts` are handed to pnpm 11
 * only, and only when the native binary loads; otherwise pnpm gets one warning that says why
 * and what to do, and hooks that do nothing, so it installs as stock pnpm does. `hooks` is always
 * an object: pnpm records a `pnpmfileChecksum` only for pnpmfiles that export hooks, and the
 * lockfile must not change with the platform a clone runs on.
 */
import fs from 'node:fs'
import path from 'node:path'
import { trace } from './trace.js'
import { PLATFORM_PACKAGE_PREFIX, platformArchABI, prebuiltPlatforms, type PackageJson } from '../api/native-platform.js'

export const PLUGIN_NAME = '@cas/pnpm-plugin-native'

/** What pnpm reads from a pnpmfile: the parts of `pnpmfile.ts` this entry passes on or wraps. */
export interface PnpmfileModule {
  hooks: {
    updateConfig?: <T extends object>(config: T) => T | Promise<T>
    preResolution?: (ctx: never) => Promise<void>
    importPackage?: unknown
  }
  fetchers?: Array<{ canFetch: (...args: never[]) => boolean, fetch: unknown }>
}

/** pnpm's version from its own package, when pnpm was started as `node <pnpm>/bin/pnpm.mjs` (the `pnpm` and `@pnpm/exe` packages). */
export function launcherPnpmVersion (script: string | undefined = process.argv[1]): string | undefined {
  if (!script) return undefined
  let dir: string
  try {
    dir = path.dirname(fs.realpathSync(script))
  } catch {
    return undefined
  }
  for (;;) {
    const manifest = path.join(dir, 'package.json')
    if (fs.existsSync(manifest)) {
      // The nearest package.json is the script's own package: pnpm's, or something else.
      try {
        const pkg = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string, version?: string }
        return pkg.name === 'pnpm' || pkg.name === '@pnpm/exe' ? pkg.version : undefined
      } catch {
        return undefined
      }
    }
    const parent = path.dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** `pnpm/11.28.11 npm/? node/v24.9.0 linux x64` (pnpm's `userAgent` setting) → `11.28.11`. */
export function userAgentPnpmVersion (userAgent: unknown): string | undefined {
  return typeof userAgent === 'string' ? /^pnpm\/(\S+)/.exec(userAgent)?.[1] : undefined
}

const isPnpm11 = (version: string): boolean => version.split('.')[0] === '11'

const REMOVE = `To stop this warning, remove ${PLUGIN_NAME} from configDependencies in pnpm-workspace.yaml.`

/**
 * Why the plugin does nothing under this pnpm. A project can be shared with pnpm 10 users
 * (README, "pnpm 10"): they are told that pnpm 10 installs as it would without the plugin, not to
 * remove it, which would take it from the pnpm 11 users too.
 */
function unsupportedPnpm (version: string | undefined): string {
  const which = version == null ? 'this pnpm (it did not say its version)' : `pnpm ${version}`
  const major = Number(version?.split('.')[0])
  if (major < 11) return `${which} is not supported: the plugin hooks into pnpm 11 only, and pnpm ${major} installs as it does without it (pnpm 11 users of this project keep it).`
  return `${which} is not supported: the plugin hooks into pnpm 11 only` +
    (major >= 12 ? ', and pnpm 12 already installs natively.' : '.') +
    ` ${REMOVE}`
}

/**
 * Why the pnpmfile did not load, and what to do about it: no prebuilt binary for this platform,
 * its platform package not installed, or installed with a binary that fails to load
 * (`bindingLoadError` tells which), or any other error.
 */
export function missingBinary (err: unknown, pkg: PackageJson, platform = platformArchABI()): string {
  const platformPkg = `${PLATFORM_PACKAGE_PREFIX}${platform}`
  const prebuilt = prebuiltPlatforms(pkg)
  const e = err as { code?: unknown, message?: unknown, platformPackageInstalled?: unknown } | undefined
  const lastLine = String(e?.message ?? err).trim().split('\n').at(-1)!.trim().replace(/^-\s*/, '')
  if (e?.code !== 'ERR_CAS_NATIVE_BINDING_NOT_FOUND') return `it failed to load: ${lastLine}`
  if (!prebuilt.includes(platform)) {
    return `there is no prebuilt binary for ${platform} (prebuilt: ${prebuilt.join(', ')}). ${REMOVE}`
  }
  return e.platformPackageInstalled === true
    ? `${platformPkg} is installed but its binary failed to load (${lastLine}). ` +
      'Reinstall it: delete node_modules/.pnpm-config and run pnpm install.'
    : `${platformPkg}, its binary for this platform, was not installed with it. ` +
      `Run \`pnpm add --config ${PLUGIN_NAME}@${pkg.version}\` where the registry serves ${platformPkg}, ` +
      'so that pnpm-lock.yaml records it, and commit the lockfile.'
}

export interface PluginOptions {
  /** pnpm's version when known before any hook runs (`launcherPnpmVersion`). */
  launcherVersion: string | undefined
  /** Loads `pnpmfile.ts`; throws when the native binary does not load. */
  loadPnpmfile: () => PnpmfileModule
  /** This package's own manifest (its `optionalDependencies` list the prebuilt platforms). */
  manifest: PackageJson
  warn: (message: string) => void
}

/**
 * The module pnpm gets. When pnpm 11 started this process itself, everything is known at load:
 * the full pnpmfile, or a warning now. Otherwise (pnpm 12 runs pnpmfiles in a process of its own;
 * a single-file pnpm) pnpm names itself only in `updateConfig`, which runs before any other hook:
 * the warning waits for it, the head start and the fetcher stay off until it says pnpm 11, and
 * the importer is left out, because an `importPackage` hook that does nothing would import nothing.
 */
export function createPlugin (opts: PluginOptions): PnpmfileModule {
  const warn = (why: string): void => {
    trace(`inactive: ${why}`)
    opts.warn(`${opts.manifest.name}: inactive, pnpm installs without it: ${why}`)
  }
  let pnpmfile: PnpmfileModule | undefined
  let problem: string | undefined
  if (opts.launcherVersion != null && !isPnpm11(opts.launcherVersion)) {
    problem = unsupportedPnpm(opts.launcherVersion)
  } else {
    try {
      pnpmfile = opts.loadPnpmfile()
    } catch (err) {
      problem = missingBinary(err, opts.manifest)
    }
  }
  if (opts.launcherVersion != null) {
    if (pnpmfile != null) return pnpmfile
    warn(problem!)
    return { hooks: {} }
  }
  let active = false
  const hooks: PnpmfileModule['hooks'] = {
    updateConfig (config) {
      const version = userAgentPnpmVersion((config as { userAgent?: unknown }).userAgent)
      const why = version == null || !isPnpm11(version) ? unsupportedPnpm(version) : problem
      if (why != null) {
        warn(why)
        return config
      }
      active = true
      return pnpmfile!.hooks.updateConfig?.(config) ?? config
    },
  }
  const preResolution = pnpmfile?.hooks.preResolution
  if (preResolution != null) hooks.preResolution = async (ctx) => { if (active) await preResolution(ctx) }
  return {
    hooks,
    fetchers: (pnpmfile?.fetchers ?? []).map((f) => ({ ...f, canFetch: (...args) => active && f.canFetch(...args) })),
  }
}

/** The explain command, the package's bin (`explain.cjs`): its code is loaded only when it runs. */
export async function explainCommand (argv: string[]): Promise<number> {
  return await (require('./explain-cli.js') as typeof import('./explain-cli.js')).explainMain(argv)
}

/** The plugin as this process gets it: what the package's root `pnpmfile.cjs` exports. */
export function load (): PnpmfileModule {
  return createPlugin({
    launcherVersion: launcherPnpmVersion(),
    loadPnpmfile: () => require('./pnpmfile.js') as PnpmfileModule,
    manifest: JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as PackageJson,
    warn: (message) => console.warn(message),
  })
}
