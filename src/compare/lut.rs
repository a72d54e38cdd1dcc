//! Range-restricted lookup tables: compiled polynomials over `F_t`, ciphertexts with exact
//! bounds, and their homomorphic evaluation.
//!
//! A [`Lut`] is the unique polynomial `p` of degree at most `2B'` with `p(x) = f(x) mod t` for
//! every integer `x` in `[-B', B']` (its *domain*). Evaluated on a ciphertext whose slots hold
//! integers in the domain, it gives `f` exactly in every slot; any other input gives garbage, so
//! the input's bound must be worst-case: [`Bounded`] carries one, established when the values
//! are encrypted and propagated exactly through linear operations, and [`eval_lut`] refuses an
//! input whose bound exceeds the table's domain ([`Error::LutDomain`]). Bounds and domains must
//! stay below `(t-1)/2` ([`Error::BoundTooLarge`]): only then is a centred residue the integer.

use crate::backend::Backend;
use crate::bgv::{Bgv, Ciphertext, EvaluationKeys, Plaintext};
use crate::error::{Error, Result};
use crate::math::primes::is_prime;
use crate::math::zq::Modulus;

use super::poly_eval::{self, BgvOps, EvalPlan, EvalStats, Objective, Parts, Strategy, Val};

/// Whether a table's polynomial is even or odd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Parity {
    /// Every odd coefficient is zero: `p(x) = p_e(x^2)` (constants and zero included).
    Even,
    /// Every even coefficient is zero: `p(x) = x p_o(x^2)`.
    Odd,
    /// Neither.
    Neither,
}

/// A compiled lookup table: the interpolating polynomial of `f` on `[-B', B']` over `F_t`.
#[derive(Debug, Clone, PartialEq)]
pub struct Lut {
    t: Modulus,
    domain: u64,
    /// Monomial coefficients, lowest first, without trailing zeros.
    coeffs: Vec<u32>,
    /// `p_e` with `p(x) = p_e(x^2) + x p_o(x^2)`.
    even: Vec<u32>,
    /// `p_o`.
    odd: Vec<u32>,
    parity: Parity,
    /// `max |f(x)|` (centred mod t) over the domain.
    output_bound: u64,
    plan: EvalPlan,
}

/// `(t-1)/2`, the limit every bound must stay below.
fn bound_limit(t: u32) -> u64 {
    u64::from(t.saturating_sub(1)) / 2
}

/// `bound` if it is below `(t-1)/2` (`None`: overflowed).
fn checked_bound(t: u32, bound: Option<u64>) -> Result<u64> {
    let limit = bound_limit(t);
    match bound {
        Some(b) if b < limit => Ok(b),
        other => Err(Error::BoundTooLarge { bound: other.unwrap_or(u64::MAX), limit }),
    }
}

impl Lut {
    /// Compiles `f` on the domain `[-domain, domain]` for the prime plaintext modulus `t`: the
    /// monomial coefficients of the unique polynomial of degree `<= 2 domain` with
    /// `p(x) = f(x) mod t` there (Newton forward differences on the consecutive points, then
    /// expansion into monomials; `O(d^2)` for `d = 2 domain + 1` points), its even/odd split and
    /// the cheapest evaluation plan ([`Objective::Hmults`]).
    ///
    /// Errors: [`Error::InvalidPlaintextModulus`] if `t` is not a prime below `2^30`;
    /// [`Error::BoundTooLarge`] if `domain >= (t-1)/2` (then `2 domain + 1` could exceed `t`, or
    /// the domain would hold every residue and bounds would mean nothing).
    pub fn compile(t: u32, domain: u64, f: impl Fn(i64) -> i64) -> Result<Self> {
        Self::compile_with(t, domain, |x| Ok(f(x)), Some(Objective::Hmults))
    }

    /// [`Lut::compile`] without the planner's search: the plan is [`Strategy::Direct`] with the
    /// closed-form best `k` ([`poly_eval::best_dense`]), its cost simulated exactly. For tables
    /// that are only evaluated inside a [`LutSet`], which plans the whole set. The function may
    /// fail; its first error is returned.
    pub fn compile_for_set(t: u32, domain: u64, f: impl Fn(i64) -> Result<i64>) -> Result<Self> {
        Self::compile_with(t, domain, f, None)
    }

