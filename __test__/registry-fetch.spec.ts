/**
 * The plugin's registry requests (lib/plugin/registry-fetch.ts), against a server on 127.0.0.1: what
 * `fetch` did for them before (redirects followed, gzip decoded), what makes an answer count
 * as none, and the bounds pnpm puts on its own requests: `fetchTimeout`, connections kept alive
 * and no more than `networkConcurrency` of them, each host looked up once, memory (issue 22,
 * items 4, 6 and 9).
 */
import { execFile } from 'node:child_process'
import crypto from 'node:crypto'
import type { LookupAddress } from 'node:dns'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import path from 'node:path'
import { Readable } from 'node:stream'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpmfile from '../dist/plugin/pnpmfile.js'
import { createCachedLookup, downloadToStore, maxTarballBytes, MAX_BIG_TARBALL_BYTES, MAX_BODY_BYTES, networkOf, registryGet, registryJson } from '../dist/plugin/registry-fetch.js'
import { freshStoreDir } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'

/** A server on 127.0.0.1 and its base URL; closed (its connections too) after the file's tests. */
async function listen (server: net.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  afterAll(() => { (server as http.Server).closeAllConnections?.(); server.close() })
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

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

describe('pnpm\'s fetchTimeout (issue 22, item 9)', () => {
  const network = { timeout: 200, maxSockets: 4 }

  it('is read from pnpm\'s settings: its default 60 s, 0 for none; networkConcurrency for the connections', () => {
    expect(networkOf({})).toEqual({ timeout: 60_000, maxSockets: 16 })
    expect(networkOf({ fetchTimeout: 10_000, networkConcurrency: 3 })).toEqual({ timeout: 10_000, maxSockets: 3 })
    expect(networkOf({ fetchTimeout: 0 })).toEqual({ timeout: 0, maxSockets: 16 })
    expect(networkOf({ fetchTimeout: -1 })).toEqual({ timeout: 60_000, maxSockets: 16 })
  })

  it('a registry that accepts and then says nothing: the request fails after fetchTimeout, in pnpm\'s code, and its registry is asked nothing more', async () => {
    const base = await listen(net.createServer(() => {}))
    await expect(registryGet(`${base}/pkg`, {}, undefined, network)).rejects.toMatchObject({ code: 'ERR_PNPM_FETCH_TIMEOUT', message: `GET ${base}/pkg: timed out, no data received for 200ms` })
    // pnpm retries it; another attempt here would cost a whole timeout first.
    await expect(registryGet(`${base}/other`, {}, undefined, { ...network, timeout: 60_000 })).rejects.toMatchObject({ code: 'ERR_PNPM_FETCH_TIMEOUT' })
  }, 10_000)

  it('a body that stalls halfway: the download fails after fetchTimeout, nothing written', async () => {
    const base = await listen(http.createServer((_req, res) => { res.writeHead(200, { 'content-length': 1000 }).write(Buffer.alloc(10)) }))
    expect(await downloadToStore({ url: `${base}/a.tgz`, integrity: 'sha512-AAAA', storeDir: freshStoreDir('stall'), filesIndexFile: 'k', network })).toBeUndefined()
  }, 10_000)

  it('metadata (the supply-chain check) and the head start\'s fetcher use pnpm\'s setting', async () => {
    const base = await listen(net.createServer(() => {}))
    expect(await registryJson(`${base}/pkg`, 'application/json', undefined, network)).toBeUndefined()
    const other = await listen(net.createServer(() => {}))
    await pnpmfile.hooks.updateConfig({ fetchTimeout: 200 })
    const resolution = { tarball: `${other}/a/-/a-1.0.0.tgz`, integrity: 'sha512-AAAA' }
    expect(await pnpmfile.fetchers[0].fetch({ storeDir: freshStoreDir('fetcher-timeout') }, resolution, { filesIndexFile: 'k' })).toEqual({ delegate: resolution })
  }, 10_000)
})

describe('connections (issue 22, item 4)', () => {
  it('at most maxSockets connections to a registry, kept alive and reused', async () => {
    const sockets = new Set<string>()
    const server = http.createServer((req, res) => {
      sockets.add(`${req.socket.remotePort}`)
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 20)
    })
    const base = await listen(server)
    const network = { timeout: 5_000, maxSockets: 3 }
    const many = await Promise.all(Array.from({ length: 12 }, (_, i) => registryJson(`${base}/p${i}`, 'application/json', undefined, network)))
    expect(many).toEqual(many.map(() => ({})))
    expect(sockets.size).toBeLessThanOrEqual(3)
    for (let i = 0; i < 5; i++) await registryJson(`${base}/again${i}`, 'application/json', undefined, network)
    expect(sockets.size).toBeLessThanOrEqual(3)
  })

  it('connects by name, the host looked up once however many connections open at once', async () => {
    const server = http.createServer((_req, res) => res.writeHead(200).end('{"ok":true}'))
    const base = (await listen(server)).replace('127.0.0.1', 'localhost')
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => registryJson(`${base}/p${i}`, 'application/json', undefined, { timeout: 5_000, maxSockets: 8 })))
    expect(answers).toEqual(answers.map(() => ({ ok: true })))

    let asked = 0
    let fail = true
    const lookup = createCachedLookup((_host, callback) => {
      asked++
      setTimeout(() => fail
        ? callback(Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' }), [])
        : callback(null, [{ address: '::1', family: 6 }, { address: '127.0.0.1', family: 4 }]), 5)
    })
    const ask = (options: object) => new Promise<unknown>((resolve) => lookup('registry.test', options as any, (err, address, family) => resolve(err != null ? (err as NodeJS.ErrnoException).code : { address, family })))
    // A failed lookup is not kept.
    expect(await ask({})).toBe('EAI_AGAIN')
    fail = false
    const all = await Promise.all(Array.from({ length: 20 }, () => ask({})))
    expect(all).toEqual(all.map(() => ({ address: '::1', family: 6 })))
    expect(asked).toBe(2)
    expect(await ask({ family: 4 })).toEqual({ address: '127.0.0.1', family: 4 })
    expect(await new Promise((resolve) => lookup('registry.test', { all: true } as any, (_err, addresses) => resolve(addresses as unknown as LookupAddress[])))).toEqual([{ address: '::1', family: 6 }, { address: '127.0.0.1', family: 4 }])
    expect(asked).toBe(2)
  })
})

