/**
 * Bad arguments to every exported function of `@cas/native`, `@cas/native/worker` and
 * `@cas/native/pnpmfile`: wrong types, missing fields, empty strings, NUL characters, unknown
 * enum values and relative paths where absolute ones are needed each throw (or reject with) a
 * `TypeError` whose `code` is Node's `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` and whose
 * message names the argument, before any work. The table must name every function export, so a
 * new one cannot slip by. The drop-in `@cas/native/worker` takes what pnpm's worker takes:
 * relative paths and truthy flags are not bad there (worker-api.spec.ts compares them with pnpm's).
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import * as cas from '../dist/api/index.js'
import * as worker from '../dist/worker/index.js'
import * as pnpmfile from '../dist/plugin/pnpmfile.js'
import { freshDir, freshStoreDir } from './helpers/stores.js'

const TYPE = 'ERR_INVALID_ARG_TYPE'
const VALUE = 'ERR_INVALID_ARG_VALUE'
type Case = [string, () => unknown, string, string] // what, call, argument named, code

const storeDir = freshStoreDir('bad-args')
const dir = freshDir('bad-args')
const buffer = Buffer.from('not looked at')
const storeIndex = { queueWrites () {}, setRawMany () {} }
const filesResponse = { resolvedFrom: 'store', filesMap: new Map([['a.js', path.join(storeDir, 'files/00/x')]]) }
const tarball = { buffer, storeDir, filesIndexFile: 'k' }
const fromDir = { storeDir, dir, filesIndexFile: 'k' }
const importOpts = { storeDir, targetDir: path.join(dir, 'nm/a'), filesResponse, force: false }
const dep = { name: 'a', modules: path.join(dir, 'nm'), children: { b: path.join(dir, 'b') } }
const stored = { filesIndexFile: 'k', name: 'a', version: '1.0.0', targetDir: path.join(dir, 'nm/a') }

/** The path checks every path argument gets: missing, empty, NUL, relative. */
function pathCases (what: string, name: string, call: (value: unknown) => unknown): Case[] {
  return [
    [`${what}: ${name} missing`, () => call(undefined), name, TYPE],
    [`${what}: ${name} a number`, () => call(7), name, TYPE],
    [`${what}: ${name} empty`, () => call(''), name, VALUE],
    [`${what}: ${name} with a NUL`, () => call(path.join(dir, 'a\0b')), name, VALUE],
    [`${what}: ${name} relative`, () => call('node_modules/.store'), name, VALUE],
  ]
}

function tarballCases (what: string, fn: (opts: any) => unknown, extra: object = {}): Case[] {
  const base = { ...tarball, ...extra }
  return [
    [`${what}: no options`, () => fn(undefined), 'opts', TYPE],
    [`${what}: buffer a string`, () => fn({ ...base, buffer: 'abc' }), 'buffer', TYPE],
    ...pathCases(what, 'storeDir', (v) => fn({ ...base, storeDir: v })),
    [`${what}: filesIndexFile missing`, () => fn({ ...base, filesIndexFile: undefined }), 'filesIndexFile', TYPE],
    [`${what}: filesIndexFile empty`, () => fn({ ...base, filesIndexFile: '' }), 'filesIndexFile', VALUE],
    [`${what}: integrity a number`, () => fn({ ...base, integrity: 1 }), 'integrity', TYPE],
    [`${what}: ignoreFilePattern a RegExp`, () => fn({ ...base, ignoreFilePattern: /x/ }), 'ignoreFilePattern', TYPE],
    [`${what}: appendManifest a string`, () => fn({ ...base, appendManifest: '{}' }), 'appendManifest', TYPE],
    [`${what}: maxTarballUnpackedSize negative`, () => fn({ ...base, maxTarballUnpackedSize: -1 }), 'maxTarballUnpackedSize', VALUE],
  ]
}

function dirCases (what: string, fn: (opts: any) => unknown, extra: object = {}): Case[] {
  const base = { ...fromDir, ...extra }
  return [
    [`${what}: no options`, () => fn(undefined), 'opts', TYPE],
    ...pathCases(what, 'storeDir', (v) => fn({ ...base, storeDir: v })),
    ...pathCases(what, 'dir', (v) => fn({ ...base, dir: v })),
    [`${what}: filesIndexFile missing`, () => fn({ ...base, filesIndexFile: undefined }), 'filesIndexFile', TYPE],
    [`${what}: files not an array`, () => fn({ ...base, files: 'a.js' }), 'files', TYPE],
    [`${what}: sideEffectsCacheKey a number`, () => fn({ ...base, sideEffectsCacheKey: 1 }), 'sideEffectsCacheKey', TYPE],
  ]
}

