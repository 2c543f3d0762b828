/**
 * The plugin's bundle loaded with a V8 code cache of its own. Node's compile cache (which pnpm
 * turns on) keeps only the code V8 compiles before a module runs, and a bundle's modules are
 * functions V8 compiles when they first run: every install compiled them again (some 18 ms of
 * CPU in the vite starter's install). This cache is made once an install has run them.
 *
 * It lives in Node's compile cache directory, and only when that cache is on (never in the
 * project), one file per Node version, architecture and bundle (its size and CRC32 in the
 * name), with the CRC32 of its data ahead of it. Anything wrong (no cache, a damaged one, one V8
 * rejects, a directory it cannot write): the bundle is compiled as `require` compiles it, and
 * the cache is made again; an error writing it is ignored.
 */
import fs from 'node:fs'
import Module from 'node:module'
import path from 'node:path'
import vm from 'node:vm'
import zlib from 'node:zlib'

/** Set once the whole native install has run in this process: the plugin's code cache is worth making then. */
const INSTALLED_NATIVELY = Symbol.for('@cas/pnpm-plugin-native:installed natively')

/** Notes that the whole native install has run (see `requireWithCodeCache`'s `worthSaving`). */
export function noteInstalledNatively (): void {
  (globalThis as Record<symbol, unknown>)[INSTALLED_NATIVELY] = true
}

/** Whether `noteInstalledNatively` was called in this process (by the bundle, which has its own copy of this module). */
export function installedNatively (): boolean {
  return (globalThis as Record<symbol, unknown>)[INSTALLED_NATIVELY] === true
}

/** The folder of these caches in Node's compile cache directory. */
const FOLDER = 'cas-pnpm-plugin-native'

/** Where the code cache of the module `source` (its bytes) goes in `cacheDir`. */
export function codeCacheFile (cacheDir: string, source: Buffer): string {
  return path.join(cacheDir, FOLDER, `${process.version}-${process.arch}-${source.length}-${zlib.crc32(source).toString(16)}.cache`)
}

/** The cache's data, if the file is there and whole: its first 4 bytes are the CRC32 of the rest. */
function readCodeCache (file: string): Buffer | undefined {
  let bytes: Buffer
  try {
    bytes = fs.readFileSync(file)
  } catch {
    return undefined
  }
  if (bytes.length <= 4) return undefined
  const data = bytes.subarray(4)
  return bytes.readUInt32LE(0) === zlib.crc32(data) ? data : undefined
}

/** How many caches the folder keeps (the most recently made): one per plugin release and Node version in use. */
const KEPT_CACHES = 4
/** How old a temporary must be to be taken for one a killed writer left. */
const ORPHANED_AFTER_MS = 10 * 60 * 1000

/**
 * Removes from `dir` the caches beyond the `KEPT_CACHES` most recently made (those of plugin
 * releases and Node versions no longer used) and the temporaries a killed writer left, so
 * that the folder does not grow with every release. Errors are ignored (another process may
 * be pruning too).
 */
export function pruneCodeCaches (dir: string, now: number = Date.now()): void {
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return
  }
  const made: Array<{ file: string, mtimeMs: number }> = []
  for (const name of names) {
    const file = path.join(dir, name)
    try {
      const { mtimeMs } = fs.statSync(file)
      if (name.endsWith('.cache')) made.push({ file, mtimeMs })
      else if (name.endsWith('.tmp') && now - mtimeMs > ORPHANED_AFTER_MS) fs.rmSync(file, { force: true })
    } catch {}
  }
  for (const { file } of made.sort((a, b) => b.mtimeMs - a.mtimeMs).slice(KEPT_CACHES)) {
    try {
      fs.rmSync(file, { force: true })
    } catch {}
  }
}