    fn compile_with(t: u32, domain: u64, f: impl Fn(i64) -> Result<i64>, objective: Option<Objective>) -> Result<Self> {
        let tm = Modulus::new(u64::from(t))?;
        if !is_prime(u64::from(t)) {
            return Err(Error::InvalidPlaintextModulus {
                t: u64::from(t),
                reason: "lookup tables interpolate over F_t: t must be prime",
            });
        }
        let domain = checked_bound(t, Some(domain))?;
        // domain < (t-1)/2 < 2^29: everything below fits i64 and usize.
        let b = domain as i64;
        let values: Vec<u32> = (-b..=b).map(|x| f(x).map(|y| tm.reduce_i64(y))).collect::<Result<_>>()?;
        let output_bound = values.iter().map(|&v| tm.center(v).unsigned_abs()).max().unwrap_or(0);
        let coeffs = interpolate(tm, domain, &values)?;
        Self::from_coefficients(tm, domain, coeffs, output_bound, objective)
    }

    fn from_coefficients(
        t: Modulus,
        domain: u64,
        mut coeffs: Vec<u32>,
        output_bound: u64,
        objective: Option<Objective>,
    ) -> Result<Self> {
        while coeffs.last() == Some(&0) {
            coeffs.pop();
        }
        let part = |parity: usize| -> Vec<u32> {
            let mut p: Vec<u32> = coeffs.iter().skip(parity).step_by(2).copied().collect();
            while p.last() == Some(&0) {
                p.pop();
            }
            p
        };
        let (even, odd) = (part(0), part(1));
        let parity = if odd.is_empty() {
            Parity::Even
        } else if even.is_empty() {
            Parity::Odd
        } else {
            Parity::Neither
        };
        let parts = Parts { coeffs: &coeffs, even: &even, odd: &odd };
        let plan = match objective {
            Some(objective) => poly_eval::best_plan(t, parts, objective)?,
            None => {
                let k = poly_eval::best_dense(coeffs.len().saturating_sub(1), Objective::Hmults).0;
                let cost = poly_eval::simulate(t, parts, Strategy::Direct, k)?;
                EvalPlan { strategy: Strategy::Direct, baby_steps: k, cost }
            }
        };
        Ok(Self { t, domain, coeffs, even, odd, parity, output_bound, plan })
    }

    /// `max(x, 0)`.
    pub fn relu(t: u32, domain: u64) -> Result<Self> {
        Self::compile(t, domain, |x| x.max(0))
    }

    /// ReLU fused with requantisation: `clamp(round(max(x, 0) * mul / 2^shift), 0, clip)`,
    /// rounding halves up (exact integer arithmetic).
    pub fn relu_requant(t: u32, domain: u64, mul: u64, shift: u32, clip: u64) -> Result<Self> {
        let tv = u128::from(t);
        Self::compile(t, domain, move |x| {
            let v = u128::from(x.max(0).unsigned_abs()) * u128::from(mul);
            let rounded = match shift {
                0 => v,
                1..=127 => (v + (1u128 << (shift - 1))) >> shift,
                // v < 2^127, so v / 2^shift < 1/2.
                _ => 0,
            };
            // Reduced mod t (the table is mod t anyway), so the cast cannot wrap.
            (rounded.min(u128::from(clip)) % tv) as i64
        })
    }

    /// The sign: `1` for `x > 0`, `0` for `x = 0`, `-1` (that is, `t - 1`) for `x < 0`.
    pub fn sign(t: u32, domain: u64) -> Result<Self> {
        Self::compile(t, domain, i64::signum)
    }

    /// Comparison with a constant: `1` if `x < c`, else `0` (`c` may lie outside the domain).
    pub fn less_than(t: u32, domain: u64, c: i64) -> Result<Self> {
        Self::compile(t, domain, move |x| i64::from(x < c))
    }

    /// Equality with a constant: `1` if `x = c`, else `0`.
    pub fn equals(t: u32, domain: u64, c: i64) -> Result<Self> {
        Self::compile(t, domain, move |x| i64::from(x == c))
    }

    /// The same table with the cheapest plan under another objective.
    pub fn with_objective(&self, objective: Objective) -> Result<Self> {
        Self::from_coefficients(self.t, self.domain, self.coeffs.clone(), self.output_bound, Some(objective))
    }

    /// The plaintext modulus.
    #[must_use]
    pub fn plaintext_modulus(&self) -> u32 {
        self.t.value()
    }

    /// The domain bound `B'`: the table is exact on `[-B', B']`.
    #[must_use]
    pub fn domain(&self) -> u64 {
        self.domain
    }

    /// Monomial coefficients mod t, lowest degree first, without trailing zeros.
    #[must_use]
    pub fn coefficients(&self) -> &[u32] {
        &self.coeffs
    }

    /// Degree of the polynomial (0 for a constant or zero table).
    #[must_use]
    pub fn degree(&self) -> usize {
        self.coeffs.len().saturating_sub(1)
    }

    /// Even, odd or neither.
    #[must_use]
    pub fn parity(&self) -> Parity {
        self.parity
    }

