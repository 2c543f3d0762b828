/**
 * `cas-native-pnpm swap|restore`: the shim, the backup, idempotence both ways, and the refusals
 * (unknown pnpm versions, directories that are not pnpm), and a swapped worker whose @cas/native
 * was removed. On stand-in pnpm package dirs (a package.json and a dist/worker/index.js); the real CLI
 * runs swapped in pnpm-e2e.spec.ts.
 */
import { execFile, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { BACKUP_NAME, restorePnpmWorker, swapPnpmWorker } from '../dist/pnpm-worker/swap.js'
import { pnpmNode, repoDir } from './helpers/pnpm-cli.js'
import { freshDir } from './helpers/stores.js'

const cli = path.join(repoDir, 'dist', 'pnpm-worker', 'cli.js')
const ORIGINAL = '// pnpm\'s own worker\n'

function fakePnpm (version: string, name = 'pnpm'): string {
  const dir = freshDir('fake-pnpm')
  fs.mkdirSync(path.join(dir, 'dist'))
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version, type: 'module' }))
  fs.writeFileSync(path.join(dir, 'dist', 'worker.js'), ORIGINAL)
  return dir
}

async function run (...args: string[]): Promise<{ code: number, stdout: string, stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(pnpmNode, [cli, ...args])
    return { code: 0, stdout, stderr }
  } catch (err: any) {
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}

describe('swap and restore', () => {
  it('swap writes a shim loading dist/pnpm-worker/index.js and keeps the original; twice is the same; restore puts it back; twice is a no-op', () => {
    const dir = fakePnpm('11.28.11')
    const worker = path.join(dir, 'dist', 'worker.js')
    expect(swapPnpmWorker(dir).action).toBe('swapped')
    const shim = fs.readFileSync(worker, 'utf8')
    expect(shim).toContain(JSON.stringify(path.join(repoDir, 'dist', 'pnpm-worker', 'index.js')))
    expect(fs.readFileSync(path.join(dir, 'dist', BACKUP_NAME), 'utf8')).toBe(ORIGINAL)
    // A second swap must not back up the shim over the original.
    expect(swapPnpmWorker(dir).action).toBe('already-swapped')
    expect(fs.readFileSync(path.join(dir, 'dist', BACKUP_NAME), 'utf8')).toBe(ORIGINAL)
    expect(fs.readFileSync(worker, 'utf8')).toBe(shim)
    expect(restorePnpmWorker(dir).action).toBe('restored')
    expect(fs.readFileSync(worker, 'utf8')).toBe(ORIGINAL)
    expect(fs.existsSync(path.join(dir, 'dist', BACKUP_NAME))).toBe(false)
    expect(restorePnpmWorker(dir).action).toBe('not-swapped')
    expect(fs.readFileSync(worker, 'utf8')).toBe(ORIGINAL)
  })

  it.each(['11.27.3', '11.29.0', '10.20.0', '12.0.0'])('refuses pnpm %s (protocol not verified) and changes nothing', (version) => {
    const dir = fakePnpm(version)
    expect(() => swapPnpmWorker(dir)).toThrow(expect.objectContaining({ code: 'ERR_CAS_NATIVE_UNSUPPORTED_PNPM' }))
    expect(fs.readFileSync(path.join(dir, 'dist', 'worker.js'), 'utf8')).toBe(ORIGINAL)
    expect(fs.existsSync(path.join(dir, 'dist', BACKUP_NAME))).toBe(false)
  })

  it('refuses a directory that is not the pnpm package', () => {
    expect(() => swapPnpmWorker(fakePnpm('11.28.11', 'not-pnpm'))).toThrow(expect.objectContaining({ code: 'ERR_CAS_NATIVE_NOT_PNPM' }))
    expect(() => swapPnpmWorker(freshDir('empty'))).toThrow(expect.objectContaining({ code: 'ERR_CAS_NATIVE_NOT_PNPM' }))
  })

  it('a shim without its backup: restore says how to recover instead of guessing', () => {
    const dir = fakePnpm('11.28.11')
    swapPnpmWorker(dir)
    fs.rmSync(path.join(dir, 'dist', BACKUP_NAME))
    expect(() => restorePnpmWorker(dir)).toThrow(expect.objectContaining({ code: 'ERR_CAS_NATIVE_NO_BACKUP' }))
  })
})

