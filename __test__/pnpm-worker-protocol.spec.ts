/**
 * `@cas/native/pnpm-worker` against the `dist/worker/index.js` bundled in the pnpm 11 CLI package:
 * both run as worker_threads scripts, get the same messages, and their replies are compared
 * (status, value, index rows as pnpm's main thread commits them, warnings, error shapes), as is
 * what the requests leave on disk.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StoreIndex } from '@pnpm/store.index'
import { freshStoreDir, tarballFixtures } from './helpers/stores.js'
import { freshDir, snapshotTree, comparable } from './helpers/trees.js'
import { pnpmPackageDir, repoDir } from './helpers/pnpm-cli.js'
import { ProtocolWorker } from './helpers/protocol-worker.js'
import { tgz } from './helpers/tar.js'
import * as cas from '../dist/api/index.js'

const fixtures = tarballFixtures().filter((f) => f.integrity.startsWith('sha512-')).slice(0, 6)

interface Side { name: 'pnpm' | 'cas', worker: ProtocolWorker, storeDir: string, index: StoreIndex }
let sides: Side[]

const relativeMap = (m: Map<string, string>, storeDir: string) => [...m].map(([k, v]) => [k, path.relative(storeDir, v)])
const noCheckedAt = (row: any) => row == null ? row : { ...row, files: new Map([...row.files].map(([k, v]: any) => [k, { ...v, checkedAt: 0 }])) }

async function both (message: (side: Side) => unknown): Promise<[any, any]> {
  const [a, b] = await Promise.all(sides.map((s) => s.worker.request(message(s))))
  return [a, b]
}

beforeAll(() => {
  sides = [
    { name: 'pnpm', script: path.join(pnpmPackageDir, 'dist', 'worker.js') },
    { name: 'cas', script: path.join(repoDir, 'dist', 'pnpm-worker', 'index.js') },
  ].map(({ name, script }) => {
    const storeDir = freshStoreDir(`proto-${name}`)
    fs.mkdirSync(storeDir, { recursive: true })
    return { name: name as Side['name'], worker: new ProtocolWorker(script), storeDir, index: new StoreIndex(storeDir) }
  })
})

afterAll(async () => {
  for (const s of sides ?? []) {
    s.index.close()
    await s.worker.worker.terminate()
  }
})

describe('init-store', () => {
  it('replies success with no value and creates the 256 shards', async () => {
    const [theirs, ours] = await both((s) => ({ type: 'init-store', storeDir: s.storeDir }))
    expect(ours).toEqual(theirs)
    expect(ours).toEqual({ status: 'success' })
    expect(fs.readdirSync(path.join(sides[1].storeDir, 'files')).sort()).toEqual(fs.readdirSync(path.join(sides[0].storeDir, 'files')).sort())
  })
})

describe('extract', () => {
  it('replies with pnpm\'s value and index rows (a Uint8Array over a SharedArrayBuffer), committed the way pnpm\'s main thread does', async () => {
    for (const f of fixtures) {
      const [theirs, ours] = await both((s) => ({
        type: 'extract', buffer: new Uint8Array(f.buffer), storeDir: s.storeDir, integrity: f.integrity, filesIndexFile: f.key, readManifest: true, pkg: { name: f.name, version: f.version },
      }))
      expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort())
      expect(ours.status).toBe('success')
      expect(relativeMap(ours.value.filesMap, sides[1].storeDir)).toEqual(relativeMap(theirs.value.filesMap, sides[0].storeDir))
      expect({ ...ours.value, filesMap: null }).toEqual({ ...theirs.value, filesMap: null })
      expect(ours.indexWrites.map((w: any) => w.key)).toEqual(theirs.indexWrites.map((w: any) => w.key))
      for (const w of ours.indexWrites) {
        expect(w.buffer).toBeInstanceOf(Uint8Array)
        expect(w.buffer.buffer).toBeInstanceOf(SharedArrayBuffer)
        expect(w.buffer.buffer.byteLength).toBe(w.buffer.byteLength)
      }
      sides[0].index.setRawMany(theirs.indexWrites)
      sides[1].index.setRawMany(ours.indexWrites)
      expect(noCheckedAt(sides[1].index.get(f.key))).toEqual(noCheckedAt(sides[0].index.get(f.key)))
    }
  })

  it('without a locked integrity: the computed one, and the row filed under it too (pkgId)', async () => {
    const f = fixtures[1]
    const [theirs, ours] = await both((s) => ({ type: 'extract', buffer: new Uint8Array(f.buffer), storeDir: s.storeDir, filesIndexFile: 'no-integrity-key', pkgId: `${f.name}@${f.version}` }))
    expect(ours.value.integrity).toBe(theirs.value.integrity)
    expect(ours.indexWrites.map((w: any) => w.key)).toEqual(theirs.indexWrites.map((w: any) => w.key))
    expect(ours.indexWrites).toHaveLength(2)
  })

  it('a tarball given by path (tarballFile)', async () => {
    const f = fixtures[2]
    const file = path.join(freshDir('proto-file'), 'pkg.tgz')
    fs.writeFileSync(file, f.buffer)
    const [theirs, ours] = await both((s) => ({ type: 'extract', tarballFile: file, storeDir: s.storeDir, integrity: f.integrity, filesIndexFile: 'by-path' }))
    expect(ours.status).toBe('success')
    expect({ ...ours.value, filesMap: null }).toEqual({ ...theirs.value, filesMap: null })
    expect([...ours.value.filesMap.keys()]).toEqual([...theirs.value.filesMap.keys()])
  })

  it('an integrity mismatch: the same integrity_validation_failed reply', async () => {
    const f = fixtures[0]
    const [theirs, ours] = await both((s) => ({ type: 'extract', buffer: new Uint8Array(f.buffer), storeDir: s.storeDir, integrity: fixtures[1].integrity, filesIndexFile: 'bad' }))
    expect(ours).toEqual(theirs)
    expect(ours.error.type).toBe('integrity_validation_failed')
  })

  it('a corrupt gzip stream and a bad ignore pattern: the same error code and message', async () => {
    const corrupt = new Uint8Array(fixtures[0].buffer.subarray(0, 100))
    for (const extra of [{ buffer: corrupt }, { buffer: new Uint8Array(fixtures[0].buffer), ignoreFilePattern: '(' }]) {
      const [theirs, ours] = await both((s) => ({ type: 'extract', storeDir: s.storeDir, filesIndexFile: 'corrupt', ...extra }))
      expect(ours.status).toBe('error')
      expect({ code: ours.error.code, message: ours.error.message }).toEqual({ code: theirs.error.code, message: theirs.error.message })
    }
  })
})

describe('extract with maxTarballUnpackedSize', () => {
  it('over the limit: the same error code, each side a hint; at the limit: the same success', async () => {
    const manifest = '{"name":"big","version":"1.0.0"}'
    const buffer = tgz([{ name: 'package/package.json', content: manifest }, { name: 'package/a.js', content: 'a'.repeat(1000) }])
    const unpacked = manifest.length + 1000
    for (const max of [unpacked - 1, unpacked]) {
      const [theirs, ours] = await both((s) => ({ type: 'extract', buffer: new Uint8Array(buffer), storeDir: s.storeDir, filesIndexFile: `limit-${max}`, maxTarballUnpackedSize: max }))
      expect(theirs.status).toBe(max < unpacked ? 'error' : 'success')
      expect(ours.status).toBe(theirs.status)
      if (theirs.status === 'success') {
        expect([...ours.value.filesMap.keys()]).toEqual([...theirs.value.filesMap.keys()])
        continue
      }
      expect(ours.error.code).toBe(theirs.error.code)
      expect(ours.error.code).toBe('ERR_PNPM_TARBALL_TOO_LARGE')
      expect(typeof ours.error.hint).toBe('string')
      expect(ours.error.message).not.toBe(theirs.error.message)
    }
  })
})

describe('readPkgFromCafs', () => {
  it('a stored package, verified: the same value, warnings and verified-file count', async () => {
    for (const f of fixtures) {
      const [theirs, ours] = await both((s) => ({
        type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: s.storeDir, verifyStoreIntegrity: true, expectedPkg: { name: f.name, version: f.version },
      }))
      expect(Object.keys(ours).sort()).toEqual(Object.keys(theirs).sort())
      expect(ours.warnings).toEqual(theirs.warnings)
      expect(ours.verifiedFileIntegrity.files).toBe(theirs.verifiedFileIntegrity.files)
      expect(relativeMap(ours.value.files.filesMap, sides[1].storeDir)).toEqual(relativeMap(theirs.value.files.filesMap, sides[0].storeDir))
      const strip = (v: any) => ({ ...v, files: { ...v.files, filesMap: null } })
      expect(strip(ours.value)).toEqual(strip(theirs.value))
    }
  })

  it('a missing row: the same miss reply', async () => {
    const [theirs, ours] = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: 'nope', storeDir: s.storeDir, verifyStoreIntegrity: true }))
    expect(ours).toEqual(theirs)
    expect(ours.value).toEqual({ verified: false, pkgFilesIndex: null })
  })

  it('a name mismatch: the same error code and message, a hint with the same facts; non-strict: one warning', async () => {
    const f = fixtures[0]
    const msg = (s: Side, strict: boolean) => ({ type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: s.storeDir, verifyStoreIntegrity: false, strictStorePkgContentCheck: strict, expectedPkg: { name: 'other', version: f.version } })
    const [theirs, ours] = await both((s) => msg(s, true))
    expect(ours.status).toBe('error')
    expect({ code: ours.error.code, message: ours.error.message }).toEqual({ code: theirs.error.code, message: theirs.error.message })
    // The hint is in @cas/native's own words; the facts are the same.
    for (const fact of [`other@${f.version}`, `${f.name}@${f.version}`, 'strictStorePkgContentCheck']) {
      expect(theirs.error.hint).toContain(fact)
      expect(ours.error.hint).toContain(fact)
    }
    const [theirs2, ours2] = await both((s) => msg(s, false))
    expect(ours2.warnings).toHaveLength(theirs2.warnings.length)
    expect(ours2.warnings).toHaveLength(1)
    expect(ours2.warnings[0]).toContain(`${f.name}@${f.version}`)
  })
})

describe('link, symlinkAllModules, hardLinkDir', () => {
  it('import the same trees with the same reply', async () => {
    const f = fixtures[0]
    const targets = new Map<string, string>()
    for (const s of sides) targets.set(s.name, path.join(freshDir(`proto-link-${s.name}`), 'node_modules', f.name))
    const reads = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: s.storeDir, verifyStoreIntegrity: false }))
    const [theirs, ours] = await Promise.all(sides.map((s, i) => s.worker.request({
      type: 'link', storeDir: s.storeDir, packageImportMethod: 'copy', filesResponse: reads[i].value.files, targetDir: targets.get(s.name), force: false, keepModulesDir: false,
    })))
    expect(ours).toEqual(theirs)
    expect(ours).toEqual({ status: 'success', value: { isBuilt: false, importMethod: 'copy' } })
    const tree = (s: Side) => comparable(snapshotTree(targets.get(s.name)!))
    expect(tree(sides[1])).toEqual(tree(sides[0]))
    // Again: already there, nothing done.
    const again = await both((s) => ({ type: 'link', storeDir: s.storeDir, packageImportMethod: 'copy', filesResponse: reads[sides.indexOf(s)].value.files, targetDir: targets.get(s.name), force: false }))
    expect(again[1]).toEqual(again[0])

    const deps = (s: Side) => [{ name: 'app', modules: path.join(path.dirname(targets.get(s.name)!), '..', 'app-modules'), children: { [f.name]: targets.get(s.name)! } }]
    const [t2, o2] = await both((s) => ({ type: 'symlinkAllModules', deps: deps(s) }))
    expect(o2).toEqual(t2)
    expect(o2).toEqual({ status: 'success' })
    const [t3, o3] = await both((s) => ({ type: 'symlinkAllModules', deps: [{ name: 'app', modules: deps(s)[0].modules, children: { '../evil': targets.get(s.name)! } }] }))
    expect(o3.status).toBe('error')
    expect(o3.error.code).toBe(t3.error.code)

    const [t4, o4] = await both((s) => ({ type: 'hardLinkDir', src: targets.get(s.name), destDirs: [`${targets.get(s.name)}-copy`] }))
    expect(o4).toEqual(t4)
    expect(comparable(snapshotTree(`${targets.get('cas')}-copy`))).toEqual(comparable(snapshotTree(`${targets.get('pnpm')}-copy`)))
  })

  it('picks the import method as pnpm 11.28 does: the store\'s method over the package\'s, copy for a to-be-built package under copy', async () => {
    const f = fixtures[2]
    const reads = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: s.storeDir, verifyStoreIntegrity: false }))
    for (const [storeMethod, pkgMethod, requiresBuild] of [['copy', 'hardlink', false], ['copy', undefined, true], ['auto', 'copy', false], ['hardlink', undefined, false]] as const) {
      const targets = sides.map((s) => path.join(freshDir(`proto-method-${s.name}`), 'pkg'))
      const [theirs, ours] = await Promise.all(sides.map((s, i) => s.worker.request({
        type: 'link',
        storeDir: s.storeDir,
        packageImportMethod: storeMethod,
        requiresBuild,
        force: false,
        targetDir: targets[i],
        filesResponse: { ...reads[i].value.files, packageImportMethod: pkgMethod },
      })))
      expect(ours, `${storeMethod}/${pkgMethod}/${requiresBuild}`).toEqual(theirs)
    }
  })

  it('a failing import: the same error code and message (pnpm\'s main thread adds the prefix)', async () => {
    const targets = sides.map(() => path.join(freshDir('proto-fail'), 'x'))
    const [theirs, ours] = await both((s) => ({
      type: 'link',
      storeDir: s.storeDir,
      packageImportMethod: 'copy',
      force: false,
      targetDir: targets[sides.indexOf(s)],
      filesResponse: { resolvedFrom: 'store', filesMap: new Map([['index.js', path.join(s.storeDir, 'files', '00', 'missing')]]) },
    }))
    expect(ours.status).toBe('error')
    // The staging dir's name (pid and counter) is each importer's own.
    const normalize = (message: string, i: number) => message.replace(sides[i].storeDir, '<store>').replace(targets[i], '<target>').replace(/_tmp_[^/]+/, '_tmp_')
    expect({ code: ours.error.code, message: normalize(ours.error.message, 1) })
      .toEqual({ code: theirs.error.code, message: normalize(theirs.error.message, 0) })
  })
})

describe('add-dir', () => {
  it('the same value and row for a package directory', async () => {
    const dir = freshDir('proto-dir')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'local', version: '1.0.0', scripts: { install: 'x' } }))
    fs.writeFileSync(path.join(dir, 'index.js'), 'module.exports = 1\n')
    const [theirs, ours] = await both((s) => ({ type: 'add-dir', storeDir: s.storeDir, dir, filesIndexFile: 'dir-key', readManifest: true, requiresPrepare: true }))
    expect(ours.status).toBe('success')
    expect({ ...ours.value, filesMap: null }).toEqual({ ...theirs.value, filesMap: null })
    expect(relativeMap(ours.value.filesMap, sides[1].storeDir)).toEqual(relativeMap(theirs.value.filesMap, sides[0].storeDir))
    sides[0].index.setRawMany(theirs.indexWrites)
    sides[1].index.setRawMany(ours.indexWrites)
    expect(noCheckedAt(sides[1].index.get('dir-key'))).toEqual(noCheckedAt(sides[0].index.get('dir-key')))
  })
})

describe('gypfile (pnpm 11.28 reads it)', () => {
  /** Manifests beside a root binding.gyp: opted out, and the values that do not opt out. */
  const manifests = [
    { name: 'gyp-off', version: '1.0.0', gypfile: false },
    { name: 'gyp-off-scripted', version: '1.0.0', gypfile: false, scripts: { postinstall: 'node x.js' } },
    { name: 'gyp-on', version: '1.0.0', gypfile: true },
    { name: 'gyp-string', version: '1.0.0', gypfile: 'false' },
    { name: 'gyp-null', version: '1.0.0', gypfile: null },
    { name: 'gyp-unsaid', version: '1.0.0' },
  ]
  const tarball = (manifest: object, extra: Array<{ name: string, content: string }> = []): Buffer => tgz([
    { name: 'package/package.json', content: JSON.stringify(manifest) },
    { name: 'package/binding.gyp', content: '{"targets":[]}' },
    ...extra,
  ])
  const sha512 = (b: Buffer): string => `sha512-${crypto.createHash('sha512').update(b).digest('base64')}`

  it('extract and add-dir: the same requiresBuild and index row (the manifest\'s gypfile kept in it) as pnpm\'s worker', async () => {
    for (const manifest of manifests) {
      const buffer = tarball(manifest)
      const key = `${sha512(buffer)}\t${manifest.name}@1.0.0`
      const [theirs, ours] = await both((s) => ({ type: 'extract', buffer: new Uint8Array(buffer), storeDir: s.storeDir, integrity: sha512(buffer), filesIndexFile: key, readManifest: true }))
      expect(ours.status, manifest.name).toBe('success')
      expect({ ...ours.value, filesMap: null }, manifest.name).toEqual({ ...theirs.value, filesMap: null })
      sides[0].index.setRawMany(theirs.indexWrites)
      sides[1].index.setRawMany(ours.indexWrites)
      expect(noCheckedAt(sides[1].index.get(key)), manifest.name).toEqual(noCheckedAt(sides[0].index.get(key)))
      const dir = freshDir('proto-gyp')
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest))
      fs.writeFileSync(path.join(dir, 'binding.gyp'), '{"targets":[]}')
      const [theirDir, ourDir] = await both((s) => ({ type: 'add-dir', storeDir: s.storeDir, dir, filesIndexFile: `dir-${key}`, readManifest: true }))
      expect({ ...ourDir.value, filesMap: null }, manifest.name).toEqual({ ...theirDir.value, filesMap: null })
      sides[0].index.setRawMany(theirDir.indexWrites)
      sides[1].index.setRawMany(ourDir.indexWrites)
      expect(noCheckedAt(sides[1].index.get(`dir-${key}`)), manifest.name).toEqual(noCheckedAt(sides[0].index.get(`dir-${key}`)))
    }
    // What tells the cases apart: only `gypfile: false` without a build script requires no build.
    const [, ours] = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: `${sha512(tarball(manifests[0]))}\tgyp-off@1.0.0`, storeDir: s.storeDir, verifyStoreIntegrity: false }))
    expect(ours.value.files.requiresBuild).toBe(false)
    expect(ours.value.bundledManifest.gypfile).toBe(false)
  })

  it('reads a row a writer that ignores gypfile wrote (requiresBuild true, no gypfile in its manifest) as pnpm\'s worker does: asking the package.json in the store', async () => {
    const cases = [
      { manifest: manifests[0], requiresBuild: false },
      { manifest: manifests[2], requiresBuild: true },
      { manifest: manifests[5], requiresBuild: true },
      // A .hooks entry settles it without the package.json.
      { manifest: { name: 'gyp-off-hooked', version: '1.0.0', gypfile: false }, extra: [{ name: 'package/.hooks/x', content: 'x' }], requiresBuild: true },
    ]
    for (const { manifest, extra, requiresBuild } of cases) {
      const buffer = tarball(manifest, extra)
      const key = `old\t${manifest.name}@1.0.0`
      for (const s of sides) await cas.addFilesFromTarball({ buffer, storeDir: s.storeDir, filesIndexFile: key, compat: '@pnpm/worker@1100' })
      expect(sides[1].index.get(key).requiresBuild, manifest.name).toBe(true)
      for (const verifyStoreIntegrity of [false, true]) {
        const [theirs, ours] = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: key, storeDir: s.storeDir, verifyStoreIntegrity }))
        expect(ours.value.files.requiresBuild, manifest.name).toBe(theirs.value.files.requiresBuild)
        expect(theirs.value.files.requiresBuild, manifest.name).toBe(requiresBuild)
      }
    }
  })
})

