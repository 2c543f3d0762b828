/**
 * `.package-map.json` as pnpm 11.19 to 11.26 write it: the form on a small lockfile, and the
 * same text as pnpm 11.22.0's own `lockfileToPackageMap` (read out of its bundle, fetched into
 * `.tools/pnpm-versions/` as the release matrix fetches it) on generated lockfiles, given what
 * pnpm gives it (its filtered lockfile). The e2e specs under those releases compare whole installs.
 */
import path from 'node:path'
import url from 'node:url'
import { describe, expect, it } from 'vitest'
import { packageMapText, relativeUrl, type PackageMapOptions } from '../dist/plugin/install/package-map.js'
import { reachable, type LockfileObject } from '../dist/plugin/install/virtual-store.js'
import { fetchPnpm } from '../scripts/pnpm-versions.mjs'
import { pnpmFunction } from './helpers/pnpm-bundle.js'

const ALL = { dependencies: true, devDependencies: true, optionalDependencies: true }

describe('.package-map.json', () => {
  it('every project and reached package (skipped ones too) with its URL from the root node_modules and its own name among its dependencies, ids and aliases sorted', () => {
    const lockfile = {
      importers: {
        '.': { dependencies: { a: '1.0.0', lib: 'link:packages/lib' }, devDependencies: { d: '1.0.0' }, optionalDependencies: { o: '1.0.0' } },
        'packages/lib': { dependencies: { 'b-alias': 'b@2.0.0' } },
      },
      packages: {
        'a@1.0.0': { dependencies: { b: '1.0.0' }, optionalDependencies: { gone: '1.0.0' } },
        'b@1.0.0': {},
        'b@2.0.0': {},
        'd@1.0.0': {},
        'o@1.0.0': { os: ['aix'], optional: true },
        'unreached@1.0.0': {},
      },
    }
    const text = packageMapText(lockfile, {
      lockfileDir: '/w',
      rootModulesDir: '/w/node_modules',
      virtualStoreDir: '/w/node_modules/.pnpm',
      virtualStoreDirMaxLength: 120,
      importerNames: { '.': 'root', 'packages/lib': '@ws/lib' },
      include: ALL,
    })
    expect(text.endsWith('}\n')).toBe(true)
    expect(text.split('\n')).toHaveLength(2)
    expect(JSON.parse(text)).toStrictEqual({
      packages: {
        '.': { url: '..', dependencies: { a: 'a@1.0.0', d: 'd@1.0.0', lib: 'packages/lib', o: 'o@1.0.0', root: '.' } },
        'a@1.0.0': { url: './.pnpm/a@1.0.0/node_modules/a', dependencies: { a: 'a@1.0.0', b: 'b@1.0.0' } },
        'b@1.0.0': { url: './.pnpm/b@1.0.0/node_modules/b', dependencies: { b: 'b@1.0.0' } },
        'b@2.0.0': { url: './.pnpm/b@2.0.0/node_modules/b', dependencies: { b: 'b@2.0.0' } },
        'd@1.0.0': { url: './.pnpm/d@1.0.0/node_modules/d', dependencies: { d: 'd@1.0.0' } },
        'o@1.0.0': { url: './.pnpm/o@1.0.0/node_modules/o', dependencies: { o: 'o@1.0.0' } },
        'packages/lib': { url: '../packages/lib', dependencies: { '@ws/lib': 'packages/lib', 'b-alias': 'b@2.0.0' } },
      },
    })
    // Without devDependencies: neither the group nor what only it reaches.
    const prod = JSON.parse(packageMapText(lockfile, { lockfileDir: '/w', rootModulesDir: '/w/node_modules', virtualStoreDir: '/w/node_modules/.pnpm', virtualStoreDirMaxLength: 120, importerNames: {}, include: { ...ALL, devDependencies: false } }))
    expect(Object.keys(prod.packages)).toEqual(['.', 'a@1.0.0', 'b@1.0.0', 'b@2.0.0', 'o@1.0.0', 'packages/lib'])
    expect(prod.packages['.'].dependencies).toStrictEqual({ a: 'a@1.0.0', lib: 'packages/lib', o: 'o@1.0.0' })
  })

  it('URLs as pnpm writes them: ".", "..", "./x", "../x"', () => {
    expect([relativeUrl('/w/node_modules', '/w/node_modules'), relativeUrl('/w/node_modules', '/w'), relativeUrl('/w/node_modules', '/w/node_modules/.pnpm/a'), relativeUrl('/w/node_modules', '/w/packages/a')])
      .toEqual(['.', '..', './.pnpm/a', '../packages/a'])
  })

  it('the text pnpm 11.22.0\'s own lockfileToPackageMap gives, on generated lockfiles (peers, aliases, links, optional and dev dependencies, a dependency missing)', () => {
    const theirs = pnpmFunction<(lockfile: unknown, opts: unknown) => unknown>('lockfileToPackageMap', { path126: path, pathToFileURL2: url.pathToFileURL }, [], fetchPnpm('11.22.0'))
    for (let seed = 1; seed <= 40; seed++) {
      const { lockfile, opts } = generated(seed)
      // pnpm hands it its filtered lockfile: the reached packages, the groups installed.
      const reached = reachable(lockfile, opts.include)
      const filtered = {
        importers: Object.fromEntries(Object.entries(lockfile.importers).map(([id, importer]) => [id, Object.fromEntries(Object.entries(importer).filter(([group]) => opts.include[group as keyof typeof opts.include]))])),
        packages: Object.fromEntries(Object.entries(lockfile.packages ?? {}).filter(([depPath]) => reached.has(depPath))),
      }
      expect(packageMapText(lockfile, opts), `seed ${seed}`).toBe(`${JSON.stringify(theirs(filtered, opts))}\n`)
    }
  })
})

