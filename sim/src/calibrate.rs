//! Calibration against measured (timed) traces, for devices we have: the CPU backend and
//! lavapipe. Their per-device constants are fitted, not looked up: the time of a dispatch is
//! modelled as `launch * launches (copy_launch for buffer copies, which run no shader) + per_byte * bytes + per_residue * residues + per_modmul *
//! modmuls + per_conversion_modmul * (modmuls of base_convert and scale_down) + per_prng_word *
//! prng_words + per_packed * (unpacked + packed residues)` (additive: these devices overlap
//! memory and arithmetic little), with non-negative constants that minimise
//! `sum (predicted - measured)^2 / measured` over the fitting traces (Poisson-type weights:
//! large dispatches count more than in a relative fit, small ones more than in an absolute one). The error is then reported per kernel family on
//! held-out dispatches. Launches, passes and NTT table bytes are the model's
//! ([`crate::model::launches`], [`crate::model::passes`], [`crate::model::table_bytes`]): a
//! trace's `gpu_dispatches` and `ntt_passes` where it has them, else the two-pass plan. The
//! lavapipe traces in `sim/traces/` predate the two-pass NTT (their NTTs ran one dispatch per
//! wide stage), so on them the plan undercounts what was measured.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{launches, passes, table_bytes, Costs};
use crate::trace::Dispatch;

/// Names of the fitted constants, in order.
pub const CONSTANTS: [&str; K] = [
    "launch_ns",
    "copy_launch_ns",
    "ns_per_byte",
    "ns_per_residue",
    "ns_per_modmul",
    "ns_per_conversion_modmul",
    "ns_per_prng_word",
    "ns_per_packed_residue",
];

/// Number of fitted constants.
pub const K: usize = 8;

/// Fitted constants of a measured device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// The constants, in the order of [`CONSTANTS`].
    pub constants: [f64; K],
    /// Dispatches fitted.
    pub dispatches: usize,
}

/// The features of a dispatch (the terms of the additive model).
#[must_use]
pub fn features(d: &Dispatch) -> [f64; K] {
    let costs = Costs::default();
    let p = passes(d, &costs);
    let l = launches(d, &costs);
    let bytes = (d.ciphertext_bytes() + d.bytes_written) as f64 * p as f64
        + (d.key_bytes + table_bytes(d, &costs) + d.plaintext_bytes) as f64;
    let conversion = matches!(d.kernel.as_str(), "base_convert" | "scale_down" | "scale_down_correction");
    let (mm, conv) = if conversion { (0.0, d.modmuls as f64) } else { (d.modmuls as f64, 0.0) };
    let (launch, copy_launch) = if d.family() == "copy" { (0.0, l as f64) } else { (l as f64, 0.0) };
    [
        launch,
        copy_launch,
        bytes,
        (d.n * d.limbs * p) as f64,
        mm,
        conv,
        d.prng_words as f64,
        (d.unpacked_residues + d.packed_residues) as f64,
    ]
}

impl Fit {
    /// Predicted nanoseconds of `d`.
    #[must_use]
    pub fn predict_ns(&self, d: &Dispatch) -> f64 {
        features(d).iter().zip(&self.constants).map(|(x, c)| x * c).sum()
    }
}

/// Solves the `k x k` system `a x = b` by Gaussian elimination with partial pivoting; `None`
/// if singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let k = b.len();
    for col in 0..k {
        let pivot = (col..k).max_by(|&i, &j| {
            let ai = a.get(i).and_then(|r| r.get(col)).map_or(0.0, |v| v.abs());
            let aj = a.get(j).and_then(|r| r.get(col)).map_or(0.0, |v| v.abs());
            ai.total_cmp(&aj)
        })?;
        a.swap(col, pivot);
        b.swap(col, pivot);
        let row = a.get(col)?.clone();
        let diag = *row.get(col)?;
        if diag.abs() < 1e-300 {
            return None;
        }
        let bc = *b.get(col)?;
        for r in 0..k {
            if r == col {
                continue;
            }
            let f = a.get(r)?.get(col)? / diag;
            if f == 0.0 {
                continue;
            }
            for (x, y) in a.get_mut(r)?.iter_mut().zip(&row) {
                *x -= f * y;
            }
            *b.get_mut(r)? -= f * bc;
        }
    }
    (0..k).map(|i| Some(b.get(i)? / a.get(i)?.get(i)?)).collect()
}

