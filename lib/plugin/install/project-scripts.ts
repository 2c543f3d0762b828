/**
 * The projects' own lifecycle scripts in a frozen install, as pnpm 11.28.11 handles them, for
 * the native install (docs/native-install.md, "The project's own scripts"; in a workspace,
 * every project's alike):
 *
 * - scripts on: pnpm runs the root project's `preinstall` (and `pnpm:devPreinstall`) before it
 *   links anything: such installs are left to pnpm whole (a script would see the native layout
 *   instead of an empty `node_modules`). Once everything is linked and `.modules.yaml` written,
 *   it runs every project's `preinstall` (the root's has run), `install`, `postinstall`,
 *   `preprepare`, `prepare`, `postprepare` (its bundle's `runLifecycleHooksConcurrently`): a
 *   project once those it depends on have ended (`projects-graph.ts`), `childConcurrency` at a
 *   time, none started after one failed; each with the environment of a dependency's build but
 *   `INIT_CWD`, pnpm's working directory; output logged line by line as a build's in a
 *   workspace, straight to the terminal after a `$ <script>` line outside one. The native
 *   install does the same (`runProjectScripts`), then writes the workspace state.
 * - scripts off: pnpm records the project as a pending build (`pnpm rebuild` runs its scripts).
 */
import fs from 'node:fs'
import path from 'node:path'
import { runScheduled } from './build-schedule.js'
import { runStage, type BuildContext } from './dependency-build.js'
import type { WorkspaceProject } from './workspace-projects.js'

type Scripts = Record<string, unknown>

/** The stages pnpm runs for a project once everything is linked, in its order (the root's `preinstall` has run before). */
const AFTER_LINKING = ['preinstall', 'install', 'postinstall', 'preprepare', 'prepare', 'postprepare'] as const

/** pnpm's script for a project-level dev hook, run before `preinstall`. */
const DEV_PREINSTALL = 'pnpm:devPreinstall'

/** Whether pnpm's runner runs `script` (it skips an empty one, and npm's `only-allow pnpm` guard). */
const runs = (script: unknown): boolean => typeof script === 'string' && script !== '' && script !== 'npx only-allow pnpm'

interface OneProjectScripts {
  /** Why the install must be left to pnpm whole, if it must. */
  leftToPnpm?: string
  /** The stages pnpm runs after the layout, in its order. */
  stages: string[]
  /** pnpm records the project in `.modules.yaml`'s `pendingBuilds` (scripts off). */
  pendingBuild: boolean
}

export interface ProjectScripts {
  /** Why the install must be left to pnpm whole, if it must. */
  leftToPnpm?: string
  /** Each project's stages pnpm runs after the layout (those without any left out). */
  runs: Array<WorkspaceProject & { stages: string[] }>
  /** The same for the trace and the report: `stage (id)`, the root's bare where no other project has any (else `stage (root)`). */
  shown: string[]
  /** The projects pnpm records in `.modules.yaml`'s `pendingBuilds` (scripts off), by importer id. */
  pendingProjects: string[]
}

/**
 * What the native install does about the scripts of every project of the workspace, each as
 * `projectScripts` says.
 */
export function workspaceScripts (projects: WorkspaceProject[], ignoreScripts: boolean): ProjectScripts {
  const scripts: ProjectScripts = { runs: [], shown: [], pendingProjects: [] }
  for (const project of projects) {
    const { id } = project
    const own = projectScripts(project.manifest, project.dir, ignoreScripts, id === '.')
    if (own.leftToPnpm != null) return { ...scripts, leftToPnpm: id === '.' ? own.leftToPnpm : `${own.leftToPnpm} (${id})` }
    if (own.pendingBuild) scripts.pendingProjects.push(id)
    if (own.stages.length > 0) scripts.runs.push({ ...project, stages: own.stages })
  }
  // (User try: create-vue's "the project's prepare, prepare (template/config/cypress)" read as one stage twice.)
  const others = scripts.runs.some((r) => r.id !== '.')
  scripts.shown = scripts.runs.flatMap((r) => r.id === '.' && !others ? r.stages : r.stages.map((stage) => `${stage} (${r.id === '.' ? 'root' : r.id})`))
  return scripts
}

/** What the native install does about a project's scripts (`dir` holds its package.json; `root`: the lockfile's project). */
export function projectScripts (manifest: Record<string, unknown>, dir: string, ignoreScripts: boolean, root = true): OneProjectScripts {
  const scripts = (manifest.scripts != null && typeof manifest.scripts === 'object' ? manifest.scripts : {}) as Scripts
  if (ignoreScripts) {
    // pnpm's test: the first of these that is set must be a non-empty string.
    const first = [scripts.preinstall, scripts.prepublish, scripts.install, scripts.postinstall, scripts.prepare].find((s) => s != null)
    return { stages: [], pendingBuild: Boolean(first) }
  }
  if (root && runs(scripts[DEV_PREINSTALL])) return { leftToPnpm: `the project's ${DEV_PREINSTALL} script, which pnpm runs before it links anything`, stages: [], pendingBuild: false }
  if (root && runs(scripts.preinstall)) return { leftToPnpm: 'the project\'s preinstall script, which pnpm runs before it links anything', stages: [], pendingBuild: false }
  // pnpm runs `node-gyp rebuild` as the install script of a project with a binding.gyp and neither script.
  if (!scripts.install && !scripts.preinstall && manifest.gypfile !== false && fs.existsSync(path.join(dir, 'binding.gyp'))) {
    return { leftToPnpm: 'the project\'s binding.gyp, which pnpm builds with node-gyp', stages: [], pendingBuild: false }
  }
  return { stages: AFTER_LINKING.filter((stage) => runs(scripts[stage])), pendingBuild: false }
}

/** How the projects' scripts ended when one failed: its error and project, and the projects pnpm's runner never reached. */
export interface ProjectScriptFailure { failed: Error, id: string, unstarted: string[] }

/**
 * Runs the projects' stages as pnpm runs them after the layout: each project of `graph` (every
 * project's directory with those it depends on) once those it depends on have ended,
 * `concurrency` at a time, its commands linked again first when `linkCommands` is given, its
 * stages in order; none started once one has failed. Resolves with the first failure, if any
 * (those under way have ended).
 */
export async function runProjectScripts (projects: WorkspaceProject[], runs: ProjectScripts['runs'], graph: Map<string, string[]>, concurrency: number, ctx: BuildContext, linkCommands?: (id: string) => void): Promise<ProjectScriptFailure | undefined> {
  const byDir = new Map(runs.map((run) => [run.dir, run]))
  const idOf = new Map(projects.map((p) => [p.dir, p.id]))
  const started = new Set<string>()
  let first: Omit<ProjectScriptFailure, 'unstarted'> | undefined
  await runScheduled(graph, concurrency, async (dir) => {
    started.add(dir)
    const run = byDir.get(dir)
    try {
      linkCommands?.(idOf.get(dir)!)
      for (const stage of run?.stages ?? []) await runStage(dir, run!.manifest, stage, ctx)
      return true
    } catch (err) {
      first ??= { failed: err as Error, id: idOf.get(dir)! }
      return false
    }
  })
  return first == null ? undefined : { ...first, unstarted: projects.filter((p) => !started.has(p.dir)).map((p) => p.id) }
}
