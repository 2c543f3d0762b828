//! The content-addressable file store: `files/XX/<rest>[-exec]` blobs named by SHA-512.
//!
//! Write semantics follow pnpm 11 (spec §4) so that pnpm and this addon can share one store:
//! an existing blob is trusted only after re-hashing it, a new blob is created exclusively, and a
//! corrupt blob is replaced through a temp file + rename so that a reader never sees it missing.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha512};

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
    files_dir: PathBuf,
    /// Blobs this process already wrote or verified, with their `checkedAt`. pnpm keeps the same
    /// memo per worker; re-hashing a shared LICENSE file for every package would be wasted work.
    verified: Mutex<HashMap<String, f64>>,
}

impl Cas {
    pub fn new(store_dir: &Path) -> Self {
        Cas {
            files_dir: store_dir.join("files"),
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// The blob path relative to `files/`: `XX/<126 hex>[-exec]`.
    pub fn relative_blob_path(digest: &str, executable: bool) -> String {
        let suffix = if executable { "-exec" } else { "" };
        format!("{}/{}{}", &digest[..2], &digest[2..], suffix)
    }

    pub fn blob_path(&self, digest: &str, executable: bool) -> PathBuf {
        self.files_dir
            .join(Self::relative_blob_path(digest, executable))
    }

    /// Hashes `bytes` and makes sure the store holds them under their digest.
    pub fn write(&self, bytes: &[u8], mode: u32) -> io::Result<StoredFile> {
        let digest = sha512_hex(bytes);
        let executable = is_executable(mode);
        let rel = Self::relative_blob_path(&digest, executable);
        if let Some(&checked_at) = self.verified.lock().unwrap().get(&rel) {
            return Ok(StoredFile {
                digest,
                checked_at,
                executable,
            });
        }
        let path = self.files_dir.join(&rel);
        match create_exclusive(&path, bytes, executable) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                if !blob_matches(&path, &digest)? {
                    write_atomic(&path, bytes, executable)?;
                }
            }
            Err(e) => return Err(e),
        }
        let checked_at = now_ms();
        self.verified.lock().unwrap().insert(rel, checked_at);
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

pub fn sha512_hex(bytes: &[u8]) -> DigestHex {
    to_hex(&Sha512::digest(bytes))
}

fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
    out
}

/// `Date.now()`: integral milliseconds since the epoch, as the f64 JS would hold.
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

fn blob_mode(executable: bool) -> u32 {
    if executable {
        0o755
    } else {
        0o666
    }
}

/// `O_CREAT|O_EXCL`: of two concurrent writers exactly one creates the blob; the shard directory
/// is created on demand so a store that skipped `initStoreDir` still works.
fn create_exclusive(path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
    let open = || {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(blob_mode(executable))
            .open(path)
    };
    let mut file = match open() {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            fs::create_dir_all(path.parent().expect("blob paths have a shard dir"))?;
            open()?
        }
        other => other?,
    };
    file.write_all(bytes)
}

/// Whether the blob at `path` hashes to `digest`. A partial blob left by a crashed writer fails
/// here and gets replaced.
fn blob_matches(path: &Path, digest: &str) -> io::Result<bool> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    let mut hasher = Sha512::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(to_hex(&hasher.finalize()) == digest)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes a complete copy under a private temp name in the same shard, then renames it over the
/// blob: readers see either the old bytes or the new ones, never a missing or half-written file.
/// The temp name (pid + counter) is unique across processes and threads and longer than any
/// real blob name, so `pnpm store prune` treats it as garbage, never as content.
fn write_atomic(path: &Path, bytes: &[u8], executable: bool) -> io::Result<()> {
    let name = path.file_name().unwrap().to_string_lossy();
    let stem = name.strip_suffix("-exec").unwrap_or(&name);
    let temp = path.with_file_name(format!(
        "{stem}{}{}_{}",
        if executable { "x" } else { "" },
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(blob_mode(executable))
            .open(&temp)?;
        file.write_all(bytes)?;
        drop(file);
        fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// `initStoreDir`: the store dir, `files/` and its 256 shard dirs. Existing dirs are fine:
/// several processes may initialise one store at once.
pub fn init_store_dir(store_dir: &Path) -> io::Result<()> {
    let files = store_dir.join("files");
    fs::create_dir_all(&files)?;
    for shard in 0..=255u8 {
        match fs::create_dir(files.join(format!("{shard:02x}"))) {
            Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