    /// `p_e` of `p(x) = p_e(x^2) + x p_o(x^2)` (coefficients mod t, lowest first, trimmed).
    #[must_use]
    pub fn even_part(&self) -> &[u32] {
        &self.even
    }

    /// `p_o` of `p(x) = p_e(x^2) + x p_o(x^2)`.
    #[must_use]
    pub fn odd_part(&self) -> &[u32] {
        &self.odd
    }

    /// `max |f(x)|` over the domain, `f(x)` taken centred mod t: the bound of the output.
    #[must_use]
    pub fn output_bound(&self) -> u64 {
        self.output_bound
    }

    /// The plan [`eval_lut`] follows.
    #[must_use]
    pub fn plan(&self) -> EvalPlan {
        self.plan
    }

    /// The exact cost of evaluating this table with `strategy` and `baby_steps` (`>= 1`), as
    /// the homomorphic evaluation will count it.
    pub fn cost(&self, strategy: Strategy, baby_steps: usize) -> Result<EvalStats> {
        poly_eval::simulate(self.t, self.parts(), strategy, baby_steps)
    }

    fn parts(&self) -> Parts<'_> {
        Parts { coeffs: &self.coeffs, even: &self.even, odd: &self.odd }
    }

    /// `p(x) mod t` in `[0, t)` for any integer `x` (equal to `f(x) mod t` on the domain).
    #[must_use]
    pub fn eval_plain(&self, x: i64) -> u64 {
        let xr = self.t.reduce_i64(x);
        let v = self.coeffs.iter().rev().fold(0u32, |acc, &c| self.t.add(self.t.mul(acc, xr), c));
        u64::from(v)
    }
}

/// Newton forward differences on the points `-domain..=domain`, then the monomial form.
fn interpolate(t: Modulus, domain: u64, values: &[u32]) -> Result<Vec<u32>> {
    let d = values.len();
    if d == 0 {
        return Ok(Vec::new());
    }
    // a_k = Delta^k f(x_0) / k!: the Newton coefficients for the nodes x_j = x_0 + j.
    let mut newton = Vec::with_capacity(d);
    let mut cur = values.to_vec();
    let mut next = Vec::with_capacity(d);
    while let Some(&first) = cur.first() {
        newton.push(first);
        next.clear();
        next.extend(cur.iter().zip(cur.iter().skip(1)).map(|(&a, &b)| t.sub(b, a)));
        std::mem::swap(&mut cur, &mut next);
    }
    // 1/k! for k < d <= t - 2: invertible since t is prime.
    let mut fact = 1u32;
    for k in 1..d {
        fact = t.mul(fact, t.reduce_u64(k as u64));
    }
    let mut inv_fact = t.inv(fact).ok_or(Error::InvalidPlaintextModulus {
        t: u64::from(t.value()),
        reason: "factorial not invertible: t must be a prime above the number of points",
    })?;
    for (k, a) in newton.iter_mut().enumerate().rev() {
        *a = t.mul(*a, inv_fact);
        inv_fact = t.mul(inv_fact, t.reduce_u64(k.max(1) as u64));
    }
    // Horner on the Newton form: p = a_(d-1); p = p (x - x_k) + a_k for k = d-2 .. 0,
    // x_k = k - domain.
    let (&top, rest) = newton.split_last().ok_or(Error::InvalidField { field: "lut", reason: "no points" })?;
    let mut p = Vec::with_capacity(d);
    p.push(top);
    let mut scratch = Vec::with_capacity(d);
    for (k, &a) in rest.iter().enumerate().rev() {
        // (x + c) with c = -x_k = domain - k.
        let c = t.reduce_i64(domain as i64 - k as i64);
        let cs = t.shoup(c);
        scratch.clear();
        // new_i = p_(i-1) + c p_i for i = 0..=len, with p_(-1) = a and p_len = 0: new_0 = a + c p_0,
        // new_len = p_(len-1).
        let lower = std::iter::once(a).chain(p.iter().copied());
        let upper = p.iter().copied().chain(std::iter::once(0));
        scratch.extend(lower.zip(upper).map(|(lo, hi)| t.add(lo, t.mul_shoup(hi, c, cs))));
        std::mem::swap(&mut p, &mut scratch);
    }
    Ok(p)
}

// ---- bounded ciphertexts -------------------------------------------------------------------

/// A BGV ciphertext with an exact worst-case bound on `|value|` in every slot (values read as
/// centred integers mod t). The bound is always below `(t-1)/2`.
#[derive(Debug)]
pub struct Bounded<B: Backend> {
    ct: Ciphertext<B>,
    bound: u64,
}

