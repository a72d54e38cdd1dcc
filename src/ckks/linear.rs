//! Homomorphic linear transforms of CKKS slots, and the CoeffToSlot / SlotToCoeff transforms of
//! bootstrapping.
//!
//! # Conventions
//!
//! With `n` slots (`gap = N/(2n)`), slot `j` holds `z_j = sum_k u_k w^(k (5^j mod 4n))`,
//! `w = exp(2 pi i / 4n)`, where `u_k = c[gap k] + i c[gap k + N/2]` packs the grid coefficients
//! of the plaintext (over the scale) ([`super::encoder`]): `z = E u`. [`special_dft`] and
//! [`special_dft_inverse`] apply `E` and `E^{-1} = E^H / n` directly (`O(n^2)`, the reference).
//!
//! # The factorisation
//!
//! `E = S_L ... S_1 P` with `L = log2 n`, `P` the bit-reversal permutation ([`bit_reverse`])
//! and `S_s` (`s = 1..L`, `len = 2^s`, `h = len/2`) the butterfly stage that maps, in every
//! block `[i, i + len)` and for `j < h`,
//!
//! ```text
//! x[i+j] -> x[i+j] + r_j x[i+j+h],   x[i+j+h] -> x[i+j] - r_j x[i+j+h],   r_j = exp(2 pi i (5^j mod 4 len) / 4 len)
//! ```
//!
//! (the FFT of the encoder's special DFT in the order of the powers of 5). As a matrix, `S_s`
//! has three non-zero diagonals (offsets `0`, `h`, `-h`; two when `h = n/2`), and so does its
//! inverse. The permutation `P` is not sparse in diagonals and is left out: CoeffToSlot applies
//! `T^{-1} = S_1^{-1} ... S_L^{-1}` (slot `j` then holds `u_{rev(j)}`, `rev` the bit reversal
//! of `log2 n` bits) and SlotToCoeff applies `T = S_L ... S_1`, which takes the bit-reversed
//! `u` back to the slots `E u`; the slot-wise EvalMod in between does not care about the
//! order. [`slot_to_coeff_stages`] and [`coeff_to_slot_stages`] give the stages in application
//! order, [`group_stages`] merges consecutive ones into a level budget: one level per group, a
//! group of `s` stages having up to `2^(s+1) - 1` diagonals.
//!
//! # Baby-step giant-step
//!
//! A [`LinearTransform`] is a matrix `M` on `n` slots given by its non-zero diagonals,
//! `diag_k[j] = M[j][(j + k) mod n]`, so `M z = sum_k diag_k * rot_k(z)` (`rot_k` a left
//! rotation by `k`). With `k = g + b` (a giant step `g`, a multiple of `n1`, and a baby step
//! `b < n1`, from the signed offset of `k`),
//!
//! ```text
//! M z = sum_g rot_g( sum_b rot_{-g}(diag_{g+b}) * rot_b(z) ),
//! ```
//!
//! so only the rotations of `z` by the baby steps (hoisted: one ModUp for all, see
//! [`crate::rlwe::decompose`]) and of the partial sums by the giant steps are needed; the
//! diagonals are rotated in the clear. [`BsgsPlan`] picks the `n1` with the fewest rotations.
//! [`Ckks::linear_transform`] encodes each diagonal at the scale of the next rescale, forms
//! every product and sum at the input's level, and rescales once: it consumes exactly one
//! level and returns the input's scale.
//!
//! # Bootstrapping transforms
//!
//! [`BootTransforms`] holds the grouped CoeffToSlot and SlotToCoeff transforms of a slot count
//! and level budgets, and lists every rotation they use ([`BootTransforms::rotations`]: generate
//! keys for those only). [`Ckks::coeff_to_slot`] first applies, for sparse slots (`n < N/2`),
//! the trace to the subring of `Y = X^gap` ([`Ckks::subring_trace`]: the sum of the
//! automorphisms `X -> X^(5^(n t))`, `t < gap`, computed with `log2 gap` rotations), which
//! zeroes the coefficients off the `gap` grid and multiplies the others by `gap`; the `1/gap`
//! is folded into the CoeffToSlot scalar. [`Ckks::split_real_imag`] and
//! [`Ckks::combine_real_imag`] separate and join the real and imaginary parts of the slots
//! (one conjugation; the multiplication by `i` is the exact monomial `X^(N/2)`, no level).
//!
//! # Keys and precomputation
//!
//! [`Ckks::boot_key_plan`] gives every rotation (and the conjugation) at the highest level it
//! is used at, for [`crate::rlwe::gen_planned_keys`] or [`EvaluationKeys::reduced_to`] (the
//! same words with fewer limbs). [`Ckks::prepare_boot`] lifts every diagonal once at the level
//! it is used at ([`PreparedTransform`]), which the `*_prepared` transforms use (the same
//! words). [`BootCost::estimate`] counts rotations, ModUps and products from the diagonal
//! offsets alone, at any size.
#![expect(
    clippy::indexing_slicing,
    reason = "plaintext loops over vectors of length n with indices reduced mod n or bounded by n"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::f64::consts::PI;

use num_complex::Complex64;

use super::{Ciphertext, Ckks, Plaintext};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::{Eval, RnsPoly};
use crate::rlwe::{self, EvaluationKeys, KeyPlan};

const ZERO: Complex64 = Complex64::new(0.0, 0.0);
const ONE: Complex64 = Complex64::new(1.0, 0.0);

/// `log2 n` if `n` is a power of two, else [`Error::InvalidParameters`].
fn log2_exact(what: &str, n: usize) -> Result<u32> {
    if n == 0 || !n.is_power_of_two() {
        return Err(Error::InvalidParameters { reason: format!("{what} {n} is not a power of two") });
    }
    Ok(n.trailing_zeros())
}

/// `i` with its low `bits` bits reversed.
fn reverse_bits(i: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        i.reverse_bits() >> (usize::BITS - bits)
    }
}

/// `exp(2 pi i e / m)`, `e` reduced mod `m`.
fn root(e: usize, m: usize) -> Complex64 {
    Complex64::from_polar(1.0, 2.0 * PI * ((e % m) as f64) / (m as f64))
}

/// `v` in bit-reversed order: `out[i] = v[rev(i)]`, `rev` reversing `log2 len` bits (an
/// involution). Errors: a length that is not a power of two ([`Error::InvalidParameters`]).
pub fn bit_reverse<T: Clone>(v: &[T]) -> Result<Vec<T>> {
    let bits = log2_exact("length", v.len())?;
    Ok((0..v.len()).map(|i| v[reverse_bits(i, bits)].clone()).collect())
}

/// `E u`: slot `j` is `sum_k u_k w^(k (5^j mod 4n))`, `w = exp(2 pi i / 4n)`, `n = u.len()` (a
/// power of two), computed directly in `O(n^2)`. For `u_k = c[gap k] + i c[gap k + N/2]` this is
/// [`super::Encoder::decode`] of the coefficients `c` at scale 1 and `n` slots.
pub fn special_dft(u: &[Complex64]) -> Result<Vec<Complex64>> {
    let n = u.len();
    log2_exact("slot count", n)?;
    let m = 4 * n;
    let mut g = 1usize;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(u.iter().enumerate().map(|(k, &x)| x * root(k * g % m, m)).sum());
        g = g * 5 % m;
    }
    Ok(out)
}

/// `E^{-1} z = E^H z / n` (the rows of `E` are orthogonal, of norm `sqrt n`), computed directly
/// in `O(n^2)`.
pub fn special_dft_inverse(z: &[Complex64]) -> Result<Vec<Complex64>> {
    let n = z.len();
    log2_exact("slot count", n)?;
    let m = 4 * n;
    let mut out = vec![ZERO; n];
    let mut g = 1usize;
    for &zj in z {
        for (k, o) in out.iter_mut().enumerate() {
            *o += zj * root(k * g % m, m).conj();
        }
        g = g * 5 % m;
    }
    let inv = 1.0 / n as f64;
    Ok(out.into_iter().map(|x| x * inv).collect())
}

/// Adds `v` at `(row, col)` of the matrix held as diagonals.
fn add_entry(diags: &mut BTreeMap<usize, Vec<Complex64>>, n: usize, row: usize, col: usize, v: Complex64) {
    let k = (col + n - row) % n;
    diags.entry(k).or_insert_with(|| vec![ZERO; n])[row] += v;
}

/// The butterfly stages of `T` (`E = T P`, see the module documentation) for `n` slots, in
/// application order `S_1, ..., S_L`: SlotToCoeff.
pub fn slot_to_coeff_stages(n: usize) -> Result<Vec<LinearTransform>> {
    stages(n, false)
}

/// The stages of `T^{-1}` in application order `S_L^{-1}, ..., S_1^{-1}`: CoeffToSlot (slot `j`
/// receives `u_{rev(j)}`).
pub fn coeff_to_slot_stages(n: usize) -> Result<Vec<LinearTransform>> {
    let mut s = stages(n, true)?;
    s.reverse();
    Ok(s)
}

