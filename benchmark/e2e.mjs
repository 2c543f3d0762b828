#!/usr/bin/env node
/**
 * End-to-end install benchmark (issue 5, point 3): the alotta-modules project (~1355 packages)
 * installed by real package-manager CLIs with `install --frozen-lockfile --offline` from a warm
 * store into a fresh `node_modules`:
 *
 *   pnpm11         — stock pnpm 11 (the `pnpm` devDependency), on Node 24;
 *   pnpm11+plugin  — the same with `.pnpmfile.cjs` = `module.exports = require('@cas/native/pnpmfile')`
 *                    (its importPackage hook does the linking; the lockfile carries the pnpmfile's
 *                    checksum, as pnpm writes it);
 *   pnpm11+worker  — a copy of the same pnpm package with `dist/worker/index.js` swapped for
 *                    `@cas/native/pnpm-worker` (`cas-native-pnpm swap`);
 *   pnpm11+both    — the swapped copy and the pnpmfile together (reads in the native worker,
 *                    imports batched by the hook);
 *   pnpm11+config  — what users get: the `@cas/pnpm-plugin-native` config dependency, packed by
 *                    `scripts/pack-plugin.mjs` and added as the README says (`pnpm add --config`,
 *                    `pnpm install`, untimed, in a project with no dependencies against a registry
 *                    stand-in serving the plugin and this machine's platform package); every timed
 *                    run is a fresh clone whose pnpm installs the plugin itself (from the store
 *                    when warm, from the stand-in when cold). No path, no NODE_PATH;
 *   pnpm12         — the `pnpm@12` npm package (pnpm's Rust CLI), for reference, installed into
 *                    benchmark/.work/pnpm12 with npm on first use;
 *   pacquet        — the `@pnpm/pacquet` binary alone (`pacquet install --frozen-lockfile`; the engine
 *                    `pnpm add --config @pnpm/pacquet` hands pnpm 11's installs to), for reference,
 *                    installed into benchmark/.work/pacquet with npm on first use; the store dir goes
 *                    into the project's pnpm-workspace.yaml (its CLI has no flag for it).
 *
 * The store is filled once per benchmark run, untimed, by `@cas/native` from the corpus
 * `node benchmark/download.mjs` fetched (all four read the same store: pnpm 11 and 12 share the
 * v11 layout). Every timed run installs into a new project directory (never one just deleted:
 * /work/shared/BENCHMARKING.md trap 1), with a private HOME/XDG, `--config.ignore-scripts=true`
 * for all; `sync` before each run. One untimed warm-up per variant, then `--rounds` rounds with
 * the order rotating. Timed: the CLI process, spawn to exit.
 *
 * Sanity checks (a failure exits non-zero and RESULTS.md is left alone): every run exits 0, and
 * every run's node_modules has the same entries in `node_modules/.pnpm` and the same direct
 * dependencies as stock pnpm 11's.
 *
 * `--cold`: the same installs into an empty store instead (a new one per run), every tarball
 * downloaded from a registry stand-in on 127.0.0.1 that serves the corpus from memory (no
 * network noise; pnpm 11 needs no metadata for a frozen lockfile with `minimumReleaseAge: 0`).
 * Its results go to a section of their own.
 *
 * `--project <name>`: a committed fixture instead of alotta-modules,
 * `__test__/fixtures/projects/<name>/` (the starter apps and the monorepos; their SOURCE.md say
 * where they come from), every project's package.json as the fixture has it,
 * with its own pnpm-workspace.yaml settings (plus `minimumReleaseAge: 0`; its `trustPolicy`
 * dropped, which an offline install cannot check; the root's `packageManager` dropped, so that
 * the pnpm being timed installs instead of the pinned one; `--without a,b` drops more settings,
 * e.g. unocss's `shamefullyHoist`, a layout the native install leaves to pnpm), from the real npm
 * tarballs this machine installs (`platformCorpus` in corpus.mjs, downloaded into
 * benchmark/.cache on first use). The config variant must have run its native install (its trace
 * says `native install:`), and `pnpm --version` is timed per pnpm variant too: the fixed cost
 * that bounds the ratio of a small install. Each project's results go to a section of their own.
 *
 * `--builds a,!b`: with scripts on and those packages' builds allowed (`allowBuilds`, instead of the
 * fixture's own; a `!` denies one), as a user who approved them: stock's untimed warm-up builds them and records
 * their side effects in the shared store, which every later install, stock's or the plugin's,
 * imports instead of building again (pnpm 11's side-effects cache); the config variant must run
 * natively from that cache. The projects' own lifecycle scripts are dropped from every manifest
 * (their sources are not in the fixtures). The project's settings that keep scripts from
 * running elsewhere stay. pnpm 12 and pacquet build their own way: pnpm 11's variants only.
 *
 * `--default-age`: the warm installs under pnpm 11's default `minimumReleaseAge` (a day) instead
 * of 0, online: before it installs a lockfile pnpm checks each package's age against its registry
 * metadata, which a stand-in on 127.0.0.1 serves for the corpus (abbreviated, last modified long
 * ago), and so does the plugin's native install in its place. pnpm 11's variants only: pnpm 12
 * and pacquet check ages their own way, against metadata the stand-in does not serve. A section
 * of its own too.
 *
 * `--pnpm <version>`: another pnpm 11 release in place of the devDependency (fetched into
 * .tools/pnpm-versions), as a project pinning it runs; not the swapped worker's variants (the
 * worker swapped is 11.28.11's). A section of its own.
 *
 * Usage: node benchmark/e2e.mjs [--pnpm <version>] [--project <name> [--without a,b] [--builds a,b]] [--cold | --default-age] [--rounds N] [--only a,b] [--no-write] [--keep]
 */
