//! Per-operation summaries and the comparison with the BXT paper's figures.

use serde::Serialize;

use crate::gpu::Gpu;
use crate::model::{predict, total, Options};
use crate::trace::Dispatch;

/// Label printed on every output: the numbers are predictions of a model.
///
/// The model is fitted only on the devices we have (the CPU backend and lavapipe); no real GPU's
/// per-dispatch device times have been fitted yet, so the label says it is uncalibrated there:
/// it predicted 0.29 ms for a `bgv-n16` HMULT that an NVIDIA H200 ran in 2.4 ms.
pub const MODEL_LABEL: &str = "MODEL PREDICTION (wgfhe-sim roofline + L2-reuse model, not a measurement; \
     UNCALIBRATED for real GPUs: it predicted 0.29 ms for a bgv-n16 HMULT that an H200 ran in 2.4 ms)";

/// The operations the paper averages per-op speedups over.
pub const PAPER_OPS: [&str; 5] = ["padd", "pmult", "hadd", "hmult", "hrotate"];

/// The paper's per-op average speedups over its baseline: C, CS, CSO.
pub const PAPER_PER_OP: [(&str, f64); 3] = [("c", 1.3), ("cs", 2.5), ("cso", 2.9)];

/// The paper's workload speedups: `(workload, variant, speedup)`.
pub const PAPER_WORKLOADS: [(&str, &str, f64); 3] = [("lr", "cso", 2.8), ("cnn", "cso", 2.4), ("cso50", "cso", 3.8)];

/// Predicted time of one (operation, variant).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    /// Operation.
    pub op: String,
    /// Variant.
    pub variant: String,
    /// Trace records (backend calls) of the operation.
    pub calls: usize,
    /// Launches the model charges (GPU dispatches and copy commands: the trace's
    /// `gpu_dispatches` and `gpu_copies`, or the planned passes of an older trace).
    pub launches: u64,
    /// Predicted microseconds.
    pub predicted_us: f64,
    /// Baseline's predicted time over this one, same operation.
    pub speedup: Option<f64>,
    /// Measured microseconds (sum of `elapsed_ns`, timed traces only).
    pub measured_us: Option<f64>,
    /// The dominant term over the operation's time (`dram`, `l2`, `int`, `prng_unit`, `launch`).
    pub bound: String,
    /// Predicted microseconds per kernel, in first-seen order.
    pub by_kernel: Vec<(String, f64)>,
}

