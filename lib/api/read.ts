/**
 * Reading packages back from the store: pnpm 11's `readPkgFromCafs` with its exact result
 * shapes, and a batch form for a lockfile's worth of keys. The native side answers with compact
 * arrays; the `Map`s pnpm's API hands out are built here.
 */
import * as binding from '../../index.js'
import { checkAbsolutePath, checkObject, checkOptionalBoolean, checkOptionalEnum, checkOptionalObject } from './args.js'
import { COMPATS, type StoreCompat } from './dir.js'
import { PnpmError, invalidArgument, pnpmErrorOf } from './errors.js'
import { blobDir, checkStoreDirExists } from './store-dir.js'

export interface ReadPkgFromCafsContext {
  /**
   * The store directory, already versioned (`…/v11`): an absolute path to an existing store
   * (a missing one is `ERR_PNPM_ENOENT`: reads never create a store). Blob paths are built
   * from it verbatim.
   */
  storeDir: string
  /** Check every blob (mtime fast path, then size and SHA-512) and delete bad ones. */
  verifyStoreIntegrity: boolean
  /** `false`: a name/version mismatch with `expectedPkg` is a warning, not an error (default `true`). */
  strictStorePkgContentCheck?: boolean
  /** Open the index read-only and immutable: creates no files, works on a read-only directory. */
  frozenStore?: boolean
  /**
   * Read side-effects symlink entries back as pnpm 11.28 does: each `sideEffectsMaps` entry
   * gets a `symlinks` map (relative link path → target) and loses them from `added`; an entry
   * whose links cannot all be restored safely is left out (docs/store-format.md, "Index rows").
   */
  sideEffectsSymlinks?: boolean
  /**
   * Whose reading of a row's `requiresBuild` to reproduce. `'@pnpm/worker@1100'` (the default):
   * the row's value, or pnpm's rule when it has none. `'pnpm@11.28'`: pnpm 11.28's, which reads
   * `gypfile` (`false` opts a root `binding.gyp` out) and doubts a `true` that only a root
   * `binding.gyp` explains when the row's manifest has no `gypfile` key (an older writer's row):
   * it asks the package's own `package.json` in the store.
   */
  compat?: StoreCompat
}

export interface ExpectedPkg {
  name?: string
  version?: string
}

export interface ReadPkgFromCafsOptions {
  /** Accepted for pnpm compatibility; the manifest is always returned. */
  readManifest?: boolean
  /** The package the lockfile expects under this key. */
  expectedPkg?: ExpectedPkg
}

/** Blobs hashed during verification and the milliseconds spent reading and hashing them. */
export interface VerifiedFileIntegrity {
  files: number
  ms: number
}

export interface StoredFileInfo {
  checkedAt?: number
  digest: string
  mode: number
  size: number
}

export interface StoredSideEffectsDiff {
  deleted?: string[]
  added?: Map<string, StoredFileInfo>
}

export interface ReadPackageFilesResponse {
  resolvedFrom: 'store'
  /** Relative path in the package → absolute path of its blob. */
  filesMap: Map<string, string>
  sideEffectsMaps?: Map<string, { added?: Map<string, string>, deleted?: string[], symlinks?: Map<string, string> }>
  sideEffectsDiffs?: Map<string, StoredSideEffectsDiff>
  remoteSideEffectsQuarantine?: Map<string, string[]>
  requiresBuild: boolean
  requiresPrepare?: boolean
}

/** What a read of one key gives: a row found (checked or not), or pnpm's miss shape. */
export type ReadPkgFromCafsResult = {
  verified: boolean
  bundledManifest?: Record<string, unknown>
  files: ReadPackageFilesResponse
} | {
  verified: false
  pkgFilesIndex: null
}

/**
 * Extra facts about a single read, attached to its result as non-enumerable properties so the
 * result itself stays deep-equal to pnpm's.
 */
export interface ReadReport {
  /** Messages pnpm would log with `globalWarn` (non-strict mismatch, unreadable row). */
  readonly warnings: string[]
  readonly verifiedFileIntegrity: VerifiedFileIntegrity
}

export interface ReadPkgsFromCafsOptions {
  /** One entry per key (or `undefined` where nothing is expected). */
  expectedPkgs?: Array<ExpectedPkg | undefined>
}

