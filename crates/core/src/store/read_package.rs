//! Reading packages back out of the store: pnpm 11's `readPkgFromCafs` (docs/store-format.md,
//! "Reading and verification"), a row looked up, decoded and its blobs verified, for one key or
//! for a lockfile's worth of keys at once.
//!
//! A read looks the row up in `index.db`, checks it against the package the caller expects,
//! and maps every file to its blob path. With `verifyStoreIntegrity` each blob is checked the
//! way pnpm checks it: a blob whose mtime is within 100 ms of the row's `checkedAt` is trusted
//! without being read; otherwise a blob of the wrong size is deleted, and one of the right size
//! is hashed and unlinked when the digest differs, so that the package gets fetched again.
//!
//! The batch form reads all rows in one read transaction with a few `WHERE key IN (…)`
//! statements or one table scan ([`StoreIndex::for_each_row`]), and decodes and verifies them in
//! parallel on the current rayon pool while SQLite is still producing the next rows.
//!
//! Deliberate deviation from pnpm: a row that cannot be decoded (garbage bytes, a truncated row,
//! a plain msgpack map) is answered as a miss with a warning, so the package is simply fetched
//! and its row rewritten. pnpm fails the whole install with `ERR_PNPM_READ_FROM_STORE` there,
//! which leaves a store with one bad row unusable until someone deletes `index.db`.
//!
//! Blob removal follows pnpm 11 (as of `@pnpm/worker` 1100.2): a blob that
//! fails verification is removed. Newer 1100.x releases only remove a *directory* squatting at
//! a blob path and leave a mismatching file for the re-fetch to replace atomically.

use std::collections::HashSet;
use std::fs::{self, File};
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{self, ErrorKind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::blob_files::{self, is_executable};
use crate::blob_modes;
use crate::error_code::ErrorCode;
use crate::extract::parse_package_json;
use crate::index_db::{IndexError, StoreIndex};
use crate::index_row::{self, PackageFileInfo, PackageFilesIndex, SideEffectsDiff};
use crate::manifest::{is_hooks_entry, requires_build, semver_clean_loose, Gypfile};
use crate::msgpackr;
use crate::symlink_entry::{self, Symlinks};
use crate::timing::ms_since;
use crate::value::Value;
use crate::{os_error, platform};

/// What every read of one call shares (pnpm's `ReadPkgFromCafsContext`).
#[derive(Debug, Clone)]
pub struct ReadRequest<'a> {
    /// The store directory exactly as the caller gave it: blob paths are built by plain
    /// concatenation from it, as pnpm builds them on this path (docs/store-format.md, "Blob paths").
    pub store_dir: &'a str,
    pub verify_store_integrity: bool,
    /// `false`: a name/version mismatch is a warning instead of an error.
    pub strict_store_pkg_content_check: bool,
    /// Read side-effects symlink entries back as pnpm 11.28 does
    /// ([`SideEffectsEntry::symlinks`]); `@pnpm/worker` 1100.x hands them back as files.
    pub side_effects_symlinks: bool,
    /// Whether the reader reads `gypfile` as pnpm 11.28 does (see [`stored_requires_build`]).
    pub gypfile: Gypfile,
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

/// A row found in the index and checked. Blob paths are not materialised here: each file's blob
/// is [`blob_path`]`(store_dir, &info.digest, info.mode)`, and callers that hand paths to JS build
/// them in the form cheapest for them (see [`push_blob_name`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PkgFromStore {
    /// Every file's blob exists and has the right content (always `true` without
    /// verification).
    pub verified: bool,
    /// The row's files in order: relative path and what the row records (pnpm's `filesMap`
    /// maps each path to the file's blob).
    pub files: Vec<(String, PackageFileInfo)>,
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
    /// The blobs whose bits are not the mode their names say (docs/store-format.md, "Blob
    /// modes"), which the importer must copy rather than link: verification stats every blob
    /// anyway, so it notes them. `None` without verification, which looks at no blob.
    pub drifted_blobs: Option<Vec<DriftedBlob>>,
}

