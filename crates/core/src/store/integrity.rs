//! Subresource-integrity strings as pnpm's worker checks them (`worker/src/start.ts` in pnpm).
//!
//! pnpm accepts exactly one `algo-base64` token, decodes the base64 part with Node's lenient
//! `Buffer.from(x, 'base64')`, hashes the **raw** downloaded bytes with the named algorithm and
//! compares digests. We mirror each of those steps, including the error texts, because callers
//! see them as `err.message`/`err.code`.

use base64::Engine as _;
use sha2::Digest as _;

use crate::error_code::ErrorCode;

/// Why an integrity string was rejected or did not match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrityError {
    /// The string is not a single `algo-base64` token, or its base64 decodes to nothing.
    /// `message` is pnpm's text.
    #[error("{message}")]
    Invalid { message: String },
    /// The digest differs. Fields are the worker's `integrity_validation_failed` payload:
    /// `expected` is the integrity string as given, `found` is `algorithm-<base64 of computed>`.
    /// (The API layer builds `TarballIntegrityError`'s message, which needs the URL; this one
    /// is only a readable fallback.)
    #[error("Integrity mismatch: wanted \"{expected}\", got \"{found}\"")]
    Mismatch {
        algorithm: String,
        expected: String,
        found: String,
    },
    /// Node's `crypto.hash` does not know the algorithm (a plain Error without code in pnpm,
    /// which the worker reports as `ERR_PNPM_TARBALL_EXTRACT`).
    #[error("Digest method {algorithm} is not supported")]
    UnsupportedAlgorithm { algorithm: String },
}

impl ErrorCode for IntegrityError {
    fn code(&self) -> &'static str {
        match self {
            IntegrityError::Invalid { .. } => "ERR_PNPM_INVALID_INTEGRITY",
            IntegrityError::Mismatch { .. } => "ERR_PNPM_TARBALL_INTEGRITY",
            IntegrityError::UnsupportedAlgorithm { .. } => "ERR_PNPM_TARBALL_EXTRACT",
        }
    }
}

/// A parsed `algo-base64` token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Integrity<'a> {
    /// The algorithm name exactly as written (pnpm echoes it verbatim in `found`).
    pub algorithm: &'a str,
    /// The decoded digest bytes (never empty).
    pub digest: Vec<u8>,
}

/// Parses like pnpm's `parseIntegrity`: `^([^-]+)-([a-z0-9+/=]+)$` with the `i` flag.
///
/// JS's `$` (without `m`) only matches at the very end, and `[^-]` matches anything but `-`
/// (newlines and non-ASCII included); the first `-` therefore splits the string.
pub fn parse(integrity: &str) -> Result<Integrity<'_>, IntegrityError> {
    let invalid = || IntegrityError::Invalid {
        message: format!(
            "Invalid integrity format: expected \"algo-base64hash\", got \"{integrity}\""
        ),
    };
    let (algorithm, b64) = integrity.split_once('-').ok_or_else(invalid)?;
    let b64_ok = !b64.is_empty()
        && b64
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if algorithm.is_empty() || !b64_ok {
        return Err(invalid());
    }
    let digest = node_base64_decode(b64);
    if digest.is_empty() {
        return Err(IntegrityError::Invalid {
            message: "Invalid integrity: base64 hash decoded to empty digest".to_string(),
        });
    }
    Ok(Integrity { algorithm, digest })
}

/// Node's lenient base64 decoding for input already restricted to `[A-Za-z0-9+/=]`:
/// decoding stops at the first `=`, a trailing group of 2 or 3 characters yields 1 or 2 bytes
/// (extra low bits ignored), and a lone trailing character yields nothing.
fn node_base64_decode(s: &str) -> Vec<u8> {
    let data = s.split('=').next().unwrap_or("").as_bytes();
    let usable = match data.len() % 4 {
        1 => data.len() - 1,
        _ => data.len(),
    };
    base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone),
    )
    .decode(&data[..usable])
    .expect("input restricted to the base64 alphabet")
}

/// Hashes `data` with an algorithm named as Node's `crypto.hash` would accept it (see
/// [`crate::digest`]); any other name gets Node's "not supported" error.
pub fn hash(algorithm: &str, data: &[u8]) -> Result<Vec<u8>, IntegrityError> {
    let mut hasher =
        crate::digest::hasher(algorithm).ok_or_else(|| IntegrityError::UnsupportedAlgorithm {
            algorithm: algorithm.to_string(),
        })?;
    hasher.update(data);
    Ok(hasher.finalize().to_vec())
}

/// Checks the raw (still gzipped) tarball bytes against `integrity`, as pnpm's worker does
/// before extracting. pnpm skips the check for an empty string (`if (integrity)`); callers
/// should do the same.
pub fn verify(integrity: &str, data: &[u8]) -> Result<(), IntegrityError> {
    let parsed = parse(integrity)?;
    let computed = hash(parsed.algorithm, data)?;
    if computed == parsed.digest {
        return Ok(());
    }
    Err(IntegrityError::Mismatch {
        algorithm: parsed.algorithm.to_string(),
        expected: integrity.to_string(),
        found: format_sri(parsed.algorithm, &computed),
    })
}

/// `sha512-<base64>` of `data`: the integrity pnpm reports when none was given.
pub fn sha512_sri(data: &[u8]) -> String {
    format_sri("sha512", &sha2::Sha512::digest(data))
}

fn format_sri(algorithm: &str, digest: &[u8]) -> String {
    format!(
        "{algorithm}-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

#[cfg(test)]
mod tests;
