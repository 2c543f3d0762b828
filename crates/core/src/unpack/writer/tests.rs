use std::sync::mpsc;

use super::*;
use crate::test_support::tgz;

fn job(store_dir: &std::path::Path, key: &str, stream_above: u64) -> Job {
    Job {
        store_dir: store_dir.to_path_buf(),
        key: key.into(),
        row_use: RowUse {
            write: true,
            hand_back: true,
        },
        stream_above,
        ..Default::default()
    }
}

fn paths(finished: &Finished) -> Vec<&str> {
    let files = &finished.indexed.extracted.files;
    files.iter().map(|f| f.path.as_str()).collect()
}

/// A package with enough incompressible bytes that its gzip passes a small streaming threshold.
fn package() -> Vec<u8> {
    let noise: String = (0..64 * 1024u32)
        .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
        .collect();
    tgz(&[
        (
            "package/package.json",
            r#"{"name":"a","version":"1.0.0"}"#,
            0o644,
        ),
        ("package/noise.txt", &noise, 0o644),
    ])
}

fn finished(rx: mpsc::Receiver<JobResult>) -> Finished {
    rx.recv().unwrap().unwrap()
}

/// A whole tarball, a small written one and a streamed written one all end the same: the same
/// files, the same row, committed under their keys.
#[test]
fn whole_written_and_streamed_tarballs_end_with_the_same_row() {
    let dir = tempfile::tempdir().unwrap();
    let tarball = package();

    let (tx, rx) = mpsc::channel();
    spawn_extract(
        job(dir.path(), "whole", u64::MAX),
        tarball.clone(),
        move |r| tx.send(r).unwrap(),
    );
    let whole = finished(rx);

    let mut results = vec![];
    // u64::MAX never streams; 32 streams once more than 1 byte has arrived.
    for (key, stream_above) in [("written", u64::MAX), ("streamed", 32)] {
        let mut writer = TarballWriter::new(job(dir.path(), key, stream_above));
        for chunk in tarball.chunks(1000) {
            writer.write(chunk);
        }
        assert_eq!(writer.streaming.is_some(), stream_above == 32);
        let (tx, rx) = mpsc::channel();
        writer.end(move |r| tx.send(r).unwrap());
        results.push(finished(rx));
    }

    let store = store_handles::open(dir.path());
    for (key, other) in ["written", "streamed"].into_iter().zip(&results) {
        assert_eq!(paths(other), paths(&whole));
        assert_eq!(other.indexed.row, whole.indexed.row);
        assert_eq!(store.index.get(key).unwrap(), whole.indexed.row);
    }
    assert_eq!(store.index.get("whole").unwrap(), whole.indexed.row);
    store.index.close();
}

/// A failed extraction ends with its error and no row.
#[test]
fn a_broken_tarball_ends_with_its_error_and_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = TarballWriter::new(job(dir.path(), "broken", u64::MAX));
    let mut tarball = package();
    tarball.truncate(tarball.len() / 2);
    writer.write(&tarball);
    let (tx, rx) = mpsc::channel();
    writer.end(move |r| tx.send(r).unwrap());
    assert!(matches!(rx.recv().unwrap(), Err(JobError::Extract(_))));
    let store = store_handles::open(dir.path());
    assert_eq!(store.index.get("broken").unwrap(), None);
    store.index.close();
}
