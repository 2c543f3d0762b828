//! The blob files of a store: `files/XX/<rest>[-exec]`, named by the SHA-512 of their content.
//!
//! Write semantics follow pnpm 11 (docs/store-format.md, "Writing blobs") so that pnpm and this
//! addon can share one store: an existing blob is trusted only after re-hashing it, a new blob is created exclusively, and a
//! corrupt blob is replaced through a temp file + rename so that a reader never sees it missing.
//!
//! One deliberate difference: pnpm creates a new blob under its final name and then writes it,
//! so a writer killed mid-file (or stopped by ENOSPC) leaves a truncated blob behind that still
//! has a valid-looking name. Here a new blob is written unnamed (or under a temp name) and only
//! linked to its final name once complete, so every name in `files/` holds its full content.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha512};

use crate::digest::hex;
use crate::os_error::{At, PathError};
use crate::platform;

/// Lowercase hex of a SHA-512 digest: 128 chars.
pub type DigestHex = String;

/// What writing one file into the store gives back: enough for an index row and a `filesMap`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFile {
    pub digest: DigestHex,
    /// `Date.now()` right after the blob was written or verified.
    pub checked_at: f64,
    pub executable: bool,
}

/// One store's `files/` directory.
pub struct Cas {
    /// `<storeDir>/files`, as text: store directories come from JS strings, so they are UTF-8.
    files_dir: String,
    /// Blobs this process already wrote or verified, with their `checkedAt`. pnpm keeps the same
    /// memo per worker; re-hashing a shared LICENSE file for every package would be wasted work.
    verified: Mutex<HashMap<PathBuf, f64>>,
}

impl Cas {
    pub fn new(store_dir: &Path) -> Self {
        Cas {
            files_dir: store_dir.join("files").to_string_lossy().into_owned(),
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// Where the blob of `digest` is written ([`blob_path`] below this store's `files/`).
    pub fn blob_path(&self, digest: &str, executable: bool) -> PathBuf {
        PathBuf::from(blob_path(
            &self.files_dir,
            std::path::MAIN_SEPARATOR,
            digest,
            executable,
        ))
    }

    /// Hashes `bytes` and makes sure the store holds them under their digest. A failure names
    /// the path it happened on.
    pub fn write(&self, bytes: &[u8], mode: u32) -> Result<StoredFile, PathError> {
        let digest = sha512_hex(bytes);
        let executable = is_executable(mode);
        let path = self.blob_path(&digest, executable);
        if let Some(&checked_at) = self.verified.lock().unwrap().get(&path) {
            return Ok(StoredFile {
                digest,
                checked_at,
                executable,
            });
        }
        match publish_new(&path, bytes, executable) {
            Ok(()) => {}
            Err(e) if e.error.kind() == ErrorKind::AlreadyExists => {
                if !blob_matches(&path, &digest).at("open", &path)? {
                    write_atomic(&path, bytes, executable)?;
                }
            }
            Err(e) => return Err(e),
        }
        let checked_at = now_ms();
        self.verified.lock().unwrap().insert(path, checked_at);
        Ok(StoredFile {
            digest,
            checked_at,
            executable,
        })
    }
}

/// Any x bit (owner, group or other) makes a blob executable, as in pnpm.
pub fn is_executable(mode: u32) -> bool {
    mode & 0o111 != 0
}

/// `<storeDir><sep>files`, by concatenation as pnpm's readers build it (not normalised).
pub fn files_dir(store_dir: &str, sep: char) -> String {
    format!("{store_dir}{sep}files")
}

/// A blob's full path: `files_dir`, `sep`, and its name ([`push_blob_name`]). The one place
/// blob paths are put together, for every caller: readers pass [`files_dir`] (concatenated, as
/// pnpm's readers build it), tarball and directory results `path.join(storeDir, 'files')` as JS
/// gave it, the writer its own `files/` ([`Cas::blob_path`]). See docs/store-format.md, "Blob
/// paths".
pub fn blob_path(files_dir: &str, sep: char, digest: &str, executable: bool) -> String {
    let mut out = String::with_capacity(files_dir.len() + 1 + digest.len() + 6);
    out.push_str(files_dir);
    out.push(sep);
    push_blob_name(&mut out, digest, sep, executable);
    out
}

/// Appends a blob's name below `files/`: `hex[0..2] + sep + hex[2..]`, and `-exec` for an
/// executable. Splits as JS `slice(0, 2)` does, so a short or non-ASCII digest (from a damaged
/// row) never panics.
pub fn push_blob_name(out: &mut String, digest: &str, sep: char, executable: bool) {
    let split = if digest.as_bytes().get(..2).is_some_and(|b| b.is_ascii()) {
        2
    } else {
        digest
            .char_indices()
            .nth(2)
            .map_or(digest.len(), |(i, _)| i)
    };
    out.push_str(&digest[..split]);
    out.push(sep);
    out.push_str(&digest[split..]);
    if executable {
        out.push_str("-exec");
    }
}

pub fn sha512_hex(bytes: &[u8]) -> DigestHex {
    hex(&Sha512::digest(bytes))
}

/// The lowercase hex digest of what `reader` yields, hashed with `algorithm` in 64 KiB reads;
/// `Ok(None)` for an algorithm [`crate::digest`] does not know.
pub fn hex_digest_of(algorithm: &str, mut reader: impl Read) -> io::Result<Option<DigestHex>> {
    let Some(mut hasher) = crate::digest::hasher(algorithm) else {
        return Ok(None);
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(Some(hex(&hasher.finalize())))
}

/// `Date.now()`: integral milliseconds since the epoch, as the f64 JS would hold.
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

/// The mode a new blob is created with (Unix; Windows files have no mode, the `-exec` name
/// alone says a blob is executable, as in pnpm).
pub(crate) fn blob_mode(executable: bool) -> u32 {
    if executable {
        0o755
    } else {
        0o666
    }
}

/// Creates the blob only if no file has its name yet: of two concurrent writers exactly one
/// publishes, the other gets `AlreadyExists` (and verifies what is there). The content is
/// complete before the name appears. The shard directory is created on demand so a store that
/// skipped `initStoreDir` still works.
fn publish_new(path: &Path, bytes: &[u8], executable: bool) -> Result<(), PathError> {
    match publish_new_in_shard(path, bytes, executable) {
        Err(e) if e.error.kind() == ErrorKind::NotFound => {
            let shard = path.parent().expect("blob paths have a shard dir");
            fs::create_dir_all(shard).at("mkdir", shard)?;
            publish_new_in_shard(path, bytes, executable)
        }
        other => other,
    }
}

/// Linux: an `O_TMPFILE` inode in the shard, written, then given its name with `linkat` (which
/// fails with `EEXIST` like `O_EXCL` would). A crash or a full disk before the link leaves no
/// directory entry at all, and the kernel frees the inode. Filesystems without `O_TMPFILE`, and
/// systems without `/proc` to name the inode by, use the portable way — from then on for every
/// blob of the process, so that a failing syscall (or a wasted write) is not repeated per file.
#[cfg(target_os = "linux")]
fn publish_new_in_shard(path: &Path, bytes: &[u8], executable: bool) -> Result<(), PathError> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    use std::sync::atomic::AtomicBool;
    static TMPFILE_UNUSABLE: AtomicBool = AtomicBool::new(false);
    let portable = || {
        TMPFILE_UNUSABLE.store(true, Ordering::Relaxed);
        publish_via_temp_name(path, bytes, executable)
    };
    if TMPFILE_UNUSABLE.load(Ordering::Relaxed) {
        return publish_via_temp_name(path, bytes, executable);
    }
    let shard = path.parent().expect("blob paths have a shard dir");
    let opened = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(blob_mode(executable))
        .open(shard);
    let mut file = match opened {
        Ok(file) => file,
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            return portable()
        }
        Err(e) => return Err(e).at("open", shard),
    };
    file.write_all(bytes).at("write", path)?;
    let from = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
    let to = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(ErrorKind::InvalidInput))
        .at("link", path)?;
    // SAFETY: both arguments are NUL-terminated strings that outlive the call.
    let linked = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if linked == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.kind() == ErrorKind::NotFound {
        // The shard exists (the inode was created in it), so `/proc` is what is missing.
        return portable();
    }
    Err(e).at("link", path)
}

