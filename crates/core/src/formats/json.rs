//! `JSON.parse` and `JSON.stringify(v, null, 2)` with the exact observable results of V8.
//!
//! pnpm reads every tarball's `package.json` with `JSON.parse` and stores (parts of) the result in
//! the index row with msgpackr, which writes object keys in **JS property order**. So the parser
//! does not just accept JSON: it has to produce the same JS value V8 would, including
//!
//! - property order: integer-like keys (array indices: canonical decimal integers `0` ..=
//!   `4294967294`) first in ascending numeric order, then the other keys in first-insertion order;
//! - duplicate keys: the property keeps the position of its first occurrence and the value of its
//!   last one;
//! - numbers: IEEE-754 doubles, correctly rounded (`-0` stays `-0`, `1e400` is `Infinity`).
//!
//! Error messages follow Node 24's (V8's) `JSON.parse` wording, positions in UTF-16 code units.
//!
//! Deliberate deviations from V8, all on input no real `package.json` contains:
//!
//! - A lone surrogate escape (`"\uD800"` not followed by a low-surrogate escape, or a lone
//!   `"\uDC00"`) cannot live in a Rust `String`; it becomes U+FFFD. V8 keeps the lone code unit.
//! - Nesting deeper than [`MAX_DEPTH`] objects/arrays is an error ("Nesting deeper than 512
//!   levels in JSON at position …", our own wording; V8 has no limit). This bounds stack use of
//!   the parser and of everything that later walks the value recursively (drop, msgpack, stringify).
//! - In an "Unexpected token" message an astral character is shown whole, where V8 shows only its
//!   high surrogate.

use crate::value::Value;
use std::collections::{HashMap, HashSet};

/// Maximum nesting depth of objects and arrays accepted by [`parse`].
pub const MAX_DEPTH: usize = 512;

/// A `JSON.parse` failure: V8's `SyntaxError` message, plus the position it refers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct JsonError {
    /// The message a `SyntaxError` from Node 24's `JSON.parse` would carry.
    pub message: String,
    /// Offset of the offending character in UTF-16 code units (`None` for "Unexpected end of JSON
    /// input", whose V8 message carries no position).
    pub position: Option<usize>,
}

/// What went wrong, before it is turned into V8's message (done only on the error path).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    UnexpectedEnd,
    /// Generic "Unexpected token 'x', "…" is not valid JSON".
    UnexpectedToken,
    UnexpectedNumber,
    ExpectedPropertyNameOrBrace,
    ExpectedCommaOrBracket,
    ExpectedCommaOrBrace,
    ExpectedColon,
    ExpectedDoubleQuotedPropertyName,
    UnterminatedString,
    BadControlCharacter,
    BadEscapedCharacter,
    BadUnicodeEscape,
    NoNumberAfterMinus,
    UnterminatedFraction,
    ExponentMissingNumber,
    NonWhitespaceAfterJson,
    TooDeep,
}

/// A failure at a byte offset of the input.
#[derive(Debug, Clone, Copy)]
struct Fail {
    kind: Kind,
    at: usize,
}

type PResult<T> = Result<T, Fail>;

fn fail<T>(kind: Kind, at: usize) -> PResult<T> {
    Err(Fail { kind, at })
}

