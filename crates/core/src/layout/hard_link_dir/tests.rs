use std::fs;

use super::*;
use crate::test_support::names;

#[test]
fn hard_link_dir_skips_node_modules_and_fills_destinations_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let src = root.join("src");
    fs::create_dir_all(src.join("lib/node_modules/x")).unwrap();
    fs::create_dir_all(src.join("node_modules/y")).unwrap();
    fs::write(src.join("package.json"), "{}").unwrap();
    fs::write(src.join("lib/a.js"), "a").unwrap();
    let d1 = root.join("d1");
    fs::create_dir_all(d1.join("stale")).unwrap();
    let d2 = root.join("deep/d2");
    fs::create_dir_all(root.join("deep")).unwrap();
    let stats = Stats::default();
    hard_link_dir(&src, &[d1.clone(), d2.clone(), src.clone()], &stats).unwrap();
    // Filled in place: what the destination had and the source has not stays.
    assert_eq!(names(&d1), ["lib", "package.json", "stale"]);
    assert_eq!(names(&d2), ["lib", "package.json"]);
    for d in [&d1, &d2] {
        assert_eq!(names(&d.join("lib")), ["a.js"]);
        let id = |p: PathBuf| platform::file_id(&p, &fs::metadata(&p).unwrap()).unwrap();
        assert_eq!(id(d.join("lib/a.js")), id(src.join("lib/a.js")));
    }
    assert_eq!(names(root), ["d1", "deep", "src"]);
    // A missing source still creates the destinations (with a warning).
    hard_link_dir(&root.join("nope"), &[root.join("d3")], &stats).unwrap();
    assert!(root.join("d3").is_dir());
    // An empty source: empty destinations.
    fs::create_dir(root.join("empty")).unwrap();
    hard_link_dir(&root.join("empty"), &[root.join("d4")], &stats).unwrap();
    assert_eq!(names(&root.join("d4")), Vec::<String>::new());
    // A changed file is replaced; a directory where the source has a file is removed first.
    fs::write(src.join("lib/a.js"), "a2").unwrap();
    fs::remove_file(d1.join("package.json")).unwrap();
    fs::create_dir(d1.join("package.json")).unwrap();
    fs::remove_file(d2.join("lib/a.js")).unwrap();
    fs::write(d2.join("lib/a.js"), "old").unwrap();
    hard_link_dir(&src, &[d1.clone(), d2.clone()], &stats).unwrap();
    assert!(d1.join("package.json").is_file());
    assert_eq!(fs::read(d2.join("lib/a.js")).unwrap(), b"a2");
    assert_eq!(names(&d2.join("lib")), ["a.js"]);
}
