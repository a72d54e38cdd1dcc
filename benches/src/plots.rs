//! SVG charts of the benchmark reports (`wgfhe bench --plot DIR`): kernel throughput against
//! `N` per backend, BXT variant speedups and bytes per operation, and the stage ledger as
//! stacked bars. Each function writes one file into `dir` and returns its path.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::{bxt, kernels, stages};
use wgfhe::error::{Error, Result};

fn fail<E>(_: E) -> Error {
    Error::InvalidField { field: "plot", reason: "drawing the chart failed (is the directory writable?)" }
}

const SIZE: (u32, u32) = (960, 560);

/// The device description cut to fit a caption.
fn short(device: &str) -> String {
    let d = device.split(';').next().unwrap_or(device);
    if d.chars().count() > 60 {
        format!("{}...", d.chars().take(57).collect::<String>())
    } else {
        d.to_string()
    }
}

fn color(i: usize) -> RGBColor {
    let (r, g, b) = Palette99::pick(i).rgb();
    RGBColor(r, g, b)
}

/// `kernels_<backend>.svg`: GB/s of every kernel against `log2 N` at the report's largest limb
/// count, log scale.
pub fn kernel_throughput(report: &kernels::Report, dir: &Path) -> Result<PathBuf> {
    let path = dir.join(format!("kernels_{}.svg", report.header.backend));
    let limbs = report.rows.iter().map(|r| r.limbs).max().unwrap_or(1);
    let rows: Vec<&kernels::Row> = report.rows.iter().filter(|r| r.limbs == limbs).collect();
    let log_n = |r: &kernels::Row| f64::from(r.n.trailing_zeros());
    let (lo, hi) = rows.iter().map(|r| log_n(r)).fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    // Room on the right for the legend.
    let (lo, hi) = if lo > hi { (0.0, 1.0) } else { (lo - 0.3, hi + 1.6) };
    let gmax = rows.iter().map(|r| r.gbps).fold(1e-3, f64::max) * 2.0;
    let gmin = rows.iter().map(|r| r.gbps).filter(|&g| g > 0.0).fold(gmax, f64::min) / 2.0;
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Kernel throughput, {} ({}), {limbs} limbs; copy roofline {:.2} GB/s",
                report.header.backend, report.header.device, report.copy_gbps
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(lo..hi, (gmin..gmax).log_scale())
        .map_err(fail)?;
    chart.configure_mesh().x_desc("log2 N").y_desc("GB/s (ledger bytes / median)").draw().map_err(fail)?;
    for (i, k) in kernels::KERNELS.iter().enumerate() {
        let pts: Vec<(f64, f64)> =
            rows.iter().filter(|r| r.kernel == *k && r.gbps > 0.0).map(|r| (log_n(r), r.gbps)).collect();
        let c = color(i);
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(fail)?
            .label(*k)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)?;
    drop(chart);
    drop(root);
    Ok(path)
}

/// Grouped bars: for each of `groups` (x), one bar per series with `value(group, series)`.
fn grouped_bars(
    path: &Path,
    title: &str,
    y_desc: &str,
    groups: &[&str],
    series: &[&str],
    value: &dyn Fn(usize, usize) -> Option<f64>,
) -> Result<()> {
    let ymax = (0..groups.len())
        .flat_map(|g| (0..series.len()).filter_map(move |s| value(g, s)))
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.15;
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..groups.len() as f64 + 1.3, -0.06 * ymax..ymax)
        .map_err(fail)?;
    chart.configure_mesh().disable_x_mesh().x_labels(0).y_desc(y_desc).draw().map_err(fail)?;
    // Group names under the bars (the legend takes the room on the right).
    chart
        .draw_series(groups.iter().enumerate().map(|(g, name)| {
            Text::new(name.to_string(), (g as f64 + 0.15, -0.02 * ymax), ("sans-serif", 13).into_font())
        }))
        .map_err(fail)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (s, name) in series.iter().enumerate() {
        let c = color(s);
        let bars: Vec<Rectangle<(f64, f64)>> = (0..groups.len())
            .filter_map(|g| {
                let v = value(g, s)?;
                let x0 = g as f64 + 0.1 + s as f64 * width;
                Some(Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], c.filled()))
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(fail)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)?;
    Ok(())
}