/// Groups `trace` by (op, variant) in first-seen order and predicts each group on its own,
/// starting from a cold L2 (a bench trace runs each group separately, on inputs no other group
/// wrote; an unlabelled trace is one group replayed in order).
#[must_use]
pub fn per_op(gpu: &Gpu, trace: &[Dispatch], opts: &Options) -> Vec<OpRow> {
    let label =
        |d: &Dispatch| (d.op.clone().unwrap_or_else(|| "all".into()), d.variant.clone().unwrap_or_else(|| "-".into()));
    let mut keys: Vec<(String, String)> = Vec::new();
    for d in trace {
        let k = label(d);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut rows: Vec<OpRow> = keys
        .into_iter()
        .map(|(op, variant)| {
            let group: Vec<Dispatch> =
                trace.iter().filter(|d| label(d) == (op.clone(), variant.clone())).cloned().collect();
            let preds = predict(gpu, &group, opts);
            let predicted = total(&preds);
            let measured = if group.iter().all(|d| d.elapsed_ns.is_some()) {
                Some(group.iter().filter_map(|d| d.elapsed_ns).sum::<u64>() as f64 / 1e3)
            } else {
                None
            };
            let mut by_bound: Vec<(&str, f64)> = Vec::new();
            for p in &preds {
                match by_bound.iter_mut().find(|(b, _)| *b == p.bound) {
                    Some(e) => e.1 += p.seconds,
                    None => by_bound.push((p.bound, p.seconds)),
                }
            }
            let bound = by_bound.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map_or("-", |b| b.0).to_string();
            let mut by_kernel: Vec<(String, f64)> = Vec::new();
            for p in &preds {
                match by_kernel.iter_mut().find(|(k, _)| *k == p.kernel) {
                    Some(e) => e.1 += p.seconds * 1e6,
                    None => by_kernel.push((p.kernel.clone(), p.seconds * 1e6)),
                }
            }
            OpRow {
                op,
                variant,
                calls: group.len(),
                launches: preds.iter().map(|p| p.launches).sum(),
                predicted_us: predicted * 1e6,
                speedup: None,
                measured_us: measured,
                bound,
                by_kernel,
            }
        })
        .collect();
    let bases: Vec<(String, f64)> =
        rows.iter().filter(|r| r.variant == "baseline").map(|r| (r.op.clone(), r.predicted_us)).collect();
    for r in &mut rows {
        r.speedup = bases
            .iter()
            .find(|(op, _)| *op == r.op)
            .and_then(|(_, b)| (r.predicted_us > 0.0).then(|| b / r.predicted_us));
    }
    rows
}

/// Mean over [`PAPER_OPS`] of the speedup of `variant` in `rows` (`None` if an op is missing).
#[must_use]
pub fn mean_speedup(rows: &[OpRow], variant: &str) -> Option<f64> {
    let mut sum = 0.0;
    for op in PAPER_OPS {
        sum += rows.iter().find(|r| r.op == op && r.variant == variant)?.speedup?;
    }
    Some(sum / PAPER_OPS.len() as f64)
}

/// One row of the paper comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperRow {
    /// What is compared (`per-op mean`, or a workload name).
    pub what: String,
    /// Variant.
    pub variant: String,
    /// The paper's speedup.
    pub paper: f64,
    /// Our predicted speedup with our kernels as they are (software PRNG and unpack).
    pub ours_software: Option<f64>,
    /// Our predicted speedup with the paper's hardware (PRNG unit, converter).
    pub ours_hardware: Option<f64>,
    /// `ours_hardware - paper`.
    pub difference: Option<f64>,
    /// Our predicted speedup with the paper's hardware over a baseline whose residues and
    /// tables sit in 64-bit words (twice the bytes; the layout of the paper's baseline), the
    /// variants unchanged.
    pub ours_hardware_vs_64: Option<f64>,
    /// Why a number is missing, or for a workload with both traces the cause of the
    /// difference ([`Cause::note`]).
    pub note: String,
    /// For a workload with both traces: where the baseline's predicted time goes, with the
    /// paper's hardware ([`cause`]).
    pub cause: Option<Cause>,
}

/// Why a workload's predicted speedup is what it is: the baseline's predicted time split into
/// the dispatches the variant's trace repeats unchanged and those it changes ([`cause`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cause {
    /// Dispatches of the baseline trace.
    pub baseline_dispatches: usize,
    /// Dispatches of the variant trace.
    pub variant_dispatches: usize,
    /// Dispatches that occur, identical in every field but the time and labels (kernel, `n`,
    /// limbs, every byte, word and operation count, launches), in both traces (matched as
    /// multisets: the smaller count of each distinct record).
    pub shared_dispatches: usize,
    /// Share of the baseline's predicted time in those shared dispatches: the part the variant
    /// does not change.
    pub shared_share: f64,
    /// The shared dispatches' shares of the baseline's predicted time per kernel family
    /// ([`Dispatch::family`]), largest first.
    pub shared_families: Vec<(String, f64)>,
    /// Predicted seconds of the baseline's other dispatches (the work the variant changes).
    pub changed_baseline_s: f64,
    /// Predicted seconds of the variant's own dispatches (what it does instead).
    pub changed_variant_s: f64,
    /// The changed dispatches' predicted seconds per kernel family: `(family, baseline s,
    /// variant s)`, the baseline's largest first.
    pub changed_families: Vec<(String, f64, f64)>,
    /// `changed_baseline_s / changed_variant_s`: the speedup on the part the variant changes.
    pub changed_speedup: Option<f64>,
    /// `1 / shared_share`: the whole workload's speedup if the changed part took no time at all
    /// (Amdahl's bound).
    pub limit: Option<f64>,
}

