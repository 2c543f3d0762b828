/**
 * The report's parts that need no pnpm: which reporter pnpm picks, how records reach bole's
 * outputs or stdout, the live progress line's pace and form, the reasons' words
 * (`why-not.ts`), the direct dependencies pnpm lists. The whole report against stock pnpm's
 * output is `pnpm-report.spec.ts`.
 */
import { Writable } from 'node:stream'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { dropRecords, fitRows, formatMs, formatPrefix, holdRecords, PnpmLog, ProgressLine, progressText, releaseRecords, reportInstalled, reporterOf, watchLockfileVerification } from '../dist/plugin/report.js'
import { packagesNeedPnpm, whyNot, type WhyNot } from '../dist/plugin/why-not.js'
import { unbuiltReasons, type RecordedBuild } from '../dist/plugin/install/side-effects.js'
import { PNPM_RELEASES } from '../dist/plugin/install/pnpm-releases.js'
import { createRequire } from 'node:module'
import { directDependencies, type DirectDependency } from '../dist/plugin/install/direct-dependencies.js'

/** A stream that keeps what is written to it. */
function sink (objectMode = false): Writable & { chunks: unknown[], text: () => string } {
  const chunks: unknown[] = []
  const stream = new Writable({ objectMode, write (chunk, _enc, cb) { chunks.push(objectMode ? chunk : chunk.toString()); cb() } })
  return Object.assign(stream, { chunks, text: () => chunks.join('') })
}

describe('reporterOf: pnpm 11\'s choice of reporter', () => {
  it.each([
    [{}, true, 'default'],
    [{}, false, 'append-only'],
    [{ ci: true }, true, 'append-only'],
    [{ reporter: 'ndjson' }, true, 'ndjson'],
    [{ reporter: 'default' }, false, 'default'],
    [{ reporter: 'default', loglevel: 'silent' }, true, 'silent'],
    [{ reporter: 'silent' }, true, 'silent'],
    [{ json: true }, true, 'silent'],
  ] as const)('%j, stdout a TTY: %s → %s', (config, tty, kind) => {
    expect(reporterOf(config, tty)).toBe(kind)
  })
})

describe('fitRows: a message no terminal of the width wraps', () => {
  it.each([
    ['short enough', 20, 'short enough'],
    ['one two three four', 9, 'one two\nthree\nfour'],
    ['one two three', 7, 'one two\nthree'],
    ['a:verylongword b', 5, 'a:ver\nylong\nword\nb'],
    ['first line\nsecond one', 6, 'first\nline\nsecond\none'],
  ])('%j in %i columns', (text, width, rows) => {
    expect(fitRows(text, width)).toBe(rows)
  })
})

