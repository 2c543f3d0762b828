//! `readPkgs`: pnpm's `readPkgFromCafs` for one key or a lockfile's worth, as one promise.
//!
//! Results go back compact: a package's relative paths as one NUL-separated string, and its blob
//! names (the part of each blob path below `<storeDir>/files/`) as another. Creating a JS string
//! through N-API costs far more than V8 splitting one: a lockfile's worth of file maps is ~40k
//! paths, which as separate strings took longer to convert than the whole read. The TypeScript
//! layer splits them and builds the `Map`s pnpm's API hands out.

use std::path::Path;
use std::sync::Mutex;

use napi::bindgen_prelude::{Either, Latin1String, Object};
use napi::{Env, JsDeferred};
use napi_derive::napi;

use super::error::NativeError;
use cas_native_core::index_row::PackageFileInfo;
use cas_native_core::manifest::Gypfile;
use cas_native_core::read_package::{self, ExpectedPkg, PkgRead, ReadError, ReadRequest, Tally};
use cas_native_core::{json, pools, store_handles};

#[napi(object)]
pub struct ExpectedPkgOptions {
    pub name: Option<String>,
    pub version: Option<String>,
}

#[napi(object)]
pub struct ReadPkgsOptions {
    pub store_dir: String,
    pub keys: Vec<String>,
    pub verify_store_integrity: bool,
    pub strict_store_pkg_content_check: bool,
    /// Open the index read-only and immutable (pnpm's `frozenStore`).
    pub frozen_store: bool,
    /// Read side-effects symlink entries back as pnpm 11.28 does (`symlinkPaths`/
    /// `symlinkTargets` of each entry; entries that cannot be restored are left out).
    pub side_effects_symlinks: Option<bool>,
    /// Whose reading of a row's `requiresBuild` to reproduce: `'@pnpm/worker@1100'` (the
    /// default) or `'pnpm@11.28'`, which reads `gypfile` (`read_package::ReadRequest::gypfile`).
    pub compat: Option<String>,
    /// The package expected under each key (same length as `keys`), if any.
    pub expected_pkgs: Option<Vec<Option<ExpectedPkgOptions>>>,
}

/// A file as the index row records it (for pnpm's `sideEffectsDiffs`).
#[napi(object)]
pub struct StoredFileInfo {
    pub checked_at: Option<f64>,
    pub digest: String,
    pub mode: u32,
    pub size: f64,
}

/// One side-effects entry kept by the read (rare: only built packages have them).
#[napi(object)]
pub struct SideEffectsEntry {
    pub cache_key: String,
    pub added_paths: Option<Vec<String>>,
    /// Blob names (below `files/`) of the added files, parallel to `addedPaths`.
    pub added_blob_names: Option<Vec<String>>,
    /// The stored infos of the added files, parallel to `addedPaths`.
    pub added_infos: Option<Vec<StoredFileInfo>>,
    pub deleted: Option<Vec<String>>,
    /// With `sideEffectsSymlinks`: the entry's symlinks (link paths and targets, pairwise),
    /// which pnpm 11.28 keeps out of `sideEffectsMaps`' `added`.
    pub symlink_paths: Option<Vec<String>>,
    pub symlink_targets: Option<Vec<String>>,
}

#[napi(object)]
pub struct QuarantineEntry {
    pub cache_key: String,
    pub reasons: Vec<String>,
}

/// The answer for one key: `error`, or a miss (`found: false`), or a hit.
#[napi(object)]
pub struct ReadPkgEntry {
    pub error: Option<NativeError>,
    pub found: bool,
    pub verified: bool,
    /// How many files the package has (`paths`/`blobNames` are empty strings when 0).
    pub file_count: u32,
    /// Relative paths in the row's order, joined with NUL.
    #[napi(ts_type = "string")]
    pub paths: Option<JsText>,
    /// Each file's blob path without the `<storeDir><sep>files<sep>` prefix, joined with NUL.
    #[napi(ts_type = "string")]
    pub blob_names: Option<JsText>,
    /// The row's manifest as JSON; absent when it is `undefined`.
    pub manifest_json: Option<String>,
    pub requires_build: bool,
    pub side_effects: Option<Vec<SideEffectsEntry>>,
    pub requires_prepare: Option<bool>,
    pub remote_side_effects_quarantine: Option<Vec<QuarantineEntry>>,
    pub warnings: Vec<String>,
    /// Blobs hashed while verifying this package, and the milliseconds spent on them.
    pub verified_files: u32,
    pub verified_ms: f64,
}

