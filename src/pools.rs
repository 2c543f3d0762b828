//! The named rayon pools, kept apart from rayon's global pool so that other work in the process
//! never competes with them. Extraction is CPU-bound (inflate, SHA-512) plus file creation, which
//! sometimes blocks in the kernel (inode allocation), so its pool has one thread more than there
//! are cores: measured on the 2-core benchmark machine, interleaved, 3 threads extracted the
//! whole corpus in 2.21 s vs 2.35 s with 2 (loaded machine) and ~1.5 s vs ~1.8 s (quiet), see
//! benchmark/RESULTS.md. `CAS_NATIVE_EXTRACT_THREADS` overrides the size.

use std::sync::OnceLock;

use rayon::{ThreadPool, ThreadPoolBuilder};

fn threads_from_env(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn extraction_pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPoolBuilder::new()
            .num_threads(threads_from_env("CAS_NATIVE_EXTRACT_THREADS", cores() + 1))
            .thread_name(|i| format!("cas-extract-{i}"))
            .build()
            .expect("building the extraction thread pool")
    })
}

/// The linking pool. Linking is syscall-bound (mkdir, link, symlink: 10-30 us of kernel time
/// each, no user-space work to speak of), so it gets its own pool, apart from extraction's: a
/// burst of tarballs must not stall a link batch. Default 2 threads per core (measured on the
/// 2-core benchmark machine, see benchmark/RESULTS.md); `CAS_NATIVE_LINK_THREADS` overrides.
pub fn link_pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        ThreadPoolBuilder::new()
            .num_threads(threads_from_env("CAS_NATIVE_LINK_THREADS", 2 * cores()))
            .thread_name(|i| format!("cas-link-{i}"))
            .build()
            .expect("building the link thread pool")
    })
}
