/**
 * The side-effects cache key of a built or patched package (lib/plugin/install/side-effects.ts,
 * patches.ts), checked against pnpm 11.28.11's own functions read out of its bundle: the object
 * hash, the dependency graph's hash (cycles too), the patch file's hash; and the build policy.
 * The keys of the releases before 11.28.1 (`recursive`) against 11.17.0's, 11.19.0's and 11.28.0's own.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildVerdict, recordedBuilds, engineName, graphHashes, hashObject, plannedGraph, repeatedIdOnPath, sideEffectsCacheKey, sideEffectsCacheKeys, type GraphNode } from '../dist/plugin/install/side-effects.js'
import { readLockfileFile } from '../dist/plugin/install/lockfile-file.js'
import { patchFileHash, patchHashInDepPath } from '../dist/plugin/install/patches.js'
import { planVirtualStore, refToDepPath, type LockfileObject, type PlannedPackage } from '../dist/plugin/install/virtual-store.js'
import { getPkgIdWithPatchHash } from '@pnpm/deps.path'
import { pnpmFunction } from './helpers/pnpm-bundle.js'
import { fetchPnpm } from '../scripts/pnpm-versions.mjs'
import { freshDir } from './helpers/stores.js'
import { StoreIndex } from '@pnpm/store.index'

const require = createRequire(import.meta.url)
/** esbuild's CommonJS wrapper, enough for object-hash. */
const __commonJS = (mod: Record<string, (e: object, m: { exports: object }) => void>) => {
  let m: { exports: object } | undefined
  return () => {
    if (m == null) {
      m = { exports: {} }
      Object.values(mod)[0](m.exports, m)
    }
    return m.exports
  }
}
const imports = { __require: require, __commonJS, __toESM: (m: unknown) => ({ default: m }) }
/** Module variables of the object hasher, in the order they are initialised. */
const uses = ['require_object_hash', 'import_object_hash', 'defaultOptions4', 'withSortingOptions']
type Graph = Record<string, GraphNode>
const pnpmHashObject = pnpmFunction<(o: unknown) => string>('hashObject', imports, uses)
const pnpmGraphHash = pnpmFunction<(o: { depsGraph: Graph, cache: object, depPath: string, context: unknown }) => string>('calcDepGraphHash', imports, uses)
const pnpmContext = pnpmFunction<(a: unknown) => unknown>('createDepGraphHashContext', imports, uses)

/** pnpm's hash of every node, each computed from a fresh cache and from a shared one. */
function pnpmHashes (graph: Graph): Record<string, string> {
  const shared = {}
  const out: Record<string, string> = {}
  for (const id of Object.keys(graph)) {
    out[id] = pnpmGraphHash({ depsGraph: graph, cache: {}, depPath: id, context: pnpmContext(undefined) })
    expect(pnpmGraphHash({ depsGraph: graph, cache: shared, depPath: id, context: pnpmContext(undefined) })).toBe(out[id])
  }
  return out
}

const ours = (graph: Graph): Record<string, string> => Object.fromEntries(graphHashes(new Map(Object.entries(graph))))

/** A graph of `n` nodes with `edges` random edges (a seeded generator: the same graphs every run). */
function randomGraph (seed: number, n: number, edges: number): Graph {
  let state = seed
  const next = (k: number): number => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state % k
  }
  const graph: Graph = {}
  // Few distinct ids, so that cycles of equal-looking members need the refinement.
  for (let i = 0; i < n; i++) graph[`n${i}`] = { fullPkgId: `p${next(3)}@1.0.0:sha512-x`, children: {} }
  for (let e = 0; e < edges; e++) graph[`n${next(n)}`].children[`dep${next(4)}`] = `n${next(n)}`
  return graph
}

describe('hashObject: pnpm\'s object hash of nested objects of strings', () => {
  it.each([
    [{ id: 'a@1.0.0:sha512-x', deps: {} }],
    [{ id: 'é@1', deps: { z: 'h1', a: '', 'ü-𝒳': 'h2' } }],
    [{ member: 'l', component: 'c' }],
    [{ b: { y: 'v', x: '' }, a: { c: { d: 'e' } } }],
  ])('%j', (value) => {
    expect(hashObject(value)).toBe(pnpmHashObject(value))
  })
})

