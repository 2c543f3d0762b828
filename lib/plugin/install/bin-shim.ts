/**
 * The shell shim pnpm 11 writes for a package's command on POSIX systems, byte for byte
 * (pnpm rewrites a shim that differs, and the e2e tests compare every shim with stock pnpm's):
 * the prelude, the `NODE_PATH` it exports, a block that runs the target with the program its
 * shebang (or extension) names, and a last line naming the target. docs/native-install.md links
 * pnpm's source.
 */
import path from 'node:path'
import { shShimPrelude, type ShimBase, type ShimHelpers } from './sh-shim-prelude.js'

/** A shebang: `#!prog args` or `#!/usr/bin/env [-S] prog args`. */
const SHEBANG = /^#!\s*(?:\/usr\/bin\/env(?:\s+-S)?\s*)?([^ \t]+)(.*)$/
/** The program for a target without a shebang. */
const PROGRAM_BY_EXTENSION = new Map([['.js', 'node'], ['.cjs', 'node'], ['.mjs', 'node'], ['.cmd', 'cmd'], ['.bat', 'cmd'], ['.ps1', 'pwsh'], ['.sh', 'sh']])

/** A shim this does not write as pnpm would: the native install leaves the whole install to pnpm. */
export class UnsupportedShim extends Error {}

const quote = (text: string): string => `'${text.replaceAll("'", "'\\''")}'`

/**
 * How a release quotes the target and `NODE_PATH` in a shim: each path as a word of its own
 * in single quotes (11.28.11), or inside the double quotes of `"$basedir_abs/<target>"` and
 * `"<dirs>"`, the text as it is (11.28.3 to 11.28.10; the rest of the shim is the same).
 */
export type ShimQuoting = 'single' | 'double'

/**
 * Whose shims a release writes: pnpm's own cmd-shim (`OwnShimWriter`: `ShimQuoting`,
 * `ShimHelpers` and `ShimBase` tell its forms), or `@zkochan/cmd-shim`: 9.0.7 (11.21.0 to
 * 11.27.0), 9.0.6 (11.19.0 and 11.20.0).
 */
export type ShimWriter = OwnShimWriter | CmdShim9

/**
 * pnpm's own cmd-shim: as from 11.28.0, or as 11.27.1 first bundled it, whose shims have no PATH
 * guard (their helpers run with the caller's PATH) and which, like `@zkochan/cmd-shim`, reads the
 * target first: for one not there yet pnpm warns and writes no shim (no `# cmd-shim-missing-target`).
 */
export type OwnShimWriter = 'pnpm' | 'pnpm 11.27.1'

/** Whether `writer` is pnpm's own cmd-shim, whose shims `shShim` writes. */
export const isOwnShimWriter = (writer: ShimWriter): writer is OwnShimWriter => writer === 'pnpm' || writer === 'pnpm 11.27.1'

/** The `@zkochan/cmd-shim` releases pnpm 11 bundled: they differ in how a shim finds its directory. */
export type CmdShim9 = 'cmd-shim 9.0.6' | 'cmd-shim 9.0.7'

/** The target a shim runs, relative to `$basedir_abs` (or `$basedir_win`), quoted as `quoting` does. */
function quotedTarget (base: string, relativeTarget: string, quoting: ShimQuoting): string {
  return quoting === 'single' ? `"${base}"/${quote(relativeTarget)}` : `"${base}/${relativeTarget}"`
}

/** The `NODE_PATH` lines of a shim, quoted as `quoting` does. */
function nodePathLines (nodePath: string[], quoting: ShimQuoting): string {
  const joined = nodePath.join(':')
  const [alone, before] = quoting === 'single' ? [quote(joined), `${quote(joined)}:"$NODE_PATH"`] : [`"${joined}"`, `"${joined}:$NODE_PATH"`]
  return `if [ -z "$NODE_PATH" ]; then\n  export NODE_PATH=${alone}\nelse\n  export NODE_PATH=${before}\nfi\n`
}

/**
 * What a shim runs its target with: a program and its arguments, or none (the target itself);
 * `missing` (the error reading it) when the target does not exist yet (a workspace project's
 * bin before its build).
 */
export interface Runtime { program: string | null, args: string, missing?: string }

/** The program a target runs with, and its arguments, as pnpm reads them from its text. */
export function runtimeOf (target: string, text: string): Runtime {
  const shebang = SHEBANG.exec(text.trim().split(/\r*\n/)[0])
  if (shebang != null) return { program: shebang[1], args: shebang[2] }
  const program = PROGRAM_BY_EXTENSION.get(path.extname(target).toLowerCase()) ?? null
  return { program, args: program === 'cmd' ? '/C' : '' }
}

