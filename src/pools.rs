//! The named rayon pools. Extraction is CPU-bound (inflate, SHA-512) plus file creation, so its
//! pool has one thread per core; it is kept apart from rayon's global pool so that other work in
//! the process never competes with it. `CAS_NATIVE_EXTRACT_THREADS` overrides the size.

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
            .num_threads(threads_from_env("CAS_NATIVE_EXTRACT_THREADS", cores()))
            .thread_name(|i| format!("cas-extract-{i}"))
            .build()
            .expect("building the extraction thread pool")
    })
}
