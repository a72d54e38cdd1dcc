//! The correction term of divide-and-round, computed from the dropped residues alone.
//!
//! Let `x` be an integer modulo `K D`, `K` the product of the *kept* primes `k_i` and `D` that of
//! the *dropped* primes. Divide-and-round returns `(x - delta) / D` for an integer `delta` with
//! `delta = x mod D` (so the division is exact) and, with the BGV plaintext modulus `t`,
//! `delta = 0 mod t` (`t = 1` without one). Because the division is exact, for every kept prime
//!
//! ```text
//! [(x - delta) / D]_{k_i} = [x]_{k_i} * D^{-1} + corr_i,     corr_i = [-delta * D^{-1}]_{k_i},
//! ```
//!
//! and `delta` depends only on `x mod D`, that is on the dropped residues. The first term is
//! linear in `x`, so it can be taken in any domain (the NTT is linear modulo `k_i`): key
//! switching's ModDown, BGV modulus switching and CKKS rescaling inverse-transform only the
//! dropped limbs, compute `corr` from them in the coefficient domain ([`RoundingCorrection`]),
//! transform `corr` over the kept primes and add `x * D^{-1}` in the evaluation domain. Every
//! step is an exact modular map, so the words are those of dividing in the coefficient domain.
//!
//! Two definitions of `delta` ([`Rounding`]):
//!
//! * [`Rounding::Joint`]: `delta` of [`crate::math::rns::ScaleDown`] (one division by `D`):
//!   `delta = t * sum_s c_s * (D / d_s)` with `c_s` the centred representative of
//!   `z_s = [x_s * t^{-1} * (D / d_s)^{-1}]_{d_s}`, so
//!   `corr_i = -sum_s c_s * [t * d_s^{-1}]_{k_i}`. For one dropped prime this is exact rounding.
//! * [`Rounding::PrimeByPrime`]: the result of dropping the primes one at a time with that exact
//!   one-prime rounding, the **last** prime of the dropped list (in basis order) first. Name the
//!   dropped primes in that order `d_0, d_1, ..., d_{S-1}` and let `E_s = d_0 ... d_{s-1}`
//!   (`E_0 = 1`, `E_S = D`). Step `s` maps `x^(s)` to `x^(s+1) = (x^(s) - t c_s) / d_s` with
//!   `c_s` the centred representative of `y_s = [x^(s) * t^{-1}]_{d_s}`. By induction
//!   `x^(s) = (x - t * sum_{r<s} c_r E_r) / E_s` (true for `s = 0`; one step adds the term
//!   `r = s` and the factor `d_s`), so the result is `(x - delta) / D` with
//!   `delta = t * sum_s c_s E_s`, and
//!
//!   ```text
//!   corr_i = -sum_s c_s * [t * E_s * D^{-1}]_{k_i} = -sum_s c_s * [t * (d_s ... d_{S-1})^{-1}]_{k_i},
//!   y_s    = [x_{d_s} * (t E_s)^{-1} - sum_{r<s} c_r * (d_r ... d_{s-1})^{-1}]_{d_s}
//!   ```
//!
//!   (the second line is `x^(s) * t^{-1}` reduced modulo `d_s`, `x_{d_s}` the input residue):
//!   the `c_s` come out in order from the dropped residues alone, a triangular recurrence of
//!   `S (S - 1) / 2` products per coefficient.
//!
//! In both cases the sums run over centred values `c_s = y_s - d_s [y_s > d_s / 2]`; with
//! `w` the weight of `c_s`, the code adds `y_s * (-w)` and, where `y_s > d_s / 2`, `d_s * w`,
//! both precomputed, so the centring costs no multiplication (the tables of
//! [`RoundingCorrection::weights`] and [`RoundingCorrection::triangle`], which the GPU kernels
//! use).
//!
//! The CPU path ([`RoundingCorrection::apply`]) computes the same residues another way: it keeps
//! `c_s` itself as a signed integer (`|c_s| <= d_s / 2 < 2^29`) and multiplies it by the
//! centred weight (`|[-w]_{k_i}| <= k_i / 2 < 2^29`), so every term is one signed
//! 32 x 32 -> 64-bit product below `2^58` in absolute value, summed in `i64` and reduced once per
//! [`SIGNED_TERMS`] terms. Both paths return the canonical residue of the same integer, so their
//! words are identical.

#![expect(clippy::indexing_slicing, reason = "loops over slices whose lengths are checked on entry")]

