/**
 * `frozenStore`: the index is opened read-only and immutable, so a store on a read-only
 * directory can be read and nothing, not even SQLite's `-wal`/`-shm` sidecars, is created.
 *
 * The store is made read-only with chmod. These tests usually run as root, and root ignores
 * directory permissions, so as root the store directory is also made immutable (`chattr +i`),
 * which root cannot write through either. Two proofs that nothing is created: a normal, writable
 * open of the same store fails (the directory really is read-only to this process), and the
 * complete listing of the store (names, sizes, mtimes) is the same before and after.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as cas from '../dist/api/index.js'
import { freshDir, freshStoreDir, tarballFixtures } from './helpers/stores.js'

const fixtures = tarballFixtures().slice(0, 5)
const storeDir = freshStoreDir('frozen')
const keys = fixtures.map((f) => f.key)
const isRoot = process.getuid?.() === 0

/** Every entry under the store's parent: path, type, size, mtime. */
function listing (): string[] {
  const root = path.dirname(storeDir)
  const out: string[] = []
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const abs = path.join(dir, e.name)
      const st = fs.lstatSync(abs)
      out.push(`${path.relative(root, abs)} ${e.isDirectory() ? 'd' : 'f'} ${e.isDirectory() ? '' : st.size} ${st.mtimeMs}`)
      if (e.isDirectory()) walk(abs)
    }
  }
  walk(root)
  return out.sort()
}

function chmodTree (dir: string, dirMode: number, fileMode: (mode: number) => number) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const abs = path.join(dir, e.name)
    if (e.isDirectory()) chmodTree(abs, dirMode, fileMode)
    else fs.chmodSync(abs, fileMode(fs.statSync(abs).mode))
  }
  fs.chmodSync(dir, dirMode)
}

let before: string[]

beforeAll(async () => {
  for (const f of fixtures) {
    await cas.addFilesFromTarball({ buffer: f.buffer, storeDir, filesIndexFile: f.key, integrity: f.integrity })
  }
  cas.closeStores() // checkpoints the WAL: only index.db is left beside files/
  chmodTree(storeDir, 0o555, (mode) => (mode & 0o111) !== 0 ? 0o555 : 0o444)
  if (isRoot) execFileSync('chattr', ['+i', storeDir])
  before = listing()
})

afterAll(() => {
  cas.closeStores()
  if (isRoot) execFileSync('chattr', ['-i', storeDir])
  chmodTree(storeDir, 0o755, () => 0o644)
})

describe('a frozen store on a read-only directory', () => {
  it('starts with index.db and no sidecars', () => {
    expect(fs.readdirSync(storeDir).sort()).toEqual(['files', 'index.db'])
  })

  it('is read, verified and mapped', async () => {
    for (const verifyStoreIntegrity of [true, false]) {
      const ctx = { storeDir, verifyStoreIntegrity, frozenStore: true }
      const batch = await cas.readPkgsFromCafs(ctx, [...keys, 'absent'])
      expect(batch.results.map((r) => r.verified)).toEqual([...keys.map(() => true), false])
      const single = await cas.readPkgFromCafs(ctx, keys[0])
      expect(single).toStrictEqual(batch.results[0])
    }
  })

  it('refuses to write an index row, with pnpm\'s code', async () => {
    // A package already in the store: its blobs exist, so only the index write is attempted.
    const f = fixtures[0]
    const err = await cas.addFilesFromTarball({ buffer: f.buffer, storeDir, filesIndexFile: 'new key', frozenStore: true }).catch((e) => e)
    expect(err).toBeInstanceOf(cas.PnpmError)
    expect(err.code).toBe('ERR_PNPM_FROZEN_STORE_WRITE')
  })

  it('cannot be opened for writing: the directory really is read-only here', async () => {
    const err: any = await cas.readPkgsFromCafs({ storeDir, verifyStoreIntegrity: true }, keys).catch((e) => e)
    expect(err).toBeInstanceOf(cas.PnpmError)
    expect(err.code).toBe('ERR_PNPM_ERR_SQLITE_ERROR')
    cas.closeStores()
  })

  it('addFilesFromDir reports the failed index write with the code the tarball path gives', async () => {
    // A package.json whose blob the store already has: only the index write is attempted.
    const read = await cas.readPkgFromCafs({ storeDir, verifyStoreIntegrity: false, frozenStore: true }, keys[0])
    if (!('files' in read)) throw new Error(`${keys[0]} is not in the store`)
    const dir = freshDir('frozen-add-dir')
    fs.copyFileSync(read.files.filesMap.get('package.json')!, path.join(dir, 'package.json'))
    const err: any = await cas.addFilesFromDir({ storeDir, dir, filesIndexFile: 'new key' }).catch((e) => e)
    expect(err).toBeInstanceOf(cas.PnpmError)
    expect(err.code).toBe('ERR_PNPM_ERR_SQLITE_ERROR')
    cas.closeStores()
  })

  it('leaves no new file behind: the listing is unchanged', () => {
    expect(listing()).toEqual(before)
    expect(fs.existsSync(`${storeDir}/index.db-wal`)).toBe(false)
    expect(fs.existsSync(`${storeDir}/index.db-shm`)).toBe(false)
  })
})