#[cfg(not(target_os = "linux"))]
fn publish_new_in_shard(path: &Path, bytes: &[u8], executable: bool) -> Result<(), PathError> {
    publish_via_temp_name(path, bytes, executable)
}

/// The portable way: a complete temp copy, hard-linked to the final name (an existing name makes
/// the link fail with `AlreadyExists`), then the temp name removed.
fn publish_via_temp_name(path: &Path, bytes: &[u8], executable: bool) -> Result<(), PathError> {
    let temp = write_temp_copy(path, bytes, executable)?;
    let linked = fs::hard_link(&temp, path).at2("link", &temp, path);
    let _ = fs::remove_file(&temp);
    linked
}

/// Whether the blob at `path` hashes to `digest`. A partial blob left by a crashed writer fails
/// here and gets replaced.
fn blob_matches(path: &Path, digest: &str) -> io::Result<bool> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(hex_digest_of("sha512", &mut file)?.as_deref() == Some(digest))
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces a corrupt blob: a complete copy under a temp name, renamed over the blob, so readers
/// see either the old bytes or the new ones, never a missing or half-written file.
fn write_atomic(path: &Path, bytes: &[u8], executable: bool) -> Result<(), PathError> {
    let temp = write_temp_copy(path, bytes, executable)?;
    let renamed = fs::rename(&temp, path).at2("rename", &temp, path);
    if renamed.is_err() {
        let _ = fs::remove_file(&temp);
    }
    renamed
}

/// Writes `bytes` under a private temp name beside `path` and returns that name; on failure
/// nothing is left behind. The name (pid + counter) is unique across processes and threads and
/// longer than any real blob name, so `pnpm store prune` treats a leftover as garbage, never as
/// content.
fn write_temp_copy(path: &Path, bytes: &[u8], executable: bool) -> Result<PathBuf, PathError> {
    let name = path.file_name().unwrap().to_string_lossy();
    let stem = name.strip_suffix("-exec").unwrap_or(&name);
    let temp = path.with_file_name(format!(
        "{stem}{}{}_{}",
        if executable { "x" } else { "" },
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    // Not `create_new`: a leftover of a dead process that had the same pid may be overwritten.
    let written = platform::create_mode(
        OpenOptions::new().write(true).create(true).truncate(true),
        blob_mode(executable),
    )
    .open(&temp)
    .and_then(|mut file| file.write_all(bytes));
    match written {
        Ok(()) => Ok(temp),
        Err(e) => {
            let _ = fs::remove_file(&temp);
            Err(e).at("open", &temp)
        }
    }
}

/// `initStoreDir`: the store dir, `files/` and its 256 shard dirs. Existing dirs are fine:
/// several processes may initialise one store at once.
pub fn init_store_dir(store_dir: &Path) -> Result<(), PathError> {
    let files = store_dir.join("files");
    fs::create_dir_all(&files).at("mkdir", &files)?;
    for shard in 0..=255u8 {
        let shard = files.join(format!("{shard:02x}"));
        match fs::create_dir(&shard) {
            Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e).at("mkdir", &shard),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
