/**
 * importPackage against pnpm 11's own: a store filled by `@pnpm/worker` from the committed
 * fixtures, every package imported by `@cas/native` and by pnpm's `importPackage` into two trees,
 * which must be identical (paths, bytes, modes, symlinks), with the same results and codes.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import * as cas from '../dist/api/index.js'
import { comparable, freshDir, snapshotTree, storeFilledByPnpm, type FilledStore } from './helpers/trees.js'

let store: FilledStore

beforeAll(async () => {
  store = await storeFilledByPnpm('import')
}, 120_000)

afterAll(async () => {
  await pnpm.finishWorkers()
})

type Method = 'auto' | 'hardlink' | 'copy' | 'clone' | 'clone-or-copy'

/** Imports every fixture into `<root>/<name>` with both implementations; returns both roots and results. */
async function importAll (method: Method, extra: Partial<cas.ImportPackageOptions> = {}) {
  const ours = freshDir(`ours-${method}`)
  const theirs = freshDir(`pnpm-${method}`)
  const results = { ours: [] as unknown[], theirs: [] as unknown[] }
  for (const p of store.packages) {
    const opts = (root: string) => ({
      storeDir: store.storeDir,
      packageImportMethod: method,
      filesResponse: { resolvedFrom: 'store' as const, filesMap: p.filesMap, requiresBuild: p.requiresBuild },
      targetDir: path.join(root, 'node_modules', p.name),
      force: false,
      ...extra,
    })
    results.ours.push(await cas.importPackage(opts(ours)))
    results.theirs.push(await pnpm.importPackage(opts(theirs)))
  }
  return { ours, theirs, results }
}

function blobInodes (): Map<string, number> {
  const m = new Map<string, number>()
  for (const p of store.packages) for (const blob of p.filesMap.values()) m.set(blob, fs.statSync(blob).ino)
  return m
}

describe('the oracle: the same trees as pnpm 11', () => {
  it.each(['hardlink', 'copy', 'auto'] as const)('%s', async (method) => {
    const { ours, theirs, results } = await importAll(method)
    expect(results.ours).toEqual(results.theirs)
    const a = snapshotTree(ours)
    expect(a.size).toBeGreaterThan(2600)
    expect(comparable(a)).toEqual(comparable(snapshotTree(theirs)))
    if (method !== 'copy') {
      // Hard links: every file is the store's blob itself.
      const inodes = blobInodes()
      for (const p of store.packages) {
        for (const [rel, blob] of p.filesMap) {
          expect(fs.statSync(path.join(ours, 'node_modules', p.name, rel)).ino, rel).toBe(inodes.get(blob))
        }
      }
    }
  })

  it('auto ends on hardlink on a filesystem without reflinks, clone and clone-or-copy copy', async () => {
    const auto = await importAll('auto')
    expect(new Set(auto.results.ours.map((r: any) => r.importMethod))).toEqual(new Set(['hardlink']))
    for (const method of ['clone', 'clone-or-copy'] as const) {
      const { ours, theirs, results } = await importAll(method)
      expect(results.ours).toEqual(results.theirs)
      expect(comparable(snapshotTree(ours))).toEqual(comparable(snapshotTree(theirs)))
      // No file is a hard link of the store here: FICLONE is EOPNOTSUPP, they were copied.
      const inodes = new Set(blobInodes().values())
      for (const [, e] of snapshotTree(ours)) if (e.type === 'file') expect(inodes.has(e.ino!)).toBe(false)
    }
  })

  it('a package that will be built is copied, never hard-linked (clone-or-copy)', async () => {
    const { results } = await importAll('hardlink', { requiresBuild: true })
    expect(results.ours).toEqual(results.theirs)
    expect(new Set(results.ours.map((r: any) => r.importMethod))).toEqual(new Set(['copy']))
  })
})

