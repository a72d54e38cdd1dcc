//! `wgfhe bench --suite anchors`: wgfhe against outside references in the same run.
//!
//! * NTT: the backend's `ntt_forward` / `ntt_inverse` on one limb against `tfhe-ntt`'s
//!   `prime32` plan (`fwd` / `inv` followed by `normalize`, since ours folds `N^-1` in) at the
//!   same `N` and the same 30-bit prime `= 1 mod 2N`, single-threaded on the
//!   tfhe-ntt side.
//! * HMULT with relinearisation, rotation by one, PMULT, PADD and HADD of fresh top-level
//!   ciphertexts against OpenFHE's BGV through its Python wheel (`benches/anchors/openfhe_bgv.py`, a
//!   line-oriented server started once per parameter set; set it up with
//!   `benches/anchors/setup.sh`), at the same `N`, `t` and `dnum` and the closest `log2 Q` with
//!   OpenFHE's own tower sizes (64-bit words holding ~45-60-bit towers, against our 30-bit primes
//!   in 32-bit words: the rows say so). Without the wheel the rows say so (status
//!   `unavailable`); nothing else depends on it.
//!
//! Method: inputs and keys outside the timed region, one warm-up each, then `reps` rounds in
//! which each operation runs on our side and then on the reference's (interleaved A/B);
//! medians, and `ratio = ours / theirs` (below 1: we are faster). OpenFHE times itself with
//! `perf_counter` around the call, so the pipe is not in its time. The timed region holds the
//! operation alone on both sides: PMULT and PADD take a plaintext encoded before the rounds
//! (ours prepared with [`Bgv::prepare_plain`] at the ciphertexts' level, OpenFHE's made once
//! by `MakePackedPlaintext`, which leaves it in the evaluation domain), HADD two ciphertexts;
//! only the result's release falls outside it.
//!
//! Threads: every row is measured once per entry of [`Config::threads`], our side in a rayon
//! pool of that many threads built here (not the process's global pool) and OpenFHE in a
//! server started with as many OpenMP threads. [`Report::scaling`] gives each row's speedup
//! from the fewest to the most threads.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use serde::Serialize;

use wgfhe::backend::Backend;
use wgfhe::bgv::Bgv;
use wgfhe::error::{Error, Result};
use wgfhe::params::Parameters;

use super::kernels::median_p95;
use super::ReportHeader;

/// Whether a row was measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "reason", rename_all = "snake_case")]
pub enum Status {
    /// Both sides ran.
    Measured,
    /// The reference could not run (the reason says why: not installed, failed to start).
    Unavailable(String),
}

/// One row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `ntt_forward`, `ntt_inverse`, `hmult_relin`, `rotation`, `pmult`, `padd` or `hadd`.
    pub anchor: &'static str,
    /// Ring degree.
    pub n: usize,
    /// Threads of both sides (our rayon pool, OpenFHE's OpenMP threads; tfhe-ntt runs on one).
    pub threads: usize,
    /// Our parameters (set name, or the prime for the NTT).
    pub ours: String,
    /// Our median.
    pub ours_ms: f64,
    /// The reference (`tfhe-ntt prime32`, `OpenFHE BGV`).
    pub reference: String,
    /// The reference's median (`null` when unavailable).
    pub reference_ms: Option<f64>,
    /// `ours_ms / reference_ms`.
    pub ratio: Option<f64>,
    /// Measured or unavailable.
    #[serde(flatten)]
    pub status: Status,
    /// How the two sides' parameters differ.
    pub note: String,
}

/// The report of `wgfhe bench --suite anchors --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Our side's backend, device, threads, and the timed rounds.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// The rows, for each thread count in turn.
    pub rows: Vec<Row>,
    /// Each row's speedup from the fewest to the most threads (empty with one thread count).
    pub scaling: Vec<Scaling>,
}

