/**
 * Shared helpers for the benchmarks: loading the alotta-modules tarball corpus that
 * `benchmark/download.mjs` put in `benchmark/.cache/tarballs/` (or a project fixture's, see
 * `platformCorpus`), and inspecting stores.
 * Node >= 22, no dependencies (`platformCorpus` loads this package's compiled dist/).
 */
import { spawn, spawnSync } from 'node:child_process'
import os from 'node:os'
import { readFileSync, readdirSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync } from 'node:zlib'

export const benchmarkDir = dirname(fileURLToPath(import.meta.url))
export const defaultTarballDir = join(benchmarkDir, '.cache/tarballs')

/** The registry URL of a tarball; only used in error messages (nothing is fetched). */
const tarballUrl = (name, version) =>
  `https://registry.npmjs.org/${name}/-/${name.slice(name.lastIndexOf('/') + 1)}-${version}.tgz`

/**
 * Reads the manifest and every tarball into memory.
 * Each entry: {name, version, integrity, file, size, buffer, key, url}, where `key` is the
 * store-index key pnpm uses (`${integrity}\t${name}@${version}`).
 */
export function loadCorpus (dir = defaultTarballDir) {
  const manifestPath = join(dir, 'manifest.json')
  if (!existsSync(manifestPath)) {
    throw new Error(`${manifestPath} is missing: run \`node benchmark/download.mjs\` first`)
  }
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
  return manifest.map((t) => ({
    ...t,
    buffer: readFileSync(join(dir, t.file)),
    key: `${t.integrity}\t${t.name}@${t.version}`,
    url: tarballUrl(t.name, t.version),
  }))
}

/**
 * Makes sure `out` holds `download.mjs`'s cache of `lockfile`'s packages (fetched when its
 * manifest is missing; download.mjs verifies each tarball's integrity). Returns `out`.
 */
export function ensureDownloaded (lockfile, out) {
  if (!existsSync(join(out, 'manifest.json'))) {
    const download = spawnSync(process.execPath, [join(benchmarkDir, 'download.mjs'), '--lockfile', lockfile, '--out', out], { encoding: 'utf8' })
    if (download.status !== 0) throw new Error(`download.mjs --lockfile ${lockfile} failed (${download.status}): ${download.stderr}`)
  }
  return out
}

/**
 * The real npm tarballs of a committed project fixture (`__test__/fixtures/projects/<name>`)
 * that THIS machine installs, in `benchmark/.cache/<name>-<platform>-<arch>` (downloaded on first
 * use): only what the lockfile plans here, because the optional binaries of the other platforms
 * weigh hundreds of MB. The plan is the plugin's own (`distDir`: a compiled dist/ of this
 * package), by `skipRule` (a pnpm release's: the newest's when not said; the tarballs are
 * downloaded once, for the first plan asked for). Returns {dir, planned, skipped} (skipped: the
 * lockfile's depPaths not installed here).
 */
export async function platformCorpus (fixtureDir, name, distDir = join(dirname(benchmarkDir), 'dist'), skipRule = 'edges') {
  const { readLockfileFile } = await import(join(distDir, 'plugin', 'install', 'lockfile-file.js'))
  const { planVirtualStore } = await import(join(distDir, 'plugin', 'install', 'virtual-store.js'))
  const { enginesMet, installableHere } = await import(join(distDir, 'plugin', 'install', 'installable.js'))
  const read = readLockfileFile(fixtureDir)
  if (typeof read === 'string') throw new Error(`${fixtureDir}: ${read}`)
  const { planned, skipped } = planVirtualStore(read.lockfile, {
    lockfileDir: fixtureDir,
    virtualStoreDir: '/',
    include: { dependencies: true, devDependencies: true, optionalDependencies: true },
    // Patched packages are laid out too (from pnpm's side-effects cache): their tarballs are needed.
    patched: true,
    installable: (pkgName, snapshot, optional) => installableHere(pkgName, snapshot, undefined, optional),
    enginesMet: (snapshot) => enginesMet(snapshot, process.version),
    skipRule,
  })
  const dir = join(benchmarkDir, '.cache', `${name}-${process.platform}-${process.arch}`)
  if (!existsSync(join(dir, 'manifest.json'))) downloadLocked(read.lockfile, planned.map((p) => p.depPath), dir)
  return { dir, planned, skipped }
}

/**
 * The tarballs of some of a fixture's packages this machine does not install (`depPaths`, of
 * `platformCorpus`'s `skipped`), in `benchmark/.cache/<name>-skipped` (downloaded on first use,
 * and again when a depPath is added): those pnpm fetches when it resolves the lockfile again,
 * such as the dependencies of another platform's binding, which no platform field of their own
 * keeps it from fetching. Returns the directory.
 */
