#!/usr/bin/env node
// Packs `@cas/pnpm-plugin-native` (npm/pnpm-plugin-native/ plus the compiled plugin and the napi
// loader it needs) and, unless --plugin-only, the platform package of this machine with the
// `.node` that `npm run build` left at the repository root, as tarballs ready to publish.
//
//   node scripts/pack-plugin.mjs <dir> [--plugin-only]
//
// The plugin's version is package.json's (the `version` script keeps npm/*/package.json in step;
// this checks it), and it gets an exact-version optional dependency on every platform package in
// npm/, so the three are published in lockstep. A config dependency gets no
// regular dependencies, so everything else the plugin runs is bundled into it with esbuild:
// dist/plugin/config-dependency.js and every module it requires, pnpm's own packages among them
// (`@pnpm/config.matcher`), in one file beside it, bundle.js, which the entry's place holds a
// loader of (it keeps a code cache of the bundle). Left out of the bundle: the napi
// loader (index.js, copied beside it as it is: its requires are the binaries and the platform
// packages), Node's builtins, and the packages only a build, a patch or an older pnpm release
// imports (`LAZY`, each bundled into a file of its own under dist/plugin/lazy/); bundled empty:
// the few modules the shell emulator's packages load but never run (`UNREACHED`).
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'

const repo = path.resolve(import.meta.dirname, '..')
const args = process.argv.slice(2)
const pluginOnly = args.includes('--plugin-only')
const dest = args.find((a) => !a.startsWith('--'))
if (dest == null) {
  console.error('usage: node scripts/pack-plugin.mjs <dir> [--plugin-only]')
  process.exit(2)
}
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'))
const rootPkg = readJson(path.join(repo, 'package.json'))
const { PLATFORM_PACKAGE_PREFIX, platformArchABI } = createRequire(import.meta.url)(path.join(repo, 'dist', 'api', 'native-platform.js'))

function fail (message) {
  console.error(`pack-plugin: ${message}`)
  process.exit(1)
}

const pluginVersion = readJson(path.join(repo, 'npm', 'pnpm-plugin-native', 'package.json')).version
if (pluginVersion !== rootPkg.version) fail(`npm/pnpm-plugin-native is at ${pluginVersion}, package.json at ${rootPkg.version}: run \`npm run version\``)

/** An esbuild plugin: every require of the napi loader (`index.js` at the root) left to it, by its path from `outDir`. */
function napiLoaderOutside (outDir) {
  const loader = path.join(repo, 'index.js')
  return {
    name: 'napi-loader-outside',
    setup (build) {
      build.onResolve({ filter: /index\.js$/ }, (args) => {
        if (path.resolve(args.resolveDir, args.path) !== loader) return undefined
        return { path: path.relative(outDir, path.join(path.dirname(path.dirname(outDir)), 'index.js')), external: true }
      })
    },
  }
}

/**
 * Modules the shell emulator's dependencies load but its `execute` never reaches: @yarnpkg/shell's
 * command-line entry (with clipanion and typanion), and @yarnpkg/parsers' lockfile and resolution
 * grammars (with js-yaml), which its index loads beside the shell grammar.
 */
const UNREACHED = /[\\/]node_modules[\\/]@yarnpkg[\\/](?:shell[\\/]lib[\\/]commands[\\/]entry|parsers[\\/]lib[\\/](?:syml|resolution))\.js$/

/** An esbuild plugin: the `UNREACHED` modules bundled empty (some 320 kB of code the plugin would never run). */
function unreachedLeftEmpty () {
  return {
    name: 'unreached-left-empty',
    setup (build) {
      build.onLoad({ filter: UNREACHED }, () => ({ contents: '', loader: 'js' }))
    },
  }
}

/**
 * The packages the plugin imports only to run a build or apply a patch the side-effects cache
 * lacks (the shell emulator, pnpm's patcher), or under pnpm 11.28.4-11.28.8 (`symlink-dir`, with
 * fs-extra, for the store's list of projects): each is bundled into a file of its own beside the
 * plugin's, `dist/plugin/lazy/<file>`, required when it is imported. In the one bundle they were
 * ~740 kB of its 1.2 MB, read and compiled by every install that loads the plugin (measured:
 * loading it took 24.5 ms of CPU, 18.9 ms without them; medians of 12 interleaved runs).
 */
const LAZY = { '@yarnpkg/shell': 'yarnpkg-shell.js', '@pnpm/patching.apply-patch': 'patching-apply-patch.js', 'symlink-dir': 'symlink-dir.js' }

