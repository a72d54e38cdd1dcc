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
//! both precomputed, so the centring costs no multiplication.

#![expect(clippy::indexing_slicing, reason = "loops over slices whose lengths are checked on entry")]

use crate::error::{Error, Result};
use crate::math::zq::Modulus;

/// Coefficients processed together by [`RoundingCorrection::apply`] (digits and sums stay in
/// cache).
const BLOCK: usize = 1024;

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
        let tri_moduli = steps.iter().enumerate().flat_map(|(s, d)| std::iter::repeat_n(*d, s));
        let keep_moduli = keep.iter().flat_map(|k| std::iter::repeat_n(*k, s_len));
        Ok(Self {
            f_shoup: shoup(&mut steps.iter().copied(), &f),
            tri_neg_shoup: shoup(&mut tri_moduli.into_iter(), &tri_neg),
            keep_neg_shoup: shoup(&mut keep_moduli.into_iter(), &keep_neg),
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
    /// Loop order, per block of coefficients: one pass per step computes `y_s` (after the
    /// triangle's `s` terms, prime by prime); then, per kept prime, the sum over steps
    /// accumulates in `u64`, reduced every [`LAZY_TERMS`] terms and once at the end.
    pub fn apply(&self, dropped: &[u32], n: usize, out: &mut [u32]) -> Result<()> {
        let s_len = self.steps.len();
        let want_in = s_len.checked_mul(n).ok_or(Error::SizeOverflow { what: "rounding correction input" })?;
        let want_out = self.keep.len().checked_mul(n).ok_or(Error::SizeOverflow { what: "rounding correction" })?;
        if dropped.len() != want_in {
            return Err(Error::DimensionMismatch { what: "dropped residues", expected: want_in, found: dropped.len() });
        }
        if out.len() != want_out {
            return Err(Error::DimensionMismatch { what: "rounding correction", expected: want_out, found: out.len() });
        }
        if n == 0 {
            return Ok(());
        }
        // Blocks of coefficients, so the digits and the sums stay in cache.
        let block = BLOCK.min(n);
        let mut y = vec![0u32; s_len * block];
        let mut acc = vec![0u64; block];
        let reducers: Vec<WideReducer> = self.steps.iter().map(|d| WideReducer::new(*d)).collect();
        let keep_reducers: Vec<WideReducer> = self.keep.iter().map(|k| WideReducer::new(*k)).collect();
        for c0 in (0..n).step_by(block) {
            let len = block.min(n - c0);
            let mut tri = 0usize;
            for (s, red) in reducers.iter().enumerate() {
                let d = self.steps[s];
                let at = self.positions[s] * n + c0;
                let x = &dropped[at..at + len];
                let (f, fs) = (self.f[s], self.f_shoup[s]);
                let (done, rest) = y.split_at_mut(s * block);
                let ys = &mut rest[..len];
                if s == 0 || self.rounding == Rounding::Joint {
                    for (o, &xv) in ys.iter_mut().zip(x) {
                        *o = d.mul_shoup(xv, f, fs);
                    }
                    continue;
                }
                let acc = &mut acc[..len];
                acc.fill(0);
                for (r, yr) in done.chunks_exact(block).enumerate() {
                    let (g, gh) = (u64::from(self.tri_neg[tri + r]), u64::from(self.tri_high[tri + r]));
                    add_terms(acc, &yr[..len], g, gh, self.steps[r].value() / 2);
                    if (r + 1) % LAZY_TERMS == 0 && r + 1 < s {
                        reduce_all(acc, red);
                    }
                }
                tri += s;
                for ((o, &xv), &a) in ys.iter_mut().zip(x).zip(acc.iter()) {
                    *o = d.add(d.mul_shoup(xv, f, fs), red.reduce(a));
                }
            }
            for (i, red) in keep_reducers.iter().enumerate() {
                let acc = &mut acc[..len];
                acc.fill(0);
                for (s, ys) in y.chunks_exact(block).enumerate() {
                    let (w, wh) = (u64::from(self.keep_neg[i * s_len + s]), u64::from(self.keep_high[i * s_len + s]));
                    add_terms(acc, &ys[..len], w, wh, self.steps[s].value() / 2);
                    if (s + 1) % LAZY_TERMS == 0 && s + 1 < s_len {
                        reduce_all(acc, red);
                    }
                }
                for (o, &a) in out[i * n + c0..i * n + c0 + len].iter_mut().zip(acc.iter()) {
                    *o = red.reduce(a);
                }
            }
        }
        Ok(())
    }
}

/// `acc[c] += y[c] * w + [y[c] > half] * wh`: one term `< 2^60` (`y, w < 2^30`, `wh < 2^30`).
#[inline]
fn add_terms(acc: &mut [u64], y: &[u32], w: u64, wh: u64, half: u32) {
    for (a, &v) in acc.iter_mut().zip(y) {
        *a += u64::from(v) * w + if v > half { wh } else { 0 };
    }
}

/// Reduces every accumulator below `2^30`.
fn reduce_all(acc: &mut [u64], red: &WideReducer) {
    for a in acc.iter_mut() {
        *a = u64::from(red.reduce(*a));
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::math::primes::ntt_primes;
    use crate::math::rns::{RnsBasis, ScaleDown};
    use num_bigint::BigInt;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn moduli(count: usize) -> Vec<Modulus> {
        ntt_primes(30, 64, count, &[]).unwrap().into_iter().map(|q| Modulus::new(q).unwrap()).collect()
    }

    fn random(ms: &[Modulus], n: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
        ms.iter().flat_map(|m| (0..n).map(|_| rng.random_range(0..m.value())).collect::<Vec<_>>()).collect()
    }

    #[test]
    fn wide_reducer_matches_remainder() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for m in moduli(3).into_iter().chain([Modulus::new(3).unwrap(), Modulus::new(65537).unwrap()]) {
            let red = WideReducer::new(m);
            for x in [0u64, 1, u64::MAX, u64::MAX - 1, 1 << 32, (1 << 60) - 1]
                .into_iter()
                .chain((0..1000).map(|_| rng.random()))
            {
                assert_eq!(red.reduce(x), (x % u64::from(m.value())) as u32, "{x} mod {}", m.value());
            }
        }
    }

    /// `x * D^{-1} + corr` equals ScaleDown's output (joint) and the result of one ScaleDown
    /// per prime, last prime first (prime by prime), for 1 to 20 dropped primes (more than
    /// [`LAZY_TERMS`]), with and without `t`.
    #[test]
    fn correction_reproduces_scale_down() {
        let all = moduli(24);
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        // Fewer coefficients than a block, and several blocks.
        for (n, drop_len) in [(8, 1usize), (8, 2), (8, 3), (8, 16), (8, 20), (4 * BLOCK, 1), (4 * BLOCK, 17)] {
            let (keep, drop) = all.split_at(all.len() - drop_len);
            for t in [None, Some(65537u32), Some(3)] {
                let x = random(&all, n, &mut rng);
                let (xk, xd) = x.split_at(keep.len() * n);
                for rounding in [Rounding::Joint, Rounding::PrimeByPrime] {
                    let rc = RoundingCorrection::new(keep, drop, t, rounding).unwrap();
                    let mut corr = vec![0u32; keep.len() * n];
                    rc.apply(xd, n, &mut corr).unwrap();
                    let got: Vec<u32> = keep
                        .iter()
                        .enumerate()
                        .flat_map(|(i, k)| {
                            let (xk, corr, di) = (&xk[i * n..(i + 1) * n], &corr[i * n..(i + 1) * n], rc.d_inv()[i]);
                            xk.iter().zip(corr).map(move |(&a, &c)| k.add(k.mul(a, di), c)).collect::<Vec<_>>()
                        })
                        .collect();
                    let want = match rounding {
                        Rounding::Joint => {
                            let sd = ScaleDown::new(keep, drop, t).unwrap();
                            let mut out = vec![0u32; keep.len() * n];
                            sd.apply(xk, xd, n, &mut out).unwrap();
                            out
                        }
                        Rounding::PrimeByPrime => {
                            let mut cur = x.clone();
                            for len in (keep.len()..all.len()).rev() {
                                let sd = ScaleDown::new(&all[..len], &all[len..=len], t).unwrap();
                                let mut out = vec![0u32; len * n];
                                sd.apply(&cur[..len * n], &cur[len * n..(len + 1) * n], n, &mut out).unwrap();
                                cur = out;
                            }
                            cur
                        }
                    };
                    assert_eq!(got, want, "{drop_len} dropped, t {t:?}, {rounding:?}");
                }
            }
        }
    }

    /// The prime-by-prime result is the nearest-integer rounding step by step: checked against
    /// big-integer arithmetic on one coefficient.
    #[test]
    fn prime_by_prime_is_stepwise_rounding() {
        let all = moduli(5);
        let (keep, drop) = all.split_at(2);
        let rc = RoundingCorrection::new(keep, drop, None, Rounding::PrimeByPrime).unwrap();
        let basis = RnsBasis::new(&all).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for _ in 0..50 {
            let x = random(&all, 1, &mut rng);
            let mut corr = vec![0u32; keep.len()];
            rc.apply(&x[keep.len()..], 1, &mut corr).unwrap();
            let mut v = BigInt::from(basis.reconstruct(&x).unwrap());
            for d in drop.iter().rev() {
                // Nearest integer to v / d (v >= 0, d odd: no ties).
                let d = BigInt::from(d.value());
                v = (&v * 2u32 + &d) / (&d * 2u32);
            }
            let want = RnsBasis::new(keep).unwrap().decompose_signed(&v);
            let got: Vec<u32> =
                keep.iter().enumerate().map(|(i, k)| k.add(k.mul(x[i], rc.d_inv()[i]), corr[i])).collect();
            assert_eq!(got, want);
        }
    }
}
