/**
 * The native install's rules one by one, each checked against pnpm's own code (read out of the
 * pnpm devDependency's bundle: helpers/pnpm-bundle.ts) on the same input: which package wins a
 * bin name, the shell shim's text, the workspace state's digests, dependency paths, version
 * order. Seconds, where the end-to-end comparison with stock pnpm (native-install.spec.ts) takes
 * minutes; a rule changed here is checked here first.
 */
import crypto from 'node:crypto'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import util from 'node:util'
import { describe, expect, it } from 'vitest'
import { commandsThroughSkippedLinks, linkBins, resolveConflicts, type BinLinkOptions, type Command } from '../dist/plugin/install/bin-links.js'
import { cmdShim9ShShim, runtimeOf, shShim, UnsupportedShim } from '../dist/plugin/install/bin-shim.js'
import { shShimPrelude, SH_SHIM_PRELUDE } from '../dist/plugin/install/sh-shim-prelude.js'
import { manifestDigest, signatureOf, type FileSignature } from '../dist/plugin/install/install-state.js'
import { compareVersions } from '../dist/plugin/install/semver-range.js'
import { depPathToFilename, refToDepPath, type LockfileObject } from '../dist/plugin/install/virtual-store.js'
import { fetchPnpm } from '../scripts/pnpm-versions.mjs'
import { pnpmFunction } from './helpers/pnpm-bundle.js'
import { freshDir } from './helpers/stores.js'

/** The semver pnpm bundles (its bundle's `import_semver*`). */
const semver = createRequire(import.meta.url)('semver') as { compare: (a: string, b: string) => number, valid: (v: string) => string | null }
const semverImport = { default: semver }

describe('bin-name conflicts: one command per name in a .bin directory', () => {
  const pnpmChoice = pnpmFunction<(group: Command[], binsDir: undefined) => Command>('resolveCommandConflicts', { import_semver4: semverImport })
  const cmd = (name: string, pkgName: string, pkgVersion = '1.0.0'): Command =>
    ({ name, pkgName, pkgVersion, pkgDir: `/p/node_modules/${pkgName}`, target: `/p/node_modules/${pkgName}/bin/${name}` })

  it.each<[string, Command[], string]>([
    ['the package named like the command wins', [cmd('foo', 'zed'), cmd('foo', 'foo'), cmd('foo', 'bar')], 'foo@1.0.0'],
    ['npx belongs to npm', [cmd('npx', 'zzz'), cmd('npx', 'npm')], 'npm@1.0.0'],
    ['pn belongs to pnpm and @pnpm/exe (then the name sorting last)', [cmd('pn', 'pnpm'), cmd('pn', 'zzz'), cmd('pn', '@pnpm/exe')], 'pnpm@1.0.0'],
    ['else the package whose name sorts last', [cmd('x', 'b-pkg'), cmd('x', 'c'), cmd('x', 'a-pkg')], 'c@1.0.0'],
    ['sorted by localeCompare, not by code units', [cmd('x', 'Zed'), cmd('x', 'alpha')], 'Zed@1.0.0'],
    ['one package twice: the higher version', [cmd('x', 'p', '1.2.0'), cmd('x', 'p', '1.10.0'), cmd('x', 'p', '1.10.0-rc.1')], 'p@1.10.0'],
  ])('%s', (_, commands, winner) => {
    for (const order of [commands, [...commands].reverse()]) {
      const chosen = resolveConflicts(order)
      expect(chosen).toHaveLength(1)
      expect(`${chosen[0].pkgName}@${chosen[0].pkgVersion}`).toBe(winner)
      expect(chosen[0]).toBe(pnpmChoice(order, undefined))
    }
  })

  it('keeps every name once, in the order the names first come', () => {
    const chosen = resolveConflicts([cmd('b', 'x'), cmd('a', 'x'), cmd('b', 'b'), cmd('c', 'y')])
    expect(chosen.map((c) => `${c.name}:${c.pkgName}`)).toEqual(['b:b', 'a:x', 'c:y'])
  })
})

