//! `wgfhe bench --suite ledger`: where the time of a composite job goes, stage by stage, in the
//! style of a CKKS bootstrapping cost ledger.
//!
//! Jobs: `hmult_relin` (two fresh top-level ciphertexts, product and relinearisation),
//! `rotation` (column rotation by one), `lr_batch` (the server's layer of one MNIST logistic
//! regression batch, `sum_i w_i x_i + b` over one ciphertext per pixel, under a BXT variant)
//! and `cnn_relu` (a ReLU-with-requantisation lookup table, [`wgfhe::compare::lut`], on the
//! ciphertexts of one CNN layer). The LR model and the CNN inputs are synthetic (seeded weights
//! and pixels through [`wgfhe_mnist::lr::QuantLr`]; the table from [`Lut::relu_requant`]), so the
//! suite needs no data set; only the shapes matter for the cost.
//!
//! Method: keys and inputs are made outside the timed region; each job runs once as a warm-up,
//! then `reps` times on a timed ledger ([`Ledger::timed`]), which synchronises the device around
//! every dispatch and host transfer and records each one's wall time. Each dispatch is mapped
//! to a stage ([`stage_of`]); a stage's time is the median over the runs of its summed
//! dispatch times, and its share is that over the median wall time of the whole job. `host`
//! is the rest of the wall time (scheme logic, encoding, allocation, queue submission).
//! Timing every dispatch serialises the queue, so the totals are those of a synchronous device.
//!
//! Threads: every job runs once per entry of [`Config::threads`] in a rayon pool of that many
//! threads built by the suite (the runs of the different counts interleaved), and
//! [`Report::scaling`] gives each stage's speedup from the fewest to the most threads: which
//! stages put a second core to work (the CPU backend parallelises across limbs) and which
//! leave it idle (`host`, single-limb work, transfers).

use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use serde::Serialize;

use wgfhe::backend::ledger::{Ledger, Record};
use wgfhe::backend::Backend;
use wgfhe::bgv::{Bgv, Ciphertext};
use wgfhe::compare::lut::{eval_lut_bounded, Bounded, Lut};
use wgfhe::compress::{Bxt, Variant, Weight};
use wgfhe::error::{Error, Result};
use wgfhe::math::zq::Modulus;
use wgfhe::params::Parameters;
use wgfhe_mnist::lr::QuantLr;

use super::kernels::median_p95;
use super::ReportHeader;

/// The stages, in report order.
pub const STAGES: [StageKind; 10] = [
    StageKind::Ntt,
    StageKind::BasisConversion,
    StageKind::KeySwitchInnerProduct,
    StageKind::Automorphism,
    StageKind::Elementwise,
    StageKind::LimbCopies,
    StageKind::PrngRegeneration,
    StageKind::Fused,
    StageKind::Transfers,
    StageKind::Host,
];

/// The stage of a dispatch ([`stage_of`]), of the host transfers, or the host's own time; the
/// discriminant is the stage's index in [`STAGES`]. Written in reports as its
/// [`StageKind::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    /// Forward and inverse NTTs.
    Ntt,
    /// `base_convert` and the divide-and-round correction `scale_down_correction`.
    BasisConversion,
    /// The key-switching inner product.
    KeySwitchInnerProduct,
    /// Galois automorphisms.
    Automorphism,
    /// Add, sub, neg, mul, mul_add, mul_scalar.
    Elementwise,
    /// Duplicates, gathers and the clears of `zeros`.
    LimbCopies,
    /// `uniform`: regeneration of seeded halves.
    PrngRegeneration,
    /// A fused program.
    Fused,
    /// Host-device transfers.
    Transfers,
    /// The wall time outside every kernel and transfer.
    Host,
}