impl<B: Backend> Bounded<B> {
    /// Wraps a ciphertext whose every slot the caller knows to lie in `[-bound, bound]` (for
    /// instance from the plaintext at encryption). Errors: [`Error::BoundTooLarge`] if
    /// `bound >= (t-1)/2`; [`Error::ParameterMismatch`] for a ciphertext of other parameters.
    pub fn fresh(bgv: &Bgv<B>, ct: Ciphertext<B>, bound: u64) -> Result<Self> {
        bgv.check_ct(&ct)?;
        let bound = checked_bound(bgv.plaintext_modulus(), Some(bound))?;
        Ok(Self { ct, bound })
    }

    /// The ciphertext.
    #[must_use]
    pub fn ciphertext(&self) -> &Ciphertext<B> {
        &self.ct
    }

    /// The ciphertext, unwrapped.
    #[must_use]
    pub fn into_ciphertext(self) -> Ciphertext<B> {
        self.ct
    }

    /// The bound: every slot lies in `[-bound, bound]`.
    #[must_use]
    pub fn bound(&self) -> u64 {
        self.bound
    }

    /// Both ciphertexts at the lower of their levels.
    fn aligned(bgv: &Bgv<B>, a: &Self, b: &Self) -> Result<(Ciphertext<B>, Ciphertext<B>)> {
        let level = a.ct.level().min(b.ct.level());
        Ok((bgv.mod_switch_to_level(&a.ct, level)?, bgv.mod_switch_to_level(&b.ct, level)?))
    }

    /// `self + other`, bound `b_1 + b_2` (operands at different levels are aligned).
    pub fn add(&self, bgv: &Bgv<B>, other: &Self) -> Result<Self> {
        let bound = checked_bound(bgv.plaintext_modulus(), self.bound.checked_add(other.bound))?;
        let (a, b) = Self::aligned(bgv, self, other)?;
        Ok(Self { ct: bgv.add(&a, &b)?, bound })
    }

    /// `self - other`, bound `b_1 + b_2`.
    pub fn sub(&self, bgv: &Bgv<B>, other: &Self) -> Result<Self> {
        let bound = checked_bound(bgv.plaintext_modulus(), self.bound.checked_add(other.bound))?;
        let (a, b) = Self::aligned(bgv, self, other)?;
        Ok(Self { ct: bgv.sub(&a, &b)?, bound })
    }

    /// `-self`, same bound.
    pub fn neg(&self, bgv: &Bgv<B>) -> Result<Self> {
        Ok(Self { ct: bgv.neg(&self.ct)?, bound: self.bound })
    }

    /// `k * self` for an integer `k`, bound `|k| b`.
    pub fn mul_int(&self, bgv: &Bgv<B>, k: i64) -> Result<Self> {
        let bound = checked_bound(bgv.plaintext_modulus(), self.bound.checked_mul(k.unsigned_abs()))?;
        Ok(Self { ct: bgv.mul_int(&self.ct, k)?, bound })
    }

    /// `self + pt` for a batch-encoded plaintext, bound `b + max |pt|` with `max |pt|` read from
    /// the plaintext's slots (centred).
    pub fn add_plain(&self, bgv: &Bgv<B>, pt: &Plaintext) -> Result<Self> {
        let max = bgv.encoder().decode_signed(pt)?.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
        let bound = checked_bound(bgv.plaintext_modulus(), self.bound.checked_add(max))?;
        Ok(Self { ct: bgv.add_plain(&self.ct, pt)?, bound })
    }

    /// `sum_i w_i x_i + bias` for integer weights and bias, bound `sum_i |w_i| b_i + |bias|`
    /// (terms at different levels are switched to the lowest). At least one term.
    pub fn weighted_sum(bgv: &Bgv<B>, terms: &[(i64, &Self)], bias: i64) -> Result<Self> {
        let t = bgv.plaintext_modulus();
        let bound = terms
            .iter()
            .try_fold(bias.unsigned_abs(), |acc, (w, x)| acc.checked_add(w.unsigned_abs().checked_mul(x.bound)?));
        let bound = checked_bound(t, bound)?;
        let level = terms
            .iter()
            .map(|(_, x)| x.ct.level())
            .min()
            .ok_or(Error::InvalidField { field: "weighted sum", reason: "no terms" })?;
        let mut acc: Option<Ciphertext<B>> = None;
        for (w, x) in terms {
            let low = bgv.mod_switch_to_level(&x.ct, level)?;
            let scaled = bgv.mul_int(&low, *w)?;
            acc = Some(match acc {
                None => scaled,
                Some(a) => bgv.add(&a, &scaled)?,
            });
        }
        let mut ct = acc.ok_or(Error::InvalidField { field: "weighted sum", reason: "no terms" })?;
        if bias != 0 {
            let tm = Modulus::new(u64::from(t))?;
            let slots = bgv.encoder().slots();
            let pt = bgv.encoder().encode(&vec![u64::from(tm.reduce_i64(bias)); slots])?;
            ct = bgv.add_plain(&ct, &pt)?;
        }
        Ok(Self { ct, bound })
    }
}

