/**
 * What a native install (or a head start) killed halfway leaves in `node_modules` that pnpm's
 * next install would not remove, removed on the next install (`removeLeftovers`):
 *
 * - the temporaries of the state files and of bin targets (`lib/atomic-write.ts`), and the
 *   probe file the workspace state's clock is read from;
 * - the importer's staging directories, `<package dir>_tmp_<pid>_cas<n>` beside a package in
 *   the virtual store (`crates/core/src/layout/import/file_ops.rs`, `temp_sibling`). pnpm names its own
 *   `_tmp_<pid>_<thread>` and leaves them too: only ours are touched.
 *
 * Only those of processes that no longer run, so a concurrent install keeps its own. The walk
 * through the virtual store is made only when the last install did not finish (no workspace
 * state, which every finished install writes last), so a project installed before pays nothing.
 */
import fs from 'node:fs'
import path from 'node:path'
import { temporariesOf } from './atomic-write.js'
import { BIN_TARGET_TEMP } from './bin-links.js'

const PROBE = /^\.pnpm-validation-probe-(\d+)-[0-9a-f]{8}$/
const STAGE = /_tmp_(\d+)_cas\d+$/
export const WORKSPACE_STATE = '.pnpm-workspace-state-v1.json'

/** Whether a process of that id runs (one of another user's too). */
function processRuns (pid: number): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** A leftover that cannot be removed stays: it never fails an install. */
function removeQuietly (entry: string): void {
  try {
    fs.rmSync(entry, { recursive: true, force: true })
  } catch {}
}

/** Removes the entries of `dir` whose name `pattern` matches with a process id (group 1) that no longer runs. */
function removeDead (dir: string, pattern: RegExp): void {
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch {
    return
  }
  for (const name of names) {
    const pid = pattern.exec(name)?.[1]
    if (pid != null && !processRuns(Number(pid))) removeQuietly(path.join(dir, name))
  }
}

/** The staging directories beside the packages of the virtual store (scoped ones included). */
function removeDeadStages (virtualStoreDir: string): void {
  let entries: fs.Dirent[]
  try {
    entries = fs.readdirSync(virtualStoreDir, { withFileTypes: true })
  } catch {
    return
  }
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name === 'node_modules') continue
    const modules = path.join(virtualStoreDir, entry.name, 'node_modules')
    removeDead(modules, STAGE)
    let scopes: string[]
    try {
      scopes = fs.readdirSync(modules).filter((name) => name.startsWith('@'))
    } catch {
      continue
    }
    for (const scope of scopes) removeDead(path.join(modules, scope), STAGE)
  }
}

/** Removes what a killed native install or head start of this project left in `modulesDir`. */
export function removeLeftovers (modulesDir: string): void {
  const virtualStoreDir = path.join(modulesDir, '.pnpm')
  removeDead(modulesDir, temporariesOf(['.modules.yaml', WORKSPACE_STATE]))
  removeDead(modulesDir, PROBE)
  removeDead(virtualStoreDir, temporariesOf(['lock.yaml', BIN_TARGET_TEMP]))
  if (!fs.existsSync(path.join(modulesDir, WORKSPACE_STATE))) removeDeadStages(virtualStoreDir)
}