/// `JSON.parse(text)`. `text` is the already decoded string: callers decode the bytes as
/// `buffer.toString('utf8')` would (`String::from_utf8_lossy` replaces invalid sequences the same
/// way) and strip one leading BOM, as pnpm does; a BOM left here is a syntax error, as in JS.
pub fn parse(text: &str) -> Result<Value, JsonError> {
    let mut p = Parser {
        src: text,
        b: text.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let result = p.parse_value().and_then(|v| {
        p.skip_ws();
        if p.pos < p.b.len() {
            fail(Kind::NonWhitespaceAfterJson, p.pos)
        } else {
            Ok(v)
        }
    });
    result.map_err(|f| make_error(text, f))
}

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn parse_value(&mut self) -> PResult<Value> {
        self.skip_ws();
        match self.peek() {
            None => fail(Kind::UnexpectedEnd, self.pos),
            Some(b'"') => self.parse_string().map(Value::String),
            Some(b'{') => self.parse_object(),
            Some(b'[') => self.parse_array(),
            Some(b't') => self.parse_literal(b"true", Value::Bool(true)),
            Some(b'f') => self.parse_literal(b"false", Value::Bool(false)),
            Some(b'n') => self.parse_literal(b"null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.parse_number().map(Value::Number),
            Some(_) => fail(Kind::UnexpectedToken, self.pos),
        }
    }

    fn parse_literal(&mut self, word: &[u8], value: Value) -> PResult<Value> {
        for &expected in word {
            match self.peek() {
                None => return fail(Kind::UnexpectedEnd, self.pos),
                Some(c) if c == expected => self.pos += 1,
                Some(_) => return fail(Kind::UnexpectedToken, self.pos),
            }
        }
        Ok(value)
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return fail(Kind::TooDeep, self.pos);
        }
        Ok(())
    }

    fn parse_object(&mut self) -> PResult<Value> {
        self.enter()?;
        self.pos += 1; // '{'
        self.skip_ws();
        let mut fields: Vec<(String, Value)> = Vec::new();
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                self.depth -= 1;
                return Ok(Value::Object(fields));
            }
            Some(b'"') => {}
            _ => return fail(Kind::ExpectedPropertyNameOrBrace, self.pos),
        }
        loop {
            let key = self.parse_string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return fail(Kind::ExpectedColon, self.pos);
            }
            self.pos += 1;
            let value = self.parse_value()?;
            fields.push((key, value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() != Some(b'"') {
                        return fail(Kind::ExpectedDoubleQuotedPropertyName, self.pos);
                    }
                }
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return fail(Kind::ExpectedCommaOrBrace, self.pos),
            }
        }
        self.depth -= 1;
        Ok(Value::Object(into_js_property_order(fields)))
    }

    fn parse_array(&mut self) -> PResult<Value> {
        self.enter()?;
        self.pos += 1; // '['
        self.skip_ws();
        let mut items = Vec::new();
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.depth -= 1;
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.parse_value()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    break;
                }
                _ => return fail(Kind::ExpectedCommaOrBracket, self.pos),
            }
        }
        self.depth -= 1;
        Ok(Value::Array(items))
    }

    /// Parses a string starting at its opening quote. The input is valid UTF-8 and every byte
    /// the parser stops at is ASCII, so each copied slice is valid UTF-8 on its own.
    fn parse_string(&mut self) -> PResult<String> {
        self.pos += 1; // opening '"'
        let start = self.pos;
        // Fast path: no escapes.
        while let Some(&c) = self.b.get(self.pos) {
            match c {
                b'"' => {
                    let s = self.slice(start, self.pos).to_owned();
                    self.pos += 1;
                    return Ok(s);
                }
                b'\\' => break,
                0..=0x1f => return fail(Kind::BadControlCharacter, self.pos),
                _ => self.pos += 1,
            }
        }
        let mut out = String::with_capacity(self.pos - start + 16);
        out.push_str(self.slice(start, self.pos));
        let mut run = self.pos;
        loop {
            let Some(c) = self.peek() else {
                return fail(Kind::UnterminatedString, self.pos);
            };
            match c {
                b'"' => {
                    out.push_str(self.slice(run, self.pos));
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(self.slice(run, self.pos));
                    self.pos += 1;
                    self.parse_escape(&mut out)?;
                    run = self.pos;
                }
                0..=0x1f => return fail(Kind::BadControlCharacter, self.pos),
                _ => self.pos += 1,
            }
        }
    }

    fn slice(&self, from: usize, to: usize) -> &'a str {
        // Both ends sit next to ASCII bytes (or the ends of the input), i.e. on char boundaries;
        // `str` indexing checks just that, in O(1).
        &self.src[from..to]
    }

    /// Parses the escape after a backslash (`self.pos` is just past the backslash).
    fn parse_escape(&mut self, out: &mut String) -> PResult<()> {
        let Some(c) = self.peek() else {
            return fail(Kind::UnexpectedEnd, self.pos);
        };
        let ch = match c {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                self.pos += 1;
                let unit = self.hex4()?;
                let ch = match unit {
                    0xD800..=0xDBFF => match self.low_surrogate_escape() {
                        Some(low) => {
                            self.pos += 6;
                            let cp = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                            char::from_u32(cp).expect("valid supplementary code point")
                        }
                        None => char::REPLACEMENT_CHARACTER,
                    },
                    0xDC00..=0xDFFF => char::REPLACEMENT_CHARACTER,
                    _ => char::from_u32(unit).expect("BMP scalar value"),
                };
                out.push(ch);
                return Ok(());
            }
            _ => return fail(Kind::BadEscapedCharacter, self.pos),
        };
        self.pos += 1;
        out.push(ch);
        Ok(())
    }

    /// Reads exactly four hex digits at `self.pos` and advances past them.
    fn hex4(&mut self) -> PResult<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            match self.peek().and_then(|c| (c as char).to_digit(16)) {
                Some(d) => {
                    v = v * 16 + d;
                    self.pos += 1;
                }
                None => return fail(Kind::BadUnicodeEscape, self.pos),
            }
        }
        Ok(v)
    }

    /// A `\uDC00`..`\uDFFF` escape right at `self.pos`, without consuming it.
    fn low_surrogate_escape(&self) -> Option<u32> {
        let rest = self.b.get(self.pos..self.pos + 6)?;
        if rest[0] != b'\\' || rest[1] != b'u' {
            return None;
        }
        let mut v = 0u32;
        for &c in &rest[2..] {
            v = v * 16 + (c as char).to_digit(16)?;
        }
        (0xDC00..=0xDFFF).contains(&v).then_some(v)
    }

    fn parse_number(&mut self) -> PResult<f64> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return fail(Kind::NoNumberAfterMinus, self.pos);
            }
        }
        let int_start = self.pos;
        if self.peek() == Some(b'0') {
            self.pos += 1;
            if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return fail(Kind::UnexpectedNumber, self.pos);
            }
        } else {
            self.skip_digits();
        }
        let int_end = self.pos;
        let mut simple = true;
        if self.peek() == Some(b'.') {
            simple = false;
            self.pos += 1;
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return fail(Kind::UnterminatedFraction, self.pos);
            }
            self.skip_digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            simple = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !self.peek().is_some_and(|c| c.is_ascii_digit()) {
                return fail(Kind::ExponentMissingNumber, self.pos);
            }
            self.skip_digits();
        }
        if simple && int_end - int_start <= 15 {
            // Exact: any integer below 10^15 is representable.
            let magnitude = self.b[int_start..int_end]
                .iter()
                .fold(0u64, |acc, &c| acc * 10 + u64::from(c - b'0'))
                as f64;
            return Ok(if negative { -magnitude } else { magnitude });
        }
        // Rust's float parsing is correctly rounded, like V8's; its syntax is a superset of JSON's.
        Ok(self
            .slice(start, self.pos)
            .parse::<f64>()
            .expect("JSON number syntax is accepted by f64::from_str"))
    }

    #[inline]
    fn skip_digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
    }
}

