//! A gzip'd npm tarball into the store, step for step as pnpm 11 does it (docs/store-format.md,
//! "Unpacking a tarball"): integrity of the raw bytes first, then inflate, pnpm's tar walk,
//! every file hashed and written (in parallel for big packages), the manifest, and the index
//! row. A small tarball is inflated
//! into one buffer; a big one is streamed through a window ([`crate::streaming`], see
//! [`stream_above`]), with the same outcome.

use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::blob_files::Cas;
use crate::error_code::ErrorCode;
use crate::feed::{Feed, FeedReader};
use crate::index_db::IndexError;
use crate::index_row::{PackageFileInfo, PackageFilesIndex};
use crate::manifest::Gypfile;
use crate::store_handles::Store;
use crate::timing::ms_since;
use crate::value::Value;
use crate::{gzip, index_row, integrity, json, manifest, os_error, streaming, tarball};

/// What a caller hands over besides the store.
#[derive(Default)]
pub struct ExtractRequest<'a> {
    /// The tarball as downloaded (gzip'd, or a plain tar).
    pub tarball: &'a [u8],
    /// SRI string (`sha512-…`) the raw bytes must hash to.
    pub integrity: Option<&'a str>,
    /// A JS RegExp source; matching paths are neither written nor indexed.
    pub ignore_file_pattern: Option<&'a str>,
    /// Set when JS already found the pattern invalid: its engine's message, so the error reads
    /// exactly like pnpm's. Reported after the integrity check, where pnpm reports it.
    pub ignore_file_pattern_error: Option<&'a str>,
    /// `JSON.stringify(appendManifest, null, 2)`: the manifest of a package shipped without one.
    pub append_manifest: Option<&'a str>,
    /// pnpm 11.28's `maxTarballUnpackedSize`: the most the regular files may add up to. Also
    /// bounds the inflated tar (see [`inflate_cap`]).
    pub max_unpacked_size: Option<u64>,
    /// Inflated size above which the tarball is streamed (see [`stream_above`]); `None`:
    /// [`STREAM_ABOVE`].
    pub stream_above: Option<u64>,
    /// Whether the row's writer reads `gypfile` (pnpm 11.28 does; `@pnpm/worker` 1100.x not).
    pub gypfile: Gypfile,
}

/// One file of the package, in the order of the row's `files` map.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedFile {
    pub path: String,
    pub info: PackageFileInfo,
    pub executable: bool,
}

/// Per-call time split, in milliseconds, so a caller can tell what bounds its install.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    pub inflate_ms: f64,
    pub hash_write_ms: f64,
}

#[derive(Debug)]
pub struct Extracted {
    pub files: Vec<ExtractedFile>,
    /// The bundled manifest (docs/store-format.md, "Index rows"), `None` when it would be
    /// `undefined` in pnpm.
    pub manifest: Option<Value>,
    pub requires_build: bool,
    pub integrity: String,
    /// The msgpackr-encoded index row, byte-identical to what pnpm 11 writes.
    pub row: Vec<u8>,
    pub timings: Timings,
}

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("{0}")]
    Integrity(integrity::IntegrityError),
    #[error("{0}")]
    InvalidIgnorePattern(String),
    #[error("{0}")]
    Gzip(gzip::GzipError),
    /// A malformed tar, or one over `maxTarballUnpackedSize` (its files' sizes, or the inflated
    /// tar past its cap: [`tarball::TarErrorKind::TooLarge`]).
    #[error("{0}")]
    Tar(#[from] tarball::TarError),
    /// A store write that failed, with the path it failed on.
    #[error("{0}")]
    Io(os_error::PathError),
    #[error("{0}")]
    Manifest(String),
}

impl ErrorCode for ExtractError {
    fn code(&self) -> &'static str {
        match self {
            ExtractError::Integrity(e) => e.code(),
            ExtractError::InvalidIgnorePattern(_) => "ERR_PNPM_INVALID_IGNORE_FILE_PATTERN",
            ExtractError::Gzip(e) => e.code(),
            ExtractError::Io(e) => e.code(),
            ExtractError::Tar(e) => e.code(),
            ExtractError::Manifest(_) => "ERR_PNPM_TARBALL_EXTRACT",
        }
    }

    fn site(&self) -> Option<os_error::FsSite> {
        match self {
            ExtractError::Io(e) => e.site(),
            _ => None,
        }
    }

    fn hint(&self) -> Option<&str> {
        match self {
            ExtractError::Tar(e) if e.kind == tarball::TarErrorKind::TooLarge => {
                Some(TOO_LARGE_HINT)
            }
            _ => None,
        }
    }
}

