use super::*;
use crate::error_code::ErrorCode;

/// A 512-byte tar header under construction; `bytes()` fills in a valid checksum.
#[derive(Clone)]
struct Header([u8; 512]);

impl Header {
    /// A ustar header for `name` with type `kind`, mode 0644 and `size`.
    fn new(name: &[u8], kind: u8, size: usize) -> Self {
        let mut h = Header([0; 512]);
        h.set(NAME, name);
        h.set(MODE, b"0000644\0");
        h.set(SIZE, format!("{size:011o}\0").as_bytes());
        h.0[TYPE] = kind;
        h.set(257..265, b"ustar\x0000");
        h
    }

    /// Writes `value` into `field`, zero-filling the rest of the field.
    fn set(&mut self, field: std::ops::Range<usize>, value: &[u8]) {
        assert!(value.len() <= field.len());
        self.0[field.clone()].fill(0);
        self.0[field.start..field.start + value.len()].copy_from_slice(value);
    }

    fn with(mut self, field: std::ops::Range<usize>, value: &[u8]) -> Self {
        self.set(field, value);
        self
    }

    fn prefix(self, prefix: &str) -> Self {
        self.with(PREFIX, prefix.as_bytes())
    }

    fn bytes(&self) -> Vec<u8> {
        self.bytes_with_checksum(&format!("{:06o}\0 ", checksum(&self.0)))
    }

    fn bytes_with_checksum(&self, field: &str) -> Vec<u8> {
        let mut h = self.clone();
        h.set(CHECKSUM, field.as_bytes());
        h.0.to_vec()
    }
}

/// A header followed by `data`, padded to whole blocks.
fn entry(header: Header, data: &[u8]) -> Vec<u8> {
    let mut out = header.bytes();
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(512), 0);
    out
}

fn file(name: &str, data: &[u8]) -> Vec<u8> {
    entry(Header::new(name.as_bytes(), b'0', data.len()), data)
}

fn typed(name: &str, kind: u8, data: &[u8]) -> Vec<u8> {
    entry(Header::new(name.as_bytes(), kind, data.len()), data)
}

fn pax_records(records: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for record in records {
        // The length counts itself, so find the fixed point.
        let mut len = record.len() + 3;
        while format!("{len} {record}\n").len() != len {
            len += 1;
        }
        out.extend_from_slice(format!("{len} {record}\n").as_bytes());
    }
    out
}

fn pax(kind: u8, records: &[&str]) -> Vec<u8> {
    typed("PaxHeader/x", kind, &pax_records(records))
}

/// Entries followed by the two zero blocks that end an archive.
fn archive(parts: &[Vec<u8>]) -> Vec<u8> {
    let mut out = parts.concat();
    out.extend_from_slice(&[0; 1024]);
    out
}

/// `(path, data, mode)` of each entry.
fn files(tar: &[u8]) -> Vec<(String, Vec<u8>, u32)> {
    parse(tar)
        .unwrap()
        .into_iter()
        .map(|e| (e.path, tar[e.offset..e.offset + e.size].to_vec(), e.mode))
        .collect()
}

fn keys(tar: &[u8]) -> Vec<String> {
    parse(tar).unwrap().into_iter().map(|e| e.path).collect()
}

fn error(tar: &[u8]) -> String {
    let err = parse(tar).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_EXTRACT");
    err.message
}

