/**
 * Running a dependency's build as pnpm 11.28.11's build step runs it (exec/lifecycle
 * `runPostinstallHooks` over its bundled exec/npm-lifecycle): `preinstall` when it has one,
 * `install`, `postinstall` when it has one, each with `sh -c` in the package's directory (under
 * `shellEmulator`, with the `@yarnpkg/shell` pnpm bundles, at its version), with the
 * environment of `script-env.ts`, output piped (pnpm's reporter only logs it). A failing stage
 * fails the build with pnpm's message and code (`ELIFECYCLE`, or the code pnpm keeps).
 *
 * A package with a `binding.gyp` and neither an `install` nor a `preinstall` script gets
 * `node-gyp rebuild` as its install script, as pnpm's runner gives it one (`stageScript`): run
 * like any script, with pnpm's `node-gyp` shims first on its `PATH` and `npm_config_node_gyp`
 * pointing at the `node-gyp` pnpm ships (`script-env.ts`).
 *
 * What this does not do, and its caller leaves to pnpm: a `scriptShell` that is not there. (pnpm
 * also runs a `.hooks/<stage>` of the virtual store, which a fresh `node_modules` does not have.) Signals are handled as pnpm's runner
 * handles them for a dependency's build (its interrupt trap before the script, SIGTERM and
 * SIGINT passed on, a script's death signal raised on pnpm's process); not reproduced: its
 * watchdog (which kills the script's group should pnpm die without passing a signal on) and
 * its wait for every process of the script's group to end. Under the emulator pnpm relays
 * nothing itself: nor does this.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { PassThrough } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import { scriptEnv, type PnpmPaths } from './script-env.js'

/** What every build of one install shares. */
export interface BuildContext {
  pnpm: PnpmPaths
  processEnv: NodeJS.ProcessEnv
  cwd: string
  extraEnv: Record<string, string>
  /** The scripts' `INIT_CWD`: the lockfile's directory for a dependency's build, pnpm's working directory for a project's scripts. */
  initCwd: string
  userAgent?: string
  unsafePerm: boolean
  extraBinPaths: string[]
  /** The shell scripts run with (`-c`) instead of `sh` (pnpm's `scriptShell`, resolved as pnpm resolves it). */
  scriptShell?: string
  /** Scripts run by pnpm's shell emulator (`shellEmulator` without a `scriptShell`), not `sh`. */
  shellEmulator?: boolean
  /** The package is optional (pnpm's lifecycle records say so). */
  optional?: boolean
  /** Logs a record as pnpm's lifecycle logger does (`pnpm:lifecycle`), for its reporter to show. */
  lifecycle?: (record: Record<string, unknown>) => void
  /**
   * `inherit`: the script writes to pnpm's own output, after a `$ <script>` line (a project's
   * scripts outside a workspace); otherwise its output is piped and logged line by line.
   */
  stdio?: 'inherit'
  /** Writes the `$ <script>` line pnpm's runner shows before a script it runs with `stdio: inherit`. */
  announce?: (script: string) => void
  /** A failed script's error names the package by its manifest's own `_id`, if it has one (`scriptPackage`: a project's, to 11.28.3). */
  ownId?: boolean
}

/** What pnpm's runner makes the install stage of a package with a `binding.gyp` and no install script of its own. */
const GYP_INSTALL = 'node-gyp rebuild'

/**
 * The script pnpm runs for `stage` of the package in `pkgDir`, if any, looked at when the stage
 * comes (pnpm's `prepareHookManifest`): its own; for `install`, when it has neither an `install`
 * nor a `preinstall` script and does not opt out (`gypfile: false`), `node-gyp rebuild` if it
 * has a `binding.gyp`. `npx only-allow pnpm` does nothing under pnpm: it is skipped.
 */
