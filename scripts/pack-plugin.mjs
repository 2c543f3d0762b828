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
// regular dependencies, so everything else the plugin runs is copied into it: the modules
// dist/pnpm-plugin.js requires, found by following their relative requires.
import { execFileSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
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
const { PLATFORM_PACKAGE_PREFIX, platformArchABI } = createRequire(import.meta.url)(path.join(repo, 'dist', 'native-platform.js'))

function fail (message) {
  console.error(`pack-plugin: ${message}`)
  process.exit(1)
}

const pluginVersion = readJson(path.join(repo, 'npm', 'pnpm-plugin-native', 'package.json')).version
if (pluginVersion !== rootPkg.version) fail(`npm/pnpm-plugin-native is at ${pluginVersion}, package.json at ${rootPkg.version}: run \`npm run version\``)

/** `dist/<entry>` and every module it reaches through relative requires (paths relative to the repo). */
function moduleClosure (entry) {
  const seen = new Set()
  const visit = (rel) => {
    if (seen.has(rel)) return
    const file = path.join(repo, rel)
    if (!existsSync(file)) fail(`${rel} is missing: run \`npm run build\` first`)
    seen.add(rel)
    // The napi loader (index.js) is copied as it is: its relative requires are binaries next to
    // it, which the plugin does not ship; it falls back to the platform package.
    if (!rel.startsWith('dist')) return
    const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
    for (const [, spec] of code.matchAll(/require\(["']([^"']+)["']\)/g)) {
      if (spec.startsWith('.')) {
        const target = path.relative(repo, path.resolve(path.dirname(file), spec))
        if (target !== 'package.json') visit(target)
      } else if (!builtinModules.includes(spec.replace(/^node:/, '')) && !spec.startsWith(PLATFORM_PACKAGE_PREFIX)) {
        fail(`${rel} requires ${spec}, which a config dependency cannot depend on`)
      }
    }
  }
  visit(path.join('dist', entry))
  return [...seen].sort()
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
  for (const rel of [...moduleClosure('pnpm-plugin.js'), 'docs/native-install.md', 'docs/store-format.md']) {
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
