#!/usr/bin/env node
/**
 * Cold installs left to pnpm (issue 22, item 4): does the head start's tarball fetcher
 * (`registryTarballFetcher` in lib/plugin/pnpmfile.ts) make a cold `pnpm install --frozen-lockfile`
 * faster or slower than pnpm's own downloads? Two variants, both with the plugin's
 * `.pnpmfile.cjs` in place (so the lockfile and everything else are the same):
 *
 *   stock    — `CAS_NATIVE_INSTALL=0 CAS_NATIVE_PNPMFILE_PRELINK=0 CAS_NATIVE_PNPMFILE_FETCHER=0`:
 *              the plugin does nothing, pnpm 11 downloads every tarball itself;
 *   fetcher  — `CAS_NATIVE_INSTALL=0 CAS_NATIVE_PNPMFILE_FETCHER=1`: no native install, the head
 *              start's fetcher downloads the tarballs (into the native writer).
 *
 * The project is alotta-modules (1355 packages; its tarballs from `benchmark/download.mjs`),
 * installed into a new project dir, an empty store and an empty cache dir every run. The
 * registry is a stand-in on 127.0.0.1 that serves the corpus from memory, reached by a name
 * (`registry.stand-in.test`) that a preload (`--require`, in pnpm's process) resolves the way
 * a real network does:
 *
 * - every new TCP connection waits `--conn-ms` (50) before its first byte is read (a round trip
 *   for the handshake);
 * - every lookup of the name takes `--dns-ms` (50); one started while more than
 *   `--dns-stall-after` (12) are in flight takes `--dns-stall-ms` (5000) instead: this machine's
 *   resolver (BENCHMARKING.md trap 7). `--dns-stall-ms 0` turns that off.
 *
 * With `--default-age`, pnpm's default `minimumReleaseAge` (a day) applies and pnpm asks the
 * stand-in for every package's metadata first (as on users' projects); else
 * `minimumReleaseAge: 0` and only tarballs are fetched.
 *
 * `--registry <url>`: a real registry instead of the stand-in (nothing emulated; its lookups
 * are counted, its connections are not): the real network and this machine's real resolver.
 *
 * Timed: the CLI process, spawn to exit; one untimed warm-up each, then `--rounds` rounds,
 * A B A B (order alternating). Also counted per run: TCP connections the stand-in accepted,
 * lookups of its name, lookups that stalled. Sanity checks: every run exits 0, the same
 * `node_modules/.pnpm` entries in both; the fetcher variant's trace shows it fetched.
 *
 * Usage: node benchmark/cold-fetch.mjs [--rounds N] [--default-age] [--conn-ms N] [--dns-ms N]
 *          [--dns-stall-after N] [--dns-stall-ms N] [--registry URL] [--repo DIR] [--no-write] [--keep]
 * `--repo`: the checkout whose build (dist/, the .node) the plugin loads (default: this one).
 */
import { execFileSync, spawn } from 'node:child_process'
import crypto from 'node:crypto'
import http from 'node:http'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { benchmarkDir, cores, endRun, fmt, loadCorpus, loadLine, machineLine, median, printReport, sandboxEnv, writeResultsSection } from './corpus.mjs'

const { values: opts } = parseArgs({
  allowNegative: true,
  options: {
    rounds: { type: 'string', default: '3' },
    'default-age': { type: 'boolean', default: false },
    'conn-ms': { type: 'string', default: '50' },
    'dns-ms': { type: 'string', default: '50' },
    'dns-stall-after': { type: 'string', default: '12' },
    'dns-stall-ms': { type: 'string', default: '5000' },
    repo: { type: 'string' },
    registry: { type: 'string' },
    write: { type: 'boolean', default: true },
    keep: { type: 'boolean', default: false },
  },
})
const num = (name) => {
  const n = Number(opts[name])
  if (!(Number.isInteger(n) && n >= 0)) throw new Error(`--${name} must be a non-negative integer, got ${opts[name]}`)
  return n
}
const rounds = num('rounds')
if (rounds < 1) throw new Error('--rounds must be at least 1')
const latency = { connMs: num('conn-ms'), dnsMs: num('dns-ms'), stallAfter: num('dns-stall-after'), stallMs: num('dns-stall-ms') }
const log = (...a) => console.error(...a)

