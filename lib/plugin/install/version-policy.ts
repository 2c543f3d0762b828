/**
 * pnpm's package-version patterns, as `minimumReleaseAgeExclude` and `trustPolicyExclude` list
 * them (pnpm's `config/version-policy`): a name pattern (`*` wildcards and `!` negations, matched
 * by pnpm's own `@pnpm/config.matcher`) that excludes every version, or an exact name with a
 * union of exact versions (`name@1.0.0 || 1.0.1`) that excludes those. pnpm refuses any other
 * form (a range, a wildcard with versions); the native install then leaves the install to it.
 */
import { createMatcher } from '@pnpm/config.matcher'
import semver from 'semver'

/** What a list of patterns excludes of a package: every version, some, or none. */
export type VersionPolicy = (name: string) => true | string[] | false

interface Rule { matches: (name: string) => boolean, versions: string[] }

/** A pattern's name and versions, or why pnpm refuses it. */
function parseRule (pattern: string): Rule | string {
  const at = pattern.startsWith('@') ? pattern.indexOf('@', 1) : pattern.indexOf('@')
  if (at === -1) return { matches: createMatcher(pattern), versions: [] }
  const name = pattern.slice(0, at)
  const versions = pattern.slice(at + 1).split('||').map((v) => semver.valid(v))
  if (versions.some((v) => v == null)) return `"${pattern}" is not exact versions`
  if (name.includes('*')) return `"${pattern}" has a name pattern with versions`
  return { matches: createMatcher(name), versions: versions as string[] }
}

/**
 * The policy `patterns` set, as pnpm evaluates it (every matching rule's versions together; a
 * matching rule without versions excludes the package whole), or why pnpm refuses the list.
 */
export function versionPolicy (patterns: string[]): VersionPolicy | string {
  const rules: Rule[] = []
  for (const pattern of patterns) {
    const rule = parseRule(pattern)
    if (typeof rule === 'string') return rule
    rules.push(rule)
  }
  return (name) => {
    let versions: Set<string> | undefined
    for (const rule of rules) {
      if (!rule.matches(name)) continue
      if (rule.versions.length === 0) return true
      versions ??= new Set()
      for (const v of rule.versions) versions.add(v)
    }
    return versions == null ? false : [...versions]
  }
}

/** Whether `policy` excludes `name@version`. */
export function excludes (policy: VersionPolicy | undefined, name: string, version: string): boolean {
  const result = policy?.(name) ?? false
  return result === true || (Array.isArray(result) && result.includes(version))
}
