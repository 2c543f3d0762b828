//! The tar reader pnpm uses for package tarballs (`parseTarball.ts`), rule for rule
//! (docs/store-format.md, "Unpacking a tarball").
//!
//! pnpm does not use a general tar library: it has its own minimal parser whose quirks decide
//! the keys of the store index (first path segment dropped, `./` normalisation, `//` replaced
//! once, duplicates keeping the first position, hard links as empty files, ...). To write the
//! same index rows we reproduce those quirks, including what JavaScript does with bytes past
//! the end of the buffer (`undefined`, making the checksum `NaN`) and with `parseInt`.
//!
//! Inputs pnpm would mishandle rather than reject are the only deviations, and all of them are
//! errors here: sizes that break its 32-bit block arithmetic (it would loop forever or step
//! backwards), and `NaN`/negative/oversized sizes or modes on file entries (it would store them
//! in the index).

use std::collections::hash_map::{Entry, HashMap};

use crate::error_code::ErrorCode;

const BLOCK: usize = 512;
const NAME: std::ops::Range<usize> = 0..100;
const MODE: std::ops::Range<usize> = 100..108;
const SIZE: std::ops::Range<usize> = 124..136;
const CHECKSUM: std::ops::Range<usize> = 148..156;
const TYPE: usize = 156;
const PREFIX: std::ops::Range<usize> = 345..500;

/// A regular file of the archive. Its bytes are `tar[offset..offset + size]`, always in bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TarEntry {
    /// The store-index key, exactly as pnpm computes it.
    pub path: String,
    pub offset: usize,
    pub size: usize,
    /// The raw octal mode of the header (may include file-type or setuid bits).
    pub mode: u32,
}

/// A malformed archive, or one over the size limit given to [`parse_limited`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TarError {
    pub kind: TarErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TarErrorKind {
    /// pnpm reports all of these as `ERR_PNPM_TARBALL_EXTRACT`.
    Malformed,
    /// The first header is not a tar header at all (bad checksum at offset 0, or fewer than
    /// 512 bytes): not a tar archive. Also `ERR_PNPM_TARBALL_EXTRACT`.
    NotTar,
    /// The regular files add up to more than the limit: pnpm 11.28's `ERR_PNPM_TARBALL_TOO_LARGE`.
    TooLarge,
}

impl TarError {
    fn new(message: String) -> Self {
        TarError {
            kind: TarErrorKind::Malformed,
            message,
        }
    }
}

impl ErrorCode for TarError {
    fn code(&self) -> &'static str {
        match self.kind {
            TarErrorKind::Malformed | TarErrorKind::NotTar => "ERR_PNPM_TARBALL_EXTRACT",
            TarErrorKind::TooLarge => "ERR_PNPM_TARBALL_TOO_LARGE",
        }
    }
}

/// Name overrides carried from an `x`/`L` header to the following header. Empty strings
/// count as "none", as they are falsy in pnpm's code.
#[derive(Default)]
struct Pending {
    long_name: String,
    pax_path: String,
    pax_size: Option<f64>,
}

/// Where the walk reads the tar from: the whole inflated tar (`&[u8]`), or a window sliding
/// over a stream as it inflates. The walk only ever reads forward: once it asks for bytes from
/// `start`, nothing before `start` is asked for again.
pub trait TarSource {
    type Error: From<TarError>;

    /// `tar[start..end]`, cut short at the end of the tar (empty past it), as JS slicing is.
    fn bytes(&mut self, start: usize, end: usize) -> Result<&[u8], Self::Error>;

    /// A regular file's entry, met before the walk moves past its data.
    fn file(&mut self, entry: &TarEntry) -> Result<(), Self::Error>;
}

impl TarSource for &[u8] {
    type Error = TarError;

    fn bytes(&mut self, start: usize, end: usize) -> Result<&[u8], TarError> {
        let start = start.min(self.len());
        Ok(&self[start..end.clamp(start, self.len())])
    }

