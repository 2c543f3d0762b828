//! The subset of msgpackr 2.0.5 that pnpm's `index.db` rows use: `new Packr({useRecords: true,
//! moreTypes: true})` with no shared structures, so every row carries its own record definitions.
//! See docs/store-format.md, "The index database"; `encode` must reproduce msgpackr's bytes exactly, because pnpm 11
//! and this crate share one store.
//!
//! Decoding is tolerant of other encoders (pnpm 12, plain msgpack) but, like msgpackr, rejects
//! trailing bytes. Deliberate deviations from msgpackr's decoder, none of which pnpm ever writes:
//! 64-bit integers become `Number` instead of `BigInt`; binary data, record keys that are not
//! strings and ext types other than `0x00`/`0x72` are errors; duplicate keys in a msgpack map are
//! kept as they are (a JS `Map` would keep the first position with the last value).

use std::collections::HashMap;
use std::rc::Rc;

use crate::value::Value;

/// First record slot byte; slots are `0x40..=0x7f`.
const SLOT_BASE: u8 = 0x40;
const SLOT_COUNT: usize = 64;
const NO_SLOT: u8 = u8::MAX;
const NO_SHAPE: u32 = u32::MAX;
/// msgpackr's ext type for a record definition (`'r'`).
const EXT_RECORD: u8 = 0x72;
/// Nesting limit for decoding, so hostile input cannot overflow the stack (JS would throw a
/// RangeError at some depth too). Real manifests nest a handful of levels.
const MAX_DEPTH: usize = 512;

/// Packs `v` exactly as msgpackr 2.0.5 `new Packr({useRecords: true, moreTypes: true}).pack(v)`.
pub fn encode(v: &Value) -> Vec<u8> {
    let mut enc = Encoder::with_capacity(256);
    enc.value(v);
    enc.into_bytes()
}

/// A record shape: an ordered key list, and the slot its latest definition occupies.
struct Shape<'a> {
    keys: Vec<&'a str>,
    slot: u8,
}

/// Streaming msgpackr writer. Exposed so callers with typed data (the index row) can write
/// records without first building a `Value` tree; the bytes are the same as `encode` of the
/// equivalent `Value`.
pub struct Encoder<'a> {
    out: Vec<u8>,
    shapes: Vec<Shape<'a>>,
    /// The shapes whose keys have this hash (almost always one), so that finding a shape costs
    /// the same however many there are: re-encoding a decoded row can meet tens of thousands.
    by_hash: HashMap<u64, Vec<u32>>,
    /// Which shape each slot currently defines, so an overwritten shape gets redefined.
    slot_owner: [u32; SLOT_COUNT],
    /// Record definitions emitted so far; the next one goes to slot `defined % 64`.
    defined: usize,
}

