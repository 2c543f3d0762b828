use super::*;

const HEX40: &str = "0123456789abcdef0123456789abcdef01234567";

#[test]
fn a_name_means_0o755_or_0o666_less_the_umask() {
    assert_eq!(mode_under_umask(true, 0o022), 0o755);
    assert_eq!(mode_under_umask(false, 0o022), 0o644);
    // A umask that lets the group write changes only the non-executable mode.
    assert_eq!(mode_under_umask(true, 0o002), 0o755);
    assert_eq!(mode_under_umask(false, 0o002), 0o664);
    assert_eq!(mode_under_umask(false, 0o077), 0o600);
    assert_eq!(mode_under_umask(true, 0), 0o755);
}

#[test]
fn linkable_tolerates_group_write_either_way_and_other_write_only_missing() {
    assert_linkable(
        false,
        &[
            (0o644, 0o644, true),
            (0o755, 0o755, true),
            (0o755, 0o644, false),
            (0o644, 0o755, false),
            // Group write, either way.
            (0o664, 0o644, true),
            (0o644, 0o664, true),
            (0o775, 0o755, true),
            // Other write: missing is fine, extra is not.
            (0o664, 0o666, true),
            (0o646, 0o644, false),
            (0o666, 0o644, false),
            // Any other bit.
            (0o600, 0o644, false),
            (0o744, 0o644, false),
            (0o645, 0o644, false),
            // Only the permission bits count (a regular file's type bits, setuid).
            (0o100644, 0o644, true),
            (0o4644, 0o644, true),
        ],
    );
}

/// Each `(actual, expected, linkable)` judged by the rule `exact` names.
fn assert_linkable(exact: bool, cases: &[(u32, u32, bool)]) {
    for &(actual, expected, linkable) in cases {
        assert_eq!(
            is_linkable_as(actual, expected, exact),
            linkable,
            "{actual:o} for {expected:o}"
        );
    }
}

#[test]
fn before_pnpm_11_28_6_only_the_exact_bits_are_linkable() {
    assert_linkable(
        true,
        &[
            (0o644, 0o644, true),
            (0o100755, 0o755, true),
            // What the later rule lets through.
            (0o664, 0o644, false),
            (0o644, 0o664, false),
            (0o644, 0o666, false),
        ],
    );
}

#[test]
fn only_paths_shaped_like_blobs_are_store_blobs() {
    for (path, blob) in [
        (format!("/s/v11/files/ab/{HEX40}"), true),
        (format!("/s/v11/files/ab/{HEX40}-exec"), true),
        (format!("/files/00/{HEX40}{HEX40}"), true),
        // A `files` with no separator before it, as pnpm's check has it.
        (format!("files/00/{HEX40}"), false),
        (format!("/s/files/ab/{}", &HEX40[1..]), false),
        (format!("/s/files/ab/{}", HEX40.to_uppercase()), false),
        (format!("/s/files/AB/{HEX40}"), false),
        (format!("/s/files/abc/{HEX40}"), false),
        (format!("/s/file/ab/{HEX40}"), false),
        (format!("/s/xfiles/ab/{HEX40}"), false),
        (format!("/s/files/ab/{HEX40}-exec-exec"), false),
        (format!("/s/files/ab/{HEX40}.js"), false),
        (format!("ab/{HEX40}"), false),
        (HEX40.to_string(), false),
        ("/pkg/lib/index.js".to_string(), false),
    ] {
        assert_eq!(is_store_blob(path.as_bytes()), blob, "{path}");
    }
}

#[cfg(unix)]
#[test]
fn a_store_blobs_mode_comes_from_its_name() {
    let base = format!("/s/v11/files/ab/{HEX40}");
    let exec = format!("{base}-exec");
    assert_eq!(store_entry_mode(Path::new(&base)), name_mode(false));
    assert_eq!(store_entry_mode(Path::new(&exec)), name_mode(true));
    assert_eq!(store_entry_mode(Path::new("/pkg/bin-exec")), None);
}

#[cfg(unix)]
#[test]
fn the_umask_is_the_processs_and_stays_as_it_was() {
    let now = swap_umask();
    // Put back: read again, it is the same.
    assert_eq!(swap_umask(), now);
    assert_eq!(umask(), now);
    if cfg!(target_os = "linux") {
        assert_eq!(proc_status_umask(), Some(now));
    }
    assert_eq!(name_mode(false), Some(0o666 & !now));
}
