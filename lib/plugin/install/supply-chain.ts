/**
 * pnpm 11's supply-chain check of a lockfile, for the native install, which runs before pnpm
 * would make it. Before pnpm installs a lockfile it checks every package against
 * `minimumReleaseAge` (a day by default: no version younger than that) and, with `trustPolicy:
 * no-downgrade`, against the registry's trust evidence; `trustLockfile` skips the check.
 *
 * The native install goes ahead only where pnpm's check would pass, found in one of two ways:
 * - pnpm's own verdict: pnpm records each lockfile that passed in `<cacheDir>/lockfile-verified.jsonl`,
 *   under its path and its content hash, and skips the check when the lockfile file is the one
 *   it recorded at that path (same size, mtime and inode), or else has a recorded content hash,
 *   under policies no weaker than today's. Read the same way here; one taken by content hash is
 *   recorded for the lockfile's path too, as pnpm records it (`verdict-file.ts`).
 * - pnpm's test, made here: a version listed in its package's abbreviated registry metadata
 *   whose `modified` time is before the cutoff was published before it; where that does not
 *   tell (the package changed since: a popular one often has), the publish time of the version
 *   in the package's full metadata (`time`) must be. pnpm reads that publish time from its
 *   metadata cache, the registry's attestations or the full metadata; this, from the last.
 *   Full metadata with no `time` at all passes under `minimumReleaseAgeIgnoreMissingTime`
 *   unless the version's attestations show it young, with pnpm's warning (`warnings`).
 *   Anything else (a later date, no date, metadata that does not download) is left to pnpm,
 *   which looks again and says why it refuses.
 * - pnpm's own metadata cache first (`metadata-cache.ts`): what it shows old needs no request.
 * - with `trustPolicy: no-downgrade`, pnpm's trust test (`trust-policy.ts`) on each package's full
 *   metadata from the registry.
 * `minimumReleaseAgeExclude` and `trustPolicyExclude` take the versions they name out of each
 * test, matched as pnpm matches them (`version-policy.ts`); a list pnpm refuses is left to it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { createHash } from 'node:crypto'
import { firstFailure } from '../first-failure.js'
import { cachedAges } from './metadata-cache.js'
import { fetchUnsupported, networkConcurrencyOf, networkOf, registryJson, registryOf } from '../registry-fetch.js'
import { trustNotShown, type TrustPolicy } from './trust-policy.js'
import { excludes, versionPolicy, type VersionPolicy } from './version-policy.js'
import { PNPM_RELEASES, type PnpmRelease } from './pnpm-releases.js'
import { appendVerdict, appendVerdictForPath, lockfileStat, readVerdicts, VERDICT_FILE, type LockfileStat, type Verdict } from './verdict-file.js'

/** pnpm's settings the check reads. */
export interface SupplyChainConfig {
  cacheDir?: string
  minimumReleaseAge?: number
  minimumReleaseAgeExclude?: string[]
  minimumReleaseAgeIgnoreMissingTime?: boolean
  trustPolicy?: string
  trustPolicyExclude?: string[]
  trustPolicyIgnoreAfter?: number
  trustLockfile?: boolean
  [setting: string]: unknown
}

/** pnpm's built-in named registries (`gh:`, `npmjs:`), which its verdicts are keyed by. */
const BUILTIN_REGISTRIES_BY_PREFIX = { gh: 'https://npm.pkg.github.com/', npmjs: 'https://registry.npmjs.org/' }

/** What a release requires of a verdict, how it records its policy, and what its check passes without a publish time. */
export type VerdictForm = Pick<PnpmRelease, 'verdictChecks' | 'verdictMissingTime' | 'verdictRouting' | 'missingTimePassed'>

/** The newest release's verdicts. */
const NEWEST: VerdictForm = PNPM_RELEASES.at(-1)!

/** pnpm's digest of the named registries a verdict was made under: the native install leaves registries by prefix to pnpm, so only the built-in ones. */
const namedRegistriesRouting = (): string => createHash('sha256').update(JSON.stringify(BUILTIN_REGISTRIES_BY_PREFIX)).digest('hex')