/// The array index a property key denotes, if any: a canonical decimal integer (no sign, no
/// leading zeros except `"0"` itself) from 0 to 2^32 − 2. JS orders such keys first, ascending.
pub fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
    }
    (v <= 4_294_967_294).then_some(v as u32)
}

/// Turns properties in creation order (as `JSON.parse` or any sequence of `obj[key] = value`
/// assignments meets them) into the object's JS property order: a repeated key keeps its first
/// position and takes the last value, then array-index keys move to the front in ascending
/// numeric order. Useful to every producer of [`Value::Object`].
pub fn into_js_property_order(mut fields: Vec<(String, Value)>) -> Vec<(String, Value)> {
    if has_duplicate_keys(&fields) {
        fields = merge_duplicate_keys(fields);
    }
    if !fields.iter().any(|(k, _)| array_index(k).is_some()) {
        return fields;
    }
    let mut indexed = Vec::new();
    let mut named = Vec::with_capacity(fields.len());
    for (k, v) in fields {
        match array_index(&k) {
            Some(i) => indexed.push((i, k, v)),
            None => named.push((k, v)),
        }
    }
    // Keys are unique by now, so an unstable sort is fine.
    indexed.sort_unstable_by_key(|(i, _, _)| *i);
    indexed
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(named)
        .collect()
}

