/**
 * The optional peers pnpm's lockfile filter does not follow when an install leaves a dependency
 * group out (`--prod`, `--dev`, `--no-optional`), from pnpm 11.28.0 (its `lockfile/peer-edges`,
 * `getPeerSatisfactionEdgesToSkip`): a package's optional peer, resolved in its snapshot's
 * `dependencies`, that only the projects listing that peer themselves reach. Such a peer was
 * resolved from the project's own dependency (often a devDependency, as `@types/node` for
 * `vite`); with that group out, pnpm neither installs it through the package nor links it
 * there, unless something installed reaches it otherwise. Laying it out ahead of pnpm would have
 * pnpm remove it again.
 */
import { parse, parseDepPath, refToRelative, removePeersSuffix } from '@pnpm/deps.path'
import type { LockfileObject, PackageSnapshot } from './virtual-store.js'

/**
 * Which optional peers a release's filter skips: none (before 11.28.0), any a package resolves
 * (11.28.0 to 11.28.6), or only those its dependency path's peer suffix names, or any when the
 * suffix is a hash (from 11.28.7).
 */
export type PeerEdgeRule = 'none' | 'optional-peers' | 'bound-peers'

/** Per package (dependency path), the aliases of the dependencies pnpm's filter does not follow. */
export type PeerEdges = ReadonlyMap<string, ReadonlySet<string>>

/** A package's optional peer resolved in its snapshot: the package, the alias, where it points. */
interface PeerEntry { parent: string, alias: string, target: string }

const isOptionalPeer = (snapshot: PackageSnapshot, alias: string): boolean =>
  snapshot.peerDependencies != null && Object.hasOwn(snapshot.peerDependencies, alias) &&
  snapshot.peerDependenciesMeta?.[alias]?.optional === true

/** The top-level `(…)` groups of a peer suffix; `undefined` when unbalanced. */
function suffixSegments (suffix: string): string[] | undefined {
  const segments: string[] = []
  let depth = 0
  let start = -1
  for (let i = 0; i < suffix.length; i++) {
    const char = suffix[i]
    if (char === '(') {
      if (depth++ === 0) start = i + 1
    } else if (char === ')') {
      if (--depth < 0) return undefined
      if (depth === 0) segments.push(suffix.slice(start, i))
    } else if (depth === 0) {
      return undefined
    }
  }
  return depth === 0 ? segments : undefined
}

/**
 * The peers `parent`'s dependency path binds (without their own peer suffixes): `null` when it
 * has no readable peer suffix (none of its peers is skipped), `undefined` when the suffix is a
 * hash (it names none: any is).
 */
function boundProviders (parent: string): Set<string> | undefined | null {
  const { peerDepGraphHash } = parseDepPath(parent)
  if (peerDepGraphHash === '') return null
  const segments = suffixSegments(peerDepGraphHash)
  if (segments == null) return null
  const providers = segments.filter((segment) => !segment.startsWith('patch_hash='))
  if (providers.length === 1 && /^[0-9a-fA-F]{32}$/.test(providers[0])) return undefined
  return new Set(providers.filter((segment) => parse(segment).name != null).map(removePeersSuffix))
}

/** Every optional peer a package resolves in its snapshot, as `rule` counts them. */
function optionalPeerEntries (lockfile: LockfileObject, rule: PeerEdgeRule): PeerEntry[] {
  const entries: PeerEntry[] = []
  for (const [parent, snapshot] of Object.entries(lockfile.packages ?? {})) {
    if (snapshot.peerDependencies == null || snapshot.peerDependenciesMeta == null) continue
    const providers = rule === 'bound-peers' ? boundProviders(parent) : undefined
    if (providers === null) continue
    for (const deps of [snapshot.dependencies, snapshot.optionalDependencies]) {
      for (const [alias, ref] of Object.entries(deps ?? {})) {
        if (!isOptionalPeer(snapshot, alias)) continue
        const target = refToRelative(ref, alias)
        if (target != null && (providers == null || providers.has(removePeersSuffix(target)))) entries.push({ parent, alias, target })
      }
    }
  }
  return entries
}

/** The dependency paths `deps` point to (`link:` ones left out). */
function depPathsOf (deps: Record<string, string> | undefined): string[] {
  return Object.entries(deps ?? {}).flatMap(([alias, ref]) => refToRelative(ref, alias) ?? [])
}

