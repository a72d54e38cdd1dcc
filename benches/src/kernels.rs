//! `wgfhe bench --suite kernels`: every kernel of the [`Backend`] trait at each ring degree and
//! limb count, with the traffic ledger's bytes and modular multiplications, the median time, the
//! achieved bandwidth and its roofline fraction.
//!
//! Method: for each `(N, limbs)` a ring of `2 limbs + 1` primes (an insecure test set: only the
//! shapes matter) and seeded pseudo-random operands are made outside the timed region. Each
//! kernel runs once as a warm-up (the run whose ledger record gives the bytes), then `reps`
//! rounds run every kernel in turn (interleaved), the device synchronised after each. The
//! roofline fraction is the kernel's GB/s over the GB/s of the plain buffer copy (`duplicate`,
//! one read and one write per word) at the same `N` and limbs in the same run (the same
//! footprint, so the same level of the memory hierarchy); for kernels whose arithmetic intensity
//! is above the element-wise product's, `modmul_fraction` is their modular multiplications per
//! second over the rate of that plain product (`mul`) at the same point, which is itself
//! memory-bound, so the fraction can exceed 1.

use std::time::Instant;

use serde::Serialize;

use wgfhe::backend::ledger::{Ledger, Totals};
use wgfhe::backend::{Backend, InnerProductInput, KeyDigitRef};
use wgfhe::error::{Error, Result};
use wgfhe::math::rounding::Rounding;
use wgfhe::math::sampling::Purpose;
use wgfhe::params::{self, Parameters};

use super::ReportHeader;

/// The kernels of the suite, in report order (`copy` is [`Backend::duplicate`]).
pub const KERNELS: [&str; 12] = [
    "copy",
    "add",
    "mul",
    "mul_add",
    "mul_scalar",
    "automorphism",
    "ntt_forward",
    "ntt_inverse",
    "base_convert",
    "scale_down_correction",
    "key_switch_inner_product",
    "uniform",
];

/// Digits of the key-switching inner product (the shipped sets' `dnum`).
pub const KS_DIGITS: usize = 3;

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// `log2 N` of each ring size.
    pub log_ns: Vec<u32>,
    /// Limb counts.
    pub limbs: Vec<usize>,
    /// Timed rounds (the median is reported).
    pub reps: usize,
    /// Runs of the kernel queued per round before one wait (1: latency, each run waited for;
    /// more: throughput, the round's times divided by this).
    pub in_flight: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self { log_ns: (12..=16).collect(), limbs: vec![1, 8], reps: 5, in_flight: 1 }
    }
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Kernel name.
    pub kernel: &'static str,
    /// Ring degree.
    pub n: usize,
    /// Limbs of the operand (output limbs may differ: `base_convert` writes as many).
    pub limbs: usize,
    /// Backend name.
    pub backend: String,
    /// Median wall time of one run (a round's wall time over [`Config::in_flight`]).
    pub median_ms: f64,
    /// Median device time of one run, from the device's timestamps (`null` where the backend
    /// has none: the CPU, or an adapter without timestamp queries).
    pub device_median_ms: Option<f64>,
    /// 95th percentile of the wall time.
    pub p95_ms: f64,
    /// Bytes read and written (ledger).
    pub bytes: u64,
    /// Modular multiplications (ledger).
    pub modmuls: u64,
    /// `bytes / median` (wall time), in GB/s (10^9 bytes per second).
    pub gbps: f64,
    /// `bytes / device_median_ms`, in GB/s (`null` without device times).
    pub device_gbps: Option<f64>,
    /// Modular multiplications per byte.
    pub arith_intensity: f64,
    /// The kernel's GB/s over the copy's GB/s at the same `N` and limbs in the same run, both
    /// by device time where the device has timestamps, else by wall time
    /// ([`Report::timing`] says which).
    pub roofline_fraction: f64,
    /// Modular multiplications per second, in 10^9.
    pub gmodmul_per_s: f64,
    /// For kernels above the element-wise product's intensity: `gmodmul_per_s` over the rate
    /// of `mul` at the same `N` and limbs; `null` otherwise.
    pub modmul_fraction: Option<f64>,
}

/// What a report's times are ([`Report::timing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Timestamp queries: the device's own time, the host excluded.
    Device,
    /// Each round from the call to the end of the wait (on a GPU, with the submission round
    /// trip).
    Wall,
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Self::Device => "device",
            Self::Wall => "wall",
        })
    }
}

