use super::*;
use crate::error_code::ErrorCode;

const EMPTY_SHA512: &str = "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e";

fn store() -> (tempfile::TempDir, Cas) {
    let dir = tempfile::tempdir().unwrap();
    let cas = Cas::new(dir.path());
    (dir, cas)
}

#[test]
fn empty_file_lands_at_the_spec_test_vector() {
    let (dir, cas) = store();
    let stored = cas.write(b"", 0o644).unwrap();
    assert_eq!(stored.digest, EMPTY_SHA512);
    assert!(!stored.executable);
    let path = dir.path().join("files/cf").join(&EMPTY_SHA512[2..]);
    assert_eq!(fs::read(&path).unwrap(), b"");
    assert_eq!(cas.blob_path(&stored.digest, false), path);
}

#[test]
fn any_x_bit_makes_an_exec_twin_with_mode_755() {
    let (_dir, cas) = store();
    for mode in [0o100755, 0o744, 0o654, 0o645] {
        let stored = cas.write(b"#!/bin/sh\n", mode).unwrap();
        assert!(stored.executable, "mode {mode:o}");
    }
    let plain = cas.write(b"#!/bin/sh\n", 0o644).unwrap();
    let exec_path = cas.blob_path(&plain.digest, true);
    let plain_path = cas.blob_path(&plain.digest, false);
    assert!(exec_path.to_string_lossy().ends_with("-exec"));
    let x_bits = |p: &Path| platform::permission_bits(&fs::metadata(p).unwrap()) & 0o111;
    // Windows files have no mode: there the name alone says it.
    assert_eq!(x_bits(&exec_path), if cfg!(unix) { 0o111 } else { 0 });
    assert_eq!(x_bits(&plain_path), 0);
}

#[test]
fn a_corrupt_blob_is_replaced_and_a_correct_one_kept() {
    let (dir, _) = store();
    let digest = sha512_hex(b"hello");
    let path = Cas::new(dir.path()).blob_path(&digest, false);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, b"hel").unwrap(); // a crashed writer's leftover
    let cas = Cas::new(dir.path());
    cas.write(b"hello", 0o644).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"hello");
    // only the blob is left in the shard: the temp file was renamed, not leaked
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);

    let id = || platform::file_id(&path, &fs::metadata(&path).unwrap()).unwrap();
    let before = id();
    Cas::new(dir.path()).write(b"hello", 0o644).unwrap();
    assert_eq!(id(), before, "a correct blob must not be rewritten");
}

#[test]
fn concurrent_writers_of_the_same_content_agree() {
    let (dir, _) = store();
    let content = vec![7u8; 1 << 20];
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| Cas::new(dir.path()).write(&content, 0o644).unwrap());
        }
    });
    let digest = sha512_hex(&content);
    assert_eq!(
        fs::read(Cas::new(dir.path()).blob_path(&digest, false)).unwrap(),
        content
    );
}

#[test]
fn init_store_dir_makes_256_shards_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("v11");
    init_store_dir(&store).unwrap();
    init_store_dir(&store).unwrap();
    let shards: Vec<_> = fs::read_dir(store.join("files")).unwrap().collect();
    assert_eq!(shards.len(), 256);
    assert!(store.join("files/00").is_dir() && store.join("files/ff").is_dir());
    assert!(!store.join("index.db").exists());
}

#[test]
fn a_new_blob_leaves_nothing_but_itself_in_the_shard() {
    let (_dir, cas) = store();
    let stored = cas.write(b"complete", 0o755).unwrap();
    let path = cas.blob_path(&stored.digest, true);
    let names: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [path.file_name().unwrap()]);
    assert_eq!(fs::read(&path).unwrap(), b"complete");
}

#[test]
fn the_portable_publish_refuses_an_existing_name_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blob");
    publish_via_temp_name(&path, b"first", false).unwrap();
    let err = publish_via_temp_name(&path, b"second", false).unwrap_err();
    assert_eq!(err.error.kind(), ErrorKind::AlreadyExists);
    assert_eq!(err.site.syscall, "link");
    assert_eq!(err.site.dest.as_deref(), Some(path.to_str().unwrap()));
    assert_eq!(fs::read(&path).unwrap(), b"first");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_store_that_cannot_be_created_names_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, "").unwrap();
    let store = file.join("store");
    let err = Cas::new(&store).write(b"x", 0o644).unwrap_err();
    // The blob's shard directory is where it failed: opening it, or creating it.
    let shard = store.join("files").join(&sha512_hex(b"x")[..2]);
    let syscall = err.site.syscall.clone();
    assert!(syscall == "open" || syscall == "mkdir", "{syscall}");
    assert_eq!(err.site.path, shard.display().to_string());
    assert_eq!(
        err.to_string(),
        format!("ENOTDIR: not a directory, {syscall} '{}'", shard.display())
    );
    assert_eq!(err.code(), "ERR_PNPM_ENOTDIR");
    let err = init_store_dir(&store).unwrap_err();
    assert_eq!(err.site.path, store.join("files").display().to_string());
}
