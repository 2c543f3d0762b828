use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use napi::bindgen_prelude::{Buffer, Object, Uint8Array};
use napi::{Env, JsDeferred};
use napi_derive::napi;

use super::error::NativeError;
use cas_native_core::extract::{
    self, ExtractError, ExtractRequest, Extracted, ExtractedFile, Indexed, RowUse,
};
use cas_native_core::feed::Feed;
use cas_native_core::integrity::IntegrityError;
use cas_native_core::timing::ms_since;
use cas_native_core::{json, pools, store_handles};

/// Where and how a tarball is extracted (the tarball itself is passed beside it, or written).
#[napi(object)]
#[derive(Clone)]
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
    let submitted = Instant::now();
    // Read here, on the JS thread, which is the one that sets environment variables.
    let stream_above = extract::stream_above();
    let work = extract::estimated_work(&buffer);
    pools::spawn_extraction(work, move || {
        let queued_ms = ms_since(submitted);
        let store = open_store(&opts);
        let outcome = super::task::catch_panic("extracting", || {
            extract::extract(&store.cas, &request(&opts, &buffer, stream_above))
        });
        drop(buffer);
        complete(&store, opts, outcome, queued_ms, deferred);
    });
    Ok(promise)
}

/// A tarball written chunk by chunk as it downloads (`write`, then `end` or `abort`). Small
/// tarballs are extracted at `end`, from the whole buffer, as `extractTarball` does; once more
/// than `CAS_NATIVE_STREAM_ABOVE / 32` bytes (1 MiB by default) of a gzip'd one have arrived,
/// a thread of its own starts streaming it while the rest downloads. Its reads wait for the
/// network, so it stays off the extraction pool.
#[napi]
pub struct TarballWriter {
    opts: ExtractOptions,
    feed: Arc<Feed>,
    stream_above: u64,
    streaming: Option<JoinHandle<Outcome>>,
    ended: bool,
}

#[napi]
impl TarballWriter {
    #[napi(constructor)]
    pub fn new(opts: ExtractOptions) -> Self {
        TarballWriter {
            opts,
            feed: Feed::new(),
            stream_above: extract::stream_above(),
            streaming: None,
            ended: false,
        }
    }

    /// Appends a chunk (copied). Ignored after `end` or `abort`.
    #[napi]
    pub fn write(&mut self, chunk: Uint8Array) {
        if self.ended {
            return;
        }
        self.feed.push(&chunk);
        if self.streaming.is_none() && extract::streams_while_fed(&self.feed, self.stream_above) {
            let (opts, feed, stream_above) =
                (self.opts.clone(), self.feed.clone(), self.stream_above);
            self.streaming = Some(std::thread::spawn(move || {
                let store = open_store(&opts);
                super::task::catch_panic("extracting", || {
                    extract::extract_fed(&store.cas, &request(&opts, &[], stream_above), feed)
                })
            }));
        }
    }

    /// No more chunks: resolves as `extractTarball` does.
    #[napi(ts_return_type = "Promise<ExtractResult>")]
    pub fn end<'env>(&mut self, env: &'env Env) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<ExtractResult, Resolver>()?;
        self.ended = true;
        self.feed.end();
        let (opts, feed, stream_above) = (self.opts.clone(), self.feed.clone(), self.stream_above);
        let submitted = Instant::now();
        match self.streaming.take() {
            // Streamed: its thread finishes the tail and then it commits the row on a thread of
            // its own, neither queued behind the pool's waiting extractions nor holding one of
            // its threads while it waits.
            Some(thread) => {
                std::thread::spawn(move || {
                    // catch_panic inside the thread already turned a panic into an Err.
                    let outcome = thread
                        .join()
                        .unwrap_or_else(|_| Err("internal error while extracting".into()));
                    complete(&open_store(&opts), opts, outcome, 0.0, deferred);
                });
            }
            // The whole tarball waits for the pool, ranked by its size like any extraction.
            None => {
                let work = self.feed.peek(extract::estimated_work);
                pools::spawn_extraction(work, move || {
                    let queued_ms = ms_since(submitted);
                    let store = open_store(&opts);
                    let outcome = super::task::catch_panic("extracting", || {
                        let tarball = feed.take_all().map_err(ExtractError::Gzip)?;
                        extract::extract(&store.cas, &request(&opts, &tarball, stream_above))
                    });
                    complete(&store, opts, outcome, queued_ms, deferred);
                });
            }
        }
        Ok(promise)
    }

    /// The download failed: a streaming extraction stops (writing no row), later calls are
    /// ignored, and `end` is not to be called. After `end` it does nothing: the tarball is
    /// whole, and a caller's cleanup must not fail it.
    #[napi]
    pub fn abort(&mut self) {
        if !self.ended {
            self.ended = true;
            self.feed.abort();
        }
    }
}

/// A writer dropped (garbage-collected) without `end` or `abort`: its streaming thread, which
/// would otherwise wait for more bytes forever, stops.
impl Drop for TarballWriter {
    fn drop(&mut self) {
        self.abort();
    }
}

fn open_store(opts: &ExtractOptions) -> Arc<store_handles::Store> {
    store_handles::open_as(Path::new(&opts.store_dir), opts.frozen_store == Some(true))
}

fn request<'a>(
    opts: &'a ExtractOptions,
    tarball: &'a [u8],
    stream_above: u64,
) -> ExtractRequest<'a> {
    ExtractRequest {
        tarball,
        integrity: opts.integrity.as_deref(),
        ignore_file_pattern: opts.ignore_file_pattern.as_deref(),
        ignore_file_pattern_error: opts.ignore_file_pattern_error.as_deref(),
        append_manifest: opts.append_manifest_json.as_deref(),
        max_unpacked_size: opts.max_tarball_unpacked_size.map(|n| n as u64),
        stream_above: Some(stream_above),
    }
}

/// An extraction's end: its result or error, or the message of a panic (a bug in the addon:
/// [`super::task::panic_error`], not an extraction failure).
type Outcome = Result<Result<Extracted, ExtractError>, String>;

/// Hands the extraction on to [`extract::write_row`] and settles with what it gives.
fn complete(
    store: &store_handles::Store,
    opts: ExtractOptions,
    outcome: Outcome,
    queued_ms: f64,
    deferred: JsDeferred<ExtractResult, Resolver>,
) {
    let extracted = match outcome {
        Ok(Ok(extracted)) => extracted,
        Ok(Err(e)) => return settle(deferred, Err(to_native_error(&e))),
        Err(panic) => return settle(deferred, Err(super::task::panic_error(panic))),
    };
    let use_row = RowUse {
        write: opts.write_index,
        hand_back: opts.return_index_row,
    };
    let files_dir = opts.files_dir;
    extract::write_row(
        store,
        opts.files_index_file,
        extracted,
        use_row,
        move |indexed| {
            let result = indexed
                .map(|indexed| success(indexed, &files_dir, queued_ms))
                .map_err(|e| NativeError::of(&e));
            settle(deferred, result);
        },
    );
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

fn success(indexed: Indexed, files_dir: &str, queued_ms: f64) -> Success {
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
