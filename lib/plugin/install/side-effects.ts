/**
 * Builds from pnpm's side-effects cache, for the native install. After pnpm runs a package's
 * build it records the files the build added and deleted in the package's store-index row,
 * under a cache key; a later frozen install that finds a diff under the key it computes
 * imports the package with that diff applied and marks it built, so no script runs again
 * (pnpm 11.28.11: installing/deps-restorer/src/linkAllPkgs.ts `findSideEffectsCacheKey`,
 * building/during-install/src/index.ts `nodeNeedsBuild`). This module computes that key as
 * pnpm 11.28.11 computes it (deps/graph-hasher/src/calcDepState.ts, calcDepGraphHash.ts), and as
 * the releases before 11.28.1 do where their form gives one key whatever the install's order
 * (`SideEffectsKeyForm`), and says which packages pnpm would look it up for
 * (building/policy/src/index.ts).
 *
 * Why not `@pnpm/deps.graph-hasher` itself: its only published release (1100.3.0) is older than
 * the one pnpm 11.28.11 bundles, whose keys carry `;format=2` and hash dependency cycles
 * another way; so the rules are written here, and the tests check them against the bundle.
 */
import { createHash, type Hash } from 'node:crypto'
import fs from 'node:fs'
import { getPkgIdWithPatchHash } from '@pnpm/deps.path'
import { readPkgsFromCafs, type ReadPackageFilesResponse } from '../../api/read.js'
import { enginesNodeVersion } from './installable.js'
import type { LockfileObject, PlannedPackage } from './virtual-store.js'

/**
 * How a pnpm release keys its side-effects cache. `format=2` (from 11.28.1): the marker after the
 * engine, and the graph hash of `graphHashes`. `recursive` (11.19.0 to 11.28.0, read out of their
 * bundles): no marker, and a recursive hash that cuts a path where it meets a package id already
 * on it (a cycle, or two peer variants of one package), memoized across the whole install; where
 * no path from a looked-up package meets an id twice that is `graphHashes`' hash, and elsewhere it
 * depends on the order the packages' fetches finish in (`repeatedIdOnPath`).
 */
export type SideEffectsKeyForm = 'format=2' | 'recursive'

/** A nested object of strings, as the graph hasher hashes them. */
interface Hashed { [key: string]: string | Hashed }

function feed (hash: Hash, value: string | Hashed): void {
  if (typeof value === 'string') {
    hash.update(`string:${value.length}:`)
    hash.update(value)
    return
  }
  const keys = Object.keys(value).sort()
  hash.update(`object:${keys.length}:`)
  for (const key of keys) {
    feed(hash, key)
    hash.update(':')
    feed(hash, value[key])
    hash.update(',')
  }
}

/**
 * pnpm's `hashObject` (@pnpm/crypto.object-hasher: object-hash 3, SHA-256, base64, keys
 * sorted, types not respected), for objects of strings: object-hash's serialization of them.
 */
export function hashObject (value: Hashed): string {
  const hash = createHash('sha256')
  feed(hash, value)
  return hash.digest('base64')
}

/** A node of the dependency graph pnpm hashes: its full id and its children's node ids by alias. */
export interface GraphNode {
  /** `<pkgIdWithPatchHash>:<integrity>` (deps/graph-hasher `createFullPkgId`). */
  fullPkgId: string
  children: Record<string, string>
}

/**
 * The dependency-graph hash of `roots` and of every node they reach (by default, of every
 * node), as pnpm 11.28.11's `calcDepGraphHash` gives it: a node
 * outside any cycle hashes its id with its children's hashes; the nodes of a cycle (a strongly
 * connected component, found here by Tarjan's algorithm) get labels refined from their ids and
 * outside children until the partition stops splitting, then each hashes its label with the
 * hash of the whole component's shape. A child that is not a node hashes as `''`. A node's
 * hash depends only on the nodes it reaches (its cycle's among them), so the others are left out.
 */
