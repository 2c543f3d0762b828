/**
 * Whether a read may create the store. pnpm's worker opens the store index on a read, and that
 * creates a missing store directory (with an empty `index.db`): a mistyped `storeDir` then reads
 * as an empty store. The core API's reads and links refuse a missing store instead
 * (`checkStoreDirExists`); the drop-ins (`@cas/native/worker`, `@cas/native/pnpm-worker`) create
 * it, as pnpm does (`readCreatingStoreDir`).
 */
import fs from 'node:fs'
import path from 'node:path'
import { PnpmError } from './errors.js'

/** Fails with `ERR_PNPM_ENOENT` (or `ERR_PNPM_ENOTDIR`), naming the directory, unless `storeDir` is one. */
export function checkStoreDirExists (storeDir: string): void {
  let stat: fs.Stats | undefined
  try {
    stat = fs.statSync(storeDir, { throwIfNoEntry: false })
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    throw noStore(e.code ?? 'EIO', `The store directory "${storeDir}" cannot be read (${e.message})`, storeDir)
  }
  if (stat == null) throw noStore('ENOENT', `The store directory "${storeDir}" does not exist`, storeDir)
  if (!stat.isDirectory()) throw noStore('ENOTDIR', `The store directory "${storeDir}" is not a directory`, storeDir)
}

function noStore (code: string, message: string, storeDir: string): PnpmError {
  const err = new PnpmError(`ERR_PNPM_${code}`, message, {
    hint: 'storeDir must name an existing store (the versioned directory, e.g. ".../store/v11"). ' +
      'Reads and links never create one; addFilesFromTarball, addFilesFromDir and initStoreDir do.',
  })
  return Object.assign(err, { syscall: 'stat', path: storeDir })
}

/**
 * `read()`, and on a missing store directory (not for a frozen store, which pnpm opens
 * read-only) the directory created and `read()` again: what pnpm's worker does on a read. The
 * read's argument checks still come first.
 */
export async function readCreatingStoreDir<T> (storeDir: string, frozenStore: boolean, read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    const e = err as PnpmError
    if (frozenStore || !(e instanceof PnpmError) || e.code !== 'ERR_PNPM_ENOENT' || e.path !== storeDir || e.syscall !== 'stat') throw err
    fs.mkdirSync(storeDir, { recursive: true })
    return read()
  }
}

/**
 * The two ways pnpm names where blobs are (docs/store-format.md, "Blob paths"), each built here
 * and nowhere else. `written`: `path.join(storeDir, 'files')`, as pnpm's writers name it; the
 * addon joins blob names below it for tarball and directory results. `read`: what pnpm's readers
 * put before a blob's name, `storeDir + sep + 'files' + sep`, concatenated, not normalised.
 */
export function blobDir (storeDir: string, as: 'written' | 'read'): string {
  return as === 'written' ? path.join(storeDir, 'files') : `${storeDir}${path.sep}files${path.sep}`
}
