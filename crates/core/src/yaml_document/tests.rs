use super::*;
use crate::error_code::ErrorCode;

#[test]
fn reads_a_lockfile_shape_keeping_key_order() {
    let doc = parse(
        "lockfileVersion: '9.0'\n\nimporters:\n\n  .:\n    dependencies:\n      b:\n        specifier: ^1.0.0\n        version: 1.0.0\n\npackages:\n\n  b@1.0.0:\n    resolution: {integrity: sha512-x}\n    hasBin: true\n    cpu: [x64, arm64]\n\n  '@a/z@2.0.0':\n    resolution: {integrity: sha512-y}\n",
    )
    .unwrap()
    .remove(0);
    assert_eq!(doc["lockfileVersion"].as_str(), Some("9.0"));
    assert_eq!(
        doc["importers"]["."]["dependencies"]["b"]["version"].as_str(),
        Some("1.0.0")
    );
    let packages = doc["packages"].as_hash().unwrap();
    let keys: Vec<&str> = packages.keys().filter_map(Yaml::as_str).collect();
    assert_eq!(keys, ["b@1.0.0", "@a/z@2.0.0"]);
    assert_eq!(doc["packages"]["b@1.0.0"]["hasBin"].as_bool(), Some(true));
    assert_eq!(
        doc["packages"]["b@1.0.0"]["cpu"].as_vec().map(Vec::len),
        Some(2)
    );
}

#[test]
fn reads_every_document_in_order() {
    let docs = parse("---\nconfigDependencies: {}\n---\nlockfileVersion: '9.0'\n").unwrap();
    assert_eq!(docs.len(), 2);
    assert!(docs[0]["configDependencies"].as_hash().is_some());
    assert_eq!(docs[1]["lockfileVersion"].as_str(), Some("9.0"));
}

#[test]
fn an_empty_text_has_no_document_and_bad_yaml_is_an_error_with_its_position() {
    assert!(parse("").unwrap().is_empty());
    let err = parse("a: [1, 2\nb: c\n").unwrap_err();
    assert_eq!(err.code(), "ERR_CAS_NATIVE_YAML_SYNTAX");
    assert!(err.to_string().contains("line"), "{err}");
}