describe('pnpm 11.28.3\'s links to its working directory: where they would link commands, the install is left to it', () => {
  const integrity = { integrity: 'sha512-x' }
  const lockfile: LockfileObject = {
    importers: { '.': { optionalDependencies: { 'opt-aix': '1.0.0' } } },
    packages: {
      'opt-aix@1.0.0': { resolution: integrity, optional: true, peerDependencies: { host: '*' }, dependencies: { host: '1.0.0' } },
      'host@1.0.0': { resolution: integrity, optional: true },
    },
  }
  const skipped = new Set(['opt-aix@1.0.0', 'host@1.0.0'])
  const cwd = (manifest: object | undefined): string => {
    const dir = freshDir('skipped-links')
    if (manifest != null) fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest))
    return dir
  }

  it.each<[string, object | undefined, RegExp | undefined]>([
    ['a package without commands: nothing linked through them', { name: 'app' }, undefined],
    ['a bin', { name: 'app', bin: { app: 'cli.js' } }, /has commands/],
    ['an empty bin (pnpm warns of it)', { name: 'app', bin: {} }, /has commands/],
    ['directories.bin', { name: 'app', directories: { bin: 'bin' } }, /has commands/],
    ['no package.json (pnpm looks further)', undefined, /no package\.json/],
  ])('%s', (_, manifest, why) => {
    const reason = commandsThroughSkippedLinks(lockfile, skipped, cwd(manifest))
    if (why == null) expect(reason).toBeUndefined()
    else expect(reason).toMatch(why)
  })

  it('a project\'s skipped dependency whose resolved peer pnpm looks for in the working directory, where there is one', () => {
    const dir = cwd({ name: 'app' })
    fs.mkdirSync(path.join(dir, 'host'))
    expect(commandsThroughSkippedLinks(lockfile, skipped, dir)).toMatch(/^opt-aix@1\.0\.0, skipped: .* its peer host /)
  })
})

describe('a denied build\'s .bin before 11.28.10: the build step keeps the shims of its dependencies the first link wrote (with NODE_PATH) that it reads back', () => {
  /** sharp (denied) depending on semver (a command) in a virtual store at `root`: its `semver` shim as linked under `keptShimBytes`. */
  function deniedBuildShim (root: string, keptShimBytes: number): string {
    const virtualStoreDir = path.join(root, 'node_modules', '.pnpm')
    const sharp = path.join(virtualStoreDir, 'sharp@1.0.0', 'node_modules', 'sharp')
    const semverDir = path.join(virtualStoreDir, 'semver@7.0.0', 'node_modules', 'semver')
    fs.mkdirSync(sharp, { recursive: true })
    fs.writeFileSync(path.join(sharp, 'package.json'), JSON.stringify({ name: 'sharp', version: '1.0.0' }))
    fs.mkdirSync(path.join(semverDir, 'bin'), { recursive: true })
    fs.writeFileSync(path.join(semverDir, 'package.json'), JSON.stringify({ name: 'semver', version: '7.0.0', bin: { semver: 'bin/semver.js' } }))
    fs.writeFileSync(path.join(semverDir, 'bin', 'semver.js'), '#!/usr/bin/env node\n', { mode: 0o755 })
    const resolution = { integrity: 'sha512-x' }
    const lockfile: LockfileObject = { importers: { '.': {} }, packages: { 'sharp@1.0.0': { resolution, dependencies: { semver: '7.0.0' } }, 'semver@7.0.0': { resolution, hasBin: true } } }
    const planned = [
      { depPath: 'sharp@1.0.0', name: 'sharp', version: '1.0.0', filesIndexFile: '', targetDir: sharp, children: { semver: semverDir } },
      { depPath: 'semver@7.0.0', name: 'semver', version: '7.0.0', filesIndexFile: '', targetDir: semverDir, children: {} },
    ]
    // 11.28.0's shims.
    const opts: BinLinkOptions = {
      importers: [],
      virtualStoreDir,
      hoisted: { record: {}, publicLinks: {}, privateLinks: {}, privateAliasesWithBins: [] },
      publicHoistPattern: [],
      ignoreScripts: false,
      extendsNodePath: true,
      autoInstallPeers: true,
      throughBuildStep: new Set(['sharp@1.0.0']),
      shimQuoting: 'double',
      shimHelpers: 'command -p',
      shimBase: 'basedir',
      buildStepNodePath: 'dependencies',
      keptShimBytes,
    }
    linkBins(lockfile, planned, opts, 'before builds')
    return fs.readFileSync(path.join(sharp, 'node_modules', '.bin', 'semver'), 'utf8')
  }
  const withNodePath = (root: string, shim: string): boolean => shim.includes(path.join(root, 'node_modules', '.pnpm', 'node_modules'))

  it('11.28.0 reads back a shim under 4 KiB: kept where the paths are short, written again without NODE_PATH where they make it larger (the starter-next-app\'s sharp, not the monorepos\')', () => {
    const short = freshDir('kept-shim')
    const kept = deniedBuildShim(short, 4096)
    expect(withNodePath(short, kept)).toBe(true)
    expect(Buffer.byteLength(kept)).toBeLessThan(4096)
    const long = path.join(freshDir('rewritten-shim'), 'x'.repeat(120))
    const rewritten = deniedBuildShim(long, 4096)
    expect(withNodePath(long, rewritten)).toBe(false)
    // Under 11.28.1's 64 KiB the same shim is read back, and kept with its NODE_PATH, 4 KiB or more.
    const long64 = path.join(freshDir('kept-64k'), 'x'.repeat(120))
    const kept64 = deniedBuildShim(long64, 64 * 1024)
    expect(withNodePath(long64, kept64)).toBe(true)
    expect(Buffer.byteLength(kept64)).toBeGreaterThanOrEqual(4096)
  })
})

