/**
 * Registry requests of the plugin, made with Node's `http`/`https` clients (keep-alive, a body
 * gunzipped when the registry compresses it): about twice as fast as `fetch` for many small
 * requests, and without loading undici into pnpm's process (measured: 1,147 metadata requests
 * to a stand-in on 127.0.0.1, 72-127 ms against 134-331 ms).
 *
 * A registry tarball downloaded into the store: the body is piped into the native
 * `createTarballWriter`, which verifies the integrity over the streamed bytes, extracts (a big
 * tarball while it downloads) and writes the store-index row. Any failure (an HTTP error, a
 * body cut short, a bad tarball) resolves to `undefined` with nothing written, for the caller
 * to hand the package to pnpm, which has the credentials, proxies and retries.
 *
 * Every request is bounded as pnpm bounds its own: pnpm's `fetchTimeout` of inactivity, at most
 * `networkConcurrency` connections to a registry (kept alive, its host looked up once), and no
 * body held past what pnpm holds in memory (`MAX_BODY_BYTES`), counted after decoding, but for
 * one tarball at a time that says upfront it is bigger (`MAX_BIG_TARBALL_BYTES`).
 *
 * Also what the plugin's requests share: when the registry can be asked from here, which
 * registry a package comes from, and how many requests are in flight at once.
 */
import dns from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { pipeline, type Readable } from 'node:stream'
import { createGunzip } from 'node:zlib'
import * as cas from '../api/index.js'

const USER_AGENT = '@cas/native pnpmfile'

/** How the plugin's requests behave, from pnpm's settings (`networkOf`). */
export interface NetworkSettings {
  /**
   * pnpm's `fetchTimeout` (ms): how long a request may wait for its next byte (the connection,
   * the headers, each chunk of the body); 0: no limit.
   */
  timeout: number
  /** Connections open at once to one registry: pnpm's `networkConcurrency`. */
  maxSockets: number
}

/** pnpm's default `fetchTimeout`. */
const DEFAULT_FETCH_TIMEOUT_MS = 60_000

/**
 * The plugin's network settings under pnpm's `config` (as `hooks.updateConfig` gets it).
 * pnpm's `fetchTimeout` is an inactivity limit, as its undici dispatcher applies it (the
 * connect, headers and body timeouts all take it), not a limit on the whole request. pnpm's
 * `fetchRetries` and its backoff settings are not used: the plugin never retries, a failed
 * request hands its work to pnpm, which retries under them.
 */
export function networkOf (config: Record<string, unknown>): NetworkSettings {
  const timeout = config.fetchTimeout
  return {
    timeout: typeof timeout === 'number' && Number.isFinite(timeout) && timeout >= 0 ? timeout : DEFAULT_FETCH_TIMEOUT_MS,
    maxSockets: networkConcurrencyOf(config),
  }
}

/** Settings for a request made without pnpm's (tests, tools). */
const DEFAULT_NETWORK: NetworkSettings = networkOf({})

/** How long a host's addresses are reused: an install's length, well within what DNS records live. */
const DNS_CACHE_MS = 5 * 60_000

/**
 * A `lookup` for sockets that asks the resolver once per host, however many connections open
 * at once: a resolver may stall when many lookups are in flight (one here stalled ~5 s past 12),
 * and every connection of a pool goes to the same host anyway. A failed lookup is not kept.
 * `resolver`: how a host is looked up (dns.lookup's `all` form).
 */
export function createCachedLookup (resolver: (hostname: string, callback: (err: Error | null, addresses: dns.LookupAddress[]) => void) => void = (h, cb) => dns.lookup(h, { all: true }, cb)): LookupFunction {
  const cache = new Map<string, { at: number, addresses: Promise<dns.LookupAddress[]> }>()
  return (hostname, options, callback) => {
    let entry = cache.get(hostname)
    if (entry == null || Date.now() - entry.at > DNS_CACHE_MS) {
      const addresses = new Promise<dns.LookupAddress[]>((resolve, reject) => resolver(hostname, (err, found) => err != null ? reject(err) : resolve(found)))
      entry = { at: Date.now(), addresses }
      cache.set(hostname, entry)
      addresses.catch(() => { if (cache.get(hostname)?.addresses === addresses) cache.delete(hostname) })
    }
    entry.addresses.then((all) => {
      const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family
      const wanted = family === 4 || family === 6 ? all.filter((a) => a.family === family) : all
      if (wanted.length === 0) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }), '', 0)
      } else if (options.all === true) {
        (callback as unknown as (err: null, addresses: dns.LookupAddress[]) => void)(null, wanted)
      } else {
        callback(null, wanted[0].address, wanted[0].family)
      }
    }, (err: NodeJS.ErrnoException) => callback(err, '', 0))
  }
}

