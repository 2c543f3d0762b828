/**
 * `pnpm-lock.yaml` read from disk, for the native install: it runs in `hooks.updateConfig`,
 * before pnpm has read the lockfile. It is read as pnpm 11 reads it (its lockfile file reader
 * and its conversion from the file format): the project's own document (after any config
 * dependencies' one), one YAML document read with js-yaml's semantics (`parseYaml`), and each
 * snapshot merged with its package's metadata, the `packages` entry winning every field it has.
 * Anything it does not read exactly as pnpm does, or that pnpm reports as broken, is left to
 * pnpm with the reason, untouched.
 */
import fs from 'node:fs'
import path from 'node:path'
import * as binding from '../../../index.js'
import type { DependencyGroup, LockfileObject, PackageSnapshot } from './virtual-store.js'
import { DEPENDENCY_GROUPS } from './virtual-store.js'

/** The parts of a lockfile file the native install reads, besides the merged graph. */
export interface LockfileFile extends LockfileObject {
  importers: Record<string, LockfileImporter>
  lockfileVersion?: unknown
  settings?: Record<string, unknown>
  pnpmfileChecksum?: string
  /** Every other top-level field, by name (overrides, catalogs, patchedDependencies, …). */
  [field: string]: unknown
}

/**
 * An importer as pnpm holds it: `specifiers`, each group alias → version, and where a project
 * publishes from (`publishConfig.directory`; `linkDirectory: false` when it is not linked in the
 * project's place), kept as the file has them.
 */
export type LockfileImporter = Partial<Record<'specifiers' | DependencyGroup, Record<string, string>>> & { publishDirectory?: string, linkDirectory?: boolean }

/** The importer fields besides the groups, and the type of value read (others are left to pnpm). */
const PUBLISH_FIELDS: Record<'publishDirectory' | 'linkDirectory', { type: string, is: (value: unknown) => boolean }> = {
  publishDirectory: { type: 'string', is: (value) => typeof value === 'string' },
  linkDirectory: { type: 'boolean', is: (value) => typeof value === 'boolean' },
}

/**
 * The current lockfile (`node_modules/.pnpm/lock.yaml`) pnpm writes after installing all of the
 * main document `text`: `text` itself, but that before 11.28.0 (`keepsPublishFields` false) its
 * filter of the importers drops their publish directory fields (`publishDirectory`,
 * `linkDirectory`: an importer's fields are the lines four spaces in), an importer left without
 * fields written `{}`.
 */
export function currentLockfileText (text: string, keepsPublishFields: boolean): string {
  const start = text.indexOf('\nimporters:\n')
  if (keepsPublishFields || start === -1) return text
  const next = text.slice(start + 1).search(/\n\S/)
  const end = next === -1 ? text.length : start + 1 + next
  const importers = text.slice(start, end).replace(/^ {4}(?:publishDirectory|linkDirectory): .*\n/gm, '')
    // An importer left with no field is written as an empty mapping.
    .replace(/^( {2}\S.*):\n(?! {4})/gm, '$1: {}\n')
  return text.slice(0, start) + importers + text.slice(end)
}

/**
 * pnpm's main document of the file: with config dependencies the file starts with their
 * document (`---\n`) and the project's follows the next `\n---\n`; none following means no
 * lockfile. Line ends are read as `\n`.
 */
export function mainLockfileDocument (text: string): string {
  const content = text.replace(/\r\n/g, '\n')
  if (!content.startsWith('---\n')) return content
  const separator = content.indexOf('\n---\n', 4)
  return separator === -1 ? '' : content.slice(separator + 5)
}

/** The one YAML document of `text` as js-yaml's `load` gives it, or why it is not read here. */
export function loadYaml (text: string): { value: unknown } | { unread: string } {
  const { json, error } = binding.parseYaml(text)
  if (error != null) {
    const why = error.code === 'ERR_CAS_NATIVE_YAML_SYNTAX'
      ? 'is not valid YAML (left to pnpm)'
      : error.code === 'ERR_CAS_NATIVE_YAML_LIMIT' ? 'is beyond the bounds of this reader' : 'has YAML this does not read as pnpm does'
    return { unread: `${why}: ${error.message}` }
  }
  return { value: json == null ? undefined : JSON.parse(json) }
}

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
const isStringMap = (value: unknown): value is Record<string, string> =>
  isMapping(value) && Object.values(value).every((v) => typeof v === 'string')
const isStringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((v) => typeof v === 'string')

/**
 * A platform field: a list, or one string as its package.json has it. A list may hold nulls
 * (oxc-parser 0.8's bindings declare `"libc": [null]`, which pnpm writes as it is): pnpm's
 * check reads only the strings (`checkList`), so such a list names nothing.
 */
const isPlatformList = (value: unknown): value is Array<string | null> | string =>
  typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string' || v === null))

/** The type each field of a package or snapshot this reads must have, when present. */
const SNAPSHOT_FIELDS: Record<string, (value: unknown) => boolean> = {
  resolution: isMapping,
  version: (v) => typeof v === 'string',
  dependencies: isStringMap,
  optionalDependencies: isStringMap,
  peerDependencies: isStringMap,
  peerDependenciesMeta: (v) => isMapping(v) && Object.values(v).every(isMapping),
  engines: isStringMap,
  os: isPlatformList,
  cpu: isPlatformList,
  libc: isPlatformList,
  hasBin: (v) => typeof v === 'boolean',
  optional: (v) => typeof v === 'boolean',
  patched: (v) => typeof v === 'boolean',
  bundledDependencies: (v) => typeof v === 'boolean' || isStringList(v),
}

