use std::path::Path;

use napi_derive::napi;

use super::error::NativeError;
use cas_native_core::{blob_files, store_handles};

/// Creates the store directory, `files/` and its 256 shard directories, as pnpm's
/// `initStoreDir` does. Does not create `index.db`. Returns the failure, if any, as data.
#[napi]
pub fn init_store_dir(store_dir: String) -> Option<NativeError> {
    blob_files::init_store_dir(Path::new(&store_dir))
        .err()
        .map(|e| NativeError::of(&e))
}

/// Commits every queued index write and closes all store-index connections (pnpm's
/// `PRAGMA optimize` + close). Stores reopen on next use.
#[napi]
pub fn close_stores() {
    store_handles::close_all();
}
