/**
 * The projects of a pnpm 11 workspace, found as pnpm finds them before an install
 * (`workspace/projects-reader/src/findPackages.ts`): the directories matching the
 * `packages` globs of `pnpm-workspace.yaml` (`workspacePackagePatterns`, `['.']` without any)
 * that hold a manifest, and always the workspace root; none inside a `node_modules` or
 * `bower_components` directory; sorted by directory in code-unit order.
 *
 * pnpm globs with tinyglobby; this reads the globs real workspaces write with a matcher of its
 * own: segments of literal text and `*` (any text but `/`), and `**` (any number of segments);
 * wildcards never match a name starting with a dot; `!` in front excludes. `@` and `+` are
 * literal text, as in picomatch unless an extglob's `(` follows (a scope's folder,
 * `packages/@biomejs/*`). Anything else in a pattern (braces, `?`, classes, extglobs), a symbolic
 * link to a directory met on the way (which tinyglobby follows), or a manifest other than
 * `package.json` leaves the install to pnpm.
 */
import fs from 'node:fs'
import path from 'node:path'

export type Manifest = Record<string, unknown> & { name?: string, version?: string }

export interface WorkspaceProject {
  /** The importer id: the directory relative to the workspace root, `/`-separated, `.` for the root. */
  id: string
  dir: string
  manifest: Manifest
}

const MANIFEST_FILES = ['package.json', 'package.json5', 'package.yaml']
/** Directories pnpm never looks into for projects. */
const IGNORED_DIRS = new Set(['node_modules', 'bower_components'])

/** A pattern's segments, or why it is not read here. */
type Segments = string[]

function parsePattern (pattern: string): Segments | string {
  const normalized = pattern.replace(/\/+$/, '').replace(/^\.\//, '')
  if (/[?[\]{}()!\\]/.test(normalized)) return `a workspace pattern this does not read (${pattern})`
  const segments = normalized === '.' || normalized === '' ? [] : normalized.split('/')
  if (segments.some((s) => s === '' || s === '.' || s === '..')) return `a workspace pattern this does not read (${pattern})`
  return segments
}

/** Whether one path segment matches one pattern segment (no `**`). */
function segmentMatches (name: string, pattern: string): boolean {
  if (!pattern.includes('*')) return name === pattern
  if (name.startsWith('.')) return false
  const re = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}$`)
  return re.test(name)
}

/** Whether `dir` (its segments) matches `pattern` whole. */
function matches (dir: string[], pattern: Segments): boolean {
  if (pattern.length === 0) return dir.length === 0
  const [head, ...rest] = pattern
  if (head === '**') {
    for (let skip = 0; skip <= dir.length; skip++) {
      if (dir.slice(0, skip).some((s) => s.startsWith('.'))) break
      if (matches(dir.slice(skip), rest)) return true
    }
    return false
  }
  return dir.length > 0 && segmentMatches(dir[0], head) && matches(dir.slice(1), rest)
}

/** Whether something below `dir` may still match `pattern` (so the walk goes into it). */
function mayMatchBelow (dir: string[], pattern: Segments): boolean {
  if (dir.length === 0) return pattern.length > 0
  if (pattern.length === 0) return false
  const [head, ...rest] = pattern
  if (head === '**') return !dir.some((s) => s.startsWith('.')) || mayMatchBelow(dir, rest)
  return segmentMatches(dir[0], head) && mayMatchBelow(dir.slice(1), rest)
}

/** The manifest of the project at `dir`: `undefined` when it has none, a string when it is not read here. */
export function readManifestAt (dir: string): Manifest | undefined | string {
  for (const file of MANIFEST_FILES) {
    let text: string
    try {
      text = fs.readFileSync(path.join(dir, file), 'utf8')
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') continue
      return `${path.join(dir, file)}: ${code ?? String(err)}`
    }
    if (file !== 'package.json') return `${path.join(dir, file)}: a manifest other than package.json`
    try {
      const manifest = JSON.parse(text) as unknown
      return manifest != null && typeof manifest === 'object' && !Array.isArray(manifest) ? manifest as Manifest : `${path.join(dir, 'package.json')} is not an object`
    } catch {
      return `${path.join(dir, 'package.json')} is not valid JSON (left to pnpm)`
    }
  }
  return undefined
}

/**
 * Every project of the workspace at `rootDir` whose `packages` are `patterns`, the root first
 * and then by directory, or why they are not found here as pnpm finds them.
 */
export function findWorkspaceProjects (rootDir: string, patterns: string[]): WorkspaceProject[] | string {
  const include: Segments[] = []
  const exclude: Segments[] = []
  for (const pattern of patterns) {
    if (typeof pattern !== 'string') return 'a workspace pattern that is not a string'
    const negated = pattern.startsWith('!')
    const parsed = parsePattern(negated ? pattern.slice(1) : pattern)
    if (typeof parsed === 'string') return parsed
    ;(negated ? exclude : include).push(parsed)
  }
  const found: string[][] = [[]]
  const walk = (segments: string[]): string | undefined => {
    const dir = path.join(rootDir, ...segments)
    let entries: fs.Dirent[]
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true })
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      return code === 'ENOENT' || code === 'ENOTDIR' ? undefined : `${dir}: ${code ?? String(err)}`
    }
    for (const entry of entries) {
      if (IGNORED_DIRS.has(entry.name)) continue
      const below = [...segments, entry.name]
      const wanted = include.some((p) => matches(below, p) || mayMatchBelow(below, p))
      if (!wanted) continue
      if (entry.isSymbolicLink()) {
        let isDir = false
        try {
          isDir = fs.statSync(path.join(dir, entry.name)).isDirectory()
        } catch {}
        if (isDir) return `a symbolic link in the workspace (${path.join(dir, entry.name)}), which pnpm's glob follows`
        continue
      }
      if (!entry.isDirectory()) continue
      if (include.some((p) => matches(below, p))) found.push(below)
      const failed = walk(below)
      if (failed != null) return failed
    }
    return undefined
  }
  const failed = walk([])
  if (failed != null) return failed
  const projects: WorkspaceProject[] = []
  for (const segments of found) {
    // The root is always a project; an excluded pattern excludes the others.
    if (segments.length > 0 && exclude.some((p) => matches(segments, p))) continue
    const dir = path.join(rootDir, ...segments)
    const manifest = readManifestAt(dir)
    if (typeof manifest === 'string') return manifest
    if (manifest == null) continue
    projects.push({ id: segments.length === 0 ? '.' : segments.join('/'), dir, manifest })
  }
  return projects.sort((a, b) => (a.dir > b.dir ? 1 : a.dir < b.dir ? -1 : 0))
}
