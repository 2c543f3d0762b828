/**
 * Rules about the project itself, one by one: what becomes of its lifecycle scripts
 * (`projectScripts`), and when pnpm's frozen install finds its lockfile out of date
 * (`importerOutOfDate`, its catalogs: `catalogsOutOfDate`, `catalogResolutionStale`), and when
 * pnpm rewrites the workspace file's catalogs after it (`catalogsPnpmPrunes`), and the overrides
 * pnpm applies to each project's manifest before that check (`parseOverrides`, `overriddenManifest`), then its
 * `ignoredOptionalDependencies` (`hookedManifest`). native-install.spec.ts and pnpmfile-prelink.spec.ts compare the
 * installs they decide with stock pnpm's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { extendedProject, hookedManifest, importerOutOfDate, linkedProjectsOutOfDate, lockedOverrides, lockedSettingsRewritten, lockfileConfigMismatch, overriddenManifest, packageExtensionsChecksum, parseOverrides, type Override } from '../dist/plugin/install/frozen-check.js'
import { catalogResolutionStale, catalogsOutOfDate, catalogsPnpmPrunes, workspaceCatalogsPruned } from '../dist/plugin/install/catalogs.js'
import { projectScripts, runProjectScripts, workspaceScripts } from '../dist/plugin/install/project-scripts.js'
import { pnpmPaths } from '../dist/plugin/install/builds-on-miss.js'
import { referencePnpmDir } from './helpers/pnpm-cli.js'
import { findWorkspaceProjects } from '../dist/plugin/install/workspace-projects.js'
import { freshDir } from './helpers/stores.js'

describe('projectScripts: a project\'s lifecycle scripts', () => {
  const dir = freshDir('project-scripts')
  it.each([
    [{}, { stages: [], pendingBuild: false }],
    [{ postinstall: 'a', prepare: 'b', test: 'c' }, { stages: ['postinstall', 'prepare'], pendingBuild: false }],
    [{ postprepare: 'a', preprepare: 'b', install: 'c' }, { stages: ['install', 'preprepare', 'postprepare'], pendingBuild: false }],
    // pnpm's runner skips an empty script and npm's guard against other package managers.
    [{ preinstall: 'npx only-allow pnpm', postinstall: '' }, { stages: [], pendingBuild: false }],
  ])('scripts on, %j', (scripts, expected) => {
    expect(projectScripts({ scripts }, dir, false)).toEqual(expected)
  })

  it('scripts on: the root\'s preinstall or pnpm:devPreinstall leaves the install to pnpm (they run before anything is linked); another project\'s preinstall runs after, first', () => {
    expect(projectScripts({ scripts: { preinstall: 'x' } }, dir, false).leftToPnpm).toMatch(/preinstall script/)
    expect(projectScripts({ scripts: { 'pnpm:devPreinstall': 'x' } }, dir, false).leftToPnpm).toMatch(/pnpm:devPreinstall/)
    expect(projectScripts({ scripts: { postinstall: 'y', preinstall: 'x' } }, dir, false, false)).toEqual({ stages: ['preinstall', 'postinstall'], pendingBuild: false })
  })

  it('scripts on: a binding.gyp without install or preinstall scripts (pnpm builds it with node-gyp) leaves the install to pnpm, unless gypfile is false', () => {
    const gyp = freshDir('project-gyp')
    fs.writeFileSync(path.join(gyp, 'binding.gyp'), '{}')
    expect(projectScripts({ scripts: { postinstall: 'a' } }, gyp, false).leftToPnpm).toMatch(/binding\.gyp/)
    expect(projectScripts({ scripts: { postinstall: 'a' }, gypfile: false }, gyp, false).stages).toEqual(['postinstall'])
    expect(projectScripts({ scripts: { install: 'a' } }, gyp, false).stages).toEqual(['install'])
  })

  it.each([
    [{ postinstall: 'a' }, true],
    [{ prepublish: 'a' }, true],
    [{ test: 'a' }, false],
    // pnpm looks at the first of its scripts that is set: an empty one counts as none.
    [{ preinstall: '', postinstall: 'a' }, false],
  ])('scripts off, %j: a pending build %s', (scripts, pending) => {
    expect(projectScripts({ scripts }, dir, true)).toEqual({ stages: [], pendingBuild: pending })
  })
})

describe('importerOutOfDate: pnpm\'s frozen check of a project against the lockfile', () => {
  const importer = { specifiers: { a: '^1.0.0', b: '2.0.0' }, dependencies: { a: '1.0.1' }, devDependencies: { b: '2.0.0' } }
  it('up to date', () => {
    expect(importerOutOfDate(importer, { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' } }, true)).toBeUndefined()
  })
  it.each([
    ['a dependency added', { dependencies: { a: '^1.0.0', c: '1' }, devDependencies: { b: '2.0.0' } }, /^c: package.json wants "1"/],
    ['a specifier changed', { dependencies: { a: '^1.1.0' }, devDependencies: { b: '2.0.0' } }, /^a: /],
    ['a dependency removed', { dependencies: { a: '^1.0.0' } }, /^b: /],
    ['a dependency moved to another group', { dependencies: { a: '^1.0.0', b: '2.0.0' } }, /^b is not locked in dependencies$/],
    ['publishConfig.directory added', { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' }, publishConfig: { directory: 'dist' } }, /publishConfig.directory/],
    ['dependenciesMeta added', { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' }, dependenciesMeta: { a: { injected: true } } }, /dependenciesMeta/],
  ])('%s', (_, manifest, why) => {
    expect(importerOutOfDate(importer, manifest, true)).toMatch(why)
  })
  it('publishConfig.linkDirectory: false, which lockfiles of pnpm before 11.28 do not record (tanstack-query\'s fixture)', () => {
    const published = { ...importer, publishDirectory: 'dist' }
    const manifest = { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' }, publishConfig: { directory: 'dist', linkDirectory: false } }
    expect(importerOutOfDate(published, manifest, true)).toMatch(/linkDirectory/)
    expect(importerOutOfDate({ ...published, linkDirectory: false }, manifest, true)).toBeUndefined()
    // Releases before 11.26.0 do not compare it.
    expect(importerOutOfDate(published, manifest, true, undefined, false)).toBeUndefined()
  })
  it('auto-installed peers are locked as dependencies', () => {
    const withPeer = { specifiers: { a: '^1.0.0', p: '^3' }, dependencies: { a: '1.0.1', p: '3.1.0' } }
    expect(importerOutOfDate(withPeer, { dependencies: { a: '^1.0.0' }, peerDependencies: { p: '^3' } }, true)).toBeUndefined()
    expect(importerOutOfDate(withPeer, { dependencies: { a: '^1.0.0' }, peerDependencies: { p: '^3' } }, false)).toMatch(/^p: /)
  })
  // pnpm locks a name declared in several groups once, in the group it installs it from
  // (getWantedDependencies: optional over prod over dev over an auto-installed peer), and its
  // check (satisfiesPackageManifest) wants it there: the layout follows the lockfile.
  it.each([
    ['dependencies and devDependencies', { dependencies: { a: '^1.0.0' }, devDependencies: { a: '^1.0.0' } }, 'dependencies', 'devDependencies'],
    ['dependencies and optionalDependencies', { dependencies: { a: '^1.0.0' }, optionalDependencies: { a: '^1.0.0' } }, 'optionalDependencies', 'dependencies'],
    ['devDependencies and optionalDependencies', { devDependencies: { a: '^1.0.0' }, optionalDependencies: { a: '^1.0.0' } }, 'optionalDependencies', 'devDependencies'],
    ['peerDependencies and devDependencies', { peerDependencies: { a: '^1.0.0' }, devDependencies: { a: '^1.0.0' } }, 'devDependencies', 'dependencies'],
    ['peerDependencies and dependencies', { peerDependencies: { a: '^1.0.0' }, dependencies: { a: '^1.0.0' } }, 'dependencies', 'devDependencies'],
  ])('a dependency in %s: locked in %s, not in %s', (_, manifest, lockedIn, notIn) => {
    expect(importerOutOfDate({ specifiers: { a: '^1.0.0' }, [lockedIn]: { a: '1.0.1' } }, manifest, true)).toBeUndefined()
    expect(importerOutOfDate({ specifiers: { a: '^1.0.0' }, [notIn]: { a: '1.0.1' } }, manifest, true)).toMatch(new RegExp(`^a is not locked in ${lockedIn}$`))
  })
})

describe('overrides: pnpm\'s frozen check reads each project\'s manifest with them applied', () => {
  const catalogs = { default: { '@types/node': '24.13.3' }, tools: { vite: '^8.0.0' } }
  const parsed = (overrides: Record<string, unknown>): Override[] => {
    const result = parseOverrides(overrides, catalogs)
    if (typeof result === 'string') throw new Error(result)
    return result
  }
  const apply = (manifest: Record<string, unknown>, overrides: Record<string, unknown>, dir = '/ws'): Record<string, unknown> | string =>
    overriddenManifest(manifest, parsed(overrides), '/ws', dir)

  it('a peer also in devDependencies, overridden to an npm: alias (no peer range): then in dependencies too, and locked there (vue-language-tools\' fixture)', () => {
    const manifest = apply({ peerDependencies: { ts: '*' }, devDependencies: { ts: 'latest' } }, { ts: 'npm:ts-bridge@6.0.3' })
    expect(manifest).toEqual({ peerDependencies: { ts: '*' }, dependencies: { ts: 'npm:ts-bridge@6.0.3' }, devDependencies: { ts: 'npm:ts-bridge@6.0.3' } })
    const importer = { specifiers: { ts: 'npm:ts-bridge@6.0.3' }, dependencies: { ts: 'ts-bridge@6.0.3' } }
    expect(importerOutOfDate(importer, manifest as Record<string, unknown>, true)).toBeUndefined()
    expect(importerOutOfDate({ ...importer, dependencies: undefined, devDependencies: importer.dependencies }, manifest as Record<string, unknown>, true)).toMatch(/^ts is not locked in dependencies$/)
  })

  it('the lockfile records each trimmed key with its catalog: value resolved (vitest\'s fixture: catalog: and workspace:* values)', () => {
    const overrides = parsed({ ' @types/node ': 'catalog:', vite: 'catalog:tools', vitest: 'workspace:*', 'a>b@^1': '2.0.0' })
    expect(lockedOverrides(overrides)).toEqual({ '@types/node': '24.13.3', vite: '^8.0.0', vitest: 'workspace:*', 'a>b@^1': '2.0.0' })
    expect(overrides[3]).toMatchObject({ name: 'b', range: '^1', parent: { name: 'a' } })
  })

  it('what pnpm refuses or this does not read is a reason', () => {
    expect(parseOverrides({ vite: 'catalog:nope' }, catalogs)).toMatch(/^the override "vite": no usable nope catalog entry for vite \(pnpm refuses: ERR_PNPM_CATALOG_IN_OVERRIDES\)$/)
    expect(parseOverrides({ 'vite@': '8.0.0' }, catalogs)).toMatch(/a convergence override/)
    expect(parseOverrides({ 'Not A Name': '1.0.0' }, catalogs)).toMatch(/a selector this does not read/)
    expect(parseOverrides({ vite: 8 }, catalogs)).toMatch(/is not a string/)
  })

  it('a direct dependency takes the override\'s specifier (vue-language-tools\' "latest" becomes an npm: alias; nuxt-devtools\' catalog: a range)', () => {
    const manifest = { name: 'p', devDependencies: { typescript: 'latest', kit: 'catalog:types' }, dependencies: { other: '1.0.0' } }
    expect(apply(manifest, { typescript: 'npm:bridge@6.0.3', kit: '^0.5.2' })).toEqual({ ...manifest, devDependencies: { typescript: 'npm:bridge@6.0.3', kit: '^0.5.2' } })
    // The project's own manifest is left as it was.
    expect(manifest.devDependencies.typescript).toBe('latest')
  })

  it('only where the range meets the specifier (astro\'s @types/node@22), and parent>name only in the project of that name and version', () => {
    const manifest = { name: 'app', version: '1.2.0', dependencies: { '@types/node': '^22.0.0', b: '^1.0.0' }, devDependencies: { c: '^2.0.0' } }
    expect(apply(manifest, { '@types/node@22': '^22.19.0', 'app@1>b': '1.5.0', 'other>c': '3.0.0', 'c@1': '1.0.0' })).toMatchObject({ dependencies: { '@types/node': '^22.19.0', b: '1.5.0' }, devDependencies: { c: '^2.0.0' } })
    expect(apply(manifest, { '@types/node@20': '^20.1.0', 'app@2>b': '1.5.0' })).toMatchObject({ dependencies: { '@types/node': '^22.0.0', b: '^1.0.0' } })
  })

  it('a peer stays a peer under a range, becomes a dependency under anything else; "-" removes', () => {
    const manifest = { name: 'p', peerDependencies: { typescript: '*', vite: '^7' }, devDependencies: { typescript: 'latest', gone: '1.0.0' } }
    expect(apply(manifest, { typescript: 'npm:bridge@6.0.3', vite: '^8.0.0', gone: '-' })).toEqual({
      name: 'p',
      peerDependencies: { typescript: '*', vite: '^8.0.0' },
      devDependencies: { typescript: 'npm:bridge@6.0.3' },
      dependencies: { typescript: 'npm:bridge@6.0.3' },
    })
  })

  it('a local path is made relative to each project (nitro\'s link:./shims/…)', () => {
    const manifest = { name: 'p', dependencies: { shim: 'link:shims/shim', lib: '^1.0.0', tar: '1.0.0' } }
    const overrides = { shim: 'link:./shims/shim', lib: 'workspace:./packages/lib', tar: './vendor/tar.tgz' }
    expect(apply(manifest, overrides)).toMatchObject({ dependencies: { shim: 'link:shims/shim', lib: 'workspace:./packages/lib', tar: './vendor/tar.tgz' } })
    expect(apply(manifest, overrides, '/ws/packages/lib')).toMatchObject({ dependencies: { shim: 'link:../../shims/shim', lib: 'workspace:.', tar: '../../vendor/tar.tgz' } })
  })

  it('several overrides with different values for one dependency: pnpm picks by its own order, so a reason', () => {
    expect(apply({ dependencies: { a: '^1.2.0' } }, { 'a@^1': '1.5.0', 'a@>=1.1': '1.6.0' })).toMatch(/^overrides "a@\^1", "a@>=1\.1" all apply to a$/)
    expect(apply({ dependencies: { a: '^1.2.0' } }, { 'a@^1': '1.5.0', 'a@>=1.1': '1.5.0' })).toMatchObject({ dependencies: { a: '1.5.0' } })
  })

  it('lockfileConfigMismatch compares the lockfile\'s overrides with the configured ones as pnpm records them, in any order', () => {
    const config = { autoInstallPeers: true, peersSuffixMaxLength: 1000, catalogs, overrides: { vite: 'catalog:tools', a: '1.0.0' } }
    expect(lockfileConfigMismatch({ overrides: { a: '1.0.0', vite: '^8.0.0' } }, config, '.')).toBeUndefined()
    expect(lockfileConfigMismatch({ overrides: { a: '1.0.0', vite: 'catalog:tools' } }, config, '.')).toBe('overrides differ from the lockfile')
    expect(lockfileConfigMismatch({ overrides: { a: '1.0.0' } }, config, '.')).toBe('overrides differ from the lockfile')
    expect(lockfileConfigMismatch({}, { ...config, overrides: {} }, '.')).toBeUndefined()
  })
})

/** TanStack/store's packageExtensions (8699e10) and the checksum pnpm 11.9.0 recorded for them in its lockfile. */
const TANSTACK_STORE_EXTENSIONS = {
  extensions: { '@vue/composition-api': { peerDependencies: { vue: '>= 2.5' } } },
  checksum: 'sha256-q0WqwD1UO6YpRIfbn6gzMcNpC1UKGtJSx45gsLN8yFo=',
}

