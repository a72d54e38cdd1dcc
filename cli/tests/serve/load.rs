//! Load: many concurrent clients, each with its own keys, every answer checked; throughput,
//! latency and memory (the server's RSS; on the GPU the device bytes its buffers hold) reported,
//! and memory checked flat: what the server holds after many requests is what it held after
//! the first round, within an allocator's slack.

use super::common::*;
use std::time::Instant;

use wgfhe::compress::{Bxt, Variant};

/// `f(i, item)` for every item at once, one thread each: the results in item order.
fn concurrently<C: Sync, T: Send>(items: &[C], f: impl Fn(usize, &C) -> T + Sync) -> Vec<T> {
    std::thread::scope(|s| {
        let hs: Vec<_> = items
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let f = &f;
                s.spawn(move || f(i, c))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The server's memory at one point of a run.
#[derive(Debug, Clone, Copy)]
struct Sample {
    rss_kib: u64,
    /// `wgfhe_device_buffer_bytes`; `None` on the CPU backend, which has no device.
    device_bytes: Option<u64>,
}

impl Sample {
    fn of(srv: &Server) -> Self {
        Self { rss_kib: srv.rss_kib(), device_bytes: metric(&srv.addr, "wgfhe_device_buffer_bytes") }
    }

    fn show(self) -> String {
        match self.device_bytes {
            Some(b) => format!("RSS {} KiB, device {} KiB", self.rss_kib, b / 1024),
            None => format!("RSS {} KiB", self.rss_kib),
        }
    }
}

/// Flat memory: the end holds at most half as much again as the warm point (the first round
/// done: pipelines, pools and caches filled), plus 16 MiB for the allocator's retained pages
/// and the pool's size classes. A leak of one request's body per request (kilobytes to
/// megabytes here, hundreds of requests) exceeds it.
fn assert_flat(what: &str, warm: Sample, end: Sample) {
    let slack = |warm: u64, unit: u64| warm / 2 + (16 << 20) / unit;
    assert!(end.rss_kib <= warm.rss_kib + slack(warm.rss_kib, 1024), "{what}: RSS grew: {warm:?} -> {end:?}");
    if let (Some(w), Some(e)) = (warm.device_bytes, end.device_bytes) {
        assert!(w > 0, "{what}: no device bytes counted on the GPU");
        assert!(e <= w + slack(w, 1), "{what}: device bytes grew: {warm:?} -> {end:?}");
    }
}

/// One request of an LR client: salted images, every score checked against the plaintext
/// model; its latency (the HTTP exchange alone).
fn lr_request(c: &Client, addr: &str, id: &str, salt: usize) -> f64 {
    let imgs = images(9, salt);
    let cts = c.encrypt(&imgs);
    let t0 = Instant::now();
    let r = c.infer(addr, id, &cts);
    let secs = t0.elapsed().as_secs_f64();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let bxt = Bxt::new(&c.bgv, Variant::Cso);
    let ct = bxt.from_bytes(&unframe(&r.body)[0]).unwrap();
    let got = c.bgv.encoder().decode_signed(&bxt.decrypt(&c.sk, &ct).unwrap()).unwrap();
    let m = model();
    for (s, img) in imgs.iter().enumerate() {
        assert_eq!(got[s], m.score(img).unwrap(), "image {s}");
    }
    secs
}

/// `clients` LR clients with their own keys on `backend`, `rounds` rounds of one request each,
/// all clients at once in a round: round 0 warms, the rest are timed. Returns the report line.
fn lr_load(backend: &str, clients: usize, rounds: usize) -> String {
    let dir = workdir(&format!("load-{backend}"));
    let srv = Server::start_on(&dir, backend, &["--max-concurrency", "2", "--max-queue", "64"]);
    let start = Sample::of(&srv);
    let addr = srv.addr.clone();
    let info: serde_json::Value = serde_json::from_slice(&call(&addr, "GET", "/v1/info", None, &[], b"").body).unwrap();
    assert_eq!(info["backend"], backend);
    match backend {
        "gpu" => assert!(!info["device"]["name"].as_str().unwrap().is_empty(), "{info}"),
        _ => assert!(info["device"].is_null(), "{info}"),
    }
    let cs: Vec<Client> = (0..clients).map(|i| Client::new(T, TOKENS[i % 2])).collect();
    let ids: Vec<String> = concurrently(&cs, |_, c| c.upload(&addr));
    let round = |r: usize| concurrently(&cs, |i, c| lr_request(c, &addr, &ids[i], i * rounds + r));
    let pipelines = metric(&addr, "wgfhe_device_pipelines_built_total");
    round(0);
    let warm = Sample::of(&srv);
    let (mut lat, mut mid) = (Vec::new(), warm);
    let t0 = Instant::now();
    for r in 1..rounds {
        lat.extend(round(r));
        if r == rounds / 2 {
            mid = Sample::of(&srv);
        }
    }
    let wall = t0.elapsed().as_secs_f64();
    let end = Sample::of(&srv);
    lat.sort_by(f64::total_cmp);
    assert_eq!(lat.len(), clients * (rounds - 1));
    assert_eq!(metric(&addr, "wgfhe_compute_in_flight"), Some(0));
    let text = String::from_utf8(call(&addr, "GET", "/metrics", None, &[], b"").body).unwrap();
    let served = format!("wgfhe_requests_total{{route=\"/v1/infer/{{model}}\",status=\"200\"}} {}", clients * rounds);
    assert!(text.contains(&served), "{text}");
    assert!(!text.contains("status=\"4") && !text.contains("status=\"5"), "{text}");
    assert_flat(&format!("LR on {backend}"), warm, end);
    // The pipelines were built at start: the requests compiled none.
    match backend {
        "gpu" => {
            assert!(pipelines.unwrap() > 0);
            assert_eq!(metric(&addr, "wgfhe_device_pipelines_built_total"), pipelines);
        }
        _ => assert_eq!(pipelines, None),
    }
    let _ = std::fs::remove_dir_all(&dir);
    format!(
        "load ({backend}): {clients} clients x {} timed requests (+1 warm-up each), 0 errors, {:.1} req/s, p50 {:.1} ms, p99 {:.1} ms; start {}; warm {}; middle {}; end {}",
        rounds - 1,
        lat.len() as f64 / wall,
        percentile(&lat, 0.5) * 1e3,
        percentile(&lat, 0.99) * 1e3,
        start.show(),
        warm.show(),
        mid.show(),
        end.show(),
    )
}

/// 32 concurrent LR clients, each with its own keys, ten requests each on the CPU backend: no
/// errors, every score checked, memory flat. Throughput and latency are printed, not asserted
/// (they depend on the machine).
#[test]
fn load_32_clients() {
    println!("{}", lr_load("cpu", 32, 11));
}

/// The same load on the GPU backend (lavapipe in CI), its device bytes flat too.
#[test]
fn load_32_clients_on_the_gpu() {
    if !gpu_required() {
        eprintln!("skipped: WGFHE_REQUIRE_GPU is not 1, so no adapter is promised");
        return;
    }
    println!("{}", lr_load("gpu", 32, 5));
}

/// 32 concurrent CNN clients, each with its own rotation keys, two requests each, under a key
/// budget of four parsed key sets (so that requests read key sets back from the store while
/// others compute): every score checked, no request prepares a plaintext, memory flat.
#[test]
fn load_32_cnn_clients() {
    const CLIENTS: usize = 32;
    let dir = cnn_workdir("load-cnn");
    let model = cnn_fixtures::small_model();
    let t0 = Instant::now();
    let cs: Vec<CnnClient> = (0..CLIENTS).map(|_| CnnClient::new(&cnn_params(), &model, 1)).collect();
    let keygen = t0.elapsed().as_secs_f64();
    let be = cs[0].bgv.backend();
    let size = wgfhe::rlwe::EvaluationKeys::from_bytes_as(be, &cs[0].keys, wgfhe::rlwe::KeyForm::Expanded)
        .unwrap()
        .resident_bytes(be);
    let budget = (4 * size).to_string();
    let srv = Server::start(&dir, &["--max-concurrency", "2", "--max-queue", "64", "--device-budget-bytes", &budget]);
    let addr = srv.addr.clone();
    let ids: Vec<String> = cs.iter().enumerate().map(|(i, c)| c.upload(&addr, TOKENS[i % 2])).collect();
    let want = model.scores(&cnn_fixtures::images(1).images()[0]);
    let round = || {
        concurrently(&cs, |i, c| {
            let t = Instant::now();
            let r = c.infer(&addr, TOKENS[i % 2], &ids[i]);
            let secs = t.elapsed().as_secs_f64();
            assert_eq!(c.scores(&r), want);
            secs
        })
    };
    round();
    let warm = Sample::of(&srv);
    let t1 = Instant::now();
    let mut lat = round();
    let wall = t1.elapsed().as_secs_f64();
    let end = Sample::of(&srv);
    lat.sort_by(f64::total_cmp);
    assert!(metric(&addr, "wgfhe_resident_key_bytes").unwrap() <= 4 * size);
    assert_eq!(metric(&addr, "wgfhe_plaintexts_prepared_on_request_total"), Some(0));
    let text = String::from_utf8(call(&addr, "GET", "/metrics", None, &[], b"").body).unwrap();
    assert!(!text.contains("status=\"4") && !text.contains("status=\"5"), "{text}");
    assert_flat("CNN", warm, end);
    println!(
        "load (cnn, cpu): {CLIENTS} clients x 1 timed request (+1 warm-up each), 0 errors, {:.2} req/s, p50 {:.0} ms, p99 {:.0} ms; keys {:.1} MB a client (made in {keygen:.1} s for all), budget 4 key sets; warm {}; end {}",
        lat.len() as f64 / wall,
        percentile(&lat, 0.5) * 1e3,
        percentile(&lat, 0.99) * 1e3,
        cs[0].keys.len() as f64 / 1e6,
        warm.show(),
        end.show(),
    );
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
