/** Child processes of the crash-safety and multi-process suites, and the extraction jobs they run. */
import { fork, type ChildProcess } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { freshDir, tarballFixtures } from './stores.js'
import { tgz } from './tar.js'

export interface Child {
  process: ChildProcess
  /** Resolves when the child says `ready` (the moment its work starts). */
  ready: Promise<void>
  /** Resolves with the exit code, or the signal's name when killed. */
  exit: Promise<number | string | null>
  stdout: () => string
  /** The last IPC message other than `ready`. */
  lastMessage: () => any
}

export function startChild (script: string, args: string[]): Child {
  const child = fork(path.join(import.meta.dirname, script), args, { stdio: ['ignore', 'pipe', 'inherit', 'ipc'], execArgv: ['--no-warnings'] })
  let out = ''
  let last: any
  child.stdout!.on('data', (d) => { out += d })
  const exit = new Promise<number | string | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)))
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (m: any) => { if (m?.ready === true) resolve(); else last = m })
    void exit.then((how) => reject(new Error(`${script} ended (${how}) before it was ready`)))
  })
  return { process: child, ready, exit, stdout: () => out, lastMessage: () => last }
}

/** Runs a child to its end; with `killAfterMs`, SIGKILLs it that long after it said `ready`. */
export async function runChild (script: string, args: string[], killAfterMs?: number): Promise<Child & { readyToExitMs: number }> {
  const child = startChild(script, args)
  await child.ready
  const readyAt = performance.now()
  if (killAfterMs != null) setTimeout(() => child.process.kill('SIGKILL'), killAfterMs)
  await child.exit
  return { ...child, readyToExitMs: performance.now() - readyAt }
}

export interface JobTarball {
  file: string
  key: string
  integrity: string
}

/**
 * The committed fixtures plus `generated` packages of 100 files of random bytes each (fresh
 * blobs, so the work is mostly file creation), written to a new directory.
 */
export function extractionTarballs (generated: number): JobTarball[] {
  const dir = freshDir('extract-job')
  const tarballs = tarballFixtures().map((f, i) => ({ file: path.join(dir, `fixture-${i}.tgz`), key: f.key, integrity: f.integrity, buffer: f.buffer }))
  for (let p = 0; p < generated; p++) {
    const files = Array.from({ length: 100 }, (_, i) => ({ name: `package/lib/f${i}.js`, content: crypto.randomBytes(512 + i * 64), mode: i % 10 === 0 ? 0o755 : 0o644 }))
    const buffer = tgz([{ name: 'package/package.json', content: JSON.stringify({ name: `gen-${p}`, version: '1.0.0' }) }, ...files])
    const integrity = `sha512-${crypto.createHash('sha512').update(buffer).digest('base64')}`
    tarballs.push({ file: path.join(dir, `gen-${p}.tgz`), key: `${integrity}\tgen-${p}@1.0.0`, integrity, buffer })
  }
  for (const t of tarballs) fs.writeFileSync(t.file, t.buffer)
  return tarballs.map(({ file, key, integrity }) => ({ file, key, integrity }))
}

/** Writes a job file for extract-child.mjs / pnpm-extract-child.mjs and returns its path. */
export function writeJob (tarballs: JobTarball[], label: string): string {
  const job = path.join(path.dirname(tarballs[0].file), `${label}.json`)
  fs.writeFileSync(job, JSON.stringify(tarballs))
  return job
}
