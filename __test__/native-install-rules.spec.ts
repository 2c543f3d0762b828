/**
 * The native install's small rules, one by one, beside the end-to-end comparison with stock
 * pnpm (native-install.spec.ts): engines ranges, hoist patterns, platform checks, and the
 * settings it leaves to pnpm without touching anything.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import semver from 'semver'
import { describe, expect, it } from 'vitest'
import { hoist } from '../dist/plugin/install/hoist.js'
import { enginesChecker, enginesMet, enginesNodeVersion, installableHere } from '../dist/plugin/install/installable.js'
import { isMusl } from '../dist/api/native-platform.js'
import { configReasons } from '../dist/plugin/install/config-rules.js'
import { installNatively, planInstall, type NativeInstallConfig } from '../dist/plugin/install/native-install.js'
import { nativeRelease, PNPM_RELEASES, type PnpmRelease } from '../dist/plugin/install/pnpm-releases.js'
import { satisfies } from '../dist/plugin/install/semver-range.js'
import { freshDir } from './helpers/stores.js'

describe('satisfies: the engines ranges of optional packages', () => {
  it.each([
    ['24.9.0', '>=14', true],
    ['4.4.0', '>= 4.4.x', true],
    ['4.3.9', '>= 4.4.x', false],
    ['16.10.0', '^14.17.0 || ^16.10.0 || >=17.0.0', true],
    ['16.9.0', '^14.17.0 || ^16.10.0 || >=17.0.0', false],
    ['12.1.9', '~12.1', true],
    ['12.2.0', '~12.1', false],
    ['0.2.5', '^0.2.3', true],
    ['0.3.0', '^0.2.3', false],
    ['0.0.4', '^0.0.3', false],
    ['20.4.1', '1.2.3 - 20.4', true],
    ['20.5.0', '1.2.3 - 20.4', false],
    ['17.0.0', '<17', false],
    ['16.99.0', '<=16', true],
    ['22.0.0', '*', true],
    ['22.0.0', '', true],
    ['v24.9.0', '20 || 22 || >=24', true],
    ['23.1.0', '20 || 22 || >=24', false],
  ])('%s in %j: %s', (version, range, expected) => {
    expect(satisfies(version, range)).toBe(expected)
  })

  it('prerelease ranges and versions as pnpm\'s engine check reads them (includePrerelease), a range that is none as unmet', () => {
    expect(satisfies('1.0.0', '>=1.0.0-beta')).toBe(true)
    expect(satisfies('25.0.0-pre', '>=14')).toBe(true)
    expect(satisfies('1.0.0', 'latest')).toBe(false)
  })

  it('a range asked again (parsed once) answers as semver.satisfies does, for each version, a version that is none too', () => {
    const ranges = ['>=14', '^14.17.0 || ^16.10.0 || >=17.0.0', 'latest', '>=1.0.0-beta', '']
    for (let round = 0; round < 2; round++) {
      for (const range of ranges) {
        for (const version of ['14.0.0', '16.9.0', '25.0.0-pre', 'v24.9.0', 'not a version']) {
          expect(satisfies(version, range), `${version} in ${range}`).toBe(semver.satisfies(version, range, { includePrerelease: true }))
        }
      }
    }
  })

  it('enginesMet: engines.node only, as pnpm checks a lockfile\'s packages; undefined where it cannot tell', () => {
    expect(enginesMet({ engines: { node: '>=14' } }, 'v24.9.0')).toBe(true)
    expect(enginesMet({ engines: { node: '<14' } }, 'v24.9.0')).toBe(false)
    expect(enginesMet({ engines: { pnpm: '<1', npm: '<1' } }, 'v24.9.0')).toBe(true)
    expect(enginesMet({ engines: { node: '' } }, undefined)).toBe(true)
    expect(enginesMet({ engines: { node: '>=14' } }, undefined)).toBeUndefined()
    expect(enginesMet({ engines: { node: '>=1.0.0-beta' } }, 'v24.9.0')).toBe(true)
    expect(enginesMet({ engines: { node: '>=14' } }, 'v25.0.0-pre')).toBe(true)
    expect(enginesNodeVersion('20.1.0')).toBe('20.1.0')
    expect(enginesNodeVersion(undefined)).toBe(process.version)
  })

  it('enginesChecker: enginesMet\'s answers (a range met or not, none, an empty one, no version), ranges repeated', () => {
    const snapshots = [{ engines: { node: '>=14' } }, { engines: { node: '<14' } }, { engines: { pnpm: '<1' } }, { engines: { node: '' } }, { engines: { node: '>=14' } }, {}]
    for (const version of ['v24.9.0', 'v25.0.0-pre', undefined]) {
      const check = enginesChecker(version)
      expect(snapshots.map((s) => check(s))).toEqual(snapshots.map((s) => enginesMet(s, version)))
    }
  })
})

describe('hoist: pnpm\'s hoist patterns, matched by pnpm\'s own matcher (@pnpm/config.matcher)', () => {
  // The root depends on `app`, which depends on each of the names below.
  const names = ['eslint-import-resolver-node', 'eslint', 'a?c', 'abc', '@babel/core', 'prettier']
  const lockfile = {
    importers: { '.': { dependencies: { app: '1.0.0' } } },
    packages: Object.fromEntries([['app@1.0.0', {}], ...names.map((n) => [`${n}@1.0.0`, {}])]),
  }
  const dir = (name: string) => `/p/node_modules/.pnpm/${name.replace('/', '+')}@1.0.0/node_modules/${name}`
  const planned = [
    { depPath: 'app@1.0.0', targetDir: dir('app'), children: Object.fromEntries(names.map((n) => [n, dir(n)])) },
    ...names.map((n) => ({ depPath: `${n}@1.0.0`, targetDir: dir(n), children: {} })),
  ] as unknown as Parameters<typeof hoist>[1]
  const hoisted = (hoistPattern: string[], publicHoistPattern: string[] = []) => {
    const { privateLinks, publicLinks } = hoist(lockfile, planned, { importers: [{ id: '.', direct: { app: dir('app') } }], hoistPattern, publicHoistPattern })
    return { private: Object.keys(privateLinks), public: Object.keys(publicLinks) }
  }
  it.each([
    // A `-` in a pattern (a public monorepo's setting) threw with the hand-written matcher.
    [['eslint-import-resolver-*'], ['eslint-import-resolver-node']],
    [['*', '!eslint*'], ['a?c', 'abc', '@babel/core', 'prettier']],
    [['!eslint*'], ['a?c', 'abc', '@babel/core', 'prettier']],
    // `?` is no wildcard for pnpm: only `*` is.
    [['a?c'], ['a?c']],
    [['@babel/*'], ['@babel/core']],
    [[], []],
  ])('hoistPattern %j: %j', (patterns, expected) => {
    expect(hoisted(patterns)).toEqual({ private: expected, public: [] })
  })
  it('publicHoistPattern wins over hoistPattern', () => {
    expect(hoisted(['*'], ['*prettier*'])).toEqual({ private: names.filter((n) => n !== 'prettier'), public: ['prettier'] })
  })

  it('a workspace: every importer\'s dependencies hoisted (the first importer naming an alias wins), the projects by their names unless a dependency has it', () => {
    const ws = {
      importers: { '.': { dependencies: { app: '1.0.0' } }, 'packages/x': { dependencies: { eslint: '1.0.0', prettier: '1.0.0' } } },
      packages: lockfile.packages,
    }
    const { record, privateLinks } = hoist(ws, planned, {
      importers: [{ id: '.', direct: { app: dir('app') } }, { id: 'packages/x', direct: { eslint: dir('eslint'), prettier: dir('prettier'), '@ws/y': '/p/packages/y' } }],
      hoistPattern: ['*'],
      publicHoistPattern: [],
      workspaceProjects: [{ id: 'packages/x', name: 'x', dir: '/p/packages/x' }, { id: 'packages/y', name: 'abc', dir: '/p/packages/y' }, { id: 'packages/z', name: 'prettier', dir: '/p/packages/z' }],
    })
    // `prettier` is an importer's dependency: project z is not hoisted; project y takes `abc` before app's dependency.
    expect(Object.keys(record)).toEqual(['eslint@1.0.0', 'prettier@1.0.0', 'eslint-import-resolver-node@1.0.0', 'a?c@1.0.0', '@babel/core@1.0.0', 'packages/x', 'packages/y'])
    expect(record['packages/y']).toEqual({ abc: 'private' })
    expect(privateLinks.abc).toBe('/p/packages/y')
    expect(privateLinks.x).toBe('/p/packages/x')
    expect(privateLinks['@ws/y']).toBeUndefined()
  })

  it('a workspace under a release before 11.28.0: the projects linked after the packages, neither recorded nor reserved (over a package hoisted under the same name, which stays recorded)', () => {
    const ws = {
      importers: { '.': { dependencies: { app: '1.0.0' } }, 'packages/x': { dependencies: { eslint: '1.0.0', prettier: '1.0.0' } } },
      packages: lockfile.packages,
    }
    const options = (projects: Array<{ id: string, name: string, dir: string }>): Parameters<typeof hoist>[2] => ({
      importers: [{ id: '.', direct: { app: dir('app'), '@ws/x': '/p/packages/x' } }, { id: 'packages/x', direct: { eslint: dir('eslint'), prettier: dir('prettier') } }],
      hoistPattern: ['*'],
      publicHoistPattern: [],
      workspaceProjects: projects,
      projectHoisting: 'linked',
    })
    // `prettier` is an importer's dependency, `@ws/x` the root's: neither project is linked.
    const { record, privateLinks } = hoist(ws, planned, options([{ id: 'packages/x', name: '@ws/x', dir: '/p/packages/x' }, { id: 'packages/y', name: 'y', dir: '/p/packages/y' }, { id: 'packages/z', name: 'prettier', dir: '/p/packages/z' }]))
    // The dependency named as a project comes first, in the project's place among the root's children (tailwindcss's monorepo).
    const packagesRecorded = ['prettier@1.0.0', 'eslint@1.0.0', 'eslint-import-resolver-node@1.0.0', 'a?c@1.0.0', 'abc@1.0.0', '@babel/core@1.0.0']
    expect(Object.keys(record)).toEqual(packagesRecorded)
    expect(privateLinks.y).toBe('/p/packages/y')
    expect(privateLinks.prettier).toBe(dir('prettier'))
    expect(privateLinks['@ws/x']).toBeUndefined()
    // A project named as app's dependency `abc`, which is hoisted too: pnpm's link of the project stays, the package stays recorded.
    const clash = hoist(ws, planned, options([{ id: 'packages/y', name: 'abc', dir: '/p/packages/y' }]))
    expect(clash.privateLinks.abc).toBe('/p/packages/y')
    expect(Object.keys(clash.record)).toEqual(['eslint@1.0.0', 'prettier@1.0.0', 'eslint-import-resolver-node@1.0.0', 'a?c@1.0.0', 'abc@1.0.0', '@babel/core@1.0.0'])
    // Two dependencies named as projects: in the projects' order, ahead of the importers' own.
    const two = hoist(ws, planned, options([{ id: 'packages/p', name: 'prettier', dir: '/p/packages/p' }, { id: 'packages/e', name: 'eslint', dir: '/p/packages/e' }]))
    expect(Object.keys(two.record).slice(0, 2)).toEqual(['prettier@1.0.0', 'eslint@1.0.0'])
  })
})

describe('installableHere: pnpm\'s platform check', () => {
  const other = process.platform === 'darwin' ? 'linux' : 'darwin'
  const otherCpu = process.arch === 'arm64' ? 'x64' : 'arm64'
  it('this machine, or the architectures the project supports', () => {
    expect(installableHere('p', { os: [process.platform] }, undefined, false)).toBe(true)
    expect(installableHere('p', { os: [other] }, undefined, false)).toBe(false)
    expect(installableHere('p', { os: [other] }, { os: ['current', other] }, false)).toBe(true)
    expect(installableHere('p', { cpu: [`!${process.arch}`] }, undefined, false)).toBe(false)
    expect(installableHere('p', { cpu: ['any'] }, undefined, false)).toBe(true)
    expect(installableHere('p', {}, undefined, false)).toBe(true)
  })

  it('an optional package declaring less than its whole platform: what its name says fills in the rest', () => {
    // Named for another os: skipped when optional, whatever it declares; not read when required.
    expect(installableHere(`@tool/${other}-${process.arch}`, { optional: true }, undefined, true)).toBe(false)
    expect(installableHere(`@tool/${other}-${process.arch}`, {}, undefined, false)).toBe(true)
    expect(installableHere(`tool_${process.platform}.${otherCpu}`, { optional: true }, undefined, true)).toBe(false)
    expect(installableHere(`@tool/${process.platform}-${process.arch}`, { optional: true }, undefined, true)).toBe(true)
    // The name fills in only what is not declared: a declared os wins over the name's.
    expect(installableHere(`@tool/${other}-${process.arch}`, { optional: true, os: [process.platform] }, undefined, true)).toBe(true)
    // No os in the name: read only when the package declares some of its platform.
    expect(installableHere(`tool-${otherCpu}`, { optional: true }, undefined, true)).toBe(true)
    expect(installableHere(`tool-${otherCpu}`, { optional: true, os: [process.platform] }, undefined, true)).toBe(false)
    // Everything declared: the name is not read.
    expect(installableHere(`@tool/${other}-${otherCpu}`, { optional: true, os: [process.platform], cpu: [process.arch], libc: ['glibc', 'musl'] }, undefined, true)).toBe(true)
    // One string, as a package.json may have it.
    expect(installableHere('tool', { os: other, cpu: process.arch }, undefined, false)).toBe(false)
    expect(installableHere('tool', { os: process.platform, cpu: process.arch }, undefined, false)).toBe(true)
    // A list with nulls (oxc-parser 0.8's `"libc": [null]`): pnpm's check reads only its strings, so it names no libc.
    expect(installableHere(`@oxc-parser/binding-${other}-${process.arch}`, { optional: true, os: [other], cpu: [process.arch], libc: [null] }, undefined, true)).toBe(false)
    expect(installableHere(`@oxc-parser/binding-${process.platform}-${process.arch}-musl`, { optional: true, os: [process.platform], cpu: [process.arch], libc: [null] }, undefined, true)).toBe(true)
  })

  it.runIf(process.platform === 'linux')('a libc named in an optional package\'s name (Linux)', () => {
    const mine = isMusl() ? 'musl' : 'gnu'
    const otherLibc = isMusl() ? 'gnu' : 'musl'
    expect(installableHere(`@rollup/rollup-linux-${process.arch}-${otherLibc}`, { optional: true, os: ['linux'], cpu: [process.arch] }, undefined, true)).toBe(false)
    expect(installableHere(`@rollup/rollup-linux-${process.arch}-${mine}`, { optional: true, os: ['linux'], cpu: [process.arch] }, undefined, true)).toBe(true)
  })
})

/** The settings pnpm passes for a frozen install of the project in `dir` with the default layout. */
const baseConfig = (dir: string): NativeInstallConfig => ({
  lockfileDir: dir,
  dir,
  frozenLockfile: true,
  nodeLinker: 'isolated',
  hoistPattern: ['*'],
  publicHoistPattern: [],
  storeDir: path.join(dir, 'store'),
  // Real pnpm always passes it.
  peersSuffixMaxLength: 1000,
})

