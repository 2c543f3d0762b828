use super::*;
use crate::error_code::ErrorCode;

/// A fake store: blobs written by hand under `files/`, and a target root next to it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("store/files/aa")).unwrap();
        Fixture { dir }
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    fn blob(&self, name: &str, content: &str, mode: u32) -> PathBuf {
        let p = self.dir.path().join("store/files/aa").join(name);
        fs::write(&p, content).unwrap();
        // Windows files have no mode to set.
        #[cfg(unix)]
        fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
        #[cfg(not(unix))]
        let _ = mode;
        p
    }

    fn target(&self, name: &str) -> PathBuf {
        self.dir.path().join("nm").join(name)
    }

    /// package.json, an executable bin and a nested file.
    fn files(&self) -> FilesMap {
        vec![
            (
                "package.json".into(),
                self.blob("pkg", r#"{"name":"x"}"#, 0o644),
            ),
            (
                "bin/cli.js".into(),
                self.blob("cli-exec", "#!/bin/sh\n", 0o755),
            ),
            ("lib/deep/a.js".into(), self.blob("a", "a", 0o644)),
        ]
    }

    fn request(&self, target: &str, method: ImportMethod, files: FilesMap) -> ImportRequest {
        ImportRequest {
            target_dir: self.target(target),
            files,
            resolved_from: ResolvedFrom::Store,
            method,
            will_be_built: false,
            force: false,
            keep_modules_dir: false,
            disable_relink_local_dir_deps: false,
            safe_to_skip: false,
            blob_modes: BlobModes::Unchecked,
            blob_mode_rule: BlobModeRule::default(),
        }
    }

    fn import(&self, req: &ImportRequest) -> Result<Option<Imported>, ImportError> {
        import_package(&self.store(), req, &Stats::default())
    }
}

/// The inode (Windows: the file index).
fn ino(p: &Path) -> u64 {
    platform::file_id(p, &fs::metadata(p).unwrap()).unwrap().ino
}

fn mode(p: &Path) -> u32 {
    platform::permission_bits(&fs::metadata(p).unwrap()) & 0o777
}

