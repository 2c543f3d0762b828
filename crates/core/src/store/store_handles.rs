//! Open stores: one handle (blob files plus `index.db`) per store directory.
//!
//! The handle is shared by every call in the process: pnpm resolves many
//! packages into the same store at once, and they must share the blob memo and the single index
//! writer instead of each opening their own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::blob_files::Cas;
use crate::index_db::StoreIndex;

pub struct Store {
    pub dir: PathBuf,
    pub cas: Cas,
    pub index: StoreIndex,
}

/// Handles by directory and mode: a frozen (read-only, immutable) handle and a writable one for
/// the same directory are distinct, as pnpm keeps them apart (an immutable connection must not
/// be used where writes are expected, and vice versa).
type Registry = Mutex<HashMap<(PathBuf, bool), Arc<Store>>>;

fn registry() -> &'static Registry {
    static STORES: OnceLock<Registry> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

fn handle(dir: &Path, frozen: bool) -> Arc<Store> {
    registry()
        .lock()
        .unwrap()
        .entry((dir.to_path_buf(), frozen))
        .or_insert_with(|| {
            Arc::new(Store {
                dir: dir.to_path_buf(),
                cas: Cas::new(dir),
                index: if frozen {
                    StoreIndex::new_frozen(dir)
                } else {
                    StoreIndex::new(dir)
                },
            })
        })
        .clone()
}

/// The handle for `dir`, created on first use. Nothing touches the disk until it is used.
pub fn open(dir: &Path) -> Arc<Store> {
    handle(dir, false)
}

/// [`open`], or with `frozen` (pnpm's `frozenStore`) the handle whose index is opened read-only
/// and immutable and refuses writes.
pub fn open_as(dir: &Path, frozen: bool) -> Arc<Store> {
    handle(dir, frozen)
}

/// Commits every queued index write and closes every store's connections; used when pnpm
/// finishes its workers, so the WAL is checkpointed as pnpm's own close would.
pub fn close_all() {
    let stores: Vec<_> = registry().lock().unwrap().drain().map(|(_, s)| s).collect();
    for store in stores {
        store.index.close();
    }
}
