//! `wgfhe bench --suite boot`: the cost and precision ledgers of one CKKS hop (a layer, then a
//! bootstrap), in the style of a bootstrapping cost ledger.
//!
//! **The hop.** The layer is a fixed polynomial activation of depth 4 on every slot: the
//! degree-15 Chebyshev interpolant of `sin(pi x / 2)` on `[-1, 1]` ([`layer_series`]),
//! evaluated by [`Ckks::eval_chebyshev_to`] straight to the scale the bootstrap's entry
//! expects; the bootstrap is [`Bootstrapper::bootstrap_with`] with the default
//! [`BootConfig`] for the slot count (CoeffToSlot and SlotToCoeff in 3 levels each, EvalMod
//! `K = 16`, degree 40, 3 double angles, message ratio `2^-10`, sparse-secret encapsulation). The bootstrap returns
//! the scale the layer's series evaluates for free, so a hop consumes exactly the levels it
//! regains and hops repeat.
//!
//! **Cost ledger.** Keys and inputs are made outside the timed region. Each of `reps` timed
//! hops runs on a traffic ledger ([`Ledger`]) over any backend ([`run_with`]; [`run`] is the
//! CPU's); a stage's `ms` is its wall time, ended by a flush of the backend's queue (the median
//! over the hops), its `share` that over the median hop, its `key_bytes` the key bytes its
//! dispatches read, and, when every dispatch is timed (always on the CPU, with `--timed` on a
//! GPU, whose queue that serialises), its `ntt`, `basis_conversion` and `key_switch` shares:
//! the parts of its summed dispatch time in those kernel families
//! ([`super::stages::stage_of`]: forward and inverse NTTs; base conversion and the ModDown
//! correction; the key-switching inner product), `null` otherwise. Stages: `layer`,
//! `mod_raise`, `coeff_to_slot`, `eval_mod`, `slot_to_coeff`, and `other` (the entry rescale
//! and the two sparse-secret switches). One rayon thread by default (`--threads`). The GPU
//! computes the CPU's words, so its precision ledger is the CPU's to the last bit (tested on
//! lavapipe).
//!
//! **Keys.** Generated for the transforms' rotations only, plus conjugation and
//! relinearisation, then held seeded (the `a` halves regenerated from seeds in the key
//! switch) and bit-packed (`b` halves unpacked there): `resident_key_bytes`; `full_key_bytes`
//! is the same set with both halves one residue per word.
//!
//! **Precision ledger.** Inputs uniform in `[-1, 1]` (real), `-log2` of the absolute error per
//! slot against the same computation in `f64` (the layer's series applied exactly): worst
//! slot and median, for the fresh input, after the layer, after the bootstrap and after
//! `hops` hops (10 by default).
//!
//! **Anchor.** OpenFHE's CKKS bootstrapping through `benches/anchors/openfhe_ckks_boot.py`
//! (the anchors venv, one thread) in the same invocation, alternating with ours: the script
//! starts with ours (`--serve`: its key generation and precomputation run while ours make
//! their keys), and each of our timed hops is followed by one of its bootstraps, so both
//! sides see the same machine. Its JSON is attached as it prints it (time, precision,
//! rotation keys and their bytes, `"interleaved": true`); `hop_ms_runs` lists ours in the
//! same order.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::kernels::median_p95;
use super::stages::{stage_of, StageKind};
use super::ReportHeader;
use wgfhe::backend::ledger::{Ledger, Record};
use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::ckks::{
    precision_stats, BootConfig, BootStage, Bootstrapper, ChebyshevSeries, Ciphertext, Ckks, ScalePolicy,
};
use wgfhe::error::{Error, Result};
use wgfhe::params::{Parameters, Scheme};
use wgfhe::ring::RingContext;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// A CKKS set with the bootstrapping chain (`ckks-boot-n16`, or an insecure test ring).
    pub params: Parameters,
    /// Slots (default `N/2`).
    pub slots: Option<usize>,
    /// Timed hops.
    pub reps: usize,
    /// Hops of the precision ledger.
    pub hops: usize,
    /// Rayon threads of the CPU backend.
    pub threads: usize,
    /// Run OpenFHE's anchor, alternating with ours.
    pub openfhe: bool,
    /// Python of the anchors venv (default `benches/anchors/.venv/bin/python`).
    pub openfhe_python: Option<PathBuf>,
    /// Extra arguments for the anchor script (e.g. `--log-n 15 --security none`).
    pub openfhe_args: Vec<String>,
    /// Seed of the keys and inputs.
    pub seed: u8,
}