describe('graphHashes: pnpm\'s calcDepGraphHash for every node', () => {
  it('a chain, a diamond, a missing child', () => {
    const graph: Graph = {
      a: { fullPkgId: 'a@1.0.0:i1', children: { b: 'b', c: 'c' } },
      b: { fullPkgId: 'b@1.0.0:i2', children: { d: 'd' } },
      c: { fullPkgId: 'c@1.0.0:i3', children: { d: 'd', gone: 'nowhere' } },
      d: { fullPkgId: 'd@1.0.0:i4', children: {} },
    }
    expect(ours(graph)).toEqual(pnpmHashes(graph))
  })
  it('a self-dependency, a two-cycle, a symmetric three-cycle with a tail', () => {
    const graph: Graph = {
      self: { fullPkgId: 's@1:i', children: { self: 'self', x: 'x' } },
      x: { fullPkgId: 'x@1:i', children: { y: 'y' } },
      y: { fullPkgId: 'y@1:i', children: { x: 'x', t: 't1' } },
      t1: { fullPkgId: 't@1:i', children: { t: 't2' } },
      t2: { fullPkgId: 't@1:i', children: { t: 't3' } },
      t3: { fullPkgId: 't@1:i', children: { t: 't1', tail: 'd' } },
      d: { fullPkgId: 'd@1:i', children: {} },
    }
    expect(ours(graph)).toEqual(pnpmHashes(graph))
  })
  it.each([[1, 6, 8], [2, 10, 20], [3, 12, 30], [4, 20, 45], [5, 30, 60], [6, 8, 30]])('random graph %i (%i nodes, %i edges)', (seed, n, edges) => {
    const graph = randomGraph(seed, n, edges)
    expect(ours(graph)).toEqual(pnpmHashes(graph))
  })
})

describe('graphHashes of some roots: the hashes of the nodes they reach, each the whole graph\'s', () => {
  it.each([[1, 6, 8], [2, 10, 20], [3, 12, 30], [4, 20, 45], [5, 30, 60], [6, 8, 30]])('random graph %i (%i nodes, %i edges)', (seed, n, edges) => {
    const graph = new Map(Object.entries(randomGraph(seed, n, edges)))
    const all = graphHashes(graph)
    for (const roots of [['n0'], ['n1', 'n3'], [`n${n - 1}`, 'n0', 'n2']]) {
      const some = graphHashes(graph, roots)
      for (const root of roots) expect(some.has(root)).toBe(true)
      for (const [id, hash] of some) expect(hash).toBe(all.get(id))
      // The nodes it reaches, and no others.
      const reached = new Set<string>()
      const visit = (id: string): void => {
        if (reached.has(id) || !graph.has(id)) return
        reached.add(id)
        for (const child of Object.values(graph.get(id)!.children)) visit(child)
      }
      roots.forEach(visit)
      expect(new Set(some.keys())).toEqual(reached)
    }
  })
})

const graphs = new Map<string, Graph>()
/** The graph of a fixture's lockfile: every package, its children by dependency path (read once). */
function lockfileGraph (fixture: string): Graph {
  const known = graphs.get(fixture)
  if (known != null) return known
  const read = readLockfileFile(path.join(__dirname, 'fixtures', 'projects', fixture))
  if (typeof read === 'string') throw new Error(read)
  const graph: Graph = {}
  for (const [depPath, snapshot] of Object.entries(read.lockfile.packages ?? {})) {
    const children = Object.fromEntries(Object.entries({ ...snapshot.dependencies, ...snapshot.optionalDependencies }).map(([alias, ref]) => [alias, refToDepPath(alias, ref)]))
    graph[depPath] = { fullPkgId: `${getPkgIdWithPatchHash(depPath as Parameters<typeof getPkgIdWithPatchHash>[0])}:${String(snapshot.resolution?.integrity)}`, children }
  }
  graphs.set(fixture, graph)
  return graph
}

describe('graphHashes on real lockfiles: pnpm\'s hashes of every package', () => {
  // Their dependency cycles are real ones (typescript-eslint's, babel's, vitest's, …).
  it.each(['unocss', 'nuxt', 'vitest', 'astro'])('%s', (fixture) => {
    const graph = lockfileGraph(fixture)
    expect(Object.keys(graph).length).toBeGreaterThan(1000)
    expect(ours(graph)).toEqual(pnpmHashes(graph))
  })
})