export interface ReadPkgsFromCafsResult {
  /** One per key, in order: pnpm's result shape, or `{ verified: false, error }` for that key. */
  results: Array<ReadPkgFromCafsResult | { verified: false, error: PnpmError }>
  warnings: Array<{ key: string, message: string }>
  verifiedFileIntegrity: VerifiedFileIntegrity
}

/**
 * pnpm 11's `readPkgFromCafs`: the package's row from `<storeDir>/index.db`, its files mapped to
 * blob paths and (with `verifyStoreIntegrity`) checked. Resolves `{ verified: false,
 * pkgFilesIndex: null }` when there is no usable row. Rejects with pnpm's codes
 * (`ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE`, `ERR_PNPM_MISSING_CONTENT_DIGEST`, …). The result
 * carries `warnings` and `verifiedFileIntegrity` as non-enumerable properties.
 */
export async function readPkgFromCafs (
  ctx: ReadPkgFromCafsContext,
  filesIndexFile: string,
  opts?: ReadPkgFromCafsOptions,
): Promise<ReadPkgFromCafsResult & ReadReport> {
  checkContext(ctx)
  if (typeof filesIndexFile !== 'string') throw invalidArgument('filesIndexFile', 'a string', filesIndexFile)
  checkOptionalObject('opts', opts)
  checkExpected('expectedPkg', opts?.expectedPkg)
  const entry = await readOne(ctx, filesIndexFile, opts?.expectedPkg)
  if (entry.error != null) throw toError(entry.error)
  const result = toResult(entry, ctx.storeDir, ctx.verifyStoreIntegrity === true, ctx.sideEffectsSymlinks === true)
  Object.defineProperties(result, {
    warnings: { value: entry.warnings, enumerable: false },
    verifiedFileIntegrity: { value: { files: entry.verifiedFiles, ms: entry.verifiedMs }, enumerable: false },
  })
  return result as ReadPkgFromCafsResult & ReadReport
}

/**
 * `readPkgFromCafs` for many keys at once, e.g. every package of a lockfile before a warm
 * install: the rows are looked up with a few SQL statements and decoded and verified in
 * parallel. One result per key; a key that fails gets `{ verified: false, error }` instead of
 * failing the batch. Rejects only when the index itself cannot be read.
 */
export async function readPkgsFromCafs (
  ctx: ReadPkgFromCafsContext,
  keys: string[],
  opts?: ReadPkgsFromCafsOptions,
): Promise<ReadPkgsFromCafsResult> {
  checkContext(ctx)
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string')) {
    throw invalidArgument('keys', 'an array of strings', keys)
  }
  checkOptionalObject('opts', opts)
  const expectedPkgs = opts?.expectedPkgs
  if (expectedPkgs != null) {
    if (!Array.isArray(expectedPkgs) || expectedPkgs.length !== keys.length) {
      throw invalidArgument('expectedPkgs', 'an array with one entry per key', expectedPkgs)
    }
    for (const e of expectedPkgs) checkExpected('expectedPkgs', e)
  }
  checkStoreDirExists(ctx.storeDir)
  // The native side answers in chunks, the first ones while it is still working on the rest:
  // turning them into pnpm's shapes here overlaps its work.
  const chunks = binding.readPkgs(nativeOptions(ctx, keys, expectedPkgs))
  const verify = ctx.verifyStoreIntegrity === true
  const results: ReadPkgsFromCafsResult['results'] = new Array(keys.length)
  const warnings: Array<{ at: number, key: string, message: string }> = []
  let files = 0
  let ms = 0
  for (const pending of chunks) {
    const chunk = await pending
    if (chunk.error != null) throw toError(chunk.error)
    files += chunk.verifiedFiles
    ms += chunk.verifiedMs
    for (let j = 0; j < chunk.indices.length; j++) {
      const at = chunk.indices[j]
      const entry = chunk.entries[j]
      for (const message of entry.warnings) warnings.push({ at, key: keys[at], message })
      results[at] = answer(entry, ctx.storeDir, verify, ctx.sideEffectsSymlinks === true)
    }
  }
  warnings.sort((a, b) => a.at - b.at)
  return {
    results,
    warnings: warnings.map(({ key, message }) => ({ key, message })),
    verifiedFileIntegrity: { files, ms },
  }
}

