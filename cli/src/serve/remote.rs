//! `wgfhe infer --remote URL`: the client side of `wgfhe serve`. Makes a secret key here,
//! uploads only the evaluation keys, encrypts images, asks the server for the scores, decrypts
//! them, and with `--check` compares every score with the plaintext model.
//!
//! The images are synthetic (seeded uniform pixels below `2^pixel_bits`): the point is the
//! round trip, and the check is exact either way.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use rand::{Rng, SeedableRng};
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant};
use wgfhe::params::Parameters;
use wgfhe::Error;
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::split::lr_client_columns;

use super::wire;

/// `wgfhe infer` options.
#[derive(Debug, Args)]
pub(crate) struct InferArgs {
    /// The server, `http://HOST:PORT` (plain HTTP; put TLS in a local proxy).
    #[arg(long)]
    remote: String,
    /// Model to ask for (`lr`).
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
    if args.model != "lr" {
        return Err(fail("only --model lr is served"));
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
    let text = ok("GET /v1/models/lr", http(host, "GET", "/v1/models/lr", None, &[], b"")?, 200)?;
    let model = QuantLr::from_json(&String::from_utf8_lossy(&text))?;
    let bgv = Bgv::cpu(&params)?;
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &[], false)?.to_bytes(bgv.backend())?;
    let reply = ok("POST /v1/keys", http(host, "POST", "/v1/keys", token, &[], &keys)?, 201)?;
    let v: serde_json::Value = serde_json::from_slice(&reply).map_err(|_| fail("key upload answer is not JSON"))?;
    let id = v.get("id").and_then(|i| i.as_str()).ok_or(fail("key upload answer has no id"))?.to_owned();

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
    let _ = http(host, "DELETE", &format!("/v1/keys/{id}"), token, &[], b"");
    println!(
        "{} images, {} batches in {:.2} s",
        images.len(),
        images.len().div_ceil(slots),
        start.elapsed().as_secs_f64()
    );
    if args.check {
        println!("checked {checked} scores against the plaintext model: {wrong} differ");
        if wrong > 0 {
            return Err(fail("decrypted scores differ from the plaintext model"));
        }
    }
    Ok(())
}
