/**
 * The pieces of a native build on a side-effects cache miss (lib/plugin/install/script-env.ts,
 * dependency-build.ts, builds-on-miss.ts), checked against pnpm 11.28.11's own functions read
 * out of its bundle where it has them: a script's `npm_package_*` variables, which variables it
 * inherits, its `PATH`; and the order, the settings and the manifests it leaves to pnpm.
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { inheritedName, packageEnv, scriptEnv, scriptPath } from '../dist/plugin/install/script-env.js'
import { lineSplitter, runBuildScripts, LifecycleError, scriptPackage, shellBody, stageScript } from '../dist/plugin/install/dependency-build.js'
import { buildContext, buildMissed, buildSettingsReason, buildSettingsUnsupported, failsWithLinksLeft, linkedAtTurn, patchSettingsReason, pnpmPaths, readBuildManifest } from '../dist/plugin/install/builds-on-miss.js'
import { pnpmFunction } from './helpers/pnpm-bundle.js'
import { referencePnpmDir } from './helpers/pnpm-cli.js'
import { freshDir } from './helpers/stores.js'
import { PNPM_RELEASES } from '../dist/plugin/install/pnpm-releases.js'

const NEWEST = PNPM_RELEASES.at(-1)!.version

const pnpmMakeEnv = pnpmFunction<(data: unknown, opts: object) => Record<string, string>>('makeEnv', { PATH: 'PATH' })
const pnpmInherited = pnpmFunction<(name: string) => boolean>('isInheritedEnvName', { PATH: 'PATH' })
const pnpmDecorateLifecycleError = pnpmFunction<(er: Error, run: object) => void>('decorateLifecycleError', { fs21: fs, path32: path })
/**
 * pnpm's decoration of the error of x@1.0.0's `install` script `exit 0` (its lifecycle runner's
 * `decorateLifecycleError`), which changes the error in place: first tried on a throwaway error
 * (the bundle's function is completed as it is called, and would decorate `er` more than once).
 */
const pnpmDecorate = (er: Error): void => {
  const run = { cmd: 'exit 0', pkg: { _id: 'x@1.0.0', name: 'x' }, stage: 'install', opts: { log: { info: () => {}, warn: () => {} }, dir: '/p' } }
  pnpmDecorateLifecycleError(new Error('throwaway'), run)
  pnpmDecorateLifecycleError(er, run)
}
const pnpmExtendPath = pnpmFunction<(wd: string, original: string | undefined, opts: object) => string>('extendPath', { path30: path, fs18: fs })

/** Only the variables a manifest makes (pnpm's `makeEnv` starts from its own environment). */
const ownVariables = (env: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('npm_package_')))

describe('packageEnv: pnpm\'s npm_package_* variables of a manifest', () => {
  it.each([
    [{ name: 'a', version: '1.0.0' }],
    [{ name: '@s/b-c', version: '2.0.0-rc.1', description: 'not exported', scripts: { postinstall: 'x' } }],
    [{ version: '1.0.0', name: 'c', bin: { 'c-cli': 'cli.js', '@s/x': 'y.js' }, config: { port: 8080, nested: { deep: true, list: ['a', 'b\nc'] } }, engines: { node: '>=18' } }],
    [{ name: 'd', version: '1.0.0', config: { empty: '', zero: 0, nothing: null, no: false }, _private: 'x' }],
  ])('%j', (manifest) => {
    const theirs = ownVariables(pnpmMakeEnv(manifest, {}))
    const ours = packageEnv(manifest)
    expect(ours).toEqual(theirs)
    // In pnpm's order too (a script that lists its environment sees it).
    expect(Object.keys(ours)).toEqual(Object.keys(theirs))
  })
})

describe('inheritedName: the variables of pnpm\'s environment a script gets', () => {
  it.each(['HOME', 'PATH', 'Path', 'npm_package_name', 'npm_config_registry', 'npm_config__authToken', 'pnpm_config_//reg/:_authToken', 'NPM_CONFIG_@scope:registry', 'npm_config_a:_password', 'pnpm_config_verify_deps_before_run', 'npm_lifecycle_event'])('%s', (name) => {
    expect(inheritedName(name)).toBe(pnpmInherited(name))
  })
})

describe('scriptPath: pnpm\'s PATH for a dependency\'s script', () => {
  it.each([
    ['/p/node_modules/.pnpm/a@1.0.0/node_modules/a', '/usr/bin:/bin', ['/p/node_modules/.pnpm/node_modules/.bin']],
    ['/p/node_modules/.pnpm/@s+b@1.0.0/node_modules/@s/b', '/usr/bin:/p/node_modules/.bin:/bin', ['/p/node_modules/.pnpm/node_modules/.bin', '/p/node_modules/.bin']],
    ['/p/node_modules/.pnpm/a@1.0.0/node_modules/a', undefined, []],
    ['/p/packages/x', '/bin', []],
  ])('%s', (wd, original, extraBinPaths) => {
    const gyp = '/pnpm/dist/node-gyp-bin'
    expect(scriptPath(wd, original, gyp, extraBinPaths)).toBe(pnpmExtendPath(wd, original, { extraBinPaths, nodeGypBinDir: gyp }))
  })
})