/** A lockfile of a few projects and packages, its shape drawn from `seed`. */
function generated (seed: number): { lockfile: LockfileObject, opts: PackageMapOptions } {
  let state = seed
  const random = (n: number): number => {
    state = (state * 1103515245 + 12345) % 2 ** 31
    return state % n
  }
  const names = ['a', 'b', '@s/c', 'd-e', 'z', 'B']
  const depPaths = names.flatMap((n) => [`${n}@1.0.0`, `${n}@2.0.0(${names[random(names.length)]}@1.0.0)`])
  const ref = (alias: string, depPath: string): string => depPath.startsWith(`${alias}@`) ? depPath.slice(alias.length + 1) : depPath
  const deps = (count: number): Record<string, string> => {
    const out: Record<string, string> = {}
    for (let i = 0; i < count; i++) {
      const depPath = depPaths[random(depPaths.length)]
      const alias = random(4) === 0 ? `alias-${random(3)}` : depPath.slice(0, depPath.indexOf('@', 1))
      out[alias] = random(9) === 0 ? 'link:../other' : random(11) === 0 ? '9.9.9' : ref(alias, depPath)
    }
    return out
  }
  const packages: Record<string, Record<string, unknown>> = {}
  for (const depPath of depPaths) packages[depPath] = { dependencies: deps(random(3)), ...(random(3) === 0 ? { optionalDependencies: deps(1) } : {}) }
  const lockfile = {
    importers: {
      '.': { dependencies: deps(3), devDependencies: deps(2), optionalDependencies: deps(1) },
      'packages/p': { dependencies: { ...deps(2), root: 'link:../..' } },
    },
    packages,
  } as LockfileObject
  const include = { dependencies: true, devDependencies: random(2) === 0, optionalDependencies: random(3) !== 0 }
  return { lockfile, opts: { lockfileDir: '/w', rootModulesDir: '/w/node_modules', virtualStoreDir: '/w/node_modules/.pnpm', virtualStoreDirMaxLength: random(2) === 0 ? 120 : 40, importerNames: { '.': 'root', 'packages/p': random(2) === 0 ? '@w/p' : undefined }, include } }
}