/// A blob whose permission bits are not the mode its name says ([`blob_modes::name_mode`]).
#[derive(Debug, Clone, PartialEq)]
pub struct DriftedBlob {
    pub digest: String,
    pub executable: bool,
    /// Its permission bits.
    pub mode: u32,
}

impl DriftedBlob {
    /// Its path, as [`blob_path`] gives it.
    pub fn path(&self, store_dir: &str) -> String {
        named_blob_path(store_dir, &self.digest, self.executable)
    }
}

impl PkgFromStore {
    #[cfg(test)] // the bindings stream answers through `read_pkgs_each`
    /// The relative paths, in order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(p, _)| p.as_str())
    }

    #[cfg(test)] // the bindings stream answers through `read_pkgs_each`
    /// The blob paths, in order (pnpm's `filesMap` values).
    pub fn blob_paths<'a>(&'a self, store_dir: &'a str) -> impl Iterator<Item = String> + 'a {
        self.files
            .iter()
            .map(move |(_, i)| blob_path(store_dir, &i.digest, i.mode))
    }
}

/// A row's `remoteSideEffectsQuarantine`: cache key → reasons, in map order.
pub type Quarantine = Vec<(String, Vec<String>)>;

/// One kept side-effects entry: the diff as stored. pnpm hands it back twice: as
/// `sideEffectsMaps` (`added` mapped to blob paths) and as `sideEffectsDiffs` (as stored).
#[derive(Debug, Clone, PartialEq)]
pub struct SideEffectsEntry {
    pub cache_key: String,
    pub diff: SideEffectsDiff,
    /// With [`ReadRequest::side_effects_symlinks`]: the diff's symlink entries, restorable
    /// (`symlink_entry::restore_links`; an entry that is not is dropped). They stay in `diff`
    /// (pnpm's `sideEffectsDiffs`) and leave pnpm's `sideEffectsMaps` `added`.
    pub symlinks: Option<Symlinks>,
}

/// Why a read failed. Each maps to the code pnpm's worker would give.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The row's manifest names another package; strict check on.
    #[error("{message}")]
    UnexpectedPkgContent { message: String, hint: String },
    /// A file of the row has no digest; the path is the file's.
    #[error("Content digest is missing for {0}")]
    MissingContentDigest(String),
    /// A filesystem error other than a missing blob (stat, read, delete), in Node's wording:
    /// "EACCES: permission denied, unlink '/path'".
    #[error("{}", io_message(.op, .path, .error))]
    Io {
        op: &'static str,
        path: String,
        error: io::Error,
    },
    #[error("{0}")]
    Index(IndexError),
    /// What pnpm's JS would throw as a plain `TypeError` (no code → `READ_FROM_STORE`).
    #[error("{0}")]
    Other(String),
}

fn io_message(op: &str, path: &str, error: &io::Error) -> String {
    os_error::FsSite {
        syscall: op.to_string(),
        path: path.to_string(),
        dest: None,
    }
    .message(error)
}

impl ErrorCode for ReadError {
    fn code(&self) -> &'static str {
        match self {
            ReadError::UnexpectedPkgContent { .. } => "ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE",
            ReadError::MissingContentDigest(_) => "ERR_PNPM_MISSING_CONTENT_DIGEST",
            ReadError::Io { error, .. } => os_error::pnpm_code(error),
            ReadError::Index(e) => e.code(),
            ReadError::Other(_) => "ERR_PNPM_READ_FROM_STORE",
        }
    }

    fn hint(&self) -> Option<&str> {
        match self {
            ReadError::UnexpectedPkgContent { hint, .. } => Some(hint),
            _ => None,
        }
    }

    fn site(&self) -> Option<os_error::FsSite> {
        match self {
            ReadError::Io { op, path, .. } => Some(os_error::FsSite {
                syscall: op.to_string(),
                path: path.clone(),
                dest: None,
            }),
            _ => None,
        }
    }
}

