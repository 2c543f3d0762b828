//! Property tests: structure-aware generators (archives the `tar` crate writes, streams flate2
//! writes, values and rows our encoder writes, rows pnpm 11 wrote), then damage (mutated bytes,
//! fixed-up tar checksums, truncation), then the checks of `fuzzing.rs`. Random bytes alone
//! would rarely get past a tar checksum or a gzip header.
//!
//! The case counts keep the whole file to a few seconds of a debug `cargo test` on 2 cores;
//! `PROPTEST_CASES=100000 cargo test --release fuzzing` runs each property longer.

use super::*;
use crate::index_row::PackageFileInfo;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(cases),
        // A failure is turned into a named test in the module's tests, not a file here.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Damage to apply to valid bytes: `(position, byte)` pairs (positions taken modulo the
/// length), then an optional cut.
#[derive(Debug, Clone)]
struct Damage {
    writes: Vec<(usize, u8)>,
    cut: Option<usize>,
}

impl Damage {
    fn apply(&self, bytes: &mut Vec<u8>) {
        if !bytes.is_empty() {
            for &(at, byte) in &self.writes {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
        }
        if let Some(cut) = self.cut {
            bytes.truncate(cut % (bytes.len() + 1));
        }
    }
}

/// Bytes the parsers branch on (octal digits, separators, tar types, msgpack headers) as well
/// as any byte at all.
fn damage() -> impl Strategy<Value = Damage> {
    let byte = prop_oneof![
        any::<u8>(),
        select(b"0123456789 \0/.\\\n=xgL15K".to_vec()),
        select(vec![
            0x40, 0x7f, 0x90, 0xc0, 0xc1, 0xd4, 0x72, 0xdc, 0xdd, 0xdf, 0xff
        ]),
    ];
    (
        vec((any::<usize>(), byte), 1..6),
        prop::option::weighted(0.2, any::<usize>()),
    )
        .prop_map(|(writes, cut)| Damage { writes, cut })
}

// ---------------------------------------------------------------------------------------------
// The tar walk

/// One member of a generated archive.
#[derive(Debug, Clone)]
enum Member {
    File {
        path: String,
        data: Vec<u8>,
        mode: u32,
        ustar: bool,
    },
    /// A hard link: pnpm lists it as an empty file.
    Link {
        path: String,
        mode: u32,
    },
    Dir {
        path: String,
    },
    Symlink {
        path: String,
    },
    /// A pax `path` record naming the file after it (whose header names something else).
    PaxFile {
        path: String,
        data: Vec<u8>,
    },
    /// A header of any type with any name and data: pax and GNU records of any shape (lengths
    /// that lie, NULs, global `size`/`path`), unknown types. Never in a clean archive.
    Raw {
        kind: u8,
        name: Vec<u8>,
        data: Vec<u8>,
    },
}

impl Member {
    /// `(key, data, mode)` as pnpm lists this member, if it is a file.
    fn listed(&self) -> Option<(String, Vec<u8>, u32)> {
        let key = |path: &str| path.split_once('/').unwrap().1.to_string();
        match self {
            Member::File {
                path, data, mode, ..
            } => Some((key(path), data.clone(), *mode)),
            Member::Link { path, mode } => Some((key(path), Vec::new(), *mode)),
            Member::PaxFile { path, data } => Some((key(path), data.clone(), 0o644)),
            Member::Dir { .. } | Member::Symlink { .. } | Member::Raw { .. } => None,
        }
    }
}

/// `top/seg/...`: ASCII and non-ASCII, sometimes over 100 bytes (GNU long names, ustar
/// prefixes), sometimes one of a few fixed paths (so keys repeat, also across tops).
fn tar_path() -> impl Strategy<Value = String> {
    let segment = "[a-z0-9_é中-][a-z0-9._é中-]{0,39}";
    prop_oneof![
        4 => ("[a-z]{1,8}", vec(segment, 1..5))
            .prop_map(|(top, rest)| format!("{top}/{}", rest.join("/"))),
        1 => select(&["package/index.js", "package/lib/index.js", "other/index.js"][..])
            .prop_map(String::from),
    ]
}

fn clean_member() -> impl Strategy<Value = Member> {
    let data = || vec(any::<u8>(), 0..1100);
    prop_oneof![
        6 => (tar_path(), data(), 0u32..0o10000, any::<bool>()).prop_map(|(path, data, mode, ustar)| {
            Member::File { path, data, mode, ustar }
        }),
        1 => (tar_path(), 0u32..0o10000).prop_map(|(path, mode)| Member::Link { path, mode }),
        1 => tar_path().prop_map(|path| Member::Dir { path }),
        1 => tar_path().prop_map(|path| Member::Symlink { path }),
        2 => (tar_path(), data()).prop_map(|(path, data)| Member::PaxFile { path, data }),
    ]
}

fn messy_member() -> impl Strategy<Value = Member> {
    let pax = "([0-9]{0,3}|-1|99999999999999999999) (path|size|mtime)=[^\n]{0,12}\n";
    let raw = prop_oneof![
        (select(b"xg".to_vec()), vec(pax, 0..4))
            .prop_map(|(kind, records)| { (kind, records.concat().into_bytes()) }),
        (Just(b'L'), vec(any::<u8>(), 0..200)),
        (any::<u8>(), vec(any::<u8>(), 0..600)),
    ];
    prop_oneof![
        3 => clean_member(),
        1 => (raw, vec(any::<u8>(), 0..100))
            .prop_map(|((kind, data), name)| Member::Raw { kind, name, data }),
    ]
}

fn build_tar(members: &[Member]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for member in members {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_size(0);
        let written = match member {
            Member::File {
                path,
                data,
                mode,
                ustar,
            } => {
                if *ustar {
                    header = tar::Header::new_ustar();
                }
                header.set_mode(*mode);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, path, &data[..])
            }
            Member::Link { path, mode } => {
                header.set_mode(*mode);
                header.set_entry_type(tar::EntryType::Link);
                builder.append_link(&mut header, path, "target")
            }
            Member::Dir { path } => {
                header.set_entry_type(tar::EntryType::Directory);
                builder.append_data(&mut header, path, &[][..])
            }
            Member::Symlink { path } => {
                header.set_entry_type(tar::EntryType::Symlink);
                builder.append_link(&mut header, path, "../target")
            }
            Member::PaxFile { path, data } => {
                // Not `append_pax_extensions`: its header has no name, and a header starting
                // with NUL ends the archive for pnpm.
                let record = pax_record("path", path);
                append_raw(&mut builder, b'x', b"PaxHeader/x", record.as_bytes()).unwrap();
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, "package/placeholder", &data[..])
            }
            Member::Raw { kind, name, data } => append_raw(&mut builder, *kind, name, data),
        };
        written.expect("the tar crate writes every generated member");
    }
    builder.into_inner().unwrap()
}