impl StageKind {
    /// The stage's name in reports (`ntt`, `basis_conversion`, ...).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ntt => "ntt",
            Self::BasisConversion => "basis_conversion",
            Self::KeySwitchInnerProduct => "key_switch_inner_product",
            Self::Automorphism => "automorphism",
            Self::Elementwise => "elementwise",
            Self::LimbCopies => "limb_copies",
            Self::PrngRegeneration => "prng_regeneration",
            Self::Fused => "fused",
            Self::Transfers => "transfers",
            Self::Host => "host",
        }
    }

    /// The stage's index in [`STAGES`].
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl std::fmt::Display for StageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// The stage of a dispatch: `ntt` (forward and inverse, in place or out of place with the input
/// formed on load: HMULT's `a_1 b_1` and a rotation's `c_1(X^g)` count here), `basis_conversion` (`base_convert` and
/// the divide-and-round correction `scale_down_correction` of modulus switching, rescaling and
/// key switching's ModDown), `key_switch_inner_product`, `automorphism`, `elementwise` (add,
/// sub, neg, mul, mul_add, mul_scalar), `limb_copies` (duplicate, gather, and the clears of
/// `zeros`), `prng_regeneration`
/// (`uniform`) and `fused` (a fused program: a BXT kernel, which does element-wise arithmetic,
/// regenerates `a` halves from seeds and packs or unpacks limbs in the same pass, so its time is
/// not split, or the last pass of a divide-and-round, `x D^{-1} + corr` plus an addend).
#[must_use]
pub fn stage_of(kernel: &str) -> StageKind {
    match kernel {
        "ntt_forward" | "ntt_inverse" | "ntt_inverse_from" => StageKind::Ntt,
        "base_convert" | "scale_down_correction" => StageKind::BasisConversion,
        "key_switch_inner_product" => StageKind::KeySwitchInnerProduct,
        "automorphism" => StageKind::Automorphism,
        "duplicate" | "gather_limbs" | "zeros" => StageKind::LimbCopies,
        "uniform" => StageKind::PrngRegeneration,
        "fused" => StageKind::Fused,
        _ => StageKind::Elementwise,
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
    /// Thread counts: each job runs in a rayon pool of each size. Empty: one thread.
    pub threads: Vec<usize>,
    /// The jobs to run ([`JOBS`]); empty: all.
    pub jobs: Vec<String>,
}

/// The suite's jobs, in report order.
pub const JOBS: [&str; 4] = ["hmult_relin", "rotation", "lr_batch", "cnn_relu"];

/// One stage of one job.
#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    /// The stage ([`STAGES`]).
    pub stage: StageKind,
    /// Median time over the runs.
    pub ms: f64,
    /// `ms` over the job's median wall time.
    pub share: f64,
    /// Backend calls per run (kernels, copies and clears; transfers for `transfers`, 0 for
    /// `host`).
    pub calls: u64,
    /// GPU compute dispatches of those calls per run (the ledger's model of the GPU engine).
    pub gpu_dispatches: u64,
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
    /// Threads of the rayon pool the job ran in.
    pub threads: usize,
    /// What the job is, in words (sizes, variant, synthetic inputs).
    pub detail: String,
    /// Median wall time of the job on the timed ledger.
    pub total_ms: f64,
    /// 95th percentile of the wall time.
    pub p95_ms: f64,
    /// The stages, in [`STAGES`] order (stages with no dispatch included, at 0).
    pub stages: Vec<Stage>,
    /// What one run of the job costs the GPU engine.
    #[serde(flatten)]
    pub engine: EngineCost,
}

/// Who counted an [`EngineCost`]'s dispatches, submissions and uploads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CountedBy {
    /// The GPU device's own counters.
    Device,
    /// The traffic ledger's model of the GPU engine (a backend without a device).
    #[default]
    Model,
}

impl std::fmt::Display for CountedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Self::Device => "device",
            Self::Model => "model",
        })
    }
}