describe('scriptEnv', () => {
  const base = {
    manifest: { name: 'a', version: '1.0.0', scripts: { postinstall: 'node x.js' } },
    stage: 'postinstall',
    wd: '/p/node_modules/.pnpm/a@1.0.0/node_modules/a',
    processEnv: { HOME: '/h', PATH: '/bin', npm_package_stale: 'x', npm_config__auth: 'secret', NODE: '/n/node' },
    cwd: '/p',
    pnpm: { execPath: '/pnpm/bin/pnpm.mjs', nodeGyp: '/pnpm/dist/node_modules/node-gyp/bin/node-gyp.js', nodeGypBinDir: '/pnpm/dist/node-gyp-bin' },
    extraEnv: { pnpm_config_verify_deps_before_run: 'false', npm_command: 'install' },
    initCwd: '/p',
    userAgent: 'pnpm/11.28.11 npm/? node/v24.9.0 linux x64',
    extraBinPaths: ['/p/node_modules/.pnpm/node_modules/.bin'],
    script: 'node x.js',
  }
  it('as pnpm assigns it: inherited, the package, the lifecycle, pnpm, extraEnv, TMPDIR, PATH', () => {
    const env = scriptEnv({ ...base, unsafePerm: false })
    expect(Object.keys(env)).toEqual(['HOME', 'PATH', 'NODE', 'npm_package_name', 'npm_package_version', 'npm_lifecycle_event', 'npm_node_execpath', 'npm_execpath', 'INIT_CWD',
      'npm_package_json', 'npm_config_node_gyp', 'pnpm_config_verify_deps_before_run', 'npm_command', 'PNPM_SCRIPT_SRC_DIR', 'npm_config_user_agent', 'TMPDIR', 'npm_lifecycle_script'])
    expect(env.NODE).toBe('/n/node')
    expect(env.npm_node_execpath).toBe('/n/node')
    expect(env.TMPDIR).toBe(`${base.wd}/node_modules/.tmp`)
    expect(env.PATH.split(':')[0]).toBe(`${base.wd}/node_modules/.bin`)
    expect(scriptEnv({ ...base, unsafePerm: true }).TMPDIR).toBeUndefined()
  })
})

describe('stageScript: the script pnpm runs for a stage of a dependency\'s build', () => {
  const pnpmPrepareHookManifest = pnpmFunction<(manifest: object, stage: string, pkgRoot: string) => { scripts: Record<string, string> }>('prepareHookManifest', { existsSync3: fs.existsSync, path36: path })
  /** pnpm's script for the stage, as its `runLifecycleHook` decides whether and what to run. */
  const pnpms = (manifest: Record<string, unknown>, stage: string, dir: string): string | undefined => {
    const script = pnpmPrepareHookManifest(manifest, stage, dir).scripts[stage]
    return script === 'npx only-allow pnpm' || !script ? undefined : script
  }
  const withGyp = freshDir('stage-script-gyp')
  fs.writeFileSync(path.join(withGyp, 'binding.gyp'), '{}')
  const withoutGyp = freshDir('stage-script-plain')
  it.each([
    [{}],
    [{ scripts: { postinstall: 'node x.js' } }],
    [{ scripts: { install: 'node x.js' } }],
    [{ scripts: { install: 'npx only-allow pnpm' } }],
    [{ scripts: { preinstall: 'node x.js' } }],
    [{ scripts: { install: '', preinstall: '' } }],
    [{ gypfile: false }],
    [{ gypfile: 'false' }],
    [{ gypfile: true, scripts: { postinstall: 'node x.js' } }],
  ])('%j, with and without a binding.gyp', (fields) => {
    const manifest = { name: 'x', version: '1.0.0', scripts: {}, ...fields }
    for (const dir of [withGyp, withoutGyp]) {
      for (const stage of ['preinstall', 'install', 'postinstall']) {
        expect(stageScript(manifest, stage, dir), `${stage} in ${dir}`).toBe(pnpms(manifest, stage, dir))
      }
    }
  })
  it('a binding.gyp, no script: `node-gyp rebuild` for pnpm, and here', () => {
    expect(pnpms({ scripts: {} }, 'install', withGyp)).toBe('node-gyp rebuild')
    expect(stageScript({ scripts: {} }, 'install', withGyp)).toBe('node-gyp rebuild')
  })
})