impl Cause {
    /// One line: the shared share and its largest families, the changed part's families and
    /// speedup, the bound, and, when the bound is below `paper`, the share of changed work
    /// `paper` needs (`1 - 1/paper`).
    #[must_use]
    pub fn note(&self, variant: &str, paper: f64) -> String {
        let shared: Vec<String> = self
            .shared_families
            .iter()
            .filter(|(_, share)| *share >= 0.005)
            .take(5)
            .map(|(f, share)| format!("{f} {:.0}%", 100.0 * share))
            .collect();
        let names = |of_variant: bool| -> Vec<&str> {
            self.changed_families
                .iter()
                .filter(|(_, b, v)| if of_variant { *v > 0.0 } else { *b > 0.0 })
                .map(|(f, _, _)| f.as_str())
                .collect()
        };
        let mut out = format!(
            "{:.1}% of the baseline's hw time is in dispatches the {variant} trace repeats unchanged",
            100.0 * self.shared_share
        );
        if !shared.is_empty() {
            out += &format!(" ({})", shared.join(", "));
        }
        out += &format!(
            "; the {:.1}% it changes ({} -> {}) runs {} faster",
            100.0 * (1.0 - self.shared_share),
            names(false).join("+"),
            names(true).join("+"),
            self.changed_speedup.map_or("-".into(), |x| format!("{x:.2}x"))
        );
        if let Some(limit) = self.limit {
            out += &format!("; at most {limit:.3}x if that part took no time");
            if limit < paper {
                out += &format!(
                    "; the paper's {paper:.1}x needs at least {:.0}% of the time in work the variant changes",
                    100.0 * (1.0 - 1.0 / paper)
                );
            }
        }
        out
    }
}

/// The record of `d` without its time and labels (what [`cause`] matches on).
fn shape_of(d: &Dispatch) -> Dispatch {
    Dispatch { op: None, variant: None, elapsed_ns: None, ..d.clone() }
}

