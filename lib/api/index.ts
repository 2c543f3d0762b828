/**
 * `@cas/native`: pnpm's content-addressable store work done natively.
 *
 * This file only validates arguments, shapes results the way pnpm's callers expect (`Map`s,
 * `Error`s with codes) and forwards to the native binding, where all the work happens off the
 * JS thread.
 */
import { types } from 'node:util'
// First: turns a missing native binary into one clear error (see binding.ts).
import './binding.js'
import * as binding from '../../index.js'
import { invalidArgument, pnpmErrorOf } from './errors.js'
import { blobDir } from './store-dir.js'
import { checkAbsolutePath, checkObject, checkOptionalByteCount, checkOptionalEnum, checkOptionalObject, checkOptionalString, checkString } from './args.js'
import { COMPATS, type StoreCompat } from './dir.js'

export { PnpmError, TarballIntegrityError } from './errors.js'
export * from './dir.js'
export * from './import.js'
export * from './read.js'

export interface AddFilesFromTarballOptions {
  /** The tarball as downloaded (gzip'd or plain tar): a Buffer or any Uint8Array, also over a SharedArrayBuffer. Not copied; do not modify it until the promise settles. */
  buffer: Uint8Array
  /**
   * The store directory, already versioned (`…/v11`): an absolute path (a relative one is a
   * `TypeError`; `@cas/native/worker` resolves it against `process.cwd()` as pnpm's worker does).
   * Created with its `files/` shards as needed.
   */
  storeDir: string
  /** The index key of the package (pnpm's `filesIndexFile`, e.g. `sha512-…\tname@1.0.0`). */
  filesIndexFile: string
  /** SRI string the raw bytes must match; checked before anything is written. `''` is none, as in pnpm. */
  integrity?: string
  /** Accepted for pnpm compatibility; the manifest is always read. */
  readManifest?: boolean
  /** Accepted for pnpm compatibility. */
  pkg?: { name?: string, version?: string }
  /** Used as the manifest (and written as package.json) when the tarball has none. */
  appendManifest?: Record<string, unknown>
  /** A RegExp source; matching files are neither written nor indexed. `''` is none, as in pnpm. */
  ignoreFilePattern?: string
  /** Where the tarball came from; only used in error messages (without it, they name `filesIndexFile`). */
  url?: string
  /** Commit the package's row to `<storeDir>/index.db` before resolving (default true). */
  writeIndex?: boolean
  /** Also return the row's msgpackr bytes, for callers that write the index themselves. */
  returnIndexRow?: boolean
  /** pnpm's `frozenStore`: the index is read-only, so writing the row fails with `ERR_PNPM_FROZEN_STORE_WRITE`. */
  frozenStore?: boolean
  /**
   * pnpm 11.28's `maxTarballUnpackedSize`, in bytes: the most the tarball's regular files may add up to; it also caps
   * inflating. Over it: `ERR_PNPM_TARBALL_TOO_LARGE`. Default: no limit. How each bound is counted, and the addon's
   * other limits: docs/api.md, "Limits".
   */
  maxTarballUnpackedSize?: number
  /**
   * Whose rows to write. `'@pnpm/worker@1100'` (the default): `@pnpm/worker` 1100.x's, and
   * pnpm's before 11.28. `'pnpm@11.28'`: pnpm 11.28's worker's, which keeps the manifest's
   * `gypfile` in the row and does not count a root `binding.gyp` towards `requiresBuild` when
   * it is `false` (pnpm then builds nothing for it).
   */
  compat?: StoreCompat
}

export interface ExtractTimings {
  queuedMs: number
  inflateMs: number
  hashWriteMs: number
  indexMs: number
}

export interface AddFilesFromTarballResult {
  /** Relative path in the package → absolute path of its blob in the store. */
  filesMap: Map<string, string>
  /** The bundled manifest pnpm keeps in the index (`undefined` when it has nothing to keep). */
  manifest?: Record<string, unknown>
  requiresBuild: boolean
  integrity: string
  /** The index row's bytes, with `returnIndexRow`. */
  indexRow?: Buffer
  timings: ExtractTimings
}

/**
 * Verifies, unpacks and hashes a tarball into the store, pnpm 11's way, and (by default) writes
 * its index row. Rejects with `TarballIntegrityError` on a checksum mismatch and with a
 * `PnpmError` carrying pnpm's code otherwise; nothing is indexed for a failed tarball.
 */
export async function addFilesFromTarball (opts: AddFilesFromTarballOptions): Promise<AddFilesFromTarballResult> {
  checkObject('opts', opts)
  if (!types.isUint8Array(opts.buffer)) throw invalidArgument('buffer', 'a Buffer or Uint8Array', opts.buffer)
  return tarballResult(await binding.extractTarball(opts.buffer, extractOptions(opts)), opts)
}

/** `addFilesFromTarball`'s options but the buffer: the tarball is written to the writer instead. */
export type TarballWriterOptions = Omit<AddFilesFromTarballOptions, 'buffer'>