describe('PnpmLog', () => {
  afterEach(() => { delete (globalThis as { $$bole?: unknown }).$$bole })

  it('default reporter, a row width (a release that redraws by newlines): messages in rows that fit, a warning\'s less pnpm\'s tag; other records as they are', () => {
    const lines = sink()
    ;(globalThis as { $$bole?: unknown }).$$bole = { debug: [lines], info: [lines], warn: [lines] }
    // pnpm's reporter has started.
    const started = Symbol('reporterInitialized')
    Object.assign(globalThis, { [started]: true })
    try {
      const log = new PnpmLog('default', sink(), 12)
      log.say('twelve chars and more')
      log.write('warn', 'pnpm:global', { message: 'a warn here' })
      log.write('debug', 'pnpm:stats', { added: 3 })
    } finally {
      delete (globalThis as Record<symbol, unknown>)[started]
    }
    expect(lines.text().trim().split('\n').map((l) => JSON.parse(l))).toMatchObject([
      { name: 'pnpm:global', message: 'twelve chars\nand more' }, { level: 'warn', message: 'a\nwarn\nhere' }, { name: 'pnpm:stats', added: 3 },
    ])
  })

  it('writes records to bole\'s outputs of their level, as bole does (a JSON line, or the object to an object-mode stream)', () => {
    const lines = sink()
    const objects = sink(true)
    ;(globalThis as { $$bole?: unknown }).$$bole = { debug: [lines, objects], info: [lines, objects] }
    new PnpmLog('append-only').write('debug', 'pnpm:stats', { added: 3, prefix: '/p' })
    expect(JSON.parse(lines.text())).toMatchObject({ level: 'debug', name: 'pnpm:stats', added: 3, prefix: '/p', pid: process.pid })
    expect(objects.chunks[0]).toMatchObject({ level: 'debug', name: 'pnpm:stats', added: 3 })
  })

  it('ndjson: to stdout as bole writes them; silent: nowhere; without pnpm\'s logger: messages as plain lines', () => {
    const out = sink()
    new PnpmLog('ndjson', out).say('hello')
    expect(JSON.parse(out.text())).toMatchObject({ level: 'info', name: 'pnpm:global', message: 'hello' })
    const none = sink()
    new PnpmLog('silent', none).say('hello')
    expect(none.text()).toBe('')
    const plain = sink()
    new PnpmLog('append-only', plain).say('hello')
    new PnpmLog('append-only', plain).write('debug', 'pnpm:stats', { added: 1 })
    expect(plain.text()).toBe('hello\n')
  })

  it('records held back (a native build\'s lines) are sent, in order, after what comes before them', () => {
    const out = sink()
    const log = new PnpmLog('ndjson', out)
    holdRecords()
    log.say('build line')
    log.say('another')
    expect(out.text()).toBe('')
    releaseRecords(() => log.say('before'))
    log.say('after')
    expect(out.text().trim().split('\n').map((l) => JSON.parse(l).message)).toEqual(['before', 'build line', 'another', 'after'])
  })

  it('a record held back keeps the time it was logged at (pnpm\'s reporter shows how long a script took from it)', () => {
    const out = sink()
    const log = new PnpmLog('ndjson', out)
    const now = vi.spyOn(Date, 'now').mockReturnValue(1000)
    holdRecords()
    log.say('held')
    now.mockReturnValue(2000)
    releaseRecords(() => log.say('then'))
    now.mockRestore()
    expect(out.text().trim().split('\n').map((l) => [JSON.parse(l).message, JSON.parse(l).time])).toEqual([['then', 2000], ['held', 1000]])
  })

  it('pnpm\'s supply-chain check of the lockfile: ended at once when none started, else once its end is logged, with how it ended', async () => {
    ;(globalThis as { $$bole?: unknown }).$$bole = { debug: [] }
    const none = watchLockfileVerification()
    expect(await none.ended()).toBeUndefined()
    none.stop()
    const log = new PnpmLog('append-only')
    // pnpm's recorded verdict: no check runs.
    const cached = watchLockfileVerification()
    log.write('debug', 'pnpm:lockfile-verification', { status: 'cached', verifiedAt: 1 })
    expect(await cached.ended()).toBe('cached')
    cached.stop()
    for (const end of ['done', 'failed']) {
      const watching = watchLockfileVerification()
      log.write('debug', 'pnpm:lockfile-verification', { status: 'started', entries: 2 })
      let ended: string | undefined
      const waiting = watching.ended().then((status) => { ended = status })
      await new Promise((resolve) => setTimeout(resolve, 10))
      expect(ended).toBeUndefined()
      log.write('debug', 'pnpm:lockfile-verification', { status: end, entries: 2 })
      await waiting
      watching.stop()
      // A failed check is told apart: pnpm's install then ends with its error, not a build's (review s9b, item 4).
      expect(ended).toBe(end)
    }
    expect((globalThis as { $$bole?: { debug: unknown[] } }).$$bole!.debug).toEqual([])
  })

  it('records held back can be dropped (an install that ends otherwise than it was to)', () => {
    const out = sink()
    const log = new PnpmLog('ndjson', out)
    holdRecords()
    log.say('build line')
    dropRecords()
    log.say('after')
    releaseRecords()
    expect(out.text().trim().split('\n').map((l) => JSON.parse(l).message)).toEqual(['after'])
  })

  it('a routine line is a debug record of pnpm\'s own logger (printed under --loglevel debug only)', () => {
    const out = sink()
    new PnpmLog('ndjson', out).say('routine', true)
    expect(JSON.parse(out.text())).toMatchObject({ level: 'debug', name: 'pnpm', message: 'routine' })
  })
})