/** Writes `data` to `file` with its CRC32 ahead of it, through a temporary, so that a reader never sees half of it; then prunes the folder. */
function writeCodeCache (file: string, data: Buffer): void {
  const head = Buffer.alloc(4)
  head.writeUInt32LE(zlib.crc32(data))
  const temp = `${file}.${process.pid}.tmp`
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(temp, Buffer.concat([head, data]))
    fs.renameSync(temp, file)
  } catch {
    try {
      fs.rmSync(temp, { force: true })
    } catch {}
    return
  }
  pruneCodeCaches(path.dirname(file))
}

/** `source` as the function Node's CommonJS loader makes of a module (its lines where they were). */
const wrapped = (source: string): string => `(function (exports, require, module, __filename, __dirname) { ${source}\n});`

type ModuleFunction = (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void

/**
 * The module `source` (its bytes; their CRC32 is taken from them, not from the string, which
 * costs a conversion) compiled with the code cache in `cacheDir`, which is made when there was
 * none V8 took (see `codeCacheAfterUpdateConfig`). Throws only what compiling it throws.
 */
function compileWithCodeCache (file: string, source: Buffer, cacheDir: string, worthSaving: () => boolean): ModuleFunction {
  const cacheFile = codeCacheFile(cacheDir, source)
  const cachedData = readCodeCache(cacheFile)
  const script = new vm.Script(wrapped(source.toString('utf8')), {
    filename: file,
    cachedData,
    importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  })
  if (cachedData == null || script.cachedDataRejected === true) {
    let saved = false
    pendingSave = () => {
      if (saved || !worthSaving()) return
      saved = true
      writeCodeCache(cacheFile, script.createCachedData())
    }
    // At the latest at exit (with every function the process ran and V8 still holds).
    process.once('exit', pendingSave)
  }
  return script.runInThisContext({ displayErrors: true }) as ModuleFunction
}

/** Makes the code cache the last `requireWithCodeCache` is to make, if any (once). */
let pendingSave: (() => void) | undefined

/** A pnpmfile's module, as far as this needs it. */
interface Pnpmfile { hooks: { updateConfig?: (config: never) => unknown } }

/**
 * `pnpmfile` with the code cache, when one is to be made, made as soon as its `updateConfig`
 * has run (the native install) rather than at exit: V8 drops the bytecode of functions that have
 * not run for a while, and a cache made without them leaves them to every later install to
 * compile (one made at the exit of an install held 282 kB where another held 456 kB). As it is
 * when no cache is to be made.
 */
export function codeCacheAfterUpdateConfig<T extends Pnpmfile> (pnpmfile: T): T {
  const save = pendingSave
  const update = pnpmfile.hooks.updateConfig
  if (save == null || update == null) return pnpmfile
  return {
    ...pnpmfile,
    hooks: {
      ...pnpmfile.hooks,
      updateConfig: (config: never) => {
        const updated = update(config)
        Promise.resolve(updated).then(save, save)
        return updated
      },
    },
  }
}

/**
 * The exports of the CommonJS module `file` (an absolute path), run as `require` runs it, with
 * its code cache in `cacheDir` (by default Node's compile cache directory, if it is on). Without
 * one, or where this Node lacks what the cache needs, `require` loads it. `worthSaving`: whether
 * the process ran enough of the module for its cache to be made now (V8 accepts a cache made
 * with fewer functions just as well, and it would stay: the plugin's is made only by a process
 * that installed natively, not by a `pnpm run`, which also calls `updateConfig`).
 */
export function requireWithCodeCache (file: string, cacheDir: string | undefined = Module.getCompileCacheDir?.(), worthSaving: () => boolean = () => true): unknown {
  if (cacheDir == null) return require(file)
  let compiled: ModuleFunction
  try {
    compiled = compileWithCodeCache(file, fs.readFileSync(file), cacheDir, worthSaving)
  } catch {
    // Nothing of the module has run: `require` compiles it (and throws what it throws).
    return require(file)
  }
  const mod = new Module(file)
  mod.filename = file
  compiled.call(mod.exports, mod.exports, Module.createRequire(file), mod, file, path.dirname(file))
  mod.loaded = true
  return mod.exports
}
