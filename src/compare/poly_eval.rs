//! Evaluating a polynomial over `F_t` on a BGV ciphertext: Paterson–Stockmeyer, its cost model
//! and the planner that picks the number of baby steps.
//!
//! # Algorithm
//!
//! [`Strategy::Direct`] with `k` baby steps on `p` of degree `d` (`n = d + 1` coefficients):
//!
//! 1. baby steps `x^2, ..., x^k` (each `x^i = x^a x^(i-a)` with `a` the largest power of two
//!    below `i`, so `x^i` has depth `ceil(log2 i)`); only `x^2 .. x^d` when `n <= k`;
//! 2. giant steps `G_0 = x^k`, `G_j = G_(j-1)^2 = x^(k 2^j)` for `j < m`, where `m` is the
//!    smallest integer with `n <= k 2^m`;
//! 3. recursively `p = q G_(j-1) + r` with `r` the `k 2^(j-1)` low coefficients, down to blocks
//!    of at most `k` coefficients, which are linear combinations of `1, x, ..., x^(k-1)` with
//!    the coefficients as scalars (multiplications by an integer, no key switching). A quotient
//!    that is a constant multiplies its giant step as a scalar, not as an HMULT.
//!
//! [`Strategy::EvenOdd`] writes `p(x) = p_e(x^2) + x p_o(x^2)`: one squaring `y = x^2`, then the
//! steps above in `y` for `p_e` and `p_o` sharing the baby and giant steps of `y`, and one HMULT
//! `x * p_o(y)` unless `p_o` is a constant. It halves the work for even or odd tables (and for
//! ReLU, whose odd part is `x / 2`).
//!
//! # Cost formula (dense polynomials)
//!
//! For [`Strategy::Direct`] with `k >= 2` on a polynomial whose coefficients are all non-zero,
//! with `L = ceil(n / k)` blocks and `m = ceil(log2 L)` ([`dense_cost`]):
//!
//! * `L = 1`: `hmults = d - 1`, `depth = ceil(log2 d)` (`d >= 2`; nothing for `d <= 1`);
//! * `L >= 2`: `hmults = (k - 1) + (m - 1) + (L - 1) - [n mod k = 1]` (baby steps, giant
//!   squarings, one product per merge of two non-empty halves; a top block that is a single
//!   constant is a scalar multiplication), and
//!   `depth = ceil(log2 k) + m - [n mod k = 1 and L - 1 = 2^(m-1)]`.
//!
//! Example: degree 30, `k = 8`: `L = 4`, `m = 2`, `hmults = 7 + 1 + 3 = 11`, `depth = 3 + 2 = 5`
//! (the minimum over `k`). With `k` a power of two and `k 2^m` the smallest power of two above
//! `d`, the depth is the optimum `ceil(log2(d + 1))`; other `k` can save HMULTs at the price of a
//! level ([`Objective`]). An even polynomial of degree `2B'` costs `1 + dense(B')` with
//! [`Strategy::EvenOdd`] (`p_o = 0`), at depth `1 + depth(B')`; an odd one
//! `2 + dense(B' - 1)`. Sparse polynomials cost less: the planner does not use the formula but
//! runs the evaluation itself symbolically ([`super::lut::Lut::cost`]), counting exactly what the
//! homomorphic evaluation will do.
//!
//! # Levels and correction factors
//!
//! HMULTs go through [`Bgv::switch_and_tensor`] (which switches its operands down as far as their noise
//! allows). A block's linear combination is formed at one level (its powers switched down once
//! and cached per level), and the correction factors are folded into the integer scalars: a
//! power `x^i` that encrypts `c_i * x^i` with factor `f_i` is multiplied by
//! `a_i * T / f_i mod t` (centred), so every term carries the same factor `T` and the sum needs
//! no realignment; the noise grows by `|a_i T / f_i| <= (t-1)/2`, the same worst case as the
//! bare coefficient. The low part `r` of `q G + r`, when it is a block, is formed directly at the
//! product's level with the product's factor, so the addition is free; deeper sums are aligned by
//! [`Bgv::add`] (which rescales the operand with less noise).
//!
//! # Lazy relinearisation
//!
//! A product is left as its tensor product (degree 2, [`Bgv::switch_and_tensor`]); linear combinations
//! and sums accept degree-2 terms, so `q G + r` and the block sums over it stay unrelinearised.
//! A value is relinearised only when it becomes the operand of another product (a baby step
//! used to build a higher one, a giant step, the quotient `q` of the level above, `p_o(y)` in
//! `x p_o(y)`), once per value (cached, after its automatic modulus switch, so the key switch
//! runs on the fewest primes; later linear combinations use that degree-1 form), and each
//! result once at the end. [`EvalStats::relins`] counts
//! them; the planner simulates it exactly. Baby steps that only feed linear combinations are
//! never relinearised, and neither is any giant-step product `q G` on its own.
//!
//! # Sets of tables on one input
//!
//! [`super::lut::LutSet`] evaluates several polynomials on the same input with one strategy and
//! one `k`: the baby and giant steps (the powers of `x`, or of `y = x^2`) are computed once for
//! the longest polynomial and shared; each polynomial adds only its own merges (one HMULT per
//! merge of two non-empty halves), its `x p_o(y)` product and its final relinearisation. The
//! planner picks `k` for the whole set (more polynomials favour more baby steps).

use std::cell::Cell;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::backend::Backend;
use crate::bgv::noise::log2_add;
use crate::bgv::{Bgv, Ciphertext, EvaluationKeys, Plaintext};
use crate::error::{Error, Result};
use crate::math::zq::Modulus;
use crate::poly::{Eval, RnsPoly};
use crate::rlwe::CiphertextCore;

/// How a polynomial is evaluated (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Paterson–Stockmeyer in `x`.
    Direct,
    /// `p(x) = p_e(y) + x p_o(y)` with `y = x^2`, Paterson–Stockmeyer in `y` for both parts.
    EvenOdd,
}

/// What the planner minimises first (the other quantity breaks ties).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Objective {
    /// Fewest HMULTs (then the smallest depth).
    #[default]
    Hmults,
    /// Smallest multiplicative depth (then the fewest HMULTs).
    Depth,
}