describe('hookedManifest: the overrides, then ignoredOptionalDependencies, as pnpm\'s read-package hooks apply them', () => {
  const overrides = parseOverrides({ b: '2.0.0' }, {}) as Override[]
  it('drops the optional dependencies the patterns match (pnpm\'s matcher), from dependencies too; nothing else', () => {
    const manifest = { dependencies: { a: '1.0.0', c: '1.0.0' }, optionalDependencies: { a: '1.0.0', b: '1.0.0', '@biomejs/cli-linux-x64': '2.0.0' }, devDependencies: { b: '1.0.0' } }
    expect(hookedManifest(manifest, overrides, ['a', '@biomejs/cli-*'], '/ws', '/ws')).toEqual({ dependencies: { c: '1.0.0' }, optionalDependencies: { b: '2.0.0' }, devDependencies: { b: '2.0.0' } })
    // biomejs/biome's pattern, which matches none of its packages.
    expect(hookedManifest(manifest, [], ['@biomejs/cli*-'], '/ws', '/ws')).toBe(manifest)
    expect(hookedManifest(manifest, [], ['!a'], '/ws', '/ws')).toEqual({ dependencies: { a: '1.0.0', c: '1.0.0' }, optionalDependencies: { a: '1.0.0' }, devDependencies: { b: '1.0.0' } })
    expect(manifest.optionalDependencies).toHaveProperty('a')
  })
})

