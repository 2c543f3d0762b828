/**
 * A small, purpose-built reader of pnpm lockfile v9 (`pnpm-lock.yaml`): the `importers`,
 * `packages` and `snapshots` sections as pnpm writes them (block mappings, one entry per line,
 * flow mappings only for one-line values such as `resolution: {integrity: …}`), no general YAML.
 *
 * `layout(lockfile, projectDir)` turns it into what an isolated (`node-linker=isolated`) install
 * links, the way pnpm 11 lays it out:
 *   - per snapshot: `node_modules/.pnpm/<depPathToFilename(depPath)>/node_modules/<name>`,
 *     imported from the store row `<integrity>\t<name>@<version>`;
 *   - per snapshot: its dependencies and optional dependencies as symlinks next to it
 *     (`node_modules/.pnpm/<dir>/node_modules/<alias>` → the dependency's directory);
 *   - per importer: its direct dependencies as `node_modules/<alias>`;
 *   - hoisting (`hoist-pattern=*`): every package not reachable by a direct dependency's name
 *     is linked once into `node_modules/.pnpm/node_modules/<name>` (see `hoisted` below).
 * Bin links (`.bin`) are not part of it.
 *
 * Node >= 22; the naming rules come from this package's build (`dist/plugin/install/virtual-store.js`).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { depPathToFilename as toFilename, parseRegistryDepPath, refToDepPath } from '../dist/plugin/install/virtual-store.js'

/** pnpm's default `virtual-store-dir-max-length` on Linux and macOS. */
export const VIRTUAL_STORE_DIR_MAX_LENGTH = 120

/** Parses the sections `importers`, `packages`, `snapshots` of a v9 lockfile. */
export function readLockfile (file) {
  const text = readFileSync(file, 'utf8')
  const lines = text.split('\n')
  const version = /^lockfileVersion: '?([^'\n]+)'?/m.exec(text)?.[1]
  if (version !== '9.0') throw new Error(`${file}: lockfileVersion ${version}, expected 9.0`)
  const sections = { importers: {}, packages: {}, snapshots: {} }
  let section = null
  let entry = null // the object of the current indent-2 key
  let sub = null // the object/array of the current indent-4 key
  let field = null // the current indent-6 key inside importers
  for (const raw of lines) {
    if (raw.trim() === '' || raw.trimStart().startsWith('#')) continue
    const indent = raw.length - raw.trimStart().length
    const line = raw.trim()
    if (indent === 0) {
      const key = line.slice(0, line.indexOf(':'))
      section = key in sections ? sections[key] : null
      continue
    }
    if (section == null) continue
    if (indent === 2) {
      const { key } = splitKey(line)
      entry = {}
      section[key] = entry
      sub = null
      continue
    }
    if (indent === 4) {
      const { key, value } = splitKey(line)
      if (value === '') {
        sub = line.endsWith(':') ? {} : null
        entry[key] = sub
      } else {
        entry[key] = parseScalarOrFlow(value)
        sub = null
      }
      continue
    }
    if (sub == null) continue
    if (indent === 6) {
      if (line.startsWith('- ')) {
        // a list (transitivePeerDependencies): keep it as an object of items
        sub[unquote(line.slice(2))] = true
        continue
      }
      const { key, value } = splitKey(line)
      if (value === '') {
        field = {}
        sub[key] = field
      } else {
        sub[key] = parseScalarOrFlow(value)
      }
      continue
    }
    if (indent === 8 && field != null) {
      const { key, value } = splitKey(line)
      field[key] = parseScalarOrFlow(value)
    }
  }
  return sections
}

function splitKey (line) {
  let key
  let rest
  if (line[0] === "'" || line[0] === '"') {
    const q = line[0]
    let i = 1
    let out = ''
    for (; i < line.length; i++) {
      if (line[i] === q) {
        if (q === "'" && line[i + 1] === "'") { out += "'"; i++; continue }
        break
      }
      out += line[i]
    }
    key = out
    rest = line.slice(i + 1)
  } else {
    const colon = line.indexOf(': ') === -1 ? line.length - 1 : line.indexOf(': ')
    key = line.slice(0, colon)
    rest = line.slice(colon)
  }
  return { key, value: rest.replace(/^:\s*/, '').trim() }
}

function unquote (s) {
  s = s.trim()
  if (s.startsWith("'") && s.endsWith("'")) return s.slice(1, -1).replace(/''/g, "'")
  // YAML double-quoted: JSON's escapes plus a few of YAML's own (`\_` is a no-break space).
  if (s.startsWith('"') && s.endsWith('"')) return JSON.parse(s.replace(/\\_/g, '\u00a0'))
  return s
}

/** `{integrity: sha512-…, tarball: …}` → object; `[a, b]` → array; else a scalar string. */
function parseScalarOrFlow (value) {
  if (value.startsWith('{') && value.endsWith('}')) {
    const out = {}
    for (const part of value.slice(1, -1).split(/,\s*/)) {
      if (part.trim() === '') continue
      const { key, value: v } = splitKey(part.trim())
      out[key] = unquote(v)
    }
    return out
  }
  if (value.startsWith('[') && value.endsWith(']')) {
    return value.slice(1, -1).split(/,\s*/).filter((x) => x !== '').map(unquote)
  }
  return unquote(value)
}

