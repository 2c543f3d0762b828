/**
 * Why the native install left an install to pnpm, in words a user can act on. The install's
 * checks name what is in the way in a short reason (the trace's words, kept as the checks
 * write them); this is the one place that turns each kind of reason into what it means for
 * the project and what would change it. Used by the line pnpm's reporter prints
 * (`report.ts`) and by the explain command (`explain.ts`).
 *
 * A reason no rule knows is shown as it is, with a pointer to the rules' documentation.
 */
import { PNPM_RELEASES } from './install/pnpm-releases.js'
import { compareVersions, isSemver } from './install/semver-range.js'
import type { PackageLeftToPnpm } from './install/virtual-store.js'

export interface WhyNot {
  /** The rule's name: stable, for tests and for the documentation's table. */
  code: string
  /** What is in the way. */
  says: string
  /** What would let the native install run (or that nothing in the project would). */
  change: string
  /**
   * Part of pnpm's ordinary work (a repeat install over an existing `node_modules`, a changed
   * package.json, an option that asks for something else): the line is only printed with
   * `--loglevel debug`, so that everyday installs do not repeat it.
   */
  routine: boolean
}

const DOCS = 'see docs/native-install.md of @cas/pnpm-plugin-native'
const UNSUPPORTED = 'nothing in the project: the native install does not do this yet, and pnpm installs as usual'

interface Rule {
  code: string
  match: RegExp
  says: (m: RegExpExecArray) => string
  change: string | ((m: RegExpExecArray) => string)
  routine?: boolean
}

/** The pnpm releases the native install runs under, as a range (`pnpm-releases.ts`). */
function nativeReleases (): string {
  const native = PNPM_RELEASES.filter((r) => r.native === true)
  return `${native[0].version} to ${native.at(-1)!.version}`
}

/** Whether `version` comes before the first release known (`first`): no newer plugin would run under it. */
function olderThanKnown (version: string, first: string): boolean {
  return isSemver(version) && isSemver(first) && compareVersions(version, first) < 0
}

/** Each package's reason: what it is, and what would let the native install lay it out. */
const PACKAGE_REASONS: Record<PackageLeftToPnpm, { label: string, change: string }> = {
  'not-in-lockfile': { label: 'a link:, file: or workspace: dependency', change: 'the native install links registry packages only' },
  'not-registry': { label: 'not a registry package (a git repository, a tarball URL or a directory)', change: 'depend on the registry release of it instead' },
  patched: { label: 'patched (patchedDependencies)', change: 'the native install takes patched packages from pnpm\'s side-effects cache; the head start leaves them to pnpm' },
  'local-dependency': { label: 'depends on a link:, file: or git package', change: 'the native install links registry packages only' },
  'skipped-not-registry': { label: 'an optional package pnpm skips here that is not a plain registry package, which pnpm checks first', change: 'depend on its registry release' },
  'unmarked-under-skipped': { label: 'reached only through optional packages pnpm skips here, yet not marked optional in the lockfile', change: 'nothing in the project: pnpm installs such a package unlinked, which the native install does not reproduce' },
  'engines-unread': { label: 'an engines field the native install cannot evaluate', change: UNSUPPORTED },
  'engine-strict': { label: 'under engineStrict, an engines or platform field this machine does not meet (pnpm refuses it)', change: 'meet its engines, or turn engineStrict off' },
  'pnpm-decides': { label: 'optional or for some platforms only', change: 'pnpm decides whether to install it' },
}

/**
 * The reason the install gives for `leftToPnpm` (the packages it cannot lay out): how many,
 * then each kind with its packages (the first three), e.g. `11 packages need pnpm: patched
 * (patchedDependencies): a@1.0.0, b@2.0.0, …`.
 */
export function packagesNeedPnpm (leftToPnpm: Map<string, PackageLeftToPnpm>): string {
  const byReason = new Map<PackageLeftToPnpm, string[]>()
  for (const [depPath, why] of leftToPnpm) byReason.set(why, [...(byReason.get(why) ?? []), depPath])
  const groups = [...byReason].map(([why, depPaths]) =>
    `${PACKAGE_REASONS[why].label}: ${depPaths.slice(0, 3).join(', ')}${depPaths.length > 3 ? `, … (${depPaths.length})` : ''}`)
  return `${leftToPnpm.size} ${leftToPnpm.size === 1 ? 'package needs' : 'packages need'} pnpm: ${groups.join('; ')}`
}

