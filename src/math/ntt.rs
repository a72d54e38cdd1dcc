//! Negacyclic number-theoretic transform over `Z_q[X]/(X^N + 1)`.
//!
//! For a prime `q < 2^30` with `q = 1 mod 2N` and `psi` the smallest primitive `2N`-th root of
//! unity mod `q` ([`primes::min_primitive_root_2n`]), the forward transform maps the
//! coefficients `a_0 .. a_{N-1}` of `a(X)` to the evaluations
//!
//! ```text
//! out[i] = a(psi^(2 * bitrev(i) + 1)) mod q,    i in [0, N)
//! ```
//!
//! i.e. evaluations at the odd powers of `psi`, stored in bit-reversed order (see
//! [`eval_exponent`]). The inverse transform undoes this exactly, `N^{-1}` included.
//!
//! # Algorithm (the specification every backend reproduces)
//!
//! * **Forward**: Cooley-Tukey, natural order in, bit-reversed order out, `log2 N` stages. Stage
//!   `s` (`m = 2^s` blocks of `2t` values, `t = N / 2m`) applies to every pair `(x, y) =
//!   (a[2it + j], a[2it + j + t])`, `j < t`, of block `i` Harvey's lazy butterfly with
//!   `w = W[m + i]` from [`NttTable::forward_twiddles`]:
//!
//!   ```text
//!   x <- x >= 2q ? x - 2q : x              (now x < 2q)
//!   u <- mul_shoup_lazy(y, w, w')          (u < 2q, y < 4q)
//!   (x, y) <- (x + u, x - u + 2q)          (both < 4q)
//!   ```
//!
//!   Values stay in `[0, 4q)`, which fits `u32` since `4q < 2^32`. The strict form ends with
//!   two conditional subtractions (`4q -> 2q -> q`) on every output.
//! * **Inverse**: Gentleman-Sande, bit-reversed order in, natural order out. Stages run with
//!   `m = N/2, N/4, .., 1` blocks; block `i` of every stage but the last uses `w = V[m + i]`
//!   from [`NttTable::inverse_twiddles`] in the butterfly
//!
//!   ```text
//!   s <- x + y;  s <- s >= 2q ? s - 2q : s (s < 2q)
//!   (x, y) <- (s, mul_shoup_lazy(x - y + 2q, w, w'))
//!   ```
//!
//!   keeping values in `[0, 2q)`. `N^{-1}` is folded into the last stage (one block):
//!   `(x, y) <- (mul_shoup_lazy(x + y, V[0], V'[0]), mul_shoup_lazy(x - y + 2q, V[1], V'[1]))`
//!   where `V[0] = N^{-1}` and `V[1] = psi^{-N/2} * N^{-1}`. The strict form ends with one
//!   conditional subtraction of `q`.
//!
//! `mul_shoup_lazy(a, w, w') = a*w - floor(a*w' / 2^32) * q  (mod 2^32)`, in `[0, 2q)` for any
//! `a < 2^32` ([`Modulus::mul_shoup_lazy`]). All arithmetic is exact `u32` arithmetic, so the
//! strict outputs are canonical residues and any backend implementing the same algorithm
//! (or any other correct negacyclic NTT with the same root and order) matches bit for bit.
//!
//! For `N = 1` there is nothing to transform; it is not supported (`N >= 2`).
//!
//! # Implementations
//!
//! * [`NttTable::forward_reference`] / [`NttTable::inverse_reference`]: the algorithm above as
//!   written, one stage and one butterfly at a time; the reference the others are tested against.
//! * The portable path ([`SimdLevel::Scalar`]): the same stages with fixed-size inner loops the
//!   compiler vectorises for the baseline target; also the path for `N` below two vectors.
//! * Explicit SIMD through `pulp` ([`SimdLevel::Avx2`], [`SimdLevel::Avx512`]; module `x86`):
//!   the same butterflies, blocked for the caches (two stages per pass over the array, the stages
//!   of 4096-word blocks one block at a time, the last `log2(lanes)` stages in registers).
//!
//! [`NttTable::forward`] and the other entry points run the widest level the CPU has
//! ([`SimdLevel::active`]); the `_with` forms take the level. Every path applies the same
//! butterflies to the same values in an order that respects their dependencies, so all of them
//! give the same words, lazy outputs included.

#![expect(
    clippy::indexing_slicing,
    reason = "hot loops over slices whose lengths are checked on entry; table ranges are \
              m..2m with m < N and tables of length N"
)]

