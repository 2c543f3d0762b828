/**
 * `pnpm-lock.yaml` read from disk, for the native install: it runs in `hooks.updateConfig`,
 * before pnpm has read the lockfile. The file holds pnpm's lockfile v9, where a package's
 * metadata (`packages`, keyed `name@version`) and its place in the graph (`snapshots`, keyed by
 * dependency path, with peers) are separate; pnpm merges them in memory, and so does this.
 */
import fs from 'node:fs'
import path from 'node:path'
import * as binding from '../index.js'
import { pnpmErrorOf } from './errors.js'
import type { DependencyGroup, LockfileObject, PackageSnapshot } from './virtual-store.js'

/** The parts of a lockfile file the native install reads, besides the merged graph. */
export interface LockfileFile extends LockfileObject {
  importers: Record<string, Partial<Record<'specifiers' | DependencyGroup, Record<string, string>>>>
  lockfileVersion?: unknown
  settings?: Record<string, unknown>
  pnpmfileChecksum?: string
  /** Every other top-level field, by name (overrides, catalogs, patchedDependencies, …). */
  [field: string]: unknown
}

/** `pnpm-lock.yaml`'s own document: with config dependencies theirs comes first, after `---`. */
function mainLockfileDocument (text: string): string {
  if (!text.startsWith('---\n')) return text
  const end = text.indexOf('\n---\n', 3)
  return end === -1 ? text : text.slice(end + 5)
}

/**
 * The project's lockfile (its own document, after any config dependencies' one) and that
 * document's text, or `undefined` when there is none.
 */
export function readLockfileFile (lockfileDir: string): { lockfile: LockfileFile, text: string } | undefined {
  let text: string
  try {
    text = fs.readFileSync(path.join(lockfileDir, 'pnpm-lock.yaml'), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  const main = mainLockfileDocument(text)
  const parsed = binding.parseYamlDocuments(main)
  if (parsed.error != null) throw pnpmErrorOf(parsed.error, `pnpm-lock.yaml: ${parsed.error.message}`)
  const doc = parsed.documents?.[0]
  if (doc == null || typeof doc !== 'object') return undefined
  const { packages, snapshots, ...rest } = doc as Record<string, unknown> & {
    packages?: Record<string, PackageSnapshot>
    snapshots?: Record<string, PackageSnapshot>
  }
  const merged: Record<string, PackageSnapshot> = {}
  for (const [depPath, snapshot] of Object.entries(snapshots ?? {})) {
    const paren = depPath.indexOf('(')
    const id = paren === -1 ? depPath : depPath.slice(0, paren)
    merged[depPath] = { ...packages?.[id], ...snapshot }
  }
  // Importers as pnpm holds them in memory: `specifiers`, and each group alias → version.
  const importers: LockfileFile['importers'] = {}
  for (const [id, importer] of Object.entries((rest.importers ?? {}) as Record<string, Record<string, Record<string, { specifier: string, version: string }>>>)) {
    const specifiers: Record<string, string> = {}
    const snapshot: Record<string, Record<string, string>> = { specifiers }
    for (const [group, deps] of Object.entries(importer)) {
      snapshot[group] = {}
      for (const [alias, { specifier, version }] of Object.entries(deps)) {
        specifiers[alias] = specifier
        snapshot[group][alias] = version
      }
    }
    importers[id] = snapshot
  }
  return { lockfile: { ...rest, importers, packages: merged }, text: main }
}