/// Counts of an evaluation: predicted by the planner or measured by [`super::lut::eval_lut`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct EvalStats {
    /// Non-scalar multiplications (tensor products).
    pub hmults: usize,
    /// Multiplicative depth of the result (HMULTs on the longest path from the input).
    pub depth: usize,
    /// Relinearisations (key switches of a degree-2 ciphertext): at most `hmults`, fewer with
    /// lazy relinearisation (see the [module documentation](self)).
    pub relins: usize,
}

/// How to evaluate one table: the strategy, the number `k` of baby steps and what it costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EvalPlan {
    /// Direct or even/odd split.
    pub strategy: Strategy,
    /// Number `k` of baby steps (powers `1..=k` of `x`, or of `y = x^2` for
    /// [`Strategy::EvenOdd`]); at least 1.
    pub baby_steps: usize,
    /// HMULTs and depth of the evaluation.
    pub cost: EvalStats,
}

/// `ceil(log2 n)` (0 for `n <= 1`).
#[must_use]
pub fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// The closed-form cost of [`Strategy::Direct`] with `k >= 2` baby steps on a polynomial of
/// `degree` whose coefficients are all non-zero (see the [module documentation](self)); `None`
/// for `k < 2`. The formula counts one relinearisation per HMULT (`relins = hmults`, eager
/// relinearisation); the evaluation itself relinearises lazily and does fewer
/// ([`super::lut::Lut::cost`] counts them exactly).
#[must_use]
pub fn dense_cost(degree: usize, k: usize) -> Option<EvalStats> {
    (k >= 2).then(|| direct_cost(degree, k))
}

/// [`dense_cost`] for `k >= 2` (every caller's range starts at 2).
fn direct_cost(degree: usize, k: usize) -> EvalStats {
    if degree <= 1 {
        return EvalStats::default();
    }
    let n = degree + 1;
    let blocks = n.div_ceil(k);
    if blocks == 1 {
        return EvalStats { hmults: degree - 1, depth: ceil_log2(degree), relins: degree - 1 };
    }
    let m = ceil_log2(blocks);
    let const_top = n % k == 1;
    let hmults = (k - 1) + (m - 1) + (blocks - 1) - usize::from(const_top);
    let top_scalar = const_top && blocks - 1 == 1 << (m - 1);
    EvalStats { hmults, depth: ceil_log2(k) + m - usize::from(top_scalar), relins: hmults }
}

/// The best `k` for a dense polynomial of `degree` under `objective` (closed form, `k >= 2`):
/// `(k, cost)`.
#[must_use]
pub fn best_dense(degree: usize, objective: Objective) -> (usize, EvalStats) {
    let n = degree + 1;
    let mut best = (2, direct_cost(degree, 2));
    for k in 3..=n.max(2) {
        let c = direct_cost(degree, k);
        if key(objective, c) < key(objective, best.1) {
            best = (k, c);
        }
    }
    best
}

fn key(objective: Objective, c: EvalStats) -> (usize, usize, usize) {
    match objective {
        Objective::Hmults => (c.hmults, c.depth, c.relins),
        Objective::Depth => (c.depth, c.hmults, c.relins),
    }
}

// ---- the generic evaluator ------------------------------------------------------------------

/// A value during the evaluation: a known constant of `F_t` or an encrypted one.
pub(crate) enum Val<V> {
    Const(u32),
    Enc(V),
}

/// The operations the evaluator needs; implemented symbolically (counting) and on BGV.
///
/// Products are lazy: [`Ops::mul`] returns the tensor product without relinearising it (a
/// degree-2 value) and first relinearises an operand that is itself of degree 2 (once per
/// value, cached). Linear operations accept both degrees; [`Ops::finish`] relinearises a
/// result.
pub(crate) trait Ops {
    type V;
    /// Non-scalar product (lazy).
    fn mul(&mut self, a: &Self::V, b: &Self::V) -> Result<Self::V>;
    /// `sum_i c_i v_i + constant` for non-zero `c_i` (at least one term). `hint`: the value
    /// the result will be added to (formed at its level with its correction factor if possible).
    fn lin(&mut self, terms: &[(u32, &Self::V)], constant: u32, hint: Option<&Self::V>) -> Result<Self::V>;
    /// `a + b`.
    fn add(&mut self, a: Self::V, b: Self::V) -> Result<Self::V>;
    /// `a + c` for a non-zero constant.
    fn add_const(&mut self, a: Self::V, c: u32) -> Result<Self::V>;
    /// `v` of degree 1 (relinearised if it is of degree 2).
    fn finish(&mut self, v: Self::V) -> Result<Self::V>;
    /// `v` will not be used again: forget what was cached for it (its relinearised and
    /// switched forms).
    fn release(&mut self, v: Self::V) {
        drop(v);
    }
    /// From now on `v` is only used in its degree-1 form: keep that form alone.
    fn settle(&mut self, v: &mut Self::V) {
        let _ = v;
    }
    /// Whether the evaluator should track the uses of the powers, releasing each after its
    /// last use and keeping one level's copy where every remaining use is at that level (the
    /// homomorphic evaluation; the symbolic one has nothing to free).
    fn tracks_powers(&self) -> bool {
        false
    }
    /// The level of `v` in the form a linear combination reads (0 where levels are not
    /// modelled).
    fn level(&self, v: &Self::V) -> usize {
        let _ = v;
        0
    }
    /// From now on `v` is only read by linear combinations formed at `level`: keep its copy at
    /// that level alone (the copy a combination would switch it to, so nothing changes).
    fn collapse(&mut self, v: &mut Self::V, level: usize) -> Result<()> {
        let _ = (v, level);
        Ok(())
    }
}

/// The polynomial of a table: monomial coefficients and the even/odd parts (all trimmed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub coeffs: &'a [u32],
    pub even: &'a [u32],
    pub odd: &'a [u32],
}

fn internal(reason: &'static str) -> Error {
    Error::InvalidField { field: "lookup table evaluation", reason }
}