/// What one run of a job costs the GPU engine, counted on a run with timing off (the
/// synchronisations of the timed runs would be submissions of their own).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineCost {
    /// `device`: `gpu_dispatches`, `submissions` and `uploads` are the GPU device's own counters;
    /// `model`: the traffic ledger's model of what the GPU engine would do with the same calls
    /// ([`wgfhe::backend::ledger`], on a device without immediates: one parameter-arena upload
    /// per submission).
    pub counted_by: CountedBy,
    /// Compute dispatches.
    pub gpu_dispatches: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Host-to-device writes (inputs, parameter arenas; constant tables are resident after the
    /// warm-up run).
    pub uploads: u64,
    /// Limb transforms (forward and inverse).
    pub limb_ntts: u64,
    /// Memory passes of one transform at the set's `N` (the GPU plan, [`Backend::gpu_ntt_plan`]).
    pub ntt_passes: u32,
    /// Bytes the kernels, copies and clears read (ledger).
    pub bytes_read: u64,
    /// Bytes they write.
    pub bytes_written: u64,
    /// GPU: wall time from the call until the operation returns, recorded and submitted, with the
    /// device's work not waited for. CPU (no device, nothing recorded): the job's `host` stage,
    /// the wall time outside the kernels.
    pub host_encode_ms: f64,
    /// GPU: `host_encode_ms / gpu_dispatches` in microseconds, the host's cost of one dispatch
    /// (`null` on the CPU or without dispatches).
    pub host_us_per_dispatch: Option<f64>,
    /// GPU with timestamp queries: the job's device time from the device's timestamps (its
    /// submissions' spans on the device's clock, summed); `null` otherwise.
    pub device_ms: Option<f64>,
}

/// The report of `wgfhe bench --suite ledger --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Backend, device, threads and timed runs per job.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// The jobs, each at every thread count in turn.
    pub jobs: Vec<Job>,
    /// Each job's and stage's speedup from the fewest to the most threads (empty with one
    /// thread count).
    pub scaling: Vec<StageScaling>,
}

/// How one stage of one job scales with threads.
#[derive(Debug, Clone, Serialize)]
pub struct StageScaling {
    /// The job.
    pub job: &'static str,
    /// The stage ([`STAGES`]), or `total` for the job's wall time.
    pub stage: &'static str,
    /// The thread counts compared, fewest then most.
    pub threads: (usize, usize),
    /// The stage's median time at the fewest threads.
    pub ms_fewest: f64,
    /// The stage's median time at the most threads.
    pub ms_most: f64,
    /// `ms_fewest / ms_most` (`null` for a stage without time): 1.0 means the extra threads
    /// went unused.
    pub speedup: Option<f64>,
}

/// Per-run stage sums: `(ms, calls, gpu dispatches, bytes)` per stage in [`STAGES`] order.
type Sums = Vec<(f64, u64, u64, u64)>;

fn sums(records: &[Record], transfers: wgfhe::backend::ledger::Transfers, wall_ms: f64) -> Sums {
    let mut s: Sums = vec![(0.0, 0, 0, 0); STAGES.len()];
    for r in records {
        if let Some(slot) = s.get_mut(stage_of(r.kernel).index()) {
            slot.0 += r.elapsed_ns.unwrap_or(0) as f64 / 1e6;
            slot.1 += 1;
            slot.2 += r.gpu_dispatches;
            slot.3 += r.bytes_read + r.bytes_written;
        }
    }
    if let Some(slot) = s.get_mut(StageKind::Transfers.index()) {
        *slot = (transfers.elapsed_ns as f64 / 1e6, transfers.count, 0, transfers.bytes);
    }
    let accounted: f64 = s.iter().map(|x| x.0).sum();
    if let Some(slot) = s.get_mut(StageKind::Host.index()) {
        slot.0 = (wall_ms - accounted).max(0.0);
    }
    s
}

/// What [`time_job`] measured at one thread count: threads, median and p95 wall time, stages,
/// the engine's cost.
type Timed = (usize, f64, f64, Vec<Stage>, EngineCost);