use crate::error::{Error, Result};
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

/// Coefficients per tile of the AVX-512 path: the signed digits `c_s` of one tile (`S * TILE`
/// words) and the sums of a group of kept primes stay in registers or L1.
const TILE: usize = 16;

/// Coefficients per block of the portable path: the block's digits (`S * BLOCK` words of 8
/// bytes, 30 KiB for 15 steps) stay in L1.
const BLOCK: usize = 256;

/// Signed terms summed in an `i64` before it must be reduced. A term is `c * v` with
/// `|c| <= floor(d / 2) <= 2^29 - 1` and `|v| <= floor(k / 2) <= 2^29 - 1` (moduli `< 2^30`), so
/// `|c * v| < 2^58`; an accumulator starts at 0 or at a reduced value in `[0, 2^30)`, and
/// `2^30 + 31 * 2^58 = 2^63 - 2^58 + 2^30 < 2^63`: no overflow.
pub const SIGNED_TERMS: usize = 31;

/// Terms of at most `2^60` that may be added to a `u64` holding a value below `2^30` before it
/// must be reduced: `2^30 + 15 * 2^60 < 2^64`.
pub const LAZY_TERMS: usize = 15;

/// How the dropped primes are divided out (see the [module documentation](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// One division by the product `D` ([`crate::math::rns::ScaleDown`]'s rounding; key-switch
    /// ModDown).
    Joint,
    /// One exact rounding per prime, the last prime of the dropped list first (BGV modulus
    /// switching and CKKS rescaling by several primes).
    PrimeByPrime,
}

/// Reduction of any `u64` modulo `q` as `[hi * 2^32 + lo]_q`, with one Shoup and one Barrett
/// step (no division).
#[derive(Debug, Clone, Copy)]
pub struct WideReducer {
    m: Modulus,
    /// `2^32 mod q`.
    radix: u32,
    radix_shoup: u32,
}

impl WideReducer {
    /// The reducer of `m`.
    #[must_use]
    pub fn new(m: Modulus) -> Self {
        let radix = m.add(m.reduce_u32(u32::MAX), 1);
        Self { m, radix, radix_shoup: m.shoup(radix) }
    }

    /// `x mod q`, in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn reduce(&self, x: u64) -> u32 {
        let hi = self.m.mul_shoup((x >> 32) as u32, self.radix, self.radix_shoup);
        self.m.add(hi, self.m.reduce_u32(x as u32))
    }

    /// `2^32 mod q` and its Shoup companion (what the GPU kernels reduce with).
    #[must_use]
    pub fn radix(&self) -> (u32, u32) {
        (self.radix, self.radix_shoup)
    }
}

/// Reduction of any `i64` modulo `q` in `u64` lanes, branch-free (the compiler vectorises it):
/// the word `u = x mod 2^64` as `[hi * 2^32 + lo]_q` with two Shoup steps, then `[-2^64]_q`
/// added where `x < 0` (there `u = x + 2^64`).
#[derive(Debug, Clone, Copy)]
struct SignedReducer {
    q: u64,
    /// `2^32 mod q` and its Shoup companion `floor(radix * 2^32 / q)`.
    radix: u64,
    radix_shoup: u64,
    /// `floor(2^32 / q)`: the Shoup companion of `1` (`1 < q`).
    one_shoup: u64,
    /// `[-2^64]_q`.
    neg_fix: u64,
}

impl SignedReducer {
    fn new(m: Modulus) -> Self {
        let q = u64::from(m.value());
        let radix = (1u64 << 32) % q;
        let neg_fix = (q - radix * radix % q) % q;
        Self { q, radix, radix_shoup: (radix << 32) / q, one_shoup: (1u64 << 32) / q, neg_fix }
    }

    /// `x mod q`, in `[0, q)`.
    ///
    /// Shoup's bound: for `a < 2^32`, `w < q` and `w' = floor(w 2^32 / q)`,
    /// `a w - floor(a w' / 2^32) q` lies in `[0, 2q)` (the quotient is at most `a w / q` and
    /// more than `a w / q - 2`). So `a, b < 2q`, `a + b < 4q < 2^32`, and two conditional
    /// subtractions (`min` with the wrapped difference) bring it into `[0, q)`.
    #[inline(always)]
    fn reduce(self, x: i64) -> u64 {
        let q = self.q;
        let u = x as u64;
        let (hi, lo) = (u >> 32, u & 0xffff_ffff);
        let a = hi * self.radix - ((hi * self.radix_shoup) >> 32) * q;
        let b = lo - ((lo * self.one_shoup) >> 32) * q;
        let t = a + b;
        let t = t.min(t.wrapping_sub(2 * q));
        let t = t.min(t.wrapping_sub(q));
        // x < 0: u = x + 2^64, so x = u - 2^64 = u + [-2^64]_q (mod q).
        let t = t + ((x >> 63) as u64 & self.neg_fix);
        t.min(t.wrapping_sub(q))
    }
}

