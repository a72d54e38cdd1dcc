//! `wgfhe bench`: the benchmark suites on the backend `WGFHE_BACKEND` chooses, printed as a
//! table or JSON, with optional traces and SVG charts.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use wgfhe::backend::{Backend, BackendChoice, BackendTask, MultiRingTask};
use wgfhe::compress::Variant;
use wgfhe::params::{self, Parameters, Scheme};
use wgfhe::ring::RingContext;
use wgfhe::Error;
use wgfhe_bench::{anchors, bxt, compare, kernels, machine, plots, stages};

use crate::output::{self, Trace};

/// Benchmark suites of `wgfhe bench`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Suite {
    /// BXT compression variants: bytes moved, PRNG words, modmuls and speedups per operation.
    Bxt,
    /// Word-wise EQ/LT/MAX with digit pruning, and ReLU/sign lookup tables.
    Compare,
    /// Every kernel at each N and limb count: median, GB/s, arithmetic intensity, roofline.
    Kernels,
    /// Stage ledger of composite jobs (HMULT, rotation, LR batch, CNN ReLU layer).
    Ledger,
    /// NTT against tfhe-ntt, scheme operations against OpenFHE (if installed).
    Anchors,
    /// Bootstrapped Boolean gates (single-gate latency, batch throughput, key bytes, failure
    /// rate) against OpenFHE BinFHE STD128 GINX (if installed), single thread.
    Gates,
    /// The cost and precision ledgers of a CKKS hop (a depth-4 layer, then a bootstrap), with
    /// OpenFHE's CKKS bootstrapping as the anchor (`--params ckks-boot-n16`).
    Boot,
}

/// Options of `wgfhe bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Suite to run.
    #[arg(long, value_enum, default_value_t = Suite::Bxt)]
    suite: Suite,
    /// Parameter set (a shipped set, or bgv-bxt-n16, the BXT paper's set); default bgv-n15
    /// for the compare suite (its tables and digit extraction need depth 11), else bgv-n14.
    #[arg(long)]
    params: Option<String>,
    /// Timed rounds per operation and variant, 1 or more (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = crate::check::count, allow_negative_numbers = true)]
    reps: usize,
    /// Write the traffic ledger's records (JSON lines, labelled with op and variant) here
    /// (bxt suite).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Time every dispatch (serialises the queue): `elapsed_ns` in the bxt suite's trace, the
    /// NTT, base-conversion and key-switch shares of the boot suite's stages on the GPU (the
    /// CPU's dispatches are always timed).
    #[arg(long)]
    timed: bool,
    /// Width of the lookup tables' domain, sign included (compare suite; the ledger suite's
    /// ReLU table has domain [-(2^(bits-1) - 1), 2^(bits-1) - 1]).
    #[arg(long, default_value_t = 8)]
    lut_bits: u32,
    /// Width of the values whose digits the `extract` rows extract, sign included; 0 skips
    /// them (compare suite).
    #[arg(long, default_value_t = compare::EXTRACT_BITS)]
    extract_bits: u32,
    /// log2 N of the kernels suite (comma-separated) and of the anchors' NTT rows.
    #[arg(long, value_delimiter = ',', default_value = "12,13,14,15,16")]
    log_n: Vec<u32>,
    /// Runs of each kernel queued before one wait, per timed round (kernels suite): 1 times
    /// each run alone (latency), more measures throughput (times per run are the round's over
    /// K).
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = crate::check::count)]
    in_flight: usize,
    /// Limb counts of the kernels suite (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,8", value_parser = crate::check::count, allow_negative_numbers = true)]
    limbs: Vec<usize>,
    /// Parameter sets of the anchors' scheme rows (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "bgv-n14")]
    anchor_params: Vec<String>,
    /// Thread counts of the anchors and ledger suites (comma-separated): each row or job runs in
    /// a rayon pool of each size built by the suite (OpenFHE with as many OpenMP threads), and
    /// the report gives the speedup from the first to the last.
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = crate::check::count, allow_negative_numbers = true)]
    threads: Vec<usize>,
    /// Jobs of the ledger suite (comma-separated: hmult_relin, rotation, lr_batch, cnn_relu;
    /// default all).
    #[arg(long, value_delimiter = ',')]
    jobs: Vec<String>,
    /// Parameter set of the ledger suite's CNN ReLU layer.
    #[arg(long, default_value = params::LUT_SET)]
    cnn_params: String,
    /// Write SVG charts of the report into this directory (kernels, bxt and ledger suites).
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Gate parameter sets of the gates suite (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "gates-std128,gates-std128-bb,gates-std128-lf")]
    gate_params: Vec<String>,
    /// Gates of the gates suite (comma-separated: and, or, nand, nor, xor, xnor).
    #[arg(long, value_delimiter = ',', default_value = "and")]
    gates: Vec<String>,
    /// Gates of the gates suite's batch and failure measurements.
    #[arg(long, default_value_t = 64)]
    gate_batch: usize,
    /// Skip OpenFHE in the gates suite.
    #[arg(long)]
    no_openfhe: bool,
    /// Also run the gates suite's batch on the GPU (batched bootstrapping).
    #[arg(long)]
    gate_gpu: bool,
    /// Print JSON.
    /// Hops of the boot suite's precision ledger.
    #[arg(long, default_value_t = 10, value_parser = crate::check::count, allow_negative_numbers = true)]
    hops: usize,
    /// Slots of the boot suite (default N/2).
    #[arg(long)]
    slots: Option<usize>,
    /// Allow an insecure test ring (`insecure-test-ckks-boot-n{log_n}`) in the boot suite's
    /// `--params` (not 128-bit secure: tests and experiments only).
    #[arg(long)]
    insecure: bool,
    /// Extra arguments for OpenFHE's boot anchor script (repeatable, e.g. `--openfhe-arg=--log-n
    /// --openfhe-arg=15`).
    #[arg(long, allow_hyphen_values = true)]
    openfhe_arg: Vec<String>,
    #[arg(long)]
    json: bool,
}

