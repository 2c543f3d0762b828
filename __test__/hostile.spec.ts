/**
 * Hostile tarballs (issue 7, item 1), each built here byte by byte, given to pnpm's own worker
 * (the oracle) and to `@cas/native`. For each: the same outcome (keys, modes and digests of the
 * index row, or the same error code; where we differ on purpose, our coded error), nothing
 * written anywhere but `<store>/files/` and `index.db*` (the whole sentinel directory around the
 * store is compared before and after), and no blob that is not a plain file without
 * setuid/setgid/sticky bits. Every package that extracts is then imported with every method, by
 * us and by pnpm, and linked in one `linkPackages` batch: nothing may appear outside the
 * package's directory. Then the limits: `maxTarballUnpackedSize` against pnpm 11.28's own worker,
 * a gzip bomb, and 100 000 empty files.
 */
import fs from 'node:fs'
import path from 'node:path'
import zlib from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'
import * as cas from '../dist/api/index.js'
import * as casWorker from '../dist/worker/index.js'
import { freshStoreDir, withoutCheckedAt } from './helpers/stores.js'
import { comparable, freshDir, isComplete, snapshotTree, type TreeEntry } from './helpers/trees.js'
import { pnpmPackageDir } from './helpers/pnpm-cli.js'
import { ProtocolWorker } from './helpers/protocol-worker.js'
import { extractInChild } from './helpers/extract-in-child.js'
import { extractWith } from './helpers/stream-above.js'
import { pax, tar, tgz, type TarEntrySpec } from './helpers/tar.js'

/** Everything our side writes goes below this directory; escapes aim at it too. */
const sentinel = freshDir('hostile')
/** A file an entry tries to overwrite through a hard link or a symlink. */
const victim = path.join(sentinel, 'victim')

const pj: TarEntrySpec = { name: 'package/package.json', content: '{"name":"hostile","version":"1.0.0"}' }
const file = (name: string | Buffer, extra: Partial<TarEntrySpec> = {}): TarEntrySpec => ({ name, content: 'evil', ...extra })
const symlink = (name: string, linkname: string): TarEntrySpec => ({ name, type: '2', linkname })

interface HostileCase {
  id: string
  entries: TarEntrySpec[]
  /**
   * The index has a key that names no file inside the package (`..`, `.`): our importer refuses
   * it with `ERR_PNPM_UNSAFE_FILE_PATH`. A key with a NUL is refused as an argument
   * (`ERR_INVALID_ARG_VALUE`) by `importPackage`, and natively when `linkPackages` reads the row.
   */
  unsafeKey?: 'ERR_PNPM_UNSAFE_FILE_PATH' | 'ERR_INVALID_ARG_VALUE'
}

