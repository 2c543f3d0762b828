/**
 * Child process of the multi-process test: batch-reads the keys in the JSON file argv[3] from the
 * store in argv[2] with @cas/native, integrity checks on, over and over until the parent sends
 * `stop`, then reads once more and reports. Every row it finds must be complete and verify: rows
 * are committed only after all their blobs exist.
 */
import fs from 'node:fs'
import * as cas from '../../dist/api/index.js'

const [storeDir, keysFile] = process.argv.slice(2)
const keys = JSON.parse(fs.readFileSync(keysFile, 'utf8'))
let stopping = false
process.on('message', (m) => { if (m === 'stop') stopping = true })

async function readAll () {
  const { results } = await cas.readPkgsFromCafs({ storeDir, verifyStoreIntegrity: true }, keys)
  let hits = 0
  results.forEach((r, i) => {
    if (r.error != null) throw r.error
    if (r.pkgFilesIndex === null) return // not written yet
    if (!r.verified || r.files.filesMap.size === 0) throw new Error(`incomplete row for ${keys[i]}`)
    hits++
  })
  return hits
}

process.send({ ready: true })
let batches = 0
let hits = 0
// `stopping` is set by the message handler between the loop's awaits.
// eslint-disable-next-line no-unmodified-loop-condition
while (!stopping) {
  // The store may not exist yet when the reader starts before the first writer.
  if (fs.existsSync(`${storeDir}/index.db`)) {
    hits += await readAll()
    batches++
  }
  await new Promise((resolve) => setImmediate(resolve))
}
const final = await readAll()
cas.closeStores()
process.send({ batches, hits, final })
process.disconnect()