fn has_duplicate_keys(fields: &[(String, Value)]) -> bool {
    if fields.len() <= 16 {
        // Cheaper than hashing for the small objects that dominate package.json files.
        return fields
            .iter()
            .enumerate()
            .any(|(i, (k, _))| fields[..i].iter().any(|(other, _)| other == k));
    }
    let mut seen = HashSet::with_capacity(fields.len());
    !fields.iter().all(|(k, _)| seen.insert(k.as_str()))
}

fn merge_duplicate_keys(fields: Vec<(String, Value)>) -> Vec<(String, Value)> {
    let mut position: HashMap<String, usize> = HashMap::with_capacity(fields.len());
    let mut merged: Vec<(String, Value)> = Vec::with_capacity(fields.len());
    for (k, v) in fields {
        match position.get(&k) {
            Some(&i) => merged[i].1 = v,
            None => {
                position.insert(k.clone(), merged.len());
                merged.push((k, v));
            }
        }
    }
    merged
}

// ---------------------------------------------------------------------------------------------
// Error messages

fn make_error(text: &str, f: Fail) -> JsonError {
    let at = f.at.min(text.len());
    let pos16 = utf16_len(&text[..at]);
    let positional = |what: &str| {
        let (line, column) = line_and_column(text, at);
        // V8 says "… after JSON at position", every other message "… in JSON at position".
        let (what, sep) = match what.strip_suffix(" after") {
            Some(w) => (w, "after"),
            None => (what, "in"),
        };
        JsonError {
            message: format!("{what} {sep} JSON at position {pos16} (line {line} column {column})"),
            position: Some(pos16),
        }
    };
    match f.kind {
        Kind::UnexpectedEnd => JsonError {
            message: "Unexpected end of JSON input".to_owned(),
            position: None,
        },
        Kind::UnexpectedToken => JsonError {
            message: unexpected_token_message(text, at, pos16),
            position: Some(pos16),
        },
        Kind::UnexpectedNumber => positional("Unexpected number"),
        Kind::ExpectedPropertyNameOrBrace => positional("Expected property name or '}'"),
        Kind::ExpectedCommaOrBracket => positional("Expected ',' or ']' after array element"),
        Kind::ExpectedCommaOrBrace => positional("Expected ',' or '}' after property value"),
        Kind::ExpectedColon => positional("Expected ':' after property name"),
        Kind::ExpectedDoubleQuotedPropertyName => {
            positional("Expected double-quoted property name")
        }
        Kind::UnterminatedString => positional("Unterminated string"),
        Kind::BadControlCharacter => positional("Bad control character in string literal"),
        Kind::BadEscapedCharacter => positional("Bad escaped character"),
        Kind::BadUnicodeEscape => positional("Bad Unicode escape"),
        Kind::NoNumberAfterMinus => positional("No number after minus sign"),
        Kind::UnterminatedFraction => positional("Unterminated fractional number"),
        Kind::ExponentMissingNumber => positional("Exponent part is missing a number"),
        Kind::NonWhitespaceAfterJson => positional("Unexpected non-whitespace character after"),
        Kind::TooDeep => positional(&format!("Nesting deeper than {MAX_DEPTH} levels")),
    }
}

fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// 1-based line and column (in UTF-16 units) of byte offset `at`; lines end at `\n`, `\r` or
/// `\r\n`, as in V8's message.
fn line_and_column(text: &str, at: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..at];
    let mut line = 1;
    let mut line_start = 0;
    let mut i = 0;
    while i < before.len() {
        match before[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'\r' => {
                if before.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let line_start = line_start.min(at);
    (line, utf16_len(&text[line_start..at]) + 1)
}

/// V8's generic message: the offending character plus the source, or, when the source is 21
/// UTF-16 units or longer, a window of up to 10 units on each side of it; `...` marks a cut
/// side. (V8's choice: positions below 10 cut only the end, positions within the last 10 units
/// cut only the start.)
fn unexpected_token_message(text: &str, at: usize, pos16: usize) -> String {
    if matches!(text, "NaN" | "Infinity" | "undefined" | "[object Object]") {
        return format!("\"{text}\" is not valid JSON");
    }
    const CONTEXT: usize = 10;
    let token = text[at..].chars().next().unwrap_or(' ');
    let units: Vec<u16> = text.encode_utf16().collect();
    let len = units.len();
    if len < 2 * CONTEXT + 1 {
        return format!("Unexpected token '{token}', \"{text}\" is not valid JSON");
    }
    let (start, end, before, after) = if pos16 < CONTEXT {
        (0, pos16 + CONTEXT, "", "...")
    } else if pos16 < len - CONTEXT {
        (pos16 - CONTEXT, pos16 + CONTEXT, "...", "...")
    } else {
        (pos16 - CONTEXT, len, "...", "")
    };
    let window = String::from_utf16_lossy(&units[start..end]);
    format!("Unexpected token '{token}', {before}\"{window}\"{after} is not valid JSON")
}

// ---------------------------------------------------------------------------------------------
// Stringify

/// `JSON.stringify(v, null, 2)`: two-space indentation, `\n` line breaks, no trailing newline.
///
/// Object properties are written in the order of the [`Value::Object`] (which is JS property
/// order by the type's contract). `undefined` properties are skipped, `undefined` array items
/// become `null`, non-finite numbers become `null`, a `Map` becomes `{}` (it has no own enumerable
/// properties). JS would return `undefined` (not a string) for a top-level `undefined`; this
/// function returns `"null"` for it instead.
pub fn stringify_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, 0);
    out
}

fn newline_indent(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_value(out: &mut String, v: &Value, level: usize) {
    match v {
        Value::Undefined | Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) if n.is_finite() => out.push_str(&number_to_string(*n)),
        Value::Number(_) => out.push_str("null"),
        Value::String(s) => quote_json_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline_indent(out, level + 1);
                write_value(out, item, level + 1);
            }
            newline_indent(out, level);
            out.push(']');
        }
        Value::Object(fields) => {
            let mut any = false;
            for (k, v) in fields
                .iter()
                .filter(|(_, v)| !matches!(v, Value::Undefined))
            {
                out.push_str(if any { "," } else { "{" });
                any = true;
                newline_indent(out, level + 1);
                quote_json_string(out, k);
                out.push_str(": ");
                write_value(out, v, level + 1);
            }
            if any {
                newline_indent(out, level);
                out.push('}');
            } else {
                out.push_str("{}");
            }
        }
        Value::Map(_) => out.push_str("{}"),
    }
}

/// JSON.stringify's string quoting: `"` and `\` escaped, the short escapes for
/// backspace/form feed/newline/carriage return/tab, `\u00xx` (lower-case hex) for the other
/// control characters, everything else verbatim (`JSON.stringify(s)` for a string).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_json_string(&mut out, s);
    out
}

fn quote_json_string(out: &mut String, s: &str) {
    out.push('"');
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(escape);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

/// `Number.prototype.toString()` (radix 10), as `ryu-js` writes it: the shortest digits that
/// round-trip, laid out by ECMAScript's rules (`NaN`, `Infinity`, `-0` as `0`, `1e+21`).
pub fn number_to_string(n: f64) -> String {
    ryu_js::Buffer::new().format(n).to_owned()
}

#[cfg(test)]
mod tests;
