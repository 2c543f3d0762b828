/** Helpers of the linking suites: a store filled by pnpm's worker, and tree snapshots. */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import { freshStoreDir, tarballFixtures } from './stores.js'

// Kept importable from here, where the linking suites have always found it.
export { freshDir } from './stores.js'

export interface FilledStore {
  storeDir: string
  /** Per fixture (by `name@version`): its index key, file map and requiresBuild, as pnpm returned them. */
  packages: Array<{ id: string, name: string, key: string, filesMap: Map<string, string>, requiresBuild: boolean }>
}

/** A fresh store with every committed fixture tarball added by pnpm's own worker. */
export async function storeFilledByPnpm (label: string, storeDir = freshStoreDir(label)): Promise<FilledStore> {
  const index = new StoreIndex(storeDir)
  const packages: FilledStore['packages'] = []
  for (const f of tarballFixtures()) {
    const r = await pnpm.addFilesFromTarball({ buffer: f.buffer, storeDir, filesIndexFile: f.key, integrity: f.integrity, storeIndex: index, url: f.file })
    packages.push({ id: `${f.name}@${f.version}`, name: f.name, key: f.key, filesMap: r.filesMap, requiresBuild: r.requiresBuild })
  }
  index.flush()
  index.close()
  return { storeDir, packages }
}

export interface TreeEntry {
  type: 'file' | 'dir' | 'symlink'
  /** Files: permission bits. */
  mode?: number
  /** Files: SHA-1 of the content (cheaper to compare than the bytes). */
  sha1?: string
  /** Symlinks: the link text. */
  target?: string
  ino?: number
}

/** Every entry under `dir` by relative path (`/`-separated), symlinks not followed. */
export function snapshotTree (dir: string): Map<string, TreeEntry> {
  const out = new Map<string, TreeEntry>()
  const walk = (rel: string): void => {
    for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`
      const abs = path.join(dir, r)
      if (e.isSymbolicLink()) {
        out.set(r, { type: 'symlink', target: fs.readlinkSync(abs) })
      } else if (e.isDirectory()) {
        out.set(r, { type: 'dir' })
        walk(r)
      } else {
        const st = fs.lstatSync(abs)
        out.set(r, { type: 'file', mode: st.mode & 0o777, sha1: crypto.createHash('sha1').update(fs.readFileSync(abs)).digest('hex'), ino: st.ino })
      }
    }
  }
  if (fs.existsSync(dir)) walk('')
  return out
}

/** The snapshot without inode numbers, one line per entry (what must be equal between two trees). */
export function comparable (tree: Map<string, TreeEntry>): string[] {
  return [...tree].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, e]) => `${k} ${e.type}${e.mode != null ? ` ${e.mode.toString(8)}` : ''}${e.sha1 != null ? ` ${e.sha1}` : ''}${e.target != null ? ` -> ${e.target}` : ''}`)
}

/** Whether `dir` holds every file of `filesMap` with the blob's bytes (a complete import). */
export function isComplete (dir: string, filesMap: Map<string, string>): boolean {
  for (const [rel, blob] of filesMap) {
    const at = path.join(dir, rel)
    if (!fs.existsSync(at) || !fs.readFileSync(at).equals(fs.readFileSync(blob))) return false
  }
  return true
}
