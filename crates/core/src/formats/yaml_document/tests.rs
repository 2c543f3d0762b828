use super::*;
use crate::error_code::ErrorCode;

fn json(text: &str) -> String {
    load_json(text).unwrap().unwrap()
}

fn code(text: &str) -> &'static str {
    load_json(text).unwrap_err().code()
}

#[test]
fn reads_a_lockfile_shape_keeping_key_order() {
    assert_eq!(
        json("lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      b:\n        specifier: ^1.0.0\n        version: 1.0.0\n\npackages:\n\n  b@1.0.0:\n    resolution: {integrity: sha512-x}\n    hasBin: true\n    cpu: [x64, arm64]\n\n  '@a/z@2.0.0':\n    resolution: {integrity: sha512-y}\n"),
        r#"{"lockfileVersion":"9.0","importers":{".":{"dependencies":{"b":{"specifier":"^1.0.0","version":"1.0.0"}}}},"packages":{"b@1.0.0":{"resolution":{"integrity":"sha512-x"},"hasBin":true,"cpu":["x64","arm64"]},"@a/z@2.0.0":{"resolution":{"integrity":"sha512-y"}}}}"#
    );
}

#[test]
fn scalars_as_js_yaml_types_them() {
    assert_eq!(
        json("[~, null, NULL, '', true, False, 0, -0, -00, 0123, +12, 1.50, -0.0, 1., .5, 2.5e3, 1.0.0, 0x, 12_]"),
        r#"[null,null,null,"",true,false,0,0,-0,123,12,1.5,-0,1,0.5,2500,"1.0.0","0x","12_"]"#
    );
    // Keys are named as JS names them (`String(value)`).
    assert_eq!(
        json("{1.0: a, 2: b, true: c, ~: d, .inf: e, '3': f}"),
        r#"{"1":"a","2":"b","true":"c","null":"d","Infinity":"e","3":"f"}"#
    );
}

#[test]
fn forms_js_yaml_reads_otherwise_are_left_to_pnpm() {
    for text in [
        "a: 0x1F",
        "a: 1_000",
        "a: 0b10",
        "a: 0o7",
        "a: 1234567890123456",
        "a: .inf",
        "a: .NaN",
        "a: 2001-12-14",
        "2001-12-14: a",
        "a: !!str 1",
        "a: !custom x",
        "a: &x 1\n? *x\n: 2",
        "? [a]\n: 1",
        "__proto__: {}",
        "a: {'__proto__': 1}",
        "a: &a [*a]",
    ] {
        assert_eq!(code(text), "ERR_CAS_NATIVE_YAML_UNSUPPORTED", "{text}");
    }
}

#[test]
fn merge_keys_as_js_yaml_resolves_them() {
    // Own keys win wherever they stand; of several sources the first wins; a quoted `<<` is a key.
    assert_eq!(
        json("base: &b {x: 1, y: 2}\nother: &o {y: 3, z: 4}\nm: {x: 0, <<: [*b, *o], z: 5}\nq: {'<<': 1}\n"),
        r#"{"base":{"x":1,"y":2},"other":{"y":3,"z":4},"m":{"x":0,"y":2,"z":5},"q":{"<<":1}}"#
    );
    assert_eq!(code("a: {<<: 1}"), "ERR_CAS_NATIVE_YAML_UNSUPPORTED");
}

#[test]
fn js_yaml_refusals_are_syntax_errors() {
    // A key twice (but a merged key may be overridden once), several documents, a NUL, bad YAML.
    assert_eq!(code("a: 1\na: 2\n"), "ERR_CAS_NATIVE_YAML_SYNTAX");
    assert_eq!(code("'1': x\n1: y\n"), "ERR_CAS_NATIVE_YAML_SYNTAX");
    assert_eq!(
        code("b: &b {x: 1}\nm: {<<: *b, x: 2, x: 3}\n"),
        "ERR_CAS_NATIVE_YAML_SYNTAX"
    );
    assert_eq!(code("---\na: 1\n---\na: 2\n"), "ERR_CAS_NATIVE_YAML_SYNTAX");
    assert_eq!(code("a: \"x\u{1}\"\n"), "ERR_CAS_NATIVE_YAML_SYNTAX");
    let err = load_json("a: [1, 2\nb: c\n").unwrap_err();
    assert_eq!(err.code(), "ERR_CAS_NATIVE_YAML_SYNTAX");
    assert!(err.to_string().contains("line"), "{err}");
}

#[test]
fn no_document_is_none() {
    assert_eq!(load_json("").unwrap(), None);
    assert_eq!(load_json("# only a comment\n").unwrap(), None);
    assert_eq!(load_json("---\n").unwrap().as_deref(), Some("null"));
}

#[test]
fn aliases_are_shared_while_read_and_bounded_in_what_they_repeat() {
    assert_eq!(json("a: &x [1, 2]\nb: *x\n"), r#"{"a":[1,2],"b":[1,2]}"#);
    // Each level repeats the one before ten times: 10^9 values once expanded.
    let mut bomb = String::from("l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let prev = format!("*l{}", level - 1);
        bomb.push_str(&format!(
            "l{level}: &l{level} [{}]\n",
            [prev.as_str(); 10].join(", ")
        ));
    }
    assert_eq!(code(&bomb), "ERR_CAS_NATIVE_YAML_LIMIT");
    // Merge keys repeat values too.
    let mut merges = String::from("m0: &m0 {k0: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}\n");
    for level in 1..20_000 {
        merges.push_str(&format!(
            "m{level}: &m{level} {{<<: *m{}, k{level}: 1}}\n",
            level - 1
        ));
    }
    assert_eq!(code(&merges), "ERR_CAS_NATIVE_YAML_LIMIT");
}

#[test]
fn deep_nesting_is_refused_without_recursing() {
    for depth in [MAX_DEPTH + 1, 10_000, 100_000] {
        assert_eq!(
            code(&format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
            "ERR_CAS_NATIVE_YAML_LIMIT"
        );
        let block: String = (0..depth.min(1_000))
            .map(|i| format!("{}k:\n", " ".repeat(i)))
            .collect();
        assert_eq!(code(&block), "ERR_CAS_NATIVE_YAML_LIMIT");
    }
    // Through an alias: the aliased node's depth counts where it is used.
    let deep = format!("a: &a {}1{}\n", "[".repeat(60), "]".repeat(60));
    assert_eq!(
        code(&format!(
            "{deep}b: {}*a{}\n",
            "[".repeat(60),
            " ]".repeat(60)
        )),
        "ERR_CAS_NATIVE_YAML_LIMIT"
    );
    assert!(load_json(&format!(
        "{}{}",
        "[".repeat(MAX_DEPTH - 1),
        "]".repeat(MAX_DEPTH - 1)
    ))
    .is_ok());
}
