/**
 * pnpm 11's file of lockfiles that passed its supply-chain check, `<cacheDir>/lockfile-verified.jsonl`
 * (`verifyLockfileResolutionsCache` in pnpm's deps installer): one JSON record a line, the
 * lockfile's content hash, path and stat, when it was verified, and under which policies. The
 * rules of which record covers an install are `supply-chain.ts`'s; this module reads the lines and
 * adds them as pnpm adds them.
 */
import fs from 'node:fs'
import path from 'node:path'

/** The file's name in pnpm's `cacheDir`. */
export const VERDICT_FILE = 'lockfile-verified.jsonl'
/** How many records pnpm keeps when it compacts the file, and the size that makes it compact. */
const KEPT_RECORDS = 1000
const COMPACT_ABOVE_BYTES = KEPT_RECORDS * 1024 * 3 / 2

/** One line of the file, as JSON gives it. */
export interface Verdict {
  lockfile: { hash: string, path: string, size?: unknown, mtimeNs?: unknown, inode?: unknown }
  verifiedAt?: unknown
  policy?: unknown
}

/** What pnpm records of the lockfile file: its size, and its modification time (ns) and inode as decimal strings. */
export interface LockfileStat { size: number, mtimeNs: string, inode: string }

export const lockfileStat = (stat: fs.BigIntStats): LockfileStat => ({ size: Number(stat.size), mtimeNs: stat.mtimeNs.toString(), inode: stat.ino.toString() })

/** A line that is a record: JSON with the lockfile's hash and path as strings. */
function parseVerdict (line: string): Verdict | undefined {
  try {
    const parsed = JSON.parse(line)
    return typeof parsed?.lockfile?.hash === 'string' && typeof parsed.lockfile.path === 'string' ? parsed : undefined
  } catch {
    return undefined
  }
}

/** The records, the last one for each path and for each content hash (pnpm reads the file so). */
export function readVerdicts (text: string): { byPath: Map<string, Verdict>, byHash: Map<string, Verdict> } {
  const byPath = new Map<string, Verdict>()
  const byHash = new Map<string, Verdict>()
  for (const line of text.split('\n')) {
    const verdict = parseVerdict(line)
    if (verdict == null) continue
    byPath.set(verdict.lockfile.path, verdict)
    byHash.set(verdict.lockfile.hash, verdict)
  }
  return { byPath, byHash }
}

/**
 * Appends `verdict` again for the lockfile at `lockfilePath` (`stat`), as pnpm does when it takes
 * a verdict by content hash (a clone of a lockfile verified before): the record with pnpm's
 * defaults for missing fields, its path and stat replaced.
 */
export function appendVerdictForPath (cacheDir: string, verdict: Verdict, lockfilePath: string, stat: LockfileStat): void {
  appendVerdict(cacheDir, {
    lockfile: { hash: verdict.lockfile.hash, path: lockfilePath, ...stat },
    verifiedAt: verdict.verifiedAt ?? '',
    policy: verdict.policy != null && typeof verdict.policy === 'object' ? verdict.policy : {},
  })
}

/** Appends `verdict` as a line, then compacts the file as pnpm does. Errors are ignored, as pnpm's are (it logs them at debug level). */
export function appendVerdict (cacheDir: string, verdict: Verdict): void {
  const file = path.join(cacheDir, VERDICT_FILE)
  try {
    fs.mkdirSync(cacheDir, { recursive: true })
    fs.appendFileSync(file, `${JSON.stringify(verdict)}\n`)
  } catch {
    return
  }
  compactIfLarge(file)
}

/**
 * pnpm's compaction, once the file is over ~1.5 MB: the newest record of each (path, hash), the
 * last `KEPT_RECORDS` of them in the file's order, lines that are no record dropped; written
 * to a temporary named with the process id, then renamed over the file.
 */
function compactIfLarge (file: string): void {
  let text: string
  try {
    if (fs.statSync(file).size <= COMPACT_ABOVE_BYTES) return
    text = fs.readFileSync(file, 'utf8')
  } catch {
    return
  }
  const seen = new Set<string>()
  const newestFirst: string[] = []
  const lines = text.split('\n').filter((line) => line !== '')
  for (let i = lines.length - 1; i >= 0; i--) {
    const verdict = parseVerdict(lines[i])
    if (verdict == null) continue
    const key = `${verdict.lockfile.path} ${verdict.lockfile.hash}`
    if (seen.has(key)) continue
    seen.add(key)
    newestFirst.push(lines[i])
  }
  const kept = newestFirst.reverse().slice(-KEPT_RECORDS)
  try {
    const temp = `${file}.${process.pid}.tmp`
    fs.writeFileSync(temp, kept.map((line) => `${line}\n`).join(''))
    fs.renameSync(temp, file)
  } catch {}
}
