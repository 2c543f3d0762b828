/**
 * What a user sees of the native install, with the real pnpm 11 CLI and the plugin as users get
 * it (packed, served by a registry stand-in, added with `pnpm add --config`): the output of a
 * fresh clone's `pnpm install --frozen-lockfile` with each `--reporter` (and in a real terminal,
 * through script(1)), against stock pnpm's output for the same clone (the plugin switched off by
 * its environment); the progress line while a slow registry's tarballs download; the line for an
 * install left to pnpm; the explain command on the project.
 *
 * The lines are stock's, in stock's order, but for ours: the plugin's line, then pnpm's `Already
 * up to date` (its up-to-date check ends the run). pnpm's lockfile check (`? Verifying lockfile
 * against supply-chain policies…`, `✓ Lockfile passes…`) is the native install's, with its own
 * time; with the registry asked, stock's check ends while it imports, at a line that varies from
 * run to run (`withCheckEnd` compares it apart).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PLUGIN_NAME } from '../dist/plugin/config-dependency.js'
import { explainMain } from '../dist/plugin/explain-cli.js'
import { PNPM_RELEASES } from '../dist/plugin/install/pnpm-releases.js'
import { copyProject, lockedPackages, pnpmNode, pnpmEnv, pnpmLauncher, pnpmPackageDir, runPnpm, testedPnpmVersion, type PnpmRun } from './helpers/pnpm-cli.js'
import { packedPackage, packPlugin, serveTarballs, type TarballRegistry } from './helpers/registry.js'
import { freshDir } from './helpers/stores.js'
import { screen } from './helpers/terminal.js'

/** The plugin does nothing: stock pnpm with the same pnpmfile and lockfile. */
const STOCK = { CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_PRELINK: '0', CAS_NATIVE_PNPMFILE_FETCHER: '0' }
/** pnpm's lines about its install from the lockfile, which its own install says when it runs (after the plugin's line, where pnpm runs the project's scripts). */
const PNPM_INSTALL_ONLY = [/Verifying lockfile against supply-chain policies/, /Lockfile passes supply-chain policies/, /^Lockfile is up to date, resolution step is skipped$/]
/** The line that ends pnpm's lockfile check, once times are replaced (`install`). */
const CHECK_END = /^✓ Lockfile passes supply-chain policies \(\d+ entries in <t>\)$/
/** The durations in pnpm's lines about its lockfile check. */
const TIMES = / in \d+(\.\d+)?m?s\)$/
const AGO = /\(verified [\d.]+m?s ago\)$/

/**
 * `lines` with the line that ends pnpm's lockfile check taken out (where stock's comes varies:
 * its check asks the registry while it imports), and that line.
 */
function withCheckEnd (lines: string[]): { lines: string[], checkEnd: string[] } {
  return { lines: lines.filter((l) => !CHECK_END.test(l)), checkEnd: lines.filter((l) => CHECK_END.test(l)) }
}
const OURS = `${PLUGIN_NAME} installed 9 packages natively in <t>; pnpm then finds node_modules complete, hence "Already up to date"`
/** The release under test, as the plugin's table has it (what it writes differs by release). */
const TESTED = PNPM_RELEASES.find((r) => r.version === testedPnpmVersion) ?? PNPM_RELEASES.at(-1)!

function expectOk (run: PnpmRun): void {
  expect(run.code, `pnpm failed:\n${run.stdout}\n${run.stderr}`).toBe(0)
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g

/**
 * A default reporter's screen with the plugin's line whole: under a release whose reporter
 * redraws by newlines (`reporterRedraw`), the plugin breaks it into rows of pnpm's width
 * (`columns` less 2, else 80), each checked to fit; they end where pnpm's next line starts.
 */
/** pnpm's ndjson records, without what differs from run to run (time, host, process). */
function ndjsonRecords (lines: string[]): Array<Record<string, unknown>> {
  return lines.filter((l) => l !== '').map((l) => {
    const { time, hostname, pid, ...record } = JSON.parse(l)
    return record
  })
}

/** The records called `name`, each as a string with its keys sorted at every depth, in a sorted list. */
function ndjsonNamed (records: Array<Record<string, unknown>>, name: string): string[] {
  const sortedKeys = (value: unknown): unknown => value == null || typeof value !== 'object' || Array.isArray(value)
    ? value
    : Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortedKeys((value as Record<string, unknown>)[k])]))
  return records.filter((r) => r.name === name).map((r) => JSON.stringify(sortedKeys(r))).sort()
}