/// How one row scales with threads: `ms(fewest) / ms(most)` on each side.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    /// The row's anchor.
    pub anchor: &'static str,
    /// Ring degree.
    pub n: usize,
    /// Our parameters (as in the rows).
    pub ours: String,
    /// The thread counts compared, fewest then most.
    pub threads: (usize, usize),
    /// Our speedup (2 threads: 2.0 is perfect, 1.0 means the second core goes unused).
    pub ours_speedup: f64,
    /// The reference's speedup (`null` when it was not measured at both counts).
    pub reference_speedup: Option<f64>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// `log2 N` of the NTT rows.
    pub ntt_log_ns: Vec<u32>,
    /// Parameter sets of the scheme rows.
    pub sets: Vec<Parameters>,
    /// Timed rounds.
    pub reps: usize,
    /// Thread counts: every row is measured with each, our side in a rayon pool of that size,
    /// OpenFHE with as many OpenMP threads (`OMP_NUM_THREADS`). Empty: one thread.
    pub threads: Vec<usize>,
    /// The Python interpreter with OpenFHE's wheel; `None`: the one `benches/anchors/setup.sh`
    /// installs (`benches/anchors/.venv/bin/python`, from the working directory or the crate's).
    /// `wgfhe bench` takes it from `WGFHE_OPENFHE_PYTHON`.
    pub openfhe_python: Option<PathBuf>,
}

fn ratio(a: f64, b: Option<f64>) -> Option<f64> {
    b.filter(|&b| b > 0.0).map(|b| a / b)
}

/// The NTT rows at `log_n`, with backends made by `make`, ours timed in each pool.
fn ntt_rows<B: Backend>(
    make: &dyn Fn(&Parameters) -> Result<B>,
    log_n: u32,
    reps: usize,
    pools: &super::Pools,
) -> Result<Vec<Row>> {
    let n = 1usize << log_n;
    let params = super::kernels::ring_params(log_n, 1)?;
    // The ring's first chain prime: a 30-bit prime = 1 mod 2N, used by both sides.
    let be = make(&params)?;
    let q = u64::from(be.context().modulus(0)?.value());
    let plan = tfhe_ntt::prime32::Plan::try_new(n, q as u32)
        .ok_or(Error::InvalidField { field: "anchors", reason: "tfhe-ntt has no plan for this prime" })?;
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % q) as u32
        })
        .collect();
    let mut buf = be.upload(&data)?;
    let mut theirs = data.clone();
    let basis = [0usize];
    let mut rows = Vec::new();
    for anchor in ["ntt_forward", "ntt_inverse"] {
        let fwd = anchor == "ntt_forward";
        for (threads, pool) in pools {
            let mut ours_t = Vec::with_capacity(reps);
            let mut theirs_t = Vec::with_capacity(reps);
            for round in 0..=reps {
                let a = pool.install(|| -> Result<f64> {
                    let start = Instant::now();
                    if fwd {
                        be.ntt_forward(&mut buf, &basis)?;
                    } else {
                        be.ntt_inverse(&mut buf, &basis)?;
                    }
                    be.synchronize()?;
                    Ok(start.elapsed().as_secs_f64() * 1e3)
                })?;
                let start = Instant::now();
                if fwd {
                    plan.fwd(std::hint::black_box(&mut theirs));
                } else {
                    plan.inv(std::hint::black_box(&mut theirs));
                    plan.normalize(std::hint::black_box(&mut theirs));
                }
                let b = start.elapsed().as_secs_f64() * 1e3;
                if round > 0 {
                    ours_t.push(a);
                    theirs_t.push(b);
                }
            }
            let (ours, _) = median_p95(&mut ours_t);
            let (theirs_ms, _) = median_p95(&mut theirs_t);
            rows.push(Row {
                anchor,
                n,
                threads: *threads,
                ours: format!("q = {q}"),
                ours_ms: ours,
                reference: "tfhe-ntt prime32".into(),
                reference_ms: Some(theirs_ms),
                ratio: ratio(ours, Some(theirs_ms)),
                status: Status::Measured,
                note: if fwd {
                    "same N and prime; both natural order in, bit-reversed out; tfhe-ntt on one thread".into()
                } else {
                    "same N and prime; tfhe-ntt inv + normalize (ours folds N^-1 into the last stage); tfhe-ntt on one \
                     thread"
                        .into()
                },
            });
        }
    }
    Ok(rows)
}