function readCases (what: string, fn: (ctx: any, key: any, opts?: any) => unknown): Case[] {
  return [
    [`${what}: no context`, () => fn(undefined, 'k'), 'ctx', TYPE],
    ...pathCases(what, 'storeDir', (v) => fn({ storeDir: v }, 'k')),
    [`${what}: verifyStoreIntegrity a string`, () => fn({ storeDir, verifyStoreIntegrity: 'yes' }, 'k'), 'verifyStoreIntegrity', TYPE],
    [`${what}: key a number`, () => fn({ storeDir }, 5), 'filesIndexFile', TYPE],
    [`${what}: expectedPkg.name a number`, () => fn({ storeDir }, 'k', { expectedPkg: { name: 1 } }), 'expectedPkg.name', TYPE],
  ]
}

function importCases (what: string, fn: (opts: any) => unknown): Case[] {
  return [
    [`${what}: no options`, () => fn(undefined), 'opts', TYPE],
    ...pathCases(what, 'storeDir', (v) => fn({ ...importOpts, storeDir: v })),
    ...pathCases(what, 'targetDir', (v) => fn({ ...importOpts, targetDir: v })),
    [`${what}: filesResponse missing`, () => fn({ ...importOpts, filesResponse: undefined }), 'filesResponse', TYPE],
    [`${what}: filesMap a plain object`, () => fn({ ...importOpts, filesResponse: { filesMap: { 'a.js': '/x' } } }), 'filesResponse.filesMap', TYPE],
    [`${what}: a relative blob path`, () => fn({ ...importOpts, filesResponse: { filesMap: new Map([['a.js', 'files/00/x']]) } }), 'filesResponse.filesMap.get("a.js")', VALUE],
    [`${what}: packageImportMethod a number`, () => fn({ ...importOpts, packageImportMethod: 1 }), 'packageImportMethod', TYPE],
    [`${what}: packageImportMethod unknown`, () => fn({ ...importOpts, packageImportMethod: 'symlink' }), 'packageImportMethod', VALUE],
    [`${what}: filesResponse.packageImportMethod unknown`, () => fn({ ...importOpts, filesResponse: { ...filesResponse, packageImportMethod: 'symlink' } }), 'filesResponse.packageImportMethod', VALUE],
  ]
}

/** The drop-in's cases: what pnpm's worker accepts (relative paths, truthy flags) is left out. */
const lenient = (list: Case[]): Case[] => list.filter(([what]) => !/relative|verifyStoreIntegrity a string/.test(what))

function symlinkCases (what: string, fn: (opts: any) => unknown): Case[] {
  return [
    [`${what}: no options`, () => fn(undefined), 'opts', TYPE],
    [`${what}: deps not an array`, () => fn({ deps: dep }), 'deps', TYPE],
    [`${what}: a dep without children`, () => fn({ deps: [{ ...dep, children: undefined }] }), 'deps[0].children', TYPE],
    ...pathCases(what, 'deps[0].modules', (v) => fn({ deps: [{ ...dep, modules: v }] })),
    [`${what}: a relative link target`, () => fn({ deps: [{ ...dep, children: { b: '../b' } }] }), 'deps[0].children["b"]', VALUE],
    [`${what}: name a number`, () => fn({ deps: [{ ...dep, name: 1 }] }), 'deps[0].name', TYPE],
  ]
}

function hardLinkDirCases (what: string, fn: (src: any, dests: any) => unknown): Case[] {
  return [
    ...pathCases(what, 'src', (v) => fn(v, [path.join(dir, 'copy')])),
    [`${what}: destDirs a string`, () => fn(dir, path.join(dir, 'copy')), 'destDirs', TYPE],
    ...pathCases(what, 'destDirs[1]', (v) => fn(dir, [path.join(dir, 'copy'), v])),
  ]
}

