/**
 * The supply-chain policies' rules, each against pnpm's own function read out of the reference
 * bundle (helpers/pnpm-bundle.ts) on the same input: `minimumReleaseAgeExclude` and
 * `trustPolicyExclude` patterns (pnpm's version policy), and `trustPolicy: no-downgrade`'s test
 * of a version against the versions published before it. The registry stand-in cases are in
 * supply-chain.spec.ts, and stock pnpm refusing a downgrade in native-install.spec.ts.
 */
import { createRequire } from 'node:module'
import { describe, expect, it } from 'vitest'
import { trustNotShown, type FullMetadata } from '../dist/plugin/install/trust-policy.js'
import { versionPolicy, type VersionPolicy } from '../dist/plugin/install/version-policy.js'
import { pnpmFunction } from './helpers/pnpm-bundle.js'

/** The semver pnpm bundles. */
const semver = createRequire(import.meta.url)('semver') as unknown
const semverImport = { default: semver }

describe('exclusion patterns, as pnpm matches them', () => {
  const pnpmPolicy = pnpmFunction<(patterns: string[]) => VersionPolicy>('createPackageVersionPolicy', { import_semver22: semverImport })
  const names = ['a', 'ab', 'b', '@scope/a', '@scope/b', '@other/a', 'vite', 'vitest', '@vitejs/plugin-react']

  it.each<[string, string[]]>([
    ['names', ['a', 'vite']],
    ['wildcards', ['vite*', '@scope/*']],
    ['a negation', ['*', '!vite']],
    ['exact versions', ['a@1.0.0', '@scope/a@1.0.0 || 2.0.0-rc.1']],
    ['versions from two rules, joined', ['a@1.0.0', 'a@1.1.0']],
    ['a whole-package rule beats versions', ['a@1.0.0', 'a']],
    ['none', []],
  ])('%s', (_, patterns) => {
    const ours = versionPolicy(patterns)
    expect(typeof ours).toBe('function')
    const theirs = pnpmPolicy(patterns)
    for (const name of names) expect([name, (ours as VersionPolicy)(name)]).toEqual([name, theirs(name)])
  })

  it.each(['a@^1.0.0', 'a@1.x', 'a@latest', 'a*@1.0.0', '@scope/*@1.0.0'])('%s: refused, as pnpm refuses it', (pattern) => {
    expect(typeof versionPolicy([pattern])).toBe('string')
    expect(() => pnpmPolicy([pattern])).toThrow()
  })
})

describe('trustPolicy no-downgrade: a version against the versions published before it', () => {
  const pnpmCheck = pnpmFunction<(meta: object, version: string, opts: object) => void>('failIfTrustDowngraded', { import_semver18: semverImport })
  const provenance = { dist: { attestations: { provenance: { predicateType: 'https://slsa.dev/provenance/v1' } } } }
  const trusted = { ...provenance, _npmUser: { name: 'ci', trustedPublisher: { id: 'github' } } }
  const staged = { _npmUser: { name: 'x', approver: { name: 'y' } } }
  const at = (day: number): string => `2026-01-${String(day).padStart(2, '0')}T00:00:00.000Z`
  const meta = (versions: Record<string, [number | undefined, object]>, time = true): FullMetadata & { name: string } => ({
    name: 'pkg',
    versions: Object.fromEntries(Object.entries(versions).map(([v, [, m]]) => [v, { name: 'pkg', version: v, ...m }])),
    ...(time ? { time: Object.fromEntries(Object.entries(versions).flatMap(([v, [day]]) => day == null ? [] : [[v, at(day)]])) } : {}),
  })

  it.each<[string, ReturnType<typeof meta>, string, { exclude?: string[], ignoreAfterMinutes?: number }, boolean]>([
    ['no evidence anywhere', meta({ '1.0.0': [1, {}], '1.1.0': [2, {}] }), '1.1.0', {}, true],
    ['provenance kept', meta({ '1.0.0': [1, provenance], '1.1.0': [2, provenance] }), '1.1.0', {}, true],
    ['provenance lost', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', {}, false],
    ['trusted publisher down to provenance', meta({ '1.0.0': [1, trusted], '1.1.0': [2, provenance] }), '1.1.0', {}, false],
    ['provenance up to trusted publisher', meta({ '1.0.0': [1, provenance], '1.1.0': [2, trusted] }), '1.1.0', {}, true],
    ['a staged publish before', meta({ '1.0.0': [1, staged], '1.1.0': [2, trusted] }), '1.1.0', {}, false],
    ['by date, not semver: an older version published later', meta({ '2.0.0': [1, provenance], '1.0.1': [2, {}] }), '1.0.1', {}, false],
    ['a later version with evidence does not count', meta({ '1.0.0': [1, {}], '1.1.0': [2, provenance] }), '1.0.0', {}, true],
    ['prereleases do not count for a release', meta({ '2.0.0-rc.1': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', {}, true],
    ['prereleases count for a prerelease', meta({ '2.0.0-rc.1': [1, provenance], '2.0.0-rc.2': [2, {}] }), '2.0.0-rc.2', {}, false],
    ['excluded by name', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', { exclude: ['pkg'] }, true],
    ['excluded by version', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', { exclude: ['pkg@1.1.0'] }, true],
    ['another version excluded', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', { exclude: ['pkg@1.0.0'] }, false],
    ['published before trustPolicyIgnoreAfter', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', { ignoreAfterMinutes: 60 }, true],
    ['published within trustPolicyIgnoreAfter', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }), '1.1.0', { ignoreAfterMinutes: 60 * 24 * 1000 }, false],
    ['no publish time for the version', meta({ '1.0.0': [1, provenance], '1.1.0': [undefined, {}] }), '1.1.0', {}, false],
    ['no times at all', meta({ '1.0.0': [1, provenance], '1.1.0': [2, {}] }, false), '1.1.0', {}, false],
    ['the version not in the metadata', meta({ '1.0.0': [1, provenance] }), '1.1.0', {}, false],
  ])('%s: passes exactly where pnpm\'s passes', (_, doc, version, opts, passes) => {
    const exclude = opts.exclude != null ? versionPolicy(opts.exclude) as VersionPolicy : undefined
    const ours = trustNotShown(doc, doc.name, version, { exclude, ignoreAfterMinutes: opts.ignoreAfterMinutes, now: Date.now() })
    let pnpmPasses = true
    try {
      pnpmCheck(doc, version, { trustPolicyExclude: exclude, trustPolicyIgnoreAfter: opts.ignoreAfterMinutes })
    } catch {
      pnpmPasses = false
    }
    expect(pnpmPasses).toBe(passes)
    expect(ours == null).toBe(passes)
  })
})
