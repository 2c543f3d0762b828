/**
 * The table of pnpm releases (`pnpm-releases.ts`) against the releases' own bundles: for the
 * pnpm under test (the devDependency, or `CAS_TEST_PNPM` in `npm run test:pnpm-versions`) and
 * every other enabled release fetched into `.tools/pnpm-versions/`, what the table says the
 * release writes is what its code writes: the settings its workspace state records, whether
 * it has the `validation` block, its `localDependencies` and the projects' commands
 * (`workspaceBins`), how its shims quote paths, and what
 * its lockfile verifier requires of a recorded verdict.
 * The end-to-end specs then compare whole installs with the release's own.
 */
import fs from 'node:fs'
import path from 'node:path'
import semver from 'semver'
import { describe, expect, it } from 'vitest'
import { blobModeRule, frozenCheckRules, nativeRelease, peerEdgeRuleOf, PNPM_RELEASES, reporterRedrawOf, stateFormOf, takesFetcherDelegation, tarballRowsOf, type PnpmRelease } from '../dist/plugin/install/pnpm-releases.js'
import { isOwnShimWriter } from '../dist/plugin/install/bin-shim.js'
import { pnpmPackageDir, referencePnpmDir, repoDir, testedPnpmVersion } from './helpers/pnpm-cli.js'

/** The bundles at hand: the one under test, the reference, and the fetched ones. */
function bundles (): Map<string, string> {
  const found = new Map<string, string>()
  const add = (dir: string): void => {
    const file = path.join(dir, 'dist', 'pnpm.mjs')
    if (!fs.existsSync(file)) return
    const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }
    found.set(version, file)
  }
  add(pnpmPackageDir)
  add(referencePnpmDir)
  const fetched = path.join(repoDir, '.tools', 'pnpm-versions')
  for (const version of fs.existsSync(fetched) ? fs.readdirSync(fetched) : []) add(path.join(fetched, version, 'package'))
  return found
}

/** The string literals of the array assigned to `name` in `text` (comments dropped). */
function arrayLiteral (text: string, start: RegExp): string[] {
  const at = start.exec(text)
  if (at == null) throw new Error(`${String(start)} is not in the bundle`)
  const body = text.slice(at.index + at[0].length, text.indexOf(']', at.index + at[0].length)).replace(/\/\/.*$/gm, '')
  return [...body.matchAll(/"([^"]+)"/g)].map((m) => m[1])
}

