//! The store's SQLite package index, `<storeDir>/index.db`, opened the way pnpm 11 opens it
//! (spec §2) so that pnpm 11, pnpm 12 and this addon can use one store at the same time.
//!
//! All writes of a process go through one writer thread per store that owns the only writable
//! connection: rows submitted while a transaction is committing are gathered into the next one
//! ("group commit"), so a thousand tarballs finishing together cost a few transactions, not a
//! thousand, and no extraction thread ever blocks on SQLite.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

/// A row as it is stored: the key pnpm computes and the msgpackr-encoded `PackageFilesIndex`.
pub type Row = (String, Vec<u8>);

/// Called on the writer thread once the rows it came with are committed (or failed).
pub type OnCommitted = Box<dyn FnOnce(Result<(), IndexError>) + Send>;

#[derive(Debug, Clone, PartialEq)]
pub struct IndexError {
    pub message: String,
}

impl std::fmt::Display for IndexError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for IndexError {}

impl From<rusqlite::Error> for IndexError {
    fn from(e: rusqlite::Error) -> Self {
        IndexError {
            message: format!("store index: {e}"),
        }
    }
}

impl From<std::io::Error> for IndexError {
    fn from(e: std::io::Error) -> Self {
        IndexError {
            message: format!("store index: {e}"),
        }
    }
}

/// pnpm retries `SQLITE_BUSY` (any extended variant) 100 times, 50 ms apart, on top of the
/// connection's own 5 s busy timeout: another pnpm process may hold a long write transaction.
const BUSY_RETRIES: u32 = 100;
const BUSY_PAUSE: Duration = Duration::from_millis(50);

/// Rows per transaction at most; bounds the time one commit holds SQLite's write lock, which
/// other processes sharing the store wait on.
const MAX_ROWS_PER_TRANSACTION: usize = 4096;

struct Writer {
    jobs: Sender<WriteJob>,
    thread: thread::JoinHandle<()>,
}

struct WriteJob {
    rows: Vec<Row>,
    on_committed: OnCommitted,
}

/// A store's index: a writer thread (started on first write) and a connection for reads.
pub struct StoreIndex {
    db_path: PathBuf,
    writer: Mutex<Option<Writer>>,
    reader: Mutex<Option<Connection>>,
}

impl StoreIndex {
    pub fn new(store_dir: &Path) -> Self {
        StoreIndex {
            // pnpm concatenates with '/', on every platform.
            db_path: PathBuf::from(format!("{}/index.db", store_dir.display())),
            writer: Mutex::new(None),
            reader: Mutex::new(None),
        }
    }

    /// Queues rows for the next transaction; `on_committed` runs once they are durable in the
    /// WAL (or failed). Opening the database happens on the writer thread too, so its errors
    /// arrive through `on_committed` like any other.
    pub fn submit(&self, rows: Vec<Row>, on_committed: OnCommitted) {
        let mut writer = self.writer.lock().unwrap();
        let writer = writer.get_or_insert_with(|| spawn_writer(self.db_path.clone()));
        if let Err(mpsc::SendError(job)) = writer.jobs.send(WriteJob { rows, on_committed }) {
            (job.on_committed)(Err(IndexError {
                message: "store index writer has stopped".into(),
            }));
        }
    }

    /// Writes rows and waits for the commit.
    pub fn write(&self, rows: Vec<Row>) -> Result<(), IndexError> {
        let (tx, rx) = mpsc::channel();
        self.submit(
            rows,
            Box::new(move |result| {
                let _ = tx.send(result);
            }),
        );
        rx.recv().unwrap_or_else(|_| {
            Err(IndexError {
                message: "store index writer has stopped".into(),
            })
        })
    }

