import { describe, expect, it } from 'vitest'
import { buildConcurrency, buildGraph, runScheduled } from '../dist/plugin/install/build-schedule.js'
import { pnpmFunction } from './helpers/pnpm-bundle.js'

// pnpm 11.28.11's own functions, from its bundle: the graph its build step walks, and its scheduler.
type PnpmNode = { children: Record<string, string>, requiresBuild?: boolean, patch?: object }
const pnpmBuildGraph = pnpmFunction<(depGraph: Record<string, PnpmNode>, roots: string[]) => Map<string, string[]>>('buildGraph', {
  // Ramda's curried filter, as the bundle calls it on arrays.
  filter_default: (keep: (x: unknown) => boolean) => (list: unknown[]) => list.filter(keep),
})
const pnpmScheduleGraph = pnpmFunction<(graph: Map<string, string[]>, opts: object) => Promise<void>>('scheduleGraph', {}, [
  // Called back once builds run (the names it learns on its own are those of the first, synchronous call).
  'dispatch', 'finishNode2', 'releaseConcurrency', 'settle', 'complete', 'block', 'makeReady', 'pump', 'canDispatch', 'settleIfDone',
])

/** A small random dependency graph (cycles included), seeded: packages p0..pN, some building. */
function randomGraph (seed: number, size: number): { children: Map<string, string[]>, marked: Set<string>, roots: string[] } {
  let state = seed
  const random = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
  const names = Array.from({ length: size }, (_, i) => `p${i}`)
  const children = new Map(names.map((n) => [n, names.filter((m) => m !== n && random() < 2.5 / size)]))
  const marked = new Set(names.filter(() => random() < 0.35))
  const roots = names.filter(() => random() < 0.3)
  return { children, marked, roots: roots.length > 0 ? roots : [names[0]] }
}

/** Runs a schedule with builds that take `ticks` turns of the microtask queue each; `fails`: those that fail. What started, in order. */
async function starts (schedule: (build: (dir: string) => Promise<boolean>) => Promise<void>, ticks: (dir: string) => number, fails: Set<string>): Promise<string[]> {
  const started: string[] = []
  await schedule(async (dir) => {
    started.push(dir)
    for (let i = 0; i < ticks(dir); i++) await null
    return !fails.has(dir)
  })
  return started
}

describe('buildGraph: the packages pnpm\'s build step walks', () => {
  it('as pnpm\'s: what builds or is patched and what leads to it, dependencies first, in its order (random graphs with cycles)', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const { children, marked, roots } = randomGraph(seed, 4 + (seed % 12))
      const depGraph = Object.fromEntries([...children].map(([dir, deps]) => [dir, {
        children: Object.fromEntries(deps.map((d) => [`alias-${d}`, d])),
        requiresBuild: marked.has(dir) && seed % 2 === 0,
        patch: marked.has(dir) && seed % 2 === 1 ? {} : undefined,
      }]))
      const ours = buildGraph([...roots, 'linked-project'], (dir) => children.get(dir), (dir) => marked.has(dir))
      expect([...ours], `seed ${seed}`).toEqual([...pnpmBuildGraph(depGraph, roots)])
    }
  })
})

describe('runScheduled: builds started as pnpm\'s scheduler starts them', () => {
  it('the same starts in the same order as pnpm\'s scheduler, at 1, 2 and 5 at a time, with and without a failure', async () => {
    for (let seed = 1; seed <= 60; seed++) {
      const { children, marked, roots } = randomGraph(seed, 5 + (seed % 10))
      const graph = buildGraph(roots, (dir) => children.get(dir), (dir) => marked.has(dir))
      const ticks = (dir: string): number => marked.has(dir) ? 1 + (Number(dir.slice(1)) * 7 + seed) % 5 : 0
      const building = [...graph.keys()].filter((dir) => marked.has(dir))
      for (const concurrency of [1, 2, 5]) {
        for (const fails of [new Set<string>(), new Set(building.slice(0, 1)), new Set(building.slice(-1))]) {
          // Both run each build through an async function, as pnpm's build step does.
          const ours = await starts((build) => runScheduled(graph, concurrency, async (dir) => await build(dir)), ticks, fails)
          const stock = await starts((build) => pnpmScheduleGraph(graph, {
            bail: true,
            concurrency,
            runNode: async (dir: string) => await build(dir) ? 'passed' : 'aborted',
            onNodeSkipped: () => {},
          }), ticks, fails)
          expect(ours, `seed ${seed}, ${concurrency} at a time, failing ${[...fails].join()}`).toEqual(stock)
        }
      }
    }
  })

  it('no build started after one failed; those under way end first', async () => {
    const graph = new Map([['c', []], ['a', []], ['b', ['c']]])
    const ended: string[] = []
    const started = await starts((build) => runScheduled(graph, 2, async (dir) => {
      const passed = await build(dir)
      ended.push(dir)
      return passed
    }), (dir) => dir === 'c' ? 3 : 1, new Set(['a']))
    // c and a start together; a fails before c ends, so b (ready once c ends) never starts.
    expect(started).toEqual(['c', 'a'])
    expect(ended).toEqual(['a', 'c'])
  })

  it('an empty graph', async () => {
    await runScheduled(new Map(), 5, async () => true)
  })
})

describe('buildConcurrency: pnpm\'s childConcurrency (unset: its install options\' default, 5)', () => {
  it.each([[5, 5], [1, 1], [16, 16], [0, undefined], [-1, undefined], [2.5, undefined], ['4', undefined], [null, undefined], [undefined, 5]])('%j: %j', (value, expected) => {
    expect(buildConcurrency(value)).toBe(expected)
  })
})