function answer (entry: binding.ReadPkgEntry, storeDir: string, verify: boolean, symlinks: boolean): ReadPkgsFromCafsResult['results'][number] {
  if (entry.error != null) return { verified: false, error: toError(entry.error) }
  try {
    return toResult(entry, storeDir, verify, symlinks)
  } catch (error) {
    return { verified: false, error: error as PnpmError }
  }
}

/**
 * Single reads waiting for the next batch, per store and options. pnpm asks for one package at a
 * time, but asks for hundreds at once: the reads requested before the event loop comes round
 * again go to the native side as one batch (one snapshot, a few SQL statements, one crossing of
 * the JS/native boundary per chunk of answers) instead of one call each. Every caller still gets
 * its own answer, error and tally.
 */
interface QueuedRead {
  key: string
  expectedPkg?: ExpectedPkg
  resolve: (entry: binding.ReadPkgEntry) => void
  reject: (error: unknown) => void
}

const queuedReads = new Map<string, { ctx: ReadPkgFromCafsContext, reads: QueuedRead[] }>()

function readOne (ctx: ReadPkgFromCafsContext, key: string, expectedPkg: ExpectedPkg | undefined): Promise<binding.ReadPkgEntry> {
  const id = [ctx.storeDir, ctx.verifyStoreIntegrity === true, ctx.strictStorePkgContentCheck ?? true, ctx.frozenStore === true, ctx.sideEffectsSymlinks === true, ctx.compat].join('\0')
  let queue = queuedReads.get(id)
  if (queue == null) {
    queue = { ctx, reads: [] }
    queuedReads.set(id, queue)
    setImmediate(() => {
      queuedReads.delete(id)
      void readQueued(queue!.ctx, queue!.reads)
    })
  }
  return new Promise((resolve, reject) => queue!.reads.push({ key, expectedPkg, resolve, reject }))
}

async function readQueued (ctx: ReadPkgFromCafsContext, reads: QueuedRead[]): Promise<void> {
  let answered = 0
  try {
    checkStoreDirExists(ctx.storeDir)
    const expected = reads.some((r) => r.expectedPkg != null) ? reads.map((r) => r.expectedPkg) : undefined
    for (const pending of binding.readPkgs(nativeOptions(ctx, reads.map((r) => r.key), expected))) {
      const chunk = await pending
      if (chunk.error != null) throw toError(chunk.error)
      for (let j = 0; j < chunk.indices.length; j++) {
        reads[chunk.indices[j]].resolve(chunk.entries[j])
        answered++
      }
    }
  } catch (error) {
    for (const r of reads) r.reject(error) // no-op for the ones already resolved
  }
  if (answered !== reads.length) {
    const error = new PnpmError('ERR_PNPM_READ_FROM_STORE', 'The store index read ended without answering every key')
    for (const r of reads) r.reject(error)
  }
}

function nativeOptions (ctx: ReadPkgFromCafsContext, keys: string[], expectedPkgs: Array<ExpectedPkg | undefined> | undefined): binding.ReadPkgsOptions {
  return {
    storeDir: ctx.storeDir,
    keys,
    verifyStoreIntegrity: ctx.verifyStoreIntegrity === true,
    strictStorePkgContentCheck: ctx.strictStorePkgContentCheck ?? true,
    frozenStore: ctx.frozenStore === true,
    sideEffectsSymlinks: ctx.sideEffectsSymlinks === true,
    compat: ctx.compat,
    expectedPkgs: expectedPkgs?.map((e) => e == null ? undefined : { name: e.name ?? undefined, version: e.version ?? undefined }),
  }
}

function zipMap<V> (keys: string[], values: V[]): Map<string, V> {
  const map = new Map<string, V>()
  for (let i = 0; i < keys.length; i++) map.set(keys[i], values[i])
  return map
}

/** `relative path → <storeDir><sep>files<sep><blob name>` from the NUL-joined native strings. */
function filesMapOf (count: number, joinedPaths: string, joinedNames: string, prefix: string): Map<string, string> {
  const map = new Map<string, string>()
  if (count === 0) return map
  const paths = joinedPaths.split('\0')
  const names = joinedNames.split('\0')
  if (paths.length !== count || names.length !== count) {
    // Only a hand-made row can hold a path with a NUL in it; no file system allows one.
    throw new PnpmError('ERR_PNPM_READ_FROM_STORE', 'The store index row has a file path with a NUL character in it')
  }
  for (let i = 0; i < paths.length; i++) map.set(paths[i], prefix + names[i])
  return map
}

