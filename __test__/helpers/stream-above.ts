import * as cas from '../../dist/api/index.js'

/**
 * `addFilesFromTarball` with `CAS_NATIVE_STREAM_ABOVE` at `streamAbove` bytes (0: always
 * streamed; `Number.MAX_SAFE_INTEGER`: never), which the binding reads per call, before it
 * returns the promise.
 */
export function extractWith (streamAbove: number, opts: cas.AddFilesFromTarballOptions): Promise<cas.AddFilesFromTarballResult> {
  process.env.CAS_NATIVE_STREAM_ABOVE = String(streamAbove)
  try {
    return cas.addFilesFromTarball(opts)
  } finally {
    delete process.env.CAS_NATIVE_STREAM_ABOVE
  }
}
