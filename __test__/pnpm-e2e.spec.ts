/**
 * End to end with the real pnpm 11 CLI (the `pnpm` devDependency, on Node 24), no network:
 * `pnpm install --frozen-lockfile --offline` of the committed fixture project
 * (`fixtures/e2e-project`, every tarball committed) must give the same `node_modules` from a store
 * `@cas/native` filled as stock pnpm gives from a store pnpm's own worker filled — with stock
 * pnpm, with the `@cas/native/pnpmfile` plugin, and with pnpm's worker swapped for
 * `@cas/native/pnpm-worker`. Plus the plugin's fetcher against a registry on 127.0.0.1.
 *
 * Compared: every path under node_modules, its type, permission bits, content (SHA-256, with the
 * project and store paths in `.bin` shims replaced by placeholders) and symlink text. Left out:
 * `node_modules/.modules.yaml` and `node_modules/.pnpm-workspace-state-v1.json` (pnpm's state:
 * absolute store/project paths, timestamps, run settings).
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpmWorker from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import { BACKUP_NAME } from '../dist/pnpm-worker/swap.js'
import { copyProject, lockedPackages, pnpmNode, nodePathWithThisPackage, nodeModulesTree, pnpmInstall, pnpmPackageDir, repoDir, type PnpmRun } from './helpers/pnpm-cli.js'
import { serveTarballs, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'

const packages = lockedPackages()
let base: string
let nodePath: string
let reference: string[]

function expectOk (run: PnpmRun): void {
  expect(run.code, `pnpm failed:\n${run.stdout}\n${run.stderr}`).toBe(0)
}

/** The install in `projectDir` is the reference one: same tree, and pnpm's lockfile copy is the project's lockfile. */
function expectSameInstall (projectDir: string, storeDir: string): void {
  expect(nodeModulesTree(projectDir, storeDir)).toEqual(reference)
  expect(fs.readFileSync(path.join(projectDir, 'node_modules', '.pnpm', 'lock.yaml'), 'utf8'))
    .toBe(fs.readFileSync(path.join(projectDir, 'pnpm-lock.yaml'), 'utf8'))
}

/** A store (the dir pnpm's `--store-dir` takes) filled by @cas/native from the committed tarballs. */
async function casFilledStore (label: string): Promise<string> {
  const storeDir = path.join(base, label)
  for (const p of packages) {
    await cas.addFilesFromTarball({ buffer: fs.readFileSync(p.tarball), storeDir: path.join(storeDir, 'v11'), filesIndexFile: p.key, integrity: p.integrity })
  }
  cas.closeStores()
  return storeDir
}

beforeAll(async () => {
  base = freshDir('pnpm-e2e')
  nodePath = nodePathWithThisPackage(path.join(base, 'node-path'))
  // The reference: pnpm's own worker fills the store, stock pnpm installs from it.
  const storeDir = path.join(base, 'pnpm-store')
  const index = new StoreIndex(path.join(storeDir, 'v11'))
  for (const p of packages) {
    await pnpmWorker.addFilesFromTarball({ buffer: fs.readFileSync(p.tarball), storeDir: path.join(storeDir, 'v11'), filesIndexFile: p.key, integrity: p.integrity, storeIndex: index, url: p.tarball })
  }
  index.flush()
  index.close()
  await pnpmWorker.finishWorkers()
  const projectDir = copyProject(path.join(base, 'reference'))
  expectOk(await pnpmInstall({ projectDir, storeDir, sandbox: path.join(base, 'sandbox-reference') }))
  reference = nodeModulesTree(projectDir, storeDir)
  expect(fs.readFileSync(path.join(projectDir, 'node_modules', '.pnpm', 'lock.yaml'), 'utf8'))
    .toBe(fs.readFileSync(path.join(projectDir, 'pnpm-lock.yaml'), 'utf8'))
}, 120_000)

afterAll(() => {
  if (base != null) fs.rmSync(base, { recursive: true, force: true })
})

