use super::*;
use crate::error_code::ErrorCode;
use crate::test_support::diff_paths;

fn keys(added: &AddedDir) -> Vec<&str> {
    added.files.iter().map(|f| f.path.as_str()).collect()
}

fn write(dir: &Path, rel: &str, content: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, content).unwrap();
}

fn setup() -> (tempfile::TempDir, PathBuf, Cas) {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    fs::create_dir_all(&pkg).unwrap();
    let cas = Cas::new(&tmp.path().join("store"));
    (tmp, pkg, cas)
}

fn add(cas: &Cas, pkg: &Path) -> AddedDir {
    add_dir(cas, &AddDirRequest::new(pkg)).unwrap()
}

#[test]
fn walks_in_name_order_skipping_only_the_root_node_modules() {
    let (_tmp, pkg, cas) = setup();
    write(
        &pkg,
        "package.json",
        r#"{"name":"p","version":"1.0.0","dependencies":{"a":"1"}}"#,
    );
    write(&pkg, "b.js", "b");
    write(&pkg, "a/z.js", "z");
    write(&pkg, "a/node_modules/dep/index.js", "nested");
    write(&pkg, "node_modules/dep/index.js", "root");
    write(&pkg, "A.js", "upper case sorts first");
    let added = add(&cas, &pkg);
    assert_eq!(
        keys(&added),
        [
            "A.js",
            "a/node_modules/dep/index.js",
            "a/z.js",
            "b.js",
            "package.json"
        ]
    );
    assert_eq!(
        added
            .manifest
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str),
        Some("p")
    );

    let with_modules = add_dir(
        &cas,
        &AddDirRequest {
            include_node_modules: true,
            ..AddDirRequest::new(&pkg)
        },
    )
    .unwrap();
    assert!(keys(&with_modules).contains(&"node_modules/dep/index.js"));
}

// Unix: Windows files have no execute bits to record.
#[cfg(unix)]
#[test]
fn modes_are_masked_to_permission_bits_and_pick_the_exec_blob() {
    use std::os::unix::fs::PermissionsExt;
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "cli.js", "#!/usr/bin/env node");
    fs::set_permissions(pkg.join("cli.js"), fs::Permissions::from_mode(0o755)).unwrap();
    let added = add(&cas, &pkg);
    let cli = &added.files[0];
    assert_eq!(
        (cli.path.as_str(), cli.info.mode, cli.executable),
        ("cli.js", 0o755, true)
    );
    assert_eq!(
        keys(&added),
        ["cli.js", "package.json"],
        "placeholder appended"
    );
}

// Unix: file symlinks need Developer Mode or administrator rights on Windows.
#[cfg(unix)]
#[test]
fn symlinks_are_followed_only_inside_the_package() {
    use std::os::unix::fs::symlink;
    let (tmp, pkg, cas) = setup();
    write(&pkg, "real/file.js", "inside");
    write(tmp.path(), "outside.js", "secret");
    symlink(pkg.join("real"), pkg.join("linked-dir")).unwrap();
    symlink(pkg.join("real/file.js"), pkg.join("linked-file.js")).unwrap();
    symlink(tmp.path().join("outside.js"), pkg.join("escape.js")).unwrap();
    symlink(pkg.join("missing"), pkg.join("broken.js")).unwrap();
    symlink(&pkg, pkg.join("real/loop")).unwrap();
    let added = add(&cas, &pkg);
    assert_eq!(
        keys(&added),
        [
            "linked-dir/file.js",
            "linked-file.js",
            "real/file.js",
            "package.json"
        ]
    );
}

#[test]
fn a_files_list_keeps_its_keys_and_skips_missing_entries() {
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "lib/index.js", "x");
    write(&pkg, "package.json", "{}");
    let list = vec![
        "package.json".to_string(),
        "lib/index.js".to_string(),
        "gone.js".to_string(),
    ];
    let added = add_dir(
        &cas,
        &AddDirRequest {
            files: Some(&list),
            ..AddDirRequest::new(&pkg)
        },
    )
    .unwrap();
    assert_eq!(keys(&added), ["package.json", "lib/index.js"]);
}

#[test]
fn a_fresh_row_has_pnpms_directory_fields() {
    let (_tmp, pkg, cas) = setup();
    write(
        &pkg,
        "package.json",
        r#"{"name":"p","scripts":{"install":"x"}}"#,
    );
    let added = add(&cas, &pkg);
    let (row, requires_build) = fresh_row(&added, None);
    assert!(requires_build);
    let value = crate::msgpackr::decode(&row).unwrap();
    let Value::Object(fields) = &value else {
        panic!("row is a record")
    };
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "requiresBuild",
            "requiresPrepare",
            "manifest",
            "algo",
            "files"
        ]
    );
    assert_eq!(value.get("requiresPrepare"), Some(&Value::Undefined));
}

