//! Precision statistics of CKKS results: how many bits of each slot are right.
//!
//! For every slot `j` the precision of the real part is `-log2 |want_j.re - got_j.re|` bits,
//! and likewise for the imaginary part. These are capped at [`PRECISION_CAP_BITS`] (53, the
//! `f64` mantissa): an exact slot, or one whose error is below `2^-53`, counts as 53 bits. A
//! non-finite error (a NaN or infinite `got` or `want`) counts as an infinite error, i.e.
//! `-inf` bits, so it shows up as the minimum and drags the mean to `-inf`.

use num_complex::Complex64;
use serde::Serialize;

use crate::error::{Error, Result};

/// The most bits a slot can count for (the `f64` mantissa width); exact slots count this much.
pub const PRECISION_CAP_BITS: f64 = 53.0;

/// Precision of a vector of slots, in bits, real and imaginary parts separately.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PrecisionStats {
    /// Worst slot of the real parts: `min(53, -log2(max_err_real))`.
    pub min_real: f64,
    /// Mean over the slots of the real-part bits.
    pub mean_real: f64,
    /// Median over the slots of the real-part bits (mean of the two middle ones for an even
    /// count).
    pub median_real: f64,
    /// Worst slot of the imaginary parts: `min(53, -log2(max_err_imag))`.
    pub min_imag: f64,
    /// Mean over the slots of the imaginary-part bits.
    pub mean_imag: f64,
    /// Median over the slots of the imaginary-part bits.
    pub median_imag: f64,
    /// Largest absolute error of the real parts.
    pub max_err_real: f64,
    /// Largest absolute error of the imaginary parts.
    pub max_err_imag: f64,
}

/// Bits of one absolute error, capped at 53; non-finite errors give `-inf`.
fn bits(err: f64) -> f64 {
    if err.is_finite() {
        (-err.log2()).min(PRECISION_CAP_BITS)
    } else {
        f64::NEG_INFINITY
    }
}

/// `(min, mean, median, max error)` of the errors (non-empty).
fn summarise(errors: &[f64]) -> (f64, f64, f64, f64) {
    // The errors hold no NaN (mapped to +inf by the caller), so `max` is exact here.
    let max_err = errors.iter().copied().fold(0.0f64, f64::max);
    let mut b: Vec<f64> = errors.iter().map(|&e| bits(e)).collect();
    b.sort_by(f64::total_cmp);
    let mean = b.iter().sum::<f64>() / (b.len() as f64);
    let mid = b.len() / 2;
    let median = if b.len() % 2 == 1 {
        b.get(mid).copied().unwrap_or(f64::NAN)
    } else {
        match (b.get(mid.wrapping_sub(1)), b.get(mid)) {
            (Some(x), Some(y)) => (x + y) / 2.0,
            _ => f64::NAN,
        }
    };
    (bits(max_err), mean, median, max_err)
}

/// Precision statistics of `got` against `want` (slot by slot).
///
/// Errors: different lengths or empty inputs: [`Error::DimensionMismatch`].
pub fn precision_stats(want: &[Complex64], got: &[Complex64]) -> Result<PrecisionStats> {
    if want.len() != got.len() {
        return Err(Error::DimensionMismatch {
            what: "precision statistics: got vs want slots",
            expected: want.len(),
            found: got.len(),
        });
    }
    if want.is_empty() {
        return Err(Error::DimensionMismatch {
            what: "precision statistics: slots (none given)",
            expected: 1,
            found: 0,
        });
    }
    let (re, im): (Vec<f64>, Vec<f64>) = want
        .iter()
        .zip(got)
        .map(|(w, g)| {
            let e_re = (w.re - g.re).abs();
            let e_im = (w.im - g.im).abs();
            // NaN compares as no error in max(); make it infinite.
            let fix = |e: f64| if e.is_nan() { f64::INFINITY } else { e };
            (fix(e_re), fix(e_im))
        })
        .unzip();
    let (min_real, mean_real, median_real, max_err_real) = summarise(&re);
    let (min_imag, mean_imag, median_imag, max_err_imag) = summarise(&im);
    Ok(PrecisionStats {
        min_real,
        mean_real,
        median_real,
        min_imag,
        mean_imag,
        median_imag,
        max_err_real,
        max_err_imag,
    })
}