describe('the live progress line', () => {
  afterEach(() => { vi.useRealTimers() })

  it('is pnpm\'s progress line', () => {
    expect(progressText({ resolved: 9, reused: 2, downloaded: 7, added: 5 })).toBe('Progress: resolved 9, reused 2, downloaded 7, added 5')
    expect(progressText({ resolved: 9, reused: 2, downloaded: 7, added: 9 }, true)).toBe('Progress: resolved 9, reused 2, downloaded 7, added 9, done')
    expect(progressText({ resolved: 1, reused: 0, downloaded: 0, added: 0 }, false, true)).toBe('Progress: resolved \u001b[96m1\u001b[39m, reused \u001b[96m0\u001b[39m, downloaded \u001b[96m0\u001b[39m, added \u001b[96m0\u001b[39m')
  })

  it('append-only: nothing before a second has passed, then a line at most every second, with the latest counts', () => {
    vi.useFakeTimers()
    const out = sink()
    const counts = { resolved: 0, reused: 0, downloaded: 0, added: 0 }
    const line = new ProgressLine('append-only', counts, { out })
    counts.resolved = 9
    line.changed()
    vi.advanceTimersByTime(999)
    expect(out.text()).toBe('')
    vi.advanceTimersByTime(1)
    expect(out.text()).toBe('Progress: resolved 9, reused 0, downloaded 0, added 0\n')
    counts.downloaded = 1
    line.changed()
    counts.downloaded = 2
    line.changed()
    vi.advanceTimersByTime(500)
    expect(out.chunks).toHaveLength(1)
    vi.advanceTimersByTime(500)
    expect(out.chunks.at(-1)).toBe('Progress: resolved 9, reused 0, downloaded 2, added 0\n')
    line.end()
    vi.advanceTimersByTime(5000)
    expect(out.chunks).toHaveLength(2)
  })

  it('default: one line redrawn every 200 ms at most, erased at the end (pnpm\'s reporter prints the final one); an install over sooner prints nothing', () => {
    vi.useFakeTimers()
    const out = sink()
    const counts = { resolved: 9, reused: 0, downloaded: 0, added: 0 }
    const line = new ProgressLine('default', counts, { out })
    vi.advanceTimersByTime(200)
    counts.added = 9
    line.changed()
    vi.advanceTimersByTime(200)
    line.end()
    expect(out.chunks).toEqual(['\rProgress: resolved 9, reused 0, downloaded 0, added 0\u001b[K', '\rProgress: resolved 9, reused 0, downloaded 0, added 9\u001b[K', '\r\u001b[K'])
    const quick = sink()
    new ProgressLine('default', counts, { out: quick }).end()
    vi.advanceTimersByTime(1000)
    expect(quick.text()).toBe('')
  })

  it('below the workspace root: under the root\'s prefix, as pnpm\'s reporter zooms out a line of another directory (formatPrefix, padded to 40)', () => {
    vi.useFakeTimers()
    const out = sink()
    const line = new ProgressLine('append-only', { resolved: 9, reused: 0, downloaded: 0, added: 0 }, { out, zoom: formatPrefix('/ws/playground', '/ws') })
    vi.advanceTimersByTime(1000)
    line.end()
    expect(out.text()).toBe(`${'..'.padEnd(40)} | Progress: resolved 9, reused 0, downloaded 0, added 0\n`)
    expect([formatPrefix('/ws', '/ws'), formatPrefix('/ws/a/b', '/ws'), formatPrefix('/ws', '/ws/packages/app')]).toEqual(['.', '../..', 'packages/app'])
    expect(formatPrefix('/', `/${'x'.repeat(30)}/${'y'.repeat(30)}`)).toBe(`.../${'y'.repeat(30)}`)
    expect(formatPrefix('/', `/${'z'.repeat(50)}`)).toBe(`...${'z'.repeat(37)}`)
  })

  it('showProgress counts what the install tells, the import method too; ndjson gets pnpm\'s progress records (each package named as pnpm names it) as they come', () => {
    // The install's module and the report's, as one process has them (vitest would load a second copy).
    const require = createRequire(import.meta.url)
    const { progressed } = require('../dist/plugin/install/progress.js') as typeof import('../dist/plugin/install/progress.js')
    const report = require('../dist/plugin/report.js') as typeof import('../dist/plugin/report.js')
    const out = sink()
    const { counts, stop } = report.showProgress({ dir: '/p' }, new report.PnpmLog('ndjson', out))
    progressed('resolved', [{ packageId: 'a@1.0.0' }, { packageId: 'b@2.0.0' }])
    progressed('downloaded', [{ packageId: 'a@1.0.0' }])
    progressed('reused', [{ packageId: 'b@2.0.0' }])
    progressed('added', [{ to: '/p/node_modules/.pnpm/a@1.0.0/node_modules/a', method: 'hardlink' }, { to: '/p/node_modules/.pnpm/b@2.0.0/node_modules/b', method: 'hardlink' }])
    stop()
    progressed('added', [{ to: '/p/node_modules/.pnpm/c@1.0.0/node_modules/c' }])
    expect(counts).toEqual({ resolved: 2, reused: 1, downloaded: 1, added: 2, method: 'hardlink' })
    // Each as pnpm's: by package id, then by where it was imported and how.
    expect(out.text().trim().split('\n').map((l) => { const { time, hostname, pid, ...r } = JSON.parse(l); return r })).toEqual([
      { level: 'debug', name: 'pnpm:progress', packageId: 'a@1.0.0', requester: '/p', status: 'resolved' },
      { level: 'debug', name: 'pnpm:progress', packageId: 'b@2.0.0', requester: '/p', status: 'resolved' },
      { level: 'debug', name: 'pnpm:progress', packageId: 'a@1.0.0', requester: '/p', status: 'fetched' },
      { level: 'debug', name: 'pnpm:progress', packageId: 'b@2.0.0', requester: '/p', status: 'found_in_store' },
      { level: 'debug', name: 'pnpm:progress', method: 'hardlink', requester: '/p', status: 'imported', to: '/p/node_modules/.pnpm/a@1.0.0/node_modules/a' },
      { level: 'debug', name: 'pnpm:progress', method: 'hardlink', requester: '/p', status: 'imported', to: '/p/node_modules/.pnpm/b@2.0.0/node_modules/b' },
    ])
  })

  it('after a native install in a workspace, run in a project below the root: every project\'s manifest (as read, then as its install used it) and direct dependencies under its own prefix, the summary under the root, as pnpm\'s install logs them', () => {
    const dep = (name: string): DirectDependency => ({ name, realName: name, version: '1.0.0', id: `${name}@1.0.0`, dependencyType: 'prod' })
    const projects = [
      { dir: '/w/packages/a', manifest: { name: 'a', dependencies: { x: '^1.0.0' } }, updated: { name: 'a', dependencies: { x: '1.0.0' } }, direct: [dep('x')] },
      { dir: '/w', manifest: { name: 'root' }, updated: { name: 'root' }, direct: [dep('y'), dep('z')] },
    ]
    const summary = { installed: true, packages: 3, ms: 5, phases: {}, downloaded: [], layout: { storeDir: '/s', virtualStoreDir: '/w/node_modules/.pnpm', projects, workspace: { dir: '/w', projects: 2 }, importMethodLogged: true } }
    const out = sink()
    reportInstalled(summary, { resolved: 3, reused: 3, downloaded: 0, added: 3 }, { dir: '/w/packages/a', lockfileDir: '/w' }, new PnpmLog('ndjson', out))
    const records = out.text().trim().split('\n').map((l) => JSON.parse(l)).filter((r) => ['pnpm:package-manifest', 'pnpm:root', 'pnpm:summary'].includes(r.name))
    expect(records.map((r) => `${r.name.slice(5)} ${r.prefix} ${r.initial != null ? `initial ${JSON.stringify(r.initial)}` : r.updated != null ? `updated ${JSON.stringify(r.updated)}` : r.added?.name ?? ''}`)).toEqual([
      'package-manifest /w/packages/a initial {"name":"a","dependencies":{"x":"^1.0.0"}}',
      'package-manifest /w initial {"name":"root"}',
      'package-manifest /w/packages/a updated {"name":"a","dependencies":{"x":"1.0.0"}}',
      'package-manifest /w updated {"name":"root"}',
      'root /w/packages/a x',
      'root /w y',
      'root /w z',
      'summary /w ',
    ])
  })

  it('after a native install, pnpm\'s lockfile check\'s records where pnpm\'s frozen install logs them: as it starts (a verdict taken, or the check started), then that the install goes from the lockfile; a check without the registry ended at once, one with it once the packages are counted; none under trustLockfile', () => {
    const summary = { installed: true, packages: 2, ms: 5, phases: {}, downloaded: [], layout: { storeDir: '/s', virtualStoreDir: '/p/node_modules/.pnpm', projects: [{ dir: '/p', manifest: {}, updated: {}, direct: [] }], importMethodLogged: true } }
    const counts = { resolved: 2, reused: 2, downloaded: 0, added: 2 }
    const lockfilePath = '/p/pnpm-lock.yaml'
    const records = (checkLog?: object, more: object = {}): string[] => {
      const out = sink()
      reportInstalled({ ...summary, ...(checkLog != null ? { checkLog } : {}), ...more }, counts, { dir: '/p', lockfileDir: '/p' }, new PnpmLog('ndjson', out))
      return out.text().trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.name !== 'pnpm:progress' && r.name !== 'pnpm:root').map((r) => r.name === 'pnpm:lockfile-verification'
        ? `${r.status} ${JSON.stringify({ ...r, time: undefined, hostname: undefined, pid: undefined, level: undefined, name: undefined, status: undefined })}`
        : r.name === 'pnpm' ? r.message : r.name === 'pnpm:stats' ? `stats ${Object.keys(r).includes('added') ? 'added' : 'removed'}` : r.name)
    }
    expect(records({ status: 'cached', verifiedAt: '2026-11-24T16:09:10.644Z', lockfilePath }).slice(0, 2)).toEqual([
      `cached ${JSON.stringify({ verifiedAt: '2026-11-24T16:09:10.644Z', lockfilePath })}`, 'Lockfile is up to date, resolution step is skipped',
    ])
    expect(records({ status: 'done', entries: 2, elapsedMs: 3, asked: false, lockfilePath }).slice(0, 3)).toEqual([
      `started ${JSON.stringify({ entries: 2, lockfilePath })}`, `done ${JSON.stringify({ entries: 2, elapsedMs: 3, lockfilePath })}`, 'Lockfile is up to date, resolution step is skipped',
    ])
    const asked = records({ status: 'done', entries: 2, elapsedMs: 170, asked: true })
    expect(asked.slice(0, 2)).toEqual([`started ${JSON.stringify({ entries: 2 })}`, 'Lockfile is up to date, resolution step is skipped'])
    expect(asked.slice(asked.indexOf('stats added'), asked.indexOf('stats added') + 2)).toEqual(['stats added', `done ${JSON.stringify({ entries: 2, elapsedMs: 170 })}`])
    expect(records().filter((r) => r.startsWith('cached') || r.startsWith('started') || r.startsWith('done'))).toEqual([])
    // pnpm's own install runs after the layout (the project's scripts): it says so itself.
    expect(records(undefined, { pnpmRunsScripts: ['postinstall'] })).not.toContain('Lockfile is up to date, resolution step is skipped')
  })

  it('durations as pnpm writes them', () => {
    expect([formatMs(12.4), formatMs(999), formatMs(1000), formatMs(1240), formatMs(61_000)]).toEqual(['12ms', '999ms', '1s', '1.2s', '61s'])
  })
})

