// Part of `npm version` (the `version` script, after `napi version` moved the platform packages):
// @cas/pnpm-worker (npm/pnpm-worker) takes @cas/native's new version and depends on exactly it,
// so an override `npm:@cas/pnpm-worker@<version>` always brings that @cas/native.
import { readFileSync, writeFileSync } from 'node:fs'

const repo = new URL('..', import.meta.url)
const root = JSON.parse(readFileSync(new URL('package.json', repo), 'utf8'))
const aliasFile = new URL('npm/pnpm-worker/package.json', repo)
const alias = JSON.parse(readFileSync(aliasFile, 'utf8'))
alias.version = root.version
alias.dependencies[root.name] = root.version
writeFileSync(aliasFile, `${JSON.stringify(alias, null, 2)}\n`)
console.log(`${alias.name}@${alias.version} -> ${root.name}@${root.version}`)
