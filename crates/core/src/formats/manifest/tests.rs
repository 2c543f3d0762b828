//! Expectations below were produced by the real packages in Node 24.21 — node-semver 7.8.6
//! `clean(v, {loose: true})` and `normalizeBundledManifest` of `@pnpm/store.cafs` 1100.3.3 — and
//! pasted as literals; the tests do not need Node.

use super::*;
use crate::json;
use sha2::{Digest, Sha512};

/// (input, node-semver `clean(input, {loose: true})`).
const SEMVER_CLEAN: &[(&str, Option<&str>)] = &[
    ("v1.2.3", Some("1.2.3")),
    ("1.2.3+build.5", Some("1.2.3")),
    ("=1.0.0", Some("1.0.0")),
    (" 1.0.0 ", Some("1.0.0")),
    ("1.2.3beta", Some("1.2.3-beta")),
    ("latest", None),
    ("1.2", None),
    ("01.02.03", Some("1.2.3")),
    ("1.2.3-01", Some("1.2.3-1")),
    ("1.2.34.foo", Some("1.2.3-4.foo")),
    ("1.2.3-", Some("1.2.3--")),
    ("1.2.3--a", Some("1.2.3--a")),
    ("1.2.3-.a", Some("1.2.3--.a")),
    ("1.2.3+", None),
    ("1.2.3-a+", None),
    ("1.2.3.4", None),
    ("v1.2.3 ", Some("1.2.3")),
    ("1.2.3 -beta", None),
    ("= v1.2.3", Some("1.2.3")),
    ("=v= =1.2.3", Some("1.2.3")),
    ("vv1.2.3", Some("1.2.3")),
    ("v=1.2.3", Some("1.2.3")),
    ("V1.2.3", None),
    ("\t\n1.2.3\u{a0}", Some("1.2.3")),
    ("\u{feff}1.2.3", Some("1.2.3")),
    ("1.2.3\u{85}", None),
    ("1.2.3-alpha.01.002.x", Some("1.2.3-alpha.1.2.x")),
    ("1.2.3-0", Some("1.2.3-0")),
    ("1.2.3-00", Some("1.2.3-0")),
    ("1.2.3-9007199254740991", Some("1.2.3-9007199254740991")),
    ("1.2.3-9007199254740990", Some("1.2.3-9007199254740990")),
    ("1.2.3-09007199254740990", Some("1.2.3-9007199254740990")),
    ("1.2.3-09007199254740991", Some("1.2.3-09007199254740991")),
    ("1.2.3-9007199254740992", Some("1.2.3-9007199254740992")),
    ("9007199254740991.0.0", Some("9007199254740991.0.0")),
    ("9007199254740992.0.0", None),
    ("00009007199254740991.0.0", Some("9007199254740991.0.0")),
    ("1.2.3-a.b-c.-.d", Some("1.2.3-a.b-c.-.d")),
    ("1.2.3-a..b", None),
    ("1.2.3-a.", None),
    ("1.2.3+a..b", None),
    ("1.2.3+a.b", Some("1.2.3")),
    ("1.2.3-rc.1+build.1-x", Some("1.2.3-rc.1")),
    ("1.2.3alpha1", Some("1.2.3-alpha1")),
    ("1.2.3-alpha1", Some("1.2.3-alpha1")),
    ("1.2.3_1", None),
    ("1.2.3-αβ", None),
    ("1.2.3 ", Some("1.2.3")),
    ("1.2.3\u{2028}", Some("1.2.3")),
    ("", None),
    ("v", None),
    ("=", None),
    ("0.0.0", Some("0.0.0")),
    ("0.0.0-0", Some("0.0.0-0")),
    ("1.2.3-+a", Some("1.2.3--")),
    ("1.2.3--", Some("1.2.3--")),
    ("1.2.3-+", None),
    ("1.2.3.-a", None),
    ("1.2.3.4.5", None),
    ("1.2.34-.x", Some("1.2.34--.x")),
    ("1.2.3x.y", Some("1.2.3-x.y")),
    ("1.2.3x.y+z", Some("1.2.3-x.y")),
    ("1 .2.3", None),
    ("1. 2.3", None),
    ("1.2.3 beta", None),
    ("v 1.2.3", Some("1.2.3")),
    ("v\u{a0}1.2.3", Some("1.2.3")),
    ("1.2.3-beta.1.2", Some("1.2.3-beta.1.2")),
    ("1.2.3-0.-0", Some("1.2.3-0.-0")),
    ("1.2.3-1e5", Some("1.2.3-1e5")),
    ("1.2.3-0x10", Some("1.2.3-0x10")),
    ("  =v1.2.3-BETA+Build  ", Some("1.2.3-BETA")),
    ("1.2.3\u{3000}", Some("1.2.3")),
    ("1.2.3-a\u{3000}b", None),
    ("1.2.3-rc.01.1a", Some("1.2.3-rc.1.1a")),
    ("1.2.3-1a.01", Some("1.2.3-1a.1")),
    ("1.2.3+build.01", Some("1.2.3")),
    ("001.002.003-004", Some("1.2.3-4")),
];

