//! Word-wise comparison of encrypted integers held as digit vectors (Iliashenko-Zucca, PoPETs
//! 2021), with digit pruning (BXT).
//!
//! Each integer is `l` digits ([`Digits`]), each digit its own ciphertext with one value per
//! slot. For every kept digit the difference `d_i = x_i - y_i` lies in `[-(b-1), b-1]`, so its
//! univariate `LT(d_i, 0)` and `EQ(d_i, 0)` are range-restricted lookup tables of degree
//! `2(b-1)` ([`Lut::less_than`], [`Lut::equals`]) evaluated on the same input. Then
//!
//! ```text
//! LT(x, y) = sum_i LT_i prod_{j > i} EQ_j,     EQ(x, y) = prod_j EQ_j
//! ```
//!
//! with the suffix products computed by a log-depth scan (`ceil(log2 k)` rounds for `k` kept
//! digits). `MAX(x, y) = x + LT(x, y) (y - x)` with `x`, `y` recomposed from their digits (so
//! it needs `b^l` below `(t-1)/2`). Pruning keeps the top `k` digits: the least significant
//! digits' tables and `log2(l/k)` aggregation rounds are saved, and the comparison is that of
//! the truncated values (see [`super::digits`] for the errors per convention).

use super::digits::{Convention, Digits};
use super::lut::{eval_lut, Bounded, Lut};
use super::poly_eval::EvalStats;
use crate::backend::Backend;
use crate::bgv::{Bgv, Ciphertext, EvaluationKeys};
use crate::error::{Error, Result};
use crate::math::zq::Modulus;
use crate::rlwe::SecretKey;

/// Integers as encrypted digits: `digits[i]` holds digit `pruned + i` (least significant first)
/// of the value in each slot; the `pruned` least significant digits may be absent (a digit
/// extraction that computes only the digits a pruned comparison reads).
#[derive(Debug)]
pub struct EncryptedDigits<B: Backend> {
    layout: Digits,
    pruned: usize,
    digits: Vec<Ciphertext<B>>,
}

impl<B: Backend> EncryptedDigits<B> {
    /// Encrypts `values` (at most one per slot; the rest are 0) digit by digit with the secret
    /// key. [`Error::InvalidField`] for a value outside the layout's range or too many values.
    pub fn encrypt(bgv: &Bgv<B>, sk: &SecretKey<B>, layout: Digits, values: &[i64]) -> Result<Self> {
        let slots = bgv.encoder().slots();
        if values.len() > slots {
            return Err(Error::InvalidField { field: "values", reason: "more values than slots" });
        }
        let t = Modulus::new(u64::from(bgv.plaintext_modulus()))?;
        let mut columns = vec![vec![0u64; slots]; layout.count()];
        for (s, &v) in values.iter().enumerate() {
            for (i, d) in layout.decompose(v)?.into_iter().enumerate() {
                if let Some(slot) = columns.get_mut(i).and_then(|c| c.get_mut(s)) {
                    *slot = u64::from(t.reduce_i64(d));
                }
            }
        }
        let digits =
            columns.iter().map(|c| bgv.encrypt_symmetric(sk, &bgv.encoder().encode(c)?)).collect::<Result<Vec<_>>>()?;
        Ok(Self { layout, pruned: 0, digits })
    }