describe('lockfileConfigMismatch: the lockfile\'s settings against today\'s (pnpm\'s getOutdatedLockfileSettings)', () => {
  const config = { autoInstallPeers: true, excludeLinksFromLockfile: false, dedupePeers: false, peersSuffixMaxLength: 1000, injectWorkspacePackages: false }
  const settings = { autoInstallPeers: true, excludeLinksFromLockfile: false }
  it('the same: no mismatch', () => {
    expect(lockfileConfigMismatch({ settings }, config, '.')).toBeUndefined()
    expect(lockfileConfigMismatch({ settings: { ...settings, dedupePeers: true, peersSuffixMaxLength: 40, injectWorkspacePackages: true } }, { ...config, dedupePeers: true, peersSuffixMaxLength: 40, injectWorkspacePackages: true }, '.')).toBeUndefined()
    expect(lockfileConfigMismatch({ settings, ignoredOptionalDependencies: ['b', 'a'] }, { ...config, ignoredOptionalDependencies: ['a', 'b'] }, '.')).toBeUndefined()
  })
  it.each([
    ['dedupePeers', { settings }, { dedupePeers: true }, /^the lockfile was written with other settings$/],
    ['peersSuffixMaxLength', { settings }, { peersSuffixMaxLength: 40 }, /^the lockfile was written with other settings$/],
    ['peersSuffixMaxLength in the lockfile', { settings: { ...settings, peersSuffixMaxLength: 40 } }, {}, /^the lockfile was written with other settings$/],
    // pnpm's own options default it; a config without it is not pnpm's.
    ['no peersSuffixMaxLength configured', { settings }, { peersSuffixMaxLength: undefined }, /^the lockfile was written with other settings$/],
    ['injectWorkspacePackages', { settings }, { injectWorkspacePackages: true }, /^the lockfile was written with other settings$/],
    ['ignoredOptionalDependencies', { settings, ignoredOptionalDependencies: ['a'] }, {}, /^ignoredOptionalDependencies differ/],
    ['a packageExtensionsChecksum without packageExtensions', { settings, packageExtensionsChecksum: 'sha256-x' }, {}, /^packageExtensions differ/],
    ['packageExtensions the lockfile was not written with', { settings }, { packageExtensions: { a: { dependencies: { b: '1' } } } }, /^packageExtensions differ/],
    ['packageExtensions other than the lockfile was written with', { settings, packageExtensionsChecksum: TANSTACK_STORE_EXTENSIONS.checksum }, { packageExtensions: { '@vue/composition-api': { peerDependencies: { vue: '>= 3' } } } }, /^packageExtensions differ/],
    ['patchedDependencies the lockfile was not written with', { settings }, { patchedDependencies: { a: 'patches/a.patch' } }, /^patchedDependencies differ/],
    ['patchedDependencies no longer configured', { settings, patchedDependencies: { a: 'sha256-x' } }, {}, /^patchedDependencies differ/],
  ] as Array<[string, Parameters<typeof lockfileConfigMismatch>[0], object, RegExp]>)('%s: a mismatch', (_, lockfile, changed, why) => {
    expect(lockfileConfigMismatch(lockfile, { ...config, ...changed }, '.')).toMatch(why)
  })

  it('packageExtensions: the lockfile\'s packageExtensionsChecksum is pnpm\'s sorted object hash of them (TanStack/store\'s, as pnpm 11.9.0 wrote it)', () => {
    expect(packageExtensionsChecksum(TANSTACK_STORE_EXTENSIONS.extensions)).toBe(TANSTACK_STORE_EXTENSIONS.checksum)
    expect(packageExtensionsChecksum({})).toBeUndefined()
    expect(packageExtensionsChecksum(undefined)).toBeUndefined()
    expect(lockfileConfigMismatch({ settings, packageExtensionsChecksum: TANSTACK_STORE_EXTENSIONS.checksum }, { ...config, packageExtensions: TANSTACK_STORE_EXTENSIONS.extensions }, '.')).toBeUndefined()
  })

  it('extendedProject: a workspace project a package extension names (by name, or name@range), which pnpm\'s hook extends too', () => {
    const manifests = [{ name: 'root' }, { name: '@ws/lib', version: '1.0.0' }, {}]
    expect(extendedProject(TANSTACK_STORE_EXTENSIONS.extensions, manifests)).toBeUndefined()
    expect(extendedProject(undefined, manifests)).toBeUndefined()
    expect(extendedProject({ '@ws/lib@^1': { dependencies: { a: '1' } } }, manifests)).toBe('@ws/lib')
    expect(extendedProject({ root: { dependencies: { a: '1' } } }, manifests)).toBe('root')
    expect(extendedProject({ '@ws/lib-other': {}, 'roo@1': {} }, manifests)).toBeUndefined()
  })

  it('lockedSettingsRewritten: what a plain install records is the lockfile\'s settings, in pnpm\'s order, defaults left out', () => {
    expect(lockedSettingsRewritten(settings, config)).toBeUndefined()
    expect(lockedSettingsRewritten({ autoInstallPeers: true, dedupePeers: true, excludeLinksFromLockfile: false, peersSuffixMaxLength: 40, injectWorkspacePackages: true }, { ...config, dedupePeers: true, peersSuffixMaxLength: 40, injectWorkspacePackages: true })).toBeUndefined()
    for (const other of [undefined, { autoInstallPeers: true }, { excludeLinksFromLockfile: false, autoInstallPeers: true }, { ...settings, peersSuffixMaxLength: 1000 }, { ...settings, dedupePeers: false }]) {
      expect(lockedSettingsRewritten(other, config)).toMatch(/^pnpm records the lockfile's settings otherwise/)
    }
  })
})

describe('catalogs: pnpm\'s frozen checks of catalog: specifiers', () => {
  const locked = {
    default: { util: { specifier: '^1.0.0', version: '1.0.1' } },
    tools: { host: { specifier: '1.0.0', version: '1.0.0' } },
  }
  it('the lockfile\'s entries have the workspace file\'s specifiers: up to date (entries only the workspace file has are fine)', () => {
    expect(catalogsOutOfDate({ default: { util: '^1.0.0', other: '2' }, tools: { host: '1.0.0' }, unused: { x: '1' } }, locked)).toBeUndefined()
    expect(catalogsOutOfDate({}, undefined)).toBeUndefined()
    expect(catalogsOutOfDate(undefined, {})).toBeUndefined()
  })
  it.each([
    ['an entry changed', { default: { util: '^2.0.0' }, tools: { host: '1.0.0' } }, /default catalog's util is "\^2\.0\.0", the lockfile has "\^1\.0\.0"/],
    ['an entry removed', { default: { util: '^1.0.0' }, tools: {} }, /tools catalog's host is undefined/],
    ['a catalog removed', { default: { util: '^1.0.0' } }, /tools catalog's host/],
    // pnpm takes some git specifiers as the same repository: left to pnpm here.
    ['a git specifier spelt otherwise', { default: { util: '^1.0.0' }, tools: { host: 'github:o/host#1.0.0' } }, /tools catalog's host/],
  ])('%s: out of date', (_, configured, why) => {
    expect(catalogsOutOfDate(configured, locked)).toMatch(why)
  })
  it('a lockfile catalogs section not of pnpm\'s shape: out of date (left to pnpm)', () => {
    expect(catalogsOutOfDate({}, { default: { util: '^1.0.0' } })).toMatch(/is not a specifier and a version/)
    expect(catalogsOutOfDate({}, [])).toMatch(/is not a mapping/)
  })
  it('lockfileConfigMismatch checks the catalogs first, as pnpm does', () => {
    const lockfile = { catalogs: locked, overrides: { x: '1' } }
    expect(lockfileConfigMismatch(lockfile, { catalogs: { default: { util: '^1.0.0' } } }, '.')).toMatch(/^the catalogs differ from the lockfile \(the tools catalog's host/)
  })

  const importer = {
    specifiers: { util: 'catalog:', host: 'catalog:tools', other: '^3.0.0' },
    dependencies: { util: '1.0.1', other: '3.0.0' },
    devDependencies: { host: '1.0.0(peer@2.0.0)' },
  }
  it('each catalog: dependency locked at its entry\'s version (peers\' suffix aside): up to date', () => {
    expect(catalogResolutionStale(importer, locked)).toBeUndefined()
    expect(catalogResolutionStale({ ...importer, specifiers: { ...importer.specifiers, host: 'catalog: tools ' } }, locked)).toBeUndefined()
  })
  it('a dependency locked at another version than its entry: stale', () => {
    expect(catalogResolutionStale({ ...importer, dependencies: { util: '1.0.2', other: '3.0.0' } }, locked)).toBe('util is locked at 1.0.2, its default catalog entry at 1.0.1')
  })
  it('what pnpm does not compare: no entry in the lockfile, an unknown catalog, a locked link or alias', () => {
    expect(catalogResolutionStale(importer, { tools: locked.tools })).toBeUndefined()
    expect(catalogResolutionStale({ ...importer, specifiers: { ...importer.specifiers, util: 'catalog:nope' } }, locked)).toBeUndefined()
    expect(catalogResolutionStale({ ...importer, dependencies: { util: 'link:../util', other: '3.0.0' } }, locked)).toBeUndefined()
    expect(catalogResolutionStale({ ...importer, dependencies: { util: 'util2@1.0.2', other: '3.0.0' } }, locked)).toBeUndefined()
  })
  it('importerOutOfDate reports a stale catalog resolution after the manifest\'s checks', () => {
    const manifest = { dependencies: { util: 'catalog:', other: '^3.0.0' }, devDependencies: { host: 'catalog:tools' } }
    expect(importerOutOfDate(importer, manifest, true, locked)).toBeUndefined()
    expect(importerOutOfDate({ ...importer, dependencies: { util: '1.0.0', other: '3.0.0' } }, manifest, true, locked)).toMatch(/^util is locked at 1\.0\.0/)
  })

  describe('catalogsPnpmPrunes: cleanupUnusedCatalogs after an install', () => {
    const manifest = { dependencies: { util: 'catalog:', host: 'catalog:tools' }, peerDependencies: { peer: 'catalog:' } }
    it.each([
      ['every entry used', { catalog: { util: '1', peer: '2' }, catalogs: { tools: { host: '1' } } }, false],
      ['no catalogs', { packages: ['.'] }, false],
      ['a falsy field is left as it is', { catalog: null, catalogs: { tools: { host: '1' }, gone: null } }, false],
      ['a named entry used as catalog: (the default)', { catalog: { util: '1', peer: '2' }, catalogs: { tools: { host: '1', util: '2' } } }, false],
      ['an unused default entry', { catalog: { util: '1', peer: '2', x: '3' } }, true],
      ['an unused named entry', { catalogs: { tools: { host: '1', x: '1' } } }, true],
      ['an entry of another catalog', { catalogs: { tools: { host: '1' }, other: { host: '1' } } }, true],
      ['an empty catalog', { catalog: {} }, true],
      ['an empty catalogs field', { catalogs: {} }, true],
    ])('%s: %s', (_, workspace, prunes) => {
      expect(catalogsPnpmPrunes(workspace, [manifest], undefined)).toBe(prunes)
    })
    it('catalog:default keeps an entry written under catalogs.default, not one under catalog (pnpm\'s rules for each field)', () => {
      const takesDefault = { dependencies: { x: 'catalog:default' } }
      expect(catalogsPnpmPrunes({ catalog: { x: '1' } }, [takesDefault], undefined)).toBe(true)
      expect(catalogsPnpmPrunes({ catalogs: { default: { x: '1' } } }, [takesDefault], undefined)).toBe(false)
    })
    it('an entry the lockfile records counts as used', () => {
      expect(catalogsPnpmPrunes({ catalogs: { tools: { host: '1', gone: '1' } } }, [manifest], { tools: { gone: { specifier: '1', version: '1.0.0' } } })).toBe(false)
      expect(catalogsPnpmPrunes({ catalog: { gone: '1' } }, [{}], { default: { gone: { specifier: '1', version: '1.0.0' } } })).toBe(false)
    })
    it('the setting off, or no pnpm-workspace.yaml: nothing to check', () => {
      const dir = freshDir('catalog-prune')
      expect(workspaceCatalogsPruned({ workspaceDir: dir }, [{}], undefined)).toBeUndefined()
      expect(workspaceCatalogsPruned({ workspaceDir: dir, catalogPrune: true }, [{}], undefined)).toBeUndefined()
      fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'catalog:\n  x: 1.0.0\n')
      expect(workspaceCatalogsPruned({ workspaceDir: dir, catalogPrune: false }, [{}], undefined)).toBeUndefined()
      expect(workspaceCatalogsPruned({ workspaceDir: dir, cleanupUnusedCatalogs: true }, [{}], undefined)).toMatch(/^cleanupUnusedCatalogs: /)
    })
  })
})

describe('workspaceScripts: the scripts of every project of a workspace', () => {
  const dir = freshDir('workspace-scripts')
  const project = (id: string, scripts: Record<string, string>) => ({ id, dir: path.join(dir, id), manifest: { scripts } })
  it('scripts off: every project with a build script is pending, by importer id, the root first', () => {
    expect(workspaceScripts([project('.', { prepare: 'a' }), project('packages/a', { test: 'x' }), project('packages/b', { postinstall: 'b' })], true))
      .toMatchObject({ runs: [], shown: [], pendingProjects: ['.', 'packages/b'] })
  })
  it('scripts on: every project\'s stages, by project; the root\'s preinstall leaves the install to pnpm, another\'s is a stage', () => {
    const scripts = workspaceScripts([project('.', { prepare: 'a' }), project('packages/a', { test: 'x' }), project('packages/b', { install: 'b', prepare: 'c' })], false)
    expect(scripts.shown).toEqual(['prepare (root)', 'install (packages/b)', 'prepare (packages/b)'])
    expect(workspaceScripts([project('.', { prepare: 'a' }), project('packages/a', { test: 'x' })], false).shown).toEqual(['prepare'])
    expect(scripts.runs.map((r) => [r.id, r.stages])).toEqual([['.', ['prepare']], ['packages/b', ['install', 'prepare']]])
    expect(workspaceScripts([project('.', { preinstall: 'a' }), project('packages/b', {})], false).leftToPnpm).toMatch(/preinstall script/)
    expect(workspaceScripts([project('.', {}), project('packages/b', { preinstall: 'b' })], false).shown).toEqual(['preinstall (packages/b)'])
  })
})

describe('runProjectScripts: the projects\' stages as pnpm\'s runner runs them', () => {
  const ctx = {
    pnpm: pnpmPaths(path.join(referencePnpmDir, 'bin', 'pnpm.mjs'))!,
    processEnv: process.env,
    cwd: '/',
    extraEnv: { npm_command: 'install' },
    initCwd: '/',
    unsafePerm: true,
    extraBinPaths: [],
  }
  /** A workspace: `b` depends on `a`; `c` on nothing. Each script appends to the root's log. */
  function workspace (scripts: Record<string, Record<string, string>>) {
    const root = freshDir('run-project-scripts')
    const projects = ['a', 'b', 'c'].map((id) => {
      const dir = path.join(root, id)
      fs.mkdirSync(dir)
      const manifest = { name: id, version: '1.0.0', scripts: scripts[id] ?? {} }
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest))
      return { id, dir, manifest }
    })
    const graph = new Map([[projects[0].dir, []], [projects[1].dir, [projects[0].dir]], [projects[2].dir, []]])
    const runs = projects.flatMap((p) => Object.keys(p.manifest.scripts).length > 0 ? [{ ...p, stages: Object.keys(p.manifest.scripts) }] : [])
    return { root, projects, graph, runs, log: () => fs.readFileSync(path.join(root, 'log'), 'utf8') }
  }

  it('a project after those it depends on, its stages in order; piped, each announced and logged as pnpm\'s lifecycle records', async () => {
    const ws = workspace({ a: { install: 'sleep 0.3; echo a-install >> ../log', prepare: 'echo a-prepare >> ../log' }, b: { postinstall: 'echo b >> ../log' } })
    const records: Array<Record<string, unknown>> = []
    expect(await runProjectScripts(ws.projects, ws.runs, ws.graph, 5, { ...ctx, lifecycle: (r: Record<string, unknown>) => records.push(r) })).toBeUndefined()
    expect(ws.log()).toBe('a-install\na-prepare\nb\n')
    expect(records.filter((r) => r.script != null).map((r) => r.stage)).toEqual(['install', 'prepare', 'postinstall'])
  })

  it('inherited (outside a workspace): the `$ <script>` line, the output not read, no records', async () => {
    const ws = workspace({ c: { postinstall: 'echo c >> ../log' } })
    const announced: string[] = []
    const records: unknown[] = []
    await runProjectScripts(ws.projects, ws.runs, ws.graph, 5, { ...ctx, stdio: 'inherit', announce: (s: string) => announced.push(s), lifecycle: (r: unknown) => records.push(r) })
    expect(ws.log()).toBe('c\n')
    expect(announced).toEqual(['echo c >> ../log'])
    expect(records).toEqual([])
  })

  it('one fails: its error, the projects waiting for it never started (said), one under way ends', async () => {
    const ws = workspace({ a: { install: 'exit 2' }, b: { postinstall: 'echo b >> ../log' }, c: { postinstall: 'sleep 0.2; echo c >> ../log' } })
    const failure = await runProjectScripts(ws.projects, ws.runs, ws.graph, 5, ctx)
    expect(failure).toMatchObject({ id: 'a', unstarted: ['b'], failed: { code: 'ELIFECYCLE', errno: 2, stage: 'install' } })
    expect(ws.log()).toBe('c\n')
  })
})

describe('findWorkspaceProjects: the projects pnpm finds by the packages globs', () => {
  const root = freshDir('workspace-globs')
  const manifest = (dir: string, name = path.basename(dir)) => {
    fs.mkdirSync(path.join(root, dir), { recursive: true })
    fs.writeFileSync(path.join(root, dir, 'package.json'), JSON.stringify({ name }))
  }
  for (const dir of ['.', 'packages/a', 'packages/b', 'packages/b/fixtures/c', 'packages/.hidden', 'packages/nested/d', 'examples/vue/2x', 'examples/vue/3x', 'tools', 'packages/a/node_modules/e', 'docs/bower_components/f']) manifest(dir)
  fs.mkdirSync(path.join(root, 'packages', 'no-manifest'))
  const ids = (patterns: string[]) => {
    const found = findWorkspaceProjects(root, patterns)
    return typeof found === 'string' ? found : found.map((p) => p.id)
  }
  it.each([
    [['packages/*'], ['.', 'packages/a', 'packages/b']],
    [['packages/**'], ['.', 'packages/a', 'packages/b', 'packages/b/fixtures/c', 'packages/nested/d']],
    [['packages/**', '!packages/b'], ['.', 'packages/a', 'packages/b/fixtures/c', 'packages/nested/d']],
    [['examples/vue/*', '!examples/vue/2*', 'tools/'], ['.', 'examples/vue/3x', 'tools']],
    [['./packages/a', '**/docs/**'], ['.', 'packages/a']],
    [['.'], ['.']],
    [['packages/.hidden'], ['.', 'packages/.hidden']],
  ])('%j: %j (no node_modules, bower_components or dot directories but named ones; the root always)', (patterns, expected) => {
    expect(ids(patterns)).toEqual(expected)
  })
  it('a pattern of another kind, or a manifest of another format: left to pnpm', () => {
    expect(ids(['packages/{a,b}'])).toMatch(/a workspace pattern this does not read/)
    expect(ids(['packages/?'])).toMatch(/a workspace pattern this does not read/)
    fs.mkdirSync(path.join(root, 'yaml'))
    fs.writeFileSync(path.join(root, 'yaml', 'package.yaml'), 'name: y\n')
    expect(ids(['yaml'])).toMatch(/a manifest other than package\.json$/)
    expect(ids(['packages/@(a|b)'])).toMatch(/a workspace pattern this does not read/)
    expect(ids(['packages/+(a)'])).toMatch(/a workspace pattern this does not read/)
  })
  it('`@` and `+` are literal text where no extglob\'s `(` follows (biomejs/biome: packages/@biomejs/*)', () => {
    const scoped = freshDir('workspace-globs-scoped')
    for (const dir of ['packages/@biomejs/biome', 'packages/@biomejs/cli-linux-x64', 'packages/a+b', 'packages/c']) {
      fs.mkdirSync(path.join(scoped, dir), { recursive: true })
      fs.writeFileSync(path.join(scoped, dir, 'package.json'), '{}')
    }
    fs.writeFileSync(path.join(scoped, 'package.json'), '{}')
    const found = (patterns: string[]) => {
      const projects = findWorkspaceProjects(scoped, patterns)
      return typeof projects === 'string' ? projects : projects.map((p) => p.id)
    }
    expect(found(['packages/@biomejs/*', 'packages/a+b'])).toEqual(['.', 'packages/@biomejs/biome', 'packages/@biomejs/cli-linux-x64', 'packages/a+b'])
    expect(found(['packages/@*/*'])).toEqual(['.', 'packages/@biomejs/biome', 'packages/@biomejs/cli-linux-x64'])
    expect(found(['packages/*+*'])).toEqual(['.', 'packages/a+b'])
  })
  it('a symbolic link to a directory the globs reach: left to pnpm (its glob follows links)', () => {
    fs.symlinkSync(path.join(root, 'tools'), path.join(root, 'packages', 'linked'))
    expect(ids(['packages/*'])).toMatch(/^a symbolic link in the workspace/)
    fs.unlinkSync(path.join(root, 'packages', 'linked'))
  })
})

describe('linkedProjectsOutOfDate: a plain install\'s check of the workspace\'s links', () => {
  const project = (id: string, manifest: Record<string, unknown>) => ({ id, dir: path.join('/w', id), manifest })
  const lib = project('packages/lib', { name: '@w/lib', version: '1.2.0' })
  const app = (spec: string, ref = 'link:../lib') => ({
    projects: [project('.', {}), lib, project('packages/app', { name: 'app', dependencies: { '@w/lib': spec, util: '^1.0.0' } })],
    importers: { '.': {}, 'packages/lib': {}, 'packages/app': { dependencies: { '@w/lib': ref, util: '1.0.0' } } },
  })
  it.each([
    ['workspace:*', undefined],
    ['workspace:^', undefined],
    ['workspace:^1.0.0', undefined],
    ['workspace:~', undefined],
    // biomejs/biome's `workspace:`: an empty range, which semver reads as `*`.
    ['workspace:', undefined],
    ['workspace:^2.0.0', /version 1\.2\.0 does not meet workspace:\^2\.0\.0$/],
    // Paths, aliases and tildes with a version: pnpm's own reading decides.
    ['workspace:../lib', /checks its own way$/],
    ['workspace:@w/lib@*', /checks its own way$/],
    ['workspace:~1.0.0', /checks its own way$/],
  ])('%s', (spec, why) => {
    const { projects, importers } = app(spec)
    const answer = linkedProjectsOutOfDate(importers, projects, false)
    if (why == null) expect(answer).toBeUndefined()
    else expect(answer).toMatch(why)
  })
  it('an empty workspace: range, as semver reads it: a prerelease does not meet it', () => {
    const { projects, importers } = app('workspace:')
    projects[1] = project('packages/lib', { name: '@w/lib', version: '2.0.0-beta.1' })
    expect(linkedProjectsOutOfDate(importers, projects, false)).toMatch(/version 2\.0\.0-beta\.1 does not meet workspace:$/)
  })
  it('a link for a plain range (linkWorkspacePackages linked it, biomejs/biome\'s platform projects): taken as it is without the setting, else checked against the project linked', () => {
    for (const linkWorkspacePackages of [false, true]) {
      for (const spec of ['^1.0.0', '1.2.0', 'workspace:*']) {
        const { projects, importers } = app(spec)
        expect(linkedProjectsOutOfDate(importers, projects, linkWorkspacePackages), spec).toBeUndefined()
      }
    }
    const behind = app('^2.0.0')
    expect(linkedProjectsOutOfDate(behind.importers, behind.projects, false)).toBeUndefined()
    expect(linkedProjectsOutOfDate(behind.importers, behind.projects, true)).toMatch(/version 1\.2\.0 does not meet \^2\.0\.0$/)
    const elsewhere = app('^1.0.0', 'link:../../vendor/lib')
    expect(linkedProjectsOutOfDate(elsewhere.importers, elsewhere.projects, true)).toMatch(/checks its own way$/)
    const tag = app('latest')
    expect(linkedProjectsOutOfDate(tag.importers, tag.projects, true)).toMatch(/checks its own way$/)
  })
  it('a registry dependency a project could take: pnpm decides', () => {
    const { projects, importers } = app('^1.0.0', '1.2.0')
    expect(linkedProjectsOutOfDate(importers, projects, false)).toMatch(/a dependency a project of the workspace may take$/)
    expect(linkedProjectsOutOfDate(importers, projects, true)).toMatch(/a dependency a project of the workspace may take$/)
  })
})
