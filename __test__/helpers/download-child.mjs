/**
 * One download of the plugin's in a process of its own, for its peak memory: `tarball <url>
 * <storeDir>` (`downloadToStore`) or `json <url>` (`registryJson`). Prints what it got (`null`:
 * nothing) and the process's peak RSS in bytes, as JSON.
 */
import { downloadToStore, registryJson } from '../../dist/plugin/registry-fetch.js'

const [mode, url, storeDir] = process.argv.slice(2)
const got = mode === 'tarball'
  ? await downloadToStore({ url, integrity: 'sha512-AAAA', storeDir, filesIndexFile: 'bomb' })
  : await registryJson(url, 'application/json')
console.log(JSON.stringify({ got: got ?? null, peakRss: process.resourceUsage().maxRSS * 1024 }))