/// One stage of the hop.
#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    /// `layer`, `mod_raise`, `coeff_to_slot`, `eval_mod`, `slot_to_coeff` or `other`.
    pub stage: &'static str,
    /// Median wall time over the timed hops.
    pub ms: f64,
    /// `ms` over the median hop.
    pub share: f64,
    /// Key bytes read by the stage's dispatches (one hop).
    pub key_bytes: u64,
    /// All bytes its dispatches read and wrote (one hop).
    pub bytes: u64,
    /// Share of its summed dispatch time in NTTs (`None` when dispatches were not timed).
    pub ntt: Option<f64>,
    /// Share in base conversion and the ModDown correction.
    pub basis_conversion: Option<f64>,
    /// Share in the key-switching inner product.
    pub key_switch: Option<f64>,
    /// Backend calls (ledger records: kernels, copies, clears; an NTT of two memory passes is
    /// one call), one hop.
    pub calls: usize,
    /// GPU compute dispatches of those calls (the ledger's model of the GPU engine, one per
    /// NTT memory pass), one hop.
    pub gpu_dispatches: u64,
}

/// Worst-slot and median bits of one point of the precision ledger.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Bits {
    /// `-log2` of the largest error.
    pub worst: f64,
    /// Median over the slots.
    pub median: f64,
}

/// The precision ledger.
#[derive(Debug, Clone, Serialize)]
pub struct Precision {
    /// The fresh input.
    pub input: Bits,
    /// After the layer.
    pub after_layer: Bits,
    /// After the bootstrap.
    pub after_boot: Bits,
    /// Worst slot after the bootstrap (the headline figure).
    pub bits_after_boot: f64,
    /// Worst slot after `hops` hops.
    pub bits_after_10_hops: f64,
    /// Median after `hops` hops.
    pub median_after_hops: f64,
    /// Hops run.
    pub hops: usize,
}

/// The suite's report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Backend, device, threads, reps.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// Parameter set.
    pub params: String,
    /// Ring degree.
    pub n: usize,
    /// Slots.
    pub slots: usize,
    /// Whether the set meets 128-bit security.
    pub secure: bool,
    /// The bootstrapping configuration.
    pub config: BootConfigReport,
    /// Median hop (ms).
    pub hop_ms: f64,
    /// Every timed hop (ms), in order (each followed by one of the anchor's bootstraps).
    pub hop_ms_runs: Vec<f64>,
    /// Median bootstrap alone (the hop less its layer).
    pub boot_ms: f64,
    /// The stages.
    pub rows: Vec<StageRow>,
    /// Rotation keys (plus conjugation).
    pub rotation_keys: usize,
    /// Every bootstrapping key as held in memory (seeded, packed).
    pub resident_key_bytes: u64,
    /// The same keys with both halves one residue per word.
    pub full_key_bytes: u64,
    /// Key generation (s).
    pub keygen_s: f64,
    /// CoeffToSlot's and SlotToCoeff's diagonals, lifted once and held (not keys).
    pub prepared_diagonal_bytes: u64,
    /// The precision ledger.
    pub precision: Precision,
    /// Failure probability of one bootstrap (Irwin-Hall bound).
    pub failure_probability: f64,
    /// OpenFHE's anchor, as it printed it, or why it did not run.
    pub openfhe: serde_json::Value,
}

/// The configuration in the report.
#[derive(Debug, Clone, Serialize)]
pub struct BootConfigReport {
    /// CoeffToSlot levels.
    pub cts_levels: usize,
    /// SlotToCoeff levels.
    pub stc_levels: usize,
    /// EvalMod's K.
    pub k: u32,
    /// EvalMod's degree.
    pub degree: usize,
    /// Double-angle steps.
    pub double_angle: u32,
    /// log2 of the message-to-Q_0 ratio.
    pub log_ratio: f64,
    /// Sparse-secret encapsulation.
    pub sparse_secret: bool,
    /// Levels a bootstrap consumes.
    pub depth: usize,
    /// Level of a bootstrapped ciphertext.
    pub output_level: usize,
}

/// The layer's activation: the degree-15 Chebyshev interpolant of `sin(pi x / 2)` on `[-1, 1]`
/// (depth 4).
pub fn layer_series() -> Result<ChebyshevSeries> {
    ChebyshevSeries::interpolate(|x| (std::f64::consts::FRAC_PI_2 * x).sin(), -1.0, 1.0, 15)
}