const cases: HostileCase[] = [
  { id: '../../x', entries: [pj, file('../../x')] },
  { id: '/etc/x', entries: [pj, file('/etc/x')] },
  { id: 'C:\\x', entries: [pj, file('C:\\x')] },
  { id: 'a/../../x', entries: [pj, file('a/../../x')] },
  { id: 'package/../../../x', entries: [pj, file('package/../../../x')] },
  { id: 'backslash traversal package\\..\\..\\x', entries: [pj, file('package\\..\\..\\x')] },
  { id: 'backslash traversal package/a\\..\\..\\..\\x', entries: [pj, file('package/a\\..\\..\\..\\x')] },
  { id: 'an absolute name into the sentinel', entries: [pj, file(`${sentinel}/abs-escape`)] },
  { id: 'traversal in the ustar prefix field', entries: [pj, file('x', { prefix: '../../..' })] },
  { id: 'package/.. (key "..")', entries: [pj, file('package/..')], unsafeKey: 'ERR_PNPM_UNSAFE_FILE_PATH' },
  { id: 'package/a/.. (key "a/..")', entries: [pj, file('package/a/..')], unsafeKey: 'ERR_PNPM_UNSAFE_FILE_PATH' },
  { id: 'package/. (key ".")', entries: [pj, file('package/.')], unsafeKey: 'ERR_PNPM_UNSAFE_FILE_PATH' },
  { id: 'package//x (key "/x")', entries: [pj, file('package//x')] },
  { id: 'a pax path with traversal', entries: [pj, pax(['path=package/../../../x']), file('package/y')] },
  { id: 'a pax path into the sentinel', entries: [pj, pax([`path=/${sentinel}/pax-escape`]), file('package/y')] },
  { id: 'a pax path ".."', entries: [pj, pax(['path=..']), file('package/y')], unsafeKey: 'ERR_PNPM_UNSAFE_FILE_PATH' },
  { id: 'a GNU long name with traversal', entries: [pj, { name: '././@LongLink', type: 'L', content: 'package/../../../x' }, file('package/y')] },
  { id: 'a GNU long name ".."', entries: [pj, { name: '././@LongLink', type: 'L', content: 'package/..' }, file('package/y')], unsafeKey: 'ERR_PNPM_UNSAFE_FILE_PATH' },
  {
    id: 'symlinks pointing outside, then a file written through them',
    entries: [pj, symlink('package/up', '../../../../../etc/passwd'), symlink('package/abs', victim), file('package/abs'), symlink('package/dir', sentinel), file('package/dir/x')],
  },
  { id: 'hard links pointing outside', entries: [pj, file('package/passwd', { type: '1', linkname: '/etc/passwd', content: '' }), file('package/victim', { type: '1', linkname: victim, content: '' }), file('package/up', { type: '1', linkname: '../../../x' })] },
  { id: 'a character device', entries: [pj, file('package/tty', { type: '3', content: '' })] },
  { id: 'a block device', entries: [pj, file('package/sda', { type: '4', content: '' })] },
  { id: 'a fifo', entries: [pj, file('package/fifo', { type: '6', content: '' })] },
  { id: 'a contiguous file', entries: [pj, file('package/c', { type: '7' })] },
  {
    id: 'setuid, setgid and sticky modes',
    entries: [pj, file('package/suid', { mode: 0o4755 }), file('package/sgid', { mode: 0o2644 }), file('package/sticky', { mode: 0o1777 }), file('package/all', { mode: 0o7777 }), file('package/typed', { mode: 0o104755 })],
  },
  { id: 'a NUL in the name field', entries: [pj, file(Buffer.from('package/a\0/../../../x'))] },
  { id: 'a NUL in a pax path', entries: [pj, pax(['path=package/a\0b']), file('package/y')], unsafeKey: 'ERR_INVALID_ARG_VALUE' },
  { id: 'a size field 1 MiB past the archive', entries: [pj, file('package/big', { sizeField: '00004000000\0' })] },
  { id: 'a size field of 8 GiB', entries: [pj, file('package/big', { sizeField: '77777777777\0' })] },
  { id: 'a pax size of 10^20', entries: [pj, pax(['size=100000000000000000000']), file('package/y')] },
  { id: 'a pax size of 3 GiB', entries: [pj, pax(['size=3221225472']), file('package/y')] },
  { id: 'a negative pax size', entries: [pj, pax(['size=-1']), file('package/y')] },
  { id: 'a global pax size', entries: [pj, pax(['size=1'], 'g'), file('package/y')] },
]

const pnpmStore = freshStoreDir('hostile-pnpm')
let pnpmIndex: StoreIndex

interface Extracted { id: string, unsafeKey?: HostileCase['unsafeKey'], buffer: Buffer, storeDir: string, ours: Map<string, string>, theirs: Map<string, string> }
const extracted: Extracted[] = []

beforeAll(() => {
  fs.writeFileSync(victim, 'untouched')
  pnpmIndex = new StoreIndex(pnpmStore)
})

afterAll(async () => {
  pnpmIndex.close()
  await pnpm.finishWorkers()
})

/** Paths below `sentinel` that were added, removed or changed and are not `allowed`. */
function changedOutside (before: Map<string, TreeEntry>, allowed: (rel: string) => boolean): string[] {
  const after = snapshotTree(sentinel)
  const line = (rel: string, e: TreeEntry) => comparable(new Map([[rel, e]]))[0]
  const changed: string[] = []
  for (const [rel, e] of after) {
    const was = before.get(rel)
    if (!allowed(rel) && (was == null || line(rel, was) !== line(rel, e))) changed.push(rel)
  }
  for (const rel of before.keys()) if (!after.has(rel) && !allowed(rel)) changed.push(`${rel} (removed)`)
  return changed
}

/** What a store may hold: `files/` and its blobs, `index.db` and its journal files. */
function inStore (storeRel: string) {
  return (rel: string) => rel === storeRel || rel === `${storeRel}/files` || rel.startsWith(`${storeRel}/files/`) ||
    /^index\.db(-wal|-shm|-journal)?$/.test(rel.slice(storeRel.length + 1))
}

