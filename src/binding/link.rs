//! napi conversions for `linkPackages` (which `importPackage` also uses, as a batch of one),
//! `symlinkAllModules` and `hardLinkDir`, and the helpers `linkStoredPackages` shares.
//! The work runs on the link pool; each call settles a deferred promise from the pool thread and
//! never rejects: failures resolve as `{ error }` (see `binding.rs`).

use std::path::PathBuf;
use std::time::Instant;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;

use super::error::NativeError;
use super::task::spawn_settled;
use cas_native_core::blob_modes::BlobModeRule;
use cas_native_core::dependency_links::{self, LinkError, SymlinkDep};
use cas_native_core::import::{
    FilesMap, ImportError, ImportMethod, Imported, ResolvedFrom, SideEffects, Stats,
};
use cas_native_core::link::{self, BatchPackage, BatchRequest, Counts, FilesSource};
use cas_native_core::pools;
use cas_native_core::timing::ms_since;

/// How a package was imported: pnpm's `importMethod`. Its values are the TS type too, so a
/// variant added here reaches the TS side as a type, never as a code to decode by hand.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportMethodUsed {
    Clone,
    Hardlink,
    Copy,
}

impl ImportMethodUsed {
    /// `None` when the package was already there.
    pub(super) fn of(imported: Option<Imported>) -> Option<Self> {
        imported.map(|imported| match imported {
            Imported::Clone => Self::Clone,
            Imported::Hardlink => Self::Hardlink,
            Imported::Copy => Self::Copy,
        })
    }
}

pub(super) fn files_map(paths: Vec<String>, blobs: Vec<String>) -> FilesMap {
    paths
        .into_iter()
        .zip(blobs.into_iter().map(PathBuf::from))
        .collect()
}

/// Per-call counts.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct LinkCounts {
    pub packages_imported: f64,
    pub packages_skipped: f64,
    pub files_linked: f64,
    pub files_copied: f64,
    pub files_cloned: f64,
    pub dirs_made: f64,
    pub symlinks: f64,
}

impl From<Counts> for LinkCounts {
    fn from(c: Counts) -> Self {
        LinkCounts {
            packages_imported: c.packages_imported as f64,
            packages_skipped: c.packages_skipped as f64,
            files_linked: c.files_linked as f64,
            files_copied: c.files_copied as f64,
            files_cloned: c.files_cloned as f64,
            dirs_made: c.dirs_made as f64,
            symlinks: c.symlinks as f64,
        }
    }
}

/// One package of a `linkPackages` batch: its target and either its index key or its file map.
#[napi(object)]
pub struct LinkPackageInput {
    pub target_dir: String,
    /// The store-index key; the file map is read from `index.db` natively.
    pub files_index_file: Option<String>,
    /// Or the file map's keys and values.
    pub paths: Option<Vec<String>>,
    pub blob_paths: Option<Vec<String>>,
    pub side_effects_cache_key: Option<String>,
    /// With `paths`: the side-effects diff for `sideEffectsCacheKey`.
    pub side_effects_added_paths: Option<Vec<String>>,
    pub side_effects_added_blob_paths: Option<Vec<String>>,
    pub side_effects_deleted: Option<Vec<String>>,
    /// With `paths`: the side-effects symlinks to create after the files (link paths and
    /// targets, pairwise).
    pub symlink_paths: Option<Vec<String>>,
    pub symlink_targets: Option<Vec<String>>,
    pub package_import_method: Option<String>,
    pub resolved_from: Option<String>,
    pub requires_build: Option<bool>,
    pub force: Option<bool>,
    pub keep_modules_dir: Option<bool>,
    pub disable_relink_local_dir_deps: Option<bool>,
    pub safe_to_skip: Option<bool>,
}

/// `symlinkAllModules`'s deps in compact form: per dep its `modules` dir and `name`
/// (NUL-joined) and how many children it has; all children's aliases and targets NUL-joined,
/// dep after dep, in object key order.
#[napi(object)]
pub struct SymlinkDepsInput {
    pub modules: String,
    pub names: String,
    pub child_counts: Vec<u32>,
    pub aliases: String,
    pub targets: String,
}

#[napi(object)]
pub struct LinkPackagesOptions {
    pub store_dir: String,
    pub package_import_method: String,
    /// The common case in compact form (one string per column instead of an object per
    /// package: converting a lockfile's worth of objects costs more than linking a few of
    /// them): `compactCount` packages with only a target dir and an index key, NUL-joined.
    pub compact_count: Option<u32>,
    pub compact_target_dirs: Option<String>,
    pub compact_files_index_files: Option<String>,
    /// Packages with other options (after the compact ones, in the results too).
    pub packages: Vec<LinkPackageInput>,
    pub symlinks: SymlinkDepsInput,
    /// A side-effects diff leaves the bundled dependencies in place, as pnpm 11.28.11's reader
    /// does (default: applied whole, as `@pnpm/worker` 1100.x's).
    pub keep_bundled: Option<bool>,
}

