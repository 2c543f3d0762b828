/**
 * The plugin's plan of a lockfile's virtual store (`dist/plugin/install/virtual-store.js`): the directories a
 * real pnpm 11 install of the alotta-modules lockfile made (`fixtures/alotta-virtual-store-dirs.txt`,
 * listed from one), for packages and dependency links alike, and only packages whose installation is
 * plain linking; and the installs the head start leaves alone (the CLI runs it in
 * pnpmfile-prelink.spec.ts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { prelinkVirtualStore } from '../dist/plugin/head-start.js'
import { installsFrozen, lockfileMode } from '../dist/plugin/pnpm-config.js'
import { planVirtualStore, type LockfileObject, type PackageSnapshot } from '../dist/plugin/install/virtual-store.js'
import { peerSatisfactionEdges, type PeerEdgeRule } from '../dist/plugin/install/peer-edges.js'
// @ts-expect-error: plain JS module without types
import { readLockfile } from '../benchmark/lockfile.mjs'
import { freshDir, freshStoreDir } from './helpers/stores.js'

const all = { dependencies: true, devDependencies: true, optionalDependencies: true }
const plan = (lockfile: LockfileObject, over = {}) =>
  planVirtualStore(lockfile, { virtualStoreDir: '/p/node_modules/.pnpm', virtualStoreDirMaxLength: 120, include: all, ...over }).planned

/** pnpm's in-memory form of a v9 lockfile: `snapshots` merged into `packages`, importers' refs only. */
function inMemory (file: string): LockfileObject {
  const lf = readLockfile(file)
  const packages: Record<string, PackageSnapshot> = {}
  for (const [depPath, snapshot] of Object.entries<any>(lf.snapshots)) {
    const base = depPath.split('(', 1)[0]
    packages[depPath] = { ...lf.packages[base], ...snapshot }
  }
  const importers: LockfileObject['importers'] = {}
  for (const [id, importer] of Object.entries<any>(lf.importers)) {
    importers[id] = Object.fromEntries(Object.entries<any>(importer).map(([group, deps]) =>
      [group, Object.fromEntries(Object.entries<any>(deps).map(([alias, spec]) => [alias, spec.version]))]))
  }
  return { importers, packages }
}