fn entries_of(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn keys_are_normalised_like_path_join_and_may_not_leave_the_target() {
    assert_eq!(normalize_key("a/b.js").as_deref(), Some("a/b.js"));
    assert_eq!(normalize_key("./x/../y.js").as_deref(), Some("y.js"));
    assert_eq!(normalize_key("/abs.js").as_deref(), Some("abs.js"));
    assert_eq!(normalize_key("a//b").as_deref(), Some("a/b"));
    // `\` separates only on Windows, as in Node's `path.join` there; elsewhere it is a file name.
    if cfg!(windows) {
        assert_eq!(normalize_key("a\\b.js").as_deref(), Some("a/b.js"));
        assert_eq!(normalize_key("..\\..\\x"), None);
    } else {
        assert_eq!(normalize_key("a\\b.js").as_deref(), Some("a\\b.js"));
        assert_eq!(normalize_key("..\\..\\x").as_deref(), Some("..\\..\\x"));
    }
    for bad in ["../x", "a/../../x", "..", ".", "", "a/..", "x\0y"] {
        assert_eq!(normalize_key(bad), None, "{bad:?}");
    }
}

#[test]
fn hardlink_shares_the_blob_inode_and_keeps_modes() {
    let fx = Fixture::new();
    let files = fx.files();
    let req = fx.request("p", ImportMethod::Hardlink, files.clone());
    assert_eq!(fx.import(&req).unwrap(), Some(Imported::Hardlink));
    let t = fx.target("p");
    for (k, blob) in &files {
        assert_eq!(ino(&t.join(k)), ino(blob), "{k}");
    }
    if cfg!(unix) {
        assert_eq!(mode(&t.join("bin/cli.js")), 0o755);
    }
    // Second time: the marker is the store's blob, nothing is done.
    assert_eq!(fx.import(&req).unwrap(), None);
    // force re-imports.
    let forced = ImportRequest { force: true, ..req };
    assert_eq!(fx.import(&forced).unwrap(), Some(Imported::Hardlink));
}

#[test]
fn hardlink_relinks_when_the_marker_is_another_file() {
    let fx = Fixture::new();
    let req = fx.request("p", ImportMethod::Hardlink, fx.files());
    fx.import(&req).unwrap();
    let pkg = fx.target("p").join("package.json");
    fs::remove_file(&pkg).unwrap();
    fs::write(&pkg, "{}").unwrap();
    fs::write(fx.target("p").join("stray.js"), "").unwrap();
    assert_eq!(fx.import(&req).unwrap(), Some(Imported::Hardlink));
    assert_eq!(ino(&pkg), ino(&req.files[0].1));
    // Replaced wholesale: the stray file is gone.
    assert_eq!(entries_of(&fx.target("p")), ["bin", "lib", "package.json"]);
}

#[test]
fn copy_makes_independent_files_with_the_blob_modes() {
    let fx = Fixture::new();
    let files = fx.files();
    let req = fx.request("p", ImportMethod::Copy, files.clone());
    let stats = Stats::default();
    assert_eq!(
        import_package(&fx.store(), &req, &stats).unwrap(),
        Some(Imported::Copy)
    );
    let t = fx.target("p");
    for (k, blob) in &files {
        assert_ne!(ino(&t.join(k)), ino(blob));
        assert_eq!(fs::read(t.join(k)).unwrap(), fs::read(blob).unwrap());
        assert_eq!(mode(&t.join(k)), mode(blob));
    }
    assert_eq!(Stats::get(&stats.files_copied), 3);
    // Skipped when package.json exists, whatever it holds.
    assert_eq!(fx.import(&req).unwrap(), None);
}

#[test]
fn clone_without_reflinks_falls_back_to_copy_and_auto_ends_on_hardlink() {
    let fx = Fixture::new();
    let req = fx.request("c", ImportMethod::Clone, fx.files());
    assert_eq!(fx.import(&req).unwrap(), Some(Imported::Clone));
    assert_eq!(
        fs::read(fx.target("c").join("lib/deep/a.js")).unwrap(),
        b"a"
    );
    // This machine's filesystems have no reflinks (FICLONE → ENOTSUP).
    let auto = fx.request("a", ImportMethod::Auto, fx.files());
    let got = fx.import(&auto).unwrap();
    if got == Some(Imported::Hardlink) {
        assert_eq!(
            ino(&fx.target("a").join("package.json")),
            ino(&auto.files[0].1)
        );
        // Decided for good: the next package is hard-linked without probing.
        let next = fx.request("b", ImportMethod::Auto, fx.files());
        assert_eq!(fx.import(&next).unwrap(), Some(Imported::Hardlink));
    } else {
        assert_eq!(got, Some(Imported::Clone), "a reflink-capable filesystem");
    }
}

#[test]
fn a_failed_clone_probe_makes_no_staging_dir() {
    // The probe fails here (no reflinks): its answer is taken at once, with no staging retry,
    // whose directory a kill would leave behind. So `auto` makes the directories twice (probe,
    // then hard links), as many as two hard-link imports.
    let fx = Fixture::new();
    fs::create_dir_all(fx.dir.path().join("nm")).unwrap();
    let hard = Stats::default();
    import_package(
        &fx.store(),
        &fx.request("h", ImportMethod::Hardlink, fx.files()),
        &hard,
    )
    .unwrap();
    let auto = Stats::default();
    let got = import_package(
        &fx.store(),
        &fx.request("a", ImportMethod::Auto, fx.files()),
        &auto,
    )
    .unwrap();
    if got == Some(Imported::Hardlink) {
        let made = |s: &Stats| s.dirs_made.load(Ordering::Relaxed);
        assert_eq!(made(&auto), 2 * made(&hard));
    }
    assert_eq!(entries_of(&fx.dir.path().join("nm")), vec!["a", "h"]);
}

#[test]
fn clone_keeps_an_existing_destination_untouched() {
    // It could be a hard link into the store: never opened for writing.
    let fx = Fixture::new();
    let blob = fx.blob("kept", "store content", 0o644);
    let dst = fx.dir.path().join("dst");
    fs::hard_link(&blob, &dst).unwrap();
    let src = fx.blob("other", "other content", 0o644);
    let got = FileOp::CloneRaw.apply(&src, &dst, SrcMode::Plain);
    assert!(matches!(got, Ok(Done::Kept)) || got.is_err());
    assert_eq!(fs::read_to_string(&blob).unwrap(), "store content");
}

#[test]
fn a_package_that_will_be_built_is_never_hard_linked() {
    let fx = Fixture::new();
    let mut req = fx.request("b", ImportMethod::Hardlink, fx.files());
    req.will_be_built = true;
    let got = fx.import(&req).unwrap().unwrap();
    assert_ne!(got, Imported::Hardlink);
    assert_ne!(
        ino(&fx.target("b").join("package.json")),
        ino(&req.files[0].1)
    );
}

#[test]
fn package_json_is_written_after_every_other_file() {
    let fx = Fixture::new();
    // Many files so that the parallel path runs; the last one's blob is missing.
    let mut files: FilesMap = (0..100)
        .map(|i| (format!("f{i}.js"), fx.blob(&format!("b{i}"), "x", 0o644)))
        .collect();
    files.insert(0, ("package.json".into(), fx.blob("pkg", "{}", 0o644)));
    files.push(("missing.js".into(), fx.store().join("files/aa/nope")));
    let req = fx.request("p", ImportMethod::Copy, files);
    let err = fx.import(&req).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_ENOENT");
    assert!(err
        .message
        .starts_with("ENOENT: no such file or directory, copyfile '"));
    // Nothing is left behind: no target, no staging dir.
    assert_eq!(entries_of(&fx.dir.path().join("nm")), Vec::<String>::new());
}

#[test]
fn a_missing_blob_fails_hardlink_with_enoent() {
    let fx = Fixture::new();
    let mut files = fx.files();
    files.push(("gone.js".into(), fx.store().join("files/aa/gone")));
    let err = fx
        .import(&fx.request("p", ImportMethod::Hardlink, files))
        .unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_ENOENT");
    assert!(!fx.target("p").exists());
}

#[test]
fn an_escaping_key_fails_before_anything_is_written() {
    let fx = Fixture::new();
    let mut files = fx.files();
    files.push(("../escaped.js".into(), fx.blob("e", "e", 0o644)));
    for method in [
        ImportMethod::Hardlink,
        ImportMethod::Copy,
        ImportMethod::Auto,
    ] {
        let err = fx
            .import(&fx.request("p", method, files.clone()))
            .unwrap_err();
        assert_eq!(err.code(), "ERR_PNPM_UNSAFE_FILE_PATH");
        assert!(err.message.contains("\"../escaped.js\""));
    }
    assert!(!fx.dir.path().join("nm").exists());
}

#[test]
fn an_empty_map_and_an_unknown_method_fail_like_pnpm() {
    let fx = Fixture::new();
    let err = fx
        .import(&fx.request("p", ImportMethod::Copy, vec![]))
        .unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_LINKING_FAILED");
    assert_eq!(
        err.message,
        "pickFileFromFilesMap cannot pick a file from an empty FilesMap"
    );
    let err = ImportMethod::parse("symlink").unwrap_err();
    assert_eq!(err.message, "Unknown package import method symlink");
}

#[test]
fn a_target_that_is_a_file() {
    let fx = Fixture::new();
    fs::create_dir_all(fx.dir.path().join("nm")).unwrap();
    fs::write(fx.target("f"), "i am a file").unwrap();
    let err = fx
        .import(&fx.request("f", ImportMethod::Hardlink, fx.files()))
        .unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_ENOTDIR");
    assert_eq!(fs::read(fx.target("f")).unwrap(), b"i am a file");
    // copy (as pnpm's copy importer does) replaces it with the package.
    fx.import(&fx.request("f", ImportMethod::Copy, fx.files()))
        .unwrap();
    assert!(fx.target("f").join("package.json").is_file());
}

#[test]
fn an_existing_incomplete_target_is_replaced_through_staging() {
    let fx = Fixture::new();
    let t = fx.target("p");
    fs::create_dir_all(t.join("lib")).unwrap();
    fs::write(t.join("lib/partial.js"), "half").unwrap();
    let req = fx.request("p", ImportMethod::Hardlink, fx.files());
    assert_eq!(fx.import(&req).unwrap(), Some(Imported::Hardlink));
    assert_eq!(entries_of(&t), ["bin", "lib", "package.json"]);
    assert_eq!(entries_of(&t.join("lib")), ["deep"]);
    // No staging or swap leftovers next to it.
    assert_eq!(entries_of(&fx.dir.path().join("nm")), ["p"]);
}

#[test]
fn keep_modules_dir_moves_the_old_node_modules_into_the_new_import() {
    let fx = Fixture::new();
    let t = fx.target("p");
    fs::create_dir_all(t.join("node_modules/dep")).unwrap();
    fs::write(t.join("node_modules/dep/index.js"), "dep").unwrap();
    let mut req = fx.request("p", ImportMethod::Copy, fx.files());
    req.keep_modules_dir = true;
    req.force = true;
    fx.import(&req).unwrap();
    assert_eq!(
        fs::read(t.join("node_modules/dep/index.js")).unwrap(),
        b"dep"
    );
    assert!(t.join("package.json").is_file());
    // Without keepModulesDir the old node_modules goes with the rest.
    req.keep_modules_dir = false;
    fx.import(&req).unwrap();
    assert!(!t.join("node_modules").exists());
}

#[test]
fn keep_modules_dir_merges_when_the_package_ships_node_modules() {
    let fx = Fixture::new();
    let t = fx.target("p");
    fs::create_dir_all(t.join("node_modules/old")).unwrap();
    fs::create_dir_all(t.join("node_modules/bundled")).unwrap();
    fs::write(t.join("node_modules/bundled/x"), "old").unwrap();
    let mut files = fx.files();
    files.push((
        "node_modules/bundled/x".into(),
        fx.blob("bundled", "new", 0o644),
    ));
    let mut req = fx.request("p", ImportMethod::Copy, files);
    req.keep_modules_dir = true;
    req.force = true;
    fx.import(&req).unwrap();
    assert_eq!(entries_of(&t.join("node_modules")), ["bundled", "old"]);
    assert_eq!(fs::read(t.join("node_modules/bundled/x")).unwrap(), b"new");
}

#[test]
fn side_effects_overlay_puts_added_first_and_drops_deleted() {
    let p = |s: &str| PathBuf::from(s);
    let base: FilesMap = vec![
        ("package.json".into(), p("/s/pkg")),
        ("a.js".into(), p("/s/a")),
        ("b.js".into(), p("/s/b")),
    ];
    let diff = SideEffects {
        added: vec![
            ("build/out.node".into(), p("/s/out")),
            ("a.js".into(), p("/s/a2")),
        ],
        deleted: vec!["b.js".into()],
    };
    let got = apply_side_effects(&base, &diff, false);
    assert_eq!(
        got,
        vec![
            ("build/out.node".to_string(), p("/s/out")),
            ("a.js".to_string(), p("/s/a2")),
            ("package.json".to_string(), p("/s/pkg")),
        ]
    );
}

#[test]
fn side_effects_overlay_keeps_bundled_dependencies_listed_as_deleted_under_pnpm_11_28_11() {
    let p = |s: &str| PathBuf::from(s);
    let base: FilesMap = vec![
        ("package.json".into(), p("/s/pkg")),
        ("gone.js".into(), p("/s/gone")),
        ("node_modules/dep/index.js".into(), p("/s/dep")),
    ];
    // As an older release's upload lists them: its walk skips the package's node_modules.
    let diff = SideEffects {
        added: vec![("built.txt".into(), p("/s/built"))],
        deleted: vec!["gone.js".into(), "node_modules/dep/index.js".into()],
    };
    let names = |keep| -> Vec<String> {
        apply_side_effects(&base, &diff, keep)
            .into_iter()
            .map(|(k, _)| k)
            .collect()
    };
    assert_eq!(names(false), ["built.txt", "package.json"]);
    assert_eq!(
        names(true),
        ["built.txt", "package.json", "node_modules/dep/index.js"]
    );
}

#[test]
fn sanitize_filename_follows_sanitize_filename_1_6() {
    assert_eq!(sanitize_filename("a<b>c:d\"e|f?g*h\\i"), "abcdefghi");
    assert_eq!(sanitize_filename("con"), "");
    assert_eq!(sanitize_filename("COM1.txt"), "");
    assert_eq!(sanitize_filename("console"), "console");
    assert_eq!(sanitize_filename("..."), "");
    assert_eq!(sanitize_filename("name. . "), "name");
    assert_eq!(sanitize_filename("tab\there\u{85}"), "tabhere");
    assert_eq!(sanitize_filename(&"é".repeat(200)).len(), 254);
}

#[test]
fn case_duplicates_are_dropped_on_eexist() {
    let fx = Fixture::new();
    let files = fx.files();
    let req = fx.request("p", ImportMethod::Copy, files);
    let stats = Stats::default();
    let ctx = Ctx {
        req: &req,
        stats: &stats,
    };
    let entries = check_entries(
        &req.target_dir,
        &vec![
            ("README.md".into(), PathBuf::from("/s/1")),
            ("readme.md".into(), PathBuf::from("/s/2")),
            ("a.js".into(), PathBuf::from("/s/3")),
        ],
    )
    .unwrap();
    let eexist = ImportError::os(
        &io::Error::from_raw_os_error(libc::EEXIST),
        "link",
        Path::new("/s/2"),
        None,
    );
    let fixed = ctx.fixed_file_map(&eexist, &entries).unwrap();
    let keys: Vec<_> = fixed.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["README.md", "a.js"]);
    assert!(stats.warnings.lock().unwrap()[0].contains("[\"readme.md\"]"));
    // Nothing to drop: not handled.
    assert!(ctx.fixed_file_map(&eexist, &fixed).is_none());
}