describe('why-not: every reason the install gives, in words a user can act on', () => {
  it.each([
    ['node_modules is not empty', 'modules-exist', true],
    ['pnpm resolves (preferFrozenLockfile false, --fix-lockfile, --update-checksums or no lockfile)', 'resolves', true],
    ['the lockfile is not up to date with package.json (a: package.json wants "^1.0.0", the lockfile has "1.0.0")', 'outdated-lockfile', true],
    ['the lockfile is not up to date with packages/a/package.json (publishConfig.linkDirectory differs from the lockfile)', 'outdated-lockfile', true],
    ['--filter', 'nothing-to-write', true],
    ['pnpm 11.99.0 is not one of the releases checked (11.7.0 to 11.28.11)', 'pnpm-version', false],
    ['pnpm 11.27.0: its .bin shims are of an older form, which the native install does not write', 'pnpm-version', false],
    ['nodeLinker hoisted', 'node-linker', false],
    ['hoisting settings', 'layout-setting', false],
    ['other pnpmfiles', 'other-pnpmfiles', false],
    ['injectWorkspacePackages (projects injected as copies)', 'workspace', false],
    ['packages/a/node_modules is not empty', 'modules-exist', true],
    ['a plain install: packages/a\'s a: a dependency a project of the workspace may take', 'workspace-plain', false],
    ['esbuild@0.25.0: no side effects cached for linux;x64;node24;format=2;deps=abc', 'side-effects-miss', false],
    ['the pnpmfiles changed since the lockfile was written (run `pnpm install` once and commit the lockfile)', 'pnpmfile-checksum', false],
    ['the lockfile was written with other settings', 'lockfile-settings', false],
    ['packages/a/package.json: overrides "a@^1", "a@>=1.1" all apply to a', 'overrides', false],
    ['the override "vite": no usable default catalog entry for vite (pnpm refuses: ERR_PNPM_CATALOG_IN_OVERRIDES)', 'overrides', false],
    ['the project\'s preinstall script, which pnpm runs before it links anything', 'preinstall', false],
    ['3 packages are not in the store, and --offline', 'offline-cold', false],
    ['a@1.0.0: its registry metadata did not download: pnpm checks the lockfile first', 'registry-metadata', false],
    ['a@1.0.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first', 'release-age', false],
    ['pnpm checks the lockfile against trustPolicy first', 'trust-policy', false],
    ['the store is not known before pnpm picks it', 'store-unknown', false],
    ['it failed: EACCES: permission denied', 'failed', false],
    // Reasons that fell to 'other' or under another rule (review of session 8).
    ['2 packages need pnpm: patched (patchedDependencies): @backstage/catalog-model@1.0.0', 'packages', false],
    ['the catalogs differ from the lockfile (the build catalog\'s a is "^2.0.0", the lockfile has "^1.0.0")', 'catalogs', false],
    ['a@1.0.0: less trust evidence than a version published before it', 'trust-policy', false],
    ['a: its full registry metadata did not download', 'trust-policy', false],
    ['a@1.0.0: no publish time in its metadata', 'trust-policy', false],
    ['pnpm refuses trustPolicyExclude: "a@^1" is not exact versions', 'policy-setting', false],
    ['a@1.0.0: unverified', 'store-package', false],
    ['a@1.0.0: failed (EACCES: permission denied)', 'store-package', false],
    ['no lockfile dir', 'project-below', false],
    ['workspace patterns', 'workspace', false],
    ['pnpm runs in a directory that is not a project of the workspace', 'workspace', false],
    ['a workspace project named "a b", which pnpm hoists by its own rules', 'workspace', false],
    ['/p/packages/a/package.json is not valid JSON (left to pnpm)', 'workspace', false],
    ['a@1.0.0: its command a and a dependency\'s, linked apart by this pnpm\'s build step', 'shim', false],
    ['frozenStore', 'frozen-store', false],
    ['an unheard-of reason', 'other', false],
  ])('%s → %s', (reason, code, routine) => {
    const why = whyNot(reason)
    expect(why.code).toBe(code)
    expect(why.routine).toBe(routine)
    expect(why.says).not.toBe('')
    expect(why.change).not.toBe('')
  })

  it('a package met twice below an allowed build, under a release whose side-effects key depends on the order: pin the newest pnpm (user try, TanStack/store under 11.9.0: it said only \'see docs\')', () => {
    const why = whyNot('vue@3.5.32: met twice on a dependency path of a package whose build pnpm allows, where this pnpm release\'s side-effects cache key depends on the order of the install')
    expect(why.code).toBe('side-effects-key')
    expect(why.routine).toBe(false)
    expect(why.says).toMatch(/^vue@3\.5\.32 is met twice on a dependency path of a package whose build pnpm allows: /)
    expect(why.change).toBe(`pin pnpm ${PNPM_RELEASES.at(-1)!.version} (packageManager in package.json): from 11.28.1 pnpm's key no longer depends on that order, or deny the build (allowBuilds with false)`)
  })

  it('a pnpm release the plugin does not know: a newer plugin only for a newer pnpm, not for one before the oldest it knows (user try, elk under 11.6.0)', () => {
    const range = `11.7.0 to ${PNPM_RELEASES.at(-1)!.version}`
    const older = whyNot(`pnpm 11.6.0 is not one of the releases checked (${range})`)
    expect(older.change).toBe(`run a pnpm release it runs under (${range}; packageManager in package.json)`)
    const newer = whyNot(`pnpm 11.99.0 is not one of the releases checked (${range})`)
    expect(newer.change).toBe(`run a pnpm release it runs under (${range}; packageManager in package.json), or a release of the plugin that knows pnpm's newer ones`)
  })

  it('a patched package whose build is not allowed, under a release whose side-effects upload is not written natively: allow its build, or run the newest (user try, tailwindcss under 11.9.0, now native there)', () => {
    const why = whyNot('@napi-rs/cli@3.7.4(patch_hash=abc)(x@1.0.0): patched, and pnpm applies the patch itself (its build is not allowed), and patches applied under pnpm 11.28.4, whose side-effects upload the native install does not write (it does under 11.7.0 to 11.27.0, 11.28.0 to 11.28.11)')
    expect(why.code).toBe('patches')
    expect(why.says).toMatch(/^@napi-rs\/cli@3\.7\.4\(patch_hash=abc\)\(x@1\.0\.0\) is patched and its build is not allowed, .* under pnpm 11\.7\.0 to 11\.27\.0, 11\.28\.0 to 11\.28\.11 only$/)
    expect(why.change).toBe(`allow @napi-rs/cli's build (allowBuilds: pnpm then caches it patched, and the native install takes it from the cache), or pin pnpm ${PNPM_RELEASES.at(-1)!.version} (packageManager in package.json)`)
  })

  it('a build pnpm runs on every install (it changes no file: its cache never gives it back), under a release whose builds are pnpm\'s: run the newest, or deny the build; no promise of a native next clone (user try, nx under 11.9.0 in TanStack/query)', () => {
    const release = 'pnpm 11.9.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to 11.28.11, whose build step it reproduces)'
    const why = whyNot(`@scope/nx@22.1.3(@swc/core@1.0.0): its build changes no file, which pnpm records in its side-effects cache but never takes from it (it builds it on every install), and ${release}`)
    expect(why.code).toBe('build-every-install')
    expect(why.says).toBe('pnpm builds @scope/nx@22.1.3(@swc/core@1.0.0) on every install: its build changes no file, and pnpm never takes such a build from its side-effects cache; under pnpm 11.9.0 the native install leaves builds to pnpm (it runs them only under pnpm 11.28.1 to 11.28.11)')
    expect(why.change).toBe('pin pnpm 11.28.11 (packageManager in package.json), under which the native install runs such builds itself, or deny @scope/nx\'s build (allowBuilds: @scope/nx: false) if the project does not need it')
    expect(whyNot('a@1.0.0: its build changes no file, which pnpm records in its side-effects cache but never takes from it (it builds it on every install), and the project\'s postinstall (it runs after pnpm\'s own install)').change).toBe('deny a\'s build (allowBuilds: a: false) if the project does not need it')
  })

  it('every build pnpm runs on every install named at once, those known so from another key only as most likely (user try, tailwindcss under 11.9.0: sharp, then tree-sitter-javascript, then tree-sitter-typescript, one clone each)', () => {
    const release = 'pnpm 11.9.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to 11.28.11, whose build step it reproduces)'
    const build = (depPath: string, recorded: RecordedBuild) => ({ depPath, keys: { key: `linux;x64;node24;format=2;deps=${depPath}` }, recorded })
    const { everyInstall, missing } = unbuiltReasons([build('esbuild@0.25.0', 'missing'), build('sharp@0.34.5', 'unchanged'), build('tree-sitter-javascript@0.23.1', 'unchanged-elsewhere'), build('@parcel/watcher@2.5.1', 'cached'), build('tree-sitter-typescript@0.23.2(tree-sitter@0.22.4)', 'unchanged-elsewhere')], release)
    expect(missing).toBe(`esbuild@0.25.0: no side effects cached for linux;x64;node24;format=2;deps=esbuild@0.25.0, and ${release}`)
    expect(everyInstall).toBe(`sharp@0.34.5, tree-sitter-javascript@0.23.1, tree-sitter-typescript@0.23.2(tree-sitter@0.22.4): their builds change no file (tree-sitter-javascript@0.23.1, tree-sitter-typescript@0.23.2(tree-sitter@0.22.4): recorded so for another set of dependencies), which pnpm records in its side-effects cache but never takes from it (it builds them on every install), and ${release}`)
    const why = whyNot(everyInstall!)
    expect(why.code).toBe('build-every-install')
    expect(why.says).toBe('pnpm builds sharp@0.34.5, tree-sitter-javascript@0.23.1, tree-sitter-typescript@0.23.2(tree-sitter@0.22.4) on every install (tree-sitter-javascript@0.23.1, tree-sitter-typescript@0.23.2(tree-sitter@0.22.4): most likely, as pnpm recorded for another set of dependencies): their builds change no file, and pnpm never takes such a build from its side-effects cache; under pnpm 11.9.0 the native install leaves builds to pnpm (it runs them only under pnpm 11.28.1 to 11.28.11)')
    expect(why.change).toBe('pin pnpm 11.28.11 (packageManager in package.json), under which the native install runs such builds itself, or deny their builds (allowBuilds: sharp: false, tree-sitter-javascript: false, tree-sitter-typescript: false) if the project does not need them')
    expect(unbuiltReasons([build('a@1.0.0', 'cached'), build('b@1.0.0', 'not-built')], release)).toEqual({})
  })

  it('the project\'s own scripts, which pnpm runs after the layout, with builds its build step records: says so, and what would change it (user try: "list it under allowBuilds with false" for a build already denied)', () => {
    const release = 'pnpm 11.21.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to 11.28.11, whose build step it reproduces)'
    const why = whyNot(`the project's postinstall, prepare, which pnpm runs after the layout (${release}), and pnpm then records the builds it denies (simple-git-hooks@2.13.1, …) otherwise than stock`)
    expect(why.code).toBe('project-scripts-builds')
    expect(why.says).toBe('the project\'s postinstall, prepare are run by pnpm\'s own install after the native layout (under pnpm 11.21.0 the native install leaves them to pnpm: it runs a project\'s scripts only under pnpm 11.28.1 to 11.28.11), and that install would record the builds pnpm denies (simple-git-hooks@2.13.1, …) otherwise than stock does')
    expect(why.change).toBe('pin pnpm 11.28.11 (packageManager in package.json), under which the native install runs the project\'s postinstall, prepare itself, or drop the project\'s postinstall, prepare if an install does not need it')
    const other = whyNot('the project\'s prepare, which pnpm runs after the layout (sort: false), and pnpm then records the builds it takes from its cache (esbuild@0.25.0, …) otherwise than stock')
    expect(other.says).toMatch(/^the project's prepare is run by pnpm's own install after the native layout \(the native install does not run them as pnpm would here: sort: false\)/)
    expect(other.change).toBe('the native install runs the project\'s prepare itself once this no longer holds: sort: false')
  })

  it('node_modules there: a fresh clone is native only if nothing else leaves it to pnpm, which explain tells (slidev with scripts off, session 14)', () => {
    expect(whyNot('node_modules is not empty').change).toBe('nothing: a fresh clone (or `rm -rf node_modules`) installs natively unless something else leaves it to pnpm, as `cas-native-explain` tells (`pnpm dlx @cas/pnpm-plugin-native`)')
  })

  it('a build pnpm has not been told to run or deny: decide it, either way (user try s23: it said only to deny it, or to keep pnpm installing, where allowing it installs natively from 11.28.1)', () => {
    const why = whyNot('esbuild@0.25.12: requires-build')
    expect(why.code).toBe('builds')
    expect(why.says).toBe('a dependency has a build script for pnpm to run (esbuild@0.25.12: requires-build)')
    expect(why.change).toBe('decide its build under allowBuilds, as `pnpm approve-builds` does (pnpm refuses an undecided one): true to build it (natively too, from pnpm 11.28.1, where pnpm\'s side-effects cache lacks it), false if it needs no build')
  })

  it('a build or patch the cache lacks: what would change it depends on why it was not run natively (review s9b, item 7)', () => {
    const miss = (why?: string): WhyNot => whyNot(`a@1.0.0: no side effects cached for linux;x64;node24;deps=abc${why != null ? `, and ${why}` : ''}`)
    const cachedNext = 'pnpm builds it this time and caches the result, and the next fresh clone on this store takes it from the cache natively'
    for (const why of [undefined, 'a binding.gyp built with node-gyp', 'an optional package (pnpm skips it when its build fails)', 'the project\'s postinstall']) {
      expect(miss(why)).toMatchObject({ code: 'side-effects-miss', change: `nothing: ${cachedNext}` })
    }
    // pnpm writes no cache: it builds on every install.
    expect(miss('the side-effects cache is not written').change).toMatch(/^let pnpm write its side-effects cache .*: as it is, pnpm builds it on every install/)
    // pnpm cannot run it either.
    expect(miss('a scriptShell that is not there (/no/bash)').change).toMatch(/^point scriptShell at a shell that is there, or unset it: .*ERR_PNPM_SCRIPT_SHELL_NOT_FOUND\)$/)
    // pnpm fails on the patch too.
    expect(miss('its patch failed (hunk #1 FAILED at 1)').change).toMatch(/^fix the patch .*pnpm cannot apply it either, and its install fails$/)
    // Cached next time; built natively under the release checked only.
    const release = 'pnpm 11.28.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to 11.28.11, whose build step it reproduces)'
    expect(miss(release)).toMatchObject({ code: 'side-effects-miss', says: 'the built (or patched) files of a@1.0.0 are not in pnpm\'s side-effects cache yet, and under pnpm 11.28.0 the native install leaves builds to pnpm (it runs them only under pnpm 11.28.1 to 11.28.11)', change: `nothing: ${cachedNext} (to have the builds the cache lacks run natively too: pin pnpm 11.28.11 (packageManager in package.json))` })
    // Before 11.28.4 an optional one is left to pnpm: cached only if it builds (helper-57, session 22).
    expect(miss('an optional package, whose failed build pnpm 11.28.3 skips leaving the links to it (its own install after the native layout would build it again)').change).toBe(`nothing if its build succeeds: ${cachedNext}; if it fails, pnpm skips it on every install (to have that done natively: pin pnpm 11.28.11 (packageManager in package.json))`)
    expect(miss('a pnpm not started by its entry script').change).toMatch(new RegExp(`^nothing: ${cachedNext}; the builds the cache lacks are run natively only by a pnpm started by its entry script`))
    // The release alone, as no install gives it, is no rule's.
    expect(whyNot(release).code).toBe('other')
  })

  it('a plain install that resolves for a lockfile that does not match the settings (the README\'s `pnpm install` after `pnpm add --config`): routine, nothing to change but to commit what pnpm writes (user try, s20: it said to run the command being run)', () => {
    const why = whyNot('a plain install, which resolves: the pnpmfiles changed since the lockfile was written (run `pnpm install` once and commit the lockfile)')
    expect(why).toMatchObject({ code: 'plain-resolves', routine: true, change: 'nothing: commit the lockfile pnpm writes now; the next fresh clone installs natively' })
  })

  it('the pnpmfileChecksum: says to run pnpm install once and commit the lockfile', () => {
    expect(whyNot('the pnpmfiles changed since the lockfile was written (run `pnpm install` once and commit the lockfile)').change).toMatch(/^run `pnpm install` once and commit pnpm-lock\.yaml/)
  })

  it('packages left to pnpm: counted, grouped by why, each kind with what would change it', () => {
    const reason = packagesNeedPnpm(new Map([
      ['a@1.0.0', 'patched'], ['b@link:../b', 'not-in-lockfile'], ['c@1.0.0', 'patched'], ['d@1.0.0', 'patched'], ['e@1.0.0', 'patched'],
    ] as const))
    expect(reason).toBe('5 packages need pnpm: patched (patchedDependencies): a@1.0.0, c@1.0.0, d@1.0.0, … (4); a link:, file: or workspace: dependency: b@link:../b')
    const why = whyNot(reason)
    expect(why.code).toBe('packages')
    expect(why.change).toBe('the native install takes patched packages from pnpm\'s side-effects cache; the head start leaves them to pnpm; the native install links registry packages only')
    expect(packagesNeedPnpm(new Map([['x@1.0.0', 'engine-strict']]))).toMatch(/^1 package needs pnpm: /)
  })
})