import { execFile, execFileSync, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import http from 'node:http'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { parseArgs, promisify } from 'node:util'
import { fetchPnpm } from '../scripts/pnpm-versions.mjs'
import { benchmarkDir, cores, endRun, fmt, loadCorpus, loadLine, machineLine, median, platformCorpus, printReport, sandboxEnv as privateEnv, writeResultsSection } from './corpus.mjs'

const repoDir = dirname(benchmarkDir)
const { values: opts } = parseArgs({
  allowNegative: true,
  options: {
    rounds: { type: 'string', default: '5' },
    cold: { type: 'boolean', default: false },
    'default-age': { type: 'boolean', default: false },
    project: { type: 'string' },
    without: { type: 'string' },
    builds: { type: 'string' },
    only: { type: 'string' },
    write: { type: 'boolean', default: true },
    keep: { type: 'boolean', default: false },
    pnpm: { type: 'string' },
  },
})
const rounds = Number.parseInt(opts.rounds, 10)
const defaultAge = opts['default-age']
const builds = opts.builds?.split(',').filter(Boolean)
if (builds != null && (opts.project == null || opts.cold || defaultAge)) throw new Error('--builds is for a warm install of a --project')
if (defaultAge && opts.cold) throw new Error('--default-age is a warm-store benchmark: not with --cold')
if (!(rounds >= 1)) throw new Error(`--rounds must be a positive integer, got ${opts.rounds}`)
const ALL = ['pnpm11', 'pnpm11+plugin', 'pnpm11+worker', 'pnpm11+both', 'pnpm11+config', 'pnpm12', 'pacquet']
// pnpm 12 and pacquet check release ages their own way, against metadata the stand-in does not serve.
const OURS = ALL.filter((v) => v.startsWith('pnpm11'))
// Another pnpm 11 release: the swapped worker is 11.28.11's.
const SWAPPED = ['pnpm11+worker', 'pnpm11+both']
const allowed = (opts['default-age'] || opts.builds != null ? OURS : ALL).filter((v) => opts.pnpm == null || !SWAPPED.includes(v))
const variants = opts.only == null ? allowed : opts.only.split(',')
for (const v of variants) if (!allowed.includes(v)) throw new Error(`unknown variant ${v}; one of ${allowed.join(', ')}`)
const log = (...a) => console.error(...a)

const project = opts.project ?? 'alotta-modules'
const fixtureDir = opts.project == null ? join(benchmarkDir, 'fixtures', 'alotta-modules') : join(repoDir, '__test__', 'fixtures', 'projects', opts.project)
if (!existsSync(join(fixtureDir, 'pnpm-lock.yaml'))) throw new Error(`--project ${opts.project}: no ${relative(process.cwd(), join(fixtureDir, 'pnpm-lock.yaml'))}`)
const workDir = join(benchmarkDir, '.work')
const runDir = join(workDir, `e2e-${process.pid}`)
mkdirSync(runDir, { recursive: true })
const node24 = join(repoDir, 'node_modules', 'node', 'bin', 'node')
// A snapshot of this package (loader, dist/, the built .node) that every variant loads, so that a
// rebuild in the checkout during the run cannot break or change a variant midway.
const casDir = join(runDir, 'cas-native')
mkdirSync(casDir)
for (const f of readdirSync(repoDir).filter((n) => n.endsWith('.node') || ['package.json', 'index.js', 'index.d.ts', 'dist'].includes(n))) {
  cpSync(join(repoDir, f), join(casDir, f), { recursive: true })
}
// `--pnpm <version>`: that pnpm 11 release (fetched into .tools/pnpm-versions), as a project pinning it runs.
const pnpm11Dir = opts.pnpm != null ? fetchPnpm(opts.pnpm) : join(repoDir, 'node_modules', 'pnpm')
const pnpm11Version = JSON.parse(readFileSync(join(pnpm11Dir, 'package.json'), 'utf8')).version

// --- the references installed with npm -------------------------------------------------------
/** `spec`'s `bin` from a private install under benchmark/.work/`dir`, made with npm on first use. */
function ensureNpmBin (dir, spec, bin) {
  const at = join(workDir, dir)
  const file = join(at, 'node_modules', '.bin', bin)
  if (!existsSync(file)) {
    mkdirSync(at, { recursive: true })
    writeFileSync(join(at, 'package.json'), '{"private":true}\n')
    log(`installing ${spec} into ${relative(process.cwd(), at)}`)
    execFileSync('npm', ['install', '--no-audit', '--no-fund', spec], { cwd: at, stdio: 'inherit' })
  }
  return file
}
const PNPM12 = '12.21.0'
const PACQUET = '0.11.11'

// --- the swapped pnpm 11 copy --------------------------------------------------------------
const { swapPnpmWorker } = await import(join(casDir, 'dist', 'pnpm-worker', 'swap.js'))
let swappedDir
function swappedPnpm11 () {
  if (swappedDir != null) return swappedDir
  swappedDir = join(runDir, 'pnpm-swapped')
  cpSync(pnpm11Dir, swappedDir, { recursive: true })
  swapPnpmWorker(swappedDir)
  return swappedDir
}

// --- the project ----------------------------------------------------------------------------
const PNPMFILE = "module.exports = require('@cas/native/pnpmfile')\n"
const pnpmfileChecksum = `sha256-${crypto.createHash('sha256').update(PNPMFILE).digest('base64')}`
const lockfile = readFileSync(join(fixtureDir, 'pnpm-lock.yaml'), 'utf8')
// What pnpm writes once a pnpmfile is in place (a frozen install checks it).
const lockfileWithPnpmfile = lockfile.replace('\nimporters:\n', `\npnpmfileChecksum: ${pnpmfileChecksum}\n\nimporters:\n`)
// The fixture's storeDir line is replaced by --store-dir; minimumReleaseAge 0: offline from the store alone.
// A project without a pnpm-workspace.yaml gets one with only that setting.
const fixtureWorkspace = existsSync(join(fixtureDir, 'pnpm-workspace.yaml')) ? readFileSync(join(fixtureDir, 'pnpm-workspace.yaml'), 'utf8') : ''
// A fixture's own settings go (their lists and maps too): its store, its age limit, what cannot run offline, and --without.
const dropped = ['storeDir', 'minimumReleaseAge', ...(opts.project == null ? [] : ['trustPolicy', ...(opts.without?.split(',') ?? [])]), ...(builds == null ? [] : ['allowBuilds'])]
const withoutSettings = (text) => text.replace(/^([A-Za-z]+):.*\n(?:[ \t]+.*\n|[ \t]*\n)*/gm, (block, key) => (dropped.includes(key) ? '' : block))
const workspaceYaml = withoutSettings(fixtureWorkspace.endsWith('\n') || fixtureWorkspace === '' ? fixtureWorkspace : `${fixtureWorkspace}\n`) + (defaultAge ? '' : '\nminimumReleaseAge: 0\n') +
  (builds == null ? '' : `\nallowBuilds:\n${builds.map((name) => name.startsWith('!') ? `  ${JSON.stringify(name.slice(1))}: false\n` : `  ${JSON.stringify(name)}: true\n`).join('')}`)
/** A project's own lifecycle scripts, dropped with --builds (the fixtures have no sources to run them on). */
const LIFECYCLE = ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare', 'prepublish']
function withoutLifecycle (manifest) {
  if (builds == null || manifest.scripts == null) return manifest
  return { ...manifest, scripts: Object.fromEntries(Object.entries(manifest.scripts).filter(([name]) => !LIFECYCLE.includes(name))) }
}
/** Every project's package.json below the fixture (the root's without `packageManager`, so that the pnpm timed installs). */
const manifests = readdirSync(fixtureDir, { recursive: true, encoding: 'utf8' }).filter((f) => f.split(/[\\/]/).at(-1) === 'package.json').map((file) => {
  const text = readFileSync(join(fixtureDir, file), 'utf8')
  if ((file !== 'package.json' || opts.project == null) && builds == null) return { file, text }
  const { packageManager: _, ...root } = JSON.parse(text)
  return { file, text: JSON.stringify(withoutLifecycle(file === 'package.json' ? root : JSON.parse(text)), null, 2) }
})
/** The patch files the fixture's patchedDependencies name (its `patches/` folder), as they are. */
const patchFiles = existsSync(join(fixtureDir, 'patches')) ? readdirSync(join(fixtureDir, 'patches')).map((f) => ({ file: join('patches', f), text: readFileSync(join(fixtureDir, 'patches', f), 'utf8') })) : []
let projectCounter = 0
const usesPlugin = (variant) => variant === 'pnpm11+plugin' || variant === 'pnpm11+both'
function newProject (variant) {
  const dir = join(runDir, 'projects', `${variant.replace('+', '-')}-${projectCounter++}`)
  for (const { file, text } of [...manifests, ...patchFiles]) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), text)
  }
  writeFileSync(join(dir, 'pnpm-workspace.yaml'), workspaceYaml)
  if (usesPlugin(variant)) {
    writeFileSync(join(dir, '.pnpmfile.cjs'), PNPMFILE)
    writeFileSync(join(dir, 'pnpm-lock.yaml'), lockfileWithPnpmfile)
  } else if (variant === 'pnpm11+config') {
    writeFileSync(join(dir, 'pnpm-workspace.yaml'), workspaceYaml + configPlugin.workspaceYaml)
    writeFileSync(join(dir, 'pnpm-lock.yaml'), configPlugin.lockfile)
  } else {
    writeFileSync(join(dir, 'pnpm-lock.yaml'), lockfile)
  }
  return dir
}
// `require('@cas/native/pnpmfile')` from the project resolves to the snapshot.
const nodePath = join(runDir, 'node-path')
mkdirSync(join(nodePath, '@cas'), { recursive: true })
symlinkSync(casDir, join(nodePath, '@cas', 'native'), 'dir')

