//! A package directory into the store (pnpm's `addFilesFromDir`; docs/store-format.md, "Index rows"): git-hosted and local
//! packages, and the side-effects upload that records what a package's build scripts changed.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::blob_files::Cas;
use crate::error_code::ErrorCode;
use crate::extract::{complete_package_json, parse_package_json, ExtractError, ExtractedFile};
use crate::index_db::IndexError;
use crate::index_row::{self, PackageFileInfo, RowError, SideEffectsDiff};
use crate::manifest::{self, Gypfile};
use crate::os_error::{At, FsSite, PathError};
use crate::store_handles::Store;
use crate::symlink_entry::{self, SYMLINK_MODE};
use crate::value::Value;

pub struct AddDirRequest<'a> {
    pub dir: &'a Path,
    /// Only these relative paths (as npm-packlist lists them), instead of a walk.
    pub files: Option<&'a [String]>,
    /// Walk into a `node_modules` directly under the package root too.
    pub include_node_modules: bool,
    /// `JSON.stringify(appendManifest, null, 2)`.
    pub append_manifest: Option<&'a str>,
    /// Whose `addFilesFromDir` to reproduce (the walk, and the diff of an upload).
    pub compat: Compat,
    /// The directory is a built package whose side effects are uploaded. Under pnpm 11.28
    /// ([`Compat::Pnpm1128`], [`Compat::Pnpm1128Before11`]) a symlink met by the walk is then recorded as an entry (mode
    /// [`SYMLINK_MODE`], the target text as its blob) instead of followed, when its path and
    /// target pass [`symlink_entry::normalize_target`]. One that does not (and any symlink in a
    /// `files` list) marks the result [`AddedDir::has_unrecorded_symlinks`], so that
    /// [`upload_side_effects`] drops the entry, and is followed as before.
    pub side_effects_upload: bool,
}

impl<'a> AddDirRequest<'a> {
    /// The whole directory walked, no appended manifest, as `@pnpm/worker` 1100.x adds it.
    pub fn new(dir: &'a Path) -> Self {
        AddDirRequest {
            dir,
            files: None,
            include_node_modules: false,
            append_manifest: None,
            compat: Compat::Worker1100,
            side_effects_upload: false,
        }
    }

    /// Symlinks are recorded, not followed: pnpm 11.28's side-effects upload.
    fn records_symlinks(&self) -> bool {
        self.side_effects_upload && self.compat.walks_as_pnpm_1128()
    }
}

/// Whose `addFilesFromDir` a request reproduces. pnpm 11.28's worker (`dist/worker.js`, which
/// `@cas/native/pnpm-worker` replaces) changed what `@pnpm/worker` 1100.x does in a few places,
/// each a method here, so that both run through the same walk and the same diff:
/// - a side-effects upload records symlinks ([`AddDirRequest::side_effects_upload`]);
/// - a symlink named `node_modules` in the package root is skipped even when it points to a
///   file (1100.x stores it as that file) — [`Compat::skips_root_node_modules_links`];
/// - a `files` entry whose real path leaves the package (through a symlinked directory on its
///   way) is skipped (1100.x reads it) — [`Compat::keeps_listed_files_inside`];
/// - the diff compares digests only on Windows — [`Compat::compares_modes`]; from 11.28.11 it
///   also leaves out files of the stored row under `node_modules/` and lists `added` in the
///   built package's order — [`Compat::lists_deleted`], [`Compat::orders_added_as_stored`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compat {
    /// `@pnpm/worker` 1100.x, and the uploads of pnpm's worker before 11.28.1.
    #[default]
    Worker1100,
    /// pnpm 11.28's own worker (11.28.11's).
    Pnpm1128,
    /// pnpm 11.28.10's worker: 11.28's walk (symlinks recorded by an upload) with 1100.x's
    /// diff, as in 11.28.5 to 11.28.10 (11.28.1 to 11.28.4 differ only in not checking a
    /// listed file's real path, and an upload lists no files).
    Pnpm1128Before11,
}

