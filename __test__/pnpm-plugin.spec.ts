/**
 * `@cas/pnpm-plugin-native`, the config dependency, as users get it: packed by
 * `scripts/pack-plugin.mjs` with this machine's platform package, served by a registry stand-in
 * on 127.0.0.1, added with `pnpm add --config @cas/pnpm-plugin-native` and one `pnpm install`
 * (the README's setup), then a fresh copy of the project (package.json, lockfile,
 * pnpm-workspace.yaml, no node_modules) installed with `pnpm install --frozen-lockfile` by the
 * real pnpm 11 CLI: from a warm store (the native install lays out everything and pnpm finds it
 * up to date), from a cold one (the native install downloads and extracts them first), and
 * without the platform package (one warning,
 * stock pnpm's install). No NODE_PATH, no path into this checkout.
 *
 * Plus the entry point's decisions (`createPlugin`) for the pnpms and failures an e2e run here
 * cannot produce: pnpm 10 and 12, an unknown launcher, a binary that does not load.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import { isBuiltin } from 'node:module'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPlugin, launcherPnpmVersion, missingBinary, PLUGIN_NAME, type PnpmfileModule } from '../dist/plugin/config-dependency.js'
import { platformArchABI } from '../dist/api/native-platform.js'
import { copyProject, lockedPackages, pnpmNode, nodeModulesTree, pnpmEnv, pnpmLauncher, pnpmPackageDir, projectFixture, repoDir, runPnpm, type PnpmRun } from './helpers/pnpm-cli.js'
import { packedPackage, packPlugin, serveTarballs, type ServedPackage, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'

const rootPkg = JSON.parse(fs.readFileSync(path.join(repoDir, 'package.json'), 'utf8'))
const platformPkg = `@cas/native-${platformArchABI()}`
const WARNING = `${PLUGIN_NAME}: inactive, pnpm installs without it:`

function expectOk (run: PnpmRun): void {
  expect(run.code, `pnpm failed:\n${run.stdout}\n${run.stderr}`).toBe(0)
}

/** The fixture lockfile from its `importers:` on: what pnpm install must leave as it was. */
const fixtureLockfileTail = fs.readFileSync(path.join(projectFixture, 'pnpm-lock.yaml'), 'utf8').split('\nimporters:\n')[1]

const occurrences = (text: string, part: string): number => text.split(part).length - 1