const lookup = createCachedLookup()

/**
 * One pool of kept-alive connections per registry (and per connection limit), as pnpm keeps one
 * dispatcher per origin: connections are reused across requests, at most `maxSockets` open at
 * once, the host looked up once. Idle sockets do not keep the process alive.
 */
const agents = new Map<string, http.Agent>()
function agentFor (target: URL, network: NetworkSettings): http.Agent {
  const key = `${target.protocol}//${target.host} ${network.maxSockets}`
  let agent = agents.get(key)
  if (agent == null) {
    const options = { keepAlive: true, maxSockets: network.maxSockets, lookup }
    agent = target.protocol === 'https:' ? new https.Agent(options) : new http.Agent(options)
    agents.set(key, agent)
  }
  return agent
}

/**
 * Registries that let a request time out in this process: the plugin asks them nothing more,
 * and leaves their requests to pnpm at once, which has its own retries (else every stalled
 * request would cost a whole timeout once here before pnpm's own attempts).
 */
const stalled = new Set<string>()

/** An answer: its status, its declared length, and its body (gunzipped). */
export interface RegistryResponse {
  status: number
  contentLength: number | null
  body: Readable
}

/** How many redirects a request follows, as `fetch` would (registries may redirect downloads). */
const MAX_REDIRECTS = 5

/** pnpm's error for a request that waited `timeout` ms for a byte. */
function timeoutError (url: string, timeout: number): Error {
  return Object.assign(new Error(`GET ${url}: timed out, no data received for ${timeout}ms`), { code: 'ERR_PNPM_FETCH_TIMEOUT' })
}

/**
 * A GET of `url`, redirects followed; rejects when no answer comes within `network.timeout` of
 * inactivity (or `signal` aborts), and on a body it cannot decode. The body errors when it
 * stalls as long.
 */
export async function registryGet (url: string, headers: Record<string, string>, signal?: AbortSignal, network: NetworkSettings = DEFAULT_NETWORK): Promise<RegistryResponse> {
  for (let redirects = 0; ; redirects++) {
    const res = await getOnce(url, headers, signal, network)
    if (res.location == null || redirects === MAX_REDIRECTS) return res
    res.body.resume()
    url = new URL(res.location, url).href
  }
}

async function getOnce (url: string, headers: Record<string, string>, signal: AbortSignal | undefined, network: NetworkSettings): Promise<RegistryResponse & { location?: string }> {
  const target = new URL(url)
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error(`${url}: not an http(s) URL`)
  if (stalled.has(target.origin)) throw timeoutError(url, network.timeout)
  const client = target.protocol === 'https:' ? https : http
  return await new Promise((resolve, reject) => {
    const req = client.get(target, { agent: agentFor(target, network), headers: { 'user-agent': USER_AGENT, ...headers }, signal }, (res) => {
      const encoding = res.headers['content-encoding'] ?? 'identity'
      if (encoding !== 'identity' && encoding !== 'gzip') {
        res.destroy()
        reject(new Error(`${url}: content-encoding ${encoding}`))
        return
      }
      const length = Number(res.headers['content-length'])
      const status = res.statusCode ?? 0
      resolve({
        status,
        location: [301, 302, 303, 307, 308].includes(status) ? res.headers.location : undefined,
        contentLength: encoding === 'identity' && Number.isFinite(length) ? length : null,
        body: encoding === 'gzip' ? pipeline(res, createGunzip(), () => {}) : res,
      })
    })
    // The socket's inactivity: from the connection on (a queued request has no socket yet),
    // through the headers and every chunk of the body.
    if (network.timeout > 0) {
      req.setTimeout(network.timeout, () => {
        stalled.add(target.origin)
        req.destroy(timeoutError(url, network.timeout))
      })
    }
    req.on('error', reject)
  })
}

/**
 * The most bytes of an answer the plugin holds: pnpm keeps a download in memory up to 64 MiB
 * (past it, it writes it to a temporary file). A bigger answer, or one that inflates past it
 * (a gzip bomb), is left to pnpm; no registry document or tarball in use comes near it (the
 * biggest full metadata, next's, is about 21 MB).
 */
export const MAX_BODY_BYTES = 64 * 1024 * 1024