/// The tables of `corr` (see the [module documentation](self)) for one choice of kept primes,
/// dropped primes, plaintext modulus and [`Rounding`].
///
/// Steps `s = 0..S` run over the dropped primes in processing order: the order of the dropped
/// list for [`Rounding::Joint`], the reverse for [`Rounding::PrimeByPrime`].
#[derive(Debug, Clone)]
pub struct RoundingCorrection {
    keep: Vec<Modulus>,
    /// Dropped moduli in processing order.
    steps: Vec<Modulus>,
    /// Position of each step's prime in the dropped list (basis order).
    positions: Vec<usize>,
    rounding: Rounding,
    /// `f_s`: `t^{-1} (D / d_s)^{-1}` (joint) or `(t E_s)^{-1}` (prime by prime), mod `d_s`.
    f: Vec<u32>,
    f_shoup: Vec<u32>,
    /// Triangle, row `s` holding `r < s` (prime by prime only; empty otherwise), starting at
    /// `s (s - 1) / 2`: `-g` and `d_r g` mod `d_s` with `g = (d_r ... d_{s-1})^{-1}`.
    tri_neg: Vec<u32>,
    tri_neg_shoup: Vec<u32>,
    tri_high: Vec<u32>,
    /// Per kept prime `i`, per step `s` (layout `[keep][S]`): `-w` and `d_s w` mod `k_i`, `w` the
    /// weight of `c_s` in `corr_i`.
    keep_neg: Vec<u32>,
    keep_neg_shoup: Vec<u32>,
    keep_high: Vec<u32>,
    /// `D^{-1} mod k_i`.
    d_inv: Vec<u32>,
    /// CPU path: `floor(d_s / 2)` per step.
    halves: Vec<u32>,
    /// CPU path: the centred `[-g]_{d_s}` of the triangle (same layout as `tri_neg`).
    tri_signed: Vec<i64>,
    /// CPU path: the centred `[-w]_{k_i}` (same layout as `keep_neg`).
    keep_signed: Vec<i64>,
    /// CPU path: reducers of the steps' and of the kept moduli.
    step_reducers: Vec<SignedReducer>,
    keep_reducers: Vec<SignedReducer>,
}

/// `prod moduli mod m`.
fn product_mod(moduli: &[Modulus], m: &Modulus) -> u32 {
    moduli.iter().fold(1 % m.value(), |acc, d| m.mul(acc, m.reduce_u32(d.value())))
}

/// `a^{-1} mod m`, or a coprimality error naming `m`.
fn inverse(m: &Modulus, a: u32) -> Result<u32> {
    m.inv(a).ok_or(Error::InvalidModulus {
        modulus: u64::from(m.value()),
        reason: "not coprime to another modulus of the RNS basis",
    })
}

