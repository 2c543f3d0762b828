/**
 * pnpm 11's `trustPolicy: no-downgrade` test of one locked version (pnpm's
 * `resolving/npm-resolver` `trustChecks`, run by its lockfile verifier on the package's full
 * registry metadata): the version's trust evidence must be at least the strongest any
 * version published before it had (by publish date, not by semver; prereleases count only for a
 * prerelease). Evidence, strongest first: a staged publish (`_npmUser.approver`), a trusted
 * publisher with a provenance attestation, a provenance attestation alone.
 *
 * The answer is whether pnpm's test passes here; anything else (a downgrade, metadata without
 * the times pnpm needs) is left to pnpm, which refuses in its own words. Metadata without any
 * times, which pnpm passes with a warning under `minimumReleaseAgeIgnoreMissingTime`, is
 * handled by the caller (supply-chain.ts), which gives the warning.
 */
import semver from 'semver'
import { excludes, type VersionPolicy } from './version-policy.js'

type TrustEvidence = 'stagedPublish' | 'trustedPublisher' | 'provenance'

const RANK: Record<TrustEvidence, number> = { stagedPublish: 3, trustedPublisher: 2, provenance: 1 }

/** A version's manifest in full registry metadata: the fields trust is read from. */
interface RegistryManifest {
  _npmUser?: { approver?: unknown, trustedPublisher?: unknown }
  dist?: { attestations?: { provenance?: unknown } }
}

/** A package's full registry metadata. */
export interface FullMetadata { versions?: Record<string, unknown>, time?: Record<string, unknown> }

export interface TrustPolicy {
  /** `trustPolicyExclude`'s policy. */
  exclude?: VersionPolicy
  /** `trustPolicyIgnoreAfter`: versions published longer ago than this (minutes) are not checked. */
  ignoreAfterMinutes?: number
  /** When "now" is, for `ignoreAfterMinutes`. */
  now: number
}

function evidenceOf (manifest: unknown): TrustEvidence | undefined {
  const m = (manifest ?? {}) as RegistryManifest
  if (m._npmUser?.approver) return 'stagedPublish'
  const provenance = Boolean(m.dist?.attestations?.provenance)
  if (m._npmUser?.trustedPublisher && provenance) return 'trustedPublisher'
  return provenance ? 'provenance' : undefined
}

/** The strongest evidence of the versions published before `before` (prereleases left out unless `withPrereleases`). */
function strongestBefore (meta: Required<FullMetadata>, before: Date, withPrereleases: boolean): TrustEvidence | undefined {
  let best: TrustEvidence | undefined
  for (const [version, manifest] of Object.entries(meta.versions)) {
    if (!withPrereleases && semver.prerelease(version, true) != null) continue
    const published = meta.time[version]
    if (!published || !(new Date(published as string) < before)) continue
    const evidence = evidenceOf(manifest)
    if (evidence != null && (best == null || RANK[evidence] > RANK[best])) best = evidence
  }
  return best
}

/**
 * Why pnpm's trust test of `name@version` on `meta` would not simply pass (a downgrade, or
 * metadata it cannot judge), or `undefined`: it passes.
 */
export function trustNotShown (meta: FullMetadata, name: string, version: string, policy: TrustPolicy): string | undefined {
  if (excludes(policy.exclude, name, version)) return undefined
  if (meta.time == null || typeof meta.time !== 'object') return `${name}: its metadata has no publish times`
  const publishedAt = meta.time[version]
  if (!publishedAt) return `${name}@${version}: no publish time in its metadata`
  const published = new Date(publishedAt as string)
  if (policy.ignoreAfterMinutes && (policy.now - published.getTime()) / 60_000 > policy.ignoreAfterMinutes) return undefined
  const manifest = meta.versions?.[version]
  if (manifest == null) return `${name}@${version}: not in its metadata`
  const before = strongestBefore({ versions: meta.versions!, time: meta.time }, published, semver.prerelease(version, true) != null)
  if (before == null) return undefined
  const current = evidenceOf(manifest)
  return current == null || RANK[before] > RANK[current] ? `${name}@${version}: less trust evidence than a version published before it` : undefined
}