describe('memory (issue 22, item 6)', () => {
  /** 64 MiB of zeros, gzipped (64 KiB): `members` of them inflate to members * 64 MiB. */
  const member = gzipSync(Buffer.alloc(64 * 1024 * 1024), { level: 1 })
  let base = ''
  beforeAll(async () => {
    // Every answer a gzip bomb: `Content-Encoding: gzip` whose body inflates to 2 GiB.
    base = await listen(http.createServer((_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/octet-stream' })
      Readable.from(Array.from({ length: 32 }, () => member)).pipe(res)
    }))
  })

  /** `download-child.mjs` in a process of its own: what it got and its peak RSS. */
  async function inChild (...args: string[]): Promise<{ got: unknown, peakRss: number }> {
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(import.meta.dirname, 'helpers', 'download-child.mjs'), ...args])
    return JSON.parse(stdout)
  }

  // Stock pnpm 11.28.11 failed such an install at 0.4 GB RSS; the plugin reached 4.4 GB before.
  it('a tarball answered with a gzip bomb: nothing stored, the inflated body never held past its bound', async () => {
    const { got, peakRss } = await inChild('tarball', `${base}/a/-/a-1.0.0.tgz`, freshStoreDir('bomb'))
    console.log(`gzip bomb, tarball: peak RSS ${(peakRss / 1024 ** 2).toFixed(0)} MiB`)
    expect(got).toBeNull()
    expect(peakRss).toBeLessThan(400 * 1024 * 1024)
  })

  it('metadata answered with a gzip bomb: none, and as bounded', async () => {
    const { got, peakRss } = await inChild('json', `${base}/a`)
    console.log(`gzip bomb, metadata: peak RSS ${(peakRss / 1024 ** 2).toFixed(0)} MiB`)
    expect(got).toBeNull()
    expect(peakRss).toBeLessThan(400 * 1024 * 1024)
  })

  it('a tarball is bounded by what pnpm\'s maxTarballUnpackedSize lets it be, and by the most the plugin holds of one', () => {
    expect(maxTarballBytes(4 * 1024 ** 3)).toBe(MAX_BIG_TARBALL_BYTES)
    // The limit, as much again for tar headers, a little for gzip's framing.
    expect(maxTarballBytes(1024 * 1024)).toBeGreaterThan(2 * 1024 * 1024)
    expect(maxTarballBytes(1024 * 1024)).toBeLessThan(4 * 1024 * 1024)
  })

  it('a tarball that failed is not asked for again in the process: pnpm downloads it (the head start\'s fetcher after the native install, a bomb read once)', async () => {
    let requests = 0
    const server = await listen(http.createServer((_req, res) => { requests++; res.writeHead(200).end('not a tarball') }))
    const download = { url: `${server}/a.tgz`, integrity: 'sha512-AAAA', storeDir: freshStoreDir('failed-once'), filesIndexFile: 'k' }
    expect(await downloadToStore(download)).toBeUndefined()
    expect(await downloadToStore(download)).toBeUndefined()
    expect(requests).toBe(1)
  })

  // @iconify/json's tarball is some 100 MB: pnpm downloads such a one, and so does the plugin, when its length is said.
  it('a tarball past what pnpm holds in memory: stored when the answer says its length, left to pnpm when it does not', async () => {
    const big = tgz([{ name: 'package/package.json', content: '{"name":"big","version":"1.0.0"}' }, { name: 'package/data.bin', content: crypto.randomBytes(MAX_BODY_BYTES + 1024 * 1024) }])
    expect(big.length).toBeGreaterThan(MAX_BODY_BYTES)
    const integrity = `sha512-${crypto.createHash('sha512').update(big).digest('base64')}`
    const server = await listen(http.createServer((req, res) => {
      res.writeHead(200, req.url === '/said.tgz' ? { 'content-length': big.length } : {})
      res.end(big)
    }))
    const stored = await downloadToStore({ url: `${server}/said.tgz`, integrity, storeDir: freshStoreDir('big-said'), filesIndexFile: 'k' })
    expect([...stored!.filesMap.keys()].sort()).toEqual(['data.bin', 'package.json'])
    expect(await downloadToStore({ url: `${server}/unsaid.tgz`, integrity, storeDir: freshStoreDir('big-unsaid'), filesIndexFile: 'k' })).toBeUndefined()
  }, 60_000)

  it('a tarball whose declared length is past its bound is not read', async () => {
    // Only the start of it ever comes: reading it would wait for the rest.
    const big = await listen(http.createServer((_req, res) => { res.writeHead(200, { 'content-length': 10 * 1024 * 1024 }).write(Buffer.alloc(1024)) }))
    expect(await downloadToStore({ url: `${big}/a.tgz`, integrity: 'sha512-AAAA', storeDir: freshStoreDir('declared'), filesIndexFile: 'k', maxTarballUnpackedSize: 1024 })).toBeUndefined()
  }, 10_000)
})
