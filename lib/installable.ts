/**
 * Whether pnpm 11 installs a platform-specific package here, by its rule: each of the
 * package's `os`, `cpu` and `libc` lists (entries, or `!entry` to exclude) must accept one of
 * the platforms being installed for, which are `supportedArchitectures`'s (`current` standing
 * for this machine's) or else this machine's. `libc` counts only where it is known (Linux).
 * docs/native-install.md links pnpm's source.
 */
import { isMusl } from './native-platform.js'
import type { PackageSnapshot } from './virtual-store.js'

export interface SupportedArchitectures {
  os?: string[]
  cpu?: string[]
  libc?: string[]
}

/** This machine's libc as pnpm names it (`unknown` off Linux). */
let libc: string | undefined

function accepts (values: string[], list: string[] | string): boolean {
  const entries = (typeof list === 'string' ? [list] : list).filter((e) => typeof e === 'string')
  if (entries.length === 1 && entries[0] === 'any') return true
  const excluded = entries.filter((e) => e.startsWith('!')).map((e) => e.slice(1))
  if (values.some((v) => excluded.includes(v))) return false
  return values.some((v) => entries.includes(v)) || excluded.length === entries.length
}

export function installableHere (snapshot: PackageSnapshot, supported: SupportedArchitectures | undefined): boolean {
  const current = (mine: string, wanted: string[] | undefined): string[] =>
    (wanted ?? ['current']).map((w) => w === 'current' ? mine : w)
  libc ??= process.platform !== 'linux' ? 'unknown' : isMusl() ? 'musl' : 'glibc'
  return (snapshot.os == null || accepts(current(process.platform, supported?.os), snapshot.os)) &&
    (snapshot.cpu == null || accepts(current(process.arch, supported?.cpu), snapshot.cpu)) &&
    (snapshot.libc == null || libc === 'unknown' || accepts(current(libc, supported?.libc), snapshot.libc))
}
