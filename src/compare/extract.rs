//! Homomorphic digit extraction of bounded values, and the pipeline "weighted sum -> digits ->
//! pruned word-wise sign test, comparison or ReLU".
//!
//! # Why not Chen-Han
//!
//! Chen and Han (Eurocrypt 2018) extract the base-`p` digits of a value under a plaintext
//! modulus `t = p^e` with lowest-digit-retain polynomials of degree `(e-1)(p-1)+1`, one digit
//! at a time, least significant first (each step divides by `p` and drops to `p^(e-1)`). On our
//! ring it does not fit:
//!
//! * residues are `u32` and every modulus, `t` included, is below `2^30`; batching over `F_p`
//!   needs `p = 1 mod 2N`. The smallest such primes are 40961 (`N = 2^12`), 65537
//!   (`N = 2^13 .. 2^15`) and 786433 (`N = 2^16, 2^17`), so `p^2` is at least
//!   `40961^2 ~ 2^30.6 > 2^30`: `e = 1` at every ring size, and with `e = 1` there is nothing
//!   to extract (the "digit" is the value). A unit test of this module recomputes these numbers.
//! * A small `p` gives few slots: `X^N + 1` splits mod `p` into `N / d` factors with `d` the
//!   order of `p` mod `2N`, so at `N = 2^14`: `p = 3, 5`: 2 slots; `p = 17`: 8; `p = 257`: 128
//!   (and the same counts at `N = 2^16`), against 16384 slots for `t = 65537`. With `p = 257`,
//!   `e = 3` (`t ~ 2^24`) each digit would cost a degree-513 polynomial on 128 slots.
//! * `t` must also be prime for our lookup tables (interpolation over `F_t`).
//!
//! # What fits: digits as lookup tables on one input
//!
//! A value `x` with an exact bound `|x| <= B < (t-1)/2` ([`Bounded`]) has, in a digit layout
//! ([`Digits`]) whose range covers `[-B, B]`, digits `d_i(x)` that are integer functions of `x`
//! on `[-B, B]`. Each is a lookup table of degree `<= 2B`, and all of them are evaluated on the
//! same input, so they form one [`LutSet`]: the powers of `x` are computed once and every digit
//! adds only its own merges. Unlike Chen-Han, digits are independent: a pruned comparison that
//! reads the top `k` of `l` digits extracts only those `k` ([`DigitExtractor::top_digits`]),
//! so pruning saves extraction work too.
//!
//! The digits come out in the format [`super::wordwise`] consumes ([`EncryptedDigits`]):
//! [`sign_test`] compares them with the digits of 0, [`less_than`] compares two extracted
//! values, [`relu`] is `x (1 - [x < 0])`.
//!
//! # Pruning and faults
//!
//! With `k` of `l` digits kept (the `p = l - k` least significant pruned) the sign test is that
//! of the truncated value ([`super::digits::lt_pruned`]):
//! * [`Convention::Floor`]: exact (the offset `b^l / 2` is a multiple of `b^p`), so [`relu`]
//!   is exact;
//! * [`Convention::Balanced`]: `x` in `[-(b^p - 1)/2, -1]` reads as `>= 0` (a dead zone), so
//!   [`relu`] returns `x` itself there instead of 0: its output lies in `[-(b^p - 1)/2, B]`,
//!   and `B` stays the output bound;
//! * [`less_than`] misses `x < y` exactly when the kept digits agree (floor digits: when
//!   `floor((x + o) / b^p) = floor((y + o) / b^p)`, `o` the offset, so only for `|x - y| < b^p`).
//!
//! The direct sign or ReLU table on `[-B, B]` ([`super::Lut::sign`], [`super::Lut::relu`]) is
//! one polynomial of the same degree as each digit table and needs no comparison afterwards, so
//! it is always cheaper on a single bounded value; the digit pipeline is what carries pruned
//! comparisons (and digit-wise operations in general) to values computed under encryption.

use super::digits::{lt_pruned, Convention, Digits};
use super::lut::{eval_lut_set, Bounded, Lut, LutSet};
use super::poly_eval::{EvalPlan, EvalStats};
use super::wordwise::{compare, Comparison, EncryptedDigits};
use crate::backend::Backend;
use crate::bgv::{Bgv, Ciphertext, EvaluationKeys};
use crate::error::{Error, Result};

