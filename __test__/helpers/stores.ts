/** Helpers shared by the test suites: fresh stores, the oracle, and store snapshots. */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export const fixturesDir = path.join(import.meta.dirname, '..', 'fixtures')

export interface TarballFixture {
  file: string
  name: string
  version: string
  integrity: string
  covers: string[]
}

export function tarballFixtures (): Array<TarballFixture & { buffer: Buffer, key: string }> {
  const dir = path.join(fixturesDir, 'tarballs')
  const index: TarballFixture[] = JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8'))
  return index.map((f) => ({
    ...f,
    buffer: fs.readFileSync(path.join(dir, f.file)),
    key: `${f.integrity}\t${f.name}@${f.version}`,
  }))
}

/** A new empty directory under the OS temp dir. */
export function freshDir (label: string, base = os.tmpdir()): string {
  return fs.mkdtempSync(path.join(base, `cas-native-${label}-`))
}

/** A new, empty, versioned store directory under the OS temp dir. */
export function freshStoreDir (label: string): string {
  return path.join(freshDir(label), 'v11')
}

export interface BlobSnapshot {
  bytes: Buffer
  mode: number
}

/** Every blob under `<storeDir>/files`, by relative path. */
export function snapshotBlobs (storeDir: string): Map<string, BlobSnapshot> {
  const blobs = new Map<string, BlobSnapshot>()
  const filesDir = path.join(storeDir, 'files')
  for (const shard of fs.readdirSync(filesDir)) {
    for (const name of fs.readdirSync(path.join(filesDir, shard))) {
      const abs = path.join(filesDir, shard, name)
      blobs.set(`${shard}/${name}`, { bytes: fs.readFileSync(abs), mode: fs.statSync(abs).mode })
    }
  }
  return blobs
}

/** Every file under `dir` except the ones below `files/`, relative to `dir`. */
export function filesOutsideCas (storeDir: string): string[] {
  const found: string[] = []
  const walk = (rel: string): void => {
    for (const entry of fs.readdirSync(path.join(storeDir, rel), { withFileTypes: true })) {
      const child = path.join(rel, entry.name)
      if (child === 'files') continue
      if (entry.isDirectory()) walk(child)
      else found.push(child)
    }
  }
  if (fs.existsSync(storeDir)) walk('')
  return found
}

/** Replaces every `checkedAt` in a decoded index row: the one field that must differ. */
export function withoutCheckedAt (row: any): any {
  const strip = (files: Map<string, any>) =>
    new Map([...files].map(([k, v]) => [k, { ...v, checkedAt: 0 }]))
  return { ...row, files: strip(row.files) }
}
