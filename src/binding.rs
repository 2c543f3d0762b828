//! The napi layer: converts JS arguments into the plain Rust requests of `cas-native-core`
//! (`crates/core`) and their results back, nothing else. Lint exceptions napi's macros force
//! stay in here.
//!
//! Failures cross the boundary as data (`{ error: { code, message, … } }`) rather than as
//! rejected promises: napi errors can carry only a message and a status, while pnpm's callers
//! branch on `code` and on extra fields such as `expected`/`found`; the TypeScript layer turns
//! the data into proper `Error` objects.

// napi-derive registers exports only outside `cfg(test)`, so unit-test builds see them unused.
#![cfg_attr(test, allow(dead_code))]

mod add_dir;
mod error;
mod extract_tarball;
mod link;
mod link_stored;
mod read_pkg;
mod store_dir;
mod task;
mod yaml;
