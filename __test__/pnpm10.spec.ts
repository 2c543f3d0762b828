/**
 * A project shared by pnpm 11 and pnpm 10 users (issue 26): the plugin added by pnpm 11, then
 * installed with pnpm 10 (`CAS_TEST_PNPM10`: an unpacked pnpm 10 package, which
 * `npm run test:pnpm-versions` fetches; skipped without it).
 *
 * pnpm 11 records a config dependency as a bare version in pnpm-workspace.yaml, its integrity in
 * the lockfile's first document; pnpm 10 reads only pnpm-workspace.yaml and wants the integrity
 * there (`<version>+<integrity>`), so it refuses the project before any plugin code runs
 * (ERR_PNPM_CONFIG_DEP_NO_INTEGRITY). With the integrity written there, which pnpm 11 reads
 * too, both install: pnpm 10 as it does without the plugin (one warning), pnpm 11 natively.
 */
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PLUGIN_NAME } from '../dist/plugin/config-dependency.js'
import { lockedPackages, runPnpm, type PnpmRun } from './helpers/pnpm-cli.js'
import { packedPackage, packPlugin, serveTarballs, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'

const pnpm10 = process.env.CAS_TEST_PNPM10 != null && process.env.CAS_TEST_PNPM10 !== '' ? path.resolve(process.env.CAS_TEST_PNPM10) : undefined

const expectOk = (run: PnpmRun): void => expect(run.code, `pnpm failed:\n${run.stdout}\n${run.stderr}`).toBe(0)

describe.skipIf(pnpm10 == null)('a project pnpm 11 added the plugin to, installed with pnpm 10', () => {
  let base: string
  let registry: TarballRegistry
  /** The project as pnpm 11 left it after `pnpm add --config` and an install. */
  let added: string

  beforeAll(async () => {
    base = freshDir('pnpm10')
    const plugin = packPlugin(path.join(base, 'packed'))
    registry = await serveTarballs([...plugin, ...lockedPackages().map((p) => packedPackage(p.tarball))])
    added = path.join(base, 'added')
    fs.mkdirSync(added)
    fs.writeFileSync(path.join(added, 'package.json'), JSON.stringify({ name: 'shared', version: '1.0.0', dependencies: { 'color-support': '1.1.3' } }))
    fs.writeFileSync(path.join(added, 'pnpm-workspace.yaml'), 'minimumReleaseAge: 0\n')
    const opts = { projectDir: added, storeDir: path.join(base, 'store11'), sandbox: path.join(base, 'sandbox-add'), registry: registry.url }
    expectOk(await runPnpm(['add', '--config', PLUGIN_NAME], opts))
    expectOk(await runPnpm(['install'], opts))
  })

  afterAll(async () => {
    await registry?.close()
  })

  /** A clone of the project, with `workspace` as its pnpm-workspace.yaml if given. */
  function clone (label: string, workspace?: string): string {
    const dir = path.join(base, label)
    fs.mkdirSync(dir)
    for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) fs.copyFileSync(path.join(added, f), path.join(dir, f))
    if (workspace != null) fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), workspace)
    return dir
  }

  async function install (dir: string, label: string, pnpmDir: string | undefined): Promise<PnpmRun & { trace: string }> {
    const traceFile = path.join(base, `${label}-trace.txt`)
    const run = await runPnpm(['install', '--frozen-lockfile'], {
      projectDir: dir,
      // A store directory that does not exist yet, where pnpm 10 once hung after refusing.
      storeDir: path.join(base, `${label}-store`),
      sandbox: path.join(base, `${label}-sandbox`),
      registry: registry.url,
      pnpmDir,
      env: { CAS_NATIVE_PNPMFILE_TRACE: traceFile },
    })
    return { ...run, trace: fs.existsSync(traceFile) ? fs.readFileSync(traceFile, 'utf8') : '' }
  }

  it('as pnpm 11 wrote it: pnpm 10 refuses the config dependency itself, before the plugin is loaded', async () => {
    expect(fs.readFileSync(path.join(added, 'pnpm-workspace.yaml'), 'utf8')).toContain(`'${PLUGIN_NAME}': 0.1.0\n`)
    // pnpm 10 hangs after this error when the store directory does not exist (its store's
    // workers stay up): an existing one shows the refusal alone.
    const dir = clone('as-added')
    fs.mkdirSync(path.join(base, 'as-added-store', 'v10', 'files'), { recursive: true })
    const run = await install(dir, 'as-added', pnpm10)
    expect(run.code).toBe(1)
    expect(run.stdout + run.stderr).toContain(`Your config dependency called "${PLUGIN_NAME}" doesn't have an integrity checksum`)
    expect(run.trace).toBe('')
    expect(fs.existsSync(path.join(dir, 'node_modules', 'color-support'))).toBe(false)
  })

  it('with the integrity in pnpm-workspace.yaml: pnpm 10 installs without the plugin (one warning), pnpm 11 natively, the file unchanged', async () => {
    const lockfile = fs.readFileSync(path.join(added, 'pnpm-lock.yaml'), 'utf8')
    const integrity = new RegExp(`'${PLUGIN_NAME}@0\\.1\\.0':\\n {4}resolution: \\{integrity: (\\S+)\\}`).exec(lockfile)![1]
    const workspace = `configDependencies:\n  '${PLUGIN_NAME}': 0.1.0+${integrity}\nminimumReleaseAge: 0\n`

    const ten = clone('inline-10', workspace)
    const run10 = await install(ten, 'inline-10', pnpm10)
    expectOk(run10)
    expect(run10.stdout).toMatch(/Done in .* using pnpm v10\./)
    expect((run10.stdout + run10.stderr).match(/inactive, pnpm installs without it: pnpm 10\.\S+ is not supported/g)).toHaveLength(1)
    expect(run10.trace).toMatch(/^inactive: pnpm 10\./m)
    expect(fs.existsSync(path.join(ten, 'node_modules', 'color-support', 'package.json'))).toBe(true)
    expect(fs.readFileSync(path.join(ten, 'pnpm-workspace.yaml'), 'utf8')).toBe(workspace)

    const eleven = clone('inline-11', workspace)
    const run11 = await install(eleven, 'inline-11', undefined)
    expectOk(run11)
    expect(run11.stdout).toContain('Already up to date')
    expect(run11.trace).toMatch(/^native install: 1 packages, /m)
    expect(fs.readFileSync(path.join(eleven, 'pnpm-workspace.yaml'), 'utf8')).toBe(workspace)
  })
})
