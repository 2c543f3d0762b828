/**
 * pnpm's own functions, read out of the bundle of the `pnpm` devDependency (the authority for
 * behaviour) at test time, so that a rule the native install writes itself is checked against
 * pnpm's code running, not against expectations someone wrote down once.
 *
 * A function is taken with whatever it turns out to use: it is called, and each name it finds
 * undefined is looked up in the bundle (a top-level `function`, or a module variable's
 * assignment) and added, until the call goes through. The bundle's imports (`node:path` as
 * `path11`, …) are given by the caller, by the names the bundle gives them; when pnpm is
 * upgraded, a missing one fails loudly with its name.
 */
import fs from 'node:fs'
import path from 'node:path'
import vm from 'node:vm'
import { referencePnpmDir } from './pnpm-cli.js'

const bundles = new Map<string, string>()
/** The bundle of the pnpm package at `pnpmDir`, read once. */
function bundleOf (pnpmDir: string): string {
  let text = bundles.get(pnpmDir)
  if (text == null) bundles.set(pnpmDir, text = fs.readFileSync(path.join(pnpmDir, 'dist', 'pnpm.mjs'), 'utf8'))
  return text
}

/** The end of the statement starting at `from`: the first `;` outside brackets, strings, templates, comments and regexes' classes. */
function statementEnd (text: string, from: number): number {
  const closers: string[] = []
  for (let i = from; i < text.length; i++) {
    const c = text[i]
    const inTemplate = closers.at(-1) === '`'
    if (inTemplate) {
      if (c === '\\') i++
      else if (c === '`') closers.pop()
      else if (c === '$' && text[i + 1] === '{') { closers.push('}'); i++ }
      continue
    }
    // A comment (a line comment after white space, not the end of a regex) may hold a lone quote.
    if (c === '/' && text[i + 1] === '/' && /\s/.test(text[i - 1])) i = text.indexOf('\n', i)
    else if (c === '/' && text[i + 1] === '*') i = text.indexOf('*/', i) + 1
    else if (c === '"' || c === "'") {
      for (i++; text[i] !== c; i++) if (text[i] === '\\') i++
    } else if (c === '`') closers.push('`')
    else if (c === '(' || c === '[' || c === '{') closers.push(c === '(' ? ')' : c === '[' ? ']' : '}')
    else if (c === ')' || c === ']' || c === '}') closers.pop()
    else if (c === ';' && closers.length === 0) return i
  }
  throw new Error('unterminated statement in pnpm\'s bundle')
}

const escaped = (name: string): string => name.replace(/\$/g, '\\$')

/** The source that defines `name` in the bundle, as a statement of its own. */
function definitionOf (name: string, pnpmDir: string): string {
  const text = bundleOf(pnpmDir)
  const fn = new RegExp(`\\n(?:async )?function\\*? ?${escaped(name)}\\(`).exec(text)
  if (fn != null) return text.slice(fn.index + 1, text.indexOf('\n}\n', fn.index) + 2)
  const assignment = new RegExp(`\\n\\s*(?:var |let |const )?${escaped(name)} = `).exec(text)
  if (assignment == null) throw new Error(`${name} is not defined in pnpm's bundle`)
  const start = assignment.index + assignment[0].length
  // A bundled module's wrapper (whose code this scanner does not read) ends where esbuild closes it.
  const end = /^__commonJS\(\{\n/.test(text.slice(start, start + 13)) ? text.indexOf('\n});\n', start) + 3 : statementEnd(text, start)
  // Assigned when the definitions are set up (`setUp`), once what it needs is assigned.
  return `var ${name}; ${SET_UP}.push(() => { ${name} = ${text.slice(start, end)}; });`
}

/** The list of the module variables' assignments, run by `setUp` before the function is returned. */
const SET_UP = '__setUp'

/**
 * Runs the module variables' assignments in an order that works: one that fails for want of
 * another's value (a `TypeError`) is tried again once the others have run; a name the bundle
 * has not given yet (a `ReferenceError`) is thrown, to be looked up.
 */
const setUp = `
for (let pending = ${SET_UP}; pending.length > 0;) {
  const failed = []
  let error
  for (const assign of pending) {
    try { assign() } catch (err) { if (err instanceof ReferenceError) throw err; failed.push(assign); error = err }
  }
  if (failed.length === pending.length) throw error
  pending = failed
}`

/**
 * pnpm's function `name`, callable; `imports`: the bundle's imported modules by their names in
 * it (`{ path11: path }`); `uses`: names it uses where a `try` would swallow their absence.
 */
export function pnpmFunction<F extends (...args: never[]) => unknown> (name: string, imports: Record<string, unknown> = {}, uses: string[] = [], pnpmDir = referencePnpmDir): F {
  const definitions = new Map<string, string>([name, ...uses].map((n) => [n, definitionOf(n, pnpmDir)]))
  let built: ((...args: unknown[]) => unknown) | undefined
  const build = (): ((...args: unknown[]) => unknown) => {
    const body = `const ${SET_UP} = [];\n${[...definitions.values()].join('\n')}\n${setUp}\nreturn ${name}`
    return vm.compileFunction(body, Object.keys(imports))(...Object.values(imports)) as (...args: unknown[]) => unknown
  }
  /** The missing name `err` reports, once added; else `err` is pnpm's to throw. */
  const learn = (err: unknown): void => {
    const missing = err instanceof ReferenceError ? /^(\S+) is not defined$/.exec(err.message)?.[1] : undefined
    if (missing == null || definitions.has(missing) || missing in imports) throw err
    definitions.set(missing, definitionOf(missing, pnpmDir))
    built = undefined
  }
  const call = (args: unknown[]): unknown => {
    for (;;) {
      try {
        // Building runs the module variables' assignments, which may want a name too.
        built ??= build()
        const result = built(...args)
        // An async function's missing name comes as a rejection.
        return result instanceof Promise ? result.catch((err: unknown) => { learn(err); return call(args) }) : result
      } catch (err) {
        learn(err)
      }
    }
  }
  return ((...args: unknown[]) => call(args)) as F
}
