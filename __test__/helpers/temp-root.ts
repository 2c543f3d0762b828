/**
 * vitest global setup: every test's temporary directory (stores, trees, pnpm projects, child
 * processes' files: all of them go through `os.tmpdir()`) lives under one directory per run,
 * deleted when the run ends. A full run creates several GB of stores and trees; left behind,
 * a few runs fill a disk.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export default function setup (): () => Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-native-tests-'))
  // Read by os.tmpdir() in the test workers and every process they start.
  process.env.TMPDIR = root
  // Kept, for a look at what a failing test left (CAS_TEST_KEEP_TMP=1).
  if (process.env.CAS_TEST_KEEP_TMP === '1') return async () => { console.log(`test files kept in ${root}`) }
  // Asynchronous: deleting GBs takes seconds, and a synchronous delete would block vitest's main
  // process while it is still shutting its test workers down.
  return () => fs.promises.rm(root, { recursive: true, force: true, maxRetries: 3 })
}