/// The fewest digits of base `base` whose range (in `convention`) covers `[-bound, bound]`.
///
/// Errors: [`Error::InvalidField`] for a base the convention does not allow (floor: even
/// `>= 2`; balanced: odd `>= 3`); [`Error::DigitRange`] when no layout with `base^count < 2^62`
/// covers the bound.
pub fn layout_for_bound(bound: u64, base: u32, convention: Convention) -> Result<Digits> {
    let b = i64::try_from(bound).map_err(|_| Error::DigitRange {
        bound,
        limit: 1 << 61,
        reason: "outside every digit layout",
    })?;
    let mut count = 1;
    loop {
        let layout = match Digits::new(base, count, convention) {
            Ok(l) => l,
            Err(e) if count == 1 => return Err(e),
            Err(_) => return Err(Error::DigitRange { bound, limit: 1 << 61, reason: "outside every digit layout" }),
        };
        let (lo, hi) = layout.range();
        if lo <= -b && b <= hi {
            return Ok(layout);
        }
        count += 1;
    }
}

/// The digits of values bounded by `bound` in a layout, as one [`LutSet`] of digit tables on
/// `[-bound, bound]` (all digits, or only the top `kept`).
#[derive(Debug, Clone)]
pub struct DigitExtractor {
    layout: Digits,
    bound: u64,
    kept: usize,
    set: LutSet,
}

impl DigitExtractor {
    /// All digits of `layout` for values in `[-bound, bound]`, plaintext modulus `t`.
    ///
    /// Errors: [`Error::DigitRange`] if `bound >= (t-1)/2` or the layout's range does not cover
    /// `[-bound, bound]`; [`Error::InvalidPlaintextModulus`] if `t` is not a prime below `2^30`.
    pub fn new(t: u32, bound: u64, layout: Digits) -> Result<Self> {
        Self::top_digits(t, bound, layout, layout.count())
    }

    /// The layout with the fewest digits of `base` covering the bound ([`layout_for_bound`]).
    pub fn for_bound(t: u32, bound: u64, base: u32, convention: Convention) -> Result<Self> {
        Self::new(t, bound, layout_for_bound(bound, base, convention)?)
    }

    /// Only the top `kept` digits of `layout` (what a comparison keeping `kept` digits reads).
    /// Errors as [`DigitExtractor::new`], and [`Error::InvalidField`] unless
    /// `1 <= kept <= layout.count()`.
    pub fn top_digits(t: u32, bound: u64, layout: Digits, kept: usize) -> Result<Self> {
        let limit = u64::from(t.saturating_sub(1)) / 2;
        if bound >= limit {
            return Err(Error::DigitRange { bound, limit: limit.saturating_sub(1), reason: "is not below (t-1)/2" });
        }
        let (lo, hi) = layout.range();
        let covered = lo.unsigned_abs().min(hi.unsigned_abs());
        if bound > covered {
            return Err(Error::DigitRange { bound, limit: covered, reason: "is outside the digit layout" });
        }
        if kept == 0 || kept > layout.count() {
            return Err(Error::InvalidField { field: "kept digits", reason: "must be in 1..=digit count" });
        }
        let tables = (layout.count() - kept..layout.count())
            .map(|i| Lut::compile_for_set(t, bound, move |x| digit(&layout, x, i)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { layout, bound, kept, set: LutSet::new(tables)? })
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> Digits {
        self.layout
    }

    /// The largest `|x|` the extractor accepts.
    #[must_use]
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// How many of the top digits it extracts.
    #[must_use]
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// The digit tables (least significant extracted digit first).
    #[must_use]
    pub fn tables(&self) -> &LutSet {
        &self.set
    }

    /// The plan of the extraction (HMULTs, relinearisations and depth of all digits together).
    #[must_use]
    pub fn plan(&self) -> EvalPlan {
        self.set.plan()
    }
}

/// Digit `i` of `x` in `layout`: errors as [`Digits::decompose`] for an `x` outside the layout's
/// range, [`Error::InvalidField`] for an `i` beyond its digits.
fn digit(layout: &Digits, x: i64, i: usize) -> Result<i64> {
    layout
        .decompose(x)?
        .get(i)
        .copied()
        .ok_or(Error::InvalidField { field: "digit index", reason: "beyond the layout's digits" })
}

/// The extractor's digits of `x` (every slot), in the format [`super::wordwise`] consumes, and
/// what the extraction did.
///
/// Errors: [`Error::DigitRange`] if `x.bound()` exceeds the extractor's bound; otherwise as
/// [`super::eval_lut`].
pub fn extract_digits<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    extractor: &DigitExtractor,
) -> Result<(EncryptedDigits<B>, EvalStats)> {
    if x.bound() > extractor.bound {
        return Err(Error::DigitRange {
            bound: x.bound(),
            limit: extractor.bound,
            reason: "is above the extractor's bound",
        });
    }
    let (cts, stats) = eval_lut_set(bgv, keys, x, &extractor.set)?;
    // All digits or the top ones: `from_top_digits` covers both (nothing pruned when all kept).
    Ok((EncryptedDigits::from_top_digits(extractor.layout, cts)?, stats))
}

/// The stats of two stages run one after the other.
fn chain(first: EvalStats, second: EvalStats) -> EvalStats {
    EvalStats {
        hmults: first.hmults + second.hmults,
        depth: first.depth + second.depth,
        relins: first.relins + second.relins,
    }
}

/// `[x < 0]` in every slot on the extractor's kept digits: extraction, then the word-wise
/// comparison with the digits of 0. Exact with floor digits; with balanced digits and pruning
/// the dead zone of the [module documentation](self) reads as `>= 0`
/// ([`sign_test_model`]).
pub fn sign_test<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    extractor: &DigitExtractor,
) -> Result<(Ciphertext<B>, EvalStats)> {
    let (digits, s1) = extract_digits(bgv, keys, x, extractor)?;
    let (lt, s2) = sign_test_digits(bgv, keys, &digits, extractor.kept)?;
    Ok((lt, chain(s1, s2)))
}

