/**
 * The package as users get it (issue 6): the release binary goes into the linux-x64-gnu platform
 * package as `napi artifacts` puts it there, `napi prepublish` adds the per-platform
 * `optionalDependencies` to the main package as it does before `npm publish`, both are packed
 * with `npm pack`, and the two tarballs are installed into a fresh project with
 * `npm install --offline` (an empty cache, an unreachable registry, no cargo/rustc on PATH).
 * There, under Node 20 and Node 24, `require('@cas/native')`, `import('@cas/native')` and
 * `import('@cas/native/worker')` load, and the main API and the worker drop-in each extract one
 * tarball; without the platform package the load fails with one clear error. The alias package
 * @cas/pnpm-worker (npm/pnpm-worker) is packed too, and a project whose code imports
 * `@pnpm/worker` is installed with an npm override, and with a pnpm override, from a registry
 * stand-in on 127.0.0.1 serving the packed tarballs: its output is what stock `@pnpm/worker` gives.
 *
 * All of it happens on a copy of the repository in a temporary directory: the working tree
 * (package.json, npm/) is never modified.
 */
import { execFile, spawnSync, type ExecFileOptions, type SpawnSyncOptions } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveTarballs, type TarballRegistry } from './helpers/registry.js'

const repo = path.resolve(__dirname, '..')
const rootPkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'))
const platform = 'linux-x64-gnu'
/** npm/pnpm-worker: the alias package. */
const aliasDir = 'pnpm-worker'
const binaryFile = `${rootPkg.napi.binaryName}.${platform}.node`
const napiCli = path.join(repo, 'node_modules/@napi-rs/cli/dist/cli.js')
const tscCli = path.join(repo, 'node_modules/typescript/bin/tsc')
const fixture = path.join(repo, '__test__/fixtures/tarballs/is-docker@2.2.1.tgz')
const fixtureInfo = (JSON.parse(readFileSync(path.join(repo, '__test__/fixtures/tarballs/index.json'), 'utf8')) as Array<{
  file: string
  name: string
  integrity: string
  files: number
}>).find((f) => f.file === path.basename(fixture))!
// Node 20 is the oldest line `engines` admits; the system `node` on the project's machines.
const node20 = process.env.CAS_NATIVE_NODE20 ?? '/usr/bin/node'

const isLinuxX64Gnu = process.platform === 'linux' && process.arch === 'x64' &&
  (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime !== undefined

/** npm/<platform>/ of every platform package (npm/ also holds other packages built from this repo). */
const platformDirs = readdirSync(path.join(repo, 'npm')).filter((dir) => existsSync(path.join(repo, 'npm', dir, 'package.json')) &&
  JSON.parse(readFileSync(path.join(repo, 'npm', dir, 'package.json'), 'utf8')).name === `${rootPkg.name}-${dir}`)

function run (cmd: string, args: string[], opts: SpawnSyncOptions = {}): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts })
  if (r.error) throw r.error
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}\n${r.stdout}\n${r.stderr}`)
  }
  return String(r.stdout)
}

/** `run` without blocking this process's event loop, which the registry stand-in answers from. */
function runAsync (cmd: string, args: string[], opts: ExecFileOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, ...opts }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`))
      else resolve(String(stdout))
    })
  })
}

/** npm as the test runs it (`npm test` sets npm_execpath), started by this Node: the command and its arguments. */
function npmCommand (args: string[]): [string, string[]] {
  const cli = process.env.npm_execpath
  return cli && cli.endsWith('.js') ? [process.execPath, [cli, ...args]] : ['npm', args]
}

function npm (args: string[], opts: SpawnSyncOptions = {}): string {
  return run(...npmCommand(args), opts)
}

/** PATH without any directory holding cargo or rustc: the install must not need Rust. */
const pathWithoutRust = (process.env.PATH ?? '')
  .split(path.delimiter)
  .filter((dir) => dir && !['cargo', 'rustc'].some((tool) => existsSync(path.join(dir, tool))))
  .join(path.delimiter)

