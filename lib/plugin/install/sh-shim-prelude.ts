/**
 * The start of every shell shim pnpm 11.28.11 writes into a `.bin` directory (its
 * `cmd-shim`, for a target given by a relative path): it resolves the shim through symlinks to
 * its real directory, with system helpers only, and detects Cygwin, MSYS and WSL. Shims must be
 * byte-identical to pnpm's (pnpm compares them to decide whether to rewrite them), so this is
 * pnpm's output reproduced as data; the e2e tests compare every shim with stock pnpm's.
 */
export const SH_SHIM_PRELUDE = `#!/bin/sh
# Resolve $0 through symlinks so basedir is the shim's real directory.
# Cap hops at the kernel's ELOOP limit so a cycle cannot hang the shim.
#
# A shim runs with node_modules/.bin at the front of PATH, so readlink, sed,
# uname, and printf go through \`command -p\`, which searches the system default
# path instead. A dependency's bin cannot stand in for one of them and take over
# the shim before it reaches its target. Directories come from \`\${link%/*}\`,
# which needs no helper at all.
#
# A helper the default path lacks, as in a Nix build sandbox, comes from PATH
# instead, with node_modules and relative entries dropped from it.
caller_path_set=\${PATH+set}
caller_path=\${PATH-}
helper_path=
rest=$caller_path:
while [ -n "$rest" ]; do
  dir=\${rest%%:*}
  rest=\${rest#*:}
  case "$dir" in
    */node_modules/*|*/node_modules) ;;
    /*) helper_path=\${helper_path:+$helper_path:}$dir ;;
  esac
done
# An empty PATH searches the current directory.
PATH=\${helper_path:-/}
# A helper comes from PATH only when the default path lacks it and PATH has it.
# The bash 3.2 that macOS ships as sh answers \`command -p -v\` from PATH.
run_helper() {
  if command -p -v "$1" >/dev/null 2>&1 || ! command -v "$1" >/dev/null 2>&1; then command -p "$@"; else command "$@"; fi
}
link="$0"
# \`\${link%/*}\` needs a separator to strip. A bare name came from a PATH lookup
# and stands for a file in the current directory.
case "$link" in
  */*|*\\\\*) ;;
  *) link="./$link" ;;
esac
hops=0
while [ -L "$link" ] && [ "$hops" -lt 40 ]; do
  hops=$((hops+1))
  target=$(run_helper readlink "$link")
  case "$target" in
    /*) link="$target" ;;
    *)  link="\${link%/*}/$target" ;;
  esac
done
basedir=$(run_helper printf '%s\\n' "$link" | run_helper sed -e 's,\\\\,/,g')
basedir="\${basedir%/*}"
basedir_abs=$(CDPATH= cd -P -- "$basedir" && pwd -P) || exit $?
basedir="$basedir_abs"
basedir_win="$basedir"
exe=""
msys=""

case \`run_helper uname -a\` in
  *CYGWIN*|*MINGW*|*MSYS*)
    if converted=$(command -p cygpath -w "$basedir" 2>/dev/null) && [ -n "$converted" ]; then
      basedir_win="$converted"
    elif command -v cygpath > /dev/null 2>&1; then
      basedir_win=\`cygpath -w "$basedir"\`
    fi
    exe=".exe"
    msys="true"
  ;;
  *WSL2*)
    if converted=$(command -p wslpath -w "$basedir" 2>/dev/null) && [ -n "$converted" ]; then
      basedir_win="$converted"
      exe=".exe"
    elif command -v wslpath > /dev/null 2>&1; then
      basedir_win="$(wslpath -w "$basedir" 2> /dev/null)"
      if [ $? -ne 0 ] || [ -z "$basedir_win" ]; then
        basedir_win="$basedir"
      else
        exe=".exe"
      fi
    fi
  ;;
esac
if [ -n "$caller_path_set" ]; then PATH=$caller_path; else unset PATH; fi

`

/**
 * How a release's prelude runs the system helpers: through its `run_helper` function, which
 * falls back to PATH where the default path lacks one (from 11.28.3), or `command -p` itself
 * (11.28.1 and 11.28.2, whose comment says how `command -p` searches on Nix instead).
 */
export type ShimHelpers = 'run_helper' | 'command -p'