/// A part of the answers of a call: `entries[j]` answers `keys[indices[j]]`.
#[napi(object)]
pub struct ReadPkgsChunk {
    /// The index itself could not be read; this and every later chunk carry the error.
    pub error: Option<NativeError>,
    pub indices: Vec<u32>,
    pub entries: Vec<ReadPkgEntry>,
    /// Blobs hashed while verifying this chunk's packages, and the milliseconds spent on them.
    pub verified_files: u32,
    pub verified_ms: f64,
}

type Resolver = Box<dyn FnOnce(Env) -> napi::Result<ReadPkgsChunk> + Send>;

/// Answers per chunk. The first chunks are handed to JS while the pool is still working on the
/// rest, so that turning answers into JS values (the part that has to run on the JS thread)
/// overlaps the native work instead of following it.
const ANSWERS_PER_CHUNK: usize = 128;

/// Reads the index rows of `keys` (a few SQL statements for all of them, one snapshot) and
/// decodes and verifies them in parallel on the worker pool. Returns one promise per chunk of
/// answers, `ceil(keys.length / 128)` of them (at least one), each resolving as soon as that
/// many answers are ready, in whatever order the packages finish. Never rejects: failures
/// resolve as data.
#[napi(ts_return_type = "Array<Promise<ReadPkgsChunk>>")]
pub fn read_pkgs(env: &Env, opts: ReadPkgsOptions) -> napi::Result<Vec<Object<'_>>> {
    let gypfile = super::add_dir::compat_of(opts.compat.as_deref())?.gypfile();
    let count = opts.keys.len().div_ceil(ANSWERS_PER_CHUNK).max(1);
    let mut deferreds = Vec::with_capacity(count);
    let mut promises = Vec::with_capacity(count);
    for _ in 0..count {
        let (deferred, promise) = env.create_deferred::<ReadPkgsChunk, Resolver>()?;
        deferreds.push(deferred);
        promises.push(promise);
    }
    pools::extraction_pool().spawn(move || {
        let chunks = Mutex::new(Chunks {
            deferreds: deferreds.into_iter(),
            pending: Chunk::default(),
        });
        let outcome =
            super::task::catch_panic("reading the store", || run(&opts, gypfile, &chunks));
        let mut chunks = chunks.into_inner().unwrap_or_else(|e| e.into_inner());
        let error = match outcome {
            Ok(error) => error,
            Err(message) => Some(super::task::panic_error(message)),
        };
        // The last promise gets what is left; after an error, every remaining one gets it.
        let mut last = Some(std::mem::take(&mut chunks.pending));
        for deferred in chunks.deferreds.by_ref() {
            let chunk = match &error {
                Some(e) => Chunk::failed(e.clone()),
                None => last.take().unwrap_or_default(),
            };
            settle(deferred, chunk);
        }
    });
    Ok(promises)
}

/// The promises not yet settled, and the answers collected for the next one.
struct Chunks {
    deferreds: std::vec::IntoIter<JsDeferred<ReadPkgsChunk, Resolver>>,
    pending: Chunk,
}

#[derive(Default)]
struct Chunk {
    indices: Vec<u32>,
    entries: Vec<ReadPkgEntry>,
    tally: Tally,
    error: Option<NativeError>,
}

impl Chunk {
    fn failed(error: NativeError) -> Self {
        Chunk {
            error: Some(error),
            ..Default::default()
        }
    }
}

fn settle(deferred: JsDeferred<ReadPkgsChunk, Resolver>, chunk: Chunk) {
    deferred.resolve(Box::new(move |_env| {
        Ok(ReadPkgsChunk {
            error: chunk.error,
            indices: chunk.indices,
            entries: chunk.entries,
            verified_files: chunk.tally.files,
            verified_ms: chunk.tally.ms,
        })
    }));
}

/// Runs the read, handing full chunks to JS as they fill; the failure of the index, if any.
fn run(opts: &ReadPkgsOptions, gypfile: Gypfile, chunks: &Mutex<Chunks>) -> Option<NativeError> {
    let store = store_handles::open_as(Path::new(&opts.store_dir), opts.frozen_store);
    let req = ReadRequest {
        store_dir: &opts.store_dir,
        verify_store_integrity: opts.verify_store_integrity,
        strict_store_pkg_content_check: opts.strict_store_pkg_content_check,
        side_effects_symlinks: opts.side_effects_symlinks.unwrap_or(false),
        gypfile,
    };
    let keys: Vec<&str> = opts.keys.iter().map(String::as_str).collect();
    let expected: Vec<Option<ExpectedPkg>> = opts
        .expected_pkgs
        .iter()
        .flatten()
        .map(|e| {
            e.as_ref().map(|e| ExpectedPkg {
                name: e.name.clone(),
                version: e.version.clone(),
            })
        })
        .collect();
    // Answers become their JS-bound form on the pool threads, in parallel; every full chunk
    // goes to JS at once, except the last promise, which waits for the end of the call.
    read_package::read_pkgs_each(&store.index, &req, &keys, &expected, |i, result, tally| {
        let mut entry = entry(result);
        entry.verified_files = tally.files;
        entry.verified_ms = tally.ms;
        let mut chunks = chunks.lock().unwrap_or_else(|e| e.into_inner());
        let pending = &mut chunks.pending;
        pending.indices.push(i as u32);
        pending.entries.push(entry);
        pending.tally.add(tally);
        if pending.entries.len() == ANSWERS_PER_CHUNK && chunks.deferreds.len() > 1 {
            let full = std::mem::take(&mut chunks.pending);
            let deferred = chunks.deferreds.next().expect("more than one left");
            drop(chunks);
            settle(deferred, full);
        }
    })
    .err()
    .map(|e| NativeError::of(&e))
}

