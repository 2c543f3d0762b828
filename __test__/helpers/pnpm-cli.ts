/**
 * Running the real pnpm 11 CLI (the `pnpm` devDependency) on Node 24 against the committed
 * fixture project, with nothing outside temp dirs touched and no network.
 */
import { spawn } from 'node:child_process'
import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fixturesDir } from './stores.js'

export const repoDir = path.join(import.meta.dirname, '..', '..')
export const projectFixture = path.join(fixturesDir, 'e2e-project')
/** The `pnpm` devDependency: the reference bundle pnpm's own functions are read from (`pnpm-bundle.ts`). */
export const referencePnpmDir = path.join(repoDir, 'node_modules', 'pnpm')
/**
 * The pnpm the CLI tests run: `CAS_TEST_PNPM` (an unpacked `pnpm` package, as
 * `scripts/pnpm-versions.mjs` fetches each release of the matrix), else the devDependency.
 */
export const pnpmPackageDir = process.env.CAS_TEST_PNPM != null && process.env.CAS_TEST_PNPM !== '' ? path.resolve(process.env.CAS_TEST_PNPM) : referencePnpmDir
/** The version of the pnpm the CLI tests run. */
export const testedPnpmVersion: string = JSON.parse(fs.readFileSync(path.join(pnpmPackageDir, 'package.json'), 'utf8')).version
/**
 * The Node that runs pnpm (and the other processes the specs start): the `node` devDependency's
 * binary (24), or `CAS_TEST_NODE` (`scripts/pnpm-versions.mjs --node`: pnpm 11's floor, 22.13).
 */
export const pnpmNode = process.env.CAS_TEST_NODE != null && process.env.CAS_TEST_NODE !== '' ? path.resolve(process.env.CAS_TEST_NODE) : path.join(repoDir, 'node_modules', 'node', 'bin', 'node')

export interface LockedPackage {
  name: string
  version: string
  integrity: string
  /** The store-index key pnpm 11 looks the package up by. */
  key: string
  tarball: string
}

/** The fixture lockfile's packages, each with its committed tarball. */
export function lockedPackages (): LockedPackage[] {
  const lockfile = fs.readFileSync(path.join(projectFixture, 'pnpm-lock.yaml'), 'utf8')
  const packagesSection = lockfile.split('\npackages:\n')[1].split('\nsnapshots:\n')[0]
  const out: LockedPackage[] = []
  for (const m of packagesSection.matchAll(/^ {2}'?((?:@[^/]+\/)?[^@\s']+)@([^'\s:]+)'?:\n {4}resolution: \{integrity: ([^}]+)\}/gm)) {
    const [, name, version, integrity] = m
    const file = `${name.replace('/', '+')}@${version}.tgz`
    const tarball = [path.join(projectFixture, 'tarballs', file), path.join(fixturesDir, 'tarballs', file)].find((p) => fs.existsSync(p))
    if (tarball == null) throw new Error(`no committed tarball for ${name}@${version}`)
    out.push({ name, version, integrity, key: `${integrity}\t${name}@${version}`, tarball })
  }
  return out
}

/**
 * A fresh copy of the fixture project (package.json, lockfile, pnpm-workspace.yaml) in `dir`.
 * `withPnpmfile`: plus the plugin's `.pnpmfile.cjs` (the README's guarded form of
 * `module.exports = require('@cas/native/pnpmfile')`), with the lockfile pnpm 11 wrote for it (the
 * same but for its `pnpmfileChecksum`, which a frozen install checks).
 */
export function copyProject (dir: string, opts: { withPnpmfile?: boolean } = {}): string {
  fs.mkdirSync(dir, { recursive: true })
  for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) {
    fs.copyFileSync(path.join(projectFixture, f), path.join(dir, f))
  }
  if (opts.withPnpmfile) {
    for (const f of ['pnpm-lock.yaml', '.pnpmfile.cjs']) {
      fs.copyFileSync(path.join(projectFixture, 'with-pnpmfile', f), path.join(dir, f))
    }
  }
  return dir
}

/**
 * A directory to put in NODE_PATH so that `require('@cas/native/…')` from a temp project
 * resolves to this checkout (as it would from the project's own node_modules once installed).
 */
export function nodePathWithThisPackage (dir: string): string {
  fs.mkdirSync(path.join(dir, '@cas'), { recursive: true })
  fs.symlinkSync(repoDir, path.join(dir, '@cas', 'native'), 'dir')
  return dir
}

/** A `pnpm` command in `dir` that runs the devDependency on Node 24 (for code that starts pnpm itself, as the explain command does). */
export function pnpmLauncher (dir: string): string {
  const launcher = path.join(dir, 'pnpm.sh')
  fs.writeFileSync(launcher, `#!/bin/sh\nexec "${pnpmNode}" "${path.join(pnpmPackageDir, 'bin', 'pnpm.mjs')}" "$@"\n`, { mode: 0o755 })
  return launcher
}

/** A pnpm package's CLI: `bin/pnpm.mjs` (pnpm 11), or `bin/pnpm.cjs` (pnpm 10). */
function pnpmBin (pnpmDir: string): string {
  const mjs = path.join(pnpmDir, 'bin', 'pnpm.mjs')
  return fs.existsSync(mjs) ? mjs : path.join(pnpmDir, 'bin', 'pnpm.cjs')
}

export interface PnpmRun {
  code: number | null
  stdout: string
  stderr: string
}

