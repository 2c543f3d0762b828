/**
 * Running a dependency's build as pnpm 11.28.11's build step runs it (exec/lifecycle
 * `runPostinstallHooks` over its bundled exec/npm-lifecycle): `preinstall` when it has one,
 * `install`, `postinstall` when it has one, each with `sh -c` in the package's directory, with
 * the environment of `script-env.ts`, output piped (pnpm's reporter only logs it). A failing
 * stage fails the build with pnpm's message and `ELIFECYCLE`.
 *
 * What this does not do, and its caller leaves to pnpm: `node-gyp rebuild` for a `binding.gyp`
 * without an install script, `scriptShell`, `shellEmulator`. (pnpm also runs a `.hooks/<stage>`
 * of the virtual store, which a fresh `node_modules` does not have.) Signals are passed on to a
 * script run in a process group of its own (pnpm does that without a terminal too), and taken
 * by pnpm's process once the script is gone; pnpm's own relaying beyond that (its interrupt
 * trap, its watchdog) is not reproduced.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { StringDecoder } from 'node:string_decoder'
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
  /** Logs a record as pnpm's lifecycle logger does (`pnpm:lifecycle`), for its reporter to show. */
  lifecycle?: (record: Record<string, unknown>) => void
}

/** The script pnpm runs for `stage`, if any (`npx only-allow pnpm` does nothing under pnpm: it is skipped). */
export function stageScript (manifest: { scripts?: Record<string, string> }, stage: string): string | undefined {
  const script = manifest.scripts?.[stage]
  return script == null || script === '' || script === 'npx only-allow pnpm' ? undefined : script
}

/** How much of a failing script's output its error keeps (the end of it). */
const KEPT_OUTPUT = 16 * 1024
/** The longest line kept whole: a longer one is passed on in parts (memory stays bounded). */
const LONGEST_LINE = 1024 * 1024

/**
 * Splits a stream's output into lines as pnpm's reader of a script's output does (`byline`: at
 * any line break, empty lines left out), passing each to `line`.
 */
export function lineSplitter (line: (text: string) => void): { push: (chunk: Buffer) => void, end: () => void } {
  const decoder = new StringDecoder('utf8')
  let pending = ''
  const emit = (text: string): void => { if (text !== '') line(text) }
  return {
    push: (chunk) => {
      const parts = (pending + decoder.write(chunk)).split(/\r\n|[\n\v\f\r\x85\u2028\u2029]/)
      pending = parts.pop()!
      parts.forEach(emit)
      if (pending.length > LONGEST_LINE) {
        emit(pending)
        pending = ''
      }
    },
    end: () => emit(pending + decoder.end()),
  }
}

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

/**
 * Runs `script` with `sh -c`, its output logged line by line as pnpm logs it; rejects with
 * pnpm's error when it fails.
 */
function runScript (pkgId: string, stage: string, script: string, wd: string, env: Record<string, string>, ctx: BuildContext): Promise<void> {
  const ownGroup = !hasTerminal()
  const owner = ctx.unsafePerm ? {} : { uid: process.getuid!(), gid: process.getgid!() }
  const child = spawn('sh', ['-c', script], { cwd: wd, env, detached: ownGroup, stdio: ['ignore', 'pipe', 'pipe'], ...owner })
  let output = ''
  const streams = (['stdout', 'stderr'] as const).map((stdio) => {
    const lines = lineSplitter((line) => ctx.lifecycle?.({ depPath: wd, line, stage, stdio, wd }))
    child[stdio].on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-KEPT_OUTPUT)
      lines.push(chunk)
    })
    return lines
  })
  // A script in a group of its own does not get the terminal's signals: pnpm passes its own on,
  // and once the script is gone, takes the signal itself (the install ends as it would have).
  let received: NodeJS.Signals | undefined
  const kill = (signal: NodeJS.Signals): void => { if (child.pid != null) try { process.kill(ownGroup ? -child.pid : child.pid, signal) } catch {} }
  const onSignal = (signal: NodeJS.Signals): void => {
    received ??= signal
    kill(signal)
  }
  const onExit = (): void => kill('SIGTERM')
  if (ownGroup) {
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
  }
  process.once('exit', onExit)
  return new Promise((resolve, reject) => {
    const done = (err?: Error): void => {
      process.removeListener('SIGINT', onSignal)
      process.removeListener('SIGTERM', onSignal)
      process.removeListener('exit', onExit)
      if (received != null) process.kill(process.pid, received)
      if (err == null) resolve()
      else reject(err)
    }
    child.on('error', (err) => done(new LifecycleError(pkgId, stage, script, err.message, output)))
    child.on('close', (code, signal) => {
      streams.forEach((lines) => lines.end())
      ctx.lifecycle?.({ depPath: wd, exitCode: code ?? 1, optional: false, stage, wd })
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
    ctx.lifecycle?.({ depPath: pkgDir, optional: false, script, stage, wd: pkgDir })
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
