/**
 * Child process of the crash-safety test: extracts every tarball the JSON job in argv[3] lists
 * (`[{ file, key, integrity }]`) into the store in argv[2], all in flight at once as pnpm does,
 * and exits 0. It says `ready` over IPC just before the work starts; the parent SIGKILLs it at a
 * random moment after that.
 */
import fs from 'node:fs'
import * as cas from '../../dist/api/index.js'

const [storeDir, jobFile] = process.argv.slice(2)
const job = JSON.parse(fs.readFileSync(jobFile, 'utf8'))
const buffers = job.map((t) => fs.readFileSync(t.file))
await cas.initStoreDir(storeDir)
process.send({ ready: true })
await Promise.all(job.map((t, i) => cas.addFilesFromTarball({ buffer: buffers[i], storeDir, filesIndexFile: t.key, integrity: t.integrity })))
cas.closeStores()
process.disconnect()