/** Section names of an ELF64 little-endian shared object. */
function elfSectionNames (file: string): string[] {
  const b = readFileSync(file)
  if (b.readUInt32BE(0) !== 0x7f454c46 || b[4] !== 2 || b[5] !== 1) throw new Error(`${file}: not an ELF64 LE file`)
  const shoff = Number(b.readBigUInt64LE(0x28))
  const shentsize = b.readUInt16LE(0x3a)
  const shnum = b.readUInt16LE(0x3c)
  const shstrndx = b.readUInt16LE(0x3e)
  const section = (i: number) => shoff + i * shentsize
  const strtab = Number(b.readBigUInt64LE(section(shstrndx) + 0x18))
  const names: string[] = []
  for (let i = 0; i < shnum; i++) {
    const start = strtab + b.readUInt32LE(section(i))
    names.push(b.toString('latin1', start, b.indexOf(0, start)))
  }
  return names
}

const isStripped = (file: string) => !elfSectionNames(file).some((name) => name === '.symtab' || name.startsWith('.debug'))

function newestMtime (entry: string): number {
  const st = statSync(entry)
  if (!st.isDirectory()) return st.mtimeMs
  return Math.max(st.mtimeMs, ...readdirSync(entry).map((name) => newestMtime(path.join(entry, name))))
}

/**
 * The release binary: the one `npm run build` left at the repository root when it is a release
 * build (stripped) newer than every Rust input, else a release build into a temporary directory
 * (cargo reuses target/, so this only compiles what changed).
 */
function releaseBinary (tmp: string): { file: string, how: string } {
  const atRoot = path.join(repo, binaryFile)
  const inputs = ['src', 'crates', 'Cargo.toml', 'Cargo.lock', 'build.rs'].map((f) => path.join(repo, f)).filter((f) => existsSync(f))
  if (existsSync(atRoot) && isStripped(atRoot) && statSync(atRoot).mtimeMs >= Math.max(...inputs.map(newestMtime))) {
    return { file: atRoot, how: 'reused the release build at the repository root' }
  }
  const outDir = path.join(tmp, 'build')
  run(process.execPath, [napiCli, 'build', '--platform', '--release', '--no-js', '--dts', 'index.d.ts', '--output-dir', outDir], {
    cwd: repo,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  return { file: path.join(outDir, binaryFile), how: 'napi build --release' }
}

/** The repository's files that are tracked or not ignored (git), else all but the known build outputs. */
function repoFiles (): string[] {
  const git = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: repo, encoding: 'utf8' })
  if (git.status === 0) return git.stdout.split('\0').filter((f) => f && existsSync(path.join(repo, f)))
  const skip = new Set(['.git', 'node_modules', 'target', 'dist', '.cache', '.work'])
  const walk = (dir: string): string[] => readdirSync(path.join(repo, dir), { withFileTypes: true })
    .filter((e) => !skip.has(e.name))
    .flatMap((e) => e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)])
  return walk('')
}

interface Packed { filename: string, size: number, unpackedSize: number, files: Array<{ path: string }> }

function pack (dir: string, dest: string, opts: { ignoreScripts?: boolean } = {}): Packed {
  // Scripts allowed and no Rust on PATH: `npm pack` runs the package's pack-time scripts, and
  // none of them may need Rust. (A published dependency, packed again from node_modules, has
  // its scripts ignored: they build it from sources it does not ship.)
  const out = npm(['pack', '--json', '--pack-destination', dest, ...(opts.ignoreScripts === true ? ['--ignore-scripts'] : [])], { cwd: dir, env: { ...process.env, PATH: pathWithoutRust } })
  const [packed] = JSON.parse(out.slice(out.indexOf('['))) as Packed[]
  return { ...packed, filename: path.join(dest, path.basename(packed.filename)) }
}

/**
 * The main package's own dependencies and theirs, packed from this checkout's node_modules into
 * `dest` (the installs here are offline, and npm takes a dependency from a tarball installed
 * beside it).
 */
