/**
 * The native install's stand-in for pnpm 11's supply-chain check of a lockfile: pnpm's own
 * recorded verdict, read as pnpm reads it, and pnpm's first test of each package's age against
 * a registry stand-in on 127.0.0.1. The end-to-end case (real pnpm, default minimumReleaseAge)
 * is in native-install.spec.ts.
 */
import fs from 'node:fs'
import net, { type AddressInfo } from 'node:net'
import path from 'node:path'
import util from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { firstFailure } from '../dist/plugin/first-failure.js'
import { checkSupplyChain, recordedVerdict, type SupplyChainCheck } from '../dist/plugin/install/supply-chain.js'
import { PNPM_RELEASES } from '../dist/plugin/install/pnpm-releases.js'
import { pnpmFunction } from './helpers/pnpm-bundle.js'
import { serveTarballs, type ServedPackage, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'
import { tgz } from './helpers/tar.js'

/** Whether pnpm recorded the lockfile as passing today's policies. */
const verdictRecorded = (...args: Parameters<typeof recordedVerdict>): boolean => recordedVerdict(...args) != null

/** The content hash in a verdict (pnpm's `hashObject` of the lockfile it read). */
const RECORDED_HASH = 'jdTk0FrA/Nz3TeSpr0ngMtoZjaED7GJ2xZ7OrhKZvqA='

/** A verdict as pnpm 11.28.11 records it for a lockfile checked with pnpm's default policies. */
function pnpmVerdict (lockfilePath: string, policy: Record<string, unknown> = {}, hash = RECORDED_HASH): string {
  const stat = fs.statSync(lockfilePath, { bigint: true })
  return JSON.stringify({
    lockfile: { hash, path: lockfilePath, size: Number(stat.size), mtimeNs: stat.mtimeNs.toString(), inode: stat.ino.toString() },
    verifiedAt: '2026-11-24T16:09:10.644Z',
    policy: {
      tarballUrlBinding: true,
      integrityRequired: true,
      variationResolutionsVerified: true,
      // sha256 of pnpm's built-in named registries (gh:, npmjs:), as pnpm wrote it on this machine.
      namedRegistriesRouting: 'cda72c506da6d35490bfca1b191ddae27e8da66c5617a46c2e2c56cbc1fa19ff',
      minimumReleaseAge: 1440,
      minimumReleaseAgeExclude: [],
      trustPolicy: null,
      trustPolicyExclude: [],
      trustPolicyIgnoreAfter: null,
      minimumReleaseAgeIgnoreMissingTime: true,
      resolutionShapeCheck: true,
      dependencyAliasCheck: true,
      variationResolutionCheck: true,
      ...policy,
    },
  }) + '\n'
}

describe('verdictRecorded: pnpm\'s record of a lockfile that passed', () => {
  const defaults = { minimumReleaseAge: 1440, minimumReleaseAgeIgnoreMissingTime: true }
  function setUp (lines: (lockfile: string) => string[]): { lockfile: string, cacheDir: string } {
    const dir = freshDir('verdict')
    const lockfile = path.join(dir, 'pnpm-lock.yaml')
    fs.writeFileSync(lockfile, "lockfileVersion: '9.0'\n")
    const cacheDir = path.join(dir, 'cache')
    fs.mkdirSync(cacheDir)
    fs.writeFileSync(path.join(cacheDir, 'lockfile-verified.jsonl'), lines(lockfile).join(''))
    return { lockfile, cacheDir }
  }

  it('covers the lockfile it names, unchanged on disk, under policies no weaker', () => {
    const { lockfile, cacheDir } = setUp((f) => ['not json\n', pnpmVerdict(f)])
    expect(verdictRecorded({ path: lockfile }, { ...defaults, cacheDir })).toBe(true)
    expect(verdictRecorded({ path: lockfile }, { ...defaults, minimumReleaseAge: 60, cacheDir })).toBe(true)
  })

  it.each([
    ['a longer minimumReleaseAge', {}, { minimumReleaseAge: 2880 }],
    ['other exclusions', {}, { minimumReleaseAgeExclude: ['left-pad'] }],
    ['a trust policy now', {}, { trustPolicy: 'no-downgrade' }],
    ['the missing-time tolerance off now', {}, { minimumReleaseAgeIgnoreMissingTime: false }],
    ['a run without the alias check', { dependencyAliasCheck: undefined }, {}],
    ['other named registries', { namedRegistriesRouting: 'x' }, {}],
  ])('not under %s', (_name, recorded, today) => {
    const { lockfile, cacheDir } = setUp((f) => [pnpmVerdict(f, recorded)])
    expect(verdictRecorded({ path: lockfile }, { ...defaults, ...today, cacheDir })).toBe(false)
  })

  const NEWER_CHECKS = { namedRegistriesRouting: undefined, variationResolutionsVerified: undefined, variationResolutionCheck: undefined, minimumReleaseAgeIgnoreMissingTime: undefined }
  const AS_WRITTEN = ['tarballUrlBinding', 'integrityRequired', 'minimumReleaseAge', 'minimumReleaseAgeExclude', 'trustPolicy', 'trustPolicyExclude', 'trustPolicyIgnoreAfter', 'resolutionShapeCheck', 'dependencyAliasCheck']
  it.each([
    ['11.19.0', 'name no registries (nor the newer checks)', NEWER_CHECKS, '11.20.0'],
    ['11.8.0', 'record no required integrity either', { ...NEWER_CHECKS, integrityRequired: undefined }, '11.9.0'],
  ])('under pnpm %s, whose verdicts %s: its own taken, and written without them', (version, _what, older, next) => {
    const form = PNPM_RELEASES.find((r) => r.version === version)!
    const { lockfile, cacheDir } = setUp((f) => [pnpmVerdict(f, older)])
    expect(verdictRecorded({ path: lockfile }, { ...defaults, cacheDir }, form)).toBe(true)
    expect(verdictRecorded({ path: lockfile }, { ...defaults, cacheDir }, PNPM_RELEASES.find((r) => r.version === next))).toBe(false)
    fs.writeFileSync(path.join(cacheDir, 'lockfile-verified.jsonl'), '')
    checkSupplyChain({ path: lockfile, contentHash: () => RECORDED_HASH }, [], { minimumReleaseAge: 0, cacheDir }, Date.now(), form).verdict?.()?.()
    const written = JSON.parse(fs.readFileSync(path.join(cacheDir, 'lockfile-verified.jsonl'), 'utf8'))
    expect(Object.keys(written.policy)).toEqual(AS_WRITTEN.filter((key) => !Object.hasOwn(older, key)))
  })

  it('not for a lockfile changed since, nor when a later record of the path does not cover today', () => {
    const changed = setUp((f) => [pnpmVerdict(f)])
    fs.appendFileSync(changed.lockfile, '\n')
    expect(verdictRecorded({ path: changed.lockfile }, { ...defaults, cacheDir: changed.cacheDir })).toBe(false)
    const superseded = setUp((f) => [pnpmVerdict(f), pnpmVerdict(f, { minimumReleaseAge: 0 })])
    expect(verdictRecorded({ path: superseded.lockfile }, { ...defaults, cacheDir: superseded.cacheDir })).toBe(false)
    expect(verdictRecorded({ path: superseded.lockfile }, { ...defaults })).toBe(false)
  })
})

describe('verdictRecorded: a lockfile elsewhere, or changed on disk, by its content hash', () => {
  const defaults = { minimumReleaseAge: 1440, minimumReleaseAgeIgnoreMissingTime: true }
  /** A verdict recorded for the same content at another path (a clone pnpm checked). */
  function setUp (policy: Record<string, unknown> = {}): { lockfile: string, cacheDir: string } {
    const dir = freshDir('verdict-content')
    const lockfile = path.join(dir, 'pnpm-lock.yaml')
    const elsewhere = path.join(dir, 'elsewhere.yaml')
    for (const f of [lockfile, elsewhere]) fs.writeFileSync(f, "lockfileVersion: '9.0'\n")
    const cacheDir = path.join(dir, 'cache')
    fs.mkdirSync(cacheDir)
    fs.writeFileSync(path.join(cacheDir, 'lockfile-verified.jsonl'), pnpmVerdict(elsewhere, policy))
    return { lockfile, cacheDir }
  }

  it('covers it when its content hash was recorded under policies no weaker, hashing only then', () => {
    const { lockfile, cacheDir } = setUp()
    let hashed = 0
    const contentHash = (hash: string | undefined) => () => { hashed++; return hash }
    expect(verdictRecorded({ path: lockfile, contentHash: contentHash(RECORDED_HASH) }, { ...defaults, cacheDir })).toBe(true)
    expect(verdictRecorded({ path: lockfile, contentHash: contentHash('other') }, { ...defaults, cacheDir })).toBe(false)
    expect(verdictRecorded({ path: lockfile, contentHash: contentHash(undefined) }, { ...defaults, cacheDir })).toBe(false)
    expect(verdictRecorded({ path: lockfile }, { ...defaults, cacheDir })).toBe(false)
    expect(hashed).toBe(3)
    // No verdict could cover a longer minimumReleaseAge: the lockfile is not hashed.
    expect(verdictRecorded({ path: lockfile, contentHash: contentHash(RECORDED_HASH) }, { ...defaults, minimumReleaseAge: 2880, cacheDir })).toBe(false)
    expect(hashed).toBe(3)
  })

  it('not when the record of its own path, for the file as it is, does not cover today (pnpm looks no further)', () => {
    const { lockfile, cacheDir } = setUp()
    fs.appendFileSync(path.join(cacheDir, 'lockfile-verified.jsonl'), pnpmVerdict(lockfile, { minimumReleaseAge: 0 }, 'own'))
    expect(verdictRecorded({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, cacheDir })).toBe(false)
    // Changed since that record: its content is looked up.
    fs.appendFileSync(lockfile, '\n')
    expect(verdictRecorded({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, cacheDir })).toBe(true)
  })

  it('not when the record of that content does not cover today', () => {
    const { lockfile, cacheDir } = setUp({ trustPolicy: 'no-downgrade' })
    expect(verdictRecorded({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, cacheDir })).toBe(false)
    expect(verdictRecorded({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, trustPolicy: 'no-downgrade', cacheDir })).toBe(true)
  })
})

/** pnpm 11.28.11's own lookup of a verdict (which adds the path's line on a content-hash match), run from its bundle. */
type PnpmLookUp = (cacheDir: string, key: { lockfilePath: string, verifiers: Array<{ canTrustPastCheck: (policy: unknown) => boolean }>, hashLockfile: () => string }) => { hit: boolean }
/** The names it uses inside its `try`s, which would swallow their absence. */
const LOOKUP_USES = ['readCache', 'readCacheFileIfExists', 'parseCacheLine', 'hasRecordKeys', 'normalizeRecord', 'isNodeError', 'CACHE_FILE_NAME', 'appendRecord',
  'maybeCompactCache', 'cacheExceedsCompactionTrigger', 'readCacheForCompaction', 'keepNewestRecordPerTuple', 'readRecordTupleKey', 'MAX_CACHE_ENTRIES', 'COMPACT_TRIGGER_BYTES']
const pnpmLookUpVerdict = pnpmFunction<PnpmLookUp>('tryLockfileVerificationCache', { fs133: fs, path213: path, util6: util, logger: { debug: () => {} } }, LOOKUP_USES)

describe('a verdict taken by content hash is recorded for the lockfile\'s path, as pnpm records it', () => {
  const defaults = { minimumReleaseAge: 1440, minimumReleaseAgeIgnoreMissingTime: true }
  /** Two caches with the same `lines` (a clone's record among them), and a lockfile of that content elsewhere. */
  function setUp (lines: (elsewhere: string) => string[]): { lockfile: string, caches: [string, string] } {
    const dir = freshDir('verdict-append')
    const lockfile = path.join(dir, 'pnpm-lock.yaml')
    const elsewhere = path.join(dir, 'elsewhere.yaml')
    for (const f of [lockfile, elsewhere]) fs.writeFileSync(f, "lockfileVersion: '9.0'\n")
    const caches = [path.join(dir, 'pnpm-cache'), path.join(dir, 'native-cache')] as [string, string]
    for (const cache of caches) {
      fs.mkdirSync(cache)
      fs.writeFileSync(path.join(cache, 'lockfile-verified.jsonl'), lines(elsewhere).join(''))
    }
    return { lockfile, caches }
  }
  /** The verdict file after pnpm's lookup in one cache and the native install's in the other. */
  function afterBoth ({ lockfile, caches: [pnpmCache, nativeCache] }: ReturnType<typeof setUp>): { pnpm: string, native: string } {
    expect(pnpmLookUpVerdict(pnpmCache, { lockfilePath: lockfile, verifiers: [{ canTrustPastCheck: () => true }], hashLockfile: () => RECORDED_HASH }).hit).toBe(true)
    const verdict = recordedVerdict({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, cacheDir: nativeCache })
    expect(verdict?.recordForPath).toBeDefined()
    verdict!.recordForPath!()
    const read = (cache: string): string => fs.readFileSync(path.join(cache, 'lockfile-verified.jsonl'), 'utf8')
    return { pnpm: read(pnpmCache), native: read(nativeCache) }
  }

  it('the line pnpm adds, its missing fields as pnpm fills them', () => {
    const partial = (elsewhere: string): string => {
      const { lockfile, policy } = JSON.parse(pnpmVerdict(elsewhere))
      return JSON.stringify({ policy, lockfile: { path: lockfile.path, hash: RECORDED_HASH } }) + '\n'
    }
    for (const lines of [(f: string) => [pnpmVerdict(f)], (f: string) => ['not json\n', partial(f)]]) {
      const set = setUp(lines)
      const before = fs.readFileSync(path.join(set.caches[1], 'lockfile-verified.jsonl'), 'utf8')
      const { pnpm, native } = afterBoth(set)
      expect(native).toBe(pnpm)
      expect(native.startsWith(before)).toBe(true)
      expect(JSON.parse(native.slice(before.length)).lockfile.path).toBe(set.lockfile)
    }
  })

  it('compacted as pnpm compacts a file grown past its limit', () => {
    // ~1.7 MB: the same two records over and over, and lines that are not records.
    const { pnpm, native } = afterBoth(setUp((f) => Array.from({ length: 3500 }, (_, i) => i % 7 === 0 ? 'junk\n' : pnpmVerdict(f, {}, i % 2 === 0 ? RECORDED_HASH : 'other'))))
    expect(native).toBe(pnpm)
    expect(native.split('\n').length).toBeLessThan(10)
  })

  it('a new verdict once the check passed without one, as pnpm 11.28.11 writes it; then none for the path it names', () => {
    const { lockfile, caches: [, cache] } = setUp(() => [])
    const file = path.join(cache, 'lockfile-verified.jsonl')
    const checked = { path: lockfile, contentHash: () => RECORDED_HASH }
    const started = Date.now()
    for (const config of [{ minimumReleaseAge: 0 }, { minimumReleaseAge: 0, trustLockfile: true }, { minimumReleaseAge: 0 }]) {
      checkSupplyChain(checked, [], { ...config, minimumReleaseAgeIgnoreMissingTime: true, cacheDir: cache }).verdict?.()?.()
    }
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '')
    expect(lines).toHaveLength(1)
    const at = /"verifiedAt":"([^"]+)"/.exec(lines[0])![1]
    expect(Date.parse(at)).toBeGreaterThanOrEqual(started)
    expect(lines[0]).toBe(pnpmVerdict(lockfile, { minimumReleaseAge: 0 }).trim().replace('2026-11-24T16:09:10.644Z', at))
  })

  it('nothing for a verdict of the path itself, nor when reading only', () => {
    const { lockfile, caches: [, cache] } = setUp((f) => [pnpmVerdict(f)])
    const before = fs.readFileSync(path.join(cache, 'lockfile-verified.jsonl'), 'utf8')
    expect(verdictRecorded({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, cacheDir: cache })).toBe(true)
    fs.appendFileSync(path.join(cache, 'lockfile-verified.jsonl'), pnpmVerdict(lockfile))
    expect(recordedVerdict({ path: lockfile, contentHash: () => RECORDED_HASH }, { ...defaults, cacheDir: cache })).toEqual({ verifiedAt: '2026-11-24T16:09:10.644Z' })
    expect(fs.readFileSync(path.join(cache, 'lockfile-verified.jsonl'), 'utf8')).toBe(before + pnpmVerdict(lockfile))
  })
})

