//! Integers as digit vectors for word-wise comparison (Iliashenko-Zucca): conventions, digit
//! pruning, and the plaintext reference of pruned comparisons.
//!
//! A signed integer of a declared width is held as `l` digits in base `b`, least significant
//! first, each digit its own ciphertext (many values batched in the slots). Two conventions:
//! * [`Convention::Floor`]: the value plus the offset `b^l / 2` (two's-complement-like; the offset
//!   is a multiple of every `b^k`, `k < l`, when `b` is even), written with digits in `[0, b)`;
//! * [`Convention::Balanced`]: digits in `[-(b-1)/2, (b-1)/2]` (odd `b`), no offset.
//!
//! In both, `x < y` iff the digit vectors compare lexicographically from the top digit. Pruning
//! keeps the top `k` of the `l` digits ([`Digits::kept`]): it compares `floor`-like truncations,
//! so `x < y` is missed when the kept digits are equal; with floor digits a sign test (`x < 0`
//! against `y = 0`) stays exact, with balanced digits small negative values fall in a dead zone.

use crate::error::{Error, Result};

/// Digit convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Convention {
    /// Offset by `b^l / 2`, digits in `[0, b)`.
    Floor,
    /// Digits in `[-(b-1)/2, (b-1)/2]`, `b` odd.
    Balanced,
}

impl Convention {
    /// Report name: `floor` or `balanced`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Floor => "floor",
            Self::Balanced => "balanced",
        }
    }
}

/// A digit layout: base, digit count and convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digits {
    base: u32,
    count: usize,
    convention: Convention,
}

impl Digits {
    /// A layout of `count` digits in base `base`. Floor digits need an even base >= 2 (so the
    /// offset is a multiple of every power below the top); balanced digits an odd base >= 3;
    /// `base^count` must fit in 62 bits.
    pub fn new(base: u32, count: usize, convention: Convention) -> Result<Self> {
        let ok_base = match convention {
            Convention::Floor => base >= 2 && base.is_multiple_of(2),
            Convention::Balanced => base >= 3 && base % 2 == 1,
        };
        if !ok_base {
            return Err(Error::InvalidField {
                field: "digit base",
                reason: "floor digits need an even base >= 2, balanced digits an odd base >= 3",
            });
        }
        let fits = u32::try_from(count).ok().and_then(|c| u64::from(base).checked_pow(c)).is_some_and(|p| p < 1 << 62);
        if count == 0 || !fits {
            return Err(Error::InvalidField { field: "digit count", reason: "must be >= 1 with base^count < 2^62" });
        }
        Ok(Self { base, count, convention })
    }

    /// The base.
    #[must_use]
    pub fn base(&self) -> u32 {
        self.base
    }

    /// The number of digits.
    #[must_use]
    pub fn count(&self) -> usize {
        self.count
    }

    /// The convention.
    #[must_use]
    pub fn convention(&self) -> Convention {
        self.convention
    }

    fn span(&self) -> i64 {
        // base^count < 2^62, checked in `new`.
        (0..self.count).fold(1i64, |acc, _| acc.saturating_mul(i64::from(self.base)))
    }

    /// The representable range `[min, max]`.
    #[must_use]
    pub fn range(&self) -> (i64, i64) {
        let span = self.span();
        match self.convention {
            Convention::Floor => (-(span / 2), span / 2 - 1),
            Convention::Balanced => (-(span - 1) / 2, (span - 1) / 2),
        }
    }

    /// Largest `|digit|` (floor: `b - 1`; balanced: `(b - 1) / 2`).
    #[must_use]
    pub fn max_digit(&self) -> i64 {
        match self.convention {
            Convention::Floor => i64::from(self.base) - 1,
            Convention::Balanced => (i64::from(self.base) - 1) / 2,
        }
    }

    /// Bound on `|x_i - y_i|` for two digits: `b - 1` in both conventions.
    #[must_use]
    pub fn difference_bound(&self) -> u64 {
        u64::from(self.base) - 1
    }

    /// The digits of `x`, least significant first ([`Error::InvalidField`] outside the range).
    pub fn decompose(&self, x: i64) -> Result<Vec<i64>> {
        let (lo, hi) = self.range();
        if x < lo || x > hi {
            return Err(Error::InvalidField { field: "digit value", reason: "outside the range of the digit layout" });
        }
        let b = i64::from(self.base);
        let mut out = Vec::with_capacity(self.count);
        match self.convention {
            Convention::Floor => {
                let mut v = x + self.span() / 2;
                for _ in 0..self.count {
                    out.push(v.rem_euclid(b));
                    v = v.div_euclid(b);
                }
            }
            Convention::Balanced => {
                let half = (b - 1) / 2;
                let mut v = x;
                for _ in 0..self.count {
                    let d = (v + half).rem_euclid(b) - half;
                    out.push(d);
                    v = (v - d) / b;
                }
            }
        }
        Ok(out)
    }