const TOO_LARGE_HINT: &str = "Packages this big are rare and a decompression bomb looks just like one. If the package is trusted and really that big, set maxTarballUnpackedSize higher.";

/// Room for what a tar holds besides file data (a 512-byte header per entry, data padded to
/// 512 bytes, pax and long-name records) when `maxTarballUnpackedSize` bounds the inflated
/// size: as much again as the limit, and at least 1 MiB.
pub const TAR_OVERHEAD_ALLOWANCE_MIN: u64 = 1 << 20;

/// How many bytes a gzip'd tarball may inflate to. Without a limit: no bound, as streaming
/// holds a window whatever the size (a gzip bomb of padding extracts, as in pnpm 11.28). With
/// `maxTarballUnpackedSize = n`: `n + max(n, 1 MiB)`, so a bomb fails once it has inflated past
/// that. Not capped at the whole-buffer path's 4 GiB ([`gzip::MAX_OUTPUT`]): past 32 MiB the tar
/// is streamed, so pnpm's default limit (4 GiB, an 8 GiB cap) lets the padding bomb extract as
/// pnpm 11.28 does. Headers and padding take 512-1,000 bytes per file, so only a package of
/// many small files whose contents nearly reach the limit could be refused by this cap rather
/// than by the sum of its files; the error (`ERR_PNPM_TARBALL_TOO_LARGE`) and its remedy are
/// the same.
pub fn inflate_cap(max_unpacked_size: Option<u64>) -> Option<u64> {
    max_unpacked_size.map(|n| n.saturating_add(n.max(TAR_OVERHEAD_ALLOWANCE_MIN)))
}

/// A gzip error, or, when a `maxTarballUnpackedSize` set the cap that was hit, the limit's error.
pub(crate) fn inflate_error(
    e: gzip::GzipError,
    max_unpacked_size: Option<u64>,
    cap: Option<u64>,
) -> ExtractError {
    match (max_unpacked_size, cap) {
        (Some(max), Some(cap)) if e.kind == gzip::GzipErrorKind::TooLarge => {
            let why = if Some(cap) == inflate_cap(Some(max)) {
                "the limit plus as much again for tar headers"
            } else {
                "the most @cas/native inflates into one buffer"
            };
            ExtractError::Tar(tarball::too_large(
                max,
                format_args!("it inflates past {cap} bytes, {why}"),
            ))
        }
        _ => ExtractError::Gzip(e),
    }
}

/// A tar whose very first header is unreadable was never an archive: say so first, keeping the
/// parser's own words (pnpm's) after it.
fn not_an_archive(mut e: tarball::TarError, gzipped: bool) -> tarball::TarError {
    if e.kind == tarball::TarErrorKind::NotTar {
        let what = if gzipped {
            "the gzip data is not a tar archive"
        } else {
            "the buffer is not a gzip or tar archive"
        };
        e.message = format!("{what} ({})", e.message);
    }
    e
}

/// How much work a tarball is, for the pool's longest-job-first order: its inflated size as
/// the gzip trailer gives it (mod 2^32, of the last member; a guess, not a promise), or its
/// length when that says less (a plain tar, a padded stream, a trailer that lies).
pub fn estimated_work(tarball: &[u8]) -> u64 {
    let inflated = if gzip::is_gzip(tarball) {
        gzip::trailer_size(tarball) as u64
    } else {
        0
    };
    inflated.max(tarball.len() as u64)
}

/// The default of [`stream_above`]: measured on the 2-core benchmark machine (see
/// benchmark/RESULTS.md), streaming costs about what the whole-buffer path does for big
/// tarballs, while most npm tarballs inflate to under 1 MB and keep the whole-buffer path's
/// per-file parallelism.
pub const STREAM_ABOVE: u64 = 32 << 20;

/// Gzip'd tarballs whose trailer promises to inflate to at most this many bytes are inflated
/// into one buffer (its files hashed and written in parallel); bigger ones, and any that
/// inflate past it whatever the trailer said, are streamed ([`crate::streaming`]), so an
/// extraction never holds more than this plus a window. `CAS_NATIVE_STREAM_ABOVE` overrides
/// [`STREAM_ABOVE`] (0 streams everything); callers read it per call, on their own thread.
pub fn stream_above() -> u64 {
    std::env::var("CAS_NATIVE_STREAM_ABOVE")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(STREAM_ABOVE)
}