describe('add-dir walks as pnpm 11.28', () => {
  it('leaves out a root node_modules link to a file, and listed files whose real path is outside the package', async () => {
    const root = freshDir('proto-walk')
    const dir = path.join(root, 'pkg')
    fs.mkdirSync(path.join(dir, 'in'), { recursive: true })
    fs.mkdirSync(path.join(root, 'outside'))
    fs.writeFileSync(path.join(root, 'outside', 'x.js'), 'outside\n')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'walk', version: '1.0.0' }))
    fs.writeFileSync(path.join(dir, 'nm.txt'), 'nm\n')
    fs.writeFileSync(path.join(dir, 'in', 'y.js'), 'in\n')
    fs.symlinkSync('nm.txt', path.join(dir, 'node_modules'))
    fs.symlinkSync('in', path.join(dir, 'inlink'))
    fs.symlinkSync(path.join(root, 'outside'), path.join(dir, 'outlink'))
    const cases: Array<[string, string[] | undefined, string[]]> = [
      ['walk-key', undefined, ['in/y.js', 'inlink/y.js', 'nm.txt', 'package.json']],
      ['list-key', ['package.json', 'outlink/x.js', 'inlink/y.js', '../outside/x.js', 'node_modules'], ['package.json', 'inlink/y.js', 'node_modules']],
    ]
    for (const [filesIndexFile, files, keys] of cases) {
      const [theirs, ours] = await both((s) => ({ type: 'add-dir', storeDir: s.storeDir, dir, filesIndexFile, files }))
      expect([...theirs.value.filesMap.keys()]).toStrictEqual(keys)
      expect(ordered({ ...ours, value: { ...ours.value, filesMap: relativeMap(ours.value.filesMap, sides[1].storeDir) }, indexWrites: null }))
        .toStrictEqual(ordered({ ...theirs, value: { ...theirs.value, filesMap: relativeMap(theirs.value.filesMap, sides[0].storeDir) }, indexWrites: null }))
      sides[0].index.setRawMany(theirs.indexWrites)
      sides[1].index.setRawMany(ours.indexWrites)
      expect(ordered(sides[1].index.get(filesIndexFile))).toStrictEqual(ordered(sides[0].index.get(filesIndexFile)))
    }
  })
})