/** `dir`, its ancestors below `sentinel`, and everything inside it. */
function inOrAbove (dirRel: string) {
  return (rel: string) => rel === dirRel || rel.startsWith(`${dirRel}/`) || dirRel.startsWith(`${rel}/`)
}

/** Every blob is a plain file with no setuid, setgid or sticky bit. */
function unsafeBlobs (storeDir: string): string[] {
  const bad: string[] = []
  const filesDir = path.join(storeDir, 'files')
  if (!fs.existsSync(filesDir)) return bad
  for (const shard of fs.readdirSync(filesDir)) {
    for (const name of fs.readdirSync(path.join(filesDir, shard))) {
      const st = fs.lstatSync(path.join(filesDir, shard, name))
      if (!st.isFile() || (st.mode & 0o7000) !== 0) bad.push(`${shard}/${name} ${st.mode.toString(8)}`)
    }
  }
  return bad
}

async function pnpmOutcome (buffer: Buffer, key: string): Promise<{ filesMap?: Map<string, string>, code?: string }> {
  try {
    const r = await pnpm.addFilesFromTarball({ buffer, storeDir: pnpmStore, filesIndexFile: key, storeIndex: pnpmIndex, url: 'https://r/h.tgz' })
    return { filesMap: r.filesMap }
  } catch (err: any) {
    return { code: err.code }
  }
}

describe.each(cases.map((c, i) => [c.id, c, i] as const))('%s', (_, c, i) => {
  it('extracts as pnpm does or fails with its code; writes nothing outside files/ and index.db; no unsafe blob', async () => {
    const buffer = tgz(c.entries)
    const caseRel = `case-${i}/a/b/c`
    fs.mkdirSync(path.join(sentinel, caseRel), { recursive: true })
    const storeDir = path.join(sentinel, caseRel, 'v11')
    const before = snapshotTree(sentinel)
    const key = `hostile-${i}`
    const ours = await cas.addFilesFromTarball({ buffer, storeDir, filesIndexFile: key, url: 'https://r/h.tgz' }).then((r) => r, (e) => e)
    // Streamed (issue 16), into a store outside the sentinel: the same outcome.
    const streamedStore = freshStoreDir('hostile-streamed')
    const streamed = await extractWith(0, { buffer, storeDir: streamedStore, filesIndexFile: key, url: 'https://r/h.tgz' }).then((r) => r, (e) => e)
    cas.closeStores()
    if (ours instanceof Error) {
      expect([streamed.code, streamed.message]).toEqual([(ours as any).code, ours.message])
    } else {
      expect([...streamed.filesMap.keys()]).toEqual([...ours.filesMap.keys()])
      const [a, b] = [new StoreIndex(storeDir), new StoreIndex(streamedStore)]
      expect(withoutCheckedAt(b.get(key))).toEqual(withoutCheckedAt(a.get(key)))
      a.close()
      b.close()
    }
    const theirs = await pnpmOutcome(buffer, key)
    expect(changedOutside(before, inStore(`${caseRel}/v11`))).toEqual([])
    expect(unsafeBlobs(storeDir)).toEqual([])
    expect(fs.readFileSync(victim, 'utf8')).toBe('untouched')
    if (theirs.code != null) {
      expect(ours).toBeInstanceOf(cas.PnpmError)
      expect(ours.code).toBe(theirs.code)
      expect(ours.message).toMatch(/^Failed to add tarball from "https:\/\/r\/h\.tgz" to store: \S/)
      return
    }
    expect(ours).not.toBeInstanceOf(Error)
    expect([...ours.filesMap.keys()]).toEqual([...theirs.filesMap!.keys()])
    pnpmIndex.flush()
    const ourIndex = new StoreIndex(storeDir)
    try {
      // The same keys, modes (raw, setuid bits included: only blobs lose them), sizes and digests.
      expect(withoutCheckedAt(ourIndex.get(key))).toEqual(withoutCheckedAt(pnpmIndex.get(key)))
    } finally {
      ourIndex.close()
    }
    extracted.push({ id: c.id, unsafeKey: c.unsafeKey, buffer, storeDir, ours: ours.filesMap, theirs: theirs.filesMap! })
  })
})

