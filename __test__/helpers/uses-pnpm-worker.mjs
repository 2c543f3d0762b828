// Code written against pnpm's worker, unchanged: what `@pnpm/worker` is depends on where it runs
// (the stock package, or @cas/pnpm-worker through an override). Extracts a tarball, fails one on
// its integrity, reads the pool size, and prints what it saw as one JSON line.
// Usage: node uses-pnpm-worker.mjs <tarball> <integrity> <store dir>
import fs from 'node:fs'
import path from 'node:path'
import * as worker from '@pnpm/worker'

const [tarball, integrity, storeDir] = process.argv.slice(2)
const buffer = fs.readFileSync(tarball)
const rows = []
const storeIndex = { queueWrites: (writes) => rows.push(...writes) }
const extracted = await worker.addFilesFromTarball({ buffer, storeDir, filesIndexFile: `${integrity}\tpkg`, integrity, url: 'https://registry.example/pkg.tgz', storeIndex })
const failed = await worker.addFilesFromTarball({ buffer, storeDir, filesIndexFile: 'bad', integrity: 'sha512-AAAA', url: 'https://registry.example/bad.tgz', storeIndex })
  .then(() => undefined, (e) => ({ class: e.constructor.name, code: e.code, message: e.message, url: e.url }))
await worker.finishWorkers()

console.log(JSON.stringify({
  resolved: import.meta.resolve('@pnpm/worker'),
  nativeAddons: process.report.getReport().sharedObjects.filter((f) => f.endsWith('.node')),
  exports: Object.keys(worker).filter((k) => k !== 'default' && k !== 'module.exports').sort(),
  filesMap: [...extracted.filesMap].map(([file, blob]) => [file, path.relative(storeDir, blob)]),
  manifest: extracted.manifest,
  requiresBuild: extracted.requiresBuild,
  integrity: extracted.integrity,
  rows: rows.map((r) => r.key),
  failed,
  maxWorkers: worker.calcMaxWorkers(),
}))
