use std::fs;
use std::path::Path;

use super::*;
use crate::index_row::{encode_row, PackageFileInfo, PackageFilesIndex};
use crate::value::Value;

/// Writes each file's text as a blob: the row's entries.
fn blobs(s: &store_handles::Store, files: &[(&str, &str)]) -> Vec<(String, PackageFileInfo)> {
    files
        .iter()
        .map(|(path, text)| {
            let stored = s.cas.write(text.as_bytes(), 0o644).unwrap();
            let info = PackageFileInfo {
                checked_at: Some(stored.checked_at),
                digest: stored.digest,
                mode: 0o644,
                size: text.len() as u64,
            };
            (path.to_string(), info)
        })
        .collect()
}

/// Writes `files` as blobs and a row for `name@version` under the key `k\t<name>@<version>`.
fn add_package(
    store_dir: &Path,
    name: &str,
    version: &str,
    files: &[(&str, &str)],
    requires_build: bool,
) -> String {
    let s = store_handles::open(store_dir);
    let files = blobs(&s, files);
    let row = PackageFilesIndex {
        requires_build: Some(requires_build),
        manifest: Some(Value::Object(vec![
            ("name".into(), Value::String(name.into())),
            ("version".into(), Value::String(version.into())),
        ])),
        algo: "sha512".into(),
        files,
        side_effects: None,
    };
    let key = format!("k\t{name}@{version}");
    s.index
        .write(vec![(key.clone(), encode_row(&row))])
        .unwrap();
    key
}

fn package(
    project: &Path,
    key: &str,
    name: &str,
    version: &str,
    deps: &[(&str, &str)],
) -> StoredPackage {
    let vstore = project.join("node_modules/.pnpm");
    let modules = vstore.join(format!("{name}@{version}/node_modules"));
    StoredPackage {
        key: key.into(),
        expected: ExpectedPkg {
            name: Some(name.into()),
            version: Some(version.into()),
        },
        target_dir: modules.join(name),
        deps: SymlinkDep {
            children: deps
                .iter()
                .map(|(alias, dir)| {
                    (
                        alias.to_string(),
                        vstore.join(dir).join("node_modules").join(alias),
                    )
                })
                .collect(),
            modules,
            name: name.into(),
        },
        build_ignored: false,
        side_effects_cache_key: None,
        patched_cache_key: None,
    }
}

fn request(store_dir: &Path, packages: Vec<StoredPackage>) -> StoredRequest {
    StoredRequest {
        store_dir: store_dir.display().to_string(),
        method: ImportMethod::Hardlink,
        verify_store_integrity: true,
        strict_store_pkg_content_check: true,
        blob_mode_rule: BlobModeRule::default(),
        keep_bundled: false,
        packages,
    }
}

