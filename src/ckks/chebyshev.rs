//! Chebyshev interpolation (plaintext, `f64`) and the homomorphic evaluation of a polynomial
//! in the Chebyshev basis.
//!
//! # Interpolation
//! [`ChebyshevSeries::interpolate`] samples `f` at the `d + 1` Chebyshev nodes of `[lo, hi]`
//! (`x_k = mid + half cos(pi (k + 1/2) / (d + 1))`) and returns the coefficients of the unique
//! polynomial of degree `d` through them, in the basis `T_j((2x - lo - hi) / (hi - lo))`. For
//! `f` with `d + 1` continuous derivatives the error is at most
//! `max |f^(d+1)| / ((d + 1)! 2^d) (half)^(d + 1)` on the interval (`half = (hi - lo) / 2`).
//! [`ChebyshevSeries::evaluate`] is Clenshaw's recurrence.
//!
//! # Homomorphic evaluation
//! [`Ckks::eval_chebyshev`] (and [`Ckks::eval_chebyshev_to`], with the output scale chosen by
//! the caller) evaluates a series on every slot:
//! * **affine map**, free: `y = alpha x + beta` with `alpha = 2 / (hi - lo)` is a change of the
//!   ciphertext's scale by `1 / |alpha|` (plus a negation if `alpha < 0`, never here) and an
//!   integer constant added to `c_0`: no level. The powers below keep their scales near `2 D`
//!   (`D` the rescale divisor) only if the mapped scale is near `2 D`: the caller should give the
//!   input at [`Ckks::chebyshev_input_scale`]. If the mapped scale is more than a factor
//!   `2^(8 / 2^(m - 1))` away from it (`m` below), the map is instead a multiplication by the
//!   integer `round(alpha F)` followed by a rescale, which lands exactly on `2 D`: one more level.
//! * **powers**: baby steps `T_2..T_B` (`B = 2^l`, `l = ceil(m / 2)`) by `T_2k = 2 T_k^2 - 1`
//!   and `T_2k+1 = 2 T_k T_k+1 - T_1`, giant steps `T_2B, T_4B, .., T_2^(m-1)` by squaring, with
//!   `m = ceil(log2(d + 1))`: `T_i` sits `ceil(log2 i)` levels below `T_1`. The factor 2 is a
//!   halving of the scale (free and exact); `T_1` is brought to the product's level and scale by
//!   an integer multiplication and a rescale before the subtraction.
//! * **recursion**: `p = q T_n + r` with `n` the largest power of two `<= deg p` (Chebyshev
//!   split: `q_0 = c_n`, `q_j = 2 c_(n+j)`, `r_i = c_i - c_(2n-i)`), `q` evaluated one level
//!   above the target at the scale that makes `q T_n` land on the target after its rescale;
//!   a part of degree `< B` whose powers all sit above the target is a leaf:
//!   `sum_i c_i T_i` with each `c_i` the integer `round(c_i t D / scale(T_i))` (so that every
//!   term has the scale `t D`), the constant added to `c_0`, then one rescale to `t`.
//!   Splitting at the largest power of two reaches depth `ceil(log2(d + 1))`, and a leaf is
//!   only used where it fits, so the whole evaluation consumes exactly
//!   `ceil(log2(d + 1))` levels ([`ChebyshevSeries::depth`]), plus one if the affine map had to
//!   be a multiplication.
//!
//! Every product is followed by one rescale; every addition is between ciphertexts of the same
//! level and scale by construction (no tolerance is relied on beyond `f64` rounding of the
//! tracked scales). Coefficients below `2^-60` of the largest are skipped.

use super::{Ciphertext, Ckks};
use crate::backend::fused::{Expr, Format, Operand, Program};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::RnsPoly;
use crate::rlwe::EvaluationKeys;

/// The largest degree a [`ChebyshevSeries`] may have.
pub const MAX_CHEBYSHEV_DEGREE: usize = 1023;

/// A polynomial in the Chebyshev basis of an interval: `sum_j c_j T_j((2x - lo - hi) / (hi - lo))`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChebyshevSeries {
    lo: f64,
    hi: f64,
    coeffs: Vec<f64>,
}

impl ChebyshevSeries {
    /// A series from its coefficients on `[lo, hi]` (`coeffs[j]` multiplies `T_j`). Errors:
    /// [`Error::InvalidField`] for a non-finite or empty interval, no coefficient, more than
    /// `MAX_CHEBYSHEV_DEGREE + 1` coefficients or a non-finite one.
    pub fn new(lo: f64, hi: f64, coeffs: Vec<f64>) -> Result<Self> {
        check_interval(lo, hi)?;
        if coeffs.is_empty() || coeffs.len() > MAX_CHEBYSHEV_DEGREE + 1 {
            return Err(Error::InvalidField {
                field: "Chebyshev coefficients",
                reason: "between 1 and MAX_CHEBYSHEV_DEGREE + 1 coefficients are needed",
            });
        }
        if coeffs.iter().any(|c| !c.is_finite()) {
            return Err(Error::InvalidField { field: "Chebyshev coefficients", reason: "not finite" });
        }
        Ok(Self { lo, hi, coeffs })
    }

