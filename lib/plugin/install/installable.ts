/**
 * Whether pnpm 11 installs a platform-specific package here, by its rule: each of the
 * package's `os`, `cpu` and `libc` lists (entries, or `!entry` to exclude) must accept one of
 * the platforms being installed for, which are `supportedArchitectures`'s (`current` standing
 * for this machine's) or else this machine's. `libc` counts only where it is known (Linux).
 * For an optional package that does not declare all three, pnpm reads what its name says
 * (`@esbuild/linux-x64`, `rollup-linux-x64-musl`): tokens between `-`, `_` and `.` naming an
 * os, a cpu or a libc fill in the lists it leaves out, if it declares any or its name names an
 * os. docs/native-install.md links pnpm's source.
 */
import { familySync } from 'detect-libc'
import { satisfies } from './semver-range.js'
import type { PackageSnapshot } from './virtual-store.js'

export interface SupportedArchitectures {
  os?: string[]
  cpu?: string[]
  libc?: string[]
}

/** This machine's libc as pnpm names it (`unknown` off Linux). */
let libc: string | undefined

function accepts (values: string[], list: Array<string | null> | string): boolean {
  const entries = (typeof list === 'string' ? [list] : list).filter((e): e is string => typeof e === 'string')
  if (entries.length === 1 && entries[0] === 'any') return true
  const excluded = entries.filter((e) => e.startsWith('!')).map((e) => e.slice(1))
  if (values.some((v) => excluded.includes(v))) return false
  return values.some((v) => entries.includes(v)) || excluded.length === entries.length
}

/** The platforms a package name's tokens stand for, by kind (pnpm's table). */
const OS_TOKENS: Record<string, string> = {
  aix: 'aix',
  android: 'android',
  darwin: 'darwin',
  macos: 'darwin',
  osx: 'darwin',
  freebsd: 'freebsd',
  linux: 'linux',
  netbsd: 'netbsd',
  openbsd: 'openbsd',
  openharmony: 'openharmony',
  sunos: 'sunos',
  win32: 'win32',
  windows: 'win32',
}
const CPU_TOKENS: Record<string, string> = {
  arm: 'arm',
  armv6: 'arm',
  armv7: 'arm',
  arm64: 'arm64',
  aarch64: 'arm64',
  ia32: 'ia32',
  loong64: 'loong64',
  mips64el: 'mips64el',
  ppc64: 'ppc64',
  ppc64le: 'ppc64',
  riscv64: 'riscv64',
  s390x: 's390x',
  x64: 'x64',
  amd64: 'x64',
  wasm32: 'wasm32',
}
const LIBC_TOKENS: Record<string, string> = { glibc: 'glibc', gnu: 'glibc', gnueabihf: 'glibc', musl: 'musl', musleabihf: 'musl' }

type Platform = Pick<PackageSnapshot, 'os' | 'cpu' | 'libc'>

/** What the tokens of `name` (its scope left out) say of each kind, where they say anything. */
function platformOfName (name: string): Platform {
  const tokens = name.slice(name.indexOf('/') + 1).toLowerCase().split(/[-_.]/)
  const pick = (table: Record<string, string>): string[] | undefined => {
    const values = [...new Set(tokens.filter((t) => Object.hasOwn(table, t)).map((t) => table[t]))]
    return values.length > 0 ? values : undefined
  }
  return { os: pick(OS_TOKENS), cpu: pick(CPU_TOKENS), libc: pick(LIBC_TOKENS) }
}

/** The platform pnpm checks a package against: its own, completed from its name if it is optional. */
function effectivePlatform (name: string, snapshot: PackageSnapshot, optional: boolean): Platform {
  if (!optional || (snapshot.os != null && snapshot.cpu != null && snapshot.libc != null)) return snapshot
  const inferred = platformOfName(name)
  const nothingInferred = inferred.os == null && inferred.cpu == null && inferred.libc == null
  const declares = snapshot.os != null || snapshot.cpu != null || snapshot.libc != null
  if (nothingInferred || (!declares && inferred.os == null)) return snapshot
  return { os: snapshot.os ?? inferred.os, cpu: snapshot.cpu ?? inferred.cpu, libc: snapshot.libc ?? inferred.libc }
}