/// One use of powers: the powers a linear combination reads (`mul: false`), or the giant step
/// a product reads (`mul: true`). Powers are numbered baby steps first (`0..count`), then the
/// giant steps `G_1..G_(m-1)`.
#[derive(Debug, Clone)]
struct Use {
    powers: Vec<usize>,
    mul: bool,
}

/// What is left of one power's uses during the homomorphic evaluation.
#[derive(Debug, Clone, Default)]
struct Remaining {
    /// Products still to read it.
    muls: usize,
    /// Linear combinations still to read it, by the level they are formed at.
    lins: std::collections::BTreeMap<usize, usize>,
}

/// How the powers' uses are followed: not at all (symbolic), recorded (a dry run of the same
/// recursion), or replayed against that record (releasing each power after its last use).
enum Tracking {
    Off,
    Record(Vec<Use>),
    Replay { uses: Vec<Use>, next: usize, remaining: Vec<Remaining> },
}

/// Baby steps `base^1..base^count` and giant steps `base^(k 2^j)`, `1 <= j < m` (`None` once
/// released).
struct Powers<V> {
    k: usize,
    baby: Vec<Option<V>>,
    giants: Vec<Option<V>>,
    tracking: Tracking,
}

impl<V> Powers<V> {
    /// The index of giant step `j` among the powers (`G_0 = x^k` is the last baby step).
    fn giant_index(&self, j: usize) -> usize {
        if j == 0 {
            self.k.wrapping_sub(1)
        } else {
            self.baby.len() + j - 1
        }
    }

    fn get(&self, index: usize) -> Result<&V> {
        let v = if index < self.baby.len() { self.baby.get(index) } else { self.giants.get(index - self.baby.len()) };
        v.and_then(Option::as_ref).ok_or(internal("missing or released power"))
    }

    fn slot(&mut self, index: usize) -> Option<&mut Option<V>> {
        let n = self.baby.len();
        if index < n {
            self.baby.get_mut(index)
        } else {
            self.giants.get_mut(index - n)
        }
    }

    fn giant(&self, j: usize) -> Result<&V> {
        self.get(self.giant_index(j))
    }

    /// After the powers are formed: on replay, what each power's remaining uses are (the level
    /// of a combination is the lowest of its powers' levels, as [`Ops::lin`] forms it).
    fn start_replay<O: Ops<V = V>>(&mut self, ops: &mut O) -> Result<()> {
        let Tracking::Replay { uses, remaining, .. } = &mut self.tracking else { return Ok(()) };
        let count = self.baby.len() + self.giants.len();
        *remaining = vec![Remaining::default(); count];
        for u in uses.iter() {
            let mut level = usize::MAX;
            for &i in &u.powers {
                let v = if i < self.baby.len() { self.baby.get(i) } else { self.giants.get(i - self.baby.len()) };
                let v = v.and_then(Option::as_ref).ok_or(internal("use of a missing power"))?;
                level = level.min(ops.level(v));
            }
            for &i in &u.powers {
                let r = remaining.get_mut(i).ok_or(internal("use of a missing power"))?;
                if u.mul {
                    r.muls += 1;
                } else {
                    *r.lins.entry(level).or_default() += 1;
                }
            }
        }
        // A power read only by combinations at one level: that level's copy from the start.
        let collapse: Vec<(usize, usize)> = remaining
            .iter()
            .enumerate()
            .filter(|(_, r)| r.muls == 0 && r.lins.len() == 1)
            .filter_map(|(i, r)| r.lins.keys().next().map(|&l| (i, l)))
            .collect();
        for (i, l) in collapse {
            if let Some(v) = self.slot(i).and_then(Option::as_mut) {
                if ops.level(v) > l {
                    ops.collapse(v, l)?;
                }
            }
        }
        Ok(())
    }

    /// The powers of `u` were just read: recorded, or on replay counted off, each power
    /// released after its last use and collapsed to one level's copy once every remaining use
    /// is a combination at that level.
    fn used<O: Ops<V = V>>(&mut self, ops: &mut O, u: Use) -> Result<()> {
        let (next_use, remaining) = match &mut self.tracking {
            Tracking::Off => return Ok(()),
            Tracking::Record(log) => {
                log.push(u);
                return Ok(());
            }
            Tracking::Replay { uses, next, remaining } => {
                let want = uses.get(*next).ok_or(internal("more uses than recorded"))?;
                if want.powers != u.powers || want.mul != u.mul {
                    return Err(internal("uses differ from the record"));
                }
                *next += 1;
                (u, std::mem::take(remaining))
            }
        };
        let mut remaining = remaining;
        let mut level = usize::MAX;
        for &i in &next_use.powers {
            level = level.min(ops.level(self.get(i)?));
        }
        for &i in &next_use.powers {
            let r = remaining.get_mut(i).ok_or(internal("use of a missing power"))?;
            if next_use.mul {
                r.muls = r.muls.checked_sub(1).ok_or(internal("unrecorded product"))?;
            } else {
                let c = r.lins.get_mut(&level).ok_or(internal("unrecorded combination level"))?;
                *c -= 1;
                if *c == 0 {
                    r.lins.remove(&level);
                }
            }
            let (done, single) = (r.muls == 0 && r.lins.is_empty(), r.muls == 0 && r.lins.len() == 1);
            let target = r.lins.keys().next().copied();
            let slot = self.slot(i).ok_or(internal("use of a missing power"))?;
            if done {
                if let Some(v) = slot.take() {
                    ops.release(v);
                }
            } else if let (true, Some(l), Some(v)) = (single, target, slot.as_mut()) {
                if ops.level(v) > l {
                    ops.collapse(v, l)?;
                }
            }
        }
        if let Tracking::Replay { remaining: r, .. } = &mut self.tracking {
            *r = remaining;
        }
        Ok(())
    }
}

/// The smallest `m` with `len <= k 2^m`.
fn levels(len: usize, k: usize) -> usize {
    let mut m = 0;
    while len > k.saturating_mul(1 << m) {
        m += 1;
    }
    m
}

/// `c` without its trailing zero coefficients.
fn trim(mut c: &[u32]) -> &[u32] {
    while let [rest @ .., 0] = c {
        c = rest;
    }
    c
}

