import { spawnSync } from 'node:child_process'
import path from 'node:path'
import { repoDir } from './pnpm-cli.js'

export interface ChildExtraction {
  ms: number
  /** The `filesMap` keys, or none when it failed (then `code` and `message`). */
  keys?: string[]
  code?: string
  message?: string
  /** Peak RSS of the whole child Node process, in KiB (`process.resourceUsage().maxRSS`). */
  maxRSS: number
}

/** `addFilesFromTarball` of the tarball at `tarball` in a Node process of its own, so that its peak RSS is this extraction's alone. */
export function extractInChild (tarball: string, storeDir: string, opts: Record<string, unknown> = {}): ChildExtraction {
  const script = `
    const cas = require(${JSON.stringify(path.join(repoDir, 'dist', 'api', 'index.js'))})
    const buffer = require('node:fs').readFileSync(${JSON.stringify(tarball)})
    const started = performance.now()
    const report = (r) => { cas.closeStores(); console.log(JSON.stringify({ ms: performance.now() - started, ...r, maxRSS: process.resourceUsage().maxRSS })) }
    cas.addFilesFromTarball({ buffer, storeDir: ${JSON.stringify(storeDir)}, filesIndexFile: 'k', ...${JSON.stringify(opts)} })
      .then((r) => report({ keys: [...r.filesMap.keys()] }), (e) => report({ code: e.code, message: e.message }))`
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', maxBuffer: 64 << 20 })
  if (child.stderr !== '') throw new Error(child.stderr)
  return JSON.parse(child.stdout)
}
