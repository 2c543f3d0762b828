/** The part of `object-hash` 3 (no typings of its own) that lockfile-hash.ts uses. */
declare module 'object-hash' {
  interface Options {
    algorithm?: 'sha1' | 'sha256' | 'md5'
    encoding?: 'hex' | 'base64' | 'binary' | 'buffer'
    respectType?: boolean
    unorderedArrays?: boolean
    unorderedObjects?: boolean
    unorderedSets?: boolean
  }
  function objectHash (value: unknown, options?: Options): string
  export = objectHash
}
