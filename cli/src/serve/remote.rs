//! `wgfhe infer --remote URL`: the client side of `wgfhe serve`. Makes a secret key here,
//! uploads only the evaluation keys, encrypts images, asks the server for the scores, decrypts
//! them, and with `--check` compares every score with the plaintext model.
//!
//! The images are synthetic (LR: seeded uniform pixels below `2^pixel_bits`; CNN: seeded
//! 28x28 images, a third of the pixels inked): the point is the round trip, and the check is
//! exact either way.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;
use wgfhe::rlwe::KeyRequest;

use clap::Args;
use rand::{Rng, SeedableRng};
use wgfhe::backend::CpuBackend;
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant};
use wgfhe::params::Parameters;
use wgfhe::rlwe::SecretKey;
use wgfhe::Error;
use wgfhe_mnist::cnn::QuantCnn;
use wgfhe_mnist::cnn_infer::ReluPath;
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::mnist::Image;
use wgfhe_mnist::split::{cnn_client_columns, cnn_scores, lr_client_columns};

use super::wire;

/// `wgfhe infer` options.
#[derive(Debug, Args)]
pub(crate) struct InferArgs {
    /// The server, `http://HOST:PORT` (plain HTTP; put TLS in a local proxy).
    #[arg(long)]
    remote: String,
    /// Model to ask for: `lr`, `cnn` (ReLU tables) or `cnn-digits` (digit ReLU), as the
    /// server's `/v1/info` lists them.
    #[arg(long, default_value = "lr")]
    model: String,
    /// File holding the bearer token (first line).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Number of images.
    #[arg(long, default_value_t = 16)]
    images: usize,
    /// Compare every decrypted score with the plaintext model (exit 1 on any difference).
    #[arg(long)]
    check: bool,
    /// Accept the server's parameter set even if it is an insecure test set.
    #[arg(long)]
    insecure_test_params: bool,
}

fn fail(reason: &'static str) -> Error {
    Error::InvalidField { field: "remote", reason }
}

fn io(e: &std::io::Error) -> Error {
    Error::Io { operation: "talk to the server", path: None, kind: e.kind(), reason: e.to_string() }
}

/// One HTTP/1.1 request (`Connection: close`): status and body.
fn http(
    host: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    extra: &[(&str, &str)],
    body: &[u8],
) -> wgfhe::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(host).map_err(|e| io(&e))?;
    let limit = Some(Duration::from_secs(600));
    s.set_read_timeout(limit).map_err(|e| io(&e))?;
    s.set_write_timeout(limit).map_err(|e| io(&e))?;
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).map_err(|e| io(&e))?;
    s.write_all(body).map_err(|e| io(&e))?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| io(&e))?;
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").ok_or(fail("reply without a head"))?;
    let (h, rest) = buf.split_at(end);
    let text = String::from_utf8_lossy(h).to_ascii_lowercase();
    if text.contains("transfer-encoding: chunked") {
        return Err(fail("chunked replies are not read by this client"));
    }
    let status = text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or(fail("reply without a status"))?;
    Ok((status, rest.get(4..).unwrap_or_default().to_vec()))
}

fn ok(what: &str, (status, body): (u16, Vec<u8>), want: u16) -> wgfhe::Result<Vec<u8>> {
    if status == want {
        return Ok(body);
    }
    eprintln!("{what}: HTTP {status}: {}", String::from_utf8_lossy(&body));
    Err(fail("the server refused a request (its answer is above)"))
}

