//! Gzip detection and decompression with the outcomes of Node's `zlib.gunzipSync`, which is what
//! pnpm uses on downloaded tarballs (contract §3.3).
//!
//! Node's rules that matter here: concatenated members decode as one stream; once a member has
//! ended, a following `00` byte ends decoding and everything after it is ignored (padding);
//! any other following byte starts a new member, so garbage fails with "incorrect header
//! check"; input that ends early fails with `Z_BUF_ERROR` "unexpected end of file".

use flate2::{Decompress, FlushDecompress, Status};
use std::fmt;

/// Hard cap on the decompressed size. pnpm's tar arithmetic is 32-bit anyway, and an npm
/// package anywhere near this is either broken or a decompression bomb. A caller's
/// `maxTarballUnpackedSize` lowers it (`extract::inflate_cap`).
pub const MAX_OUTPUT: usize = 4 << 30;

/// How far we trust the gzip trailer's ISIZE when pre-sizing the output: at most this many
/// times the input length (real tarballs compress 3-10x). Beyond that we grow as we go, so a
/// lying trailer cannot make us reserve gigabytes for a few bytes of input.
const PRESIZE_RATIO: usize = 64;

/// Smallest growth step once the pre-sized buffer is full.
const MIN_GROWTH: usize = 64 * 1024;

/// Most output per inflate call (see [`inflate_member`]).
const CHUNK: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GzipErrorKind {
    /// zlib's `Z_DATA_ERROR`: bad header, corrupt deflate data, bad checksum, trailing garbage.
    Data,
    /// zlib's `Z_BUF_ERROR`: the input ended before the stream did.
    Buf,
    /// The output would exceed the cap given to [`gunzip_limited`] ([`MAX_OUTPUT`]).
    TooLarge,
}

/// A gunzip failure, carrying the message Node's zlib error would have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GzipError {
    pub kind: GzipErrorKind,
    pub message: String,
}

impl GzipError {
    fn new(kind: GzipErrorKind, message: impl Into<String>) -> Self {
        GzipError {
            kind,
            message: message.into(),
        }
    }

    /// The code pnpm reports: Node's zlib code (or Node's `ERR_BUFFER_TOO_LARGE` for the
    /// cap) behind pnpm's `ERR_PNPM_` prefix.
    pub fn code(&self) -> &'static str {
        match self.kind {
            GzipErrorKind::Data => "ERR_PNPM_Z_DATA_ERROR",
            GzipErrorKind::Buf => "ERR_PNPM_Z_BUF_ERROR",
            GzipErrorKind::TooLarge => "ERR_PNPM_ERR_BUFFER_TOO_LARGE",
        }
    }
}

impl fmt::Display for GzipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GzipError {}

/// pnpm's `is-gzip` test: at least 3 bytes, starting with the gzip magic and method 8.
pub fn is_gzip(buf: &[u8]) -> bool {
    buf.len() >= 3 && buf[..3] == [0x1f, 0x8b, 0x08]
}

/// Decompresses a whole gzip buffer like `zlib.gunzipSync`, capped at [`MAX_OUTPUT`] bytes.
pub fn gunzip(input: &[u8]) -> Result<Vec<u8>, GzipError> {
    gunzip_limited(input, MAX_OUTPUT)
}

/// [`gunzip`] with an explicit output cap.
pub fn gunzip_limited(input: &[u8], limit: usize) -> Result<Vec<u8>, GzipError> {
    let mut out = Vec::with_capacity(initial_capacity(input, limit));
    let mut rest = input;
    loop {
        rest = inflate_member(rest, &mut out, limit)?;
        if out.len() > limit {
            return Err(too_large(limit));
        }
        // Node resets and continues only while the next byte is not NUL.
        if rest.first().is_none_or(|&b| b == 0) {
            return Ok(out);
        }
    }
}