impl RoundingCorrection {
    /// Precomputes the tables. Errors as [`crate::math::rns::ScaleDown::new`]: with
    /// [`Error::InvalidModulus`] if `keep` or `drop` is empty or the primes are not pairwise
    /// coprime, and with [`Error::InvalidPlaintextModulus`] if `t` is not coprime to every
    /// dropped prime.
    pub fn new(keep: &[Modulus], drop: &[Modulus], t: Option<u32>, rounding: Rounding) -> Result<Self> {
        if keep.is_empty() || drop.is_empty() {
            return Err(Error::InvalidModulus { modulus: 0, reason: "empty RNS basis" });
        }
        let all: Vec<&Modulus> = keep.iter().chain(drop).collect();
        for (i, a) in all.iter().enumerate() {
            for b in all.iter().skip(i + 1) {
                inverse(b, b.reduce_u32(a.value()))?;
            }
        }
        let t_val = t.unwrap_or(1);
        let t_err = Error::InvalidPlaintextModulus { t: u64::from(t_val), reason: "not coprime to the dropped moduli" };
        let positions: Vec<usize> = match rounding {
            Rounding::Joint => (0..drop.len()).collect(),
            Rounding::PrimeByPrime => (0..drop.len()).rev().collect(),
        };
        let steps: Vec<Modulus> = positions.iter().filter_map(|&p| drop.get(p).copied()).collect();
        let s_len = steps.len();
        let mut f = Vec::with_capacity(s_len);
        let mut tri_neg = Vec::new();
        let mut tri_high = Vec::new();
        for (s, d) in steps.iter().enumerate() {
            let t_inv = d.inv(d.reduce_u32(t_val)).ok_or(t_err.clone())?;
            let fs = match rounding {
                Rounding::Joint => {
                    let others: Vec<Modulus> =
                        steps.iter().enumerate().filter(|&(r, _)| r != s).map(|(_, m)| *m).collect();
                    d.mul(t_inv, inverse(d, product_mod(&others, d))?)
                }
                Rounding::PrimeByPrime => {
                    let e_s = product_mod(&steps[..s], d);
                    d.mul(t_inv, inverse(d, e_s)?)
                }
            };
            f.push(fs);
            if rounding == Rounding::PrimeByPrime {
                for r in 0..s {
                    let g = inverse(d, product_mod(&steps[r..s], d))?;
                    tri_neg.push(d.neg(g));
                    tri_high.push(d.mul(d.reduce_u32(steps[r].value()), g));
                }
            }
        }
        let mut keep_neg = Vec::with_capacity(keep.len() * s_len);
        let mut keep_high = Vec::with_capacity(keep.len() * s_len);
        let mut d_inv = Vec::with_capacity(keep.len());
        for k in keep {
            d_inv.push(inverse(k, product_mod(&steps, k))?);
            let t_k = k.reduce_u32(t_val);
            for (s, d) in steps.iter().enumerate() {
                let divisor = match rounding {
                    Rounding::Joint => k.reduce_u32(d.value()),
                    Rounding::PrimeByPrime => product_mod(&steps[s..], k),
                };
                let w = k.mul(t_k, inverse(k, divisor)?);
                keep_neg.push(k.neg(w));
                keep_high.push(k.mul(k.reduce_u32(d.value()), w));
            }
        }
        let shoup = |moduli: &mut dyn Iterator<Item = Modulus>, values: &[u32]| -> Vec<u32> {
            values.iter().zip(moduli).map(|(&v, m)| m.shoup(v)).collect()
        };
        let tri_moduli = || steps.iter().enumerate().flat_map(|(s, d)| std::iter::repeat_n(*d, s));
        let keep_moduli = || keep.iter().flat_map(|k| std::iter::repeat_n(*k, s_len));
        // Centred values lie in (-m/2, m/2] with m < 2^30 (stored as i64 so that the SIMD path
        // broadcasts them straight from memory).
        let centred = |moduli: &mut dyn Iterator<Item = Modulus>, values: &[u32]| -> Vec<i64> {
            values.iter().zip(moduli).map(|(&v, m)| m.center(v)).collect()
        };
        Ok(Self {
            f_shoup: shoup(&mut steps.iter().copied(), &f),
            tri_neg_shoup: shoup(&mut tri_moduli(), &tri_neg),
            keep_neg_shoup: shoup(&mut keep_moduli(), &keep_neg),
            halves: steps.iter().map(|d| d.value() / 2).collect(),
            tri_signed: centred(&mut tri_moduli(), &tri_neg),
            keep_signed: centred(&mut keep_moduli(), &keep_neg),
            step_reducers: steps.iter().map(|d| SignedReducer::new(*d)).collect(),
            keep_reducers: keep.iter().map(|k| SignedReducer::new(*k)).collect(),
            keep: keep.to_vec(),
            steps,
            positions,
            rounding,
            f,
            tri_neg,
            tri_high,
            keep_neg,
            keep_high,
            d_inv,
        })
    }

    /// The kept moduli `k_i`.
    #[must_use]
    pub fn keep_moduli(&self) -> &[Modulus] {
        &self.keep
    }

    /// The dropped moduli in processing order (`d_0, d_1, ...`).
    #[must_use]
    pub fn step_moduli(&self) -> &[Modulus] {
        &self.steps
    }

    /// Position in the dropped list (basis order) of each step's prime.
    #[must_use]
    pub fn step_positions(&self) -> &[usize] {
        &self.positions
    }

    /// The rounding.
    #[must_use]
    pub fn rounding(&self) -> Rounding {
        self.rounding
    }

