import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { codeCacheFile, pruneCodeCaches } from '../dist/plugin/code-cache.js'
import { pnpmNode } from './helpers/pnpm-cli.js'
import { freshDir } from './helpers/stores.js'

const loader = path.join(import.meta.dirname, '..', 'dist', 'plugin', 'code-cache.js')

/** A CommonJS module that uses what `require` gives a module, and one it requires beside it. */
function moduleAt (dir: string): string {
  fs.mkdirSync(dir, { recursive: true })
  fs.writeFileSync(path.join(dir, 'dep.js'), 'exports.value = 42\n')
  const file = path.join(dir, 'main.js')
  fs.writeFileSync(file, '"use strict"\nconst dep = require("./dep.js")\nmodule.exports = { value: dep.value, text: "é 𝒳", dirname: __dirname, filename: __filename, strict: (function () { return this === undefined })(), line: new Error().stack.split("\\n")[1] }\n// a last line without its newline')
  return file
}

/** What a new Node 24 process gets from `requireWithCodeCache(file, cacheDir)`. */
function loadInChild (file: string, cacheDir: string | undefined): Record<string, unknown> {
  const script = `const { requireWithCodeCache } = require(${JSON.stringify(loader)}); console.log(JSON.stringify(requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(cacheDir)})))`
  const out = spawnSync(pnpmNode, ['-e', script], { encoding: 'utf8' })
  if (out.status !== 0) throw new Error(out.stderr)
  return JSON.parse(out.stdout) as Record<string, unknown>
}

