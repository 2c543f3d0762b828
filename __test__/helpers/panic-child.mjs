/**
 * Child process of the panic test, started with `CAS_NATIVE_INJECT_PANIC=<task>` so that the
 * native task behind `argv[2]` (an export name) panics. Calls that export twice (the pool thread
 * must survive the first panic), prints how each call ended as JSON, and exits normally.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import * as cas from '../../dist/api/index.js'

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-native-panic-'))
const storeDir = path.join(root, 'store')
fs.mkdirSync(storeDir)
const pkgDir = path.join(root, 'pkg')
fs.mkdirSync(pkgDir)
fs.writeFileSync(path.join(pkgDir, 'package.json'), '{"name":"p","version":"1.0.0"}')
const tarball = fs.readFileSync(path.join(import.meta.dirname, '..', 'fixtures', 'tarballs', 'is-docker@2.2.1.tgz'))

const calls = {
  addFilesFromTarball: () => cas.addFilesFromTarball({ buffer: tarball, storeDir, filesIndexFile: 'k' }),
  addFilesFromDir: () => cas.addFilesFromDir({ storeDir, dir: pkgDir, filesIndexFile: 'k' }),
  readPkgFromCafs: () => cas.readPkgFromCafs({ storeDir }, 'k'),
  importPackage: () => cas.importPackage({ storeDir, targetDir: path.join(root, 'nm/p'), filesResponse: { resolvedFrom: 'store', filesMap: new Map() }, force: false }),
  linkPackages: () => cas.linkPackages({ storeDir, packages: [] }),
  symlinkAllModules: () => cas.symlinkAllModules({ deps: [] }),
  hardLinkDir: () => cas.hardLinkDir(pkgDir, [path.join(root, 'copy')]),
  linkStoredPackages: () => cas.linkStoredPackages({ storeDir, packages: [] }),
}
const outcomes = []
for (let i = 0; i < 2; i++) {
  outcomes.push(await calls[process.argv[2]]().then(
    () => ({ resolved: true }),
    (err) => ({ isError: err instanceof Error, code: err.code, message: err.message }),
  ))
}
cas.closeStores()
process.stdout.write(JSON.stringify(outcomes))