/// Every archive these tests use, with a name, so that the oracle test below can hand them
/// all to pnpm's own parser.
fn fixtures() -> Vec<(&'static str, Vec<u8>)> {
    let mut v = vec![];
    for (i, name) in [
        "package/a.js",
        "a.js",
        "./a.js",
        "./package/a.js",
        "package\\a.js",
        "package/a\\b.js",
        "package/../../etc/x",
        "package/foo\\..\\..\\..\\evil",
        "package/..",
        "/etc/passwd",
        "package//a.js",
        "package/a///b.js",
        "package/./a/b/../c/",
        "package/./",
        "package/.../x.js",
    ]
    .into_iter()
    .enumerate()
    {
        v.push((TABLE_NAMES[i], archive(&[file(name, b"x")])));
    }
    v.push((
        "prefix with slash",
        archive(&[entry(
            Header::new(b"c.js", b'0', 1).prefix("package/lib/sub"),
            b"c",
        )]),
    ));
    v.push((
        "prefix without slash",
        archive(&[entry(
            Header::new(b"lib/c.js", b'0', 1).prefix("package"),
            b"c",
        )]),
    ));
    v.push((
        "prefix ending in slash",
        archive(&[entry(
            Header::new(b"lib/c.js", b'0', 1).prefix("package/"),
            b"c",
        )]),
    ));
    v.push((
        "pax path",
        archive(&[
            pax(b'x', &["path=package/very/long.js", "mtime=1"]),
            file("package/short", b"data"),
            file("package/next.js", b"n"),
        ]),
    ));
    v.push((
        "pax path without slash",
        archive(&[pax(b'x', &["path=name.js"]), file("package/short", b"d")]),
    ));
    v.push((
        "pax size",
        archive(&[
            pax(b'x', &["size=700"]),
            entry(Header::new(b"package/big", b'0', 0), &[7; 700]),
            file("package/after", b"a"),
        ]),
    ));
    v.push((
        "pax empty path",
        archive(&[pax(b'x', &["path=package/"]), file("package/own", b"o")]),
    ));
    v.push((
        "pax record without equals",
        archive(&[pax(b'x', &["pathX", "sizeY2"]), file("package/own", b"o")]),
    ));
    v.push((
        "pax bad length",
        archive(&[typed("x", b'x', b"abc path=x\n"), file("package/a", b"a")]),
    ));
    v.push((
        "pax bad size",
        archive(&[pax(b'x', &["size=-1"]), file("package/a", b"a")]),
    ));
    v.push((
        "global pax path",
        archive(&[pax(b'g', &["path=package/x"]), file("package/a", b"a")]),
    ));
    v.push((
        "global pax size",
        archive(&[pax(b'g', &["size=1"]), file("package/a", b"a")]),
    ));
    v.push((
        "global pax other keys",
        archive(&[pax(b'g', &["comment=hi"]), file("package/a", b"a")]),
    ));
    v.push((
        "gnu long name",
        archive(&[
            typed(
                "././@LongLink",
                b'L',
                format!("package/{}\0", "x".repeat(150)).as_bytes(),
            ),
            file("package/xxxx", b"l"),
        ]),
    ));
    v.push((
        "gnu long name quirks",
        archive(&[
            typed("././@LongLink", b'L', b"nodir\0junk\nkept"),
            file("package/short", b"l"),
        ]),
    ));
    v.push((
        "long name consumed by a pax header",
        archive(&[
            typed("././@LongLink", b'L', b"package/long\0"),
            pax(b'x', &["path=package/from-pax"]),
            file("package/short", b"s"),
        ]),
    ));
    v.push((
        "gnu K fails",
        archive(&[
            typed("././@LongLink", b'K', b"target\0"),
            file("package/a", b"a"),
        ]),
    ));
    v.push(("type 7 fails", archive(&[typed("package/c", b'7', b"")])));
    v.push(("type 3 fails", archive(&[typed("package/c", b'3', b"")])));
    v.push((
        "directories and symlinks",
        archive(&[
            typed("package/", b'5', b""),
            entry(
                Header::new(b"package/link", b'2', 0).with(157..257, b"a.js"),
                b"",
            ),
            file("package/a.js", b"a"),
        ]),
    ));
    v.push((
        "hard links",
        archive(&[
            file("package/a.js", b"target"),
            entry(
                Header::new(b"package/b.js", b'1', 0).with(157..257, b"package/a.js"),
                b"",
            ),
            typed("package/c.js", b'1', b"own"),
        ]),
    ));
    v.push((
        "duplicates",
        archive(&[
            file("package/a.js", b"first"),
            file("package/b.js", b"b"),
            file("package/a.js", b"second"),
            file("package/c.js", b"c"),
            file("package/a.js", b"third"),
        ]),
    ));
    v.push((
        "name of exactly 100 bytes",
        archive(&[file(&format!("package/{}", "n".repeat(92)), b"x")]),
    ));
    v.push(("old type NUL", archive(&[typed("package/a.js", 0, b"a")])));
    v.push((
        "space padded octal",
        archive(&[entry(
            Header::new(b"package/a.js", b'0', 0)
                .with(SIZE, b"         14 ")
                .with(MODE, b"   755 \0"),
            b"hello world!",
        )]),
    ));
    v.push((
        "octal with leading NULs and sign",
        archive(&[entry(
            Header::new(b"package/a.js", b'0', 0)
                .with(SIZE, b"\0\0\0+3")
                .with(MODE, b"\x00100755"),
            b"abc",
        )]),
    ));
    v.push((
        "empty octal fields",
        archive(&[entry(
            Header::new(b"package/a.js", b'0', 0)
                .with(SIZE, b"")
                .with(MODE, b"  "),
            b"",
        )]),
    ));
    v.push((
        "v7 header",
        archive(&[entry(
            Header::new(b"package/a.js", 0, 2).with(257..265, b""),
            b"v7",
        )]),
    ));
    v.push((
        "checksum with space padding",
        archive(&[{
            let h = Header::new(b"package/a.js", b'0', 1);
            let mut bytes = h.bytes_with_checksum(&format!(" {:o} ", checksum(&h.0)));
            bytes.extend_from_slice(&[b'a'; 512]);
            bytes
        }]),
    ));
    v.push(("bad checksum", {
        let mut t = archive(&[file("package/a.js", b"a")]);
        t[0] = b'P';
        t
    }));
    v.push(("signed checksum", {
        let h = Header::new("package/é.js".as_bytes(), b'0', 0);
        let signed: i32 = 256
            + h.0
                .iter()
                .enumerate()
                .filter(|(i, _)| !CHECKSUM.contains(i))
                .map(|(_, &b)| b as i8 as i32)
                .sum::<i32>();
        let mut t = h.bytes_with_checksum(&format!("{signed:06o}\0 "));
        t.extend_from_slice(&[0; 1024]);
        t
    }));
    v.push(("empty input", vec![]));
    v.push(("missing end of archive", file("package/a.js", b"a")));
    v.push(("partial header", {
        let mut t = file("package/a.js", b"a");
        t.extend_from_slice(&Header::new(b"package/b.js", b'0', 0).bytes()[..200]);
        t
    }));
    v.push(("data past the end", {
        let mut t = typed("package/a.js", b'0', &[1; 2000]);
        t.truncate(512 + 1000);
        t
    }));
    v.push(("pax data past the end", {
        let mut t = pax(b'x', &["path=package/x.js"]);
        t.truncate(512 + 10);
        t
    }));
    v.push((
        "zero block ends the archive",
        [
            file("package/a.js", b"a"),
            vec![0; 512],
            file("package/b.js", b"b"),
        ]
        .concat(),
    ));
    v.push((
        "invalid utf-8 in names",
        archive(&[
            entry(
                Header::new(b"package/\xff\xc3(.js", b'0', 1).with(PREFIX, b"package/\xe2\x82"),
                b"u",
            ),
            entry(Header::new("package/ünï.js".as_bytes(), b'0', 1), b"u"),
        ]),
    ));
    v.push((
        "negative size on a directory",
        archive(&[
            entry(Header::new(b"package/d/", b'5', 0).with(SIZE, b"-1"), b""),
            file("package/a.js", b"a"),
        ]),
    ));
    v.push((
        "non-octal size on a directory",
        archive(&[
            entry(Header::new(b"package/d/", b'5', 0).with(SIZE, b"9"), b""),
            file("package/a.js", b"a"),
        ]),
    ));
    v
}

