//! Tarballs into the store: gunzip, the tar walk, streaming writers and their feed, and the
//! threads a whole extraction runs on (`writer`).

pub mod extract;
pub mod feed;
pub mod gzip;
pub mod streaming;
pub mod tarball;
pub mod writer;
