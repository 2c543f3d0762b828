//! JavaScript semantics the store work must reproduce exactly, in one place: what
//! `String.prototype.trim` strips, `String(v)`, and Node's `path.resolve`/`path.relative`.
//! pnpm and the npm packages it uses decide with these (a package name with surrounding
//! white space is invalid, a version is cleaned by trimming, a symlink's text is a relative
//! path), so the Rust side must draw the same lines as the JS one.

use std::path::{Component, Path, PathBuf};

use crate::value::Value;

/// JS `WhiteSpace` + `LineTerminator`: what `String.prototype.trim` strips and a regex `\s`
/// matches. Not Rust's `char::is_whitespace`: JS leaves U+0085 (NEL) alone and strips U+FEFF.
pub fn is_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// `String.prototype.trim`.
pub fn trim(s: &str) -> &str {
    s.trim_matches(is_whitespace)
}

/// JS `String(v)` for the values a manifest field can hold, for messages.
pub fn string_of(v: &Value) -> String {
    match v {
        Value::Undefined => "undefined".into(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => crate::json::number_to_string(*n),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                if i.is_nullish() {
                    String::new()
                } else {
                    string_of(i)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
        Value::Map(_) => "[object Map]".into(),
    }
}

/// `path.resolve` for an absolute or relative path: absolute, `.`/`..` resolved lexically.
pub fn resolve(p: &Path) -> PathBuf {
    let base = if p.is_absolute() {
        PathBuf::from("/")
    } else {
        std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"))
    };
    let mut out = base;
    for c in p.components() {
        match c {
            Component::Prefix(_) => out = PathBuf::from(c.as_os_str()),
            // Keeps the drive of a Windows path (`C:` + `\`); `/` on Unix.
            Component::RootDir => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
        }
    }
    out
}

/// `path.relative(from, to)` for two resolved paths.
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    out
}

#[cfg(test)]
mod tests;
