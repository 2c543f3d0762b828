//! Reading packages back out of the store: pnpm 11's `readPkgFromCafs` (store contract §6), for
//! one key or for a lockfile's worth of keys at once.
//!
//! A read looks the row up in `index.db`, checks it against the package the caller expects,
//! and maps every file to its blob path. With `verifyStoreIntegrity` each blob is checked the
//! way pnpm checks it: a blob whose mtime is within 100 ms of the row's `checkedAt` is trusted
//! without being read; otherwise a blob of the wrong size is deleted, and one of the right size
//! is hashed and unlinked when the digest differs, so that the package gets fetched again.
//!
//! The batch form reads all rows with a few `WHERE key IN (…)` statements
//! ([`StoreIndex::get_many`]) and decodes and verifies them in parallel on the current rayon pool.
//!
//! Deliberate deviation from pnpm: a row that cannot be decoded (garbage bytes, a truncated row,
//! a plain msgpack map) is answered as a miss with a warning, so the package is simply fetched
//! and its row rewritten. pnpm fails the whole install with `ERR_PNPM_READ_FROM_STORE` there,
//! which leaves a store with one bad row unusable until someone deletes `index.db`.
//!
//! Blob removal follows the store contract (pnpm 11 as of `@pnpm/worker` 1100.2): a blob that
//! fails verification is removed. Newer 1100.x releases only remove a *directory* squatting at
//! a blob path and leave a mismatching file for the re-fetch to replace atomically.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, ErrorKind, Read as _};
use std::os::unix::fs::MetadataExt;
use std::time::Instant;

use rayon::prelude::*;
use sha2::Digest as _;

use crate::cas::is_executable;
use crate::manifest::{requires_build, semver_clean_loose};
use crate::msgpackr;
use crate::os_error;
use crate::package_index::{self, PackageFileInfo, PackageFilesIndex, SideEffectsDiff};
use crate::store_index::{IndexError, StoreIndex};
use crate::value::Value;

/// What every read of one call shares (pnpm's `ReadPkgFromCafsContext`).
#[derive(Debug, Clone)]
pub struct ReadRequest<'a> {
    /// The store directory exactly as the caller gave it: blob paths are built by plain
    /// concatenation from it, as pnpm builds them on this path (spec §1.5).
    pub store_dir: &'a str,
    pub verify_store_integrity: bool,
    /// `false`: a name/version mismatch is a warning instead of an error.
    pub strict_store_pkg_content_check: bool,
}

/// The package the caller expects under a key (pnpm's `expectedPkg`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExpectedPkg {
    pub name: Option<String>,
    pub version: Option<String>,
}

/// Blobs actually hashed during verification, and the time spent reading and hashing them
/// (pnpm's `verifiedFileIntegrity`). Blobs trusted on their mtime are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    pub files: u32,
    pub ms: f64,
}

impl Tally {
    pub fn add(&mut self, other: Tally) {
        self.files += other.files;
        self.ms += other.ms;
    }
}

/// The answer for one key.
#[derive(Debug, Clone, PartialEq)]
pub enum PkgRead {
    /// No usable row: pnpm's `{ verified: false, pkgFilesIndex: null }`. `warning` says why
    /// when the row exists but could not be decoded (see the module docs).
    Miss {
        warning: Option<String>,
    },
    Hit(Box<PkgFromStore>),
}

/// A row found in the index, checked and mapped to blob paths.
#[derive(Debug, Clone, PartialEq)]
pub struct PkgFromStore {
    /// Every file's blob exists and has the right content (always `true` without
    /// verification).
    pub verified: bool,
    /// Relative paths in the row's `files` order; `blob_paths[i]` is the blob of `paths[i]`.
    pub paths: Vec<String>,
    pub blob_paths: Vec<String>,
    /// pnpm's `sideEffectsMaps`: `None` when it is `undefined` (no entries left).
    pub side_effects: Option<Vec<SideEffectsEntry>>,
    pub requires_build: bool,
    /// The row's `manifest` as stored (pnpm's `bundledManifest`); `None` when absent.
    pub manifest: Option<Value>,
    /// The row's `requiresPrepare` (git-hosted packages), when it has one.
    pub requires_prepare: Option<bool>,
    /// The row's `remoteSideEffectsQuarantine` (`Map<string, string[]>`), when it has one.
    pub remote_side_effects_quarantine: Option<Quarantine>,
    /// Messages pnpm would log with `globalWarn` (a mismatch under a non-strict check).
    pub warnings: Vec<String>,
}