use std::fmt;

use crate::error::{Error, Result};
use crate::math::primes;
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

#[cfg(target_arch = "x86_64")]
mod x86;

/// Smallest supported `log2 N`.
pub const MIN_LOG_N: u32 = 1;
/// Largest supported `log2 N`.
pub const MAX_LOG_N: u32 = 17;

/// Checks that `n` is a power of two in `[2^MIN_LOG_N, 2^MAX_LOG_N]` and returns `log2 n`.
fn check_ring_degree(n: usize) -> Result<u32> {
    let err = Error::InvalidRingDegree { n: n as u64, min_log: MIN_LOG_N, max_log: MAX_LOG_N };
    if !n.is_power_of_two() {
        return Err(err);
    }
    let log_n = n.trailing_zeros();
    if !(MIN_LOG_N..=MAX_LOG_N).contains(&log_n) {
        return Err(err);
    }
    Ok(log_n)
}

/// Reverses the low `bits` bits of `x` (higher bits are dropped). `bit_reverse(x, 0) = 0`.
#[inline]
#[must_use]
pub fn bit_reverse(x: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

/// Exponent `e = 2 * bit_reverse(i, log_n) + 1` (odd, in `[1, 2N)`) such that slot `i` of the
/// forward NTT output holds `a(psi^e)`. Only the low `log_n` bits of `i` are used.
#[inline]
#[must_use]
pub fn eval_exponent(i: usize, log_n: u32) -> usize {
    2 * bit_reverse(i, log_n) + 1
}

/// Checks that the Galois element `g` is odd and below `2N`.
fn check_galois_element(g: usize, n: usize) -> Result<()> {
    if g.is_multiple_of(2) || g >= 2 * n {
        return Err(Error::InvalidParameters {
            reason: format!("Galois element {g} is not an odd number below 2N = {}", 2 * n),
        });
    }
    Ok(())
}

/// Slot permutation of the Galois automorphism `X -> X^g` in the evaluation domain.
///
/// For `b(X) = a(X^g)` and the forward NTT outputs `A = NTT(a)`, `B = NTT(b)` (bit-reversed
/// order), `B[i] = A[perm[i]]` for every `i`: slot `i` of `B` is `a(psi^(e_i * g mod 2N))` with
/// `e_i = eval_exponent(i, log_n)`, which is slot `perm[i]` of `A`.
///
/// Errors: `log_n` outside `[1, 17]` ([`Error::InvalidRingDegree`]); `g` even or `g >= 2N`
/// ([`Error::InvalidParameters`]).
pub fn automorphism_permutation(g: usize, log_n: u32) -> Result<Vec<u32>> {
    if !(MIN_LOG_N..=MAX_LOG_N).contains(&log_n) {
        return Err(Error::InvalidRingDegree {
            n: 1u64.checked_shl(log_n).unwrap_or(0),
            min_log: MIN_LOG_N,
            max_log: MAX_LOG_N,
        });
    }
    let n = 1usize << log_n;
    check_galois_element(g, n)?;
    let mask = 2 * n - 1;
    Ok((0..n)
        .map(|i| {
            // e * g is odd, so (e * g mod 2N - 1) / 2 is the bit-reversed slot index.
            let e = (eval_exponent(i, log_n) * g) & mask;
            bit_reverse(e >> 1, log_n) as u32
        })
        .collect())
}

/// Coefficient-domain Galois automorphism `out(X) = input(X^g) mod (X^N + 1)`.
///
/// Coefficient `i` moves to `i * g mod 2N`; an index `k >= N` lands on `k - N` negated
/// (because `X^N = -1`). `N = input.len()` must be a power of two in `[2, 2^17]`, `out` must
/// have the same length, `g` must be odd and below `2N`. Input values in `[0, q)`, output in
/// `[0, q)` (larger inputs give unspecified values, never a panic).
///
/// Errors: [`Error::InvalidRingDegree`], [`Error::DimensionMismatch`],
/// [`Error::InvalidParameters`] (bad `g`).
pub fn automorphism_coeff(input: &[u32], g: usize, m: &Modulus, out: &mut [u32]) -> Result<()> {
    let n = input.len();
    check_ring_degree(n)?;
    if out.len() != n {
        return Err(Error::DimensionMismatch { what: "automorphism output length", expected: n, found: out.len() });
    }
    check_galois_element(g, n)?;
    let q = m.value();
    let mask = 2 * n - 1;
    let mut k = 0usize;
    for &x in input {
        // k = i * g mod 2N, advanced incrementally.
        if k < n {
            out[k] = x;
        } else {
            out[k - n] = if x == 0 { 0 } else { q.wrapping_sub(x) };
        }
        k = (k + g) & mask;
    }
    Ok(())
}

/// Precomputed tables for the negacyclic NTT of one prime `q` and one degree `N`.
///
/// Immutable once built; cheap to share across threads (`Send + Sync`).
#[derive(Clone)]
pub struct NttTable {
    m: Modulus,
    n: usize,
    log_n: u32,
    psi: u32,
    /// `W[k] = psi^bitrev(k)`, `k < N`.
    fwd: Vec<u32>,
    /// Shoup companions of `fwd`.
    fwd_shoup: Vec<u32>,
    /// `V[0] = N^{-1}`, `V[1] = psi^{-N/2} N^{-1}`, `V[k] = psi^{-bitrev(k)}` for `k >= 2`.
    inv: Vec<u32>,
    /// Shoup companions of `inv`.
    inv_shoup: Vec<u32>,
    n_inv: u32,
    n_inv_shoup: u32,
}

impl fmt::Debug for NttTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NttTable")
            .field("q", &self.m.value())
            .field("n", &self.n)
            .field("psi", &self.psi)
            .finish_non_exhaustive()
    }
}

