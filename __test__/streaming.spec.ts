/**
 * Streaming extraction (issue 16): tarballs that inflate past `CAS_NATIVE_STREAM_ABOVE` (32 MiB
 * by default) go through a window instead of one buffer. Here: the padding bomb pnpm 11.28
 * extracts, in a child process whose peak RSS is measured; the streamed and the whole-buffer
 * outcomes of every fixture, deep-equal (each path forced through the variable, which the
 * binding reads per call); and broken streams that leave no row and no partial blob.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { freshDir, freshStoreDir, tarballFixtures, withoutCheckedAt } from './helpers/stores.js'
import { pnpmPackageDir } from './helpers/pnpm-cli.js'
import { extractInChild } from './helpers/extract-in-child.js'
import { ProtocolWorker } from './helpers/protocol-worker.js'
import { extractWith } from './helpers/stream-above.js'
import { tgz } from './helpers/tar.js'
import { verifyStore } from './helpers/verify-store.mjs'

/** An extraction's result and index row, blob paths relative to the store: comparable across stores. */
async function outcome (streamAbove: number, buffer: Buffer, extra: Partial<cas.AddFilesFromTarballOptions> = {}) {
  const storeDir = freshStoreDir(`stream-${streamAbove}`)
  const r: any = await extractWith(streamAbove, { buffer, storeDir, filesIndexFile: 'k', ...extra }).catch((e) => e)
  cas.closeStores()
  if (r instanceof Error) return { code: (r as any).code, message: r.message }
  const index = new StoreIndex(storeDir)
  try {
    return {
      files: [...r.filesMap].map(([k, blob]) => [k, path.relative(storeDir, blob)]),
      manifest: r.manifest,
      requiresBuild: r.requiresBuild,
      integrity: r.integrity,
      row: withoutCheckedAt(index.get('k')),
    }
  } finally {
    index.close()
  }
}

const WHOLE = Number.MAX_SAFE_INTEGER

describe('streamed and whole-buffer extraction agree', () => {
  it.each(tarballFixtures().map((f) => [f.file, f] as const))('%s', async (_, f) => {
    const whole = await outcome(WHOLE, f.buffer, { integrity: f.integrity })
    expect(whole).toHaveProperty('row')
    expect(await outcome(0, f.buffer, { integrity: f.integrity })).toEqual(whole)
    // With a limit of half what the files add up to, both refuse it alike.
    const size = (whole as any).row.files
    const total = [...(size instanceof Map ? size.values() : Object.values(size))].reduce((n: number, i: any) => n + i.size, 0)
    const refused = await outcome(WHOLE, f.buffer, { maxTarballUnpackedSize: Math.floor(total / 2) })
    expect(refused).toMatchObject({ code: 'ERR_PNPM_TARBALL_TOO_LARGE' })
    expect(await outcome(0, f.buffer, { maxTarballUnpackedSize: Math.floor(total / 2) })).toEqual(refused)
  })
})

describe('a broken stream leaves no index row and no partial blob', () => {
  // 600 files of 10 KB of random bytes: several write batches, so blobs land before the break.
  const entries = [{ name: 'package/package.json', content: '{"name":"broken","version":"1.0.0"}' }]
  for (let i = 0; i < 600; i++) entries.push({ name: `package/f${i}`, content: crypto.randomBytes(10_000).toString('base64') })
  const tarball = tgz(entries)
  const damaged = Buffer.from(tarball)
  damaged[Math.floor(damaged.length * 0.8)] ^= 0x55

  it.each([
    ['cut at 80%', tarball.subarray(0, Math.floor(tarball.length * 0.8)), 'ERR_PNPM_Z_BUF_ERROR'],
    ['a byte damaged at 80%', damaged, 'ERR_PNPM_Z_DATA_ERROR'],
  ] as const)('%s', async (_, buffer, code) => {
    const storeDir = freshStoreDir('broken-stream')
    const err: any = await extractWith(0, { buffer, storeDir, filesIndexFile: 'broken' }).catch((e) => e)
    cas.closeStores()
    expect(err.code).toBe(code)
    const report = verifyStore(storeDir)
    expect(report.problems).toEqual([])
    expect(report.rows).toBe(0)
    // Streamed: the files before the break were written, complete, before it was found.
    expect(report.blobs).toBeGreaterThan(0)
    expect(await outcome(WHOLE, buffer)).toEqual(await outcome(0, buffer))
  })
})