/// The report of `wgfhe bench --suite kernels --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Backend, device, threads and timed rounds.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// What the times and rooflines are: `device` (timestamp queries: the device's own time,
    /// the host excluded) or `wall` (each round from the call to the end of the wait: on a GPU
    /// that includes the submission round trip).
    pub timing: Timing,
    /// Runs per round ([`Config::in_flight`]).
    pub in_flight: usize,
    /// Copy bandwidth at the largest point of the run, GB/s (by [`Self::timing`]).
    pub copy_gbps: f64,
    /// Modular-multiplication rate of `mul` at the largest point, 10^9 per second.
    pub mul_gmodmul_per_s: f64,
    /// The rows.
    pub rows: Vec<Row>,
}

/// Median and 95th percentile of `times` (sorted in place); zeros when empty.
pub(crate) fn median_p95(times: &mut [f64]) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times.get(((times.len().max(1) - 1) as f64 * q).round() as usize).copied().unwrap_or(0.0);
    (at(0.5), at(0.95))
}

/// A deterministic operand of `words` residues below `q` (xorshift).
fn operand(words: usize, moduli: &[u32], n: usize, salt: u64) -> Vec<u32> {
    let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ salt.wrapping_mul(0x2545_f491_4f6c_dd1d);
    (0..words)
        .map(|i| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let q = moduli.get(i / n.max(1)).copied().unwrap_or(2).max(2);
            (s % u64::from(q)) as u32
        })
        .collect()
}

/// The operands of one `(N, limbs)` point, resident on a backend: what every kernel of
/// [`KERNELS`] reads (the criterion benches use it too).
pub struct Point<B: Backend> {
    a: B::Buffer,
    b: B::Buffer,
    acc: B::Buffer,
    wide: B::Buffer,
    keys: Vec<(B::Buffer, B::Buffer)>,
    converted: B::Buffer,
    digits: Vec<Vec<usize>>,
    scalars: Vec<u32>,
    basis: Vec<usize>,
    other: Vec<usize>,
    key_basis: Vec<usize>,
}

impl<B: Backend> Point<B> {
    /// Seeded operands of `limbs` limbs on `be`, whose ring must have `2 limbs + 1` primes
    /// ([`ring_params`]): the first `limbs` are the operands' basis (and the chain of the
    /// key-switching kernels, cut into [`KS_DIGITS`] digits), the other `limbs + 1` the
    /// conversion target and the special primes.
    pub fn new(be: &B, limbs: usize) -> Result<Self> {
        let n = be.context().n();
        let basis: Vec<usize> = (0..limbs).collect();
        let other: Vec<usize> = (limbs..2 * limbs + 1).collect();
        let key_basis: Vec<usize> = (0..2 * limbs + 1).collect();
        let moduli =
            |b: &[usize]| -> Result<Vec<u32>> { Ok(be.context().moduli_of(b)?.iter().map(|m| m.value()).collect()) };
        let (mq, mo, mk) = (moduli(&basis)?, moduli(&other)?, moduli(&key_basis)?);
        let up = |salt: u64, m: &[u32]| be.upload(&operand(m.len() * n, m, n, salt));
        let digits: Vec<Vec<usize>> = basis.chunks(limbs.div_ceil(KS_DIGITS).max(1)).map(<[usize]>::to_vec).collect();
        let targets = wgfhe::backend::key_switching::modup_targets(&basis, &other, &digits);
        Ok(Self {
            a: up(1, &mq)?,
            b: up(2, &mq)?,
            acc: up(3, &mq)?,
            wide: up(4, &mo)?,
            keys: (0..digits.len())
                .map(|d| Ok((up(10 + d as u64, &mk)?, up(20 + d as u64, &mk)?)))
                .collect::<Result<_>>()?,
            converted: up(30, &moduli(&targets.concat())?)?,
            digits,
            scalars: mq.iter().map(|q| q / 3).collect(),
            basis,
            other,
            key_basis,
        })
    }

    /// Runs `kernel` (a name of [`KERNELS`]) once on these operands (without synchronising).
    pub fn run(&mut self, be: &B, kernel: &str) -> Result<()> {
        run_kernel(be, kernel, self)
    }
}

/// The ring of one point: `2 limbs + 1` primes (`limbs` chain primes, `limbs + 1` special).
pub fn ring_params(log_n: u32, limbs: usize) -> Result<Parameters> {
    params::insecure_test_bgv(
        params::TestRing { log_n, q_primes: limbs.max(1), p_primes: limbs.max(1) + 1, dnum: 1 },
        65537,
    )
}

