/**
 * `@cas/native/worker`: a drop-in for pnpm 11's `@pnpm/worker` — the same exports, signatures,
 * result shapes and error codes — with no worker threads: every call runs on the addon's own
 * native thread pools, and tarball buffers are read in place. Index rows go to the `storeIndex`
 * the caller passes, as pnpm's worker does (`queueWrites` for tarballs, `setRawMany` for
 * directories), so pnpm's main thread keeps owning its index writes.
 *
 * It takes what pnpm's worker takes where the core API is stricter: relative paths (resolved
 * against `process.cwd()` at the call, as Node's `fs` resolves them in pnpm's worker, and
 * handed back in that form in blob paths), a missing store on a read (created, as pnpm does),
 * falsy `integrity`/`ignoreFilePattern` (none), truthy flags, a non-string `url`.
 */
import os from 'node:os'
import path from 'node:path'
import * as cas from '../api/index.js'
import { checkObject, checkString } from '../api/args.js'
import { PnpmError, invalidArgument } from '../api/errors.js'
import { blobDir, readCreatingStoreDir } from '../api/store-dir.js'

/** The error a tarball whose bytes do not match its `integrity` rejects with (`ERR_PNPM_TARBALL_INTEGRITY`), as pnpm's. */
export { TarballIntegrityError } from '../api/errors.js'

/** What pnpm's `StoreIndex` offers that the worker API uses. */
export interface StoreIndexLike {
  queueWrites?: (writes: Array<{ key: string, buffer: Uint8Array }>) => void
  setRawMany?: (writes: Array<{ key: string, buffer: Uint8Array }>) => void
}

/** How many files `readPkgFromCafs` re-hashed to verify them, and the milliseconds it took. */
export type VerifiedFileIntegrity = cas.VerifiedFileIntegrity

const tally: VerifiedFileIntegrity = { files: 0, ms: 0 }

/** The process-wide sum of files re-hashed by `readPkgFromCafs` and the time it took. */
export function verifiedFileIntegritySnapshot (): VerifiedFileIntegrity {
  return { ...tally }
}

/** What `readPkgFromCafs` re-hashed since `baseline` (a `verifiedFileIntegritySnapshot()`), for pnpm's report. */
export function verifiedFileIntegritySince (baseline: VerifiedFileIntegrity): VerifiedFileIntegrity {
  checkObject('baseline', baseline)
  if (typeof baseline.files !== 'number' || typeof baseline.ms !== 'number') {
    throw invalidArgument('baseline', 'a snapshot from verifiedFileIntegritySnapshot()', baseline)
  }
  return { files: tally.files - baseline.files, ms: tally.ms - baseline.ms }
}

/**
 * pnpm's sizing rule, kept because pnpm derives its network concurrency from it:
 * `PNPM_MAX_WORKERS`, else `PNPM_WORKERS` (CPUs to leave idle), else one less than the CPUs.
 */
export function calcMaxWorkers (): number {
  if (process.env.PNPM_MAX_WORKERS) return parseInt(process.env.PNPM_MAX_WORKERS)
  const cpus = os.availableParallelism?.() ?? os.cpus().length
  if (process.env.PNPM_WORKERS) {
    const idleCPUs = Math.abs(parseInt(process.env.PNPM_WORKERS))
    return Math.max(2, cpus - idleCPUs) - 1
  }
  return Math.max(1, cpus - 1)
}

type Finish = () => Promise<void>
const globalWithFinish = globalThis as { finishWorkers?: Finish }
let registered = false

/**
 * Joins the process-wide shutdown chain every copy of `@pnpm/worker` shares through
 * `globalThis.finishWorkers`, so that pnpm finishing "its" workers also commits and closes our
 * store indexes. Native pools need no shutdown: they never keep the process alive.
 */
function registerShutdown (): void {
  if (registered) return
  registered = true
  const previous = globalWithFinish.finishWorkers
  globalWithFinish.finishWorkers = async () => {
    await previous?.()
    registered = false
    cas.closeStores()
  }
}