/** The plugin and this machine's platform package, packed once per run by scripts/pack-plugin.mjs. */
let packedPlugin
function pluginPackages () {
  if (!variants.includes('pnpm11+config')) return []
  if (packedPlugin != null) return packedPlugin
  const dir = join(runDir, 'plugin-pack')
  execFileSync(process.execPath, [join(repoDir, 'scripts', 'pack-plugin.mjs'), dir], { stdio: ['ignore', 'ignore', 'inherit'] })
  packedPlugin = readdirSync(dir).map((file) => {
    const buffer = readFileSync(join(dir, file))
    const manifest = JSON.parse(execFileSync('tar', ['-xzOf', join(dir, file), 'package/package.json'], { encoding: 'utf8' }))
    return {
      name: manifest.name,
      version: manifest.version,
      manifest,
      buffer,
      integrity: `sha512-${crypto.createHash('sha512').update(buffer).digest('base64')}`,
      url: `http://registry.invalid/${manifest.name}/-/${manifest.name.split('/').pop()}-${manifest.version}.tgz`,
    }
  })
  return packedPlugin
}

// --- the store ----------------------------------------------------------------------------
const corpus = loadCorpus(opts.project == null ? undefined : (await platformCorpus(fixtureDir, opts.project, join(casDir, 'dist'))).dir)
const storeDir = join(runDir, 'store')
let registry = 'http://127.0.0.1:9/' // nothing listens: a warm install must not need it
if (defaultAge) {
  registry = await serveCorpus([], corpusMetadata(corpus))
  log(`serving the metadata of ${corpus.length} packages at ${registry}`)
}
if (opts.cold) {
  registry = await serveCorpus(corpus)
  log(`serving ${corpus.length} tarballs at ${registry}`)
} else {
  const cas = await import(join(casDir, 'dist', 'api', 'index.js'))
  log(`filling the store with ${corpus.length} tarballs (@cas/native, untimed)`)
  await Promise.all(corpus.map((t) => cas.addFilesFromTarball({ buffer: t.buffer, storeDir: join(storeDir, 'v11'), filesIndexFile: t.key, integrity: t.integrity, url: t.url })))
  cas.closeStores()
  corpus.length = 0 // the tarballs are in the store now: not held through the timed installs
}