export function graphHashes (graph: Map<string, GraphNode>, roots: Iterable<string> = graph.keys()): Map<string, string> {
  const hashes = new Map<string, string>()
  const index = new Map<string, number>()
  const lowLink = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  // Iterative Tarjan: each frame is a node and the children it has yet to look at.
  for (const root of roots) {
    if (index.has(root)) continue
    const frames: Array<{ id: string, pending: string[] }> = []
    const open = (id: string): void => {
      index.set(id, index.size)
      lowLink.set(id, index.get(id)!)
      stack.push(id)
      onStack.add(id)
      frames.push({ id, pending: Object.values(graph.get(id)!.children).filter((c) => graph.has(c)) })
    }
    open(root)
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]
      const child = frame.pending.pop()
      if (child != null) {
        if (!index.has(child)) open(child)
        else if (onStack.has(child)) lowLink.set(frame.id, Math.min(lowLink.get(frame.id)!, index.get(child)!))
        continue
      }
      frames.pop()
      const parent = frames[frames.length - 1]
      if (parent != null) lowLink.set(parent.id, Math.min(lowLink.get(parent.id)!, lowLink.get(frame.id)!))
      if (lowLink.get(frame.id) !== index.get(frame.id)) continue
      const members = stack.splice(stack.lastIndexOf(frame.id))
      members.forEach((m) => onStack.delete(m))
      hashComponent(graph, members, hashes)
    }
  }
  return hashes
}

/** The children of `node` that `keep` keeps, each as `value` gives it. */
function childrenOf (node: GraphNode, keep: (child: string) => boolean, value: (child: string) => string): Hashed {
  const out: Hashed = {}
  for (const [alias, child] of Object.entries(node.children)) {
    if (keep(child)) out[alias] = value(child)
  }
  return out
}

function hashComponent (graph: Map<string, GraphNode>, members: string[], hashes: Map<string, string>): void {
  const outside = (child: string): string => hashes.get(child) ?? ''
  if (members.length === 1 && !Object.values(graph.get(members[0])!.children).includes(members[0])) {
    const node = graph.get(members[0])!
    hashes.set(members[0], hashObject({ id: node.fullPkgId, deps: childrenOf(node, () => true, outside) }))
    return
  }
  const at = new Map(members.map((m, i) => [m, i]))
  const inside = (child: string): boolean => at.has(child)
  const insideDeps = (member: string, labels: string[]): Hashed => childrenOf(graph.get(member)!, inside, (child) => labels[at.get(child)!])
  let labels = members.map((m) => {
    const node = graph.get(m)!
    return hashObject({ id: node.fullPkgId, deps: childrenOf(node, (child) => !inside(child), outside) })
  })
  // Refine until a round splits no group of equal labels (the labels before that round stay).
  for (;;) {
    const refined = labels.map((label, i) => hashObject({ color: label, deps: insideDeps(members[i], labels) }))
    if (new Set(refined).size === new Set(labels).size) break
    labels = refined
  }
  const shape: Hashed = {}
  members.forEach((m, i) => { shape[labels[i]] = insideDeps(m, labels) })
  const component = hashObject(shape)
  members.forEach((m, i) => hashes.set(m, hashObject({ member: labels[i], component })))
}

/** The planned packages as pnpm's graph: children by dependency path (skipped ones are not children). */
export function plannedGraph (lockfile: LockfileObject, planned: PlannedPackage[]): Map<string, GraphNode> {
  const depPathByDir = new Map(planned.map((p) => [p.targetDir, p.depPath]))
  return new Map(planned.map((p) => {
    const integrity = lockfile.packages![p.depPath].resolution!.integrity as string
    const children = Object.fromEntries(Object.entries(p.children ?? {}).map(([alias, dir]) => [alias, depPathByDir.get(dir) ?? dir]))
    return [p.depPath, { fullPkgId: `${getPkgIdWithPatchHash(p.depPath as Parameters<typeof getPkgIdWithPatchHash>[0])}:${integrity}`, children }]
  }))
}