    /// The degree-`degree` interpolant of `f` at the Chebyshev nodes of `[lo, hi]` (see the
    /// module docs for its error bound). Errors as [`ChebyshevSeries::new`], and
    /// [`Error::InvalidField`] if `f` is not finite at a node.
    pub fn interpolate(f: impl Fn(f64) -> f64, lo: f64, hi: f64, degree: usize) -> Result<Self> {
        check_interval(lo, hi)?;
        if degree > MAX_CHEBYSHEV_DEGREE {
            return Err(Error::InvalidField { field: "Chebyshev degree", reason: "above MAX_CHEBYSHEV_DEGREE" });
        }
        let nodes = degree + 1;
        let count = nodes as f64;
        let (mid, half) = ((lo + hi) / 2.0, (hi - lo) / 2.0);
        let angles: Vec<f64> = (0..nodes).map(|k| std::f64::consts::PI * (k as f64 + 0.5) / count).collect();
        let values: Vec<f64> = angles.iter().map(|&a| f(mid + half * a.cos())).collect();
        if values.iter().any(|v| !v.is_finite()) {
            return Err(Error::InvalidField { field: "interpolated function", reason: "not finite at a node" });
        }
        let coeffs = (0..nodes)
            .map(|j| {
                let sum: f64 = values.iter().zip(&angles).map(|(v, &a)| v * (j as f64 * a).cos()).sum();
                let c = 2.0 * sum / count;
                if j == 0 {
                    c / 2.0
                } else {
                    c
                }
            })
            .collect();
        Self::new(lo, hi, coeffs)
    }

    /// The interval `(lo, hi)`.
    #[must_use]
    pub fn interval(&self) -> (f64, f64) {
        (self.lo, self.hi)
    }

    /// The coefficients (`[j]` multiplies `T_j`).
    #[must_use]
    pub fn coeffs(&self) -> &[f64] {
        &self.coeffs
    }

    /// The degree: the index of the last coefficient that is not negligible (at most `2^-60`
    /// of the largest); 0 for a constant.
    #[must_use]
    pub fn degree(&self) -> usize {
        effective_degree(&self.coeffs)
    }

    /// Levels consumed by [`Ckks::eval_chebyshev`] when the input is at
    /// [`Ckks::chebyshev_input_scale`]: `ceil(log2(degree + 1))`.
    #[must_use]
    pub fn depth(&self) -> usize {
        ceil_log2(self.degree() + 1)
    }

    /// The value at `x` (Clenshaw's recurrence on the mapped argument).
    #[must_use]
    pub fn evaluate(&self, x: f64) -> f64 {
        let y = (2.0 * x - self.lo - self.hi) / (self.hi - self.lo);
        let (mut b1, mut b2) = (0.0, 0.0);
        for &c in self.coeffs.iter().skip(1).rev() {
            let b0 = 2.0 * y * b1 - b2 + c;
            b2 = b1;
            b1 = b0;
        }
        self.coeffs.first().copied().unwrap_or(0.0) + y * b1 - b2
    }

    /// `alpha` and `beta` of the map `y = alpha x + beta` onto `[-1, 1]`.
    fn affine(&self) -> (f64, f64) {
        let alpha = 2.0 / (self.hi - self.lo);
        (alpha, -(self.lo + self.hi) / (self.hi - self.lo))
    }
}

fn check_interval(lo: f64, hi: f64) -> Result<()> {
    if !lo.is_finite() || !hi.is_finite() || lo >= hi || !(2.0 / (hi - lo)).is_normal() {
        return Err(Error::InvalidField { field: "Chebyshev interval", reason: "needs finite lo < hi" });
    }
    Ok(())
}

/// Index of the last coefficient above `2^-60` of the largest.
fn effective_degree(coeffs: &[f64]) -> usize {
    let max = coeffs.iter().fold(0.0_f64, |m, c| m.max(c.abs()));
    coeffs.iter().rposition(|c| c.abs() > max * NEGLIGIBLE).unwrap_or(0)
}

/// Relative size below which a coefficient is skipped.
const NEGLIGIBLE: f64 = 1.0 / (1u64 << 60) as f64;

/// `ceil(log2 x)` for `x >= 1`.
fn ceil_log2(x: usize) -> usize {
    x.max(1).next_power_of_two().trailing_zeros() as usize
}

/// The result of evaluating a part of the series: a ciphertext, or a constant (degree 0).
enum Node<B: Backend> {
    Ct(Ciphertext<B>),
    Const(f64),
}

/// The power basis `T_1, T_2, ..` of one evaluation.
struct Powers<B: Backend> {
    /// `powers[i]` is `T_i` (index 0 unused).
    powers: Vec<Option<Ciphertext<B>>>,
    /// Largest baby step `B`.
    baby: usize,
}

impl<B: Backend> Powers<B> {
    fn get(&self, i: usize) -> Result<&Ciphertext<B>> {
        self.powers
            .get(i)
            .and_then(Option::as_ref)
            .ok_or(Error::InvalidField { field: "Chebyshev power basis", reason: "power not computed" })
    }
}

impl<B: Backend> Ckks<B> {
    /// The input scale at `level` for which [`Ckks::eval_chebyshev`] maps `x` onto `[-1, 1]`
    /// for free and its powers keep scales near `2 D` (`D` the divisor of the rescale from
    /// `level`): `2 D |alpha|`, `alpha = 2 / (hi - lo)`.
    pub fn chebyshev_input_scale(&self, series: &ChebyshevSeries, level: usize) -> Result<f64> {
        Ok(2.0 * self.next_rescale_divisor(level)? * series.affine().0.abs())
    }

    /// The series evaluated on every slot (real coefficients, so real slots give real results),
    /// at the input's scale. See [`Ckks::eval_chebyshev_to`].
    pub fn eval_chebyshev(
        &self,
        ct: &Ciphertext<B>,
        series: &ChebyshevSeries,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.eval_chebyshev_to(ct, series, keys, ct.scale())
    }