describe('runBuildScripts: preinstall, install, postinstall, as pnpm runs them', () => {
  const ctx = {
    pnpm: pnpmPaths(path.join(referencePnpmDir, 'bin', 'pnpm.mjs'))!,
    processEnv: process.env,
    cwd: process.cwd(),
    extraEnv: { npm_command: 'install' },
    initCwd: '/p',
    unsafePerm: true,
    extraBinPaths: [],
  }
  const pkg = (scripts: Record<string, string>): string => {
    const dir = path.join(freshDir('build-scripts'), 'node_modules', 'x')
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', scripts }))
    return dir
  }
  it('in order, in the package\'s directory; an install script that is `npx only-allow pnpm` does not run', async () => {
    const dir = pkg({ postinstall: 'echo post >> log', preinstall: 'echo pre >> log', install: 'echo "$npm_lifecycle_event $INIT_CWD" >> log' })
    expect(await runBuildScripts(dir, readBuildManifest(dir) as any, ctx)).toBe(true)
    expect(fs.readFileSync(path.join(dir, 'log'), 'utf8')).toBe('pre\ninstall /p\npost\n')
    const only = pkg({ install: 'npx only-allow pnpm' })
    expect(await runBuildScripts(only, readBuildManifest(only) as any, ctx)).toBe(false)
  })
  it('a script that leaves a process running with its output open: read for a while after the shell exits, then cut, as pnpm\'s runner does (the install goes on; that process\'s later output and an unfinished line never logged)', async () => {
    const dir = pkg({ postinstall: '(sleep 30; echo late) & echo $! > bg.pid; echo built; printf unfinished' })
    const records: Array<Record<string, unknown>> = []
    expect(await runBuildScripts(dir, readBuildManifest(dir) as any, { ...ctx, lifecycle: (r: Record<string, unknown>) => records.push(r) })).toBe(true)
    const pid = Number(fs.readFileSync(path.join(dir, 'bg.pid'), 'utf8'))
    try {
      // Still running: the build did not wait for it.
      expect(() => process.kill(pid, 0)).not.toThrow()
    } finally {
      process.kill(pid, 'SIGKILL')
    }
    expect(records.filter((r) => r.line != null).map((r) => r.line)).toEqual(['built'])
    expect(records.at(-1)).toMatchObject({ exitCode: 0, stage: 'postinstall' })
  })
  /** A directory of pnpm's node-gyp shims whose `node-gyp` records how it was run (in the package: its arguments, stage and script) and says so. */
  const fakeGypShims = (): string => {
    const dir = freshDir('gyp-shims')
    fs.writeFileSync(path.join(dir, 'node-gyp'), '#!/bin/sh\necho "$* $npm_lifecycle_event $npm_lifecycle_script" >> gyp.txt\necho built\n', { mode: 0o755 })
    return dir
  }
  it('a binding.gyp and no install or preinstall script: the install stage runs `node-gyp rebuild` (pnpm\'s shims on PATH), recorded as that script, with side effects', async () => {
    const dir = pkg({ postinstall: 'echo post >> log' })
    fs.writeFileSync(path.join(dir, 'binding.gyp'), '{}')
    const records: Array<Record<string, unknown>> = []
    const gypCtx = { ...ctx, pnpm: { ...ctx.pnpm, nodeGypBinDir: fakeGypShims() }, lifecycle: (r: Record<string, unknown>) => records.push(r) }
    expect(await runBuildScripts(dir, readBuildManifest(dir) as any, gypCtx)).toBe(true)
    expect(fs.readFileSync(path.join(dir, 'gyp.txt'), 'utf8')).toBe('rebuild install node-gyp rebuild\n')
    expect(fs.readFileSync(path.join(dir, 'log'), 'utf8')).toBe('post\n')
    expect(records.filter((r) => r.stage === 'install')).toEqual([
      { depPath: dir, optional: false, script: 'node-gyp rebuild', stage: 'install', wd: dir },
      { depPath: dir, line: 'built', stage: 'install', stdio: 'stdout', wd: dir },
      { depPath: dir, exitCode: 0, optional: false, stage: 'install', wd: dir },
    ])
    // Nothing else: pnpm's `installed` says the build had side effects.
    const bare = pkg({})
    fs.writeFileSync(path.join(bare, 'binding.gyp'), '{}')
    expect(await runBuildScripts(bare, readBuildManifest(bare) as any, gypCtx)).toBe(true)
    expect(fs.readFileSync(path.join(bare, 'gyp.txt'), 'utf8')).toBe('rebuild install node-gyp rebuild\n')
  })
  it('a failing stage: ELIFECYCLE with pnpm\'s message, the next stage not run', async () => {
    const dir = pkg({ install: 'exit 3', postinstall: 'echo post >> log' })
    const failed = await runBuildScripts(dir, readBuildManifest(dir) as any, ctx).catch((err: unknown) => err)
    expect(failed).toBeInstanceOf(LifecycleError)
    expect((failed as LifecycleError).code).toBe('ELIFECYCLE')
    expect((failed as Error).message).toBe('x@1.0.0 install: `exit 3`\nExit status 3')
    // What pnpm's reporter and error handler read: its exit status is pnpm's.
    expect(failed).toMatchObject({ errno: 3, pkgid: 'x@1.0.0', pkgname: 'x', stage: 'install', script: 'exit 3' })
    expect(fs.existsSync(path.join(dir, 'log'))).toBe(false)
  })
  it('a manifest\'s own _id names the package in a failed script\'s error only under ownId (a project\'s, to 11.28.3, whose hook manifest is { _id, ...manifest }); pkgname is its name either way', async () => {
    const dir = pkg({ install: 'exit 3' })
    const manifest = { ...readBuildManifest(dir) as any, _id: 'its-own@9.9.9' }
    const own = await runBuildScripts(dir, manifest, { ...ctx, ownId: true }).catch((err: unknown) => err)
    expect(own).toMatchObject({ message: 'its-own@9.9.9 install: `exit 3`\nExit status 3', pkgid: 'its-own@9.9.9', pkgname: 'x' })
    expect(await runBuildScripts(dir, manifest, ctx).catch((err: unknown) => err)).toMatchObject({ pkgid: 'x@1.0.0', pkgname: 'x' })
    // pnpm's: the hook manifest's `_id` as a string, whatever the field holds; no name, no pkgname.
    expect(scriptPackage({ _id: null, name: 'p' }, true)).toEqual({ id: 'null', name: 'p' })
    expect(scriptPackage({ version: '1.0.0', _id: 'ignored' }, false)).toEqual({ id: '@1.0.0', name: undefined })
  })
  it('a script that cannot start (its directory is gone): the spawn error\'s errno and call kept, ELIFECYCLE, as pnpm decorates that error', async () => {
    const dir = path.join(freshDir('build-scripts'), 'gone')
    const manifest = { name: 'x', version: '1.0.0', scripts: { install: 'exit 0' } }
    const failed = await runBuildScripts(dir, manifest, ctx).catch((err: unknown) => err) as LifecycleError
    const spawned = await new Promise<NodeJS.ErrnoException>((resolve) => spawn('sh', ['-c', 'exit 0'], { cwd: dir }).on('error', resolve))
    pnpmDecorate(spawned)
    expect(failed).toBeInstanceOf(LifecycleError)
    expect({ message: failed.message, code: failed.code, errno: failed.errno, syscall: failed.syscall }).toEqual({ message: spawned.message, code: spawned.code, errno: spawned.errno, syscall: spawned.syscall })
    expect(failed.errno).toBe(-2)
  })
  it('a command the shell does not find (its status 127): pnpm\'s spawn wrapper\'s error (spawn ENOENT, the shell as its file), decorated as pnpm decorates it; no end of the script logged', async () => {
    const dir = pkg({ install: 'not-a-command' })
    const records: Array<Record<string, unknown>> = []
    const failed = await runBuildScripts(dir, readBuildManifest(dir) as any, { ...ctx, lifecycle: (r: Record<string, unknown>) => records.push(r) }).catch((err: unknown) => err) as LifecycleError
    const theirs = pnpmFunction<(cmd: string) => Error>('createCommandNotFoundError')('sh')
    const run = { cmd: 'not-a-command', pkg: { _id: 'x@1.0.0', name: 'x' }, stage: 'install', opts: { log: { info: () => {}, warn: () => {} }, dir: '/p' } }
    pnpmDecorateLifecycleError(new Error('throwaway'), run)
    pnpmDecorateLifecycleError(theirs, run)
    const fields = (e: any): object => ({ message: e.message, code: e.code, errno: e.errno, syscall: e.syscall, file: e.file, pkgid: e.pkgid, pkgname: e.pkgname, stage: e.stage, script: e.script })
    expect(failed).toBeInstanceOf(LifecycleError)
    expect(fields(failed)).toEqual(fields(theirs))
    expect(failed.message).toBe('x@1.0.0 install: `not-a-command`\nspawn ENOENT')
    // The shell's complaint is logged; its end is not (pnpm's runner never sees the shell close).
    expect(records.filter((r) => r.stdio === 'stderr').map((r) => r.line)).toEqual([expect.stringMatching(/not-a-command: not found/)])
    expect(records.filter((r) => 'exitCode' in r)).toEqual([])
  })
  it.each([['EPERM'], ['ERR_PNPM_SCRIPT_SHELL_NOT_FOUND'], ['ENOENT'], ['EACCES'], [undefined]])('the code of an error that kept a script from running (%s): kept or made ELIFECYCLE by pnpm\'s rule', (code) => {
    const cause = Object.assign(new Error('spawn sh'), { code, errno: -1, syscall: 'spawn sh' })
    pnpmDecorate(cause)
    const ours = new LifecycleError({ id: 'x@1.0.0', name: 'x' }, 'install', 'exit 0', 'spawn sh', '', { code, errno: -1, syscall: 'spawn sh' })
    expect({ code: ours.code, errno: ours.errno, syscall: ours.syscall, message: ours.message }).toEqual({ code: cause.code, errno: cause.errno, syscall: cause.syscall, message: cause.message })
  })
  /**
   * The package's build in a process of its own, as pnpm's process would run it (detached: no
   * terminal); `signal` sent to that process once the script has printed `started`. Its end:
   * its exit code or signal, what it printed (`built` once the build succeeded).
   */
  const buildInChild = async (dir: string, signal?: NodeJS.Signals): Promise<{ code: number | null, signal: string | null, stdout: string }> => {
    const module = path.join(__dirname, '..', 'dist', 'plugin', 'install', 'dependency-build.js')
    const code = `const { runBuildScripts } = await import(${JSON.stringify(module)})
      const manifest = JSON.parse(require('fs').readFileSync(${JSON.stringify(path.join(dir, 'package.json'))}, 'utf8'))
      await runBuildScripts(${JSON.stringify(dir)}, manifest, { ...${JSON.stringify({ ...ctx, processEnv: undefined })}, processEnv: process.env, lifecycle: (r) => { if (r.line === 'started') console.log('started') } })
      console.log('built')`
    const child = spawn(process.execPath, ['--input-type=module', '-e', `import { createRequire } from 'node:module'; const require = createRequire(import.meta.url); ${code}`], { stdio: ['ignore', 'pipe', 'ignore'], detached: true })
    let stdout = ''
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString()
      if (signal != null && stdout.includes('started\n')) {
        child.kill(signal)
        signal = undefined
      }
    })
    return new Promise((resolve) => child.on('close', (c, s) => resolve({ code: c, signal: s, stdout })))
  }
  it('a signal to pnpm while a script runs (no terminal: the script in a group of its own): passed on to the script, then, as the script ended by it, taken by pnpm\'s process', async () => {
    const dir = pkg({ install: 'echo $$ > pid; echo started; exec sleep 60' })
    expect(await buildInChild(dir, 'SIGTERM')).toMatchObject({ signal: 'SIGTERM' })
    expect(() => process.kill(Number(fs.readFileSync(path.join(dir, 'pid'), 'utf8')), 0)).toThrow(/ESRCH/)
    // SIGINT: pnpm's interrupt trap has the shell end by it, once the command it waits for has (the
    // command says it started, so that the shell is waiting for it: between two commands, the
    // trap lets the script go on, under pnpm too).
    const interrupted = pkg({ install: 'node -e "console.log(\'started\'); setInterval(() => {}, 1000)"; echo after >> log' })
    expect(await buildInChild(interrupted, 'SIGINT')).toMatchObject({ signal: 'SIGINT' })
    expect(fs.existsSync(path.join(interrupted, 'log'))).toBe(false)
  })
  it('a signal to pnpm that the script handles, exiting cleanly: the build goes on and succeeds, as under pnpm (which raises only a signal the script ended by)', async () => {
    const terminated = pkg({ install: 'trap "echo trapped >> log; exit 0" TERM; echo started; while :; do sleep 0.1; done', postinstall: 'echo post >> log' })
    expect(await buildInChild(terminated, 'SIGTERM')).toEqual({ code: 0, signal: null, stdout: 'started\nbuilt\n' })
    expect(fs.readFileSync(path.join(terminated, 'log'), 'utf8')).toBe('trapped\npost\n')
    // A command that handles Ctrl-C: pnpm's interrupt trap keeps the shell, and the script goes on.
    const interrupted = pkg({ install: 'node -e "process.on(\'SIGINT\', () => process.exit(0)); console.log(\'started\'); setInterval(() => {}, 1000)"; echo after >> log' })
    expect(await buildInChild(interrupted, 'SIGINT')).toEqual({ code: 0, signal: null, stdout: 'started\nbuilt\n' })
    expect(fs.readFileSync(path.join(interrupted, 'log'), 'utf8')).toBe('after\n')
  })
  it('a script ended by a signal pnpm did not get: pnpm\'s process takes that signal too (stock pnpm dies by it)', async () => {
    expect(await buildInChild(pkg({ install: 'echo started; kill -TERM $$' }))).toMatchObject({ signal: 'SIGTERM' })
  })
  describe('buildMissed', () => {
    const missed = (name: string, scripts: Record<string, string>, more: Record<string, unknown> = {}) => {
      const dir = pkg(scripts)
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ ...manifest, name }))
      return { depPath: `${name}@1.0.0`, dir, filesIndexFile: '', keys: { key: 'k' }, builds: true, optional: false, hasBin: false, ...more }
    }
    const warnings: string[] = []
    const opts = { ctx, storeDir: '/nowhere', relinkBins: () => {}, engineStrict: false, log: (_level: string, _name: string, fields: Record<string, unknown>) => { warnings.push(fields.message as string) }, lockfileDir: '/p', modulesDirs: [], removed: new Set<string>(), release: { buildUpload: 'pnpm@11.28' as const, uploadsDeniedPatched: false, relinksBuilt: true } }
    const inOrder = (...dirs: string[]) => ({ graph: new Map(dirs.map((d, i) => [d, dirs.slice(0, i)])), concurrency: 5 })

    it('a required build that fails ends with its error, each package left as it is; no build started after it (an optional one is left to pnpm before anything runs)', async () => {
      const first = missed('first', { postinstall: 'echo ran >> log; exit 2' })
      const next = missed('next', { postinstall: 'echo ran >> log' })
      const ended = await buildMissed([first, next], inOrder(first.dir, next.dir), opts)
      expect(ended).toMatchObject({ depPath: 'first@1.0.0', failed: { code: 'ELIFECYCLE', errno: 2, pkgid: 'first@1.0.0', stage: 'postinstall' } })
      expect(fs.readFileSync(path.join(first.dir, 'log'), 'utf8')).toBe('ran\n')
      expect(fs.existsSync(path.join(next.dir, 'package.json'))).toBe(true)
      expect(fs.existsSync(path.join(next.dir, 'log'))).toBe(false)
    })

    it('an optional package whose build fails: skipped as pnpm skips it (the links to it in the modules directories and its directory removed, the failure recorded), the rest built', async () => {
      const optional = missed('opt', { postinstall: 'echo ran >> log; exit 2' }, { optional: true })
      const after = missed('after', { postinstall: 'echo ran >> log' })
      const modules = path.join(path.dirname(optional.dir), 'project-modules')
      fs.mkdirSync(path.join(modules, '@s'), { recursive: true })
      fs.symlinkSync(optional.dir, path.join(modules, 'opt'))
      fs.symlinkSync(optional.dir, path.join(modules, '@s', 'opt'))
      fs.symlinkSync(after.dir, path.join(modules, 'after'))
      const records: unknown[] = []
      const removed = new Set<string>()
      const log = (level: string, name: string, fields: Record<string, unknown>) => { records.push({ level, name, ...fields }) }
      const ended = await buildMissed([optional, after], inOrder(optional.dir, after.dir), { ...opts, log, lockfileDir: '/p', modulesDirs: [modules], removed })
      expect(ended).toEqual({ skippedOptional: ['opt@1.0.0'] })
      expect(fs.existsSync(optional.dir)).toBe(false)
      expect(fs.readdirSync(modules).sort()).toEqual(['@s', 'after'])
      expect(fs.readdirSync(path.join(modules, '@s'))).toEqual([])
      expect(fs.readFileSync(path.join(after.dir, 'log'), 'utf8')).toBe('ran\n')
      expect([...removed]).toEqual([optional.dir])
      // (The store there is none: the other's upload warns.)
      expect(records.filter((r: any) => r.level === 'debug')).toEqual([{ level: 'debug', name: 'pnpm:skipped-optional-dependency', details: expect.stringMatching(/^Error: opt@1\.0\.0 postinstall: `echo ran >> log; exit 2`\nExit status 2$/), package: { id: optional.dir, name: 'opt', version: '1.0.0' }, prefix: '/p', reason: 'build_failure' }])
    })

    it('before 11.28.4, a missed optional package whose build runs: found (should the build fail, pnpm leaves the links to it, and its install over the layout builds it again)', () => {
      const optional = missed('opt', { postinstall: 'exit 2' }, { optional: true })
      const required = missed('req', { postinstall: 'exit 0' })
      expect(failsWithLinksLeft([required, optional], { unlinksFailedOptional: false })).toBe(optional)
      expect(failsWithLinksLeft([required, optional], { unlinksFailedOptional: true })).toBeUndefined()
      // Patched only (its build denied or none): no script runs, nothing fails.
      expect(failsWithLinksLeft([required, { ...optional, builds: false, patchFile: '/p.patch' }], { unlinksFailedOptional: false })).toBeUndefined()
    })

    it('as pnpm\'s scheduler: independent builds run together, a dependent one waits; after a failure the one under way ends and no other starts', async () => {
      // slow and failing start together; waiting depends on slow, which ends after failing failed.
      const slow = missed('slow', { postinstall: 'sleep 0.3; echo ran >> log' })
      const failing = missed('failing', { postinstall: 'exit 1' })
      const waiting = missed('waiting', { postinstall: 'echo ran >> log' })
      const graph = new Map([[slow.dir, []], [failing.dir, []], [waiting.dir, [slow.dir]]])
      const ended = await buildMissed([slow, failing, waiting], { graph, concurrency: 5 }, opts)
      expect(ended).toMatchObject({ depPath: 'failing@1.0.0', failed: { code: 'ELIFECYCLE' } })
      expect(fs.readFileSync(path.join(slow.dir, 'log'), 'utf8')).toBe('ran\n')
      expect(fs.existsSync(path.join(waiting.dir, 'log'))).toBe(false)
    })

    it('the commands linked again after a build with commands (or a patch) only under a release whose build step does so (from 11.28.10)', async () => {
      let relinked = 0
      const relinkBins = () => { relinked++ }
      const older = missed('older', { postinstall: 'echo ran >> log' }, { hasBin: true })
      expect(await buildMissed([older], inOrder(older.dir), { ...opts, relinkBins, release: { ...opts.release, relinksBuilt: false } })).toEqual({ skippedOptional: [] })
      expect(relinked).toBe(0)
      const newer = missed('newer', { postinstall: 'echo ran >> log' }, { hasBin: true })
      expect(await buildMissed([newer], inOrder(newer.dir), { ...opts, relinkBins })).toEqual({ skippedOptional: [] })
      expect(relinked).toBe(1)
    })

    it('before 11.28.10, a missed package with commands that builds (or is patched) and that another package of pnpm\'s build graph depends on: found (that one links its commands at its own turn, after the build)', () => {
      const tool = { ...missed('tool', {}, { hasBin: true }), builds: true }
      const plain = missed('plain', {}, { hasBin: false })
      const children = new Map([['/dependent', [tool.dir, plain.dir]], [tool.dir, []], [plain.dir, []]])
      expect(linkedAtTurn([tool, plain], new Set(['/dependent', tool.dir, plain.dir]), children)).toEqual({ m: tool, dependent: '/dependent' })
      // Its dependent not taken through the build step (no build nor patch of its own): nothing links them at a turn.
      expect(linkedAtTurn([tool, plain], new Set([tool.dir, plain.dir]), children)).toBeUndefined()
      // No commands, or neither a build nor a patch (a cached build's row): nothing changes them.
      expect(linkedAtTurn([plain, { ...tool, hasBin: false }], new Set(['/dependent', tool.dir, plain.dir]), children)).toBeUndefined()
      expect(linkedAtTurn([{ ...tool, builds: false }], new Set(['/dependent', tool.dir]), children)).toBeUndefined()
      expect(linkedAtTurn([{ ...tool, builds: false, patchFile: '/p.patch' }], new Set(['/dependent', tool.dir]), children)?.dependent).toBe('/dependent')
    })

    it('anything else failing once a script has run ends the install there too (never handed back to pnpm to run again)', async () => {
      const built = missed('built', { postinstall: 'echo ran >> log' })
      const broken = missed('broken', { postinstall: 'echo ran >> log' }, { hasBin: true })
      const relinkBins = () => { throw new Error('EACCES: the .bin cannot be written') }
      const ended = await buildMissed([built, broken], inOrder(built.dir, broken.dir), { ...opts, relinkBins })
      expect(ended).toMatchObject({ depPath: 'broken@1.0.0', failed: { message: 'EACCES: the .bin cannot be written' } })
      expect(fs.readFileSync(path.join(built.dir, 'log'), 'utf8')).toBe('ran\n')
      expect(fs.existsSync(path.join(broken.dir, 'package.json'))).toBe(true)
    })

    it('an optional package that fails and cannot be skipped (an error removing or recording it): the install ends with that error, no build started after it', async () => {
      const optional = missed('opt', { postinstall: 'exit 2' }, { optional: true })
      const after = missed('after', { postinstall: 'echo ran >> log' })
      const log = (_level: string, name: string): void => { if (name === 'pnpm:skipped-optional-dependency') throw new Error('EACCES: cannot record it') }
      const ended = await buildMissed([optional, after], inOrder(optional.dir, after.dir), { ...opts, log })
      expect(ended).toMatchObject({ depPath: 'opt@1.0.0', failed: { message: 'EACCES: cannot record it' } })
      expect(fs.existsSync(path.join(after.dir, 'log'))).toBe(false)
    })

    it('a result that cannot be recorded in the store: pnpm\'s warning, and the install goes on', async () => {
      const one = missed('one', { postinstall: 'echo ran >> log' })
      const two = missed('two', { postinstall: 'echo ran >> log' })
      warnings.length = 0
      // No store there: the upload fails.
      expect(await buildMissed([one, two], inOrder(one.dir, two.dir), { ...opts, storeDir: path.join(one.dir, 'package.json', 'store') })).toEqual({ skippedOptional: [] })
      expect(warnings).toEqual([`An error occurred while uploading ${one.dir}`, `An error occurred while uploading ${two.dir}`])
      expect(fs.readFileSync(path.join(two.dir, 'log'), 'utf8')).toBe('ran\n')
    })

    /** A patch that adds `binding.gyp`. */
    const gypPatch = (dir: string): string => {
      const patchFile = path.join(path.dirname(dir), 'gyp.patch')
      fs.writeFileSync(patchFile, 'diff --git a/binding.gyp b/binding.gyp\nnew file mode 100644\n--- /dev/null\n+++ b/binding.gyp\n@@ -0,0 +1 @@\n+{}\n')
      return patchFile
    }
    const gypOpts = () => ({ ...opts, ctx: { ...ctx, pnpm: { ...ctx.pnpm, nodeGypBinDir: fakeGypShims() } } })

    it('a binding.gyp without an install script of its own, as it comes or made so by its patch: built natively with `node-gyp rebuild`, as pnpm builds it', async () => {
      const shipped = missed('shipped-gyp', {})
      fs.writeFileSync(path.join(shipped.dir, 'binding.gyp'), '{}')
      const patched = missed('patched-gyp', { postinstall: 'echo ran >> log' }, { keys: { key: 'k', patched: 'p' } })
      const ended = await buildMissed([shipped, { ...patched, patchFile: gypPatch(patched.dir) }], inOrder(shipped.dir, patched.dir), gypOpts())
      expect(ended).toEqual({ skippedOptional: [] })
      for (const dir of [shipped.dir, patched.dir]) expect(fs.readFileSync(path.join(dir, 'gyp.txt'), 'utf8')).toBe('rebuild install node-gyp rebuild\n')
      expect(fs.readFileSync(path.join(patched.dir, 'log'), 'utf8')).toBe('ran\n')
    })

    it('a binding.gyp opted out of (`gypfile: false`): no node-gyp build, and a patch adding one (or a `.hooks` file) does not make the package require a build (pnpm\'s dirRequiresBuild)', async () => {
      const optedOut = missed('opted-out', { postinstall: 'echo ran >> log' })
      const manifest = JSON.parse(fs.readFileSync(path.join(optedOut.dir, 'package.json'), 'utf8'))
      fs.writeFileSync(path.join(optedOut.dir, 'package.json'), JSON.stringify({ ...manifest, gypfile: false }))
      fs.writeFileSync(path.join(optedOut.dir, 'binding.gyp'), '{}')
      // Patched, with no build in its row: pnpm patches it and records the patch alone.
      const patchedOnly = missed('patched-only', {}, { builds: false, keys: { key: 'k', patched: 'p' } })
      const patchedManifest = JSON.parse(fs.readFileSync(path.join(patchedOnly.dir, 'package.json'), 'utf8'))
      fs.writeFileSync(path.join(patchedOnly.dir, 'package.json'), JSON.stringify({ ...patchedManifest, gypfile: false }))
      // A `.hooks` that is a file, not a directory of hooks: no build either.
      fs.writeFileSync(path.join(patchedOnly.dir, '.hooks'), '')
      const ended = await buildMissed([optedOut, { ...patchedOnly, patchFile: gypPatch(patchedOnly.dir) }], inOrder(optedOut.dir, patchedOnly.dir), gypOpts())
      expect(ended).toEqual({ skippedOptional: [] })
      expect(fs.existsSync(path.join(optedOut.dir, 'gyp.txt'))).toBe(false)
      expect(fs.readFileSync(path.join(optedOut.dir, 'log'), 'utf8')).toBe('ran\n')
      expect(fs.existsSync(path.join(patchedOnly.dir, 'binding.gyp'))).toBe(true)
      expect(fs.existsSync(path.join(patchedOnly.dir, 'gyp.txt'))).toBe(false)
    })
  })
  it('pnpm\'s own paths: its entry script, its node-gyp and shims', () => {
    expect(ctx.pnpm.execPath).toBe(path.join(referencePnpmDir, 'bin', 'pnpm.mjs'))
    // Where pnpm's bundle really is (Node runs it from its real path).
    expect(ctx.pnpm.nodeGypBinDir).toBe(path.join(fs.realpathSync(referencePnpmDir), 'dist', 'node-gyp-bin'))
    expect(fs.existsSync(ctx.pnpm.nodeGyp!)).toBe(true)
    expect(pnpmPaths('/usr/bin/node')).toBeUndefined()
  })
})

