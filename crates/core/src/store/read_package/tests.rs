use crate::error_code::ErrorCode;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::*;
use crate::blob_files::Cas;
use crate::index_row::encode_row;

struct Fixture {
    _tmp: tempfile::TempDir,
    store_dir: String,
    cas: Cas,
    index: StoreIndex,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let store_dir = tmp.path().join("v11").to_string_lossy().into_owned();
    Fixture {
        cas: Cas::new(Path::new(&store_dir)),
        index: StoreIndex::new(Path::new(&store_dir)),
        store_dir,
        _tmp: tmp,
    }
}

impl Fixture {
    fn file(&self, bytes: &[u8], mode: u32) -> PackageFileInfo {
        let stored = self.cas.write(bytes, mode).unwrap();
        PackageFileInfo {
            checked_at: Some(stored.checked_at),
            digest: stored.digest,
            mode,
            size: bytes.len() as u64,
        }
    }

    fn blob(&self, info: &PackageFileInfo) -> String {
        blob_path(&self.store_dir, &info.digest, info.mode)
    }

    fn put(&self, key: &str, row: &PackageFilesIndex) {
        self.index
            .write(vec![(key.to_string(), encode_row(row))])
            .unwrap();
    }

    fn req(&self, verify: bool) -> ReadRequest<'_> {
        ReadRequest {
            store_dir: &self.store_dir,
            verify_store_integrity: verify,
            strict_store_pkg_content_check: true,
            side_effects_symlinks: false,
            gypfile: Gypfile::Ignored,
        }
    }

    fn read(&self, key: &str, verify: bool) -> (PkgFromStore, Tally) {
        match read_pkg(&self.index, &self.req(verify), key, None) {
            (Ok(PkgRead::Hit(pkg)), tally) => (*pkg, tally),
            (other, _) => panic!("expected a hit, got {other:?}"),
        }
    }
}

fn row(files: Vec<(&str, PackageFileInfo)>) -> PackageFilesIndex {
    PackageFilesIndex {
        requires_build: Some(false),
        manifest: Some(Value::Object(vec![
            ("name".into(), Value::String("Foo".into())),
            ("version".into(), Value::String("1.0.0".into())),
        ])),
        algo: "sha512".into(),
        files: files.into_iter().map(|(p, i)| (p.to_string(), i)).collect(),
        side_effects: None,
    }
}

/// Rewrites a blob in place and dates it in the future, as an editor or a bad disk would.
fn tamper(path: &str, bytes: &[u8]) {
    fs::write(path, bytes).unwrap();
    let later = SystemTime::now() + Duration::from_secs(10);
    File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(later)
        .unwrap();
}

#[test]
fn blob_paths_are_concatenated_not_normalised() {
    let d = "ab".to_string() + &"c".repeat(126);
    // With the platform's separator, as Node's `path.join` on it.
    let sep = std::path::MAIN_SEPARATOR;
    assert_eq!(
        blob_path("/s/v11/", &d, 0o644),
        format!("/s/v11/{sep}files{sep}ab{sep}{}", "c".repeat(126))
    );
    assert!(blob_path("/s", &d, 0o100755).ends_with("-exec"));
    // Short and non-ASCII digests do not panic (JS `slice` semantics).
    assert_eq!(blob_path("/s", "a", 0), format!("/s{sep}files{sep}a{sep}"));
    assert_eq!(
        blob_path("/s", "éèx", 0),
        format!("/s{sep}files{sep}éè{sep}x")
    );
}

#[test]
fn an_absent_row_is_a_miss_without_warning() {
    let f = fixture();
    let (result, tally) = read_pkg(&f.index, &f.req(true), "nope", None);
    assert_eq!(result.unwrap(), PkgRead::Miss { warning: None });
    assert_eq!(tally, Tally::default());
}