describe('skip rules, force, side effects', () => {
  const pkg = () => store.packages.find((p) => p.name === 'mkdirp')!
  const request = (targetDir: string, method: Method, extra: Partial<cas.ImportPackageOptions> = {}): cas.ImportPackageOptions => ({
    storeDir: store.storeDir,
    packageImportMethod: method,
    filesResponse: { resolvedFrom: 'store', filesMap: pkg().filesMap },
    targetDir,
    force: false,
    ...extra,
  })

  it.each(['hardlink', 'copy', 'auto'] as const)('%s: an existing package is left alone, force re-imports, a wrong inode relinks', async (method) => {
    const root = freshDir('skip')
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      const target = path.join(root, name)
      const seq = []
      seq.push((await impl.importPackage(request(target, method))).importMethod)
      seq.push((await impl.importPackage(request(target, method))).importMethod)
      seq.push((await impl.importPackage(request(target, method, { force: true }))).importMethod)
      // package.json replaced by another file with the same bytes: hardlink relinks, copy skips.
      const pj = path.join(target, 'package.json')
      const bytes = fs.readFileSync(pj)
      fs.rmSync(pj)
      fs.writeFileSync(pj, bytes)
      seq.push((await impl.importPackage(request(target, method))).importMethod)
      // Without package.json the package is imported again.
      fs.rmSync(pj)
      seq.push((await impl.importPackage(request(target, method))).importMethod)
      if (name === 'ours') (globalThis as any).__ours = seq
      else expect((globalThis as any).__ours).toEqual(seq)
    }
  })

  it('keepModulesDir keeps the nested node_modules through a forced re-import, as pnpm', async () => {
    const root = freshDir('keep')
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      const target = path.join(root, name)
      await impl.importPackage(request(target, 'copy'))
      fs.mkdirSync(path.join(target, 'node_modules/dep'), { recursive: true })
      fs.writeFileSync(path.join(target, 'node_modules/dep/index.js'), 'dep')
      fs.writeFileSync(path.join(target, 'stray.js'), 'stray')
      expect((await impl.importPackage(request(target, 'copy', { force: true, keepModulesDir: true }))).importMethod).toBe('copy')
    }
    const ours = comparable(snapshotTree(path.join(root, 'ours')))
    expect(ours.some((l) => l.startsWith('node_modules/dep/index.js file'))).toBe(true)
    expect(ours.some((l) => l.startsWith('stray.js'))).toBe(false)
    expect(ours).toEqual(comparable(snapshotTree(path.join(root, 'theirs'))))
  })

  it('safeToSkip adopts a complete shared dir and repairs a damaged one in place, as pnpm', async () => {
    const root = freshDir('shared')
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      const target = path.join(root, name)
      const opts = request(target, 'hardlink', { safeToSkip: true, force: true })
      await impl.importPackage(opts)
      await impl.importPackage(opts)
      // Damage: a truncated file, a directory where a file must be, a file not in the map.
      fs.rmSync(path.join(target, 'index.js'))
      fs.writeFileSync(path.join(target, 'index.js'), '')
      fs.rmSync(path.join(target, 'bin/cmd.js'))
      fs.mkdirSync(path.join(target, 'bin/cmd.js'))
      fs.writeFileSync(path.join(target, 'extra.txt'), 'kept')
      await impl.importPackage(opts)
    }
    const ours = comparable(snapshotTree(path.join(root, 'ours')))
    expect(ours.some((l) => l.startsWith('extra.txt file'))).toBe(true)
    expect(ours).toEqual(comparable(snapshotTree(path.join(root, 'theirs'))))
  })

  it('applies the side-effects diff of sideEffectsCacheKey, added first', async () => {
    const base = pkg().filesMap
    const extraBlob = [...store.packages.find((p) => p.name === 'is-docker')!.filesMap.values()][0]
    const sideEffectsMaps = new Map([['key1', { added: new Map([['build/out.txt', extraBlob]]), deleted: ['readme.markdown'] }]])
    expect(base.has('readme.markdown')).toBe(true)
    const root = freshDir('side-effects')
    const opts = (dir: string, key?: string): any => ({
      storeDir: store.storeDir,
      packageImportMethod: 'hardlink',
      filesResponse: { resolvedFrom: 'store', filesMap: base, sideEffectsMaps },
      sideEffectsCacheKey: key,
      targetDir: path.join(root, dir),
      force: false,
    })
    for (const key of ['key1', 'other']) {
      const ours = await cas.importPackage(opts(`ours-${key}`, key))
      const theirs = await pnpm.importPackage(opts(`theirs-${key}`, key))
      expect(ours).toEqual(theirs)
      expect(comparable(snapshotTree(path.join(root, `ours-${key}`)))).toEqual(comparable(snapshotTree(path.join(root, `theirs-${key}`))))
    }
    expect(fs.existsSync(path.join(root, 'ours-key1/build/out.txt'))).toBe(true)
    expect(fs.existsSync(path.join(root, 'ours-key1/readme.markdown'))).toBe(false)
  })

  it('a diff listing bundled dependencies as deleted (as uploads before pnpm 11.28.11 write it): left out as @pnpm/worker 1100.x does, kept with compat pnpm@11.28 as pnpm 11.28.11 does (its native install checks this against the CLI)', async () => {
    const blobs = [...pkg().filesMap.values()]
    const base = new Map([['package.json', blobs[0]], ['node_modules/inner/index.js', blobs[1]], ['gone.js', blobs[2]]])
    const sideEffectsMaps = new Map([['key1', { added: new Map([['built.txt', blobs[3]]]), deleted: ['gone.js', 'node_modules/inner/index.js'] }]])
    const root = freshDir('bundled-deleted')
    const opts = (dir: string, compat?: string): any => ({
      storeDir: store.storeDir,
      packageImportMethod: 'hardlink',
      filesResponse: { resolvedFrom: 'store', filesMap: base, sideEffectsMaps },
      sideEffectsCacheKey: 'key1',
      targetDir: path.join(root, dir),
      force: false,
      ...(compat != null ? { compat } : {}),
    })
    expect(await cas.importPackage(opts('ours'))).toEqual(await pnpm.importPackage(opts('theirs')))
    expect(snapshotTree(path.join(root, 'ours'))).toEqual(snapshotTree(path.join(root, 'theirs')))
    expect(fs.existsSync(path.join(root, 'ours/node_modules/inner/index.js'))).toBe(false)
    expect((await cas.importPackage(opts('newest', 'pnpm@11.28'))).isBuilt).toBe(true)
    expect(fs.readdirSync(path.join(root, 'newest')).sort()).toEqual(['built.txt', 'node_modules', 'package.json'])
    expect(fs.existsSync(path.join(root, 'newest/node_modules/inner/index.js'))).toBe(true)
  })
})