const sortedUnique = (patterns: string[] | undefined): string[] => [...new Set(patterns ?? [])].sort()
const sameList = (cached: unknown, current: string[]): boolean => JSON.stringify(Array.isArray(cached) ? cached : []) === JSON.stringify(current)

/** Whether a policy pnpm recorded with a verdict covers today's, by pnpm's rules. */
function coversToday (cached: Record<string, unknown>, config: SupplyChainConfig, form: VerdictForm): boolean {
  const numberOr = <T>(value: unknown, otherwise: T): number | T => typeof value === 'number' ? value : otherwise
  return form.verdictChecks.every((check) => cached[check] === true) &&
    (!form.verdictRouting || cached.namedRegistriesRouting === namedRegistriesRouting()) &&
    numberOr(cached.minimumReleaseAge, 0) >= (config.minimumReleaseAge ?? 0) &&
    sameList(cached.minimumReleaseAgeExclude, sortedUnique(config.minimumReleaseAgeExclude)) &&
    (cached.trustPolicy ?? null) === (config.trustPolicy ?? null) &&
    sameList(cached.trustPolicyExclude, sortedUnique(config.trustPolicyExclude)) &&
    numberOr(cached.trustPolicyIgnoreAfter, null) === (config.trustPolicyIgnoreAfter ?? null) &&
    !(form.verdictMissingTime && cached.minimumReleaseAgeIgnoreMissingTime === true && config.minimumReleaseAgeIgnoreMissingTime !== true)
}

/** The lockfile pnpm's verdicts are looked up for: where it is, and pnpm's content hash of it (`lockfile-hash.ts`; `undefined`: none). */
export interface CheckedLockfile {
  path: string
  contentHash?: () => string | undefined
}

/** pnpm's content hash of the lockfile; `undefined` when there is none or it fails (pnpm then takes no verdict by it). */
function hashOf (lockfile: CheckedLockfile): string | undefined {
  try {
    return lockfile.contentHash?.()
  } catch {
    return undefined
  }
}

/**
 * A verdict of pnpm's that covers the lockfile today. `recordForPath`, when it was found by
 * content hash, adds the line pnpm adds then for the lockfile's path: the native install calls
 * it once it goes ahead (pnpm's own check would have added it, and finds the path's line after).
 */
export interface RecordedVerdict { recordForPath?: () => void, verifiedAt?: unknown }

/**
 * pnpm's verdict on the lockfile under today's policies, with every check the running pnpm
 * release requires of a verdict (`form`), looked up as pnpm looks it up: the verdict for
 * its path when the file is the one recorded there (same size, mtime and inode), and only that
 * one; otherwise the verdict for its content hash (a fresh clone of a lockfile verified here
 * before). Reads only.
 */
export function recordedVerdict (lockfile: CheckedLockfile, config: SupplyChainConfig, form: VerdictForm = NEWEST): RecordedVerdict | undefined {
  const { cacheDir } = config
  if (cacheDir == null) return undefined
  let text: string
  let stat: LockfileStat
  try {
    text = fs.readFileSync(path.join(cacheDir, VERDICT_FILE), 'utf8')
    stat = lockfileStat(fs.statSync(lockfile.path, { bigint: true }))
  } catch {
    return undefined
  }
  const { byPath, byHash } = readVerdicts(text)
  const covers = (verdict: Verdict): boolean =>
    typeof verdict.policy === 'object' && verdict.policy != null && coversToday(verdict.policy as Record<string, unknown>, config, form)
  const atPath = byPath.get(lockfile.path)
  if (atPath != null && atPath.lockfile.size === stat.size && atPath.lockfile.mtimeNs === stat.mtimeNs && atPath.lockfile.inode === stat.inode) {
    return covers(atPath) ? { verifiedAt: atPath.verifiedAt } : undefined
  }
  // Hashing a large lockfile takes a while: only when a verdict could cover today's policies.
  if (lockfile.contentHash == null || ![...byHash.values()].some(covers)) return undefined
  const hash = hashOf(lockfile)
  const verdict = hash != null ? byHash.get(hash) : undefined
  if (verdict == null || !covers(verdict)) return undefined
  return { recordForPath: () => appendVerdictForPath(cacheDir, verdict, lockfile.path, stat), verifiedAt: verdict.verifiedAt }
}

