/**
 * `@cas/native/worker` against `@pnpm/worker` 1100.x: every export called with the same inputs,
 * results and thrown errors (codes, classes, fields) compared.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/worker/index.js'
import { freshStoreDir, tarballFixtures } from './helpers/stores.js'
import { freshDir, snapshotTree, storeFilledByPnpm, type FilledStore } from './helpers/trees.js'

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

describe('what pnpm\'s worker accepts and the core API refuses', () => {
  const roots = { pnpm: '', cas: '' }
  const cwd = process.cwd()
  /** Runs `call` for each worker in its own directory (the same relative names in both), back in the test's cwd after. */
  async function inEach<T> (call: (w: typeof cas | typeof pnpm, who: 'pnpm' | 'cas') => Promise<T>): Promise<{ pnpm: T, cas: T }> {
    const out: Partial<Record<'pnpm' | 'cas', T>> = {}
    for (const who of ['pnpm', 'cas'] as const) {
      process.chdir(roots[who])
      // A worker thread keeps the cwd it started with for its own path.resolve: new ones see this one.
      if (who === 'pnpm') await pnpm.restartWorkerPool()
      try {
        out[who] = await call(who === 'pnpm' ? pnpm : cas, who)
      } finally {
        process.chdir(cwd)
      }
    }
    return out as { pnpm: T, cas: T }
  }

  beforeAll(() => {
    roots.pnpm = freshDir('rel-pnpm')
    roots.cas = freshDir('rel-cas')
  })

  it('relative paths, resolved against process.cwd(): the same results, rows, blob paths (relative too) and trees', async () => {
    const f = fixtures[0]
    const extracted = await inEach(async (w) => {
      const storeIndex = new StoreIndex('store')
      const r = await w.addFilesFromTarball({ buffer: f.buffer, storeDir: 'store', filesIndexFile: f.key, integrity: f.integrity, url: f.file, storeIndex })
      storeIndex.flush()
      storeIndex.close()
      return r
    })
    expect([...extracted.cas.filesMap.values()][0]).toMatch(/^store\/files\/[0-9a-f]{2}\//)
    expect(extracted.cas).toEqual(extracted.pnpm)
    const read = await inEach((w) => w.readPkgFromCafs({ storeDir: './store', verifyStoreIntegrity: true }, f.key))
    expect([...(read.cas as any).files.filesMap.values()][0]).toMatch(/^\.\/store\/files\//)
    expect(read.cas).toEqual(read.pnpm)
    const fromDir = await inEach(async (w) => {
      fs.mkdirSync('pkg/lib', { recursive: true })
      fs.writeFileSync('pkg/package.json', '{"name":"d","version":"1.0.0"}')
      fs.writeFileSync('pkg/lib/a.js', 'a')
      return w.addFilesFromDir({ storeDir: 'store', dir: 'pkg', filesIndexFile: 'd', storeIndex: { setRawMany () {} } as any })
    })
    expect(fromDir.cas).toEqual(fromDir.pnpm)
    const imported = await inEach((w) => w.importPackage({
      storeDir: 'store',
      packageImportMethod: 'hardlink',
      filesResponse: { resolvedFrom: 'store', filesMap: extracted.pnpm.filesMap },
      targetDir: 'node_modules/.pnpm/x/node_modules/x',
      force: false,
    }))
    expect(imported.cas).toEqual(imported.pnpm)
    await inEach(async (w) => {
      await w.symlinkAllModules({ deps: [{ name: 'app', modules: 'app/node_modules', children: { x: 'node_modules/.pnpm/x/node_modules/x' } }] })
      await w.hardLinkDir('pkg', ['copy-a', 'copy-b'])
      await w.initStoreDir('other-store')
    })
    const strip = (t: Map<string, any>) => new Map([...t].map(([k, v]) => [k, { ...v, ino: undefined }]))
    // The stores compared above (index.db's bytes differ, as in any two stores); the rest file by file.
    const trees = (who: 'pnpm' | 'cas') => new Map([...strip(snapshotTree(roots[who]))].filter(([rel]) => rel !== 'store' && !rel.startsWith('store/')))
    expect(trees('cas')).toEqual(trees('pnpm'))
    expect(fs.readlinkSync(path.join(roots.cas, 'app/node_modules/x'))).toBe(fs.readlinkSync(path.join(roots.pnpm, 'app/node_modules/x')))
  })

  it('a read of a store that does not exist creates it, as pnpm\'s does (the core API fails instead)', async () => {
    const result = await inEach(async (w) => [await w.readPkgFromCafs({ storeDir: 'new-store', verifyStoreIntegrity: false }, 'k'), fs.readdirSync('new-store').sort()])
    expect(result.cas).toEqual(result.pnpm)
    expect(result.cas[0]).toEqual({ verified: false, pkgFilesIndex: null })
  })

  it('flags tested for truthiness, an empty integrity or ignoreFilePattern as none, a url that is not a string', async () => {
    const storeDir = (who: string) => path.join(roots[who as 'pnpm' | 'cas'], 'flags-store')
    const f = fixtures[1]
    const sizes = await inEach(async (w, who) => {
      const r = await w.addFilesFromTarball({ buffer: f.buffer, storeDir: storeDir(who), filesIndexFile: f.key, integrity: '', ignoreFilePattern: '', storeIndex: { queueWrites () {} } as any })
      return r.filesMap.size
    })
    expect(sizes.cas).toBe(sizes.pnpm)
    expect(sizes.cas).toBe(f.files)
    const reads = await inEach((w, who) => w.readPkgFromCafs({ storeDir: storeDir(who), verifyStoreIntegrity: 'yes' as any, frozenStore: 0 as any }, 'k'))
    expect(reads.cas).toEqual(reads.pnpm)
    const url = new URL('https://registry.example/x.tgz')
    const errors = await inEach((w, who) => errorOf(w.addFilesFromTarball({ buffer: f.buffer, storeDir: storeDir(who), filesIndexFile: 'k', integrity: 'sha512-AAAA', url: url as any, storeIndex: { queueWrites () {} } as any })))
    expectSameError(errors.cas, errors.pnpm, ['found', 'expected', 'algorithm'])
    expect(errors.cas.url).toBe(String(url))
  })

  it('kept stricter: an unknown packageImportMethod, an empty or non-string key, a non-object appendManifest are TypeErrors before any work', async () => {
    const storeDir = path.join(roots.cas, 'strict-store')
    const si = { queueWrites () {} } as any
    const f = fixtures[0]
    const cases: Array<[Promise<unknown>, string, string]> = [
      [cas.importPackage({ storeDir, targetDir: path.join(roots.cas, 't'), packageImportMethod: 'symlink' as any, filesResponse: { filesMap: new Map() } }), 'packageImportMethod', 'ERR_INVALID_ARG_VALUE'],
      [cas.addFilesFromTarball({ buffer: f.buffer, storeDir, filesIndexFile: '', storeIndex: si }), 'filesIndexFile', 'ERR_INVALID_ARG_VALUE'],
      [cas.readPkgFromCafs({ storeDir, verifyStoreIntegrity: false }, 5 as any), 'filesIndexFile', 'ERR_INVALID_ARG_TYPE'],
      [cas.addFilesFromTarball({ buffer: f.buffer, storeDir, filesIndexFile: 'k', appendManifest: 'x' as any, storeIndex: si }), 'appendManifest', 'ERR_INVALID_ARG_TYPE'],
    ]
    for (const [call, name, code] of cases) {
      const err = await errorOf(call)
      expect(err).toBeInstanceOf(TypeError)
      expect(err.code).toBe(code)
      expect(err.message).toContain(`"${name}"`)
    }
    expect(fs.existsSync(storeDir)).toBe(false)
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
