/**
 * What pnpm 11.28 checks before a frozen install, as far as the plugin must know it before it
 * writes anything: a lockfile that pnpm then refuses (`ERR_PNPM_OUTDATED_LOCKFILE`,
 * `ERR_PNPM_LOCKFILE_CONFIG_MISMATCH`, catalogs among them: `catalogs.ts`) must find `node_modules` as stock leaves it. The checks
 * are conservative: where they cannot tell, they say "out of date", and the plugin leaves the
 * install to pnpm (which then installs, or refuses in its own words).
 */
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { DEPENDENCY_GROUPS } from './virtual-store.js'
import { hashObject } from './lockfile-hash.js'
import { catalogOf, catalogResolutionStale, catalogsOutOfDate, type ConfiguredCatalogs } from './catalogs.js'
import { isRange, rangesIntersect, satisfiesLoosely, satisfiesStrictly } from './semver-range.js'
import { withoutIgnoredOptionals } from './ignored-optionals.js'
import type { FrozenCheckRules } from './pnpm-releases.js'

type Deps = Record<string, string>

/** An importer of pnpm's in-memory lockfile, as far as pnpm's manifest check reads it. */
export interface LockedImporter {
  specifiers?: Deps
  dependencies?: Deps
  devDependencies?: Deps
  optionalDependencies?: Deps
  dependenciesMeta?: unknown
  publishDirectory?: string
  linkDirectory?: boolean
}

const isDeps = (value: unknown): value is Deps => value != null && typeof value === 'object'
const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {})

/** `importerOutOfDate` as a release's frozen check has it (`rules`: the catalogs' and the publish directory's checks). */
export function importerOutOfDateUnder (rules: FrozenCheckRules, importer: LockedImporter | undefined, manifest: Record<string, unknown>, autoInstallPeers: boolean, lockedCatalogs: unknown): string | undefined {
  return importerOutOfDate(importer, manifest, autoInstallPeers, rules.catalogResolutions ? lockedCatalogs : undefined, rules.publishLinks)
}

/**
 * Why pnpm's frozen install would find `importer` out of date with `manifest` (`undefined`: it
 * would not). pnpm's rule (`satisfiesPackageManifest`): the lockfile's specifiers are exactly the
 * manifest's dependencies of every group (with `autoInstallPeers`, its peers too), and its
 * `publishDirectory` (and whether it is linked, unless `linkDirectory` is false: releases before
 * 11.26.0) and `dependenciesMeta` are the manifest's; then its `catalog:` dependencies are locked
 * at their entries in the lockfile's `catalogs` (`lockedCatalogs`, when given). Specifiers pnpm
 * takes as equal though written differently (git URLs) count as different here.
 */