const METHODS = ['hardlink', 'copy', 'clone-or-copy', 'auto'] as const

describe('importing what extracted', () => {
  it('covers every case that pnpm extracts', () => {
    expect(extracted.map((e) => e.id)).toContain('../../x')
    expect(extracted.filter((e) => e.unsafeKey)).toHaveLength(cases.filter((c) => c.unsafeKey).length)
  })

  it.each(METHODS)('%s: everything inside the package (or our coded refusal), as pnpm places it', async (method) => {
    for (const [i, e] of extracted.entries()) {
      const root = `import-${method}-${i}`
      const target = (who: string) => path.join(sentinel, root, who, 'node_modules', '.pnpm', 'hostile@1.0.0', 'node_modules', 'hostile')
      const opts = (who: string, filesMap: Map<string, string>, storeDir: string) => ({
        storeDir, packageImportMethod: method, targetDir: target(who), filesResponse: { resolvedFrom: 'store' as const, filesMap, requiresBuild: false }, force: false,
      })
      const before = snapshotTree(sentinel)
      const ours = await cas.importPackage(opts('ours', e.ours, e.storeDir)).then((r) => r, (err) => err)
      // pnpm's importer, on its own store, for comparison: it must not escape either.
      const theirs = await pnpm.importPackage(opts('pnpm', e.theirs, pnpmStore)).then((r) => r, (err) => err)
      const rel = (who: string) => path.relative(sentinel, target(who))
      expect(changedOutside(before, (r) => inOrAbove(rel('ours'))(r) || inOrAbove(rel('pnpm'))(r)), e.id).toEqual([])
      expect(fs.readFileSync(victim, 'utf8')).toBe('untouched')
      if (e.unsafeKey) {
        expect(ours.code, e.id).toBe(e.unsafeKey)
        expect(fs.existsSync(path.join(sentinel, root, 'ours')), e.id).toBe(false)
        continue
      }
      expect(ours, e.id).not.toBeInstanceOf(Error)
      expect(theirs, e.id).not.toBeInstanceOf(Error)
      expect(isComplete(target('ours'), e.ours), e.id).toBe(true)
      expect(comparable(snapshotTree(target('ours'))), e.id).toEqual(comparable(snapshotTree(target('pnpm'))))
    }
  })

  it('one linkPackages batch of them all, file maps read from one store\'s index: the same', async () => {
    const storeRel = 'link-store/v11'
    const storeDir = path.join(sentinel, storeRel)
    const packages = []
    for (const [i, e] of extracted.entries()) {
      await cas.addFilesFromTarball({ buffer: e.buffer, storeDir, filesIndexFile: `link-${i}` })
      packages.push({ targetDir: path.join(sentinel, 'link', 'node_modules', '.pnpm', `h${i}@1.0.0`, 'node_modules', 'hostile'), filesIndexFile: `link-${i}`, e })
    }
    const before = snapshotTree(sentinel)
    const safe = packages.filter((p) => !p.e.unsafeKey)
    const result = await cas.linkPackages({ storeDir, packages: safe.map(({ targetDir, filesIndexFile }) => ({ targetDir, filesIndexFile })) })
    expect(result.counts.packagesImported).toBe(safe.length)
    for (const p of safe) expect(isComplete(p.targetDir, p.e.ours), p.e.id).toBe(true)
    for (const p of packages.filter((p) => p.e.unsafeKey)) {
      const err: any = await cas.linkPackages({ storeDir, packages: [{ targetDir: p.targetDir, filesIndexFile: p.filesIndexFile }] }).catch((e) => e)
      expect(err.code, p.e.id).toBe('ERR_PNPM_UNSAFE_FILE_PATH')
    }
    const allowed = (rel: string) => packages.some((p) => inOrAbove(path.relative(sentinel, p.targetDir))(rel)) || inStore(storeRel)(rel)
    expect(changedOutside(before, allowed)).toEqual([])
  })

  it('file maps naming ../../x, /etc/x, C:\\x, a\\..\\..\\x or an absolute path: refused or placed inside', async () => {
    const { storeDir } = extracted[0]
    const blob = extracted[0].ours.get('package.json')!
    const keys: Array<[string, string | null]> = [
      ['../../x', null],
      ['a/../../x', null],
      ['/etc/x', 'etc/x'],
      [`${sentinel}/abs-import`, `${sentinel.slice(1)}/abs-import`],
      ['C:\\x', 'C:\\x'], // one file name on POSIX (Windows refuses the drive letter)
      ['a\\..\\..\\x', 'a\\..\\..\\x'], // likewise
    ]
    for (const [i, [key, placed]] of keys.entries()) {
      for (const method of METHODS) {
        const rel = `synthetic-${i}-${method}/node_modules/x`
        const targetDir = path.join(sentinel, rel)
        const before = snapshotTree(sentinel)
        const filesMap = new Map([['package.json', blob], [key, blob]])
        const r: any = await cas.importPackage({ storeDir, packageImportMethod: method, targetDir, filesResponse: { resolvedFrom: 'store', filesMap } }).catch((e) => e)
        expect(changedOutside(before, inOrAbove(rel)), `${key} ${method}`).toEqual([])
        if (placed == null) {
          expect(r.code, `${key} ${method}`).toBe('ERR_PNPM_UNSAFE_FILE_PATH')
          expect(fs.existsSync(targetDir)).toBe(false)
        } else {
          expect(r, `${key} ${method}`).not.toBeInstanceOf(Error)
          expect(fs.readFileSync(path.join(targetDir, placed)).equals(fs.readFileSync(blob))).toBe(true)
        }
      }
    }
  })
})