#[test]
fn safe_to_skip_adopts_a_complete_dir_and_repairs_a_broken_one() {
    let fx = Fixture::new();
    let mut req = fx.request("shared", ImportMethod::Hardlink, fx.files());
    req.safe_to_skip = true;
    req.force = true;
    fx.import(&req).unwrap();
    let t = fx.target("shared");
    // Break it three ways: a truncated file, a directory where a file must be, a symlink.
    fs::remove_file(t.join("lib/deep/a.js")).unwrap();
    fs::write(t.join("lib/deep/a.js"), "").unwrap();
    fs::remove_file(t.join("bin/cli.js")).unwrap();
    fs::create_dir(t.join("bin/cli.js")).unwrap();
    fs::remove_file(t.join("package.json")).unwrap();
    // (File symlinks need Developer Mode or administrator rights on Windows: a missing file.)
    #[cfg(unix)]
    std::os::unix::fs::symlink(&req.files[0].1, t.join("package.json")).unwrap();
    fs::write(t.join("extra.txt"), "kept").unwrap();
    fx.import(&req).unwrap();
    for (k, blob) in &req.files {
        assert!(file_matches(&t.join(k), blob), "{k}");
    }
    // Files not in the map are left alone in a shared dir.
    assert_eq!(fs::read(t.join("extra.txt")).unwrap(), b"kept");
}

