/**
 * A registry stand-in on 127.0.0.1: each package's tarball at the path npm and pnpm derive from
 * a registry URL, the metadata (a packument, its `dist` pointing back here) of the packages given
 * with a manifest, 404 for anything else. What npm and pnpm need to resolve and install (`pnpm add`,
 * `npm:` aliases, overrides) without the network; a frozen pnpm install needs only the tarballs
 * with `minimumReleaseAge: 0`, and the metadata's publish times otherwise (`time` in the full
 * metadata, and `modified` at the top of the abbreviated metadata installers ask for).
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { packument, tarballPath } from '../../scripts/registry-stand-in.mjs'

export interface ServedPackage {
  name: string
  version: string
  /** The .tgz: its bytes, or its path. */
  tarball: Buffer | string
  /** With a manifest, the package's metadata is served too. */
  manifest?: Record<string, unknown>
  /** When the metadata says it was published (an ISO date); by default long ago. */
  published?: string
  /** The trust evidence its metadata shows: a provenance attestation, and a trusted publisher too. */
  trust?: 'provenance' | 'trustedPublisher'
  /** Its package's full metadata has no `time` (as some registries serve it). */
  timeless?: boolean
  /** The registry's attestations of it (`/-/npm/v1/attestations/<name>@<version>`), logged then (an ISO date); else none (404). */
  attested?: string
}

/** The fields of a version's registry metadata that carry its trust evidence, as npm's registry serves them. */
function trustFields (p: ServedPackage): { attestations?: object, npmUser?: object } {
  if (p.trust == null) return {}
  const attestations = { url: `https://registry.npmjs.org/-/npm/v1/attestations/${p.name}@${p.version}`, provenance: { predicateType: 'https://slsa.dev/provenance/v1' } }
  return { attestations, ...(p.trust === 'trustedPublisher' ? { npmUser: { name: 'GitHub Actions', email: 'npm-oidc-no-reply@github.com', trustedPublisher: { id: 'github', oidcConfigId: 'oidc:test' } } } : {}) }
}

export interface TarballRegistry {
  /** The registry URL to pass to npm or pnpm. */
  url: string
  /** Every request: its path (decoded), user agent (pnpm's own fetcher sends pnpm's) and answer's status. */
  requests: Array<{ url: string, userAgent: string | undefined, status: number }>
  close: () => Promise<void>
}

/** The `package.json` at the root of a .tgz (whatever its top directory is called), read with tar. */
export function manifestOf (tarball: string): Record<string, unknown> {
  const list = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
  const entry = list.stdout.split('\n').find((f) => /^[^/]+\/package\.json$/.test(f))
  if (list.status !== 0 || entry == null) throw new Error(`${tarball}: no package.json at its root`)
  return JSON.parse(spawnSync('tar', ['-xzOf', tarball, entry], { encoding: 'utf8' }).stdout)
}

/**
 * `scripts/pack-plugin.mjs` into `dir`: the plugin and this machine's platform package, as the
 * release publishes them, each with its manifest.
 */
export function packPlugin (dir: string): ServedPackage[] {
  const out = spawnSync(process.execPath, [path.join(import.meta.dirname, '..', '..', 'scripts', 'pack-plugin.mjs'), dir], { encoding: 'utf8' })
  if (out.status !== 0) throw new Error(`pack-plugin failed: ${out.stderr}`)
  return fs.readdirSync(dir).map((f) => packedPackage(path.join(dir, f)))
}

/** A packed tarball served with its own manifest. */
export function packedPackage (tarball: string): ServedPackage {
  const manifest = manifestOf(tarball)
  return { name: manifest.name as string, version: manifest.version as string, tarball, manifest }
}

/** Where npm's registry serves a version's attestations. */
const ATTESTATIONS = '/-/npm/v1/attestations/'

/**
 * A packument as a registry served it, its versions' tarballs pointed at `url` (the stand-in
 * serves those it has, and 404 for the others, so nothing is fetched from elsewhere); no `time`
 * when `abbreviated`, as registries answer installers.
 */
