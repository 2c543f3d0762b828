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
    assert!(!crate::blob_files::is_executable(SYMLINK_MODE));
}

#[cfg(unix)]
#[test]
fn restore_links_reads_targets_and_drops_what_pnpm_drops() {
    let dir = tempfile::tempdir().unwrap();
    let blob = |name: &str, target: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, target).unwrap();
        p
    };
    let ok = [
        ("alias.js", blob("a", "generated.js")),
        ("lib/up", blob("b", "../generated.js")),
    ];
    let links: Vec<(&str, PathBuf)> = ok.iter().map(|(p, b)| (*p, b.clone())).collect();
    assert_eq!(
        restore_links(&links, ["generated.js", "lib/x.js"].into_iter()).unwrap(),
        Some(vec![
            ("alias.js".into(), "generated.js".into()),
            ("lib/up".into(), "../generated.js".into())
        ])
    );
    assert_eq!(
        restore_links(&[], std::iter::empty()).unwrap(),
        Some(vec![])
    );
    // A target pnpm would not record, a missing blob, a file or link below a link: dropped.
    let escaping = [("alias.js", blob("c", "../../x"))];
    assert_eq!(restore_links(&escaping, std::iter::empty()).unwrap(), None);
    let missing = [("alias.js", dir.path().join("gone"))];
    assert_eq!(restore_links(&missing, std::iter::empty()).unwrap(), None);
    let dir_link = [("lib", blob("d", "src"))];
    assert_eq!(
        restore_links(&dir_link, ["lib/x.js"].into_iter()).unwrap(),
        None
    );
    let nested = [("lib", blob("e", "src")), ("lib/y", blob("f", "../a"))];
    assert_eq!(restore_links(&nested, std::iter::empty()).unwrap(), None);
    // A blob that cannot be read is an error naming it.
    let unreadable = [("alias.js", dir.path().to_path_buf())];
    let (_, path) = restore_links(&unreadable, std::iter::empty()).unwrap_err();
    assert_eq!(path, dir.path());
}