/// `S_1..S_L` (or their inverses), in the order of `s`.
fn stages(n: usize, inverse: bool) -> Result<Vec<LinearTransform>> {
    let log = log2_exact("slot count", n)?;
    let half = Complex64::new(0.5, 0.0);
    let mut out = Vec::with_capacity(log as usize);
    for s in 1..=log {
        let len = 1usize << s;
        let h = len / 2;
        let m = 4 * len;
        let mut diags = BTreeMap::new();
        for i in (0..n).step_by(len) {
            let mut g = 1usize;
            for j in 0..h {
                let r = root(g, m);
                let (lo, hi) = (i + j, i + j + h);
                if inverse {
                    // x_lo = (y_lo + y_hi) / 2, x_hi = (y_lo - y_hi) conj(r) / 2.
                    add_entry(&mut diags, n, lo, lo, half);
                    add_entry(&mut diags, n, lo, hi, half);
                    add_entry(&mut diags, n, hi, lo, r.conj() * half);
                    add_entry(&mut diags, n, hi, hi, -r.conj() * half);
                } else {
                    add_entry(&mut diags, n, lo, lo, ONE);
                    add_entry(&mut diags, n, lo, hi, r);
                    add_entry(&mut diags, n, hi, lo, ONE);
                    add_entry(&mut diags, n, hi, hi, -r);
                }
                g = g * 5 % m;
            }
        }
        out.push(LinearTransform::new(n, diags)?);
    }
    Ok(out)
}

/// The sizes of `levels` consecutive groups of `count` stages, as even as possible, the larger
/// groups first. Errors: `levels` outside `1..=count` ([`Error::InvalidParameters`]).
fn group_sizes(count: usize, levels: usize) -> Result<Vec<usize>> {
    if levels == 0 || levels > count {
        return Err(Error::InvalidParameters {
            reason: format!("a level budget of {levels} for {count} stages (must be 1..={count})"),
        });
    }
    let (base, extra) = (count / levels, count % levels);
    Ok((0..levels).map(|g| base + usize::from(g < extra)).collect())
}

/// Merges `stages` (in application order) into `levels` groups of consecutive stages, the larger
/// groups first: each group is the product of its stages, applied as one transform (one level).
/// Errors: `levels` outside `1..=stages.len()` ([`Error::InvalidParameters`]), stages of
/// different slot counts ([`Error::DimensionMismatch`]).
pub fn group_stages(stages: &[LinearTransform], levels: usize) -> Result<Vec<LinearTransform>> {
    let mut rest = stages;
    let mut out = Vec::with_capacity(levels);
    for size in group_sizes(stages.len(), levels)? {
        let (group, tail) = rest.split_at(size);
        rest = tail;
        let mut it = group.iter();
        let mut acc = it.next().cloned().ok_or(Error::InvalidParameters { reason: "an empty group".into() })?;
        for s in it {
            acc = acc.then(s)?;
        }
        out.push(acc);
    }
    Ok(out)
}

/// A linear map of `n` slots given by its non-zero diagonals: `diag_k[j] = M[j][(j + k) mod n]`,
/// with the baby-step giant-step plan of its offsets ([`BsgsPlan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LinearTransform {
    slots: usize,
    diagonals: BTreeMap<usize, Vec<Complex64>>,
    plan: BsgsPlan,
}

impl LinearTransform {
    /// The matrix of `slots` slots (a power of two) with these diagonals (offset `k < slots` to
    /// `slots` values); diagonals that are exactly zero are dropped. Errors: a slot count that
    /// is not a power of two or an offset out of range ([`Error::InvalidParameters`]), a
    /// diagonal of the wrong length ([`Error::DimensionMismatch`]), a non-finite value
    /// ([`Error::InvalidField`]), no non-zero diagonal ([`Error::InvalidParameters`]).
    pub fn new(slots: usize, diagonals: BTreeMap<usize, Vec<Complex64>>) -> Result<Self> {
        log2_exact("slot count", slots)?;
        let mut kept = BTreeMap::new();
        for (k, d) in diagonals {
            if k >= slots {
                return Err(Error::InvalidParameters { reason: format!("diagonal {k} of a {slots}-slot matrix") });
            }
            if d.len() != slots {
                return Err(Error::DimensionMismatch { what: "diagonal length", expected: slots, found: d.len() });
            }
            if d.iter().any(|z| !(z.re.is_finite() && z.im.is_finite())) {
                return Err(Error::InvalidField { field: "diagonal", reason: "values must be finite" });
            }
            if d.iter().any(|&z| z != ZERO) {
                kept.insert(k, d);
            }
        }
        if kept.is_empty() {
            return Err(Error::InvalidParameters { reason: "a linear transform without a non-zero diagonal".into() });
        }
        let plan = BsgsPlan::new(slots, kept.keys().copied())?;
        Ok(Self { slots, diagonals: kept, plan })
    }

    /// The matrix with these rows (a square matrix of a power-of-two size): its non-zero
    /// diagonals.
    pub fn from_dense(rows: &[Vec<Complex64>]) -> Result<Self> {
        let n = rows.len();
        log2_exact("slot count", n)?;
        let mut diags = BTreeMap::new();
        for (j, row) in rows.iter().enumerate() {
            if row.len() != n {
                return Err(Error::DimensionMismatch { what: "matrix row", expected: n, found: row.len() });
            }
            for (l, &v) in row.iter().enumerate() {
                if v != ZERO {
                    add_entry(&mut diags, n, j, l, v);
                }
            }
        }
        Self::new(n, diags)
    }

    /// The rows of the matrix.
    #[must_use]
    pub fn to_dense(&self) -> Vec<Vec<Complex64>> {
        let n = self.slots;
        let mut rows = vec![vec![ZERO; n]; n];
        for (&k, d) in &self.diagonals {
            for (j, &v) in d.iter().enumerate() {
                rows[j][(j + k) % n] += v;
            }
        }
        rows
    }

    /// The number of slots.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The non-zero diagonals by offset.
    #[must_use]
    pub fn diagonals(&self) -> &BTreeMap<usize, Vec<Complex64>> {
        &self.diagonals
    }

    /// The baby-step giant-step plan.
    #[must_use]
    pub fn bsgs(&self) -> &BsgsPlan {
        &self.plan
    }

    /// The rotation steps [`Ckks::linear_transform`] uses (in `1..slots`): generate keys for
    /// these.
    #[must_use]
    pub fn rotations(&self) -> Vec<i64> {
        self.plan.rotations()
    }

    /// `M z` in the clear. Errors: `z` of another length ([`Error::DimensionMismatch`]).
    pub fn apply(&self, z: &[Complex64]) -> Result<Vec<Complex64>> {
        let n = self.slots;
        if z.len() != n {
            return Err(Error::DimensionMismatch { what: "vector length", expected: n, found: z.len() });
        }
        let mut out = vec![ZERO; n];
        for (&k, d) in &self.diagonals {
            for (j, o) in out.iter_mut().enumerate() {
                *o += d[j] * z[(j + k) % n];
            }
        }
        Ok(out)
    }

    /// `next * self`: the transform applying `self`, then `next`. Errors: different slot counts
    /// ([`Error::DimensionMismatch`]).
    pub fn then(&self, next: &Self) -> Result<Self> {
        let n = self.slots;
        if next.slots != n {
            return Err(Error::DimensionMismatch { what: "transform slots", expected: n, found: next.slots });
        }
        let mut diags: BTreeMap<usize, Vec<Complex64>> = BTreeMap::new();
        // (N S)[j][j + a + b] += N_a[j] S_b[j + a].
        for (&a, na) in &next.diagonals {
            for (&b, sb) in &self.diagonals {
                let d = diags.entry((a + b) % n).or_insert_with(|| vec![ZERO; n]);
                for (j, o) in d.iter_mut().enumerate() {
                    *o += na[j] * sb[(j + a) % n];
                }
            }
        }
        Self::new(n, diags)
    }

    /// The transform times the scalar `c` (folded into every diagonal). Errors: `c` zero or not
    /// finite ([`Error::InvalidField`]).
    pub fn scaled(&self, c: Complex64) -> Result<Self> {
        if c == ZERO || !(c.re.is_finite() && c.im.is_finite()) {
            return Err(Error::InvalidField { field: "scalar", reason: "must be finite and non-zero" });
        }
        let diagonals = self.diagonals.iter().map(|(&k, d)| (k, d.iter().map(|&v| v * c).collect())).collect();
        Self::new(self.slots, diagonals)
    }
}

/// The baby-step giant-step split of a set of diagonal offsets: `n1` (a power of two), and for
/// each giant step `g` (a multiple of `n1`, taken mod `n`) the pairs `(b, k)` of baby step and
/// diagonal with `k = g + b mod n`, the split coming from the signed offset of `k` (in
/// `(-n/2, n/2]`) so that offsets just below zero need no long rotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BsgsPlan {
    slots: usize,
    n1: usize,
    giants: BTreeMap<usize, Vec<(usize, usize)>>,
}

