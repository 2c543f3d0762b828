/**
 * Whether the next fresh-clone install of a project (`pnpm install --frozen-lockfile` into an
 * empty `node_modules`) would be native, and every reason it would not: the explain command's
 * verdict, from the settings pnpm would hand the plugin (`explain-cli.ts` gets them from pnpm).
 *
 * Every settings rule is checked (`configReasons`); the project's own checks (lockfile,
 * package.json, packages, scripts, store) run in order and stop at the first reason, as each
 * assumes the ones before it passed (no package can be planned from a lockfile that does not
 * match package.json), but the packages' reason lists every kind of package left to pnpm.
 * Nothing is written and the registry is not asked: what only the install can tell (release
 * ages the registry must confirm, packages whose builds pnpm runs, found in the store) is
 * listed as notes; the store is only read, for what its side-effects cache holds of the builds
 * pnpm would run where the native install does not run them.
 */
import { PLUGIN_NAME, userAgentPnpmVersion } from './config-dependency.js'
import { configReasons } from './install/config-rules.js'
import { buildSettingsReason, patchSettingsReason } from './install/builds-on-miss.js'
import { buildIgnored, buildStepPackage, checkedLockfile, planInstall, projectScriptsWithBuilds, type NativeInstallConfig } from './install/native-install.js'
import { nativeRelease, PNPM_RELEASES } from './install/pnpm-releases.js'
import { checkSupplyChain } from './install/supply-chain.js'
import { buildVerdict, lookUpBuilds, rowsRequireBuild, unbuiltReasons } from './install/side-effects.js'
import { notBuiltHere, whyNot, type WhyNot } from './why-not.js'

export interface Explanation {
  /** The pnpm version whose settings these are. */
  pnpmVersion: string | undefined
  native: boolean
  /** Why not, each with what would change it (the install's reason as `reason`). */
  reasons: Array<WhyNot & { reason: string }>
  /** How many packages it would lay out, when native. */
  packages?: number
  /** What only the install itself can tell. */
  notes: string[]
}

const NOT_ADDED = 'the plugin is not in configDependencies'

/**
 * The verdict for `config` (pnpm's settings for the install, as `updateConfig` gets them, with
 * `pnpmfile` listing the pnpmfiles the install would load). A project without the plugin is
 * judged as if it were added (and says to add it).
 */