    /// The series evaluated on every slot, at scale `target` (see the module docs for the
    /// algorithm). The result is `series.depth()` levels below the input (one more if the input
    /// is far from [`Ckks::chebyshev_input_scale`]). Errors: [`Error::DepthExhausted`] if the
    /// input has too few levels, [`Error::InvalidScale`] / [`Error::ScaleOverflow`] for a target
    /// that cannot be reached, [`Error::InvalidField`] for a constant series,
    /// [`Error::MissingRelinKey`] without a relinearisation key, and the errors of the
    /// operations.
    pub fn eval_chebyshev_to(
        &self,
        ct: &Ciphertext<B>,
        series: &ChebyshevSeries,
        keys: &EvaluationKeys<B>,
        target: f64,
    ) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        if ct.degree() != 1 {
            return Err(Error::CiphertextDegree { degree: ct.degree(), expected: 1 });
        }
        if keys.relin.is_none() {
            return Err(Error::MissingRelinKey);
        }
        if !target.is_finite() || target < 1.0 {
            return Err(Error::InvalidScale { reason: "target scale must be finite and at least 1" });
        }
        let degree = series.degree();
        if degree == 0 {
            return Err(Error::InvalidField { field: "Chebyshev series", reason: "constant: nothing to evaluate" });
        }
        let m = ceil_log2(degree + 1);
        let out_level = self.chebyshev_output_level(ct.level(), ct.scale, series)?;
        let t1 = self.chebyshev_argument(ct, series, m)?;
        let baby = 1usize << m.div_ceil(2).max(1);
        let powers = self.chebyshev_powers(t1, baby, m, keys)?;
        // Negligible coefficients are dropped once, here; below, zero means absent.
        let max = series.coeffs.iter().fold(0.0_f64, |m, c| m.max(c.abs()));
        let coeffs: Vec<f64> =
            series.coeffs.iter().take(degree + 1).map(|&c| if c.abs() > max * NEGLIGIBLE { c } else { 0.0 }).collect();
        match self.chebyshev_node(&coeffs, out_level, target, &powers, keys)? {
            Node::Ct(out) => Ok(out),
            Node::Const(_) => {
                Err(Error::InvalidField { field: "Chebyshev series", reason: "constant: nothing to evaluate" })
            }
        }
    }

    /// `T_1 = alpha x + beta`: by a change of scale if the input is near
    /// [`Ckks::chebyshev_input_scale`], else by an integer multiplication and a rescale onto it.
    fn chebyshev_argument(&self, ct: &Ciphertext<B>, series: &ChebyshevSeries, m: usize) -> Result<Ciphertext<B>> {
        let (alpha, beta) = series.affine();
        let level = ct.level();
        let mapped = ct.scale / alpha.abs();
        let y = if self.argument_is_free(ct.scale, level, series, m)? {
            let signed = if alpha < 0.0 { self.neg(ct)? } else { self.duplicate(ct)? };
            Ciphertext { scale: mapped, ..signed }
        } else {
            let divisor = self.next_rescale_divisor(level)?;
            let below = level
                .checked_sub(self.policy.primes_per_level())
                .ok_or(Error::DepthExhausted { level, wanted: self.policy.primes_per_level() })?;
            let target = 2.0 * self.next_rescale_divisor(below)?;
            let factor = target * divisor / ct.scale;
            let scaled = self.mul_integer(ct, alpha * factor)?;
            let mut out = self.rescale(&scaled)?;
            out.scale = target;
            out
        };
        self.add_integer(&y, beta * y.scale)
    }

    /// Whether the affine map of an input at `scale` and `level` is a change of scale (no
    /// level): the largest power `T_2^(m-1)` squares the scale's excess over `2 D` `m - 1`
    /// times, which may cost at most 8 bits.
    fn argument_is_free(&self, scale: f64, level: usize, series: &ChebyshevSeries, m: usize) -> Result<bool> {
        let wanted = 2.0 * self.next_rescale_divisor(level)?;
        let mapped = scale / series.affine().0.abs();
        let drift = (mapped / wanted).log2().abs() * (1u64 << m.saturating_sub(1)) as f64;
        Ok(drift <= 8.0)
    }

    /// The level at which [`Ckks::eval_chebyshev`] returns for an input at `level` and `scale`:
    /// `series.depth()` levels lower, one more if the input is far from
    /// [`Ckks::chebyshev_input_scale`] (see the module docs). [`Error::DepthExhausted`] if the
    /// chain is too short.
    pub fn chebyshev_output_level(&self, level: usize, scale: f64, series: &ChebyshevSeries) -> Result<usize> {
        let m = series.depth();
        let levels = m + usize::from(!self.argument_is_free(scale, level, series, m)?);
        let wanted = levels * self.policy.primes_per_level();
        level
            .checked_sub(wanted)
            .filter(|&l| l + 1 >= self.policy.base_primes())
            .ok_or(Error::DepthExhausted { level, wanted })
    }

    /// A deep copy.
    fn duplicate(&self, ct: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Ok(ct.with(ct.core.duplicate(self.backend())?, ct.scale))
    }

    /// `ct * round(k)` with the scale unchanged (the caller sets the scale it means).
    pub(super) fn mul_integer(&self, ct: &Ciphertext<B>, k: f64) -> Result<Ciphertext<B>> {
        let scalars = self.integer_residues(ct.level(), k)?;
        Ok(ct.with(ct.core.map(|p| p.mul_scalar(self.backend(), &scalars))?, ct.scale))
    }

    /// `ct + round(k) / scale` in every slot: the integer `round(k)` added to `c_0`.
    pub(super) fn add_integer(&self, ct: &Ciphertext<B>, k: f64) -> Result<Ciphertext<B>> {
        let rounded = k.round();
        if rounded == 0.0 {
            return Ok(ct.with(ct.core.duplicate(self.backend())?, ct.scale));
        }
        let residues = self.integer_residues(ct.level(), rounded)?;
        // A constant polynomial is the same constant at every NTT point: one fused dispatch
        // adds each limb's residue of it to `c_0` (no N-word constant built and uploaded).
        let be = self.backend();
        let core = ct.core.map_c0(be, move |c0| {
            let program = Program {
                basis: c0.basis(),
                operands: vec![Operand::words(c0.buffer(), c0.basis()), Operand::Scalar(residues)],
                outputs: vec![(Expr::add(Expr::load(0), Expr::load(1)), Format::Words)],
            };
            let out = be.fused(&program)?.pop().ok_or(Error::DimensionMismatch {
                what: "fused outputs",
                expected: 1,
                found: 0,
            })?;
            RnsPoly::from_buffer(be, out, c0.basis().clone())
        })?;
        Ok(ct.with(core, ct.scale))
    }

    /// `round(k)` reduced into every prime of `q_0..q_level` (exact for every finite `k`).
    fn integer_residues(&self, level: usize, k: f64) -> Result<Vec<u32>> {
        let rounded = k.round();
        if !rounded.is_finite() {
            return Err(Error::InvalidScale { reason: "a scaled constant is not finite" });
        }
        // Exactly `mantissa * 2^shift` (an f64 above 2^126 is a 53-bit integer times a power of 2).
        let (mantissa, shift) = if rounded.abs() < 2f64.powi(126) {
            (rounded as i128, 0u32)
        } else {
            let shift = rounded.abs().log2().floor() as i32 - 60;
            (((rounded / 2f64.powi(shift)) as i128), shift.unsigned_abs())
        };
        let ctx = self.backend.context();
        ctx.q_basis(level)?
            .iter()
            .map(|&i| {
                let q = i128::from(ctx.modulus(i)?.value());
                let mut r = mantissa.rem_euclid(q);
                for _ in 0..shift {
                    r = (r * 2) % q;
                }
                Ok(r as u32)
            })
            .collect()
    }

    /// `2 a b - c` for `c` one of the powers (or the constant 1 when `c` is `None`), rescaled.
    fn chebyshev_product(
        &self,
        a: &Ciphertext<B>,
        b: &Ciphertext<B>,
        c: Option<&Ciphertext<B>>,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        let level = a.level().min(b.level());
        let a = self.drop_to_level(a, level)?;
        let b = self.drop_to_level(b, level)?;
        let prod = self.rescale(&self.mul_relin(&a, &b, keys)?)?;
        // Doubling: the same words read at half the scale.
        let doubled = Ciphertext { scale: prod.scale / 2.0, ..prod };
        match c {
            None => self.add_integer(&doubled, -doubled.scale),
            Some(c) => {
                let aligned = self.align(c, doubled.level(), doubled.scale)?;
                self.sub(&doubled, &aligned)
            }
        }
    }

    /// `ct` brought to `level` (below its own) and exactly `scale`: dropped to `level + 1`,
    /// multiplied by the integer that makes the rescale land on `scale`, rescaled.
    fn align(&self, ct: &Ciphertext<B>, level: usize, scale: f64) -> Result<Ciphertext<B>> {
        let above = level + self.policy.primes_per_level();
        let dropped = self.drop_to_level(ct, above)?;
        let factor = scale * self.next_rescale_divisor(above)? / ct.scale;
        if !(1.0..2f64.powi(100)).contains(&factor) {
            return Err(Error::InvalidScale { reason: "a power cannot be aligned to this scale" });
        }
        let mut out = self.rescale(&self.mul_integer(&dropped, factor)?)?;
        out.scale = scale;
        Ok(out)
    }

    /// `T_1..T_baby` and the giant steps `T_2baby, .., T_2^(m-1)`.
    fn chebyshev_powers(
        &self,
        t1: Ciphertext<B>,
        baby: usize,
        m: usize,
        keys: &EvaluationKeys<B>,
    ) -> Result<Powers<B>> {
        let top = (1usize << m.saturating_sub(1)).max(baby);
        let mut powers: Vec<Option<Ciphertext<B>>> = Vec::with_capacity(top + 1);
        powers.push(None);
        powers.push(Some(t1));
        let mut p = Powers { powers, baby };
        for i in 2..=top {
            let wanted = i <= baby || i.is_power_of_two();
            let next = if !wanted {
                None
            } else if i % 2 == 0 {
                let half = p.get(i / 2)?;
                Some(self.chebyshev_product(half, half, None, keys)?)
            } else {
                let (a, b) = (p.get(i / 2)?, p.get(i / 2 + 1)?);
                Some(self.chebyshev_product(a, b, Some(p.get(1)?), keys)?)
            };
            p.powers.push(next);
        }
        Ok(p)
    }

    /// `sum_i coeffs[i] T_i` at exactly `level` and `scale`.
    fn chebyshev_node(
        &self,
        coeffs: &[f64],
        level: usize,
        scale: f64,
        powers: &Powers<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<Node<B>> {
        let degree = last_nonzero(coeffs);
        let coeffs = coeffs.get(..=degree).unwrap_or(coeffs);
        if degree == 0 {
            return Ok(Node::Const(coeffs.first().copied().unwrap_or(0.0)));
        }
        let above = level + self.policy.primes_per_level();
        let fits = |i: usize| powers.get(i).is_ok_and(|t| t.level() >= above);
        if degree < powers.baby && (1..=degree).all(|i| coeffs.get(i).is_some_and(|c| *c == 0.0) || fits(i)) {
            let terms: Vec<(usize, f64)> = coeffs.iter().copied().enumerate().skip(1).collect();
            return self
                .chebyshev_leaf(&terms, coeffs.first().copied().unwrap_or(0.0), level, scale, powers)
                .map(Node::Ct);
        }
        // p = q T_n + r, n the largest power of two <= degree.
        let n = 1usize << (usize::BITS - 1 - degree.leading_zeros());
        let tn = powers.get(n)?;
        if tn.level() < above {
            return Err(Error::DepthExhausted { level: tn.level(), wanted: self.policy.primes_per_level() });
        }
        let mut q = vec![0.0; degree - n + 1];
        let mut r: Vec<f64> = coeffs.iter().take(n).copied().collect();
        for (j, qj) in q.iter_mut().enumerate() {
            let c = coeffs.get(n + j).copied().unwrap_or(0.0);
            if j == 0 {
                *qj = c;
            } else {
                *qj = 2.0 * c;
                if let Some(ri) = r.get_mut(n - j) {
                    *ri -= c;
                }
            }
        }
        let product = if q.len() == 1 {
            // q is the constant c_n: a one-term leaf on T_n.
            self.chebyshev_leaf(&[(n, q.first().copied().unwrap_or(0.0))], 0.0, level, scale, powers)?
        } else {
            let q_scale = scale * self.next_rescale_divisor(above)? / tn.scale;
            match self.chebyshev_node(&q, above, q_scale, powers, keys)? {
                Node::Ct(q_ct) => {
                    let tn = self.drop_to_level(tn, above)?;
                    let mut prod = self.rescale(&self.mul_relin(&q_ct, &tn, keys)?)?;
                    prod.scale = scale;
                    prod
                }
                Node::Const(c) => self.chebyshev_leaf(&[(n, c)], 0.0, level, scale, powers)?,
            }
        };
        match self.chebyshev_node(&r, level, scale, powers, keys)? {
            Node::Ct(r_ct) => self.add(&product, &r_ct).map(Node::Ct),
            Node::Const(c) => self.add_integer(&product, c * scale).map(Node::Ct),
        }
    }

    /// `c0 + sum terms[i].1 T_terms[i].0` at `level` and `scale`: every term at scale
    /// `scale D` one level above, summed, rescaled.
    fn chebyshev_leaf(
        &self,
        terms: &[(usize, f64)],
        c0: f64,
        level: usize,
        scale: f64,
        powers: &Powers<B>,
    ) -> Result<Ciphertext<B>> {
        let above = level + self.policy.primes_per_level();
        let divisor = self.next_rescale_divisor(above)?;
        let wide = self.checked_scale(scale * divisor, above)?;
        if let Some(acc) = self.fused_leaf_sum(terms, c0, above, wide, powers)? {
            let mut out = self.rescale(&acc)?;
            out.scale = scale;
            return Ok(out);
        }
        self.leaf_term_by_term(terms, c0, above, wide, scale, powers)
    }

    /// The leaf's sum before its rescale, `round(c0 wide) + sum_i round(c_i wide / scale(T_i)) T_i`
    /// at `above` and scale `wide`, as one fused program (a dispatch on the GPU): each power is
    /// read at the limbs of `above` straight from its own basis (no copy dropping its other
    /// limbs), each integer is a per-limb constant. `None` where the terms do not share a
    /// degree or one output would bind more buffers than the backend allows; the caller then
    /// takes [`Self::leaf_term_by_term`], whose words these are (every step is exact modular
    /// arithmetic with canonical residues).
    fn fused_leaf_sum(
        &self,
        terms: &[(usize, f64)],
        c0: f64,
        above: usize,
        wide: f64,
        powers: &Powers<B>,
    ) -> Result<Option<Ciphertext<B>>> {
        let be = self.backend();
        let mut used = Vec::new();
        for &(i, c) in terms.iter().filter(|(_, c)| *c != 0.0) {
            let t = powers.get(i)?;
            if t.level() < above {
                return Err(Error::LevelOutOfRange { level: above, max: t.level() });
            }
            used.push((t, self.integer_residues(above, c * wide / t.scale)?));
        }
        let Some(&(first, _)) = used.first() else {
            return Err(Error::InvalidField { field: "Chebyshev leaf", reason: "no term" });
        };
        let degree = first.polys().len();
        let constant = c0 * wide;
        let constant = (constant.round() != 0.0).then(|| self.integer_residues(above, constant)).transpose()?;
        if used.iter().any(|(t, _)| t.polys().len() != degree) || used.len() + 1 > be.max_fused_buffers() {
            return Ok(None);
        }
        let basis = self.backend.context().q_basis(above)?;
        let mut operands = Vec::with_capacity(used.len() * (degree + 1) + 1);
        for (t, scalars) in &used {
            for p in t.polys() {
                operands.push(Operand::words(p.buffer(), p.basis()));
            }
            operands.push(Operand::Scalar(scalars.clone()));
        }
        let constant_at = operands.len();
        if let Some(k) = constant {
            operands.push(Operand::Scalar(k));
        }
        let outputs = (0..degree)
            .map(|p| {
                let mut sum: Vec<Expr> = (0..used.len())
                    .map(|j| Expr::mul(Expr::load(j * (degree + 1) + p), Expr::load(j * (degree + 1) + degree)))
                    .collect();
                if p == 0 && constant_at < operands.len() {
                    sum.push(Expr::load(constant_at));
                }
                (Expr::Sum(sum), Format::Words)
            })
            .collect();
        let program = Program { basis: &basis, operands, outputs };
        let polys = be
            .fused(&program)?
            .into_iter()
            .map(|buf| RnsPoly::from_buffer(be, buf, basis.clone()))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(first.with(first.core.with_polys(polys)?, wide)))
    }

    /// [`Self::chebyshev_leaf`] a term at a time: each power dropped to `above`, multiplied by
    /// its integer, added; the constant; one rescale.
    fn leaf_term_by_term(
        &self,
        terms: &[(usize, f64)],
        c0: f64,
        above: usize,
        wide: f64,
        scale: f64,
        powers: &Powers<B>,
    ) -> Result<Ciphertext<B>> {
        let mut acc: Option<Ciphertext<B>> = None;
        for &(i, c) in terms.iter().filter(|(_, c)| *c != 0.0) {
            let t = self.drop_to_level(powers.get(i)?, above)?;
            let mut term = self.mul_integer(&t, c * wide / t.scale)?;
            term.scale = wide;
            acc = Some(match acc {
                None => term,
                Some(a) => self.add(&a, &term)?,
            });
        }
        let acc = acc.ok_or(Error::InvalidField { field: "Chebyshev leaf", reason: "no term" })?;
        let mut out = self.rescale(&self.add_integer(&acc, c0 * wide)?)?;
        out.scale = scale;
        Ok(out)
    }
}