impl BenchArgs {
    /// `--params`, or the suite's default.
    fn params_name(&self) -> &str {
        self.params.as_deref().unwrap_or(match self.suite {
            Suite::Compare => "bgv-n15",
            _ => "bgv-n14",
        })
    }

    /// Creates the `--plot` directory and returns it, if given.
    fn plot_dir(&self) -> wgfhe::Result<Option<&Path>> {
        let Some(dir) = self.plot.as_deref() else { return Ok(None) };
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create the directory", Some(dir), &e))?;
        Ok(Some(dir))
    }
}

/// Runs `wgfhe bench`: refuses flags the suite does not use, then runs it.
pub(crate) fn run(a: &BenchArgs) -> wgfhe::Result<()> {
    let bxt = matches!(a.suite, Suite::Bxt);
    if !bxt && a.trace.is_some() {
        return Err(Error::InvalidField {
            field: "trace",
            reason: "--trace applies to --suite bxt only (the other suites write no trace)",
        });
    }
    if !bxt && !matches!(a.suite, Suite::Boot) && a.timed {
        return Err(Error::InvalidField {
            field: "timed",
            reason: "--timed applies to --suite bxt and --suite boot only",
        });
    }
    if matches!(a.suite, Suite::Compare | Suite::Anchors) && a.plot.is_some() {
        return Err(Error::InvalidField {
            field: "plot",
            reason: "--plot applies to the kernels, bxt and ledger suites only (compare and anchors draw no charts)",
        });
    }
    match a.suite {
        Suite::Kernels => kernels_suite(a),
        Suite::Ledger => ledger_suite(a),
        Suite::Anchors => anchors_suite(a),
        Suite::Bxt => bxt_suite(a),
        Suite::Compare => compare_suite(a),
        Suite::Gates => gates_suite(a),
        Suite::Boot => boot_suite(a),
    }
}

/// The boot suite on the backend `WGFHE_BACKEND` chooses, its host work in a pool of the first
/// `--threads` count (1 by default for this suite).
fn boot_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let name = a.params.as_deref().unwrap_or(params::CKKS_BOOT_SET);
    let params = crate::mnist::resolve_params(name, a.insecure)?;
    if params.scheme() != Scheme::Ckks {
        return Err(Error::InvalidField { field: "params", reason: "the boot suite needs a CKKS set (ckks-boot-n16)" });
    }
    let config = wgfhe_bench::boot::Config {
        params,
        slots: a.slots,
        reps: a.reps,
        hops: a.hops,
        threads: a.threads.first().copied().unwrap_or(1),
        openfhe: !a.no_openfhe,
        openfhe_python: std::env::var_os("WGFHE_OPENFHE_PYTHON").map(PathBuf::from),
        openfhe_args: a.openfhe_arg.clone(),
        seed: 1,
    };
    let choice = crate::env::open_backend(None)?;
    let timed = matches!(choice, BackendChoice::Cpu) || a.timed;
    let task = BootTask { config: &config, device: describe(&choice, true), timed };
    let report = choice.with_backend(RingContext::new(&config.params)?, task)?;
    let table = report.table();
    output::print_report(&report, table, a.json)
}