describe('planVirtualStore', () => {
  it('places the alotta-modules packages and their dependency links where pnpm 11 does', () => {
    const file = path.join(import.meta.dirname, '../benchmark/fixtures/alotta-modules/pnpm-lock.yaml')
    const lockfile = inMemory(file)
    const planned = plan(lockfile)
    // The directories a real pnpm 11.28 install of this lockfile made in node_modules/.pnpm.
    const real = new Set(fs.readFileSync(path.join(import.meta.dirname, 'fixtures/alotta-virtual-store-dirs.txt'), 'utf8').trim().split('\n'))
    const where = (dir: string) => {
      const [vdir, nm, ...name] = path.relative('/p/node_modules/.pnpm', dir).split(path.sep)
      return { vdir, nm, name: name.join('/') }
    }
    expect(planned.length).toBeGreaterThan(1300)
    for (const p of planned) {
      expect(where(p.targetDir)).toEqual({ vdir: expect.any(String), nm: 'node_modules', name: p.name })
      expect(real.has(where(p.targetDir).vdir), p.depPath).toBe(true)
      for (const dir of Object.values(p.children ?? {})) expect(real.has(where(dir).vdir), `${p.depPath} -> ${dir}`).toBe(true)
      expect(p.filesIndexFile).toBe(`${lockfile.packages![p.depPath].resolution!.integrity as string}\t${p.name}@${p.version}`)
    }
    // Left to pnpm: platform-specific or optional packages and those with optional dependencies.
    const left = Object.keys(lockfile.packages!).filter((d) => !planned.some((p) => p.depPath === d))
    for (const depPath of left) {
      const s = lockfile.packages![depPath]
      expect(s.os != null || s.cpu != null || s.optional === true || s.optionalDependencies != null, depPath).toBe(true)
    }
  })

  it('takes only plain registry packages reachable through the included groups', () => {
    const integrity = { integrity: 'sha512-x' }
    const lockfile: LockfileObject = {
      importers: { '.': { dependencies: { plain: '1.0.0', peer: '1.0.0(plain@1.0.0)', alias: 'real@2.0.0' }, devDependencies: { dev: '1.0.0' } } },
      packages: {
        'plain@1.0.0': { resolution: integrity, dependencies: { patched: '1.0.0(patch_hash=abc)', mac: '1.0.0', opt: '1.0.0', withopt: '1.0.0', tar: '1.0.0', linked: '1.0.0', engines: '1.0.0' } },
        'peer@1.0.0(plain@1.0.0)': { resolution: integrity, dependencies: { plain: '1.0.0' } },
        'real@2.0.0': { resolution: integrity },
        'dev@1.0.0': { resolution: integrity },
        'patched@1.0.0(patch_hash=abc)': { resolution: integrity },
        'mac@1.0.0': { resolution: integrity, os: ['darwin'] },
        'opt@1.0.0': { resolution: integrity, optional: true },
        'withopt@1.0.0': { resolution: integrity, optionalDependencies: { opt: '1.0.0' } },
        'tar@1.0.0': { resolution: { ...integrity, tarball: 'https://example.com/tar.tgz' } },
        'linked@1.0.0': { resolution: integrity, dependencies: { local: 'link:../local' } },
        'engines@1.0.0': { resolution: integrity, engines: { node: '>=99' } },
        'unreachable@1.0.0': { resolution: integrity },
      },
    }
    const names = (over = {}) => plan(lockfile, over).map((p) => p.depPath)
    expect(names()).toEqual(['plain@1.0.0', 'peer@1.0.0(plain@1.0.0)', 'real@2.0.0', 'dev@1.0.0', 'engines@1.0.0'])
    expect(names({ include: { ...all, devDependencies: false }, engineStrict: true })).toEqual(['plain@1.0.0', 'peer@1.0.0(plain@1.0.0)', 'real@2.0.0'])
    // What pnpm installs itself, named so the head start can say it (a link: target is no package:
    // the package linked to it is pnpm's, unless the plan knows the lockfile's directory).
    expect(planVirtualStore(lockfile, { virtualStoreDir: '/p/node_modules/.pnpm', include: all }).notPlanned).toEqual([
      'patched@1.0.0(patch_hash=abc)', 'mac@1.0.0', 'opt@1.0.0', 'withopt@1.0.0', 'tar@1.0.0', 'linked@1.0.0',
    ])
    const withLinks = planVirtualStore(lockfile, { lockfileDir: '/p', virtualStoreDir: '/p/node_modules/.pnpm', include: all })
    expect(withLinks.notPlanned).not.toContain('linked@1.0.0')
    expect(withLinks.planned.find((p) => p.depPath === 'linked@1.0.0')?.children).toEqual({ local: '/local' })
    const [plain, peer, alias] = plan(lockfile)
    expect(peer.targetDir).toBe('/p/node_modules/.pnpm/peer@1.0.0_plain@1.0.0/node_modules/peer')
    expect(peer.children).toEqual({ plain: plain.targetDir })
    expect(alias).toMatchObject({ name: 'real', targetDir: '/p/node_modules/.pnpm/real@2.0.0/node_modules/real' })
  })
})