// ---- evaluation ----------------------------------------------------------------------------

/// Evaluates `lut` on `x` slot-wise with the table's plan ([`Lut::plan`]): every slot of the
/// result decrypts to `f(x) mod t`. Returns the ciphertext and what the evaluation did.
///
/// Errors: [`Error::LutDomain`] if `x.bound() > lut.domain()`;
/// [`Error::InvalidPlaintextModulus`] for a table compiled for another `t`;
/// [`Error::BatchingUnavailable`] without batching; [`Error::MissingRelinKey`];
/// [`Error::NoiseBudgetExhausted`] or [`Error::DepthExhausted`] when the parameters lack the
/// depth ([`EvalStats::depth`] of the plan, plus the scalar multiplications' noise).
pub fn eval_lut<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    lut: &Lut,
) -> Result<(Ciphertext<B>, EvalStats)> {
    eval_lut_with_plan(bgv, keys, x, lut, &lut.plan)
}

/// [`eval_lut`] with the output wrapped with its bound ([`Lut::output_bound`]), ready for the
/// next linear layer.
pub fn eval_lut_bounded<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    lut: &Lut,
) -> Result<(Bounded<B>, EvalStats)> {
    let (ct, stats) = eval_lut(bgv, keys, x, lut)?;
    Ok((Bounded::fresh(bgv, ct, lut.output_bound)?, stats))
}

/// [`eval_lut`] with an explicit strategy and number of baby steps (`plan.cost` is ignored).
pub fn eval_lut_with_plan<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    lut: &Lut,
    plan: &EvalPlan,
) -> Result<(Ciphertext<B>, EvalStats)> {
    check_input(bgv, x, lut.t, lut.domain)?;
    let (mut outs, stats, _) = evaluate_on(bgv, keys, x, &[lut.parts()], lut.t, plan, true)?;
    let out = outs.pop().ok_or(Error::InvalidField { field: "lookup table evaluation", reason: "no output" })?;
    Ok((out, stats))
}

/// Evaluates `set` on `x` (checked by the caller) and turns constant results into ciphertexts.
fn evaluate_on<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    set: &[Parts<'_>],
    t: Modulus,
    plan: &EvalPlan,
    release: bool,
) -> Result<(Vec<Ciphertext<B>>, EvalStats, usize)> {
    let mut ops = BgvOps::new(bgv, keys)?;
    ops.release_powers = release;
    let input = ops.node(x.ct.duplicate(bgv.backend())?, 0);
    let vals = poly_eval::evaluate_set(&mut ops, t, input, set, plan.strategy, plan.baby_steps)?;
    let mut outs = Vec::with_capacity(vals.len());
    let mut depth = 0;
    for v in vals {
        outs.push(match v {
            Val::Enc(node) => {
                depth = depth.max(node.depth);
                node.ct
            }
            Val::Const(c) => {
                // A constant table: 0 * x + c.
                let zero = bgv.mul_int(&x.ct, 0)?;
                let pt = ops.constant(c)?;
                bgv.add_plain(&zero, pt)?
            }
        });
    }
    Ok((outs, EvalStats { hmults: ops.hmults, depth, relins: ops.relins }, ops.peak_ciphertexts))
}

fn check_input<B: Backend>(bgv: &Bgv<B>, x: &Bounded<B>, t: Modulus, domain: u64) -> Result<()> {
    bgv.check_ct(&x.ct)?;
    let bt = bgv.plaintext_modulus();
    if t.value() != bt {
        return Err(Error::InvalidPlaintextModulus {
            t: u64::from(t.value()),
            reason: "the table was compiled for another plaintext modulus",
        });
    }
    if bgv.encoder().slots() == 0 {
        return Err(Error::BatchingUnavailable { t: u64::from(bt), n: bgv.params().n() as u64 });
    }
    if x.bound > domain {
        return Err(Error::LutDomain { bound: x.bound, domain });
    }
    Ok(())
}

// ---- sets of tables -------------------------------------------------------------------------

/// Several lookup tables on the same domain, evaluated together on one input: the powers of the
/// input (baby and giant steps) are computed once and shared, each table adds only its own
/// merges (see [`poly_eval`]). Digit extraction ([`super::extract`]) is one such set.
#[derive(Debug, Clone, PartialEq)]
pub struct LutSet {
    t: Modulus,
    domain: u64,
    tables: Vec<Lut>,
    plan: EvalPlan,
}

