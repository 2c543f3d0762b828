//! Node-style names for OS errors. pnpm surfaces filesystem failures as `ERR_PNPM_<errno name>`
//! (`ERR_PNPM_ENOSPC`, `ERR_PNPM_EACCES`, …) and callers branch on them, so we keep the name.
//!
//! The crate compares errors by POSIX errno (`libc::EEXIST`, …) on every platform: on Unix that
//! is the error's own number; on Windows, whose errors are system error codes, `errno` first
//! translates the code the way libuv does for Node (`uv_translate_sys_error`), into the Windows
//! CRT's errno numbers that `libc` defines there.

use std::io;
use std::path::Path;

use crate::error_code::ErrorCode;

/// The POSIX errno of an OS error (`None` for other errors, and on Windows for system error
/// codes libuv has no errno for).
pub fn errno(e: &io::Error) -> Option<i32> {
    let raw = e.raw_os_error()?;
    #[cfg(windows)]
    return windows_errno(raw);
    #[cfg(not(windows))]
    Some(raw)
}

/// One errno the store code meets: its number, the name Node puts in `err.code`, pnpm's code
/// for it (the name behind `ERR_PNPM_`), and libuv's wording (what Node prints after the name).
struct Errno {
    number: i32,
    name: &'static str,
    code: &'static str,
    text: &'static str,
}

macro_rules! errno {
    ($name:ident, $text:literal) => {
        Errno {
            number: libc::$name,
            name: stringify!($name),
            code: concat!("ERR_PNPM_", stringify!($name)),
            text: $text,
        }
    };
}

/// The errnos with a name of their own; others are `EIO` with the OS's own wording.
const ERRNOS: &[Errno] = &[
    errno!(ENOENT, "no such file or directory"),
    errno!(EACCES, "permission denied"),
    errno!(EPERM, "operation not permitted"),
    errno!(EEXIST, "file already exists"),
    errno!(ENOTDIR, "not a directory"),
    errno!(EISDIR, "illegal operation on a directory"),
    errno!(ENOTEMPTY, "directory not empty"),
    errno!(ENOSPC, "no space left on device"),
    errno!(EROFS, "read-only file system"),
    errno!(EMFILE, "too many open files"),
    errno!(ENFILE, "file table overflow"),
    errno!(EXDEV, "cross-device link not permitted"),
    errno!(EMLINK, "too many links"),
    errno!(ENAMETOOLONG, "name too long"),
    errno!(ELOOP, "too many symbolic links encountered"),
    errno!(EBUSY, "resource busy or locked"),
    errno!(EAGAIN, "resource temporarily unavailable"),
    errno!(EINVAL, "invalid argument"),
    // Windows reports a full quota as a system error libuv does not translate.
    #[cfg(unix)]
    errno!(EDQUOT, "disk quota exceeded"),
    // Linux has one number for both names; macOS and Windows have two, and `ENOTSUP` is what
    // libuv reports (`clonefile` on a volume without clones, `ERROR_NOT_SUPPORTED`).
    errno!(ENOTSUP, "operation not supported on socket"),
];

fn known(e: &io::Error) -> Option<&'static Errno> {
    let n = errno(e)?;
    ERRNOS.iter().find(|known| known.number == n)
}

/// A Windows system error libuv does not translate: Node says `UNKNOWN`.
fn is_untranslated(e: &io::Error) -> bool {
    cfg!(windows) && e.raw_os_error().is_some()
}

/// The errno name Node would put in `err.code`, e.g. `"ENOENT"`.
pub fn errno_name(e: &io::Error) -> &'static str {
    match known(e) {
        Some(known) => known.name,
        None if is_untranslated(e) => "UNKNOWN",
        None => "EIO",
    }
}

/// pnpm's code for an OS error: [`errno_name`] behind `ERR_PNPM_`, e.g. `"ERR_PNPM_ENOENT"`.
pub fn pnpm_code(e: &io::Error) -> &'static str {
    match known(e) {
        Some(known) => known.code,
        None if is_untranslated(e) => "ERR_PNPM_UNKNOWN",
        None => "ERR_PNPM_EIO",
    }
}

/// The error's wording after the name, as Node prints it (`"no such file or directory"`).
pub fn uv_text(e: &io::Error) -> String {
    match known(e) {
        Some(known) => known.text.to_string(),
        // An OS error libuv has no wording for: the OS's, lower-cased like libuv's. Other
        // errors carry a message of their own (paths included), kept as it is.
        None if e.raw_os_error().is_some() => e.to_string().to_lowercase(),
        None => e.to_string(),
    }
}

/// `"ENOENT: no such file or directory"`: name and wording, as Node words an fs error.
pub fn describe(e: &io::Error) -> String {
    format!("{}: {}", errno_name(e), uv_text(e))
}

/// Where an fs error happened: the `syscall`, `path` and `dest` properties Node's fs errors carry
/// (and name in their message), handed on to JS so callers can read them as they would Node's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FsSite {
    pub syscall: String,
    pub path: String,
    pub dest: Option<String>,
}

impl FsSite {
    pub fn new(syscall: &str, path: &Path, dest: Option<&Path>) -> Self {
        FsSite {
            syscall: syscall.to_string(),
            path: path.display().to_string(),
            dest: dest.map(|d| d.display().to_string()),
        }
    }

