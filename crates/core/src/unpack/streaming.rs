//! Streaming extraction: the tar is inflated, walked, hashed and written through a window that
//! slides over the gzip stream, so memory is a small constant plus the files in flight, however
//! much the tarball inflates to (a gzip bomb of padding costs time, not memory).
//!
//! Outcomes are the whole-buffer path's (`extract::extract` picks the path): the walk is the same
//! [`tarball::walk`], files go through the same [`extract::write_files`], and errors are
//! reported in the order the whole-buffer path meets them (inflate, then tar, then the file
//! system), even though here the walk runs ahead of the inflate: after a tar or write error
//! the rest of the stream is still inflated (and discarded) to find an inflate error first.
//! What differs is only when blobs are written: as their data arrives, so a tarball that turns
//! out broken may leave complete blobs of its earlier files in the store (never an index row,
//! never a blob under its final name that is not complete), as pnpm's own streaming worker does.

use std::collections::HashMap;
use std::time::Instant;

use crate::blob_files::Cas;
use crate::extract::{self, ExtractError, ExtractedFile};
use crate::gzip::{self, Gunzip, GzipError};
use crate::tarball::{self, TarEntry, TarError, TarSource};
use crate::timing::ms_since;

/// Most inflated output per read: one zlib call's worth (see `gzip::gunzip_limited`).
const CHUNK: usize = 256 * 1024;

/// The longest pax or GNU long-name record the window holds while the walk parses it (and the
/// most any other read of the walk may ask for). Real ones are a few hundred bytes; the whole-buffer path has no such bound,
/// so a longer one, which only a hostile tarball has, is the one outcome that differs.
pub const MAX_RECORD: usize = 1 << 20;

/// Files are written in batches of about this many bytes (or [`BATCH_FILES`] files), in
/// parallel within a batch; a file this big or bigger is written straight from the window.
const BATCH_BYTES: usize = 4 << 20;
const BATCH_FILES: usize = 256;

/// What streaming extraction produced: the files in the row's order, and the package.json
/// bytes the manifest comes from.
pub struct Streamed {
    pub files: Vec<ExtractedFile>,
    pub package_json: Option<Vec<u8>>,
    pub inflate_ms: f64,
    pub hash_write_ms: f64,
}

/// Inflates `input` through a window, walking and writing as it goes. `cap` bounds the
/// inflated size (`maxTarballUnpackedSize`'s cap; `None`: no bound, as memory does not grow
/// with it).
pub fn unpack<R: gzip::Input>(
    cas: &Cas,
    input: R,
    cap: Option<u64>,
    max_unpacked_size: Option<u64>,
    ignore: Option<&regress::Regex>,
) -> Result<Streamed, ExtractError> {
    let started = Instant::now();
    let mut src = Source {
        window: Window::new(Gunzip::new(input, cap.unwrap_or(u64::MAX))),
        cap,
        max_unpacked_size,
        sink: Sink {
            cas,
            ignore,
            batch: Vec::new(),
            batch_bytes: 0,
            written: HashMap::new(),
            package_json: None,
            failed: None,
            hash_write_ms: 0.0,
        },
    };
    let walked = match tarball::walk(&mut src, max_unpacked_size) {
        Err(e) if src.window.failed => return Err(e),
        walked => walked,
    };
    src.window
        .drain()
        .map_err(|e| extract::inflate_error(e, max_unpacked_size, cap))?;
    let tar_len = src.window.gz.total_out() as usize;
    let mut entries = tarball::dedupe(walked?, tar_len).map_err(ExtractError::Tar)?;
    let mut sink = src.sink;
    sink.flush();
    if let Some(e) = sink.failed {
        return Err(e);
    }
    if let Some(re) = ignore {
        entries.retain(|e| re.find(&e.path).is_none());
    }
    let files = entries
        .iter()
        .map(|e| {
            sink.written.remove(&e.offset).ok_or_else(|| {
                ExtractError::Manifest(format!("internal error: {} was not written", e.path))
            })
        })
        .collect::<Result<_, _>>()?;
    let hash_write_ms = sink.hash_write_ms;
    Ok(Streamed {
        files,
        package_json: sink.package_json,
        inflate_ms: ms_since(started) - hash_write_ms,
        hash_write_ms,
    })
}

/// The inflated tar from `base` on, as far as it has been inflated: `buf[head..]`.
struct Window<R> {
    gz: Gunzip<R>,
    buf: Vec<u8>,
    head: usize,
    /// Tar offset of `buf[head]`.
    base: usize,
    ended: bool,
    /// The inflate failed (the walk's error says how).
    failed: bool,
}

impl<R: gzip::Input> Window<R> {
    fn new(gz: Gunzip<R>) -> Self {
        Window {
            gz,
            buf: Vec::with_capacity(CHUNK),
            head: 0,
            base: 0,
            ended: false,
            failed: false,
        }
    }

    /// Tar offset just past what the window holds.
    fn end(&self) -> usize {
        self.base + (self.buf.len() - self.head)
    }

