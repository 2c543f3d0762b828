/**
 * Swapping pnpm's worker: `dist/worker.js` of an installed `pnpm` package is replaced by a small
 * shim that loads `@cas/native/pnpm-worker`, the original kept next to it as a backup.
 * Idempotent both ways; refuses pnpm versions whose worker protocol was not checked. The shim
 * outlives the `@cas/native` that wrote it: once that is gone, the shim puts pnpm's own worker
 * back (saying so once) and runs it, so pnpm keeps working.
 */
import fs from 'node:fs'
import path from 'node:path'

/** pnpm versions whose `dist/worker.js` protocol protocol.ts speaks (read from 11.28.11). */
export const SUPPORTED_PNPM_VERSIONS = '11.28.x'
const SUPPORTED = /^11\.28\.\d+$/

const SHIM_MARKER = '// @cas/native pnpm-worker shim'
/** A `.js` name: the shim's fallback imports it, and Node's ESM loader refuses unknown extensions. */
export const BACKUP_NAME = 'worker.cas-native-backup.js'

export interface SwapResult {
  /** What happened: `swapped`, `already-swapped`, `restored`, `not-swapped`. */
  action: 'swapped' | 'already-swapped' | 'restored' | 'not-swapped'
  pnpmVersion: string
  workerPath: string
  backupPath: string
}

export class SwapError extends Error {
  readonly code: string
  constructor (code: string, message: string) {
    super(message)
    this.code = code
  }
}

function inspect (pnpmDir: string): { version: string, workerPath: string, backupPath: string } {
  const manifestPath = path.join(pnpmDir, 'package.json')
  let manifest: { name?: string, version?: string }
  try {
    manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
  } catch (err) {
    throw new SwapError('ERR_CAS_NATIVE_NOT_PNPM', `${pnpmDir} is not a pnpm package directory (cannot read ${manifestPath}: ${(err as Error).message})`)
  }
  if (manifest.name !== 'pnpm') {
    throw new SwapError('ERR_CAS_NATIVE_NOT_PNPM', `${pnpmDir} holds the package "${manifest.name}", not "pnpm"`)
  }
  const workerPath = path.join(pnpmDir, 'dist', 'worker.js')
  if (!fs.existsSync(workerPath)) {
    throw new SwapError('ERR_CAS_NATIVE_NOT_PNPM', `${pnpmDir} has no dist/worker.js: not a pnpm 11 package`)
  }
  return { version: manifest.version ?? '', workerPath, backupPath: path.join(pnpmDir, 'dist', BACKUP_NAME) }
}

function isShim (file: string): boolean {
  try {
    return fs.readFileSync(file, 'utf8').startsWith(SHIM_MARKER)
  } catch {
    return false
  }
}

/**
 * The shim. pnpm's package is ESM ("type": "module"), so the shim is too, and it must not need
 * anything of `@cas/native` but `target`. Without `target` (that `@cas/native` was removed),
 * every worker pnpm starts renames the backup over the shim: one succeeds and says so, and all
 * load pnpm's worker from `worker.js` again (under a query, so not the shim's cached module). Where
 * the rename is not allowed, each runs the backup and says how to put it back.
 */
function shimSource (target: string): string {
  return `${SHIM_MARKER} (written by \`cas-native-pnpm swap\`; \`cas-native-pnpm restore\` puts back ${BACKUP_NAME})
import fs from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const target = ${JSON.stringify(target)}
if (fs.existsSync(target)) {
  createRequire(import.meta.url)(target)
} else {
  const self = new URL(import.meta.url)
  const backup = new URL('./${BACKUP_NAME}', self)
  const gone = \`@cas/native: \${target} is gone (the @cas/native that swapped pnpm's worker was removed)\`
  let original = new URL('?cas-native-restored', self)
  try {
    fs.renameSync(backup, self)
    console.warn(\`\${gone}, so pnpm's own worker is back in place: \${fileURLToPath(self)}\`)
  } catch (err) {
    if (err.code !== 'ENOENT') {
      original = backup
      console.warn(\`\${gone}; pnpm runs its own worker, but could not put it back (\${err.code}): run "npx -p @cas/native cas-native-pnpm restore \${fileURLToPath(new URL('..', self))}" or reinstall pnpm\`)
    } else if (fs.readFileSync(self, 'utf8').startsWith(${JSON.stringify(SHIM_MARKER)})) {
      throw new Error(\`\${gone}, and pnpm's own worker (\${fileURLToPath(backup)}) is missing too: reinstall pnpm\`)
    }
  }
  await import(original.href)
}
`
}

/** The worker script the shim loads: this package's own `dist/pnpm-worker.js`. */
export function pnpmWorkerScript (): string {
  return path.join(__dirname, 'index.js')
}

/** A worker that cannot load the addon would fail every install: refuse to swap then. */
function checkBinding (): void {
  try {
    require('../api/binding.js')
  } catch (err) {
    const e = err as { code?: string, message: string }
    throw new SwapError(e.code ?? 'ERR_CAS_NATIVE_BINDING_NOT_FOUND', `${e.message}\nThe swapped worker would fail the same way: nothing was changed.`)
  }
}

/** Makes the pnpm install in `pnpmDir` run `@cas/native/pnpm-worker` as its worker. */
export function swapPnpmWorker (pnpmDir: string): SwapResult {
  const { version, workerPath, backupPath } = inspect(pnpmDir)
  if (!SUPPORTED.test(version)) {
    throw new SwapError('ERR_CAS_NATIVE_UNSUPPORTED_PNPM',
      `pnpm ${version} at ${pnpmDir} is not supported: @cas/native speaks the worker protocol of pnpm ${SUPPORTED_PNPM_VERSIONS} only, ` +
      'and a worker that misreads a message would hang or break installs. Nothing was changed.')
  }
  checkBinding()
  const already = isShim(workerPath)
  if (!already) {
    // The original goes aside first; a second swap never overwrites it with a shim.
    if (!fs.existsSync(backupPath)) fs.copyFileSync(workerPath, backupPath)
  } else if (!fs.existsSync(backupPath)) {
    throw new SwapError('ERR_CAS_NATIVE_NO_BACKUP', `${workerPath} is a @cas/native shim but ${backupPath} is missing: reinstall pnpm to get its worker back`)
  }
  const tmp = `${workerPath}.cas-native-tmp`
  fs.writeFileSync(tmp, shimSource(pnpmWorkerScript()))
  fs.renameSync(tmp, workerPath)
  return { action: already ? 'already-swapped' : 'swapped', pnpmVersion: version, workerPath, backupPath }
}

/** Puts pnpm's own worker back (no version check, so any swapped install can be undone). */
export function restorePnpmWorker (pnpmDir: string): SwapResult {
  const { version, workerPath, backupPath } = inspect(pnpmDir)
  if (!isShim(workerPath)) {
    return { action: 'not-swapped', pnpmVersion: version, workerPath, backupPath }
  }
  if (!fs.existsSync(backupPath)) {
    throw new SwapError('ERR_CAS_NATIVE_NO_BACKUP', `${backupPath} is missing: reinstall pnpm to get its worker back`)
  }
  fs.renameSync(backupPath, workerPath)
  return { action: 'restored', pnpmVersion: version, workerPath, backupPath }
}
