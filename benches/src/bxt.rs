//! `wgfhe bench --suite bxt`: PADD, PMULT, HADD, HMULT, HROTATE and a fused 16-input
//! `sum_i w_i x_i + b` under every BXT variant, with the traffic ledger's counts and medians of
//! interleaved timings.
//!
//! Method: keys and the 16 input ciphertexts are made outside the timed region (one encryption
//! per input, compressed per variant from the same ciphertexts). Each (operation, variant) runs
//! once as a warm-up, which is also the run whose ledger records are reported; then `reps`
//! rounds each run every operation under every variant in turn (interleaved, so drift in the
//! machine's speed hits every variant alike), and the report gives the median and the 95th
//! percentile. `speedup` is the baseline's median over the variant's median for the same
//! operation in the same run. The `baseline64` rows are computed, not timed: the baseline's
//! bytes with every residue (and table entry) in a 64-bit word holding the same moduli, the
//! layout of 64-bit-word libraries such as 100x.

use std::io::Write;
use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use serde::Serialize;

use wgfhe::backend::ledger::{Ledger, Record, Totals};
use wgfhe::backend::Backend;
use wgfhe::bgv::{Bgv, Ciphertext, EvaluationKeys, Plaintext};
use wgfhe::compress::{Bxt, BxtCiphertext, Variant, Weight};
use wgfhe::error::{Error, Result};

use super::ReportHeader;

/// Inputs of the fused weighted sum.
pub const FUSED_INPUTS: usize = 16;

/// The operations of the suite, in report order.
pub const OPS: [&str; 6] = ["padd", "pmult", "hadd", "hmult", "hrotate", "fused_sum16"];

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Operation.
    pub op: &'static str,
    /// Variant name (`baseline`, `c`, `cs`, `cso`, `cso+k`, `baseline64`).
    pub variant: &'static str,
    /// Bytes read from device memory (ciphertext, key, plaintext and table bytes).
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Part of `bytes_read` that is ciphertext limbs.
    pub ciphertext_bytes: u64,
    /// Part of `bytes_read` that is key limbs.
    pub key_bytes: u64,
    /// Part of `bytes_read` that is plaintext limbs.
    pub plaintext_bytes: u64,
    /// Part of `bytes_read` that is constant tables.
    pub table_bytes: u64,
    /// Generator words of first candidates (one per regenerated residue; fallback blocks of
    /// rejected residues are not counted).
    pub prng_words: u64,
    /// Modular multiplications.
    pub modmuls: u64,
    /// GPU compute dispatches of the operation's backend calls (the ledger's model of the GPU
    /// engine; the same on every backend).
    pub gpu_dispatches: u64,
    /// `modmuls / (bytes_read + bytes_written)`.
    pub arith_intensity: f64,
    /// Median wall time (`null` for computed rows).
    pub median_ms: Option<f64>,
    /// 95th percentile of the wall time.
    pub p95_ms: Option<f64>,
    /// Baseline median over this median, same operation, same run.
    pub speedup: Option<f64>,
}

/// Resident memory of keys and of one fresh ciphertext.
#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// Relinearisation key, `a` parts stored.
    pub relin_key_bytes: u64,
    /// Relinearisation key, `a` parts as a seed.
    pub relin_key_seeded_bytes: u64,
    /// One Galois key, `a` parts stored.
    pub galois_key_bytes: u64,
    /// One Galois key, `a` parts as a seed.
    pub galois_key_seeded_bytes: u64,
    /// One fresh ciphertext under each variant (`[variant, bytes]`).
    pub fresh_ciphertext_bytes: Vec<(&'static str, u64)>,
}

/// The report of `wgfhe bench --suite bxt --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Parameter set.
    pub params: String,
    /// Backend, device, threads and timed rounds per (operation, variant).
    #[serde(flatten)]
    pub header: ReportHeader,
    /// `N`.
    pub n: usize,
    /// Ciphertext limbs at the top level.
    pub limbs: usize,
    /// The rows: for each operation, one per variant and `baseline64`.
    pub rows: Vec<Row>,
    /// Resident memory.
    pub memory: Memory,
}

/// One trace line: a ledger record labelled with its operation and variant.
#[derive(Serialize)]
struct TraceLine<'a> {
    op: &'static str,
    variant: &'static str,
    #[serde(flatten)]
    record: &'a Record,
}

/// Everything one variant's operations read.
struct Inputs<'k, B: Backend> {
    xs: Vec<BxtCiphertext<B>>,
    keys: &'k EvaluationKeys<B>,
}