describe('the recursive keys of the releases before 11.28.1: their calcDepState out of 11.17.0\'s, 11.19.0\'s and 11.28.0\'s bundles', () => {
  type CalcDepState = (graph: Graph, cache: object, depPath: string, opts: { includeDepGraphHash: boolean, patchFileHash?: string, nodeVersion: string }) => string
  const calcDepStates = new Map<string, CalcDepState>()
  /** A release's `calcDepState`, read out of its bundle once. */
  const calcDepStateOf = (release: string): CalcDepState => {
    let fn = calcDepStates.get(release)
    if (fn == null) calcDepStates.set(release, fn = pnpmFunction<CalcDepState>('calcDepState', imports, ['require_object_hash', 'import_object_hash', 'defaultOptions3', 'withSortingOptions'], fetchPnpm(release)))
    return fn
  }
  const releases = ['11.17.0', '11.19.0', '11.28.0']
  const engine = engineName()!

  it.each(releases)('%s: the engine, no format marker, the graph hash, the patch hash', (release) => {
    const calcDepState = calcDepStateOf(release)
    const graph: Graph = { a: { fullPkgId: 'a@1.0.0:i1', children: { b: 'b' } }, b: { fullPkgId: 'b@1.0.0:i2', children: {} } }
    const hash = graphHashes(new Map(Object.entries(graph))).get('a')!
    expect(sideEffectsCacheKey(engine, hash, undefined, 'recursive')).toBe(calcDepState(graph, {}, 'a', { includeDepGraphHash: true, nodeVersion: process.version }))
    expect(sideEffectsCacheKey(engine, hash, 'P', 'recursive')).toBe(calcDepState(graph, {}, 'a', { includeDepGraphHash: true, patchFileHash: 'P', nodeVersion: process.version }))
    expect(sideEffectsCacheKey(engine, undefined, 'P', 'recursive')).toBe(calcDepState(graph, {}, 'a', { includeDepGraphHash: false, patchFileHash: 'P', nodeVersion: process.version }))
    expect(sideEffectsCacheKey(engine, undefined, 'P')).toBe(`${engine};format=2;patch=P`)
  })

  // The packages of real lockfiles no path from which meets a package id twice: pnpm's hash,
  // whatever the order it hashes the others in (the cache shared, the order shuffled).
  it.each(releases.flatMap((release) => ['unocss', 'nuxt', 'vitest', 'astro'].map((fixture) => [release, fixture])))('%s, %s: every package without a repeated id below it', (release, fixture) => {
    const calcDepState = calcDepStateOf(release)
    const graph = lockfileGraph(fixture)
    const map = new Map(Object.entries(graph))
    const hashes = graphHashes(map)
    const ids = Object.keys(graph)
    const clean = new Set(ids.filter((id) => repeatedIdOnPath(map, [id]) == null))
    // Most packages, and some with dependencies.
    expect(clean.size).toBeGreaterThan(ids.length / 2)
    expect([...clean].filter((id) => Object.keys(graph[id].children).length > 2).length).toBeGreaterThan(20)
    let seed = 7
    const shuffled = [...ids].sort(() => (seed = (seed * 48271) % 2147483647) % 3 - 1)
    const shared = {}
    const theirs = new Map(shuffled.map((id) => [id, calcDepState(graph, shared, id, { includeDepGraphHash: true, nodeVersion: process.version })]))
    for (const id of clean) {
      expect(sideEffectsCacheKey(engine, hashes.get(id)!, undefined, 'recursive'), id).toBe(theirs.get(id))
    }
    // Where a path meets an id twice, pnpm's key is another (what the check is for).
    expect(ids.filter((id) => !clean.has(id) && sideEffectsCacheKey(engine, hashes.get(id)!, undefined, 'recursive') !== theirs.get(id)).length).toBeGreaterThan(0)
  })

  it('sideEffectsCacheKeys: each allowed build\'s key in the release\'s form; an allowed build below which a package id repeats leaves the install to pnpm under the recursive form only', () => {
    const pkg = (depPath: string, children: Record<string, string> = {}): PlannedPackage => {
      const [name, version] = [depPath.slice(0, depPath.lastIndexOf('@')), depPath.slice(depPath.lastIndexOf('@') + 1)]
      return { depPath, name, version, filesIndexFile: `i-${name}\t${depPath}`, targetDir: `/vs/${depPath}/node_modules/${name}`, children: Object.fromEntries(Object.entries(children).map(([alias, dep]) => [alias, `/vs/${dep}/node_modules/${alias}`])) }
    }
    const planned = [pkg('builds@1.0.0', { a: 'a@1.0.0' }), pkg('a@1.0.0', { b: 'b@1.0.0' }), pkg('b@1.0.0', { a: 'a@1.0.0' }), pkg('leaf@1.0.0')]
    const lockfile = { lockfileVersion: '9.0', importers: {}, packages: Object.fromEntries(planned.map((p) => [p.depPath, { resolution: { integrity: `sha512-${p.name}` } }])) } as unknown as LockfileObject
    const config = { sideEffectsCacheRead: true, allowBuilds: { builds: true, leaf: true } }
    const newest = sideEffectsCacheKeys(lockfile, planned, config, new Map())
    if (typeof newest === 'string') throw new Error(newest)
    expect([...newest.keys()]).toEqual(['builds@1.0.0', 'leaf@1.0.0'])
    expect(newest.get('builds@1.0.0')!.key).toMatch(new RegExp(`^${engine};format=2;deps=\\S+$`))
    expect(sideEffectsCacheKeys(lockfile, planned, config, new Map(), 'recursive')).toBe('a@1.0.0: met twice on a dependency path of a package whose build pnpm allows, where this pnpm release\'s side-effects cache key depends on the order of the install')
    const older = sideEffectsCacheKeys(lockfile, planned, { ...config, allowBuilds: { leaf: true } }, new Map([['leaf@1.0.0', 'P']]), 'recursive')
    if (typeof older === 'string') throw new Error(older)
    const leafHash = graphHashes(new Map([['leaf@1.0.0', { fullPkgId: 'leaf@1.0.0:sha512-leaf', children: {} }]])).get('leaf@1.0.0')!
    expect(older.get('leaf@1.0.0')).toEqual({ key: `${engine};deps=${leafHash};patch=P`, patched: `${engine};patch=P` })
  })

  it('a repeated id: a cycle, two peer variants of one package on a path, none on parallel paths', () => {
    const graph = new Map(Object.entries<GraphNode>({
      cycle: { fullPkgId: 'c@1:i', children: { d: 'd' } },
      d: { fullPkgId: 'd@1:i', children: { c: 'cycle' } },
      'p(x@1)': { fullPkgId: 'p@1:i', children: { q: 'q' } },
      q: { fullPkgId: 'q@1:i', children: { p: 'p(x@2)' } },
      'p(x@2)': { fullPkgId: 'p@1:i', children: {} },
      top: { fullPkgId: 't@1:i', children: { a: 'r(x@1)', b: 'r(x@2)' } },
      'r(x@1)': { fullPkgId: 'r@1:i', children: { s: 's' } },
      'r(x@2)': { fullPkgId: 'r@1:i', children: { s: 's' } },
      s: { fullPkgId: 's@1:i', children: { gone: 'nowhere' } },
    }))
    expect(repeatedIdOnPath(graph, ['d'])).toMatch(/^[cd]@1:i$/)
    expect(repeatedIdOnPath(graph, ['p(x@1)'])).toBe('p@1:i')
    expect(repeatedIdOnPath(graph, ['q'])).toBeUndefined()
    expect(repeatedIdOnPath(graph, ['top', 'q'])).toBeUndefined()
    expect(repeatedIdOnPath(graph, ['top', 'q', 'p(x@1)'])).toBe('p@1:i')
  })
})

