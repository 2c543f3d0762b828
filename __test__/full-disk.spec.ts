/**
 * A full disk: a store on a 2 MiB tmpfs fills up halfway through a package. The extraction fails
 * with ENOSPC, that package gets no index row, the store still verifies (no truncated blob under
 * a real name), and once there is room again the same tarball extracts.
 *
 * The tmpfs is mounted in a private mount namespace (`unshare`), so nothing outlives the child:
 * as root, or as a user where unprivileged user namespaces are allowed.
 */
import { execFileSync } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { extractionTarballs, writeJob } from './helpers/processes.js'
import { freshDir } from './helpers/stores.js'

describe('a store on a full disk', () => {
  it('fails with ENOSPC, writes no row for the package, stays verifiable, and recovers', () => {
    const tarballs = extractionTarballs(20)
    // The generated packages first: each needs ~0.5 MiB, so the 2 MiB tmpfs fills in the 3rd-4th.
    const job = writeJob([...tarballs.slice(-20), ...tarballs.slice(0, -20)], 'full-disk')
    const mountDir = freshDir('full-disk')
    const child = path.join(import.meta.dirname, 'helpers/full-disk-child.mjs')
    const script = 'mount -t tmpfs -o size=2m tmpfs "$1" && exec "$2" --no-warnings "$3" "$1" "$4"'
    const out = execFileSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script, 'sh', mountDir, process.execPath, child, job], { encoding: 'utf8' })
    const report = JSON.parse(out)
    console.log(`full disk: ${report.extracted} packages fitted, then ${report.failure?.code} (${report.failure?.message}); ${report.afterFailure.blobs} blobs and ${report.afterFailure.rows} rows verified after the failure`)

    expect(report.extracted).toBeGreaterThan(0)
    expect(report.failure).toMatchObject({ code: 'ERR_PNPM_ENOSPC', rowAfterFailure: false })
    expect(report.failure.message).toMatch(/ENOSPC: no space left on device/)
    expect(report.afterFailure.problems).toEqual([])
    expect(report.afterFailure.rows).toBe(report.extracted)
    expect(report.retried).toEqual({ rowAfterRetry: true })
    expect(report.afterRetry.problems).toEqual([])
    expect(report.afterRetry.rows).toBe(report.extracted + 1)
  })
})
