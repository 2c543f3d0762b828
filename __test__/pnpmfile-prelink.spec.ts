/**
 * The plugin's head start with the real pnpm 11 CLI, on a generated project whose packages need
 * everything the head start leaves to pnpm: a package with an install script (pnpm must build
 * it), a package missing from the store (pnpm must fetch it, here from a registry stand-in on
 * 127.0.0.1), a macOS-only optional dependency (pnpm must skip it on Linux), plus plain packages
 * with a bin and a scoped name. The tree must be the one stock pnpm makes, and the trace must
 * show which packages were linked ahead and why the others were left to pnpm.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpmWorker from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { nodeModulesTree, nodePathWithThisPackage, pnpmInstall, projectFixture } from './helpers/pnpm-cli.js'
import { serveTarballs, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'

interface Generated { name: string, version: string, tarball: Buffer, integrity: string, key: string }

function pkg (name: string, manifest: Record<string, unknown>, files: Record<string, string> = {}): Generated {
  const version = '1.0.0'
  const tarball = tgz([
    { name: 'package/package.json', content: JSON.stringify({ name, version, ...manifest }) },
    ...Object.entries(files).map(([file, content]) => ({ name: `package/${file}`, content, mode: file.endsWith('.js') ? 0o755 : 0o644 })),
  ])
  const integrity = `sha512-${crypto.createHash('sha512').update(tarball).digest('base64')}`
  return { name, version, tarball, integrity, key: `${integrity}\t${name}@${version}` }
}

const leaf = pkg('@gen/leaf', { bin: { leaf: 'cli.js' } }, { 'cli.js': '#!/usr/bin/env node\n' })
// Its install script writes a file: present after the install only if pnpm ran the build.
const built = pkg('gen-built', { scripts: { install: 'node -e "require(\'fs\').writeFileSync(\'built.txt\', \'yes\')"' } })
const app = pkg('gen-app', { dependencies: { '@gen/leaf': '1.0.0', 'gen-built': '1.0.0' } })
const missing = pkg('gen-missing', {}, { 'index.js': 'module.exports = 1\n' })
const macOnly = pkg('gen-mac-only', { os: ['darwin'] })
const all = [app, built, leaf, macOnly, missing]
/** What the store holds before the install: everything but `gen-missing`. */
const stored = all.filter((p) => p !== missing)

// A peer a devDependency provides: `gen-tool`'s optional peer `gen-types`, which the project
// lists as a devDependency (as `vite`'s `@types/node`), with a dependency of its own.
const typesDep = pkg('gen-types-dep', {})
const types = pkg('gen-types', { dependencies: { 'gen-types-dep': '1.0.0' } })
const tool = pkg('gen-tool', { dependencies: { '@gen/leaf': '1.0.0' }, peerDependencies: { 'gen-types': '*' }, peerDependenciesMeta: { 'gen-types': { optional: true } } })
const peerProjectPackages = [leaf, tool, types, typesDep]

/** A lockfile's settings, and the plugin's pnpmfile's checksum when it has it. */
const lockfileHead = (pnpmfileChecksum?: string) => `lockfileVersion: '9.0'

settings:
  autoInstallPeers: true
  excludeLinksFromLockfile: false
${pnpmfileChecksum == null ? '' : `\npnpmfileChecksum: ${pnpmfileChecksum}\n`}`

const lockfile = (pnpmfileChecksum?: string) => `${lockfileHead(pnpmfileChecksum)}
importers:

  .:
    dependencies:
      gen-app:
        specifier: 1.0.0
        version: 1.0.0
      gen-missing:
        specifier: 1.0.0
        version: 1.0.0
    optionalDependencies:
      gen-mac-only:
        specifier: 1.0.0
        version: 1.0.0

packages:

  '@gen/leaf@1.0.0':
    resolution: {integrity: ${leaf.integrity}}
    hasBin: true

  gen-app@1.0.0:
    resolution: {integrity: ${app.integrity}}

  gen-built@1.0.0:
    resolution: {integrity: ${built.integrity}}

  gen-mac-only@1.0.0:
    resolution: {integrity: ${macOnly.integrity}}
    os: [darwin]

  gen-missing@1.0.0:
    resolution: {integrity: ${missing.integrity}}

snapshots:

  '@gen/leaf@1.0.0': {}

  gen-app@1.0.0:
    dependencies:
      '@gen/leaf': 1.0.0
      gen-built: 1.0.0

  gen-built@1.0.0: {}

  gen-mac-only@1.0.0:
    optional: true

  gen-missing@1.0.0: {}
`

let base: string
let registry: TarballRegistry
let nodePath: string
let reference: string[]
let referenceState: unknown