fn run_kernel<B: Backend>(be: &B, kernel: &str, o: &mut Point<B>) -> Result<()> {
    let basis = &o.basis;
    match kernel {
        "copy" => drop(be.duplicate(&o.a)?),
        "add" => drop(be.add(&o.a, &o.b, basis)?),
        "mul" => drop(be.mul(&o.a, &o.b, basis)?),
        "mul_add" => be.mul_add(&mut o.acc, &o.a, &o.b, basis)?,
        "mul_scalar" => drop(be.mul_scalar(&o.a, &o.scalars, basis)?),
        "automorphism" => drop(be.automorphism(&o.a, 5, basis)?),
        "ntt_forward" => be.ntt_forward(&mut o.b, basis)?,
        "ntt_inverse" => be.ntt_inverse(&mut o.b, basis)?,
        "base_convert" => drop(be.base_convert(&o.a, basis, &[(basis, &o.other)])?),
        // ModDown's correction: the `limbs + 1` special primes dropped, the chain kept.
        "scale_down_correction" => {
            drop(be.scale_down_correction(&o.wide, basis, &o.other, Some(65537), Rounding::Joint)?)
        }
        "key_switch_inner_product" => {
            let key: Vec<KeyDigitRef<'_, B::Buffer>> = o
                .keys
                .iter()
                .zip(0u32..)
                .map(|((b, a), index)| KeyDigitRef { b, b_packed: false, a: Some(a), index })
                .collect();
            drop(be.key_switch_inner_product(&InnerProductInput {
                c: &o.a,
                converted: &o.converted,
                q_basis: basis,
                p_basis: &o.other,
                digits: &o.digits,
                key: &key,
                key_basis: &o.key_basis,
                seed: &[7; 32],
            })?);
        }
        "uniform" => drop(be.uniform(&[7; 32], Purpose::CiphertextA, 0, basis)?),
        _ => return Err(Error::InvalidField { field: "kernel", reason: "unknown kernel" }),
    }
    Ok(())
}