impl From<IndexError> for ReadError {
    fn from(e: IndexError) -> Self {
        ReadError::Index(e)
    }
}

#[cfg(test)] // the bindings stream answers through `read_pkgs_each`
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

#[cfg(test)] // the bindings stream answers through `read_pkgs_each`
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
    read_pkgs_map(index, req, keys, expected, |_, answer| answer)
}

/// [`read_pkgs`] with each answer passed through `convert` on the pool thread that produced it,
/// so that turning answers into their final form (e.g. what a binding hands to JS) runs in
/// parallel too. `convert` gets the key's position in `keys`.
pub fn read_pkgs_map<T: Send>(
    index: &StoreIndex,
    req: &ReadRequest,
    keys: &[&str],
    expected: &[Option<ExpectedPkg>],
    convert: impl Fn(usize, Result<PkgRead, ReadError>) -> T + Sync,
) -> Result<(Vec<T>, Tally), IndexError> {
    use std::sync::Mutex;
    let slots: Vec<Mutex<Option<(T, Tally)>>> = keys.iter().map(|_| Mutex::new(None)).collect();
    read_pkgs_each(index, req, keys, expected, |i, result, tally| {
        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some((convert(i, result), tally));
    })?;
    let mut total = Tally::default();
    let results = slots
        .into_iter()
        .map(|slot| {
            let (value, tally) = slot
                .into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("every key is answered");
            total.add(tally);
            value
        })
        .collect();
    Ok((results, total))
}

