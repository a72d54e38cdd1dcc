//! `wgfhe bench --suite ledger`: where the time of a composite job goes, stage by stage, in the
//! style of a CKKS bootstrapping cost ledger.
//!
//! Jobs: `hmult_relin` (two fresh top-level ciphertexts, product and relinearisation),
//! `rotation` (column rotation by one), `lr_batch` (the server's layer of one MNIST logistic
//! regression batch, `sum_i w_i x_i + b` over one ciphertext per pixel, under a BXT variant)
//! and `cnn_relu` (a ReLU-with-requantisation lookup table, [`crate::compare::lut`], on the
//! ciphertexts of one CNN layer). The LR model and the CNN inputs are synthetic (seeded weights
//! and pixels through [`crate::ml::lr::QuantLr`]; the table from [`Lut::relu_requant`]), so the
//! suite needs no data set; only the shapes matter for the cost.
//!
//! Method: keys and inputs are made outside the timed region; each job runs once as a warm-up,
//! then `reps` times on a timed ledger ([`Ledger::timed`]), which synchronises the device around
//! every dispatch and host transfer and records each one's wall time. Each dispatch is mapped
//! to a stage ([`stage_of`]); a stage's time is the median over the runs of its summed
//! dispatch times, and its share is that over the median wall time of the whole job. `host`
//! is the rest of the wall time (scheme logic, encoding, allocation, queue submission).
//! Timing every dispatch serialises the queue, so the totals are those of a synchronous device.

use std::time::Instant;

use serde::Serialize;

use crate::backend::ledger::{Ledger, Record};
use crate::backend::Backend;
use crate::bgv::{Bgv, Ciphertext};
use crate::compare::lut::{eval_lut_bounded, Bounded, Lut};
use crate::compress::{Bxt, Variant, Weight};
use crate::error::{Error, Result};
use crate::math::zq::Modulus;
use crate::ml::lr::QuantLr;
use crate::params::Parameters;

use super::kernels::median_p95;
use super::ReportHeader;

/// The stages, in report order.
pub const STAGES: [&str; 10] = [
    "ntt",
    "basis_conversion",
    "key_switch_inner_product",
    "automorphism",
    "elementwise",
    "limb_copies",
    "prng_regeneration",
    "fused",
    "transfers",
    "host",
];

/// The stage of a dispatch: `ntt` (forward and inverse), `basis_conversion` (`base_convert` and
/// the divide-and-round correction `scale_down_correction` of modulus switching, rescaling and
/// key switching's ModDown), `key_switch_inner_product`, `automorphism`, `elementwise` (add,
/// sub, neg, mul, mul_add, mul_scalar), `limb_copies` (duplicate, gather), `prng_regeneration`
/// (`uniform`) and `fused` (a fused program: a BXT kernel, which does element-wise arithmetic,
/// regenerates `a` halves from seeds and packs or unpacks limbs in the same pass, so its time is
/// not split, or the last pass of a divide-and-round, `x D^{-1} + corr` plus an addend).
#[must_use]
pub fn stage_of(kernel: &str) -> &'static str {
    match kernel {
        "ntt_forward" | "ntt_inverse" => "ntt",
        "base_convert" | "scale_down_correction" => "basis_conversion",
        "key_switch_inner_product" => "key_switch_inner_product",
        "automorphism" => "automorphism",
        "duplicate" | "gather_limbs" => "limb_copies",
        "uniform" => "prng_regeneration",
        "fused" => "fused",
        _ => "elementwise",
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Parameters of `hmult_relin` and `rotation`.
    pub hmult: Parameters,
    /// Parameters of `lr_batch`.
    pub lr: Parameters,
    /// Parameters of `cnn_relu`.
    pub cnn: Parameters,
    /// Pixels (input ciphertexts) of the LR batch (784 for MNIST).
    pub lr_pixels: usize,
    /// BXT variant of the LR batch.
    pub lr_variant: Variant,
    /// Domain `[-d, d]` of the ReLU table.
    pub relu_domain: u64,
    /// Ciphertexts (channels) of the ReLU layer.
    pub relu_channels: usize,
    /// Timed runs per job.
    pub reps: usize,
}

