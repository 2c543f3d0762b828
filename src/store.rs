//! One handle per store directory, shared by every call in the process: pnpm resolves many
//! packages into the same store at once, and they must share the blob memo and the single index
//! writer instead of each opening their own.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::cas::Cas;
use crate::store_index::StoreIndex;

pub struct Store {
    pub dir: PathBuf,
    pub cas: Cas,
    pub index: StoreIndex,
}

fn registry() -> &'static Mutex<HashMap<PathBuf, Arc<Store>>> {
    static STORES: OnceLock<Mutex<HashMap<PathBuf, Arc<Store>>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

/// The handle for `dir`, created on first use. Nothing touches the disk until it is used.
pub fn open(dir: &Path) -> Arc<Store> {
    registry()
        .lock()
        .unwrap()
        .entry(dir.to_path_buf())
        .or_insert_with(|| {
            Arc::new(Store {
                dir: dir.to_path_buf(),
                cas: Cas::new(dir),
                index: StoreIndex::new(dir),
            })
        })
        .clone()
}

fn frozen_registry() -> &'static Mutex<HashMap<PathBuf, Arc<Store>>> {
    static STORES: OnceLock<Mutex<HashMap<PathBuf, Arc<Store>>>> = OnceLock::new();
    STORES.get_or_init(Default::default)
}

/// The `frozenStore` handle for `dir`: its index is opened read-only and immutable and refuses
/// writes. Kept apart from the writable handle of the same directory, as pnpm keeps them apart
/// (an immutable connection must not be used where writes are expected, and vice versa).
pub fn open_frozen(dir: &Path) -> Arc<Store> {
    frozen_registry()
        .lock()
        .unwrap()
        .entry(dir.to_path_buf())
        .or_insert_with(|| {
            Arc::new(Store {
                dir: dir.to_path_buf(),
                cas: Cas::new(dir),
                index: StoreIndex::new_frozen(dir),
            })
        })
        .clone()
}

/// Commits every queued index write and closes every store's connections; used when pnpm
/// finishes its workers, so the WAL is checkpointed as pnpm's own close would.
pub fn close_all() {
    let mut stores: Vec<_> = registry().lock().unwrap().drain().map(|(_, s)| s).collect();
    stores.extend(frozen_registry().lock().unwrap().drain().map(|(_, s)| s));
    for store in stores {
        store.index.close();
    }
}