/// Below this many files a package is hashed and written on the calling thread: splitting a
/// handful of small files across threads costs more than it saves, and many small packages in
/// flight already keep every core busy.
const PARALLEL_MIN_FILES: usize = 32;

pub fn extract(cas: &Cas, req: &ExtractRequest) -> Result<Extracted, ExtractError> {
    if let Some(sri) = req.integrity {
        integrity::verify(sri, req.tarball).map_err(ExtractError::Integrity)?;
    }
    let ignore = compile_ignore_pattern(req)?;
    let unpacked = unpack(cas, req, ignore.as_ref())?;
    finish(cas, unpacked, req, req.tarball)
}

/// [`extract`] for a gzip'd tarball that is still arriving (`req.tarball` is not read): it is
/// streamed as it comes. The integrity is checked over every byte once the last has arrived,
/// and its error, then the ignore pattern's, come before any other, as in [`extract`]; no row
/// is made unless both pass.
pub fn extract_fed(
    cas: &Cas,
    req: &ExtractRequest,
    feed: Arc<Feed>,
) -> Result<Extracted, ExtractError> {
    // The pattern's error waits for the integrity check.
    let unpacked = compile_ignore_pattern(req)
        .map(|ignore| streamed(cas, FeedReader::new(feed.clone()), req, ignore.as_ref()));
    let tarball = feed.take_all().map_err(ExtractError::Gzip)?;
    if let Some(sri) = req.integrity {
        integrity::verify(sri, &tarball).map_err(ExtractError::Integrity)?;
    }
    let unpacked = unpacked??;
    finish(cas, unpacked, req, &tarball)
}

/// Inflates, walks and writes: the whole tar in one buffer when it is small (or not gzip'd),
/// else streamed. A whole-buffer inflate stops at [`stream_above`] bytes, so a trailer that
/// promised less than it holds (it only gives the last member's size, mod 2^32) costs that
/// much wasted inflating before the tarball is streamed from its start.
fn unpack(
    cas: &Cas,
    req: &ExtractRequest,
    ignore: Option<&regress::Regex>,
) -> Result<Unpacked, ExtractError> {
    if !gzip::is_gzip(req.tarball) {
        return unpack_whole(cas, req.tarball, false, req.max_unpacked_size, ignore, 0.0);
    }
    let cap = inflate_cap(req.max_unpacked_size);
    let stream_above = req.stream_above.unwrap_or(STREAM_ABOVE);
    // Past the whole-buffer path's own bound, the cap decides (the old 4 GiB one when
    // streaming is turned off).
    let whole_limit = cap
        .unwrap_or(u64::MAX)
        .min(gzip::MAX_OUTPUT as u64)
        .min(stream_above);
    if gzip::trailer_size(req.tarball) as u64 <= stream_above {
        let started = Instant::now();
        match gzip::gunzip_limited(req.tarball, whole_limit as usize) {
            Ok(tar) => {
                return unpack_whole(
                    cas,
                    &tar,
                    true,
                    req.max_unpacked_size,
                    ignore,
                    ms_since(started),
                )
            }
            Err(e) if e.kind != gzip::GzipErrorKind::TooLarge || whole_limit < stream_above => {
                // The bound that was hit: the limit's cap, or the one buffer's.
                return Err(inflate_error(e, req.max_unpacked_size, Some(whole_limit)));
            }
            Err(_) => {}
        }
    }
    streamed(cas, gzip::Slice::new(req.tarball), req, ignore)
}

/// [`streaming::unpack`], its package.json parsed.
fn streamed<R: gzip::Input>(
    cas: &Cas,
    input: R,
    req: &ExtractRequest,
    ignore: Option<&regress::Regex>,
) -> Result<Unpacked, ExtractError> {
    let cap = inflate_cap(req.max_unpacked_size);
    let unpacked =
        streaming::unpack(cas, input, cap, req.max_unpacked_size, ignore).map_err(|e| match e {
            ExtractError::Tar(e) => ExtractError::Tar(not_an_archive(e, true)),
            e => e,
        })?;
    let package_json = unpacked
        .package_json
        .as_deref()
        .map(parse_package_json)
        .transpose()?;
    Ok(Unpacked {
        files: unpacked.files,
        package_json,
        inflate_ms: unpacked.inflate_ms,
        hash_write_ms: unpacked.hash_write_ms,
    })
}

/// A package's files once written, with its parsed package.json.
struct Unpacked {
    files: Vec<ExtractedFile>,
    package_json: Option<Value>,
    inflate_ms: f64,
    hash_write_ms: f64,
}