/// A row's `remoteSideEffectsQuarantine`: cache key → reasons, in map order.
pub type Quarantine = Vec<(String, Vec<String>)>;

/// One kept side-effects entry.
#[derive(Debug, Clone, PartialEq)]
pub struct SideEffectsEntry {
    pub cache_key: String,
    /// The added files as (relative path, blob path), in the diff's order.
    pub added: Option<Vec<(String, String)>>,
    pub deleted: Option<Vec<String>>,
    /// The diff as stored (pnpm hands these back too, as `sideEffectsDiffs`).
    pub diff: SideEffectsDiff,
}

/// Why a read failed. Each maps to the code pnpm's worker would give.
#[derive(Debug)]
pub enum ReadError {
    /// The row's manifest names another package; strict check on.
    UnexpectedPkgContent {
        message: String,
        hint: String,
    },
    /// A file of the row has no digest; the path is the file's.
    MissingContentDigest(String),
    /// A filesystem error other than a missing blob (stat, read, delete).
    Io {
        op: &'static str,
        path: String,
        error: io::Error,
    },
    Index(IndexError),
    /// What pnpm's JS would throw as a plain `TypeError` (no code → `READ_FROM_STORE`).
    Other(String),
}

impl ReadError {
    pub fn code(&self) -> String {
        match self {
            ReadError::UnexpectedPkgContent { .. } => {
                "ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE".into()
            }
            ReadError::MissingContentDigest(_) => "ERR_PNPM_MISSING_CONTENT_DIGEST".into(),
            ReadError::Io { error, .. } => format!("ERR_PNPM_{}", os_error::errno_name(error)),
            ReadError::Index(e) => e.code().into(),
            ReadError::Other(_) => "ERR_PNPM_READ_FROM_STORE".into(),
        }
    }