/// The streaming form of [`read_pkgs`]: `on_answer(position, answer, tally)` is called exactly
/// once per position of `keys`, on whichever pool thread produced the answer, in no particular
/// order, as soon as it is ready (keys without a row last). A caller can pass answers on while
/// the rest are still being read.
///
/// Fetching and decoding overlap: each row is handed to the pool as soon as SQLite produced it,
/// while this thread goes on reading the next ones.
pub fn read_pkgs_each(
    index: &StoreIndex,
    req: &ReadRequest,
    keys: &[&str],
    expected: &[Option<ExpectedPkg>],
    on_answer: impl Fn(usize, Result<PkgRead, ReadError>, Tally) + Sync,
) -> Result<(), IndexError> {
    let answered: Vec<AtomicBool> = keys.iter().map(|_| AtomicBool::new(false)).collect();
    let answer = |i: usize, row: Option<&[u8]>| {
        let mut tally = Tally::default();
        let expected = expected.get(i).and_then(Option::as_ref);
        let result = read_row(req, keys[i], row, expected, &mut tally);
        answered[i].store(true, Ordering::Relaxed);
        on_answer(i, result, tally);
    };
    rayon::in_place_scope(|scope| {
        index.for_each_row(keys, |positions, data| {
            let positions = positions.to_vec();
            let answer = &answer;
            scope.spawn(move |_| {
                for i in positions {
                    answer(i, Some(&data));
                }
            });
        })
    })?;
    // Keys without a row (the scope above has joined every row's task).
    (0..keys.len())
        .into_par_iter()
        .filter(|&i| !answered[i].load(Ordering::Relaxed))
        .for_each(|i| answer(i, None));
    Ok(())
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
    let row = match index_row::decode_row(bytes) {
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
    let Checked {
        verified,
        mut side_effects,
        drifted_blobs,
    } = if req.verify_store_integrity {
        Verifier::new(req.store_dir, &row.algo, tally).check_row(&row)?
    } else {
        Checked {
            verified: true,
            side_effects: all_side_effects(&row),
            drifted_blobs: None,
        }
    };
    if req.side_effects_symlinks {
        if let Some(entries) = side_effects.take() {
            side_effects = restore_symlinks(req.store_dir, &row.files, entries)?;
        }
    }
    let requires_build = stored_requires_build(req, &row)?;
    let (requires_prepare, remote_side_effects_quarantine) = extra_fields(bytes);
    Ok(PkgRead::Hit(Box::new(PkgFromStore {
        verified,
        files: row.files,
        side_effects,
        requires_build,
        manifest: row.manifest,
        requires_prepare,
        remote_side_effects_quarantine,
        warnings,
        drifted_blobs,
    })))
}

/// The row's `requiresBuild` as the reader takes it: pnpm's rule when the row has none. A pnpm
/// 11.28 reader (`resolveRequiresBuild`) also doubts a `true` that only a root `binding.gyp`
/// explains when the row's manifest has no `gypfile` key: a writer that did not read `gypfile`
/// may have written it (for a package that opts out), so it reads the package's own
/// `package.json` from the store and asks the rule again; an unreadable one keeps the row's.
fn stored_requires_build(req: &ReadRequest, row: &PackageFilesIndex) -> Result<bool, ReadError> {
    let keys = || row.files.iter().map(|(p, _)| p.as_str());
    let stored = match row.requires_build {
        None => return Ok(requires_build(row.bundled_manifest(), keys(), req.gypfile)),
        Some(stored) => stored,
    };
    if !stored || req.gypfile == Gypfile::Ignored || !only_gyp_explains(row) {
        return Ok(stored);
    }
    Ok(match package_json_in_store(req.store_dir, row)? {
        Some(manifest) if !manifest.is_nullish() => {
            requires_build(Some(&manifest), keys(), Gypfile::Read)
        }
        _ => stored,
    })
}

/// pnpm's `storedRequiresBuildNeedsManifestCheck`: a root `binding.gyp`, no `.hooks/` entry, and
/// a manifest (if any) with neither a `gypfile` key nor a build script.
fn only_gyp_explains(row: &PackageFilesIndex) -> bool {
    let settled_by_manifest = row.bundled_manifest().is_some_and(|m| {
        m.get("gypfile").is_some() || requires_build(Some(m), [], Gypfile::Ignored)
    });
    !settled_by_manifest
        && row.files.iter().any(|(p, _)| p == "binding.gyp")
        && !row.files.iter().any(|(p, _)| is_hooks_entry(p))
}

/// The package's `package.json` read from its blob, as pnpm's `readManifestFromCafs` reads it:
/// `None` when the row has none, its blob is missing, or it is not JSON; other read errors fail.
fn package_json_in_store(
    store_dir: &str,
    row: &PackageFilesIndex,
) -> Result<Option<Value>, ReadError> {
    let Some((_, info)) = row.files.iter().find(|(p, _)| p == "package.json") else {
        return Ok(None);
    };
    let path = blob_path(store_dir, &info.digest, info.mode);
    match fs::read(&path) {
        Ok(bytes) => Ok(parse_package_json(&bytes).ok()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(ReadError::Io {
            op: "open",
            path,
            error,
        }),
    }
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
        "The store holds {2}@{3} under the key where the lockfile expects {0}@{1}: either \
         the lockfile is damaged, or the package's own package.json names it differently \
         from the registry's metadata.",
        expected.name.as_deref().unwrap_or("undefined"),
        expected.version.as_deref().unwrap_or("undefined"),
        crate::js::string_of(field_or_undefined(row, "name")),
        crate::js::string_of(field_or_undefined(row, "version")),
    );
    if strict {
        return Err(ReadError::UnexpectedPkgContent {
            message: MISMATCH_MESSAGE.into(),
            hint: format!(
                "{hint}\n\nTo accept such packages anyway, set strictStorePkgContentCheck=false."
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

/// pnpm's read-side blob path: `storeDir + sep + "files" + sep + hex[0..2] + sep + hex[2..]`,
/// `-exec` appended for an executable mode. Not normalised (docs/store-format.md, "Blob paths").
pub fn blob_path(store_dir: &str, digest: &str, mode: u32) -> String {
    named_blob_path(store_dir, digest, is_executable(mode))
}

fn named_blob_path(store_dir: &str, digest: &str, executable: bool) -> String {
    blob_files::blob_path(
        &blob_files::files_dir(store_dir, SEP),
        SEP,
        digest,
        executable,
    )
}

const SEP: char = std::path::MAIN_SEPARATOR;

/// Appends the part of a blob path below `files/` (see [`blob_files::push_blob_name`]), with the
/// platform's separator, as pnpm's readers join it.
pub fn push_blob_name(out: &mut String, digest: &str, mode: u32) {
    blob_files::push_blob_name(out, digest, SEP, is_executable(mode));
}

/// pnpm 11.28's read of side-effects symlinks: each entry's links restored, or the entry
/// dropped; `None` when no entry is left.
fn restore_symlinks(
    store_dir: &str,
    files: &[(String, PackageFileInfo)],
    entries: Vec<SideEffectsEntry>,
) -> Result<Option<Vec<SideEffectsEntry>>, ReadError> {
    let mut kept = Vec::with_capacity(entries.len());
    for mut entry in entries {
        let restored = {
            let added = entry.diff.added.as_deref().unwrap_or(&[]);
            let is_link = |i: &PackageFileInfo| symlink_entry::is_symlink_entry(i.mode);
            let links: Vec<(&str, PathBuf)> = added
                .iter()
                .filter(|(_, i)| is_link(i))
                .map(|(p, i)| (p.as_str(), blob_path(store_dir, &i.digest, i.mode).into()))
                .collect();
            if links.is_empty() {
                kept.push(entry);
                continue;
            }
            let deleted: HashSet<&str> = entry
                .diff
                .deleted
                .iter()
                .flatten()
                .map(String::as_str)
                .collect();
            let others = added
                .iter()
                .filter(|(_, i)| !is_link(i))
                .map(|(p, _)| p.as_str());
            let base = files.iter().map(|(p, _)| p.as_str());
            symlink_entry::restore_links(
                &links,
                others.chain(base.filter(|p| !deleted.contains(p))),
            )
        };
        match restored {
            Ok(Some(symlinks)) => {
                entry.symlinks = Some(symlinks);
                kept.push(entry);
            }
            Ok(None) => {}
            Err((error, blob)) => return Err(io_error("open", &blob.to_string_lossy(), error)),
        }
    }
    Ok((!kept.is_empty()).then_some(kept))
}

/// `verifyStoreIntegrity: false`: every side-effects entry is kept, an empty `{}` diff too,
/// and no blob is looked at.
fn all_side_effects(row: &PackageFilesIndex) -> Option<Vec<SideEffectsEntry>> {
    let entries: Vec<_> = row
        .side_effects
        .iter()
        .flatten()
        .map(|(cache_key, diff)| SideEffectsEntry {
            cache_key: cache_key.clone(),
            diff: diff.clone(),
            symlinks: None,
        })
        .collect();
    (!entries.is_empty()).then_some(entries)
}

/// `verifyStoreIntegrity: true` for one row. Blobs that passed are remembered for the rest of
/// the row (a side-effects diff often re-lists base files), failed ones are checked again.
/// (A memo for a whole batch, behind a lock, measured slower than the stats it saved.)
struct Verifier<'a> {
    /// `<storeDir><sep>files`, as pnpm's readers build it ([`blob_files::files_dir`]).
    files_dir_path: String,
    algo: &'a str,
    /// Blobs that passed, as (digest, executable), borrowed from the row.
    passed: HashSet<(&'a str, bool), BuildHasherDefault<DigestHasher>>,
    tally: &'a mut Tally,
    /// `<storeDir>/files`, opened once: blobs are stat'ed relative to it, which spares the
    /// kernel walking the store path's components for every file (`fstatat`; Unix only,
    /// Windows stats by path).
    #[cfg(unix)]
    files_dir: Option<std::os::fd::OwnedFd>,
    /// The blob being checked, as (digest, executable), and its name.
    blob: (&'a str, bool),
    name: String,
    /// The blobs seen with other bits than their names' mode.
    drifted: Vec<DriftedBlob>,
}

/// What verifying a row found.
struct Checked {
    /// Every file's blob is there with its content.
    verified: bool,
    /// The side-effects entries kept (pnpm's `sideEffectsMaps`).
    side_effects: Option<Vec<SideEffectsEntry>>,
    /// See [`PkgFromStore::drifted_blobs`].
    drifted_blobs: Option<Vec<DriftedBlob>>,
}

/// What the verifier needs of a blob's `stat`.
struct BlobStat {
    /// As Node computes `mtimeMs`.
    mtime_ms: f64,
    size: u64,
    /// The permission bits.
    mode: u32,
}

impl<'a> Verifier<'a> {
    fn new(store_dir: &'a str, algo: &'a str, tally: &'a mut Tally) -> Self {
        Verifier {
            files_dir_path: blob_files::files_dir(store_dir, SEP),
            algo,
            passed: HashSet::default(),
            tally,
            #[cfg(unix)]
            files_dir: File::open(blob_files::files_dir(store_dir, SEP))
                .ok()
                .map(std::os::fd::OwnedFd::from),
            blob: ("", false),
            name: String::with_capacity(160),
            drifted: Vec::new(),
        }
    }

    fn check_row(mut self, row: &'a PackageFilesIndex) -> Result<Checked, ReadError> {
        if !self.check_files(&row.files)? {
            return Ok(Checked {
                verified: false,
                side_effects: None,
                drifted_blobs: None,
            });
        }
        let mut kept = Vec::new();
        for (cache_key, diff) in row.side_effects.iter().flatten() {
            let keep = match &diff.added {
                // A side-effects entry with a bad blob is dropped; the package still counts
                // as in the store and gets built again.
                Some(added) => self.check_files(added)?,
                None => diff.deleted.is_some(),
            };
            // An empty `{}` diff (a build that changed nothing) is dropped too: pnpm's quirk.
            if keep {
                kept.push(SideEffectsEntry {
                    cache_key: cache_key.clone(),
                    diff: diff.clone(),
                    symlinks: None,
                });
            }
        }
        Ok(Checked {
            verified: true,
            side_effects: (!kept.is_empty()).then_some(kept),
            drifted_blobs: Some(self.drifted),
        })
    }

    /// Checks every file, also after a failure, so that every bad blob is removed in one pass.
    fn check_files(&mut self, files: &'a [(String, PackageFileInfo)]) -> Result<bool, ReadError> {
        let mut all_ok = true;
        for (path, info) in files {
            if info.digest.is_empty() {
                return Err(ReadError::MissingContentDigest(path.clone()));
            }
            let blob = (info.digest.as_str(), is_executable(info.mode));
            if self.passed.contains(&blob) {
                continue;
            }
            self.blob = blob;
            self.name.clear();
            push_blob_name(&mut self.name, &info.digest, info.mode);
            if self.check_blob(info)? {
                self.passed.insert(blob);
            } else {
                all_ok = false;
            }
        }
        Ok(all_ok)
    }

    /// `None` when the blob does not exist.
    fn stat(&self) -> Result<Option<BlobStat>, ReadError> {
        let result = match self.stat_in_files_dir() {
            Some(result) => result,
            None => fs::metadata(self.full_path()).map(|m| BlobStat {
                mtime_ms: platform::mtime_ms(&m),
                size: m.len(),
                mode: platform::permission_bits(&m) & 0o777,
            }),
        };
        match result {
            Ok(stat) => Ok(Some(stat)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(error) => Err(io_error("stat", &self.full_path(), error)),
        }
    }

    /// `stat` through the `files/` handle; `None` when there is none (or the name cannot be
    /// passed to the kernel), and the path is stat'ed instead.
    #[cfg(unix)]
    fn stat_in_files_dir(&self) -> Option<io::Result<BlobStat>> {
        use std::os::fd::AsRawFd;
        let dir = self.files_dir.as_ref()?;
        let name = std::ffi::CString::new(self.name.as_bytes()).ok()?;
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid directory fd, a NUL-terminated name, and a `stat` buffer the kernel
        // fills completely on success.
        let rc = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), 0) };
        if rc != 0 {
            return Some(Err(io::Error::last_os_error()));
        }
        // SAFETY: fstatat succeeded.
        let st = unsafe { st.assume_init() };
        #[allow(clippy::unnecessary_cast)] // `mode_t` is u16 on macOS
        let mode = st.st_mode as u32 & 0o777;
        Some(Ok(BlobStat {
            mtime_ms: st.st_mtime as f64 * 1e3 + st.st_mtime_nsec as f64 / 1e6,
            size: st.st_size as u64,
            mode,
        }))
    }

    #[cfg(not(unix))]
    fn stat_in_files_dir(&self) -> Option<io::Result<BlobStat>> {
        None
    }

    fn full_path(&self) -> String {
        let (digest, executable) = self.blob;
        blob_files::blob_path(&self.files_dir_path, SEP, digest, executable)
    }

    fn check_blob(&mut self, info: &PackageFileInfo) -> Result<bool, ReadError> {
        let Some(stat) = self.stat()? else {
            return Ok(false);
        };
        self.note_mode(stat.mode);
        // Trusted fast path: the blob was not touched since the row recorded it as checked.
        if stat.mtime_ms - info.checked_at.unwrap_or(0.0) <= 100.0 {
            return Ok(true);
        }
        let blob = self.full_path();
        if stat.size != info.size {
            remove_blob(&blob)?;
            return Ok(false);
        }
        let started = Instant::now();
        let Some(actual) = hash_file(self.algo, &blob)? else {
            // Vanished meanwhile, or an algorithm we cannot compute: nothing was hashed.
            return Ok(false);
        };
        self.tally.files += 1;
        self.tally.ms += ms_since(started);
        if actual != info.digest {
            remove_blob(&blob)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Notes the blob being checked when its bits are not its name's mode (a mode changed
    /// does not change the mtime, so a trusted blob can have drifted too).
    fn note_mode(&mut self, mode: u32) {
        let (digest, executable) = self.blob;
        if blob_modes::name_mode(executable).is_some_and(|named| named != mode) {
            self.drifted.push(DriftedBlob {
                digest: digest.to_string(),
                executable,
                mode,
            });
        }
    }
}

/// Hashes a blob's digest by its first 16 bytes only. Digests are hex of a cryptographic hash,
/// so those bytes spread entries as well as all 128 would, at a fraction of SipHash's cost over
/// the whole string; equality still compares the whole digest.
#[derive(Default)]
struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes[..bytes.len().min(16)].chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl DigestHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
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

/// The lowercase hex digest of a file with the row's algorithm. `None` when the file is gone or
/// the algorithm is not one a store row can name.
fn hash_file(algo: &str, path: &str) -> Result<Option<String>, ReadError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error("open", path, error)),
    };
    blob_files::hex_digest_of(algo, file).map_err(|error| io_error("read", path, error))
}

/// The row fields `decode_row` does not model, which pnpm hands back as they are:
/// `requiresPrepare` and `remoteSideEffectsQuarantine`. Only rows that mention them (git-hosted
/// packages, remote side-effects caches; rare) pay for a second, generic decode.
fn extra_fields(bytes: &[u8]) -> (Option<bool>, Option<Quarantine>) {
    // The row's own field names are the first record definition, at the very start.
    let mentions_extras = match msgpackr::Decoder::new(bytes).record() {
        Ok(msgpackr::Next::Record(shape)) => shape
            .keys
            .iter()
            .any(|k| k == "requiresPrepare" || k == "remoteSideEffectsQuarantine"),
        _ => false,
    };
    if !mentions_extras {
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