/**
 * The policy pnpm records with a verdict of its own check under `config`: its npm verifier's
 * snapshot (the checks it enforces, `form` telling which of them the running release
 * has, the named registries' digest, the age and trust settings), then the offline checks'.
 */
function pnpmPolicy (config: SupplyChainConfig, form: VerdictForm): Record<string, unknown> {
  const flag = (check: string): Record<string, true> => form.verdictChecks.includes(check) ? { [check]: true } : {}
  return {
    tarballUrlBinding: true,
    ...flag('revisionHistoryBinding'),
    ...flag('integrityRequired'),
    ...flag('variationResolutionsVerified'),
    ...(form.verdictRouting ? { namedRegistriesRouting: namedRegistriesRouting() } : {}),
    minimumReleaseAge: config.minimumReleaseAge ?? 0,
    minimumReleaseAgeExclude: sortedUnique(config.minimumReleaseAgeExclude),
    trustPolicy: config.trustPolicy ?? null,
    trustPolicyExclude: sortedUnique(config.trustPolicyExclude),
    trustPolicyIgnoreAfter: config.trustPolicyIgnoreAfter ?? null,
    ...(form.verdictMissingTime ? { minimumReleaseAgeIgnoreMissingTime: config.minimumReleaseAgeIgnoreMissingTime === true } : {}),
    resolutionShapeCheck: true,
    dependencyAliasCheck: true,
    ...flag('variationResolutionCheck'),
  }
}

/**
 * What pnpm's check leaves in its verdict file once it passed without a verdict to take: a new
 * one for the lockfile (its content hash, path and stat, the time it is added, today's policy),
 * worked out now (the lockfile hashed) and added by the function returned. Nothing without the
 * content hash (a lockfile `lockfile-hash.ts` does not rebuild; pnpm would record it).
 */
function newVerdict (lockfile: CheckedLockfile, config: SupplyChainConfig, form: VerdictForm): (() => void) | undefined {
  const { cacheDir } = config
  if (cacheDir == null) return undefined
  let stat: LockfileStat
  try {
    stat = lockfileStat(fs.statSync(lockfile.path, { bigint: true }))
  } catch {
    return undefined
  }
  const hash = hashOf(lockfile)
  if (hash == null) return undefined
  const policy = pnpmPolicy(config, form)
  return () => appendVerdict(cacheDir, { lockfile: { hash, path: lockfile.path, ...stat }, verifiedAt: new Date().toISOString(), policy })
}

/** A package's registry metadata: the versions, when it last changed, and (full metadata) when each was published. */
interface Metadata { modified?: unknown, versions?: Record<string, unknown>, time?: Record<string, unknown> }

const ABBREVIATED = 'application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*'

async function fetchMetadata (name: string, config: SupplyChainConfig, signal: AbortSignal, accept = ABBREVIATED): Promise<Metadata | undefined> {
  return await registryJson(`${registryOf(name, config)}${name.replace('/', '%2f')}`, accept, signal, networkOf(config)) as Metadata | undefined
}

/** Where the native install stands with pnpm's check of a lockfile. */
export interface SupplyChainCheck {
  /** Why the install is left to pnpm, known without asking the registry. */
  leftToPnpm?: string
  /** The registry's answer, when it is asked: why the install is left to pnpm, or `undefined`: cleared. Never rejects. */
  registry?: Promise<string | undefined>
  /** Stops asking the registry (the install went another way). */
  cancel: () => void
  /**
   * The warnings pnpm's check gives on the way (in pnpm's words, each once), when the registry
   * is asked: complete once `registry` has answered.
   */
  warnings?: string[]
  /**
   * Works out what pnpm's check adds to its verdict file (the verdict it took by content hash
   * copied for the lockfile's path, or a new verdict; reading the file, hashing the lockfile),
   * once the registry, when asked, cleared it (`registry` answered `undefined`); the function
   * it returns adds it, to call when the install is done and pnpm is to find it up to date (an
   * install of pnpm's own after the layout makes pnpm's check and records it itself).
   */
  verdict?: () => (() => void) | undefined
  /** What pnpm's check logs of itself, once it is over here (`registry` answered, `verdict` worked out); `undefined`: nothing. */
  log: () => CheckLog | undefined
}