export async function skippedCorpus (fixtureDir, name, depPaths, distDir = join(dirname(benchmarkDir), 'dist')) {
  const { readLockfileFile } = await import(join(distDir, 'plugin', 'install', 'lockfile-file.js'))
  const read = readLockfileFile(fixtureDir)
  if (typeof read === 'string') throw new Error(`${fixtureDir}: ${read}`)
  return downloadMissing(read.lockfile, depPaths, join(benchmarkDir, '.cache', `${name}-skipped`))
}

/**
 * The tarballs of versions no lockfile has (`nameAtVersions`, as `name@version`) that pnpm
 * fetches when it resolves a workspace anew, such as a newer version of a peer that no project
 * depends on, checked against the integrity `packuments` (registryPackuments') give them, in
 * `benchmark/.cache/<name>-resolved` (downloaded on first use, and again when one is added).
 * Returns the directory.
 */
export function resolvedCorpus (name, nameAtVersions, packuments) {
  const packages = Object.fromEntries(nameAtVersions.map((key) => {
    const at = key.lastIndexOf('@')
    const dist = packuments.get(key.slice(0, at))?.versions?.[key.slice(at + 1)]?.dist
    if (dist?.integrity == null) throw new Error(`${key}: no integrity in its packument`)
    return [key, { resolution: { integrity: dist.integrity } }]
  }))
  return downloadMissing({ packages }, nameAtVersions, join(benchmarkDir, '.cache', `${name}-resolved`))
}

/** `dir` with download.mjs's cache of `depPaths` of a parsed lockfile, downloaded again when its manifest lacks one. */
function downloadMissing (lockfile, depPaths, dir) {
  const manifest = join(dir, 'manifest.json')
  const have = existsSync(manifest) ? new Set(JSON.parse(readFileSync(manifest, 'utf8')).map((t) => `${t.name}@${t.version}`)) : new Set()
  if (!depPaths.every((depPath) => have.has(nameAtVersion(depPath)))) downloadLocked(lockfile, depPaths, dir, true)
  return dir
}