/// One stage of one job.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    /// Stage name ([`STAGES`]).
    pub stage: &'static str,
    /// Median time over the runs.
    pub ms: f64,
    /// `ms` over the job's median wall time.
    pub share: f64,
    /// Dispatches per run (transfers for `transfers`, 0 for `host`).
    pub dispatches: u64,
    /// Bytes moved per run (ledger; for `transfers` the host bytes).
    pub bytes: u64,
}

/// The ledger of one job.
#[derive(Debug, Clone, Serialize)]
pub struct Job {
    /// `hmult_relin`, `rotation`, `lr_batch` or `cnn_relu`.
    pub job: &'static str,
    /// Parameter set.
    pub params: String,
    /// `N`.
    pub n: usize,
    /// Ciphertext limbs of the inputs.
    pub limbs: usize,
    /// What the job is, in words (sizes, variant, synthetic inputs).
    pub detail: String,
    /// Median wall time of the job on the timed ledger.
    pub total_ms: f64,
    /// 95th percentile of the wall time.
    pub p95_ms: f64,
    /// The stages, in [`STAGES`] order (stages with no dispatch included, at 0).
    pub stages: Vec<Stage>,
}

/// The report of `wgfhe bench --suite ledger --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Backend, device, threads and timed runs per job.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// The jobs.
    pub jobs: Vec<Job>,
}

/// Per-run stage sums: `(ms, dispatches, bytes)` per stage in [`STAGES`] order.
type Sums = Vec<(f64, u64, u64)>;

fn sums(records: &[Record], transfers: crate::backend::ledger::Transfers, wall_ms: f64) -> Sums {
    let mut s: Sums = vec![(0.0, 0, 0); STAGES.len()];
    let pos = |name: &str| STAGES.iter().position(|&x| x == name);
    for r in records {
        if let Some(slot) = pos(stage_of(r.kernel)).and_then(|i| s.get_mut(i)) {
            slot.0 += r.elapsed_ns.unwrap_or(0) as f64 / 1e6;
            slot.1 += 1;
            slot.2 += r.bytes_read + r.bytes_written;
        }
    }
    if let Some(slot) = pos("transfers").and_then(|i| s.get_mut(i)) {
        *slot = (transfers.elapsed_ns as f64 / 1e6, transfers.count, transfers.bytes);
    }
    let accounted: f64 = s.iter().map(|x| x.0).sum();
    if let Some(slot) = pos("host").and_then(|i| s.get_mut(i)) {
        slot.0 = (wall_ms - accounted).max(0.0);
    }
    s
}

/// Times `job` on the timed ledger `ledger`: one warm-up, then `reps` runs.
fn time_job<B: Backend, T>(
    ledger: &Ledger<B>,
    reps: usize,
    mut job: impl FnMut() -> Result<T>,
) -> Result<(f64, f64, Vec<Stage>)> {
    drop(job()?);
    ledger.synchronize()?;
    ledger.take();
    ledger.take_transfers();
    let mut walls = Vec::with_capacity(reps);
    let mut runs: Vec<Sums> = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        let out = job()?;
        ledger.synchronize()?;
        let wall = start.elapsed().as_secs_f64() * 1e3;
        drop(out);
        runs.push(sums(&ledger.take(), ledger.take_transfers(), wall));
        walls.push(wall);
    }
    let (total, p95) = median_p95(&mut walls);
    let stages = STAGES
        .iter()
        .enumerate()
        .map(|(i, &stage)| {
            let mut ms: Vec<f64> = runs.iter().filter_map(|r| r.get(i).map(|x| x.0)).collect();
            let (m, _) = median_p95(&mut ms);
            let (dispatches, bytes) = runs.first().and_then(|r| r.get(i)).map_or((0, 0), |x| (x.1, x.2));
            Stage { stage, ms: m, share: if total > 0.0 { m / total } else { 0.0 }, dispatches, bytes }
        })
        .collect();
    Ok((total, p95, stages))
}

