//! Checks for arbitrary input, run on generated inputs by the property tests beside this file
//! (part of `cargo test`) and on mutated ones by the libFuzzer targets in `fuzz/`
//! (`scripts/fuzz.sh`). Each check feeds one decoder of untrusted bytes — the tar walk, the
//! gzip front end, the msgpackr row decoder — and asserts what that decoder promises for
//! *every* input, not only for valid ones. A panic or a failed assertion is a bug to fix in the
//! decoder, with the input as a regression test in that module's tests.
//!
//! Built for tests and with the `fuzzing` feature only; not part of the addon's API.

use std::collections::HashSet;

use crate::gzip::{self, GzipError, GzipErrorKind};
use crate::index_row::{self, PackageFilesIndex, SideEffectsDiff};
use crate::msgpackr;
use crate::tarball::{self, TarEntry, TarError, TarErrorKind};
use crate::value::Value;

const TAR_BLOCK: usize = 512;
const TAR_CHECKSUM: std::ops::Range<usize> = 148..156;

/// The output cap the gzip checks compare against: big enough for any stream the fuzzer makes
/// from its inputs in practice, small enough that a deflate bomb (~1000:1) costs milliseconds
/// rather than [`gzip::MAX_OUTPUT`].
const GZIP_REFERENCE_LIMIT: usize = 64 << 20;

/// Writes a valid checksum into every whole 512-byte block, headers or not, so that mutated
/// header fields get past the checksum test (random bytes almost never do) and on into the
/// size, type, name and pax rules.
pub fn fix_tar_checksums(tar: &mut [u8]) {
    for block in tar.chunks_exact_mut(TAR_BLOCK) {
        block[TAR_CHECKSUM].fill(b' ');
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[TAR_CHECKSUM].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }
}

/// Walks `tar` and checks what holds for every archive the walk accepts: each entry's data
/// follows a 512-byte header at a block boundary and ends inside the buffer, and no key is
/// listed twice (a repeated key takes over the first one's place). Keys are *not* checked for
/// `..` segments or NULs: pnpm's rules keep them, and keys only ever become index keys, never
/// paths. A rejected archive must not have been rejected by the defensive bounds check at the
/// end of the walk, which the walk itself is meant to make unreachable.
///
/// Then the same walk with `maxTarballUnpackedSize` set: under `limit` it lists the same
/// entries or fails with `TooLarge` (or with the same error), and just under the listed files'
/// total it fails with `TooLarge` (that limit counts every file header, repeats included, so
/// never less than the listed sizes). Returns the unlimited result.
pub fn check_tar(tar: &[u8], limit: u64) -> Result<Vec<TarEntry>, TarError> {
    let full = tarball::parse(tar);
    match &full {
        Ok(entries) => {
            let mut keys = HashSet::with_capacity(entries.len());
            for e in entries {
                assert!(
                    e.offset >= TAR_BLOCK && e.offset % TAR_BLOCK == 0,
                    "{e:?} does not follow a header"
                );
                assert!(
                    e.offset + e.size <= tar.len(),
                    "{e:?} runs past {}",
                    tar.len()
                );
                assert!(keys.insert(e.path.as_str()), "{} listed twice", e.path);
            }
        }
        Err(e) => assert!(
            !e.message.starts_with("TAR entry "),
            "the walk let an entry run past the end: {e}"
        ),
    }
    match (&full, tarball::parse_limited(tar, Some(limit))) {
        (Ok(entries), Ok(limited)) => assert!(limited == *entries, "limit {limit} changed"),
        (_, Err(e)) if e.kind == TarErrorKind::TooLarge => {}
        (Err(e), Err(limited)) => assert!(limited == *e, "limit {limit} changed the error"),
        (full, limited) => panic!("limit {limit}: {limited:?}, unlimited {full:?}"),
    }
    if let Ok(entries) = &full {
        let total: u64 = entries.iter().map(|e| e.size as u64).sum();
        if let Some(under) = total.checked_sub(1) {
            let e = tarball::parse_limited(tar, Some(under)).expect_err("over the limit");
            assert_eq!(e.kind, TarErrorKind::TooLarge, "{e}");
        }
    }
    full
}

/// Inflates `input` with a cap of `limit` bytes and compares with the uncapped result: the cap
/// changes nothing for output that fits (exactly `limit` bytes included) and turns anything
/// longer into [`GzipErrorKind::TooLarge`], also when the stream is corrupt further on.
/// Accepted input always passes pnpm's `is-gzip` test. Returns the uncapped result.
pub fn check_gunzip(input: &[u8], limit: usize) -> Result<Vec<u8>, GzipError> {
    let full = gzip::gunzip_limited(input, GZIP_REFERENCE_LIMIT);
    if matches!(&full, Err(e) if e.kind == GzipErrorKind::TooLarge) {
        return full;
    }
    let mut limits = vec![limit];
    if let Ok(out) = &full {
        assert!(
            gzip::is_gzip(input),
            "inflated input without the gzip magic"
        );
        limits.push(out.len());
        limits.extend(out.len().checked_sub(1));
    }
    for limit in limits {
        match (&full, gzip::gunzip_limited(input, limit)) {
            (Ok(out), Ok(capped)) => {
                assert!(
                    out.len() <= limit,
                    "{} bytes passed a cap of {limit}",
                    out.len()
                );
                assert!(capped == *out, "the cap changed the output");
            }
            (Ok(out), Err(e)) => assert!(
                out.len() > limit && e.kind == GzipErrorKind::TooLarge,
                "{} bytes under a cap of {limit}: {e:?}",
                out.len()
            ),
            (Err(e), Ok(_)) => panic!("inflates under a cap of {limit}, fails without: {e:?}"),
            (Err(e), Err(capped)) => assert!(
                capped.kind == GzipErrorKind::TooLarge || capped == *e,
                "cap {limit} changed the error: {capped:?} instead of {e:?}"
            ),
        }
    }
    full
}

