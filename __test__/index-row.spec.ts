/**
 * The index row as data: a caller that keeps its own StoreIndex (pnpm's worker protocol) gets
 * the row's bytes instead of a write, and they are the bytes we would have stored.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { freshStoreDir, tarballFixtures } from './helpers/stores.js'

const [fixture] = tarballFixtures()
const opened: StoreIndex[] = []
afterAll(() => { for (const i of opened) i.close() })

describe('returnIndexRow / writeIndex', () => {
  it('hands back exactly the stored row bytes', async () => {
    const storeDir = freshStoreDir('row')
    const result = await cas.addFilesFromTarball({ buffer: fixture.buffer, storeDir, filesIndexFile: fixture.key, returnIndexRow: true })
    const index = new StoreIndex(storeDir)
    opened.push(index)
    expect(result.indexRow).toBeInstanceOf(Buffer)
    expect(result.indexRow!.equals(Buffer.from(index.getRaw(fixture.key)!))).toBe(true)
  })

  it('without writeIndex leaves index.db alone, and the bytes work in pnpm\'s StoreIndex', async () => {
    const storeDir = freshStoreDir('nowrite')
    const result = await cas.addFilesFromTarball({
      buffer: fixture.buffer, storeDir, filesIndexFile: fixture.key, writeIndex: false, returnIndexRow: true,
    })
    expect(fs.existsSync(path.join(storeDir, 'index.db'))).toBe(false)
    expect(result.timings.indexMs).toBe(0)
    const index = new StoreIndex(storeDir)
    opened.push(index)
    index.setRawMany([{ key: fixture.key, buffer: result.indexRow! }])
    const row = index.get(fixture.key) as any
    expect([...row.files.keys()]).toEqual([...result.filesMap.keys()])
  })

  it('reports where the call spent its time: its phases, within the call\'s own wall time', async () => {
    const started = performance.now()
    const result = await cas.addFilesFromTarball({ buffer: fixture.buffer, storeDir: freshStoreDir('timings'), filesIndexFile: 'k' })
    const wall = performance.now() - started
    const { queuedMs, inflateMs, hashWriteMs, indexMs, ...rest } = result.timings
    expect(rest).toEqual({})
    // Durations measured inside this call (not, say, since the process started, or in µs): their
    // sum fits in the wall time around it. Both clocks are monotonic.
    expect(queuedMs + inflateMs + hashWriteMs + indexMs).toBeLessThanOrEqual(wall)
    expect(Math.min(queuedMs, inflateMs, hashWriteMs, indexMs)).not.toBeLessThan(0)
    // Measured, not left at 0: blobs were written and the row committed (writeIndex defaults
    // to true; without it indexMs is 0, see above).
    expect(hashWriteMs).toBeGreaterThan(0)
    expect(indexMs).toBeGreaterThan(0)
  })
})