/// Runs `job` `reps` times (at least once) in `pool` with timing off and counts what one run
/// costs the GPU engine: the device's counters where the backend has a device, else the
/// ledger's model (from the first run). The host time is the median over the runs of the time
/// the job takes to return (its work recorded and submitted, not waited for), the device
/// synchronised before each run.
fn count_job<B: Backend, T: Send>(
    ledger: &Ledger<B>,
    pool: &rayon::ThreadPool,
    reps: usize,
    job: &(impl Fn() -> Result<T> + Sync),
) -> Result<EngineCost> {
    ledger.set_timed(false);
    let counted = (|| -> Result<EngineCost> {
        let mut hosts = Vec::with_capacity(reps.max(1));
        let mut first: Option<EngineCost> = None;
        for _ in 0..reps.max(1) {
            ledger.synchronize()?;
            ledger.take();
            ledger.take_transfers();
            ledger.take_engine();
            let before = ledger.device_counters();
            let (out, host_ms) = pool.install(|| -> Result<(T, f64)> {
                let start = Instant::now();
                let out = job()?;
                Ok((out, start.elapsed().as_secs_f64() * 1e3))
            })?;
            ledger.synchronize()?;
            let after = ledger.device_counters();
            drop(out);
            hosts.push(host_ms);
            let records = ledger.take();
            let model = ledger.take_engine();
            ledger.take_transfers();
            if first.is_some() {
                continue;
            }
            let mut cost = EngineCost {
                counted_by: CountedBy::Model,
                gpu_dispatches: model.gpu_dispatches,
                submissions: model.submissions,
                uploads: model.uploads,
                limb_ntts: model.limb_ntts,
                ntt_passes: ledger.gpu_ntt_plan()?.passes(),
                bytes_read: records.iter().map(|r| r.bytes_read).sum(),
                bytes_written: records.iter().map(|r| r.bytes_written).sum(),
                host_encode_ms: 0.0,
                host_us_per_dispatch: None,
                device_ms: crate::kernels::device_ms(before, after),
            };
            if let (Some(before), Some(after)) = (before, after) {
                let d = after - before;
                cost.counted_by = CountedBy::Device;
                cost.gpu_dispatches = d.dispatches;
                cost.submissions = d.submissions;
                cost.uploads = d.uploads;
            }
            first = Some(cost);
        }
        let mut cost = first.ok_or(Error::InvalidField { field: "reps", reason: "no run" })?;
        cost.host_encode_ms = median_p95(&mut hosts).0;
        if cost.counted_by == CountedBy::Device && cost.gpu_dispatches > 0 {
            cost.host_us_per_dispatch = Some(cost.host_encode_ms * 1e3 / cost.gpu_dispatches as f64);
        }
        Ok(cost)
    })();
    ledger.set_timed(true);
    counted
}

/// Times `job` on the timed ledger `ledger` in each pool: one warm-up per pool, then `reps`
/// rounds, each running the job once per pool (interleaved).
fn time_job<B: Backend, T: Send>(
    ledger: &Ledger<B>,
    reps: usize,
    pools: &super::Pools,
    job: impl Fn() -> Result<T> + Sync,
) -> Result<Vec<Timed>> {
    let run = |pool: &rayon::ThreadPool| -> Result<f64> {
        let (out, wall) = pool.install(|| -> Result<(T, f64)> {
            let start = Instant::now();
            let out = job()?;
            ledger.synchronize()?;
            Ok((out, start.elapsed().as_secs_f64() * 1e3))
        })?;
        drop(out);
        Ok(wall)
    };
    for (_, pool) in pools {
        run(pool)?;
    }
    ledger.take();
    ledger.take_transfers();
    let mut walls = vec![Vec::with_capacity(reps); pools.len()];
    let mut runs: Vec<Vec<Sums>> = vec![Vec::with_capacity(reps); pools.len()];
    for _ in 0..reps.max(1) {
        for ((_, pool), (w, r)) in pools.iter().zip(walls.iter_mut().zip(runs.iter_mut())) {
            let wall = run(pool)?;
            r.push(sums(&ledger.take(), ledger.take_transfers(), wall));
            w.push(wall);
        }
    }
    let mut out = Vec::with_capacity(pools.len());
    for ((threads, pool), (mut walls, runs)) in pools.iter().zip(walls.into_iter().zip(runs)) {
        let (total, p95) = median_p95(&mut walls);
        let stages = STAGES
            .iter()
            .enumerate()
            .map(|(i, &stage)| {
                let mut ms: Vec<f64> = runs.iter().filter_map(|r| r.get(i).map(|x| x.0)).collect();
                let (m, _) = median_p95(&mut ms);
                let (calls, gpu_dispatches, bytes) =
                    runs.first().and_then(|r| r.get(i)).map_or((0, 0, 0), |x| (x.1, x.2, x.3));
                let share = if total > 0.0 { m / total } else { 0.0 };
                Stage { stage, ms: m, share, calls, gpu_dispatches, bytes }
            })
            .collect::<Vec<_>>();
        let mut engine = count_job(ledger, pool, reps, &job)?;
        if engine.counted_by == CountedBy::Model {
            // No device: the host's share is the time outside the kernels.
            engine.host_encode_ms = stages.iter().find(|s| s.stage == StageKind::Host).map_or(0.0, |s| s.ms);
        }
        out.push((*threads, total, p95, stages, engine));
    }
    Ok(out)
}