describe('the shell shim, byte for byte', () => {
  const cmdShim = pnpmFunction<(src: string, to: string, opts: object) => Promise<void>>('cmdShim', { fs6: fs, path11: path, path12: path })

  /**
   * pnpm's shim for `target` (whose text is `text`) in `binsDir`, as its bin linker asks for it
   * on POSIX: by the `cmdShim` given (the reference release's, or an older one's) with `options`.
   */
  async function pnpmShim (target: string, text: string, binsDir: string, nodePath: string[] | undefined, shim = cmdShim, options: object = { shShimDir: binsDir, createCmdFile: false }): Promise<string> {
    let written: string | undefined
    const promises = {
      readFile: async (file: string) => {
        if (file === target) return text
        throw Object.assign(new Error(`ENOENT: ${file}`), { code: 'ENOENT' })
      },
      writeFile: async (file: string, data: string) => { if (file === path.join(binsDir, 'cmd')) written = data },
      unlink: async () => {},
      chmod: async () => {},
      mkdir: async () => {},
    }
    await shim(target, path.join(binsDir, 'cmd'), { fs: { promises }, createPwshFile: false, nodePath, ...options })
    if (written == null) throw new Error('pnpm wrote no shim')
    return written
  }

  const pkgDir = '/p/node_modules/.pnpm/a@1.0.0/node_modules/a'
  const binsDir = '/p/node_modules/.bin'
  const nodePath = ['/p/node_modules/.pnpm/a@1.0.0/node_modules/a/node_modules', '/p/node_modules/.pnpm/a@1.0.0/node_modules', '/p/node_modules/.pnpm/node_modules']

  /** Shims of every kind of target: label, target in the package, its text, `NODE_PATH`. */
  const SHIM_CASES: Array<[string, string, string, string[] | undefined]> = [
    ['an env node shebang', 'bin/a.js', '#!/usr/bin/env node\nrequire("../")\n', undefined],
    ['a NODE_PATH', 'bin/a.js', '#!/usr/bin/env node\n', nodePath],
    ['env -S with arguments', 'cli.mjs', '#!/usr/bin/env -S node --experimental-vm-modules --no-warnings\n', undefined],
    ['an absolute program', 'bin/a', '#!/bin/sh\necho a\n', undefined],
    ['a shebang ending with CRLF', 'bin/a.js', '#!/usr/bin/env node\r\nx\r\n', undefined],
    ['blank lines before the shebang', 'bin/a.js', '\n\n  #!/usr/bin/env node\n', undefined],
    ['no shebang, a .js file', 'index.js', 'module.exports = 1\n', undefined],
    ['no shebang, a .sh file', 'run.sh', 'echo hi\n', undefined],
    ['no shebang, no extension: run as it is', 'bin/tool', 'binary', undefined],
    ['a quote in the path', "bin/it's.js", '#!/usr/bin/env node\n', undefined],
  ]

  it.each(SHIM_CASES)('%s', async (_, relative, text, nodePath) => {
    const target = path.join(pkgDir, relative)
    const ours = shShim(target, binsDir, runtimeOf(target, text), nodePath)
    expect(ours).toBe(await pnpmShim(target, text, binsDir, nodePath))
    expect(ours).toContain(`# cmd-shim-target=${target}\n`)
  })

  // Each `@zkochan/cmd-shim` out of the bundle of a release that has it, asked as its bin linker asks on POSIX (no PowerShell shim).
  it.each(SHIM_CASES.flatMap((c) => [['cmd-shim 9.0.7', '11.22.0', ...c], ['cmd-shim 9.0.6', '11.20.0', ...c]] as const))('as @zkochan/%s writes it (out of %s\'s bundle): %s', async (writer, release, _, relative, text, nodePath) => {
    const cmdShim9 = pnpmFunction<(src: string, to: string, opts: object) => Promise<void>>('cmdShim', { path14: path }, [], fetchPnpm(release))
    const target = path.join(pkgDir, relative)
    const written = await pnpmShim(target, text, binsDir, nodePath, cmdShim9, {})
    expect(cmdShim9ShShim(target, binsDir, runtimeOf(target, text), nodePath, writer)).toBe(written)
  })

  it.each(SHIM_CASES)('as pnpm 11.28.0 writes it (its own cmd-shim before `cd -P`, out of its bundle): %s', async (_, relative, text, nodePath) => {
    const cmdShim1128 = pnpmFunction<(src: string, to: string, opts: object) => Promise<void>>('cmdShim', { path6: path }, [], fetchPnpm('11.28.0'))
    const target = path.join(pkgDir, relative)
    // As 11.28.0's bin linker asks for it on POSIX.
    const written = await pnpmShim(target, text, binsDir, nodePath, cmdShim1128, { createCmdFile: false })
    expect(shShim(target, binsDir, runtimeOf(target, text), nodePath, 'double', 'command -p', 'basedir')).toBe(written)
  })

  it.each(SHIM_CASES)('as pnpm 11.27.1 writes it (its first own cmd-shim, no PATH guard, out of its bundle): %s', async (_, relative, text, nodePath) => {
    const cmdShim1127 = pnpmFunction<(src: string, to: string, opts: object) => Promise<void>>('cmdShim', { path10: path }, [], fetchPnpm('11.27.1'))
    const target = path.join(pkgDir, relative)
    const written = await pnpmShim(target, text, binsDir, nodePath, cmdShim1127, { createCmdFile: false })
    expect(shShim(target, binsDir, runtimeOf(target, text), nodePath, 'double', 'command -p', 'basedir', 'pnpm 11.27.1')).toBe(written)
  })

  it('pnpm 11.27.1 writes no shim for a target not there yet (it reads the target first), nor does shShim as it', async () => {
    const cmdShim1127 = pnpmFunction<(src: string, to: string, opts: object) => Promise<void>>('cmdShim', { path10: path }, [], fetchPnpm('11.27.1'))
    const target = path.join(pkgDir, 'bin/a.js')
    // Asked for another target than the one whose text it can read.
    const asked = (src: string, to: string, opts: object): Promise<void> => cmdShim1127(`${src}.gone`, to, opts)
    await expect(pnpmShim(target, '', binsDir, undefined, asked, { createCmdFile: false })).rejects.toMatchObject({ code: 'ENOENT' })
    const missing = { ...runtimeOf(target, ''), missing: 'ENOENT' }
    expect(() => shShim(target, binsDir, missing, undefined, 'double', 'command -p', 'basedir', 'pnpm 11.27.1')).toThrow(UnsupportedShim)
  })

  it('11.28.1\'s and 11.28.2\'s prelude: each helper through `command -p`, no `run_helper`, the rest as the newest\'s', () => {
    const prelude = shShimPrelude('command -p')
    expect(prelude).not.toContain('run_helper')
    // The line those releases' bin linker looks for to take a shim as its own and current.
    expect(prelude).toContain('  target=$(command -p readlink "$link")\n')
    expect(prelude).toContain('case `command -p uname -a` in\n')
    expect(prelude.startsWith(SH_SHIM_PRELUDE.slice(0, SH_SHIM_PRELUDE.indexOf('# A helper the default path lacks')))).toBe(true)
    expect(prelude.endsWith(SH_SHIM_PRELUDE.slice(SH_SHIM_PRELUDE.indexOf('  *CYGWIN*|*MINGW*|*MSYS*)')))).toBe(true)
    expect(shShimPrelude('run_helper')).toBe(SH_SHIM_PRELUDE)
  })
})

