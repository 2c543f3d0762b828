use super::*;
use crate::error_code::ErrorCode;
use crate::index_row::decode_row;
use crate::test_support::tgz;

fn store() -> (tempfile::TempDir, Cas) {
    let dir = tempfile::tempdir().unwrap();
    let cas = Cas::new(dir.path());
    (dir, cas)
}

fn extract_plain(cas: &Cas, tarball: &[u8]) -> Result<Extracted, ExtractError> {
    extract(
        cas,
        &ExtractRequest {
            tarball,
            ..Default::default()
        },
    )
}

fn paths(extracted: &Extracted) -> Vec<&str> {
    extracted.files.iter().map(|f| f.path.as_str()).collect()
}

#[test]
fn a_package_lands_in_the_store_with_its_manifest_and_row() {
    let (_dir, cas) = store();
    let tarball = tgz(&[
        (
            "package/package.json",
            r#"{"name":"a","version":"v1.0.0","bin":{"a":"cli.js"},"scripts":{"test":"x"}}"#,
            0o644,
        ),
        ("package/cli.js", "#!/usr/bin/env node\n", 0o755),
    ]);
    let extracted = extract_plain(&cas, &tarball).unwrap();
    assert_eq!(paths(&extracted), ["package.json", "cli.js"]);
    assert!(extracted.files[1].executable);
    assert!(!extracted.requires_build);
    let manifest = extracted.manifest.as_ref().unwrap();
    assert_eq!(
        manifest.get("version").and_then(Value::as_str),
        Some("1.0.0")
    );
    assert_eq!(
        manifest.get("scripts"),
        None,
        "only lifecycle scripts are kept"
    );
    assert_eq!(extracted.integrity, integrity::sha512_sri(&tarball));

    let row = decode_row(&extracted.row).unwrap();
    assert_eq!(row.algo, "sha512");
    assert_eq!(row.requires_build, Some(false));
    assert_eq!(row.files.len(), 2);
    assert_eq!(row.files[1].1.mode, 0o755);
    for file in &extracted.files {
        let blob = cas.blob_path(&file.info.digest, file.executable);
        assert_eq!(std::fs::metadata(blob).unwrap().len(), file.info.size);
    }
}

#[test]
fn a_package_without_package_json_gets_the_placeholder_last() {
    let (_dir, cas) = store();
    let tarball = tgz(&[
        ("package/index.js", "1", 0o644),
        ("package/lib/package.json", "{}", 0o644),
    ]);
    let extracted = extract_plain(&cas, &tarball).unwrap();
    assert_eq!(
        paths(&extracted),
        ["index.js", "lib/package.json", "package.json"]
    );
    let placeholder = &extracted.files[2].info;
    assert_eq!(placeholder.size, 108);
    assert_eq!(
        placeholder.digest,
        crate::blob_files::sha512_hex(manifest::PLACEHOLDER_PACKAGE_JSON)
    );
    assert_eq!(extracted.manifest, None);
    assert_eq!(
        decode_row(&extracted.row).unwrap().manifest,
        Some(Value::Undefined)
    );
}

