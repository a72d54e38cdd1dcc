//! `wgfhe-sim`: replays wgfhe traffic-ledger traces on a GPU model. See the crate docs and the
//! README's sim/ section.

use std::path::PathBuf;

use clap::Parser;
use wgfhe_sim::calibrate::{self, CONSTANTS};
use wgfhe_sim::gpu::{Gpu, BUILT_IN};
use wgfhe_sim::model::{Mul, Options, Prng, Unpack};
use wgfhe_sim::report::{self, Workload, MODEL_LABEL};
use wgfhe_sim::{trace, Error, Result};

/// Prints a line to stdout; a closed stdout (a pipe into `head`) ends the program quietly.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

/// Predicts per-dispatch GPU time for wgfhe ledger traces with a memory-hierarchy model.
#[derive(Debug, Parser)]
#[command(name = "wgfhe-sim", version)]
struct Args {
    /// Ledger trace (JSON lines, `.gz` allowed), e.g. from `wgfhe bench --suite bxt --trace`.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// GPU: a6000, a100-80gb, h100, h200, apple-m2, `all`, or a .toml/.json description.
    #[arg(long, default_value = "a6000")]
    gpu: String,
    /// PRNG: `sw` (software ChaCha12 in the kernel, as ours) or `unit` (hardware PRNG unit).
    #[arg(long, default_value = "sw")]
    prng: String,
    /// Unpack: `sw` (shifts and masks in the kernel, as ours) or `converter` (hardware).
    #[arg(long, default_value = "sw")]
    unpack: String,
    /// Converter latency in cycles (with `--unpack converter` and in the paper comparison).
    #[arg(long, default_value_t = 2.0)]
    converter_latency: f64,
    /// 32x32->64 products: `auto` (native 64-bit where the GPU description has
    /// `shader_int64`, as the device selects; emulated elsewhere), `native` or `emulated`
    /// (16-bit halves, `shared/mul_emulated.wgsl`), whatever the GPU has. Applies to the paper
    /// comparison too.
    #[arg(long, default_value = "auto")]
    mul: String,
    /// Print our predicted speedups next to the BXT paper's figures.
    #[arg(long)]
    compare_paper: bool,
    /// Workload trace for `--compare-paper`, `NAME:VARIANT=FILE` (NAME lr, cnn or cso50;
    /// VARIANT baseline, c, cs, cso, cso+k); repeatable.
    #[arg(long)]
    workload: Vec<String>,
    /// Fit the calibrated-device constants on these timed traces (repeatable).
    #[arg(long)]
    calibrate: bool,
    /// Timed traces to fit on (`--calibrate`).
    #[arg(long)]
    fit: Vec<PathBuf>,
    /// Held-out timed traces (`--calibrate`; default: the odd-numbered dispatches of the fit
    /// traces, fitting on the even ones).
    #[arg(long)]
    check: Vec<PathBuf>,
    /// List the built-in GPUs.
    #[arg(long)]
    list_gpus: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn mul(a: &Args) -> Result<Mul> {
    match a.mul.as_str() {
        "auto" => Ok(Mul::Auto),
        "native" => Ok(Mul::Native),
        "emulated" => Ok(Mul::Emulated),
        _ => Err(Error::Argument { what: "--mul", reason: "must be auto, native or emulated".into() }),
    }
}

fn options(a: &Args) -> Result<Options> {
    let prng = match a.prng.as_str() {
        "sw" => Prng::Software,
        "unit" => Prng::Unit,
        _ => return Err(Error::Argument { what: "--prng", reason: "must be sw or unit".into() }),
    };
    if !(a.converter_latency.is_finite() && a.converter_latency >= 0.0) {
        return Err(Error::Argument { what: "--converter-latency", reason: "must be a non-negative number".into() });
    }
    let unpack = match a.unpack.as_str() {
        "sw" => Unpack::Software,
        "converter" => Unpack::Converter { latency_cycles: a.converter_latency },
        _ => return Err(Error::Argument { what: "--unpack", reason: "must be sw or converter".into() }),
    };
    Ok(Options { prng, unpack, mul: mul(a)?, ..Options::default() })
}

fn gpus(name: &str) -> Result<Vec<Gpu>> {
    if name == "all" {
        BUILT_IN.iter().map(|(n, _)| Gpu::load(n)).collect()
    } else {
        Ok(vec![Gpu::load(name)?])
    }
}

fn parse_workload(s: &str) -> Result<Workload> {
    let bad = || Error::Argument { what: "--workload", reason: format!("{s}: expected NAME:VARIANT=FILE") };
    let (head, file) = s.split_once('=').ok_or_else(bad)?;
    let (name, variant) = head.split_once(':').ok_or_else(bad)?;
    if name.is_empty() || variant.is_empty() || file.is_empty() {
        return Err(bad());
    }
    Ok(Workload { name: name.into(), variant: variant.into(), trace: trace::read(std::path::Path::new(file))? })
}

fn json_out(v: &serde_json::Value) {
    say!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
}

fn fmt_x(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.2}x"))
}