impl NttTable {
    /// Builds the tables for modulus `m` and degree `n`.
    ///
    /// `n` must be a power of two in `[2, 2^17]` ([`Error::InvalidRingDegree`]); `q` must be a
    /// prime with `q = 1 mod 2n` ([`Error::InvalidModulus`]). The root is the canonical
    /// `psi = primes::min_primitive_root_2n(m, n)`.
    pub fn new(m: Modulus, n: usize) -> Result<Self> {
        let log_n = check_ring_degree(n)?;
        let psi = primes::min_primitive_root_2n(&m, n as u64)?;
        let psi_inv = m.inv(psi).ok_or(Error::InvalidModulus {
            modulus: u64::from(m.value()),
            reason: "primitive root is not invertible",
        })?;
        let n_inv = m
            .inv(m.reduce_u64(n as u64))
            .ok_or(Error::InvalidModulus { modulus: u64::from(m.value()), reason: "N is not invertible" })?;
        let powers = |base: u32| {
            let mut p = Vec::with_capacity(n);
            let mut cur = 1 % m.value();
            for _ in 0..n {
                p.push(cur);
                cur = m.mul(cur, base);
            }
            p
        };
        let psi_pows = powers(psi);
        let psi_inv_pows = powers(psi_inv);
        let fwd: Vec<u32> = (0..n).map(|k| psi_pows[bit_reverse(k, log_n)]).collect();
        let mut inv: Vec<u32> = (0..n).map(|k| psi_inv_pows[bit_reverse(k, log_n)]).collect();
        inv[0] = n_inv;
        inv[1] = m.mul(inv[1], n_inv);
        let fwd_shoup = fwd.iter().map(|&w| m.shoup(w)).collect();
        let inv_shoup = inv.iter().map(|&w| m.shoup(w)).collect();
        Ok(Self { m, n, log_n, psi, fwd, fwd_shoup, inv, inv_shoup, n_inv, n_inv_shoup: m.shoup(n_inv) })
    }

    /// Ring degree `N`.
    #[inline]
    #[must_use]
    pub fn n(&self) -> usize {
        self.n
    }

    /// `log2 N`.
    #[inline]
    #[must_use]
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// The modulus `q`.
    #[inline]
    #[must_use]
    pub fn modulus(&self) -> &Modulus {
        &self.m
    }

    /// The primitive `2N`-th root of unity `psi` (the smallest one).
    #[inline]
    #[must_use]
    pub fn psi(&self) -> u32 {
        self.psi
    }

    /// Forward twiddles `(W, W')`, each of length `N`, values in `[0, q)`.
    ///
    /// `W[k] = psi^bit_reverse(k, log_n)` and `W'[k] = floor(W[k] * 2^32 / q)` (Shoup).
    /// Stage with `m` blocks uses `W[m .. 2m]`, block `i` taking `W[m + i]`; `W[0] = 1` is
    /// unused.
    #[must_use]
    pub fn forward_twiddles(&self) -> (&[u32], &[u32]) {
        (&self.fwd, &self.fwd_shoup)
    }