    /// The value of a digit vector (least significant first).
    #[must_use]
    pub fn compose(&self, digits: &[i64]) -> i64 {
        let b = i64::from(self.base);
        let v = digits.iter().rev().fold(0i64, |acc, &d| acc * b + d);
        match self.convention {
            Convention::Floor => v - self.span() / 2,
            Convention::Balanced => v,
        }
    }

    /// How many of the digits a fraction `keep` in `(0, 1]` keeps (rounded, at least one).
    pub fn kept(&self, keep: f64) -> Result<usize> {
        if !(keep > 0.0 && keep <= 1.0) {
            return Err(Error::InvalidField { field: "keep", reason: "must be in (0, 1]" });
        }
        Ok(((self.count as f64 * keep).round() as usize).clamp(1, self.count))
    }
}

/// Plaintext reference of the pruned word-wise `x < y`: lexicographic comparison of the top
/// `kept` digits (what the encrypted circuit computes).
#[must_use]
pub fn lt_pruned(x: &[i64], y: &[i64], kept: usize) -> bool {
    let l = x.len().min(y.len());
    for i in (l.saturating_sub(kept)..l).rev() {
        match (x.get(i), y.get(i)) {
            (Some(a), Some(b)) if a != b => return a < b,
            _ => {}
        }
    }
    false
}

/// Plaintext reference of the pruned word-wise `x == y`.
#[must_use]
pub fn eq_pruned(x: &[i64], y: &[i64], kept: usize) -> bool {
    let l = x.len().min(y.len());
    (l.saturating_sub(kept)..l).all(|i| x.get(i) == y.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_round_trip_and_order() {
        for (b, l, c) in [
            (16, 3, Convention::Floor),
            (4, 5, Convention::Floor),
            (15, 3, Convention::Balanced),
            (5, 4, Convention::Balanced),
        ] {
            let d = Digits::new(b, l, c).unwrap();
            let (lo, hi) = d.range();
            for x in lo..=hi {
                let v = d.decompose(x).unwrap();
                assert_eq!(v.len(), l);
                assert!(v.iter().all(|&t| t.abs() <= d.max_digit() && (c == Convention::Balanced || t >= 0)));
                assert_eq!(d.compose(&v), x, "{b} {l} {c:?} {x}");
            }
            // Full comparison is exact.
            for x in (lo..=hi).step_by(7) {
                for y in (lo..=hi).step_by(5) {
                    let (a, bb) = (d.decompose(x).unwrap(), d.decompose(y).unwrap());
                    assert_eq!(lt_pruned(&a, &bb, l), x < y);
                    assert_eq!(eq_pruned(&a, &bb, l), x == y);
                }
            }
            assert!(d.decompose(hi + 1).is_err() && d.decompose(lo - 1).is_err());
        }
    }

    #[test]
    fn pruning_errors_match_the_study() {
        // Sign test with floor digits keeping only the top digit: exact.
        let d = Digits::new(16, 4, Convention::Floor).unwrap();
        let zero = d.decompose(0).unwrap();
        let (lo, hi) = d.range();
        for x in lo..=hi {
            assert_eq!(lt_pruned(&d.decompose(x).unwrap(), &zero, 1), x < 0, "{x}");
        }
        // Balanced digits: x in [-(b^k - 1)/2, -1] reads as >= 0 when k digits are pruned.
        let d = Digits::new(15, 4, Convention::Balanced).unwrap();
        let zero = d.decompose(0).unwrap();
        let k = 2;
        let dead = (15i64.pow(k) - 1) / 2;
        for x in -3 * dead..=3 * dead {
            let got = lt_pruned(&d.decompose(x).unwrap(), &zero, 4 - k as usize);
            assert_eq!(got, x < -dead, "{x}");
        }
        // x < y missed exactly when the kept digits agree.
        let d = Digits::new(16, 4, Convention::Floor).unwrap();
        for (x, y) in [(5i64, 9i64), (-300, -290), (1000, 1024)] {
            let (a, b) = (d.decompose(x).unwrap(), d.decompose(y).unwrap());
            let kept = 2;
            let off = 16i64.pow(4) / 2;
            let same_top = (x + off).div_euclid(256) == (y + off).div_euclid(256);
            assert_eq!(lt_pruned(&a, &b, kept), !same_top && x < y);
        }
    }

    #[test]
    fn bad_layouts_are_typed_errors() {
        assert!(Digits::new(15, 3, Convention::Floor).is_err());
        assert!(Digits::new(16, 3, Convention::Balanced).is_err());
        assert!(Digits::new(16, 0, Convention::Floor).is_err());
        assert!(Digits::new(1 << 20, 4, Convention::Floor).is_err());
        let d = Digits::new(16, 4, Convention::Floor).unwrap();
        assert!(d.kept(0.0).is_err() && d.kept(1.5).is_err());
        assert_eq!(
            [d.kept(1.0).unwrap(), d.kept(0.75).unwrap(), d.kept(0.5).unwrap(), d.kept(0.25).unwrap()],
            [4, 3, 2, 1]
        );
    }
}