/** Writes `buffer` to a tarball writer in 16 KiB chunks, with the stream threshold at `streamAbove`. */
function writeInChunks (streamAbove: number, buffer: Buffer, opts: cas.TarballWriterOptions, end = buffer.length) {
  process.env.CAS_NATIVE_STREAM_ABOVE = String(streamAbove)
  try {
    const writer = cas.createTarballWriter(opts)
    for (let at = 0; at < end; at += 16384) writer.write(buffer.subarray(at, Math.min(at + 16384, end)))
    return writer
  } finally {
    delete process.env.CAS_NATIVE_STREAM_ABOVE
  }
}

describe('createTarballWriter', () => {
  it.each(tarballFixtures().map((f) => [f.file, f] as const))('%s: streamed as written, or whole at the end, as addFilesFromTarball', async (_, f) => {
    const whole = await outcome(WHOLE, f.buffer, { integrity: f.integrity })
    for (const streamAbove of [0, WHOLE]) {
      const storeDir = freshStoreDir('writer')
      const r = await writeInChunks(streamAbove, f.buffer, { storeDir, filesIndexFile: 'k', integrity: f.integrity }).end()
      cas.closeStores()
      const index = new StoreIndex(storeDir)
      expect([...r.filesMap].map(([k, blob]) => [k, path.relative(storeDir, blob)])).toEqual((whole as any).files)
      expect(withoutCheckedAt(index.get('k'))).toEqual((whole as any).row)
      index.close()
    }
  })

  it('checks the integrity over the bytes written: a mismatch writes no row', async () => {
    const f = tarballFixtures()[0]
    const storeDir = freshStoreDir('writer-integrity')
    const wrong = 'sha512-' + crypto.createHash('sha512').update('other').digest('base64')
    const err: any = await writeInChunks(0, f.buffer, { storeDir, filesIndexFile: 'k', integrity: wrong, url: 'https://r/x.tgz' }).end().catch((e) => e)
    cas.closeStores()
    expect(err).toBeInstanceOf(cas.TarballIntegrityError)
    expect(err.code).toBe('ERR_PNPM_TARBALL_INTEGRITY')
    expect(verifyStore(storeDir)).toMatchObject({ rows: 0, problems: [] })
  })

  it('a stream cut short or aborted midway leaves no row and no partial blob', async () => {
    const entries = [{ name: 'package/package.json', content: '{"name":"cut","version":"1.0.0"}' }]
    for (let i = 0; i < 600; i++) entries.push({ name: `package/f${i}`, content: crypto.randomBytes(10_000).toString('base64') })
    const tarball = tgz(entries)
    const cut = Math.floor(tarball.length * 0.8)
    const storeDir = freshStoreDir('writer-cut')
    const err: any = await writeInChunks(0, tarball, { storeDir, filesIndexFile: 'k' }, cut).end().catch((e) => e)
    expect(err.code).toBe('ERR_PNPM_Z_BUF_ERROR')
    // Aborted midway: once the streaming extraction has written some of the files, so that
    // the abort lands while blobs are being written (a partial one would be a problem below).
    const aborted = freshStoreDir('writer-abort')
    const writer = writeInChunks(0, tarball, { storeDir: aborted, filesIndexFile: 'k' }, cut)
    const blobsIn = (dir: string): number => fs.existsSync(path.join(dir, 'files'))
      ? fs.readdirSync(path.join(dir, 'files')).reduce((n, shard) => n + fs.readdirSync(path.join(dir, 'files', shard)).length, 0)
      : 0
    for (let waited = 0; blobsIn(aborted) === 0 && waited < 10_000; waited += 5) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(blobsIn(aborted)).toBeGreaterThan(0)
    writer.abort()
    expect(() => writer.write(tarball)).toThrow(expect.objectContaining({ code: 'ERR_STREAM_WRITE_AFTER_END' }))
    await new Promise((resolve) => setTimeout(resolve, 500))
    cas.closeStores()
    for (const dir of [storeDir, aborted]) {
      const report = verifyStore(dir)
      expect(report.problems).toEqual([])
      expect(report.rows).toBe(0)
      expect(report.blobs).toBeGreaterThan(0)
    }
  })

  it.each([['streamed', 0], ['whole', WHOLE]])('abort() after end() (a caller\'s cleanup) leaves the %s extraction to finish', async (_name, streamAbove) => {
    const f = tarballFixtures().reduce((a, b) => (b.buffer.length > a.buffer.length ? b : a))
    const storeDir = freshStoreDir('writer-end-abort')
    const writer = writeInChunks(streamAbove, f.buffer, { storeDir, filesIndexFile: 'k', integrity: f.integrity })
    const ended = writer.end()
    writer.abort()
    const r = await ended
    cas.closeStores()
    expect(r.filesMap.size).toBe(f.files)
    expect(verifyStore(storeDir)).toMatchObject({ rows: 1, problems: [] })
  })
})

