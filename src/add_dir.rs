//! A package directory into the store (pnpm's `addFilesFromDir`, spec §5): git-hosted and local
//! packages, and the side-effects upload that records what a package's build scripts changed.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::cas::Cas;
use crate::extract::{complete_package_json, parse_package_json, ExtractError, ExtractedFile};
use crate::manifest;
use crate::package_index::{self, PackageFileInfo, RowError, SideEffectsDiff};
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
    /// pnpm 11.28's side-effects upload: a symlink met by the walk is recorded as an entry
    /// (mode [`SYMLINK_MODE`], the target text as its blob) instead of followed, when its path
    /// and target pass [`symlink_entry::normalize_target`]. One that does not (and any symlink
    /// in a `files` list) marks the result [`AddedDir::has_unrecorded_symlinks`], so that
    /// [`upload_side_effects`] drops the entry, and is followed as before.
    pub record_symlinks: bool,
}

impl<'a> AddDirRequest<'a> {
    /// The whole directory walked, no appended manifest.
    pub fn new(dir: &'a Path) -> Self {
        AddDirRequest {
            dir,
            files: None,
            include_node_modules: false,
            append_manifest: None,
            record_symlinks: false,
        }
    }
}

/// The package's files in the store, with its manifest.
#[derive(Debug)]
pub struct AddedDir {
    pub files: Vec<ExtractedFile>,
    /// `package.json` as parsed (or `appendManifest`), before normalisation.
    pub raw_manifest: Option<Value>,
    /// The bundled manifest (spec §3.8).
    pub manifest: Option<Value>,
    /// With `record_symlinks`: a symlink was met that is not recorded (always `false` without).
    pub has_unrecorded_symlinks: bool,
}

#[derive(Debug)]
pub enum AddDirError {
    Io(io::Error),
    /// `package.json` is not valid JSON, or its version is not a string.
    Manifest(String),
    /// The stored row was hashed with another algorithm than the one side effects use.
    AlgoMismatch(String),
    Row(RowError),
}

impl AddDirError {
    /// pnpm's code, when pnpm's error has one (the caller's default applies otherwise).
    pub fn code(&self) -> Option<String> {
        match self {
            AddDirError::Io(e) => Some(format!("ERR_PNPM_{}", crate::os_error::errno_name(e))),
            AddDirError::AlgoMismatch(_) => Some("ERR_PNPM_ALGO_MISMATCH".into()),
            AddDirError::Row(_) => Some("ERR_PNPM_READ_FROM_STORE".into()),
            AddDirError::Manifest(_) => None,
        }
    }
}

