/**
 * Crash safety: a process extracting tarballs and a process linking packages are SIGKILLed at
 * random moments, many times. Afterwards the store verifies (every blob's bytes match its name,
 * every index row decodes and names blobs that exist), every package directory that has its
 * package.json is complete, and a re-run finishes the job.
 *
 * `CAS_NATIVE_LONG=1` (`npm run test:long`) runs the long loops; CI runs the short ones.
 */
import fs from 'node:fs'
import path from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { extractionTarballs, runChild, writeJob } from './helpers/processes.js'
import { freshStoreDir } from './helpers/stores.js'
import { freshDir, isComplete, storeFilledByPnpm, type FilledStore } from './helpers/trees.js'
import { verifyStore } from './helpers/verify-store.mjs'

const long = process.env.CAS_NATIVE_LONG === '1'
const EXTRACT_ROUNDS = long ? 40 : 8
const LINK_ROUNDS = long ? 30 : 6

/**
 * Random kill delays within a window that adapts: halved after a kill that came too late (the
 * child had finished), grown back after one that landed mid-work. Run times swing 2-3x on a
 * loaded machine, and a fixed window would then miss most of the work.
 */
function killWindow (fullMs: number): { next: () => number, landed: (midWork: boolean) => void } {
  let window = fullMs
  return {
    next: () => Math.random() * window,
    landed: (midWork) => { window = midWork ? Math.min(fullMs, window * 1.25) : window / 2 },
  }
}

describe('extraction killed with SIGKILL at random moments', () => {
  it(`leaves a store that verifies, and a re-run completes (${EXTRACT_ROUNDS} rounds of two kills)`, async () => {
    // Enough new blobs that a kill lands among the writes, not after them.
    const tarballs = extractionTarballs(40)
    const job = writeJob(tarballs, 'all')
    const keys = tarballs.map((t) => t.key)
    // How long an uninterrupted run into an empty store takes, so kills land inside the work.
    const calibration = await runChild('extract-child.mjs', [freshStoreDir('crash-calibrate'), job])
    expect(await calibration.exit).toBe(0)
    const fullMs = calibration.readyToExitMs
    const kills = killWindow(fullMs)

    let midway = 0
    let blobsChecked = 0
    let rowsChecked = 0
    for (let round = 0; round < EXTRACT_ROUNDS; round++) {
      const storeDir = freshStoreDir('crash-extract')
      // The first kill interrupts writes into an empty store; the second, on the same store,
      // interrupts a run that finds some blobs present (verify and repair paths).
      for (let kill = 0; kill < 2; kill++) {
        const run = await runChild('extract-child.mjs', [storeDir, job], kills.next())
        const report = verifyStore(storeDir)
        expect(report.problems, `round ${round}, kill ${kill}`).toEqual([])
        const midWork = await run.exit === 'SIGKILL' && report.rows < keys.length
        kills.landed(midWork)
        if (midWork) midway++
        blobsChecked += report.blobs
        rowsChecked += report.rows
      }
      const rerun = await runChild('extract-child.mjs', [storeDir, job])
      expect(await rerun.exit).toBe(0)
      const report = verifyStore(storeDir)
      expect(report.problems).toEqual([])
      expect(report.keys.sort()).toEqual([...keys].sort())
      blobsChecked += report.blobs
      rowsChecked += report.rows
      // Deleted while the next round runs: the long loop would otherwise leave gigabytes.
      void fs.promises.rm(path.dirname(storeDir), { recursive: true, force: true })
    }
    console.log(`extraction: ${2 * EXTRACT_ROUNDS} kills (${midway} with the work unfinished; full run ${fullMs.toFixed(0)} ms), ${blobsChecked} blobs and ${rowsChecked} rows verified`)
    // Most kills must land while work is under way, or the test proves nothing.
    expect(midway).toBeGreaterThanOrEqual(EXTRACT_ROUNDS)
  }, long ? 1_800_000 : 300_000)
})

describe('linking killed with SIGKILL at random moments', () => {
  let store: FilledStore
  beforeAll(async () => {
    store = await storeFilledByPnpm('crash-link')
  }, 120_000)

  /** A batch of many copies of every fixture package, each linked to the next by a symlink. */
  function linkJob (root: string): { job: string, packages: Array<{ targetDir: string, filesMap: Map<string, string> }> } {
    const packages: Array<{ targetDir: string, filesIndexFile: string, filesMap: Map<string, string> }> = []
    for (let i = 0; i < 8; i++) {
      for (const p of store.packages) {
        packages.push({ targetDir: path.join(root, 'node_modules/.pnpm', `${p.id.replace('/', '+')}-${i}`, 'node_modules', p.name), filesIndexFile: p.key, filesMap: p.filesMap })
      }
    }
    const job = path.join(root, 'job.json')
    fs.writeFileSync(job, JSON.stringify({
      storeDir: store.storeDir,
      packageImportMethod: 'copy',
      packages: packages.map(({ targetDir, filesIndexFile }) => ({ targetDir, filesIndexFile })),
      symlinks: packages.map((p, i) => ({ name: 'self', modules: path.dirname(p.targetDir), children: { [`dep${i}`]: packages[(i + 1) % packages.length].targetDir } })),
    }))
    return { job, packages }
  }

  it(`leaves only complete packages behind, and a re-run completes the tree (${LINK_ROUNDS} rounds)`, async () => {
    const calibration = await runChild('link-child.mjs', [linkJob(freshDir('crash-link-calibrate')).job])
    expect(await calibration.exit).toBe(0)
    const fullMs = calibration.readyToExitMs
    const kills = killWindow(fullMs)

    let midway = 0
    let packagesChecked = 0
    for (let round = 0; round < LINK_ROUNDS; round++) {
      const root = freshDir('crash-link')
      const { job, packages } = linkJob(root)
      const first = await runChild('link-child.mjs', [job], kills.next())
      const marked = packages.filter((p) => fs.existsSync(path.join(p.targetDir, 'package.json')))
      const midWork = await first.exit === 'SIGKILL' && marked.length < packages.length
      kills.landed(midWork)
      if (midWork) midway++
      // The invariant: a package.json means the package is complete.
      for (const p of marked) expect(isComplete(p.targetDir, p.filesMap), p.targetDir).toBe(true)

      const second = await runChild('link-child.mjs', [job])
      expect(await second.exit).toBe(0)
      const counts = JSON.parse(second.stdout())
      expect(counts.packagesSkipped).toBe(marked.length)
      expect(counts.packagesImported).toBe(packages.length - marked.length)
      for (const p of packages) expect(isComplete(p.targetDir, p.filesMap), p.targetDir).toBe(true)
      for (let i = 0; i < packages.length; i++) {
        expect(fs.realpathSync(path.join(path.dirname(packages[i].targetDir), `dep${i}`))).toBe(fs.realpathSync(packages[(i + 1) % packages.length].targetDir))
      }
      packagesChecked += marked.length + packages.length
      void fs.promises.rm(root, { recursive: true, force: true })
    }
    expect(verifyStore(store.storeDir).problems).toEqual([])
    console.log(`linking: ${LINK_ROUNDS} kills (${midway} with the work unfinished; full run ${fullMs.toFixed(0)} ms), ${packagesChecked} package directories checked`)
    expect(midway).toBeGreaterThanOrEqual(LINK_ROUNDS / 2)
  }, long ? 1_800_000 : 300_000)
})