describe('store and target on different filesystems', () => {
  const shm = '/dev/shm'
  const available = fs.existsSync(shm) && fs.statSync(shm).dev !== fs.statSync(freshDir('dev')).dev

  it.runIf(available)('auto and hardlink fall back to copy with no error', async () => {
    const shmStore = await storeFilledByPnpm('xdev', path.join(freshDir('xdev-store', shm), 'v11'))
    try {
      const root = freshDir('xdev')
      for (const method of ['auto', 'hardlink'] as const) {
        for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
          for (const p of shmStore.packages) {
            const r = await impl.importPackage({
              storeDir: shmStore.storeDir,
              packageImportMethod: method,
              filesResponse: { resolvedFrom: 'store', filesMap: p.filesMap },
              targetDir: path.join(root, `${name}-${method}`, p.name),
              force: false,
            })
            expect(r.importMethod).toBe(method === 'auto' ? 'copy' : 'hardlink')
          }
        }
        expect(comparable(snapshotTree(path.join(root, `ours-${method}`))))
          .toEqual(comparable(snapshotTree(path.join(root, `theirs-${method}`))))
      }
    } finally {
      fs.rmSync(path.dirname(shmStore.storeDir), { recursive: true, force: true })
    }
  })
})

describe('bad input: coded errors, nothing written outside the target', () => {
  const pkg = () => store.packages.find((p) => p.name === 'mkdirp')!
  const attempt = async (impl: typeof cas | typeof pnpm, opts: any) => impl.importPackage(opts).then(() => undefined, (e: any) => e)

  it('a missing store file: ERR_PNPM_ENOENT, as pnpm, and no target', async () => {
    const root = freshDir('missing')
    const filesMap = new Map(pkg().filesMap)
    filesMap.set('lib/gone.js', path.join(store.storeDir, 'files/00/does-not-exist'))
    for (const method of ['hardlink', 'copy', 'auto'] as const) {
      const opts = (name: string) => ({ storeDir: store.storeDir, packageImportMethod: method, filesResponse: { resolvedFrom: 'store', filesMap }, targetDir: path.join(root, name, 'pkg'), force: false })
      const ours = await attempt(cas, opts(`ours-${method}`))
      const theirs = await attempt(pnpm, opts(`theirs-${method}`))
      expect(ours).toBeInstanceOf(cas.PnpmError)
      expect(ours.code).toBe('ERR_PNPM_ENOENT')
      expect(ours.code).toBe(theirs.code)
      expect(ours.message).toMatch(new RegExp(`^\\[importPackage ${path.join(root, `ours-${method}`, 'pkg')}\\] ENOENT: no such file or directory, copyfile '`))
      // Node's fs error fields: the blob that is missing, and where it was to go.
      expect(ours).toMatchObject({ syscall: 'copyfile', path: path.join(store.storeDir, 'files/00/does-not-exist') })
      expect(ours.message).toContain(`copyfile '${ours.path}' -> '${ours.dest}'`)
      expect(ours.dest.endsWith(`${path.sep}gone.js`)).toBe(true)
      expect(fs.readdirSync(path.join(root, `ours-${method}`))).toEqual([])
    }
  })

  it('a target that is a file: ERR_PNPM_ENOTDIR, the file untouched', async () => {
    const root = freshDir('target-file')
    const target = path.join(root, 'pkg')
    fs.writeFileSync(target, 'not a directory')
    for (const method of ['auto', 'hardlink'] as const) {
      const err = await attempt(cas, { storeDir: store.storeDir, packageImportMethod: method, filesResponse: { resolvedFrom: 'store', filesMap: pkg().filesMap }, targetDir: target, force: false })
      expect(err.code).toBe('ERR_PNPM_ENOTDIR')
      expect(err.message).toBe(`[importPackage ${target}] ENOTDIR: not a directory, stat '${target}/package.json'`)
      expect(err).toMatchObject({ syscall: 'stat', path: `${target}/package.json` })
      expect(err.dest).toBeUndefined()
    }
    expect(fs.readFileSync(target, 'utf8')).toBe('not a directory')
    expect(fs.readdirSync(root)).toEqual(['pkg'])
  })

  it.each([['../escaped.js'], ['lib/../../escaped.js'], ['a/../..'], ['..']])('a filesMap key %j: ERR_PNPM_UNSAFE_FILE_PATH, nothing written', async (key) => {
    const root = freshDir('escape')
    const filesMap = new Map(pkg().filesMap)
    filesMap.set(key, [...filesMap.values()][0])
    for (const method of ['hardlink', 'copy', 'auto', 'clone'] as const) {
      const target = path.join(root, 'node_modules', 'pkg')
      const err = await attempt(cas, { storeDir: store.storeDir, packageImportMethod: method, filesResponse: { resolvedFrom: 'store', filesMap }, targetDir: target, force: true })
      expect(err.code).toBe('ERR_PNPM_UNSAFE_FILE_PATH')
      expect(err.message).toContain(JSON.stringify(key))
      expect(fs.readdirSync(root)).toEqual([])
    }
  })

  it('keys that path.join keeps inside are imported where pnpm puts them', async () => {
    const root = freshDir('inside')
    const blob = [...pkg().filesMap.values()][0]
    const filesMap = new Map([...pkg().filesMap, ['/abs.js', blob], ['x/../y.js', blob], ['a\\b.js', blob], ['./c//d.js', blob]])
    for (const [impl, name] of [[cas, 'ours'], [pnpm, 'theirs']] as const) {
      await impl.importPackage({ storeDir: store.storeDir, packageImportMethod: 'hardlink', filesResponse: { resolvedFrom: 'store', filesMap }, targetDir: path.join(root, name), force: false })
    }
    expect(comparable(snapshotTree(path.join(root, 'ours')))).toEqual(comparable(snapshotTree(path.join(root, 'theirs'))))
  })

  it('an empty file map fails like pnpm', async () => {
    const root = freshDir('empty')
    const opts = (name: string) => ({ storeDir: store.storeDir, packageImportMethod: 'copy' as const, filesResponse: { resolvedFrom: 'store' as const, filesMap: new Map() }, targetDir: path.join(root, name), force: false })
    const ours = await attempt(cas, opts('ours'))
    const theirs = await attempt(pnpm, opts('theirs'))
    expect(ours.code).toBe('ERR_PNPM_LINKING_FAILED')
    expect(ours.message.replace('/ours]', ']')).toBe(theirs.message.replace('/theirs]', ']'))
  })

  it('an unknown method is a TypeError naming it before any work (pnpm fails the import with ERR_PNPM_LINKING_FAILED)', async () => {
    const root = freshDir('unknown-method')
    const opts = (name: string) => ({ storeDir: store.storeDir, packageImportMethod: 'reflink' as any, filesResponse: { resolvedFrom: 'store' as const, filesMap: pkg().filesMap }, targetDir: path.join(root, name), force: false })
    const ours = await attempt(cas, opts('ours'))
    const theirs = await attempt(pnpm, opts('theirs'))
    expect(ours).toBeInstanceOf(TypeError)
    expect(ours.code).toBe('ERR_INVALID_ARG_VALUE')
    expect(ours.message).toContain('"packageImportMethod"')
    expect(ours.message).toContain('reflink')
    expect(theirs.code).toBe('ERR_PNPM_LINKING_FAILED')
    expect(theirs.message).toContain('Unknown package import method reflink')
    expect(fs.existsSync(path.join(root, 'ours'))).toBe(false)
  })

  it('wrong argument types throw a TypeError naming the argument', async () => {
    const ok = { storeDir: store.storeDir, filesResponse: { resolvedFrom: 'store', filesMap: pkg().filesMap }, targetDir: freshDir('args'), force: false }
    const cases: Array<[any, string, string?]> = [
      [undefined, 'opts'],
      [{ ...ok, storeDir: 1 }, 'storeDir'],
      [{ ...ok, targetDir: '' }, 'targetDir', 'ERR_INVALID_ARG_VALUE'],
      [{ ...ok, targetDir: 'node_modules/a' }, 'targetDir', 'ERR_INVALID_ARG_VALUE'],
      [{ ...ok, filesResponse: null }, 'filesResponse'],
      [{ ...ok, filesResponse: { filesMap: { 'a.js': '/x' } } }, 'filesResponse.filesMap'],
      [{ ...ok, packageImportMethod: 5 }, 'packageImportMethod'],
    ]
    for (const [opts, name, code = 'ERR_INVALID_ARG_TYPE'] of cases) {
      const err = await cas.importPackage(opts).then(() => undefined, (e) => e)
      expect(err).toBeInstanceOf(TypeError)
      expect(err.code).toBe(code)
      expect(err.message).toContain(`"${name}"`)
    }
  })
})
