/**
 * benchmark/lockfile.mjs, the reader the link benchmark and the demo build their node_modules
 * from: the fixture lockfile's layout must be pnpm 11's. The directory names below were taken
 * from a real `pnpm install --offline` (pnpm 11.28.10) of the same lockfile; the whole tree
 * (every directory, file and symlink but `.bin`) was compared once by hand and matched.
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: plain JS module without types
import { depPathToFilename, layout, readLockfile } from '../benchmark/lockfile.mjs'

const lockfile = readLockfile(path.join(import.meta.dirname, '../benchmark/fixtures/alotta-modules/pnpm-lock.yaml'))

describe('benchmark/lockfile.mjs', () => {
  it('names virtual-store directories as pnpm 11 does', () => {
    expect(depPathToFilename('@babel/helper-module-transforms@7.28.6(@babel/core@7.29.0)'))
      .toBe('@babel+helper-module-transforms@7.28.6_@babel+core@7.29.0')
    const long = Object.keys(lockfile.snapshots).find((k: string) => k.startsWith('terser-webpack-plugin@5.6.0('))
    expect(depPathToFilename(long)).toBe('terser-webpack-plugin@5.6.0_cssnano@6.1.2_postcss@8.5.10__postcss@8.5.10_uglify-js@3.19_9294469e5a852774d38678b22d584d90')
  })

  it('lays out every snapshot, its dependency links, the direct and the hoisted links', () => {
    const { packages, symlinks } = layout(lockfile, '/p', { projectName: 'alotta-modules' })
    expect(packages).toHaveLength(1355)
    expect(packages[0]).toEqual(expect.objectContaining({
      targetDir: '/p/node_modules/.pnpm/@babel+code-frame@7.29.0/node_modules/@babel/code-frame',
      filesIndexFile: expect.stringMatching(/^sha512-.+\t@babel\/code-frame@7\.29\.0$/),
    }))
    const links = symlinks.reduce((n: number, s: any) => n + Object.keys(s.children).filter((a) => a !== s.name).length, 0)
    expect(links).toBe(3827)
    const hoisted = symlinks.find((s: any) => s.modules === '/p/node_modules/.pnpm/node_modules')
    // The version pnpm hoists where several exist (checked against pnpm's tree).
    expect(hoisted.children['color-name']).toBe('/p/node_modules/.pnpm/color-name@1.1.4/node_modules/color-name')
    expect(hoisted.children.tapable).toBe('/p/node_modules/.pnpm/tapable@0.1.10/node_modules/tapable')
  })
})
