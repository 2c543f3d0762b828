use crate::blob_files::Cas;
use crate::error_code::ErrorCode;
use crate::extract::{extract, ExtractRequest, Extracted};
use crate::gzip::tests::noise;
use crate::json;
use std::io::Write;

pub(crate) fn gz(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// An uncompressed tar of `(path, content, mode)` regular files.
fn tar(entries: &[(&str, &[u8], u32)]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content, mode) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(*mode);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, path, *content).unwrap();
    }
    builder.into_inner().unwrap()
}

/// Everything an extraction decides, minus the `checkedAt` times; or its error.
fn outcome(extracted: Result<Extracted, crate::extract::ExtractError>) -> Result<String, String> {
    match extracted {
        Ok(e) => {
            let files: Vec<_> = e
                .files
                .iter()
                .map(|f| {
                    format!(
                        "{} {} {:o} {} {}",
                        f.path, f.info.digest, f.info.mode, f.info.size, f.executable
                    )
                })
                .collect();
            Ok(format!(
                "{files:#?}\nmanifest {:?}\nrequires_build {}\nintegrity {}",
                e.manifest.as_ref().map(json::stringify_pretty),
                e.requires_build,
                e.integrity
            ))
        }
        Err(e) => Err(format!("{} {} {:?}", e.code(), e, e.hint())),
    }
}

/// Extracts `tarball` into fresh stores with the stream threshold at each of `thresholds` and
/// checks that every outcome is the same; returns it.
pub(crate) fn same_at(
    tarball: &[u8],
    max: Option<u64>,
    ignore: Option<&str>,
    thresholds: &[u64],
) -> Result<String, String> {
    let outcomes: Vec<_> = thresholds
        .iter()
        .map(|&stream_above| {
            let dir = tempfile::tempdir().unwrap();
            outcome(extract(
                &Cas::new(dir.path()),
                &ExtractRequest {
                    tarball,
                    max_unpacked_size: max,
                    ignore_file_pattern: ignore,
                    stream_above: Some(stream_above),
                    ..Default::default()
                },
            ))
        })
        .collect();
    for (o, t) in outcomes.iter().zip(thresholds).skip(1) {
        assert_eq!(o, &outcomes[0], "threshold {t} vs {}", thresholds[0]);
    }
    outcomes.into_iter().next().unwrap()
}

/// Streaming (threshold 0) against the whole buffer (no threshold).
fn same(tarball: &[u8], max: Option<u64>, ignore: Option<&str>) -> Result<String, String> {
    same_at(tarball, max, ignore, &[0, u64::MAX])
}

/// Many files of many sizes, so that files and headers straddle the window's chunks, with
/// `big`, one file bigger than a write batch, a duplicate key and an executable.
fn package(big: bool) -> Vec<u8> {
    let mut contents = Vec::new();
    for i in 0..300u64 {
        contents.push((
            format!("package/f{i}.js"),
            noise((i as usize * 977) % 5000),
            0o644,
        ));
    }
    let big = if big {
        vec![7; super::BATCH_BYTES]
    } else {
        noise(1000)
    };
    contents.push(("package/big.bin".into(), big, 0o755));
    contents.push((
        "package/f3.js".into(),
        b"the duplicate wins".to_vec(),
        0o644,
    ));
    contents.push((
        "package/package.json".into(),
        br#"{"name":"big","version":"1.0.0","scripts":{"install":"x"}}"#.to_vec(),
        0o644,
    ));
    let entries: Vec<_> = contents
        .iter()
        .map(|(p, c, m)| (p.as_str(), c.as_slice(), *m))
        .collect();
    tar(&entries)
}

#[test]
fn streaming_and_whole_buffer_agree_on_a_big_package() {
    let tgz = gz(&package(true));
    let out = same(&tgz, None, None).unwrap();
    assert!(out.contains("f3.js"), "{out}");
    assert!(out.contains("requires_build true"));
    // The duplicate keeps the first position and takes the last data.
    let f3 = out.lines().position(|l| l.contains("\"f3.js")).unwrap();
    let f4 = out.lines().position(|l| l.contains("\"f4.js")).unwrap();
    assert!(f3 < f4);
    let tgz = gz(&package(false));
    let ignored = same(&tgz, None, Some("^f[0-9]*[02468]\\.js$")).unwrap();
    assert!(!ignored.contains("\"f2.js") && ignored.contains("\"f3.js"));
    // The limit counts every file; the whole tar exceeds it by the last one.
    let total: u64 = (0..300u64).map(|i| (i * 977) % 5000).sum::<u64>() + 1000 + 18 + 58;
    same(&tgz, Some(total), None).unwrap();
    let err = same(&tgz, Some(total - 1), None).unwrap_err();
    assert!(err.starts_with("ERR_PNPM_TARBALL_TOO_LARGE"), "{err}");
}

