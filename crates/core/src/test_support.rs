//! Helpers the unit tests of several modules share.

use std::fs;
use std::path::Path;

use crate::index_row::SideEffectsDiff;

/// A side-effects diff's deleted and added paths.
pub fn diff_paths(diff: &SideEffectsDiff) -> (Vec<&str>, Vec<&str>) {
    let deleted = diff.deleted.iter().flatten().map(String::as_str).collect();
    let added = diff
        .added
        .iter()
        .flatten()
        .map(|(p, _)| p.as_str())
        .collect();
    (deleted, added)
}

/// The entry names of `dir`, sorted.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