    /// `ENOENT: no such file or directory, <syscall> '<path>'[ -> '<dest>']`, as Node words it.
    pub fn message(&self, e: &io::Error) -> String {
        let mut message = format!("{}, {} '{}'", describe(e), self.syscall, self.path);
        if let Some(dest) = &self.dest {
            message.push_str(&format!(" -> '{dest}'"));
        }
        message
    }
}

/// An OS error and the path it happened on.
#[derive(Debug, thiserror::Error)]
#[error("{}", .site.message(.error))]
pub struct PathError {
    #[source]
    pub error: io::Error,
    pub site: FsSite,
}

impl ErrorCode for PathError {
    /// `ERR_PNPM_<errno name>` ([`pnpm_code`]).
    fn code(&self) -> &'static str {
        pnpm_code(&self.error)
    }

    fn site(&self) -> Option<FsSite> {
        Some(self.site.clone())
    }
}

/// `io_result.at("mkdir", path)`: the error, if any, with where it happened.
pub trait At<T> {
    fn at(self, syscall: &str, path: &Path) -> Result<T, PathError>;
    fn at2(self, syscall: &str, path: &Path, dest: &Path) -> Result<T, PathError>;
}

impl<T> At<T> for io::Result<T> {
    fn at(self, syscall: &str, path: &Path) -> Result<T, PathError> {
        self.map_err(|error| PathError {
            error,
            site: FsSite::new(syscall, path, None),
        })
    }

    fn at2(self, syscall: &str, path: &Path, dest: &Path) -> Result<T, PathError> {
        self.map_err(|error| PathError {
            error,
            site: FsSite::new(syscall, path, Some(dest)),
        })
    }
}

/// The error of an operation the platform or filesystem does not support (`ENOTSUP`; on
/// Windows `ERROR_NOT_SUPPORTED`, which `errno` gives back as `ENOTSUP`).
pub fn unsupported() -> io::Error {
    #[cfg(windows)]
    return io::Error::from_raw_os_error(
        windows_sys::Win32::Foundation::ERROR_NOT_SUPPORTED as i32,
    );
    #[cfg(not(windows))]
    io::Error::from_raw_os_error(libc::ENOTSUP)
}

/// libuv's `uv_translate_sys_error` (`src/win/error.c`), for the codes it turns into an errno
/// `errno_name` knows (the others stay `UNKNOWN`). `ERROR_ACCESS_DENIED` is `EPERM`, as in the libuv of Node 20 and 22 (later
/// libuv releases say `EACCES`; the importers treat both alike).
#[cfg(windows)]
fn windows_errno(code: i32) -> Option<i32> {
    use windows_sys::Win32::Foundation as w;
    let Ok(code) = u32::try_from(code) else {
        return None;
    };
    Some(match code {
        w::ERROR_FILE_NOT_FOUND
        | w::ERROR_PATH_NOT_FOUND
        | w::ERROR_INVALID_NAME
        | w::ERROR_INVALID_DRIVE
        | w::ERROR_BAD_PATHNAME
        | w::ERROR_DIRECTORY
        | w::ERROR_INVALID_REPARSE_DATA
        | w::ERROR_MOD_NOT_FOUND
        | w::ERROR_ENVVAR_NOT_FOUND => libc::ENOENT,
        w::ERROR_ACCESS_DENIED | w::ERROR_PRIVILEGE_NOT_HELD => libc::EPERM,
        w::ERROR_NOACCESS | w::ERROR_ELEVATION_REQUIRED | w::ERROR_CANT_ACCESS_FILE => libc::EACCES,
        w::ERROR_ALREADY_EXISTS | w::ERROR_FILE_EXISTS => libc::EEXIST,
        w::ERROR_DIR_NOT_EMPTY => libc::ENOTEMPTY,
        w::ERROR_DISK_FULL
        | w::ERROR_HANDLE_DISK_FULL
        | w::ERROR_CANNOT_MAKE
        | w::ERROR_EA_TABLE_FULL
        | w::ERROR_END_OF_MEDIA => libc::ENOSPC,
        w::ERROR_WRITE_PROTECT => libc::EROFS,
        w::ERROR_TOO_MANY_OPEN_FILES => libc::EMFILE,
        w::ERROR_NOT_SAME_DEVICE => libc::EXDEV,
        w::ERROR_FILENAME_EXCED_RANGE => libc::ENAMETOOLONG,
        w::ERROR_CANT_RESOLVE_FILENAME => libc::ELOOP,
        w::ERROR_SHARING_VIOLATION | w::ERROR_LOCK_VIOLATION | w::ERROR_PIPE_BUSY => libc::EBUSY,
        w::ERROR_INVALID_PARAMETER
        | w::ERROR_INVALID_DATA
        | w::ERROR_INSUFFICIENT_BUFFER
        | w::ERROR_SYMLINK_NOT_SUPPORTED => libc::EINVAL,
        w::ERROR_INVALID_FUNCTION => libc::EISDIR,
        w::ERROR_NOT_SUPPORTED => libc::ENOTSUP,
        w::ERROR_CRC
        | w::ERROR_GEN_FAILURE
        | w::ERROR_IO_DEVICE
        | w::ERROR_OPEN_FAILED
        | w::ERROR_DISK_CORRUPT => libc::EIO,
        _ => return None,
    })
}