/// A seeded xorshift stream.
fn stream(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

fn job_hmult_rotation<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, c: &Config) -> Result<Vec<Job>> {
    let bgv = Bgv::new(Ledger::timed(make(&c.hmult)?))?;
    let ledger = bgv.backend();
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &[1], false)?;
    let t = u64::from(bgv.plaintext_modulus());
    let mut next = stream(0x5eed);
    let slots = bgv.encoder().slots().max(1);
    let mut fresh = || -> Result<Ciphertext<Ledger<B>>> {
        let v: Vec<u64> = (0..slots).map(|_| next() % t).collect();
        bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&v)?)
    };
    let (x, y) = (fresh()?, fresh()?);
    let limbs = c.hmult.q().len();
    let relin_mb = keys.relin.as_ref().map_or(0, |r| r.0.resident_bytes(ledger)) as f64 / 1e6;
    let g = bgv.column_rotation_element(1);
    let galois_mb = keys.galois.get(&g).map_or(0, |k| k.key.resident_bytes(ledger)) as f64 / 1e6;
    let mut jobs = Vec::new();
    let (total, p95, stages) = time_job(ledger, c.reps, || bgv.mul_relin(&x, &y, &keys))?;
    jobs.push(Job {
        job: "hmult_relin",
        params: c.hmult.name().to_string(),
        n: c.hmult.n(),
        limbs,
        detail: format!(
            "two fresh ciphertexts at the top level, dnum {}, relinearisation key {relin_mb:.1} MB",
            c.hmult.dnum()
        ),
        total_ms: total,
        p95_ms: p95,
        stages,
    });
    let (total, p95, stages) = time_job(ledger, c.reps, || bgv.rotate_columns(&x, 1, &keys))?;
    jobs.push(Job {
        job: "rotation",
        params: c.hmult.name().to_string(),
        n: c.hmult.n(),
        limbs,
        detail: format!(
            "column rotation by 1 of a fresh ciphertext, dnum {}, Galois key {galois_mb:.1} MB",
            c.hmult.dnum()
        ),
        total_ms: total,
        p95_ms: p95,
        stages,
    });
    Ok(jobs)
}

fn job_lr<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, c: &Config) -> Result<Job> {
    let bgv = Bgv::new(Ledger::timed(make(&c.lr)?))?;
    let ledger = bgv.backend();
    let t = u64::from(bgv.plaintext_modulus());
    let mut next = stream(0x1a2b);
    let weights: Vec<i64> = (0..c.lr_pixels).map(|_| (next() % 15) as i64 - 7).collect();
    let model = QuantLr::new(weights, (next() % 101) as i64 - 50, crate::ml::lr::PIXEL_BITS)?;
    if model.bound().saturating_mul(2) >= t {
        return Err(Error::BoundTooLarge { bound: model.bound(), limit: (t - 1) / 2 });
    }
    let slots = bgv.encoder().slots();
    if slots == 0 {
        return Err(Error::BatchingUnavailable { t, n: c.lr.n() as u64 });
    }
    let sk = bgv.gen_secret_key()?;
    let bxt = Bxt::new(&bgv, c.lr_variant);
    let tm = Modulus::new(t)?;
    let bias = bgv.encoder().encode(&vec![u64::from(tm.reduce_i64(model.bias())); slots])?;
    let q_max = model.q_max().max(1) as u64;
    let cts = (0..c.lr_pixels)
        .map(|_| {
            let column: Vec<u64> = (0..slots).map(|_| next() % (q_max + 1)).collect();
            bxt.encrypt(&sk, &bgv.encoder().encode(&column)?)
        })
        .collect::<Result<Vec<_>>>()?;
    let terms: Vec<_> = model.weights().iter().zip(&cts).map(|(&w, ct)| (Weight::Int(w), ct)).collect();
    let (total, p95, stages) = time_job(ledger, c.reps, || bxt.weighted_sum(&terms, Some(&bias)))?;
    Ok(Job {
        job: "lr_batch",
        params: c.lr.name().to_string(),
        n: c.lr.n(),
        limbs: c.lr.q().len(),
        detail: format!(
            "sum of {} pixel ciphertexts times integer weights plus bias, {} images per batch, variant {}, \
             synthetic model and pixels",
            c.lr_pixels,
            slots,
            c.lr_variant.name()
        ),
        total_ms: total,
        p95_ms: p95,
        stages,
    })
}