/** What the table says, read back out of a release's bundle. */
function fromBundle (text: string): Pick<PnpmRelease['state'], 'settings' | 'more' | 'registryRoutes' | 'validation' | 'workspaceBins'> & Pick<PnpmRelease, 'shimWriter' | 'packageMap' | 'modulesRegistries' | 'peerBins' | 'verdictMissingTime' | 'missingTimePassed' | 'verdictRouting' | 'projectHoisting' | 'catalogResolutions' | 'publishLinks' | 'currentLockfilePublish' | 'shimBase' | 'sideEffectsKeys' | 'skipRule' | 'peerEdgeRule' | 'importMethodLogged' | 'reporterRedraw' | 'skippedLinks' | 'keptShimBytes'> & { shimQuoting: string, shimHelpers: string, verdictChecks: string[] } {
  const settings = arrayLiteral(text, /\n\s*WORKSPACE_STATE_SETTING_KEYS = \[/)
  // Before 11.28.7, the list alone: `pick(WORKSPACE_STATE_SETTING_KEYS, settings)`.
  const picked = text.includes('settings: pick_default(WORKSPACE_STATE_SETTING_KEYS,') ? [] : arrayLiteral(text, /settings: pick_default\(\[\.\.\.WORKSPACE_STATE_SETTING_KEYS,?/)
  // `registryPrefixes` and `defaultRegistry` are recorded only with registries by prefix, which the native install leaves to pnpm.
  const more = picked.filter((k) => k !== 'registryRoutes' && k !== 'registryPrefixes' && k !== 'defaultRegistry')
  const validation = !text.includes('recordedAtNs') ? 'none' : text.includes('// ../workspace/state/lib/localDependencies.js') ? 'local-dependencies' : 'files'
  const zkochan = /\/@zkochan\/cmd-shim\/9\.0\.[67]\//.test(text)
  // (`@zkochan/cmd-shim`'s template has `"$basedir/${shTarget}"` too: neither form of pnpm's own.)
  // eslint-disable-next-line no-template-curly-in-string -- the bundle's source text
  const shimQuoting = zkochan ? 'neither' : text.includes('`"$basedir_abs"/${shSingleQuote(rawTarget)}`') ? 'single' : /`"\$basedir(?:_abs)?\/\$\{(?:rawTarget|shTarget)\}"`/.test(text) ? 'double' : 'neither'
  const shimHelpers = text.includes('\nrun_helper() {\n') ? 'run_helper' : text.includes('target=$(command -p readlink "$link")') ? 'command -p' : 'neither'
  // The checks a verdict records: the verifier's policy snapshot's flags, and its cache identities'.
  // (Before 11.28.3 the snapshot is written inline, the verifier's `policy`.)
  const snapshot = /\nfunction snapshotVerifierPolicy\([^)]*\) \{[\s\S]*?\n\}/.exec(text)?.[0] ??
    /\n\s*policy: \{\n[\s\S]*?\n\s*\},\n\s*canTrustPastCheck/.exec(/\nfunction createNpmResolutionVerifier\([^)]*\) \{[\s\S]*?\n\}\n/.exec(text)?.[0] ?? '')?.[0] ?? ''
  const verdictChecks = [...snapshot.matchAll(/^\s*(\w+): true,?$/gm), ...text.matchAll(/\n\s*\w+_CACHE_IDENTITY = \{\n\s*policy: \{ (\w+): true \}/g)].map((m) => m[1]).sort()
  const workspaceBins = text.includes('validation.workspaceBins[importerId] = ')
  return {
    settings,
    more,
    registryRoutes: picked.includes('registryRoutes'),
    validation,
    workspaceBins,
    shimQuoting,
    shimHelpers,
    verdictChecks,
    // pnpm's own: with the PATH guard (its shims drop node_modules from PATH), or its first form.
    shimWriter: text.includes('/@zkochan/cmd-shim/9.0.7/') ? 'cmd-shim 9.0.7' : text.includes('/@zkochan/cmd-shim/9.0.6/') ? 'cmd-shim 9.0.6' : text.includes('\n    */node_modules/*|*/node_modules) ;;\n') ? 'pnpm' : 'pnpm 11.27.1',
    // Written on every install, not only under nodeExperimentalPackageMap.
    packageMap: text.includes('const shouldWritePackageMap = opts3.enableModulesDir !== false'),
    modulesRegistries: text.includes('      registries: opts3.registries,\n      skipped: Array.from(skipped),'),
    peerBins: text.includes('\nasync function autoInstalledPeerBinDirs(') || text.includes('\nfunction autoInstalledPeerBinDirs('),
    verdictMissingTime: snapshot.includes('minimumReleaseAgeIgnoreMissingTime'),
    // The lockfile check's age test without a publish time: passed only where the full metadata has no times at all, or for any version.
    missingTimePassed: [...text.matchAll(/\nasync function (?:runAgeCheck|reportMissingPublishTime)\([^)]*\) \{[\s\S]*?\n\}/g)].some((m) => m[0].includes('const timeMap = await fetchFullMetaTime(')) ? 'metadata' : 'version',
    verdictRouting: snapshot.includes('namedRegistriesRouting'),
    // Before 11.28.0 the projects are the first children of the hoisting graph's root.
    projectHoisting: text.includes('hoistedWorkspaceDeps = Object.fromEntries(Object.entries(opts3.hoistedWorkspacePackages') ? 'linked' : 'reserved',
    catalogResolutions: text.includes('\nfunction catalogResolutionIsStale('),
    publishLinks: text.includes('const lockfileLinksPublishDirectory = '),
    // The importers' filter (the current lockfile is written from it) keeps the publish directory.
    currentLockfilePublish: /\nfunction filterImporter\([^)]*\) \{[\s\S]*?\n\}/.exec(text)?.[0].includes('publishDirectory: importer.publishDirectory') === true,
    shimBase: text.includes('SH_SHIM_BASEDIR_ABS_PRELUDE') ? 'basedir_abs' : 'basedir',
    // The format marker; before it, the recursive hash that cuts a path where an id repeats.
    skipRule: text.includes('\nfunction classifyDeps(ctx, depEdges,') ? 'edges' : text.includes('\nfunction pickPkgsWithAllDeps(lockfile, depPaths, importerIdSet,') ? 'first-reach' : 'neither' as never,
    // The graph builder's location of a dependency it skips: none, or the empty path (11.28.3).
    skippedLinks: /not found in \$\{WANTED_LOCKFILE\}`\);\n\s*\}\n\s*return "";/.test(text) ? 'working directory' : 'none',
    sideEffectsKeys: text.includes('SIDE_EFFECTS_FORMAT_KEY = "format=2"') ? 'format=2' : /Object\.keys\(node\.children\)\.length && !parents\.has\((?:node\.)?fullPkgId\)/.test(text) ? 'recursive' : 'neither' as never,
    // The filter's optional peers skipped with a group left out, and whether only those a package's path binds.
    // The import method logged in pnpm's own thread; before, only in the workers' importer.
    importMethodLogged: text.includes('\nfunction reportPackageImported('),
    // The default reporter's redraw: cursor up by the frame's newlines, or ansi-diff's rows.
    reporterRedraw: text.includes('\nfunction countRows(frame) {') ? 'newlines' : text.includes('import_ansi_diff.default)(') ? 'rows' : 'neither' as never,
    // The frozen install's build step links the built packages' commands again (and their dependents').
    relinksBuilt: text.includes('\nasync function relinkBuiltVirtualStoreBins('),
    // The build step unlinks an optional package whose build failed from the projects' and the hoisting's node_modules.
    unlinksFailedOptional: /\n\s*const links = await linksTo\(depNode\.dir, opts\d*\.linkedModulesDirs \?\? \[\]\);/.test(text),
    // The hook manifest a script's error is named by: the manifest's own `_id` first, or its name and version over it.
    ownScriptId: /= \{ _id: getId\(manifest\), \.\.\.manifest \};/.test(text) ? true : /= \{ \.\.\.manifest, _id: getId\(manifest\), scripts \};/.test(text) ? false : 'neither' as never,
    peerEdgeRule: !text.includes('\nfunction getPeerSatisfactionEdgesToSkip(') ? 'none' : /providers\.has\(removePeersSuffix\(\w+\)\)/.test(text) ? 'bound-peers' : 'optional-peers',
    // The largest shim the bin linker reads back (to keep it), less one.
    keptShimBytes: text.includes('stat2.size < CMD_SHIM_MAX_SIZE') ? Number(/\n\s*CMD_SHIM_MAX_SIZE = (\d+) \* 1024;/.exec(text)?.[1]) * 1024 : NaN,
  }
}

describe('the table of pnpm releases', () => {
  it('is in release order, each once, the reference pnpm (the devDependency) the newest and enabled', () => {
    const versions = PNPM_RELEASES.map((r) => r.version)
    expect([...versions].sort(semver.compare)).toEqual(versions)
    expect(new Set(versions).size).toBe(versions.length)
    const reference = JSON.parse(fs.readFileSync(path.join(referencePnpmDir, 'package.json'), 'utf8')).version
    expect(versions.at(-1)).toBe(reference)
    expect(typeof nativeRelease(reference)).toBe('object')
  })

  it('the rules by version alone (the head start runs under any release) take a version not said for the newest', () => {
    for (const unsaid of [undefined, 'not-a-version']) {
      expect([blobModeRule(unsaid), takesFetcherDelegation(unsaid), frozenCheckRules(unsaid), peerEdgeRuleOf(unsaid), reporterRedrawOf(unsaid)]).toEqual(['linkable', true, { catalogResolutions: true, publishLinks: true }, 'bound-peers', 'rows'])
    }
    expect(['11.7.0', '11.8.0', '11.9.0', '11.9.1', '11.10.0'].map(reporterRedrawOf)).toEqual(['rows', 'newlines', 'newlines', 'newlines', 'rows'])
    expect(['11.27.1', '11.28.0', '11.28.6', '11.28.7'].map(peerEdgeRuleOf)).toEqual(['none', 'optional-peers', 'optional-peers', 'bound-peers'])
    expect([blobModeRule('11.9.0'), takesFetcherDelegation('11.11.0'), frozenCheckRules('11.21.0')]).toEqual(['none', false, { catalogResolutions: false, publishLinks: false }])
    expect([blobModeRule('11.28.5'), takesFetcherDelegation('11.12.0'), frozenCheckRules('11.25.0')]).toEqual(['exact', true, { catalogResolutions: true, publishLinks: false }])
  })

  it('the rows of the tarballs it downloads: the manifest\'s gypfile kept (and read for requiresBuild) from 11.28.0, as each release\'s worker has it', () => {
    expect(['11.7.0', '11.27.1', '11.28.0', '11.28.11', undefined, 'not-a-version'].map(tarballRowsOf)).toEqual(['@pnpm/worker@1100', '@pnpm/worker@1100', 'pnpm@11.28', 'pnpm@11.28', 'pnpm@11.28', 'pnpm@11.28'])
    for (const [version, file] of bundles()) {
      const worker = path.join(path.dirname(file), 'worker.js')
      if (!fs.existsSync(worker)) continue
      const fields = arrayLiteral(fs.readFileSync(worker, 'utf8'), /\n\s*(?:var )?BUNDLED_MANIFEST_FIELDS = \[/)
      expect(fields.includes('gypfile'), version).toBe(tarballRowsOf(version) === 'pnpm@11.28')
    }
  })

  it('builds the cache lacks run natively from 11.28.1 (the build step reproduced), a failed optional package unlinked from 11.28.4, their commands linked again after them from 11.28.10', () => {
    const from = (first: string) => PNPM_RELEASES.map((r) => r.version).filter((v) => semver.gte(v, first))
    expect(PNPM_RELEASES.filter((r) => r.runsBuilds).map((r) => r.version)).toEqual(from('11.28.1'))
    expect(PNPM_RELEASES.filter((r) => r.unlinksFailedOptional).map((r) => r.version)).toEqual(from('11.28.4'))
    expect(PNPM_RELEASES.filter((r) => !r.ownScriptId).map((r) => r.version)).toEqual(from('11.28.4'))
    expect(PNPM_RELEASES.filter((r) => r.relinksBuilt).map((r) => r.version)).toEqual(from('11.28.10'))
  })

  it('the pnpm under test is one the native install runs under, or the e2e specs have nothing to compare', () => {
    expect(nativeRelease(testedPnpmVersion)).toMatchObject({ version: testedPnpmVersion, native: true })
  })

  const enabled = [...bundles()].filter(([version]) => PNPM_RELEASES.some((r) => r.version === version && r.native === true))
  it.each(enabled)('pnpm %s: its workspace state and shims are as the table says', (version, file) => {
    const release = PNPM_RELEASES.find((r) => r.version === version)!
    const { state, shimQuoting, shimHelpers, verdictChecks, shimWriter, packageMap, modulesRegistries, peerBins, verdictMissingTime, missingTimePassed, verdictRouting, projectHoisting, catalogResolutions, publishLinks, currentLockfilePublish, shimBase, sideEffectsKeys, skipRule, peerEdgeRule, importMethodLogged, reporterRedraw, skippedLinks, keptShimBytes, relinksBuilt, unlinksFailedOptional, ownScriptId } = release
    // @zkochan/cmd-shim's shims have neither form of pnpm's own.
    const ownShims = isOwnShimWriter(shimWriter)
    expect(fromBundle(fs.readFileSync(file, 'utf8'))).toEqual({
      settings: [...state.settings],
      more: [...state.more],
      registryRoutes: state.registryRoutes,
      validation: state.validation,
      workspaceBins: state.workspaceBins,
      shimQuoting: ownShims ? shimQuoting : 'neither',
      shimHelpers: ownShims ? shimHelpers : 'neither',
      verdictChecks: [...verdictChecks].sort(),
      shimWriter,
      packageMap,
      modulesRegistries,
      peerBins,
      verdictMissingTime,
      missingTimePassed,
      verdictRouting,
      projectHoisting,
      catalogResolutions,
      publishLinks,
      currentLockfilePublish,
      // (`@zkochan/cmd-shim`'s shims take theirs from `$basedir` too.)
      shimBase: ownShims ? shimBase : 'basedir',
      sideEffectsKeys,
      skipRule,
      peerEdgeRule,
      importMethodLogged,
      reporterRedraw,
      skippedLinks,
      keptShimBytes,
      relinksBuilt,
      unlinksFailedOptional,
      ownScriptId,
    })
    expect(stateFormOf(version)).toBe(state)
    expect(buildUploadOf(fs.readFileSync(file, 'utf8'), fs.readFileSync(path.join(path.dirname(file), 'worker.js'), 'utf8'))).toEqual({ buildUpload: release.buildUpload, uploadsDeniedPatched: release.uploadsDeniedPatched })
  })
})

/**
 * A release's side-effects upload, read out of its bundle and worker: whose `addFilesFromDir` it
 * is (symlinks recorded, and the diff that leaves base files under `node_modules/` out: pnpm
 * 11.28's; neither: `@pnpm/worker@1100`'s; symlinks with the older diff: 11.28.10's), and
 * whether its build step records a denied patched package (no `buildPending` check).
 */
function buildUploadOf (bundle: string, worker: string): Pick<PnpmRelease, 'buildUpload' | 'uploadsDeniedPatched'> {
  const recordsSymlinks = worker.includes('recordSymlinks: sideEffectsCacheKey != null')
  const newDiff = worker.includes('(file) => !sideEffectsFiles.has(file) && !file.startsWith("node_modules/")')
  const oldDiff = worker.includes('const allFiles = /* @__PURE__ */ new Set([...baseFiles.keys(), ...sideEffectsFiles.keys()])')
  return {
    buildUpload: recordsSymlinks ? (newDiff ? 'pnpm@11.28' : oldDiff ? 'pnpm@11.28.10' : 'neither' as never) : oldDiff ? '@pnpm/worker@1100' : 'neither' as never,
    uploadsDeniedPatched: !bundle.includes('buildPending'),
  }
}