describe('maxTarballUnpackedSize', () => {
  let pnpm11: ProtocolWorker
  const pnpm11Store = freshStoreDir('hostile-pnpm11')

  beforeAll(() => {
    fs.mkdirSync(pnpm11Store, { recursive: true })
    pnpm11 = new ProtocolWorker(path.join(pnpmPackageDir, 'dist', 'worker.js'))
  })

  afterAll(async () => {
    await pnpm11.worker.terminate()
  })

  const kib = (n: number) => Buffer.alloc(n * 1024, 'a')
  // [what, tarball, maxTarballUnpackedSize, does it fit, ignoreFilePattern]
  const limitCases: Array<[string, Buffer, number, boolean, string?]> = [
    ['files adding up to the limit exactly', tgz([pj, file('package/a', { content: kib(3) })]), 3072 + pj.content!.length, true],
    ['one byte more than the limit', tgz([pj, file('package/a', { content: kib(3) })]), 3071 + pj.content!.length, false],
    ['duplicates and hard links count', tgz([file('package/a', { content: kib(1) }), file('package/a', { content: kib(1) }), file('package/h', { type: '1', content: kib(1) })]), 3071, false],
    ['ignored files count', tgz([pj, file('package/docs/a', { content: kib(4) })]), 4096, false, '^docs/'],
    ['directories, symlinks and pax data do not', tgz([pj, file('package/d/', { type: '5', content: '' }), file('package/l', { type: '2', linkname: 'x', content: '' }), pax(['comment=' + 'c'.repeat(2000)]), file('package/y', { content: '' })]), pj.content!.length, true],
    ['a pax size past the limit', tgz([pj, pax(['size=5000']), file('package/y')]), 4999, false],
    ['a size field of 8 GiB', tgz([pj, file('package/big', { sizeField: '77777777777\0' })]), 4 * 2 ** 30, false],
    ['zero: empty files only', tgz([file('package/e', { content: '' })]), 0, true],
    ['a plain (not gzip\'d) tar', tar([pj, file('package/a', { content: kib(2) })]), 2047, false],
  ]

  it.each(limitCases)('%s: the outcome of pnpm 11.28\'s worker, our own message and a hint, nothing written', async (_, buffer, max, fits, ignoreFilePattern) => {
    const reply = await pnpm11.request({ type: 'extract', buffer: new Uint8Array(buffer), storeDir: pnpm11Store, filesIndexFile: 'limit', maxTarballUnpackedSize: max, ignoreFilePattern })
    expect(reply.status).toBe(fits ? 'success' : 'error')
    const storeDir = freshStoreDir('limit')
    const ours: any = await cas.addFilesFromTarball({ buffer, storeDir, filesIndexFile: 'limit', maxTarballUnpackedSize: max, ignoreFilePattern }).catch((e) => e)
    cas.closeStores()
    if (reply.status === 'success') {
      expect(ours).not.toBeInstanceOf(Error)
      expect([...ours.filesMap.keys()]).toEqual([...reply.value.filesMap.keys()])
      return
    }
    expect(reply.error.code).toBe('ERR_PNPM_TARBALL_TOO_LARGE')
    expect(ours).toBeInstanceOf(cas.PnpmError)
    expect(ours.code).toBe('ERR_PNPM_TARBALL_TOO_LARGE')
    expect(ours.message).toMatch(new RegExp(`^Failed to add tarball to store: Unpacked, this tarball would take more than the ${max} bytes maxTarballUnpackedSize allows: its regular files reach \\d+ bytes at "`))
    expect(ours.hint).toMatch(/maxTarballUnpackedSize/)
    expect(ours.hint).not.toBe(reply.error.hint)
    expect(fs.existsSync(path.join(storeDir, 'files'))).toBe(false)
    expect(fs.existsSync(path.join(storeDir, 'index.db'))).toBe(false)
  })

  it('a gzip bomb (6 KB → one 6 MiB file of zeros, limit 1 MiB) fails fast: refused once the tar passes twice the limit', async () => {
    const bomb = tgz([pj, file('package/zeros', { content: Buffer.alloc(6 << 20) })])
    expect(bomb.length).toBeLessThan(10_000)
    const max = 1 << 20
    const reply = await pnpm11.request({ type: 'extract', buffer: new Uint8Array(bomb), storeDir: pnpm11Store, filesIndexFile: 'bomb', maxTarballUnpackedSize: max })
    expect(reply.error.code).toBe('ERR_PNPM_TARBALL_TOO_LARGE')
    const storeDir = freshStoreDir('bomb')
    const started = performance.now()
    const err: any = await cas.addFilesFromTarball({ buffer: bomb, storeDir, filesIndexFile: 'bomb', maxTarballUnpackedSize: max }).catch((e) => e)
    const ms = performance.now() - started
    expect(err.code).toBe('ERR_PNPM_TARBALL_TOO_LARGE')
    expect(err.message).toBe(`Failed to add tarball to store: Unpacked, this tarball would take more than the ${max} bytes maxTarballUnpackedSize allows: it inflates past ${2 * max} bytes, the limit plus as much again for tar headers`)
    expect(fs.existsSync(path.join(storeDir, 'files'))).toBe(false)
    console.log(`gzip bomb of ${bomb.length} bytes (6 MiB inflated) refused at the ${2 * max}-byte cap in ${ms.toFixed(1)} ms`)
  })

  it('@cas/native/worker passes it through', async () => {
    const err: any = await casWorker.addFilesFromTarball({
      buffer: tgz([pj, file('package/a', { content: kib(2) })]), storeDir: freshStoreDir('limit-worker'), filesIndexFile: 'k', url: 'https://r/w.tgz', maxTarballUnpackedSize: 1024, storeIndex: { queueWrites: () => { throw new Error('no row expected') } },
    }).catch((e) => e)
    expect(err.code).toBe('ERR_PNPM_TARBALL_TOO_LARGE')
    expect(err.message).toMatch(/^Failed to add tarball from "https:\/\/r\/w\.tgz" to store: /)
    expect(err.hint).toMatch(/maxTarballUnpackedSize/)
  })
})