/**
 * What pnpm's check logs of itself (its `pnpm:lockfile-verification` records), which its
 * reporter prints: the verdict it took (`cached`, with when that check was made), or its check of
 * `entries` packages (each name and version once) that took `elapsedMs`, `asked`: with the
 * registry (pnpm's ends while it imports), or not (it ends at once).
 */
export type CheckLog = ({ status: 'cached', verifiedAt?: unknown } | { status: 'done', entries: number, elapsedMs: number, asked: boolean }) & {
  /** The lockfile, named where pnpm keeps verdicts (it has a `cacheDir`), as pnpm's records name it. */
  lockfilePath?: string
}

/** What pnpm's check tests, as the settings ask. */
interface Tests {
  /** The age test: versions must be published by then (ms), those `ageExclude` names aside. */
  cutoff?: number
  ageExclude?: VersionPolicy
  /** The trust test (`trustPolicy: no-downgrade`). */
  trust?: TrustPolicy
  /** What passes without a publish time, under `minimumReleaseAgeIgnoreMissingTime`. */
  missingTimePassed: PnpmRelease['missingTimePassed']
}

/** A list of patterns as pnpm reads it (none: no policy), or why pnpm refuses it. */
function exclusions (patterns: string[] | undefined, setting: string): VersionPolicy | undefined | string {
  if (patterns == null || patterns.length === 0) return undefined
  const policy = versionPolicy(patterns)
  return typeof policy === 'string' ? `pnpm refuses ${setting}: ${policy}` : policy
}

/**
 * Whether the native install can stand in for pnpm's check of these packages: no check applies,
 * pnpm's verdict covers the lockfile, or every version passes pnpm's tests of the registry's
 * metadata, which are started here and answered by `registry`. `now`: when the age is measured
 * from; `form`: what the running release requires of a verdict, and how it records one.
 */
export function checkSupplyChain (lockfile: CheckedLockfile, packages: Array<{ name: string, version: string }>, config: SupplyChainConfig, now = Date.now(), form: VerdictForm = NEWEST): SupplyChainCheck {
  const cancel = (): void => {}
  const unlogged = (): undefined => undefined
  const ageMinutes = config.minimumReleaseAge ?? 0
  const trust = config.trustPolicy === 'no-downgrade'
  if (config.trustLockfile === true) return { cancel, log: unlogged }
  // pnpm checks each name and version once, and logs nothing for a lockfile without packages.
  const entries = new Set(packages.map(({ name, version }) => `${name}@${version}`)).size
  const started = performance.now()
  const named = config.cacheDir != null ? { lockfilePath: lockfile.path } : {}
  const checked = (asked: boolean): CheckLog | undefined => entries === 0 ? undefined : { status: 'done', entries, elapsedMs: Math.round(performance.now() - started), asked, ...named }
  const cached = (verdict: RecordedVerdict): CheckLog => ({ status: 'cached', verifiedAt: verdict.verifiedAt, ...named })
  let log: CheckLog | undefined
  // No policy: pnpm's check is its offline one (which the native install's plan stands in for),
  // and its verdict file is all that is left to do.
  if (ageMinutes === 0 && !trust) {
    const verdict = (): (() => void) | undefined => {
      const recorded = recordedVerdict(lockfile, config, form)
      log = recorded != null ? cached(recorded) : checked(false)
      return recorded == null ? newVerdict(lockfile, config, form) : recorded.recordForPath
    }
    return { cancel, verdict, log: () => log }
  }
  const recorded = recordedVerdict(lockfile, config, form)
  if (recorded != null) return { cancel, verdict: () => recorded.recordForPath, log: () => cached(recorded) }
  const ageExclude = exclusions(config.minimumReleaseAgeExclude, 'minimumReleaseAgeExclude')
  const trustExclude = exclusions(config.trustPolicyExclude, 'trustPolicyExclude')
  for (const refused of [ageExclude, trustExclude]) if (typeof refused === 'string') return { leftToPnpm: refused, cancel, log: unlogged }
  const unsupported = fetchUnsupported(config)
  const policies = [ageMinutes > 0 ? 'minimumReleaseAge' : [], trust ? 'trustPolicy' : []].flat().join(' and ')
  if (unsupported != null) return { leftToPnpm: `pnpm checks the lockfile against ${policies} first (${unsupported})`, cancel, log: unlogged }
  const tests: Tests = {
    ...(ageMinutes > 0 ? { cutoff: now - ageMinutes * 60_000, ageExclude: ageExclude as VersionPolicy | undefined } : {}),
    ...(trust ? { trust: { exclude: trustExclude as VersionPolicy | undefined, ignoreAfterMinutes: config.trustPolicyIgnoreAfter, now } } : {}),
    missingTimePassed: form.missingTimePassed,
  }
  const controller = new AbortController()
  const warnings: string[] = []
  const warn = (message: string): void => { if (!warnings.includes(message)) warnings.push(message) }
  const registry = askRegistry(packages, config, tests, controller.signal, warn).then((why) => {
    if (why == null) log = checked(true)
    return why
  })
  return { registry, cancel: () => controller.abort(), warnings, verdict: () => newVerdict(lockfile, config, form), log: () => log }
}

