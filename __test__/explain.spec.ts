/**
 * The explain command on the real projects of `__test__/fixtures/projects/` (copies), with the
 * real pnpm 11 CLI giving its settings: every reason each would be left to pnpm for, and
 * nothing written. None has the plugin yet: each is judged as if it were added, and told to
 * add it. (A project with the plugin, installed natively: `pnpm-report.spec.ts`.)
 */
import fs from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { explainMain, pnpmSettings } from '../dist/plugin/explain-cli.js'
import { explain, formatExplanation } from '../dist/plugin/explain.js'
import { planInstall, type NativeInstallConfig } from '../dist/plugin/install/native-install.js'
import { nativeRelease, PNPM_RELEASES, type PnpmRelease } from '../dist/plugin/install/pnpm-releases.js'
import { StoreIndex } from '@pnpm/store.index'
import { pnpmEnv, pnpmLauncher } from './helpers/pnpm-cli.js'
import { fixturesDir, freshDir } from './helpers/stores.js'

/** The reasons' codes each fixture gets, in order (every one, not only the first). */
const EXPECTED: Record<string, string[]> = {
  astro: ['not-added', 'packages'],
  effect: ['not-added', 'packages'],
  nitro: ['not-added'],
  nuxt: ['not-added'],
  'nuxt-devtools': ['not-added'],
  'react-router': ['not-added'],
  rolldown: ['not-added', 'packages'],
  slidev: ['not-added'],
  'solid-start': ['not-added'],
  starlight: ['not-added'],
  'starter-angular-app': ['not-added'],
  'starter-express-ts': ['not-added'],
  'starter-next-app': ['not-added'],
  'starter-vite-react-ts': ['not-added'],
  sveltekit: ['not-added', 'packages'],
  tailwindcss: ['not-added'],
  'tanstack-query': ['not-added', 'outdated-lockfile'],
  'tanstack-store': ['not-added'],
  unocss: ['not-added'],
  vitest: ['not-added', 'packages'],
  'vue-core': ['not-added'],
  'vue-language-tools': ['not-added', 'packages'],
  vueuse: ['not-added', 'patches'],
}

/** Every file below `dir` (relative), sorted. */
function files (dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).sort()
}

describe('cas-native-explain on the fixture projects', () => {
  let base: string
  let pnpm: string

  beforeAll(() => {
    base = freshDir('explain')
    // pnpm 11 wants Node 24, which the tests' Node may not be.
    pnpm = pnpmLauncher(base)
  })

  it('lists the fixtures it expects', () => {
    expect(fs.readdirSync(path.join(fixturesDir, 'projects')).filter((f) => f !== 'README.md').sort()).toEqual(Object.keys(EXPECTED).sort())
  })

  it('pnpm\'s settings as captured: credentials dropped, settings keyed by package names whole (a catalog entry for js-tokens, an override of @auth/core)', () => {
    const dir = path.join(base, 'capture')
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'p', version: '1.0.0' }))
    fs.writeFileSync(path.join(dir, 'pnpm-workspace.yaml'), "catalog:\n  js-tokens: ^10.0.0\noverrides:\n  '@auth/core': 1.0.0\nallowBuilds:\n  keytar: false\n")
    fs.writeFileSync(path.join(dir, '.npmrc'), '//127.0.0.1:9/:_authToken=sekrit-123\n')
    const settings = pnpmSettings(dir, [pnpm], [], pnpmEnv(path.join(base, 'capture-sandbox')))
    if (typeof settings === 'string') throw new Error(settings)
    expect(settings.catalogs).toEqual({ default: { 'js-tokens': '^10.0.0' } })
    expect(settings.overrides).toEqual({ '@auth/core': '1.0.0' })
    expect(settings.allowBuilds).toEqual({ keytar: false })
    expect(JSON.stringify(settings)).not.toContain('sekrit-123')
  })

  for (const [fixture, codes] of Object.entries(EXPECTED)) {
    it(`${fixture}: ${codes.join(', ')}; nothing written`, async () => {
      const dir = path.join(base, fixture)
      fs.cpSync(path.join(fixturesDir, 'projects', fixture), dir, { recursive: true })
      const before = files(dir)
      let out = ''
      // The version a fixture pins is not downloaded: pnpm 11.28.11 answers.
      const env = pnpmEnv(path.join(base, `${fixture}-sandbox`))
      const code = await explainMain(['--pnpm', pnpm, dir, '--', '--config.pm-on-fail=ignore'], { out: (t) => { out += t }, env })
      expect(code, out).toBe(1)
      const listed = [...out.matchAll(/^\d+\. (.*)\n {3}To install natively: (.*)$/gm)]
      expect(listed, out).toHaveLength(codes.length)
      expect(out).toMatch(/^1\. @cas\/pnpm-plugin-native is not in this project's configDependencies$/m)
      expect(out).toContain(`left to pnpm, for ${codes.length} ${codes.length === 1 ? 'reason' : 'reasons'}:`)
      let json = ''
      expect(await explainMain(['--json', '--pnpm', pnpm, dir, '--', '--config.pm-on-fail=ignore'], { out: (t) => { json += t }, env })).toBe(1)
      const explanation = JSON.parse(json)
      expect(explanation.reasons.map((r: { code: string }) => r.code)).toEqual(codes)
      expect(explanation.pnpmVersion).toBe('11.28.11')
      expect(files(dir)).toEqual(before)
    })
  }
})

