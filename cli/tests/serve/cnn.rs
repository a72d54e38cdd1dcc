//! The CNN served: the command-line client, the prepared plaintexts built at start, the key
//! cache under its device budget.

use super::common::*;

use wgfhe::params::{insecure_test_bgv, TestRing};

/// `wgfhe infer --remote --model cnn`: the small CNN on the insecure CNN test ring, served and
/// asked for by the command-line client, every score checked against the published model; the
/// digit path, whose depth exhausts this ring's noise budget, is planned at start and not
/// served; on a ring with more levels it is served and checked the same way.
#[test]
fn cli_remote_cnn_checks_every_score() {
    let dir = workdir("cnn");
    std::fs::remove_file(dir.join("lr.json")).unwrap();
    let ring = TestRing { log_n: 10, q_primes: 24, p_primes: 6, dnum: 4 };
    std::fs::write(dir.join("params.bin"), insecure_test_bgv(ring, 65537).unwrap().to_bytes()).unwrap();
    std::fs::write(dir.join("cnn.json"), cnn_fixtures::small_model().to_json().unwrap()).unwrap();
    let srv = Server::start(&dir, &[]);
    let info: serde_json::Value =
        serde_json::from_slice(&call(&srv.addr, "GET", "/v1/info", None, &[], b"").body).unwrap();
    let names: Vec<&str> = info["models"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cnn"]);
    let remote = |model: &str| remote_infer(&srv.addr, &dir, &["--model", model, "--images", "6"]);
    let out = remote("cnn");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("6 images, 2 batches"), "{stdout}");
    assert!(stdout.contains("checked 60 scores against the plaintext model: 0 differ"), "{stdout}");
    let out = remote("cnn-digits");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not serve this model"));
    srv.kill();

    std::fs::write(dir.join("params.bin"), cnn_fixtures::digit_params().to_bytes()).unwrap();
    let srv = Server::start(&dir, &[]);
    let out = remote_infer(&srv.addr, &dir, &["--model", "cnn-digits", "--images", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("checked 30 scores against the plaintext model: 0 differ"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A device budget of one parsed key set: each CNN request holds its client's keys parsed
/// (`wgfhe_resident_key_bytes` is their resident size, computed here from the same bytes), the
/// second client's evicts the first's from the device, never from the disk: the first is read
/// back (checksum checked), parsed again and served the same scores. A deleted key set leaves
/// the device too.
#[test]
fn lru_eviction_leaves_the_device_not_the_disk() {
    use wgfhe::rlwe::{EvaluationKeys, KeyForm};
    let dir = cnn_workdir("lru");
    let model = cnn_fixtures::small_model();
    let (alice, bob) = (CnnClient::new(&cnn_params(), &model, 1), CnnClient::new(&cnn_params(), &model, 1));
    let be = alice.bgv.backend();
    let size = EvaluationKeys::from_bytes_as(be, &alice.keys, KeyForm::Expanded).unwrap().resident_bytes(be);
    let budget = (size + size / 2).to_string();
    let srv = Server::start(&dir, &["--device-budget-bytes", &budget]);
    let a = &srv.addr;
    let resident = || {
        let m = String::from_utf8(call(a, "GET", "/metrics", None, &[], b"").body).unwrap();
        let get = |name: &str| m.lines().find_map(|l| l.strip_prefix(name)).unwrap().trim().to_owned();
        (get("wgfhe_resident_key_sets "), get("wgfhe_resident_key_bytes "))
    };
    let id_a = alice.upload(a, TOKENS[0]);
    let id_b = bob.upload(a, TOKENS[1]);
    // Uploads are checked and stored, not held parsed.
    assert_eq!(resident(), ("0".into(), "0".into()));
    let want = model.scores(&cnn_fixtures::images(1).images()[0]);
    assert_eq!(alice.scores(&alice.infer(a, TOKENS[0], &id_a)), want);
    assert_eq!(resident(), ("1".into(), size.to_string()));
    assert_eq!(bob.scores(&bob.infer(a, TOKENS[1], &id_b)), want);
    assert_eq!(resident(), ("1".into(), size.to_string()));
    assert_eq!(std::fs::read_dir(dir.join("store")).unwrap().count(), 2);
    assert_eq!(alice.scores(&alice.infer(a, TOKENS[0], &id_a)), want);
    assert_eq!(resident(), ("1".into(), size.to_string()));
    // Another token cannot use a key set held parsed.
    assert_eq!(bob.infer(a, TOKENS[1], &id_a).status, 403);
    let del = call(a, "DELETE", &format!("/v1/keys/{id_a}"), Some(TOKENS[0]), &[], b"");
    assert_eq!(del.status, 204);
    assert_eq!(resident(), ("0".into(), "0".into()));
    assert_eq!(alice.infer(a, TOKENS[0], &id_a).status, 404);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CNN's plaintexts are prepared at start (the server runs the model once before it
/// listens) and shared by concurrent requests: before any request `/metrics` counts them; after
/// three clients' requests at once, twice each, every score checked, no request had to prepare
/// one.
#[test]
fn prepared_plaintexts_are_built_at_start_and_shared() {
    let dir = cnn_workdir("prepared");
    let model = cnn_fixtures::small_model();
    let clients: Vec<CnnClient> = (0..3).map(|_| CnnClient::new(&cnn_params(), &model, 1)).collect();
    let srv = Server::start(&dir, &["--max-concurrency", "3"]);
    let a = srv.addr.as_str();
    assert!(metric(a, "wgfhe_prepared_plaintexts").unwrap() > 0);
    assert!(metric(a, "wgfhe_prepared_plaintext_bytes").unwrap() > 0);
    assert_eq!(metric(a, "wgfhe_plaintexts_prepared_on_request_total"), Some(0));
    let ids: Vec<String> = clients.iter().enumerate().map(|(i, c)| c.upload(a, TOKENS[i % 2])).collect();
    let want = model.scores(&cnn_fixtures::images(1).images()[0]);
    std::thread::scope(|s| {
        for (i, (c, id)) in clients.iter().zip(&ids).enumerate() {
            let want = &want;
            s.spawn(move || {
                for _ in 0..2 {
                    assert_eq!(&c.scores(&c.infer(a, TOKENS[i % 2], id)), want);
                }
            });
        }
    });
    assert_eq!(metric(a, "wgfhe_plaintexts_prepared_on_request_total"), Some(0));
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