/// Walks a whole tar (inflated from gzip when `gzipped`) and writes its files (in parallel for
/// many).
fn unpack_whole(
    cas: &Cas,
    tar: &[u8],
    gzipped: bool,
    max_unpacked_size: Option<u64>,
    ignore: Option<&regress::Regex>,
    inflate_ms: f64,
) -> Result<Unpacked, ExtractError> {
    let started = Instant::now();
    let mut entries = tarball::parse_limited(tar, max_unpacked_size)
        .map_err(|e| ExtractError::Tar(not_an_archive(e, gzipped)))?;
    if let Some(re) = ignore {
        entries.retain(|e| re.find(&e.path).is_none());
    }
    let files: Vec<_> = entries
        .iter()
        .map(|e| (e, &tar[e.offset..e.offset + e.size]))
        .collect();
    let written = write_files(cas, &files)?;
    // The manifest is parsed only after every blob is written, as in pnpm: a broken
    // package.json fails the call but leaves the store with complete blobs only.
    let package_json = files
        .iter()
        .find(|(e, _)| e.path == "package.json")
        .map(|(_, data)| parse_package_json(data))
        .transpose()?;
    Ok(Unpacked {
        files: written,
        package_json,
        inflate_ms,
        hash_write_ms: ms_since(started),
    })
}

/// Hashes and writes files into the store, in tar order; on many threads for many files.
pub(crate) fn write_files(
    cas: &Cas,
    files: &[(&tarball::TarEntry, &[u8])],
) -> Result<Vec<ExtractedFile>, ExtractError> {
    let write = |&(e, data): &(&tarball::TarEntry, &[u8])| -> Result<ExtractedFile, ExtractError> {
        let stored = cas.write(data, e.mode).map_err(ExtractError::Io)?;
        Ok(ExtractedFile {
            path: e.path.clone(),
            info: PackageFileInfo {
                checked_at: Some(stored.checked_at),
                digest: stored.digest,
                mode: e.mode,
                size: e.size as u64,
            },
            executable: stored.executable,
        })
    };
    if files.len() >= PARALLEL_MIN_FILES {
        files.par_iter().map(write).collect()
    } else {
        files.iter().map(write).collect()
    }
}

/// The manifest, the placeholder or appended package.json, and the index row.
fn finish(
    cas: &Cas,
    unpacked: Unpacked,
    req: &ExtractRequest,
    tarball: &[u8],
) -> Result<Extracted, ExtractError> {
    let started = Instant::now();
    let mut files = unpacked.files;
    let raw_manifest =
        complete_package_json(cas, &mut files, unpacked.package_json, req.append_manifest)?;
    let hash_write_ms = unpacked.hash_write_ms + ms_since(started);

    let bundled = match &raw_manifest {
        Some(m) => manifest::normalize_bundled_manifest(m, req.gypfile)
            .map_err(|e| ExtractError::Manifest(e.to_string()))?,
        None => None,
    };
    let requires_build = manifest::requires_build(
        bundled.as_ref(),
        files.iter().map(|f| f.path.as_str()),
        req.gypfile,
    );
    let row = index_row::encode_row(&PackageFilesIndex {
        requires_build: Some(requires_build),
        // pnpm 11 writes the key even when the manifest is `undefined`.
        manifest: Some(bundled.clone().unwrap_or(Value::Undefined)),
        algo: "sha512".into(),
        files: files
            .iter()
            .map(|f| (f.path.clone(), f.info.clone()))
            .collect(),
        side_effects: None,
    });
    let integrity = match req.integrity {
        Some(sri) => sri.to_string(),
        None => integrity::sha512_sri(tarball),
    };
    Ok(Extracted {
        files,
        manifest: bundled,
        requires_build,
        integrity,
        row,
        timings: Timings {
            inflate_ms: unpacked.inflate_ms,
            hash_write_ms,
        },
    })
}

fn compile_ignore_pattern(req: &ExtractRequest) -> Result<Option<regress::Regex>, ExtractError> {
    let Some(pattern) = req.ignore_file_pattern else {
        return Ok(None);
    };
    let invalid = |message: &str| {
        ExtractError::InvalidIgnorePattern(format!(
            "Invalid ignoreFilePattern regex: {message}: {pattern}"
        ))
    };
    if let Some(message) = req.ignore_file_pattern_error {
        return Err(invalid(message));
    }
    regress::Regex::new(pattern)
        .map(Some)
        .map_err(|e| invalid(&e.to_string()))
}

