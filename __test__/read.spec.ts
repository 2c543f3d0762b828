/**
 * Store reads against pnpm 11 itself: a store filled by pnpm's own `@pnpm/worker` (every
 * committed tarball fixture, plus a package uploaded with side effects the way pnpm writes them
 * after a build) is read back by pnpm's `readPkgFromCafs` and by ours, and the answers must be
 * deep-equal, with verification on and off. Then what verification does to a damaged store.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex, packForStorage } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { freshStoreDir, tarballFixtures } from './helpers/stores.js'

const fixtures = tarballFixtures()
const storeDir = freshStoreDir('read')
let storeIndex: StoreIndex

/** Keys of the rows written through pnpm's `addFilesFromDir`. */
const BUILT = 'built\tbuilt@1.0.0'
const BUILT_NO_BASE_SCRIPTS = 'plain-dir'

beforeAll(async () => {
  storeIndex = new StoreIndex(storeDir)
  await Promise.all(fixtures.map((f) => pnpm.addFilesFromTarball({
    buffer: f.buffer, storeDir, filesIndexFile: f.key, integrity: f.integrity, storeIndex, url: f.file,
  })))
  storeIndex.flush()

  // A package before and after its build: one file changed, one added (executable), one
  // deleted; a second platform whose build changed nothing ({} diff); a third that only deleted.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-read-built-'))
  const write = (name: string, content: string, mode = 0o644) => fs.writeFileSync(path.join(dir, name), content, { mode })
  write('package.json', '{"name":"Built","version":"1.0.0","scripts":{"install":"node build.js"}}')
  write('build.js', 'console.log(1)\n')
  write('README.md', 'read me\n')
  await pnpm.addFilesFromDir({ storeDir, dir, filesIndexFile: BUILT, storeIndex })
  await pnpm.addFilesFromDir({ storeDir, dir, filesIndexFile: BUILT, sideEffectsCacheKey: 'darwin;arm64;node24', storeIndex })
  write('build.js', 'console.log(2)\n')
  write('out.node', 'binary', 0o755)
  fs.rmSync(path.join(dir, 'README.md'))
  await pnpm.addFilesFromDir({ storeDir, dir, filesIndexFile: BUILT, sideEffectsCacheKey: 'linux;x64;node24', storeIndex })
  fs.rmSync(path.join(dir, 'out.node'))
  write('build.js', 'console.log(1)\n')
  await pnpm.addFilesFromDir({ storeDir, dir, filesIndexFile: BUILT, sideEffectsCacheKey: 'win32;x64;node24', storeIndex })

  // A row without requiresBuild scripts in the manifest but with a root binding.gyp.
  const plain = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-read-plain-'))
  fs.writeFileSync(path.join(plain, 'package.json'), '{"name":"plain","version":"1.0.0"}')
  fs.writeFileSync(path.join(plain, 'binding.gyp'), '{}')
  await pnpm.addFilesFromDir({ storeDir, dir: plain, filesIndexFile: BUILT_NO_BASE_SCRIPTS, storeIndex })
}, 120_000)

afterAll(async () => {
  storeIndex?.close()
  await pnpm.finishWorkers()
  cas.closeStores()
})

const allKeys = () => [...fixtures.map((f) => f.key), BUILT, BUILT_NO_BASE_SCRIPTS, 'no such key']

describe.each([true, false])('verifyStoreIntegrity: %s', (verifyStoreIntegrity) => {
  const ctx = () => ({ storeDir, verifyStoreIntegrity })

  it('answers every key exactly as pnpm does', async () => {
    for (const key of allKeys()) {
      const theirs = await pnpm.readPkgFromCafs(ctx(), key, {})
      const ours = await cas.readPkgFromCafs(ctx(), key, {})
      expect(ours, key).toStrictEqual(theirs)
    }
  })

  it('really covers side effects, the empty-diff quirk and the absent-row shape', async () => {
    const built = await cas.readPkgFromCafs(ctx(), BUILT) as any
    expect(built.verified).toBe(true)
    const keys = [...built.files.sideEffectsMaps.keys()]
    expect(keys).toEqual(verifyStoreIntegrity
      ? ['linux;x64;node24', 'win32;x64;node24']
      : ['darwin;arm64;node24', 'linux;x64;node24', 'win32;x64;node24'])
    const linux = built.files.sideEffectsMaps.get('linux;x64;node24')
    expect([...linux.added.keys()].sort()).toEqual(['build.js', 'out.node'])
    expect(linux.added.get('out.node')).toMatch(/-exec$/)
    expect(linux.deleted).toEqual(['README.md'])
    expect(await cas.readPkgFromCafs(ctx(), 'no such key')).toStrictEqual({ verified: false, pkgFilesIndex: null })
    const plain = await cas.readPkgFromCafs(ctx(), BUILT_NO_BASE_SCRIPTS) as any
    expect(plain.files.requiresBuild).toBe(true)
  })

  it('answers a batch as the single reads do, with one tally', async () => {
    const keys = allKeys()
    const batch = await cas.readPkgsFromCafs(ctx(), keys)
    expect(batch.results).toHaveLength(keys.length)
    for (const [i, key] of keys.entries()) {
      expect(batch.results[i], key).toStrictEqual(await pnpm.readPkgFromCafs(ctx(), key, {}))
    }
    expect(batch.warnings).toEqual([])
    expect(batch.verifiedFileIntegrity).toEqual({ files: 0, ms: 0 })
  })
})

