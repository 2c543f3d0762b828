use super::*;

/// (link path, target as read, what pnpm 11.28's `normalizeSymlinkTarget` returns), taken from
/// running pnpm 11.28.11's bundled `dist/worker.js` on each pair.
const CASES: &[(&str, &str, Option<&str>)] = &[
    ("alias.js", "generated.js", Some("generated.js")),
    ("alias.js", "./generated.js", Some("generated.js")),
    ("alias.js", "a//b/./c", Some("a/b/c")),
    ("lib/up.js", "../index.js", Some("../index.js")),
    ("lib/up.js", "../../escape.js", None),
    ("a/b/c", "../../x", Some("../../x")),
    ("a/b/c", "../../../x", None),
    ("x", "/abs/path", None),
    ("x", "C:foo", None),
    ("x", "c:/foo", None),
    ("x", "1:foo", Some("1:foo")),
    ("x", "a\\b", None),
    ("x", "", None),
    ("x", ".", None),
    ("x", "..", None),
    ("x", "./", None),
    ("x", "a/../b", None),
    ("x", "node_modules/foo", None),
    ("x", "Node_Modules", None),
    ("x", "lib/NODE_MODULES/y", None),
    ("node_modules/x", "y", None),
    ("NODE_MODULES/x", "y", None),
    ("package.json", "index.json", None),
    ("PACKAGE.JSON", "x", None),
    ("pac\u{212A}age.json", "x", None),
    ("lib/package.json", "x", Some("x")),
    ("a//b", "x", None),
    ("./a", "x", None),
    ("a/../b", "x", None),
    ("a\\b", "x", None),
    ("x", "a\0b", None),
    ("dir/link", "sub/", Some("sub")),
    ("x", "...", Some("...")),
    ("x", "a/./", Some("a")),
    ("lib/link", "../lib", Some("../lib")),
    ("x", "né/ü", Some("né/ü")),
    ("x", "C", Some("C")),
    ("x", "é:x", Some("é:x")),
    ("link", "node_modules", None),
    ("a/node_modules/l", "x", Some("x")),
];

#[test]
fn normalises_as_pnpm_11_28_does() {
    for &(link, target, expected) in CASES {
        assert_eq!(
            normalize_target(link, target).as_deref(),
            expected,
            "{link:?} -> {target:?}"
        );
    }
}

#[test]
fn a_recorded_symlink_is_a_non_executable_blob() {
    assert!(!crate::cas::is_executable(SYMLINK_MODE));
}
