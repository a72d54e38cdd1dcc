//! The `wgfhe` command-line tool.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use serde::Serialize;
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, BackendChoice, CpuBackend, GpuBackend};
use wgfhe::bgv::{max_depth, Bgv};
use wgfhe::ckks::{self, ScalePolicy};
use wgfhe::params::{self, Parameters, Scheme};
use wgfhe::ring::RingContext;
use wgfhe::verify;

mod bench_cmd;
mod cnn_cmd;

/// wgfhe: GPU-accelerated fully homomorphic encryption (BGV; CKKS to come).
#[derive(Debug, Parser)]
#[command(name = "wgfhe", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the shipped parameter sets (128-bit security, 2024 guidelines).
    Params {
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run an encrypted BGV computation end to end and check it against the clear result.
    Demo {
        /// Shipped parameter set to use.
        #[arg(long, default_value = "bgv-n13")]
        params: String,
    },
    /// Describe the build and the GPU adapter.
    Info {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Encrypted MNIST inference (the main job): fetches the data if absent, trains the model,
    /// encrypts the test images, evaluates the model under encryption and checks every
    /// prediction against the quantised plaintext model.
    Mnist(MnistArgs),
    /// Benchmark suites (the backend comes from WGFHE_BACKEND: auto, gpu or cpu).
    Bench {
        /// Suite to run.
        #[arg(long, value_enum, default_value_t = Suite::Bxt)]
        suite: Suite,
        /// Parameter set (a shipped set, or bgv-bxt-n16, the BXT paper's set); default bgv-n15
        /// for the compare suite (its tables and digit extraction need depth 11), else bgv-n14.
        #[arg(long)]
        params: Option<String>,
        /// Timed rounds per operation and variant (the median is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Write the traffic ledger's records (JSON lines, labelled with op and variant) here
        /// (bxt suite).
        #[arg(long)]
        trace: Option<std::path::PathBuf>,
        /// Time every dispatch (`elapsed_ns` in the trace; serialises the queue; bxt suite).
        #[arg(long)]
        timed: bool,
        /// Width of the lookup tables' domain, sign included (compare suite; the ledger suite's
        /// ReLU table has domain [-(2^(bits-1) - 1), 2^(bits-1) - 1]).
        #[arg(long, default_value_t = 8)]
        lut_bits: u32,
        /// Width of the values whose digits the `extract` rows extract, sign included; 0 skips
        /// them (compare suite).
        #[arg(long, default_value_t = wgfhe::bench::compare::EXTRACT_BITS)]
        extract_bits: u32,
        /// log2 N of the kernels suite (comma-separated) and of the anchors' NTT rows.
        #[arg(long, value_delimiter = ',', default_value = "12,13,14,15,16")]
        log_n: Vec<u32>,
        /// Limb counts of the kernels suite (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "1,8")]
        limbs: Vec<usize>,
        /// Parameter sets of the anchors' scheme rows (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "bgv-n14")]
        anchor_params: Vec<String>,
        /// Parameter set of the ledger suite's CNN ReLU layer.
        #[arg(long, default_value = params::LUT_SET)]
        cnn_params: String,
        /// Write SVG charts of the report into this directory (kernels, bxt and ledger suites).
        #[arg(long)]
        plot: Option<std::path::PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run every kernel and scheme operation on CPU and GPU with seeded random inputs and
    /// compare the results word for word (exit code 1 if any differs).
    Verify {
        /// Parameter sets to check (repeatable); default: the insecure test sets and
        /// bgv-n13 and ckks-n13.
        #[arg(long)]
        params: Vec<String>,
        /// Seed of the random inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Models of `wgfhe mnist`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Model {
    /// Logistic regression, digits 3 vs 8.
    Lr,
    /// The CryptoDL-style CNN (ten digits, exact ReLUs).
    Cnn,
}

/// Benchmark suites of `wgfhe bench`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Suite {
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
}

/// One row of `wgfhe params --json`.
#[derive(Debug, Serialize)]
struct ParamRow {
    name: String,
    scheme: &'static str,
    n: usize,
    log_q: f64,
    log_p: f64,
    log_qp: f64,
    limbs: usize,
    special_limbs: usize,
    dnum: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    plaintext_modulus: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_scale: Option<u32>,
    max_depth: usize,
    security_bits: u32,
    insecure: bool,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn row(p: &Parameters) -> ParamRow {
    ParamRow {
        name: p.name().to_string(),
        scheme: match p.scheme() {
            Scheme::Bgv => "bgv",
            Scheme::Ckks => "ckks",
        },
        n: p.n(),
        log_q: round2(p.log_q()),
        log_p: round2(p.log_p()) + 0.0,
        log_qp: round2(p.log_qp()),
        limbs: p.q().len(),
        special_limbs: p.p().len(),
        dnum: p.dnum(),
        plaintext_modulus: p.plaintext_modulus(),
        log_scale: p.literal().log_scale,
        max_depth: match p.scheme() {
            Scheme::Bgv => max_depth(p),
            Scheme::Ckks => ckks::max_depth(p, ScalePolicy::Single),
        },
        security_bits: p.security().bits(),
        insecure: p.is_insecure(),
    }
}

fn cmd_params(json: bool) -> wgfhe::Result<()> {
    let rows = params::shipped()
        .into_iter()
        .chain(params::application_literals())
        .map(|lit| Parameters::new(lit).map(|p| row(&p)))
        .collect::<wgfhe::Result<Vec<_>>>()?;
    if json {
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|e| wgfhe::Error::InvalidParameters { reason: format!("JSON encoding failed: {e}") })?;
        println!("{text}");
    } else {
        println!(
            "{:<10} {:>6} {:>8} {:>7} {:>8} {:>5} {:>4} {:>4} {:>12} {:>5} {:>4}",
            "name", "N", "log Q", "log P", "log QP", "sec", "L+1", "k", "t / scale", "dnum", "depth"
        );
        for r in rows {
            let t_or_scale = match (r.plaintext_modulus, r.log_scale) {
                (Some(t), _) => t.to_string(),
                (None, Some(s)) => format!("2^{s}"),
                (None, None) => "-".to_string(),
            };
            println!(
                "{:<10} {:>6} {:>8.2} {:>7.2} {:>8.2} {:>5} {:>4} {:>4} {:>12} {:>5} {:>4}",
                r.name,
                r.n,
                r.log_q,
                r.log_p,
                r.log_qp,
                r.security_bits,
                r.limbs,
                r.special_limbs,
                t_or_scale,
                r.dnum,
                r.max_depth
            );
        }
    }
    Ok(())
}

fn cmd_demo(name: &str) -> wgfhe::Result<()> {
    let params = params::by_name(name)?;
    match BackendChoice::from_env()? {
        BackendChoice::Cpu => run_demo(CpuBackend::new(RingContext::new(&params)?)),
        BackendChoice::Gpu(dev) => run_demo(GpuBackend::new(RingContext::new(&params)?, dev)),
    }
}

fn run_demo<B: Backend>(backend: B) -> wgfhe::Result<()> {
    let params = backend.context().params().clone();
    println!(
        "parameters {}: N = {}, log2(QP) = {:.1}, t = {}, depth {} (estimated), backend {}",
        params.name(),
        params.n(),
        params.log_qp(),
        params.plaintext_modulus().unwrap_or(0),
        max_depth(&params),
        backend.name()
    );
    let start = Instant::now();
    let bgv = Bgv::new(backend)?;
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &[1, -3], true)?;
    println!("keys generated in {:.2?}", start.elapsed());
    let t = u64::from(bgv.plaintext_modulus());
    let slots = bgv.encoder().slots();
    let x: Vec<u64> = (0..slots as u64).map(|i| (i * 7 + 3) % t).collect();
    let y: Vec<u64> = (0..slots as u64).map(|i| (i * i + 1) % t).collect();
    let w: Vec<u64> = (0..slots as u64).map(|i| i % 5 + 1).collect();
    let enc = bgv.encoder();
    let ct_x = bgv.encrypt_symmetric(&sk, &enc.encode(&x)?)?;
    let ct_y = bgv.encrypt_symmetric(&sk, &enc.encode(&y)?)?;
    let pt_w = enc.encode(&w)?;
    let start = Instant::now();
    // r = rotate(x*y + w*x, 1) + y, then one more product with x, then a final modulus switch.
    let xy = bgv.mul_relin(&ct_x, &ct_y, &keys)?;
    let wx = bgv.mul_plain(&bgv.mod_switch_to_level(&ct_x, xy.level())?, &pt_w)?;
    let sum = bgv.add(&xy, &wx)?;
    let rot = bgv.rotate_columns(&sum, 1, &keys)?;
    let r = bgv.add(&rot, &bgv.mod_switch_to_level(&ct_y, rot.level())?)?;
    let r2 = bgv.mul_relin(&r, &ct_x, &keys)?;
    let out = bgv.mod_switch_to_min(&r2)?;
    let elapsed = start.elapsed();
    let got = enc.decode(&bgv.decrypt(&sk, &out)?)?;
    let half = slots / 2;
    let inner: Vec<u64> = x.iter().zip(&y).zip(&w).map(|((&a, &b), &c)| (a * b % t + c * a % t) % t).collect();
    let want: Vec<u64> = (0..slots)
        .zip(x.iter().zip(&y))
        .map(|(k, (&xk, &yk))| {
            let (row, col) = (k / half, k % half);
            let s = inner.get(row * half + (col + 1) % half).copied().unwrap_or(0);
            (s + yk) % t * xk % t
        })
        .collect();
    let ok = got == want;
    println!(
        "computed rotate(x*y + w*x, 1) + y, times x, on {slots} slots in {elapsed:.2?}: final level {}, \
         estimated noise 2^{:.1}, check {}",
        out.level(),
        out.noise_estimate(),
        if ok { "PASSED" } else { "FAILED" }
    );
    if !ok {
        return Err(wgfhe::Error::InvalidParameters {
            reason: "decrypted result differs from the clear computation".into(),
        });
    }
    Ok(())
}

fn cmd_info(json: bool) -> wgfhe::Result<()> {
    let dev = GpuDevice::new();
    if json {
        let value = match &dev {
            Ok(d) => serde_json::json!({
                "backend": "gpu",
                "adapter": d.summary(),
                "limits": {
                    "max_storage_buffer_binding_size": d.limits().max_storage_buffer_binding_size,
                    "max_buffer_size": d.limits().max_buffer_size,
                    "max_storage_buffers_per_shader_stage": d.limits().max_storage_buffers_per_shader_stage,
                    "max_compute_workgroups_per_dimension": d.limits().max_compute_workgroups_per_dimension,
                },
                "features": [],
            }),
            Err(e) => {
                serde_json::json!({"backend": "cpu", "adapter": null, "reason": e.to_string(), "limits": {}, "features": []})
            }
        };
        println!("{value:#}");
        return Ok(());
    }
    println!("wgfhe {}", env!("CARGO_PKG_VERSION"));
    match &dev {
        Ok(d) => println!(
            "gpu: {} ({}, {}, {})",
            d.summary().name,
            d.summary().backend,
            d.summary().device_type,
            d.summary().driver
        ),
        Err(e) => println!("gpu: none ({e})"),
    }
    println!("backends: cpu (reference, rayon across limbs), gpu (wgpu + WGSL)");
    println!("schemes: BGV (batch and coefficient encoding, hybrid key switching, modulus switching)");
    println!("         CKKS (canonical-embedding encoder, rescaling with 2^30 or 2^60 scales, rotations, conjugation)");
    Ok(())
}

fn cmd_verify(names: &[String], seed: u64, json: bool) -> wgfhe::Result<bool> {
    let dev = std::sync::Arc::new(GpuDevice::new()?);
    let sets: Vec<Parameters> = if names.is_empty() {
        vec![
            params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 65537)?,
            params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30)?,
            params::by_name("bgv-n13")?,
            params::by_name("ckks-n13")?,
        ]
    } else {
        names.iter().map(|n| params::by_name(n)).collect::<wgfhe::Result<_>>()?
    };
    let mut checks = Vec::new();
    for p in &sets {
        checks.extend(verify::kernel_checks(p, &dev, seed)?);
        checks.push(verify::program_check(p, &dev, seed as u8)?);
    }
    let passed = checks.iter().filter(|c| c.identical).count();
    let failed = checks.len() - passed;
    if json {
        let value = serde_json::json!({
            "adapter": dev.summary(),
            "params": sets.iter().map(|p| p.name().to_string()).collect::<Vec<_>>(),
            "checks": checks,
            "passed": passed,
            "failed": failed,
        });
        println!("{value:#}");
    } else {
        println!("adapter: {:?}", dev.summary());
        for c in &checks {
            println!("{:<8} {:<44} {}", if c.identical { "ok" } else { "DIFFERS" }, c.name, c.params);
        }
        println!("{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}

pub(crate) fn print_report(report: &impl Serialize, table: String, json: bool) -> wgfhe::Result<()> {
    if json {
        let text = serde_json::to_string_pretty(report)
            .map_err(|e| wgfhe::Error::InvalidParameters { reason: format!("JSON encoding failed: {e}") })?;
        println!("{text}");
    } else {
        print!("{table}");
    }
    Ok(())
}

fn cmd_bench(
    suite: Suite,
    name: &str,
    reps: usize,
    trace: Option<&std::path::Path>,
    lut_bits: u32,
    more: &bench_cmd::More,
    json: bool,
) -> wgfhe::Result<()> {
    match suite {
        Suite::Kernels => return bench_cmd::kernels(reps, more, json),
        Suite::Ledger => return bench_cmd::ledger(name, reps, lut_bits, more, json),
        Suite::Anchors => return bench_cmd::anchors(reps, more, json),
        Suite::Bxt | Suite::Compare => {}
    }
    let params = params::by_name(name)?;
    if params.scheme() != Scheme::Bgv {
        return Err(wgfhe::Error::InvalidField { field: "params", reason: "the bench suites need a BGV set" });
    }
    if let Suite::Compare = suite {
        let report = match BackendChoice::from_env()? {
            BackendChoice::Cpu => {
                let device = format!("CPU, {} threads", rayon::current_num_threads());
                wgfhe::bench::compare::run_with_extract(
                    CpuBackend::new(RingContext::new(&params)?),
                    device,
                    reps,
                    lut_bits,
                    more.extract_bits,
                )?
            }
            BackendChoice::Gpu(dev) => {
                let device = format!("{} ({})", dev.summary().name, dev.summary().backend);
                wgfhe::bench::compare::run_with_extract(
                    GpuBackend::new(RingContext::new(&params)?, dev),
                    device,
                    reps,
                    lut_bits,
                    more.extract_bits,
                )?
            }
        };
        let table = report.table();
        return print_report(&report, table, json);
    }
    let mut file = create_trace(trace)?;
    let trace_out = file.as_mut().map(|f| f as &mut dyn std::io::Write);
    let report = match BackendChoice::from_env()? {
        BackendChoice::Cpu => {
            let device = format!("CPU, {} threads", rayon::current_num_threads());
            wgfhe::bench::bxt::run_with(
                CpuBackend::new(RingContext::new(&params)?),
                device,
                reps,
                trace_out,
                more.timed,
            )?
        }
        BackendChoice::Gpu(dev) => {
            let device = format!("{} ({})", dev.summary().name, dev.summary().backend);
            wgfhe::bench::bxt::run_with(
                GpuBackend::new(RingContext::new(&params)?, dev),
                device,
                reps,
                trace_out,
                more.timed,
            )?
        }
    };
    if let Some(mut f) = file {
        std::io::Write::flush(&mut f)
            .map_err(|_| wgfhe::Error::InvalidField { field: "trace", reason: "write failed" })?;
    }
    if let Some(dir) = &more.plot {
        bench_cmd::plot_dir(dir)?;
        for p in wgfhe::bench::plots::bxt_variants(&report, dir)? {
            eprintln!("wrote {}", p.display());
        }
    }
    let table = report.table();
    print_report(&report, table, json)
}

/// A shipped or application set by name, or with `insecure` an insecure test set
/// ([`params::insecure_by_name`]), announced on stderr.
pub(crate) fn resolve_params(name: &str, insecure: bool) -> wgfhe::Result<Parameters> {
    match params::by_name(name) {
        Err(wgfhe::Error::UnknownParameterSet { .. }) if insecure => {
            let p = params::insecure_by_name(name)?;
            eprintln!("warning: {name} is an insecure test set (--insecure): not 128-bit secure, for experiments only");
            Ok(p)
        }
        other => other,
    }
}

/// Creates the trace file at `path`, if given (buffered).
pub(crate) fn create_trace(path: Option<&std::path::Path>) -> wgfhe::Result<Option<std::io::BufWriter<std::fs::File>>> {
    path.map(|p| {
        std::fs::File::create(p).map(std::io::BufWriter::new).map_err(|e| wgfhe::Error::InvalidField {
            field: "trace",
            reason: if e.kind() == std::io::ErrorKind::NotFound { "directory not found" } else { "cannot create file" },
        })
    })
    .transpose()
}

/// The progress bar of an encrypted inference over `total` images (hidden under `--json`).
pub(crate) fn image_bar(total: usize, hidden: bool) -> indicatif::ProgressBar {
    let bar = if hidden { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new(total as u64) };
    bar.set_style(
        indicatif::ProgressStyle::with_template("encrypted inference {bar:30} {pos}/{len} images [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// Options of `wgfhe mnist`.
#[derive(Debug, clap::Args)]
pub(crate) struct MnistArgs {
    /// Model: `lr` (logistic regression, 3 vs 8) or `cnn` (ten digits, exact ReLU tables).
    #[arg(long, value_enum, default_value_t = Model::Lr)]
    pub(crate) model: Model,
    /// Number of test images (default: LR all 1,984 3-vs-8 test images; CNN one batch).
    #[arg(long)]
    pub(crate) images: Option<usize>,
    /// ReLU path of the CNN: `lut` (fused exact tables) or `digits` (digit extraction and a
    /// pruned word-wise sign test; its secure set `bgv-cnn-n17` needs more than 24 GB of
    /// memory); the LR has no ReLU.
    #[arg(long, default_value = "lut")]
    pub(crate) relu: String,
    /// BXT variant: baseline, c, cs, cso or cso+k.
    #[arg(long, default_value = "cso")]
    pub(crate) variant: String,
    /// Fraction of comparison digits kept (CNN `--relu digits` only).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) keep: f64,
    /// Run the fault-aware model trained with the ReLU corruption of `--keep` (CNN
    /// `--relu digits` with `--keep` below 1 only; trained on first use, then cached).
    #[arg(long)]
    pub(crate) fault_aware: bool,
    /// Backend: auto, gpu or cpu (default: WGFHE_BACKEND, else auto).
    #[arg(long)]
    pub(crate) backend: Option<String>,
    /// Parameter set (default: bgv-lr-n13 for the LR, bgv-cnn-n16 for the CNN with
    /// `--relu lut`, bgv-cnn-n17 with `--relu digits`).
    #[arg(long)]
    pub(crate) params: Option<String>,
    /// Allow an insecure test set named `insecure-test-bgv-n{log_n}-q{Q primes}-p{P
    /// primes}-d{dnum}-t{t}` in `--params` (experiments only: not 128-bit secure).
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Directory of the MNIST files.
    #[arg(long, default_value = wgfhe::ml::mnist::DEFAULT_DIR)]
    pub(crate) data: std::path::PathBuf,
    /// Write the server's traffic-ledger records (JSON lines) here.
    #[arg(long)]
    pub(crate) trace: Option<std::path::PathBuf>,
    /// Time every dispatch (`elapsed_ns` in the trace; serialises the queue; LR only).
    #[arg(long)]
    pub(crate) timed: bool,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub(crate) json: bool,
}

fn cmd_mnist(a: &MnistArgs) -> wgfhe::Result<()> {
    use wgfhe::ml::{infer, lr, mnist};
    if a.relu != "lut" && a.relu != "digits" {
        return Err(wgfhe::Error::InvalidField { field: "relu", reason: "must be lut or digits" });
    }
    if ![1.0, 0.75, 0.5, 0.25].contains(&a.keep) {
        return Err(wgfhe::Error::InvalidField { field: "keep", reason: "must be 1, 0.75, 0.5 or 0.25" });
    }
    let variant = wgfhe::compress::Variant::parse(&a.variant)?;
    if a.model == Model::Cnn {
        if a.timed {
            return Err(wgfhe::Error::InvalidField { field: "timed", reason: "--timed is for the LR model only" });
        }
        return cnn_cmd::run(a, variant);
    }
    if a.relu != "lut" || a.keep != 1.0 || a.fault_aware {
        return Err(wgfhe::Error::InvalidField {
            field: "relu",
            reason: "--relu, --keep and --fault-aware apply to --model cnn only (the LR has no ReLU)",
        });
    }
    let params = resolve_params(a.params.as_deref().unwrap_or(params::LR_SET), a.insecure)?;
    let choice = match &a.backend {
        Some(name) => BackendChoice::from_name(name)?,
        None => BackendChoice::from_env()?,
    };
    let say = |msg: String| {
        if !a.json {
            println!("{msg}");
        }
    };
    let start = Instant::now();
    mnist::fetch(&a.data)?;
    let data = mnist::load(&a.data)?;
    let train = lr::Dataset::from_binary(&data.train.three_vs_eight());
    let test = lr::Dataset::from_binary(&data.test.three_vs_eight());
    say(format!(
        "MNIST 3 vs 8 from {}: {} training and {} test images ({:.1?})",
        a.data.display(),
        train.len(),
        test.len(),
        start.elapsed()
    ));
    let start = Instant::now();
    let float = lr::train(&train, &lr::TrainConfig::default())?;
    let model = float.quantise(7)?;
    let plain_accuracy = float.accuracy(&test)?;
    let quant_accuracy = model.accuracy(&test)?;
    say(format!(
        "logistic regression trained in {:.1?}: float test accuracy {:.2}%, 4-bit integer model {:.2}% \
         (weights in [-7, 7], worst-case |score| {})",
        start.elapsed(),
        100.0 * plain_accuracy,
        100.0 * quant_accuracy,
        model.bound()
    ));
    let total = a.images.unwrap_or(test.len()).min(test.len());
    let bar = image_bar(total, a.json);
    let mut file = create_trace(a.trace.as_deref())?;
    let trace = file.as_mut().map(|f| f as &mut dyn std::io::Write);
    let progress = |done: usize, _| bar.set_position(done as u64);
    let (backend_name, run) = match choice {
        BackendChoice::Cpu => (
            "cpu",
            infer::run_lr(
                CpuBackend::new(RingContext::new(&params)?),
                &model,
                &test,
                infer::LrOptions { images: Some(total), variant, timed: a.timed },
                progress,
                trace,
            )?,
        ),
        BackendChoice::Gpu(dev) => (
            "gpu",
            infer::run_lr(
                GpuBackend::new(RingContext::new(&params)?, dev),
                &model,
                &test,
                infer::LrOptions { images: Some(total), variant, timed: a.timed },
                progress,
                trace,
            )?,
        ),
    };
    bar.finish_and_clear();
    if let Some(mut f) = file {
        std::io::Write::flush(&mut f)
            .map_err(|_| wgfhe::Error::InvalidField { field: "trace", reason: "write failed" })?;
    }
    if a.json {
        let value = serde_json::json!({
            "model": "lr",
            "images": run.images,
            "relu": serde_json::Value::Null,
            "variant": variant.name(),
            "keep": a.keep,
            "backend": backend_name,
            "params": params.name(),
            "accuracy": run.accuracy,
            "agreement": run.agreement,
            "plain_accuracy": plain_accuracy,
            "quantised_accuracy": quant_accuracy,
            "batch_ms": run.batch_ms,
            "per_image_ms": run.per_image_ms,
            "encrypt_ms": run.encrypt_ms,
            "decrypt_ms": run.decrypt_ms,
            "peak_device_bytes": run.peak_device_bytes,
            "bytes_moved": run.bytes_moved,
            "dispatches": run.dispatches,
            "score_mismatches": run.score_mismatches,
        });
        println!("{value:#}");
    } else {
        println!(
            "encrypted ({}, {}, variant {}): {} images in {} batch(es), accuracy {:.2}%, agreement with the \
             quantised model {:.2}% ({} score mismatches)",
            params.name(),
            backend_name,
            variant.name(),
            run.images,
            run.batches,
            100.0 * run.accuracy,
            100.0 * run.agreement,
            run.score_mismatches
        );
        println!(
            "client encryption {:.0} ms, server {:.1} ms per batch ({:.4} ms per image), client decryption {:.0} ms; \
             {:.1} MB resident per batch, {:.1} MB moved by {} kernel dispatches",
            run.encrypt_ms,
            run.batch_ms,
            run.per_image_ms,
            run.decrypt_ms,
            run.peak_device_bytes as f64 / 1e6,
            run.bytes_moved as f64 / 1e6,
            run.dispatches
        );
    }
    if run.agreement < 1.0 || run.score_mismatches > 0 {
        return Err(wgfhe::Error::InvalidParameters {
            reason: "encrypted predictions differ from the quantised plaintext model".into(),
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.command {
        Command::Params { json } => cmd_params(json),
        Command::Demo { params } => cmd_demo(&params),
        Command::Info { json } => cmd_info(json),
        Command::Mnist(args) => cmd_mnist(&args),
        Command::Bench {
            suite,
            params,
            reps,
            trace,
            timed,
            lut_bits,
            extract_bits,
            log_n,
            limbs,
            anchor_params,
            cnn_params,
            plot,
            json,
        } => {
            let more = bench_cmd::More { timed, extract_bits, log_n, limbs, anchor_params, cnn_params, plot };
            let params = params.unwrap_or_else(|| {
                match suite {
                    Suite::Compare => "bgv-n15",
                    _ => "bgv-n14",
                }
                .to_owned()
            });
            cmd_bench(suite, &params, reps, trace.as_deref(), lut_bits, &more, json)
        }
        Command::Verify { params, seed, json } => match cmd_verify(&params, seed, json) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