impl BsgsPlan {
    /// The plan for `offsets` (each below `slots`, a power of two) with the fewest rotations
    /// (non-zero baby steps plus non-zero giant steps), ties going to fewer giant steps (baby
    /// steps share one ModUp). Errors: as [`LinearTransform::new`].
    pub fn new(slots: usize, offsets: impl IntoIterator<Item = usize>) -> Result<Self> {
        let log = log2_exact("slot count", slots)?;
        let offsets: BTreeSet<usize> = offsets.into_iter().collect();
        if let Some(&k) = offsets.iter().find(|&&k| k >= slots) {
            return Err(Error::InvalidParameters { reason: format!("diagonal {k} of a {slots}-slot matrix") });
        }
        let signed = |k: usize| -> i64 {
            let k = k as i64;
            if 2 * k > slots as i64 {
                k - slots as i64
            } else {
                k
            }
        };
        let split = |n1: usize| -> BTreeMap<usize, Vec<(usize, usize)>> {
            let mut giants: BTreeMap<usize, Vec<(usize, usize)>> = BTreeMap::new();
            for &k in &offsets {
                let s = signed(k);
                let b = s.rem_euclid(n1 as i64);
                let g = (s - b).rem_euclid(slots as i64) as usize;
                giants.entry(g).or_default().push((b as usize, k));
            }
            giants
        };
        let mut best: Option<((usize, usize), usize)> = None;
        for p in 0..=log {
            let n1 = 1usize << p;
            let plan = Self { slots, n1, giants: split(n1) };
            let cost = (plan.rotation_count(), plan.giant_steps().len());
            if best.is_none_or(|(c, _)| cost < c) {
                best = Some((cost, n1));
            }
        }
        let n1 = best.map_or(1, |(_, n1)| n1);
        Ok(Self { slots, n1, giants: split(n1) })
    }

    /// The baby-step range `n1`.
    #[must_use]
    pub fn n1(&self) -> usize {
        self.n1
    }

    /// Per giant step, the `(baby step, diagonal offset)` pairs it sums.
    #[must_use]
    pub fn giants(&self) -> &BTreeMap<usize, Vec<(usize, usize)>> {
        &self.giants
    }

    /// The non-zero baby steps (rotations of the input, hoisted).
    #[must_use]
    pub fn baby_steps(&self) -> Vec<usize> {
        let set: BTreeSet<usize> = self.giants.values().flatten().map(|&(b, _)| b).filter(|&b| b != 0).collect();
        set.into_iter().collect()
    }

    /// The non-zero giant steps (rotations of partial sums).
    #[must_use]
    pub fn giant_steps(&self) -> Vec<usize> {
        self.giants.keys().copied().filter(|&g| g != 0).collect()
    }

    /// Every rotation step used, sorted, without duplicates.
    #[must_use]
    pub fn rotations(&self) -> Vec<i64> {
        let set: BTreeSet<i64> =
            self.baby_steps().into_iter().chain(self.giant_steps()).map(|s| (s % self.slots) as i64).collect();
        set.into_iter().collect()
    }

    /// Rotations per application: one key switch each.
    #[must_use]
    pub fn rotation_count(&self) -> usize {
        self.baby_steps().len() + self.giant_steps().len()
    }

    /// ModUps per application with hoisted baby steps: one shared by the baby steps (if any),
    /// one per giant step.
    #[must_use]
    pub fn hoisted_mod_ups(&self) -> usize {
        usize::from(!self.baby_steps().is_empty()) + self.giant_steps().len()
    }

    /// Diagonals (plaintext products) per application.
    #[must_use]
    pub fn diagonal_count(&self) -> usize {
        self.giants.values().map(Vec::len).sum()
    }
}

/// What one homomorphic transform (a chain of grouped stages) costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransformCost {
    /// Levels consumed (one per group).
    pub levels: usize,
    /// Plaintext-ciphertext products (diagonals).
    pub diagonals: usize,
    /// Rotations, one key switch each.
    pub rotations: usize,
    /// ModUps with hoisted baby steps.
    pub mod_ups: usize,
}

impl TransformCost {
    fn of(plans: &[&BsgsPlan]) -> Self {
        Self {
            levels: plans.len(),
            diagonals: plans.iter().map(|p| p.diagonal_count()).sum(),
            rotations: plans.iter().map(|p| p.rotation_count()).sum(),
            mod_ups: plans.iter().map(|p| p.hoisted_mod_ups()).sum(),
        }
    }
}

/// The key-switching cost of CoeffToSlot and SlotToCoeff for one bootstrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BootCost {
    /// Rotations of the subring trace (sparse slots; 0 for full slots).
    pub trace_rotations: usize,
    /// CoeffToSlot's grouped stages.
    pub coeff_to_slot: TransformCost,
    /// SlotToCoeff's grouped stages.
    pub slot_to_coeff: TransformCost,
    /// Distinct rotation keys (trace and both transforms).
    pub rotation_keys: usize,
}

impl BootCost {
    /// Key switches of the trace, CoeffToSlot, the real/imaginary split (one conjugation) and
    /// SlotToCoeff of one ciphertext.
    #[must_use]
    pub fn key_switches(&self) -> usize {
        self.trace_rotations + self.coeff_to_slot.rotations + 1 + self.slot_to_coeff.rotations
    }

    /// The cost computed from the diagonal offsets alone (no matrix values: cheap at any size),
    /// equal to [`BootTransforms::cost`] of the same shape. Errors: as [`BootTransforms::new`].
    pub fn estimate(ring_degree: usize, slots: usize, cts_levels: usize, stc_levels: usize) -> Result<Self> {
        let gap = check_boot_shape(ring_degree, slots)?;
        let log = slots.trailing_zeros() as usize;
        // Offsets of stage s (h = 2^(s-1)): 0, h, -h.
        let stage = |s: usize| -> BTreeSet<usize> {
            let h = 1usize << (s - 1);
            [0, h % slots, (slots - h) % slots].into_iter().collect()
        };
        let merge = |order: &[usize], levels: usize| -> Result<Vec<BsgsPlan>> {
            let mut rest = order;
            let mut plans = Vec::with_capacity(levels);
            for size in group_sizes(order.len(), levels)? {
                let (group, tail) = rest.split_at(size);
                rest = tail;
                let mut acc: BTreeSet<usize> = [0].into_iter().collect();
                for &s in group {
                    let st = stage(s);
                    acc = acc.iter().flat_map(|&a| st.iter().map(move |&b| (a + b) % slots)).collect();
                }
                plans.push(BsgsPlan::new(slots, acc)?);
            }
            Ok(plans)
        };
        let stc_order: Vec<usize> = (1..=log).collect();
        let cts_order: Vec<usize> = (1..=log).rev().collect();
        let cts = merge(&cts_order, cts_levels)?;
        let stc = merge(&stc_order, stc_levels)?;
        let trace = trace_steps(ring_degree, slots, gap);
        Ok(Self::from_plans(&trace, &cts.iter().collect::<Vec<_>>(), &stc.iter().collect::<Vec<_>>()))
    }

    fn from_plans(trace: &[i64], cts: &[&BsgsPlan], stc: &[&BsgsPlan]) -> Self {
        let keys: BTreeSet<i64> =
            trace.iter().copied().chain(cts.iter().chain(stc).flat_map(|p| p.rotations())).collect();
        Self {
            trace_rotations: trace.len(),
            coeff_to_slot: TransformCost::of(cts),
            slot_to_coeff: TransformCost::of(stc),
            rotation_keys: keys.len(),
        }
    }
}

/// Checks a ring degree and a slot count for bootstrapping transforms; returns the gap.
fn check_boot_shape(ring_degree: usize, slots: usize) -> Result<usize> {
    log2_exact("ring degree", ring_degree)?;
    log2_exact("slot count", slots)?;
    if slots < 2 || 2 * slots > ring_degree {
        return Err(Error::InvalidParameters {
            reason: format!("{slots} slots for bootstrapping a ring of degree {ring_degree} (must be 2..=N/2)"),
        });
    }
    Ok(ring_degree / (2 * slots))
}

/// The rotations of the subring trace: `n 2^i` for `n 2^i < N/2`.
fn trace_steps(ring_degree: usize, slots: usize, gap: usize) -> Vec<i64> {
    (0..gap.trailing_zeros()).map(|i| (slots << i) as i64).take_while(|&s| 2 * (s as usize) < ring_degree).collect()
}

/// The rotation steps of the trace to the subring of `n` slots in a ring of degree `N`
/// ([`Ckks::subring_trace`]): `n, 2n, 4n, ..., N/4` (none for full slots). Errors: as
/// [`BootTransforms::new`].
pub fn trace_rotations(ring_degree: usize, slots: usize) -> Result<Vec<i64>> {
    let gap = check_boot_shape(ring_degree, slots)?;
    Ok(trace_steps(ring_degree, slots, gap))
}

/// The CoeffToSlot and SlotToCoeff transforms of bootstrapping for one slot count and level
/// budgets: grouped stages ([`group_stages`]), CoeffToSlot's first group scaled by the CtS
/// scalar over `gap` (the trace of sparse slots multiplies by `gap`).
#[derive(Debug, Clone, PartialEq)]
pub struct BootTransforms {
    ring_degree: usize,
    slots: usize,
    cts_scalar: f64,
    cts: Vec<LinearTransform>,
    stc: Vec<LinearTransform>,
}

