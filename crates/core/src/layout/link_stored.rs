//! Linking the packages the store can serve as they are, and leaving the others out.
//!
//! This is what lets the pnpm plugin lay out a lockfile's virtual store before pnpm's own
//! install runs (`hooks.preResolution`): pnpm then skips every package that is already in
//! place, and installs the rest its own way. So a package is linked here only when pnpm, had it
//! installed the package itself, would have done exactly that: its row reads back as
//! `readPkgFromCafs` reads it (expected name and version, blob verification when asked), and it
//! will not run build scripts. Anything else (no row, a blob that fails verification, a build
//! to run, an unreadable row, an import or symlink that fails) is left out with its reason and
//! its directory removed (`package.json`, written last, first), so pnpm still sees it as missing.
//!
//! A package whose build pnpm would run is linked too when the caller gives the side-effects
//! cache key pnpm would look up for it and its row holds a diff under that key: pnpm imports it
//! with that diff applied and marks it built, so its build step never runs
//! (docs/native-install.md, "Builds from the side-effects cache").

use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;

use crate::blob_modes::BlobModeRule;
use crate::dependency_links::{self, SymlinkDep};
use crate::import::{BlobModes, FilesMap, ImportError, ImportMethod, Imported, SideEffects, Stats};
use crate::index_row::PackageFileInfo;
use crate::link::{self, BatchPackage, BatchRequest, FilesSource};
use crate::manifest::Gypfile;
use crate::read_package::{self, ExpectedPkg, PkgRead, ReadRequest};
use crate::store_handles;
use crate::symlink_entry::{self, Symlinks};
use crate::timing::ms_since;

/// One package to link if the store can serve it.
#[derive(Debug, Clone)]
pub struct StoredPackage {
    /// The store-index key (`<integrity>\t<name>@<version>`).
    pub key: String,
    /// What the row's manifest must name, as pnpm checks it on read.
    pub expected: ExpectedPkg,
    pub target_dir: PathBuf,
    /// Its dependency links (`modules` is the `node_modules` dir the package sits in).
    pub deps: SymlinkDep,
    /// pnpm will not run its build scripts (they are denied, or scripts are off), so a row
    /// that requires a build does not leave it out.
    pub build_ignored: bool,
    /// The side-effects cache key pnpm would import it with if its row requires a build (and
    /// the build is not ignored): the row's diff under it is applied, or, without one, the
    /// package is left out (`NoSideEffects`).
    pub side_effects_cache_key: Option<String>,
    /// A patched package's key if its row does not require a build (pnpm's key then has no
    /// dependency hash): its diff is applied, or the package is left out (`NoSideEffects`).
    pub patched_cache_key: Option<String>,
}

#[derive(Debug, Clone)]
pub struct StoredRequest {
    /// As the caller gave it: blob paths are concatenated onto it, as pnpm's readers do.
    pub store_dir: String,
    pub method: ImportMethod,
    pub verify_store_integrity: bool,
    pub strict_store_pkg_content_check: bool,
    /// See [`crate::import::ImportRequest::blob_mode_rule`].
    pub blob_mode_rule: BlobModeRule,
    /// See [`crate::link::BatchRequest::keep_bundled`].
    pub keep_bundled: bool,
    pub packages: Vec<StoredPackage>,
}

/// Why a package was left out.
#[derive(Debug, Clone, PartialEq)]
pub enum LeftOut {
    /// The index has no (readable) row for its key.
    NotInStore,
    /// A blob is missing or differs; pnpm re-fetches such a package.
    Unverified,
    /// It would run build scripts, which only pnpm decides about and runs.
    RequiresBuild,
    /// It would run build scripts, and its row has no side effects under its cache key.
    NoSideEffects,
    /// Reading it failed, or it read with a warning (e.g. a name mismatch): pnpm reports it.
    Unreadable(String),
    /// Importing it or linking its dependencies failed; what was made was removed.
    Failed(String),
}

#[derive(Debug)]
pub struct StoredOutcome {
    /// One per package, in request order: how it was imported (`None`: it was already there),
    /// or why it was left out.
    pub packages: Vec<Result<Option<Imported>, LeftOut>>,
    /// The linked packages whose row requires a build that was ignored (`build_ignored`), by
    /// index: pnpm records them in `.modules.yaml`.
    pub builds_ignored: Vec<usize>,
    /// The linked packages imported with their side effects (built), by index.
    pub built: Vec<usize>,
    pub read_ms: f64,
    pub import_ms: f64,
    pub symlink_ms: f64,
}

