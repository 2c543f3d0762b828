/**
 * The plugin's registry requests (lib/registry-fetch.ts), against a server on 127.0.0.1: what
 * `fetch` did for them before (redirects followed, gzip decoded) and what makes an answer count
 * as none.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registryJson } from '../dist/registry-fetch.js'

describe('registryJson', () => {
  let server: http.Server
  let base = ''
  const seen: Array<{ url: string, encoding: string | undefined }> = []
  const doc = JSON.stringify({ name: 'pkg', modified: '2020-01-01T00:00:00.000Z' })

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push({ url: req.url!, encoding: req.headers['accept-encoding'] })
      if (req.url === '/plain') res.writeHead(200, { 'content-type': 'application/json' }).end(doc)
      else if (req.url === '/gzip') res.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(doc))
      else if (req.url === '/moved') res.writeHead(302, { location: '/gzip' }).end()
      else if (req.url === '/loop') res.writeHead(301, { location: '/loop' }).end()
      else if (req.url === '/brotli') res.writeHead(200, { 'content-encoding': 'br' }).end('xx')
      else if (req.url === '/broken') res.writeHead(200, { 'content-encoding': 'gzip' }).end('not gzip')
      else res.writeHead(404).end('{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(async () => { await new Promise((resolve) => server.close(resolve)) })

  it('reads a document, plain or gzipped, asking for gzip, and follows redirects', async () => {
    expect(await registryJson(`${base}/plain`, 'application/json')).toEqual(JSON.parse(doc))
    expect(await registryJson(`${base}/gzip`, 'application/json')).toEqual(JSON.parse(doc))
    seen.length = 0
    expect(await registryJson(`${base}/moved`, 'application/json')).toEqual(JSON.parse(doc))
    expect(seen).toEqual([{ url: '/moved', encoding: 'gzip' }, { url: '/gzip', encoding: 'gzip' }])
  })

  it('gives nothing for a status other than 2xx, endless redirects, an encoding it does not ask for or a body that does not decode', async () => {
    expect(await registryJson(`${base}/missing`, 'application/json')).toBeUndefined()
    expect(await registryJson(`${base}/loop`, 'application/json')).toBeUndefined()
    expect(await registryJson(`${base}/brotli`, 'application/json')).toBeUndefined()
    expect(await registryJson(`${base}/broken`, 'application/json')).toBeUndefined()
    expect(await registryJson('http://127.0.0.1:9/nothing-listens', 'application/json')).toBeUndefined()
    expect(await registryJson('ftp://example.invalid/x', 'application/json')).toBeUndefined()
  })
})
