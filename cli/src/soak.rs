//! `wgfhe soak`: many cycles of HMULT + rotation + rescale on one backend, watching memory.
//!
//! Each cycle multiplies two fresh ciphertexts (with relinearisation), rotates the product by
//! one slot and drops a level (BGV: a modulus switch; CKKS: the rescale, before the rotation),
//! then waits for the backend ([`Backend::synchronize`]) and drops the results. The process's
//! resident memory (`VmRSS` of `/proc/self/status` on Linux, "unavailable" elsewhere) and, on
//! the GPU, the idle buffers of the device's pool are sampled after the first cycle (start),
//! the middle one and the last (end), where the result is also decrypted and checked. Memory
//! that keeps growing between the middle and the end is a leak; the report gives the growth and
//! calls the run steady when it is within 5%. Not a timed test: a command to run for minutes.

use std::sync::Arc;
use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use num_complex::Complex64;
use serde::Serialize;
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, BackendChoice, BackendTask};
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::params::Scheme;
use wgfhe::ring::RingContext;
use wgfhe::Error;

use crate::output;

/// Growth of resident memory from the middle sample to the end one (percent) still called
/// steady.
const STEADY_PERCENT: f64 = 5.0;

/// Options of `wgfhe soak`.
#[derive(Debug, clap::Args)]
pub(crate) struct SoakArgs {
    /// Cycles of HMULT + rotation + rescale, 1 or more.
    #[arg(long, default_value_t = 10_000, value_parser = crate::check::count, allow_negative_numbers = true)]
    pub(crate) cycles: usize,
    /// Parameter set, BGV (a modulus switch per cycle) or CKKS (a rescale per cycle).
    #[arg(long, default_value = "bgv-n13")]
    pub(crate) params: String,
    /// Allow an insecure test set named `insecure-test-bgv-n{log_n}-q{Q primes}-p{P
    /// primes}-d{dnum}-t{t}` in `--params` (experiments only: not 128-bit secure).
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub(crate) json: bool,
}

/// One reading of memory.
#[derive(Debug, Clone, Serialize)]
struct Sample {
    /// `start`, `middle` or `end`.
    label: &'static str,
    /// Cycles done when it was taken.
    cycle: usize,
    /// Seconds since the first cycle began.
    elapsed_s: f64,
    /// Resident memory of the process, KiB (`None`: unavailable on this system).
    rss_kib: Option<u64>,
    /// Idle buffers in the GPU device's pool (`None` on the CPU backend).
    pool_buffers: Option<usize>,
    /// Their bytes.
    pool_bytes: Option<u64>,
}

/// The report of a soak run.
#[derive(Debug, Serialize)]
struct Report {
    params: String,
    scheme: &'static str,
    backend: String,
    /// What one cycle does.
    cycle: &'static str,
    cycles: usize,
    /// Seconds of key generation and encryption before the first cycle.
    setup_s: f64,
    /// Seconds of the cycles (checks at the samples included).
    elapsed_s: f64,
    cycles_per_second: f64,
    samples: Vec<Sample>,
    /// Resident memory at the end relative to the middle, percent (`None`: unavailable).
    rss_growth_middle_to_end_percent: Option<f64>,
    /// Whether that growth is within 5% (`None`: unavailable).
    steady: Option<bool>,
    /// The decrypted result at every sample matched the clear computation.
    checks_passed: bool,
}

/// Resident memory of this process in KiB: `VmRSS` of `/proc/self/status` (Linux); `None`
/// elsewhere or if it cannot be read.
fn rss_kib() -> Option<u64> {
    crate::output::proc_status_kib("VmRSS")
}

/// Runs `wgfhe soak` on the backend `WGFHE_BACKEND` chooses.
pub(crate) fn run(a: &SoakArgs) -> wgfhe::Result<()> {
    let params = crate::mnist::resolve_params(&a.params, a.insecure)?;
    let choice = crate::env::open_backend(None)?;
    let device = match &choice {
        BackendChoice::Gpu(dev) => Some(Arc::clone(dev)),
        BackendChoice::Cpu => None,
    };
    let report = choice.with_backend(RingContext::new(&params)?, Soak { cycles: a.cycles, device })?;
    let table = text(&report);
    output::print_report(&report, table, a.json)?;
    if report.checks_passed {
        Ok(())
    } else {
        Err(Error::Verification { what: "a decrypted soak result differs".into(), reference: "the clear computation" })
    }
}

