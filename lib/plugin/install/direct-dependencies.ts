/**
 * The project's direct dependencies as pnpm's install summary lists them (`dependencies:`,
 * `devDependencies:`, `optionalDependencies:`, each `+ name version`, an alias with the name it
 * stands for): what pnpm reports once it has linked them into `node_modules`.
 */
import path from 'node:path'
import { DEPENDENCY_GROUPS, parseRegistryDepPath, refToDepPath, type DependencyGroup, type LockfileObject } from './virtual-store.js'

export interface DirectDependency {
  /** The name it is linked under (the alias). */
  name: string
  /** The package's own name. */
  realName: string
  version?: string
  /** The lockfile key (not for a `link:`). */
  id?: string
  /** A `link:` dependency's directory (pnpm lists it as `<- <dir>`). */
  linkedFrom?: string
  /** pnpm's word for the group. */
  dependencyType: 'prod' | 'dev' | 'optional'
}

const TYPE_OF: Record<DependencyGroup, DirectDependency['dependencyType']> = { dependencies: 'prod', devDependencies: 'dev', optionalDependencies: 'optional' }

/** A linked directory's manifest as pnpm reads it for the summary: a project's, else the folder's (`undefined`: none). */
export type LinkedManifest = (dir: string) => { name?: string, version?: string } | undefined

/**
 * The dependencies of the importer `importerId` (the root's by default; pnpm's summary lists
 * those of the project it runs in) that were installed (`skipped`: the optional packages pnpm
 * skips here), its `link:` ones too as pnpm's headless install logs them (deps-restorer
 * `getExternalLinkToLink`: the directory's manifest, or the alias at 0.0.0 without one), from
 * the importer's directory. pnpm lists only the links it makes: not a `link:` one its hoisting
 * made first (`hoistedFirst`, the links the hoisting put in the root's `node_modules`: a
 * workspace project hoisted publicly).
 */
export function directDependencies (lockfile: LockfileObject, skipped: Iterable<string>, rootDir?: string, manifestAt?: LinkedManifest, hoistedFirst: Record<string, string> = {}, importerId = '.'): DirectDependency[] {
  const left = new Set(skipped)
  const importer = lockfile.importers[importerId] ?? {}
  return DEPENDENCY_GROUPS.flatMap((group) => Object.entries(importer[group] ?? {}).flatMap(([alias, ref]): DirectDependency[] => {
    if (ref.startsWith('link:') && rootDir != null && manifestAt != null) {
      const dir = path.resolve(rootDir, importerId, ref.slice('link:'.length))
      if (Object.hasOwn(hoistedFirst, alias) && path.resolve(hoistedFirst[alias]) === dir) return []
      const manifest = manifestAt(dir) ?? { name: alias, version: '0.0.0' }
      return [{ name: alias, realName: manifest.name!, version: manifest.version, linkedFrom: dir, dependencyType: TYPE_OF[group] }]
    }
    const id = refToDepPath(alias, ref)
    const parsed = parseRegistryDepPath(id)
    if (parsed == null || left.has(id)) return []
    return [{ name: alias, realName: parsed.name, version: lockfile.packages?.[id]?.version ?? parsed.version, id, dependencyType: TYPE_OF[group] }]
  }))
}
