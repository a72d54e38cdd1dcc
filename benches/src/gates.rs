//! The `gates` suite: bootstrapped Boolean gates ([`wgfhe::gates`]) against OpenFHE BinFHE.
//!
//! Method: keys are made outside the timed region; each set runs `warmup` untimed gates, then
//! `reps` timed single gates (fresh inputs, encryption untimed), interleaved gate by gate with
//! OpenFHE's STD128 GINX gate through `benches/anchors/openfhe_binfhe.py` (one OpenMP thread)
//! when that venv is present. Rows give the median and p95 single-gate latency, the gates per
//! second of a batch of `batch` gates run in a rayon pool of `threads` threads, the resident key
//! bytes (and stored bytes: seeded halves), the failure rate measured over `failure_samples`
//! chained gates (inputs are earlier outputs) with the analytic prediction, and `ratio`: the
//! row's median over OpenFHE's median of the same gate in the same run (1 on OpenFHE's row).
//! With a GPU, rows of backend `gpu: <adapter>` time whole batches of `batch` gates in one
//! dispatch sequence ([`wgfhe::gates::gpu`]): `median_ms` is the batch's latency, `gates_per_s`
//! the batch size over it, `key_bytes` the device-resident bootstrapping key.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use wgfhe::backend::gpu::GpuDevice;
use wgfhe::error::{Error, Result};
use wgfhe::gates::gpu::GpuGateKey;
use wgfhe::gates::{Gate, GateContext, GateEvaluator, GateParams, LweCiphertext, MarginKind, SecretKey};
use wgfhe::math::sampling::{Purpose, Sampler};

use super::kernels::median_p95;
use super::ReportHeader;

/// Configuration of the suite.
#[derive(Debug, Clone)]
pub struct Config {
    /// Parameter sets (names of [`GateParams::by_name`]).
    pub sets: Vec<String>,
    /// Gates to time.
    pub gates: Vec<Gate>,
    /// Timed single gates per row.
    pub reps: usize,
    /// Untimed gates before timing.
    pub warmup: usize,
    /// Gates of the batch measurement.
    pub batch: usize,
    /// Threads of the batch measurement (and of nothing else: single gates run on one thread).
    pub threads: usize,
    /// Chained gates of the failure measurement.
    pub failure_samples: usize,
    /// Run OpenFHE (if its venv is present).
    pub openfhe: bool,
    /// Python of the anchors venv (default `benches/anchors/.venv/bin/python`).
    pub openfhe_python: Option<PathBuf>,
    /// Also run the batch on this GPU (rows with backend `gpu`: the latency of a whole batch of
    /// `batch` gates, median and p95 over `gpu_reps` batches, and its gates per second).
    pub gpu: Option<Arc<GpuDevice>>,
    /// Timed batches of the GPU rows.
    pub gpu_reps: usize,
}

/// One row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Gate name.
    pub gate: String,
    /// Parameter set.
    pub params: String,
    /// `cpu` or `openfhe`.
    pub backend: String,
    /// Median single-gate latency.
    pub median_ms: f64,
    /// 95th percentile single-gate latency.
    pub p95_ms: f64,
    /// Gates per second of the batch.
    pub gates_per_s: f64,
    /// Resident key bytes (bootstrapping + key switching).
    pub key_bytes: u64,
    /// Stored key bytes (seeded halves; OpenFHE: none reported, 0).
    pub key_bytes_stored: u64,
    /// Measured failure rate (None where not measured).
    pub failure_rate: Option<f64>,
    /// Chained gates the failure rate was measured over.
    pub failure_samples: usize,
    /// Analytic failure probability of the gate.
    pub failure_predicted: Option<f64>,
    /// Median over OpenFHE's median for the same gate in this run.
    pub ratio: Option<f64>,
}

/// The suite's report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Common header.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// Why OpenFHE rows are missing, if they are.
    pub openfhe_status: String,
    /// Rows.
    pub rows: Vec<Row>,
}

impl Report {
    /// A plain-text table.
    #[must_use]
    pub fn table(&self) -> String {
        let mut s = format!("OpenFHE: {}\n", self.openfhe_status);
        s.push_str(
            "gate  params            backend  median_ms  p95_ms  gates/s  key_MB  fail_rate  predicted  ratio\n",
        );
        for r in &self.rows {
            s.push_str(&format!(
                "{:<5} {:<17} {:<8} {:>9.2} {:>7.2} {:>8.1} {:>7.1} {:>10} {:>10} {:>6}\n",
                r.gate,
                r.params,
                r.backend,
                r.median_ms,
                r.p95_ms,
                r.gates_per_s,
                r.key_bytes as f64 / 1e6,
                r.failure_rate.map_or("-".into(), |f| format!("{f:.1e}")),
                r.failure_predicted.map_or("-".into(), |f| format!("{f:.1e}")),
                r.ratio.map_or("-".into(), |f| format!("{f:.3}")),
            ));
        }
        s
    }
}