    /// `f_s` (see the fields) per step, and its Shoup companions.
    #[must_use]
    pub fn step_factors(&self) -> (&[u32], &[u32]) {
        (&self.f, &self.f_shoup)
    }

    /// The triangle of [`Rounding::PrimeByPrime`] (empty for [`Rounding::Joint`]): row `s`
    /// (entries `r < s`, starting at `s (s - 1) / 2`) holds `-g_{s,r}`, its Shoup companion and
    /// `d_r g_{s,r}`, all mod `d_s`, with `g_{s,r} = (d_r ... d_{s-1})^{-1}`.
    #[must_use]
    pub fn triangle(&self) -> (&[u32], &[u32], &[u32]) {
        (&self.tri_neg, &self.tri_neg_shoup, &self.tri_high)
    }

    /// Per kept prime `i` and step `s` (layout `[keep][S]`): `-w_{s,i}`, its Shoup companion and
    /// `d_s w_{s,i}`, mod `k_i`, with `w_{s,i}` the weight of `c_s` in `corr_i`.
    #[must_use]
    pub fn weights(&self) -> (&[u32], &[u32], &[u32]) {
        (&self.keep_neg, &self.keep_neg_shoup, &self.keep_high)
    }

    /// `D^{-1} mod k_i`, one per kept prime: the factor of `x` in the result.
    #[must_use]
    pub fn d_inv(&self) -> &[u32] {
        &self.d_inv
    }

    /// `corr` of one polynomial: `dropped` holds its `drop.len() * n` residues (limb-major, the
    /// dropped primes in basis order), `out` receives `keep.len() * n` residues, each in
    /// `[0, k_i)`. Any input word `w` of a limb with modulus `d` is read as `w mod d`.
    ///
    /// Loop order, per tile of 16 coefficients (AVX-512) or block of 256 (portable): one pass
    /// per step computes the signed digit `c_s` (after the triangle's `s` terms, prime by
    /// prime); then, per kept prime (AVX-512: per group of four, the sums in registers), the
    /// signed sums over the steps accumulate in `i64` lanes, reduced every [`SIGNED_TERMS`]
    /// terms and once at the end (see the [module documentation](self)). The level is
    /// [`SimdLevel::active`]; no allocation but the digits' scratch.
    pub fn apply(&self, dropped: &[u32], n: usize, out: &mut [u32]) -> Result<()> {
        self.apply_with(dropped, n, out, SimdLevel::active())
    }

    /// [`apply`](Self::apply) at an explicit [`SimdLevel`] (clamped to the CPU's): explicit
    /// AVX-512 at [`SimdLevel::Avx512`], the portable code compiled for AVX2 at
    /// [`SimdLevel::Avx2`], the portable code for the baseline target at
    /// [`SimdLevel::Scalar`]. Every level returns the same words; for tests and benchmarks.
    /// Errors as [`apply`](Self::apply).
    pub fn apply_with(&self, dropped: &[u32], n: usize, out: &mut [u32], level: SimdLevel) -> Result<()> {
        let s_len = self.steps.len();
        let want_in = s_len.checked_mul(n).ok_or(Error::SizeOverflow { what: "rounding correction input" })?;
        let want_out = self.keep.len().checked_mul(n).ok_or(Error::SizeOverflow { what: "rounding correction" })?;
        if dropped.len() != want_in {
            return Err(Error::DimensionMismatch { what: "dropped residues", expected: want_in, found: dropped.len() });
        }
        if out.len() != want_out {
            return Err(Error::DimensionMismatch { what: "rounding correction", expected: want_out, found: out.len() });
        }
        if n > 0 {
            self.run(dropped, n, out, level);
        }
        Ok(())
    }

    /// [`apply_with`](Self::apply_with) on checked lengths, `n > 0`.
    fn run(&self, dropped: &[u32], n: usize, out: &mut [u32], level: SimdLevel) {
        let op = Apply { rc: self, dropped, n, out };
        #[cfg(target_arch = "x86_64")]
        {
            use pulp::NullaryFnOnce;
            match level.clamp() {
                SimdLevel::Avx512 => {
                    if let Some(simd) = pulp::x86::V4::try_new() {
                        return x86::apply_v4(simd, op.rc, op.dropped, op.n, op.out);
                    }
                }
                SimdLevel::Avx2 => {
                    if let Some(simd) = pulp::x86::V3::try_new() {
                        return simd.vectorize(op);
                    }
                }
                SimdLevel::Scalar => {}
            }
            op.call();
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = level;
            pulp::Arch::new().dispatch(op);
        }
    }