/// `[x < 0]` on the top `kept` of digits already extracted (the second half of [`sign_test`]):
/// the word-wise comparison with the digits of 0, and what it did.
pub fn sign_test_digits<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    digits: &EncryptedDigits<B>,
    kept: usize,
) -> Result<(Ciphertext<B>, EvalStats)> {
    let like = digits.digits().first().ok_or(Error::InvalidField { field: "digits", reason: "none" })?;
    let zero = EncryptedDigits::constant(bgv, like, digits.layout(), 0)?;
    let cmp = compare(bgv, keys, digits, &zero, kept)?;
    Ok((cmp.lt, cmp.stats))
}

/// `[x < y]` and `[x = y]` on the kept digits of two bounded values, both extracted with
/// `extractor` (the depth is that of one extraction plus the comparison).
pub fn less_than<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    y: &Bounded<B>,
    extractor: &DigitExtractor,
) -> Result<Comparison<B>> {
    let (dx, sx) = extract_digits(bgv, keys, x, extractor)?;
    let (dy, sy) = extract_digits(bgv, keys, y, extractor)?;
    let cmp = compare(bgv, keys, &dx, &dy, extractor.kept)?;
    let extraction =
        EvalStats { hmults: sx.hmults + sy.hmults, depth: sx.depth.max(sy.depth), relins: sx.relins + sy.relins };
    Ok(Comparison { lt: cmp.lt, eq: cmp.eq, stats: chain(extraction, cmp.stats) })
}

/// ReLU through the digits: `x - x [x < 0]` with `[x < 0]` from [`sign_test`], bound
/// `x.bound()` (exact with floor digits; with balanced digits and pruning, `x` itself in the
/// dead zone, see [`relu_model`]).
pub fn relu<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    extractor: &DigitExtractor,
) -> Result<(Bounded<B>, EvalStats)> {
    let (negative, s) = sign_test(bgv, keys, x, extractor)?;
    let prod = bgv.mul_relin(x.ciphertext(), &negative, keys)?;
    let xl = bgv.mod_switch_to_level(x.ciphertext(), prod.level())?;
    let out = bgv.sub(&xl, &prod)?;
    let stats = EvalStats { hmults: s.hmults + 1, depth: s.depth + 1, relins: s.relins + 1 };
    Ok((Bounded::fresh(bgv, out, x.bound())?, stats))
}

/// Plaintext model of [`sign_test`]: `x < 0` on the top `kept` digits of `layout`
/// ([`Error::InvalidField`] for `x` outside the layout).
pub fn sign_test_model(layout: &Digits, kept: usize, x: i64) -> Result<bool> {
    Ok(lt_pruned(&layout.decompose(x)?, &layout.decompose(0)?, kept))
}

