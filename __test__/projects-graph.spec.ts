import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { projectsGraph, type GraphProject } from '../lib/plugin/install/projects-graph.js'
import { pnpmFunction } from './helpers/pnpm-bundle.js'

type PnpmGraph = Record<string, { dependencies: string[] }>

/** The `require` the bundle's modules load Node's own with. */
const bundledRequire = createRequire(import.meta.url)

/**
 * The names pnpm's bundled npm-package-arg needs once called (it requires its modules lazily,
 * inside pnpm's `try`, which would swallow their absence): found by calling it on every kind of
 * specifier the cases below have.
 */
function namesNpaUses (): string[] {
  const found: string[] = []
  for (;;) {
    try {
      const npa = pnpmFunction<() => { resolve: (name: string, spec: string, where: string) => unknown }>('require_npa', { require: bundledRequire }, found)()
      for (const spec of ['1.0.0', '^1.0.0', 'latest', '../b', 'file:../a.tgz', 'github:o/r', 'https://x.test/a.tgz', 'npm:a@1']) {
        try {
          npa.resolve('b', spec, '/ws')
        } catch (err) {
          if (err instanceof ReferenceError || /require/.test((err as Error).message)) throw err
        }
      }
      return found
    } catch (err) {
      const missing = err instanceof ReferenceError ? /^(\S+) is not defined$/.exec(err.message)?.[1] : undefined
      if (missing == null) throw err
      found.push(missing)
    }
  }
}

const pnpmCreateProjectsGraph = pnpmFunction<(projects: Array<{ rootDir: string, manifest: Record<string, unknown> }>, opts: object) => { graph: PnpmGraph }>('createProjectsGraph', {
  path264: path,
  require: bundledRequire,
  // ramda's map over an object, as the bundle uses it.
  map_default: (fn: (v: unknown) => unknown, obj: Record<string, unknown>) => Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, fn(v)])),
}, [
  // Used inside pnpm's try (a missing one would be swallowed): defined up front.
  '__toESM', '__commonJS', 'import_npm_package_arg4', ...namesNpaUses(), 'workspacePrefToNpm', 'WorkspaceSpec', 'WORKSPACE_PREF_REGEX', 'parseRegistrySpec', 'isRelativePathSpec', 'parseBareSpecifier2',
  'parseNpmAliasTarget', 'import_semver11', 'firstMemberHasColon', 'import_version_selector_type2', 'parseVersionSelector', 'hasRegistryRevisionSelector', 'parseNpmTarballUrl',
])

/** pnpm's graph as `pnpm install` orders the projects by it (`projectsDependencies`: itself and unknown directories left out). */
function pnpmGraph (projects: GraphProject[], opts: { catalogs?: Record<string, Record<string, string>>, linkWorkspacePackages: boolean }): Map<string, string[]> {
  const { graph } = pnpmCreateProjectsGraph(projects.map((p) => ({ rootDir: p.dir, manifest: p.manifest })), opts)
  const dirs = new Set(Object.keys(graph))
  return new Map(Object.entries(graph).map(([dir, node]) => [dir, node.dependencies.filter((d) => d !== dir && dirs.has(d))]))
}

/** A small deterministic generator (the same cases every run). */
function random (seed: number): () => number {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed / 2147483648
  }
}

const NAMES = ['a', 'b', '@s/c', 'd', 'ext']
const VERSIONS = ['1.0.0', '1.2.0', '2.0.0-rc.1', '2.0.0', undefined]
const SPECS = (name: string, other: string): string[] => [
  'workspace:*', 'workspace:^', 'workspace:~', 'workspace:', 'workspace:^1.0.0', 'workspace:2.0.0', 'workspace:~1.2.0', 'workspace:>=2.0.0-rc.0',
  `workspace:${other}@*`, `workspace:${other}@^1.0.0`, 'workspace:../b', 'workspace:./', '^1.0.0', '1.0.0', '*', 'x', '', '~', 'latest', 'next',
  `npm:${other}@^1.0.0`, `npm:${other}@2.0.0`, `npm:${other}`, 'npm:^1.0.0', 'link:../b', 'link:../nowhere', 'file:../a', 'file:../a.tgz', '../c', './sub',
  'github:o/r', 'https://x.test/a.tgz', 'catalog:', 'catalog:next', `${name}@1`, '1.x', 'v1.0.0', '>=1 <3',
]

describe('projectsGraph: the order pnpm runs the projects\' own scripts in, checked against its createProjectsGraph', () => {
  it('agrees with pnpm on 300 random workspaces, with and without linkWorkspacePackages', () => {
    const next = random(7)
    const pick = <T>(items: T[]): T => items[Math.floor(next() * items.length)]
    let compared = 0
    for (let round = 0; round < 300; round++) {
      const root = '/ws'
      const count = 2 + Math.floor(next() * 4)
      const projects: GraphProject[] = Array.from({ length: count }, (_, i) => {
        const manifest: Record<string, unknown> = {}
        if (next() < 0.95) manifest.name = pick(NAMES)
        const version = pick(VERSIONS)
        if (version != null) manifest.version = version
        for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies']) {
          if (next() < 0.5) continue
          const deps: Record<string, string> = {}
          for (let k = Math.floor(next() * 4); k > 0; k--) {
            const dep = pick(NAMES)
            deps[dep] = pick(SPECS(dep, pick(NAMES)))
          }
          manifest[field] = deps
        }
        return { dir: i === 0 ? root : path.join(root, pick(['a', 'b', 'c', 'sub']), String(i)), manifest }
      })
      // Directories as pnpm's project finder gives them: each project once.
      if (new Set(projects.map((p) => p.dir)).size !== projects.length) continue
      const catalogs = { default: { a: 'workspace:*', b: '^1.0.0', '@s/c': '2.0.0', d: 'latest', ext: '1.0.0' }, next: { a: '^2.0.0-rc.0', b: '*', '@s/c': 'npm:a@1.0.0', d: '1.2.0', ext: 'workspace:^' } }
      for (const linkWorkspacePackages of [false, true]) {
        const ours = projectsGraph(projects, { catalogs, linkWorkspacePackages })
        if (typeof ours === 'string') continue
        expect(ours, JSON.stringify(projects)).toEqual(pnpmGraph(projects, { catalogs, linkWorkspacePackages }))
        compared++
      }
    }
    expect(compared).toBeGreaterThan(400)
  })

  it('says what it does not read as pnpm does: a path from the home directory, a catalog entry pnpm refuses', () => {
    const project = (deps: Record<string, unknown>): GraphProject[] => [{ dir: '/ws', manifest: { name: 'r', dependencies: deps } }]
    expect(projectsGraph(project({ a: 'file:~/a' }), { linkWorkspacePackages: false })).toMatch(/from the root or home/)
    expect(projectsGraph(project({ a: 'catalog:' }), { catalogs: {}, linkWorkspacePackages: false })).toBe('a catalog entry pnpm does not take (a: catalog:)')
    expect(projectsGraph(project({ a: 1 }), { linkWorkspacePackages: false })).toBe('a specifier that is not a string (a)')
  })
})