const repoDir = dirname(benchmarkDir)
const sourceDir = resolve(opts.repo ?? repoDir)
const workDir = join(benchmarkDir, '.work')
const runDir = join(workDir, `cold-fetch-${process.pid}`)
mkdirSync(runDir, { recursive: true })
const node24 = join(repoDir, 'node_modules', 'node', 'bin', 'node')
const pnpm11Dir = join(repoDir, 'node_modules', 'pnpm')
const pnpm11Version = JSON.parse(readFileSync(join(pnpm11Dir, 'package.json'), 'utf8')).version

// A snapshot of the package the plugin loads, so that a rebuild during the run changes nothing.
const casDir = join(runDir, 'cas-native')
mkdirSync(casDir)
for (const f of readdirSync(sourceDir).filter((n) => n.endsWith('.node') || ['package.json', 'index.js', 'index.d.ts', 'dist'].includes(n))) {
  cpSync(join(sourceDir, f), join(casDir, f), { recursive: true })
}
const nodePath = join(runDir, 'node-path')
mkdirSync(join(nodePath, '@cas'), { recursive: true })
symlinkSync(casDir, join(nodePath, '@cas', 'native'), 'dir')

// --- the registry stand-in, reached by name ---------------------------------------------------
const HOST = 'registry.stand-in.test'
const corpus = loadCorpus()
const byPath = new Map(corpus.map((t) => [new URL(t.url).pathname, t.buffer]))
const metadata = new Map()
if (opts['default-age']) {
  const byName = new Map()
  for (const t of corpus) byName.set(t.name, { ...byName.get(t.name), [t.version]: { name: t.name, version: t.version, dist: { integrity: t.integrity } } })
  for (const [name, versions] of byName) metadata.set(`/${name}`, JSON.stringify({ name, modified: '2020-01-01T00:00:00.000Z', versions }))
}
let connections = 0
const server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname)
  const body = byPath.get(path) ?? metadata.get(path)
  if (body == null) {
    res.writeHead(404).end()
    return
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': Buffer.byteLength(body) }).end(body)
})
// A new connection's first byte waits a round trip (the handshake a real network costs).
server.on('connection', (socket) => {
  connections++
  if (latency.connMs === 0) return
  socket.pause()
  setTimeout(() => socket.resume(), latency.connMs)
})
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const registry = opts.registry ?? `http://${HOST}:${server.address().port}/`
const registryHost = new URL(registry).hostname

// The preload that resolves the name slowly, counting lookups, in every pnpm process.
const preload = join(runDir, 'slow-dns.cjs')
writeFileSync(preload, `'use strict'
const dns = require('node:dns')
const fs = require('node:fs')
const original = dns.lookup
const counts = { lookups: 0, stalled: 0, maxInFlight: 0 }
let inFlight = 0
dns.lookup = function lookup (hostname, options, callback) {
  if (typeof options === 'function') { callback = options; options = {} }
  if (hostname !== ${JSON.stringify(registryHost)}) return original.call(this, hostname, options, callback)
  counts.lookups++
  counts.maxInFlight = Math.max(counts.maxInFlight, inFlight + 1)
  if (hostname !== ${JSON.stringify(HOST)}) {
    inFlight++
    return original.call(this, hostname, options, function (...answer) { inFlight--; callback(...answer) })
  }
  const stalls = ${latency.stallMs} > 0 && inFlight >= ${latency.stallAfter}
  if (stalls) counts.stalled++
  inFlight++
  setTimeout(() => {
    inFlight--
    if (typeof options === 'object' && options.all) callback(null, [{ address: '127.0.0.1', family: 4 }])
    else callback(null, '127.0.0.1', 4)
  }, stalls ? ${latency.stallMs} : ${latency.dnsMs})
}
process.on('exit', () => { if (process.env.COLD_FETCH_DNS_LOG) fs.appendFileSync(process.env.COLD_FETCH_DNS_LOG, JSON.stringify(counts) + '\\n') })
`)

// --- the project --------------------------------------------------------------------------------
const fixtureDir = join(benchmarkDir, 'fixtures', 'alotta-modules')
const PNPMFILE = "module.exports = require('@cas/native/pnpmfile')\n"
const pnpmfileChecksum = `sha256-${crypto.createHash('sha256').update(PNPMFILE).digest('base64')}`
const lockfile = readFileSync(join(fixtureDir, 'pnpm-lock.yaml'), 'utf8')
  .replace('\nimporters:\n', `\npnpmfileChecksum: ${pnpmfileChecksum}\n\nimporters:\n`)