    fn file(&mut self, _: &TarEntry) -> Result<(), TarError> {
        Ok(())
    }
}

/// Lists the regular files of an uncompressed tar archive in pnpm's order, with pnpm's keys.
pub fn parse(tar: &[u8]) -> Result<Vec<TarEntry>, TarError> {
    parse_limited(tar, None)
}

/// [`parse`] with pnpm 11.28's `maxTarballUnpackedSize` (see [`walk`]).
pub fn parse_limited(
    mut tar: &[u8],
    max_unpacked_size: Option<u64>,
) -> Result<Vec<TarEntry>, TarError> {
    let entries = walk(&mut tar, max_unpacked_size)?;
    dedupe(entries, tar.len())
}

/// Walks the archive to its end marker and lists every regular-file header in order,
/// duplicates included ([`dedupe`] resolves them), each one also handed to
/// [`TarSource::file`] as it is met.
///
/// `max_unpacked_size` is pnpm 11.28's `maxTarballUnpackedSize`: the walk fails with
/// [`TarErrorKind::TooLarge`] at the first regular-file header that takes the sum of the
/// regular files' sizes past it. Counted as pnpm counts them: every file and hard-link header
/// with its (pax-overridden) size, duplicates included, ignored files too (the ignore pattern
/// applies later). A size past our 2 GiB bound on one file is counted before that bound
/// rejects it, so a huge size reads as too large, as it does in pnpm.
pub fn walk<S: TarSource>(
    src: &mut S,
    max_unpacked_size: Option<u64>,
) -> Result<Vec<TarEntry>, S::Error> {
    let mut budget = Budget {
        max: max_unpacked_size,
        unpacked: 0.0,
    };
    let mut entries = Vec::new();
    let mut pending = Pending::default();
    let mut pos = 0usize;
    let mut header = [0u8; BLOCK];
    // Only a header starting with NUL ends the archive; running off the end does not.
    while src.bytes(pos, pos.saturating_add(1))?.first() != Some(&0) {
        read_header(src, pos, &mut header)?;
        let size = match pending.pax_size.take() {
            Some(size) => size,
            None => parse_octal(&header[SIZE]),
        };
        let name = entry_name(&header, &mut pending);
        let data = pos + BLOCK;
        match header[TYPE] {
            0 | b'0' | b'1' => {
                budget.count(size, &name)?;
                let entry = regular_file(name, size, &header, pos)?;
                src.file(&entry)?;
                entries.push(entry);
            }
            b'5' | b'2' => {}
            b'x' => parse_pax(src, data, size, false, &mut pending)?,
            b'g' => parse_pax(src, data, size, true, &mut pending)?,
            b'L' => pending.long_name = long_name(src, data, size)?,
            other => {
                return Err(TarError::new(format!(
                    "Unsupported file type {other} for file {name}."
                ))
                .into())
            }
        }
        pos = next_header(pos, size)?;
    }
    Ok(entries)
}

/// Copies the header at `pos` into `header`, its checksum checked as pnpm checks it.
fn read_header<S: TarSource>(
    src: &mut S,
    pos: usize,
    header: &mut [u8; BLOCK],
) -> Result<(), S::Error> {
    let block = src.bytes(pos, pos.saturating_add(BLOCK))?;
    if block.len() < BLOCK {
        // JS reads `undefined` past the end, so the computed checksum is NaN.
        let start = pos.saturating_add(CHECKSUM.start);
        let expected = parse_octal(src.bytes(start, start.saturating_add(8))?);
        return Err(checksum_error(pos, expected, "NaN").into());
    }
    header.copy_from_slice(block);
    let expected = parse_octal(&header[CHECKSUM]);
    let actual = checksum(header);
    if expected != actual as f64 {
        return Err(checksum_error(pos, expected, &actual.to_string()).into());
    }
    Ok(())
}

