/** A worker_threads script spoken to as pnpm 11's CLI speaks to its `dist/worker/index.js`. */
import { Worker } from 'node:worker_threads'

/** One worker thread, one request at a time (as pnpm's pool uses it). */
export class ProtocolWorker {
  readonly worker: Worker
  constructor (script: string) {
    this.worker = new Worker(script)
  }

  request (message: unknown): Promise<any> {
    return new Promise((resolve, reject) => {
      this.worker.once('error', reject)
      this.worker.once('message', (reply) => {
        this.worker.off('error', reject)
        resolve(reply)
      })
      this.worker.postMessage(message)
    })
  }

  stop (): Promise<number> {
    return new Promise((resolve) => {
      this.worker.once('exit', resolve)
      this.worker.postMessage(false)
    })
  }
}