    /// The stored bytes of one row, `None` when there is no row for `key`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, IndexError> {
        let mut reader = self.reader.lock().unwrap();
        if reader.is_none() {
            *reader = Some(open_writable(&self.db_path)?);
        }
        let conn = reader.as_ref().unwrap();
        with_busy_retry(|| {
            conn.prepare_cached("SELECT data FROM package_index WHERE key = ?")?
                .query_row([key], |row| row.get(0))
                .optional()
        })
        .map_err(IndexError::from)
    }

    /// Stops the writer after it committed everything queued, and closes the connections the
    /// way pnpm does (`PRAGMA optimize`, then close). The index reopens on next use.
    pub fn close(&self) {
        if let Some(writer) = self.writer.lock().unwrap().take() {
            // The writer drains every queued job before it sees the channel closed.
            drop(writer.jobs);
            let _ = writer.thread.join();
        }
        if let Some(conn) = self.reader.lock().unwrap().take() {
            let _ = conn.execute_batch("PRAGMA optimize");
        }
    }
}

fn spawn_writer(db_path: PathBuf) -> Writer {
    let (jobs, rx) = mpsc::channel();
    let thread = thread::Builder::new()
        .name("cas-index-writer".into())
        .spawn(move || run_writer(&db_path, rx))
        .expect("spawning the store index writer thread");
    Writer { jobs, thread }
}

fn run_writer(db_path: &Path, jobs: Receiver<WriteJob>) {
    let mut conn: Option<Connection> = None;
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        let mut row_count = batch[0].rows.len();
        while row_count < MAX_ROWS_PER_TRANSACTION {
            match jobs.try_recv() {
                Ok(job) => {
                    row_count += job.rows.len();
                    batch.push(job);
                }
                Err(_) => break,
            }
        }
        let result = match &conn {
            Some(c) => commit(c, &batch),
            None => open_writable(db_path).and_then(|c| {
                let r = commit(&c, &batch);
                conn = Some(c);
                r
            }),
        };
        for job in batch {
            (job.on_committed)(result.clone());
        }
    }
    if let Some(c) = conn {
        let _ = c.execute_batch("PRAGMA optimize");
    }
}

/// One statement without a transaction for a single row, else `BEGIN IMMEDIATE` … `COMMIT`,
/// retried whole on `SQLITE_BUSY` as pnpm's `setRawMany` does.
fn commit(conn: &Connection, batch: &[WriteJob]) -> Result<(), IndexError> {
    let mut rows = batch.iter().flat_map(|job| job.rows.iter());
    let total: usize = batch.iter().map(|job| job.rows.len()).sum();
    if total == 0 {
        return Ok(());
    }
    if total == 1 {
        let (key, data) = rows.next().unwrap();
        return with_busy_retry(|| insert(conn, key, data)).map_err(IndexError::from);
    }
    with_busy_retry(|| {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let result = batch
            .iter()
            .flat_map(|job| job.rows.iter())
            .try_for_each(|(key, data)| insert(conn, key, data))
            .and_then(|()| conn.execute_batch("COMMIT"));
        if result.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        result
    })
    .map_err(IndexError::from)
}

fn insert(conn: &Connection, key: &str, data: &[u8]) -> rusqlite::Result<()> {
    conn.prepare_cached("INSERT OR REPLACE INTO package_index (key, data) VALUES (?, ?)")?
        .execute(params![key, data])
        .map(drop)
}

fn is_busy(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
}

fn with_busy_retry<T>(mut op: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let mut attempt = 0;
    loop {
        match op() {
            Err(e) if is_busy(&e) && attempt < BUSY_RETRIES => {
                attempt += 1;
                thread::sleep(BUSY_PAUSE);
            }
            other => return other,
        }
    }
}

/// pnpm's writable open: busy timeout first (so it covers the rest), then WAL and its pragmas
/// and the table, all under the busy retry.
fn open_writable(db_path: &Path) -> Result<Connection, IndexError> {
    if let Some(dir) = db_path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let conn = Connection::open_with_flags(
        db_path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(Duration::from_millis(5000))?;
    with_busy_retry(|| {
        conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        conn.execute_batch(
            "PRAGMA synchronous=NORMAL;
             PRAGMA mmap_size=536870912;
             PRAGMA cache_size=-32000;
             PRAGMA temp_store=MEMORY;
             PRAGMA wal_autocheckpoint=10000;
             CREATE TABLE IF NOT EXISTS package_index (key TEXT PRIMARY KEY, data BLOB NOT NULL) WITHOUT ROWID;",
        )
    })?;
    Ok(conn)
}

#[cfg(test)]
mod tests;