/// A ciphertext of the suite's ledgered backend.
type Ct<B> = Ciphertext<Ledger<B>>;

const STAGES: [&str; 6] = ["layer", "mod_raise", "coeff_to_slot", "eval_mod", "slot_to_coeff", "other"];

fn stage_name(s: BootStage) -> &'static str {
    match s {
        BootStage::ModRaise => "mod_raise",
        BootStage::CoeffToSlot => "coeff_to_slot",
        BootStage::EvalMod => "eval_mod",
        BootStage::SlotToCoeff => "slot_to_coeff",
        BootStage::Prepare | BootStage::Decapsulate => "other",
    }
}

fn bits(want: &[Complex64], got: &[Complex64]) -> Result<Bits> {
    let s = precision_stats(want, got)?;
    Ok(Bits { worst: s.min_real, median: s.median_real })
}

/// Per-stage accumulators of one hop.
#[derive(Default, Clone)]
struct StageAcc {
    ms: f64,
    key_bytes: u64,
    bytes: u64,
    dispatch_ns: u64,
    ntt_ns: u64,
    bconv_ns: u64,
    ks_ns: u64,
    calls: usize,
    gpu_dispatches: u64,
}

impl StageAcc {
    fn add(&mut self, ms: f64, records: &[Record]) {
        self.ms += ms;
        for r in records {
            let ns = r.elapsed_ns.unwrap_or(0);
            self.key_bytes += r.key_bytes;
            self.bytes += r.bytes_read + r.bytes_written;
            self.dispatch_ns += ns;
            self.calls += 1;
            self.gpu_dispatches += r.gpu_dispatches;
            match stage_of(r.kernel) {
                StageKind::Ntt => self.ntt_ns += ns,
                StageKind::BasisConversion => self.bconv_ns += ns,
                StageKind::KeySwitchInnerProduct => self.ks_ns += ns,
                _ => {}
            }
        }
    }
}

/// Runs the suite on the CPU backend (in a rayon pool of `config.threads`), every dispatch
/// timed.
pub fn run(config: &Config) -> Result<Report> {
    let backend = CpuBackend::new(RingContext::new(&config.params)?);
    run_with(backend, super::machine(), true, config)
}

/// Runs the suite on `backend` (labelled `device` in the report), its host work in a rayon
/// pool of `config.threads`. With `dispatch_times` every dispatch is timed (the ledger waits
/// for each: right for the CPU, whose dispatches run synchronously; on a GPU it serialises the
/// queue) and the rows carry the NTT, base-conversion and key-switch shares; without, those
/// shares are `null` and only the stages' wall times (each ended by a flush) are measured.
/// The ring is `backend`'s; it must be `config.params`'.
pub fn run_with<B: Backend>(backend: B, device: String, dispatch_times: bool, config: &Config) -> Result<Report> {
    if config.params.scheme() != Scheme::Ckks {
        return Err(Error::InvalidField { field: "params", reason: "the boot suite needs a CKKS set" });
    }
    if config.reps == 0 || config.hops == 0 {
        return Err(Error::InvalidField { field: "reps", reason: "reps and hops must be at least 1" });
    }
    let ring_id = backend.context().params().id();
    if ring_id != config.params.id() {
        return Err(Error::ParameterMismatch { expected: config.params.id(), found: ring_id });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.threads.max(1))
        .build()
        .map_err(|e| Error::Backend { backend: "cpu", reason: format!("rayon pool: {e}") })?;
    let mut anchor = if config.openfhe { Some(Anchor::spawn(config)) } else { None };
    let ledger = Ledger::new(backend);
    ledger.set_timed(dispatch_times);
    let mut report = pool.install(|| run_ours(config, ledger, device, anchor.as_mut()))?;
    report.openfhe = match anchor {
        Some(a) => a.finish(),
        None => serde_json::json!({ "skipped": "--no-openfhe" }),
    };
    Ok(report)
}

/// OpenFHE's anchor script in `--serve` mode: one bootstrap per request, its JSON at the end;
/// or the reason it is not running.
struct Anchor {
    state: std::result::Result<AnchorProcess, String>,
}

struct AnchorProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    stderr: Option<std::thread::JoinHandle<String>>,
    ready: bool,
}

impl AnchorProcess {
    /// The last line of the anchor's error output (joins the thread that drains it).
    fn stderr_tail(&mut self) -> String {
        let text = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        text.lines().last().unwrap_or("").to_owned()
    }
}