describe('planVirtualStore with a dependency group left out: the optional peers pnpm does not follow', () => {
  const integrity = { integrity: 'sha512-x' }
  const optionalPeer = { peerDependencies: { types: '*' }, peerDependenciesMeta: { types: { optional: true } } }
  const packages: LockfileObject['packages'] = {
    'tool@1.0.0(types@1.0.0)': { resolution: integrity, ...optionalPeer, dependencies: { types: '1.0.0', util: '1.0.0' } },
    // Its path names no peer.
    'lone@1.0.0': { resolution: integrity, ...optionalPeer, dependencies: { types: '1.0.0' } },
    // A required peer is followed whatever provided it.
    'req@1.0.0(types@1.0.0)': { resolution: integrity, peerDependencies: { types: '*' }, dependencies: { types: '1.0.0' } },
    'other@1.0.0': { resolution: integrity, dependencies: { tool: '1.0.0(types@1.0.0)' } },
    'types@1.0.0': { resolution: integrity },
    'util@1.0.0': { resolution: integrity },
  }
  /** The root lists `types` as a devDependency, which resolved its dependencies' peer; `b` reaches `tool` through `other`. */
  const workspace = (...rootDeps: string[]): LockfileObject => ({
    importers: {
      '.': { dependencies: Object.fromEntries(rootDeps.map((d) => [d, d === 'lone' ? '1.0.0' : '1.0.0(types@1.0.0)'])), devDependencies: { types: '1.0.0' } },
      b: { dependencies: { other: '1.0.0' } },
    },
    packages,
  })
  const prod = { ...all, devDependencies: false }
  /** Per planned package under --prod: its dependency links, and its dependencies where pnpm's filter rewrites its snapshot. */
  const layout = (lockfile: LockfileObject, rule: PeerEdgeRule, fromRoot = true) =>
    Object.fromEntries(plan(lockfile, { include: prod, skippedPeerEdges: peerSatisfactionEdges(lockfile, rule, fromRoot) })
      .map((p) => [p.depPath, { links: Object.keys(p.children ?? {}), filtered: p.filteredSnapshot && Object.keys(p.filteredSnapshot.dependencies ?? {}) }]))

  it('a peer the root\'s devDependency provided is neither laid out nor linked to, and the snapshot recorded is the filtered one', () => {
    expect(layout(workspace('tool'), 'bound-peers')).toEqual({
      'tool@1.0.0(types@1.0.0)': { links: ['util'], filtered: ['util'] },
      'util@1.0.0': { links: [], filtered: undefined },
      'other@1.0.0': { links: ['tool'], filtered: undefined },
    })
    // Without resolvePeersFromWorkspaceRoot, `b` (which does not list `types`) reaches `tool`: followed.
    expect(layout(workspace('tool'), 'bound-peers', false)['tool@1.0.0(types@1.0.0)']).toEqual({ links: ['types', 'util'], filtered: undefined })
  })

  it('a peer installed through another edge stays linked; a package whose path names no peer, by the release', () => {
    expect(layout(workspace('tool', 'req'), 'bound-peers')['tool@1.0.0(types@1.0.0)']).toEqual({ links: ['types', 'util'], filtered: undefined })
    // From 11.28.7 only the peers a package's path names; 11.28.0 to 11.28.6 skip any optional peer's edge.
    expect(layout(workspace('lone'), 'bound-peers')['lone@1.0.0']).toEqual({ links: ['types'], filtered: undefined })
    expect(layout(workspace('lone'), 'optional-peers')).toEqual({ 'lone@1.0.0': { links: [], filtered: [] }, 'other@1.0.0': { links: ['tool'], filtered: undefined }, 'tool@1.0.0(types@1.0.0)': { links: ['util'], filtered: ['util'] }, 'util@1.0.0': { links: [], filtered: undefined } })
  })

  it('without the option (every group installed, or a release before 11.28.0) every edge is followed', () => {
    expect(peerSatisfactionEdges(workspace('tool'), 'none', true)).toBeUndefined()
    expect(plan(workspace('tool'), { include: prod }).map((p) => p.depPath)).toContain('types@1.0.0')
  })
})

