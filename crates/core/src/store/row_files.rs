//! A package's file map read from its store-index row, for the link batch: blob paths built as
//! pnpm's readers build them, and the side-effects diff for a cache key with its recorded
//! symlinks (docs/store-format.md, "Index rows").

use std::collections::HashSet;
use std::path::PathBuf;

use crate::import::{FilesMap, ImportError, SideEffects};
use crate::index_row::{self, PackageFileInfo, SideEffectsDiff};
use crate::store_handles;
use crate::symlink_entry::{self, Symlinks};

#[cfg(test)] // batches read rows with `get_many` and call `files_from_row`
/// A package's file map (and the side-effects diff for `cache_key`, if the row has one) from
/// its index row. Blob paths are built as pnpm's readers build them:
/// `<storeDir>/files/<xx>/<rest>[-exec]`, executable when any x bit is set.
pub fn read_files(
    store: &store_handles::Store,
    store_dir: &str,
    key: &str,
    cache_key: Option<&str>,
) -> Result<(FilesMap, Option<SideEffects>, Symlinks), ImportError> {
    let bytes = store
        .index
        .get(key)
        .map_err(|e| ImportError::store_index(e.message))?;
    files_from_row(store, bytes, store_dir, key, cache_key)
}

/// [`read_files`] for a row already read (`None`: the index has no row for `key`).
///
/// The side-effects diff's symlink entries (pnpm 11.28) are taken out of `added` and returned
/// as the package's symlinks; a diff whose symlinks pnpm would not restore is dropped, as if
/// the row had none for `cache_key` (see [`side_effects_of`]).
pub fn files_from_row(
    store: &store_handles::Store,
    bytes: Option<Vec<u8>>,
    store_dir: &str,
    key: &str,
    cache_key: Option<&str>,
) -> Result<(FilesMap, Option<SideEffects>, Symlinks), ImportError> {
    let bytes = bytes.ok_or_else(|| {
        ImportError::with_code(
            "ERR_PNPM_MISSING_INDEX_ROW",
            format!(
                "The store index {}/index.db has no entry for {}",
                store.dir.display(),
                key.replace('\t', " ")
            ),
        )
    })?;
    let row = index_row::decode_row(&bytes).map_err(|e| {
        ImportError::store_index(format!(
            "The store index entry for {} is unreadable: {e}",
            key.replace('\t', " ")
        ))
    })?;
    let files = to_map(store_dir, key, row.files.iter())?;
    let diff = match (cache_key, &row.side_effects) {
        (Some(ck), Some(all)) => match all.iter().find(|(k, _)| k == ck) {
            Some((_, d)) => side_effects_of(store_dir, key, &files, d)?,
            None => None,
        },
        _ => None,
    };
    Ok(match diff {
        Some((diff, symlinks)) => (files, Some(diff), symlinks),
        None => (files, None, Symlinks::new()),
    })
}

fn to_map<'a>(
    store_dir: &str,
    key: &str,
    files: impl Iterator<Item = &'a (String, PackageFileInfo)>,
) -> Result<FilesMap, ImportError> {
    let files_dir = crate::blob_files::files_dir(store_dir, '/');
    files
        .map(|(path, info)| Ok((path.clone(), blob_path(&files_dir, key, path, info)?)))
        .collect()
}

/// A side-effects diff as pnpm 11.28 reads it: symlink-mode entries become symlinks
/// ([`symlink_entry::restore_links`]); `None` when they cannot all be restored, and the diff is
/// dropped (the package is imported as if it had no side effects for this key).
fn side_effects_of(
    store_dir: &str,
    key: &str,
    base: &FilesMap,
    d: &SideEffectsDiff,
) -> Result<Option<(SideEffects, Symlinks)>, ImportError> {
    let all = d.added.as_deref().unwrap_or(&[]);
    let is_link = |info: &PackageFileInfo| symlink_entry::is_symlink_entry(info.mode);
    let diff = SideEffects {
        added: to_map(store_dir, key, all.iter().filter(|(_, i)| !is_link(i)))?,
        deleted: d.deleted.clone().unwrap_or_default(),
    };
    let files_dir = crate::blob_files::files_dir(store_dir, '/');
    let links = all
        .iter()
        .filter(|(_, i)| is_link(i))
        .map(|(path, info)| Ok((path.as_str(), blob_path(&files_dir, key, path, info)?)))
        .collect::<Result<Vec<_>, ImportError>>()?;
    let deleted: HashSet<&str> = diff.deleted.iter().map(String::as_str).collect();
    let restored = diff.added.iter().map(|(p, _)| p.as_str()).chain(
        base.iter()
            .map(|(p, _)| p.as_str())
            .filter(|p| !deleted.contains(p)),
    );
    match symlink_entry::restore_links(&links, restored) {
        Ok(Some(symlinks)) => Ok(Some((diff, symlinks))),
        Ok(None) => Ok(None),
        Err((e, blob)) => Err(ImportError::os(&e, "open", &blob, None)),
    }
}

/// The blob of a file of the row below `files_dir`, or the error of a row without its digest.
fn blob_path(
    files_dir: &str,
    key: &str,
    path: &str,
    info: &PackageFileInfo,
) -> Result<PathBuf, ImportError> {
    let d = &info.digest;
    if d.len() < 3 || !d.is_ascii() {
        return Err(ImportError::with_code(
            "ERR_PNPM_MISSING_CONTENT_DIGEST",
            format!(
                "The store index entry for {} has no digest for {path}",
                key.replace('\t', " ")
            ),
        ));
    }
    Ok(PathBuf::from(crate::blob_files::blob_path(
        files_dir,
        '/',
        d,
        crate::blob_files::is_executable(info.mode),
    )))
}
