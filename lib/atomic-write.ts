import fs from 'node:fs'

/** Writes `file` through a temporary sibling renamed over it, so that a reader never sees half of it. */
export function writeAtomically (file: string, text: string, mode?: number): void {
  const temp = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temp, text, mode == null ? undefined : { mode })
  fs.renameSync(temp, file)
}