    pub fn hint(&self) -> Option<&str> {
        match self {
            ReadError::UnexpectedPkgContent { hint, .. } => Some(hint),
            _ => None,
        }
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::UnexpectedPkgContent { message, .. } => f.write_str(message),
            ReadError::MissingContentDigest(file) => {
                write!(f, "Content digest is missing for {file}")
            }
            // Node's wording: "EACCES: permission denied, unlink '/path'".
            ReadError::Io { op, path, error } => {
                write!(f, "{}, {op} '{path}'", os_error::describe(error))
            }
            ReadError::Index(e) => write!(f, "{e}"),
            ReadError::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<IndexError> for ReadError {
    fn from(e: IndexError) -> Self {
        ReadError::Index(e)
    }
}

/// `readPkgFromCafs` for one key.
pub fn read_pkg(
    index: &StoreIndex,
    req: &ReadRequest,
    key: &str,
    expected: Option<&ExpectedPkg>,
) -> (Result<PkgRead, ReadError>, Tally) {
    let mut tally = Tally::default();
    let result = index
        .get(key)
        .map_err(ReadError::from)
        .and_then(|row| read_row(req, key, row.as_deref(), expected, &mut tally));
    (result, tally)
}

/// `readPkgFromCafs` for many keys: the rows come from one snapshot of the index in a few
/// statements, then are decoded and verified in parallel on the current rayon pool. One answer
/// per key, in order; `expected` is empty or has one entry per key. Only a failure of the index
/// itself fails the whole call.
pub fn read_pkgs(
    index: &StoreIndex,
    req: &ReadRequest,
    keys: &[&str],
    expected: &[Option<ExpectedPkg>],
) -> Result<(Vec<Result<PkgRead, ReadError>>, Tally), IndexError> {
    let rows = index.get_many(keys)?;
    let answers: Vec<_> = rows
        .into_par_iter()
        .enumerate()
        .map(|(i, row)| {
            let mut tally = Tally::default();
            let expected = expected.get(i).and_then(Option::as_ref);
            let result = read_row(req, keys[i], row.as_deref(), expected, &mut tally);
            (result, tally)
        })
        .collect();
    let mut total = Tally::default();
    let results = answers
        .into_iter()
        .map(|(result, tally)| {
            total.add(tally);
            result
        })
        .collect();
    Ok((results, total))
}

/// Everything after the lookup: decode, expected-package check, maps and verification.
pub fn read_row(
    req: &ReadRequest,
    key: &str,
    row: Option<&[u8]>,
    expected: Option<&ExpectedPkg>,
    tally: &mut Tally,
) -> Result<PkgRead, ReadError> {
    let Some(bytes) = row else {
        return Ok(PkgRead::Miss { warning: None });
    };
    let row = match package_index::decode_row(bytes) {
        Ok(row) => row,
        Err(e) => {
            return Ok(PkgRead::Miss {
                warning: Some(format!(
                    "Ignoring the unreadable store index row of {key}: {e}. The package will be \
                     fetched again."
                )),
            })
        }
    };
    let mut warnings = Vec::new();
    if let Some(expected) = expected {
        check_expected(
            &row,
            expected,
            req.strict_store_pkg_content_check,
            &mut warnings,
        )?;
    }
    let mut pkg = if req.verify_store_integrity {
        Verifier::new(req.store_dir, &row.algo, tally).check_row(&row)?
    } else {
        maps_only(req.store_dir, &row)
    };
    pkg.requires_build = row.requires_build.unwrap_or_else(|| {
        requires_build(row.bundled_manifest(), pkg.paths.iter().map(String::as_str))
    });
    (pkg.requires_prepare, pkg.remote_side_effects_quarantine) = extra_fields(bytes);
    pkg.manifest = row.manifest;
    pkg.warnings = warnings;
    Ok(PkgRead::Hit(Box::new(pkg)))
}

const MISMATCH_MESSAGE: &str =
    "Package name or version mismatch found while reading from the store.";

/// pnpm's expected-package check: the row's manifest must name the expected package (name
/// compared case-insensitively, version equal or semver-equal in loose mode).
fn check_expected(
    row: &PackageFilesIndex,
    expected: &ExpectedPkg,
    strict: bool,
    warnings: &mut Vec<String>,
) -> Result<(), ReadError> {
    let field = |name| {
        row.manifest
            .as_ref()
            .and_then(|m| m.get(name))
            .filter(|v| !v.is_nullish())
    };
    let (name, version) = (field("name"), field("version"));
    let name_differs = match (name, &expected.name) {
        (Some(Value::String(actual)), Some(wanted)) => {
            actual.to_lowercase() != wanted.to_lowercase()
        }
        // JS calls `.toLowerCase()` on whatever the manifest holds.
        (Some(_), Some(_)) => {
            return Err(ReadError::Other(
                "pkgFilesIndex.manifest.name.toLowerCase is not a function".into(),
            ))
        }
        _ => false,
    };
    let version_differs = match (version, &expected.version) {
        (Some(actual), Some(wanted)) => !equal_or_semver_equal(actual, wanted),
        _ => false,
    };
    if !name_differs && !version_differs {
        return Ok(());
    }
    let hint = format!(
        "This means that either the lockfile is broken or the package metadata (name and \
         version) inside the package's package.json file doesn't match the metadata in the \
         registry. Expected package: {}@{}. Actual package in the store: {}@{}.",
        expected.name.as_deref().unwrap_or("undefined"),
        expected.version.as_deref().unwrap_or("undefined"),
        js_string(field_or_undefined(row, "name")),
        js_string(field_or_undefined(row, "version")),
    );
    if strict {
        return Err(ReadError::UnexpectedPkgContent {
            message: MISMATCH_MESSAGE.into(),
            hint: format!(
                "{hint}\n\nIf you want to ignore this issue, set strictStorePkgContentCheck to \
                 false in your configuration"
            ),
        });
    }
    warnings.push(format!("{MISMATCH_MESSAGE} {hint}"));
    Ok(())
}

fn field_or_undefined<'a>(row: &'a PackageFilesIndex, name: &str) -> &'a Value {
    row.manifest
        .as_ref()
        .and_then(|m| m.get(name))
        .unwrap_or(&Value::Undefined)
}