const workspaceYaml = readFileSync(join(fixtureDir, 'pnpm-workspace.yaml'), 'utf8').replace(/^storeDir:.*$/m, '') +
  (opts['default-age'] ? '' : '\nminimumReleaseAge: 0\n')

const VARIANTS = {
  stock: { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_PRELINK: '0', CAS_NATIVE_PNPMFILE_FETCHER: '0' },
  fetcher: { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_FETCHER: '1' },
}
const variants = Object.keys(VARIANTS)

let counter = 0
function install (variant) {
  const n = counter++
  const dir = join(runDir, 'runs', `${variant}-${n}`)
  const projectDir = join(dir, 'project')
  mkdirSync(projectDir, { recursive: true })
  cpSync(join(fixtureDir, 'package.json'), join(projectDir, 'package.json'))
  writeFileSync(join(projectDir, 'pnpm-workspace.yaml'), workspaceYaml)
  writeFileSync(join(projectDir, 'pnpm-lock.yaml'), lockfile)
  writeFileSync(join(projectDir, '.pnpmfile.cjs'), PNPMFILE)
  const env = {
    ...sandboxEnv(join(dir, 'home'), dirname(node24)),
    NODE_PATH: nodePath,
    NODE_OPTIONS: `--require ${preload}`,
    COLD_FETCH_DNS_LOG: join(dir, 'dns.jsonl'),
    CAS_NATIVE_PNPMFILE_TRACE: join(dir, 'trace.txt'),
    ...VARIANTS[variant],
  }
  // The certificates a network that intercepts TLS needs (--registry).
  if (process.env.NODE_EXTRA_CA_CERTS) env.NODE_EXTRA_CA_CERTS = process.env.NODE_EXTRA_CA_CERTS
  const args = [join(pnpm11Dir, 'bin', 'pnpm.mjs'), 'install', '--frozen-lockfile', `--store-dir=${join(dir, 'store')}`, `--config.cache-dir=${join(dir, 'cache')}`,
    '--config.ignore-scripts=true', '--config.update-notifier=false', `--config.registry=${registry}`, '--reporter=append-only']
  execFileSync('sync')
  const connectionsBefore = connections
  return new Promise((resolve) => {
    const start = process.hrtime.bigint()
    const child = spawn(node24, args, { cwd: projectDir, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (d) => { output += d })
    child.stderr.on('data', (d) => { output += d })
    child.on('close', (code) => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6
      const dns = existsSync(env.COLD_FETCH_DNS_LOG)
        ? readFileSync(env.COLD_FETCH_DNS_LOG, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).reduce((a, b) => ({ lookups: a.lookups + b.lookups, stalled: a.stalled + b.stalled, maxInFlight: Math.max(a.maxInFlight, b.maxInFlight) }))
        : { lookups: 0, stalled: 0, maxInFlight: 0 }
      const trace = existsSync(env.CAS_NATIVE_PNPMFILE_TRACE) ? readFileSync(env.CAS_NATIVE_PNPMFILE_TRACE, 'utf8').split('\n') : []
      resolve({
        ms,
        code,
        output,
        connections: connections - connectionsBefore,
        ...dns,
        fetched: trace.filter((l) => l.startsWith('fetch ')).length,
        delegated: trace.filter((l) => l.startsWith('delegate ')).length,
        virtualStore: existsSync(join(projectDir, 'node_modules', '.pnpm')) ? readdirSync(join(projectDir, 'node_modules', '.pnpm')).filter((e) => !e.startsWith('.') && e !== 'node_modules' && e !== 'lock.yaml').sort().join('\n') : '',
      })
    })
  })
}

// --- running ----------------------------------------------------------------------------------
log(opts.registry != null
  ? `installing from ${registry}`
  : `serving ${corpus.length} tarballs${opts['default-age'] ? ' and their metadata' : ''} at ${registry} (new connection +${latency.connMs} ms; lookup ${latency.dnsMs} ms, ${latency.stallMs} ms past ${latency.stallAfter} in flight)`)