#[test]
fn links_what_the_store_serves_and_leaves_out_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store/v11");
    let project = dir.path().join("project");
    let a = add_package(
        &store_dir,
        "a",
        "1.0.0",
        &[("package.json", "{\"name\":\"a\"}"), ("index.js", "a")],
        false,
    );
    let built = add_package(&store_dir, "b", "1.0.0", &[("package.json", "{}")], true);
    let unverified = add_package(
        &store_dir,
        "c",
        "1.0.0",
        &[("package.json", "{}"), ("gone.js", "c only")],
        false,
    );
    let renamed = add_package(&store_dir, "d", "1.0.0", &[("package.json", "{}")], false);
    fs::remove_file(
        store_handles::open(&store_dir)
            .cas
            .blob_path(&crate::blob_files::sha512_hex(b"c only"), false),
    )
    .unwrap();

    let req = request(
        &store_dir,
        vec![
            package(&project, &a, "a", "1.0.0", &[("b", "b@1.0.0")]),
            package(&project, &built, "b", "1.0.0", &[]),
            package(&project, &unverified, "c", "1.0.0", &[]),
            package(&project, &renamed, "not-d", "1.0.0", &[]),
            package(&project, "k\tmissing@1.0.0", "missing", "1.0.0", &[]),
        ],
    );
    let stats = Stats::default();
    let outcome = link_stored(&req, &stats).unwrap();
    assert_eq!(outcome.packages[0], Ok(Some(Imported::Hardlink)));
    assert_eq!(outcome.packages[1], Err(LeftOut::RequiresBuild));
    assert_eq!(outcome.packages[2], Err(LeftOut::Unverified));
    assert!(
        matches!(&outcome.packages[3], Err(LeftOut::Unreadable(m)) if m.contains("mismatch")),
        "{:?}",
        outcome.packages[3]
    );
    assert_eq!(outcome.packages[4], Err(LeftOut::NotInStore));
    assert!(outcome.builds_ignored.is_empty());

    let a_dir = &req.packages[0].target_dir;
    assert_eq!(fs::read_to_string(a_dir.join("index.js")).unwrap(), "a");
    // Its dependency link is there, even though b itself was left for pnpm to install.
    assert_eq!(
        fs::read_link(a_dir.parent().unwrap().join("b")).unwrap(),
        Path::new("../../b@1.0.0/node_modules/b")
    );
    for left_out in &req.packages[1..] {
        assert!(
            !left_out.target_dir.exists(),
            "{}",
            left_out.target_dir.display()
        );
    }
    // A second run finds `a` in place.
    let again = link_stored(
        &request(&store_dir, req.packages[..1].to_vec()),
        &Stats::default(),
    )
    .unwrap();
    assert_eq!(again.packages, vec![Ok(None)]);
    store_handles::open(&store_dir).index.close();
}

#[test]
fn a_failed_dependency_link_leaves_its_package_out_entirely() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store/v11");
    let project = dir.path().join("project");
    let a = add_package(&store_dir, "a", "1.0.0", &[("package.json", "{}")], false);
    let e = add_package(&store_dir, "e", "1.0.0", &[("package.json", "{}")], false);
    let req = request(
        &store_dir,
        vec![
            package(&project, &a, "a", "1.0.0", &[("../escape", "x@1")]),
            package(&project, &e, "e", "1.0.0", &[]),
        ],
    );
    let outcome = link_stored(&req, &Stats::default()).unwrap();
    assert!(
        matches!(&outcome.packages[0], Err(LeftOut::Failed(m)) if m.contains("invalid alias")),
        "{:?}",
        outcome.packages[0]
    );
    assert!(!req.packages[0].target_dir.exists());
    assert_eq!(outcome.packages[1], Ok(Some(Imported::Hardlink)));
    store_handles::open(&store_dir).index.close();
}

#[test]
fn a_package_whose_build_pnpm_ignores_gets_files_of_its_own_and_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let project = dir.path().join("project");
    let built = add_package(&store_dir, "b", "1.0.0", &[("package.json", "{}")], true);
    let plain = add_package(&store_dir, "a", "1.0.0", &[("package.json", "{}")], false);
    let mut ignored = package(&project, &built, "b", "1.0.0", &[]);
    ignored.build_ignored = true;
    let mut plain = package(&project, &plain, "a", "1.0.0", &[]);
    plain.build_ignored = true;
    let req = request(&store_dir, vec![plain, ignored]);
    let outcome = link_stored(&req, &Stats::default()).unwrap();
    // pnpm's `needsPrivateFiles`: its row requires a build and it is imported unbuilt.
    assert!(matches!(
        outcome.packages[1],
        Ok(Some(Imported::Copy | Imported::Clone))
    ));
    assert_eq!(outcome.packages[0], Ok(Some(Imported::Hardlink)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let links = |i: usize| {
            fs::metadata(req.packages[i].target_dir.join("package.json"))
                .unwrap()
                .nlink()
        };
        assert_eq!((links(0), links(1)), (2, 1));
    }
    assert_eq!(outcome.builds_ignored, [1]);
}

