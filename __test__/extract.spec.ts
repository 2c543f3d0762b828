/**
 * Byte-identity with pnpm 11: every committed real tarball is extracted once by pnpm's own
 * `@pnpm/worker` and once by `@cas/native`, into two fresh stores, and the stores, results and
 * index rows must match.
 */
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex, packForStorage } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { freshStoreDir, snapshotBlobs, tarballFixtures, withoutCheckedAt } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'

const fixtures = tarballFixtures()

type Outcome = Awaited<ReturnType<typeof pnpm.addFilesFromTarball>>

const pnpmStore = freshStoreDir('pnpm')
const casStore = freshStoreDir('cas')
const pnpmResults = new Map<string, Outcome>()
const casResults = new Map<string, cas.AddFilesFromTarballResult>()
let pnpmIndex: StoreIndex
let casIndexReader: StoreIndex

beforeAll(async () => {
  pnpmIndex = new StoreIndex(pnpmStore)
  await Promise.all(fixtures.map(async (f) => {
    pnpmResults.set(f.key, await pnpm.addFilesFromTarball({
      buffer: f.buffer, storeDir: pnpmStore, filesIndexFile: f.key, integrity: f.integrity, storeIndex: pnpmIndex, url: f.file,
    }))
  }))
  pnpmIndex.flush()
  await Promise.all(fixtures.map(async (f) => {
    casResults.set(f.key, await cas.addFilesFromTarball({
      buffer: f.buffer, storeDir: casStore, filesIndexFile: f.key, integrity: f.integrity, url: f.file,
    }))
  }))
  casIndexReader = new StoreIndex(casStore)
}, 120_000)

afterAll(async () => {
  pnpmIndex?.close()
  casIndexReader?.close()
  await pnpm.finishWorkers()
})

describe('the corpus', () => {
  it('covers what the byte-identity test must cover', () => {
    const covered = new Set(fixtures.flatMap((f) => f.covers))
    for (const need of ['executable', 'pax-long-path', 'gnu-longlink', 'duplicate-entry', 'no-package-json', 'install-script', 'over-1000-files']) {
      expect(covered, need).toContain(need)
    }
  })
})

describe.each(fixtures.map((f) => [`${f.name}@${f.version}`, f] as const))('%s', (_, f) => {
  it('returns what pnpm returns', () => {
    const ours = casResults.get(f.key)!
    const theirs = pnpmResults.get(f.key)!
    const relative = (m: Map<string, string>, storeDir: string) =>
      [...m].map(([k, v]) => [k, path.relative(storeDir, v)])
    expect(relative(ours.filesMap, casStore)).toEqual(relative(theirs.filesMap, pnpmStore))
    expect(ours.manifest).toEqual(theirs.manifest)
    expect(ours.requiresBuild).toBe(theirs.requiresBuild)
    expect(ours.integrity).toBe(theirs.integrity)
  })

  it('writes an index row pnpm decodes to the same value, byte for byte but for checkedAt', () => {
    const ours = casIndexReader.get(f.key) as any
    const theirs = pnpmIndex.get(f.key) as any
    expect(ours).toBeDefined()
    expect(withoutCheckedAt(ours)).toEqual(withoutCheckedAt(theirs))
    expect(Buffer.from(packForStorage(withoutCheckedAt(ours))))
      .toEqual(Buffer.from(packForStorage(withoutCheckedAt(theirs))))
    // Our stored bytes are exactly what pnpm's packer makes of the value they decode to.
    expect(Buffer.from(casIndexReader.getRaw(f.key)!)).toEqual(Buffer.from(packForStorage(ours)))
  })
})

describe('the store', () => {
  it('holds the same blobs with the same bytes and modes', () => {
    const ours = snapshotBlobs(casStore)
    const theirs = snapshotBlobs(pnpmStore)
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort())
    for (const [rel, blob] of theirs) {
      const mine = ours.get(rel)!
      expect(mine.mode, rel).toBe(blob.mode)
      expect(mine.bytes.equals(blob.bytes), rel).toBe(true)
    }
  })
})

describe('a root binding.gyp that the manifest opts out of (gypfile: false)', () => {
  it('without compat, the row @pnpm/worker 1100.x writes: gypfile neither kept nor read (pnpm 11.28\'s worker reads it: pnpm-worker-protocol.spec.ts)', async () => {
    const buffer = tgz([
      { name: 'package/package.json', content: JSON.stringify({ name: 'gyp-off', version: '1.0.0', gypfile: false }) },
      { name: 'package/binding.gyp', content: '{"targets":[]}' },
    ])
    const key = 'gyp-off\tgyp-off@1.0.0'
    const theirs = await pnpm.addFilesFromTarball({ buffer, storeDir: pnpmStore, filesIndexFile: key, storeIndex: pnpmIndex })
    pnpmIndex.flush()
    const ours = await cas.addFilesFromTarball({ buffer, storeDir: casStore, filesIndexFile: key })
    expect(ours.requiresBuild).toBe(theirs.requiresBuild)
    expect(ours.manifest).toEqual(theirs.manifest)
    expect(withoutCheckedAt(casIndexReader.get(key) as any)).toEqual(withoutCheckedAt(pnpmIndex.get(key) as any))
    expect(ours.requiresBuild).toBe(true)
  })
})
