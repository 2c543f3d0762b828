/**
 * `@cas/native/worker` against `@pnpm/worker` 1100.x: every export called with the same inputs,
 * results and thrown errors (codes, classes, fields) compared.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/worker.js'
import { freshStoreDir, tarballFixtures } from './helpers/stores.js'
import { freshDir, snapshotTree, storeFilledByPnpm, type FilledStore } from './helpers/trees.js'
import { tgz } from './helpers/tar.js'

const fixtures = tarballFixtures()
const relative = (m: Map<string, string>, storeDir: string) => [...m].map(([k, v]) => [k, path.relative(storeDir, v)])
const noCheckedAt = (row: any) => ({ ...row, files: new Map([...row.files].map(([k, v]: any) => [k, { ...v, checkedAt: 0 }])) })
const errorOf = (p: Promise<unknown>) => p.then(() => { throw new Error('resolved') }, (e) => e)
/** Compares what callers branch on: class, code, message, and the named fields. */
function expectSameError (ours: any, theirs: any, fields: string[] = []) {
  expect(ours.constructor.name).toBe(theirs.constructor.name)
  expect(ours.code).toBe(theirs.code)
  expect(ours.message).toBe(theirs.message)
  for (const f of fields) expect(ours[f], f).toEqual(theirs[f])
}

let filled: FilledStore
beforeAll(async () => { filled = await storeFilledByPnpm('worker-api') }, 120_000)
afterAll(async () => { await pnpm.finishWorkers(); await cas.finishWorkers() })

describe('addFilesFromTarball', () => {
  it('gives the same results and queues the same rows on the caller\'s storeIndex', async () => {
    const stores = { pnpm: freshStoreDir('w-pnpm'), cas: freshStoreDir('w-cas') }
    const indexes = { pnpm: new StoreIndex(stores.pnpm), cas: new StoreIndex(stores.cas) }
    for (const f of fixtures.slice(0, 6)) {
      const opts = { buffer: f.buffer, filesIndexFile: f.key, integrity: f.integrity, url: f.file }
      const theirs = await pnpm.addFilesFromTarball({ ...opts, storeDir: stores.pnpm, storeIndex: indexes.pnpm })
      const ours = await cas.addFilesFromTarball({ ...opts, storeDir: stores.cas, storeIndex: indexes.cas })
      expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort())
      expect(relative(ours.filesMap, stores.cas)).toEqual(relative(theirs.filesMap, stores.pnpm))
      expect({ ...ours, filesMap: undefined }).toEqual({ ...theirs, filesMap: undefined })
    }
    indexes.pnpm.flush()
    indexes.cas.flush()
    for (const f of fixtures.slice(0, 6)) {
      expect(noCheckedAt(indexes.cas.get(f.key))).toEqual(noCheckedAt(indexes.pnpm.get(f.key)))
    }
    indexes.pnpm.close()
    indexes.cas.close()
  })

  it.each([
    ['a wrong integrity', { integrity: 'sha512-' + Buffer.alloc(64).toString('base64') }, ['found', 'expected', 'algorithm', 'url']],
    ['a malformed integrity', { integrity: 'nope' }, []],
    ['a corrupt gzip stream', { buffer: fixtures[0].buffer.subarray(0, 100) }, []],
  ])('rejects %s the way pnpm does', async (_, override, fields) => {
    const opts = { buffer: fixtures[0].buffer, filesIndexFile: 'k', url: 'https://registry/x.tgz', ...override }
    const theirs = await errorOf(pnpm.addFilesFromTarball({ ...opts, storeDir: freshStoreDir('e1'), storeIndex: { queueWrites () {} } as any }))
    const ours = await errorOf(cas.addFilesFromTarball({ ...opts, storeDir: freshStoreDir('e2'), storeIndex: { queueWrites () {} } }))
    expectSameError(ours, theirs, fields)
  })

  it('rejects with the storeIndex\'s own error when it refuses the write', async () => {
    const refusing = { queueWrites () { throw Object.assign(new Error('read-only'), { code: 'ERR_PNPM_FROZEN_STORE_WRITE' }) } }
    const opts = { buffer: fixtures[0].buffer, filesIndexFile: 'k', url: 'u', storeIndex: refusing as any }
    const theirs = await errorOf(pnpm.addFilesFromTarball({ ...opts, storeDir: freshStoreDir('r1') }))
    const ours = await errorOf(cas.addFilesFromTarball({ ...opts, storeDir: freshStoreDir('r2') }))
    expectSameError(ours, theirs)
  })
})