describe('the key', () => {
  it('engine, format, the graph hash, the patch hash', () => {
    const engine = engineName()!
    expect(engine).toBe(`${process.platform};${process.arch};node${process.versions.node.split('.')[0]}`)
    expect(sideEffectsCacheKey(engine, 'H')).toBe(`${engine};format=2;deps=H`)
    expect(sideEffectsCacheKey(engine, 'H', 'P')).toBe(`${engine};format=2;deps=H;patch=P`)
  })
})

describe('11.28.3: a skipped optional dependency, linked to the working directory', () => {
  it('hashes as \'\' in the key of the package that depends on it, as in that release\'s calcDepState (its graph gives it the location \'\')', () => {
    const integrity = { integrity: 'sha512-x' }
    const lockfile: LockfileObject = {
      importers: { '.': { dependencies: { core: '1.0.0' } } },
      packages: {
        'core@1.0.0': { resolution: integrity, dependencies: { leaf: '1.0.0' }, optionalDependencies: { 'bin-aix-ppc64': '1.0.0' } },
        'leaf@1.0.0': { resolution: integrity },
        'bin-aix-ppc64@1.0.0': { resolution: integrity, optional: true, os: ['aix'] },
      },
    }
    const plan = (skippedLinkTarget?: string): ReturnType<typeof planVirtualStore> => planVirtualStore(lockfile, {
      virtualStoreDir: '/p/node_modules/.pnpm',
      include: { dependencies: true, devDependencies: true, optionalDependencies: true },
      installable: (_, snapshot) => snapshot.os == null,
      skippedLinkTarget,
    })
    const { planned, skipped } = plan('/p')
    expect(skipped).toEqual(['bin-aix-ppc64@1.0.0'])
    expect(planned[0].children).toEqual({ leaf: '/p/node_modules/.pnpm/leaf@1.0.0/node_modules/leaf', 'bin-aix-ppc64': '/p' })
    const ours = graphHashes(plannedGraph(lockfile, planned)).get('core@1.0.0')!
    // (Every other release's key: the skipped dependency not a child at all.)
    expect(graphHashes(plannedGraph(lockfile, plan().planned)).get('core@1.0.0')).not.toBe(ours)
    // pnpm's graph: keyed by directory, the skipped child at ''.
    const node = (p: PlannedPackage): GraphNode => ({ fullPkgId: `${p.depPath}:sha512-x`, children: p.children! })
    const theirs: Graph = Object.fromEntries(planned.map((p) => [p.targetDir, node(p)]))
    theirs[planned[0].targetDir].children['bin-aix-ppc64'] = ''
    const calcDepState = pnpmFunction<(graph: Graph, cache: object, depPath: string, opts: { includeDepGraphHash: boolean, nodeVersion: string }) => string>('calcDepState', imports, uses, fetchPnpm('11.28.3'))
    expect(sideEffectsCacheKey(engineName()!, ours)).toBe(calcDepState(theirs, {}, planned[0].targetDir, { includeDepGraphHash: true, nodeVersion: process.version }))
  })
})

