/**
 * The main job, end to end: every tarball of a real lockfile (the ~1355 packages of
 * benchmark/fixtures/alotta-modules) extracted by @cas/native into a fresh pnpm 11 store, then
 * the lockfile's whole node_modules (pnpm 11's isolated layout, see benchmark/lockfile.mjs)
 * linked from that store in one `linkPackages` call, with what was done and each phase's time
 * printed. `npm run demo` downloads the tarballs first (once, into benchmark/.cache).
 *
 * Usage: node benchmark/demo.mjs [--store <dir>] [--project <dir>]
 *   (defaults: new directories under benchmark/.work; the project dir gets the node_modules)
 *
 * It keeps its own run's store and project for a look, and deletes older demo runs (about
 * 420 MB each) in the background once it is done, so that nothing accumulates and no deletion
 * runs while it is timing (BENCHMARKING.md: creating files just after a big delete is slow).
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import * as cas from '../dist/api/index.js'
import { benchmarkDir, deleteInBackground, listBlobs, loadCorpus } from './corpus.mjs'
import { layout, readLockfile } from './lockfile.mjs'

const { values: args } = parseArgs({ options: { store: { type: 'string' }, project: { type: 'string' } } })
const demoDir = path.join(benchmarkDir, '.work', `demo-${Date.now()}`)
const storeDir = args.store ?? path.join(demoDir, 'v11')
const projectDir = args.project ?? path.join(demoDir, 'project')

const ms = (t) => `${t.toFixed(0)} ms`
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`

let t = performance.now()
const corpus = loadCorpus()
const compressed = corpus.reduce((n, c) => n + c.buffer.length, 0)
console.log(`lockfile: ${corpus.length} packages, ${mb(compressed)} of tarballs (read in ${ms(performance.now() - t)})`)
console.log(`store:    ${storeDir}`)
console.log(`machine:  ${os.availableParallelism()} cores, Node ${process.version}`)

t = performance.now()
const cpuBefore = process.cpuUsage()
await cas.initStoreDir(storeDir)
const results = await Promise.all(corpus.map((c) => cas.addFilesFromTarball({
  buffer: c.buffer, storeDir, filesIndexFile: c.key, integrity: c.integrity, url: c.url,
})))
const wall = performance.now() - t
const cpu = process.cpuUsage(cpuBefore)

const sum = (f) => results.reduce((n, r) => n + f(r), 0)
const files = sum((r) => r.filesMap.size)
console.log(`\nextract:  ${corpus.length} tarballs, ${files} files, ${listBlobs(storeDir).count} unique blobs, ` +
  `${sum((r) => (r.requiresBuild ? 1 : 0))} packages need a build`)
console.log(`  wall ${ms(wall)} (${(corpus.length / wall * 1000).toFixed(0)} tarballs/s, ${mb(compressed / wall * 1000)}/s compressed), ` +
  `CPU ${ms((cpu.user + cpu.system) / 1000)}`)
console.log('  time summed over all calls (they overlap on the pool):')
console.log(`    inflate ${ms(sum((r) => r.timings.inflateMs))}, ` +
  `hash+write ${ms(sum((r) => r.timings.hashWriteMs))}, index commit ${ms(sum((r) => r.timings.indexMs))}`)
cas.closeStores()
console.log(`\nindex:    ${fs.statSync(path.join(storeDir, 'index.db')).size} bytes in ${path.join(storeDir, 'index.db')}`)

// Link: every package of the lockfile into <project>/node_modules/.pnpm by its store-index key
// (the file maps never leave Rust), then every dependency symlink, in one native call.
const lockfile = readLockfile(path.join(benchmarkDir, 'fixtures/alotta-modules/pnpm-lock.yaml'))
const plan = layout(lockfile, projectDir, { projectName: 'alotta-modules' })
t = performance.now()
const linkCpuBefore = process.cpuUsage()
const linked = await cas.linkPackages({ storeDir, packageImportMethod: 'auto', packages: plan.packages, symlinks: plan.symlinks })
const linkWall = performance.now() - t
const linkCpu = process.cpuUsage(linkCpuBefore)
const c = linked.counts
const methods = {}
for (const r of linked.results) methods[r.importMethod ?? 'skipped'] = (methods[r.importMethod ?? 'skipped'] ?? 0) + 1
console.log(`\nlink:     ${plan.packages.length} packages into ${path.join(projectDir, 'node_modules')} ` +
  `(import method: ${Object.entries(methods).map(([m, n]) => `${m} ×${n}`).join(', ')})`)
console.log(`  ${c.filesLinked} files hard-linked, ${c.filesCopied} copied, ${c.filesCloned} cloned, ` +
  `${c.dirsMade} directories made, ${c.symlinks} symlinks; ${c.packagesSkipped} packages already there`)
console.log(`  wall ${ms(linkWall)} (native: import ${ms(linked.importMs)} + symlinks ${ms(linked.symlinkMs)}), CPU ${ms((linkCpu.user + linkCpu.system) / 1000)}`)
for (const w of linked.warnings) console.log(`  warning: ${w}`)
cas.closeStores()

// Only the newest run is kept (its own, unless --store/--project put it elsewhere).
const workDir = path.join(benchmarkDir, '.work')
const older = fs.readdirSync(workDir).filter((d) => d.startsWith('demo-') && path.join(workDir, d) !== demoDir)
for (const d of older) deleteInBackground(path.join(workDir, d))
if (fs.existsSync(demoDir)) console.log(`\nthis run's store and node_modules are kept in ${path.relative(process.cwd(), demoDir)}`)
if (older.length > 0) console.log(`${older.length} older demo runs are being deleted in the background`)
