/**
 * The project's direct dependencies as pnpm's install summary lists them (`dependencies:`,
 * `devDependencies:`, `optionalDependencies:`, each `+ name version`, an alias with the name it
 * stands for): what pnpm reports once it has linked them into `node_modules`.
 */
import { DEPENDENCY_GROUPS, parseRegistryDepPath, refToDepPath, type DependencyGroup, type LockfileObject } from './virtual-store.js'

export interface DirectDependency {
  /** The name it is linked under (the alias). */
  name: string
  /** The package's own name. */
  realName: string
  version: string
  /** The lockfile key. */
  id: string
  /** pnpm's word for the group. */
  dependencyType: 'prod' | 'dev' | 'optional'
}

const TYPE_OF: Record<DependencyGroup, DirectDependency['dependencyType']> = { dependencies: 'prod', devDependencies: 'dev', optionalDependencies: 'optional' }

/** The root importer's dependencies that were installed (`skipped`: the optional packages pnpm skips here). */
export function directDependencies (lockfile: LockfileObject, skipped: Iterable<string>): DirectDependency[] {
  const left = new Set(skipped)
  const importer = lockfile.importers['.'] ?? {}
  return DEPENDENCY_GROUPS.flatMap((group) => Object.entries(importer[group] ?? {}).flatMap(([alias, ref]): DirectDependency[] => {
    const id = refToDepPath(alias, ref)
    const parsed = parseRegistryDepPath(id)
    if (parsed == null || left.has(id)) return []
    return [{ name: alias, realName: parsed.name, version: lockfile.packages?.[id]?.version ?? parsed.version, id, dependencyType: TYPE_OF[group] }]
  }))
}
