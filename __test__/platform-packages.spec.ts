/**
 * The per-platform packages under npm/ against package.json `napi.targets`: one package per
 * target and one target per package (a package is a platform package when it names an `os` or
 * a `cpu`), each with the name, version, binary and `os`/`cpu`/`libc` fields npm uses to pick
 * the one optional dependency a machine installs.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parseTriple } from '@napi-rs/cli'
import { describe, expect, it } from 'vitest'

const repo = path.resolve(__dirname, '..')
const rootPkg = JSON.parse(readFileSync(path.join(repo, 'package.json'), 'utf8'))
const targets: string[] = rootPkg.napi.targets
const readPkg = (dir: string) => JSON.parse(readFileSync(path.join(repo, 'npm', dir, 'package.json'), 'utf8'))

const platformDirs = readdirSync(path.join(repo, 'npm'), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(path.join(repo, 'npm', d.name, 'package.json')))
  .map((d) => d.name)
  .filter((dir) => { const p = readPkg(dir); return p.os !== undefined || p.cpu !== undefined })

describe('npm/<platform>/package.json', () => {
  it('one platform package per napi target, and no other', () => {
    expect(platformDirs.sort()).toEqual(targets.map((t) => parseTriple(t).platformArchABI).sort())
  })

  it.each(targets)('%s: name, version, binary, os, cpu and libc', (triple) => {
    const { platformArchABI, platform, arch, abi } = parseTriple(triple)
    const binary = `${rootPkg.napi.binaryName}.${platformArchABI}.node`
    const pkg = readPkg(platformArchABI)
    expect(pkg).toMatchObject({
      name: `${rootPkg.name}-${platformArchABI}`,
      version: rootPkg.version,
      main: binary,
      files: [binary],
      os: [platform],
      cpu: [arch],
    })
    // npm's `libc` field: only Linux packages have one, naming the C library the binary needs.
    const libc = platform === 'linux' ? [{ gnu: 'glibc', musl: 'musl' }[abi as 'gnu' | 'musl']] : undefined
    expect(pkg.libc).toEqual(libc)
  })
})