/// Names of the single-entry fixtures, one per naming rule of the tar walk
/// (docs/store-format.md, "Unpacking a tarball").
const TABLE_NAMES: [&str; 15] = [
    "package/a.js",
    "a.js (no dir)",
    "./a.js",
    "./package/a.js",
    "package\\a.js",
    "package/a\\b.js",
    "package/../../etc/x",
    "package/foo\\..\\..\\..\\evil",
    "package/..",
    "/etc/passwd",
    "package//a.js",
    "package/a///b.js",
    "dot segments with trailing slash",
    "package/./",
    "three dots",
];

fn fixture(name: &str) -> Vec<u8> {
    fixtures()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
        .1
}

#[test]
fn table_of_verified_names() {
    let expected = [
        "a.js",
        "a.js",
        "a.js",
        "package/a.js",
        "a.js",
        "a\\b.js",
        "etc/x",
        "evil",
        "..",
        "etc/passwd",
        "/a.js",
        "a//b.js",
        "a/c/",
        "",
        ".../x.js",
    ];
    for (name, key) in TABLE_NAMES.iter().zip(expected) {
        assert_eq!(keys(&fixture(name)), [key], "{name}");
    }
}

#[test]
fn prefix_field() {
    assert_eq!(keys(&fixture("prefix with slash")), ["lib/sub/c.js"]);
    assert_eq!(keys(&fixture("prefix without slash")), ["lib/c.js"]);
    // The prefix is empty once its first segment is gone, so the name is not trimmed again.
    assert_eq!(keys(&fixture("prefix ending in slash")), ["lib/c.js"]);
}

