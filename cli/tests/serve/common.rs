//! What the serve tests share: the server process, raw HTTP, the LR and CNN clients, fixtures.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant};
use wgfhe::params::{insecure_test_bgv, Parameters, TestRing};
use wgfhe::rlwe::KeyRequest;
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::split::lr_client_columns;

pub const RING: TestRing = TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 };

pub const T: u64 = 12289;

/// Another plaintext modulus on the same ring: another parameter set.
pub const OTHER_T: u64 = 40961;

pub const DIM: usize = 12;

pub const TOKENS: [&str; 2] = ["token-alice-0123456789", "token-bob-9876543210"];

pub const IO_TIMEOUT: Duration = Duration::from_secs(60);

pub fn params(t: u64) -> Parameters {
    insecure_test_bgv(RING, t).unwrap()
}

pub fn model() -> QuantLr {
    let weights: Vec<i64> = (0..DIM as i64).map(|i| (i * 5 % 7) - 3).collect();
    QuantLr::new(weights, -11, 4).unwrap()
}

pub fn images(count: usize, salt: usize) -> Vec<Vec<u8>> {
    (0..count).map(|s| (0..DIM).map(|i| ((s * 7 + i * 3 + salt * 5) % 16) as u8).collect()).collect()
}

pub static DIRS: AtomicUsize = AtomicUsize::new(0);

/// A fresh directory with `params.bin`, `lr.json` and a token file.
pub fn workdir(name: &str) -> PathBuf {
    let n = DIRS.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("wgfhe-serve-test-{}-{name}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("params.bin"), params(T).to_bytes()).unwrap();
    std::fs::write(dir.join("lr.json"), model().to_json().unwrap()).unwrap();
    std::fs::write(dir.join("tokens"), format!("{}\n{}\n", TOKENS[0], TOKENS[1])).unwrap();
    dir
}

/// The server process; killed (SIGKILL) when dropped.
pub struct Server {
    pub child: Child,
    pub addr: String,
}

impl Server {
    /// The server on the CPU backend.
    pub fn start(dir: &Path, extra: &[&str]) -> Self {
        Self::start_on(dir, "cpu", extra)
    }

    /// The server on `backend` (`cpu` or `gpu`).
    pub fn start_on(dir: &Path, backend: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_wgfhe"))
            .args(["serve", "--listen", "127.0.0.1:0", "--backend", backend, "--insecure-test-params"])
            .arg("--models")
            .arg(dir)
            .arg("--token-file")
            .arg(dir.join("tokens"))
            .arg("--store")
            .arg(dir.join("store"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(IO_TIMEOUT).expect("the server printed no address");
        let addr = line.trim().strip_prefix("listening on http://").expect("address line").to_owned();
        Self { child, addr }
    }

    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
            .unwrap_or(0)
    }

    /// Waits (bounded) for the process to exit by itself and checks that it succeeded.
    pub fn wait_clean_exit(&mut self, what: &str) {
        let start = Instant::now();
        let code = loop {
            if let Some(code) = self.child.try_wait().unwrap() {
                break code;
            }
            assert!(start.elapsed() < IO_TIMEOUT, "{what}");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(code.success(), "{code:?}");
    }

    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn kind(&self) -> String {
        let v: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            panic!("status {} with a non-JSON body: {:?}", self.status, String::from_utf8_lossy(&self.body))
        });
        v["error"]["kind"].as_str().unwrap_or_else(|| panic!("no error kind in {v}")).to_owned()
    }
}

/// Sends raw request bytes and reads the whole reply (the request says `Connection: close`).
pub fn raw(addr: &str, request: &[u8]) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    // The server may answer (413) and close before the whole body is written.
    let _ = s.write_all(request);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    parse(&buf)
}

pub fn parse(buf: &[u8]) -> Reply {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| panic!("no reply head: {buf:?}"));
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut body = buf[end + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body = dechunk(&body);
    }
    Reply { status, headers: head, body }
}

pub fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let nl = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let len = usize::from_str_radix(std::str::from_utf8(&b[..nl]).unwrap().trim(), 16).unwrap();
        if len == 0 {
            return out;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + len]);
        b = &b[nl + 4 + len..];
    }
}