/** The check's outcome, the registry's answer awaited. */
const outcome = async (check: SupplyChainCheck): Promise<string | undefined> => check.leftToPnpm ?? await check.registry

describe('checkSupplyChain: pnpm\'s tests of each package\'s age', () => {
  const now = Date.parse('2026-11-24T12:00:00.000Z')
  const dayBefore = '2026-11-23T11:00:00.000Z'
  const hourBefore = '2026-11-24T11:00:00.000Z'
  let registry: TarballRegistry
  const served = (name: string, version: string, published: string, more: Partial<ServedPackage> = {}) =>
    ({ name, version, published, tarball: tgz([{ name: 'package/package.json', content: JSON.stringify({ name, version }) }]), manifest: { name, version }, ...more })

  beforeAll(async () => {
    registry = await serveTarballs([
      served('old', '1.0.0', '2020-01-01T00:00:00.000Z'),
      served('@scope/old', '1.0.0', dayBefore),
      served('young', '1.0.0', '2020-01-01T00:00:00.000Z'),
      served('young', '2.0.0', hourBefore),
      // Changed within the day, and no publish times in the full metadata.
      served('timeless', '1.0.0', hourBefore, { timeless: true }),
      served('@scope/timeless', '1.0.0', hourBefore, { timeless: true, attested: dayBefore }),
      served('@scope/timeless', '2.0.0', hourBefore, { timeless: true, attested: hourBefore }),
    ])
  })
  afterAll(async () => { await registry?.close() })

  const check = (packages: Array<{ name: string, version: string }>, settings: Record<string, unknown> = {}) =>
    outcome(checkSupplyChain({ path: '/nowhere/pnpm-lock.yaml' }, packages, { minimumReleaseAge: 1440, registry: registry.url, ...settings }, now))

  it('passes versions whose metadata last changed before the cutoff (one request a name)', async () => {
    const before = registry.requests.length
    expect(await check([{ name: 'old', version: '1.0.0' }, { name: '@scope/old', version: '1.0.0' }, { name: 'old', version: '1.0.0' }])).toBeUndefined()
    expect(registry.requests.slice(before).map((r) => r.url).sort()).toEqual(['/@scope/old', '/old'])
  })

  it('where the package changed since the cutoff, reads the version\'s publish time from the full metadata', async () => {
    const before = registry.requests.length
    expect(await check([{ name: 'old', version: '1.0.0' }, { name: 'young', version: '1.0.0' }])).toBeUndefined()
    expect(registry.requests.slice(before).map((r) => r.url).sort()).toEqual(['/old', '/young', '/young'])
    expect(await check([{ name: 'young', version: '1.0.0' }, { name: 'young', version: '2.0.0' }])).toBe('young@2.0.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
    expect(await check([{ name: 'young', version: '2.0.0' }], { minimumReleaseAge: 30 })).toBeUndefined()
  })

  it('metadata without publish times: under minimumReleaseAgeIgnoreMissingTime, passed with pnpm\'s warning unless an attestation shows the version young', async () => {
    const warned = async (packages: Array<{ name: string, version: string }>, settings: Record<string, unknown>) => {
      const started = checkSupplyChain({ path: '/nowhere/pnpm-lock.yaml' }, packages, { minimumReleaseAge: 1440, registry: registry.url, ...settings }, now)
      return { outcome: await outcome(started), warnings: started.warnings }
    }
    const ignore = { minimumReleaseAgeIgnoreMissingTime: true }
    const before = registry.requests.length
    expect(await warned([{ name: 'timeless', version: '1.0.0' }], ignore)).toEqual({
      outcome: undefined,
      warnings: ['The metadata of timeless is missing the "time" field; skipping the minimumReleaseAge check for this package.'],
    })
    expect(registry.requests.slice(before).map((r) => r.url)).toEqual(['/timeless', '/timeless', '/-/npm/v1/attestations/timeless@1.0.0'])
    // An attestation logged before the cutoff shows the version old: no warning.
    expect(await warned([{ name: '@scope/timeless', version: '1.0.0' }], ignore)).toEqual({ outcome: undefined, warnings: [] })
    expect((await warned([{ name: '@scope/timeless', version: '2.0.0' }], ignore)).outcome).toBe('@scope/timeless@2.0.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
    // Without the tolerance, pnpm refuses metadata without times: left to it.
    expect((await warned([{ name: 'timeless', version: '1.0.0' }], {})).outcome).toBe('timeless@1.0.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
    // The trust test, on the same metadata: passed with the warning of its own.
    expect(await warned([{ name: 'timeless', version: '1.0.0' }], { ...ignore, minimumReleaseAge: 0, trustPolicy: 'no-downgrade' })).toEqual({
      outcome: undefined,
      warnings: ['The metadata of timeless is missing the "time" field; skipping the trustPolicy check for this package.'],
    })
    expect((await warned([{ name: 'timeless', version: '1.0.0' }], { minimumReleaseAge: 0, trustPolicy: 'no-downgrade' })).outcome).toBe('timeless: its metadata has no publish times: pnpm checks the lockfile first')
  })

  it('leaves to pnpm a version the metadata does not list, and metadata it cannot get', async () => {
    expect(await check([{ name: 'old', version: '9.9.9' }])).toBe('old@9.9.9 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
    expect(await check([{ name: 'unknown', version: '1.0.0' }])).toBe('unknown: its registry metadata did not download: pnpm checks the lockfile first')
    expect(await check([{ name: 'old', version: '1.0.0' }], { httpsProxy: 'http://proxy' })).toBe('pnpm checks the lockfile against minimumReleaseAge first (httpsProxy is set)')
  })

  it('a version without a publish time, under minimumReleaseAgeIgnoreMissingTime: left to pnpm from 11.23.0, where only metadata without any time passes; passed with pnpm\'s warning by releases to 11.22.0, unless an attestation shows it young (user try: create-vue under 11.22.0, a cypress version the mirror does not list, passed by stock and left to pnpm, which checked it again)', async () => {
    const release = (version: string) => PNPM_RELEASES.find((r) => r.version === version)!
    const under = (version: string, packages: Array<{ name: string, version: string }>) => {
      const started = checkSupplyChain({ path: '/nowhere/pnpm-lock.yaml' }, packages, { minimumReleaseAge: 1440, minimumReleaseAgeIgnoreMissingTime: true, registry: registry.url }, now, release(version))
      return outcome(started).then((why) => ({ why, warnings: started.warnings }))
    }
    expect(await under('11.23.0', [{ name: 'old', version: '9.9.9' }])).toEqual({ why: 'old@9.9.9 may be younger than minimumReleaseAge: pnpm checks the lockfile first', warnings: [] })
    expect(await under('11.22.0', [{ name: 'old', version: '9.9.9' }, { name: 'old', version: '1.0.0' }])).toEqual({ why: undefined, warnings: ['The metadata of old is missing the "time" field; skipping the minimumReleaseAge check for this package.'] })
    // A version with its publish time is tested as before; without the tolerance, nothing passes so.
    expect((await under('11.22.0', [{ name: 'young', version: '2.0.0' }])).why).toBe('young@2.0.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
    expect(await outcome(checkSupplyChain({ path: '/nowhere/pnpm-lock.yaml' }, [{ name: 'old', version: '9.9.9' }], { minimumReleaseAge: 1440, registry: registry.url }, now, release('11.22.0')))).toBe('old@9.9.9 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
  })

  it('leaves to pnpm a registry that answers nothing, after pnpm\'s fetchTimeout (issue 22, item 9)', async () => {
    const silent = net.createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`
      expect(await check([{ name: 'old', version: '1.0.0' }], { registry: url, fetchTimeout: 200 })).toBe('old: its registry metadata did not download: pnpm checks the lockfile first')
    } finally {
      silent.close()
    }
  }, 10_000)

  it('asks the registry with a networkConcurrency it cannot use as if none were set', async () => {
    expect(await check([{ name: 'young', version: '2.0.0' }], { networkConcurrency: 0 })).toBe('young@2.0.0 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
  })

  it('asks nothing when no policy applies, or trustLockfile skips pnpm\'s check', async () => {
    const before = registry.requests.length
    expect(await check([{ name: 'young', version: '2.0.0' }], { minimumReleaseAge: 0 })).toBeUndefined()
    expect(await check([{ name: 'young', version: '2.0.0' }], { trustLockfile: true, trustPolicy: 'no-downgrade' })).toBeUndefined()
    expect(registry.requests.length).toBe(before)
  })

  it('takes what pnpm\'s own metadata cache shows old instead of asking', async () => {
    const cacheDir = freshDir('metadata-cache')
    const port = new URL(registry.url).port
    /** A file as pnpm 11.28 writes it: format line, headers, index, (fragments). */
    const write = (dir: string, file: string, headers: object, index: object): void => {
      const [h, i] = [JSON.stringify(headers), JSON.stringify(index)]
      fs.mkdirSync(path.join(cacheDir, dir, `http%3A+127.0.0.1+${port}`, path.dirname(file)), { recursive: true })
      fs.writeFileSync(path.join(cacheDir, dir, `http%3A+127.0.0.1+${port}`, file), `pnpm-meta-v1 ${Buffer.byteLength(h)} ${Buffer.byteLength(i)}\n${h}${i}{"name":"x"}`)
    }
    // young@2.0.0 (published an hour ago) shown old by the cache, as if pnpm had recorded it so:
    // proof that the cache is read; @scope/old's abbreviated entry, by its `modified`.
    write('v12/metadata-full', 'young.jsonl', {}, { name: 'young', versions: [['1.0.0', 0, 12], ['2.0.0', 12, 12]], time: { '1.0.0': '2020-01-01T00:00:00.000Z', '2.0.0': '2020-01-01T00:00:00.000Z' } })
    write('v12/metadata', '@scope/old.jsonl', { modified: '2020-01-01T00:00:00.000Z' }, { name: '@scope/old', versions: [['1.0.0', 0, 12]] })
    // Not shown old: a time missing for a listed version (pnpm drops such times).
    write('v12/metadata-full', 'old.jsonl', {}, { name: 'old', versions: [['1.0.0', 0, 12], ['0.9.0', 12, 12]], time: { '1.0.0': '2020-01-01T00:00:00.000Z' } })
    const before = registry.requests.length
    expect(await check([{ name: 'young', version: '2.0.0' }, { name: '@scope/old', version: '1.0.0' }, { name: 'old', version: '1.0.0' }], { cacheDir })).toBeUndefined()
    expect(registry.requests.slice(before).map((r) => r.url)).toEqual(['/old'])
  })

  it('takes pnpm\'s verdict instead of asking', async () => {
    const dir = freshDir('verdict-used')
    const lockfile = path.join(dir, 'pnpm-lock.yaml')
    fs.writeFileSync(lockfile, "lockfileVersion: '9.0'\n")
    fs.writeFileSync(path.join(dir, 'lockfile-verified.jsonl'), pnpmVerdict(lockfile))
    const before = registry.requests.length
    const settings = { minimumReleaseAge: 1440, minimumReleaseAgeIgnoreMissingTime: true, cacheDir: dir, registry: registry.url }
    const check = checkSupplyChain({ path: lockfile }, [{ name: 'young', version: '2.0.0' }], settings, now)
    expect(check.registry).toBeUndefined()
    expect(await outcome(check)).toBeUndefined()
    expect(registry.requests.length).toBe(before)
  })

  it('says what pnpm\'s check logs of itself: the verdict it took and when that check was made, or its entries (each name and version once) and how long it took; nothing under trustLockfile, for no packages, or for a check pnpm would fail', async () => {
    const dir = freshDir('check-log')
    const lockfile = path.join(dir, 'pnpm-lock.yaml')
    fs.writeFileSync(lockfile, "lockfileVersion: '9.0'\n")
    const packages = [{ name: 'old', version: '1.0.0' }, { name: '@scope/old', version: '1.0.0' }, { name: 'old', version: '1.0.0' }]
    const logged = async (list: typeof packages, settings: Record<string, unknown>) => {
      const started = checkSupplyChain({ path: lockfile }, list, { registry: registry.url, ...settings }, now)
      await outcome(started)
      started.verdict?.()
      return started.log()
    }
    // The registry asked: pnpm's check ends while it imports.
    expect(await logged(packages, { minimumReleaseAge: 1440 })).toEqual({ status: 'done', entries: 2, elapsedMs: expect.any(Number), asked: true })
    expect(await logged([{ name: 'young', version: '2.0.0' }], { minimumReleaseAge: 1440 })).toBeUndefined()
    // No policy: its offline check, at once.
    expect(await logged(packages, { minimumReleaseAge: 0 })).toEqual({ status: 'done', entries: 2, elapsedMs: expect.any(Number), asked: false })
    expect(await logged([], { minimumReleaseAge: 0 })).toBeUndefined()
    expect(await logged(packages, { trustLockfile: true })).toBeUndefined()
    // A verdict of pnpm's, with or without a policy.
    fs.writeFileSync(path.join(dir, 'lockfile-verified.jsonl'), pnpmVerdict(lockfile))
    for (const minimumReleaseAge of [0, 1440]) {
      expect(await logged(packages, { minimumReleaseAge, minimumReleaseAgeIgnoreMissingTime: true, cacheDir: dir })).toEqual({ status: 'cached', verifiedAt: '2026-11-24T16:09:10.644Z', lockfilePath: lockfile })
    }
    // Where pnpm keeps verdicts (a cacheDir), its records name the lockfile.
    expect(await logged(packages, { minimumReleaseAge: 0, cacheDir: freshDir('check-log-cache') })).toEqual({ status: 'done', entries: 2, elapsedMs: expect.any(Number), asked: false, lockfilePath: lockfile })
  })
})

describe('checkSupplyChain: pnpm\'s trust test and the exclusion lists', () => {
  const now = Date.parse('2026-11-24T12:00:00.000Z')
  let registry: TarballRegistry
  const served = (name: string, version: string, published: string, trust?: 'provenance' | 'trustedPublisher') =>
    ({ name, version, published, trust, tarball: tgz([{ name: 'package/package.json', content: JSON.stringify({ name, version }) }]), manifest: { name, version } })

  beforeAll(async () => {
    registry = await serveTarballs([
      served('plain', '1.0.0', '2020-01-01T00:00:00.000Z'),
      served('plain', '1.1.0', '2020-02-01T00:00:00.000Z'),
      served('attested', '1.0.0', '2020-01-01T00:00:00.000Z', 'provenance'),
      served('attested', '1.1.0', '2020-02-01T00:00:00.000Z', 'trustedPublisher'),
      served('downgraded', '1.0.0', '2020-01-01T00:00:00.000Z', 'trustedPublisher'),
      served('downgraded', '1.0.1', '2020-02-01T00:00:00.000Z', 'provenance'),
      served('downgraded', '1.0.2', '2026-11-24T11:00:00.000Z'),
    ])
  })
  afterAll(async () => { await registry?.close() })

  const check = (packages: Array<{ name: string, version: string }>, settings: Record<string, unknown> = {}) =>
    outcome(checkSupplyChain({ path: '/nowhere/pnpm-lock.yaml' }, packages, { trustPolicy: 'no-downgrade', registry: registry.url, ...settings }, now))

  it('passes versions with no less evidence than the versions published before them, from the full metadata (one request a name)', async () => {
    const before = registry.requests.length
    expect(await check([{ name: 'plain', version: '1.1.0' }, { name: 'attested', version: '1.1.0' }, { name: 'attested', version: '1.0.0' }, { name: 'downgraded', version: '1.0.0' }])).toBeUndefined()
    expect(registry.requests.slice(before).map((r) => r.url).sort()).toEqual(['/attested', '/downgraded', '/plain'])
  })

  it('leaves a downgrade to pnpm (which refuses it), and metadata it cannot get', async () => {
    expect(await check([{ name: 'downgraded', version: '1.0.1' }])).toBe('downgraded@1.0.1: less trust evidence than a version published before it: pnpm checks the lockfile first')
    expect(await check([{ name: 'plain', version: '1.1.0' }, { name: 'downgraded', version: '1.0.2' }])).toMatch(/^downgraded@1\.0\.2: less trust evidence /)
    expect(await check([{ name: 'unknown', version: '1.0.0' }])).toBe('unknown: its full registry metadata did not download: pnpm checks the lockfile first')
  })

  it('trustPolicyExclude and trustPolicyIgnoreAfter: the versions they name are not tested, as pnpm', async () => {
    expect(await check([{ name: 'downgraded', version: '1.0.1' }], { trustPolicyExclude: ['downgraded'] })).toBeUndefined()
    expect(await check([{ name: 'downgraded', version: '1.0.1' }], { trustPolicyExclude: ['down*'] })).toBeUndefined()
    expect(await check([{ name: 'downgraded', version: '1.0.1' }], { trustPolicyExclude: ['downgraded@1.0.1 || 1.0.2'] })).toBeUndefined()
    expect(await check([{ name: 'downgraded', version: '1.0.1' }], { trustPolicyExclude: ['downgraded@1.0.2'] })).toMatch(/^downgraded@1\.0\.1: less trust evidence /)
    // Published more than a day before now: not tested; an hour before: tested.
    expect(await check([{ name: 'downgraded', version: '1.0.1' }], { trustPolicyIgnoreAfter: 1440 })).toBeUndefined()
    expect(await check([{ name: 'downgraded', version: '1.0.2' }], { trustPolicyIgnoreAfter: 1440 })).toMatch(/^downgraded@1\.0\.2: less trust evidence /)
    // Nothing left to test: no request.
    const before = registry.requests.length
    expect(await check([{ name: 'downgraded', version: '1.0.1' }], { trustPolicyExclude: ['downgraded'] })).toBeUndefined()
    expect(registry.requests.length).toBe(before)
  })

  it('minimumReleaseAgeExclude: the versions it names are not tested for age, as pnpm; the trust test still applies to them', async () => {
    const young = [{ name: 'downgraded', version: '1.0.2' }]
    const age = { trustPolicy: undefined, minimumReleaseAge: 1440 }
    expect(await check(young, age)).toBe('downgraded@1.0.2 may be younger than minimumReleaseAge: pnpm checks the lockfile first')
    expect(await check(young, { ...age, minimumReleaseAgeExclude: ['downgraded@1.0.2'] })).toBeUndefined()
    expect(await check(young, { ...age, minimumReleaseAgeExclude: ['@scope/*', 'down*'] })).toBeUndefined()
    expect(await check(young, { ...age, minimumReleaseAgeExclude: ['downgraded@1.0.1'] })).toMatch(/may be younger than minimumReleaseAge/)
    expect(await check(young, { ...age, trustPolicy: 'no-downgrade', minimumReleaseAgeExclude: ['downgraded'] })).toMatch(/^downgraded@1\.0\.2: less trust evidence /)
  })

  it('leaves to pnpm exclusion lists it refuses, without asking the registry', async () => {
    const before = registry.requests.length
    expect(await check([{ name: 'plain', version: '1.1.0' }], { trustPolicyExclude: ['plain@^1'] })).toBe('pnpm refuses trustPolicyExclude: "plain@^1" is not exact versions')
    expect(await check([{ name: 'plain', version: '1.1.0' }], { minimumReleaseAge: 1440, minimumReleaseAgeExclude: ['pl*@1.1.0'] })).toBe('pnpm refuses minimumReleaseAgeExclude: "pl*@1.1.0" has a name pattern with versions')
    expect(registry.requests.length).toBe(before)
  })
})

describe('firstFailure: the requests\' pool', () => {
  it('runs the tasks in order, at most `limit` at once, and starts none after the first failure', async () => {
    const started: number[] = []
    let running = 0
    let most = 0
    const why = await firstFailure([1, 2, 3, 4, 5, 6, 7, 8], 3, async (n) => {
      started.push(n)
      most = Math.max(most, ++running)
      await new Promise((resolve) => setTimeout(resolve, 5))
      running--
      return n === 4 ? 'four failed' : undefined
    })
    expect(why).toBe('four failed')
    expect(most).toBe(3)
    expect(started).toEqual([1, 2, 3, 4, 5, 6])
    expect(await firstFailure([], 3, async () => 'never')).toBeUndefined()
  })

  it('refuses a limit under which nothing would run (and so nothing would fail)', async () => {
    for (const limit of [0, -1, Number.NaN, 1.5]) {
      await expect(firstFailure([1], limit, async () => 'failed')).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' })
    }
  })
})
