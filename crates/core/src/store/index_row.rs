//! One `index.db` row's encoding: the typed row (`PackageFilesIndex`; docs/store-format.md,
//! "Index rows") to and from its msgpackr bytes.
//!
//! `encode_row` writes what pnpm 11 writes for a fresh row, straight into msgpackr records
//! without building a `Value` tree. `decode_row` reads rows from pnpm 11 and from pnpm 12 (whose
//! Rust encoder orders fields differently and omits an absent manifest). Rewriting a stored row
//! goes through `with_side_effects`, which works on the decoded JS value like pnpm does, so field
//! order and fields this crate does not know survive byte-for-byte; `without_side_effects` removes
//! an entry the same way.

use crate::msgpackr::{self, DecodeError, Decoder, Encoder, Next, RecordShape};
use crate::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct PackageFileInfo {
    /// `Date.now()` when the blob was written or last verified; old rows lack it.
    pub checked_at: Option<f64>,
    /// Hex digest of the blob. Empty if the row has none, so readers can raise pnpm's
    /// `ERR_PNPM_MISSING_CONTENT_DIGEST` instead of failing to decode.
    pub digest: String,
    /// As stored: tar header modes may carry file-type bits (`0o100644`).
    pub mode: u32,
    pub size: u64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SideEffectsDiff {
    pub deleted: Option<Vec<String>>,
    pub added: Option<Vec<(String, PackageFileInfo)>>,
    /// The diff came from a remote side-effects cache (its `remoteOrigin` is set): pnpm
    /// 11.28 does not import it as a local entry. Never written by this crate.
    pub remote_origin: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PackageFilesIndex {
    pub requires_build: Option<bool>,
    /// `None`: the key is absent (pnpm 12). `Some(Value::Undefined)`: present but `undefined`,
    /// which is what pnpm 11 writes for a package without bundled manifest fields.
    pub manifest: Option<Value>,
    pub algo: String,
    /// Relative path (with `/`) → file, in insertion order.
    pub files: Vec<(String, PackageFileInfo)>,
    /// Side-effects cache key → diff, in insertion order.
    pub side_effects: Option<Vec<(String, SideEffectsDiff)>>,
}

impl PackageFilesIndex {
    /// The manifest as pnpm's readers see it: `undefined` and `null` mean "none".
    pub fn bundled_manifest(&self) -> Option<&Value> {
        self.manifest.as_ref().filter(|m| !m.is_nullish())
    }
}

const ROW_KEYS: [&str; 5] = ["requiresBuild", "manifest", "algo", "files", "sideEffects"];
const FILE_KEYS: [&str; 4] = ["checkedAt", "digest", "mode", "size"];

/// Packs a row the way pnpm 11 packs a fresh one: `requiresBuild, manifest, algo, files`, then
/// `sideEffects`; absent optional fields are left out, `Some(Value::Undefined)` is kept.
pub fn encode_row(row: &PackageFilesIndex) -> Vec<u8> {
    // ~160 bytes per file entry (128-hex digest, float64 checkedAt, ints, headers) + path.
    let capacity = 512 + row.files.iter().map(|(p, _)| p.len() + 160).sum::<usize>();
    let mut enc = Encoder::with_capacity(capacity);
    let present = [
        row.requires_build.is_some(),
        row.manifest.is_some(),
        true,
        true,
        row.side_effects.is_some(),
    ];
    let keys: Vec<&str> = ROW_KEYS
        .iter()
        .zip(present)
        .filter_map(|(k, p)| p.then_some(*k))
        .collect();
    enc.record(keys.into_iter());
    if let Some(requires_build) = row.requires_build {
        enc.bool(requires_build);
    }
    if let Some(manifest) = &row.manifest {
        enc.value(manifest);
    }
    enc.str(&row.algo);
    encode_files(&mut enc, &row.files);
    if let Some(side_effects) = &row.side_effects {
        enc.map_header(side_effects.len());
        for (key, diff) in side_effects {
            enc.str(key);
            encode_diff(&mut enc, diff);
        }
    }
    enc.into_bytes()
}

fn encode_files<'a>(enc: &mut Encoder<'a>, files: &'a [(String, PackageFileInfo)]) {
    enc.map_header(files.len());
    for (path, info) in files {
        enc.str(path);
        let keys = if info.checked_at.is_some() {
            &FILE_KEYS[..]
        } else {
            &FILE_KEYS[1..]
        };
        enc.record(keys.iter().copied());
        if let Some(checked_at) = info.checked_at {
            enc.number(checked_at);
        }
        enc.str(&info.digest);
        enc.number(f64::from(info.mode));
        // Sizes of 2^32 and up become float64, exactly as a JS number would.
        enc.number(info.size as f64);
    }
}

fn encode_diff<'a>(enc: &mut Encoder<'a>, diff: &'a SideEffectsDiff) {
    let keys = match (&diff.deleted, &diff.added) {
        (Some(_), Some(_)) => &["deleted", "added"][..],
        (Some(_), None) => &["deleted"][..],
        (None, Some(_)) => &["added"][..],
        (None, None) => &[][..],
    };
    enc.record(keys.iter().copied());
    if let Some(deleted) = &diff.deleted {
        enc.array_header(deleted.len());
        for path in deleted {
            enc.str(path);
        }
    }
    if let Some(added) = &diff.added {
        encode_files(enc, added);
    }
}