#[test]
fn a_garbage_row_is_a_miss_with_a_warning() {
    let f = fixture();
    for (key, bytes) in [
        ("garbage", vec![0xc1, 0xff, 0x00, 0x13]),
        ("truncated", encode_row(&row(vec![]))[..10].to_vec()),
        (
            "plain-map",
            vec![0x81, 0xa5, b'f', b'i', b'l', b'e', b's', 0x80],
        ),
    ] {
        f.index.write(vec![(key.into(), bytes)]).unwrap();
        let (result, _) = read_pkg(&f.index, &f.req(true), key, None);
        match result.unwrap() {
            PkgRead::Miss {
                warning: Some(message),
            } => assert!(message.contains(key), "{message}"),
            other => panic!("{key}: {other:?}"),
        }
    }
}

#[test]
fn maps_only_without_verification() {
    let f = fixture();
    let a = f.file(b"a", 0o644);
    let x = f.file(b"#!/bin/sh\n", 0o755);
    let mut r = row(vec![("a.js", a.clone()), ("bin/x", x.clone())]);
    r.side_effects = Some(vec![
        ("empty".into(), SideEffectsDiff::default()),
        (
            "built".into(),
            SideEffectsDiff {
                remote_origin: false,
                deleted: Some(vec!["a.js".into()]),
                added: Some(vec![("out.node".into(), x.clone())]),
            },
        ),
    ]);
    f.put("k", &r);
    fs::remove_file(f.blob(&a)).unwrap(); // not noticed without verification
    let (pkg, tally) = f.read("k", false);
    assert!(pkg.verified);
    assert_eq!(pkg.paths().collect::<Vec<_>>(), ["a.js", "bin/x"]);
    let blobs: Vec<_> = pkg.blob_paths(&f.store_dir).collect();
    assert_eq!(blobs, [f.blob(&a), f.blob(&x)]);
    assert!(blobs[1].ends_with("-exec"));
    let side_effects = pkg.side_effects.unwrap();
    assert_eq!(side_effects.len(), 2, "the empty diff is kept");
    assert_eq!(side_effects[0].cache_key, "empty");
    assert_eq!(side_effects[0].diff, SideEffectsDiff::default());
    assert_eq!(side_effects[1].diff, r.side_effects.as_ref().unwrap()[1].1);
    assert_eq!(tally, Tally::default());
    assert_eq!(pkg.manifest, r.manifest);
}

#[test]
fn fresh_blobs_pass_on_their_mtime_without_being_read() {
    let f = fixture();
    let a = f.file(b"aaa", 0o644);
    f.put("k", &row(vec![("a", a)]));
    let (pkg, tally) = f.read("k", true);
    assert!(pkg.verified);
    assert_eq!(tally.files, 0);
}

#[test]
fn blobs_without_checked_at_are_hashed_and_counted() {
    let f = fixture();
    let mut a = f.file(b"aaa", 0o644);
    let mut b = f.file(b"bbb", 0o644);
    a.checked_at = None;
    b.checked_at = Some(1.0);
    f.put("k", &row(vec![("a", a), ("b", b.clone()), ("b2", b)]));
    let (pkg, tally) = f.read("k", true);
    assert!(pkg.verified);
    // b2 has the blob of b, which already passed in this call.
    assert_eq!(tally.files, 2);
    assert!(tally.ms >= 0.0);
}

#[test]
fn a_same_size_corrupt_blob_is_hashed_and_deleted() {
    let f = fixture();
    let a = f.file(b"good", 0o644);
    f.put("k", &row(vec![("a", a.clone())]));
    tamper(&f.blob(&a), b"evil");
    let (pkg, tally) = f.read("k", true);
    assert!(!pkg.verified);
    assert_eq!(pkg.side_effects, None);
    assert_eq!(tally.files, 1);
    assert!(!Path::new(&f.blob(&a)).exists());
}

