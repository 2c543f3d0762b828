//! A tarball into the store on threads, start to finish: a whole one on the extraction pool
//! ([`spawn_extract`]), or one arriving chunk by chunk ([`TarballWriter`]), streamed on a
//! thread of its own once it is big. Either ends with its row used as [`RowUse`] says and
//! `done` called once, on whichever thread finished; a panic on the way is reported as
//! [`JobError::Panic`], never lost with its thread.

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::extract::{self, ExtractError, ExtractRequest, Extracted, Indexed, RowUse};
use crate::feed::Feed;
use crate::index_db::IndexError;
use crate::manifest::Gypfile;
use crate::panics::catch_panic;
use crate::pools;
use crate::store_handles::{self, Store};
use crate::timing::ms_since;

/// The task a panic names (`CAS_NATIVE_INJECT_PANIC=extracting` injects one).
const TASK: &str = "extracting";

/// One tarball's extraction, all but its bytes, owned so that it can move to another thread.
#[derive(Debug, Clone, Default)]
pub struct Job {
    pub store_dir: PathBuf,
    /// pnpm's `frozenStore`: the store's index is opened read-only and refuses the row.
    pub frozen_store: bool,
    /// The row's index key (pnpm's `filesIndexFile`).
    pub key: String,
    pub row_use: RowUse,
    /// The rest as in [`ExtractRequest`].
    pub integrity: Option<String>,
    pub ignore_file_pattern: Option<String>,
    pub ignore_file_pattern_error: Option<String>,
    pub append_manifest: Option<String>,
    pub max_unpacked_size: Option<u64>,
    /// [`extract::stream_above`], read by the caller on the thread that owns the environment.
    pub stream_above: u64,
    pub gypfile: Gypfile,
}

impl Job {
    fn request<'a>(&'a self, tarball: &'a [u8]) -> ExtractRequest<'a> {
        ExtractRequest {
            tarball,
            integrity: self.integrity.as_deref(),
            ignore_file_pattern: self.ignore_file_pattern.as_deref(),
            ignore_file_pattern_error: self.ignore_file_pattern_error.as_deref(),
            append_manifest: self.append_manifest.as_deref(),
            max_unpacked_size: self.max_unpacked_size,
            stream_above: Some(self.stream_above),
            gypfile: self.gypfile,
        }
    }

    fn open_store(&self) -> Arc<Store> {
        store_handles::open_as(&self.store_dir, self.frozen_store)
    }
}

/// Why a job ended without its row.
#[derive(Debug)]
pub enum JobError {
    Extract(ExtractError),
    Index(IndexError),
    /// A bug in this crate: the message of a panic (see [`catch_panic`]).
    Panic(String),
}

/// A job whose row went where its [`RowUse`] said.
#[derive(Debug)]
pub struct Finished {
    pub indexed: Indexed,
    /// Waiting for a thread of the extraction pool (0 for a streamed tarball).
    pub queued_ms: f64,
}

pub type JobResult = Result<Finished, JobError>;

/// An extraction's end: its result, or the message of a panic.
type Outcome = Result<Result<Extracted, ExtractError>, String>;

