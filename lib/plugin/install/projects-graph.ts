/**
 * Which workspace projects each project depends on, as pnpm 11.28.11's `pnpm install` reads it
 * to order the projects' own lifecycle scripts (a project's run once those of the projects it
 * depends on have ended): its bundle's workspace/projects-graph `createProjectsGraph`, with the
 * workspace's catalogs and `linkWorkspacePackages` as a boolean, then `projectsDependencies`
 * (a project never depends on itself).
 *
 * A dependency is on a project when its specifier (through its catalog entry, for `catalog:`)
 * - is a directory (`link:`, `file:` not naming a tarball, a relative path, `workspace:./…`)
 *   that is the project's;
 * - is `workspace:` with a version or range (an alias's name after `workspace:<alias>@`): the
 *   project of that name whose version it takes (the highest it meets; any, for `*`, `^`, `~`);
 * - is a plain version or range (`npm:<name>@…` naming it), only with `linkWorkspacePackages`.
 * Anything else (a tag, a URL, git) is on no project. What this does not read as pnpm does (a
 * path from the home directory, a `file:` URL, a catalog entry pnpm would refuse) is said,
 * and the caller leaves the install to pnpm.
 */
import path from 'node:path'
import semver from 'semver'
import type { ConfiguredCatalogs } from './catalogs.js'

export interface GraphProject { dir: string, manifest: Record<string, unknown> }

export interface GraphOptions {
  catalogs?: ConfiguredCatalogs
  linkWorkspacePackages: boolean
}

/** A dependency on no project. */
const NONE = ''

/** A specifier pnpm reads as a path on disk (npm-package-arg's file specs), but for `file:`. */
const isPathSpec = (spec: string): boolean => spec === '.' || spec === '..' || /^\.{0,2}\//.test(spec) || spec.startsWith('~/')

/** What `workspace:` specifiers split into: an alias, then a version, range or path. */
const WORKSPACE_SPEC = /^workspace:(?:(?<alias>[^._/][^@]*)@)?(?<version>.*)$/

class Unread extends Error {}

/** The graph: each project's directory with those of the projects it depends on, in its dependencies' order; or why it is not read here. */
export function projectsGraph (projects: GraphProject[], opts: GraphOptions): Map<string, string[]> | string {
  const byDir = new Map(projects.map((p) => [path.resolve(p.dir), p]))
  const byName = new Map<string, GraphProject[]>()
  for (const p of projects) {
    const name = p.manifest.name
    if (typeof name !== 'string' || name === '') continue
    byName.set(name, [...(byName.get(name) ?? []), p])
  }
  const directory = (from: string, spec: string): string => {
    if (spec.startsWith('~')) throw new Unread(`a path from the home directory (${spec})`)
    return byDir.get(path.resolve(from, spec))?.dir ?? NONE
  }
  const byVersion = (name: string, spec: string, workspace: boolean): string => {
    const candidates = byName.get(name)
    if (candidates == null) return NONE
    if (!workspace && !opts.linkWorkspacePackages) return NONE
    const versions = candidates.flatMap((c) => typeof c.manifest.version === 'string' && c.manifest.version !== '' ? [c.manifest.version] : [])
    if (workspace && versions.length === 0) return candidates[0].dir
    const matched = versions.includes(spec) ? spec : highestMeeting(versions, spec)
    return candidates.find((c) => c.manifest.version === matched)?.dir ?? NONE
  }
  const dependencyOn = (project: GraphProject, name: string, given: unknown): string => {
    if (typeof given !== 'string') throw new Unread(`a specifier that is not a string (${name})`)
    const spec = fromCatalog(name, given, opts.catalogs)
    const workspace = WORKSPACE_SPEC.exec(spec)?.groups
    if (workspace != null) {
      if (isPathSpec(workspace.version)) return directory(project.dir, workspace.version)
      const version = workspace.version === '^' || workspace.version === '~' || workspace.version === '' ? '*' : workspace.version
      const target = registrySpec(name, workspace.alias != null ? `npm:${workspace.alias}@${version}` : version)
      return target == null ? NONE : byVersion(target.name, target.selector, true)
    }
    if (spec.startsWith('workspace:')) return NONE
    if (spec.startsWith('npm:')) {
      const target = registrySpec(name, spec)
      return target == null ? NONE : byVersion(target.name, target.selector, false)
    }
    if (spec.startsWith('link:')) return directory(project.dir, spec.slice('link:'.length))
    if (spec.startsWith('file:')) {
      const file = spec.slice('file:'.length)
      if (file.startsWith('/') || file.startsWith('~')) throw new Unread(`a file: specifier from the root or home (${spec})`)
      return /\.(?:tgz|tar\.gz|tar)$/i.test(file) ? NONE : directory(project.dir, file)
    }
    if (isPathSpec(spec)) return /\.(?:tgz|tar\.gz|tar)$/i.test(spec) ? NONE : directory(project.dir, spec)
    // An empty specifier is the `latest` tag to pnpm's specifier parser.
    return spec !== '' && (semver.valid(spec, true) != null || semver.validRange(spec, true) != null) ? byVersion(name, spec, false) : NONE
  }
  const graph = new Map<string, string[]>()
  try {
    for (const project of projects) {
      const m = project.manifest as Record<string, Record<string, unknown> | undefined>
      const dependencies = { ...m.peerDependencies, ...m.devDependencies, ...m.optionalDependencies, ...m.dependencies }
      const on = Object.entries(dependencies).map(([name, spec]) => dependencyOn(project, name, spec))
      graph.set(project.dir, on.filter((dir) => dir !== NONE && dir !== project.dir))
    }
  } catch (err) {
    if (err instanceof Unread) return err.message
    throw err
  }
  return graph
}

