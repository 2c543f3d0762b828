/**
 * Builds and patches the side-effects cache lacks, run natively as pnpm 11.28.11's build step
 * runs them (building/during-install `buildModules`, `buildDependency`), then recorded in the
 * store as pnpm records them, so that the next install is a cache hit for pnpm and the native
 * install alike (docs/native-install.md, "Builds the cache lacks").
 *
 * Such a package is imported unbuilt with files of its own (pnpm's `clone-or-copy` for a package
 * it will build or patch), laid out with everything else, its own commands linked beside its
 * dependencies'. Then, when pnpm's scheduler would start it (`build-schedule.ts`), its patch
 * applied (pnpm's applier; every patch checked on a copy before anything runs), its
 * `preinstall`/`install`/`postinstall` run (`dependency-build.ts`;
 * a `binding.gyp` without an install script of its own builds with `node-gyp rebuild`, as under
 * pnpm), the `.bin` links made again
 * where pnpm makes them again, and what changed in its directory recorded under the key pnpm
 * computes for it (with the dependency hash when a script ran, else the patch's alone).
 *
 * Exact, or left to pnpm: every case this does not reproduce is found before any script runs
 * (settings, a package's manifest, the order, an optional package), and then the packages it
 * imported for building are removed so that pnpm imports and builds them itself. A patch that
 * fails also leaves the install to pnpm (no script ran). Once a script has run the install is
 * never handed back: a required package's build that fails ends it as pnpm's does, the script
 * having run once: no build started after it, what is laid out stays, nothing is recorded (pnpm
 * writes its state only after its build step), and the error is pnpm's.
 */
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import semver from 'semver'
import { addFilesFromDir } from '../../api/dir.js'
import { buildConcurrency, buildGraph, runScheduled } from './build-schedule.js'
import { runBuildScripts, type BuildContext } from './dependency-build.js'
import { PNPM_RELEASES, type PnpmRelease } from './pnpm-releases.js'
import { PnpmLog, reporterOf, type ReportingConfig } from '../report.js'
import type { PnpmPaths } from './script-env.js'
import { sideEffectsMiss, type CacheKeys } from './side-effects.js'
import type { LockfileObject, PlannedPackage } from './virtual-store.js'

/** The settings that decide how pnpm runs a dependency's build. */
export interface BuildSettings {
  scriptShell?: unknown
  shellEmulator?: unknown
  scriptsPrependNodePath?: unknown
  sideEffectsCacheWrite?: unknown
  unsafePerm?: unknown
  engineStrict?: unknown
  enableGlobalVirtualStore?: unknown
  extraEnv?: unknown
  extraBinPaths?: unknown
  userAgent?: unknown
  color?: unknown
}

/** The names pnpm's entry script goes by (`npm_execpath` is the one it was started with). */
const ENTRY_SCRIPTS = new Set(['pnpm', 'pn', 'pnpm.cjs', 'pnpm.mjs'])

/**
 * Where the running pnpm is, as its scripts are told (`undefined`: not known here, e.g. a
 * single-executable pnpm): its entry script as started, the `node-gyp` its bundle resolves, and
 * its `node-gyp` shims (pnpm's dist directory's, else its package's).
 */
export function pnpmPaths (entry: string | undefined = process.argv[1]): PnpmPaths | undefined {
  if (entry == null || !ENTRY_SCRIPTS.has(path.basename(entry).toLowerCase())) return undefined
  let dir: string
  try {
    dir = path.dirname(fs.realpathSync(entry))
  } catch {
    return undefined
  }
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    if (path.dirname(dir) === dir) return undefined
    dir = path.dirname(dir)
  }
  try {
    if (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name !== 'pnpm') return undefined
  } catch {
    return undefined
  }
  const dist = path.join(dir, 'dist')
  let nodeGyp: string | undefined
  try {
    nodeGyp = createRequire(path.join(dist, 'pnpm.mjs')).resolve('node-gyp/bin/node-gyp')
  } catch {}
  const shims = [path.join(dist, 'node-gyp-bin'), path.join(dir, 'node-gyp-bin')]
  return { execPath: entry, nodeGyp, nodeGypBinDir: shims.find((d) => fs.existsSync(d)) ?? shims[1] }
}