/// Extracts `tarball` on the extraction pool (ranked by its size, longest first), then writes
/// its row and calls `done`. The tarball is dropped as soon as it has been read.
pub fn spawn_extract<T>(job: Job, tarball: T, done: impl FnOnce(JobResult) + Send + 'static)
where
    T: AsRef<[u8]> + Send + 'static,
{
    let submitted = Instant::now();
    let work = extract::estimated_work(tarball.as_ref());
    pools::spawn_extraction(work, move || {
        let queued_ms = ms_since(submitted);
        let store = job.open_store();
        let outcome = catch_panic(TASK, || {
            extract::extract(&store.cas, &job.request(tarball.as_ref()))
        });
        drop(tarball);
        finish(&store, job, outcome, queued_ms, done);
    });
}

/// A tarball written chunk by chunk as it downloads ([`write`](Self::write), then
/// [`end`](Self::end) or [`abort`](Self::abort)). A small one is extracted at its end, from the
/// whole buffer, as [`spawn_extract`] does; once more than `stream_above / 32` bytes of a
/// gzip'd one have arrived ([`extract::streams_while_fed`]), a thread of its own streams it
/// while the rest downloads. That thread's reads wait for the network, so it stays off the
/// extraction pool. Dropped without `end`, it aborts: its streaming thread would otherwise wait
/// for more bytes forever.
pub struct TarballWriter {
    job: Job,
    feed: Arc<Feed>,
    streaming: Option<JoinHandle<Outcome>>,
    ended: bool,
}

impl TarballWriter {
    pub fn new(job: Job) -> Self {
        TarballWriter {
            job,
            feed: Feed::new(),
            streaming: None,
            ended: false,
        }
    }

    /// Appends a chunk (copied). Ignored after `end` or `abort`.
    pub fn write(&mut self, chunk: &[u8]) {
        if self.ended {
            return;
        }
        self.feed.push(chunk);
        if self.streaming.is_none() && extract::streams_while_fed(&self.feed, self.job.stream_above)
        {
            let (job, feed) = (self.job.clone(), self.feed.clone());
            self.streaming = Some(std::thread::spawn(move || {
                let store = job.open_store();
                catch_panic(TASK, || {
                    extract::extract_fed(&store.cas, &job.request(&[]), feed)
                })
            }));
        }
    }

    /// No more chunks: the extraction finishes, its row is written, and `done` is called.
    pub fn end(&mut self, done: impl FnOnce(JobResult) + Send + 'static) {
        self.ended = true;
        self.feed.end();
        let job = self.job.clone();
        match self.streaming.take() {
            // Streamed: its thread finishes the tail and then this one commits the row, neither
            // queued behind the pool's waiting extractions nor holding one of its threads while
            // it waits.
            Some(thread) => {
                std::thread::spawn(move || {
                    // catch_panic inside the thread already turned a panic into an Err.
                    let outcome = thread
                        .join()
                        .unwrap_or_else(|_| Err(format!("internal error while {TASK}")));
                    finish(&job.open_store(), job, outcome, 0.0, done);
                });
            }
            // The whole tarball waits for the pool, ranked by its size like any extraction.
            None => {
                let feed = self.feed.clone();
                let submitted = Instant::now();
                let work = self.feed.peek(extract::estimated_work);
                pools::spawn_extraction(work, move || {
                    let queued_ms = ms_since(submitted);
                    let store = job.open_store();
                    let outcome = catch_panic(TASK, || {
                        let tarball = feed.take_all().map_err(ExtractError::Gzip)?;
                        extract::extract(&store.cas, &job.request(&tarball))
                    });
                    finish(&store, job, outcome, queued_ms, done);
                });
            }
        }
    }

    /// The download failed: a streaming extraction stops (writing no row), later calls are
    /// ignored, and `end` is not to be called. After `end` it does nothing: the tarball is
    /// whole, and a caller's cleanup must not fail it.
    pub fn abort(&mut self) {
        if !self.ended {
            self.ended = true;
            self.feed.abort();
        }
    }
}

impl Drop for TarballWriter {
    fn drop(&mut self) {
        self.abort();
    }
}

/// Hands a finished extraction on to [`extract::write_row`] and `done`.
fn finish(
    store: &Store,
    job: Job,
    outcome: Outcome,
    queued_ms: f64,
    done: impl FnOnce(JobResult) + Send + 'static,
) {
    let extracted = match outcome {
        Ok(Ok(extracted)) => extracted,
        Ok(Err(e)) => return done(Err(JobError::Extract(e))),
        Err(panic) => return done(Err(JobError::Panic(panic))),
    };
    extract::write_row(store, job.key, extracted, job.row_use, move |indexed| {
        done(
            indexed
                .map(|indexed| Finished { indexed, queued_ms })
                .map_err(JobError::Index),
        )
    });
}

#[cfg(test)]
mod tests;
