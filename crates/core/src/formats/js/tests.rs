use std::path::{Path, PathBuf};

use super::*;

#[test]
fn trim_strips_what_js_strips_and_nothing_else() {
    // Every JS white-space and line-terminator code point, each alone on both sides.
    for c in [
        '\t', '\n', '\u{b}', '\u{c}', '\r', ' ', '\u{a0}', '\u{1680}', '\u{2000}', '\u{2005}',
        '\u{200a}', '\u{2028}', '\u{2029}', '\u{202f}', '\u{205f}', '\u{3000}', '\u{feff}',
    ] {
        assert_eq!(trim(&format!("{c}a b{c}")), "a b", "U+{:04X}", c as u32);
    }
    // White space to Rust (Unicode White_Space) but not to JS: kept, as `"\u0085a".trim()`
    // keeps it.
    assert!('\u{85}'.is_whitespace());
    assert_eq!(trim("\u{85}a\u{85}"), "\u{85}a\u{85}");
    // Neither: zero-width space, the C0 separators, U+180E (white space before Unicode 6.3).
    for c in ['\u{200b}', '\u{1c}', '\u{1f}', '\u{180e}'] {
        let s = format!("{c}a{c}");
        assert_eq!(trim(&s), s, "U+{:04X}", c as u32);
    }
}

#[test]
fn string_of_is_js_string() {
    use crate::value::Value;
    assert_eq!(string_of(&Value::Undefined), "undefined");
    assert_eq!(string_of(&Value::Null), "null");
    assert_eq!(string_of(&Value::Bool(true)), "true");
    assert_eq!(string_of(&Value::Number(1e21)), "1e+21");
    assert_eq!(string_of(&Value::Number(-0.0)), "0");
    assert_eq!(
        string_of(&Value::Array(vec![
            Value::Number(1.0),
            Value::Null,
            Value::String("x".into()),
            Value::Undefined,
            Value::Array(vec![Value::Bool(false), Value::Number(2.5)]),
        ])),
        "1,,x,,false,2.5"
    );
}

#[test]
fn relative_and_resolve_behave_like_node_path() {
    assert_eq!(
        relative(Path::new("/a/b/node_modules"), Path::new("/a/c/d")),
        PathBuf::from("../../c/d")
    );
    // On Windows a path without a drive is on the current one, as with `path.win32.resolve`.
    #[cfg(unix)]
    assert_eq!(resolve(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    #[cfg(windows)]
    assert_eq!(
        resolve(Path::new(r"C:\a\.\b\..\c")),
        PathBuf::from(r"C:\a\c")
    );
}