/// The entry's name as pnpm takes it: a GNU long name, else a pax path, else the header's own,
/// with `./` segments normalised.
fn entry_name(header: &[u8; BLOCK], pending: &mut Pending) -> String {
    let name = if !pending.long_name.is_empty() {
        std::mem::take(&mut pending.long_name)
    } else if !pending.pax_path.is_empty() {
        std::mem::take(&mut pending.pax_path)
    } else {
        header_name(header)
    };
    if name.contains("./") || name.contains(".\\") {
        normalize(&name)
    } else {
        name
    }
}

/// pnpm 11.28's `maxTarballUnpackedSize`, counted as [`walk`] says.
struct Budget {
    max: Option<u64>,
    /// Exact: sizes are JS numbers, the limit a safe integer.
    unpacked: f64,
}

impl Budget {
    /// Counts a regular file's `size`; past the limit, too large (at `name`).
    fn count(&mut self, size: f64, name: &str) -> Result<(), TarError> {
        let Some(max) = self.max else {
            return Ok(());
        };
        // NaN and negative sizes are left to `file_size`.
        self.unpacked += size.max(0.0);
        if self.unpacked > max as f64 {
            return Err(too_large(
                max,
                format_args!(
                    "its regular files reach {} bytes at {}",
                    crate::json::number_to_string(self.unpacked),
                    crate::json::quote(name)
                ),
            ));
        }
        Ok(())
    }
}

/// A regular file's (or hard link's) entry, refusing the sizes and modes pnpm would store
/// as they are; its data follows the header at `pos`.
fn regular_file(
    name: String,
    size: f64,
    header: &[u8; BLOCK],
    pos: usize,
) -> Result<TarEntry, TarError> {
    let mode = parse_octal(&header[MODE]);
    let unsupported = |what: &str, value: f64| {
        TarError::new(format!(
            "Unsupported {what} {} for file {name} in TAR header at offset {pos}",
            crate::json::number_to_string(value)
        ))
    };
    let size = file_size(size).ok_or_else(|| unsupported("size", size))?;
    let mode = file_mode(mode).ok_or_else(|| unsupported("mode", mode))?;
    let path = if name.contains("//") {
        name.replace("//", "/")
    } else {
        name
    };
    Ok(TarEntry {
        path,
        offset: pos + BLOCK,
        size,
        mode,
    })
}

/// Where the header after the one at `pos` (whose data is `size` bytes) starts.
fn next_header(pos: usize, size: f64) -> Result<usize, TarError> {
    block_bytes(size)
        .and_then(|step| pos.checked_add(step))
        .ok_or_else(|| {
            TarError::new(format!(
                "Unsupported size {} in TAR header at offset {pos}",
                crate::json::number_to_string(size)
            ))
        })
}