#[test]
fn side_effects_record_what_the_build_changed() {
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", r#"{"name":"p"}"#);
    write(&pkg, "keep.js", "same");
    write(&pkg, "change.js", "before");
    write(&pkg, "remove.js", "bye");
    let (stored, _) = fresh_row(&add(&cas, &pkg), Some(true));

    write(&pkg, "change.js", "after");
    fs::remove_file(pkg.join("remove.js")).unwrap();
    write(&pkg, "build/out.node", "binary");
    let upload = upload_side_effects(&stored, "linux;x64;node24", &add(&cas, &pkg)).unwrap();
    let diff = upload.diff.unwrap();
    assert_eq!(diff.deleted, Some(vec!["remove.js".to_string()]));
    assert_eq!(diff_paths(&diff).1, ["change.js", "build/out.node"]);
    assert_eq!(upload.requires_prepare, Some(true));
    let row = index_row::decode_row(&upload.row.unwrap()).unwrap();
    assert_eq!(row.side_effects.unwrap()[0].0, "linux;x64;node24");

    let unchanged = upload_side_effects(&stored, "k", &add(&cas, &pkg)).unwrap();
    assert_ne!(unchanged.diff, Some(SideEffectsDiff::default()));
    let (same_row, _) = fresh_row(&add(&cas, &pkg), None);
    let nothing = upload_side_effects(&same_row, "k", &add(&cas, &pkg)).unwrap();
    assert_eq!(
        nothing.diff,
        Some(SideEffectsDiff::default()),
        "an unchanged build records {{}}"
    );
}

#[test]
fn another_algorithm_is_refused() {
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{}");
    let added = add(&cas, &pkg);
    let row = crate::msgpackr::encode(&Value::Object(vec![
        ("algo".into(), Value::String("sha1".into())),
        ("files".into(), Value::Map(vec![])),
    ]));
    let err = upload_side_effects(&row, "k", &added).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_ALGO_MISMATCH");
}

