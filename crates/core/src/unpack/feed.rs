//! A tarball that arrives in pieces (a download): one side appends chunks as they come, the
//! other reads them as gzip [`Input`], waiting for more when it has caught up. Every byte is
//! kept, so that the integrity can be checked over exactly what arrived once the last one has,
//! and a member can be decoded again for an error message (`gzip::data_error`); compressed
//! bytes are what a whole-buffer caller held anyway, the inflated tar is what streaming spares.

use std::borrow::Cow;
use std::io::{self, BufRead, Read};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::gzip::{self, GzipError, Input};

/// Most bytes a reader copies out per refill.
const REFILL: usize = 256 * 1024;

#[derive(Default)]
pub struct Feed {
    state: Mutex<State>,
    arrived: Condvar,
}

#[derive(Default)]
struct State {
    bytes: Vec<u8>,
    ended: bool,
    aborted: bool,
}

impl Feed {
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    pub fn push(&self, chunk: &[u8]) {
        self.state().bytes.extend_from_slice(chunk);
        self.arrived.notify_all();
    }

    /// No more bytes will come: readers see the end of the input.
    pub fn end(&self) {
        self.state().ended = true;
        self.arrived.notify_all();
    }

    /// The download failed: readers get an error instead of more bytes.
    pub fn abort(&self) {
        self.state().aborted = true;
        self.arrived.notify_all();
    }

    /// How many bytes have arrived.
    pub fn received(&self) -> usize {
        self.state().bytes.len()
    }

    /// `f` of the bytes so far.
    pub fn peek<T>(&self, f: impl FnOnce(&[u8]) -> T) -> T {
        f(&self.state().bytes)
    }

    /// Waits for the end and hands over every byte (leaving none behind); fails when aborted,
    /// as a stream that ended early.
    pub fn take_all(&self) -> Result<Vec<u8>, GzipError> {
        let mut state = self
            .arrived
            .wait_while(self.state(), |s| !s.ended && !s.aborted)
            .unwrap_or_else(|e| e.into_inner());
        if state.aborted {
            return Err(gzip::read_error(aborted()));
        }
        Ok(std::mem::take(&mut state.bytes))
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain bytes and flags behind, still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn aborted() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "the download was aborted")
}

/// Reads a [`Feed`] from its start, blocking until bytes arrive.
pub struct FeedReader {
    feed: Arc<Feed>,
    buf: Vec<u8>,
    pos: usize,
    /// Feed offset of `buf[0]`.
    offset: usize,
}

impl FeedReader {
    pub fn new(feed: Arc<Feed>) -> Self {
        FeedReader {
            feed,
            buf: Vec::new(),
            pos: 0,
            offset: 0,
        }
    }
}

impl Read for FeedReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.fill_buf()?.read(out)?;
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for FeedReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.buf.len() {
            let next = self.offset + self.buf.len();
            let state = self
                .feed
                .arrived
                .wait_while(self.feed.state(), |s| {
                    s.bytes.len() == next && !s.ended && !s.aborted
                })
                .unwrap_or_else(|e| e.into_inner());
            if state.aborted {
                return Err(aborted());
            }
            let end = state.bytes.len().min(next + REFILL);
            self.buf.clear();
            self.buf.extend_from_slice(&state.bytes[next..end]);
            (self.offset, self.pos) = (next, 0);
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.buf.len());
    }
}

impl Input for FeedReader {
    fn since(&self, start: u64) -> Option<Cow<'_, [u8]>> {
        let state = self.feed.state();
        state
            .bytes
            .get(start as usize..)
            .map(|b| Cow::Owned(b.to_vec()))
    }
}

#[cfg(test)]
mod tests;
