#!/usr/bin/env node
/**
 * End-to-end extraction benchmark: the whole alotta-modules corpus (~1355 npm tarballs, see
 * `benchmark/download.mjs`) into a brand-new pnpm 11 store, with
 *
 *   pnpm — pnpm's own `@pnpm/worker` (its default worker pool: `max(1, cores - 1)` workers),
 *          every tarball submitted at once with Promise.all as pnpm does during an install,
 *          index rows queued to a main-thread `StoreIndex` and committed by `flush()`/`close()`
 *          inside the timed window;
 *   cas  — `@cas/native` (`dist/api/index.js`), which writes its own index rows before resolving.
 *
 * Each timed window covers `initStoreDir` + all extractions + committing/closing the index.
 * All tarballs are read into memory first. One untimed warm-up of each, then `--rounds`
 * interleaved rounds (A B, B A, A B, ...: the order alternates), each into a fresh store
 * directory under `benchmark/.work/`. Nothing is deleted before or between timed runs
 * (create-after-delete penalty, see /work/shared/BENCHMARKING.md); all stores are deleted at
 * the end by a niced background `rm -rf` (or kept with `--keep`). Wall time and process CPU
 * time (`process.cpuUsage()`: all threads, so pnpm's worker threads and the addon's native
 * threads too) are measured; `sync` runs before each run, outside the timed window, so that no
 * run pays for the previous run's writeback.
 *
 * The end-to-end section is a hand-written interleaved loop, not tinybench: tinybench runs a
 * task's iterations back to back and the tasks one after another, so on this shared, noisy
 * machine a slow minute would land on one implementation only. tinybench is used for the
 * micro-benchmark section (one large package, a fresh store per iteration via `beforeEach`).
 *
 * Sanity checks (outside the timed windows; a failure exits non-zero and RESULTS.md is left
 * alone): every run must end with the same number of blobs under `files/` and one index row
 * per tarball; in the warm-up both stores must hold the same blob names and the same index rows
 * (byte-identical but for the per-file `checkedAt` write timestamps).
 *
 * Usage: node benchmark/extract.mjs [--rounds N] [--only cas|pnpm] [--no-micro]
 *          [--micro-iterations N] [--no-write] [--keep] [--no-sync] [--limit N]
 * Writes/replaces the extract section of benchmark/RESULTS.md when both implementations ran.
 * Node >= 22.13 (pnpm 11's store packages need node:sqlite); run with Node 24.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { parseArgs } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { benchmarkDir, compareIndexRows, cores, deleteInBackground, fmt, listBlobs, loadCorpus, loadLine, machineLine, measureCorpus, median, printReport, readIndexRows, stats, writeResultsSection } from './corpus.mjs'

const { values: opts } = parseArgs({
  allowNegative: true,
  options: {
    rounds: { type: 'string', default: '5' },
    only: { type: 'string' },
    micro: { type: 'boolean', default: true },
    'micro-iterations': { type: 'string', default: '10' },
    write: { type: 'boolean', default: true },
    keep: { type: 'boolean', default: false },
    sync: { type: 'boolean', default: true },
    limit: { type: 'string' }, // only the first N tarballs (quick checks; RESULTS.md is not written)
  },
})
const rounds = Number.parseInt(opts.rounds, 10)
if (!(rounds >= 1)) throw new Error(`--rounds must be a positive integer, got ${opts.rounds}`)
const microIterations = Number.parseInt(opts['micro-iterations'], 10)
if (!(microIterations >= 1)) throw new Error('--micro-iterations must be a positive integer')
if (opts.only != null && opts.only !== 'cas' && opts.only !== 'pnpm') {
  throw new Error(`--only must be cas or pnpm, got ${opts.only}`)
}
const active = opts.only != null ? [opts.only] : ['pnpm', 'cas']
const both = active.length === 2

// A full GC between runs (outside the timed window), so one run's garbage is not collected
// during the next.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')

const MB = 1e6
const log = (...a) => console.error(...a) // progress on stderr, the report on stdout

// --- the work directory: a fresh one per invocation, a fresh store per run ----------------
const workRoot = join(benchmarkDir, '.work')
mkdirSync(workRoot, { recursive: true })
const leftovers = readdirSync(workRoot).filter((n) => n.startsWith('extract-'))
if (leftovers.length > 0) {
  log(`note: ${leftovers.length} earlier benchmark dir(s) in ${relative(process.cwd(), workRoot)} ` +
    '(maybe still being deleted in the background): deleting many files in the last few minutes ' +
    'slows file creation on this ext4 (create-after-delete penalty); results may be pessimistic.')
}
const runDir = join(workRoot, `extract-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}`)
mkdirSync(runDir)
let storeSeq = 0
const newStoreDir = (label) => join(runDir, `${String(++storeSeq).padStart(3, '0')}-${label}`, 'v11')

// --- the corpus, in memory -----------------------------------------------------------------
log('loading the corpus ...')
const corpus = opts.limit != null ? loadCorpus().slice(0, Number.parseInt(opts.limit, 10)) : loadCorpus()
const size = measureCorpus(corpus)
log(`${size.tarballs} tarballs, ${fmt(size.compressedBytes / MB, 1)} MB compressed, ` +
  `${fmt(size.tarBytes / MB, 1)} MB as tar, ${fmt(size.files)} files (${fmt(size.fileBytes / MB, 1)} MB)`)

// --- the implementations -------------------------------------------------------------------
const impls = {}

async function timed (fn) {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const extra = await fn()
  const wallMs = performance.now() - t0
  const c = process.cpuUsage(c0)
  return { wallMs, userMs: c.user / 1000, sysMs: c.system / 1000, cpuMs: (c.user + c.system) / 1000, ...extra }
}

if (active.includes('pnpm')) {
  const pnpmWorker = await import('@pnpm/worker')
  const { StoreIndex } = await import('@pnpm/store.index')
  impls.pnpm = {
    label: `pnpm: @pnpm/worker ${pkgVersion('@pnpm/worker')}, ${pnpmWorker.calcMaxWorkers()} worker(s)`,
    async run (storeDir) {
      let results
      const r = await timed(async () => {
        await pnpmWorker.initStoreDir(storeDir)
        const storeIndex = new StoreIndex(storeDir)
        results = await Promise.all(corpus.map((t) => pnpmWorker.addFilesFromTarball({
          buffer: t.buffer,
          storeDir,
          filesIndexFile: t.key,
          integrity: t.integrity,
          storeIndex,
          url: t.url,
        })))
        storeIndex.flush()
        storeIndex.close()
      })
      r.packageFiles = results.reduce((n, x) => n + x.filesMap.size, 0)
      return r
    },
    async micro (t) {
      let storeDir
      let storeIndex
      return {
        fn: async () => {
          await pnpmWorker.addFilesFromTarball({ buffer: t.buffer, storeDir, filesIndexFile: t.key, integrity: t.integrity, storeIndex, url: t.url })
          storeIndex.flush()
        },
        beforeEach: async () => {
          storeDir = newStoreDir(`micro-pnpm-${t.name.replace('/', '+')}`)
          await pnpmWorker.initStoreDir(storeDir)
          storeIndex = new StoreIndex(storeDir)
        },
        afterEach: () => storeIndex.close(),
      }
    },
    finish: () => pnpmWorker.finishWorkers(),
  }
}

if (active.includes('cas')) {
  const distPath = join(benchmarkDir, '../dist/api/index.js')
  if (!existsSync(distPath)) throw new Error(`${distPath} is missing: build @cas/native first (npm run build)`)
  const cas = await import('../dist/api/index.js')
  const threads = process.env.CAS_NATIVE_EXTRACT_THREADS
  impls.cas = {
    label: `cas: @cas/native ${pkgVersion('..')}${threads ? `, CAS_NATIVE_EXTRACT_THREADS=${threads}` : ''}`,
    async run (storeDir) {
      let results
      const r = await timed(async () => {
        await cas.initStoreDir(storeDir)
        results = await Promise.all(corpus.map((t) => cas.addFilesFromTarball({
          buffer: t.buffer,
          storeDir,
          filesIndexFile: t.key,
          integrity: t.integrity,
          url: t.url,
        })))
        cas.closeStores()
      })
      r.packageFiles = results.reduce((n, x) => n + x.filesMap.size, 0)
      r.phases = { queuedMs: 0, inflateMs: 0, hashWriteMs: 0, indexMs: 0 }
      for (const { timings } of results) for (const k in r.phases) r.phases[k] += timings?.[k] ?? 0
      return r
    },
    async micro (t) {
      let storeDir
      return {
        fn: async () => {
          await cas.addFilesFromTarball({ buffer: t.buffer, storeDir, filesIndexFile: t.key, integrity: t.integrity, url: t.url })
        },
        beforeEach: async () => {
          storeDir = newStoreDir(`micro-cas-${t.name.replace('/', '+')}`)
          await cas.initStoreDir(storeDir)
        },
        afterEach: () => cas.closeStores(),
      }
    },
    finish: () => cas.closeStores(),
  }
}

function pkgVersion (spec) {
  const path = spec === '..' ? join(benchmarkDir, '../package.json') : join(benchmarkDir, '../node_modules', spec, 'package.json')
  return JSON.parse(readFileSync(path, 'utf8')).version
}

// --- runs + sanity checks ------------------------------------------------------------------
const failures = []
let expectedBlobs

async function runOnce (name, tag) {
  if (opts.sync) execFileSync('sync')
  gc()
  const storeDir = newStoreDir(`${name}-${tag}`)
  const r = await impls[name].run(storeDir)
  // Outside the timed window: what did the run leave behind?
  const blobs = listBlobs(storeDir, { withNames: tag === 'warmup' })
  const rows = await readIndexRows(storeDir)
  r.blobs = blobs.count
  r.storeDir = storeDir
  expectedBlobs ??= blobs.count
  if (blobs.count !== expectedBlobs) failures.push(`${name} ${tag}: ${blobs.count} blobs, expected ${expectedBlobs}`)
  if (blobs.stray !== 0) failures.push(`${name} ${tag}: ${blobs.stray} non-blob entries under files/`)
  const missing = corpus.filter((t) => !rows.has(t.key)).length
  if (rows.size !== corpus.length || missing !== 0) {
    failures.push(`${name} ${tag}: ${rows.size} index rows (${missing} of ${corpus.length} keys missing)`)
  }
  log(`  ${name.padEnd(4)} ${tag.padEnd(7)} wall ${fmt(r.wallMs)} ms, cpu ${fmt(r.cpuMs)} ms ` +
    `(user ${fmt(r.userMs)}, sys ${fmt(r.sysMs)}), ${fmt(blobs.count)} blobs, ${rows.size} rows`)
  return { r, blobs, rows }
}

log(active.map((n) => impls[n].label).join(' vs '))
log(`work dir ${relative(process.cwd(), runDir)}`)
log('warm-up (untimed):')
const warm = {}
for (const name of active) warm[name] = await runOnce(name, 'warmup')
if (both) {
  const a = warm.pnpm
  const b = warm.cas
  if (a.blobs.names.join('\n') !== b.blobs.names.join('\n')) {
    const sa = new Set(a.blobs.names)
    const sb = new Set(b.blobs.names)
    failures.push(`warm-up: blob names differ (${a.blobs.names.filter((x) => !sb.has(x)).length} only in pnpm's store, ` +
      `${b.blobs.names.filter((x) => !sa.has(x)).length} only in cas's)`)
  }
  const cmp = await compareIndexRows(a.rows, b.rows)
  log(`  index rows: ${cmp.byteIdentical} byte-identical, ${cmp.sameButCheckedAt} identical but for checkedAt, ` +
    `${cmp.different.length} different, ${cmp.missing.length} missing in cas's store`)
  if (cmp.different.length + cmp.missing.length !== 0) {
    failures.push(`warm-up: ${cmp.different.length} of ${cmp.rows} index rows differ beyond checkedAt ` +
      `(e.g. ${JSON.stringify(cmp.different[0] ?? cmp.missing[0])}), ${cmp.missing.length} missing`)
  }
  if (a.r.packageFiles !== b.r.packageFiles) failures.push(`warm-up: filesMap sizes sum to ${a.r.packageFiles} (pnpm) vs ${b.r.packageFiles} (cas)`)
}
delete warm.pnpm?.blobs.names
delete warm.cas?.blobs.names

const results = Object.fromEntries(active.map((n) => [n, []]))
for (let i = 0; i < rounds; i++) {
  const order = i % 2 === 0 ? active : [...active].reverse()
  log(`round ${i + 1}/${rounds}:`)
  for (const name of order) results[name].push((await runOnce(name, `r${i + 1}`)).r)
}

// --- micro-benchmark: one large package, fresh store per iteration (tinybench) -------------
let micro
if (opts.micro) {
  const { Bench } = await import('tinybench')
  const pick = (name) => corpus.filter((t) => t.name === name).sort((x, y) => y.size - x.size)[0]
  // core-js@3: the most files (3,695 small files: file creation); highcharts: the most bytes
  // (inflate + SHA-512).
  const pkgs = [
    corpus.find((t) => t.name === 'core-js' && t.version.startsWith('3.')) ?? pick('core-js'),
    [...corpus].sort((x, y) => y.size - x.size)[0],
  ].filter(Boolean)
  log(`micro-benchmark (tinybench, ${microIterations} iterations + 2 warm-up, tasks run one after another): ` +
    pkgs.map((t) => `${t.name}@${t.version}`).join(', '))
  const bench = new Bench({ iterations: microIterations, time: 0, warmupIterations: 2, warmupTime: 0, throws: true })
  for (const t of pkgs) {
    for (const name of active) {
      const { fn, beforeEach, afterEach } = await impls[name].micro(t)
      bench.add(`${name} ${t.name}@${t.version}`, fn, { beforeEach, afterEach, async: true })
    }
  }
  if (opts.sync) execFileSync('sync')
  await bench.run()
  micro = bench.tasks.map((task) => {
    const [name, pkg] = task.name.split(' ')
    const l = task.result.latency
    return { name, pkg, median: l.p50, min: l.min, max: l.max, n: l.samplesCount }
  })
}

for (const name of active) await impls[name].finish?.()

// --- report ----------------------------------------------------------------------------------
const machine = machineLine()
const summary = Object.fromEntries(active.map((name) => {
  const rs = results[name]
  const wall = stats(rs.map((r) => r.wallMs))
  const cpu = stats(rs.map((r) => r.cpuMs))
  const s = wall.median / 1000
  return [name, {
    wall,
    cpu,
    user: median(rs.map((r) => r.userMs)),
    sys: median(rs.map((r) => r.sysMs)),
    tarballsPerS: size.tarballs / s,
    inMBs: size.compressedBytes / MB / s,
    outMBs: size.tarBytes / MB / s,
    blobs: rs[0].blobs,
    phases: rs[0].phases && Object.fromEntries(Object.keys(rs[0].phases).map((k) => [k, median(rs.map((r) => r.phases[k]))])),
  }]
}))

const range = (st, d = 0) => `${fmt(st.median, d)} (${fmt(st.min, d)}–${fmt(st.max, d)})`
const rows = [
  ['', 'wall ms, median (min–max)', 'CPU ms, median (min–max)', 'user / sys ms', 'CPU/wall', 'tarballs/s', 'MB/s in (gz)', 'MB/s out (tar)', 'blobs'],
  ...active.map((name) => {
    const s = summary[name]
    return [
      impls[name].label,
      range(s.wall), range(s.cpu), `${fmt(s.user)} / ${fmt(s.sys)}`,
      fmt(s.cpu.median / s.wall.median, 2), fmt(s.tarballsPerS), fmt(s.inMBs, 1), fmt(s.outMBs, 1), fmt(s.blobs),
    ]
  }),
]
const mdTable = (rs) => [
  `| ${rs[0].join(' | ')} |`,
  `|${rs[0].map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
  ...rs.slice(1).map((r) => `| ${r.join(' | ')} |`),
].join('\n')

const lines = []
const out = (s = '') => lines.push(s)
out(`Corpus: ${size.tarballs} tarballs (benchmark/fixtures/alotta-modules), ${fmt(size.compressedBytes / MB, 1)} MB compressed, ` +
  `${fmt(size.tarBytes / MB, 1)} MB inflated tar (${fmt(size.fileBytes / MB, 1)} MB in ${fmt(size.files)} files; ` +
  `${fmt(summary[active[0]].blobs)} unique blobs in the store). MB = 10^6 bytes.`)
out()
out(`End to end, ${rounds} interleaved rounds (order alternating), fresh store per run, on ${cores} cores:`)
out()
out(mdTable(rows))
if (both) {
  const p = summary.pnpm
  const c = summary.cas
  const paired = median(results.pnpm.map((r, i) => r.wallMs / results.cas[i].wallMs))
  out()
  const speedUp = p.wall.median / c.wall.median
  out(`**Speed-up of cas over pnpm (pnpm median wall / cas median wall, ${cores} cores): ${fmt(speedUp, 2)}x** ` +
    `(${speedUp >= 1 ? 'cas faster' : 'cas SLOWER'}; median of the per-round ratios ${fmt(paired, 2)}x). ` +
    `CPU time pnpm / cas: ${fmt(p.cpu.median / c.cpu.median, 2)}x.`)
}
if (summary.cas?.phases) {
  const ph = summary.cas.phases
  out()
  out('@cas/native per-phase times summed over all tarballs (medians of the timed rounds; per-task wall-clock ' +
    `durations, so preemption counts too): on the pool threads inflate ${fmt(ph.inflateMs)} ms, tar walk + SHA-512 + ` +
    `blob writes ${fmt(ph.hashWriteMs)} ms; not holding a pool thread: index-commit latency ${fmt(ph.indexMs)} ms, ` +
    `queue wait ${fmt(ph.queuedMs)} ms.`)
}
if (micro) {
  out()
  out(`Micro-benchmark (tinybench, fresh store per iteration, extraction + index row only; ${cores} cores):`)
  out()
  const pkgs = [...new Set(micro.map((m) => m.pkg))]
  const mrows = [['package', ...active.map((n) => `${n} ms, median (min–max)`), ...(both ? ['ratio'] : [])]]
  for (const pkg of pkgs) {
    const by = Object.fromEntries(micro.filter((m) => m.pkg === pkg).map((m) => [m.name, m]))
    mrows.push([
      `${pkg} (${fmt(corpus.find((t) => `${t.name}@${t.version}` === pkg).size / MB, 2)} MB gz)`,
      ...active.map((n) => `${fmt(by[n].median, 1)} (${fmt(by[n].min, 1)}–${fmt(by[n].max, 1)}), n=${by[n].n}`),
      ...(both ? [`${fmt(by.pnpm.median / by.cas.median, 2)}x`] : []),
    ])
  }
  out(mdTable(mrows))
}
const report = printReport(`${machine}; load average at the end ${loadLine()}`, lines, failures)

// --- RESULTS.md ------------------------------------------------------------------------------
if (opts.write && both && failures.length === 0 && opts.limit == null) {
  const resultsPath = writeResultsSection('extract.mjs', [
    '## Extraction into an empty store: pnpm 11 vs @cas/native',
    '',
    `- Date: ${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    `- Machine: **${machine}**; shared and noisy: compare the side-by-side ratio, not absolute times`,
    `- Command: \`node benchmark/extract.mjs --rounds ${rounds}\`` +
      (process.env.CAS_NATIVE_EXTRACT_THREADS ? ` with CAS_NATIVE_EXTRACT_THREADS=${process.env.CAS_NATIVE_EXTRACT_THREADS}` : ''),
    '- Timed window: `initStoreDir` + every tarball submitted at once (Promise.all) + the index rows committed ' +
      '(pnpm: `StoreIndex.flush()`/`close()`; cas writes them itself). Tarballs are in memory; wall time and whole-process CPU time.',
    '',
    report,
  ])
  log(`\nwrote ${relative(process.cwd(), resultsPath)}`)
} else if (opts.write) {
  log(`\n${relative(process.cwd(), join(benchmarkDir, 'RESULTS.md'))} not written (${failures.length ? 'sanity checks failed' : opts.limit != null ? '--limit' : 'needs both implementations'})`)
}

// --- clean up: never before a timed run; in the background, niced --------------------------
if (opts.keep) {
  log(`kept the stores in ${relative(process.cwd(), runDir)}`)
} else {
  deleteInBackground(runDir)
  log(`deleting ${storeSeq} stores in the background (nice rm -rf ${relative(process.cwd(), runDir)}); ` +
    'file creation on this filesystem is slow for a few minutes after that: wait before the next timed run')
}
process.exitCode = failures.length > 0 ? 1 : 0
