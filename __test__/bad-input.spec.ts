/**
 * Bad input gets a clear error with a code and loses nothing: for each hostile or broken tarball
 * we ask pnpm's own worker too, and expect the same error code; afterwards our store has no index
 * row for the tarball and nothing outside `files/` (but the index itself).
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { filesOutsideCas, freshStoreDir } from './helpers/stores.js'
import { tgz, tar } from './helpers/tar.js'

const pnpmStore = freshStoreDir('pnpm-bad')
const pnpmIndex = new StoreIndex(pnpmStore)

afterAll(async () => {
  pnpmIndex.close()
  await pnpm.finishWorkers()
})

const okPackage = tgz([
  { name: 'package/package.json', content: '{"name":"ok","version":"1.0.0"}' },
  { name: 'package/index.js', content: 'module.exports = 1\n' },
])
const sri = (algo: string, bytes: Buffer) => `${algo}-${crypto.createHash(algo).update(bytes).digest('base64')}`

const cases: Array<[string, { buffer: Buffer, integrity?: string }]> = [
  ['random bytes', { buffer: crypto.randomBytes(4096) }],
  ['a truncated gzip stream', { buffer: okPackage.subarray(0, okPackage.length - 20) }],
  ['garbage after the gzip stream', { buffer: Buffer.concat([okPackage, Buffer.from('garbage!')]) }],
  ['a tar header with a bad checksum', { buffer: tgz([{ name: 'package/a.js', content: 'x', badChecksum: true }]) }],
  ['a tar without its end-of-archive blocks', { buffer: tar([{ name: 'package/a.js', content: 'x' }]).subarray(0, 1024) }],
  ['an unsupported entry type', { buffer: tgz([{ name: 'package/dev', type: '3' }]) }],
  ['invalid JSON in package.json', { buffer: tgz([{ name: 'package/package.json', content: '{"name": ' }]) }],
  ['a wrong integrity', { buffer: okPackage, integrity: sri('sha512', Buffer.from('something else')) }],
  ['an unknown SRI algorithm', { buffer: okPackage, integrity: 'sha999-AAAA' }],
  ['a malformed integrity string', { buffer: okPackage, integrity: 'not an integrity' }],
]

async function pnpmError (opts: { buffer: Buffer, integrity?: string }, key: string): Promise<any> {
  try {
    await pnpm.addFilesFromTarball({ ...opts, storeDir: pnpmStore, filesIndexFile: key, storeIndex: pnpmIndex, url: 'https://r/x.tgz' })
  } catch (err) {
    return err
  }
  throw new Error('pnpm accepted the input')
}

describe.each(cases)('%s', (name, opts) => {
  it('rejects with pnpm\'s code and a clear message, and indexes nothing', async () => {
    const storeDir = freshStoreDir('bad')
    const key = `key of ${name}`
    const err: any = await cas.addFilesFromTarball({ ...opts, storeDir, filesIndexFile: key, url: 'https://r/x.tgz' })
      .then(() => undefined, (e) => e)
    expect(err).toBeInstanceOf(Error)
    const expected = await pnpmError(opts, key)
    expect(err.code).toBe(expected.code)
    expect(err.message).toMatch(/^(Failed to add tarball from "https:\/\/r\/x.tgz" to store: |Got unexpected checksum)/)
    if (err.code === 'ERR_PNPM_TARBALL_INTEGRITY') {
      expect(err).toBeInstanceOf(cas.TarballIntegrityError)
      expect({ expected: err.expected, found: err.found, algorithm: err.algorithm })
        .toEqual({ expected: expected.expected, found: expected.found, algorithm: expected.algorithm })
      expect(fs.existsSync(`${storeDir}/files`)).toBe(false)
    }
    cas.closeStores()
    expect(filesOutsideCas(storeDir).filter((f) => !f.startsWith('index.db'))).toEqual([])
    if (fs.existsSync(`${storeDir}/index.db`)) {
      const index = new StoreIndex(storeDir)
      expect(index.has(key)).toBe(false)
      index.close()
    }
  })
})

describe('errors that name what is wrong', () => {
  it.each([
    ['random bytes', crypto.randomBytes(4096), 'the buffer is not a gzip or tar archive'],
    ['a few bytes', Buffer.from('hello'), 'the buffer is not a gzip or tar archive'],
    // Its first byte not 0: a header starting with one ends the archive, for pnpm's parser
    // (`consumeHeader`) as here, and the random bytes did so once in 256 runs (an empty tarball).
    ['gzip of something that is not a tar', zlib.gzipSync(Buffer.concat([Buffer.from('x'), crypto.randomBytes(2047)])), 'the gzip data is not a tar archive'],
  ])('%s: says it is not an archive, with pnpm\'s code and pnpm\'s detail after it', async (_, buffer, says) => {
    const err: any = await cas.addFilesFromTarball({ buffer, storeDir: freshStoreDir('not-tar'), filesIndexFile: 'k', url: 'https://r/x.tgz' })
      .then(() => undefined, (e) => e)
    expect(err.code).toBe('ERR_PNPM_TARBALL_EXTRACT')
    expect(err.message).toMatch(new RegExp(`^Failed to add tarball from "https://r/x.tgz" to store: ${says} \\(Invalid checksum for TAR header at offset 0\\. `))
  })

  it('a store that cannot be created: Node\'s wording with the path, and path/syscall properties', async () => {
    const file = freshStoreDir('store-is-a-file')
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, '')
    const storeDir = path.join(file, 'v11')
    const err: any = await cas.addFilesFromTarball({ buffer: okPackage, storeDir, filesIndexFile: 'k' }).then(() => undefined, (e) => e)
    expect(err).toBeInstanceOf(cas.PnpmError)
    expect(err.code).toBe('ERR_PNPM_ENOTDIR')
    expect(err.path.startsWith(path.join(storeDir, 'files') + path.sep)).toBe(true)
    expect(err.syscall).toMatch(/^(open|mkdir)$/)
    expect(err.message).toBe(`Failed to add tarball to store: ENOTDIR: not a directory, ${err.syscall} '${err.path}'`)
    const init: any = await cas.initStoreDir(storeDir).then(() => undefined, (e) => e)
    expect(init).toMatchObject({ code: 'ERR_PNPM_ENOTDIR', syscall: 'mkdir', path: path.join(storeDir, 'files') })
    expect(init.message).toBe(`ENOTDIR: not a directory, mkdir '${path.join(storeDir, 'files')}'`)
  })

  it('an integrity mismatch without a url names the package\'s key (pnpm says "undefined")', async () => {
    const key = `${sri('sha512', okPackage)}\tok@1.0.0`
    const integrity = sri('sha512', Buffer.from('something else'))
    const err: any = await cas.addFilesFromTarball({ buffer: okPackage, storeDir: freshStoreDir('no-url'), filesIndexFile: key, integrity })
      .then(() => undefined, (e) => e)
    const theirs = await pnpm.addFilesFromTarball({ buffer: okPackage, storeDir: pnpmStore, filesIndexFile: key, integrity, storeIndex: pnpmIndex } as any)
      .then(() => undefined, (e) => e)
    expect(theirs.message).toMatch(/^Got unexpected checksum for "undefined"\./)
    expect(err).toBeInstanceOf(cas.TarballIntegrityError)
    expect(err.message).toMatch(/^Got unexpected checksum for the tarball of "sha512-[^"]+\\tok@1\.0\.0"\. Wanted "/)
    expect(err.url).toBe(theirs.url)
  })
})

describe('arguments', () => {
  it.each([
    ['a string buffer', { buffer: 'not a buffer' }],
    ['an array buffer', { buffer: [1, 2, 3] }],
    ['no buffer', {}],
  ])('%s is a TypeError with a code', async (_, extra) => {
    const err: any = await cas.addFilesFromTarball({ storeDir: freshStoreDir('args'), filesIndexFile: 'k', ...extra } as any)
      .then(() => undefined, (e) => e)
    expect(err).toBeInstanceOf(TypeError)
    expect(err.code).toBe('ERR_INVALID_ARG_TYPE')
    expect(err.message).toMatch(/"buffer"/)
  })

  it.each([
    ['a string', '1024', 'ERR_INVALID_ARG_TYPE'],
    ['a bigint', 1024n, 'ERR_INVALID_ARG_TYPE'],
    ['negative', -1, 'ERR_INVALID_ARG_VALUE'],
    ['fractional', 1.5, 'ERR_INVALID_ARG_VALUE'],
    ['NaN', NaN, 'ERR_INVALID_ARG_VALUE'],
    ['Infinity', Infinity, 'ERR_INVALID_ARG_VALUE'],
    ['past 2^53', 2 ** 53, 'ERR_INVALID_ARG_VALUE'],
  ])('maxTarballUnpackedSize %s is a TypeError naming it', async (_, maxTarballUnpackedSize, code) => {
    const err: any = await cas.addFilesFromTarball({ buffer: okPackage, storeDir: freshStoreDir('args'), filesIndexFile: 'k', maxTarballUnpackedSize } as any)
      .then(() => undefined, (e) => e)
    expect(err).toBeInstanceOf(TypeError)
    expect(err.code).toBe(code)
    expect(err.message).toMatch(/^The "maxTarballUnpackedSize" option must be a (number|non-negative integer)\. Received /)
  })

  it('a missing storeDir is a TypeError with a code', async () => {
    const err: any = await cas.addFilesFromTarball({ buffer: okPackage, filesIndexFile: 'k' } as any)
      .then(() => undefined, (e) => e)
    expect(err).toBeInstanceOf(TypeError)
    expect(err.code).toBe('ERR_INVALID_ARG_TYPE')
    expect(err.message).toMatch(/"storeDir"/)
  })

  it('an invalid ignoreFilePattern is reported with pnpm\'s code and the engine\'s message', async () => {
    const err: any = await cas.addFilesFromTarball({ buffer: okPackage, storeDir: freshStoreDir('re'), filesIndexFile: 'k', ignoreFilePattern: '(' })
      .then(() => undefined, (e) => e)
    expect(err.code).toBe('ERR_PNPM_INVALID_IGNORE_FILE_PATTERN')
    expect(err.message).toContain('Invalid ignoreFilePattern regex: Invalid regular expression: /(/: Unterminated group: (')
  })

  it('reads SharedArrayBuffer-backed and offset views in place', async () => {
    const sab = new SharedArrayBuffer(okPackage.length + 16)
    const view = Buffer.from(sab, 8, okPackage.length)
    okPackage.copy(view)
    const storeDir = freshStoreDir('sab')
    const plain = await cas.addFilesFromTarball({ buffer: okPackage, storeDir, filesIndexFile: 'a' })
    const shared = await cas.addFilesFromTarball({ buffer: view, storeDir, filesIndexFile: 'b' })
    const u8 = await cas.addFilesFromTarball({ buffer: new Uint8Array(view), storeDir, filesIndexFile: 'c' })
    expect(shared.filesMap).toEqual(plain.filesMap)
    expect(u8.filesMap).toEqual(plain.filesMap)
    expect(shared.integrity).toBe(plain.integrity)
  })
})

describe('paths that try to leave the package', () => {
  const evil = tgz([
    { name: 'package/package.json', content: '{"name":"evil","version":"1.0.0"}' },
    { name: '../x', content: 'dot-dot' },
    { name: '/abs', content: 'absolute' },
    { name: 'package/a\\..\\..\\x', content: 'backslashes' },
    { name: 'package/../../etc/passwd', content: 'passwd' },
    { name: 'package//lead', content: 'double slash' },
  ])

  it('are indexed under pnpm\'s keys and never written outside the store\'s files/', async () => {
    const storeDir = freshStoreDir('evil')
    const ours = await cas.addFilesFromTarball({ buffer: evil, storeDir, filesIndexFile: 'evil' })
    const theirs = await pnpm.addFilesFromTarball({ buffer: evil, storeDir: pnpmStore, filesIndexFile: 'evil', storeIndex: pnpmIndex, url: 'u' })
    expect([...ours.filesMap.keys()]).toEqual([...theirs.filesMap.keys()])
    for (const blob of ours.filesMap.values()) expect(blob.startsWith(`${storeDir}/files/`)).toBe(true)
    cas.closeStores()
    expect(filesOutsideCas(storeDir).filter((f) => !f.startsWith('index.db'))).toEqual([])
    expect(fs.existsSync(`${storeDir}/../x`)).toBe(false)
  })
})