#[test]
fn a_blob_of_another_size_is_deleted_unhashed_and_every_bad_blob_goes_in_one_pass() {
    let f = fixture();
    let a = f.file(b"first", 0o644);
    let b = f.file(b"second", 0o644);
    let c = f.file(b"third", 0o644);
    f.put(
        "k",
        &row(vec![("a", a.clone()), ("b", b.clone()), ("c", c.clone())]),
    );
    tamper(&f.blob(&a), b"longer than before");
    fs::remove_file(f.blob(&b)).unwrap();
    tamper(&f.blob(&c), b"THIRD");
    let (pkg, tally) = f.read("k", true);
    assert!(!pkg.verified);
    assert_eq!(
        pkg.paths().collect::<Vec<_>>(),
        ["a", "b", "c"],
        "all files are still mapped"
    );
    assert_eq!(tally.files, 1, "only c was hashed");
    assert!(!Path::new(&f.blob(&a)).exists());
    assert!(!Path::new(&f.blob(&c)).exists());
}

#[test]
fn side_effects_with_a_bad_blob_are_dropped_and_empty_diffs_too_when_verifying() {
    let f = fixture();
    let a = f.file(b"a", 0o644);
    let good = f.file(b"good addition", 0o644);
    let bad = f.file(b"bad addition", 0o644);
    let mut r = row(vec![("a", a)]);
    r.side_effects = Some(vec![
        ("empty".into(), SideEffectsDiff::default()),
        (
            "bad".into(),
            SideEffectsDiff {
                remote_origin: false,
                deleted: None,
                added: Some(vec![("x".into(), bad.clone())]),
            },
        ),
        (
            "good".into(),
            SideEffectsDiff {
                remote_origin: false,
                deleted: None,
                added: Some(vec![("y".into(), good.clone())]),
            },
        ),
        (
            "deleting".into(),
            SideEffectsDiff {
                remote_origin: false,
                deleted: Some(vec!["a".into()]),
                added: None,
            },
        ),
    ]);
    f.put("k", &r);
    fs::remove_file(f.blob(&bad)).unwrap();
    let (pkg, _) = f.read("k", true);
    assert!(pkg.verified, "side effects do not fail the package");
    let keys: Vec<_> = pkg
        .side_effects
        .unwrap()
        .into_iter()
        .map(|e| e.cache_key)
        .collect();
    assert_eq!(keys, ["good", "deleting"]);

    // With only empty diffs left, sideEffectsMaps is undefined.
    let mut r = row(vec![]);
    r.side_effects = Some(vec![("empty".into(), SideEffectsDiff::default())]);
    f.put("only-empty", &r);
    assert_eq!(f.read("only-empty", true).0.side_effects, None);
    assert_eq!(f.read("only-empty", false).0.side_effects.unwrap().len(), 1);
}

#[test]
fn a_file_without_digest_fails_the_read() {
    let f = fixture();
    let mut a = f.file(b"a", 0o644);
    a.digest = String::new();
    f.put("k", &row(vec![("lib/a.js", a)]));
    let err = read_pkg(&f.index, &f.req(true), "k", None).0.unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_MISSING_CONTENT_DIGEST");
    assert_eq!(err.to_string(), "Content digest is missing for lib/a.js");
}

#[test]
fn requires_build_falls_back_to_the_manifest_and_files() {
    let f = fixture();
    let a = f.file(b"{}", 0o644);
    let mut r = row(vec![("binding.gyp", a.clone())]);
    r.requires_build = None;
    f.put("gyp", &r);
    assert!(f.read("gyp", false).0.requires_build);
    let mut r = row(vec![("lib/binding.gyp", a)]);
    r.requires_build = None;
    f.put("nested", &r);
    assert!(!f.read("nested", false).0.requires_build);
}