describe('pnpm 11 CLI, --frozen-lockfile --offline', () => {
  it('the reference install has every locked package and its bins', () => {
    for (const p of packages) {
      const manifest = `node_modules/.pnpm/${p.name.replace('/', '+')}@${p.version}/node_modules/${p.name}/package.json 644 `
      expect(reference.some((l) => l.startsWith(manifest)), manifest).toBe(true)
    }
    expect(reference.some((l) => l.startsWith('node_modules/.bin/is-docker '))).toBe(true)
    expect(reference).toContain('node_modules/mkdirp -> .pnpm/mkdirp@0.5.6/node_modules/mkdirp')
  })

  it('(a) stock pnpm from a store @cas/native filled gives the same node_modules', async () => {
    const storeDir = await casFilledStore('cas-store-a')
    const projectDir = copyProject(path.join(base, 'a'))
    expectOk(await pnpmInstall({ projectDir, storeDir, sandbox: path.join(base, 'sandbox-a') }))
    expectSameInstall(projectDir, storeDir)
  })

  /** The plugin's install of a fresh copy of the project: the trace's lines, after checking the tree. */
  async function pluginInstall (label: string, env: Record<string, string> = {}): Promise<{ projectDir: string, trace: string[] }> {
    const storeDir = await casFilledStore(`cas-store-${label}`)
    // The project's .pnpmfile.cjs is the one line users write: module.exports = require('@cas/native/pnpmfile')
    const projectDir = copyProject(path.join(base, label), { withPnpmfile: true })
    const traceFile = path.join(base, `trace-${label}.txt`)
    const run = await pnpmInstall({
      projectDir,
      storeDir,
      sandbox: path.join(base, `sandbox-${label}`),
      // The head start and the importer hook (native-install.spec.ts has the native install).
      env: { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile, CAS_NATIVE_PACKAGE_IMPORT_METHOD: 'copy', CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_IMPORTER: '1', ...env },
    })
    expectOk(run)
    expectSameInstall(projectDir, storeDir)
    // Copies, not links into the store: the plugin's method, not pnpm's.
    expect(fs.statSync(path.join(projectDir, 'node_modules', 'is-docker', 'cli.js')).nlink).toBe(1)
    return { projectDir, trace: fs.readFileSync(traceFile, 'utf8').trim().split('\n') }
  }

  const packageDirs = (projectDir: string): string[] =>
    packages.map((p) => path.join(projectDir, 'node_modules', '.pnpm', `${p.name.replace('/', '+')}@${p.version}`, 'node_modules', p.name)).sort()
  const traced = (trace: string[], prefix: string): string[] => trace.filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length))

  it('(b) with the @cas/native/pnpmfile plugin: the virtual store linked ahead of pnpm, the rest by the hook, same node_modules', async () => {
    const { projectDir, trace } = await pluginInstall('b')
    const prelinked = traced(trace, 'prelinked ')
    const imported = traced(trace, 'import copy ')
    // Each package exactly once: ahead of pnpm, or by pnpm through the importer hook.
    expect([...prelinked, ...imported].sort()).toEqual(packageDirs(projectDir))
    // All of this project's packages are plain ones (pnpmfile-prelink.spec.ts has the others).
    expect(traced(trace, 'left ')).toEqual([])
    expect(imported).toEqual([])
    expect(trace[0]).toMatch(new RegExp(`^prelink ${packages.length} linked, 0 left to pnpm, `))
  })

  it('(b) with the plugin\'s head start turned off: every package imported by the hook, same node_modules', async () => {
    const { projectDir, trace } = await pluginInstall('b2', { CAS_NATIVE_PNPMFILE_PRELINK: '0' })
    expect(traced(trace, 'prelink')).toEqual([])
    expect(traced(trace, 'import copy ').sort()).toEqual(packageDirs(projectDir))
  })

  it('(b) the same project on a fresh clone, before @cas/native is installed: the guarded pnpmfile lets stock pnpm install', async () => {
    const storeDir = await casFilledStore('cas-store-b3')
    const projectDir = copyProject(path.join(base, 'b3'), { withPnpmfile: true })
    const traceFile = path.join(base, 'trace-b3.txt')
    // No NODE_PATH: require('@cas/native/pnpmfile') fails with MODULE_NOT_FOUND.
    const run = await pnpmInstall({ projectDir, storeDir, sandbox: path.join(base, 'sandbox-b3'), env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expectOk(run)
    expectSameInstall(projectDir, storeDir)
    expect(fs.existsSync(traceFile)).toBe(false)
  })

  it('(c) with pnpm\'s worker swapped for @cas/native/pnpm-worker (then swapped back): same node_modules', async () => {
    const storeDir = await casFilledStore('cas-store-c')
    const projectDir = copyProject(path.join(base, 'c'))
    // A copy of the pnpm package: a failing test cannot leave the repository's pnpm swapped.
    const pnpmDir = path.join(base, 'pnpm-copy')
    fs.cpSync(pnpmPackageDir, pnpmDir, { recursive: true })
    const workerJs = path.join(pnpmDir, 'dist', 'worker.js')
    const original = fs.readFileSync(workerJs)
    const cli = path.join(repoDir, 'dist', 'pnpm-worker', 'cli.js')
    const exec = promisify(execFile)

    const swapped = await exec(pnpmNode, [cli, 'swap', pnpmDir])
    expect(swapped.stdout).toContain('now loads @cas/native/pnpm-worker')
    expect(fs.readFileSync(path.join(pnpmDir, 'dist', BACKUP_NAME))).toEqual(original)
    expect(fs.readFileSync(workerJs, 'utf8')).toContain(path.join(repoDir, 'dist', 'pnpm-worker', 'index.js'))

    const traceFile = path.join(base, 'trace-c.txt')
    const run = await pnpmInstall({ projectDir, storeDir, pnpmDir, sandbox: path.join(base, 'sandbox-c'), env: { CAS_NATIVE_PNPM_WORKER_TRACE: traceFile } })
    expectOk(run)
    expectSameInstall(projectDir, storeDir)
    // The install's worker requests were answered by @cas/native.
    const types = fs.readFileSync(traceFile, 'utf8').trim().split('\n').map((line) => line.split(' ')[2])
    expect(types.filter((t) => t === 'readPkgFromCafs')).toHaveLength(packages.length)
    expect(types.filter((t) => t === 'link')).toHaveLength(packages.length)
    expect(types).toContain('symlinkAllModules')

    const restored = await exec(pnpmNode, [cli, 'restore', pnpmDir])
    expect(restored.stdout).toContain('restored')
    expect(fs.readFileSync(workerJs)).toEqual(original)
    expect(fs.existsSync(path.join(pnpmDir, 'dist', BACKUP_NAME))).toBe(false)
    // Stock again: a second install (fresh node_modules) works with pnpm's own worker.
    fs.rmSync(path.join(projectDir, 'node_modules'), { recursive: true })
    fs.rmSync(traceFile)
    expectOk(await pnpmInstall({ projectDir, storeDir, pnpmDir, sandbox: path.join(base, 'sandbox-c'), env: { CAS_NATIVE_PNPM_WORKER_TRACE: traceFile } }))
    expect(fs.existsSync(traceFile)).toBe(false)
    expectSameInstall(projectDir, storeDir)
  })
})