#[test]
fn rename_overwrite_replaces_a_non_empty_dir() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fs::create_dir_all(a.join("new")).unwrap();
    fs::create_dir_all(b.join("old")).unwrap();
    rename_overwrite(&a, &b).unwrap();
    assert_eq!(entries_of(dir.path()), ["b"]);
    assert_eq!(entries_of(&b), ["new"]);
}

#[test]
fn safe_to_skip_two_concurrent_importers_both_succeed_with_one_complete_dir() {
    let fx = Fixture::new();
    let mut files = fx.files();
    for i in 0..200 {
        files.push((
            format!("lib/f{i}.js"),
            fx.blob(&format!("f{i}"), &i.to_string(), 0o644),
        ));
    }
    let mut req = fx.request("shared", ImportMethod::Hardlink, files);
    req.safe_to_skip = true;
    req.force = true;
    for round in 0..5 {
        let _ = fs::remove_dir_all(fx.target("shared"));
        std::thread::scope(|s| {
            let a = s.spawn(|| fx.import(&req));
            let b = s.spawn(|| fx.import(&req));
            assert!(a.join().unwrap().is_ok(), "round {round}");
            assert!(b.join().unwrap().is_ok(), "round {round}");
        });
        for (k, blob) in &req.files {
            assert!(file_matches(&fx.target("shared").join(k), blob), "{k}");
        }
        // Nothing but the shared dir: no staging or temp leftovers, inside or next to it.
        assert_eq!(entries_of(&fx.dir.path().join("nm")), ["shared"]);
        for sub in ["", "lib", "bin"] {
            let names = entries_of(&fx.target("shared").join(sub));
            assert!(names.iter().all(|n| !n.contains("_tmp_")), "{names:?}");
        }
    }
}