fn median_p95(times: &mut [f64]) -> (Option<f64>, Option<f64>) {
    if times.is_empty() {
        return (None, None);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times.get(((times.len() - 1) as f64 * q).round() as usize).copied();
    (at(0.5), at(0.95))
}

/// Runs `op` under `bxt`.
fn run_op<B: Backend>(
    op: &str,
    bxt: &Bxt<'_, B>,
    inp: &Inputs<'_, B>,
    w: &Plaintext,
    bias: &Plaintext,
    ints: &[i64],
) -> Result<BxtCiphertext<B>> {
    let x = |i: usize| inp.xs.get(i).ok_or(Error::InvalidField { field: "bench", reason: "missing input" });
    match op {
        "padd" => bxt.add_plain(x(0)?, w),
        "pmult" => bxt.mul_plain(x(0)?, w),
        "hadd" => bxt.add(x(0)?, x(1)?),
        "hmult" => bxt.mul_relin(x(0)?, x(1)?, inp.keys),
        "hrotate" => bxt.rotate_columns(x(0)?, 1, inp.keys),
        "fused_sum16" => {
            let terms: Vec<_> = ints.iter().zip(&inp.xs).map(|(&k, c)| (Weight::Int(k), c)).collect();
            bxt.weighted_sum(&terms, Some(bias))
        }
        _ => Err(Error::InvalidField { field: "bench op", reason: "unknown operation" }),
    }
}

fn row(op: &'static str, variant: &'static str, records: &[Record]) -> Row {
    let t = Totals::of(records);
    let ct: u64 = records.iter().map(Record::ciphertext_bytes).sum();
    Row {
        op,
        variant,
        bytes_read: t.bytes_read,
        bytes_written: t.bytes_written,
        ciphertext_bytes: ct,
        key_bytes: t.key_bytes,
        plaintext_bytes: t.plaintext_bytes,
        table_bytes: t.table_bytes,
        prng_words: t.prng_words,
        modmuls: t.modmuls,
        gpu_dispatches: t.gpu_dispatches,
        arith_intensity: t.arithmetic_intensity(),
        median_ms: None,
        p95_ms: None,
        speedup: None,
    }
}

/// Runs the suite on `backend` (wrapped in a ledger), `reps` timed rounds, writing the labelled
/// ledger records of the warm-up runs to `trace` if given.
///
/// With `timed` the ledger is a timed one ([`Ledger::timed`]): every trace record then carries
/// its dispatch's `elapsed_ns`, taken from the last timed round (not the warm-up, whose first
/// dispatches include pipeline builds). Timing each dispatch serialises the queue, so the
/// medians of a timed run are slower than those of an untimed one.
pub fn run_with<B: Backend>(
    backend: B,
    device: String,
    reps: usize,
    mut trace: Option<&mut dyn Write>,
    timed: bool,
) -> Result<Report> {
    let reps = reps.max(1);
    let bgv = Bgv::new(if timed { Ledger::timed(backend) } else { Ledger::new(backend) })?;
    let ledger = bgv.backend();
    let params = bgv.params().clone();
    let sk = bgv.gen_secret_key()?;
    let t = u64::from(bgv.plaintext_modulus());
    let slots = bgv.encoder().slots();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let values: Vec<Vec<u64>> = (0..FUSED_INPUTS).map(|_| (0..slots).map(|_| next() % t).collect()).collect();
    let w = bgv.encoder().encode(&(0..slots).map(|_| next() % 16).collect::<Vec<_>>())?;
    let bias = bgv.encoder().encode(&(0..slots).map(|_| next() % t).collect::<Vec<_>>())?;
    let ints: Vec<i64> = (0..FUSED_INPUTS).map(|_| (next() % 15) as i64 - 7).collect();
    let fresh: Vec<Ciphertext<Ledger<B>>> =
        values.iter().map(|v| bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(v)?)).collect::<Result<_>>()?;
    let stored_keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
    let seeded_keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?.into_seeded();
    let g = bgv.column_rotation_element(1);
    let memory_keys = |k: &EvaluationKeys<Ledger<B>>| -> (u64, u64) {
        (
            k.relin.as_ref().map_or(0, |r| r.0.resident_bytes(ledger)),
            k.galois.get(&g).map_or(0, |gk| gk.key.resident_bytes(ledger)),
        )
    };
    let (relin_stored, galois_stored) = memory_keys(&stored_keys);
    let (relin_seeded, galois_seeded) = memory_keys(&seeded_keys);
    let mut inputs = Vec::with_capacity(Variant::ALL.len());
    let mut fresh_bytes = Vec::new();
    for v in Variant::ALL {
        let bxt = Bxt::new(&bgv, v);
        let xs = fresh.iter().map(|c| bxt.compress(c.duplicate(ledger)?)).collect::<Result<Vec<_>>>()?;
        fresh_bytes.push((v.name(), xs.first().map_or(0, |c| c.resident_bytes(ledger))));
        // The same keys for every variant, their `a` parts seeded for cso+k.
        let keys = if v.seeded_keys() { &seeded_keys } else { &stored_keys };
        inputs.push(Inputs { xs, keys });
    }
    drop(fresh);
    ledger.take();
    // Warm-up run: the ledger records.
    let mut rows = Vec::new();
    let mut traced: Vec<(&'static str, &'static str, Vec<Record>)> = Vec::new();
    let mut times: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); Variant::ALL.len()]; OPS.len()];
    for op in OPS {
        for (v, inp) in Variant::ALL.into_iter().zip(&inputs) {
            let bxt = Bxt::new(&bgv, v);
            let out = run_op(op, &bxt, inp, &w, &bias, &ints)?;
            ledger.synchronize()?;
            drop(out);
            let records = ledger.take();
            rows.push(row(op, v.name(), &records));
            traced.push((op, v.name(), records));
        }
    }
    // Timed rounds, interleaved.
    for _ in 0..reps {
        for (oi, op) in OPS.into_iter().enumerate() {
            for (vi, (v, inp)) in Variant::ALL.into_iter().zip(&inputs).enumerate() {
                let bxt = Bxt::new(&bgv, v);
                let start = Instant::now();
                let out = run_op(op, &bxt, inp, &w, &bias, &ints)?;
                ledger.synchronize()?;
                let ms = start.elapsed().as_secs_f64() * 1e3;
                drop(out);
                let records = ledger.take();
                if timed {
                    if let Some(slot) = traced.get_mut(oi * Variant::ALL.len() + vi) {
                        slot.2 = records;
                    }
                }
                if let Some(slot) = times.get_mut(oi).and_then(|t| t.get_mut(vi)) {
                    slot.push(ms);
                }
            }
        }
    }
    if let Some(out) = trace.as_mut() {
        for (op, variant, records) in &traced {
            for r in records {
                let line = serde_json::to_string(&TraceLine { op, variant, record: r })
                    .map_err(|e| Error::json("encoding of a trace record", &e))?;
                writeln!(out, "{line}").map_err(|e| Error::io("write the trace", None, &e))?;
            }
        }
    }
    let mut out_rows = Vec::with_capacity(rows.len() + OPS.len());
    for oi in 0..OPS.len() {
        let mut base_median = None;
        for vi in 0..Variant::ALL.len() {
            let Some(mut r) = rows.get(oi * Variant::ALL.len() + vi).cloned() else { continue };
            let (median, p95) = times.get_mut(oi).and_then(|t| t.get_mut(vi)).map_or((None, None), |t| median_p95(t));
            if vi == 0 {
                base_median = median;
            }
            r.median_ms = median;
            r.p95_ms = p95;
            r.speedup = match (base_median, median) {
                (Some(b), Some(m)) if m > 0.0 => Some(b / m),
                _ => None,
            };
            if vi == 0 {
                let mut r64 = r.clone();
                r64.variant = "baseline64";
                for x in [
                    &mut r64.bytes_read,
                    &mut r64.bytes_written,
                    &mut r64.ciphertext_bytes,
                    &mut r64.key_bytes,
                    &mut r64.plaintext_bytes,
                    &mut r64.table_bytes,
                ] {
                    *x *= 2;
                }
                r64.arith_intensity = r.arith_intensity / 2.0;
                r64.median_ms = None;
                r64.p95_ms = None;
                r64.speedup = None;
                out_rows.push(r);
                out_rows.push(r64);
            } else {
                out_rows.push(r);
            }
        }
    }
    Ok(Report {
        params: params.name().to_string(),
        header: ReportHeader::new(ledger.name(), device, reps),
        n: params.n(),
        limbs: params.q().len(),
        rows: out_rows,
        memory: Memory {
            relin_key_bytes: relin_stored,
            relin_key_seeded_bytes: relin_seeded,
            galois_key_bytes: galois_stored,
            galois_key_seeded_bytes: galois_seeded,
            fresh_ciphertext_bytes: fresh_bytes,
        },
    })
}