/** The `scriptShell` set (pnpm's config reader has resolved a relative path), if any. */
function scriptShellOf (config: BuildSettings): string | undefined {
  return typeof config.scriptShell === 'string' && config.scriptShell !== '' ? config.scriptShell : undefined
}

/** Whether `file` is an executable file. */
function isExecutable (file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return fs.statSync(file).isFile()
  } catch {
    return false
  }
}

/**
 * Whether `shell` is there to be run: a path, or a name found on `PATH` (a script's `PATH`
 * begins with more directories, so what is found here is found there too). pnpm fails a build
 * with its own error when it is not (ERR_PNPM_SCRIPT_SHELL_NOT_FOUND).
 */
function scriptShellFound (shell: string): boolean {
  if (path.isAbsolute(shell)) return isExecutable(shell)
  if (shell.includes('/')) return false
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => dir !== '' && isExecutable(path.join(dir, shell)))
}

/**
 * Why pnpm's build step could not be reproduced under these settings and pnpm `version`
 * (`undefined`: it can): a release whose build step is not reproduced (`runsBuilds`), a `scriptShell`
 * that is not there, Node's directory put on `PATH`, the side-effects cache not written
 * (the next install would build again), the global virtual store, an `extraEnv` or
 * `extraBinPaths` not of pnpm's kinds. (The explain command asks this, outside pnpm.)
 */
export function buildSettingsReason (config: BuildSettings, version: string): string | undefined {
  if (PNPM_RELEASES.find((r) => r.version === version)?.runsBuilds !== true) return `pnpm ${version} runs the builds itself (the native install runs them only under pnpm ${buildingReleases()}, whose build step it reproduces)`
  return settingsReason(config)
}

/** The releases whose build step the native install reproduces (`runsBuilds`: from 11.28.1, a run of consecutive releases), in words: `a`, `a and b`, or `a to c`. */
function buildingReleases (): string {
  const versions = PNPM_RELEASES.filter((r) => r.native === true && r.runsBuilds).map((r) => r.version)
  return versions.length === 1 ? versions[0] : `${versions[0]} ${versions.length === 2 ? 'and' : 'to'} ${versions.at(-1)!}`
}

/** Why these settings stop any build from being reproduced (`buildSettingsReason` but the release). */
function settingsReason (config: BuildSettings): string | undefined {
  const scriptShell = scriptShellOf(config)
  if (scriptShell != null && !scriptShellFound(scriptShell)) return `a scriptShell that is not there (${scriptShell})`
  if (config.scriptsPrependNodePath != null && config.scriptsPrependNodePath !== false) return 'scriptsPrependNodePath'
  if (config.sideEffectsCacheWrite !== true) return 'the side-effects cache is not written'
  if (config.enableGlobalVirtualStore === true) return 'the global virtual store'
  if (typeof config.unsafePerm !== 'boolean') return 'unsafePerm not known'
  const env = config.extraEnv ?? {}
  if (typeof env !== 'object' || Object.values(env).some((v) => typeof v !== 'string')) return 'extraEnv not of strings'
  const bins = config.extraBinPaths ?? []
  if (!Array.isArray(bins) || bins.some((b) => typeof b !== 'string')) return 'extraBinPaths not of strings'
  return undefined
}

/**
 * Why pnpm's build step could not be reproduced for the packages it patches on every install
 * (patched, their builds not allowed) under these settings and `release`: nothing of it runs
 * but the patch, the `.bin` links and the upload, so any release whose upload is written here
 * will do (`buildUpload`: every native one), under the settings any build needs.
 */
