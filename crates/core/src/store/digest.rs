//! The hash algorithms this addon knows by name, in one table: the ones npm integrity strings
//! (`sha512-…`, old `sha1-…`) and store-index rows (`algo`) name. Names are matched as Node's
//! `crypto.hash`/`crypto.createHash` match them, case-insensitively.

use sha2::digest::DynDigest;

/// A fresh hasher for `algorithm`, or `None` when the name is not one of the table's.
pub fn hasher(algorithm: &str) -> Option<Box<dyn DynDigest>> {
    let is = |name: &str| algorithm.eq_ignore_ascii_case(name);
    Some(if is("sha512") {
        Box::new(sha2::Sha512::default())
    } else if is("sha384") {
        Box::new(sha2::Sha384::default())
    } else if is("sha256") {
        Box::new(sha2::Sha256::default())
    } else if is("sha224") {
        Box::new(sha2::Sha224::default())
    } else if is("sha1") {
        Box::new(sha1::Sha1::default())
    } else if is("md5") {
        Box::new(md5::Md5::default())
    } else {
        return None;
    })
}

/// Lowercase hex, as Node's `digest('hex')` writes it.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests;