#[test]
fn a_build_ignored_package_whose_links_fail_is_not_reported_as_linked() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let project = dir.path().join("project");
    let built = add_package(&store_dir, "b", "1.0.0", &[("package.json", "{}")], true);
    let other = add_package(&store_dir, "c", "1.0.0", &[("package.json", "{}")], true);
    let mut failing = package(&project, &built, "b", "1.0.0", &[("../escape", "x@1")]);
    failing.build_ignored = true;
    let mut ok = package(&project, &other, "c", "1.0.0", &[]);
    ok.build_ignored = true;
    let req = request(&store_dir, vec![failing, ok]);
    let outcome = link_stored(&req, &Stats::default()).unwrap();
    assert!(matches!(&outcome.packages[0], Err(LeftOut::Failed(_))));
    assert_eq!(outcome.builds_ignored, [1]);
}

/// Records side effects under `cache_key` in `key`'s row: `added` files as blobs, `deleted` paths.
fn add_side_effects(
    store_dir: &Path,
    key: &str,
    cache_key: &str,
    added: &[(&str, &str)],
    deleted: &[&str],
) {
    let s = store_handles::open(store_dir);
    let added = blobs(&s, added);
    let diff = crate::index_row::SideEffectsDiff {
        remote_origin: false,
        deleted: Some(deleted.iter().map(|p| p.to_string()).collect()),
        added: Some(added),
    };
    let row = s.index.get(key).unwrap().unwrap();
    let row = crate::index_row::with_side_effects(&row, cache_key, &diff).unwrap();
    s.index.write(vec![(key.to_string(), row)]).unwrap();
}

#[test]
fn a_build_is_imported_from_the_side_effects_under_its_key_or_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let project = dir.path().join("project");
    let files = [
        ("package.json", "{}"),
        ("install.js", "x"),
        ("gone.txt", "y"),
    ];
    let cached = add_package(&store_dir, "b", "1.0.0", &files, true);
    add_side_effects(
        &store_dir,
        &cached,
        "engine;deps=1",
        &[("build/out.node", "built")],
        &["gone.txt"],
    );
    let elsewhere = add_package(&store_dir, "c", "1.0.0", &files, true);
    add_side_effects(
        &store_dir,
        &elsewhere,
        "engine;deps=other",
        &[("build/out.node", "built")],
        &[],
    );
    let plain = add_package(&store_dir, "a", "1.0.0", &[("package.json", "{}")], false);
    let mut hit = package(&project, &cached, "b", "1.0.0", &[]);
    hit.side_effects_cache_key = Some("engine;deps=1".into());
    let mut miss = package(&project, &elsewhere, "c", "1.0.0", &[]);
    miss.side_effects_cache_key = Some("engine;deps=1".into());
    // A key for a package that does not build is not looked at.
    let mut unbuilt = package(&project, &plain, "a", "1.0.0", &[]);
    unbuilt.side_effects_cache_key = Some("engine;deps=1".into());
    let req = request(&store_dir, vec![hit, miss, unbuilt]);
    let outcome = link_stored(&req, &Stats::default()).unwrap();
    assert_eq!(outcome.packages[0], Ok(Some(Imported::Hardlink)));
    let b = &req.packages[0].target_dir;
    assert_eq!(
        fs::read_to_string(b.join("build/out.node")).unwrap(),
        "built"
    );
    assert!(b.join("install.js").exists());
    assert!(!b.join("gone.txt").exists());
    assert_eq!(outcome.packages[1], Err(LeftOut::NoSideEffects));
    assert!(!req.packages[1].target_dir.exists());
    assert_eq!(outcome.packages[2], Ok(Some(Imported::Hardlink)));
    assert_eq!(outcome.built, [0]);
    assert!(outcome.builds_ignored.is_empty());
    store_handles::open(&store_dir).index.close();
}