/**
 * pnpm's warning when it passes a package whose full metadata has no publish times at all
 * (`minimumReleaseAgeIgnoreMissingTime`), in its words (`warnMissingTimeFieldOnce`).
 */
const missingTimeWarning = (name: string, check: 'minimumReleaseAge' | 'trustPolicy'): string =>
  `The metadata of ${name} is missing the "time" field; skipping the ${check} check for this package.`

/**
 * When the registry's attestations of a version say it was published (ms): the earliest time a
 * transparency log entry of any of them was integrated, as pnpm reads it; `undefined`: none.
 */
function attestedAt (body: unknown): number | undefined {
  const attestations = (body as { attestations?: unknown } | null)?.attestations
  if (!Array.isArray(attestations)) return undefined
  let earliest: number | undefined
  for (const attestation of attestations) {
    const entries = (attestation as { bundle?: { verificationMaterial?: { tlogEntries?: unknown } } } | null)?.bundle?.verificationMaterial?.tlogEntries
    if (!Array.isArray(entries)) continue
    for (const entry of entries) {
      const raw = (entry as { integratedTime?: unknown } | null)?.integratedTime
      const seconds = typeof raw === 'string' ? Number(raw) : typeof raw === 'number' ? raw : Number.NaN
      if (Number.isFinite(seconds) && seconds > 0 && (earliest == null || seconds < earliest)) earliest = seconds
    }
  }
  return earliest == null ? undefined : earliest * 1000
}

/** What a metadata document says of a package's age: the versions it lists, when it last changed, publish times. */
interface AgeEvidence { listed: (version: string) => boolean, modified?: unknown, time?: Record<string, unknown> }

/**
 * Whether `doc` shows `version` published by `cutoff`, by pnpm's tests: listed in metadata last
 * changed before the cutoff, or published (its `time`) by then.
 */
function shownOld (doc: AgeEvidence, version: string, cutoff: number): boolean {
  const modified = typeof doc.modified === 'string' ? Date.parse(doc.modified) : Number.NaN
  const published = doc.time?.[version]
  return (modified < cutoff && doc.listed(version)) || (typeof published === 'string' && Date.parse(published) <= cutoff)
}

/** The versions of one package pnpm's check looks at, and its metadata, each document fetched once. */
class PackageQuery {
  private full?: Promise<Metadata | undefined>
  constructor (readonly name: string, readonly versions: string[], private readonly config: SupplyChainConfig, private readonly signal: AbortSignal, private readonly warn: (message: string) => void) {}

  /** Whether pnpm passes metadata without publish times, with a warning. */
  private get ignoresMissingTime (): boolean {
    return this.config.minimumReleaseAgeIgnoreMissingTime === true
  }

  fullMetadata (): Promise<Metadata | undefined> {
    this.full ??= fetchMetadata(this.name, this.config, this.signal, 'application/json')
    return this.full
  }