/// Later entries with the same key replace earlier ones but keep the first one's position
/// (JS `Map.set`). The map borrows the keys instead of cloning them; the common no-duplicate
/// case then costs one hash insert per entry and nothing else.
pub fn dedupe(mut entries: Vec<TarEntry>, tar_len: usize) -> Result<Vec<TarEntry>, TarError> {
    let mut replaced = Vec::new();
    {
        let mut first: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
        for (i, entry) in entries.iter().enumerate() {
            match first.entry(&entry.path) {
                Entry::Occupied(j) => replaced.push((*j.get(), i)),
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
        }
    }
    if !replaced.is_empty() {
        let mut keep = vec![true; entries.len()];
        for &(j, i) in &replaced {
            let (offset, size, mode) = (entries[i].offset, entries[i].size, entries[i].mode);
            let first = &mut entries[j];
            (first.offset, first.size, first.mode) = (offset, size, mode);
            keep[i] = false;
        }
        let mut i = 0;
        entries.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }
    // Guaranteed by the parse loop (data past the end makes the next header unreadable), but
    // worth a comparison per entry to keep slicing panic-free whatever changes.
    if let Some(e) = entries.iter().find(|e| e.offset + e.size > tar_len) {
        return Err(TarError::new(format!(
            "TAR entry {} runs past the end of the archive",
            e.path
        )));
    }
    Ok(entries)
}

/// Over `maxTarballUnpackedSize`; `why` says by what measure (also used for the inflate cap).
pub(crate) fn too_large(max: u64, why: std::fmt::Arguments) -> TarError {
    TarError {
        kind: TarErrorKind::TooLarge,
        message: format!(
            "Unpacked, this tarball would take more than the {max} bytes maxTarballUnpackedSize allows: {why}"
        ),
    }
}

fn checksum_error(pos: usize, expected: f64, actual: &str) -> TarError {
    TarError {
        kind: if pos == 0 {
            TarErrorKind::NotTar
        } else {
            TarErrorKind::Malformed
        },
        message: format!(
            "Invalid checksum for TAR header at offset {pos}. Expected {}, got {actual}",
            crate::json::number_to_string(expected)
        ),
    }
}

/// 256 (the checksum field counted as spaces) plus every other header byte, unsigned.
fn checksum(header: &[u8]) -> u32 {
    // Summing 64-byte chunks in u16 (at most 64 × 255) lets the compiler use wide SIMD adds;
    // a plain u32 sum of the two ranges is 3x slower and dominated the whole parse.
    let all: u32 = header
        .chunks_exact(64)
        .map(|chunk| chunk.iter().map(|&b| b as u16).sum::<u16>() as u32)
        .sum();
    let field: u32 = header[CHECKSUM].iter().map(|&b| b as u32).sum();
    256 + all - field
}

/// pnpm's block step: header plus data padded to 512, in JS 32-bit integer arithmetic.
/// `None` where that step would not move forward (pnpm would loop or go backwards).
fn block_bytes(size: f64) -> Option<usize> {
    let s = to_int32(size);
    let step = (s & !0x1ff) as i64 + if s & 0x1ff != 0 { 1024 } else { 512 };
    usize::try_from(step).ok().filter(|&step| step > 0)
}

/// A file size we can represent and pnpm handles sanely: a non-negative integer below 2 GiB.
fn file_size(size: f64) -> Option<usize> {
    (0.0..2_147_483_648.0)
        .contains(&size)
        .then_some(size as usize)
}

fn file_mode(mode: f64) -> Option<u32> {
    (0.0..=u32::MAX as f64)
        .contains(&mode)
        .then_some(mode as u32)
}

/// The path from the header's prefix and name fields with the first path segment removed.
fn header_name(header: &[u8]) -> String {
    let mut trimmed = false;
    let mut prefix = read_string(&header[PREFIX], &mut trimmed);
    // A prefix without any slash is the first segment as a whole.
    if !prefix.is_empty() && !trimmed {
        trimmed = true;
        prefix = &[];
    }
    let name = read_string(&header[NAME], &mut trimmed);
    let mut path = String::with_capacity(prefix.len() + 1 + name.len());
    if !prefix.is_empty() {
        push_utf8_lossy(&mut path, prefix);
        path.push('/');
    }
    push_utf8_lossy(&mut path, name);
    path
}

/// Appends `bytes` decoded like Node's `buf.toString('utf8')` (invalid sequences become
/// U+FFFD, maximal subparts as in the WHATWG decoder, which Rust's lossy decoding follows).
fn push_utf8_lossy(out: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.push_str(text), // the fast path: valid (and mostly ASCII) names
        Err(_) => out.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// The field up to its first NUL; until `trimmed` is set, everything up to and including the
/// first `/` or `\` is dropped (and `trimmed` set).
fn read_string<'a>(field: &'a [u8], trimmed: &mut bool) -> &'a [u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let field = &field[..end];
    if !*trimmed {
        if let Some(slash) = field.iter().position(|&b| b == b'/' || b == b'\\') {
            *trimmed = true;
            return &field[slash + 1..];
        }
    }
    field
}