export function patchSettingsReason (config: BuildSettings, release: Pick<PnpmRelease, 'version' | 'buildUpload'>): string | undefined {
  if (release.buildUpload == null) return `patches applied under pnpm ${release.version}, whose side-effects upload the native install does not write (it does under ${patchesNative()})`
  return settingsReason(config)
}

/** The releases whose build step the native install reproduces for packages patched on every install, as ranges of the native ones. */
function patchesNative (): string {
  const runs = PNPM_RELEASES.filter((r) => r.native === true)
  const ranges: string[][] = []
  runs.forEach((r, i) => {
    if (r.buildUpload == null) return
    if (i > 0 && runs[i - 1].buildUpload != null) ranges.at(-1)![1] = r.version
    else ranges.push([r.version, r.version])
  })
  return ranges.map(([from, to]) => from === to ? from : `${from} to ${to}`).join(', ')
}

/** `buildSettingsReason`, or, inside pnpm, a pnpm started otherwise than by its entry script (a single executable). */
export function buildSettingsUnsupported (config: BuildSettings, version: string): string | undefined {
  return buildSettingsReason(config, version) ?? entryScriptReason()
}

/** `patchSettingsReason`, or, inside pnpm, a pnpm started otherwise than by its entry script. */
export function patchSettingsUnsupported (config: BuildSettings, release: Pick<PnpmRelease, 'version' | 'buildUpload'>): string | undefined {
  return patchSettingsReason(config, release) ?? entryScriptReason()
}

function entryScriptReason (): string | undefined {
  return pnpmPaths() == null ? 'a pnpm not started by its entry script' : undefined
}

/**
 * What every build of the install shares, as pnpm's install passes it: its environment (with
 * `FORCE_COLOR` as its output writer sets it, after the hooks ran), `npm_command`, the
 * privately hoisted packages' `.bin` before the extra bin paths; and pnpm's reporter, which
 * shows the scripts and their output from the records its lifecycle logger would write.
 */
export function buildContext (config: BuildSettings, lockfileDir: string, virtualStoreDir: string, pnpm: PnpmPaths): BuildContext {
  const processEnv = { ...process.env }
  if (config.color === 'always') processEnv.FORCE_COLOR = '1'
  else if (config.color === 'never') processEnv.FORCE_COLOR = '0'
  const log = new PnpmLog(reporterOf(config as ReportingConfig))
  return {
    pnpm,
    processEnv,
    lifecycle: (record) => log.write('debug', 'pnpm:lifecycle', record),
    cwd: process.cwd(),
    extraEnv: { ...(config.extraEnv as Record<string, string> | undefined), npm_command: 'install' },
    initCwd: lockfileDir,
    userAgent: typeof config.userAgent === 'string' ? config.userAgent : undefined,
    unsafePerm: config.unsafePerm as boolean,
    extraBinPaths: [path.join(virtualStoreDir, 'node_modules', '.bin'), ...(config.extraBinPaths as string[] | undefined ?? [])],
    // pnpm's `useShellEmulator`: the emulator, unless a `scriptShell` is set.
    scriptShell: scriptShellOf(config),
    shellEmulator: config.shellEmulator === true && scriptShellOf(config) == null,
  }
}

