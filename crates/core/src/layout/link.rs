//! Linking a whole `node_modules` in one call: the batch that imports a lockfile's worth of
//! packages, then links their dependencies (docs/store-format.md, "Linking into node_modules").
//!
//! Why a batch: pnpm imports package by package, each a message to a worker thread (at most 4 at
//! a time). Linking is syscall-bound (mkdir, link, symlink at 10-30 us each), so the win is in
//! keeping every core in the kernel all the time: one rayon work-stealing batch over all
//! packages (big packages split their files across the pool too), file maps read from the
//! store index on the pool threads so they never cross into JS, then all symlinks.
//!
//! The parts live in their own modules: [`crate::dependency_links`] (the dependency symlinks),
//! [`crate::hard_link_dir`], [`crate::row_files`] (file maps from index rows) and
//! [`crate::symlink_entry`] (side-effects symlinks).

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use crate::blob_modes::BlobModeRule;
use crate::dependency_links::{symlink_all_modules, LinkError, SymlinkDep};
use crate::import::{
    self, apply_side_effects, BlobModes, FilesMap, ImportError, ImportMethod, ImportRequest,
    Imported, ResolvedFrom, SideEffects, Stats,
};
use crate::row_files::files_from_row;
use crate::store_handles;
use crate::symlink_entry::{check_link_paths, place_symlinks, Symlinks};
use crate::timing::ms_since;

/// Where a batch package's files come from.
#[derive(Debug, Clone)]
pub enum FilesSource {
    /// The file map (and the side-effects diffs by cache key), as a caller that already read
    /// the index has it.
    Map {
        files: FilesMap,
        side_effects: Vec<(String, SideEffects)>,
        /// The side-effects symlinks pnpm 11.28 read for this package, created after its files
        /// (the `symlinks` pnpm hands an `importPackage` hook).
        symlinks: Symlinks,
    },
    /// The package's store-index key: the row is read and decoded on the pool thread.
    IndexKey(String),
}

#[derive(Debug, Clone)]
pub struct BatchPackage {
    pub target_dir: PathBuf,
    pub source: FilesSource,
    pub side_effects_cache_key: Option<String>,
    pub requires_build: bool,
    pub force: bool,
    pub keep_modules_dir: bool,
    pub safe_to_skip: bool,
    pub disable_relink_local_dir_deps: bool,
    pub resolved_from: ResolvedFrom,
    /// Overrides the batch's method for this package (`filesResponse.packageImportMethod`).
    pub method: Option<ImportMethod>,
    /// What reading the package found of its blobs' modes.
    pub blob_modes: BlobModes,
}

