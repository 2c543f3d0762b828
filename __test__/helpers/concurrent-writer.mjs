/**
 * Child process of the concurrency test: rewrites every row in one transaction per generation
 * with pnpm's own StoreIndex (`setRawMany` = BEGIN IMMEDIATE … COMMIT), until the deadline.
 * Every row of generation g is self-describing (see `expectedRow` in read-concurrency.spec.ts),
 * so a reader can tell a torn or mixed read from a consistent one.
 *
 * argv: storeDir durationMs keyCount
 */
import crypto from 'node:crypto'
import { StoreIndex, packForStorage } from '@pnpm/store.index'

const [storeDir, durationMs, keyCount] = process.argv.slice(2)
const keys = Array.from({ length: Number(keyCount) }, (_, i) => `key-${i}`)
const digestOf = (g) => crypto.createHash('sha512').update(`generation ${g}`).digest('hex')

function row (i, g) {
  const digest = digestOf(g)
  const files = new Map()
  for (let j = 0; j < 1 + (g % 13); j++) files.set(`lib/f${j}.js`, { checkedAt: g, digest, mode: j === 0 ? 493 : 420, size: g })
  return { requiresBuild: false, manifest: { name: `pkg-${i}`, version: `${g}.0.0` }, algo: 'sha512', files }
}

const index = new StoreIndex(storeDir)
let g = 1
index.setRawMany(keys.map((key, i) => ({ key, buffer: packForStorage(row(i, g)) })))
process.send({ ready: true })
const end = Date.now() + Number(durationMs)
while (Date.now() < end) {
  g++
  index.setRawMany(keys.map((key, i) => ({ key, buffer: packForStorage(row(i, g)) })))
  // Yield now and then so the IPC channel stays responsive.
  if (g % 20 === 0) await new Promise((resolve) => setImmediate(resolve))
}
index.close()
process.send({ generations: g })
