//! The store: its SQLite index and rows, the content-addressed files, integrity, reading a package back.

pub mod add_dir;
pub mod blob_files;
pub mod blob_modes;
pub mod digest;
pub mod index_db;
pub mod index_row;
pub mod integrity;
pub mod msgpackr;
pub mod read_package;
pub mod row_files;
pub mod store_handles;