fn cmd_predict(a: &Args, opts: &Options) -> Result<()> {
    let path = a.trace.as_ref().ok_or(Error::Argument { what: "--trace", reason: "a trace is needed".into() })?;
    let t = trace::read(path)?;
    let mut all = Vec::new();
    for gpu in gpus(&a.gpu)? {
        let rows = report::per_op(&gpu, &t, opts);
        if a.json {
            all.push(serde_json::json!({ "gpu": gpu.name, "options": opts, "ops": rows }));
            continue;
        }
        say!("{MODEL_LABEL}");
        say!("{} ({}): {}, trace {}", gpu.name, gpu.description, opts.label_on(&gpu), path.display());
        say!(
            "{:<12} {:<10} {:>6} {:>8} {:>14} {:>9} {:>14} {:>10}",
            "op",
            "variant",
            "calls",
            "launches",
            "predicted us",
            "speedup",
            "measured us",
            "bound"
        );
        for r in rows {
            say!(
                "{:<12} {:<10} {:>6} {:>8} {:>14.1} {:>9} {:>14} {:>10}",
                r.op,
                r.variant,
                r.calls,
                r.launches,
                r.predicted_us,
                fmt_x(r.speedup),
                r.measured_us.map_or("-".into(), |m| format!("{m:.1}")),
                r.bound
            );
        }
        say!();
    }
    if a.json {
        json_out(&serde_json::json!({ "label": MODEL_LABEL, "trace": path.display().to_string(), "results": all }));
    }
    Ok(())
}

fn cmd_compare(a: &Args) -> Result<()> {
    let bench = a.trace.as_ref().map(|p| trace::read(p)).transpose()?;
    let workloads: Vec<Workload> = a.workload.iter().map(|w| parse_workload(w)).collect::<Result<_>>()?;
    let mul = mul(a)?;
    let hw = Options { mul, ..Options::bxt_hardware(a.converter_latency) };
    let sw = Options { mul, ..Options::software() };
    let mut all = Vec::new();
    for gpu in gpus(&a.gpu)? {
        let rows = report::compare_paper(&gpu, bench.as_deref(), &workloads, &hw);
        let sweep: Vec<(f64, Option<f64>, Option<f64>)> = [2.0, 4.0, 8.0, 16.0, 32.0]
            .into_iter()
            .map(|lat| {
                let o = Options { mul, ..Options::bxt_hardware(lat) };
                let per = bench.as_deref().map(|b| report::per_op(&gpu, b, &o)).unwrap_or_default();
                (lat, report::mean_speedup(&per, "cs"), report::mean_speedup(&per, "cso"))
            })
            .collect();
        let per_sw = bench.as_deref().map(|b| report::per_op(&gpu, b, &sw)).unwrap_or_default();
        let per_hw = bench.as_deref().map(|b| report::per_op(&gpu, b, &hw)).unwrap_or_default();
        if a.json {
            let sweep_json: Vec<_> = sweep
                .iter()
                .map(|(l, cs, cso)| serde_json::json!({ "converter_latency_cycles": l, "cs": cs, "cso": cso }))
                .collect();
            all.push(serde_json::json!({
                "gpu": gpu.name, "software": sw.label_on(&gpu), "hardware": hw.label_on(&gpu), "rows": rows, "converter_sweep": sweep_json,
                "per_op_software": per_sw, "per_op_hardware": per_hw,
            }));
            continue;
        }
        say!("{MODEL_LABEL}");
        say!(
            "{} ({}); 'sw' = our kernels as they are ({}), 'hw' = {}; per-op mean over {}",
            gpu.name,
            gpu.description,
            sw.label_on(&gpu),
            hw.label_on(&gpu),
            report::PAPER_OPS.join(", ")
        );
        say!(
            "{:<12} {:<8} {:>8} {:>10} {:>10} {:>10} {:>12}  note",
            "what",
            "variant",
            "paper",
            "ours sw",
            "ours hw",
            "hw-paper",
            "hw vs 64-bit"
        );
        for r in &rows {
            say!(
                "{:<12} {:<8} {:>8} {:>10} {:>10} {:>10} {:>12}  {}",
                r.what,
                r.variant,
                format!("{:.1}x", r.paper),
                fmt_x(r.ours_software),
                fmt_x(r.ours_hardware),
                r.difference.map_or("-".into(), |d| format!("{d:+.2}")),
                fmt_x(r.ours_hardware_vs_64),
                r.note
            );
        }
        if bench.is_some() {
            say!("converter latency sweep (hw, per-op mean): {}", {
                let s: Vec<String> =
                    sweep.iter().map(|(l, cs, cso)| format!("{l} cy: cs {} cso {}", fmt_x(*cs), fmt_x(*cso))).collect();
                s.join("; ")
            });
            say!(
                "{:<12} {:<10} {:>12} {:>9} {:>10} {:>12} {:>9} {:>10}",
                "op",
                "variant",
                "sw us",
                "sw x",
                "sw bound",
                "hw us",
                "hw x",
                "hw bound"
            );
            for (s, h) in per_sw.iter().zip(&per_hw) {
                say!(
                    "{:<12} {:<10} {:>12.1} {:>9} {:>10} {:>12.1} {:>9} {:>10}",
                    s.op,
                    s.variant,
                    s.predicted_us,
                    fmt_x(s.speedup),
                    s.bound,
                    h.predicted_us,
                    fmt_x(h.speedup),
                    h.bound
                );
            }
        }
        say!();
    }
    if a.json {
        json_out(&serde_json::json!({ "label": MODEL_LABEL, "results": all }));
    }
    Ok(())
}