const cases: Record<string, Case[]> = {
  'index.addFilesFromTarball': tarballCases('addFilesFromTarball', cas.addFilesFromTarball),
  'index.createTarballWriter': [
    ...tarballCases('createTarballWriter', cas.createTarballWriter).filter(([what]) => !what.endsWith('buffer a string')),
    ['createTarballWriter: write a string', () => cas.createTarballWriter({ storeDir, filesIndexFile: 'k' }).write('abc' as any), 'chunk', TYPE],
  ],
  'index.initStoreDir': pathCases('initStoreDir', 'storeDir', (v) => cas.initStoreDir(v as string)),
  'index.addFilesFromDir': [
    ...dirCases('addFilesFromDir', cas.addFilesFromDir),
    ['addFilesFromDir: compat a boolean', () => cas.addFilesFromDir({ ...fromDir, compat: true } as any), 'compat', TYPE],
    ['addFilesFromDir: compat an unknown version', () => cas.addFilesFromDir({ ...fromDir, compat: 'pnpm@11.29' } as any), 'compat', VALUE],
  ],
  'index.importPackage': importCases('importPackage', cas.importPackage),
  'index.symlinkAllModules': symlinkCases('symlinkAllModules', cas.symlinkAllModules),
  'index.hardLinkDir': hardLinkDirCases('hardLinkDir', cas.hardLinkDir),
  'index.linkStoredPackages': [
    ['linkStoredPackages: no options', () => cas.linkStoredPackages(undefined as any), 'opts', TYPE],
    ...pathCases('linkStoredPackages', 'storeDir', (v) => cas.linkStoredPackages({ storeDir: v, packages: [] } as any)),
    ['linkStoredPackages: packages missing', () => cas.linkStoredPackages({ storeDir } as any), 'packages', TYPE],
    ['linkStoredPackages: verifyStoreIntegrity a string', () => cas.linkStoredPackages({ storeDir, packages: [], verifyStoreIntegrity: 'yes' } as any), 'verifyStoreIntegrity', TYPE],
    ...pathCases('linkStoredPackages', 'packages[0].targetDir', (v) => cas.linkStoredPackages({ storeDir, packages: [{ ...stored, targetDir: v }] } as any)),
    ['linkStoredPackages: targetDir not ending with the name', () => cas.linkStoredPackages({ storeDir, packages: [{ ...stored, name: 'b' }] } as any), 'packages[0].targetDir', VALUE],
    ['linkStoredPackages: no key', () => cas.linkStoredPackages({ storeDir, packages: [{ ...stored, filesIndexFile: undefined }] } as any), 'packages[0].filesIndexFile', TYPE],
    ['linkStoredPackages: version with a NUL', () => cas.linkStoredPackages({ storeDir, packages: [{ ...stored, version: '1\0' }] } as any), 'packages[0].version', VALUE],
    ['linkStoredPackages: a relative child', () => cas.linkStoredPackages({ storeDir, packages: [{ ...stored, children: { b: 'b' } }] } as any), 'packages[0].children["b"]', VALUE],
    ['linkStoredPackages: packageImportMethod unknown', () => cas.linkStoredPackages({ storeDir, packages: [], packageImportMethod: 'symlink' } as any), 'packageImportMethod', VALUE],
    ['linkStoredPackages: blobModeRule unknown', () => cas.linkStoredPackages({ storeDir, packages: [], blobModeRule: 'loose' } as any), 'blobModeRule', VALUE],
    ['linkStoredPackages: blobModeRule a boolean', () => cas.linkStoredPackages({ storeDir, packages: [], blobModeRule: true } as any), 'blobModeRule', TYPE],
  ],
  'index.linkPackages': [
    ['linkPackages: no options', () => cas.linkPackages(undefined as any), 'opts', TYPE],
    ...pathCases('linkPackages', 'storeDir', (v) => cas.linkPackages({ storeDir: v, packages: [] } as any)),
    ['linkPackages: packages missing', () => cas.linkPackages({ storeDir } as any), 'packages', TYPE],
    ...pathCases('linkPackages', 'packages[0].targetDir', (v) => cas.linkPackages({ storeDir, packages: [{ targetDir: v, filesIndexFile: 'k' }] } as any)),
    ['linkPackages: neither key nor map', () => cas.linkPackages({ storeDir, packages: [{ targetDir: dir }] } as any), 'packages[0].filesIndexFile', TYPE],
    ['linkPackages: packageImportMethod unknown', () => cas.linkPackages({ storeDir, packages: [], packageImportMethod: 'symlink' } as any), 'packageImportMethod', VALUE],
    ['linkPackages: a package\'s packageImportMethod unknown', () => cas.linkPackages({ storeDir, packages: [{ targetDir: dir, filesIndexFile: 'k', packageImportMethod: 'symlink' }] } as any), 'packages[0].packageImportMethod', VALUE],
    ['linkPackages: sideEffectsMaps a plain object', () => cas.linkPackages({ storeDir, packages: [{ targetDir: dir, filesMap: new Map(), sideEffectsCacheKey: 'k', sideEffectsMaps: {} }] } as any), 'packages[0].sideEffectsMaps', TYPE],
    ...symlinkCases('linkPackages', (o) => cas.linkPackages({ storeDir, packages: [], symlinks: o?.deps } as any)).slice(1).map(([w, c, n, code]): Case => [w, c, n.replace(/^deps/, 'symlinks'), code]),
  ],
  'index.readPkgFromCafs': readCases('readPkgFromCafs', cas.readPkgFromCafs),
  'index.readPkgsFromCafs': [
    ...readCases('readPkgsFromCafs', (ctx, key, opts) => cas.readPkgsFromCafs(ctx, [key], opts && { expectedPkgs: [opts.expectedPkg] }))
      .map(([w, c, n, code]): Case => [w, c, n === 'filesIndexFile' ? 'keys' : n.replace('expectedPkg.', 'expectedPkgs.'), code]),
    ['readPkgsFromCafs: keys a string', () => cas.readPkgsFromCafs({ storeDir }, 'k' as any), 'keys', TYPE],
    ['readPkgsFromCafs: expectedPkgs of another length', () => cas.readPkgsFromCafs({ storeDir }, ['k'], { expectedPkgs: [] }), 'expectedPkgs', TYPE],
  ],
  'worker.addFilesFromTarball': [
    ...lenient(tarballCases('worker.addFilesFromTarball', worker.addFilesFromTarball, { storeIndex, url: 'u' })),
    ['worker.addFilesFromTarball: no storeIndex', () => worker.addFilesFromTarball({ ...tarball, url: 'u' } as any), 'storeIndex', TYPE],
  ],
  'worker.addFilesFromDir': [
    ...lenient(dirCases('worker.addFilesFromDir', worker.addFilesFromDir, { storeIndex })),
    ['worker.addFilesFromDir: a storeIndex without setRawMany', () => worker.addFilesFromDir({ ...fromDir, storeIndex: {} } as any), 'storeIndex', TYPE],
  ],
  'worker.readPkgFromCafs': lenient(readCases('worker.readPkgFromCafs', worker.readPkgFromCafs)),
  'worker.importPackage': lenient(importCases('worker.importPackage', worker.importPackage)),
  'worker.symlinkAllModules': lenient(symlinkCases('worker.symlinkAllModules', worker.symlinkAllModules)),
  'worker.hardLinkDir': lenient(hardLinkDirCases('worker.hardLinkDir', worker.hardLinkDir)),
  'worker.initStoreDir': lenient(pathCases('worker.initStoreDir', 'storeDir', (v) => worker.initStoreDir(v as string))),
  'worker.verifiedFileIntegritySince': [
    ['verifiedFileIntegritySince: no baseline', () => worker.verifiedFileIntegritySince(undefined as any), 'baseline', TYPE],
    ['verifiedFileIntegritySince: not a snapshot', () => worker.verifiedFileIntegritySince({} as any), 'baseline', TYPE],
  ],
  'pnpmfile.importIndexedPackage': [
    ...pathCases('importIndexedPackage', 'to', (v) => pnpmfile.importIndexedPackage(v as string, { filesMap: new Map(), force: false, resolvedFrom: 'store' })),
    ['importIndexedPackage: no options', () => pnpmfile.importIndexedPackage(path.join(dir, 'p'), undefined as any), 'opts', TYPE],
    ['importIndexedPackage: filesMap an object', () => pnpmfile.importIndexedPackage(path.join(dir, 'p'), { filesMap: {} } as any), 'filesMap', TYPE],
  ],
}