/**
 * The README's setup of the config-dependency plugin, untimed: `pnpm add --config` and
 * `pnpm install` in a project with no dependencies (the plugin's lockfile document and
 * `pnpmfileChecksum` do not depend on the project's packages, and resolving alotta-modules would
 * need its metadata), then the two pnpm wrote into alotta-modules' lockfile, and its
 * `configDependencies` into pnpm-workspace.yaml: what a user commits after the two commands.
 */
async function setUpConfigPlugin () {
  const setupRegistry = opts.cold ? registry : await serveCorpus([])
  const dir = join(runDir, 'config-setup')
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), '{"name":"config-setup","version":"1.0.0","private":true}\n')
  writeFileSync(join(dir, 'pnpm-workspace.yaml'), 'minimumReleaseAge: 0\n')
  const store = opts.cold ? join(runDir, 'config-setup-store') : storeDir
  for (const command of [['add', '--config', '@cas/pnpm-plugin-native'], ['install']]) {
    // Asynchronously: the stand-in answers from this process.
    await promisify(execFile)(node24, [join(pnpm11Dir, 'bin', 'pnpm.mjs'), ...command, `--store-dir=${store}`, `--config.registry=${setupRegistry}`, '--config.update-notifier=false'],
      { cwd: dir, env: sandboxEnv('pnpm11+config') })
  }
  const written = readFileSync(join(dir, 'pnpm-lock.yaml'), 'utf8')
  const envDocument = written.slice(0, written.indexOf('\n---\n', 4) + '\n---\n'.length)
  const checksum = /\npnpmfileChecksum: (\S+)/.exec(written)?.[1]
  const configDependencies = /^configDependencies:\n(?: {2}.*\n)+/m.exec(readFileSync(join(dir, 'pnpm-workspace.yaml'), 'utf8'))?.[0]
  if (!envDocument.includes('@cas/pnpm-plugin-native@') || checksum == null || configDependencies == null) {
    throw new Error(`pnpm did not record the plugin as expected:\n${written}`)
  }
  return {
    lockfile: envDocument + lockfile.replace('\nimporters:\n', `\npnpmfileChecksum: ${checksum}\n\nimporters:\n`),
    workspaceYaml: configDependencies,
  }
}