function withOursWhole (lines: string[], columns?: number): string[] {
  const start = lines.findIndex((l) => l.startsWith(`${PLUGIN_NAME} installed`))
  if (TESTED.reporterRedraw !== 'newlines' || start === -1) return lines
  const end = lines.findIndex((l, i) => i > start && /^(Already up to date|\? Verifying|\. )/.test(l))
  const rows = lines.slice(start, end)
  for (const row of rows) expect(row.length, row).toBeLessThanOrEqual(columns != null ? columns - 2 : 80)
  return [...lines.slice(0, start), rows.join(' '), ...lines.slice(end)]
}

describe('what pnpm prints after a native install, with each reporter, against stock', () => {
  let base: string
  let registry: TarballRegistry
  let served: Parameters<typeof serveTarballs>[0]
  let setUpDir: string
  let store: string
  let n = 0

  beforeAll(async () => {
    base = freshDir('pnpm-report')
    served = [...packPlugin(path.join(base, 'packed')), ...lockedPackages().map((p) => packedPackage(p.tarball))]
    registry = await serveTarballs(served)
    setUpDir = copyProject(path.join(base, 'setup'))
    store = path.join(base, 'store')
    const opts = { projectDir: setUpDir, storeDir: store, sandbox: path.join(base, 'setup-sandbox'), registry: registry.url }
    expectOk(await runPnpm(['add', '--config', PLUGIN_NAME], opts))
    expectOk(await runPnpm(['install'], opts))
  })

  afterAll(async () => {
    await registry?.close()
  })

  /** A fresh clone of the set-up project, installed; its output's lines with paths and times replaced. */
  /** `sandbox`: the home (and pnpm's cache) to install with, else one of its own. */
  async function install (opts: { stock?: boolean, reporter?: string, cold?: boolean, args?: string[], edit?: (dir: string) => void, from?: TarballRegistry, setUp?: string, sandbox?: string, project?: string }): Promise<{ run: PnpmRun, lines: string[], dir: string }> {
    const dir = path.join(base, `clone-${n++}`)
    fs.mkdirSync(dir)
    // A fresh clone: the set-up project's files but its node_modules.
    fs.cpSync(opts.setUp ?? setUpDir, dir, { recursive: true, filter: (src) => path.basename(src) !== 'node_modules' })
    opts.edit?.(dir)
    const storeDir = opts.cold === true ? path.join(base, `store-${n}`) : store
    const run = await runPnpm(['install', '--frozen-lockfile', ...(opts.args ?? [])], {
      projectDir: path.join(dir, opts.project ?? ''), storeDir, sandbox: opts.sandbox ?? path.join(base, `sandbox-${n}`), registry: (opts.from ?? registry).url, reporter: opts.reporter, env: opts.stock === true ? STOCK : {},
    })
    // The default reporter redraws in place: what the screen shows at the end.
    const lines = (opts.reporter === 'default' ? withOursWhole(screen(run.stdout)) : run.stdout.replace(ANSI, '').split('\n'))
      .map((l) => l.split(dir).join('<project>').split(storeDir).join('<store>').replace(/(Done|natively) in [\d.]+m?s/, '$1 in <t>').replace(TIMES, ' in <t>)').replace(AGO, '(verified <t> ago)'))
    return { run, lines, dir }
  }

  /** Stock's lines as the native install's output has them: ours before pnpm's closing line. */
  function asNative (stock: string[]): string[] {
    const lines = [...stock]
    const done = lines.findIndex((l) => l.startsWith('Done in '))
    lines.splice(done, 0, OURS, 'Already up to date')
    return lines
  }

  /** `native`'s lines are `expected` (from stock's), but for where the lockfile check's end comes (`withCheckEnd`), which is stock's line too. */
  function expectLines (native: string[], stock: string[], expected: (stock: string[]) => string[] = asNative): void {
    const ours = withCheckEnd(native)
    const theirs = withCheckEnd(stock)
    expect(ours.lines).toEqual(expected(theirs.lines))
    expect(ours.checkEnd).toEqual(theirs.checkEnd)
  }

  for (const reporter of ['append-only', 'default']) {
    it(`--reporter=${reporter}, warm store: stock's lines in stock's order (Packages: +9, the store, the progress, the dependencies), the plugin's line and pnpm's "Already up to date" instead of pnpm's own install messages`, async () => {
      const stock = await install({ stock: true, reporter })
      const native = await install({ reporter })
      expectOk(stock.run)
      expectOk(native.run)
      expect(stock.lines).toContain('Packages: +9')
      expect(stock.lines).toContain('dependencies:')
      // The default reporter keeps the check's line where it started: stock's place, whenever it ends.
      if (reporter === 'default') expect(native.lines).toEqual(asNative(stock.lines))
      else expectLines(native.lines, stock.lines)
      expect(native.run.stderr).toBe(stock.run.stderr)
    })
  }

  for (const reporter of ['append-only', 'default']) {
    it(`--reporter=${reporter}, a project whose engines.node this Node does not meet: pnpm's warning where stock's comes, before the install's lines (pnpm checks the projects after the hook; the native install's records wait for pnpm's scope) (user try: vuejs/create-vue, pmndrs/zustand under Node 24.9)`, async () => {
      const edit = (dir: string): void => {
        const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
        fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, engines: { node: '>=99' } }))
      }
      const stock = await install({ stock: true, reporter, edit })
      const native = await install({ reporter, edit })
      expectOk(stock.run)
      expectOk(native.run)
      expect(stock.lines.filter((l) => l.includes('Unsupported engine')).length).toBeGreaterThan(0)
      // A release whose default reporter redraws by newlines leaves the lines above pnpm's
      // (wider than the terminal) warning on the screen once more at each redraw, stock's too:
      // how often, as the frames come.
      const once = (lines: string[]): string[] => TESTED.reporterRedraw === 'newlines' ? lines.filter((l, i) => l !== lines[i - 1]) : lines
      if (reporter === 'default') expect(once(native.lines)).toEqual(once(asNative(stock.lines)))
      else expectLines(native.lines, stock.lines)
    })
  }

  it('--reporter=append-only, a clone of a lockfile pnpm checked before on this machine: pnpm\'s record of that check taken (`✓ Lockfile passes supply-chain policies (verified <t> ago)`), as stock takes it', async () => {
    const sandbox = path.join(base, 'sandbox-checked-before')
    expectOk((await install({ stock: true, sandbox })).run)
    const stock = await install({ stock: true, sandbox })
    const native = await install({ sandbox })
    expectOk(native.run)
    expect(stock.lines).toContain('✓ Lockfile passes supply-chain policies (verified <t> ago)')
    expect(native.lines).toEqual(asNative(stock.lines))
  })

  it('--reporter=append-only, cold store: the same, the progress counting what was downloaded as stock\'s does', async () => {
    const stock = await install({ stock: true, cold: true })
    const native = await install({ cold: true })
    expectOk(stock.run)
    expectOk(native.run)
    const progress = (lines: string[]): string[] => lines.filter((l) => l.startsWith('Progress: '))
    expect(progress(native.lines).at(-1)).toMatch(/^Progress: resolved 9, reused 0, downloaded \d+, added 9, done$/)
    expect(progress(native.lines)).toEqual(progress(stock.lines))
    expectLines(native.lines, stock.lines)
  })

  it('--reporter=append-only, cold store, a slow registry: pnpm\'s progress line while the native install downloads (before pnpm prints anything: its reporter is not running yet), then the same output', async () => {
    // Every tarball answered 1.5 s late: the downloads outlast the line's first interval (1 s).
    const slow = await serveTarballs(served, { tarballDelayMs: 1500 })
    try {
      const stock = await install({ stock: true, cold: true })
      const native = await install({ cold: true, from: slow })
      expectOk(native.run)
      const live = native.lines.slice(0, native.lines.indexOf('Installing config dependencies...'))
      expect(live.length).toBeGreaterThan(0)
      for (const line of live) expect(line).toMatch(/^Progress: resolved 9, reused 0, downloaded \d, added [09]$/)
      expectLines(native.lines.slice(live.length), stock.lines)
    } finally {
      await slow.close()
    }
  })

  /**
   * A fresh clone installed with stdout a terminal (util-linux `script`, 120 columns), pnpm's
   * reporter its own choice: the bytes written, and the screen they leave.
   */
  async function installInTerminal (opts: { stock?: boolean, from: TarballRegistry }): Promise<{ raw: string, lines: string[] }> {
    const dir = path.join(base, `clone-${n++}`)
    fs.mkdirSync(dir)
    for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) fs.copyFileSync(path.join(setUpDir, f), path.join(dir, f))
    const storeDir = path.join(base, `store-${n}`)
    const pnpm = [pnpmNode, path.join(pnpmPackageDir, 'bin', 'pnpm.mjs'), 'install', '--frozen-lockfile', `--store-dir=${storeDir}`,
      `--cache-dir=${path.join(base, `cache-${n}`)}`, `--config.registry=${opts.from.url}`, '--config.update-notifier=false']
    const command = `stty cols 120 rows 60; exec ${pnpm.map((a) => `'${a}'`).join(' ')}`
    const env = pnpmEnv(path.join(base, `sandbox-${n}`), { TERM: 'xterm', ...(opts.stock === true ? STOCK : {}) })
    const raw = await new Promise<string>((resolve, reject) => {
      const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      child.stdout.on('data', (d) => { out += d })
      child.on('error', reject)
      child.on('close', (code) => code === 0 ? resolve(out) : reject(new Error(`pnpm in a terminal exited with ${code}:\n${out}`)))
    })
    const lines = withOursWhole(screen(raw, 120), 120).map((l) => l.split(dir).join('<project>').split(storeDir).join('<store>')
      .replace(/(Done|natively) in [\d.]+m?s/, '$1 in <t>').replace(TIMES, ' in <t>)'))
    return { raw, lines }
  }

  it.runIf(process.platform === 'linux')('a terminal, cold store, a slow registry: pnpm\'s progress line redrawn in place while the native install downloads, erased, then stock\'s screen but for the plugin\'s lines', async () => {
    const slow = await serveTarballs(served, { tarballDelayMs: 1500 })
    try {
      const stock = await installInTerminal({ stock: true, from: registry })
      const native = await installInTerminal({ from: slow })
      // Colored as pnpm colors its values on a terminal.
      // eslint-disable-next-line no-control-regex
      expect(native.raw).toMatch(/^\rProgress: resolved \u001b\[96m9\u001b\[39m, reused \u001b\[96m0\u001b\[39m, downloaded \u001b\[96m\d\u001b\[39m, added \u001b\[96m[09]\u001b\[39m\u001b\[K/)
      expect(native.lines).toEqual(asNative(stock.lines))
    } finally {
      await slow.close()
    }
  })

  it.each([
    ['a warm store', false],
    ['a cold store', true],
  ])('--reporter=ndjson, %s: the plugin\'s records are pnpm\'s own (the same names and fields as stock\'s records), on stdout with pnpm\'s', async (_, cold) => {
    const stock = await install({ stock: true, reporter: 'ndjson', cold })
    const native = await install({ reporter: 'ndjson', cold })
    expectOk(stock.run)
    expectOk(native.run)
    const ours = ndjsonRecords(native.lines)
    const theirs = ndjsonRecords(stock.lines)
    const named = ndjsonNamed
    // Exactly stock's: where the store is, what was added, the direct dependencies, the progress
    // of each package (found in the store or downloaded, then imported).
    expect(named(theirs, 'pnpm:progress').some((r) => r.includes(cold ? '"fetched"' : '"found_in_store"'))).toBe(true)
    for (const name of ['pnpm:context', 'pnpm:stats', 'pnpm:root', 'pnpm:summary', 'pnpm:package-manifest', 'pnpm:stage', 'pnpm:progress']) {
      expect(named(ours, name), name).toEqual(named(theirs, name))
    }
    expect(ours.filter((r) => r.name === 'pnpm:global').map((r) => r.message)).toEqual([OURS, 'Already up to date'])
    // pnpm's lockfile check, in its order, but for its duration; pnpm's line that it installs from the lockfile.
    const verification = (list: typeof ours): unknown[] => list.filter((r) => r.name === 'pnpm:lockfile-verification').map(({ elapsedMs, ...r }) => r)
    expect(verification(ours).length).toBeGreaterThan(0)
    expect(verification(ours)).toEqual(verification(theirs))
    const fromLockfile = (list: typeof ours): unknown[] => list.filter((r) => r.name === 'pnpm' && r.level === 'info')
    expect(fromLockfile(ours)).toEqual(fromLockfile(theirs))
  })

  it('--reporter=silent: nothing at all, as stock', async () => {
    const stock = await install({ stock: true, reporter: 'silent' })
    const native = await install({ reporter: 'silent' })
    expectOk(native.run)
    expect(fs.existsSync(path.join(native.dir, 'node_modules', '.modules.yaml'))).toBe(true)
    expect([native.run.stdout, native.run.stderr]).toEqual(['', ''])
    expect([stock.run.stdout, stock.run.stderr]).toEqual(['', ''])
  })

  it('an install left to pnpm: stock\'s output, and one line after the config dependencies\' saying why and what would change it', async () => {
    const args = ['--config.node-linker=hoisted']
    const stock = await install({ stock: true, args })
    const native = await install({ args })
    expectOk(native.run)
    const line = `${PLUGIN_NAME} left this install to pnpm: nodeLinker is hoisted; the native install lays out pnpm's isolated node_modules only. To install natively: use nodeLinker: isolated (the default)`
    const expected = [...stock.lines]
    expected.splice(stock.lines.indexOf(`Installed config dependencies: ${PLUGIN_NAME}@0.1.0`) + 1, 0, line)
    expect(native.lines).toEqual(expected)
  })

  it('a lockfile whose pnpmfileChecksum does not match (the plugin added without the second `pnpm install`): pnpm refuses it as stock, after the plugin\'s line saying to run `pnpm install` once and commit the lockfile', async () => {
    const edit = (dir: string): void => {
      const lockfile = path.join(dir, 'pnpm-lock.yaml')
      fs.writeFileSync(lockfile, fs.readFileSync(lockfile, 'utf8').replace(/\npnpmfileChecksum: \S+\n/, '\n'))
    }
    const stock = await install({ stock: true, edit })
    const native = await install({ edit })
    expect(stock.run.code).not.toBe(0)
    expect(native.run.code).toBe(stock.run.code)
    expect(stock.run.stdout).toContain('ERR_PNPM_LOCKFILE_CONFIG_MISMATCH')
    const ours = native.lines.filter((l) => !stock.lines.includes(l))
    expect(ours).toEqual([`${PLUGIN_NAME} left this install to pnpm: the lockfile's pnpmfileChecksum does not match the pnpmfiles loaded now (the plugin was added or updated without a \`pnpm install\`). To install natively: run \`pnpm install\` once and commit pnpm-lock.yaml; until then pnpm refuses --frozen-lockfile (ERR_PNPM_LOCKFILE_CONFIG_MISMATCH)`])
  })

  /** The clone's package.json with a postinstall (one that leaves a file). */
  const withPostinstall = (dir: string, postinstall = 'node -e "require(\'fs\').writeFileSync(\'ran.txt\', \'\')"'): void => {
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, scripts: { postinstall } }))
  }

  it.runIf(TESTED.runsBuilds)('the project\'s own postinstall, run natively after the report: stock\'s lines in stock\'s order (the script\'s after the summary), the plugin\'s line and pnpm\'s "Already up to date"', async () => {
    const stock = await install({ stock: true, edit: withPostinstall })
    const native = await install({ edit: withPostinstall })
    expectOk(native.run)
    expect(fs.existsSync(path.join(native.dir, 'ran.txt'))).toBe(true)
    const ours = `${PLUGIN_NAME} installed 9 packages natively in <t>; now the project's postinstall, run as pnpm runs them`
    // The plugin's line closes its report, before the script's.
    expectLines(native.lines, stock.lines, (lines) => {
      const expected = asNative(lines).filter((l) => l !== OURS)
      expected.splice(expected.findIndex((l) => l.startsWith('. postinstall$')), 0, ours)
      return expected
    })
  })

  it.runIf(TESTED.runsBuilds)('the project\'s own postinstall failing, run natively: stock\'s lines, its exit status, pnpm\'s lockfile check once (pnpm\'s install, which ends the run with the error, checks nothing again)', async () => {
    const edit = (dir: string): void => withPostinstall(dir, 'exit 3')
    const stock = await install({ stock: true, edit })
    const native = await install({ edit })
    expect(stock.run.code).toBe(3)
    expect(native.run.code).toBe(stock.run.code)
    const ours = `${PLUGIN_NAME} installed 9 packages natively in <t>; now the project's postinstall, run as pnpm runs them`
    expectLines(native.lines, stock.lines, (lines) => {
      const expected = [...lines]
      expected.splice(expected.findIndex((l) => l.startsWith('. postinstall$')), 0, ours)
      return expected
    })
  })

  it.skipIf(TESTED.runsBuilds)('the project\'s own postinstall, under a release whose scripts pnpm runs (before 11.28.1): the layout\'s lines as stock\'s, the plugin\'s line, then pnpm\'s own install (its lockfile check, the script, no "Already up to date")', async () => {
    const stock = await install({ stock: true, edit: withPostinstall })
    const native = await install({ edit: withPostinstall })
    expectOk(native.run)
    expect(fs.existsSync(path.join(native.dir, 'ran.txt'))).toBe(true)
    const ours = `${PLUGIN_NAME} installed 9 packages natively in <t>; pnpm's own install then finds them in place and runs the project's postinstall`
    // pnpm's install, after the plugin's line, says what it says before its layout in stock's.
    const expected = stock.lines.filter((l) => !PNPM_INSTALL_ONLY.some((only) => only.test(l)))
    expected.splice(expected.findIndex((l) => l.startsWith('. postinstall$')), 0, ours, ...stock.lines.filter((l) => PNPM_INSTALL_ONLY.some((only) => only.test(l))))
    expect(native.lines).toEqual(expected)
  })

  it.each([
    ['the project listed as `+ a 1.2.3 <- packages/a` as stock lists it', '', true],
    // From 11.28.0 pnpm hoists the projects publicly before it links the root's dependencies:
    // that link is found made, and not listed. Before, it hoists no project the root depends on.
    TESTED.projectHoisting === 'reserved'
      ? ['under shamefullyHoist, the project not listed, as stock hoists it first', 'shamefullyHoist: true\n', false]
      : ['under shamefullyHoist, the project listed still, as stock hoists no project the root depends on (before 11.28.0)', 'shamefullyHoist: true\n', true],
  ])('a workspace whose root depends on a project (workspace:*): stock\'s lines, %s', async (_, settings, listed) => {
    const setUp = path.join(base, `setup-workspace${settings === '' ? '' : '-hoisted'}`)
    fs.cpSync(setUpDir, setUp, { recursive: true, filter: (src) => path.basename(src) !== 'node_modules' })
    fs.mkdirSync(path.join(setUp, 'packages', 'a'), { recursive: true })
    fs.writeFileSync(path.join(setUp, 'packages', 'a', 'package.json'), JSON.stringify({ name: 'a', version: '1.2.3' }))
    const manifest = JSON.parse(fs.readFileSync(path.join(setUp, 'package.json'), 'utf8'))
    fs.writeFileSync(path.join(setUp, 'package.json'), JSON.stringify({ ...manifest, dependencies: { ...manifest.dependencies, a: 'workspace:*' } }))
    fs.appendFileSync(path.join(setUp, 'pnpm-workspace.yaml'), `\npackages:\n  - packages/*\n${settings}`)
    expectOk(await runPnpm(['install'], { projectDir: setUp, storeDir: store, sandbox: `${setUp}-sandbox`, registry: registry.url }))
    const stock = await install({ stock: true, setUp })
    const native = await install({ setUp })
    expectOk(stock.run)
    expectOk(native.run)
    expect(stock.lines.includes('+ a 1.2.3 <- packages/a')).toBe(listed)
    expectLines(native.lines, stock.lines)
  })

  it.each([
    ['run at the root', undefined],
    ['run in the project below it', 'packages/a'],
  ])('--reporter=ndjson, a workspace of two projects, %s: each project\'s manifest and direct dependencies under its own prefix, as stock\'s records', async (_, project) => {
    const setUp = path.join(base, `setup-workspace-ndjson${project == null ? '' : '-below'}`)
    fs.cpSync(setUpDir, setUp, { recursive: true, filter: (src) => path.basename(src) !== 'node_modules' })
    fs.mkdirSync(path.join(setUp, 'packages', 'a'), { recursive: true })
    const root = JSON.parse(fs.readFileSync(path.join(setUp, 'package.json'), 'utf8'))
    const [first, ...rest] = Object.entries(root.dependencies as Record<string, string>)
    fs.writeFileSync(path.join(setUp, 'packages', 'a', 'package.json'), JSON.stringify({ name: 'a', version: '1.2.3', dependencies: Object.fromEntries([first]) }))
    fs.writeFileSync(path.join(setUp, 'package.json'), JSON.stringify({ ...root, dependencies: { ...Object.fromEntries(rest), a: 'workspace:*' } }))
    // An override of a's dependency: pnpm's install logs a's manifest as it reads it, then with the override applied.
    fs.appendFileSync(path.join(setUp, 'pnpm-workspace.yaml'), `\npackages:\n  - packages/*\noverrides:\n  '${first[0]}': '^${first[1]}'\n`)
    expectOk(await runPnpm(['install'], { projectDir: setUp, storeDir: store, sandbox: `${setUp}-sandbox`, registry: registry.url }))
    const stock = await install({ stock: true, setUp, reporter: 'ndjson', project })
    const native = await install({ setUp, reporter: 'ndjson', project })
    expectOk(stock.run)
    expectOk(native.run)
    expect(native.lines.join('\n')).toContain(`${PLUGIN_NAME} installed`)
    const ours = ndjsonRecords(native.lines)
    const theirs = ndjsonRecords(stock.lines)
    const updated = theirs.find((r) => r.name === 'pnpm:package-manifest' && String(r.prefix).endsWith('packages/a') && r.updated != null)
    expect((updated?.updated as { dependencies: object }).dependencies).toEqual({ [first[0]]: `^${first[1]}` })
    for (const name of ['pnpm:root', 'pnpm:package-manifest', 'pnpm:summary', 'pnpm:stats', 'pnpm:context', 'pnpm:progress']) {
      expect(ndjsonNamed(ours, name), name).toEqual(ndjsonNamed(theirs, name))
    }
  })

  it('a repeat install over node_modules (pnpm\'s ordinary work): no line of the plugin\'s, but under --loglevel debug', async () => {
    const first = await install({})
    expectOk(first.run)
    const opts = { projectDir: first.dir, storeDir: store, sandbox: path.join(base, 'repeat-sandbox'), registry: registry.url }
    const again = await runPnpm(['install', '--frozen-lockfile'], opts)
    expectOk(again)
    expect(again.stdout).not.toContain(PLUGIN_NAME)
    const debug = await runPnpm(['install', '--frozen-lockfile', '--loglevel', 'debug'], opts)
    expectOk(debug)
    expect(debug.stdout).toContain(`${PLUGIN_NAME} left this install to pnpm: node_modules already exists, so pnpm updates it`)
  })

  describe('cas-native-explain, the project with the plugin', () => {
    /** The explain command on a fresh clone of the set-up project: its exit code and output; the clone's files after it. */
    async function explainClone (pnpmArgs: string[]): Promise<{ code: number, out: string, written: string[] }> {
      const dir = path.join(base, `explain-${n++}`)
      fs.mkdirSync(dir)
      for (const f of ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml']) fs.copyFileSync(path.join(setUpDir, f), path.join(dir, f))
      const pnpm = pnpmLauncher(base)
      let out = ''
      const code = await explainMain(['--pnpm', pnpm, dir, '--', `--config.registry=${registry.url}`, `--store-dir=${store}`, ...pnpmArgs], { out: (t) => { out += t }, env: pnpmEnv(path.join(base, `sandbox-${n}`)) })
      const written = (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) => !['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml'].includes(f) && !f.startsWith('node_modules/.pnpm-config') && f !== 'node_modules')
      return { code, out: out.split(dir).join('<project>'), written }
    }

    it('native: says so, with the number of packages; nothing installed (but pnpm\'s config dependencies)', async () => {
      const { code, out, written } = await explainClone([])
      expect(code, out).toBe(0)
      expect(out.split('\n')).toEqual([
        `A fresh clone's \`pnpm install --frozen-lockfile\` in <project> (pnpm ${testedPnpmVersion}, its settings there):`,
        `native: ${PLUGIN_NAME} would lay out all 9 packages, then pnpm finds node_modules up to date.`,
        // (No build allowed, nothing patched: no note on builds.)
        '',
      ])
      expect(written).toEqual([])
    })

    it('left to pnpm: every reason the settings give, each with what would change it', async () => {
      const { code, out } = await explainClone(['--config.node-linker=hoisted', '--config.dedupe-direct-deps=true', '--config.optimistic-repeat-install=false'])
      expect(code, out).toBe(1)
      expect(out.split('\n').slice(1, 10)).toEqual([
        'left to pnpm, for 4 reasons:',
        '1. nodeLinker is hoisted; the native install lays out pnpm\'s isolated node_modules only',
        '   To install natively: use nodeLinker: isolated (the default)',
        '2. a setting changes the layout or how pnpm reads it: optimisticRepeatInstall false',
        '   To install natively: use pnpm\'s default for that setting',
        '3. the workspace has a layout the native install does not reproduce (dedupeDirectDeps)',
        '   To install natively: nothing in the project: the native install does not do this yet, and pnpm installs as usual',
        // pnpm derives it from nodeLinker hoisted.
        '4. a setting changes the layout or how pnpm reads it: bin settings',
        '   To install natively: use pnpm\'s default for that setting',
      ])
    })
  })
})
