use std::fs;
#[cfg(unix)] // the side-effects symlink tests below
use std::path::Path;

use super::*;
use crate::error_code::ErrorCode;
use crate::index_row::PackageFileInfo;
use crate::row_files::read_files;
#[cfg(unix)]
use crate::symlink_entry::SYMLINK_MODE;
#[cfg(unix)]
use crate::test_support::names;

#[test]
fn batch_links_packages_then_their_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let files = root.join("store/files/ab");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join("pkg"), "{}").unwrap();
    fs::write(files.join("idx"), "1").unwrap();
    let map: FilesMap = vec![
        ("package.json".into(), files.join("pkg")),
        ("index.js".into(), files.join("idx")),
    ];
    let vs = root.join("node_modules/.pnpm");
    let packages: Vec<BatchPackage> = (0..20)
        .map(|i| {
            BatchPackage::from_store(
                vs.join(format!("p{i}@1/node_modules/p{i}")),
                FilesSource::Map {
                    files: map.clone(),
                    side_effects: vec![],
                    symlinks: vec![],
                },
            )
        })
        .collect();
    let symlinks = vec![SymlinkDep {
        children: vec![("p1".into(), vs.join("p1@1/node_modules/p1"))],
        modules: vs.join("p0@1/node_modules"),
        name: "p0".into(),
    }];
    let req = BatchRequest {
        store_dir: root.join("store"),
        method: ImportMethod::Hardlink,
        packages,
        symlinks,
        blob_mode_rule: BlobModeRule::default(),
        keep_bundled: false,
    };
    let stats = Stats::default();
    let out = link_batch(req.clone(), &stats);
    assert!(out
        .packages
        .iter()
        .all(|p| p.as_ref().unwrap().imported == Some(Imported::Hardlink)));
    assert!(out.symlinks.is_ok());
    let counts = Counts::of(&stats);
    assert_eq!(counts.files_linked, 40);
    assert_eq!(counts.symlinks, 1);
    assert_eq!(counts.packages_imported, 20);
    assert!(vs.join("p0@1/node_modules/p1/index.js").is_file());
    // A second run finds everything in place.
    let stats = Stats::default();
    let out = link_batch(req, &stats);
    assert!(out
        .packages
        .iter()
        .all(|p| p.as_ref().unwrap().imported.is_none()));
    assert_eq!(Counts::of(&stats).packages_skipped, 20);
}

#[test]
fn batch_reads_file_maps_from_the_store_index() {
    use crate::index_row::{encode_row, PackageFilesIndex};
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("v11");
    let digest = format!("ab{}", "c".repeat(126));
    fs::create_dir_all(store_dir.join("files/ab")).unwrap();
    fs::write(store_dir.join("files/ab").join(&digest[2..]), "{}").unwrap();
    fs::write(
        store_dir
            .join("files/ab")
            .join(format!("{}-exec", &digest[2..])),
        "#!",
    )
    .unwrap();
    let info = |mode| PackageFileInfo {
        checked_at: Some(1.0),
        digest: digest.clone(),
        mode,
        size: 2,
    };
    let row = PackageFilesIndex {
        requires_build: Some(false),
        manifest: None,
        algo: "sha512".into(),
        files: vec![
            ("package.json".into(), info(0o644)),
            ("bin/x".into(), info(0o755)),
        ],
        side_effects: None,
    };
    let s = store_handles::open(&store_dir);
    s.index
        .write(vec![("key\tx@1".into(), encode_row(&row))])
        .unwrap();
    let store_dir_text = store_dir.display().to_string();
    let (files, diff, symlinks) = read_files(&s, &store_dir_text, "key\tx@1", None).unwrap();
    assert!(diff.is_none() && symlinks.is_empty());
    assert_eq!(
        files[0].1,
        PathBuf::from(format!("{store_dir_text}/files/ab/{}", &digest[2..]))
    );
    assert_eq!(
        files[1].1,
        PathBuf::from(format!("{store_dir_text}/files/ab/{}-exec", &digest[2..]))
    );
    let err = read_files(&s, &store_dir_text, "nope\tx@1", None).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_MISSING_INDEX_ROW");
    s.index.close();
}