/**
 * The most bytes a tarball may have when its answer says so upfront (`content-length`): pnpm
 * writes such a download to a temporary file; the native writer holds its compressed bytes
 * (it checks the integrity over them at the end), so these are read one at a time
 * (`oneBigAtATime`) and never past the length they declared. The biggest tarballs in use
 * (`@iconify/json`, some 100 MB) fit; a bigger one is left to pnpm.
 */
export const MAX_BIG_TARBALL_BYTES = 512 * 1024 * 1024

/** The end of the queue of big tarballs: each waits for the one before it to be read. */
let bigQueue: Promise<void> = Promise.resolve()

/** Waits for the big tarballs before it; the function returned lets the next one go. */
async function oneBigAtATime (): Promise<() => void> {
  let release!: () => void
  const before = bigQueue
  bigQueue = new Promise((resolve) => { release = resolve })
  await before
  return release
}

/** The body, all of it, or `undefined` once it grows past `max` bytes (the rest is not read). */
async function readBounded (body: Readable, max: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = []
  let received = 0
  for await (const chunk of body) {
    received += (chunk as Buffer).byteLength
    if (received > max) {
      body.destroy()
      return undefined
    }
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks, received)
}

/**
 * A JSON document from the registry, or `undefined` for anything but a 2xx answer with one
 * (a document past `MAX_BODY_BYTES` included).
 */
export async function registryJson (url: string, accept: string, signal?: AbortSignal, network?: NetworkSettings): Promise<unknown> {
  try {
    const res = await registryGet(url, { accept, 'accept-encoding': 'gzip' }, signal, network)
    if (res.status < 200 || res.status > 299) {
      res.body.resume()
      return undefined
    }
    const text = await readBounded(res.body, MAX_BODY_BYTES)
    return text == null ? undefined : JSON.parse(text.toString('utf8'))
  } catch {
    return undefined
  }
}

export interface RegistryDownload {
  url: string
  integrity: string
  /** The versioned store directory. */
  storeDir: string
  filesIndexFile: string
  /** pnpm's setting; its default (4 GiB) when not given. */
  maxTarballUnpackedSize?: number
  appendManifest?: Record<string, unknown>
  ignoreFilePattern?: string
  onStart?: (totalSize: number | null, attempt: number) => void
  onProgress?: (downloaded: number) => void
  /** pnpm's network settings (`networkOf`); pnpm's defaults when not given. */
  network?: NetworkSettings
  /** Whose rows to write: the running pnpm's (`tarballRowsOf`). */
  compat: cas.StoreCompat
}

/** Settings under which a request needs more than Node's clients give (credentials, proxies, certificates). */
const NETWORK_SETTINGS = ['httpProxy', 'httpsProxy', 'proxy', 'ca', 'cafile', 'cert', 'key', 'localAddress'] as const

/** Why the registry cannot be asked from here (`undefined`: it can); pnpm asks it then. */
export function fetchUnsupported (config: Record<string, unknown>): string | undefined {
  if (config.offline === true) return '--offline'
  if (Object.keys((config.configByUri ?? {}) as object).length > 0) return 'registry credentials are configured'
  const set = NETWORK_SETTINGS.find((k) => config[k] != null && config[k] !== '')
  if (set != null) return `${set} is set`
  if (config.strictSsl === false) return 'strictSsl false'
  return undefined
}

/**
 * How many requests the plugin has in flight at once: pnpm's `networkConcurrency` when it is set
 * (a positive integer), else 16. pnpm's own default is higher; against this machine's npm
 * mirror 16 measured fastest (alotta's metadata: 2.9-3.2 s, against 5.1 s at 32 and 10 s at 64).
 */
export function networkConcurrencyOf (config: Record<string, unknown>): number {
  const set = config.networkConcurrency
  return typeof set === 'number' && Number.isInteger(set) && set >= 1 ? set : 16
}

/** The registry pnpm asks about `name`: its scope's, else the default one; with a trailing slash. */
export function registryOf (name: string, config: Record<string, unknown>): string {
  const byScope = (config.registriesByScope ?? {}) as Record<string, string>
  const scope = name.startsWith('@') ? name.slice(0, name.indexOf('/')) : undefined
  const registry = (scope != null ? byScope[scope] : undefined) ?? byScope.default ?? (config.registry as string | undefined) ?? 'https://registry.npmjs.org/'
  return registry.endsWith('/') ? registry : `${registry}/`
}

