//! Calibration against measured (timed) traces, for devices we have: the CPU backend and
//! lavapipe. Their per-device constants are fitted, not looked up: the time of a dispatch is
//! modelled as `launch * passes + per_byte * bytes + per_modmul * modmuls + per_prng_word *
//! prng_words + per_packed * (unpacked + packed residues)` (additive: these devices overlap
//! memory and arithmetic little), with non-negative constants that minimise the squared
//! relative error over the fitting traces. The error is then reported per kernel family on
//! held-out dispatches.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::{passes, Costs};
use crate::trace::Dispatch;

/// Names of the fitted constants, in order.
pub const CONSTANTS: [&str; 5] =
    ["launch_ns", "ns_per_byte", "ns_per_modmul", "ns_per_prng_word", "ns_per_packed_residue"];

/// Fitted constants of a measured device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    /// The constants, in the order of [`CONSTANTS`].
    pub constants: [f64; 5],
    /// Dispatches fitted.
    pub dispatches: usize,
}

/// The features of a dispatch (the terms of the additive model).
#[must_use]
pub fn features(d: &Dispatch) -> [f64; 5] {
    let p = passes(d, &Costs::default());
    let bytes = (d.ciphertext_bytes() + d.bytes_written) as f64 * p as f64
        + (d.key_bytes + d.table_bytes + d.plaintext_bytes) as f64;
    [p as f64, bytes, d.modmuls as f64, d.prng_words as f64, (d.unpacked_residues + d.packed_residues) as f64]
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
    let rows: Vec<([f64; 5], f64)> =
        trace.iter().filter_map(|d| d.elapsed_ns.filter(|&t| t > 0).map(|t| (features(d), t as f64))).collect();
    if rows.len() < CONSTANTS.len() {
        return Err(Error::Calibration(format!(
            "{} timed dispatches; need at least {} (record with --timed)",
            rows.len(),
            CONSTANTS.len()
        )));
    }
    let mut best: Option<(f64, [f64; 5])> = None;
    for mask in 1u32..(1 << CONSTANTS.len()) {
        let idx: Vec<usize> = (0..CONSTANTS.len()).filter(|i| mask & (1 << i) != 0).collect();
        // Weighted normal equations: rows scaled by 1 / measured time.
        let k = idx.len();
        let mut a = vec![vec![0.0; k]; k];
        let mut b = vec![0.0; k];
        for (x, t) in &rows {
            let xs: Vec<f64> = idx.iter().map(|&i| x.get(i).copied().unwrap_or(0.0) / t).collect();
            for (r, xr) in xs.iter().enumerate() {
                if let Some(br) = b.get_mut(r) {
                    *br += xr;
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
        let mut constants = [0.0; 5];
        for (&i, &c) in idx.iter().zip(&sol) {
            if let Some(slot) = constants.get_mut(i) {
                *slot = c;
            }
        }
        let err: f64 = rows
            .iter()
            .map(|(x, t)| {
                let p: f64 = x.iter().zip(&constants).map(|(a, c)| a * c).sum();
                ((p - t) / t).powi(2)
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