#[test]
fn clone_decisions_follow_pnpms_importer_on_each_platform() {
    // `auto` probes a clone first except on Windows.
    assert!(Os::Linux.auto_tries_clone());
    assert!(Os::Darwin.auto_tries_clone());
    assert!(!Os::Win32.auto_tries_clone());
    // The clone importer copies after ENOTSUP, except on macOS, where pnpm's clone errors carry
    // no code and fail the import; no other error is a reason to copy.
    let enotsup = Some(libc::ENOTSUP);
    assert!(Os::Linux.clone_falls_back(enotsup));
    assert!(Os::Win32.clone_falls_back(enotsup));
    assert!(!Os::Darwin.clone_falls_back(enotsup));
    for other in [
        Some(libc::EXDEV),
        Some(libc::EACCES),
        Some(libc::ENOENT),
        None,
    ] {
        for os in [Os::Linux, Os::Darwin, Os::Win32] {
            assert!(!os.clone_falls_back(other), "{os:?} {other:?}");
        }
    }
}

impl Fixture {
    /// A blob named as the store names it (`files/aa/<digest>[-exec]`), with bits `mode`.
    fn store_blob(&self, n: u32, content: &str, executable: bool, mode: u32) -> PathBuf {
        let exec = if executable { "-exec" } else { "" };
        self.blob(&format!("{n:0126x}{exec}"), content, mode)
    }
}