export function importerOutOfDate (importer: LockedImporter | undefined, manifest: Record<string, unknown>, autoInstallPeers: boolean, lockedCatalogs?: unknown, linkDirectory = true): string | undefined {
  if (importer == null) return 'no importer in the lockfile'
  const wanted: Deps = {}
  if (autoInstallPeers && isDeps(manifest.peerDependencies)) Object.assign(wanted, manifest.peerDependencies)
  for (const group of ['devDependencies', 'dependencies', 'optionalDependencies'] as const) {
    const deps = manifest[group]
    if (deps != null && !isDeps(deps)) return `package.json's ${group} is not an object`
    Object.assign(wanted, deps)
  }
  const specifiers = importer.specifiers ?? {}
  const names = new Set([...Object.keys(wanted), ...Object.keys(specifiers)])
  for (const name of names) {
    if (specifiers[name] !== wanted[name]) return `${name}: package.json wants ${JSON.stringify(wanted[name])}, the lockfile has ${JSON.stringify(specifiers[name])}`
  }
  const publishConfig = (manifest.publishConfig ?? {}) as { directory?: unknown, linkDirectory?: unknown }
  if (importer.publishDirectory !== publishConfig.directory) return 'publishConfig.directory differs from the lockfile'
  // From 11.26.0 pnpm also compares whether the publish directory is linked (`linkDirectory`:
  // lockfiles of older releases lack `linkDirectory: false`, and are refused then).
  if (linkDirectory && (importer.publishDirectory != null && importer.linkDirectory !== false) !== (publishConfig.directory != null && publishConfig.linkDirectory !== false)) {
    return 'publishConfig.linkDirectory differs from the lockfile'
  }
  if (!sameJson(importer.dependenciesMeta, manifest.dependenciesMeta)) return 'dependenciesMeta differs from the lockfile'
  // Each dependency locked in the group pnpm links it from: optional over prod over dev, and
  // auto-installed peers as prod.
  const groupOf = new Map<string, string>()
  if (autoInstallPeers && isDeps(manifest.peerDependencies)) for (const name of Object.keys(manifest.peerDependencies)) groupOf.set(name, 'dependencies')
  for (const group of ['devDependencies', 'dependencies', 'optionalDependencies'] as const) {
    for (const name of Object.keys((manifest[group] ?? {}) as Deps)) groupOf.set(name, group)
  }
  for (const [name, group] of groupOf) {
    if (importer[group as typeof DEPENDENCY_GROUPS[number]]?.[name] == null) return `${name} is not locked in ${group}`
  }
  for (const group of DEPENDENCY_GROUPS) {
    for (const name of Object.keys(importer[group] ?? {})) if (groupOf.get(name) !== group) return `${name} is locked in ${group}, not where package.json has it`
  }
  return catalogResolutionStale(importer, lockedCatalogs)
}

/** One entry of the `overrides` setting, read as pnpm reads it (`parseOverrides`). */
export interface Override {
  /** The key as written, trimmed: the lockfile's `overrides` records the value under it. */
  selector: string
  name: string
  /** The versions it applies to (`undefined`: all). */
  range?: string
  /** `parent>name`: only in the dependencies of the package (or project) of this name and range. */
  parent?: { name: string, range?: string }
  /** The specifier it puts in place, a catalog's entry for `catalog:` (`-`: the dependency removed). */
  value: string
}

/** Package names of the plain form (a subset of those pnpm takes: anything else is left to pnpm). */
const PLAIN_NAME = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/

/** `name` or `name@range` of a selector, as pnpm splits it (the first `@` after the first character). */
function splitSelector (text: string): { name: string, range?: string } {
  const at = text.indexOf('@', 1)
  return at === -1 ? { name: text, range: undefined } : { name: text.slice(0, at), range: text.slice(at + 1) }
}

/** `splitSelector` of an overrides key's part, if its name is of the plain form. */
function selectorPart (part: string): { name: string, range?: string } | undefined {
  const selector = splitSelector(part.trim())
  return PLAIN_NAME.test(selector.name) ? selector : undefined
}

/**
 * The `overrides` setting as pnpm reads it before an install, or why this does not reproduce it.
 * pnpm splits a key at its first `>` that follows neither a space, `|` nor `@` (`parent>name`),
 * and takes a `catalog:` value from that catalog's entry for the overridden name (an entry
 * missing, itself `catalog:`, or `link:`/`file:`: pnpm refuses, `ERR_PNPM_CATALOG_IN_OVERRIDES`).
 * `$name` references arrive already replaced (pnpm reads them from the root package.json with
 * its settings). Keys whose range is empty (`name@`: pnpm's convergence overrides, which also
 * rewrite matching ranges) are left to pnpm, as are names of other forms.
 */
