/**
 * What the native install has done so far, told as pnpm's install logs it: packages resolved
 * (read from the lockfile), reused (found in the store), downloaded and added (imported into the
 * virtual store), each named as pnpm names it in its progress records. The install tells
 * `progressed` as it goes; whoever shows it (`report.ts`) listens with `watchProgress`. One
 * install runs at a time in a pnpm process, so one listener is all there is.
 */
import type { ImportMethodUsed } from '../../api/import.js'

export type ProgressKind = 'resolved' | 'reused' | 'downloaded' | 'added'

/**
 * A package that got to a kind: by pnpm's package id until it is added, then by the directory it
 * was imported into and how (`method`, when known).
 */
export type Progressed = { packageId: string } | { to: string, method?: ImportMethodUsed }

export type ProgressListener = (kind: ProgressKind, packages: readonly Progressed[]) => void

let listener: ProgressListener | undefined

/** Listens to the install's progress until the returned function is called. */
export function watchProgress (onProgress: ProgressListener): () => void {
  listener = onProgress
  return () => { if (listener === onProgress) listener = undefined }
}

/** `packages` got to `kind`. */
export function progressed (kind: ProgressKind, packages: readonly Progressed[]): void {
  if (packages.length > 0) listener?.(kind, packages)
}