fn entry(result: Result<PkgRead, ReadError>) -> ReadPkgEntry {
    let mut out = ReadPkgEntry {
        error: None,
        found: false,
        verified: false,
        file_count: 0,
        paths: None,
        blob_names: None,
        manifest_json: None,
        requires_build: false,
        side_effects: None,
        requires_prepare: None,
        remote_side_effects_quarantine: None,
        warnings: Vec::new(),
        verified_files: 0,
        verified_ms: 0.0,
    };
    match result {
        Err(e) => {
            out.error = Some(NativeError::of(&e));
        }
        Ok(PkgRead::Miss { warning }) => out.warnings.extend(warning),
        Ok(PkgRead::Hit(pkg)) => {
            let pkg = *pkg;
            out.found = true;
            out.verified = pkg.verified;
            out.file_count = pkg.files.len() as u32;
            let (paths, blob_names) = joined(&pkg.files);
            out.paths = Some(js_text(paths));
            out.blob_names = Some(js_text(blob_names));
            out.manifest_json = pkg
                .manifest
                .filter(|m| !matches!(m, cas_native_core::value::Value::Undefined))
                .map(|m| json::stringify_pretty(&m));
            out.requires_build = pkg.requires_build;
            out.side_effects = pkg.side_effects.map(|entries| {
                entries
                    .into_iter()
                    .map(|e| {
                        let added = e.diff.added.as_ref();
                        SideEffectsEntry {
                            cache_key: e.cache_key,
                            added_paths: added.map(|a| a.iter().map(|(p, _)| p.clone()).collect()),
                            added_blob_names: added.map(|a| {
                                a.iter()
                                    .map(|(_, i)| {
                                        let mut name = String::new();
                                        read_package::push_blob_name(&mut name, &i.digest, i.mode);
                                        name
                                    })
                                    .collect()
                            }),
                            added_infos: added.map(|a| a.iter().map(|(_, i)| info(i)).collect()),
                            deleted: e.diff.deleted,
                            symlink_paths: e
                                .symlinks
                                .as_ref()
                                .map(|l| l.iter().map(|(p, _)| p.clone()).collect()),
                            symlink_targets: e
                                .symlinks
                                .map(|l| l.into_iter().map(|(_, t)| t).collect()),
                        }
                    })
                    .collect()
            });
            out.requires_prepare = pkg.requires_prepare;
            out.remote_side_effects_quarantine =
                pkg.remote_side_effects_quarantine.map(|entries| {
                    entries
                        .into_iter()
                        .map(|(cache_key, reasons)| QuarantineEntry { cache_key, reasons })
                        .collect()
                });
            out.warnings = pkg.warnings;
        }
    }
    out
}

/// A string for JS: ASCII text (blob names always, paths nearly always) is handed over as
/// Latin-1, which V8 copies as is, instead of as UTF-8, which it has to decode.
type JsText = Either<Latin1String, String>;

fn js_text(s: String) -> JsText {
    if s.is_ascii() {
        Either::A(Latin1String::from(s))
    } else {
        Either::B(s)
    }
}

/// The paths and the blob names of `files`, each joined with NUL (which no path can contain).
fn joined(files: &[(String, PackageFileInfo)]) -> (String, String) {
    let mut paths = String::with_capacity(files.iter().map(|(p, _)| p.len() + 1).sum());
    let mut names = String::with_capacity(files.len() * 136);
    for (i, (path, info)) in files.iter().enumerate() {
        if i > 0 {
            paths.push('\0');
            names.push('\0');
        }
        paths.push_str(path);
        read_package::push_blob_name(&mut names, &info.digest, info.mode);
    }
    (paths, names)
}

fn info(i: &PackageFileInfo) -> StoredFileInfo {
    StoredFileInfo {
        checked_at: i.checked_at,
        digest: i.digest.clone(),
        mode: i.mode,
        size: i.size as f64,
    }
}
