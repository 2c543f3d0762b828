/**
 * A registry stand-in on 127.0.0.1 for packed packages: each package's metadata (a packument
 * with one version, its `dist` pointing back here) and its tarball, 404 for anything else. It is
 * what npm and pnpm need to resolve and install `npm:` aliases and overrides without the network.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

export interface PackedPackage {
  /** The package.json that was packed. */
  manifest: { name: string, version: string, [field: string]: unknown }
  /** The `npm pack` tarball. */
  tarball: string
}

export interface PackageRegistry {
  url: string
  /** Every request's path, decoded. */
  requests: string[]
  close: () => Promise<void>
}

export async function servePackages (packages: PackedPackage[]): Promise<PackageRegistry> {
  const requests: string[] = []
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const metadata = new Map<string, string>()
  const tarballs = new Map<string, string>()
  for (const { manifest, tarball } of packages) {
    const { name, version } = manifest
    const tarballPath = `/${name}/-/${name.split('/').pop()}-${version}.tgz`
    const bytes = fs.readFileSync(tarball)
    tarballs.set(tarballPath, tarball)
    metadata.set(`/${name}`, JSON.stringify({
      name,
      'dist-tags': { latest: version },
      versions: {
        [version]: {
          ...manifest,
          _id: `${name}@${version}`,
          dist: {
            tarball: `${url.slice(0, -1)}${tarballPath}`,
            integrity: `sha512-${crypto.createHash('sha512').update(bytes).digest('base64')}`,
            shasum: crypto.createHash('sha1').update(bytes).digest('hex'),
          },
        },
      },
      // Old enough for any minimumReleaseAge.
      time: { created: '2020-01-01T00:00:00.000Z', modified: '2020-01-01T00:00:00.000Z', [version]: '2020-01-01T00:00:00.000Z' },
    }))
  }
  server.on('request', (req, res) => {
    const at = decodeURIComponent(new URL(req.url!, url).pathname)
    requests.push(at)
    const meta = metadata.get(at)
    if (meta != null) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(meta)
      return
    }
    const tarball = tarballs.get(at)
    if (tarball == null) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}')
      return
    }
    const body = fs.readFileSync(tarball)
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body)
  })
  return {
    url,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