describe('planVirtualStore for the native install: what pnpm skips', () => {
  const integrity = { integrity: 'sha512-x' }
  const here = `${process.platform}-${process.arch}`
  /** Platform by a declared os, or by name for optional packages (as pnpm reads it); engines.node `<1` never met, `>=1` met. */
  const walk = (lockfile: LockfileObject, over: Record<string, unknown> = {}) => {
    const { planned, notPlanned, skipped } = planVirtualStore(lockfile, {
      virtualStoreDir: '/p/node_modules/.pnpm',
      include: all,
      installable: (name, snapshot, optional) => snapshot.os !== 'aix' && (!optional || !name.includes('aix')),
      enginesMet: (s) => s.engines?.node === '<1' ? false : s.engines?.node === '>=1' ? true : s.engines?.node == null ? true : undefined,
      ...over,
    })
    return { planned: Object.fromEntries(planned.map((p) => [p.depPath, Object.keys(p.children ?? {})])), notPlanned, skipped: skipped.sort() }
  }

  it('an optional package for another platform, with what only it reaches; a dependency also reached by a required path is installed', () => {
    const lockfile: LockfileObject = {
      importers: { '.': { dependencies: { core: '1.0.0', shared: '1.0.0' } } },
      packages: {
        'core@1.0.0': { resolution: integrity, optionalDependencies: { [`bin-${here}`]: '1.0.0', 'bin-aix-ppc64': '1.0.0' } },
        [`bin-${here}@1.0.0`]: { resolution: integrity, optional: true },
        'bin-aix-ppc64@1.0.0': { resolution: integrity, optional: true, dependencies: { runtime: '1.0.0', shared: '1.0.0' }, optionalDependencies: { 'deep-opt': '1.0.0' } },
        'runtime@1.0.0': { resolution: integrity, optional: true, dependencies: { leaf: '1.0.0' } },
        'leaf@1.0.0': { resolution: integrity, optional: true },
        'deep-opt@1.0.0': { resolution: integrity, optional: true },
        'shared@1.0.0': { resolution: integrity },
      },
    }
    expect(walk(lockfile)).toEqual({
      planned: { 'core@1.0.0': [`bin-${here}`], [`bin-${here}@1.0.0`]: [], 'shared@1.0.0': [] },
      notPlanned: [],
      skipped: ['bin-aix-ppc64@1.0.0', 'deep-opt@1.0.0', 'leaf@1.0.0', 'runtime@1.0.0'],
    })
    // One the lockfile does not mark optional, reached only through a skipped one: pnpm would lay it out unlinked.
    const unmarked = structuredClone(lockfile)
    delete unmarked.packages!['leaf@1.0.0'].optional
    expect(walk(unmarked).notPlanned).toEqual(['leaf@1.0.0'])
    // Required by an importer too: installed, whatever its name says, and its own dependencies with it.
    const required = structuredClone(lockfile)
    required.importers['.'].devDependencies = { 'bin-aix-ppc64': '1.0.0' }
    expect(walk(required)).toMatchObject({ notPlanned: [], skipped: [] })
    expect(Object.keys(walk(required).planned)).toEqual(Object.keys(lockfile.packages!))
    // A skipped package that is no plain registry one: pnpm checks it first.
    const tarball = structuredClone(lockfile)
    tarball.packages!['runtime@1.0.0'].resolution = { ...integrity, tarball: 'https://example.invalid/r.tgz' }
    expect(walk(tarball).notPlanned).toEqual(['runtime@1.0.0'])
  })

  it('engines: an optional package whose engines this Node does not meet is skipped; a required one installed, and under engineStrict refused unless the lockfile marks it optional', () => {
    const lockfile: LockfileObject = {
      importers: { '.': { dependencies: { a: '1.0.0' }, optionalDependencies: { old: '1.0.0' } } },
      packages: {
        'a@1.0.0': { resolution: integrity, dependencies: { strict: '1.0.0' }, optionalDependencies: { opt: '1.0.0' } },
        'old@1.0.0': { resolution: integrity, optional: true, engines: { node: '<1' }, dependencies: { dep: '1.0.0' } },
        'dep@1.0.0': { resolution: integrity, optional: true },
        'strict@1.0.0': { resolution: integrity, engines: { node: '<1' } },
        'opt@1.0.0': { resolution: integrity, optional: true, dependencies: { 'in-opt': '1.0.0' } },
        'in-opt@1.0.0': { resolution: integrity, optional: true, engines: { node: '<1' } },
      },
    }
    expect(walk(lockfile)).toEqual({
      planned: { 'a@1.0.0': ['strict', 'opt'], 'strict@1.0.0': [], 'opt@1.0.0': ['in-opt'], 'in-opt@1.0.0': [] },
      notPlanned: [],
      skipped: ['dep@1.0.0', 'old@1.0.0'],
    })
    // pnpm refuses `strict` (ERR_PNPM_UNSUPPORTED_ENGINE); `in-opt`, which only an optional package needs, it installs.
    expect(walk(lockfile, { engineStrict: true }).notPlanned).toEqual(['strict@1.0.0'])
    // Engines it cannot read: left to pnpm where they decide (an optional package), not where they do not.
    const unread = structuredClone(lockfile)
    unread.packages!['old@1.0.0'].engines = { node: '>=1.0.0-rc.1' }
    unread.packages!['strict@1.0.0'].engines = { node: '>=1.0.0-rc.1' }
    expect(walk(unread).notPlanned).toEqual(['old@1.0.0'])
    expect(walk(unread, { engineStrict: true }).notPlanned).toEqual(['old@1.0.0', 'strict@1.0.0'])
  })

  it('the walk is pnpm\'s: a package first met through an optional edge and later through a required one is installed', () => {
    const lockfile: LockfileObject = {
      importers: { '.': { optionalDependencies: { 'x-aix-ppc64': '1.0.0' }, dependencies: { b: '1.0.0' } } },
      packages: {
        'x-aix-ppc64@1.0.0': { resolution: integrity, optional: true },
        'b@1.0.0': { resolution: integrity, dependencies: { c: '1.0.0' } },
        'c@1.0.0': { resolution: integrity, dependencies: { 'x-aix-ppc64': '1.0.0' } },
      },
    }
    expect(walk(lockfile)).toEqual({ planned: { 'x-aix-ppc64@1.0.0': [], 'b@1.0.0': ['c'], 'c@1.0.0': ['x-aix-ppc64'] }, notPlanned: [], skipped: [] })
  })

  it('before 11.19.0 (`first-reach`): the first path to a package decides, depth first; below a package that is not installable what the lockfile marks optional is skipped, fit or not', () => {
    const firstReach = { skipRule: 'first-reach' }
    const lockfile: LockfileObject = {
      importers: { '.': { dependencies: { core: '1.0.0', later: '1.0.0' } } },
      packages: {
        // Its platform binding for another os is met first…
        'core@1.0.0': { resolution: integrity, optionalDependencies: { 'bin-aix-ppc64': '1.0.0' } },
        'bin-aix-ppc64@1.0.0': { resolution: integrity, optional: true, dependencies: { runtime: '1.0.0', plain: '1.0.0' } },
        // …so the runtime it needs is skipped, though a package installed later asks for it through an optional edge.
        'runtime@1.0.0': { resolution: integrity, optional: true },
        'later@1.0.0': { resolution: integrity, optionalDependencies: { runtime: '1.0.0' }, dependencies: { plain: '1.0.0' } },
        // Not marked optional: installed (linked from `later`), and what the lockfile marks optional below it is skipped, fit or not.
        'plain@1.0.0': { resolution: integrity, optionalDependencies: { [`bin-${here}`]: '1.0.0' } },
        [`bin-${here}@1.0.0`]: { resolution: integrity, optional: true },
      },
    }
    expect(walk(lockfile, firstReach)).toEqual({
      planned: { 'core@1.0.0': [], 'later@1.0.0': ['plain'], 'plain@1.0.0': [] },
      notPlanned: [],
      skipped: ['bin-aix-ppc64@1.0.0', `bin-${here}@1.0.0`, 'runtime@1.0.0'],
    })
    // From 11.19.0 the edges decide: the runtime `later` asks for is installed, and the binding `plain` asks for.
    expect(walk(lockfile)).toEqual({
      planned: { 'core@1.0.0': [], 'later@1.0.0': ['plain', 'runtime'], 'runtime@1.0.0': [], 'plain@1.0.0': [`bin-${here}`], [`bin-${here}@1.0.0`]: [] },
      notPlanned: [],
      skipped: ['bin-aix-ppc64@1.0.0'],
    })
    // `plain` reached only below the skipped binding: laid out unlinked by pnpm, left to it.
    const unlinked = structuredClone(lockfile)
    delete unlinked.packages!['later@1.0.0'].dependencies
    expect(walk(unlinked, firstReach).notPlanned).toEqual(['plain@1.0.0'])
    // The required edge of the newer walk does not install a package the lockfile marks optional that does not fit.
    const required: LockfileObject = {
      importers: { '.': { dependencies: { core: '1.0.0' } } },
      packages: {
        'core@1.0.0': { resolution: integrity, optionalDependencies: { opt: '1.0.0' } },
        'opt@1.0.0': { resolution: integrity, optional: true, dependencies: { 'opt-mac': '1.0.0' } },
        'opt-mac@1.0.0': { resolution: integrity, optional: true, os: 'aix' },
      },
    }
    expect(walk(required, firstReach)).toEqual({ planned: { 'core@1.0.0': ['opt'], 'opt@1.0.0': [] }, notPlanned: [], skipped: ['opt-mac@1.0.0'] })
    // Engines: an optional one's unread engines left to pnpm; under engineStrict a required one that does not fit.
    const engines: LockfileObject = {
      importers: { '.': { dependencies: { strict: '1.0.0' }, optionalDependencies: { unread: '1.0.0' } } },
      packages: {
        'strict@1.0.0': { resolution: integrity, engines: { node: '<1' } },
        'unread@1.0.0': { resolution: integrity, optional: true, engines: { node: '>=1.0.0-rc.1' } },
      },
    }
    expect(walk(engines, firstReach).notPlanned).toEqual(['unread@1.0.0'])
    expect(walk(engines, { ...firstReach, engineStrict: true }).notPlanned.sort()).toEqual(['strict@1.0.0', 'unread@1.0.0'])
  })

  it('a required package declaring another platform: installed (pnpm only warns), refused under engineStrict unless the lockfile marks it optional', () => {
    const lockfile: LockfileObject = {
      importers: { '.': { dependencies: { mac: '1.0.0', core: '1.0.0' } } },
      packages: {
        'mac@1.0.0': { resolution: integrity, os: 'aix' },
        'core@1.0.0': { resolution: integrity, optionalDependencies: { opt: '1.0.0' } },
        'opt@1.0.0': { resolution: integrity, optional: true, dependencies: { 'opt-mac': '1.0.0' } },
        'opt-mac@1.0.0': { resolution: integrity, optional: true, os: 'aix' },
      },
    }
    expect(walk(lockfile)).toEqual({ planned: { 'mac@1.0.0': [], 'core@1.0.0': ['opt'], 'opt@1.0.0': ['opt-mac'], 'opt-mac@1.0.0': [] }, notPlanned: [], skipped: [] })
    expect(walk(lockfile, { engineStrict: true }).notPlanned).toEqual(['mac@1.0.0'])
  })
})