/** Every package `seeds` reach through any edge, whatever the groups. */
function reachedFrom (lockfile: LockfileObject, seeds: string[]): Set<string> {
  const packages = lockfile.packages ?? {}
  const seen = new Set<string>()
  const stack = [...seeds]
  for (let depPath = stack.pop(); depPath != null; depPath = stack.pop()) {
    if (seen.has(depPath)) continue
    seen.add(depPath)
    const snapshot = Object.hasOwn(packages, depPath) ? packages[depPath] : undefined
    if (snapshot != null) stack.push(...depPathsOf(snapshot.dependencies), ...depPathsOf(snapshot.optionalDependencies))
  }
  return seen
}

/**
 * The edges pnpm's filter skips when a group is left out (`undefined`: none; the rule is
 * pnpm's whether or not a group is out, but it applies it only then). An optional peer's edge
 * is skipped when no project that does not list the peer directly reaches the package through
 * any edge; with `resolvePeersFromWorkspaceRoot` (pnpm's default), a peer among the root
 * project's devDependencies counts as listed by none.
 */
export function peerSatisfactionEdges (lockfile: LockfileObject, rule: PeerEdgeRule, resolvePeersFromWorkspaceRoot: boolean): PeerEdges | undefined {
  if (rule === 'none') return undefined
  const entries = optionalPeerEntries(lockfile, rule)
  if (entries.length === 0) return undefined
  const importers = Object.values(lockfile.importers ?? {})
  const direct = importers.map((importer) => new Set([...depPathsOf(importer.dependencies), ...depPathsOf(importer.devDependencies), ...depPathsOf(importer.optionalDependencies)]))
  const rootDev = resolvePeersFromWorkspaceRoot && lockfile.importers?.['.'] != null ? new Set(depPathsOf(lockfile.importers['.'].devDependencies)) : undefined
  // What the projects not listing a target reach, computed once per set of such projects.
  const reachedBy = new Map<string, Set<string>>()
  const edges = new Map<string, Set<string>>()
  for (const { parent, alias, target } of entries) {
    const nonListing = rootDev?.has(target) === true ? [] : direct.flatMap((deps, i) => deps.has(target) ? [] : [i])
    const key = nonListing.join(',')
    let reached = reachedBy.get(key)
    if (reached == null) reachedBy.set(key, reached = reachedFrom(lockfile, nonListing.flatMap((i) => [...direct[i]])))
    if (reached.has(parent)) continue
    let aliases = edges.get(parent)
    if (aliases == null) edges.set(parent, aliases = new Set())
    aliases.add(alias)
  }
  return edges.size === 0 ? undefined : edges
}

/** Whether pnpm's filter does not follow `parent`'s dependency `alias`. */
export const skipsPeerEdge = (edges: PeerEdges | undefined, parent: string, alias: string): boolean =>
  edges?.get(parent)?.has(alias) === true

/**
 * `snapshot` as pnpm's filtered lockfile has it (its `pruneDanglingPeerSatisfactionEdges`): the
 * skipped peer edges whose target the filter does not pick otherwise (`picked`) dropped. pnpm
 * finds a package in place only when the current lockfile's dependencies equal these.
 */
export function prunedSnapshot (depPath: string, snapshot: PackageSnapshot, edges: PeerEdges | undefined, picked: ReadonlySet<string>): PackageSnapshot {
  const aliases = edges?.get(depPath)
  if (aliases == null) return snapshot
  const prune = (deps: Record<string, string> | undefined): Record<string, string> | undefined => {
    if (deps == null) return deps
    const kept = Object.entries(deps).filter(([alias, ref]) => {
      if (!aliases.has(alias)) return true
      const target = refToRelative(ref, alias)
      return target == null || picked.has(target)
    })
    return kept.length === Object.keys(deps).length ? deps : Object.fromEntries(kept)
  }
  const dependencies = prune(snapshot.dependencies)
  const optionalDependencies = prune(snapshot.optionalDependencies)
  if (dependencies === snapshot.dependencies && optionalDependencies === snapshot.optionalDependencies) return snapshot
  const copy: PackageSnapshot = { ...snapshot, dependencies, optionalDependencies }
  if (dependencies == null || Object.keys(dependencies).length === 0) delete copy.dependencies
  if (optionalDependencies == null || Object.keys(optionalDependencies).length === 0) delete copy.optionalDependencies
  return copy
}
