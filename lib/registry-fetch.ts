/**
 * A registry tarball downloaded with Node's `fetch` into the store: the body is piped into the
 * native `createTarballWriter`, which verifies the integrity over the streamed bytes, extracts
 * (a big tarball while it downloads) and writes the store-index row. Any failure (an HTTP error,
 * a body cut short, a bad tarball) resolves to `undefined` with nothing written, for the caller
 * to hand the package to pnpm, which has the credentials, proxies and retries.
 *
 * Also what the plugin's requests share: when the registry can be asked from here, which
 * registry a package comes from, and how many requests are in flight at once.
 */
import * as cas from './index.js'

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
}

/** Settings under which a request needs more than Node's `fetch` gives (credentials, proxies, certificates). */
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

/** How many requests pnpm has in flight at once: its `networkConcurrency`, 16 by default. */
export function networkConcurrencyOf (config: Record<string, unknown>): number {
  return typeof config.networkConcurrency === 'number' ? config.networkConcurrency : 16
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

export async function downloadToStore (opts: RegistryDownload): Promise<cas.AddFilesFromTarballResult | undefined> {
  let writer: cas.TarballWriter | undefined
  try {
    writer = cas.createTarballWriter({
      storeDir: opts.storeDir,
      filesIndexFile: opts.filesIndexFile,
      integrity: opts.integrity,
      url: opts.url,
      appendManifest: opts.appendManifest,
      ignoreFilePattern: opts.ignoreFilePattern,
      maxTarballUnpackedSize: opts.maxTarballUnpackedSize ?? DEFAULT_MAX_TARBALL_UNPACKED_SIZE,
    })
    const res = await fetch(opts.url, { headers: { 'accept-encoding': 'identity', 'user-agent': '@cas/native pnpmfile' } })
    if (!res.ok) {
      await res.body?.cancel()
      writer.abort()
      return undefined
    }
    const size = Number(res.headers.get('content-length'))
    opts.onStart?.(Number.isFinite(size) && size > 0 ? size : null, 1)
    let received = 0
    for await (const chunk of res.body ?? []) {
      writer.write(chunk)
      received += chunk.byteLength
    }
    if (Number.isFinite(size) && size > 0 && received !== size) {
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