/// A header of type `kind` whose name field holds `name` as it is (cut to 100 bytes).
fn append_raw(
    builder: &mut tar::Builder<Vec<u8>>,
    kind: u8,
    name: &[u8],
    data: &[u8],
) -> std::io::Result<()> {
    let mut header = tar::Header::new_gnu();
    let field = &mut header.as_old_mut().name;
    let len = name.len().min(field.len());
    field[..len].copy_from_slice(&name[..len]);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::new(kind));
    header.set_size(data.len() as u64);
    header.set_cksum();
    builder.append(&header, data)
}

/// `"<len> <key>=<value>\n"`, where `<len>` counts the whole record, its own digits included.
fn pax_record(key: &str, value: &str) -> String {
    let rest = format!(" {key}={value}\n");
    let mut len = rest.len() + 1;
    while len.to_string().len() + rest.len() != len {
        len += 1;
    }
    format!("{len}{rest}")
}

/// What pnpm lists for a clean archive: files in first-seen order, a repeated key taking the
/// later data and mode.
fn expected_listing(members: &[Member]) -> Vec<(String, Vec<u8>, u32)> {
    let mut listing: Vec<(String, Vec<u8>, u32)> = Vec::new();
    for (key, data, mode) in members.iter().filter_map(Member::listed) {
        match listing.iter_mut().find(|(k, _, _)| *k == key) {
            Some(entry) => (entry.1, entry.2) = (data, mode),
            None => listing.push((key, data, mode)),
        }
    }
    listing
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn tar_walk_lists_what_the_tar_crate_wrote(
        members in vec(clean_member(), 0..8),
        limit in 0u64..8000,
    ) {
        let tar = build_tar(&members);
        let listed: Vec<(String, Vec<u8>, u32)> = check_tar(&tar, limit)
            .unwrap()
            .into_iter()
            .map(|e| (e.path, tar[e.offset..e.offset + e.size].to_vec(), e.mode))
            .collect();
        prop_assert_eq!(listed, expected_listing(&members));
    }

    #[test]
    fn tar_walk_survives_damage(
        members in vec(messy_member(), 0..8),
        damage in damage(),
        fix_checksums in any::<bool>(),
        limit in 0u64..8000,
    ) {
        let mut tar = build_tar(&members);
        let _ = check_tar(&tar, limit);
        damage.apply(&mut tar);
        if fix_checksums {
            fix_tar_checksums(&mut tar);
        }
        let _ = check_tar(&tar, limit);
    }

    /// Streaming and whole-buffer extraction: the same files, row and manifest, or the same
    /// error, whatever the damage to the tar or to its gzip stream (`crate::streaming`).
    #[test]
    fn streamed_extraction_matches_the_whole_buffer(
        members in vec(messy_member(), 0..8),
        damage in damage(),
        fix_checksums in any::<bool>(),
        gzip_damage in proptest::option::of(damage()),
        limit in proptest::option::of(0u64..8000),
    ) {
        let mut tar = build_tar(&members);
        damage.apply(&mut tar);
        if fix_checksums {
            fix_tar_checksums(&mut tar);
        }
        let mut tgz = crate::streaming::tests::gz(&tar);
        if let Some(damage) = gzip_damage {
            damage.apply(&mut tgz);
        }
        let _ = crate::streaming::tests::same_at(&tgz, limit, None, &[0, u64::MAX]);
    }
}

