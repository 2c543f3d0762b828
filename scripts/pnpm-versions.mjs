#!/usr/bin/env node
/**
 * The pnpm release matrix of the native install: each pnpm release the plugin's table enables
 * (`lib/plugin/install/pnpm-releases.ts`, read from dist/) is fetched once into the ignored
 * `.tools/pnpm-versions/<version>/package` (with `npm pack` from the registry npm is configured
 * with: a CI machine has only what the repository's files install), then the native-install
 * end-to-end specs run against it (`CAS_TEST_PNPM=<that dir>`, which the test helpers honour).
 *
 *   node scripts/pnpm-versions.mjs                  every enabled release, every e2e spec
 *   node scripts/pnpm-versions.mjs --ends           the oldest and newest enabled release (CI): a
 *                                                   subset of the e2e specs (ENDS_SUBSET), and the
 *                                                   newest not again when it is the pnpm devDependency,
 *                                                   which `npm test` runs every spec with
 *   node scripts/pnpm-versions.mjs --fetch-only 11.19.0 11.28.0
 *   node scripts/pnpm-versions.mjs 11.22.0 -- __test__/native-install.spec.ts -t cold
 *   node scripts/pnpm-versions.mjs --node 22.13.0 11.28.11 -- __test__/pnpm-report.spec.ts
 *                                                   pnpm (and every process the specs start)
 *                                                   under that Node (`CAS_TEST_NODE`), fetched
 *                                                   once into `.tools/node-versions/`
 *
 * Then (without `--` or versions named) the pnpm 10 spec, with the pnpm 10 release a project
 * shared with pnpm 10 users was seen with (`CAS_TEST_PNPM10`); with `--ends`, also the newest
 * release under the oldest Node the plugin says it runs on (its `engines`: pnpm 11's floor), on
 * FLOOR_SUBSET. Exits non-zero when a run fails; the summary says which.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { npmPackage } from './npm-package.mjs'

const repoDir = path.join(import.meta.dirname, '..')
const toolsDir = path.join(repoDir, '.tools', 'pnpm-versions')
/** The pnpm 10 release `__test__/pnpm10.spec.ts` runs. */
const PNPM_10 = '10.34.5'
/**
 * The e2e tests CI runs against the ends of the table: the generated projects (peers, aliases,
 * bins of every kind, hoisting, optional and platform packages), the generated workspace, a
 * cold store, the supply-chain policies, the project's own scripts, the e2e fixture, and what
 * releases differ in: the catalog resolution check, builds and patches from the side-effects
 * cache. Left out: the big real lockfiles (alotta-modules, the starter apps), minutes each,
 * which the newest release runs in `npm test`.
 */
const ENDS_SUBSET = ['__test__/pnpm-releases.spec.ts', '__test__/native-install.spec.ts', '-t',
  'table of pnpm releases|release its state was not checked|a workspace of several projects, installed from|peers-aliases-bins|hoisting-bundled|public-hoist-optional|cold store|minimumReleaseAge|trustPolicy|optional packages|own install|e2e fixture|scripts off|blobs whose modes drifted|catalog entry was resolved|cached by an earlier install']
/**
 * What CI runs under the oldest Node the plugin runs on: what users see (every reporter, against
 * the release's own output), and a warm, a cold and a workspace's install from the ends subset.
 */
const FLOOR_SUBSET = ['__test__/pnpm-report.spec.ts', '__test__/native-install.spec.ts', '-t',
  'what pnpm prints|a workspace of several projects, installed from|cold store|own install|e2e fixture']
/**
 * The specs that run pnpm's CLI with the plugin's native install (pnpm-report.spec: what each
 * reporter prints, against the release's own output; under a minute a release).
 */
const E2E_SPECS = ['__test__/pnpm-releases.spec.ts', '__test__/native-install.spec.ts', '__test__/hostile-lockfile.spec.ts', '__test__/pnpm-report.spec.ts']

/** `<toolsDir>/<version>/package`, fetched with `npm pack` and unpacked when it is not there yet. */
export function fetchPnpm (version) {
  return npmPackage('pnpm', version, path.join(toolsDir, version, 'package'))
}

/**
 * The `node` binary of Node `version` for this platform, from the registry's
 * `node-<platform>-<arch>` package (what the `node` devDependency installs), fetched once into
 * the ignored `.tools/node-versions/<version>/package`.
 */