describe('the cas-native-pnpm command', () => {
  it('swap and restore: exit 0 and say what they did', async () => {
    const dir = fakePnpm('11.28.0')
    const swapped = await run('swap', dir)
    expect(swapped).toMatchObject({ code: 0 })
    expect(swapped.stdout).toContain('pnpm 11.28.0')
    expect(swapped.stdout).toContain('now loads @cas/native/pnpm-worker')
    const restored = await run('restore', dir)
    expect(restored).toMatchObject({ code: 0 })
    expect(restored.stdout).toContain('restored')
  })

  it('an unsupported pnpm: exit 1 with a clear message', async () => {
    const dir = fakePnpm('11.30.1')
    const result = await run('swap', dir)
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('pnpm 11.30.1')
    expect(result.stderr).toContain('is not supported')
    expect(result.stderr).toContain('11.28.x')
    expect(result.stderr).toContain('Nothing was changed')
  })

  it('bad usage: exit 2 with the usage text', async () => {
    const result = await run('frobnicate')
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('cas-native-pnpm swap <pnpm package dir>')
  })
})

describe('a swapped worker whose @cas/native was removed', () => {
  /** A copy of this package as installed (manifest, loader, binary, dist/), to swap with and then delete. */
  function installedCopy (): string {
    const dir = path.join(freshDir('removable'), 'node_modules', '@cas', 'native')
    fs.mkdirSync(dir, { recursive: true })
    for (const f of ['package.json', 'index.js', 'dist', ...fs.readdirSync(repoDir).filter((f) => f.endsWith('.node'))]) {
      fs.cpSync(path.join(repoDir, f), path.join(dir, f), { recursive: true })
    }
    return dir
  }

  /** A stand-in pnpm whose own worker answers with the file it runs from. */
  function pnpmWithWorker (): string {
    const dir = fakePnpm('11.28.11')
    // eslint-disable-next-line no-template-curly-in-string -- the worker's own source text
    fs.writeFileSync(path.join(dir, 'dist', 'worker.js'), "import { parentPort } from 'node:worker_threads'\nparentPort.postMessage(`pnpm's own worker: ${import.meta.filename}`)\n")
    return dir
  }

  /** Starts `count` workers on `script` at once, as pnpm's pool does: their first messages (or the error) and the process's stderr. */
  function startWorkers (script: string, count: number): { messages: string[] | { error: string }, stderr: string } {
    const code = `
      const { Worker } = require('node:worker_threads')
      Promise.all(Array.from({ length: ${count} }, () => new Promise((resolve, reject) => {
        const w = new Worker(${JSON.stringify(script)})
        w.once('message', (m) => { resolve(m); w.terminate() })
        w.once('error', reject)
      }))).then((m) => console.log(JSON.stringify(m)), (err) => console.log(JSON.stringify({ error: err.message })))
    `
    const r = spawnSync(pnpmNode, ['-e', code], { encoding: 'utf8' })
    return { messages: JSON.parse(r.stdout), stderr: r.stderr }
  }

  it('the next pnpm run puts pnpm\'s own worker back, says so once, and works; later runs are plain pnpm', async () => {
    const native = installedCopy()
    const dir = pnpmWithWorker()
    const worker = path.join(dir, 'dist', 'worker.js')
    const original = fs.readFileSync(worker, 'utf8')
    const swapped = spawnSync(pnpmNode, [path.join(native, 'dist', 'pnpm-worker', 'cli.js'), 'swap', dir], { encoding: 'utf8' })
    expect(swapped.stdout).toContain('now loads @cas/native/pnpm-worker')
    expect(fs.readFileSync(worker, 'utf8')).toContain(JSON.stringify(path.join(native, 'dist', 'pnpm-worker', 'index.js')))
    fs.rmSync(native, { recursive: true })

    const first = startWorkers(worker, 3)
    expect(first.messages).toEqual(Array(3).fill(`pnpm's own worker: ${worker}`))
    const lines = first.stderr.split('\n').filter((l) => l.includes('@cas/native'))
    expect(lines).toEqual([`@cas/native: ${path.join(native, 'dist', 'pnpm-worker', 'index.js')} is gone (the @cas/native that swapped pnpm's worker was removed), so pnpm's own worker is back in place: ${worker}`])
    expect(fs.readFileSync(worker, 'utf8')).toBe(original)
    expect(fs.existsSync(path.join(dir, 'dist', BACKUP_NAME))).toBe(false)

    const later = startWorkers(worker, 1)
    expect(later).toEqual({ messages: [`pnpm's own worker: ${worker}`], stderr: '' })
    expect(restorePnpmWorker(dir).action).toBe('not-swapped')
  })

  it('with neither @cas/native nor the backup left, the worker fails saying to reinstall pnpm', () => {
    const native = installedCopy()
    const dir = pnpmWithWorker()
    spawnSync(pnpmNode, [path.join(native, 'dist', 'pnpm-worker', 'cli.js'), 'swap', dir], { encoding: 'utf8' })
    fs.rmSync(native, { recursive: true })
    fs.rmSync(path.join(dir, 'dist', BACKUP_NAME))
    const { messages } = startWorkers(path.join(dir, 'dist', 'worker.js'), 1)
    expect(messages).toMatchObject({ error: expect.stringMatching(/is gone .*pnpm's own worker .* is missing too: reinstall pnpm$/) })
  })
})