impl BootTransforms {
    /// The transforms of `slots` slots (a power of two in `2..=N/2`) in a ring of degree
    /// `ring_degree`, CoeffToSlot in `cts_levels` levels and SlotToCoeff in `stc_levels` (each in
    /// `1..=log2 slots`), CoeffToSlot multiplied by `cts_scalar` (bootstrapping folds its
    /// normalisation there). CoeffToSlot maps slots `z` to `cts_scalar rev(E^{-1} z)` (after the
    /// trace for sparse slots), SlotToCoeff maps `rev(u)` to `E u`.
    ///
    /// Errors: a shape or budget out of range ([`Error::InvalidParameters`]), a scalar zero or
    /// not finite ([`Error::InvalidField`]).
    pub fn new(
        ring_degree: usize,
        slots: usize,
        cts_levels: usize,
        stc_levels: usize,
        cts_scalar: f64,
    ) -> Result<Self> {
        let gap = check_boot_shape(ring_degree, slots)?;
        let mut cts = group_stages(&coeff_to_slot_stages(slots)?, cts_levels)?;
        if let Some(first) = cts.first_mut() {
            *first = first.scaled(Complex64::new(cts_scalar / gap as f64, 0.0))?;
        }
        let stc = group_stages(&slot_to_coeff_stages(slots)?, stc_levels)?;
        Ok(Self { ring_degree, slots, cts_scalar, cts, stc })
    }

    /// The number of slots.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The ring degree `N`.
    #[must_use]
    pub fn ring_degree(&self) -> usize {
        self.ring_degree
    }

    /// The CoeffToSlot scalar (without the `1/gap` of the trace).
    #[must_use]
    pub fn cts_scalar(&self) -> f64 {
        self.cts_scalar
    }

    /// CoeffToSlot's grouped stages, in application order (one level each).
    #[must_use]
    pub fn coeff_to_slot(&self) -> &[LinearTransform] {
        &self.cts
    }

    /// SlotToCoeff's grouped stages, in application order (one level each).
    #[must_use]
    pub fn slot_to_coeff(&self) -> &[LinearTransform] {
        &self.stc
    }

    /// The rotations of the subring trace ([`trace_rotations`]).
    #[must_use]
    pub fn trace_rotations(&self) -> Vec<i64> {
        trace_steps(self.ring_degree, self.slots, self.ring_degree / (2 * self.slots))
    }

    /// Every rotation step the trace, CoeffToSlot and SlotToCoeff use, sorted, without
    /// duplicates; the real/imaginary split also needs the conjugation key.
    #[must_use]
    pub fn rotations(&self) -> Vec<i64> {
        let set: BTreeSet<i64> = self
            .trace_rotations()
            .into_iter()
            .chain(self.cts.iter().chain(&self.stc).flat_map(LinearTransform::rotations))
            .collect();
        set.into_iter().collect()
    }

    /// Rotations, ModUps and products of one CoeffToSlot and one SlotToCoeff.
    #[must_use]
    pub fn cost(&self) -> BootCost {
        let cts: Vec<&BsgsPlan> = self.cts.iter().map(LinearTransform::bsgs).collect();
        let stc: Vec<&BsgsPlan> = self.stc.iter().map(LinearTransform::bsgs).collect();
        BootCost::from_plans(&self.trace_rotations(), &cts, &stc)
    }
}

/// A [`LinearTransform`] with its diagonals encoded and lifted for ciphertexts at one level
/// ([`Ckks::prepare_transform`]), each pre-rotated by its giant step. Its `Debug` output does not
/// show the residues.
pub struct PreparedTransform<B: Backend> {
    slots: usize,
    level: usize,
    plan: BsgsPlan,
    diagonals: BTreeMap<usize, RnsPoly<B, Eval>>,
    param_id: u64,
}

impl<B: Backend> std::fmt::Debug for PreparedTransform<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedTransform")
            .field("slots", &self.slots)
            .field("level", &self.level)
            .field("plan", &self.plan)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> PreparedTransform<B> {
    /// The level of the ciphertexts it applies to.
    #[must_use]
    pub fn level(&self) -> usize {
        self.level
    }

    /// The baby-step giant-step plan.
    #[must_use]
    pub fn bsgs(&self) -> &BsgsPlan {
        &self.plan
    }

    /// Bytes of the lifted diagonals on the backend (4 a word).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.diagonals.values().map(|p| 4 * backend.len(p.buffer()) as u64).sum()
    }
}

/// Where [`Ckks::linear_transform`]'s diagonals come from.
#[derive(Clone, Copy)]
enum Diagonals<'a, B: Backend> {
    /// Encoded and lifted at each use.
    Clear(&'a LinearTransform),
    /// Lifted once.
    Prepared(&'a PreparedTransform<B>),
}

/// [`BootTransforms`] with every group's diagonals prepared at the level it runs at
/// ([`Ckks::prepare_boot`]).
#[derive(Debug)]
pub struct PreparedBoot<B: Backend> {
    ring_degree: usize,
    slots: usize,
    cts: Vec<PreparedTransform<B>>,
    stc: Vec<PreparedTransform<B>>,
}

impl<B: Backend> PreparedBoot<B> {
    /// The level CoeffToSlot's input must be at.
    #[must_use]
    pub fn cts_level(&self) -> Option<usize> {
        self.cts.first().map(PreparedTransform::level)
    }

    /// The level SlotToCoeff's input must be at.
    #[must_use]
    pub fn stc_level(&self) -> Option<usize> {
        self.stc.first().map(PreparedTransform::level)
    }

    /// Bytes of every lifted diagonal on the backend.
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.cts.iter().chain(&self.stc).map(|p| p.resident_bytes(backend)).sum()
    }
}

/// How [`Ckks::linear_transform_with`] rotates the input by the baby steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BabySteps {
    /// One full rotation (ModUp included) per baby step.
    Plain,
    /// One ModUp shared by every baby step ([`Ckks::rotate_hoisted`]).
    Hoisted,
}

impl<B: Backend> Ckks<B> {
    /// Rotations of `ct` left by each of `steps`, sharing one ModUp of `c_1`
    /// ([`crate::rlwe::decompose`]): each result has the words of [`Ckks::rotate`]'s (see
    /// [`crate::rlwe::apply_galois_hoisted`]). Errors: as [`Ckks::rotate`].
    pub fn rotate_hoisted(
        &self,
        ct: &Ciphertext<B>,
        steps: &[i64],
        keys: &EvaluationKeys<B>,
    ) -> Result<Vec<Ciphertext<B>>> {
        self.check_ct(ct)?;
        let be = self.backend();
        let (c0, c1) = ct.core.degree_one()?;
        let decomposed =
            if steps.iter().any(|&s| self.rotation_element(s) != 1) { Some(rlwe::decompose(be, c1)?) } else { None };
        let mut out = Vec::with_capacity(steps.len());
        for &s in steps {
            let g = self.rotation_element(s);
            let core = match (&decomposed, g) {
                (Some(d), g) if g != 1 => {
                    let (d0, d1) = rlwe::apply_galois_hoisted(be, c0, d, g, keys, &format!("rotation by {s}"), None)?;
                    ct.core.with_polys(vec![d0, d1])?
                }
                _ => ct.core.duplicate(be)?,
            };
            out.push(ct.with(core, ct.scale));
        }
        be.flush()?;
        Ok(out)
    }

    /// `M` applied to the slots of `ct` (baby steps hoisted): one level consumed, the scale kept.
    /// Keys are needed for [`LinearTransform::rotations`].
    ///
    /// Errors: a transform of another slot count ([`Error::DimensionMismatch`]), a degree-2
    /// ciphertext ([`Error::CiphertextDegree`]), no level left ([`Error::DepthExhausted`]), a
    /// missing rotation key ([`Error::MissingGaloisKey`]), a diagonal too large to encode
    /// ([`Error::EncodingOverflow`]).
    pub fn linear_transform(
        &self,
        ct: &Ciphertext<B>,
        lt: &LinearTransform,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.linear_transform_with(ct, lt, keys, BabySteps::Hoisted)
    }

    /// [`Ckks::linear_transform`] with the baby steps rotated as `baby`.
    pub fn linear_transform_with(
        &self,
        ct: &Ciphertext<B>,
        lt: &LinearTransform,
        keys: &EvaluationKeys<B>,
        baby: BabySteps,
    ) -> Result<Ciphertext<B>> {
        self.bsgs_apply(ct, Diagonals::Clear(lt), keys, baby)
    }

    /// Encodes and lifts the diagonals of `lt` (each pre-rotated by its giant step) once, at the
    /// scale of the next rescale from `level`, for ciphertexts at `level`: what
    /// [`Ckks::linear_transform`] does at every call. Errors: [`Error::LevelOutOfRange`],
    /// [`Error::DepthExhausted`] at a level that cannot be rescaled, [`Error::EncodingOverflow`].
    pub fn prepare_transform(&self, lt: &LinearTransform, level: usize) -> Result<PreparedTransform<B>> {
        let pt_scale = self.next_rescale_divisor(level)?;
        let mut diagonals = BTreeMap::new();
        for (&giant, terms) in lt.plan.giants() {
            for &(_, k) in terms {
                diagonals.insert(k, self.lift_diagonal(lt, k, giant, pt_scale, level)?);
            }
        }
        Ok(PreparedTransform { slots: lt.slots, level, plan: lt.plan.clone(), diagonals, param_id: self.params().id() })
    }

