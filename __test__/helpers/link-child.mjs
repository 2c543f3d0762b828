/**
 * Child process of the interruption test: links the batch described by the JSON file in argv[2]
 * with `linkPackages`, prints the counts, exits 0. The parent SIGKILLs it midway.
 */
import { readFileSync } from 'node:fs'
import * as cas from '../../dist/index.js'

const job = JSON.parse(readFileSync(process.argv[2], 'utf8'))
const result = await cas.linkPackages(job)
process.stdout.write(JSON.stringify(result.counts))