impl LutSet {
    /// The set of `tables` (at least one, all for the same `t` and domain) with the cheapest
    /// common plan ([`Objective::Hmults`]). Errors: [`Error::InvalidField`] for an empty set or
    /// tables of different domains; [`Error::InvalidPlaintextModulus`] for different `t`.
    pub fn new(tables: Vec<Lut>) -> Result<Self> {
        Self::with_objective(tables, Objective::Hmults)
    }

    /// [`LutSet::new`] with the plan chosen under `objective`.
    pub fn with_objective(tables: Vec<Lut>, objective: Objective) -> Result<Self> {
        let first = tables.first().ok_or(Error::InvalidField { field: "lookup table set", reason: "no tables" })?;
        let (t, domain) = (first.t, first.domain);
        for lut in &tables {
            if lut.t != t {
                return Err(Error::InvalidPlaintextModulus {
                    t: u64::from(lut.t.value()),
                    reason: "the tables of a set must share the plaintext modulus",
                });
            }
            if lut.domain != domain {
                return Err(Error::InvalidField {
                    field: "lookup table set",
                    reason: "the tables have different domains",
                });
            }
        }
        let parts: Vec<Parts<'_>> = tables.iter().map(Lut::parts).collect();
        let plan = poly_eval::best_plan_set(t, &parts, objective)?;
        Ok(Self { t, domain, tables, plan })
    }

    /// The tables, in evaluation order.
    #[must_use]
    pub fn tables(&self) -> &[Lut] {
        &self.tables
    }

    /// The common domain `B'`.
    #[must_use]
    pub fn domain(&self) -> u64 {
        self.domain
    }

    /// The plan [`eval_lut_set`] follows (its cost is that of the whole set).
    #[must_use]
    pub fn plan(&self) -> EvalPlan {
        self.plan
    }

    /// The cheapest plan (fewest HMULTs, then depth) with at most `max_baby_steps` baby steps
    /// (at least one): [`LutSet::plan`] itself when it fits. The baby-step powers are held for
    /// the whole evaluation, so the cap bounds the working set of
    /// [`eval_lut_set_with_plan`] (about `k` plus twice the `log2` of the table's degree
    /// ciphertexts; [`eval_lut_set_measured`] reports the exact count).
    pub fn plan_within(&self, max_baby_steps: usize) -> Result<EvalPlan> {
        if self.plan.baby_steps <= max_baby_steps {
            return Ok(self.plan);
        }
        let parts: Vec<Parts<'_>> = self.tables.iter().map(Lut::parts).collect();
        poly_eval::best_plan_set_within(self.t, &parts, Objective::Hmults, max_baby_steps)
    }

    /// The exact cost of evaluating the whole set with `strategy` and `baby_steps` (`>= 1`).
    pub fn cost(&self, strategy: Strategy, baby_steps: usize) -> Result<EvalStats> {
        let parts: Vec<Parts<'_>> = self.tables.iter().map(Lut::parts).collect();
        poly_eval::simulate_set(self.t, &parts, strategy, baby_steps)
    }

    /// The sum of the tables' costs when each is evaluated alone with its own plan.
    #[must_use]
    pub fn separate_cost(&self) -> EvalStats {
        self.tables.iter().fold(EvalStats::default(), |acc, l| EvalStats {
            hmults: acc.hmults + l.plan.cost.hmults,
            depth: acc.depth.max(l.plan.cost.depth),
            relins: acc.relins + l.plan.cost.relins,
        })
    }
}

/// Evaluates every table of `set` on `x` with the set's plan, sharing the powers of `x`: one
/// ciphertext per table (in the set's order), each slot `f_i(x) mod t`, and what the whole
/// evaluation did. Errors as [`eval_lut`].
pub fn eval_lut_set<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    set: &LutSet,
) -> Result<(Vec<Ciphertext<B>>, EvalStats)> {
    eval_lut_set_with_plan(bgv, keys, x, set, &set.plan)
}

/// [`eval_lut_set`] with an explicit strategy and number of baby steps.
pub fn eval_lut_set_with_plan<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    set: &LutSet,
    plan: &EvalPlan,
) -> Result<(Vec<Ciphertext<B>>, EvalStats)> {
    let (outs, stats, _) = eval_lut_set_measured(bgv, keys, x, set, plan, true)?;
    Ok((outs, stats))
}

/// [`eval_lut_set_with_plan`], and the working set: the most ciphertexts the evaluation held
/// at once (its copy of the input, the powers, their copies switched to the levels the blocks
/// are formed at, relinearised forms, pending products and results; the temporaries inside one
/// homomorphic operation are not counted). With `release` (what every other evaluation
/// does) each power is released after its last use, and once every remaining use of a power is
/// a block formed at one level only that level's copy is kept; without it every power and
/// its switched copies are held to the end (the former behaviour, for comparison). The
/// ciphertexts are the same either way.
pub fn eval_lut_set_measured<B: Backend>(
    bgv: &Bgv<B>,
    keys: &EvaluationKeys<B>,
    x: &Bounded<B>,
    set: &LutSet,
    plan: &EvalPlan,
    release: bool,
) -> Result<(Vec<Ciphertext<B>>, EvalStats, usize)> {
    check_input(bgv, x, set.t, set.domain)?;
    let parts: Vec<Parts<'_>> = set.tables.iter().map(Lut::parts).collect();
    evaluate_on(bgv, keys, x, &parts, set.t, plan, release)
}

