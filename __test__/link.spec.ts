/**
 * symlinkAllModules, hardLinkDir and the linkPackages batch: the same results as pnpm 11's
 * worker, and the batch equal to package-by-package imports. (An interrupted batch:
 * crash-safety.spec.ts.)
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { freshStoreDir } from './helpers/stores.js'
import { comparable, freshDir, snapshotTree, storeFilledByPnpm, type FilledStore } from './helpers/trees.js'

let store: FilledStore

beforeAll(async () => {
  store = await storeFilledByPnpm('link')
}, 120_000)

afterAll(async () => {
  await pnpm.finishWorkers()
})

const attempt = (p: Promise<unknown>) => p.then(() => undefined, (e: any) => e)

describe('symlinkAllModules', () => {
  function deps (root: string): cas.SymlinkDep[] {
    const pkgs = path.join(root, 'pkgs')
    for (const n of ['a', 'b', 'c', 'd']) fs.mkdirSync(path.join(pkgs, n), { recursive: true })
    return [
      { name: 'a', modules: path.join(root, 'pkgs/a/node_modules'), children: { b: path.join(pkgs, 'b'), '@s/c': path.join(pkgs, 'c'), a: path.join(pkgs, 'a') } },
      { name: 'app', modules: path.join(root, 'node_modules'), children: { a: path.join(pkgs, 'a'), Dee: path.join(pkgs, 'd') } },
    ]
  }

  it('makes the links pnpm makes: relative, scoped, self-references skipped', async () => {
    const root = freshDir('sym')
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      const dir = path.join(root, name)
      expect(await impl.symlinkAllModules({ deps: deps(dir) })).toBeUndefined()
    }
    const ours = comparable(snapshotTree(path.join(root, 'ours')))
    expect(ours).toContain('pkgs/a/node_modules/@s/c symlink -> ../../../c')
    expect(ours).toEqual(comparable(snapshotTree(path.join(root, 'theirs'))))
  })

  it('reuses a right link, replaces a wrong one, moves a real directory aside', async () => {
    const root = freshDir('sym-again')
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      const dir = path.join(root, name)
      const d = deps(dir)
      await impl.symlinkAllModules({ deps: d })
      fs.unlinkSync(path.join(dir, 'pkgs/a/node_modules/b'))
      fs.symlinkSync('../../d', path.join(dir, 'pkgs/a/node_modules/b'))
      fs.unlinkSync(path.join(dir, 'node_modules/a'))
      fs.mkdirSync(path.join(dir, 'node_modules/a'))
      fs.writeFileSync(path.join(dir, 'node_modules/a/file'), 'x')
      await impl.symlinkAllModules({ deps: d })
    }
    expect(comparable(snapshotTree(path.join(root, 'ours')))).toEqual(comparable(snapshotTree(path.join(root, 'theirs'))))
    expect(fs.existsSync(path.join(root, 'ours/node_modules/.ignored_a/file'))).toBe(true)
  })

  it.each(['../x', '.bin', 'node_modules', '_x', '@s/..', ''])('refuses the alias %j with ERR_PNPM_INVALID_DEPENDENCY_NAME, as pnpm', async (alias) => {
    const root = freshDir('sym-bad')
    const opts = (name: string) => ({ deps: [{ name: 'app', modules: path.join(root, name, 'node_modules'), children: { [alias]: path.join(root, 'target') } }] })
    const ours = await attempt(cas.symlinkAllModules(opts('ours')))
    const theirs = await attempt(pnpm.symlinkAllModules(opts('theirs')))
    expect(ours.code).toBe('ERR_PNPM_INVALID_DEPENDENCY_NAME')
    expect(ours.code).toBe(theirs.code)
    expect(ours.message.replace('/ours/', '/')).toBe(theirs.message.replace('/theirs/', '/'))
    expect(fs.readdirSync(root)).toEqual([])
  })

  it('a link onto its own target fails with ERR_PNPM_SYMLINK_FAILED, as pnpm', async () => {
    const root = freshDir('sym-self')
    const modules = path.join(root, 'node_modules')
    const ours = await attempt(cas.symlinkAllModules({ deps: [{ name: 'app', modules, children: { x: path.join(modules, 'x') } }] }))
    const theirs = await attempt(pnpm.symlinkAllModules({ deps: [{ name: 'app', modules, children: { x: path.join(modules, 'x') } }] }))
    expect(ours.code).toBe('ERR_PNPM_SYMLINK_FAILED')
    expect(ours.message).toBe(theirs.message)
  })
})

describe('hardLinkDir', () => {
  function source (root: string): string {
    const src = path.join(root, 'src')
    fs.mkdirSync(path.join(src, 'lib/node_modules/nested'), { recursive: true })
    fs.mkdirSync(path.join(src, 'node_modules/dep'), { recursive: true })
    fs.writeFileSync(path.join(src, 'package.json'), '{"name":"injected"}')
    fs.writeFileSync(path.join(src, 'lib/index.js'), 'module.exports = 1')
    fs.writeFileSync(path.join(src, 'lib/node_modules/nested/x.js'), 'x')
    fs.symlinkSync('index.js', path.join(src, 'lib/alias.js'))
    return src
  }

  it('gives each destination what pnpm gives it (no node_modules, hard links, filled in place)', async () => {
    const root = freshDir('hld')
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      const dir = path.join(root, name)
      const src = source(dir)
      fs.mkdirSync(path.join(dir, 'd1/stale'), { recursive: true })
      fs.mkdirSync(path.join(dir, 'd1/package.json'), { recursive: true })
      fs.mkdirSync(path.join(dir, 'deep/d2/lib'), { recursive: true })
      fs.writeFileSync(path.join(dir, 'deep/d2/lib/index.js'), 'old')
      await impl.hardLinkDir(src, [path.join(dir, 'd1'), path.join(dir, 'deep/d2'), src])
      expect(fs.statSync(path.join(dir, 'd1/lib/index.js')).ino).toBe(fs.statSync(path.join(src, 'lib/index.js')).ino)
      expect(fs.statSync(path.join(dir, 'deep/d2/lib/index.js')).ino).toBe(fs.statSync(path.join(src, 'lib/index.js')).ino)
    }
    expect(comparable(snapshotTree(path.join(root, 'ours')))).toEqual(comparable(snapshotTree(path.join(root, 'theirs'))))
  })

  it('a missing or empty source gives empty destinations, like pnpm', async () => {
    const root = freshDir('hld-edge')
    fs.mkdirSync(path.join(root, 'empty'))
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      await impl.hardLinkDir(path.join(root, 'nope'), [path.join(root, `${name}-missing`)])
      await impl.hardLinkDir(path.join(root, 'empty'), [path.join(root, `${name}-empty`)])
      expect(fs.readdirSync(path.join(root, `${name}-missing`))).toEqual([])
      expect(fs.readdirSync(path.join(root, `${name}-empty`))).toEqual([])
    }
  })

  it('a source that is a file fails with the errno code, as pnpm', async () => {
    const root = freshDir('hld-file')
    fs.writeFileSync(path.join(root, 'file'), 'x')
    const ours = await attempt(cas.hardLinkDir(path.join(root, 'file'), [path.join(root, 'd1')]))
    const theirs = await attempt(pnpm.hardLinkDir(path.join(root, 'file'), [path.join(root, 'd2')]))
    expect(ours.code).toBe('ERR_PNPM_ENOTDIR')
    expect(ours.code).toBe(theirs.code)
  })
})

describe('linkPackages', () => {
  it('links by index key exactly what importPackage + symlinkAllModules give, and counts it', async () => {
    const root = freshDir('batch')
    const target = (dir: string, p: FilledStore['packages'][number]) => path.join(root, dir, 'node_modules/.pnpm', p.id.replace('/', '+'), 'node_modules', p.name)
    const symlinks = (dir: string): cas.SymlinkDep[] => [{
      name: 'app',
      modules: path.join(root, dir, 'node_modules'),
      children: Object.fromEntries(store.packages.map((p) => [p.name, target(dir, p)])),
    }]
    const result = await cas.linkPackages({
      storeDir: store.storeDir,
      packageImportMethod: 'hardlink',
      packages: store.packages.map((p) => ({ targetDir: target('batch', p), filesIndexFile: p.key })),
      symlinks: symlinks('batch'),
    })
    for (const p of store.packages) {
      await pnpm.importPackage({ storeDir: store.storeDir, packageImportMethod: 'hardlink', filesResponse: { resolvedFrom: 'store', filesMap: p.filesMap, requiresBuild: false }, targetDir: target('pnpm', p), force: false })
    }
    await pnpm.symlinkAllModules({ deps: symlinks('pnpm') })
    expect(comparable(snapshotTree(path.join(root, 'batch')))).toEqual(comparable(snapshotTree(path.join(root, 'pnpm'))))
    const files = store.packages.reduce((n, p) => n + p.filesMap.size, 0)
    expect(result.results).toEqual(store.packages.map(() => ({ isBuilt: false, importMethod: 'hardlink' })))
    expect(result.counts).toMatchObject({ packagesImported: store.packages.length, packagesSkipped: 0, filesLinked: files, filesCopied: 0, filesCloned: 0, symlinks: store.packages.length })
    expect(result.counts.dirsMade).toBeGreaterThan(store.packages.length)

    // Again, with file maps instead of keys: everything is already there.
    const again = await cas.linkPackages({
      storeDir: store.storeDir,
      packages: store.packages.map((p) => ({ targetDir: target('batch', p), filesMap: p.filesMap })),
      symlinks: symlinks('batch'),
    })
    expect(again.results.every((r) => r.importMethod === undefined)).toBe(true)
    expect(again.counts).toMatchObject({ packagesImported: 0, packagesSkipped: store.packages.length, filesLinked: 0, symlinks: 0 })
  })

  it('keeps each package\'s result and error in its place when compact (key only) and full packages are mixed', async () => {
    // Compact packages cross first and full ones after them; results must come back in the caller's order.
    const root = freshDir('batch-mixed')
    const [a, b, c, d] = store.packages
    const dir = (name: string) => path.join(root, name)
    await cas.linkPackages({ storeDir: store.storeDir, packageImportMethod: 'hardlink', packages: [{ targetDir: dir('b'), filesIndexFile: b.key }, { targetDir: dir('c'), filesIndexFile: c.key }] })
    const mixed = await cas.linkPackages({
      storeDir: store.storeDir,
      packageImportMethod: 'hardlink',
      packages: [
        { targetDir: dir('b'), filesMap: b.filesMap }, // full, already there
        { targetDir: dir('a'), filesIndexFile: a.key }, // compact, new
        { targetDir: dir('c'), filesIndexFile: c.key }, // compact, already there
        { targetDir: dir('d'), filesIndexFile: d.key, packageImportMethod: 'copy' }, // full, new
      ],
    })
    expect(mixed.results.map((r) => r.importMethod)).toEqual([undefined, 'hardlink', undefined, 'copy'])
    // The failing package is named by its own target, also when it crossed after the compact ones.
    const failing = await attempt(cas.linkPackages({
      storeDir: store.storeDir,
      packages: [
        { targetDir: dir('e'), filesMap: new Map([['x.js', path.join(root, 'no-such-blob')]]) },
        { targetDir: dir('f'), filesIndexFile: a.key },
      ],
    }))
    expect(failing.message).toMatch(new RegExp(`^\\[importPackage ${dir('e')}\\] `))
  })

  it('reports the first failing package like importPackage, and a missing index row clearly', async () => {
    const root = freshDir('batch-bad')
    const ok = store.packages[0]
    const err = await attempt(cas.linkPackages({
      storeDir: store.storeDir,
      packages: [
        { targetDir: path.join(root, 'ok'), filesIndexFile: ok.key },
        { targetDir: path.join(root, 'unknown'), filesIndexFile: 'sha512-nope\tnope@1.0.0' },
      ],
    }))
    expect(err.code).toBe('ERR_PNPM_MISSING_INDEX_ROW')
    expect(err.message).toMatch(new RegExp(`^\\[importPackage ${path.join(root, 'unknown')}\\] The store index .*index\\.db has no entry for sha512-nope nope@1\\.0\\.0$`))
    const escape = await attempt(cas.linkPackages({
      storeDir: store.storeDir,
      packages: [{ targetDir: path.join(root, 'esc'), filesMap: new Map([['../../x', [...ok.filesMap.values()][0]]]) }],
    }))
    expect(escape.code).toBe('ERR_PNPM_UNSAFE_FILE_PATH')
    expect(fs.existsSync(path.join(root, 'esc'))).toBe(false)
    const badLink = await attempt(cas.linkPackages({
      storeDir: store.storeDir,
      packages: [],
      symlinks: [{ name: 'app', modules: path.join(root, 'nm'), children: { '../up': path.join(root, 'ok') } }],
    }))
    expect(badLink.code).toBe('ERR_PNPM_INVALID_DEPENDENCY_NAME')
    expect(badLink.message).toMatch(/^\[symlinkAllModules\] Refusing to place a dependency under /)
    const badArg = await attempt(cas.linkPackages({ storeDir: store.storeDir, packages: [{ targetDir: path.join(root, 'x') } as any] }))
    expect(badArg).toBeInstanceOf(TypeError)
    expect(badArg.message).toContain('"packages[0].filesIndexFile"')
  })

  it.skipIf(process.platform === 'win32')('restores the symlinks of a pnpm 11.28 side-effects entry, and drops an entry with an unrestorable one', async () => {
    const root = freshDir('batch-se-links')
    const storeDir = freshStoreDir('batch-se-links-store')
    const pkg = path.join(root, 'pkg')
    fs.mkdirSync(path.join(pkg, 'lib'), { recursive: true })
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'se-links', version: '1.0.0', scripts: { install: 'node x' } }))
    fs.writeFileSync(path.join(pkg, 'lib/index.js'), 'index')
    await cas.addFilesFromDir({ storeDir, dir: pkg, filesIndexFile: 'se-links' })
    fs.writeFileSync(path.join(pkg, 'generated.js'), 'generated')
    fs.symlinkSync('generated.js', path.join(pkg, 'alias.js'))
    const upload = await cas.addFilesFromDir({ storeDir, dir: pkg, filesIndexFile: 'se-links', sideEffectsCacheKey: 'k', compat: 'pnpm@11.28' })
    expect(upload.sideEffects?.added?.has('alias.js')).toBe(true)

    const link = (targetDir: string) => cas.linkPackages({ storeDir, packageImportMethod: 'copy', packages: [{ targetDir, filesIndexFile: 'se-links', sideEffectsCacheKey: 'k' }] })
    const built = path.join(root, 'built/node_modules/se-links')
    const result = await link(built)
    expect(result.results).toEqual([{ isBuilt: true, importMethod: 'copy' }])
    expect(fs.lstatSync(path.join(built, 'alias.js')).isSymbolicLink()).toBe(true)
    expect(fs.readlinkSync(path.join(built, 'alias.js'))).toBe('generated.js')
    expect(fs.readFileSync(path.join(built, 'alias.js'), 'utf8')).toBe('generated')

    // Forge the link's recorded target into one pnpm 11.28 would not restore: the whole
    // side-effects entry is dropped and the package imported as it was before the build.
    const index = new StoreIndex(storeDir)
    let digest: string
    try {
      const added = (index.get('se-links') as any).sideEffects.get('k').added
      digest = (added instanceof Map ? added.get('alias.js') : added['alias.js']).digest
    } finally {
      index.close()
    }
    const blob = path.join(storeDir, 'files', digest.slice(0, 2), digest.slice(2))
    fs.chmodSync(blob, 0o644)
    fs.writeFileSync(blob, '../../x')
    const fallback = path.join(root, 'fallback/a/node_modules/se-links')
    const dropped = await link(fallback)
    expect(dropped.results).toEqual([{ isBuilt: false, importMethod: 'copy' }])
    expect(fs.readdirSync(fallback).sort()).toEqual(['lib', 'package.json'])
    expect(fs.readdirSync(path.join(root, 'fallback/a'))).toEqual(['node_modules'])
    expect(fs.readdirSync(path.join(root, 'fallback'))).toEqual(['a'])
  })
})

describe('linkStoredPackages', () => {
  const version = (id: string) => id.slice(id.lastIndexOf('@') + 1)
  const inVirtualStore = (root: string, name: string, id: string) =>
    path.join(root, 'node_modules/.pnpm', id.replace('/', '+'), 'node_modules', name)

  it('links what the store serves as pnpm would (with its dependency links), leaves the rest out untouched', async () => {
    const root = freshDir('stored')
    const plain = store.packages.find((p) => !p.requiresBuild && p.name === 'is-docker')!
    const build = store.packages.find((p) => p.requiresBuild)!
    const other = store.packages.find((p) => !p.requiresBuild && p !== plain)!
    const stored = (p: typeof plain, over: Partial<cas.StoredPackage> = {}): cas.StoredPackage =>
      ({ filesIndexFile: p.key, name: p.name, version: version(p.id), targetDir: inVirtualStore(root, p.name, p.id), ...over })
    const packages = [
      stored(plain, { children: { [build.name]: inVirtualStore(root, build.name, build.id) } }),
      stored(build),
      stored(plain, { filesIndexFile: 'sha512-nope\tis-docker@2.2.1', targetDir: inVirtualStore(root, 'is-docker', 'is-docker@9.9.9') }),
      // The row names another package: pnpm would fail (or warn), so it is pnpm's to report.
      stored(other, { name: 'not-it', targetDir: inVirtualStore(root, 'not-it', 'not-it@1.0.0') }),
    ]
    const result = await cas.linkStoredPackages({ storeDir: store.storeDir, packageImportMethod: 'hardlink', packages })
    expect(result.results).toEqual([
      { linked: true, importMethod: 'hardlink' },
      { linked: false, leftOut: 'requires-build' },
      { linked: false, leftOut: 'not-in-store' },
      { linked: false, leftOut: 'unreadable', reason: expect.stringContaining('mismatch') },
    ])
    expect(result.counts.packagesImported).toBe(1)
    // The same package as linkPackages gives, and its dependency's link (to a package pnpm will put there).
    const reference = path.join(freshDir('stored-ref'), 'is-docker')
    await cas.linkPackages({ storeDir: store.storeDir, packageImportMethod: 'hardlink', packages: [{ targetDir: reference, filesIndexFile: plain.key }] })
    expect(comparable(snapshotTree(packages[0].targetDir))).toEqual(comparable(snapshotTree(reference)))
    expect(fs.readlinkSync(path.join(path.dirname(packages[0].targetDir), build.name)))
      .toBe(path.relative(path.dirname(packages[0].targetDir), packages[1].targetDir))
    for (const p of packages.slice(1)) expect(fs.existsSync(p.targetDir), p.targetDir).toBe(false)
    // Again: found in place.
    const again = await cas.linkStoredPackages({ storeDir: store.storeDir, packages: packages.slice(0, 1) })
    expect(again.results).toEqual([{ linked: true, importMethod: undefined }])
  })

  it('a package with a changed blob is left out, its blob removed as pnpm verification removes it', async () => {
    // Filled by pnpm's worker: blobs this process wrote itself count as verified already.
    const { storeDir, packages } = await storeFilledByPnpm('stored-unverified')
    const fixture = packages.find((p) => p.name === 'is-docker')!
    const blob = fixture.filesMap.get('cli.js')!
    const text = fs.readFileSync(blob)
    fs.writeFileSync(blob, Buffer.alloc(text.length, 'x'))
    // Touched after the row recorded it as checked: hashed, not trusted on its mtime.
    const later = new Date(Date.now() + 10_000)
    fs.utimesSync(blob, later, later)
    const root = freshDir('stored-unverified-project')
    const pkg = { filesIndexFile: fixture.key, name: 'is-docker', version: '2.2.1', targetDir: inVirtualStore(root, 'is-docker', fixture.id) }
    const unverified = await cas.linkStoredPackages({ storeDir, packages: [pkg] })
    expect(unverified.results).toEqual([{ linked: false, leftOut: 'unverified' }])
    expect(fs.existsSync(blob)).toBe(false)
    expect(fs.existsSync(pkg.targetDir)).toBe(false)
    // Without verification it is linked as the row says.
    fs.writeFileSync(blob, text)
    const trusted = await cas.linkStoredPackages({ storeDir, verifyStoreIntegrity: false, packages: [pkg] })
    expect(trusted.results[0].linked).toBe(true)
  })

  it('a blob whose group write drifted: linked, copied with its name\'s mode under the exact rule (pnpm 11.28.1 to 11.28.5), linked under none (before)', async () => {
    const { storeDir, packages } = await storeFilledByPnpm('stored-group-write')
    const fixture = packages.find((p) => p.name === 'is-docker')!
    const blob = fixture.filesMap.get('cli.js')!
    const named = fs.statSync(blob).mode & 0o777
    fs.chmodSync(blob, named | 0o020)
    for (const [blobModeRule, linked] of [['linkable', true], ['exact', false], ['none', true], [undefined, true]] as const) {
      for (const verifyStoreIntegrity of [true, false]) {
        const root = freshDir(`stored-group-write-${String(blobModeRule)}-${String(verifyStoreIntegrity)}`)
        const pkg = { filesIndexFile: fixture.key, name: 'is-docker', version: '2.2.1', targetDir: inVirtualStore(root, 'is-docker', fixture.id) }
        expect((await cas.linkStoredPackages({ storeDir, blobModeRule, verifyStoreIntegrity, packages: [pkg] })).results[0].linked).toBe(true)
        const placed = fs.statSync(path.join(pkg.targetDir, 'cli.js'))
        expect([placed.ino === fs.statSync(blob).ino, placed.mode & 0o777]).toEqual(linked ? [true, named | 0o020] : [false, named])
      }
    }
  })
})

describe('a store directory that does not exist', () => {
  it('fails linkPackages and linkStoredPackages with ERR_PNPM_ENOENT naming it, and creates no store', async () => {
    const storeDir = freshStoreDir('mistyped-link')
    const root = freshDir('mistyped-link-project')
    const plain = store.packages.find((p) => !p.requiresBuild)!
    const calls = [
      cas.linkPackages({ storeDir, packages: [{ targetDir: path.join(root, 'a'), filesIndexFile: plain.key }] }),
      cas.linkStoredPackages({ storeDir, packages: [{ filesIndexFile: plain.key, name: plain.name, version: '1.0.0', targetDir: path.join(root, plain.name) }] }),
    ]
    for (const err of await Promise.all(calls.map(attempt))) {
      expect(err).toBeInstanceOf(cas.PnpmError)
      expect(err).toMatchObject({ code: 'ERR_PNPM_ENOENT', path: storeDir, message: `The store directory "${storeDir}" does not exist` })
    }
    expect(fs.existsSync(storeDir)).toBe(false)
    expect(fs.readdirSync(root)).toEqual([])
  })
})
