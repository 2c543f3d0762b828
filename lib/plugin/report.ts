/**
 * What a user sees of the native install, through pnpm's own reporter where the plugin can
 * reach it. pnpm 11 runs `hooks.updateConfig` (where the native install runs) before it starts
 * its reporter, and logs with bole, whose outputs live on a process global (`$$bole`): a
 * record written to those outputs now is what pnpm's loggers would have written, and pnpm's
 * reporter renders it once it starts, after the config dependencies' lines, as if pnpm's own
 * install had logged it. So after a native install, pnpm prints its usual summary (the
 * packages added, where the store and the virtual store are, the progress counts, the direct
 * dependencies) from the plugin's records, plus one line that says the plugin did it. Each
 * `--reporter` does with them what it does with pnpm's:
 *
 * - `append-only`: rendered by pnpm's reporter (its log level applies) from bole's buffer.
 * - `default`: the same, but this reporter drops what was logged before it started (a listener
 *   of its own takes the buffer first: pnpm's own config-dependency lines are lost the same
 *   way), so the records wait until pnpm has started it (`whenReporterRuns`). Under a release
 *   whose reporter redraws by newlines (11.8, 11.9) the plugin's messages are broken into rows
 *   that fit the terminal (`pnpmLog`).
 * - `ndjson`: pnpm adds stdout to bole's outputs only when its reporter starts, so the records
 *   of a hook would be lost: they are written to stdout here, as bole writes them.
 * - `silent` (or `--loglevel silent`, `--json`, `--parseable`): nothing.
 *
 * Live progress cannot go through pnpm's reporter (it is not running yet): while a long
 * native install runs, a progress line in pnpm's form is written to stdout directly,
 * throttled as pnpm throttles it (`ProgressLine`).
 */
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { PLUGIN_NAME } from './config-dependency.js'
import { whyNot } from './why-not.js'
import { watchProgress, type ProgressKind, type Progressed } from './install/progress.js'
import { reporterRedrawOf } from './install/pnpm-releases.js'
import type { NativeInstallSummary } from './install/native-install.js'

export type ReporterKind = 'default' | 'append-only' | 'ndjson' | 'silent'

/** pnpm's settings that decide how it reports. */
export interface ReportingConfig {
  reporter?: string
  loglevel?: string
  ci?: boolean
  color?: string
  json?: boolean
  parseable?: boolean
  dir?: string
  /** The workspace root's (pnpm's install logs its progress and counts under it). */
  lockfileDir?: string
}

/** pnpm 11's choice of reporter for a command that prints its logs (`getReporterType` in its main). */
export function reporterOf (config: ReportingConfig, stdoutIsTTY = process.stdout.isTTY === true): ReporterKind {
  if (config.json === true || config.parseable === true || config.loglevel === 'silent') return 'silent'
  if (config.reporter === 'default' || config.reporter === 'append-only' || config.reporter === 'ndjson' || config.reporter === 'silent') return config.reporter
  return config.ci === true || !stdoutIsTTY ? 'append-only' : 'default'
}

type Level = 'debug' | 'info' | 'warn'
type LogRecord = Record<string, unknown>

interface BoleOutputs { debug?: NodeJS.WritableStream[], info?: NodeJS.WritableStream[], warn?: NodeJS.WritableStream[] }

/** bole's outputs by level, as pnpm's logger set them up in this process (none: pnpm is elsewhere). */
function boleOutputs (): BoleOutputs | undefined {
  return (globalThis as { $$bole?: BoleOutputs }).$$bole
}

let hostname: string | undefined

/** A record as bole serialises it: its time, host and process first (the host read once, as bole reads it). */
function boleLine (level: Level, name: string, fields: LogRecord, time = Date.now()): string {
  hostname ??= os.hostname()
  return `${JSON.stringify({ time, hostname, pid: process.pid, level, name, ...fields })}\n`
}