describe('runBuildScripts under shellEmulator: pnpm\'s @yarnpkg/shell, as its lifecycle runner calls it', () => {
  const records: Array<Record<string, unknown>> = []
  const ctx = { pnpm: { execPath: 'pnpm', nodeGypBinDir: '/none' }, processEnv: process.env, cwd: '/', extraEnv: { npm_command: 'install' }, initCwd: '/p', unsafePerm: true, extraBinPaths: [], shellEmulator: true, lifecycle: (r: Record<string, unknown>) => records.push(r) }
  const pkg = (scripts: Record<string, string>): string => {
    const dir = path.join(freshDir('emulated-scripts'), 'node_modules', 'x')
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', scripts }))
    return dir
  }
  it('the emulator pnpm bundles: @yarnpkg/shell and the packages it parses and spawns with, at the versions in pnpm\'s bundle', () => {
    const bundle = fs.readFileSync(path.join(referencePnpmDir, 'dist', 'pnpm.mjs'), 'utf8')
    const shellDir = path.dirname(createRequire(import.meta.url).resolve('@yarnpkg/shell/package.json'))
    const from = createRequire(path.join(shellDir, 'package.json'))
    for (const name of ['@yarnpkg/shell', '@yarnpkg/parsers', '@yarnpkg/fslib', 'cross-spawn', 'fast-glob', 'micromatch']) {
      const version = from(`${name}/package.json`).version
      expect(bundle, name).toContain(`/links/${name.startsWith('@') ? name : `@/${name}`}/${version}/`)
    }
  })
  it('in the package\'s directory with the script\'s environment; shell syntax as the emulator reads it (its own echo); each line of output logged, a last one without a line break never (pnpm never ends the streams)', async () => {
    const dir = pkg({ install: 'echo -n "$npm_lifecycle_event" > out.txt && node -e "process.stdout.write(\'one\\ntwo\')" && echo err >&2' })
    records.length = 0
    expect(await runBuildScripts(dir, readBuildManifest(dir) as any, ctx)).toBe(true)
    // sh's echo takes -n as an option; the emulator's prints it.
    expect(fs.readFileSync(path.join(dir, 'out.txt'), 'utf8')).toBe('-n install\n')
    expect(records.filter((r) => r.line != null)).toEqual(expect.arrayContaining([
      { depPath: dir, line: 'one', stage: 'install', stdio: 'stdout', wd: dir },
      { depPath: dir, line: 'err', stage: 'install', stdio: 'stderr', wd: dir },
    ]))
    expect(records.filter((r) => r.line != null)).toHaveLength(2)
    expect(records.at(-1)).toEqual({ depPath: dir, exitCode: 0, optional: false, stage: 'install', wd: dir })
  })
  it('a failing stage: ELIFECYCLE with pnpm\'s message, the next stage not run; a script the emulator cannot parse fails with its message, no exit logged', async () => {
    const dir = pkg({ install: 'exit 3', postinstall: 'echo post >> log' })
    records.length = 0
    const failed = await runBuildScripts(dir, readBuildManifest(dir) as any, ctx).catch((err: unknown) => err)
    expect(failed).toBeInstanceOf(LifecycleError)
    expect((failed as LifecycleError).code).toBe('ELIFECYCLE')
    expect((failed as Error).message).toBe('x@1.0.0 install: `exit 3`\nExit status 3')
    expect(records.at(-1)).toEqual({ depPath: dir, exitCode: 3, optional: false, stage: 'install', wd: dir })
    expect(fs.existsSync(path.join(dir, 'log'))).toBe(false)
    const broken = pkg({ install: 'echo (' })
    records.length = 0
    const unparsed = await runBuildScripts(broken, readBuildManifest(broken) as any, ctx).catch((err: unknown) => err)
    expect((unparsed as Error).message).toMatch(/^x@1\.0\.0 install: `echo \(`\n\S/)
    expect(records.filter((r) => r.exitCode != null)).toEqual([])
  })
})