#[cfg(unix)]
fn nlink(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(&fs::metadata(p).unwrap())
}

#[cfg(unix)]
fn named(executable: bool) -> u32 {
    blob_modes::name_mode(executable).unwrap()
}

const LINKABLE: BlobModeRule = BlobModeRule::Linkable;

#[test]
fn what_is_known_of_a_sources_mode() {
    let fx = Fixture::new();
    let blob = fx.store_blob(1, "x", false, 0o644);
    let exec = fx.store_blob(2, "x", true, 0o755);
    let other = fx.blob("not-a-blob-name", "x", 0o755);
    let unchecked = BlobModes::Unchecked;
    let checked = BlobModes::Checked([(blob.clone(), 0o755)].into());
    assert_eq!(unchecked.of(&other, LINKABLE), SrcMode::Plain);
    assert_eq!(checked.of(&other, LINKABLE), SrcMode::Plain);
    match blob_modes::name_mode(false).zip(blob_modes::name_mode(true)) {
        // Windows: no mode rule.
        None => assert_eq!(unchecked.of(&blob, LINKABLE), SrcMode::Plain),
        Some((file, executable)) => {
            let blob_mode = |named, actual| SrcMode::Blob {
                named,
                actual,
                exact: false,
            };
            assert_eq!(unchecked.of(&blob, LINKABLE), blob_mode(file, None));
            assert_eq!(unchecked.of(&exec, LINKABLE), blob_mode(executable, None));
            assert_eq!(checked.of(&blob, LINKABLE), blob_mode(file, Some(0o755)));
            // Checked and not listed: it has its name's mode.
            assert_eq!(
                checked.of(&exec, LINKABLE),
                blob_mode(executable, Some(executable))
            );
            // The rule of pnpm before 11.28.6 travels with it.
            assert_eq!(
                checked.of(&blob, BlobModeRule::Exact),
                SrcMode::Blob {
                    named: file,
                    actual: Some(0o755),
                    exact: true
                }
            );
            // Before 11.28.1 pnpm has no rule: a blob is a file like any other.
            assert_eq!(checked.of(&blob, BlobModeRule::None), SrcMode::Plain);
            assert_eq!(unchecked.of(&exec, BlobModeRule::None), SrcMode::Plain);
        }
    }
}