// ---------------------------------------------------------------------------------------------
// The gzip front end

/// Text-like (compresses well, long back-references) or random (stored blocks) data.
fn plain_data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(select(b"ab {}\n".to_vec()), 0..6000),
        vec(any::<u8>(), 0..1500),
    ]
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn gzip_round_trips_and_rejects_cut_or_damaged_streams(
        data in plain_data(),
        split in any::<usize>(),
        level in 0u32..10,
        cuts in vec(any::<usize>(), 3),
    ) {
        check_gzip_round_trip(&data, split % (data.len() + 1), level, &cuts);
    }

    #[test]
    fn gzip_survives_damage_within_its_cap(
        data in plain_data(),
        level in 0u32..10,
        damage in damage(),
        in_header in any::<bool>(),
        limit in 0usize..8000,
    ) {
        let mut stream = gzip_member(&data, flate2::Compression::new(level));
        if in_header {
            // The flags and the fields they announce (extra, name, comment, header CRC).
            let mut header = Damage { writes: damage.writes.clone(), cut: None };
            header.writes.iter_mut().for_each(|(at, _)| *at %= 12);
            header.apply(&mut stream);
        } else {
            damage.apply(&mut stream);
        }
        let _ = check_gunzip(&stream, limit);
    }
}

// ---------------------------------------------------------------------------------------------
// The msgpackr decoder and index rows

/// Record keys from a small pool, so shapes repeat and get referenced by slot.
fn key() -> impl Strategy<Value = String> {
    "[a-e]{0,2}"
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        any::<i32>().prop_map(f64::from),
        any::<u32>().prop_map(f64::from),
        (-40i32..300).prop_map(f64::from),
        Just(-0.0),
        Just(f64::NAN),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Undefined),
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number().prop_map(Value::Number),
        ".{0,40}".prop_map(Value::String),
        "[a-z]{250,300}".prop_map(Value::String),
        key().prop_map(Value::String),
    ]
}

/// A JS object: keys are unique, as in JS.
fn object<T: Strategy<Value = Value>>(field: T) -> impl Strategy<Value = Value> {
    vec((key(), field), 0..8).prop_map(|mut fields| {
        let mut seen = HashSet::new();
        fields.retain(|(k, _)| seen.insert(k.clone()));
        Value::Object(fields)
    })
}

