/**
 * The projects' own lifecycle scripts in a frozen install, as pnpm 11.28.11 handles them, for
 * the native install (docs/native-install.md, "The project's own scripts"; in a workspace,
 * every project's alike):
 *
 * - scripts on: pnpm runs the root project's `preinstall` (and `pnpm:devPreinstall`) before it
 *   links anything, and `install`, `postinstall`, `preprepare`, `prepare`, `postprepare` once
 *   everything is linked. The native install cannot run them as pnpm does (pnpm's runner sets
 *   the environment from pnpm's own files: its node-gyp, its `npm_execpath`), so it leaves
 *   them to pnpm itself: the layout is written but not the workspace state, and pnpm's own
 *   install then finds every package in place, and runs the scripts in its order and
 *   environment. A script pnpm runs before linking would see the native layout instead of an
 *   empty `node_modules`: such projects are left to pnpm whole.
 * - scripts off: pnpm records the project as a pending build (`pnpm rebuild` runs its scripts).
 */
import fs from 'node:fs'
import path from 'node:path'
import type { WorkspaceProject } from './workspace-projects.js'

type Scripts = Record<string, unknown>

/** The stages pnpm runs for the root project once everything is linked, in its order. */
const AFTER_LINKING = ['install', 'postinstall', 'preprepare', 'prepare', 'postprepare'] as const

/** pnpm's script for a project-level dev hook, run before `preinstall`. */
const DEV_PREINSTALL = 'pnpm:devPreinstall'

/** Whether pnpm's runner runs `script` (it skips an empty one, and npm's `only-allow pnpm` guard). */
const runs = (script: unknown): boolean => typeof script === 'string' && script !== '' && script !== 'npx only-allow pnpm'

interface OneProjectScripts {
  /** Why the install must be left to pnpm whole, if it must. */
  leftToPnpm?: string
  /** The stages pnpm will run after the native layout (the workspace state is then pnpm's to write). */
  pnpmRuns: string[]
  /** pnpm records the project in `.modules.yaml`'s `pendingBuilds` (scripts off). */
  pendingBuild: boolean
}

export interface ProjectScripts {
  /** Why the install must be left to pnpm whole, if it must. */
  leftToPnpm?: string
  /** The projects' stages pnpm will run after the native layout, the root's bare, another's as `stage (id)` (the workspace state is then pnpm's to write). */
  pnpmRuns: string[]
  /** The projects pnpm records in `.modules.yaml`'s `pendingBuilds` (scripts off), by importer id. */
  pendingProjects: string[]
}

/**
 * What the native install does about the scripts of every project of the workspace, each as
 * `projectScripts` says: the stages pnpm runs after the layout are listed by project (another
 * project's as `stage (id)`); pnpm's own install then runs them all, in its order.
 */
export function workspaceScripts (projects: WorkspaceProject[], ignoreScripts: boolean): ProjectScripts {
  const scripts: ProjectScripts = { pnpmRuns: [], pendingProjects: [] }
  for (const { id, dir, manifest } of projects) {
    const own = projectScripts(manifest, dir, ignoreScripts)
    if (own.leftToPnpm != null) return { ...scripts, leftToPnpm: id === '.' ? own.leftToPnpm : `${own.leftToPnpm} (${id})` }
    if (own.pendingBuild) scripts.pendingProjects.push(id)
    scripts.pnpmRuns.push(...(id === '.' ? own.pnpmRuns : own.pnpmRuns.map((stage) => `${stage} (${id})`)))
  }
  return scripts
}

/** What the native install does about the root project's scripts (`rootDir` holds its package.json). */
export function projectScripts (manifest: Record<string, unknown>, rootDir: string, ignoreScripts: boolean): OneProjectScripts {
  const scripts = (manifest.scripts != null && typeof manifest.scripts === 'object' ? manifest.scripts : {}) as Scripts
  if (ignoreScripts) {
    // pnpm's test: the first of these that is set must be a non-empty string.
    const first = [scripts.preinstall, scripts.prepublish, scripts.install, scripts.postinstall, scripts.prepare].find((s) => s != null)
    return { pnpmRuns: [], pendingBuild: Boolean(first) }
  }
  if (runs(scripts[DEV_PREINSTALL])) return { leftToPnpm: `the project's ${DEV_PREINSTALL} script, which pnpm runs before it links anything`, pnpmRuns: [], pendingBuild: false }
  if (runs(scripts.preinstall)) return { leftToPnpm: 'the project\'s preinstall script, which pnpm runs before it links anything', pnpmRuns: [], pendingBuild: false }
  const pnpmRuns = AFTER_LINKING.filter((stage) => runs(scripts[stage]))
  // pnpm runs `node-gyp rebuild` as the install script of a project with a binding.gyp and neither script.
  if (!scripts.install && !scripts.preinstall && fs.existsSync(path.join(rootDir, 'binding.gyp'))) {
    pnpmRuns.unshift('install')
  }
  return { pnpmRuns, pendingBuild: false }
}
