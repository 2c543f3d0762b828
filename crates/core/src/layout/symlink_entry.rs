//! Symlinks recorded as index entries, as pnpm 11.28 uploads a built package's side effects:
//! an entry with mode `0o120000` whose blob is the link's target text. Only links that pnpm can
//! recreate safely are recorded: a relative target in normal form that stays inside the package
//! and does not reach into a `node_modules`. Reading such entries back is [`restore_links`],
//! for `linkPackages`' index rows (`row_files::files_from_row`) and for the pnpm worker
//! protocol's reads (`read_package`); placing them after a package's files is [`place_symlinks`].
//! See docs/store-format.md, "Index rows".

use std::collections::HashSet;
use std::fs;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use crate::import::ImportError;

/// `S_IFLNK`: the mode of a recorded symlink entry. It has no x bit, so the target text is
/// stored as a non-executable blob.
pub const SYMLINK_MODE: u32 = 0o120000;

/// A side-effects entry's recorded symlinks: relative link path → target text.
pub type Symlinks = Vec<(String, String)>;

const S_IFMT: u32 = 0o170000;

/// Whether an index entry's mode says it is a recorded symlink.
pub fn is_symlink_entry(mode: u32) -> bool {
    mode & S_IFMT == SYMLINK_MODE
}

/// A side-effects diff's symlink entries as pnpm 11.28 reads them back: `links` (each entry's
/// path and blob path) become symlinks (target = the blob's text) when every one is restorable
/// (`normalize_target` keeps its text as is) and no path the package will hold — `restored`,
/// the diff's other added files and the base files it does not delete, plus the links
/// themselves — lies below one of them. `Ok(None)`: the diff is dropped (the package is built
/// again), as for a link whose blob is missing. pnpm 11.28 never records symlinks on Windows,
/// so there any link drops the diff. `Err`: a blob could not be read, and its path.
pub fn restore_links<'a>(
    links: &[(&'a str, PathBuf)],
    restored: impl Iterator<Item = &'a str>,
) -> Result<Option<Symlinks>, (io::Error, PathBuf)> {
    if links.is_empty() {
        return Ok(Some(Symlinks::new()));
    }
    if cfg!(windows) {
        return Ok(None);
    }
    let mut symlinks = Symlinks::with_capacity(links.len());
    for (path, blob) in links {
        let target = match std::fs::read(blob) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err((e, blob.clone())),
        };
        if normalize_target(path, &target).as_deref() != Some(target.as_str()) {
            return Ok(None);
        }
        symlinks.push((path.to_string(), target));
    }
    let link_paths: HashSet<&str> = links.iter().map(|(p, _)| *p).collect();
    let below_a_link = |p: &str| {
        p.match_indices('/')
            .any(|(slash, _)| slash > 0 && link_paths.contains(&p[..slash]))
    };
    if restored.chain(link_paths.iter().copied()).any(below_a_link) {
        return Ok(None);
    }
    Ok(Some(symlinks))
}

/// The target text to record for the symlink at `link_path` (relative, `/`-separated), or
/// `None` when pnpm 11.28 would not record it (the link is then followed as before).
///
/// The text is normalised: empty and `.` segments dropped. The link path must consist of plain
/// names, not start in `node_modules` and not be the root `package.json`; the target must be
/// relative (no leading `/`, no Windows drive), free of `\` and NUL, made of leading `..`
/// segments then names (none of them `..` or `node_modules`, compared case-insensitively), and
/// climb no higher than the link's own directory allows, so it cannot leave the package.
pub fn normalize_target(link_path: &str, target: &str) -> Option<String> {
    let link_segments: Vec<&str> = link_path.split('/').collect();
    if !recordable_link_path(&link_segments) || !recordable_target_form(target) {
        return None;
    }
    let segments: Vec<&str> = target
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let parents = segments.iter().take_while(|s| **s == "..").count();
    let names = &segments[parents..];
    if names.is_empty()
        || names
            .iter()
            .any(|n| *n == ".." || is_name(n, "node_modules"))
    {
        return None;
    }
    if parents > link_segments.len() - 1 {
        return None;
    }
    Some(segments.join("/"))
}