#[napi(object)]
pub struct LinkPackagesResult {
    /// The first failure (in package order; the symlink phase's when all imports succeeded).
    pub error: Option<NativeError>,
    /// The package `error` belongs to; absent for a symlink failure.
    pub error_index: Option<u32>,
    /// `error` is the symlink phase's.
    pub symlink_error: bool,
    /// Per package: how it was imported; `null` when it was already there (or failed).
    pub import_methods: Vec<Option<ImportMethodUsed>>,
    /// Per package: its side-effects diff was applied.
    pub is_built: Vec<bool>,
    pub counts: LinkCounts,
    pub warnings: Vec<String>,
    pub import_ms: f64,
    pub symlink_ms: f64,
    pub total_ms: f64,
}

/// `n` NUL-separated fields of `joined` (`n` = 0 for an empty list, 1 for `[""]`).
pub(super) fn split_n(joined: &str, n: usize) -> Result<Vec<&str>, ImportError> {
    let parts: Vec<&str> = if n == 0 {
        vec![]
    } else {
        joined.split('\0').collect()
    };
    if parts.len() != n {
        return Err(ImportError::linking_failed(format!(
            "malformed batch: expected {n} fields, got {}",
            parts.len()
        )));
    }
    Ok(parts)
}

pub(super) fn symlink_deps(deps: &SymlinkDepsInput) -> Result<Vec<SymlinkDep>, ImportError> {
    let n = deps.child_counts.len();
    let modules = split_n(&deps.modules, n)?;
    let names = split_n(&deps.names, n)?;
    let total: usize = deps.child_counts.iter().map(|&c| c as usize).sum();
    let aliases = split_n(&deps.aliases, total)?;
    let targets = split_n(&deps.targets, total)?;
    let mut at = 0;
    Ok((0..n)
        .map(|i| {
            let count = deps.child_counts[i] as usize;
            let children = (at..at + count)
                .map(|k| (aliases[k].to_string(), PathBuf::from(targets[k])))
                .collect();
            at += count;
            SymlinkDep {
                children,
                modules: PathBuf::from(modules[i]),
                name: names[i].to_string(),
            }
        })
        .collect())
}

fn compact_packages(opts: &LinkPackagesOptions) -> Result<Vec<BatchPackage>, ImportError> {
    let n = opts.compact_count.unwrap_or(0) as usize;
    let targets = split_n(opts.compact_target_dirs.as_deref().unwrap_or(""), n)?;
    let keys = split_n(opts.compact_files_index_files.as_deref().unwrap_or(""), n)?;
    Ok(targets
        .into_iter()
        .zip(keys)
        .map(|(target, key)| {
            BatchPackage::from_store(
                PathBuf::from(target),
                FilesSource::IndexKey(key.to_string()),
            )
        })
        .collect())
}

fn batch_package(p: LinkPackageInput) -> Result<BatchPackage, ImportError> {
    let source = match (p.files_index_file, p.paths, p.blob_paths) {
        (Some(key), _, _) => FilesSource::IndexKey(key),
        (None, Some(paths), Some(blobs)) => {
            let side_effects = match (
                &p.side_effects_cache_key,
                p.side_effects_added_paths.is_some() || p.side_effects_deleted.is_some(),
            ) {
                (Some(key), true) => vec![(
                    key.clone(),
                    SideEffects {
                        added: files_map(
                            p.side_effects_added_paths.unwrap_or_default(),
                            p.side_effects_added_blob_paths.unwrap_or_default(),
                        ),
                        deleted: p.side_effects_deleted.unwrap_or_default(),
                    },
                )],
                _ => vec![],
            };
            FilesSource::Map {
                files: files_map(paths, blobs),
                side_effects,
                symlinks: p
                    .symlink_paths
                    .unwrap_or_default()
                    .into_iter()
                    .zip(p.symlink_targets.unwrap_or_default())
                    .collect(),
            }
        }
        _ => {
            return Err(ImportError::linking_failed(
                "a package needs either filesIndexFile or its files map",
            ))
        }
    };
    Ok(BatchPackage {
        target_dir: PathBuf::from(p.target_dir),
        source,
        side_effects_cache_key: p.side_effects_cache_key,
        requires_build: p.requires_build.unwrap_or(false),
        force: p.force.unwrap_or(false),
        keep_modules_dir: p.keep_modules_dir.unwrap_or(false),
        safe_to_skip: p.safe_to_skip.unwrap_or(false),
        disable_relink_local_dir_deps: p.disable_relink_local_dir_deps.unwrap_or(false),
        resolved_from: ResolvedFrom::parse(p.resolved_from.as_deref()),
        method: p
            .package_import_method
            .as_deref()
            .map(ImportMethod::parse)
            .transpose()?,
        // Blob modes unknown: the importer checks each blob it links.
        blob_modes: Default::default(),
    })
}