#[cfg(test)]
mod tests {

    use super::*;

    const MODULI: [u32; 2] = [65537, 786433];
    const DOMAINS: [u64; 6] = [0, 1, 7, 15, 63, 200];

    fn reference(t: u32, v: i64) -> u64 {
        v.rem_euclid(i64::from(t)) as u64
    }

    /// `eval_plain == f mod t` on the whole domain, and the parity and output bound agree.
    fn check(lut: &Lut, f: impl Fn(i64) -> i64) {
        let (t, b) = (lut.plaintext_modulus(), lut.domain() as i64);
        let mut max = 0u64;
        for x in -b..=b {
            assert_eq!(lut.eval_plain(x), reference(t, f(x)), "t = {t}, B' = {b}, x = {x}");
            let v = reference(t, f(x)) as i64;
            let centred = if v > i64::from(t) / 2 { v - i64::from(t) } else { v };
            max = max.max(centred.unsigned_abs());
        }
        assert_eq!(lut.output_bound(), max);
        assert!(lut.degree() <= 2 * lut.domain() as usize);
        let even = (-b..=b).all(|x| reference(t, f(x)) == reference(t, f(-x)));
        let odd = (-b..=b).all(|x| reference(t, f(x)) == reference(t, -f(-x)));
        let want = if even {
            Parity::Even
        } else if odd {
            Parity::Odd
        } else {
            Parity::Neither
        };
        assert_eq!(lut.parity(), want, "parity, t = {t}, B' = {b}");
        // The split reassembles p.
        let tm = Modulus::new(u64::from(t)).unwrap();
        for x in [-b, -1, 0, 3, b] {
            let y = tm.reduce_i64(x * x);
            let horner = |c: &[u32]| c.iter().rev().fold(0u32, |acc, &ci| tm.add(tm.mul(acc, y), ci));
            let v = tm.add(horner(lut.even_part()), tm.mul(tm.reduce_i64(x), horner(lut.odd_part())));
            assert_eq!(u64::from(v), lut.eval_plain(x));
        }
    }

    #[test]
    fn builtins_exact_on_whole_domain() {
        for t in MODULI {
            for b in DOMAINS {
                check(&Lut::relu(t, b).unwrap(), |x| x.max(0));
                check(&Lut::sign(t, b).unwrap(), i64::signum);
                for c in [-(b as i64) - 1, -3, 0, 1, b as i64, b as i64 + 1] {
                    check(&Lut::less_than(t, b, c).unwrap(), |x| i64::from(x < c));
                    check(&Lut::equals(t, b, c).unwrap(), |x| i64::from(x == c));
                }
                for (mul, shift, clip) in [(1, 0, 1000), (3, 2, 5), (77, 6, 127), (1 << 20, 24, 255), (5, 200, 9)] {
                    let f = |x: i64| {
                        let v = i128::from(x.max(0)) * i128::from(mul);
                        let r = if shift == 0 {
                            v
                        } else if shift < 127 {
                            (v + (1i128 << (shift - 1))) >> shift
                        } else {
                            0
                        };
                        r.clamp(0, i128::from(clip)) as i64
                    };
                    check(&Lut::relu_requant(t, b, mul, shift, clip).unwrap(), f);
                }
            }
        }
    }

    #[test]
    fn arbitrary_functions_exact() {
        for t in MODULI {
            for b in [3u64, 31, 100] {
                check(&Lut::compile(t, b, |x| x * x * x - 7 * x + 11).unwrap(), |x| x * x * x - 7 * x + 11);
                check(&Lut::compile(t, b, |x| (x * 7919) % 1013).unwrap(), |x| (x * 7919) % 1013);
                check(&Lut::compile(t, b, |x| x.abs()).unwrap(), |x| x.abs());
                check(&Lut::compile(t, b, |_| -5).unwrap(), |_| -5);
                check(&Lut::compile(t, b, |x| x).unwrap(), |x| x);
            }
        }
        // Low-degree functions give low-degree polynomials.
        let cube = Lut::compile(65537, 50, |x| x * x * x - x).unwrap();
        assert_eq!(cube.degree(), 3);
        assert_eq!(cube.parity(), Parity::Odd);
        assert_eq!(Lut::compile(65537, 50, |_| 0).unwrap().degree(), 0);
        assert!(Lut::compile(65537, 50, |_| 0).unwrap().coefficients().is_empty());
    }