#[test]
fn pax_path_applies_to_the_next_entry_only() {
    assert_eq!(
        files(&fixture("pax path")),
        [
            ("very/long.js".into(), b"data".to_vec(), 0o644),
            ("next.js".into(), b"n".to_vec(), 0o644)
        ]
    );
    assert_eq!(keys(&fixture("pax path without slash")), ["name.js"]);
    // An empty value is falsy in pnpm: the header's own name is used.
    assert_eq!(keys(&fixture("pax empty path")), ["own"]);
}

#[test]
fn pax_size_overrides_the_header() {
    assert_eq!(
        files(&fixture("pax size")),
        [
            ("big".into(), vec![7; 700], 0o644),
            ("after".into(), b"a".to_vec(), 0o644)
        ]
    );
}

#[test]
fn pax_record_without_equals_uses_all_but_its_last_character_as_key() {
    // "pathX" → key "path", value "pathX"; "sizeY2" → key "sizeY" (ignored).
    assert_eq!(keys(&fixture("pax record without equals")), ["pathX"]);
}

#[test]
fn pax_errors() {
    assert_eq!(
        error(&fixture("pax bad length")),
        "Invalid length in PAX record: abc"
    );
    assert_eq!(
        error(&fixture("pax bad size")),
        "Invalid size in PAX record: size=-1"
    );
    assert_eq!(
        error(&fixture("global pax path")),
        "Unexpected global PAX path: path=package/x"
    );
    assert_eq!(
        error(&fixture("global pax size")),
        "Unexpected global PAX file size: size=1"
    );
    assert_eq!(keys(&fixture("global pax other keys")), ["a"]);
}

#[test]
fn gnu_long_names() {
    assert_eq!(keys(&fixture("gnu long name")), ["x".repeat(150)]);
    // No slash: nothing trimmed. `\0.*` stops at a line terminator, so "\nkept" survives.
    assert_eq!(keys(&fixture("gnu long name quirks")), ["nodir\nkept"]);
    // The pax header itself takes the pending long name, the file gets the pax path.
    assert_eq!(
        keys(&fixture("long name consumed by a pax header")),
        ["from-pax"]
    );
}

#[test]
fn unsupported_types_fail() {
    assert_eq!(
        error(&fixture("gnu K fails")),
        "Unsupported file type 75 for file @LongLink."
    );
    assert_eq!(
        error(&fixture("type 7 fails")),
        "Unsupported file type 55 for file c."
    );
    assert_eq!(
        error(&fixture("type 3 fails")),
        "Unsupported file type 51 for file c."
    );
}

#[test]
fn directories_and_symlinks_are_skipped() {
    assert_eq!(keys(&fixture("directories and symlinks")), ["a.js"]);
}

#[test]
fn hard_links_are_files_with_their_own_data() {
    assert_eq!(
        files(&fixture("hard links")),
        [
            ("a.js".into(), b"target".to_vec(), 0o644),
            ("b.js".into(), vec![], 0o644),
            ("c.js".into(), b"own".to_vec(), 0o644),
        ]
    );
}

#[test]
fn duplicates_keep_the_first_position_and_the_last_content() {
    assert_eq!(
        files(&fixture("duplicates")),
        [
            ("a.js".into(), b"third".to_vec(), 0o644),
            ("b.js".into(), b"b".to_vec(), 0o644),
            ("c.js".into(), b"c".to_vec(), 0o644),
        ]
    );
}

#[test]
fn name_filling_the_whole_field() {
    assert_eq!(
        keys(&fixture("name of exactly 100 bytes")),
        ["n".repeat(92)]
    );
}