/** What is wrong with a `packages` or `snapshots` entry (`undefined`: nothing). */
function snapshotShapeError (entry: unknown): string | undefined {
  if (!isMapping(entry)) return 'is not a mapping'
  const field = Object.keys(SNAPSHOT_FIELDS).find((f) => entry[f] != null && !SNAPSHOT_FIELDS[f](entry[f]))
  return field == null ? undefined : `has a ${field} this does not read`
}

/** pnpm's package id of a dependency path: without its trailing `(…)` groups (peers, patch hash). */
function packageIdOf (depPath: string): string {
  if (!depPath.endsWith(')')) return depPath
  let open = 1
  for (let i = depPath.length - 2; i >= 0; i--) {
    if (depPath[i] === '(') open--
    else if (depPath[i] === ')') open++
    else if (open === 0) return depPath.slice(0, i + 1)
  }
  return depPath
}

/**
 * pnpm's in-memory packages: each snapshot with its package's fields over it (pnpm spreads the
 * `packages` entry last), or what is wrong with them.
 */
function mergePackages (packages: unknown, snapshots: unknown): Record<string, PackageSnapshot> | string {
  for (const [name, section] of [['packages', packages], ['snapshots', snapshots]] as const) {
    if (section == null) continue
    if (!isMapping(section)) return `${name} is not a mapping`
    for (const [key, entry] of Object.entries(section)) {
      const wrong = snapshotShapeError(entry)
      if (wrong != null) return `${name}[${JSON.stringify(key)}] ${wrong}`
    }
  }
  const metadata = (packages ?? {}) as Record<string, PackageSnapshot>
  const merged: Record<string, PackageSnapshot> = {}
  for (const [depPath, snapshot] of Object.entries((snapshots ?? {}) as Record<string, PackageSnapshot>)) {
    const id = packageIdOf(depPath)
    merged[depPath] = { ...snapshot, ...(Object.hasOwn(metadata, id) ? metadata[id] : undefined) }
  }
  return merged
}

/** Why the lockfile is left to pnpm when its content is not of the shape pnpm writes. */
const malformed = (what: string): string => `pnpm-lock.yaml is malformed (left to pnpm, which reads it its way or reports it): ${what}`

/**
 * Importers as pnpm holds them in memory: `specifiers`, each group alias → version, the publish
 * directory's fields; or why they are left to pnpm (other fields are not laid out here).
 */
function readImporters (importers: unknown): LockfileFile['importers'] | string {
  if (!isMapping(importers)) return malformed('importers is not a mapping')
  const read: LockfileFile['importers'] = {}
  for (const [id, importer] of Object.entries(importers)) {
    if (!isMapping(importer)) return malformed(`importers[${JSON.stringify(id)}] is not a mapping`)
    const other = Object.keys(importer).find((field) => !DEPENDENCY_GROUPS.includes(field as DependencyGroup) && !Object.hasOwn(PUBLISH_FIELDS, field))
    if (other != null) return `the lockfile's importer ${JSON.stringify(id)} has ${other}`
    const publish: Pick<LockfileImporter, keyof typeof PUBLISH_FIELDS> = {}
    for (const [field, { type, is }] of Object.entries(PUBLISH_FIELDS)) {
      if (!Object.hasOwn(importer, field)) continue
      if (!is(importer[field])) return malformed(`importers[${JSON.stringify(id)}].${field} is not a ${type}`)
      Object.assign(publish, { [field]: importer[field] })
    }
    const specifiers: Record<string, string> = {}
    const snapshot: Record<string, Record<string, string>> = { specifiers }
    for (const [group, deps] of Object.entries(importer)) {
      if (Object.hasOwn(PUBLISH_FIELDS, group)) continue
      if (!isMapping(deps) || !Object.values(deps).every((d) => isMapping(d) && typeof d.specifier === 'string' && typeof d.version === 'string')) {
        return malformed(`importers[${JSON.stringify(id)}].${group} is not a mapping of specifiers and versions`)
      }
      snapshot[group] = {}
      for (const [alias, { specifier, version }] of Object.entries(deps as Record<string, { specifier: string, version: string }>)) {
        specifiers[alias] = specifier
        snapshot[group][alias] = version
      }
    }
    read[id] = { ...snapshot, ...publish }
  }
  return read
}

/**
 * The project's lockfile and its document's text, or why it is left to pnpm: none (pnpm
 * decides what a missing lockfile means), one pnpm reports as broken, or one this does not
 * read as pnpm does.
 */
export function readLockfileFile (lockfileDir: string): { lockfile: LockfileFile, text: string } | string {
  let text: string
  try {
    text = fs.readFileSync(path.join(lockfileDir, 'pnpm-lock.yaml'), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'no lockfile'
    throw err
  }
  const main = mainLockfileDocument(text.replace(/^\uFEFF/, ''))
  if (main.trim() === '') return 'no lockfile'
  const loaded = loadYaml(main)
  if ('unread' in loaded) return `pnpm-lock.yaml ${loaded.unread}`
  if (!isMapping(loaded.value)) return malformed('its document is not a mapping')
  const { packages, snapshots, importers, ...rest } = loaded.value
  const merged = mergePackages(packages, snapshots)
  if (typeof merged === 'string') return malformed(merged)
  const read = readImporters(importers ?? {})
  if (typeof read === 'string') return read
  return { lockfile: { ...rest, importers: read, packages: merged }, text: main }
}