/// `bxt_speedup_<backend>.svg` (baseline median over each variant's, per operation) and
/// `bxt_bytes_<backend>.svg` (bytes read and written per operation and variant, `baseline64`
/// included).
pub fn bxt_variants(report: &bxt::Report, dir: &Path) -> Result<Vec<PathBuf>> {
    let ops: Vec<&str> = bxt::OPS.to_vec();
    let mut variants: Vec<&str> = Vec::new();
    for r in &report.rows {
        if !variants.contains(&r.variant) {
            variants.push(r.variant);
        }
    }
    let find = |g: usize, s: usize| {
        let (op, v) = (ops.get(g)?, variants.get(s)?);
        report.rows.iter().find(|r| r.op == *op && r.variant == *v)
    };
    let speed = dir.join(format!("bxt_speedup_{}.svg", report.header.backend));
    let timed: Vec<&str> = variants.iter().copied().filter(|v| *v != "baseline64").collect();
    grouped_bars(
        &speed,
        &format!(
            "BXT speedup over the baseline, {} on {} ({})",
            report.params,
            report.header.backend,
            short(&report.header.device)
        ),
        "speedup (x)",
        &ops,
        &timed,
        &|g, s| {
            let v = timed.get(s)?;
            let op = ops.get(g)?;
            report.rows.iter().find(|r| r.op == *op && r.variant == *v)?.speedup
        },
    )?;
    let bytes = dir.join(format!("bxt_bytes_{}.svg", report.header.backend));
    grouped_bars(
        &bytes,
        &format!("Bytes moved per operation (read + written), {}", report.params),
        "MB",
        &ops,
        &variants,
        &|g, s| find(g, s).map(|r| (r.bytes_read + r.bytes_written) as f64 / 1e6),
    )?;
    Ok(vec![speed, bytes])
}

/// `ledger_<backend>.svg`: one stacked bar per job, each stage's share of the job's time.
pub fn stage_ledger(report: &stages::Report, dir: &Path) -> Result<PathBuf> {
    let path = dir.join(format!("ledger_{}.svg", report.header.backend));
    let jobs: Vec<String> =
        report.jobs.iter().map(|j| format!("{} (N=2^{}, {}t)", j.job, j.n.trailing_zeros(), j.threads)).collect();
    let root = SVGBackend::new(&path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Stage ledger, {} ({})", report.header.backend, short(&report.header.device)),
            ("sans-serif", 16),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..jobs.len().max(1) as f64 + 1.3, -6.0..100.0)
        .map_err(fail)?;
    chart.configure_mesh().disable_x_mesh().x_labels(0).y_desc("share of the job's time (%)").draw().map_err(fail)?;
    chart
        .draw_series(
            jobs.iter()
                .enumerate()
                .map(|(g, name)| Text::new(name.clone(), (g as f64 + 0.1, -2.0), ("sans-serif", 12).into_font())),
        )
        .map_err(fail)?;
    for (s, stage) in stages::STAGES.iter().enumerate() {
        let c = color(s);
        let bars: Vec<Rectangle<(f64, f64)>> = report
            .jobs
            .iter()
            .enumerate()
            .map(|(g, j)| {
                let below: f64 = j.stages.iter().take(s).map(|x| x.share).sum::<f64>() * 100.0;
                let h = j.stages.get(s).map_or(0.0, |x| x.share) * 100.0;
                Rectangle::new([(g as f64 + 0.2, below), (g as f64 + 0.8, below + h)], c.filled())
            })
            .collect();
        chart
            .draw_series(bars)
            .map_err(fail)?
            .label(stage.name())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)?;
    drop(chart);
    drop(root);
    Ok(path)
}