describe('single reads in flight together', () => {
  // They are read as one native batch; each caller must still get exactly its own answer.
  it('each get their own answer, error and tally', async () => {
    const ctx = { storeDir, verifyStoreIntegrity: true }
    const keys = allKeys()
    const mismatch = { name: 'not-this-one' }
    const [ours, failed] = await Promise.all([
      Promise.all(keys.map((k) => cas.readPkgFromCafs(ctx, k))),
      cas.readPkgFromCafs(ctx, fixtures[1].key, { expectedPkg: mismatch }).catch((e) => e),
    ])
    for (const [i, key] of keys.entries()) {
      expect(ours[i], key).toStrictEqual(await pnpm.readPkgFromCafs(ctx, key, {}))
      expect(ours[i].verifiedFileIntegrity, key).toEqual({ files: 0, ms: 0 })
    }
    expect(failed.code).toBe('ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE')
  })
})

describe('expectedPkg', () => {
  const f = fixtures[0]
  const ctx = (strict?: boolean) => ({ storeDir, verifyStoreIntegrity: false, strictStorePkgContentCheck: strict })

  it('accepts the same package spelled differently, as pnpm does', async () => {
    const expectedPkg = { name: f.name.toUpperCase(), version: `v${f.version}` }
    const ours = await cas.readPkgFromCafs(ctx(), f.key, { expectedPkg })
    expect(ours).toStrictEqual(await pnpm.readPkgFromCafs(ctx(), f.key, { expectedPkg }))
    expect(ours.warnings).toEqual([])
  })

  it('rejects another package with pnpm\'s code', async () => {
    const expectedPkg = { name: f.name, version: '999.0.0' }
    const theirs = await pnpm.readPkgFromCafs(ctx(), f.key, { expectedPkg }).catch((e) => e)
    const ours = await cas.readPkgFromCafs(ctx(), f.key, { expectedPkg }).catch((e) => e)
    expect(ours).toBeInstanceOf(cas.PnpmError)
    expect(ours.code).toBe('ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE')
    expect({ code: ours.code, message: ours.message }).toEqual({ code: theirs.code, message: theirs.message })
    // The hint is in our own words, with the facts pnpm's carries.
    expect(ours.hint).toContain(`the lockfile expects ${f.name}@999.0.0`)
    expect(ours.hint).toContain('strictStorePkgContentCheck=false')
  })

  it('only warns when strictStorePkgContentCheck is false', async () => {
    const expectedPkg = { name: 'something-else', version: f.version }
    const ours = await cas.readPkgFromCafs(ctx(false), f.key, { expectedPkg })
    expect(ours).toStrictEqual(await pnpm.readPkgFromCafs(ctx(false), f.key, { expectedPkg }))
    expect(ours.warnings).toHaveLength(1)
    expect(ours.warnings[0]).toContain(`the lockfile expects something-else@${f.version}`)
    const batch = await cas.readPkgsFromCafs(ctx(false), [f.key, f.key], { expectedPkgs: [expectedPkg, undefined] })
    expect(batch.warnings).toEqual([{ key: f.key, message: ours.warnings[0] }])
    const strict = await cas.readPkgsFromCafs(ctx(true), [f.key, f.key], { expectedPkgs: [expectedPkg, undefined] })
    expect((strict.results[0] as any).error.code).toBe('ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE')
    expect(strict.results[1].verified).toBe(true)
  })
})

