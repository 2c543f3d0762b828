//! The JavaScript value model shared by the msgpackr codec, the JSON reader and the manifest
//! logic. Index rows are JS values packed by msgpackr, so we model exactly the JS distinctions
//! that change the bytes: plain objects (msgpackr records) versus `Map`s (msgpack maps), and
//! `undefined` versus `null`.

/// A JavaScript value as it appears in a pnpm store-index row or a `package.json`.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `undefined`: msgpackr writes it as `d4 00 00`, and a record keeps the key.
    Undefined,
    Null,
    Bool(bool),
    /// Every JS number is an f64; integral values in the int32/uint32 range pack as integers.
    Number(f64),
    String(String),
    Array(Vec<Value>),
    /// A plain JS object, in JS property order. Packed as a msgpackr record.
    Object(Vec<(String, Value)>),
    /// A JS `Map`, in insertion order. Packed as a plain msgpack map.
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The value of `key` in an object, as `obj[key]` would give it (first match).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// `undefined` or `null`: what JS code tests with `x == null`.
    pub fn is_nullish(&self) -> bool {
        matches!(self, Value::Undefined | Value::Null)
    }

    /// JS truthiness.
    pub fn is_truthy(&self) -> bool {
        match self {
            Value::Undefined | Value::Null => false,
            Value::Bool(b) => *b,
            Value::Number(n) => *n != 0.0 && !n.is_nan(),
            Value::String(s) => !s.is_empty(),
            Value::Array(_) | Value::Object(_) | Value::Map(_) => true,
        }
    }
}