/// A package with a blob made executable through a hard link, an executable blob that lost
/// its x bits, and two blobs with their names' modes.
#[cfg(unix)]
fn drifted_package(fx: &Fixture) -> (FilesMap, BlobModes) {
    let files: FilesMap = vec![
        (
            "package.json".into(),
            fx.store_blob(1, "{}", false, named(false)),
        ),
        ("lib/a.js".into(), fx.store_blob(2, "a", false, 0o755)),
        (
            "bin/cli".into(),
            fx.store_blob(3, "#!/bin/sh\n", true, 0o644),
        ),
        ("ok.js".into(), fx.store_blob(4, "ok", false, named(false))),
    ];
    let drifted = vec![(files[1].1.clone(), 0o755), (files[2].1.clone(), 0o644)];
    (files, BlobModes::Checked(drifted.into_iter().collect()))
}

#[cfg(unix)]
#[test]
fn a_drifted_blob_is_copied_with_its_names_mode_by_every_method() {
    for method in [
        ImportMethod::Hardlink,
        ImportMethod::Auto,
        ImportMethod::Copy,
        ImportMethod::Clone,
        ImportMethod::CloneOrCopy,
    ] {
        // Unchecked: the importer stats the blobs (verification off); checked: the read did.
        for checked in [false, true] {
            for safe_to_skip in [false, true] {
                let case = format!("{method:?} checked={checked} safe_to_skip={safe_to_skip}");
                let fx = Fixture::new();
                let (files, modes) = drifted_package(&fx);
                let mut req = fx.request("p", method, files.clone());
                req.safe_to_skip = safe_to_skip;
                if checked {
                    req.blob_modes = modes;
                }
                let got = fx.import(&req).unwrap().unwrap();
                let t = fx.target("p");
                for (key, named_mode) in [("lib/a.js", named(false)), ("bin/cli", named(true))] {
                    assert_eq!(mode(&t.join(key)), named_mode, "{case}: {key}");
                    assert_eq!(nlink(&t.join(key)), 1, "{case}: {key}");
                }
                // The blobs keep their bits; the others are linked as the method links.
                assert_eq!(mode(&files[1].1), 0o755, "{case}");
                assert_eq!(mode(&files[2].1), 0o644, "{case}");
                let linked = ino(&t.join("ok.js")) == ino(&files[3].1);
                assert_eq!(linked, got == Imported::Hardlink, "{case}");
                assert_eq!(mode(&t.join("ok.js")), named(false), "{case}");
                assert_eq!(fs::read(t.join("lib/a.js")).unwrap(), b"a", "{case}");
            }
        }
    }
}

#[cfg(unix)]
#[test]
fn group_write_may_differ_either_way_and_other_write_only_be_missing() {
    // pnpm's `isLinkableStoreMode`, under the common umask 0o022 (names: 0o644 and 0o755).
    if named(false) != 0o644 {
        return;
    }
    for checked in [false, true] {
        let fx = Fixture::new();
        let cases = [
            // (blob bits, executable, linked)
            (0o664, false, true),
            (0o775, true, true),
            (0o646, false, false),
            (0o757, true, false),
            // Read bits count.
            (0o640, false, false),
            (0o600, false, false),
        ];
        let files: FilesMap = cases
            .iter()
            .enumerate()
            .map(|(i, &(bits, exec, _))| {
                let blob = fx.store_blob(i as u32 + 1, &i.to_string(), exec, bits);
                (format!("f{i}"), blob)
            })
            .collect();
        let mut req = fx.request("p", ImportMethod::Hardlink, files.clone());
        if checked {
            let drifted = files.iter().zip(cases).map(|((_, b), c)| (b.clone(), c.0));
            req.blob_modes = BlobModes::Checked(drifted.collect());
        }
        fx.import(&req).unwrap();
        for ((key, blob), (bits, exec, linked)) in files.iter().zip(cases) {
            let got = fx.target("p").join(key);
            let case = format!("{bits:o} checked={checked}");
            assert_eq!(ino(&got) == ino(blob), linked, "{case}");
            let want = if linked { bits } else { named(exec) };
            assert_eq!(mode(&got), want, "{case}");
        }
    }
}

