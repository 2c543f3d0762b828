#!/usr/bin/env node
/**
 * Warm-link benchmark: the whole alotta-modules lockfile (~1355 packages, see
 * `benchmark/lockfile.mjs`) linked into an empty `node_modules` from a warm store, with
 *
 *   cas  — `@cas/native`'s `linkPackages`: every package by its store-index key (the file maps
 *          are read from `index.db` natively and never cross into JS), one native batch on the
 *          link pool, then every dependency symlink; `packageImportMethod: 'auto'`;
 *   pnpm — `@pnpm/worker` 1100.x as pnpm 11 drives it: `importPackage` per package, at most 4 in
 *          flight (pnpm's limiter; its pool has `max(1, cores - 1)` workers), then one
 *          `symlinkAllModules` with every package's dependency links; `packageImportMethod:
 *          'auto'`. Its file maps are read from the index with `@pnpm/store.index` *before* the
 *          timed window (in pnpm that is `readPkgFromCafs`' job), so pnpm's figure leaves out
 *          work that cas's includes;
 *   cp   — `cp -al` of a node_modules tree cas linked in the warm-up: the floor (hard links,
 *          directories and symlinks of the same tree, no JS, no index).
 *
 * The store is filled once (untimed) with `@cas/native`'s `addFilesFromTarball` over the corpus
 * that `node benchmark/download.mjs` fetched. Every run links into a fresh project directory
 * (never one that was just deleted: create-after-delete penalty, /work/shared/BENCHMARKING.md
 * trap 1); nothing is deleted until all runs are done, then in the background, niced. `sync` and
 * a GC run before each run, outside the timed window. One untimed warm-up of each, then
 * `--rounds` rounds with the order rotating (cas pnpm cp, pnpm cp cas, cp cas pnpm, ...).
 *
 * Sanity checks (outside the timed windows; a failure exits non-zero and RESULTS.md is left
 * alone): the warm-up trees of cas and pnpm must be identical (relative paths, file modes and
 * sizes, symlink texts); with hard links every file of cas's tree shares its inode with a blob
 * of the store; every timed run must end with the expected file and symlink counts.
 *
 * Usage: node benchmark/link.mjs [--rounds N] [--only cas|pnpm|cp] [--no-write] [--keep] [--no-sync]
 * Writes/replaces the link section of benchmark/RESULTS.md when all three ran.
 * CAS_NATIVE_LINK_THREADS sets @cas/native's link pool size (default 2x cores).
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { benchmarkDir, cores, deleteInBackground, fmt, loadCorpus, loadLine, machineLine, median, printReport, stats, writeResultsSection } from './corpus.mjs'
import { layout, readLockfile } from './lockfile.mjs'

const { values: opts } = parseArgs({
  allowNegative: true,
  options: {
    rounds: { type: 'string', default: '5' },
    only: { type: 'string' },
    write: { type: 'boolean', default: true },
    keep: { type: 'boolean', default: false },
    sync: { type: 'boolean', default: true },
  },
})
const rounds = Number.parseInt(opts.rounds, 10)
if (!(rounds >= 1)) throw new Error(`--rounds must be a positive integer, got ${opts.rounds}`)
const all = ['cas', 'pnpm', 'cp']
if (opts.only != null && !all.includes(opts.only)) throw new Error(`--only must be one of ${all.join(', ')}`)
const active = opts.only != null ? (opts.only === 'cp' ? ['cas', 'cp'] : [opts.only]) : all
const timedNames = opts.only != null ? [opts.only] : all

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')

const log = (...a) => console.error(...a)

// --- work dir, store ---------------------------------------------------------------------
const workRoot = join(benchmarkDir, '.work')
mkdirSync(workRoot, { recursive: true })
const runDir = join(workRoot, `link-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`)
mkdirSync(runDir)
let seq = 0
const newProjectDir = (label) => {
  const dir = join(runDir, `${String(++seq).padStart(3, '0')}-${label}`)
  mkdirSync(dir)
  return dir
}
const storeDir = join(runDir, 'store', 'v11')

const distPath = join(benchmarkDir, '../dist/api/index.js')
if (!existsSync(distPath)) throw new Error(`${distPath} is missing: build @cas/native first (npm run build)`)
const cas = await import('../dist/api/index.js')

log('filling a warm store (untimed) ...')
const corpus = loadCorpus()
await cas.initStoreDir(storeDir)
await Promise.all(corpus.map((t) => cas.addFilesFromTarball({ buffer: t.buffer, storeDir, filesIndexFile: t.key, integrity: t.integrity, url: t.url })))
cas.closeStores()
corpus.length = 0

const lockfile = readLockfile(join(benchmarkDir, 'fixtures/alotta-modules/pnpm-lock.yaml'))
const projectName = JSON.parse(readFileSync(join(benchmarkDir, 'fixtures/alotta-modules/package.json'), 'utf8')).name
const plan = (projectDir) => layout(lockfile, projectDir, { projectName })
const sample = plan('/p')
const expectedSymlinks = sample.symlinks.reduce((n, s) => n + Object.keys(s.children).filter((a) => a !== s.name).length, 0)
log(`${sample.packages.length} packages, ${fmt(expectedSymlinks)} dependency symlinks`)

// --- the contestants ---------------------------------------------------------------------
async function timed (fn) {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const extra = await fn()
  const wallMs = performance.now() - t0
  const c = process.cpuUsage(c0)
  return { wallMs, cpuMs: (c.user + c.system) / 1000, userMs: c.user / 1000, sysMs: c.system / 1000, ...extra }
}

const impls = {}
const threads = process.env.CAS_NATIVE_LINK_THREADS
impls.cas = {
  label: `cas: @cas/native ${pkgVersion('..')} linkPackages, link pool ${threads ?? `2 x ${cores} cores`} threads`,
  async run (projectDir) {
    const { packages, symlinks } = plan(projectDir)
    let result
    const r = await timed(async () => {
      result = await cas.linkPackages({ storeDir, packageImportMethod: 'auto', packages, symlinks })
    })
    r.counts = result.counts
    r.phases = { importMs: result.importMs, symlinkMs: result.symlinkMs }
    return r
  },
}

if (active.includes('pnpm')) {
  const pnpmWorker = await import('@pnpm/worker')
  const { StoreIndex } = await import('@pnpm/store.index')
  const index = new StoreIndex(storeDir)
  const filesMaps = new Map()
  for (const p of sample.packages) {
    const row = index.get(p.filesIndexFile)
    const map = new Map()
    for (const [rel, f] of row.files) {
      map.set(rel, `${storeDir}/files/${f.digest.slice(0, 2)}/${f.digest.slice(2)}${(f.mode & 0o111) !== 0 ? '-exec' : ''}`)
    }
    filesMaps.set(p.filesIndexFile, map)
  }
  index.close()
  impls.pnpm = {
    label: `pnpm: @pnpm/worker ${pkgVersion('@pnpm/worker')} importPackage (4 in flight, ${pnpmWorker.calcMaxWorkers()} worker(s)) + symlinkAllModules`,
    async run (projectDir) {
      const { packages, symlinks } = plan(projectDir)
      return timed(async () => {
        let next = 0
        const worker = async () => {
          while (next < packages.length) {
            const p = packages[next++]
            await pnpmWorker.importPackage({
              storeDir,
              packageImportMethod: 'auto',
              filesResponse: { resolvedFrom: 'store', filesMap: filesMaps.get(p.filesIndexFile), requiresBuild: false },
              targetDir: p.targetDir,
              force: false,
              requiresBuild: false,
            })
          }
        }
        await Promise.all([worker(), worker(), worker(), worker()])
        await pnpmWorker.symlinkAllModules({ deps: symlinks })
      })
    },
    finish: () => pnpmWorker.finishWorkers(),
  }
}

let referenceTree
impls.cp = { label: '`cp -al` of the same node_modules (GNU coreutils; the floor)' }
// bash's `time` reports the child's CPU time, which process.cpuUsage() does not see.
impls.cp.run = async (projectDir) => {
  const t0 = performance.now()
  const stderr = await new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', 'TIMEFORMAT="%U %S"; time cp -al "$0" "$1"', join(referenceTree, 'node_modules'), join(projectDir, 'node_modules')], { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d) => { err += d })
    child.on('exit', (code) => (code === 0 ? resolve(err) : reject(new Error(`cp -al exited ${code}: ${err}`))))
  })
  const wallMs = performance.now() - t0
  const [user, sys] = stderr.trim().split(/\s+/).slice(-2).map((x) => Number.parseFloat(x) * 1000)
  return { wallMs, cpuMs: user + sys, userMs: user, sysMs: sys }
}

function pkgVersion (spec) {
  const path = spec === '..' ? join(benchmarkDir, '../package.json') : join(benchmarkDir, '../node_modules', spec, 'package.json')
  return JSON.parse(readFileSync(path, 'utf8')).version
}

// --- tree inspection (outside the timed windows) -------------------------------------------
/** Every entry under `dir`: relative path → `D`, `L <text>`, or `F <mode> <size>` (+ inode). */
function snapshotTree (dir) {
  const out = new Map()
  const inodes = new Map()
  const walk = (rel) => {
    for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`
      const abs = join(dir, r)
      if (e.isSymbolicLink()) out.set(r, `L ${readlinkSync(abs)}`)
      else if (e.isDirectory()) { out.set(r, 'D'); walk(r) } else {
        const st = lstatSync(abs)
        out.set(r, `F ${(st.mode & 0o777).toString(8)} ${st.size}`)
        inodes.set(r, st.ino)
      }
    }
  }
  walk('')
  return { entries: out, inodes }
}

function countTree (dir) {
  let files = 0
  let links = 0
  let dirs = 0
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isSymbolicLink()) links++
      else if (e.isDirectory()) { dirs++; walk(join(d, e.name)) } else files++
    }
  }
  walk(dir)
  return { files, links, dirs }
}

function storeInodes () {
  const inodes = new Set()
  const filesDir = join(storeDir, 'files')
  for (const shard of readdirSync(filesDir)) {
    for (const name of readdirSync(join(filesDir, shard))) inodes.add(statSync(join(filesDir, shard, name)).ino)
  }
  return inodes
}

// --- runs --------------------------------------------------------------------------------
const failures = []
let expected

async function runOnce (name, tag) {
  if (opts.sync) execFileSync('sync')
  gc()
  const projectDir = newProjectDir(`${name}-${tag}`)
  const r = await impls[name].run(projectDir)
  const counts = countTree(join(projectDir, 'node_modules'))
  expected ??= counts
  if (counts.files !== expected.files || counts.links !== expected.links) {
    failures.push(`${name} ${tag}: ${counts.files} files, ${counts.links} symlinks; expected ${expected.files}, ${expected.links}`)
  }
  // Not only alike across runs: every dependency link of the lockfile is there.
  if (counts.links !== expectedSymlinks) failures.push(`${name} ${tag}: ${counts.links} symlinks; the lockfile has ${expectedSymlinks}`)
  r.tree = counts
  r.projectDir = projectDir
  log(`  ${name.padEnd(4)} ${tag.padEnd(7)} wall ${fmt(r.wallMs)} ms, cpu ${fmt(r.cpuMs)} ms (user ${fmt(r.userMs)}, sys ${fmt(r.sysMs)}), ` +
    `${fmt(counts.files)} files, ${fmt(counts.dirs)} dirs, ${fmt(counts.links)} symlinks` +
    (r.counts ? ` [native: ${fmt(r.counts.filesLinked)} linked, ${fmt(r.counts.filesCopied)} copied, ${fmt(r.counts.dirsMade)} dirs, ${fmt(r.counts.symlinks)} symlinks; import ${fmt(r.phases.importMs)} ms + symlinks ${fmt(r.phases.symlinkMs)} ms]` : ''))
  return r
}

log(active.map((n) => impls[n].label).join('\n'))
log(`work dir ${relative(process.cwd(), runDir)}`)
log('warm-up (untimed):')
const warm = {}
for (const name of active) {
  warm[name] = await runOnce(name, 'warmup')
  if (name === 'cas') referenceTree = warm.cas.projectDir
}
if (warm.cas != null) {
  const ours = snapshotTree(join(warm.cas.projectDir, 'node_modules'))
  const blobs = storeInodes()
  const notShared = [...ours.inodes.values()].filter((ino) => !blobs.has(ino)).length
  if (notShared !== 0) failures.push(`warm-up: ${notShared} files of cas's tree are not hard links of store blobs`)
  if (warm.pnpm != null) {
    const theirs = snapshotTree(join(warm.pnpm.projectDir, 'node_modules'))
    const differ = [...theirs.entries].filter(([k, v]) => ours.entries.get(k) !== v).map(([k]) => k)
    const extra = [...ours.entries.keys()].filter((k) => !theirs.entries.has(k))
    log(`  trees: ${fmt(ours.entries.size)} entries (cas) vs ${fmt(theirs.entries.size)} (pnpm); ${differ.length} differ, ${extra.length} only in cas's; ` +
      `${fmt(ours.inodes.size)} files, all hard links of store blobs: ${notShared === 0}`)
    if (differ.length + extra.length !== 0) failures.push(`warm-up: the trees differ (e.g. ${differ[0] ?? extra[0]})`)
  }
}

const results = Object.fromEntries(timedNames.map((n) => [n, []]))
for (let i = 0; i < rounds; i++) {
  const order = timedNames.map((_, k) => timedNames[(k + i) % timedNames.length])
  log(`round ${i + 1}/${rounds}: ${order.join(' ')}`)
  for (const name of order) results[name].push(await runOnce(name, `r${i + 1}`))
}
await impls.pnpm?.finish?.()

// --- report ------------------------------------------------------------------------------
const machine = machineLine()
const load = loadLine()
const summary = Object.fromEntries(timedNames.map((name) => {
  const rs = results[name]
  return [name, { wall: stats(rs.map((r) => r.wallMs)), cpu: stats(rs.map((r) => r.cpuMs)), user: median(rs.map((r) => r.userMs)), sys: median(rs.map((r) => r.sysMs)) }]
}))
const range = (st) => `${fmt(st.median)} (${fmt(st.min)}–${fmt(st.max)})`
const mdTable = (rs) => [
  `| ${rs[0].join(' | ')} |`,
  `|${rs[0].map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
  ...rs.slice(1).map((r) => `| ${r.join(' | ')} |`),
].join('\n')
const tree = expected
const lines = []
const out = (s = '') => lines.push(s)
out(`Tree: ${sample.packages.length} packages of benchmark/fixtures/alotta-modules/pnpm-lock.yaml → ${fmt(tree.files)} files (hard links), ` +
  `${fmt(tree.dirs)} directories, ${fmt(tree.links)} symlinks (pnpm 11's isolated layout with hoisting into .pnpm/node_modules; no .bin links).`)
out()
out(`${rounds} interleaved rounds (order rotating), fresh project dir per run, warm store, on ${cores} cores:`)
out()
out(mdTable([
  ['', 'wall ms, median (min–max)', 'CPU ms, median (min–max)', 'user / sys ms', 'CPU/wall'],
  ...timedNames.map((n) => [impls[n].label, range(summary[n].wall), range(summary[n].cpu), `${fmt(summary[n].user)} / ${fmt(summary[n].sys)}`, fmt(summary[n].cpu.median / summary[n].wall.median, 2)]),
]))
const paired = (a, b) => median(results[a].map((r, i) => r.wallMs / results[b][i].wallMs))
if (summary.cas && summary.pnpm) {
  const x = summary.pnpm.wall.median / summary.cas.wall.median
  out()
  out(`**cas vs pnpm's worker (pnpm median wall / cas median wall, ${cores} cores): ${fmt(x, 2)}x** ` +
    `(target ≥ 3x: ${x >= 3 ? 'met' : 'NOT met'}; median of the per-round ratios ${fmt(paired('pnpm', 'cas'), 2)}x). ` +
    `CPU time pnpm / cas: ${fmt(summary.pnpm.cpu.median / summary.cas.cpu.median, 2)}x.`)
}
if (summary.cas && summary.cp) {
  const x = summary.cas.wall.median / summary.cp.wall.median
  out()
  out(`**cas vs the \`cp -al\` floor (cas median wall / cp median wall, ${cores} cores): ${fmt(x, 2)}x** ` +
    `(target ≤ 1.5x: ${x <= 1.5 ? 'met' : 'NOT met'}; median of the per-round ratios ${fmt(paired('cas', 'cp'), 2)}x).`)
}
if (summary.cas) {
  const ph = (k) => median(results.cas.map((r) => r.phases[k]))
  out()
  out(`@cas/native phases (medians, native wall time, ${cores} cores): import ${fmt(ph('importMs'))} ms (index reads + ${fmt(results.cas[0].counts.filesLinked)} links + ` +
    `${fmt(results.cas[0].counts.dirsMade)} mkdirs), symlinks ${fmt(ph('symlinkMs'))} ms (${fmt(results.cas[0].counts.symlinks)}).`)
}
out()
out(`Load average at the end: ${load} (the machine is shared with other sessions' builds: absolute times are noisy, the side-by-side ratios less so).`)
const report = printReport(machine, lines, failures)

if (opts.write && opts.only == null && failures.length === 0) {
  const resultsPath = writeResultsSection('link.mjs', [
    '## Warm link of a whole node_modules: pnpm 11 vs @cas/native vs `cp -al`',
    '',
    `- Date: ${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    `- Machine: **${machine}**; shared and noisy: compare the side-by-side ratios, not absolute times`,
    `- Command: \`node benchmark/link.mjs --rounds ${rounds}\`${threads ? ` with CAS_NATIVE_LINK_THREADS=${threads}` : ''} (\`npm run bench:link\`)`,
    '- Timed window: from the call to the last symlink, into an empty project dir; the store is warm (filled once with ' +
      '`addFilesFromTarball`). pnpm\'s file maps are read from the index before its window; cas reads them inside its own.',
    '',
    report,
  ])
  log(`\nwrote ${relative(process.cwd(), resultsPath)}`)
} else if (opts.write) {
  log(`\nRESULTS.md not written (${failures.length ? 'sanity checks failed' : '--only'})`)
}

// --- clean up: after all timed runs, in the background, niced ------------------------------
if (opts.keep) {
  log(`kept ${relative(process.cwd(), runDir)}`)
} else {
  deleteInBackground(runDir)
  log(`deleting ${relative(process.cwd(), runDir)} in the background`)
}
if (failures.length > 0) process.exitCode = 1