#[test]
fn invalid_package_json_fails_with_the_git_fetchers_code() {
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{ nope");
    let err = add_dir(&cas, &AddDirRequest::new(&pkg)).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_GIT_FETCH_FAILED");
}

// Unix: the tests that record symlinks make file symlinks (see below).
#[cfg(unix)]
fn add_recording(cas: &Cas, pkg: &Path, files: Option<&[String]>) -> AddedDir {
    add_dir(
        cas,
        &AddDirRequest {
            files,
            compat: Compat::Pnpm1128,
            side_effects_upload: true,
            ..AddDirRequest::new(pkg)
        },
    )
    .unwrap()
}

// Unix: file symlinks need Developer Mode or administrator rights on Windows, and pnpm 11.28
// records none there.
#[cfg(unix)]
#[test]
fn recording_symlinks_stores_their_targets_after_the_files() {
    use std::os::unix::fs::symlink;
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", r#"{"name":"p"}"#);
    write(&pkg, "lib/index.js", "x");
    write(&pkg, "node_modules/dep/index.js", "dep");
    symlink("lib/index.js", pkg.join("alias.js")).unwrap();
    symlink("./lib", pkg.join("lib-link")).unwrap();
    symlink("../lib/index.js", pkg.join("lib/self.js")).unwrap();
    // Left alone as the walk skips the root `node_modules`: neither recorded nor followed.
    fs::rename(pkg.join("node_modules"), pkg.join("modules")).unwrap();
    symlink("modules", pkg.join("node_modules")).unwrap();

    let added = add_recording(&cas, &pkg, None);
    assert!(!added.has_unrecorded_symlinks);
    // pnpm 11.28.1 to 11.28.10 record them alike (their upload differs in its diff only).
    let early = AddDirRequest {
        compat: Compat::Pnpm1128Before11,
        side_effects_upload: true,
        ..AddDirRequest::new(&pkg)
    };
    assert_eq!(keys(&add_dir(&cas, &early).unwrap()), keys(&added));
    assert_eq!(
        keys(&added),
        [
            "lib/index.js",
            "modules/dep/index.js",
            "package.json",
            "alias.js",
            "lib/self.js",
            "lib-link"
        ]
    );
    let link = &added.files[5];
    assert_eq!(
        (link.info.mode, link.info.size, link.executable),
        (SYMLINK_MODE, 3, false)
    );
    assert_eq!(link.info.digest, crate::blob_files::sha512_hex(b"lib"));
    let blob = cas.blob_path(&link.info.digest, false);
    assert_eq!(
        fs::read_to_string(blob).unwrap(),
        "lib",
        "normalised: no `./`"
    );

    // Without the option the same tree is followed as before.
    let followed = add(&cas, &pkg);
    assert!(!followed.has_unrecorded_symlinks);
    assert_eq!(
        keys(&followed),
        [
            "alias.js",
            "lib/index.js",
            "lib/self.js",
            "lib-link/index.js",
            "lib-link/self.js",
            "modules/dep/index.js",
            "package.json"
        ]
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_that_cannot_be_recorded_is_followed_and_flagged() {
    use std::os::unix::fs::symlink;
    let (tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{}");
    write(&pkg, "node_modules/dep/index.js", "dep");
    write(tmp.path(), "outside.js", "secret");
    let unrecordable: [(&str, PathBuf); 3] = [
        ("absolute.js", pkg.join("package.json")),
        ("escape.js", PathBuf::from("../outside.js")),
        ("dep.js", PathBuf::from("node_modules/dep/index.js")),
    ];
    for (name, target) in &unrecordable {
        symlink(target, pkg.join(name)).unwrap();
        let added = add_recording(&cas, &pkg, None);
        assert!(added.has_unrecorded_symlinks, "{name}");
        let followed = add(&cas, &pkg);
        assert_eq!(keys(&added), keys(&followed), "{name}: followed as before");
        fs::remove_file(pkg.join(name)).unwrap();
    }
    let added = add_recording(&cas, &pkg, None);
    assert!(!added.has_unrecorded_symlinks);
}

#[cfg(unix)]
#[test]
fn a_files_list_never_records_a_symlink() {
    use std::os::unix::fs::symlink;
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{}");
    write(&pkg, "index.js", "x");
    symlink("index.js", pkg.join("alias.js")).unwrap();
    let plain = ["package.json".to_string(), "index.js".to_string()];
    assert!(!add_recording(&cas, &pkg, Some(&plain)).has_unrecorded_symlinks);
    let with_link = ["package.json".to_string(), "alias.js".to_string()];
    let added = add_recording(&cas, &pkg, Some(&with_link));
    assert!(added.has_unrecorded_symlinks);
    assert_eq!(keys(&added), ["package.json", "alias.js"]);
    assert_eq!(added.files[1].info.mode & 0o170000, 0, "followed");
}

#[cfg(unix)]
#[test]
fn an_upload_with_an_unrecorded_symlink_removes_the_entry() {
    use std::os::unix::fs::symlink;
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", r#"{"name":"p"}"#);
    let (stored, _) = fresh_row(&add(&cas, &pkg), Some(true));
    write(&pkg, "out.js", "built");
    symlink("out.js", pkg.join("alias.js")).unwrap();
    let recorded = upload_side_effects(&stored, "k", &add_recording(&cas, &pkg, None)).unwrap();
    let added: Vec<(&str, u32)> = recorded
        .diff
        .as_ref()
        .unwrap()
        .added
        .as_ref()
        .unwrap()
        .iter()
        .map(|(p, f)| (p.as_str(), f.mode))
        .collect();
    assert_eq!(added, [("out.js", 0o644), ("alias.js", SYMLINK_MODE)]);
    let with_entry = recorded.row.unwrap();

    symlink("/etc/hostname", pkg.join("absolute")).unwrap();
    let unrecorded = add_recording(&cas, &pkg, None);
    let dropped = upload_side_effects(&with_entry, "k", &unrecorded).unwrap();
    assert_eq!((&dropped.diff, dropped.requires_prepare), (&None, None));
    let row = index_row::decode_row(dropped.row.as_ref().unwrap()).unwrap();
    assert_eq!(row.side_effects, None, "the emptied map becomes undefined");
    assert_eq!(
        crate::msgpackr::decode(dropped.row.as_ref().unwrap())
            .unwrap()
            .get("sideEffects"),
        Some(&Value::Undefined)
    );
    let nothing = upload_side_effects(&stored, "k", &unrecorded).unwrap();
    assert_eq!((nothing.row, nothing.diff), (None, None));
}

fn stored(digest: &str, mode: u32) -> PackageFileInfo {
    PackageFileInfo {
        checked_at: Some(1.0),
        digest: digest.repeat(128),
        mode,
        size: 1,
    }
}

fn built_file(path: &str, digest: &str, mode: u32) -> ExtractedFile {
    ExtractedFile {
        path: path.to_string(),
        info: stored(digest, mode),
        executable: mode & 0o111 != 0,
    }
}

#[test]
fn each_compat_lists_the_diff_as_its_worker_does() {
    // The stored row in tarball order (bundled dependencies included), the build in walk order:
    // `a.js` changed, `z.js` made executable, `c.js` and `lib/node_modules/x.js` deleted,
    // `new.js` created, the root `node_modules` not walked.
    let base: Vec<(String, PackageFileInfo)> = [
        ("z.js", "1", 0o644),
        ("package.json", "2", 0o644),
        ("a.js", "3", 0o644),
        ("c.js", "4", 0o644),
        ("node_modules/dep/index.js", "5", 0o644),
        ("lib/node_modules/x.js", "6", 0o644),
        ("node_modules_x.js", "7", 0o644),
        ("b.js", "8", 0o644),
        ("node_modules/dep/package.json", "9", 0o644),
    ]
    .into_iter()
    .map(|(p, d, m)| (p.to_string(), stored(d, m)))
    .collect();
    let built = [
        built_file("a.js", "a", 0o644),
        built_file("b.js", "8", 0o644),
        built_file("new.js", "b", 0o644),
        built_file("package.json", "2", 0o644),
        built_file("z.js", "1", 0o755),
    ];

    let worker = diff_files(&base, &built, Compat::Worker1100);
    assert_eq!(
        diff_paths(&worker),
        (
            vec![
                "c.js",
                "node_modules/dep/index.js",
                "lib/node_modules/x.js",
                "node_modules_x.js",
                "node_modules/dep/package.json"
            ],
            vec!["z.js", "a.js", "new.js"]
        ),
        "@pnpm/worker 1100.x: changed files in stored order first, bundled dependencies deleted"
    );

    let pnpm = diff_files(&base, &built, Compat::Pnpm1128);
    // pnpm 11.28 compares no modes on Windows.
    let added = if cfg!(windows) {
        vec!["a.js", "new.js"]
    } else {
        vec!["a.js", "new.js", "z.js"]
    };
    assert_eq!(
        diff_paths(&pnpm),
        (
            vec!["c.js", "lib/node_modules/x.js", "node_modules_x.js"],
            added
        ),
        "pnpm 11.28: the built order, only the root node_modules/ left out"
    );
    // pnpm 11.28.1 to 11.28.10: 1100.x's lists, but no modes compared on Windows.
    let early = diff_files(&base, &built, Compat::Pnpm1128Before11);
    assert_eq!(diff_paths(&early).0, diff_paths(&worker).0);
    let early_added = if cfg!(windows) {
        vec!["a.js", "new.js"]
    } else {
        vec!["z.js", "a.js", "new.js"]
    };
    assert_eq!(diff_paths(&early).1, early_added);
    let z = pnpm.added.iter().flatten().find(|(p, _)| p == "z.js");
    assert_eq!(z.map(|(_, f)| f.mode), (!cfg!(windows)).then_some(0o755));

    // Nothing but bundled dependencies gone: pnpm 11.28 records `{}`.
    let unchanged: Vec<ExtractedFile> = base
        .iter()
        .filter(|(p, _)| !p.starts_with("node_modules/"))
        .map(|(p, f)| ExtractedFile {
            path: p.clone(),
            info: f.clone(),
            executable: false,
        })
        .collect();
    assert_eq!(
        diff_files(&base, &unchanged, Compat::Pnpm1128),
        SideEffectsDiff::default()
    );
    assert_eq!(
        diff_paths(&diff_files(&base, &unchanged, Compat::Worker1100)).0,
        ["node_modules/dep/index.js", "node_modules/dep/package.json"]
    );
}

#[test]
fn an_upload_of_a_package_with_bundled_dependencies_keeps_them_under_pnpm_11_28() {
    let (_tmp, pkg, cas) = setup();
    write(
        &pkg,
        "package.json",
        r#"{"name":"p","bundleDependencies":["dep"]}"#,
    );
    write(&pkg, "index.js", "before");
    write(&pkg, "node_modules/dep/index.js", "dep");
    let with_modules = AddDirRequest {
        include_node_modules: true,
        ..AddDirRequest::new(&pkg)
    };
    let (stored, _) = fresh_row(&add_dir(&cas, &with_modules).unwrap(), None);

    write(&pkg, "index.js", "after");
    write(&pkg, "build/out.js", "built");
    let upload = |compat| {
        let req = AddDirRequest {
            compat,
            side_effects_upload: true,
            ..AddDirRequest::new(&pkg)
        };
        let added = add_dir(&cas, &req).unwrap();
        upload_side_effects(&stored, "k", &added).unwrap()
    };
    let pnpm = upload(Compat::Pnpm1128);
    assert_eq!(
        diff_paths(pnpm.diff.as_ref().unwrap()),
        (vec![], vec!["build/out.js", "index.js"])
    );
    let row = index_row::decode_row(pnpm.row.as_ref().unwrap()).unwrap();
    assert_eq!(row.side_effects.unwrap()[0].1, pnpm.diff.unwrap());
    let worker = upload(Compat::Worker1100);
    assert_eq!(
        diff_paths(worker.diff.as_ref().unwrap()),
        (
            vec!["node_modules/dep/index.js"],
            vec!["index.js", "build/out.js"]
        )
    );
}

// Unix: file symlinks need Developer Mode or administrator rights on Windows.
#[cfg(unix)]
#[test]
fn pnpm_11_28_skips_a_root_node_modules_link_and_listed_files_outside() {
    use std::os::unix::fs::symlink;
    let (tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{}");
    write(&pkg, "nm.txt", "a file");
    write(&pkg, "in/y.js", "in");
    write(tmp.path(), "outside/x.js", "secret");
    symlink("nm.txt", pkg.join("node_modules")).unwrap();
    symlink("in", pkg.join("inlink")).unwrap();
    symlink(tmp.path().join("outside"), pkg.join("outlink")).unwrap();
    let list: Vec<String> = [
        "package.json",
        "outlink/x.js",
        "inlink/y.js",
        "../outside/x.js",
    ]
    .map(String::from)
    .to_vec();
    let keys_as = |compat, files: Option<&[String]>| {
        let req = AddDirRequest {
            compat,
            files,
            ..AddDirRequest::new(&pkg)
        };
        let added = add_dir(&cas, &req).unwrap();
        assert!(!added.has_unrecorded_symlinks, "not an upload");
        keys(&added)
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys_as(Compat::Worker1100, None),
        [
            "in/y.js",
            "inlink/y.js",
            "nm.txt",
            "node_modules",
            "package.json"
        ]
    );
    assert_eq!(
        keys_as(Compat::Pnpm1128, None),
        ["in/y.js", "inlink/y.js", "nm.txt", "package.json"]
    );
    assert_eq!(
        keys_as(Compat::Worker1100, Some(&list)),
        [
            "package.json",
            "outlink/x.js",
            "inlink/y.js",
            "../outside/x.js"
        ]
    );
    assert_eq!(
        keys_as(Compat::Pnpm1128, Some(&list)),
        ["package.json", "inlink/y.js"]
    );
}

#[test]
fn compat_names_are_the_js_option_values() {
    assert_eq!(Compat::parse("pnpm@11.28"), Some(Compat::Pnpm1128));
    assert_eq!(Compat::parse("@pnpm/worker@1100"), Some(Compat::Worker1100));
    assert_eq!(
        Compat::parse("pnpm@11.28.10"),
        Some(Compat::Pnpm1128Before11)
    );
    assert_eq!(Compat::parse("11.28"), None);
    assert_eq!(Compat::default(), Compat::Worker1100);
}

#[test]
fn add_dir_to_store_writes_a_fresh_row_then_uploads_side_effects_into_it() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    write(&pkg, "package.json", r#"{"name":"p","version":"1.0.0"}"#);
    let store = crate::store_handles::open(&tmp.path().join("store"));
    let row = |cache_key, write_index| RowRequest {
        files_index_file: "k\tp@1.0.0",
        side_effects_cache_key: cache_key,
        requires_prepare: None,
        write_index,
    };
    // Side effects of a package the index has no row for: nothing to attach them to.
    let orphan =
        add_dir_to_store(&store, AddDirRequest::new(&pkg), row(Some("built"), true)).unwrap();
    assert_eq!((orphan.row, orphan.side_effects), (None, None));
    assert_eq!(store.index.get("k\tp@1.0.0").unwrap(), None);
    // A fresh row, committed.
    let fresh = add_dir_to_store(&store, AddDirRequest::new(&pkg), row(None, true)).unwrap();
    assert_eq!(store.index.get("k\tp@1.0.0").unwrap(), fresh.row);
    // The build adds a file: recorded under the cache key, in the same row.
    write(&pkg, "built.js", "out");
    let upload =
        add_dir_to_store(&store, AddDirRequest::new(&pkg), row(Some("built"), false)).unwrap();
    let added = upload.side_effects.unwrap().added.unwrap();
    assert_eq!(
        added.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        ["built.js"]
    );
    // Not written: the index still holds the fresh row.
    assert_eq!(store.index.get("k\tp@1.0.0").unwrap(), fresh.row);
    assert!(upload.row.is_some_and(|r| Some(r) != fresh.row));
    store.index.close();
}