struct OpenFhe {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    key_bytes: u64,
}

impl OpenFhe {
    fn start(python: Option<&Path>) -> std::result::Result<Self, String> {
        let python = python.map_or_else(|| crate::repo_path("benches/anchors/.venv/bin/python"), Path::to_path_buf);
        if !python.exists() {
            return Err(format!("not installed ({} missing; run benches/anchors/setup.sh)", crate::shown(&python)));
        }
        let mut child = Command::new(&python)
            .arg(crate::repo_path("benches/anchors/openfhe_binfhe.py"))
            .args(["--set", "STD128", "--method", "GINX", "--threads", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut s = Self { child, stdin, stdout, key_bytes: 0 };
        let hello = s.read_line()?;
        s.key_bytes = hello.get("key_resident_bytes").and_then(serde_json::Value::as_u64).unwrap_or(0);
        Ok(s)
    }

    fn read_line(&mut self) -> std::result::Result<serde_json::Value, String> {
        let mut line = String::new();
        self.stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        serde_json::from_str(&line).map_err(|e| format!("bad reply {line:?}: {e}"))
    }

    fn gate(&mut self, g: Gate) -> std::result::Result<f64, String> {
        writeln!(self.stdin, "{}", g.name()).map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        let v = self.read_line()?;
        if v.get("ok").and_then(serde_json::Value::as_bool) != Some(true) {
            return Err("OpenFHE gate decrypted wrongly".into());
        }
        v.get("ms").and_then(serde_json::Value::as_f64).ok_or_else(|| "no ms".into())
    }
}

impl Drop for OpenFhe {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.wait();
    }
}

fn margin(g: Gate) -> MarginKind {
    match g {
        Gate::Xor | Gate::Xnor => MarginKind::Xor,
        _ => MarginKind::TwoInput,
    }
}

/// Runs the suite.
pub fn run(config: &Config) -> Result<Report> {
    let reps = config.reps.max(1);
    let mut openfhe = None;
    let mut status = "not requested".to_string();
    if config.openfhe {
        match OpenFhe::start(config.openfhe_python.as_deref()) {
            Ok(o) => {
                status = "measured (STD128, GINX, 1 OpenMP thread)".into();
                openfhe = Some(o);
            }
            Err(e) => status = e,
        }
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.max(1))
        .build()
        .map_err(|e| Error::Backend { backend: "cpu", reason: format!("rayon pool: {e}") })?;
    let mut rows = Vec::new();
    let mut openfhe_times: Vec<(Gate, Vec<f64>)> = config.gates.iter().map(|&g| (g, Vec::new())).collect();
    for name in &config.sets {
        let ctx = GateContext::new(GateParams::by_name(name)?)?;
        let sk = SecretKey::generate(&ctx, &[7; 32])?;
        let seeded = sk.evaluation_key(&[8; 32])?;
        let stored = seeded.stored_bytes() as u64;
        let ek = Arc::new(seeded.expand(&ctx)?);
        let key_bytes = ek.resident_bytes() as u64;
        let mut ev = GateEvaluator::new(Arc::clone(&ek));
        // The GPU's copy of the key, uploaded once per set.
        let gpu_key = config.gpu.as_ref().map(|dev| GpuGateKey::new(dev, &ek)).transpose()?;
        let mut enc = Sampler::from_seed(&[9; 32], Purpose::Ephemeral, 0);
        for _ in 0..config.warmup {
            let a = sk.encrypt_bit(true, &mut enc)?;
            ev.and(&a, &a)?;
        }
        for (gi, &g) in config.gates.iter().enumerate() {
            let mut times = Vec::with_capacity(reps);
            for r in 0..reps {
                let (x, y) = (r % 2 == 0, r % 3 == 0);
                let a = sk.encrypt_bit(x, &mut enc)?;
                let b = sk.encrypt_bit(y, &mut enc)?;
                let t0 = Instant::now();
                let c = ev.gate(g, &a, &b)?;
                times.push(t0.elapsed().as_secs_f64() * 1e3);
                if sk.decrypt_bit(&c)? != g.eval(x, y) {
                    return Err(Error::Verification {
                        what: format!("{name}: a {g:?} gate decrypted wrongly"),
                        reference: "the clear gate",
                    });
                }
                if let Some(o) = openfhe.as_mut() {
                    match o.gate(g) {
                        Ok(ms) => {
                            if let Some((_, v)) = openfhe_times.get_mut(gi) {
                                v.push(ms);
                            }
                        }
                        Err(e) => {
                            status = e;
                            openfhe = None;
                        }
                    }
                }
            }
            let (median_ms, p95_ms) = median_p95(&mut times);
            // Batch: independent gates over the pool.
            let inputs: Vec<(LweCiphertext, LweCiphertext)> = (0..config.batch.max(1))
                .map(|i| Ok((sk.encrypt_bit(i % 2 == 0, &mut enc)?, sk.encrypt_bit(i % 3 == 0, &mut enc)?)))
                .collect::<Result<_>>()?;
            let t0 = Instant::now();
            let outs: Vec<Result<LweCiphertext>> = pool.install(|| {
                inputs
                    .par_iter()
                    .map_init(|| GateEvaluator::new(Arc::clone(&ek)), |e, (a, b)| e.gate(g, a, b))
                    .collect()
            });
            let secs = t0.elapsed().as_secs_f64();
            for o in outs {
                o?;
            }
            // Failure rate over chained gates.
            let mut fails = 0usize;
            let mut prev = (true, sk.encrypt_bit(true, &mut enc)?);
            for i in 0..config.failure_samples {
                let y = i % 3 != 1;
                let b = sk.encrypt_bit(y, &mut enc)?;
                let c = ev.gate(g, &prev.1, &b)?;
                let want = g.eval(prev.0, y);
                let got = sk.decrypt_bit(&c)?;
                fails += usize::from(got != want);
                prev = (got, c);
            }
            if let (Some(dev), Some(gk)) = (config.gpu.as_ref(), gpu_key.as_ref()) {
                let pairs: Vec<(&LweCiphertext, &LweCiphertext)> = inputs.iter().map(|(a, b)| (a, b)).collect();
                let first = gk.gates(g, &pairs)?;
                for (i, o) in first.iter().enumerate() {
                    if sk.decrypt_bit(o)? != g.eval(i % 2 == 0, i % 3 == 0) {
                        return Err(Error::Verification {
                            what: format!("{name}: a GPU {g:?} gate decrypted wrongly"),
                            reference: "the clear gate",
                        });
                    }
                }
                let mut bt = Vec::new();
                for _ in 0..config.gpu_reps.max(1) {
                    let t0 = Instant::now();
                    gk.gates(g, &pairs)?;
                    bt.push(t0.elapsed().as_secs_f64() * 1e3);
                }
                let (bt_median, bt_p95) = median_p95(&mut bt);
                rows.push(Row {
                    gate: g.name().into(),
                    params: name.clone(),
                    backend: format!("gpu: {}", dev.summary().name),
                    median_ms: bt_median,
                    p95_ms: bt_p95,
                    gates_per_s: config.batch.max(1) as f64 / (bt_median / 1e3),
                    key_bytes: ek.bootstrapping_key_bytes() as u64,
                    key_bytes_stored: stored,
                    failure_rate: None,
                    failure_samples: 0,
                    failure_predicted: Some(ctx.params().failure_probability(margin(g))),
                    ratio: None,
                });
            }
            rows.push(Row {
                gate: g.name().into(),
                params: name.clone(),
                backend: "cpu".into(),
                median_ms,
                p95_ms,
                gates_per_s: config.batch.max(1) as f64 / secs,
                key_bytes,
                key_bytes_stored: stored,
                failure_rate: (config.failure_samples > 0).then(|| fails as f64 / config.failure_samples as f64),
                failure_samples: config.failure_samples,
                failure_predicted: Some(ctx.params().failure_probability(margin(g))),
                ratio: None,
            });
        }
    }
    let key_bytes = openfhe.as_ref().map_or(0, |o| o.key_bytes);
    for (g, mut t) in openfhe_times {
        if t.is_empty() {
            continue;
        }
        let (med, p95) = median_p95(&mut t);
        for r in rows.iter_mut().filter(|r| r.gate == g.name() && r.backend == "cpu") {
            r.ratio = Some(r.median_ms / med);
        }
        rows.push(Row {
            gate: g.name().into(),
            params: "openfhe-STD128-GINX".into(),
            backend: "openfhe".into(),
            median_ms: med,
            p95_ms: p95,
            gates_per_s: 1e3 / med,
            key_bytes,
            key_bytes_stored: 0,
            failure_rate: None,
            failure_samples: 0,
            failure_predicted: None,
            ratio: Some(1.0),
        });
    }
    drop(openfhe);
    let mut header = ReportHeader::new("cpu", super::machine(), reps);
    header.threads = 1;
    Ok(Report { header, openfhe_status: status, rows })
}