/// One job per thread count from [`time_job`]'s measurements, described by `template`.
fn jobs_of(template: &Job, timed: Vec<Timed>) -> Vec<Job> {
    timed
        .into_iter()
        .map(|(threads, total_ms, p95_ms, stages, engine)| Job {
            threads,
            total_ms,
            p95_ms,
            stages,
            engine,
            ..template.clone()
        })
        .collect()
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

fn job_hmult_rotation<B: Backend>(
    make: &dyn Fn(&Parameters) -> Result<B>,
    c: &Config,
    pools: &super::Pools,
) -> Result<Vec<Job>> {
    let bgv = Bgv::new(Ledger::timed(make(&c.hmult)?))?;
    let ledger = bgv.backend();
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
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
    if c.wants("hmult_relin") {
        let timed = time_job(ledger, c.reps, pools, || bgv.mul_relin(&x, &y, &keys))?;
        jobs.extend(jobs_of(
            &Job {
                job: "hmult_relin",
                params: c.hmult.name().to_string(),
                n: c.hmult.n(),
                limbs,
                detail: format!(
                    "two fresh ciphertexts at the top level, dnum {}, relinearisation key {relin_mb:.1} MB",
                    c.hmult.dnum()
                ),
                ..Job::empty()
            },
            timed,
        ));
    }
    if !c.wants("rotation") {
        return Ok(jobs);
    }
    let timed = time_job(ledger, c.reps, pools, || bgv.rotate_columns(&x, 1, &keys))?;
    jobs.extend(jobs_of(
        &Job {
            job: "rotation",
            params: c.hmult.name().to_string(),
            n: c.hmult.n(),
            limbs,
            detail: format!(
                "column rotation by 1 of a fresh ciphertext, dnum {}, Galois key {galois_mb:.1} MB",
                c.hmult.dnum()
            ),
            ..Job::empty()
        },
        timed,
    ));
    Ok(jobs)
}

fn job_lr<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, c: &Config, pools: &super::Pools) -> Result<Vec<Job>> {
    let bgv = Bgv::new(Ledger::timed(make(&c.lr)?))?;
    let ledger = bgv.backend();
    let t = u64::from(bgv.plaintext_modulus());
    let mut next = stream(0x1a2b);
    let weights: Vec<i64> = (0..c.lr_pixels).map(|_| (next() % 15) as i64 - 7).collect();
    let model = QuantLr::new(weights, (next() % 101) as i64 - 50, wgfhe_mnist::lr::PIXEL_BITS)?;
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
    // The bias is prepared once for the inputs' level and correction factor (fresh encryptions
    // at the top level), as the LR server does: it is reused by every batch.
    let top = bgv.max_level();
    let bias = bgv.prepare_plain_with_factor(
        &bgv.encoder().encode(&vec![u64::from(tm.reduce_i64(model.bias())); slots])?,
        top,
        bgv.level_correction(top)?,
    )?;
    let q_max = model.q_max().max(1) as u64;
    let cts = (0..c.lr_pixels)
        .map(|_| {
            let column: Vec<u64> = (0..slots).map(|_| next() % (q_max + 1)).collect();
            bxt.encrypt(&sk, &bgv.encoder().encode(&column)?)
        })
        .collect::<Result<Vec<_>>>()?;
    let terms: Vec<_> = model.weights().iter().zip(&cts).map(|(&w, ct)| (Weight::Int(w), ct)).collect();
    let timed = time_job(ledger, c.reps, pools, || bxt.weighted_sum_prepared(&terms, Some(&bias)))?;
    Ok(jobs_of(
        &Job {
            job: "lr_batch",
            params: c.lr.name().to_string(),
            n: c.lr.n(),
            limbs: c.lr.q().len(),
            detail: format!(
                "sum of {} pixel ciphertexts times integer weights plus a prepared bias, {} images per batch, \
                 variant {}, synthetic model and pixels",
                c.lr_pixels,
                slots,
                c.lr_variant.name()
            ),
            ..Job::empty()
        },
        timed,
    ))
}

