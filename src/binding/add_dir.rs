use std::path::Path;

use napi::bindgen_prelude::{Buffer, Object};
use napi::Env;
use napi_derive::napi;

use super::error::NativeError;
use super::task::spawn_settled;
use cas_native_core::add_dir::{
    self, AddDirError, AddDirRequest, AddedToStore, Compat, RowRequest,
};
use cas_native_core::index_row::PackageFileInfo;
use cas_native_core::{json, pools, store_handles};

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

/// Adds a package directory to the store on the extraction pool (pnpm's `addFilesFromDir`).
/// Never rejects: failures resolve as `{ error }`.
#[napi(ts_return_type = "Promise<AddDirResult>")]
pub fn add_files_from_dir(env: &Env, opts: AddDirOptions) -> napi::Result<Object<'_>> {
    let compat = compat_of(opts.compat.as_deref())?;
    spawn_settled(
        env,
        pools::extraction_pool(),
        "adding a directory",
        move || match run(&opts, compat) {
            Ok(done) => result(done, &opts.files_dir, opts.return_index_row),
            Err(e) => failed(NativeError::of(&e)),
        },
        failed,
    )
}

/// The `compat` option of a call (`'@pnpm/worker@1100'`, the default, or `'pnpm@11.28'`); the TS
/// layer lets only those names through.
pub(crate) fn compat_of(name: Option<&str>) -> napi::Result<Compat> {
    match name {
        None => Ok(Compat::default()),
        Some(name) => Compat::parse(name).ok_or_else(|| {
            napi::Error::new(napi::Status::InvalidArg, format!("unknown compat {name:?}"))
        }),
    }
}

fn run(opts: &AddDirOptions, compat: Compat) -> Result<AddedToStore, AddDirError> {
    let store = store_handles::open(Path::new(&opts.store_dir));
    let req = AddDirRequest {
        files: opts.files.as_deref(),
        include_node_modules: opts.include_node_modules,
        append_manifest: opts.append_manifest_json.as_deref(),
        compat,
        ..AddDirRequest::new(Path::new(&opts.dir))
    };
    let row = RowRequest {
        files_index_file: &opts.files_index_file,
        side_effects_cache_key: opts.side_effects_cache_key.as_deref(),
        requires_prepare: opts.requires_prepare,
        write_index: opts.write_index,
    };
    add_dir::add_dir_to_store(&store, req, row)
}

fn failed(error: NativeError) -> AddDirResult {
    AddDirResult {
        error: Some(error),
        paths: None,
        blob_paths: None,
        manifest_json: None,
        requires_build: None,
        requires_prepare: None,
        side_effects: None,
        has_unrecorded_symlinks: None,
        index_row: None,
    }
}

fn result(done: AddedToStore, files_dir: &str, return_row: bool) -> AddDirResult {
    let (paths, blob_paths) = super::extract_tarball::file_paths(done.added.files, files_dir);
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
        index_row: done.row.filter(|_| return_row).map(Buffer::from),
    }
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
