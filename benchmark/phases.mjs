#!/usr/bin/env node
/**
 * Where a small install's time goes, with and without the config-dependency plugin: in a run
 * directory `e2e.mjs --keep` left (its store, its projects' manifests and lockfiles, its private
 * homes), interleaved rounds of
 * - stock pnpm 11 and pnpm 11 with the plugin, each into a fresh project (as `e2e.mjs` times them);
 * - each again in a project it has just installed (a no-op: "Already up to date");
 * - `pnpm --version` (pnpm 11's start-up alone);
 * each timed from spawn to exit, with marks from inside pnpm's process (phases-preload.cjs):
 * when it requires the plugin's pnpmfile, when `updateConfig` (the native install) starts and
 * ends, when the process begins to exit. The plugin's no-op is what a native install that took
 * no time would cost, so stock's fresh install over it is the best ratio the plugin could reach
 * on this project with pnpm 11's start-up and its handling of a config dependency as they are.
 *
 * Usage: node benchmark/phases.mjs <run dir kept by e2e.mjs> [--rounds N]
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { fmt, loadLine, machineLine, median, sandboxEnv } from './corpus.mjs'

const { values: opts, positionals: [runDirArg] } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '15' } } })
if (runDirArg == null) throw new Error('usage: node benchmark/phases.mjs <run dir kept by e2e.mjs> [--rounds N]')
const runDir = resolve(runDirArg)
const repoDir = join(import.meta.dirname, '..')
const node24 = join(repoDir, 'node_modules', 'node', 'bin', 'node')
const pnpm = join(repoDir, 'node_modules', 'pnpm', 'bin', 'pnpm.mjs')
const phasesFile = join(runDir, 'phases.jsonl')
const workDir = join(runDir, 'phases')
rmSync(workDir, { recursive: true, force: true })

/** The first project e2e.mjs made for a variant: its manifest, lockfile and workspace file are copied. */
const projectOf = (variant) => join(runDir, 'projects', readdirSync(join(runDir, 'projects')).find((d) => d.replace(/-\d+$/, '') === variant))
const VARIANTS = {
  stock: { label: 'stock, fresh', from: 'pnpm11' },
  plugin: { label: 'plugin, fresh', from: 'pnpm11-config' },
  'plugin-noop': { label: 'plugin, no-op', from: 'pnpm11-config', noop: true },
  'stock-noop': { label: 'stock, no-op', from: 'pnpm11', noop: true },
  version: { label: '`pnpm --version`', from: 'pnpm11', version: true },
}
const installArgs = [pnpm, 'install', '--frozen-lockfile', '--offline', `--store-dir=${join(runDir, 'store')}`, '--config.ignore-scripts=true',
  '--config.update-notifier=false', '--config.registry=http://127.0.0.1:9/', '--reporter=append-only']

let counter = 0
function run (name) {
  const variant = VARIANTS[name]
  const dir = join(workDir, `${name}-${counter++}`)
  mkdirSync(dir, { recursive: true })
  for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) copyFileSync(join(projectOf(variant.from), f), join(dir, f))
  const env = { ...sandboxEnv(join(runDir, 'home', variant.from), join(repoDir, 'node_modules', 'node', 'bin')), NODE_OPTIONS: `--require ${join(import.meta.dirname, 'phases-preload.cjs')}`, PHASES_FILE: phasesFile }
  const args = variant.version ? [pnpm, '--version'] : installArgs
  const spawn = () => {
    const child = spawnSync(node24, args, { cwd: variant.version ? runDir : dir, env, encoding: 'utf8' })
    if (child.status !== 0) throw new Error(`${name} failed: ${child.stdout}${child.stderr}`)
  }
  if (variant.noop) spawn()
  execFileSync('sync')
  rmSync(phasesFile, { force: true })
  const start = process.hrtime.bigint()
  spawn()
  const wall = Number(process.hrtime.bigint() - start) / 1e6
  return { ...JSON.parse(readFileSync(phasesFile, 'utf8').trim().split('\n').pop()), wall }
}

const names = Object.keys(VARIANTS)
const rounds = Number(opts.rounds)
const load = loadLine(' / ')
const results = Object.fromEntries(names.map((n) => [n, []]))
for (let r = 0; r < rounds; r++) {
  for (const name of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) results[name].push(run(name))
  process.stderr.write(`round ${r + 1}/${rounds}\n`)
}

const med = (runs, f) => {
  const values = runs.map(f).filter((v) => Number.isFinite(v))
  return values.length > 0 ? fmt(median(values), 1) : ''
}
console.log(`${machineLine()}\n`)
console.log(`${rounds} rounds, interleaved; medians, ms from the process's start (marks inside pnpm):\n`)
console.log('| | pnpmfile required | its load | `updateConfig` | after it, to exit | exit | wall |')
console.log('|---|---:|---:|---:|---:|---:|---:|')
for (const name of names) {
  const runs = results[name]
  console.log(`| ${VARIANTS[name].label} | ${med(runs, (m) => m.pnpmfile)} | ${med(runs, (m) => m.loaded - m.pnpmfile)} | ${med(runs, (m) => m.updated - m.updateConfig)} | ${med(runs, (m) => m.exit - (m.updated ?? NaN))} | ${med(runs, (m) => m.exit)} | ${med(runs, (m) => m.wall)} |`)
}
const ratio = (a, b) => (median(results[a].map((m) => m.wall)) / median(results[b].map((m) => m.wall))).toFixed(2)
console.log(`\nstock fresh / plugin fresh: ${ratio('stock', 'plugin')}x; stock fresh / plugin no-op (an instant native install): ${ratio('stock', 'plugin-noop')}x`)
console.log(`Load average (1/5/15 min) before: ${load}; after: ${loadLine(' / ')}`)
rmSync(workDir, { recursive: true, force: true })
