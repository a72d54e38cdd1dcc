//! The command line refuses what it cannot do with a message and a non-zero exit, before any
//! work: `wgfhe mnist` flag combinations that mean nothing (before it fetches data or generates
//! keys), and a trace file that cannot be created (an I/O error naming the file).

#![expect(clippy::expect_used, reason = "tests")]

use std::process::Command;

fn refused(args: &[&str], needle: &str) {
    let dir = std::env::temp_dir().join("wgfhe-cli-test-no-data");
    let out = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(args)
        .arg("--data")
        .arg(&dir)
        .env("WGFHE_BACKEND", "cpu")
        .output()
        .expect("the binary runs");
    assert!(!out.status.success(), "{args:?} was accepted");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(needle), "{args:?}: {err}");
    assert!(!dir.exists(), "{args:?} fetched data before refusing");
}

#[test]
fn meaningless_relu_flags_are_refused() {
    refused(&["mnist", "--model", "lr", "--relu", "digits"], "--model cnn only");
    refused(&["mnist", "--model", "lr", "--keep", "0.5"], "--model cnn only");
    refused(&["mnist", "--model", "cnn", "--keep", "0.5"], "--relu digits only");
    refused(&["mnist", "--model", "cnn", "--relu", "digits", "--fault-aware"], "--keep below 1");
    refused(&["mnist", "--model", "cnn", "--relu", "digits", "--keep", "0.3"], "must be 1, 0.75, 0.5 or 0.25");
    refused(&["mnist", "--model", "cnn", "--relu", "sigmoid"], "must be lut or digits");
}

#[test]
fn a_trace_that_cannot_be_created_is_an_io_error_naming_it() {
    let path = std::env::temp_dir().join(format!("wgfhe-cli-test-no-dir-{}", std::process::id())).join("trace.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(["bench", "--suite", "bxt", "--trace"])
        .arg(&path)
        .env("WGFHE_BACKEND", "cpu")
        .output()
        .expect("the binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("error: cannot create the trace file {}: ", path.display())), "{err}");
}