fn js_value() -> impl Strategy<Value = Value> {
    let nested = leaf().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..20).prop_map(Value::Array),
            object(inner.clone()),
            vec((inner.clone(), inner), 0..6).prop_map(Value::Map),
        ]
    });
    prop_oneof![
        4 => nested,
        // More shapes than the 64 record slots, so definitions get overwritten and redefined.
        1 => vec(object(Just(Value::Null)), 70..100).prop_map(Value::Array),
    ]
}

fn file_info() -> impl Strategy<Value = PackageFileInfo> {
    let checked_at = prop::option::of(prop_oneof![
        0f64..2e12,
        (0u64..1 << 53).prop_map(|n| n as f64)
    ]);
    (checked_at, "[0-9a-f]{0,128}", any::<u32>(), 0u64..1 << 53).prop_map(
        |(checked_at, digest, mode, size)| PackageFileInfo {
            checked_at,
            digest,
            mode,
            size,
        },
    )
}

fn files() -> impl Strategy<Value = Vec<(String, PackageFileInfo)>> {
    vec((".{0,30}", file_info()), 0..12)
}

fn row() -> impl Strategy<Value = PackageFilesIndex> {
    let diff = (
        prop::option::of(vec(".{0,20}", 0..4)),
        prop::option::of(files()),
    )
        .prop_map(|(deleted, added)| SideEffectsDiff {
            deleted,
            added,
            remote_origin: false,
        });
    (
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![Just(Value::Undefined), object(leaf())]),
        "[a-z0-9]{0,10}",
        files(),
        prop::option::of(vec((".{0,20}", diff), 0..3)),
    )
        .prop_map(
            |(requires_build, manifest, algo, files, side_effects)| PackageFilesIndex {
                requires_build,
                manifest,
                algo,
                files,
                side_effects,
            },
        )
}

/// The rows pnpm 11 wrote for the tarball fixtures (see `index_row`'s tests).
fn pnpm_rows() -> Vec<Vec<u8>> {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/index_row/pnpm11-rows");
    let mut rows: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| std::fs::read(entry.unwrap().path()).unwrap())
        .collect();
    rows.sort();
    assert!(rows.len() >= 10);
    rows
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn msgpackr_values_round_trip(value in js_value()) {
        let packed = msgpackr::encode(&value);
        let decoded = msgpackr::decode(&packed).unwrap();
        prop_assert!(same_value(&decoded, &value), "{:?}", decoded);
        check_msgpackr(&packed);
    }

    #[test]
    fn msgpackr_survives_damage_to_encoded_values(value in js_value(), damage in damage()) {
        let mut packed = msgpackr::encode(&value);
        damage.apply(&mut packed);
        check_msgpackr(&packed);
    }

    #[test]
    fn rows_round_trip(row in row()) {
        let packed = index_row::encode_row(&row);
        let decoded = index_row::decode_row(&packed).unwrap();
        prop_assert!(same_row(&decoded, &row));
        prop_assert_eq!(&decoded.files, &row.files);
        check_msgpackr(&packed);
    }

    #[test]
    fn rows_written_by_pnpm_survive_damage(
        which in any::<prop::sample::Index>(),
        damage in damage(),
    ) {
        thread_local!(static ROWS: Vec<Vec<u8>> = pnpm_rows());
        let mut row = ROWS.with(|rows| which.get(rows).clone());
        damage.apply(&mut row);
        check_msgpackr(&row);
    }
}

#[test]
fn tar_checksums_get_fixed() {
    let mut tar = build_tar(&[Member::File {
        path: "package/a".into(),
        data: b"x".to_vec(),
        mode: 0o644,
        ustar: true,
    }]);
    tar[124..136].copy_from_slice(b"00000000002\0");
    assert!(tarball::parse(&tar).is_err());
    fix_tar_checksums(&mut tar);
    let entries = check_tar(&tar, 2).unwrap();
    assert_eq!((entries[0].path.as_str(), entries[0].size), ("a", 2));
}
