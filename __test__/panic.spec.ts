/**
 * A Rust panic inside a native task becomes a rejected promise with a clear message, and the
 * process (and its pool threads) carry on. The panic is injected on purpose through
 * `CAS_NATIVE_INJECT_PANIC=<task>` (src/binding/task.rs), in a child process.
 */
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const cases: Array<[string, string, string]> = [
  ['addFilesFromTarball', 'extracting', 'ERR_PNPM_TARBALL_EXTRACT'],
  ['addFilesFromDir', 'adding a directory', 'ERR_PNPM_GIT_FETCH_FAILED'],
  ['readPkgFromCafs', 'reading the store', 'ERR_PNPM_READ_FROM_STORE'],
  ['importPackage', 'linking', 'ERR_PNPM_LINKING_FAILED'],
  ['linkPackages', 'linking', 'ERR_PNPM_LINKING_FAILED'],
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
