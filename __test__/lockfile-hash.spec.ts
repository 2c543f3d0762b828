/**
 * pnpm's content hash of a lockfile (lockfile-hash.ts), the key of its recorded verdicts, against
 * the hash stock pnpm 11.28.11 records: stock checks copies of the real projects' lockfiles
 * (`install --frozen-lockfile --lockfile-only` with a day's minimumReleaseAge) against a registry
 * stand-in whose metadata shows every locked version old, and files its verdict under its hash.
 * The end-to-end use (a fresh clone installed natively with no request) is in native-install.spec.ts.
 */
import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readLockfileFile } from '../dist/plugin/install/lockfile-file.js'
import { lockfileContentHash } from '../dist/plugin/install/lockfile-hash.js'
import { referencePnpmDir, runPnpm } from './helpers/pnpm-cli.js'
import { fixturesDir, freshDir } from './helpers/stores.js'

/** Our hash of the lockfile in `dir`. */
function ourHash (dir: string): string | undefined {
  const read = readLockfileFile(dir)
  if (typeof read === 'string') throw new Error(read)
  return lockfileContentHash(read.lockfile, read.text)
}

/** A registry stand-in answering every package's metadata with the versions asked of it so far, all published in 2000. */
async function serveOldMetadata (): Promise<{ url: string, versions: Map<string, Set<string>>, close: () => Promise<void> }> {
  const versions = new Map<string, Set<string>>()
  const old = '2000-01-01T00:00:00.000Z'
  const server = http.createServer((req, res) => {
    const name = decodeURIComponent(new URL(req.url!, 'http://x').pathname).slice(1)
    const listed = [...versions.get(name) ?? []]
    if (listed.length === 0) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{}')
      return
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
      name,
      modified: old,
      'dist-tags': { latest: listed[0] },
      versions: Object.fromEntries(listed.map((v) => [v, { name, version: v, dist: { tarball: 'http://127.0.0.1:9/none.tgz' } }])),
      time: Object.fromEntries(listed.map((v) => [v, old])),
    }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, versions, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

describe('lockfileContentHash: the hash stock pnpm files its verdict under', () => {
  let registry: Awaited<ReturnType<typeof serveOldMetadata>>
  beforeAll(async () => { registry = await serveOldMetadata() })
  afterAll(async () => { await registry?.close() })

  /** Stock's recorded hash for a copy of the project `fixture` (in `__test__/fixtures`; its `packages` keys served as old). */
  async function stockHash (fixture: string): Promise<{ dir: string, hash: string }> {
    const base = freshDir(`lockfile-hash-${path.basename(fixture)}`)
    const dir = path.join(base, 'project')
    fs.cpSync(path.join(fixturesDir, fixture), dir, { recursive: true })
    const text = fs.readFileSync(path.join(dir, 'pnpm-lock.yaml'), 'utf8')
    const packages = text.split('\npackages:\n')[1]?.split('\nsnapshots:\n')[0] ?? ''
    for (const [, name, version] of packages.matchAll(/^ {2}'?((?:@[^/@\s']+\/)?[^@\s']+)@([^'\s(]+?)'?:$/gm)) {
      registry.versions.set(name, (registry.versions.get(name) ?? new Set()).add(version))
    }
    // Stock's install may fail after its check (tailwindcss's patch files are not in the fixture):
    // the verdict is recorded before (pnpm settles its check first).
    await runPnpm(['install', '--frozen-lockfile', '--lockfile-only', '--config.minimum-release-age=1440', '--config.pm-on-fail=ignore'], {
      projectDir: dir, storeDir: path.join(base, 'store'), sandbox: path.join(base, 'sandbox'), registry: registry.url, pnpmDir: referencePnpmDir,
    })
    const verdicts = fs.readFileSync(path.join(base, 'sandbox', 'cache', 'lockfile-verified.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    expect(verdicts.map((v) => v.lockfile.path)).toEqual([path.join(dir, 'pnpm-lock.yaml')])
    return { dir, hash: verdicts[0].lockfile.hash }
  }

  // The e2e project, starters (one project each), monorepos with catalogs, overrides, peers and
  // platform packages, sveltekit's directory dependencies, tailwindcss's patched dependencies and
  // tanstack-query's publish directory (`publishDirectory` in an importer).
  it.each(['e2e-project', ...['starter-vite-react-ts', 'starter-express-ts', 'vue-core', 'vue-language-tools', 'unocss', 'sveltekit', 'tailwindcss', 'tanstack-query'].map((p) => `projects/${p}`)])('%s: the same as stock\'s', async (fixture) => {
    const { dir, hash } = await stockHash(fixture)
    expect(ourHash(dir)).toBe(hash)
  })

  it('the same for the same content in other bytes: pnpm hashes what it read, not the file', async () => {
    const { dir, hash } = await stockHash('projects/starter-vite-react-ts')
    const file = path.join(dir, 'pnpm-lock.yaml')
    const text = fs.readFileSync(file, 'utf8')
    const relaid = text.replace(/^( +)resolution: \{integrity: ([^}]+)\}$/gm, '$1resolution:\n$1  integrity: "$2"').replace(/^lockfileVersion: '9.0'$/m, 'lockfileVersion: "9.0"')
    expect(relaid).not.toBe(text)
    fs.writeFileSync(file, relaid)
    expect(ourHash(dir)).toBe(hash)
  })
})

describe('lockfileContentHash: no hash where pnpm\'s object is not rebuilt exactly', () => {
  const lockfileIn = (label: string, text: string): string => {
    const dir = freshDir(label)
    fs.writeFileSync(path.join(dir, 'pnpm-lock.yaml'), text)
    return dir
  }
  const head = "lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      a:\n        specifier: 1.0.0\n        version: 1.0.0\n\n"

  it('a value repeated by a YAML alias (js-yaml shares it; object-hash writes the second one as a back reference)', () => {
    const plain = `${head}packages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-AAAA}\n    engines: {node: '>=18'}\n\nsnapshots:\n\n  a@1.0.0: {}\n`
    expect(ourHash(lockfileIn('hash-plain', plain))).toMatch(/^[A-Za-z0-9+/]{43}=$/)
    const aliased = `${head}packages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-AAAA}\n    engines: &e {node: '>=18'}\n    peerDependenciesMeta:\n      b: *e\n\nsnapshots:\n\n  a@1.0.0: {}\n`
    expect(ourHash(lockfileIn('hash-alias', aliased))).toBeUndefined()
  })

  it('a git host\'s archive (pnpm flags it gitHosted), a package without a resolution', () => {
    const archive = `${head}packages:\n\n  a@1.0.0:\n    resolution: {tarball: https://codeload.github.com/o/a/tar.gz/0123456789012345678901234567890123456789}\n    version: 1.0.0\n\nsnapshots:\n\n  a@1.0.0: {}\n`
    expect(ourHash(lockfileIn('hash-git', archive))).toBeUndefined()
    expect(ourHash(lockfileIn('hash-unresolved', `${head}packages:\n\n  a@1.0.0: {}\n\nsnapshots:\n\n  a@1.0.0: {}\n`))).toBeUndefined()
  })

  it('an importer with fields besides its specifiers, groups and publish directory (which pnpm\'s object keeps; the reader refuses the ones it knows, e.g. dependenciesMeta): no hash', () => {
    const rest = 'packages:\n\n  a@1.0.0:\n    resolution: {integrity: sha512-AAAA}\n\nsnapshots:\n\n  a@1.0.0: {}\n'
    const read = readLockfileFile(lockfileIn('hash-importer-field', `${head}${rest}`))
    if (typeof read === 'string') throw new Error(read)
    const plain = lockfileContentHash(read.lockfile, read.text)
    expect(plain).toMatch(/^[A-Za-z0-9+/]{43}=$/)
    Object.assign(read.lockfile.importers['.'], { publishDirectory: 'dist', linkDirectory: false })
    expect(lockfileContentHash(read.lockfile, read.text)).toMatch(/^[A-Za-z0-9+/]{43}=$/)
    expect(lockfileContentHash(read.lockfile, read.text)).not.toBe(plain)
    Object.assign(read.lockfile.importers['.'], { dependenciesMeta: { a: { injected: true } } })
    expect(lockfileContentHash(read.lockfile, read.text)).toBeUndefined()
  })
})
