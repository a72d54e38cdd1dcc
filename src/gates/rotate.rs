//! The blind rotation (GINX / CGGI), its tables and its scratch space: the hot loop.
//!
//! One step, for the keys `k` of the step with monomial exponents `e_k` (at most two):
//!
//! 1. Signed gadget decomposition of both accumulator polynomials (coefficient form) into
//!    `digits` digit polynomials each (`2 * digits` rows), the lowest `skipped` digits rounded
//!    away (approximate decomposition);
//! 2. one lazy forward NTT per row (outputs in `[0, 4Q)`);
//! 3. for each key with `e_k != 0` and each output component: the inner product of the rows with
//!    the key's rows (NTT domain), accumulated in `u64` without reduction and reduced once
//!    (Barrett, `floor(2^64 / Q)`), multiplied by the evaluations of `X^{e_k} - 1` (a Shoup
//!    product by a table entry) and added to the accumulator's NTT form;
//! 4. one inverse NTT per accumulator polynomial back to coefficient form.
//!
//! So a step costs `2 * digits` forward and 2 inverse NTTs, whatever the number of keys.

#![expect(
    clippy::indexing_slicing,
    reason = "hot loops over buffers whose lengths are fixed by the context (N, rows) and checked on entry"
)]

use crate::error::{Error, Result};
use crate::math::ntt::{eval_exponent, NttTable};
use crate::math::zq::Modulus;

use super::params::{GateParams, LweSecret};

/// Precomputed tables of one validated parameter set.
#[derive(Debug, Clone)]
pub(crate) struct RingTables {
    pub(crate) m: Modulus,
    pub(crate) ntt: NttTable,
    pub(crate) n: usize,
    /// `floor(2^64 / Q)`.
    mu: u64,
    /// `2^32 mod Q` and its Shoup companion.
    pub(crate) radix: (u32, u32),
    /// Shoup companion of 1 (`floor(2^32 / Q)`).
    one_shoup: u32,
    /// `(psi^t - 1) mod Q`, `t < 2N`.
    pub(crate) mono: Vec<u32>,
    mono_shoup: Vec<u32>,
    /// Evaluation exponent of NTT slot `p` (`2 bitrev(p) + 1`).
    pub(crate) exps: Vec<u32>,
}

impl RingTables {
    pub(crate) fn new(p: &GateParams) -> Result<Self> {
        let m = Modulus::new(u64::from(p.ring_q))?;
        let n = p.ring_n();
        let ntt = NttTable::new(m, n)?;
        let psi = ntt.psi();
        let mut mono = Vec::with_capacity(2 * n);
        let mut cur = 1u32;
        for _ in 0..2 * n {
            mono.push(m.sub(cur, 1));
            cur = m.mul(cur, psi);
        }
        let mono_shoup = mono.iter().map(|&w| m.shoup(w)).collect();
        let exps = (0..n).map(|i| eval_exponent(i, p.log_ring) as u32).collect();
        let radix = ((1u64 << 32) % u64::from(p.ring_q)) as u32;
        Ok(Self {
            m,
            ntt,
            n,
            mu: u64::MAX / u64::from(p.ring_q),
            radix: (radix, m.shoup(radix)),
            one_shoup: m.shoup(1),
            mono,
            mono_shoup,
            exps,
        })
    }

    /// `x mod Q` for `x < 2^63`.
    #[inline(always)]
    #[cfg_attr(not(test), expect(dead_code, reason = "the reference of the u32-only reduction, used by its test"))]
    fn reduce64(&self, x: u64) -> u32 {
        let qhat = ((u128::from(x) * u128::from(self.mu)) >> 64) as u64;
        let r = (x - qhat * u64::from(self.m.value())) as u32;
        let q = self.m.value();
        if r >= q {
            r - q
        } else {
            r
        }
    }
}

/// Per-thread scratch space of the blind rotation.
#[derive(Debug, Clone)]
pub(crate) struct Scratch {
    /// Accumulator, coefficient form: `a` then `b`, `N` words each.
    pub(crate) acc: Vec<u32>,
    acc_ntt: Vec<u32>,
    digits: Vec<u32>,
    cur: Vec<i32>,
    w: Vec<u32>,
}

impl Scratch {
    pub(crate) fn new(p: &GateParams) -> Self {
        let n = p.ring_n();
        Self {
            acc: vec![0; 2 * n],
            acc_ntt: vec![0; 2 * n],
            digits: vec![0; p.rows() * n],
            cur: vec![0; n],
            w: vec![0; 2 * n],
        }
    }
}

/// The monomial exponents (mod 2N) of the keys of step `g`; 0 means "no key work".
#[inline]
pub(crate) fn step_exponents(secret: LweSecret, a2n: &[u32], g: usize, two_n: u32) -> [u32; 2] {
    match secret {
        LweSecret::Ternary => {
            let e = a2n[g];
            [e, (two_n - e) & (two_n - 1)]
        }
        LweSecret::Binary => [a2n[g], 0],
        LweSecret::BlockBinary => [a2n[2 * g], a2n[2 * g + 1]],
    }
}