describe('shellBody: the interrupt trap before a script, for the shells pnpm gives it', () => {
  const pnpmSelectShell = pnpmFunction<(scriptShell: string | undefined, platform: string, comspec: undefined) => object>('selectShell')
  const pnpmScriptBody = pnpmFunction<(shell: object, command: string) => string>('scriptBody')
  it.each(['sh', '/bin/sh', '/bin/bash', '/usr/bin/zsh', '/bin/dash', '/usr/bin/ksh', '/opt/BASH.exe', '/usr/bin/fish', 'pwsh', '/usr/bin/env'])('%s', (shell) => {
    const trapped = (body: string): boolean => body !== 'node build.js'
    expect(trapped(shellBody(shell, 'node build.js'))).toBe(trapped(pnpmScriptBody(pnpmSelectShell(shell, 'linux', undefined), 'node build.js')))
    expect(shellBody(shell, 'node build.js').endsWith('node build.js')).toBe(true)
  })
})

describe('lineSplitter: a script\'s output in lines, as pnpm\'s byline gives them', () => {
  it('at any line break, across chunks (a CRLF and a character split too), empty lines left out', () => {
    const lines: string[] = []
    const split = lineSplitter((l) => lines.push(l))
    const text = Buffer.from('a\r\n\nb\rc\u2028d é\ne')
    // Cut inside the CRLF, the U+2028 and the é.
    for (const [from, to] of [[0, 2], [2, 8], [8, 13], [13, text.length]]) split.push(text.subarray(from, to))
    split.end()
    expect(lines).toEqual(['a', 'b', 'c', 'd é', 'e'])
  })
  it('the lifecycle records of a build: its start, each line of output, its exit', async () => {
    const dir = path.join(freshDir('build-records'), 'node_modules', 'x')
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', scripts: { install: 'echo one; echo two >&2' } }))
    const records: unknown[] = []
    const ctx = { pnpm: { execPath: 'pnpm', nodeGypBinDir: '/none' }, processEnv: process.env, cwd: '/', extraEnv: {}, initCwd: '/p', unsafePerm: true, extraBinPaths: [], lifecycle: (r: unknown) => records.push(r) }
    await runBuildScripts(dir, readBuildManifest(dir) as any, ctx)
    expect(records[0]).toEqual({ depPath: dir, optional: false, script: 'echo one; echo two >&2', stage: 'install', wd: dir })
    expect(records.slice(1, 3)).toEqual(expect.arrayContaining([{ depPath: dir, line: 'one', stage: 'install', stdio: 'stdout', wd: dir }, { depPath: dir, line: 'two', stage: 'install', stdio: 'stderr', wd: dir }]))
    expect(records[3]).toEqual({ depPath: dir, exitCode: 0, optional: false, stage: 'install', wd: dir })
  })
})