/**
 * The corpus's abbreviated metadata, by request path: each package's versions, last modified
 * long before any minimumReleaseAge (`--default-age`).
 */
function corpusMetadata (tarballs) {
  const byName = new Map()
  for (const t of tarballs) {
    const versions = byName.get(t.name) ?? {}
    versions[t.version] = { name: t.name, version: t.version, dist: { integrity: t.integrity } }
    byName.set(t.name, versions)
  }
  return new Map([...byName].map(([name, versions]) => [`/${name}`, JSON.stringify({ name, modified: '2020-01-01T00:00:00.000Z', versions })]))
}

/**
 * A registry stand-in: serves each tarball (from memory) at the path pnpm derives from the
 * registry URL, plus the metadata of the packed plugin packages (`pnpm add --config` resolves them)
 * and any other metadata given (request path → body).
 */
async function serveCorpus (tarballs, moreMetadata = new Map()) {
  const plugin = pluginPackages()
  const byPath = new Map([...tarballs, ...plugin].map((t) => [new URL(t.url).pathname, t.buffer]))
  // Set once the server listens (the metadata below is made per request).
  // eslint-disable-next-line prefer-const
  let url
  const metadata = new Map(plugin.map((p) => [`/${p.name}`, () => JSON.stringify({
    name: p.name,
    'dist-tags': { latest: p.version },
    versions: { [p.version]: { ...p.manifest, dist: { tarball: `${url}${new URL(p.url).pathname.slice(1)}`, integrity: p.integrity } } },
    time: { [p.version]: '2020-01-01T00:00:00.000Z' },
  })]))
  const server = http.createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname)
    const body = byPath.get(path) ?? metadata.get(path)?.() ?? moreMetadata.get(path)
    if (body == null) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(body) }).end(body)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  server.unref()
  url = `http://127.0.0.1:${server.address().port}/`
  return url
}