#[test]
fn side_effects_a_remote_cache_restored_are_not_imported_as_a_local_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let project = dir.path().join("project");
    let key = add_package(&store_dir, "b", "1.0.0", &[("package.json", "{}")], true);
    add_side_effects(
        &store_dir,
        &key,
        "engine;deps=1",
        &[("out.node", "built")],
        &[],
    );
    // Mark the entry as pnpm's remote restorer writes it.
    let s = store_handles::open(&store_dir);
    let mut row = crate::index_row::row_fields(&s.index.get(&key).unwrap().unwrap()).unwrap();
    let (_, Value::Map(entries)) = row.iter_mut().find(|(k, _)| k == "sideEffects").unwrap() else {
        panic!("no sideEffects map")
    };
    let Value::Object(diff) = &mut entries[0].1 else {
        panic!("the diff is not an object")
    };
    diff.push((
        "remoteOrigin".into(),
        Value::Object(vec![("channel".into(), Value::String("https://r".into()))]),
    ));
    let bytes = crate::msgpackr::encode(&Value::Object(row));
    s.index.write(vec![(key.clone(), bytes)]).unwrap();
    let mut pkg = package(&project, &key, "b", "1.0.0", &[]);
    pkg.side_effects_cache_key = Some("engine;deps=1".into());
    let outcome = link_stored(&request(&store_dir, vec![pkg]), &Stats::default()).unwrap();
    assert_eq!(outcome.packages[0], Err(LeftOut::NoSideEffects));
    store_handles::open(&store_dir).index.close();
}

#[test]
fn a_patched_package_takes_the_key_for_its_case() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let project = dir.path().join("project");
    let files = [("package.json", "{}"), ("index.js", "1")];
    let plain = add_package(&store_dir, "a", "1.0.0", &files, false);
    add_side_effects(
        &store_dir,
        &plain,
        "e;patch=p",
        &[("index.js", "patched")],
        &[],
    );
    let built = add_package(&store_dir, "b", "1.0.0", &files, true);
    add_side_effects(
        &store_dir,
        &built,
        "e;deps=d;patch=p",
        &[("index.js", "patched and built")],
        &[],
    );
    let missing = add_package(&store_dir, "c", "1.0.0", &files, false);
    let with_keys = |key: &str, name: &str| {
        let mut p = package(&project, key, name, "1.0.0", &[]);
        p.side_effects_cache_key = Some("e;deps=d;patch=p".into());
        p.patched_cache_key = Some("e;patch=p".into());
        p
    };
    let req = request(
        &store_dir,
        vec![
            with_keys(&plain, "a"),
            with_keys(&built, "b"),
            with_keys(&missing, "c"),
        ],
    );
    let outcome = link_stored(&req, &Stats::default()).unwrap();
    let index = |i: usize| fs::read_to_string(req.packages[i].target_dir.join("index.js")).unwrap();
    assert_eq!(index(0), "patched");
    assert_eq!(index(1), "patched and built");
    assert_eq!(outcome.packages[2], Err(LeftOut::NoSideEffects));
    assert_eq!(outcome.built, [0, 1]);
    store_handles::open(&store_dir).index.close();
}

#[cfg(unix)]
#[test]
fn a_blob_made_executable_through_a_link_is_copied_with_its_names_mode_verified_or_not() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store/v11");
    let key = add_package(
        &store_dir,
        "a",
        "1.0.0",
        &[("package.json", "{}"), ("cli.js", "run")],
        false,
    );
    let blob = store_handles::open(&store_dir)
        .cas
        .blob_path(&crate::blob_files::sha512_hex(b"run"), false);
    fs::set_permissions(&blob, fs::Permissions::from_mode(0o755)).unwrap();
    for verify in [true, false] {
        let project = dir.path().join(format!("project-{verify}"));
        let mut req = request(&store_dir, vec![package(&project, &key, "a", "1.0.0", &[])]);
        req.verify_store_integrity = verify;
        let outcome = link_stored(&req, &Stats::default()).unwrap();
        assert_eq!(outcome.packages, vec![Ok(Some(Imported::Hardlink))]);
        let target = req.packages[0].target_dir.clone();
        let copied = fs::metadata(target.join("cli.js")).unwrap();
        let named = crate::blob_modes::name_mode(false).unwrap();
        assert_eq!((copied.mode() & 0o777, copied.nlink()), (named, 1));
        assert_eq!(fs::metadata(&blob).unwrap().mode() & 0o777, 0o755);
        // The others are linked.
        assert!(fs::metadata(target.join("package.json")).unwrap().nlink() > 1);
    }
}
