//! Access to `<storeDir>/index.db`, the store's SQLite package index: rows in and out as bytes.
//!
//! Opened the way pnpm 11 opens it (docs/store-format.md, "The index database") so that pnpm 11,
//! pnpm 12 and this addon can use one store at the same time.
//!
//! All writes of a process go through one writer thread per store that owns the only writable
//! connection: rows submitted while a transaction is committing are gathered into the next one
//! ("group commit"), so a thousand tarballs finishing together cost a few transactions, not a
//! thousand, and no extraction thread ever blocks on SQLite.

use std::collections::{HashMap, HashSet};
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

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct IndexError {
    pub message: String,
}

/// pnpm's code for a write to an index opened under `frozenStore`.
pub const FROZEN_STORE_WRITE: &str = "ERR_PNPM_FROZEN_STORE_WRITE";

/// pnpm's message for it (its `ReadOnlyStoreIndex` write methods all throw this).
pub const FROZEN_STORE_WRITE_MESSAGE: &str = "Cannot write to the store index: the store is \
     read-only because frozenStore is enabled, and it is missing content this install needs";

impl crate::error_code::ErrorCode for IndexError {
    /// `ERR_PNPM_FROZEN_STORE_WRITE` for a write to a frozen index, else the code Node gives
    /// every SQLite error (`ERR_SQLITE_ERROR`, prefixed).
    fn code(&self) -> &'static str {
        if self.message == FROZEN_STORE_WRITE_MESSAGE {
            FROZEN_STORE_WRITE
        } else {
            "ERR_PNPM_ERR_SQLITE_ERROR"
        }
    }
}

impl IndexError {
    fn frozen_write() -> Self {
        IndexError {
            message: FROZEN_STORE_WRITE_MESSAGE.into(),
        }
    }
}

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

/// At most this many keys per `WHERE key IN (…)` statement. 999 is SQLite's historical
/// `SQLITE_MAX_VARIABLE_NUMBER`: the statement then works with any SQLite build a store may meet,
/// every full chunk has the same SQL text (so one cached prepared statement serves them all), and
/// a lockfile's worth of keys (~1350) is two statements. The alternatives were rejected: one
/// `json_each(?)` statement needs the keys JSON-encoded and leaves the plan to the JSON table
/// function, and `carray` is not in rusqlite's bundled build without an extra feature.
pub const KEYS_PER_STATEMENT: usize = 999;

/// A store's index: a writer thread (started on first write) and a connection for reads.
pub struct StoreIndex {
    db_path: PathBuf,
    /// Opened for `frozenStore`: read-only and immutable, every write fails.
    frozen: bool,
    writer: Mutex<Option<Writer>>,
    reader: Mutex<Option<Connection>>,
}

impl StoreIndex {
    pub fn new(store_dir: &Path) -> Self {
        StoreIndex {
            // pnpm concatenates with '/', on every platform.
            db_path: PathBuf::from(format!("{}/index.db", store_dir.display())),
            frozen: false,
            writer: Mutex::new(None),
            reader: Mutex::new(None),
        }
    }

    /// The index of a `frozenStore`: opened read-only with SQLite's `immutable=1`
    /// URI parameter, so no `-wal`/`-shm` file is created and a read-only directory works; no
    /// pragma, no `CREATE TABLE`. Every write fails with `ERR_PNPM_FROZEN_STORE_WRITE`.
    pub fn new_frozen(store_dir: &Path) -> Self {
        StoreIndex {
            frozen: true,
            ..StoreIndex::new(store_dir)
        }
    }

    /// Queues rows for the next transaction; `on_committed` runs once they are durable in the
    /// WAL (or failed). Opening the database happens on the writer thread too, so its errors
    /// arrive through `on_committed` like any other.
    pub fn submit(&self, rows: Vec<Row>, on_committed: OnCommitted) {
        if self.frozen {
            return on_committed(Err(IndexError::frozen_write()));
        }
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
        self.with_reader(|conn| {
            with_busy_retry(|| {
                conn.prepare_cached("SELECT data FROM package_index WHERE key = ?")?
                    .query_row([key], |row| row.get(0))
                    .optional()
            })
        })
    }