describe('addFilesFromDir', () => {
  it('writes through setRawMany only (pnpm\'s tests pass a mock with nothing else)', async () => {
    const dir = freshDir('w-dir')
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"d","version":"1.0.0"}')
    fs.writeFileSync(path.join(dir, 'index.js'), 'x')
    const calls: Record<string, any[]> = { pnpm: [], cas: [] }
    const theirs = await pnpm.addFilesFromDir({ storeDir: freshStoreDir('d1'), dir, filesIndexFile: 'd', storeIndex: { setRawMany: (w: any) => calls.pnpm.push(w) } as any })
    const ours = await cas.addFilesFromDir({ storeDir: freshStoreDir('d2'), dir, filesIndexFile: 'd', storeIndex: { setRawMany: (w: any) => calls.cas.push(w) } })
    expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort())
    expect({ ...ours, filesMap: [...ours.filesMap.keys()] }).toEqual({ ...theirs, filesMap: [...theirs.filesMap.keys()] })
    expect(calls.cas.map((w) => w.map((e: any) => e.key))).toEqual(calls.pnpm.map((w) => w.map((e: any) => e.key)))
  })
})

describe('readPkgFromCafs', () => {
  it.each([true, false])('reads every package as pnpm does (verifyStoreIntegrity %s)', async (verifyStoreIntegrity) => {
    const ctx = { storeDir: filled.storeDir, verifyStoreIntegrity }
    for (const p of filled.packages) {
      expect(await cas.readPkgFromCafs(ctx, p.key)).toEqual(await pnpm.readPkgFromCafs(ctx, p.key))
    }
    expect(await cas.readPkgFromCafs(ctx, 'no such key')).toEqual(await pnpm.readPkgFromCafs(ctx, 'no such key'))
  })

  it('fails on unexpected package content as pnpm does', async () => {
    const ctx = { storeDir: filled.storeDir, verifyStoreIntegrity: false }
    const p = filled.packages[0]
    const opts = { expectedPkg: { name: 'something-else', version: '9.9.9' } }
    const ours = await errorOf(cas.readPkgFromCafs(ctx, p.key, opts))
    expectSameError(ours, await errorOf(pnpm.readPkgFromCafs(ctx, p.key, opts)))
    // The hint is ours (in our words), but names both packages and the setting to relax.
    expect(ours.hint).toContain('something-else@9.9.9')
    expect(ours.hint).toContain('strictStorePkgContentCheck')
  })

  it('adds re-hashed files to the process-wide tally', async () => {
    const storeDir = (await storeFilledByPnpm('tally')).storeDir
    const later = new Date(Date.now() + 60_000)
    for (const shard of fs.readdirSync(path.join(storeDir, 'files'))) {
      for (const blob of fs.readdirSync(path.join(storeDir, 'files', shard))) fs.utimesSync(path.join(storeDir, 'files', shard, blob), later, later)
    }
    const key = filled.packages[0].key
    const before = { pnpm: pnpm.verifiedFileIntegritySnapshot(), cas: cas.verifiedFileIntegritySnapshot() }
    await pnpm.readPkgFromCafs({ storeDir, verifyStoreIntegrity: true }, key)
    await cas.readPkgFromCafs({ storeDir, verifyStoreIntegrity: true }, key)
    const theirs = pnpm.verifiedFileIntegritySince(before.pnpm)
    const ours = cas.verifiedFileIntegritySince(before.cas)
    expect(ours.files).toBe(theirs.files)
    expect(ours.files).toBeGreaterThan(0)
    expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort())
  })
})