impl Compat {
    /// The names the JS option takes: `'@pnpm/worker@1100'`, `'pnpm@11.28'` and
    /// `'pnpm@11.28.10'`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "@pnpm/worker@1100" => Some(Compat::Worker1100),
            "pnpm@11.28" => Some(Compat::Pnpm1128),
            "pnpm@11.28.10" => Some(Compat::Pnpm1128Before11),
            _ => None,
        }
    }

    /// pnpm 11.28's walk (and its reading of `gypfile`), in all its releases' workers.
    fn walks_as_pnpm_1128(self) -> bool {
        self != Compat::Worker1100
    }

    /// pnpm 11.28 reads `gypfile` (see [`Gypfile`]); 1100.x does not.
    pub fn gypfile(self) -> Gypfile {
        if self.walks_as_pnpm_1128() {
            Gypfile::Read
        } else {
            Gypfile::Ignored
        }
    }

    /// pnpm 11.28 leaves a root `node_modules` symlink alone before looking at its target;
    /// 1100.x follows it and skips only a directory there.
    fn skips_root_node_modules_links(self) -> bool {
        self.walks_as_pnpm_1128()
    }

    /// pnpm 11.28 checks a listed file's real path, not only a listed symlink's.
    fn keeps_listed_files_inside(self) -> bool {
        self.walks_as_pnpm_1128()
    }

    /// Whether a file of the stored row that the build no longer has counts as deleted. The
    /// walk skips the root `node_modules`, so under pnpm 11.28.11 its files (bundled
    /// dependencies, still in the built package) are not: restoring the entry keeps them.
    /// 1100.x and the releases before 11.28.11 list them, and a package restored from its
    /// entry by those loses its bundled dependencies.
    fn lists_deleted(self, path: &str) -> bool {
        self != Compat::Pnpm1128 || !path.starts_with("node_modules/")
    }

    /// 1100.x (and pnpm to 11.28.10) walks the union of both key sets, the stored row's
    /// first, so changed files come in the stored order before new ones; pnpm 11.28.11 lists
    /// them in the built package's order.
    fn orders_added_as_stored(self) -> bool {
        self != Compat::Pnpm1128
    }

    /// pnpm 11.28 ignores modes on Windows, where the mode read back from disk is not the one
    /// the tarball gave; 1100.x compares them everywhere.
    fn compares_modes(self) -> bool {
        self == Compat::Worker1100 || !cfg!(windows)
    }
}

/// The package's files in the store, with its manifest.
#[derive(Debug)]
pub struct AddedDir {
    pub files: Vec<ExtractedFile>,
    /// `package.json` as parsed (or `appendManifest`), before normalisation.
    pub raw_manifest: Option<Value>,
    /// The bundled manifest (docs/store-format.md, "Index rows").
    pub manifest: Option<Value>,
    /// When symlinks are recorded (pnpm 11.28's upload): a symlink was met that is not (always
    /// `false` otherwise).
    pub has_unrecorded_symlinks: bool,
    /// The request's: [`upload_side_effects`] diffs as the same worker does.
    pub compat: Compat,
}

#[derive(Debug, thiserror::Error)]
pub enum AddDirError {
    /// A filesystem failure, with the path it happened on.
    #[error("{0}")]
    Io(PathError),
    /// `package.json` is not valid JSON, or its version is not a string.
    #[error("{0}")]
    Manifest(String),
    /// The stored row was hashed with another algorithm than the one side effects use.
    #[error("{0}")]
    AlgoMismatch(String),
    #[error("{0}")]
    Row(RowError),
    /// Reading or writing the store index failed.
    #[error("{0}")]
    Index(IndexError),
}

impl ErrorCode for AddDirError {
    /// A bad `package.json` has no code of its own in pnpm's worker; pnpm's git fetcher, the
    /// usual caller, reports it as `ERR_PNPM_GIT_FETCH_FAILED`.
    fn code(&self) -> &'static str {
        match self {
            AddDirError::Io(e) => e.code(),
            AddDirError::AlgoMismatch(_) => "ERR_PNPM_ALGO_MISMATCH",
            AddDirError::Row(_) => "ERR_PNPM_READ_FROM_STORE",
            AddDirError::Index(e) => e.code(),
            AddDirError::Manifest(_) => "ERR_PNPM_GIT_FETCH_FAILED",
        }
    }

    fn site(&self) -> Option<FsSite> {
        match self {
            AddDirError::Io(e) => e.site(),
            _ => None,
        }
    }
}