/** What would change each kind of package reason `reason` names. */
function packageChanges (reason: string): string {
  const changes = Object.values(PACKAGE_REASONS)
    .map((r) => ({ at: reason.indexOf(`${r.label}: `), change: r.change }))
    .filter((r) => r.at !== -1).sort((a, b) => a.at - b.at).map((r) => r.change)
  return [...new Set(changes)].join('; ') || DOCS
}

/** What pnpm's own install does when it builds a package this time, and the cache then has it. */
const CACHED_NEXT = 'pnpm builds it this time and caches the result, and the next fresh clone on this store takes it from the cache natively'

/** The releases whose builds the native install runs (in words, and the newest), when `why` (a reason it did not build) is the running release; else null. */
function buildingRelease (why: string | undefined): { running: string, native: string, newest: string } | null {
  const m = why == null ? null : /^pnpm (\S+) runs the builds itself \(the native install runs them only under pnpm (.+), whose build step it reproduces\)$/.exec(why)
  return m == null ? null : { running: m[1], native: m[2], newest: m[2].split(' ').at(-1)! }
}

/** Why the native install did not build a package (`them`: several) as pnpm would (`why`), as part of a sentence. */
export function notBuiltHere (why: string, them = false): string {
  const release = buildingRelease(why)
  if (release != null) return `under pnpm ${release.running} the native install leaves builds to pnpm (it runs them only under pnpm ${release.native})`
  return `the native install does not build ${them ? 'them' : 'it'} as pnpm would here (${why})`
}

/** What the reason `everyInstallReason` (side-effects.ts) writes says: the builds, those known so from another key only, and why not native. */
function everyInstallSays (m: RegExpExecArray): string {
  const them = m[1].includes(', ')
  const likely = m[2] != null ? ` (${m[2]}: most likely, as pnpm recorded for another set of dependencies)` : ''
  return `pnpm builds ${m[1]} on every install${likely}: ${them ? 'their builds change' : 'its build changes'} no file, and pnpm never takes such a build from its side-effects cache; ${notBuiltHere(m[3], them)}`
}

/**
 * What the reason `projectScriptsWithBuilds` (native-install.ts) writes says: pnpm's install
 * runs the project's `scripts` after the layout, because of `why`, and would record the builds
 * (`verb`, `first`) otherwise than stock.
 */
function projectScriptsSays (m: RegExpExecArray): string {
  const [, scripts, why, verb, first] = m
  const release = buildingRelease(why)
  const notHere = release != null
    ? `under pnpm ${release.running} the native install leaves them to pnpm: it runs a project's scripts only under pnpm ${release.native}`
    : `the native install does not run them as pnpm would here: ${why}`
  return `the project's ${scripts} ${scripts.includes(', ') ? 'are' : 'is'} run by pnpm's own install after the native layout (${notHere}), and that install would record the builds pnpm ${verb} (${first}, …) otherwise than stock does`
}

/** What would let the native install run a project's own `scripts` itself, by why it did not (`why`). */
function projectScriptsChange (scripts: string, why: string): string {
  const release = buildingRelease(why)
  if (release != null) return `${pin(release.newest)}, under which the native install runs the project's ${scripts} itself, or drop the project's ${scripts} if an install does not need it`
  return `the native install runs the project's ${scripts} itself once this no longer holds: ${why}`
}

/** How to move a project to the release whose builds the native install runs. */
const pin = (version: string): string => `pin pnpm ${version} (packageManager in package.json)`

/**
 * What would change a build or patch the side-effects cache lacks, by why the native install
 * did not run it (`why`: none when it does not run builds at all here): mostly nothing, as pnpm
 * caches what it builds; but not when pnpm writes no cache (it builds on every install) or
 * fails as well (a patch that does not apply).
 */
function missChange (why: string | undefined): string {
  if (why === 'the side-effects cache is not written') return 'let pnpm write its side-effects cache (sideEffectsCache true or { write: true }, sideEffectsCacheReadonly off): as it is, pnpm builds it on every install and caches nothing for the native install to take'
  if (why?.startsWith('its patch failed (') === true) return 'fix the patch (`pnpm patch`, then `pnpm patch-commit`): pnpm cannot apply it either, and its install fails'
  // Cached only if it builds: one that fails pnpm skips again on every install.
  if (why?.startsWith('an optional package, whose failed build pnpm ') === true) return `nothing if its build succeeds: ${CACHED_NEXT}; if it fails, pnpm skips it on every install (to have that done natively: ${pin(PNPM_RELEASES.at(-1)!.version)})`
  if (why?.startsWith('a scriptShell that is not there (') === true) return 'point scriptShell at a shell that is there, or unset it: pnpm cannot run the build either (ERR_PNPM_SCRIPT_SHELL_NOT_FOUND)'
  const release = buildingRelease(why)
  if (release != null) return `nothing: ${CACHED_NEXT} (to have the builds the cache lacks run natively too: ${pin(release.newest)})`
  if (why === 'a pnpm not started by its entry script') return `nothing: ${CACHED_NEXT}; the builds the cache lacks are run natively only by a pnpm started by its entry script (pnpm.mjs), not a single executable`
  return `nothing: ${CACHED_NEXT}`
}