    /// Inverse twiddles `(V, V')`, each of length `N`, values in `[0, q)`, with `N^{-1}` folded
    /// into the last stage.
    ///
    /// `V[k] = psi^{-bit_reverse(k, log_n)}` for `2 <= k < N` (stage with `m >= 2` blocks uses
    /// `V[m .. 2m]`, block `i` taking `V[m + i]`); `V[0] = N^{-1}` multiplies the sums and
    /// `V[1] = psi^{-N/2} * N^{-1}` the differences of the last stage. `V'[k] =
    /// floor(V[k] * 2^32 / q)` (Shoup).
    #[must_use]
    pub fn inverse_twiddles(&self) -> (&[u32], &[u32]) {
        (&self.inv, &self.inv_shoup)
    }

    /// `(N^{-1} mod q, floor(N^{-1} * 2^32 / q))`.
    #[must_use]
    pub fn n_inv(&self) -> (u32, u32) {
        (self.n_inv, self.n_inv_shoup)
    }

    fn check_len(&self, a: &[u32]) -> Result<()> {
        if a.len() == self.n {
            Ok(())
        } else {
            Err(Error::DimensionMismatch { what: "NTT input length", expected: self.n, found: a.len() })
        }
    }

    /// Forward NTT in place: natural order in, bit-reversed order out.
    ///
    /// Input values in `[0, 4q)` (so any canonical residue); output the canonical residues in
    /// `[0, q)`. Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn forward(&self, a: &mut [u32]) -> Result<()> {
        self.check_len(a)?;
        self.transform::<false, true>(a, SimdLevel::active());
        Ok(())
    }

    /// Lazy forward NTT in place: natural order in, bit-reversed order out.
    ///
    /// Input values in `[0, 4q)`; output values in `[0, 4q)`, congruent mod `q` to
    /// [`forward`](Self::forward)'s. Inputs `>= 4q` give unspecified values (never a panic).
    /// Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn forward_lazy(&self, a: &mut [u32]) -> Result<()> {
        self.check_len(a)?;
        self.transform::<false, false>(a, SimdLevel::active());
        Ok(())
    }

    /// Inverse NTT in place (`N^{-1}` included): bit-reversed order in, natural order out.
    ///
    /// Input values in `[0, 2q)` (so any canonical residue); output the canonical residues in
    /// `[0, q)`. Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn inverse(&self, a: &mut [u32]) -> Result<()> {
        self.check_len(a)?;
        self.transform::<true, true>(a, SimdLevel::active());
        Ok(())
    }

    /// Lazy inverse NTT in place (`N^{-1}` included): bit-reversed order in, natural order out.
    ///
    /// Input values in `[0, 2q)` (note: a [`forward_lazy`](Self::forward_lazy) output in
    /// `[0, 4q)` must be reduced first); output values in `[0, 2q)`, congruent mod `q` to
    /// [`inverse`](Self::inverse)'s. Inputs `>= 2q` give unspecified values (never a panic).
    /// Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn inverse_lazy(&self, a: &mut [u32]) -> Result<()> {
        self.check_len(a)?;
        self.transform::<true, false>(a, SimdLevel::active());
        Ok(())
    }

    /// Forward NTT in place at a chosen SIMD level (clamped to what the CPU has): the same
    /// outputs as [`forward`](Self::forward) (strict) or [`forward_lazy`](Self::forward_lazy)
    /// (`strict = false`), word for word, on every level. For tests and benchmarks of the
    /// narrower paths. Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn forward_with(&self, a: &mut [u32], level: SimdLevel, strict: bool) -> Result<()> {
        self.check_len(a)?;
        if strict {
            self.transform::<false, true>(a, level);
        } else {
            self.transform::<false, false>(a, level);
        }
        Ok(())
    }

    /// Inverse NTT in place at a chosen SIMD level (clamped to what the CPU has): the same
    /// outputs as [`inverse`](Self::inverse) (strict) or [`inverse_lazy`](Self::inverse_lazy),
    /// word for word, on every level. Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn inverse_with(&self, a: &mut [u32], level: SimdLevel, strict: bool) -> Result<()> {
        self.check_len(a)?;
        if strict {
            self.transform::<true, true>(a, level);
        } else {
            self.transform::<true, false>(a, level);
        }
        Ok(())
    }

    /// The forward transform exactly as the module documentation states it: one loop per stage,
    /// one butterfly at a time, no blocking and no SIMD. The reference the fast paths are tested
    /// against (same inputs and outputs as [`forward_with`](Self::forward_with)); slow.
    /// Errors with [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn forward_reference(&self, a: &mut [u32], strict: bool) -> Result<()> {
        self.check_len(a)?;
        let q = self.m.value();
        let two_q = q << 1;
        let (mut m, mut t) = (1, self.n >> 1);
        while m < self.n {
            for i in 0..m {
                let (w, ws) = (self.fwd[m + i], self.fwd_shoup[m + i]);
                for j in 2 * i * t..2 * i * t + t {
                    (a[j], a[j + t]) = fwd_butterfly(a[j], a[j + t], w, ws, q, two_q);
                }
            }
            m <<= 1;
            t >>= 1;
        }
        if strict {
            a.iter_mut().for_each(|x| *x = reduce_4q(*x, q, two_q));
        }
        Ok(())
    }

    /// The inverse transform exactly as the module documentation states it (see
    /// [`forward_reference`](Self::forward_reference)); slow. Errors with
    /// [`Error::DimensionMismatch`] if `a.len() != N`.
    pub fn inverse_reference(&self, a: &mut [u32], strict: bool) -> Result<()> {
        self.check_len(a)?;
        let q = self.m.value();
        let two_q = q << 1;
        let (mut m, mut t) = (self.n >> 1, 1);
        while m > 1 {
            for i in 0..m {
                let (w, ws) = (self.inv[m + i], self.inv_shoup[m + i]);
                for j in 2 * i * t..2 * i * t + t {
                    (a[j], a[j + t]) = inv_butterfly(a[j], a[j + t], w, ws, q, two_q);
                }
            }
            m >>= 1;
            t <<= 1;
        }
        for j in 0..t {
            let (x, y) = (a[j], a[j + t]);
            a[j] = mul_shoup_lazy(x.wrapping_add(y), self.inv[0], self.inv_shoup[0], q);
            a[j + t] = mul_shoup_lazy(x.wrapping_add(two_q).wrapping_sub(y), self.inv[1], self.inv_shoup[1], q);
        }
        if strict {
            a.iter_mut().for_each(|x| *x = reduce_2q(*x, q));
        }
        Ok(())
    }

    /// Single entry point of the transforms (`INV`: inverse; `STRICT`: canonical output), on
    /// `level` clamped to what the CPU has. Every path runs the same butterflies on the same
    /// values (see the module documentation), so every level gives the same words.
    #[inline]
    fn transform<const INV: bool, const STRICT: bool>(&self, a: &mut [u32], level: SimdLevel) {
        #[cfg(target_arch = "x86_64")]
        {
            let (q, n) = (self.m.value(), self.n);
            let (w, ws) = if INV { (&self.inv[..], &self.inv_shoup[..]) } else { (&self.fwd[..], &self.fwd_shoup[..]) };
            let level = level.clamp();
            if level >= SimdLevel::Avx512 && n >= 32 {
                if let Some(s) = pulp::x86::V4::try_new() {
                    if INV {
                        x86::inverse_v4(s, a, w, ws, q, STRICT);
                    } else {
                        x86::forward_v4(s, a, w, ws, q, STRICT);
                    }
                    return;
                }
            }
            if level >= SimdLevel::Avx2 && n >= 16 {
                if let Some(s) = pulp::x86::V3::try_new() {
                    if INV {
                        x86::inverse_v3(s, a, w, ws, q, STRICT);
                    } else {
                        x86::forward_v3(s, a, w, ws, q, STRICT);
                    }
                    return;
                }
            }
        }
        let _ = level;
        // The portable path (short arrays, or no AVX2).
        if INV {
            self.inverse_core::<STRICT>(a);
        } else {
            self.forward_core::<STRICT>(a);
        }
    }

    /// Cooley-Tukey stages on `a` (length `N`, checked by the caller).
    #[inline(always)]
    fn forward_core<const STRICT: bool>(&self, a: &mut [u32]) {
        let q = self.m.value();
        let two_q = q << 1;
        let n = self.n;
        let mut m = 1;
        let mut t = n >> 1;
        // All stages but the last (t >= 2); the short-block stages get fixed-size loops that
        // the compiler unrolls and vectorises across the pairs of a block.
        while t >= 2 {
            let w = &self.fwd[m..2 * m];
            let ws = &self.fwd_shoup[m..2 * m];
            match t {
                2 => stage_fixed::<false, 2, 4>(a, w, ws, q, two_q),
                4 => stage_fixed::<false, 4, 8>(a, w, ws, q, two_q),
                8 => stage_fixed::<false, 8, 16>(a, w, ws, q, two_q),
                _ => stage::<false>(a, t, w, ws, q, two_q),
            }
            m <<= 1;
            t >>= 1;
        }
        // Last stage: t = 1, m = N/2 blocks of one pair.
        let w = &self.fwd[m..];
        let ws = &self.fwd_shoup[m..];
        for ((pair, &w), &ws) in a.chunks_exact_mut(2).zip(w).zip(ws) {
            if let [x, y] = pair {
                let (mut u, mut v) = fwd_butterfly(*x, *y, w, ws, q, two_q);
                if STRICT {
                    u = reduce_4q(u, q, two_q);
                    v = reduce_4q(v, q, two_q);
                }
                *x = u;
                *y = v;
            }
        }
    }

    /// Gentleman-Sande stages on `a` (length `N`, checked by the caller).
    #[inline(always)]
    fn inverse_core<const STRICT: bool>(&self, a: &mut [u32]) {
        let q = self.m.value();
        let two_q = q << 1;
        let n = self.n;
        // All stages but the last (m >= 2 blocks).
        let mut m = n >> 1;
        let mut t = 1;
        while m >= 2 {
            let w = &self.inv[m..2 * m];
            let ws = &self.inv_shoup[m..2 * m];
            match t {
                1 => stage_fixed::<true, 1, 2>(a, w, ws, q, two_q),
                2 => stage_fixed::<true, 2, 4>(a, w, ws, q, two_q),
                4 => stage_fixed::<true, 4, 8>(a, w, ws, q, two_q),
                8 => stage_fixed::<true, 8, 16>(a, w, ws, q, two_q),
                _ => stage::<true>(a, t, w, ws, q, two_q),
            }
            m >>= 1;
            t <<= 1;
        }
        // Last stage: one block, N^{-1} folded in.
        let (w0, w0s) = (self.inv[0], self.inv_shoup[0]);
        let (w1, w1s) = (self.inv[1], self.inv_shoup[1]);
        let (xs, ys) = a.split_at_mut(n >> 1);
        let last = |x: &mut [u32], y: &mut [u32]| {
            for (x, y) in x.iter_mut().zip(y.iter_mut()) {
                let sum = x.wrapping_add(*y);
                let diff = x.wrapping_add(two_q).wrapping_sub(*y);
                let mut u = mul_shoup_lazy(sum, w0, w0s, q);
                let mut v = mul_shoup_lazy(diff, w1, w1s, q);
                if STRICT {
                    u = reduce_2q(u, q);
                    v = reduce_2q(v, q);
                }
                *x = u;
                *y = v;
            }
        };
        if xs.len() >= LANES {
            // Groups through local arrays (see LANES).
            for (xc, yc) in xs.chunks_exact_mut(LANES).zip(ys.chunks_exact_mut(LANES)) {
                let mut x = [0u32; LANES];
                let mut y = [0u32; LANES];
                x.copy_from_slice(xc);
                y.copy_from_slice(yc);
                last(&mut x, &mut y);
                xc.copy_from_slice(&x);
                yc.copy_from_slice(&y);
            }
        } else {
            last(xs, ys);
        }
    }
}