describe('patchFileHash: pnpm\'s hash of a patch file', () => {
  const pnpmHash = pnpmFunction<(file: string) => Promise<string>>('createHexHashFromFile', { fs54: fs, crypto8: crypto })
  it.each([
    ['LF line ends', 'diff --git a/x b/x\n--- a/x\n+++ b/x\n'],
    ['CRLF line ends', 'diff --git a/x b/x\r\n--- a/x\r\n+++ b/x\r\n-é\r\n+ü\r\n'],
    ['a lone CR and bytes that are not UTF-8', Buffer.from([0x2d, 0x0d, 0x61, 0xff, 0xfe, 0x0a])],
  ])('%s', async (_name, content) => {
    const file = `${freshDir('patch-hash')}/x.patch`
    fs.writeFileSync(file, content)
    expect(patchFileHash(file)).toBe(await pnpmHash(file))
  })
  it('a missing file: undefined (pnpm fails with ERR_PNPM_PATCH_NOT_FOUND)', () => {
    expect(patchFileHash('/nowhere/x.patch')).toBeUndefined()
  })
})

describe('patchHashInDepPath: the patch of the package a dependency path names, as pnpm reads it', () => {
  const pnpmSuffix = pnpmFunction<(depPath: string) => { patchHashIndex: number }>('indexOfDepPathSuffix', {})
  it.each([
    ['a@1.0.0', undefined],
    ['a@1.0.0(patch_hash=abc1)', 'abc1'],
    ['a@1.0.0(patch_hash=abc1)(vite@8.2.1)', 'abc1'],
    // tailwindcss' listhen: a peer's patch is not the package's own.
    ['listhen@1.10.1(@parcel/watcher@2.6.0(patch_hash=705c))', undefined],
    ['a@1.0.0(patch_hash=abc1)(b@2.0.0(patch_hash=def2))', 'abc1'],
    ['a@1.0.0(b@2.0.0)(patch_hash=abc1)', undefined],
  ])('%s: %s', (depPath, hash) => {
    expect(patchHashInDepPath(depPath)).toBe(hash)
    const { patchHashIndex } = pnpmSuffix(depPath)
    expect(patchHashIndex === -1 ? undefined : /^\(patch_hash=([0-9a-f]+)\)/.exec(depPath.slice(patchHashIndex))?.[1]).toBe(hash)
  })
})

