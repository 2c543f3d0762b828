use super::*;
use crate::error_code::ErrorCode;

const DATA: &[u8] = b"hello world";
// Digests of DATA, computed with Node's crypto.hash(algo, DATA, 'base64').
const SHA1: &str = "sha1-Kq5sNclPz7QV2+lfQIuc6R7oRu0=";
const SHA256: &str = "sha256-uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=";
const SHA384: &str = "sha384-/b2OdaZ/KfcBpOBAOF4uI5hjA+oQI5IRr5B/y7g1eLPkF8txzmRu/QgZ3YwIjeG9";
const SHA512: &str =
    "sha512-MJ7MSJwS1utMxA9QyQLytNDtd+5RGnx6m808qG1M2G+YndNbxf9JlnDaNCVbRbDP2DDoH2Bdz33FVC6TrpzXbw==";
const MD5: &str = "md5-XrY7u+Ae7tCTyyK7j1rNww==";
const SHA224: &str = "sha224-LwVHf8JLtPrv2GUXFW2v3s7EW4rTzyUipWNYKw==";

#[test]
fn verifies_every_supported_algorithm() {
    for sri in [SHA1, SHA256, SHA384, SHA512, MD5, SHA224] {
        assert_eq!(verify(sri, DATA), Ok(()), "{sri}");
    }
}

#[test]
fn algorithm_name_is_case_insensitive() {
    let upper = SHA512.replacen("sha512", "SHA512", 1);
    assert_eq!(verify(&upper, DATA), Ok(()));
    assert_eq!(verify(&SHA1.replacen("sha1", "Sha1", 1), DATA), Ok(()));
}

#[test]
fn padding_is_optional() {
    assert_eq!(verify(SHA512.trim_end_matches('='), DATA), Ok(()));
}

#[test]
fn sha512_sri_matches_node() {
    assert_eq!(sha512_sri(DATA), SHA512);
}

#[test]
fn mismatch_carries_the_worker_payload() {
    let err = verify(SHA1, b"something else").unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_INTEGRITY");
    let found = format!(
        "sha1-{}",
        base64::engine::general_purpose::STANDARD.encode(sha1::Sha1::digest(b"something else"))
    );
    assert_eq!(
        err,
        IntegrityError::Mismatch {
            algorithm: "sha1".into(),
            expected: SHA1.into(),
            found,
        }
    );
}

#[test]
fn mismatch_echoes_the_algorithm_as_written() {
    let sri = SHA512.replacen("sha512", "SHA512", 1);
    match verify(&sri, b"x").unwrap_err() {
        IntegrityError::Mismatch {
            algorithm,
            expected,
            found,
        } => {
            assert_eq!(algorithm, "SHA512");
            assert_eq!(expected, sri);
            assert!(found.starts_with("SHA512-"), "{found}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_shorter_digest_is_a_mismatch_not_an_error() {
    let err = verify("sha512-QUJD", DATA).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_INTEGRITY");
}

#[test]
fn malformed_strings_are_invalid_integrity() {
    let multi = format!("{SHA1} {SHA512}");
    for bad in [
        multi.as_str(),
        "sha512",
        "-abc",
        "sha512-",
        "sha512-abc?opt",
        "sha512-ab_c",
        "sha512-ab-c",
        "sha512-abc\n",
        "",
    ] {
        let err = parse(bad).unwrap_err();
        assert_eq!(err.code(), "ERR_PNPM_INVALID_INTEGRITY", "{bad:?}");
        assert_eq!(
            err.to_string(),
            format!("Invalid integrity format: expected \"algo-base64hash\", got \"{bad}\"")
        );
    }
}

#[test]
fn empty_digest_is_invalid_integrity() {
    for bad in ["sha512-=", "sha512-Q", "sha512-====", "sha512-=QQ"] {
        let err = parse(bad).unwrap_err();
        assert_eq!(err.code(), "ERR_PNPM_INVALID_INTEGRITY");
        assert_eq!(
            err.to_string(),
            "Invalid integrity: base64 hash decoded to empty digest"
        );
    }
}

#[test]
fn base64_is_decoded_like_node_buffer_from() {
    // Expected bytes observed with Node 24's Buffer.from(s, 'base64').
    let cases: &[(&str, &[u8])] = &[
        ("QQ==", b"A"),
        ("QQ", b"A"),
        ("QR", b"A"),
        ("QUJD", b"ABC"),
        ("QUJ", b"AB"),
        ("QUJDR", b"ABC"),
        ("QQ==QQ==", b"A"),
        ("QQ=QQ", b"A"),
        ("QUJDRA=x", b"ABCD"),
        ("AB", &[0]),
        ("Q+/9", &[0x43, 0xef, 0xfd]),
    ];
    for (input, expected) in cases {
        assert_eq!(node_base64_decode(input), *expected, "{input}");
    }
}

#[test]
fn unknown_algorithm_is_a_tarball_extract_error() {
    let err = verify("sha999-QUJD", DATA).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_EXTRACT");
    assert_eq!(err.to_string(), "Digest method sha999 is not supported");
}