/** `name@version(peers…)` → `{ name, version }` (registry dependency paths only). */
export function parseDepPath (depPath) {
  const parsed = parseRegistryDepPath(depPath)
  if (parsed == null) throw new Error(`not a registry dependency path: ${depPath}`)
  return parsed
}

/** pnpm 11's `depPathToFilename` (the plugin's copy in dist/plugin/install/virtual-store.js), 120 by default. */
export function depPathToFilename (depPath, maxLength = VIRTUAL_STORE_DIR_MAX_LENGTH) {
  return toFilename(depPath, maxLength)
}

/**
 * What to link for the lockfile's root importer into `projectDir`:
 * `{ packages: [{ depPath, name, version, targetDir, filesIndexFile, integrity }],
 *    symlinks: [{ name, modules, children: { alias: absDir } }] }` — the shape of
 * `linkPackages`'s `packages` and `symlinks`.
 */
export function layout (lockfile, projectDir, { projectName = 'project', hoist = true } = {}) {
  const nm = path.join(projectDir, 'node_modules')
  const vstore = path.join(nm, '.pnpm')
  const dirOf = (depPath) => {
    const { name } = parseDepPath(depPath)
    return path.join(vstore, depPathToFilename(depPath), 'node_modules', name)
  }
  const packages = []
  const symlinks = []
  for (const [depPath, snapshot] of Object.entries(lockfile.snapshots)) {
    const { name, version } = parseDepPath(depPath)
    const pkg = lockfile.packages[`${name}@${version}`]
    const integrity = pkg?.resolution?.integrity
    if (integrity == null) throw new Error(`no integrity for ${depPath}`)
    const modules = path.join(vstore, depPathToFilename(depPath), 'node_modules')
    const targetDir = path.join(modules, name)
    packages.push({ depPath, name, version, integrity, targetDir, filesIndexFile: `${integrity}\t${name}@${version}` })
    const children = {}
    for (const deps of [snapshot.dependencies, snapshot.optionalDependencies]) {
      for (const [alias, ref] of Object.entries(deps ?? {})) {
        if (ref.startsWith('link:')) continue
        children[alias] = dirOf(refToDepPath(alias, ref))
      }
    }
    symlinks.push({ name, modules, children })
  }
  const root = lockfile.importers['.'] ?? {}
  const direct = {}
  for (const group of ['dependencies', 'devDependencies', 'optionalDependencies']) {
    for (const [alias, spec] of Object.entries(root[group] ?? {})) {
      if (spec.version.startsWith('link:')) continue
      direct[alias] = dirOf(refToDepPath(alias, spec.version))
    }
  }
  symlinks.push({ name: projectName, modules: nm, children: direct })
  if (hoist) {
    // pnpm's default `hoist-pattern=*` (its `getHoistedDependencies`): the graph is walked from
    // the direct dependencies, each node labelled with the depth at which the walk first
    // reached it (the walk expands one node's whole subtree before its siblings', so a depth is
    // not always the shortest distance); nodes are then visited by depth, then code-unit order
    // of their dependency path, and each child alias not taken yet (case-insensitively; direct
    // dependencies' aliases are taken) is linked into node_modules/.pnpm/node_modules.
    const childrenOf = (depPath) => {
      const snapshot = lockfile.snapshots[depPath] ?? {}
      return Object.entries({ ...snapshot.dependencies, ...snapshot.optionalDependencies })
        .map(([alias, ref]) => [alias, refToDepPath(alias, ref)])
    }
    const walked = new Set()
    const step = (depPaths) => {
      const deps = []
      for (const depPath of depPaths) {
        if (walked.has(depPath)) continue
        walked.add(depPath)
        if (lockfile.snapshots[depPath] == null) continue
        deps.push({ depPath, next: () => step(childrenOf(depPath).map(([, d]) => d)) })
      }
      return deps
    }
    const nodesOf = (depth, deps) => {
      const nodes = deps.map(({ depPath }) => ({ depth, depPath }))
      const nextSteps = deps.map((d) => d.next())
      return [...nodes, ...nextSteps.flatMap((s) => nodesOf(depth + 1, s))]
    }
    const directDepPaths = Object.values(root).flatMap((group) =>
      Object.entries(group ?? {}).map(([alias, spec]) => refToDepPath(alias, spec.version)))
    const nodes = nodesOf(0, step(directDepPaths))
      .sort((a, b) => a.depth - b.depth || (a.depPath < b.depPath ? -1 : a.depPath > b.depPath ? 1 : 0))
    const hoisted = {}
    const taken = new Set(Object.keys(direct).map((a) => a.toLowerCase()))
    for (const { depPath } of nodes) {
      for (const [alias, child] of childrenOf(depPath)) {
        if (taken.has(alias.toLowerCase())) continue
        taken.add(alias.toLowerCase())
        hoisted[alias] = dirOf(child)
      }
    }
    symlinks.push({ name: '', modules: path.join(vstore, 'node_modules'), children: hoisted })
  }
  return { packages, symlinks }
}
