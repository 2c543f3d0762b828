/**
 * Child process of the full-disk test, run in its own mount namespace with a small tmpfs mounted
 * at argv[2]: extracts the tarballs of the job in argv[3] one after another into a store on that
 * tmpfs until one fails, checks what the failure left, makes room (remounts the tmpfs bigger) and
 * extracts the failed tarball again. Prints a JSON report; the store vanishes with the namespace.
 */
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import * as cas from '../../dist/api/index.js'
import { verifyStore } from './verify-store.mjs'

const [mountDir, jobFile] = process.argv.slice(2)
const storeDir = path.join(mountDir, 'store')
const job = JSON.parse(fs.readFileSync(jobFile, 'utf8'))
const extract = (t) => cas.addFilesFromTarball({ buffer: fs.readFileSync(t.file), storeDir, filesIndexFile: t.key, integrity: t.integrity })
const hasRow = async (key) => {
  const [result] = (await cas.readPkgsFromCafs({ storeDir, verifyStoreIntegrity: true }, [key])).results
  if (result.error != null) throw result.error
  return result.files != null
}

await cas.initStoreDir(storeDir)
let extracted = 0
let failure
for (const t of job) {
  try {
    await extract(t)
    extracted++
  } catch (err) {
    failure = { key: t.key, code: err.code, message: err.message, rowAfterFailure: await hasRow(t.key) }
    break
  }
}
const afterFailure = verifyStore(storeDir)
execFileSync('mount', ['-o', 'remount,size=256m', mountDir])
let retried
if (failure != null) {
  await extract(job[extracted])
  retried = { rowAfterRetry: await hasRow(failure.key) }
}
const afterRetry = verifyStore(storeDir)
cas.closeStores()
process.stdout.write(JSON.stringify({ extracted, failure, afterFailure, retried, afterRetry }))
