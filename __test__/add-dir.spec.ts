/**
 * addFilesFromDir against pnpm's own worker: the same directory added by both into two fresh
 * stores gives the same result and the same index row (but for checkedAt), for a fresh row, a
 * `files` list, and a side-effects upload after a "build" changed the package.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex, packForStorage } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import * as worker from '../dist/worker/index.js'
import { freshDir, freshStoreDir } from './helpers/stores.js'

const pnpmStore = freshStoreDir('pnpm-dir')
const casStore = freshStoreDir('cas-dir')
const pnpmIndex = new StoreIndex(pnpmStore)
let casIndex: StoreIndex | undefined

afterAll(async () => {
  pnpmIndex.close()
  casIndex?.close()
  await pnpm.finishWorkers()
})

function packageDir (): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-pkg-'))
  const put = (rel: string, content: string, mode = 0o644) => {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
    fs.writeFileSync(path.join(dir, rel), content, { mode })
  }
  put('package.json', JSON.stringify({ name: 'dir-pkg', version: 'v2.0.0', bin: { d: 'bin/d.js' }, scripts: { install: 'node build.js' } }))
  put('bin/d.js', '#!/usr/bin/env node\n', 0o755)
  put('lib/a.js', 'a')
  put('lib/B.js', 'b')
  put('node_modules/dep/index.js', 'skipped at the root')
  put('lib/node_modules/x/index.js', 'kept when nested')
  fs.symlinkSync(path.join(dir, 'lib'), path.join(dir, 'lib-link'))
  fs.symlinkSync(os.tmpdir(), path.join(dir, 'escape'))
  return dir
}

const relative = (m: Map<string, string>, storeDir: string) => [...m].map(([k, v]) => [k, path.relative(storeDir, v)])
const noCheckedAt = (row: any) => ({
  ...row,
  files: new Map([...row.files].map(([k, v]: any) => [k, { ...v, checkedAt: 0 }])),
  ...(row.sideEffects == null
    ? {}
    : { sideEffects: new Map([...row.sideEffects].map(([k, d]: any) => [k, d.added == null ? d : { ...d, added: new Map([...d.added].map(([p, v]: any) => [p, { ...v, checkedAt: 0 }])) }])) }),
})

async function both (opts: Omit<cas.AddFilesFromDirOptions, 'storeDir'>) {
  const theirs = await pnpm.addFilesFromDir({ ...opts, storeDir: pnpmStore, storeIndex: pnpmIndex } as any)
  const ours = await cas.addFilesFromDir({ ...opts, storeDir: casStore })
  casIndex ??= new StoreIndex(casStore)
  return { ours, theirs }
}

function expectSameRows (key: string) {
  const ours = casIndex!.get(key) as any
  const theirs = pnpmIndex.get(key) as any
  expect(noCheckedAt(ours)).toEqual(noCheckedAt(theirs))
  expect(Buffer.from(packForStorage(noCheckedAt(ours)))).toEqual(Buffer.from(packForStorage(noCheckedAt(theirs))))
}

describe('addFilesFromDir', () => {
  const dir = packageDir()

  it('adds a directory as pnpm does', async () => {
    const { ours, theirs } = await both({ dir, filesIndexFile: 'dir-pkg' })
    expect(relative(ours.filesMap, casStore)).toEqual(relative(theirs.filesMap, pnpmStore))
    expect(ours.manifest).toEqual(theirs.manifest)
    expect(ours.requiresBuild).toBe(theirs.requiresBuild)
    expectSameRows('dir-pkg')
  })

  it('adds only the listed files, under the keys given', async () => {
    const files = ['package.json', 'lib/a.js', 'missing.js', 'escape']
    const { ours, theirs } = await both({ dir, files, filesIndexFile: 'listed' })
    expect(relative(ours.filesMap, casStore)).toEqual(relative(theirs.filesMap, pnpmStore))
    expectSameRows('listed')
  })

  it('records side effects after a build, as pnpm does', async () => {
    fs.writeFileSync(path.join(dir, 'lib/a.js'), 'a, rebuilt')
    fs.rmSync(path.join(dir, 'lib/B.js'))
    fs.writeFileSync(path.join(dir, 'build.node'), 'binary', { mode: 0o755 })
    const { ours, theirs } = await both({ dir, filesIndexFile: 'dir-pkg', sideEffectsCacheKey: 'linux;x64;node24' })
    expect(ours.requiresBuild).toBe(theirs.requiresBuild)
    expect(ours.sideEffects?.deleted).toEqual(theirs.sideEffects?.deleted)
    expect([...(ours.sideEffects?.added?.keys() ?? [])]).toEqual([...(theirs.sideEffects?.added?.keys() ?? [])])
    expectSameRows('dir-pkg')
  })

  it('writes nothing for side effects of a package the store does not have', async () => {
    const { ours, theirs } = await both({ dir, filesIndexFile: 'never-stored', sideEffectsCacheKey: 'k' })
    expect(ours.requiresBuild).toBe(theirs.requiresBuild)
    expect(casIndex!.has('never-stored')).toBe(false)
    expect(pnpmIndex.has('never-stored')).toBe(false)
  })

  it('compat \'pnpm@11.28\' records symlinks only in a side-effects upload; @cas/native/worker ignores it, as @pnpm/worker 1100.x has no such option', async () => {
    const plain = await cas.addFilesFromDir({ storeDir: casStore, dir, filesIndexFile: 'rs', writeIndex: false, returnIndexRow: true })
    const asked = await cas.addFilesFromDir({ storeDir: casStore, dir, filesIndexFile: 'rs', compat: 'pnpm@11.28', writeIndex: false, returnIndexRow: true })
    expect([...asked.filesMap.keys()]).toEqual([...plain.filesMap.keys()])
    expect(asked.hasUnrecordedSymlinks).toBeUndefined()
    // This package's links are absolute, which pnpm 11.28 does not record: the upload is
    // dropped, and with no entry under the key to remove, nothing is written.
    const dropped = await cas.addFilesFromDir({ storeDir: casStore, dir, filesIndexFile: 'dir-pkg', sideEffectsCacheKey: 'rs-key', compat: 'pnpm@11.28', returnIndexRow: true })
    expect(dropped.hasUnrecordedSymlinks).toBe(true)
    expect(dropped.sideEffects).toBeUndefined()
    expect(dropped.indexRow).toBeUndefined()
    const viaWorker = await worker.addFilesFromDir({ storeDir: casStore, dir, filesIndexFile: 'dir-pkg', sideEffectsCacheKey: 'rs-key', compat: 'pnpm@11.28', storeIndex: casIndex! } as any)
    expect(viaWorker.sideEffects).toBeDefined()
    expect(Object.keys(viaWorker)).not.toContain('hasUnrecordedSymlinks')
    expect([...(casIndex!.get('dir-pkg') as any).sideEffects.keys()]).toContain('rs-key')
  })

  it('a package with bundled dependencies: @pnpm/worker 1100.x\'s diff by default and through @cas/native/worker, pnpm 11.28\'s with its compat', async () => {
    const bundler = freshDir('bundler')
    const put = (rel: string, content: string) => {
      fs.mkdirSync(path.dirname(path.join(bundler, rel)), { recursive: true })
      fs.writeFileSync(path.join(bundler, rel), content)
    }
    put('package.json', JSON.stringify({ name: 'bundler', version: '1.0.0', bundledDependencies: ['dep'] }))
    put('lib/a.js', 'a')
    put('gone.js', 'deleted by the build')
    put('node_modules/dep/index.js', 'bundled')
    // The stored row has the bundled dependency, as a tarball's would.
    await both({ dir: bundler, filesIndexFile: 'bundler', includeNodeModules: true })
    expectSameRows('bundler')
    put('lib/a.js', 'a, built')
    put('build.node', 'new, and first in the walk')
    fs.rmSync(path.join(bundler, 'gone.js'))
    const { ours, theirs } = await both({ dir: bundler, filesIndexFile: 'bundler', sideEffectsCacheKey: 'k' })
    expect(theirs.sideEffects!.deleted).toEqual(['gone.js', 'node_modules/dep/index.js'])
    expect([...theirs.sideEffects!.added!.keys()]).toEqual(['lib/a.js', 'build.node'])
    expect(ours.sideEffects!.deleted).toEqual(theirs.sideEffects!.deleted)
    expect([...ours.sideEffects!.added!.keys()]).toEqual([...theirs.sideEffects!.added!.keys()])
    expectSameRows('bundler')
    const viaWorker = await worker.addFilesFromDir({ storeDir: casStore, dir: bundler, filesIndexFile: 'bundler', sideEffectsCacheKey: 'k', compat: 'pnpm@11.28', storeIndex: casIndex! } as any)
    expect(viaWorker.sideEffects!.deleted).toEqual(theirs.sideEffects!.deleted)
    const latest = await cas.addFilesFromDir({ storeDir: casStore, dir: bundler, filesIndexFile: 'bundler', sideEffectsCacheKey: 'k', compat: 'pnpm@11.28' })
    expect(latest.sideEffects!.deleted).toEqual(['gone.js'])
    expect([...latest.sideEffects!.added!.keys()]).toEqual(['build.node', 'lib/a.js'])
    expect(latest.hasUnrecordedSymlinks).toBe(false)
  })

  it('fails on invalid package.json with pnpm\'s default code', async () => {
    const broken = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-broken-'))
    fs.writeFileSync(path.join(broken, 'package.json'), '{ nope')
    const err: any = await cas.addFilesFromDir({ storeDir: casStore, dir: broken, filesIndexFile: 'broken' }).catch((e) => e)
    const expected: any = await pnpm.addFilesFromDir({ storeDir: pnpmStore, dir: broken, filesIndexFile: 'broken', storeIndex: pnpmIndex } as any).catch((e) => e)
    expect(err.code).toBe('ERR_PNPM_GIT_FETCH_FAILED')
    expect(err.code).toBe(expected.code)
  })

  it('rejects bad arguments with a TypeError naming them', async () => {
    const err: any = await cas.addFilesFromDir({ storeDir: casStore, dir: 42 } as any).catch((e) => e)
    expect(err).toBeInstanceOf(TypeError)
    expect(err.code).toBe('ERR_INVALID_ARG_TYPE')
    expect(err.message).toContain('"dir"')
  })
})