/** Whether pnpm has started its reporter (its main marks the process with a symbol of this name). */
function reporterRuns (): boolean {
  return Object.getOwnPropertySymbols(globalThis).some((s) => s.description === 'reporterInitialized')
}

/** How long records wait for pnpm's reporter before they are dropped (it does not start for every command). */
const REPORTER_WAIT_MS = 60_000

/**
 * Runs `then` once pnpm's reporter listens: when pnpm has marked it started, after the timer
 * its log streams subscribe on (pnpm's reporter attaches them on the next timer tick).
 */
function whenReporterRuns (then: () => void): void {
  const since = Date.now()
  const poll = (): void => {
    if (reporterRuns()) setTimeout(then, 0)
    else if (Date.now() - since < REPORTER_WAIT_MS) setTimeout(poll, 1).unref()
  }
  poll()
}

/**
 * Watches pnpm's supply-chain check of the lockfile from now on (its `pnpm:lockfile-verification`
 * records, through bole's debug outputs): `ended` resolves at once when none has started, else
 * once it has ended, as pnpm's build step awaits it, with the status of its last record (pnpm's
 * `verifyCandidates` ends `done` or `failed`, and its recorded verdict says `cached` without
 * starting; `undefined`: nothing logged); `stop` stops watching.
 */
export function watchLockfileVerification (): { ended: () => Promise<string | undefined>, stop: () => void } {
  const outputs = boleOutputs()?.debug
  let status: string | undefined
  let onEnd: (() => void) | undefined
  const watcher = new Writable({
    objectMode: true,
    write (record: unknown, _encoding, callback) {
      try {
        const logged = (typeof record === 'object' && !Buffer.isBuffer(record) ? record : JSON.parse(String(record))) as { name?: string, status?: string }
        if (logged.name === 'pnpm:lockfile-verification') {
          status = logged.status
          if (status !== 'started') onEnd?.()
        }
      } catch {}
      callback()
    },
  })
  outputs?.push(watcher)
  return {
    ended: async () => {
      if (status === 'started') await new Promise<void>((resolve) => { onEnd = resolve })
      return status
    },
    stop: () => { if (outputs?.includes(watcher) === true) outputs.splice(outputs.indexOf(watcher), 1) },
  }
}

/** Records held back while the native install runs (`holdRecords`), in order, to be sent at `releaseRecords`. */
let held: Array<() => void> | undefined

/**
 * Holds every record written from now on until `releaseRecords`: what the native install logs
 * (its builds' lines) is shown after what has to come before it, once it is known how the
 * install ends.
 */
export function holdRecords (): void {
  held ??= []
}

/** Drops the records held back: what the install would have shown, had it ended as it was to. */
export function dropRecords (): void {
  held = undefined
}

/** Sends what `before` writes, then the records held back (or, where `before` calls `flush`, there). */
export function releaseRecords (before?: (flush: () => void) => void): void {
  const records = held ?? []
  held = undefined
  const flush = (): void => {
    for (const send of records.splice(0)) send()
  }
  try {
    before?.(flush)
  } finally {
    flush()
  }
}

/** Records kept back until pnpm's command logs its scope (`deferUntilPnpmScope`), in order. */
let untilScope: Array<() => void> | undefined

/**
 * Keeps every record written from now on back until pnpm's own command logs its scope, then
 * sends them at once (from within that log call, before pnpm logs anything else): after the
 * hook pnpm reads the projects' manifests and warns of the engines they do not meet, then logs
 * its scope, then installs, so the native install's records come after those warnings, where
 * stock's install logs its own. For the reporters that render pnpm's log stream (ndjson has its
 * records on stdout as they are written; silent shows nothing).
 */