export function parseOverrides (overrides: Record<string, unknown> | undefined, catalogs: ConfiguredCatalogs | undefined): Override[] | string {
  const parsed: Override[] = []
  for (const [key, raw] of Object.entries(overrides ?? {})) {
    if (typeof raw !== 'string') return `the override ${JSON.stringify(key)} is not a string`
    const selector = key.trim()
    const split = selector.search(/[^ |@]>/)
    const parent = split === -1 ? undefined : selectorPart(selector.slice(0, split + 1))
    const target = selectorPart(split === -1 ? selector : selector.slice(split + 2))
    if (target == null || (split !== -1 && parent == null)) return `the override ${JSON.stringify(key)}: a selector this does not read`
    if (target.range === '' || parent?.range === '') return `the override ${JSON.stringify(key)}: a convergence override (an empty range)`
    let value = raw
    const catalog = catalogOf(raw)
    if (catalog != null) {
      const entry = Object.hasOwn(catalogs ?? {}, catalog) && Object.hasOwn(catalogs![catalog] ?? {}, target.name) ? catalogs![catalog]![target.name] : undefined
      if (typeof entry !== 'string' || catalogOf(entry) != null || /^(link|file):/.test(entry)) return `the override ${JSON.stringify(key)}: no usable ${catalog} catalog entry for ${target.name} (pnpm refuses: ERR_PNPM_CATALOG_IN_OVERRIDES)`
      value = entry
    }
    parsed.push({ selector, name: target.name, range: target.range, parent, value })
  }
  return parsed
}

/** pnpm's test of an override's range against a specifier: no range, the same text, or two semver ranges that intersect. */
function rangeMatches (range: string | undefined, specifier: string): boolean {
  return range == null || range === specifier || (isRange(specifier) && isRange(range) && rangesIntersect(specifier, range))
}

/**
 * An override's value for the project in `projectDir`: a local path (`file:`, `link:`,
 * `workspace:./…`, or a bare `./…`, `/…`, `~/…`) is written relative to the workspace root and
 * pnpm rewrites it relative to each project (POSIX paths: the native install is not on Windows).
 */
function localizedValue (value: string, rootDir: string, projectDir: string): string {
  const protocol = /^(file:|link:|workspace:(?=\.))/.exec(value)?.[1] ?? (/^(?:[./]|~\/)/.test(value) ? '' : undefined)
  if (protocol == null) return value
  const target = value.slice(protocol.length)
  const relative = path.isAbsolute(target) || target.startsWith('~/') ? target : path.relative(projectDir, path.join(rootDir, target)) || '.'
  if (protocol === '') return /^(?:[./]|~\/)/.test(relative) ? relative : `./${relative}`
  return protocol === 'workspace:' && !relative.startsWith('.') ? `${protocol}./${relative}` : `${protocol}${relative}`
}

/** A specifier pnpm keeps among the peers when an override rewrites one (else it becomes a dependency). */
const isPeerRange = (specifier: string): boolean =>
  isRange(specifier) || specifier.includes('workspace:') || specifier.includes('catalog:')

/**
 * `manifest` (a project's package.json) as pnpm's frozen check reads it: pnpm passes every
 * project's manifest through its `readPackage` hooks before it compares it with the lockfile,
 * the overrides among them (`createVersionsOverrider`), so an importer records the overridden
 * specifiers. In each group (dependencies, optional, dev, then the peers), a dependency takes
 * the value of the override for its name whose range its specifier meets (`parent>name` ones
 * first, when the project is that parent); an overridden peer stays a peer when the value is a
 * range, else the value becomes a dependency; `-` removes the dependency or peer; a local path
 * is made relative to the project (`localizedValue`). Or why this does not tell: several
 * overrides with different values apply to one dependency (pnpm picks by an order of its own).
 */