/** pnpm 11's default `maxTarballUnpackedSize` (4 GiB), for when pnpm's settings do not say. */
const DEFAULT_MAX_TARBALL_UNPACKED_SIZE = 4 * 1024 ** 3

/**
 * The most bytes a tarball may have, its files totalling at most `maxUnpackedSize`: the native
 * extractor inflates a tarball to at most the limit plus as much again for tar headers (at
 * least 1 MiB; `extract::inflate_cap`), and a gzip stream is at most its data plus a little
 * (5 bytes a 64 KiB stored block, its header); 1 MiB more covers both. Never past
 * `MAX_BIG_TARBALL_BYTES` (nor past `MAX_BODY_BYTES` for an answer that does not say its length).
 */
export function maxTarballBytes (maxUnpackedSize: number): number {
  const inflated = maxUnpackedSize + Math.max(maxUnpackedSize, 1024 * 1024)
  return Math.min(MAX_BIG_TARBALL_BYTES, Math.ceil(inflated * 1.001) + 1024 * 1024)
}

/**
 * Tarballs whose download failed in this process: pnpm downloads them (with its retries), the
 * plugin does not try again (the native install's failure would otherwise be repeated by the
 * head start's fetcher, a gzip bomb read twice before pnpm reads it).
 */
const failedDownloads = new Set<string>()

/**
 * Downloads a tarball into the store through the native writer, chunk by chunk as it arrives;
 * `undefined`, with nothing written, when anything goes wrong (pnpm downloads it then): an
 * HTTP error, a stall past the timeout, a body cut short or longer than `maxTarballBytes`
 * (however it is encoded: counted as it inflates), a tarball that does not verify, a tarball
 * that failed before in this process.
 */
export async function downloadToStore (opts: RegistryDownload): Promise<cas.AddFilesFromTarballResult | undefined> {
  if (failedDownloads.has(opts.url)) return undefined
  const result = await downloadOnce(opts)
  if (result == null) failedDownloads.add(opts.url)
  return result
}

async function downloadOnce (opts: RegistryDownload): Promise<cas.AddFilesFromTarballResult | undefined> {
  const big: { next?: () => void } = {}
  try {
    return await downloadInto(opts, big)
  } finally {
    // Whatever the end, the next big tarball goes.
    big.next?.()
  }
}

/** `downloadOnce`'s work; `big.next` is set while it holds the turn of the big tarballs. */
async function downloadInto (opts: RegistryDownload, big: { next?: () => void }): Promise<cas.AddFilesFromTarballResult | undefined> {
  const maxUnpackedSize = opts.maxTarballUnpackedSize ?? DEFAULT_MAX_TARBALL_UNPACKED_SIZE
  const maxBytes = maxTarballBytes(maxUnpackedSize)
  let writer: cas.TarballWriter | undefined
  try {
    const res = await registryGet(opts.url, { 'accept-encoding': 'identity' }, undefined, opts.network)
    const size = res.contentLength
    if (res.status < 200 || res.status > 299 || (size != null && size > maxBytes)) {
      // An error's body is read to its end, so that the connection serves again; a body too big is not.
      if (size != null && size > maxBytes) res.body.destroy()
      else res.body.resume()
      return undefined
    }
    // Past what pnpm holds in memory only as long as it said it was, and one such at a time.
    const limit = size != null && size > MAX_BODY_BYTES ? size : Math.min(maxBytes, MAX_BODY_BYTES)
    if (limit > MAX_BODY_BYTES) big.next = await oneBigAtATime()
    writer = cas.createTarballWriter({
      storeDir: opts.storeDir,
      filesIndexFile: opts.filesIndexFile,
      integrity: opts.integrity,
      url: opts.url,
      appendManifest: opts.appendManifest,
      ignoreFilePattern: opts.ignoreFilePattern,
      maxTarballUnpackedSize: maxUnpackedSize,
      // The rows the running pnpm writes (with or without the manifest's gypfile).
      compat: opts.compat,
    })
    opts.onStart?.(size != null && size > 0 ? size : null, 1)
    let received = 0
    for await (const chunk of res.body) {
      received += (chunk as Buffer).byteLength
      if (received > limit) {
        res.body.destroy()
        writer.abort()
        return undefined
      }
      writer.write(chunk as Buffer)
    }
    if (size != null && size > 0 && received !== size) {
      writer.abort()
      return undefined
    }
    opts.onProgress?.(received)
  } catch {
    writer?.abort()
    return undefined
  }
  try {
    return await writer.end()
  } catch {
    return undefined
  }
}
