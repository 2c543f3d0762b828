//! The per-file operations of the importers (docs/store-format.md, "Importing a package") and
//! the Node-style errors they fail with. pnpm does these with `fs.linkSync` / `fs.copyFileSync`;
//! callers branch on the errno name and show Node's message (`ENOENT: no such file or
//! directory, link 'a' -> 'b'`), so errors keep both.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::blob_modes::is_linkable_as;
use crate::error_code::ErrorCode;
use crate::{os_error, platform};

/// An import failure: the code pnpm would give it (`ERR_PNPM_<errno>` for filesystem errors)
/// and Node's message for it. `errno` (POSIX numbering, see `os_error::errno`) drives the retry
/// rules.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ImportError {
    /// Read through [`ErrorCode::code`], the one way codes are exposed.
    code: &'static str,
    pub message: String,
    pub errno: Option<i32>,
    /// For an OS error: the syscall and paths, as Node's fs errors carry them. Boxed: import
    /// results are passed around by value on every file, and the site is only read on failure.
    pub site: Option<Box<os_error::FsSite>>,
}

/// The code of a store index that could not be read while linking.
const STORE_INDEX: &str = "ERR_PNPM_STORE_INDEX";

impl ImportError {
    /// A failure that is not an OS error: pnpm reports it as `ERR_PNPM_LINKING_FAILED`.
    pub fn linking_failed(message: impl Into<String>) -> Self {
        ImportError {
            code: "ERR_PNPM_LINKING_FAILED",
            message: message.into(),
            errno: None,
            site: None,
        }
    }

    /// A failure to read the store index while linking.
    pub fn store_index(message: impl Into<String>) -> Self {
        ImportError::with_code(STORE_INDEX, message)
    }

    pub fn with_code(code: &'static str, message: impl Into<String>) -> Self {
        ImportError {
            code,
            message: message.into(),
            errno: None,
            site: None,
        }
    }

    /// `ENOENT: no such file or directory, <syscall> '<path>'[ -> '<dest>']`, as Node words it.
    pub fn os(e: &io::Error, syscall: &str, path: &Path, dest: Option<&Path>) -> Self {
        let site = os_error::FsSite::new(syscall, path, dest);
        ImportError {
            code: os_error::pnpm_code(e),
            message: site.message(e),
            errno: os_error::errno(e),
            site: Some(Box::new(site)),
        }
    }

    pub fn is_errno(&self, errno: i32) -> bool {
        self.errno == Some(errno)
    }
}

impl ErrorCode for ImportError {
    fn code(&self) -> &'static str {
        self.code
    }

    fn site(&self) -> Option<os_error::FsSite> {
        self.site.as_deref().cloned()
    }
}

/// What a per-file operation ended up doing, for the counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    Linked,
    Copied,
    Cloned,
    /// The destination already existed and was kept (EEXIST ignored).
    Kept,
}

/// The `process.platform` values pnpm's importer branches on. The decisions below take it as an
/// argument so that every platform's rules are tested on any machine; the importers pass
/// [`Os::HOST`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    Darwin,
    Win32,
    Other,
}

impl Os {
    /// The OS this build runs on.
    pub const HOST: Os = if cfg!(target_os = "linux") {
        Os::Linux
    } else if cfg!(target_os = "macos") {
        Os::Darwin
    } else if cfg!(windows) {
        Os::Win32
    } else {
        Os::Other
    };

    /// `auto` probes a clone before hard links everywhere but on Windows, where pnpm finds
    /// reflinks (Dev Drive) slower than hard links.
    pub fn auto_tries_clone(self) -> bool {
        self != Os::Win32
    }

    /// Whether the clone importer copies a file whose clone failed with `errno`. pnpm's falls
    /// back on `ENOTSUP` only: on Linux its clone is `copyFileSync(COPYFILE_FICLONE_FORCE)`,
    /// whose `ENOTSUP` means the filesystem cannot (or, under heavy parallel I/O, momentarily
    /// did not) reflink. On macOS its clone is `@reflink/reflink`'s `clonefile`, whose errors
    /// carry no `code`, so a volume that cannot clone fails the `clone` method there and this
    /// does the same. On Windows this build reports every clone as `ENOTSUP` (no ReFS block
    /// cloning here), and copying keeps `clone` usable.
    pub fn clone_falls_back(self, errno: Option<i32>) -> bool {
        self != Os::Darwin && errno == Some(libc::ENOTSUP)
    }
}