/**
 * pnpm's engine part of the key: platform, architecture and the major of the Node its scripts
 * run on (engine/runtime/system-version `engineName`): the Node pnpm runs on, unless pnpm is a
 * single executable, which asks the `node` on PATH (then `undefined`: left to pnpm).
 */
export function engineName (): string | undefined {
  const version = enginesNodeVersion(undefined)
  return version == null ? undefined : `${process.platform};${process.arch};node${version.replace(/^v/, '').split('.')[0]}`
}

/**
 * The key pnpm looks a package up under (`calcDepState`): the engine, the format marker of the
 * release's `form`, the dependency graph's hash when the package builds, the patch's hash when
 * it is patched.
 */
export function sideEffectsCacheKey (engine: string, depGraphHash: string | undefined, patchHash?: string, form: SideEffectsKeyForm = 'format=2'): string {
  return `${engine}${form === 'format=2' ? ';format=2' : ''}${depGraphHash != null ? `;deps=${depGraphHash}` : ''}${patchHash != null ? `;patch=${patchHash}` : ''}`
}

/**
 * A package id that some path from `roots` meets twice, if any: there the `recursive` form's hash
 * is cut, and what it gives depends on the order pnpm hashes the packages in. Looked for as a
 * cycle among the ids of the nodes the roots reach, which every such path makes (a cycle of ids
 * that no single path follows is found too: the answer errs on the side of leaving it to pnpm).
 */
export function repeatedIdOnPath (graph: Map<string, GraphNode>, roots: Iterable<string>): string | undefined {
  // The ids the roots reach, each with its nodes' children's ids.
  const next = new Map<string, Set<string>>()
  const reached = new Set<string>()
  const pending = [...roots].filter((root) => graph.has(root))
  pending.forEach((root) => reached.add(root))
  for (let id = pending.pop(); id != null; id = pending.pop()) {
    const node = graph.get(id)!
    let ids = next.get(node.fullPkgId)
    if (ids == null) next.set(node.fullPkgId, ids = new Set())
    for (const child of Object.values(node.children)) {
      const childNode = graph.get(child)
      if (childNode == null) continue
      ids.add(childNode.fullPkgId)
      if (!reached.has(child)) {
        reached.add(child)
        pending.push(child)
      }
    }
  }
  // A depth-first walk of the ids: one met again while still open closes a cycle.
  const open = new Set<string>()
  const done = new Set<string>()
  for (const start of next.keys()) {
    if (done.has(start)) continue
    const frames = [{ id: start, pending: [...next.get(start)!] }]
    open.add(start)
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]
      const child = frame.pending.pop()
      if (child == null) {
        frames.pop()
        open.delete(frame.id)
        done.add(frame.id)
      } else if (open.has(child)) {
        return child
      } else if (!done.has(child)) {
        open.add(child)
        frames.push({ id: child, pending: [...next.get(child)!] })
      }
    }
  }
  return undefined
}

/** The settings that decide which builds pnpm runs. */
export interface BuildPolicyConfig {
  allowBuilds?: Record<string, unknown>
  dangerouslyAllowAllBuilds?: boolean
}

