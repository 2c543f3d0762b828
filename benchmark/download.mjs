#!/usr/bin/env node
/**
 * Downloads every registry tarball of the alotta-modules fixture into a local cache.
 *
 * Why: the benchmarks and corpus tests of @cas/native measure store work (inflate, untar,
 * hash, write files, link) — not the network. So they read the ~1355 real npm tarballs of
 * `benchmark/fixtures/alotta-modules/pnpm-lock.yaml` from disk, and this script puts them
 * there once: `benchmark/.cache/tarballs/<name@version>.tgz` (scoped names as `@scope+name`),
 * each verified against the lockfile's SHA-512 integrity, plus a `manifest.json` listing
 * [{name, version, integrity, file, size}] in lockfile order.
 *
 * Re-running is cheap: a cached file whose hash matches is kept. Exits non-zero if any
 * tarball could not be fetched and verified.
 *
 * Usage: node benchmark/download.mjs [--lockfile <path>] [--out <dir>] [--concurrency <n>]
 * The registry is what `npm config get registry` prints (override with NPM_CONFIG_REGISTRY).
 * Node >= 20, no dependencies.
 */
import { createHash } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const here = dirname(fileURLToPath(import.meta.url))
const { values: opts } = parseArgs({
  options: {
    lockfile: { type: 'string', default: join(here, 'fixtures/alotta-modules/pnpm-lock.yaml') },
    out: { type: 'string', default: join(here, '.cache/tarballs') },
    concurrency: { type: 'string', default: '16' },
  },
})
const RETRIES = 4

/**
 * Reads the `packages:` section of a v9 lockfile: keys are `name@version` (quoted when they
 * start with `@`), each followed by an indented `resolution: {integrity: ..., tarball: ...}`.
 */
function parseLockfile (text) {
  const pkgs = []
  let inPackages = false
  let current = null
  for (const line of text.split(/\r?\n/)) {
    if (/^\S/.test(line)) { inPackages = line.startsWith('packages:'); current = null; continue }
    if (!inPackages) continue
    const key = /^ {2}(?!\s)'?([^']+?)'?:\s*$/.exec(line)
    if (key) {
      const at = key[1].lastIndexOf('@')                 // after the scope's leading '@'
      if (at <= 0) throw new Error(`unexpected package key: ${key[1]}`)
      current = { name: key[1].slice(0, at), version: key[1].slice(at + 1), integrity: null, tarball: null }
      pkgs.push(current)
      continue
    }
    const res = /^ {4}resolution:\s*\{(.*)\}\s*$/.exec(line)
    if (res && current) {
      for (const field of res[1].split(',')) {
        const m = /^\s*(\w+):\s*'?([^']*?)'?\s*$/.exec(field)
        if (m && (m[1] === 'integrity' || m[1] === 'tarball')) current[m[1]] = m[2]
      }
    }
  }
  return pkgs
}

function registryUrl () {
  let url = process.env.NPM_CONFIG_REGISTRY || process.env.npm_config_registry
  if (!url) {
    try {
      url = execFileSync('npm', ['config', 'get', 'registry'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    } catch { url = 'https://registry.npmjs.org/' }
  }
  return url.endsWith('/') ? url : `${url}/`
}

/** `@scope/name@1.0.0` -> `@scope+name@1.0.0.tgz` */
const fileNameOf = (p) => `${p.name.replace('/', '+')}@${p.version}.tgz`.replace(/[^\w@+.-]/g, '_')

function sriMatches (buf, integrity) {
  // An SRI string may list several hashes; accept if any sha512 one matches.
  const want = integrity.split(/\s+/).filter((h) => h.startsWith('sha512-'))
  if (want.length === 0) throw new Error(`no sha512 integrity: ${integrity}`)
  const got = `sha512-${createHash('sha512').update(buf).digest('base64')}`
  return want.includes(got)
}

async function fetchVerified (url, integrity) {
  let lastErr
  for (let attempt = 1; attempt <= RETRIES; attempt++) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(120_000) })
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
      const buf = Buffer.from(await res.arrayBuffer())
      if (!sriMatches(buf, integrity)) throw new Error('integrity mismatch')
      return buf
    } catch (err) {
      lastErr = err
      if (attempt < RETRIES) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** (attempt - 1)))
    }
  }
  throw new Error(`${url}: ${lastErr?.message ?? lastErr}`)
}

async function main () {
  const started = performance.now()
  const outDir = resolve(opts.out)
  await mkdir(outDir, { recursive: true })
  const registry = registryUrl()
  const pkgs = parseLockfile(await readFile(opts.lockfile, 'utf8'))
  const missing = pkgs.filter((p) => !p.integrity)
  if (missing.length) throw new Error(`no integrity for: ${missing.map((p) => `${p.name}@${p.version}`).join(', ')}`)

  let downloaded = 0; let cached = 0; let done = 0
  const failures = []
  const manifest = new Array(pkgs.length)

  async function one (i) {
    const p = pkgs[i]
    const file = fileNameOf(p)
    const dest = join(outDir, file)
    let size
    const existing = await readFile(dest).catch(() => null)
    if (existing && sriMatches(existing, p.integrity)) {
      size = existing.length
      cached++
    } else {
      const bare = p.name.startsWith('@') ? p.name.split('/')[1] : p.name
      const url = p.tarball ?? `${registry}${p.name}/-/${bare}-${p.version}.tgz`
      const buf = await fetchVerified(url, p.integrity)
      const tmp = `${dest}.${process.pid}.${i}.tmp`
      await writeFile(tmp, buf)
      await rename(tmp, dest)
      size = buf.length
      downloaded++
    }
    manifest[i] = { name: p.name, version: p.version, integrity: p.integrity, file, size }
  }

  let next = 0
  const worker = async () => {
    while (next < pkgs.length) {
      const i = next++
      try { await one(i) } catch (err) { failures.push(`${pkgs[i].name}@${pkgs[i].version}: ${err.message}`) }
      if (++done % 100 === 0 && process.stderr.isTTY) process.stderr.write(`\r${done}/${pkgs.length}`)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Number(opts.concurrency) || 16) }, worker))
  if (process.stderr.isTTY) process.stderr.write('\r')

  const secs = ((performance.now() - started) / 1000).toFixed(1)
  if (failures.length) {
    console.error(`${failures.length} of ${pkgs.length} tarballs failed:\n  ${failures.join('\n  ')}`)
    await rm(join(outDir, 'manifest.json'), { force: true })
    process.exit(1)
  }
  await writeFile(join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  const totalMB = manifest.reduce((n, m) => n + m.size, 0) / 1e6
  console.log(`${pkgs.length} tarballs (${downloaded} downloaded, ${cached} cached), ` +
    `${totalMB.toFixed(1)} MB, ${secs} s -> ${outDir}`)
}

main().catch((err) => { console.error(err.stack ?? err); process.exit(1) })