/// Runs the suite with backends made by `make` (one per ring), labelled `device`.
pub fn run<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, device: String, config: &Config) -> Result<Report> {
    let reps = config.reps.max(1);
    let in_flight = config.in_flight.max(1);
    let mut rows = Vec::new();
    let mut backend_name = String::new();
    for &log_n in &config.log_ns {
        for &limbs in &config.limbs {
            let params = ring_params(log_n, limbs)?;
            let be = Ledger::new(make(&params)?);
            backend_name = be.name().to_string();
            let n = params.n();
            let mut o = Point::new(&be, limbs)?;
            be.synchronize()?;
            be.take();
            let mut point = Vec::with_capacity(KERNELS.len());
            for kernel in KERNELS {
                run_kernel(&be, kernel, &mut o)?;
                be.synchronize()?;
                point.push((kernel, Totals::of(&be.take())));
            }
            let mut times = vec![Vec::with_capacity(reps); KERNELS.len()];
            let mut device_times = vec![Vec::with_capacity(reps); KERNELS.len()];
            for _ in 0..reps {
                for ((kernel, slot), dslot) in KERNELS.into_iter().zip(times.iter_mut()).zip(device_times.iter_mut()) {
                    let before = be.device_counters();
                    let start = Instant::now();
                    for _ in 0..in_flight {
                        run_kernel(&be, kernel, &mut o)?;
                    }
                    be.synchronize()?;
                    slot.push(start.elapsed().as_secs_f64() * 1e3 / in_flight as f64);
                    if let Some(ms) = device_ms(before, be.device_counters()) {
                        dslot.push(ms / in_flight as f64);
                    }
                    be.take();
                }
            }
            for (((kernel, t), mut times), mut dtimes) in point.into_iter().zip(times).zip(device_times) {
                let (median_ms, p95_ms) = median_p95(&mut times);
                let device_median_ms = (dtimes.len() == reps).then(|| median_p95(&mut dtimes).0);
                let bytes = t.bytes_read + t.bytes_written;
                let secs = (median_ms / 1e3).max(1e-12);
                rows.push(Row {
                    kernel,
                    n,
                    limbs,
                    backend: backend_name.clone(),
                    median_ms,
                    device_median_ms,
                    p95_ms,
                    bytes,
                    modmuls: t.modmuls,
                    gbps: bytes as f64 / secs / 1e9,
                    device_gbps: device_median_ms.map(|ms| bytes as f64 / (ms / 1e3).max(1e-12) / 1e9),
                    arith_intensity: t.arithmetic_intensity(),
                    roofline_fraction: 0.0,
                    gmodmul_per_s: t.modmuls as f64 / secs / 1e9,
                    modmul_fraction: None,
                });
            }
        }
    }
    // Rooflines per point: the copy's GB/s and the product's modmul rate at the same N and
    // limbs (same footprint, so the same cache level).
    let at = |k: &str, n: usize, l: usize| rows.iter().find(|r| r.kernel == k && r.n == n && r.limbs == l).cloned();
    let points: Vec<(usize, usize, Option<Row>, Option<Row>)> = rows
        .iter()
        .filter(|r| r.kernel == "copy")
        .map(|r| (r.n, r.limbs, at("copy", r.n, r.limbs), at("mul", r.n, r.limbs)))
        .collect();
    let by_device = !rows.is_empty() && rows.iter().all(|r| r.device_gbps.is_some());
    let bw = |r: &Row| if by_device { r.device_gbps.unwrap_or(0.0) } else { r.gbps };
    for r in &mut rows {
        let Some((_, _, copy, mul)) = points.iter().find(|p| p.0 == r.n && p.1 == r.limbs) else { continue };
        let copy_gbps = copy.as_ref().map_or(0.0, bw);
        let own = bw(r);
        r.roofline_fraction = if copy_gbps > 0.0 { own / copy_gbps } else { 0.0 };
        r.modmul_fraction = mul.as_ref().and_then(|m| {
            (r.arith_intensity > m.arith_intensity * 1.01 && m.gmodmul_per_s > 0.0)
                .then(|| r.gmodmul_per_s / m.gmodmul_per_s)
        });
    }
    // The headline rooflines: those of the largest point (DRAM-resident on most machines).
    let largest = points.iter().max_by_key(|p| p.0 * p.1);
    let copy_gbps = largest.and_then(|p| p.2.as_ref()).map_or(0.0, bw);
    let mul_rate = largest.and_then(|p| p.3.as_ref()).map_or(0.0, |m| m.gmodmul_per_s);
    Ok(Report {
        header: ReportHeader::new(&backend_name, device, reps),
        timing: if by_device { Timing::Device } else { Timing::Wall },
        in_flight,
        copy_gbps,
        mul_gmodmul_per_s: mul_rate,
        rows,
    })
}

/// Device milliseconds between two counter readings taken around a synchronised run: `None`
/// without a device, or where some submission between them was not timed.
pub fn device_ms(
    before: Option<wgfhe::backend::gpu::DeviceCounters>,
    after: Option<wgfhe::backend::gpu::DeviceCounters>,
) -> Option<f64> {
    let d = after? - before?;
    (d.timed_submissions > 0 && d.timed_submissions == d.submissions).then(|| d.device_ns as f64 / 1e6)
}

impl Report {
    /// A fixed-width table.
    #[must_use]
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "kernels on {} ({}), {} threads, median of {} interleaved rounds of {} run(s); GB/s and rooflines by {} time; \
             copy roofline {:.2} GB/s, mul {:.3} Gmodmul/s",
            self.header.backend,
            self.header.device,
            self.header.threads,
            self.header.reps,
            self.in_flight,
            self.timing,
            self.copy_gbps,
            self.mul_gmodmul_per_s
        );
        let _ = writeln!(
            s,
            "{:<26} {:>6} {:>5} {:>10} {:>10} {:>10} {:>8} {:>7} {:>9} {:>9} {:>8}",
            "kernel", "N", "limbs", "median ms", "device ms", "p95 ms", "GB/s", "AI", "roofline", "Gmodmul/s", "vs mul"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<26} {:>6} {:>5} {:>10.4} {:>10} {:>10.4} {:>8.2} {:>7.3} {:>9.3} {:>9.3} {:>8}",
                r.kernel,
                r.n,
                r.limbs,
                r.median_ms,
                r.device_median_ms.map_or("-".into(), |x| format!("{x:.4}")),
                r.p95_ms,
                r.device_gbps.unwrap_or(r.gbps),
                r.arith_intensity,
                r.roofline_fraction,
                r.gmodmul_per_s,
                r.modmul_fraction.map_or("-".into(), |x| format!("{x:.2}")),
            );
        }
        s
    }
}
