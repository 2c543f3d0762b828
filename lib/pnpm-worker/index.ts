/**
 * `@cas/native/pnpm-worker`: load this file as a `worker_threads` script (pnpm 11's CLI does,
 * once `cas-native-pnpm swap` replaced its `dist/worker.js` with a shim) and it answers pnpm's
 * worker messages with `@cas/native`. The protocol lives in protocol.ts.
 */
import { startPnpmWorker } from './protocol.js'

startPnpmWorker()