/// Writes `X^{-b} * tv` (negacyclic, `b < 2N`) into `out`.
pub(crate) fn rotate_test_vector(m: &Modulus, tv: &[u32], b: usize, out: &mut [u32]) {
    let n = tv.len();
    for (p, o) in out.iter_mut().enumerate() {
        let k = (p + b) % (2 * n);
        *o = if k < n { tv[k] } else { m.neg(tv[k - n]) };
    }
}

#[inline(always)]
/// Signed gadget decomposition of `poly` (values in `[0, Q)`) into `digits` rows of `out`
/// (residues in `[0, Q)`), rounding away the lowest `skipped` digits.
fn decompose(p: &GateParams, q: u32, poly: &[u32], cur: &mut [i32], out: &mut [u32]) {
    let half_q = q / 2;
    let shift = p.log_bg * p.skipped as u32;
    let round = if shift == 0 { 0 } else { 1i64 << (shift - 1) };
    for (c, &x) in cur.iter_mut().zip(poly) {
        let xc = if x > half_q { i64::from(x) - i64::from(q) } else { i64::from(x) };
        *c = ((xc + round) >> shift) as i32;
    }
    let log_b = p.log_bg;
    let b = 1i32 << log_b;
    let half = b >> 1;
    let n = poly.len();
    for (l, row) in out.chunks_exact_mut(n).enumerate().take(p.digits) {
        let last = l + 1 == p.digits;
        for (o, c) in row.iter_mut().zip(cur.iter_mut()) {
            let d = if last { *c } else { ((*c + half) & (b - 1)) - half };
            *c = (*c - d) >> log_b;
            *o = if d < 0 { (d + q as i32) as u32 } else { d as u32 };
        }
    }
}

/// [`decompose`] under the widest SIMD level (pulp dispatch).
struct Decompose<'a> {
    p: &'a GateParams,
    q: u32,
    poly: &'a [u32],
    cur: &'a mut [i32],
    out: &'a mut [u32],
}

impl pulp::NullaryFnOnce for Decompose<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        decompose(self.p, self.q, self.poly, self.cur, self.out);
    }
}

/// Lanes per block of the fused inner product (two AVX-512 registers of `u64` per component).
const LANES: usize = 16;

/// One key's contribution to the accumulator (NTT domain): for both components, the lazy inner
/// product over the `rows` digit rows accumulated in `u64` lanes held in registers, reduced once,
/// times `X^e - 1`, added.
///
/// The reduction is `u32`-only: `x = hi 2^32 + lo` (`hi < 2^31`), `x mod Q` is represented by
/// `shoup(hi, 2^32 mod Q) + shoup(lo, 1)` in `[0, 4Q)`, then a lazy Shoup product by the
/// monomial's evaluation (`[0, 2Q)`) and a reduced addition: the same canonical residues as a
/// 64-bit reduction followed by a modular product.
struct KeyProduct<'a> {
    t: &'a RingTables,
    rows: usize,
    e: u32,
    key: &'a [u32],
    digits: &'a [u32],
    /// Scratch: the monomial's evaluations and their Shoup companions, `2N` words.
    w: &'a mut [u32],
    acc_ntt: &'a mut [u32],
}

impl pulp::NullaryFnOnce for KeyProduct<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let t = self.t;
        let n = t.n;
        let q = t.m.value();
        let two_q = 2 * q;
        let mask = 2 * n as u32 - 1;
        let (w, ws) = self.w.split_at_mut(n);
        for ((wv, wsv), &x) in w.iter_mut().zip(ws.iter_mut()).zip(&t.exps) {
            let i = (self.e.wrapping_mul(x) & mask) as usize;
            *wv = t.mono[i];
            *wsv = t.mono_shoup[i];
        }
        let (r, rs) = t.radix;
        let one_s = t.one_shoup;
        let (acc0, acc1) = self.acc_ntt.split_at_mut(n);
        let finish = |o: &mut u32, x: u64, w: u32, ws: u32| {
            let hi = (x >> 32) as u32;
            let lo = x as u32;
            let red = shoup_lazy(hi, r, rs, q).wrapping_add(shoup_lazy(lo, 1, one_s, q));
            let y = shoup_lazy(red, w, ws, q);
            let s = o.wrapping_add(y);
            let s = s.min(s.wrapping_sub(two_q));
            *o = s.min(s.wrapping_sub(q));
        };
        for b in 0..n / LANES {
            let p0 = b * LANES;
            let mut a0 = [0u64; LANES];
            let mut a1 = [0u64; LANES];
            for row in 0..self.rows {
                let d = &self.digits[row * n + p0..row * n + p0 + LANES];
                let k0 = &self.key[2 * row * n + p0..2 * row * n + p0 + LANES];
                let k1 = &self.key[(2 * row + 1) * n + p0..(2 * row + 1) * n + p0 + LANES];
                for j in 0..LANES {
                    a0[j] += u64::from(d[j]) * u64::from(k0[j]);
                    a1[j] += u64::from(d[j]) * u64::from(k1[j]);
                }
            }
            let wb = &w[p0..p0 + LANES];
            let wsb = &ws[p0..p0 + LANES];
            let o0 = &mut acc0[p0..p0 + LANES];
            for j in 0..LANES {
                finish(&mut o0[j], a0[j], wb[j], wsb[j]);
            }
            let o1 = &mut acc1[p0..p0 + LANES];
            for j in 0..LANES {
                finish(&mut o1[j], a1[j], wb[j], wsb[j]);
            }
        }
    }
}