    /// The portable path on checked lengths, one block of [`BLOCK`] coefficients at a time
    /// (inlined into [`Apply`], so its loops are compiled for the dispatched vector extension):
    /// per step, the signed digits `c_s` of the block (after the triangle's terms, prime by
    /// prime); then, per kept prime, the signed sum over the steps.
    #[inline(always)]
    fn apply_blocks(&self, dropped: &[u32], n: usize, out: &mut [u32]) {
        let s_len = self.steps.len();
        let block = BLOCK.min(n);
        let mut c = vec![0i64; s_len * block];
        let mut acc = vec![0i64; block];
        for c0 in (0..n).step_by(block) {
            let len = block.min(n - c0);
            let acc = &mut acc[..len];
            let mut tri = 0usize;
            for s in 0..s_len {
                let q = u64::from(self.steps[s].value());
                let half = u64::from(self.halves[s]);
                let (f, fs) = (u64::from(self.f[s]), u64::from(self.f_shoup[s]));
                let at = self.positions[s] * n + c0;
                let x = &dropped[at..at + len];
                let (done, rest) = c.split_at_mut(s * block);
                let cs = &mut rest[..len];
                // y = [x f]_{d_s} (Shoup: any x < 2^32, f < d_s); c_s = y - d_s [y > d_s / 2].
                let shoup = |x: u32| {
                    let x = u64::from(x);
                    let r = x * f - ((x * fs) >> 32) * q;
                    r.min(r.wrapping_sub(q))
                };
                let centre = |y: u64| y as i64 - if y > half { q as i64 } else { 0 };
                if self.rounding == Rounding::PrimeByPrime && s > 0 {
                    // y += sum_{r<s} c_r [-g_{s,r}]_{d_s} (centred), reduced every SIGNED_TERMS terms.
                    let red = self.step_reducers[s];
                    acc.fill(0);
                    for (r, cr) in done.chunks_exact(block).enumerate() {
                        if r > 0 && r % SIGNED_TERMS == 0 {
                            reduce_slice(acc, red);
                        }
                        mul_add_signed(acc, &cr[..len], self.tri_signed[tri + r]);
                    }
                    tri += s;
                    for ((o, &x), &a) in cs.iter_mut().zip(x).zip(acc.iter()) {
                        let t = shoup(x) + red.reduce(a);
                        *o = centre(t.min(t.wrapping_sub(q)));
                    }
                } else {
                    for (o, &x) in cs.iter_mut().zip(x) {
                        *o = centre(shoup(x));
                    }
                }
            }
            for (i, red) in self.keep_reducers.iter().enumerate() {
                acc.fill(0);
                for (s, cs) in c.chunks_exact(block).enumerate() {
                    if s > 0 && s % SIGNED_TERMS == 0 {
                        reduce_slice(acc, *red);
                    }
                    mul_add_signed(acc, &cs[..len], self.keep_signed[i * s_len + s]);
                }
                for (o, &a) in out[i * n + c0..i * n + c0 + len].iter_mut().zip(acc.iter()) {
                    *o = red.reduce(a) as u32;
                }
            }
        }
    }
}

/// [`RoundingCorrection::apply_blocks`], to run under a `pulp` dispatch.
struct Apply<'a> {
    rc: &'a RoundingCorrection,
    dropped: &'a [u32],
    n: usize,
    out: &'a mut [u32],
}

impl pulp::NullaryFnOnce for Apply<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        self.rc.apply_blocks(self.dropped, self.n, self.out);
    }
}

/// `acc += c * w` lane by lane, `c` holding digits `|c| < 2^29` (read as `i32`, so the product
/// is one signed 32 x 32 -> 64-bit multiply).
#[inline(always)]
fn mul_add_signed(acc: &mut [i64], c: &[i64], w: i64) {
    for (a, &cv) in acc.iter_mut().zip(c) {
        *a += i64::from(cv as i32) * w;
    }
}

/// Reduces every lane into `[0, q)`.
#[inline(always)]
fn reduce_slice(acc: &mut [i64], red: SignedReducer) {
    for a in acc.iter_mut() {
        *a = red.reduce(*a) as i64;
    }
}

