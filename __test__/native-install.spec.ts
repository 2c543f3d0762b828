/**
 * The native frozen install against stock pnpm 11.28.11, with the real CLI and the plugin as
 * users get it: packed with this machine's platform package, served by a registry stand-in on
 * 127.0.0.1, added with `pnpm add --config`, then fresh clones installed with
 * `pnpm install --frozen-lockfile`. The stock reference is a clone of the same project whose
 * plugin is switched off by its environment (`CAS_NATIVE_INSTALL=0`, no head start, no fetcher),
 * so that everything in it is pnpm's own work, with the same pnpmfile and lockfile.
 *
 * For each project: the whole `node_modules` (every file, mode, symlink and `.bin` shim, and the
 * state files with only their timestamps left out) equals stock's; pnpm says "Already up to
 * date"; a second install changes nothing; `pnpm ls` and `pnpm why` answer as for stock; a
 * changed package.json then makes pnpm resolve and link normally, to stock's result. Projects:
 * the e2e fixture (real npm packages), three generated ones (peer dependencies, aliases, bins of
 * every kind, bundled dependencies, hoisting and bin-name conflicts, an ignored build; public
 * hoisting and optional dependencies), optional packages for other platforms (skipped as pnpm
 * skips them), catalogs (default and named; changed after the lockfile, which pnpm refuses, and
 * `cleanupUnusedCatalogs`), a plain `pnpm install` (no `--frozen-lockfile`: natively when the
 * lockfile is up to date, as pnpm then takes its frozen path; a new dependency left to pnpm), and the alotta-modules lockfile (1,355 real packages,
 * `benchmark/download.mjs`'s corpus). Workspaces: a generated one of three projects (from the
 * root and from a project's directory, scripts off, projects hoisted publicly or not at all,
 * projects' scripts run by pnpm after the layout), and public monorepos (vue-core, unocss, tailwindcss with its patches and builds from the cache,
 * and starlight, solid-start and react-router with scripts on as their repositories have them,
 * installed natively, every project's `node_modules` compared; on vue-core, unocss, tailwindcss,
 * solid-start and react-router a changed package.json then installed on top as stock, with the registry metadata pnpm asks for
 * served from `benchmark/.cache/packuments`; tanstack-query and sveltekit,
 * whose lockfiles stock refuses here, refused the same way). Builds and patches: taken from
 * pnpm's side-effects cache when an earlier install recorded them (a log the build scripts
 * append to shows none ran); when it has not (a cold store, a build that changed nothing), run
 * natively as pnpm runs them, once, with the side effects pnpm records (a script records its
 * environment; a workspace's too; under `shellEmulator`, pnpm's emulator runs a script; a real Node-API addon with a
 * binding.gyp and no install script, built with pnpm's node-gyp; a required one that fails: run once, the
 * install ending as stock's, with its lines, error, exit status, tree and no state; one whose command the shell does not find,
 * status 127, which pnpm takes for a failed spawn, required and optional), or left to pnpm (an optional one, the
 * project's own scripts, an older release); left to pnpm when pnpm would not look them up
 * (undecided builds, a patch whose build is not allowed). Blobs whose modes drifted in the store are copied with the modes
 * their names say, as stock copies them, verified or not. Then the installs it leaves to pnpm, untouched: a bin it cannot write (found after
 * the layout, so it also shows that an install stopped halfway is not taken for up to date).
 */
