/**
 * The `.bin` directories of pnpm 11.28.11's isolated layout, for the native install
 * (docs/native-install.md links pnpm's source for each rule):
 *
 * - each package's `node_modules/.bin` (beside its dependencies) gets the commands of its
 *   dependencies that have bins, not its own (unless pnpm takes it through its build step), then
 *   those of its bundled dependencies; a package with a dependency on a project of the
 *   workspace gets those of every dependency, through their links beside it;
 * - each importer's `node_modules/.bin` gets the commands of its dependencies (a linked
 *   workspace project's too), the root's also those of the publicly hoisted packages when there
 *   are any (its own dependencies winning a name), then those of the peers its dependencies got
 *   installed for them, where the name is still free. A command's target goes through the
 *   package's link in the importer's `node_modules`, except under `ignoreScripts` (for the root:
 *   without public hoisting): pnpm writes these shims a second time, through the links, only
 *   when it runs the projects' lifecycle stage;
 * - `node_modules/.pnpm/node_modules/.bin` gets the commands of the privately hoisted packages.
 *
 * Two commands of one name in one directory: the package named like the command wins, then
 * the package whose name sorts last (by `localeCompare`), then the higher version. Targets that are not executable
 * are made so, as pnpm makes them, but on a copy of their own: pnpm changes the mode through the
 * hard link into the store. Nothing here writes through a file that is there already (a package
 * may ship a file where a shim goes, and it is a hard link into the store too).
 */
import fs from 'node:fs'
import path from 'node:path'
import { chmodOwnCopy, temporaryIn, writeAtomically } from './atomic-write.js'
import { cmdShim9ShShim, isOwnShimWriter, runtimeOf, shShim, shimNodePath, UnsupportedShim, type Runtime, type ShimQuoting, type ShimWriter } from './bin-shim.js'
import type { ShimBase, ShimHelpers } from './sh-shim-prelude.js'
import type { Hoisted } from './hoist.js'
import { compareVersions } from './semver-range.js'
import { refToDepPath, type LockfileObject, type PlannedPackage } from './virtual-store.js'

/** Which shims a release's build step writes with a `NODE_PATH` (`BinLinkOptions.buildStepNodePath`). */
export type BuildStepNodePath = 'all' | 'dependencies'

/** pnpm's bin linker reads a shim back, to keep it, only under 64 KiB (from 11.28.1). */
const KEPT_SHIM_BYTES = 64 * 1024

/** An importer, as its `.bin` is made: its `node_modules` and its dependencies (alias → package directory). */
export interface BinImporter {
  id: string
  modulesDir: string
  direct: Record<string, string>
}

export interface BinLinkOptions {
  /** Every importer, the root (`.`) first. */
  importers: BinImporter[]
  virtualStoreDir: string
  hoisted: Hoisted
  publicHoistPattern: string[]
  ignoreScripts: boolean
  /** `extendNodePath` and a non-empty `hoistPattern`: shims add the private hoisting dir to `NODE_PATH`. */
  extendsNodePath: boolean
  autoInstallPeers: boolean
  /** Whether the release links the commands of the auto-installed peers too (from 11.28.1; so when not said). */
  peerBins?: boolean
  /**
   * Packages pnpm takes through its build step (a build it then does not run, told not to): it
   * links their own commands too into their `node_modules/.bin`, beside their dependencies'.
   */
  throughBuildStep: Set<string>
  /** How the running pnpm release quotes paths in its shims (the newest's when not said). */
  shimQuoting?: ShimQuoting
  /** How its shims' prelude runs the system helpers (the newest's when not said). */
  shimHelpers?: ShimHelpers
  /** Whose shims it writes (pnpm's own when not said). */
  shimWriter?: ShimWriter
  /** Where its own shims take their target from (the newest's when not said). */
  shimBase?: ShimBase
  /**
   * Which shims the release's build step writes with a `NODE_PATH` for a package it takes
   * through it: all (from 11.28.10: so when not said); before, it gives none, but keeps the shims
   * of its dependencies the first link wrote (with one) where they are no larger than it reads
   * back (`keptShimBytes`), and writes its own commands after them. A name in both is left to pnpm.
   */
  buildStepNodePath?: BuildStepNodePath
  /**
   * The size from which the release's bin linker no longer reads a shim back to keep it
   * (`CMD_SHIM_MAX_SIZE`: 4 KiB to 11.28.0, whose own shims with a `NODE_PATH` reach it; 64 KiB
   * from 11.28.1, so when not said): a shim that large it writes again.
   */
  keptShimBytes?: number
  /** Packages removed since they were laid out (optional ones whose build failed): their own `.bin` is not made again. */
  removed?: Set<string>
  /** Takes pnpm's warnings, in its words: a command whose file is not there, which `@zkochan/cmd-shim` (and 11.27.1's own writer) writes no shim for. */
  warn?: (message: string) => void
  /** Takes those of pnpm's second link of the projects' commands, its lifecycle stage's, which come after its summary (`warn` when not given). */
  warnAfterSummary?: (message: string) => void
}