#[test]
fn octal_fields() {
    assert_eq!(
        files(&fixture("space padded octal")),
        [("a.js".into(), b"hello world!".to_vec(), 0o755)]
    );
    assert_eq!(
        files(&fixture("octal with leading NULs and sign")),
        [("a.js".into(), b"abc".to_vec(), 0o100755)]
    );
    assert_eq!(
        files(&fixture("empty octal fields")),
        [("a.js".into(), vec![], 0)]
    );
    assert_eq!(parse_octal(b"0000644\0"), 420.0);
    assert_eq!(parse_octal(b"   644 "), 420.0);
    assert_eq!(parse_octal(b" 12 34"), 10.0);
    assert_eq!(parse_octal(b"\t644"), 420.0);
    assert_eq!(parse_octal("\u{a0}7".as_bytes()), 7.0);
    assert_eq!(parse_octal(b"-10"), -8.0);
    assert_eq!(parse_octal(b"\0\0\0\0"), 0.0);
    assert!(parse_octal(b"9").is_nan());
    assert!(parse_octal(b"\x80\0\0\0\0\0\0\x01").is_nan());
}

#[test]
fn old_headers_are_accepted() {
    assert_eq!(keys(&fixture("old type NUL")), ["a.js"]);
    assert_eq!(
        files(&fixture("v7 header")),
        [("a.js".into(), b"v7".to_vec(), 0o644)]
    );
    assert_eq!(keys(&fixture("checksum with space padding")), ["a.js"]);
}

#[test]
fn checksum_errors() {
    let good = archive(&[file("package/a.js", b"a")]);
    let expected = checksum(&good[..512]);
    assert_eq!(
        error(&fixture("bad checksum")),
        format!(
            "Invalid checksum for TAR header at offset 0. Expected {expected}, got {}",
            expected + u32::from(b'P') - u32::from(b'p')
        )
    );
    assert!(error(&fixture("signed checksum"))
        .starts_with("Invalid checksum for TAR header at offset 0."));
}

#[test]
fn running_off_the_end_fails_like_pnpm() {
    assert_eq!(
        error(&fixture("empty input")),
        "Invalid checksum for TAR header at offset 0. Expected 0, got NaN"
    );
    assert_eq!(
        error(&fixture("missing end of archive")),
        "Invalid checksum for TAR header at offset 1024. Expected 0, got NaN"
    );
    let partial = fixture("partial header");
    let expected = parse_octal(&partial[1024 + 148..1024 + 156]);
    assert_eq!(
        error(&partial),
        format!("Invalid checksum for TAR header at offset 1024. Expected {expected}, got NaN")
    );
    assert_eq!(
        error(&fixture("data past the end")),
        "Invalid checksum for TAR header at offset 2560. Expected 0, got NaN"
    );
    assert_eq!(
        error(&fixture("pax data past the end")),
        "Invalid checksum for TAR header at offset 1024. Expected 0, got NaN"
    );
}

#[test]
fn the_first_zero_block_ends_the_archive() {
    assert_eq!(keys(&fixture("zero block ends the archive")), ["a.js"]);
}

#[test]
fn names_are_decoded_like_node() {
    // The prefix had the slash, so the name keeps its own first segment.
    assert_eq!(
        keys(&fixture("invalid utf-8 in names")),
        ["\u{fffd}/package/\u{fffd}\u{fffd}(.js", "ünï.js"]
    );
}

#[test]
fn sizes_of_skipped_entries_follow_js_arithmetic() {
    // NaN and -1 both step one block in pnpm's 32-bit arithmetic.
    assert_eq!(keys(&fixture("negative size on a directory")), ["a.js"]);
    assert_eq!(keys(&fixture("non-octal size on a directory")), ["a.js"]);
}

fn too_large(tar: &[u8], max: u64) -> String {
    let err = parse_limited(tar, Some(max)).unwrap_err();
    assert_eq!(err.code(), "ERR_PNPM_TARBALL_TOO_LARGE");
    err.message
}

#[test]
fn the_unpacked_size_limit_counts_every_regular_file_header() {
    let tar = archive(&[
        file("package/a.js", &[b'a'; 600]),
        typed("package/d/", b'5', b""),
        typed("package/l", b'2', b""),
        file("package/a.js", &[b'b'; 300]), // a duplicate counts again
        typed("package/h", b'1', &[b'h'; 100]),
    ]);
    assert_eq!(parse_limited(&tar, Some(1000)).unwrap().len(), 2);
    assert_eq!(parse_limited(&tar, None).unwrap(), parse(&tar).unwrap());
    assert_eq!(
        too_large(&tar, 999),
        "Unpacked, this tarball would take more than the 999 bytes maxTarballUnpackedSize allows: its regular files reach 1000 bytes at \"h\""
    );
    // Zero allows empty files only.
    assert_eq!(
        parse_limited(&archive(&[file("package/e", b"")]), Some(0))
            .unwrap()
            .len(),
        1
    );
    assert!(too_large(&tar, 0).ends_with("reach 600 bytes at \"a.js\""));
}

