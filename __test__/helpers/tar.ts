/** Builds small tar archives byte by byte, for inputs no real registry tarball would contain. */
import zlib from 'node:zlib'

export interface TarEntrySpec {
  /** The name field (100 bytes); a Buffer for bytes a string cannot carry (a NUL). */
  name: string | Buffer
  content?: string | Buffer
  mode?: number
  /** Tar type flag, `'0'` (file) by default. */
  type?: string
  /** The link target field (hard and symbolic links). */
  linkname?: string
  /** The ustar prefix field (155 bytes). */
  prefix?: string
  /** The size field's text instead of the content's length in octal (e.g. a size the data does not have). */
  sizeField?: string
  /** Overwrites the header checksum with a wrong value. */
  badChecksum?: boolean
}

function octal (value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0'
}

export function tarHeader (entry: TarEntrySpec, size: number): Buffer {
  const h = Buffer.alloc(512)
  Buffer.from(entry.name).copy(h, 0, 0, 100)
  h.write(octal(entry.mode ?? 0o644, 8), 100, 'ascii')
  h.write(octal(0, 8), 108, 'ascii')
  h.write(octal(0, 8), 116, 'ascii')
  h.write(entry.sizeField ?? octal(size, 12), 124, 12, 'ascii')
  h.write(octal(0, 12), 136, 'ascii')
  h.write(entry.type ?? '0', 156, 'ascii')
  if (entry.linkname != null) h.write(entry.linkname, 157, 100, 'utf8')
  h.write('ustar\x0000', 257, 'binary')
  if (entry.prefix != null) h.write(entry.prefix, 345, 155, 'utf8')
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

/** A pax extended header (`x`, or `g` for a global one) carrying `records` (`key=value`) for the entry after it. */
export function pax (records: string[], type: 'x' | 'g' = 'x'): TarEntrySpec {
  const lines = records.map((record) => {
    // The length counts the whole line, its own digits included.
    const rest = Buffer.byteLength(` ${record}\n`)
    let digits = 1
    while (String(rest + digits).length !== digits) digits++
    return `${rest + digits} ${record}\n`
  })
  return { name: 'package/PaxHeader', type, content: lines.join('') }
}