    /// [`Ckks::linear_transform_with`] with prepared diagonals: the same words. Errors: those
    /// of [`Ckks::linear_transform`], and [`Error::LevelMismatch`] unless `ct` is at the
    /// prepared level, [`Error::ParameterMismatch`] for a transform of other parameters.
    pub fn linear_transform_prepared(
        &self,
        ct: &Ciphertext<B>,
        prepared: &PreparedTransform<B>,
        keys: &EvaluationKeys<B>,
        baby: BabySteps,
    ) -> Result<Ciphertext<B>> {
        if prepared.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: prepared.param_id });
        }
        if prepared.level != ct.level() {
            return Err(Error::LevelMismatch { left: ct.level(), right: prepared.level });
        }
        self.bsgs_apply(ct, Diagonals::Prepared(prepared), keys, baby)
    }

    /// `rot_{-giant}(diag_k)` of `lt` encoded at `pt_scale` for `level` and lifted.
    fn lift_diagonal(
        &self,
        lt: &LinearTransform,
        k: usize,
        giant: usize,
        pt_scale: f64,
        level: usize,
    ) -> Result<RnsPoly<B, Eval>> {
        let n = lt.slots;
        let diag =
            lt.diagonals.get(&k).ok_or(Error::InvalidParameters { reason: "a diagonal outside the plan".into() })?;
        // rot_{-giant}(diag_k)[j] = diag_k[j - giant].
        let values: Vec<Complex64> = (0..n).map(|j| diag[(j + n - giant) % n]).collect();
        self.lift(&self.encode(&values, pt_scale, n, level)?, level)
    }

    /// The baby-step giant-step evaluation shared by the clear and prepared transforms.
    fn bsgs_apply(
        &self,
        ct: &Ciphertext<B>,
        diagonals: Diagonals<'_, B>,
        keys: &EvaluationKeys<B>,
        baby: BabySteps,
    ) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        if ct.degree() != 1 {
            return Err(Error::CiphertextDegree { degree: ct.degree(), expected: 1 });
        }
        let n = ct.slots;
        let (slots, plan) = match diagonals {
            Diagonals::Clear(lt) => (lt.slots, &lt.plan),
            Diagonals::Prepared(p) => (p.slots, &p.plan),
        };
        if slots != n {
            return Err(Error::DimensionMismatch { what: "linear transform slots", expected: n, found: slots });
        }
        let be = self.backend();
        let level = ct.level();
        let pt_scale = self.next_rescale_divisor(level)?;
        let scale = self.checked_scale(ct.scale * pt_scale, level)?;
        let steps: Vec<i64> = plan.baby_steps().into_iter().map(|b| b as i64).collect();
        let rotated = match baby {
            BabySteps::Hoisted => self.rotate_hoisted(ct, &steps, keys)?,
            BabySteps::Plain => steps.iter().map(|&s| self.rotate(ct, s, keys)).collect::<Result<_>>()?,
        };
        let source = |b: usize| -> Result<&Ciphertext<B>> {
            if b == 0 {
                return Ok(ct);
            }
            steps
                .iter()
                .position(|&s| s == b as i64)
                .and_then(|i| rotated.get(i))
                .ok_or(Error::InvalidParameters { reason: "a baby step outside the plan".into() })
        };
        let basis = ct.core.degree_one()?.0.basis().clone();
        let mut acc: Option<Ciphertext<B>> = None;
        for (&giant, terms) in plan.giants() {
            let mut c0 = RnsPoly::zero(be, basis.clone())?;
            let mut c1 = RnsPoly::zero(be, basis.clone())?;
            for &(b, k) in terms {
                let lifted;
                let m = match diagonals {
                    Diagonals::Clear(lt) => {
                        lifted = self.lift_diagonal(lt, k, giant, pt_scale, level)?;
                        &lifted
                    }
                    Diagonals::Prepared(p) => p
                        .diagonals
                        .get(&k)
                        .ok_or(Error::InvalidParameters { reason: "a diagonal outside the plan".into() })?,
                };
                let (s0, s1) = source(b)?.core.degree_one()?;
                c0.mul_add_assign(be, s0, m)?;
                c1.mul_add_assign(be, s1, m)?;
            }
            let mut part = ct.with(ct.core.with_polys(vec![c0, c1])?, scale);
            if giant != 0 {
                part = self.rotate(&part, giant as i64, keys)?;
            }
            acc = Some(match acc {
                None => part,
                Some(a) => self.add(&a, &part)?,
            });
        }
        let acc = acc.ok_or(Error::InvalidParameters { reason: "a linear transform without diagonals".into() })?;
        let mut out = self.rescale(&acc)?;
        out.scale = ct.scale;
        Ok(out)
    }

    /// The trace to the subring of `Y = X^gap` for `ct`'s slot count `n` (`gap = N/(2n)`): the
    /// sum of the `gap` automorphisms `X -> X^(5^(n t))`, `t < gap`, by `log2 gap` rotations and
    /// additions ([`trace_rotations`]). Coefficients at multiples of `gap` are multiplied by
    /// `gap`, the others become zero (plus noise); the slots are multiplied by `gap`. No level
    /// is consumed. The identity for full slots.
    pub fn subring_trace(&self, ct: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let n = self.params().n();
        let mut acc = ct.duplicate(self.backend())?;
        if 2 * ct.slots < n {
            for s in trace_rotations(n, ct.slots)? {
                acc = self.add(&acc, &self.rotate(&acc, s, keys)?)?;
            }
        }
        Ok(acc)
    }

    /// CoeffToSlot: the subring trace for sparse slots, then CoeffToSlot's grouped stages (one
    /// level each). For a ciphertext of plaintext `c` at scale `Delta`, slot `j` of the result
    /// holds `cts_scalar u_{rev(j)}`, `u_k = (c[gap k] + i c[gap k + N/2]) / Delta`. Keys: the
    /// plan's [`BootTransforms::rotations`]. Errors: a plan for another ring or slot count
    /// ([`Error::DimensionMismatch`]), and those of [`Ckks::linear_transform`].
    pub fn coeff_to_slot(
        &self,
        ct: &Ciphertext<B>,
        plan: &BootTransforms,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_plan(ct, plan)?;
        let mut x = self.subring_trace(ct, keys)?;
        for lt in &plan.cts {
            x = self.linear_transform(&x, lt, keys)?;
        }
        Ok(x)
    }

    /// SlotToCoeff: SlotToCoeff's grouped stages (one level each). Slots holding `rev(u)` become
    /// `E u`: the plaintext's grid coefficients are `u` (real parts at `gap k`, imaginary
    /// parts at `gap k + N/2`). Errors: as [`Ckks::coeff_to_slot`].
    pub fn slot_to_coeff(
        &self,
        ct: &Ciphertext<B>,
        plan: &BootTransforms,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_plan(ct, plan)?;
        let mut x = ct.duplicate(self.backend())?;
        for lt in &plan.stc {
            x = self.linear_transform(&x, lt, keys)?;
        }
        Ok(x)
    }

    /// The diagonals of `plan` prepared for CoeffToSlot's input at `cts_level` and
    /// SlotToCoeff's at `stc_level` (each group one level below the previous one).
    pub fn prepare_boot(&self, plan: &BootTransforms, cts_level: usize, stc_level: usize) -> Result<PreparedBoot<B>> {
        let k = self.policy.primes_per_level();
        let chain = |transforms: &[LinearTransform], top: usize| -> Result<Vec<PreparedTransform<B>>> {
            transforms
                .iter()
                .enumerate()
                .map(|(i, lt)| {
                    let level = top.checked_sub(i * k).ok_or(Error::DepthExhausted { level: top, wanted: i * k })?;
                    self.prepare_transform(lt, level)
                })
                .collect()
        };
        Ok(PreparedBoot {
            ring_degree: plan.ring_degree,
            slots: plan.slots,
            cts: chain(&plan.cts, cts_level)?,
            stc: chain(&plan.stc, stc_level)?,
        })
    }

    /// [`Ckks::coeff_to_slot`] with prepared diagonals (the same words); `ct` must be at the
    /// prepared CoeffToSlot level ([`Error::LevelMismatch`]).
    pub fn coeff_to_slot_prepared(
        &self,
        ct: &Ciphertext<B>,
        prepared: &PreparedBoot<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_shape(ct, prepared.ring_degree, prepared.slots)?;
        let mut x = self.subring_trace(ct, keys)?;
        for p in &prepared.cts {
            x = self.linear_transform_prepared(&x, p, keys, BabySteps::Hoisted)?;
        }
        Ok(x)
    }

    /// [`Ckks::slot_to_coeff`] with prepared diagonals (the same words); `ct` must be at the
    /// prepared SlotToCoeff level ([`Error::LevelMismatch`]).
    pub fn slot_to_coeff_prepared(
        &self,
        ct: &Ciphertext<B>,
        prepared: &PreparedBoot<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_shape(ct, prepared.ring_degree, prepared.slots)?;
        let mut x = ct.duplicate(self.backend())?;
        for p in &prepared.stc {
            x = self.linear_transform_prepared(&x, p, keys, BabySteps::Hoisted)?;
        }
        Ok(x)
    }

    /// The rotation and conjugation keys of one CoeffToSlot (input at `cts_level`), the
    /// real/imaginary split of its output, and one SlotToCoeff (input at `stc_level`), each at
    /// the highest level it is used at (for [`crate::rlwe::gen_planned_keys`]; merge with the
    /// plan of the rest of bootstrapping by [`KeyPlan::merge`]). No relinearisation key.
    /// Errors: [`Error::DepthExhausted`] for a budget deeper than the levels given.
    pub fn boot_key_plan(&self, plan: &BootTransforms, cts_level: usize, stc_level: usize) -> Result<KeyPlan> {
        let k = self.policy.primes_per_level();
        let mut key_plan = KeyPlan::default();
        let put = |steps: &[i64], level: usize, out: &mut KeyPlan| {
            for &s in steps {
                let g = self.rotation_element(s);
                let l = out.galois.entry(g).or_insert(level);
                *l = (*l).max(level);
            }
        };
        put(&plan.trace_rotations(), cts_level, &mut key_plan);
        for (transforms, top) in [(&plan.cts, cts_level), (&plan.stc, stc_level)] {
            for (i, lt) in transforms.iter().enumerate() {
                let level = top.checked_sub(i * k).ok_or(Error::DepthExhausted { level: top, wanted: i * k })?;
                put(&lt.rotations(), level, &mut key_plan);
            }
        }
        let after_cts = cts_level
            .checked_sub(plan.cts.len() * k)
            .ok_or(Error::DepthExhausted { level: cts_level, wanted: plan.cts.len() * k })?;
        let conj = key_plan.galois.entry(self.conjugation_element()).or_insert(after_cts);
        *conj = (*conj).max(after_cts);
        Ok(key_plan)
    }

    fn check_plan(&self, ct: &Ciphertext<B>, plan: &BootTransforms) -> Result<()> {
        self.check_shape(ct, plan.ring_degree, plan.slots)
    }

    fn check_shape(&self, ct: &Ciphertext<B>, ring_degree: usize, slots: usize) -> Result<()> {
        let n = self.params().n();
        if ring_degree != n {
            return Err(Error::DimensionMismatch { what: "transform ring degree", expected: n, found: ring_degree });
        }
        if slots != ct.slots {
            return Err(Error::DimensionMismatch { what: "transform slots", expected: ct.slots, found: slots });
        }
        Ok(())
    }

    /// `ct` times `i` (`sign = 1`) or `-i` (`sign = -1`) in every slot: a product with the
    /// monomial `±X^(N/2)` (exact, no level, same scale), since `zeta^(g N/2) = i` for every
    /// slot's `g = 1 mod 4`.
    pub fn mul_by_i(&self, ct: &Ciphertext<B>, sign: i8) -> Result<Ciphertext<B>> {
        let n = self.params().n();
        let mut coeffs = vec![0i128; n];
        let c = coeffs.get_mut(n / 2).ok_or(Error::InvalidParameters { reason: "ring degree below 2".into() })?;
        *c = if sign < 0 { -1 } else { 1 };
        let pt = Plaintext { coeffs, scale: 1.0, slots: ct.slots, level: ct.level(), param_id: self.params().id() };
        self.mul_plain(ct, &pt)
    }

    /// The real and imaginary parts of the slots, doubled: `(w + conj w, -i (w - conj w))` =
    /// `(2 Re w, 2 Im w)`, with one conjugation (key: [`Ckks::conjugation_element`]) and no
    /// level (fold the `1/2` into the CoeffToSlot scalar).
    pub fn split_real_imag(
        &self,
        ct: &Ciphertext<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<(Ciphertext<B>, Ciphertext<B>)> {
        let conj = self.conjugate(ct, keys)?;
        let re = self.add(ct, &conj)?;
        let im = self.mul_by_i(&self.sub(ct, &conj)?, -1)?;
        Ok((re, im))
    }

    /// `re + i im` (no level): joins what [`Ckks::split_real_imag`] separated. Errors: operands
    /// at different levels or scales.
    pub fn combine_real_imag(&self, re: &Ciphertext<B>, im: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.add(re, &self.mul_by_i(im, 1)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CpuBackend;
    use crate::ckks::{Encoder, ScalePolicy};
    use crate::params::{self, TestRing};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_vec(rng: &mut ChaCha8Rng, n: usize) -> Vec<Complex64> {
        (0..n).map(|_| Complex64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0))).collect()
    }

    fn max_err(a: &[Complex64], b: &[Complex64]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
    }

    fn apply_all(stages: &[LinearTransform], v: &[Complex64]) -> Vec<Complex64> {
        stages.iter().fold(v.to_vec(), |x, s| s.apply(&x).unwrap())
    }

    #[test]
    fn stages_factor_the_special_dft_for_every_budget() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for log in 1..=7u32 {
            let n = 1usize << log;
            let stc = slot_to_coeff_stages(n).unwrap();
            let cts = coeff_to_slot_stages(n).unwrap();
            assert_eq!((stc.len(), cts.len()), (log as usize, log as usize));
            for s in &stc {
                assert!(s.diagonals().len() <= 3, "a stage with {} diagonals", s.diagonals().len());
            }
            for levels in 1..=log as usize {
                let stc_g = group_stages(&stc, levels).unwrap();
                let cts_g = group_stages(&cts, levels).unwrap();
                assert_eq!(stc_g.len(), levels);
                for _ in 0..3 {
                    let u = random_vec(&mut rng, n);
                    // E u = T rev(u).
                    let want = special_dft(&u).unwrap();
                    let got = apply_all(&stc_g, &bit_reverse(&u).unwrap());
                    assert!(max_err(&want, &got) < 1e-12 * n as f64, "n {n} levels {levels}");
                    // E^{-1} z = rev(T^{-1} z).
                    let z = random_vec(&mut rng, n);
                    let want = special_dft_inverse(&z).unwrap();
                    let got = bit_reverse(&apply_all(&cts_g, &z)).unwrap();
                    assert!(max_err(&want, &got) < 1e-12 * n as f64, "inverse, n {n} levels {levels}");
                }
                // Each group of s stages has at most 2^(s+1) - 1 diagonals.
                for (g, size) in stc_g.iter().zip(group_sizes(log as usize, levels).unwrap()) {
                    assert!(g.diagonals().len() < 1 << (size + 1));
                }
            }
        }
    }

    #[test]
    fn special_dft_is_the_encoders_convention() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let log_n = 7;
        let enc = Encoder::new(log_n).unwrap();
        let big_n = 1usize << log_n;
        for slots in [1usize, 2, 8, 64] {
            let gap = big_n / (2 * slots);
            let c: Vec<f64> = (0..big_n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let u: Vec<Complex64> = (0..slots).map(|k| Complex64::new(c[gap * k], c[gap * k + big_n / 2])).collect();
            let z = enc.decode(&c, 1.0, slots).unwrap();
            assert!(max_err(&special_dft(&u).unwrap(), &z) < 1e-12, "decode, {slots} slots");
            assert!(max_err(&special_dft_inverse(&z).unwrap(), &u) < 1e-12, "inverse, {slots} slots");
            if slots >= 2 {
                let t = group_stages(&slot_to_coeff_stages(slots).unwrap(), 1).unwrap();
                assert!(max_err(&apply_all(&t, &bit_reverse(&u).unwrap()), &z) < 1e-12);
            }
            // Encoding E u at scale 2^40 gives back u on the grid (and 0 off it).
            let scale = 2f64.powi(40);
            let coeffs = enc.encode(&z, scale, slots).unwrap();
            for (k, uk) in u.iter().enumerate() {
                let got = Complex64::new(coeffs[gap * k] as f64, coeffs[gap * k + big_n / 2] as f64) / scale;
                assert!((got - uk).norm() < 1e-9);
            }
        }
    }

    #[test]
    fn dense_round_trip_composition_and_scaling() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 16;
        let rows: Vec<Vec<Complex64>> = (0..n).map(|_| random_vec(&mut rng, n)).collect();
        let a = LinearTransform::from_dense(&rows).unwrap();
        assert_eq!(a.to_dense(), rows);
        let b = LinearTransform::from_dense(&(0..n).map(|_| random_vec(&mut rng, n)).collect::<Vec<_>>()).unwrap();
        let z = random_vec(&mut rng, n);
        let ab = a.then(&b).unwrap();
        assert!(max_err(&ab.apply(&z).unwrap(), &b.apply(&a.apply(&z).unwrap()).unwrap()) < 1e-12);
        let c = Complex64::new(0.5, -2.0);
        let want: Vec<Complex64> = a.apply(&z).unwrap().iter().map(|x| x * c).collect();
        assert!(max_err(&a.scaled(c).unwrap().apply(&z).unwrap(), &want) < 1e-12);
        assert!(matches!(
            LinearTransform::new(16, BTreeMap::from([(16, vec![ONE; 16])])),
            Err(Error::InvalidParameters { .. })
        ));
        assert!(matches!(
            LinearTransform::new(16, BTreeMap::from([(1, vec![ONE; 15])])),
            Err(Error::DimensionMismatch { .. })
        ));
        assert!(matches!(
            LinearTransform::new(12, BTreeMap::from([(1, vec![ONE; 12])])),
            Err(Error::InvalidParameters { .. })
        ));
        assert!(matches!(
            LinearTransform::new(16, BTreeMap::from([(1, vec![ZERO; 16])])),
            Err(Error::InvalidParameters { .. })
        ));
        assert!(matches!(group_stages(&slot_to_coeff_stages(8).unwrap(), 4), Err(Error::InvalidParameters { .. })));
        assert!(matches!(BootTransforms::new(1024, 1024, 2, 2, 1.0), Err(Error::InvalidParameters { .. })));
    }

    #[test]
    fn bsgs_plan_covers_every_diagonal_once() {
        for (n, offsets) in [
            (64usize, (0..64).collect::<Vec<_>>()),
            (64, vec![0, 1, 2, 3, 61, 62, 63]),
            (256, vec![0, 16, 32, 48, 208, 224, 240]),
            (8, vec![5]),
        ] {
            let plan = BsgsPlan::new(n, offsets.iter().copied()).unwrap();
            let n1 = plan.n1();
            let mut seen = Vec::new();
            for (&g, terms) in plan.giants() {
                for &(b, k) in terms {
                    assert_eq!((g + b) % n, k);
                    assert!(b < n1);
                    seen.push(k);
                }
            }
            seen.sort_unstable();
            assert_eq!(seen, offsets);
        }
        // Offsets -3..=3 need 2 baby and 2 giant steps (n1 = 2 or 4), not 6 rotations.
        let plan = BsgsPlan::new(64, [0, 1, 2, 3, 61, 62, 63]).unwrap();
        assert_eq!(plan.rotation_count(), 4);
    }

    #[test]
    fn estimated_cost_is_the_planned_cost() {
        for (big_n, slots) in [(64usize, 32usize), (64, 8), (256, 128), (256, 16)] {
            let log = slots.trailing_zeros() as usize;
            for cts in 1..=log {
                for stc in [1, log] {
                    let plan = BootTransforms::new(big_n, slots, cts, stc, 1.0).unwrap();
                    assert_eq!(
                        plan.cost(),
                        BootCost::estimate(big_n, slots, cts, stc).unwrap(),
                        "{big_n} {slots} {cts}"
                    );
                    assert_eq!(plan.cost().rotation_keys, plan.rotations().len());
                }
            }
        }
    }

    /// Rotations and key switches of CoeffToSlot and SlotToCoeff for N = 2^16, n = 2^9..2^15 at
    /// 2, 3 and 4 levels (run with `--nocapture` to read the table).
    #[test]
    fn print_boot_costs() {
        let big_n = 1usize << 16;
        println!("slots levels | trace | CtS diag rot modup | StC diag rot modup | key switches | rotation keys");
        for log_slots in 9..=15 {
            for levels in [2, 3, 4] {
                let c = BootCost::estimate(big_n, 1 << log_slots, levels, levels).unwrap();
                println!(
                    "2^{log_slots} {levels} | {} | {} {} {} | {} {} {} | {} | {}",
                    c.trace_rotations,
                    c.coeff_to_slot.diagonals,
                    c.coeff_to_slot.rotations,
                    c.coeff_to_slot.mod_ups,
                    c.slot_to_coeff.diagonals,
                    c.slot_to_coeff.rotations,
                    c.slot_to_coeff.mod_ups,
                    c.key_switches(),
                    c.rotation_keys
                );
                assert_eq!(c.coeff_to_slot.levels, levels);
            }
        }
    }

    // ---- homomorphic ---------------------------------------------------------------------------

    struct Fixture {
        ckks: Ckks<CpuBackend>,
        sk: crate::rlwe::SecretKey<CpuBackend>,
    }

    /// N = 2^10, double scaling (scale ~2^60), 15 chain primes: 6 levels.
    fn fixture() -> Fixture {
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 15, p_primes: 3, dnum: 5 }, 30).unwrap();
        let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
        let sk = ckks.gen_secret_key_from_seed(&[7; 32]).unwrap();
        Fixture { ckks, sk }
    }

    /// Key-switching and rescaling noise (a few tens of bits in coefficients at N = 2^10) over the
    /// scale ~2^60, and the f64 rounding of the encoder and of the merged diagonals, leave errors
    /// near 2^-48 here (measured: 2e-15 to 6e-15). 2^-40 is a margin of about 2^8 over that, and
    /// catches any wrong diagonal, rotation or scale (errors of order 1).
    const BOUND: f64 = 1.0 / (1u64 << 40) as f64;

    #[test]
    fn linear_transform_matches_the_plaintext_product() {
        let f = fixture();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for slots in [512usize, 64] {
            let mut diags = BTreeMap::new();
            for k in [0usize, 1, 2, 5, 17, slots - 1, slots - 3, slots / 2] {
                diags.insert(k, random_vec(&mut rng, slots));
            }
            let lt = LinearTransform::new(slots, diags).unwrap().scaled(Complex64::new(0.25, 0.0)).unwrap();
            let keys = f.ckks.gen_evaluation_keys(&f.sk, &lt.rotations(), false).unwrap();
            assert_eq!(keys.galois.len(), lt.rotations().len());
            let z = random_vec(&mut rng, slots);
            let pt = f.ckks.encode(&z, f.ckks.default_scale(), slots, f.ckks.max_level()).unwrap();
            let ct = f.ckks.encrypt_symmetric(&f.sk, &pt).unwrap();
            let want = lt.apply(&z).unwrap();
            let mut words = Vec::new();
            for baby in [BabySteps::Plain, BabySteps::Hoisted] {
                let out = f.ckks.linear_transform_with(&ct, &lt, &keys, baby).unwrap();
                words.push(out.polys().iter().map(|p| p.to_host(f.ckks.backend()).unwrap()).collect::<Vec<_>>());
                assert_eq!(out.level(), ct.level() - 2);
                assert_eq!(out.scale(), ct.scale());
                let got = f.ckks.decrypt(&f.sk, &out).unwrap();
                let err = max_err(&want, &got);
                assert!(err < BOUND, "{slots} slots, {baby:?}: error {err:e}");
            }
            assert!(words[0] == words[1], "hoisted baby steps changed the words");
        }
    }

    #[test]
    fn hoisted_rotations_are_the_plain_rotations_word_for_word() {
        let f = fixture();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let slots = 512;
        let steps = [1i64, 2, 3, 7, 100, -1, 0];
        let keys = f.ckks.gen_evaluation_keys(&f.sk, &steps, false).unwrap();
        let z = random_vec(&mut rng, slots);
        let be = f.ckks.backend();
        for level in [f.ckks.max_level(), 8, 3] {
            let ct = f
                .ckks
                .encrypt_symmetric(&f.sk, &f.ckks.encode(&z, f.ckks.default_scale(), slots, level).unwrap())
                .unwrap();
            let hoisted = f.ckks.rotate_hoisted(&ct, &steps, &keys).unwrap();
            for (&s, h) in steps.iter().zip(&hoisted) {
                let plain = f.ckks.rotate(&ct, s, &keys).unwrap();
                assert_eq!((h.level(), h.scale()), (plain.level(), plain.scale()));
                for (a, b) in h.polys().iter().zip(plain.polys()) {
                    assert!(a.to_host(be).unwrap() == b.to_host(be).unwrap(), "step {s} at level {level}");
                }
                let want: Vec<Complex64> =
                    (0..slots).map(|j| z[(j as i64 + s).rem_euclid(slots as i64) as usize]).collect();
                assert!(max_err(&f.ckks.decrypt(&f.sk, h).unwrap(), &want) < BOUND, "step {s}");
            }
        }
        assert!(matches!(
            f.ckks.rotate_hoisted(
                &f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode_real(&[1.0]).unwrap()).unwrap(),
                &[5],
                &keys
            ),
            Err(Error::MissingGaloisKey { .. })
        ));
    }

    /// `r` hoisted rotations at level `l` make one ModUp (`l + 1` inverse and `sum_j (l + 1 + k -
    /// alpha_j)` forward limb-NTTs) and `r` ModDowns (`2k + 2(l + 1)` each): against `r` full key
    /// switches, `(r - 1)` ModUps fewer (counted through the ledger).
    #[test]
    fn hoisted_rotations_share_one_mod_up() {
        use crate::backend::ledger::Ledger;
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 15, p_primes: 3, dnum: 5 }, 30).unwrap();
        let ckks =
            Ckks::new(Ledger::new(CpuBackend::new(crate::ring::RingContext::new(&p).unwrap())), ScalePolicy::Double)
                .unwrap();
        let sk = ckks.gen_secret_key_from_seed(&[9; 32]).unwrap();
        let steps = [1i64, 2, 3, 5];
        let keys = ckks.gen_evaluation_keys(&sk, &steps, false).unwrap();
        let ntts = |records: Vec<crate::backend::ledger::Record>| -> usize {
            records
                .iter()
                .filter(|r| r.kernel == "ntt_forward" || r.kernel == "ntt_inverse")
                .map(|r| r.limbs as usize)
                .sum()
        };
        for level in [14usize, 9, 4] {
            let ct =
                ckks.encrypt_symmetric(&sk, &ckks.encode(&[ONE], ckks.default_scale(), 8, level).unwrap()).unwrap();
            let (l1, k) = (level + 1, p.p().len());
            let modup: usize = (0..p.dnum())
                .map(|j| p.digit_range(j).filter(|&i| i <= level).count())
                .filter(|&alpha| alpha > 0)
                .map(|alpha| l1 + k - alpha)
                .sum();
            let moddown = 2 * k + 2 * l1;
            ckks.backend().take();
            ckks.rotate_hoisted(&ct, &steps, &keys).unwrap();
            assert_eq!(ntts(ckks.backend().take()), l1 + modup + steps.len() * moddown, "level {level}");
            for &s in &steps {
                ckks.rotate(&ct, s, &keys).unwrap();
            }
            assert_eq!(ntts(ckks.backend().take()), steps.len() * (l1 + modup + moddown), "level {level}");
        }
    }

    fn boot_keys(f: &Fixture, plan: &BootTransforms) -> EvaluationKeys<CpuBackend> {
        let rot = plan.rotations();
        let keys = f.ckks.gen_evaluation_keys(&f.sk, &rot, true).unwrap();
        // Only the planned rotations (and the conjugation) have keys.
        assert_eq!(keys.galois.len(), rot.len() + 1);
        keys
    }

    #[test]
    fn coeff_to_slot_then_slot_to_coeff_is_the_identity() {
        let f = fixture();
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        for (slots, cts, stc) in [(512usize, 3usize, 2usize), (64, 2, 3), (128, 1, 1)] {
            let plan = BootTransforms::new(1024, slots, cts, stc, 1.0).unwrap();
            let keys = boot_keys(&f, &plan);
            let z = random_vec(&mut rng, slots);
            let ct = f
                .ckks
                .encrypt_symmetric(
                    &f.sk,
                    &f.ckks.encode(&z, f.ckks.default_scale(), slots, f.ckks.max_level()).unwrap(),
                )
                .unwrap();
            // A sparse encoding is in the subring: the trace multiplies by gap, CtS divides.
            let mid = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
            assert_eq!(mid.level(), ct.level() - 2 * cts);
            let u = special_dft_inverse(&z).unwrap();
            let want_mid = bit_reverse(&u).unwrap();
            let err = max_err(&f.ckks.decrypt(&f.sk, &mid).unwrap(), &want_mid);
            assert!(err < BOUND, "CtS, {slots} slots: error {err:e}");
            let back = f.ckks.slot_to_coeff(&mid, &plan, &keys).unwrap();
            assert_eq!(back.level(), ct.level() - 2 * (cts + stc));
            let err = max_err(&f.ckks.decrypt(&f.sk, &back).unwrap(), &z);
            assert!(err < BOUND, "CtS then StC, {slots} slots: error {err:e}");
        }
    }

    #[test]
    fn coeff_to_slot_puts_known_coefficients_in_the_slots() {
        let f = fixture();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let big_n = 1024;
        for (slots, cts) in [(512usize, 3usize), (32, 2)] {
            let gap = big_n / (2 * slots);
            let plan = BootTransforms::new(big_n, slots, cts, 1, 1.0).unwrap();
            let keys = boot_keys(&f, &plan);
            let scale = f.ckks.default_scale();
            // Every one of the N coefficients set, off the grid too.
            let x: Vec<f64> = (0..big_n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let coeffs: Vec<i128> = x.iter().map(|v| (v * scale).round() as i128).collect();
            let pt = Plaintext { coeffs, scale, slots, level: 11, param_id: f.ckks.params().id() };
            let ct = f.ckks.encrypt_symmetric(&f.sk, &pt).unwrap();
            let out = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
            let u: Vec<Complex64> = (0..slots).map(|k| Complex64::new(x[gap * k], x[gap * k + big_n / 2])).collect();
            let want = bit_reverse(&u).unwrap();
            let err = max_err(&f.ckks.decrypt(&f.sk, &out).unwrap(), &want);
            assert!(err < BOUND, "{slots} slots: error {err:e}");
            // The doubled real and imaginary parts, and back.
            let (re, im) = f.ckks.split_real_imag(&out, &keys).unwrap();
            let re_want: Vec<Complex64> = want.iter().map(|w| Complex64::new(2.0 * w.re, 0.0)).collect();
            let im_want: Vec<Complex64> = want.iter().map(|w| Complex64::new(2.0 * w.im, 0.0)).collect();
            assert!(max_err(&f.ckks.decrypt(&f.sk, &re).unwrap(), &re_want) < BOUND);
            assert!(max_err(&f.ckks.decrypt(&f.sk, &im).unwrap(), &im_want) < BOUND);
            let joined = f.ckks.combine_real_imag(&re, &im).unwrap();
            assert_eq!(joined.level(), out.level());
            let twice: Vec<Complex64> = want.iter().map(|w| w * 2.0).collect();
            assert!(max_err(&f.ckks.decrypt(&f.sk, &joined).unwrap(), &twice) < BOUND);
        }
    }

    #[test]
    fn prepared_transforms_and_planned_keys_give_the_same_words() {
        let f = fixture();
        let be = f.ckks.backend();
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let slots = 64;
        let plan = BootTransforms::new(1024, slots, 2, 3, 0.5).unwrap();
        let keys = boot_keys(&f, &plan);
        let (cts_level, stc_level) = (f.ckks.max_level(), f.ckks.max_level() - 4);
        let key_plan = f.ckks.boot_key_plan(&plan, cts_level, stc_level).unwrap();
        assert_eq!(key_plan.galois.len(), keys.galois.len());
        assert!(key_plan.galois.values().any(|&l| l < cts_level));
        // Every key at the highest level it is used at: fewer bytes, the same words.
        let reduced = keys.reduced_to(be, &key_plan).unwrap();
        assert!(reduced.resident_bytes(be) < keys.resident_bytes(be));
        let prepared = f.ckks.prepare_boot(&plan, cts_level, stc_level).unwrap();
        assert_eq!((prepared.cts_level(), prepared.stc_level()), (Some(cts_level), Some(stc_level)));
        let z = random_vec(&mut rng, slots);
        let ct = f
            .ckks
            .encrypt_symmetric(&f.sk, &f.ckks.encode(&z, f.ckks.default_scale(), slots, cts_level).unwrap())
            .unwrap();
        let words = |c: &Ciphertext<CpuBackend>| c.polys().iter().map(|p| p.to_host(be).unwrap()).collect::<Vec<_>>();
        let a = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
        let b = f.ckks.coeff_to_slot_prepared(&ct, &prepared, &reduced).unwrap();
        assert!(words(&a) == words(&b));
        let (ra, ia) = f.ckks.split_real_imag(&a, &keys).unwrap();
        let (rb, ib) = f.ckks.split_real_imag(&b, &reduced).unwrap();
        assert!(words(&ra) == words(&rb) && words(&ia) == words(&ib));
        assert_eq!(a.level(), stc_level);
        let c = f.ckks.slot_to_coeff(&a, &plan, &keys).unwrap();
        let d = f.ckks.slot_to_coeff_prepared(&b, &prepared, &reduced).unwrap();
        assert!(words(&c) == words(&d));
        // CtS scaled by 0.5: StC gives back z / 2.
        let half: Vec<Complex64> = z.iter().map(|v| v * 0.5).collect();
        assert!(max_err(&f.ckks.decrypt(&f.sk, &d).unwrap(), &half) < BOUND);
        // A prepared transform runs at its level only.
        let low = f.ckks.drop_to_level(&ct, cts_level - 1).unwrap();
        assert!(matches!(f.ckks.coeff_to_slot_prepared(&low, &prepared, &reduced), Err(Error::LevelMismatch { .. })));
    }

    #[test]
    fn transforms_refuse_mismatched_inputs() {
        let f = fixture();
        let plan = BootTransforms::new(1024, 64, 2, 2, 1.0).unwrap();
        let keys = EvaluationKeys::default();
        let ct =
            f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode(&[ONE], f.ckks.default_scale(), 32, 11).unwrap()).unwrap();
        assert!(matches!(f.ckks.coeff_to_slot(&ct, &plan, &keys), Err(Error::DimensionMismatch { .. })));
        let lt = LinearTransform::new(32, BTreeMap::from([(1, vec![ONE; 32])])).unwrap();
        assert!(matches!(f.ckks.linear_transform(&ct, &lt, &keys), Err(Error::MissingGaloisKey { .. })));
    }

    /// The time of one CoeffToSlot (full slots, 3 levels) on the N = 2^10 test ring (run in
    /// release with `--ignored --nocapture`; prints, asserts nothing about time).
    #[test]
    #[ignore = "timing, printed only"]
    fn time_one_coeff_to_slot() {
        let f = fixture();
        // Building the N = 2^16, 2^15-slot transforms in the clear (3 levels each).
        let t = std::time::Instant::now();
        let big = BootTransforms::new(1 << 16, 1 << 15, 3, 3, 1.0).unwrap();
        println!("BootTransforms::new(2^16, 2^15, 3, 3): {:?}", t.elapsed());
        assert_eq!(big.cost(), BootCost::estimate(1 << 16, 1 << 15, 3, 3).unwrap());
        for (slots, levels) in [(512usize, 3usize), (512, 2), (512, 4)] {
            let plan = BootTransforms::new(1024, slots, levels, levels, 1.0).unwrap();
            let keys = f.ckks.gen_evaluation_keys(&f.sk, &plan.rotations(), true).unwrap();
            let ct = f
                .ckks
                .encrypt_symmetric(&f.sk, &f.ckks.encode(&[ONE], f.ckks.default_scale(), slots, 14).unwrap())
                .unwrap();
            let t = std::time::Instant::now();
            let out = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
            let clear = t.elapsed();
            let prepared = f.ckks.prepare_boot(&plan, 14, 14).unwrap();
            let t = std::time::Instant::now();
            let again = f.ckks.coeff_to_slot_prepared(&ct, &prepared, &keys).unwrap();
            println!(
                "CtS N=2^10 {slots} slots {levels} levels at level 14: {clear:?}, prepared diagonals {:?} ({:?})",
                t.elapsed(),
                plan.cost().coeff_to_slot
            );
            assert_eq!(again.level(), out.level());
            assert_eq!(out.level(), 14 - 2 * levels);
        }
    }
}
