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
        let terms: Vec<(u32, &O::V)> = rest
            .iter()
            .enumerate()
            .filter(|(_, &ci)| ci != 0)
            .map(|(i, &ci)| Ok((ci, pw.get(i)?)))
            .collect::<Result<_>>()?;
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

mod bgv_ops;
pub(crate) use bgv_ops::BgvOps;

#[cfg(test)]
mod tests;
