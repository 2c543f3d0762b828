/**
 * pnpm 11.28's frozen-install checks of catalogs (`catalog:` and `catalog:<name>` specifiers):
 * the lockfile's `catalogs` section records each entry an importer used (its specifier and the
 * version it resolved to), and a frozen install refuses the lockfile when
 *
 * - an entry's specifier is not the one the workspace file now gives that entry
 *   (`allCatalogsAreUpToDate`: `ERR_PNPM_LOCKFILE_CONFIG_MISMATCH`, "catalogs"; entries the
 *   workspace file has and the lockfile does not are fine), or
 * - an importer locked a `catalog:` dependency at another version than the catalog's entry
 *   (`catalogResolutionsAreUpToDate`: `ERR_PNPM_OUTDATED_LOCKFILE`).
 *
 * Both are conservative where pnpm is lenient: specifiers pnpm takes as the same git
 * repository though spelt differently, and versions semver reads but the lockfile never
 * holds, count as out of date here (the plugin then leaves the install to pnpm).
 */
import fs from 'node:fs'
import path from 'node:path'
import { loadYaml } from './lockfile-file.js'
import { isSemver } from './semver-range.js'

/** The workspace file's catalogs, as pnpm passes them to `hooks.updateConfig` (`catalog` as `default`). */
export type ConfiguredCatalogs = Record<string, Record<string, unknown> | undefined>

/** The lockfile's `catalogs`: catalog → alias → what it was resolved from and to. */
export type LockedCatalogs = Record<string, Record<string, { specifier: string, version: string }>>

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** What is wrong with a lockfile's `catalogs` section, as pnpm writes it (`undefined`: nothing). */
export function lockedCatalogsShapeError (catalogs: unknown): string | undefined {
  if (catalogs == null) return undefined
  if (!isMapping(catalogs)) return 'the lockfile\'s catalogs is not a mapping'
  for (const [name, catalog] of Object.entries(catalogs)) {
    if (!isMapping(catalog)) return `the lockfile's catalogs[${JSON.stringify(name)}] is not a mapping`
    for (const [alias, entry] of Object.entries(catalog)) {
      if (!isMapping(entry) || typeof entry.specifier !== 'string' || typeof entry.version !== 'string') {
        return `the lockfile's catalogs[${JSON.stringify(name)}][${JSON.stringify(alias)}] is not a specifier and a version`
      }
    }
  }
  return undefined
}

/**
 * Why the lockfile's catalogs are not the workspace file's (`undefined`: every entry the
 * lockfile records has the specifier the workspace file gives it).
 */
export function catalogsOutOfDate (configured: ConfiguredCatalogs | undefined, locked: unknown): string | undefined {
  const shape = lockedCatalogsShapeError(locked)
  if (shape != null) return shape
  for (const [name, catalog] of Object.entries((locked ?? {}) as LockedCatalogs)) {
    for (const [alias, { specifier }] of Object.entries(catalog)) {
      const wanted = configured?.[name]?.[alias]
      if (wanted !== specifier) return `the catalogs differ from the lockfile (the ${name} catalog's ${alias} is ${JSON.stringify(wanted)}, the lockfile has ${JSON.stringify(specifier)})`
    }
  }
  return undefined
}

/** The catalog a specifier takes its version from (`catalog:` is `default`), or `undefined`. */
export function catalogOf (specifier: string): string | undefined {
  if (!specifier.startsWith('catalog:')) return undefined
  return specifier.slice('catalog:'.length).trim() || 'default'
}

/** A locked version without its peers' or patch's `(…)` suffix. */
function withoutSuffix (ref: string): string {
  const open = ref.indexOf('(')
  return open === -1 ? ref : ref.slice(0, open)
}

/** An importer as far as the catalog check reads it: specifiers and the locked version of each dependency. */
export interface CatalogImporter {
  specifiers?: Record<string, string>
  dependencies?: Record<string, string>
  devDependencies?: Record<string, string>
  optionalDependencies?: Record<string, string>
}

/**
 * Why the importer locked a catalog dependency at another version than its catalog entry
 * (`undefined`: none). pnpm compares only registry versions (semver) with entries the lockfile
 * has; a version semver reads that is not of the lockfile's plain form counts as different.
 */