    /// Inflates until the window reaches `end` or the tar ends, dropping everything before
    /// `keep_from` as it goes.
    fn fill(&mut self, keep_from: usize, end: usize) -> Result<(), GzipError> {
        loop {
            let drop = keep_from
                .saturating_sub(self.base)
                .min(self.buf.len() - self.head);
            self.head += drop;
            self.base += drop;
            if self.end() >= end || self.ended {
                return Ok(());
            }
            if self.head > 0 && self.head >= self.buf.len() / 2 {
                self.buf.drain(..self.head);
                self.head = 0;
                // Give back what a big file needed once it has been written.
                if self.buf.capacity() > 8 * CHUNK && self.buf.len() < CHUNK {
                    self.buf.shrink_to(2 * CHUNK);
                }
            }
            self.buf.reserve(CHUNK);
            let len = self.buf.len();
            let written = self.gz.read(&mut self.buf.spare_capacity_mut()[..CHUNK])?;
            // SAFETY: `read` initialised exactly `written` (≤ CHUNK) bytes of the spare capacity.
            unsafe { self.buf.set_len(len + written) };
            self.ended = written == 0;
        }
    }

    /// `tar[start..end]` (cut at the end of the tar); `start` is never before `base`.
    fn slice(&self, start: usize, end: usize) -> &[u8] {
        let from = self.head + (start - self.base).min(self.buf.len() - self.head);
        let to = self.head
            + end
                .saturating_sub(self.base)
                .min(self.buf.len() - self.head);
        &self.buf[from..to.max(from)]
    }

    /// Inflates the rest of the stream, discarding it: its errors are the tarball's too.
    fn drain(&mut self) -> Result<(), GzipError> {
        self.fill(usize::MAX, usize::MAX)
    }
}

/// The walk's [`TarSource`]: the window, and the sink its files go to.
struct Source<'a, R> {
    window: Window<R>,
    cap: Option<u64>,
    max_unpacked_size: Option<u64>,
    sink: Sink<'a>,
}

impl<R: gzip::Input> Source<'_, R> {
    fn fill(&mut self, start: usize, end: usize) -> Result<(), ExtractError> {
        self.window.fill(start, end).map_err(|e| {
            self.window.failed = true;
            extract::inflate_error(e, self.max_unpacked_size, self.cap)
        })
    }
}

impl<R: gzip::Input> TarSource for Source<'_, R> {
    type Error = ExtractError;

    fn bytes(&mut self, start: usize, end: usize) -> Result<&[u8], ExtractError> {
        let bounded = end.min(start.saturating_add(MAX_RECORD));
        self.fill(start, bounded.saturating_add(1).min(end))?;
        if end > bounded && self.window.end() > bounded {
            return Err(ExtractError::Tar(TarError {
                kind: tarball::TarErrorKind::Malformed,
                message: format!(
                    "TAR record at offset {start} is longer than the {MAX_RECORD} bytes streaming extraction holds"
                ),
            }));
        }
        Ok(self.window.slice(start, end))
    }

    fn file(&mut self, entry: &TarEntry) -> Result<(), ExtractError> {
        if self.sink.failed.is_some()
            || self
                .sink
                .ignore
                .is_some_and(|re| re.find(&entry.path).is_some())
        {
            return Ok(());
        }
        let end = entry.offset + entry.size;
        self.fill(entry.offset, end)?;
        if self.window.end() < end {
            // Cut short: the walk fails at the next header, as the whole-buffer walk does.
            return Ok(());
        }
        let data = self.window.slice(entry.offset, end);
        if entry.path == "package.json" {
            self.sink.package_json = Some(data.to_vec());
        }
        if entry.size >= BATCH_BYTES {
            self.sink.flush();
            self.sink.write(&[(entry, data)]);
        } else {
            self.sink.batch.push((entry.clone(), data.to_vec()));
            self.sink.batch_bytes += entry.size;
            if self.sink.batch_bytes >= BATCH_BYTES || self.sink.batch.len() >= BATCH_FILES {
                self.sink.flush();
            }
        }
        Ok(())
    }
}

/// Where the walk's files go: batched, hashed and written, remembered by tar offset (which
/// [`tarball::dedupe`] keeps) until the row's order is known.
struct Sink<'a> {
    cas: &'a Cas,
    ignore: Option<&'a regress::Regex>,
    batch: Vec<(TarEntry, Vec<u8>)>,
    batch_bytes: usize,
    written: HashMap<usize, ExtractedFile>,
    package_json: Option<Vec<u8>>,
    /// The first write error; later files are not written, but the walk goes on in case the
    /// tar or the inflate fails, which the whole-buffer path would report first.
    failed: Option<ExtractError>,
    hash_write_ms: f64,
}

impl Sink<'_> {
    fn flush(&mut self) {
        let batch = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let files: Vec<_> = batch.iter().map(|(e, data)| (e, data.as_slice())).collect();
        self.write(&files);
    }

    fn write(&mut self, files: &[(&TarEntry, &[u8])]) {
        if files.is_empty() || self.failed.is_some() {
            return;
        }
        let started = Instant::now();
        match extract::write_files(self.cas, files) {
            Ok(written) => {
                for (file, (entry, _)) in written.into_iter().zip(files) {
                    self.written.insert(entry.offset, file);
                }
            }
            Err(e) => self.failed = Some(e),
        }
        self.hash_write_ms += ms_since(started);
    }
}

#[cfg(test)]
pub(crate) mod tests;
