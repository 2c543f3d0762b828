/**
 * Checks a store the way a crash or a full disk could have broken it: every blob's bytes hash to
 * its name (so no truncated blob is ever served), nothing but blobs lives in `files/`, and every
 * index row decodes (with pnpm's own reader) and names blobs that exist.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { StoreIndex } from '@pnpm/store.index'

const BLOB_NAME = /^[0-9a-f]{126}(-exec)?$/

/**
 * Plain JS so that child processes can run it too (the full-disk test's store exists only in
 * its child's mount namespace).
 *
 * @param {string} storeDir
 * @returns {{ blobs: number, rows: number, keys: string[], problems: string[] }}
 */
export function verifyStore (storeDir) {
  const report = { blobs: 0, rows: 0, keys: [], problems: [] }
  const filesDir = path.join(storeDir, 'files')
  for (const shard of fs.existsSync(filesDir) ? fs.readdirSync(filesDir) : []) {
    for (const name of fs.readdirSync(path.join(filesDir, shard))) {
      const rel = `${shard}/${name}`
      if (!/^[0-9a-f]{2}$/.test(shard) || !BLOB_NAME.test(name)) {
        report.problems.push(`not a blob: files/${rel}`)
        continue
      }
      const abs = path.join(filesDir, rel)
      const st = fs.lstatSync(abs)
      const digest = crypto.createHash('sha512').update(fs.readFileSync(abs)).digest('hex')
      if (!st.isFile()) report.problems.push(`not a regular file: files/${rel}`)
      else if (digest !== shard + name.replace(/-exec$/, '')) report.problems.push(`content does not match its name: files/${rel}`)
      else if (name.endsWith('-exec') !== ((st.mode & 0o111) !== 0)) report.problems.push(`exec bit does not match its name: files/${rel}`)
      else report.blobs++
    }
  }
  if (!fs.existsSync(path.join(storeDir, 'index.db'))) return report
  const index = new StoreIndex(storeDir)
  try {
    for (const [key, row] of index.entries()) {
      report.rows++
      report.keys.push(key)
      if (!(row?.files instanceof Map)) {
        report.problems.push(`row without a files map: ${key}`)
        continue
      }
      for (const [file, info] of row.files) {
        const blob = path.join(filesDir, info.digest.slice(0, 2), info.digest.slice(2) + ((info.mode & 0o111) !== 0 ? '-exec' : ''))
        if (!fs.existsSync(blob)) report.problems.push(`row ${key} names a missing blob for ${file}`)
      }
    }
  } finally {
    index.close()
  }
  return report
}