interface Manifest {
  name?: string
  version?: string
  bin?: string | Record<string, string>
  directories?: { bin?: unknown }
}

export interface Command {
  name: string
  /** The target, through the directory the package was found at. */
  target: string
  pkgName: string
  pkgVersion: string
  /** The package's directory, as it was found. */
  pkgDir: string
  direct?: boolean
}

/** How much of a bin target is read for its shebang line. */
const HEAD_BYTES = 4096
/**
 * Text whose first line (after leading whitespace) has more text after it: then that line is
 * the same in the whole file, which `runtimeOf` reads trimmed.
 */
const FIRST_LINE_FOLLOWED = /^\s*\S[^\n]*\n\s*\S/

/** Commands a package may own beyond its own name (pnpm's list). */
const OWNERS: Record<string, string[]> = { npx: ['npm'], pn: ['pnpm', '@pnpm/exe'], pnpm: ['@pnpm/exe'], pnpx: ['pnpm', '@pnpm/exe'], pnx: ['pnpm', '@pnpm/exe'] }
const owns = (cmd: Command): boolean => cmd.name === cmd.pkgName || OWNERS[cmd.name]?.includes(cmd.pkgName) === true

function readPackageManifest (dir: string): Manifest | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest
  } catch {
    return undefined
  }
}

/** A bin path inside the package, as pnpm normalises it (`undefined`: one pnpm refuses). */
function binPath (pkgDir: string, relative: string): string | undefined {
  const normalized = relative.replaceAll('\\', '/')
  if (path.win32.parse(normalized).root !== '') return undefined
  const inside = path.posix.join('/', normalized).slice(1)
  if (path.win32.parse(inside).root !== '') return undefined
  const full = path.join(pkgDir, inside)
  return full.startsWith(pkgDir + path.sep) ? full : undefined
}

/**
 * The files pnpm's glob (`**`, files only, symlinks not followed) finds below `dir`, relative to
 * it: no name starting with a dot, in the path or the file's own; none when `dir` does not exist.
 */
export function filesBelow (dir: string): string[] {
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true, recursive: true })
  } catch {
    return []
  }
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .filter((file) => !file.split(path.sep).some((segment) => segment.startsWith('.'))).sort()
}

/**
 * The commands of `directories.bin` (`setting`) of the package at `dir`: every file below it,
 * named by its base name, when it is the package's directory or one inside it.
 */
function commandsOfBinDir (dir: string, setting: unknown, pkgName: string, pkgVersion: string): Command[] {
  if (setting == null || setting === '' || setting === false || setting === 0) return []
  // pnpm joins it as a path: anything else fails its install.
  if (typeof setting !== 'string') throw new UnsupportedShim(`${pkgName}'s directories.bin is not a string`)
  const binDir = path.join(dir, setting)
  if (binDir !== dir && !binDir.startsWith(dir + path.sep)) return []
  const files = filesBelow(binDir)
  const names = files.map((file) => path.basename(file))
  // pnpm keeps the first it lists, in the order the directories list their files.
  if (new Set(names).size !== names.length) throw new UnsupportedShim(`two files of one name in ${pkgName}'s directories.bin`)
  return files.map((file, i) => ({ name: names[i], target: path.join(binDir, file), pkgName, pkgVersion, pkgDir: dir }))
}