impl std::fmt::Display for AddDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddDirError::Io(e) => f.write_str(&crate::os_error::describe(e)),
            AddDirError::Manifest(m) | AddDirError::AlgoMismatch(m) => f.write_str(m),
            AddDirError::Row(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AddDirError {}

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
    let root = fs::canonicalize(req.dir).map_err(AddDirError::Io)?;
    let listing = match req.files {
        Some(list) => listed_files(req.dir, &root, list)?,
        None => {
            let mut listing = Listing::default();
            let mut visiting = HashSet::from([root.clone()]);
            walk(req, &root, req.dir, "", &root, &mut visiting, &mut listing)?;
            listing
        }
    };
    let found = &listing.files;
    let mut files = found
        .par_iter()
        .map(|f| {
            let bytes = fs::read(&f.path).map_err(AddDirError::Io)?;
            store_entry(cas, &f.key, &bytes, f.mode)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // After the files, as pnpm 11.28 adds them.
    for (key, target) in &listing.symlinks {
        files.push(store_entry(cas, key, target.as_bytes(), SYMLINK_MODE)?);
    }
    let raw = found
        .iter()
        .find(|f| f.key == "package.json")
        .map(|f| {
            let bytes = fs::read(&f.path).map_err(AddDirError::Io)?;
            parse_package_json(&bytes).map_err(AddDirError::from)
        })
        .transpose()?;
    let raw_manifest = complete_package_json(cas, &mut files, raw, req.append_manifest)?;
    let manifest = match &raw_manifest {
        Some(m) => manifest::normalize_bundled_manifest(m)
            .map_err(|e| AddDirError::Manifest(e.to_string()))?,
        None => None,
    };
    Ok(AddedDir {
        files,
        raw_manifest,
        manifest,
        has_unrecorded_symlinks: req.record_symlinks && listing.has_unrecorded_symlinks,
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
/// symlink whose target is outside the package. Symlinks are never recorded here.
fn listed_files(dir: &Path, root: &Path, list: &[String]) -> Result<Listing, AddDirError> {
    let mut listing = Listing::default();
    for key in list {
        let path = dir.join(key);
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(AddDirError::Io(e)),
        };
        let meta = if meta.file_type().is_symlink() {
            listing.has_unrecorded_symlinks = true;
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
/// Unix), keys joined with `/`. Symlinks are recorded (`record_symlinks`) or followed only to
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
        let file_type = entry.file_type().map_err(AddDirError::Io)?;
        let skipped_node_modules =
            prefix.is_empty() && name == "node_modules" && !req.include_node_modules;
        let next_real_dir = if file_type.is_symlink() {
            if req.record_symlinks {
                // pnpm 11.28 leaves a skipped `node_modules` link alone before looking at it.
                if skipped_node_modules {
                    continue;
                }
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
                Err(e) => return Err(AddDirError::Io(e)),
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
    let target = fs::read_link(path).map_err(AddDirError::Io)?;
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
        Err(e) => return Err(AddDirError::Io(e)),
    };
    if !real.starts_with(root) {
        return Ok(None);
    }
    let meta = fs::metadata(&real).map_err(AddDirError::Io)?;
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
/// what the build deleted, and what it added or changed (digest or mode). A build with a
/// symlink that could not be recorded (`has_unrecorded_symlinks`) is dropped instead, as pnpm
/// 11.28 drops it: an entry that restores the package without its link would be wrong, so any
/// entry under `cache_key` is removed and the package gets built again where it is installed.
pub fn upload_side_effects(
    stored_row: &[u8],
    cache_key: &str,
    added: &AddedDir,
) -> Result<SideEffectsUpload, AddDirError> {
    let base = package_index::decode_row(stored_row).map_err(AddDirError::Row)?;
    let requires_build = base.requires_build.unwrap_or_else(|| {
        manifest::requires_build(
            added.raw_manifest.as_ref(),
            added.files.iter().map(|f| f.path.as_str()),
        )
    });
    if added.has_unrecorded_symlinks {
        let row =
            package_index::without_side_effects(stored_row, cache_key).map_err(AddDirError::Row)?;
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
    let diff = diff_files(&base.files, &added.files);
    let row =
        package_index::with_side_effects(stored_row, cache_key, &diff).map_err(AddDirError::Row)?;
    let requires_prepare = match crate::msgpackr::decode(stored_row) {
        Ok(v) => match v.get("requiresPrepare") {
            Some(Value::Bool(b)) => Some(*b),
            _ => None,
        },
        Err(_) => None,
    };
    Ok(SideEffectsUpload {
        row: Some(row),
        diff: Some(diff),
        requires_build,
        requires_prepare,
    })
}

/// Union of both key sets, base order first: gone → `deleted`; new, or with another digest or
/// mode → `added`. Each list only when non-empty, so an unchanged build records `{}`.
fn diff_files(base: &[(String, PackageFileInfo)], built: &[ExtractedFile]) -> SideEffectsDiff {
    let built_index: std::collections::HashMap<&str, &PackageFileInfo> =
        built.iter().map(|f| (f.path.as_str(), &f.info)).collect();
    let base_index: std::collections::HashMap<&str, &PackageFileInfo> =
        base.iter().map(|(p, f)| (p.as_str(), f)).collect();
    let mut deleted = Vec::new();
    let mut added = Vec::new();
    for (path, info) in base {
        match built_index.get(path.as_str()) {
            None => deleted.push(path.clone()),
            Some(now) if now.digest != info.digest || now.mode != info.mode => {
                added.push((path.clone(), (*now).clone()))
            }
            Some(_) => {}
        }
    }
    for file in built {
        if !base_index.contains_key(file.path.as_str()) {
            added.push((file.path.clone(), file.info.clone()));
        }
    }
    SideEffectsDiff {
        deleted: (!deleted.is_empty()).then_some(deleted),
        added: (!added.is_empty()).then_some(added),
    }
}

#[cfg(test)]
mod tests;
