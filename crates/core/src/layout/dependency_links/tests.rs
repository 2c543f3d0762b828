use std::fs;

use super::*;
use crate::error_code::ErrorCode;
use crate::test_support::names;

#[test]
fn old_package_name_rules() {
    for ok in [
        "a",
        "A",
        "fs",
        "@scope/x",
        "@s/X_y",
        "a.b",
        "a-b",
        "x!",
        "a~b",
        &"x".repeat(300),
    ] {
        assert!(valid_for_old_packages(ok), "{ok}");
    }
    for bad in [
        "",
        ".bin",
        ".pnpm",
        "_x",
        "-x",
        " x",
        "x ",
        "node_modules",
        "Node_Modules",
        "favicon.ico",
        "../x",
        "a/b",
        "@s/..",
        "@s/.x",
        "@/x",
        "@s/",
        "@s/a/b",
        "a b",
        "é",
        "@s",
        "x\u{feff}",
    ] {
        assert!(!valid_for_old_packages(bad), "{bad:?}");
    }
}

#[test]
fn invalid_aliases_keeps_the_refused_ones_in_order() {
    let aliases = ["ok", "../x", "@s/a", ".bin", "fine"]
        .map(String::from)
        .to_vec();
    assert_eq!(invalid_aliases(aliases), ["../x", ".bin"]);
}

#[test]
fn safe_join_keeps_links_strictly_inside_modules() {
    let m = Path::new("/p/node_modules");
    assert_eq!(
        safe_join_modules_dir(m, "@s/x").unwrap(),
        PathBuf::from("/p/node_modules/@s/x")
    );
    let err = safe_join_modules_dir(m, "../x").unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_INVALID_DEPENDENCY_NAME");
    assert_eq!(
        err.message,
        "Refusing to place a dependency under /p/node_modules with the invalid alias \"../x\""
    );
}

#[test]
fn a_link_onto_its_own_target_fails_with_pnpms_symlink_code() {
    let err = symlink_dir(Path::new("/x/a"), Path::new("/x/./a"), &Stats::default()).unwrap_err();
    assert_eq!(err.code(), SYMLINK_FAILED);
    assert_eq!(
        err.message,
        "Symlink path is the same as the target path (/x/a)"
    );
}

/// What a dependency link at `link` reads as: the relative text on Unix, the absolute target of
/// the junction on Windows (compared resolved).
fn link_text(link: &Path, unix_text: &str, target: &Path) -> (PathBuf, PathBuf) {
    let read = fs::read_link(link).unwrap();
    if cfg!(windows) {
        (resolve(&read), resolve(target))
    } else {
        (read, PathBuf::from(unix_text))
    }
}

#[test]
fn symlink_all_modules_links_relatively_reuses_and_replaces() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for p in ["pkgs/a", "pkgs/b", "pkgs/c"] {
        fs::create_dir_all(root.join(p)).unwrap();
    }
    let modules = root.join("app/node_modules");
    let dep = |children: Vec<(&str, &str)>| SymlinkDep {
        children: children
            .into_iter()
            .map(|(a, t)| (a.to_string(), root.join(t)))
            .collect(),
        modules: modules.clone(),
        name: "app".into(),
    };
    let stats = Stats::default();
    symlink_all_modules(
        &[dep(vec![
            ("a", "pkgs/a"),
            ("@s/b", "pkgs/b"),
            ("app", "pkgs/c"),
        ])],
        &stats,
    )
    .unwrap();
    assert_eq!(names(&modules), ["@s", "a"]);
    let (got, want) = link_text(&modules.join("a"), "../../pkgs/a", &root.join("pkgs/a"));
    assert_eq!(got, want);
    let (got, want) = link_text(
        &modules.join("@s/b"),
        "../../../pkgs/b",
        &root.join("pkgs/b"),
    );
    assert_eq!(got, want);
    assert_eq!(Stats::get(&stats.symlinks), 2);
    // Again: the right links are reused; a wrong one is replaced; a real dir is moved aside.
    fs::create_dir(modules.join("c")).unwrap();
    let stats = Stats::default();
    symlink_all_modules(
        &[dep(vec![
            ("a", "pkgs/a"),
            ("@s/b", "pkgs/c"),
            ("c", "pkgs/c"),
        ])],
        &stats,
    )
    .unwrap();
    assert_eq!(Stats::get(&stats.symlinks), 2);
    let (got, want) = link_text(
        &modules.join("@s/b"),
        "../../../pkgs/c",
        &root.join("pkgs/c"),
    );
    assert_eq!(got, want);
    assert!(fs::symlink_metadata(modules.join("c"))
        .unwrap()
        .is_symlink());
    assert!(modules.join(".ignored_c").is_dir());
    let err = symlink_all_modules(&[dep(vec![("node_modules", "pkgs/a")])], &stats).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_INVALID_DEPENDENCY_NAME");
}
