use napi_derive::napi;

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
}

impl NativeError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        NativeError {
            code: code.into(),
            message: message.into(),
            ..Default::default()
        }
    }
}