/// Reads every package's row (one batched read, checked in parallel), imports the ready ones as
/// one batch, then links each imported package's dependencies. Fails as a whole only when the
/// store index itself cannot be read.
pub fn link_stored(req: &StoredRequest, stats: &Stats) -> Result<StoredOutcome, ImportError> {
    let started = Instant::now();
    let store = store_handles::open(PathBuf::from(&req.store_dir).as_path());
    let read = ReadRequest {
        store_dir: &req.store_dir,
        verify_store_integrity: req.verify_store_integrity,
        strict_store_pkg_content_check: req.strict_store_pkg_content_check,
        // pnpm 11.28 reads a diff's symlinks back; only a diff that is applied needs them.
        side_effects_symlinks: req
            .packages
            .iter()
            .any(|p| p.side_effects_cache_key.is_some() || p.patched_cache_key.is_some()),
        // The native install reads rows for pnpm 11.28.
        gypfile: Gypfile::Read,
    };
    let keys: Vec<&str> = req.packages.iter().map(|p| p.key.as_str()).collect();
    let expected: Vec<Option<ExpectedPkg>> = req
        .packages
        .iter()
        .map(|p| Some(p.expected.clone()))
        .collect();
    let (files, _) =
        read_package::read_pkgs_map(&store.index, &read, &keys, &expected, |i, answer| {
            ready_files(&req.store_dir, answer, &req.packages[i])
        })
        .map_err(|e| ImportError::store_index(e.to_string()))?;
    let mut outcomes: Vec<Result<Option<Imported>, LeftOut>> = Vec::with_capacity(files.len());
    let mut ready = Vec::new();
    let mut ready_at = Vec::new();
    let mut builds_ignored = Vec::new();
    for (i, files) in files.into_iter().enumerate() {
        let (files, blob_modes) = match files {
            Ok(ready) => ready,
            Err(left_out) => {
                outcomes.push(Err(left_out));
                continue;
            }
        };
        let target_dir = req.packages[i].target_dir.clone();
        let mut pkg = match files {
            Ready::Plain {
                files,
                requires_build,
            } => {
                if requires_build {
                    builds_ignored.push(i);
                }
                let mut pkg = BatchPackage::from_store(
                    target_dir,
                    FilesSource::Map {
                        files,
                        side_effects: vec![],
                        symlinks: vec![],
                    },
                );
                // pnpm gives a package whose row requires a build, imported unbuilt, files of
                // its own (`needsPrivateFiles`), whether its build then runs or not.
                pkg.requires_build = requires_build;
                pkg
            }
            Ready::Built {
                files,
                key,
                diff,
                symlinks,
            } => {
                let mut pkg = BatchPackage::from_store(
                    target_dir,
                    FilesSource::Map {
                        files,
                        side_effects: vec![(key.clone(), diff)],
                        symlinks,
                    },
                );
                pkg.side_effects_cache_key = Some(key);
                pkg.requires_build = true;
                pkg
            }
        };
        pkg.blob_modes = blob_modes;
        outcomes.push(Ok(None));
        ready_at.push(i);
        ready.push(pkg);
    }
    let read_ms = ms_since(started);

    let batch = BatchRequest {
        store_dir: PathBuf::from(&req.store_dir),
        method: req.method,
        packages: ready,
        symlinks: vec![],
        blob_mode_rule: req.blob_mode_rule,
        keep_bundled: req.keep_bundled,
    };
    let imported = link::link_batch(batch, stats);
    let mut built = Vec::new();
    for (&i, result) in ready_at.iter().zip(imported.packages) {
        if matches!(&result, Ok(p) if p.is_built) {
            built.push(i);
        }
        outcomes[i] = result
            .map(|p| p.imported)
            .map_err(|e| LeftOut::Failed(e.message));
    }

    // Dependency links per package, so that one failure leaves out only its own package.
    let started = Instant::now();
    let linked: Vec<(usize, Result<(), String>)> = (0..outcomes.len())
        .into_par_iter()
        .filter(|&i| outcomes[i].is_ok())
        .map(|i| {
            let dep = &req.packages[i].deps;
            let result = dependency_links::symlink_all_modules(std::slice::from_ref(dep), stats)
                .map_err(|e| e.message);
            (i, result)
        })
        .collect();
    for (i, result) in linked {
        if let Err(message) = result {
            // pnpm must not find it in place: its completeness marker goes first, so that even a
            // removal cut short leaves a directory pnpm's importer takes as incomplete.
            let target = &req.packages[i].target_dir;
            let _ = std::fs::remove_file(target.join("package.json"));
            let _ = std::fs::remove_dir_all(target);
            outcomes[i] = Err(LeftOut::Failed(message));
        }
    }
    builds_ignored.retain(|&i| outcomes[i].is_ok());
    built.retain(|&i| outcomes[i].is_ok());
    Ok(StoredOutcome {
        packages: outcomes,
        builds_ignored,
        built,
        read_ms,
        import_ms: imported.import_ms,
        symlink_ms: ms_since(started),
    })
}