impl Default for Encoder<'_> {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl<'a> Encoder<'a> {
    pub fn with_capacity(capacity: usize) -> Self {
        Encoder {
            out: Vec::with_capacity(capacity),
            shapes: Vec::new(),
            by_hash: HashMap::new(),
            slot_owner: [NO_SHAPE; SLOT_COUNT],
            defined: 0,
        }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.out
    }

    pub fn value(&mut self, v: &'a Value) {
        match v {
            Value::Undefined => self.undefined(),
            Value::Null => self.null(),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => self.number(*n),
            Value::String(s) => self.str(s),
            Value::Array(items) => {
                self.array_header(items.len());
                for item in items {
                    self.value(item);
                }
            }
            Value::Object(fields) => {
                self.record(fields.iter().map(|(k, _)| k.as_str()));
                for (_, field) in fields {
                    self.value(field);
                }
            }
            Value::Map(entries) => {
                self.map_header(entries.len());
                for (k, field) in entries {
                    self.value(k);
                    self.value(field);
                }
            }
        }
    }

    pub fn undefined(&mut self) {
        self.out.extend_from_slice(&[0xd4, 0x00, 0x00]);
    }

    pub fn null(&mut self) {
        self.out.push(0xc0);
    }

    pub fn bool(&mut self, b: bool) {
        self.out.push(if b { 0xc3 } else { 0xc2 });
    }

    /// msgpackr's number table: uint32/int32 integers as the smallest int, except that 64..=255
    /// take `cc` because bare `40`..`7f` are record references; everything else float64.
    pub fn number(&mut self, n: f64) {
        let out = &mut self.out;
        if n >= 0.0 && n <= u32::MAX as f64 && n.trunc() == n {
            // Also catches -0, which msgpackr writes as 0.
            let u = n as u32;
            if u < 0x40 {
                out.push(u as u8);
            } else if u <= 0xff {
                out.extend_from_slice(&[0xcc, u as u8]);
            } else if u <= 0xffff {
                out.push(0xcd);
                out.extend_from_slice(&(u as u16).to_be_bytes());
            } else {
                out.push(0xce);
                out.extend_from_slice(&u.to_be_bytes());
            }
        } else if n < 0.0 && n >= i32::MIN as f64 && n.trunc() == n {
            let i = n as i32;
            if i >= -0x20 {
                out.push(i as u8);
            } else if i >= -0x80 {
                out.extend_from_slice(&[0xd0, i as u8]);
            } else if i >= -0x8000 {
                out.push(0xd1);
                out.extend_from_slice(&(i as i16).to_be_bytes());
            } else {
                out.push(0xd2);
                out.extend_from_slice(&i.to_be_bytes());
            }
        } else {
            // JS has a single NaN; write its canonical bits whatever payload Rust carries.
            let n = if n.is_nan() { f64::NAN } else { n };
            out.push(0xcb);
            out.extend_from_slice(&n.to_bits().to_be_bytes());
        }
    }

    /// Strings always get the minimal header (msgpackr fixes up its estimate after writing).
    pub fn str(&mut self, s: &str) {
        let len = s.len();
        let out = &mut self.out;
        if len < 0x20 {
            out.push(0xa0 | len as u8);
        } else if len <= 0xff {
            out.extend_from_slice(&[0xd9, len as u8]);
        } else if len <= 0xffff {
            out.push(0xda);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            out.push(0xdb);
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
        out.extend_from_slice(s.as_bytes());
    }

    pub fn array_header(&mut self, len: usize) {
        self.collection_header(len, 0x90, 0xdc);
    }

    /// Header of a msgpack map (a JS `Map`); the caller then writes `len` key/value pairs.
    pub fn map_header(&mut self, len: usize) {
        self.collection_header(len, 0x80, 0xde);
    }

    fn collection_header(&mut self, len: usize, fix: u8, head16: u8) {
        if len < 16 {
            self.out.push(fix | len as u8);
        } else if len <= 0xffff {
            self.out.push(head16);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(head16 + 1);
            self.out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }

    /// Starts a plain JS object with these keys (in JS property order): a reference to the
    /// shape's slot, or an inline definition if the shape is new or its slot was taken over.
    /// The caller then writes one value per key, in order.
    pub fn record<I>(&mut self, keys: I)
    where
        I: ExactSizeIterator<Item = &'a str> + Clone,
    {
        let hash = shape_hash(keys.clone());
        let found = self
            .by_hash
            .get(&hash)
            .into_iter()
            .flatten()
            .map(|&i| i as usize)
            .find(|&i| {
                let known = &self.shapes[i].keys;
                known.len() == keys.len() && known.iter().copied().eq(keys.clone())
            });
        let index = match found {
            Some(i) if self.shapes[i].slot != NO_SLOT => {
                self.out.push(SLOT_BASE + self.shapes[i].slot);
                return;
            }
            Some(i) => i,
            None => {
                self.shapes.push(Shape {
                    keys: keys.clone().collect(),
                    slot: NO_SLOT,
                });
                let index = self.shapes.len() - 1;
                self.by_hash.entry(hash).or_default().push(index as u32);
                index
            }
        };
        let slot = self.defined % SLOT_COUNT;
        self.defined += 1;
        let previous = std::mem::replace(&mut self.slot_owner[slot], index as u32);
        if previous != NO_SHAPE {
            self.shapes[previous as usize].slot = NO_SLOT;
        }
        self.shapes[index].slot = slot as u8;
        self.out
            .extend_from_slice(&[0xd4, EXT_RECORD, SLOT_BASE + slot as u8]);
        self.array_header(keys.len());
        for key in keys {
            self.str(key);
        }
    }
}

/// FNV-1a over the keys, with a separator byte that UTF-8 never contains.
fn shape_hash<'k>(keys: impl Iterator<Item = &'k str>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for key in keys {
        for &b in key.as_bytes().iter().chain(&[0xff]) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Why a row could not be decoded, and the byte offset where that was noticed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid msgpackr data at byte {offset}: {kind}")]
pub struct DecodeError {
    pub offset: usize,
    pub kind: DecodeErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// The input ends inside a value.
    #[error("unexpected end of data")]
    UnexpectedEnd,
    /// A complete value was read but bytes remain (msgpackr: "Data read, but end of buffer not
    /// reached").
    #[error("data read, but end of buffer not reached")]
    TrailingBytes,
    /// `c1`, which msgpack never uses.
    #[error("reserved byte 0xc1")]
    ReservedByte,
    /// `bin 8/16/32`: not part of the JS value model used for store rows.
    #[error("binary data is not supported")]
    Binary,
    /// An ext type other than `0x00` (undefined) and `0x72` (record definition).
    #[error("unsupported extension type {0}")]
    UnsupportedExt(i8),
    /// A record definition whose key list is not an array of strings.
    #[error("record definition is not an array of string keys")]
    BadRecordDefinition,
    /// Nested deeper than the decoder allows.
    #[error("nesting deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Unpacks a single value the way msgpackr 2.0.5 with `useRecords: true` does: records become
/// `Object`s, msgpack maps become `Map`s.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut d = Decoder::new(bytes);
    let v = d.value()?;
    d.finish()?;
    Ok(v)
}

/// A record definition as the decoder keeps it.
pub(crate) struct RecordShape {
    pub(crate) keys: Vec<String>,
    /// Only if a key repeats, where JS assignment semantics (first position, last value) apply:
    /// for each key, the index of its field (its first occurrence among the distinct keys).
    fields: Option<Vec<usize>>,
}

/// Pull decoder. `decode` uses it for whole values; the row reader also uses the typed
/// accessors so it can skip building `Value`s for every file entry.
pub(crate) struct Decoder<'b> {
    buf: &'b [u8],
    pos: usize,
    slots: [Option<Rc<RecordShape>>; SLOT_COUNT],
    depth: usize,
}

/// What `Decoder::record` found at the cursor.
pub(crate) enum Next {
    Record(Rc<RecordShape>),
    Other,
}

impl<'b> Decoder<'b> {
    pub(crate) fn new(buf: &'b [u8]) -> Self {
        Decoder {
            buf,
            pos: 0,
            slots: std::array::from_fn(|_| None),
            depth: 0,
        }
    }

    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(self.err(DecodeErrorKind::TrailingBytes))
        }
    }

    fn err(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            offset: self.pos,
            kind,
        }
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'b [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.err(DecodeErrorKind::UnexpectedEnd));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        Ok(self.take(N)?.try_into().expect("take returns N bytes"))
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    fn peek(&self) -> Result<u8, DecodeError> {
        self.buf
            .get(self.pos)
            .copied()
            .ok_or_else(|| self.err(DecodeErrorKind::UnexpectedEnd))
    }

    fn len16(&mut self) -> Result<usize, DecodeError> {
        Ok(u16::from_be_bytes(self.array()?) as usize)
    }

    fn len32(&mut self) -> Result<usize, DecodeError> {
        Ok(u32::from_be_bytes(self.array()?) as usize)
    }

    /// If the next value is a record (a definition, or a reference to a defined slot), consumes
    /// its header and returns its keys; the caller must then read one value per key.
    pub(crate) fn record(&mut self) -> Result<Next, DecodeError> {
        let b = self.peek()?;
        if (0x40..=0x7f).contains(&b) {
            if let Some(shape) = &self.slots[(b - SLOT_BASE) as usize] {
                let shape = Rc::clone(shape);
                self.pos += 1;
                return Ok(Next::Record(shape));
            }
        } else if b == 0xd4 && self.buf.get(self.pos + 1) == Some(&EXT_RECORD) {
            self.pos += 2;
            // msgpackr keeps only the low six bits of the slot byte.
            let slot = (self.u8()? & 0x3f) as usize;
            let shape = Rc::new(self.record_keys()?);
            self.slots[slot] = Some(Rc::clone(&shape));
            return Ok(Next::Record(shape));
        }
        Ok(Next::Other)
    }

    fn record_keys(&mut self) -> Result<RecordShape, DecodeError> {
        let len = match self.u8()? {
            b @ 0x90..=0x9f => (b & 0x0f) as usize,
            0xdc => self.len16()?,
            0xdd => self.len32()?,
            _ => return Err(self.err(DecodeErrorKind::BadRecordDefinition)),
        };
        let mut keys = Vec::with_capacity(len.min(self.remaining()));
        for _ in 0..len {
            match self.str()? {
                Some(k) => keys.push(k),
                None => return Err(self.err(DecodeErrorKind::BadRecordDefinition)),
            }
        }
        // Hashed, not each key compared with those before it: a definition can hold as many keys
        // as its row has bytes to spare, and that was quadratic (3.5 s for one 235 KB row).
        let fields = {
            let mut first: HashMap<&str, usize> = HashMap::with_capacity(keys.len());
            let fields: Vec<usize> = keys
                .iter()
                .map(|k| {
                    let next = first.len();
                    *first.entry(k).or_insert(next)
                })
                .collect();
            (first.len() < keys.len()).then_some(fields)
        };
        Ok(RecordShape { keys, fields })
    }

    /// If the next value is a string, consumes and returns it.
    pub(crate) fn str(&mut self) -> Result<Option<String>, DecodeError> {
        let len = match self.peek()? {
            b @ 0xa0..=0xbf => {
                self.pos += 1;
                (b & 0x1f) as usize
            }
            0xd9 => {
                self.pos += 1;
                self.u8()? as usize
            }
            0xda => {
                self.pos += 1;
                self.len16()?
            }
            0xdb => {
                self.pos += 1;
                self.len32()?
            }
            _ => return Ok(None),
        };
        let bytes = self.take(len)?;
        // Like TextDecoder, malformed UTF-8 becomes U+FFFD rather than an error; the strict check
        // first because it is much faster on the (valid) common case.
        Ok(Some(match std::str::from_utf8(bytes) {
            Ok(s) => s.to_owned(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        }))
    }

    /// If the next value is a msgpack map, consumes its header and returns the entry count.
    pub(crate) fn map_len(&mut self) -> Result<Option<usize>, DecodeError> {
        let len = match self.peek()? {
            b @ 0x80..=0x8f => {
                self.pos += 1;
                (b & 0x0f) as usize
            }
            0xde => {
                self.pos += 1;
                self.len16()?
            }
            0xdf => {
                self.pos += 1;
                self.len32()?
            }
            _ => return Ok(None),
        };
        Ok(Some(len))
    }

    /// Reads the next value whatever it is.
    pub(crate) fn value(&mut self) -> Result<Value, DecodeError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err(DecodeErrorKind::TooDeep));
        }
        self.depth += 1;
        let v = self.value_inner();
        self.depth -= 1;
        v
    }

    fn value_inner(&mut self) -> Result<Value, DecodeError> {
        if let Next::Record(shape) = self.record()? {
            return self.object(&shape);
        }
        if let Some(s) = self.str()? {
            return Ok(Value::String(s));
        }
        if let Some(len) = self.map_len()? {
            // Every entry takes at least two bytes, which bounds the allocation.
            let mut entries = Vec::with_capacity(len.min(self.remaining() / 2));
            for _ in 0..len {
                let k = self.value()?;
                entries.push((k, self.value()?));
            }
            return Ok(Value::Map(entries));
        }
        let start = self.pos;
        let b = self.u8()?;
        let n = match b {
            // 0x40..=0x7f without a definition: plain integers, as msgpackr reads them.
            0x00..=0x7f => f64::from(b),
            0xe0..=0xff => f64::from(b as i8),
            0x90..=0x9f => return self.array_items((b & 0x0f) as usize),
            0xdc => {
                let len = self.len16()?;
                return self.array_items(len);
            }
            0xdd => {
                let len = self.len32()?;
                return self.array_items(len);
            }
            0xc0 => return Ok(Value::Null),
            0xc2 => return Ok(Value::Bool(false)),
            0xc3 => return Ok(Value::Bool(true)),
            0xca => f64::from(f32::from_be_bytes(self.array()?)),
            0xcb => f64::from_be_bytes(self.array()?),
            0xcc => f64::from(self.u8()?),
            0xcd => f64::from(u16::from_be_bytes(self.array()?)),
            0xce => f64::from(u32::from_be_bytes(self.array()?)),
            0xcf => u64::from_be_bytes(self.array()?) as f64,
            0xd0 => f64::from(self.u8()? as i8),
            0xd1 => f64::from(i16::from_be_bytes(self.array()?)),
            0xd2 => f64::from(i32::from_be_bytes(self.array()?)),
            0xd3 => i64::from_be_bytes(self.array()?) as f64,
            0xd4..=0xd8 => return self.ext(1 << (b - 0xd4), start),
            0xc7 => {
                let len = self.u8()? as usize;
                return self.ext(len, start);
            }
            0xc8 => {
                let len = self.len16()?;
                return self.ext(len, start);
            }
            0xc9 => {
                let len = self.len32()?;
                return self.ext(len, start);
            }
            0xc4..=0xc6 => {
                self.pos = start;
                return Err(self.err(DecodeErrorKind::Binary));
            }
            // 0xc1; 0x80..=0xbf, 0xd9..=0xdb and 0xde/0xdf were handled above.
            _ => {
                self.pos = start;
                return Err(self.err(DecodeErrorKind::ReservedByte));
            }
        };
        Ok(Value::Number(n))
    }

    /// Ext type 0 is msgpackr's `undefined` (whatever the payload); record definitions never get
    /// here because `record` consumed them.
    fn ext(&mut self, len: usize, start: usize) -> Result<Value, DecodeError> {
        let ext_type = self.u8()? as i8;
        self.take(len)?;
        if ext_type == 0 {
            Ok(Value::Undefined)
        } else {
            self.pos = start;
            Err(self.err(DecodeErrorKind::UnsupportedExt(ext_type)))
        }
    }

    fn array_items(&mut self, len: usize) -> Result<Value, DecodeError> {
        let mut items = Vec::with_capacity(len.min(self.remaining()));
        for _ in 0..len {
            items.push(self.value()?);
        }
        Ok(Value::Array(items))
    }

    fn object(&mut self, shape: &RecordShape) -> Result<Value, DecodeError> {
        let mut fields: Vec<(String, Value)> =
            Vec::with_capacity(shape.keys.len().min(self.remaining()));
        for (i, key) in shape.keys.iter().enumerate() {
            let v = self.value()?;
            match shape.fields.as_ref().map(|at| at[i]) {
                Some(at) if at < fields.len() => fields[at].1 = v,
                _ => fields.push((key.clone(), v)),
            }
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
pub(crate) mod tests;