/** A rule key of `allowBuilds` this reads: a package name, or a name and one exact version. */
export const SIMPLE_RULE = /^(@[^/@\s]+\/)?[^/@\s:#()|]+(@\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?)?$/

/**
 * pnpm's verdict on running the build of `name@version` (building/policy
 * `createAllowBuildFunction`): `true` allowed, `false` denied, `undefined` undecided; `'unread'`
 * when `allowBuilds` has a rule this does not read (version ranges, dependency paths, git
 * repositories), and pnpm decides.
 */
export function buildVerdict (name: string, version: string, config: BuildPolicyConfig): boolean | undefined | 'unread' {
  if (config.dangerouslyAllowAllBuilds === true) return true
  const rules = config.allowBuilds
  if (rules == null) return undefined
  if (Object.keys(rules).some((key) => !SIMPLE_RULE.test(key))) return 'unread'
  const ruleOf = (key: string): unknown => Object.hasOwn(rules, key) ? rules[key] : undefined
  const own = [ruleOf(name), ruleOf(`${name}@${version}`)]
  if (own.includes(false)) return false
  if (own.includes(true)) return true
  return undefined
}

/** The settings that decide whether pnpm reads built packages from the side-effects cache. */
export interface SideEffectsConfig extends BuildPolicyConfig {
  ignoreScripts?: boolean
  /** pnpm's resolved `sideEffectsCache` / `sideEffectsCacheReadonly` (config/reader `resolveSideEffectsCache`). */
  sideEffectsCacheRead?: unknown
  remoteSideEffectsCache?: unknown
}

/**
 * Why pnpm would not import any built package from the local side-effects cache as this
 * computes it (`undefined`: it would): scripts off (no build runs, none is looked up), the
 * cache not read, a remote cache configured (pnpm asks it first), or a Node only pnpm asks.
 */
function cacheUnread (config: SideEffectsConfig): string | undefined {
  if (config.ignoreScripts === true) return 'scripts are off'
  if (config.sideEffectsCacheRead !== true) return 'the side-effects cache is not read'
  const remote = config.remoteSideEffectsCache as { org?: unknown } | undefined
  if (remote?.org != null && remote.org !== '') return 'a remote side-effects cache'
  return undefined
}

/** The keys pnpm would import a package under: if its row requires a build, and (patched) if not. */
export interface CacheKeys {
  key: string
  /** A patched package's key when its row requires no build (no dependency hash). */
  patched?: string
  /**
   * A patched package whose build pnpm does not allow: pnpm looks nothing up for it and patches
   * it in its build step on every install (`key` and `patched` are then the patch's key, under
   * which pnpm records the patched files when its row requires no build).
   */
  eachTime?: true
}

/**
 * The keys pnpm would import each planned package under (linkAllPkgs' `findSideEffectsCacheKey`
 * with scripts on: the engine, the format, the dependency graph's hash if its row requires a
 * build, the patch's hash if it is patched): for the packages whose build pnpm allows
 * (`buildVerdict` true); none when pnpm would look none up (see `cacheUnread`), and a package
 * that builds is then left to pnpm. `patches`: the patched packages' patch hashes by dependency
 * path. A patched package whose build pnpm does not allow is patched by pnpm's build step on
 * every install (`eachTime`); one pnpm would not look up for another reason (the cache not read,
 * rules not read here): then why the install is left to pnpm. `form`: how the running release
 * keys its cache.
 */
export function sideEffectsCacheKeys (lockfile: LockfileObject, planned: PlannedPackage[], config: SideEffectsConfig, patches: Map<string, string>, form: SideEffectsKeyForm = 'format=2'): Map<string, CacheKeys> | string {
  const keys = new Map<string, CacheKeys>()
  const engine = engineName()
  // Why no key can be made as pnpm makes it.
  const unkeyed = engine == null ? 'a pnpm that asks the node on PATH for its version' : undefined
  // Scripts off: pnpm looks nothing up, and its build step patches every patched package on every install.
  const scriptsOff = config.ignoreScripts === true
  const unread = cacheUnread(config) ?? unkeyed
  const verdicts = new Map(planned.map((p) => [p.depPath, buildVerdict(p.name, p.version, config)]))
  const allowed = planned.filter((p) => verdicts.get(p.depPath) === true)
  const whyUnpatchable = scriptsOff ? unkeyed : unread
  const unpatchable = planned.find((p) => patches.has(p.depPath) && (whyUnpatchable != null || (!scriptsOff && verdicts.get(p.depPath) === 'unread')))
  if (unpatchable != null) return `${unpatchable.depPath}: patched, and pnpm applies the patch itself (${whyUnpatchable ?? 'allowBuilds has rules not read here'})`
  if (unread != null && !scriptsOff) return keys
  for (const p of planned) {
    const patch = patches.get(p.depPath)
    if (patch == null || (!scriptsOff && verdicts.get(p.depPath) === true)) continue
    const patchKey = sideEffectsCacheKey(engine!, undefined, patch, form)
    keys.set(p.depPath, { key: patchKey, patched: patchKey, eachTime: true })
  }
  if (scriptsOff || allowed.length === 0) return keys
  // Only the packages whose builds pnpm allows are looked up: their hashes, not the whole graph's.
  const graph = plannedGraph(lockfile, planned)
  const roots = allowed.map((p) => p.depPath)
  const repeated = form === 'recursive' ? repeatedIdOnPath(graph, roots) : undefined
  if (repeated != null) return `${repeated.slice(0, repeated.lastIndexOf(':'))}: met twice on a dependency path of a package whose build pnpm allows, where this pnpm release's side-effects cache key depends on the order of the install`
  const hashes = graphHashes(graph, roots)
  for (const p of allowed) {
    const patch = patches.get(p.depPath)
    keys.set(p.depPath, {
      key: sideEffectsCacheKey(engine!, hashes.get(p.depPath)!, patch, form),
      ...(patch != null ? { patched: sideEffectsCacheKey(engine!, undefined, patch, form) } : {}),
    })
  }
  return keys
}

/** Why a package whose build or patch the cache lacks under `keys` is left to pnpm (the install's and the explain command's words), with why the native install does not run it. */
export function sideEffectsMiss (depPath: string, keys: Array<string | undefined>, why?: string): string {
  return `${depPath}: no side effects cached for ${keys.filter((k) => k != null).join(' or ')}${why != null ? `, and ${why}` : ''}`
}

/**
 * What pnpm's side-effects cache holds for a package whose build pnpm allows, under the key it
 * would look it up with (its row's: `keys.key` if the row requires a build, else the patch's):
 * - `cached`: a diff (files added or deleted), which pnpm imports (once its blobs verify);
 * - `unchanged`: an empty diff: the build changed no file, and pnpm's verified read drops such an
 *   entry (it counts only with files added or deleted: store/cafs `checkPkgFilesIntegrity`, in
 *   every 11.x release), so pnpm builds the package again on every install, and records the
 *   same empty diff;
 * - `unchanged-elsewhere`: nothing under the key, but an empty diff under another key of this
 *   engine (the same package built for another set of dependencies, as a resolving install
 *   keys it): pnpm builds it now, and most likely finds that it changes nothing again;
 * - `missing`: nothing under the key (pnpm builds it, and caches the result);
 * - `not-built`: the row requires no build and nothing is patched: nothing is looked up;
 * - `not-in-store`: no row (a store that is not there, or cannot be read, has none).
 * The rows are only read: nothing verified or written.
 */
export type RecordedBuild = 'cached' | 'unchanged' | 'unchanged-elsewhere' | 'missing' | 'not-built' | 'not-in-store'

export async function recordedBuilds (storeDir: string, wanted: Array<{ filesIndexFile: string, keys: CacheKeys }>): Promise<RecordedBuild[]> {
  const rows = await readRowsUnverified(storeDir, wanted.map((w) => w.filesIndexFile))
  return rows.map((row, i): RecordedBuild => {
    if (row == null) return 'not-in-store'
    const key = row.requiresBuild ? wanted[i].keys.key : wanted[i].keys.patched
    if (key == null) return 'not-built'
    const entries = row.sideEffectsMaps ?? new Map<string, SideEffectsDiff>()
    const entry = entries.get(key)
    if (entry != null) return isEmptyDiff(entry) ? 'unchanged' : 'cached'
    const engine = key.indexOf(';deps=')
    if (engine === -1) return 'missing'
    const sameEngine = key.slice(0, engine + ';deps='.length)
    return [...entries].some(([other, diff]) => other.startsWith(sameEngine) && isEmptyDiff(diff)) ? 'unchanged-elsewhere' : 'missing'
  })
}

type StoredRow = Pick<ReadPackageFilesResponse, 'requiresBuild' | 'sideEffectsMaps'>

/** The rows of `filesIndexFiles`, read only and unverified; `undefined`: no row (or no store, or one that cannot be read). */
async function readRowsUnverified (storeDir: string, filesIndexFiles: string[]): Promise<Array<StoredRow | undefined>> {
  const none = filesIndexFiles.map(() => undefined)
  if (filesIndexFiles.length === 0 || !fs.existsSync(storeDir)) return none
  try {
    const { results } = await readPkgsFromCafs({ storeDir, verifyStoreIntegrity: false }, filesIndexFiles)
    return results.map((r) => 'files' in r ? r.files : undefined)
  } catch {
    return none
  }
}

interface SideEffectsDiff { added?: unknown, deleted?: unknown }

const isEmptyDiff = (diff: SideEffectsDiff): boolean => diff.added == null && diff.deleted == null

/** An allowed build of the install, with what the cache holds of it (`recordedBuilds`). */
export interface LookedUpBuild {
  depPath: string
  keys: CacheKeys
  recorded: RecordedBuild
}

/**
 * What the cache holds of each build pnpm allows among `planned` (those with `keys`, but the
 * patched packages pnpm patches on every install, for which it looks nothing up).
 */
export async function lookUpBuilds (storeDir: string, planned: readonly PlannedPackage[], keys: Map<string, CacheKeys>): Promise<LookedUpBuild[]> {
  const allowed = planned.filter((p) => keys.has(p.depPath) && keys.get(p.depPath)!.eachTime == null)
  const recorded = await recordedBuilds(storeDir, allowed.map((p) => ({ filesIndexFile: p.filesIndexFile, keys: keys.get(p.depPath)! })))
  return allowed.map((p, i) => ({ depPath: p.depPath, keys: keys.get(p.depPath)!, recorded: recorded[i] }))
}

/**
 * Why the allowed builds `looked` are left to pnpm where the native install does not run
 * builds (`why`), the lasting reason first: every build pnpm runs on every install, named at
 * once (`unchanged`, or most likely so: `unchanged-elsewhere`), which no cache will ever give
 * the native install; then the first one the cache lacks, which pnpm caches this time.
 */
export function unbuiltReasons (looked: LookedUpBuild[], why: string): { everyInstall?: string, missing?: string } {
  const unchanged = looked.filter((b) => b.recorded === 'unchanged' || b.recorded === 'unchanged-elsewhere')
  const missing = looked.find((b) => b.recorded === 'missing')
  return {
    ...(unchanged.length > 0 ? { everyInstall: everyInstallReason(unchanged, why) } : {}),
    ...(missing != null ? { missing: sideEffectsMiss(missing.depPath, [missing.keys.key, missing.keys.patched], why) } : {}),
  }
}

/**
 * Why builds pnpm runs on every install are left to pnpm (the install's and the explain
 * command's words): each named, those known so only from another key marked as such.
 */
function everyInstallReason (builds: LookedUpBuild[], why: string): string {
  const one = builds.length === 1
  const elsewhere = builds.filter((b) => b.recorded === 'unchanged-elsewhere').map((b) => b.depPath)
  const likely = elsewhere.length > 0 ? ` (${elsewhere.join(', ')}: recorded so for another set of dependencies)` : ''
  return `${builds.map((b) => b.depPath).join(', ')}: ${one ? 'its build changes' : 'their builds change'} no file${likely}, which pnpm records in its side-effects cache but never takes from it (it builds ${one ? 'it' : 'them'} on every install), and ${why}`
}

/** Whether each row (by its key) requires a build, read unverified as `recordedBuilds` reads them; `undefined`: no row (or no store). */
export async function rowsRequireBuild (storeDir: string, filesIndexFiles: string[]): Promise<Array<boolean | undefined>> {
  return (await readRowsUnverified(storeDir, filesIndexFiles)).map((row) => row?.requiresBuild)
}