impl BatchPackage {
    /// A package from the store imported the plain way: no side effects, no build, not forced,
    /// the batch's import method.
    pub fn from_store(target_dir: PathBuf, source: FilesSource) -> Self {
        BatchPackage {
            target_dir,
            source,
            side_effects_cache_key: None,
            requires_build: false,
            force: false,
            keep_modules_dir: false,
            safe_to_skip: false,
            disable_relink_local_dir_deps: false,
            resolved_from: ResolvedFrom::Store,
            method: None,
            blob_modes: BlobModes::Unchecked,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BatchRequest {
    pub store_dir: PathBuf,
    pub method: ImportMethod,
    pub packages: Vec<BatchPackage>,
    pub symlinks: Vec<SymlinkDep>,
    /// See [`ImportRequest::blob_mode_rule`].
    pub blob_mode_rule: BlobModeRule,
    /// Whether a side-effects diff leaves the bundled dependencies in place (see
    /// [`apply_side_effects`]): pnpm 11.28.11's reader.
    pub keep_bundled: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PackageOutcome {
    pub is_built: bool,
    pub imported: Option<Imported>,
}

pub struct BatchOutcome {
    /// One per package, in request order.
    pub packages: Vec<Result<PackageOutcome, ImportError>>,
    /// The symlink phase's failure; it does not run when an import failed.
    pub symlinks: Result<(), LinkError>,
    pub import_ms: f64,
    pub symlink_ms: f64,
}

/// Imports every package as one work-stealing batch on the current rayon pool, then (when all
/// succeeded) creates every dependency symlink.
/// Takes the request by value: file maps given as maps move into the imports uncopied.
pub fn link_batch(req: BatchRequest, stats: &Stats) -> BatchOutcome {
    let started = Instant::now();
    let BatchRequest {
        store_dir,
        method,
        packages,
        symlinks: dep_links,
        blob_mode_rule,
        keep_bundled,
    } = req;
    let keyed = packages
        .iter()
        .any(|p| matches!(p.source, FilesSource::IndexKey(_)));
    let store = keyed.then(|| store_handles::open(&store_dir));
    // First every package's file map, so that the imports can start with the biggest
    // packages: longest first keeps every thread busy to the end instead of leaving one with
    // core-js while the others idle.
    let (rows, rows_error) = match read_rows(store.as_deref(), &packages) {
        Ok(rows) => (rows, None),
        Err(e) => (vec![None; packages.len()], Some(e)),
    };
    let store_dir_text = store_dir.display().to_string();
    let prepared: Vec<Result<Prepared, ImportError>> = packages
        .into_par_iter()
        .zip(rows.into_par_iter())
        .map(|(pkg, row)| match (&pkg.source, &rows_error) {
            (FilesSource::IndexKey(_), Some(e)) => Err(e.clone()),
            _ => prepare(
                pkg,
                row,
                store.as_deref(),
                &store_dir_text,
                method,
                blob_mode_rule,
                keep_bundled,
            ),
        })
        .collect();
    let packages = import_all(&prepared, &store_dir, method, stats);
    let import_ms = ms_since(started);
    let started = Instant::now();
    let symlinks = if packages.iter().all(|p| p.is_ok()) {
        symlink_all_modules(&dep_links, stats)
    } else {
        Ok(())
    };
    BatchOutcome {
        packages,
        symlinks,
        import_ms,
        symlink_ms: ms_since(started),
    }
}

/// The index rows of the packages given by key, one slot per package (`None` for a package
/// given by its map, or a key the index lacks): all read in one transaction (one snapshot of
/// the index, one statement per 999 keys instead of a query per package); decoding them is
/// left to the pool.
fn read_rows(
    store: Option<&store_handles::Store>,
    packages: &[BatchPackage],
) -> Result<Vec<Option<Vec<u8>>>, ImportError> {
    let keys: Vec<&str> = packages
        .iter()
        .filter_map(|p| match &p.source {
            FilesSource::IndexKey(key) => Some(key.as_str()),
            FilesSource::Map { .. } => None,
        })
        .collect();
    let mut rows = match store {
        Some(store) if !keys.is_empty() => store
            .index
            .get_many(&keys)
            .map_err(|e| ImportError::store_index(e.message))?,
        _ => vec![],
    }
    .into_iter();
    Ok(packages
        .iter()
        .map(|p| match p.source {
            FilesSource::IndexKey(_) => rows.next().flatten(),
            FilesSource::Map { .. } => None,
        })
        .collect())
}

/// A package ready to import: its request (the side-effects diff applied), whether that diff
/// made it built, and the side-effects symlinks to place after its files.
struct Prepared {
    request: ImportRequest,
    is_built: bool,
    symlinks: Symlinks,
}

/// A package's import request, from its file map or its index row (`row`).
fn prepare(
    pkg: BatchPackage,
    row: Option<Vec<u8>>,
    store: Option<&store_handles::Store>,
    store_dir_text: &str,
    method: ImportMethod,
    blob_mode_rule: BlobModeRule,
    keep_bundled: bool,
) -> Result<Prepared, ImportError> {
    let (files, diff, symlinks) = match pkg.source {
        FilesSource::Map {
            files,
            side_effects,
            symlinks,
        } => {
            check_link_paths(&pkg.target_dir, &symlinks)?;
            let diff = pkg.side_effects_cache_key.as_ref().and_then(|k| {
                side_effects
                    .into_iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, d)| d)
            });
            (files, diff, symlinks)
        }
        FilesSource::IndexKey(key) => files_from_row(
            store.expect("a keyed package opens the store"),
            row,
            store_dir_text,
            &key,
            pkg.side_effects_cache_key.as_deref(),
        )?,
    };
    let is_built = diff.is_some();
    let files = match &diff {
        Some(d) => apply_side_effects(&files, d, keep_bundled),
        None => files,
    };
    let request = ImportRequest {
        target_dir: pkg.target_dir,
        files,
        resolved_from: pkg.resolved_from,
        method: pkg.method.unwrap_or(method),
        will_be_built: !is_built && pkg.requires_build,
        force: pkg.force,
        keep_modules_dir: pkg.keep_modules_dir,
        disable_relink_local_dir_deps: pkg.disable_relink_local_dir_deps,
        safe_to_skip: pkg.safe_to_skip,
        blob_modes: pkg.blob_modes,
        blob_mode_rule,
    };
    Ok(Prepared {
        request,
        is_built,
        symlinks,
    })
}

/// Imports the prepared packages on the pool, biggest first; the outcomes in package order.
fn import_all(
    prepared: &[Result<Prepared, ImportError>],
    store_dir: &Path,
    method: ImportMethod,
    stats: &Stats,
) -> Vec<Result<PackageOutcome, ImportError>> {
    let files_of = |i: usize| prepared[i].as_ref().map_or(0, |p| p.request.files.len());
    let mut order: Vec<usize> = (0..prepared.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files_of(i)));
    let import_one = |i: usize| {
        let outcome = match &prepared[i] {
            Ok(p) => import::import_package(store_dir, &p.request, stats).and_then(|imported| {
                place_symlinks(&p.request.target_dir, &p.symlinks)?;
                Ok(PackageOutcome {
                    is_built: p.is_built,
                    imported,
                })
            }),
            Err(e) => Err(e.clone()),
        };
        (i, outcome)
    };
    // `auto` decides on the first package it imports, by trying a clone and then a link and
    // undoing a failed try (directories made and removed again). Let the smallest package
    // pay for that, alone, instead of the biggest ones the pool would start with.
    let mut outcomes = Vec::with_capacity(order.len());
    if method == ImportMethod::Auto {
        let smallest = order.iter().rposition(|&i| {
            prepared[i]
                .as_ref()
                .is_ok_and(|p| !p.request.files.is_empty())
        });
        if let Some(pos) = smallest {
            outcomes.push(import_one(order.remove(pos)));
        }
    }
    outcomes.par_extend(order.par_iter().with_max_len(1).map(|&i| import_one(i)));
    outcomes.sort_by_key(|(i, _)| *i);
    outcomes.into_iter().map(|(_, o)| o).collect()
}

/// The counts of a call, as plain numbers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    pub packages_imported: u64,
    pub packages_skipped: u64,
    pub files_linked: u64,
    pub files_copied: u64,
    pub files_cloned: u64,
    pub dirs_made: u64,
    pub symlinks: u64,
}

impl Counts {
    pub fn of(stats: &Stats) -> Self {
        Counts {
            packages_imported: Stats::get(&stats.packages_imported),
            packages_skipped: Stats::get(&stats.packages_skipped),
            files_linked: Stats::get(&stats.files_linked),
            files_copied: Stats::get(&stats.files_copied),
            files_cloned: Stats::get(&stats.files_cloned),
            dirs_made: Stats::get(&stats.dirs_made),
            symlinks: Stats::get(&stats.symlinks),
        }
    }
}

#[cfg(test)]
mod tests;