/// What a package that can be linked is imported from.
enum Ready {
    /// Its files as they are; `requires_build`: its row requires a build, which is ignored.
    Plain {
        files: FilesMap,
        requires_build: bool,
    },
    /// Its files with the side effects of its build under `key` (and their symlinks).
    Built {
        files: FilesMap,
        key: String,
        diff: SideEffects,
        symlinks: Symlinks,
    },
}

/// The files of a package that can be linked, with what its read found of its blobs' modes, or
/// why it cannot.
fn ready_files(
    store_dir: &str,
    answer: Result<PkgRead, read_package::ReadError>,
    wanted: &StoredPackage,
) -> Result<(Ready, BlobModes), LeftOut> {
    let pkg = match answer {
        Ok(PkgRead::Hit(pkg)) => pkg,
        Ok(PkgRead::Miss { .. }) => return Err(LeftOut::NotInStore),
        Err(e) => return Err(LeftOut::Unreadable(e.to_string())),
    };
    if !pkg.verified {
        return Err(LeftOut::Unverified);
    }
    let builds = pkg.requires_build && !wanted.build_ignored;
    if builds && wanted.side_effects_cache_key.is_none() {
        return Err(LeftOut::RequiresBuild);
    }
    if let Some(warning) = pkg.warnings.into_iter().next() {
        return Err(LeftOut::Unreadable(warning));
    }
    let blob_modes = match pkg.drifted_blobs {
        None => BlobModes::Unchecked,
        Some(drifted) => BlobModes::Checked(
            drifted
                .iter()
                .map(|b| (PathBuf::from(b.path(store_dir)), b.mode))
                .collect(),
        ),
    };
    let blob = |info: &PackageFileInfo| {
        PathBuf::from(read_package::blob_path(store_dir, &info.digest, info.mode))
    };
    let to_map = |files: Vec<(String, PackageFileInfo)>| -> FilesMap {
        files
            .into_iter()
            .map(|(path, info)| {
                let blob = blob(&info);
                (path, blob)
            })
            .collect()
    };
    // A patched package is imported with side effects whether or not it builds, under the
    // key for its case.
    let key = if builds {
        wanted.side_effects_cache_key.clone()
    } else {
        wanted.patched_cache_key.clone()
    };
    let Some(key) = key else {
        let ready = Ready::Plain {
            files: to_map(pkg.files),
            requires_build: pkg.requires_build,
        };
        return Ok((ready, blob_modes));
    };
    let entry = pkg
        .side_effects
        .into_iter()
        .flatten()
        // A diff a remote cache restored is not one pnpm imports as a local entry: it builds.
        .find(|e| e.cache_key == key && !e.diff.remote_origin)
        .ok_or(LeftOut::NoSideEffects)?;
    // Symlink entries are placed as symlinks after the files, not imported as files.
    let added = entry
        .diff
        .added
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, info)| !symlink_entry::is_symlink_entry(info.mode))
        .collect();
    let ready = Ready::Built {
        files: to_map(pkg.files),
        diff: SideEffects {
            added: to_map(added),
            deleted: entry.diff.deleted.unwrap_or_default(),
        },
        symlinks: entry.symlinks.unwrap_or_default(),
        key,
    };
    Ok((ready, blob_modes))
}

#[cfg(test)]
mod tests;