/// The butterfly of the forward (`INV = false`) or inverse (`INV = true`) transform.
#[inline(always)]
fn butterfly<const INV: bool>(x: u32, y: u32, w: u32, ws: u32, q: u32, two_q: u32) -> (u32, u32) {
    if INV {
        inv_butterfly(x, y, w, ws, q, two_q)
    } else {
        fwd_butterfly(x, y, w, ws, q, two_q)
    }
}

/// Number of pairs processed together: a fixed-size group lives in local arrays, which the
/// compiler vectorises without run-time alias checks between the two halves of a block.
const LANES: usize = 16;

/// Butterflies on `LANES` pairs `(x[j], y[j])` with one twiddle.
#[inline(always)]
fn butterflies<const INV: bool>(xs: &mut [u32], ys: &mut [u32], w: u32, ws: u32, q: u32, two_q: u32) {
    let mut x = [0u32; LANES];
    let mut y = [0u32; LANES];
    x.copy_from_slice(xs);
    y.copy_from_slice(ys);
    for j in 0..LANES {
        let (u, v) = butterfly::<INV>(x[j], y[j], w, ws, q, two_q);
        x[j] = u;
        y[j] = v;
    }
    xs.copy_from_slice(&x);
    ys.copy_from_slice(&y);
}

/// One stage over blocks of `2t` values (`t` a multiple of [`LANES`]), block `i` using
/// `(w[i], ws[i])` on its pairs `(block[j], block[j + t])`.
#[inline(always)]
fn stage<const INV: bool>(a: &mut [u32], t: usize, w: &[u32], ws: &[u32], q: u32, two_q: u32) {
    for ((block, &w), &ws) in a.chunks_exact_mut(2 * t).zip(w).zip(ws) {
        let (xs, ys) = block.split_at_mut(t);
        if INV {
            // Measured: the plain loop below stays scalar here (the compiler's run-time alias
            // check between the halves fails across blocks), so go through local arrays.
            for (x, y) in xs.chunks_exact_mut(LANES).zip(ys.chunks_exact_mut(LANES)) {
                butterflies::<INV>(x, y, w, ws, q, two_q);
            }
        } else {
            // Measured: the plain loop vectorises, and beats the local arrays on baseline
            // x86-64 (SSE2), whose lack of a 32-bit vector multiply makes the copies costly.
            for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
                let (u, v) = butterfly::<INV>(*x, *y, w, ws, q, two_q);
                *x = u;
                *y = v;
            }
        }
    }
}