/**
 * What would change builds pnpm runs on every install (ones that change no file, which its
 * cache never gives back) of the packages `depPaths`, by why the native install did not run
 * them (`why`).
 */
function everyInstallChange (depPaths: string[], why: string): string {
  const release = buildingRelease(why)
  const names = [...new Set(depPaths.map((depPath) => /^(@?[^@]+)@/.exec(depPath)![1]))]
  const denied = names.map((name) => `${name}: false`).join(', ')
  const one = names.length === 1
  return `${release != null ? `${pin(release.newest)}, under which the native install runs such builds itself, or ` : ''}deny ${one ? `${names[0]}'s build` : 'their builds'} (allowBuilds: ${denied}) if the project does not need ${one ? 'it' : 'them'}`
}

const RULES: Rule[] = [
  // Routine: pnpm's own work, which the native install has no part in.
  { code: 'modules-exist', match: /^(?:\S+\/)?node_modules is not empty$/, says: () => 'node_modules already exists, so pnpm updates it (the native install only fills an empty one, as in a fresh clone)', change: 'nothing: a fresh clone (or `rm -rf node_modules`) installs natively unless something else leaves it to pnpm, as `cas-native-explain` tells (`pnpm dlx @cas/pnpm-plugin-native`)', routine: true },
  { code: 'resolves', match: /^pnpm resolves /, says: () => 'pnpm resolves dependencies in this install (no lockfile, --fix-lockfile, --update-checksums or preferFrozenLockfile false)', change: 'install from a committed, up-to-date lockfile', routine: true },
  { code: 'no-lockfile', match: /^no lockfile$/, says: () => 'there is no pnpm-lock.yaml yet', change: 'commit the lockfile pnpm writes now; the next fresh clone installs natively', routine: true },
  { code: 'plain-resolves', match: /^a plain install, which resolves: (.*)$/, says: (m) => `pnpm resolves in this install and writes the lockfile again: ${m[1]}`, change: 'nothing: commit the lockfile pnpm writes now; the next fresh clone installs natively', routine: true },
  { code: 'outdated-lockfile', match: /^the lockfile is not up to date with ((?:\S+\/)?package\.json) \((.*)\)$/, says: (m) => `the lockfile is not up to date with ${m[1]} (${m[2]})`, change: 'run `pnpm install` and commit the lockfile', routine: true },
  { code: 'nothing-to-write', match: /^nothing is to be written$|^--lockfile-only$|^--filter$|^--force$|^not every dependency group is installed$/, says: (m) => `this install asks for something else (${m[0]})`, change: 'a plain `pnpm install` of the whole project installs natively', routine: true },
  { code: 'no-dependencies', match: /^a lockfile without dependencies$/, says: () => 'the project has no dependencies', change: 'nothing to install', routine: true },

  // The pnpm that runs.
  { code: 'pnpm-version', match: /^pnpm (\S+) is not one of the releases checked \((\S+) to (\S+)\)$/, says: (m) => `this is pnpm ${m[1]}, which the native install has not been checked against (it knows ${m[2]} to ${m[3]})`, change: (m) => `run a pnpm release it runs under (${nativeReleases()}; packageManager in package.json)${olderThanKnown(m[1], m[2]) ? '' : ', or a release of the plugin that knows pnpm\'s newer ones'}` },
  { code: 'pnpm-version', match: /^pnpm (\d+\.\d+\.\d+\S*): (.*)$/, says: (m) => `under pnpm ${m[1]} the native install does not run: ${m[2]}`, change: () => `run a pnpm release it runs under (${nativeReleases()}; packageManager in package.json)` },
  { code: 'windows', match: /^Windows/, says: () => 'pnpm runs on Windows, whose command shims the native install does not write', change: 'none on Windows; Linux and macOS install natively' },

  // Settings.
  { code: 'node-linker', match: /^nodeLinker (\S+)$/, says: (m) => `nodeLinker is ${m[1]}; the native install lays out pnpm's isolated node_modules only`, change: 'use nodeLinker: isolated (the default)' },
  { code: 'layout-setting', match: /^(enableGlobalVirtualStore|enableModulesDir false|virtualStoreType \S+|sharedWorkspaceLockfile false|symlink false|virtualStoreOnly|optimisticRepeatInstall false|saveWorkspaceState false|nodeExperimentalPackageMap|a modulesDir of its own|a virtualStoreDir of its own|hoisting settings|hoist patterns|bin settings|git branch lockfiles|registries by prefix)$/, says: (m) => `a setting changes the layout or how pnpm reads it: ${m[1]}`, change: 'use pnpm\'s default for that setting' },
  { code: 'frozen-store', match: /^frozenStore$/, says: () => 'frozenStore: pnpm only reads the store here, and the native install may write to it (packages it downloads, the results of builds it runs)', change: 'drop frozenStore where the store may be written' },
  { code: 'pacquet', match: /^pacquet installs$/, says: () => 'pacquet, pnpm\'s Rust installer, is configured and installs instead', change: 'use one of the two' },
  { code: 'other-pnpmfiles', match: /^other pnpmfiles$/, says: () => 'other pnpmfiles are loaded; their hooks may change what pnpm installs', change: 'move their hooks out (or drop them) so that the plugin is the only pnpmfile' },
  { code: 'ignore-pnpmfile', match: /^--ignore-pnpmfile$/, says: () => 'pnpmfiles are ignored (--ignore-pnpmfile)', change: 'drop --ignore-pnpmfile', routine: true },
  { code: 'project-below', match: /^a project below the lockfile dir$|^a workspace root elsewhere$|^no lockfile dir$/, says: (m) => `pnpm runs in a project that is not where the lockfile is (${m[0]})`, change: 'run `pnpm install` at the workspace root' },
  { code: 'workspace', match: /^a workspace pattern|^workspace patterns$|^a workspace project named |^a symbolic link in the workspace|^recursiveInstall false|^dedupeDirectDeps$|^injectWorkspacePackages|injected dependencies|a link to a directory that is not there$|^pnpm runs in a directory that is not a project of the workspace$|is not valid JSON \(left to pnpm\)$/, says: (m) => `the workspace has a layout the native install does not reproduce (${m.input})`, change: UNSUPPORTED },
  { code: 'workspace-plain', match: /a link pnpm's plain install checks its own way$|: the linked project's version .* does not meet |a dependency a project of the workspace may take$/, says: (m) => `a plain \`pnpm install\` decides this workspace's links itself (${m.input})`, change: 'use `pnpm install --frozen-lockfile` (as CI does), which takes the lockfile\'s links as they are' },
  { code: 'patches', match: /^patchedDependencies differ from the lockfile$/, says: () => 'the lockfile\'s patchedDependencies do not match the patch files', change: 'run `pnpm install` and commit the lockfile' },
  { code: 'patches', match: /^((@?[^@]+)@\S*): patched, and pnpm applies the patch itself \(its build is not allowed\), and patches applied under pnpm \S+, whose side-effects upload the native install does not write \(it does under (.+)\)$/, says: (m) => `${m[1]} is patched and its build is not allowed, so pnpm patches it on every install (its side-effects cache is not looked up for it); the native install applies such a patch under pnpm ${m[3]} only`, change: (m) => `allow ${m[2]}'s build (allowBuilds: pnpm then caches it patched, and the native install takes it from the cache), or ${pin(PNPM_RELEASES.at(-1)!.version)}` },
  { code: 'patches', match: /^a patchedDependencies key with a version range|^the patch file of .* cannot be read$|: not the patch pnpm would apply to it$|: patched, and pnpm applies the patch itself \((.*)\)$/, says: (m) => `a patch pnpm applies itself: ${m.input}`, change: 'keep sideEffectsCache on, write allowBuilds as package names (or name@exact version), and name patches by exact version' },
  { code: 'package-extensions', match: /^packageExtensions extend the workspace project (.+)$/, says: (m) => `its packageExtensions extend the workspace project ${m[1]}`, change: UNSUPPORTED },

  // The lockfile and package.json.
  { code: 'pnpmfile-checksum', match: /^the pnpmfiles changed since the lockfile was written/, says: () => 'the lockfile\'s pnpmfileChecksum does not match the pnpmfiles loaded now (the plugin was added or updated without a `pnpm install`)', change: 'run `pnpm install` once and commit pnpm-lock.yaml; until then pnpm refuses --frozen-lockfile (ERR_PNPM_LOCKFILE_CONFIG_MISMATCH)' },
  { code: 'lockfile-settings', match: /^the lockfile was written with other settings$|^pnpm records the lockfile's settings otherwise|^overrides differ from the lockfile$|^packageExtensions differ from the lockfile$|^ignoredOptionalDependencies differ from the lockfile$/, says: (m) => `the lockfile does not match today's settings (${m[0]})`, change: 'run `pnpm install` and commit the lockfile' },
  { code: 'lockfile-version', match: /^lockfileVersion (.*)$/, says: (m) => `the lockfile's version is ${m[1]}, not pnpm 11's 9.0`, change: 'run `pnpm install` with pnpm 11 and commit the lockfile' },
  { code: 'lockfile-shape', match: /^the lockfile has (?!packages no importer)|^pnpm-lock\.yaml |^the lockfile's /, says: (m) => `the lockfile has a part the native install does not read (${m.input})`, change: UNSUPPORTED },
  { code: 'unreached-packages', match: /^the lockfile has packages no importer reaches$/, says: () => 'the lockfile lists packages no project depends on', change: 'run `pnpm install` (pnpm prunes them) and commit the lockfile' },
  { code: 'overrides', match: /^(?:\S*package\.json: )?(?:the override "|overrides ".*" all apply to )/, says: (m) => `overrides the native install does not apply as pnpm does: ${m.input}`, change: UNSUPPORTED },
  { code: 'catalogs', match: /^the catalogs differ|^the lockfile's catalogs|catalog entry for /, says: (m) => `the catalogs: ${m.input}`, change: 'run `pnpm install` and commit the lockfile and pnpm-workspace.yaml' },
  { code: 'manifest-fields', match: /package\.json fields this does not model$|^no package\.json$/, says: (m) => `package.json: ${m[0]}`, change: UNSUPPORTED },
  { code: 'refused', match: /ERR_PNPM_|a version pnpm's lockfile check refuses$/, says: (m) => `pnpm refuses this lockfile: ${m.input}`, change: 'pnpm says what to fix when it refuses it' },
  { code: 'project-engines', match: /^the project's engines/, says: (m) => m.input, change: 'pnpm says which engine when it refuses; meet it' },

  // Scripts and builds.
  { code: 'preinstall', match: /^the project's (\S+) script, which pnpm runs before it links anything$/, says: (m) => `the project has a ${m[1]} script, which pnpm runs before anything is linked`, change: 'move it to postinstall or prepare (pnpm runs those after a native layout)' },
  { code: 'build-every-install', match: /^(\S+(?:, \S+)*): (?:its build changes|their builds change) no file(?: \((.+?): recorded so for another set of dependencies\))?, which .*?, and (.*)$/, says: everyInstallSays, change: (m) => everyInstallChange(m[1].split(', '), m[3]) },
  { code: 'side-effects-miss', match: /^(\S+): no side effects cached for .+?(?:, and (.*))?$/, says: (m) => `the built (or patched) files of ${m[1]} are not in pnpm's side-effects cache yet${m[2] != null ? `, and ${notBuiltHere(m[2])}` : ' (a new store, a new version, or another Node)'}`, change: (m) => missChange(m[2]) },
  { code: 'project-scripts-builds', match: /^the project's (.+?), which pnpm runs after the layout \((.*)\), and pnpm then records the builds it (denies|takes from its cache) \((\S+), …\) otherwise than stock$/, says: projectScriptsSays, change: (m) => projectScriptsChange(m[1], m[2]) },
  { code: 'side-effects-key', match: /^(\S+): met twice on a dependency path of a package whose build pnpm allows, where this pnpm release's side-effects cache key depends on the order of the install$/, says: (m) => `${m[1]} is met twice on a dependency path of a package whose build pnpm allows: this pnpm release keys its side-effects cache by a recursive hash that depends on the order pnpm meets the packages in, which the native install does not reproduce`, change: () => `${pin(PNPM_RELEASES.at(-1)!.version)}: from 11.28.1 pnpm's key no longer depends on that order, or deny the build (allowBuilds with false)` },
  { code: 'builds', match: /: requires-build$|builds pnpm denies/, says: (m) => `a dependency has a build script for pnpm to run (${m.input})`, change: 'decide its build under allowBuilds, as `pnpm approve-builds` does (pnpm refuses an undecided one): true to build it (natively too, from pnpm 11.28.1, where pnpm\'s side-effects cache lacks it), false if it needs no build' },

  // Packages.
  { code: 'packages', match: /^\d+ packages? needs? pnpm: /, says: (m) => m.input, change: (m) => packageChanges(m.input) },

  // The store and the registry.
  { code: 'store-unknown', match: /^the store is not known before pnpm picks it$/, says: () => 'the store is on another disk than the project, where pnpm picks a store of its own', change: 'set storeDir (pnpm-workspace.yaml or .npmrc)' },
  { code: 'offline-cold', match: /^(\d+) packages are not in the store, and (.*)$/, says: (m) => `${m[1]} packages are not in the store and the native install does not download them here (${m[2]})`, change: (m) => m[2] === '--offline' ? 'install once online (or from a store that has them)' : 'pnpm downloads with these registry settings; nothing to change' },
  { code: 'policy-setting', match: /^pnpm refuses (minimumReleaseAgeExclude|trustPolicyExclude): (.*)$/, says: (m) => `pnpm refuses the ${m[1]} setting (${m[2]})`, change: (m) => `fix ${m[1]} in pnpm-workspace.yaml: pnpm says how when it refuses it` },
  { code: 'trust-policy', match: /^(\S+): less trust evidence than a version published before it/, says: (m) => `trustPolicy no-downgrade: ${m[1]} has less trust evidence than a version published before it, so pnpm refuses it (ERR_PNPM_TRUST_DOWNGRADE)`, change: (m) => `check ${m[1]}; if it is fine, add it to trustPolicyExclude` },
  { code: 'trust-policy', match: /^(\S+): (?:its full registry metadata did not download|its metadata has no publish times|no publish time in its metadata|not in its metadata)/, says: (m) => `trustPolicy no-downgrade: the trust evidence of ${m[1]} cannot be read from the registry here (${m.input})`, change: 'nothing in the project: pnpm asks the registry itself and says what it finds' },
  { code: 'registry-metadata', match: /^(\S+): its registry metadata did not download/, says: (m) => `the registry's metadata of ${m[1]} did not download, and pnpm's release-age check (minimumReleaseAge) needs it`, change: 'nothing in the project: pnpm asks the registry itself; check the registry if pnpm fails too' },
  { code: 'download', match: / did not download$/, says: (m) => `a download failed: ${m.input}`, change: 'pnpm retries it; check the registry' },
  { code: 'release-age-registry', match: /against minimumReleaseAge first \((.*)\)$/, says: (m) => `pnpm's minimumReleaseAge check needs the registry's release dates, which the native install does not ask for here (${m[1]})`, change: (m) => m[1] === '--offline' ? 'install online (pnpm asks the registry too)' : 'nothing in the project: pnpm asks the registry with these settings itself' },
  { code: 'release-age', match: /minimumReleaseAge/, says: (m) => `pnpm checks the packages' release dates first (${m.input})`, change: 'wait until every version is older than minimumReleaseAge, or exclude it (minimumReleaseAgeExclude)' },
  { code: 'trust-policy', match: /trustPolicy/, says: () => 'trustPolicy no-downgrade: pnpm checks the packages\' trust evidence first', change: 'nothing in the project: after pnpm has verified this lockfile once, the next installs are native' },
  { code: 'store-package', match: /^(\S+): (unverified|unreadable.*|failed.*)$/, says: (m) => `a package in the store could not be used as it is (${m[1]}: ${m[2]})`, change: 'nothing: pnpm installs it from the store or the registry; `pnpm store prune` if it keeps happening' },
  { code: 'failed', match: /^it failed: (.*)$/, says: (m) => `the native install failed (${m[1]}), with nothing recorded`, change: 'nothing: pnpm installs as usual; please report the error to @cas/native' },
  { code: 'shim', match: /^a shim for |has no relative path from|directories\.bin|a command named node|linked apart by this pnpm's build step$/, says: (m) => `a command shim the native install does not write: ${m.input}`, change: UNSUPPORTED },
]

/** What `reason` (a reason the install gave) means for the user. */
export function whyNot (reason: string): WhyNot {
  for (const rule of RULES) {
    const m = rule.match.exec(reason)
    if (m == null) continue
    return { code: rule.code, says: rule.says(m), change: typeof rule.change === 'string' ? rule.change : rule.change(m), routine: rule.routine === true }
  }
  return { code: 'other', says: reason, change: DOCS, routine: false }
}