/** A package manifest as pnpm's reader gives the fields a build reads, or why this does not read it as pnpm would. */
export function readBuildManifest (dir: string): (Record<string, unknown> & { scripts: Record<string, string> }) | string {
  let manifest: Record<string, unknown>
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
  } catch (err) {
    return `its package.json cannot be read (${(err as Error).message})`
  }
  const { name, version, scripts = {} } = manifest as { name?: unknown, version?: unknown, scripts?: unknown }
  // pnpm's reader (normalize-package-data) trims the name, cleans the version, drops scripts that are not strings.
  if (typeof name !== 'string' || name.trim() !== name || name === '') return 'a package name its reader would change'
  if (typeof version !== 'string' || semver.clean(version, true) !== version) return 'a version its reader would change'
  if (scripts == null || typeof scripts !== 'object' || Array.isArray(scripts) || Object.values(scripts).some((s) => typeof s !== 'string')) return 'scripts its reader would change'
  // pnpm's build step gives a manifest without scripts an empty set (scripts are not in a script's environment).
  manifest.scripts ??= {}
  // A bin given as a string is a command named after the package (without its scope).
  if (typeof manifest.bin === 'string') manifest.bin = { [name.replace(/^@[^/]+\//, '')]: manifest.bin }
  return manifest as Record<string, unknown> & { scripts: Record<string, string> }
}

/**
 * Whether a patched package requires a build (pnpm's `dirRequiresBuild`): an install script, a
 * `binding.gyp` it does not opt out of (`gypfile: false`), a `.hooks` directory.
 */
function requiresBuild (dir: string, manifest: { scripts: Record<string, string>, gypfile?: unknown }): boolean {
  const isDirectory = (file: string): boolean => fs.statSync(path.join(dir, file), { throwIfNoEntry: false })?.isDirectory() === true
  return ['preinstall', 'install', 'postinstall'].some((s) => Boolean(manifest.scripts[s])) ||
    (manifest.gypfile !== false && fs.existsSync(path.join(dir, 'binding.gyp'))) || isDirectory('.hooks')
}

/** A package the cache lacks the build or patch of. */
export interface MissedBuild {
  depPath: string
  dir: string
  filesIndexFile: string
  keys: CacheKeys
  /** Its patch file (absolute), if pnpm patches it. */
  patchFile?: string
  /** Its row requires a build (its build is allowed: it runs). */
  builds: boolean
  /** Its row requires a build pnpm does not allow (a package patched on every install): recorded under the patch's key before 11.27.0 only. */
  pending?: boolean
  optional: boolean
  hasBin: boolean
}

export interface MissedBuildsOptions {
  ctx: BuildContext
  storeDir: string
  /** Makes the `.bin` links again, as pnpm does after a build that can change them. */
  relinkBins: () => void
  engineStrict: boolean
  /** Logs a record as pnpm's logger `name` does at `level` (its build step warns when a result is not recorded, and records an optional package it skips). */
  log: (level: 'debug' | 'warn', name: string, fields: Record<string, unknown>) => void
  /** The lockfile's directory (the records' prefix). */
  lockfileDir: string
  /** Where pnpm looks for links to an optional package whose build failed: the projects' `node_modules` and the private hoisting's. */
  modulesDirs: string[]
  /** Where the directories of the optional packages skipped are added (`relinkBins` leaves them out). */
  removed: Set<string>
  /** How the running release records a result, whether it records a denied patched package's, and whether it links the commands again after a build. */
  release: Pick<PnpmRelease, 'buildUpload' | 'uploadsDeniedPatched' | 'relinksBuilt'>
}

/**
 * Removes the packages imported for building, `package.json` (pnpm's completeness marker) first,
 * so that pnpm imports and builds them itself.
 */
function removeForPnpm (missed: MissedBuild[]): void {
  for (const m of missed) {
    fs.rmSync(path.join(m.dir, 'package.json'), { force: true })
    fs.rmSync(m.dir, { recursive: true, force: true })
  }
}

/** Why the install is left to pnpm, for a package whose build or patch the cache lacks. */
function missWhy (m: MissedBuild, why: string): string {
  return sideEffectsMiss(m.depPath, [m.builds ? m.keys.key : m.keys.patched], why)
}

/** A package manifest as `readBuildManifest` gives it. */
type BuildManifest = Record<string, unknown> & { scripts: Record<string, string> }

/** Its manifest, or why a missed package is one this does not build as pnpm would. */
function readSupported (m: MissedBuild, opts: MissedBuildsOptions): BuildManifest | string {
  if (m.patchFile != null && opts.engineStrict) return 'patched under engineStrict (pnpm checks the patched engines)'
  return readBuildManifest(m.dir)
}

type PatchApplier = typeof import('@pnpm/patching.apply-patch').applyPatchToDir

/**
 * What a miss needs loaded before anything runs: pnpm's patch applier when a patch is applied,
 * the shell emulator when a script runs under it; or why not (a missing package), with the
 * package that needs it. Both are in the plugin's bundle; `@cas/native` does not install them
 * (a dependency each of the plugin's build only), so its own pnpmfile leaves such a miss to pnpm.
 */
async function loadBuildModules (missed: MissedBuild[], ctx: BuildContext): Promise<{ applyPatch?: PatchApplier } | { needs: MissedBuild, why: string }> {
  const loaded: { applyPatch?: PatchApplier } = {}
  const patched = missed.find((m) => m.patchFile != null)
  const scripted = ctx.shellEmulator === true ? missed.find((m) => m.builds) : undefined
  let needs = patched
  try {
    if (patched != null) loaded.applyPatch = (await import('@pnpm/patching.apply-patch')).applyPatchToDir
    needs = scripted
    if (scripted != null) await import('@yarnpkg/shell')
  } catch (err) {
    return { needs: needs!, why: `what pnpm's build step needs here is not installed (${(err as Error).message.split('\n')[0]})` }
  }
  return loaded
}

/**
 * Checks each patch before anything runs, on a copy of its package: pnpm applies a patch only
 * when its package's turn comes in the build step (after a failure, those whose turn never
 * came stay unpatched), but one that fails, or makes its package require a build where none
 * was allowed (pnpm reads the patched package, and asks allowBuilds then), must leave the
 * install to pnpm with nothing run. Keeps each package's manifest as its build reads it once
 * patched, or says why not.
 */
function checkPatches (missed: MissedBuild[], manifests: Map<MissedBuild, BuildManifest>, applyPatchToDir: PatchApplier | undefined): string | undefined {
  for (const m of missed) {
    if (m.patchFile == null) continue
    const trial = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-patch-check-'))
    try {
      fs.cpSync(m.dir, trial, { recursive: true, verbatimSymlinks: true })
      try {
        applyPatchToDir!({ patchedDir: trial, patchFilePath: m.patchFile })
      } catch (err) {
        return missWhy(m, `its patch failed (${(err as Error).message.split(trial).join(m.dir)})`)
      }
      const manifest = readBuildManifest(trial)
      if (typeof manifest === 'string') return missWhy(m, `patched, ${manifest}`)
      if (!m.builds && m.pending !== true && requiresBuild(trial, manifest)) return missWhy(m, 'its patch makes it require a build')
      manifests.set(m, manifest)
    } finally {
      fs.rmSync(trial, { recursive: true, force: true })
    }
  }
  return undefined
}

/** A required package's build that failed: the install ends with its error, as pnpm's does. */
export interface BuildFailed { failed: Error, depPath: string }

/** When the builds run: pnpm's build graph (see `build-schedule.ts`) and how many at a time. */
export interface BuildSchedule {
  graph: Map<string, string[]>
  concurrency: number
}

/**
 * Builds one missed package as pnpm's build step does once its turn comes: its scripts, its
 * `.bin` links again where pnpm makes them again, and what changed recorded in the store under
 * pnpm's key. A failed upload only warns, as pnpm's does. Throws what failed.
 */
async function buildOne (m: MissedBuild, manifest: BuildManifest, opts: MissedBuildsOptions, applyPatchToDir: PatchApplier | undefined): Promise<void> {
  // Its patch first, as pnpm applies it when the package's turn comes (checked before anything ran).
  if (m.patchFile != null) applyPatchToDir!({ patchedDir: m.dir, patchFilePath: m.patchFile })
  const ran = m.builds && await runBuildScripts(m.dir, manifest, m.optional ? { ...opts.ctx, optional: true } : opts.ctx)
  if (opts.release.relinksBuilt && (m.patchFile != null || (ran && m.hasBin))) opts.relinkBins()
  // From 11.27.0 pnpm records nothing for a build it leaves pending (its row requires one it does
  // not run); before, it records the patched files under the patch's key.
  if ((m.patchFile == null && !ran) || (m.pending === true && !opts.release.uploadsDeniedPatched)) return
  try {
    await addFilesFromDir({
      storeDir: opts.storeDir,
      dir: m.dir,
      filesIndexFile: m.filesIndexFile,
      sideEffectsCacheKey: ran ? m.keys.key : m.keys.patched!,
      compat: opts.release.buildUpload!,
    })
  } catch (err) {
    opts.log('warn', 'pnpm', { message: `An error occurred while uploading ${m.dir}`, error: { message: (err as Error).message, stack: (err as Error).stack }, prefix: opts.lockfileDir })
  }
}

/** The symlinks directly in `modulesDirs` (or in a scope there) that lead to `target`, as pnpm finds them. */
function linksTo (target: string, modulesDirs: string[]): string[] {
  let real: string
  try {
    real = fs.realpathSync(target)
  } catch {
    return []
  }
  const entries = (dir: string): fs.Dirent[] => {
    try {
      return fs.readdirSync(dir, { withFileTypes: true })
    } catch {
      return []
    }
  }
  const links = modulesDirs.flatMap((modulesDir) => entries(modulesDir).flatMap((entry) => {
    const at = path.join(modulesDir, entry.name)
    if (entry.name.startsWith('@') && entry.isDirectory()) return entries(at).filter((e) => e.isSymbolicLink()).map((e) => path.join(at, e.name))
    return entry.isSymbolicLink() ? [at] : []
  }))
  return links.filter((link) => {
    try {
      return fs.realpathSync(link) === real
    } catch {
      return false
    }
  })
}

/**
 * An optional package whose build failed, skipped as pnpm's build step skips it (from 11.28.4:
 * `unlinksFailedOptional`, the releases this runs under): the links to it in the projects' and
 * the private hoisting's `node_modules` and its directory removed (links to it from other
 * packages, and commands already linked to it, stay, as with pnpm), the failure recorded (pnpm's
 * reporter does not show it); the install goes on.
 */
function skipOptional (m: MissedBuild, manifest: BuildManifest, err: Error, opts: MissedBuildsOptions): void {
  for (const link of linksTo(m.dir, opts.modulesDirs)) fs.unlinkSync(link)
  fs.rmSync(m.dir, { recursive: true, force: true })
  opts.removed.add(m.dir)
  opts.log('debug', 'pnpm:skipped-optional-dependency', {
    details: String(err),
    package: { id: m.dir, name: manifest.name, version: manifest.version },
    prefix: opts.lockfileDir,
    reason: 'build_failure',
  })
}

/** How the builds of `buildMissed` ended: the optional packages it skipped, their builds having failed. */
export interface BuildsDone { skippedOptional: string[] }

/**
 * Builds and patches `missed` as pnpm's build step does, when `schedule` says, and records their
 * side effects; or says why the install is left to pnpm, with those packages removed again, and
 * then nothing has run: every check is made before the first script. Once one has run, the
 * install is never handed back: a required package's build that fails (a script, or anything
 * around it) ends it with its error, everything staying as it is, as after pnpm's build step
 * failed, and no build is started after it; an optional one's is skipped (`skipOptional`).
 */
export async function buildMissed (missed: MissedBuild[], schedule: BuildSchedule, opts: MissedBuildsOptions): Promise<string | BuildFailed | BuildsDone> {
  const stop = (why: string): string => {
    removeForPnpm(missed)
    return why
  }
  const manifests = new Map<MissedBuild, BuildManifest>()
  for (const m of missed) {
    const manifest = readSupported(m, opts)
    if (typeof manifest === 'string') return stop(missWhy(m, manifest))
    manifests.set(m, manifest)
  }
  const loaded = await loadBuildModules(missed, opts.ctx)
  if ('why' in loaded) return stop(missWhy(loaded.needs, loaded.why))
  const patchFailed = checkPatches(missed, manifests, loaded.applyPatch)
  if (patchFailed != null) return stop(patchFailed)
  const byDir = new Map(missed.map((m) => [m.dir, m]))
  let failed: BuildFailed | undefined
  const skippedOptional: string[] = []
  await runScheduled(schedule.graph, schedule.concurrency, async (dir) => {
    const m = byDir.get(dir)
    if (m == null) return true
    try {
      await buildOne(m, manifests.get(m)!, opts, loaded.applyPatch)
      return true
    } catch (err) {
      if (!m.optional) {
        failed ??= { failed: err as Error, depPath: m.depPath }
        return false
      }
      try {
        skipOptional(m, manifests.get(m)!, err as Error, opts)
      } catch (removeErr) {
        // pnpm's install fails when it cannot remove what it skips.
        failed ??= { failed: removeErr as Error, depPath: m.depPath }
        return false
      }
      skippedOptional.push(m.depPath)
      return true
    }
  })
  return failed ?? { skippedOptional }
}

/** What `runMissedBuilds` reads of the install's plan. */
export interface MissedPlan {
  rootDir: string
  storeDir: string
  virtualStoreDir: string
  lockfile: LockfileObject
  planned: PlannedPackage[]
  cacheKeys: Map<string, CacheKeys>
  /** The running release (its upload is written here: see `patchSettingsReason`). */
  release: Pick<PnpmRelease, 'version' | 'buildUpload' | 'uploadsDeniedPatched' | 'relinksBuilt' | 'unlinksFailedOptional'>
}

/** The patch file pnpm applies to `name@version` (absolute), if any: the exact version's, else the name's. */
function patchFileOf (patches: Record<string, string> | undefined, name: string, version: string, rootDir: string): string | undefined {
  const file = patches?.[`${name}@${version}`] ?? patches?.[name]
  return file == null ? undefined : path.resolve(rootDir, file)
}

/**
 * A missed package with commands that another package of pnpm's build graph (`marked`: those it
 * takes through its build step) depends on, and that one's directory; else `undefined`. Before
 * 11.28.10 pnpm links no command again after a build, but each package's turn links its
 * dependencies' commands into its `.bin` then, after their builds: a shim made for a file then
 * there, the target made executable again. The native install links them all before the builds.
 */
export function linkedAtTurn (missed: MissedBuild[], marked: Set<string>, children: Map<string, string[]>): { m: MissedBuild, dependent: string } | undefined {
  const changing = new Map(missed.filter((m) => m.hasBin && (m.builds || m.patchFile != null)).map((m) => [m.dir, m]))
  if (changing.size === 0) return undefined
  for (const dir of marked) {
    const m = children.get(dir)?.map((child) => changing.get(child)).find((c) => c != null && c.dir !== dir)
    if (m != null) return { m, dependent: dir }
  }
  return undefined
}

/**
 * A missed optional package whose build runs, under a release whose build step leaves the links
 * to it in the projects' and the private hoisting's `node_modules` when that build fails (before
 * 11.28.4: `unlinksFailedOptional`); else `undefined`. pnpm's install over such a layout finds
 * those links leading nowhere and imports and builds the package again: after the native layout
 * pnpm's own install would run a failed build a second time, where stock runs it once. Only a
 * script tells whether it fails, so any such build leaves the install to pnpm.
 */
export function failsWithLinksLeft (missed: MissedBuild[], release: Pick<PnpmRelease, 'unlinksFailedOptional'>): MissedBuild | undefined {
  return release.unlinksFailedOptional ? undefined : missed.find((m) => m.optional && m.builds)
}

/** Which packages `runMissedBuilds` builds, and what it needs to know of the rest. */
export interface MissedBuildsInput {
  /** The planned packages (indexes) imported unbuilt, whose build or patch the cache lacks. */
  at: number[]
  /** Whether each one's row requires a build (which runs unless it is patched on every install: then pnpm denies it). */
  rowBuilds: boolean[]
  /** The other planned packages pnpm takes through its build step: denied builds, builds from its cache (their directories). */
  throughBuildStep: Set<string>
  /** The projects' direct dependencies (directories), the projects in the install's order. */
  roots: string[]
  /** The projects' `node_modules`. */
  modulesDirs: string[]
  /** Where the directories of the optional packages skipped are added (the caller's `.bin` linking leaves them out). */
  removed: Set<string>
}

/**
 * Builds the planned packages `input.at` as pnpm's build step would, and records their side
 * effects; or why the install is left to pnpm (those packages removed again); or the error of a
 * build that failed.
 */
export async function runMissedBuilds (plan: MissedPlan, config: BuildSettings & { patchedDependencies?: Record<string, string>, childConcurrency?: unknown }, input: MissedBuildsInput, relinkBins: () => void): Promise<string | BuildFailed | BuildsDone> {
  const missed: MissedBuild[] = input.at.map((i, k) => {
    const p = plan.planned[i]
    const snapshot = plan.lockfile.packages![p.depPath] as { optional?: boolean, hasBin?: boolean }
    const keys = plan.cacheKeys.get(p.depPath)!
    // A package patched on every install: its build, if its row requires one, is not allowed.
    const eachTime = keys.eachTime === true
    return {
      depPath: p.depPath,
      dir: p.targetDir,
      filesIndexFile: p.filesIndexFile,
      keys,
      patchFile: patchFileOf(config.patchedDependencies, p.name, p.version, plan.rootDir),
      builds: input.rowBuilds[k] && !eachTime,
      pending: input.rowBuilds[k] && eachTime,
      optional: snapshot.optional === true,
      hasBin: snapshot.hasBin === true,
    }
  })
  const concurrency = buildConcurrency(config.childConcurrency)
  if (concurrency == null) {
    removeForPnpm(missed)
    return missWhy(missed[0], `childConcurrency ${String(config.childConcurrency)} (pnpm counts the processors it may use)`)
  }
  const children = new Map(plan.planned.map((p) => [p.targetDir, Object.values(p.children ?? {})]))
  // pnpm's graph holds what builds or is patched: each with a build in its row or a patch, built or not.
  const patched = plan.planned.filter((p) => patchFileOf(config.patchedDependencies, p.name, p.version, plan.rootDir) != null)
  const marked = new Set([...input.throughBuildStep, ...missed.map((m) => m.dir), ...patched.map((p) => p.targetDir)])
  const graph = buildGraph(input.roots, (dir) => children.get(dir), (dir) => marked.has(dir))
  const unreached = missed.find((m) => !graph.has(m.dir))
  if (unreached != null) {
    removeForPnpm(missed)
    return missWhy(unreached, 'pnpm\'s build step does not reach it from the projects')
  }
  const optional = failsWithLinksLeft(missed, plan.release)
  if (optional != null) {
    removeForPnpm(missed)
    return missWhy(optional, `an optional package, whose failed build pnpm ${plan.release.version} skips leaving the links to it (its own install after the native layout would build it again)`)
  }
  const relinked = plan.release.relinksBuilt ? undefined : linkedAtTurn(missed, marked, children)
  if (relinked != null) {
    removeForPnpm(missed)
    return missWhy(relinked.m, `its commands, which its ${relinked.m.builds ? 'build' : 'patch'} may change, this pnpm links again into the .bin of ${relinked.dependent} when its turn comes in its build step (keeping the shims it finds there, unless made for a missing file)`)
  }
  const ctx = buildContext(config, plan.rootDir, plan.virtualStoreDir, pnpmPaths()!)
  const log = new PnpmLog(reporterOf(config as ReportingConfig))
  return await buildMissed(missed, { graph, concurrency }, {
    ctx,
    storeDir: plan.storeDir,
    relinkBins,
    engineStrict: config.engineStrict === true,
    log: (level, name, fields) => log.write(level, name, fields),
    lockfileDir: plan.rootDir,
    modulesDirs: [...input.modulesDirs, path.join(plan.virtualStoreDir, 'node_modules')],
    removed: input.removed,
    release: plan.release,
  })
}