/// Runs the round trip.
pub(crate) fn run(args: &InferArgs) -> wgfhe::Result<()> {
    let host =
        args.remote.strip_prefix("http://").ok_or(fail("--remote must start with http://"))?.trim_end_matches('/');
    if !["lr", "cnn", "cnn-digits"].contains(&args.model.as_str()) {
        return Err(fail("--model must be lr, cnn or cnn-digits"));
    }
    let token = match &args.token_file {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| io(&e))?;
            Some(text.lines().next().map(str::trim).unwrap_or_default().to_owned())
        }
        None => None,
    };
    let token = token.as_deref();
    let raw = ok("GET /v1/params", http(host, "GET", "/v1/params", None, &[], b"")?, 200)?;
    let params = if args.insecure_test_params {
        Parameters::from_bytes_insecure_for_tests(&raw)
    } else {
        Parameters::from_bytes(&raw)
    }?;
    if args.model != "lr" {
        return run_cnn(args, host, token, &params);
    }
    let text = ok("GET /v1/models/lr", http(host, "GET", "/v1/models/lr", None, &[], b"")?, 200)?;
    let model = QuantLr::from_json(&String::from_utf8_lossy(&text))?;
    let bgv = Bgv::cpu(&params)?;
    let sk = bgv.gen_secret_key()?;
    let id = upload(host, token, &bgv, &sk, &[])?;

    let dim = model.weights().len();
    let top = 1u16 << model.pixel_bits().min(8);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(35);
    let images: Vec<Vec<u8>> =
        (0..args.images).map(|_| (0..dim).map(|_| rng.random_range(0..top) as u8).collect()).collect();
    let slots = bgv.encoder().slots().max(1);
    let bxt = Bxt::new(&bgv, Variant::Cso);
    let (mut checked, mut wrong) = (0usize, 0usize);
    let start = std::time::Instant::now();
    for batch in images.chunks(slots) {
        let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
        let cts = lr_client_columns(&refs, dim, slots)?
            .iter()
            .map(|c| bxt.to_bytes(&bxt.encrypt(&sk, &bgv.encoder().encode(c)?)?))
            .collect::<wgfhe::Result<Vec<_>>>()?;
        let body = wire::encode(&cts);
        let out = ok(
            "POST /v1/infer/lr",
            http(host, "POST", "/v1/infer/lr", token, &[("x-wgfhe-key-set", &id)], &body)?,
            200,
        )?;
        let objects = wire::decode(&out, 1).map_err(|_| fail("the answer is not a frame"))?;
        let score = objects.first().ok_or(fail("the answer holds no ciphertext"))?;
        let got = bgv.encoder().decode_signed(&bxt.decrypt(&sk, &bxt.from_bytes(score)?)?)?;
        for (img, g) in batch.iter().zip(&got) {
            if args.check {
                checked += 1;
                if model.score(img)? != *g {
                    wrong += 1;
                }
            }
        }
    }
    finish(host, token, &id, images.len(), images.len().div_ceil(slots), start, args.check.then_some((checked, wrong)))
}

/// Deletes the key set and prints the summary (and the check's verdict: an error if any differ).
fn finish(
    host: &str,
    token: Option<&str>,
    id: &str,
    images: usize,
    batches: usize,
    start: std::time::Instant,
    check: Option<(usize, usize)>,
) -> wgfhe::Result<()> {
    let _ = http(host, "DELETE", &format!("/v1/keys/{id}"), token, &[], b"");
    println!("{images} images, {batches} batches in {:.2} s", start.elapsed().as_secs_f64());
    if let Some((checked, wrong)) = check {
        println!("checked {checked} scores against the plaintext model: {wrong} differ");
        if wrong > 0 {
            return Err(fail("decrypted scores differ from the plaintext model"));
        }
    }
    Ok(())
}

/// Uploads the keys (`rotations` besides relinearisation): the key set's id.
fn upload(
    host: &str,
    token: Option<&str>,
    bgv: &Bgv<CpuBackend>,
    sk: &SecretKey<CpuBackend>,
    rotations: &[i64],
) -> wgfhe::Result<String> {
    let keys = bgv.gen_evaluation_keys(sk, &KeyRequest::rotations(rotations))?.to_bytes(bgv.backend())?;
    let reply = ok("POST /v1/keys", http(host, "POST", "/v1/keys", token, &[], &keys)?, 201)?;
    let v: serde_json::Value = serde_json::from_slice(&reply).map_err(|_| fail("key upload answer is not JSON"))?;
    Ok(v.get("id").and_then(|i| i.as_str()).ok_or(fail("key upload answer has no id"))?.to_owned())
}