#[test]
fn a_trailer_that_promises_less_falls_back_to_streaming() {
    // Two members: the trailer gives only the last one's (small) size.
    let tar = package(false);
    let (a, b) = tar.split_at(tar.len() - 4096);
    let tgz = [gz(a), gz(b)].concat();
    assert!(crate::gzip::trailer_size(&tgz) < 1 << 20);
    // 1 MiB: the whole-buffer inflate stops there and the tarball is streamed instead.
    same_at(&tgz, None, None, &[0, 1 << 20, u64::MAX]).unwrap();
    same_at(&tgz, Some(10 << 20), None, &[0, 1 << 20, u64::MAX]).unwrap();
}

#[test]
fn broken_streams_fail_alike() {
    let tgz = gz(&package(false));
    // Cut anywhere: the inflate error, not the tar error the walk meets first.
    for cut in [
        10,
        1000,
        tgz.len() / 3,
        tgz.len() / 2,
        tgz.len() - 9,
        tgz.len() - 1,
    ] {
        let err = same(&tgz[..cut], None, None).unwrap_err();
        assert!(err.starts_with("ERR_PNPM_Z_BUF_ERROR"), "{cut}: {err}");
    }
    // A damaged byte inside the deflate data or the trailer.
    for at in [tgz.len() / 2, tgz.len() - 6] {
        let mut damaged = tgz.clone();
        damaged[at] ^= 0x55;
        let err = same(&damaged, None, None).unwrap_err();
        assert!(err.starts_with("ERR_PNPM_Z_DATA_ERROR"), "{at}: {err}");
    }
    // A bad tar header early, then a truncated stream: the inflate error wins.
    let mut tar = package(false);
    tar[148] ^= 1;
    let tgz = gz(&tar);
    let err = same(&tgz, None, None).unwrap_err();
    assert!(
        err.starts_with(
            "ERR_PNPM_TARBALL_EXTRACT the gzip data is not a tar archive (Invalid checksum"
        ),
        "{err}"
    );
    let err = same(&tgz[..tgz.len() - 100], None, None).unwrap_err();
    assert!(err.starts_with("ERR_PNPM_Z_BUF_ERROR"), "{err}");
    // A tar cut inside a file, and one without its end marker.
    let tar = package(false);
    for end in [tar.len() / 2, tar.len() - 1024] {
        let err = same(&gz(&tar[..end]), None, None).unwrap_err();
        assert!(err.starts_with("ERR_PNPM_TARBALL_EXTRACT"), "{end}: {err}");
    }
}

#[test]
fn a_padding_bomb_extracts_with_a_bounded_window() {
    // An empty archive (its end marker first), then 16 MiB of zeros: pnpm 11.28 extracts it
    // (a placeholder package.json); with a limit the cap stops it.
    let tgz = gz(&vec![0; 16 << 20]);
    let out = same(&tgz, None, None).unwrap();
    assert!(out.contains("package.json"), "{out}");
    let err = same(&tgz, Some(1 << 20), None).unwrap_err();
    assert!(err.contains("it inflates past 2097152 bytes"), "{err}");
}

#[test]
fn headers_and_records_past_the_window_are_refused() {
    // A pax header whose records run to 2 MiB: more than streaming holds for a record.
    let mut builder = tar::Builder::new(Vec::new());
    let record = format!("{} path=x\n", 2 << 20);
    let mut data = record.into_bytes();
    data.resize(2 << 20, b'a');
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::XHeader);
    header.set_size(data.len() as u64);
    builder
        .append_data(&mut header, "pax", data.as_slice())
        .unwrap();
    let tgz = gz(&builder.into_inner().unwrap());
    let err = same_at(&tgz, None, None, &[0]).unwrap_err();
    assert!(
        err.contains("longer than the 1048576 bytes streaming extraction holds"),
        "{err}"
    );
    // The whole-buffer path reads it (and finds no file).
    let out = same_at(&tgz, None, None, &[u64::MAX]).unwrap();
    assert!(out.contains("package.json"), "{out}");
}