// --- running ---------------------------------------------------------------------------------
const commands = {}
for (const v of variants) {
  if (v === 'pnpm11' || v === 'pnpm11+plugin' || v === 'pnpm11+config') commands[v] = [node24, join(pnpm11Dir, 'bin', 'pnpm.mjs')]
  if (v === 'pnpm11+worker' || v === 'pnpm11+both') commands[v] = [node24, join(swappedPnpm11(), 'bin', 'pnpm.mjs')]
  if (v === 'pnpm12') commands[v] = [ensureNpmBin('pnpm12', `pnpm@${PNPM12}`, 'pnpm')]
  if (v === 'pacquet') commands[v] = [ensureNpmBin('pacquet', `@pnpm/pacquet@${PACQUET}`, 'pacquet')]
}
const configPlugin = variants.includes('pnpm11+config') ? await setUpConfigPlugin() : undefined
const pnpm12Version = variants.includes('pnpm12') ? execFileSync(commands.pnpm12[0], ['--version'], { encoding: 'utf8' }).trim() : undefined

function sandboxEnv (variant) {
  const env = privateEnv(join(runDir, 'home', variant.replace('+', '-')), dirname(node24))
  // @cas/native's switches (e.g. CAS_NATIVE_PNPM_WORKER_TRACE, CAS_NATIVE_PNPMFILE_IMPORTER) reach the CLI too.
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith('CAS_NATIVE_')) env[k] = v
  if (usesPlugin(variant)) env.NODE_PATH = nodePath
  return env
}

function install (variant, extraEnv = {}) {
  const projectDir = newProject(variant)
  const [cmd, ...pre] = commands[variant]
  // Cold: a new, empty store for every run.
  const store = opts.cold ? join(runDir, 'stores', `${projectCounter}`) : storeDir
  const offline = opts.cold || defaultAge ? [] : ['--offline']
  let args = [...pre, 'install', '--frozen-lockfile', ...offline, `--store-dir=${store}`,
    ...(builds == null ? ['--config.ignore-scripts=true'] : []), '--config.update-notifier=false', `--config.registry=${registry}`, '--reporter=append-only']
  if (variant === 'pacquet') {
    writeFileSync(join(projectDir, 'pnpm-workspace.yaml'), `${workspaceYaml}storeDir: ${store}\nregistry: ${registry}\n`)
    args = ['install', '--frozen-lockfile', ...offline, '--ignore-scripts', '--reporter=append-only']
  }
  execFileSync('sync')
  return new Promise((resolve) => {
    const env = { ...sandboxEnv(variant), ...extraEnv } // makes directories: outside the timed window
    const start = process.hrtime.bigint()
    const spawnedAt = Date.now()
    const child = spawn(cmd, args, { cwd: projectDir, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => { output += d })
    child.stderr.on('data', (d) => { output += d })
    child.on('close', (code) => {
      // With a worker trace on, the spawn and exit times (epoch ms) to line the trace up with.
      if (process.env.CAS_NATIVE_PNPM_WORKER_TRACE) log(`${variant}: spawned ${spawnedAt}, exited ${Date.now()}`)
      resolve({ ms: Number(process.hrtime.bigint() - start) / 1e6, code, output, projectDir })
    })
  })
}

/**
 * What must match stock pnpm 11's install: the virtual store's entries and the direct
 * dependencies. pacquet 0.11 names the virtual-store directories of packages with peers the way
 * older pnpm did: for it, only how many there are.
 */
function shape (projectDir, variant) {
  const list = (d) => existsSync(d) ? readdirSync(d).filter((n) => !n.startsWith('.')).sort() : []
  const pnpmDir = join(projectDir, 'node_modules', '.pnpm')
  const virtualStore = list(pnpmDir).filter((n) => n !== 'node_modules' && n !== 'lock.yaml')
  return { virtualStore: variant === 'pacquet' ? virtualStore.length : virtualStore, direct: list(join(projectDir, 'node_modules')) }
}
const sameShape = (s, variant) => JSON.stringify(s) === JSON.stringify(variant === 'pacquet' ? { ...reference, virtualStore: reference.virtualStore.length } : reference)

const loadBefore = loadLine(' / ')
const failures = []
const times = Object.fromEntries(variants.map((v) => [v, []]))
let reference
for (const v of variants) {
  // The config-dependency plugin's warm-up is traced: it must have been active, not inactive.
  const trace = join(runDir, `trace-${v.replace('+', '-')}.txt`)
  const r = await install(v, v === 'pnpm11+config' ? { CAS_NATIVE_PNPMFILE_TRACE: trace } : {})
  log(`warm-up ${v}: ${r.ms.toFixed(0)} ms, exit ${r.code}`)
  if (r.code !== 0) failures.push(`${v} warm-up exited ${r.code}: ${r.output.slice(-2000)}`)
  if (v === 'pnpm11+config') {
    const lines = existsSync(trace) ? readFileSync(trace, 'utf8').split('\n') : []
    const text = lines.join('\n')
    const native = /^native install: (\d+) packages/m.exec(text)?.[1]
    const did = opts.cold ? lines.filter((l) => l.startsWith('fetch ')).length : Number(native ?? /^prelink (\d+) linked/m.exec(text)?.[1] ?? 0)
    log(`warm-up ${v}: the plugin ${opts.cold ? 'fetched' : native != null ? 'installed natively' : 'linked ahead'} ${did} packages${native == null && !opts.cold ? ` (${/^native install skipped: .*$/m.exec(text)?.[0] ?? 'no native install'})` : ''}`)
    if (did === 0) failures.push(`${v}: the plugin did nothing (trace ${trace}): ${r.output.slice(-2000)}`)
    // A starter app is what the native install is for: a head start instead is a failure here.
    else if (opts.project != null && !opts.cold && native == null) failures.push(`${v}: no \`native install:\` in the plugin's trace (${trace}): ${/^native install skipped: .*$/m.exec(text)?.[0] ?? text.slice(0, 2000)}`)
  }
  const s = shape(r.projectDir, v)
  reference ??= s
  if (!sameShape(s, v)) failures.push(`${v}: node_modules differs from ${variants[0]}'s`)
}
if (failures.length === 0) {
  for (let round = 0; round < rounds; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length])
    for (const v of order) {
      const r = await install(v)
      if (r.code !== 0) failures.push(`${v} round ${round} exited ${r.code}: ${r.output.slice(-3000)}`)
      else if (!sameShape(shape(r.projectDir, v), v)) failures.push(`${v} round ${round}: node_modules differs`)
      times[v].push(r.ms)
      log(`round ${round + 1}/${rounds} ${v}: ${r.ms.toFixed(0)} ms`)
    }
  }
}

