//! `@cas/native`'s core: pnpm's content-addressable store work done in plain Rust.
//!
//! The modules below know nothing of Node; each has its own tests. The napi crate at the
//! repository root (`cas-native`) is the only napi-aware layer and does nothing but convert
//! arguments, results and errors, which the crate boundary keeps it to.
#![deny(clippy::all)]

pub mod formats;
pub mod layout;
pub mod store;
pub mod support;
pub mod unpack;
// Every module by its own name too, as before the folders.
pub use formats::{js, json, manifest, value, yaml_document};
pub use layout::{dependency_links, hard_link_dir, import, link, link_stored, symlink_entry};
pub use store::{
    add_dir, blob_files, blob_modes, digest, index_db, index_row, integrity, msgpackr,
    read_package, row_files, store_handles,
};
pub use support::{error_code, os_error, panics, platform, pools, timing};
pub use unpack::{extract, feed, gzip, streaming, tarball, writer};

#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
#[cfg(test)]
mod test_support;