describe('side effects without symlinks', () => {
  it('an unchanged build and a changed one: the same maps, key for key, verified or not', async () => {
    const dir = freshDir('proto-se')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'se', version: '1.0.0' }))
    fs.writeFileSync(path.join(dir, 'a.js'), '1\n')
    const add = async (sideEffectsCacheKey?: string) => {
      for (const s of sides) s.index.setRawMany((await sides[0].worker.request({ type: 'add-dir', storeDir: s.storeDir, dir, filesIndexFile: 'se-key', sideEffectsCacheKey })).indexWrites)
    }
    await add()
    await add('unchanged')
    fs.writeFileSync(path.join(dir, 'b.js'), '2\n')
    await add('changed')
    for (const verifyStoreIntegrity of [true, false]) {
      const [theirs, ours] = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: 'se-key', storeDir: s.storeDir, verifyStoreIntegrity }))
      const shape = (files: any) => [...files.sideEffectsMaps].map(([k, e]: any) => [k, Object.keys(e).sort()])
      expect(shape(ours.value.files)).toStrictEqual(shape(theirs.value.files))
      expect([...ours.value.files.sideEffectsDiffs.keys()]).toStrictEqual([...theirs.value.files.sideEffectsDiffs.keys()])
    }
  })
})

describe('side effects with a symlink (pnpm 11.28 records them)', () => {
  it('reads them back as a `symlinks` map and links them, as pnpm\'s worker does', async () => {
    const f = fixtures[0]
    // A built package: its files plus a symlink; pnpm's worker records it in both stores.
    const built = freshDir('proto-built')
    const { value: read0 } = await sides[0].worker.request({ type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: sides[0].storeDir, verifyStoreIntegrity: false })
    for (const [rel, blob] of read0.files.filesMap) {
      fs.mkdirSync(path.dirname(path.join(built, rel)), { recursive: true })
      fs.copyFileSync(blob, path.join(built, rel))
    }
    fs.writeFileSync(path.join(built, 'generated.js'), 'module.exports = 2\n')
    fs.symlinkSync('generated.js', path.join(built, 'alias.js'))
    for (const s of sides) {
      const reply = await sides[0].worker.request({ type: 'add-dir', storeDir: s.storeDir, dir: built, filesIndexFile: f.key, sideEffectsCacheKey: 'built-key' })
      expect(reply.status).toBe('success')
      s.index.setRawMany(reply.indexWrites)
    }
    for (const verifyStoreIntegrity of [false, true]) {
      const [theirs, ours] = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: s.storeDir, verifyStoreIntegrity }))
      expect(theirs.value.files.sideEffectsMaps.get('built-key').symlinks).toEqual(new Map([['alias.js', 'generated.js']]))
      const rel = (e: any, storeDir: string) => ({ ...e, added: e.added && relativeMap(e.added, storeDir) })
      expect(rel(ours.value.files.sideEffectsMaps.get('built-key'), sides[1].storeDir)).toEqual(rel(theirs.value.files.sideEffectsMaps.get('built-key'), sides[0].storeDir))
      expect(noCheckedAt({ files: ours.value.files.sideEffectsDiffs.get('built-key').added })).toEqual(noCheckedAt({ files: theirs.value.files.sideEffectsDiffs.get('built-key').added }))
    }
    const reads = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: f.key, storeDir: s.storeDir, verifyStoreIntegrity: false }))
    const targets = sides.map((s) => path.join(freshDir(`proto-built-${s.name}`), 'pkg'))
    const links = await Promise.all(sides.map((s, i) => s.worker.request({
      type: 'link', storeDir: s.storeDir, packageImportMethod: 'copy', filesResponse: reads[i].value.files, sideEffectsCacheKey: 'built-key', targetDir: targets[i], force: false,
    })))
    expect(links[1]).toEqual(links[0])
    expect(links[1].value.isBuilt).toBe(true)
    expect(comparable(snapshotTree(targets[1]))).toEqual(comparable(snapshotTree(targets[0])))
    expect(fs.readlinkSync(path.join(targets[1], 'alias.js'))).toBe('generated.js')
  })
})

