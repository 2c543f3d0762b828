/**
 * `pnpm-lock.yaml` as the native install reads it, against pnpm 11.28.11's reading
 * (`readWantedLockfile`: `extractMainDocument`, js-yaml's `load`, `convertToLockfileObject`),
 * and the head start's refusal of the names pnpm refuses (issue 22, items 2, 2b, 7, 8).
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { currentLockfileText, loadYaml, mainLockfileDocument, readLockfileFile } from '../dist/plugin/install/lockfile-file.js'
import { prelinkVirtualStore } from '../dist/plugin/head-start.js'
import { freshDir } from './helpers/stores.js'

const HEAD = "lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      a:\n        specifier: 1.0.0\n        version: 1.0.0\n\n"

function read (text: string): ReturnType<typeof readLockfileFile> {
  const dir = freshDir('lockfile-file')
  fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), text)
  return readLockfileFile(dir)
}

function lockfileOf (text: string): Exclude<ReturnType<typeof readLockfileFile>, string>['lockfile'] {
  const result = read(text)
  if (typeof result === 'string') throw new Error(result)
  return result.lockfile
}

describe('parseYaml: one document as js-yaml\'s load gives it', () => {
  it('numbers, keys named as JS names them, nulls and sequences', () => {
    expect(loadYaml('real: 1.50\n1.0: one\n2: two\nseq: [1, 2.5, true, ~, s]\n')).toEqual({ value: { 1: 'one', 2: 'two', real: 1.5, seq: [1, 2.5, true, null, 's'] } })
    expect(loadYaml('# nothing\n')).toEqual({ value: undefined })
  })

  it('merge keys resolved; a key twice, several documents, __proto__ keys, tags refused', () => {
    expect(loadYaml('b: &b {x: 1}\nm: {<<: *b, y: 2}\n')).toEqual({ value: { b: { x: 1 }, m: { x: 1, y: 2 } } })
    expect(loadYaml('a: 1\na: 2\n')).toEqual({ unread: expect.stringMatching(/^is not valid YAML \(left to pnpm\): duplicated mapping key "a"/) })
    expect(loadYaml('a: 1\n---\na: 2\n')).toEqual({ unread: expect.stringMatching(/single document/) })
    expect(loadYaml('packages:\n  __proto__: {}\n')).toEqual({ unread: expect.stringMatching(/^has YAML this does not read as pnpm does: a __proto__ key/) })
    expect(loadYaml('a: !!binary aGk=\n')).toEqual({ unread: expect.stringMatching(/a tag/) })
  })

  it('bounded: deep nesting and alias bombs are refused, not expanded (no crash)', () => {
    for (const depth of [10_000, 1_000_000]) {
      expect(loadYaml(`a: ${'['.repeat(depth)}${']'.repeat(depth)}\n`)).toEqual({ unread: expect.stringMatching(/^is beyond the bounds of this reader/) })
      expect(loadYaml(`a: ${'{a: '.repeat(depth)}1${'}'.repeat(depth)}\n`)).toEqual({ unread: expect.stringMatching(/^is beyond the bounds of this reader/) })
    }
    // 10^8 values once expanded.
    let bomb = 'l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n'
    for (let i = 1; i < 8; i++) bomb += `l${i}: &l${i} [${Array(10).fill(`*l${i - 1}`).join(', ')}]\n`
    expect(loadYaml(bomb)).toEqual({ unread: expect.stringMatching(/repeat more than 100000 values/) })
  })
})

describe('readLockfileFile: the lockfile as pnpm reads it', () => {
  it('the packages entry wins every field over the snapshot\'s (pnpm spreads it last)', () => {
    const lockfile = lockfileOf(`${HEAD}packages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-PACKAGES}\n    hasBin: true\n    engines: {node: '>=1'}\n    cpu: [x64]\n    dependencies:\n      b: 1.0.0\n\n  b@1.0.0:\n    resolution: {integrity: sha512-B}\n\n  c@1.0.0:\n    resolution: {integrity: sha512-C}\n\nsnapshots:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-SNAPSHOT}\n    hasBin: false\n    engines: {node: '>=2'}\n    cpu: [arm64]\n    dependencies:\n      c: 1.0.0\n    optional: true\n\n  b@1.0.0: {}\n\n  c@1.0.0: {}\n`)
    expect(lockfile.packages!['a@1.0.0']).toEqual({
      resolution: { integrity: 'sha512-PACKAGES' },
      hasBin: true,
      engines: { node: '>=1' },
      cpu: ['x64'],
      dependencies: { b: '1.0.0' },
      optional: true,
    })
  })

  it('an importer\'s publish directory kept as the file has it (pnpm spreads the importer); other fields, or other types, refused', () => {
    const publishing = (fields: string): string => `lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      a:\n        specifier: 1.0.0\n        version: 1.0.0\n${fields}\npackages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n\nsnapshots:\n\n  a@1.0.0: {}\n`
    expect(lockfileOf(publishing('    publishDirectory: dist\n    linkDirectory: false\n')).importers['.']).toEqual({ specifiers: { a: '1.0.0' }, dependencies: { a: '1.0.0' }, publishDirectory: 'dist', linkDirectory: false })
    expect(read(publishing('    dependenciesMeta:\n      a: {injected: true}\n'))).toBe('the lockfile\'s importer "." has dependenciesMeta')
    expect(read(publishing('    publishDirectory: [dist]\n'))).toMatch(/importers\["\."\]\.publishDirectory is not a string$/)
  })

  it('the current lockfile before 11.28.0: the importers\' publish directory fields dropped, nothing else', () => {
    const text = "lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      publishDirectory:\n        specifier: 1.0.0\n        version: 1.0.0\n    publishDirectory: dist\n    linkDirectory: false\n\n  p:\n    publishDirectory: out\n\npackages:\n\n  publishDirectory@1.0.0:\n    resolution: {integrity: sha512-A}\n"
    expect(currentLockfileText(text, true)).toBe(text)
    expect(currentLockfileText(text, false)).toBe(text.replace('    publishDirectory: dist\n    linkDirectory: false\n', '').replace('  p:\n    publishDirectory: out\n', '  p: {}\n'))
  })

  it('a package id is its dependency path without the trailing (…) groups', () => {
    const lockfile = lockfileOf(`${HEAD}packages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n\nsnapshots:\n\n  a@1.0.0(b@1.0.0)(c@2.0.0):\n    dependencies:\n      b: 1.0.0\n`)
    expect(lockfile.packages!['a@1.0.0(b@1.0.0)(c@2.0.0)'].resolution).toEqual({ integrity: 'sha512-A' })
  })

  it('merge keys in a snapshot resolved as js-yaml resolves them', () => {
    const lockfile = lockfileOf(`${HEAD}packages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n\nsnapshots:\n\n  base: &deps\n    dependencies:\n      b: 1.0.0\n\n  a@1.0.0:\n    <<: *deps\n`)
    expect(lockfile.packages!['a@1.0.0'].dependencies).toEqual({ b: '1.0.0' })
  })

  it('the main document as pnpm extracts it: after the config dependencies\' one, none when no separator follows', () => {
    expect(mainLockfileDocument('---\nconfigDependencies: {}\n---\nlockfileVersion: \'9.0\'\n')).toBe("lockfileVersion: '9.0'\n")
    // pnpm looks for the separator from the fourth character on: here there is none.
    expect(mainLockfileDocument(`---\n---\n${HEAD}`)).toBe('')
    expect(read(`---\n---\n${HEAD}`)).toBe('no lockfile')
    expect(lockfileOf(`\uFEFF${HEAD}`.replace(/\n/g, '\r\n')).importers['.']).toEqual({ specifiers: { a: '1.0.0' }, dependencies: { a: '1.0.0' } })
  })

  it('a platform field that is one string, as its package.json has it (sass-embedded\'s libc): read as pnpm reads it', () => {
    const packages = lockfileOf(`${HEAD}packages:\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n    os: [linux]\n    libc: glibc\nsnapshots:\n  a@1.0.0:\n    optional: true\n`).packages!
    expect(packages['a@1.0.0']).toMatchObject({ os: ['linux'], libc: 'glibc' })
    expect(read(`${HEAD}packages:\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n    cpu: {x: 1}\n`)).toMatch(/has a cpu this does not read$/)
  })

  it('a platform list with a null in it, as pnpm writes oxc-parser 0.8\'s `"libc": [null]` (user try: TanStack/virtual\'s lockfile): read as pnpm reads it', () => {
    const packages = lockfileOf(`${HEAD}packages:\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n    cpu: [arm64]\n    os: [win32]\n    libc: [null]\nsnapshots:\n  a@1.0.0:\n    optional: true\n`).packages!
    expect(packages['a@1.0.0']).toMatchObject({ os: ['win32'], libc: [null] })
    expect(read(`${HEAD}packages:\n  a@1.0.0:\n    resolution: {integrity: sha512-A}\n    libc: [1]\n`)).toMatch(/has a libc this does not read$/)
  })

  it.each([
    ['an importer that is null', "lockfileVersion: '9.0'\nimporters:\n  .: null\n", /^pnpm-lock\.yaml is malformed .*: importers\["\."\] is not a mapping$/],
    ['a dependency group that is a list', "lockfileVersion: '9.0'\nimporters:\n  .:\n    dependencies: [a]\n", /importers\["\."\]\.dependencies is not a mapping of specifiers and versions$/],
    ['packages that are a list', `${HEAD}packages: [1]\n`, /: packages is not a mapping$/],
    ['a snapshot that is a string', `${HEAD}snapshots:\n  a@1.0.0: x\n`, /: snapshots\["a@1\.0\.0"\] is not a mapping$/],
    ['dependencies that are not strings', `${HEAD}snapshots:\n  a@1.0.0:\n    dependencies: {b: {c: 1}}\n`, /has a dependencies this does not read$/],
    ['a document that is a list', '- 1\n', /its document is not a mapping$/],
    ['a YAML syntax error', 'a: [1\n', /^pnpm-lock\.yaml is not valid YAML \(left to pnpm\)/],
    ['a __proto__ package', `${HEAD}packages:\n  __proto__:\n    resolution: {integrity: sha512-A}\n`, /__proto__/],
    ['YAML nested 10,000 deep', `a: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`, /^pnpm-lock\.yaml is beyond the bounds of this reader/],
  ])('left to pnpm with a reason, no crash: %s', (_name, text, why) => {
    expect(read(text)).toMatch(why)
  })
})

describe('prelinkVirtualStore: names pnpm refuses', () => {
  it.each(['evil/sub', '.bin', 'node_modules', '../../escape'])('a package named %j: nothing linked, the reason given', async (name) => {
    const dir = freshDir('prelink-names')
    const wantedLockfile = {
      importers: { '.': { dependencies: { a: `${name}@1.0.0`, b: '1.0.0' } } },
      packages: { [`${name}@1.0.0`]: { resolution: { integrity: 'sha512-A' } }, 'b@1.0.0': { resolution: { integrity: 'sha512-B' } } },
    }
    const summary = await prelinkVirtualStore(
      { wantedLockfile, currentLockfile: { importers: {} }, existsNonEmptyWantedLockfile: true, lockfileDir: dir, storeDir: path.join(dir, 'store') },
      { lockfileDir: dir, frozenLockfile: true, hoistPattern: ['*'], publicHoistPattern: [] },
      'auto')
    expect(summary.skipped).toMatch(/which pnpm refuses to place \(ERR_PNPM_INVALID_DEPENDENCY_NAME\)$/)
    expect(summary.linked).toEqual([])
    expect(fs.readdirSync(dir)).toEqual([])
  })
})
