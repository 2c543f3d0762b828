use super::*;
use crate::blob_files::Cas;
use crate::error_code::ErrorCode;
use crate::extract::{extract, extract_fed, ExtractError, ExtractRequest, Extracted};
use std::io::Write;

fn package() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for i in 0..200 {
        let content = format!("file {i} ").repeat(i * 7);
        let mut header = tar::Header::new_ustar();
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, format!("package/f{i}"), content.as_bytes())
            .unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&builder.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

/// Feeds `bytes` in small chunks from another thread (then ends or aborts the feed) while
/// `extract_fed` reads it.
fn fed(
    bytes: &[u8],
    integrity: Option<&str>,
    abort_at: Option<usize>,
) -> Result<Extracted, ExtractError> {
    let dir = tempfile::tempdir().unwrap();
    let feed = Feed::new();
    let writer = {
        let (feed, bytes) = (feed.clone(), bytes.to_vec());
        std::thread::spawn(move || {
            let end = abort_at.unwrap_or(bytes.len());
            for chunk in bytes[..end].chunks(1000) {
                feed.push(chunk);
            }
            if abort_at.is_some() {
                feed.abort()
            } else {
                feed.end()
            }
        })
    };
    let req = ExtractRequest {
        integrity,
        ..Default::default()
    };
    let out = extract_fed(&Cas::new(dir.path()), &req, feed);
    writer.join().unwrap();
    out
}

fn listing(e: &Extracted) -> Vec<(String, String)> {
    e.files
        .iter()
        .map(|f| (f.path.clone(), f.info.digest.clone()))
        .collect()
}

#[test]
fn a_fed_tarball_extracts_as_the_whole_one() {
    let tgz = package();
    let dir = tempfile::tempdir().unwrap();
    let whole = extract(
        &Cas::new(dir.path()),
        &ExtractRequest {
            tarball: &tgz,
            ..Default::default()
        },
    )
    .unwrap();
    let streamed = fed(&tgz, None, None).unwrap();
    assert_eq!(listing(&streamed), listing(&whole));
    assert_eq!(streamed.integrity, whole.integrity);
    assert_eq!(streamed.row.len(), whole.row.len());
    let checked = fed(&tgz, Some(&whole.integrity), None).unwrap();
    assert_eq!(listing(&checked), listing(&whole));
}

#[test]
fn the_integrity_is_checked_over_what_arrived_and_comes_first() {
    let tgz = package();
    let wrong = crate::integrity::sha512_sri(b"something else");
    let err = fed(&tgz, Some(&wrong), None).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_INTEGRITY");
    // Cut short: still the integrity error, not the inflate error behind it.
    let err = fed(&tgz[..tgz.len() / 2], Some(&wrong), None).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_INTEGRITY");
    let err = fed(&tgz[..tgz.len() / 2], None, None).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_Z_BUF_ERROR");
}

#[test]
fn an_aborted_feed_fails() {
    let tgz = package();
    let err = fed(&tgz, None, Some(tgz.len() / 2)).unwrap_err();
    assert!(err.to_string().contains("aborted"), "{err}");
}