fn powers<O: Ops>(ops: &mut O, base: O::V, k: usize, max_len: usize, tracking: Tracking) -> Result<Powers<O::V>> {
    let m = levels(max_len, k);
    let count = if m >= 1 { k } else { max_len.saturating_sub(1).max(1) };
    let mut baby: Vec<O::V> = Vec::with_capacity(count);
    baby.push(base);
    for i in 2..=count {
        // a = largest power of two below i: x^i = x^a x^(i-a) at depth ceil(log2 i).
        let a = 1usize << (usize::BITS - 1 - (i - 1).leading_zeros());
        let v = {
            let lhs = baby.get(a - 1).ok_or(internal("missing baby step"))?;
            let rhs = baby.get(i - a - 1).ok_or(internal("missing baby step"))?;
            ops.mul(lhs, rhs)?
        };
        // The operands were relinearised for the product: every later read takes that form,
        // so it replaces the degree-2 one now rather than after the last power.
        for j in [a - 1, i - a - 1] {
            if let Some(op) = baby.get_mut(j) {
                ops.settle(op);
            }
        }
        baby.push(v);
    }
    let mut pw = Powers {
        k,
        baby: baby.into_iter().map(Some).collect(),
        giants: Vec::with_capacity(m.saturating_sub(1)),
        tracking,
    };
    for j in 1..m {
        let sq = {
            let prev = pw.giant(j - 1)?;
            ops.mul(prev, prev)?
        };
        let gi = pw.giant_index(j - 1);
        if let Some(op) = pw.slot(gi).and_then(Option::as_mut) {
            ops.settle(op);
        }
        pw.giants.push(Some(sq));
    }
    // Every product is formed: the powers that were operands are only read in their
    // relinearised form from here on.
    for v in pw.baby.iter_mut().chain(pw.giants.iter_mut()).flatten() {
        ops.settle(v);
    }
    pw.start_replay(ops)?;
    Ok(pw)
}

fn leaf<O: Ops>(ops: &mut O, pw: &mut Powers<O::V>, c: &[u32], hint: Option<&O::V>) -> Result<Val<O::V>> {
    let Some((&c0, rest)) = c.split_first() else { return Ok(Val::Const(0)) };
    if rest.len() > pw.baby.len() {
        return Err(internal("block longer than the baby steps"));
    }
    let used: Vec<usize> = rest.iter().enumerate().filter(|(_, &ci)| ci != 0).map(|(i, _)| i).collect();
    if used.is_empty() {
        return Ok(Val::Const(c0));
    }
    let v = {
        let terms: Vec<(u32, &O::V)> =
            used.iter().map(|&i| Ok((rest.get(i).copied().unwrap_or(0), pw.get(i)?))).collect::<Result<_>>()?;
        ops.lin(&terms, c0, hint)?
    };
    pw.used(ops, Use { powers: used, mul: false })?;
    Ok(Val::Enc(v))
}

fn add_vals<O: Ops>(ops: &mut O, t: Modulus, a: Val<O::V>, b: Val<O::V>) -> Result<Val<O::V>> {
    Ok(match (a, b) {
        (Val::Const(x), Val::Const(y)) => Val::Const(t.add(x, y)),
        (Val::Enc(v), Val::Const(0)) | (Val::Const(0), Val::Enc(v)) => Val::Enc(v),
        (Val::Enc(v), Val::Const(c)) | (Val::Const(c), Val::Enc(v)) => Val::Enc(ops.add_const(v, c)?),
        (Val::Enc(x), Val::Enc(y)) => Val::Enc(ops.add(x, y)?),
    })
}

/// `c(base)` where `c` has at most `k 2^j` coefficients. The products `q G` stay lazy: the sum
/// `q G + r` of a level is relinearised only where it becomes the quotient `q` of the level
/// above (an operand of a product) or the final result.
fn rec<O: Ops>(
    ops: &mut O,
    t: Modulus,
    pw: &mut Powers<O::V>,
    c: &[u32],
    j: usize,
    hint: Option<&O::V>,
) -> Result<Val<O::V>> {
    let c = trim(c);
    if c.len() <= pw.k || j == 0 {
        return leaf(ops, pw, c, hint);
    }
    let h = pw.k << (j - 1);
    if c.len() <= h {
        return rec(ops, t, pw, c, j - 1, hint);
    }
    let (low, high) = c.split_at(h);
    let gi = pw.giant_index(j - 1);
    let product = match rec(ops, t, pw, high, j - 1, None)? {
        Val::Const(0) => return rec(ops, t, pw, low, j - 1, hint),
        Val::Const(q) => {
            let p = ops.lin(&[(q, pw.get(gi)?)], 0, None)?;
            pw.used(ops, Use { powers: vec![gi], mul: false })?;
            p
        }
        Val::Enc(q) => {
            let p = ops.mul(&q, pw.get(gi)?)?;
            ops.release(q);
            pw.used(ops, Use { powers: vec![gi], mul: true })?;
            p
        }
    };
    let r = rec(ops, t, pw, low, j - 1, Some(&product))?;
    add_vals(ops, t, Val::Enc(product), r)
}

/// `c_0 + c_1 x` for a table whose even and odd parts have at most one coefficient.
fn linear<O: Ops>(ops: &mut O, t: Modulus, x: &O::V, even: &[u32], odd: &[u32]) -> Result<Val<O::V>> {
    // An empty part is the zero polynomial.
    let c0 = even.first().copied().unwrap_or(0);
    let odd_val = match odd.first() {
        Some(&c1) if c1 != 0 => Val::Enc(ops.lin(&[(c1, x)], 0, None)?),
        _ => Val::Const(0),
    };
    add_vals(ops, t, odd_val, Val::Const(c0))
}

