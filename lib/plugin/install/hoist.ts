/**
 * pnpm 11's hoisting for the isolated layout, for the native install: every dependency of a
 * package whose alias matches `publicHoistPattern` is linked into the root `node_modules`, or,
 * matching `hoistPattern`, into `node_modules/.pnpm/node_modules`, so that packages which
 * `require` what they forgot to declare still find it. One package per alias: the root's own
 * dependencies keep theirs, and otherwise the one met first wins, walking the graph as pnpm does
 * (docs/native-install.md links pnpm's source for each rule):
 *
 * - the walk starts from every importer's dependencies (importer by importer, each one's dev,
 *   then prod, then optional), and every package is given the depth of the step that first
 *   reaches it; the children of all the packages of one step are claimed before the walk goes
 *   down into the first of them, so the depths are those of a depth-first walk over
 *   breadth-first steps;
 * - the importers' dependencies themselves come first (the first importer naming an alias gives
 *   it its package), then the packages by depth, then by directory (byte order), each one's
 *   dependencies in its lockfile order (dependencies, then optional ones);
 * - aliases compare case-insensitively;
 * - in a workspace (`hoistWorkspacePackages`), each project but the root is hoisted under its
 *   name too (linked to its directory, recorded under its importer id), unless a dependency of
 *   an importer has that name: its name is reserved before the packages are hoisted. Releases
 *   before 11.28.0 link the projects only (`ProjectHoisting`).
 */
import path from 'node:path'
import { createMatcher } from '@pnpm/config.matcher'
import { refToDepPath, type LockfileObject, type PlannedPackage } from './virtual-store.js'

/** An importer's dependencies: alias → the package's directory (a linked project's directory for `link:`). */
export interface ImporterDependencies {
  /** The importer id (`.` for the root). */
  id: string
  direct: Record<string, string>
}

/** A project of the workspace that pnpm hoists under its name. */
export interface HoistedProject {
  id: string
  name: string
  dir: string
}

/**
 * How a release hoists the workspace's projects: their names reserved before the packages are
 * hoisted, and recorded (from 11.28.0), or (11.19.0 to 11.27.1) as the first children of the
 * hoisting graph's root, where the importers' registry dependencies of the same name replace
 * them (in their place, before the other dependencies): linked, neither recorded nor reserved (a package may be hoisted under a project's name
 * too, and recorded: the project's link is the one that stays).
 */
export type ProjectHoisting = 'reserved' | 'linked'

export interface HoistOptions {
  /** Every importer's dependencies (`importerDependencies`), the root's first. */
  importers: ImporterDependencies[]
  hoistPattern: string[]
  publicHoistPattern: string[]
  /** The workspace's projects but the root, in pnpm's order, when `hoistWorkspacePackages`. */
  workspaceProjects?: HoistedProject[]
  /** `reserved` when not said. */
  projectHoisting?: ProjectHoisting
}

export interface Hoisted {
  /** `.modules.yaml`'s `hoistedDependencies`: depPath → alias → where. */
  record: Record<string, Record<string, 'private' | 'public'>>
  /** Alias → package directory, for the root `node_modules` and for `.pnpm/node_modules`. */
  publicLinks: Record<string, string>
  privateLinks: Record<string, string>
  /** Aliases hoisted privately whose package has bins, in hoisting order. */
  privateAliasesWithBins: string[]
}

interface Node {
  depPath: string
  dir: string
  hasBin: boolean
  /** Alias → directory, in lockfile order. */
  children: Record<string, string>
}

/**
 * An importer's dependencies in the order pnpm walks them: dev, then prod, then optional;
 * `link:` ones at the directory they name (relative to `importerDir`), those `dirOf` has no
 * directory for (skipped) left out.
 */
export function importerDependencies (lockfile: LockfileObject, id: string, importerDir: string, dirOf: (depPath: string) => string | undefined): ImporterDependencies {
  const importer = lockfile.importers[id]
  const refs = { ...importer.devDependencies, ...importer.dependencies, ...importer.optionalDependencies }
  const direct = Object.fromEntries(Object.entries(refs).flatMap(([alias, ref]) => {
    const dir = ref.startsWith('link:') ? path.resolve(importerDir, ref.slice('link:'.length)) : dirOf(refToDepPath(alias, ref))
    return dir == null ? [] : [[alias, dir]]
  }))
  return { id, direct }
}

/** Where an alias is hoisted to by the patterns (public first), or `undefined`: not hoisted. */
function hoistTypeOf (opts: HoistOptions): (alias: string) => 'public' | 'private' | undefined {
  const isPublic = createMatcher(opts.publicHoistPattern)
  const isPrivate = createMatcher(opts.hoistPattern)
  return (alias) => isPublic(alias) ? 'public' : isPrivate(alias) ? 'private' : undefined
}

