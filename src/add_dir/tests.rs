use super::*;

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
    assert_eq!(upload.diff.deleted, Some(vec!["remove.js".to_string()]));
    let added: Vec<&str> = upload
        .diff
        .added
        .as_ref()
        .unwrap()
        .iter()
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(added, ["change.js", "build/out.node"]);
    assert_eq!(upload.requires_prepare, Some(true));
    let row = package_index::decode_row(&upload.row).unwrap();
    assert_eq!(row.side_effects.unwrap()[0].0, "linux;x64;node24");

    let unchanged = upload_side_effects(&stored, "k", &add(&cas, &pkg)).unwrap();
    assert_ne!(unchanged.diff, SideEffectsDiff::default());
    let (same_row, _) = fresh_row(&add(&cas, &pkg), None);
    let nothing = upload_side_effects(&same_row, "k", &add(&cas, &pkg)).unwrap();
    assert_eq!(
        nothing.diff,
        SideEffectsDiff::default(),
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
    assert_eq!(err.code().as_deref(), Some("ERR_PNPM_ALGO_MISMATCH"));
}

#[test]
fn invalid_package_json_fails_without_a_code() {
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{ nope");
    let err = add_dir(&cas, &AddDirRequest::new(&pkg)).unwrap_err();
    assert_eq!(err.code(), None, "pnpm's caller supplies its default code");
}
