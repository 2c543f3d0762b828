use std::path::Path;

use napi::bindgen_prelude::{Buffer, Object};
use napi::{Env, JsDeferred};
use napi_derive::napi;

use super::error::NativeError;
use crate::add_dir::{self, AddDirError, AddDirRequest, AddedDir, Compat};
use crate::package_index::PackageFileInfo;
use crate::{json, pools, store};

#[napi(object)]
pub struct AddDirOptions {
    pub store_dir: String,
    /// `path.join(storeDir, 'files')`, so blob paths read exactly as pnpm's do.
    pub files_dir: String,
    pub dir: String,
    pub files_index_file: String,
    /// Upload the directory as the side effects of building the package stored under
    /// `filesIndexFile` (nothing is written when that row does not exist).
    pub side_effects_cache_key: Option<String>,
    pub files: Option<Vec<String>>,
    pub include_node_modules: bool,
    /// `JSON.stringify(appendManifest, null, 2)`.
    pub append_manifest_json: Option<String>,
    pub requires_prepare: Option<bool>,
    /// Whose `addFilesFromDir` to reproduce: `'@pnpm/worker@1100'` (the default) or
    /// `'pnpm@11.28'`, whose walk skips more, whose side-effects upload records symlinks as
    /// entries (mode `0o120000`, the target text as blob; one that cannot be recorded drops the
    /// upload: `hasUnrecordedSymlinks`) and whose diff keeps bundled dependencies and the built
    /// package's order.
    pub compat: Option<String>,
    /// Commit the row to `<storeDir>/index.db` before resolving.
    pub write_index: bool,
    /// Hand back the row's bytes instead of (or besides) writing them.
    pub return_index_row: bool,
}

/// One file's index entry: what `sideEffects.added` holds.
#[napi(object)]
pub struct FileInfo {
    pub path: String,
    pub checked_at: Option<f64>,
    pub digest: String,
    pub mode: u32,
    pub size: f64,
}

#[napi(object)]
pub struct SideEffectsDiffResult {
    pub deleted: Option<Vec<String>>,
    pub added: Option<Vec<FileInfo>>,
}

#[napi(object)]
pub struct AddDirResult {
    pub error: Option<NativeError>,
    pub paths: Option<Vec<String>>,
    pub blob_paths: Option<Vec<String>>,
    pub manifest_json: Option<String>,
    pub requires_build: Option<bool>,
    pub requires_prepare: Option<bool>,
    /// The diff recorded by a side-effects upload.
    pub side_effects: Option<SideEffectsDiffResult>,
    /// With `compat: 'pnpm@11.28'`, when an upload found the package's row: whether it was
    /// dropped for a symlink it could not record.
    pub has_unrecorded_symlinks: Option<bool>,
    /// The row written (or to write); absent when a side-effects upload found no row.
    pub index_row: Option<Buffer>,
}

type Resolver = Box<dyn FnOnce(Env) -> napi::Result<AddDirResult> + Send>;

/// Adds a package directory to the store on the extraction pool (pnpm's `addFilesFromDir`).
/// Never rejects: failures resolve as `{ error }`.
#[napi(ts_return_type = "Promise<AddDirResult>")]
pub fn add_files_from_dir(env: &Env, opts: AddDirOptions) -> napi::Result<Object<'_>> {
    // The TS layer lets only the known names through.
    let compat = match opts.compat.as_deref() {
        None => Compat::default(),
        Some(name) => Compat::parse(name).ok_or_else(|| {
            napi::Error::new(napi::Status::InvalidArg, format!("unknown compat {name:?}"))
        })?,
    };
    let (deferred, promise) = env.create_deferred::<AddDirResult, Resolver>()?;
    pools::extraction_pool().spawn(move || {
        let result = super::task::catch_panic("adding a directory", || run(&opts, compat))
            .unwrap_or_else(|message| Err(AddDirError::Manifest(message)));
        settle(
            deferred,
            result.map_err(|e| {
                let site = match &e {
                    AddDirError::Io(e) => Some(e.site.clone()),
                    _ => None,
                };
                NativeError::new(e.code().unwrap_or_default(), e.to_string()).at(site)
            }),
        );
    });
    Ok(promise)
}

