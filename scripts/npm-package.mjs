/**
 * A package from the registry npm is configured with, unpacked into an ignored folder of this
 * repository (`.tools/…`): the scripts' tools (pnpm releases, Node binaries), which a CI machine
 * has only as the repository's files fetch them.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/** `dest`, holding `name@version`'s files: fetched with `npm pack` and unpacked when it is not there yet. */
export function npmPackage (name, version, dest) {
  if (fs.existsSync(path.join(dest, 'package.json'))) return dest
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), `${name.replace('/', '+')}-${version}-`))
  try {
    const packed = spawnSync('npm', ['pack', `${name}@${version}`, '--silent', '--pack-destination', staging], { encoding: 'utf8', shell: process.platform === 'win32' })
    if (packed.status !== 0) throw new Error(`npm pack ${name}@${version} failed:\n${packed.stderr}`)
    const tarball = path.join(staging, packed.stdout.trim().split('\n').at(-1))
    fs.mkdirSync(path.join(staging, 'out'))
    const untar = spawnSync('tar', ['-xzf', tarball, '-C', path.join(staging, 'out')], { encoding: 'utf8' })
    if (untar.status !== 0) throw new Error(`unpacking ${tarball} failed:\n${untar.stderr}`)
    const unpacked = path.join(staging, 'out', 'package')
    const { version: got } = JSON.parse(fs.readFileSync(path.join(unpacked, 'package.json'), 'utf8'))
    // (Node's packages write theirs with a `v`.)
    if (got.replace(/^v/, '') !== version) throw new Error(`npm pack ${name}@${version} gave ${name} ${got}`)
    fs.mkdirSync(path.dirname(dest), { recursive: true })
    fs.renameSync(unpacked, dest)
    return dest
  } finally {
    fs.rmSync(staging, { recursive: true, force: true })
  }
}