fn cmd_calibrate(a: &Args) -> Result<()> {
    if a.fit.is_empty() {
        return Err(Error::Argument { what: "--fit", reason: "--calibrate needs at least one --fit trace".into() });
    }
    let mut fit_set = Vec::new();
    for p in &a.fit {
        fit_set.extend(trace::read(p)?);
    }
    let (train, held) = if a.check.is_empty() {
        calibrate::split_alternate(&fit_set)
    } else {
        let mut held = Vec::new();
        for p in &a.check {
            held.extend(trace::read(p)?);
        }
        (fit_set, held)
    };
    let fit = calibrate::fit(&train)?;
    let train_err = calibrate::errors(&fit, &train);
    let held_err = calibrate::errors(&fit, &held);
    if a.json {
        let constants: serde_json::Map<String, serde_json::Value> =
            CONSTANTS.iter().zip(fit.constants).map(|(n, c)| ((*n).to_string(), serde_json::json!(c))).collect();
        json_out(&serde_json::json!({
            "label": "MODEL FIT (additive model of a measured device; errors are model vs measurement)",
            "fit_traces": a.fit, "check_traces": a.check, "fitted_dispatches": fit.dispatches,
            "constants": constants, "fit_error": train_err, "held_out_error": held_err,
            "noise_floor_fit": calibrate::noise_floor(&train), "noise_floor_held_out": calibrate::noise_floor(&held),
        }));
        return Ok(());
    }
    say!("MODEL FIT (additive model of a measured device; errors are model vs measurement)");
    say!("fitted on {} timed dispatches:", fit.dispatches);
    for (n, c) in CONSTANTS.iter().zip(fit.constants) {
        say!("  {n:<22} {c:.6}");
    }
    for (title, errs, set) in [("fit set", &train_err, &train), ("held out", &held_err, &held)] {
        let noise = calibrate::noise_floor(set).map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
        say!("{title} (noise floor: median deviation of identical dispatches from their median {noise}):");
        say!(
            "  {:<14} {:>6} {:>12} {:>12} {:>10} {:>12}",
            "family",
            "disp",
            "measured ms",
            "model ms",
            "sum err",
            "median |err|"
        );
        for e in errs.iter() {
            say!(
                "  {:<14} {:>6} {:>12.3} {:>12.3} {:>9.1}% {:>11.1}%",
                e.family,
                e.dispatches,
                e.measured_ms,
                e.predicted_ms,
                100.0 * e.total_error,
                100.0 * e.median_abs_error
            );
        }
    }
    Ok(())
}

fn run() -> Result<()> {
    let a = Args::parse();
    if a.list_gpus {
        for (n, _) in BUILT_IN {
            let g = Gpu::load(n)?;
            say!(
                "{:<10} {} ({} SMs, {} MHz, {} GB/s, L2 {} MB; {})",
                g.name,
                g.description,
                g.sms,
                g.clock_mhz,
                g.dram_gbs,
                g.l2_mb,
                g.source
            );
        }
        return Ok(());
    }
    if a.calibrate {
        return cmd_calibrate(&a);
    }
    if a.compare_paper {
        return cmd_compare(&a);
    }
    cmd_predict(&a, &options(&a)?)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("wgfhe-sim: {e}");
        std::process::exit(2);
    }
}