    /// The digits of the public constant `value` in every slot, as noiseless ciphertexts at the
    /// level and correction factor of `like` (`0 * like + digit`): the second operand of a
    /// comparison with a constant (a sign test is `x < 0`).
    pub fn constant(bgv: &Bgv<B>, like: &Ciphertext<B>, layout: Digits, value: i64) -> Result<Self> {
        let t = Modulus::new(u64::from(bgv.plaintext_modulus()))?;
        let slots = bgv.encoder().slots();
        let zero = bgv.mul_int(like, 0)?;
        let digits = layout
            .decompose(value)?
            .into_iter()
            .map(|d| bgv.add_plain(&zero, &bgv.encoder().encode(&vec![u64::from(t.reduce_i64(d)); slots])?))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { layout, pruned: 0, digits })
    }

    /// Wraps digit ciphertexts (least significant first) the caller knows to hold digits of
    /// `layout` (for instance from a digit extraction).
    pub fn from_digits(layout: Digits, digits: Vec<Ciphertext<B>>) -> Result<Self> {
        if digits.len() != layout.count() {
            return Err(Error::DimensionMismatch {
                what: "digit ciphertexts",
                expected: layout.count(),
                found: digits.len(),
            });
        }
        Ok(Self { layout, pruned: 0, digits })
    }

    /// Wraps the ciphertexts of the top `digits.len()` digits of `layout` (least significant
    /// first), the lower ones absent: enough for comparisons keeping at most `digits.len()`
    /// digits ([`compare`] refuses more), not for [`recompose`] or [`max`].
    pub fn from_top_digits(layout: Digits, digits: Vec<Ciphertext<B>>) -> Result<Self> {
        if digits.is_empty() || digits.len() > layout.count() {
            return Err(Error::DimensionMismatch {
                what: "top digit ciphertexts",
                expected: layout.count(),
                found: digits.len(),
            });
        }
        Ok(Self { layout, pruned: layout.count() - digits.len(), digits })
    }

    /// How many of the least significant digits are absent.
    #[must_use]
    pub fn pruned(&self) -> usize {
        self.pruned
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> Digits {
        self.layout
    }

    /// The digit ciphertexts present, least significant first (digit `pruned()` first).
    #[must_use]
    pub fn digits(&self) -> &[Ciphertext<B>] {
        &self.digits
    }
}

/// The outcome of a word-wise comparison.
#[derive(Debug)]
pub struct Comparison<B: Backend> {
    /// 1 where `x < y` (on the kept digits), else 0.
    pub lt: Ciphertext<B>,
    /// 1 where the kept digits are equal, else 0.
    pub eq: Ciphertext<B>,
    /// Non-scalar multiplications and depth of the whole comparison.
    pub stats: EvalStats,
}