describe('the workspace state\'s digests', () => {
  const pnpmDigest = pnpmFunction<(value: unknown) => string>('manifestDigest', { crypto13: crypto })

  it.each<[string, unknown]>([
    ['an empty object', {}],
    ['an empty array', []],
    ['null', null],
    ['booleans', [true, false]],
    ['numbers as JS prints them', [0, -0, 1.5, 1e21, 2 ** 53]],
    ['texts by their UTF-8 bytes', ['', 'a', 'é', '😀']],
    ['keys in any order', { b: 1, a: 2 }],
    ['undefined members left out, null kept', { a: undefined, b: null }],
    ['undefined items in arrays', [undefined, null]],
    ['keys sorted by UTF-8 bytes, not code units', { '\uFF01': 1, '\u{1F600}': 2, B: 3, a: 4, Ä: 5 }],
    ['a manifest', { name: 'project', version: '1.0.0', private: true, dependencies: { lodash: '^4.17.21' }, devDependencies: {}, engines: { node: '>=20' }, files: ['dist'] }],
  ])('%s: pnpm\'s digest', (_, value) => {
    expect(manifestDigest(value)).toBe(pnpmDigest(value))
  })

  it('is the tagged encoding, spelled out: { a: 1 }', () => {
    const length = (n: number): Buffer => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(n)); return b }
    const bytes = Buffer.concat([Buffer.from('{'), length(1), length(1), Buffer.from('a'), Buffer.from('#'), length(1), Buffer.from('1')])
    expect(manifestDigest({ a: 1 })).toBe(crypto.createHash('sha256').update(bytes).digest('hex').slice(0, 32))
    expect(manifestDigest({ a: 1 })).not.toBe(manifestDigest({ a: '1' }))
  })

  it('a file\'s signature: its times, size and digest, as pnpm records them', () => {
    const file = path.join(freshDir('install-rules'), 'pnpm-lock.yaml')
    fs.writeFileSync(file, 'lockfileVersion: \'9.0\'\n')
    const pnpmRead = pnpmFunction<(recorded: undefined, file: string) => { kind: string, signature?: FileSignature }>('fileDigestOf', { crypto13: crypto, fs143: fs, util }, ['DIGEST_LENGTH'])
    expect(pnpmRead(undefined, file)).toEqual({ kind: 'present', signature: signatureOf(file) })
    expect(signatureOf(path.join(path.dirname(file), 'missing'))).toBeUndefined()
  })
})