/// A running OpenFHE server.
struct OpenFhe {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    info: serde_json::Value,
}

impl OpenFhe {
    /// Starts the server for `p`, or says why it cannot.
    fn start(p: &Parameters, threads: usize, python: Option<&Path>) -> std::result::Result<Self, String> {
        let python = python.map_or_else(|| crate::repo_path("benches/anchors/.venv/bin/python"), Path::to_path_buf);
        if !python.exists() {
            return Err(format!(
                "OpenFHE not installed ({} not found; run benches/anchors/setup.sh)",
                crate::shown(&python)
            ));
        }
        let script = crate::repo_path("benches/anchors/openfhe_bgv.py");
        let mut child = Command::new(&python)
            .arg(&script)
            .args(["--log-n", &p.log_n().to_string()])
            .args(["--log-q", &format!("{:.2}", p.log_q())])
            .args(["--dnum", &p.dnum().to_string()])
            .args(["--t", &p.plaintext_modulus().unwrap_or(65537).to_string()])
            .args(["--threads", &threads.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("OpenFHE server did not start: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("OpenFHE server has no pipes".into());
        };
        let mut s = Self { child, stdin, stdout: BufReader::new(stdout), info: serde_json::Value::Null };
        match s.line() {
            Ok(v) if v.get("ready").is_some() => {
                s.info = v;
                Ok(s)
            }
            other => {
                let mut err = String::new();
                if let Some(mut e) = s.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                let _ = s.child.kill();
                let last = err.lines().last().unwrap_or("").to_string();
                Err(format!("OpenFHE server failed: {} {last}", other.err().unwrap_or_default()))
            }
        }
    }

    fn line(&mut self) -> std::result::Result<serde_json::Value, String> {
        let mut text = String::new();
        self.stdout.read_line(&mut text).map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|_| format!("unexpected output {:?}", text.trim()))
    }

    /// Runs `op` once, returns OpenFHE's own time.
    fn time(&mut self, op: &str) -> std::result::Result<f64, String> {
        writeln!(self.stdin, "{op}").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        self.line()?.get("ms").and_then(serde_json::Value::as_f64).ok_or_else(|| format!("no time for {op}"))
    }
}

impl Drop for OpenFhe {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.child.wait();
    }
}

/// The scheme operations: `(anchor, OpenFHE op)`.
const OPS: [(&str, &str); 5] =
    [("hmult_relin", "hmult"), ("rotation", "rotate"), ("pmult", "pmult"), ("padd", "padd"), ("hadd", "hadd")];

/// The note of a scheme row: both sides' parameters.
fn scheme_note(p: &Parameters, server: &std::result::Result<OpenFhe, String>) -> String {
    match server {
        Ok(s) => format!(
            "ours: {} limbs of 30-bit primes in u32 words, log Q {:.1}, dnum {}, t {}; OpenFHE ({}, {}-bit words): {} towers of {} bits, log Q {}, dnum {}, depth {}, {}",
            p.q().len(),
            p.log_q(),
            p.dnum(),
            p.plaintext_modulus().unwrap_or(0),
            s.info.get("library").and_then(serde_json::Value::as_str).unwrap_or("?"),
            s.info.get("native_int_bits").map_or("?".into(), ToString::to_string),
            s.info.get("towers").map_or("?".into(), ToString::to_string),
            s.info.get("tower_bits").and_then(|b| b.get(0)).map_or("?".into(), ToString::to_string),
            s.info.get("log_q").map_or("?".into(), ToString::to_string),
            s.info.get("dnum").map_or("?".into(), ToString::to_string),
            s.info.get("depth").map_or("?".into(), ToString::to_string),
            s.info.get("security").and_then(serde_json::Value::as_str).unwrap_or("?"),
        ),
        Err(_) => format!("ours: {} limbs of 30-bit primes, log Q {:.1}, dnum {}", p.q().len(), p.log_q(), p.dnum()),
    }
}

