use super::*;
use crate::os_error;

#[test]
fn a_hard_link_is_the_same_file_and_a_copy_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    let linked = dir.path().join("linked");
    let copied = dir.path().join("copied");
    fs::write(&a, "x").unwrap();
    fs::hard_link(&a, &linked).unwrap();
    fs::copy(&a, &copied).unwrap();
    let meta = |p: &Path| fs::metadata(p).unwrap();
    let id = |p: &Path| file_id(p, &meta(p)).unwrap();
    assert_ne!(id(&a).ino, 0);
    assert_eq!(id(&a), id(&linked));
    assert_ne!(id(&a), id(&copied));
    assert!(same_file(&a, &meta(&a), &linked, &meta(&linked)));
    assert!(!same_file(&a, &meta(&a), &copied, &meta(&copied)));
}

#[test]
fn a_dependency_link_reaches_its_target_and_is_removed_alone() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("pkg");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("index.js"), "1").unwrap();
    let link = dir.path().join("node_modules").join("pkg");
    // No parent yet: ENOENT, as from symlink(2).
    let e = symlink_dir(&target, &link).unwrap_err();
    assert_eq!(os_error::errno(&e), Some(libc::ENOENT));
    fs::create_dir(link.parent().unwrap()).unwrap();
    symlink_dir(&target, &link).unwrap();
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(link.join("index.js")).unwrap(), b"1");
    // Taken: EEXIST.
    let e = symlink_dir(&target, &link).unwrap_err();
    assert_eq!(os_error::errno(&e), Some(libc::EEXIST));
    assert_eq!(os_error::errno_name(&e), "EEXIST");
    remove_link(&link).unwrap();
    assert!(fs::symlink_metadata(&link).is_err());
    assert_eq!(fs::read(target.join("index.js")).unwrap(), b"1");
}

#[test]
fn os_errors_get_node_errno_names() {
    let dir = tempfile::tempdir().unwrap();
    let missing = fs::read(dir.path().join("missing")).unwrap_err();
    assert_eq!(os_error::errno(&missing), Some(libc::ENOENT));
    assert_eq!(os_error::errno_name(&missing), "ENOENT");
    fs::write(dir.path().join("f"), "").unwrap();
    let not_empty = fs::remove_dir(dir.path()).unwrap_err();
    assert_eq!(os_error::errno_name(&not_empty), "ENOTEMPTY");
    let unsupported = os_error::unsupported();
    assert_eq!(os_error::errno(&unsupported), Some(libc::ENOTSUP));
    assert_eq!(os_error::errno_name(&unsupported), "ENOTSUP");
    assert_eq!(os_error::errno(&io::Error::other("not an OS error")), None);
}

#[test]
fn modes_and_times_read_as_node_reports_them() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    create_mode(OpenOptions::new().write(true).create_new(true), 0o644)
        .open(&f)
        .unwrap();
    let meta = fs::metadata(&f).unwrap();
    assert_eq!(permission_bits(&meta) & 0o200, 0o200);
    let now = crate::blob_files::now_ms();
    assert!(
        (mtime_ms(&meta) - now).abs() < 60_000.0,
        "{}",
        mtime_ms(&meta)
    );
    let mut readonly = meta.permissions();
    readonly.set_readonly(true);
    fs::set_permissions(&f, readonly).unwrap();
    assert_eq!(permission_bits(&fs::metadata(&f).unwrap()) & 0o222, 0);
}