/// One stage for a compile-time half-block size `T` (`B = 2T`), so that the compiler unrolls
/// and vectorises the short blocks.
#[inline(always)]
fn stage_fixed<const INV: bool, const T: usize, const B: usize>(
    a: &mut [u32],
    w: &[u32],
    ws: &[u32],
    q: u32,
    two_q: u32,
) {
    for ((block, &w), &ws) in a.chunks_exact_mut(B).zip(w).zip(ws) {
        let mut x = [0u32; T];
        let mut y = [0u32; T];
        x.copy_from_slice(&block[..T]);
        y.copy_from_slice(&block[T..]);
        for j in 0..T {
            let (u, v) = butterfly::<INV>(x[j], y[j], w, ws, q, two_q);
            x[j] = u;
            y[j] = v;
        }
        block[..T].copy_from_slice(&x);
        block[T..].copy_from_slice(&y);
    }
}

/// `a * w mod q` in `[0, 2q)` for any `a: u32` (Shoup, `ws = floor(w 2^32 / q)`).
#[inline(always)]
fn mul_shoup_lazy(a: u32, w: u32, ws: u32, q: u32) -> u32 {
    let quot = ((u64::from(a) * u64::from(ws)) >> 32) as u32;
    a.wrapping_mul(w).wrapping_sub(quot.wrapping_mul(q))
}

