//! `wgfhe bench --suite kernels|ledger|anchors` and `--plot`.

use std::path::Path;
use std::sync::Arc;

use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{BackendChoice, CpuBackend, GpuBackend};
use wgfhe::bench::{anchors, kernels, machine, plots, stages};
use wgfhe::compress::Variant;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;

use crate::print_report;

/// The options of `wgfhe bench` that only these suites read.
pub(crate) struct More {
    /// Time every dispatch (bxt suite).
    pub(crate) timed: bool,
    /// Width of the compare suite's extracted values (0: no `extract` rows).
    pub(crate) extract_bits: u32,
    pub(crate) log_n: Vec<u32>,
    pub(crate) limbs: Vec<usize>,
    pub(crate) anchor_params: Vec<String>,
    pub(crate) cnn_params: String,
    pub(crate) plot: Option<std::path::PathBuf>,
}

/// Creates the plot directory.
pub(crate) fn plot_dir(dir: &Path) -> wgfhe::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|_| wgfhe::Error::InvalidField { field: "plot", reason: "cannot create the directory" })
}

fn cpu(p: &Parameters) -> wgfhe::Result<CpuBackend> {
    Ok(CpuBackend::new(RingContext::new(p)?))
}

fn gpu(dev: &Arc<GpuDevice>) -> impl Fn(&Parameters) -> wgfhe::Result<GpuBackend> + '_ {
    move |p| Ok(GpuBackend::new(RingContext::new(p)?, Arc::clone(dev)))
}

fn describe(choice: &BackendChoice) -> String {
    match choice {
        BackendChoice::Cpu => format!("CPU: {}", machine()),
        BackendChoice::Gpu(d) => format!("{} ({}); host {}", d.summary().name, d.summary().backend, machine()),
    }
}

pub(crate) fn kernels(reps: usize, more: &More, json: bool) -> wgfhe::Result<()> {
    let config = kernels::Config { log_ns: more.log_n.clone(), limbs: more.limbs.clone(), reps };
    let choice = BackendChoice::from_env()?;
    let device = describe(&choice);
    let report = match &choice {
        BackendChoice::Cpu => kernels::run(&cpu, device, &config)?,
        BackendChoice::Gpu(d) => kernels::run(&gpu(d), device, &config)?,
    };
    if let Some(dir) = &more.plot {
        plot_dir(dir)?;
        eprintln!("wrote {}", plots::kernel_throughput(&report, dir)?.display());
    }
    let table = report.table();
    print_report(&report, table, json)
}

pub(crate) fn ledger(name: &str, reps: usize, lut_bits: u32, more: &More, json: bool) -> wgfhe::Result<()> {
    let config = stages::Config {
        hmult: params::by_name(name)?,
        lr: params::by_name(params::LR_SET)?,
        cnn: params::by_name(&more.cnn_params)?,
        lr_pixels: 784,
        lr_variant: Variant::Cso,
        relu_domain: (1u64 << lut_bits.clamp(2, 20).saturating_sub(1)) - 1,
        relu_channels: 1,
        reps,
    };
    let choice = BackendChoice::from_env()?;
    let device = describe(&choice);
    let report = match &choice {
        BackendChoice::Cpu => stages::run(&cpu, device, &config)?,
        BackendChoice::Gpu(d) => stages::run(&gpu(d), device, &config)?,
    };
    if let Some(dir) = &more.plot {
        plot_dir(dir)?;
        eprintln!("wrote {}", plots::stage_ledger(&report, dir)?.display());
    }
    let table = report.table();
    print_report(&report, table, json)
}

pub(crate) fn anchors(reps: usize, more: &More, json: bool) -> wgfhe::Result<()> {
    let config = anchors::Config {
        ntt_log_ns: more.log_n.clone(),
        sets: more.anchor_params.iter().map(|n| params::by_name(n)).collect::<wgfhe::Result<_>>()?,
        reps,
        openfhe_threads: rayon::current_num_threads(),
        openfhe_python: std::env::var_os("WGFHE_OPENFHE_PYTHON").map(std::path::PathBuf::from),
    };
    let choice = BackendChoice::from_env()?;
    let device = describe(&choice);
    let report = match &choice {
        BackendChoice::Cpu => anchors::run(&cpu, device, &config)?,
        BackendChoice::Gpu(d) => anchors::run(&gpu(d), device, &config)?,
    };
    let table = report.table();
    print_report(&report, table, json)
}
