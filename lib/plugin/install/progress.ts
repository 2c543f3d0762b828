/**
 * What the native install has done so far, counted as pnpm's reporter counts an install:
 * packages resolved (read from the lockfile), reused (found in the store), downloaded and added
 * (imported into the virtual store). The install tells `progressed` as it goes; whoever shows
 * it (`report.ts`) listens with `watchProgress`. One install runs at a time in a pnpm process,
 * so one listener is all there is.
 */
import type { ImportMethodUsed } from '../../api/import.js'

export type ProgressKind = 'resolved' | 'reused' | 'downloaded' | 'added'

export type ProgressListener = (kind: ProgressKind, count: number, method?: ImportMethodUsed) => void

let listener: ProgressListener | undefined

/** Listens to the install's progress until the returned function is called. */
export function watchProgress (onProgress: ProgressListener): () => void {
  listener = onProgress
  return () => { if (listener === onProgress) listener = undefined }
}

/** `count` more packages got to `kind` (`method`: how the added ones were imported, when known). */
export function progressed (kind: ProgressKind, count = 1, method?: ImportMethodUsed): void {
  if (count > 0) listener?.(kind, count, method)
}