/// One thread count's side of the scheme rows: its pool, its OpenFHE server, the timings.
struct Side<'p> {
    threads: usize,
    pool: &'p rayon::ThreadPool,
    server: std::result::Result<OpenFhe, String>,
    failure: Option<String>,
    ours_t: Vec<Vec<f64>>,
    theirs_t: Vec<Vec<f64>>,
}

fn scheme_rows<B: Backend>(
    make: &dyn Fn(&Parameters) -> Result<B>,
    p: &Parameters,
    reps: usize,
    pools: &super::Pools,
    python: Option<&Path>,
) -> Result<Vec<Row>> {
    let bgv = Bgv::new(make(p)?)?;
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
    let t = u64::from(bgv.plaintext_modulus());
    let slots = bgv.encoder().slots().max(1);
    let enc = |f: &dyn Fn(u64) -> u64| bgv.encoder().encode(&(0..slots as u64).map(|i| f(i) % t).collect::<Vec<_>>());
    let x = bgv.encrypt_symmetric(&sk, &enc(&|i| i * 7 + 3)?)?;
    let y = bgv.encrypt_symmetric(&sk, &enc(&|i| i * i + 1)?)?;
    // The plaintext encoded once, as OpenFHE's is: PMULT's with factor 1, PADD's with the
    // ciphertexts' correction factor.
    let w = enc(&|i| i % 5 + 1)?;
    let w_mul = bgv.prepare_plain(&w, x.level())?;
    let w_add = bgv.prepare_plain_with_factor(&w, x.level(), x.correction_factor())?;
    // The operation alone between the clock reads; the result is released after them.
    let ours = |op: &str| -> Result<f64> {
        let start = Instant::now();
        let out = match op {
            "hmult_relin" => bgv.mul_relin(&x, &y, &keys)?,
            "rotation" => bgv.rotate_columns(&x, 1, &keys)?,
            "pmult" => bgv.mul_plain_prepared(&x, &w_mul)?,
            "padd" => bgv.add_plain_prepared(&x, &w_add)?,
            _ => bgv.add(&x, &y)?,
        };
        bgv.backend().synchronize()?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        drop(out);
        Ok(ms)
    };
    let mut sides: Vec<Side<'_>> = pools
        .iter()
        .map(|(threads, pool)| Side {
            threads: *threads,
            pool,
            server: OpenFhe::start(p, *threads, python),
            failure: None,
            ours_t: vec![Vec::with_capacity(reps); OPS.len()],
            theirs_t: vec![Vec::with_capacity(reps); OPS.len()],
        })
        .collect();
    // Interleaved: each round runs every operation at every thread count, ours then theirs.
    for round in 0..=reps {
        for (i, (anchor, op)) in OPS.iter().enumerate() {
            for side in &mut sides {
                let a = side.pool.install(|| ours(anchor))?;
                let b = match side.server.as_mut() {
                    Ok(s) if side.failure.is_none() => match s.time(op) {
                        Ok(ms) => Some(ms),
                        Err(e) => {
                            side.failure = Some(format!("OpenFHE server failed: {e}"));
                            None
                        }
                    },
                    _ => None,
                };
                if round > 0 {
                    if let Some(v) = side.ours_t.get_mut(i) {
                        v.push(a);
                    }
                    if let (Some(v), Some(b)) = (side.theirs_t.get_mut(i), b) {
                        v.push(b);
                    }
                }
            }
        }
    }
    let mut rows = Vec::new();
    for side in &mut sides {
        let status = match (&side.server, side.failure.take()) {
            (Ok(_), None) => Status::Measured,
            (Ok(_), Some(e)) => Status::Unavailable(e),
            (Err(e), _) => Status::Unavailable(e.clone()),
        };
        let note = scheme_note(p, &side.server);
        for (i, (anchor, _)) in OPS.iter().enumerate() {
            let (ours_ms, _) = side.ours_t.get_mut(i).map_or((0.0, 0.0), |v| median_p95(v));
            let theirs_ms = match (&status, side.theirs_t.get_mut(i)) {
                (Status::Measured, Some(v)) if !v.is_empty() => Some(median_p95(v).0),
                _ => None,
            };
            rows.push(Row {
                anchor,
                n: p.n(),
                threads: side.threads,
                ours: p.name().to_string(),
                ours_ms,
                reference: "OpenFHE BGV".into(),
                reference_ms: theirs_ms,
                ratio: ratio(ours_ms, theirs_ms),
                status: status.clone(),
                note: note.clone(),
            });
        }
    }
    Ok(rows)
}