impl Anchor {
    fn spawn(config: &Config) -> Self {
        let python =
            config.openfhe_python.clone().unwrap_or_else(|| crate::repo_path("benches/anchors/.venv/bin/python"));
        let script = crate::repo_path("benches/anchors/openfhe_ckks_boot.py");
        let script = script.as_path();
        if !python.exists() || !script.exists() {
            return Self {
                state: Err(format!(
                    "not installed ({} or {} missing; run benches/anchors/setup.sh)",
                    crate::shown(&python),
                    crate::shown(script)
                )),
            };
        }
        let mut cmd = Command::new(&python);
        cmd.arg(script)
            .args(["--serve", "--runs", &config.reps.to_string(), "--threads", &config.threads.max(1).to_string()])
            .args(&config.openfhe_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let state = match cmd.spawn() {
            Ok(mut child) => match (child.stdin.take(), child.stdout.take()) {
                (Some(stdin), Some(stdout)) => {
                    // Drained on a thread so that a chatty anchor never blocks on a full pipe.
                    let stderr = child.stderr.take().map(|mut e| {
                        std::thread::spawn(move || {
                            let mut text = String::new();
                            let _ = std::io::Read::read_to_string(&mut e, &mut text);
                            text
                        })
                    });
                    Ok(AnchorProcess {
                        child,
                        stdin: Some(stdin),
                        lines: BufReader::new(stdout).lines(),
                        stderr,
                        ready: false,
                    })
                }
                _ => Err("no pipes to the anchor".to_owned()),
            },
            Err(e) => Err(format!("cannot start {}: {e}", python.display())),
        };
        Self { state }
    }

    /// Waits for the anchor's setup (once), then has it run one bootstrap and waits for it.
    /// A failure is kept (the rest of the run goes on without the anchor).
    fn step(&mut self) {
        let Ok(p) = &mut self.state else { return };
        let result = (|| -> std::result::Result<(), String> {
            if !p.ready {
                let line = p.lines.next().ok_or("the anchor ended before its setup")?.map_err(|e| e.to_string())?;
                if serde_json::from_str::<serde_json::Value>(&line).ok().and_then(|v| v.get("ready").cloned())
                    != Some(serde_json::Value::Bool(true))
                {
                    return Err(format!("unexpected line from the anchor: {line}"));
                }
                p.ready = true;
            }
            let stdin = p.stdin.as_mut().ok_or("the anchor's input is closed")?;
            stdin.write_all(b"run\n").and_then(|()| stdin.flush()).map_err(|e| e.to_string())?;
            p.lines.next().ok_or("the anchor ended during a bootstrap")?.map_err(|e| e.to_string())?;
            Ok(())
        })();
        if let Err(e) = result {
            let stderr = self.finish_process();
            self.state = Err(format!("{e}; {stderr}"));
        }
    }

    /// Closes the anchor's input, waits for it and returns the last line of its error output.
    fn finish_process(&mut self) -> String {
        let Ok(p) = &mut self.state else { return String::new() };
        p.stdin = None;
        let _ = p.child.wait();
        AnchorProcess::stderr_tail(p)
    }

    /// The anchor's JSON (its last line), or `{"error": ...}`.
    fn finish(mut self) -> serde_json::Value {
        if let Ok(p) = &mut self.state {
            // Closing stdin ends the runs; the JSON is the last line.
            p.stdin = None;
            let last = p.lines.by_ref().map_while(std::result::Result::ok).last();
            let status = p.child.wait();
            let stderr = AnchorProcess::stderr_tail(p);
            return match (last.and_then(|l| serde_json::from_str::<serde_json::Value>(&l).ok()), status) {
                (Some(v), Ok(s)) if s.success() && v.get("bootstrap").is_some() => v,
                (_, Ok(s)) => serde_json::json!({ "error": format!("exit {s}: {stderr}") }),
                (_, Err(e)) => serde_json::json!({ "error": format!("anchor: {e}") }),
            };
        }
        serde_json::json!({ "error": self.state.err().unwrap_or_default() })
    }
}

fn run_ours<B: Backend>(
    config: &Config,
    ledger: Ledger<B>,
    device: String,
    mut anchor: Option<&mut Anchor>,
) -> Result<Report> {
    let params = &config.params;
    let backend_name = ledger.name();
    let timed = ledger.is_timed();
    let ckks = Ckks::new(ledger, ScalePolicy::Double)?;
    let n = params.n();
    let slots = config.slots.unwrap_or(n / 2);
    let series = layer_series()?;
    // The bootstrap returns the layer's free input scale (2 D for a series on [-1, 1]).
    let (lo, hi) = series.interval();
    let factor = 4.0 / (hi - lo);
    let boot_config = BootConfig { output_scale_factor: factor, ..BootConfig::new(slots) };
    let boot = Bootstrapper::new(&ckks, boot_config.clone())?;
    let be = ckks.backend();

    // Keys (untimed), held seeded and packed.
    let start = Instant::now();
    let sk = ckks.gen_secret_key_from_seed(&[config.seed; 32])?;
    let mut keys = boot.gen_keys(&ckks, &sk, Some(&[config.seed.wrapping_add(1); 32]))?;
    let full_key_bytes = keys.resident_bytes(be);
    keys.eval = keys.eval.into_seeded().into_packed(be)?;
    let keygen_s = start.elapsed().as_secs_f64();
    let resident_key_bytes = keys.resident_bytes(be);
    let rotation_keys = keys.eval.galois.len();
    let prepared = boot.prepare(&ckks)?;
    let prepared_bytes = prepared.resident_bytes(be);
    be.take();

    // Inputs at the top level.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::from(config.seed));
    let x: Vec<Complex64> = (0..slots).map(|_| Complex64::new(rng.random_range(-1.0..1.0), 0.0)).collect();
    // A fresh input where a bootstrap leaves its output: the output level, the layer's scale.
    let level = boot.output_level();
    let fresh = ckks.encrypt_symmetric(&sk, &ckks.encode(&x, boot.output_scale(), slots, level)?)?;
    let plain_layer =
        |v: &[Complex64]| -> Vec<Complex64> { v.iter().map(|z| Complex64::new(series.evaluate(z.re), 0.0)).collect() };

    // One hop: the layer to the entry scale, then the bootstrap; stages timed and ledgered.
    let hop = |ct: &Ct<B>, acc: Option<&mut Vec<StageAcc>>| -> Result<(Ct<B>, Ct<B>)> {
        let mut local = vec![StageAcc::default(); STAGES.len()];
        be.take();
        let t0 = Instant::now();
        let layered = ckks.eval_chebyshev_to(ct, &series, &keys.eval, ckks.default_scale())?;
        be.flush()?;
        let mut last = Instant::now();
        if let Some(a) = local.get_mut(0) {
            a.add((last - t0).as_secs_f64() * 1e3, &be.take());
        }
        let out = boot.bootstrap_with(&ckks, &layered, &keys, Some(&prepared), |stage| {
            let now = Instant::now();
            let i = STAGES.iter().position(|s| *s == stage_name(stage)).unwrap_or(STAGES.len() - 1);
            if let Some(a) = local.get_mut(i) {
                a.add((now - last).as_secs_f64() * 1e3, &be.take());
            }
            last = now;
            Ok(())
        })?;
        if let Some(acc) = acc {
            acc.extend(local);
        }
        Ok((layered, out))
    };

    // Warm-up and the first point of the precision ledger.
    let input_bits = bits(&x, &ckks.decrypt(&sk, &fresh)?)?;
    let (layered, booted) = hop(&fresh, None)?;
    let want_layer = plain_layer(&x);
    let after_layer = bits(&want_layer, &ckks.decrypt(&sk, &layered)?)?;
    let after_boot = bits(&want_layer, &ckks.decrypt(&sk, &booted)?)?;

    // Timed hops.
    let mut per_hop: Vec<Vec<StageAcc>> = Vec::with_capacity(config.reps);
    let mut hop_ms = Vec::with_capacity(config.reps);
    for _ in 0..config.reps {
        let mut acc = Vec::new();
        let t = Instant::now();
        hop(&fresh, Some(&mut acc))?;
        hop_ms.push(t.elapsed().as_secs_f64() * 1e3);
        per_hop.push(acc);
        if let Some(a) = anchor.as_deref_mut() {
            a.step();
        }
    }

    // Hops of the precision ledger (the first one is above).
    let mut want = want_layer;
    let mut ct = booted;
    for _ in 1..config.hops {
        let (_, out) = hop(&ct, None)?;
        want = plain_layer(&want);
        ct = out;
    }
    let after_hops = bits(&want, &ckks.decrypt(&sk, &ct)?)?;

    let (median_hop, _) = median_p95(&mut hop_ms.clone());
    let mut rows = Vec::with_capacity(STAGES.len());
    for (i, name) in STAGES.iter().enumerate() {
        let mut ms: Vec<f64> = per_hop.iter().filter_map(|h| h.get(i)).map(|a| a.ms).collect();
        let (m, _) = median_p95(&mut ms);
        let first = per_hop.first().and_then(|h| h.get(i)).cloned().unwrap_or_default();
        let share = |ns: u64| match (timed, first.dispatch_ns) {
            (false, _) => None,
            (true, 0) => Some(0.0),
            (true, all) => Some(ns as f64 / all as f64),
        };
        rows.push(StageRow {
            stage: name,
            ms: m,
            share: if median_hop > 0.0 { m / median_hop } else { 0.0 },
            key_bytes: first.key_bytes,
            bytes: first.bytes,
            ntt: share(first.ntt_ns),
            basis_conversion: share(first.bconv_ns),
            key_switch: share(first.ks_ns),
            calls: first.calls,
            gpu_dispatches: first.gpu_dispatches,
        });
    }
    let layer_ms = rows.first().map_or(0.0, |r| r.ms);
    Ok(Report {
        header: ReportHeader::new(backend_name, device, config.reps),
        params: params.name().to_string(),
        n,
        slots,
        secure: !params.is_insecure(),
        config: BootConfigReport {
            cts_levels: boot_config.cts_levels,
            stc_levels: boot_config.stc_levels,
            k: boot_config.k,
            degree: boot_config.degree,
            double_angle: boot_config.double_angle,
            log_ratio: boot_config.log_ratio,
            sparse_secret: boot_config.sparse_secret,
            depth: boot.depth(),
            output_level: boot.output_level(),
        },
        hop_ms: median_hop,
        hop_ms_runs: hop_ms.clone(),
        boot_ms: median_hop - layer_ms,
        rows,
        rotation_keys,
        resident_key_bytes,
        full_key_bytes,
        keygen_s,
        prepared_diagonal_bytes: prepared_bytes,
        precision: Precision {
            input: input_bits,
            after_layer,
            after_boot,
            bits_after_boot: after_boot.worst,
            bits_after_10_hops: after_hops.worst,
            median_after_hops: after_hops.median,
            hops: config.hops,
        },
        failure_probability: boot.failure_probability(n)?,
        openfhe: serde_json::Value::Null,
    })
}

impl Report {
    /// The report as a text table.
    #[must_use]
    pub fn table(&self) -> String {
        let mut s = format!(
            "CKKS hop at {} (N = {}, {} slots, {}): hop {:.0} ms, bootstrap {:.0} ms; {} rotation keys, {:.1} MB resident \
             (seeded + packed; {:.1} MB full); failure probability {:.2e}\n",
            self.params,
            self.n,
            self.slots,
            if self.secure { "128-bit" } else { "INSECURE test ring" },
            self.hop_ms,
            self.boot_ms,
            self.rotation_keys,
            self.resident_key_bytes as f64 / 1e6,
            self.full_key_bytes as f64 / 1e6,
            self.failure_probability,
        );
        s.push_str("stage           ms      share  key MB   NTT   bconv  keysw   calls    gpu\n");
        let pct = |x: Option<f64>| x.map_or_else(|| "    -".to_string(), |x| format!("{:>4.0}%", 100.0 * x));
        for r in &self.rows {
            s.push_str(&format!(
                "{:<14} {:>8.1} {:>6.1}% {:>7.1} {} {} {} {:>7} {:>6}\n",
                r.stage,
                r.ms,
                100.0 * r.share,
                r.key_bytes as f64 / 1e6,
                pct(r.ntt),
                pct(r.basis_conversion),
                pct(r.key_switch),
                r.calls,
                r.gpu_dispatches
            ));
        }
        let p = &self.precision;
        s.push_str(&format!(
            "precision (bits, worst / median): input {:.1} / {:.1}, after layer {:.1} / {:.1}, after bootstrap {:.1} / {:.1}, \
             after {} hops {:.1} / {:.1}\n",
            p.input.worst,
            p.input.median,
            p.after_layer.worst,
            p.after_layer.median,
            p.after_boot.worst,
            p.after_boot.median,
            p.hops,
            p.bits_after_10_hops,
            p.median_after_hops
        ));
        s.push_str(&format!("OpenFHE: {}\n", self.openfhe));
        s
    }
}