fn kib(v: Option<u64>) -> String {
    v.map_or_else(|| "unavailable".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

fn sample_line(s: &Sample) -> String {
    let pool = match (s.pool_buffers, s.pool_bytes) {
        (Some(n), Some(b)) => format!(", pool {n} buffers, {:.1} MiB", b as f64 / (1024.0 * 1024.0)),
        _ => String::new(),
    };
    format!("{:>6} after cycle {:>6} ({:>8.2} s): RSS {}{pool}", s.label, s.cycle, s.elapsed_s, kib(s.rss_kib))
}

fn text(r: &Report) -> String {
    let mut out = format!(
        "soak: {} cycles of {} on {} ({}, {}), setup {:.2} s\n",
        r.cycles, r.cycle, r.params, r.scheme, r.backend, r.setup_s
    );
    for s in &r.samples {
        out.push_str(&sample_line(s));
        out.push('\n');
    }
    let growth = match (r.rss_growth_middle_to_end_percent, r.steady) {
        (Some(g), Some(steady)) => {
            format!("{g:+.2}% ({})", if steady { "steady, within 5%" } else { "NOT steady: more than 5%" })
        }
        _ => "unavailable".to_owned(),
    };
    out.push_str(&format!(
        "{:.2} cycles/s over {:.1} s; RSS middle to end {growth}; checks {}\n",
        r.cycles_per_second,
        r.elapsed_s,
        if r.checks_passed { "passed" } else { "FAILED" }
    ));
    out
}

/// The soak loop, on any backend.
struct Soak {
    cycles: usize,
    device: Option<Arc<GpuDevice>>,
}

/// One scheme's cycle: `cycle` runs it and returns whether `check` (decrypting the result)
/// passed, when asked to check.
trait Cycle {
    fn run(&self, check: bool) -> wgfhe::Result<bool>;
}

struct BgvCycle<B: Backend> {
    bgv: Bgv<B>,
    sk: wgfhe::rlwe::SecretKey<B>,
    keys: wgfhe::bgv::EvaluationKeys<B>,
    x: wgfhe::bgv::Ciphertext<B>,
    y: wgfhe::bgv::Ciphertext<B>,
    want: Vec<u64>,
}

impl<B: Backend> BgvCycle<B> {
    fn new(backend: B) -> wgfhe::Result<Self> {
        let bgv = Bgv::new(backend)?;
        let sk = bgv.gen_secret_key()?;
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
        let t = u64::from(bgv.plaintext_modulus());
        let slots = bgv.encoder().slots();
        let x: Vec<u64> = (0..slots as u64).map(|i| (i * 7 + 3) % t).collect();
        let y: Vec<u64> = (0..slots as u64).map(|i| (i * i + 1) % t).collect();
        // Rotating the columns by one: slot k of each half takes slot k + 1 of that half.
        let half = slots / 2;
        let want = (0..slots)
            .map(|k| {
                let j = (k / half) * half + (k % half + 1) % half;
                x.get(j).copied().unwrap_or(0) * y.get(j).copied().unwrap_or(0) % t
            })
            .collect();
        let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&x)?)?;
        let y = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&y)?)?;
        Ok(Self { bgv, sk, keys, x, y, want })
    }
}

impl<B: Backend> Cycle for BgvCycle<B> {
    fn run(&self, check: bool) -> wgfhe::Result<bool> {
        let prod = self.bgv.mul_relin(&self.x, &self.y, &self.keys)?;
        let rot = self.bgv.rotate_columns(&prod, 1, &self.keys)?;
        let low = self.bgv.mod_switch(&rot, 1)?;
        self.bgv.backend().synchronize()?;
        if !check {
            return Ok(true);
        }
        Ok(self.bgv.encoder().decode(&self.bgv.decrypt(&self.sk, &low)?)? == self.want)
    }
}

/// Slots the CKKS cycle uses.
const CKKS_SLOTS: usize = 16;

struct CkksCycle<B: Backend> {
    ckks: Ckks<B>,
    sk: wgfhe::rlwe::SecretKey<B>,
    keys: wgfhe::bgv::EvaluationKeys<B>,
    x: wgfhe::ckks::Ciphertext<B>,
    y: wgfhe::ckks::Ciphertext<B>,
    want: Vec<f64>,
}