export function overriddenManifest (manifest: Record<string, unknown>, overrides: Override[], rootDir: string, projectDir: string): Record<string, unknown> | string {
  if (overrides.length === 0) return manifest
  const own = overrides.filter((o) => o.parent != null && o.parent.name === manifest.name &&
    (o.parent.range == null || (typeof manifest.version === 'string' && satisfiesStrictly(manifest.version, o.parent.range))))
  const generic = overrides.filter((o) => o.parent == null)
  const pick = (name: string, specifier: string): Override | string | undefined => {
    const matches = (o: Override): boolean => o.name === name && rangeMatches(o.range, specifier)
    const found = own.some(matches) ? own.filter(matches) : generic.filter(matches)
    if (found.length === 0) return undefined
    if (found.some((o) => o.value !== found[0].value)) return `overrides ${found.map((o) => JSON.stringify(o.selector)).join(', ')} all apply to ${name}`
    return { ...found[0], value: localizedValue(found[0].value, rootDir, projectDir) }
  }
  const result: Record<string, unknown> = { ...manifest }
  for (const group of ['dependencies', 'optionalDependencies', 'devDependencies', 'peerDependencies']) {
    if (result[group] != null) result[group] = { ...(result[group] as Deps) }
  }
  for (const group of ['dependencies', 'optionalDependencies', 'devDependencies'] as const) {
    const deps = result[group] as Deps | undefined
    for (const [name, specifier] of Object.entries(deps ?? {})) {
      const override = pick(name, specifier)
      if (typeof override === 'string') return override
      if (override == null) continue
      if (override.value === '-') delete deps![name]
      else deps![name] = override.value
    }
  }
  const peers = result.peerDependencies as Deps | undefined
  for (const [name, specifier] of Object.entries(peers ?? {})) {
    const override = pick(name, specifier)
    if (typeof override === 'string') return override
    if (override == null) continue
    if (override.value === '-') delete peers![name]
    else if (isPeerRange(override.value)) peers![name] = override.value
    else result.dependencies = { ...(result.dependencies as Deps | undefined), [name]: override.value }
  }
  return result
}

/** The lockfile's `overrides` as pnpm writes them for `overrides`: each trimmed key's value, catalogs resolved. */
export function lockedOverrides (overrides: Override[]): Record<string, string> {
  return Object.fromEntries(overrides.map((o) => [o.selector, o.value]))
}

/** Two string maps with the same entries, in any order (pnpm compares the overrides so). */
function sameEntries (a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k])
}

/**
 * A project's `manifest` as pnpm's frozen check reads it: through pnpm's read-package hooks, the
 * overrides (`overriddenManifest`) and after them the remover of `ignoredOptionalDependencies`
 * (`withoutIgnoredOptionals`); or why this does not tell.
 */
export function hookedManifest (manifest: Record<string, unknown>, overrides: Override[], ignoredOptionals: string[] | undefined, rootDir: string, projectDir: string): Record<string, unknown> | string {
  const overridden = overriddenManifest(manifest, overrides, rootDir, projectDir)
  return typeof overridden === 'string' ? overridden : withoutIgnoredOptionals(overridden, ignoredOptionals)
}

/** The settings these checks read (from `hooks.updateConfig`). */
export interface FrozenCheckConfig {
  autoInstallPeers?: boolean
  excludeLinksFromLockfile?: boolean
  dedupePeers?: boolean
  peersSuffixMaxLength?: number
  injectWorkspacePackages?: boolean
  ignoredOptionalDependencies?: string[]
  overrides?: Record<string, string>
  packageExtensions?: Record<string, unknown>
  patchedDependencies?: Record<string, string>
  pnpmfile?: string[]
  globalPnpmfile?: string
  catalogs?: ConfiguredCatalogs
}

/** The settings a lockfile records under `settings`. */
export interface LockedSettings {
  autoInstallPeers?: boolean
  excludeLinksFromLockfile?: boolean
  dedupePeers?: boolean
  peersSuffixMaxLength?: number
  injectWorkspacePackages?: boolean
}

/** The lockfile fields these checks read. */
export interface LockfileSettings {
  settings?: LockedSettings
  overrides?: Record<string, string>
  pnpmfileChecksum?: string
  catalogs?: unknown
  packageExtensionsChecksum?: unknown
  ignoredOptionalDependencies?: unknown
  patchedDependencies?: unknown
}

/** pnpm's `peersSuffixMaxLength` when none is set (a lockfile leaves it out then). */
const DEFAULT_PEERS_SUFFIX_MAX_LENGTH = 1000

/** pnpm's `pnpmfileChecksum` for the pnpmfiles it loaded (all but a global one), when any exports hooks (ours does). */
function pnpmfileChecksum (config: FrozenCheckConfig, rootDir: string): string | undefined {
  const global = config.globalPnpmfile != null ? path.resolve(rootDir, config.globalPnpmfile) : undefined
  const files = (config.pnpmfile ?? []).filter((f) => f !== global).sort()
  if (files.length === 0) return undefined
  const hash = (text: string): string => `sha256-${createHash('sha256').update(text).digest('base64')}`
  const hashes = files.map((f) => hash(fs.readFileSync(f, 'utf8').split('\r\n').join('\n')))
  return hashes.length === 1 ? hashes[0] : hash(hashes.join(','))
}

