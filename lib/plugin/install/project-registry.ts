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
 * How a release links the project: absolute (from 11.28.9), or with `symlink-dir` (to 11.28.8:
 * relative, and whatever else holds the name set aside as `.ignored_<name>`), which is made with
 * that package itself (10.0.1 here; those releases bundle 10.0.3, which differs only on Windows
 * and in retrying when the name vanishes while it is set aside, where this throws and the
 * install is left to pnpm).
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
 * elsewhere is replaced. Throws what pnpm's would throw.
 */
export async function registerProject (storeDir: string, lockfileDir: string, form: ProjectLinkForm = 'absolute'): Promise<void> {
  if (withTrailingSep(storeDir).startsWith(withTrailingSep(lockfileDir))) return
  const link = projectLinkPath(storeDir, lockfileDir)
  fs.mkdirSync(path.dirname(link), { recursive: true })
  if (form === 'relative') {
    // Loaded only here (its own file in the plugin's package): fs-extra comes with it.
    const { symlinkDir } = await import('symlink-dir')
    await symlinkDir(lockfileDir, link)
    return
  }
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