/// Which dispatches of `a` also occur in `b` (multiset matching on [`shape_of`], the first
/// occurrences in `a` matched first).
fn shared_in(a: &[Dispatch], b: &[Dispatch]) -> Vec<bool> {
    let mut left: std::collections::HashMap<Dispatch, usize> = std::collections::HashMap::new();
    for d in b {
        *left.entry(shape_of(d)).or_default() += 1;
    }
    a.iter()
        .map(|d| match left.get_mut(&shape_of(d)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .collect()
}

/// The cause of a workload's predicted speedup of `variant` over `base` under `opts`, from the
/// per-dispatch predictions of both traces ([`Cause`]); `None` when the baseline predicts no
/// time.
#[must_use]
pub fn cause(gpu: &Gpu, base: &[Dispatch], variant: &[Dispatch], opts: &Options) -> Option<Cause> {
    let (pb, pv) = (predict(gpu, base, opts), predict(gpu, variant, opts));
    let tb = total(&pb);
    if tb <= 0.0 {
        return None;
    }
    let (shared_b, shared_v) = (shared_in(base, variant), shared_in(variant, base));
    let mut families: Vec<(String, f64)> = Vec::new();
    let (mut shared_s, mut changed_b) = (0.0, 0.0);
    for ((d, p), shared) in base.iter().zip(&pb).zip(&shared_b) {
        if *shared {
            shared_s += p.seconds;
            match families.iter_mut().find(|(f, _)| f == d.family()) {
                Some(e) => e.1 += p.seconds / tb,
                None => families.push((d.family().to_string(), p.seconds / tb)),
            }
        } else {
            changed_b += p.seconds;
        }
    }
    families.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut changed: Vec<(String, f64, f64)> = Vec::new();
    let mut add = |family: &str, b: f64, v: f64| match changed.iter_mut().find(|(f, _, _)| f == family) {
        Some(e) => {
            e.1 += b;
            e.2 += v;
        }
        None => changed.push((family.to_string(), b, v)),
    };
    for ((d, p), shared) in base.iter().zip(&pb).zip(&shared_b) {
        if !*shared {
            add(d.family(), p.seconds, 0.0);
        }
    }
    let mut changed_v = 0.0;
    for ((d, p), shared) in variant.iter().zip(&pv).zip(&shared_v) {
        if !*shared {
            changed_v += p.seconds;
            add(d.family(), 0.0, p.seconds);
        }
    }
    changed.sort_by(|a, b| b.1.total_cmp(&a.1));
    let share = shared_s / tb;
    Some(Cause {
        baseline_dispatches: base.len(),
        variant_dispatches: variant.len(),
        shared_dispatches: shared_b.iter().filter(|s| **s).count(),
        shared_share: share,
        shared_families: families,
        changed_baseline_s: changed_b,
        changed_variant_s: changed_v,
        changed_families: changed,
        changed_speedup: (changed_v > 0.0).then(|| changed_b / changed_v),
        limit: (share > 0.0).then(|| 1.0 / share),
    })
}

/// The trace with every byte count of the `baseline` variant's dispatches doubled (residues in
/// 64-bit words, as in 64-bit-word libraries; arithmetic unchanged). `all` doubles every
/// dispatch (an unlabelled baseline workload trace).
#[must_use]
pub fn as_baseline64(trace: &[Dispatch], all: bool) -> Vec<Dispatch> {
    trace
        .iter()
        .map(|d| {
            let mut d = d.clone();
            if all || d.variant.as_deref() == Some("baseline") {
                for x in [
                    &mut d.bytes_read,
                    &mut d.bytes_written,
                    &mut d.key_bytes,
                    &mut d.table_bytes,
                    &mut d.plaintext_bytes,
                ] {
                    *x *= 2;
                }
            }
            d
        })
        .collect()
}

/// A workload trace given on the command line: `name:variant=FILE`.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Workload (`lr`, `cnn`, `cso50`).
    pub name: String,
    /// Variant.
    pub variant: String,
    /// Its dispatches.
    pub trace: Vec<Dispatch>,
}

/// The comparison table: per-op means from `bench` (a labelled bench trace) and workload
/// speedups from `workloads`, on `gpu`, with software and with `hardware` options (the software
/// side takes the hardware options' [`Options::mul`]).
#[must_use]
pub fn compare_paper(
    gpu: &Gpu,
    bench: Option<&[Dispatch]>,
    workloads: &[Workload],
    hardware: &Options,
) -> Vec<PaperRow> {
    let sw = Options { mul: hardware.mul, ..Options::software() };
    let mut out = Vec::new();
    let (rows_sw, rows_hw, rows_64) = match bench {
        Some(t) => (per_op(gpu, t, &sw), per_op(gpu, t, hardware), per_op(gpu, &as_baseline64(t, false), hardware)),
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    for (variant, paper) in PAPER_PER_OP {
        let (s, h) = (mean_speedup(&rows_sw, variant), mean_speedup(&rows_hw, variant));
        let h64 = mean_speedup(&rows_64, variant);
        out.push(PaperRow {
            what: "per-op mean".into(),
            variant: variant.into(),
            paper,
            ours_software: s,
            ours_hardware: h,
            difference: h.map(|h| h - paper),
            ours_hardware_vs_64: h64,
            note: if bench.is_none() { "no trace".into() } else { String::new() },
            cause: None,
        });
    }
    for (name, variant, paper) in PAPER_WORKLOADS {
        let find = |v: &str| workloads.iter().find(|w| w.name == name && w.variant == v);
        let (row_sw, row_hw, row_64, why) = match (find("baseline"), find(variant)) {
            (Some(b), Some(v)) => {
                let speed = |base: &[Dispatch], o: &Options| {
                    let (tb, tv) = (total(&predict(gpu, base, o)), total(&predict(gpu, &v.trace, o)));
                    (tv > 0.0).then(|| tb / tv)
                };
                let b64 = as_baseline64(&b.trace, true);
                let why = cause(gpu, &b.trace, &v.trace, hardware);
                (speed(&b.trace, &sw), speed(&b.trace, hardware), speed(&b64, hardware), why)
            }
            _ => (None, None, None, None),
        };
        let have = find("baseline").is_some() && find(variant).is_some();
        let note = match &why {
            Some(c) => c.note(variant, paper),
            None if have => String::new(),
            None => "no trace".to_string(),
        };
        out.push(PaperRow {
            what: name.into(),
            variant: variant.into(),
            paper,
            ours_software: row_sw,
            ours_hardware: row_hw,
            difference: row_hw.map(|h| h - paper),
            ours_hardware_vs_64: row_64,
            note,
            cause: why,
        });
    }
    out
}
