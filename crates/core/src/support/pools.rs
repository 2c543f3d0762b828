//! The named rayon pools, kept apart from rayon's global pool so that other work in the process
//! never competes with them. Extraction is CPU-bound (inflate, SHA-512) plus file creation, which
//! sometimes blocks in the kernel (inode allocation), so its pool has one thread more than there
//! are cores: measured on the 2-core benchmark machine, interleaved, 3 threads extracted the
//! whole corpus in 2.21 s vs 2.35 s with 2 (loaded machine) and ~1.5 s vs ~1.8 s (quiet), see
//! benchmark/RESULTS.md. `CAS_NATIVE_EXTRACT_THREADS` overrides the size.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

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

/// A job waiting for the extraction pool, ordered by its estimated work.
struct Waiting {
    work: u64,
    /// Submission order: among equal estimates, first come first served.
    seq: std::cmp::Reverse<u64>,
    job: Box<dyn FnOnce() + Send>,
}

impl PartialEq for Waiting {
    fn eq(&self, other: &Self) -> bool {
        (self.work, self.seq) == (other.work, other.seq)
    }
}

impl Eq for Waiting {}

impl PartialOrd for Waiting {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiting {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.work, self.seq).cmp(&(other.work, other.seq))
    }
}

/// Runs `job` on the extraction pool, longest job first: when many extractions wait for a
/// thread (an install submits hundreds at once), the one with the most estimated `work` (say,
/// inflated bytes) starts next, so that a big package does not start last and run alone while
/// the other threads sit idle. Every spawn runs whichever waiting job is biggest at that moment.
pub fn spawn_extraction(work: u64, job: impl FnOnce() + Send + 'static) {
    static WAITING: Mutex<BinaryHeap<Waiting>> = Mutex::new(BinaryHeap::new());
    WAITING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Waiting::new(work, job));
    extraction_pool().spawn(|| {
        let next = WAITING.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(next) = next {
            (next.job)();
        }
    });
}

impl Waiting {
    fn new(work: u64, job: impl FnOnce() + Send + 'static) -> Self {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        Waiting {
            work,
            seq: std::cmp::Reverse(SEQ.fetch_add(1, Ordering::Relaxed)),
            job: Box::new(job),
        }
    }
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

#[cfg(test)]
mod tests;
