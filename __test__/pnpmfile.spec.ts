/**
 * `@cas/native/pnpmfile` called the way pnpm 11 calls it: which hooks it has, the `importPackage`
 * hook (batched, skip rules, per-caller errors) and the fetcher (native extraction with the index row written,
 * delegation to pnpm's fetcher when it cannot do the job). The real CLI runs it in pnpm-e2e.spec.ts.
 */
import { execFileSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as cas from '../dist/api/index.js'
import * as pnpmfile from '../dist/plugin/pnpmfile.js'
import { startedToInstall } from '../dist/plugin/pnpm-config.js'
import { repoDir } from './helpers/pnpm-cli.js'
import { freshStoreDir, tarballFixtures } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'
import { comparable, freshDir, snapshotTree, storeFilledByPnpm, type FilledStore } from './helpers/trees.js'
import { verifyStore } from './helpers/verify-store.mjs'
import { pnpmFunction } from './helpers/pnpm-bundle.js'

const fixtures = tarballFixtures()
let filled: FilledStore
beforeAll(async () => { filled = await storeFilledByPnpm('pnpmfile') }, 120_000)

describe('hooks.importPackage', () => {
  it('exports what pnpm looks for in a pnpmfile; the importer only on request (pnpm warns about the hook)', () => {
    expect('importPackage' in pnpmfile.hooks).toBe(false)
    expect(typeof pnpmfile.importIndexedPackage).toBe('function')
    expect(pnpmfile.fetchers).toHaveLength(1)
    expect(typeof pnpmfile.fetchers[0].canFetch).toBe('function')
    expect(typeof pnpmfile.fetchers[0].fetch).toBe('function')
    expect(typeof pnpmfile.hooks.updateConfig).toBe('function')
    // Offered to install commands only (this process is vitest).
    expect('preResolution' in pnpmfile.hooks).toBe(false)
  })

  it('has the hooks its environment asks for when pnpm loads it', () => {
    // As pnpm loads it: in pnpm's process, whose arguments name the command.
    const hooksOf = (args: string[], env: Record<string, string> = {}) => execFileSync(process.execPath,
      ['-e', 'console.log(Object.keys(require(process.argv[1]).hooks).join(" "))', path.join(repoDir, 'dist/plugin/pnpmfile.js'), ...args],
      { env: { ...process.env, ...env }, encoding: 'utf8' }).trim()
    expect(hooksOf(['install', '--frozen-lockfile'])).toBe('updateConfig preResolution')
    expect(hooksOf(['install'], { CAS_NATIVE_PNPMFILE_IMPORTER: '1' })).toBe('updateConfig preResolution importPackage')
    expect(hooksOf(['add', 'is-docker'], { CAS_NATIVE_PNPMFILE_IMPORTER: '1' })).toBe('updateConfig importPackage')
    expect(hooksOf(['i'], { CAS_NATIVE_PNPMFILE_PRELINK: '0' })).toBe('updateConfig')
  })

  it('offers its head start (hooks.preResolution) to pnpm install and pnpm i only', () => {
    expect(startedToInstall(['install', '--frozen-lockfile'])).toBe(true)
    expect(startedToInstall(['--dir', '/p', 'i'])).toBe(true)
    expect(startedToInstall(['add', 'install'])).toBe(false)
    expect(startedToInstall(['update', '-r'])).toBe(false)
    expect(startedToInstall(['run', 'build'])).toBe(false)
  })

  it('imports concurrent calls (one batch) as importPackage would, then skips them', async () => {
    const root = freshDir('hook')
    const opts = (filesMap: Map<string, string>) => ({ filesMap, force: false, resolvedFrom: 'store' as const, keepModulesDir: false })
    const results = await Promise.all(filled.packages.map((p) => pnpmfile.importIndexedPackage(path.join(root, 'hook', p.id), opts(p.filesMap))))
    for (const r of results) expect(['clone', 'hardlink', 'copy']).toContain(r)
    // The same trees importPackage makes.
    for (const p of filled.packages) {
      const ref = path.join(root, 'ref', p.id)
      await cas.importPackage({ storeDir: filled.storeDir, targetDir: ref, filesResponse: { filesMap: p.filesMap, resolvedFrom: 'store' }, requiresBuild: p.requiresBuild })
      expect(comparable(snapshotTree(path.join(root, 'hook', p.id)))).toEqual(comparable(snapshotTree(ref)))
    }
    // Already there: nothing done.
    const again = await Promise.all(filled.packages.map((p) => pnpmfile.importIndexedPackage(path.join(root, 'hook', p.id), opts(p.filesMap))))
    expect(again).toEqual(filled.packages.map(() => undefined))
  })

  it('a bad package in a batch fails alone, with its own error; the others are imported', async () => {
    const root = freshDir('hook-fail')
    const opts = (filesMap: Map<string, string>) => ({ filesMap, force: false, resolvedFrom: 'store' as const, keepModulesDir: false })
    const bad = path.join(root, 'bad')
    const calls = filled.packages.map((p) => pnpmfile.importIndexedPackage(path.join(root, p.id), opts(p.filesMap)))
    const failing = pnpmfile.importIndexedPackage(bad, opts(new Map([['index.js', path.join(filled.storeDir, 'files', '00', 'missing')]])))
    const [, error] = await Promise.all([Promise.all(calls), failing.then(() => null, (e) => e)])
    expect(error).toMatchObject({ code: 'ERR_PNPM_ENOENT' })
    expect(error.message).toContain(`[importPackage ${bad}]`)
    for (const p of filled.packages) expect(fs.existsSync(path.join(root, p.id, 'package.json'))).toBe(true)
  })

  it('packages with install scripts are copied or cloned, never hard-linked into the store', async () => {
    const storeDir = freshStoreDir('hook-build')
    const dir = freshDir('hook-build-src')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'b', version: '1.0.0', scripts: { postinstall: 'node x' } }))
    fs.writeFileSync(path.join(dir, 'x.js'), '1\n')
    const { filesMap } = await cas.addFilesFromDir({ storeDir, dir, filesIndexFile: 'b' })
    const to = path.join(freshDir('hook-build'), 'b')
    const method = await pnpmfile.importIndexedPackage(to, { filesMap, force: false, resolvedFrom: 'store', keepModulesDir: false })
    expect(['clone', 'copy']).toContain(method)
    expect(fs.statSync(path.join(to, 'x.js')).nlink).toBe(1)
    cas.closeStores()
  })

  it.skipIf(process.platform === 'win32')('places the side-effects symlinks pnpm hands over, natively, never below another symlink', async () => {
    const root = freshDir('hook-symlinks')
    const p = filled.packages[0]
    const linked = path.join(root, 'linked')
    await pnpmfile.importIndexedPackage(linked, { filesMap: p.filesMap, force: false, resolvedFrom: 'store', symlinks: new Map([['alias.json', 'package.json'], ['lib/up.json', '../package.json']]) })
    expect(fs.readlinkSync(path.join(linked, 'alias.json'))).toBe('package.json')
    expect(fs.readFileSync(path.join(linked, 'lib/up.json'), 'utf8')).toBe(fs.readFileSync(path.join(linked, 'package.json'), 'utf8'))
    // `out` → `.`, then `out/x` would be written through it as the package's own `x`: refused
    // (the TS placement this replaced wrote it).
    const refused = path.join(root, 'refused')
    const error = await pnpmfile.importIndexedPackage(refused, { filesMap: p.filesMap, force: false, resolvedFrom: 'store', symlinks: new Map([['out', '.'], ['out/x', '../package.json']]) }).then(() => null, (e) => e)
    expect(error).toMatchObject({ code: 'ERR_PNPM_LINKING_FAILED' })
    expect(error.message).toContain(`[importPackage ${refused}] Cannot create the symlink ${path.join(refused, 'out/x')} below the symlink ${path.join(refused, 'out')}`)
    expect(fs.readdirSync(refused)).not.toContain('x')
    // A link path that leaves the package is refused before anything is written.
    const escaping = path.join(root, 'escaping')
    await expect(pnpmfile.importIndexedPackage(escaping, { filesMap: p.filesMap, force: false, resolvedFrom: 'store', symlinks: new Map([['../x', 'package.json']]) }))
      .rejects.toMatchObject({ code: 'ERR_PNPM_UNSAFE_FILE_PATH' })
    expect(fs.existsSync(escaping)).toBe(false)
    expect(fs.existsSync(path.join(root, 'x'))).toBe(false)
  })
})