/// `x mod q` for `x < 2q`.
#[inline(always)]
fn reduce_2q(x: u32, q: u32) -> u32 {
    // x - q wraps to a value above x exactly when x < q.
    x.min(x.wrapping_sub(q))
}

/// `x mod q` for `x < 4q`.
#[inline(always)]
fn reduce_4q(x: u32, q: u32, two_q: u32) -> u32 {
    reduce_2q(x.min(x.wrapping_sub(two_q)), q)
}

/// Harvey forward butterfly: `x, y < 4q` in, both outputs `< 4q`.
#[inline(always)]
fn fwd_butterfly(x: u32, y: u32, w: u32, ws: u32, q: u32, two_q: u32) -> (u32, u32) {
    let x = x.min(x.wrapping_sub(two_q));
    let u = mul_shoup_lazy(y, w, ws, q);
    (x.wrapping_add(u), x.wrapping_add(two_q).wrapping_sub(u))
}

/// Harvey inverse butterfly: `x, y < 2q` in, both outputs `< 2q`.
#[inline(always)]
fn inv_butterfly(x: u32, y: u32, w: u32, ws: u32, q: u32, two_q: u32) -> (u32, u32) {
    let s = x.wrapping_add(y);
    let s = s.min(s.wrapping_sub(two_q));
    let d = x.wrapping_add(two_q).wrapping_sub(y);
    (s, mul_shoup_lazy(d, w, ws, q))
}

#[cfg(test)]
mod tests;