/// `JSON.parse(stripBom(bytes.toString('utf8')))`.
pub(crate) fn parse_package_json(bytes: &[u8]) -> Result<Value, ExtractError> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    json::parse(text).map_err(|e| ExtractError::Manifest(e.to_string()))
}

/// Gives the package the `package.json` it lacks, as pnpm does: `appendManifest` (written with
/// `JSON.stringify(m, null, 2)`) when there is no usable manifest, else the placeholder when
/// there is no `package.json` at all. Every package in the store thereby has the completion
/// marker importers rely on. Returns the manifest to use (`null` counts as none).
pub(crate) fn complete_package_json(
    cas: &Cas,
    files: &mut Vec<ExtractedFile>,
    manifest: Option<Value>,
    append_manifest: Option<&str>,
) -> Result<Option<Value>, ExtractError> {
    let manifest = manifest.filter(|m| !m.is_nullish());
    let generated: &[u8] = match append_manifest {
        Some(text) if manifest.is_none() => {
            let appended = parse_package_json(text.as_bytes())?;
            set_file(files, write_generated(cas, text.as_bytes())?);
            return Ok(Some(appended));
        }
        _ if files.iter().any(|f| f.path == "package.json") => return Ok(manifest),
        _ => manifest::PLACEHOLDER_PACKAGE_JSON,
    };
    set_file(files, write_generated(cas, generated)?);
    Ok(manifest)
}

fn write_generated(cas: &Cas, bytes: &[u8]) -> Result<ExtractedFile, ExtractError> {
    let stored = cas.write(bytes, 0o644).map_err(ExtractError::Io)?;
    Ok(ExtractedFile {
        path: "package.json".into(),
        info: PackageFileInfo {
            checked_at: Some(stored.checked_at),
            digest: stored.digest,
            mode: 0o644,
            size: bytes.len() as u64,
        },
        executable: false,
    })
}

/// JS `Map.set`: replaces in place when the key exists, appends otherwise.
fn set_file(files: &mut Vec<ExtractedFile>, file: ExtractedFile) {
    match files.iter_mut().find(|f| f.path == file.path) {
        Some(existing) => *existing = file,
        None => files.push(file),
    }
}

/// Whether a tarball arriving chunk by chunk starts streaming now, while the rest downloads:
/// once more than `stream_above / 32` bytes (1 MiB by default) of gzip data have arrived.
/// Smaller tarballs are extracted whole at their end, as [`extract`] extracts a buffer.
pub fn streams_while_fed(feed: &Feed, stream_above: u64) -> bool {
    feed.received() as u64 > stream_above / 32 && feed.peek(gzip::is_gzip)
}

/// What to do with an extraction's index row.
#[derive(Debug, Clone, Copy, Default)]
pub struct RowUse {
    /// Commit it to the store's `index.db` (under the caller's key).
    pub write: bool,
    /// Hand its bytes back (for a caller that writes the index itself, as pnpm's
    /// `StoreIndex.queueWrites` does).
    pub hand_back: bool,
}

/// An extraction whose row went where [`RowUse`] said.
#[derive(Debug)]
pub struct Indexed {
    /// The extraction; its `row` is empty (the row is in the index, or in `row`).
    pub extracted: Extracted,
    /// The row's bytes, with [`RowUse::hand_back`].
    pub row: Option<Vec<u8>>,
    /// Waiting for the row to be committed (0 without [`RowUse::write`]).
    pub index_ms: f64,
}

/// The step after [`extract`]: the row committed to `store`'s index under `key` (on the index
/// writer thread, with every row queued beside it) and/or handed back; `done` runs once that is
/// over, on whichever thread finished it.
pub fn write_row(
    store: &Store,
    key: String,
    mut extracted: Extracted,
    use_row: RowUse,
    done: impl FnOnce(Result<Indexed, IndexError>) + Send + 'static,
) {
    let row = std::mem::take(&mut extracted.row);
    if !use_row.write {
        let row = use_row.hand_back.then_some(row);
        return done(Ok(Indexed {
            extracted,
            row,
            index_ms: 0.0,
        }));
    }
    let handed_back = use_row.hand_back.then(|| row.clone());
    let started = Instant::now();
    store.index.submit(
        vec![(key, row)],
        Box::new(move |committed: Result<(), IndexError>| {
            let index_ms = ms_since(started);
            done(committed.map(|()| Indexed {
                extracted,
                row: handed_back,
                index_ms,
            }));
        }),
    );
}

#[cfg(test)]
mod tests;