/**
 * pnpm's end-of-install call: runs the shutdown chain every copy of `@pnpm/worker` joined, which
 * here commits queued index writes and closes the store indexes (they reopen on the next call).
 */
export async function finishWorkers (): Promise<void> {
  const finish = globalWithFinish.finishWorkers
  globalWithFinish.finishWorkers = undefined
  await finish?.()
}

/** Finishes as `finishWorkers` does and joins the shutdown chain again, for pnpm's next install in the same process. */
export async function restartWorkerPool (): Promise<void> {
  await finishWorkers()
  registerShutdown()
}

/** `addFilesFromTarball`'s options as pnpm's worker takes them: the row goes to `storeIndex`, not to `index.db` directly; `@pnpm/worker` 1100.x's row (no `compat`). */
export type AddFilesFromTarballOptions = Omit<cas.AddFilesFromTarballOptions, 'url' | 'writeIndex' | 'returnIndexRow' | 'compat'> & {
  storeIndex: StoreIndexLike
  url: string
}

/** What adding a tarball or a directory gives pnpm: the file map (blob paths in the caller's `storeDir` form) and the row's facts. */
export interface AddFilesResult {
  filesMap: Map<string, string>
  manifest?: Record<string, unknown>
  requiresBuild: boolean
  requiresPrepare?: boolean
  integrity?: string
  sideEffects?: cas.StoredSideEffectsDiff
}

/**
 * pnpm's `addFilesFromTarball`: checks the tarball against `integrity`, writes its files into the
 * store natively and queues the index row on `storeIndex` (`queueWrites`), as pnpm's worker does.
 */
export async function addFilesFromTarball (opts: AddFilesFromTarballOptions): Promise<AddFilesResult> {
  checkObject('opts', opts)
  checkStoreIndex(opts.storeIndex, 'queueWrites')
  registerShutdown()
  // `compat` is left out even when passed, as `@pnpm/worker` 1100.x has no such option.
  const { storeIndex, compat: _, ...rest } = opts as AddFilesFromTarballOptions & { compat?: unknown }
  const storeDir = absolute('storeDir', opts.storeDir)
  const result = await cas.addFilesFromTarball({
    ...rest,
    storeDir,
    url: opts.url == null ? undefined : String(opts.url),
    writeIndex: false,
    returnIndexRow: true,
  })
  storeIndex.queueWrites!([{ key: opts.filesIndexFile, buffer: result.indexRow! }])
  return {
    filesMap: rebase(result.filesMap, blobDir(storeDir, 'written'), blobDir(opts.storeDir, 'written')),
    manifest: result.manifest,
    requiresBuild: result.requiresBuild,
    integrity: result.integrity,
  }
}

/** `@pnpm/worker` 1100.x's, always (no `compat`: pnpm 11.28's is for `@cas/native/pnpm-worker`). */
export type AddFilesFromDirOptions = Omit<cas.AddFilesFromDirOptions, 'writeIndex' | 'returnIndexRow' | 'compat'> & {
  storeIndex: StoreIndexLike
}

/**
 * pnpm's `addFilesFromDir` (git-hosted and local packages, and side-effects uploads with
 * `sideEffectsCacheKey`): the directory's files into the store, the row written to `storeIndex`
 * (`setRawMany`) before resolving. Failures keep pnpm's code and message, and Node's fs fields.
 */