describe('explain: the verdict from pnpm\'s settings', () => {
  /** A project in a fresh dir: the e2e fixture's package.json and lockfile, its own settings. */
  function project (): string {
    const dir = freshDir('explain-unit')
    for (const f of ['package.json', 'pnpm-lock.yaml']) fs.copyFileSync(path.join(fixturesDir, 'e2e-project', f), path.join(dir, f))
    return dir
  }
  const settings = (dir: string, more: Partial<NativeInstallConfig> = {}): NativeInstallConfig => ({
    dir,
    lockfileDir: dir,
    workspaceDir: dir,
    frozenLockfile: true,
    hoistPattern: ['*'],
    publicHoistPattern: [],
    storeDir: path.join(dir, 'store'),
    userAgent: `pnpm/${PNPM_RELEASES.at(-1)!.version} npm/? node/v24.9.0 linux x64`,
    configDependencies: { '@cas/pnpm-plugin-native': '0.1.0+sha512-x' },
    peersSuffixMaxLength: 1000,
    ...more,
  })

  it('native: the packages it would lay out; under minimumReleaseAge, what the registry is asked at install time is a note', async () => {
    const dir = project()
    const e = await explain(settings(dir, { minimumReleaseAge: 1440 }))
    expect(e).toMatchObject({ native: true, packages: 9, reasons: [] })
    expect(e.notes[0]).toMatch(/^minimumReleaseAge: at install time the native install asks the registry for the release dates of the 9 packages/)
    expect(formatExplanation(e, '<dir>')).toMatch(/^native: @cas\/pnpm-plugin-native would lay out all 9 packages/m)
  })

  it('every settings reason, in the install\'s order, then the project\'s first (one that says the same as a setting\'s once); --offline under minimumReleaseAge is a reason', async () => {
    const dir = project()
    const e = await explain(settings(dir, { userAgent: 'pnpm/11.6.0', nodeLinker: 'hoisted', patchedDependencies: { a: 'p.patch' } }))
    expect(e.native).toBe(false)
    expect(e.reasons.map((r) => [r.code, r.reason])).toEqual([
      ['pnpm-version', `pnpm 11.6.0 is not one of the releases checked (11.7.0 to ${PNPM_RELEASES.at(-1)!.version})`],
      ['node-linker', 'nodeLinker hoisted'],
      ['patches', 'patchedDependencies differ from the lockfile'],
    ])
    // Judged as the newest writes it, but its builds are still 11.6.0's: pnpm runs one the cache lacks.
    const buildNote = async (more: Partial<NativeInstallConfig>): Promise<string | undefined> => (await explain(settings(dir, more))).notes.find((n) => n.startsWith('a build pnpm would run'))
    // None where no build is allowed and nothing is patched (user try: unplugin-auto-import, every build denied).
    expect(await buildNote({ userAgent: 'pnpm/11.6.0' })).toBeUndefined()
    expect(await buildNote({ allowBuilds: { mkdirp: true }, sideEffectsCacheRead: true, sideEffectsCacheWrite: true, unsafePerm: true })).toBe('a build pnpm would run (allowBuilds) or a patch it would apply: taken from pnpm\'s side-effects cache at install time, or run natively as pnpm runs it when the cache lacks it (a binding.gyp without an install script built with node-gyp, as pnpm builds it; a failing build fails the install as stock\'s does, or is skipped as there when its package is optional)')
    expect(await buildNote({ allowBuilds: { mkdirp: true }, ignoreScripts: true })).toBeUndefined()
    expect(await buildNote({ userAgent: 'pnpm/11.6.0', allowBuilds: { mkdirp: true } })).toMatch(/one the cache lacks leaves the install to pnpm: under pnpm 11\.6\.0 the native install leaves builds to pnpm/)
    expect((await explain(settings(dir, { offline: true, minimumReleaseAge: 1440 }))).reasons.map((r) => r.code)).toEqual(['release-age-registry'])
  })

  it('a build the side-effects cache lacks, or keeps as changing no file (pnpm builds it on every install), under a release whose builds are pnpm\'s: a reason, as the install gives it, read from the store; under the newest, which runs it natively, none', async () => {
    const dir = project()
    const older = settings(dir, { userAgent: 'pnpm/11.22.0 npm/? node/v24.9.0 linux x64', allowBuilds: { mkdirp: true }, sideEffectsCacheRead: true, sideEffectsCacheWrite: true, unsafePerm: true })
    const plan = planInstall(older, nativeRelease('11.22.0') as PnpmRelease)
    if (typeof plan === 'string') throw new Error(plan)
    // The fixture's mkdirp does not require a build; its row says it does, and the build left nothing changed.
    const mkdirp = plan.planned.find((p) => p.name === 'mkdirp')!
    expect((await explain(older)).native).toBe(true)
    fs.mkdirSync(plan.storeDir, { recursive: true })
    const index = new StoreIndex(plan.storeDir)
    index.set(mkdirp.filesIndexFile, { algo: 'sha512', requiresBuild: true, files: new Map(), sideEffects: new Map([[plan.cacheKeys.get(mkdirp.depPath)!.key, {}]]) })
    index.close()
    const e = await explain(older)
    expect(e.reasons.map((r) => r.code)).toEqual(['build-every-install'])
    // Nothing under its key: pnpm builds it this time (and caches the result), as the install says.
    const other = new StoreIndex(plan.storeDir)
    other.set(mkdirp.filesIndexFile, { algo: 'sha512', requiresBuild: true, files: new Map(), sideEffects: new Map([['another key', {}]]) })
    other.close()
    const missed = await explain(older)
    expect(missed.reasons.map((r) => [r.code, r.reason])).toEqual([['side-effects-miss', `${mkdirp.depPath}: no side effects cached for ${plan.cacheKeys.get(mkdirp.depPath)!.key}, and pnpm 11.22.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to ${PNPM_RELEASES.at(-1)!.version}, whose build step it reproduces)`]])
    expect(e.reasons[0].reason).toBe(`${mkdirp.depPath}: its build changes no file, which pnpm records in its side-effects cache but never takes from it (it builds it on every install), and pnpm 11.22.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to ${PNPM_RELEASES.at(-1)!.version}, whose build step it reproduces)`)
    // Nothing under its key, an empty diff under another dependency graph's: most likely built on every install too.
    const key = plan.cacheKeys.get(mkdirp.depPath)!.key
    const elsewhere = new StoreIndex(plan.storeDir)
    elsewhere.set(mkdirp.filesIndexFile, { algo: 'sha512', requiresBuild: true, files: new Map(), sideEffects: new Map([[`${key.slice(0, key.indexOf(';deps='))};deps=another`, {}]]) })
    elsewhere.close()
    expect((await explain(older)).reasons.map((r) => [r.code, r.reason.split(', which ')[0]])).toEqual([['build-every-install', `${mkdirp.depPath}: its build changes no file (${mkdirp.depPath}: recorded so for another set of dependencies)`]])
    expect((await explain({ ...older, userAgent: settings(dir).userAgent })).native).toBe(true)
  })

  it('a build pnpm is told neither to run nor to deny (a row that requires one, in neither list of allowBuilds): a reason, as the install gives it (user try s23: esbuild without allowBuilds was told native, and the install was left to pnpm, which refuses it)', async () => {
    const dir = project()
    const undecided = settings(dir, { sideEffectsCacheRead: true, sideEffectsCacheWrite: true, unsafePerm: true })
    const plan = planInstall(undecided, PNPM_RELEASES.at(-1)!)
    if (typeof plan === 'string') throw new Error(plan)
    const mkdirp = plan.planned.find((p) => p.name === 'mkdirp')!
    // Not in the store (a cold one): whether they require builds is told only at install time.
    expect((await explain(undecided)).notes.at(-1)).toBe('9 of the 9 packages are not in this machine\'s store: the install downloads them, and a build one of them requires that allowBuilds neither allows nor denies leaves the install to pnpm then')
    fs.mkdirSync(plan.storeDir, { recursive: true })
    const index = new StoreIndex(plan.storeDir)
    index.set(mkdirp.filesIndexFile, { algo: 'sha512', requiresBuild: true, files: new Map() })
    index.close()
    const e = await explain(undecided)
    expect(e.notes.at(-1)).toMatch(/^8 of the 9 packages are not in this machine's store/)
    expect(e.reasons.map((r) => [r.code, r.reason])).toEqual([['builds', `${mkdirp.depPath}: requires-build`]])
    expect(e.reasons[0].change).toMatch(/^decide its build under allowBuilds/)
    // Decided either way: native.
    for (const allowBuilds of [{ mkdirp: true }, { mkdirp: false }]) expect((await explain({ ...undecided, allowBuilds })).native).toBe(true)
  })

  it('the project\'s own scripts under a release whose scripts pnpm runs: a note, but a reason when pnpm\'s build step has a package to record (a denied build, from the store\'s rows), as the install stops (user try: vuejs/router under 11.21.0 was told native)', async () => {
    const dir = project()
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, scripts: { postinstall: 'echo hi' } }))
    const older = settings(dir, { userAgent: 'pnpm/11.21.0 npm/? node/v24.9.0 linux x64', allowBuilds: { mkdirp: false }, sideEffectsCacheRead: true, sideEffectsCacheWrite: true, unsafePerm: true })
    const e = await explain(older)
    expect(e.native).toBe(true)
    expect(e.notes[0]).toMatch(/^the project's postinstall: laid out natively, then run by pnpm \(pnpm 11\.21\.0 runs the builds itself/)
    const plan = planInstall(older, nativeRelease('11.21.0') as PnpmRelease)
    if (typeof plan === 'string') throw new Error(plan)
    const mkdirp = plan.planned.find((p) => p.name === 'mkdirp')!
    fs.mkdirSync(plan.storeDir, { recursive: true })
    const index = new StoreIndex(plan.storeDir)
    index.set(mkdirp.filesIndexFile, { algo: 'sha512', requiresBuild: true, files: new Map() })
    index.close()
    const denied = await explain(older)
    expect(denied.reasons.map((r) => [r.code, r.reason])).toEqual([['project-scripts-builds', `the project's postinstall, which pnpm runs after the layout (pnpm 11.21.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to ${PNPM_RELEASES.at(-1)!.version}, whose build step it reproduces)), and pnpm then records the builds it denies (${mkdirp.depPath}, …) otherwise than stock`]])
    expect(denied.reasons[0].change).toBe(`pin pnpm ${PNPM_RELEASES.at(-1)!.version} (packageManager in package.json), under which the native install runs the project's postinstall itself, or drop the project's postinstall if an install does not need it`)
    // The release whose scripts the native install runs: native, the script run natively.
    expect((await explain({ ...older, userAgent: settings(dir).userAgent })).native).toBe(true)
  })

  it('without the plugin: says to add it; another pnpmfile then counts, and a project without pnpm-workspace.yaml gets one from `pnpm add --config`', async () => {
    const dir = project()
    fs.writeFileSync(path.join(dir, '.pnpmfile.cjs'), 'module.exports = { hooks: {} }\n')
    const e = await explain(settings(dir, { configDependencies: {}, pnpmfile: [path.join(dir, '.pnpmfile.cjs')], lockfileDir: undefined, workspaceDir: undefined }))
    expect(e.reasons.map((r) => r.code)).toEqual(['not-added', 'other-pnpmfiles', 'pnpmfile-checksum'])
  })
})
