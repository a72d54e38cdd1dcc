//! Faults and limits: a full queue, abandoned and damaged uploads, SIGKILL and SIGTERM, time
//! limits and body deadlines.

use super::common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use wgfhe::compress::{Bxt, Variant};

#[test]
fn full_queue_answers_429_with_retry_after() {
    let dir = workdir("queue");
    let srv = Server::start(&dir, &["--max-queue", "0"]);
    let r = call(&srv.addr, "POST", "/v1/keys", Some(TOKENS[0]), &[], &Client::new(T, TOKENS[0]).keys());
    assert_eq!((r.status, r.kind().as_str()), (429, "busy"));
    assert!(r.headers.to_ascii_lowercase().contains("retry-after: 1"), "{}", r.headers);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A queue filled by real requests: with one compute slot and a queue of one, a CNN batch
/// computing and another waiting (both seen in `/metrics` first), a third request is answered
/// 429 with `Retry-After`, and the two accepted ones succeed, their scores checked. The state
/// is read before the third is sent; should the first batch end in between (a stalled test
/// machine), the attempt is repeated, up to three times.
#[test]
fn a_queue_of_real_requests_answers_429_past_its_bound() {
    let dir = cnn_workdir("real-queue");
    let model = cnn_fixtures::small_model();
    let (alice, bob) = (CnnClient::new(&cnn_params(), &model, 1), CnnClient::new(&cnn_params(), &model, 1));
    let srv = Server::start(&dir, &["--max-concurrency", "1", "--max-queue", "1"]);
    let a = srv.addr.as_str();
    let (id_a, id_b) = (alice.upload(a, TOKENS[0]), bob.upload(a, TOKENS[1]));
    let want = model.scores(&cnn_fixtures::images(1).images()[0]);
    let wait_for = |name: &str, value: u64| {
        let start = Instant::now();
        while metric(a, name) != Some(value) {
            assert!(start.elapsed() < IO_TIMEOUT, "{name} never reached {value}");
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let mut refused = None;
    for _attempt in 0..3 {
        let third = std::thread::scope(|s| {
            let first = s.spawn(|| alice.scores(&alice.infer(a, TOKENS[0], &id_a)));
            wait_for("wgfhe_compute_in_flight", 1);
            let second = s.spawn(|| bob.scores(&bob.infer(a, TOKENS[1], &id_b)));
            wait_for("wgfhe_queue_depth", 1);
            let third = alice.infer(a, TOKENS[0], &id_a);
            assert_eq!(first.join().unwrap(), want);
            assert_eq!(second.join().unwrap(), want);
            third
        });
        if third.status == 429 {
            refused = Some(third);
            break;
        }
        // The slot freed before the third arrived: it was served, and checked.
        assert_eq!(alice.scores(&third), want);
    }
    let r = refused.expect("no request was refused past the queue bound in three attempts");
    assert_eq!(r.kind(), "busy");
    assert!(r.headers.to_ascii_lowercase().contains("retry-after: 1"), "{}", r.headers);
    assert_eq!(metric(a, "wgfhe_queue_depth"), Some(0));
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client that sends its headers and part of its body, then stalls, is answered 408
/// `body_timeout` at the body deadline; it holds nothing after, and the server goes on
/// serving.
#[test]
fn a_stalled_body_is_answered_408_at_the_deadline() {
    let dir = workdir("slow-body");
    let srv = Server::start(&dir, &["--body-timeout-s", "0.3"]);
    let alice = Client::new(T, TOKENS[0]);
    let head = format!(
        "POST /v1/keys HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {}\r\nContent-Length: 100000\r\n\r\n",
        TOKENS[0]
    );
    let mut s = TcpStream::connect(&srv.addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&[0u8; 10]).unwrap();
    let start = Instant::now();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let waited = start.elapsed();
    let r = parse(&buf);
    assert_eq!((r.status, r.kind().as_str()), (408, "body_timeout"));
    assert!(waited >= Duration::from_millis(250), "answered before the deadline: {waited:?}");
    let id = alice.upload(&srv.addr);
    alice.round_trip(&srv.addr, &id, 0);
    let m = String::from_utf8(call(&srv.addr, "GET", "/metrics", None, &[], b"").body).unwrap();
    assert!(m.contains("wgfhe_requests_total{route=\"/v1/keys\",status=\"408\"} 1"), "{m}");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn faults_disconnect_kill_restart_and_corruption() {
    let dir = workdir("faults");
    let srv = Server::start(&dir, &[]);
    let alice = Client::new(T, TOKENS[0]);
    let keys = alice.keys();
    // A client that sends half an upload and goes away.
    {
        let req = request("POST", "/v1/keys", &[("Authorization", &format!("Bearer {}", TOKENS[0]))], &keys);
        let mut s = TcpStream::connect(&srv.addr).unwrap();
        s.write_all(&req[..req.len() / 2]).unwrap();
    }
    // A client that leaves before reading its answer.
    {
        let req = request("POST", "/v1/keys", &[("Authorization", &format!("Bearer {}", TOKENS[0]))], &keys);
        let mut s = TcpStream::connect(&srv.addr).unwrap();
        s.write_all(&req).unwrap();
    }
    let id = alice.upload(&srv.addr);
    alice.round_trip(&srv.addr, &id, 0);

    // SIGKILL, restart on the same store: the same id still works.
    srv.kill();
    let srv = Server::start(&dir, &[]);
    alice.round_trip(&srv.addr, &id, 1);

    // A key file damaged on disk (read back after a restart, so not from memory): refused.
    srv.kill();
    let path = dir.join("store").join(format!("{id}.keys"));
    let mut data = std::fs::read(&path).unwrap();
    let at = data.len() - 100;
    data[at] ^= 0x01;
    std::fs::write(&path, &data).unwrap();
    let srv = Server::start(&dir, &[]);
    let r = alice.infer(&srv.addr, &id, &alice.encrypt(&images(2, 0)));
    assert_eq!((r.status, r.kind().as_str()), (500, "corrupt_key_set"));
    // A fresh upload is served as before.
    let id2 = alice.upload(&srv.addr);
    alice.round_trip(&srv.addr, &id2, 2);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_cleanly() {
    let dir = workdir("term");
    let mut srv = Server::start(&dir, &[]);
    let alice = Client::new(T, TOKENS[0]);
    let id = alice.upload(&srv.addr);
    alice.round_trip(&srv.addr, &id, 0);
    let st = Command::new("kill").arg("-TERM").arg(srv.child.id().to_string()).status().unwrap();
    assert!(st.success());
    srv.wait_clean_exit("the server did not stop on SIGTERM");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGKILL with inference requests in flight: one half uploaded, CNN batches computing and
/// queued behind it (one compute slot; the kill comes once `/metrics` shows a computation
/// running and another waiting). The half-uploaded request gets no answer; the server,
/// restarted on the same store, answers the same requests with the same key-set id, every
/// score checked.
#[test]
fn sigkill_during_inference_then_the_retry_succeeds() {
    const FULL: usize = 3;
    let dir = cnn_workdir("kill-in-flight");
    let model = cnn_fixtures::small_model();
    let client = CnnClient::new(&cnn_params(), &model, 1);
    let want = model.scores(&cnn_fixtures::images(1).images()[0]);
    let srv = Server::start(&dir, &["--max-concurrency", "1"]);
    let addr = srv.addr.clone();
    let id = client.upload(&addr, TOKENS[0]);
    let auth = format!("Bearer {}", TOKENS[0]);
    let req =
        request("POST", "/v1/infer/cnn", &[("Authorization", &auth), ("x-wgfhe-key-set", &id)], &frame(&client.inputs));
    let head = req.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let mut half = TcpStream::connect(&addr).unwrap();
    half.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    half.write_all(&req[..head + (req.len() - head) / 2]).unwrap();

    let replies: Vec<Vec<u8>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..FULL).map(|_| s.spawn(|| send_and_read(&addr, &req))).collect();
        let gauge = |m: &str, name: &str| -> u64 {
            m.lines().find_map(|l| l.strip_prefix(name)).unwrap().trim().parse().unwrap()
        };
        let start = Instant::now();
        loop {
            let m = String::from_utf8(call(&addr, "GET", "/metrics", None, &[], b"").body).unwrap();
            if gauge(&m, "wgfhe_compute_in_flight ") == 1 && gauge(&m, "wgfhe_queue_depth ") >= 1 {
                break;
            }
            assert!(start.elapsed() < IO_TIMEOUT, "no computation running with another queued: {m}");
            std::thread::sleep(Duration::from_millis(2));
        }
        srv.kill();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut rest = Vec::new();
    let _ = half.read_to_end(&mut rest);
    assert!(rest.is_empty(), "the half-uploaded request was answered: {}", String::from_utf8_lossy(&rest));
    // Requests answered before the kill are answered right; the others got nothing.
    let cut = replies.iter().filter(|r| r.is_empty() || !r.windows(4).any(|w| w == b"\r\n\r\n")).count();
    for r in replies.iter().filter(|r| r.windows(4).any(|w| w == b"\r\n\r\n")) {
        assert_eq!(client.scores(&parse(r)), want);
    }
    println!("killed with {cut} of {FULL} full requests unanswered (and the half-uploaded one)");

    let srv = Server::start(&dir, &["--max-concurrency", "1"]);
    for _ in 0..=FULL {
        assert_eq!(client.scores(&client.infer(&srv.addr, TOKENS[0], &id)), want);
    }
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGTERM while a request is being uploaded: the server stops accepting but finishes the
/// request it accepted (every score checked), then exits cleanly.
#[test]
fn sigterm_finishes_the_accepted_request() {
    let dir = workdir("term-in-flight");
    let mut srv = Server::start(&dir, &[]);
    let alice = Client::new(T, TOKENS[0]);
    let id = alice.upload(&srv.addr);
    let imgs = images(5, 3);
    let auth = format!("Bearer {}", alice.token);
    let req = request(
        "POST",
        "/v1/infer/lr",
        &[("Authorization", &auth), ("x-wgfhe-key-set", &id)],
        &frame(&alice.encrypt(&imgs)),
    );
    let mut s = TcpStream::connect(&srv.addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    // The headers and half the body, then the signal, then the rest.
    let half = req.len() - (req.len() - req.windows(4).position(|w| w == b"\r\n\r\n").unwrap()) / 2;
    s.write_all(&req[..half]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let st = Command::new("kill").arg("-TERM").arg(srv.child.id().to_string()).status().unwrap();
    assert!(st.success());
    std::thread::sleep(Duration::from_millis(300));
    assert!(srv.child.try_wait().unwrap().is_none(), "the server exited with a request in flight");
    s.write_all(&req[half..]).unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).unwrap();
    let r = parse(&buf);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let out = unframe(&r.body);
    let bxt = Bxt::new(&alice.bgv, Variant::Cso);
    let got =
        alice.bgv.encoder().decode_signed(&bxt.decrypt(&alice.sk, &bxt.from_bytes(&out[0]).unwrap()).unwrap()).unwrap();
    for (k, img) in imgs.iter().enumerate() {
        assert_eq!(got[k], model().score(img).unwrap(), "image {k}");
    }
    srv.wait_clean_exit("the server did not stop after its last request");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A request past `--request-timeout-s` is answered 503 `timeout`: the keys and a first CNN
/// batch go to a server with the default limit (the batch's time printed), then the same store
/// is served with a 20 ms limit, far below a batch; the timed-out computation finishes in the
/// background, frees its slot, and the server goes on serving.
#[test]
fn a_request_past_its_time_limit_gets_503() {
    let dir = cnn_workdir("timeout");
    let client = CnnClient::new(&cnn_params(), &cnn_fixtures::small_model(), 1);
    let srv = Server::start(&dir, &[]);
    let id = client.upload(&srv.addr, TOKENS[0]);
    let start = Instant::now();
    assert_eq!(client.infer(&srv.addr, TOKENS[0], &id).status, 200);
    println!("one CNN batch under the default limit: {:.0} ms", start.elapsed().as_secs_f64() * 1e3);
    srv.kill();

    let srv = Server::start(&dir, &["--request-timeout-s", "0.02", "--max-concurrency", "1"]);
    let r = client.infer(&srv.addr, TOKENS[0], &id);
    assert_eq!((r.status, r.kind().as_str()), (503, "timeout"));
    let metrics = || String::from_utf8(call(&srv.addr, "GET", "/metrics", None, &[], b"").body).unwrap();
    let m = metrics();
    assert!(m.contains("wgfhe_requests_total{route=\"/v1/infer/{model}\",status=\"503\"} 1"), "{m}");
    let start = Instant::now();
    while !metrics().contains("wgfhe_compute_in_flight 0") {
        assert!(start.elapsed() < IO_TIMEOUT, "the timed-out computation never ended");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(call(&srv.addr, "GET", "/healthz", None, &[], b"").status, 200);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