function dependencyPackages (dest: string): Array<{ dir: string, packed: Packed }> {
  const seen = new Map<string, { dir: string, packed: Packed }>()
  // Each dependency where Node would find it from its dependent: nested first, then hoisted.
  const visit = (deps: Record<string, string> | undefined, from: string): void => {
    for (const name of Object.keys(deps ?? {})) {
      let at = from
      while (!existsSync(path.join(at, 'node_modules', name)) && at !== repo) at = path.dirname(at)
      const dir = path.join(at, 'node_modules', name)
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
      const key = `${manifest.name}@${manifest.version}`
      if (seen.has(key)) continue
      seen.set(key, { dir, packed: pack(dir, dest, { ignoreScripts: true }) })
      visit(manifest.dependencies, dir)
    }
  }
  mkdirSync(dest, { recursive: true })
  visit(rootPkg.dependencies, repo)
  return [...seen.values()]
}

/** A fresh project with the given tarballs (and the main package's dependencies) installed from disk only. */
function installProject (dir: string, tarballs: string[]): void {
  mkdirSync(dir, { recursive: true })
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: path.basename(dir), version: '1.0.0', private: true }))
  npm(['install', '--offline', '--no-audit', '--no-fund', '--cache', path.join(dir, '.npm-cache'),
    '--registry', 'http://127.0.0.1:9/', ...tarballs, ...dependencyPackages(path.join(dir, '.deps')).map((d) => d.packed.filename)], {
    cwd: dir,
    env: { ...process.env, PATH: pathWithoutRust },
  })
}