/// A link path made of plain names only (no empty, `.` or `..` segment, no `\\` or NUL): it
/// stays inside the package directory it is joined to.
pub fn placeable_link_path(link_path: &str) -> bool {
    link_path.split('/').all(plain_name)
}

fn recordable_link_path(segments: &[&str]) -> bool {
    segments.iter().all(|s| plain_name(s))
        && !is_name(segments[0], "node_modules")
        && !(segments.len() == 1 && is_name(segments[0], "package.json"))
}

/// Not absolute on any platform: what Node's `path.win32.parse(target).root` leaves empty once
/// a leading `/` and every `\` are ruled out, i.e. no `<ASCII letter>:` drive prefix.
fn recordable_target_form(target: &str) -> bool {
    let b = target.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    !target.is_empty()
        && !target.starts_with('/')
        && !target.contains('\\')
        && !target.contains('\0')
        && !drive
}

fn plain_name(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && !segment.contains('\\')
        && !segment.contains('\0')
}

/// JS's `segment.toLowerCase() === reserved`: full Unicode lower-casing, so e.g. the Kelvin
/// sign in `pac\u{212A}age.json` counts as `k`.
fn is_name(segment: &str, reserved: &str) -> bool {
    segment.to_lowercase() == reserved
}

/// Symlinks handed over with a file map were checked by whoever read them; their link paths
/// are checked again here, so that none can be placed outside `target_dir`.
pub fn check_link_paths(target_dir: &Path, symlinks: &Symlinks) -> Result<(), ImportError> {
    match symlinks.iter().find(|(rel, _)| !placeable_link_path(rel)) {
        None => Ok(()),
        Some((rel, _)) => Err(ImportError::with_code(
            "ERR_PNPM_UNSAFE_FILE_PATH",
            format!(
                "Refusing to create the symlink {} in {}: the path leaves the package directory",
                crate::json::quote(rel),
                target_dir.display()
            ),
        )),
    }
}

/// Creates (or corrects) a package's side-effects symlinks once its files are in place, as
/// pnpm 11.28's importer does: a right link is kept, anything else at the path is replaced. The
/// link paths are plain names inside `dir` (checked on reading); a path whose parent inside
/// `dir` is a symlink fails rather than write through it.
pub fn place_symlinks(dir: &Path, symlinks: &Symlinks) -> Result<(), ImportError> {
    for (rel, target) in symlinks {
        let dest = dir.join(rel);
        if fs::read_link(&dest).is_ok_and(|t| t.as_os_str() == std::ffi::OsStr::new(target)) {
            continue;
        }
        let mut parent = dir.to_path_buf();
        let segments: Vec<&str> = rel.split('/').collect();
        for segment in &segments[..segments.len() - 1] {
            parent.push(segment);
            match fs::symlink_metadata(&parent) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(ImportError::linking_failed(format!(
                        "Cannot create the symlink {} below the symlink {}",
                        dest.display(),
                        parent.display()
                    )))
                }
                _ => {}
            }
        }
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent).map_err(|e| ImportError::os(&e, "mkdir", parent, None))?;
        }
        let removed = match fs::symlink_metadata(&dest) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&dest),
            Ok(_) => fs::remove_file(&dest),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        };
        removed.map_err(|e| ImportError::os(&e, "rm", &dest, None))?;
        make_symlink(target, &dest)
            .map_err(|e| ImportError::os(&e, "symlink", Path::new(target), Some(&dest)))?;
    }
    Ok(())
}

#[cfg(unix)]
fn make_symlink(target: &str, dest: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, dest)
}

#[cfg(not(unix))]
fn make_symlink(_target: &str, _dest: &Path) -> io::Result<()> {
    // Never reached: symlink entries drop their side-effects diff where there are no symlinks.
    Err(io::Error::from(ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests;