/**
 * Whether pnpm installs the package `name` (its lockfile `snapshot`) on the platforms being
 * installed for; `optional`: whether pnpm holds it optional here (only optional dependency
 * edges reach it), which makes it read what the name says.
 */
export function installableHere (name: string, snapshot: PackageSnapshot, supported: SupportedArchitectures | undefined, optional: boolean): boolean {
  const current = (mine: string, wanted: string[] | undefined): string[] =>
    (wanted ?? ['current']).map((w) => w === 'current' ? mine : w)
  // pnpm's own answer (detect-libc at the release it bundles, 2.1.2): `unknown` where it cannot tell.
  libc ??= familySync() ?? 'unknown'
  const platform = effectivePlatform(name, snapshot, optional)
  return (platform.os == null || accepts(current(process.platform, supported?.os), platform.os)) &&
    (platform.cpu == null || accepts(current(process.arch, supported?.cpu), platform.cpu)) &&
    (platform.libc == null || libc === 'unknown' || accepts(current(libc, supported?.libc), platform.libc))
}

/**
 * The Node version pnpm checks `engines` against: its `nodeVersion` setting, else the Node it
 * runs on; `undefined` when pnpm is a single executable, which asks the `node` on PATH.
 */
export function enginesNodeVersion (configured: unknown): string | undefined {
  if (typeof configured === 'string') return configured
  try {
    if ((require('node:sea') as { isSea: () => boolean }).isSea()) return undefined
  } catch {}
  return process.version
}

/**
 * Whether `nodeVersion` meets the package's `engines` as pnpm checks them when it installs a
 * lockfile: `engines.node` only (pnpm passes no version of its own there); `undefined` when
 * this cannot tell (no version).
 */
export function enginesMet (snapshot: PackageSnapshot, nodeVersion: string | undefined): boolean | undefined {
  const range = snapshot.engines?.node
  if (typeof range !== 'string' || range === '') return true
  return nodeVersion == null ? undefined : satisfies(nodeVersion, range)
}

/**
 * `enginesMet` against one `nodeVersion`, each range decided once: a lockfile's packages share
 * a few ranges (the vite starter's 82 `engines.node` are 12 ranges), and semver parses the
 * range and the version again on every call.
 */
export function enginesChecker (nodeVersion: string | undefined): (snapshot: PackageSnapshot) => boolean | undefined {
  const byRange = new Map<string, boolean | undefined>()
  return (snapshot) => {
    const range = snapshot.engines?.node
    if (typeof range !== 'string') return enginesMet(snapshot, nodeVersion)
    if (!byRange.has(range)) byRange.set(range, enginesMet(snapshot, nodeVersion))
    return byRange.get(range)
  }
}

/**
 * Why pnpm refuses the project for its own `engines`, which it checks as it reads package.json
 * (`undefined`: it does not, or this can tell that it does not): a pnpm range this pnpm is out
 * of, always; a Node range, under `engineStrict`. Also what this cannot read there.
 */
export function projectEnginesRefused (engines: unknown, pnpmVersion: string, nodeVersion: string | undefined, engineStrict: boolean): string | undefined {
  if (engines == null || typeof engines !== 'object') return undefined
  const { node, pnpm } = engines as Record<string, unknown>
  const checks: Array<[string, string | undefined, unknown]> = [['pnpm', pnpmVersion, pnpm], ...(engineStrict ? [['node', nodeVersion, node] as [string, string | undefined, unknown]] : [])]
  for (const [engine, version, range] of checks) {
    if (range == null || range === '') continue
    const met = typeof range === 'string' && version != null ? satisfies(version, range) : undefined
    if (met !== true) return `the project's engines.${engine}, which pnpm checks first (ERR_PNPM_UNSUPPORTED_ENGINE)`
  }
  return undefined
}