#[test]
fn append_manifest_stands_in_for_a_missing_one() {
    let (_dir, cas) = store();
    let tarball = tgz(&[("package/bin/node", "ELF", 0o755)]);
    let appended = "{\n  \"name\": \"node\",\n  \"version\": \"24.0.0\",\n  \"bin\": {\n    \"node\": \"bin/node\"\n  }\n}";
    let extracted = extract(
        &cas,
        &ExtractRequest {
            tarball: &tarball,
            append_manifest: Some(appended),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(paths(&extracted), ["bin/node", "package.json"]);
    assert_eq!(
        extracted.files[1].info.digest,
        crate::blob_files::sha512_hex(appended.as_bytes())
    );
    assert_eq!(
        extracted
            .manifest
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str),
        Some("node")
    );
}

#[test]
fn ignored_files_are_neither_written_nor_indexed() {
    let (dir, cas) = store();
    let tarball = tgz(&[
        (
            "package/package.json",
            r#"{"name":"a","version":"1.0.0"}"#,
            0o644,
        ),
        ("package/docs/huge.md", "ignored content", 0o644),
    ]);
    let extracted = extract(
        &cas,
        &ExtractRequest {
            tarball: &tarball,
            ignore_file_pattern: Some("^docs/"),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(paths(&extracted), ["package.json"]);
    let ignored = crate::blob_files::sha512_hex(b"ignored content");
    assert!(!dir
        .path()
        .join("files")
        .join(&ignored[..2])
        .join(&ignored[2..])
        .exists());
}

#[test]
fn install_scripts_and_binding_gyp_require_a_build() {
    let (_dir, cas) = store();
    for entries in [
        vec![(
            "package/package.json",
            r#"{"name":"a","scripts":{"postinstall":"node x"}}"#,
            0o644,
        )],
        vec![
            ("package/package.json", r#"{"name":"a"}"#, 0o644),
            ("package/binding.gyp", "{}", 0o644),
        ],
    ] {
        let tarball = tgz(&entries);
        let extracted = extract_plain(&cas, &tarball).unwrap();
        assert!(extracted.requires_build);
        assert_eq!(
            decode_row(&extracted.row).unwrap().requires_build,
            Some(true)
        );
    }
}

#[test]
fn gypfile_false_opts_binding_gyp_out_for_a_pnpm_11_28_row() {
    let (_dir, cas) = store();
    let tarball = tgz(&[
        (
            "package/package.json",
            r#"{"name":"a","version":"1.0.0","gypfile":false}"#,
            0o644,
        ),
        ("package/binding.gyp", "{}", 0o644),
    ]);
    let with = |gypfile| {
        let req = ExtractRequest {
            tarball: &tarball,
            gypfile,
            ..Default::default()
        };
        let extracted = extract(&cas, &req).unwrap();
        let row = decode_row(&extracted.row).unwrap();
        assert_eq!(row.requires_build, Some(extracted.requires_build));
        let gypfile_kept = row
            .manifest
            .as_ref()
            .and_then(|m| m.get("gypfile"))
            .cloned();
        (extracted.requires_build, gypfile_kept)
    };
    assert_eq!(with(Gypfile::Read), (false, Some(Value::Bool(false))));
    assert_eq!(with(Gypfile::Ignored), (true, None));
}

#[test]
fn an_integrity_mismatch_writes_nothing() {
    let (dir, cas) = store();
    let tarball = tgz(&[("package/package.json", "{}", 0o644)]);
    let wrong = integrity::sha512_sri(b"other bytes");
    let err = extract(
        &cas,
        &ExtractRequest {
            tarball: &tarball,
            integrity: Some(&wrong),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_INTEGRITY");
    assert!(!dir.path().join("files").exists());
}

#[test]
fn an_invalid_ignore_pattern_is_reported_after_the_integrity_check() {
    let (_dir, cas) = store();
    let tarball = tgz(&[("package/package.json", "{}", 0o644)]);
    let req = ExtractRequest {
        tarball: &tarball,
        ignore_file_pattern: Some("("),
        ignore_file_pattern_error: Some("Invalid regular expression: /(/: Unterminated group"),
        ..Default::default()
    };
    let err = extract(&cas, &req).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_INVALID_IGNORE_FILE_PATTERN");
    assert_eq!(
        err.to_string(),
        "Invalid ignoreFilePattern regex: Invalid regular expression: /(/: Unterminated group: ("
    );
    let wrong = integrity::sha512_sri(b"x");
    let err = extract(
        &cas,
        &ExtractRequest {
            integrity: Some(&wrong),
            ..req
        },
    )
    .unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_INTEGRITY");
}

#[test]
fn broken_package_json_fails_after_the_blobs_are_complete() {
    let (dir, cas) = store();
    let tarball = tgz(&[
        ("package/package.json", "{\"name\": ", 0o644),
        ("package/a.js", "a", 0o644),
    ]);
    let err = extract_plain(&cas, &tarball).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_EXTRACT");
    let a = crate::blob_files::sha512_hex(b"a");
    assert_eq!(
        std::fs::read(dir.path().join("files").join(&a[..2]).join(&a[2..])).unwrap(),
        b"a"
    );
}

#[test]
fn big_packages_are_written_in_parallel_in_tar_order() {
    let (_dir, cas) = store();
    let names: Vec<String> = (0..200).map(|i| format!("package/f{i:03}.js")).collect();
    let contents: Vec<String> = (0..200)
        .map(|i| format!("module.exports = {i}\n"))
        .collect();
    let entries: Vec<(&str, &str, u32)> = names
        .iter()
        .zip(&contents)
        .map(|(n, c)| (n.as_str(), c.as_str(), 0o644))
        .collect();
    let extracted = extract_plain(&cas, &tgz(&entries)).unwrap();
    let expected: Vec<String> = (0..200)
        .map(|i| format!("f{i:03}.js"))
        .chain(["package.json".into()])
        .collect();
    assert_eq!(paths(&extracted), expected);
}

fn extract_limited(cas: &Cas, tarball: &[u8], max: u64) -> Result<Extracted, ExtractError> {
    extract(
        cas,
        &ExtractRequest {
            tarball,
            max_unpacked_size: Some(max),
            ..Default::default()
        },
    )
}

#[test]
fn over_max_tarball_unpacked_size_fails_before_any_blob_is_written() {
    let (dir, cas) = store();
    let a = "a".repeat(1000);
    let tarball = tgz(&[
        ("package/package.json", "{}", 0o644),
        ("package/a.js", &a, 0o644),
    ]);
    let err = extract_limited(&cas, &tarball, 1001).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_TOO_LARGE");
    assert!(err.to_string().contains("reach 1002 bytes"));
    assert!(err.hint().unwrap().contains("maxTarballUnpackedSize"));
    assert!(!dir.path().join("files").exists());
    // Ignored files count: the pattern only decides what is written.
    let ignoring = ExtractRequest {
        tarball: &tarball,
        ignore_file_pattern: Some("^a"),
        max_unpacked_size: Some(1001),
        ..Default::default()
    };
    assert_eq!(
        extract(&cas, &ignoring).unwrap_err().code(),
        "ERR_PNPM_TARBALL_TOO_LARGE"
    );
    assert_eq!(
        paths(&extract_limited(&cas, &tarball, 1002).unwrap()).len(),
        2
    );
}

#[test]
fn the_inflate_cap_follows_the_limit() {
    let max = gzip::MAX_OUTPUT as u64;
    assert_eq!(inflate_cap(None), None);
    assert_eq!(inflate_cap(Some(0)), Some(1 << 20));
    assert_eq!(inflate_cap(Some(1000)), Some(1000 + (1 << 20)));
    assert_eq!(inflate_cap(Some(3 << 20)), Some(6 << 20));
    assert_eq!(inflate_cap(Some(2 << 30)), Some(max));
    // Past the one buffer's 4 GiB: pnpm's default limit streams up to 8 GiB.
    assert_eq!(inflate_cap(Some(4 << 30)), Some(8 << 30));
    assert_eq!(inflate_cap(Some(u64::MAX)), Some(u64::MAX));
}

#[test]
fn a_gzip_bomb_stops_at_the_cap_the_limit_sets() {
    let (dir, cas) = store();
    // 6 KB of gzip holding one 6 MiB file of zeros; a 1 MiB limit caps the tar at 2 MiB.
    let zeros = "\0".repeat(6 << 20);
    let bomb = tgz(&[("package/zeros", &zeros, 0o644)]);
    assert!(bomb.len() < 10_000, "{}", bomb.len());
    let err = extract_limited(&cas, &bomb, 1 << 20).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_TOO_LARGE");
    assert_eq!(
        err.to_string(),
        "Unpacked, this tarball would take more than the 1048576 bytes maxTarballUnpackedSize allows: it inflates past 2097152 bytes, the limit plus as much again for tar headers"
    );
    assert!(err.hint().is_some());
    assert!(!dir.path().join("files").exists());
    // Without a limit it is just a big file; with one, a tar that fits its cap but not the
    // limit is refused by the files' sizes.
    assert_eq!(
        paths(&extract_plain(&cas, &bomb).unwrap()),
        ["zeros", "package.json"]
    );
    let err = extract_limited(&cas, &bomb, 4 << 20).unwrap_err();
    assert!(err
        .to_string()
        .contains("its regular files reach 6291456 bytes"));
}

/// `write_row` commits the row under its key and hands the same bytes back when asked; without
/// `write` the index stays untouched.
#[test]
fn write_row_writes_and_hands_back_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store_handles::open(dir.path());
    let extracted = extract_plain(&store.cas, &tgz(&[("package/a.js", "a", 0o644)])).unwrap();
    let row = extracted.row.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let both = RowUse {
        write: true,
        hand_back: true,
    };
    write_row(&store, "key-1".into(), extracted, both, move |r| {
        tx.send(r).unwrap()
    });
    let indexed = rx.recv().unwrap().unwrap();
    assert_eq!(indexed.row.as_deref(), Some(&row[..]));
    assert!(indexed.extracted.row.is_empty());
    assert_eq!(store.index.get("key-1").unwrap(), Some(row.clone()));

    let extracted = extract_plain(&store.cas, &tgz(&[("package/a.js", "a", 0o644)])).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let neither = RowUse::default();
    write_row(&store, "key-2".into(), extracted, neither, move |r| {
        tx.send(r).unwrap()
    });
    let indexed = rx.recv().unwrap().unwrap();
    assert_eq!((indexed.row, indexed.index_ms), (None, 0.0));
    assert_eq!(store.index.get("key-2").unwrap(), None);
    store.index.close();
}