/** The commands a package at `dir` declares: its `bin` (when truthy, as pnpm tests it), or else `directories.bin`. */
function commandsOf (dir: string, manifest: Manifest): Command[] {
  const pkgName = manifest.name ?? ''
  const pkgVersion = manifest.version ?? ''
  if (manifest.bin == null || manifest.bin === '' || (manifest.bin as unknown) === false || (manifest.bin as unknown) === 0) {
    return commandsOfBinDir(dir, manifest.directories?.bin, pkgName, pkgVersion)
  }
  const entries = typeof manifest.bin === 'string' ? [[pkgName, manifest.bin]] : Object.entries(manifest.bin)
  const commands: Command[] = []
  for (const [command, relative] of entries) {
    const name = command.startsWith('@') ? command.slice(command.indexOf('/') + 1) : command
    if (name === '' || name === '.' || name === '..' || (name !== encodeURIComponent(name) && name !== '$')) continue
    if (typeof relative !== 'string') continue
    const target = binPath(dir, relative)
    if (target != null) commands.push({ name, target, pkgName, pkgVersion, pkgDir: dir })
  }
  return commands
}

/** One command per name: pnpm's choice between packages that both declare it. */
export function resolveConflicts (commands: Command[]): Command[] {
  const byName = new Map<string, Command>()
  for (const cmd of commands) {
    const chosen = byName.get(cmd.name)
    if (chosen == null) {
      byName.set(cmd.name, cmd)
      continue
    }
    const order = owns(chosen) !== owns(cmd)
      ? (owns(chosen) ? 1 : -1)
      : chosen.pkgName !== cmd.pkgName ? chosen.pkgName.localeCompare(cmd.pkgName) : compareVersions(chosen.pkgVersion, cmd.pkgVersion)
    if (order < 0) byName.set(cmd.name, cmd)
  }
  return [...byName.values()]
}

/**
 * What the `.bin` directories of one install share: a package with bins is the dependency of
 * many, so its manifest, the real paths and its targets' modes are looked at once.
 */
class BinWriter {
  /** By the package's real directory (it is found through several links). */
  private readonly manifests = new Map<string, Manifest | undefined>()
  private readonly realPaths = new Map<string, string>()
  /** By the target's real path: what it runs with, read once, however many `.bin` dirs link it. */
  private readonly targets = new Map<string, Runtime>()

  /**
   * @param extraNodePath what shims add to `NODE_PATH`
   * @param tempDir where a target is copied before it replaces the target (the virtual store:
   *   the same filesystem, and a place the next install looks for leftovers)
   * @param form the release's shims (`BinLinkOptions`), and where its warnings go
   * @param dry only checks that every shim can be written as pnpm writes it (throws
   *   `UnsupportedShim` where not): nothing is written, no target made runnable, nothing
   *   warned unless `dry` is `'warns'` (pnpm's warnings of a link it writes again later)
   */
  constructor (private readonly extraNodePath: string[], private readonly tempDir: string, private readonly form: Pick<BinLinkOptions, 'shimQuoting' | 'shimHelpers' | 'shimWriter' | 'shimBase' | 'keptShimBytes' | 'warn'> = {}, private readonly dry: boolean | 'warns' = false) {}

  realpath (file: string): string {
    let real = this.realPaths.get(file)
    if (real == null) {
      real = fs.realpathSync.native(file)
      this.realPaths.set(file, real)
    }
    return real
  }

  /** `file`'s real path, or `file` itself where it does not exist (pnpm's rule for a missing target's directory). */
  realpathIfExists (file: string): string {
    try {
      return this.realpath(file)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return file
      throw err
    }
  }

  /** The commands of the packages at `dirs` (those with a manifest: one gone has none, as pnpm reads it). */
  commandsAt (dirs: string[]): Command[] {
    return dirs.flatMap((dir) => {
      const real = this.realpathIfExists(dir)
      if (!this.manifests.has(real)) this.manifests.set(real, readPackageManifest(real))
      const manifest = this.manifests.get(real)
      return manifest == null ? [] : commandsOf(dir, manifest)
    })
  }

