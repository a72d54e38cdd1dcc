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
use crate::error::{Error, Result, ShapeError};
use crate::eval::bsgs::{self, BabyRotations};
use crate::eval::Hoisting;
use crate::poly::{Eval, RnsPoly};
use crate::rlwe::{self, EvaluationKeys, KeyPlan};

mod boot;
pub use boot::{trace_rotations, BootCost, BootTransforms, PreparedBoot, TransformCost};

const ZERO: Complex64 = Complex64::new(0.0, 0.0);
const ONE: Complex64 = Complex64::new(1.0, 0.0);

/// `log2 n` if `n` is a power of two, else [`ShapeError::NotPowerOfTwo`].
fn log2_exact(what: &'static str, n: usize) -> Result<u32> {
    if n == 0 || !n.is_power_of_two() {
        return Err(ShapeError::NotPowerOfTwo { what, len: n }.into());
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
/// involution). Errors: a length that is not a power of two ([`Error::TransformShape`] with
/// [`ShapeError::NotPowerOfTwo`]).
pub fn bit_reverse<T: Clone>(v: &[T]) -> Result<Vec<T>> {
    let bits = log2_exact("length", v.len())?;
    Ok((0..v.len()).map(|i| v[reverse_bits(i, bits)].clone()).collect())
}

/// `E u`: slot `j` is `sum_k u_k w^(k (5^j mod 4n))`, `w = exp(2 pi i / 4n)`, `n = u.len()` (a
/// power of two), computed directly in `O(n^2)`. For `u_k = c[gap k] + i c[gap k + N/2]` this is
/// [`super::Encoder::decode`] of the coefficients `c` at scale 1 and `n` slots. Errors: a
/// length that is not a power of two ([`Error::TransformShape`] with
/// [`ShapeError::NotPowerOfTwo`]).
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
/// in `O(n^2)`. Errors: as [`special_dft`].
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
/// application order `S_1, ..., S_L`: SlotToCoeff. Errors: a slot count that is not a power of
/// two ([`Error::TransformShape`] with [`ShapeError::NotPowerOfTwo`]).
pub fn slot_to_coeff_stages(n: usize) -> Result<Vec<LinearTransform>> {
    stages(n, false)
}

/// The stages of `T^{-1}` in application order `S_L^{-1}, ..., S_1^{-1}`: CoeffToSlot (slot `j`
/// receives `u_{rev(j)}`). Errors: as [`slot_to_coeff_stages`].
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
/// groups first, each of at least one stage. Errors: `levels` outside `1..=count`
/// ([`ShapeError::LevelBudget`]).
fn group_sizes(count: usize, levels: usize) -> Result<Vec<usize>> {
    if levels == 0 || levels > count {
        return Err(ShapeError::LevelBudget { levels, stages: count }.into());
    }
    let (base, extra) = (count / levels, count % levels);
    Ok((0..levels).map(|g| base + usize::from(g < extra)).collect())
}

/// Merges `stages` (in application order) into `levels` groups of consecutive stages, the larger
/// groups first: each group is the product of its stages, applied as one transform (one level).
/// Errors: `levels` outside `1..=stages.len()` ([`Error::TransformShape`] with
/// [`ShapeError::LevelBudget`]), stages of different slot counts ([`Error::DimensionMismatch`]).
pub fn group_stages(stages: &[LinearTransform], levels: usize) -> Result<Vec<LinearTransform>> {
    let mut rest = stages;
    let mut out = Vec::with_capacity(levels);
    for size in group_sizes(stages.len(), levels)? {
        let (group, tail) = rest.split_at(size);
        rest = tail;
        // Every group holds at least one stage (`group_sizes`): an empty one only comes from a
        // budget above the stage count.
        let (first, others) = group.split_first().ok_or(ShapeError::LevelBudget { levels, stages: stages.len() })?;
        let mut acc = first.clone();
        for s in others {
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
    /// `slots` values); diagonals that are exactly zero are dropped. Errors
    /// ([`Error::TransformShape`]): a slot count that is not a power of two
    /// ([`ShapeError::NotPowerOfTwo`]), an offset out of range
    /// ([`ShapeError::DiagonalOutOfRange`]), no non-zero diagonal ([`ShapeError::NoDiagonal`]);
    /// a diagonal of the wrong length ([`Error::DimensionMismatch`]), a non-finite value
    /// ([`Error::InvalidField`]).
    pub fn new(slots: usize, diagonals: BTreeMap<usize, Vec<Complex64>>) -> Result<Self> {
        log2_exact("slot count", slots)?;
        let mut kept = BTreeMap::new();
        for (k, d) in diagonals {
            if k >= slots {
                return Err(ShapeError::DiagonalOutOfRange { index: k, slots }.into());
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
            return Err(ShapeError::NoDiagonal.into());
        }
        let plan = BsgsPlan::new(slots, kept.keys().copied())?;
        Ok(Self { slots, diagonals: kept, plan })
    }

    /// The matrix with these rows (a square matrix of a power-of-two size): its non-zero
    /// diagonals. Errors: as [`LinearTransform::new`], and [`Error::DimensionMismatch`] for a
    /// row of another length.
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
            return Err(ShapeError::DiagonalOutOfRange { index: k, slots }.into());
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
        self.linear_transform_with(ct, lt, keys, Hoisting::Hoisted)
    }

    /// [`Ckks::linear_transform`] with the baby steps rotated as `hoisting` says
    /// ([`Hoisting::Hoisted`]: one ModUp shared by every baby step, [`Ckks::rotate_hoisted`];
    /// [`Hoisting::OneByOne`]: one full rotation per step). Both give the same words.
    pub fn linear_transform_with(
        &self,
        ct: &Ciphertext<B>,
        lt: &LinearTransform,
        keys: &EvaluationKeys<B>,
        hoisting: Hoisting,
    ) -> Result<Ciphertext<B>> {
        self.bsgs_apply(ct, Diagonals::Clear(lt), keys, hoisting)
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
        hoisting: Hoisting,
    ) -> Result<Ciphertext<B>> {
        if prepared.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: prepared.param_id });
        }
        if prepared.level != ct.level() {
            return Err(Error::LevelMismatch { left: ct.level(), right: prepared.level });
        }
        self.bsgs_apply(ct, Diagonals::Prepared(prepared), keys, hoisting)
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
        let diag = lt.diagonals.get(&k).ok_or(ShapeError::DiagonalNotInTransform { index: k })?;
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
        hoisting: Hoisting,
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
        let inputs = std::slice::from_ref(ct);
        let babies = BabyRotations::new(self, inputs, &steps, keys, hoisting)?;
        let basis = ct.core.degree_one()?.0.basis().clone();
        // Each giant step's inner sum is accumulated in place, one multiply-add per diagonal
        // and polynomial, into a ciphertext at the product scale.
        let giants = plan.giants().iter().map(|(&giant, terms)| (giant as i64, (giant, terms)));
        let (acc, _) = bsgs::sum(self, keys, &babies, giants, |babies, _, (giant, terms)| {
            let mut c0 = RnsPoly::zero(be, basis.clone())?;
            let mut c1 = RnsPoly::zero(be, basis.clone())?;
            for &(b, k) in terms {
                let lifted;
                let m = match diagonals {
                    Diagonals::Clear(lt) => {
                        lifted = self.lift_diagonal(lt, k, giant, pt_scale, level)?;
                        &lifted
                    }
                    Diagonals::Prepared(p) => {
                        p.diagonals.get(&k).ok_or(ShapeError::DiagonalNotInTransform { index: k })?
                    }
                };
                let (s0, s1) = babies.get(0, b as i64)?.core.degree_one()?;
                c0.mul_add_assign(be, s0, m)?;
                c1.mul_add_assign(be, s1, m)?;
            }
            Ok(Some(ct.with(ct.core.with_polys(vec![c0, c1])?, scale)))
        })?;
        let acc = acc.ok_or(ShapeError::NoDiagonal)?;
        let mut out = self.rescale(&acc)?;
        out.scale = ct.scale;
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
