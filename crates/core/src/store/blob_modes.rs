//! The mode a store blob is meant to have, and whether a blob whose bits have drifted from it
//! may still be shared through a hard link (docs/store-format.md, "Blob modes").
//!
//! A blob's name says its mode: `-exec` blobs are executable (0o755), the others are not
//! (0o666), each less the process's umask. Its bits can drift anyway, for one because pnpm's
//! bin linking chmods a command's target through the hard link, which is the blob. pnpm 11.28
//! guards its imports against that (its bundle's `fs/indexed-pkg-importer/lib/fileMode.js`): a drifted blob
//! is copied instead of linked, and a copy from the store always gets the name's mode. The
//! same rules are here, for the verifier, which sees every blob's bits anyway, and for the
//! importer.

use std::path::Path;
use std::sync::OnceLock;

use crate::blob_files;

/// The mode the blob of an (`executable`) name is meant to have, the umask applied: what a
/// package's copy of it gets. `None` on Windows, where files have no mode and pnpm applies no
/// mode rule.
pub fn name_mode(executable: bool) -> Option<u32> {
    (!cfg!(windows)).then(|| mode_under_umask(executable, umask()))
}

fn mode_under_umask(executable: bool, umask: u32) -> u32 {
    blob_files::blob_mode(executable) & !umask & 0o777
}

/// [`name_mode`] of the blob at `path`, `None` when `path` is not a store blob's (pnpm's
/// `storeEntryModeForSource`): a package imported from a directory of its own keeps its files'
/// modes.
pub fn store_entry_mode(path: &Path) -> Option<u32> {
    let path = path.as_os_str().as_encoded_bytes();
    if !is_store_blob(path) {
        return None;
    }
    name_mode(path.ends_with(EXEC_SUFFIX))
}

const EXEC_SUFFIX: &[u8] = b"-exec";

/// The rule the running pnpm applies to a store blob's bits before it links the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlobModeRule {
    /// None (pnpm before 11.28.1): every blob is linked whatever its bits, and a copy keeps them.
    None,
    /// Linked only with exactly its name's bits (11.28.1 to 11.28.5).
    Exact,
    /// [`is_linkable`] (pnpm's `isLinkableStoreMode`, from 11.28.6).
    #[default]
    Linkable,
}

impl BlobModeRule {
    /// `none`, `exact` or `linkable`.
    pub fn parse(text: &str) -> Option<BlobModeRule> {
        match text {
            "none" => Some(BlobModeRule::None),
            "exact" => Some(BlobModeRule::Exact),
            "linkable" => Some(BlobModeRule::Linkable),
            _ => None,
        }
    }
}

/// Whether bits `actual` may stand for `expected` in a hard link (pnpm's `isLinkableStoreMode`,
/// from 11.28.6): every bit equal but group and other write; group write may differ either way
/// (umasks differ in it), other write may only be missing. Before 11.28.6 pnpm links a blob
/// only when its bits are exactly `expected` (`exact`).
pub fn is_linkable_as(actual: u32, expected: u32, exact: bool) -> bool {
    if exact {
        actual & 0o777 == expected & 0o777
    } else {
        is_linkable(actual, expected)
    }
}

/// [`is_linkable_as`] under pnpm 11.28.6's rule and later.
pub fn is_linkable(actual: u32, expected: u32) -> bool {
    const GROUP_OTHER_WRITE: u32 = 0o022;
    (actual ^ expected) & 0o777 & !GROUP_OTHER_WRITE == 0 && actual & !expected & 0o002 == 0
}

/// `…/files/<2 lowercase hex>/<at least 40 lowercase hex>[-exec]`, the shape pnpm checks
/// (`isCafsFile`), on `/`-separated paths (the rule does not apply on Windows).
fn is_store_blob(path: &[u8]) -> bool {
    let last_sep = |upto: usize| path[..upto].iter().rposition(|&b| b == b'/');
    let Some(name_at) = last_sep(path.len()) else {
        return false;
    };
    let Some(shard_at) = last_sep(name_at) else {
        return false;
    };
    if name_at - shard_at - 1 != 2 || !is_lower_hex(&path[shard_at + 1..name_at]) {
        return false;
    }
    let Some(files_at) = last_sep(shard_at) else {
        return false;
    };
    if &path[files_at + 1..shard_at] != b"files" {
        return false;
    }
    let name = &path[name_at + 1..];
    let digest = name.strip_suffix(EXEC_SUFFIX).unwrap_or(name);
    digest.len() >= 40 && is_lower_hex(digest)
}

fn is_lower_hex(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// The process's umask, read once as pnpm reads `process.umask()` once. Linux reports it in
/// `/proc/self/status`; elsewhere it is read by setting it, so it is put back at once (another
/// thread creating a file in between would get the interim 0o022 applied, never no mask).
fn umask() -> u32 {
    static UMASK: OnceLock<u32> = OnceLock::new();
    *UMASK.get_or_init(|| proc_status_umask().unwrap_or_else(swap_umask))
}

fn proc_status_umask() -> Option<u32> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

#[cfg(unix)]
fn swap_umask() -> u32 {
    // SAFETY: umask(2) cannot fail; the old mask is restored right away.
    unsafe {
        let old = libc::umask(0o022);
        libc::umask(old);
        old as u32
    }
}

#[cfg(not(unix))]
fn swap_umask() -> u32 {
    0
}

#[cfg(test)]
mod tests;