/** The packages hoisted from the graph, with `reserved` aliases (lower case) taken besides the root's. */
function hoistPackages (byDir: Map<string, Node>, opts: HoistOptions, reserved: Set<string>): Hoisted {
  const { importers } = opts
  // The walk: each step claims its packages as it is made; `next` makes a package's step.
  const visited = new Set<string>()
  type Step = Array<{ node: Node, next: () => Step }>
  const makeStep = (dirs: string[]): Step => {
    const step: Step = []
    for (const dir of dirs) {
      if (visited.has(dir)) continue
      visited.add(dir)
      const node = byDir.get(dir)
      if (node != null) step.push({ node, next: () => makeStep(Object.values(node.children)) })
    }
    return step
  }
  const depths: Array<{ children: Record<string, string>, dir: string, depth: number }> = []
  const walk = (depth: number, step: Step): void => {
    const nextSteps = step.map(({ node, next }) => {
      depths.push({ children: node.children, dir: node.dir, depth })
      return next()
    })
    for (const s of nextSteps) walk(depth + 1, s)
  }
  walk(0, makeStep(importers.flatMap((i) => Object.values(i.direct).filter((dir) => byDir.has(dir)))))
  depths.sort((a, b) => a.depth - b.depth || (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0))
  // Before them all, the importers' own dependencies: the first importer naming an alias gives it its package.
  // Before 11.28.0 the projects' names come first among them, and a dependency of a project's
  // name takes the project's place (pnpm spreads the importers' dependencies over the projects).
  const firstDirs = new Map<string, string>()
  for (const importer of importers) {
    for (const [alias, dir] of Object.entries(importer.direct)) if (byDir.has(dir) && !firstDirs.has(alias)) firstDirs.set(alias, dir)
  }
  const projectNames = opts.projectHoisting === 'linked' ? (opts.workspaceProjects ?? []).map((p) => p.name) : []
  const direct: Record<string, string> = {}
  for (const alias of [...projectNames, ...firstDirs.keys()]) {
    if (firstDirs.has(alias) && !Object.hasOwn(direct, alias)) direct[alias] = firstDirs.get(alias)!
  }
  depths.unshift({ children: direct, dir: '', depth: -1 })

  const hoistType = hoistTypeOf(opts)
  const root = importers.find((i) => i.id === '.')
  const taken = new Set([...Object.keys(root?.direct ?? {}).map((a) => a.toLowerCase()), ...reserved])
  const hoisted: Hoisted = { record: {}, publicLinks: {}, privateLinks: {}, privateAliasesWithBins: [] }
  for (const { children } of depths) {
    for (const [alias, dir] of Object.entries(children)) {
      const where = hoistType(alias)
      if (where == null || taken.has(alias.toLowerCase())) continue
      const child = byDir.get(dir)
      if (child == null) continue
      taken.add(alias.toLowerCase())
      if (child.hasBin && where === 'private') hoisted.privateAliasesWithBins.push(alias)
      ;(hoisted.record[child.depPath] ??= {})[alias] = where
      ;(where === 'public' ? hoisted.publicLinks : hoisted.privateLinks)[alias] = dir
    }
  }
  return hoisted
}

export function hoist (lockfile: LockfileObject, planned: PlannedPackage[], opts: HoistOptions): Hoisted {
  const byDir = new Map<string, Node>()
  for (const p of planned) {
    byDir.set(p.targetDir, { depPath: p.depPath, dir: p.targetDir, hasBin: lockfile.packages![p.depPath].hasBin === true, children: p.children ?? {} })
  }
  const hoistType = hoistTypeOf(opts)
  const registryAliases = new Set(opts.importers.flatMap((i) => Object.entries(i.direct).filter(([, dir]) => byDir.has(dir)).map(([alias]) => alias)))
  if (opts.projectHoisting === 'linked') {
    const hoisted = hoistPackages(byDir, opts, new Set())
    // Only the root's dependencies are taken before them, by their names as they are.
    const rootAliases = new Set(Object.keys(opts.importers.find((i) => i.id === '.')?.direct ?? {}))
    for (const project of opts.workspaceProjects ?? []) {
      const where = hoistType(project.name)
      if (where == null || rootAliases.has(project.name.toLowerCase()) || registryAliases.has(project.name)) continue
      // Over a package hoisted under its name (recorded still): pnpm's link of the project
      // replaces the package's, or the package's finds it and leaves it (not in the virtual store).
      ;(where === 'public' ? hoisted.publicLinks : hoisted.privateLinks)[project.name] = project.dir
    }
    return hoisted
  }
  // The projects take their names first, unless an importer's registry dependency has it.
  const taken = new Set([...registryAliases].map((alias) => alias.toLowerCase()))
  const projects: Array<HoistedProject & { where: 'public' | 'private' }> = []
  for (const project of opts.workspaceProjects ?? []) {
    const where = hoistType(project.name)
    if (where == null || taken.has(project.name.toLowerCase())) continue
    taken.add(project.name.toLowerCase())
    projects.push({ ...project, where })
  }
  const hoisted = hoistPackages(byDir, opts, new Set(projects.map((p) => p.name.toLowerCase())))
  for (const project of projects) {
    hoisted.record[project.id] = { [project.name]: project.where }
    ;(project.where === 'public' ? hoisted.publicLinks : hoisted.privateLinks)[project.name] = project.dir
  }
  return hoisted
}