export function fetchNode (version) {
  const name = `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`
  const pkg = npmPackage(name, version, path.join(repoDir, '.tools', 'node-versions', version, 'package'))
  return path.join(pkg, 'bin', process.platform === 'win32' ? 'node.exe' : 'node')
}

/** The Node the specs run on: the `node` devDependency's (24, as `npm test`'s), else this one. */
const specNode = [path.join(repoDir, 'node_modules', 'node', 'bin', 'node')].find((f) => fs.existsSync(f)) ?? process.execPath

/** `vitest run <args>` with `env` added to this process's environment; whether it passed. */
function vitest (args, env) {
  const run = spawnSync(specNode, [path.join(repoDir, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...args], { cwd: repoDir, stdio: 'inherit', env: { ...process.env, ...env } })
  return run.status === 0
}

/** The oldest Node the plugin says it runs on (its `engines`, `>=22.13`), as a version. */
function nodeFloor () {
  const { engines } = JSON.parse(fs.readFileSync(path.join(repoDir, 'npm', 'pnpm-plugin-native', 'package.json'), 'utf8'))
  const m = /^>=(\d+)\.(\d+)(?:\.(\d+))?$/.exec(engines.node)
  if (m == null) throw new Error(`the plugin's engines.node (${engines.node}) is not >=X.Y.Z`)
  return `${m[1]}.${m[2]}.${m[3] ?? 0}`
}

async function main (argv) {
  const { PNPM_RELEASES } = await import(path.join(repoDir, 'dist', 'plugin', 'install', 'pnpm-releases.js'))
  const dash = argv.indexOf('--')
  const ours = dash === -1 ? argv : argv.slice(0, dash)
  // `--node <version>`: every run under that Node.
  const nodeAt = ours.indexOf('--node')
  const nodeEnv = nodeAt === -1 ? {} : { CAS_TEST_NODE: fetchNode(ours.splice(nodeAt, 2)[1]) }
  const vitestArgs = dash !== -1 ? argv.slice(dash + 1) : ours.includes('--ends') ? ENDS_SUBSET : E2E_SPECS
  const enabled = PNPM_RELEASES.filter((r) => r.native === true).map((r) => r.version)
  let versions = ours.filter((a) => !a.startsWith('--'))
  if (ours.includes('--ends')) {
    const reference = JSON.parse(fs.readFileSync(path.join(repoDir, 'node_modules', 'pnpm', 'package.json'), 'utf8')).version
    versions = [enabled[0], ...(enabled.at(-1) !== reference ? [enabled.at(-1)] : [])]
  }
  if (versions.length === 0) versions = enabled
  const failed = []
  for (const version of versions) {
    const pnpmDir = fetchPnpm(version)
    if (ours.includes('--fetch-only')) {
      console.log(`pnpm ${version}: ${pnpmDir}`)
      continue
    }
    console.log(`\n=== pnpm ${version} (${pnpmDir}) ===`)
    if (!vitest(vitestArgs, { CAS_TEST_PNPM: pnpmDir, ...nodeEnv })) failed.push(version)
  }
  if (ours.includes('--fetch-only')) return
  if (dash === -1 && ours.every((a) => a.startsWith('--'))) {
    const pnpm10 = fetchPnpm(PNPM_10)
    console.log(`\n=== pnpm ${PNPM_10} on a project pnpm 11 added the plugin to ===`)
    versions.push(PNPM_10)
    if (!vitest(['__test__/pnpm10.spec.ts'], { CAS_TEST_PNPM10: pnpm10, ...nodeEnv })) failed.push(PNPM_10)
  }
  if (ours.includes('--ends') && dash === -1) {
    const floor = nodeFloor()
    console.log(`\n=== Node ${floor} (the plugin's engines), the pnpm devDependency ===`)
    versions.push(`Node ${floor}`)
    if (!vitest(FLOOR_SUBSET, { CAS_TEST_NODE: fetchNode(floor) })) failed.push(`Node ${floor}`)
  }
  console.log(`\npnpm releases: ${versions.length - failed.length} of ${versions.length} passed${failed.length > 0 ? `; failed: ${failed.join(', ')}` : ''}`)
  process.exitCode = failed.length > 0 ? 1 : 0
}

if (process.argv[1] != null && path.resolve(process.argv[1]) === import.meta.filename) await main(process.argv.slice(2))
