//! napi conversion for `importPackage`: one package, on the link pool, failures as data.

use std::path::PathBuf;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;

use super::error::NativeError;
use super::link::{files_map, import_error, on_link_pool, take_warnings, LinkCounts};
use crate::import::{self, ImportMethod, ImportRequest, ResolvedFrom, SideEffects, Stats};
use crate::link::Counts;

#[napi(object)]
pub struct ImportPackageOptions {
    pub store_dir: String,
    /// `filesResponse.packageImportMethod ?? packageImportMethod ?? 'auto'`.
    pub package_import_method: String,
    pub target_dir: String,
    /// The file map's keys and values, in map order.
    pub paths: Vec<String>,
    pub blob_paths: Vec<String>,
    /// The side-effects diff `sideEffectsCacheKey` selected, if any.
    pub side_effects_added_paths: Option<Vec<String>>,
    pub side_effects_added_blob_paths: Option<Vec<String>>,
    pub side_effects_deleted: Option<Vec<String>>,
    pub resolved_from: Option<String>,
    pub requires_build: bool,
    pub force: bool,
    pub keep_modules_dir: bool,
    pub disable_relink_local_dir_deps: bool,
    pub safe_to_skip: bool,
}

#[napi(object)]
pub struct ImportPackageResult {
    pub error: Option<NativeError>,
    pub is_built: bool,
    /// `clone`, `hardlink` or `copy`; absent when the package was already there.
    pub import_method: Option<String>,
    pub warnings: Vec<String>,
    pub counts: LinkCounts,
}

/// pnpm's `importPackage` for one package, on the link pool.
#[napi(ts_return_type = "Promise<ImportPackageResult>")]
pub fn import_package(env: &Env, opts: ImportPackageOptions) -> napi::Result<Object<'_>> {
    let fail = |error: NativeError| ImportPackageResult {
        error: Some(error),
        is_built: false,
        import_method: None,
        warnings: vec![],
        counts: LinkCounts::default(),
    };
    on_link_pool(
        env,
        move || {
            let method = match ImportMethod::parse(&opts.package_import_method) {
                Ok(m) => m,
                Err(e) => return fail(import_error(e)),
            };
            let base = files_map(opts.paths, opts.blob_paths);
            let is_built =
                opts.side_effects_added_paths.is_some() || opts.side_effects_deleted.is_some();
            let files = if is_built {
                let diff = SideEffects {
                    added: files_map(
                        opts.side_effects_added_paths.unwrap_or_default(),
                        opts.side_effects_added_blob_paths.unwrap_or_default(),
                    ),
                    deleted: opts.side_effects_deleted.unwrap_or_default(),
                };
                import::apply_side_effects(&base, &diff)
            } else {
                base
            };
            let req = ImportRequest {
                target_dir: PathBuf::from(&opts.target_dir),
                files,
                resolved_from: ResolvedFrom::parse(opts.resolved_from.as_deref()),
                method,
                will_be_built: !is_built && opts.requires_build,
                force: opts.force,
                keep_modules_dir: opts.keep_modules_dir,
                disable_relink_local_dir_deps: opts.disable_relink_local_dir_deps,
                safe_to_skip: opts.safe_to_skip,
            };
            let stats = Stats::default();
            let result =
                import::import_package(PathBuf::from(&opts.store_dir).as_path(), &req, &stats);
            let warnings = take_warnings(&stats);
            match result {
                Ok(imported) => ImportPackageResult {
                    error: None,
                    is_built,
                    import_method: imported.map(|m| m.as_str().to_string()),
                    warnings,
                    counts: Counts::of(&stats).into(),
                },
                Err(e) => fail(import_error(e)),
            }
        },
        move |msg| fail(NativeError::new("ERR_PNPM_LINKING_FAILED", msg)),
    )
}
