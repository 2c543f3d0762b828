/**
 * Error classes shaped like pnpm's (`@pnpm/error`), so code written against pnpm's worker can
 * branch on `err.code` (always `ERR_PNPM_…`) and on the integrity fields unchanged. Codes are
 * full everywhere in this package: the native side decides them (`ERR_PNPM_…` included) and
 * nothing here adds or invents one; only the pnpm worker protocol takes the prefix off the
 * codes pnpm's own worker sends bare (lib/pnpm-worker/protocol.ts).
 */

export interface PnpmErrorOptions {
  hint?: string
  attempts?: number
  cause?: unknown
}

export class PnpmError extends Error {
  readonly code: string
  readonly hint?: string
  attempts?: number
  prefix?: string
  /** Filesystem errors: the failed call and its paths, as Node's own fs errors have them. */
  syscall?: string
  path?: string
  dest?: string

  /** `code` is the full code (`ERR_PNPM_…`). */
  constructor (code: `ERR_PNPM_${string}`, message: string, opts: PnpmErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause })
    this.code = code
    this.hint = opts.hint
    this.attempts = opts.attempts
  }
}

export interface TarballIntegrityErrorOptions {
  attempts?: number
  found: string
  expected: string
  algorithm: string
  sri?: string
  url?: string
  /** The package's store-index key: named in the message when there is no `url`. */
  filesIndexFile?: string
}

/** The downloaded bytes do not hash to the integrity the lockfile records. */
export class TarballIntegrityError extends PnpmError {
  readonly found: string
  readonly expected: string
  readonly algorithm: string
  readonly sri?: string
  readonly url?: string

  constructor (opts: TarballIntegrityErrorOptions) {
    super('ERR_PNPM_TARBALL_INTEGRITY',
      `Got unexpected checksum for ${tarballName(opts)}. Wanted "${opts.expected}". Got "${opts.found}".`,
      {
        attempts: opts.attempts,
        hint: 'The tarball that was downloaded is not the one the lockfile (or the registry ' +
          'metadata) describes, so it was not added to the store. If the metadata is stale, ' +
          'running "pnpm store prune" and installing again fixes it; if you trust the new ' +
          'content, "pnpm install --update-checksums" records it. A checksum that changes ' +
          'unexpectedly can also be a sign of a tampered package: check before you trust it.',
      })
    this.found = opts.found
    this.expected = opts.expected
    this.algorithm = opts.algorithm
    this.sri = opts.sri
    this.url = opts.url
  }
}

/** The tarball an integrity error is about: its URL, else the package's key, so the message always names one. */
function tarballName (opts: TarballIntegrityErrorOptions): string {
  if (opts.url != null && opts.url !== '') return `"${opts.url}"`
  if (opts.filesIndexFile != null) return `the tarball of ${JSON.stringify(opts.filesIndexFile)}`
  return 'the tarball'
}

/** What a native failure carries besides its code and message. */
export interface NativeFailure {
  code: string
  message: string
  hint?: string | null
  syscall?: string | null
  path?: string | null
  dest?: string | null
  /** Integrity mismatches: what `TarballIntegrityError` carries. */
  expected?: string | null
  found?: string | null
  algorithm?: string | null
}

/**
 * A native failure as a `PnpmError` with the code the native side decided (`message` replaces
 * the native one when given), with Node's `syscall`, `path` and `dest` properties when it is a
 * filesystem error; an integrity mismatch is a `TarballIntegrityError` naming `tarball`. The one
 * place native errors become JS errors.
 */
export function pnpmErrorOf (failure: NativeFailure, message = failure.message, tarball: { url?: string, filesIndexFile?: string } = {}): PnpmError {
  if (failure.code === 'ERR_PNPM_TARBALL_INTEGRITY' && failure.expected != null) {
    return new TarballIntegrityError({
      found: failure.found!,
      expected: failure.expected,
      algorithm: failure.algorithm!,
      url: tarball.url,
      filesIndexFile: tarball.filesIndexFile,
    })
  }
  const err = new PnpmError(failure.code as `ERR_PNPM_${string}`, message, { hint: failure.hint ?? undefined })
  if (failure.syscall != null) err.syscall = failure.syscall
  if (failure.path != null) err.path = failure.path
  if (failure.dest != null) err.dest = failure.dest
  return err
}

/**
 * An argument of the wrong type: a `TypeError` with Node's `ERR_INVALID_ARG_TYPE` code, or, for a value of the
 * right type that the argument cannot have, `ERR_INVALID_ARG_VALUE` (also a `TypeError` in Node).
 */
export function invalidArgument (name: string, expected: string, received: unknown, code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE' = 'ERR_INVALID_ARG_TYPE'): TypeError {
  const err = new TypeError(`The "${name}" option must be ${expected}. Received ${describe(received)}`)
  return Object.assign(err, { code })
}

function describe (value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'undefined'
  if (typeof value === 'object') return `an instance of ${value.constructor?.name ?? 'Object'}`
  return `type ${typeof value} (${String(value).slice(0, 40)})`
}