    #[test]
    fn interpolation_is_unique_and_full_degree() {
        // sign and relu need the full degree 2B' - 1 or 2B' (no lower interpolant exists).
        for b in [7u64, 15] {
            assert_eq!(Lut::sign(65537, b).unwrap().degree(), 2 * b as usize - 1);
            assert_eq!(Lut::relu(65537, b).unwrap().degree(), 2 * b as usize);
            // ReLU's odd part is x / 2.
            let relu = Lut::relu(65537, b).unwrap();
            // 1/2 mod t = (t + 1) / 2.
            assert_eq!(relu.odd_part(), &[32769]);
            assert_eq!(relu.parity(), Parity::Neither);
        }
    }

    #[test]
    fn domain_limits_are_typed_errors() {
        for t in MODULI {
            let limit = u64::from(t - 1) / 2;
            assert!(matches!(
                Lut::relu(t, limit),
                Err(Error::BoundTooLarge { bound, limit: l }) if bound == limit && l == limit
            ));
            assert!(matches!(Lut::relu(t, u64::MAX), Err(Error::BoundTooLarge { .. })));
        }
        // The largest domain below (t-1)/2 compiles (t = 5: B' = 1, three points of F_5).
        let small = Lut::sign(5, 1).unwrap();
        check(&small, i64::signum);
        assert!(matches!(Lut::sign(5, 2), Err(Error::BoundTooLarge { bound: 2, limit: 2 })));
        assert!(matches!(Lut::sign(3, 1), Err(Error::BoundTooLarge { bound: 1, limit: 1 })));
        assert!(Lut::sign(3, 0).is_ok());
        // t = 256 is not prime; t = 2^30 is not a modulus.
        assert!(matches!(Lut::relu(256, 3), Err(Error::InvalidPlaintextModulus { t: 256, .. })));
        assert!(Lut::relu(1 << 30, 3).is_err());
    }

    #[test]
    fn capped_plans_respect_the_cap_and_cost_what_they_say() {
        let t = 65537;
        let set = LutSet::new(vec![
            Lut::relu(t, 200).unwrap(),
            Lut::sign(t, 200).unwrap(),
            Lut::less_than(t, 200, 17).unwrap(),
        ])
        .unwrap();
        let best = set.plan();
        assert!(best.baby_steps > 4, "{best:?}");
        // A cap the plan fits is the plan itself.
        assert_eq!(set.plan_within(best.baby_steps).unwrap(), best);
        assert_eq!(set.plan_within(usize::MAX).unwrap(), best);
        for cap in [0, 1, 2, 4, best.baby_steps - 1] {
            let plan = set.plan_within(cap).unwrap();
            assert!(plan.baby_steps <= cap.max(1), "cap {cap}: {plan:?}");
            assert_eq!(set.cost(plan.strategy, plan.baby_steps).unwrap(), plan.cost);
            assert!(plan.cost.hmults >= best.cost.hmults, "cap {cap}: {plan:?} against {best:?}");
            // The cheapest under the cap: no allowed plan has fewer HMULTs.
            for k in 1..=cap.max(1) {
                for strategy in [Strategy::Direct, Strategy::EvenOdd] {
                    assert!(set.cost(strategy, k).unwrap().hmults >= plan.cost.hmults, "cap {cap}, k {k}");
                }
            }
        }
    }

    /// Compile times and plans of the large tables (run with `--ignored --nocapture`).
    #[test]
    #[ignore = "slow: compiles tables of up to 65535 points"]
    fn large_tables_compile_time() {
        for b in [4095u64, 16383, 32767] {
            let start = std::time::Instant::now();
            let relu = Lut::relu(65537, b).unwrap();
            let elapsed = start.elapsed();
            assert_eq!(relu.degree(), 2 * b as usize);
            for x in [-(b as i64), -1, 0, 1, 17, b as i64] {
                assert_eq!(relu.eval_plain(x), x.max(0) as u64);
            }
            let start = std::time::Instant::now();
            let depth = relu.with_objective(Objective::Depth).unwrap();
            let planning = start.elapsed();
            let sign = Lut::sign(65537, b).unwrap();
            let sign_depth = sign.with_objective(Objective::Depth).unwrap();
            println!(
                "B' = {b}: relu compile {:.2} s (planning alone {:.2} s); relu plan {:?}; relu depth-plan {:?}; \
                 sign plan {:?}; sign depth-plan {:?}",
                elapsed.as_secs_f64(),
                planning.as_secs_f64(),
                relu.plan(),
                depth.plan(),
                sign.plan(),
                sign_depth.plan()
            );
        }
    }
}
