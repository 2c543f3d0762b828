use napi_derive::napi;

use cas_native_core::error_code::ErrorCode;
use cas_native_core::os_error::FsSite;

/// A failure as data: `code` is pnpm's (`ERR_PNPM_…`) where pnpm has one.
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct NativeError {
    pub code: String,
    pub message: String,
    /// Integrity mismatches: the SRI string the caller expected.
    pub expected: Option<String>,
    /// Integrity mismatches: the SRI of what was received.
    pub found: Option<String>,
    /// Integrity mismatches: the hash algorithm.
    pub algorithm: Option<String>,
    /// pnpm's `hint` (e.g. for `ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE`).
    pub hint: Option<String>,
    /// Filesystem errors: the failed call and its paths, as Node's fs errors carry them.
    pub syscall: Option<String>,
    pub path: Option<String>,
    pub dest: Option<String>,
}

impl NativeError {
    /// A failure of the crate as JS sees it: the code, message, site and hint it decided.
    pub fn of(e: &impl ErrorCode) -> Self {
        let mut error = NativeError::new(e.code(), e.to_string()).at(e.site());
        error.hint = e.hint().map(str::to_string);
        error
    }

    /// A failure that is not one of the crate's errors (a panic: `task::panic_error`).
    pub(super) fn new(code: &'static str, message: impl Into<String>) -> Self {
        NativeError {
            code: code.into(),
            message: message.into(),
            ..Default::default()
        }
    }

    /// With the syscall and paths of a filesystem error, if it is one.
    fn at(mut self, site: Option<FsSite>) -> Self {
        if let Some(site) = site {
            self.syscall = Some(site.syscall);
            self.path = Some(site.path);
            self.dest = site.dest;
        }
        self
    }
}