const failures = []
const results = Object.fromEntries(variants.map((v) => [v, []]))
let reference
const check = (v, label, r) => {
  if (r.code !== 0) failures.push(`${v} ${label} exited ${r.code}: ${r.output.slice(-2000)}`)
  reference ??= r.virtualStore
  if (r.virtualStore !== reference) failures.push(`${v} ${label}: node_modules/.pnpm differs`)
  if (v === 'fetcher' && r.fetched === 0) failures.push(`${v} ${label}: the fetcher fetched nothing`)
  if (v === 'stock' && r.fetched > 0) failures.push(`${v} ${label}: the fetcher was active`)
}
for (const v of variants) {
  const r = await install(v)
  log(`warm-up ${v}: ${r.ms.toFixed(0)} ms, exit ${r.code}, ${r.connections} connections, ${r.lookups} lookups (${r.stalled} stalled, ${r.maxInFlight} at once), fetched ${r.fetched}, delegated ${r.delegated}`)
  check(v, 'warm-up', r)
}
for (let round = 0; round < rounds && failures.length === 0; round++) {
  for (const v of round % 2 === 0 ? variants : [...variants].reverse()) {
    const r = await install(v)
    check(v, `round ${round + 1}`, r)
    results[v].push(r)
    log(`round ${round + 1}/${rounds} ${v}: ${r.ms.toFixed(0)} ms, ${r.connections} connections, ${r.lookups} lookups (${r.stalled} stalled, ${r.maxInFlight} at once), fetched ${r.fetched}, delegated ${r.delegated}`)
  }
}
server.close()

// --- report -------------------------------------------------------------------------------------
const machine = machineLine()
const lines = []
const out = (s = '') => lines.push(s)
if (failures.length === 0) {
  const ms = (v) => results[v].map((r) => r.ms)
  const ratios = ms('stock').map((s, i) => s / ms('fetcher')[i])
  out(`alotta-modules (${reference.split('\n').length} packages in \`node_modules/.pnpm\`), cold: empty store and cache every run; ${rounds} rounds, A B A B; ${cores} cores:`)
  out()
  out('| | wall ms, median (min–max) | TCP connections, median | lookups, median (stalled; most in flight) |')
  out('|---|---:|---:|---:|')
  for (const v of variants) {
    const t = ms(v)
    const m = (k) => fmt(median(results[v].map((r) => r[k])))
    out(`| ${v === 'stock' ? `pnpm ${pnpm11Version}'s own downloads (plugin off)` : 'the head start\'s fetcher (native install off)'} | ${fmt(median(t))} (${fmt(Math.min(...t))}–${fmt(Math.max(...t))}) | ${opts.registry != null ? '–' : m('connections')} | ${m('lookups')} (${m('stalled')}; ${m('maxInFlight')}) |`)
  }
  out()
  out(`Stock / fetcher: ${(median(ms('stock')) / median(ms('fetcher'))).toFixed(2)}x of the medians; per round ${median(ratios).toFixed(2)}x (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); above 1: the fetcher is faster.`)
}
out()
out(`Load average (1/5/15 min) after the runs: ${loadLine(' / ')} (on ${cores} cores).`)
const report = printReport(machine, lines, failures)

const flags = [opts['default-age'] ? ' --default-age' : '', opts.registry != null ? ` --registry ${registry}` : '', ...(opts.registry != null ? [] : ['conn-ms', 'dns-ms', 'dns-stall-after', 'dns-stall-ms']).map((k) => ` --${k} ${opts[k]}`)].join('')
if (opts.write && opts.repo == null && failures.length === 0) {
  const name = `cold-fetch.mjs${opts['default-age'] ? ' --default-age' : ''}${opts.registry != null ? ' --registry' : ''}`
  const resultsPath = writeResultsSection(name, [
    `## Cold install left to pnpm: the head start's fetcher against pnpm's own downloads${opts['default-age'] ? ' (default minimumReleaseAge: metadata first)' : ''}`,
    '',
    `- Date: ${new Date().toISOString().replace('T', ' ').slice(0, 16)} UTC`,
    `- Machine: **${machine}**; shared and noisy: compare the side-by-side ratios`,
    `- Command: \`node benchmark/cold-fetch.mjs${flags} --rounds ${rounds}\``,
    opts.registry != null
      ? `- Registry: ${registry} itself, over the real network and resolver`
      : `- Registry: a stand-in on 127.0.0.1 reached by name; a new TCP connection waits ${latency.connMs} ms, a lookup ${latency.dnsMs} ms, or ${latency.stallMs} ms when more than ${latency.stallAfter} are in flight (this machine's resolver)`,
    '',
    report,
  ])
  log(`wrote ${relative(process.cwd(), resultsPath)}`)
}
endRun(runDir, { keep: opts.keep, failures, log })