export function stageScript (manifest: { scripts?: Record<string, string>, gypfile?: unknown }, stage: string, pkgDir: string): string | undefined {
  const scripts = manifest.scripts ?? {}
  const gyp = stage === 'install' && !scripts.install && !scripts.preinstall && manifest.gypfile !== false && fs.existsSync(path.join(pkgDir, 'binding.gyp'))
  const script = gyp ? GYP_INSTALL : scripts[stage]
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

/**
 * How a script ended when it failed: its exit status, or the signal that ended it; or the error
 * that kept it from running (its `code`, `errno` and `syscall`, as Node gives them, and the
 * `file` it ran, as pnpm names it on a command not found).
 */
export interface ScriptEnd { errno?: number | string, signal?: NodeJS.Signals, code?: string, syscall?: string, file?: string }

/** The ends of a failed start: the error's own fields, which pnpm's decoration leaves on it. */
function errorEnd (err: NodeJS.ErrnoException): ScriptEnd {
  return { code: err.code, errno: err.errno, syscall: err.syscall }
}

/**
 * A shell that ended with status 127 (a command it did not find), as pnpm's lifecycle runner
 * reports it: as if the shell could not be started (`spawn ENOENT`, with `errno` the code's
 * name, which pnpm's reporter prints as no exit code and its error handler ends with status 1).
 */
const COMMAND_NOT_FOUND = 127
const commandNotFound = (shell: string): ScriptEnd => ({ code: 'ENOENT', errno: 'ENOENT', syscall: 'spawn', file: shell })

/**
 * The codes pnpm's lifecycle runner leaves on a failed script's error (`decorateLifecycleError`):
 * a permission error (the switch to the package's owner) and a missing `scriptShell`; any other
 * error becomes `ELIFECYCLE`.
 */
const KEPT_CODES = new Set(['EPERM', 'ERR_PNPM_SCRIPT_SHELL_NOT_FOUND'])

/** How pnpm's lifecycle runner names a package in a failed script's error: its hook manifest's `_id` and its `name`. */
export interface ScriptPackage { id: string, name: string | undefined }

/**
 * The name and version, or under a release that lets a manifest's own `_id` win (`ownId`: to
 * 11.28.3 pnpm's hook manifest is `{ _id, ...manifest }`) that `_id` when the manifest has one.
 * Only a project's can: pnpm's reader of a dependency's sets `_id` to its name and version.
 */
export function scriptPackage (manifest: Record<string, unknown>, ownId: boolean): ScriptPackage {
  const id = ownId && '_id' in manifest ? String(manifest._id) : `${String(manifest.name ?? '')}@${String(manifest.version ?? '')}`
  return { id, name: typeof manifest.name === 'string' ? manifest.name : undefined }
}

/**
 * A failed stage, as pnpm's lifecycle runner words and decorates it (`ELIFECYCLE` unless the
 * code is one pnpm keeps, the package, stage and script, the exit status or the error's errno
 * as `errno`, the signal, the failed call): the fields pnpm's reporter and its error handler
 * read, which print it and exit with that status.
 */
export class LifecycleError extends Error {
  readonly code: string
  readonly pkgid: string
  readonly pkgname: string | undefined
  readonly errno?: number | string
  readonly signal?: NodeJS.Signals
  readonly syscall?: string
  readonly file?: string
  constructor (pkg: ScriptPackage, readonly stage: string, readonly script: string, why: string, readonly output: string, end: ScriptEnd = {}) {
    super(`${pkg.id} ${stage}: \`${script}\`\n${why}`)
    this.code = end.code != null && KEPT_CODES.has(end.code) ? end.code : 'ELIFECYCLE'
    this.pkgid = pkg.id
    this.pkgname = pkg.name
    if (end.errno != null) this.errno = end.errno
    if (end.signal != null) this.signal = end.signal
    if (end.syscall != null) this.syscall = end.syscall
    if (end.file != null) this.file = end.file
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

/** A script's output as pnpm reads it: each stream's lines logged (`pnpm:lifecycle`), its end kept for the error. */
function scriptOutput (stage: string, wd: string, ctx: BuildContext): { read: (stdio: 'stdout' | 'stderr', stream: NodeJS.ReadableStream) => void, end: () => void, kept: () => string } {
  let kept = ''
  const splitters: Array<ReturnType<typeof lineSplitter>> = []
  return {
    read: (stdio, stream) => {
      const lines = lineSplitter((line) => ctx.lifecycle?.({ depPath: wd, line, stage, stdio, wd }))
      splitters.push(lines)
      stream.on('data', (chunk: Buffer) => {
        kept = (kept + chunk.toString()).slice(-KEPT_OUTPUT)
        lines.push(chunk)
      })
    },
    end: () => splitters.forEach((lines) => lines.end()),
    kept: () => kept,
  }
}

/**
 * What pnpm puts before a script it runs with a Bourne shell, in words of our own to the same
 * effect: the shell outlives a SIGINT until the command it waits for has ended; if that
 * command ended by the interrupt (status 130), the shell then ends by SIGINT too, else the
 * script goes on (a command that handles Ctrl-C and exits cleanly does not end the build), and
 * a later SIGINT ends the shell at once.
 */
const INTERRUPT_TRAP = 'trap \'[ "$?" != 130 ] || { trap - INT; kill -INT $$; }; trap "trap - INT; kill -INT $$" INT\' INT; '

/** The shells pnpm knows to report an interrupted command's status, and so gives the trap (by their file's name). */
const BOURNE_SHELLS = new Set(['sh', 'dash', 'bash', 'ash', 'zsh', 'ksh', 'mksh'])

/** `script` as the shell `shell` gets it after `-c`: behind the interrupt trap for a Bourne shell, as pnpm passes it. */
export function shellBody (shell: string, script: string): string {
  const name = path.basename(shell).toLowerCase().replace(/\.exe$/, '')
  return BOURNE_SHELLS.has(name) ? INTERRUPT_TRAP + script : script
}

/**
 * Passes pnpm's SIGTERM and SIGINT on to a running script as pnpm's lifecycle runner does for a
 * dependency's build (its `relaySignals` without `raiseOnInterrupt`: pnpm's process takes no
 * signal it passed on, only one the script ended by, in `runScript`):
 * SIGTERM ends the script (SIGTERM to its group, or to it); SIGINT is passed on only when the
 * script is in a group of its own (a terminal's reached it already), and a second SIGINT ends
 * it; pnpm's exit ends it too. The listeners keep pnpm's process alive until the script ends:
 * a script that handles the signal and exits cleanly lets the install go on, as under pnpm.
 */
function relaySignals (child: ChildProcess, ownGroup: boolean): () => void {
  let terminated = false
  const send = (signal: NodeJS.Signals): void => {
    if (child.pid == null) return
    try {
      if (ownGroup) process.kill(-child.pid, signal)
      else child.kill(signal)
    } catch {}
  }
  const terminate = (): void => {
    if (terminated) return
    terminated = true
    send('SIGTERM')
  }
  const onInterrupt = (): void => {
    if (ownGroup) send('SIGINT')
    process.once('SIGINT', terminate)
  }
  process.once('SIGTERM', terminate)
  process.once('SIGINT', onInterrupt)
  process.on('exit', terminate)
  return () => {
    process.removeListener('SIGTERM', terminate)
    process.removeListener('SIGINT', onInterrupt)
    process.removeListener('SIGINT', terminate)
    process.removeListener('exit', terminate)
  }
}

/** How long pnpm waits after raising a script's signal on its own process, should it survive it. */
const RAISE_GRACE_MS = 1000

/**
 * How long pnpm's runner reads a script's output after its shell exited (from 11.28.1): then it
 * stops reading, so that a process the script left running with the output open (a daemon)
 * does not hold the install.
 */
const OUTPUT_DRAIN_AFTER_EXIT_MS = 1000

/**
 * Runs `script` with `sh -c` (after pnpm's interrupt trap), its output logged line by line as
 * pnpm logs it; rejects with pnpm's error when it fails. A script ended by a signal has pnpm's
 * process take that signal first, as pnpm's runner raises it (stock dies by it, the error
 * unprinted).
 */
function runScript (pkg: ScriptPackage, stage: string, script: string, wd: string, env: Record<string, string>, ctx: BuildContext): Promise<void> {
  const ownGroup = !hasTerminal()
  const owner = ctx.unsafePerm ? {} : { uid: process.getuid!(), gid: process.getgid!() }
  const shell = ctx.scriptShell ?? 'sh'
  const inherit = ctx.stdio === 'inherit'
  const child = spawn(shell, ['-c', shellBody(shell, script)], { cwd: wd, env, detached: ownGroup, stdio: inherit ? 'inherit' : ['ignore', 'pipe', 'pipe'], ...owner })
  const output = scriptOutput(stage, wd, ctx)
  // Output still open when the shell exits is read for a while, then cut (a line it leaves
  // unfinished is never logged, as pnpm's line reader never sees the stream end).
  let cut = false
  if (!inherit) {
    output.read('stdout', child.stdout!)
    output.read('stderr', child.stderr!)
    child.once('exit', () => {
      const drain = setTimeout(() => {
        cut = true
        child.stdout!.destroy()
        child.stderr!.destroy()
      }, OUTPUT_DRAIN_AFTER_EXIT_MS)
      child.once('close', () => clearTimeout(drain))
    })
  }
  const stopRelaying = relaySignals(child, ownGroup)
  return new Promise((resolve, reject) => {
    let ended = false
    const done = (err?: Error): void => {
      if (ended) return
      ended = true
      stopRelaying()
      if (err == null) resolve()
      else reject(err)
    }
    child.on('error', (err) => done(new LifecycleError(pkg, stage, script, err.message, output.kept(), errorEnd(err))))
    child.on('close', (code, signal) => {
      if (!cut) output.end()
      // No end is logged for it either: pnpm's runner never sees the shell close.
      if (code === COMMAND_NOT_FOUND) {
        done(new LifecycleError(pkg, stage, script, 'spawn ENOENT', output.kept(), commandNotFound(shell)))
        return
      }
      // pnpm logs no end of a script whose output it does not read.
      if (!inherit) ctx.lifecycle?.({ depPath: wd, exitCode: code ?? 1, optional: ctx.optional === true, stage, wd })
      if (signal != null) {
        stopRelaying()
        process.kill(process.pid, signal)
        setTimeout(() => done(new LifecycleError(pkg, stage, script, `Command failed with signal "${signal}"`, output.kept(), { signal })), RAISE_GRACE_MS)
      } else if (code !== 0) done(new LifecycleError(pkg, stage, script, `Exit status ${code}`, output.kept(), { errno: code ?? 1 }))
      else done()
    })
  })
}

/** The working directory `@yarnpkg/shell` takes: a portable path, which a POSIX path already is (the native install does not run on Windows). */
type ShellCwd = NonNullable<Parameters<typeof import('@yarnpkg/shell').execute>[2]>['cwd']

/**
 * Runs `script` with pnpm's shell emulator as pnpm's lifecycle runner does (`runEmulated`):
 * `execute` of the `@yarnpkg/shell` it bundles, at the same version, in this process, with the
 * script's environment and pnpm's own stdin; its output into streams pnpm never ends (so a last
 * line without a line break is never logged, as under pnpm); no process group or owner of its
 * own, signals left to the emulator. A non-zero status fails with pnpm's message; an error the
 * emulator throws (a syntax error) fails with its message, and no exit is logged.
 */
async function runEmulated (pkg: ScriptPackage, stage: string, script: string, wd: string, env: Record<string, string>, ctx: BuildContext): Promise<void> {
  const { execute } = await import('@yarnpkg/shell')
  const output = scriptOutput(stage, wd, ctx)
  // Inherited: the emulator writes to this process's own streams.
  const streams = ctx.stdio === 'inherit' ? {} : { stdout: new PassThrough(), stderr: new PassThrough() }
  if (streams.stdout != null) {
    output.read('stdout', streams.stdout)
    output.read('stderr', streams.stderr)
  }
  let code: number
  try {
    code = await execute(script, [], { cwd: wd as ShellCwd, env, ...streams })
  } catch (err) {
    throw new LifecycleError(pkg, stage, script, (err as Error).message, output.kept(), errorEnd(err as NodeJS.ErrnoException))
  }
  if (ctx.stdio !== 'inherit') ctx.lifecycle?.({ depPath: wd, exitCode: code, optional: ctx.optional === true, stage, wd })
  if (code !== 0) throw new LifecycleError(pkg, stage, script, `Exit status ${code}`, output.kept(), { errno: code })
}

/**
 * Runs `stage`'s script of the package or project in `dir` as pnpm's `runLifecycleHook` does,
 * if it has one: announced (a `pnpm:lifecycle` record, or the `$ <script>` line when its output
 * is inherited), with its environment, in its own `node_modules/.tmp` unless `unsafePerm`.
 * Says whether it ran; rejects with pnpm's error when it fails.
 */
export async function runStage (dir: string, manifest: Record<string, unknown> & { scripts?: Record<string, string> }, stage: string, ctx: BuildContext): Promise<boolean> {
  const script = stageScript(manifest, stage, dir)
  if (script == null) return false
  const pkg = scriptPackage(manifest, ctx.ownId === true)
  const env = scriptEnv({ manifest, stage, wd: dir, script, ...ctx })
  if (ctx.stdio === 'inherit') ctx.announce?.(script)
  else ctx.lifecycle?.({ depPath: dir, optional: ctx.optional === true, script, stage, wd: dir })
  if (!ctx.unsafePerm) fs.mkdirSync(path.join(dir, 'node_modules', '.tmp'), { recursive: true })
  await (ctx.shellEmulator === true ? runEmulated : runScript)(pkg, stage, script, dir, env, ctx)
  return true
}

/**
 * Runs the package's `preinstall`, `install` (its own, or `node-gyp rebuild`) and `postinstall`
 * as pnpm does, and says whether pnpm would count the build as having side effects (it then
 * records them): a `preinstall` or `postinstall` field, or an `install` script that ran.
 */
export async function runBuildScripts (pkgDir: string, manifest: Record<string, unknown> & { scripts?: Record<string, string> }, ctx: BuildContext): Promise<boolean> {
  const scripts = manifest.scripts ?? {}
  if (scripts.preinstall) await runStage(pkgDir, manifest, 'preinstall', ctx)
  const installed = await runStage(pkgDir, manifest, 'install', ctx)
  if (scripts.postinstall) await runStage(pkgDir, manifest, 'postinstall', ctx)
  return scripts.preinstall != null || installed || scripts.postinstall != null
}