/// A store whose row for `pkg` has a side-effects entry `k` adding `generated.js` and the
/// symlink entries `links` (link path, target text), as pnpm 11.28 records them.
#[cfg(unix)]
fn store_with_side_effect_links(
    store_dir: &Path,
    links: &[(&str, &str)],
) -> std::sync::Arc<store_handles::Store> {
    use crate::index_row::{encode_row, PackageFilesIndex, SideEffectsDiff};
    let mut n = 0;
    let mut blob = |text: &str| {
        n += 1;
        let digest = format!("ab{n:0>126}");
        fs::create_dir_all(store_dir.join("files/ab")).unwrap();
        fs::write(store_dir.join("files/ab").join(&digest[2..]), text).unwrap();
        digest
    };
    let info = |digest: String, mode| PackageFileInfo {
        checked_at: Some(1.0),
        digest,
        mode,
        size: 1,
    };
    let mut added = vec![("generated.js".to_string(), info(blob("gen"), 0o644))];
    for (path, target) in links {
        added.push((path.to_string(), info(blob(target), SYMLINK_MODE)));
    }
    let row = PackageFilesIndex {
        requires_build: Some(true),
        manifest: None,
        algo: "sha512".into(),
        files: vec![
            ("package.json".into(), info(blob("{}"), 0o644)),
            ("lib/index.js".into(), info(blob("x"), 0o644)),
        ],
        side_effects: Some(vec![(
            "k".into(),
            SideEffectsDiff {
                remote_origin: false,
                deleted: None,
                added: Some(added),
            },
        )]),
    };
    let s = store_handles::open(store_dir);
    s.index
        .write(vec![("pkg".into(), encode_row(&row))])
        .unwrap();
    s
}

#[cfg(unix)]
fn link_side_effects(store_dir: &Path, target: &Path) -> PackageOutcome {
    let mut pkg =
        BatchPackage::from_store(target.to_path_buf(), FilesSource::IndexKey("pkg".into()));
    pkg.side_effects_cache_key = Some("k".into());
    pkg.requires_build = true;
    let req = BatchRequest {
        store_dir: store_dir.to_path_buf(),
        method: ImportMethod::Copy,
        packages: vec![pkg],
        symlinks: vec![],
        blob_mode_rule: BlobModeRule::default(),
        keep_bundled: false,
    };
    let mut out = link_batch(req, &Stats::default());
    out.packages.pop().unwrap().unwrap()
}

#[cfg(unix)]
#[test]
fn side_effects_symlinks_are_restored_after_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("v11");
    let s = store_with_side_effect_links(
        &store_dir,
        &[("alias.js", "generated.js"), ("lib/up", "../generated.js")],
    );
    let store_dir_text = store_dir.display().to_string();
    let (files, diff, symlinks) = read_files(&s, &store_dir_text, "pkg", Some("k")).unwrap();
    assert_eq!(files.len(), 2);
    let diff = diff.unwrap();
    let added: Vec<&str> = diff.added.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(added, ["generated.js"]);
    assert_eq!(
        symlinks,
        [
            ("alias.js".to_string(), "generated.js".to_string()),
            ("lib/up".to_string(), "../generated.js".to_string())
        ]
    );

    let target = dir.path().join("node_modules/pkg");
    let outcome = link_side_effects(&store_dir, &target);
    assert!(outcome.is_built);
    assert_eq!(
        fs::read_link(target.join("alias.js")).unwrap(),
        Path::new("generated.js")
    );
    assert_eq!(fs::read_to_string(target.join("alias.js")).unwrap(), "gen");
    assert_eq!(
        fs::read_link(target.join("lib/up")).unwrap(),
        Path::new("../generated.js")
    );
    // Again over a wrong link and a regular file: both corrected.
    fs::remove_file(target.join("alias.js")).unwrap();
    fs::write(target.join("alias.js"), "generated.js").unwrap();
    fs::remove_file(target.join("lib/up")).unwrap();
    std::os::unix::fs::symlink("elsewhere", target.join("lib/up")).unwrap();
    link_side_effects(&store_dir, &target);
    assert_eq!(
        fs::read_link(target.join("alias.js")).unwrap(),
        Path::new("generated.js")
    );
    assert_eq!(
        fs::read_link(target.join("lib/up")).unwrap(),
        Path::new("../generated.js")
    );
    s.index.close();
}