impl From<ExtractError> for AddDirError {
    fn from(e: ExtractError) -> Self {
        match e {
            ExtractError::Io(e) => AddDirError::Io(e),
            other => AddDirError::Manifest(other.to_string()),
        }
    }
}

/// A file found in the package directory, to be stored under `key`.
struct Found {
    key: String,
    path: PathBuf,
    mode: u32,
}

/// What the walk or the `files` list gives: files, and symlinks to record (key, target text).
#[derive(Default)]
struct Listing {
    files: Vec<Found>,
    symlinks: Vec<(String, String)>,
    has_unrecorded_symlinks: bool,
}

pub fn add_dir(cas: &Cas, req: &AddDirRequest) -> Result<AddedDir, AddDirError> {
    let root = fs::canonicalize(req.dir)
        .at("realpath", req.dir)
        .map_err(AddDirError::Io)?;
    let listing = match req.files {
        Some(list) => listed_files(req, &root, list)?,
        None => {
            let mut listing = Listing::default();
            let mut visiting = HashSet::from([root.clone()]);
            walk(req, &root, req.dir, "", &root, &mut visiting, &mut listing)?;
            listing
        }
    };
    // Each file is read once: `package.json`'s bytes are kept for the manifest, so that it is
    // parsed from exactly what was stored.
    let stored = listing
        .files
        .par_iter()
        .map(|f| {
            let bytes = fs::read(&f.path)
                .at("open", &f.path)
                .map_err(AddDirError::Io)?;
            let entry = store_entry(cas, &f.key, &bytes, f.mode)?;
            Ok((entry, (f.key == "package.json").then_some(bytes)))
        })
        .collect::<Result<Vec<_>, AddDirError>>()?;
    let mut manifest_bytes = None;
    let mut files = Vec::with_capacity(stored.len() + listing.symlinks.len());
    for (entry, bytes) in stored {
        manifest_bytes = manifest_bytes.or(bytes);
        files.push(entry);
    }
    // After the files, as pnpm 11.28 adds them.
    for (key, target) in &listing.symlinks {
        files.push(store_entry(cas, key, target.as_bytes(), SYMLINK_MODE)?);
    }
    let raw = manifest_bytes
        .map(|bytes| parse_package_json(&bytes).map_err(AddDirError::from))
        .transpose()?;
    let raw_manifest = complete_package_json(cas, &mut files, raw, req.append_manifest)?;
    let manifest = match &raw_manifest {
        Some(m) => manifest::normalize_bundled_manifest(m, req.compat.gypfile())
            .map_err(|e| AddDirError::Manifest(e.to_string()))?,
        None => None,
    };
    Ok(AddedDir {
        files,
        raw_manifest,
        manifest,
        has_unrecorded_symlinks: req.records_symlinks() && listing.has_unrecorded_symlinks,
        compat: req.compat,
    })
}

/// `bytes` into the store as the entry `key` with `mode`.
fn store_entry(
    cas: &Cas,
    key: &str,
    bytes: &[u8],
    mode: u32,
) -> Result<ExtractedFile, AddDirError> {
    let stored = cas.write(bytes, mode).map_err(AddDirError::Io)?;
    Ok(ExtractedFile {
        path: key.to_string(),
        info: PackageFileInfo {
            checked_at: Some(stored.checked_at),
            digest: stored.digest,
            mode,
            size: bytes.len() as u64,
        },
        executable: stored.executable,
    })
}

/// The `files` list form: each entry as given (its key), skipped when missing or when it is a
/// symlink whose target is outside the package (pnpm 11.28: or when its real path is, through
/// a symlinked directory on the way). Symlinks are never recorded here.
fn listed_files(req: &AddDirRequest, root: &Path, list: &[String]) -> Result<Listing, AddDirError> {
    let mut listing = Listing::default();
    for key in list {
        let path = req.dir.join(key);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).at("lstat", &path).map_err(AddDirError::Io),
        };
        let is_link = meta.file_type().is_symlink();
        listing.has_unrecorded_symlinks |= is_link;
        let meta = if is_link || req.compat.keeps_listed_files_inside() {
            match contained_target(&path, root)? {
                Some((_, meta)) => meta,
                None => continue,
            }
        } else {
            meta
        };
        listing.files.push(Found {
            key: key.clone(),
            path,
            mode: mode_bits(&meta),
        });
    }
    Ok(listing)
}

