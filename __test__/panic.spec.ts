/**
 * A Rust panic inside a native task becomes a rejected promise with a clear message, and the
 * process (and its pool threads) carry on. The panic is injected on purpose through
 * `CAS_NATIVE_INJECT_PANIC=<task>` (src/binding/task.rs), in a child process.
 */
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

// A panic is a bug in the addon, not a bad package or store: it has a code of its own.
const PANIC = 'ERR_PNPM_CAS_NATIVE_PANIC'
const cases: Array<[string, string, string]> = [
  ['addFilesFromTarball', 'extracting', PANIC],
  ['addFilesFromDir', 'adding a directory', PANIC],
  ['readPkgFromCafs', 'reading the store', PANIC],
  ['importPackage', 'linking', PANIC],
  ['linkPackages', 'linking', PANIC],
  ['symlinkAllModules', 'linking', PANIC],
  ['hardLinkDir', 'linking', PANIC],
  ['linkStoredPackages', 'linking', PANIC],
]

describe('a panic in a native task', () => {
  for (const [fn, task, code] of cases) {
    it(`rejects ${fn} with ${code} and leaves the process working`, () => {
      const out = execFileSync(process.execPath, ['--no-warnings', path.join(import.meta.dirname, 'helpers/panic-child.mjs'), fn], {
        encoding: 'utf8',
        env: { ...process.env, CAS_NATIVE_INJECT_PANIC: task },
        stdio: ['ignore', 'pipe', 'ignore'], // the panic hook's report goes to stderr
      })
      const outcomes = JSON.parse(out)
      expect(outcomes).toHaveLength(2)
      for (const o of outcomes) {
        expect(o).toMatchObject({ isError: true, code })
        expect(o.message).toContain(`internal error while ${task}: CAS_NATIVE_INJECT_PANIC=${task}`)
      }
    })
  }
})