/**
 * `pnpm --version` per pnpm CLI variant, rounds interleaved: the CLI's fixed start-up (Node and
 * the bundle for pnpm 11), which every install pays before any work (the config variant runs the
 * same CLI as stock; its plugin loads later, in the install).
 */
const versionTimes = {}
const versionVariants = opts.project == null ? [] : variants.filter((v) => v === 'pnpm11' || v === 'pnpm12')
if (failures.length === 0) {
  for (let round = 0; round < rounds; round++) {
    for (const v of versionVariants) {
      const [cmd, ...pre] = commands[v]
      const env = sandboxEnv(v)
      const start = process.hrtime.bigint()
      execFileSync(cmd, [...pre, '--version'], { env, cwd: runDir, stdio: 'ignore' })
      ;(versionTimes[v] ??= []).push(Number(process.hrtime.bigint() - start) / 1e6)
    }
  }
}

// --- report ------------------------------------------------------------------------------------
const machine = machineLine()
const labels = {
  pnpm11: `pnpm ${pnpm11Version} (stock)`,
  'pnpm11+plugin': `pnpm ${pnpm11Version} + \`@cas/native/pnpmfile\``,
  'pnpm11+worker': `pnpm ${pnpm11Version} + swapped \`@cas/native/pnpm-worker\``,
  'pnpm11+both': `pnpm ${pnpm11Version} + swapped worker + pnpmfile`,
  'pnpm11+config': `pnpm ${pnpm11Version} + \`@cas/pnpm-plugin-native\` (config dependency, as users install it)`,
  pnpm12: `pnpm ${pnpm12Version} (Rust CLI)`,
  pacquet: `\`@pnpm/pacquet\` ${PACQUET} binary alone`,
}
const lines = []
const out = (s = '') => lines.push(s)
if (failures.length === 0) {
  const base = median(times[variants[0]])
  out(`${project}: ${opts.cold ? 'cold' : 'warm'} store, fresh \`node_modules\`, ${reference.virtualStore.length} packages in \`node_modules/.pnpm\`; ${rounds} rounds, order rotating:`)
  out()
  out(`| | wall ms, median (min–max) | ${variants[0]} median / this median | per round: ${variants[0]} / this, median (min–max) |`)
  out('|---|---:|---:|---:|')
  for (const v of variants) {
    const t = times[v]
    // Each round ran every variant once, back to back: its ratio shares that round's load.
    const ratios = t.map((ms, round) => times[variants[0]][round] / ms)
    out(`| ${labels[v]} | ${fmt(median(t))} (${fmt(Math.min(...t))}–${fmt(Math.max(...t))}) | ${(base / median(t)).toFixed(2)}x | ` +
      `${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}) |`)
  }
  if (times.pnpm12?.length) {
    out()
    for (const v of ['pnpm11+plugin', 'pnpm11+worker', 'pnpm11+both', 'pnpm11+config'].filter((x) => times[x]?.length)) {
      out(`- ${labels[v]} vs pnpm 12: ${(median(times.pnpm12) / median(times[v])).toFixed(2)}x (above 1: faster than pnpm 12)`)
    }
  }
  out()
  out('Per round, ' + variants[0] + ' / this (rounds in order): ' +
    variants.slice(1).map((v) => `${v} ${times[v].map((ms, round) => (times[variants[0]][round] / ms).toFixed(2)).join(', ')}`).join('; ') + '.')
  if (versionVariants.length > 0) {
    out()
    out(`Fixed cost, \`pnpm --version\` (${rounds} rounds, interleaved), wall ms median (min–max): ` +
      versionVariants.map((v) => `${labels[v]} ${fmt(median(versionTimes[v]))} (${fmt(Math.min(...versionTimes[v]))}–${fmt(Math.max(...versionTimes[v]))})`).join('; ') + '.')
  }
}
out()
out(`Load average (1/5/15 min) before the timed runs: ${loadBefore}; after: ${loadLine(' / ')} (on ${cores} cores: above that, other processes were competing).`)
const report = printReport(machine, lines, failures)