/// Index of the last non-zero coefficient (0 if none).
fn last_nonzero(coeffs: &[f64]) -> usize {
    coeffs.iter().rposition(|&c| c != 0.0).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use num_complex::Complex64;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::ckks::ScalePolicy;
    use crate::params::{self, TestRing};
    use crate::rlwe::KeyRequest;

    fn max_error(series: &ChebyshevSeries, f: impl Fn(f64) -> f64) -> f64 {
        let (lo, hi) = series.interval();
        (0..=10_000)
            .map(|k| lo + (hi - lo) * k as f64 / 10_000.0)
            .map(|x| (series.evaluate(x) - f(x)).abs())
            .fold(0.0, f64::max)
    }

    #[test]
    fn interpolation_error_of_cos_is_within_the_chebyshev_bound() {
        // |cos^(d+1)| <= w^(d+1): error <= w^(d+1) half^(d+1) / ((d+1)! 2^d).
        let w = 3.0;
        for (lo, hi) in [(-1.0, 1.0), (-4.0, 2.0), (10.0, 13.0)] {
            for degree in [4usize, 8, 12, 16] {
                let s = ChebyshevSeries::interpolate(|x: f64| (w * x).cos(), lo, hi, degree).unwrap();
                let half = (hi - lo) / 2.0;
                let fact: f64 = (1..=degree + 1).map(|k| k as f64).product();
                let bound = (w * half).powi(degree as i32 + 1) / (fact * 2f64.powi(degree as i32));
                let err = max_error(&s, |x| (w * x).cos());
                assert!(err <= bound * (1.0 + 1e-9) + 1e-15, "[{lo}, {hi}] degree {degree}: {err:e} > {bound:e}");
                // The bound is not vacuous: the error is within a few factors of it.
                if bound > 1e-12 {
                    assert!(err > bound / 64.0, "[{lo}, {hi}] degree {degree}: {err:e} far below {bound:e}");
                }
            }
        }
    }

    #[test]
    fn interpolation_reproduces_polynomials() {
        let p = |x: f64| 0.5 - 2.0 * x + 0.25 * x * x * x - 0.125 * x.powi(5);
        for degree in [5usize, 6, 11] {
            let s = ChebyshevSeries::interpolate(p, -3.0, 2.0, degree).unwrap();
            assert!(max_error(&s, p) < 1e-11, "degree {degree}");
            assert!(s.coeffs()[6..].iter().all(|c| c.abs() < 1e-12));
        }
        // Trailing zeros do not count.
        let s = ChebyshevSeries::new(-1.0, 1.0, vec![1.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 1e-30]).unwrap();
        assert_eq!((s.degree(), s.depth()), (5, 3));
        {}
        // T_3 on [-1, 1] has the coefficient vector e_3.
        let t3 = ChebyshevSeries::interpolate(|x: f64| 4.0 * x.powi(3) - 3.0 * x, -1.0, 1.0, 7).unwrap();
        for (j, c) in t3.coeffs().iter().enumerate() {
            let want = if j == 3 { 1.0 } else { 0.0 };
            assert!((c - want).abs() < 1e-14, "c_{j} = {c}");
        }
        // Clenshaw on explicit coefficients: T_0 + 2 T_1 - T_2 = 2 + 2y - 2y^2.
        let s = ChebyshevSeries::new(0.0, 4.0, vec![1.0, 2.0, -1.0]).unwrap();
        for x in [0.0, 1.0, 2.5, 4.0] {
            let y = (x - 2.0) / 2.0;
            assert!((s.evaluate(x) - (2.0 + 2.0 * y - 2.0 * y * y)).abs() < 1e-14);
        }
    }

    #[test]
    fn scaled_constants_reduce_exactly_at_any_size() {
        use num_bigint::BigInt;
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 6, p_primes: 1, dnum: 6 }, 30).unwrap();
        let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
        let ctx = ckks.backend().context();
        for k in [
            0.0,
            1.0,
            -1.0,
            12345.6,
            -(2f64.powi(100)) * 1.5,
            2f64.powi(126),
            -3.0 * 2f64.powi(130),
            5.0 * 2f64.powi(170),
        ] {
            let exact: BigInt = big(k.round());
            let got = ckks.integer_residues(5, k).unwrap();
            for (i, r) in got.iter().enumerate() {
                let q = BigInt::from(ctx.modulus(i).unwrap().value());
                let want: BigInt = ((&exact % &q) + &q) % &q;
                assert_eq!(BigInt::from(*r), want, "k = {k:e}, prime {i}");
            }
        }
        assert!(matches!(ckks.integer_residues(5, f64::NAN), Err(Error::InvalidScale { .. })));
    }

    /// An integral `f64` as a big integer.
    fn big(x: f64) -> num_bigint::BigInt {
        use num_traits::FromPrimitive;
        num_bigint::BigInt::from_f64(x).unwrap()
    }

    #[test]
    fn bad_series_are_typed_errors() {
        for (lo, hi) in [(1.0, 1.0), (2.0, 1.0), (f64::NAN, 1.0), (0.0, f64::INFINITY)] {
            assert!(matches!(ChebyshevSeries::new(lo, hi, vec![1.0]), Err(Error::InvalidField { .. })));
        }
        assert!(matches!(ChebyshevSeries::new(0.0, 1.0, vec![]), Err(Error::InvalidField { .. })));
        assert!(matches!(ChebyshevSeries::new(0.0, 1.0, vec![1.0, f64::NAN]), Err(Error::InvalidField { .. })));
        assert!(matches!(
            ChebyshevSeries::interpolate(f64::cos, 0.0, 1.0, MAX_CHEBYSHEV_DEGREE + 1),
            Err(Error::InvalidField { .. })
        ));
        assert!(matches!(ChebyshevSeries::interpolate(|_| f64::NAN, -1.0, 1.0, 0), Err(Error::InvalidField { .. })));
    }

    /// Encrypts `xs` at the recommended input scale, evaluates, and returns the worst slot
    /// error against Clenshaw with the levels consumed.
    fn homomorphic(
        policy: ScalePolicy,
        series: &ChebyshevSeries,
        q_primes: usize,
        input_scale: Option<f64>,
        target: Option<f64>,
    ) -> (usize, f64, f64) {
        let p =
            params::insecure_test_ckks(TestRing { log_n: 10, q_primes, p_primes: 3, dnum: q_primes.div_ceil(3) }, 30)
                .unwrap();
        let ckks = Ckks::cpu(&p, policy).unwrap();
        let sk = ckks.gen_secret_key_from_seed(&[7; 32]).unwrap();
        let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
        let slots = 64;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let (lo, hi) = series.interval();
        let xs: Vec<f64> = (0..slots).map(|_| rng.random_range(lo..hi)).collect();
        let level = ckks.max_level();
        let scale = input_scale.unwrap_or_else(|| ckks.chebyshev_input_scale(series, level).unwrap());
        let values: Vec<Complex64> = xs.iter().map(|&x| Complex64::new(x, 0.0)).collect();
        let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, scale, slots, level).unwrap()).unwrap();
        let out = match target {
            Some(t) => ckks.eval_chebyshev_to(&ct, series, &keys, t).unwrap(),
            None => ckks.eval_chebyshev(&ct, series, &keys).unwrap(),
        };
        let got = ckks.decrypt(&sk, &out).unwrap();
        let err =
            xs.iter().zip(&got).map(|(&x, z)| (z.re - series.evaluate(x)).abs().max(z.im.abs())).fold(0.0, f64::max);
        assert_eq!(out.slots(), slots);
        ((level - out.level()) / policy.primes_per_level(), err, out.scale())
    }

    /// The error bound of a homomorphic evaluation: every ciphertext carries an error of at most
    /// `2^-40` of a slot (encoding rounding `N/2 * 1/2` and fresh noise `N * 20` over an input
    /// scale of about `2^56`; rescale rounding `N (N + 1) / 2` over `2^61`; key switching below
    /// both), and `T_i` amplifies an argument error by at most `|T_i'| <= i^2` on `[-1, 1]`;
    /// a factor 16 covers the accumulation over the operations of the tree.
    fn bound(series: &ChebyshevSeries) -> f64 {
        series.coeffs().iter().enumerate().map(|(i, c)| c.abs() * (i * i).max(1) as f64).sum::<f64>() * 2f64.powi(-36)
    }

    #[test]
    fn homomorphic_chebyshev_matches_clenshaw_at_optimal_depth() {
        for (degree, lo, hi) in
            [(31usize, -2.0, 2.0), (20, -17.0, 17.0), (12, 0.0, 3.0), (2, -1.0, 1.0), (1, -5.0, 1.0)]
        {
            let w = 3.0 / (hi - lo);
            let series =
                ChebyshevSeries::interpolate(|x: f64| (w * x).cos() + 0.25 * (w * x).sin(), lo, hi, degree).unwrap();
            let depth = series.depth();
            assert_eq!(depth, ceil_log2(degree + 1));
            let (levels, err, scale) =
                homomorphic(ScalePolicy::Double, &series, 3 + 2 * depth, None, Some(2f64.powi(55)));
            assert_eq!(levels, depth, "degree {degree}");
            assert_eq!(scale, 2f64.powi(55));
            let bound = bound(&series);
            eprintln!(
                "degree {degree} on [{lo}, {hi}]: depth {levels}, error 2^{:.1} (bound 2^{:.1})",
                err.log2(),
                bound.log2()
            );
            assert!(err < bound, "degree {degree}: {err:e} >= {bound:e}");
        }
    }

    #[test]
    fn homomorphic_chebyshev_under_the_single_policy() {
        // Scale about 2^30: the per-operation error of the bound above becomes 2^-10 of a slot
        // (the same terms over 2^30 instead of 2^60), so the bound is 2^30 times larger.
        for degree in [3usize, 7] {
            let series = ChebyshevSeries::interpolate(|x: f64| (1.5 * x).sin(), -1.0, 1.0, degree).unwrap();
            let depth = series.depth();
            let (levels, err, _) = homomorphic(ScalePolicy::Single, &series, 2 + depth, None, None);
            assert_eq!(levels, depth);
            let bound = bound(&series) * 2f64.powi(30);
            eprintln!("single policy, degree {degree}: error 2^{:.1} (bound 2^{:.1})", err.log2(), bound.log2());
            assert!(err < bound, "{err:e} >= {bound:e}");
        }
    }

    #[test]
    fn a_fused_leaf_gives_the_words_of_the_term_by_term_sum() {
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 11, p_primes: 3, dnum: 4 }, 30).unwrap();
        let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
        let sk = ckks.gen_secret_key_from_seed(&[9; 32]).unwrap();
        let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
        let series = ChebyshevSeries::interpolate(|x: f64| (2.0 * x).cos(), -1.0, 1.0, 15).unwrap();
        let level = ckks.max_level();
        let scale = ckks.chebyshev_input_scale(&series, level).unwrap();
        let values: Vec<Complex64> = (0..16).map(|i| Complex64::new(f64::from(i) / 16.0 - 0.5, 0.0)).collect();
        let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, scale, 16, level).unwrap()).unwrap();
        let t1 = ckks.chebyshev_argument(&ct, &series, 4).unwrap();
        let powers = ckks.chebyshev_powers(t1, 4, 4, &keys).unwrap();
        let ppl = ckks.policy.primes_per_level();
        // Powers at three levels (T_1; T_2; T_3, T_4), constants zero and not, a zero term.
        let cases: [(&[(usize, f64)], f64); 4] = [
            (&[(1, 0.75), (2, -0.5), (3, 0.125)], 0.3),
            (&[(1, 1.0), (2, 0.0), (3, -2.5), (4, 0.01)], 0.0),
            (&[(2, 0.4)], -1.0),
            (&[(1, -0.2), (4, 0.6)], 1e-3),
        ];
        for (terms, c0) in cases {
            let above = terms.iter().map(|&(i, _)| powers.get(i).unwrap().level()).min().unwrap();
            let level = above - ppl;
            let target = ckks.next_rescale_divisor(level).unwrap();
            let wide = ckks.checked_scale(target * ckks.next_rescale_divisor(above).unwrap(), above).unwrap();
            let fused = ckks.fused_leaf_sum(terms, c0, above, wide, &powers).unwrap().expect("unbounded on the CPU");
            let mut fused = ckks.rescale(&fused).unwrap();
            fused.scale = target;
            let plain = ckks.leaf_term_by_term(terms, c0, above, wide, target, &powers).unwrap();
            assert_eq!((fused.level(), fused.scale), (plain.level(), plain.scale), "{terms:?}");
            for (f, q) in fused.polys().iter().zip(plain.polys()) {
                assert!(f.to_host(ckks.backend()).unwrap() == q.to_host(ckks.backend()).unwrap(), "{terms:?}, {c0}");
            }
        }
        // No non-zero term: the same typed error on both paths.
        let zero: &[(usize, f64)] = &[(1, 0.0)];
        let above = powers.get(1).unwrap().level();
        assert!(matches!(ckks.fused_leaf_sum(zero, 1.0, above, 1e20, &powers), Err(Error::InvalidField { .. })));
    }

    #[test]
    fn an_input_far_from_the_recommended_scale_costs_one_level() {
        let series = ChebyshevSeries::interpolate(|x: f64| (2.0 * x).sin(), -1.0, 1.0, 9).unwrap();
        // D / 8 instead of 2 D: the free map would divide the scale of T_8 by 2^32.
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 13, p_primes: 3, dnum: 5 }, 30).unwrap();
        let d = Ckks::cpu(&p, ScalePolicy::Double).unwrap().default_scale() / 8.0;
        let (levels, err, scale) = homomorphic(ScalePolicy::Double, &series, 13, Some(d), None);
        assert_eq!(levels, series.depth() + 1);
        assert_eq!(scale, d);
        assert!(err < bound(&series), "{err:e}");
        // Too few levels: a typed error.
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 9, p_primes: 3, dnum: 3 }, 30).unwrap();
        let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
        let sk = ckks.gen_secret_key_from_seed(&[7; 32]).unwrap();
        let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
        let scale = ckks.chebyshev_input_scale(&series, ckks.max_level()).unwrap();
        let pt = ckks.encode(&[Complex64::new(0.5, 0.0)], scale, 1, ckks.max_level()).unwrap();
        let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
        assert!(matches!(ckks.eval_chebyshev(&ct, &series, &keys), Err(Error::DepthExhausted { .. })));
        let constant = ChebyshevSeries::new(-1.0, 1.0, vec![2.0, 0.0]).unwrap();
        assert!(matches!(ckks.eval_chebyshev(&ct, &constant, &keys), Err(Error::InvalidField { .. })));
        let no_relin = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).map(|mut k| {
            k.relin = None;
            k
        });
        assert!(matches!(ckks.eval_chebyshev(&ct, &series, &no_relin.unwrap()), Err(Error::MissingRelinKey)));
    }
}