describe('dependency paths', () => {
  const pnpmFilename = pnpmFunction<(depPath: string, maxLength: number) => string>('depPathToFilename', { crypto8: crypto, import_semver10: semverImport })
  const pnpmRef = pnpmFunction<(ref: string, alias: string) => string | null>('refToRelative')
  const long = `terser-webpack-plugin@5.6.0(${['cssnano@6.1.2(postcss@8.5.10)', 'postcss@8.5.10', 'uglify-js@3.19.3', 'webpack@5.100.0(esbuild@0.28.2)'].join(')(')})`

  it.each([
    'lodash@4.17.21',
    '@babel/core@7.29.0',
    '@babel/helper-module-transforms@7.28.6(@babel/core@7.29.0)',
    'a@1.0.0(b@2.0.0(c@3.0.0))(d@4.0.0)',
    'Upper-Case@1.0.0',
    'pkg@1.0.0-rc.1+build.5',
    'a@1.0.0(patch_hash=0123abcd)',
    long,
  ])('%s: the directory pnpm names', (depPath) => {
    for (const maxLength of [120, 60, 40]) expect(depPathToFilename(depPath, maxLength)).toBe(pnpmFilename(depPath, maxLength))
  })

  // A known difference, left to virtual-store.ts's owners: pnpm hashes the name as it was
  // before its trailing dots became `+`, ours after. No semver version ends with a dot, so only
  // a lockfile with `trustLockfile` (which skips the version check) reaches it.
  it('a trailing dot: the hash of the name before it is escaped, as pnpm\'s', () => {
    expect(depPathToFilename('dots@1.0.0.', 120)).toBe(pnpmFilename('dots@1.0.0.', 120))
  })

  it.each<[string, string, string]>([
    ['foo', '1.0.0', 'foo@1.0.0'],
    ['foo', '1.0.0(react@18.2.0)', 'foo@1.0.0(react@18.2.0)'],
    ['foo', '1.0.0(@types/node@20.0.0)', 'foo@1.0.0(@types/node@20.0.0)'],
    ['alias', 'real@1.0.0', 'real@1.0.0'],
    ['alias', '@scope/real@1.0.0(peer@1.0.0)', '@scope/real@1.0.0(peer@1.0.0)'],
    ['foo', 'https://example.com/foo@1.0.0.tgz', 'foo@https://example.com/foo@1.0.0.tgz'],
  ])('%s: %s is %s, as pnpm reads it', (alias, ref, depPath) => {
    expect(refToDepPath(alias, ref)).toBe(depPath)
    expect(pnpmRef(ref, alias)).toBe(depPath)
  })

  it('a link: ref names no package (pnpm has none; the plan finds none under that path)', () => {
    expect(refToDepPath('foo', 'link:../foo')).toBe('foo@link:../foo')
    expect(pnpmRef('link:../foo', 'foo')).toBeNull()
  })
})

