//! Helpers the unit tests of several modules share.

use std::fs;
use std::io::Write;
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

/// A gzip'd tarball of `(path, content, mode)` entries, built with the `tar` crate.
pub fn tgz(entries: &[(&str, &str, u32)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content, mode) in entries {
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(*mode);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, content.as_bytes())
            .unwrap();
    }
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}
