//! `@cas/native`'s core: pnpm's content-addressable store work done in plain Rust.
//!
//! The modules below know nothing of Node; each has its own tests. The napi crate at the
//! repository root (`cas-native`) is the only napi-aware layer and does nothing but convert
//! arguments, results and errors, which the crate boundary keeps it to.
#![deny(clippy::all)]

pub mod add_dir;
pub mod blob_files;
pub mod dependency_links;
pub mod digest;
pub mod error_code;
pub mod extract;
pub mod feed;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod gzip;
pub mod hard_link_dir;
pub mod import;
pub mod index_db;
pub mod index_row;
pub mod integrity;
pub mod js;
pub mod json;
pub mod link;
pub mod link_stored;
pub mod manifest;
pub mod msgpackr;
pub mod os_error;
pub mod platform;
pub mod pools;
pub mod read_package;
pub mod row_files;
pub mod store_handles;
pub mod streaming;
pub mod symlink_entry;
pub mod tarball;
#[cfg(test)]
mod test_support;
pub mod timing;
pub mod value;
pub mod yaml_document;