/** What every pnpm run here gets: a private HOME and XDG dirs under `sandbox`, no npm_config_* of the npm script running the tests. */
export function pnpmEnv (sandbox: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {
    PATH: `${path.dirname(pnpmNode)}${path.delimiter}${process.env.PATH ?? ''}`,
    HOME: path.join(sandbox, 'home'),
    XDG_CONFIG_HOME: path.join(sandbox, 'xdg-config'),
    XDG_DATA_HOME: path.join(sandbox, 'xdg-data'),
    XDG_CACHE_HOME: path.join(sandbox, 'xdg-cache'),
    XDG_STATE_HOME: path.join(sandbox, 'xdg-state'),
    TMPDIR: os.tmpdir(),
    ...extra,
  }
  for (const d of ['HOME', 'XDG_CONFIG_HOME', 'XDG_DATA_HOME', 'XDG_CACHE_HOME', 'XDG_STATE_HOME']) fs.mkdirSync(env[d], { recursive: true })
  return env
}

/**
 * Any pnpm command in `projectDir` with the store at `storeDir` (the unversioned dir: pnpm adds
 * `v11`), in a clean environment (`pnpmEnv`). Default: `--offline` with an unreachable
 * registry; with a registry URL: online against it. `query`: a command that takes none of
 * those options as flags (`ls`, `why`): the same settings as `--config.*`.
 */
export async function runPnpm (command: string[], opts: {
  projectDir: string
  storeDir: string
  sandbox: string
  pnpmDir?: string
  env?: Record<string, string>
  registry?: string
  query?: boolean
  /** pnpm's `--reporter` (`append-only` unless told). */
  reporter?: string
}): Promise<PnpmRun> {
  const pnpmDir = opts.pnpmDir ?? pnpmPackageDir
  const args = [
    pnpmBin(pnpmDir),
    ...command,
    // Another release than the reference: a project pinning pnpm (`packageManager`) must not
    // make it switch to the pinned one.
    ...(pnpmDir === pnpmPackageDir && pnpmPackageDir !== referencePnpmDir ? ['--config.pm-on-fail=ignore'] : []),
    ...(opts.query === true
      ? [
          `--config.registry=${opts.registry ?? 'http://127.0.0.1:9/'}`,
          ...(opts.registry == null ? ['--config.offline=true'] : []),
          `--config.store-dir=${opts.storeDir}`,
          `--config.cache-dir=${path.join(opts.sandbox, 'cache')}`,
        ]
      : [
          ...(opts.registry == null ? ['--offline', '--config.registry=http://127.0.0.1:9/'] : [`--config.registry=${opts.registry}`]),
          `--store-dir=${opts.storeDir}`,
          `--cache-dir=${path.join(opts.sandbox, 'cache')}`,
          '--config.update-notifier=false',
          `--reporter=${opts.reporter ?? 'append-only'}`,
        ]),
  ]
  return new Promise((resolve, reject) => {
    const child = spawn(pnpmNode, args, { cwd: opts.projectDir, env: pnpmEnv(opts.sandbox, opts.env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => { stdout += d })
    child.stderr.on('data', (d) => { stderr += d })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** `pnpm install --frozen-lockfile` (see `runPnpm`), plus `extraArgs`. */
export async function pnpmInstall (opts: Parameters<typeof runPnpm>[1] & { extraArgs?: string[] }): Promise<PnpmRun> {
  return runPnpm(['install', '--frozen-lockfile', ...(opts.extraArgs ?? [])], opts)
}

/**
 * pnpm's own state files, left out of the tree comparison: `.modules.yaml` and
 * `.pnpm-workspace-state-v1.json` record absolute paths (store, project, virtual store),
 * timestamps and the run's settings, not the installed packages; `.pnpm/lock.yaml` is a copy of
 * the project's lockfile (which differs by `pnpmfileChecksum` when the plugin is on), compared
 * with that lockfile instead (`expectSameInstall` in the spec).
 */
export const IGNORED_STATE_FILES = new Set([
  'node_modules/.modules.yaml',
  'node_modules/.pnpm-workspace-state-v1.json',
  'node_modules/.pnpm/lock.yaml',
])

/**
 * Every entry of `projectDir/node_modules` (relative path → type, permission bits, content hash,
 * symlink text), symlinks not followed. The project and store paths inside file contents (the
 * `.bin` shims hold absolute paths) are replaced by placeholders first.
 */
export function nodeModulesTree (projectDir: string, storeDir: string): string[] {
  const lines: string[] = []
  const walk = (rel: string): void => {
    const entries = fs.readdirSync(path.join(projectDir, rel), { withFileTypes: true })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const e of entries) {
      const r = `${rel}/${e.name}`
      if (IGNORED_STATE_FILES.has(r)) continue
      const abs = path.join(projectDir, r)
      const st = fs.lstatSync(abs)
      if (st.isSymbolicLink()) {
        lines.push(`${r} -> ${fs.readlinkSync(abs)}`)
      } else if (st.isDirectory()) {
        lines.push(`${r}/`)
        walk(r)
      } else {
        const text = fs.readFileSync(abs, 'latin1').split(projectDir).join('<project>').split(storeDir).join('<store>')
        lines.push(`${r} ${(st.mode & 0o777).toString(8)} ${crypto.createHash('sha256').update(text, 'latin1').digest('hex')}`)
      }
    }
  }
  walk('node_modules')
  return lines
}