export async function addFilesFromDir (opts: AddFilesFromDirOptions): Promise<AddFilesResult> {
  checkObject('opts', opts)
  checkStoreIndex(opts.storeIndex, 'setRawMany')
  registerShutdown()
  // `compat` is left out even when passed: this is `@pnpm/worker` 1100.x, which has no such option.
  const { storeIndex, compat: _, ...rest } = opts as AddFilesFromDirOptions & { compat?: unknown }
  const storeDir = absolute('storeDir', opts.storeDir)
  let result: cas.AddFilesFromDirResult
  try {
    result = await cas.addFilesFromDir({ ...rest, storeDir, dir: absolute('dir', opts.dir), writeIndex: false, returnIndexRow: true })
  } catch (err) {
    if (err instanceof TypeError) throw err
    // pnpm's worker hands on only code and message; Node's fs fields are kept too.
    const { code, message, ...fields } = err as PnpmError
    throw Object.assign(new PnpmError(code as `ERR_PNPM_${string}`, message), fields)
  }
  // Written before resolving, so that a read right after sees the row (pnpm does the same).
  if (result.indexRow != null) storeIndex.setRawMany!([{ key: opts.filesIndexFile, buffer: result.indexRow }])
  return {
    filesMap: rebase(result.filesMap, blobDir(storeDir, 'written'), blobDir(opts.storeDir, 'written')),
    manifest: result.manifest,
    requiresBuild: result.requiresBuild,
    requiresPrepare: result.requiresPrepare,
    sideEffects: result.sideEffects,
  }
}

/** The store and how to check it: `storeDir`, `verifyStoreIntegrity`, `strictStorePkgContentCheck` (default on), `frozenStore`. */
export type ReadPkgFromCafsContext = cas.ReadPkgFromCafsContext
/** The package the caller expects to find (`expectedPkg`), checked against the row's manifest. */
export type ReadPkgFromCafsOptions = cas.ReadPkgFromCafsOptions
/** A row found (verified or not, with its file map) or pnpm's miss shape (`pkgFilesIndex: null`). */
export type ReadPkgFromCafsResult = cas.ReadPkgFromCafsResult

/**
 * pnpm's `readPkgFromCafs`: a package's row from the store index, its blobs verified when asked
 * (a missing store directory is created, as pnpm does). Warnings go to `@pnpm/logger`, re-hash
 * counts to `verifiedFileIntegritySnapshot`.
 */
export async function readPkgFromCafs (
  ctx: ReadPkgFromCafsContext,
  filesIndexFile: string,
  opts?: ReadPkgFromCafsOptions,
): Promise<ReadPkgFromCafsResult> {
  checkObject('ctx', ctx)
  registerShutdown()
  const storeDir = absolute('storeDir', ctx.storeDir)
  // pnpm's worker tests these flags for truthiness (strictStorePkgContentCheck defaults to true).
  const frozenStore = Boolean(ctx.frozenStore)
  const read = () => cas.readPkgFromCafs({
    storeDir,
    verifyStoreIntegrity: Boolean(ctx.verifyStoreIntegrity),
    strictStorePkgContentCheck: Boolean(ctx.strictStorePkgContentCheck ?? true),
    frozenStore,
  }, filesIndexFile, opts)
  const result = await readCreatingStoreDir(storeDir, frozenStore, read)
  tally.files += result.verifiedFileIntegrity.files
  tally.ms += result.verifiedFileIntegrity.ms
  if (result.warnings.length > 0) {
    const warn = globalWarn()
    for (const message of result.warnings) warn(message)
  }
  if ('files' in result && storeDir !== ctx.storeDir) {
    const from = blobDir(storeDir, 'read')
    const to = blobDir(ctx.storeDir, 'read')
    rebase(result.files.filesMap, from, to)
    for (const diff of result.files.sideEffectsMaps?.values() ?? []) if (diff.added != null) rebase(diff.added, from, to)
  }
  return result
}

