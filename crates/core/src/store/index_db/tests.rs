use super::*;

fn index() -> (tempfile::TempDir, StoreIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = StoreIndex::new(&dir.path().join("v11"));
    (dir, index)
}

#[test]
fn rows_written_read_back() {
    let (_dir, index) = index();
    index
        .write(vec![("a\tpkg@1.0.0".into(), vec![1, 2, 3])])
        .unwrap();
    index
        .write(vec![("b".into(), vec![4]), ("c".into(), vec![5])])
        .unwrap();
    assert_eq!(index.get("a\tpkg@1.0.0").unwrap(), Some(vec![1, 2, 3]));
    assert_eq!(index.get("c").unwrap(), Some(vec![5]));
    assert_eq!(index.get("missing").unwrap(), None);
}

#[test]
fn schema_and_journal_mode_are_pnpms() {
    let (dir, index) = index();
    index.write(vec![("k".into(), vec![0xc0])]).unwrap();
    let conn = Connection::open(dir.path().join("v11/index.db")).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let (key_type, data_type): (String, String) = conn
        .query_row(
            "SELECT typeof(key), typeof(data) FROM package_index",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((key_type.as_str(), data_type.as_str()), ("text", "blob"));
}

#[test]
fn concurrent_submitters_all_get_their_commit() {
    let (_dir, index) = index();
    thread::scope(|s| {
        for t in 0..8 {
            let index = &index;
            s.spawn(move || {
                for i in 0..50 {
                    index
                        .write(vec![(format!("{t}/{i}"), vec![t as u8, i as u8])])
                        .unwrap();
                }
            });
        }
    });
    for t in 0..8u8 {
        for i in 0..50u8 {
            assert_eq!(index.get(&format!("{t}/{i}")).unwrap(), Some(vec![t, i]));
        }
    }
}

#[test]
fn a_later_write_replaces_the_row() {
    let (_dir, index) = index();
    index.write(vec![("k".into(), vec![1])]).unwrap();
    index.write(vec![("k".into(), vec![2])]).unwrap();
    assert_eq!(index.get("k").unwrap(), Some(vec![2]));
}

#[test]
fn close_flushes_and_the_index_reopens() {
    let (dir, index) = index();
    index.write(vec![("k".into(), vec![1])]).unwrap();
    index.close();
    assert!(dir.path().join("v11/index.db").exists());
    index.write(vec![("k2".into(), vec![2])]).unwrap();
    assert_eq!(index.get("k2").unwrap(), Some(vec![2]));
}

#[test]
fn an_unopenable_database_reports_an_error_instead_of_hanging() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, b"").unwrap();
    let index = StoreIndex::new(&blocker.join("v11"));
    let err = index.write(vec![("k".into(), vec![1])]).unwrap_err();
    assert!(err.message.contains("store index"), "{err}");
}

#[test]
fn get_many_answers_alike_by_seeks_and_by_scan() {
    let (dir, index) = index();
    let rows: Vec<Row> = (0..300)
        .map(|i| (format!("k{i}"), vec![i as u8; 1 + i % 7000]))
        .collect();
    index.write(rows.clone()).unwrap();
    let expect = |keys: &[&str]| -> Vec<Option<Vec<u8>>> {
        keys.iter()
            .map(|k| {
                rows.iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, d)| d.clone())
            })
            .collect()
    };
    let few = ["k5", "nope", "k299", "k5"];
    // 280 of 300 rows: a scan; 4 keys: seeks.
    let many: Vec<String> = (0..280).rev().map(|i| format!("k{i}")).collect();
    let mut many: Vec<&str> = many.iter().map(String::as_str).collect();
    many.push("missing");
    let conn = Connection::open(dir.path().join("v11/index.db")).unwrap();
    assert!(!scan_is_cheaper(&conn, few.len()));
    assert!(scan_is_cheaper(&conn, many.len()), "counted rows");
    assert_eq!(index.get_many(&few).unwrap(), expect(&few));
    assert_eq!(index.get_many(&many).unwrap(), expect(&many));
    // With statistics (pnpm's PRAGMA optimize / ANALYZE writes sqlite_stat1), they decide.
    conn.execute_batch("ANALYZE").unwrap();
    assert!(scan_is_cheaper(&conn, many.len()));
    assert!(!scan_is_cheaper(&conn, 70), "70 of 300 rows: seeks");
    assert_eq!(index.get_many(&many).unwrap(), expect(&many));
}

#[test]
fn a_failed_batch_read_ends_its_transaction() {
    // An index.db without the table (an empty file): every read fails the same way, the first
    // failure does not leave a transaction open behind it.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("v11");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("index.db"), b"").unwrap();
    let index = StoreIndex::new_frozen(&store);
    let many: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    for keys in [&many[..], &many[..2], &many[..]] {
        let err = index.get_many(keys).unwrap_err();
        assert!(err.message.contains("no such table"), "{}", err.message);
    }
}

#[test]
fn sqlite_busy_is_retried_and_other_errors_are_not() {
    let failure = |code| {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), Some("locked".into()))
    };
    let mut calls = 0;
    let result = with_busy_retry(|| {
        calls += 1;
        if calls < 3 {
            Err(failure(rusqlite::ffi::SQLITE_BUSY))
        } else {
            Ok(calls)
        }
    });
    assert_eq!(result.unwrap(), 3, "two busy answers, then success");

    let mut calls = 0;
    let result: rusqlite::Result<()> = with_busy_retry(|| {
        calls += 1;
        Err(failure(rusqlite::ffi::SQLITE_READONLY))
    });
    assert!(result.is_err());
    assert_eq!(calls, 1, "a non-busy error is returned at once");
}

#[test]
fn a_write_waits_out_another_connection_holding_the_write_lock() {
    let (dir, index) = index();
    index.write(vec![("a".into(), vec![1])]).unwrap();
    let other = Connection::open(dir.path().join("v11/index.db")).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let holder = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        other.execute_batch("COMMIT").unwrap();
    });
    // Blocked by the other writer for ~300 ms: waited out, not failed.
    index.write(vec![("b".into(), vec![2])]).unwrap();
    holder.join().unwrap();
    assert_eq!(index.get("b").unwrap(), Some(vec![2]));
}