#[test]
fn semver_clean_loose_matches_node_semver() {
    for (input, expected) in SEMVER_CLEAN {
        assert_eq!(
            semver_clean_loose(input).as_deref(),
            *expected,
            "input: {input:?}"
        );
    }
}

#[test]
fn semver_clean_loose_length_limit() {
    let a250 = "a".repeat(250);
    assert_eq!(
        semver_clean_loose(&format!("1.2.3-{a250}")),
        Some(format!("1.2.3-{a250}"))
    );
    assert_eq!(semver_clean_loose(&format!("1.2.3-{a250}a")), None);
    // Leading `v`/`=` runs and surrounding whitespace are stripped before the length check…
    let v300 = "v".repeat(300);
    assert_eq!(
        semver_clean_loose(&format!("{v300}1.2.3")).as_deref(),
        Some("1.2.3")
    );
    let sp300 = " ".repeat(300);
    assert_eq!(
        semver_clean_loose(&format!("{sp300}1.2.3")).as_deref(),
        Some("1.2.3")
    );
    let eq252 = "=".repeat(252);
    assert_eq!(
        semver_clean_loose(&format!("{eq252}v1.2.3")).as_deref(),
        Some("1.2.3")
    );
    // …but `=`/`v` after a space are not: " = = … 1.2.3" is 259 units long.
    assert_eq!(
        semver_clean_loose(&format!("{}1.2.3", "= ".repeat(130))),
        None
    );
}