/// `path.posix.join('/', name.replaceAll('\\', '/')).slice(1)`: resolves `.` and `..` (never
/// above the root), collapses slashes and keeps a trailing slash.
fn normalize(name: &str) -> String {
    let name = name.replace('\\', "/");
    let mut segments: Vec<&str> = Vec::new();
    for segment in name.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            _ => segments.push(segment),
        }
    }
    let mut out = segments.join("/");
    if !out.is_empty() && name.ends_with('/') {
        out.push('/');
    }
    out
}

/// A GNU `L` record: the data up to the first NUL (JS `replace(/\0.*/, '')`, where `.` stops
/// at line terminators), minus everything up to and including the first `/`.
fn long_name<S: TarSource>(src: &mut S, data: usize, size: f64) -> Result<String, S::Error> {
    let text = String::from_utf8_lossy(js_slice(src, data as f64, data as f64 + size)?);
    let mut name = text.into_owned();
    if let Some(nul) = name.find('\0') {
        let rest = &name[nul..];
        let cut = rest
            .find(['\n', '\r', '\u{2028}', '\u{2029}'])
            .unwrap_or(rest.len());
        name.replace_range(nul..nul + cut, "");
    }
    Ok(match name.find('/') {
        Some(slash) => name[slash + 1..].to_string(),
        None => name,
    })
}

/// Pax records `"<len> <key>=<value>\n"`. Only `path` and `size` matter, for the next header
/// (or fail in a global header). Positions are JS numbers: the data may claim to run past the
/// buffer, where JS sees `undefined` bytes and `toString` clamps.
fn parse_pax<S: TarSource>(
    src: &mut S,
    data: usize,
    size: f64,
    global: bool,
    pending: &mut Pending,
) -> Result<(), S::Error> {
    let end = data as f64 + size;
    let mut i = data as f64;
    while i < end {
        let line_start = i;
        // The length runs to the first space before `end`, or to `end`.
        let region = js_slice(src, line_start, end)?;
        let (len_text, space) = match region.iter().position(|&b| b == b' ') {
            Some(space) => (&region[..space], line_start + space as f64),
            None => (region, end),
        };
        let len = js_parse_int(len_text, 10);
        // 0 and NaN are what pnpm rejects; a negative length would send it backwards.
        if len.is_nan() || len <= 0.0 {
            return Err(TarError::new(format!(
                "Invalid length in PAX record: {}",
                String::from_utf8_lossy(len_text)
            ))
            .into());
        }
        i = space + 1.0;
        let line_end = line_start + len;
        let record = String::from_utf8_lossy(js_slice(src, i, line_end - 1.0)?).into_owned();
        i = line_end;
        let (keyword, value_start) = match record.find('=') {
            Some(eq) => (Some(&record[..eq]), eq + 1),
            // `record.slice(0, -1)`: all but the last UTF-16 unit.
            None => (
                record
                    .chars()
                    .next_back()
                    .filter(|c| c.len_utf16() == 1)
                    .map(|c| &record[..record.len() - c.len_utf8()]),
                0,
            ),
        };
        match keyword {
            Some("path") => {
                if global {
                    return Err(
                        TarError::new(format!("Unexpected global PAX path: {record}")).into(),
                    );
                }
                let start = match record[value_start..].find('/') {
                    Some(slash) => value_start + slash + 1,
                    None => value_start,
                };
                pending.pax_path = record[start..].to_string();
            }
            Some("size") => {
                let size = js_parse_int(&record.as_bytes()[value_start..], 10);
                if size.is_nan() || size < 0.0 {
                    return Err(
                        TarError::new(format!("Invalid size in PAX record: {record}")).into(),
                    );
                }
                if global {
                    return Err(TarError::new(format!(
                        "Unexpected global PAX file size: {record}"
                    ))
                    .into());
                }
                pending.pax_size = Some(size);
            }
            _ => {}
        }
    }
    Ok(())
}

