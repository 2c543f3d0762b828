/**
 * Symlinks in side-effects entries (pnpm 11.28). When pnpm uploads a built package's side
 * effects it records a symlink as an entry with a symlink mode (`0o120000`) whose blob holds
 * the link's target text. On reading, pnpm turns such entries into a `symlinks` map next to
 * `added` (relative path → target) when every one of them can be restored safely, and drops the
 * whole side-effects entry otherwise (so the package is rebuilt). The importer then creates the
 * symlinks natively (`importPackage`/`linkPackages` place a diff's `symlinks` after the files).
 * The worker protocol's reads still build the `symlinks` maps here, around the native read.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { StoredSideEffectsDiff } from './read.js'

const S_IFMT = 0o170000
const S_IFLNK = 0o120000

export interface SideEffectsMapEntry {
  added?: Map<string, string>
  deleted?: string[]
  symlinks?: Map<string, string>
}

function plainName (segment: string): boolean {
  return segment !== '' && segment !== '.' && segment !== '..' && !segment.includes('\\') && !segment.includes('\0')
}

/**
 * The target as pnpm accepts it: a relative link path of plain names (not under `node_modules`,
 * not the root `package.json`), a relative target in normal form that stays inside the package
 * and does not go into a `node_modules`. `undefined` when not restorable.
 */
function restorableTarget (linkPath: string, target: string): string | undefined {
  const linkSegments = linkPath.split('/')
  if (!linkSegments.every(plainName) || linkSegments[0].toLowerCase() === 'node_modules') return undefined
  if (linkSegments.length === 1 && linkSegments[0].toLowerCase() === 'package.json') return undefined
  if (target === '' || target.startsWith('/') || target.includes('\\') || target.includes('\0') || path.win32.parse(target).root !== '') return undefined
  const segments = target.split('/').filter((s) => s !== '' && s !== '.')
  let up = 0
  while (up < segments.length && segments[up] === '..') up++
  const names = segments.slice(up)
  if (names.length === 0 || names.some((n) => n === '..' || n.toLowerCase() === 'node_modules')) return undefined
  if (up > linkSegments.length - 1) return undefined
  const normal = segments.join('/')
  return normal === target ? target : undefined
}

function readTarget (linkPath: string, blobPath: string): string | undefined {
  let target: string
  try {
    target = fs.readFileSync(blobPath, 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  return restorableTarget(linkPath, target)
}

/** Whether any restored path lies below one of the symlinks (it would write through it). */
function writesBelowASymlink (symlinks: Map<string, string>, restored: Iterable<string>): boolean {
  for (const p of restored) {
    for (let slash = p.lastIndexOf('/'); slash > 0; slash = p.lastIndexOf('/', slash - 1)) {
      if (symlinks.has(p.slice(0, slash))) return true
    }
  }
  return false
}

/**
 * Rewrites a read result's `sideEffectsMaps` (and `sideEffectsDiffs`) in place the way pnpm
 * 11.28 builds them: symlink-mode entries move from `added` to `symlinks`, and an entry whose
 * symlinks cannot all be restored is dropped.
 */
export function applySideEffectsSymlinks (files: {
  filesMap: Map<string, string>
  sideEffectsMaps?: Map<string, SideEffectsMapEntry>
  sideEffectsDiffs?: Map<string, StoredSideEffectsDiff>
}): void {
  const maps = files.sideEffectsMaps
  const diffs = files.sideEffectsDiffs
  if (maps == null || diffs == null) return
  for (const [cacheKey, entry] of maps) {
    // pnpm 11.28 builds every entry with files as `{ added, deleted }`, `deleted` possibly undefined.
    if (entry.added != null && !('deleted' in entry)) entry.deleted = undefined
    const stored = diffs.get(cacheKey)?.added
    if (stored == null || entry.added == null) continue
    const linkPaths = [...stored].filter(([, info]) => (info.mode & S_IFMT) === S_IFLNK).map(([p]) => p)
    if (linkPaths.length === 0) continue
    const symlinks = new Map<string, string>()
    let restorable = process.platform !== 'win32'
    for (const p of linkPaths) {
      const blob = entry.added.get(p)
      const target = restorable && blob != null ? readTarget(p, blob) : undefined
      if (target == null) {
        restorable = false
        break
      }
      symlinks.set(p, target)
    }
    if (restorable) {
      const added = new Map([...entry.added].filter(([p]) => !symlinks.has(p)))
      const deleted = new Set(entry.deleted ?? [])
      const restored = [...added.keys(), ...symlinks.keys(), ...[...files.filesMap.keys()].filter((p) => !deleted.has(p))]
      restorable = !writesBelowASymlink(symlinks, restored)
      if (restorable) {
        entry.added = added
        entry.symlinks = symlinks
      }
    }
    if (!restorable) {
      maps.delete(cacheKey)
      diffs.delete(cacheKey)
    }
  }
  if (maps.size === 0) {
    files.sideEffectsMaps = undefined
    files.sideEffectsDiffs = undefined
  }
}