#[cfg(unix)]
#[test]
fn unrestorable_side_effects_symlinks_drop_the_side_effects_entry() {
    for links in [
        &[("alias.js", "../../x")][..],
        &[("alias.js", "generated.js"), ("a", "/etc")],
        &[("alias.js", "./generated.js")],
        &[("alias.js", "node_modules/x")],
        &[("node_modules/x", "y")],
        // A restored file below a recorded link would be written through it.
        &[("lib", "generated.js")],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store_dir = dir.path().join("v11");
        let s = store_with_side_effect_links(&store_dir, links);
        let store_dir_text = store_dir.display().to_string();
        let (files, diff, symlinks) = read_files(&s, &store_dir_text, "pkg", Some("k")).unwrap();
        assert!(diff.is_none() && symlinks.is_empty(), "{links:?}");
        assert_eq!(files.len(), 2);
        let target = dir.path().join("a/b/node_modules/pkg");
        let outcome = link_side_effects(&store_dir, &target);
        assert!(!outcome.is_built, "{links:?}");
        assert_eq!(names(&target), ["lib", "package.json"], "{links:?}");
        assert_eq!(names(&dir.path().join("a/b")), ["node_modules"]);
        assert_eq!(names(dir.path()), ["a", "v11"]);
        s.index.close();
    }
}

#[cfg(unix)]
#[test]
fn a_missing_symlink_blob_drops_the_side_effects_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("v11");
    let s = store_with_side_effect_links(&store_dir, &[("alias.js", "generated.js")]);
    // The link's blob is the last one written.
    fs::remove_file(store_dir.join(format!("files/ab/{:0>126}", 2))).unwrap();
    let store_dir_text = store_dir.display().to_string();
    let (_, diff, symlinks) = read_files(&s, &store_dir_text, "pkg", Some("k")).unwrap();
    assert!(diff.is_none() && symlinks.is_empty());
    s.index.close();
}

/// A one-package batch from a file map carrying side-effects symlinks, as the `importPackage`
/// hook hands them over.
#[cfg(unix)]
fn link_map_with_symlinks(
    root: &Path,
    target: &Path,
    symlinks: &[(&str, &str)],
) -> Result<PackageOutcome, ImportError> {
    let files = root.join("store/files/ab");
    fs::create_dir_all(&files).unwrap();
    fs::write(files.join("pkg"), "{}").unwrap();
    let package = BatchPackage::from_store(
        target.to_path_buf(),
        FilesSource::Map {
            files: vec![
                ("package.json".into(), files.join("pkg")),
                ("sub/a.json".into(), files.join("pkg")),
            ],
            side_effects: vec![],
            symlinks: symlinks
                .iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
        },
    );
    let req = BatchRequest {
        store_dir: root.join("store"),
        method: ImportMethod::Copy,
        packages: vec![package],
        symlinks: vec![],
        blob_mode_rule: BlobModeRule::default(),
        keep_bundled: false,
    };
    link_batch(req, &Stats::default()).packages.pop().unwrap()
}

#[cfg(unix)]
#[test]
fn symlinks_handed_over_with_a_files_map_are_placed_after_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("node_modules/pkg");
    link_map_with_symlinks(
        dir.path(),
        &target,
        &[
            ("alias.json", "package.json"),
            ("lib/up", "../package.json"),
        ],
    )
    .unwrap();
    assert_eq!(
        fs::read_link(target.join("alias.json")).unwrap(),
        Path::new("package.json")
    );
    assert_eq!(fs::read_to_string(target.join("lib/up")).unwrap(), "{}");
}

#[cfg(unix)]
#[test]
fn a_handed_over_symlink_below_another_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("node_modules/pkg");
    // `lib` → `sub`, then `lib/x` would be written through it into `sub/`.
    let err = link_map_with_symlinks(
        dir.path(),
        &target,
        &[("lib", "sub"), ("lib/x", "../package.json")],
    )
    .unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_LINKING_FAILED");
    assert!(err.message.contains("below the symlink"), "{}", err.message);
    assert!(!target.join("sub/x").exists());
}

#[cfg(unix)]
#[test]
fn a_handed_over_symlink_path_that_leaves_the_package_is_refused() {
    for bad in ["../x", "a/../../x", "", "a//b", "./a", "a\\b"] {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("node_modules/pkg");
        let err =
            link_map_with_symlinks(dir.path(), &target, &[(bad, "package.json")]).unwrap_err();
        assert_eq!(err.code(), "ERR_PNPM_UNSAFE_FILE_PATH", "{bad:?}");
        assert!(!target.exists(), "{bad:?}: nothing is written");
    }
}