describe.skipIf(!isLinuxX64Gnu)('packed and installed without Rust (linux-x64-gnu)', () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cas-native-pack-'))
  const stage = path.join(tmp, 'stage')
  const project = path.join(tmp, 'project')
  let binary: { file: string, how: string }
  let main: Packed
  let platformPkg: Packed
  let alias: Packed
  /** The platform packages packed with their stand-in binaries: their metadata, for the registry stand-in. */
  let otherPlatforms: Array<{ dir: string, packed: Packed }>

  beforeAll(() => {
    binary = releaseBinary(tmp)
    // A copy of the repository as a checkout has it (tracked and not-ignored files: sources,
    // tests and benchmarks included, so that `files` has something to leave out), without build
    // outputs, caches or binaries.
    for (const file of repoFiles()) {
      if (/\.(node|tgz)$/.test(file)) continue
      mkdirSync(path.dirname(path.join(stage, file)), { recursive: true })
      cpSync(path.join(repo, file), path.join(stage, file))
    }
    // dist/ exactly as a clean `npm run build:ts` makes it.
    run(process.execPath, [tscCli, '-p', path.join(repo, 'tsconfig.json'), '--outDir', path.join(stage, 'dist')])
    // `npm run artifacts` as the release workflow runs it: ./artifacts/*.node into npm/<platform>/.
    // The other platforms' binaries come from other runners; stand-ins let `napi prepublish`
    // validate their packages. Only the linux-x64-gnu package is packed and installed.
    mkdirSync(path.join(stage, 'artifacts'))
    for (const dir of platformDirs) {
      const file = path.join(stage, 'artifacts', `${rootPkg.napi.binaryName}.${dir}.node`)
      if (dir === platform) cpSync(binary.file, file)
      else writeFileSync(file, 'stand-in: built on another runner\n')
    }
    run(process.execPath, [napiCli, 'artifacts'], { cwd: stage })
    // What `prepublishOnly` does before `npm publish` packs the main package, minus publishing
    // the platform packages and the GitHub release.
    run(process.execPath, [napiCli, 'prepublish', '-t', 'npm', '--skip-optional-publish', '--no-gh-release'], { cwd: stage })
    main = pack(stage, tmp)
    platformPkg = pack(path.join(stage, 'npm', platform), tmp)
    alias = pack(path.join(stage, 'npm', aliasDir), tmp)
    otherPlatforms = platformDirs.filter((dir) => dir !== platform).map((dir) => ({ dir, packed: pack(path.join(stage, 'npm', dir), tmp) }))
    installProject(project, [main.filename, platformPkg.filename])
    cpSync(path.join(repo, '__test__/helpers/pack-smoke.mjs'), path.join(project, 'pack-smoke.mjs'))
  }, 30 * 60_000)

  afterAll(() => rmSync(tmp, { recursive: true, force: true }))

  it('packs the documents the README links to: every relative link of the packed README and docs resolves inside the package (benchmarks stay in the repository)', () => {
    const files = new Set(main.files.map((f) => f.path))
    const broken: string[] = []
    for (const doc of [...files].filter((f) => f.endsWith('.md'))) {
      const text = readFileSync(path.join(repo, doc), 'utf8')
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target) || target.startsWith('benchmark/')) continue
        const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(doc), target))
        if (!files.has(resolved)) broken.push(`${doc} -> ${target}`)
      }
    }
    expect(files.has('docs/api.md')).toBe(true)
    expect(broken).toEqual([])
  })

  it('packs the main package with only the loader, typings, dist/ and its documents, under 400 kB packed', () => {
    const files = main.files.map((f) => f.path).sort()
    expect(files).toEqual(expect.arrayContaining(['package.json', 'index.js', 'index.d.ts', 'dist/api/index.js', 'dist/api/index.d.ts', 'dist/api/binding.js', 'dist/worker/index.js', 'dist/worker/index.d.ts']))
    for (const file of files) {
      expect(file).toMatch(/^(package\.json|README\.md|RELIABILITY\.md|ARCHITECTURE\.md|index\.js|index\.d\.ts|dist\/[\w/-]+\.(js|d\.ts)|docs\/[\w-]+\.md)$/)
    }
    expect(files.filter((f) => /^(src|__test__|benchmark|npm|target|lib)\/|Cargo|\.rs$|\.node$|\.spec\./.test(f))).toEqual([])
    // …and everything package.json points at is in it: each `exports` target, `main`, `types`, `bin`.
    const targets = (v: unknown): string[] => typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(targets) : []
    const pointedAt = [...targets(rootPkg.exports), ...targets(rootPkg.bin ?? {}), rootPkg.main, rootPkg.types]
      .map((p) => path.posix.normalize(p))
    expect(pointedAt.filter((p) => !files.includes(p))).toEqual([])
    // A budget that catches a binary, a source tree or a map packed by mistake (the package is
    // ~300 kB packed, 1 MB unpacked, with the release table and its forms; a .node alone is
    // megabytes, a source map of dist/ about as much again as dist/).
    expect(main.size).toBeLessThan(400_000)
    expect(statSync(main.filename).size).toBe(main.size)
  })

  it('has no install-time scripts: installing the package runs nothing', () => {
    const installed = JSON.parse(readFileSync(path.join(project, 'node_modules/@cas/native/package.json'), 'utf8'))
    const installTime = ['preinstall', 'install', 'postinstall', 'prepare']
    expect(Object.keys(installed.scripts ?? {}).filter((s) => installTime.includes(s))).toEqual([])
    // npm adds `install: node-gyp rebuild` to a package with a binding.gyp: there must be none.
    expect(main.files.map((f) => f.path)).not.toContain('binding.gyp')
  })

  it('declares every platform package as an optional dependency at the same version', () => {
    const installed = JSON.parse(readFileSync(path.join(project, 'node_modules/@cas/native/package.json'), 'utf8'))
    const expected = Object.fromEntries(platformDirs.map((dir) => {
      const pkg = JSON.parse(readFileSync(path.join(repo, 'npm', dir, 'package.json'), 'utf8'))
      // Every platform package in step with the main one (what `napi version` maintains).
      expect(pkg).toMatchObject({
        name: `${rootPkg.name}-${dir}`,
        version: rootPkg.version,
        main: `${rootPkg.napi.binaryName}.${dir}.node`,
        files: [`${rootPkg.napi.binaryName}.${dir}.node`],
        engines: rootPkg.engines,
        license: rootPkg.license,
      })
      return [pkg.name, rootPkg.version]
    }))
    expect(Object.keys(expected)).toHaveLength(rootPkg.napi.targets.length)
    expect(installed.optionalDependencies).toEqual(expected)
    expect(installed.version).toBe(rootPkg.version)
    expect(installed.engines).toEqual(rootPkg.engines)
  })

  it('packs the platform package with only its stripped .node', () => {
    expect(platformPkg.files.map((f) => f.path).sort()).toEqual(['README.md', binaryFile, 'package.json'].sort())
    const installed = path.join(project, 'node_modules', `${rootPkg.name}-${platform}`)
    const pkg = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8'))
    expect(pkg).toMatchObject({ version: rootPkg.version, main: binaryFile, os: ['linux'], cpu: ['x64'], libc: ['glibc'], engines: rootPkg.engines })
    const node = path.join(installed, binaryFile)
    const sections = elfSectionNames(node)
    expect(sections).toContain('.text')
    expect(sections.filter((name) => name === '.symtab' || name.startsWith('.debug'))).toEqual([])
    const size = statSync(node).size
    console.log(`${binaryFile}: ${size} bytes (${(size / 2 ** 20).toFixed(2)} MiB), ${binary.how}; ` +
      `packed @cas/native ${main.size} B, ${rootPkg.name}-${platform} ${platformPkg.size} B`)
    // A release build with `strip = "symbols"` is a few MiB; an unstripped or debug one is ~10x that.
    expect(size).toBeLessThan(10 * 2 ** 20)
  })

  it('installed without Rust: the PATH given to npm has no cargo or rustc', () => {
    const r = spawnSync('cargo', ['--version'], { env: { ...process.env, PATH: pathWithoutRust } })
    expect((r.error as NodeJS.ErrnoException | undefined)?.code).toBe('ENOENT')
  })

  it.each([
    ['Node 20', node20, 20],
    ['Node 24', process.execPath, 24],
  ])('%s: require and import load @cas/native and @cas/native/worker, and both extract a tarball', (_name, node, major) => {
    expect(run(node, ['--version']).trim()).toMatch(new RegExp(`^v${major}\\.`))
    const out = run(node, ['pack-smoke.mjs', fixture, fixtureInfo.integrity, String(fixtureInfo.files)], { cwd: project, env: { ...process.env, PATH: pathWithoutRust } })
    const seen = JSON.parse(out.trim().split('\n').pop()!)
    expect(seen.node).toMatch(new RegExp(`^v${major}\\.`))
    expect(seen.resolved).toBe(path.join(project, 'node_modules/@cas/native/dist/api/index.js'))
    expect(seen.resolvedWorker).toBe(path.join(project, 'node_modules/@cas/native/dist/worker/index.js'))
    expect(seen.nativeAddons).toEqual([path.join(project, 'node_modules', `${rootPkg.name}-${platform}`, binaryFile)])
    expect(seen.sameModule).toBe(true)
    expect(seen.exports).toEqual(expect.arrayContaining(['addFilesFromTarball', 'initStoreDir', 'closeStores']))
    expect(seen.workerExports).toEqual(expect.arrayContaining(['addFilesFromTarball', 'readPkgFromCafs', 'importPackage', 'finishWorkers']))
    expect(seen).toMatchObject({
      filesMapSize: fixtureInfo.files,
      blobsAreFiles: true,
      manifestName: fixtureInfo.name,
      integrity: fixtureInfo.integrity,
    })
    // The worker drop-in: the same files, and the index row handed to the caller's storeIndex.
    expect(seen.worker).toMatchObject({
      filesMapSize: fixtureInfo.files,
      blobsAreFiles: true,
      manifestName: fixtureInfo.name,
      integrity: fixtureInfo.integrity,
    })
    expect(seen.worker.rows).toHaveLength(1)
    expect(seen.worker.rows[0].key).toBe(`${path.basename(fixture)}\tsmoke`)
    expect(seen.worker.rows[0].bytes).toBeGreaterThan(0)
  })

  it.each([
    ['Node 20', node20],
    ['Node 24', process.execPath],
  ])('%s: without the platform package, require and import (also of /worker) throw one error naming the platform and what to install', (_name, node) => {
    const bare = path.join(tmp, 'no-binary')
    if (!existsSync(bare)) installProject(bare, [main.filename])
    expect(existsSync(path.join(bare, 'node_modules', `${rootPkg.name}-${platform}`))).toBe(false)
    const probe = `
      const show = (e) => ({ code: e.code, message: e.message, cause: e.cause instanceof Error })
      let viaRequire, viaImport, viaWorker
      try { require('@cas/native') } catch (e) { viaRequire = show(e) }
      import('@cas/native').catch((e) => { viaImport = show(e) })
        .then(() => import('@cas/native/worker')).catch((e) => { viaWorker = show(e) })
        .then(() => console.log(JSON.stringify({ viaRequire, viaImport, viaWorker })))
    `
    const { viaRequire, viaImport, viaWorker } = JSON.parse(run(node, ['-e', probe], { cwd: bare }).trim())
    for (const err of [viaRequire, viaImport, viaWorker]) {
      expect(err.code).toBe('ERR_CAS_NATIVE_BINDING_NOT_FOUND')
      expect(err.cause).toBe(true)
      expect(err.message).toContain(`could not load the native addon for ${platform}`)
      expect(err.message).toContain(`npm install ${rootPkg.name}-${platform}@${rootPkg.version}`)
      expect(err.message).toContain(`Cannot find module '${rootPkg.name}-${platform}'`)
      expect(err.message).not.toMatch(/wasi/i)
    }
  })

  it('with a platform package whose binary does not load, the error says so and shows why', () => {
    const pkgDir = path.join(tmp, 'broken-package')
    cpSync(path.join(stage, 'npm', platform), pkgDir, { recursive: true })
    writeFileSync(path.join(pkgDir, binaryFile), 'not an ELF file\n')
    const broken = path.join(tmp, 'broken-binary')
    installProject(broken, [main.filename, pack(pkgDir, pkgDir).filename])
    const probe = 'try { require(\'@cas/native\') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }'
    const err = JSON.parse(run(process.execPath, ['-e', probe], { cwd: broken }).trim())
    expect(err.code).toBe('ERR_CAS_NATIVE_BINDING_NOT_FOUND')
    expect(err.message).toContain(`${rootPkg.name}-${platform} is installed but its binary failed to load`)
    expect(err.message).toMatch(/invalid ELF header|file too short/)
  })

  it('on a platform with no prebuilt package, the error lists the prebuilt ones and points to a source build', () => {
    const bare = path.join(tmp, 'no-binary')
    if (!existsSync(bare)) installProject(bare, [main.filename])
    const probe = `
      Object.defineProperty(process, 'platform', { value: 'freebsd' })
      try { require('@cas/native') } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }
    `
    const prebuilt = platformDirs
    // Installed, the list comes from optionalDependencies; in the checkout, from napi.targets.
    for (const cwd of [bare, repo]) {
      const err = JSON.parse(run(process.execPath, ['-e', probe], { cwd }).trim())
      expect(err.code).toBe('ERR_CAS_NATIVE_BINDING_NOT_FOUND')
      expect(err.message).toContain(`There is no prebuilt binary for freebsd-${process.arch} (prebuilt: `)
      for (const p of prebuilt) expect(err.message).toContain(p)
      expect(err.message).toContain('Rust toolchain')
      expect(err.message).not.toContain('npm install')
    }
  })

  it('packs @cas/pnpm-worker in lockstep: the same version, depending on exactly this @cas/native', () => {
    expect(alias.files.map((f) => f.path).sort()).toEqual(['README.md', 'index.d.ts', 'index.js', 'package.json'])
    const pkg = JSON.parse(readFileSync(path.join(repo, 'npm', aliasDir, 'package.json'), 'utf8'))
    expect(pkg).toMatchObject({ name: '@cas/pnpm-worker', version: rootPkg.version, dependencies: { [rootPkg.name]: rootPkg.version }, engines: rootPkg.engines, license: rootPkg.license })
    expect(pkg.scripts).toBeUndefined()
  })

  describe('a dependency importing @pnpm/worker, with @pnpm/worker overridden to @cas/pnpm-worker', () => {
    const script = path.join(repo, '__test__/helpers/uses-pnpm-worker.mjs')
    const overrideSpec = `npm:@cas/pnpm-worker@${rootPkg.version}`
    let registry: TarballRegistry
    /** The script's output with stock @pnpm/worker (this repository's devDependency). */
    let stock: any

    beforeAll(async () => {
      // A package whose code imports @pnpm/worker (the script), as a project would depend on it.
      const user = path.join(tmp, 'uses-pnpm-worker-src')
      mkdirSync(user)
      cpSync(script, path.join(user, 'uses-pnpm-worker.mjs'))
      writeFileSync(path.join(user, 'package.json'), JSON.stringify({ name: 'uses-pnpm-worker', version: '1.0.0', dependencies: { '@pnpm/worker': '1100.4.2' } }))
      const served = [
        { dir: stage, packed: main },
        { dir: path.join(stage, 'npm', platform), packed: platformPkg },
        { dir: path.join(stage, 'npm', aliasDir), packed: alias },
        ...otherPlatforms.map(({ dir, packed }) => ({ dir: path.join(stage, 'npm', dir), packed })),
        { dir: user, packed: pack(user, tmp) },
        ...dependencyPackages(path.join(tmp, 'deps')),
      ]
      registry = await serveTarballs(served.map(({ dir, packed }) => {
        const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'))
        return { name: manifest.name, version: manifest.version, manifest, tarball: packed.filename }
      }))
      const stockDir = path.join(tmp, 'stock')
      mkdirSync(path.join(stockDir, 'node_modules/@pnpm'), { recursive: true })
      symlinkSync(path.join(repo, 'node_modules/@pnpm/worker'), path.join(stockDir, 'node_modules/@pnpm/worker'))
      cpSync(script, path.join(stockDir, 'uses-pnpm-worker.mjs'))
      stock = runScript(process.execPath, path.join(stockDir, 'uses-pnpm-worker.mjs'))
      expect(JSON.parse(readFileSync(packageJsonOf(stock.resolved), 'utf8')).name).toBe('@pnpm/worker')
    }, 5 * 60_000)

    afterAll(() => registry?.close())

    /** A project depending on uses-pnpm-worker, written with `extra` merged into its package.json. */
    function project (name: string, extra: object): string {
      const dir = path.join(tmp, name)
      mkdirSync(dir)
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true, dependencies: { 'uses-pnpm-worker': '1.0.0' }, ...extra }, null, 2))
      return dir
    }

    function runScript (node: string, file: string): any {
      const store = path.join(tmp, `store-${Math.random().toString(36).slice(2)}`)
      const out = run(node, [file, fixture, fixtureInfo.integrity, store], { cwd: path.dirname(file), env: { ...process.env, PATH: pathWithoutRust } })
      return JSON.parse(out.trim().split('\n').pop()!)
    }

    /** The package.json of the package holding the file at `url`. */
    function packageJsonOf (url: string): string {
      let dir = path.dirname(realpathSync(fileURLToPath(url)))
      while (!existsSync(path.join(dir, 'package.json'))) dir = path.dirname(dir)
      return path.join(dir, 'package.json')
    }

    function expectStockOutput (ours: any): void {
      // `@pnpm/worker` was @cas/pnpm-worker, and it ran natively: the platform package's addon is loaded.
      expect(JSON.parse(readFileSync(packageJsonOf(ours.resolved), 'utf8'))).toMatchObject({ name: '@cas/pnpm-worker', version: rootPkg.version })
      expect(ours.nativeAddons.map((f: string) => path.basename(f))).toEqual([binaryFile])
      expect(stock.nativeAddons).toEqual([])
      expect(ours.exports).toEqual(expect.arrayContaining(stock.exports))
      const { resolved: _r, nativeAddons: _n, exports: _e, ...rest } = ours
      const { resolved: _sr, nativeAddons: _sn, exports: _se, ...stockRest } = stock
      expect(rest).toEqual(stockRest)
      expect(rest.filesMap).toHaveLength(fixtureInfo.files)
    }

    it('npm ("overrides" in package.json), under Node 20 and 24: the same output as stock @pnpm/worker', async () => {
      const dir = project('npm-override', { overrides: { '@pnpm/worker': overrideSpec } })
      await runAsync(...npmCommand(['install', '--no-audit', '--no-fund', '--cache', path.join(dir, '.npm-cache'), '--registry', registry.url]), {
        cwd: dir,
        env: { ...process.env, PATH: pathWithoutRust },
      })
      for (const node of [node20, process.execPath]) expectStockOutput(runScript(node, path.join(dir, 'node_modules/uses-pnpm-worker/uses-pnpm-worker.mjs')))
    })

    it('TypeScript (README): the typings compile with moduleResolution node16 and @types/node; node10 cannot find the subpaths', () => {
      const dir = path.join(tmp, 'npm-override')
      writeFileSync(path.join(dir, 'uses.ts'), [
        "import * as cas from '@cas/native'",
        "import * as worker from '@cas/native/worker'",
        "import * as pnpmWorker from '@pnpm/worker'",
        "const extracted: Promise<cas.AddFilesFromTarballResult> = cas.addFilesFromTarball({ buffer: Buffer.alloc(0), storeDir: '/s', filesIndexFile: 'k' })",
        'const max: number = pnpmWorker.calcMaxWorkers()',
        'void extracted; void max; void worker.finishWorkers()',
        '',
      ].join('\n'))
      const tsc = (resolution: string[]) => spawnSync(process.execPath, [tscCli, '--noEmit', '--strict', ...resolution,
        '--types', 'node', '--typeRoots', path.join(repo, 'node_modules/@types'), 'uses.ts'], { cwd: dir, encoding: 'utf8' })
      for (const settings of [['--module', 'node16'], ['--module', 'nodenext'], ['--module', 'preserve', '--moduleResolution', 'bundler']]) {
        const r = tsc(settings)
        expect({ settings, status: r.status, out: r.stdout }).toEqual({ settings, status: 0, out: '' })
      }
      const old = tsc(['--module', 'commonjs', '--moduleResolution', 'node10'])
      expect(old.stdout).toContain("error TS2307: Cannot find module '@cas/native/worker'")
      expect(old.stdout).not.toContain("'@cas/native'")
    })

    it('pnpm 11 ("overrides" in pnpm-workspace.yaml): the same output as stock @pnpm/worker', async () => {
      const dir = project('pnpm-override', {})
      writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), `overrides:\n  '@pnpm/worker': '${overrideSpec}'\n`)
      const home = path.join(tmp, 'pnpm-home')
      const env: Record<string, string> = { PATH: `${path.dirname(process.execPath)}${path.delimiter}${pathWithoutRust}`, TMPDIR: os.tmpdir() }
      for (const [name, sub] of [['HOME', 'home'], ['XDG_CONFIG_HOME', 'config'], ['XDG_DATA_HOME', 'data'], ['XDG_CACHE_HOME', 'cache'], ['XDG_STATE_HOME', 'state']]) {
        env[name] = path.join(home, sub)
        mkdirSync(env[name], { recursive: true })
      }
      await runAsync(process.execPath, [path.join(repo, 'node_modules/pnpm/bin/pnpm.mjs'), 'install', `--config.registry=${registry.url}`,
        `--store-dir=${path.join(home, 'store')}`, '--config.update-notifier=false', '--reporter=append-only'], { cwd: dir, env })
      expectStockOutput(runScript(process.execPath, path.join(dir, 'node_modules/uses-pnpm-worker/uses-pnpm-worker.mjs')))
    })
  })
})