pub fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut r =
        format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    let mut out = r.into_bytes();
    out.extend_from_slice(body);
    out
}

pub fn call(addr: &str, method: &str, path: &str, token: Option<&str>, extra: &[(&str, &str)], body: &[u8]) -> Reply {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers: Vec<(&str, &str)> = extra.to_vec();
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    raw(addr, &request(method, path, &headers, body))
}

/// The WGFB frame of `docs/serve.md`.
pub fn frame(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"WGFB".to_vec();
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_le_bytes());
    for o in objects {
        out.extend_from_slice(&(o.len() as u64).to_le_bytes());
        out.extend_from_slice(o);
    }
    out
}

pub fn unframe(b: &[u8]) -> Vec<Vec<u8>> {
    assert_eq!(&b[..4], b"WGFB");
    let count = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    let mut at = 12;
    (0..count)
        .map(|_| {
            let len = u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
            at += 8;
            let o = b[at..at + len].to_vec();
            at += len;
            o
        })
        .collect()
}

/// A client: its own secret key; only key and ciphertext bytes leave it.
pub struct Client {
    pub bgv: Bgv<wgfhe::backend::CpuBackend>,
    pub sk: wgfhe::rlwe::SecretKey<wgfhe::backend::CpuBackend>,
    pub token: &'static str,
}

impl Client {
    pub fn new(t: u64, token: &'static str) -> Self {
        let bgv = Bgv::cpu(&params(t)).unwrap();
        let sk = bgv.gen_secret_key().unwrap();
        Self { bgv, sk, token }
    }

    pub fn keys(&self) -> Vec<u8> {
        self.bgv
            .gen_evaluation_keys(&self.sk, &KeyRequest::relinearisation())
            .unwrap()
            .to_bytes(self.bgv.backend())
            .unwrap()
    }

    pub fn upload(&self, addr: &str) -> String {
        let r = call(addr, "POST", "/v1/keys", Some(self.token), &[], &self.keys());
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let id = v["id"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 32);
        id
    }

    pub fn encrypt(&self, imgs: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let bxt = Bxt::new(&self.bgv, Variant::Cso);
        let refs: Vec<&[u8]> = imgs.iter().map(Vec::as_slice).collect();
        lr_client_columns(&refs, DIM, self.bgv.encoder().slots())
            .unwrap()
            .iter()
            .map(|c| bxt.to_bytes(&bxt.encrypt(&self.sk, &self.bgv.encoder().encode(c).unwrap()).unwrap()).unwrap())
            .collect()
    }

    pub fn infer(&self, addr: &str, id: &str, cts: &[Vec<u8>]) -> Reply {
        call(addr, "POST", "/v1/infer/lr", Some(self.token), &[("x-wgfhe-key-set", id)], &frame(cts))
    }

    /// Encrypts, infers and checks every score against the plaintext model.
    pub fn round_trip(&self, addr: &str, id: &str, salt: usize) {
        let imgs = images(9, salt);
        let r = self.infer(addr, id, &self.encrypt(&imgs));
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let out = unframe(&r.body);
        assert_eq!(out.len(), 1);
        let bxt = Bxt::new(&self.bgv, Variant::Cso);
        let got = self
            .bgv
            .encoder()
            .decode_signed(&bxt.decrypt(&self.sk, &bxt.from_bytes(&out[0]).unwrap()).unwrap())
            .unwrap();
        let m = model();
        for (s, img) in imgs.iter().enumerate() {
            assert_eq!(got[s], m.score(img).unwrap(), "image {s}");
        }
    }
}

/// `wgfhe infer --remote` against `addr` with the test ring and the work dir's tokens, `args`
/// after the address.
pub fn remote_infer(addr: &str, dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wgfhe"))
        .args(["infer", "--remote", &format!("http://{addr}")])
        .args(args)
        .args(["--check", "--insecure-test-params", "--token-file"])
        .arg(dir.join("tokens"))
        .output()
        .unwrap()
}