  /**
   * Writes the shims of `commands` into `binsDir` (one per name, pnpm's choice), with a
   * `NODE_PATH` unless told not, or (`'where kept'`) where the shim with one is smaller than the
   * release reads back (a build step keeping the first link's); the names written.
   */
  write (binsDir: string, commands: Command[], withNodePath: boolean | 'where kept' = true): string[] {
    if (commands.length === 0) return []
    const chosen = resolveConflicts(commands)
    if (!this.dry) fs.mkdirSync(binsDir, { recursive: true })
    const { shimQuoting, shimHelpers, shimWriter = 'pnpm', shimBase = 'basedir_abs', keptShimBytes = KEPT_SHIM_BYTES, warn } = this.form
    // (Checking, the directory may not be there yet: where it will be. A shim taking its target
    // from `$basedir` has it relative to the directory as named.)
    const shimDir = isOwnShimWriter(shimWriter) && shimBase === 'basedir'
      ? binsDir
      : this.dry ? path.join(this.realpath(path.dirname(binsDir)), path.basename(binsDir)) : this.realpath(binsDir)
    const written: string[] = []
    for (const cmd of chosen) {
      // pnpm links a package's `node` command as a symlink, not a shim.
      if (cmd.name === 'node') throw new UnsupportedShim(`a command named node (${cmd.pkgName})`)
      const file = path.join(binsDir, cmd.name)
      const nodePath = withNodePath !== false && this.extraNodePath.length > 0 ? shimNodePath(this.realpathIfExists(path.dirname(cmd.target)), this.extraNodePath) : undefined
      const runtime = this.runtime(cmd, binsDir)
      if (runtime.missing != null && shimWriter !== 'pnpm') {
        // `@zkochan/cmd-shim` and 11.27.1's own writer read the target first: pnpm warns, and writes no shim.
        if (this.dry !== true) warn?.(`Failed to create bin at ${file}. ${runtime.missing}`)
        continue
      }
      written.push(cmd.name)
      const shimWith = (paths: string[] | undefined): string => isOwnShimWriter(shimWriter) ? shShim(cmd.target, shimDir, runtime, paths, shimQuoting, shimHelpers, shimBase, shimWriter) : cmdShim9ShShim(cmd.target, shimDir, runtime, paths, shimWriter)
      let shim = shimWith(nodePath)
      if (withNodePath === 'where kept' && nodePath != null && Buffer.byteLength(shim) >= keptShimBytes) shim = shimWith(undefined)
      if (!this.dry) writeShim(file, shim)
    }
    return written
  }