export function deferUntilPnpmScope (log: PnpmLog): void {
  if (untilScope != null || (log.reporter !== 'append-only' && log.reporter !== 'default')) return
  const outputs = boleOutputs()?.debug
  if (outputs == null) return
  const queue: Array<() => void> = untilScope = []
  const watcher = new Writable({
    objectMode: true,
    write (record: unknown, _encoding, callback) {
      let name: string | undefined
      try {
        name = ((typeof record === 'object' && !Buffer.isBuffer(record) ? record : JSON.parse(String(record))) as { name?: string }).name
      } catch {}
      if (name === 'pnpm:scope' && untilScope === queue) {
        // Not out of bole's outputs while bole goes through them (it reads them by index).
        setImmediate(() => { if (outputs.includes(watcher)) outputs.splice(outputs.indexOf(watcher), 1) })
        untilScope = undefined
        for (const send of queue.splice(0)) send()
      }
      callback()
    },
  })
  outputs.push(watcher)
}

/** What pnpm's reporter writes before a warning's message (its `formatWarn`, colors aside). */
const WARN_TAG = '[WARN] '

/**
 * `text` broken at spaces into rows of at most `width` characters (a longer word cut at the
 * width), its own line breaks kept: a message that no terminal of that width wraps.
 */
export function fitRows (text: string, width: number): string {
  return text.split('\n').flatMap((line) => rowsOf(line, Math.max(1, width))).join('\n')
}

function rowsOf (line: string, width: number): string[] {
  const rows: string[] = []
  let row: string | undefined
  for (const word of line.split(' ')) {
    if (row != null && [...row].length + 1 + [...word].length <= width) {
      row += ` ${word}`
      continue
    }
    if (row != null) rows.push(row)
    let rest = [...word]
    for (; rest.length > width; rest = rest.slice(width)) rows.push(rest.slice(0, width).join(''))
    row = rest.join('')
  }
  rows.push(row ?? '')
  return rows
}

/** Where pnpm's log records go from here, for one `--reporter`. */
export class PnpmLog {
  private pending: Array<() => void> | undefined

  /** `rowWidth`: the default reporter's messages are broken into rows this wide (`fitRows`). */
  constructor (readonly reporter: ReporterKind, private readonly out: NodeJS.WritableStream = process.stdout, private readonly rowWidth?: number) {}

  /** Runs `send` when pnpm's reporter can take it (at once, but for the default reporter before it runs). */
  private whenReady (send: () => void): void {
    if (this.reporter !== 'default' || reporterRuns()) {
      send()
      return
    }
    if (this.pending == null) {
      const pending: Array<() => void> = this.pending = []
      whenReporterRuns(() => { for (const f of pending) f() })
    }
    this.pending.push(send)
  }

  /**
   * Logs as pnpm's logger `name` (`pnpm:stats`, `pnpm:global`, …) at `level`, at `time` (a held
   * record keeps the time it was logged at: pnpm's reporter shows how long a script took from it).
   */
  write (level: Level, name: string, fields: LogRecord, time = Date.now()): void {
    if (this.reporter === 'silent') return
    if (held != null) {
      held.push(() => this.write(level, name, fields, time))
      return
    }
    if (untilScope != null) {
      untilScope.push(() => this.write(level, name, fields, time))
      return
    }
    if (this.reporter === 'ndjson') {
      this.out.write(boleLine(level, name, fields, time))
      return
    }
    const outputs = boleOutputs()?.[level]
    if (outputs == null) {
      // No pnpm logger in this process: its messages as plain lines, the rest has no reader.
      if (typeof fields.message === 'string') this.out.write(`${fields.message}\n`)
      return
    }
    const line = boleLine(level, name, this.fitted(level, fields), time)
    this.whenReady(() => {
      for (const stream of outputs) {
        const objectMode = (stream as { _writableState?: { objectMode?: boolean } })._writableState?.objectMode === true
        stream.write(objectMode ? JSON.parse(line) : Buffer.from(line))
      }
    })
  }