/** Functions that take no arguments: extra ones are ignored, never a crash. */
const noArguments: Record<string, () => unknown> = {
  'index.closeStores': () => (cas.closeStores as any)(42),
  'worker.verifiedFileIntegritySnapshot': () => (worker.verifiedFileIntegritySnapshot as any)('x'),
  'worker.calcMaxWorkers': () => (worker.calcMaxWorkers as any)(null),
  'worker.finishWorkers': () => (worker.finishWorkers as any)('x'),
  'worker.restartWorkerPool': () => (worker.restartWorkerPool as any)(1),
}

function functionExports (prefix: string, mod: Record<string, unknown>): string[] {
  return Object.entries(mod)
    .filter(([, v]) => typeof v === 'function' && !/^class\b/.test(Function.prototype.toString.call(v)))
    .map(([k]) => `${prefix}.${k}`)
}

async function thrown (call: () => unknown): Promise<any> {
  try {
    await call()
  } catch (err) {
    return err
  }
  return undefined
}

describe('bad arguments to every exported function', () => {
  it('the table covers every function export', () => {
    const exported = [...functionExports('index', cas), ...functionExports('worker', worker), ...functionExports('pnpmfile', pnpmfile)].sort()
    expect([...Object.keys(cases), ...Object.keys(noArguments)].sort()).toEqual(exported)
    console.log(`${exported.length} function exports, ${Object.values(cases).flat().length} bad calls`)
  })

  for (const [fn, list] of Object.entries(cases)) {
    it(`${fn}: a TypeError naming the argument, nothing written`, async () => {
      for (const [what, call, name, code] of list) {
        const err = await thrown(call)
        expect(err, what).toBeInstanceOf(TypeError)
        expect({ what, code: err.code }).toEqual({ what, code })
        expect(err.message, what).toContain(`"${name}"`)
      }
      // Every call was refused before any work: nothing appeared.
      expect(fs.existsSync(storeDir), 'the store').toBe(false)
      expect(fs.readdirSync(dir), 'the work dir').toEqual([])
    })
  }

  it('functions without arguments ignore extra ones', async () => {
    for (const [fn, call] of Object.entries(noArguments)) expect(await thrown(call), fn).toBeUndefined()
  })
})