/// The AVX-512 path (`pulp::x86::V4`): the portable path's steps on `__m512i` vectors of eight
/// `u64`/`i64` lanes, the signed products with `vpmuldq` (`_mm512_mul_epi32`, low 32 bits of
/// each lane, sign-extended) and the Shoup quotients with `vpmuludq`.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::__m512i;

    use pulp::cast;
    use pulp::x86::V4;

    use super::{Rounding, RoundingCorrection, SignedReducer, SIGNED_TERMS, TILE};

    /// Vectors per tile.
    const VECS: usize = TILE / 8;

    /// Kept primes accumulated together (`GROUP * VECS` accumulators in registers).
    const GROUP: usize = 4;

    /// [`SignedReducer`]'s constants, broadcast.
    #[derive(Clone, Copy)]
    struct Red {
        q: __m512i,
        q2: __m512i,
        radix: __m512i,
        radix_shoup: __m512i,
        one_shoup: __m512i,
        neg_fix: __m512i,
    }

    impl Red {
        #[inline(always)]
        fn new(s: V4, r: &SignedReducer) -> Self {
            let f = s.avx512f;
            let b = |v: u64| f._mm512_set1_epi64(v as i64);
            Self {
                q: b(r.q),
                q2: b(2 * r.q),
                radix: b(r.radix),
                radix_shoup: b(r.radix_shoup),
                one_shoup: b(r.one_shoup),
                neg_fix: b(r.neg_fix),
            }
        }

        /// [`SignedReducer::reduce`] lane by lane (the same steps).
        #[inline(always)]
        fn reduce(self, s: V4, x: __m512i) -> __m512i {
            let f = s.avx512f;
            let hi = f._mm512_srli_epi64::<32>(x);
            let lo = f._mm512_and_si512(x, f._mm512_set1_epi64(0xffff_ffff));
            let a = f._mm512_sub_epi64(
                f._mm512_mul_epu32(hi, self.radix),
                f._mm512_mul_epu32(f._mm512_srli_epi64::<32>(f._mm512_mul_epu32(hi, self.radix_shoup)), self.q),
            );
            // vpmuludq reads the low 32 bits of x: lo.
            let b = f._mm512_sub_epi64(
                lo,
                f._mm512_mul_epu32(f._mm512_srli_epi64::<32>(f._mm512_mul_epu32(x, self.one_shoup)), self.q),
            );
            let t = f._mm512_add_epi64(a, b);
            let t = f._mm512_min_epu64(t, f._mm512_sub_epi64(t, self.q2));
            let t = f._mm512_min_epu64(t, f._mm512_sub_epi64(t, self.q));
            let t = f._mm512_add_epi64(t, f._mm512_and_si512(f._mm512_srai_epi64::<63>(x), self.neg_fix));
            f._mm512_min_epu64(t, f._mm512_sub_epi64(t, self.q))
        }
    }

    /// Entry point: [`RoundingCorrection::apply_tiles`] at AVX-512.
    pub(super) fn apply_v4(s: V4, rc: &RoundingCorrection, dropped: &[u32], n: usize, out: &mut [u32]) {
        struct Op<'a>(V4, &'a RoundingCorrection, &'a [u32], usize, &'a mut [u32]);
        impl pulp::NullaryFnOnce for Op<'_> {
            type Output = ();
            #[inline(always)]
            fn call(self) {
                tiles(self.0, self.1, self.2, self.3, self.4);
            }
        }
        s.vectorize(Op(s, rc, dropped, n, out));
    }

    #[inline(always)]
    fn tiles(s: V4, rc: &RoundingCorrection, dropped: &[u32], n: usize, out: &mut [u32]) {
        let k_len = rc.keep.len();
        let mut c = vec![[[0i64; 8]; VECS]; rc.steps.len()];
        let mut sums = [[0u32; TILE]; GROUP];
        for c0 in (0..n).step_by(TILE) {
            let len = TILE.min(n - c0);
            digits(s, rc, dropped, n, c0, len, &mut c);
            let mut i0 = 0;
            while i0 < k_len {
                let g = (k_len - i0).min(GROUP);
                match g {
                    1 => keep_group::<1>(s, rc, i0, &c, &mut sums),
                    2 => keep_group::<2>(s, rc, i0, &c, &mut sums),
                    3 => keep_group::<3>(s, rc, i0, &c, &mut sums),
                    _ => keep_group::<GROUP>(s, rc, i0, &c, &mut sums),
                }
                for (j, row) in sums.iter().take(g).enumerate() {
                    let at = (i0 + j) * n + c0;
                    out[at..at + len].copy_from_slice(&row[..len]);
                }
                i0 += g;
            }
        }
    }

    /// The portable `digits` on vectors.
    #[inline(always)]
    fn digits(
        s: V4,
        rc: &RoundingCorrection,
        dropped: &[u32],
        n: usize,
        c0: usize,
        len: usize,
        c: &mut [[[i64; 8]; VECS]],
    ) {
        let f = s.avx512f;
        let mut tri = 0usize;
        for st in 0..c.len() {
            let qv = u64::from(rc.steps[st].value());
            let q = f._mm512_set1_epi64(qv as i64);
            let half = f._mm512_set1_epi64(i64::from(rc.halves[st]));
            let at = rc.positions[st] * n + c0;
            let mut x = [0u32; TILE];
            x[..len].copy_from_slice(&dropped[at..at + len]);
            let x: [[u32; 8]; VECS] = cast(x);
            let fv = f._mm512_set1_epi64(i64::from(rc.f[st]));
            let fs = f._mm512_set1_epi64(i64::from(rc.f_shoup[st]));
            let mut y = [f._mm512_setzero_si512(); VECS];
            for (y, x) in y.iter_mut().zip(x) {
                let x = f._mm512_cvtepu32_epi64(cast(x));
                let quot = f._mm512_srli_epi64::<32>(f._mm512_mul_epu32(x, fs));
                let r = f._mm512_sub_epi64(f._mm512_mul_epu32(x, fv), f._mm512_mul_epu32(quot, q));
                *y = f._mm512_min_epu64(r, f._mm512_sub_epi64(r, q));
            }
            let (done, rest) = c.split_at_mut(st);
            if rc.rounding == Rounding::PrimeByPrime && st > 0 {
                let red = Red::new(s, &rc.step_reducers[st]);
                let mut acc = [f._mm512_setzero_si512(); VECS];
                for (r, cr) in done.iter().enumerate() {
                    if r > 0 && r % SIGNED_TERMS == 0 {
                        for a in &mut acc {
                            *a = red.reduce(s, *a);
                        }
                    }
                    let g = f._mm512_set1_epi64(rc.tri_signed[tri + r]);
                    for (a, &cv) in acc.iter_mut().zip(cr) {
                        *a = f._mm512_add_epi64(*a, f._mm512_mul_epi32(cast(cv), g));
                    }
                }
                tri += st;
                for (y, &a) in y.iter_mut().zip(&acc) {
                    let t = f._mm512_add_epi64(*y, red.reduce(s, a));
                    *y = f._mm512_min_epu64(t, f._mm512_sub_epi64(t, q));
                }
            }
            for (cv, &y) in rest[0].iter_mut().zip(&y) {
                let high = f._mm512_cmpgt_epu64_mask(y, half);
                *cv = cast(f._mm512_mask_sub_epi64(y, high, y, q));
            }
        }
    }

    /// The portable `keep_group` on vectors.
    #[inline(always)]
    fn keep_group<const G: usize>(
        s: V4,
        rc: &RoundingCorrection,
        i0: usize,
        c: &[[[i64; 8]; VECS]],
        sums: &mut [[u32; TILE]; GROUP],
    ) {
        let f = s.avx512f;
        let s_len = c.len();
        let mut acc = [[f._mm512_setzero_si512(); VECS]; G];
        for (st, cs) in c.iter().enumerate() {
            if st > 0 && st % SIGNED_TERMS == 0 {
                for (j, a) in acc.iter_mut().enumerate() {
                    let red = Red::new(s, &rc.keep_reducers[i0 + j]);
                    for a in a.iter_mut() {
                        *a = red.reduce(s, *a);
                    }
                }
            }
            let cv: [__m512i; VECS] = cast(*cs);
            for (j, a) in acc.iter_mut().enumerate() {
                let w = f._mm512_set1_epi64(rc.keep_signed[(i0 + j) * s_len + st]);
                for (a, &cv) in a.iter_mut().zip(&cv) {
                    *a = f._mm512_add_epi64(*a, f._mm512_mul_epi32(cv, w));
                }
            }
        }
        for (j, (row, a)) in sums.iter_mut().zip(&acc).enumerate() {
            let red = Red::new(s, &rc.keep_reducers[i0 + j]);
            let mut words = [[0u32; 8]; VECS];
            for (wd, &a) in words.iter_mut().zip(a) {
                *wd = cast(f._mm512_cvtepi64_epi32(red.reduce(s, a)));
            }
            *row = cast(words);
        }
    }
}

#[cfg(test)]
mod tests;