#[test]
fn a_pnpm_11_28_reader_asks_package_json_about_a_build_only_binding_gyp_explains() {
    let f = fixture();
    let opted_out = f.file(br#"{"name":"foo","gypfile":false}"#, 0o644);
    let plain = f.file(br#"{"name":"foo"}"#, 0o644);
    let gyp = f.file(b"{}", 0o644);
    let put = |key: &str, manifest: Option<Value>, files: Vec<(&str, PackageFileInfo)>| {
        let mut r = row(files);
        r.requires_build = Some(true);
        r.manifest = manifest;
        f.put(key, &r);
    };
    let read = |key: &str, gypfile| {
        let req = ReadRequest {
            gypfile,
            ..f.req(false)
        };
        match read_pkg(&f.index, &req, key, None).0 {
            Ok(PkgRead::Hit(pkg)) => pkg.requires_build,
            other => panic!("{other:?}"),
        }
    };
    let files =
        |pkg: &PackageFileInfo| vec![("package.json", pkg.clone()), ("binding.gyp", gyp.clone())];
    // A row an older writer wrote for a package that opts out: no build under pnpm 11.28.
    put("old", None, files(&opted_out));
    assert!(!read("old", Gypfile::Read));
    assert!(read("old", Gypfile::Ignored));
    put("plain", None, files(&plain));
    assert!(read("plain", Gypfile::Read));
    // The row's manifest settles it (a `gypfile` key, or a build script): not read again.
    let with = |text: &str| Some(crate::json::parse(text).unwrap());
    put("keyed", with(r#"{"gypfile":true}"#), files(&opted_out));
    assert!(read("keyed", Gypfile::Read));
    put(
        "scripted",
        with(r#"{"scripts":{"install":"x"}}"#),
        files(&opted_out),
    );
    assert!(read("scripted", Gypfile::Read));
    // A `.hooks/` entry requires the build anyway.
    let mut hooked = files(&opted_out);
    hooked.push((".hooks/x", gyp.clone()));
    put("hooked", None, hooked);
    assert!(read("hooked", Gypfile::Read));
    // No package.json, or one that is not JSON: the row's value.
    put("bare", None, vec![("binding.gyp", gyp.clone())]);
    assert!(read("bare", Gypfile::Read));
    let broken = f.file(b"{not json", 0o644);
    put("broken", None, files(&broken));
    assert!(read("broken", Gypfile::Read));
}

#[test]
fn expected_package_is_checked_case_insensitively_and_semver_loosely() {
    let f = fixture();
    f.put("k", &row(vec![]));
    let expect = |name: &str, version: &str, strict: bool| {
        let req = ReadRequest {
            strict_store_pkg_content_check: strict,
            ..f.req(false)
        };
        let expected = ExpectedPkg {
            name: Some(name.into()),
            version: Some(version.into()),
        };
        read_pkg(&f.index, &req, "k", Some(&expected)).0
    };
    for (name, version) in [("foo", "1.0.0"), ("FOO", "v1.0.0"), ("Foo", "=1.0.0+build")] {
        match expect(name, version, true).unwrap() {
            PkgRead::Hit(pkg) => assert!(pkg.warnings.is_empty()),
            other => panic!("{other:?}"),
        }
    }
    for (name, version) in [("bar", "1.0.0"), ("foo", "1.0.1"), ("foo", "latest")] {
        let err = expect(name, version, true).unwrap_err();
        assert_eq!(err.code(), "ERR_PNPM_UNEXPECTED_PKG_CONTENT_IN_STORE");
        let hint = err.hint().unwrap();
        assert!(
            hint.contains(&format!("the lockfile expects {name}@{version}")),
            "{hint}"
        );
        assert!(hint.contains("The store holds Foo@1.0.0"));
        assert!(hint.contains("strictStorePkgContentCheck"));
        match expect(name, version, false).unwrap() {
            PkgRead::Hit(pkg) => {
                assert_eq!(pkg.warnings.len(), 1);
                assert!(pkg.warnings[0].starts_with(MISMATCH_MESSAGE));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn semver_equality() {
    let s = |v: &str| Value::String(v.into());
    assert!(equal_or_semver_equal(&s("1.2.3"), "1.2.3"));
    assert!(equal_or_semver_equal(&s("latest"), "latest"));
    assert!(equal_or_semver_equal(&s("v1.2.3"), "1.2.3"));
    assert!(equal_or_semver_equal(&s("1.2.3-01"), "1.2.3-1"));
    assert!(equal_or_semver_equal(&s("1.2.3+a"), "1.2.3+b"));
    assert!(!equal_or_semver_equal(&s("1.2.3-a"), "1.2.3"));
    assert!(!equal_or_semver_equal(&s("1.2"), "1.2.0"));
    assert!(!equal_or_semver_equal(&Value::Number(1.0), "1"));
}

#[test]
fn batch_reads_answer_in_key_order_across_statement_chunks() {
    let f = fixture();
    let a = f.file(b"shared", 0o644);
    let n = KEYS + 10;
    let rows: Vec<_> = (0..n)
        .map(|i| {
            let mut r = row(vec![("a", a.clone())]);
            r.manifest = Some(Value::Object(vec![(
                "version".into(),
                Value::String(format!("{i}.0.0")),
            )]));
            (format!("key-{i}"), encode_row(&r))
        })
        .collect();
    f.index.write(rows).unwrap();
    let mut keys: Vec<String> = (0..n).rev().map(|i| format!("key-{i}")).collect();
    keys.insert(3, "missing".into());
    keys.push("key-7".into()); // a repeated key
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (results, tally) = read_pkgs(&f.index, &f.req(true), &keys, &[]).unwrap();
    assert_eq!(results.len(), keys.len());
    assert_eq!(tally.files, 0);
    for (key, result) in keys.iter().zip(results) {
        match result.unwrap() {
            PkgRead::Miss { warning: None } => assert_eq!(*key, "missing"),
            PkgRead::Hit(pkg) => {
                let i = key.strip_prefix("key-").unwrap();
                let version = pkg.manifest.as_ref().unwrap().get("version").unwrap();
                assert_eq!(version.as_str(), Some(format!("{i}.0.0").as_str()));
                assert!(pkg.verified);
            }
            other => panic!("{other:?}"),
        }
    }
}

const KEYS: usize = crate::index_db::KEYS_PER_STATEMENT;

#[test]
fn batch_reads_sum_the_tally_and_keep_per_key_errors_apart() {
    let f = fixture();
    let mut a = f.file(b"hash me", 0o644);
    a.checked_at = None;
    let mut no_digest = a.clone();
    no_digest.digest = String::new();
    f.put("one", &row(vec![("a", a.clone())]));
    f.put("two", &row(vec![("a", a)]));
    f.put("broken", &row(vec![("a", no_digest)]));
    let (results, tally) =
        read_pkgs(&f.index, &f.req(true), &["one", "broken", "two"], &[]).unwrap();
    assert_eq!(
        tally.files, 2,
        "one hash per key: the memo is per package, as in pnpm"
    );
    assert!(matches!(results[0], Ok(PkgRead::Hit(_))));
    assert!(matches!(
        results[1],
        Err(ReadError::MissingContentDigest(_))
    ));
    assert!(matches!(results[2], Ok(PkgRead::Hit(_))));
    let expected = [
        None,
        None,
        Some(ExpectedPkg {
            name: Some("other".into()),
            version: None,
        }),
    ];
    let (results, _) = read_pkgs(
        &f.index,
        &f.req(false),
        &["one", "broken", "two"],
        &expected,
    )
    .unwrap();
    assert!(matches!(results[0], Ok(PkgRead::Hit(_))));
    assert!(matches!(
        results[2],
        Err(ReadError::UnexpectedPkgContent { .. })
    ));
}

#[test]
fn extra_row_fields_are_handed_back() {
    let f = fixture();
    let mut value = msgpackr::decode(&encode_row(&row(vec![]))).unwrap();
    if let Value::Object(fields) = &mut value {
        fields.push(("requiresPrepare".into(), Value::Bool(true)));
        fields.push((
            "remoteSideEffectsQuarantine".into(),
            Value::Map(vec![(
                Value::String("linux".into()),
                Value::Array(vec![Value::String("reason".into())]),
            )]),
        ));
    }
    f.index
        .write(vec![("k".into(), msgpackr::encode(&value))])
        .unwrap();
    let (pkg, _) = f.read("k", true);
    assert_eq!(pkg.requires_prepare, Some(true));
    assert_eq!(
        pkg.remote_side_effects_quarantine,
        Some(vec![("linux".to_string(), vec!["reason".to_string()])])
    );
}

#[test]
fn a_frozen_index_reads_without_creating_files_and_refuses_writes() {
    let f = fixture();
    let a = f.file(b"a", 0o644);
    f.put("k", &row(vec![("a", a)]));
    f.index.close(); // checkpoints the WAL: only index.db is left
    let listing = || {
        let mut names: Vec<_> = fs::read_dir(&f.store_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    assert_eq!(before, ["files", "index.db"]);
    let frozen = StoreIndex::new_frozen(Path::new(&f.store_dir));
    let (results, _) = read_pkgs(&frozen, &f.req(true), &["k", "missing"], &[]).unwrap();
    assert!(matches!(results[0], Ok(PkgRead::Hit(_))));
    assert_eq!(
        results[1].as_ref().unwrap(),
        &PkgRead::Miss { warning: None }
    );
    let err = frozen.write(vec![("k2".into(), vec![0xc0])]).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_FROZEN_STORE_WRITE");
    frozen.close();
    assert_eq!(listing(), before, "no -wal, -shm or anything else");

    let missing = StoreIndex::new_frozen(&Path::new(&f.store_dir).join("nowhere"));
    let err = read_pkg(&missing, &f.req(false), "k", None).0.unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_ERR_SQLITE_ERROR");
    assert!(!Path::new(&f.store_dir).join("nowhere").exists());
}

#[cfg(unix)]
fn chmod(path: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(unix)]
#[test]
fn verification_notes_the_blobs_whose_bits_are_not_their_names_mode() {
    let f = fixture();
    let plain = f.file(b"plain", 0o644);
    let drifted = f.file(b"made executable through a link", 0o644);
    let bin = f.file(b"#!/bin/sh\n", 0o755);
    let group = f.file(b"group-writable", 0o644);
    let added = f.file(b"written by a build", 0o644);
    chmod(&f.blob(&drifted), 0o755);
    chmod(&f.blob(&bin), 0o644);
    chmod(&f.blob(&group), 0o664);
    chmod(&f.blob(&added), 0o600);
    let mut r = row(vec![
        ("a.js", plain),
        ("b.js", drifted.clone()),
        ("bin.sh", bin.clone()),
        ("g.txt", group.clone()),
        // Another file of the same blob: noted once.
        ("copy/b.js", drifted.clone()),
    ]);
    r.side_effects = Some(vec![(
        "key".into(),
        SideEffectsDiff {
            added: Some(vec![("out.txt".into(), added.clone())]),
            deleted: None,
            remote_origin: false,
        },
    )]);
    f.put("k", &r);
    let (pkg, tally) = f.read("k", true);
    assert!(pkg.verified);
    // A mode changed leaves the mtime as it was: every blob trusted, none hashed.
    assert_eq!(tally.files, 0);
    let named = |executable| blob_modes::name_mode(executable).unwrap();
    let expected: Vec<DriftedBlob> = [
        (&drifted, false, 0o755),
        (&bin, true, 0o644),
        (&group, false, 0o664),
        (&added, false, 0o600),
    ]
    .into_iter()
    // (Under a umask that lets the group write, 0o664 is the mode a name says.)
    .filter(|&(_, executable, mode)| mode != named(executable))
    .map(|(info, executable, mode)| DriftedBlob {
        digest: info.digest.clone(),
        executable,
        mode,
    })
    .collect();
    assert_eq!(pkg.drifted_blobs.as_ref(), Some(&expected));
    assert_eq!(expected[0].path(&f.store_dir), f.blob(&drifted));
    assert_eq!(expected[1].path(&f.store_dir), f.blob(&bin));
    // Without verification no blob is looked at: nothing is known.
    assert_eq!(f.read("k", false).0.drifted_blobs, None);
}

#[test]
fn verified_blobs_with_their_names_mode_are_not_noted() {
    let f = fixture();
    f.put(
        "k",
        &row(vec![
            ("a.js", f.file(b"a", 0o644)),
            ("bin.sh", f.file(b"#!/bin/sh\n", 0o755)),
        ]),
    );
    assert_eq!(f.read("k", true).0.drifted_blobs, Some(vec![]));
}
