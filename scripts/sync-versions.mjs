// Part of `npm version` (the `version` script, after `napi version` moved the platform packages):
// the other packages built from npm/ take @cas/native's new version, so that all of them are
// published in lockstep.
// - @cas/pnpm-worker (npm/pnpm-worker) also depends on exactly that @cas/native, so an override
//   `npm:@cas/pnpm-worker@<version>` always brings it;
// - @cas/pnpm-plugin-native (npm/pnpm-plugin-native) gets its exact optionalDependencies on the
//   platform packages when scripts/pack-plugin.mjs packs it, which checks this version.
import { readFileSync, writeFileSync } from 'node:fs'

const repo = new URL('..', import.meta.url)
const root = JSON.parse(readFileSync(new URL('package.json', repo), 'utf8'))
for (const dir of ['pnpm-worker', 'pnpm-plugin-native']) {
  const file = new URL(`npm/${dir}/package.json`, repo)
  const pkg = JSON.parse(readFileSync(file, 'utf8'))
  pkg.version = root.version
  if (pkg.dependencies?.[root.name] != null) pkg.dependencies[root.name] = root.version
  writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`)
  console.log(`${pkg.name}@${pkg.version}`)
}