/// `p_e(y) + x p_o(y)` on the powers of `y = x^2`.
fn even_odd<O: Ops>(
    ops: &mut O,
    t: Modulus,
    x: &O::V,
    pw: &mut Powers<O::V>,
    even: &[u32],
    odd: &[u32],
) -> Result<Val<O::V>> {
    let k = pw.k;
    match rec(ops, t, pw, odd, levels(odd.len(), k), None)? {
        Val::Enc(po) => {
            // x p_o(y) first, so that a block p_e is formed at its level and factor.
            let odd_val = ops.mul(x, &po)?;
            ops.release(po);
            let even_val = rec(ops, t, pw, even, levels(even.len(), k), Some(&odd_val))?;
            add_vals(ops, t, Val::Enc(odd_val), even_val)
        }
        Val::Const(c) => {
            // p_e(y) + c x (ReLU: c = 1/2): c x formed at p_e's level and factor.
            let even_val = rec(ops, t, pw, even, levels(even.len(), k), None)?;
            let odd_val = match (&even_val, c) {
                (_, 0) => Val::Const(0),
                (Val::Enc(h), _) => Val::Enc(ops.lin(&[(c, x)], 0, Some(h))?),
                (Val::Const(_), _) => Val::Enc(ops.lin(&[(c, x)], 0, None)?),
            };
            add_vals(ops, t, even_val, odd_val)
        }
    }
}