describe('fetchers[0]', () => {
  const fetcher = pnpmfile.fetchers[0]
  let server: http.Server
  let registry: string
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const f = fixtures.find((x) => req.url === `/${x.file}`)
      if (f == null) return res.writeHead(404).end()
      res.writeHead(200, { 'content-length': f.buffer.length }).end(f.buffer)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => { await new Promise((resolve) => server?.close(resolve)) })

  it('takes registry tarballs with an integrity only', () => {
    expect(fetcher.canFetch('a@1.0.0', { tarball: 'https://registry.npmjs.org/a/-/a-1.0.0.tgz', integrity: 'sha512-x' })).toBe(true)
    expect(fetcher.canFetch('a@1.0.0', { tarball: 'https://registry.npmjs.org/a/-/a-1.0.0.tgz' })).toBe(false)
    expect(fetcher.canFetch('a@1.0.0', { tarball: 'https://codeload.github.com/a/b/tar.gz/abc', integrity: 'sha512-x' })).toBe(false)
    expect(fetcher.canFetch('a@1.0.0', { tarball: 'file:../a.tgz', integrity: 'sha512-x' })).toBe(false)
    expect(fetcher.canFetch('a@1.0.0', { type: 'git', tarball: 'https://x/a.tgz', integrity: 'sha512-x' } as any)).toBe(false)
    expect(fetcher.canFetch('a@1.0.0', { type: 'directory' } as any)).toBe(false)
  })

  it('leaves every download to pnpm under settings its requests would not honour (a proxy, certificates, credentials)', async () => {
    const resolution = { tarball: 'https://registry.npmjs.org/a/-/a-1.0.0.tgz', integrity: 'sha512-x' }
    try {
      for (const settings of [{ httpsProxy: 'http://proxy:8080' }, { cafile: '/etc/corp-ca.pem' }, { configByUri: { '//registry.npmjs.org/': { token: 't' } } }]) {
        await pnpmfile.hooks.updateConfig(settings)
        expect(fetcher.canFetch('a@1.0.0', resolution)).toBe(false)
      }
    } finally {
      await pnpmfile.hooks.updateConfig({})
    }
    expect(fetcher.canFetch('a@1.0.0', resolution)).toBe(true)
  })

  it('downloads, extracts natively and writes the row pnpm reads next time', async () => {
    const f = fixtures[0]
    const storeDir = freshStoreDir('fetch')
    const result: any = await fetcher.fetch({ storeDir }, { tarball: `${registry}${f.file}`, integrity: f.integrity }, { filesIndexFile: f.key })
    expect(result.filesMap.size).toBe(f.files + (result.filesMap.has('package.json') ? 0 : 1))
    const read = await cas.readPkgFromCafs({ storeDir, verifyStoreIntegrity: true }, f.key)
    expect(read).toMatchObject({ verified: true })
    expect(relative((read as any).files.filesMap, storeDir)).toEqual(relative(result.filesMap, storeDir))
    cas.closeStores()
  })

  it('hands a 404, an integrity mismatch and a missing store (pnpm 12) back to pnpm', async () => {
    const f = fixtures[0]
    const storeDir = freshStoreDir('fetch-delegate')
    for (const resolution of [
      { tarball: `${registry}missing.tgz`, integrity: f.integrity },
      { tarball: `${registry}${f.file}`, integrity: fixtures[1].integrity },
    ]) {
      expect(await fetcher.fetch({ storeDir }, resolution, { filesIndexFile: 'k' })).toEqual({ delegate: resolution })
    }
    const resolution = { tarball: `${registry}${f.file}`, integrity: f.integrity }
    expect(await fetcher.fetch(null, resolution, { filesIndexFile: 'k' })).toEqual({ delegate: resolution })
    // Nothing was written: not even the store directory.
    expect(fs.existsSync(storeDir)).toBe(false)
    cas.closeStores()
  })

  it('calls pnpm\'s own tarball fetcher itself under a pnpm that takes no delegation (before 11.12.0)', async () => {
    const resolution = { tarball: `${registry}missing.tgz`, integrity: fixtures[0].integrity }
    const storeDir = freshStoreDir('fetch-builtin')
    const calls: unknown[][] = []
    const builtins = { remoteTarball: async (...args: unknown[]) => { calls.push(args); return { filesMap: new Map() } } }
    try {
      await pnpmfile.hooks.updateConfig({ userAgent: 'pnpm/11.11.0 npm/? node/v24.9.0 linux x64' })
      const opts = { filesIndexFile: 'k' }
      expect(await fetcher.fetch({ storeDir }, resolution, opts, builtins)).toEqual({ filesMap: new Map() })
      expect(calls).toEqual([[{ storeDir }, resolution, opts]])
      await pnpmfile.hooks.updateConfig({ userAgent: 'pnpm/11.12.0 npm/? node/v24.9.0 linux x64' })
      expect(await fetcher.fetch({ storeDir }, resolution, opts, builtins)).toEqual({ delegate: resolution })
      expect(calls).toHaveLength(1)
    } finally {
      await pnpmfile.hooks.updateConfig({})
    }
  })
})