// A project's section names its variants (--only), so it is written with them too.
if (opts.write && (opts.only == null || opts.project != null) && failures.length === 0) {
  const flag = (opts.pnpm == null ? '' : ` --pnpm ${opts.pnpm}`) + (opts.project == null ? '' : ` --project ${opts.project}${opts.without == null ? '' : ` --without ${opts.without}`}${builds == null ? '' : ` --builds ${builds.join(',')}`}`) + (opts.cold ? ' --cold' : defaultAge ? ' --default-age' : '')
  const under = opts.pnpm == null ? '' : `, pnpm ${opts.pnpm}`
  const command = `node benchmark/e2e.mjs${flag}${opts.only == null ? '' : ` --only ${opts.only}`} --rounds ${rounds}`
  const resultsPath = writeResultsSection(`e2e.mjs${flag}`, [
    opts.cold
      ? `## End to end: \`pnpm install --frozen-lockfile\`, cold store (tarballs from a local registry stand-in), fresh node_modules${under}`
      : defaultAge
        ? `## End to end: \`pnpm install --frozen-lockfile\`, warm store, pnpm's default minimumReleaseAge (metadata from a local registry stand-in), fresh node_modules${under}`
        : `## End to end: \`pnpm install --frozen-lockfile --offline\`, warm store, fresh node_modules${opts.project == null ? '' : `: ${opts.project}`}${under}`,
    '',
    `- Date: ${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    `- Machine: **${machine}**; shared and noisy: compare the side-by-side ratios, not absolute times`,
    `- Command: \`${command}\``,
    `- Timed: the CLI process from spawn to exit (pnpm 11 on Node 24), installing the ${project} lockfile into a new project dir ` +
      (opts.cold
        ? 'and a new, empty store, every tarball fetched from an HTTP server on 127.0.0.1 serving the corpus from memory; '
        : 'from a store @cas/native filled beforehand (untimed); ') +
      (builds == null ? '`--config.ignore-scripts=true`' : `scripts on, \`allowBuilds\` ${builds.join(', ')} (their side effects recorded by stock's untimed warm-up), the projects' own lifecycle scripts dropped`) + ', private HOME' + (opts.cold ? '.' : defaultAge ? ', every package\'s metadata from an HTTP server on 127.0.0.1 (last modified in 2020).' : ', unreachable registry.'),
    '',
    report,
  ])
  log(`wrote ${relative(process.cwd(), resultsPath)}`)
}
endRun(runDir, { keep: opts.keep, failures, log })
