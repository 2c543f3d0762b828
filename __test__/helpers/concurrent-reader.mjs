/**
 * Child process of the concurrency test: batch-reads all keys with @cas/native over and over
 * while the writer process commits, and checks every answer. A batch is read from one snapshot,
 * and the writer commits all rows of a generation in one transaction, so all hits of one batch
 * must be complete rows of one and the same generation.
 *
 * argv: storeDir durationMs keyCount
 */
import crypto from 'node:crypto'
import cas from '../../dist/api/index.js'

const [storeDir, durationMs, keyCount] = process.argv.slice(2)
const keys = Array.from({ length: Number(keyCount) }, (_, i) => `key-${i}`)
const digestOf = (g) => crypto.createHash('sha512').update(`generation ${g}`).digest('hex')

let batches = 0
let hits = 0
const generations = new Set()
const end = Date.now() + Number(durationMs)
while (Date.now() < end) {
  const { results } = await cas.readPkgsFromCafs({ storeDir, verifyStoreIntegrity: false }, keys)
  const seen = new Set()
  results.forEach((r, i) => {
    if (r.error != null) throw r.error
    if (r.files == null) return // not written yet
    const g = Number.parseInt(r.bundledManifest.version, 10)
    const rest = digestOf(g).slice(2)
    const paths = [...r.files.filesMap.values()]
    if (r.bundledManifest.name !== `pkg-${i}` || paths.length !== 1 + (g % 13) ||
      !paths.every((p, j) => p.endsWith(j === 0 ? `${rest}-exec` : rest))) {
      throw new Error(`torn row for ${keys[i]}: ${JSON.stringify(r.bundledManifest)} ${paths.length} files`)
    }
    seen.add(g)
    hits++
  })
  if (seen.size > 1) throw new Error(`one batch mixed generations ${[...seen]}`)
  for (const g of seen) generations.add(g)
  batches++
}
cas.closeStores()
process.send({ batches, hits, generations: generations.size })