/// The per-file operations an importer is made of (docs/store-format.md, "Importing a package").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// Reflink, no fallback (the probes of `auto` and `clone-or-copy`). EEXIST is ignored.
    CloneRaw,
    /// Reflink; where [`Os::clone_falls_back`], resilient copy.
    Clone,
    /// Reflink; where [`Os::clone_falls_back`], atomic copy (`package.json` of the clone
    /// importer).
    CloneAtomic,
    /// `link`, no fallback (the probe of `auto`).
    LinkRaw,
    /// `link`; EEXIST keeps the existing file; any other error → resilient copy.
    LinkOrCopy,
    /// Resilient copy.
    Copy,
    /// Resilient copy to a temp name, then rename over the destination.
    AtomicCopy,
}

impl FileOp {
    pub fn is_link(self) -> bool {
        matches!(self, FileOp::LinkRaw | FileOp::LinkOrCopy)
    }

    /// `mode` with what this operation needs to know: a link, whether the blob is linkable
    /// (its bits `stat`ed unless known, as pnpm stats every blob it links).
    pub fn needs(self, mode: SrcMode, src: &Path) -> Result<SrcMode, ImportError> {
        if self.is_link() {
            mode.known(src)
        } else {
            Ok(mode)
        }
    }

    /// Puts `src` at `dst`. A store blob whose bits are not linkable for its name is copied
    /// instead of linked, and every copy or clone of a store blob gets its name's mode
    /// (docs/store-format.md, "Blob modes").
    pub fn apply(self, src: &Path, dst: &Path, mode: SrcMode) -> Result<Done, ImportError> {
        let mode = self.needs(mode, src)?;
        match self {
            FileOp::CloneRaw => clone_raw(src, dst, mode),
            FileOp::Clone => match clone_raw(src, dst, mode) {
                Err(e) if Os::HOST.clone_falls_back(e.errno) => resilient_copy(src, dst, mode),
                other => other,
            },
            FileOp::CloneAtomic => match clone_raw(src, dst, mode) {
                Err(e) if Os::HOST.clone_falls_back(e.errno) => atomic_copy(src, dst, mode),
                other => other,
            },
            _ if self.is_link() && !mode.linkable() => resilient_copy(src, dst, mode),
            FileOp::LinkRaw => fs::hard_link(src, dst)
                .map(|()| Done::Linked)
                .map_err(|e| ImportError::os(&e, "link", src, Some(dst))),
            FileOp::LinkOrCopy => match fs::hard_link(src, dst) {
                Ok(()) => Ok(Done::Linked),
                Err(e) if os_error::errno(&e) == Some(libc::EEXIST) => Ok(Done::Kept),
                Err(_) => resilient_copy(src, dst, mode),
            },
            FileOp::Copy => resilient_copy(src, dst, mode),
            FileOp::AtomicCopy => atomic_copy(src, dst, mode),
        }
    }
}

/// What an importer knows of a source file's mode before it puts the file in place
/// (docs/store-format.md, "Blob modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrcMode {
    /// Not a store blob (a package imported from a directory), or Windows: linked as it is,
    /// its copies keep its mode.
    Plain,
    /// A store blob: `named` is the mode its name says (the umask applied), `actual` its
    /// permission bits when they are known; `exact`: linked only with exactly `named`'s bits
    /// (the running pnpm's rule: [`crate::blob_modes::is_linkable_as`]).
    Blob {
        named: u32,
        actual: Option<u32>,
        exact: bool,
    },
}