  /** Why a version may be younger than `cutoff` (pnpm's cache first, then the registry's metadata), or `undefined`. */
  async ageNotShown (versions: string[], cutoff: number, missingTimePassed: Tests['missingTimePassed']): Promise<string | undefined> {
    const { name, config } = this
    const cached = cachedAges(config.cacheDir, registryOf(name, config), name).map((doc): AgeEvidence => ({ ...doc, listed: (v) => doc.versions.has(v) }))
    let pending = versions.filter((v) => !cached.some((doc) => shownOld(doc, v, cutoff)))
    if (pending.length === 0) return undefined
    const meta = await fetchMetadata(name, config, this.signal)
    if (meta == null) return `${name}: its registry metadata did not download`
    pending = pending.filter((v) => !shownOld({ ...meta, listed: (version) => meta.versions?.[version] != null }, v, cutoff))
    if (pending.length === 0) return undefined
    const full = await this.fullMetadata()
    if (full != null && full.time == null && this.ignoresMissingTime) return await this.attestedAgeNotShown(pending, cutoff)
    // Releases to 11.22.0 pass any version without a publish time the same way (one the metadata lists or not).
    if (full != null && this.ignoresMissingTime && missingTimePassed === 'version') {
      const timeless = pending.filter((v) => typeof full.time?.[v] !== 'string')
      const young = await this.attestedAgeNotShown(timeless, cutoff)
      if (young != null) return young
      pending = pending.filter((v) => !timeless.includes(v))
    }
    const young = pending.find((v) => full == null || !shownOld({ time: full.time, listed: () => false }, v, cutoff))
    return young != null ? `${name}@${young} may be younger than minimumReleaseAge` : undefined
  }

  /**
   * Metadata without publish times, which pnpm lets through with a warning, unless the
   * registry's attestations of a version (which pnpm asks first) say it is younger than `cutoff`.
   */
  private async attestedAgeNotShown (versions: string[], cutoff: number): Promise<string | undefined> {
    const { name, config } = this
    for (const version of versions) {
      const body = await registryJson(`${registryOf(name, config)}-/npm/v1/attestations/${name}@${version}`, 'application/json', this.signal, networkOf(config))
      const published = attestedAt(body)
      if (published != null && published > cutoff) return `${name}@${version} may be younger than minimumReleaseAge`
      if (published == null) this.warn(missingTimeWarning(name, 'minimumReleaseAge'))
    }
    return undefined
  }

  /** Why a version may not pass the trust test (the registry's full metadata), or `undefined`. */
  async trustNotShown (versions: string[], policy: TrustPolicy): Promise<string | undefined> {
    const full = await this.fullMetadata()
    if (full == null) return `${this.name}: its full registry metadata did not download`
    if (full.time == null && this.ignoresMissingTime) {
      this.warn(missingTimeWarning(this.name, 'trustPolicy'))
      return undefined
    }
    for (const version of versions) {
      const why = trustNotShown(full, this.name, version, policy)
      if (why != null) return why
    }
    return undefined
  }
}

/**
 * pnpm's tests of each locked version, once a name: the age test (from pnpm's own metadata cache
 * where it tells, else from the registry's metadata) and the trust test, each on the versions
 * its exclusions leave.
 */
async function askRegistry (packages: Array<{ name: string, version: string }>, config: SupplyChainConfig, tests: Tests, signal: AbortSignal, warn: (message: string) => void): Promise<string | undefined> {
  const versionsByName = new Map<string, Set<string>>()
  for (const { name, version } of packages) {
    const versions = versionsByName.get(name) ?? new Set()
    versions.add(version)
    versionsByName.set(name, versions)
  }
  const failed = await firstFailure([...versionsByName], networkConcurrencyOf(config), async ([name, versionSet]) => {
    const query = new PackageQuery(name, [...versionSet], config, signal, warn)
    const { cutoff, ageExclude, trust } = tests
    const aged = cutoff != null ? query.versions.filter((v) => !excludes(ageExclude, name, v)) : []
    const old = aged.length > 0 ? await query.ageNotShown(aged, cutoff!, tests.missingTimePassed) : undefined
    if (old != null || trust == null) return old
    const trusted = query.versions.filter((v) => !excludes(trust.exclude, name, v))
    return trusted.length > 0 ? await query.trustNotShown(trusted, trust) : undefined
  })
  return failed != null ? `${failed}: pnpm checks the lockfile first` : undefined
}