/// Gzips `data` with flate2 as one member, or as two split at `split` when that falls inside
/// it, and checks that it inflates back, also with NUL padding and anything after it appended;
/// that every cut inside the last member at `cuts` (offsets into that member, taken modulo
/// its length) is `Z_BUF_ERROR`; and that a damaged CRC or length in the trailer is
/// `Z_DATA_ERROR`.
pub fn check_gzip_round_trip(data: &[u8], split: usize, level: u32, cuts: &[usize]) {
    let level = flate2::Compression::new(level % 10);
    let parts: &[&[u8]] = if split > 0 && split < data.len() {
        &[&data[..split], &data[split..]]
    } else {
        &[data]
    };
    let members: Vec<Vec<u8>> = parts.iter().map(|part| gzip_member(part, level)).collect();
    let stream = members.concat();
    let last = stream.len() - members.last().map_or(0, Vec::len);
    assert!(
        check_gunzip(&stream, data.len()).as_deref() == Ok(data),
        "round trip"
    );

    let mut padded = stream.clone();
    padded.extend_from_slice(b"\0garbage after the padding");
    assert!(gzip::gunzip(&padded).as_deref() == Ok(data), "NUL padding");

    for &cut in cuts {
        let end = last + cut % (stream.len() - last);
        if end == last {
            continue; // a cut between members is a whole stream
        }
        let e = gzip::gunzip(&stream[..end]).expect_err("truncated stream inflated");
        assert_eq!(e.kind, GzipErrorKind::Buf, "cut at {end}: {e:?}");
    }
    for field in [8, 4] {
        let mut damaged = stream.clone();
        let at = damaged.len() - field;
        damaged[at] ^= 0x01;
        let e = gzip::gunzip(&damaged).expect_err("damaged trailer inflated");
        assert_eq!(e.kind, GzipErrorKind::Data, "trailer byte {at}: {e:?}");
    }
}

fn gzip_member(data: &[u8], level: flate2::Compression) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), level);
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// Decodes `bytes` as a msgpackr value and as an index row. Whatever decodes must re-encode to
/// bytes that decode to the same thing and re-encode to the very same bytes (the encoder's
/// output is canonical); a row that decodes must also take a side-effects entry
/// (`with_side_effects`) and still decode, with that entry and everything else unchanged.
pub fn check_msgpackr(bytes: &[u8]) {
    if let Ok(value) = msgpackr::decode(bytes) {
        let packed = msgpackr::encode(&value);
        let again = msgpackr::decode(&packed).expect("an encoded value decodes");
        assert!(
            same_value(&value, &again),
            "{value:?} came back as {again:?}"
        );
        assert!(
            msgpackr::encode(&again) == packed,
            "encoding is not canonical"
        );
    }
    let Ok(row) = index_row::decode_row(bytes) else {
        return;
    };
    let packed = index_row::encode_row(&row);
    let again = index_row::decode_row(&packed).expect("an encoded row decodes");
    assert!(
        index_row::encode_row(&again) == packed,
        "row encoding is not canonical"
    );

    let diff = SideEffectsDiff {
        remote_origin: false,
        deleted: Some(vec!["removed.js".into()]),
        added: None,
    };
    let rewritten = index_row::with_side_effects(bytes, "fuzz", &diff)
        .expect("a decodable row takes a side-effects entry");
    let rewritten = index_row::decode_row(&rewritten).expect("the rewritten row decodes");
    let mut expected = row;
    let entries = expected.side_effects.get_or_insert_with(Vec::new);
    match entries.iter_mut().find(|(k, _)| k == "fuzz") {
        Some(entry) => entry.1 = diff,
        None => entries.push(("fuzz".into(), diff)),
    }
    assert!(
        same_row(&rewritten, &expected),
        "with_side_effects changed more than its entry"
    );
}

fn same_row(a: &PackageFilesIndex, b: &PackageFilesIndex) -> bool {
    index_row::encode_row(a) == index_row::encode_row(b)
}

/// Equality as JS sees a value after a msgpackr round trip: NaN equals NaN, and -0 equals 0
/// (msgpackr writes -0 as the integer 0).
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(xs), Value::Object(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys)
                    .all(|((kx, x), (ky, y))| kx == ky && same_value(x, y))
        }
        (Value::Map(xs), Value::Map(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys)
                    .all(|((kx, x), (ky, y))| same_value(kx, ky) && same_value(x, y))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests;