/// Plaintext model of [`relu`]: 0 where [`sign_test_model`] says negative, else `x`.
pub fn relu_model(layout: &Digits, kept: usize, x: i64) -> Result<i64> {
    Ok(if sign_test_model(layout, kept, x)? { 0 } else { x })
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::math::primes::is_prime;

    /// The smallest prime `p = 1 mod 2N` and the largest `e` with `p^e < 2^30`.
    fn batching_prime(log_n: u32) -> (u64, u32) {
        let m = 2u64 << log_n;
        let mut p = m + 1;
        while !is_prime(p) {
            p += m;
        }
        let mut e = 0;
        while p.pow(e + 1) < 1 << 30 {
            e += 1;
        }
        (p, e)
    }

    #[test]
    fn chen_han_needs_p_pow_e_which_our_moduli_cannot_hold() {
        let want = [(12, 40961), (13, 65537), (14, 65537), (15, 65537), (16, 786_433), (17, 786_433)];
        for (log_n, p) in want {
            assert_eq!(batching_prime(log_n), (p, 1), "N = 2^{log_n}");
        }
        assert!(40961u64.pow(2) > 1 << 30);
    }

    #[test]
    fn layouts_cover_the_bound_with_the_fewest_digits() {
        let l = layout_for_bound(127, 4, Convention::Floor).unwrap();
        // 4^3 / 2 - 1 = 31 < 127 <= 4^4 / 2 - 1 = 127.
        assert_eq!(l.count(), 4);
        assert_eq!(layout_for_bound(128, 4, Convention::Floor).unwrap().count(), 5);
        // Balanced base 5: 5^3 = 125 covers +-62, 5^4 covers +-312.
        assert_eq!(layout_for_bound(62, 5, Convention::Balanced).unwrap().count(), 3);
        assert_eq!(layout_for_bound(63, 5, Convention::Balanced).unwrap().count(), 4);
        assert_eq!(layout_for_bound(0, 16, Convention::Floor).unwrap().count(), 1);
        assert!(matches!(layout_for_bound(10, 5, Convention::Floor), Err(Error::InvalidField { .. })));
        assert!(matches!(layout_for_bound(u64::MAX, 16, Convention::Floor), Err(Error::DigitRange { .. })));
        assert!(matches!(layout_for_bound(1 << 62, 16, Convention::Floor), Err(Error::DigitRange { .. })));
    }

    #[test]
    fn every_digit_table_is_exact_on_its_whole_domain() {
        for (t, bound, base, conv) in [
            (65537u32, 63u64, 4u32, Convention::Floor),
            (65537, 63, 16, Convention::Floor),
            (65537, 100, 5, Convention::Balanced),
            (65537, 40, 3, Convention::Balanced),
            (786_433, 255, 16, Convention::Floor),
            (786_433, 200, 15, Convention::Balanced),
            (65537, 0, 2, Convention::Floor),
        ] {
            let ex = DigitExtractor::for_bound(t, bound, base, conv).unwrap();
            let layout = ex.layout();
            assert_eq!(ex.tables().tables().len(), layout.count());
            let b = bound as i64;
            for x in -b..=b {
                let want = layout.decompose(x).unwrap();
                for (i, lut) in ex.tables().tables().iter().enumerate() {
                    let got = lut.eval_plain(x);
                    assert_eq!(
                        got,
                        want[i].rem_euclid(i64::from(t)) as u64,
                        "t {t} base {base} {conv:?} x {x} digit {i}"
                    );
                }
            }
            // The top digits alone are the same tables.
            if layout.count() > 1 {
                let top = DigitExtractor::top_digits(t, bound, layout, 1).unwrap();
                assert_eq!(top.tables().tables(), &ex.tables().tables()[layout.count() - 1..]);
                assert!(top.plan().cost.hmults <= ex.plan().cost.hmults);
            }
            // The set shares the powers: never dearer than the tables one by one.
            assert!(ex.plan().cost.hmults <= ex.tables().separate_cost().hmults, "{:?}", ex.plan());
        }
    }

    #[test]
    fn out_of_range_bounds_are_typed_errors() {
        let layout = Digits::new(4, 3, Convention::Floor).unwrap(); // [-32, 31]
        assert!(matches!(DigitExtractor::new(65537, 32, layout), Err(Error::DigitRange { bound: 32, limit: 31, .. })));
        assert!(DigitExtractor::new(65537, 31, layout).is_ok());
        let wide = Digits::new(16, 5, Convention::Floor).unwrap();
        assert!(matches!(DigitExtractor::new(65537, 32768, wide), Err(Error::DigitRange { bound: 32768, .. })));
        assert!(matches!(DigitExtractor::new(65537, 40000, wide), Err(Error::DigitRange { .. })));
        assert!(matches!(DigitExtractor::top_digits(65537, 31, layout, 0), Err(Error::InvalidField { .. })));
        assert!(matches!(DigitExtractor::top_digits(65537, 31, layout, 4), Err(Error::InvalidField { .. })));
    }

    #[test]
    fn models_follow_the_study() {
        // Floor: the pruned sign is exact; balanced: dead zone [-(b^p - 1)/2, -1].
        let floor = Digits::new(4, 4, Convention::Floor).unwrap();
        let balanced = Digits::new(5, 4, Convention::Balanced).unwrap();
        for kept in 1..=4 {
            for x in -127..=127 {
                assert_eq!(sign_test_model(&floor, kept, x).unwrap(), x < 0);
                assert_eq!(relu_model(&floor, kept, x).unwrap(), x.max(0));
            }
            let dead = (5i64.pow(4 - kept as u32) - 1) / 2;
            for x in -312..=312 {
                assert_eq!(sign_test_model(&balanced, kept, x).unwrap(), x < -dead, "kept {kept} x {x}");
                let r = relu_model(&balanced, kept, x).unwrap();
                assert_eq!(r, if x < -dead { 0 } else { x });
            }
        }
    }
}