/// Depth-first, entries in byte order of their names (what Node's `readdirSync` gives on
/// Unix), keys joined with `/`. Symlinks are recorded (pnpm 11.28's upload) or followed only to
/// targets inside the package; a directory reached again through a link while it is being
/// walked is skipped (cycles).
fn walk(
    req: &AddDirRequest,
    root: &Path,
    dir: &Path,
    prefix: &str,
    real_dir: &Path,
    visiting: &mut HashSet<PathBuf>,
    listing: &mut Listing,
) -> Result<(), AddDirError> {
    let mut entries = fs::read_dir(dir)
        .and_then(|it| it.collect::<io::Result<Vec<_>>>())
        .at("scandir", dir)
        .map_err(AddDirError::Io)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let path = entry.path();
        let file_type = entry
            .file_type()
            .at("lstat", &path)
            .map_err(AddDirError::Io)?;
        let skipped_node_modules =
            prefix.is_empty() && name == "node_modules" && !req.include_node_modules;
        let next_real_dir = if file_type.is_symlink() {
            if skipped_node_modules && req.compat.skips_root_node_modules_links() {
                continue;
            }
            if req.records_symlinks() {
                if let Some(target) = recordable_target(&path, &key)? {
                    listing.symlinks.push((key, target));
                    continue;
                }
                listing.has_unrecorded_symlinks = true;
            }
            match contained_target(&path, root)? {
                None => continue,
                Some((real, meta)) if meta.is_dir() => real,
                Some((_, meta)) => {
                    listing.files.push(Found {
                        key,
                        path,
                        mode: mode_bits(&meta),
                    });
                    continue;
                }
            }
        } else if file_type.is_dir() {
            real_dir.join(&name)
        } else {
            match fs::metadata(&path) {
                Ok(meta) => listing.files.push(Found {
                    key,
                    path,
                    mode: mode_bits(&meta),
                }),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).at("stat", &path).map_err(AddDirError::Io),
            }
            continue;
        };
        if skipped_node_modules || visiting.contains(&next_real_dir) {
            continue;
        }
        visiting.insert(next_real_dir.clone());
        walk(req, root, &path, &key, &next_real_dir, visiting, listing)?;
        visiting.remove(&next_real_dir);
    }
    Ok(())
}

/// The target text to record for the symlink at `path` (entry `key`), if pnpm 11.28 would.
fn recordable_target(path: &Path, key: &str) -> Result<Option<String>, AddDirError> {
    // pnpm 11.28 records none on Windows: creating a symlink there needs a privilege most users
    // lack, so an upload from a package with one is dropped rather than restored without it.
    if cfg!(windows) {
        return Ok(None);
    }
    let target = fs::read_link(path)
        .at("readlink", path)
        .map_err(AddDirError::Io)?;
    Ok(symlink_entry::normalize_target(
        key,
        &target.to_string_lossy(),
    ))
}

/// A symlink's real target and its metadata, if the target exists inside `root`.
fn contained_target(
    link: &Path,
    root: &Path,
) -> Result<Option<(PathBuf, fs::Metadata)>, AddDirError> {
    let real = match fs::canonicalize(link) {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).at("realpath", link).map_err(AddDirError::Io),
    };
    if !real.starts_with(root) {
        return Ok(None);
    }
    let meta = fs::metadata(&real)
        .at("stat", &real)
        .map_err(AddDirError::Io)?;
    Ok(Some((real, meta)))
}

/// The mode pnpm records: the permission bits (`stat().mode & 0o777`; on Windows what Node
/// reports there, `0o666` or `0o444`).
fn mode_bits(meta: &fs::Metadata) -> u32 {
    crate::platform::permission_bits(meta) & 0o777
}

/// The row pnpm writes for a directory: `requiresBuild, requiresPrepare, manifest, algo,
/// files` (`requiresPrepare` and `manifest` present even when `undefined`).
pub fn fresh_row(added: &AddedDir, requires_prepare: Option<bool>) -> (Vec<u8>, bool) {
    let requires_build = manifest::requires_build(
        added.manifest.as_ref(),
        added.files.iter().map(|f| f.path.as_str()),
        added.compat.gypfile(),
    );
    let row = Value::Object(vec![
        ("requiresBuild".into(), Value::Bool(requires_build)),
        (
            "requiresPrepare".into(),
            requires_prepare.map_or(Value::Undefined, Value::Bool),
        ),
        (
            "manifest".into(),
            added.manifest.clone().unwrap_or(Value::Undefined),
        ),
        ("algo".into(), Value::String("sha512".into())),
        ("files".into(), files_map(&added.files)),
    ]);
    (crate::msgpackr::encode(&row), requires_build)
}