impl Report {
    /// A fixed-width table.
    #[must_use]
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} on {} ({}), N = {}, {} limbs, {} threads, median of {} interleaved rounds",
            self.params,
            self.header.backend,
            self.header.device,
            self.n,
            self.limbs,
            self.header.threads,
            self.header.reps
        );
        let _ = writeln!(
            s,
            "{:<12} {:<10} {:>12} {:>12} {:>12} {:>10} {:>6} {:>8} {:>10} {:>8}",
            "op", "variant", "read MB", "written MB", "key MB", "prng Mw", "disp", "AI", "median ms", "speedup"
        );
        let mb = |b: u64| b as f64 / 1e6;
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<12} {:<10} {:>12.3} {:>12.3} {:>12.3} {:>10.3} {:>6} {:>8.3} {:>10} {:>8}",
                r.op,
                r.variant,
                mb(r.bytes_read),
                mb(r.bytes_written),
                mb(r.key_bytes),
                r.prng_words as f64 / 1e6,
                r.gpu_dispatches,
                r.arith_intensity,
                r.median_ms.map_or("-".into(), |m| format!("{m:.2}")),
                r.speedup.map_or("-".into(), |x| format!("{x:.2}x")),
            );
        }
        let m = &self.memory;
        let _ = writeln!(
            s,
            "relinearisation key: {:.1} MB stored, {:.1} MB seeded; one Galois key: {:.1} MB, {:.1} MB seeded",
            mb(m.relin_key_bytes),
            mb(m.relin_key_seeded_bytes),
            mb(m.galois_key_bytes),
            mb(m.galois_key_seeded_bytes)
        );
        let fresh: Vec<String> =
            m.fresh_ciphertext_bytes.iter().map(|(v, b)| format!("{v} {:.2} MB", mb(*b))).collect();
        let _ = writeln!(s, "fresh ciphertext: {}", fresh.join(", "));
        s
    }
}