/** `text` with `from` replaced by `to` once; `from` must be there (this file's prelude is the source). */
function replacedOnce (text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the shim prelude has no ${JSON.stringify(from)}`)
  return text.replace(from, to)
}

const RUN_HELPER_COMMENT = '# A helper the default path lacks, as in a Nix build sandbox, comes from PATH\n# instead, with node_modules and relative entries dropped from it.\n'
const COMMAND_P_COMMENT = '# Where no default path is compiled in, as on Nix, `command -p` searches PATH\n# instead, so the helpers run with node_modules and relative entries dropped from\n# PATH.\n'
const RUN_HELPER_FUNCTION = '# A helper comes from PATH only when the default path lacks it and PATH has it.\n# The bash 3.2 that macOS ships as sh answers `command -p -v` from PATH.\nrun_helper() {\n  if command -p -v "$1" >/dev/null 2>&1 || ! command -v "$1" >/dev/null 2>&1; then command -p "$@"; else command "$@"; fi\n}\n'

/**
 * Where a release's shims take their target from: `$basedir_abs`, the shim's directory with
 * every symlink resolved (`cd -P`, from 11.28.1), or `$basedir` as the prelude found it (11.28.0,
 * whose shims also have no MSYS branch of their own for a program on PATH).
 */
export type ShimBase = 'basedir_abs' | 'basedir'

/** The lines that resolve the shim's directory with `cd -P` (from 11.28.1). */
const BASEDIR_ABS_LINES = 'basedir_abs=$(CDPATH= cd -P -- "$basedir" && pwd -P) || exit $?\nbasedir="$basedir_abs"\n'

/** The line that ends the PATH guard: from it on the helpers run with the PATH it made. */
// eslint-disable-next-line no-template-curly-in-string -- shell text, not a template
const GUARD_LAST_LINE = 'PATH=${helper_path:-/}\n'

/**
 * The PATH guard (from 11.28.0): the lines that drop node_modules and relative entries from PATH
 * before the helpers run, and the line that gives the caller's PATH back after them.
 */
const PATH_GUARD = SH_SHIM_PRELUDE.slice(SH_SHIM_PRELUDE.indexOf('caller_path_set='), SH_SHIM_PRELUDE.indexOf(GUARD_LAST_LINE) + GUARD_LAST_LINE.length)
const PATH_GIVEN_BACK = 'if [ -n "$caller_path_set" ]; then PATH=$caller_path; else unset PATH; fi\n'

/** The older releases' preludes, made the first time one of their shims is written (never at load). */
const olderPreludes = new Map<string, string>()

/**
 * The prelude of a release whose helpers run as `helpers` says, its target from `base`, with the
 * PATH guard or without (`guarded`): 11.28.1's and 11.28.2's is the newest's without
 * `run_helper`, each helper called as `command -p <helper>`; 11.28.0's is theirs without the
 * `cd -P` lines; 11.27.1's (pnpm's first own cmd-shim) is 11.28.0's without the PATH guard and
 * the comment on it, the helpers run with the caller's PATH as it is.
 */
export function shShimPrelude (helpers: ShimHelpers, base: ShimBase = 'basedir_abs', guarded = true): string {
  if (helpers === 'run_helper' && base === 'basedir_abs' && guarded) return SH_SHIM_PRELUDE
  const key = `${helpers} ${base} ${guarded}`
  let prelude = olderPreludes.get(key)
  if (prelude == null) {
    prelude = helpers === 'run_helper'
      ? SH_SHIM_PRELUDE
      : replacedOnce(replacedOnce(SH_SHIM_PRELUDE, RUN_HELPER_COMMENT, COMMAND_P_COMMENT), RUN_HELPER_FUNCTION, '').replaceAll('run_helper ', 'command -p ')
    if (base === 'basedir') prelude = replacedOnce(prelude, BASEDIR_ABS_LINES, '')
    // (The comment on the guard is a paragraph of the first comment's: its `#` line goes too.)
    if (!guarded) prelude = replacedOnce(replacedOnce(replacedOnce(prelude, `#\n${helpers === 'run_helper' ? RUN_HELPER_COMMENT : COMMAND_P_COMMENT}`, ''), PATH_GUARD, ''), PATH_GIVEN_BACK, '')
    olderPreludes.set(key, prelude)
  }
  return prelude
}
