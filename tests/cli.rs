//! The `wgfhe mnist` command refuses flag combinations that mean nothing, with a message and a
//! non-zero exit, before it fetches data or generates keys.

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
