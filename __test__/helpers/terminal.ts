/**
 * What a terminal shows once `output` has been written to it: pnpm's default reporter redraws
 * its lines in place (cursor moves, erasures, partial rewrites), so its output is compared by
 * the screen a user ends up with, not by the bytes. Knows what pnpm's reporter writes: `\r`,
 * `\n`, cursor up/down/forward/back (`A`, `B`, `C`, `D`), erase in line (`K`) and below (`J`),
 * colors (ignored); lines wrap at `width` columns, as the reporter's differ assumes, and are
 * joined again in the result (one string a line written).
 */
export function screen (output: string, width = 80): string[] {
  const rows: string[][] = [[]]
  /** Rows that continue the one above (a line longer than `width`). */
  const wrapped = new Set<number>()
  let row = 0
  let col = 0
  const line = (): string[] => (rows[row] ??= [])
  for (let i = 0; i < output.length; i++) {
    const c = output[i]
    if (c === '\n') {
      row++
      col = 0
      wrapped.delete(row)
    } else if (c === '\r') {
      col = 0
    } else if (c === '\u001b' && output[i + 1] === '[') {
      const m = /^\[([0-9;]*)([A-Za-z])/.exec(output.slice(i + 1))!
      i += m[0].length
      const n = m[1] === '' ? 1 : Number(m[1])
      switch (m[2]) {
        case 'A': row = Math.max(0, row - n); break
        case 'B': row += n; break
        case 'C': col = Math.min(width - 1, col + n); break
        case 'D': col = Math.max(0, col - n); break
        case 'K': line().length = Math.min(line().length, col); break
        case 'J': line().length = Math.min(line().length, col); rows.length = row + 1; break
      }
    } else {
      if (col >= width) {
        row++
        col = 0
        wrapped.add(row)
      }
      const l = line()
      while (l.length < col) l.push(' ')
      l[col++] = c
    }
  }
  const lines: string[] = []
  Array.from(rows, (l) => (l ?? []).join('')).forEach((text, i) => {
    if (wrapped.has(i) && lines.length > 0) lines[lines.length - 1] += text
    else lines.push(text)
  })
  for (let i = 0; i < lines.length; i++) lines[i] = lines[i].trimEnd()
  while (lines.length > 0 && lines.at(-1) === '') lines.pop()
  return lines
}