impl SrcMode {
    /// With the blob's bits, `stat`ed unless already known.
    fn known(self, src: &Path) -> Result<SrcMode, ImportError> {
        match self {
            SrcMode::Blob {
                named,
                actual: None,
                exact,
            } => {
                let meta = fs::metadata(src).map_err(|e| ImportError::os(&e, "stat", src, None))?;
                Ok(SrcMode::Blob {
                    named,
                    actual: Some(platform::permission_bits(&meta) & 0o777),
                    exact,
                })
            }
            known => Ok(known),
        }
    }

    /// The file may be shared by a hard link (bits not known: no).
    pub fn linkable(self) -> bool {
        match self {
            SrcMode::Plain => true,
            SrcMode::Blob {
                named,
                actual,
                exact,
            } => actual.is_some_and(|a| is_linkable_as(a, named, exact)),
        }
    }

    /// The mode a copy is made with: a store blob's name's, anything else's own.
    fn for_copy(self, source: &File) -> io::Result<u32> {
        match self {
            SrcMode::Blob { named, .. } => Ok(named),
            SrcMode::Plain => source.metadata().map(|m| platform::permission_bits(&m)),
        }
    }

    /// The mode a copy or clone must be given after the fact, when it does not have it from
    /// its source already.
    fn to_set(self) -> Option<u32> {
        match self {
            SrcMode::Blob { named, actual, .. } if actual != Some(named) => Some(named),
            _ => None,
        }
    }
}

/// Gives a copy or clone of a store blob its name's mode (pnpm's `alignStoreFileMode`).
fn align_mode(dst: &Path, mode: SrcMode) -> Result<(), ImportError> {
    #[cfg(unix)]
    if let Some(named) = mode.to_set() {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dst, fs::Permissions::from_mode(named))
            .map_err(|e| ImportError::os(&e, "chmod", dst, None))?;
    }
    #[cfg(not(unix))]
    let _ = (dst, mode);
    Ok(())
}

/// `copyFileSync(src, dst, COPYFILE_FICLONE_FORCE)`: the destination is created with the
/// source's mode (a store blob's: its name's) and removed again when the clone fails; an
/// existing destination is kept.
#[cfg(target_os = "linux")]
fn clone_raw(src: &Path, dst: &Path, src_mode: SrcMode) -> Result<Done, ImportError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let err = |e: &io::Error| ImportError::os(e, "copyfile", src, Some(dst));
    let source = File::open(src).map_err(|e| err(&e))?;
    let mode = src_mode.for_copy(&source).map_err(|e| err(&e))?;
    // Never opened if it exists: it could be a hard link into the store.
    let target = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(dst)
    {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => return Ok(Done::Kept),
        Err(e) => return Err(err(&e)),
    };
    // SAFETY: both descriptors are open for the duration of the call; FICLONE reads no memory.
    let rc = unsafe { libc::ioctl(target.as_raw_fd(), libc::FICLONE, source.as_raw_fd()) };
    if rc != 0 {
        let e = io::Error::last_os_error();
        drop(target);
        let _ = fs::remove_file(dst);
        return Err(err(&e));
    }
    let _ = target.set_permissions(fs::Permissions::from_mode(mode));
    Ok(Done::Cloned)
}

/// `clonefile(src, dst, CLONE_NOOWNERCOPY)`, as pnpm's `@reflink/reflink` clones on macOS: an
/// APFS copy-on-write clone with the blob's mode (then a store blob's name's mode); an
/// existing destination is kept, as pnpm ignores `EEXIST` there. Other volumes fail with
/// `ENOTSUP`.
#[cfg(target_os = "macos")]
fn clone_raw(src: &Path, dst: &Path, mode: SrcMode) -> Result<Done, ImportError> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    /// `<sys/clonefile.h>` (the libc crate has the call, not its flags): the clone belongs to
    /// the user importing, not to the blob's owner.
    const CLONE_NOOWNERCOPY: u32 = 0x0002;
    let err = |e: &io::Error| ImportError::os(e, "clonefile", src, Some(dst));
    let c_path = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| err(&io::Error::from_raw_os_error(libc::EINVAL)))
    };
    let (from, to) = (c_path(src)?, c_path(dst)?);
    // SAFETY: both strings are NUL-terminated and live across the call.
    if unsafe { libc::clonefile(from.as_ptr(), to.as_ptr(), CLONE_NOOWNERCOPY) } == 0 {
        align_mode(dst, mode)?;
        return Ok(Done::Cloned);
    }
    match io::Error::last_os_error() {
        e if e.raw_os_error() == Some(libc::EEXIST) => Ok(Done::Kept),
        e => Err(err(&e)),
    }
}

