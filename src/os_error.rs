//! Node-style names for OS errors. pnpm surfaces filesystem failures as `ERR_PNPM_<errno name>`
//! (`ERR_PNPM_ENOSPC`, `ERR_PNPM_EACCES`, …) and callers branch on them, so we keep the name.

use std::io;

/// The errno name Node would put in `err.code`, e.g. `"ENOENT"`.
pub fn errno_name(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EEXIST) => "EEXIST",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::EISDIR) => "EISDIR",
        Some(libc::ENOTEMPTY) => "ENOTEMPTY",
        Some(libc::ENOSPC) => "ENOSPC",
        Some(libc::EROFS) => "EROFS",
        Some(libc::EMFILE) => "EMFILE",
        Some(libc::ENFILE) => "ENFILE",
        Some(libc::EXDEV) => "EXDEV",
        Some(libc::EMLINK) => "EMLINK",
        Some(libc::ENAMETOOLONG) => "ENAMETOOLONG",
        Some(libc::ELOOP) => "ELOOP",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::EDQUOT) => "EDQUOT",
        Some(libc::EOPNOTSUPP) => "ENOTSUP",
        _ => "EIO",
    }
}

/// `"ENOENT: No such file or directory (os error 2)"`: the errno name first, as in Node.
pub fn describe(e: &io::Error) -> String {
    format!("{}: {e}", errno_name(e))
}