/** The newest release the native install runs under. */
const VERIFIED_PNPM = PNPM_RELEASES.at(-1)!.version

describe('installNatively: what it leaves to pnpm, untouched', () => {
  const dir = freshDir('native-rules')
  const base = baseConfig(dir)
  it.each([
    [{}, '11.6.0', /^pnpm 11\.6\.0 is not one of the releases checked \(11\.7\.0 to /],
    [{}, '11.29.0', /^pnpm 11\.29\.0 is not one of the releases checked /],
    [{}, '11.28.11-rc.0', /^pnpm 11\.28\.11-rc\.0 is not one of the releases checked /],
    [{}, undefined, /^pnpm \(unknown version\) is not one of the releases checked /],
    [{ frozenLockfile: false, preferFrozenLockfile: false }, VERIFIED_PNPM, /^pnpm resolves \(preferFrozenLockfile false, /],
    [{ frozenLockfile: false, fixLockfile: true }, VERIFIED_PNPM, /^pnpm resolves /],
    [{ updateChecksums: true }, VERIFIED_PNPM, /^pnpm resolves /],
    [{ useLockfile: false }, VERIFIED_PNPM, /^pnpm resolves /],
    [{ nodeLinker: 'hoisted' }, VERIFIED_PNPM, /^nodeLinker hoisted$/],
    [{ enableGlobalVirtualStore: true }, VERIFIED_PNPM, /^enableGlobalVirtualStore$/],
    [{ dev: false }, VERIFIED_PNPM, /^not every dependency group is installed$/],
    [{ filter: ['x'] }, VERIFIED_PNPM, /^--filter$/],
    [{ hoist: false }, VERIFIED_PNPM, /^hoisting settings$/],
    // pnpm's config makes publicHoistPattern ['*'] of it: any other pattern beside it is not pnpm's.
    [{ shamefullyHoist: true, publicHoistPattern: ['*eslint*'] }, VERIFIED_PNPM, /^hoisting settings$/],
    [{ pnpmfile: ['/a/pnpmfile.cjs', '/b/.pnpmfile.cjs'] }, VERIFIED_PNPM, /^other pnpmfiles$/],
    [{ useGitBranchLockfile: true }, VERIFIED_PNPM, /^git branch lockfiles$/],
    [{ frozenStore: true }, VERIFIED_PNPM, /^frozenStore$/],
    [{ injectWorkspacePackages: true, workspaceDir: dir, workspacePackagePatterns: ['.', 'packages/*'] }, VERIFIED_PNPM, /^injectWorkspacePackages \(projects injected as copies\)$/],
    [{}, VERIFIED_PNPM, /^no lockfile$/],
  ] as Array<[Partial<NativeInstallConfig>, string | undefined, RegExp]>)('%j under pnpm %s', async (settings, version, why) => {
    const summary = await installNatively({ ...base, ...settings }, version, 'auto')
    expect(summary.installed).toBe(false)
    expect(summary.skipped).toMatch(why)
    expect(fs.readdirSync(dir)).toEqual([])
  })

  it('shamefullyHoist as pnpm\'s config hands it over (publicHoistPattern [\'*\']): no setting stands in the way', () => {
    expect(configReasons({ ...base, shamefullyHoist: true, publicHoistPattern: ['*'] }, VERIFIED_PNPM)).toEqual([])
  })

  it('extendNodePath false (shims with no NODE_PATH): no setting stands in the way', () => {
    expect(configReasons({ ...base, extendNodePath: false }, VERIFIED_PNPM)).toEqual([])
  })

  it('injectWorkspacePackages in a workspace of its root alone (no packages globs, or the root\'s), or with no workspace: no project to inject, no setting stands in the way', () => {
    for (const patterns of [undefined, ['.'], ['./']]) {
      expect(configReasons({ ...base, injectWorkspacePackages: true, workspaceDir: dir, workspacePackagePatterns: patterns }, VERIFIED_PNPM)).toEqual([])
    }
    expect(configReasons({ ...base, injectWorkspacePackages: true }, VERIFIED_PNPM)).toEqual([])
  })
})

/** A patch file, with CRLF line ends (pnpm hashes them as LF), and its hash as pnpm records it. */
const PATCH_FILE = path.join(freshDir('native-patch'), 'a.patch')
fs.writeFileSync(PATCH_FILE, 'diff --git a/x b/x\r\n--- a/x\r\n+++ b/x\r\n')
const PATCH_HASH = crypto.createHash('sha256').update('diff --git a/x b/x\n--- a/x\n+++ b/x\n').digest('hex')

describe('installNatively: lockfiles it leaves to pnpm, untouched', () => {
  /** A project whose package.json asks for `wanted` and whose lockfile holds `packages` (name@version → metadata lines; `optional` ones marked so in their snapshot). */
  function project (opts: { wanted?: Record<string, string>, settings?: string, importer?: string, packages?: Record<string, string>, resolutions?: Record<string, string>, snapshots?: Record<string, string>, top?: string, optionalDeps?: Record<string, string>, optional?: string[] }): string {
    const dir = freshDir('native-lockfile')
    const wanted = opts.wanted ?? { a: '1.0.0' }
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', dependencies: wanted, ...(opts.optionalDeps != null ? { optionalDependencies: opts.optionalDeps } : {}) }))
    const packages = opts.packages ?? { 'a@1.0.0': '' }
    const importer = opts.importer ?? Object.entries(wanted).map(([name, spec]) => `      ${name}:\n        specifier: ${spec}\n        version: ${spec}\n`).join('')
    const optional = Object.entries(opts.optionalDeps ?? {}).map(([name, spec]) => `      ${name}:\n        specifier: ${spec}\n        version: ${spec}\n`).join('')
    fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), [
      `lockfileVersion: '9.0'\n\n${opts.settings ?? 'settings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n'}`,
      opts.top ?? '',
      `importers:\n\n  .:\n    dependencies:\n${importer}${optional === '' ? '' : `    optionalDependencies:\n${optional}`}`,
      `packages:\n\n${Object.entries(packages).map(([key, lines]) => `  ${key}:\n    resolution: ${opts.resolutions?.[key] ?? '{integrity: sha512-AAAA}'}\n${lines}`).join('\n')}`,
      `snapshots:\n\n${Object.keys(packages).map((key) => opts.snapshots?.[key] != null ? `  ${key}:\n${opts.snapshots[key]}` : opts.optional?.includes(key) ? `  ${key}:\n    optional: true` : `  ${key}: {}`).join('\n\n')}\n`,
    ].join('\n'))
    return dir
  }
  const install = (dir: string, settings: Partial<NativeInstallConfig> = {}) => installNatively({ ...baseConfig(dir), offline: true, ...settings }, VERIFIED_PNPM, 'auto')

  it.each([
    ['a package.json ahead of the lockfile', { wanted: { a: '^1.0.0' }, importer: '      a:\n        specifier: 1.0.0\n        version: 1.0.0\n' }, {}, /^the lockfile is not up to date with package\.json \(a: package\.json wants "\^1\.0\.0", the lockfile has "1\.0\.0"\)$/],
    ['overrides the settings do not have', { top: 'overrides:\n  a: 1.0.0\n' }, {}, /^overrides differ from the lockfile$/],
    ['a pnpmfileChecksum of pnpmfiles no longer loaded', { top: 'pnpmfileChecksum: sha256-x\n' }, {}, /^the pnpmfiles changed since the lockfile was written \(run `pnpm install` once and commit the lockfile\)$/],
    ['lockfile settings other than the configured ones', {}, { autoInstallPeers: false }, /^the lockfile was written with other settings$/],
    ['dedupePeers, which the lockfile was not written with', {}, { dedupePeers: true }, /^the lockfile was written with other settings$/],
    ['ignoredOptionalDependencies the lockfile does not have', {}, { ignoredOptionalDependencies: ['x'] }, /^ignoredOptionalDependencies differ from the lockfile$/],
    // A plain install: pnpm resolves where the frozen one refuses, and records today's settings.
    ['a plain install, package.json ahead of the lockfile', { wanted: { a: '^1.0.0' }, importer: '      a:\n        specifier: 1.0.0\n        version: 1.0.0\n' }, { frozenLockfile: false }, /^the lockfile is not up to date with package\.json \(a: package\.json wants "\^1\.0\.0"/],
    ['a plain install, the lockfile\'s settings in another order than pnpm records them', { settings: 'settings:\n  excludeLinksFromLockfile: false\n  autoInstallPeers: true\n' }, { frozenLockfile: false }, /^pnpm records the lockfile's settings otherwise/],
    ['a plain install, a lockfile without settings', { settings: '' }, { frozenLockfile: false }, /^pnpm records the lockfile's settings otherwise/],
    // The install a user runs after adding the plugin: pnpm resolves, and writes the checksum (user try, s20).
    ['a plain install, a pnpmfileChecksum of pnpmfiles no longer loaded', { top: 'pnpmfileChecksum: sha256-x\n' }, { frozenLockfile: false }, /^a plain install, which resolves: the pnpmfiles changed since the lockfile was written/],
    ['a plain install under --offline (everything else up to date)', {}, { frozenLockfile: false }, /^1 packages are not in the store, and --offline$/],
    // pnpm links a missing directory dangling, with no commands.
    ['a link: dependency on a directory that is not there', { wanted: { a: 'link:../a' } }, {}, /^a@link:\.\.\/a: a link to a directory that is not there$/],
    ['a version pnpm\'s lockfile check refuses', { wanted: { a: '1.0' }, importer: "      a:\n        specifier: '1.0'\n        version: '1.0'\n", packages: { "'a@1.0'": '' } }, {}, /^a@1\.0: a version pnpm's lockfile check refuses$/],
    // Skipped as pnpm skips it (its engines.node not met, under engineStrict too): only `a` is left to find in the store.
    ['an optional package whose engines are not met', { optionalDeps: { o: '1.0.0' }, optional: ['o@1.0.0'], packages: { 'a@1.0.0': '', 'o@1.0.0': "    engines: {node: '<1'}\n" } }, { engineStrict: true }, /^1 packages are not in the store, and --offline$/],
    // pnpm checks no engines.pnpm of the lockfile's packages when it installs them: installed.
    ['an optional package wanting another pnpm', { optionalDeps: { o: '1.0.0' }, optional: ['o@1.0.0'], packages: { 'a@1.0.0': '', 'o@1.0.0': "    engines: {pnpm: '<1'}\n" } }, {}, /^2 packages are not in the store, and --offline$/],
    // A required package whose engines are not met: installed (a warning pnpm does not print), refused under engineStrict.
    ['a required package whose engines are not met', { packages: { 'a@1.0.0': "    engines: {node: '<1'}\n" } }, {}, /^1 packages are not in the store, and --offline$/],
    ['a required package whose engines are not met, under engineStrict', { packages: { 'a@1.0.0': "    engines: {node: '<1'}\n" } }, { engineStrict: true }, /^1 package needs pnpm: under engineStrict, an engines or platform field this machine does not meet \(pnpm refuses it\): a@1\.0\.0$/],
    // Skipped with the dependencies only it reaches (a wasm binding's runtime): only `a` is left to find in the store.
    ['an optional package for another platform with a dependency of its own', { optionalDeps: { 'tool-aix-ppc64': '1.0.0' }, optional: ['tool-aix-ppc64@1.0.0', 'runtime@1.0.0'], packages: { 'a@1.0.0': '', 'tool-aix-ppc64@1.0.0': '', 'runtime@1.0.0': '' }, snapshots: { 'tool-aix-ppc64@1.0.0': '    optional: true\n    dependencies:\n      runtime: 1.0.0\n' } }, {}, /^1 packages are not in the store, and --offline$/],
    // An optional package pnpm would skip, but not a plain registry one: pnpm checks it first.
    ['a skipped package with a tarball URL of its own', { optionalDeps: { 'tool-aix-ppc64': '1.0.0' }, optional: ['tool-aix-ppc64@1.0.0'], packages: { 'a@1.0.0': '', 'tool-aix-ppc64@1.0.0': '' }, resolutions: { 'tool-aix-ppc64@1.0.0': '{integrity: sha512-AAAA, tarball: https://example.invalid/t.tgz}' } }, {}, /^1 package needs pnpm: an optional package pnpm skips here that is not a plain registry package, which pnpm checks first: tool-aix-ppc64@1\.0\.0$/],
    // Required by a plain dependency of an optional package: pnpm installs it, whatever its name says.
    ['a package an optional one depends on', { optionalDeps: { o: '1.0.0' }, optional: ['o@1.0.0', 'helper-aix-ppc64@1.0.0'], packages: { 'a@1.0.0': '', 'o@1.0.0': '', 'helper-aix-ppc64@1.0.0': '' }, snapshots: { 'o@1.0.0': '    optional: true\n    dependencies:\n      helper-aix-ppc64: 1.0.0\n' } }, {}, /^3 packages are not in the store, and --offline$/],
    // Skipped as pnpm skips it (named for another os): only `a` is left to find in the store.
    ['an optional package for another platform', { optionalDeps: { 'tool-aix-ppc64': '1.0.0' }, optional: ['tool-aix-ppc64@1.0.0'], packages: { 'a@1.0.0': '', 'tool-aix-ppc64@1.0.0': '' } }, {}, /^1 packages are not in the store, and --offline$/],
    ['a cold store under --offline', {}, {}, /^1 packages are not in the store, and --offline$/],
    ['an alias that is no package name', { wanted: { '../a': 'npm:a@1.0.0' }, importer: "      '../a':\n        specifier: npm:a@1.0.0\n        version: a@1.0.0\n" }, {}, /^the lockfile names a dependency "\.\.\/a", which pnpm refuses \(ERR_PNPM_INVALID_DEPENDENCY_NAME\)$/],
    ['a package\'s alias that is no package name', { packages: { 'a@1.0.0': '', 'b@1.0.0': '' }, snapshots: { 'a@1.0.0': '    dependencies:\n      node_modules: b@1.0.0\n' } }, {}, /^the lockfile names a dependency "node_modules", which pnpm refuses \(ERR_PNPM_INVALID_DEPENDENCY_NAME\)$/],
    // Package names read from dependency paths, which pnpm refuses to place (issue 22).
    ...['evil/sub', '.bin', 'node_modules', '../../escape', '/abs', 'a\\0b'].map((name): [string, Parameters<typeof project>[0], Partial<NativeInstallConfig>, RegExp] =>
      [`a package named ${JSON.stringify(name)}`, { wanted: { a: '1.0.0' }, importer: `      a:\n        specifier: 1.0.0\n        version: "${name}@1.0.0"\n`, packages: { [`"${name}@1.0.0"`]: '' } }, {}, /^the lockfile (has a package named .*, which pnpm refuses to place \(ERR_PNPM_INVALID_DEPENDENCY_NAME\)|has a NUL in .*)$/]),
    ['a package no importer reaches', { packages: { 'a@1.0.0': '', 'b@1.0.0': '' } }, {}, /^the lockfile has packages no importer reaches$/],
    ['minimumReleaseAge under --offline', {}, { minimumReleaseAge: 1440 }, /^pnpm checks the lockfile against minimumReleaseAge first \(--offline\)$/],
    ['trustPolicy no-downgrade under --offline', {}, { trustPolicy: 'no-downgrade' }, /^pnpm checks the lockfile against trustPolicy first \(--offline\)$/],
    ['minimumReleaseAgeExclude with a range, which pnpm refuses', {}, { minimumReleaseAge: 1440, minimumReleaseAgeExclude: ['a@^1.0.0'] }, /^pnpm refuses minimumReleaseAgeExclude: "a@\^1\.0\.0" is not exact versions$/],
    ['trustPolicyExclude with a name pattern and versions, which pnpm refuses', {}, { trustPolicy: 'no-downgrade', trustPolicyExclude: ['a*@1.0.0'] }, /^pnpm refuses trustPolicyExclude: "a\*@1\.0\.0" has a name pattern with versions$/],
    // Patches: pnpm checks the lockfile's hashes of them, and applies them (or takes them from its side-effects cache).
    ['a patch file that is missing', { top: 'patchedDependencies:\n  a: abc\n' }, { patchedDependencies: { a: '/nowhere/a.patch' } }, /^the patch file of a cannot be read$/],
    ['a patch for a version range', { top: 'patchedDependencies:\n  a@^1.0.0: abc\n' }, { patchedDependencies: { 'a@^1.0.0': PATCH_FILE } }, /^a patchedDependencies key with a version range \(a@\^1\.0\.0\)$/],
    ['a patch whose hash is not the lockfile\'s', { top: 'patchedDependencies:\n  a: abc\n' }, { patchedDependencies: { a: PATCH_FILE } }, /^patchedDependencies differ from the lockfile$/],
    ['a patch the lockfile records but its package does not have', { top: `patchedDependencies:\n  a: ${PATCH_HASH}\n` }, { patchedDependencies: { a: PATCH_FILE } }, /^a@1\.0\.0: not the patch pnpm would apply to it$/],
  ] as Array<[string, Parameters<typeof project>[0], Partial<NativeInstallConfig>, RegExp]>)('%s', async (_name, shape, settings, why) => {
    const dir = project(shape)
    const before = fs.readdirSync(dir).sort()
    const summary = await install(dir, settings)
    expect(summary.installed).toBe(false)
    expect(summary.skipped).toMatch(why)
    expect(fs.readdirSync(dir).sort()).toEqual(before)
  })

  it('the project\'s own engines, which pnpm checks as it reads package.json: a pnpm range always, a Node range under engineStrict', async () => {
    const withEngines = (engines: Record<string, string>): string => {
      const dir = project({})
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, engines }))
      return dir
    }
    expect((await install(withEngines({ pnpm: '<11' }))).skipped).toMatch(/^the project's engines\.pnpm, which pnpm checks first \(ERR_PNPM_UNSUPPORTED_ENGINE\)$/)
    expect((await install(withEngines({ node: '<1' }), { engineStrict: true })).skipped).toMatch(/^the project's engines\.node, /)
    // Met, or a warning only: on to the store.
    expect((await install(withEngines({ node: '<1', pnpm: '>=11' }))).skipped).toMatch(/^1 packages are not in the store, and --offline$/)
    expect((await install(withEngines({ node: '>=1' }), { engineStrict: true })).skipped).toMatch(/^1 packages are not in the store, and --offline$/)
  })

  it('a link: dependency on a directory that is no project (an importer\'s, or a package\'s through an override): laid out as a project\'s link, on to the store', async () => {
    const dir = project({ wanted: { a: '1.0.0', t: 'link:tools/t' }, snapshots: { 'a@1.0.0': '    dependencies:\n      s: link:shims/s\n' } })
    expect((await install(dir)).skipped).toMatch(/^t@link:tools\/t: a link to a directory that is not there$/)
    fs.mkdirSync(path.join(dir, 'tools', 't'), { recursive: true })
    expect((await install(dir)).skipped).toMatch(/^s@link:shims\/s: a link to a directory that is not there$/)
    fs.mkdirSync(path.join(dir, 'shims', 's'), { recursive: true })
    expect((await install(dir)).skipped).toMatch(/^1 packages are not in the store, and --offline$/)
  })

  it('a dependency in two groups of package.json, locked in the one pnpm installs it from: on to the store', async () => {
    const dir = project({})
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, devDependencies: { a: '1.0.0' } }))
    expect((await install(dir)).skipped).toMatch(/^1 packages are not in the store, and --offline$/)
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, optionalDependencies: { a: '1.0.0' } }))
    expect((await install(dir)).skipped).toMatch(/^the lockfile is not up to date with package\.json \(a is not locked in optionalDependencies\)$/)
  })

  it('a lockfile without dependencies: pnpm resolves it, frozen or not', async () => {
    const dir = freshDir('native-lockfile')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0' }))
    fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n  .: {}\n")
    for (const frozenLockfile of [true, false]) {
      const summary = await install(dir, { frozenLockfile })
      expect(summary.skipped).toBe('a lockfile without dependencies')
    }
    expect(fs.readdirSync(dir).sort()).toEqual(['package.json', 'pnpm-lock.yaml'])
  })
})