/** pnpm's `.modules.yaml` (JSON), without what names this run (paths, time). */
function modulesState (projectDir: string, storeDir: string): unknown {
  const text = fs.readFileSync(path.join(projectDir, 'node_modules', '.modules.yaml'), 'utf8')
  const state = JSON.parse(text.split(projectDir).join('<project>').split(storeDir).join('<store>'))
  delete state.prunedAt
  return state
}

/** As pnpm writes it: the optional peer resolved from the devDependency, in `gen-tool`'s snapshot's optionalDependencies. */
const peerLockfile = (pnpmfileChecksum?: string) => `${lockfileHead(pnpmfileChecksum)}
importers:

  .:
    dependencies:
      gen-tool:
        specifier: 1.0.0
        version: 1.0.0(gen-types@1.0.0)
    devDependencies:
      gen-types:
        specifier: 1.0.0
        version: 1.0.0

packages:

  '@gen/leaf@1.0.0':
    resolution: {integrity: ${leaf.integrity}}
    hasBin: true

  gen-tool@1.0.0:
    resolution: {integrity: ${tool.integrity}}
    peerDependencies:
      gen-types: '*'
    peerDependenciesMeta:
      gen-types:
        optional: true

  gen-types-dep@1.0.0:
    resolution: {integrity: ${typesDep.integrity}}

  gen-types@1.0.0:
    resolution: {integrity: ${types.integrity}}

snapshots:

  '@gen/leaf@1.0.0': {}

  gen-tool@1.0.0(gen-types@1.0.0):
    dependencies:
      '@gen/leaf': 1.0.0
    optionalDependencies:
      gen-types: 1.0.0

  gen-types-dep@1.0.0: {}

  gen-types@1.0.0:
    dependencies:
      gen-types-dep: 1.0.0
`

/** A generated project's dependencies, and its lockfile given the pnpmfile's checksum. */
interface Shape { dependencies: Record<string, Record<string, string>>, lockfile: (pnpmfileChecksum?: string) => string }
const GEN_PROJECT: Shape = { dependencies: { dependencies: { 'gen-app': '1.0.0', 'gen-missing': '1.0.0' }, optionalDependencies: { 'gen-mac-only': '1.0.0' } }, lockfile }
const PEER_PROJECT: Shape = { dependencies: { dependencies: { 'gen-tool': '1.0.0' }, devDependencies: { 'gen-types': '1.0.0' } }, lockfile: peerLockfile }

/** A new project dir; with the plugin's (guarded) pnpmfile and its checksum in the lockfile. */
function project (label: string, withPnpmfile: boolean, settings = '', shape = GEN_PROJECT): string {
  const dir = path.join(base, label)
  fs.mkdirSync(dir)
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'gen-project', version: '1.0.0', private: true, ...shape.dependencies }))
  fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), `minimumReleaseAge: 0\nallowBuilds:\n  gen-built: true\n${settings}`)
  let checksum: string | undefined
  if (withPnpmfile) {
    const pnpmfile = fs.readFileSync(path.join(projectFixture, 'with-pnpmfile', '.pnpmfile.cjs'))
    fs.writeFileSync(path.join(dir, '.pnpmfile.cjs'), pnpmfile)
    checksum = `sha256-${crypto.createHash('sha256').update(pnpmfile).digest('base64')}`
  }
  fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), shape.lockfile(checksum))
  return dir
}

/** A store (the dir pnpm's `--store-dir` takes) filled by @cas/native with `packages`. */
async function casStore (label: string, packages: Generated[] = stored): Promise<string> {
  const storeDir = path.join(base, label)
  for (const p of packages) {
    await cas.addFilesFromTarball({ buffer: p.tarball, storeDir: path.join(storeDir, 'v11'), filesIndexFile: p.key, integrity: p.integrity })
  }
  cas.closeStores()
  return storeDir
}

async function install (projectDir: string, storeDir: string, env: Record<string, string> = {}, extraArgs: string[] = []): Promise<string> {
  // The head start with the importer hook, the native install off (native-install.spec.ts has it).
  const plugin = env.NODE_PATH != null ? { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_IMPORTER: '1' } : {}
  const run = await pnpmInstall({ projectDir, storeDir, sandbox: `${projectDir}-sandbox`, registry: registry.url, env: { ...plugin, ...env }, extraArgs })
  expect(run.code, `pnpm failed:\n${run.stdout}\n${run.stderr}`).toBe(0)
  return run.stdout
}

