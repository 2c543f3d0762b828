/**
 * The protocol behind `@cas/native/pnpm-worker`: a `worker_threads` script that answers the messages pnpm 11's CLI
 * posts to its bundled `dist/worker.js` (pnpm 11.28.x), doing the work with `@cas/native`.
 *
 * pnpm's pool (`@rushstack/worker-pool`) posts one request at a time per worker and waits for
 * exactly one reply; `false` asks the worker to stop. Index rows are not written here: like
 * pnpm's worker, the reply carries them (`indexWrites`, msgpackr bytes in a SharedArrayBuffer)
 * and pnpm's main thread commits them through its own `StoreIndex`.
 *
 * `cas-native-pnpm swap <pnpm dir>` points a pnpm install at this file (see swap.ts).
 */
import fs from 'node:fs'
import os from 'node:os'
import { isMainThread, parentPort } from 'node:worker_threads'
import * as cas from '../api/index.js'
import { readCreatingStoreDir } from '../api/store-dir.js'

type VerifiedFileIntegrity = cas.VerifiedFileIntegrity

export interface WorkerError { code?: string, message: string, hint?: string }

export type WorkerReply =
  | { status: 'success', value?: unknown, indexWrites?: Array<{ key: string, buffer: Uint8Array }>, warnings?: string[], verifiedFileIntegrity?: VerifiedFileIntegrity }
  | { status: 'error', error: WorkerError, verifiedFileIntegrity?: VerifiedFileIntegrity }
  | { status: 'error', error: { type: 'integrity_validation_failed', algorithm: string, expected: string, found: string } }

/** A request as pnpm's main thread posts it. */
export type WorkerRequest = Record<string, any> & { type: string }

const NO_VERIFICATION: VerifiedFileIntegrity = { files: 0, ms: 0 }

/** The facade prefixes messages the way pnpm's main thread does; the main thread adds them itself. */
function stripPrefix (message: string, prefix: string): string {
  return message.startsWith(prefix) ? message.slice(prefix.length) : message
}

/** msgpackr bytes copied into a fresh SharedArrayBuffer of exactly their length, as pnpm's worker sends them. */
function toShared (bytes: Uint8Array): Uint8Array {
  const view = new Uint8Array(new SharedArrayBuffer(bytes.byteLength))
  view.set(bytes)
  return view
}

const ERRNO_CODES = new Set(Object.keys(os.constants.errno))

/**
 * pnpm's worker sends system and zlib errors with their own codes (`ENOENT`, `Z_BUF_ERROR`) and
 * its main thread adds `ERR_PNPM_`; the facade's errors carry the prefixed code already. Sent
 * unprefixed here too, so the reply is the one pnpm's worker would post.
 */
function wireCode (code: string | undefined): string | undefined {
  if (code == null || !code.startsWith('ERR_PNPM_')) return code
  const raw = code.slice('ERR_PNPM_'.length)
  return ERRNO_CODES.has(raw) || raw.startsWith('Z_') ? raw : code
}

function errorReply (err: unknown, verifiedFileIntegrity: VerifiedFileIntegrity = NO_VERIFICATION): WorkerReply {
  const e = err as { code?: string, message?: string, hint?: string }
  return {
    status: 'error',
    verifiedFileIntegrity,
    error: { code: wireCode(e?.code), message: e?.message ?? String(err), hint: e?.hint },
  }
}

