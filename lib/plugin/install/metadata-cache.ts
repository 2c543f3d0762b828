/**
 * pnpm's own copy of registry metadata on disk (`<cacheDir>/v12/metadata*`, pnpm 11.28.5 on's
 * `pnpm-meta-v1` files), read for the one thing the supply-chain check needs: which versions a
 * package lists, when its metadata last changed, and when each version was published. pnpm
 * takes publish times from this cache itself; a version's publish time never changes.
 *
 * A file holds a format line (`pnpm-meta-v1 <headers length> <index length>`), the response's
 * headers as JSON (with `modified`), then an index as JSON (`name`, `versions` as
 * `[version, offset, length]`, `time`), then each version's manifest. Only the first three
 * parts are read. Anything else (another format, a registry URL with a path) reads as not
 * cached, and the registry is asked.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'

/** pnpm's metadata directories: full, full filtered, abbreviated. */
const DIRS = ['v12/metadata-full', 'v12/metadata-full-filtered', 'v12/metadata']
const FORMAT = 'pnpm-meta-v1'
/** The longest format line read before giving up on a file. */
const FORMAT_LINE_MAX = 64

/** What a cached document says of a package's age. */
export interface CachedAges {
  versions: Set<string>
  /** When the metadata last changed (the response's `modified`), if recorded. */
  modified?: string
  /** Publish time by version, when every listed version has one (pnpm drops it otherwise). */
  time?: Record<string, unknown>
}

/** pnpm's directory name for a registry, for one without a path (`https://host[:port]/`); else `undefined`. */
function registryDir (registry: string): string | undefined {
  let url: URL
  try {
    url = new URL(registry)
  } catch {
    return undefined
  }
  if (url.pathname !== '/' || !/^[a-z0-9._-]+$/.test(url.hostname) || url.hostname.endsWith('.')) return undefined
  return `${url.protocol.slice(0, -1)}%3A+${url.hostname}${url.port === '' ? '' : `+${url.port}`}`
}

/** pnpm's file name for a package: its name, with a hash when it is not lower-case. */
function packageFile (name: string): string {
  const base = name === name.toLowerCase() ? name : `${name}_${createHash('sha256').update(name).digest('hex')}`
  return `${base}.jsonl`
}

function readAt (fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length)
  const read = fs.readSync(fd, buffer, 0, length, position)
  return buffer.subarray(0, read)
}

function readFile (file: string): CachedAges | undefined {
  let fd: number
  try {
    fd = fs.openSync(file, 'r')
  } catch {
    return undefined
  }
  try {
    const head = readAt(fd, 0, FORMAT_LINE_MAX)
    const newline = head.indexOf(10)
    const [format, headersLength, indexLength, extra] = (newline === -1 ? '' : head.toString('utf8', 0, newline)).split(' ')
    if (format !== FORMAT || extra != null || !/^\d+$/.test(headersLength ?? '') || !/^\d+$/.test(indexLength ?? '')) return undefined
    const headers = readAt(fd, newline + 1, Number(headersLength))
    const index = readAt(fd, newline + 1 + Number(headersLength), Number(indexLength))
    if (headers.length !== Number(headersLength) || index.length !== Number(indexLength)) return undefined
    const { modified } = JSON.parse(headers.toString('utf8')) as { modified?: unknown }
    const { versions, time } = JSON.parse(index.toString('utf8')) as { versions?: unknown, time?: Record<string, unknown> }
    if (!Array.isArray(versions)) return undefined
    const listed = new Set(versions.map((v) => (Array.isArray(v) ? v[0] : undefined)).filter((v): v is string => typeof v === 'string'))
    const complete = time != null && typeof time === 'object' && [...listed].every((v) => typeof time[v] === 'string' && time[v] !== '')
    return { versions: listed, ...(typeof modified === 'string' ? { modified } : {}), ...(complete ? { time } : {}) }
  } catch {
    return undefined
  } finally {
    fs.closeSync(fd)
  }
}

/** What pnpm's cache in `cacheDir` holds of `name` from `registry`, one entry a metadata directory. */
export function cachedAges (cacheDir: string | undefined, registry: string, name: string): CachedAges[] {
  const dir = cacheDir != null ? registryDir(registry) : undefined
  if (dir == null) return []
  return DIRS.flatMap((metaDir) => readFile(path.join(cacheDir!, metaDir, dir, packageFile(name))) ?? [])
}