describe('buildVerdict: pnpm\'s allowBuild for a registry package', () => {
  const cases: Array<[Record<string, unknown> | undefined, boolean | undefined, string, string, boolean | undefined | 'unread']> = [
    [undefined, undefined, 'esbuild', '0.25.0', undefined],
    [undefined, true, 'esbuild', '0.25.0', true],
    [{ esbuild: true }, undefined, 'esbuild', '0.25.0', true],
    [{ esbuild: false }, undefined, 'esbuild', '0.25.0', false],
    [{ 'esbuild@0.25.0': true }, undefined, 'esbuild', '0.25.0', true],
    [{ 'esbuild@0.25.0': true }, undefined, 'esbuild', '0.25.1', undefined],
    [{ esbuild: true, 'esbuild@0.25.0': false }, undefined, 'esbuild', '0.25.0', false],
    [{ '@swc/core': true }, undefined, '@swc/core', '1.3.0', true],
    [{ '@swc/core': 'maybe' }, undefined, '@swc/core', '1.3.0', undefined],
    [{ other: true }, undefined, 'esbuild', '0.25.0', undefined],
    [{ 'esbuild@0.25.0 || 0.26.0': true }, undefined, 'esbuild', '0.25.0', 'unread'],
  ]
  it.each(cases)('%j, dangerouslyAllowAllBuilds %j: %s@%s', (allowBuilds, dangerouslyAllowAllBuilds, name, version, verdict) => {
    expect(buildVerdict(name, version, { allowBuilds, dangerouslyAllowAllBuilds })).toBe(verdict)
  })
})

describe('recordedBuilds: what the side-effects cache holds of a build pnpm allows', () => {
  it('under the row\'s key (the build\'s if it requires one, else the patch\'s): a diff, an empty one (a build that changed nothing, which pnpm\'s verified read drops: built on every install), nothing; no key to look up; no row, or no store', async () => {
    const storeDir = path.join(freshDir('recorded-builds'), 'v11')
    fs.mkdirSync(storeDir, { recursive: true })
    const file = { digest: 'a'.repeat(128), mode: 0o644, size: 1 }
    const entries = new Map<string, object>([['empty', {}], ['added', { added: new Map([['b', file]]) }], ['deleted', { deleted: ['package.json'] }], ['patch', {}]])
    const index = new StoreIndex(storeDir)
    index.set('sha512-x\tbuilds@1.0.0', { algo: 'sha512', requiresBuild: true, files: new Map([['package.json', file]]), sideEffects: entries })
    index.set('sha512-y\tplain@1.0.0', { algo: 'sha512', requiresBuild: false, files: new Map([['package.json', file]]), sideEffects: entries })
    index.close()
    const builds = (key: string, patched?: string) => ({ filesIndexFile: 'sha512-x\tbuilds@1.0.0', keys: { key, patched } })
    const plain = (key: string, patched?: string) => ({ filesIndexFile: 'sha512-y\tplain@1.0.0', keys: { key, patched } })
    expect(await recordedBuilds(storeDir, [
      builds('empty'), builds('added'), builds('deleted'), builds('other'), builds('other', 'empty'),
      plain('added'), plain('added', 'patch'), plain('added', 'other'),
      { filesIndexFile: 'sha512-z\tnone@1.0.0', keys: { key: 'empty' } },
    ])).toEqual(['unchanged', 'cached', 'cached', 'missing', 'missing', 'not-built', 'unchanged', 'missing', 'not-in-store'])
    expect(await recordedBuilds(path.join(storeDir, 'none'), [builds('empty')])).toEqual(['not-in-store'])
    // Nothing under the key, an empty diff under another of this engine (another dependency graph): most likely unchanged again.
    const engine = 'linux;x64;node24;format=2'
    const keyed = new StoreIndex(storeDir)
    keyed.set('sha512-w\tkeyed@1.0.0', { algo: 'sha512', requiresBuild: true, files: new Map([['package.json', file]]), sideEffects: new Map<string, object>([[`${engine};deps=old`, {}], ['linux;x64;node22;format=2;deps=b', {}], [`${engine};deps=c`, { deleted: ['a'] }]]) })
    keyed.close()
    const keyedBuild = (key: string) => ({ filesIndexFile: 'sha512-w\tkeyed@1.0.0', keys: { key } })
    expect(await recordedBuilds(storeDir, [keyedBuild(`${engine};deps=new`), keyedBuild('linux;x64;node20;format=2;deps=new'), keyedBuild('linux;x64;node22;format=2;deps=b'), keyedBuild(`${engine};deps=c`)])).toEqual(['unchanged-elsewhere', 'missing', 'unchanged', 'cached'])
    expect(await recordedBuilds(storeDir, [])).toEqual([])
  })
})
