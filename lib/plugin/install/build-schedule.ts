/**
 * When each build runs, by the rules of pnpm 11.28.11's build step (building/during-install
 * `buildModules` over workspace/task-scheduler `scheduleGraph`): the same graph, the same
 * order, the same number of builds at a time, and no build started after one failed. Builds run
 * as soon as what they depend on is built, so which ones have run when one fails is decided by
 * the same rules as stock's (their timing aside), and a build stock would not start is never
 * started.
 */
import { graphSequencer } from '@pnpm/deps.graph-sequencer'

/**
 * pnpm's build graph: from the projects' direct dependencies (`roots`, in order), every package
 * that builds or is patched (`marked`) and every package through which one is reached, each with
 * its dependencies in the graph, in the order pnpm's walk adds them (dependencies before their
 * dependents, a package already walked not walked again, so a cycle is cut where the walk closes
 * it). `children`: a package's dependencies, `undefined` for what is not a package of the
 * install (a linked project).
 */
export function buildGraph (roots: string[], children: (dir: string) => string[] | undefined, marked: (dir: string) => boolean): Map<string, string[]> {
  const added = new Set<string>()
  const walked = new Set<string>()
  // The walk, depth first without recursion (a long chain of packages must not overflow the stack).
  interface Frame { dir?: string, next: string[], at: number, reaches: boolean }
  const stack: Frame[] = [{ next: roots, at: 0, reaches: false }]
  while (stack.length > 1 || stack[0].at < stack[0].next.length) {
    const frame = stack.at(-1)!
    if (frame.at < frame.next.length) {
      const dir = frame.next[frame.at++]
      const next = children(dir)
      if (next == null || walked.has(dir)) continue
      walked.add(dir)
      stack.push({ dir, next, at: 0, reaches: false })
      continue
    }
    stack.pop()
    if (frame.reaches || marked(frame.dir!)) {
      added.add(frame.dir!)
      stack.at(-1)!.reaches = true
    }
  }
  return new Map([...added].map((dir) => [dir, children(dir)!.filter((child) => added.has(child))]))
}

/** How many builds pnpm's install runs at a time when `childConcurrency` is not set (its install options' default). */
const DEFAULT_CHILD_CONCURRENCY = 5

/**
 * How many builds pnpm runs at a time under `childConcurrency`; `undefined` for a value pnpm
 * resolves against the machine's processors and CPU quota (zero or less, or not a number), or
 * one its scheduler turns into 1.
 */
export function buildConcurrency (childConcurrency: unknown): number | undefined {
  if (childConcurrency === undefined) return DEFAULT_CHILD_CONCURRENCY
  return typeof childConcurrency === 'number' && Number.isInteger(childConcurrency) && childConcurrency > 0 ? childConcurrency : undefined
}

/**
 * Runs `build` on each package of `graph` once the packages it depends on have passed, at most
 * `concurrency` at a time, in the order pnpm's scheduler takes them; once a build fails (`false`)
 * none is started, and this resolves when those under way have ended. A dependency that
 * pnpm's sequencer orders after its dependent (in a cycle) is not waited for, as there.
 * A `build` that rejects counts as failed (its caller keeps the error).
 */
export async function runScheduled (graph: Map<string, string[]>, concurrency: number, build: (dir: string) => Promise<boolean>): Promise<void> {
  const position = new Map(graphSequencer(graph).order.map((dir, i) => [dir, i]))
  const waitingFor = new Map<string, number>()
  const dependents = new Map<string, string[]>()
  for (const [dir, deps] of graph) {
    const awaited = deps.filter((dep) => position.get(dep)! < position.get(dir)!)
    waitingFor.set(dir, awaited.length)
    for (const dep of awaited) {
      const list = dependents.get(dep) ?? []
      list.push(dir)
      dependents.set(dep, list)
    }
  }
  const ready = [...waitingFor].flatMap(([dir, count]) => count === 0 ? [dir] : [])
  let next = 0
  let running = 0
  let unsettled = graph.size
  let failed = false
  await new Promise<void>((resolve) => {
    const canStart = (): boolean => !failed && running < concurrency && next < ready.length
    const pump = (): void => {
      while (canStart()) start(ready[next++])
      if (unsettled === 0 || (failed && running === 0)) resolve()
    }
    const start = (dir: string): void => {
      running++
      const ended = (passed: boolean): void => {
        running--
        unsettled--
        if (!passed) failed = true
        else {
          for (const dependent of dependents.get(dir) ?? []) {
            const left = waitingFor.get(dependent)! - 1
            waitingFor.set(dependent, left)
            if (left === 0) ready.push(dependent)
          }
        }
        pump()
      }
      // A build that throws counts as failed: the schedule always ends.
      build(dir).then(ended, () => ended(false))
    }
    pump()
  })
}
