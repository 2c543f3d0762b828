//! napi conversions for `extractTarball` and `TarballWriter`; the threads they run on are
//! core's (`cas_native_core::writer`).

use std::path::PathBuf;

use napi::bindgen_prelude::{Buffer, Object, Uint8Array};
use napi::{Env, JsDeferred};
use napi_derive::napi;

use super::error::NativeError;
use cas_native_core::extract::{self, ExtractError, ExtractedFile, RowUse};
use cas_native_core::integrity::IntegrityError;
use cas_native_core::json;
use cas_native_core::writer::{self, Finished, Job, JobError, JobResult};

/// Where and how a tarball is extracted (the tarball itself is passed beside it, or written).
#[napi(object)]
pub struct ExtractOptions {
    pub store_dir: String,
    /// `path.join(storeDir, 'files')`, so blob paths read exactly as pnpm's do.
    pub files_dir: String,
    /// The index key (pnpm's `filesIndexFile`).
    pub files_index_file: String,
    pub integrity: Option<String>,
    pub ignore_file_pattern: Option<String>,
    /// The JS engine's message when `ignoreFilePattern` is not a valid RegExp.
    pub ignore_file_pattern_error: Option<String>,
    /// `JSON.stringify(appendManifest, null, 2)`.
    pub append_manifest_json: Option<String>,
    /// Commit the row to `<storeDir>/index.db` before resolving.
    pub write_index: bool,
    /// Hand back the row's bytes (for a caller that writes the index itself, as pnpm's
    /// `StoreIndex.queueWrites` does).
    pub return_index_row: bool,
    /// The store is frozen (pnpm's `frozenStore`): the index write fails with
    /// `ERR_PNPM_FROZEN_STORE_WRITE`, as pnpm's read-only index refuses it.
    pub frozen_store: Option<bool>,
    /// pnpm 11.28's `maxTarballUnpackedSize` (a non-negative safe integer, checked in JS): the
    /// most the regular files may add up to; also caps the inflated tar at `n + max(n, 1 MiB)`
    /// (`extract::inflate_cap`). Over it: `ERR_PNPM_TARBALL_TOO_LARGE`.
    pub max_tarball_unpacked_size: Option<f64>,
    /// Whose rows to write: `'@pnpm/worker@1100'` (the default) or `'pnpm@11.28'`, which reads
    /// the manifest's `gypfile` (`cas_native_core::manifest::Gypfile`).
    pub compat: Option<String>,
}

/// Where the time of one call went, in milliseconds.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct ExtractTimings {
    /// Waiting for a thread of the extraction pool.
    pub queued_ms: f64,
    pub inflate_ms: f64,
    /// Tar walk, SHA-512 and blob writes.
    pub hash_write_ms: f64,
    /// Waiting for the index row to be committed (0 without `writeIndex`).
    pub index_ms: f64,
}

/// The outcome of `extractTarball`: either `error`, or everything else.
#[napi(object)]
pub struct ExtractResult {
    pub error: Option<NativeError>,
    /// The package's relative paths, in the row's `files` order.
    pub paths: Option<Vec<String>>,
    /// The absolute blob path of each entry of `paths`.
    pub blob_paths: Option<Vec<String>>,
    /// The bundled manifest as JSON, absent when pnpm's would be `undefined`.
    pub manifest_json: Option<String>,
    pub requires_build: Option<bool>,
    pub integrity: Option<String>,
    /// The msgpackr-encoded index row, when `returnIndexRow` was set.
    pub index_row: Option<Buffer>,
    pub timings: Option<ExtractTimings>,
}

type Resolver = Box<dyn FnOnce(Env) -> napi::Result<ExtractResult> + Send>;

/// Extracts a tarball into the store on the extraction pool and resolves once its blobs are
/// written and (with `writeIndex`) its index row committed. Never rejects: failures resolve as
/// `{ error }`. `buffer` is the tarball as downloaded, read in place (never copied), also when
/// it is a view over a `SharedArrayBuffer`; it must not be modified until the promise settles.
#[napi(ts_return_type = "Promise<ExtractResult>")]
pub fn extract_tarball(
    env: &Env,
    buffer: Uint8Array,
    opts: ExtractOptions,
) -> napi::Result<Object<'_>> {
    let (deferred, promise) = env.create_deferred::<ExtractResult, Resolver>()?;
    let (job, files_dir) = job(opts)?;
    writer::spawn_extract(job, buffer, settler(deferred, files_dir));
    Ok(promise)
}

/// A tarball written chunk by chunk as it downloads (`write`, then `end` or `abort`). Small
/// tarballs are extracted at `end`, from the whole buffer, as `extractTarball` does; once more
/// than `CAS_NATIVE_STREAM_ABOVE / 32` bytes (1 MiB by default) of a gzip'd one have arrived,
/// a thread of its own starts streaming it while the rest downloads. Its reads wait for the
/// network, so it stays off the extraction pool.
#[napi]
pub struct TarballWriter {
    inner: writer::TarballWriter,
    files_dir: String,
}

#[napi]
impl TarballWriter {
    #[napi(constructor)]
    pub fn new(opts: ExtractOptions) -> napi::Result<Self> {
        let (job, files_dir) = job(opts)?;
        Ok(TarballWriter {
            inner: writer::TarballWriter::new(job),
            files_dir,
        })
    }

