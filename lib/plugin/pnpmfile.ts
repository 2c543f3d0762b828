/**
 * `@cas/native/pnpmfile`: a pnpm 11 plugin. A `.pnpmfile.cjs` containing
 * `module.exports = require('@cas/native/pnpmfile')` gives pnpm
 *
 * - `hooks.preResolution` (`pnpm install` only, see `startedToInstall`): the lockfile's virtual
 *   store is linked natively in one batch before pnpm starts, and pnpm skips every package found
 *   in place (see `head-start.ts`; the settings it needs come through `hooks.updateConfig`, which
 *   changes nothing).
 * - `hooks.importPackage`: every package pnpm links into `node_modules` goes through the native
 *   importer (pnpm's skip rules, `package.json` last, staging). Calls that arrive together are
 *   sent to the addon as one `linkPackages` batch.
 * - `fetchers`: registry tarballs (with a locked integrity) are downloaded here with Node's
 *   `http`/`https` clients (`registry-fetch.ts`), the body piped into the native
 *   `createTarballWriter` (a big tarball is extracted while it downloads), which verifies,
 *   extracts and writes the store-index row itself. Whatever this fetcher cannot do (a failed or unauthorised
 *   download, a bad tarball) is delegated back to pnpm's own tarball fetcher, which has the
 *   registry credentials, proxy settings and retries.
 *
 * Environment: `CAS_NATIVE_PACKAGE_IMPORT_METHOD` (pnpm's `packageImportMethod` by default;
 * `auto`, `hardlink`, `copy`, `clone`, `clone-or-copy`), `CAS_NATIVE_PNPMFILE_PRELINK=0` to
 * leave the virtual store to pnpm, `CAS_NATIVE_PNPMFILE_FETCHER=0` to leave all downloads to pnpm,
 * `CAS_NATIVE_PNPMFILE_TRACE=<file>` to append what it did to a file (the head start's summary and
 * packages, one line per import, per fetch and per delegation).
 */
import fs from 'node:fs'
import path from 'node:path'
import { checkAbsolutePath, checkObject } from '../api/args.js'
import { invalidArgument } from '../api/errors.js'
import * as cas from '../api/index.js'
import { installNatively, type NativeInstallConfig, type NativeInstallSummary } from './install/native-install.js'
import { takesFetcherDelegation, tarballRowsOf } from './install/pnpm-releases.js'
import { downloadToStore, fetchUnsupported, networkOf } from './registry-fetch.js'
import { PLUGIN_NAME, userAgentPnpmVersion } from './config-dependency.js'
import { trace } from './trace.js'
import { prelinkVirtualStore, type PreResolutionContext } from './head-start.js'
import { startedToInstall, type PnpmConfig } from './pnpm-config.js'
import { deferUntilPnpmScope, dropRecords, holdRecords, PnpmLog, pnpmLog, releaseRecords, reportBuildFailure, reportInstalled, reportLeftToPnpm, showProgress, watchLockfileVerification, type Progress } from './report.js'
import { whyNot } from './why-not.js'

/** What pnpm passes to `hooks.importPackage` (pnpm 11.28). */
export interface ImportIndexedPackageOptions {
  filesMap: Map<string, string>
  force: boolean
  resolvedFrom: 'store' | 'local-dir' | 'remote'
  keepModulesDir?: boolean
  disableRelinkLocalDirDeps?: boolean
  safeToSkip?: boolean
  sourceExists?: boolean
  /** Symlinks recorded in a side-effects entry: relative path → link target. */
  symlinks?: Map<string, string>
}

/**
 * A required dependency's build that failed in the native install: pnpm's install is to end
 * with its error, as pnpm's own build step ends it, before pnpm runs anything (`preResolution`
 * throws it, so that pnpm's error handler prints it with the reporter's lines and exits with
 * the script's status; without that hook, `updateConfig` throws it). Unless pnpm's
 * supply-chain check fails (`refused`): stock never reaches its build step then.
 */
let failedBuild: { error: Error, report: () => void, refused: () => void, verification: ReturnType<typeof watchLockfileVerification> } | undefined

/** Whether pnpm is given `preResolution` (the head start; also where a failed build ends the install). */
const prelinks = startedToInstall() && process.env.CAS_NATIVE_PNPMFILE_PRELINK !== '0'