  /** `fields` with their message in rows of `rowWidth` (less the tag the reporter puts before a warning). */
  private fitted (level: Level, fields: LogRecord): LogRecord {
    if (this.rowWidth == null || this.reporter !== 'default' || typeof fields.message !== 'string') return fields
    return { ...fields, message: fitRows(fields.message, this.rowWidth - (level === 'warn' ? WARN_TAG.length : 0)) }
  }

  /** A line pnpm's reporter prints as it is (`routine`: only under `--loglevel debug`). */
  say (message: string, routine = false): void {
    this.write(routine ? 'debug' : 'info', routine ? 'pnpm' : 'pnpm:global', { message })
  }
}

/**
 * pnpm's log for `config` under pnpm `version`. A release whose default reporter redraws by
 * the newlines it wrote (`reporterRedraw`) goes back too few rows over a line the terminal
 * wrapped, and every frame after it leaves the lines above it on the screen once more (pnpm's
 * own lines are short; the plugin's are not): there its messages are broken into rows of the
 * width pnpm formats to (its `outputMaxWidth`: the terminal's columns less 2, else 80).
 */
export function pnpmLog (config: ReportingConfig, version: string | undefined): PnpmLog {
  const reporter = reporterOf(config)
  if (reporter !== 'default' || reporterRedrawOf(version) !== 'newlines') return new PnpmLog(reporter)
  const columns = process.stdout.columns
  return new PnpmLog(reporter, process.stdout, columns != null && columns > 2 ? columns - 2 : 80)
}