describe('blobs touched since they were checked', () => {
  it('are re-hashed, pass, and are counted in the tally as pnpm counts them', async () => {
    // A package of the pnpm-written store, its blobs' mtimes moved past checkedAt + 100 ms:
    // content unchanged, so nothing is deleted and both implementations can read it in turn.
    const f = fixtures.find((x) => x.name === 'is-docker')!
    const ctx = { storeDir, verifyStoreIntegrity: true }
    const before = await cas.readPkgFromCafs(ctx, f.key) as any
    const blobs = new Set<string>(before.files.filesMap.values())
    const later = new Date(Date.now() + 60_000)
    for (const blob of blobs) fs.utimesSync(blob, later, later)
    const baseline = pnpm.verifiedFileIntegritySnapshot()
    const theirs = await pnpm.readPkgFromCafs(ctx, f.key, {})
    const theirTally = pnpm.verifiedFileIntegritySince(baseline)
    const ours = await cas.readPkgFromCafs(ctx, f.key)
    expect(ours).toStrictEqual(theirs)
    expect(ours.verified).toBe(true)
    expect(theirTally.files).toBe(blobs.size)
    expect(ours.verifiedFileIntegrity.files).toBe(theirTally.files)
    // Blobs were hashed, and the time spent on it counted.
    expect(ours.verifiedFileIntegrity.ms).toBeGreaterThan(0)
    for (const blob of blobs) expect(fs.existsSync(blob)).toBe(true)
  })
})

describe('a side-effects entry whose added blob is missing', () => {
  it('is dropped with verification and kept without, as pnpm does', async () => {
    const dir = freshStoreDir('se-missing')
    const index = new StoreIndex(dir)
    const pkg = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-read-se-'))
    fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"se","version":"1.0.0"}')
    await pnpm.addFilesFromDir({ storeDir: dir, dir: pkg, filesIndexFile: 'se', storeIndex: index })
    fs.writeFileSync(path.join(pkg, 'built.txt'), 'made by a build, nowhere else in the store\n')
    await pnpm.addFilesFromDir({ storeDir: dir, dir: pkg, filesIndexFile: 'se', sideEffectsCacheKey: 'k', storeIndex: index })
    index.close()
    const off = await cas.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: false }, 'se') as any
    fs.rmSync(off.files.sideEffectsMaps.get('k').added.get('built.txt'))
    for (const verifyStoreIntegrity of [true, false]) {
      const ctx = { storeDir: dir, verifyStoreIntegrity }
      const ours = await cas.readPkgFromCafs(ctx, 'se') as any
      expect(ours).toStrictEqual(await pnpm.readPkgFromCafs(ctx, 'se', {}))
      expect(ours.verified).toBe(true)
      expect(ours.files.sideEffectsMaps?.has('k') ?? false).toBe(!verifyStoreIntegrity)
    }
  })
})