const isEmpty = (value: unknown): boolean => value == null || (typeof value === 'object' && Object.keys(value).length === 0)

/**
 * The lockfile's `packageExtensionsChecksum` for these extensions, as pnpm records it
 * (`hashObjectNullableWithPrefix`: none for none, else `sha256-` and its sorted object hash).
 */
export function packageExtensionsChecksum (extensions: Record<string, unknown> | undefined): string | undefined {
  return isEmpty(extensions) ? undefined : `sha256-${hashObject(extensions)}`
}

/**
 * The workspace project a package extension names, if any (a selector is `name` or
 * `name@range`). pnpm's read-package hook extends any manifest of that name, a project's too,
 * which its checks of linked projects read (11.28's `hookedManifests`): not modelled here.
 */
export function extendedProject (extensions: Record<string, unknown> | undefined, manifests: Array<Record<string, unknown>>): string | undefined {
  const names = new Set(Object.keys(extensions ?? {}).map((selector) => splitSelector(selector).name))
  return manifests.map((m) => m.name).find((name): name is string => typeof name === 'string' && names.has(name))
}

/**
 * Why the lockfile was written under other settings than today's (`undefined`: the same, as far
 * as this tells), which a frozen install refuses (`ERR_PNPM_LOCKFILE_CONFIG_MISMATCH`) and a
 * plain one resolves again: pnpm's list of lockfile settings (`getOutdatedLockfileSettings`),
 * the catalogs first; the overrides as pnpm records them (`lockedOverrides`); the package
 * extensions by their checksum. Patches are only compared for being there at all here
 * (`patches.ts` compares their hashes).
 */
export function lockfileConfigMismatch (lockfile: LockfileSettings, config: FrozenCheckConfig, rootDir: string): string | undefined {
  const catalogs = catalogsOutOfDate(config.catalogs, lockfile.catalogs)
  if (catalogs != null) return catalogs
  if ((lockfile.settings?.autoInstallPeers ?? true) !== (config.autoInstallPeers ?? true) ||
    (lockfile.settings?.excludeLinksFromLockfile ?? false) !== (config.excludeLinksFromLockfile ?? false)) {
    return 'the lockfile was written with other settings'
  }
  const overrides = parseOverrides(config.overrides, config.catalogs)
  if (typeof overrides === 'string') return overrides
  if (!sameEntries(lockfile.overrides ?? {}, lockedOverrides(overrides))) return 'overrides differ from the lockfile'
  if ((isEmpty(lockfile.packageExtensionsChecksum) ? undefined : lockfile.packageExtensionsChecksum) !== packageExtensionsChecksum(config.packageExtensions)) return 'packageExtensions differ from the lockfile'
  const sortedList = (value: unknown): string => JSON.stringify(Array.isArray(value) ? [...value].sort() : value ?? [])
  if (sortedList(lockfile.ignoredOptionalDependencies) !== sortedList(config.ignoredOptionalDependencies)) return 'ignoredOptionalDependencies differ from the lockfile'
  if (isEmpty(lockfile.patchedDependencies) !== isEmpty(config.patchedDependencies)) return 'patchedDependencies differ from the lockfile'
  if (lockfile.pnpmfileChecksum !== pnpmfileChecksum(config, rootDir)) return 'the pnpmfiles changed since the lockfile was written (run `pnpm install` once and commit the lockfile)'
  const settings = lockfile.settings ?? {}
  if (Boolean(settings.dedupePeers) !== Boolean(config.dedupePeers) ||
    (settings.peersSuffixMaxLength ?? DEFAULT_PEERS_SUFFIX_MAX_LENGTH) !== config.peersSuffixMaxLength ||
    Boolean(settings.injectWorkspacePackages) !== Boolean(config.injectWorkspacePackages)) {
    return 'the lockfile was written with other settings'
  }
  return undefined
}