describe('requireWithCodeCache: the plugin bundle run with a code cache of its own', () => {
  it('runs the module as require does, makes its cache at exit, then runs it from the cache; a damaged cache is made again', () => {
    const dir = freshDir('code-cache')
    const file = moduleAt(path.join(dir, 'pkg'))
    const cacheDir = path.join(dir, 'cache')
    const asRequired = loadInChild(file, undefined)
    expect(asRequired).toMatchObject({ value: 42, text: 'é 𝒳', dirname: path.dirname(file), filename: file, strict: true })
    expect(asRequired.line).toContain(`${file}:3:`)

    const cacheFile = codeCacheFile(cacheDir, fs.readFileSync(file))
    expect(path.dirname(cacheFile)).toBe(path.join(cacheDir, 'cas-pnpm-plugin-native'))
    expect(loadInChild(file, cacheDir)).toEqual(asRequired)
    const made = fs.readFileSync(cacheFile)
    expect(made.readUInt32LE(0)).toBe(zlib.crc32(made.subarray(4)))
    expect(fs.readdirSync(path.dirname(cacheFile))).toEqual([path.basename(cacheFile)])

    // Taken as it is: not written again.
    fs.utimesSync(cacheFile, new Date(0), new Date(0))
    expect(loadInChild(file, cacheDir)).toEqual(asRequired)
    expect(fs.statSync(cacheFile).mtimeMs).toBe(0)

    // A byte changed: not given to V8, the module runs as it would without, and the cache is made again.
    const damaged = Buffer.from(made)
    damaged[damaged.length - 1] ^= 0xff
    fs.writeFileSync(cacheFile, damaged)
    expect(loadInChild(file, cacheDir)).toEqual(asRequired)
    expect(fs.readFileSync(cacheFile).equals(damaged)).toBe(false)
    const remade = fs.readFileSync(cacheFile)
    expect(remade.readUInt32LE(0)).toBe(zlib.crc32(remade.subarray(4)))
  })

  it('codeCacheAfterUpdateConfig: the cache made once updateConfig has run, not waiting for exit; the pnpmfile as it is when the cache was taken', () => {
    const dir = freshDir('code-cache-update')
    const file = path.join(dir, 'pnpmfile.js')
    fs.writeFileSync(file, 'module.exports = { hooks: { updateConfig: async (config) => ({ ...config, seen: true }), other: 1 }, fetchers: [2] }\n')
    const cacheDir = path.join(dir, 'cache')
    const cacheFile = codeCacheFile(cacheDir, fs.readFileSync(file))
    const script = (made: string): string => `const { codeCacheAfterUpdateConfig, requireWithCodeCache } = require(${JSON.stringify(loader)})
      const pnpmfile = requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(cacheDir)})
      const wrapped = codeCacheAfterUpdateConfig(pnpmfile)
      wrapped.hooks.updateConfig({ a: 1 }).then(async (config) => {
        await new Promise((resolve) => setImmediate(resolve))
        console.log(JSON.stringify({ config, same: wrapped === pnpmfile, other: wrapped.hooks.other, fetchers: wrapped.fetchers, made: require('fs').existsSync(${JSON.stringify(made)}) }))
      })`
    const run = (): Record<string, unknown> => {
      const out = spawnSync(pnpmNode, ['-e', script(cacheFile)], { encoding: 'utf8' })
      if (out.status !== 0) throw new Error(out.stderr)
      return JSON.parse(out.stdout) as Record<string, unknown>
    }
    expect(run()).toEqual({ config: { a: 1, seen: true }, same: false, other: 1, fetchers: [2], made: true })
    expect(run()).toEqual({ config: { a: 1, seen: true }, same: true, other: 1, fetchers: [2], made: true })
  })

  it('made only once the process ran what makes it worth it (the plugin: a whole native install, not a `pnpm run`, which calls updateConfig too)', () => {
    const dir = freshDir('code-cache-worth')
    const file = moduleAt(path.join(dir, 'pkg'))
    const cacheDir = path.join(dir, 'cache')
    const cacheFile = codeCacheFile(cacheDir, fs.readFileSync(file))
    const run = (note: boolean): void => {
      const script = `const { installedNatively, noteInstalledNatively, requireWithCodeCache } = require(${JSON.stringify(loader)})
        requireWithCodeCache(${JSON.stringify(file)}, ${JSON.stringify(cacheDir)}, installedNatively)
        ${note ? 'noteInstalledNatively()' : ''}`
      const out = spawnSync(pnpmNode, ['-e', script], { encoding: 'utf8' })
      if (out.status !== 0) throw new Error(out.stderr)
    }
    run(false)
    expect(fs.existsSync(cacheFile)).toBe(false)
    run(true)
    expect(fs.existsSync(cacheFile)).toBe(true)
  })

  it('a module changed since: a cache file of its own; a cache directory it cannot write: runs, nothing written', () => {
    const dir = freshDir('code-cache-changed')
    const file = moduleAt(path.join(dir, 'pkg'))
    const cacheDir = path.join(dir, 'cache')
    loadInChild(file, cacheDir)
    fs.appendFileSync(file, '\nmodule.exports.more = 1\n')
    expect(loadInChild(file, cacheDir)).toMatchObject({ value: 42, more: 1 })
    expect(fs.readdirSync(path.join(cacheDir, 'cas-pnpm-plugin-native'))).toHaveLength(2)

    const notADir = path.join(dir, 'file')
    fs.writeFileSync(notADir, '')
    expect(loadInChild(file, notADir)).toMatchObject({ value: 42, more: 1 })
    expect(fs.readFileSync(notADir, 'utf8')).toBe('')
  })

  it('pruned when one is made: the 4 most recently made kept (releases and Node versions in use), a temporary a killed writer left removed after 10 minutes', () => {
    const dir = freshDir('code-cache-prune')
    const at = (name: string, minutesAgo: number): string => {
      const file = path.join(dir, name)
      fs.writeFileSync(file, 'x')
      const when = new Date(Date.now() - minutesAgo * 60_000)
      fs.utimesSync(file, when, when)
      return name
    }
    const kept = [at('v24-x64-1-a.cache', 1), at('v24-x64-2-b.cache', 2), at('v22-x64-3-c.cache', 3), at('v24-x64-4-d.cache', 4), at('v24-x64-1-a.cache.77.tmp', 5)]
    at('v24-x64-5-e.cache', 50)
    at('v24-x64-6-f.cache.88.tmp', 11)
    pruneCodeCaches(dir)
    expect(fs.readdirSync(dir).sort()).toEqual(kept.sort())
    pruneCodeCaches(path.join(dir, 'none'))
  })
})