describe('version order', () => {
  // Ascending, by semver's precedence rules.
  const ascending = ['0.0.1', '0.1.0', '1.0.0-alpha', '1.0.0-alpha.1', '1.0.0-alpha.beta', '1.0.0-beta', '1.0.0-beta.2', '1.0.0-beta.11', '1.0.0-rc.1', '1.0.0', '1.0.1', '1.2.0', '1.10.0', '2.0.0-0', '2.0.0']

  it('orders every pair as semver.compare does (which pnpm uses)', () => {
    for (const [i, a] of ascending.entries()) {
      for (const [j, b] of ascending.entries()) {
        expect(compareVersions(a, b), `${a} vs ${b}`).toBe(Math.sign(i - j))
        expect(semver.compare(a, b)).toBe(Math.sign(i - j))
      }
    }
  })

  it('leaves build metadata out', () => {
    expect(compareVersions('1.0.0+a', '1.0.0+b')).toBe(0)
    expect(compareVersions('1.0.0-rc.1+b', '1.0.0-rc.1')).toBe(0)
  })

  it('refuses a version that is none, each time, as semver.compare does (versions are parsed once)', () => {
    for (let round = 0; round < 2; round++) expect(() => compareVersions('1.0.0', 'next')).toThrow(/Invalid Version: next/)
    expect(() => semver.compare('1.0.0', 'next')).toThrow(/Invalid Version: next/)
  })
})