fn job_relu<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, c: &Config) -> Result<Job> {
    let bgv = Bgv::new(Ledger::timed(make(&c.cnn)?))?;
    let ledger = bgv.backend();
    let t = bgv.plaintext_modulus();
    let d = c.relu_domain.max(1);
    // Requantisation as in the CNN: ReLU, then a right shift and a clip to 4 bits.
    let shift = (64 - d.leading_zeros()).saturating_sub(4);
    let lut = Lut::relu_requant(t, d, 1, shift, 15)?;
    let slots = bgv.encoder().slots();
    if slots == 0 {
        return Err(Error::BatchingUnavailable { t: u64::from(t), n: c.cnn.n() as u64 });
    }
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &[], false)?;
    let tm = Modulus::new(u64::from(t))?;
    let mut next = stream(0xc0ff);
    let inputs = (0..c.relu_channels.max(1))
        .map(|_| {
            let v: Vec<u64> =
                (0..slots).map(|_| u64::from(tm.reduce_i64((next() % (2 * d + 1)) as i64 - d as i64))).collect();
            Bounded::fresh(&bgv, bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&v)?)?, d)
        })
        .collect::<Result<Vec<_>>>()?;
    let (total, p95, stages) = time_job(ledger, c.reps, || {
        inputs.iter().map(|x| eval_lut_bounded(&bgv, &keys, x, &lut).map(|(y, _)| y)).collect::<Result<Vec<_>>>()
    })?;
    Ok(Job {
        job: "cnn_relu",
        params: c.cnn.name().to_string(),
        n: c.cnn.n(),
        limbs: c.cnn.q().len(),
        detail: format!(
            "ReLU-requantisation table on [-{d}, {d}] (degree {}), {} channel ciphertext(s), synthetic inputs",
            lut.degree(),
            c.relu_channels.max(1)
        ),
        total_ms: total,
        p95_ms: p95,
        stages,
    })
}

/// Runs the four jobs with backends made by `make`, labelled `device`.
pub fn run<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, device: String, config: &Config) -> Result<Report> {
    let mut jobs = job_hmult_rotation(make, config)?;
    jobs.push(job_lr(make, config)?);
    jobs.push(job_relu(make, config)?);
    Ok(Report { header: ReportHeader::new(make(&config.lr)?.name(), device, config.reps.max(1)), jobs })
}

impl Report {
    /// A fixed-width table: one block per job, one line per stage.
    #[must_use]
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "stage ledger on {} ({}), {} threads, median of {} runs on a timed ledger",
            self.header.backend, self.header.device, self.header.threads, self.header.reps
        );
        for j in &self.jobs {
            let _ = writeln!(
                s,
                "\n{} ({}, N = {}, {} limbs): {:.2} ms (p95 {:.2}) - {}",
                j.job, j.params, j.n, j.limbs, j.total_ms, j.p95_ms, j.detail
            );
            let _ = writeln!(s, "  {:<26} {:>10} {:>7} {:>6} {:>10}", "stage", "ms", "share", "disp", "MB");
            for st in &j.stages {
                let _ = writeln!(
                    s,
                    "  {:<26} {:>10.3} {:>6.1}% {:>6} {:>10.3}",
                    st.stage,
                    st.ms,
                    100.0 * st.share,
                    st.dispatches,
                    st.bytes as f64 / 1e6
                );
            }
        }
        s
    }
}