/// Both at the lower of their levels.
fn aligned<B: Backend>(bgv: &Bgv<B>, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<(Ciphertext<B>, Ciphertext<B>)> {
    let level = a.level().min(b.level());
    Ok((bgv.mod_switch_to_level(a, level)?, bgv.mod_switch_to_level(b, level)?))
}

fn add<B: Backend>(bgv: &Bgv<B>, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
    let (a, b) = aligned(bgv, a, b)?;
    bgv.add(&a, &b)
}

/// Checks two operands and `kept`, and returns the bounded differences `x_i - y_i` of the kept
/// digits, most significant first, with their bound `b - 1`.
fn kept_differences<B: Backend>(
    bgv: &Bgv<B>,
    x: &EncryptedDigits<B>,
    y: &EncryptedDigits<B>,
    kept: usize,
) -> Result<(Vec<Bounded<B>>, u64)> {
    if x.layout != y.layout {
        return Err(Error::InvalidField { field: "digit layout", reason: "the operands have different layouts" });
    }
    let l = x.layout.count();
    if kept == 0 || kept > l {
        return Err(Error::InvalidField { field: "kept digits", reason: "must be in 1..=digit count" });
    }
    if kept > l - x.pruned.max(y.pruned) {
        return Err(Error::InvalidField { field: "kept digits", reason: "more than the digits present (extracted)" });
    }
    let bound = x.layout.difference_bound();
    let mut out = Vec::with_capacity(kept);
    for i in (l - kept..l).rev() {
        let (xi, yi) = match (x.digits.get(i - x.pruned), y.digits.get(i - y.pruned)) {
            (Some(a), Some(b)) => aligned(bgv, a, b)?,
            _ => return Err(Error::DimensionMismatch { what: "digit ciphertexts", expected: l, found: i }),
        };
        out.push(Bounded::fresh(bgv, bgv.sub(&xi, &yi)?, bound)?);
    }
    Ok((out, bound))
}

/// `x < y` and `x == y` on the top `kept` digits of two digit vectors of the same layout.
pub fn compare<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &EncryptedDigits<B>,
    y: &EncryptedDigits<B>,
    kept: usize,
) -> Result<Comparison<B>> {
    let (diffs, bound) = kept_differences(bgv, x, y, kept)?;
    let t = bgv.plaintext_modulus();
    let lt_table = Lut::less_than(t, bound, 0)?;
    let eq_table = Lut::equals(t, bound, 0)?;
    // Per kept digit, from the most significant down: LT_i and EQ_i of the difference.
    let mut lts = Vec::with_capacity(kept);
    let mut eqs = Vec::with_capacity(kept);
    let mut hmults = 0;
    let mut relins = 0;
    let mut table_depth = 0;
    for d in &diffs {
        let (lt, s1) = eval_lut(bgv, keys, d, &lt_table)?;
        let (eq, s2) = eval_lut(bgv, keys, d, &eq_table)?;
        hmults += s1.hmults + s2.hmults;
        relins += s1.relins + s2.relins;
        table_depth = table_depth.max(s1.depth).max(s2.depth);
        lts.push(lt);
        eqs.push(eq);
    }
    // Prefix products of EQ from the top: pre[i] = prod_{j < i} eqs[j] (digits above i), by a
    // Hillis-Steele scan: after round r, scan[i] = prod of eqs[i - 2^r + 1 ..= i].
    let mut scan = eqs;
    let mut step = 1;
    let mut rounds = 0;
    while step < kept {
        let mut next = Vec::with_capacity(kept);
        for i in 0..kept {
            let cur = scan.get(i).ok_or(Error::InvalidField { field: "scan", reason: "index" })?;
            next.push(match i.checked_sub(step).and_then(|j| scan.get(j)) {
                Some(prev) => {
                    hmults += 1;
                    relins += 1;
                    bgv.mul_relin(cur, prev, keys)?
                }
                None => cur.duplicate(bgv.backend())?,
            });
        }
        scan = next;
        step *= 2;
        rounds += 1;
    }
    // LT = lts[0] + sum_{i >= 1} lts[i] * scan[i - 1]: the products stay unrelinearised and
    // their sum is relinearised once (lazy relinearisation).
    let mut lts = lts.into_iter();
    let mut lt = lts.next().ok_or(Error::InvalidField { field: "kept digits", reason: "none" })?;
    for (i, lti) in lts.enumerate() {
        let prefix = scan.get(i).ok_or(Error::InvalidField { field: "scan", reason: "index" })?;
        hmults += 1;
        lt = add(bgv, &lt, &bgv.switch_and_tensor(&lti, prefix)?)?;
    }
    if lt.degree() == 2 {
        relins += 1;
        lt = bgv.relinearize(&lt, keys)?;
    }
    let eq = scan.pop().ok_or(Error::InvalidField { field: "scan", reason: "empty" })?;
    let depth = table_depth + rounds + usize::from(kept > 1);
    Ok(Comparison { lt, eq, stats: EvalStats { hmults, depth, relins } })
}

