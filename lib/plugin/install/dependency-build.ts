/**
 * Running a dependency's build as pnpm 11.28.11's build step runs it (exec/lifecycle
 * `runPostinstallHooks` over its bundled exec/npm-lifecycle): `preinstall` when it has one,
 * `install`, `postinstall` when it has one, each with `sh -c` in the package's directory, with
 * the environment of `script-env.ts`, output piped (pnpm's reporter only logs it). A failing
 * stage fails the build with pnpm's message and `ELIFECYCLE`.
 *
 * What this does not do, and its caller leaves to pnpm: `node-gyp rebuild` for a `binding.gyp`
 * without an install script, `scriptShell`, `shellEmulator`. (pnpm also runs a `.hooks/<stage>`
 * of the virtual store, which a fresh `node_modules` does not have.) Signals are passed on to a script run in a process group of its own (pnpm does that
 * without a terminal too), but pnpm's own relaying (its interrupt trap, its watchdog) is not
 * reproduced: an interrupted install records nothing, and pnpm installs over it.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { scriptEnv, type PnpmPaths } from './script-env.js'

/** What every build of one install shares. */
export interface BuildContext {
  pnpm: PnpmPaths
  processEnv: NodeJS.ProcessEnv
  cwd: string
  extraEnv: Record<string, string>
  lockfileDir: string
  userAgent?: string
  unsafePerm: boolean
  extraBinPaths: string[]
}

/** The script pnpm runs for `stage`, if any (`npx only-allow pnpm` does nothing under pnpm: it is skipped). */
export function stageScript (manifest: { scripts?: Record<string, string> }, stage: string): string | undefined {
  const script = manifest.scripts?.[stage]
  return script == null || script === '' || script === 'npx only-allow pnpm' ? undefined : script
}

/** How much of a failing script's output its error keeps (the end of it). */
const KEPT_OUTPUT = 16 * 1024

/** A failed stage, as pnpm words it (`ELIFECYCLE`). */
export class LifecycleError extends Error {
  readonly code = 'ELIFECYCLE'
  constructor (readonly pkgId: string, readonly stage: string, readonly script: string, why: string, readonly output: string) {
    super(`${pkgId} ${stage}: \`${script}\`\n${why}`)
  }
}

/** Whether this process has a controlling terminal: without one, pnpm runs scripts in a process group of their own. */
function hasTerminal (): boolean {
  try {
    fs.closeSync(fs.openSync('/dev/tty', fs.constants.O_RDONLY | fs.constants.O_NOCTTY))
    return true
  } catch {
    return false
  }
}

/** Runs `script` with `sh -c`; rejects with pnpm's error when it fails. */
function runScript (pkgId: string, stage: string, script: string, wd: string, env: Record<string, string>, ctx: BuildContext): Promise<void> {
  const ownGroup = !hasTerminal()
  const owner = ctx.unsafePerm ? {} : { uid: process.getuid!(), gid: process.getgid!() }
  const child = spawn('sh', ['-c', script], { cwd: wd, env, detached: ownGroup, stdio: ['ignore', 'pipe', 'pipe'], ...owner })
  let output = ''
  const keep = (chunk: Buffer): void => { output = (output + chunk.toString()).slice(-KEPT_OUTPUT) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  // A script in a group of its own does not get the terminal's signals: it gets pnpm's.
  const pass = (signal: NodeJS.Signals) => () => { if (child.pid != null) try { process.kill(ownGroup ? -child.pid : child.pid, signal) } catch {} }
  const onInt = pass('SIGINT')
  const onTerm = pass('SIGTERM')
  const onExit = pass('SIGTERM')
  if (ownGroup) {
    process.once('SIGINT', onInt)
    process.once('SIGTERM', onTerm)
  }
  process.once('exit', onExit)
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      process.removeListener('SIGINT', onInt)
      process.removeListener('SIGTERM', onTerm)
      process.removeListener('exit', onExit)
      if (err == null) resolve()
      else reject(err)
    }
    child.on('error', (err) => done(new LifecycleError(pkgId, stage, script, err.message, output)))
    child.on('close', (code, signal) => {
      if (signal != null) done(new LifecycleError(pkgId, stage, script, `Command failed with signal "${signal}"`, output))
      else if (code !== 0) done(new LifecycleError(pkgId, stage, script, `Exit status ${code}`, output))
      else done()
    })
  })
}

/**
 * Runs the package's `preinstall`, `install` and `postinstall` as pnpm does, and says whether
 * pnpm would count the build as having side effects (it then records them): a `preinstall` or
 * `postinstall` field, or an `install` script that ran.
 */
export async function runBuildScripts (pkgDir: string, manifest: Record<string, unknown> & { scripts?: Record<string, string> }, ctx: BuildContext): Promise<boolean> {
  const pkgId = `${String(manifest.name ?? '')}@${String(manifest.version ?? '')}`
  const run = async (stage: string): Promise<boolean> => {
    const script = stageScript(manifest, stage)
    if (script == null) return false
    const env = scriptEnv({ manifest, stage, wd: pkgDir, script, ...ctx })
    if (!ctx.unsafePerm) fs.mkdirSync(path.join(pkgDir, 'node_modules', '.tmp'), { recursive: true })
    await runScript(pkgId, stage, script, pkgDir, env, ctx)
    return true
  }
  const scripts = manifest.scripts ?? {}
  if (scripts.preinstall) await run('preinstall')
  const installed = await run('install')
  if (scripts.postinstall) await run('postinstall')
  return scripts.preinstall != null || installed || scripts.postinstall != null
}
