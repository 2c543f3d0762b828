/** Builds small tar archives byte by byte, for inputs no real registry tarball would contain. */
import zlib from 'node:zlib'

export interface TarEntrySpec {
  name: string
  content?: string | Buffer
  mode?: number
  /** Tar type flag, `'0'` (file) by default. */
  type?: string
  /** Overwrites the header checksum with a wrong value. */
  badChecksum?: boolean
}

function octal (value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0'
}

export function tarHeader (entry: TarEntrySpec, size: number): Buffer {
  const h = Buffer.alloc(512)
  h.write(entry.name, 0, 100, 'utf8')
  h.write(octal(entry.mode ?? 0o644, 8), 100, 'ascii')
  h.write(octal(0, 8), 108, 'ascii')
  h.write(octal(0, 8), 116, 'ascii')
  h.write(octal(size, 12), 124, 'ascii')
  h.write(octal(0, 12), 136, 'ascii')
  h.write(entry.type ?? '0', 156, 'ascii')
  h.write('ustar\x0000', 257, 'binary')
  h.fill(' ', 148, 156)
  let sum = 0
  for (const b of h) sum += b
  h.write(octal(entry.badChecksum ? sum + 1 : sum, 7) + ' ', 148, 'ascii')
  return h
}

export function tar (entries: TarEntrySpec[]): Buffer {
  const blocks: Buffer[] = []
  for (const entry of entries) {
    const data = Buffer.from(entry.content ?? '')
    blocks.push(tarHeader(entry, data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

export function tgz (entries: TarEntrySpec[]): Buffer {
  return zlib.gzipSync(tar(entries))
}