/// Imports many packages as one work-stealing batch on the link pool, then creates all the
/// dependency symlinks; resolves with per-package outcomes and the call's counts.
#[napi(ts_return_type = "Promise<LinkPackagesResult>")]
pub fn link_packages(env: &Env, opts: LinkPackagesOptions) -> napi::Result<Object<'_>> {
    let fail = |error: NativeError, index: Option<u32>| LinkPackagesResult {
        error: Some(error),
        error_index: index,
        symlink_error: false,
        import_methods: vec![],
        is_built: vec![],
        counts: LinkCounts::default(),
        warnings: vec![],
        import_ms: 0.0,
        symlink_ms: 0.0,
        total_ms: 0.0,
    };
    spawn_settled(
        env,
        pools::link_pool(),
        "linking",
        move || {
            let started = Instant::now();
            let method = match ImportMethod::parse(&opts.package_import_method) {
                Ok(m) => m,
                Err(e) => return fail(NativeError::of(&e), None),
            };
            let (mut packages, symlinks) = match compact_packages(&opts)
                .and_then(|p| Ok((p, symlink_deps(&opts.symlinks)?)))
            {
                Ok(parsed) => parsed,
                Err(e) => return fail(NativeError::of(&e), None),
            };
            let offset = packages.len();
            for (i, p) in opts.packages.into_iter().enumerate() {
                match batch_package(p) {
                    Ok(p) => packages.push(p),
                    Err(e) => return fail(NativeError::of(&e), Some((offset + i) as u32)),
                }
            }
            let req = BatchRequest {
                store_dir: PathBuf::from(opts.store_dir),
                method,
                packages,
                symlinks,
                blob_mode_rule: BlobModeRule::default(),
                keep_bundled: opts.keep_bundled.unwrap_or(false),
            };
            let stats = Stats::default();
            let outcome = link::link_batch(req, &stats);
            let mut error = None;
            let mut error_index = None;
            let mut import_methods = Vec::with_capacity(outcome.packages.len());
            let mut is_built = Vec::with_capacity(outcome.packages.len());
            for (i, p) in outcome.packages.into_iter().enumerate() {
                match p {
                    Ok(p) => {
                        import_methods.push(ImportMethodUsed::of(p.imported));
                        is_built.push(p.is_built);
                    }
                    Err(e) => {
                        if error.is_none() {
                            error = Some(NativeError::of(&e));
                            error_index = Some(i as u32);
                        }
                        import_methods.push(None);
                        is_built.push(false);
                    }
                }
            }
            let mut symlink_error = false;
            if let (None, Err(e)) = (&error, outcome.symlinks) {
                error = Some(NativeError::of(&e));
                symlink_error = true;
            }
            LinkPackagesResult {
                error,
                error_index,
                symlink_error,
                import_methods,
                is_built,
                counts: Counts::of(&stats).into(),
                warnings: take_warnings(&stats),
                import_ms: outcome.import_ms,
                symlink_ms: outcome.symlink_ms,
                total_ms: ms_since(started),
            }
        },
        move |panic| fail(panic, None),
    )
}

#[napi(object)]
pub struct LinkResult {
    pub error: Option<NativeError>,
    pub counts: LinkCounts,
    pub warnings: Vec<String>,
}

fn link_result(result: Result<(), LinkError>, stats: &Stats) -> LinkResult {
    LinkResult {
        error: result.err().map(|e| NativeError::of(&e)),
        counts: Counts::of(stats).into(),
        warnings: take_warnings(stats),
    }
}

fn link_panic(panic: NativeError) -> LinkResult {
    LinkResult {
        error: Some(panic),
        counts: LinkCounts::default(),
        warnings: vec![],
    }
}

/// pnpm's `symlinkAllModules`: each dep's children linked into its `modules` dir.
#[napi(ts_return_type = "Promise<LinkResult>")]
pub fn symlink_all_modules(env: &Env, deps: SymlinkDepsInput) -> napi::Result<Object<'_>> {
    spawn_settled(
        env,
        pools::link_pool(),
        "linking",
        move || {
            let stats = Stats::default();
            let result = symlink_deps(&deps)
                .map_err(|e| LinkError::symlink_failed(e.message))
                .and_then(|deps| dependency_links::symlink_all_modules(&deps, &stats));
            link_result(result, &stats)
        },
        link_panic,
    )
}

/// pnpm's `hardLinkDir`: each destination replaced by a hard-linked copy of `src`.
#[napi(ts_return_type = "Promise<LinkResult>")]
pub fn hard_link_dir(env: &Env, src: String, dest_dirs: Vec<String>) -> napi::Result<Object<'_>> {
    spawn_settled(
        env,
        pools::link_pool(),
        "linking",
        move || {
            let stats = Stats::default();
            let dests: Vec<PathBuf> = dest_dirs.into_iter().map(PathBuf::from).collect();
            let result = cas_native_core::hard_link_dir::hard_link_dir(
                PathBuf::from(src).as_path(),
                &dests,
                &stats,
            );
            link_result(result, &stats)
        },
        link_panic,
    )
}

pub(super) fn take_warnings(stats: &Stats) -> Vec<String> {
    let mut warnings = stats.warnings.lock().unwrap();
    std::mem::take(&mut *warnings)
}

/// `dependency_links::invalid_aliases`: the rule the dependency links enforce, asked ahead.
#[napi]
pub fn invalid_dependency_aliases(aliases: Vec<String>) -> Vec<String> {
    dependency_links::invalid_aliases(aliases)
}