    /// The stored bytes of many rows, in the order of `keys` (`None` where there is no row; a
    /// key given twice gets its row twice). See [`StoreIndex::for_each_row`].
    pub fn get_many(&self, keys: &[&str]) -> Result<Vec<Option<Vec<u8>>>, IndexError> {
        let mut rows = vec![None; keys.len()];
        self.for_each_row(keys, |positions, data| {
            for &i in &positions[1..] {
                rows[i] = Some(data.clone());
            }
            rows[positions[0]] = Some(data);
        })?;
        Ok(rows)
    }

    /// Hands each stored row of `keys` to `on_row` as soon as SQLite produced it, with the
    /// positions of its key in `keys` (several if the key repeats); keys without a row are not
    /// reported. One `WHERE key IN (…)` statement per [`KEYS_PER_STATEMENT`] keys, or one scan
    /// of the table when the keys are a large part of it (see `scan_is_cheaper`), all inside one
    /// read transaction, so the rows come from one snapshot of the database even while other
    /// connections or processes commit. `on_row` runs while the read connection is held: it
    /// should hand the row off (e.g. spawn its decoding), not process it.
    pub fn for_each_row(
        &self,
        keys: &[&str],
        mut on_row: impl FnMut(&[usize], Vec<u8>),
    ) -> Result<(), IndexError> {
        if keys.is_empty() {
            return Ok(());
        }
        let mut positions: HashMap<&str, Vec<usize>> = HashMap::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            positions.entry(key).or_default().push(i);
        }
        // Keys whose row was handed over: a retry after SQLITE_BUSY does not report them twice.
        let mut delivered: HashSet<&str> = HashSet::with_capacity(keys.len());
        self.with_reader(|conn| {
            with_busy_retry(|| {
                // A deferred read transaction: the snapshot is taken at the first SELECT and
                // kept until COMMIT. It never takes the write lock.
                conn.execute_batch("BEGIN")?;
                let mut deliver = |rows: &mut rusqlite::Rows| -> rusqlite::Result<()> {
                    while let Some(row) = rows.next()? {
                        let key = row.get_ref(0)?.as_str()?;
                        if let Some((&key, at)) = positions.get_key_value(key) {
                            if delivered.insert(key) {
                                // The data column (and its overflow pages) is read only here.
                                on_row(at, row.get(1)?);
                            }
                        }
                    }
                    Ok(())
                };
                // No `?` between BEGIN and COMMIT: the transaction must end whatever happens.
                let result = if scan_is_cheaper(conn, positions.len()) {
                    conn.prepare_cached("SELECT key, data FROM package_index")
                        .and_then(|mut stmt| deliver(&mut stmt.query([])?))
                } else {
                    keys.chunks(KEYS_PER_STATEMENT).try_for_each(|chunk| {
                        let mut stmt = conn.prepare_cached(&in_query(chunk.len()))?;
                        let mut rows = stmt.query(rusqlite::params_from_iter(chunk.iter()))?;
                        deliver(&mut rows)
                    })
                };
                let _ = conn.execute_batch("COMMIT");
                result
            })
        })
    }

    /// Runs `op` on the store's read connection, opening it on first use: a writable open with
    /// pnpm's pragmas (which, as in pnpm, creates an empty `index.db` on a new store), or the
    /// read-only immutable open for a frozen store. One connection per store serves every read
    /// of the process; SQLite statements are microseconds, so calls simply take turns.
    fn with_reader<T>(
        &self,
        op: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, IndexError> {
        let mut reader = self.reader.lock().unwrap_or_else(|e| e.into_inner());
        if reader.is_none() {
            *reader = Some(if self.frozen {
                open_immutable(&self.db_path)?
            } else {
                open_writable(&self.db_path)?
            });
        }
        op(reader.as_ref().unwrap()).map_err(IndexError::from)
    }

    /// Stops the writer after it committed everything queued, and closes the connections the
    /// way pnpm does (`PRAGMA optimize`, then close). The index reopens on next use.
    pub fn close(&self) {
        if let Some(writer) = self.writer.lock().unwrap().take() {
            // The writer drains every queued job before it sees the channel closed.
            drop(writer.jobs);
            let _ = writer.thread.join();
        }
        if let Some(conn) = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // pnpm's read-only index skips `PRAGMA optimize` (it could not write the stats).
            if !self.frozen {
                let _ = conn.execute_batch("PRAGMA optimize");
            }
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

/// Whether reading every row once beats seeking `wanted` keys: when they are a quarter of the
/// table or more. Seeks into pnpm's `WITHOUT ROWID` table compare keys against whole records,
/// and to compare against a record that spills into overflow pages SQLite first copies all of
/// it, so a lockfile's worth of seeks past the big rows (core-js: ~600 KB) cost more than a
/// scan that reads only the key of each row and the data of the wanted ones (measured on the
/// benchmark store: 22 ms of seeks against 9.5 ms for the scan). The row count comes from
/// `sqlite_stat1` (pnpm's `PRAGMA optimize` keeps it), else from `count(*)`, which walks the
/// leaf pages without touching overflow pages.
fn scan_is_cheaper(conn: &Connection, wanted: usize) -> bool {
    const MIN_KEYS: usize = 64;
    if wanted < MIN_KEYS {
        return false;
    }
    let from_stats = conn
        .query_row(
            "SELECT stat FROM sqlite_stat1 WHERE tbl = 'package_index' AND idx = 'package_index'",
            [],
            |row| row.get::<_, String>(0),
        )
        .ok()
        .and_then(|stat| stat.split(' ').next()?.parse::<usize>().ok());
    let rows = match from_stats {
        Some(rows) => rows,
        None => match conn.query_row("SELECT count(*) FROM package_index", [], |row| {
            row.get::<_, i64>(0)
        }) {
            Ok(rows) => rows.max(0) as usize,
            Err(_) => return false,
        },
    };
    wanted.saturating_mul(4) >= rows
}

/// `SELECT key, data FROM package_index WHERE key IN (?,?,…)` with `n` placeholders.
fn in_query(n: usize) -> String {
    let mut sql = String::with_capacity(64 + 2 * n);
    sql.push_str("SELECT key, data FROM package_index WHERE key IN (");
    for i in 0..n {
        sql.push_str(if i == 0 { "?" } else { ",?" });
    }
    sql.push(')');
    sql
}

/// pnpm's `ReadOnlyStoreIndex` open: `file:<absolute path>?immutable=1`, read-only. SQLite then
/// takes no locks and creates no `-wal`/`-shm` files, which is what lets a frozen store live on
/// a read-only directory or file system. A missing `index.db` fails here (pnpm fails at its
/// first statement instead; both are SQLite errors).
fn open_immutable(db_path: &Path) -> Result<Connection, IndexError> {
    let absolute = if db_path.is_absolute() {
        db_path.to_path_buf()
    } else {
        std::env::current_dir()?.join(db_path)
    };
    let uri = format!("file:{}?immutable=1", uri_path(&absolute.to_string_lossy()));
    let conn = Connection::open_with_flags(
        uri,
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    Ok(conn)
}

/// Percent-encodes a path for a `file:` URI: everything but unreserved characters and `/`.
/// On Windows the drive letter gets the leading `/` a file URL has (`file:/C:/…`).
fn uri_path(path: &str) -> String {
    let path = path.replace('\\', "/");
    let mut out = String::with_capacity(path.len() + 8);
    if !path.starts_with('/') {
        out.push('/');
    }
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            b':' if cfg!(windows) => out.push(':'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests;