describe('a damaged store', () => {
  /** A store of our own with one package in it; returns its blobs by relative path. */
  async function storeWith (label: string) {
    const dir = freshStoreDir(label)
    const f = fixtures.find((x) => x.name === 'mkdirp')!
    const { filesMap } = await cas.addFilesFromTarball({ buffer: f.buffer, storeDir: dir, filesIndexFile: f.key })
    return { dir, key: f.key, filesMap }
  }
  const future = () => new Date(Date.now() + 60_000)

  it('a blob rewritten with other bytes of the same size is hashed, fails and is deleted', async () => {
    const { dir, key, filesMap } = await storeWith('same-size')
    const blob = filesMap.get('package.json')!
    const size = fs.statSync(blob).size
    fs.chmodSync(blob, 0o644)
    fs.writeFileSync(blob, Buffer.alloc(size, 'x'))
    fs.utimesSync(blob, future(), future())
    const result = await cas.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: true }, key) as any
    expect(result.verified).toBe(false)
    expect(result.files.filesMap).toEqual(filesMap)
    expect(result.verifiedFileIntegrity.files).toBe(1)
    expect(fs.existsSync(blob)).toBe(false)
    // The other blobs were trusted on their mtime and left alone.
    for (const [rel, other] of filesMap) if (rel !== 'package.json') expect(fs.existsSync(other), rel).toBe(true)
  })

  it('a blob of another size fails without being hashed and is deleted', async () => {
    const { dir, key, filesMap } = await storeWith('other-size')
    const blob = filesMap.get('index.js')!
    fs.chmodSync(blob, 0o644)
    fs.appendFileSync(blob, '// more\n')
    fs.utimesSync(blob, future(), future())
    const result = await cas.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: true }, key) as any
    expect(result.verified).toBe(false)
    expect(result.verifiedFileIntegrity.files).toBe(0)
    expect(fs.existsSync(blob)).toBe(false)
  })

  it('a missing blob fails verification, and pnpm agrees', async () => {
    const { dir, key, filesMap } = await storeWith('missing')
    fs.rmSync(filesMap.get('package.json')!)
    const ctx = { storeDir: dir, verifyStoreIntegrity: true }
    const ours = await cas.readPkgFromCafs(ctx, key)
    expect(ours.verified).toBe(false)
    expect(ours).toStrictEqual(await pnpm.readPkgFromCafs(ctx, key, {}))
    // Without verification the row is trusted, as in pnpm.
    expect((await cas.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: false }, key)).verified).toBe(true)
  })

  it('a row of garbage is a miss with a warning, never a crash', async () => {
    const { dir, key } = await storeWith('garbage-row')
    cas.closeStores()
    const index = new StoreIndex(dir)
    index.setRawMany([{ key, buffer: Buffer.from('this is not msgpack at all \u00ff\u00fe') }, { key: 'trailing', buffer: Buffer.from([0xc0, 0xc0]) }])
    index.close()
    for (const k of [key, 'trailing']) {
      const result = await cas.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: true }, k)
      expect(result).toStrictEqual({ verified: false, pkgFilesIndex: null })
      expect(result.warnings).toHaveLength(1)
      expect(result.warnings[0]).toContain('unreadable store index row')
    }
    const batch = await cas.readPkgsFromCafs({ storeDir: dir, verifyStoreIntegrity: true }, [key, 'absent'])
    expect(batch.results).toStrictEqual([{ verified: false, pkgFilesIndex: null }, { verified: false, pkgFilesIndex: null }])
    expect(batch.warnings.map((w) => w.key)).toEqual([key])
  })

  it('a hand-made row with a NUL in a path fails that key only', async () => {
    const { dir, key } = await storeWith('nul-path')
    cas.closeStores()
    const index = new StoreIndex(dir)
    const file = { checkedAt: 1, digest: 'ab'.repeat(64), mode: 420, size: 1 }
    index.setRawMany([{ key: 'nul', buffer: packForStorage({ algo: 'sha512', files: new Map([['a\0b', file], ['c', file]]) }) }])
    index.close()
    const ctx = { storeDir: dir, verifyStoreIntegrity: false }
    const err = await cas.readPkgFromCafs(ctx, 'nul').catch((e) => e)
    expect(err.code).toBe('ERR_PNPM_READ_FROM_STORE')
    const batch = await cas.readPkgsFromCafs(ctx, ['nul', key])
    expect((batch.results[0] as any).error.code).toBe('ERR_PNPM_READ_FROM_STORE')
    expect(batch.results[1].verified).toBe(true)
  })

  it('a key that does not exist is a miss, in an empty store too', async () => {
    const dir = freshStoreDir('empty')
    fs.mkdirSync(dir)
    const result = await cas.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: true }, 'nothing')
    expect(result).toStrictEqual(await pnpm.readPkgFromCafs({ storeDir: dir, verifyStoreIntegrity: true }, 'nothing', {}))
    expect(result.warnings).toEqual([])
  })

  it('a store directory that does not exist fails, naming it, and is not created (pnpm\'s worker creates an empty store)', async () => {
    const dir = freshStoreDir('mistyped')
    const ctx = { storeDir: dir, verifyStoreIntegrity: true }
    const reads = [cas.readPkgFromCafs(ctx, 'k'), cas.readPkgsFromCafs(ctx, ['k'])]
    for (const err of await Promise.all(reads.map((p) => p.then(() => undefined, (e) => e)))) {
      expect(err).toBeInstanceOf(cas.PnpmError)
      expect(err).toMatchObject({ code: 'ERR_PNPM_ENOENT', path: dir, syscall: 'stat' })
      expect(err.message).toBe(`The store directory "${dir}" does not exist`)
      expect(err.hint).toContain('never create')
    }
    expect(fs.existsSync(dir)).toBe(false)
    // A file where the store should be: ENOTDIR.
    fs.writeFileSync(dir, '')
    await expect(cas.readPkgFromCafs(ctx, 'k')).rejects.toMatchObject({ code: 'ERR_PNPM_ENOTDIR', path: dir })
  })
})

describe('arguments', () => {
  it.each([
    ['ctx', () => cas.readPkgFromCafs(null as any, 'k')],
    ['storeDir', () => cas.readPkgFromCafs({ storeDir: 1 } as any, 'k')],
    ['verifyStoreIntegrity', () => cas.readPkgFromCafs({ storeDir: '/s', verifyStoreIntegrity: 'yes' } as any, 'k')],
    ['filesIndexFile', () => cas.readPkgFromCafs({ storeDir: '/s', verifyStoreIntegrity: true }, 5 as any)],
    ['expectedPkg.version', () => cas.readPkgFromCafs({ storeDir: '/s', verifyStoreIntegrity: true }, 'k', { expectedPkg: { version: 1 as any } })],
    ['keys', () => cas.readPkgsFromCafs({ storeDir: '/s', verifyStoreIntegrity: true }, ['a', 2] as any)],
    ['expectedPkgs', () => cas.readPkgsFromCafs({ storeDir: '/s', verifyStoreIntegrity: true }, ['a'], { expectedPkgs: [] })],
  ])('%s is checked', async (name, call) => {
    const err = await call().catch((e) => e)
    expect(err).toBeInstanceOf(TypeError)
    expect(err.code).toBe('ERR_INVALID_ARG_TYPE')
    expect(err.message).toContain(`"${name}"`)
  })
})