/** A depPath's `name@version` (its peers' suffix left out). */
const nameAtVersion = (depPath) => depPath.replace(/\(.*$/, '')

/**
 * download.mjs's cache in `dir` of `depPaths` of a parsed lockfile (it reads a lockfile's
 * `packages:`: one of only these is written for it); `again`: download.mjs runs even if `dir`
 * has a manifest (it keeps the files already there).
 */
function downloadLocked (lockfile, depPaths, dir, again = false) {
  const byKey = new Map(depPaths.map((depPath) => [nameAtVersion(depPath), depPath]))
  const entries = [...byKey].map(([key, depPath]) => `  '${key}':\n    resolution: {integrity: ${lockfile.packages[depPath].resolution.integrity}}\n`)
  const here = join(mkdtempSync(join(os.tmpdir(), 'platform-corpus-')), 'here.yaml')
  writeFileSync(here, `packages:\n\n${entries.join('')}`)
  if (again) rmSync(join(dir, 'manifest.json'), { force: true })
  ensureDownloaded(here, dir)
}

/**
 * The registry metadata (full packuments, as `npm config get registry` serves them) of `names`,
 * as a Map by name, each cached in `benchmark/.cache/packuments/` (scoped names as `@scope+name`)
 * and fetched on first use: what pnpm asks the registry for when it resolves again (a changed
 * package.json) beyond the tarballs a frozen install needs. A cached copy is never refreshed,
 * so a run resolves against the same metadata every time.
 */
export async function registryPackuments (names, dir = join(benchmarkDir, '.cache', 'packuments')) {
  mkdirSync(dir, { recursive: true })
  const packuments = new Map()
  for (const name of names) {
    const file = join(dir, `${name.replace('/', '+')}.json`)
    if (!existsSync(file)) {
      const url = `${registryUrl()}${name.replace('/', '%2f')}`
      const res = await fetch(url, { signal: AbortSignal.timeout(120_000) })
      if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`)
      const text = await res.text()
      // Written whole or not at all (another run may read it meanwhile).
      const tmp = `${file}.${process.pid}.tmp`
      writeFileSync(tmp, text)
      renameSync(tmp, file)
    }
    packuments.set(name, asOf(JSON.parse(readFileSync(file, 'utf8')), PACKUMENTS_AS_OF))
  }
  return packuments
}

/** When the tests' packument lists were recorded: later releases are left out, so that pnpm resolves as it did then. */
export const PACKUMENTS_AS_OF = '2026-11-27T12:10:00.000Z'

/**
 * A packument as the registry served it at `date`: the versions published later left out, a
 * dist-tag pointing at one of them moved to the newest release left (`latest`: the newest
 * without a prerelease part) or dropped.
 */
export function asOf (packument, date) {
  const time = packument.time ?? {}
  const kept = Object.keys(packument.versions ?? {}).filter((v) => time[v] == null || time[v] <= date)
  if (kept.length === Object.keys(packument.versions ?? {}).length) return packument
  const newest = (versions) => versions.sort((a, b) => (time[a] ?? '').localeCompare(time[b] ?? '')).at(-1)
  const tags = {}
  for (const [tag, version] of Object.entries(packument['dist-tags'] ?? {})) {
    if (kept.includes(version)) tags[tag] = version
    else if (tag === 'latest') tags[tag] = newest(kept.filter((v) => !v.includes('-'))) ?? newest([...kept])
  }
  return {
    ...packument,
    'dist-tags': Object.fromEntries(Object.entries(tags).filter(([, v]) => v != null)),
    versions: Object.fromEntries(kept.map((v) => [v, packument.versions[v]])),
    time: { ...Object.fromEntries(Object.entries(time).filter(([k]) => !(k in packument.versions) || kept.includes(k))), ...(time.modified > date ? { modified: date } : {}) },
  }
}

/** The registry npm is configured with (download.mjs's choice too), ending in `/`. */
function registryUrl () {
  let url = process.env.NPM_CONFIG_REGISTRY || process.env.npm_config_registry
  if (!url) {
    const npm = spawnSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8' })
    url = npm.status === 0 ? npm.stdout.trim() : 'https://registry.npmjs.org/'
  }
  return url.endsWith('/') ? url : `${url}/`
}

/**
 * Sizes of the corpus, computed once (it costs ~1 s): compressed bytes, inflated tar bytes
 * (what gunzip produces: headers, padding and contents), regular-file count and content bytes
 * from the tar headers (pax/GNU extension headers are skipped, not interpreted).
 */
export function measureCorpus (corpus) {
  let compressedBytes = 0
  let tarBytes = 0
  let files = 0
  let fileBytes = 0
  for (const t of corpus) {
    compressedBytes += t.buffer.length
    const tar = gunzipSync(t.buffer)
    tarBytes += tar.length
    const s = tarStats(tar)
    files += s.files
    fileBytes += s.fileBytes
  }
  return { tarballs: corpus.length, compressedBytes, tarBytes, files, fileBytes }
}

function tarStats (tar) {
  let off = 0
  let files = 0
  let fileBytes = 0
  while (off + 512 <= tar.length) {
    const h = tar.subarray(off, off + 512)
    if (h.every((b) => b === 0)) break
    const size = tarSize(h)
    const type = h[156]
    if (type === 0x30 /* '0' */ || type === 0 || type === 0x37 /* '7' */) {
      files++
      fileBytes += size
    }
    off += 512 + Math.ceil(size / 512) * 512
  }
  return { files, fileBytes }
}

function tarSize (h) {
  if (h[124] & 0x80) { // base-256
    let n = 0
    for (let i = 125; i < 136; i++) n = n * 256 + h[i]
    return n
  }
  const s = h.subarray(124, 136).toString('latin1').replace(/[\0 ]+/g, '')
  return s === '' ? 0 : parseInt(s, 8)
}

const BLOB_NAME = /^[0-9a-f]+(-exec)?$/

/**
 * Lists the blobs under `<storeDir>/files/`: {count, names (sorted `xx/rest` list, only with
 * `withNames`), stray (entries that are not blob names, e.g. leftover temp files)}.
 */
export function listBlobs (storeDir, { withNames = false } = {}) {
  const filesDir = join(storeDir, 'files')
  let count = 0
  let stray = 0
  const names = withNames ? [] : undefined
  for (const shard of readdirSync(filesDir)) {
    for (const name of readdirSync(join(filesDir, shard))) {
      if (BLOB_NAME.test(name)) {
        count++
        names?.push(`${shard}/${name}`)
      } else {
        stray++
      }
    }
  }
  names?.sort()
  return { count, stray, names }
}

/** Reads `<storeDir>/index.db` as a Map key -> row bytes (node:sqlite, read-only). */
export async function readIndexRows (storeDir) {
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(join(storeDir, 'index.db'), { readOnly: true })
  try {
    const rows = new Map()
    for (const { key, data } of db.prepare('SELECT key, data FROM package_index').all()) {
      rows.set(key, Buffer.from(data))
    }
    return rows
  } finally {
    db.close()
  }
}

/**
 * Compares two stores' index rows (Maps from `readIndexRows`). Rows carry a `checkedAt`
 * timestamp per file (when the file was written), so two correct stores are never
 * byte-identical: rows that differ in bytes are decoded (msgpackr, pnpm's options) and compared
 * again with every `checkedAt` zeroed, keeping key order.
 * Returns {rows, byteIdentical, sameButCheckedAt, different: [keys], missing: [keys]}.
 */
export async function compareIndexRows (a, b) {
  const { Unpackr } = await import('msgpackr')
  const unpackr = new Unpackr({ useRecords: true, moreTypes: true })
  const canonical = (v) => JSON.stringify(v, function (k, x) {
    if (k === 'checkedAt') return 0
    if (x instanceof Map) return { '<Map>': [...x] }
    return x
  })
  const out = { rows: a.size, byteIdentical: 0, sameButCheckedAt: 0, different: [], missing: [] }
  for (const [key, row] of a) {
    const other = b.get(key)
    if (other == null) out.missing.push(key)
    else if (other.equals(row)) out.byteIdentical++
    else if (other.length === row.length && canonical(unpackr.unpack(row)) === canonical(unpackr.unpack(other))) out.sameButCheckedAt++
    else out.different.push(key)
  }
  return out
}

/**
 * Replaces this benchmark's section of benchmark/RESULTS.md (between its `<!-- <name>:begin`
 * and `<!-- <name>:end -->` markers), or appends it; hand-written sections stay untouched.
 * `lines` is the section's body. Returns the file's path.
 */
export function writeResultsSection (name, lines) {
  const resultsPath = join(benchmarkDir, 'RESULTS.md')
  const begin = `<!-- ${name}:begin (generated by \`node benchmark/${name}\`; replaced on every run) -->`
  const end = `<!-- ${name}:end -->`
  const section = [begin, ...lines, end].join('\n')
  let text = existsSync(resultsPath) ? readFileSync(resultsPath, 'utf8') : '# Benchmark results\n'
  const b = text.indexOf(`<!-- ${name}:begin`)
  const e = text.indexOf(end)
  text = b >= 0 && e > b ? text.slice(0, b) + section + text.slice(e + end.length) : `${text.trimEnd()}\n\n${section}\n`
  writeFileSync(resultsPath, text)
  return resultsPath
}

/**
 * Ends a benchmark's report: the failed sanity checks (if any) appended to `lines`, then the
 * report printed under `heading`. Returns the report's text.
 */
export function printReport (heading, lines, failures) {
  if (failures.length > 0) lines.push('', '**SANITY CHECKS FAILED:**', ...failures.map((f) => `- ${f}`))
  const report = lines.join('\n')
  console.log(`\n${heading}\n`)
  console.log(report)
  return report
}

/**
 * The environment a package-manager CLI runs in for a benchmark: `nodeBinDir` first on PATH, a
 * private HOME and XDG directories under `home` (made here), pnpm 11's worker-pool settings
 * (PNPM_MAX_WORKERS, PNPM_WORKERS) passed through, nothing else of this process's.
 */
export function sandboxEnv (home, nodeBinDir) {
  const env = {
    PATH: `${nodeBinDir}:${process.env.PATH}`,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    TMPDIR: os.tmpdir(),
  }
  for (const k of ['PNPM_MAX_WORKERS', 'PNPM_WORKERS']) if (process.env[k]) env[k] = process.env[k]
  for (const d of [env.XDG_CONFIG_HOME, env.XDG_DATA_HOME, env.XDG_CACHE_HOME, env.XDG_STATE_HOME]) mkdirSync(d, { recursive: true })
  return env
}

/**
 * Deletes a benchmark's work directory in the background, niced, after the measurements:
 * deleting many files is slow here, and file creation right after it is slow too
 * (BENCHMARKING.md trap 1), so it must never happen just before a timed run.
 */
export function deleteInBackground (dir) {
  spawn('nice', ['-n', '19', 'rm', '-rf', dir], { detached: true, stdio: 'ignore' }).unref()
}

/**
 * The end of an end-to-end run: its directory kept (`--keep`) or deleted in the background, and
 * the exit code its sanity checks decided.
 */
export function endRun (runDir, { keep, failures, log }) {
  if (keep) log(`kept ${relative(process.cwd(), runDir)}`)
  else deleteInBackground(runDir)
  process.exitCode = failures.length === 0 ? 0 : 1
}

/** A number for a report: thousands separated, `d` decimals. */
export const fmt = (n, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d })

export function median (xs) {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}

export const stats = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) })

export const cores = os.availableParallelism()

/** The load averages (1, 5, 15 min) to two decimals, joined with `sep`. */
export const loadLine = (sep = ' ') => os.loadavg().map((x) => x.toFixed(2)).join(sep)

/** The machine a report was measured on: cores, CPU, memory, kernel, Node. */
export function machineLine () {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU'
  return `${cores} cores (${cpu}), ${fmt(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, Node ${process.versions.node}`
}
