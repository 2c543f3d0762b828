#!/usr/bin/env node
/**
 * A registry stand-in on 127.0.0.1 for packages packed from this repository, to try them before
 * they are published (README, "Trying it before it is published"): pnpm installs config
 * dependencies from a registry only.
 *
 *   node scripts/registry-stand-in.mjs <dir of .tgz files> [--port 4873]
 *
 * Serves each tarball in the directory at the path npm and pnpm derive from a registry URL, and
 * each package's metadata (full, or abbreviated for installers) with its `dist` pointing back
 * here; 404 for anything else, so only the scopes a project routes here (`@cas:registry=…` in its
 * .npmrc) are asked for. A version's publish time is its tarball's modification time: pnpm's
 * `minimumReleaseAge` sees a package packed today as new, as it would a published one.
 *
 * The tests' stand-in (`__test__/helpers/registry.ts`) builds its metadata with `packument` too.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import zlib from 'node:zlib'
import semver from 'semver'

/** Where a registry serves `name@version`'s tarball, below its URL. */
export function tarballPath (name, version) {
  return `/${name}/-/${name.split('/').pop()}-${version}.tgz`
}

/**
 * A package's metadata as npm's registry serves it: every version's manifest with its `dist`
 * (tarball URL below `url`, integrity, shasum), and, unless `abbreviated` (what installers ask
 * for), the publish times. Each version: `{ version, manifest, bytes, published, fields?, dist? }`
 * (`fields` and `dist`: more of the version's fields and of its `dist`).
 */
export function packument (name, versions, url, { abbreviated = false, withTime = true } = {}) {
  const modified = versions.map((v) => v.published).sort().at(-1)
  return JSON.stringify({
    name,
    'dist-tags': { latest: semver.rsort(versions.map((v) => v.version)).find((v) => semver.prerelease(v) == null) ?? versions.at(-1).version },
    versions: Object.fromEntries(versions.map((v) => [v.version, {
      ...v.manifest,
      name,
      version: v.version,
      _id: `${name}@${v.version}`,
      ...v.fields,
      dist: {
        tarball: `${url}${tarballPath(name, v.version).slice(1)}`,
        integrity: `sha512-${crypto.createHash('sha512').update(v.bytes).digest('base64')}`,
        shasum: crypto.createHash('sha1').update(v.bytes).digest('hex'),
        ...v.dist,
      },
    }])),
    ...(abbreviated || !withTime ? {} : { time: { created: versions[0].published, modified, ...Object.fromEntries(versions.map((v) => [v.version, v.published])) } }),
    modified,
  })
}

/** The `package.json` at the root of a .tgz, read with Node's zlib and a minimal tar walk. */
function manifestOfTarball (bytes) {
  const tar = zlib.gunzipSync(bytes)
  for (let at = 0; at + 512 <= tar.length;) {
    const name = tar.subarray(at, at + 100).toString('utf8').replace(/\0.*$/s, '')
    const size = Number.parseInt(tar.subarray(at + 124, at + 136).toString('utf8').replace(/\0.*$/s, '').trim() || '0', 8)
    if (name === '') break
    if (/^[^/]+\/package\.json$/.test(name)) return JSON.parse(tar.subarray(at + 512, at + 512 + size).toString('utf8'))
    at += 512 + Math.ceil(size / 512) * 512
  }
  throw new Error('no package.json at the root of the tarball')
}

/** Serves the .tgz files of `dir` on 127.0.0.1:`port`; resolves with the registry URL. */
export async function servePacked (dir, port = 0) {
  const versions = fs.readdirSync(dir).filter((f) => f.endsWith('.tgz')).map((f) => {
    const file = path.join(dir, f)
    const bytes = fs.readFileSync(file)
    const manifest = manifestOfTarball(bytes)
    return { name: manifest.name, version: manifest.version, manifest, bytes, published: fs.statSync(file).mtime.toISOString() }
  })
  if (versions.length === 0) throw new Error(`no .tgz files in ${dir}`)
  const byTarball = new Map(versions.map((v) => [tarballPath(v.name, v.version), v]))
  let url = ''
  const server = http.createServer((req, res) => {
    const at = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)
    const tarball = byTarball.get(at)
    const named = versions.filter((v) => v.name === at.slice(1))
    const body = tarball != null
      ? tarball.bytes
      : named.length > 0 ? packument(at.slice(1), named, url, { abbreviated: req.headers.accept?.startsWith('application/vnd.npm.install-v1+json') === true }) : undefined
    if (body == null) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
      return
    }
    res.writeHead(200, { 'content-type': tarball != null ? 'application/octet-stream' : 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
  })
  await new Promise((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${server.address().port}/`
  return { url, packages: versions.map((v) => `${v.name}@${v.version}`), close: () => new Promise((resolve) => server.close(resolve)) }
}

/** Whether Node runs this file as its main script (through a symlink or a path with spaces too). */
function isMain () {
  try {
    return process.argv[1] != null && fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (isMain()) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { port: { type: 'string', default: '4873' } } })
  if (positionals.length !== 1) {
    console.error('Usage: node scripts/registry-stand-in.mjs <dir of .tgz files> [--port 4873]')
    process.exit(2)
  }
  const { url, packages } = await servePacked(positionals[0], Number(values.port))
  console.log(`serving ${packages.join(', ')} at ${url} (Ctrl-C ends it)`)
  console.log(`in a project's .npmrc: @cas:registry=${url}`)
}
