//! The few filesystem facts that differ between Unix and Windows, each as one function with its
//! two implementations side by side; everything else in the crate is written once against
//! `std::fs`. What Windows gets follows what pnpm (through Node and libuv) does there:
//!
//! - **No mode bits.** A new file gets no permissions to set: a blob's executability is in its
//!   `-exec` name, which comes from the tar header's mode as on Unix. Node reports a file's mode
//!   as `0o444` (read-only attribute) or `0o666`.
//! - **File identity** (`stat().dev`/`ino` in Node): device and inode on Unix; the volume serial
//!   number and the file index on Windows, which std's `Metadata` only carries when it comes
//!   from an open handle, so the file is opened for them.
//! - **Dependency links** are directory junctions on Windows, as pnpm's `symlink-dir` makes them
//!   there (a symlink needs Developer Mode or administrator rights; a junction does not), and a
//!   junction is removed as a directory.

use std::fs::{self, Metadata, OpenOptions};
use std::io;
use std::path::Path;

/// A file's identity as Node's `stat` gives it: `dev` and `ino`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
}

/// The identity of the file at `path`, whose `symlink_metadata` or `metadata` is `meta` (a
/// symlink's identity is the link's own, as with `lstat`). `None` when it cannot be read
/// (Windows only: the file could not be opened).
#[cfg(unix)]
pub fn file_id(_path: &Path, meta: &Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some(FileId {
        dev: meta.dev(),
        ino: meta.ino(),
    })
}

#[cfg(windows)]
pub fn file_id(path: &Path, meta: &Metadata) -> Option<FileId> {
    use std::os::windows::fs::OpenOptionsExt;
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::Storage::FileSystem::{
        GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS,
        FILE_FLAG_OPEN_REPARSE_POINT,
    };
    // No access rights: only attributes are read (as std's own `metadata` opens files), and
    // BACKUP_SEMANTICS lets the same call open a directory.
    let mut flags = FILE_FLAG_BACKUP_SEMANTICS;
    if meta.file_type().is_symlink() {
        flags |= FILE_FLAG_OPEN_REPARSE_POINT;
    }
    let file = OpenOptions::new()
        .access_mode(0)
        .custom_flags(flags)
        .open(path)
        .ok()?;
    let mut info = std::mem::MaybeUninit::<BY_HANDLE_FILE_INFORMATION>::uninit();
    // SAFETY: `file` is an open handle for the duration of the call, and `info` is a buffer of
    // the structure's size that the call fills completely when it succeeds.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle(), info.as_mut_ptr()) } == 0 {
        return None;
    }
    // SAFETY: the call succeeded.
    let info = unsafe { info.assume_init() };
    Some(FileId {
        dev: u64::from(info.dwVolumeSerialNumber),
        ino: (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    })
}

/// Whether two paths are one file (hard links of one inode), given their metadata. Unknown
/// identities (a zero inode or device, or none at all) are never the same file, so callers fall
/// back to comparing contents or to replacing the file.
pub fn same_file(a: &Path, a_meta: &Metadata, b: &Path, b_meta: &Metadata) -> bool {
    match (file_id(a, a_meta), file_id(b, b_meta)) {
        (Some(a), Some(b)) => a.ino != 0 && a.dev != 0 && a == b,
        _ => false,
    }
}

/// The permission bits of a file (`stat().mode & 0o7777`).
#[cfg(unix)]
pub fn permission_bits(meta: &Metadata) -> u32 {
    use std::os::unix::fs::MetadataExt;
    meta.mode() & 0o7777
}

/// What Node reports on Windows: no execute bits, write unless the file is read-only.
#[cfg(windows)]
pub fn permission_bits(meta: &Metadata) -> u32 {
    if meta.permissions().readonly() {
        0o444
    } else {
        0o666
    }
}

/// Sets the mode a file is created with (`open(2)`'s third argument; the umask applies).
/// Nothing on Windows, where files have no mode.
#[cfg(unix)]
pub fn create_mode(opts: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    opts.mode(mode)
}

#[cfg(windows)]
pub fn create_mode(opts: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
    opts
}

/// Node's `mtimeMs`: the modification time in (fractional) milliseconds since the epoch.
#[cfg(unix)]
pub fn mtime_ms(meta: &Metadata) -> f64 {
    use std::os::unix::fs::MetadataExt;
    meta.mtime() as f64 * 1e3 + meta.mtime_nsec() as f64 / 1e6
}

#[cfg(windows)]
pub fn mtime_ms(meta: &Metadata) -> f64 {
    use std::time::UNIX_EPOCH;
    match meta.modified().map(|t| t.duration_since(UNIX_EPOCH)) {
        Ok(Ok(d)) => d.as_secs_f64() * 1e3,
        Ok(Err(before)) => -before.duration().as_secs_f64() * 1e3,
        Err(_) => 0.0,
    }
}

/// A dependency link at `link` to the directory `target`: a symlink whose text is `target` on
/// Unix (relative, as `symlink-dir` writes it), a junction to `target` on Windows (absolute:
/// junctions cannot be relative). Fails with `EEXIST` when `link` exists and `ENOENT` when its
/// parent does not, on both.
#[cfg(unix)]
pub fn symlink_dir(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
pub fn symlink_dir(target: &Path, link: &Path) -> io::Result<()> {
    junction::create(target, link)
}

/// `fs.unlinkSync` of a link or file (never of a real directory). A junction or a directory
/// symlink is a directory to Windows and is removed as one (without touching its target).
#[cfg(unix)]
pub fn remove_link(path: &Path) -> io::Result<()> {
    fs::remove_file(path)
}

#[cfg(windows)]
pub fn remove_link(path: &Path) -> io::Result<()> {
    use std::os::windows::fs::FileTypeExt;
    if fs::symlink_metadata(path)?.file_type().is_symlink_dir() {
        fs::remove_dir(path)
    } else {
        fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests;