#[test]
fn the_unpacked_size_limit_takes_pax_sizes_and_comes_first() {
    // A pax size applies to the next header, and the limit is checked before that header's
    // size is found to run past the archive (or past what one file may be).
    let tar = archive(&[pax(b'x', &["size=5000"]), file("package/a", b"x")]);
    assert!(too_large(&tar, 4999).contains("reach 5000 bytes"));
    assert!(error(&tar).starts_with("Invalid checksum"));
    let tar = archive(&[pax(b'x', &["size=3221225472"]), file("package/a", b"x")]);
    assert!(too_large(&tar, 2 << 30).contains("reach 3221225472 bytes"));
    assert!(error(&tar).starts_with("Unsupported size 3221225472"));
    // The first header over the limit wins over a malformed one after it.
    let tar = archive(&[
        file("package/a", &[0; 10]),
        entry(Header::new(b"package/b", b'0', 0), b"")
            .into_iter()
            .map(|b| b ^ 1)
            .collect(),
    ]);
    assert!(too_large(&tar, 9).contains("reach 10 bytes"));
}

#[test]
fn sizes_pnpm_cannot_step_over_are_errors() {
    // -1000 makes pnpm's step 0 (it would loop forever), 2^31 makes it negative.
    for size in [&b"-1000"[..], b"20000000000"] {
        let tar = archive(&[entry(
            Header::new(b"package/d/", b'5', 0).with(SIZE, size),
            b"",
        )]);
        assert!(
            error(&tar).starts_with("Unsupported size "),
            "{}",
            error(&tar)
        );
    }
    // A file whose size pnpm would store as NaN.
    let tar = archive(&[entry(
        Header::new(b"package/a", b'0', 0).with(SIZE, b"x"),
        b"",
    )]);
    assert_eq!(
        error(&tar),
        "Unsupported size NaN for file a in TAR header at offset 0"
    );
    let tar = archive(&[entry(
        Header::new(b"package/a", b'0', 0).with(MODE, b"-1"),
        b"",
    )]);
    assert_eq!(
        error(&tar),
        "Unsupported mode -1 for file a in TAR header at offset 0"
    );
}

#[test]
fn js_helpers() {
    assert_eq!(to_int32(4_294_967_296.0 + 100.0), 100);
    assert_eq!(to_int32(2_147_483_648.0), i32::MIN);
    assert_eq!(to_int32(-1.0), -1);
    assert_eq!(to_int32(f64::NAN), 0);
    assert_eq!(block_bytes(0.0), Some(512));
    assert_eq!(block_bytes(1.0), Some(1024));
    assert_eq!(block_bytes(512.0), Some(1024));
    assert_eq!(block_bytes(f64::NAN), Some(512));
    assert_eq!(block_bytes(-1000.0), None);
    assert_eq!(js_parse_int(b"  +12x", 10), 12.0);
    assert_eq!(js_parse_int("\u{feff}\u{3000}7".as_bytes(), 10), 7.0);
    assert!(js_parse_int(b"", 10).is_nan());
    assert!(js_parse_int(b"-", 10).is_nan());
    assert_eq!(normalize("a/./b/../c"), "a/c");
    assert_eq!(normalize("../../x/"), "x/");
    assert_eq!(normalize("./"), "");
    assert_eq!(crate::json::number_to_string(-0.0), "0");
    assert_eq!(crate::json::number_to_string(f64::INFINITY), "Infinity");
}

#[test]
fn matches_the_tar_crate_on_a_plain_archive() {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, data) in [
        ("package/package.json", &b"{}"[..]),
        ("package/lib/i.js", b"1"),
    ] {
        let mut header = tar::Header::new_ustar();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, data).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    assert_eq!(
        files(&tar),
        [
            ("package.json".into(), b"{}".to_vec(), 0o644),
            ("lib/i.js".into(), b"1".to_vec(), 0o644)
        ]
    );
}
