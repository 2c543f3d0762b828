/**
 * pnpm 11 itself as a writer in the multi-process test: the extract-child job (argv: storeDir,
 * job file) done by pnpm's own `@pnpm/worker`, rows committed through its StoreIndex.
 */
import fs from 'node:fs'
import * as pnpm from '@pnpm/worker'
import { StoreIndex } from '@pnpm/store.index'

const [storeDir, jobFile] = process.argv.slice(2)
const job = JSON.parse(fs.readFileSync(jobFile, 'utf8'))
const buffers = job.map((t) => fs.readFileSync(t.file))
await pnpm.initStoreDir(storeDir)
const storeIndex = new StoreIndex(storeDir)
process.send({ ready: true })
await Promise.all(job.map((t, i) => pnpm.addFilesFromTarball({ buffer: buffers[i], storeDir, filesIndexFile: t.key, integrity: t.integrity, storeIndex, url: t.file })))
storeIndex.close()
await pnpm.finishWorkers()
process.disconnect()
