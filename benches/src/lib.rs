//! # wgfhe-bench
//!
//! Benchmark suites behind `wgfhe bench`: each runs operations on a backend wrapped in the
//! traffic ledger ([`wgfhe::backend::ledger`]) and reports bytes, PRNG words, modular
//! multiplications and medians of interleaved timings, as rows that serialise to JSON.

pub mod anchors;
pub mod boot;
pub mod bxt;
pub mod compare;
pub mod gates;
pub mod kernels;
pub mod plots;
pub mod stages;

pub use wgfhe::{Error, Result};

use serde::Serialize;

/// Rayon pools of the suites that measure at several thread counts: `(threads, pool)`.
pub(crate) type Pools = [(usize, rayon::ThreadPool)];

/// Rayon pools of the given sizes, built for the suite.
pub(crate) fn pools(counts: &[usize]) -> crate::Result<Vec<(usize, rayon::ThreadPool)>> {
    counts
        .iter()
        .map(|&threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads.max(1)).build().map_err(|e| {
                crate::Error::Backend { backend: "cpu", reason: format!("rayon pool of {threads} threads: {e}") }
            })?;
            Ok((threads.max(1), pool))
        })
        .collect()
}

/// The thread counts of a configuration (one thread if none given), deduplicated in order.
pub(crate) fn thread_counts(threads: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for t in threads.iter().map(|&t| t.max(1)) {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if out.is_empty() {
        out.push(1);
    }
    out
}

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

/// `rel`, a path relative to the repository root (`benches/anchors/...`): as given when it
/// exists from the working directory (a run from the root), else resolved from this crate's
/// folder (`benches/` in the repository), as under `cargo test`, whose working directory is
/// the crate's.
#[must_use]
pub fn repo_path(rel: &str) -> std::path::PathBuf {
    let here = std::path::PathBuf::from(rel);
    if here.exists() {
        return here;
    }
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// `path` as a report shows it: relative to the repository when [`repo_path`] made it so, so
/// that no report names a directory of the machine it ran on.
#[must_use]
pub fn shown(path: &std::path::Path) -> String {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    path.strip_prefix(&root).unwrap_or(path).display().to_string()
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