/// `wgfhe models` with `args` (and `--out dir`).
pub fn models_cmd(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wgfhe")).args(["models", "--out"]).arg(dir).args(args).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[allow(dead_code)]
#[path = "../../../mnist/tests/common/cnn_fixtures.rs"]
pub mod cnn_fixtures;

/// A CNN client on the CNN test ring: its keys (the circuit's rotations) and a batch's inputs.
pub struct CnnClient {
    pub bgv: Bgv<wgfhe::backend::CpuBackend>,
    pub sk: wgfhe::rlwe::SecretKey<wgfhe::backend::CpuBackend>,
    pub keys: Vec<u8>,
    pub inputs: Vec<Vec<u8>>,
}

impl CnnClient {
    pub fn new(params: &Parameters, model: &wgfhe_mnist::cnn::QuantCnn, images: usize) -> Self {
        use wgfhe_mnist::cnn_infer::CnnCircuit;
        let bgv = Bgv::cpu(params).unwrap();
        let sk = bgv.gen_secret_key().unwrap();
        let circuit = CnnCircuit::new(&bgv, model).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(circuit.rotation_steps())).unwrap();
        let data = cnn_fixtures::images(images);
        let imgs: Vec<_> = data.images().iter().collect();
        let bxt = Bxt::new(&bgv, Variant::Cso);
        let inputs = circuit
            .client_inputs(&imgs, bgv.encoder().slots())
            .unwrap()
            .iter()
            .map(|v| bxt.to_bytes(&bxt.encrypt(&sk, &bgv.encoder().encode(v).unwrap()).unwrap()).unwrap())
            .collect();
        let keys = keys.to_bytes(bgv.backend()).unwrap();
        Self { bgv, sk, keys, inputs }
    }

    pub fn upload(&self, addr: &str, token: &str) -> String {
        let r = call(addr, "POST", "/v1/keys", Some(token), &[], &self.keys);
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        serde_json::from_slice::<serde_json::Value>(&r.body).unwrap()["id"].as_str().unwrap().to_owned()
    }

    pub fn infer(&self, addr: &str, token: &str, id: &str) -> Reply {
        call(addr, "POST", "/v1/infer/cnn", Some(token), &[("x-wgfhe-key-set", id)], &frame(&self.inputs))
    }

    /// The first image's ten decrypted scores of a CNN answer.
    pub fn scores(&self, r: &Reply) -> Vec<i64> {
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let ct = self.bgv.ciphertext_from_bytes(&unframe(&r.body)[0]).unwrap();
        self.bgv.encoder().decode_signed(&self.bgv.decrypt(&self.sk, &ct).unwrap()).unwrap()[..10].to_vec()
    }
}

pub fn cnn_params() -> Parameters {
    insecure_test_bgv(TestRing { log_n: 10, q_primes: 24, p_primes: 6, dnum: 4 }, 65537).unwrap()
}

/// A workdir serving the small CNN on the CNN test ring.
pub fn cnn_workdir(name: &str) -> PathBuf {
    let dir = workdir(name);
    std::fs::remove_file(dir.join("lr.json")).unwrap();
    std::fs::write(dir.join("params.bin"), cnn_params().to_bytes()).unwrap();
    std::fs::write(dir.join("cnn.json"), cnn_fixtures::small_model().to_json().unwrap()).unwrap();
    dir
}

/// Sends `req` and reads until the server closes (or the read times out): the raw bytes, empty
/// when the server died first.
pub fn send_and_read(addr: &str, req: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let _ = s.write_all(req);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    buf
}

/// The value of the metric line `name` (a gauge or counter without labels) at `addr`; `None`
/// when the server does not report it.
pub fn metric(addr: &str, name: &str) -> Option<u64> {
    let text = String::from_utf8(call(addr, "GET", "/metrics", None, &[], b"").body).unwrap();
    text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Whether CI requires a GPU adapter (`WGFHE_REQUIRE_GPU=1`, lavapipe there): the tests that
/// serve on `--backend gpu` run only then (elsewhere `gpu` might find no adapter).
pub fn gpu_required() -> bool {
    std::env::var("WGFHE_REQUIRE_GPU").as_deref() == Ok("1")
}