struct Done {
    added: AddedDir,
    files_dir: String,
    requires_build: bool,
    requires_prepare: Option<bool>,
    side_effects: Option<crate::package_index::SideEffectsDiff>,
    has_unrecorded_symlinks: Option<bool>,
    row: Option<Vec<u8>>,
    return_row: bool,
}

fn run(opts: &AddDirOptions, compat: Compat) -> Result<Done, AddDirError> {
    let store = store::open(Path::new(&opts.store_dir));
    let req = AddDirRequest {
        dir: Path::new(&opts.dir),
        files: opts.files.as_deref(),
        include_node_modules: opts.include_node_modules,
        append_manifest: opts.append_manifest_json.as_deref(),
        compat,
        side_effects_upload: opts.side_effects_cache_key.is_some(),
    };
    let added = add_dir::add_dir(&store.cas, &req)?;
    let mut has_unrecorded_symlinks = None;
    let (row, requires_build, requires_prepare, side_effects) = match &opts.side_effects_cache_key {
        None => {
            let (row, requires_build) = add_dir::fresh_row(&added, opts.requires_prepare);
            (Some(row), requires_build, opts.requires_prepare, None)
        }
        Some(key) => match store
            .index
            .get(&opts.files_index_file)
            .map_err(AddDirError::Index)?
        {
            // No base row: nothing to attach side effects to; pnpm writes nothing either.
            None => {
                let requires_build = crate::manifest::requires_build(
                    added.raw_manifest.as_ref(),
                    added.files.iter().map(|f| f.path.as_str()),
                );
                (None, requires_build, None, None)
            }
            Some(stored) => {
                let upload = add_dir::upload_side_effects(&stored, key, &added)?;
                has_unrecorded_symlinks =
                    (compat == Compat::Pnpm1128).then_some(added.has_unrecorded_symlinks);
                (
                    upload.row,
                    upload.requires_build,
                    upload.requires_prepare,
                    upload.diff,
                )
            }
        },
    };
    if let (Some(row), true) = (&row, opts.write_index) {
        store
            .index
            .write(vec![(opts.files_index_file.clone(), row.clone())])
            .map_err(AddDirError::Index)?;
    }
    Ok(Done {
        added,
        files_dir: opts.files_dir.clone(),
        requires_build,
        requires_prepare,
        side_effects,
        has_unrecorded_symlinks,
        row,
        return_row: opts.return_index_row,
    })
}

fn settle(deferred: JsDeferred<AddDirResult, Resolver>, result: Result<Done, NativeError>) {
    deferred.resolve(Box::new(move |_env| {
        Ok(match result {
            Err(error) => AddDirResult {
                error: Some(error),
                paths: None,
                blob_paths: None,
                manifest_json: None,
                requires_build: None,
                requires_prepare: None,
                side_effects: None,
                has_unrecorded_symlinks: None,
                index_row: None,
            },
            Ok(done) => {
                let (paths, blob_paths) =
                    super::extract_tarball::file_paths(done.added.files, &done.files_dir);
                AddDirResult {
                    error: None,
                    paths: Some(paths),
                    blob_paths: Some(blob_paths),
                    manifest_json: done.added.manifest.as_ref().map(json::stringify_pretty),
                    requires_build: Some(done.requires_build),
                    requires_prepare: done.requires_prepare,
                    side_effects: done.side_effects.map(|diff| SideEffectsDiffResult {
                        deleted: diff.deleted,
                        added: diff
                            .added
                            .map(|added| added.into_iter().map(file_info).collect()),
                    }),
                    has_unrecorded_symlinks: done.has_unrecorded_symlinks,
                    index_row: done.row.filter(|_| done.return_row).map(Buffer::from),
                }
            }
        })
    }));
}

fn file_info((path, info): (String, PackageFileInfo)) -> FileInfo {
    FileInfo {
        path,
        checked_at: info.checked_at,
        digest: info.digest,
        mode: info.mode,
        size: info.size as f64,
    }
}