describe('the 5 GiB padding bomb', () => {
  let pnpm11: ProtocolWorker
  const dir = freshDir('padding-bomb')
  const bombFile = path.join(dir, 'bomb.tgz')

  beforeAll(() => {
    // An empty archive (its first block is the end marker) followed by 5 GiB of NULs: 80
    // gzip members of 64 MiB of zeros each, 5.2 MB in all.
    const member = zlib.gzipSync(Buffer.alloc(64 << 20), { level: 9 })
    fs.writeFileSync(bombFile, Buffer.concat(Array.from({ length: 80 }, () => member)))
    fs.mkdirSync(path.join(dir, 'pnpm11'))
    pnpm11 = new ProtocolWorker(path.join(pnpmPackageDir, 'dist', 'worker.js'))
  })

  afterAll(async () => {
    await pnpm11.worker.terminate()
  })

  it('extracts as pnpm 11.28 does, at default options, within 512 MiB of peak RSS for the whole process', async () => {
    const buffer = fs.readFileSync(bombFile)
    expect(buffer.length).toBeLessThan(6_000_000)
    const ours = extractInChild(bombFile, path.join(dir, 'v11'))
    expect(ours.code).toBeUndefined()
    const reply = await pnpm11.request({ type: 'extract', buffer: new Uint8Array(buffer), storeDir: path.join(dir, 'pnpm11'), filesIndexFile: 'bomb' })
    expect(reply.status).toBe('success')
    expect(ours.keys).toEqual([...reply.value.filesMap.keys()])
    expect(ours.keys).toEqual(['package.json'])
    console.log(`5 GiB padding bomb (${buffer.length} bytes): extracted in ${ours.ms.toFixed(0)} ms, peak RSS ${(ours.maxRSS / 1024).toFixed(0)} MiB (the whole Node process)`)
    expect(ours.maxRSS).toBeLessThanOrEqual(512 * 1024)
  }, 300_000)

  it('extracts as pnpm 11.28 does with pnpm\'s default maxTarballUnpackedSize (4 GiB), as the worker and the fetcher pass it', async () => {
    const maxTarballUnpackedSize = 4 * 1024 ** 3
    const ours = extractInChild(bombFile, path.join(dir, 'v11-limit'), { maxTarballUnpackedSize })
    expect(ours.code).toBeUndefined()
    const reply = await pnpm11.request({ type: 'extract', buffer: new Uint8Array(fs.readFileSync(bombFile)), storeDir: path.join(dir, 'pnpm11'), filesIndexFile: 'bomb-limit', maxTarballUnpackedSize })
    expect(reply.status).toBe('success')
    expect(ours.keys).toEqual([...reply.value.filesMap.keys()])
    expect(ours.maxRSS).toBeLessThanOrEqual(512 * 1024)
  }, 300_000)
})
