/**
 * The semver the native install needs, by the `semver` package at the release pnpm 11.28.11
 * bundles (7.8.5) and with the options pnpm passes, so each answer is pnpm's own:
 * whether this Node meets a package's `engines` (pnpm's engine check), and how two versions of
 * one package order (pnpm's bin-name conflicts), which overrides apply to a dependency (pnpm's
 * versions overrider, no options). Also the spelling of a version pnpm's lockfile check takes as
 * semver.
 */
import semver from 'semver'

/**
 * Parsed once each: the release table compares the same few versions at load, and the packages
 * of a lockfile share their `engines` ranges (semver parses its arguments on every call).
 */
const engineRanges = new Map<string, semver.Range | null>()
const versions = new Map<string, semver.SemVer>()

/** Whether `version` meets `range` as pnpm's engine check decides (prereleases included): `semver.satisfies`, the range parsed once. */
export function satisfies (version: string, range: string): boolean {
  let parsed = engineRanges.get(range)
  if (parsed === undefined) {
    try {
      parsed = new semver.Range(range, { includePrerelease: true })
    } catch {
      parsed = null
    }
    engineRanges.set(range, parsed)
  }
  return parsed != null && parsed.test(version)
}

/** A version as semver spells it (pnpm's lockfile check refuses the others). */
export const isSemver = (version: string): boolean =>
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/.test(version)

/** `-1`, `0` or `1` as semver orders two versions, as pnpm orders a bin name's owners. */
export function compareVersions (a: string, b: string): number {
  return parsedVersion(a).compare(parsedVersion(b))
}

/** `new semver.SemVer(version)` (as `semver.compare` makes it, throwing as it does), once per version. */
function parsedVersion (version: string): semver.SemVer {
  let parsed = versions.get(version)
  if (parsed == null) {
    parsed = new semver.SemVer(version)
    versions.set(version, parsed)
  }
  return parsed
}

/** Whether a workspace project's `version` meets a `workspace:` range as pnpm's check of linked projects decides (loose). */
export function satisfiesLoosely (version: string | undefined, range: string): boolean {
  return range === '*' || range === '^' || range === '~' || (version != null && semver.satisfies(version, range, { loose: true }))
}

/** Whether semver reads `range` as a range (pnpm's overrider asks without options). */
export const isRange = (range: string): boolean => semver.validRange(range) != null

/** Whether two ranges (`isRange`) have a version in common, as pnpm's overrider decides. */
export const rangesIntersect = (a: string, b: string): boolean => semver.intersects(a, b)

/** Whether `version` meets `range` without options (prereleases only by the range's own), as pnpm matches an override's parent. */
export const satisfiesStrictly = (version: string, range: string): boolean => semver.satisfies(version, range)