/// (package.json text, `JSON.stringify(normalizeBundledManifest(JSON.parse(text)), null, 2)`,
/// `"undefined"`, or `"ERR:" + message`).
const NORMALIZE: &[(&str, &str)] = &[
    ("{}", "undefined"),
    ("{\"version\":\"1.0.0\",\"description\":\"a package\",\"keywords\":[\"test\"],\"license\":\"MIT\",\"author\":\"test\",\"repository\":\"test/test\",\"main\":\"index.js\"}", "undefined"),
    ("{\"name\":\"foo\",\"version\":\"1.0.0\"}", "{\n  \"version\": \"1.0.0\",\n  \"name\": \"foo\"\n}"),
    ("{\"zzz\":1,\"peerDependenciesMeta\":{\"p\":{\"optional\":true}},\"peerDependencies\":{\"p\":\"*\"},\"os\":[\"linux\"],\"optionalDependencies\":{\"o\":\"1\"},\"name\":\"foo\",\"libc\":[\"glibc\"],\"engines\":{\"node\":\">=18\"},\"directories\":{\"bin\":\"b\"},\"devDependencies\":{\"d\":\"1\"},\"dependencies\":{\"a\":\"^1\"},\"cpu\":[\"x64\"],\"bundleDependencies\":[\"x\"],\"bundledDependencies\":[\"y\"],\"bin\":{\"foo\":\"cli.js\"},\"version\":\"2.0.0\",\"scripts\":{\"test\":\"t\",\"postinstall\":\"p\",\"install\":\"i\",\"preinstall\":\"pre\",\"prepare\":\"x\"}}", "{\n  \"version\": \"2.0.0\",\n  \"bin\": {\n    \"foo\": \"cli.js\"\n  },\n  \"bundledDependencies\": [\n    \"y\"\n  ],\n  \"bundleDependencies\": [\n    \"x\"\n  ],\n  \"cpu\": [\n    \"x64\"\n  ],\n  \"dependencies\": {\n    \"a\": \"^1\"\n  },\n  \"devDependencies\": {\n    \"d\": \"1\"\n  },\n  \"directories\": {\n    \"bin\": \"b\"\n  },\n  \"engines\": {\n    \"node\": \">=18\"\n  },\n  \"libc\": [\n    \"glibc\"\n  ],\n  \"name\": \"foo\",\n  \"optionalDependencies\": {\n    \"o\": \"1\"\n  },\n  \"os\": [\n    \"linux\"\n  ],\n  \"peerDependencies\": {\n    \"p\": \"*\"\n  },\n  \"peerDependenciesMeta\": {\n    \"p\": {\n      \"optional\": true\n    }\n  },\n  \"scripts\": {\n    \"preinstall\": \"pre\",\n    \"install\": \"i\",\n    \"postinstall\": \"p\"\n  }\n}"),
    ("{\"name\":\"foo\"}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":null}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"v1.2.3\"}", "{\n  \"version\": \"1.2.3\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"latest\"}", "{\n  \"version\": \"latest\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"\"}", "{\n  \"version\": \"\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\" =1.0.0 \"}", "{\n  \"version\": \"1.0.0\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"1.2.3+build.5\"}", "{\n  \"version\": \"1.2.3\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"1.2.3beta\"}", "{\n  \"version\": \"1.2.3-beta\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"1.2\"}", "{\n  \"version\": \"1.2\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":\"01.02.03-01\"}", "{\n  \"version\": \"1.2.3-1\",\n  \"name\": \"foo\"\n}"),
    ("{\"name\":\"foo\",\"version\":1}", "ERR:version.trim is not a function"),
    ("{\"version\":1}", "undefined"),
    ("{\"version\":1,\"description\":\"x\"}", "undefined"),
    ("{\"name\":\"foo\",\"version\":true}", "ERR:version.trim is not a function"),
    ("{\"name\":\"foo\",\"version\":false}", "ERR:version.trim is not a function"),
    ("{\"name\":\"foo\",\"version\":{}}", "ERR:version.trim is not a function"),
    ("{\"name\":\"foo\",\"version\":[]}", "ERR:version.trim is not a function"),
    ("{\"name\":\"foo\",\"version\":[\"1.0.0\"]}", "ERR:version.trim is not a function"),
    ("{\"scripts\":{\"install\":\"x\"},\"version\":2}", "ERR:version.trim is not a function"),
    ("{\"name\":\"\",\"bin\":false,\"os\":[],\"cpu\":0,\"dependencies\":null,\"engines\":{},\"libc\":\"\",\"directories\":null}", "{\n  \"version\": \"0.0.0\",\n  \"bin\": false,\n  \"cpu\": 0,\n  \"engines\": {},\n  \"libc\": \"\",\n  \"name\": \"\",\n  \"os\": []\n}"),
    ("{\"scripts\":{\"preinstall\":\"\",\"install\":\"node x\",\"postinstall\":null,\"test\":\"y\"}}", "{\n  \"version\": \"0.0.0\",\n  \"scripts\": {\n    \"install\": \"node x\"\n  }\n}"),
    ("{\"version\":\"1.0.0\",\"scripts\":{\"postinstall\":\"p\"}}", "{\n  \"version\": \"1.0.0\",\n  \"scripts\": {\n    \"postinstall\": \"p\"\n  }\n}"),
    ("{\"name\":\"a\",\"scripts\":\"install\"}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"a\"\n}"),
    ("{\"name\":\"a\",\"scripts\":[\"install\"]}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"a\"\n}"),
    ("{\"name\":\"a\",\"scripts\":{\"install\":0,\"preinstall\":false}}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"a\"\n}"),
    ("{\"name\":\"a\",\"scripts\":{\"install\":1,\"postinstall\":{},\"preinstall\":[]}}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"a\",\n  \"scripts\": {\n    \"preinstall\": [],\n    \"install\": 1,\n    \"postinstall\": {}\n  }\n}"),
    ("{\"name\":\"a\",\"scripts\":{}}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"a\"\n}"),
    ("{\"name\":\"a\",\"scripts\":null}", "{\n  \"version\": \"0.0.0\",\n  \"name\": \"a\"\n}"),
    ("{\"name\":\"a\",\"dependencies\":{\"b\":\"1\",\"2\":\"x\",\"a\":\"2\"}}", "{\n  \"version\": \"0.0.0\",\n  \"dependencies\": {\n    \"2\": \"x\",\n    \"b\": \"1\",\n    \"a\": \"2\"\n  },\n  \"name\": \"a\"\n}"),
    ("{\"name\":\"a\",\"version\":\"1.0.0\",\"name\":\"b\",\"version\":\"2.0.0\"}", "{\n  \"version\": \"2.0.0\",\n  \"name\": \"b\"\n}"),
    ("{\"bundledDependencies\":true}", "{\n  \"version\": \"0.0.0\",\n  \"bundledDependencies\": true\n}"),
    ("{\"engines\":{\"node\":null},\"bin\":\"cli.js\"}", "{\n  \"version\": \"0.0.0\",\n  \"bin\": \"cli.js\",\n  \"engines\": {\n    \"node\": null\n  }\n}"),
    ("[]", "undefined"),
    ("\"str\"", "undefined"),
    ("42", "undefined"),
    ("true", "undefined"),
];