describe('the config-dependency plugin with the real pnpm 11 CLI', () => {
  const packages = lockedPackages()
  let base: string
  let plugin: ServedPackage
  let platform: ServedPackage
  let registry: TarballRegistry
  let registryWithoutBinary: TarballRegistry
  let reference: string[]

  /** `node_modules` without the config dependencies' links (stock pnpm has none). */
  const tree = (projectDir: string, storeDir: string): string[] =>
    nodeModulesTree(projectDir, storeDir).filter((line) => !line.startsWith('node_modules/.pnpm-config'))

  /** The README's setup in a copy of the fixture project: `pnpm add --config`, then `pnpm install`. */
  async function setUp (label: string, from: TarballRegistry): Promise<{ dir: string, add: PnpmRun, install: PnpmRun }> {
    const dir = copyProject(path.join(base, label))
    const opts = { projectDir: dir, storeDir: path.join(base, `${label}-store`), sandbox: path.join(base, `${label}-sandbox`), registry: from.url }
    const add = await runPnpm(['add', '--config', PLUGIN_NAME], opts)
    expectOk(add)
    const install = await runPnpm(['install'], opts)
    expectOk(install)
    return { dir, add, install }
  }

  /** A fresh clone of `setUpDir`: its package.json, lockfile and pnpm-workspace.yaml, nothing else. */
  function cloneOf (setUpDir: string, label: string): string {
    const dir = path.join(base, label)
    fs.mkdirSync(dir)
    for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) fs.copyFileSync(path.join(setUpDir, f), path.join(dir, f))
    return dir
  }

  let setUpDir: string
  let setUpStore: string

  beforeAll(async () => {
    base = freshDir('pnpm-plugin')
    const tarballs = packPlugin(path.join(base, 'packed'))
    plugin = tarballs.find((t) => t.name === PLUGIN_NAME)!
    platform = tarballs.find((t) => t.name === platformPkg)!
    // With their metadata: the setup's plain `pnpm install` resolves.
    const fixtureTarballs = packages.map((p) => packedPackage(p.tarball))
    registry = await serveTarballs([plugin, platform, ...fixtureTarballs])
    registryWithoutBinary = await serveTarballs([plugin, ...fixtureTarballs])

    // The reference: stock pnpm, no plugin, from the same registry.
    const refDir = copyProject(path.join(base, 'reference'))
    const refStore = path.join(base, 'reference-store')
    expectOk(await runPnpm(['install', '--frozen-lockfile'], { projectDir: refDir, storeDir: refStore, sandbox: path.join(base, 'reference-sandbox'), registry: registry.url }))
    reference = tree(refDir, refStore)

    const setup = await setUp('setup', registry)
    setUpDir = setup.dir
    setUpStore = path.join(base, 'setup-store')
  })

  afterAll(async () => {
    await registry?.close()
    await registryWithoutBinary?.close()
  })

  it('packs the plugin with pnpmfile.cjs at its root, everything it runs inside it, and exact optional dependencies on every platform package', () => {
    expect(plugin.version).toBe(rootPkg.version)
    expect(platform.version).toBe(rootPkg.version)
    const platformNames = fs.readdirSync(path.join(repoDir, 'npm'))
      .map((dir) => path.join(repoDir, 'npm', dir, 'package.json'))
      .filter((f) => fs.existsSync(f))
      .map((f) => JSON.parse(fs.readFileSync(f, 'utf8')).name as string)
      .filter((name) => name.startsWith('@cas/native-'))
    expect(platformNames).toHaveLength(rootPkg.napi.targets.length)
    expect(plugin.manifest!.optionalDependencies).toEqual(Object.fromEntries(platformNames.sort().map((name) => [name, rootPkg.version])))
    expect(plugin.manifest!.dependencies).toBeUndefined()
    const files = spawnSync('tar', ['-tzf', plugin.tarball as string], { encoding: 'utf8' }).stdout.trim().split('\n')
    // One bundle (pnpm's own packages inside it) beside the napi loader, run by the entry's loader
    // (with its code cache), and one for each package only a build, a patch or an older pnpm release imports.
    const lazy = ['lazy/patching-apply-patch.js', 'lazy/symlink-dir.js', 'lazy/yarnpkg-shell.js']
    expect(files.filter((f) => f.endsWith('.js') || f.endsWith('.cjs')).sort()).toEqual(['package/dist/plugin/bundle.js', 'package/dist/plugin/config-dependency.js', ...lazy.map((f) => `package/dist/plugin/${f}`), 'package/explain.cjs', 'package/index.js', 'package/pnpmfile.cjs'])
    const bundled = (file: string): string => spawnSync('tar', ['-xzOf', plugin.tarball as string, `package/dist/plugin/${file}`], { encoding: 'utf8', maxBuffer: 64 << 20 }).stdout
    const required = (text: string): string[] => [...text.matchAll(/require\("([^"]+)"\)/g)].map(([, spec]) => spec).filter((spec) => !isBuiltin(spec))
    const entry = bundled('config-dependency.js')
    expect(entry).toContain('requireWithCodeCache(require("node:path").join(__dirname, "bundle.js"), void 0, installedNatively)')
    expect(required(entry)).toEqual([])
    const bundle = bundled('bundle.js')
    expect(bundle).toContain('node_modules/@pnpm/config.matcher/')
    expect(bundle).not.toContain('node_modules/@yarnpkg/')
    expect([...new Set(required(bundle))].sort()).toEqual(['../../index.js', ...lazy.map((f) => `./${f}`)])
    for (const file of lazy) expect(required(bundled(file))).toEqual([])
    expect(files.filter((f) => f.endsWith('.node') || f.endsWith('.ts'))).toEqual([])
    // The documents its README links to, and those link to, are in it.
    const readme = spawnSync('tar', ['-xzOf', plugin.tarball as string, 'package/README.md'], { encoding: 'utf8' }).stdout
    const linked = [...readme.matchAll(/\]\(([^)#\s:]+)(?:#[^)]*)?\)/g)].map(([, target]) => `package/${target}`)
    expect(linked).toContain('package/docs/native-install.md')
    expect(files).toEqual(expect.arrayContaining([...linked, 'package/docs/store-format.md']))
    const binaries = spawnSync('tar', ['-tzf', platform.tarball as string], { encoding: 'utf8' }).stdout
    expect(binaries).toContain(`package/${rootPkg.napi.binaryName}.${platformArchABI()}.node`)
  })

  it('pnpm add --config records the plugin and its platform package; pnpm install records the pnpmfile checksum', () => {
    expect(fs.readFileSync(path.join(setUpDir, 'pnpm-workspace.yaml'), 'utf8')).toContain(`configDependencies:\n  '${PLUGIN_NAME}': ${rootPkg.version}`)
    const lockfile = fs.readFileSync(path.join(setUpDir, 'pnpm-lock.yaml'), 'utf8')
    expect(lockfile).toContain(`'${PLUGIN_NAME}@${rootPkg.version}':\n    optionalDependencies:\n      '${platformPkg}': ${rootPkg.version}`)
    expect(lockfile).toMatch(/\npnpmfileChecksum: sha256-/)
    // (Its node_modules is not stock's frozen one: a new pnpmfileChecksum makes pnpm resolve again,
    // which also links each package's own bins into its node_modules/.bin, plugin or not.)
    expect(fs.readFileSync(path.join(setUpDir, 'node_modules', '.pnpm', 'lock.yaml'), 'utf8')).toContain(fixtureLockfileTail)
  })

  it('a fresh clone, warm store, --frozen-lockfile --offline: the native install lays out every package, pnpm finds it up to date, the tree is stock pnpm\'s', async () => {
    const dir = cloneOf(setUpDir, 'warm')
    const traceFile = path.join(base, 'trace-warm.txt')
    const run = await runPnpm(['install', '--frozen-lockfile'], { projectDir: dir, storeDir: setUpStore, sandbox: path.join(base, 'warm-sandbox'), env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expectOk(run)
    expect(run.stdout + run.stderr).not.toContain(WARNING)
    expect(run.stdout).toContain('Already up to date')
    const trace = fs.readFileSync(traceFile, 'utf8')
    expect(trace).toMatch(new RegExp(`^native install: ${packages.length} packages, `, 'm'))
    expect(tree(dir, setUpStore)).toEqual(reference)
  })

  it('the packed plugin\'s explain command (its bin, run from where pnpm installed it): a fresh clone would be native', () => {
    const dir = cloneOf(setUpDir, 'explained')
    const pnpm = pnpmLauncher(base)
    const bin = path.join(setUpDir, 'node_modules', '.pnpm-config', PLUGIN_NAME, (plugin.manifest!.bin as Record<string, string>)['cas-native-explain'])
    const run = spawnSync(pnpmNode, [bin, '--pnpm', pnpm, dir, '--', '--offline', `--store-dir=${setUpStore}`], { encoding: 'utf8', env: pnpmEnv(path.join(base, 'explained-sandbox')) })
    expect(run.status, run.stdout + run.stderr).toBe(0)
    expect(run.stdout).toContain(`native: ${PLUGIN_NAME} would lay out all ${packages.length} packages, then pnpm finds node_modules up to date.`)
  })

  it('a fresh clone in CI (CI=true, plain pnpm install, which pnpm 11 runs frozen there): the native install too', async () => {
    const dir = cloneOf(setUpDir, 'ci')
    const traceFile = path.join(base, 'trace-ci.txt')
    const run = await runPnpm(['install'], { projectDir: dir, storeDir: setUpStore, sandbox: path.join(base, 'ci-sandbox'), env: { CI: 'true', CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expectOk(run)
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(new RegExp(`^native install: ${packages.length} packages, `, 'm'))
    expect(tree(dir, setUpStore)).toEqual(reference)
    expect(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(setUpDir, 'pnpm-lock.yaml'), 'utf8'))
  })

  it('a fresh clone, cold store: the native install downloads and extracts every package, pnpm finds it up to date, the tree is stock pnpm\'s', async () => {
    const dir = cloneOf(setUpDir, 'cold')
    const storeDir = path.join(base, 'cold-store')
    const traceFile = path.join(base, 'trace-cold.txt')
    const before = registry.requests.length
    const run = await runPnpm(['install', '--frozen-lockfile'], { projectDir: dir, storeDir, sandbox: path.join(base, 'cold-sandbox'), registry: registry.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expectOk(run)
    const trace = fs.readFileSync(traceFile, 'utf8')
    expect(trace).toMatch(new RegExp(`^native install: ${packages.length} packages, `, 'm'))
    expect(run.stdout).toContain('Already up to date')
    const fetched = trace.split('\n').filter((l) => l.startsWith('fetch '))
    expect(fetched.map((l) => l.slice('fetch '.length)).sort()).toEqual(packages.map((p) => `${registry.url}${p.name}/-/${p.name.split('/').pop()}-${p.version}.tgz`).sort())
    // pnpm installed the config dependencies itself (its user agent); the plugin downloaded the rest.
    const tarballs = registry.requests.slice(before).filter((r) => r.url.endsWith('.tgz'))
    expect(tarballs.filter((r) => r.userAgent === '@cas/native pnpmfile')).toHaveLength(packages.length)
    expect(tree(dir, storeDir)).toEqual(reference)
  })

  it('without the platform package: one warning saying why and what to do, the same checksum, stock pnpm\'s tree', async () => {
    const setup = await setUp('no-binary', registryWithoutBinary)
    const lockfile = fs.readFileSync(path.join(setup.dir, 'pnpm-lock.yaml'), 'utf8')
    expect(lockfile).not.toContain(platformPkg)
    const checksum = (text: string) => /\npnpmfileChecksum: (\S+)/.exec(text)?.[1]
    expect(checksum(lockfile)).toBe(checksum(fs.readFileSync(path.join(setUpDir, 'pnpm-lock.yaml'), 'utf8')))

    const dir = cloneOf(setup.dir, 'no-binary-clone')
    const storeDir = path.join(base, 'no-binary-store')
    const traceFile = path.join(base, 'trace-no-binary.txt')
    const run = await runPnpm(['install', '--frozen-lockfile'], { projectDir: dir, storeDir, sandbox: path.join(base, 'no-binary-clone-sandbox'), registry: registryWithoutBinary.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expectOk(run)
    const output = run.stdout + run.stderr
    expect(occurrences(output, WARNING)).toBe(1)
    expect(output).toContain(`${platformPkg}, its binary for this platform, was not installed`)
    expect(output).toContain(`pnpm add --config ${PLUGIN_NAME}@${rootPkg.version}`)
    // The trace says why, and nothing else: no hook of the plugin ran.
    expect(fs.readFileSync(traceFile, 'utf8')).toBe(`inactive: ${platformPkg}, its binary for this platform, was not installed${/was not installed(.*)$/m.exec(output)![1]}\n`)
    expect(tree(dir, storeDir)).toEqual(reference)
  })
})

describe('versions in lockstep', () => {
  it('npm version\'s sync script moves the plugin and the alias package to the new version (the alias also depends on it exactly); pack-plugin refuses a plugin behind', () => {
    const dir = freshDir('sync-versions')
    const copy = (rel: string): void => {
      fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true })
      fs.copyFileSync(path.join(repoDir, rel), path.join(dir, rel))
    }
    for (const rel of ['scripts/sync-versions.mjs', 'scripts/pack-plugin.mjs', 'npm/pnpm-worker/package.json', 'npm/pnpm-plugin-native/package.json']) copy(rel)
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...rootPkg, version: '9.9.9' }))
    // pack-plugin reads the platform helpers from dist/ and fails on the version before packing anything.
    fs.cpSync(path.join(repoDir, 'dist'), path.join(dir, 'dist'), { recursive: true })
    const behind = spawnSync(process.execPath, [path.join(dir, 'scripts', 'pack-plugin.mjs'), path.join(dir, 'out')], { encoding: 'utf8' })
    expect(behind.status).toBe(1)
    expect(behind.stderr).toContain(`npm/pnpm-plugin-native is at ${rootPkg.version}, package.json at 9.9.9: run \`npm run version\``)
    const sync = spawnSync(process.execPath, [path.join(dir, 'scripts', 'sync-versions.mjs')], { encoding: 'utf8' })
    expect(sync.status, sync.stderr).toBe(0)
    const read = (rel: string) => JSON.parse(fs.readFileSync(path.join(dir, rel), 'utf8'))
    expect(read('npm/pnpm-plugin-native/package.json').version).toBe('9.9.9')
    expect(read('npm/pnpm-worker/package.json')).toMatchObject({ version: '9.9.9', dependencies: { [rootPkg.name]: '9.9.9' } })
  })
})

describe('createPlugin: what each pnpm gets', () => {
  const manifest = { name: PLUGIN_NAME, version: '1.2.3', optionalDependencies: { '@cas/native-linux-x64-gnu': '1.2.3', '@cas/native-darwin-arm64': '1.2.3' } }
  const calls: string[] = []
  const pnpmfile: PnpmfileModule = {
    hooks: {
      updateConfig: (config) => { calls.push('updateConfig'); return config },
      preResolution: async () => { calls.push('preResolution') },
      importPackage: () => undefined,
    },
    fetchers: [{ canFetch: () => true, fetch: () => undefined }],
  }
  const make = (launcherVersion: string | undefined, load: () => PnpmfileModule = () => pnpmfile) => {
    const warnings: string[] = []
    calls.length = 0
    const plugin = createPlugin({ launcherVersion, loadPnpmfile: load, manifest, warn: (m) => warnings.push(m) })
    return { plugin, warnings }
  }
  const noBinary = () => { throw Object.assign(new Error('@cas/pnpm-plugin-native: could not load the native addon'), { code: 'ERR_CAS_NATIVE_BINDING_NOT_FOUND', platformPackageInstalled: false }) }

  it('pnpm 11 started by its own script: the whole pnpmfile, no warning', () => {
    const { plugin, warnings } = make('11.28.11')
    expect(plugin).toBe(pnpmfile)
    expect(warnings).toEqual([])
  })

  it('pnpm 11 without the binary: one warning at load, hooks that do nothing', () => {
    const { plugin, warnings } = make('11.28.11', noBinary)
    expect(plugin).toEqual({ hooks: {} })
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/^@cas\/pnpm-plugin-native: inactive, pnpm installs without it: /)
  })

  it('pnpm 10: one warning naming the version, saying pnpm 10 installs without it (not to remove it: pnpm 11 users share the project); the pnpmfile is never loaded', () => {
    const { plugin, warnings } = make('10.20.0', () => { throw new Error('must not load') })
    expect(plugin).toEqual({ hooks: {} })
    expect(warnings).toEqual([expect.stringContaining('pnpm 10.20.0 is not supported: the plugin hooks into pnpm 11 only, and pnpm 10 installs as it does without it (pnpm 11 users of this project keep it).')])
    expect(warnings[0]).not.toContain('remove')
  })

  it('an unknown launcher that turns out to be pnpm 12 (it runs pnpmfiles in a process of its own): one warning from updateConfig, nothing active, no importer', async () => {
    const { plugin, warnings } = make(undefined)
    expect(warnings).toEqual([])
    expect(Object.keys(plugin.hooks).sort()).toEqual(['preResolution', 'updateConfig'])
    const config = { userAgent: 'pnpm/12.21.0 npm/? node/? linux x64' }
    expect(plugin.hooks.updateConfig!(config)).toBe(config)
    expect(warnings).toEqual([expect.stringContaining('pnpm 12.21.0 is not supported: the plugin hooks into pnpm 11 only, and pnpm 12 already installs natively.')])
    await plugin.hooks.preResolution!(undefined as never)
    expect(plugin.fetchers!.map((f) => f.canFetch())).toEqual([false])
    expect(calls).toEqual([])
  })

  it('an unknown launcher that says pnpm 11 in updateConfig: the head start and the fetcher, but no importer', async () => {
    const { plugin, warnings } = make(undefined)
    plugin.hooks.updateConfig!({ userAgent: 'pnpm/11.28.11 npm/? node/v24.9.0 linux x64' })
    await plugin.hooks.preResolution!(undefined as never)
    expect(plugin.fetchers!.map((f) => f.canFetch())).toEqual([true])
    expect(calls).toEqual(['updateConfig', 'preResolution'])
    expect(plugin.hooks.importPackage).toBeUndefined()
    expect(warnings).toEqual([])
  })

  it('an unknown launcher, pnpm 11, no binary: the binary warning comes from updateConfig, once', () => {
    const { plugin, warnings } = make(undefined, noBinary)
    expect(warnings).toEqual([])
    plugin.hooks.updateConfig!({ userAgent: 'pnpm/11.28.11' })
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('its binary for this platform, was not installed')
  })

  const loadError = (message: string, platformPackageInstalled: boolean) =>
    Object.assign(new Error(message), { code: 'ERR_CAS_NATIVE_BINDING_NOT_FOUND', platformPackageInstalled })
  it.each([
    ['freebsd-x64', loadError('x', false), 'there is no prebuilt binary for freebsd-x64 (prebuilt: linux-x64-gnu, darwin-arm64). To stop this warning, remove'],
    ['linux-x64-gnu', loadError('@cas/native: could not load\n…\nTried:\n  - invalid ELF header', true), '@cas/native-linux-x64-gnu is installed but its binary failed to load (invalid ELF header). Reinstall it'],
    ['darwin-arm64', loadError('@cas/native: could not load', false), '@cas/native-darwin-arm64, its binary for this platform, was not installed with it. Run `pnpm add --config @cas/pnpm-plugin-native@1.2.3` where the registry serves @cas/native-darwin-arm64'],
    ['linux-x64-gnu', new TypeError('x is not a function'), 'it failed to load: x is not a function'],
  ])('missingBinary on %s says why and what to do', (platform, err, expected) => {
    expect(missingBinary(err, manifest, platform)).toContain(expected)
  })

  it('launcherPnpmVersion reads pnpm\'s own package.json, and nothing else', () => {
    const pnpmVersion = JSON.parse(fs.readFileSync(path.join(pnpmPackageDir, 'package.json'), 'utf8')).version
    expect(launcherPnpmVersion(path.join(pnpmPackageDir, 'bin', 'pnpm.mjs'))).toBe(pnpmVersion)
    expect(launcherPnpmVersion(path.join(repoDir, 'scripts', 'pack-plugin.mjs'))).toBeUndefined()
    expect(launcherPnpmVersion(undefined)).toBeUndefined()
    expect(launcherPnpmVersion(path.join(repoDir, 'no-such-script.js'))).toBeUndefined()
  })
})