/**
 * A value with its order made visible (Maps and objects as entry lists, `undefined` fields kept)
 * and every `checkedAt` set to 0, so that `toStrictEqual` compares what the row bytes encode.
 */
function ordered (v: any): any {
  if (v instanceof Map) return ['Map', [...v].map(([k, x]) => [k, ordered(x)])]
  if (Array.isArray(v)) return v.map(ordered)
  if (v != null && typeof v === 'object' && !(v instanceof Uint8Array)) return Object.entries(v).map(([k, x]) => [k, k === 'checkedAt' ? 0 : ordered(x)])
  return v
}

describe('side-effects upload with symlinks (pnpm 11.28 records them)', () => {
  const key = 'sl-key'
  let pkg: string

  /** One add-dir request to both sides (each its own store), checked equal, its rows committed. */
  async function addDirBoth (extra: Record<string, unknown>): Promise<any> {
    const [theirs, ours] = await both((s) => ({ type: 'add-dir', storeDir: s.storeDir, dir: pkg, filesIndexFile: key, ...extra }))
    expect(theirs.status).toBe('success')
    expect(Object.keys(ours)).toStrictEqual(Object.keys(theirs))
    expect(Object.keys(ours.value)).toStrictEqual(Object.keys(theirs.value))
    expect(ordered({ ...ours.value, filesMap: relativeMap(ours.value.filesMap, sides[1].storeDir) }))
      .toStrictEqual(ordered({ ...theirs.value, filesMap: relativeMap(theirs.value.filesMap, sides[0].storeDir) }))
    expect(ours.indexWrites?.map((w: any) => w.key)).toStrictEqual(theirs.indexWrites?.map((w: any) => w.key))
    for (const [i, reply] of [theirs, ours].entries()) {
      if (reply.indexWrites != null) sides[i].index.setRawMany(reply.indexWrites)
    }
    expect(ordered(sides[1].index.get(key))).toStrictEqual(ordered(sides[0].index.get(key)))
    return theirs
  }

  beforeAll(() => {
    pkg = freshDir('proto-sl')
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'sl', version: '1.0.0' }))
    fs.writeFileSync(path.join(pkg, 'index.js'), 'module.exports = 1\n')
    fs.mkdirSync(path.join(pkg, 'lib'))
    fs.writeFileSync(path.join(pkg, 'lib', 'a.js'), 'a\n')
  })

  it('records relative links to a file and to a directory: the same reply and row; read and linked, they come back as links', async () => {
    await addDirBoth({})
    // The build: new files, and links pnpm can recreate.
    fs.writeFileSync(path.join(pkg, 'generated.js'), 'module.exports = 2\n')
    fs.mkdirSync(path.join(pkg, 'lib', 'gen'))
    fs.writeFileSync(path.join(pkg, 'lib', 'gen', 'x.js'), 'x\n')
    fs.symlinkSync('generated.js', path.join(pkg, 'alias.js'))
    fs.symlinkSync('./gen', path.join(pkg, 'lib', 'gen-link'))
    fs.symlinkSync('../index.js', path.join(pkg, 'lib', 'up.js'))
    for (const k of ['k1', 'k2']) {
      const theirs = await addDirBoth({ sideEffectsCacheKey: k })
      expect([...theirs.value.sideEffects.added].map(([p, f]: any) => [p, f.mode, f.size]).slice(-3))
        .toStrictEqual([['alias.js', 0o120000, 12], ['lib/gen-link', 0o120000, 3], ['lib/up.js', 0o120000, 11]])
    }
    // pnpm's worker reads our store as it reads its own.
    const theirRead = await sides[0].worker.request({ type: 'readPkgFromCafs', filesIndexFile: key, storeDir: sides[0].storeDir, verifyStoreIntegrity: true })
    const theirReadOfOurs = await sides[0].worker.request({ type: 'readPkgFromCafs', filesIndexFile: key, storeDir: sides[1].storeDir, verifyStoreIntegrity: true })
    const rel = (e: any, storeDir: string) => ({ ...e, added: relativeMap(e.added, storeDir) })
    expect(theirRead.value.files.sideEffectsMaps.get('k1').symlinks)
      .toStrictEqual(new Map([['alias.js', 'generated.js'], ['lib/gen-link', 'gen'], ['lib/up.js', '../index.js']]))
    expect(rel(theirReadOfOurs.value.files.sideEffectsMaps.get('k1'), sides[1].storeDir)).toStrictEqual(rel(theirRead.value.files.sideEffectsMaps.get('k1'), sides[0].storeDir))
    // Each side reads and links its own store.
    const reads = await both((s) => ({ type: 'readPkgFromCafs', filesIndexFile: key, storeDir: s.storeDir, verifyStoreIntegrity: false }))
    const targets = sides.map((s) => path.join(freshDir(`proto-sl-${s.name}`), 'pkg'))
    const links = await Promise.all(sides.map((s, i) => s.worker.request({
      type: 'link', storeDir: s.storeDir, packageImportMethod: 'copy', filesResponse: reads[i].value.files, sideEffectsCacheKey: 'k1', targetDir: targets[i], force: false,
    })))
    expect(links[1]).toStrictEqual(links[0])
    expect(comparable(snapshotTree(targets[1]))).toStrictEqual(comparable(snapshotTree(targets[0])))
    // The package as built, its link texts in the normal form they were recorded in.
    expect(comparable(snapshotTree(targets[1]))).toStrictEqual(comparable(snapshotTree(pkg)).map((l) => l.replace(' -> ./gen', ' -> gen')))
  })

  it('a link it cannot record (absolute, leaving the package, into node_modules) drops the upload: the same reply, the entry removed from the row', async () => {
    const outside = freshDir('proto-sl-outside')
    fs.writeFileSync(path.join(outside, 'o.js'), 'outside\n')
    fs.mkdirSync(path.join(pkg, 'node_modules', 'dep'), { recursive: true })
    fs.writeFileSync(path.join(pkg, 'node_modules', 'dep', 'index.js'), 'dep\n')
    const cases: Array<[string, string, string]> = [
      // [link, target, the cache key uploaded with it]
      ['absolute.js', path.join(pkg, 'index.js'), 'k1'],
      ['escape.js', path.relative(pkg, path.join(outside, 'o.js')), 'k1'],
      ['dep.js', 'node_modules/dep/index.js', 'k2'],
    ]
    for (const [link, target, k] of cases) {
      fs.symlinkSync(target, path.join(pkg, link))
      const theirs = await addDirBoth({ sideEffectsCacheKey: k })
      expect(theirs.value.sideEffects).toBeUndefined()
      expect('indexWrites' in theirs).toBe(true)
      fs.unlinkSync(path.join(pkg, link))
    }
    // k1 removed, then nothing left to remove under k1, then k2 removed: `sideEffects` stays, undefined.
    const row = sides[1].index.get(key) as any
    expect(Object.keys(row)).toContain('sideEffects')
    expect(row.sideEffects).toBeUndefined()
  })

  it('a files list never records a link: a listed link drops the upload, an unlisted one is left out', async () => {
    await addDirBoth({ sideEffectsCacheKey: 'k3', files: ['package.json', 'index.js', 'generated.js'] })
    expect([...(sides[1].index.get(key) as any).sideEffects.keys()]).toStrictEqual(['k3'])
    const theirs = await addDirBoth({ sideEffectsCacheKey: 'k3', files: ['package.json', 'index.js', 'alias.js'] })
    expect(theirs.value.sideEffects).toBeUndefined()
    expect((sides[1].index.get(key) as any).sideEffects).toBeUndefined()
  })
})

