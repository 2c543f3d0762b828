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
    let diff = upload.diff.unwrap();
    assert_eq!(diff.deleted, Some(vec!["remove.js".to_string()]));
    let added: Vec<&str> = diff
        .added
        .as_ref()
        .unwrap()
        .iter()
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(added, ["change.js", "build/out.node"]);
    assert_eq!(upload.requires_prepare, Some(true));
    let row = package_index::decode_row(&upload.row.unwrap()).unwrap();
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
    assert_eq!(err.code().as_deref(), Some("ERR_PNPM_ALGO_MISMATCH"));
}

#[test]
fn invalid_package_json_fails_without_a_code() {
    let (_tmp, pkg, cas) = setup();
    write(&pkg, "package.json", "{ nope");
    let err = add_dir(&cas, &AddDirRequest::new(&pkg)).unwrap_err();
    assert_eq!(err.code(), None, "pnpm's caller supplies its default code");
}

// Unix: the tests that record symlinks make file symlinks (see below).
#[cfg(unix)]
fn add_recording(cas: &Cas, pkg: &Path, files: Option<&[String]>) -> AddedDir {
    add_dir(
        cas,
        &AddDirRequest {
            files,
            record_symlinks: true,
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
    assert_eq!(link.info.digest, crate::cas::sha512_hex(b"lib"));
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
    let row = package_index::decode_row(dropped.row.as_ref().unwrap()).unwrap();
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
