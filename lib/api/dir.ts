/**
 * `addFilesFromDir`: a package directory (git-hosted, local, or a built package's side
 * effects) into the store, with pnpm 11's semantics.
 */
import * as binding from '../../index.js'
import { checkAbsolutePath, checkObject, checkOptionalEnum, checkOptionalObject, checkOptionalString, checkString } from './args.js'
import { invalidArgument, pnpmErrorOf } from './errors.js'
import { blobDir } from './store-dir.js'
import type { StoredSideEffectsDiff } from './read.js'

/** Whose `addFilesFromDir` the function reproduces (its `compat` option; the tarball, read and import functions take the first two too). */
export const DIR_COMPATS = ['@pnpm/worker@1100', 'pnpm@11.28', 'pnpm@11.28.10'] as const
export type AddFilesFromDirCompat = typeof DIR_COMPATS[number]
/** The compats of the tarball, read and import functions: a worker's whole store format. */
export const COMPATS = ['@pnpm/worker@1100', 'pnpm@11.28'] as const
export type StoreCompat = typeof COMPATS[number]

export interface AddFilesFromDirOptions {
  /** The versioned store directory (`…/v11`), an absolute path; created as needed. */
  storeDir: string
  /** The package directory to add, an absolute path. */
  dir: string
  /** The package's index key (pnpm's `filesIndexFile`). */
  filesIndexFile: string
  /** Record the directory as the side effects of building the stored package under this cache key. */
  sideEffectsCacheKey?: string
  /** Only these relative paths (e.g. from npm-packlist) instead of walking the directory. */
  files?: string[]
  /** Also walk a `node_modules` directly in `dir`. */
  includeNodeModules?: boolean
  /** Used as the manifest (and written as package.json) when the directory has none. */
  appendManifest?: Record<string, unknown>
  /** Stored in a fresh row as pnpm 11 does. */
  requiresPrepare?: boolean
  /**
   * Whose `addFilesFromDir` to reproduce. `'@pnpm/worker@1100'` (the default): `@pnpm/worker`
   * 1100.x's, and pnpm's before 11.28. `'pnpm@11.28'`: pnpm 11.28's worker's. Its walk also
   * skips a `node_modules` symlink in `dir` that points to a file, and a `files` entry whose
   * real path is outside `dir`. Its side-effects upload records a symlink in the package as an
   * entry (mode `0o120000`, its target text as the blob) instead of following it, when pnpm can
   * recreate it (a relative target that stays inside the package and out of `node_modules`); a
   * symlink it cannot record (and any symlink in `files`; on Windows, every one) drops the
   * upload: no side effects are recorded and an entry already under the cache key is removed.
   * Its diff leaves out the stored files under `node_modules/` (bundled dependencies, which
   * the walk skips), lists `added` in the walk's order and, on Windows, compares digests only.
   * Its row keeps the manifest's `gypfile`, as `addFilesFromTarball`'s `compat` says.
   * `'pnpm@11.28.10'`: pnpm 11.28.1 to 11.28.10's worker's: the walk and upload of
   * `'pnpm@11.28'` with the diff of `'@pnpm/worker@1100'` (stored files under `node_modules/`
   * listed as deleted, `added` in the stored order first), but on Windows digests only.
   */
  compat?: AddFilesFromDirCompat
  /** Accepted for pnpm compatibility; the manifest is always read. */
  readManifest?: boolean
  /** Accepted for pnpm compatibility. */
  pkg?: { name?: string, version?: string }
  /** Commit the row to `<storeDir>/index.db` before resolving (default true). */
  writeIndex?: boolean
  /** Also return the row's msgpackr bytes. */
  returnIndexRow?: boolean
}

export interface AddFilesFromDirResult {
  filesMap: Map<string, string>
  manifest?: Record<string, unknown>
  requiresBuild: boolean
  requiresPrepare?: boolean
  /** What the side-effects upload recorded. */
  sideEffects?: StoredSideEffectsDiff
  /**
   * With `compat: 'pnpm@11.28'`, when the upload found the package's row: `true` if it was
   * dropped for a symlink it could not record (`indexRow` is then the row without the cache
   * key's entry, absent when there was none to remove), `false` if the side effects were
   * recorded.
   */
  hasUnrecordedSymlinks?: boolean
  /** The row written (with `returnIndexRow`); absent when an upload found no row to extend. */
  indexRow?: Buffer
}

/**
 * Adds every file of `dir` to the store and writes the package's index row; with
 * `sideEffectsCacheKey`, records what differs from the stored package instead (nothing is
 * written when the package has no row). Errors carry pnpm's codes, `ERR_PNPM_GIT_FETCH_FAILED`
 * when pnpm's has none.
 */
export async function addFilesFromDir (opts: AddFilesFromDirOptions): Promise<AddFilesFromDirResult> {
  checkObject('opts', opts)
  checkAbsolutePath('storeDir', opts.storeDir)
  checkAbsolutePath('dir', opts.dir)
  checkString('filesIndexFile', opts.filesIndexFile)
  checkOptionalString('sideEffectsCacheKey', opts.sideEffectsCacheKey)
  if (opts.files != null && (!Array.isArray(opts.files) || opts.files.some((f) => typeof f !== 'string'))) {
    throw invalidArgument('files', 'an array of strings', opts.files)
  }
  checkOptionalObject('appendManifest', opts.appendManifest)
  checkOptionalEnum('compat', opts.compat, DIR_COMPATS)
  const sideEffectsCacheKey = opts.sideEffectsCacheKey || undefined
  const raw = await binding.addFilesFromDir({
    storeDir: opts.storeDir,
    filesDir: blobDir(opts.storeDir, 'written'),
    dir: opts.dir,
    filesIndexFile: opts.filesIndexFile,
    sideEffectsCacheKey,
    files: opts.files,
    includeNodeModules: opts.includeNodeModules ?? false,
    appendManifestJson: opts.appendManifest == null ? undefined : JSON.stringify(opts.appendManifest, null, 2),
    requiresPrepare: opts.requiresPrepare,
    compat: opts.compat,
    writeIndex: opts.writeIndex ?? true,
    returnIndexRow: opts.returnIndexRow ?? false,
  })
  if (raw.error != null) throw pnpmErrorOf(raw.error)
  const filesMap = new Map<string, string>()
  raw.paths!.forEach((p, i) => filesMap.set(p, raw.blobPaths![i]))
  return {
    filesMap,
    manifest: raw.manifestJson == null ? undefined : JSON.parse(raw.manifestJson),
    requiresBuild: raw.requiresBuild!,
    requiresPrepare: raw.requiresPrepare ?? undefined,
    sideEffects: raw.sideEffects == null ? undefined : sideEffectsDiff(raw.sideEffects),
    hasUnrecordedSymlinks: raw.hasUnrecordedSymlinks ?? undefined,
    indexRow: raw.indexRow ?? undefined,
  }
}

function sideEffectsDiff (raw: binding.SideEffectsDiffResult): StoredSideEffectsDiff {
  const diff: StoredSideEffectsDiff = {}
  if (raw.deleted != null) diff.deleted = raw.deleted
  if (raw.added != null) {
    diff.added = new Map(raw.added.map((f) => [f.path, { checkedAt: f.checkedAt ?? undefined, digest: f.digest, mode: f.mode, size: f.size }]))
  }
  return diff
}