impl std::fmt::Display for PrecisionStats {
    /// Two lines, one per part: bits (min / mean / median) and the largest absolute error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "real: min {:6.2}  mean {:6.2}  median {:6.2} bits  max err {:.3e}",
            self.min_real, self.mean_real, self.median_real, self.max_err_real
        )?;
        write!(
            f,
            "imag: min {:6.2}  mean {:6.2}  median {:6.2} bits  max err {:.3e}",
            self.min_imag, self.mean_imag, self.median_imag, self.max_err_imag
        )
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn c(re: f64, im: f64) -> Complex64 {
        Complex64::new(re, im)
    }

    #[test]
    fn hand_made_even_count() {
        let want = [c(1.0, 1.0), c(2.0, -2.0), c(3.0, 0.0), c(-4.0, 0.0)];
        // Real errors 2^-10, 2^-20, 0, 2^-30 -> bits 10, 20, 53 (cap), 30.
        // Imaginary errors 0.5, 0.25, 0.125, 2^-60 -> bits 1, 2, 3, 53 (cap).
        let got = [
            c(1.0 + 2f64.powi(-10), 1.5),
            c(2.0 - 2f64.powi(-20), -2.25),
            c(3.0, 0.125),
            c(-4.0 + 2f64.powi(-30), 2f64.powi(-60)),
        ];
        let s = precision_stats(&want, &got).unwrap();
        assert_eq!(s.min_real, 10.0);
        assert_eq!(s.mean_real, (10.0 + 20.0 + 53.0 + 30.0) / 4.0);
        assert_eq!(s.median_real, (20.0 + 30.0) / 2.0);
        assert_eq!(s.max_err_real, 2f64.powi(-10));
        assert_eq!(s.min_imag, 1.0);
        assert_eq!(s.mean_imag, (1.0 + 2.0 + 3.0 + 53.0) / 4.0);
        assert_eq!(s.median_imag, 2.5);
        assert_eq!(s.max_err_imag, 0.5);
    }

    #[test]
    fn hand_made_odd_count_and_cap() {
        // Errors 2^-3, 2^-70 (capped at 53), 2^-8 on the real side; imaginary all exact.
        let want = [c(0.0, 0.0), c(0.0, 7.0), c(1.0, -1.0)];
        let got = [c(0.125, 0.0), c(2f64.powi(-70), 7.0), c(1.0 - 2f64.powi(-8), -1.0)];
        let s = precision_stats(&want, &got).unwrap();
        assert_eq!(s.min_real, 3.0);
        assert_eq!(s.mean_real, (3.0 + 53.0 + 8.0) / 3.0);
        assert_eq!(s.median_real, 8.0);
        assert_eq!(s.max_err_real, 0.125);
        assert_eq!(s.min_imag, 53.0);
        assert_eq!(s.mean_imag, 53.0);
        assert_eq!(s.median_imag, 53.0);
        assert_eq!(s.max_err_imag, 0.0);
    }

    #[test]
    fn non_power_of_two_errors() {
        // Error 3 -> -log2(3) bits; error 0.1 -> -log2(0.1) bits.
        let want = [c(0.0, 0.0), c(0.0, 0.0)];
        let got = [c(3.0, 0.0), c(0.1, 0.0)];
        let s = precision_stats(&want, &got).unwrap();
        assert!((s.min_real - (-(3f64.ln() / 2f64.ln()))).abs() < 1e-12);
        let b01 = 10f64.ln() / 2f64.ln();
        assert!((s.median_real - (b01 - 3f64.ln() / 2f64.ln()) / 2.0).abs() < 1e-12);
        assert_eq!(s.max_err_real, 3.0);
    }

    #[test]
    fn nan_counts_as_no_precision() {
        let want = [c(1.0, 1.0), c(2.0, 2.0), c(3.0, 3.0)];
        let got = [c(f64::NAN, 1.0), c(2.0, 2.0), c(3.0, f64::INFINITY)];
        let s = precision_stats(&want, &got).unwrap();
        assert_eq!(s.min_real, f64::NEG_INFINITY);
        assert_eq!(s.mean_real, f64::NEG_INFINITY);
        assert_eq!(s.median_real, 53.0);
        assert_eq!(s.max_err_real, f64::INFINITY);
        assert_eq!(s.min_imag, f64::NEG_INFINITY);
        assert_eq!(s.max_err_imag, f64::INFINITY);
    }

    #[test]
    fn errors() {
        assert!(matches!(
            precision_stats(&[c(1.0, 0.0)], &[]),
            Err(Error::DimensionMismatch { expected: 1, found: 0, .. })
        ));
        assert!(matches!(precision_stats(&[], &[]), Err(Error::DimensionMismatch { found: 0, .. })));
    }

    #[test]
    fn display_is_two_lines() {
        let s = precision_stats(&[c(1.0, 1.0)], &[c(1.0 + 2f64.powi(-20), 1.0)]).unwrap();
        let text = s.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("real:") && lines[0].contains("20.00"));
        assert!(lines[1].starts_with("imag:") && lines[1].contains("53.00"));
    }
}