/// Fits the constants on the timed dispatches of `trace` (non-negative least squares on
/// relative error, by trying every subset of active constants).
pub fn fit(trace: &[Dispatch]) -> Result<Fit> {
    let rows: Vec<([f64; K], f64)> =
        trace.iter().filter_map(|d| d.elapsed_ns.filter(|&t| t > 0).map(|t| (features(d), t as f64))).collect();
    if rows.len() < CONSTANTS.len() {
        return Err(Error::Calibration(format!(
            "{} timed dispatches; need at least {} (record with --timed)",
            rows.len(),
            CONSTANTS.len()
        )));
    }
    // Column scales, so that the normal equations are well conditioned.
    let mut scale = [0.0f64; K];
    for (x, _) in &rows {
        for (s, v) in scale.iter_mut().zip(x) {
            *s = s.max(v.abs());
        }
    }
    let mut best: Option<(f64, [f64; K])> = None;
    for mask in 1u32..(1 << CONSTANTS.len()) {
        let idx: Vec<usize> = (0..CONSTANTS.len()).filter(|i| mask & (1 << i) != 0).collect();
        // Weighted normal equations: rows scaled by 1 / sqrt(measured time).
        let k = idx.len();
        let mut a = vec![vec![0.0; k]; k];
        let mut b = vec![0.0; k];
        for (x, t) in &rows {
            let w = t.sqrt();
            let xs: Vec<f64> = idx
                .iter()
                .map(|&i| {
                    let s = scale.get(i).copied().filter(|&s| s > 0.0).unwrap_or(1.0);
                    x.get(i).copied().unwrap_or(0.0) / s / w
                })
                .collect();
            for (r, xr) in xs.iter().enumerate() {
                if let Some(br) = b.get_mut(r) {
                    *br += xr * w;
                }
                if let Some(ar) = a.get_mut(r) {
                    for (cell, xc) in ar.iter_mut().zip(&xs) {
                        *cell += xr * xc;
                    }
                }
            }
        }
        let Some(sol) = solve(a, b) else { continue };
        if sol.iter().any(|&c| c < 0.0 || !c.is_finite()) {
            continue;
        }
        let mut constants = [0.0; K];
        for (&i, &c) in idx.iter().zip(&sol) {
            let s = scale.get(i).copied().filter(|&s| s > 0.0).unwrap_or(1.0);
            if let Some(slot) = constants.get_mut(i) {
                *slot = c / s;
            }
        }
        let err: f64 = rows
            .iter()
            .map(|(x, t)| {
                let p: f64 = x.iter().zip(&constants).map(|(a, c)| a * c).sum();
                (p - t).powi(2) / t
            })
            .sum();
        if best.as_ref().is_none_or(|(e, _)| err < *e) {
            best = Some((err, constants));
        }
    }
    best.map(|(_, constants)| Fit { constants, dispatches: rows.len() })
        .ok_or_else(|| Error::Calibration("no non-negative fit".into()))
}

/// Error of a fit on one kernel family.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilyError {
    /// Kernel family.
    pub family: String,
    /// Timed dispatches.
    pub dispatches: usize,
    /// Measured milliseconds, summed.
    pub measured_ms: f64,
    /// Predicted milliseconds, summed.
    pub predicted_ms: f64,
    /// `(predicted - measured) / measured` of the sums.
    pub total_error: f64,
    /// Median over dispatches of `|predicted - measured| / measured`.
    pub median_abs_error: f64,
}

/// Errors of `fit` on the timed dispatches of `trace`, per kernel family and over all (`all`).
#[must_use]
pub fn errors(fit: &Fit, trace: &[Dispatch]) -> Vec<FamilyError> {
    let mut families: Vec<String> = Vec::new();
    for d in trace {
        let f = d.family().to_string();
        if d.elapsed_ns.is_some() && !families.contains(&f) {
            families.push(f);
        }
    }
    families.sort();
    families.push("all".into());
    families
        .into_iter()
        .filter_map(|fam| {
            let mut rel = Vec::new();
            let (mut m, mut p) = (0.0, 0.0);
            for d in trace.iter().filter(|d| fam == "all" || d.family() == fam) {
                let Some(t) = d.elapsed_ns.filter(|&t| t > 0) else { continue };
                let (t, pr) = (t as f64, fit.predict_ns(d));
                m += t;
                p += pr;
                rel.push(((pr - t) / t).abs());
            }
            if rel.is_empty() {
                return None;
            }
            rel.sort_by(f64::total_cmp);
            let median = rel.get(rel.len() / 2).copied().unwrap_or(0.0);
            Some(FamilyError {
                family: fam,
                dispatches: rel.len(),
                measured_ms: m / 1e6,
                predicted_ms: p / 1e6,
                total_error: (p - m) / m,
                median_abs_error: median,
            })
        })
        .collect()
}

/// Splits `trace` into fitting (even positions) and held-out (odd positions) dispatches.
#[must_use]
pub fn split_alternate(trace: &[Dispatch]) -> (Vec<Dispatch>, Vec<Dispatch>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, d) in trace.iter().enumerate() {
        if i % 2 == 0 {
            a.push(d.clone());
        } else {
            b.push(d.clone());
        }
    }
    (a, b)
}

/// The measurement noise floor: over groups of timed dispatches with identical shape (kernel,
/// every count), the median of `|t - median of its group| / median of its group` (groups of at
/// least 3). No model of the shapes alone can be more accurate per dispatch. `None` without such
/// groups.
#[must_use]
pub fn noise_floor(trace: &[Dispatch]) -> Option<f64> {
    let mut groups: std::collections::HashMap<Dispatch, Vec<f64>> = std::collections::HashMap::new();
    for d in trace {
        let Some(t) = d.elapsed_ns.filter(|&t| t > 0) else { continue };
        let key = Dispatch { op: None, variant: None, elapsed_ns: None, ..d.clone() };
        groups.entry(key).or_default().push(t as f64);
    }
    let mut dev = Vec::new();
    for ts in groups.values_mut().filter(|ts| ts.len() >= 3) {
        ts.sort_by(f64::total_cmp);
        let m = ts.get(ts.len() / 2).copied().unwrap_or(0.0);
        if m > 0.0 {
            dev.extend(ts.iter().map(|t| (t - m).abs() / m));
        }
    }
    dev.sort_by(f64::total_cmp);
    dev.get(dev.len() / 2).copied()
}