export async function explain (config: NativeInstallConfig): Promise<Explanation> {
  // `pnpm add --config` writes pnpm-workspace.yaml, which makes the project its own workspace root.
  if (config.configDependencies?.[PLUGIN_NAME] == null && config.workspaceDir == null && config.lockfileDir == null && config.dir != null) {
    config = { ...config, lockfileDir: config.dir, workspaceDir: config.dir }
  }
  const pnpmVersion = userAgentPnpmVersion(config.userAgent)
  const reasons = configReasons(config, pnpmVersion)
  if (config.configDependencies?.[PLUGIN_NAME] == null) {
    reasons.unshift(NOT_ADDED)
    // Once added, the plugin's pnpmfile comes with any the project has.
    if ((config.pnpmfile ?? []).length > 0 && !reasons.includes('other pnpmfiles')) reasons.push('other pnpmfiles')
  }
  const notes: string[] = []
  let packages: number | undefined
  if (config.lockfileDir != null) {
    let plan: ReturnType<typeof planInstall>
    try {
      // Under a release it does not reproduce (already a reason), the project is judged as the newest writes it.
      const release = nativeRelease(pnpmVersion)
      plan = planInstall(config, typeof release === 'string' ? PNPM_RELEASES.at(-1)! : release)
    } catch (err) {
      // As the install: nothing written, pnpm installs.
      plan = `it failed: ${(err as Error).message}`
    }
    if (typeof plan === 'string') {
      reasons.push(plan)
    } else {
      packages = plan.planned.length
      // Offline here: what the registry would have to say is a note, not a reason.
      const supplyChain = checkSupplyChain(checkedLockfile(plan), plan.checked, { ...config, offline: true })
      if (supplyChain.leftToPnpm?.endsWith('(--offline)') === true && config.offline !== true) {
        notes.push(`minimumReleaseAge: at install time the native install asks the registry for the release dates of the ${plan.checked.length} packages (pnpm's cached metadata first); a version younger than ${String(config.minimumReleaseAge)} minutes leaves the install to pnpm`)
      } else if (supplyChain.leftToPnpm != null) {
        reasons.push(supplyChain.leftToPnpm)
      }
      // The allowed builds, looked up in the store once (read only), and which rows require a build.
      const builds = await lookUpBuilds(plan.storeDir, plan.planned, plan.cacheKeys)
      const requires = await rowsRequireBuild(plan.storeDir, plan.planned.map((p) => p.filesIndexFile))
      // A build pnpm is told neither to run nor to deny is pnpm's to refuse or ask about: the
      // install's own reason (its store lookup finds no key to take it under).
      const undecided = plan.planned.find((p, i) => requires[i] === true && !buildIgnored(p, config) && plan.cacheKeys.get(p.depPath)?.key == null)
      if (undecided != null) reasons.push(`${undecided.depPath}: requires-build`)
      // pnpm's own install, which then runs the project's scripts, would record no build of its
      // build step: the store's rows say whether there is any (denied, or taken from the cache).
      const withBuilds = plan.scripts.pnpmRuns.length > 0 && config.ignoreScripts !== true ? buildStepPackage(plan, config, builds, requires) : undefined
      if (withBuilds != null) reasons.push(projectScriptsWithBuilds(plan.scripts, withBuilds.builds, withBuilds.depPath))
      else if (plan.scripts.pnpmRuns.length > 0) notes.push(`the project's ${plan.scripts.pnpmRuns.join(', ')}: laid out natively, then run by pnpm (${plan.scripts.whyPnpmRuns!})`)
      else if (plan.scripts.shown.length > 0) notes.push(`the project's ${plan.scripts.shown.join(', ')}: run natively after the layout, as pnpm runs them`)
      // Under a release not in the table (judged as the newest), the builds are still that pnpm's.
      const unbuildable = buildSettingsReason(config, pnpmVersion ?? plan.release.version)
      // A patched package whose build pnpm does not allow is patched on every install: no cache to take it from.
      const eachTime = plan.planned.find((p) => plan.cacheKeys.get(p.depPath)?.eachTime === true)
      const unpatchable = eachTime != null ? patchSettingsReason(config, plan.release) : undefined
      if (unpatchable != null) reasons.push(`${eachTime!.depPath}: patched, and pnpm applies the patch itself (its build is not allowed), and ${unpatchable}`)
      // Where builds are pnpm's, those pnpm runs on every install (recorded as changing nothing)
      // and one the cache lacks leave the install to pnpm: the store says which, read only.
      if (unbuildable != null) {
        const { everyInstall, missing } = unbuiltReasons(builds, unbuildable)
        reasons.push(...[everyInstall, missing].filter((r) => r != null))
      }
      // (Only where there may be one: a patch, or a build allowed whose row does not say it needs none.)
      const allowed = (p: { name: string, version: string }): boolean => config.ignoreScripts !== true && [true, 'unread'].includes(buildVerdict(p.name, p.version, config) as boolean | string)
      if (Object.keys(config.patchedDependencies ?? {}).length > 0 || plan.planned.some((p, i) => requires[i] !== false && allowed(p))) {
        notes.push(unbuildable == null
          ? 'a build pnpm would run (allowBuilds) or a patch it would apply: taken from pnpm\'s side-effects cache at install time, or run natively as pnpm runs it when the cache lacks it (a binding.gyp without an install script built with node-gyp, as pnpm builds it; a failing build fails the install as stock\'s does, or is skipped as there when its package is optional)'
          : `a build pnpm would run (allowBuilds) or a patch it would apply: taken from pnpm's side-effects cache at install time; one the cache lacks leaves the install to pnpm: ${notBuiltHere(unbuildable, true)}`)
      }
      // A package not in the store yet: whether it requires a build is known once it is downloaded.
      const unread = plan.planned.filter((_, i) => requires[i] == null).length
      if (unread > 0) notes.push(`${unread} of the ${plan.planned.length} packages are not in this machine's store: the install downloads them, and a build one of them requires that allowBuilds neither allows nor denies leaves the install to pnpm then`)
    }
  }
  const explained = reasons.map((reason): WhyNot & { reason: string } => reason === NOT_ADDED
    ? { reason, code: 'not-added', says: `${PLUGIN_NAME} is not in this project's configDependencies`, change: `\`pnpm add --config ${PLUGIN_NAME}\`, then \`pnpm install\` once, and commit pnpm-workspace.yaml and pnpm-lock.yaml`, routine: false }
    : { reason, ...whyNot(reason) })
  return {
    pnpmVersion,
    native: reasons.length === 0,
    // One kind of reason once (a setting and the lockfile can both say it).
    reasons: explained.filter((r, i) => explained.findIndex((other) => other.says === r.says) === i),
    ...(reasons.length === 0 ? { packages } : {}),
    notes,
  }
}

/** The explanation as the command prints it. */
export function formatExplanation (e: Explanation, dir: string): string {
  const head = `A fresh clone's \`pnpm install --frozen-lockfile\` in ${dir} (pnpm ${e.pnpmVersion ?? '(unknown version)'}, its settings there):`
  const lines = e.native
    ? [head, `native: ${PLUGIN_NAME} would lay out all ${e.packages} packages, then pnpm finds node_modules up to date.`]
    : [head, `left to pnpm, for ${e.reasons.length} ${e.reasons.length === 1 ? 'reason' : 'reasons'}:`, ...e.reasons.flatMap((r, i) => [`${i + 1}. ${r.says}`, `   To install natively: ${r.change}`])]
  if (e.notes.length > 0) lines.push('Told only at install time:', ...e.notes.map((n) => `- ${n}`))
  return `${lines.join('\n')}\n`
}
