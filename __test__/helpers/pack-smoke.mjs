// Smoke check of an installed @cas/native, as a user's code meets it: `require('@cas/native')`,
// `import('@cas/native')` and `import('@cas/native/worker')` resolve, and one tarball is
// extracted into a fresh store twice: by the main API (which writes the index row itself, then
// reads it back with every blob verified and links the package into a node_modules) and by the
// worker drop-in (which hands the row to the caller's `storeIndex`; a collector here, so that
// this runs on Node 20 too, where pnpm's own StoreIndex cannot: it needs `node:sqlite`).
// Prints one JSON line with what it saw; the caller asserts on it.
//
// Used by __test__/pack.spec.ts (copied into a temporary project that installed the packed
// tarballs, so the package name resolves from that project's node_modules), by
// scripts/test-emulated.mjs (the same, under qemu and wine) and by the release workflow's test
// jobs (run in the repository, where the package name resolves to the package itself through
// `exports`).
//
//   node pack-smoke.mjs <tarball.tgz> [<expected integrity> <expected file count>]
//
// With the expectations given it also checks them and exits non-zero on a mismatch.
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'

const [tarball, expectedIntegrity, expectedFiles] = process.argv.slice(2)
if (!tarball) throw new Error('usage: node pack-smoke.mjs <tarball.tgz> [<expected integrity> <expected file count>]')

const require = createRequire(import.meta.url)
const cjs = require('@cas/native')
const esm = await import('@cas/native')
const worker = await import('@cas/native/worker')

const tmp = mkdtempSync(path.join(os.tmpdir(), 'cas-native-smoke-'))
try {
  const buffer = readFileSync(tarball)
  const filesIndexFile = `${path.basename(tarball)}\tsmoke`
  const blobsIn = (storeDir, filesMap) =>
    [...filesMap.values()].every((blob) => blob.startsWith(storeDir) && statSync(blob).isFile())

  const mainStore = path.join(tmp, 'main', 'v11')
  await cjs.initStoreDir(mainStore)
  const viaMain = await cjs.addFilesFromTarball({ buffer, storeDir: mainStore, filesIndexFile })
  const read = await cjs.readPkgFromCafs({ storeDir: mainStore, verifyStoreIntegrity: true }, filesIndexFile)
  const pkgDir = path.join(tmp, 'project', 'node_modules', viaMain.manifest?.name ?? 'unnamed')
  const linked = await cjs.importPackage({ storeDir: mainStore, targetDir: pkgDir, filesResponse: read.files })
  cjs.closeStores()

  const workerStore = path.join(tmp, 'worker', 'v11')
  await worker.initStoreDir(workerStore)
  const rows = []
  const viaWorker = await worker.addFilesFromTarball({
    buffer,
    storeDir: workerStore,
    filesIndexFile,
    storeIndex: { queueWrites: (writes) => rows.push(...writes) },
    url: tarball,
  })
  await worker.finishWorkers()

  const seen = {
    node: process.version,
    resolved: require.resolve('@cas/native'),
    resolvedWorker: require.resolve('@cas/native/worker'),
    // the addon that actually loaded (Node keeps required .node files in require.cache)
    nativeAddons: Object.keys(require.cache).filter((file) => file.endsWith('.node')),
    sameModule: esm.default === cjs && esm.addFilesFromTarball === cjs.addFilesFromTarball,
    exports: Object.keys(cjs).sort(),
    workerExports: Object.keys(worker).filter((k) => !['default', '__esModule', 'module.exports'].includes(k)).sort(),
    filesMapSize: viaMain.filesMap.size,
    blobsAreFiles: blobsIn(mainStore, viaMain.filesMap),
    manifestName: viaMain.manifest?.name,
    integrity: viaMain.integrity,
    read: { verified: read.verified, filesMapSize: read.files?.filesMap.size },
    linked: {
      importMethod: linked.importMethod,
      manifestName: JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).name,
    },
    worker: {
      filesMapSize: viaWorker.filesMap.size,
      blobsAreFiles: blobsIn(workerStore, viaWorker.filesMap),
      manifestName: viaWorker.manifest?.name,
      integrity: viaWorker.integrity,
      rows: rows.map((row) => ({ key: row.key, bytes: row.buffer.byteLength })),
    },
  }
  console.log(JSON.stringify(seen))
  if (expectedIntegrity) {
    for (const got of [seen, seen.worker]) {
      assert.equal(got.integrity, expectedIntegrity)
      assert.equal(got.filesMapSize, Number(expectedFiles))
      assert.equal(got.blobsAreFiles, true)
    }
    assert.deepEqual(seen.read, { verified: true, filesMapSize: Number(expectedFiles) })
    assert.ok(['clone', 'hardlink', 'copy'].includes(seen.linked.importMethod), seen.linked.importMethod)
    assert.equal(seen.linked.manifestName, seen.manifestName)
    assert.equal(seen.sameModule, true)
    assert.deepEqual(seen.worker.rows.map((row) => row.key), [filesIndexFile])
    assert.ok(seen.worker.rows[0].bytes > 0)
  }
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