  /**
   * What `target` runs with, read from it the first time it is linked, when it is also made
   * runnable as pnpm makes it: executable bits, and a shebang line without `\r`. Only its first
   * bytes are read, unless they do not hold its whole first line (or the line must be fixed).
   */
  private runtime ({ target, pkgDir }: Command, binsDir: string): Runtime {
    const real = this.realpathIfExists(target)
    let runtime = this.targets.get(real)
    if (runtime != null) return runtime
    let head: Buffer
    let mode: number
    let text: string
    try {
      const fd = fs.openSync(real, 'r')
      try {
        const stat = fs.fstatSync(fd)
        mode = stat.mode & 0o777
        head = Buffer.allocUnsafe(Math.min(HEAD_BYTES, stat.size))
        head = head.subarray(0, fs.readSync(fd, head, 0, head.length, 0))
        text = head.toString('utf8')
        if (head.length < stat.size && !FIRST_LINE_FOLLOWED.test(text)) text = fs.readFileSync(real, 'utf8')
      } finally {
        fs.closeSync(fd)
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      // A target not there yet (a workspace project's build makes it): pnpm's shim runs it by
      // its extension; a package's own bins pnpm then leaves out (left to pnpm here).
      // (Only warning, as pnpm's first link of a project's commands: its own too.)
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || (this.dry !== 'warns' && path.join(pkgDir, 'node_modules', '.bin') === binsDir)) {
        throw new UnsupportedShim(`${target}: ${(err as Error).message}`)
      }
      runtime = { ...runtimeOf(target, ''), missing: (err as Error).message }
      this.targets.set(real, runtime)
      return runtime
    }
    runtime = runtimeOf(target, text)
    this.targets.set(real, runtime)
    // pnpm looks for a Windows shebang in the first 2 KiB.
    const windowsShebang = head[0] === 0x23 && head[1] === 0x21 && /^#![^\n]+\r\n/.test(head.subarray(0, 2048).toString())
    if (((mode & 0o111) === 0o111 && !windowsShebang) || this.dry) return runtime
    if (!path.dirname(real).split(path.sep).includes('node_modules')) return runtime
    const temp = temporaryIn(this.tempDir, BIN_TARGET_TEMP)
    if (windowsShebang) writeAtomically(real, fs.readFileSync(real, 'utf8').replace(/^(#![^\n]+)\r\n/, '$1\n'), mode | 0o111, temp)
    else chmodOwnCopy(real, mode | 0o111, temp)
    return runtime
  }
}

/** The name of the temporary a target is remade at (in the virtual store). */
export const BIN_TARGET_TEMP = '.cas-native-bin'

/**
 * Writes a shim at `file` as a new file, mode 0755, as pnpm does: whatever a package put there is
 * replaced (pnpm warns and goes on where that is a directory: left to it). A shim made again
 * replaces the old one at once (a rename): builds running meanwhile never miss a command.
 */
function writeShim (file: string, text: string): void {
  // Created first: on a fresh layout nothing is there, and a failed write costs an error object.
  try {
    fs.writeFileSync(file, text, { flag: 'wx' })
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    try {
      if (fs.lstatSync(file).isDirectory()) throw Object.assign(new Error('a directory'), { code: 'EISDIR' })
      writeAtomically(file, text, 0o755)
    } catch (replaceErr) {
      const code = (replaceErr as NodeJS.ErrnoException).code
      throw new UnsupportedShim(`${file}: ${code ?? String(replaceErr)}`)
    }
    return
  }
  fs.chmodSync(file, 0o755)
}

/** The packages in a `node_modules` directory, scopes descended into, dot entries and files left out. */
function packagesIn (modulesDir: string): string[] {
  const dirs: string[] = []
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(modulesDir, { withFileTypes: true })
  } catch {
    return []
  }
  for (const e of entries) {
    if (e.name.startsWith('.') || !(e.isDirectory() || e.isSymbolicLink())) continue
    if (e.name.startsWith('@')) dirs.push(...packagesIn(path.join(modulesDir, e.name)))
    else dirs.push(path.join(modulesDir, e.name))
  }
  return dirs
}

/** The `node_modules` directory a package's directory is in (above its scope's, if scoped). */
function modulesDirOf (pkgDir: string): string {
  const parent = path.dirname(pkgDir)
  return path.basename(parent).startsWith('@') ? path.dirname(parent) : parent
}

/** The peers pnpm installed for a package and links the bins of (required ones it resolved). */
function installedPeers (lockfile: LockfileObject, depPath: string): string[] {
  const snapshot = lockfile.packages?.[depPath]
  return Object.keys(snapshot?.peerDependencies ?? {}).filter((peer) =>
    snapshot?.peerDependenciesMeta?.[peer]?.optional !== true &&
    (snapshot?.dependencies?.[peer] != null || snapshot?.optionalDependencies?.[peer] != null))
}

/**
 * Why the `.bin` directories pnpm 11.28.3 writes cannot be reproduced here (`undefined`: they
 * can), that release giving each dependency it skips its working directory `cwd` for location
 * (`SkippedLinks`): it reads the package there among the dependencies of every package and
 * project that depends on a skipped one, and would link its commands into their `.bin` (a `bin`
 * or `directories.bin`; with no `package.json` read there it looks further, through the link); and
 * it looks for the commands of a project's skipped dependency's resolved peers at `<cwd>/<peer>`.
 */
export function commandsThroughSkippedLinks (lockfile: LockfileObject, skipped: Set<string>, cwd: string): string | undefined {
  const manifest = readPackageManifest(cwd)
  if (manifest == null) return `no package.json read in pnpm's working directory (${cwd}), where this release links the optional packages it skips`
  if (manifest.bin != null || manifest.directories?.bin != null) return `the package in pnpm's working directory (${cwd}) has commands, which this release links through the links it makes there for the optional packages it skips`
  for (const importer of Object.values(lockfile.importers)) {
    const refs = { ...importer.dependencies, ...importer.devDependencies, ...importer.optionalDependencies }
    for (const [alias, ref] of Object.entries(refs)) {
      const depPath = refToDepPath(alias, ref)
      const peer = skipped.has(depPath) ? installedPeers(lockfile, depPath).find((name) => fs.existsSync(path.join(cwd, name))) : undefined
      if (peer != null) return `${depPath}, skipped: this release looks for the commands of its peer ${peer} in pnpm's working directory (${cwd}), where there is one`
    }
  }
  return undefined
}

/**
 * An importer's `node_modules/.bin`: the commands of its dependencies (a linked project's too),
 * for the root also of the publicly hoisted packages, then of its dependencies' installed peers.
 */
function linkImporterBins (bins: BinWriter, lockfile: LockfileObject, importer: BinImporter, opts: BinLinkOptions, depPathByDir: Map<string, string>): void {
  const { modulesDir, direct } = importer
  const isRoot = importer.id === '.'
  // Packages without bins are not read; linked projects are (pnpm reads their manifests).
  const mayHaveBins = (dir: string): boolean => {
    const depPath = depPathByDir.get(dir)
    return depPath == null || lockfile.packages?.[depPath]?.hasBin === true
  }
  const binsDir = path.join(modulesDir, '.bin')
  const directAliases = Object.keys(direct)
  let commands: Command[]
  if (opts.ignoreScripts && (!isRoot || opts.publicHoistPattern.length === 0)) {
    commands = bins.commandsAt(directAliases.map((alias) => direct[alias]).filter(mayHaveBins))
  } else {
    // pnpm reads every package in node_modules; the importer's own dependencies win a name.
    const aliases = [...directAliases, ...(isRoot ? Object.keys(opts.hoisted.publicLinks) : [])]
    const directSet = new Set(directAliases)
    const all = aliases.flatMap((alias) => bins.commandsAt([path.join(modulesDir, alias)]).map((c) => ({ ...c, direct: directSet.has(alias) })))
    const directNames = new Set(all.filter((c) => c.direct).map((c) => c.name))
    commands = [...all.filter((c) => c.direct), ...all.filter((c) => !c.direct && !directNames.has(c.name))]
  }
  const linked = new Set(bins.write(binsDir, commands))
  if (opts.autoInstallPeers && opts.peerBins !== false) {
    const peerDirs = new Set<string>()
    const locked = lockfile.importers[importer.id]
    const refs = { ...locked.dependencies, ...locked.devDependencies, ...locked.optionalDependencies }
    for (const [alias, dir] of Object.entries(direct)) {
      const ref = refs[alias]
      if (ref == null || !depPathByDir.has(dir)) continue
      for (const peer of installedPeers(lockfile, refToDepPath(alias, ref))) peerDirs.add(path.join(modulesDirOf(dir), peer))
    }
    const peerCommands = bins.commandsAt([...peerDirs].sort()).filter((c) => !linked.has(c.name))
    bins.write(binsDir, peerCommands)
  }
}

/** What writes the layout's shims (`dry`: only checks them). */
function binWriter (opts: BinLinkOptions, dry: boolean | 'warns' = false): BinWriter {
  return new BinWriter(opts.extendsNodePath ? [path.join(opts.virtualStoreDir, 'node_modules')] : [], opts.virtualStoreDir, opts, dry)
}

/**
 * Which `.bin` directories `linkBins` writes: all of them; those pnpm writes before its build
 * step (the packages' and the private hoisting's); or those it writes after it (the projects').
 */
export type BinDirs = 'all' | 'before builds' | 'projects'

/**
 * Throws `UnsupportedShim` where a project's `.bin` could not be written as pnpm writes it:
 * checked before the builds, the projects' commands being linked only after them, as pnpm links them.
 */
export function checkProjectBins (lockfile: LockfileObject, planned: PlannedPackage[], opts: BinLinkOptions): void {
  const bins = binWriter(opts, true)
  const depPathByDir = new Map(planned.map((p) => [p.targetDir, p.depPath]))
  for (const importer of opts.importers) linkImporterBins(bins, lockfile, importer, opts, depPathByDir)
}

/**
 * The `.bin` of the importers `ids` as pnpm's first link leaves them (as under `ignoreScripts`):
 * pnpm writes them a second time only when its lifecycle stage reaches the project, and a
 * project's script that failed first kept it from these.
 */
export function linkImporterBinsOnce (lockfile: LockfileObject, planned: PlannedPackage[], opts: BinLinkOptions, ids: Set<string>): void {
  const unreached = opts.importers.filter((importer) => ids.has(importer.id))
  for (const importer of unreached) fs.rmSync(path.join(importer.modulesDir, '.bin'), { recursive: true, force: true })
  linkBins(lockfile, planned, { ...opts, importers: unreached, ignoreScripts: true }, 'projects')
}

/**
 * The commands pnpm's build step links into the `.bin` of a package it takes through it (a
 * denied build): its dependencies' (`dependencies`, those of its graph, by their directories)
 * and its own, each with a `NODE_PATH` or not as the release's `BuildStepNodePath` says. Before
 * 11.28.10 the step writes them without one, keeping a shim already there for the same target
 * that it reads back (`keptShimBytes`): the dependencies' the first link wrote, unless it read
 * them through the links (`throughLinks`: a dependency that is no package of the graph), when
 * their targets differ and all are written again.
 */
function linkBuildStepBins (bins: BinWriter, pkg: PlannedPackage, binsDir: string, dependencies: string[], nodePath: BuildStepNodePath = 'all', throughLinks = false): void {
  if (nodePath === 'all') {
    bins.write(binsDir, bins.commandsAt([...dependencies, pkg.targetDir]))
    return
  }
  const written = bins.write(binsDir, bins.commandsAt(dependencies), throughLinks ? false : 'where kept')
  const own = bins.commandsAt([pkg.targetDir])
  const clash = own.find((c) => written.includes(c.name))
  if (clash != null) throw new UnsupportedShim(`${pkg.depPath}: its command ${clash.name} and a dependency's, linked apart by this pnpm's build step`)
  bins.write(binsDir, own, false)
}

/**
 * The warnings of pnpm's first link of the projects' commands, which its lifecycle stage links
 * again through the links (what is written): the first reads a linked project's commands at its
 * own directory, so a command whose file is not there yet is named there first, then again
 * through the link. Nothing is written; a shim it could not check is the second link's to refuse.
 */
function warnFirstLink (lockfile: LockfileObject, opts: BinLinkOptions, depPathByDir: Map<string, string>): void {
  const bins = binWriter(opts, 'warns')
  const first = { ...opts, ignoreScripts: true }
  try {
    for (const importer of opts.importers) linkImporterBins(bins, lockfile, importer, first, depPathByDir)
  } catch (err) {
    if (!(err instanceof UnsupportedShim)) throw err
  }
}

/** Writes the layout's `.bin` directories (`which`: see `BinDirs`). Throws `UnsupportedShim` for a command it cannot write as pnpm would. */
export function linkBins (lockfile: LockfileObject, planned: PlannedPackage[], opts: BinLinkOptions, which: BinDirs = 'all'): void {
  const privateModules = path.join(opts.virtualStoreDir, 'node_modules')
  const bins = binWriter(opts)
  const hasBin = (depPath: string): boolean => lockfile.packages?.[depPath]?.hasBin === true
  const depPathByDir = new Map(planned.map((p) => [p.targetDir, p.depPath]))

  for (const pkg of which === 'projects' ? [] : planned) {
    if (opts.removed?.has(pkg.targetDir) === true) continue
    const binsDir = path.join(pkg.targetDir, 'node_modules', '.bin')
    const children = pkg.children ?? {}
    // The dependencies with commands that are packages of pnpm's graph, by their directories.
    const ofGraph = Object.values(children).filter((dir) => depPathByDir.has(dir) && hasBin(depPathByDir.get(dir)!))
    // A dependency that is none (a project of the workspace, or 11.28.3's link to its working
    // directory for a skipped one): pnpm's first link reads every dependency through its link.
    const byLinks = Object.values(children).some((dir) => !depPathByDir.has(dir))
    const linked = byLinks ? Object.keys(children).map((alias) => path.join(modulesDirOf(pkg.targetDir), alias)) : ofGraph
    if (!opts.throughBuildStep.has(pkg.depPath) || byLinks) bins.write(binsDir, bins.commandsAt(linked))
    if (opts.throughBuildStep.has(pkg.depPath)) linkBuildStepBins(bins, pkg, binsDir, ofGraph, opts.buildStepNodePath, byLinks)
    // A second pass of its own: the ownership rule does not reach across the two.
    if (lockfile.packages?.[pkg.depPath]?.bundledDependencies != null) {
      bins.write(binsDir, bins.commandsAt(packagesIn(path.join(pkg.targetDir, 'node_modules'))))
    }
  }

  if (which !== 'before builds') {
    const linkedTwice = !opts.ignoreScripts && opts.warn != null && (opts.shimWriter ?? 'pnpm') !== 'pnpm'
    if (linkedTwice) warnFirstLink(lockfile, opts, depPathByDir)
    const projectBins = linkedTwice && opts.warnAfterSummary != null ? binWriter({ ...opts, warn: opts.warnAfterSummary }) : bins
    for (const importer of opts.importers) linkImporterBins(projectBins, lockfile, importer, opts, depPathByDir)
  }
  if (which !== 'projects') bins.write(path.join(privateModules, '.bin'), bins.commandsAt(opts.hoisted.privateAliasesWithBins.map((alias) => path.join(privateModules, alias))))
}