/// Reflinks on Windows need ReFS block cloning, which this build does not do: report ENOTSUP
/// so the importers fall back exactly as they do on a filesystem without reflinks.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn clone_raw(src: &Path, dst: &Path, _mode: SrcMode) -> Result<Done, ImportError> {
    Err(ImportError::os(
        &os_error::unsupported(),
        "copyfile",
        src,
        Some(dst),
    ))
}

/// `copyFileSync(src, dst)` (mode preserved, destination overwritten), then a store blob's
/// name's mode; on ENOTSUP read the whole source and write it with that mode. On macOS
/// `fs::copy` is `fclonefileat`, then `fcopyfile` where the volume cannot clone
/// (`COPYFILE_FICLONE` semantics): the bytes and mode are those of a plain copy, the blocks
/// shared until either file is written.
fn resilient_copy(src: &Path, dst: &Path, src_mode: SrcMode) -> Result<Done, ImportError> {
    match fs::copy(src, dst) {
        Ok(_) => {
            align_mode(dst, src_mode)?;
            Ok(Done::Copied)
        }
        Err(e) if os_error::errno(&e) == Some(libc::ENOTSUP) => {
            let err = |e: &io::Error| ImportError::os(e, "copyfile", src, Some(dst));
            let mut bytes = Vec::new();
            let mut source = File::open(src).map_err(|e| err(&e))?;
            let mode = src_mode.for_copy(&source).map_err(|e| err(&e))?;
            source.read_to_end(&mut bytes).map_err(|e| err(&e))?;
            let mut out = platform::create_mode(
                OpenOptions::new().write(true).create(true).truncate(true),
                mode,
            )
            .open(dst)
            .map_err(|e| err(&e))?;
            out.write_all(&bytes).map_err(|e| err(&e))?;
            Ok(Done::Copied)
        }
        Err(e) => Err(ImportError::os(&e, "copyfile", src, Some(dst))),
    }
}

/// Copy to `<dst>_tmp_<pid>_<n>`, then rename over `dst`: a reader sees the old file or the
/// complete new one, never a partial `package.json`.
fn atomic_copy(src: &Path, dst: &Path, mode: SrcMode) -> Result<Done, ImportError> {
    let tmp = temp_sibling(dst);
    if let Err(e) = resilient_copy(src, &tmp, mode) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, dst).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        ImportError::os(&e, "rename", &tmp, Some(dst))
    })?;
    Ok(Done::Copied)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// `<path>_tmp_<pid>_cas<n>`: pnpm's temp-name shape, but with a process-wide counter prefixed