describe('fetchers[0], a big tarball piped while it downloads (issue 16)', () => {
  const fetcher = pnpmfile.fetchers[0]
  // 300 files of 10 KB of random bytes: 3 MB gzip'd, so extraction starts while it downloads.
  const big = tgz([{ name: 'package/package.json', content: '{"name":"big","version":"1.0.0"}' },
    ...Array.from({ length: 300 }, (_, i) => ({ name: `package/f${i}`, content: crypto.randomBytes(10_000) }))])
  const integrity = 'sha512-' + crypto.createHash('sha512').update(big).digest('base64')
  let server: http.Server
  let registry: string
  beforeAll(async () => {
    // 64 KiB at a time, a tick apart; `/cut.tgz` promises the whole length and stops at 60%.
    server = http.createServer(async (req, res) => {
      res.writeHead(200, { 'content-length': big.length })
      const end = req.url === '/cut.tgz' ? Math.floor(big.length * 0.6) : big.length
      for (let at = 0; at < end; at += 65536) {
        res.write(big.subarray(at, Math.min(at + 65536, end)))
        await new Promise((resolve) => setTimeout(resolve, 1))
      }
      if (end < big.length) res.destroy()
      else res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => { await new Promise((resolve) => server?.close(resolve)) })

  it('extracts it as addFilesFromTarball does; a body cut short is handed back to pnpm with no row', async () => {
    const storeDir = freshStoreDir('fetch-big')
    const result: any = await fetcher.fetch({ storeDir }, { tarball: `${registry}big.tgz`, integrity }, { filesIndexFile: 'big' })
    const whole = await cas.addFilesFromTarball({ buffer: big, storeDir: freshStoreDir('fetch-big-whole'), filesIndexFile: 'big', integrity })
    expect([...result.filesMap.keys()]).toEqual([...whole.filesMap.keys()])
    expect(await cas.readPkgFromCafs({ storeDir, verifyStoreIntegrity: true }, 'big')).toMatchObject({ verified: true })
    const cut = { tarball: `${registry}cut.tgz`, integrity }
    const cutStore = freshStoreDir('fetch-cut')
    expect(await fetcher.fetch({ storeDir: cutStore }, cut, { filesIndexFile: 'cut' })).toEqual({ delegate: cut })
    cas.closeStores()
    expect(verifyStore(cutStore)).toMatchObject({ rows: 0, problems: [] })
  })
})

describe('fetchers[0]: the rows the running pnpm writes (user try: nuxt/content under 11.7.0, node-addon-api\'s gypfile: false)', () => {
  const fetcher = pnpmfile.fetchers[0]
  // A root binding.gyp the manifest opts out of: pnpm 11.28 keeps gypfile and builds nothing; the releases before count the binding.gyp.
  const gyp = tgz([{ name: 'package/package.json', content: JSON.stringify({ name: 'gyp-off', version: '1.0.0', gypfile: false }) }, { name: 'package/binding.gyp', content: '{}' }])
  const integrity = 'sha512-' + crypto.createHash('sha512').update(gyp).digest('base64')
  let server: http.Server
  let registry: string
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-length': gyp.length })
      res.end(gyp)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => { await new Promise((resolve) => server?.close(resolve)) })

  it.each([
    ['pnpm/11.27.1 npm/? node/v24.9.0 linux x64', '@pnpm/worker@1100', true],
    ['pnpm/11.28.0 npm/? node/v24.9.0 linux x64', 'pnpm@11.28', false],
    [undefined, 'pnpm@11.28', false],
  ] as const)('user agent %s: the rows of %s (requiresBuild %s), as addFilesFromTarball writes them', async (userAgent, compat, requiresBuild) => {
    try {
      await pnpmfile.hooks.updateConfig(userAgent == null ? {} : { userAgent })
      const storeDir = freshStoreDir('fetch-gyp')
      const result: any = await fetcher.fetch({ storeDir }, { tarball: `${registry}gyp-off/-/gyp-off-1.0.0.tgz`, integrity }, { filesIndexFile: 'gyp' })
      const whole = await cas.addFilesFromTarball({ buffer: gyp, storeDir: freshStoreDir('fetch-gyp-whole'), filesIndexFile: 'gyp', integrity, compat })
      expect(result.requiresBuild).toBe(requiresBuild)
      expect({ requiresBuild: result.requiresBuild, manifest: result.manifest }).toEqual({ requiresBuild: whole.requiresBuild, manifest: whole.manifest })
      expect('gypfile' in result.manifest).toBe(!requiresBuild)
    } finally {
      await pnpmfile.hooks.updateConfig({})
      cas.closeStores()
    }
  })
})

function relative (m: Map<string, string>, storeDir: string): string[][] {
  return [...m].map(([k, v]) => [k, path.relative(storeDir, v)])
}

describe('importIndexedPackage: whether pnpm will build the package (copied then, never hard-linked)', () => {
  it('decides as pnpm 11.28\'s pkgRequiresBuild: install scripts, a binding.gyp unless gypfile: false, a .hooks file', async () => {
    const pkgRequiresBuild = pnpmFunction<(manifest: unknown, files: Map<string, string>) => boolean>('pkgRequiresBuild')
    const cases: Array<[Record<string, unknown> | undefined, string[]]> = [
      [{ gypfile: false }, ['binding.gyp']],
      [{ gypfile: true }, ['binding.gyp']],
      [{ gypfile: 'false' }, ['binding.gyp']],
      [{}, ['binding.gyp']],
      [undefined, ['binding.gyp']],
      [{ gypfile: false, scripts: { install: 'node-gyp rebuild' } }, ['binding.gyp']],
      [{ gypfile: false }, ['binding.gyp', '.hooks\\pre']],
      [{}, ['.hooks/pre']],
      [{ scripts: { test: 'x' } }, ['lib/binding.gyp', '.hooksy/a']],
    ]
    const storeDir = freshStoreDir('hook-gyp')
    const was = process.env.CAS_NATIVE_PACKAGE_IMPORT_METHOD
    process.env.CAS_NATIVE_PACKAGE_IMPORT_METHOD = 'hardlink'
    try {
      for (const [i, [manifest, files]] of cases.entries()) {
        const dir = freshDir('hook-gyp-src')
        for (const f of files) {
          fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true })
          fs.writeFileSync(path.join(dir, f), `${i}\n`)
        }
        if (manifest != null) fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: `p${i}`, ...manifest }))
        const { filesMap } = await cas.addFilesFromDir({ storeDir, dir, filesIndexFile: `p${i}` })
        const to = path.join(freshDir('hook-gyp'), 'p')
        const method = await pnpmfile.importIndexedPackage(to, { filesMap, force: false, resolvedFrom: 'store', keepModulesDir: false })
        const built = pkgRequiresBuild(manifest, filesMap)
        expect({ method, nlink: fs.statSync(path.join(to, files[0])).nlink > 1 }, JSON.stringify([manifest, files]))
          .toEqual(built ? { method: expect.stringMatching(/^(clone|copy)$/), nlink: false } : { method: 'hardlink', nlink: true })
      }
    } finally {
      if (was == null) delete process.env.CAS_NATIVE_PACKAGE_IMPORT_METHOD
      else process.env.CAS_NATIVE_PACKAGE_IMPORT_METHOD = was
      cas.closeStores()
    }
  })
})
