/**
 * `node_modules/.package-map.json`, which pnpm 11.19 to 11.26 write after every isolated install
 * (a map for Node's `--experimental-package-map`, which their scripts get when
 * `nodeExperimentalPackageMap` is set): every project and every package the importers reach
 * (those pnpm skips here too), each with the URL of its directory relative to the root's
 * `node_modules` and what its `require` may resolve: its own name and its dependencies, by
 * their ids (a package's dependency path, a project's importer id, `link:` targets by their
 * path from the lockfile's directory). The rules are those of the 11.22.0 bundle's
 * lockfile/to-pnp `lockfileToPackageMap` in its default (not `loose`) form, read there; the
 * module is not published on its own. The e2e specs compare the file with stock's.
 */
import path from 'node:path'
import { depPathToFilename, parseRegistryDepPath, reachable, refToDepPath, type DependencyGroup, type LockfileObject } from './virtual-store.js'

interface MappedPackage {
  url: string
  dependencies: Record<string, string>
}

/** JavaScript's default string order (by UTF-16 code units), as pnpm sorts ids and aliases. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** `to` as a URL relative to `from`: `.`, or starting with `./` or `../`. */
export function relativeUrl (from: string, to: string): string {
  const relative = path.relative(from, to).split(path.sep).join('/')
  if (relative === '') return '.'
  return relative === '..' || relative.startsWith('../') ? relative : `./${relative}`
}

export interface PackageMapOptions {
  lockfileDir: string
  /** The root's `node_modules`, which the URLs are relative to. */
  rootModulesDir: string
  virtualStoreDir: string
  virtualStoreDirMaxLength: number
  /** Each importer's manifest name, if it has one. */
  importerNames: Record<string, string | undefined>
  include: Record<DependencyGroup, boolean>
}

/** The text pnpm writes to `.package-map.json`: the map as one line of JSON, then a newline. */
export function packageMapText (lockfile: LockfileObject, opts: PackageMapOptions): string {
  const packages = new Map<string, MappedPackage>()
  const reached = reachable(lockfile, opts.include)
  const known = (depPath: string): boolean => reached.has(depPath) && lockfile.packages?.[depPath] != null
  const sorted = <T>(entries: Record<string, T> | undefined): Array<[string, T]> => Object.entries(entries ?? {}).sort(([a], [b]) => byCodeUnits(a, b))
  const add = (id: string, dir: string, dependencies: Map<string, string>): void => {
    packages.set(id, { url: relativeUrl(opts.rootModulesDir, dir), dependencies: Object.fromEntries([...dependencies].sort(([a], [b]) => byCodeUnits(a, b))) })
  }
  /** A `link:` dependency's id and directory (from an importer's directory, or the lockfile's). */
  const linkTarget = (ref: string, fromDir: string): { id: string, dir: string } => {
    const dir = path.resolve(fromDir, ref.slice('link:'.length))
    const relative = path.relative(opts.lockfileDir, dir).split(path.sep).join('/')
    return { id: relative === '' ? '.' : relative.startsWith('..') || path.isAbsolute(relative) ? `link:${dir}` : relative, dir }
  }
  const addDependencies = (into: Map<string, string>, deps: Record<string, string> | undefined, fromDir: string): void => {
    for (const [alias, ref] of sorted(deps)) {
      if (ref.startsWith('link:')) {
        const target = linkTarget(ref, fromDir)
        if (!packages.has(target.id)) packages.set(target.id, { url: relativeUrl(opts.rootModulesDir, target.dir), dependencies: {} })
        into.set(alias, target.id)
        continue
      }
      const depPath = refToDepPath(alias, ref)
      if (known(depPath)) into.set(alias, depPath)
    }
  }
  for (const [id, importer] of sorted(lockfile.importers)) {
    const dir = path.resolve(opts.lockfileDir, id)
    const dependencies = new Map<string, string>()
    const name = opts.importerNames[id]
    if (name != null && name !== '') dependencies.set(name, id)
    // pnpm's order: dependencies, optionalDependencies, devDependencies (a later alias wins).
    for (const group of ['dependencies', 'optionalDependencies', 'devDependencies'] as const) {
      if (opts.include[group]) addDependencies(dependencies, importer[group], dir)
    }
    add(id, dir, dependencies)
  }
  for (const [depPath, snapshot] of sorted(lockfile.packages)) {
    if (!reached.has(depPath)) continue
    const name = snapshot.name ?? parseRegistryDepPath(depPath)?.name ?? depPath
    const dependencies = new Map([[name, depPath]])
    addDependencies(dependencies, snapshot.dependencies, opts.lockfileDir)
    addDependencies(dependencies, snapshot.optionalDependencies, opts.lockfileDir)
    add(depPath, path.join(opts.virtualStoreDir, depPathToFilename(depPath, opts.virtualStoreDirMaxLength), 'node_modules', name), dependencies)
  }
  return `${JSON.stringify({ packages: Object.fromEntries([...packages].sort(([a], [b]) => byCodeUnits(a, b))) })}\n`
}
