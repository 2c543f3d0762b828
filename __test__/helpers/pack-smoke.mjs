// Smoke check of an installed @cas/native, as a user's code meets it: `require` and `import` of
// the package name resolve, and one tarball is extracted into a fresh store. Prints one JSON
// line with what it saw; the caller asserts on it.
//
// Used by __test__/pack.spec.ts (copied into a temporary project that installed the packed
// tarballs, so the package name resolves from that project's node_modules) and by the release
// workflow's test job (run in the repository, where the package name resolves to the package
// itself through `exports`).
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

const storeDir = path.join(mkdtempSync(path.join(os.tmpdir(), 'cas-native-smoke-')), 'v11')
try {
  await cjs.initStoreDir(storeDir)
  const result = await esm.addFilesFromTarball({
    buffer: readFileSync(tarball),
    storeDir,
    filesIndexFile: `${path.basename(tarball)}\tsmoke`,
  })
  cjs.closeStores()
  const blobs = [...result.filesMap.values()]
  const seen = {
    node: process.version,
    resolved: require.resolve('@cas/native'),
    // the addon that actually loaded (Node keeps required .node files in require.cache)
    nativeAddons: Object.keys(require.cache).filter((file) => file.endsWith('.node')),
    sameModule: esm.default === cjs || esm.addFilesFromTarball === cjs.addFilesFromTarball,
    exports: Object.keys(cjs).sort(),
    filesMapSize: result.filesMap.size,
    blobsAreFiles: blobs.every((blob) => blob.startsWith(storeDir) && statSync(blob).isFile()),
    manifestName: result.manifest?.name,
    integrity: result.integrity,
  }
  console.log(JSON.stringify(seen))
  if (expectedIntegrity) {
    assert.equal(seen.integrity, expectedIntegrity)
    assert.equal(seen.filesMapSize, Number(expectedFiles))
    assert.equal(seen.blobsAreFiles, true)
    assert.equal(seen.sameModule, true)
  }
} finally {
  rmSync(path.dirname(storeDir), { recursive: true, force: true })
}
