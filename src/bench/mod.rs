//! Benchmark suites behind `wgfhe bench`: each runs operations on a backend wrapped in the
//! traffic ledger ([`crate::backend::ledger`]) and reports bytes, PRNG words, modular
//! multiplications and medians of interleaved timings, as rows that serialise to JSON.

pub mod anchors;
pub mod bxt;
pub mod compare;
pub mod kernels;
pub mod plots;
pub mod stages;

use serde::Serialize;

/// The fields every suite's report starts with (flattened into its JSON object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportHeader {
    /// Backend name (`cpu`, `gpu`) of the suite's side.
    pub backend: String,
    /// Adapter or CPU description (with the host machine's, for some suites: see [`machine`]).
    pub device: String,
    /// Worker threads of the CPU backend (rayon) in this process.
    pub threads: usize,
    /// Timed rounds per measurement.
    pub reps: usize,
}

impl ReportHeader {
    /// The header of a run on `backend` labelled `device`, with `reps` timed rounds and the
    /// current rayon thread count.
    #[must_use]
    pub fn new(backend: &str, device: String, reps: usize) -> Self {
        Self { backend: backend.to_string(), device, threads: rayon::current_num_threads(), reps }
    }
}

/// The machine a report ran on, for its header: CPU model, cores, the rayon thread count and
/// the 1-minute load average (Linux `/proc`; `unknown` elsewhere).
#[must_use]
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    format!("{cpu}, {cores} cores, {} rayon threads, load {load}", rayon::current_num_threads())
}