#[cfg(unix)]
#[test]
fn checked_modes_are_taken_as_read_without_a_stat_of_the_importers_own() {
    // The read found every blob with its name's mode; one drifts after it: the importer, which
    // stats nothing when the read did, links it (pnpm would have read and linked it alike
    // had the chmod come after its own stat).
    let fx = Fixture::new();
    let (files, _) = drifted_package(&fx);
    let mut req = fx.request("p", ImportMethod::Hardlink, files.clone());
    req.blob_modes = BlobModes::Checked(Default::default());
    fx.import(&req).unwrap();
    assert_eq!(ino(&fx.target("p").join("lib/a.js")), ino(&files[1].1));
}

#[cfg(unix)]
#[test]
fn a_shared_dir_is_repaired_where_a_files_mode_is_not_what_an_import_gives_it() {
    // pnpm's `mismatchReason`, under the common umask 0o022.
    if named(false) != 0o644 {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let chmod = |p: &Path, mode| fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    let fx = Fixture::new();
    let files: FilesMap = ["package.json", "drifted.js", "group.js", "copied.js"]
        .iter()
        .enumerate()
        .map(|(i, key)| {
            (
                key.to_string(),
                fx.store_blob(i as u32 + 1, key, false, 0o644),
            )
        })
        .collect();
    let mut req = fx.request("shared", ImportMethod::Hardlink, files.clone());
    req.safe_to_skip = true;
    req.force = true;
    fx.import(&req).unwrap();
    let t = fx.target("shared");
    // Through the links: one blob drifts, one only gains group write (linkable).
    chmod(&t.join("drifted.js"), 0o755);
    chmod(&t.join("group.js"), 0o664);
    // A copy with the blob's bytes must have the name's mode exactly.
    fs::remove_file(t.join("copied.js")).unwrap();
    fs::write(t.join("copied.js"), "copied.js").unwrap();
    chmod(&t.join("copied.js"), 0o664);
    fx.import(&req).unwrap();
    assert_eq!(mode(&t.join("drifted.js")), 0o644);
    assert_eq!(nlink(&t.join("drifted.js")), 1);
    assert_eq!(ino(&t.join("group.js")), ino(&files[2].1));
    assert_eq!(ino(&t.join("copied.js")), ino(&files[3].1));
    assert_eq!(mode(&t.join("copied.js")), 0o644);
}

/// The descriptors this process holds on directories under `root`.
#[cfg(target_os = "linux")]
fn open_dir_handles_under(root: &Path) -> Vec<PathBuf> {
    fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.starts_with(root) && target.is_dir())
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn hard_links_from_many_shards_hold_one_handle_per_store() {
    // A handle per shard grew the descriptor table past its first 64 slots on every install,
    // and the kernel makes every thread of the process wait while it grows it.
    let fx = Fixture::new();
    let files: FilesMap = (0..80)
        .map(|i| {
            let shard = fx.store().join(format!("files/{i:02x}"));
            fs::create_dir_all(&shard).unwrap();
            let blob = shard.join(format!("blob{i}"));
            fs::write(&blob, format!("{i}")).unwrap();
            (format!("f{i}.js"), blob)
        })
        .chain([("package.json".into(), fx.blob("pkg", "{}", 0o644))])
        .collect();
    let req = fx.request("p", ImportMethod::Hardlink, files.clone());
    assert_eq!(fx.import(&req).unwrap(), Some(Imported::Hardlink));
    for (k, blob) in &files {
        assert_eq!(ino(&fx.target("p").join(k)), ino(blob), "{k}");
    }
    let held = open_dir_handles_under(&fx.store());
    // One per store, not one per shard (80 here). Another test running at the same time may
    // empty the shared map of handles (it keeps 16 stores) while a thread still holds this
    // store's, so that another thread opens a second one: a few, never a shard's worth.
    assert!(held.len() <= 4, "{held:?}");
    assert!(held.iter().all(|d| d.ends_with("files")), "{held:?}");
}
