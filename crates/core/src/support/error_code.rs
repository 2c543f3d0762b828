//! The one way a failure of this crate says what JS is told about it.

use crate::os_error::FsSite;

/// A failure that reaches JS. `code()` is the full code JS gets in `err.code` (pnpm's
/// `ERR_PNPM_…` where pnpm has one, decided here and nowhere else) and `Display` its message;
/// `site` and `hint` add what Node's fs errors and pnpm's errors carry. The binding turns any of
/// them into a `NativeError` the same way (`NativeError::of`).
pub trait ErrorCode: std::error::Error {
    fn code(&self) -> &'static str;

    /// For a filesystem error: the failed call and its paths.
    fn site(&self) -> Option<FsSite> {
        None
    }

    /// pnpm's `hint`: what the user can do about it, where there is something.
    fn hint(&self) -> Option<&str> {
        None
    }
}
