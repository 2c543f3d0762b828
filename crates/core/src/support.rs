//! What every part shares: OS errors and their codes, thread pools, platform checks, timing,
//! panics caught on worker threads.

pub mod error_code;
pub mod os_error;
pub mod panics;
pub mod platform;
pub mod pools;
pub mod timing;