/** pnpm's settings, as `hooks.updateConfig` last saw them. */
let pnpmConfig: (PnpmConfig & { maxTarballUnpackedSize?: number }) | undefined

function configuredImportMethod (): cas.PackageImportMethod {
  for (const m of [process.env.CAS_NATIVE_PACKAGE_IMPORT_METHOD, pnpmConfig?.packageImportMethod]) {
    if (m != null && (cas.PACKAGE_IMPORT_METHODS as readonly string[]).includes(m)) return m as cas.PackageImportMethod
  }
  return 'auto'
}

/** `<storeDir>/files/xx/yyy…` → `<storeDir>`; the native importer keys its method probe on it. */
function storeDirOfBlobs (filesMap: Map<string, string>, to: string): string {
  // Any blob tells: the first one.
  const [blob] = filesMap.values()
  const shard = blob != null ? path.dirname(blob) : ''
  if (blob != null && path.basename(path.dirname(shard)) === 'files' && /^[0-9a-f]{2}$/.test(path.basename(shard))) {
    return path.dirname(path.dirname(shard))
  }
  return path.dirname(to)
}

/**
 * pnpm does not tell the hook whether the package will run build scripts (it would clone or
 * copy it then, so that a build cannot change store blobs). Decided here from the manifest as
 * pnpm 11.28's `pkgRequiresBuild` does: install scripts, a `binding.gyp` the manifest does not
 * opt out of (`gypfile: false`), or a file under `.hooks/`.
 */
async function mayBeBuilt (filesMap: Map<string, string>): Promise<boolean> {
  for (const p of filesMap.keys()) if (/^\.hooks[\\/]/.test(p)) return true
  const manifestPath = filesMap.get('package.json')
  let manifest: { scripts?: Record<string, unknown>, gypfile?: unknown } | undefined
  try {
    if (manifestPath != null) manifest = JSON.parse(await fs.promises.readFile(manifestPath, 'utf8')) ?? undefined
  } catch {}
  const scripts = manifest?.scripts
  if (scripts != null && Boolean(scripts.preinstall || scripts.install || scripts.postinstall)) return true
  return filesMap.has('binding.gyp') && manifest?.gypfile !== false
}

interface Pending {
  to: string
  storeDir: string
  pkg: cas.LinkPackage
  resolve: (method: string | undefined) => void
  reject: (err: unknown) => void
}

let queue: Pending[] = []
let scheduled = false

function flush (): void {
  scheduled = false
  const batch = queue
  queue = []
  const byStore = new Map<string, Pending[]>()
  for (const p of batch) {
    const list = byStore.get(p.storeDir)
    if (list == null) byStore.set(p.storeDir, [p])
    else list.push(p)
  }
  for (const [storeDir, items] of byStore) void runBatch(storeDir, items)
}

async function runBatch (storeDir: string, items: Pending[]): Promise<void> {
  try {
    const { results } = await cas.linkPackages({ storeDir, packageImportMethod: configuredImportMethod(), packages: items.map((i) => i.pkg) })
    items.forEach((item, i) => item.resolve(results[i].importMethod))
  } catch {
    // A batch stops at its first failure: redo its packages one by one, so each caller gets its
    // own result or error. Packages the batch had already imported are skipped by the skip rules
    // and so report `undefined` (pnpm fails the install on the error anyway).
    await Promise.all(items.map(async (item) => {
      try {
        const { results } = await cas.linkPackages({ storeDir, packageImportMethod: configuredImportMethod(), packages: [item.pkg] })
        item.resolve(results[0].importMethod)
      } catch (err) {
        item.reject(err)
      }
    }))
  }
}

function enqueue (to: string, storeDir: string, pkg: cas.LinkPackage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    queue.push({ to, storeDir, pkg, resolve, reject })
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  })
}

/** pnpm's `importIndexedPackage` hook shape: the method used, or `undefined` when the package was already there. */
export async function importIndexedPackage (to: string, opts: ImportIndexedPackageOptions): Promise<string | undefined> {
  checkAbsolutePath('to', to)
  checkObject('opts', opts)
  const filesMap = opts.filesMap
  if (!(filesMap instanceof Map)) throw invalidArgument('filesMap', 'a Map', filesMap)
  const method = await enqueue(to, storeDirOfBlobs(filesMap, to), {
    targetDir: to,
    filesMap,
    resolvedFrom: opts.resolvedFrom,
    requiresBuild: await mayBeBuilt(filesMap),
    force: Boolean(opts.force),
    keepModulesDir: Boolean(opts.keepModulesDir),
    disableRelinkLocalDirDeps: Boolean(opts.disableRelinkLocalDirDeps),
    safeToSkip: Boolean(opts.safeToSkip),
    symlinks: opts.symlinks,
  })
  trace(`import ${method ?? '-'} ${to}`)
  return method
}

