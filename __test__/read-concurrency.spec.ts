/**
 * Two processes on one store, as when pnpm 11 and @cas/native (or two installs) share it: one
 * commits rewritten rows in transactions through pnpm's own StoreIndex, the other batch-reads
 * them through @cas/native, both for a few seconds. No error, and no torn or mixed read.
 */
import { fork, type ChildProcess } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { freshStoreDir } from './helpers/stores.js'

const helpers = path.join(import.meta.dirname, 'helpers')

function run (child: ChildProcess): { ready: Promise<void>, done: Promise<any> } {
  let onReady: () => void
  const ready = new Promise<void>((resolve) => { onReady = resolve })
  const done = new Promise((resolve, reject) => {
    let last: any
    child.on('message', (m: any) => { if (m.ready) onReady(); else last = m })
    child.on('error', reject)
    child.on('exit', (code) => code === 0 ? resolve(last) : reject(new Error(`child exited with ${code}`)))
  })
  return { ready, done }
}

describe('a writer process and a batch-reading process on one store', () => {
  it('run side by side without errors or torn reads', async () => {
    const storeDir = freshStoreDir('concurrent')
    const args = [storeDir, '3000', '300']
    const opts = { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] as any, execArgv: ['--no-warnings'] }
    const writer = run(fork(path.join(helpers, 'concurrent-writer.mjs'), args, opts))
    await writer.ready
    const reader = run(fork(path.join(helpers, 'concurrent-reader.mjs'), args, opts))
    const [written, read] = await Promise.all([writer.done, reader.done])
    expect(written.generations).toBeGreaterThan(1)
    expect(read.batches).toBeGreaterThan(1)
    expect(read.hits).toBeGreaterThan(0)
    // The reads really overlapped the writes: the reader saw several generations.
    expect(read.generations).toBeGreaterThan(1)
  }, 30_000)
})