describe('side-effects upload of a package with bundled dependencies (pnpm 11.28\'s diff)', () => {
  const key = 'built-bundler'
  // The tarball's order is not the walk's: changed files come in another order in the row.
  const tarball = tgz([
    { name: 'package/z.js', content: 'z\n' },
    { name: 'package/package.json', content: JSON.stringify({ name: 'bundler', version: '1.0.0', bundledDependencies: ['dep'], scripts: { install: 'node build.js' } }) },
    { name: 'package/z-gone.js', content: 'deleted by the build\n' },
    { name: 'package/lib/b.js', content: 'b\n' },
    { name: 'package/index.js', content: 'module.exports = 1\n' },
    { name: 'package/bin/cli.js', content: '#!/usr/bin/env node\n', mode: 0o755 },
    { name: 'package/a-gone.js', content: 'deleted too\n' },
    { name: 'package/node_modules/dep/package.json', content: JSON.stringify({ name: 'dep', version: '2.0.0' }) },
    { name: 'package/node_modules/dep/index.js', content: 'module.exports = "dep"\n' },
    { name: 'package/keep.js', content: 'unchanged\n' },
  ])
  const filesIndexFile = `sha512-${crypto.createHash('sha512').update(tarball).digest('base64')}\tbundler@1.0.0`

  it('the same reply and row, bundled dependencies not deleted, `added` in the walk\'s order; read and linked, both trees keep the bundled dependencies', async () => {
    for (const s of sides) {
      const reply = await s.worker.request({ type: 'extract', buffer: new Uint8Array(tarball), storeDir: s.storeDir, filesIndexFile, readManifest: true })
      expect(reply.status).toBe('success')
      s.index.setRawMany(reply.indexWrites)
    }
    // pnpm imports the package where its scripts run (bundled dependencies included)…
    const built = path.join(freshDir('proto-bundled'), 'bundler')
    const { value: stored } = await sides[0].worker.request({ type: 'readPkgFromCafs', filesIndexFile, storeDir: sides[0].storeDir, verifyStoreIntegrity: false })
    await sides[0].worker.request({ type: 'link', storeDir: sides[0].storeDir, packageImportMethod: 'copy', filesResponse: stored.files, targetDir: built, requiresBuild: true, force: false })
    expect(fs.existsSync(path.join(built, 'node_modules', 'dep', 'index.js'))).toBe(true)
    // …and they change it: content, modes both ways, new files, deletions.
    fs.writeFileSync(path.join(built, 'index.js'), 'module.exports = 2\n')
    fs.writeFileSync(path.join(built, 'lib', 'b.js'), 'b, built\n')
    fs.chmodSync(path.join(built, 'z.js'), 0o755)
    fs.chmodSync(path.join(built, 'bin', 'cli.js'), 0o644)
    fs.mkdirSync(path.join(built, 'build'))
    fs.writeFileSync(path.join(built, 'build', 'out.node'), 'native\n')
    fs.writeFileSync(path.join(built, 'new.js'), 'new\n')
    fs.unlinkSync(path.join(built, 'z-gone.js'))
    fs.unlinkSync(path.join(built, 'a-gone.js'))

    const [theirs, ours] = await both((s) => ({ type: 'add-dir', storeDir: s.storeDir, dir: built, filesIndexFile, sideEffectsCacheKey: key }))
    expect(theirs.status).toBe('success')
    expect(Object.keys(ours)).toStrictEqual(Object.keys(theirs))
    expect(ordered({ ...ours.value, filesMap: relativeMap(ours.value.filesMap, sides[1].storeDir) }))
      .toStrictEqual(ordered({ ...theirs.value, filesMap: relativeMap(theirs.value.filesMap, sides[0].storeDir) }))
    // What pnpm 11.28 records (and @pnpm/worker 1100.x would not: it lists the bundled
    // dependencies as deleted and puts changed files first, in the row's order).
    expect(theirs.value.sideEffects.deleted).toStrictEqual(['z-gone.js', 'a-gone.js'])
    expect([...theirs.value.sideEffects.added].map(([p, f]: any) => [p, f.mode]))
      .toStrictEqual([['bin/cli.js', 0o644], ['build/out.node', 0o644], ['index.js', 0o644], ['lib/b.js', 0o644], ['new.js', 0o644], ['z.js', 0o755]])
    expect(ours.indexWrites.map((w: any) => w.key)).toStrictEqual(theirs.indexWrites.map((w: any) => w.key))
    sides[0].index.setRawMany(theirs.indexWrites)
    sides[1].index.setRawMany(ours.indexWrites)
    expect(ordered(sides[1].index.get(filesIndexFile))).toStrictEqual(ordered(sides[0].index.get(filesIndexFile)))

    // Read and linked by each side from its own store, and by pnpm's worker from ours.
    const readers: Array<[ProtocolWorker, string]> = [[sides[0].worker, sides[0].storeDir], [sides[1].worker, sides[1].storeDir], [sides[0].worker, sides[1].storeDir]]
    const trees: string[][] = []
    for (const [worker, storeDir] of readers) {
      const read = await worker.request({ type: 'readPkgFromCafs', filesIndexFile, storeDir, verifyStoreIntegrity: true })
      expect(read.value.verified).toBe(true)
      const entry = read.value.files.sideEffectsMaps.get(key)
      expect(entry.deleted).toStrictEqual(['z-gone.js', 'a-gone.js'])
      const targetDir = path.join(freshDir('proto-bundled-restored'), 'bundler')
      const linked = await worker.request({ type: 'link', storeDir, packageImportMethod: 'copy', filesResponse: read.value.files, sideEffectsCacheKey: key, targetDir, force: false })
      expect(linked).toStrictEqual({ status: 'success', value: { isBuilt: true, importMethod: 'copy' } })
      trees.push(comparable(snapshotTree(targetDir)))
    }
    expect(trees[1]).toStrictEqual(trees[0])
    expect(trees[2]).toStrictEqual(trees[0])
    // The package as built, bundled dependencies included.
    expect(trees[0]).toStrictEqual(comparable(snapshotTree(built)))
    expect(trees[0]).toContain(`node_modules/dep/index.js file 644 ${crypto.createHash('sha1').update('module.exports = "dep"\n').digest('hex')}`)
  })
})

describe('the worker itself', () => {
  it('answers an unknown request type with an empty reply, like pnpm\'s', async () => {
    const [theirs, ours] = await both(() => ({ type: 'no-such-type' }))
    expect(ours).toBe(theirs)
    expect(ours).toBeUndefined()
  })

  it('stops on `false`: exit code 0', async () => {
    const codes = await Promise.all(sides.map((s) => s.worker.stop()))
    expect(codes).toEqual([0, 0])
  })
})