/// Identical strings, or node-semver's `eq(a, b, { loose: true })`; anything semver cannot
/// parse (including a non-string manifest version) is not equal.
pub fn equal_or_semver_equal(actual: &Value, wanted: &str) -> bool {
    let Value::String(actual) = actual else {
        return false;
    };
    if actual == wanted {
        return true;
    }
    // node-semver's constructor rejects versions longer than 256 before parsing.
    let too_long = |v: &str| v.encode_utf16().count() > 256;
    if too_long(actual) || too_long(wanted) {
        return false;
    }
    // Two versions compare equal exactly when their normalised forms (numbers without leading
    // zeros, numeric prerelease identifiers as numbers, build metadata dropped) are the same.
    match (semver_clean_loose(actual), semver_clean_loose(wanted)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// JS `String(v)` for the values a manifest field can hold, for messages.
fn js_string(v: &Value) -> String {
    match v {
        Value::Undefined => "undefined".into(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => crate::json::number_to_string(*n),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                if i.is_nullish() {
                    String::new()
                } else {
                    js_string(i)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
        Value::Map(_) => "[object Map]".into(),
    }
}

/// pnpm's read-side blob path: `storeDir + sep + "files" + sep + hex[0..2] + sep + hex[2..]`,
/// `-exec` appended for an executable mode. Not normalised (spec §1.5).
pub fn blob_path(store_dir: &str, digest: &str, mode: u32) -> String {
    const SEP: char = std::path::MAIN_SEPARATOR;
    // JS `slice(0, 2)`: never panics on a short or non-ASCII digest.
    let split = digest
        .char_indices()
        .nth(2)
        .map_or(digest.len(), |(i, _)| i);
    let exec = if is_executable(mode) { "-exec" } else { "" };
    format!(
        "{store_dir}{SEP}files{SEP}{}{SEP}{}{exec}",
        &digest[..split],
        &digest[split..]
    )
}

fn map_files(store_dir: &str, files: &[(String, PackageFileInfo)]) -> (Vec<String>, Vec<String>) {
    files
        .iter()
        .map(|(path, info)| (path.clone(), blob_path(store_dir, &info.digest, info.mode)))
        .unzip()
}

/// `verifyStoreIntegrity: false`: maps only. Every side-effects entry is kept, an empty `{}`
/// diff too, and no blob is looked at.
fn maps_only(store_dir: &str, row: &PackageFilesIndex) -> PkgFromStore {
    let (paths, blob_paths) = map_files(store_dir, &row.files);
    let side_effects = row
        .side_effects
        .as_ref()
        .map(|entries| {
            entries
                .iter()
                .map(|(cache_key, diff)| SideEffectsEntry {
                    cache_key: cache_key.clone(),
                    added: diff.added.as_ref().map(|added| {
                        let (p, b) = map_files(store_dir, added);
                        p.into_iter().zip(b).collect()
                    }),
                    deleted: diff.deleted.clone(),
                    diff: diff.clone(),
                })
                .collect::<Vec<_>>()
        })
        .filter(|entries| !entries.is_empty());
    hit(true, paths, blob_paths, side_effects)
}

fn hit(
    verified: bool,
    paths: Vec<String>,
    blob_paths: Vec<String>,
    side_effects: Option<Vec<SideEffectsEntry>>,
) -> PkgFromStore {
    PkgFromStore {
        verified,
        paths,
        blob_paths,
        side_effects,
        requires_build: false,
        manifest: None,
        requires_prepare: None,
        remote_side_effects_quarantine: None,
        warnings: Vec::new(),
    }
}

/// `verifyStoreIntegrity: true` for one row. Blobs that passed are remembered for the rest of
/// the row (a side-effects diff often re-lists base files), failed ones are checked again.
struct Verifier<'a> {
    store_dir: &'a str,
    algo: &'a str,
    passed: HashSet<String>,
    tally: &'a mut Tally,
}

impl<'a> Verifier<'a> {
    fn new(store_dir: &'a str, algo: &'a str, tally: &'a mut Tally) -> Self {
        Verifier {
            store_dir,
            algo,
            passed: HashSet::new(),
            tally,
        }
    }

    fn check_row(mut self, row: &PackageFilesIndex) -> Result<PkgFromStore, ReadError> {
        let (ok, paths, blob_paths) = self.check_files(&row.files)?;
        if !ok {
            return Ok(hit(false, paths, blob_paths, None));
        }
        let mut kept = Vec::new();
        for (cache_key, diff) in row.side_effects.iter().flatten() {
            let entry = |added| SideEffectsEntry {
                cache_key: cache_key.clone(),
                added,
                deleted: diff.deleted.clone(),
                diff: diff.clone(),
            };
            if let Some(added) = &diff.added {
                let (ok, p, b) = self.check_files(added)?;
                // A side-effects entry with a bad blob is dropped; the package still counts
                // as in the store and gets built again.
                if ok {
                    kept.push(entry(Some(p.into_iter().zip(b).collect())));
                }
            } else if diff.deleted.is_some() {
                kept.push(entry(None));
            }
            // An empty `{}` diff (a build that changed nothing) is dropped here: pnpm's quirk.
        }
        let side_effects = (!kept.is_empty()).then_some(kept);
        Ok(hit(true, paths, blob_paths, side_effects))
    }

    /// Checks every file, also after a failure, so that every bad blob is removed in one pass.
    fn check_files(
        &mut self,
        files: &[(String, PackageFileInfo)],
    ) -> Result<(bool, Vec<String>, Vec<String>), ReadError> {
        let mut all_ok = true;
        let mut paths = Vec::with_capacity(files.len());
        let mut blob_paths = Vec::with_capacity(files.len());
        for (path, info) in files {
            if info.digest.is_empty() {
                return Err(ReadError::MissingContentDigest(path.clone()));
            }
            let blob = blob_path(self.store_dir, &info.digest, info.mode);
            if !self.passed.contains(&blob) {
                if self.check_blob(&blob, info)? {
                    self.passed.insert(blob.clone());
                } else {
                    all_ok = false;
                }
            }
            paths.push(path.clone());
            blob_paths.push(blob);
        }
        Ok((all_ok, paths, blob_paths))
    }

    fn check_blob(&mut self, blob: &str, info: &PackageFileInfo) -> Result<bool, ReadError> {
        let meta = match fs::metadata(blob) {
            Ok(meta) => meta,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(io_error("stat", blob, error)),
        };
        // Node's `stat.mtimeMs`, computed as Node computes it.
        let mtime_ms = meta.mtime() as f64 * 1e3 + meta.mtime_nsec() as f64 / 1e6;
        // Trusted fast path: the blob was not touched since the row recorded it as checked.
        if mtime_ms - info.checked_at.unwrap_or(0.0) <= 100.0 {
            return Ok(true);
        }
        if meta.len() != info.size {
            remove_blob(blob)?;
            return Ok(false);
        }
        let started = Instant::now();
        let Some(actual) = hash_file(self.algo, blob)? else {
            // Vanished meanwhile, or an algorithm we cannot compute: nothing was hashed.
            return Ok(false);
        };
        self.tally.files += 1;
        self.tally.ms += started.elapsed().as_secs_f64() * 1e3;
        if actual != info.digest {
            remove_blob(blob)?;
            return Ok(false);
        }
        Ok(true)
    }
}

fn io_error(op: &'static str, path: &str, error: io::Error) -> ReadError {
    ReadError::Io {
        op,
        path: path.to_string(),
        error,
    }
}

/// Removes a bad blob so the package gets fetched and the blob written again; a directory
/// squatting at the blob path goes too. Already gone is fine.
fn remove_blob(blob: &str) -> Result<(), ReadError> {
    let result = match fs::symlink_metadata(blob) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(blob),
        Ok(_) => fs::remove_file(blob),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(io_error("unlink", blob, e)),
        _ => Ok(()),
    }
}

/// The lowercase hex digest of a file with the row's algorithm, streamed in 64 KiB reads.
/// `None` when the file is gone or the algorithm is not one Node's `crypto.hash` would know of
/// among those a store row can name.
fn hash_file(algo: &str, path: &str) -> Result<Option<String>, ReadError> {
    enum Hasher {
        Sha512(sha2::Sha512),
        Sha384(sha2::Sha384),
        Sha256(sha2::Sha256),
        Sha1(sha1::Sha1),
        Md5(md5::Md5),
    }
    let mut hasher = match algo {
        "sha512" => Hasher::Sha512(Default::default()),
        "sha384" => Hasher::Sha384(Default::default()),
        "sha256" => Hasher::Sha256(Default::default()),
        "sha1" => Hasher::Sha1(Default::default()),
        "md5" => Hasher::Md5(Default::default()),
        _ => return Ok(None),
    };
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error("open", path, error)),
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(error) => return Err(io_error("read", path, error)),
        };
        let chunk = &buf[..n];
        match &mut hasher {
            Hasher::Sha512(h) => h.update(chunk),
            Hasher::Sha384(h) => h.update(chunk),
            Hasher::Sha256(h) => h.update(chunk),
            Hasher::Sha1(h) => h.update(chunk),
            Hasher::Md5(h) => h.update(chunk),
        }
    }
    let digest = match hasher {
        Hasher::Sha512(h) => h.finalize().to_vec(),
        Hasher::Sha384(h) => h.finalize().to_vec(),
        Hasher::Sha256(h) => h.finalize().to_vec(),
        Hasher::Sha1(h) => h.finalize().to_vec(),
        Hasher::Md5(h) => h.finalize().to_vec(),
    };
    Ok(Some(digest.iter().map(|b| format!("{b:02x}")).collect()))
}

