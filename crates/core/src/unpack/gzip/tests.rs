use super::*;
use crate::error_code::ErrorCode;
use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;

fn gz(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn err(input: &[u8]) -> (GzipErrorKind, String) {
    let e = gunzip(input).unwrap_err();
    (e.kind, e.message)
}

/// Pseudo-random, poorly compressible bytes.
pub(crate) fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn detects_gzip_magic() {
    assert!(is_gzip(&[0x1f, 0x8b, 0x08]));
    assert!(is_gzip(&gz(b"x")));
    assert!(!is_gzip(&[0x1f, 0x8b]));
    assert!(!is_gzip(&[0x1f, 0x8b, 0x07]));
    assert!(!is_gzip(b"package/"));
    assert!(!is_gzip(&[]));
}

#[test]
fn round_trips_one_member() {
    let data = noise(300_000);
    assert_eq!(gunzip(&gz(&data)).unwrap(), data);
    assert_eq!(gunzip(&gz(b"")).unwrap(), b"");
}

#[test]
fn concatenated_members_decode_as_one_stream() {
    let input = cat(&[&gz(b"hello "), &gz(b""), &gz(b"world")]);
    assert_eq!(gunzip(&input).unwrap(), b"hello world");
}

#[test]
fn a_nul_after_a_member_ends_decoding() {
    let a = gz(b"hello ");
    assert_eq!(gunzip(&cat(&[&a, &[0; 10]])).unwrap(), b"hello ");
    // Node stops at the NUL and ignores whatever follows it, even another member.
    assert_eq!(gunzip(&cat(&[&a, &[0, 1, 2, 3]])).unwrap(), b"hello ");
    assert_eq!(
        gunzip(&cat(&[&a, &[0, 0], &gz(b"world")])).unwrap(),
        b"hello "
    );
}

#[test]
fn trailing_garbage_is_a_data_error() {
    let a = gz(b"hello ");
    let expected = (GzipErrorKind::Data, "incorrect header check".to_string());
    assert_eq!(err(&cat(&[&a, b"xyz"])), expected);
    assert_eq!(
        err(&cat(&[&a, &[0x1f, 0x8b, 7, 0]])),
        (GzipErrorKind::Data, "unknown compression method".into())
    );
    assert_eq!(
        gunzip(&cat(&[&a, b"xyz"])).unwrap_err().code(),
        "ERR_PNPM_Z_DATA_ERROR"
    );
}

#[test]
fn truncated_input_is_a_buf_error() {
    let a = gz(b"hello ");
    let expected = (GzipErrorKind::Buf, "unexpected end of file".to_string());
    assert_eq!(err(&a[..a.len() - 3]), expected);
    assert_eq!(err(&a[..5]), expected);
    assert_eq!(err(&a[..10]), expected);
    assert_eq!(err(&cat(&[&a, &[0x1f]])), expected);
    assert_eq!(err(&cat(&[&a, &[0x1f, 0x8b]])), expected);
    // An empty member header at the end, with no deflate data.
    assert_eq!(
        err(&cat(&[&a, &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]])),
        expected
    );
    let big = gz(&noise(200_000));
    assert_eq!(err(&big[..big.len() / 2]), expected);
    assert_eq!(gunzip(&a[..5]).unwrap_err().code(), "ERR_PNPM_Z_BUF_ERROR");
}

#[test]
fn corrupt_streams_report_zlibs_message() {
    // Messages observed from Node 24's zlib.gunzipSync on the same corruptions.
    let a = gz(b"hello ");
    let mut crc = a.clone();
    crc[a.len() - 8] ^= 1;
    assert_eq!(
        err(&crc),
        (GzipErrorKind::Data, "incorrect data check".into())
    );
    let mut len = a.clone();
    len[a.len() - 2] ^= 1;
    assert_eq!(
        err(&len),
        (GzipErrorKind::Data, "incorrect length check".into())
    );
    let mut block = a.clone();
    block[10] = 0xff;
    assert_eq!(
        err(&block),
        (GzipErrorKind::Data, "invalid block type".into())
    );
    let mut flags = a.clone();
    flags[3] = 0xe0;
    assert_eq!(
        err(&flags),
        (GzipErrorKind::Data, "unknown header flags set".into())
    );
}

#[test]
fn a_lying_trailer_does_not_drive_the_allocation() {
    let mut input = gz(b"hello");
    let n = input.len();
    input[n - 4..].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(initial_capacity(&input, MAX_OUTPUT) <= n * PRESIZE_RATIO);
    // The stream itself is now wrong (length check), but we get there without a huge buffer.
    assert_eq!(
        err(&input),
        (GzipErrorKind::Data, "incorrect length check".into())
    );
}

#[test]
fn output_grows_past_the_presize() {
    // Highly compressible data beyond PRESIZE_RATIO, and padding hiding the trailer.
    let data = vec![b'a'; 5_000_000];
    let input = gz(&data);
    assert!(data.len() > input.len() * PRESIZE_RATIO);
    assert_eq!(gunzip(&input).unwrap(), data);
    assert_eq!(gunzip(&cat(&[&input, &[0; 4]])).unwrap(), data);
}

#[test]
fn output_cap_is_enforced() {
    let data = vec![b'a'; 1_000_000];
    let input = gz(&data);
    let e = gunzip_limited(&input, 999_999).unwrap_err();
    assert_eq!(e.kind, GzipErrorKind::TooLarge);
    assert_eq!(e.code(), "ERR_PNPM_ERR_BUFFER_TOO_LARGE");
    assert_eq!(e.message, "Cannot create a Buffer larger than 999999 bytes");
    assert_eq!(gunzip_limited(&input, 1_000_000).unwrap(), data);
    // Exactly at the cap also works when the trailer is hidden by padding.
    assert_eq!(
        gunzip_limited(&cat(&[&input, &[0; 4]]), 1_000_000).unwrap(),
        data
    );
}

#[test]
fn errors_found_on_the_fast_path_keep_their_message() {
    // A fixed-Huffman block starting with a back-reference (length 3, distance 1) into an
    // empty window. The last bytes double as a trailer claiming 64 KiB, so that the output
    // buffer is large enough for zlib-rs's fast path. Node says "invalid distance too far
    // back" for both inputs.
    let header = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    let input = cat(&[&header, &[0x03, 0x02], &[0; 26], &[0, 0, 1, 0]]);
    assert!(initial_capacity(&input, MAX_OUTPUT) >= 1024);
    let expected = (
        GzipErrorKind::Data,
        "invalid distance too far back".to_string(),
    );
    assert_eq!(err(&input), expected);
    // The short form never reaches the fast path.
    assert_eq!(err(&cat(&[&header, &[0x03, 0x02, 0, 0]])), expected);
}

#[test]
fn a_bomb_never_gets_more_memory_than_the_cap() {
    let input = gz(&vec![0; 8 << 20]);
    for limit in [1 << 20, (1 << 20) + 12_345, 5 << 20] {
        let mut out = Vec::with_capacity(initial_capacity(&input, limit));
        let mut stream = Gunzip::new(Slice::new(&input), limit as u64);
        let e = inflate_into(&mut stream, &mut out, limit).unwrap_err();
        assert_eq!(e.kind, GzipErrorKind::TooLarge);
        assert_eq!(out.len(), limit);
        assert!(out.capacity() <= limit);
    }
}