/// The CNN round trip: the rotations and batch size from `/v1/info`, the model from
/// `/v1/models/cnn`, synthetic seeded images.
fn run_cnn(args: &InferArgs, host: &str, token: Option<&str>, params: &Parameters) -> wgfhe::Result<()> {
    let info = ok("GET /v1/info", http(host, "GET", "/v1/info", None, &[], b"")?, 200)?;
    let info: serde_json::Value = serde_json::from_slice(&info).map_err(|_| fail("/v1/info is not JSON"))?;
    let entry = info
        .get("models")
        .and_then(|m| m.as_array())
        .and_then(|m| m.iter().find(|e| e.get("name").and_then(|n| n.as_str()) == Some(args.model.as_str())))
        .ok_or(fail("the server does not serve this model (see /v1/info)"))?;
    let rotations: Vec<i64> = entry
        .get("rotations")
        .and_then(|r| r.as_array())
        .ok_or(fail("/v1/info lists no rotations for the model"))?
        .iter()
        .map(|r| r.as_i64().ok_or(fail("a rotation in /v1/info is not an integer")))
        .collect::<wgfhe::Result<_>>()?;
    let text = ok("GET /v1/models/cnn", http(host, "GET", "/v1/models/cnn", None, &[], b"")?, 200)?;
    let model = QuantCnn::from_json(&String::from_utf8_lossy(&text))?;
    let relu = if args.model == "cnn" { ReluPath::Table } else { ReluPath::digits(1.0)? };
    let bgv = Bgv::cpu(params)?;
    let sk = bgv.gen_secret_key()?;
    let id = upload(host, token, &bgv, &sk, &rotations)?;
    let slots = bgv.encoder().slots();
    let per = (slots / wgfhe_mnist::split::BLOCK).max(1);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(35);
    let images: Vec<Image> = (0..args.images)
        .map(|_| std::array::from_fn(|_| if rng.random_range(0..3) == 0 { rng.random_range(0..=255) } else { 0 }))
        .collect();
    let bxt = Bxt::new(&bgv, Variant::Cso);
    let (mut checked, mut wrong) = (0usize, 0usize);
    let start = std::time::Instant::now();
    for batch in images.chunks(per) {
        let refs: Vec<&Image> = batch.iter().collect();
        let cts = cnn_client_columns(&refs, slots)?
            .iter()
            .map(|c| bxt.to_bytes(&bxt.encrypt(&sk, &bgv.encoder().encode(c)?)?))
            .collect::<wgfhe::Result<Vec<_>>>()?;
        let path = format!("/v1/infer/{}", args.model);
        let out = ok(
            &format!("POST {path}"),
            http(host, "POST", &path, token, &[("x-wgfhe-key-set", &id)], &wire::encode(&cts))?,
            200,
        )?;
        let objects = wire::decode(&out, 1).map_err(|_| fail("the answer is not a frame"))?;
        let score = objects.first().ok_or(fail("the answer holds no ciphertext"))?;
        let slots_out = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &bgv.ciphertext_from_bytes(score)?)?)?;
        let got = cnn_scores(&slots_out, batch.len())?;
        if args.check {
            for (img, g) in batch.iter().zip(&got) {
                let want = model.scores_with(img, relu.faults());
                checked += want.len();
                wrong += want.iter().zip(g).filter(|(w, g)| w != g).count() + want.len().abs_diff(g.len());
            }
        }
    }
    finish(host, token, &id, images.len(), images.len().div_ceil(per), start, args.check.then_some((checked, wrong)))
}
