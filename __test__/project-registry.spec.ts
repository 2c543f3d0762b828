import crypto from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import util from 'node:util'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { registerProject } from '../dist/plugin/install/project-registry.js'
import { pnpmFunction } from './helpers/pnpm-bundle.js'

/** pnpm 11.28.11's own `registerProject` (its store controller's project registry), run from its bundle. */
const pnpmRegisterProject = pnpmFunction<(storeDir: string, projectDir: string) => Promise<void>>('registerProject', {
  fs85: fs.promises,
  path132: path,
  util,
  path14: path,
  path13: path,
  crypto8: crypto,
})

interface Case {
  /** Makes what is there before the install, in `root` (the store is `<root>/store/v11`). */
  setUp?: (root: string, store: string) => void
  /** The project's directory. */
  project: (root: string, store: string) => string
}

describe('the store\'s list of projects, as pnpm\'s install writes it', () => {
  let root: string
  beforeEach(() => { root = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-registry-')) })
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }))

  /** The store's list (each entry with what it links to) after `register`, from a fresh `root`. */
  async function listed (register: (store: string, project: string) => unknown, { setUp, project }: Case): Promise<Record<string, string>> {
    fs.rmSync(root, { recursive: true, force: true })
    fs.mkdirSync(root)
    const store = path.join(root, 'store', 'v11')
    setUp?.(root, store)
    await register(store, project(root, store))
    const dir = path.join(store, 'projects')
    if (!fs.existsSync(dir)) return {}
    return Object.fromEntries(fs.readdirSync(dir).map((name) => [name, fs.readlinkSync(path.join(dir, name))]))
  }

  /** What ours lists equals what pnpm's lists, from the same start. */
  async function asPnpm (c: Case): Promise<Record<string, string>> {
    const pnpm = await listed(pnpmRegisterProject, c)
    expect(await listed(registerProject, c)).toEqual(pnpm)
    return pnpm
  }

  it('links the project from a name made of its path\'s hash', async () => {
    const list = await asPnpm({ setUp: (r) => fs.mkdirSync(path.join(r, 'project')), project: (r) => path.join(r, 'project') })
    expect(Object.values(list)).toEqual([path.join(root, 'project')])
  })

  it('replaces a link that leads elsewhere, and keeps one that leads to the project', async () => {
    const setUp = (target: string) => (r: string, store: string): void => {
      fs.mkdirSync(path.join(r, 'project'))
      fs.mkdirSync(path.join(store, 'projects'), { recursive: true })
      fs.symlinkSync(path.join(r, target), path.join(store, 'projects', crypto.hash('sha256', path.join(r, 'project'), 'hex').slice(0, 32)))
    }
    expect(Object.values(await asPnpm({ setUp: setUp('elsewhere'), project: (r) => path.join(r, 'project') }))).toEqual([path.join(root, 'project')])
    expect(Object.values(await asPnpm({ setUp: setUp('project'), project: (r) => path.join(r, 'project') }))).toEqual([path.join(root, 'project')])
  })

  it('lists a project inside the store, and none that holds the store', async () => {
    expect(Object.keys(await asPnpm({ project: (_, store) => path.join(store, 'tmp', 'project') }))).toHaveLength(1)
    expect(await asPnpm({ project: (r) => r })).toEqual({})
  })

  // 11.28.4-11.28.8 link with symlink-dir, whose behaviour their own install shows (the e2e
  // specs under 11.28.4 compare the store's list with stock's); here, its cases one by one.
  describe('under the releases that link with symlink-dir', () => {
    const register = (store: string, project: string): Promise<void> => registerProject(store, project, 'relative')
    const project = (r: string): string => path.join(r, 'project')
    const linkOf = (store: string): string => path.join(store, 'projects', crypto.hash('sha256', path.join(root, 'project'), 'hex').slice(0, 32))

    it('links the project by its path from the list', async () => {
      fs.mkdirSync(project(root))
      const list = await listed(register, { project })
      expect(Object.values(list)).toEqual([path.join('..', '..', '..', 'project')])
    })

    it('keeps a link that leads to the project, replaces one that leads elsewhere, and sets aside what else has the name', async () => {
      const store = path.join(root, 'store', 'v11')
      for (const [there, kept] of [['../../../project', true], [path.join(root, 'project'), true], ['../../../elsewhere', false]] as const) {
        const list = await listed(register, {
          setUp: (r, s) => { fs.mkdirSync(project(r)); fs.mkdirSync(path.join(s, 'projects'), { recursive: true }); fs.symlinkSync(there, linkOf(s)) },
          project,
        })
        expect(Object.values(list)).toEqual([kept ? there : path.join('..', '..', '..', 'project')])
      }
      fs.rmSync(root, { recursive: true, force: true })
      fs.mkdirSync(project(root), { recursive: true })
      fs.mkdirSync(linkOf(store), { recursive: true })
      await register(store, project(root))
      expect(fs.readlinkSync(linkOf(store))).toBe(path.join('..', '..', '..', 'project'))
      expect(fs.statSync(path.join(store, 'projects', `.ignored_${path.basename(linkOf(store))}`)).isDirectory()).toBe(true)
    })

    it('lists none that holds the store', async () => {
      expect(await listed(register, { project: (r) => r })).toEqual({})
    })
  })
})