import { spawnSync } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import semver from 'semver'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { isMusl } from '../dist/api/native-platform.js'
import { PLUGIN_NAME } from '../dist/plugin/config-dependency.js'
import { lockedPackages, pnpmNode, projectFixture, repoDir, runPnpm, testedPnpmVersion, type PnpmRun } from './helpers/pnpm-cli.js'
import { blobModeRule, keepsBundled, stateFormOf, PNPM_RELEASES } from '../dist/plugin/install/pnpm-releases.js'
import { compareVersions } from '../dist/plugin/install/semver-range.js'
import { readLockfileFile } from '../dist/plugin/install/lockfile-file.js'
import { DEPENDENCY_GROUPS } from '../dist/plugin/install/virtual-store.js'
import { projectLinkPath } from '../dist/plugin/install/project-registry.js'
import { packedPackage, packPlugin, serveTarballs, type ServedPackage, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'
import { StoreIndex } from '@pnpm/store.index'
import { verifyStore } from './helpers/verify-store.mjs'
import { ensureDownloaded, platformCorpus, registryPackuments, resolvedCorpus, skippedCorpus } from '../benchmark/corpus.mjs'

/** What pnpm prints when it installs from the lockfile itself (its up-to-date check did not end the run). */
const PNPM_INSTALLED = 'Lockfile is up to date, resolution step is skipped'
/**
 * How many times `stdout` says pnpm installs from the lockfile: as often as stock's (once, or
 * never from a project's directory, where pnpm's reporter shows only its own directory's info
 * lines) from the native install's report, more had pnpm's own install run after it.
 */
const fromLockfile = (stdout: string): number => stdout.split(PNPM_INSTALLED).length - 1

/** Where the store (given as pnpm's `storeDir`, unversioned) lists the project at `dir`: its link's target. */
function listedInStore (store: string, dir: string): string {
  return fs.readlinkSync(projectLinkPath(path.join(store, 'v11'), dir))
}

/** The store lists the native clone as `stockStore` lists the stock one: a link of the same form (absolute, or relative from the list) to each. */
function expectListedAsStock (store: string, native: string, stockStore: string, stock: string): void {
  const linked = (s: string, dir: string): { absolute: boolean, to: string } => {
    const target = listedInStore(s, dir)
    return { absolute: path.isAbsolute(target), to: path.resolve(path.dirname(projectLinkPath(path.join(s, 'v11'), dir)), target) }
  }
  const stockLink = linked(stockStore, stock)
  expect(stockLink.to).toBe(stock)
  expect(linked(store, native)).toEqual({ ...stockLink, to: native })
}

/**
 * The lines of pnpm's verdict file in `cacheDir` (`lockfile-verified.jsonl`, its record of each
 * lockfile its check passed), from character `from` on, the lockfile of `cloned` and its stat
 * made placeholders, and the time too unless `time` is kept.
 */
function verdictLines (cacheDir: string, cloned: string, { from = 0, time = false }: { from?: number, time?: boolean } = {}): string[] {
  const file = path.join(cacheDir, 'lockfile-verified.jsonl')
  if (!fs.existsSync(file)) return []
  const lockfile = path.join(cloned, 'pnpm-lock.yaml')
  const stat = fs.statSync(lockfile, { bigint: true })
  return fs.readFileSync(file, 'utf8').slice(from).split('\n').filter((l) => l !== '').map((line) => {
    const placed = line.replace(JSON.stringify(lockfile), '"<lockfile>"').replace(`"size":${stat.size},"mtimeNs":"${stat.mtimeNs}","inode":"${stat.ino}"`, '<stat>')
    return time ? placed : placed.replace(/"verifiedAt":"[^"]*"/, '"verifiedAt":"<time>"')
  })
}

/** The plugin does nothing: stock pnpm with the same pnpmfile and lockfile. */
const STOCK = { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_PRELINK: '0', CAS_NATIVE_PNPMFILE_FETCHER: '0' }

function expectOk (run: PnpmRun): void {
  expect(run.code, `pnpm failed:\n${run.stdout}\n${run.stderr}`).toBe(0)
}

// Generated packages: `files` maps a path in the package to its text, or to [text, mode].
function pkg (name: string, version: string, manifest: Record<string, unknown> = {}, files: Record<string, string | [string, number]> = {}): ServedPackage {
  const full = { name, version, ...manifest }
  const tarball = tgz([
    { name: 'package/package.json', content: JSON.stringify(full) },
    ...Object.entries(files).map(([file, spec]) => {
      const [content, mode] = typeof spec === 'string' ? [spec, 0o644] : spec
      return { name: `package/${file}`, content, mode }
    }),
  ])
  return { name, version, tarball, manifest: full }
}
const NODE_BIN = '#!/usr/bin/env node\nconsole.log(1)\n'
/** A build script's start: it appends its package's name to `build-log.txt` in the project pnpm installs. */
const BUILD_LOG = "const fs = require('fs'); fs.appendFileSync(require('path').join(process.env.INIT_CWD, 'build-log.txt'), require('./package.json').name + '\\n')\n"
const SHIPPED = 'data some other project has too\n'
/** Writes `env-<stage>.txt` in the package: the variables pnpm sets for a script, in the environment's order. */
const ENV_RECORD = "fs.writeFileSync('env-' + process.argv[2] + '.txt', Object.keys(process.env).filter((k) => /^(npm_|pnpm_|PNPM_|INIT_CWD$|NODE$|TMPDIR$|PATH$|FORCE_COLOR$)/.test(k)).map((k) => k + '=' + process.env[k]).join('\\n') + '\\n')\n"

/** A Node-API addon in C whose module exports `answer: 42`. */
const GYP_ADDON_C = `#include <node_api.h>
static napi_value init (napi_env env, napi_value exports) {
  napi_value answer;
  napi_create_int32(env, 42, &answer);
  napi_set_named_property(env, exports, "answer", answer);
  return exports;
}
NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
`
/**
 * Node 24's headers for node-gyp (\`npm_config_nodedir\`), so that it builds offline, never
 * downloading them: those of the \`node\` devDependency's platform package, which an \`npm ci\` of
 * this repository installs (\`CAS_TEST_NODEDIR\`: another such prefix, for a checkout without them).
 */
const NODE_HEADERS = process.env.CAS_TEST_NODEDIR || path.join(repoDir, 'node_modules', 'node', 'node_modules', `node-${process.platform}-${process.arch}`)
/** Whether node-gyp can build an addon here: a C compiler, make, python3 and those headers. */
const canBuildAddons = ['cc', 'make', 'python3'].every((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0) &&
  fs.existsSync(path.join(NODE_HEADERS, 'include', 'node', 'node_api.h'))

const OTHER_LIBC = process.platform === 'linux' ? (isMusl() ? 'gnu' : 'musl') : undefined
const PLATFORM_TOOLS: Array<{ name: string, os: string[], cpu: string[], here: boolean }> = [
  { name: `@tool/${process.platform}-${process.arch}`, os: [process.platform], cpu: [process.arch], here: true },
  { name: '@tool/aix-ppc64', os: ['aix'], cpu: ['ppc64'], here: false },
  ...(OTHER_LIBC != null ? [{ name: `@tool/linux-${process.arch}-${OTHER_LIBC}`, os: ['linux'], cpu: [process.arch], here: false }] : []),
]

const generated: ServedPackage[] = [
  // Peers: two hosts, plugins peering on them, one peer left for pnpm to install automatically.
  pkg('host', '1.0.0', { bin: 'host.js' }, { 'host.js': [NODE_BIN, 0o755] }),
  pkg('host', '2.0.0', { bin: 'host.js' }, { 'host.js': [NODE_BIN, 0o755] }),
  pkg('plugin-a', '1.0.0', { peerDependencies: { host: '^1.0.0' }, bin: { 'plugin-a': 'cli.js' } }, { 'cli.js': [NODE_BIN, 0o755] }),
  pkg('plugin-b', '1.0.0', { peerDependencies: { host: '>=1' }, dependencies: { util: '^1.0.0' } }),
  pkg('plugin-c', '1.0.0', { peerDependencies: { 'auto-peer': '1.0.0' } }),
  pkg('auto-peer', '1.0.0', { bin: { 'auto-peer': 'run.js' } }, { 'run.js': [NODE_BIN, 0o755] }),
  pkg('util', '1.0.0', {}, { 'index.js': 'module.exports = 1\n' }),
  pkg('util', '2.0.0', {}, { 'index.js': 'module.exports = 2\n' }),
  // Bins of every kind: a map with a scoped name, a shell script that is not executable in the
  // tarball, a target without shebang or extension, a name pnpm refuses, directories.bin.
  pkg('@scope/tool', '1.0.0', { bin: { '@scope/tool': 'bin/tool.sh', 'tool-two': 'bin/two', 'a/b': 'bin/two' } }, { 'bin/tool.sh': ['#!/bin/sh\necho tool\n', 0o644], 'bin/two': ['echo two\n', 0o755] }),
  pkg('devonly', '1.0.0', { directories: { bin: 'scripts' } }, { 'scripts/devcmd.js': ['console.log(1)\n', 0o644], 'scripts/sub/more.sh': ['echo more\n', 0o755] }),
  pkg('crlf', '1.0.0', { bin: 'cli.js' }, { 'cli.js': ['#!/usr/bin/env node\r\nconsole.log(1)\r\n', 0o644] }),
  // Hoisting conflicts: four versions of `a` at different depths, and `f`'s bin at two versions.
  pkg('a', '1.0.0', { bin: { acmd: 'a.js' } }, { 'a.js': [NODE_BIN, 0o755] }),
  pkg('a', '2.0.0', { bin: { acmd: 'a.js' } }, { 'a.js': [NODE_BIN, 0o755] }),
  pkg('a', '3.0.0'),
  pkg('b', '1.0.0', { dependencies: { a: '2.0.0', e: '1.0.0' } }),
  pkg('c', '1.0.0', { dependencies: { d: '1.0.0' } }),
  pkg('d', '1.0.0', { dependencies: { a: '3.0.0', f: '2.0.0' } }),
  pkg('e', '1.0.0', { dependencies: { a: '2.0.0', f: '1.0.0', A: 'npm:util@2.0.0' } }),
  pkg('f', '1.0.0', { bin: { fcmd: 'f.js' } }, { 'f.js': [NODE_BIN, 0o755] }),
  pkg('f', '2.0.0', { bin: { fcmd: 'f.js' } }, { 'f.js': [NODE_BIN, 0o755] }),
  // One bin name from three packages: the owner wins; without it, the name that sorts last.
  pkg('shared', '1.0.0', { bin: 'shared.js' }, { 'shared.js': [NODE_BIN, 0o755] }),
  pkg('alpha', '1.0.0', { bin: { shared: 'x.js' } }, { 'x.js': [NODE_BIN, 0o755] }),
  pkg('zeta', '1.0.0', { bin: { shared: 'x.js' } }, { 'x.js': [NODE_BIN, 0o755] }),
  pkg('owners', '1.0.0', { dependencies: { shared: '1.0.0', alpha: '1.0.0', zeta: '1.0.0' } }),
  pkg('no-owner', '1.0.0', { dependencies: { alpha: '1.0.0', zeta: '1.0.0' } }),
  // Bundled dependencies with a bin of their own.
  pkg('bundler', '1.0.0', { bundledDependencies: ['inner'], dependencies: { f: '1.0.0' } }, {
    'node_modules/inner/package.json': JSON.stringify({ name: 'inner', version: '1.0.0', bin: { 'inner-cli': 'i.js' } }),
    'node_modules/inner/i.js': [NODE_BIN, 0o755],
  }),
  // A build pnpm is told not to run, and the extra dependency a changed package.json adds.
  pkg('builder', '1.0.0', { scripts: { postinstall: 'node -e "require(\'fs\').writeFileSync(\'built.txt\', \'yes\')"' }, bin: { 'builder-cli': 'cli.js' } }, { 'cli.js': [NODE_BIN, 0o755] }),
  pkg('extra', '1.0.0', { dependencies: { util: '2.0.0' } }),
  // A build pnpm is told not to run whose dependencies are a registry package with a command and
  // (overridden to `link:`) a workspace project with one: no package of pnpm's graph.
  pkg('builds-on-project', '1.0.0', { scripts: { postinstall: 'node -e "require(\'fs\').writeFileSync(\'built.txt\', \'yes\')"' }, bin: { 'bop-cli': 'cli.js' }, dependencies: { f: '2.0.0', 'ws-cmd': '1.0.0' } }, { 'cli.js': [NODE_BIN, 0o755] }),
  // Builds pnpm records in its side-effects cache: each appends its name to a log in the
  // project (INIT_CWD), outside the package, so that a build that runs shows.
  pkg('logs-build', '1.0.0', { scripts: { postinstall: 'node build.js' }, dependencies: { util: '1.0.0' } }, { 'build.js': BUILD_LOG + "fs.writeFileSync('built.txt', 'yes')\n" }),
  pkg('native-build', '1.0.0', { scripts: { install: 'node build.js' }, bin: { 'native-cli': 'cli.js' }, dependencies: { 'logs-build': '1.0.0' } }, {
    'cli.js': [NODE_BIN, 0o755],
    'prebuilt.txt': 'removed by the build\n',
    'build.js': BUILD_LOG + "fs.mkdirSync('build/Release', { recursive: true }); fs.writeFileSync('build/Release/addon.node', 'binary'); fs.chmodSync('build/Release/addon.node', 0o755); fs.symlinkSync('Release/addon.node', 'build/addon.node'); fs.rmSync('prebuilt.txt')\n",
  }),
  // A build that writes its command's file again, a shell script now and not executable: the
  // shims pnpm links again after it (from 11.28.10) run it otherwise than those written before.
  pkg('rewrites-bin', '1.0.0', { scripts: { postinstall: 'node build.js' }, bin: { 'rewrites-cli': 'cli.js' } }, { 'cli.js': [NODE_BIN, 0o755], 'build.js': BUILD_LOG + "fs.rmSync('cli.js'); fs.writeFileSync('cli.js', '#!/bin/sh\\necho rewritten\\n', { mode: 0o644 })\n" }),
  pkg('uses-rewrites', '1.0.0', { dependencies: { 'rewrites-bin': '1.0.0' } }),
  // One that builds too: pnpm's build step links its dependencies' commands at its turn, after theirs.
  pkg('builds-on-rewrites', '1.0.0', { scripts: { postinstall: 'node build.js' }, dependencies: { 'rewrites-bin': '1.0.0' } }, { 'build.js': BUILD_LOG }),
  // A build that changes nothing in its package: pnpm records an empty diff for it, which it never
  // takes back (its verified read drops it), and runs it again each time.
  pkg('log-only-build', '1.0.0', { scripts: { postinstall: 'node build.js' } }, { 'build.js': BUILD_LOG }),
  // Bundled dependencies and a build: the uploads before pnpm 11.28.11 list the bundled files as deleted.
  pkg('bundles-build', '1.0.0', { bundledDependencies: ['inner'], scripts: { postinstall: 'node build.js' } }, {
    'build.js': BUILD_LOG + "fs.writeFileSync('built.txt', 'yes')\n",
    'node_modules/inner/package.json': JSON.stringify({ name: 'inner', version: '1.0.0' }),
    'node_modules/inner/index.js': 'module.exports = 1\n',
  }),
  // A build that fails: pnpm records nothing for it, and skips it when it is optional.
  pkg('fails-build', '1.0.0', { scripts: { postinstall: 'node build.js' } }, { 'build.js': BUILD_LOG + 'process.exit(3)\n' }),
  // Patched: its turn in pnpm's build step comes after fails-build's, which never ends well.
  pkg('waits-on-failing', '1.0.0', { dependencies: { 'fails-build': '1.0.0' } }, { 'index.js': 'module.exports = 1\n' }),
  // One with a command and a dependency, optional to a package that has a command too (the project's, the hoisting's and its own commands).
  pkg('fails-build-bin', '1.0.0', { scripts: { preinstall: 'node build.js' }, bin: { 'fails-cli': 'cli.js' }, dependencies: { util: '1.0.0' } }, { 'cli.js': [NODE_BIN, 0o755], 'build.js': BUILD_LOG + 'process.exit(4)\n' }),
  pkg('uses-failing', '1.0.0', { bin: { 'uses-cli': 'cli.js' }, optionalDependencies: { 'fails-build-bin': '1.0.0' } }, { 'cli.js': [NODE_BIN, 0o755] }),
  // A build whose command is not found: the shell ends with status 127, which pnpm's runner takes for a failed spawn.
  pkg('missing-command-build', '1.0.0', { scripts: { postinstall: 'not-a-command' } }),
  // A build in shell syntax that pnpm's emulator reads otherwise than sh (its echo prints `-n`),
  // with output whose last line has no line break.
  pkg('shell-build', '1.0.0', { scripts: { postinstall: 'echo -n "$npm_package_name" > out.txt && node build.js' } }, { 'build.js': BUILD_LOG + "fs.writeFileSync('built.txt', 'yes'); process.stdout.write('shown\\ntail')\n" }),
  // A build that says which shell ran it (`[[` is bash's: sh has none).
  pkg('bash-build', '1.0.0', { scripts: { postinstall: '[[ -n "$BASH_VERSION" ]] && echo bash > shell.txt || echo other > shell.txt' } }),
  // A build that records in its package the environment it runs with (pnpm's variables, in their order).
  pkg('env-build', '1.0.0', { scripts: { preinstall: 'node env.js preinstall', postinstall: 'node env.js postinstall' }, config: { port: '8080', nested: { on: true } }, engines: { node: '>=18' }, bin: 'cli.js' }, {
    'cli.js': [NODE_BIN, 0o644],
    'env.js': BUILD_LOG + ENV_RECORD,
  }),
  // Public hoisting, and optional dependencies this machine installs (one with engines it meets).
  pkg('linter-core', '1.0.0', { bin: { lint: 'lint.js' }, optionalDependencies: { 'opt-helper': '1.0.0' } }, { 'lint.js': [NODE_BIN, 0o755] }),
  pkg('opt-helper', '1.0.0', { engines: { node: '>=18' }, bin: { 'opt-helper': 'h.js' } }, { 'h.js': [NODE_BIN, 0o755] }),
  pkg('linter-plugin', '1.0.0', { dependencies: { 'linter-core': '1.0.0', f: '2.0.0' } }),
  pkg('app-kit', '1.0.0', { dependencies: { 'linter-plugin': '1.0.0', a: '2.0.0' } }),
  // Platform packages as esbuild's and rollup's: one for this machine (with a bin), one for
  // another os, and on Linux one for the other libc, which only its name says.
  pkg('tool-core', '1.0.0', { optionalDependencies: Object.fromEntries(PLATFORM_TOOLS.map((t) => [t.name, '1.0.0'])) }),
  ...PLATFORM_TOOLS.map((t) => pkg(t.name, '1.0.0', { os: t.os, cpu: t.cpu, ...(t.here ? { bin: { 'tool-native': 'native.js' } } : {}) }, t.here ? { 'native.js': [NODE_BIN, 0o755] } : {})),
  // Skipped with what only they reach: a binding for another os that has dependencies of its
  // own (a runtime with one of its own, and one a required path reaches too), as Vite's wasm
  // binding and sharp's; an optional package whose engines.node this Node does not meet, with a
  // dependency; and one wanting another pnpm, which pnpm does not check there.
  pkg('bound-core', '1.0.0', { optionalDependencies: { '@bound/aix-ppc64': '1.0.0', [`@bound/${process.platform}-${process.arch}`]: '1.0.0' } }),
  pkg('@bound/aix-ppc64', '1.0.0', { os: ['aix'], cpu: ['ppc64'], dependencies: { 'bound-runtime': '1.0.0', 'bound-shared': '1.0.0' } }),
  pkg(`@bound/${process.platform}-${process.arch}`, '1.0.0', { os: [process.platform], cpu: [process.arch] }),
  pkg('bound-runtime', '1.0.0', { dependencies: { 'bound-leaf': '1.0.0' }, bin: { 'bound-run': 'r.js' } }, { 'r.js': [NODE_BIN, 0o755] }),
  pkg('bound-leaf', '1.0.0'),
  pkg('bound-shared', '1.0.0', { bin: { 'bound-shared': 's.js' } }, { 's.js': [NODE_BIN, 0o755] }),
  // Bindings that declare `"libc": [null]`, as oxc-parser 0.8's do: pnpm's check reads no libc in it.
  pkg('nulllibc-core', '1.0.0', { optionalDependencies: { '@nulllibc/aix-ppc64': '1.0.0', [`@nulllibc/${process.platform}-${process.arch}`]: '1.0.0' } }),
  pkg('@nulllibc/aix-ppc64', '1.0.0', { os: ['aix'], cpu: ['ppc64'], libc: [null] }),
  pkg(`@nulllibc/${process.platform}-${process.arch}`, '1.0.0', { os: [process.platform], cpu: [process.arch], libc: [null] }),
  pkg('old-engine', '1.0.0', { engines: { node: '<1' }, dependencies: { 'old-dep': '1.0.0' } }),
  pkg('old-dep', '1.0.0'),
  pkg('pnpm-engine', '1.0.0', { engines: { pnpm: '<1' } }),
  // For the installs left to pnpm: published a minute before the tests started.
  { ...pkg('fresh', '1.0.0'), published: new Date(Date.now() - 60_000).toISOString() },
  // Changed a minute ago, and no publish times in its full metadata (pnpm passes it, warning).
  { ...pkg('timeless', '1.0.0'), published: new Date(Date.now() - 60_000).toISOString(), timeless: true },
  pkg('mac-only', '1.0.0', { os: ['darwin'] }),
  // Trust evidence (trustPolicy: no-downgrade): kept and strengthened, and lost in a later release.
  { ...pkg('signed', '1.0.0'), trust: 'provenance', published: '2020-01-01T00:00:00.000Z' },
  { ...pkg('signed', '1.1.0', { dependencies: { util: '1.0.0' } }), trust: 'trustedPublisher', published: '2020-06-01T00:00:00.000Z' },
  { ...pkg('taken-over', '1.0.0'), trust: 'trustedPublisher', published: '2020-01-01T00:00:00.000Z' },
  { ...pkg('taken-over', '1.1.0'), published: '2020-06-01T00:00:00.000Z' },
  pkg('node-bin', '1.0.0', { bin: { node: 'fake-node.js' } }, { 'fake-node.js': [NODE_BIN, 0o755] }),
  // A package that ships a file where its dependency's shim goes (a hard link into the store,
  // with the content of a data file of its own), and every kind of `directories.bin`.
  pkg('cmd-dep', '1.0.0', { bin: { 'shipped-cmd': 'cli.js' } }, { 'cli.js': [NODE_BIN, 0o755] }),
  pkg('ships-bin', '1.0.0', { dependencies: { 'cmd-dep': '1.0.0' } }, { 'node_modules/.bin/shipped-cmd': SHIPPED, 'data.txt': SHIPPED }),
  pkg('bindir-self', '1.0.0', { directories: { bin: '.' } }, { 'run.js': [NODE_BIN, 0o755], '.hidden.js': NODE_BIN, 'sub/tool.sh': ['echo tool\n', 0o644] }),
  pkg('bindir-up', '1.0.0', { directories: { bin: '..' } }, { 'up.js': [NODE_BIN, 0o755] }),
  pkg('bindir-sibling', '1.0.0', { directories: { bin: '../util' } }, { 'sib.js': [NODE_BIN, 0o755] }),
  pkg('bindir-empty-bin', '1.0.0', { bin: {}, directories: { bin: 'scripts' } }, { 'scripts/never.js': [NODE_BIN, 0o755] }),
  pkg('bindir-dotted', '1.0.0', { directories: { bin: './scripts/' } }, { 'scripts/ok.js': [NODE_BIN, 0o755], 'scripts/.dot.js': NODE_BIN, 'scripts/.dir/in.js': NODE_BIN }),
  // Files whose blobs a test gives other modes in the store than their names say.
  pkg('modes', '1.0.0', {}, { 'data.txt': 'drifts to 755\n', 'run.sh': ['echo drifts to 644\n', 0o755], 'group.txt': 'group-writable\n' }),
  // A real native addon with a binding.gyp and no install script: pnpm builds it with `node-gyp rebuild`.
  pkg('gyp-addon', '1.0.0', { main: 'index.js' }, {
    'binding.gyp': JSON.stringify({ targets: [{ target_name: 'addon', sources: ['addon.c'] }] }),
    'addon.c': GYP_ADDON_C,
    'index.js': "module.exports = require('./build/Release/addon.node')\n",
  }),
]

interface Project {
  label: string
  manifest: Record<string, unknown>
  workspace: string
  /** The project's `.npmrc`, if it has one. */
  npmrc?: string
  /** Entries stock's tree must have (starts of lines): what makes the comparison worth making. */
  covers: string[]
}

/** The release under test, as the table says it writes (the newest's for one not in it). */
const TESTED = PNPM_RELEASES.find((r) => r.version === testedPnpmVersion) ?? PNPM_RELEASES.at(-1)!

const PROJECTS: Project[] = [
  {
    label: 'peers-aliases-bins',
    manifest: {
      name: 'peers-aliases-bins',
      version: '1.0.0',
      dependencies: { host: '1.0.0', 'plugin-a': '1.0.0', 'plugin-b': '1.0.0', 'plugin-c': '1.0.0', 'util-two': 'npm:util@2.0.0', '@scope/tool': '1.0.0', crlf: '1.0.0' },
      devDependencies: { devonly: '1.0.0' },
    },
    workspace: 'minimumReleaseAge: 0\n',
    covers: [
      // An auto-installed peer's command (from 11.28.1).
      ...(TESTED.peerBins ? ['node_modules/.bin/auto-peer 755'] : []), 'node_modules/.bin/tool 755', 'node_modules/.bin/tool-two 755', 'node_modules/.bin/devcmd.js 755',
      'node_modules/.bin/more.sh 755', 'node_modules/.bin/crlf 755', 'node_modules/.pnpm/crlf@1.0.0/node_modules/crlf/cli.js 755',
      'node_modules/.pnpm/@scope+tool@1.0.0/node_modules/@scope/tool/bin/tool.sh 755', 'node_modules/util-two -> .pnpm/util@2.0.0/node_modules/util',
      'node_modules/.pnpm/plugin-a@1.0.0_host@1.0.0/', 'node_modules/.pnpm/node_modules/util -> ../util@1.0.0/node_modules/util',
    ],
  },
  {
    label: 'hoisting-bundled',
    manifest: {
      name: 'hoisting-bundled',
      version: '2.0.0',
      dependencies: { a: '1.0.0', b: '1.0.0', c: '1.0.0', bundler: '1.0.0', owners: '1.0.0', 'no-owner': '1.0.0', builder: '1.0.0' },
    },
    workspace: 'minimumReleaseAge: 0\nallowBuilds:\n  builder: false\n',
    covers: [
      'node_modules/.pnpm/node_modules/.bin/fcmd 755', 'node_modules/.pnpm/node_modules/f -> ../f@1.0.0/node_modules/f',
      'node_modules/.pnpm/bundler@1.0.0/node_modules/bundler/node_modules/.bin/inner-cli 755',
      'node_modules/.pnpm/owners@1.0.0/node_modules/owners/node_modules/.bin/shared 755', 'node_modules/.bin/acmd 755',
      'node_modules/.modules.yaml 644 {"hoistedDependencies":', 'node_modules/.pnpm-workspace-state-v1.json 644 {"projects":',
      // pnpm links a package's own command beside its dependencies' when it takes it through its build step (denied).
      'node_modules/.pnpm/builder@1.0.0/node_modules/builder/node_modules/.bin/builder-cli 755',
    ],
  },
  {
    label: 'public-hoist-optional',
    manifest: {
      name: 'public-hoist-optional',
      version: '3.0.0',
      dependencies: { 'app-kit': '1.0.0', f: '1.0.0' },
      optionalDependencies: { util: '1.0.0' },
    },
    workspace: 'minimumReleaseAge: 0\npublicHoistPattern:\n  - \'*linter*\'\n  - a\n',
    covers: [
      'node_modules/linter-core -> .pnpm/linter-core@1.0.0/node_modules/linter-core', 'node_modules/linter-plugin -> .pnpm/linter-plugin@1.0.0/node_modules/linter-plugin',
      'node_modules/a -> .pnpm/a@2.0.0/node_modules/a', 'node_modules/.bin/lint 755', 'node_modules/.bin/acmd 755',
      'node_modules/.pnpm/linter-core@1.0.0/node_modules/opt-helper -> ../../opt-helper@1.0.0/node_modules/opt-helper',
      'node_modules/.pnpm/linter-core@1.0.0/node_modules/linter-core/node_modules/.bin/opt-helper 755',
    ],
  },
  {
    // Every package hoisted publicly, the commands of all of them in the root's .bin (owners' and no-owner's of one name).
    label: 'shamefully-hoisted',
    manifest: {
      name: 'shamefully-hoisted',
      version: '4.0.0',
      dependencies: { a: '1.0.0', b: '1.0.0', c: '1.0.0', bundler: '1.0.0', owners: '1.0.0', 'no-owner': '1.0.0', host: '1.0.0', 'plugin-a': '1.0.0' },
    },
    workspace: 'minimumReleaseAge: 0\nshamefullyHoist: true\n',
    covers: ['node_modules/f -> .pnpm/f@1.0.0/node_modules/f', 'node_modules/.bin/fcmd 755', 'node_modules/.modules.yaml 644 {"hoistedDependencies":'],
  },
  {
    // The same setting where pnpm 10 projects keep it: pnpm 11 reads no layout setting from
    // `.npmrc` (only pnpm-workspace.yaml's), so f is hoisted privately, by both.
    label: 'shamefully-hoisted-npmrc',
    manifest: {
      name: 'shamefully-hoisted-npmrc',
      version: '4.1.0',
      dependencies: { a: '1.0.0', b: '1.0.0', bundler: '1.0.0', owners: '1.0.0' },
    },
    workspace: 'minimumReleaseAge: 0\n',
    npmrc: 'shamefully-hoist=true\n',
    covers: ['node_modules/.pnpm/node_modules/f -> ../f@1.0.0/node_modules/f', 'node_modules/.pnpm/node_modules/.bin/fcmd 755'],
  },
  {
    // Shims with no NODE_PATH at all (the private hoisting directory no longer added), also those of the build step.
    label: 'no-node-path',
    manifest: {
      name: 'no-node-path',
      version: '5.0.0',
      dependencies: { a: '1.0.0', b: '1.0.0', bundler: '1.0.0', owners: '1.0.0', builder: '1.0.0', 'plugin-a': '1.0.0', host: '1.0.0' },
    },
    workspace: 'minimumReleaseAge: 0\nextendNodePath: false\nallowBuilds:\n  builder: false\n',
    covers: ['node_modules/.pnpm/node_modules/.bin/fcmd 755', 'node_modules/.pnpm/builder@1.0.0/node_modules/builder/node_modules/.bin/builder-cli 755', 'node_modules/.bin/acmd 755'],
  },
]

/** A workspace project below the root: its manifest and its files (text, mode). */
interface WorkspaceProject {
  manifest: Record<string, unknown>
  files?: Record<string, [string, number]>
}

/**
 * A workspace of three projects besides the root: `workspace:` dependencies between them (one
 * through a caret range), bins in two of them, a dependency the root has at another version
 * (util), dependencies only a project has (hoisted from there), one alias at three versions (a),
 * peer dependencies of projects (one also a dev dependency, one installed for them), a project's
 * bin whose target its build makes (not there: pnpm's shim for a missing target).
 */
const WORKSPACE = {
  root: { name: 'ws-root', version: '1.0.0', private: true, devDependencies: { '@ws/tools': 'workspace:*', util: '1.0.0' } },
  projects: {
    'packages/lib': { manifest: { name: '@ws/lib', version: '1.0.0', bin: { 'lib-cli': 'cli.js' }, dependencies: { a: '1.0.0', f: '1.0.0' }, peerDependencies: { host: '^1.0.0' }, devDependencies: { host: '1.0.0' } }, files: { 'cli.js': [NODE_BIN, 0o755] } },
    'packages/app': { manifest: { name: 'app', version: '2.0.0', dependencies: { '@ws/lib': 'workspace:^', b: '1.0.0', c: '1.0.0', owners: '1.0.0', 'plugin-c': '1.0.0' }, devDependencies: { '@scope/tool': '1.0.0' }, peerDependencies: { shared: '1.0.0' } } },
    'packages/tools': { manifest: { name: '@ws/tools', version: '0.1.0', bin: { 'ws-tool': 'tool.js', 'ws-built': 'dist/built.js' }, dependencies: { util: '2.0.0', '@ws/lib': 'workspace:*' } }, files: { 'tool.js': [NODE_BIN, 0o755] } },
  } satisfies Record<string, WorkspaceProject>,
  workspace: 'packages:\n  - \'packages/*\'\nminimumReleaseAge: 0\n',
}

/**
 * pnpm's warnings of commands it could not link, with the project's path written `<d>`, each
 * said to come before or after its summary (sorted: the projects link concurrently).
 */
function binWarnings (d: string, stdout: string): string[] {
  const lines = stdout.split('\n')
  const summary = lines.findIndex((l) => /^(dependencies|devDependencies|optionalDependencies):$/.test(l.trim()))
  return lines.flatMap((l, i) => l.includes('Failed to create bin at ') ? [`${summary !== -1 && i > summary ? 'after' : 'before'} the summary: ${l.replaceAll(d, '<d>').trim()}`] : []).sort()
}

/** A project's files as a clone has them (and its `patches` directory, if any). */
const CLONED = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', '.npmrc']

describe('the native frozen install with the real pnpm 11 CLI', () => {
  let base: string
  let registry: TarballRegistry
  let plugin: ServedPackage[]
  /** Every package the registry stand-in serves. */
  let served: ServedPackage[]

  beforeAll(async () => {
    base = freshDir('native-install')
    plugin = packPlugin(path.join(base, 'packed'))
    const fixture = lockedPackages().map((p) => packedPackage(p.tarball))
    served = [...plugin, ...fixture, ...generated]
    registry = await serveTarballs(served)
  })

  afterAll(async () => {
    await registry?.close()
  })

  const sandbox = (label: string): string => path.join(base, `${label}-sandbox`)

  /** The README's setup: a project with the plugin as its config dependency and a lockfile pnpm resolved. */
  async function setUp (label: string, manifest: Record<string, unknown>, workspace: string, projects: Record<string, WorkspaceProject> = {}, patches: Record<string, string> = {}, npmrc?: string): Promise<{ dir: string, store: string }> {
    const dir = path.join(base, label)
    const store = path.join(base, `${label}-store`)
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
    for (const [project, { manifest, files = {} }] of Object.entries(projects)) {
      fs.mkdirSync(path.join(dir, project), { recursive: true })
      fs.writeFileSync(path.join(dir, project, 'package.json'), JSON.stringify(manifest, null, 2))
      for (const [file, [text, mode]] of Object.entries(files)) fs.writeFileSync(path.join(dir, project, file), text, { mode })
    }
    fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), workspace)
    if (npmrc != null) fs.writeFileSync(path.join(dir, '.npmrc'), npmrc)
    for (const [file, text] of Object.entries(patches)) {
      fs.mkdirSync(path.join(dir, 'patches'), { recursive: true })
      fs.writeFileSync(path.join(dir, 'patches', file), text)
    }
    const opts = { projectDir: dir, storeDir: store, sandbox: sandbox(label), registry: registry.url }
    expectOk(await runPnpm(['add', '--config', PLUGIN_NAME], opts))
    expectOk(await runPnpm(['install'], opts))
    return { dir, store }
  }

  /** A clone of `from`: its project files, and its folders (the other workspace projects, …) but their `node_modules`. */
  function clone (from: string, label: string): string {
    const dir = path.join(base, label)
    fs.mkdirSync(dir)
    for (const f of CLONED) if (fs.existsSync(path.join(from, f))) fs.copyFileSync(path.join(from, f), path.join(dir, f))
    // The projects, the patches, and any other folder (a `link:` dependency's).
    for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name === 'node_modules') continue
      fs.cpSync(path.join(from, entry.name), path.join(dir, entry.name), { recursive: true, filter: (src) => path.basename(src) !== 'node_modules' })
    }
    return dir
  }

  /** `tree` with the project's own path written `<p>`: two clones' trees compared. */
  function relativeTree (dir: string, store: string): string[] {
    return tree(dir, store).map((l) => l.split(dir).join('<p>'))
  }

  /**
   * Every entry of `node_modules` but the config dependencies' links (path, kind, permission
   * bits, content hash or link text), with the project and store paths in contents replaced.
   * The state files are compared as pnpm reads them: without the install's timestamps, the file
   * signatures pnpm records with them, and `pendingBuilds`' order (pnpm's follows its timing).
   */
  function tree (dir: string, store: string): string[] {
    const lines: string[] = []
    const normalize = (text: string): string => text.split(dir).join('<project>').split(store).join('<store>')
    const walk = (rel: string): void => {
      const entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
      for (const e of entries) {
        const r = `${rel}/${e.name}`
        if (r === 'node_modules/.pnpm-config') continue
        const abs = path.join(dir, r)
        const st = fs.lstatSync(abs)
        if (st.isSymbolicLink()) {
          lines.push(`${r} -> ${fs.readlinkSync(abs)}`)
        } else if (st.isDirectory()) {
          lines.push(`${r}/ ${(st.mode & 0o777).toString(8)}`)
          walk(r)
        } else if (r === 'node_modules/.modules.yaml' || r === 'node_modules/.pnpm-workspace-state-v1.json') {
          const state = JSON.parse(fs.readFileSync(abs, 'utf8'))
          delete state.prunedAt
          delete state.lastValidatedTimestamp
          if (state.validation != null) state.validation = { ...state.validation, recordedAtNs: undefined, files: Object.keys(state.validation.files) }
          lines.push(`${r} ${(st.mode & 0o777).toString(8)} ${normalize(JSON.stringify(state))}`)
        } else {
          const text = normalize(fs.readFileSync(abs, 'latin1'))
          // Shared with the store (a hard link) or a file of its own (a copy, a build's output, a
          // state file). Not told for an executable: a command's target made executable is the
          // store's blob chmodded by pnpm, a copy of its own here (docs/native-install.md, bins).
          const own = st.nlink === 1 && (st.mode & 0o111) === 0 ? ' own' : ''
          lines.push(`${r} ${(st.mode & 0o777).toString(8)} ${crypto.createHash('sha256').update(text, 'latin1').digest('hex')}${own}`)
        }
      }
    }
    for (const project of importerDirs(dir)) {
      const modules = project === '.' ? 'node_modules' : `${project}/node_modules`
      if (fs.existsSync(path.join(dir, modules))) walk(modules)
    }
    return lines
  }

  /**
   * `pnpm ls` and `pnpm why` as a user reads them, with the project path replaced. `ls` lists
   * the packages it finds in `node_modules` but not in package.json in the order the directory
   * lists them, which the filesystem decides per directory: its objects are compared with their
   * keys sorted.
   */
  async function answers (dir: string, store: string, label: string, why: string): Promise<string[]> {
    const opts = { projectDir: dir, storeDir: store, sandbox: sandbox(label), query: true }
    const ls = await runPnpm(['ls', ...(importerDirs(dir).length > 1 ? ['-r'] : []), '--depth', 'Infinity', '--json'], opts)
    const whyRun = await runPnpm(['why', why], opts)
    expectOk(ls)
    expectOk(whyRun)
    const sorted = (v: unknown): unknown => Array.isArray(v)
      ? v.map(sorted)
      : v != null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted((v as Record<string, unknown>)[k])])) : v
    return [JSON.stringify(sorted(JSON.parse(ls.stdout)), null, 1), whyRun.stdout].map((t) => t.split(dir).join('<project>'))
  }

  interface Compared { stock: string, native: string, stockTree: string[], stockRun: PnpmRun, nativeRun: PnpmRun, trace: string }

  interface InstallOptions {
    /** Stock's install fills the store from the registry stand-in. */
    online?: boolean
    /** More arguments to `pnpm install --frozen-lockfile`, for both. */
    args?: string[]
    /** A plain `pnpm install` (pnpm decides whether the lockfile is installed as it is). */
    plain?: boolean
    /** The workspace project pnpm runs in (relative; the root by default). */
    cwd?: string
  }

  const installCommand = (opts: InstallOptions): string[] => ['install', ...(opts.plain === true ? [] : ['--frozen-lockfile']), ...(opts.args ?? [])]

  /** A stock clone and a native clone of `setUpDir`, installed with `--frozen-lockfile` (or plain) from its store. */
  async function installBoth (setUpDir: string, store: string, label: string, opts: InstallOptions = {}): Promise<Compared> {
    const from = opts.online === true ? { registry: registry.url } : {}
    const command = installCommand(opts)
    const stock = clone(setUpDir, `${label}-stock`)
    const stockRun = await runPnpm(command, { projectDir: path.join(stock, opts.cwd ?? ''), storeDir: store, sandbox: sandbox(`${label}-stock`), env: STOCK, ...from })
    expectOk(stockRun)
    const native = clone(setUpDir, `${label}-native`)
    const traceFile = path.join(base, `${label}-trace.txt`)
    const nativeRun = await runPnpm(command, { projectDir: path.join(native, opts.cwd ?? ''), storeDir: store, sandbox: sandbox(`${label}-native`), env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile }, ...from })
    expectOk(nativeRun)
    return { stock, native, stockTree: tree(stock, store), stockRun, nativeRun, trace: fs.readFileSync(traceFile, 'utf8') }
  }

  /** A stock clone and a native clone of `setUpDir`, each installed into an empty store of its own, from the registry (with `reporter`, else append-only). */
  async function installCold (setUpDir: string, label: string, args: string[] = [], env: Record<string, string> = {}, reporter?: string): Promise<{ stock: string, stockStore: string, stockRun: PnpmRun, native: string, nativeStore: string, run: PnpmRun, trace: string }> {
    const online = { registry: registry.url, reporter }
    const stock = clone(setUpDir, `${label}-stock`)
    const stockStore = path.join(base, `${label}-stock-store`)
    const stockRun = await runPnpm(['install', '--frozen-lockfile', ...args], { projectDir: stock, storeDir: stockStore, sandbox: sandbox(`${label}-stock`), env: { ...STOCK, ...env }, ...online })
    expectOk(stockRun)
    const native = clone(setUpDir, `${label}-native`)
    const nativeStore = path.join(base, `${label}-native-store`)
    const traceFile = path.join(base, `${label}-trace.txt`)
    const run = await runPnpm(['install', '--frozen-lockfile', ...args], { projectDir: native, storeDir: nativeStore, sandbox: sandbox(`${label}-native`), env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile, ...env }, ...online })
    expectOk(run)
    return { stock, stockStore, stockRun, native, nativeStore, run, trace: fs.readFileSync(traceFile, 'utf8') }
  }

  /** The checks every project the native install takes must pass. */
  async function expectSameAsStock (setUpDir: string, store: string, label: string, opts: InstallOptions & { packages: number, why: string }): Promise<Compared> {
    const both = await installBoth(setUpDir, store, label, opts)
    expect(both.trace).toMatch(new RegExp(`^native install: ${opts.packages} packages, `, 'm'))
    // pnpm's check took the workspace state as written: its validation is still the native install's
    // (a release before 11.28.7 writes none, and checks modification times).
    const validatedAt = /, state validated at (\d+)$/m.exec(both.trace)?.[1]
    const state = JSON.parse(fs.readFileSync(path.join(both.native, 'node_modules', '.pnpm-workspace-state-v1.json'), 'utf8'))
    if (stateFormOf(testedPnpmVersion).validation === 'none') {
      expect(validatedAt).toBeUndefined()
      expect(state.validation).toBeUndefined()
    } else {
      expect(validatedAt).toBeDefined()
      expect(String(state.validation.recordedAtNs)).toBe(validatedAt)
    }
    expect(both.nativeRun.stdout).toContain('Already up to date')
    // Once, as stock: not from a project below the workspace root (pnpm's reporter shows an info
    // record only under the directory it runs in, and pnpm logs this one under the root).
    expect(fromLockfile(both.nativeRun.stdout)).toBe(fromLockfile(both.stockRun.stdout))
    expect(fromLockfile(both.stockRun.stdout)).toBe(opts.cwd == null || opts.cwd === '.' ? 1 : 0)
    // Where the packages were linked from, only where stock says it (releases before 11.18.0 never do).
    const storeLines = (run: PnpmRun): boolean => run.stdout.includes(' from the content-addressable store to the virtual store.')
    expect(storeLines(both.nativeRun)).toBe(storeLines(both.stockRun))
    // No warning of its own: only those pnpm prints for stock too (a workspace project for another platform; pnpm's own, in its words).
    const warnings = (run: PnpmRun, dir: string): string[] => (run.stdout + run.stderr).split('\n').filter((l) => l.includes('WARN')).map((l) => l.split(dir).join('<p>'))
    const stockWarnings = warnings(both.stockRun, both.stock)
    expect(warnings(both.nativeRun, both.native).filter((l) => !stockWarnings.includes(l))).toEqual([])
    const nativeTree = tree(both.native, store)
    expect(nativeTree.map((l) => l.split(both.native).join('<p>'))).toEqual(both.stockTree.map((l) => l.split(both.stock).join('<p>')))
    // Listed in the store, as pnpm's install lists every project it installs (`store prune` reads the list).
    expectListedAsStock(store, both.native, store, both.stock)
    // pnpm's check of the lockfile recorded in its cache as stock's records it (one line: no project here sets trustLockfile).
    const stockVerdicts = verdictLines(path.join(sandbox(`${label}-stock`), 'cache'), both.stock)
    expect(stockVerdicts).toHaveLength(1)
    expect(verdictLines(path.join(sandbox(`${label}-native`), 'cache'), both.native)).toEqual(stockVerdicts)

    // Up to date, and stays so.
    const again = await runPnpm(installCommand(opts), { projectDir: path.join(both.native, opts.cwd ?? ''), storeDir: store, sandbox: sandbox(`${label}-native`) })
    expectOk(again)
    expect(again.stdout).toContain('Already up to date')
    expect(again.stdout).not.toContain(PNPM_INSTALLED)
    expect(tree(both.native, store)).toEqual(nativeTree)
    expect(await answers(both.native, store, `${label}-native`, opts.why)).toEqual(await answers(both.stock, store, `${label}-stock`, opts.why))
    return both
  }

  for (const project of PROJECTS) {
    it(`${project.label}: the whole node_modules is stock pnpm's, pnpm finds it up to date; a changed package.json installs on top as stock`, async () => {
      const { dir, store } = await setUp(project.label, project.manifest, project.workspace, {}, {}, project.npmrc)
      const both = await expectSameAsStock(dir, store, project.label, { packages: countSnapshots(dir), why: 'util' })
      for (const entry of project.covers) expect(both.stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)

      // A new dependency: pnpm resolves and links it on top of each, the same way.
      for (const d of [both.stock, both.native]) {
        const manifest = JSON.parse(fs.readFileSync(path.join(d, 'package.json'), 'utf8'))
        manifest.dependencies.extra = '1.0.0'
        fs.writeFileSync(path.join(d, 'package.json'), JSON.stringify(manifest, null, 2))
      }
      expectOk(await runPnpm(['install'], { projectDir: both.stock, storeDir: store, sandbox: sandbox(`${project.label}-stock`), registry: registry.url, env: STOCK }))
      const changed = await runPnpm(['install'], { projectDir: both.native, storeDir: store, sandbox: sandbox(`${project.label}-native`), registry: registry.url })
      expectOk(changed)
      expect(changed.stdout).toMatch(/^\+ extra 1\.0\.0$/m)
      expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(both.stock, 'pnpm-lock.yaml'), 'utf8'))
      const relative = (d: string): string[] => relativeTree(d, store)
      expect(relative(both.native)).toEqual(relative(both.stock))
      expect(fs.existsSync(path.join(both.native, 'node_modules', 'extra'))).toBe(true)
    })
  }

  it.each([
    ['', {}],
    [' and a postinstall of its own (run natively, or by pnpm\'s own install over the layout under a release whose scripts are pnpm\'s)', { scripts: { postinstall: 'node -e 0' } }],
  ])('a project depending on itself (workspace:*) with a command whose file is not there yet%s: stock\'s tree, and pnpm\'s warnings as many times, where stock gives them (user try, taze under 11.21.0)', async (_, more) => {
    const label = more.scripts == null ? 'self-bin' : 'self-bin-scripts'
    const manifest = { name: label, version: '1.0.0', bin: { [label]: 'bin/cli.js' }, dependencies: { a: '1.0.0' }, devDependencies: { [label]: 'workspace:*' }, ...more }
    const { dir, store } = await setUp(label, manifest, 'packages:\n  - \'!**/fixtures/**\'\nminimumReleaseAge: 0\n')
    const both = more.scripts == null ? await expectSameAsStock(dir, store, label, { packages: countSnapshots(dir), why: 'a' }) : await installBoth(dir, store, label)
    if (more.scripts != null) expect(relativeTree(both.native, store)).toEqual(relativeTree(both.stock, store))
    const stockWarned = binWarnings(both.stock, both.stockRun.stdout)
    if (TESTED.shimWriter !== 'pnpm') expect(stockWarned.map((w) => w.replace(/^.*?: /, ''))).toContain(`[WARN] Failed to create bin at <d>/node_modules/.bin/${label}. ENOENT: no such file or directory, open '<d>/bin/cli.js'`)
    // Where pnpm's own install runs the scripts over the layout (releases whose scripts are
    // pnpm's: those that warn), its warnings follow the native install's summary: as many, later.
    const where = (warned: string[]): string[] => more.scripts == null || TESTED.runsBuilds ? warned : warned.map((w) => w.replace(/^.*?: /, '')).sort()
    expect(where(binWarnings(both.native, both.nativeRun.stdout))).toEqual(where(stockWarned))
  })

  /** What every workspace install below has, as stock lays it out. */
  const WORKSPACE_COVERS = [
    'packages/app/node_modules/@ws/lib -> ../../../lib', 'node_modules/@ws/tools -> ../../packages/tools', 'packages/tools/node_modules/.bin/lib-cli 755',
    'node_modules/.bin/ws-tool 755', 'packages/app/node_modules/b -> ../../../node_modules/.pnpm/b@1.0.0/node_modules/b',
    // A project's command whose file is not there yet: pnpm's own cmd-shim writes its shim, `@zkochan/cmd-shim`'s releases warn.
    ...(TESTED.shimWriter === 'pnpm' ? ['node_modules/.bin/ws-built 755'] : []),
    'packages/lib/node_modules/host -> ', 'packages/app/node_modules/shared -> ',
    ...(TESTED.peerBins ? ['packages/app/node_modules/.bin/auto-peer 755'] : []),
  ]
  const PRIVATELY_HOISTED = ['node_modules/.pnpm/node_modules/@ws/lib -> ../../../../packages/lib', 'node_modules/.pnpm/node_modules/a -> ']
  const WORKSPACE_INSTALLS = [
    { label: 'workspace', cwd: '.', from: 'its root', covers: PRIVATELY_HOISTED },
    { label: 'workspace-sub', cwd: 'packages/app', from: 'a project\'s directory', covers: PRIVATELY_HOISTED },
    // A plain `pnpm install`: pnpm takes its frozen path, the projects linked as their ranges say.
    { label: 'workspace-plain', cwd: '.', from: 'its root by a plain pnpm install', plain: true, covers: PRIVATELY_HOISTED },
    // The same under linkWorkspacePackages (user try: biomejs/biome), whose check of these links is the same.
    { label: 'workspace-plain-linked', cwd: '.', from: 'its root by a plain pnpm install under linkWorkspacePackages', plain: true, settings: 'linkWorkspacePackages: true\n', covers: PRIVATELY_HOISTED },
    { label: 'workspace-scripts-off', cwd: '.', from: 'its root with scripts off, projects with scripts of their own', scriptsOff: true, covers: PRIVATELY_HOISTED },
    // Projects hoisted publicly, their commands in the root's .bin; or not hoisted at all.
    { label: 'workspace-public', cwd: '.', from: 'its root, the projects and a hoisted publicly', settings: 'publicHoistPattern:\n  - \'@ws/*\'\n  - a\n', covers: ['node_modules/@ws/lib -> ../../packages/lib', 'node_modules/.bin/lib-cli 755', 'node_modules/a -> '] },
    { label: 'workspace-shamefully', cwd: '.', from: 'its root, shamefullyHoist', settings: 'shamefullyHoist: true\n', covers: ['node_modules/@ws/lib -> ../../packages/lib', 'node_modules/.bin/lib-cli 755', 'node_modules/a -> '] },
    { label: 'workspace-no-hoist', cwd: '.', from: 'its root, hoistWorkspacePackages false', settings: 'hoistWorkspacePackages: false\n', covers: ['node_modules/.pnpm/node_modules/a -> '], absent: ['node_modules/.pnpm/node_modules/@ws/', 'node_modules/.pnpm/node_modules/app '] },
  ]
  /** Whether builds the cache lacks run natively under the pnpm tested (`runsBuilds`: from 11.28.1). */
  const buildsNative = TESTED.runsBuilds
  /** Whether packages pnpm patches on every install (their builds not allowed) are patched natively under it (its side-effects upload is one written here). */
  const patchesNative = TESTED.buildUpload != null
  for (const { label, cwd, from, scriptsOff, settings, covers, absent, plain } of WORKSPACE_INSTALLS) {
    it(`a workspace of several projects, installed from ${from}: every project's node_modules and the state are stock's, up to date; a changed project installs on top as stock`, async () => {
      const projects = structuredClone(WORKSPACE.projects) as Record<string, WorkspaceProject>
      if (scriptsOff === true) {
        projects['packages/app'].manifest.scripts = { prepare: 'echo app > prepared.txt' }
        projects['packages/tools'].manifest.scripts = { postinstall: 'echo tools > installed.txt' }
      }
      const { dir, store } = await setUp(label, WORKSPACE.root, WORKSPACE.workspace + (settings ?? ''), projects)
      const args = scriptsOff === true ? ['--config.ignore-scripts=true'] : []
      const both = await expectSameAsStock(dir, store, label, { packages: countSnapshots(dir), why: 'util', cwd, args, plain })
      if (plain === true) for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8'))
      // pnpm's summary: the counts under the workspace root (below it, under its prefix), the
      // dependencies of the project it runs in (user try: nuxt/content from playground/).
      const summary = (stdout: string): string[] => stdout.split('\n').filter((l) => /^(?:Packages: \+|\S+ +\| +\+\d|\w*[dD]ependencies:|\+ )/.test(l))
      expect(summary(both.nativeRun.stdout)).toEqual(summary(both.stockRun.stdout))
      expect(summary(both.stockRun.stdout).length).toBeGreaterThan(2)
      for (const entry of [...WORKSPACE_COVERS, ...covers]) expect(both.stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)
      for (const entry of absent ?? []) expect(both.stockTree.filter((l) => l.startsWith(entry)), entry).toEqual([])
      if (TESTED.shimWriter !== 'pnpm') {
        // Each of pnpm's warnings, as many times: the first link names the project's own
        // directory, its lifecycle stage's link again the link (user try, taze under 11.21.0).
        const stockWarned = binWarnings(both.stock, both.stockRun.stdout)
        expect(stockWarned[0]).toContain('Failed to create bin at <d>/node_modules/.bin/ws-built. ENOENT: no such file or directory, open \'<d>/')
        expect(binWarnings(both.native, both.nativeRun.stdout)).toEqual(stockWarned)
      }
      if (scriptsOff === true) expect(both.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))).toContain('"pendingBuilds":["packages/app","packages/tools"]')

      // A new dependency of one project: pnpm resolves and links it on top of each, the same way.
      for (const d of [both.stock, both.native]) {
        const file = path.join(d, 'packages', 'app', 'package.json')
        const manifest = JSON.parse(fs.readFileSync(file, 'utf8'))
        manifest.dependencies.extra = '1.0.0'
        fs.writeFileSync(file, JSON.stringify(manifest, null, 2))
      }
      expectOk(await runPnpm(['install', ...args], { projectDir: path.join(both.stock, cwd), storeDir: store, sandbox: sandbox(`${label}-stock`), registry: registry.url, env: STOCK }))
      const changed = await runPnpm(['install', ...args], { projectDir: path.join(both.native, cwd), storeDir: store, sandbox: sandbox(`${label}-native`), registry: registry.url })
      expectOk(changed)
      expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(both.stock, 'pnpm-lock.yaml'), 'utf8'))
      const relative = (d: string): string[] => relativeTree(d, store)
      expect(relative(both.native)).toEqual(relative(both.stock))
      expect(fs.existsSync(path.join(both.native, 'packages', 'app', 'node_modules', 'extra'))).toBe(true)
    })
  }

  /**
   * Names declared in two groups of a package.json (pnpm locks each once, where it installs it
   * from: optional over prod over dev over an auto-installed peer), and `link:` dependencies on
   * a folder that is no project of the workspace (with a command of its own), from the root and
   * from a project, and from a package through an override (nitro's kind of shim).
   */
  it('a dependency in two groups of package.json, and links to a folder that is no project: installed natively, stock\'s tree, up to date; a changed package.json installs on top as stock', async () => {
    const root = {
      name: 'groups',
      version: '1.0.0',
      private: true,
      dependencies: { util: '1.0.0', a: '1.0.0', 'local-tool': 'link:tools/local-tool' },
      devDependencies: { util: '1.0.0', '@scope/tool': '1.0.0', host: '1.0.0', 'plugin-a': '1.0.0' },
      optionalDependencies: { a: '1.0.0', '@scope/tool': '1.0.0' },
      peerDependencies: { host: '^1.0.0' },
    }
    const projects = {
      'packages/app': { manifest: { name: 'app', version: '1.0.0', dependencies: { f: '1.0.0', 'local-tool': 'link:../../tools/local-tool', 'plugin-b': '1.0.0' }, devDependencies: { f: '1.0.0' } } },
      'tools/local-tool': { manifest: { name: 'local-tool', version: '0.0.0', bin: { 'local-cmd': 'cli.js' } }, files: { 'cli.js': [NODE_BIN, 0o755] } },
      // A package's dependency overridden to a folder (nitro's kind of shim).
      'shims/util': { manifest: { name: 'util', version: '0.0.0-shim' }, files: { 'index.js': ['module.exports = 0\n', 0o644] } },
    } satisfies Record<string, WorkspaceProject>
    const { dir, store } = await setUp('two-groups', root, 'packages:\n  - \'packages/*\'\nminimumReleaseAge: 0\noverrides:\n  plugin-b>util: link:./shims/util\n', projects)
    const read = readLockfileFile(dir)
    if (typeof read === 'string') throw new Error(read)
    const groups = Object.fromEntries(DEPENDENCY_GROUPS.map((group) => [group, Object.keys(read.lockfile.importers['.'][group] ?? {}).sort()]))
    expect(groups).toEqual({ dependencies: ['local-tool', 'util'], devDependencies: ['host', 'plugin-a'], optionalDependencies: ['@scope/tool', 'a'] })
    expect(read.lockfile.packages?.['plugin-b@1.0.0(host@1.0.0)']?.dependencies?.util).toBe('link:shims/util')
    const both = await expectSameAsStock(dir, store, 'two-groups', { packages: countSnapshots(dir), why: 'util' })
    for (const entry of ['node_modules/local-tool -> ../tools/local-tool', 'node_modules/.bin/local-cmd 755', 'packages/app/node_modules/local-tool -> ../../../tools/local-tool',
      'packages/app/node_modules/.bin/local-cmd 755', 'packages/app/node_modules/f -> ', 'node_modules/a -> ', 'node_modules/.bin/acmd 755', 'node_modules/@scope/tool -> ', 'node_modules/util -> ']) {
      expect(both.stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)
    }
    expect(both.stockTree).toContain('node_modules/.pnpm/plugin-b@1.0.0_host@1.0.0/node_modules/util -> ../../../../shims/util')

    // A new dependency of one project: pnpm resolves and links it on top of each, the same way.
    for (const d of [both.stock, both.native]) {
      const file = path.join(d, 'packages', 'app', 'package.json')
      fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), devDependencies: { f: '1.0.0', extra: '1.0.0' } }, null, 2))
    }
    expectOk(await runPnpm(['install'], { projectDir: both.stock, storeDir: store, sandbox: sandbox('two-groups-stock'), registry: registry.url, env: STOCK }))
    expectOk(await runPnpm(['install'], { projectDir: both.native, storeDir: store, sandbox: sandbox('two-groups-native'), registry: registry.url }))
    expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(both.stock, 'pnpm-lock.yaml'), 'utf8'))
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(relative(both.stock))
    expect(fs.existsSync(path.join(both.native, 'packages', 'app', 'node_modules', 'extra'))).toBe(true)
  })

  /**
   * A build pnpm denies, of a package whose dependency is a workspace project (`link:`, through
   * an override): pnpm's first link writes every dependency's command through the links beside
   * the package, its build step then the registry dependency's again by its own directory
   * (without `NODE_PATH` before 11.28.10), and the package's own command.
   */
  it('a build pnpm denies, of a package depending on a workspace project with a command (link:) and on a registry package with one: the package\'s .bin as pnpm\'s first link and build step leave it, natively; stock\'s tree, up to date', async () => {
    const root = { name: 'denied-on-project', version: '1.0.0', private: true, dependencies: { 'builds-on-project': '1.0.0' } }
    const projects = {
      'packages/ws-cmd': { manifest: { name: 'ws-cmd', version: '1.0.0', bin: { 'ws-cmd': 'cmd.js' } }, files: { 'cmd.js': [NODE_BIN, 0o755] } },
    } satisfies Record<string, WorkspaceProject>
    const workspace = 'packages:\n  - \'packages/*\'\nminimumReleaseAge: 0\nallowBuilds:\n  builds-on-project: false\noverrides:\n  builds-on-project>ws-cmd: link:./packages/ws-cmd\n'
    const { dir, store } = await setUp('denied-on-project', root, workspace, projects)
    const read = readLockfileFile(dir)
    if (typeof read === 'string') throw new Error(read)
    expect(read.lockfile.packages?.['builds-on-project@1.0.0']?.dependencies?.['ws-cmd']).toBe('link:packages/ws-cmd')
    const both = await expectSameAsStock(dir, store, 'denied-on-project', { packages: countSnapshots(dir), why: 'f' })
    const bins = 'node_modules/.pnpm/builds-on-project@1.0.0/node_modules/builds-on-project/node_modules/.bin/'
    for (const entry of ['node_modules/.pnpm/builds-on-project@1.0.0/node_modules/ws-cmd -> ', `${bins}ws-cmd 755`, `${bins}fcmd 755`, `${bins}bop-cli 755`]) {
      expect(both.stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)
    }
    expect(both.stockTree.filter((l) => l.includes('built.txt'))).toEqual([])
  })

  it('a cold store: the packages are downloaded from the registry pnpm is configured with, then installed natively: stock\'s tree, up to date', async () => {
    const project = PROJECTS[0]
    const { dir } = await setUp('cold', project.manifest, project.workspace)
    const { stock, stockStore, stockRun, native, nativeStore, run, trace } = await installCold(dir, 'cold')
    expect(trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, .*downloaded`, 'm'))
    expect(trace.split('\n').filter((l) => l.startsWith(`fetch ${registry.url}`))).toHaveLength(countSnapshots(dir))
    expect(run.stdout).toContain('Already up to date')
    expect(fromLockfile(run.stdout)).toBe(fromLockfile(stockRun.stdout))
    expect(relativeTree(native, nativeStore)).toEqual(relativeTree(stock, stockStore))
    // The store lists the one project installed from it, as stock's.
    expect(fs.readdirSync(path.join(nativeStore, 'v11', 'projects'))).toHaveLength(1)
    expectListedAsStock(nativeStore, native, stockStore, stock)
    expect(verdictLines(path.join(sandbox('cold-native'), 'cache'), native)).toEqual(verdictLines(path.join(sandbox('cold-stock'), 'cache'), stock))
  })

  it('under pnpm\'s default minimumReleaseAge, the registry\'s metadata showing every version older than a day: installed natively, as stock', async () => {
    const project = PROJECTS[1]
    const { dir, store } = await setUp('default-age', project.manifest, project.workspace.replace('minimumReleaseAge: 0\n', ''))
    const before = registry.requests.length
    const both = await expectSameAsStock(dir, store, 'default-age', { packages: countSnapshots(dir), why: 'util', online: true })
    // Stock asked for each package's metadata, and so did the native install.
    const asked = registry.requests.slice(before).filter((r) => r.url === '/b')
    expect(asked.map((r) => r.userAgent?.startsWith('@cas/native') === true).sort()).toEqual([false, true])

    // Stock's pnpm recorded its verdict on that lockfile: after `rm -rf node_modules` the native
    // install takes the verdict and asks the registry nothing.
    fs.rmSync(path.join(both.stock, 'node_modules'), { recursive: true })
    const asking = registry.requests.length
    const traceFile = path.join(base, 'default-age-again-trace.txt')
    const again = await runPnpm(['install', '--frozen-lockfile'], { projectDir: both.stock, storeDir: store, sandbox: sandbox('default-age-stock'), registry: registry.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expectOk(again)
    expect(again.stdout).toContain('Already up to date')
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(registry.requests.slice(asking).filter((r) => r.userAgent?.startsWith('@cas/native') === true)).toEqual([])

    // A fresh clone where pnpm checked before: no verdict for its path, but one for its content
    // (pnpm's hash of the lockfile it read), which pnpm takes too: the native install asks the
    // registry nothing, though pnpm's metadata cache is gone and the file's bytes differ (its
    // YAML laid out another way).
    const cacheDir = path.join(sandbox('default-age-stock'), 'cache')
    for (const entry of fs.readdirSync(cacheDir)) if (entry !== 'lockfile-verified.jsonl') fs.rmSync(path.join(cacheDir, entry), { recursive: true })
    const recorded = fs.readFileSync(path.join(cacheDir, 'lockfile-verified.jsonl'), 'utf8')
    /** A clone whose lockfile says the same in other YAML. */
    const relaidClone = (label: string): string => {
      const cloned = clone(dir, label)
      const lockfile = path.join(cloned, 'pnpm-lock.yaml')
      const relaid = fs.readFileSync(lockfile, 'utf8').replace(/^( +)resolution: \{integrity: ([^}]+)\}$/gm, '$1resolution:\n$1  integrity: "$2"')
      expect(relaid).not.toBe(fs.readFileSync(lockfile, 'utf8'))
      fs.writeFileSync(lockfile, relaid)
      return cloned
    }
    const again2 = relaidClone('default-age-reclone')
    const asking2 = registry.requests.length
    const traceFile2 = path.join(base, 'default-age-reclone-trace.txt')
    expectOk(await runPnpm(['install', '--frozen-lockfile'], { projectDir: again2, storeDir: store, sandbox: sandbox('default-age-stock'), registry: registry.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile2 } }))
    expect(fs.readFileSync(traceFile2, 'utf8')).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(registry.requests.slice(asking2).filter((r) => r.userAgent?.startsWith('@cas/native') === true)).toEqual([])
    // pnpm then records the verdict for the new path too: the native install's line is stock's
    // (a stock install of another such clone, from the same verdicts), but for the path and the file's stat.
    const stockReclone = relaidClone('default-age-reclone-stock')
    const stockCache = path.join(sandbox('default-age-reclone-stock'), 'cache')
    fs.mkdirSync(stockCache, { recursive: true })
    fs.writeFileSync(path.join(stockCache, 'lockfile-verified.jsonl'), recorded)
    expectOk(await runPnpm(['install', '--frozen-lockfile'], { projectDir: stockReclone, storeDir: store, sandbox: sandbox('default-age-reclone-stock'), registry: registry.url, env: STOCK }))
    const added = (cache: string, cloned: string): string[] => {
      expect(fs.readFileSync(path.join(cache, 'lockfile-verified.jsonl'), 'utf8').startsWith(recorded)).toBe(true)
      return verdictLines(cache, cloned, { from: recorded.length, time: true })
    }
    expect(added(cacheDir, again2)).toHaveLength(1)
    expect(added(cacheDir, again2)).toEqual(added(stockCache, stockReclone))
  })

  /**
   * A clone installed by stock and one with the plugin, online, pnpm's supply-chain check failing:
   * the native install steps aside saying `skipped`, and pnpm refuses both alike (`refusal`: its
   * error code), with nothing recorded as installed. (How much pnpm itself lays out before its
   * check fails depends on timing, in stock too.)
   */
  async function expectCheckRefusedAsStock (dir: string, store: string, label: string, skipped: RegExp, refusal: RegExp): Promise<void> {
    const online = { registry: registry.url }
    const stock = clone(dir, `${label}-stock`)
    const stockRun = await runPnpm(['install', '--frozen-lockfile'], { projectDir: stock, storeDir: store, sandbox: sandbox(`${label}-stock`), env: STOCK, ...online })
    const native = clone(dir, `${label}-native`)
    const traceFile = path.join(base, `${label}-trace.txt`)
    const nativeRun = await runPnpm(['install', '--frozen-lockfile'], { projectDir: native, storeDir: store, sandbox: sandbox(`${label}-native`), env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile }, ...online })
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(skipped)
    const refused = refusal.exec(stockRun.stdout + stockRun.stderr)
    expect(stockRun.code).not.toBe(0)
    expect(refused).not.toBeNull()
    expect(nativeRun.code).toBe(stockRun.code)
    expect(nativeRun.stdout + nativeRun.stderr).toContain(refused![0])
    expect(fs.existsSync(path.join(native, 'node_modules', '.pnpm-workspace-state-v1.json'))).toBe(false)
  }

  it('under the default minimumReleaseAge, a version published within the day: left to pnpm, which refuses the lockfile as stock does', async () => {
    const { dir, store } = await setUp('young', { name: 'young', version: '1.0.0', dependencies: { fresh: '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\n')
    const workspace = path.join(dir, 'pnpm-workspace.yaml')
    fs.writeFileSync(workspace, fs.readFileSync(workspace, 'utf8').replace('minimumReleaseAge: 0\n', ''))
    await expectCheckRefusedAsStock(dir, store, 'young', /^native install skipped: fresh@1\.0\.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first$/m, /ERR_PNPM_MINIMUM_RELEASE_AGE_VIOLATION.*/)
  })

  it('under the default minimumReleaseAge, a package whose metadata has no publish times (pnpm passes it with a warning): installed natively, pnpm\'s warning in its words, as stock', async () => {
    const { dir, store } = await setUp('timeless', { name: 'timeless-user', version: '1.0.0', dependencies: { timeless: '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\n')
    const workspace = path.join(dir, 'pnpm-workspace.yaml')
    fs.writeFileSync(workspace, fs.readFileSync(workspace, 'utf8').replace('minimumReleaseAge: 0\n', ''))
    const both = await expectSameAsStock(dir, store, 'timeless', { packages: countSnapshots(dir), why: 'util', online: true })
    const warned = (run: PnpmRun) => run.stdout.split('\n').filter((l) => l.includes('The metadata of timeless is missing the "time" field'))
    expect(warned(both.stockRun)).toEqual(['[WARN] The metadata of timeless is missing the "time" field; skipping the minimumReleaseAge check for this package.'])
    expect(warned(both.nativeRun)).toEqual(warned(both.stockRun))
  })

  it('under trustPolicy no-downgrade, every version with no less trust evidence than those published before it (the registry\'s full metadata): installed natively, as stock', async () => {
    const workspace = 'minimumReleaseAge: 0\ntrustPolicy: no-downgrade\ntrustPolicyExclude:\n  - taken-over\n'
    const { dir, store } = await setUp('trusted', { name: 'trusted', version: '1.0.0', dependencies: { signed: '1.1.0', 'taken-over': '1.1.0' } }, workspace)
    const before = registry.requests.length
    const both = await expectSameAsStock(dir, store, 'trusted', { packages: countSnapshots(dir), why: 'util', online: true })
    // The native install asked for the full metadata of the packages the policy tests (not the excluded one).
    const asked = registry.requests.slice(before).filter((r) => r.userAgent?.startsWith('@cas/native') === true).map((r) => r.url).sort()
    expect(asked).toEqual(['/signed', '/util'])
    expect(both.trace).not.toMatch(/skipped/)
  })

  it('under trustPolicy no-downgrade, a version with less trust evidence than one published before it: left to pnpm, which refuses it as stock does', async () => {
    const { dir, store } = await setUp('downgrade', { name: 'downgrade', version: '1.0.0', dependencies: { 'taken-over': '1.1.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\n')
    fs.appendFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'trustPolicy: no-downgrade\n')
    await expectCheckRefusedAsStock(dir, store, 'downgrade', /^native install skipped: taken-over@1\.1\.0: less trust evidence than a version published before it: pnpm checks the lockfile first$/m, /ERR_PNPM_\w*TRUST\w*.*/)
  })

  it('a plain `pnpm install` of a fresh clone whose lockfile is up to date: installed natively (pnpm would take its frozen path), stock\'s tree and state, the lockfile unchanged', async () => {
    const project = PROJECTS[0]
    const { dir, store } = await setUp('plain', project.manifest, project.workspace)
    const lockfile = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'))
    const both = await expectSameAsStock(dir, store, 'plain', { packages: countSnapshots(dir), why: 'util', plain: true })
    expect(both.trace).not.toMatch(/^prelink/m)
    // Neither rewrote the lockfile: pnpm's own plain install writes only the current lockfile.
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'pnpm-lock.yaml')).equals(lockfile)).toBe(true)
  })

  it('a plain `pnpm install` whose package.json has a new dependency: left to pnpm, which resolves it, to stock\'s result', async () => {
    const project = PROJECTS[0]
    const { dir, store } = await setUp('plain-changed', project.manifest, project.workspace)
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, dependencies: { ...manifest.dependencies, extra: '1.0.0' } }, null, 2))
    const both = await installBoth(dir, store, 'plain-changed', { plain: true, online: true })
    expect(both.trace).toMatch(/^native install skipped: the lockfile is not up to date with package\.json \(extra: package\.json wants "1\.0\.0", the lockfile has undefined\)$/m)
    expect(both.trace).toMatch(/^prelink skipped: not a --frozen-lockfile install$/m)
    expect(both.nativeRun.stdout).toMatch(/^\+ extra 1\.0\.0$/m)
    expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(both.stock, 'pnpm-lock.yaml'), 'utf8'))
    expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).toContain('extra@1.0.0')
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(both.stockTree.map((l) => l.split(both.stock).join('<p>')))
  })

  /** A project taking its versions from the default catalog and a named one (an entry no one uses beside them). */
  const CATALOG_PROJECT = {
    manifest: { name: 'catalogs', version: '1.0.0', dependencies: { util: 'catalog:', host: 'catalog:tools', a: '2.0.0' }, devDependencies: { f: 'catalog:tools' } },
    // catalogMode only decides what `pnpm add` saves: a frozen install is the same under any.
    workspace: 'minimumReleaseAge: 0\ncatalogMode: strict\ncatalog:\n  util: 1.0.0\n  unused: ^1.0.0\ncatalogs:\n  tools:\n    host: ^1.0.0\n    f: 2.0.0\n',
  }

  it('catalog: and catalog:<name> specifiers: installed natively, stock\'s tree and state (the catalogs recorded), up to date', async () => {
    const { dir, store } = await setUp('catalogs', CATALOG_PROJECT.manifest, CATALOG_PROJECT.workspace)
    expect(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')).toMatch(/^catalogs:\n {2}default:\n {4}util:\n/m)
    const both = await expectSameAsStock(dir, store, 'catalogs', { packages: countSnapshots(dir), why: 'util' })
    const state = both.stockTree.find((l) => l.startsWith('node_modules/.pnpm-workspace-state-v1.json '))!
    expect(state).toContain('"catalogs":{"default":{"util":"1.0.0","unused":"^1.0.0"},"tools":{"host":"^1.0.0","f":"2.0.0"}}')
    expect(both.stockTree).toContainEqual('node_modules/f -> .pnpm/f@2.0.0/node_modules/f')
    // The workspace file is as it was: a frozen install rewrites none of it.
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'pnpm-workspace.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'utf8'))
  })

  it('cleanupUnusedCatalogs with an entry no one uses: left to pnpm, which removes it from pnpm-workspace.yaml, as stock', async () => {
    const { dir, store } = await setUp('catalog-prune', CATALOG_PROJECT.manifest, CATALOG_PROJECT.workspace)
    const workspace = path.join(dir, 'pnpm-workspace.yaml')
    fs.writeFileSync(workspace, `${fs.readFileSync(workspace, 'utf8')}cleanupUnusedCatalogs: true\n`)
    const both = await installBoth(dir, store, 'catalog-prune')
    expect(both.trace).toMatch(/^native install skipped: cleanupUnusedCatalogs: pnpm removes catalog entries no project uses from pnpm-workspace\.yaml$/m)
    expect(both.nativeRun.stdout).toContain(PNPM_INSTALLED)
    const stockWorkspace = fs.readFileSync(path.join(both.stock, 'pnpm-workspace.yaml'), 'utf8')
    expect(stockWorkspace).not.toContain('unused')
    expect(fs.readFileSync(path.join(both.native, 'pnpm-workspace.yaml'), 'utf8')).toBe(stockWorkspace)
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(relative(both.stock))
  })

  it('cleanupUnusedCatalogs with every entry used: installed natively, stock\'s tree, pnpm-workspace.yaml unchanged', async () => {
    const { dir, store } = await setUp('catalog-prune-used', CATALOG_PROJECT.manifest, `${CATALOG_PROJECT.workspace.replace('  unused: ^1.0.0\n', '')}cleanupUnusedCatalogs: true\n`)
    const both = await expectSameAsStock(dir, store, 'catalog-prune-used', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'pnpm-workspace.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'utf8'))
  })

  /**
   * A project whose overrides rewrite its own dependencies' specifiers, which pnpm applies to
   * each project's manifest before its frozen check (so the importer records the overridden
   * ones): a `catalog:` value (recorded in the lockfile's overrides as its entry), a
   * `parent>name` one for the project itself, one on a `catalog:` dependency, one on a peer.
   */
  const OVERRIDES_PROJECT = {
    manifest: { name: 'overridden', version: '1.0.0', dependencies: { util: '^1.0.0', 'plugin-b': '1.0.0', host: '^1.0.0', a: 'catalog:' }, devDependencies: { f: '2.0.0' }, peerDependencies: { 'auto-peer': '^1.0.0' } },
    workspace: "minimumReleaseAge: 0\ncatalog:\n  util: 2.0.0\n  a: 3.0.0\noverrides:\n  util: 'catalog:'\n  'overridden>host': 1.0.0\n  a: 1.0.0\n  auto-peer: 1.0.0\n",
  }

  it('overrides that rewrite the project\'s own dependencies (a catalog: value, parent>name, a catalog: dependency, a peer): installed natively, stock\'s tree, up to date', async () => {
    const { dir, store } = await setUp('overrides', OVERRIDES_PROJECT.manifest, OVERRIDES_PROJECT.workspace)
    const lockfile = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')
    expect(lockfile).toMatch(/^overrides:\n {2}util: 2\.0\.0\n {2}overridden>host: 1\.0\.0\n/m)
    expect(lockfile).toMatch(/^ {6}util:\n {8}specifier: 2\.0\.0\n/m)
    expect(lockfile).toMatch(/^ {6}a:\n {8}specifier: 1\.0\.0\n/m)
    const both = await expectSameAsStock(dir, store, 'overrides', { packages: countSnapshots(dir), why: 'util' })
    expect(both.stockTree).toContainEqual('node_modules/util -> .pnpm/util@2.0.0/node_modules/util')
    expect(both.stockTree).toContainEqual('node_modules/host -> .pnpm/host@1.0.0/node_modules/host')

    // The head start reads the manifests as pnpm checks them too: with the native install off, it links the virtual store.
    const headStart = clone(dir, 'overrides-head-start')
    const traceFile = path.join(base, 'overrides-head-start-trace.txt')
    expectOk(await runPnpm(['install', '--frozen-lockfile'], { projectDir: headStart, storeDir: store, sandbox: sandbox('overrides-head-start'), env: { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_TRACE: traceFile } }))
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(new RegExp(`^prelink ${countSnapshots(dir)} linked, 0 left to pnpm`, 'm'))
    expect(tree(headStart, store).map((l) => l.split(headStart).join('<p>'))).toEqual(both.stockTree.map((l) => l.split(both.stock).join('<p>')))
  })

  it('an override by a "$name" reference (deprecated: pnpm warns, and replaces it with the root package.json\'s specifier): installed natively, stock\'s tree', async () => {
    const { dir, store } = await setUp('overrides-ref', OVERRIDES_PROJECT.manifest, `${OVERRIDES_PROJECT.workspace}  f: $util\n`)
    expect(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')).toMatch(/^ {6}f:\n {8}specifier: \^1\.0\.0\n/m)
    const both = await installBoth(dir, store, 'overrides-ref')
    expect(both.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(both.nativeRun.stdout).toContain('Already up to date')
    expect(both.nativeRun.stdout + both.nativeRun.stderr).toMatch(/The "\$" version reference syntax in overrides is deprecated/)
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(relative(both.stock))
    expect(both.stockTree).toContainEqual('node_modules/f -> .pnpm/f@1.0.0/node_modules/f')
  })

  /**
   * Package extensions (user try: TanStack/store's) add a dependency to a registry package and
   * an optional peer to another. pnpm resolved with them; a frozen install only checks the
   * lockfile's `packageExtensionsChecksum` against them and lays the lockfile out.
   */
  const EXTENDED_PROJECT = {
    manifest: { name: 'extended', version: '1.0.0', dependencies: { util: '^1.0.0', host: '^1.0.0' } },
    workspace: "minimumReleaseAge: 0\npackageExtensions:\n  'util@1':\n    dependencies:\n      f: 2.0.0\n  host:\n    peerDependencies:\n      a: ^1.0.0\n    peerDependenciesMeta:\n      a:\n        optional: true\n",
  }

  it('packageExtensions (a dependency added to a package, an optional peer to another): installed natively, stock\'s tree', async () => {
    const { dir, store } = await setUp('package-extensions', EXTENDED_PROJECT.manifest, EXTENDED_PROJECT.workspace)
    expect(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')).toMatch(/^packageExtensionsChecksum: sha256-/m)
    const both = await expectSameAsStock(dir, store, 'package-extensions', { packages: countSnapshots(dir), why: 'util' })
    expect(both.stockTree).toContainEqual('node_modules/.pnpm/util@1.0.0/node_modules/f -> ../../f@2.0.0/node_modules/f')
  })

  /** Two projects under a scope's folder (biomejs/biome's `packages/@biomejs/*`), app depending on lib by `appSpec`. */
  const scopedProjects = (appSpec: string, libVersion: string): Record<string, WorkspaceProject> => ({
    'packages/@scope/app': { manifest: { name: '@scope/app', version: '1.0.0', dependencies: { '@scope/lib': appSpec, a: '1.0.0' } } },
    'packages/@scope/lib': { manifest: { name: '@scope/lib', version: libVersion, dependencies: { util: '1.0.0' } } },
  })
  const SCOPED_PACKAGES = "packages:\n  - 'packages/@scope/*'\n"

  it('a workspace whose packages glob names a scope\'s folder (packages/@scope/*, biomejs/biome\'s kind): its projects found as pnpm finds them, installed natively, stock\'s tree, up to date', async () => {
    const { dir, store } = await setUp('scoped-globs', { name: 'scoped-root', version: '1.0.0', private: true }, `minimumReleaseAge: 0\n${SCOPED_PACKAGES}`, scopedProjects('workspace:*', '1.0.0'))
    const both = await expectSameAsStock(dir, store, 'scoped-globs', { packages: countSnapshots(dir), why: 'util' })
    expect(both.stockTree).toContainEqual('packages/@scope/app/node_modules/@scope/lib -> ../../../lib')
  })

  it('a plain `pnpm install` under linkWorkspacePackages, projects linked for a plain range and for an empty workspace: range (biomejs/biome\'s): installed natively, stock\'s tree, up to date', async () => {
    const root = { name: 'linked-root', version: '1.0.0', private: true, devDependencies: { '@scope/lib': 'workspace:' } }
    const { dir, store } = await setUp('plain-linked-ranges', root, `minimumReleaseAge: 0\nlinkWorkspacePackages: true\n${SCOPED_PACKAGES}`, scopedProjects('^1.0.0', '1.2.0'))
    const lockfile = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')
    expect(lockfile).toContain("      '@scope/lib':\n        specifier: ^1.0.0\n        version: link:../lib\n")
    expect(lockfile).toContain("      '@scope/lib':\n        specifier: 'workspace:'\n        version: link:packages/@scope/lib\n")
    const both = await expectSameAsStock(dir, store, 'plain-linked-ranges', { packages: countSnapshots(dir), why: 'util', plain: true })
    expect(both.stockTree).toContainEqual('packages/@scope/app/node_modules/@scope/lib -> ../../../lib')
  })

  /**
   * `ignoredOptionalDependencies` (user try: biomejs/biome's): pnpm resolved without the optional
   * dependencies they match, a project's and a package's (linter-core's `opt-helper`), and drops
   * them from every manifest it reads, from `dependencies` too; a frozen install checks the
   * project's importer against its manifest so read.
   */
  const IGNORING_PROJECT = { name: 'ignores', version: '1.0.0', dependencies: { 'linter-core': '1.0.0', a: '1.0.0' }, optionalDependencies: { a: '1.0.0', 'mac-only': '1.0.0', util: '1.0.0' } }
  const ignoring = (patterns: string[]): string => `minimumReleaseAge: 0\nignoredOptionalDependencies:\n${patterns.map((p) => `  - '${p}'\n`).join('')}`

  it('ignoredOptionalDependencies (a project\'s own, one also in its dependencies, a package\'s, by a glob): installed natively, stock\'s tree, up to date', async () => {
    const { dir, store } = await setUp('ignored-optionals', IGNORING_PROJECT, ignoring(['a', 'mac-*', 'opt-helper']))
    const lockfile = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')
    expect(lockfile).toMatch(/^ignoredOptionalDependencies:\n {2}- a\n {2}- mac-\*\n {2}- opt-helper\n/m)
    expect(lockfile).not.toMatch(/^ {2}(a|mac-only|opt-helper)@1\.0\.0:/m)
    const both = await expectSameAsStock(dir, store, 'ignored-optionals', { packages: countSnapshots(dir), why: 'util' })
    expect(both.stockTree).toContainEqual('node_modules/util -> .pnpm/util@1.0.0/node_modules/util')
  })

  /**
   * pnpm's install sorts the configured list in place before it records the workspace state, so
   * its own check of that state against the configured order finds the setting changed on every
   * later install, and installs again over what is there (stock's second install too).
   */
  it('ignoredOptionalDependencies configured out of order: installed natively, the workspace state records them sorted, as stock', async () => {
    const { dir, store } = await setUp('ignored-optionals-unsorted', IGNORING_PROJECT, ignoring(['opt-helper', 'mac-*', 'a']))
    const both = await installBoth(dir, store, 'ignored-optionals-unsorted')
    expect(both.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    const state = JSON.parse(fs.readFileSync(path.join(both.native, 'node_modules', '.pnpm-workspace-state-v1.json'), 'utf8'))
    expect(state.settings.ignoredOptionalDependencies).toEqual(['a', 'mac-*', 'opt-helper'])
    expect(tree(both.native, store).map((l) => l.split(both.native).join('<p>'))).toEqual(both.stockTree.map((l) => l.split(both.stock).join('<p>')))
  })

  it('packageExtensions that extend a project of the workspace (pnpm\'s hook extends its manifest too): left to pnpm, stock\'s tree', async () => {
    const workspace = `${EXTENDED_PROJECT.workspace}  extended:\n    dependencies:\n      a: 1.0.0\n`
    const { dir, store } = await setUp('package-extensions-project', EXTENDED_PROJECT.manifest, workspace)
    const both = await installBoth(dir, store, 'package-extensions-project')
    expect(both.trace).toMatch(/^native install skipped: packageExtensions extend the workspace project extended$/m)
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(relative(both.stock))
  })

  /**
   * A frozen install pnpm refuses after `edit` (a project file changed after the lockfile was
   * written): the plugin's native install and head start step aside (`why`, in the trace), and
   * pnpm refuses with stock's `code` and words, leaving `node_modules` as stock leaves it.
   */
  async function expectRefusedAsStock (label: string, edit: (dir: string) => void, code: string, why: RegExp): Promise<string> {
    const { dir, store } = await setUp(label, CATALOG_PROJECT.manifest, CATALOG_PROJECT.workspace)
    edit(dir)
    const stock = clone(dir, `${label}-stock`)
    const stockRun = await runPnpm(['install', '--frozen-lockfile'], { projectDir: stock, storeDir: store, sandbox: sandbox(`${label}-stock`), env: STOCK })
    const native = clone(dir, `${label}-native`)
    const traceFile = path.join(base, `${label}-trace.txt`)
    const nativeRun = await runPnpm(['install', '--frozen-lockfile'], { projectDir: native, storeDir: store, sandbox: sandbox(`${label}-native`), env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    const trace = fs.readFileSync(traceFile, 'utf8')
    expect(trace).toMatch(new RegExp(`^native install skipped: ${why.source}`, 'm'))
    expect(trace).toMatch(new RegExp(`^prelink skipped: ${why.source}`, 'm'))
    const refusal = new RegExp(`${code}.*`).exec(stockRun.stdout + stockRun.stderr)
    expect(stockRun.code).not.toBe(0)
    expect(refusal).not.toBeNull()
    expect(nativeRun.code).toBe(stockRun.code)
    expect(nativeRun.stdout + nativeRun.stderr).toContain(refusal![0])
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(native)).toEqual(relative(stock))
    expect(relative(native).filter((l) => l.startsWith('node_modules/.pnpm/'))).toEqual([])
    return refusal![0]
  }

  it('a catalog entry changed in pnpm-workspace.yaml after the lockfile was written, --frozen-lockfile: pnpm refuses it, with the plugin as in stock, nothing linked', async () => {
    const refusal = await expectRefusedAsStock('catalog-changed', (dir) => {
      const workspace = path.join(dir, 'pnpm-workspace.yaml')
      fs.writeFileSync(workspace, fs.readFileSync(workspace, 'utf8').replace('  util: 1.0.0\n', '  util: 2.0.0\n'))
    }, 'ERR_PNPM_LOCKFILE_CONFIG_MISMATCH', /the catalogs differ from the lockfile \(the default catalog's util is "2\.0\.0", the lockfile has "1\.0\.0"\)/)
    expect(refusal).toContain('"catalogs"')
  })

  /** The lockfile's catalog entry for util resolved to 2.0.0, its importer's util locked at 1.0.0. */
  const staleCatalogResolution = (dir: string): void => {
    const lockfile = path.join(dir, 'pnpm-lock.yaml')
    const text = fs.readFileSync(lockfile, 'utf8')
    const edited = text.replace(/^( {4}util:\n {6}specifier: 1\.0\.0\n {6}version: )1\.0\.0$/m, '$12.0.0')
    expect(edited).not.toBe(text)
    fs.writeFileSync(lockfile, edited)
  }

  it.runIf(TESTED.catalogResolutions)('a lockfile whose catalog entry was resolved to another version than its importer locked: pnpm refuses it, with the plugin as in stock, nothing linked', async () => {
    await expectRefusedAsStock('catalog-stale', staleCatalogResolution, 'ERR_PNPM_OUTDATED_LOCKFILE', /the lockfile is not up to date with .*util is locked at 1\.0\.0, its default catalog entry at 2\.0\.0/)
  })

  it.skipIf(TESTED.catalogResolutions)('a lockfile whose catalog entry was resolved to another version than its importer locked, under a release that does not compare them (before 11.22.0): installed natively as stock installs it', async () => {
    const { dir, store } = await setUp('catalog-stale-unchecked', CATALOG_PROJECT.manifest, CATALOG_PROJECT.workspace)
    staleCatalogResolution(dir)
    const both = await expectSameAsStock(dir, store, 'catalog-stale-unchecked', { packages: countSnapshots(dir), why: 'util' })
    expect(both.stockTree).toContainEqual('node_modules/util -> .pnpm/util@1.0.0/node_modules/util')
  })

  it('with scripts off (--config.ignore-scripts=true): the root shims through the packages\' own directories and every build pending, as stock', async () => {
    const project = PROJECTS[1]
    const { dir, store } = await setUp('ignore-scripts', project.manifest, project.workspace)
    const both = await expectSameAsStock(dir, store, 'ignore-scripts', { packages: countSnapshots(dir), why: 'util', args: ['--config.ignore-scripts=true'] })
    const modules = both.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))!
    expect(modules).toContain('"pendingBuilds":["builder@1.0.0"]')
    expect(modules).not.toContain('ignoredBuilds')
    // A package whose row requires a build, imported unbuilt, has files of its own (pnpm's `needsPrivateFiles`); the others are the store's.
    expect(both.stockTree).toContainEqual(expect.stringMatching(/^node_modules\/\.pnpm\/builder@1\.0\.0\/node_modules\/builder\/package\.json 644 \S+ own$/))
    expect(both.stockTree).toContainEqual(expect.stringMatching(/^node_modules\/\.pnpm\/[^/]+\/node_modules\/[^/]+\/package\.json 644 \S+$/))
  })

  it('with scripts off, the builds pending in the order pnpm walks the lockfile (breadth-first from the project, not the lockfile\'s), as stock', async () => {
    const { dir, store } = await setUp('pending-order', { name: 'pending-order', version: '1.0.0', dependencies: { builder: '1.0.0', 'native-build': '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  builder: false\n  native-build: false\n  logs-build: false\n')
    const both = await expectSameAsStock(dir, store, 'pending-order', { packages: countSnapshots(dir), why: 'builder', args: ['--config.ignore-scripts=true'] })
    // native-build's dependency logs-build comes after it, though the lockfile lists it first.
    expect(both.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))).toContain('"pendingBuilds":["builder@1.0.0","native-build@1.0.0","logs-build@1.0.0"]')
  })

  /** Root scripts that log their stage, the last one its whole environment. */
  const RECORDING_SCRIPTS = {
    install: 'echo install >> log.txt',
    postinstall: 'echo postinstall >> log.txt',
    prepare: 'echo prepare >> log.txt && env | sort > env.txt',
  }

  /** A clone's `env.txt` as its scripts saw it, the clone's own paths (project, sandbox) replaced. */
  function recordedEnv (dir: string, label: string): string {
    return fs.readFileSync(path.join(dir, 'env.txt'), 'utf8').split('\n')
      .filter((l) => !l.startsWith('CAS_NATIVE_'))
      .join('\n').split(sandbox(label)).join('<sandbox>').split(dir).join('<project>')
  }

  it('the project\'s own install, postinstall and prepare scripts: run natively in pnpm\'s order and environment, as stock', async () => {
    const { builder: _, ...dependencies } = PROJECTS[1].manifest.dependencies as Record<string, string>
    const { dir, store } = await setUp('project-scripts', { name: 'project-scripts', version: '1.0.0', dependencies, scripts: RECORDING_SCRIPTS }, 'minimumReleaseAge: 0\n')
    const both = await installBoth(dir, store, 'project-scripts')
    if (buildsNative) {
      expect(both.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, .*; the project's install, postinstall, prepare next$`, 'm'))
      expect(both.trace).toMatch(/^native install: ran the project's install, postinstall, prepare(, state validated at \d+)?$/m)
    } else {
      // A release the scripts' environment was not checked against: pnpm's own install runs them over the layout.
      expect(both.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, .*; pnpm runs the project's install, postinstall, prepare and records the state$`, 'm'))
    }
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('install\npostinstall\nprepare\n')
    expect(recordedEnv(both.native, 'project-scripts-native')).toBe(recordedEnv(both.stock, 'project-scripts-stock'))
    expect(recordedEnv(both.stock, 'project-scripts-stock')).toMatch(/^npm_lifecycle_event=prepare$/m)
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(relative(both.stock))
    // Then up to date: no script runs again, for either.
    const again = await runPnpm(['install', '--frozen-lockfile'], { projectDir: both.native, storeDir: store, sandbox: sandbox('project-scripts-native') })
    expectOk(again)
    expect(again.stdout).toContain('Already up to date')
    expect(fs.readFileSync(path.join(both.native, 'log.txt'), 'utf8')).toBe('install\npostinstall\nprepare\n')
  })

  it('a workspace with a project the lockfile does not have, --frozen-lockfile: the plugin steps aside, pnpm refuses as stock, nothing linked', async () => {
    const { dir, store } = await setUp('workspace-new-project', WORKSPACE.root, WORKSPACE.workspace, WORKSPACE.projects)
    const runs: Record<string, PnpmRun> = {}
    const traceFile = path.join(base, 'workspace-new-project-trace.txt')
    for (const side of ['stock', 'native']) {
      const clonedDir = clone(dir, `workspace-new-project-${side}`)
      fs.mkdirSync(path.join(clonedDir, 'packages', 'new'))
      fs.writeFileSync(path.join(clonedDir, 'packages', 'new', 'package.json'), JSON.stringify({ name: 'new', version: '1.0.0', dependencies: { util: '1.0.0' } }))
      runs[side] = await runPnpm(['install', '--frozen-lockfile'], { projectDir: clonedDir, storeDir: store, sandbox: sandbox(`workspace-new-project-${side}`), env: side === 'stock' ? STOCK : { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    }
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^native install skipped: the workspace's projects \(\., packages\/app, packages\/lib, packages\/new, packages\/tools\) are not the lockfile's importers/m)
    const refusal = /ERR_PNPM_OUTDATED_LOCKFILE.*/.exec(runs.stock.stdout + runs.stock.stderr)
    expect(refusal, runs.stock.stdout).not.toBeNull()
    expect(runs.native.code).toBe(runs.stock.code)
    expect(runs.native.stdout + runs.native.stderr).toContain(refusal![0])
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(path.join(base, 'workspace-new-project-native'))).toEqual(relative(path.join(base, 'workspace-new-project-stock')))
    expect(relative(path.join(base, 'workspace-new-project-native')).filter((l) => l.startsWith('node_modules/.pnpm/'))).toEqual([])
  })

  it('a plain `pnpm install` of a workspace whose linked project no longer meets its workspace: range: left to pnpm, which resolves it as stock', async () => {
    const projects = structuredClone(WORKSPACE.projects) as Record<string, WorkspaceProject>
    projects['packages/app'].manifest.dependencies = { ...projects['packages/app'].manifest.dependencies as object, '@ws/lib': 'workspace:^1.0.0' }
    const { dir, store } = await setUp('workspace-plain-stale', WORKSPACE.root, WORKSPACE.workspace, projects)
    const lib = path.join(dir, 'packages', 'lib', 'package.json')
    fs.writeFileSync(lib, JSON.stringify({ ...JSON.parse(fs.readFileSync(lib, 'utf8')), version: '2.0.0' }, null, 2))
    const stock = clone(dir, 'workspace-plain-stale-stock')
    const stockRun = await runPnpm(['install'], { projectDir: stock, storeDir: store, sandbox: sandbox('workspace-plain-stale-stock'), registry: registry.url, env: STOCK })
    const native = clone(dir, 'workspace-plain-stale-native')
    const traceFile = path.join(base, 'workspace-plain-stale-trace.txt')
    const nativeRun = await runPnpm(['install'], { projectDir: native, storeDir: store, sandbox: sandbox('workspace-plain-stale-native'), registry: registry.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^native install skipped: a plain install: packages\/app's @ws\/lib: the linked project's version 2\.0\.0 does not meet workspace:\^1\.0\.0$/m)
    expect(nativeRun.code).toBe(stockRun.code)
    const outcome = (run: PnpmRun) => /ERR_PNPM_\w+/.exec(run.stdout + run.stderr)?.[0]
    expect(outcome(nativeRun)).toBe(outcome(stockRun))
    expect(fs.readFileSync(path.join(native, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(stock, 'pnpm-lock.yaml'), 'utf8'))
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(native)).toEqual(relative(stock))
  })

  it.runIf(buildsNative)('a workspace whose projects have install and prepare scripts: run natively in pnpm\'s order (a project after those it depends on), as stock', async () => {
    const projects = structuredClone(WORKSPACE.projects) as Record<string, WorkspaceProject>
    projects['packages/app'].manifest.scripts = { prepare: 'echo app >> ../../log.txt' }
    // Slow: a project that does not wait for it (the root, through tools; app) would log first.
    projects['packages/lib'].manifest.scripts = { install: 'sleep 0.5; echo lib >> ../../log.txt' }
    const root = { ...WORKSPACE.root, scripts: { postinstall: 'echo root >> log.txt' } }
    const { dir, store } = await setUp('workspace-scripts', root, WORKSPACE.workspace, projects)
    fs.rmSync(path.join(dir, 'log.txt'))
    const both = await expectSameAsStock(dir, store, 'workspace-scripts', { packages: countSnapshots(dir), why: 'util' })
    expect(both.trace).toMatch(/^native install: ran the project's postinstall \(root\), prepare \(packages\/app\), install \(packages\/lib\)(, state validated at \d+)?$/m)
    for (const d of [both.stock, both.native]) {
      const log = fs.readFileSync(path.join(d, 'log.txt'), 'utf8').split('\n')
      expect(log[0]).toBe('lib')
      expect(log.slice(1).sort()).toEqual(['', 'app', 'root'])
    }
    // Each project's lines as pnpm's reporter shows them (the order of independent ones aside).
    const lines = (run: PnpmRun): string[] => (run.stdout + run.stderr).split('\n').filter((l) => /^(\.|packages\/\w+) (install|postinstall|prepare)[:$]/.test(l)).sort()
    expect(lines(both.nativeRun)).toEqual(lines(both.stockRun))
    expect(lines(both.stockRun)).toContain('packages/lib install: Done')
  })

  it('a package at two peers\' variants (plugin-b with host 1 and host 2): pnpm\'s Progress line, which counts it once found in the store (warm) or downloaded (cold, downloaded once), and its ndjson records', async () => {
    const projects = { 'packages/two': { manifest: { name: 'two', version: '1.0.0', dependencies: { host: '2.0.0', 'plugin-b': '1.0.0' } } } }
    const { dir, store } = await setUp('peer-variants', { name: 'root', version: '1.0.0', dependencies: { host: '1.0.0', 'plugin-b': '1.0.0' } }, "packages:\n  - 'packages/*'\nminimumReleaseAge: 0\n", projects)
    expect(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')).toMatch(/plugin-b@1\.0\.0\(host@2\.0\.0\)/)
    const progress = (run: PnpmRun): string | undefined => /^Progress: resolved .*, done$/m.exec(run.stdout)?.[0]
    const warm = await expectSameAsStock(dir, store, 'peer-variants', { packages: countSnapshots(dir), why: 'plugin-b' })
    expect(progress(warm.nativeRun)).toBe(progress(warm.stockRun))
    const cold = await installCold(dir, 'peer-variants-cold')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(progress(cold.run)).toBe(progress(cold.stockRun))
    expect(cold.trace.split('\n').filter((l) => l.startsWith('fetch ') && l.includes('plugin-b'))).toHaveLength(1)
    // ndjson: stock's progress records, each package named (resolved and imported per variant, downloaded once).
    const ndjson = await installCold(dir, 'peer-variants-ndjson', [], {}, 'ndjson')
    const records = (run: PnpmRun, root: string): string[] => run.stdout.split('\n').filter((l) => l.includes('"pnpm:progress"')).map((l) => {
      const { packageId, requester, status, to, method } = JSON.parse(l)
      return JSON.stringify({ packageId, requester: requester.replace(root, '<dir>'), status, to: to?.replace(root, '<dir>'), method })
    }).sort()
    expect(records(ndjson.run, ndjson.native).filter((r) => r.includes('plugin-b@1.0.0'))).toHaveLength(5)
    expect(records(ndjson.run, ndjson.native)).toEqual(records(ndjson.stockRun, ndjson.stock))
  })

  it.runIf(buildsNative)('a workspace project whose command\'s file its own prepare makes: the shims of the projects depending on it written again before their scripts, for the file then there, as pnpm\'s runner links them; stock\'s tree', async () => {
    const projects = structuredClone(WORKSPACE.projects) as Record<string, WorkspaceProject>
    // ws-built's file (dist/built.js) is not shipped: tools' prepare makes it, before the root's turn (the root depends on tools).
    projects['packages/tools'].manifest.scripts = { prepare: 'mkdir -p dist && printf "#!/bin/sh\\necho built\\n" > dist/built.js' }
    const root = { ...WORKSPACE.root, scripts: { postinstall: 'echo root >> log.txt' } }
    const { dir, store } = await setUp('made-command', root, WORKSPACE.workspace, projects)
    fs.rmSync(path.join(dir, 'packages', 'tools', 'dist'), { recursive: true, force: true })
    const both = await expectSameAsStock(dir, store, 'made-command', { packages: countSnapshots(dir), why: 'util' })
    expect(both.trace).toMatch(/^native install: ran the project's postinstall \(root\), prepare \(packages\/tools\)(, state validated at \d+)?$/m)
    // The root's shim runs the file as its shebang says, as stock's rewritten one does.
    const shim = fs.readFileSync(path.join(both.native, 'node_modules', '.bin', 'ws-built'), 'utf8')
    expect(shim).toBe(fs.readFileSync(path.join(both.stock, 'node_modules', '.bin', 'ws-built'), 'utf8').split(both.stock).join(both.native))
    expect(shim).not.toContain('cmd-shim-missing-target')
  })

  it('a project preinstall script (pnpm runs it before it links anything): left to pnpm whole, as stock', async () => {
    const both = await expectLeftToPnpm('project-preinstall', { name: 'p', version: '1.0.0', dependencies: { util: '1.0.0' }, scripts: { preinstall: 'ls node_modules > seen.txt; echo pre >> log.txt', postinstall: 'echo post >> log.txt' } },
      'minimumReleaseAge: 0\n', /^native install skipped: the project's preinstall script, which pnpm runs before it links anything$/m)
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('pre\npost\n')
    expect(fs.readFileSync(path.join(both.native, 'seen.txt'), 'utf8')).toBe(fs.readFileSync(path.join(both.stock, 'seen.txt'), 'utf8'))
  })

  it.runIf(buildsNative)('the project\'s scripts and a build pnpm denies: both as stock, natively', async () => {
    const { dir, store } = await setUp('project-scripts-denied', { ...PROJECTS[1].manifest, scripts: RECORDING_SCRIPTS }, PROJECTS[1].workspace)
    const both = await expectSameAsStock(dir, store, 'project-scripts-denied', { packages: countSnapshots(dir), why: 'util' })
    expect(both.trace).toMatch(/^native install: ran the project's install, postinstall, prepare(, state validated at \d+)?$/m)
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('install\npostinstall\nprepare\n')
    // Denied, so never built: stock's record of it (which pnpm's own install over the layout would not write).
    expect(both.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))).toContain('"allowBuilds":{"builder":false}')
  })

  it.skipIf(buildsNative)('the project\'s scripts and a build pnpm denies, under a release whose scripts pnpm runs: left to pnpm, saying why (its own install over the layout would not record the denied build), as the explain command says; stock\'s tree (user try: vuejs/router under 11.21.0, its simple-git-hooks)', async () => {
    const said = new RegExp(`^native install skipped: the project's install, postinstall, prepare, which pnpm runs after the layout \\(pnpm ${testedPnpmVersion.replaceAll('.', '\\.')} runs the builds itself .*\\), and pnpm then records the builds it denies \\(builder@1\\.0\\.0, …\\) otherwise than stock$`, 'm')
    const both = await expectLeftToPnpm('project-scripts-denied-older', { ...PROJECTS[1].manifest, scripts: RECORDING_SCRIPTS }, PROJECTS[1].workspace, said)
    for (const d of [both.stock, both.native]) expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('install\npostinstall\nprepare\n')
    // Told before anything is laid out: pnpm links the project's dependencies itself and lists
    // them as stock does (user try: vuejs/create-vue under 11.22.0, whose summary was missing
    // after a native layout pnpm then installed over).
    const summary = (run: PnpmRun): string[] => run.stdout.split('\n').filter((l) => /^(dependencies|devDependencies|optionalDependencies):$|^\+ /.test(l))
    expect(summary(both.stockRun).length).toBeGreaterThan(0)
    expect(summary(both.nativeRun)).toEqual(summary(both.stockRun))
    // From an empty store the build is found once downloaded: told before the projects' links.
    const { dir } = await setUp('project-scripts-denied-older-cold', { ...PROJECTS[1].manifest, scripts: RECORDING_SCRIPTS }, PROJECTS[1].workspace)
    const cold = await installCold(dir, 'project-scripts-denied-older-cold')
    expect(cold.trace).toMatch(said)
    expect(summary(cold.run)).toEqual(summary(cold.stockRun))
  })

  it('the project\'s scripts with scripts off: installed natively, the project a pending build, as stock', async () => {
    const { dir, store } = await setUp('project-scripts-off', { ...PROJECTS[1].manifest, scripts: RECORDING_SCRIPTS }, PROJECTS[1].workspace)
    const both = await expectSameAsStock(dir, store, 'project-scripts-off', { packages: countSnapshots(dir), why: 'util', args: ['--config.ignore-scripts=true'] })
    const modules = both.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))!
    expect(modules).toContain('"pendingBuilds":[".","builder@1.0.0"]')
    expect(fs.existsSync(path.join(both.native, 'log.txt'))).toBe(false)
  })

  it('the e2e fixture project (real npm packages): stock pnpm\'s node_modules, up to date', async () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(projectFixture, 'package.json'), 'utf8'))
    const { dir, store } = await setUp('fixture', manifest, fs.readFileSync(path.join(projectFixture, 'pnpm-workspace.yaml'), 'utf8'))
    const both = await expectSameAsStock(dir, store, 'fixture', { packages: countSnapshots(dir), why: 'minimist' })
    expect(both.stockTree.some((l) => l.startsWith('node_modules/.bin/is-docker 755'))).toBe(true)
  })

  /** How a committed fixture is changed before it is installed (each change said where it is made). */
  interface FixtureEdit {
    rootManifest?: (manifest: Record<string, unknown>) => Record<string, unknown>
    workspace?: (text: string) => string
  }

  /**
   * A committed project with the plugin added as for any project (`pnpm add --config`, then
   * `pnpm install`): its config dependency, and the checksum of its pnpmfile, joined to the
   * project's lockfile; its workspace settings with `minimumReleaseAge: 0` (the registry
   * stand-in's metadata has no real publish times).
   */
  async function withPlugin (label: string, fixture: string, edit: FixtureEdit = {}): Promise<string> {
    const seed = await setUp(`${label}-seed`, { name: 'seed', version: '1.0.0', dependencies: { util: '1.0.0' } }, 'minimumReleaseAge: 0\n')
    const seedLockfile = fs.readFileSync(path.join(seed.dir, 'pnpm-lock.yaml'), 'utf8')
    const envDocument = seedLockfile.slice(0, seedLockfile.indexOf('\n---\n', 4) + 5)
    const checksum = /^pnpmfileChecksum: .*$/m.exec(seedLockfile)![0]
    const configDependencies = /^configDependencies:\n(?: {2}.*\n)+/m.exec(fs.readFileSync(path.join(seed.dir, 'pnpm-workspace.yaml'), 'utf8'))![0]
    const dir = path.join(base, label)
    fs.mkdirSync(dir)
    // Every project's package.json, where the fixture has it.
    for (const file of fs.readdirSync(fixture, { recursive: true, encoding: 'utf8' }).filter((f) => path.basename(f) === 'package.json')) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
      fs.copyFileSync(path.join(fixture, file), path.join(dir, file))
    }
    if (edit.rootManifest != null) fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(edit.rootManifest(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))), null, 2))
    if (fs.existsSync(path.join(fixture, 'patches'))) fs.cpSync(path.join(fixture, 'patches'), path.join(dir, 'patches'), { recursive: true })
    const workspace = path.join(fixture, 'pnpm-workspace.yaml')
    const settings = (edit.workspace ?? ((t: string) => t))(fs.existsSync(workspace) ? fs.readFileSync(workspace, 'utf8') : '')
    fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), `${settings}\nminimumReleaseAge: 0\n${configDependencies}`)
    // Where pnpm writes it: after the overrides, before the patches and the importers.
    const text = fs.readFileSync(path.join(fixture, 'pnpm-lock.yaml'), 'utf8')
    const next = text.includes('\npatchedDependencies:\n') ? '\npatchedDependencies:\n' : '\nimporters:\n'
    const lockfile = text.replace(next, `\n${checksum}\n${next}`)
    fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), envDocument + lockfile)
    return dir
  }

  /**
   * Installs `dir` natively and as stock with `corpus` served as the registry (real npm
   * tarballs); `warm`: after a stock install of another clone on the same store, which runs the
   * builds and patches and records them in pnpm's side-effects cache.
   */
  async function expectSameAsStockFrom (corpus: ServedPackage[], dir: string, label: string, opts: InstallOptions & { packages: number, why: string, warm?: boolean, packuments?: Map<string, Record<string, unknown>>, then?: (both: Compared, store: string) => Promise<void> }): Promise<Compared> {
    const corpusRegistry = await serveTarballs([...corpus, ...plugin], { packuments: opts.packuments })
    const saved = registry
    registry = corpusRegistry
    const store = path.join(base, `${label}-store`)
    try {
      if (opts.warm === true) {
        expectOk(await runPnpm(installCommand(opts), { projectDir: clone(dir, `${label}-warm`), storeDir: store, sandbox: sandbox(`${label}-warm`), registry: registry.url, env: STOCK }))
      }
      const both = await expectSameAsStock(dir, store, label, { ...opts, online: true })
      await opts.then?.(both, store)
      return both
    } finally {
      registry = saved
      await corpusRegistry.close()
    }
  }

  /** `benchmark/download.mjs`'s cache in `out` (of `lockfile`'s packages, fetched when missing), as the registry serves them. */
  function downloaded (out: string, lockfile?: string): ServedPackage[] {
    if (lockfile != null) ensureDownloaded(lockfile, out)
    const corpus = JSON.parse(fs.readFileSync(path.join(out, 'manifest.json'), 'utf8')) as Array<{ name: string, version: string, file: string }>
    return corpus.map((t) => ({ name: t.name, version: t.version, tarball: path.join(out, t.file) }))
  }

  it('the alotta-modules lockfile (1,355 real npm packages): stock pnpm\'s node_modules, up to date', async () => {
    const corpus = downloaded(path.join(repoDir, 'benchmark', '.cache', 'tarballs'), path.join(repoDir, 'benchmark', 'fixtures', 'alotta-modules', 'pnpm-lock.yaml'))
    const dir = await withPlugin('alotta', path.join(repoDir, 'benchmark', 'fixtures', 'alotta-modules'))
    await expectSameAsStockFrom(corpus, dir, 'alotta', { packages: corpus.length, why: 'webpack' })
  }, 300_000)

  // Starter apps as their creators generate them (__test__/fixtures/projects), each with optional
  // platform packages that have dependencies of their own; builds as the fixture allows them, and
  // scripts off for the Express one, whose esbuild build (through tsx) no setting approves: stock
  // pnpm refuses it with scripts on (ERR_PNPM_IGNORED_BUILDS).
  const STARTERS = [
    { name: 'starter-vite-react-ts', why: 'react' },
    { name: 'starter-express-ts', why: 'express', args: ['--config.ignore-scripts=true'] },
    { name: 'starter-next-app', why: 'react' },
    { name: 'starter-angular-app', why: 'rxjs' },
  ]
  for (const starter of STARTERS) {
    it(`the ${starter.name} fixture (real npm packages, platform packages with dependencies of their own): stock pnpm's node_modules, up to date`, async () => {
      const fixture = path.join(repoDir, '__test__', 'fixtures', 'projects', starter.name)
      // Only what this machine installs is fetched (the other platforms' binaries weigh hundreds of MB).
      const { dir: cache, planned, skipped } = await platformCorpus(fixture, starter.name, undefined, TESTED.skipRule)
      expect(skipped.length).toBeGreaterThan(0)
      const corpus = downloaded(cache)
      const dir = await withPlugin(starter.name, fixture)
      const both = await expectSameAsStockFrom(corpus, dir, starter.name, { packages: planned.length, why: starter.why, args: starter.args })
      expect(JSON.parse(fs.readFileSync(path.join(both.native, 'node_modules', '.modules.yaml'), 'utf8')).skipped).toEqual(skipped.sort())
    }, 300_000)
  }

  /**
   * Public monorepos pinning pnpm 11 (__test__/fixtures/projects, README.md there), each as its
   * repository has it but for what the test machine needs: pnpm 11.28.11 itself installs (the
   * pinned `packageManager` is dropped, so pnpm does not switch), the registry stand-in's
   * packages are old enough (`minimumReleaseAge: 0`) and carry no publishing evidence to
   * compare (`trustPolicy` dropped), and scripts are off (their builds are issue 25's). unocss
   * with its `shamefullyHoist` (every package hoisted publicly). tailwindcss with
   * its patch files and scripts on (pnpm takes patched packages from its side-effects cache only
   * for builds it runs, so a stock install warms the cache first), its patched packages' builds
   * allowed and the builds that need the network or a compiler denied (bun, sharp, tree-sitter).
   * starlight, solid-start and react-router with scripts on and their settings as they are:
   * their `allowBuilds` denies every build in the lockfile but solid-start's esbuild and
   * @parcel/watcher, which a stock install first puts in the side-effects cache.
   */
  const TAILWIND_BUILDS = 'allowBuilds:\n  \'@napi-rs/cli\': true\n  \'@parcel/watcher\': true\n  bun: false\n  esbuild: true\n  lightningcss: true\n  sharp: false\n  tree-sitter: false\n  tree-sitter-javascript: false\n  tree-sitter-typescript: false\n'
  const MONOREPOS: Array<{ name: string, why: string, projects: number, drop: string[], scriptsOn?: boolean, settings?: string, change?: ManifestChange, underTested?: boolean }> = [
    { name: 'vue-core', why: 'vue', projects: 18, drop: [], change: { project: '.', what: 'markdown-table removed', edit: (m) => { delete m.devDependencies['markdown-table'] }, packuments: 'vue-core.txt', raced: ['@tybys/wasm-util@0.10.3'] } },
    {
      name: 'unocss',
      why: 'vue',
      projects: 55,
      drop: [],
      change: {
        project: '.',
        what: '@types/connect removed',
        edit: (m) => { delete m.devDependencies['@types/connect'] },
        packuments: 'unocss.txt',
        // @antfu/eslint-config's peer @unocss/eslint-plugin (locked at 66.7.5), resolved anew to the packument's newest.
        resolved: ['@unocss/config@66.8.1', '@unocss/core@66.8.1', '@unocss/eslint-plugin@66.8.1', '@unocss/rule-utils@66.8.1'],
      },
    },
    {
      name: 'tailwindcss',
      why: 'lightningcss',
      projects: 30,
      drop: ['allowBuilds'],
      scriptsOn: true,
      settings: TAILWIND_BUILDS,
      change: { project: '.', what: 'prettier-plugin-embed removed', edit: (m) => { delete m.devDependencies['prettier-plugin-embed'] }, packuments: 'tailwindcss.txt' },
    },
    { name: 'starlight', why: 'astro', projects: 16, drop: [], scriptsOn: true },
    {
      name: 'solid-start',
      why: 'vite',
      projects: 12,
      drop: [],
      scriptsOn: true,
      change: { project: 'apps/fixtures/bare', what: 'tinyglobby added (the root\'s)', edit: (m) => { m.dependencies.tinyglobby = '^0.2.17' }, packuments: 'solid-start.txt' },
    },
    {
      name: 'react-router',
      why: 'react',
      projects: 31,
      drop: [],
      scriptsOn: true,
      change: { project: 'playground/data', what: 'isbot added (other projects\')', edit: (m) => { m.dependencies.isbot = '^5.1.40' }, packuments: 'react-router.txt' },
    },
    // A project publishing from `dist`, not linked there (`linkDirectory: false`), which its
    // lockfile (by pnpm 11.9.0) does not record: refused from 11.26.0 (REFUSED_MONOREPOS).
    { name: 'tanstack-query', why: 'react', projects: 102, drop: [], underTested: !TESTED.publishLinks },
    // packageExtensions (one peer added), installed natively since its checksum is compared.
    { name: 'tanstack-store', why: 'react', projects: 46, drop: [] },
  ]
  /**
   * A change a developer makes to one project's package.json after a frozen install, and the
   * registry metadata pnpm then asks for as it resolves again: the names listed in
   * `__test__/fixtures/packuments/<packuments>` (`registryPackuments`, fetched on first use).
   * pnpm asks for that of the packages it resolves anew by their ranges (the one added, the
   * peers no project depends on, with some of their dependencies) and that of the packages it
   * resolves again without finding them in the store (the ones skipped here).
   */
  interface ManifestChange {
    project: string
    what: string
    edit: (manifest: Record<string, any>) => void
    packuments: string
    /**
     * Versions the lockfile lacks whose tarballs pnpm fetches (`name@version`, from the packuments
     * given: resolved anew to a newer version than the one locked), served too (`resolvedCorpus`).
     */
    resolved?: string[]
    /**
     * depPaths pnpm's install after the change lists in `.modules.yaml`'s `skipped` or not as its
     * resolution's timing decides (stock's own runs differ so): a package both an installed and a
     * skipped package depend on, which pnpm marks by the first of them it resolves.
     */
    raced?: string[]
  }

  /** The pnpm whose requests the lists in `__test__/fixtures/packuments` record (another may ask for others). */
  const PACKUMENTS_RECORDED_UNDER = '11.28.11'

  /** How `tree` lists `.modules.yaml` (its mode, then its JSON). */
  const MODULES_STATE = 'node_modules/.modules.yaml 644 '

  const nameOf = (depPath: string): string => /^(@?[^@]+)@/.exec(depPath)![1]

  /** The package names a list in `__test__/fixtures/packuments` gives (`#` starts a comment). */
  const packumentList = (file: string): string[] =>
    fs.readFileSync(path.join(repoDir, '__test__', 'fixtures', 'packuments', file), 'utf8').split('\n').filter((l) => l !== '' && !l.startsWith('#'))

  /**
   * The skipped depPaths whose tarballs pnpm fetches as it resolves again: those it resolves
   * (`packuments`) that no platform field of their own rules out (a binding's dependencies).
   */
  function fetchedWhenResolved (fixture: string, skipped: string[], packuments: string[]): string[] {
    const read = readLockfileFile(fixture)
    if (typeof read === 'string') throw new Error(read)
    const packages = read.lockfile.packages as Record<string, { os?: unknown, cpu?: unknown, libc?: unknown }>
    return skipped.filter((depPath) => packuments.includes(nameOf(depPath)) && packages[depPath].os == null && packages[depPath].cpu == null && packages[depPath].libc == null)
  }

  /**
   * `change` made to both clones, then pnpm's own install (no `--frozen-lockfile`) run on each:
   * the lockfile it writes and every project's node_modules are stock's, every request the
   * registry stand-in answered, and every packument given asked for.
   */
  async function expectChangedAsStock (both: Compared, store: string, label: string, change: ManifestChange, packuments: string[], args: string[]): Promise<void> {
    for (const d of [both.stock, both.native]) {
      const file = path.join(d, change.project, 'package.json')
      const manifest = JSON.parse(fs.readFileSync(file, 'utf8'))
      change.edit(manifest)
      fs.writeFileSync(file, JSON.stringify(manifest, null, 2))
    }
    const asking = registry.requests.length
    const stockRun = await runPnpm(['install', ...args], { projectDir: both.stock, storeDir: store, sandbox: sandbox(`${label}-stock`), registry: registry.url, env: STOCK })
    const nativeRun = await runPnpm(['install', ...args], { projectDir: both.native, storeDir: store, sandbox: sandbox(`${label}-native`), registry: registry.url })
    const asked = registry.requests.slice(asking)
    expect([...new Set(asked.filter((r) => r.status !== 200).map((r) => r.url))], 'asked for, not served').toEqual([])
    expectOk(stockRun)
    expectOk(nativeRun)
    const metadata = new Set(asked.filter((r) => !r.url.endsWith('.tgz')).map((r) => r.url.slice(1)))
    expect(packuments.filter((name) => !metadata.has(name)), 'listed, not asked for').toEqual([])
    expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(both.stock, 'pnpm-lock.yaml'), 'utf8'))
    expect(fs.readFileSync(path.join(both.native, 'pnpm-lock.yaml'), 'utf8')).not.toBe(fs.readFileSync(path.join(base, label, 'pnpm-lock.yaml'), 'utf8'))
    const relative = (d: string): string[] => relativeTree(d, store)
    /** The state file without the depPaths whose place in `skipped` pnpm's resolution leaves to timing. */
    const unraced = (line: string): string => {
      if (change.raced == null || !line.startsWith(MODULES_STATE)) return line
      const state = JSON.parse(line.slice(MODULES_STATE.length))
      return MODULES_STATE + JSON.stringify({ ...state, skipped: state.skipped.filter((depPath: string) => !change.raced!.includes(depPath)) })
    }
    expect(relative(both.native).map(unraced)).toEqual(relative(both.stock).map(unraced))
  }

  /** pnpm-workspace.yaml without these top-level keys (and the indented lines of their values). */
  const withoutKeys = (...keys: string[]) => (text: string): string => {
    let dropping = false
    return text.split('\n').filter((line) => {
      if (!/^\s/.test(line)) dropping = keys.some((k) => line.startsWith(`${k}:`))
      return !dropping
    }).join('\n')
  }
  for (const monorepo of MONOREPOS) {
    const changed = monorepo.change == null || testedPnpmVersion !== PACKUMENTS_RECORDED_UNDER ? '' : `; a changed package.json (${monorepo.change.project}: ${monorepo.change.what}) installs on top as stock`
    // A monorepo whose root asks for a newer pnpm (solid-start: ^11.17.0) is refused by stock too.
    const { engines } = JSON.parse(fs.readFileSync(path.join(repoDir, '__test__', 'fixtures', 'projects', monorepo.name, 'package.json'), 'utf8')) as { engines?: { pnpm?: string } }
    it.runIf(monorepo.underTested !== false && (engines?.pnpm == null || semver.satisfies(testedPnpmVersion, engines.pnpm)))(`the ${monorepo.name} monorepo (${monorepo.projects} projects, real npm packages, scripts ${monorepo.scriptsOn === true ? 'on' : 'off'}): every project's node_modules is stock pnpm's, up to date${changed}`, async () => {
      const fixture = path.join(repoDir, '__test__', 'fixtures', 'projects', monorepo.name)
      const { dir: cache, planned, skipped } = await platformCorpus(fixture, monorepo.name, undefined, TESTED.skipRule)
      const corpus = downloaded(cache)
      const dir = await withPlugin(monorepo.name, fixture, {
        rootManifest: ({ packageManager: _, ...manifest }) => manifest,
        workspace: (text) => withoutKeys('minimumReleaseAge', 'trustPolicy', ...monorepo.drop)(text) + (monorepo.settings ?? ''),
      })
      expect(importerDirs(dir)).toHaveLength(monorepo.projects)
      const args = monorepo.scriptsOn === true ? [] : ['--config.ignore-scripts=true']
      const change = testedPnpmVersion === PACKUMENTS_RECORDED_UNDER ? monorepo.change : undefined
      const packuments = change == null ? [] : packumentList(change.packuments)
      const fetched = fetchedWhenResolved(fixture, skipped, packuments)
      if (fetched.length > 0) corpus.push(...downloaded(await skippedCorpus(fixture, monorepo.name, fetched)))
      const metadata = await registryPackuments(packuments)
      if (change?.resolved != null) corpus.push(...downloaded(resolvedCorpus(monorepo.name, change.resolved, metadata)))
      await expectSameAsStockFrom(corpus, dir, monorepo.name, {
        packages: planned.length,
        why: monorepo.why,
        args,
        warm: monorepo.scriptsOn,
        packuments: metadata,
        then: change == null ? undefined : (both, store) => expectChangedAsStock(both, store, monorepo.name, change, packuments, args),
      })
    }, 600_000)
  }

  /** Monorepos whose lockfile stock pnpm 11.28.11 refuses here (prepared as MONOREPOS): with the plugin too, nothing linked (`refused`: under the release tested). */
  const REFUSED_MONOREPOS = [
    // Its lockfile, by pnpm 11.9.0, lacks `linkDirectory: false` (which 11.26.0 and newer check).
    { name: 'tanstack-query', projects: 102, refused: TESTED.publishLinks, code: 'ERR_PNPM_OUTDATED_LOCKFILE', why: /^native install skipped: the lockfile is not up to date with packages\/angular-query-experimental\/package\.json \(publishConfig\.linkDirectory differs from the lockfile\)$/m, prelink: /^prelink skipped: the lockfile is not up to date with packages\/angular-query-experimental's package\.json \(publishConfig\.linkDirectory differs from the lockfile\)/m },
    // engineStrict, and jsdom@30.0.1 wants a newer Node than this repository's 24.9 (its `file:`
    // directory packages leave the native install to pnpm first).
    // (Under a Node before 22.17, which packages/kit's engines ask for, that project's engines come first.)
    { name: 'sveltekit', projects: 68, refused: true, code: 'ERR_PNPM_UNSUPPORTED_ENGINE', why: /^native install skipped: (6 packages need pnpm: not a registry package [^\n]*: e2e-test-dep-cjs-only@file:|the project's engines\.node, which pnpm checks first)/m },
  ]
  for (const monorepo of REFUSED_MONOREPOS) {
    it.runIf(monorepo.refused)(`the ${monorepo.name} monorepo (${monorepo.projects} projects), whose lockfile stock pnpm refuses (${monorepo.code}): the plugin steps aside, pnpm refuses as stock, nothing linked`, async () => {
      const fixture = path.join(repoDir, '__test__', 'fixtures', 'projects', monorepo.name)
      const dir = await withPlugin(monorepo.name, fixture, {
        rootManifest: ({ packageManager: _, ...manifest }) => manifest,
        workspace: withoutKeys('minimumReleaseAge', 'trustPolicy'),
      })
      expect(importerDirs(dir)).toHaveLength(monorepo.projects)
      const store = path.join(base, `${monorepo.name}-store`)
      const command = ['install', '--frozen-lockfile', '--config.ignore-scripts=true']
      const stock = clone(dir, `${monorepo.name}-stock`)
      const stockRun = await runPnpm(command, { projectDir: stock, storeDir: store, sandbox: sandbox(`${monorepo.name}-stock`), registry: registry.url, env: STOCK })
      const native = clone(dir, `${monorepo.name}-native`)
      const traceFile = path.join(base, `${monorepo.name}-trace.txt`)
      const nativeRun = await runPnpm(command, { projectDir: native, storeDir: store, sandbox: sandbox(`${monorepo.name}-native`), registry: registry.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
      const trace = fs.readFileSync(traceFile, 'utf8')
      expect(trace).toMatch(monorepo.why)
      if (monorepo.prelink != null) expect(trace).toMatch(monorepo.prelink)
      const refusal = new RegExp(`${monorepo.code}.*`).exec(stockRun.stdout + stockRun.stderr)
      expect(refusal, stockRun.stdout).not.toBeNull()
      expect(nativeRun.code).toBe(stockRun.code)
      expect(nativeRun.stdout + nativeRun.stderr).toContain(refusal![0])
      const relative = (d: string): string[] => relativeTree(d, store)
      expect(relative(native)).toEqual(relative(stock))
      expect(relative(native).filter((l) => l.startsWith('node_modules/.pnpm/'))).toEqual([])
    })
  }

  /** What the native install leaves to pnpm: no state of its own, pnpm installs, stock's tree. */
  async function expectLeftToPnpm (label: string, manifest: Record<string, unknown>, workspace: string, why: RegExp, patches: Record<string, string> = {}): Promise<Compared> {
    const { dir, store } = await setUp(label, manifest, workspace, {}, patches)
    const both = await installBoth(dir, store, label)
    expect(both.trace).toMatch(why)
    expect(both.trace).not.toMatch(/^native install: /m)
    // pnpm's own install from the lockfile (which ends with an "Already up to date" of its own).
    expect(both.nativeRun.stdout).toContain(PNPM_INSTALLED)
    const relative = (d: string): string[] => relativeTree(d, store)
    expect(relative(both.native)).toEqual(relative(both.stock))
    return both
  }

  it('optional packages for other platforms (esbuild\'s and rollup\'s kind, one only named so): skipped as pnpm skips them, natively, stock\'s tree', async () => {
    const { dir, store } = await setUp('platforms', { name: 'o', version: '1.0.0', dependencies: { 'tool-core': '1.0.0', util: '1.0.0' }, optionalDependencies: { 'mac-only': '1.0.0' } }, 'minimumReleaseAge: 0\n')
    const both = await expectSameAsStock(dir, store, 'platforms', { packages: countSnapshots(dir) - PLATFORM_TOOLS.filter((t) => !t.here).length - (process.platform === 'darwin' ? 0 : 1), why: 'util' })
    const skipped = PLATFORM_TOOLS.filter((t) => !t.here).map((t) => `${t.name}@1.0.0`)
    if (process.platform !== 'darwin') skipped.push('mac-only@1.0.0')
    const modules = JSON.parse(fs.readFileSync(path.join(both.native, 'node_modules', '.modules.yaml'), 'utf8'))
    expect(modules.skipped).toEqual(skipped.sort())
    const here = PLATFORM_TOOLS.find((t) => t.here)!.name
    // tool-core links only the package for this platform; 11.28.3 links the others to its working directory (the project's).
    const skippedLinks = TESTED.skippedLinks === 'working directory' ? PLATFORM_TOOLS.filter((t) => !t.here).map((t) => `node_modules/.pnpm/tool-core@1.0.0/node_modules/${t.name} -> ../../../../..`) : []
    expect(both.stockTree.filter((l) => l.startsWith('node_modules/.pnpm/tool-core@1.0.0/node_modules/@tool/'))).toEqual([
      'node_modules/.pnpm/tool-core@1.0.0/node_modules/@tool/ 755',
      `node_modules/.pnpm/tool-core@1.0.0/node_modules/${here} -> ../../../${here.replace('/', '+')}@1.0.0/node_modules/${here}`,
      ...skippedLinks,
    ].sort())
  })

  it('optional bindings whose libc is [null] (oxc-parser 0.8\'s, in TanStack/virtual\'s lockfile): read as pnpm reads them, skipped or installed by os and cpu, natively, stock\'s tree', async () => {
    const { dir, store } = await setUp('null-libc', { name: 'n', version: '1.0.0', dependencies: { 'nulllibc-core': '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\n')
    expect(fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')).toMatch(/^ {4}libc: \[null\]$/m)
    const both = await expectSameAsStock(dir, store, 'null-libc', { packages: countSnapshots(dir) - 1, why: 'util' })
    expect(JSON.parse(fs.readFileSync(path.join(both.native, 'node_modules', '.modules.yaml'), 'utf8')).skipped).toEqual(['@nulllibc/aix-ppc64@1.0.0'])
  })

  for (const engineStrict of [false, true]) {
    it(`optional packages pnpm skips with everything only they reach (a binding for another os with dependencies of its own, unmet engines)${engineStrict ? ', under engineStrict' : ''}: natively, stock's tree`, async () => {
      const label = `skip-reach${engineStrict ? '-strict' : ''}`
      // Without engineStrict, a required package for another os too, which pnpm installs (it only warns, silently).
      const required = engineStrict || process.platform === 'darwin' ? {} : { 'mac-only': '1.0.0' }
      const manifest = { name: 's', version: '1.0.0', dependencies: { 'bound-core': '1.0.0', 'bound-shared': '1.0.0', ...required }, optionalDependencies: { 'old-engine': '1.0.0', 'pnpm-engine': '1.0.0' } }
      const { dir, store } = await setUp(label, manifest, `minimumReleaseAge: 0\n${engineStrict ? 'engineStrict: true\n' : ''}`)
      const skipped = ['@bound/aix-ppc64@1.0.0', 'bound-leaf@1.0.0', 'bound-runtime@1.0.0', 'old-dep@1.0.0', 'old-engine@1.0.0']
      const both = await expectSameAsStock(dir, store, label, { packages: countSnapshots(dir) - skipped.length, why: 'bound-shared' })
      expect(JSON.parse(fs.readFileSync(path.join(both.native, 'node_modules', '.modules.yaml'), 'utf8')).skipped).toEqual(skipped)
      // Neither laid out, nor linked, nor hoisted, nor their bins; what a required path reaches is.
      for (const absent of ['.pnpm/bound-runtime@', '.pnpm/bound-leaf@', '.pnpm/old-dep@', '.pnpm/old-engine@', '.pnpm/@bound+aix', '.pnpm/node_modules/bound-runtime', '.pnpm/node_modules/.bin/bound-run', 'old-engine']) {
        expect(both.stockTree.filter((l) => l.startsWith(`node_modules/${absent}`)), absent).toEqual([])
      }
      for (const entry of ['node_modules/.pnpm/bound-shared@1.0.0/', 'node_modules/.bin/bound-shared 755', 'node_modules/pnpm-engine -> ', `node_modules/.pnpm/bound-core@1.0.0/node_modules/@bound/${process.platform}-${process.arch} -> `, ...Object.keys(required).map((name) => `node_modules/${name} -> `)]) {
        expect(both.stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)
      }
    })
  }

  /** A clone's build log: the builds that ran in its install (none: `''`). */
  const buildLog = (dir: string): string => fs.existsSync(path.join(dir, 'build-log.txt')) ? fs.readFileSync(path.join(dir, 'build-log.txt'), 'utf8') : ''

  it('builds pnpm runs, their side effects cached by an earlier install (a warm store): imported natively with those side effects (under every release: its own key), no script runs, stock\'s tree, up to date', async () => {
    const manifest = { name: 'built', version: '1.0.0', dependencies: { builder: '1.0.0', 'native-build': '1.0.0', util: '1.0.0' } }
    const { dir, store } = await setUp('cached-builds', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  builder: true\n  logs-build: true\n  native-build: true\n')
    // The set-up's install built them, once each, and pnpm recorded what they changed.
    expect(buildLog(dir).split('\n').sort().join(' ')).toBe(' logs-build native-build')
    const both = await expectSameAsStock(dir, store, 'cached-builds', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('')
    const built = path.join(both.native, 'node_modules', 'native-build')
    expect(fs.readFileSync(path.join(built, 'build', 'Release', 'addon.node'), 'utf8')).toBe('binary')
    expect(fs.existsSync(path.join(built, 'prebuilt.txt'))).toBe(false)
    expect(fs.readFileSync(path.join(both.native, 'node_modules', 'builder', 'built.txt'), 'utf8')).toBe('yes')
    const modules = both.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))!
    expect(modules).toContain('"ignoredBuilds":[]')
    expect(modules).toContain('"pendingBuilds":[]')
    // pnpm records the symlinks a build makes from 11.28.1, and restores them; the releases before, the file linked to.
    const recordsLinks = compareVersions(testedPnpmVersion, '11.28.1') >= 0
    expect(fs.lstatSync(path.join(built, 'build', 'addon.node')).isSymbolicLink()).toBe(recordsLinks)
    for (const entry of ['node_modules/.bin/native-cli 755', 'node_modules/.pnpm/native-build@1.0.0/node_modules/native-build/build/Release/addon.node 755', `node_modules/.pnpm/native-build@1.0.0/node_modules/native-build/build/addon.node ${recordsLinks ? '-> Release/addon.node' : '755'}`]) {
      expect(both.stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)
    }
  })

  it.runIf(buildsNative)('a build whose side effects pnpm did not cache (it changed nothing in its package): run natively again, as stock runs it again; stock\'s tree', async () => {
    const { dir, store } = await setUp('uncached-build', { name: 'u', version: '1.0.0', dependencies: { 'log-only-build': '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  log-only-build: true\n')
    const both = await expectSameAsStock(dir, store, 'uncached-build', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('log-only-build\n')
  })

  it.skipIf(buildsNative)('a build that changed nothing in its package, under a release whose builds are pnpm\'s: pnpm recorded it but never takes it from its cache (it builds it on every install), so every clone is left to pnpm, saying so; stock\'s tree', async () => {
    const { dir, store } = await setUp('unchanged-build-older', { name: 'u', version: '1.0.0', dependencies: { 'log-only-build': '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  log-only-build: true\n')
    const both = await installBoth(dir, store, 'unchanged-build-older')
    const said = `native install skipped: log-only-build@1.0.0: its build changes no file, which pnpm records in its side-effects cache but never takes from it (it builds it on every install), and pnpm ${testedPnpmVersion} runs the builds itself `
    expect(both.trace.split('\n').some((l) => l.startsWith(said)), both.trace).toBe(true)
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('log-only-build\n')
    expect(relativeTree(both.native, store)).toEqual(relativeTree(both.stock, store))
  })

  it.skipIf(buildsNative)('the same with a project prepare script, which pnpm then runs too: the build step is the reason said, and how pinning the newest pnpm changes it (user try: antfu/eslint-config under 11.9.0); stock\'s tree', async () => {
    const { dir, store } = await setUp('unchanged-build-older-prepare', { name: 'u', version: '1.0.0', scripts: { prepare: 'node -e 0' }, dependencies: { 'log-only-build': '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  log-only-build: true\n')
    const both = await installBoth(dir, store, 'unchanged-build-older-prepare')
    const said = `native install skipped: log-only-build@1.0.0: its build changes no file, which pnpm records in its side-effects cache but never takes from it (it builds it on every install), and pnpm ${testedPnpmVersion} runs the builds itself `
    expect(both.trace.split('\n').some((l) => l.startsWith(said)), both.trace).toBe(true)
    expect(both.trace).toContain(`to install natively: pin pnpm ${PNPM_RELEASES.at(-1)!.version} (packageManager in package.json), under which the native install runs such builds itself, or deny log-only-build's build`)
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('log-only-build\n')
    expect(relativeTree(both.native, store)).toEqual(relativeTree(both.stock, store))
  })

  it.runIf(buildsNative)('a required build that fails before a patched package\'s turn: that package left unpatched (pnpm applies a patch when its turn comes), the project\'s commands not linked nor their targets made executable (pnpm links them after its build step); stock\'s tree and status', async () => {
    const { dir } = await setUp('failing-before-patch', { name: 'f', version: '1.0.0', dependencies: { util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  fails-build: true\n', {}, {
      'waits-on-failing.patch': PATCHES['util@1.0.0.patch'],
    })
    // The patch and the package together (pnpm refuses a patch of a package it does not install).
    fs.appendFileSync(path.join(dir, 'pnpm-workspace.yaml'), 'patchedDependencies:\n  waits-on-failing: patches/waits-on-failing.patch\n')
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    manifest.dependencies['waits-on-failing'] = '1.0.0'
    // A command whose target ships not executable: made so only when pnpm links the project's commands, after its build step.
    manifest.dependencies.crlf = '1.0.0'
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
    // Its lockfile, resolved without installing (a stock install fails at the build).
    expectOk(await runPnpm(['install', '--lockfile-only'], { projectDir: dir, storeDir: path.join(base, 'failing-before-patch-store'), sandbox: sandbox('failing-before-patch'), registry: registry.url }))
    const runs: Record<string, { dir: string, store: string, run: PnpmRun }> = {}
    const traceFile = path.join(base, 'failing-before-patch-trace.txt')
    for (const side of ['stock', 'native']) {
      const cloned = clone(dir, `failing-before-patch-${side}`)
      const store = path.join(base, `failing-before-patch-${side}-store`)
      const run = await runPnpm(['install', '--frozen-lockfile'], { projectDir: cloned, storeDir: store, sandbox: sandbox(`failing-before-patch-${side}`), env: side === 'stock' ? STOCK : { CAS_NATIVE_PNPMFILE_TRACE: traceFile }, registry: registry.url })
      runs[side] = { dir: cloned, store, run }
    }
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^native install ended: fails-build@1\.0\.0: its build failed/m)
    expect(runs.stock.run.code).toBe(3)
    expect(runs.native.run.code).toBe(runs.stock.run.code)
    const patched = (d: string): string => fs.readFileSync(path.join(d, 'node_modules', 'waits-on-failing', 'index.js'), 'utf8')
    expect(patched(runs.stock.dir)).toBe('module.exports = 1\n')
    expect(patched(runs.native.dir)).toBe(patched(runs.stock.dir))
    for (const side of ['stock', 'native']) expect(fs.statSync(path.join(runs[side].dir, 'node_modules', 'crlf', 'cli.js')).mode & 0o777, side).toBe(0o644)
    expect(relativeTree(runs.native.dir, runs.native.store).map((l) => l.split(runs.native.store).join('<s>')))
      .toEqual(relativeTree(runs.stock.dir, runs.stock.store).map((l) => l.split(runs.stock.store).join('<s>')))
  })

  it.runIf(buildsNative)('a required build that fails (nothing cached for it): run natively once, the install ends as stock\'s (its lines, error and exit status, the tree, no state, no side effects), and the next install too', async () => {
    // With a direct dependency's bin (pnpm links the project's bins after its build step) and a hoisted one's.
    const { dir } = await setUp('required-failing', { name: 'f', version: '1.0.0', dependencies: { util: '1.0.0', f: '1.0.0', b: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  fails-build: true\n')
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    manifest.dependencies['fails-build'] = '1.0.0'
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
    // Its lockfile, resolved without installing (a stock install fails at the build).
    expectOk(await runPnpm(['install', '--lockfile-only'], { projectDir: dir, storeDir: path.join(base, 'required-failing-store'), sandbox: sandbox('required-failing'), registry: registry.url }))
    // Each clone into a store of its own (cold), from the registry.
    const install = async (label: string, env: Record<string, string>, reporter?: string): Promise<{ dir: string, store: string, run: PnpmRun, tree: string[], again: PnpmRun, treeAgain: string[] }> => {
      const cloned = clone(dir, label)
      const store = path.join(base, `${label}-store`)
      const opts = { projectDir: cloned, storeDir: store, sandbox: sandbox(label), env, registry: registry.url, reporter }
      const run = await runPnpm(['install', '--frozen-lockfile'], opts)
      const after = tree(cloned, store)
      const again = await runPnpm(['install', '--frozen-lockfile'], opts)
      return { dir: cloned, store, run, tree: after, again, treeAgain: tree(cloned, store) }
    }
    const stock = await install('required-failing-stock', STOCK)
    const traceFile = path.join(base, 'required-failing-trace.txt')
    const native = await install('required-failing-native', { CAS_NATIVE_PNPMFILE_TRACE: traceFile })
    const trace = fs.readFileSync(traceFile, 'utf8')
    expect(trace).toMatch(/^native install ended: fails-build@1\.0\.0: its build failed \(fails-build@1\.0\.0 postinstall: `node build\.js`: Exit status 3\) \(the install ends with its error, nothing recorded\)$/m)
    // Once in the install, once more in the next (which stock runs again too).
    expect(buildLog(stock.dir)).toBe('fails-build\nfails-build\n')
    expect(buildLog(native.dir)).toBe(buildLog(stock.dir))
    // pnpm's error handler exits with the script's status, after the reporter's lines.
    expect(stock.run.code).toBe(3)
    expect(native.run.code).toBe(stock.run.code)
    const failure = (run: PnpmRun): string[] => (run.stdout + run.stderr).split('\n').filter((l) => /fails-build postinstall|ELIFECYCLE|ERR_PNPM|ERROR|Already up to date/.test(l))
    expect(failure(stock.run)).toEqual(['.../node_modules/fails-build postinstall$ node build.js', '.../node_modules/fails-build postinstall: Failed', '[ELIFECYCLE] Command failed with exit code 3.'])
    expect(failure(native.run)).toEqual(failure(stock.run))
    expect(native.run.stderr).toBe(stock.run.stderr)
    // Every line of stock's, in its order, but the import method named: the first package's (stock's depends on its timing).
    const lines = (run: PnpmRun, store: string): string[] => run.stdout.split(store).join('<store>').replace(/ in \d+ms\)/g, ')').split('\n').filter((l) => !/^Packages are (hard linked|copied|cloned)/.test(l))
    expect(lines(native.run, native.store)).toEqual(lines(stock.run, stock.store))
    // What stays: the layout, but no state (pnpm writes it after its build step), no side effects.
    expect(native.tree.map((l) => l.split(native.dir).join('<p>'))).toEqual(stock.tree.map((l) => l.split(stock.dir).join('<p>')))
    for (const state of ['node_modules/.modules.yaml', 'node_modules/.pnpm/lock.yaml', 'node_modules/.pnpm-workspace-state-v1.json']) {
      expect(stock.tree.filter((l) => l.startsWith(state)), state).toEqual([])
    }
    expect(stock.tree).toContain('node_modules/fails-build -> .pnpm/fails-build@1.0.0/node_modules/fails-build')
    // The hoisted packages' commands are linked before the build step, the project's after it.
    expect(stock.tree.some((l) => l.startsWith('node_modules/.pnpm/node_modules/.bin/acmd 755'))).toBe(true)
    expect(stock.tree.filter((l) => l.startsWith('node_modules/.bin/'))).toEqual([])
    expect(sideEffectsRows(native.store, ['fails-build', 'util'])).toEqual(sideEffectsRows(stock.store, ['fails-build', 'util']))
    expect(sideEffectsRows(stock.store, ['fails-build'])).toEqual([[expect.any(String), []]])
    // The next install is pnpm's (node_modules is not empty), which builds again and fails as stock's.
    expect(trace).toMatch(/^native install skipped: node_modules is not empty$/m)
    expect(native.again.code).toBe(stock.again.code)
    expect(failure(native.again)).toEqual(failure(stock.again))
    expect(failure(stock.again)).toEqual(failure(stock.run))
    expect(native.treeAgain.map((l) => l.split(native.dir).join('<p>'))).toEqual(stock.treeAgain.map((l) => l.split(stock.dir).join('<p>')))
    // Without the head start's preResolution hook, updateConfig throws the error (pnpm's [ERROR] before its reporter starts, status 1): still run once.
    const bare = await install('required-failing-bare', { CAS_NATIVE_PNPMFILE_PRELINK: '0' })
    expect(buildLog(bare.dir)).toBe('fails-build\nfails-build\n')
    expect(bare.run.code).toBe(1)
    expect(bare.run.stderr).toContain('[ERROR] fails-build@1.0.0 postinstall: `node build.js`\nExit status 3\nFor help, run: pnpm help install')
    expect(bare.tree).toEqual(native.tree.map((l) => l.split(native.store).join(bare.store)))
    // pnpm's default reporter (a CI's, without a terminal) prints the same from the plugin's records.
    const stockDefault = await install('required-failing-stock-default', STOCK, 'default')
    const nativeDefault = await install('required-failing-native-default', {}, 'default')
    expect(nativeDefault.run.code).toBe(3)
    // Its lines but how long the script took, where (another clone), and the plugin's live progress
    // line while it laid out (erased before pnpm's lines); the native one's took as long as it ran.
    const shown = (run: PnpmRun, d: { dir: string, store: string }): string[] => lines(run, d.store)
      // eslint-disable-next-line no-control-regex -- the terminal's erase-line sequences
      .map((l) => l.split(d.dir).join('<p>').replace(/(ailed in )\d+ms/g, '$1?').replace(/^Progress: [^\n]*?\x1b\[K\x1b\[K/, ''))
    expect(shown(nativeDefault.run, nativeDefault)).toEqual(shown(stockDefault.run, stockDefault))
    expect(nativeDefault.run.stdout).toMatch(/└─ Failed in [1-9]\d*ms at /)
  })

  it.runIf(buildsNative)('a build whose command is not found (the shell ends with status 127), required and optional: pnpm\'s runner takes it for a failed spawn (spawn ENOENT: no exit code, no end of the script logged); the install ends as stock\'s (its lines, exit status 1), or skips the optional package as stock', async () => {
    // (Not the plugin's line where it leaves the install to pnpm.)
    const scripts = (run: PnpmRun): string[] => (run.stdout + run.stderr).split('\n').filter((l) => /missing-command-build|ELIFECYCLE|ERR_PNPM/.test(l) && !l.startsWith('+ ') && !l.includes('@cas/pnpm-plugin-native left this install to pnpm'))
    for (const group of ['dependencies', 'optionalDependencies'] as const) {
      const label = `not-found-${group}`
      const { dir } = await setUp(label, { name: 'm', version: '1.0.0', dependencies: { util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  missing-command-build: true\n')
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
      manifest[group] = { ...manifest[group], 'missing-command-build': '1.0.0' }
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
      // Its lockfile, resolved without installing (a stock install of the required one fails at the build).
      expectOk(await runPnpm(['install', '--lockfile-only'], { projectDir: dir, storeDir: path.join(base, `${label}-store`), sandbox: sandbox(label), registry: registry.url }))
      // Each clone into a store of its own (cold), from the registry, with pnpm's append-only and default reporters.
      const install = async (side: string, env: Record<string, string>, reporter?: string): Promise<{ run: PnpmRun, tree: string[], trace?: string }> => {
        const cloned = clone(dir, `${label}-${side}`)
        const store = path.join(base, `${label}-${side}-store`)
        const traceFile = path.join(base, `${label}-${side}-trace.txt`)
        const run = await runPnpm(['install', '--frozen-lockfile'], { projectDir: cloned, storeDir: store, sandbox: sandbox(`${label}-${side}`), env: { ...env, CAS_NATIVE_PNPMFILE_TRACE: traceFile }, registry: registry.url, reporter })
        const trace = fs.existsSync(traceFile) ? fs.readFileSync(traceFile, 'utf8') : undefined
        return { run, tree: relativeTree(cloned, store), trace }
      }
      for (const reporter of [undefined, 'default']) {
        const stock = await install(`stock-${reporter ?? 'append'}`, STOCK, reporter)
        const native = await install(`native-${reporter ?? 'append'}`, {}, reporter)
        expect(native.run.code, reporter).toBe(stock.run.code)
        expect(scripts(native.run).sort(), reporter).toEqual(scripts(stock.run).sort())
        expect(native.run.stderr, reporter).toBe(stock.run.stderr)
        expect(native.tree, reporter).toEqual(stock.tree)
        if (group === 'dependencies') {
          expect(native.trace).toMatch(/^native install ended: missing-command-build@1\.0\.0: its build failed \(missing-command-build@1\.0\.0 postinstall: `not-a-command`: spawn ENOENT\) /m)
        } else if (TESTED.unlinksFailedOptional) {
          expect(native.trace).toMatch(/^native install: 2 packages, /m)
          // Skipped: the package's directory and its link gone.
          expect(stock.tree.filter((l) => l.includes('node_modules/missing-command-build'))).toEqual([])
        } else {
          // Its link would stay (11.28.1 to 11.28.3), and pnpm's own install build it again: left to pnpm.
          expect(native.trace).toMatch(/^native install skipped: missing-command-build@1\.0\.0: no side effects cached for [^,]*, and an optional package, whose failed build pnpm /m)
        }
        if (reporter == null) {
          const ended = group === 'dependencies' ? ['[ELIFECYCLE] Command failed.'] : []
          expect(scripts(stock.run)).toEqual(['.../node_modules/missing-command-build postinstall$ not-a-command', '.../node_modules/missing-command-build postinstall: sh: 1: not-a-command: not found', ...ended])
          expect(stock.run.code).toBe(group === 'dependencies' ? 1 : 0)
        }
      }
    }
  })

  it.runIf(buildsNative)('a required build that fails, and pnpm\'s supply-chain check of the lockfile fails after the native install\'s passed: the install ends with pnpm\'s refusal (its code and exit status), as stock, which never reaches its build step (review s9b, item 4)', async () => {
    const { dir } = await setUp('refused-failing', { name: 'f', version: '1.0.0', dependencies: { util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  fails-build: true\n')
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, dependencies: { ...manifest.dependencies, 'fails-build': '1.0.0' } }, null, 2))
    // Its lockfile, resolved without installing (a stock install fails at the build).
    expectOk(await runPnpm(['install', '--lockfile-only'], { projectDir: dir, storeDir: path.join(base, 'refused-failing-store'), sandbox: sandbox('refused-failing'), registry: registry.url }))
    const workspace = path.join(dir, 'pnpm-workspace.yaml')
    fs.writeFileSync(workspace, fs.readFileSync(workspace, 'utf8').replace('minimumReleaseAge: 0\n', ''))
    // A registry whose metadata shows util published now to pnpm, long ago to the native install (as
    // if it changed between the two checks): the native install's check passes, pnpm's fails.
    const changing = await serveTarballs(served, { publishedFor: (p, userAgent) => p.name === 'util' && userAgent?.startsWith('@cas/native') !== true ? new Date().toISOString() : undefined })
    try {
      const install = async (label: string, env: Record<string, string>): Promise<{ dir: string, run: PnpmRun }> => {
        const cloned = clone(dir, label)
        const run = await runPnpm(['install', '--frozen-lockfile'], { projectDir: cloned, storeDir: path.join(base, `${label}-store`), sandbox: sandbox(label), env, registry: changing.url })
        return { dir: cloned, run }
      }
      const stock = await install('refused-failing-stock', STOCK)
      const traceFile = path.join(base, 'refused-failing-trace.txt')
      const native = await install('refused-failing-native', { CAS_NATIVE_PNPMFILE_TRACE: traceFile })
      const trace = fs.readFileSync(traceFile, 'utf8')
      expect(trace).toMatch(/^native install ended: fails-build@1\.0\.0: its build failed /m)
      expect(buildLog(stock.dir)).toBe('')
      expect(buildLog(native.dir)).toBe('fails-build\n')
      const refusal = /ERR_PNPM_MINIMUM_RELEASE_AGE_VIOLATION.*/.exec(stock.run.stdout + stock.run.stderr)
      expect(stock.run.code).not.toBe(0)
      expect(refusal).not.toBeNull()
      expect(native.run.code).toBe(stock.run.code)
      expect(native.run.stdout + native.run.stderr).toContain(refusal![0])
      expect(native.run.stdout + native.run.stderr).not.toMatch(/ELIFECYCLE|fails-build postinstall/)
      // pnpm's lines of its check, as stock's (how far pnpm's own install gets before the check fails
      // depends on timing, in stock too), and nothing of the native install's layout or build.
      const check = (run: PnpmRun): string[] => (run.stdout + run.stderr).replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>').replace(/ in \d+ms\)/g, ')').split('\n')
        .filter((l) => /supply-chain|ERR_PNPM|^ {2}util@|^The lockfile contains/.test(l))
      expect(check(native.run)).toEqual(check(stock.run))
      expect(check(stock.run)).toHaveLength(5)
      expect(native.run.stdout).not.toContain(PLUGIN_NAME + ' laid out')
      expect(trace).toMatch(/^pnpm's supply-chain check of the lockfile failed: the install ends with pnpm's error, though the native install had run the builds \(fails-build@1\.0\.0 postinstall: `node build\.js`: Exit status 3\)$/m)
    } finally {
      await changing.close()
    }
  })

  it.skipIf(buildsNative && TESTED.unlinksFailedOptional)('an optional package whose build fails (nothing cached for it), under a release builds were not checked against or whose build step leaves the links to it (11.28.1 to 11.28.3: unlinksFailedOptional): left to pnpm before anything runs, which runs it once and skips the package, as stock (under the latter its next install builds it again; before 11.28.1 its directory stays as the build left it)', async () => {
    const why = buildsNative ? `, and an optional package, whose failed build pnpm ${TESTED.version} skips leaving the links to it` : ''
    const both = await expectLeftToPnpm('failing-build', { name: 'f', version: '1.0.0', dependencies: { util: '1.0.0' }, optionalDependencies: { 'fails-build': '1.0.0' } },
      'minimumReleaseAge: 0\nallowBuilds:\n  fails-build: true\n', new RegExp(`^native install skipped: fails-build@1\\.0\\.0: no side effects cached for [^,]*${why}`, 'm'))
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('fails-build\n')
    if (!TESTED.unlinksFailedOptional) {
      // The link stays. From 11.28.1 (buildsNative here) it leads nowhere, and pnpm's next install
      // builds the package again: after a native layout, that install would have run it twice.
      // Before, the directory stays as the build left it, and the next install builds nothing.
      expect(both.stockTree).toContain('node_modules/fails-build -> .pnpm/fails-build@1.0.0/node_modules/fails-build')
      const left = both.stockTree.filter((l) => l.startsWith('node_modules/.pnpm/fails-build@1.0.0/node_modules/fails-build')).map((l) => l.split(' ')[0])
      if (buildsNative) expect(left).toEqual([])
      else expect(left).toContain('node_modules/.pnpm/fails-build@1.0.0/node_modules/fails-build/package.json')
      const again = await runPnpm(['install', '--frozen-lockfile', '--offline'], { projectDir: both.stock, storeDir: path.join(base, 'failing-build-store'), sandbox: sandbox('failing-build-again'), env: STOCK })
      expectOk(again)
      expect(buildLog(both.stock)).toBe(buildsNative ? 'fails-build\nfails-build\n' : 'fails-build\n')
    }
  })

  it.runIf(buildsNative && TESTED.unlinksFailedOptional)('optional packages whose builds fail (nothing cached for them): run natively once each and skipped as pnpm skips them (their links and directories removed, the projects\' commands linked without theirs), the install going on: stock\'s tree, lines, state and side effects, up to date; then a fresh clone the same', async () => {
    const manifest = { name: 'o', version: '1.0.0', dependencies: { 'logs-build': '1.0.0', 'uses-failing': '1.0.0' }, optionalDependencies: { 'fails-build': '1.0.0', 'fails-build-bin': '1.0.0' } }
    const { dir } = await setUp('optional-failing', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  fails-build: true\n  fails-build-bin: true\n  logs-build: true\n')
    const cold = await installCold(dir, 'optional-failing')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' fails-build fails-build-bin logs-build')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    // Skipped: no directory, no link from the project or the hoisting; the project's commands without its own.
    const stockTree = relativeTree(cold.stock, cold.stockStore)
    expect(stockTree.filter((l) => /^node_modules\/(fails-build|\.pnpm\/node_modules\/fails-build-bin)\b/.test(l))).toEqual([])
    expect(stockTree.map((l) => l.split(' ')[0]).filter((l) => l.startsWith('node_modules/.bin/'))).toEqual(['node_modules/.bin/', 'node_modules/.bin/uses-cli'])
    const names = ['fails-build', 'fails-build-bin', 'logs-build']
    expect(sideEffectsRows(cold.nativeStore, names)).toEqual(sideEffectsRows(cold.stockStore, names))
    // pnpm's reporter shows each script and its failure as stock's.
    const scriptLines = (out: string) => out.split('\n').filter((l) => /^\.\.\.\/\S+ (preinstall|install|postinstall)(\$|:) /.test(l)).sort()
    expect(scriptLines(cold.run.stdout)).toEqual(scriptLines(cold.stockRun.stdout))
    expect(scriptLines(cold.stockRun.stdout).filter((l) => l.endsWith(': Failed'))).toHaveLength(2)
    expect(cold.run.stderr).toBe(cold.stockRun.stderr)
    // Up to date for pnpm, in both.
    for (const [d, store] of [[cold.stock, cold.stockStore], [cold.native, cold.nativeStore]]) {
      const again = await runPnpm(['install', '--frozen-lockfile', '--offline'], { projectDir: d, storeDir: store, sandbox: sandbox(`optional-failing-again-${path.basename(d)}`), env: STOCK })
      expectOk(again)
      expect(again.stdout).toContain('Already up to date')
    }
    expect(buildLog(cold.native).split('\n').sort().join(' ')).toBe(' fails-build fails-build-bin logs-build')
    // A fresh clone on that store: logs-build from the cache, the failing ones run and skipped again, stock and native alike.
    const warm = await expectSameAsStock(dir, cold.nativeStore, 'optional-failing-warm', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [warm.stock, warm.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' fails-build fails-build-bin')
  })

  it('a build pnpm leaves undecided (not in allowBuilds): left to pnpm, which lists it as ignored, as stock', async () => {
    const both = await expectLeftToPnpm('undecided-build', { name: 'u', version: '1.0.0', dependencies: { 'logs-build': '1.0.0' } },
      'minimumReleaseAge: 0\nstrictDepBuilds: false\n', /^native install skipped: logs-build@1\.0\.0: requires-build$/m)
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('')
    expect(fs.readFileSync(path.join(both.native, 'node_modules', '.modules.yaml'), 'utf8')).toMatch(/"ignoredBuilds": \[\n\s+"logs-build@1\.0\.0"/)
  })

  it.runIf(buildsNative)('the project\'s scripts and a build from the side-effects cache: both native, no build runs, the project\'s scripts once; stock\'s tree, up to date', async () => {
    const { dir, store } = await setUp('project-scripts-cached', { name: 'p', version: '1.0.0', dependencies: { 'logs-build': '1.0.0' }, scripts: RECORDING_SCRIPTS }, 'minimumReleaseAge: 0\nallowBuilds:\n  logs-build: true\n')
    fs.rmSync(path.join(dir, 'log.txt'), { force: true })
    fs.rmSync(path.join(dir, 'build-log.txt'), { force: true })
    const both = await expectSameAsStock(dir, store, 'project-scripts-cached', { packages: countSnapshots(dir), why: 'logs-build' })
    expect(both.trace).toMatch(/^native install: ran the project's install, postinstall, prepare(, state validated at \d+)?$/m)
    for (const d of [both.stock, both.native]) {
      expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('install\npostinstall\nprepare\n')
      expect(buildLog(d)).toBe('')
    }
  })

  /** Patches of util@1.0.0 and of logs-build's build script, in the form `pnpm patch-commit` writes. */
  const PATCHES = {
    'util@1.0.0.patch': 'diff --git a/index.js b/index.js\n--- a/index.js\n+++ b/index.js\n@@ -1 +1 @@\n-module.exports = 1\n+module.exports = \'patched\'\n',
    'logs-build.patch': "diff --git a/build.js b/build.js\n--- a/build.js\n+++ b/build.js\n@@ -2 +2 @@\n-fs.writeFileSync('built.txt', 'yes')\n+fs.writeFileSync('built.txt', 'patched')\n",
  }
  const PATCHED = 'patchedDependencies:\n  util@1.0.0: patches/util@1.0.0.patch\n  logs-build: patches/logs-build.patch\n'

  it('patched packages, one that also builds, their builds allowed, the patched files cached by an earlier install: imported natively patched (under every release: its own key), no script runs, stock\'s tree, up to date', async () => {
    const manifest = { name: 'patched', version: '1.0.0', dependencies: { util: '1.0.0', 'logs-build': '1.0.0' } }
    const { dir, store } = await setUp('cached-patches', manifest, `minimumReleaseAge: 0\nallowBuilds:\n  util: true\n  logs-build: true\n${PATCHED}`, {}, PATCHES)
    expect(buildLog(dir)).toBe('logs-build\n')
    const both = await expectSameAsStock(dir, store, 'cached-patches', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('')
    expect(fs.readFileSync(path.join(both.native, 'node_modules', 'util', 'index.js'), 'utf8')).toBe('module.exports = \'patched\'\n')
    expect(fs.readFileSync(path.join(both.native, 'node_modules', 'logs-build', 'built.txt'), 'utf8')).toBe('patched')
    expect(both.stockTree.some((l) => /^node_modules\/\.pnpm\/util@1\.0\.0_patch_hash=[0-9a-f]+\//.test(l))).toBe(true)
  })

  it.skipIf(patchesNative)('a patched package whose build is not allowed (pnpm patches it in its build step every time), under a release whose side-effects upload is not written here: left to pnpm, as stock', async () => {
    const both = await expectLeftToPnpm('unallowed-patch', { name: 'p', version: '1.0.0', dependencies: { util: '1.0.0' } },
      'minimumReleaseAge: 0\npatchedDependencies:\n  util@1.0.0: patches/util@1.0.0.patch\n',
      /^native install skipped: util@1\.0\.0\(patch_hash=[0-9a-f]+\): patched, and pnpm applies the patch itself \(its build is not allowed\), and patches applied under pnpm /m, PATCHES)
    expect(fs.readFileSync(path.join(both.native, 'node_modules', 'util', 'index.js'), 'utf8')).toBe('module.exports = \'patched\'\n')
  })

  it.runIf(patchesNative)('patched packages whose builds pnpm does not allow (one with no build, one whose build is denied): patched natively on every install as pnpm\'s build step patches them, nothing looked up, the denied script not run; stock\'s tree, side effects and state, up to date, warm and cold', async () => {
    const manifest = { name: 'p', version: '1.0.0', dependencies: { util: '1.0.0', 'logs-build': '1.0.0' } }
    const settings = `minimumReleaseAge: 0\nallowBuilds:\n  logs-build: false\n${PATCHED}`
    const { dir, store } = await setUp('unallowed-patch', manifest, settings, {}, PATCHES)
    const warm = await expectSameAsStock(dir, store, 'unallowed-patch', { packages: countSnapshots(dir), why: 'util' })
    // pnpm's Progress line: the packages imported unbuilt to be patched were found in the store, so reused too.
    const progress = (run: PnpmRun): string | undefined => /^Progress: resolved .*, done$/m.exec(run.stdout)?.[0]
    expect(progress(warm.stockRun)).toMatch(/reused [1-9]/)
    expect(progress(warm.nativeRun)).toBe(progress(warm.stockRun))
    for (const d of [warm.stock, warm.native]) {
      expect(buildLog(d)).toBe('')
      expect(fs.readFileSync(path.join(d, 'node_modules', 'util', 'index.js'), 'utf8')).toBe('module.exports = \'patched\'\n')
      expect(fs.readFileSync(path.join(d, 'node_modules', 'logs-build', 'build.js'), 'utf8')).toContain("'patched'")
    }
    const cold = await installCold(dir, 'unallowed-patch-cold')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d)).toBe('')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    // pnpm records util's patched files (no build), and for the denied build nothing from 11.27.0 (the patched files before).
    expect(sideEffectsRows(cold.nativeStore, ['util', 'logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['util', 'logs-build']))
    expect(sideEffectsRows(cold.stockStore, ['util'])).toEqual([[expect.any(String), [[expect.stringMatching(/;patch=/), expect.anything()]]]])
  })

  it.runIf(patchesNative)('patched packages with scripts off (pnpm patches them in its build step on every install, nothing looked up, no script run): patched natively, the build left pending; stock\'s tree, side effects and state, up to date, warm and cold', async () => {
    // builder: a build and a command of its own, not patched: through the build step all the same.
    const manifest = { name: 'p', version: '1.0.0', dependencies: { util: '1.0.0', 'logs-build': '1.0.0', builder: '1.0.0' } }
    const settings = `minimumReleaseAge: 0\nallowBuilds:\n  logs-build: true\n  builder: false\n${PATCHED}`
    const { dir, store } = await setUp('scripts-off-patch', manifest, settings, {}, PATCHES)
    fs.rmSync(path.join(dir, 'build-log.txt'), { force: true })
    const args = ['--config.ignore-scripts=true']
    const warm = await expectSameAsStock(dir, store, 'scripts-off-patch', { packages: countSnapshots(dir), why: 'util', args })
    for (const d of [warm.stock, warm.native]) {
      expect(buildLog(d)).toBe('')
      expect(fs.readFileSync(path.join(d, 'node_modules', 'util', 'index.js'), 'utf8')).toBe('module.exports = \'patched\'\n')
      expect(fs.readFileSync(path.join(d, 'node_modules', 'logs-build', 'build.js'), 'utf8')).toContain("'patched'")
    }
    expect(warm.stockTree.find((l) => l.startsWith('node_modules/.modules.yaml '))).toMatch(/"pendingBuilds":\[.*"logs-build@1\.0\.0/)
    expect(warm.stockTree).toContainEqual(expect.stringMatching(/^node_modules\/\.pnpm\/builder@1\.0\.0\/node_modules\/builder\/node_modules\/\.bin\/builder-cli 755/))
    const cold = await installCold(dir, 'scripts-off-patch-cold', args)
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d)).toBe('')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(sideEffectsRows(cold.nativeStore, ['util', 'logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['util', 'logs-build']))
  })

  it('a built package with bundled dependencies, from a side-effects entry that lists them as deleted (as the uploads before 11.28.11 write it, in a store pnpm releases share): restored as the running release restores it, the bundled files kept from 11.28.11 on; stock\'s tree', async () => {
    const { dir, store } = await setUp('bundled-built', { name: 'b', version: '1.0.0', dependencies: { 'bundles-build': '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  bundles-build: true\n')
    const index = new StoreIndex(path.join(store, 'v11'))
    const key = [...index.keys()].find((k) => nameOfKey(k) === 'bundles-build')!
    const row = index.get(key) as { sideEffects: Map<string, { deleted?: string[] }> }
    for (const diff of row.sideEffects.values()) diff.deleted = [...new Set([...diff.deleted ?? [], 'node_modules/inner/index.js', 'node_modules/inner/package.json'])]
    index.set(key, row)
    index.close()
    const both = await expectSameAsStock(dir, store, 'bundled-built', { packages: countSnapshots(dir), why: 'bundles-build' })
    expect(fs.existsSync(path.join(both.stock, 'node_modules/bundles-build/node_modules/inner/index.js'))).toBe(keepsBundled(testedPnpmVersion))
    expect(fs.readFileSync(path.join(both.native, 'node_modules/bundles-build/built.txt'), 'utf8')).toBe('yes')
    for (const d of [both.stock, both.native]) expect(buildLog(d)).toBe('')
  })

  /** The package name of a store index key (`<integrity>\t<name>@<version>`). */
  const nameOfKey = (key: string): string => key.split('\t')[1].replace(/@[^@]*$/, '')

  /** The side effects a store's index records for the packages named `names`, by row and cache key (without the times files were checked). */
  function sideEffectsRows (store: string, names: string[]): unknown[] {
    const index = new StoreIndex(path.join(store, 'v11'))
    try {
      return [...index.entries()].filter(([key]) => names.includes(nameOfKey(key))).sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, row]: [string, any]) => [key, [...(row.sideEffects ?? new Map())].map(([cacheKey, diff]: [string, any]) => [cacheKey, {
          added: diff.added == null ? undefined : [...diff.added].map(([file, info]: [string, any]) => [file, info.digest, info.mode, info.size]),
          deleted: diff.deleted,
        }])])
    } finally {
      index.close()
    }
  }

  it.skipIf(buildsNative)('builds pnpm runs, into a cold store, under a release they were not checked against: downloaded, then left to pnpm, which runs them, as stock', async () => {
    const manifest = { name: 'cold-built', version: '1.0.0', dependencies: { 'native-build': '1.0.0' } }
    const { dir } = await setUp('cold-builds-older', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  logs-build: true\n  native-build: true\n')
    const cold = await installCold(dir, 'cold-builds-older')
    expect(cold.trace).toMatch(new RegExp(`^native install skipped: logs-build@1\\.0\\.0: no side effects cached for \\S+, and pnpm ${testedPnpmVersion.replaceAll('.', '\\.')} runs the builds itself `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' logs-build native-build')
    expect(tree(cold.native, cold.nativeStore).map((l) => l.split(cold.native).join('<p>'))).toEqual(tree(cold.stock, cold.stockStore).map((l) => l.split(cold.stock).join('<p>')))
  })

  it.runIf(buildsNative)('builds pnpm runs, into a cold store: run natively as pnpm runs them (dependencies first, its environment), once each; stock\'s tree and the side effects stock records; then fresh clones on that store find them, stock and native alike', async () => {
    const manifest = { name: 'cold-built', version: '1.0.0', dependencies: { 'native-build': '1.0.0', 'env-build': '1.0.0' } }
    const { dir } = await setUp('cold-builds', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  logs-build: true\n  native-build: true\n  env-build: true\n')
    const cold = await installCold(dir, 'cold-builds')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(cold.run.stdout).toContain('Already up to date')
    for (const d of [cold.stock, cold.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' env-build env-build logs-build native-build')
    // native-build depends on logs-build: built after it.
    const log = buildLog(cold.native).split('\n')
    expect(log.indexOf('logs-build')).toBeLessThan(log.indexOf('native-build'))
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    // What the scripts saw (the tree compared it too, with the project's path replaced).
    const env = fs.readFileSync(path.join(cold.native, 'node_modules', 'env-build', 'env-postinstall.txt'), 'utf8')
    for (const line of ['npm_lifecycle_event=postinstall', 'npm_package_config_nested_on=true', 'npm_command=install', 'pnpm_config_verify_deps_before_run=false', `INIT_CWD=${cold.native}`]) expect(env).toContain(`${line}\n`)
    // pnpm records what the builds changed (a build's own env files differ by the project's path).
    const built = ['logs-build', 'native-build']
    expect(sideEffectsRows(cold.nativeStore, built)).toEqual(sideEffectsRows(cold.stockStore, built))
    // pnpm's reporter shows the scripts as for its own builds (pnpm runs some at once: their lines interleave), and the packages added.
    const scriptLines = (out: string) => out.split('\n').filter((l) => /^\.\.\.\/node_modules\/\S+ (preinstall|install|postinstall)(\$|:) /.test(l)).sort()
    expect(scriptLines(cold.run.stdout)).toHaveLength(8)
    expect(scriptLines(cold.run.stdout)).toEqual(scriptLines(cold.stockRun.stdout))
    // The builds' lines before pnpm's summary of the project's dependencies, as pnpm builds before it sums up.
    for (const out of [cold.stockRun.stdout, cold.run.stdout]) {
      const lines = out.split('\n')
      const lastScriptLine = Math.max(...scriptLines(out).map((l) => lines.indexOf(l)))
      expect(lastScriptLine, out).toBeLessThan(lines.indexOf('dependencies:'))
    }
    const added = (out: string) => /^Progress: resolved \d+, reused \d+, downloaded \d+, added (\d+), done$/m.exec(out)?.[1]
    expect(added(cold.run.stdout)).toBe(added(cold.stockRun.stdout))
    expect(JSON.stringify(sideEffectsRows(cold.nativeStore, ['env-build']))).toContain('env-postinstall.txt')
    // Fresh clones on the store the native install filled: stock and the plugin find the builds cached.
    const warm = await expectSameAsStock(dir, cold.nativeStore, 'cold-builds-warm', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [warm.stock, warm.native]) expect(buildLog(d)).toBe('')
  })

  it.runIf(buildsNative)('a build that writes its command\'s file again (a shell script, not executable), into a cold store: the shims pnpm wrote before it linked again after it only from 11.28.10 (relinksBuilt), as under stock; stock\'s tree and side effects', async () => {
    const manifest = { name: 'cold-rewrites', version: '1.0.0', dependencies: { 'uses-rewrites': '1.0.0' } }
    const { dir } = await setUp('cold-rewrites', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  rewrites-bin: true\n')
    const cold = await installCold(dir, 'cold-rewrites')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d)).toBe('rewrites-bin\n')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(sideEffectsRows(cold.nativeStore, ['rewrites-bin'])).toEqual(sideEffectsRows(cold.stockStore, ['rewrites-bin']))
    // The privately hoisted command and the one beside its dependent: written again for the shell script, or kept.
    for (const shim of [['.pnpm', 'node_modules', '.bin'], ['.pnpm', 'uses-rewrites@1.0.0', 'node_modules', 'uses-rewrites', 'node_modules', '.bin']].map((at) => path.join(cold.stock, 'node_modules', ...at, 'rewrites-cli'))) {
      expect(fs.readFileSync(shim, 'utf8').includes('/bin/sh"'), fs.readFileSync(shim, 'utf8')).toBe(TESTED.relinksBuilt)
    }
  })

  it.runIf(buildsNative)('a build that writes its command\'s file again, a dependency of a package pnpm\'s build step takes too: native from 11.28.10 (the commands linked again after the build), before it left to pnpm, which links them into the dependent\'s .bin at its turn; stock\'s tree', async () => {
    const manifest = { name: 'cold-rewrites-dependent', version: '1.0.0', dependencies: { 'builds-on-rewrites': '1.0.0' } }
    const { dir } = await setUp('cold-rewrites-dependent', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  rewrites-bin: true\n  builds-on-rewrites: true\n')
    const cold = await installCold(dir, 'cold-rewrites-dependent')
    if (TESTED.relinksBuilt) expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    else expect(cold.trace).toMatch(/^native install skipped: rewrites-bin@1\.0\.0: no side effects cached for \S+, and its commands, which its build may change, this pnpm links again into the \.bin of \S+builds-on-rewrites@1\.0\.0\S+ when its turn comes in its build step /m)
    for (const d of [cold.stock, cold.native]) expect(buildLog(d)).toBe('rewrites-bin\nbuilds-on-rewrites\n')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
  })

  it.runIf(buildsNative)('the project\'s own scripts with builds into a cold store: the builds, then the project\'s postinstall and prepare (after the builds, seeing what they built), run natively once each; stock\'s tree, lines and side effects', async () => {
    const manifest = {
      name: 'cold-scripts',
      version: '1.0.0',
      dependencies: { 'native-build': '1.0.0' },
      // The project's own scripts come after the builds: they see what the builds wrote.
      scripts: { postinstall: 'node -e "require(\'fs\').appendFileSync(\'build-log.txt\', \'project \' + require(\'fs\').existsSync(\'node_modules/native-build/build/addon.node\') + \'\\n\')"', prepare: 'echo prepare >> build-log.txt' },
    }
    const { dir } = await setUp('cold-scripts', manifest, 'minimumReleaseAge: 0\nallowBuilds:\n  logs-build: true\n  native-build: true\n')
    fs.rmSync(path.join(dir, 'build-log.txt'))
    const cold = await installCold(dir, 'cold-scripts')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, .*; the project's postinstall, prepare next$`, 'm'))
    expect(cold.trace).toMatch(/^native install: ran the project's postinstall, prepare(, state validated at \d+)?$/m)
    for (const d of [cold.stock, cold.native]) expect(buildLog(d)).toBe(buildLog(cold.stock))
    expect(buildLog(cold.native).split('\n').slice(-3)).toEqual(['project true', 'prepare', ''])
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(sideEffectsRows(cold.nativeStore, ['logs-build', 'native-build'])).toEqual(sideEffectsRows(cold.stockStore, ['logs-build', 'native-build']))
    const scriptLines = (out: string) => out.split('\n').filter((l) => /^(\.|\.\.\.\/node_modules\/\S+) (preinstall|install|postinstall|prepare)(\$|:) /.test(l))
    expect(scriptLines(cold.run.stdout).sort()).toEqual(scriptLines(cold.stockRun.stdout).sort())
    expect(scriptLines(cold.run.stdout).slice(-2)).toEqual(['. prepare$ echo prepare >> build-log.txt', '. prepare: Done'])
    // Up to date: nothing runs again.
    const again = await runPnpm(['install', '--frozen-lockfile'], { projectDir: cold.native, storeDir: cold.nativeStore, sandbox: sandbox('cold-scripts-native') })
    expectOk(again)
    expect(again.stdout).toContain('Already up to date')
    expect(buildLog(cold.native)).toBe(buildLog(cold.stock))
  })

  it.runIf(buildsNative)('a project\'s own script that fails, in a workspace: the others under way end, none starts after it, the install ends with its error and status as stock\'s; .modules.yaml written, the workspace state not (the next install runs them again), as stock', async () => {
    const projects = structuredClone(WORKSPACE.projects) as Record<string, WorkspaceProject>
    const { dir } = await setUp('failing-project-script', WORKSPACE.root, WORKSPACE.workspace, projects)
    // The scripts after the set-up's install (which would fail).
    const withScripts = (project: string, scripts: Record<string, string>): void => {
      fs.writeFileSync(path.join(dir, project, 'package.json'), JSON.stringify({ ...projects[project].manifest, scripts }, null, 2))
    }
    withScripts('packages/lib', { install: 'echo lib >> ../../log.txt; exit 3', postinstall: 'echo never >> ../../log.txt' })
    // app waits for lib: never started.
    withScripts('packages/app', { prepare: 'echo app >> ../../log.txt' })
    const runs: Record<string, PnpmRun> = {}
    const store = path.join(base, 'failing-project-script-store')
    const traceFile = path.join(base, 'failing-project-script-trace.txt')
    for (const side of ['stock', 'native']) {
      runs[side] = await runPnpm(['install', '--frozen-lockfile'], { projectDir: clone(dir, `failing-project-script-${side}`), storeDir: store, sandbox: sandbox(`failing-project-script-${side}`), env: side === 'stock' ? STOCK : { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    }
    const [stock, native] = ['stock', 'native'].map((side) => path.join(base, `failing-project-script-${side}`))
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^native install ended: the project's scripts failed in packages\/lib \(.*Exit status 3\)/m)
    expect(runs.stock.code).toBe(3)
    expect(runs.native.code).toBe(runs.stock.code)
    for (const d of [stock, native]) expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('lib\n')
    const failure = (run: PnpmRun): string[] => (run.stdout + run.stderr).split('\n').filter((l) => /^packages\/lib install|ELIFECYCLE|ERR_PNPM/.test(l))
    expect(failure(runs.native)).toEqual(failure(runs.stock))
    expect(failure(runs.stock)).toContain('[ELIFECYCLE] Command failed with exit code 3.')
    // The projects pnpm's runner never reached keep the shims of its first link (through the packages' own directories).
    expect(relativeTree(native, store)).toEqual(relativeTree(stock, store))
    expect(fs.existsSync(path.join(native, 'node_modules', '.modules.yaml'))).toBe(true)
    expect(fs.existsSync(path.join(native, 'node_modules', '.pnpm-workspace-state-v1.json'))).toBe(false)
  })

  it.runIf(buildsNative)('a project\'s own script that fails, its package.json giving an _id of its own: the error names it as stock\'s does (by that _id to 11.28.3, ownScriptId; by its name and version from 11.28.4), in pnpm\'s ndjson records', async () => {
    const manifest = { name: 'own-id', version: '1.0.0', dependencies: { util: '1.0.0' } }
    const { dir } = await setUp('own-id-script', manifest, 'minimumReleaseAge: 0\n')
    // The script after the set-up's install (which would fail).
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, _id: 'its-own@9.9.9', scripts: { postinstall: 'exit 3' } }, null, 2))
    const store = path.join(base, 'own-id-script-store')
    const traceFile = path.join(base, 'own-id-script-trace.txt')
    const runs: Record<string, PnpmRun> = {}
    for (const side of ['stock', 'native']) {
      runs[side] = await runPnpm(['install', '--frozen-lockfile'], { projectDir: clone(dir, `own-id-script-${side}`), storeDir: store, sandbox: sandbox(`own-id-script-${side}`), env: side === 'stock' ? STOCK : { CAS_NATIVE_PNPMFILE_TRACE: traceFile }, reporter: 'ndjson' })
    }
    expect(fs.readFileSync(traceFile, 'utf8')).toMatch(/^native install ended: the project's scripts failed in \. /m)
    expect(runs.stock.code).toBe(3)
    expect(runs.native.code).toBe(runs.stock.code)
    const errors = (run: PnpmRun): unknown[] => run.stdout.split('\n').flatMap((line) => {
      try {
        const record = JSON.parse(line) as { level?: string, err?: Record<string, unknown> }
        return record.level === 'error' ? [record.err] : []
      } catch {
        return []
      }
    })
    const named = TESTED.ownScriptId ? 'its-own@9.9.9' : 'own-id@1.0.0'
    expect(errors(runs.stock)).toEqual([expect.objectContaining({ message: `${named} postinstall: \`exit 3\`\nExit status 3` })])
    expect(errors(runs.native).map((e) => ({ ...e as object, stack: undefined }))).toEqual(errors(runs.stock).map((e) => ({ ...e as object, stack: undefined })))
  })

  it.runIf(buildsNative)('builds into a cold store with unsafePerm (pnpm\'s default but as root): no TMPDIR of their own, run as pnpm\'s user; stock\'s tree and side effects', async () => {
    const { dir } = await setUp('cold-unsafe-perm', { name: 'u', version: '1.0.0', dependencies: { 'env-build': '1.0.0', 'logs-build': '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  env-build: true\n  logs-build: true\n')
    const cold = await installCold(dir, 'cold-unsafe-perm', ['--config.unsafe-perm=true'])
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(relativeTree(cold.native, cold.nativeStore).filter((l) => l.includes('/node_modules/.tmp/'))).toEqual([])
    expect(sideEffectsRows(cold.nativeStore, ['logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['logs-build']))
  })

  it.runIf(buildsNative)('a build into a cold store under shellEmulator: run natively with pnpm\'s emulator (its echo, not sh\'s), once; stock\'s tree, output and side effects; then fresh clones find them', async () => {
    const manifest = { name: 'emulated', version: '1.0.0', dependencies: { 'shell-build': '1.0.0', 'env-build': '1.0.0', util: '1.0.0' } }
    const { dir } = await setUp('cold-emulator', manifest, 'minimumReleaseAge: 0\nshellEmulator: true\nallowBuilds:\n  shell-build: true\n  env-build: true\n')
    const cold = await installCold(dir, 'cold-emulator')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    // env-build records the environment its scripts got from the emulator (the trees compare it).
    for (const d of [cold.stock, cold.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' env-build env-build shell-build')
    // The emulator's echo prints `-n` (sh's takes it as an option): the script ran in the emulator.
    expect(fs.readFileSync(path.join(cold.native, 'node_modules', 'shell-build', 'out.txt'), 'utf8')).toBe('-n shell-build\n')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(sideEffectsRows(cold.nativeStore, ['shell-build'])).toEqual(sideEffectsRows(cold.stockStore, ['shell-build']))
    // pnpm runs some builds at once: their lines interleave.
    const scriptLines = (out: string) => out.split('\n').filter((l) => /^\.\.\.\/node_modules\/\S+ (preinstall|postinstall)(\$|:) /.test(l)).sort()
    expect(scriptLines(cold.run.stdout)).toEqual(scriptLines(cold.stockRun.stdout))
    // Its output as pnpm shows it: the last line, without a line break, never (pnpm never ends the emulator's streams).
    expect(scriptLines(cold.stockRun.stdout).filter((l) => / postinstall: (shown|tail)$/.test(l))).toEqual(['.../node_modules/shell-build postinstall: shown'])
    const warm = await expectSameAsStock(dir, cold.nativeStore, 'cold-emulator-warm', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [warm.stock, warm.native]) expect(buildLog(d)).toBe('')
  })

  it.runIf(buildsNative)('builds into a cold store under a scriptShell (bash): run natively with that shell, not the emulator, as pnpm runs them; stock\'s tree (the environment the scripts recorded too), lines and side effects', async () => {
    const manifest = { name: 'shelled', version: '1.0.0', dependencies: { 'env-build': '1.0.0', 'logs-build': '1.0.0', 'bash-build': '1.0.0' } }
    const { dir } = await setUp('cold-script-shell', manifest, 'minimumReleaseAge: 0\nshellEmulator: true\nscriptShell: /bin/bash\nallowBuilds:\n  env-build: true\n  logs-build: true\n  bash-build: true\n')
    const cold = await installCold(dir, 'cold-script-shell')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' env-build env-build logs-build')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    // bash ran them (its `[[`), in both.
    expect(fs.readFileSync(path.join(cold.native, 'node_modules', 'bash-build', 'shell.txt'), 'utf8')).toBe('bash\n')
    expect(sideEffectsRows(cold.nativeStore, ['logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['logs-build']))
    const scriptLines = (out: string) => out.split('\n').filter((l) => /^\.\.\.\/node_modules\/\S+ (preinstall|postinstall)(\$|:) /.test(l)).sort()
    expect(scriptLines(cold.run.stdout)).toEqual(scriptLines(cold.stockRun.stdout))
    expect(scriptLines(cold.run.stdout)).toHaveLength(8)
  })

  it.runIf(buildsNative)('the project\'s scripts and a build the cache lacks, into a cold store: both run natively, the build once, then the scripts; stock\'s tree and side effects', async () => {
    const { dir } = await setUp('project-scripts-miss', { name: 'p', version: '1.0.0', dependencies: { 'logs-build': '1.0.0' }, scripts: RECORDING_SCRIPTS }, 'minimumReleaseAge: 0\nallowBuilds:\n  logs-build: true\n')
    fs.rmSync(path.join(dir, 'log.txt'), { force: true })
    fs.rmSync(path.join(dir, 'build-log.txt'), { force: true })
    const cold = await installCold(dir, 'project-scripts-miss')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, .*; the project's install, postinstall, prepare next$`, 'm'))
    for (const d of [cold.stock, cold.native]) {
      expect(buildLog(d)).toBe('logs-build\n')
      expect(fs.readFileSync(path.join(d, 'log.txt'), 'utf8')).toBe('install\npostinstall\nprepare\n')
    }
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(sideEffectsRows(cold.nativeStore, ['logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['logs-build']))
  })

  it.runIf(buildsNative)('a workspace project\'s dependencies that build, into a cold store: run natively with the environment and PATH pnpm gives them in a workspace; stock\'s trees and side effects', async () => {
    const projects = { 'packages/app': { manifest: { name: '@ws/app', version: '1.0.0', dependencies: { 'env-build': '1.0.0', 'logs-build': '1.0.0' } } } }
    const workspace = "packages:\n  - 'packages/*'\nminimumReleaseAge: 0\nallowBuilds:\n  env-build: true\n  logs-build: true\n"
    const { dir } = await setUp('cold-workspace-builds', { name: 'ws-root', version: '1.0.0', private: true, devDependencies: { util: '1.0.0' } }, workspace, projects)
    const cold = await installCold(dir, 'cold-workspace-builds')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d).split('\n').sort().join(' ')).toBe(' env-build env-build logs-build')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    // The workspace root's .bin is on a dependency's PATH, after the privately hoisted packages'.
    const env = fs.readFileSync(path.join(cold.native, 'node_modules', '.pnpm', 'env-build@1.0.0', 'node_modules', 'env-build', 'env-postinstall.txt'), 'utf8')
    expect(env).toContain(`:${cold.native}/node_modules/.pnpm/node_modules/.bin:${cold.native}/node_modules/.bin:`)
    expect(sideEffectsRows(cold.nativeStore, ['logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['logs-build']))
  })

  it.runIf(buildsNative)('patched packages, one that also builds, into a cold store: patched (pnpm\'s applier) and built natively, once; stock\'s tree and side effects; then fresh clones find them', async () => {
    const manifest = { name: 'patched', version: '1.0.0', dependencies: { util: '1.0.0', 'logs-build': '1.0.0' } }
    const { dir } = await setUp('cold-patches', manifest, `minimumReleaseAge: 0\nallowBuilds:\n  util: true\n  logs-build: true\n${PATCHED}`, {}, PATCHES)
    const cold = await installCold(dir, 'cold-patches')
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    for (const d of [cold.stock, cold.native]) expect(buildLog(d)).toBe('logs-build\n')
    expect(fs.readFileSync(path.join(cold.native, 'node_modules', 'util', 'index.js'), 'utf8')).toBe('module.exports = \'patched\'\n')
    expect(fs.readFileSync(path.join(cold.native, 'node_modules', 'logs-build', 'built.txt'), 'utf8')).toBe('patched')
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(relativeTree(cold.stock, cold.stockStore))
    expect(sideEffectsRows(cold.nativeStore, ['util', 'logs-build'])).toEqual(sideEffectsRows(cold.stockStore, ['util', 'logs-build']))
    const warm = await expectSameAsStock(dir, cold.nativeStore, 'cold-patches-warm', { packages: countSnapshots(dir), why: 'util' })
    for (const d of [warm.stock, warm.native]) expect(buildLog(d)).toBe('')
  })

  it.runIf(buildsNative && canBuildAddons)('a native addon with a binding.gyp and no install script, into a cold store: built natively with `node-gyp rebuild` (pnpm\'s node-gyp, offline), once; stock\'s tree (node-gyp\'s build/ output), lines and side effects; then fresh clones find it', async () => {
    // The lockfile resolved without building (the set-up's install has no headers to build with).
    const { dir } = await setUp('cold-gyp', { name: 'g', version: '1.0.0', dependencies: { util: '1.0.0' } }, 'minimumReleaseAge: 0\nallowBuilds:\n  gyp-addon: true\n')
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, dependencies: { ...manifest.dependencies, 'gyp-addon': '1.0.0' } }, null, 2))
    expectOk(await runPnpm(['install', '--lockfile-only'], { projectDir: dir, storeDir: path.join(base, 'cold-gyp-store'), sandbox: sandbox('cold-gyp'), registry: registry.url }))
    const cold = await installCold(dir, 'cold-gyp', [], { npm_config_nodedir: NODE_HEADERS })
    expect(cold.trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    expect(cold.run.stdout).toContain('Already up to date')
    // The addon node-gyp built, loaded by Node 24.
    const loaded = spawnSync(pnpmNode, ['-p', 'require("gyp-addon").answer'], { cwd: cold.native, encoding: 'utf8' })
    expect(loaded.stdout).toBe('42\n')
    // Every file and mode as stock's: build/Makefile names the package's directory (the clone's path, replaced).
    const stockTree = relativeTree(cold.stock, cold.stockStore)
    expect(relativeTree(cold.native, cold.nativeStore)).toEqual(stockTree)
    const built = 'node_modules/.pnpm/gyp-addon@1.0.0/node_modules/gyp-addon/build/'
    for (const file of ['Makefile 644', 'config.gypi 644', 'Release/addon.node 755', 'Release/obj.target/addon/addon.o 644']) expect(stockTree.some((l) => l.startsWith(built + file)), file).toBe(true)
    // What pnpm recorded: the same files, modes and blobs but the Makefile's, whose text differs only by the clone's path.
    const rows = (store: string, clone: string): unknown[] => sideEffectsRows(store, ['gyp-addon']).map(([key, effects]: any) => [key, effects.map(([cacheKey, diff]: any) => [cacheKey, {
      ...diff,
      added: diff.added?.map(([file, digest, mode, size]: [string, string, number, number]) => file === 'build/Makefile'
        ? [file, blobText(store, digest, mode).split(clone).join('<p>'), mode]
        : [file, digest, mode, size]),
    }])])
    expect(rows(cold.nativeStore, cold.native)).toEqual(rows(cold.stockStore, cold.stock))
    expect(JSON.stringify(rows(cold.stockStore, cold.stock))).toContain('build/Release/addon.node')
    // pnpm's reporter shows the script, node-gyp's and make's lines as stock's (in each's clone; stdout's and stderr's interleave as they come).
    const scriptLines = (out: string, clone: string) => out.split(clone).join('<p>').split('\n').filter((l) => /^\.\.\.\/\S+ install(\$|:) /.test(l)).sort()
    expect(scriptLines(cold.run.stdout, cold.native)).toEqual(scriptLines(cold.stockRun.stdout, cold.stock))
    expect(scriptLines(cold.stockRun.stdout, cold.stock)).toContain('.../node_modules/gyp-addon install$ node-gyp rebuild')
    expect(scriptLines(cold.stockRun.stdout, cold.stock)).toContain('.../node_modules/gyp-addon install: gyp info ok ')
    const warm = await expectSameAsStock(dir, cold.nativeStore, 'cold-gyp-warm', { packages: countSnapshots(dir), why: 'util' })
    // From the cache: no script ran (node-gyp would have printed its lines).
    for (const run of [warm.stockRun, warm.nativeRun]) expect(run.stdout).not.toContain('node-gyp rebuild')
  })

  it('a bin it cannot write as pnpm does, found after the layout: nothing recorded, so pnpm installs over it, to stock\'s tree', async () => {
    await expectLeftToPnpm('node-bin', { name: 'n', version: '1.0.0', dependencies: { 'node-bin': '1.0.0', util: '1.0.0' } },
      'minimumReleaseAge: 0\n', /^native install skipped: a command named node \(node-bin\)$/m)
  })

  it('a package shipping a file where a shim goes, and directories.bin of every kind (the package itself, its parent, a sibling, behind an empty bin, with dot files): stock\'s tree, and the store\'s files unchanged', async () => {
    const manifest = {
      name: 'shipped',
      version: '1.0.0',
      dependencies: { 'ships-bin': '1.0.0', 'bindir-self': '1.0.0', 'bindir-up': '1.0.0', 'bindir-sibling': '1.0.0', 'bindir-empty-bin': '1.0.0', 'bindir-dotted': '1.0.0', util: '1.0.0', '@scope/tool': '1.0.0' },
    }
    const { dir } = await setUp('shipped', manifest, 'minimumReleaseAge: 0\n')
    // Cold stores: the native one is filled by the native install alone, and stock's chmod
    // through the hard links (of targets that are not executable) does not reach it.
    const { stock, stockStore, native, nativeStore, trace } = await installCold(dir, 'shipped')
    expect(trace).toMatch(new RegExp(`^native install: ${countSnapshots(dir)} packages, `, 'm'))
    const stockTree = relativeTree(stock, stockStore)
    expect(relativeTree(native, nativeStore)).toEqual(stockTree)
    for (const entry of [
      'node_modules/.pnpm/ships-bin@1.0.0/node_modules/ships-bin/node_modules/.bin/shipped-cmd 755',
      'node_modules/.bin/run.js 755', 'node_modules/.bin/package.json 755', 'node_modules/.bin/tool.sh 755', 'node_modules/.bin/ok.js 755',
      'node_modules/.pnpm/bindir-self@1.0.0/node_modules/bindir-self/package.json 755',
    ]) expect(stockTree.some((l) => l.startsWith(entry)), entry).toBe(true)
    for (const absent of ['.hidden.js', 'up.js', 'sib.js', 'never.js', '.dot.js', 'in.js']) expect(stockTree).not.toContainEqual(expect.stringMatching(new RegExp(`^node_modules/\\.bin/${absent.replace('.', '\\.')} `)))
    // Every blob still hashes to its name, with the exec bit its name says.
    const report = verifyStore(path.join(nativeStore, 'v11'))
    expect(report.problems).toEqual([])
    expect(report.blobs).toBeGreaterThan(0)
    expect(fs.readFileSync(path.join(native, 'node_modules/ships-bin/data.txt'), 'utf8')).toBe(SHIPPED)
  })

  /** The path of a blob in a store, by its digest and its file's mode. */
  function blobPath (store: string, digest: string, mode: number): string {
    return path.join(store, 'v11', 'files', digest.slice(0, 2), `${digest.slice(2)}${(mode & 0o111) !== 0 ? '-exec' : ''}`)
  }

  /** A blob's text. */
  function blobText (store: string, digest: string, mode: number): string {
    return fs.readFileSync(blobPath(store, digest, mode), 'utf8')
  }

  /** The blob of each file of the (one) package named `name` in a store's index, by the file's path in the package. */
  function blobsOf (store: string, name: string): Record<string, string> {
    const index = new StoreIndex(path.join(store, 'v11'))
    try {
      const [, row] = [...index.entries()].find(([key]) => nameOfKey(key) === name) as [string, any]
      return Object.fromEntries([...row.files].map(([file, info]: [string, any]) => [file, blobPath(store, info.digest, info.mode)]))
    } finally {
      index.close()
    }
  }

  it('blobs whose modes drifted in the store (one made executable through a hard link, an executable one that lost its x bits): copied with the modes their names say, a group-writable one linked (copied from 11.28.1 to 11.28.5; before 11.28.1 all linked as they are), as stock', async () => {
    const { dir, store } = await setUp('drifted-modes', { name: 'drifted', version: '1.0.0', dependencies: { modes: '1.0.0', util: '1.0.0' } }, 'minimumReleaseAge: 0\n')
    const blobs = blobsOf(store, 'modes')
    fs.chmodSync(blobs['data.txt'], 0o755)
    fs.chmodSync(blobs['run.sh'], 0o644)
    fs.chmodSync(blobs['group.txt'], 0o664)
    // Verified, the blobs' modes come from the reader's stat; unverified, the importer stats them.
    for (const [label, args] of [['drifted-modes', []], ['drifted-modes-unverified', ['--config.verify-store-integrity=false']]] as const) {
      const both = await expectSameAsStock(dir, store, label, { packages: countSnapshots(dir), why: 'util', args: [...args] })
      const rule = blobModeRule(testedPnpmVersion)
      for (const project of [both.stock, both.native]) {
        const stat = (file: string): fs.Stats => fs.statSync(path.join(project, 'node_modules/.pnpm/modes@1.0.0/node_modules/modes', file))
        const linkedAsItIs = (file: string): void => expect([stat(file).mode & 0o777, stat(file).ino]).toEqual([fs.statSync(blobs[file]).mode & 0o777, fs.statSync(blobs[file]).ino])
        expect(stat('package.json').ino).toBe(fs.statSync(blobs['package.json']).ino)
        // Before 11.28.1 pnpm has no rule for a blob's bits.
        if (rule === 'none') {
          for (const file of ['data.txt', 'run.sh', 'group.txt']) linkedAsItIs(file)
          continue
        }
        expect([stat('data.txt').mode & 0o777, stat('data.txt').nlink]).toEqual([0o644, 1])
        expect([stat('run.sh').mode & 0o777, stat('run.sh').nlink]).toEqual([0o755, 1])
        // pnpm links a blob whose group write drifted from 11.28.6 (`isLinkableStoreMode`); before, it copies it.
        if (rule === 'exact') expect([stat('group.txt').mode & 0o777, stat('group.txt').nlink]).toEqual([0o644, 1])
        else linkedAsItIs('group.txt')
      }
    }
    // The store's blobs are left as they were.
    expect(['data.txt', 'run.sh', 'group.txt'].map((f) => fs.statSync(blobs[f]).mode & 0o777)).toEqual([0o755, 0o644, 0o664])
  })

  it('what a killed install of its own left (state file temporaries, staging dirs, the clock probe) is removed by the next install; a running process\'s stays', async () => {
    const { dir, store } = await setUp('leftovers', { name: 'l', version: '1.0.0', dependencies: { util: '1.0.0', '@scope/tool': '1.0.0' } }, 'minimumReleaseAge: 0\n')
    const project = clone(dir, 'leftovers-native')
    const opts = { projectDir: project, storeDir: store, sandbox: sandbox('leftovers-native') }
    expectOk(await runPnpm(['install', '--frozen-lockfile'], opts))
    // As a native install killed before its last file leaves it, from a process that is gone.
    const modules = path.join(project, 'node_modules')
    fs.rmSync(path.join(modules, '.pnpm-workspace-state-v1.json'))
    const dead = spawnSync(process.execPath, ['-e', '']).pid!
    const leftovers = [
      `.modules.yaml.${dead}.tmp`, `.pnpm-workspace-state-v1.json.${dead}.tmp`, `.pnpm-validation-probe-${dead}-0badc0de`,
      `.pnpm/lock.yaml.${dead}.tmp`, `.pnpm/.cas-native-bin.${dead}.tmp`,
      `.pnpm/util@1.0.0/node_modules/util_tmp_${dead}_cas0/`, `.pnpm/@scope+tool@1.0.0/node_modules/@scope/tool_tmp_${dead}_cas7/`,
    ]
    const running = `.modules.yaml.${process.pid}.tmp`
    for (const entry of [...leftovers, running]) {
      if (entry.endsWith('/')) fs.mkdirSync(path.join(modules, entry))
      else fs.writeFileSync(path.join(modules, entry), 'left')
    }
    expectOk(await runPnpm(['install', '--frozen-lockfile'], opts))
    expect(leftovers.filter((entry) => fs.existsSync(path.join(modules, entry)))).toEqual([])
    expect(fs.existsSync(path.join(modules, running))).toBe(true)
  })

  /** The lockfile's importers (`.`, `packages/a`, …), from its project document. */
  function importerDirs (dir: string): string[] {
    const main = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8').split('\n---\n').at(-1)!
    const section = main.split('\nimporters:\n')[1]?.split(/\n\S/)[0] ?? ''
    return [...section.matchAll(/^ {2}(\S.*?):(?: \{\})?$/gm)].map((m) => m[1].replace(/^'(.*)'$/, '$1'))
  }

  function countSnapshots (dir: string): number {
    const main = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8').split('\n---\n').at(-1)!
    return [...main.split('\nsnapshots:\n')[1].matchAll(/^ {2}\S/gm)].length
  }
})