describe('installNatively: workspaces it leaves to pnpm, untouched', () => {
  /** A workspace: the root and `packages/a`, which depends on `a`, and the lockfile of both (or of `importers`). */
  function workspace (importers = ['.', 'packages/a'], name = 'pa'): string {
    const dir = freshDir('native-workspace')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'root', version: '1.0.0' }))
    fs.mkdirSync(path.join(dir, 'packages', 'a'), { recursive: true })
    fs.writeFileSync(path.join(dir, 'packages', 'a', 'package.json'), JSON.stringify({ name, version: '1.0.0', dependencies: { a: '1.0.0' } }))
    const locked = (id: string) => id === '.' ? '  .: {}\n' : `  ${id}:\n    dependencies:\n      a:\n        specifier: 1.0.0\n        version: 1.0.0\n`
    fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), `lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n${importers.map(locked).join('\n')}\npackages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-AAAA}\n\nsnapshots:\n\n  a@1.0.0: {}\n`)
    return dir
  }
  const settings = (dir: string): NativeInstallConfig => ({ ...baseConfig(dir), workspaceDir: dir, workspacePackagePatterns: ['packages/*'] })
  const entries = (dir: string) => fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()
  const withDir = (sub: string) => () => {
    const dir = workspace()
    fs.mkdirSync(path.join(dir, sub), { recursive: true })
    return dir
  }
  it.each([
    ['projects that are not the lockfile\'s importers', () => workspace(['.']), {}, /^the workspace's projects \(\., packages\/a\) are not the lockfile's importers \(\.\)$/],
    ['a project\'s node_modules left by an earlier install', withDir('packages/a/node_modules/a'), {}, /^packages\/a\/node_modules is not empty$/],
    ['pnpm run from a directory that is no project', withDir('packages/b'), { dir: 'packages/b' }, /^pnpm runs in a directory that is not a project of the workspace$/],
    ['recursiveInstall false', () => workspace(), { recursiveInstall: false }, /^recursiveInstall false/],
    ['a plain install, a registry dependency named like a project', () => workspace(['.', 'packages/a'], 'a'), { frozenLockfile: false }, /^a plain install: packages\/a's a: a dependency a project of the workspace may take$/],
    ['a plain install under linkWorkspacePackages, a registry dependency named like a project', () => workspace(['.', 'packages/a'], 'a'), { frozenLockfile: false, linkWorkspacePackages: true }, /^a plain install: packages\/a's a: a dependency a project of the workspace may take$/],
    ['a glob this does not read', () => workspace(), { workspacePackagePatterns: ['packages/{a,b}'] }, /^a workspace pattern this does not read/],
    ['a project injected into another', () => {
      const dir = workspace()
      const manifest = path.join(dir, 'packages', 'a', 'package.json')
      fs.writeFileSync(manifest, JSON.stringify({ ...JSON.parse(fs.readFileSync(manifest, 'utf8')), dependenciesMeta: { a: { injected: true } } }))
      return dir
    }, {}, /^packages\/a\/package\.json: injected dependencies/],
  ] as Array<[string, () => string, Partial<NativeInstallConfig>, RegExp]>)('%s', async (_, make, more, why) => {
    const dir = make()
    const before = entries(dir)
    const config = { ...settings(dir), ...more, ...(more.dir != null ? { dir: path.join(dir, more.dir) } : {}) }
    const summary = await installNatively(config, VERIFIED_PNPM, 'auto')
    expect(summary.skipped).toMatch(why)
    expect(entries(dir)).toEqual(before)
  })
  it('bundledDependencies: a project\'s matter only when it is packed (on to the store); the root\'s are left to pnpm', async () => {
    const dir = workspace()
    const bundle = (file: string) => fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), bundledDependencies: ['a'] }))
    bundle(path.join(dir, 'packages', 'a', 'package.json'))
    const install = async () => (await installNatively({ ...settings(dir), offline: true }, VERIFIED_PNPM, 'auto')).skipped
    expect(await install()).toMatch(/^1 packages are not in the store, and --offline$/)
    bundle(path.join(dir, 'package.json'))
    expect(await install()).toMatch(/^package\.json fields this does not model$/)
  })
  it('the plan is a fresh clone\'s: a project\'s node_modules an earlier install left is no reason in it (the explain command plans with one there), only for the install', async () => {
    const dir = withDir('packages/a/node_modules/a')()
    const plan = planInstall(settings(dir), nativeRelease(VERIFIED_PNPM) as PnpmRelease)
    expect(typeof plan === 'string' ? plan : 'a plan').not.toMatch(/node_modules is not empty/)
    expect((await installNatively(settings(dir), VERIFIED_PNPM, 'auto')).skipped).toBe('packages/a/node_modules is not empty')
  })
})