/// pnpm's `parseOctal`: skip leading spaces, stop at the next space, skip leading NULs,
/// empty → 0, else `parseInt(text, 8)` (so possibly NaN or negative).
fn parse_octal(field: &[u8]) -> f64 {
    // Fast path for the usual "0000644\0": when the field starts with an octal digit, none of
    // the skipping applies and parseInt reads exactly the leading run of digits.
    let digits = field
        .iter()
        .take_while(|b| matches!(b, b'0'..=b'7'))
        .count();
    if digits > 0 {
        return field[..digits]
            .iter()
            .fold(0u64, |acc, &d| acc * 8 + (d - b'0') as u64) as f64;
    }
    let mut start = field.iter().position(|&b| b != b' ').unwrap_or(field.len());
    let end = field[start..]
        .iter()
        .position(|&b| b == b' ')
        .map_or(field.len(), |n| start + n);
    while start < end && field[start] == 0 {
        start += 1;
    }
    if start == end {
        return 0.0;
    }
    js_parse_int(&field[start..end], 8)
}

/// JS `parseInt(buf.toString(), radix)` for radix 8 or 10, on the UTF-8 bytes: leading JS
/// white space, an optional sign, then digits up to the first non-digit; none → NaN.
fn js_parse_int(text: &[u8], radix: u32) -> f64 {
    let mut i = 0;
    while let Some(n) = js_space_len(&text[i..]) {
        i += n;
    }
    let negative = text.get(i) == Some(&b'-');
    if matches!(text.get(i), Some(b'-' | b'+')) {
        i += 1;
    }
    let digits = text[i..]
        .iter()
        .take_while(|&&b| (b as char).is_digit(radix))
        .count();
    if digits == 0 {
        return f64::NAN;
    }
    let digits = &text[i..i + digits];
    let value = if digits.len() <= 15 {
        // Exact in u64 and in f64 (8^15 < 10^15 < 2^53).
        digits
            .iter()
            .fold(0u64, |acc, &d| acc * radix as u64 + (d - b'0') as u64) as f64
    } else if radix == 10 {
        // Correctly rounded, as V8's parseInt is for decimal.
        std::str::from_utf8(digits).unwrap().parse::<f64>().unwrap()
    } else {
        digits
            .iter()
            .fold(0.0, |acc, &d| acc * radix as f64 + (d - b'0') as f64)
    };
    if negative {
        -value
    } else {
        value
    }
}

/// Length of the JS white-space or line-terminator character at the start, if any.
fn js_space_len(text: &[u8]) -> Option<usize> {
    match text {
        [b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ', ..] => Some(1),
        [0xc2, 0xa0, ..] => Some(2),       // U+00A0
        [0xe1, 0x9a, 0x80, ..] => Some(3), // U+1680
        [0xe2, 0x80, 0x80..=0x8a | 0xa8 | 0xa9 | 0xaf, ..] => Some(3), // U+2000-200A, 2028, 2029, 202F
        [0xe2, 0x81, 0x9f, ..] => Some(3),                             // U+205F
        [0xe3, 0x80, 0x80, ..] => Some(3),                             // U+3000
        [0xef, 0xbb, 0xbf, ..] => Some(3),                             // U+FEFF
        _ => None,
    }
}

/// JS `ToInt32`.
fn to_int32(v: f64) -> i32 {
    if !v.is_finite() {
        return 0;
    }
    let m = v.trunc().rem_euclid(4_294_967_296.0);
    (if m >= 2_147_483_648.0 {
        m - 4_294_967_296.0
    } else {
        m
    }) as i32
}

/// The bytes `buf.toString('utf8', start, end)` decodes (positions are JS numbers).
fn js_slice<S: TarSource>(src: &mut S, start: f64, end: f64) -> Result<&[u8], S::Error> {
    let start = if start > 0.0 { start.trunc() } else { 0.0 };
    let end = if end.is_nan() { 0.0 } else { end.trunc() };
    if end <= start {
        return Ok(&[]);
    }
    // Saturating casts; the source cuts the range at the end of the tar.
    src.bytes(start as usize, end as usize)
}

#[cfg(test)]
mod tests;
