/**
 * Several installs on one store at once: four processes extract overlapping sets of tarballs
 * (every tarball by three of them) while two more batch-read the index with integrity checks.
 * No process fails (SQLITE_BUSY is waited out, blob races are settled by exclusive creation),
 * every row the readers see is complete, and afterwards every row is there and verifies. Run once
 * with four @cas/native writers and once with pnpm 11's own worker as one of the four.
 */
import fs from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { extractionTarballs, startChild, writeJob, type Child, type JobTarball } from './helpers/processes.js'
import { freshStoreDir } from './helpers/stores.js'
import { verifyStore } from './helpers/verify-store.mjs'

const WRITERS = 4
const READERS = 2

describe('four writers and two readers on one store', () => {
  // One set of generated tarballs for both runs; each run gets its own store.
  let tarballs: JobTarball[]
  let keys: string[]
  let keysFile: string
  beforeAll(() => {
    tarballs = extractionTarballs(40)
    keys = tarballs.map((t) => t.key)
    keysFile = path.join(path.dirname(tarballs[0].file), 'keys.json')
    fs.writeFileSync(keysFile, JSON.stringify(keys))
  })
  for (const withPnpm of [false, true]) {
    it(withPnpm ? 'with pnpm 11 as one of the writers' : 'all of them @cas/native', async () => {
      const storeDir = freshStoreDir('multi')

      const readers: Child[] = Array.from({ length: READERS }, () => startChild('store-reader.mjs', [storeDir, keysFile]))
      await Promise.all(readers.map((r) => r.ready))
      const writers = Array.from({ length: WRITERS }, (_, w) => {
        // Writer w skips every fourth tarball from offset w; odd writers go backwards, so the
        // same tarballs are in flight in different processes at the same time.
        const mine = tarballs.filter((_, i) => i % WRITERS !== w)
        if (w % 2 === 1) mine.reverse()
        const script = withPnpm && w === 0 ? 'pnpm-extract-child.mjs' : 'extract-child.mjs'
        return startChild(script, [storeDir, writeJob(mine, `writer-${w}`)])
      })
      expect(await Promise.all(writers.map((w) => w.exit))).toEqual(Array(WRITERS).fill(0))

      for (const r of readers) r.process.send('stop')
      expect(await Promise.all(readers.map((r) => r.exit))).toEqual(Array(READERS).fill(0))
      for (const r of readers) {
        const { batches, final } = r.lastMessage()
        expect(batches).toBeGreaterThan(0)
        expect(final).toBe(keys.length)
      }
      const report = verifyStore(storeDir)
      expect(report.problems).toEqual([])
      expect(report.keys.sort()).toEqual([...keys].sort())
      console.log(`${withPnpm ? 'pnpm + 3 cas' : '4 cas'} writers, ${READERS} readers: ${readers.map((r) => `${r.lastMessage().batches} batches/${r.lastMessage().hits} rows read`).join(', ')} during the writes; ${report.rows} rows and ${report.blobs} blobs verified`)
    }, 120_000)
  }
})