/**
 * Why a plain `pnpm install` that takes its frozen path would still record another `settings`
 * than the lockfile's (`undefined`: the same): before it installs, pnpm puts today's settings
 * into the lockfile it holds, which its current lockfile (`node_modules/.pnpm/lock.yaml`) is
 * written from, the defaults left out. The native install copies the lockfile's own text.
 */
export function lockedSettingsRewritten (settings: unknown, config: FrozenCheckConfig): string | undefined {
  const today: LockedSettings = {
    autoInstallPeers: config.autoInstallPeers ?? true,
    dedupePeers: config.dedupePeers === true ? true : undefined,
    excludeLinksFromLockfile: config.excludeLinksFromLockfile ?? false,
    peersSuffixMaxLength: config.peersSuffixMaxLength !== DEFAULT_PEERS_SUFFIX_MAX_LENGTH ? config.peersSuffixMaxLength : undefined,
    injectWorkspacePackages: config.injectWorkspacePackages === true ? true : undefined,
  }
  return JSON.stringify(settings) === JSON.stringify(today) ? undefined : 'pnpm records the lockfile\'s settings otherwise (their order or their defaults)'
}

/** A project of the workspace, as the check of its links reads it. */
export interface LinkedProject {
  id: string
  dir: string
  manifest: Record<string, unknown> & { name?: string, version?: string }
}

/**
 * Why a plain `pnpm install` would not find the workspace's links up to date (`undefined`: it
 * would), as far as this tells: pnpm's check (`linkedPackagesAreUpToDate`) also asks, for every
 * dependency an importer locks, whether it is still linked as its range says. Read here only in
 * its plain forms: a `link:` dependency whose specifier is `workspace:<range>` (an empty one too,
 * which semver reads as `*` but for prereleases, as pnpm's check does), to the project of that
 * name, whose version meets the range (loosely, as pnpm reads it); a `link:` dependency whose
 * specifier is a plain version or range (which `linkWorkspacePackages` linked), which pnpm takes
 * as it is without that setting and else checks as the first against the project linked; a
 * registry dependency whose name (or `npm:` alias's) no project has. Anything else (paths,
 * `workspace:name@range` aliases, tags, a dependency named like a project) counts as out of
 * date: pnpm then decides (`checkWorkspaceLink`).
 */
export function linkedProjectsOutOfDate (importers: Record<string, LockedImporter>, projects: LinkedProject[], linkWorkspacePackages: boolean): string | undefined {
  const byName = new Map(projects.flatMap((p) => typeof p.manifest.name === 'string' ? [[p.manifest.name, p]] : []))
  for (const { id, dir, manifest } of projects) {
    const importer = importers[id]
    for (const group of DEPENDENCY_GROUPS) {
      const wanted = (manifest[group] ?? {}) as Deps
      for (const [alias, ref] of Object.entries(importer?.[group] ?? {})) {
        const spec = wanted[alias]
        if (spec == null) continue
        if (ref.startsWith('link:')) {
          const linked = path.resolve(dir, ref.slice('link:'.length))
          const workspaceRange = /^workspace:([^@./\\~][^@]*|~|)$/.exec(spec)?.[1]
          const plainRange = workspaceRange == null && isRange(spec) ? spec : undefined
          if (plainRange != null && !linkWorkspacePackages) continue
          const range = workspaceRange ?? plainRange
          const target = workspaceRange != null ? byName.get(alias) : projects.find((p) => p.dir === linked)
          if (range == null || target == null || target.dir !== linked) return `${id}'s ${alias}: a link pnpm's plain install checks its own way`
          if (!satisfiesLoosely(target.manifest.version, range)) return `${id}'s ${alias}: the linked project's version ${String(target.manifest.version)} does not meet ${spec}`
          continue
        }
        const name = spec.startsWith('npm:') ? spec.slice(4, spec.lastIndexOf('@') > 4 ? spec.lastIndexOf('@') : undefined) : alias
        if (/^(workspace|link|file):/.test(spec) || byName.has(name)) return `${id}'s ${alias}: a dependency a project of the workspace may take`
      }
    }
  }
  return undefined
}
