#!/usr/bin/env node
/**
 * `cas-native-pnpm swap <pnpm package dir>` / `cas-native-pnpm restore <pnpm package dir>`:
 * make an installed pnpm 11 CLI do its worker-thread work with `@cas/native`, and undo it.
 * `cas-native-pnpm explain [<dir>]`: whether the plugin would install the project natively
 * (`plugin/explain-cli.ts`, loaded only for it).
 */
import { SUPPORTED_PNPM_VERSIONS, SwapError, restorePnpmWorker, swapPnpmWorker } from './swap.js'

const USAGE = `Usage:
  cas-native-pnpm swap <pnpm package dir>     replace pnpm's dist/worker.js with a shim loading @cas/native/pnpm-worker
  cas-native-pnpm restore <pnpm package dir>  put pnpm's own dist/worker.js back
  cas-native-pnpm explain [<project dir>]     whether the pnpm plugin would install the project natively, and why not

<pnpm package dir> is the installed "pnpm" package, e.g. "$(npm root -g)/pnpm" or node_modules/pnpm.
Supported pnpm versions: ${SUPPORTED_PNPM_VERSIONS}.`

function main (argv: string[]): number {
  const [command, dir] = argv
  if ((command !== 'swap' && command !== 'restore') || dir == null || argv.length !== 2) {
    console.error(USAGE)
    return command === '--help' || command === '-h' ? 0 : 2
  }
  try {
    const result = command === 'swap' ? swapPnpmWorker(dir) : restorePnpmWorker(dir)
    const messages = {
      swapped: `pnpm ${result.pnpmVersion}: ${result.workerPath} now loads @cas/native/pnpm-worker (original kept as ${result.backupPath})`,
      'already-swapped': `pnpm ${result.pnpmVersion}: already swapped; shim refreshed (${result.workerPath})`,
      restored: `pnpm ${result.pnpmVersion}: pnpm's own worker restored (${result.workerPath})`,
      'not-swapped': `pnpm ${result.pnpmVersion}: not swapped, nothing to restore (${result.workerPath})`,
    }
    console.log(messages[result.action])
    return 0
  } catch (err) {
    if (err instanceof SwapError) {
      console.error(`cas-native-pnpm: ${err.message}`)
      return 1
    }
    throw err
  }
}

if (process.argv[2] === 'explain') {
  void (require('../plugin/explain-cli.js') as typeof import('../plugin/explain-cli.js')).explainMain(process.argv.slice(3)).then((code) => { process.exitCode = code })
} else {
  process.exitCode = main(process.argv.slice(2))
}