beforeAll(async () => {
  base = freshDir('prelink-e2e')
  registry = await serveTarballs([...all, tool, types, typesDep])
  nodePath = nodePathWithThisPackage(path.join(base, 'node-path'))
  // The reference: pnpm's own worker fills the store, stock pnpm installs (and fetches gen-missing).
  const storeDir = path.join(base, 'pnpm-store')
  const index = new StoreIndex(path.join(storeDir, 'v11'))
  for (const p of stored) {
    await pnpmWorker.addFilesFromTarball({ buffer: p.tarball, storeDir: path.join(storeDir, 'v11'), filesIndexFile: p.key, integrity: p.integrity, storeIndex: index, url: p.name })
  }
  index.flush()
  index.close()
  await pnpmWorker.finishWorkers()
  const projectDir = project('reference', false)
  await install(projectDir, storeDir)
  reference = nodeModulesTree(projectDir, storeDir)
  referenceState = modulesState(projectDir, storeDir)
}, 120_000)

afterAll(async () => {
  await registry?.close()
  if (base != null) fs.rmSync(base, { recursive: true, force: true })
})

describe('the plugin\'s head start, with the pnpm 11 CLI', () => {
  it('the reference install built gen-built, fetched gen-missing, skipped gen-mac-only', () => {
    expect(reference).toContain('node_modules/.pnpm/gen-built@1.0.0/node_modules/gen-built/built.txt 644 ' +
      crypto.createHash('sha256').update('yes').digest('hex'))
    expect(reference).toContain('node_modules/gen-missing -> .pnpm/gen-missing@1.0.0/node_modules/gen-missing')
    expect(reference.some((l) => l.includes('gen-mac-only'))).toBe(false)
    expect(reference.some((l) => l.startsWith('node_modules/.pnpm/gen-app@1.0.0/node_modules/gen-app/node_modules/.bin/leaf'))).toBe(true)
  })

  it('links the plain packages ahead of pnpm, leaves the build and the missing package to it: the same node_modules', async () => {
    const storeDir = await casStore('cas-store')
    const projectDir = project('plugin', true)
    const traceFile = path.join(base, 'trace.txt')
    await install(projectDir, storeDir, { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile })
    expect(nodeModulesTree(projectDir, storeDir)).toEqual(reference)
    // pnpm's own record too: what it built, skipped and hoisted.
    expect(modulesState(projectDir, storeDir)).toEqual(referenceState)

    const trace = fs.readFileSync(traceFile, 'utf8').trim().split('\n')
    const dir = (p: Generated) => path.join(projectDir, 'node_modules', '.pnpm', `${p.name.replace('/', '+')}@1.0.0`, 'node_modules', p.name)
    expect(trace[0]).toMatch(/^prelink 2 linked, 3 left to pnpm, \d+ ms$/)
    expect(trace.filter((l) => l.startsWith('prelinked ')).sort()).toEqual([`prelinked ${dir(leaf)}`, `prelinked ${dir(app)}`].sort())
    expect(trace.filter((l) => l.startsWith('left '))).toEqual(['left requires-build gen-built@1.0.0', 'left not-in-store gen-missing@1.0.0', 'left pnpm-only gen-mac-only@1.0.0'])
    // pnpm installed what was left through the plugin's fetcher and importer.
    expect(trace).toContain(`fetch ${registry.url}gen-missing/-/gen-missing-1.0.0.tgz`)
    expect(trace.filter((l) => l.startsWith('import ')).map((l) => l.split(' ')[2]).sort()).toEqual([dir(built), dir(missing)].sort())
  })

  it('a lockfile behind package.json (a resolving install): left to pnpm, the same tree and lockfile as stock', async () => {
    // gen-app dropped from package.json; the lockfile still has it (and its dependencies). Both
    // installs resolve again (--no-frozen-lockfile) from stores holding every package.
    const dropApp = (projectDir: string) => {
      const manifest = JSON.parse(fs.readFileSync(path.join(projectDir, 'package.json'), 'utf8'))
      delete manifest.dependencies['gen-app']
      fs.writeFileSync(path.join(projectDir, 'package.json'), JSON.stringify(manifest))
      return projectDir
    }
    const stockStore = await casStore('stale-stock-store', all)
    const pluginStore = await casStore('stale-plugin-store', all)
    const stock = dropApp(project('stale-stock', false))
    await install(stock, stockStore, {}, ['--no-frozen-lockfile'])
    const withPlugin = dropApp(project('stale-plugin', true))
    const traceFile = path.join(base, 'trace-stale.txt')
    await install(withPlugin, pluginStore, { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile }, ['--no-frozen-lockfile'])
    // A resolving install links only what it finds new: the head start stays out of it.
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^prelink skipped: not a --frozen-lockfile install\n/)
    expect(nodeModulesTree(withPlugin, pluginStore)).toEqual(nodeModulesTree(stock, stockStore))
    expect(fs.existsSync(path.join(withPlugin, 'node_modules/.pnpm/gen-app@1.0.0'))).toBe(false)
    const lockfileOf = (dir: string) => fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8').replace(/\npnpmfileChecksum: .*\n/, '')
    expect(lockfileOf(withPlugin)).toBe(lockfileOf(stock))
  })

  it('a dependency added to package.json by hand, --frozen-lockfile: pnpm refuses, and node_modules is left as stock leaves it', async () => {
    const addDependency = (projectDir: string) => {
      const manifest = JSON.parse(fs.readFileSync(path.join(projectDir, 'package.json'), 'utf8'))
      manifest.dependencies['gen-leaf'] = '1.0.0'
      fs.writeFileSync(path.join(projectDir, 'package.json'), JSON.stringify(manifest))
      return projectDir
    }
    const stockStore = await casStore('outdated-stock-store', all)
    const pluginStore = await casStore('outdated-plugin-store', all)
    const stock = addDependency(project('outdated-stock', false))
    const stockRun = await pnpmInstall({ projectDir: stock, storeDir: stockStore, sandbox: `${stock}-sandbox`, registry: registry.url })
    const withPlugin = addDependency(project('outdated-plugin', true))
    const traceFile = path.join(base, 'trace-outdated.txt')
    const run = await pnpmInstall({ projectDir: withPlugin, storeDir: pluginStore, sandbox: `${withPlugin}-sandbox`, registry: registry.url, env: { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expect(stockRun.code).not.toBe(0)
    expect(stockRun.stdout + stockRun.stderr).toContain('ERR_PNPM_OUTDATED_LOCKFILE')
    expect(run.code).toBe(stockRun.code)
    expect(run.stdout + run.stderr).toContain('ERR_PNPM_OUTDATED_LOCKFILE')
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^prelink skipped: the lockfile is not up to date with \.'s package\.json \(gen-leaf: package\.json wants "1\.0\.0", the lockfile has undefined\): pnpm refuses a frozen install$/m)
    const entries = (dir: string) => fs.existsSync(path.join(dir, 'node_modules')) ? nodeModulesTree(dir, '') : []
    expect(entries(withPlugin)).toEqual(entries(stock))
  })

  it('hoist: false: pnpm would not relink packages found in place, so the head start stays out', async () => {
    const stockStore = await casStore('nohoist-stock-store')
    const pluginStore = await casStore('nohoist-plugin-store')
    const stock = project('nohoist-stock', false, 'hoist: false\n')
    await install(stock, stockStore)
    const withPlugin = project('nohoist-plugin', true, 'hoist: false\n')
    const traceFile = path.join(base, 'trace-nohoist.txt')
    await install(withPlugin, pluginStore, { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile })
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^prelink skipped: pnpm would not relink packages found in place/)
    expect(nodeModulesTree(withPlugin, pluginStore)).toEqual(nodeModulesTree(stock, stockStore))
    expect(fs.existsSync(path.join(stock, 'node_modules/.pnpm/node_modules'))).toBe(false)
  })

  it('--prod with an optional peer a devDependency provides: pnpm does not install it, and the head start does not lay it out', async () => {
    const stockStore = await casStore('prod-stock-store', peerProjectPackages)
    const pluginStore = await casStore('prod-plugin-store', peerProjectPackages)
    const stock = project('prod-stock', false, '', PEER_PROJECT)
    const stockOut = await install(stock, stockStore, {}, ['--prod'])
    const withPlugin = project('prod-plugin', true, '', PEER_PROJECT)
    const traceFile = path.join(base, 'trace-prod.txt')
    const out = await install(withPlugin, pluginStore, { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile }, ['--prod'])
    // Stock installs neither the peer nor its dependency; pnpm removes nothing the head start laid out.
    expect(fs.existsSync(path.join(stock, 'node_modules/.pnpm/gen-types@1.0.0'))).toBe(false)
    const summary = (text: string) => text.split('\n').find((l) => l.startsWith('Packages: '))
    expect(summary(stockOut)).toBe('Packages: +2')
    // (What the head start laid out pnpm does not count as added.)
    expect(summary(out)).toMatch(/^Packages: \+\d+$/)
    const trace = fs.readFileSync(traceFile, 'utf8')
    expect(trace).toMatch(/^prelink 1 linked, 1 left to pnpm, \d+ ms$/m)
    expect(trace).toContain('left pnpm-only gen-tool@1.0.0(gen-types@1.0.0)')
    expect(nodeModulesTree(withPlugin, pluginStore)).toEqual(nodeModulesTree(stock, stockStore))
    expect(modulesState(withPlugin, pluginStore)).toEqual(modulesState(stock, stockStore))
  })
})