/// What a side-effects upload reports when the stored row does not say: pnpm's rule read off the
/// package's own `package.json`, not the row's manifest.
fn raw_requires_build(added: &AddedDir) -> bool {
    manifest::requires_build(
        added.raw_manifest.as_ref(),
        added.files.iter().map(|f| f.path.as_str()),
        added.compat.gypfile(),
    )
}

fn files_map(files: &[ExtractedFile]) -> Value {
    Value::Map(
        files
            .iter()
            .map(|f| (Value::String(f.path.clone()), f.info.to_value()))
            .collect(),
    )
}

/// What a side-effects upload gives back besides the rewritten row.
#[derive(Debug, PartialEq)]
pub struct SideEffectsUpload {
    /// The rewritten row; `None` when there is nothing to write (a dropped upload that found
    /// no entry to remove).
    pub row: Option<Vec<u8>>,
    /// What was recorded under the cache key; `None` when the upload was dropped.
    pub diff: Option<SideEffectsDiff>,
    pub requires_build: bool,
    /// The stored row's `requiresPrepare` (`None` for a dropped upload, whose reply has none).
    pub requires_prepare: Option<bool>,
}

/// Records the built package's files as side effects under `cache_key` in the stored row:
/// what the build deleted, and what it added or changed (digest or mode), as the worker of
/// `added.compat` lists them (see [`diff_files`]). A build with a
/// symlink that could not be recorded (`has_unrecorded_symlinks`) is dropped instead, as pnpm
/// 11.28 drops it: an entry that restores the package without its link would be wrong, so any
/// entry under `cache_key` is removed and the package gets built again where it is installed.
pub fn upload_side_effects(
    stored_row: &[u8],
    cache_key: &str,
    added: &AddedDir,
) -> Result<SideEffectsUpload, AddDirError> {
    let base = index_row::decode_row(stored_row).map_err(AddDirError::Row)?;
    let requires_build = base
        .requires_build
        .unwrap_or_else(|| raw_requires_build(added));
    if added.has_unrecorded_symlinks {
        let row =
            index_row::without_side_effects(stored_row, cache_key).map_err(AddDirError::Row)?;
        return Ok(SideEffectsUpload {
            row,
            diff: None,
            requires_build,
            requires_prepare: None,
        });
    }
    if base.algo != "sha512" {
        return Err(AddDirError::AlgoMismatch(format!(
            "Algorithm mismatch: package index uses \"{}\" but side effects were computed with \"sha512\"",
            base.algo
        )));
    }
    let diff = diff_files(&base.files, &added.files, added.compat);
    let fields = index_row::row_fields(stored_row).map_err(AddDirError::Row)?;
    let requires_prepare = fields.iter().find_map(|(k, v)| match (k.as_str(), v) {
        ("requiresPrepare", Value::Bool(b)) => Some(*b),
        _ => None,
    });
    let row = index_row::set_side_effects(fields, cache_key, &diff).map_err(AddDirError::Row)?;
    Ok(SideEffectsUpload {
        row: Some(row),
        diff: Some(diff),
        requires_build,
        requires_prepare,
    })
}

