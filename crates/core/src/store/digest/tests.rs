use super::*;

fn hex_of(algorithm: &str, data: &[u8]) -> Option<String> {
    let mut h = hasher(algorithm)?;
    h.update(data);
    Some(hex(&h.finalize()))
}

#[test]
fn knows_the_algorithms_integrity_strings_and_rows_name_in_any_case() {
    // `crypto.createHash(name).update('abc').digest('hex')` in Node.
    let abc = [
        ("md5", "900150983cd24fb0d6963f7d28e17f72"),
        ("sha1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        (
            "sha224",
            "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
        ),
        (
            "sha256",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
    ];
    for (name, expected) in abc {
        assert_eq!(hex_of(name, b"abc").as_deref(), Some(expected), "{name}");
        let upper = name.to_ascii_uppercase();
        assert_eq!(hex_of(&upper, b"abc").as_deref(), Some(expected), "{upper}");
    }
    assert_eq!(hex_of("Sha384", b"").unwrap().len(), 96);
    assert_eq!(
        hex_of("sha512", b"").unwrap(),
        crate::blob_files::sha512_hex(b""),
    );
}

#[test]
fn other_names_are_unknown() {
    for name in ["", "sha", "sha-512", "sha3-256", "blake2b512", "sha512 "] {
        assert!(hasher(name).is_none(), "{name:?}");
    }
}
