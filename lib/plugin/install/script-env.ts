/**
 * The environment and `PATH` of a dependency's lifecycle script as pnpm 11.28.11 gives them
 * (its bundle's exec/npm-lifecycle `makeEnv`, `makePackageManagerEnv`, `extendPath`, and
 * exec/lifecycle `runLifecycleHook`'s options), so that a build the native install runs sees
 * what it would see under pnpm: a script may record its environment in its package, and that
 * package's side effects are then cached for every later install.
 *
 * `@pnpm/npm-lifecycle` (1100.0.0, the last published) is not what 11.28.11 runs: its
 * `npm_execpath`, its `node-gyp` paths and its `PATH` come from its own location, and it spawns
 * the shell otherwise. So the rules are written here, and the tests check them against the bundle.
 */
import path from 'node:path'

/** The fields of a package's manifest pnpm exports as `npm_package_*` (and everything below them). */
const EXPORTED_FIELDS = ['name', 'version', 'config', 'engines', 'bin']

/** Adds `value` (a manifest field, or a value nested in one) under `envKey`, as pnpm's `makeEnv` does. */
function addField (env: Record<string, string>, envKey: string, value: unknown): void {
  if (value == null || typeof value !== 'object') {
    const text = String(value)
    env[envKey] = text.includes('\n') ? JSON.stringify(text) : text
    return
  }
  // A manifest read from JSON has no cycles: its nested values all go in.
  for (const key of Object.keys(value)) {
    if (key.startsWith('_')) continue
    addField(env, `${envKey}_${key}`.replace(/\W/g, '_'), (value as Record<string, unknown>)[key])
  }
}

/** The `npm_package_*` variables of `manifest`, in its fields' order. */
export function packageEnv (manifest: Record<string, unknown>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const key of Object.keys(manifest)) {
    if (key.startsWith('_') || !EXPORTED_FIELDS.includes(key)) continue
    addField(env, `npm_package_${key}`.replace(/\W/g, '_'), manifest[key])
  }
  return env
}

/** Whether pnpm passes `name` on from its own environment: not `npm_package_*`, no private config (auth), `PATH` only as `PATH`. */
export function inheritedName (name: string): boolean {
  return !/^npm_package_/.test(name) && !/^(?:npm|pnpm)_config_(?:[/@_]|.*:_)/i.test(name) && (!/^PATH$/i.test(name) || name === 'PATH')
}

/**
 * A script's `PATH` (POSIX): the `.bin` of the script's directory, then those of every
 * `node_modules` it is nested in (innermost first), pnpm's `node-gyp` shim directory, the extra
 * bin paths, then `original`'s entries not already listed.
 */
export function scriptPath (wd: string, original: string | undefined, nodeGypBinDir: string, extraBinPaths: string[]): string {
  const entries = [...extraBinPaths]
  const segments = wd.split(/[\\/]node_modules[\\/]/)
  let dir = path.resolve(segments.shift()!)
  entries.unshift(nodeGypBinDir)
  for (const segment of segments) {
    entries.unshift(path.join(dir, 'node_modules', '.bin'))
    dir = path.join(dir, 'node_modules', segment)
  }
  entries.unshift(path.join(dir, 'node_modules', '.bin'))
  if (original) {
    const listed = new Set(entries)
    entries.push(...original.split(':').filter((entry) => !listed.has(entry)))
  }
  return entries.join(':')
}

/** Where the running pnpm is, as its scripts are told: its entry script, `node-gyp` and its shims. */
export interface PnpmPaths {
  /** `npm_execpath`: the entry script pnpm was started with. */
  execPath: string
  /** `npm_config_node_gyp` when the environment has none: the `node-gyp` pnpm ships, if found. */
  nodeGyp?: string
  /** The directory of pnpm's `node-gyp` shims, put on `PATH`. */
  nodeGypBinDir: string
}

export interface ScriptEnvOptions {
  /** The package's manifest as pnpm reads it (normalized). */
  manifest: Record<string, unknown>
  stage: string
  /** The package's directory (the script's working directory). */
  wd: string
  /** The environment pnpm runs in. */
  processEnv: NodeJS.ProcessEnv
  /** pnpm's working directory (`INIT_CWD` before the install's own). */
  cwd: string
  pnpm: PnpmPaths
  /** pnpm's `extraEnv` as its install passes it (with `npm_command`). */
  extraEnv: Record<string, string>
  /** `INIT_CWD`: the lockfile's directory for a dependency's build, pnpm's working directory for a project's scripts. */
  initCwd: string
  userAgent?: string
  /** `false`: scripts get a `TMPDIR` of their own in the package's `node_modules/.tmp` (made by the caller). */
  unsafePerm: boolean
  extraBinPaths: string[]
  /** The script itself (`npm_lifecycle_script`). */
  script: string
}

/** The environment pnpm runs `stage`'s script of a dependency with, in pnpm's order of assignment. */
export function scriptEnv (opts: ScriptEnvOptions): Record<string, string> {
  const env: Record<string, string> = {}
  for (const name of Object.keys(opts.processEnv)) {
    if (inheritedName(name) && opts.processEnv[name] != null) env[name] = opts.processEnv[name]!
  }
  Object.assign(env, packageEnv(opts.manifest))
  env.npm_lifecycle_event = opts.stage
  const node = env.NODE || process.execPath
  Object.assign(env, { NODE: node, npm_node_execpath: node, npm_execpath: opts.pnpm.execPath, INIT_CWD: opts.cwd })
  env.npm_package_json = path.join(opts.wd, 'package.json')
  if (!env.npm_config_node_gyp && opts.pnpm.nodeGyp) env.npm_config_node_gyp = opts.pnpm.nodeGyp
  const extra: Record<string, string> = {
    ...opts.extraEnv,
    INIT_CWD: opts.initCwd,
    PNPM_SCRIPT_SRC_DIR: opts.wd,
    ...(opts.userAgent ? { npm_config_user_agent: opts.userAgent } : {}),
  }
  Object.assign(env, extra)
  if (!opts.unsafePerm) env.TMPDIR = path.join(opts.wd, 'node_modules', '.tmp')
  env.PATH = scriptPath(opts.wd, env.PATH, opts.pnpm.nodeGypBinDir, opts.extraBinPaths)
  env.npm_lifecycle_script = opts.script
  return env
}
