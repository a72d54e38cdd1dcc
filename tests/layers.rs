//! The layer order of `src/`, checked on the sources: a top-level module may use modules of its
//! own layer's past (lower layers) but never one above it, and two modules of one layer never
//! use each other. This is what keeps the crate free of import cycles (the ring context sits
//! below the backends, the wire header below the parameters), so a change that reintroduces one
//! fails here instead of surfacing as tangled code later.
//!
//! Only code counts: `crate::` paths inside comments (doc links to higher layers, which rustdoc
//! resolves without an import) are ignored.

#![expect(clippy::panic, reason = "a test helper reports unreadable sources by panicking")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers of `src/`, lowest first. Modules in one inner slice are peers.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["math"],
    &["serial"],
    &["params"],
    &["ring"],
    &["backend"],
    &["testing"],
    &["poly"],
    &["rlwe"],
    &["eval"],
    &["bgv", "ckks", "gates"],
    &["compress"],
    &["compare"],
];
// The MNIST application and the bench suites are crates of their own above the library
// (`mnist/`, `benches/`): Cargo keeps them out of it.

fn layer_of(module: &str) -> Option<usize> {
    // `crate::Error` and `crate::Result` are the root's re-exports of the error module.
    let module = if module == "Error" || module == "Result" { "error" } else { module };
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Modules of a binary whose root is `src/main.rs` (declared there with `mod name;`): they are
/// not part of the library's layers.
fn binary_modules(src: &Path) -> BTreeSet<String> {
    let Ok(main) = std::fs::read_to_string(src.join("main.rs")) else { return BTreeSet::new() };
    main.lines()
        .filter_map(|l| l.trim().strip_prefix("mod ").and_then(|r| r.strip_suffix(';')).map(str::to_owned))
        .collect()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("cannot read an entry of {}: {e}", dir.display())).path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for the crate root and binaries).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "main.rs" | "bin" => None,
        f => Some(f.trim_end_matches(".rs").to_owned()),
    }
}

/// The top-level modules named by `crate::` paths in the code (not the comments) of `text`.
fn used_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // `crate::{a::b, c}`: every first segment of the group.
                let inner = group.split('}').next().unwrap_or("");
                for item in inner.split(',') {
                    let name: String =
                        item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() && name != "self" {
                        out.insert(name);
                    }
                }
            } else {
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

#[test]
fn the_parser_finds_code_paths_and_skips_comments() {
    let text = "use crate::ring::RingContext;\nuse crate::{math::zq, error::Result};\n\
                /// see [`crate::bgv::Bgv`]\nlet x = crate::poly::f(); // crate::ckks\n";
    let found: Vec<String> = used_modules(text).into_iter().collect();
    assert_eq!(found, ["error", "math", "poly", "ring"]);
}

#[test]
fn no_module_uses_a_module_above_it_or_a_peer() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let binary = binary_modules(&src);
    let mut modules = BTreeSet::new();
    let mut violations = Vec::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else { continue };
        if binary.contains(&module) {
            continue;
        }
        modules.insert(module.clone());
        let Some(own) = layer_of(&module) else {
            violations.push(format!("{}: module `{module}` is not in the layer list", file.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        for used in used_modules(&text) {
            if used == module {
                continue;
            }
            match layer_of(&used) {
                Some(l) if l < own => {}
                Some(l) if l == own => {
                    violations.push(format!("{}: `{module}` uses its peer `{used}`", file.display()))
                }
                Some(_) => violations.push(format!("{}: `{module}` uses `{used}`, a layer above it", file.display())),
                None => violations.push(format!("{}: `{module}` uses `{used}`, not in the layer list", file.display())),
            }
        }
    }
    assert!(violations.is_empty(), "layer violations:\n{}", violations.join("\n"));
    // The list names only modules that exist, so it cannot silently go stale.
    for name in LAYERS.iter().flat_map(|l| l.iter()) {
        assert!(modules.contains(*name), "layer list names `{name}`, which is not a module of src/");
    }
}