fn job_relu<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, c: &Config, pools: &super::Pools) -> Result<Vec<Job>> {
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
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation())?;
    let tm = Modulus::new(u64::from(t))?;
    let mut next = stream(0xc0ff);
    let inputs = (0..c.relu_channels.max(1))
        .map(|_| {
            let v: Vec<u64> =
                (0..slots).map(|_| u64::from(tm.reduce_i64((next() % (2 * d + 1)) as i64 - d as i64))).collect();
            Bounded::fresh(&bgv, bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&v)?)?, d)
        })
        .collect::<Result<Vec<_>>>()?;
    let timed = time_job(ledger, c.reps, pools, || {
        inputs.iter().map(|x| eval_lut_bounded(&bgv, &keys, x, &lut).map(|(y, _)| y)).collect::<Result<Vec<_>>>()
    })?;
    Ok(jobs_of(
        &Job {
            job: "cnn_relu",
            params: c.cnn.name().to_string(),
            n: c.cnn.n(),
            limbs: c.cnn.q().len(),
            detail: format!(
                "ReLU-requantisation table on [-{d}, {d}] (degree {}), {} channel ciphertext(s), synthetic inputs",
                lut.degree(),
                c.relu_channels.max(1)
            ),
            ..Job::empty()
        },
        timed,
    ))
}

/// Runs the four jobs with backends made by `make`, labelled `device`, at every thread count.
pub fn run<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, device: String, config: &Config) -> Result<Report> {
    let counts = super::thread_counts(&config.threads);
    let pools = super::pools(&counts)?;
    if config.jobs.iter().any(|j| !JOBS.contains(&j.as_str())) {
        return Err(Error::InvalidField {
            field: "jobs",
            reason: "must be hmult_relin, rotation, lr_batch or cnn_relu",
        });
    }
    let mut jobs = Vec::new();
    if config.wants("hmult_relin") || config.wants("rotation") {
        jobs.extend(job_hmult_rotation(make, config, &pools)?);
    }
    if config.wants("lr_batch") {
        jobs.extend(job_lr(make, config, &pools)?);
    }
    if config.wants("cnn_relu") {
        jobs.extend(job_relu(make, config, &pools)?);
    }
    let scaling = scaling(&jobs, &counts);
    Ok(Report { header: ReportHeader::new(make(&config.lr)?.name(), device, config.reps.max(1)), jobs, scaling })
}

impl Config {
    /// Whether `job` is to run.
    fn wants(&self, job: &str) -> bool {
        self.jobs.is_empty() || self.jobs.iter().any(|j| j == job)
    }
}

impl Job {
    /// A job without measurements (the template [`jobs_of`] fills).
    fn empty() -> Self {
        Self {
            job: "",
            params: String::new(),
            n: 0,
            limbs: 0,
            threads: 0,
            detail: String::new(),
            total_ms: 0.0,
            p95_ms: 0.0,
            stages: Vec::new(),
            engine: EngineCost::default(),
        }
    }
}