/// by `cas` where pnpm puts its worker's thread id, so a name can collide neither with another
/// call of this process nor with pnpm's worker threads running in the same process.
pub fn temp_sibling(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(
        "_tmp_{}_cas{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    PathBuf::from(name)
}

/// A few random bits for names that must not be guessable by a concurrent process (the
/// "swap aside" name of rename-overwrite).
pub fn random_hex8() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut h = RandomState::new().build_hasher();
    h.write_u64(TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{:08x}", h.finish() as u32)
}

/// Directory-relative operations for the hot path: a lockfile's worth of links costs one path
/// walk per package instead of two full walks (store blob + target) per file. Every failure
/// is retried by the caller through the path-based operation above, so errors, messages and
/// fallbacks stay exactly those of the path-based code.
#[cfg(unix)]
pub mod at {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::ffi::CString;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex, OnceLock};

    /// A directory handle to name things relative to.
    pub type Dir = OwnedFd;

    fn cstr(bytes: &[u8]) -> io::Result<CString> {
        CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
    }

    /// A directory handle only used to name things relative to it: `O_PATH` where Linux has it.
    #[cfg(target_os = "linux")]
    const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    #[cfg(not(target_os = "linux"))]
    const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

    /// `open(path, O_PATH | O_DIRECTORY)`: a handle to name things relative to.
    pub fn open_dir(path: &Path) -> io::Result<OwnedFd> {
        let c = cstr(path.as_os_str().as_bytes())?;
        // SAFETY: `c` is NUL-terminated; the returned descriptor is owned below.
        let fd = unsafe { libc::open(c.as_ptr(), DIR_FLAGS) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Handles of the directories that hold the store's shards (`files/`), shared by all
    /// threads; each thread keeps its own map of the ones it used so the shared lock is taken
    /// once per store. One handle per store, not one per shard: a process whose descriptor
    /// table outgrows its 64 slots waits for the kernel to grow it (an RCU grace period, some
    /// 10-20 ms here, with every link thread stalled), and 256 shard handles did that on every
    /// install.
    fn blobs_dir(dir: &Path) -> io::Result<Arc<OwnedFd>> {
        static SHARED: OnceLock<Mutex<HashMap<PathBuf, Arc<OwnedFd>>>> = OnceLock::new();
        thread_local! {
            static MINE: RefCell<HashMap<PathBuf, Arc<OwnedFd>>> = RefCell::new(HashMap::new());
        }
        if let Some(fd) = MINE.with(|m| m.borrow().get(dir).cloned()) {
            return Ok(fd);
        }
        let fd = {
            let mut shared = SHARED.get_or_init(Default::default).lock().unwrap();
            if let Some(fd) = shared.get(dir) {
                fd.clone()
            } else {
                // Bounded: stores come and go (tests); a handle of a deleted store only makes
                // the fast path fail over to the path-based one.
                if shared.len() >= 16 {
                    shared.clear();
                }
                let fd = Arc::new(open_dir(dir)?);
                shared.insert(dir.to_path_buf(), fd.clone());
                fd
            }
        };
        MINE.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= 16 {
                m.clear();
            }
            m.insert(dir.to_path_buf(), fd.clone());
        });
        Ok(fd)
    }

    /// `linkat(<the blob's shard's parent>, "<shard>/<blob name>", dir, rel)`.
    pub fn link(src: &Path, dir: &OwnedFd, rel: &str) -> io::Result<()> {
        let (Some(shard), Some(name)) = (src.parent(), src.file_name()) else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let (Some(blobs), Some(shard_name)) = (shard.parent(), shard.file_name()) else {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        };
        let blobs_dir = blobs_dir(blobs)?;
        let mut within = Vec::with_capacity(shard_name.len() + 1 + name.len());
        within.extend_from_slice(shard_name.as_bytes());
        within.push(b'/');
        within.extend_from_slice(name.as_bytes());
        let within = cstr(&within)?;
        let rel = cstr(rel.as_bytes())?;
        // SAFETY: both descriptors are open, both strings NUL-terminated.
        let rc = unsafe {
            libc::linkat(
                blobs_dir.as_raw_fd(),
                within.as_ptr(),
                dir.as_raw_fd(),
                rel.as_ptr(),
                0,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `mkdirat(dir, rel, 0o777)`.
    pub fn mkdir(dir: &OwnedFd, rel: &str) -> io::Result<()> {
        let rel = cstr(rel.as_bytes())?;
        // SAFETY: the descriptor is open, the string NUL-terminated.
        if unsafe { libc::mkdirat(dir.as_raw_fd(), rel.as_ptr(), 0o777) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Windows has no directory-relative calls: no handle is ever opened (`Dir` has no values), so
/// the importers create directories and hard links by path (`fs::create_dir`, `fs::hard_link`).
#[cfg(not(unix))]
pub mod at {
    use std::io;
    use std::path::Path;

    pub enum Dir {}

    pub fn open_dir(_path: &Path) -> io::Result<Dir> {
        Err(io::ErrorKind::Unsupported.into())
    }

    pub fn link(_src: &Path, dir: &Dir, _rel: &str) -> io::Result<()> {
        match *dir {}
    }

    pub fn mkdir(dir: &Dir, _rel: &str) -> io::Result<()> {
        match *dir {}
    }
}