fn normalize_text(text: &str) -> String {
    match normalize_bundled_manifest(&json::parse(text).unwrap(), Gypfile::Ignored) {
        Ok(Some(v)) => json::stringify_pretty(&v),
        Ok(None) => "undefined".to_owned(),
        Err(e) => format!("ERR:{e}"),
    }
}

#[test]
fn normalize_bundled_manifest_matches_pnpm() {
    for (input, expected) in NORMALIZE {
        assert_eq!(normalize_text(input), *expected, "input: {input}");
    }
}

#[test]
fn normalize_bundled_manifest_exact_value() {
    let manifest = json::parse(
        r#"{"scripts":{"install":"node-gyp rebuild","test":"x"},"bin":{"foo":"cli.js"},"version":"v1.0.0","name":"foo","main":"x.js"}"#,
    )
    .unwrap();
    let expected = Value::Object(vec![
        ("version".to_owned(), Value::String("1.0.0".to_owned())),
        (
            "bin".to_owned(),
            Value::Object(vec![("foo".to_owned(), Value::String("cli.js".to_owned()))]),
        ),
        ("name".to_owned(), Value::String("foo".to_owned())),
        (
            "scripts".to_owned(),
            Value::Object(vec![(
                "install".to_owned(),
                Value::String("node-gyp rebuild".to_owned()),
            )]),
        ),
    ]);
    assert_eq!(
        normalize_bundled_manifest(&manifest, Gypfile::Ignored),
        Ok(Some(expected))
    );
}

#[test]
fn normalize_bundled_manifest_non_json_inputs() {
    // pnpm only calls it for `manifest != null`; absent manifests stay absent.
    assert_eq!(
        normalize_bundled_manifest(&Value::Null, Gypfile::Ignored),
        Ok(None)
    );
    assert_eq!(
        normalize_bundled_manifest(&Value::Undefined, Gypfile::Ignored),
        Ok(None)
    );
    // A Map has no own properties named like the fields.
    let map = Value::Map(vec![(
        Value::String("name".to_owned()),
        Value::String("x".to_owned()),
    )]);
    assert_eq!(normalize_bundled_manifest(&map, Gypfile::Ignored), Ok(None));
    // `undefined` (possible in decoded index rows) counts like a missing field / version.
    let m = Value::Object(vec![
        ("version".to_owned(), Value::Undefined),
        ("bin".to_owned(), Value::Undefined),
        ("name".to_owned(), Value::String("x".to_owned())),
    ]);
    assert_eq!(
        normalize_bundled_manifest(&m, Gypfile::Ignored),
        Ok(Some(Value::Object(vec![
            ("version".to_owned(), Value::String("0.0.0".to_owned())),
            ("name".to_owned(), Value::String("x".to_owned())),
        ])))
    );
    assert_eq!(
        ManifestError::VersionNotString.to_string(),
        "version.trim is not a function"
    );
}

fn manifest(text: &str) -> Value {
    json::parse(text).unwrap()
}

