/**
 * pnpm 11's hoisting for the isolated layout, for the native install: every dependency of a
 * package whose alias matches `publicHoistPattern` is linked into the root `node_modules`, or,
 * matching `hoistPattern`, into `node_modules/.pnpm/node_modules`, so that packages which
 * `require` what they forgot to declare still find it. One package per alias: the root's own
 * dependencies keep theirs, and otherwise the one met first wins, walking the graph as pnpm does
 * (docs/native-install.md links pnpm's source for each rule):
 *
 * - the walk starts from the root's dependencies (dev, then prod, then optional), and every
 *   package is given the depth of the step that first reaches it; the children of all the
 *   packages of one step are claimed before the walk goes down into the first of them, so the
 *   depths are those of a depth-first walk over breadth-first steps;
 * - packages are then taken by depth, then by directory (byte order), and each one's
 *   dependencies in its lockfile order (dependencies, then optional ones);
 * - aliases compare case-insensitively.
 */
import { createMatcher } from '@pnpm/config.matcher'
import { refToDepPath, type LockfileObject, type PlannedPackage } from './virtual-store.js'

export interface HoistOptions {
  /** The root's dependencies (`rootDependencies`). */
  direct: Record<string, string>
  hoistPattern: string[]
  publicHoistPattern: string[]
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
 * The root's dependencies in the order pnpm walks them: dev, then prod, then optional; those
 * `dirOf` has no directory for (skipped) left out.
 */
export function rootDependencies (lockfile: LockfileObject, dirOf: (depPath: string) => string | undefined): Record<string, string> {
  const importer = lockfile.importers['.']
  const refs = { ...importer.devDependencies, ...importer.dependencies, ...importer.optionalDependencies }
  return Object.fromEntries(Object.entries(refs).flatMap(([alias, ref]) => {
    const dir = dirOf(refToDepPath(alias, ref))
    return dir == null ? [] : [[alias, dir]]
  }))
}

export function hoist (lockfile: LockfileObject, planned: PlannedPackage[], opts: HoistOptions): Hoisted {
  const byDir = new Map<string, Node>()
  for (const p of planned) {
    byDir.set(p.targetDir, { depPath: p.depPath, dir: p.targetDir, hasBin: lockfile.packages![p.depPath].hasBin === true, children: p.children ?? {} })
  }
  const { direct } = opts

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
  const depths: Array<{ node: Node, depth: number }> = []
  const walk = (depth: number, step: Step): void => {
    const nextSteps = step.map(({ node, next }) => {
      depths.push({ node, depth })
      return next()
    })
    for (const s of nextSteps) walk(depth + 1, s)
  }
  walk(0, makeStep(Object.values(direct)))
  depths.sort((a, b) => a.depth - b.depth || (a.node.dir < b.node.dir ? -1 : a.node.dir > b.node.dir ? 1 : 0))

  const isPublic = createMatcher(opts.publicHoistPattern)
  const isPrivate = createMatcher(opts.hoistPattern)
  const taken = new Set(Object.keys(direct).map((a) => a.toLowerCase()))
  const hoisted: Hoisted = { record: {}, publicLinks: {}, privateLinks: {}, privateAliasesWithBins: [] }
  for (const { node } of depths) {
    for (const [alias, dir] of Object.entries(node.children)) {
      const where = isPublic(alias) ? 'public' : isPrivate(alias) ? 'private' : undefined
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