/// Runs the anchors with backends made by `make`, labelled `device`.
pub fn run<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, device: String, config: &Config) -> Result<Report> {
    let reps = config.reps.max(1);
    let counts = super::thread_counts(&config.threads);
    let pools = super::pools(&counts)?;
    let mut rows = Vec::new();
    let mut backend = String::new();
    for &log_n in &config.ntt_log_ns {
        rows.extend(ntt_rows(make, log_n, reps, &pools)?);
    }
    for p in &config.sets {
        backend = make(p)?.name().to_string();
        rows.extend(scheme_rows(make, p, reps, &pools, config.openfhe_python.as_deref())?);
    }
    if backend.is_empty() {
        backend = make(&super::kernels::ring_params(10, 1)?)?.name().to_string();
    }
    let scaling = scaling(&rows, &counts);
    Ok(Report { header: ReportHeader::new(&backend, device, reps), rows, scaling })
}

/// Each row's speedup between the first and the last thread count.
fn scaling(rows: &[Row], counts: &[usize]) -> Vec<Scaling> {
    let (Some(&few), Some(&most)) = (counts.first(), counts.last()) else { return Vec::new() };
    if few == most {
        return Vec::new();
    }
    rows.iter()
        .filter(|r| r.threads == few)
        .filter_map(|r| {
            let m =
                rows.iter().find(|m| m.threads == most && m.anchor == r.anchor && m.n == r.n && m.ours == r.ours)?;
            let reference_speedup = match (r.reference_ms, m.reference_ms) {
                (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                _ => None,
            };
            Some(Scaling {
                anchor: r.anchor,
                n: r.n,
                ours: r.ours.clone(),
                threads: (few, most),
                ours_speedup: if m.ours_ms > 0.0 { r.ours_ms / m.ours_ms } else { 0.0 },
                reference_speedup,
            })
        })
        .collect()
}

impl Report {
    /// A fixed-width table.
    #[must_use]
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "anchors: ours on {} ({}), median of {} interleaved A/B rounds; ratio = ours / theirs",
            self.header.backend, self.header.device, self.header.reps
        );
        let _ = writeln!(
            s,
            "{:<12} {:>6} {:>3} {:<18} {:>10} {:<17} {:>10} {:>7}  status",
            "anchor", "N", "thr", "ours", "ours ms", "reference", "theirs ms", "ratio"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<12} {:>6} {:>3} {:<18} {:>10.3} {:<17} {:>10} {:>7}  {}",
                r.anchor,
                r.n,
                r.threads,
                r.ours,
                r.ours_ms,
                r.reference,
                r.reference_ms.map_or("-".into(), |m| format!("{m:.3}")),
                r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
                match &r.status {
                    Status::Measured => "measured".to_string(),
                    Status::Unavailable(why) => format!("unavailable: {why}"),
                }
            );
        }
        let mut notes: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !notes.contains(&r.note.as_str()) {
                notes.push(&r.note);
            }
        }
        for n in notes {
            let _ = writeln!(s, "  note: {n}");
        }
        if let Some(first) = self.scaling.first() {
            let (few, most) = first.threads;
            let _ = writeln!(s, "speedup from {few} to {most} threads (ms at {few} / ms at {most}):");
            let _ = writeln!(s, "{:<12} {:>6} {:<18} {:>8} {:>8}", "anchor", "N", "ours", "ours", "theirs");
            for x in &self.scaling {
                let _ = writeln!(
                    s,
                    "{:<12} {:>6} {:<18} {:>8.2} {:>8}",
                    x.anchor,
                    x.n,
                    x.ours,
                    x.ours_speedup,
                    x.reference_speedup.map_or("-".into(), |v| format!("{v:.2}"))
                );
            }
        }
        s
    }
}