/// The boot suite on any backend.
struct BootTask<'a> {
    config: &'a wgfhe_bench::boot::Config,
    device: String,
    timed: bool,
}

impl BackendTask for BootTask<'_> {
    type Output = wgfhe_bench::boot::Report;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Self::Output> {
        wgfhe_bench::boot::run_with(backend, self.device, self.timed, self.config)
    }
}

/// The gates suite (CPU, one thread for single gates; the batch in a pool of the first
/// `--threads` count).
fn gates_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let gates = a
        .gates
        .iter()
        .map(|g| {
            wgfhe::gates::Gate::ALL
                .into_iter()
                .find(|x| x.name() == g.as_str())
                .ok_or(Error::InvalidField { field: "gates", reason: "unknown gate (and, or, nand, nor, xor, xnor)" })
        })
        .collect::<wgfhe::Result<Vec<_>>>()?;
    let config = wgfhe_bench::gates::Config {
        sets: a.gate_params.clone(),
        gates,
        reps: a.reps,
        warmup: 3,
        batch: a.gate_batch,
        threads: a.threads.first().copied().unwrap_or(1),
        failure_samples: a.gate_batch,
        openfhe: !a.no_openfhe,
        openfhe_python: std::env::var_os("WGFHE_OPENFHE_PYTHON").map(PathBuf::from),
        gpu: if a.gate_gpu { Some(std::sync::Arc::new(wgfhe::backend::gpu::GpuDevice::new()?)) } else { None },
        gpu_reps: 3,
    };
    let report = wgfhe_bench::gates::run(&config)?;
    let table = report.table();
    output::print_report(&report, table, a.json)
}

/// The device of a report: the adapter, or the CPU; with `host`, the host machine too.
fn describe(choice: &BackendChoice, host: bool) -> String {
    match (choice, host) {
        (BackendChoice::Cpu, false) => format!("CPU, {} threads", rayon::current_num_threads()),
        (BackendChoice::Cpu, true) => format!("CPU: {}", machine()),
        (BackendChoice::Gpu(d), false) => format!("{} ({})", d.summary().name, d.summary().backend),
        (BackendChoice::Gpu(d), true) => format!("{} ({}); host {}", d.summary().name, d.summary().backend, machine()),
    }
}

/// The BGV set of the single-ring suites (bxt, compare).
fn bgv_params(a: &BenchArgs) -> wgfhe::Result<Parameters> {
    let params = params::by_name(a.params_name())?;
    if params.scheme() != Scheme::Bgv {
        return Err(Error::InvalidField { field: "params", reason: "the bench suites need a BGV set" });
    }
    Ok(params)
}

/// The compare suite on any backend.
struct CompareTask<'a> {
    a: &'a BenchArgs,
    device: String,
}

impl BackendTask for CompareTask<'_> {
    type Output = compare::Report;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<compare::Report> {
        compare::run_with_extract(backend, self.device, self.a.reps, self.a.lut_bits, self.a.extract_bits)
    }
}

fn compare_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let params = bgv_params(a)?;
    let choice = crate::env::open_backend(None)?;
    let task = CompareTask { a, device: describe(&choice, false) };
    let report = choice.with_backend(RingContext::new(&params)?, task)?;
    let table = report.table();
    output::print_report(&report, table, a.json)
}

/// The bxt suite on any backend.
struct BxtTask<'a> {
    a: &'a BenchArgs,
    device: String,
    trace: Option<&'a mut dyn std::io::Write>,
}

impl BackendTask for BxtTask<'_> {
    type Output = bxt::Report;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<bxt::Report> {
        bxt::run_with(backend, self.device, self.a.reps, self.trace, self.a.timed)
    }
}