    /// Appends a chunk (copied). Ignored after `end` or `abort`.
    #[napi]
    pub fn write(&mut self, chunk: Uint8Array) {
        self.inner.write(&chunk);
    }

    /// No more chunks: resolves as `extractTarball` does.
    #[napi(ts_return_type = "Promise<ExtractResult>")]
    pub fn end<'env>(&mut self, env: &'env Env) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<ExtractResult, Resolver>()?;
        self.inner.end(settler(deferred, self.files_dir.clone()));
        Ok(promise)
    }

    /// The download failed: a streaming extraction stops (writing no row), later calls are
    /// ignored, and `end` is not to be called. After `end` it does nothing: the tarball is
    /// whole, and a caller's cleanup must not fail it.
    #[napi]
    pub fn abort(&mut self) {
        self.inner.abort();
    }
}

/// The core job for `opts`, and the files dir its blob paths are reported under. Reads
/// `CAS_NATIVE_STREAM_ABOVE` here, on the JS thread, which is the one that sets environment
/// variables.
fn job(opts: ExtractOptions) -> napi::Result<(Job, String)> {
    let gypfile = super::add_dir::compat_of(opts.compat.as_deref())?.gypfile();
    let job = Job {
        store_dir: PathBuf::from(opts.store_dir),
        frozen_store: opts.frozen_store == Some(true),
        key: opts.files_index_file,
        row_use: RowUse {
            write: opts.write_index,
            hand_back: opts.return_index_row,
        },
        integrity: opts.integrity,
        ignore_file_pattern: opts.ignore_file_pattern,
        ignore_file_pattern_error: opts.ignore_file_pattern_error,
        append_manifest: opts.append_manifest_json,
        max_unpacked_size: opts.max_tarball_unpacked_size.map(|n| n as u64),
        stream_above: extract::stream_above(),
        gypfile,
    };
    Ok((job, opts.files_dir))
}

/// What settles the promise when the job is done.
fn settler(
    deferred: JsDeferred<ExtractResult, Resolver>,
    files_dir: String,
) -> impl FnOnce(JobResult) + Send + 'static {
    move |result| {
        let result = result
            .map(|finished| success(finished, &files_dir))
            .map_err(|e| match e {
                JobError::Extract(e) => to_native_error(&e),
                JobError::Index(e) => NativeError::of(&e),
                JobError::Panic(panic) => super::task::panic_error(panic),
            });
        settle(deferred, result);
    }
}

/// Settles on the JS thread; everything that builds JS values happens there.
fn settle(deferred: JsDeferred<ExtractResult, Resolver>, result: Result<Success, NativeError>) {
    deferred.resolve(Box::new(move |_env| {
        Ok(match result {
            Ok(s) => ExtractResult {
                error: None,
                paths: Some(s.paths),
                blob_paths: Some(s.blob_paths),
                manifest_json: s.manifest_json,
                requires_build: Some(s.requires_build),
                integrity: Some(s.integrity),
                index_row: s.index_row.map(Buffer::from),
                timings: Some(s.timings),
            },
            Err(error) => ExtractResult {
                error: Some(error),
                paths: None,
                blob_paths: None,
                manifest_json: None,
                requires_build: None,
                integrity: None,
                index_row: None,
                timings: None,
            },
        })
    }));
}

/// A finished extraction in plain Rust data, ready to become JS values.
struct Success {
    paths: Vec<String>,
    blob_paths: Vec<String>,
    manifest_json: Option<String>,
    requires_build: bool,
    integrity: String,
    index_row: Option<Vec<u8>>,
    timings: ExtractTimings,
}

fn success(finished: Finished, files_dir: &str) -> Success {
    let Finished { indexed, queued_ms } = finished;
    let extracted = indexed.extracted;
    let timings = ExtractTimings {
        queued_ms,
        inflate_ms: extracted.timings.inflate_ms,
        hash_write_ms: extracted.timings.hash_write_ms,
        index_ms: indexed.index_ms,
    };
    let (paths, blob_paths) = file_paths(extracted.files, files_dir);
    Success {
        paths,
        blob_paths,
        manifest_json: extracted.manifest.as_ref().map(json::stringify_pretty),
        requires_build: extracted.requires_build,
        integrity: extracted.integrity,
        index_row: indexed.row,
        timings,
    }
}

/// A package's `filesMap` as two parallel arrays (relative path, absolute blob path): two
/// strings per file is the cheapest shape to cross into JS, where the `Map` is built.
pub(super) fn file_paths(files: Vec<ExtractedFile>, files_dir: &str) -> (Vec<String>, Vec<String>) {
    let mut paths = Vec::with_capacity(files.len());
    let mut blob_paths = Vec::with_capacity(files.len());
    for file in files {
        let blob = cas_native_core::blob_files::blob_path(
            files_dir,
            '/',
            &file.info.digest,
            file.executable,
        );
        blob_paths.push(blob);
        paths.push(file.path);
    }
    (paths, blob_paths)
}

fn to_native_error(e: &ExtractError) -> NativeError {
    let mut error = NativeError::of(e);
    if let ExtractError::Integrity(IntegrityError::Mismatch {
        algorithm,
        expected,
        found,
    }) = e
    {
        error.expected = Some(expected.clone());
        error.found = Some(found.clone());
        error.algorithm = Some(algorithm.clone());
    }
    error
}