impl PackageFileInfo {
    /// The JS object pnpm 11 would build for this file (`checkedAt, digest, mode, size`).
    pub fn to_value(&self) -> Value {
        let mut fields = Vec::with_capacity(4);
        if let Some(checked_at) = self.checked_at {
            fields.push(("checkedAt".to_string(), Value::Number(checked_at)));
        }
        fields.push(("digest".to_string(), Value::String(self.digest.clone())));
        fields.push(("mode".to_string(), Value::Number(f64::from(self.mode))));
        fields.push(("size".to_string(), Value::Number(self.size as f64)));
        Value::Object(fields)
    }
}

fn files_to_value(files: &[(String, PackageFileInfo)]) -> Value {
    Value::Map(
        files
            .iter()
            .map(|(path, info)| (Value::String(path.clone()), info.to_value()))
            .collect(),
    )
}

impl SideEffectsDiff {
    /// The JS object pnpm 11 would build for this diff (`deleted`, then `added`).
    pub fn to_value(&self) -> Value {
        let mut fields = Vec::with_capacity(2);
        if let Some(deleted) = &self.deleted {
            let paths = deleted.iter().map(|p| Value::String(p.clone())).collect();
            fields.push(("deleted".to_string(), Value::Array(paths)));
        }
        if let Some(added) = &self.added {
            fields.push(("added".to_string(), files_to_value(added)));
        }
        Value::Object(fields)
    }
}

/// Re-packs a stored row with `sideEffects[key] = diff`, as pnpm's side-effects upload does
/// (`row.sideEffects ??= new Map(); row.sideEffects.set(key, diff)`): every other field keeps its
/// decoded value and position, a new `sideEffects` goes last, an existing cache key keeps its
/// place in the map.
pub fn with_side_effects(
    stored: &[u8],
    key: &str,
    diff: &SideEffectsDiff,
) -> Result<Vec<u8>, RowError> {
    set_side_effects(row_fields(stored)?, key, diff)
}

/// [`with_side_effects`] on a row already decoded with [`row_fields`].
pub fn set_side_effects(
    mut row: Vec<(String, Value)>,
    key: &str,
    diff: &SideEffectsDiff,
) -> Result<Vec<u8>, RowError> {
    let index = match row.iter().position(|(k, _)| k == "sideEffects") {
        Some(i) => i,
        None => {
            row.push(("sideEffects".to_string(), Value::Undefined));
            row.len() - 1
        }
    };
    let side_effects = &mut row[index].1;
    if side_effects.is_nullish() {
        *side_effects = Value::Map(Vec::new());
    }
    let Value::Map(entries) = side_effects else {
        return Err(RowError::Field {
            field: "sideEffects",
            problem: "is not a Map",
            offset: 0,
        });
    };
    let diff = diff.to_value();
    match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
        Some(entry) => entry.1 = diff,
        None => entries.push((Value::String(key.to_string()), diff)),
    }
    Ok(msgpackr::encode(&Value::Object(row)))
}