/// Every job's total and stages at the fewest threads against the most.
fn scaling(jobs: &[Job], counts: &[usize]) -> Vec<StageScaling> {
    let (Some(&few), Some(&most)) = (counts.first(), counts.last()) else { return Vec::new() };
    if few == most {
        return Vec::new();
    }
    let speedup = |a: f64, b: f64| if a > 0.0 && b > 0.0 { Some(a / b) } else { None };
    let mut out = Vec::new();
    for j in jobs.iter().filter(|j| j.threads == few) {
        let Some(m) = jobs.iter().find(|m| m.threads == most && m.job == j.job && m.params == j.params) else {
            continue;
        };
        out.push(StageScaling {
            job: j.job,
            stage: "total",
            threads: (few, most),
            ms_fewest: j.total_ms,
            ms_most: m.total_ms,
            speedup: speedup(j.total_ms, m.total_ms),
        });
        for (a, b) in j.stages.iter().zip(&m.stages) {
            out.push(StageScaling {
                job: j.job,
                stage: a.stage.name(),
                threads: (few, most),
                ms_fewest: a.ms,
                ms_most: b.ms,
                speedup: speedup(a.ms, b.ms),
            });
        }
    }
    out
}

impl Report {
    /// A fixed-width table: one block per job, one line per stage.
    #[must_use]
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "stage ledger on {} ({}), median of {} runs on a timed ledger",
            self.header.backend, self.header.device, self.header.reps
        );
        for j in &self.jobs {
            let _ = writeln!(
                s,
                "\n{} ({}, N = {}, {} limbs, {} thread(s)): {:.2} ms (p95 {:.2}) - {}",
                j.job, j.params, j.n, j.limbs, j.threads, j.total_ms, j.p95_ms, j.detail
            );
            let e = &j.engine;
            let _ = writeln!(
                s,
                "  GPU engine ({}): {} dispatches, {} submissions, {} uploads, {} limb-NTTs of {} pass(es), \
                 {:.1} MB read, {:.1} MB written, host encode {:.3} ms ({} us/dispatch), device {} ms",
                e.counted_by,
                e.gpu_dispatches,
                e.submissions,
                e.uploads,
                e.limb_ntts,
                e.ntt_passes,
                e.bytes_read as f64 / 1e6,
                e.bytes_written as f64 / 1e6,
                e.host_encode_ms,
                e.host_us_per_dispatch.map_or("-".into(), |x| format!("{x:.1}")),
                e.device_ms.map_or("-".into(), |x| format!("{x:.3}")),
            );
            let _ =
                writeln!(s, "  {:<26} {:>10} {:>7} {:>6} {:>6} {:>10}", "stage", "ms", "share", "calls", "gpu", "MB");
            for st in &j.stages {
                let _ = writeln!(
                    s,
                    "  {:<26} {:>10.3} {:>6.1}% {:>6} {:>6} {:>10.3}",
                    st.stage,
                    st.ms,
                    100.0 * st.share,
                    st.calls,
                    st.gpu_dispatches,
                    st.bytes as f64 / 1e6
                );
            }
        }
        if let Some(first) = self.scaling.first() {
            let (few, most) = first.threads;
            let _ = writeln!(s, "\nspeedup from {few} to {most} threads (ms at {few} / ms at {most}; 1.00: unused):");
            let _ = writeln!(s, "  {:<12} {:<26} {:>10} {:>10} {:>8}", "job", "stage", "ms", "ms", "speedup");
            for x in self.scaling.iter().filter(|x| x.ms_fewest > 0.0 || x.ms_most > 0.0) {
                let _ = writeln!(
                    s,
                    "  {:<12} {:<26} {:>10.3} {:>10.3} {:>8}",
                    x.job,
                    x.stage,
                    x.ms_fewest,
                    x.ms_most,
                    x.speedup.map_or("-".into(), |v| format!("{v:.2}"))
                );
            }
        }
        s
    }
}
