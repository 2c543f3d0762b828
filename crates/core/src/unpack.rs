//! Tarballs into the store: gunzip, the tar walk, streaming writers and their feed.

pub mod extract;
pub mod feed;
pub mod gzip;
pub mod streaming;
pub mod tarball;