/// `a * w mod q` in `[0, 2q)` for any `a < 2^32` (Shoup, branch-free).
#[inline(always)]
fn shoup_lazy(a: u32, w: u32, ws: u32, q: u32) -> u32 {
    let quot = ((u64::from(a) * u64::from(ws)) >> 32) as u32;
    a.wrapping_mul(w).wrapping_sub(quot.wrapping_mul(q))
}

/// Blind rotation of `X^{-b} tv` by `sum a_i s_i` with the bootstrapping key `bk` (layout
/// `[step][key][row][component][N]`, NTT domain, canonical residues). The result is left in
/// `s.acc` (coefficient form, `a` then `b`).
pub(crate) fn blind_rotate(
    t: &RingTables,
    p: &GateParams,
    bk: &[u32],
    a2n: &[u32],
    b2n: u32,
    tv: &[u32],
    s: &mut Scratch,
) -> Result<()> {
    let n = t.n;
    let rows = p.rows();
    let keys = p.secret.keys_per_step();
    let steps = p.steps();
    let key_words = rows * 2 * n;
    if bk.len() != steps * keys * key_words || a2n.len() != p.n || tv.len() != n {
        return Err(Error::DimensionMismatch {
            what: "blind rotation input",
            expected: steps * keys * key_words,
            found: bk.len(),
        });
    }
    let q = t.m.value();
    let two_n = 2 * n as u32;
    let (acc_a, acc_b) = s.acc.split_at_mut(n);
    acc_a.fill(0);
    rotate_test_vector(&t.m, tv, b2n as usize, acc_b);
    s.acc_ntt.copy_from_slice(&s.acc);
    for half in s.acc_ntt.chunks_exact_mut(n) {
        t.ntt.forward(half)?;
    }
    let arch = pulp::Arch::new();
    for g in 0..steps {
        let es = step_exponents(p.secret, a2n, g, two_n);
        if es.iter().all(|&e| e == 0) {
            continue;
        }
        let digit_words = p.digits * n;
        for c in 0..2 {
            let out = &mut s.digits[c * digit_words..(c + 1) * digit_words];
            arch.dispatch(Decompose { p, q, poly: &s.acc[c * n..(c + 1) * n], cur: &mut s.cur, out });
            for row in out.chunks_exact_mut(n) {
                t.ntt.forward_lazy(row)?;
            }
        }
        for (k, &e) in es.iter().enumerate().take(keys) {
            if e == 0 {
                continue;
            }
            let key = &bk[(g * keys + k) * key_words..(g * keys + k + 1) * key_words];
            arch.dispatch(KeyProduct { t, rows, e, key, digits: &s.digits, w: &mut s.w, acc_ntt: &mut s.acc_ntt });
        }
        s.acc.copy_from_slice(&s.acc_ntt);
        for half in s.acc.chunks_exact_mut(n) {
            t.ntt.inverse(half)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gates::params::STD128;

    #[test]
    fn decomposition_recomposes_to_the_rounded_value() {
        let p = GateParams::by_name(STD128).unwrap();
        let q = p.ring_q;
        let n = 8;
        let poly: Vec<u32> = vec![0, 1, q - 1, q / 2, q / 2 + 1, 12_345_678, 64, 65_000_000];
        let mut cur = vec![0i32; n];
        let mut out = vec![0u32; p.digits * n];
        decompose(&p, q, &poly, &mut cur, &mut out);
        let log_b = p.log_bg;
        for j in 0..n {
            let mut v = 0i64;
            for l in 0..p.digits {
                let d = i64::from(out[l * n + j]);
                let d = if d > i64::from(q / 2) { d - i64::from(q) } else { d };
                if l + 1 < p.digits {
                    assert!(d >= -(1 << (log_b - 1)) && d < 1 << (log_b - 1));
                }
                v += d << (log_b * (l as u32 + p.skipped as u32));
            }
            let x = i64::from(poly[j]);
            let xc = if x > i64::from(q / 2) { x - i64::from(q) } else { x };
            let err = (xc - v).rem_euclid(i64::from(q));
            let err = if err > i64::from(q / 2) { err - i64::from(q) } else { err };
            assert!(err.abs() <= 1 << (log_b * p.skipped as u32 - 1), "{j}: {err}");
        }
    }

    #[test]
    fn reduce64_is_exact() {
        let p = GateParams::by_name(STD128).unwrap();
        let t = RingTables::new(&p).unwrap();
        let q = u64::from(p.ring_q);
        for x in [0u64, 1, q - 1, q, q * q, (1 << 62) - 1, 6 * 4 * q * q, 123_456_789_012_345] {
            assert_eq!(u64::from(t.reduce64(x)), x % q, "{x}");
        }
    }
}