#[test]
fn requires_build_from_scripts() {
    let none: [&str; 0] = [];
    for script in ["preinstall", "install", "postinstall"] {
        let m = manifest(&format!(r#"{{"scripts":{{"{script}":"node build.js"}}}}"#));
        assert!(requires_build(Some(&m), none, Gypfile::Ignored), "{script}");
    }
    for text in [
        r#"{"scripts":{"test":"x","prepare":"y","prepublish":"z"}}"#,
        r#"{"scripts":{"install":"","preinstall":0,"postinstall":null}}"#,
        r#"{"scripts":"install"}"#,
        r#"{"scripts":null}"#,
        r#"{"name":"x"}"#,
        r#"{}"#,
    ] {
        assert!(
            !requires_build(Some(&manifest(text)), none, Gypfile::Ignored),
            "{text}"
        );
    }
    assert!(!requires_build(None, none, Gypfile::Ignored));
    assert!(!requires_build(Some(&Value::Null), none, Gypfile::Ignored));
}

#[test]
fn requires_build_from_files() {
    let m = manifest(r#"{"name":"x","scripts":{"test":"x"}}"#);
    let yes = |keys: &[&str]| requires_build(Some(&m), keys.iter().copied(), Gypfile::Ignored);
    assert!(yes(&["package.json", "binding.gyp"]));
    assert!(yes(&[".hooks/pre-commit"]));
    assert!(yes(&[".hooks\\pre-commit"]));
    assert!(yes(&["index.js", ".hooks/x/y"]));
    assert!(!yes(&["package.json", "lib/binding.gyp"]));
    assert!(!yes(&["./binding.gyp", "binding.gyp.bak", "Binding.gyp"]));
    assert!(!yes(&[
        ".hooks",
        ".hooksx/a",
        "a/.hooks/b",
        "hooks/a",
        ".HOOKS/a"
    ]));
    assert!(!yes(&[]));
    // Also without a manifest (placeholder package.json).
    assert!(requires_build(
        None,
        ["package.json", "binding.gyp"],
        Gypfile::Ignored
    ));
}

#[test]
fn placeholder_package_json_matches_the_test_vector() {
    assert_eq!(PLACEHOLDER_PACKAGE_JSON.len(), 108);
    let digest = Sha512::digest(PLACEHOLDER_PACKAGE_JSON);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        "6fa4faf2f4b05118f01f254679b75181060e07d0c212c38d0d48f28fe490f8f035afa83fb006c4511dc0a932061d35a7eaac014ed52306fa113cbeb510b87492"
    );
    // It is valid JSON whose `_pnpmPlaceholder` field readers look for.
    let v = json::parse(std::str::from_utf8(PLACEHOLDER_PACKAGE_JSON).unwrap()).unwrap();
    assert!(v.get("_pnpmPlaceholder").is_some_and(Value::is_truthy));
}

#[test]
fn gypfile_false_opts_binding_gyp_out_only_where_it_is_read() {
    let gyp = ["package.json", "binding.gyp"];
    let read = |text: &str, keys: &[&str]| {
        requires_build(Some(&manifest(text)), keys.iter().copied(), Gypfile::Read)
    };
    assert!(!read(r#"{"gypfile":false}"#, &gyp));
    // pnpm 11.28 compares with `=== false`: any other value leaves binding.gyp counting.
    for text in [
        r#"{"gypfile":true}"#,
        r#"{"gypfile":"false"}"#,
        r#"{"gypfile":0}"#,
        r#"{"gypfile":null}"#,
        r#"{}"#,
    ] {
        assert!(read(text, &gyp), "{text}");
    }
    // It opts out of binding.gyp only: scripts and .hooks still count.
    assert!(read(r#"{"gypfile":false}"#, &["binding.gyp", ".hooks/x"]));
    assert!(read(
        r#"{"gypfile":false,"scripts":{"install":"node-gyp rebuild"}}"#,
        &gyp
    ));
    // `@pnpm/worker` 1100.x does not read it.
    let m = manifest(r#"{"gypfile":false}"#);
    assert!(requires_build(Some(&m), gyp, Gypfile::Ignored));
}

#[test]
fn gypfile_is_kept_in_the_row_manifest_where_it_is_read() {
    let m = manifest(r#"{"libc":["glibc"],"gypfile":false,"engines":{"node":">=18"},"name":"x"}"#);
    let keys = |gypfile| match normalize_bundled_manifest(&m, gypfile) {
        Ok(Some(Value::Object(fields))) => fields.into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    // pnpm 11.28's order: after `engines`, before `libc`.
    assert_eq!(
        keys(Gypfile::Read),
        ["version", "engines", "gypfile", "libc", "name"]
    );
    assert_eq!(
        keys(Gypfile::Ignored),
        ["version", "engines", "libc", "name"]
    );
    let only = manifest(r#"{"gypfile":false}"#);
    assert_eq!(
        normalize_bundled_manifest(&only, Gypfile::Read),
        Ok(Some(manifest(r#"{"version":"0.0.0","gypfile":false}"#)))
    );
    assert_eq!(
        normalize_bundled_manifest(&only, Gypfile::Ignored),
        Ok(None)
    );
    let null = manifest(r#"{"gypfile":null}"#);
    assert_eq!(normalize_bundled_manifest(&null, Gypfile::Read), Ok(None));
}