describe('directDependencies: the list pnpm prints after an install', () => {
  it('each group in pnpm\'s word, aliases with their real names, peers\' suffixes off, skipped optional ones and links left out', () => {
    const lockfile = {
      importers: {
        '.': {
          dependencies: { a: '1.0.0', two: 'util@2.0.0', p: '1.0.0(host@1.0.0)', local: 'link:../local' },
          devDependencies: { d: '3.0.0' },
          optionalDependencies: { o: '1.0.0', gone: '1.0.0' },
        },
      },
      packages: { 'a@1.0.0': {}, 'util@2.0.0': {}, 'p@1.0.0(host@1.0.0)': {}, 'd@3.0.0': {}, 'o@1.0.0': {}, 'gone@1.0.0': {} },
    }
    expect(directDependencies(lockfile, ['gone@1.0.0'])).toEqual([
      { name: 'a', realName: 'a', version: '1.0.0', id: 'a@1.0.0', dependencyType: 'prod' },
      { name: 'two', realName: 'util', version: '2.0.0', id: 'util@2.0.0', dependencyType: 'prod' },
      { name: 'p', realName: 'p', version: '1.0.0', id: 'p@1.0.0(host@1.0.0)', dependencyType: 'prod' },
      { name: 'd', realName: 'd', version: '3.0.0', id: 'd@3.0.0', dependencyType: 'dev' },
      { name: 'o', realName: 'o', version: '1.0.0', id: 'o@1.0.0', dependencyType: 'optional' },
    ])
  })

  it('a link: dependency with the project\'s manifest, but not one the hoisting linked first at that name (pnpm finds its link made)', () => {
    const lockfile = { importers: { '.': { dependencies: { a: 'link:packages/a', b: 'link:packages/b' } } }, packages: {} }
    const manifests: Record<string, { name: string, version: string }> = { '/ws/packages/a': { name: 'a', version: '1.2.3' }, '/ws/packages/b': { name: 'b', version: '2.0.0' } }
    // b hoisted publicly at its name, a elsewhere (another project under that name).
    expect(directDependencies(lockfile, [], '/ws', (dir) => manifests[dir], { b: '/ws/packages/b', a: '/ws/packages/other' })).toEqual([
      { name: 'a', realName: 'a', version: '1.2.3', linkedFrom: '/ws/packages/a', dependencyType: 'prod' },
    ])
  })

  it('a project\'s, for pnpm run in its directory: its importer, its link: dependencies from its own directory', () => {
    const lockfile = { importers: { '.': { dependencies: { a: '1.0.0' } }, playground: { devDependencies: { root: 'link:..', b: '2.0.0' } } }, packages: { 'a@1.0.0': {}, 'b@2.0.0': {} } }
    expect(directDependencies(lockfile, [], '/ws', (dir) => dir === '/ws' ? { name: 'root', version: '3.0.0' } : undefined, {}, 'playground')).toEqual([
      { name: 'root', realName: 'root', version: '3.0.0', linkedFrom: '/ws', dependencyType: 'dev' },
      { name: 'b', realName: 'b', version: '2.0.0', id: 'b@2.0.0', dependencyType: 'dev' },
    ])
  })
})
