/**
 * Rules about the project itself, one by one: what becomes of its lifecycle scripts
 * (`projectScripts`), and when pnpm's frozen install finds its lockfile out of date
 * (`importerOutOfDate`). native-install.spec.ts and pnpmfile-prelink.spec.ts compare the
 * installs they decide with stock pnpm's.
 */
import fs from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { importerOutOfDate } from '../dist/plugin/install/frozen-check.js'
import { projectScripts } from '../dist/plugin/install/project-scripts.js'
import { freshDir } from './helpers/stores.js'

describe('projectScripts: the root project\'s lifecycle scripts', () => {
  const dir = freshDir('project-scripts')
  it.each([
    [{}, { pnpmRuns: [], pendingBuild: false }],
    [{ postinstall: 'a', prepare: 'b', test: 'c' }, { pnpmRuns: ['postinstall', 'prepare'], pendingBuild: false }],
    [{ postprepare: 'a', preprepare: 'b', install: 'c' }, { pnpmRuns: ['install', 'preprepare', 'postprepare'], pendingBuild: false }],
    // pnpm's runner skips an empty script and npm's guard against other package managers.
    [{ preinstall: 'npx only-allow pnpm', postinstall: '' }, { pnpmRuns: [], pendingBuild: false }],
  ])('scripts on, %j', (scripts, expected) => {
    expect(projectScripts({ scripts }, dir, false)).toEqual(expected)
  })

  it('scripts on: a preinstall or pnpm:devPreinstall leaves the install to pnpm (they run before anything is linked)', () => {
    expect(projectScripts({ scripts: { preinstall: 'x' } }, dir, false).leftToPnpm).toMatch(/preinstall script/)
    expect(projectScripts({ scripts: { 'pnpm:devPreinstall': 'x' } }, dir, false).leftToPnpm).toMatch(/pnpm:devPreinstall/)
  })

  it('scripts on: a binding.gyp without install or preinstall scripts is built by pnpm (node-gyp rebuild)', () => {
    const gyp = freshDir('project-gyp')
    fs.writeFileSync(path.join(gyp, 'binding.gyp'), '{}')
    expect(projectScripts({ scripts: { postinstall: 'a' } }, gyp, false).pnpmRuns).toEqual(['install', 'postinstall'])
    expect(projectScripts({ scripts: { install: 'a' } }, gyp, false).pnpmRuns).toEqual(['install'])
  })

  it.each([
    [{ postinstall: 'a' }, true],
    [{ prepublish: 'a' }, true],
    [{ test: 'a' }, false],
    // pnpm looks at the first of its scripts that is set: an empty one counts as none.
    [{ preinstall: '', postinstall: 'a' }, false],
  ])('scripts off, %j: a pending build %s', (scripts, pending) => {
    expect(projectScripts({ scripts }, dir, true)).toEqual({ pnpmRuns: [], pendingBuild: pending })
  })
})

describe('importerOutOfDate: pnpm\'s frozen check of a project against the lockfile', () => {
  const importer = { specifiers: { a: '^1.0.0', b: '2.0.0' }, dependencies: { a: '1.0.1' }, devDependencies: { b: '2.0.0' } }
  it('up to date', () => {
    expect(importerOutOfDate(importer, { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' } }, true)).toBeUndefined()
  })
  it.each([
    ['a dependency added', { dependencies: { a: '^1.0.0', c: '1' }, devDependencies: { b: '2.0.0' } }, /^c: package.json wants "1"/],
    ['a specifier changed', { dependencies: { a: '^1.1.0' }, devDependencies: { b: '2.0.0' } }, /^a: /],
    ['a dependency removed', { dependencies: { a: '^1.0.0' } }, /^b: /],
    ['a dependency moved to another group', { dependencies: { a: '^1.0.0', b: '2.0.0' } }, /^b is not locked in dependencies$/],
    ['publishConfig.directory added', { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' }, publishConfig: { directory: 'dist' } }, /publishConfig.directory/],
    ['dependenciesMeta added', { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' }, dependenciesMeta: { a: { injected: true } } }, /dependenciesMeta/],
  ])('%s', (_, manifest, why) => {
    expect(importerOutOfDate(importer, manifest, true)).toMatch(why)
  })
  it('publishConfig.linkDirectory: false, which lockfiles of pnpm before 11.28 do not record (tanstack-query\'s fixture)', () => {
    const published = { ...importer, publishDirectory: 'dist' }
    const manifest = { dependencies: { a: '^1.0.0' }, devDependencies: { b: '2.0.0' }, publishConfig: { directory: 'dist', linkDirectory: false } }
    expect(importerOutOfDate(published, manifest, true)).toMatch(/linkDirectory/)
    expect(importerOutOfDate({ ...published, linkDirectory: false }, manifest, true)).toBeUndefined()
  })
  it('auto-installed peers are locked as dependencies', () => {
    const withPeer = { specifiers: { a: '^1.0.0', p: '^3' }, dependencies: { a: '1.0.1', p: '3.1.0' } }
    expect(importerOutOfDate(withPeer, { dependencies: { a: '^1.0.0' }, peerDependencies: { p: '^3' } }, true)).toBeUndefined()
    expect(importerOutOfDate(withPeer, { dependencies: { a: '^1.0.0' }, peerDependencies: { p: '^3' } }, false)).toMatch(/^p: /)
  })
})