describe('the plugin\'s fetcher', () => {
  let registry: TarballRegistry

  beforeAll(async () => {
    registry = await serveTarballs(packages)
  })

  afterAll(async () => {
    await registry?.close()
  })

  it('downloads registry tarballs into an empty store with native extraction: same node_modules, rows pnpm reads back', async () => {
    const storeDir = path.join(base, 'fetch-store')
    const projectDir = copyProject(path.join(base, 'fetch'), { withPnpmfile: true })
    const traceFile = path.join(base, 'trace-fetch.txt')
    const run = await pnpmInstall({
      projectDir,
      storeDir,
      sandbox: path.join(base, 'sandbox-fetch'),
      registry: registry.url,
      env: { NODE_PATH: nodePath, CAS_NATIVE_PNPMFILE_TRACE: traceFile },
    })
    expectOk(run)
    expectSameInstall(projectDir, storeDir)
    // Every tarball was downloaded once, by the plugin (pnpm's own fetcher sends pnpm's user agent).
    const tarballRequests = registry.requests.filter((r) => r.url.endsWith('.tgz'))
    expect(tarballRequests.map((r) => r.userAgent)).toEqual(packages.map(() => '@cas/native pnpmfile'))
    const fetched = fs.readFileSync(traceFile, 'utf8').trim().split('\n').filter((l) => l.startsWith('fetch '))
    expect(fetched).toHaveLength(packages.length)
    // The rows the plugin wrote are what pnpm reads on the next install: all there, all verified.
    const { results } = await cas.readPkgsFromCafs({ storeDir: path.join(storeDir, 'v11'), verifyStoreIntegrity: true }, packages.map((p) => p.key))
    expect(results.map((r) => r.verified)).toEqual(packages.map(() => true))
    cas.closeStores()
  })
})
