/**
 * The semver the native install needs. Whether a release version satisfies an npm range, for the
 * `engines` of optional packages (pnpm skips an optional package whose `engines.node` or
 * `engines.pnpm` this Node or pnpm does not satisfy): it knows the range forms `engines` fields
 * use (comparators, `^`, `~`, x-ranges, hyphen ranges, `||`), and anything else, such as a
 * prerelease in the range, is a `RangeError`, which the native install takes as "leave this to
 * pnpm". Also semver's spelling and order of versions, for pnpm's lockfile check and bin conflicts.
 */

type Version = [number, number, number]

/** A bound: `version` compared with `op`. */
interface Comparator { op: '>=' | '>' | '<' | '<='; version: Version }

const compare = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2]

/** `1`, `1.2`, `1.2.3`, with `x`/`X`/`*` for any part: the numbers given, `undefined` from the first wildcard. */
function partial (text: string): Array<number | undefined> {
  const m = /^v?(\d+|[xX*])(?:\.(\d+|[xX*]))?(?:\.(\d+|[xX*]))?$/.exec(text)
  if (m == null) throw new RangeError(`not a version: ${text}`)
  const parts: Array<number | undefined> = []
  for (const p of [m[1], m[2], m[3]]) {
    if (p == null || /^[xX*]$/.test(p) || parts.includes(undefined)) parts.push(undefined)
    else parts.push(Number(p))
  }
  return parts
}

const filled = (p: Array<number | undefined>): Version => [p[0] ?? 0, p[1] ?? 0, p[2] ?? 0]
/** The first version past the given parts (`1.2` → `1.3.0`). */
function bump (p: Array<number | undefined>): Version {
  const given = p.filter((n) => n != null).length
  if (given === 0) return [Infinity, 0, 0]
  const v = filled(p)
  v[given - 1] += 1
  for (let i = given; i < 3; i++) v[i] = 0
  return v
}

function comparators (token: string): Comparator[] {
  const m = /^(>=|<=|>|<|=|\^|~)?(.*)$/.exec(token)!
  const op = m[1] ?? '='
  const p = partial(m[2] === '' ? '*' : m[2])
  const given = p.filter((n) => n != null).length
  switch (op) {
    case '=':
      return given === 0 ? [] : [{ op: '>=', version: filled(p) }, given === 3 ? { op: '<=', version: filled(p) } : { op: '<', version: bump(p) }]
    case '>=': return [{ op: '>=', version: filled(p) }]
    case '>': return given === 3 ? [{ op: '>', version: filled(p) }] : given === 0 ? [{ op: '<', version: [0, 0, 0] }] : [{ op: '>=', version: bump(p) }]
    case '<': return [{ op: '<', version: filled(p) }]
    case '<=': return given === 3 ? [{ op: '<=', version: filled(p) }] : given === 0 ? [] : [{ op: '<', version: bump(p) }]
    case '~': return [{ op: '>=', version: filled(p) }, { op: '<', version: bump(given >= 2 ? [p[0], p[1]] : [p[0]]) }]
    default: {
      // `^`: the first non-zero part of those given may not change.
      const v = filled(p)
      const keep = v[0] !== 0 || given === 1 ? 1 : v[1] !== 0 || given === 2 ? 2 : 3
      return [{ op: '>=', version: v }, { op: '<', version: bump(p.slice(0, keep)) }]
    }
  }
}

function holds (c: Comparator, v: Version): boolean {
  const d = compare(v, c.version)
  return c.op === '>=' ? d >= 0 : c.op === '>' ? d > 0 : c.op === '<' ? d < 0 : d <= 0
}

export function satisfies (version: string, range: string): boolean {
  const v = partial(version.replace(/^v/, ''))
  if (v.includes(undefined)) throw new RangeError(`not a release version: ${version}`)
  return range.split('||').some((alternative) => {
    let text = alternative.trim()
    const hyphen = /^(\S+)\s+-\s+(\S+)$/.exec(text)
    if (hyphen != null) text = `>=${hyphen[1]} <=${hyphen[2]}`
    const tokens = text.replace(/(>=|<=|>|<|=|\^|~)\s+/g, '$1').split(/\s+/).filter((t) => t !== '')
    return tokens.flatMap(comparators).every((c) => holds(c, v as Version))
  })
}

/** A version as semver spells it (pnpm's lockfile check refuses the others). */
export const isSemver = (version: string): boolean =>
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/.test(version)

/** `-1`, `0` or `1` as semver orders two versions (for the ones a lockfile holds). */
export function compareVersions (a: string, b: string): number {
  const parse = (v: string): [number[], string[]] => {
    const [core, pre] = v.split('+')[0].split(/-(.*)/s)
    return [core.split('.').map(Number), pre == null ? [] : pre.split('.')]
  }
  const [ac, ap] = parse(a)
  const [bc, bp] = parse(b)
  for (let i = 0; i < 3; i++) if (ac[i] !== bc[i]) return ac[i] > bc[i] ? 1 : -1
  if (ap.length === 0 || bp.length === 0) return ap.length === bp.length ? 0 : ap.length === 0 ? 1 : -1
  for (let i = 0; i < Math.max(ap.length, bp.length); i++) {
    if (ap[i] == null || bp[i] == null) return ap[i] == null ? -1 : 1
    const an = /^\d+$/.test(ap[i])
    const bn = /^\d+$/.test(bp[i])
    if (an && bn && Number(ap[i]) !== Number(bp[i])) return Number(ap[i]) > Number(bp[i]) ? 1 : -1
    if (an !== bn) return an ? -1 : 1
    if (ap[i] !== bp[i]) return ap[i] > bp[i] ? 1 : -1
  }
  return 0
}
