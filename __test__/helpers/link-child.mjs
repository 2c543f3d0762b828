/**
 * Child process of the crash-safety test: links the batch described by the JSON file in argv[2]
 * with `linkPackages`, prints the counts, exits 0. It says `ready` over IPC just before the work
 * starts; the parent SIGKILLs it at a random moment after that.
 */
import { readFileSync } from 'node:fs'
import * as cas from '../../dist/api/index.js'

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'))
process.send?.({ ready: true })
const result = await cas.linkPackages(job)
process.stdout.write(JSON.stringify(result.counts))
process.disconnect?.()