/** A tarball extracted as it downloads (see `createTarballWriter`). */
export interface TarballWriter {
  /** Appends the next chunk of the tarball as downloaded (copied; the chunk may be reused). */
  write (chunk: Uint8Array): void
  /** No more chunks: settles as `addFilesFromTarball` does for the whole tarball (the integrity is checked over every byte written; no row unless it matches). */
  end (): Promise<AddFilesFromTarballResult>
  /** The download failed: the extraction stops and writes no row; `write` and `end` may not follow. Does nothing after `end`. */
  abort (): void
}

/**
 * `addFilesFromTarball` for a tarball that is still downloading: `write` each chunk as it
 * arrives, then `end`. A big gzip'd tarball is inflated, hashed and written while the rest
 * arrives, through a bounded window; a small one is extracted whole at `end`.
 */
export function createTarballWriter (opts: TarballWriterOptions): TarballWriter {
  checkObject('opts', opts)
  const writer = new binding.TarballWriter(extractOptions(opts))
  let state: 'open' | 'ended' | 'aborted' = 'open'
  // Node's code for a stream written after its end.
  const closed = (what: string) => Object.assign(new Error(`Cannot ${what}: the tarball writer was already ${state}`), { code: 'ERR_STREAM_WRITE_AFTER_END' })
  return {
    write (chunk) {
      if (!types.isUint8Array(chunk)) throw invalidArgument('chunk', 'a Buffer or Uint8Array', chunk)
      if (state !== 'open') throw closed('write')
      writer.write(chunk)
    },
    async end () {
      if (state !== 'open') throw closed('end')
      state = 'ended'
      return tarballResult(await writer.end(), opts)
    },
    abort () {
      // After end() the tarball is whole: a cleanup's abort() must not fail it.
      if (state !== 'open') return
      state = 'aborted'
      writer.abort()
    },
  }
}

/** Checks the options besides the tarball and converts them for the binding. */
function extractOptions (opts: TarballWriterOptions): binding.ExtractOptions {
  checkAbsolutePath('storeDir', opts.storeDir)
  checkString('filesIndexFile', opts.filesIndexFile)
  checkOptionalString('integrity', opts.integrity)
  checkOptionalString('ignoreFilePattern', opts.ignoreFilePattern)
  checkOptionalObject('appendManifest', opts.appendManifest)
  checkOptionalString('url', opts.url)
  checkOptionalByteCount('maxTarballUnpackedSize', opts.maxTarballUnpackedSize)
  checkOptionalEnum('compat', opts.compat, COMPATS)
  // pnpm tests both for truthiness: an empty string is none.
  const integrity = opts.integrity || undefined
  const ignoreFilePattern = opts.ignoreFilePattern || undefined
  return {
    storeDir: opts.storeDir,
    filesDir: blobDir(opts.storeDir, 'written'),
    filesIndexFile: opts.filesIndexFile,
    integrity,
    ignoreFilePattern,
    ignoreFilePatternError: ignoreFilePattern == null ? undefined : regExpError(ignoreFilePattern),
    appendManifestJson: opts.appendManifest == null ? undefined : JSON.stringify(opts.appendManifest, null, 2),
    writeIndex: opts.writeIndex ?? true,
    returnIndexRow: opts.returnIndexRow ?? false,
    frozenStore: opts.frozenStore === true,
    maxTarballUnpackedSize: opts.maxTarballUnpackedSize ?? undefined,
    compat: opts.compat,
  }
}

function tarballResult (raw: binding.ExtractResult, opts: TarballWriterOptions): AddFilesFromTarballResult {
  if (raw.error != null) throw extractError(raw.error, opts.url, opts.filesIndexFile)
  const paths = raw.paths!
  const blobPaths = raw.blobPaths!
  const filesMap = new Map<string, string>()
  for (let i = 0; i < paths.length; i++) filesMap.set(paths[i], blobPaths[i])
  return {
    filesMap,
    manifest: raw.manifestJson == null ? undefined : JSON.parse(raw.manifestJson),
    requiresBuild: raw.requiresBuild!,
    integrity: raw.integrity!,
    indexRow: raw.indexRow ?? undefined,
    timings: raw.timings!,
  }
}

/** Creates the store directory (an absolute path), `files/` and its 256 shard directories (not `index.db`), as pnpm does. */
export async function initStoreDir (storeDir: string): Promise<void> {
  checkAbsolutePath('storeDir', storeDir)
  const error = binding.initStoreDir(storeDir)
  if (error != null) throw pnpmErrorOf(error)
}

/** Commits queued index writes and closes the store-index connections; they reopen on demand. */
export function closeStores (): void {
  binding.closeStores()
}

function extractError (error: binding.NativeError, url: string | undefined, filesIndexFile: string): Error {
  // pnpm's worker rejects with the index's own error when committing the row throws.
  if (error.code === 'ERR_PNPM_FROZEN_STORE_WRITE') return pnpmErrorOf(error)
  const from = url == null ? '' : ` from "${url}"`
  return pnpmErrorOf(error, `Failed to add tarball${from} to store: ${error.message}`, { url, filesIndexFile })
}

/** V8's own message for an invalid pattern, so the error reads as pnpm's does. */
function regExpError (pattern: string): string | undefined {
  try {
    new RegExp(pattern) // eslint-disable-line no-new
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}