/// What a build changed, from the stored files (`base`) to the built package's: a stored file
/// the build no longer has is `deleted` (in stored order; under pnpm 11.28 not one under the
/// root `node_modules/`, which the walk skips), a new file or one with another digest or mode
/// is `added` (in the built package's order; 1100.x puts changed files first, in stored
/// order). Each list only when non-empty, so an unchanged build records `{}`.
fn diff_files(
    base: &[(String, PackageFileInfo)],
    built: &[ExtractedFile],
    compat: Compat,
) -> SideEffectsDiff {
    let built_paths: HashSet<&str> = built.iter().map(|f| f.path.as_str()).collect();
    let base_index: HashMap<&str, (usize, &PackageFileInfo)> = base
        .iter()
        .enumerate()
        .map(|(at, (p, f))| (p.as_str(), (at, f)))
        .collect();
    let deleted: Vec<String> = base
        .iter()
        .filter(|(path, _)| !built_paths.contains(path.as_str()) && compat.lists_deleted(path))
        .map(|(path, _)| path.clone())
        .collect();
    let mut added: Vec<(Option<usize>, &ExtractedFile)> = built
        .iter()
        .filter_map(|file| match base_index.get(file.path.as_str()) {
            None => Some((None, file)),
            Some(&(at, was))
                if was.digest != file.info.digest
                    || (compat.compares_modes() && was.mode != file.info.mode) =>
            {
                Some((Some(at), file))
            }
            Some(_) => None,
        })
        .collect();
    if compat.orders_added_as_stored() {
        // Stable: new files (`None` sorts last) keep the built package's order.
        added.sort_by_key(|&(at, _)| at.unwrap_or(usize::MAX));
    }
    let added: Vec<(String, PackageFileInfo)> = added
        .into_iter()
        .map(|(_, f)| (f.path.clone(), f.info.clone()))
        .collect();
    SideEffectsDiff {
        remote_origin: false,
        deleted: (!deleted.is_empty()).then_some(deleted),
        added: (!added.is_empty()).then_some(added),
    }
}

/// What becomes of a package directory's index row once its files are in the store.
pub struct RowRequest<'a> {
    /// The row's key (`<integrity>\t<name>@<version>`).
    pub files_index_file: &'a str,
    /// Upload the directory as the side effects of building the package stored under
    /// `files_index_file`, under this cache key (nothing is written when that row does not
    /// exist); without it the directory gets a row of its own.
    pub side_effects_cache_key: Option<&'a str>,
    pub requires_prepare: Option<bool>,
    /// Commit the row to the store index.
    pub write_index: bool,
}

/// A package directory added to the store, and its row.
#[derive(Debug)]
pub struct AddedToStore {
    pub added: AddedDir,
    pub requires_build: bool,
    pub requires_prepare: Option<bool>,
    /// The diff a side-effects upload recorded.
    pub side_effects: Option<SideEffectsDiff>,
    /// pnpm 11.28's upload that found the package's row: whether it was dropped for a symlink
    /// it could not record.
    pub has_unrecorded_symlinks: Option<bool>,
    /// The row written (or to write); `None` when a side-effects upload found no row, or was
    /// dropped and found no entry to remove.
    pub row: Option<Vec<u8>>,
}

/// pnpm's `addFilesFromDir` as a whole: the directory's files into the store, then either a
/// fresh row for it or its side effects recorded in the row of the package it was built from
/// (`req.side_effects_upload` follows `row.side_effects_cache_key`).
pub fn add_dir_to_store(
    store: &Store,
    mut req: AddDirRequest,
    row: RowRequest,
) -> Result<AddedToStore, AddDirError> {
    req.side_effects_upload = row.side_effects_cache_key.is_some();
    let added = add_dir(&store.cas, &req)?;
    let mut has_unrecorded_symlinks = None;
    let (bytes, requires_build, requires_prepare, side_effects) = match row.side_effects_cache_key {
        None => {
            let (bytes, requires_build) = fresh_row(&added, row.requires_prepare);
            (Some(bytes), requires_build, row.requires_prepare, None)
        }
        Some(key) => match store
            .index
            .get(row.files_index_file)
            .map_err(AddDirError::Index)?
        {
            // No base row: nothing to attach side effects to; pnpm writes nothing either.
            None => (None, raw_requires_build(&added), None, None),
            Some(stored) => {
                let upload = upload_side_effects(&stored, key, &added)?;
                has_unrecorded_symlinks = req
                    .compat
                    .walks_as_pnpm_1128()
                    .then_some(added.has_unrecorded_symlinks);
                (
                    upload.row,
                    upload.requires_build,
                    upload.requires_prepare,
                    upload.diff,
                )
            }
        },
    };
    if let (Some(bytes), true) = (&bytes, row.write_index) {
        store
            .index
            .write(vec![(row.files_index_file.to_string(), bytes.clone())])
            .map_err(AddDirError::Index)?;
    }
    Ok(AddedToStore {
        added,
        requires_build,
        requires_prepare,
        side_effects,
        has_unrecorded_symlinks,
        row: bytes,
    })
}

#[cfg(test)]
mod tests;