/** `spec` through its catalog entry when it is `catalog:` (pnpm's frozen check has refused an entry that is missing). */
function fromCatalog (name: string, spec: string, catalogs: ConfiguredCatalogs = {}): string {
  if (!spec.startsWith('catalog:')) return spec
  const catalog = spec.slice('catalog:'.length).trim() || 'default'
  const entry = catalogs[catalog]?.[name]
  if (typeof entry !== 'string' || entry.startsWith('catalog:') || entry.startsWith('link:') || entry.startsWith('file:')) {
    throw new Unread(`a catalog entry pnpm does not take (${name}: ${spec})`)
  }
  return entry
}

/**
 * The package name and normalized version or range a registry specifier selects (`npm:` naming
 * another package, or not); `undefined` for a tag, which selects no project.
 */
function registrySpec (name: string, spec: string): { name: string, selector: string } | undefined {
  let selector = spec
  if (spec.startsWith('npm:')) {
    const body = spec.slice('npm:'.length)
    const at = body.lastIndexOf('@')
    if (semver.validRange(body) != null) selector = body
    else if (at < 1) return undefined
    else {
      name = body.slice(0, at)
      selector = body.slice(at + 1)
    }
  }
  const version = semver.valid(selector, true)
  if (version != null) {
    if (/\+r\d+$/.test(selector.trim())) throw new Unread(`a registry revision (${spec})`)
    return { name, selector: version }
  }
  const range = semver.validRange(selector, true)
  if (range != null) return { name, selector: range }
  if (encodeURIComponent(selector) === selector) return undefined
  throw new Unread(`a specifier pnpm's registry reader does not take (${spec})`)
}

/** The version of `versions` a range takes: the highest meeting it (any, for `*`, `^`, `~` or nothing, with prereleases; the last in string order if none is semver). */
function highestMeeting (versions: string[], range: string): string | null {
  if (range === '*' || range === '^' || range === '~' || range === '') return semver.maxSatisfying(versions, '*', { includePrerelease: true }) ?? versions.reduce<string | null>((max, v) => max == null || v > max ? v : max, null)
  return semver.maxSatisfying(versions, range, { loose: true })
}
