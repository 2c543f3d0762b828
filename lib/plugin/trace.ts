/**
 * The plugin's trace: with `CAS_NATIVE_PNPMFILE_TRACE=<file>`, what it did (or why not) is
 * appended to that file, a line each. No native code here: it also reports why the plugin is
 * inactive when its binary did not load.
 */
import fs from 'node:fs'

export function trace (line: string): void {
  const file = process.env.CAS_NATIVE_PNPMFILE_TRACE
  if (file) fs.appendFileSync(file, `${line}\n`)
}
