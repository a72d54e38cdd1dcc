//! Every WGSL shader parses and validates with naga (with the shared arithmetic and ChaCha20
//! prepended, as the host does at pipeline build), on any machine, GPU or not.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "tests"
)]

use std::fs;
use std::path::Path;

#[test]
fn every_shader_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let shared = format!(
        "{}\n{}",
        fs::read_to_string(root.join("shared/zq.wgsl")).unwrap(),
        fs::read_to_string(root.join("shared/chacha.wgsl")).unwrap()
    );
    let mut count = 0;
    for entry in fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        let source = format!("{shared}\n{}", fs::read_to_string(&path).unwrap());
        let module = naga::front::wgsl::parse_str(&source)
            .unwrap_or_else(|e| panic!("{}: {}", path.display(), e.emit_to_string(&source)));
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}: {e:?}", path.display()));
        count += 1;
    }
    assert!(count >= 3, "only {count} shaders found");
}

#[test]
fn a_broken_shader_is_caught() {
    let source = "fn f() -> u32 { return 1.5; }";
    let ok = naga::front::wgsl::parse_str(source).ok().and_then(|m| {
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::empty())
            .validate(&m)
            .ok()
    });
    assert!(ok.is_none());
}