describe('buildSettingsUnsupported', () => {
  const ok = { sideEffectsCacheWrite: true, unsafePerm: true, extraEnv: { a: 'b' }, extraBinPaths: [] }
  it.each([
    [{ sideEffectsCacheWrite: false }, 'the side-effects cache is not written'],
    // Under vitest: not pnpm's entry script.
    [{}, 'a pnpm not started by its entry script'],
    [{ scriptShell: '/no/such/shell' }, 'a scriptShell that is not there (/no/such/shell)'],
    [{ scriptShell: 'no-such-shell-here' }, 'a scriptShell that is not there (no-such-shell-here)'],
    [{ scriptsPrependNodePath: true }, 'scriptsPrependNodePath'],
    [{ unsafePerm: undefined }, 'unsafePerm not known'],
  ])('%j: %s', (settings, why) => {
    expect(buildSettingsUnsupported({ ...ok, ...settings }, NEWEST)).toBe(why)
  })
  it('pnpm\'s shell emulator: run as pnpm runs it (the emulator when pnpm\'s useShellEmulator says so)', () => {
    const pnpmUsesEmulator = pnpmFunction<(shellEmulator: unknown, scriptShell: unknown) => boolean>('useShellEmulator')
    for (const shellEmulator of [true, false, undefined]) {
      const config = { ...ok, shellEmulator }
      expect(buildSettingsReason(config, NEWEST)).toBeUndefined()
      const ctx = buildContext(config, '/p', '/p/node_modules/.pnpm', { execPath: 'pnpm', nodeGypBinDir: '/none' })
      expect(ctx.shellEmulator).toBe(pnpmUsesEmulator(shellEmulator, undefined))
    }
  })
  it('a scriptShell that is there (a path, or a name on PATH): run with it, not the emulator, as pnpm runs it', () => {
    const pnpmUsesEmulator = pnpmFunction<(shellEmulator: unknown, scriptShell: unknown) => boolean>('useShellEmulator')
    for (const scriptShell of ['/bin/bash', 'bash']) {
      const config = { ...ok, shellEmulator: true, scriptShell }
      expect(buildSettingsReason(config, NEWEST)).toBeUndefined()
      const ctx = buildContext(config, '/p', '/p/node_modules/.pnpm', { execPath: 'pnpm', nodeGypBinDir: '/none' })
      expect(ctx.shellEmulator).toBe(pnpmUsesEmulator(true, scriptShell))
      expect(ctx.scriptShell).toBe(scriptShell)
    }
  })
  it('another release than the one checked against stock', () => {
    expect(buildSettingsUnsupported(ok, '11.28.0')).toBe(`pnpm 11.28.0 runs the builds itself (the native install runs them only under pnpm 11.28.1 to ${NEWEST}, whose build step it reproduces)`)
  })
  it('packages patched on every install (no script runs): under any release whose side-effects upload is written here, with the settings any build needs', () => {
    const release = (version: string) => PNPM_RELEASES.find((r) => r.version === version)!
    for (const version of ['11.7.0', '11.9.0', '11.22.0', '11.28.0', '11.28.4', '11.28.10', NEWEST]) expect(patchSettingsReason(ok, release(version)), version).toBeUndefined()
    // A release whose upload is not written here (none in the table today): left to pnpm, saying where it is.
    expect(patchSettingsReason(ok, { version: '11.28.4', buildUpload: undefined })).toMatch(new RegExp(`^patches applied under pnpm 11\\.28\\.4, whose side-effects upload the native install does not write \\(it does under 11\\.7\\.0 to .*${NEWEST.replaceAll('.', '\\.')}\\)$`))
    expect(patchSettingsReason({ ...ok, sideEffectsCacheWrite: false }, release('11.9.0'))).toBe('the side-effects cache is not written')
  })
})

describe('readBuildManifest: what pnpm\'s reader (normalize-package-data) gives a build', () => {
  const read = (manifest: Record<string, unknown>) => {
    const dir = freshDir('build-manifest')
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(manifest))
    return readBuildManifest(dir)
  }
  it('a bin given as a string: a command named after the package, without its scope', () => {
    expect((read({ name: '@s/tool', version: '1.0.0', bin: 'cli.js' }) as any).bin).toEqual({ tool: 'cli.js' })
  })
  it('no scripts: an empty set (a patched package that does not build)', () => {
    expect((read({ name: 'a', version: '1.0.0' }) as any).scripts).toEqual({})
  })
  it.each([
    [{ name: ' a', version: '1.0.0' }],
    [{ name: 'a', version: 'v1.0.0' }],
    [{ name: 'a', version: '1.0.0', scripts: { install: 1 } }],
  ])('one its reader would change: left to pnpm, %j', (manifest) => {
    expect(typeof read(manifest)).toBe('string')
  })
})