/// The values of `set` at `x` before their final relinearisation, and what became of the
/// tracking (the record of a dry run).
fn evaluate_raw<O: Ops>(
    ops: &mut O,
    t: Modulus,
    x: O::V,
    set: &[Parts<'_>],
    strategy: Strategy,
    k: usize,
    tracking: Tracking,
) -> Result<(Vec<Val<O::V>>, Tracking)> {
    Ok(match strategy {
        Strategy::Direct => {
            let max_len = set.iter().map(|p| trim(p.coeffs).len()).max().unwrap_or(0);
            let mut pw = powers(ops, x, k, max_len, tracking)?;
            let mut out = Vec::with_capacity(set.len());
            for p in set {
                let c = trim(p.coeffs);
                out.push(rec(ops, t, &mut pw, c, levels(c.len(), k), None)?);
            }
            (out, pw.tracking)
        }
        Strategy::EvenOdd => {
            let max_len = set.iter().map(|p| trim(p.even).len().max(trim(p.odd).len())).max().unwrap_or(0);
            let mut out = Vec::with_capacity(set.len());
            if max_len <= 1 {
                // p = c_0 + c_1 x: no power of y needed.
                for p in set {
                    out.push(linear(ops, t, &x, trim(p.even), trim(p.odd))?);
                }
                (out, tracking)
            } else {
                let y = ops.mul(&x, &x)?;
                let mut pw = powers(ops, y, k, max_len, tracking)?;
                for p in set {
                    out.push(even_odd(ops, t, &x, &mut pw, trim(p.even), trim(p.odd))?);
                }
                (out, pw.tracking)
            }
        }
    })
}

/// Evaluates the polynomials of `set` at `x` with `strategy` and `k` baby steps, sharing one
/// power basis (the baby and giant steps of `x`, or of `y = x^2`, up to the longest
/// polynomial), and returns one relinearised value per polynomial.
pub(crate) fn evaluate_set<O: Ops>(
    ops: &mut O,
    t: Modulus,
    x: O::V,
    set: &[Parts<'_>],
    strategy: Strategy,
    k: usize,
) -> Result<Vec<Val<O::V>>> {
    if k == 0 {
        return Err(Error::InvalidField { field: "baby_steps", reason: "must be at least 1" });
    }
    let tracking = if ops.tracks_powers() {
        // A dry run of the same recursion (the symbolic evaluator, whose control flow depends
        // only on the coefficients) records every use of every power.
        let mut dry = Count::default();
        let base = dry.sym(0, false);
        let (_, log) = evaluate_raw(&mut dry, t, base, set, strategy, k, Tracking::Record(Vec::new()))?;
        match log {
            Tracking::Record(uses) => Tracking::Replay { uses, next: 0, remaining: Vec::new() },
            _ => return Err(internal("no record of the uses")),
        }
    } else {
        Tracking::Off
    };
    let (raw, _) = evaluate_raw(ops, t, x, set, strategy, k, tracking)?;
    raw.into_iter()
        .map(|v| match v {
            Val::Enc(e) => Ok(Val::Enc(ops.finish(e)?)),
            c @ Val::Const(_) => Ok(c),
        })
        .collect()
}

// ---- symbolic evaluation and planning -------------------------------------------------------

/// A symbolic value: its depth, whether it is of degree 2, and an id (for the relinearisation
/// cache, as on BGV).
#[derive(Debug, Clone, Copy)]
struct Sym {
    depth: usize,
    lazy: bool,
    id: usize,
}

/// Counts HMULTs and relinearisations.
#[derive(Default)]
struct Count {
    hmults: usize,
    relins: usize,
    next_id: usize,
    relinearised: HashSet<usize>,
}

impl Count {
    fn sym(&mut self, depth: usize, lazy: bool) -> Sym {
        self.next_id += 1;
        Sym { depth, lazy, id: self.next_id }
    }

    fn operand(&mut self, v: &Sym) {
        if v.lazy && self.relinearised.insert(v.id) {
            self.relins += 1;
        }
    }
}

impl Ops for Count {
    type V = Sym;
    fn mul(&mut self, a: &Sym, b: &Sym) -> Result<Sym> {
        self.operand(a);
        self.operand(b);
        self.hmults += 1;
        Ok(self.sym(a.depth.max(b.depth) + 1, true))
    }
    fn lin(&mut self, terms: &[(u32, &Sym)], _: u32, _: Option<&Sym>) -> Result<Sym> {
        let depth = terms.iter().map(|(_, s)| s.depth).max().unwrap_or(0);
        // A term already relinearised enters with its degree-1 form.
        let lazy = terms.iter().any(|(_, s)| s.lazy && !self.relinearised.contains(&s.id));
        Ok(self.sym(depth, lazy))
    }
    fn add(&mut self, a: Sym, b: Sym) -> Result<Sym> {
        Ok(self.sym(a.depth.max(b.depth), a.lazy || b.lazy))
    }
    fn add_const(&mut self, a: Sym, _: u32) -> Result<Sym> {
        Ok(self.sym(a.depth, a.lazy))
    }
    fn finish(&mut self, v: Sym) -> Result<Sym> {
        self.operand(&v);
        Ok(self.sym(v.depth, false))
    }
}

/// The exact cost of evaluating `set` together with `strategy` and `k` baby steps: the
/// evaluation run symbolically (the same code as the homomorphic one, counting HMULTs,
/// relinearisations and depths; the depth is the largest of the set).
pub(crate) fn simulate_set(t: Modulus, set: &[Parts<'_>], strategy: Strategy, k: usize) -> Result<EvalStats> {
    let mut ops = Count::default();
    let x = ops.sym(0, false);
    let vals = evaluate_set(&mut ops, t, x, set, strategy, k)?;
    let depth = vals
        .iter()
        .map(|v| match v {
            Val::Const(_) => 0,
            Val::Enc(s) => s.depth,
        })
        .max()
        .unwrap_or(0);
    Ok(EvalStats { hmults: ops.hmults, depth, relins: ops.relins })
}

/// [`simulate_set`] for one polynomial.
pub(crate) fn simulate(t: Modulus, parts: Parts<'_>, strategy: Strategy, k: usize) -> Result<EvalStats> {
    simulate_set(t, &[parts], strategy, k)
}

/// The cheapest plan for `set` under `objective`: both strategies, `k` from 1 to
/// `4 sqrt(n s) + 4` for `n` coefficients and `s` polynomials.
pub(crate) fn best_plan_set(t: Modulus, set: &[Parts<'_>], objective: Objective) -> Result<EvalPlan> {
    best_plan_set_within(t, set, objective, usize::MAX)
}

/// [`best_plan_set`] among the plans with at most `max_baby_steps` baby steps (at least one
/// is always allowed): the baby-step powers are what a table evaluation holds for its whole
/// duration, so this caps its working set.
pub(crate) fn best_plan_set_within(
    t: Modulus,
    set: &[Parts<'_>],
    objective: Objective,
    max_baby_steps: usize,
) -> Result<EvalPlan> {
    let mut best: Option<EvalPlan> = None;
    for strategy in [Strategy::Direct, Strategy::EvenOdd] {
        let len = set
            .iter()
            .map(|p| match strategy {
                Strategy::Direct => trim(p.coeffs).len(),
                Strategy::EvenOdd => trim(p.even).len().max(trim(p.odd).len()),
            })
            .max()
            .unwrap_or(0);
        let k_max = len.min(4 * (len * set.len().max(1)).isqrt() + 4).min(max_baby_steps).max(1);
        for k in 1..=k_max {
            let cost = simulate_set(t, set, strategy, k)?;
            if best.is_none_or(|b| key(objective, cost) < key(objective, b.cost)) {
                best = Some(EvalPlan { strategy, baby_steps: k, cost });
            }
        }
    }
    best.ok_or(internal("no plan"))
}

/// [`best_plan_set`] for one polynomial.
pub(crate) fn best_plan(t: Modulus, parts: Parts<'_>, objective: Objective) -> Result<EvalPlan> {
    best_plan_set(t, &[parts], objective)
}

// ---- BGV ------------------------------------------------------------------------------------

/// A ciphertext during the evaluation, with its depth and an id for the level and
/// relinearisation caches.
pub(crate) struct Node<B: Backend> {
    pub ct: Ciphertext<B>,
    pub depth: usize,
    id: usize,
    _live: Live,
}

/// Counts the nodes alive: one token per node, given back when the node (or what is left of
/// it after its ciphertext is moved out) is dropped.
struct Live(Rc<Cell<usize>>);

impl Live {
    fn new(count: &Rc<Cell<usize>>) -> Self {
        count.set(count.get() + 1);
        Self(Rc::clone(count))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// The evaluator's operations on BGV ciphertexts.
pub(crate) struct BgvOps<'a, B: Backend> {
    bgv: &'a Bgv<B>,
    keys: &'a EvaluationKeys<B>,
    t: Modulus,
    next_id: usize,
    /// HMULTs (tensor products) done so far.
    pub hmults: usize,
    /// Relinearisations done so far.
    pub relins: usize,
    /// Powers switched down to a lower level, by (node id, level, whether the source was the
    /// relinearised form).
    switched: HashMap<(usize, usize, bool), Ciphertext<B>>,
    /// Degree-2 nodes relinearised (after their automatic switch), by node id.
    relinearised: HashMap<usize, Ciphertext<B>>,
    /// Constant plaintexts by value.
    constants: HashMap<u32, Plaintext>,
    /// Nodes alive (the input, powers, pending products, results).
    live: Rc<Cell<usize>>,
    /// The most ciphertexts held at once: nodes alive plus cached switched and relinearised
    /// forms (the temporaries inside one operation not counted).
    pub peak_ciphertexts: usize,
    /// Whether powers are released after their last use and collapsed to one level's copy
    /// (false: every power and its switched copies are held to the end, as before).
    pub release_powers: bool,
}

impl<'a, B: Backend> BgvOps<'a, B> {
    pub(crate) fn new(bgv: &'a Bgv<B>, keys: &'a EvaluationKeys<B>) -> Result<Self> {
        let t = Modulus::new(u64::from(bgv.plaintext_modulus()))?;
        Ok(Self {
            bgv,
            keys,
            t,
            next_id: 0,
            hmults: 0,
            relins: 0,
            switched: HashMap::new(),
            relinearised: HashMap::new(),
            constants: HashMap::new(),
            live: Rc::new(Cell::new(0)),
            peak_ciphertexts: 0,
            release_powers: true,
        })
    }

    pub(crate) fn node(&mut self, ct: Ciphertext<B>, depth: usize) -> Node<B> {
        self.next_id += 1;
        let node = Node { ct, depth, id: self.next_id, _live: Live::new(&self.live) };
        self.note_peak();
        node
    }

    /// Ciphertexts held now: nodes alive and cached forms.
    pub(crate) fn held(&self) -> usize {
        self.live.get() + self.switched.len() + self.relinearised.len()
    }

    fn note_peak(&mut self) {
        self.peak_ciphertexts = self.peak_ciphertexts.max(self.held());
    }

    /// The constant plaintext `c` in every slot (cached).
    pub(crate) fn constant(&mut self, c: u32) -> Result<&Plaintext> {
        Ok(match self.constants.entry(c) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let slots = self.bgv.encoder().slots();
                e.insert(self.bgv.encoder().encode(&vec![u64::from(c); slots])?)
            }
        })
    }

    /// Relinearises a degree-2 node once (switched down as far as its noise allows first, as a
    /// product's operand would be) and caches the result.
    fn relinearise(&mut self, node: &Node<B>) -> Result<()> {
        if node.ct.degree() < 2 || self.relinearised.contains_key(&node.id) {
            return Ok(());
        }
        // Switched down only as far as the degree-2 rounding floor allows, relinearised, then
        // down again to the degree-1 floor (the noise an eager relinearisation would leave).
        let low = self.bgv.mod_switch_auto(&node.ct)?;
        let ct = self.bgv.mod_switch_auto(&self.bgv.relinearize(&low, self.keys)?)?;
        self.relins += 1;
        self.relinearised.insert(node.id, ct);
        self.note_peak();
        Ok(())
    }

    /// Drops the cached forms of node `id` (a node consumed or released: every intermediate
    /// product of a table would otherwise keep its relinearised copy until the whole set is
    /// evaluated, hundreds of ciphertexts for a large set).
    fn forget(&mut self, id: usize) {
        self.relinearised.remove(&id);
        self.switched.retain(|&(node, _, _), _| node != id);
    }

    /// `node` of degree 1: itself or its cached relinearisation.
    fn operand<'s>(&'s self, node: &'s Node<B>) -> &'s Ciphertext<B> {
        self.relinearised.get(&node.id).unwrap_or(&node.ct)
    }

    /// `node` (its relinearised form if there is one) at `level` (switched once per level and
    /// cached).
    fn at_level<'s>(&'s mut self, node: &'s Node<B>, level: usize) -> Result<&'s Ciphertext<B>> {
        let (source, relinearised) = match self.relinearised.get(&node.id) {
            Some(ct) => (ct, true),
            None => (&node.ct, false),
        };
        if source.level() == level {
            return Ok(source);
        }
        let key = (node.id, level, relinearised);
        if !self.switched.contains_key(&key) {
            let ct = self.bgv.mod_switch_to_level(source, level)?;
            self.switched.insert(key, ct);
            let held = self.live.get() + self.switched.len() + self.relinearised.len();
            self.peak_ciphertexts = self.peak_ciphertexts.max(held);
        }
        self.switched.get(&key).ok_or(internal("switched form missing"))
    }

    /// `prod_{level < i <= from} q_i^-1 mod t`: what switching from `from` down to `level`
    /// multiplies into the correction factor.
    fn switch_factor(&self, from: usize, level: usize) -> Result<u32> {
        let low = self.bgv.level_correction(level)?;
        let high = self.bgv.level_correction(from)?;
        let inv = self.inv(high)?;
        Ok(self.t.mul(low, inv))
    }

    fn inv(&self, a: u32) -> Result<u32> {
        self.t.inv(a).ok_or(Error::InvalidCorrectionFactor { factor: u64::from(a), t: u64::from(self.t.value()) })
    }
}

/// The component-wise sum of two polynomial vectors of possibly different lengths (a degree-1
/// and a degree-2 ciphertext: the missing `c_2` is zero).
fn add_components<B: Backend>(
    backend: &B,
    a: Vec<RnsPoly<B, Eval>>,
    b: Vec<RnsPoly<B, Eval>>,
) -> Result<Vec<RnsPoly<B, Eval>>> {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(long.len());
    let mut short = short.into_iter();
    for p in long {
        out.push(match short.next() {
            Some(q) => p.add(backend, &q)?,
            None => p,
        });
    }
    Ok(out)
}

impl<B: Backend> Ops for BgvOps<'_, B> {
    type V = Node<B>;

    fn mul(&mut self, a: &Node<B>, b: &Node<B>) -> Result<Node<B>> {
        self.relinearise(a)?;
        self.relinearise(b)?;
        let ct = self.bgv.switch_and_tensor(self.operand(a), self.operand(b))?;
        self.hmults += 1;
        Ok(self.node(ct, a.depth.max(b.depth) + 1))
    }

    fn lin(&mut self, terms: &[(u32, &Node<B>)], constant: u32, hint: Option<&Node<B>>) -> Result<Node<B>> {
        // Terms enter in their degree-1 form where they have been relinearised.
        let min_level =
            terms.iter().map(|(_, n)| self.operand(n).level()).min().ok_or(internal("empty combination"))?;
        let depth = terms.iter().map(|(_, n)| n.depth).max().unwrap_or(0);
        // The level and correction factor of the result: the hint's (switched down to the
        // terms' level if they are lower), else the first term's at the terms' level.
        let (level, target) = match (hint, terms.first()) {
            (Some(h), _) => {
                let level = min_level.min(h.ct.level());
                (level, self.t.mul(h.ct.correction, self.switch_factor(h.ct.level(), level)?))
            }
            (None, Some((_, n))) => {
                let first = self.operand(n);
                (min_level, self.t.mul(first.correction, self.switch_factor(first.level(), min_level)?))
            }
            (None, None) => return Err(internal("empty combination")),
        };
        // The combination is formed at the terms' common level and the one result is switched
        // down to `level`, rather than every term: caching each power at every level a block
        // is formed at held hundreds of ciphertexts (24 GB for one digit-extraction set at
        // N = 2^17), and the coefficients (up to t/2) then multiply the switched terms'
        // rounding noise instead of being divided by the dropped primes.
        let form = min_level;
        let form_target =
            if form == level { target } else { self.t.mul(target, self.inv(self.switch_factor(form, level)?)?) };
        let bgv = self.bgv;
        let t = self.t;
        // The running sum: its polynomials, noise and the terms' parameter id.
        let mut acc = None;
        for &(c, node) in terms {
            let ct = self.at_level(node, form)?;
            let inv = t
                .inv(ct.correction)
                .ok_or(Error::InvalidCorrectionFactor { factor: u64::from(ct.correction), t: u64::from(t.value()) })?;
            // c * x^i with factor f_i -> c * T / f_i times it carries factor T.
            let k = t.center(t.mul(t.mul(c, form_target), inv));
            let noise = ct.noise_log2 + (k.unsigned_abs() as f64).max(1.0).log2();
            let param_id = ct.param_id();
            let scaled = ct.core.polys().iter().map(|p| p.mul_int(bgv.backend(), k)).collect::<Result<Vec<_>>>()?;
            acc = Some(match acc {
                None => (scaled, noise, param_id),
                Some((sum, n, _)) => (add_components(bgv.backend(), sum, scaled)?, log2_add(n, noise), param_id),
            });
        }
        let (polys, noise, param_id) = acc.ok_or(internal("empty combination"))?;
        self.bgv.check_noise(noise, form)?;
        let formed = Ciphertext {
            core: CiphertextCore::from_parts(polys, None, param_id)?,
            correction: form_target,
            noise_log2: noise,
        };
        let mut ct = if form == level { formed } else { bgv.mod_switch_to_level(&formed, level)? };
        if constant != 0 {
            let pt = self.constant(constant)?;
            ct = bgv.add_plain(&ct, pt)?;
        }
        Ok(self.node(ct, depth))
    }

    fn add(&mut self, a: Node<B>, b: Node<B>) -> Result<Node<B>> {
        self.forget(a.id);
        self.forget(b.id);
        let level = a.ct.level().min(b.ct.level());
        let a_ct = if a.ct.level() == level { a.ct } else { self.bgv.mod_switch_to_level(&a.ct, level)? };
        let b_ct = if b.ct.level() == level { b.ct } else { self.bgv.mod_switch_to_level(&b.ct, level)? };
        let ct = self.bgv.add(&a_ct, &b_ct)?;
        Ok(self.node(ct, a.depth.max(b.depth)))
    }

    fn add_const(&mut self, a: Node<B>, c: u32) -> Result<Node<B>> {
        self.forget(a.id);
        let bgv = self.bgv;
        let pt = self.constant(c)?;
        let ct = bgv.add_plain(&a.ct, pt)?;
        Ok(self.node(ct, a.depth))
    }

    fn finish(&mut self, v: Node<B>) -> Result<Node<B>> {
        if v.ct.degree() < 2 {
            return Ok(v);
        }
        self.relinearise(&v)?;
        let ct = self.relinearised.remove(&v.id).ok_or(internal("relinearisation missing"))?;
        self.forget(v.id);
        Ok(self.node(ct, v.depth))
    }

    fn release(&mut self, v: Node<B>) {
        self.forget(v.id);
    }

    fn settle(&mut self, v: &mut Node<B>) {
        if let Some(ct) = self.relinearised.remove(&v.id) {
            v.ct = ct;
            self.forget(v.id);
        }
    }

    fn tracks_powers(&self) -> bool {
        self.release_powers
    }

    fn level(&self, v: &Node<B>) -> usize {
        self.operand(v).level()
    }

    fn collapse(&mut self, v: &mut Node<B>, level: usize) -> Result<()> {
        // The very copy `at_level` would make (or has made) for the combinations at `level`.
        let key = (v.id, level, self.relinearised.contains_key(&v.id));
        let ct = match self.switched.remove(&key) {
            Some(ct) => ct,
            None => self.bgv.mod_switch_to_level(self.operand(v), level)?,
        };
        self.forget(v.id);
        v.ct = ct;
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn dense(n: usize, seed: u64) -> Vec<u32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                1 + ((s >> 33) % 65536) as u32
            })
            .collect()
    }

    #[test]
    fn formula_matches_the_symbolic_evaluation() {
        let t = Modulus::new(65537).unwrap();
        for d in 0..=140 {
            let c = dense(d + 1, d as u64);
            let parts = Parts { coeffs: &c, even: &[], odd: &[] };
            for k in 2..=d + 2 {
                let sim = simulate(t, parts, Strategy::Direct, k).unwrap();
                let formula = dense_cost(d, k).unwrap();
                assert_eq!((sim.hmults, sim.depth), (formula.hmults, formula.depth), "degree {d}, k = {k}");
                assert!(sim.relins <= sim.hmults, "degree {d}, k = {k}: {sim:?}");
            }
        }
    }

    #[test]
    fn degree_30_costs_11_hmults_at_depth_5() {
        let eager = |hmults, depth| EvalStats { hmults, depth, relins: hmults };
        assert_eq!(best_dense(30, Objective::Hmults), (8, eager(11, 5)));
        assert_eq!(best_dense(30, Objective::Depth), (8, eager(11, 5)));
        // Depth-optimal plans for the large domains: k 2^m = 2^ceil(log2(2B' + 1)).
        assert_eq!(best_dense(8190, Objective::Depth).1, eager(195, 13));
        assert_eq!(best_dense(32766, Objective::Depth).1, eager(388, 15));
        assert_eq!(best_dense(65534, Objective::Depth).1, eager(517, 16));
    }

    #[test]
    fn ceil_log2_small_values() {
        let want = [0, 0, 1, 2, 2, 3, 3, 3, 3, 4];
        for (n, &w) in want.iter().enumerate() {
            assert_eq!(ceil_log2(n), w, "n = {n}");
        }
    }

    #[test]
    fn lazy_relinearisation_saves_on_dense_polynomials() {
        let t = Modulus::new(65537).unwrap();
        // Degree 30, k = 8: 11 HMULTs; relinearised are the operands x^2, x^4 (x^3 = x^2 x,
        // x^5..x^7 and x^8 = x^4 x^4), the giant steps x^8 and x^16, the three quotients q of
        // the merges ... counted exactly by the simulation, and fewer than the HMULTs.
        let c = dense(31, 7);
        let parts = Parts { coeffs: &c, even: &[], odd: &[] };
        let s = simulate(t, parts, Strategy::Direct, 8).unwrap();
        assert_eq!((s.hmults, s.depth), (11, 5));
        assert!(s.relins < s.hmults, "{s:?}");
        // A set of two polynomials shares the 8 HMULTs of the powers.
        let d = dense(31, 8);
        let both = [parts, Parts { coeffs: &d, even: &[], odd: &[] }];
        let set = simulate_set(t, &both, Strategy::Direct, 8).unwrap();
        assert_eq!(set.hmults, 11 + 3);
        assert_eq!(set.depth, 5);
    }
}