fn bxt_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let params = bgv_params(a)?;
    let plot = a.plot_dir()?;
    let mut trace = Trace::create(a.trace.as_deref())?;
    let choice = crate::env::open_backend(None)?;
    let task = BxtTask { a, device: describe(&choice, false), trace: output::trace_writer(&mut trace) };
    let report = choice.with_backend(RingContext::new(&params)?, task)?;
    output::finish_trace(trace)?;
    if let Some(dir) = plot {
        for p in plots::bxt_variants(&report, dir)? {
            eprintln!("wrote {}", p.display());
        }
    }
    let table = report.table();
    output::print_report(&report, table, a.json)
}

/// A suite's backend factory (`&dyn Fn(&Parameters) -> Result<B>`) from a task's opener.
fn factory<B: Backend>(open: &dyn Fn(Arc<RingContext>) -> B) -> impl Fn(&Parameters) -> wgfhe::Result<B> + '_ {
    move |p| Ok(open(RingContext::new(p)?))
}

/// The kernels suite, on backends of any kind.
struct KernelsTask {
    config: kernels::Config,
    device: String,
}

impl MultiRingTask for KernelsTask {
    type Output = kernels::Report;

    fn run<B: Backend>(self, open: &dyn Fn(Arc<RingContext>) -> B) -> wgfhe::Result<kernels::Report> {
        kernels::run(&factory(open), self.device, &self.config)
    }
}

/// The ledger suite, on backends of any kind.
struct LedgerTask {
    config: stages::Config,
    device: String,
}

impl MultiRingTask for LedgerTask {
    type Output = stages::Report;

    fn run<B: Backend>(self, open: &dyn Fn(Arc<RingContext>) -> B) -> wgfhe::Result<stages::Report> {
        stages::run(&factory(open), self.device, &self.config)
    }
}

/// The anchors suite, on backends of any kind.
struct AnchorsTask {
    config: anchors::Config,
    device: String,
}

impl MultiRingTask for AnchorsTask {
    type Output = anchors::Report;

    fn run<B: Backend>(self, open: &dyn Fn(Arc<RingContext>) -> B) -> wgfhe::Result<anchors::Report> {
        anchors::run(&factory(open), self.device, &self.config)
    }
}

fn kernels_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let config =
        kernels::Config { log_ns: a.log_n.clone(), limbs: a.limbs.clone(), reps: a.reps, in_flight: a.in_flight };
    let plot = a.plot_dir()?;
    let choice = crate::env::open_backend(None)?;
    let report = choice.with_backends(KernelsTask { config, device: describe(&choice, true) })?;
    if let Some(dir) = plot {
        eprintln!("wrote {}", plots::kernel_throughput(&report, dir)?.display());
    }
    let table = report.table();
    output::print_report(&report, table, a.json)
}

fn ledger_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let config = stages::Config {
        hmult: params::by_name(a.params_name())?,
        lr: params::by_name(params::LR_SET)?,
        cnn: params::by_name(&a.cnn_params)?,
        lr_pixels: 784,
        lr_variant: Variant::Cso,
        relu_domain: (1u64 << a.lut_bits.clamp(2, 20).saturating_sub(1)) - 1,
        relu_channels: 1,
        reps: a.reps,
        threads: a.threads.clone(),
        jobs: a.jobs.clone(),
    };
    let plot = a.plot_dir()?;
    let choice = crate::env::open_backend(None)?;
    let report = choice.with_backends(LedgerTask { config, device: describe(&choice, true) })?;
    if let Some(dir) = plot {
        eprintln!("wrote {}", plots::stage_ledger(&report, dir)?.display());
    }
    let table = report.table();
    output::print_report(&report, table, a.json)
}

fn anchors_suite(a: &BenchArgs) -> wgfhe::Result<()> {
    let config = anchors::Config {
        ntt_log_ns: a.log_n.clone(),
        sets: a.anchor_params.iter().map(|n| params::by_name(n)).collect::<wgfhe::Result<_>>()?,
        reps: a.reps,
        threads: a.threads.clone(),
        openfhe_python: std::env::var_os("WGFHE_OPENFHE_PYTHON").map(PathBuf::from),
    };
    let choice = crate::env::open_backend(None)?;
    let report = choice.with_backends(AnchorsTask { config, device: describe(&choice, true) })?;
    let table = report.table();
    output::print_report(&report, table, a.json)
}