/// Re-packs a stored row without its side-effects entry for `key`, as pnpm 11.28 does when a
/// built package has a symlink it cannot record (`row.sideEffects?.delete(key)`, and
/// `row.sideEffects = undefined` once the map is empty: the field stays, as `undefined`).
/// `None` when there is no such entry: pnpm then writes nothing.
pub fn without_side_effects(stored: &[u8], key: &str) -> Result<Option<Vec<u8>>, RowError> {
    let mut row = row_fields(stored)?;
    let Some((_, side_effects)) = row.iter_mut().find(|(k, _)| k == "sideEffects") else {
        return Ok(None);
    };
    let Value::Map(entries) = side_effects else {
        return Ok(None);
    };
    let Some(at) = entries.iter().position(|(k, _)| k.as_str() == Some(key)) else {
        return Ok(None);
    };
    entries.remove(at);
    if entries.is_empty() {
        *side_effects = Value::Undefined;
    }
    Ok(Some(msgpackr::encode(&Value::Object(row))))
}

/// A stored row decoded as the JS object pnpm's rewrites work on, fields in stored order.
pub fn row_fields(stored: &[u8]) -> Result<Vec<(String, Value)>, RowError> {
    match msgpackr::decode(stored)? {
        Value::Object(fields) => Ok(fields),
        Value::Map(_) => Err(RowError::PlainMap),
        _ => Err(RowError::NotAnObject),
    }
}

/// Why a stored row is not a usable `PackageFilesIndex`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RowError {
    #[error("corrupt store index row: {0}")]
    Decode(#[from] DecodeError),
    /// A plain msgpack map at the top (e.g. `rmp_serde` output). pnpm decodes it to a JS `Map`,
    /// finds no `files` on it and fails the read ("files is not iterable").
    #[error(
        "store index row is a plain msgpack map, not a msgpackr record: `files` would be undefined"
    )]
    PlainMap,
    /// The top-level value is neither a record nor a map.
    #[error("store index row is not an object")]
    NotAnObject,
    /// A field is missing or has a type pnpm could not use. `offset` is where decoding stood.
    #[error("store index row: `{field}` {problem} (at byte {offset})")]
    Field {
        field: &'static str,
        problem: &'static str,
        offset: usize,
    },
}

/// Reads a row in any field order. Unknown fields are skipped; `undefined`/`null` optional
/// fields read as absent, except `manifest`, which keeps `Some(Value::Undefined)`.
pub fn decode_row(bytes: &[u8]) -> Result<PackageFilesIndex, RowError> {
    let mut d = Decoder::new(bytes);
    let shape = match d.record()? {
        Next::Record(shape) => shape,
        Next::Other => {
            return Err(match d.map_len()? {
                Some(_) => RowError::PlainMap,
                None => RowError::NotAnObject,
            })
        }
    };
    let mut row = PackageFilesIndex {
        requires_build: None,
        manifest: None,
        algo: String::new(),
        files: Vec::new(),
        side_effects: None,
    };
    let (mut has_algo, mut has_files) = (false, false);
    for key in &shape.keys {
        match key.as_str() {
            "requiresBuild" => {
                row.requires_build = match d.value()? {
                    Value::Bool(b) => Some(b),
                    v if v.is_nullish() => None,
                    _ => return Err(field_error(&d, "requiresBuild", "is not a boolean")),
                }
            }
            "manifest" => row.manifest = Some(d.value()?),
            "algo" => {
                row.algo = d
                    .str()?
                    .ok_or_else(|| field_error(&d, "algo", "is not a string"))?;
                has_algo = true;
            }
            "files" => {
                row.files = read_files(&mut d, "files")?
                    .ok_or_else(|| field_error(&d, "files", "is not a Map"))?;
                has_files = true;
            }
            "sideEffects" => row.side_effects = read_side_effects(&mut d)?,
            _ => {
                d.value()?;
            }
        }
    }
    d.finish()?;
    if !has_algo {
        return Err(field_error(&d, "algo", "is missing"));
    }
    if !has_files {
        return Err(field_error(&d, "files", "is missing"));
    }
    Ok(row)
}

fn field_error(d: &Decoder, field: &'static str, problem: &'static str) -> RowError {
    RowError::Field {
        field,
        problem,
        offset: d.offset(),
    }
}