describe('prelinkVirtualStore', () => {
  it('leaves installs it does not know to pnpm, untouched', async () => {
    const wantedLockfile: LockfileObject = {
      importers: { '.': { dependencies: { a: '1.0.0' } }, 'packages/b': {} },
      packages: { 'a@1.0.0': { resolution: { integrity: 'sha512-x' } } },
    }
    const ctx = () => ({ wantedLockfile, currentLockfile: { importers: {} }, existsNonEmptyWantedLockfile: true, lockfileDir: '/p', storeDir: '/s/v11' })
    const frozen = { frozenLockfile: true, hoistPattern: ['*'] }
    const cases: Array<[object | undefined, string]> = [
      [undefined, 'pnpm did not call hooks.updateConfig'],
      [{}, 'not a --frozen-lockfile install'],
      [{ ...frozen, dryRun: true }, 'nothing is to be written'],
      [{ ...frozen, nodeLinker: 'hoisted' }, 'nodeLinker hoisted'],
      [{ ...frozen, enableGlobalVirtualStore: true }, 'enableGlobalVirtualStore'],
      [{ ...frozen, force: true }, '--force'],
      [{ ...frozen, filter: ['a'] }, '--filter'],
      [{ ...frozen, filterProd: ['a'] }, '--filter'],
      [{ ...frozen, recursiveInstall: false }, 'recursiveInstall false'],
      [{ ...frozen, sharedWorkspaceLockfile: false }, 'sharedWorkspaceLockfile false'],
      [{ ...frozen, lockfileDir: '/elsewhere' }, 'another lockfile dir'],
      [{ ...frozen, symlink: false }, 'symlink false'],
      [{ ...frozen, virtualStoreOnly: true }, 'virtualStoreOnly'],
      [{ ...frozen, configDependencies: { '@pnpm/pacquet': '0.11.7+sha512-x' } }, 'pacquet installs'],
      // No hoisting on a first install: pnpm would leave packages found in place out of its graph.
      [{ ...frozen, hoist: false }, 'pnpm would not relink packages found in place (same hoist patterns as the last install)'],
    ]
    for (const [config, reason] of cases) {
      const c = ctx()
      const summary = await prelinkVirtualStore(c, config, 'auto')
      expect(summary).toMatchObject({ skipped: reason, linked: [], leftOut: [] })
      expect(c.currentLockfile).toEqual({ importers: {} })
    }
  })

  it('checks the manifests as the running release does: whether a publish directory is linked from 11.26.0 only', async () => {
    const lockfileDir = freshDir('prelink-publish-directory')
    fs.writeFileSync(path.join(lockfileDir, 'package.json'), JSON.stringify({ dependencies: { a: '1.0.0' }, publishConfig: { directory: 'dist', linkDirectory: false } }))
    // As pnpm before 11.26.0 writes it: no `linkDirectory: false`.
    const wantedLockfile = {
      importers: { '.': { specifiers: { a: '1.0.0' }, dependencies: { a: '1.0.0' }, publishDirectory: 'dist' } },
      packages: { 'a@1.0.0': { resolution: { integrity: 'sha512-x' } } },
    } as LockfileObject
    const under = async (version: string): Promise<string | undefined> => {
      const ctx = { wantedLockfile, currentLockfile: { importers: {} }, existsNonEmptyWantedLockfile: true, lockfileDir, storeDir: path.join(lockfileDir, 'store') }
      return (await prelinkVirtualStore(ctx, { frozenLockfile: true, hoistPattern: ['*'], peersSuffixMaxLength: 1000, userAgent: `pnpm/${version} npm/? node/v24.9.0 linux x64` }, 'auto')).skipped
    }
    expect(await under('11.28.11')).toMatch(/publishConfig\.linkDirectory differs from the lockfile\): pnpm refuses a frozen install$/)
    expect(await under('11.25.0')).toBeUndefined()
  })

  it('counts an install as frozen as pnpm 11 does: --frozen-lockfile, or CI with a lockfile', () => {
    expect(installsFrozen({ frozenLockfile: true }, false)).toBe(true)
    expect(installsFrozen({ ci: true }, true)).toBe(true)
    expect(installsFrozen({ ci: true }, false)).toBe(false)
    expect(installsFrozen({ ci: true, frozenLockfile: false }, true)).toBe(false)
    expect(installsFrozen({ ci: true, preferFrozenLockfile: false }, true)).toBe(false)
    expect(installsFrozen({ frozenLockfileIfExists: true }, true)).toBe(true)
    expect(installsFrozen({}, true)).toBe(false)
  })

  it('tells a plain install, which pnpm takes from the lockfile as it is when it is up to date, from one that always resolves', () => {
    expect(lockfileMode({ frozenLockfile: true }, true)).toBe('frozen')
    expect(lockfileMode({}, true)).toBe('if up to date')
    expect(lockfileMode({ frozenLockfile: false }, true)).toBe('if up to date')
    expect(lockfileMode({ ci: true }, false)).toBe('if up to date')
    expect(lockfileMode({ preferFrozenLockfile: false }, true)).toBeUndefined()
    for (const resolves of [{ fixLockfile: true }, { updateChecksums: true }, { useLockfile: false }]) {
      expect(lockfileMode({ frozenLockfile: true, ...resolves }, true)).toBeUndefined()
    }
  })

  it('leaves a plain install to pnpm (it decides after the hook whether the lockfile is up to date)', async () => {
    const wantedLockfile: LockfileObject = { importers: { '.': { dependencies: { a: '1.0.0' } } }, packages: { 'a@1.0.0': { resolution: { integrity: 'sha512-x' } } } }
    const ctx = { wantedLockfile, currentLockfile: { importers: {} }, existsNonEmptyWantedLockfile: true, lockfileDir: '/p', storeDir: '/s/v11' }
    expect((await prelinkVirtualStore(ctx, { hoistPattern: ['*'] }, 'auto')).skipped).toBe('not a --frozen-lockfile install')
    expect((await prelinkVirtualStore(ctx, { frozenLockfile: true, fixLockfile: true, hoistPattern: ['*'] }, 'auto')).skipped).toBe('not a --frozen-lockfile install')
  })

  it('reads the last install\'s hoist patterns as pnpm compares them (string patterns, an absolute modulesDir)', async () => {
    const lockfileDir = freshDir('prelink-modules')
    fs.writeFileSync(path.join(lockfileDir, 'package.json'), JSON.stringify({ dependencies: { a: '1.0.0' } }))
    const modulesDir = path.join(freshDir('prelink-abs-modules'), 'nm')
    fs.mkdirSync(modulesDir)
    fs.writeFileSync(path.join(modulesDir, '.modules.yaml'), JSON.stringify({ hoistPattern: ['*'], publicHoistPattern: '*eslint*' }))
    const wantedLockfile: LockfileObject = { importers: { '.': { specifiers: { a: '1.0.0' }, dependencies: { a: '1.0.0' } } }, packages: { 'a@1.0.0': { resolution: { integrity: 'sha512-x' } } } } as LockfileObject
    const ctx = { wantedLockfile, currentLockfile: { importers: {} }, existsNonEmptyWantedLockfile: true, lockfileDir, storeDir: freshStoreDir('prelink-store') }
    const config = { frozenLockfile: true, hoistPattern: ['*'], publicHoistPattern: '*eslint*', modulesDir, peersSuffixMaxLength: 1000 }
    // The same patterns as last time: pnpm would leave packages found in place out of its graph.
    expect((await prelinkVirtualStore(ctx, config, 'auto')).skipped).toMatch(/^pnpm would not relink/)
    // Other patterns: pnpm relinks them, so the head start runs (into the configured modules dir).
    const summary = await prelinkVirtualStore(ctx, { ...config, publicHoistPattern: '*types*' }, 'auto')
    expect(summary).toMatchObject({ linked: [], leftOut: [{ depPath: 'a@1.0.0', reason: 'not-in-store' }] })
    expect(summary.skipped).toBeUndefined()
  })
})
