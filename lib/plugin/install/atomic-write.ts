/**
 * Writing into `node_modules` without ever writing through what is already there: a package's
 * files are hard links into the shared store, so a write or a chmod through one of them would
 * change the store's blob for every project that links it. Every file is made anew (a
 * temporary created exclusively, then renamed over the path), which only replaces the link.
 *
 * The temporaries are named `<name>.<pid>.tmp`, `<name>` the file's own name or one the caller
 * gives: a process killed between the write and the rename leaves one, and
 * `lib/leftovers.ts` (on the next install) knows them by that
 * name (`temporariesOf`) and removes those whose process is gone.
 */
import fs from 'node:fs'
import path from 'node:path'

/** This process's temporary named after `name` in `dir`. */
export function temporaryIn (dir: string, name: string): string {
  return path.join(dir, `${name}.${process.pid}.tmp`)
}

const temporaryOf = (file: string): string => temporaryIn(path.dirname(file), path.basename(file))

/** Creates `temp` anew (never through a file already there: a leftover is removed first) and fills it. */
function createExclusively (temp: string, fill: (temp: string) => void): void {
  fs.rmSync(temp, { force: true })
  fill(temp)
}

/** Renames `temp` over `file`; removes `temp` if that fails. */
function renameOver (temp: string, file: string): void {
  try {
    fs.renameSync(temp, file)
  } catch (err) {
    fs.rmSync(temp, { force: true })
    throw err
  }
}

/**
 * Writes `file` through a temporary sibling renamed over it, so that a reader never sees half of
 * it and nothing already at `file` is written through. `mode`: exactly these permission bits
 * (the umask does not apply).
 */
export function writeAtomically (file: string, text: string | Buffer, mode?: number, temp = temporaryOf(file)): void {
  createExclusively(temp, (t) => {
    fs.writeFileSync(t, text, { flag: 'wx' })
    if (mode != null) fs.chmodSync(t, mode)
  })
  renameOver(temp, file)
}

/**
 * Gives `file` the permission bits `mode` without changing any other link to its content:
 * a file with other links (a hard link into the store) is replaced by a copy of its own, made
 * at `temp` (on the same filesystem).
 */
export function chmodOwnCopy (file: string, mode: number, temp = temporaryOf(file)): void {
  if (fs.statSync(file).nlink <= 1) {
    fs.chmodSync(file, mode)
    return
  }
  createExclusively(temp, (t) => {
    fs.copyFileSync(file, t, fs.constants.COPYFILE_EXCL)
    fs.chmodSync(t, mode)
  })
  renameOver(temp, file)
}

/** The temporaries of any process named after `names` (the process id in group 1). */
export function temporariesOf (names: string[]): RegExp {
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^(?:${escaped.join('|')})\\.(\\d+)\\.tmp$`)
}