/** pnpm's way of writing a duration (pretty-ms: `870ms`, `1.2s`). */
export function formatMs (ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`
  return `${(ms / 1000).toFixed(1).replace(/\.0$/, '')}s`
}

interface Counts { resolved: number, reused: number, downloaded: number, added: number }

/** pnpm's progress line (its reporter's `Progress: resolved …` with the same four counts). */
export function progressText (c: Counts, done = false, color = false): string {
  const hl = (n: number): string => color ? `\u001b[96m${n}\u001b[39m` : String(n)
  return `Progress: resolved ${hl(c.resolved)}, reused ${hl(c.reused)}, downloaded ${hl(c.downloaded)}, added ${hl(c.added)}${done ? ', done' : ''}`
}

/**
 * The progress line while pnpm's reporter is not running yet, in its form and at its pace
 * (`default`: one line redrawn at most every 200 ms and erased at the end, since pnpm's
 * reporter then prints the final counts; `append-only`: a line at most every second). The
 * first one waits a whole interval, so an install that ends sooner prints none: pnpm's
 * summary says it all then.
 */
export class ProgressLine {
  private readonly interval: number
  private last = 0
  private timer: NodeJS.Timeout | undefined
  private shown = false

  constructor (private readonly reporter: 'default' | 'append-only', private readonly counts: Counts, private readonly opts: { out?: NodeJS.WritableStream, color?: boolean, now?: () => number, zoom?: string } = {}) {
    this.interval = reporter === 'default' ? 200 : 1000
    this.last = this.now()
    this.schedule()
  }

  private now (): number { return this.opts.now?.() ?? Date.now() }
  private get out (): NodeJS.WritableStream { return this.opts.out ?? process.stdout }

  /** The counts changed: shown now if the interval has passed, else at its end. */
  changed (): void {
    if (this.timer == null) this.schedule()
  }

  private schedule (): void {
    this.timer = setTimeout(() => this.draw(), Math.max(0, this.last + this.interval - this.now()))
    this.timer.unref()
  }

  private draw (): void {
    this.timer = undefined
    this.last = this.now()
    const progress = progressText(this.counts, false, this.opts.color === true)
    // Run below the workspace root, pnpm's reporter puts the root's lines under its prefix.
    const text = this.opts.zoom != null ? `${this.opts.zoom.padEnd(PREFIX_MAX_LENGTH)} | ${progress}` : progress
    this.out.write(this.reporter === 'default' ? `\r${text}\u001b[K` : `${text}\n`)
    this.shown = true
  }

  /** No more lines (the one redrawn in place is erased). */
  end (): void {
    if (this.timer != null) clearTimeout(this.timer)
    this.timer = undefined
    if (this.shown && this.reporter === 'default') this.out.write('\r\u001b[K')
  }
}

/** The width pnpm's reporter pads a prefix to (`PREFIX_MAX_LENGTH`). */
const PREFIX_MAX_LENGTH = 40

/**
 * How pnpm's reporter names the directory `prefix` seen from `cwd` (`formatPrefix`): relative,
 * `/`-separated, `.` for itself, and cut to its last 37 characters after a `/` past 40.
 */
export function formatPrefix (cwd: string, prefix: string): string {
  const whole = path.relative(cwd, prefix).split(path.sep).join('/') || '.'
  if (whole.length <= PREFIX_MAX_LENGTH) return whole
  const short = whole.slice(-PREFIX_MAX_LENGTH + 3)
  const at = short.indexOf('/')
  return at <= 0 ? `...${short}` : `...${short.slice(at)}`
}

/**
 * `text` dimmed as pnpm's chalk writes it (its default instance, which decided at pnpm's start
 * from `FORCE_COLOR`, the `--color` flags, and whether stdout is a terminal), or plain.
 */
export function dimmed (text: string): string {
  return chalkColors() ? `\u001b[2m${text}\u001b[22m` : text
}

/** Whether chalk's default instance colors (supports-color for stdout, in short: no Windows or CI rules, which a terminal here makes moot). */
function chalkColors (): boolean {
  const flag = (name: string): boolean => process.argv.includes(`--${name}`)
  let forced: boolean | undefined
  if (['no-color', 'no-colors', 'color=false', 'color=never'].some(flag)) forced = false
  else if (['color', 'colors', 'color=true', 'color=always'].some(flag)) forced = true
  const force = process.env.FORCE_COLOR
  if (force !== undefined) forced = force === 'true' || force === '' || (force !== 'false' && Number.parseInt(force, 10) > 0)
  if (forced === false) return false
  if (forced === true) return true
  return process.stdout.isTTY === true && process.env.TERM !== 'dumb'
}

/** Whether pnpm's reporter would color its values on this stdout. */
function colored (config: ReportingConfig): boolean {
  if (config.color === 'always') return true
  if (config.color === 'never' || process.env.FORCE_COLOR === '0' || 'NO_COLOR' in process.env) return false
  return process.stdout.isTTY === true && process.stdout.hasColors?.() === true
}

/** Where pnpm's install logs its counts, stages, progress and summary: the workspace root, wherever it runs. */
const rootPrefix = (config: { dir?: string, lockfileDir?: string }): string | undefined => config.lockfileDir ?? config.dir

/** What the native install did, as `showProgress` counted it: pnpm's four counts and the import method used. */
export interface Progress extends Counts { method?: string }

/** Shows the progress of the native install about to run; call `stop` when it is over. */
export function showProgress (config: ReportingConfig, log: PnpmLog): { counts: Progress, stop: () => void } {
  const counts: Progress = { resolved: 0, reused: 0, downloaded: 0, added: 0 }
  const quiet = config.loglevel === 'warn' || config.loglevel === 'error'
  // pnpm's install logs its progress under the workspace root, wherever it runs.
  const prefix = rootPrefix(config)
  const zoom = prefix != null && config.dir != null && path.resolve(prefix) !== path.resolve(config.dir) ? formatPrefix(config.dir, prefix) : undefined
  const line = !quiet && (log.reporter === 'default' || log.reporter === 'append-only') ? new ProgressLine(log.reporter, counts, { color: colored(config), zoom }) : undefined
  const unwatch = watchProgress((kind, packages) => {
    counts[kind] += packages.length
    for (const p of packages) if ('to' in p) counts.method ??= p.method
    // ndjson: pnpm's own records, as they happen.
    if (log.reporter === 'ndjson') for (const p of packages) log.write('debug', 'pnpm:progress', progressRecord(kind, p, prefix))
    line?.changed()
  })
  return { counts, stop: () => { unwatch(); line?.end() } }
}

/** pnpm's progress statuses, by the counts they make. */
const STATUS: Record<ProgressKind, string> = { resolved: 'resolved', reused: 'found_in_store', downloaded: 'fetched', added: 'imported' }

/** pnpm's progress record of a package: by its id, or once imported, where to and how. */
function progressRecord (kind: ProgressKind, p: Progressed, requester: string | undefined): LogRecord {
  return 'to' in p ? { method: p.method, requester, status: STATUS[kind], to: p.to } : { packageId: p.packageId, requester, status: STATUS[kind] }
}

/**
 * After a native install: pnpm's summary records (what its own frozen install logs), the
 * builds' lines (`buildLines` sends them) before its summary as pnpm's come, then the plugin's
 * line. `counts`: what `showProgress` counted (ndjson has had the progress records).
 */
export function reportInstalled (summary: NativeInstallSummary, counts: Progress, config: ReportingConfig & { dir: string, lockfileDir?: string }, log: PnpmLog, buildLines: () => void = () => {}): void {
  const took = `${summary.packages} packages natively in ${formatMs(summary.ms)}`
  // pnpm's command logs its scope before it installs; its reporter shows the first record only
  // (ndjson: pnpm's own record follows, as stock's does).
  const workspace = summary.layout!.workspace
  if (workspace != null && log.reporter !== 'ndjson') log.write('debug', 'pnpm:scope', { selected: workspace.projects, total: workspace.projects, workspacePrefix: workspace.dir })
  reportLayout(summary, counts, config, log, summary.warnings, summary.linkWarnings?.afterImport)
  // pnpm links the projects' dependencies, then builds, then logs its summary (under the root;
  // its reporter lists the dependencies of the project it runs in).
  buildLines()
  log.write('debug', 'pnpm:summary', { prefix: rootPrefix(config) })
  // Its lifecycle stage links the projects' commands again, after the summary.
  for (const message of summary.linkWarnings?.afterSummary ?? []) log.write('warn', 'pnpm:global', { message })
  // With the project's scripts, pnpm's own install runs next, finds every package in place and
  // runs them; its reporter has the summary from these records already (it takes the first).
  log.say(summary.pnpmRunsScripts != null
    ? `${PLUGIN_NAME} installed ${took}; pnpm's own install then finds them in place and runs the project's ${summary.pnpmRunsScripts.join(', ')}`
    : summary.projectScripts != null
      ? `${PLUGIN_NAME} installed ${took}; now the project's ${summary.projectScripts.shown.join(', ')}, run as pnpm runs them`
      : `${PLUGIN_NAME} installed ${took}; pnpm then finds node_modules complete, hence "Already up to date"`)
}

/**
 * After a native install a required build ended (`summary.failed`), from pnpm's install (its
 * supply-chain check done): what pnpm's frozen install logs up to its build step, before the
 * builds' own lines (held back until then) and its error.
 */
export function reportBuildFailure (summary: NativeInstallSummary, counts: Progress, config: ReportingConfig & { dir: string, lockfileDir: string }, log: PnpmLog): void {
  reportLayout(summary, counts, config, log)
}

/** The record pnpm's lockfile check makes of its check (`pnpm:lockfile-verification`), with `status`. */
function verificationRecord (status: string, checkLog: NonNullable<NativeInstallSummary['checkLog']>): LogRecord {
  const { lockfilePath } = checkLog
  if (checkLog.status === 'cached') return { status, verifiedAt: checkLog.verifiedAt, lockfilePath }
  return { status, entries: checkLog.entries, ...(status === 'done' ? { elapsedMs: checkLog.elapsedMs } : {}), lockfilePath }
}

/**
 * pnpm's frozen install's records from its lockfile check (`summary.checkLog`, if the native
 * install made it in pnpm's place) to the end of its import (the store, the counts, the import
 * method where the release logs it), after the `warnings` of its supply-chain check (its
 * `globalWarn`), and then the `linkWarnings` it gives linking the projects' commands.
 */
function reportLayout (summary: NativeInstallSummary, counts: Progress, config: ReportingConfig & { dir: string, lockfileDir?: string }, log: PnpmLog, warnings: string[] = [], linkWarnings: string[] = []): void {
  // The counts, stages and progress under the workspace root, as pnpm's install logs them (its
  // reporter shows them under that prefix where pnpm runs in a project below it).
  const root = rootPrefix(config)
  const layout = summary.layout!
  // pnpm's lockfile check logs itself as it starts, before pnpm says its install goes from the
  // lockfile; a check without the registry ends at once, one with it while pnpm imports. (Where
  // pnpm's own install runs the project's scripts after the layout, it says both itself.)
  const { checkLog } = summary
  const verification = (status: string): void => { if (checkLog != null) log.write('debug', 'pnpm:lockfile-verification', verificationRecord(status, checkLog)) }
  verification(checkLog?.status === 'cached' ? 'cached' : 'started')
  if (checkLog?.status === 'done' && !checkLog.asked) verification('done')
  if (summary.pnpmRunsScripts == null) log.write('info', 'pnpm', { message: 'Lockfile is up to date, resolution step is skipped', prefix: root })
  // Every project's manifest as read; pnpm's reporter lists a project's direct dependencies once
  // it has that and the manifest as its install used it (logged as it links them).
  for (const project of layout.projects) log.write('debug', 'pnpm:package-manifest', { initial: project.manifest, prefix: project.dir })
  log.write('debug', 'pnpm:context', { currentLockfileExists: false, storeDir: layout.storeDir, virtualStoreDir: layout.virtualStoreDir })
  // In the order pnpm's own frozen install logs them (its reporter prints in that order).
  const progress = (kinds: ProgressKind[]): void => {
    if (log.reporter === 'ndjson') return
    for (const kind of kinds) for (let i = 0; i < counts[kind]; i++) log.write('debug', 'pnpm:progress', { requester: root, status: STATUS[kind] })
  }
  for (const message of warnings) log.write('warn', 'pnpm:global', { message })
  log.write('debug', 'pnpm:stats', { prefix: root, removed: 0 })
  log.write('debug', 'pnpm:stage', { prefix: root, stage: 'importing_started' })
  progress(['resolved'])
  log.write('debug', 'pnpm:stats', { added: summary.packages, prefix: root })
  if (checkLog?.status === 'done' && checkLog.asked) verification('done')
  progress(['reused', 'downloaded', 'added'])
  // (Releases before 11.18.0 log it in their workers only: their reporter prints no store lines.)
  if (counts.method != null && layout.importMethodLogged) log.write('debug', 'pnpm:package-import-method', { method: counts.method })
  log.write('debug', 'pnpm:stage', { prefix: root, stage: 'importing_done' })
  for (const message of linkWarnings) log.write('warn', 'pnpm:global', { message })
  // Then it links every project's direct dependencies (before any build).
  for (const project of layout.projects) log.write('debug', 'pnpm:package-manifest', { updated: project.updated, prefix: project.dir })
  for (const project of layout.projects) for (const dep of project.direct) log.write('debug', 'pnpm:root', { added: dep, prefix: project.dir })
}

/** The line that says why an install was left to pnpm, and what would change it. */
export function reportLeftToPnpm (reason: string, log: PnpmLog): void {
  const why = whyNot(reason)
  log.say(`${PLUGIN_NAME} left this install to pnpm: ${why.says}. To install natively: ${why.change}`, why.routine)
}