async function extract (msg: WorkerRequest): Promise<WorkerReply> {
  if (msg.buffer == null && msg.tarballFile == null) throw new Error('Tarball extraction has no source')
  // pnpm hands over big local or streamed-to-disk tarballs by path.
  const buffer: Uint8Array = msg.buffer ?? await fs.promises.readFile(msg.tarballFile)
  let result: cas.AddFilesFromTarballResult
  try {
    result = await cas.addFilesFromTarball({
      buffer,
      storeDir: msg.storeDir,
      filesIndexFile: msg.filesIndexFile,
      integrity: msg.integrity || undefined,
      appendManifest: msg.appendManifest,
      ignoreFilePattern: msg.ignoreFilePattern || undefined,
      // pnpm's main thread always sends its setting (default 4 GiB); absent means no limit, as in its worker.
      maxTarballUnpackedSize: msg.maxTarballUnpackedSize ?? undefined,
      compat: 'pnpm@11.28',
      writeIndex: false,
      returnIndexRow: true,
    })
  } catch (err) {
    if (err instanceof cas.TarballIntegrityError) {
      return {
        status: 'error',
        error: { type: 'integrity_validation_failed', algorithm: err.algorithm, expected: err.expected, found: err.found },
      }
    }
    const e = err as cas.PnpmError
    if (e instanceof TypeError) throw err
    return errorReply({ code: e.code, hint: e.hint, message: stripPrefix(e.message, 'Failed to add tarball to store: ') })
  }
  const row = toShared(result.indexRow!)
  const indexWrites = [{ key: msg.filesIndexFile, buffer: row }]
  // Without a locked integrity pnpm also files the row under the computed one.
  if (!msg.integrity && msg.pkgId) indexWrites.push({ key: `${result.integrity}\t${msg.pkgId}`, buffer: row })
  return {
    status: 'success',
    value: { filesMap: result.filesMap, manifest: result.manifest, requiresBuild: result.requiresBuild, integrity: result.integrity },
    indexWrites,
  }
}

async function addDir (msg: WorkerRequest): Promise<WorkerReply> {
  const result = await cas.addFilesFromDir({
    storeDir: msg.storeDir,
    dir: msg.dir,
    filesIndexFile: msg.filesIndexFile,
    sideEffectsCacheKey: msg.sideEffectsCacheKey,
    files: msg.files,
    includeNodeModules: msg.includeNodeModules,
    appendManifest: msg.appendManifest,
    requiresPrepare: msg.requiresPrepare,
    // pnpm 11.28's walk, and its side-effects upload: symlinks recorded (none on Windows, which
    // addFilesFromDir knows; one it cannot record drops the upload), bundled dependencies not
    // listed as deleted, `added` in the walk's order.
    compat: 'pnpm@11.28',
    writeIndex: false,
    returnIndexRow: true,
  })
  const value: Record<string, unknown> = {
    filesMap: result.filesMap,
    manifest: result.manifest,
    requiresBuild: result.requiresBuild,
  }
  const indexWrites = result.indexRow == null ? undefined : [{ key: msg.filesIndexFile, buffer: toShared(result.indexRow) }]
  // pnpm's reply to a dropped upload: no requiresPrepare, no sideEffects, and `indexWrites`
  // even when there was no entry to remove.
  if (result.hasUnrecordedSymlinks === true) return { status: 'success', value, indexWrites }
  if (!msg.sideEffectsCacheKey || result.indexRow != null) {
    value.requiresPrepare = result.requiresPrepare
    value.sideEffects = result.sideEffects
  }
  const reply: WorkerReply = { status: 'success', value }
  if (indexWrites != null) reply.indexWrites = indexWrites
  return reply
}

async function readPkg (msg: WorkerRequest): Promise<WorkerReply> {
  let result: Awaited<ReturnType<typeof cas.readPkgFromCafs>>
  try {
    result = await readCreatingStoreDir(msg.storeDir, Boolean(msg.frozenStore), () => cas.readPkgFromCafs({
      storeDir: msg.storeDir,
      verifyStoreIntegrity: Boolean(msg.verifyStoreIntegrity),
      strictStorePkgContentCheck: msg.strictStorePkgContentCheck,
      frozenStore: msg.frozenStore,
      sideEffectsSymlinks: true,
      compat: 'pnpm@11.28',
    }, msg.filesIndexFile, { expectedPkg: msg.expectedPkg }))
  } catch (err) {
    return errorReply(err)
  }
  const verifiedFileIntegrity = result.verifiedFileIntegrity
  if ('pkgFilesIndex' in result) {
    return { status: 'success', verifiedFileIntegrity, value: { verified: false, pkgFilesIndex: null } }
  }
  return {
    status: 'success',
    warnings: result.warnings,
    verifiedFileIntegrity,
    value: { verified: result.verified, bundledManifest: result.bundledManifest, files: result.files },
  }
}

