//! `hardLinkDir`: a package directory copied as hard links into other directories
//! (docs/store-format.md, "Linking into node_modules").

use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::dependency_links::{os_err, LinkError};
use crate::import::Stats;
use crate::js::resolve;
use crate::{os_error, platform};

/// `hardLinkDir(src, destDirs)` as `@pnpm/fs.hard-link-dir` 1100.0.x (what pnpm 11's worker
/// ships) does it: each destination is created if missing and filled in place with hard links
/// of `src`'s files, `node_modules` left out at every depth. A destination's own `node_modules`
/// and entries `src` does not have stay (a sibling may be working in there); an entry of the
/// wrong kind is removed to make room; a different file already there is replaced through a
/// rename of a temp sibling, so readers see the old file or the new one. A missing `src` leaves
/// the destinations empty, with a warning.
pub fn hard_link_dir(src: &Path, dest_dirs: &[PathBuf], stats: &Stats) -> Result<(), LinkError> {
    let src_resolved = resolve(src);
    let targets: Vec<PathBuf> = dest_dirs
        .iter()
        .filter(|d| resolve(d) != src_resolved)
        .cloned()
        .collect();
    if targets.is_empty() {
        return Ok(());
    }
    for t in &targets {
        fs::create_dir_all(t).map_err(|e| os_err(&e, "mkdir", t, None))?;
    }
    walk(src, &targets, true, stats)
}

fn walk(dir: &Path, outs: &[PathBuf], root: bool, stats: &Stats) -> Result<(), LinkError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if root && e.kind() == ErrorKind::NotFound => {
            stats.warn(format!(
                "Source directory not found when creating hardLinks for: {}. Creating destinations as empty: {}",
                dir.display(),
                outs.iter().map(|o| o.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
            return Ok(());
        }
        Err(e) => return Err(os_err(&e, "scandir", dir, None)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| os_err(&e, "scandir", dir, None))?;
        let name = entry.file_name();
        if name == "node_modules" {
            continue;
        }
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).map_err(|e| os_err(&e, "lstat", &path, None))?;
        if meta.is_dir() {
            let mut sub = Vec::with_capacity(outs.len());
            for o in outs {
                let s = o.join(&name);
                clear_mismatched(&s, true)?;
                match fs::create_dir_all(&s) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(os_err(&e, "mkdir", &s, None)),
                }
                sub.push(s);
            }
            walk(&path, &sub, false, stats)?;
            continue;
        }
        for out in outs {
            match link_or_copy_file(&path, &out.join(&name), &meta, stats) {
                // A dangling symlink in the source.
                Err((e, _)) if e.kind() == ErrorKind::NotFound => {}
                Err((_, err)) => return Err(err),
                Ok(()) => {}
            }
        }
    }
    Ok(())
}

type Failure = (io::Error, LinkError);

fn failure(e: io::Error, syscall: &str, path: &Path, dest: Option<&Path>) -> Failure {
    let err = os_err(&e, syscall, path, dest);
    (e, err)
}

fn link_or_copy_file(
    src: &Path,
    dest: &Path,
    src_meta: &fs::Metadata,
    stats: &Stats,
) -> Result<(), Failure> {
    match link_or_copy(src, dest, stats) {
        Ok(()) => return Ok(()),
        Err((e, _)) if e.kind() == ErrorKind::NotFound => {
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| failure(e, "mkdir", parent, None))?;
            }
            return link_or_copy(src, dest, stats);
        }
        Err((e, _)) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(f) => return Err(f),
    }
    // Most destination files already are the source's file (both came from the same store blob).
    let same = match fs::symlink_metadata(dest) {
        Ok(d) => platform::same_file(dest, &d, src, src_meta),
        Err(e) if e.kind() == ErrorKind::NotFound => false,
        Err(e) => return Err(failure(e, "lstat", dest, None)),
    };
    if same {
        return Ok(());
    }
    let tmp = crate::import::temp_sibling(dest);
    let _ = fs::remove_dir_all(&tmp).or_else(|_| fs::remove_file(&tmp));
    let replaced = link_or_copy(src, &tmp, stats)
        .and_then(|()| {
            clear_mismatched(dest, false).map_err(|e| (io::Error::other(e.message.clone()), e))
        })
        .and_then(|()| fs::rename(&tmp, dest).map_err(|e| failure(e, "rename", &tmp, Some(dest))))
        // Renaming a hard link onto another link of the same inode succeeds and does nothing.
        .map(|()| {
            let _ = fs::remove_file(&tmp);
        });
    if replaced.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    replaced
}

/// Removes `path` when it is not of the wanted kind (directory or not).
fn clear_mismatched(path: &Path, want_dir: bool) -> Result<(), LinkError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() == want_dir => Ok(()),
        Ok(m) => {
            let removed = if m.is_dir() {
                fs::remove_dir_all(path)
            } else {
                fs::remove_file(path)
            };
            removed.map_err(|e| os_err(&e, "rm", path, None))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(os_err(&e, "lstat", path, None)),
    }
}

/// link; EXDEV or ENOENT (OverlayFS reports ENOENT across layers) → copy.
fn link_or_copy(src: &Path, dest: &Path, stats: &Stats) -> Result<(), Failure> {
    match fs::hard_link(src, dest) {
        Ok(()) => {
            stats.files_linked.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) if matches!(os_error::errno(&e), Some(libc::EXDEV) | Some(libc::ENOENT)) => {
            fs::copy(src, dest).map_err(|e| failure(e, "copyfile", src, Some(dest)))?;
            stats.files_copied.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(e) => Err(failure(e, "link", src, Some(dest))),
    }
}

#[cfg(test)]
mod tests;