/** pnpm's `importPackage`, with relative paths resolved against `process.cwd()` first, as pnpm's worker resolves them. */
export async function importPackage (opts: cas.ImportPackageOptions): Promise<cas.ImportPackageResult> {
  checkObject('opts', opts)
  registerShutdown()
  const fr = opts.filesResponse
  const filesResponse = fr == null || typeof fr !== 'object'
    ? fr
    : {
        ...fr,
        filesMap: absoluteValues(fr.filesMap),
        sideEffectsMaps: fr.sideEffectsMaps instanceof Map
          ? new Map([...fr.sideEffectsMaps].map(([key, diff]) => [key, diff?.added == null ? diff : { ...diff, added: absoluteValues(diff.added) }]))
          : fr.sideEffectsMaps,
      }
  return cas.importPackage({
    ...opts,
    storeDir: absolute('storeDir', opts.storeDir),
    targetDir: absolute('targetDir', opts.targetDir),
    filesResponse,
  })
}

/** pnpm's `symlinkAllModules` (relative dependency symlinks), relative paths resolved first. */
export async function symlinkAllModules (opts: { deps: cas.SymlinkDep[] }): Promise<undefined> {
  checkObject('opts', opts)
  const deps = Array.isArray(opts.deps)
    ? opts.deps.map((d, i) => d == null || typeof d !== 'object'
      ? d
      : {
          ...d,
          modules: absolute(`deps[${i}].modules`, d.modules),
          children: d.children == null || typeof d.children !== 'object'
            ? d.children
            : Object.fromEntries(Object.entries(d.children).map(([alias, dir]) => [alias, absolute(`deps[${i}].children[${JSON.stringify(alias)}]`, dir)])),
        })
    : opts.deps
  return cas.symlinkAllModules({ deps })
}

/** pnpm's `hardLinkDir`: each of `destDirs` replaced by a hard-linked copy of `src`, relative paths resolved first. */
export async function hardLinkDir (src: string, destDirs: string[]): Promise<void> {
  return cas.hardLinkDir(absolute('src', src), Array.isArray(destDirs) ? destDirs.map((d, i) => absolute(`destDirs[${i}]`, d)) : destDirs)
}

/** pnpm's `init-store`: the store directory, `files/` and its 256 shards (not `index.db`). */
export async function initStoreDir (storeDir: string): Promise<void> {
  return cas.initStoreDir(absolute('storeDir', storeDir))
}

/**
 * A path as pnpm's worker's `fs` calls would resolve it: a relative one against
 * `process.cwd()`, now. Absolute paths stay as they are (not normalised), as in pnpm.
 */
function absolute (name: string, value: unknown): string {
  checkString(name, value)
  return path.isAbsolute(value) ? value : path.resolve(value)
}

/** A file map with its relative blob paths resolved (the same map when there are none). */
function absoluteValues<M> (map: M): M {
  if (!(map instanceof Map)) return map
  let out: Map<unknown, unknown> | undefined
  for (const [key, value] of map) {
    if (typeof value === 'string' && value !== '' && !path.isAbsolute(value)) {
      out ??= new Map(map)
      out.set(key, path.resolve(value))
    }
  }
  return (out ?? map) as M
}

/**
 * Blob paths under `from` (the resolved store) moved under `to` (the store as the caller gave
 * it), so that a relative `storeDir` gives relative blob paths, as pnpm's worker does.
 */
function rebase (map: Map<string, string>, from: string, to: string): Map<string, string> {
  if (from === to) return map
  for (const [key, value] of map) if (value.startsWith(from)) map.set(key, to + value.slice(from.length))
  return map
}

/** pnpm reports store warnings through `@pnpm/logger` (a peer of `@pnpm/worker`); without it, Node's warnings. */
function globalWarn (): (message: string) => void {
  try {
    return require('@pnpm/logger').globalWarn
  } catch {
    return (message) => process.emitWarning(message)
  }
}

/** The caller's index must take the row; checked before the work, so that no row is lost after it. */
function checkStoreIndex (storeIndex: unknown, method: 'queueWrites' | 'setRawMany'): void {
  if (storeIndex == null || typeof (storeIndex as Record<string, unknown>)[method] !== 'function') {
    throw invalidArgument('storeIndex', `a StoreIndex (an object with a ${method} method)`, storeIndex)
  }
}