/** An esbuild plugin: each `LAZY` package, where imported, a module that requires its own bundle (by its path from the plugin's). */
function lazyOutside () {
  return {
    name: 'lazy-outside',
    setup (build) {
      build.onResolve({ filter: /^[@a-z]/ }, (args) => Object.hasOwn(LAZY, args.path) ? { path: args.path, namespace: 'lazy' } : undefined)
      build.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(`./lazy/${LAZY[args.path]}`)})`, loader: 'js' }))
      build.onResolve({ filter: /^\.\/lazy\//, namespace: 'lazy' }, (args) => ({ path: args.path, external: true }))
    },
  }
}

/**
 * `source` bundled into `outfile`, CommonJS for Node 22 (pnpm 11's floor), names kept so that
 * stack traces stay readable. The platform packages stay outside, and what `plugins` leave
 * outside; anything else the bundle cannot resolve fails the pack, and so does a file it takes
 * from outside dist/ and node_modules/.
 */
async function bundleInto (source, outfile, plugins) {
  const { build } = await import('esbuild')
  const result = await build({
    ...source,
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    external: [`${PLATFORM_PACKAGE_PREFIX}*`],
    plugins: [...plugins, unreachedLeftEmpty()],
    logLevel: 'silent',
    metafile: true,
    absWorkingDir: repo,
  })
  // esbuild names modules by their real path: a worktree's node_modules may be a link to another checkout's.
  const modules = `${path.relative(repo, realpathSync(path.join(repo, 'node_modules'))).split(path.sep).join('/')}/`
  const outside = Object.keys(result.metafile.inputs).filter((input) => !input.startsWith('dist/') && !input.startsWith('node_modules/') && !input.startsWith(modules) && !input.startsWith('lazy:') && input !== '<stdin>')
  if (outside.length > 0) fail(`the bundle took files from outside dist/ and node_modules/: ${outside.join(', ')}`)
}

/**
 * `dist/<entry>` bundled into `<pluginDir>/dist/<dir of entry>/bundle.js`, with the napi loader
 * `../index.js` beside it (copied as it is), and the `LAZY` packages each into a file of its own.
 * At the entry's own path, a loader that runs the bundle with a code cache of its own
 * (`lib/plugin/code-cache.ts`): Node's compile cache leaves out the bundle's modules.
 */
async function bundle (entry, pluginDir) {
  const source = path.join(repo, 'dist', entry)
  if (!existsSync(source)) fail(`dist/${entry} is missing: run \`npm run build\` first`)
  const outfile = path.join(pluginDir, 'dist', path.dirname(entry), 'bundle.js')
  await bundleInto({ entryPoints: [source] }, outfile, [napiLoaderOutside(path.dirname(outfile)), lazyOutside()])
  for (const [pkg, file] of Object.entries(LAZY)) {
    await bundleInto({ stdin: { contents: `module.exports = require(${JSON.stringify(pkg)})`, resolveDir: repo, loader: 'js' } }, path.join(path.dirname(outfile), 'lazy', file), [])
  }
  const loader = "const { codeCacheAfterUpdateConfig, installedNatively, requireWithCodeCache } = require('./dist/plugin/code-cache.js')\n" +
    "const plugin = requireWithCodeCache(require('node:path').join(__dirname, 'bundle.js'), undefined, installedNatively)\n" +
    'module.exports = { ...plugin, load: () => codeCacheAfterUpdateConfig(plugin.load()) }'

  await bundleInto({ stdin: { contents: loader, resolveDir: repo, loader: 'js' } }, path.join(pluginDir, 'dist', entry), [])
  copyFileSync(path.join(repo, 'index.js'), path.join(pluginDir, 'index.js'))
}

/** npm/<platform>/package.json of every platform package, keyed by platform. */
const platformPackages = new Map(readdirSync(path.join(repo, 'npm'))
  .filter((dir) => existsSync(path.join(repo, 'npm', dir, 'package.json')))
  .map((dir) => [dir, readJson(path.join(repo, 'npm', dir, 'package.json'))])
  .filter(([, pkg]) => pkg.name.startsWith(PLATFORM_PACKAGE_PREFIX)))

function pack (dir) {
  const out = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', path.resolve(dest)], { cwd: dir, encoding: 'utf8' })
  const [packed] = JSON.parse(out.slice(out.indexOf('[')))
  const file = path.join(path.resolve(dest), path.basename(packed.filename))
  console.log(`${file} (${packed.size} bytes packed, ${packed.entryCount} files)`)
}

mkdirSync(dest, { recursive: true })
const stage = mkdtempSync(path.join(os.tmpdir(), 'cas-pack-plugin-'))
try {
  const plugin = path.join(stage, 'pnpm-plugin-native')
  cpSync(path.join(repo, 'npm', 'pnpm-plugin-native'), plugin, { recursive: true })
  // Its README links the native install's rules, and those link the store format.
  await bundle('plugin/config-dependency.js', plugin)
  for (const rel of ['docs/native-install.md', 'docs/store-format.md']) {
    mkdirSync(path.dirname(path.join(plugin, rel)), { recursive: true })
    copyFileSync(path.join(repo, rel), path.join(plugin, rel))
  }
  const manifest = readJson(path.join(plugin, 'package.json'))
  writeFileSync(path.join(plugin, 'package.json'), `${JSON.stringify({
    ...manifest,
    optionalDependencies: Object.fromEntries([...platformPackages.values()].map((pkg) => [pkg.name, rootPkg.version]).sort()),
  }, null, 2)}\n`)
  pack(plugin)

  if (!pluginOnly) {
    const platform = platformArchABI()
    const platformPkg = platformPackages.get(platform)
    if (platformPkg == null) fail(`no npm/${platform}/ package: this machine's platform is not a target`)
    const binary = `${rootPkg.napi.binaryName}.${platform}.node`
    if (!existsSync(path.join(repo, binary))) fail(`${binary} is missing: run \`npm run build\` first`)
    if (platformPkg.version !== rootPkg.version) fail(`npm/${platform} is at ${platformPkg.version}, package.json at ${rootPkg.version}: run \`npm run version\``)
    const dir = path.join(stage, platform)
    cpSync(path.join(repo, 'npm', platform), dir, { recursive: true })
    copyFileSync(path.join(repo, binary), path.join(dir, binary))
    pack(dir)
  }
} finally {
  rmSync(stage, { recursive: true, force: true })
}