/// Inflates one gzip member from the start of `member` into `out`, growing it as needed;
/// returns the input after the member.
///
/// Output goes straight into the vector's spare capacity, at most [`CHUNK`] per call: zlib
/// checksums each call's output at the end of the call, and doing that while the chunk is
/// still in cache is ~14% faster on a 24 MB tarball than one call for everything.
fn inflate_member<'a>(
    member: &'a [u8],
    out: &mut Vec<u8>,
    limit: usize,
) -> Result<&'a [u8], GzipError> {
    let mut inflater = Decompress::new_gzip(15);
    let mut input = member;
    loop {
        if out.len() == out.capacity() && out.len() < limit {
            let room = limit - out.len();
            out.reserve_exact(out.len().max(MIN_GROWTH).min(room));
        }
        let (len, room) = (out.len(), (out.capacity() - out.len()).min(CHUNK));
        let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
        let status = inflater
            .decompress_uninit(
                input,
                &mut out.spare_capacity_mut()[..room],
                FlushDecompress::Finish,
            )
            .map_err(|e| data_error(e.message(), member))?;
        let (read, written) = (
            (inflater.total_in() - in_before) as usize,
            (inflater.total_out() - out_before) as usize,
        );
        // SAFETY: zlib initialised exactly `written` (≤ room) bytes of the spare capacity.
        unsafe { out.set_len(len + written) };
        input = &input[read..];
        if status == Status::StreamEnd {
            return Ok(input);
        }
        if read == 0 && written == 0 {
            // Stuck: with no room we are at the cap, otherwise the input ran out.
            return Err(if room == 0 {
                too_large(limit)
            } else {
                GzipError::new(GzipErrorKind::Buf, "unexpected end of file")
            });
        }
    }
}

/// zlib-rs (0.6.8) loses the message of errors found on its fast path ("invalid distance too
/// far back", "invalid distance code", "invalid literal/length code") and reports "repeated
/// call with bad state" instead. Node's zlib names the real problem, so on that (cold) path we
/// decode the member again in pieces too small for the fast path, which reports correctly.
fn data_error(message: Option<&str>, member: &[u8]) -> GzipError {
    const LOST: &str = "repeated call with bad state";
    let message = match message {
        Some(LOST) => slow_path_message(member).unwrap_or(LOST.into()),
        Some(message) => message.into(),
        None => "Zlib error".into(),
    };
    GzipError::new(GzipErrorKind::Data, message)
}

fn slow_path_message(member: &[u8]) -> Option<String> {
    let mut inflater = Decompress::new_gzip(15);
    // zlib-rs takes its fast path only with at least 260 bytes of output room.
    let mut scratch = [0u8; 256];
    let mut input = member;
    loop {
        let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
        match inflater.decompress(input, &mut scratch, FlushDecompress::None) {
            Err(e) => return e.message().map(str::to_string),
            Ok(Status::StreamEnd) => return None,
            Ok(_) if inflater.total_in() == in_before && inflater.total_out() == out_before => {
                return None
            }
            Ok(_) => input = &input[(inflater.total_in() - in_before) as usize..],
        }
    }
}

/// The output size to reserve up front: the trailer's ISIZE (size mod 2^32 of the last
/// member), bounded by [`PRESIZE_RATIO`] and the cap. With trailing padding the last four
/// bytes are zeros; then we guess.
fn initial_capacity(input: &[u8], limit: usize) -> usize {
    let isize = match input.len().checked_sub(4) {
        Some(start) => u32::from_le_bytes(input[start..].try_into().unwrap()) as usize,
        None => 0,
    };
    let guess = if isize == 0 {
        input.len().saturating_mul(4)
    } else {
        // +1: room to spare lets zlib see the trailer in the same call, no growth step.
        isize + 1
    };
    guess
        .min(input.len().saturating_mul(PRESIZE_RATIO))
        .min(limit)
}

/// Worded like Node's `ERR_BUFFER_TOO_LARGE`.
fn too_large(limit: usize) -> GzipError {
    GzipError::new(
        GzipErrorKind::TooLarge,
        format!("Cannot create a Buffer larger than {limit} bytes"),
    )
}

#[cfg(test)]
mod tests;