function execBlock (program: string | null, args: string, relativeTarget: string, quoting: ShimQuoting, base: ShimBase): string {
  const target = quotedTarget(`$${base}`, relativeTarget, quoting)
  // No program: pnpm leaves the argument slots of its exec line empty.
  if (program == null) return `exec ${target}   "$@"\nexit $?\n`
  if (program === 'cmd' || program === 'cmd.exe' || /\.exe$/i.test(program)) throw new UnsupportedShim(`a shim for ${program}`)
  const prog = program.split('\\').join('/')
  const targetWin = quotedTarget('$basedir_win', relativeTarget, quoting)
  const long = `"$basedir/${prog}"`
  const longExe = `"$basedir/${prog}.exe"`
  return `if [ -n "$exe" ] && [ -x ${longExe} ]; then
  exec ${longExe} ${args} ${targetWin} "$@"
elif [ -x ${long} ]; then
  exec ${long} ${args} ${target} "$@"
${base === 'basedir_abs' ? `elif [ -n "$msys" ] && command -v ${prog} >/dev/null 2>&1; then\n  exec ${prog} ${args} ${targetWin} "$@"\n` : ''}elif command -v ${prog} >/dev/null 2>&1; then
  exec ${prog} ${args} ${target} "$@"
elif [ -n "$exe" ] && command -v ${prog}.exe >/dev/null 2>&1; then
  exec ${prog}.exe ${args} ${targetWin} "$@"
else
  exec ${prog} ${args} ${target} "$@"
fi
`
}

/**
 * The shim in a `.bin` directory whose real path is `shimDir` (the directory as named, for a
 * release whose shims take their target from `$basedir`), for `target` (absolute, as pnpm
 * names it: through the links it was found by), which runs with `runtime`. `nodePath`: the
 * directories its `NODE_PATH` lists, or none. `quoting`, `helpers`, `base` and `writer`: the
 * release's (`ShimQuoting`, `ShimHelpers`, `ShimBase`, `OwnShimWriter`).
 */
export function shShim (target: string, shimDir: string, runtime: Runtime, nodePath: string[] | undefined, quoting: ShimQuoting = 'single', helpers: ShimHelpers = 'run_helper', base: ShimBase = 'basedir_abs', writer: OwnShimWriter = 'pnpm'): string {
  const relativeTarget = path.relative(shimDir, target)
  if (path.isAbsolute(relativeTarget)) throw new UnsupportedShim(`${target} has no relative path from ${shimDir}`)
  // The double-quoting releases turn a backslash in the target into a slash.
  if (quoting === 'double' && relativeTarget.includes('\\')) throw new UnsupportedShim(`${target}: a backslash in a shim's target`)
  const { program, args } = runtime
  // 11.27.1's writer reads the target first, as `@zkochan/cmd-shim` does: no shim for one not there.
  if (writer === 'pnpm 11.27.1' && runtime.missing != null) throw new UnsupportedShim(`${target}: a command whose file is not there yet`)
  let sh = shShimPrelude(helpers, base, writer === 'pnpm')
  if (nodePath != null && nodePath.length > 0) sh += nodePathLines(nodePath, quoting)
  sh += execBlock(program, args, relativeTarget, quoting, base)
  // pnpm marks a shim written before its target exists, to write it again once it does.
  if (runtime.missing != null) sh += '# cmd-shim-missing-target\n'
  return `${sh}# cmd-shim-target=${target}\n`
}

/**
 * How a `@zkochan/cmd-shim` shim sets `basedir`: 9.0.6 from `$0` as it is, 9.0.7 from `$0`
 * resolved through symlinks by name.
 */
const CMD_SHIM_9_BASEDIR: Record<CmdShim9, string> = {
  'cmd-shim 9.0.6': `basedir=$(dirname "$(echo "$0" | sed -e 's,\\\\,/,g')")
`,
  'cmd-shim 9.0.7': `# Resolve $0 through symlinks so basedir is the shim's real directory.
# Cap hops at the kernel's ELOOP limit so a cycle cannot hang the shim.
link="$0"
hops=0
while [ -L "$link" ] && [ "$hops" -lt 40 ]; do
  hops=$((hops+1))
  target=$(readlink "$link")
  case "$target" in
    /*) link="$target" ;;
    *)  link="$(dirname "$link")/$target" ;;
  esac
done
basedir=$(dirname "$(echo "$link" | sed -e 's,\\\\,/,g')")
`,
}