// ---- fetcher -------------------------------------------------------------------------------

interface TarballResolution {
  type?: string
  tarball?: string
  integrity?: string
  gitHosted?: boolean
  path?: string
}

interface FetchOptions {
  filesIndexFile: string
  lockfileDir?: string
  pkg?: { name?: string, version?: string }
  readManifest?: boolean
  appendManifest?: Record<string, unknown>
  ignoreFilePattern?: string
  onStart?: (totalSize: number | null, attempt: number) => void
  onProgress?: (downloaded: number) => void
}

const GIT_HOSTS = new Set(['codeload.github.com', 'bitbucket.org', 'gitlab.com'])

/** Registry tarballs: no resolution type, an http(s) URL that is not a git host's archive, a locked integrity. */
function isRegistryTarball (resolution: TarballResolution): boolean {
  if (resolution == null || resolution.type != null || typeof resolution.tarball !== 'string') return false
  if (typeof resolution.integrity !== 'string' || resolution.integrity === '' || resolution.path != null) return false
  let url: URL
  try {
    url = new URL(resolution.tarball)
  } catch {
    return false
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && !GIT_HOSTS.has(url.hostname.toLowerCase())
}

/** pnpm's own fetchers, which pnpm passes a custom fetcher as the fetch's fourth argument. */
interface BuiltinFetchers {
  remoteTarball?: (cafs: unknown, resolution: TarballResolution, opts: FetchOptions) => Promise<unknown>
}

/**
 * The download handed back to pnpm's tarball fetcher: by pnpm itself where it takes a
 * `{ delegate }` answer, else (before pnpm 11.12.0) called here, as pnpm would call it.
 */
function delegate (resolution: TarballResolution, url?: string, call?: { cafs: unknown, opts: FetchOptions, builtins?: BuiltinFetchers }): { delegate: TarballResolution } | Promise<unknown> {
  trace(`delegate ${url ?? resolution.tarball}`)
  const remoteTarball = call?.builtins?.remoteTarball
  if (remoteTarball != null && !takesFetcherDelegation(userAgentPnpmVersion(pnpmConfig?.userAgent))) return remoteTarball(call!.cafs, resolution, call!.opts)
  return { delegate: resolution }
}

/** Downloads a registry tarball and extracts it natively; anything unusual is handed back to pnpm. */
export const registryTarballFetcher = {
  canFetch (_pkgId: string, resolution: TarballResolution): boolean {
    // Under a proxy, certificates or credentials its requests would not honour, pnpm downloads.
    return process.env.CAS_NATIVE_PNPMFILE_FETCHER !== '0' && isRegistryTarball(resolution) &&
      fetchUnsupported((pnpmConfig ?? {}) as Record<string, unknown>) == null
  },
  async fetch (cafs: { storeDir: string } | null, resolution: TarballResolution, opts: FetchOptions, builtins?: BuiltinFetchers) {
    // pnpm 12 calls pnpmfile fetchers without a store; delegation is all it understands.
    if (cafs == null) return delegate(resolution)
    const url = resolution.tarball!
    const result = await downloadToStore({
      url,
      integrity: resolution.integrity!,
      storeDir: cafs.storeDir,
      filesIndexFile: opts.filesIndexFile,
      maxTarballUnpackedSize: pnpmConfig?.maxTarballUnpackedSize,
      appendManifest: opts.appendManifest,
      ignoreFilePattern: opts.ignoreFilePattern,
      onStart: opts.onStart,
      onProgress: opts.onProgress,
      network: networkOf((pnpmConfig ?? {}) as Record<string, unknown>),
      // The rows (and requiresBuild) the running pnpm's own fetcher would give.
      compat: tarballRowsOf(userAgentPnpmVersion(pnpmConfig?.userAgent)),
    })
    // pnpm's fetcher downloads again, retries, and reports the error its own way.
    if (result == null) return await delegate(resolution, url, { cafs, opts, builtins })
    trace(`fetch ${url}`)
    return { filesMap: result.filesMap, manifest: result.manifest, requiresBuild: result.requiresBuild, integrity: result.integrity }
  },
}

/**
 * Remembers the settings `preResolution` and the importer need, and, for `pnpm install`, runs
 * the native install (it decides whether it can) and reports it through pnpm's reporter
 * (`report.ts`); changes no setting.
 */
async function updateConfig<T extends object> (config: T): Promise<T> {
  pnpmConfig = config
  if (startedToInstall() && process.env.CAS_NATIVE_INSTALL !== '0') {
    const settings = config as NativeInstallConfig
    const version = userAgentPnpmVersion(settings.userAgent)
    const log = pnpmLog(settings, version)
    const progress = showProgress(settings, log)
    // Its builds' lines wait until it is known what comes before them.
    holdRecords()
    let outcome: NativeInstallSummary | Error
    try {
      outcome = await installNatively(settings, version, configuredImportMethod())
    } catch (err) {
      // Nothing recorded: pnpm installs as if it had not run.
      outcome = err as Error
    }
    progress.stop()
    traceOutcome(outcome)
    if (!(outcome instanceof Error) && outcome.failed != null) {
      endWithFailedBuild(outcome, progress.counts, settings, log)
      return config
    }
    // pnpm checks the projects' manifests after this hook, warning first: the report waits for that.
    if (!(outcome instanceof Error) && outcome.installed) deferUntilPnpmScope(log)
    releaseRecords((buildLines) => {
      try {
        if (outcome instanceof Error) reportLeftToPnpm(`it failed: ${outcome.message}`, log)
        else if (outcome.installed) reportInstalled(outcome, progress.counts, { ...settings, dir: settings.dir! }, log, buildLines)
        else reportLeftToPnpm(outcome.skipped!, log)
      } catch (err) {
        // Only the report: the install is what it is.
        trace(`report failed: ${(err as Error).message}`)
      }
    })
    if (!(outcome instanceof Error) && outcome.projectScripts != null) await runProjectScriptsAfter(outcome.projectScripts, log, () => { if (outcome.checkLog != null) (config as { trustLockfile?: boolean }).trustLockfile = true })
  }
  return config
}

/**
 * The projects' own scripts, after the install's report as after pnpm's summary; then the
 * workspace state. One that fails ends the install with its error as a failed build does (the
 * state unwritten, as stock leaves it), never handed back to pnpm (which would run them again).
 * pnpm's own install, which then only ends the run with that error, is not to check the lockfile
 * a second time where the report showed the native install's check (`checkedOnce`: pnpm's
 * `trustLockfile` set, which skips its check and its lines, and nothing else of what it does
 * before that error).
 */
async function runProjectScriptsAfter (scripts: NonNullable<NativeInstallSummary['projectScripts']>, log: PnpmLog, checkedOnce: () => void): Promise<void> {
  let ended: Awaited<ReturnType<typeof scripts.run>>
  try {
    ended = await scripts.run()
  } catch (err) {
    ended = { failed: err as Error, id: '.' }
  }
  if ('validatedAtNs' in ended) {
    trace(`native install: ran the project's ${scripts.shown.join(', ')}${ended.validatedAtNs != null ? `, state validated at ${ended.validatedAtNs}` : ''}`)
    return
  }
  trace(`native install ended: the project's scripts failed in ${ended.id} (${ended.failed.message.replace(/\n/g, ': ')}) (the install ends with its error, the workspace state not written)`)
  const refused = (): void => log.say(`${PLUGIN_NAME} installed natively and ran the project's scripts (one failed), but pnpm's supply-chain check of the lockfile failed, so the install ends with pnpm's error`, true)
  checkedOnce()
  failedBuild = { error: ended.failed, report: () => {}, refused, verification: watchLockfileVerification() }
  if (!prelinks) {
    failedBuild.verification.stop()
    throw ended.failed
  }
}

/**
 * A required build failed in the native install: pnpm is to end with its error once its
 * install starts (`preResolution`, after its supply-chain check, as pnpm's build step comes
 * after it), the layout's records and the builds' lines shown first; without that hook, at once.
 */
function endWithFailedBuild (outcome: NativeInstallSummary, counts: Progress, settings: NativeInstallConfig, log: PnpmLog): void {
  const report = (): void => {
    try {
      reportBuildFailure(outcome, counts, { ...settings, dir: settings.dir!, lockfileDir: settings.lockfileDir! }, log)
      log.say(`${PLUGIN_NAME} laid out ${outcome.packages} packages natively and ran the builds pnpm runs; one failed, so the install ends as pnpm's own`, true)
    } catch (err) {
      trace(`report failed: ${(err as Error).message}`)
    }
  }
  const refused = (): void => {
    // Nothing of the layout or the builds is shown: stock shows pnpm's refusal only.
    dropRecords()
    log.say(`${PLUGIN_NAME} laid out ${outcome.packages} packages natively and ran the builds pnpm runs (one failed), but pnpm's supply-chain check of the lockfile failed, so the install ends with pnpm's error`, true)
  }
  failedBuild = { error: outcome.failed!, report: () => releaseRecords(report), refused, verification: watchLockfileVerification() }
  if (!prelinks) {
    failedBuild.verification.stop()
    failedBuild.report()
    throw failedBuild.error
  }
}

/** The native install's lines in the trace: its downloads, then what it did or why not. */
function traceOutcome (outcome: NativeInstallSummary | Error): void {
  if (outcome instanceof Error) {
    trace(`native install failed: ${outcome.message}`)
    return
  }
  if (outcome.failed != null) {
    trace(`native install ended: ${outcome.skipped!} (the install ends with its error, nothing recorded)`)
    return
  }
  for (const url of outcome.downloaded) trace(`fetch ${url}`)
  trace(outcome.installed
    ? `native install: ${outcome.packages} packages, ${outcome.ms.toFixed(0)} ms (${Object.entries(outcome.phases).map(([k, v]) => `${k} ${v}`).join(', ')})${outcome.validatedAtNs != null ? `, state validated at ${outcome.validatedAtNs}` : ''}${outcome.pnpmRunsScripts != null ? `; pnpm runs the project's ${outcome.pnpmRunsScripts.join(', ')} and records the state` : ''}${outcome.projectScripts != null ? `; the project's ${outcome.projectScripts.shown.join(', ')} next` : ''}`
    : `native install skipped: ${outcome.skipped!}\n  to install natively: ${whyNot(outcome.skipped!).change}`)
}

async function preResolution (ctx: PreResolutionContext): Promise<void> {
  if (failedBuild != null) {
    // pnpm's build step comes after its supply-chain check has ended (the native install ran the same check before any script).
    const verification = await failedBuild.verification.ended()
    failedBuild.verification.stop()
    if (verification === 'failed') {
      // The check failed though the native install's passed (the registry's answer changed, say):
      // pnpm's install rejects with the check's error (settleInstall) once this hook returns, and
      // stock never reaches its build step, so the build's error is not to replace it.
      trace(`pnpm's supply-chain check of the lockfile failed: the install ends with pnpm's error, though the native install had run the builds (${failedBuild.error.message.replace(/\n/g, ': ')})`)
      failedBuild.refused()
      return
    }
    failedBuild.report()
    throw failedBuild.error
  }
  try {
    const summary = await prelinkVirtualStore(ctx, pnpmConfig, configuredImportMethod())
    if (summary.skipped != null) {
      trace(`prelink skipped: ${summary.skipped}`)
      return
    }
    trace([
      `prelink ${summary.linked.length} linked, ${summary.leftOut.length} left to pnpm, ${summary.ms.toFixed(0)} ms`,
      ...summary.linked.map((dir) => `prelinked ${dir}`),
      ...summary.leftOut.map(({ depPath, reason }) => `left ${reason} ${depPath}`),
    ].join('\n'))
  } catch (err) {
    // Only a head start: pnpm installs whatever is not recorded as in place.
    trace(`prelink failed: ${(err as Error).message}`)
  }
}

export const hooks = {
  updateConfig,
  ...(prelinks ? { preResolution } : {}),
  // pnpm 11.28 warns on every install that this hook is deprecated (it keeps pnpm's own
  // parallel importer out), so it is opt-in: `CAS_NATIVE_PNPMFILE_IMPORTER=1` imports what the
  // native install leaves to pnpm natively too.
  ...(process.env.CAS_NATIVE_PNPMFILE_IMPORTER === '1' ? { importPackage: importIndexedPackage } : {}),
}

export const fetchers = [registryTarballFetcher]