function servedAsIs (packument: Record<string, any>, url: string, abbreviated: boolean): string {
  const { time, ...rest } = packument
  const versions = Object.fromEntries(Object.entries(rest.versions as Record<string, any>).map(([v, manifest]) =>
    [v, { ...manifest, dist: { ...manifest.dist, tarball: `${url}${tarballPath(packument.name, v).slice(1)}` } }]))
  return JSON.stringify({ ...rest, versions, ...(abbreviated ? {} : { time }) })
}

/**
 * `tarballDelayMs`: each tarball is answered that much later (a slow registry, for what an install shows meanwhile).
 * `packuments`: registry metadata served as it is (a real registry's, by name), for packages
 * given without a manifest.
 * `publishedFor`: when the metadata says a package was published, by who asks (its user agent);
 * `undefined`: as the package says.
 */
export async function serveTarballs (packages: ServedPackage[], opts: { tarballDelayMs?: number, packuments?: Map<string, Record<string, unknown>>, publishedFor?: (p: ServedPackage, userAgent: string | undefined) => string | undefined } = {}): Promise<TarballRegistry> {
  const byPath = new Map(packages.map((p) => [tarballPath(p.name, p.version), p]))
  const bytes = (p: ServedPackage): Buffer => typeof p.tarball === 'string' ? fs.readFileSync(p.tarball) : p.tarball
  const requests: TarballRegistry['requests'] = []
  let url = ''
  /** A package's metadata: full, or abbreviated (no `time`) as npm serves it to installers. */
  const metadata = (name: string, abbreviated: boolean, userAgent: string | undefined): string | undefined => {
    const versions = packages.filter((p) => p.name === name && p.manifest != null)
    const given = opts.packuments?.get(name)
    if (versions.length === 0) return given == null ? undefined : servedAsIs(given, url, abbreviated)
    return packument(name, versions.map((p) => ({
      version: p.version,
      manifest: p.manifest!,
      bytes: bytes(p),
      // Old enough for any minimumReleaseAge, unless a package says otherwise.
      published: opts.publishedFor?.(p, userAgent) ?? p.published ?? '2020-01-01T00:00:00.000Z',
      fields: trustFields(p).npmUser != null ? { _npmUser: trustFields(p).npmUser } : {},
      dist: trustFields(p).attestations != null ? { attestations: trustFields(p).attestations } : {},
    })), url, { abbreviated, withTime: !versions.some((p) => p.timeless === true) })
  }
  /** A version's attestations, as npm's registry serves them: each with its transparency log entries. */
  const attestations = (nameAtVersion: string): string | undefined => {
    const attested = packages.find((p) => `${p.name}@${p.version}` === nameAtVersion)?.attested
    if (attested == null) return undefined
    const integratedTime = String(Math.floor(Date.parse(attested) / 1000))
    return JSON.stringify({ attestations: [{ predicateType: 'https://slsa.dev/provenance/v1', bundle: { verificationMaterial: { tlogEntries: [{ integratedTime }] } } }] })
  }
  const server = http.createServer((req, res) => {
    const at = decodeURIComponent(new URL(req.url!, 'http://x').pathname)
    const tarball = byPath.get(at)
    const body = tarball != null ? bytes(tarball) : at.startsWith(ATTESTATIONS) ? attestations(at.slice(ATTESTATIONS.length)) : metadata(at.slice(1), req.headers.accept?.startsWith('application/vnd.npm.install-v1+json') === true, req.headers['user-agent'])
    requests.push({ url: at, userAgent: req.headers['user-agent'], status: body == null ? 404 : 200 })
    if (body == null) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
      return
    }
    const answer = (): void => { res.writeHead(200, { 'content-type': tarball != null ? 'application/octet-stream' : 'application/json', 'content-length': Buffer.byteLength(body) }).end(body) }
    if (tarball != null && opts.tarballDelayMs != null) setTimeout(answer, opts.tarballDelayMs)
    else answer()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  return {
    url,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
