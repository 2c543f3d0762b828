/**
 * Hostile and broken lockfiles (issue 22, items 2, 2b, 7, 8) against stock pnpm 11.28.11, with
 * the real CLI and the packed plugin as users get it (see native-install.spec.ts): a project
 * resolved by pnpm, then for each crafted lockfile a stock clone (plugin switched off) and a
 * plugin clone installed with `pnpm install --frozen-lockfile`. Where stock fails, the plugin's
 * install fails with the same code, its trace says why the native install and the head start
 * stepped aside, and `node_modules` is as stock leaves it (nothing of the plugin's in it). Where
 * stock installs, the plugin's tree is stock's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PLUGIN_NAME } from '../dist/plugin/config-dependency.js'
import { runPnpm, type PnpmRun } from './helpers/pnpm-cli.js'
import { packPlugin, serveTarballs, type ServedPackage, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'

const STOCK = { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_PRELINK: '0', CAS_NATIVE_PNPMFILE_FETCHER: '0' }

function pkg (name: string, version: string, manifest: Record<string, unknown> = {}): ServedPackage {
  const full = { name, version, ...manifest }
  return { name, version, manifest: full, tarball: tgz([{ name: 'package/package.json', content: JSON.stringify(full) }, { name: 'package/index.js', content: `module.exports = '${name}'\n` }]) }
}

/** The code of the error pnpm ended with (`[ERR_PNPM_…]` opening a line), if it failed with one; not a code the plugin's report names. */
const codeOf = (run: PnpmRun): string | undefined => /^\s*\[?(ERR_PNPM_[A-Z0-9_]+)/m.exec(run.stdout + run.stderr)?.[1]

/** `node_modules`' entries (paths, link targets) but the config dependencies'. */
function entries (dir: string): string[] {
  const out: string[] = []
  const walk = (rel: string): void => {
    let names: fs.Dirent[]
    try {
      names = fs.readdirSync(path.join(dir, rel), { withFileTypes: true })
    } catch {
      return
    }
    for (const e of names.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = `${rel}/${e.name}`
      if (r === 'node_modules/.pnpm-config' || /\.(modules\.yaml|pnpm-workspace-state-v1\.json)$/.test(r)) continue
      if (e.isSymbolicLink()) out.push(`${r} -> ${fs.readlinkSync(path.join(dir, r))}`)
      else if (e.isDirectory()) walk(r)
      else out.push(r)
    }
  }
  walk('node_modules')
  return out.map((l) => l.split(dir).join('<p>'))
}

describe('hostile lockfiles: the plugin refuses what stock refuses, in pnpm\'s words, writing nothing', () => {
  let base: string
  let registry: TarballRegistry
  let project: string
  let store: string
  let lockfile: string

  beforeAll(async () => {
    base = freshDir('hostile-lockfile')
    registry = await serveTarballs([...packPlugin(path.join(base, 'packed')), pkg('a', '1.0.0'), pkg('b', '1.0.0', { dependencies: { c: '1.0.0' } }), pkg('c', '1.0.0')])
    project = path.join(base, 'project')
    store = path.join(base, 'store')
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0', dependencies: { a: '1.0.0', b: '1.0.0' } }))
    fs.writeFileSync(path.join(project, 'pnpm-workspace.yaml'), 'minimumReleaseAge: 0\n')
    const opts = { projectDir: project, storeDir: store, sandbox: path.join(base, 'sandbox'), registry: registry.url }
    for (const command of [['add', '--config', PLUGIN_NAME], ['install']]) {
      const run = await runPnpm(command, opts)
      expect(run.code, run.stdout + run.stderr).toBe(0)
    }
    lockfile = fs.readFileSync(path.join(project, 'pnpm-lock.yaml'), 'utf8')
  }, 120_000)

  afterAll(async () => {
    await registry?.close()
  })

  /**
   * `lockfile` with `edit` applied to the project's own document only (the config dependencies'
   * document comes first, with importers and packages of its own).
   */
  const main = (edit: (doc: string) => string): string => {
    const at = lockfile.indexOf('\n---\n', 4) + 5
    return lockfile.slice(0, at) + edit(lockfile.slice(at))
  }

  const integrityOf = (name: string): string => new RegExp(`\\n  ${name}@1\\.0\\.0:\\n    resolution: \\{integrity: ([^}]+)\\}`).exec(lockfile)![1]

  /** Stock's and the plugin's install of `text`, each in a fresh clone, the same warm store and registry. */
  async function installBoth (label: string, text: string): Promise<{ stock: PnpmRun, plugin: PnpmRun, trace: string, stockDir: string, pluginDir: string }> {
    const clone = (name: string): string => {
      const dir = path.join(base, `${label}-${name}`)
      fs.mkdirSync(dir)
      for (const f of ['package.json', 'pnpm-workspace.yaml']) fs.copyFileSync(path.join(project, f), path.join(dir, f))
      fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), text)
      return dir
    }
    // No retries of a download that fails its integrity check (pnpm's backoff would take a minute).
    const command = ['install', '--frozen-lockfile', '--config.fetch-retries=0']
    const stockDir = clone('stock')
    const stock = await runPnpm(command, { projectDir: stockDir, storeDir: store, sandbox: path.join(base, `${label}-stock-sandbox`), registry: registry.url, env: STOCK })
    const pluginDir = clone('plugin')
    const traceFile = path.join(base, `${label}-trace.txt`)
    const plugin = await runPnpm(command, { projectDir: pluginDir, storeDir: store, sandbox: path.join(base, `${label}-plugin-sandbox`), registry: registry.url, env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile } })
    return { stock, plugin, trace: fs.existsSync(traceFile) ? fs.readFileSync(traceFile, 'utf8') : '', stockDir, pluginDir }
  }

  /** Renames package `a` to `name` in the importer, `packages` and `snapshots`. */
  const renamed = (name: string): string => main((doc) => doc
    .replace(/\n {6}a:\n {8}specifier: 1\.0\.0\n {8}version: 1\.0\.0\n/, `\n      a:\n        specifier: 1.0.0\n        version: '${name}@1.0.0'\n`)
    .replaceAll('\n  a@1.0.0:', `\n  '${name}@1.0.0':`))

  /** Each crafted lockfile, and why the native install steps aside (`null`: pnpm refuses before any hook). */
  const refused: Array<[string, () => string, RegExp | null]> = [
    ...['evil/sub', '.bin', 'node_modules', '../../escape'].map((name): [string, () => string, RegExp] =>
      [`a package named ${JSON.stringify(name)}`, () => renamed(name), /pnpm refuses to place \(ERR_PNPM_INVALID_DEPENDENCY_NAME\)/]),
    ['a wrong integrity in the packages entry, the right one in the snapshot', () => main((doc) => doc
      .replace(integrityOf('a'), `sha512-${Buffer.alloc(64, 1).toString('base64')}`)
      .replace('\n  a@1.0.0: {}', `\n  a@1.0.0:\n    resolution: {integrity: ${integrityOf('a')}}`)), /did not download/],
    ['a null importer (pnpm: broken)', () => main((doc) => doc.replace('\n  .:\n', '\n  .: null\n  x:\n')), /importers\["\."\] is not a mapping/],
    ['a key given twice (pnpm: broken)', () => `${lockfile}\nlockfileVersion: '9.0'\n`, /duplicated mapping key/],
    ['YAML nested 10,000 deep', () => `${lockfile}\ndeep: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`, /beyond the bounds of this reader/],
    // pnpm finds no lockfile and refuses before it runs any hook.
    ['an empty document first', () => `---\n---\n${lockfile}`, null],
  ]

  it.each(refused)('%s: stock fails, the plugin fails with the same code and wrote nothing', async (label, craft, why) => {
    const { stock, plugin, trace, stockDir, pluginDir } = await installBoth(label.replace(/\W+/g, '-'), craft())
    expect(stock.code, stock.stdout).not.toBe(0)
    expect(plugin.code, plugin.stdout).not.toBe(0)
    // (pnpm's refusal of a lockfile it finds none in comes without a code.)
    if (why != null) expect(codeOf(stock), stock.stdout).toMatch(/^ERR_PNPM_/)
    expect(codeOf(plugin), `${plugin.stdout}\n${trace}`).toBe(codeOf(stock))
    if (why == null) expect(trace).toBe('')
    else expect(trace).toMatch(new RegExp(`^native install skipped: .*${why.source}`, 'm'))
    expect(trace).not.toMatch(/^(native install failed|prelink failed)/m)
    // The head start steps aside too (but for a download that fails: pnpm's own install links what it has).
    if (!label.includes('integrity')) expect(trace).not.toMatch(/^prelinked /m)
    expect(entries(pluginDir)).toEqual(entries(stockDir))
  }, 120_000)

  it.each([
    ['a snapshot written with a merge key', () => main((doc) => doc.replace(/\n {2}b@1\.0\.0:\n {4}dependencies:\n {6}c: 1\.0\.0\n/, '\n  b@1.0.0:\n    <<: {dependencies: {c: 1.0.0}}\n')), /^native install: 3 packages/],
    ['dependencies in both the packages entry and the snapshot', () => main((doc) => doc.replace(/\n {2}b@1\.0\.0:\n {4}resolution: (\{[^}]+\})\n/, '\n  b@1.0.0:\n    resolution: $1\n    dependencies:\n      a: 1.0.0\n')), /^native install skipped: the lockfile has packages no importer reaches/],
    // js-yaml makes it an own key of packages, which no snapshot names: pnpm installs. This
    // reader refuses such keys: left to pnpm.
    ['a __proto__ package', () => main((doc) => doc.replace('\npackages:\n', `\npackages:\n\n  __proto__:\n    resolution: {integrity: ${integrityOf('a')}}\n`)), /^native install skipped: pnpm-lock\.yaml has YAML this does not read as pnpm does: a __proto__ key/],
    ['an alias bomb (10^6 values)', () => `${lockfile}\nbomb:\n${Array.from({ length: 6 }, (_, i) => `  l${i}: &l${i} [${Array(10).fill(i === 0 ? 'x' : `*l${i - 1}`).join(', ')}]\n`).join('')}`, /^native install skipped: pnpm-lock\.yaml is beyond the bounds of this reader/],
  ] as Array<[string, () => string, RegExp]>)('%s: read as stock reads it (same result, same tree)', async (label, craft, traced) => {
    const { stock, plugin, trace, stockDir, pluginDir } = await installBoth(label.replace(/\W+/g, '-'), craft())
    expect(plugin.code).toBe(stock.code)
    expect(codeOf(plugin)).toBe(codeOf(stock))
    expect(trace).toMatch(traced)
    expect(entries(pluginDir)).toEqual(entries(stockDir))
  }, 120_000)
})