describe('100 000 empty files', () => {
  it('extract, with pnpm\'s keys; time and peak RSS reported', async () => {
    const entries: TarEntrySpec[] = [pj]
    for (let i = 0; i < 100_000; i++) entries.push({ name: `package/f/${String(i).padStart(6, '0')}`, content: '' })
    const buffer = tgz(entries)
    const dir = freshDir('100k')
    const tarball = path.join(dir, 'many.tgz')
    fs.writeFileSync(tarball, buffer)
    const ours = extractInChild(tarball, path.join(dir, 'v11'))
    const started = performance.now()
    const theirs = await pnpm.addFilesFromTarball({ buffer, storeDir: pnpmStore, filesIndexFile: 'many', storeIndex: pnpmIndex, url: 'u' })
    const pnpmMs = performance.now() - started
    expect(ours.keys).toHaveLength(100_001)
    expect(ours.keys).toEqual([...theirs.filesMap.keys()])
    console.log(`100 000 empty files (${buffer.length} bytes gzip'd, ${zlib.gunzipSync(buffer).length} bytes of tar): ` +
      `@cas/native ${ours.ms.toFixed(0)} ms, peak RSS ${(ours.maxRSS / 1024).toFixed(0)} MiB; pnpm's worker ${pnpmMs.toFixed(0)} ms`)
  }, 180_000)
})