impl<B: Backend> CkksCycle<B> {
    fn new(backend: B) -> wgfhe::Result<Self> {
        let ckks = Ckks::new(backend, ScalePolicy::Single)?;
        let sk = ckks.gen_secret_key()?;
        let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
        let x: Vec<f64> = (0..CKKS_SLOTS).map(|i| (i as f64 + 1.0) / CKKS_SLOTS as f64).collect();
        let y: Vec<f64> = (0..CKKS_SLOTS).map(|i| 0.5 - i as f64 / (2.0 * CKKS_SLOTS as f64)).collect();
        let want = (0..CKKS_SLOTS)
            .map(|k| {
                let j = (k + 1) % CKKS_SLOTS;
                x.get(j).copied().unwrap_or(0.0) * y.get(j).copied().unwrap_or(0.0)
            })
            .collect();
        let x = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&x)?)?;
        let y = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&y)?)?;
        Ok(Self { ckks, sk, keys, x, y, want })
    }
}

impl<B: Backend> Cycle for CkksCycle<B> {
    fn run(&self, check: bool) -> wgfhe::Result<bool> {
        let prod = self.ckks.mul_relin(&self.x, &self.y, &self.keys)?;
        let low = self.ckks.rescale(&prod)?;
        let rot = self.ckks.rotate(&low, 1, &self.keys)?;
        self.ckks.backend().synchronize()?;
        if !check {
            return Ok(true);
        }
        let got: Vec<Complex64> = self.ckks.decrypt(&self.sk, &rot)?;
        Ok(got.len() >= CKKS_SLOTS
            && got.iter().zip(&self.want).all(|(g, &w)| (g.re - w).abs() < 1e-3 && g.im.abs() < 1e-3))
    }
}

impl BackendTask for Soak {
    type Output = Report;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Report> {
        let params = backend.context().params().clone();
        let name = backend.name().to_owned();
        let setup = Instant::now();
        let (scheme, what, cycle): (_, _, Box<dyn Cycle>) = match params.scheme() {
            Scheme::Bgv => ("BGV", "HMULT + rotation + modulus switch", Box::new(BgvCycle::new(backend)?)),
            Scheme::Ckks => ("CKKS", "HMULT + rescale + rotation", Box::new(CkksCycle::new(backend)?)),
        };
        let setup_s = setup.elapsed().as_secs_f64();
        let middle = (self.cycles / 2).max(1);
        let start = Instant::now();
        let mut samples = Vec::new();
        let mut checks_passed = true;
        for i in 1..=self.cycles {
            let labels: Vec<&'static str> = [(1, "start"), (middle, "middle"), (self.cycles, "end")]
                .into_iter()
                .filter(|&(at, _)| at == i)
                .map(|(_, l)| l)
                .collect();
            let ok = cycle.run(!labels.is_empty())?;
            checks_passed &= ok;
            for label in labels {
                let pool = self.device.as_ref().map(|d| d.pool().stats());
                let s = Sample {
                    label,
                    cycle: i,
                    elapsed_s: start.elapsed().as_secs_f64(),
                    rss_kib: rss_kib(),
                    pool_buffers: pool.map(|p| p.buffers),
                    pool_bytes: pool.map(|p| p.bytes),
                };
                samples.push(s);
            }
        }
        let elapsed_s = start.elapsed().as_secs_f64();
        let rss = |label: &str| samples.iter().find(|s| s.label == label).and_then(|s| s.rss_kib);
        let growth = match (rss("middle"), rss("end")) {
            (Some(m), Some(e)) if m > 0 => Some((e as f64 - m as f64) / m as f64 * 100.0),
            _ => None,
        };
        Ok(Report {
            params: params.name().to_owned(),
            scheme,
            backend: name,
            cycle: what,
            cycles: self.cycles,
            setup_s,
            elapsed_s,
            cycles_per_second: self.cycles as f64 / elapsed_s.max(1e-9),
            samples,
            rss_growth_middle_to_end_percent: growth,
            steady: growth.map(|g| g <= STEADY_PERCENT),
            checks_passed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(rss_kib().is_some_and(|k| k > 0));
        }
        assert_eq!(kib(None), "unavailable");
    }
}
