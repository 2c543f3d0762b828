/**
 * The store's list of the projects installed from it: `<store>/v11/projects/<hash>`, a link to
 * each project's lockfile directory, which pnpm 11 adds when its install opens the store
 * (`registerProject`, from `getContext`) and which `pnpm store prune` reads to tell which
 * packages are still in use. An install pnpm finds up to date never gets there, so the native
 * install adds the link itself, as pnpm would have.
 */
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

/**
 * How a release links the project: absolute (from 11.28.9), or as `symlink-dir` links (relative,
 * an earlier link set aside under another name: to 11.28.8), which is not reproduced: the
 * native install under those releases leaves the project unlisted.
 */
export type ProjectLinkForm = 'relative' | 'absolute'

/** Where the link of the project at `lockfileDir` goes: the first 32 hex digits of the SHA-256 of its path. */
export function projectLinkPath (storeDir: string, lockfileDir: string): string {
  return path.join(storeDir, 'projects', createHash('sha256').update(lockfileDir).digest('hex').slice(0, 32))
}

const withTrailingSep = (dir: string): string => {
  const resolved = path.resolve(dir)
  return resolved.endsWith(path.sep) ? resolved : `${resolved}${path.sep}`
}

/** Whether `link` and `dir` are the same directory once every link is followed (false if either is gone). */
function sameDir (link: string, dir: string): boolean {
  try {
    return fs.realpathSync(link) === fs.realpathSync(dir)
  } catch {
    return false
  }
}

function linkProject (lockfileDir: string, link: string): void {
  try {
    fs.symlinkSync(path.resolve(lockfileDir), link, 'dir')
  } catch (err) {
    // Windows without the right to make symlinks: a junction, as pnpm falls back to.
    if (process.platform !== 'win32' || (err as NodeJS.ErrnoException).code !== 'EPERM') throw err
    fs.symlinkSync(path.resolve(lockfileDir), link, 'junction')
  }
}

/**
 * Adds the project at `lockfileDir` (absolute) to the store's list, as pnpm's install does: not
 * a project that holds the store (a store kept in the project); a link already there that leads
 * elsewhere is replaced. Throws what pnpm's would throw. Under a release whose link is
 * `symlink-dir`'s (`relative`), nothing is added.
 */
export function registerProject (storeDir: string, lockfileDir: string, form: ProjectLinkForm = 'absolute'): void {
  if (form === 'relative' || withTrailingSep(storeDir).startsWith(withTrailingSep(lockfileDir))) return
  const link = projectLinkPath(storeDir, lockfileDir)
  fs.mkdirSync(path.dirname(link), { recursive: true })
  try {
    linkProject(lockfileDir, link)
    return
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  }
  if (sameDir(link, lockfileDir)) return
  try {
    fs.unlinkSync(link)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  try {
    linkProject(lockfileDir, link)
  } catch (err) {
    // Another install linked it meanwhile.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !sameDir(link, lockfileDir)) throw err
  }
}