describe('importPackage, symlinkAllModules, hardLinkDir, initStoreDir', () => {
  it('import the same trees', async () => {
    const roots = { pnpm: freshDir('imp-pnpm'), cas: freshDir('imp-cas') }
    for (const p of filled.packages.slice(0, 5)) {
      const opts = (root: string) => ({
        storeDir: filled.storeDir,
        packageImportMethod: 'hardlink' as const,
        filesResponse: { resolvedFrom: 'store' as const, filesMap: p.filesMap, requiresBuild: false },
        targetDir: path.join(root, p.name),
        force: false,
      })
      expect(await cas.importPackage(opts(roots.cas))).toEqual(await pnpm.importPackage(opts(roots.pnpm)))
    }
    const deps = (root: string) => [{ name: 'app', modules: path.join(root, 'app/node_modules'), children: { dep: path.join(root, filled.packages[0].name) } }]
    expect(await cas.symlinkAllModules({ deps: deps(roots.cas) })).toEqual(await pnpm.symlinkAllModules({ deps: deps(roots.pnpm) }))
    const strip = (t: Map<string, any>) => new Map([...t].map(([k, v]) => [k, { ...v, ino: undefined }]))
    expect(strip(snapshotTree(roots.cas))).toEqual(strip(snapshotTree(roots.pnpm)))
  })

  it('hardLinkDir copies a directory into several places as pnpm does', async () => {
    const src = freshDir('hl-src')
    fs.mkdirSync(path.join(src, 'lib/node_modules'), { recursive: true })
    fs.writeFileSync(path.join(src, 'lib/a.js'), 'a')
    fs.writeFileSync(path.join(src, 'lib/node_modules/skip.js'), 'skipped')
    const roots = { pnpm: freshDir('hl-pnpm'), cas: freshDir('hl-cas') }
    await pnpm.hardLinkDir(src, [path.join(roots.pnpm, 'x'), path.join(roots.pnpm, 'y')])
    await cas.hardLinkDir(src, [path.join(roots.cas, 'x'), path.join(roots.cas, 'y')])
    const strip = (t: Map<string, any>) => new Map([...t].map(([k, v]) => [k, { ...v, ino: undefined }]))
    expect(strip(snapshotTree(roots.cas))).toEqual(strip(snapshotTree(roots.pnpm)))
  })

  it('initStoreDir makes the same directories', async () => {
    const dirs = { pnpm: freshStoreDir('init-pnpm'), cas: freshStoreDir('init-cas') }
    await pnpm.initStoreDir(dirs.pnpm)
    await cas.initStoreDir(dirs.cas)
    expect(fs.readdirSync(path.join(dirs.cas, 'files')).sort()).toEqual(fs.readdirSync(path.join(dirs.pnpm, 'files')).sort())
    expect(fs.readdirSync(dirs.cas).sort()).toEqual(fs.readdirSync(dirs.pnpm).sort())
  })
})

describe('pool control', () => {
  it.each([
    [{}],
    [{ PNPM_MAX_WORKERS: '3' }],
    [{ PNPM_WORKERS: '1' }],
    [{ PNPM_WORKERS: '-5' }],
    [{ PNPM_MAX_WORKERS: 'garbage' }],
  ])('calcMaxWorkers with %j', (env) => {
    const saved = { ...process.env }
    delete process.env.PNPM_MAX_WORKERS
    delete process.env.PNPM_WORKERS
    Object.assign(process.env, env)
    try {
      expect(cas.calcMaxWorkers()).toEqual(pnpm.calcMaxWorkers())
    } finally {
      process.env = saved
    }
  })

  it('calls after finishWorkers() still work, and restartWorkerPool resolves', async () => {
    await cas.finishWorkers()
    const storeDir = freshStoreDir('straggler')
    const rows: unknown[] = []
    const r = await cas.addFilesFromTarball({ buffer: fixtures[0].buffer, storeDir, filesIndexFile: 'k', url: 'u', storeIndex: { queueWrites: (w) => rows.push(...w) } })
    expect(r.filesMap.size).toBeGreaterThan(0)
    expect(rows).toHaveLength(1)
    await expect(cas.restartWorkerPool()).resolves.toBeUndefined()
    await expect(cas.finishWorkers()).resolves.toBeUndefined()
  })

  it('exports everything @pnpm/worker exports', () => {
    expect(Object.keys(cas).filter((k) => k !== '__esModule').sort()).toEqual(expect.arrayContaining(Object.keys(pnpm).sort()))
  })

  it('TarballIntegrityError has pnpm\'s fields and code', () => {
    const opts = { found: 'sha512-a', expected: 'sha512-b', algorithm: 'sha512', sri: 'sha512-b', url: 'u' }
    const ours = new cas.TarballIntegrityError(opts)
    expectSameError(ours, new pnpm.TarballIntegrityError(opts), ['found', 'expected', 'algorithm', 'sri', 'url'])
    expect(ours.hint).toMatch(/pnpm store prune/)
  })
})