/** What every `@zkochan/cmd-shim` 9 shim has after its `basedir` line. */
const CMD_SHIM_9_PLATFORMS = `basedir_win="$basedir"
exe=""
msys=""

case \`uname -a\` in
  *CYGWIN*|*MINGW*|*MSYS*)
    if command -v cygpath > /dev/null 2>&1; then
      basedir_win=\`cygpath -w "$basedir"\`
    fi
    exe=".exe"
    msys="true"
  ;;
  *WSL2*)
    if command -v wslpath > /dev/null 2>&1; then
      basedir_win="$(wslpath -w "$basedir" 2> /dev/null)"
      if [ $? -ne 0 ] || [ -z "$basedir_win" ]; then
        basedir_win="$basedir"
      else
        exe=".exe"
      fi
    fi
  ;;
esac

`

/**
 * The shell shim pnpm 11.19.0 to 11.27.0 write for `target` into the `.bin` directory `shimDir`
 * (the `@zkochan/cmd-shim` `writer` they bundle; on POSIX only this file): its own prelude, the
 * `NODE_PATH` in double quotes, the target from `$basedir` (the directory the shim was found
 * in, from 9.0.7 with symlinks resolved by name), and a last line naming the target. A program run through
 * `cmd` or an `.exe` is not written here.
 */
export function cmdShim9ShShim (target: string, shimDir: string, runtime: Runtime, nodePath: string[] | undefined, writer: CmdShim9): string {
  // It reads the target first: for one not there yet pnpm warns and writes nothing.
  if (runtime.missing != null) throw new UnsupportedShim(`${target}: a command whose file is not there yet`)
  const relativeTarget = path.relative(shimDir, target).split('\\').join('/')
  if (path.isAbsolute(relativeTarget)) throw new UnsupportedShim(`${target} has no relative path from ${shimDir}`)
  const { program, args } = runtime
  let sh = `#!/bin/sh\n${CMD_SHIM_9_BASEDIR[writer]}${CMD_SHIM_9_PLATFORMS}`
  if (nodePath != null && nodePath.length > 0) sh += nodePathLines(nodePath, 'double')
  const quoted = `"$basedir/${relativeTarget}"`
  if (program == null) sh += `exec ${quoted}   "$@"\nexit $?\n`
  else if (program === 'cmd' || program === 'cmd.exe' || /\.exe$/i.test(program)) throw new UnsupportedShim(`a shim for ${program}`)
  else {
    const prog = program.split('\\').join('/')
    const quotedWin = `"$basedir_win/${relativeTarget}"`
    sh += `if [ -n "$exe" ] && [ -x "$basedir/${prog}.exe" ]; then
  exec "$basedir/${prog}.exe" ${args} ${quotedWin} "$@"
elif [ -x "$basedir/${prog}" ]; then
  exec "$basedir/${prog}" ${args} ${quoted} "$@"
elif command -v ${prog} >/dev/null 2>&1; then
  exec ${prog} ${args} ${quoted} "$@"
elif [ -n "$exe" ] && command -v ${prog}.exe >/dev/null 2>&1; then
  exec ${prog}.exe ${args} ${quotedWin} "$@"
else
  exec ${prog} ${args} ${quoted} "$@"
fi
`
  }
  return `${sh}# cmd-shim-target=${target}\n`
}

/**
 * What pnpm adds to a shim's `NODE_PATH` for a target in the real directory `dir`: the
 * `node_modules` of the package it is in and the `node_modules` that package sits in, then
 * `extra` (the private hoisting directory).
 */
export function shimNodePath (dir: string, extra: string[]): string[] {
  const paths: string[] = []
  for (let current = dir; ; current = path.dirname(current)) {
    if (path.basename(current) === 'node_modules' && path.basename(path.dirname(current)) !== 'node_modules') {
      const segments = path.relative(current, dir).split(path.sep).filter((s) => s !== '')
      const pkgDir = segments.length === 0
        ? undefined
        : segments[0].startsWith('@')
          ? (segments.length > 1 ? path.join(current, segments[0], segments[1]) : undefined)
          : path.join(current, segments[0])
      if (pkgDir != null) paths.push(path.join(pkgDir, 'node_modules'))
      paths.push(current)
      break
    }
    if (path.dirname(current) === current) break
  }
  return [...new Set([...paths, ...extra])]
}
