//! napi conversions for `linkStoredPackages` (see `link_stored.rs`). Packages cross in compact
//! form, one NUL-joined string per column, as `linkPackages`' compact packages do.

use std::path::PathBuf;
use std::time::Instant;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;

use super::error::NativeError;
use super::link::{
    split_n, symlink_deps, take_warnings, ImportMethodUsed, LinkCounts, SymlinkDepsInput,
};
use super::task::spawn_settled;
use cas_native_core::blob_modes::BlobModeRule;
use cas_native_core::import::{ImportError, ImportMethod, Stats};
use cas_native_core::link::Counts;
use cas_native_core::link_stored::{self, LeftOut, StoredPackage, StoredRequest};
use cas_native_core::pools;
use cas_native_core::read_package::ExpectedPkg;
use cas_native_core::timing::ms_since;

#[napi(object)]
pub struct LinkStoredOptions {
    pub store_dir: String,
    pub package_import_method: String,
    pub verify_store_integrity: bool,
    pub strict_store_pkg_content_check: bool,
    /// The running pnpm's rule for a store blob's bits: `none`, `exact` or `linkable` (the default).
    pub blob_mode_rule: Option<String>,
    /// A side-effects diff leaves the bundled dependencies in place, as pnpm 11.28.11's reader
    /// does (the default); `false`: as the readers before it.
    pub keep_bundled: Option<bool>,
    /// `count` packages: their store-index keys, expected names and versions and target
    /// directories, each column NUL-joined.
    pub count: u32,
    pub files_index_files: String,
    pub names: String,
    pub versions: String,
    pub target_dirs: String,
    /// One dep per package, in package order: its dependency links.
    pub symlinks: SymlinkDepsInput,
    /// Per package: pnpm will not run its build scripts (see `StoredPackage::build_ignored`).
    pub builds_ignored: Option<Vec<bool>>,
    /// Per package: the side-effects cache key pnpm would import it with if it builds (`""`:
    /// none; see `StoredPackage::side_effects_cache_key`), NUL-joined; absent when none has one.
    pub side_effects_cache_keys: Option<String>,
    /// Per package: a patched package's key if its row does not require a build (`""`: none;
    /// see `StoredPackage::patched_cache_key`), NUL-joined; absent when none has one.
    pub patched_cache_keys: Option<String>,
}

/// Why a package was left out (see `link_stored::LeftOut`).
#[napi(string_enum = "kebab-case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOutReason {
    /// The index has no (readable) row for its key.
    NotInStore,
    /// A blob is missing or differs.
    Unverified,
    /// Its row requires a build, which only the package manager runs.
    RequiresBuild,
    /// Its row requires a build and holds no side effects under its cache key.
    NoSideEffects,
    /// Reading it failed, or read with a warning (a row naming another package).
    Unreadable,
    /// Its import or its dependency links failed.
    Failed,
}

/// A package that was left out: which, why, and for `unreadable` and `failed` the error.
#[napi(object)]
pub struct LeftOutPackage {
    pub index: u32,
    pub reason: LeftOutReason,
    pub message: Option<String>,
}

impl LeftOutPackage {
    fn of(index: usize, left_out: LeftOut) -> Self {
        let (reason, message) = match left_out {
            LeftOut::NotInStore => (LeftOutReason::NotInStore, None),
            LeftOut::Unverified => (LeftOutReason::Unverified, None),
            LeftOut::RequiresBuild => (LeftOutReason::RequiresBuild, None),
            LeftOut::NoSideEffects => (LeftOutReason::NoSideEffects, None),
            LeftOut::Unreadable(message) => (LeftOutReason::Unreadable, Some(message)),
            LeftOut::Failed(message) => (LeftOutReason::Failed, Some(message)),
        };
        LeftOutPackage {
            index: index as u32,
            reason,
            message,
        }
    }
}

#[napi(object)]
pub struct LinkStoredResult {
    /// A failure of the whole call (the store index could not be read, malformed input).
    pub error: Option<NativeError>,
    /// Per package: how it was imported; `null` when it was already there or left out.
    pub import_methods: Vec<Option<ImportMethodUsed>>,
    /// The packages left out, in package order (usually few, so not one entry per package).
    pub left_out: Vec<LeftOutPackage>,
    /// Linked packages whose ignored build their row requires, by index.
    pub builds_ignored: Vec<u32>,
    /// Linked packages imported with their build's side effects, by index.
    pub built: Vec<u32>,
    pub counts: LinkCounts,
    pub warnings: Vec<String>,
    pub read_ms: f64,
    pub import_ms: f64,
    pub symlink_ms: f64,
    pub total_ms: f64,
}