/// `x == y` on the top `kept` digits alone: the `EQ` tables and a product tree (cheaper than
/// [`compare`], which also evaluates the `LT` tables).
pub fn equal<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &EncryptedDigits<B>,
    y: &EncryptedDigits<B>,
    kept: usize,
) -> Result<(Ciphertext<B>, EvalStats)> {
    let (diffs, bound) = kept_differences(bgv, x, y, kept)?;
    let eq_table = Lut::equals(bgv.plaintext_modulus(), bound, 0)?;
    let mut level: Vec<Ciphertext<B>> = Vec::with_capacity(kept);
    let (mut hmults, mut depth, mut relins) = (0, 0, 0);
    for d in &diffs {
        let (eq, s) = eval_lut(bgv, keys, d, &eq_table)?;
        hmults += s.hmults;
        relins += s.relins;
        depth = depth.max(s.depth);
        level.push(eq);
    }
    // Balanced product tree.
    while level.len() > 1 {
        let mut next = Vec::with_capacity(level.len().div_ceil(2));
        let mut it = level.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => {
                    hmults += 1;
                    relins += 1;
                    next.push(bgv.mul_relin(&a, &b, keys)?);
                }
                None => next.push(a),
            }
        }
        level = next;
        depth += 1;
    }
    let eq = level.pop().ok_or(Error::InvalidField { field: "kept digits", reason: "none" })?;
    Ok((eq, EvalStats { hmults, depth, relins }))
}

/// `max(x, y)` slot-wise: `x + LT(x, y) (y - x)` on the top `kept` digits, as one ciphertext of
/// the values (not digits). Needs `b^l <= (t-1)/2` so the values fit the plaintext space.
pub fn max<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &EncryptedDigits<B>,
    y: &EncryptedDigits<B>,
    kept: usize,
) -> Result<(Ciphertext<B>, EvalStats)> {
    let layout = x.layout;
    let (lo, hi) = layout.range();
    let t = u64::from(bgv.plaintext_modulus());
    if (hi.max(-lo) as u64).saturating_mul(2) >= (t - 1) / 2 {
        return Err(Error::BoundTooLarge { bound: hi.max(-lo) as u64 * 2, limit: (t - 1) / 2 });
    }
    if x.pruned > 0 || y.pruned > 0 {
        return Err(Error::InvalidField { field: "digits", reason: "low digits absent: cannot recompose" });
    }
    let cmp = compare(bgv, keys, x, y, kept)?;
    let xv = recompose(bgv, x)?;
    let yv = recompose(bgv, y)?;
    let (yv, xv2) = aligned(bgv, &yv, &xv)?;
    let diff = bgv.sub(&yv, &xv2)?;
    let prod = bgv.mul_relin(&cmp.lt, &diff, keys)?;
    let out = add(bgv, &xv, &prod)?;
    let stats = EvalStats { hmults: cmp.stats.hmults + 1, depth: cmp.stats.depth + 1, relins: cmp.stats.relins + 1 };
    Ok((out, stats))
}

/// The value `sum_i x_i b^i` (minus the floor offset) as one ciphertext
/// ([`Error::InvalidField`] if low digits are absent).
pub fn recompose<B: Backend>(bgv: &Bgv<B>, x: &EncryptedDigits<B>) -> Result<Ciphertext<B>> {
    if x.pruned > 0 {
        return Err(Error::InvalidField { field: "digits", reason: "low digits absent: cannot recompose" });
    }
    let b = i64::from(x.layout.base());
    let level =
        x.digits.iter().map(Ciphertext::level).min().ok_or(Error::InvalidField { field: "digits", reason: "none" })?;
    let mut acc: Option<Ciphertext<B>> = None;
    let mut weight = 1i64;
    for d in &x.digits {
        let d = bgv.mod_switch_to_level(d, level)?;
        let term = bgv.mul_int(&d, weight)?;
        acc = Some(match acc {
            None => term,
            Some(a) => bgv.add(&a, &term)?,
        });
        weight = weight.saturating_mul(b);
    }
    let acc = acc.ok_or(Error::InvalidField { field: "digits", reason: "none" })?;
    match x.layout.convention() {
        Convention::Balanced => Ok(acc),
        Convention::Floor => {
            let (lo, _) = x.layout.range();
            let tm = Modulus::new(u64::from(bgv.plaintext_modulus()))?;
            let slots = bgv.encoder().slots();
            let offset = bgv.encoder().encode(&vec![u64::from(tm.reduce_i64(lo)); slots])?;
            bgv.add_plain(&acc, &offset)
        }
    }
}
