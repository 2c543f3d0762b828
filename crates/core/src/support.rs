//! What every part shares: OS errors and their codes, thread pools, platform checks, timing.

pub mod error_code;
pub mod os_error;
pub mod platform;
pub mod pools;
pub mod timing;
