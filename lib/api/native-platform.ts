// Which prebuilt binary this process needs, named as napi-rs names the platform packages
// (`@cas/native-linux-x64-gnu`). Kept apart from `binding.ts`, whose import loads the binary:
// the pnpm plugin explains a missing binary with these names without loading anything.

import { readFileSync } from 'node:fs'

/** Every platform package is `@cas/native-<platform>`, whichever package depends on it (`@cas/native` or the pnpm plugin). */
export const PLATFORM_PACKAGE_PREFIX = '@cas/native-'

const ARCH: Record<string, string> = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32', armv7: 'arm' }

/** `x86_64-unknown-linux-gnu` → `linux-x64-gnu`, `aarch64-apple-darwin` → `darwin-arm64`, `x86_64-pc-windows-msvc` → `win32-x64-msvc`. */
function tripleToPlatform (triple: string): string {
  const [cpu, , os, abi] = triple.split('-')
  const arch = ARCH[cpu] ?? cpu
  if (os === 'linux') return `linux-${arch}-${abi?.startsWith('musl') ? 'musl' : 'gnu'}`
  if (os === 'darwin') return `darwin-${arch}`
  if (os === 'windows') return `win32-${arch}-${abi ?? 'msvc'}`
  return `${os}-${arch}`
}

export interface PackageJson {
  name: string
  version: string
  optionalDependencies?: Record<string, string>
  napi?: { targets?: string[] }
}

/**
 * The platforms with a prebuilt package: a published package lists them as optional
 * dependencies (`napi prepublish` and the plugin's pack script add them); a checkout has only
 * the `napi.targets` they come from.
 */
export function prebuiltPlatforms (pkg: PackageJson): string[] {
  const fromDeps = Object.keys(pkg.optionalDependencies ?? {})
    .filter((name) => name.startsWith(PLATFORM_PACKAGE_PREFIX))
    .map((name) => name.slice(PLATFORM_PACKAGE_PREFIX.length))
  return fromDeps.length > 0 ? fromDeps : (pkg.napi?.targets ?? []).map(tripleToPlatform)
}

/** napi-rs's `platformArchABI` naming of this process's platform: `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`. */
export function platformArchABI (): string {
  const { platform, arch } = process
  if (platform === 'linux') return `${platform}-${arch}-${isMusl() ? 'musl' : 'gnu'}`
  if (platform === 'win32') return `${platform}-${arch}-msvc`
  return `${platform}-${arch}`
}

/**
 * Whether this Linux runs on musl (else glibc), as napi-rs's generated loader (`index.js`)
 * decides it: the platform package named here must be the one the loader loads. pnpm's own
 * platform checks use detect-libc instead (`installable.ts`).
 */
export function isMusl (): boolean {
  try {
    return readFileSync('/usr/bin/ldd', 'utf8').includes('musl')
  } catch {
    // no ldd: ask Node's own report (what the generated loader does too)
  }
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined
  return report?.header?.glibcVersionRuntime === undefined
}