/**
 * The import method pnpm 11.28's worker picks for a `link` request: a package that will be
 * built (or a local directory that asks for private files) is cloned or copied (copied when the
 * store's method is `copy`); otherwise the store's method wins unless it is `auto`, then the
 * package's own (`filesResponse.packageImportMethod`).
 */
function importMethodFor (msg: WorkerRequest): cas.PackageImportMethod | undefined {
  const fr = msg.filesResponse ?? {}
  const storeMethod: cas.PackageImportMethod | undefined = msg.packageImportMethod
  const isBuilt = Boolean(msg.sideEffectsCacheKey) && fr.sideEffectsMaps?.has(msg.sideEffectsCacheKey) === true
  const privateFiles = (!isBuilt && msg.requiresBuild === true) || (fr.resolvedFrom === 'local-dir' && fr.packageImportMethod === 'clone-or-copy')
  if (privateFiles) return storeMethod === 'copy' ? 'copy' : 'clone-or-copy'
  return storeMethod && storeMethod !== 'auto' ? storeMethod : fr.packageImportMethod ?? storeMethod
}

async function link (msg: WorkerRequest): Promise<WorkerReply> {
  try {
    const method = importMethodFor(msg)
    const value = await cas.importPackage({
      ...(msg as unknown as cas.ImportPackageOptions),
      filesResponse: { ...msg.filesResponse, packageImportMethod: method },
      packageImportMethod: method,
      // Folded into the method above, as pnpm 11.28 does.
      requiresBuild: false,
      // Its reading of a side-effects diff: bundled dependencies kept.
      compat: 'pnpm@11.28',
    })
    return { status: 'success', value }
  } catch (err) {
    const e = err as cas.PnpmError
    return errorReply({ code: e.code, message: stripPrefix(e.message, `[importPackage ${msg.targetDir}] `) })
  }
}

async function symlinks (msg: WorkerRequest): Promise<WorkerReply> {
  try {
    await cas.symlinkAllModules({ deps: msg.deps })
    return { status: 'success' }
  } catch (err) {
    const e = err as cas.PnpmError
    return errorReply({ code: e.code, message: stripPrefix(e.message, '[symlinkAllModules] ') })
  }
}

/** Answers one request; exported so it can be tested without a thread. */
export async function processMessage (msg: WorkerRequest): Promise<WorkerReply | undefined> {
  switch (msg.type) {
    case 'extract': return extract(msg)
    case 'link': return link(msg)
    case 'add-dir': return addDir(msg)
    case 'init-store':
      await cas.initStoreDir(msg.storeDir)
      return { status: 'success' }
    case 'readPkgFromCafs': return readPkg(msg)
    case 'symlinkAllModules': return symlinks(msg)
    case 'hardLinkDir':
      await cas.hardLinkDir(msg.src, msg.destDirs)
      return { status: 'success' }
  }
  // pnpm's worker answers an unknown type with an empty reply too.
  return undefined
}

/** One reply per request, never a rejection. */
export async function handleMessage (msg: WorkerRequest | false): Promise<WorkerReply | undefined> {
  try {
    return await processMessage(msg as WorkerRequest)
  } catch (err) {
    return errorReply(err)
  }
}

/** Serves pnpm's requests on this worker thread's `parentPort` (what `dist/pnpm-worker.js` does when loaded). */
export function startPnpmWorker (): void {
  if (isMainThread || parentPort == null) throw new Error('@cas/native/pnpm-worker must be loaded as a worker_threads script')
  const port = parentPort
  process.on('uncaughtException', (err) => { console.error(err) })
  // Debugging aid: one line per request (received and answered, epoch ms; its type) appended to this file.
  const trace = process.env.CAS_NATIVE_PNPM_WORKER_TRACE
  const onMessage = async (msg: WorkerRequest | false): Promise<void> => {
    const received = Date.now()
    if (msg === false) {
      if (trace) fs.appendFileSync(trace, `${received} ${received} stop\n`)
      port.off('message', onMessage)
      cas.closeStores()
      process.exit(0)
    }
    const reply = await handleMessage(msg)
    if (trace) fs.appendFileSync(trace, `${received} ${Date.now()} ${msg.type}\n`)
    port.postMessage(reply)
  }
  port.on('message', onMessage)
}