/// The row fields `decode_row` does not model, which pnpm hands back as they are:
/// `requiresPrepare` and `remoteSideEffectsQuarantine`. Only rows that mention them (git-hosted
/// packages, remote side-effects caches; rare) pay for a second, generic decode.
fn extra_fields(bytes: &[u8]) -> (Option<bool>, Option<Quarantine>) {
    let mentions = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    let has_prepare = mentions(b"requiresPrepare");
    let has_quarantine = mentions(b"remoteSideEffectsQuarantine");
    if !has_prepare && !has_quarantine {
        return (None, None);
    }
    let Ok(row) = msgpackr::decode(bytes) else {
        return (None, None);
    };
    let requires_prepare = match row.get("requiresPrepare") {
        Some(Value::Bool(b)) => Some(*b),
        _ => None,
    };
    let quarantine = match row.get("remoteSideEffectsQuarantine") {
        Some(Value::Map(entries)) => Some(
            entries
                .iter()
                .filter_map(|(k, v)| {
                    let Value::Array(items) = v else { return None };
                    let items = items.iter().filter_map(|i| i.as_str().map(String::from));
                    Some((k.as_str()?.to_string(), items.collect()))
                })
                .collect(),
        ),
        _ => None,
    };
    (requires_prepare, quarantine)
}

#[cfg(test)]
mod tests;