function toResult (entry: binding.ReadPkgEntry, storeDir: string, verify: boolean, symlinks: boolean): ReadPkgFromCafsResult {
  if (!entry.found) return { verified: false, pkgFilesIndex: null }
  const prefix = blobDir(storeDir, 'read')
  let sideEffectsMaps: ReadPackageFilesResponse['sideEffectsMaps']
  let sideEffectsDiffs: ReadPackageFilesResponse['sideEffectsDiffs']
  if (entry.sideEffects != null) {
    sideEffectsMaps = new Map()
    sideEffectsDiffs = new Map()
    for (const se of entry.sideEffects) {
      const added = se.addedPaths == null ? undefined : zipMap(se.addedPaths, se.addedBlobNames!.map((n) => prefix + n))
      const deleted = se.deleted ?? undefined
      // pnpm's verifying path builds `{ added, deleted }` whole; its maps-only path sets the
      // keys that have values.
      const mapEntry: { added?: Map<string, string>, deleted?: string[], symlinks?: Map<string, string> } = verify && added != null
        ? { added, deleted }
        : {}
      if (!verify || added == null) {
        if (added != null) mapEntry.added = added
        if (deleted != null) mapEntry.deleted = deleted
      }
      if (symlinks) {
        // pnpm 11.28 builds every entry with files as `{ added, deleted }`, `deleted` possibly undefined.
        if (mapEntry.added != null && !('deleted' in mapEntry)) mapEntry.deleted = undefined
        if (se.symlinkPaths != null) {
          for (const p of se.symlinkPaths) mapEntry.added?.delete(p)
          mapEntry.symlinks = zipMap(se.symlinkPaths, se.symlinkTargets!)
        }
      }
      sideEffectsMaps.set(se.cacheKey, mapEntry)
      const diff: StoredSideEffectsDiff = {}
      if (deleted != null) diff.deleted = deleted
      if (se.addedInfos != null) diff.added = zipMap(se.addedPaths!, se.addedInfos.map(storedInfo))
      sideEffectsDiffs.set(se.cacheKey, diff)
    }
  }
  const quarantine = entry.remoteSideEffectsQuarantine
  return {
    verified: entry.verified,
    bundledManifest: entry.manifestJson == null ? undefined : JSON.parse(entry.manifestJson),
    files: {
      filesMap: filesMapOf(entry.fileCount, entry.paths!, entry.blobNames!, prefix),
      sideEffectsMaps,
      sideEffectsDiffs,
      remoteSideEffectsQuarantine: quarantine == null ? undefined : new Map(quarantine.map((q) => [q.cacheKey, q.reasons])),
      resolvedFrom: 'store',
      requiresBuild: entry.requiresBuild,
      requiresPrepare: entry.requiresPrepare ?? undefined,
    },
  }
}

function storedInfo (i: binding.StoredFileInfo): StoredFileInfo {
  const info: StoredFileInfo = { digest: i.digest, mode: i.mode, size: i.size }
  return i.checkedAt == null ? info : { checkedAt: i.checkedAt, ...info }
}

function toError (error: binding.NativeError): PnpmError {
  return pnpmErrorOf(error)
}

function checkContext (ctx: unknown): asserts ctx is ReadPkgFromCafsContext {
  checkObject('ctx', ctx)
  const c = ctx as Record<string, unknown>
  checkAbsolutePath('storeDir', c.storeDir)
  for (const name of ['verifyStoreIntegrity', 'strictStorePkgContentCheck', 'frozenStore', 'sideEffectsSymlinks']) checkOptionalBoolean(name, c[name])
  checkOptionalEnum('compat', c.compat, COMPATS)
}

function checkExpected (name: string, expected: unknown): void {
  if (expected == null) return
  checkObject(name, expected)
  const e = expected as Record<string, unknown>
  for (const field of ['name', 'version']) {
    if (e[field] != null && typeof e[field] !== 'string') throw invalidArgument(`${name}.${field}`, 'a string', e[field])
  }
}