export function catalogResolutionStale (importer: CatalogImporter, locked: unknown): string | undefined {
  const catalogs = (lockedCatalogsShapeError(locked) == null ? locked ?? {} : {}) as LockedCatalogs
  for (const [alias, specifier] of Object.entries(importer.specifiers ?? {})) {
    const name = catalogOf(specifier)
    if (name == null) continue
    const entry = Object.hasOwn(catalogs, name) && Object.hasOwn(catalogs[name], alias) ? catalogs[name][alias].version : undefined
    const ref = importer.dependencies?.[alias] ?? importer.devDependencies?.[alias] ?? importer.optionalDependencies?.[alias]
    if (entry == null || ref == null) continue
    const version = withoutSuffix(ref)
    // Not a version at all (a link, a tarball, an alias): pnpm does not compare it.
    if (!isSemver(version) && !/^[\s=v]*\d/.test(version)) continue
    if (version !== entry) return `${alias} is locked at ${version}, its ${name} catalog entry at ${entry}`
  }
  return undefined
}

/** pnpm tests each catalog field of the workspace file as JS does: a falsy one is left as it is. */
const truthy = (value: unknown): boolean => Boolean(value)

/** Each package name's specifiers in `manifests`' dependencies of every kind, peers too. */
function referencesOf (manifests: Array<Record<string, unknown>>): Map<string, Set<string>> {
  const references = new Map<string, Set<string>>()
  const add = (name: string, specifier: unknown): void => {
    if (!references.has(name)) references.set(name, new Set())
    references.get(name)!.add(String(specifier))
  }
  for (const manifest of manifests) {
    for (const group of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies']) {
      for (const [name, specifier] of Object.entries(isMapping(manifest[group]) ? manifest[group] : {})) add(name, specifier)
    }
  }
  return references
}

/**
 * Whether pnpm, with `cleanupUnusedCatalogs`, would rewrite the workspace file `workspace` (as
 * read) after this install: it removes the entries of its `catalog` that no manifest takes as
 * `catalog:`, the entries of each of its `catalogs` taken neither as `catalog:<name>` nor as
 * `catalog:`, and catalogs left empty; entries the lockfile's `catalogs` records count as
 * taken. Catalog references in the overrides are not counted: pnpm may keep more than this
 * says, never less (then the install is left to pnpm for nothing, which is safe).
 */
export function catalogsPnpmPrunes (workspace: unknown, manifests: Array<Record<string, unknown>>, locked: unknown): boolean {
  if (!isMapping(workspace) || manifests.length === 0) return false
  const references = referencesOf(manifests)
  for (const [name, catalog] of Object.entries((lockedCatalogsShapeError(locked) == null ? locked ?? {} : {}) as LockedCatalogs)) {
    for (const alias of Object.keys(catalog)) {
      if (!references.has(alias)) references.set(alias, new Set())
      references.get(alias)!.add(name === 'default' ? 'catalog:' : `catalog:${name}`)
    }
  }
  const taken = (alias: string, as: string[]): boolean => as.some((specifier) => references.get(alias)?.has(specifier) === true)
  const { catalog, catalogs } = workspace
  if (truthy(catalog)) {
    if (!isMapping(catalog)) return true
    if (Object.keys(catalog).length === 0 || Object.keys(catalog).some((alias) => !taken(alias, ['catalog:']))) return true
  }
  if (truthy(catalogs)) {
    if (!isMapping(catalogs) || Object.keys(catalogs).length === 0) return true
    for (const [name, named] of Object.entries(catalogs)) {
      if (!truthy(named)) continue
      if (!isMapping(named) || Object.keys(named).length === 0) return true
      if (Object.keys(named).some((alias) => !taken(alias, [`catalog:${name}`, 'catalog:']))) return true
    }
  }
  return false
}

/**
 * Why pnpm would rewrite `pnpm-workspace.yaml` after this install, with `cleanupUnusedCatalogs`
 * (`catalogsPnpmPrunes`), which the native install does not do (`undefined`: it would not, or
 * the setting is off).
 */
export function workspaceCatalogsPruned (config: { catalogPrune?: unknown, cleanupUnusedCatalogs?: unknown, workspaceDir?: string }, manifests: Array<Record<string, unknown>>, locked: unknown): string | undefined {
  if ((config.catalogPrune ?? config.cleanupUnusedCatalogs) !== true || config.workspaceDir == null) return undefined
  let text: string
  try {
    text = fs.readFileSync(path.join(config.workspaceDir, 'pnpm-workspace.yaml'), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const read = loadYaml(text)
  if ('unread' in read) return `pnpm-workspace.yaml ${read.unread}`
  return catalogsPnpmPrunes(read.value, manifests, locked) ? 'cleanupUnusedCatalogs: pnpm removes catalog entries no project uses from pnpm-workspace.yaml' : undefined
}
