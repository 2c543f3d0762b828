/**
 * Argument checks shared by every export. Each throws a `TypeError` whose message names the
 * argument (`ERR_INVALID_ARG_TYPE` for a wrong type, `ERR_INVALID_ARG_VALUE` for a wrong value),
 * before anything crosses into native code.
 */
import path from 'node:path'
import { invalidArgument } from './errors.js'

export function checkObject (name: string, value: unknown): void {
  if (value == null || typeof value !== 'object') throw invalidArgument(name, 'an object', value)
}

export function checkOptionalObject (name: string, value: unknown): void {
  if (value != null && typeof value !== 'object') throw invalidArgument(name, 'an object', value)
}

/** A non-empty string without NUL characters (native code takes strings as C strings). */
export function checkString (name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') throw invalidArgument(name, 'a non-empty string', value)
  if (value === '' || value.includes('\0')) throw invalidArgument(name, 'a non-empty string without NUL characters', value, 'ERR_INVALID_ARG_VALUE')
}

export function checkOptionalString (name: string, value: unknown): void {
  if (value == null) return
  if (typeof value !== 'string') throw invalidArgument(name, 'a string', value)
  if (value.includes('\0')) throw invalidArgument(name, 'a string without NUL characters', value, 'ERR_INVALID_ARG_VALUE')
}

/** One of `allowed` when given: another string is `ERR_INVALID_ARG_VALUE`, another type `ERR_INVALID_ARG_TYPE`. */
export function checkOptionalEnum (name: string, value: unknown, allowed: readonly string[]): void {
  if (value === undefined || (typeof value === 'string' && allowed.includes(value))) return
  const expected = allowed.map((a) => `'${a}'`).join(', ')
  throw invalidArgument(name, `one of ${expected}`, value, typeof value === 'string' ? 'ERR_INVALID_ARG_VALUE' : 'ERR_INVALID_ARG_TYPE')
}

export function checkOptionalBoolean (name: string, value: unknown): void {
  if (value != null && typeof value !== 'boolean') throw invalidArgument(name, 'a boolean', value)
}

/**
 * An absolute path. A relative one would be resolved against whatever the process's working
 * directory happens to be, which in a package manager is never what was meant. (The drop-ins,
 * `@cas/native/worker` and `@cas/native/pnpm-worker`, resolve relative paths first, as pnpm's
 * worker leaves them to Node's `fs`.)
 */
export function checkAbsolutePath (name: string, value: unknown): asserts value is string {
  checkString(name, value)
  if (!path.isAbsolute(value)) throw invalidArgument(name, 'an absolute path', value, 'ERR_INVALID_ARG_VALUE')
}

/**
 * `checkAbsolutePath` for checks run once per file or link: the argument's name (which quotes a
 * map key) is only built when the check fails.
 */
export function checkAbsolutePathNamed (name: () => string, value: unknown): asserts value is string {
  if (typeof value === 'string' && value !== '' && !value.includes('\0') && path.isAbsolute(value)) return
  checkAbsolutePath(name(), value)
}

/** An optional size in bytes: a non-negative safe integer. */
export function checkOptionalByteCount (name: string, value: unknown): void {
  if (value == null) return
  if (typeof value !== 'number') throw invalidArgument(name, 'a number', value)
  if (!Number.isSafeInteger(value) || value < 0) throw invalidArgument(name, 'a non-negative integer', value, 'ERR_INVALID_ARG_VALUE')
}
