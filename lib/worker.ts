/**
 * `@cas/native/worker`: a drop-in for pnpm 11's `@pnpm/worker` — the same exports, signatures,
 * result shapes and error codes — with no worker threads: every call runs on the addon's own
 * native thread pools, and tarball buffers are read in place. Index rows go to the `storeIndex`
 * the caller passes, as pnpm's worker does (`queueWrites` for tarballs, `setRawMany` for
 * directories), so pnpm's main thread keeps owning its index writes.
 */
import os from 'node:os'
import * as cas from './index.js'
import { checkObject } from './args.js'
import { PnpmError, invalidArgument } from './errors.js'

export { TarballIntegrityError } from './errors.js'

/** What pnpm's `StoreIndex` offers that the worker API uses. */
export interface StoreIndexLike {
  queueWrites?: (writes: Array<{ key: string, buffer: Uint8Array }>) => void
  setRawMany?: (writes: Array<{ key: string, buffer: Uint8Array }>) => void
}

export type VerifiedFileIntegrity = cas.VerifiedFileIntegrity

const tally: VerifiedFileIntegrity = { files: 0, ms: 0 }

/** The process-wide sum of files re-hashed by `readPkgFromCafs` and the time it took. */
export function verifiedFileIntegritySnapshot (): VerifiedFileIntegrity {
  return { ...tally }
}

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

export async function finishWorkers (): Promise<void> {
  const finish = globalWithFinish.finishWorkers
  globalWithFinish.finishWorkers = undefined
  await finish?.()
}

export async function restartWorkerPool (): Promise<void> {
  await finishWorkers()
  registerShutdown()
}

export type AddFilesFromTarballOptions = Omit<cas.AddFilesFromTarballOptions, 'url' | 'writeIndex' | 'returnIndexRow'> & {
  storeIndex: StoreIndexLike
  url: string
}

export interface AddFilesResult {
  filesMap: Map<string, string>
  manifest?: Record<string, unknown>
  requiresBuild: boolean
  requiresPrepare?: boolean
  integrity?: string
  sideEffects?: cas.StoredSideEffectsDiff
}

export async function addFilesFromTarball (opts: AddFilesFromTarballOptions): Promise<AddFilesResult> {
  checkObject('opts', opts)
  checkStoreIndex(opts.storeIndex, 'queueWrites')
  registerShutdown()
  const { storeIndex, ...rest } = opts
  const result = await cas.addFilesFromTarball({ ...rest, writeIndex: false, returnIndexRow: true })
  storeIndex.queueWrites!([{ key: opts.filesIndexFile, buffer: result.indexRow! }])
  return { filesMap: result.filesMap, manifest: result.manifest, requiresBuild: result.requiresBuild, integrity: result.integrity }
}

/** `@pnpm/worker` 1100.x's, always (no `compat`: pnpm 11.28's is for `@cas/native/pnpm-worker`). */
export type AddFilesFromDirOptions = Omit<cas.AddFilesFromDirOptions, 'writeIndex' | 'returnIndexRow' | 'compat'> & {
  storeIndex: StoreIndexLike
}

export async function addFilesFromDir (opts: AddFilesFromDirOptions): Promise<AddFilesResult> {
  checkObject('opts', opts)
  checkStoreIndex(opts.storeIndex, 'setRawMany')
  registerShutdown()
  // `compat` is left out even when passed: this is `@pnpm/worker` 1100.x, which has no such option.
  const { storeIndex, compat: _, ...rest } = opts as AddFilesFromDirOptions & { compat?: unknown }
  let result: cas.AddFilesFromDirResult
  try {
    result = await cas.addFilesFromDir({ ...rest, writeIndex: false, returnIndexRow: true })
  } catch (err) {
    if (err instanceof TypeError) throw err
    throw new PnpmError((err as PnpmError).code ?? 'GIT_FETCH_FAILED', (err as Error).message)
  }
  // Written before resolving, so that a read right after sees the row (pnpm does the same).
  if (result.indexRow != null) storeIndex.setRawMany!([{ key: opts.filesIndexFile, buffer: result.indexRow }])
  return {
    filesMap: result.filesMap,
    manifest: result.manifest,
    requiresBuild: result.requiresBuild,
    requiresPrepare: result.requiresPrepare,
    sideEffects: result.sideEffects,
  }
}

export type ReadPkgFromCafsContext = cas.ReadPkgFromCafsContext
export type ReadPkgFromCafsOptions = cas.ReadPkgFromCafsOptions
export type ReadPkgFromCafsResult = cas.ReadPkgFromCafsResult

export async function readPkgFromCafs (
  ctx: ReadPkgFromCafsContext,
  filesIndexFile: string,
  opts?: ReadPkgFromCafsOptions
): Promise<ReadPkgFromCafsResult> {
  registerShutdown()
  const result = await cas.readPkgFromCafs(ctx, filesIndexFile, opts)
  tally.files += result.verifiedFileIntegrity.files
  tally.ms += result.verifiedFileIntegrity.ms
  if (result.warnings.length > 0) {
    const warn = globalWarn()
    for (const message of result.warnings) warn(message)
  }
  return result
}

export async function importPackage (opts: cas.ImportPackageOptions): Promise<cas.ImportPackageResult> {
  registerShutdown()
  return cas.importPackage(opts)
}

export async function symlinkAllModules (opts: { deps: cas.SymlinkDep[] }): Promise<undefined> {
  return cas.symlinkAllModules(opts)
}

export async function hardLinkDir (src: string, destDirs: string[]): Promise<void> {
  return cas.hardLinkDir(src, destDirs)
}

export async function initStoreDir (storeDir: string): Promise<void> {
  return cas.initStoreDir(storeDir)
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
