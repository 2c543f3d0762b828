/**
 * The explain command: `cas-native-explain [--json] [--pnpm <pnpm>] [<dir>] [-- <pnpm install options>]`
 * (the plugin package's bin; `cas-native-pnpm explain` in `@cas/native`). Prints whether the
 * next fresh-clone install of the project would be native, and every reason if not
 * (`explain.ts`). Exit code: 0 native, 1 left to pnpm, 2 could not tell.
 *
 * The settings are pnpm's own: reading pnpm-workspace.yaml and .npmrc here would miss pnpm's
 * defaults, its derived settings, the environment, the CLI options and the pnpm version a
 * project pins (`pnpm config list` shows only what is set). So pnpm is run for
 * `install --frozen-lockfile` with a global pnpmfile of the command's own, whose
 * `updateConfig` runs before any other pnpmfile's: it saves the settings it gets and ends the
 * process there, before pnpm installs anything. Before any hook, pnpm installs the project's
 * config dependencies (into `node_modules/.pnpm-config`), as every pnpm command does.
 */
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PLUGIN_NAME } from './config-dependency.js'
import { explain, formatExplanation } from './explain.js'
import { whyNot } from './why-not.js'
import type { NativeInstallConfig } from './install/native-install.js'

const USAGE = `Usage: cas-native-explain [--json] [--pnpm <pnpm>] [<project dir>] [-- <pnpm install options>]
Says whether the next fresh-clone \`pnpm install --frozen-lockfile\` of the project would be
installed natively by ${PLUGIN_NAME}, and every reason if not (--json: as JSON). Installs
nothing (pnpm installs the config dependencies first, as for any command).
Exit code: 0 native, 1 left to pnpm, 2 error.`

/**
 * The capture pnpmfile: saves pnpm's settings (without credentials) and ends pnpm. The settings
 * whose keys are package names are kept whole: a catalog entry, an override or a build rule for
 * `js-tokens`, `@auth/core` or `keytar` is no credential, and the verdict needs it.
 */
const CAPTURE = `'use strict'
const SECRET = /auth|token|password|cert|key$/i
const BY_PACKAGE = ['catalogs', 'overrides', 'allowBuilds', 'patchedDependencies', 'packageExtensions', 'peerDependencyRules', 'configDependencies']
module.exports = { hooks: { updateConfig (config) {
  const settings = JSON.parse(JSON.stringify(config, function (k, v) {
    if (this === config && BY_PACKAGE.includes(k)) return undefined
    if (k === 'configByUri' && v != null) return Object.fromEntries(Object.keys(v).map((uri) => [uri, {}]))
    return SECRET.test(k) || typeof v === 'function' ? undefined : v
  }))
  for (const k of BY_PACKAGE) if (config[k] != null) settings[k] = config[k]
  require('fs').writeFileSync(process.env.CAS_NATIVE_EXPLAIN_CONFIG, JSON.stringify(settings), { mode: 0o600 })
  process.exit(0)
} } }
`

/** How to start pnpm: `--pnpm`, the pnpm that started this (`pnpm exec`, `pnpm dlx`), or `pnpm` on the PATH. */
function pnpmCommand (given: string | undefined): string[] {
  const launcher = given ?? (/pnpm/i.test(path.basename(process.env.npm_execpath ?? '')) ? process.env.npm_execpath : undefined) ?? 'pnpm'
  return /\.[cm]?js$/.test(launcher) ? [process.execPath, launcher] : [launcher]
}

/** pnpm's settings for `install --frozen-lockfile` in `dir`, or what pnpm said instead. */
export function pnpmSettings (dir: string, pnpm: string[], pnpmArgs: string[], env: NodeJS.ProcessEnv): NativeInstallConfig | string {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cas-native-explain-'))
  try {
    const capture = path.join(tmp, 'capture.cjs')
    const saved = path.join(tmp, 'config.json')
    fs.writeFileSync(capture, CAPTURE)
    const run = spawnSync(pnpm[0], [...pnpm.slice(1), 'install', '--frozen-lockfile', `--global-pnpmfile=${capture}`, ...pnpmArgs], {
      cwd: dir,
      encoding: 'utf8',
      // pnpm may wait for a registry through its retries (config dependencies); not forever.
      timeout: 600_000,
      // Should the plugin's hook run before the capture's: it does nothing.
      env: { ...env, CAS_NATIVE_EXPLAIN_CONFIG: saved, CAS_NATIVE_INSTALL: '0', CAS_NATIVE_PNPMFILE_PRELINK: '0', CAS_NATIVE_PNPMFILE_FETCHER: '0' },
    })
    if (!fs.existsSync(saved)) return `${[pnpm.join(' '), run.error?.message, run.stdout, run.stderr].filter(Boolean).join('\n').trim()}`
    const config = JSON.parse(fs.readFileSync(saved, 'utf8')) as NativeInstallConfig
    // The install would load the others, not this one.
    return { ...config, pnpmfile: (config.pnpmfile ?? []).filter((f) => f !== capture), globalPnpmfile: undefined }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
}

/** Runs the command with `argv` (the arguments after its name), pnpm in `env`; returns its exit code. */
export async function explainMain (argv: string[], opts: { out?: (text: string) => void, env?: NodeJS.ProcessEnv } = {}): Promise<number> {
  const out = opts.out ?? ((text: string) => { process.stdout.write(text) })
  const dash = argv.indexOf('--')
  const own = dash === -1 ? argv : argv.slice(0, dash)
  const pnpmArgs = dash === -1 ? [] : argv.slice(dash + 1)
  const at = own.indexOf('--pnpm')
  const given = at === -1 ? undefined : own[at + 1]
  const json = own.includes('--json')
  const rest = (at === -1 ? own : [...own.slice(0, at), ...own.slice(at + 2)]).filter((a) => a !== '--json')
  if (rest.some((a) => a.startsWith('-')) || rest.length > 1 || (at !== -1 && given == null)) {
    out(`${USAGE}\n`)
    return rest.includes('--help') || rest.includes('-h') ? 0 : 2
  }
  const dir = path.resolve(rest[0] ?? '.')
  if (process.platform === 'win32') {
    // No native install there, whatever the settings (and no pnpm to start without a shell).
    const why = whyNot('Windows (its shims are of other kinds)')
    out(`${json ? JSON.stringify({ native: false, reasons: [why], notes: [] }) : `left to pnpm: ${why.says}\n   To install natively: ${why.change}`}\n`)
    return 1
  }
  const config = pnpmSettings(dir, pnpmCommand(given), pnpmArgs, opts.env ?? process.env)
  if (typeof config === 'string') {
    out(`cas-native-explain: pnpm did not get as far as its settings in ${dir}:\n${config}\n`)
    return 2
  }
  const explanation = await explain(config)
  out(json ? `${JSON.stringify(explanation, null, 2)}\n` : formatExplanation(explanation, dir))
  return explanation.native ? 0 : 1
}