fn request(opts: LinkStoredOptions) -> Result<StoredRequest, ImportError> {
    let n = opts.count as usize;
    let keys = split_n(&opts.files_index_files, n)?;
    let names = split_n(&opts.names, n)?;
    let versions = split_n(&opts.versions, n)?;
    let targets = split_n(&opts.target_dirs, n)?;
    let deps = symlink_deps(&opts.symlinks)?;
    let builds_ignored = opts.builds_ignored.unwrap_or_else(|| vec![false; n]);
    let cache_keys = optional_column(opts.side_effects_cache_keys.as_deref(), n)?;
    let patched_keys = optional_column(opts.patched_cache_keys.as_deref(), n)?;
    let some = |key: &str| (!key.is_empty()).then(|| key.to_string());
    if deps.len() != n || builds_ignored.len() != n {
        return Err(ImportError::linking_failed(format!(
            "malformed batch: expected {n} symlink deps and build flags, got {} and {}",
            deps.len(),
            builds_ignored.len()
        )));
    }
    let packages = deps
        .into_iter()
        .enumerate()
        .map(|(i, deps)| StoredPackage {
            key: keys[i].to_string(),
            expected: ExpectedPkg {
                name: Some(names[i].to_string()),
                version: Some(versions[i].to_string()),
            },
            target_dir: PathBuf::from(targets[i]),
            deps,
            build_ignored: builds_ignored[i],
            side_effects_cache_key: some(cache_keys[i]),
            patched_cache_key: some(patched_keys[i]),
        })
        .collect();
    Ok(StoredRequest {
        store_dir: opts.store_dir,
        method: ImportMethod::parse(&opts.package_import_method)?,
        verify_store_integrity: opts.verify_store_integrity,
        strict_store_pkg_content_check: opts.strict_store_pkg_content_check,
        blob_mode_rule: match opts.blob_mode_rule.as_deref() {
            None => BlobModeRule::default(),
            // The JS layer checks it first.
            Some(text) => BlobModeRule::parse(text).ok_or_else(|| {
                ImportError::linking_failed(format!("Unknown blob mode rule {text}"))
            })?,
        },
        keep_bundled: opts.keep_bundled.unwrap_or(true),
        packages,
    })
}

/// An optional NUL-joined column: `n` empty fields when absent.
fn optional_column(joined: Option<&str>, n: usize) -> Result<Vec<&str>, ImportError> {
    match joined {
        Some(keys) => split_n(keys, n),
        None => Ok(vec![""; n]),
    }
}

fn failed(error: NativeError) -> LinkStoredResult {
    LinkStoredResult {
        error: Some(error),
        import_methods: vec![],
        left_out: vec![],
        builds_ignored: vec![],
        built: vec![],
        counts: LinkCounts::default(),
        warnings: vec![],
        read_ms: 0.0,
        import_ms: 0.0,
        symlink_ms: 0.0,
        total_ms: 0.0,
    }
}

/// Links every package the store can serve as it is, on the link pool; the others are left out
/// with their reasons.
#[napi(ts_return_type = "Promise<LinkStoredResult>")]
pub fn link_stored_packages(env: &Env, opts: LinkStoredOptions) -> napi::Result<Object<'_>> {
    spawn_settled(
        env,
        pools::link_pool(),
        "linking",
        move || {
            let started = Instant::now();
            let req = match request(opts) {
                Ok(req) => req,
                Err(e) => return failed(NativeError::of(&e)),
            };
            let stats = Stats::default();
            let outcome = match link_stored::link_stored(&req, &stats) {
                Ok(outcome) => outcome,
                Err(e) => return failed(NativeError::of(&e)),
            };
            let mut import_methods = Vec::with_capacity(outcome.packages.len());
            let mut left_out = Vec::new();
            for (i, p) in outcome.packages.into_iter().enumerate() {
                match p {
                    Ok(imported) => import_methods.push(ImportMethodUsed::of(imported)),
                    Err(reason) => {
                        import_methods.push(None);
                        left_out.push(LeftOutPackage::of(i, reason));
                    }
                }
            }
            LinkStoredResult {
                error: None,
                import_methods,
                left_out,
                builds_ignored: outcome.builds_ignored.iter().map(|&i| i as u32).collect(),
                built: outcome.built.iter().map(|&i| i as u32).collect(),
                counts: Counts::of(&stats).into(),
                warnings: take_warnings(&stats),
                read_ms: outcome.read_ms,
                import_ms: outcome.import_ms,
                symlink_ms: outcome.symlink_ms,
                total_ms: ms_since(started),
            }
        },
        failed,
    )
}