/// A `Map<string, PackageFileInfo>`; `None` if the value is `undefined`/`null`.
fn read_files(
    d: &mut Decoder,
    field: &'static str,
) -> Result<Option<Vec<(String, PackageFileInfo)>>, RowError> {
    let Some(len) = d.map_len()? else {
        return absent_or(d, field, "is not a Map");
    };
    // Each entry takes at least two bytes; do not trust the length field beyond that.
    let mut files = Vec::with_capacity(len.min(d.remaining() / 2));
    for _ in 0..len {
        let path = d
            .str()?
            .ok_or_else(|| field_error(d, field, "has a non-string key"))?;
        let Next::Record(shape) = d.record()? else {
            return Err(field_error(d, field, "has an entry that is not an object"));
        };
        files.push((path, read_file_info(d, &shape, field)?));
    }
    Ok(Some(files))
}

fn read_file_info(
    d: &mut Decoder,
    shape: &RecordShape,
    field: &'static str,
) -> Result<PackageFileInfo, RowError> {
    let mut info = PackageFileInfo {
        checked_at: None,
        digest: String::new(),
        mode: 0,
        size: 0,
    };
    let (mut mode, mut size) = (None, None);
    for key in &shape.keys {
        match key.as_str() {
            "checkedAt" => info.checked_at = number(d, field)?,
            "digest" => {
                info.digest = match d.str()? {
                    Some(digest) => digest,
                    None => absent_or(d, field, "has a non-string digest")?.unwrap_or_default(),
                }
            }
            "mode" => mode = number(d, field)?,
            "size" => size = number(d, field)?,
            _ => {
                d.value()?;
            }
        }
    }
    info.mode = match mode {
        Some(m) if m >= 0.0 && m <= f64::from(u32::MAX) && m.trunc() == m => m as u32,
        _ => return Err(field_error(d, field, "has a file without a valid mode")),
    };
    info.size = match size {
        Some(s) if (0.0..=9007199254740991.0).contains(&s) && s.trunc() == s => s as u64,
        _ => return Err(field_error(d, field, "has a file without a valid size")),
    };
    Ok(info)
}

fn read_side_effects(d: &mut Decoder) -> Result<Option<Vec<(String, SideEffectsDiff)>>, RowError> {
    const FIELD: &str = "sideEffects";
    let Some(len) = d.map_len()? else {
        return absent_or(d, FIELD, "is not a Map");
    };
    let mut entries = Vec::with_capacity(len.min(d.remaining() / 2));
    for _ in 0..len {
        let key = d
            .str()?
            .ok_or_else(|| field_error(d, FIELD, "has a non-string key"))?;
        let Next::Record(shape) = d.record()? else {
            return Err(field_error(d, FIELD, "has an entry that is not an object"));
        };
        let mut diff = SideEffectsDiff::default();
        for k in &shape.keys {
            match k.as_str() {
                "deleted" => diff.deleted = read_deleted(d)?,
                "added" => diff.added = read_files(d, FIELD)?,
                "remoteOrigin" => {
                    diff.remote_origin = !matches!(d.value()?, Value::Undefined | Value::Null)
                }
                _ => {
                    d.value()?;
                }
            }
        }
        entries.push((key, diff));
    }
    Ok(Some(entries))
}

fn read_deleted(d: &mut Decoder) -> Result<Option<Vec<String>>, RowError> {
    match d.value()? {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(field_error(
                    d,
                    "sideEffects",
                    "has a non-string deleted path",
                )),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        v if v.is_nullish() => Ok(None),
        _ => Err(field_error(
            d,
            "sideEffects",
            "has a `deleted` that is not an array",
        )),
    }
}

fn number(d: &mut Decoder, field: &'static str) -> Result<Option<f64>, RowError> {
    match d.value()? {
        Value::Number(n) => Ok(Some(n)),
        v if v.is_nullish() => Ok(None),
        _ => Err(field_error(
            d,
            field,
            "has a file field that is not a number",
        )),
    }
}

/// For a value that is not of the wanted kind: `undefined`/`null` reads as absent, anything else
/// is an error.
fn absent_or<T>(
    d: &mut Decoder,
    field: &'static str,
    problem: &'static str,
) -> Result<Option<T>, RowError> {
    if d.value()?.is_nullish() {
        Ok(None)
    } else {
        Err(field_error(d, field, problem))
    }
}

#[cfg(test)]
mod tests;
