use napi_derive::napi;

use crate::os_error::{FsSite, PathError};

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
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        NativeError {
            code: code.into(),
            message: message.into(),
            ..Default::default()
        }
    }

    /// With the syscall and paths of a filesystem error, if it is one.
    pub fn at(mut self, site: Option<FsSite>) -> Self {
        if let Some(site) = site {
            self.syscall = Some(site.syscall);
            self.path = Some(site.path);
            self.dest = site.dest;
        }
        self
    }
}

impl From<&PathError> for NativeError {
    fn from(e: &PathError) -> Self {
        NativeError::new(e.code(), e.to_string()).at(Some(e.site.clone()))
    }
}
