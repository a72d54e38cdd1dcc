//! Modular arithmetic on `u32` residues for moduli `q < 2^30`.
//!
//! Three reductions are offered, each with a strict form (output in `[0, q)`) and a lazy form
//! whose output range is documented on the function:
//!
//! * **Barrett** ([`Modulus::mul`], [`Modulus::reduce_u32`]): for products of two variable
//!   residues. With `k = bits(q)` and `mu = floor(2^(2k) / q) < 2^(k+1) <= 2^31`, every step fits
//!   in `u32` words and the 32x32->64 product, which is what the WGSL kernels compute.
//! * **Shoup** ([`Modulus::mul_shoup`]): multiplication by a constant `w` with the
//!   precomputed `w' = floor(w * 2^32 / q)`; used for twiddles and key-switch constants.
//! * **Montgomery** ([`Montgomery`]): `R = 2^32`, for odd `q` only.
//!
//! WGSL has neither 64-bit integers nor a high-product instruction, so kernels build the
//! 32x32->64 product from 16-bit halves. [`mul_wide_halves`] is the CPU twin of that shader
//! function, written the same way; [`mul_wide`] is the fast native form. Property tests check
//! both against plain `u64` arithmetic, and every strict result here is the canonical residue,
//! so CPU and GPU agree bit for bit whichever product they use.

use crate::error::{Error, Result};

/// Largest supported modulus bound: every modulus is `< 2^30`, so `4q < 2^32`.
pub const MAX_MODULUS_BITS: u32 = 30;

/// The 32x32->64 product `a * b` as `(hi, lo)` words, computed natively.
#[inline]
#[must_use]
pub fn mul_wide(a: u32, b: u32) -> (u32, u32) {
    let p = u64::from(a) * u64::from(b);
    ((p >> 32) as u32, p as u32)
}

/// The 32x32->64 product `a * b` as `(hi, lo)` words, built from 16-bit halves exactly as the
/// shader function `mul_wide` in `shaders/shared/zq.wgsl` does (CPU twin).
#[inline]
#[must_use]
pub fn mul_wide_halves(a: u32, b: u32) -> (u32, u32) {
    let a_lo = a & 0xffff;
    let a_hi = a >> 16;
    let b_lo = b & 0xffff;
    let b_hi = b >> 16;
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    // Middle column: (ll >> 16) + (lh & 0xffff) + (hl & 0xffff) < 3 * 2^16, no overflow.
    let mid = (ll >> 16) + (lh & 0xffff) + (hl & 0xffff);
    let lo = (ll & 0xffff) | (mid << 16);
    let hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
    (hi, lo)
}

/// High word of the product `a * b`.
#[inline]
#[must_use]
pub fn mul_hi(a: u32, b: u32) -> u32 {
    ((u64::from(a) * u64::from(b)) >> 32) as u32
}

/// A modulus `2 <= q < 2^30` with its Barrett constants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulus {
    q: u32,
    /// `k = bits(q)`.
    bits: u32,
    /// `floor(2^(2k) / q)`.
    mu: u32,
}

impl Modulus {
    /// Builds a modulus. Errors if `q < 2` or `q >= 2^30`.
    pub fn new(q: u64) -> Result<Self> {
        if q < 2 {
            return Err(Error::InvalidModulus { modulus: q, reason: "smaller than 2" });
        }
        if q >= 1 << MAX_MODULUS_BITS {
            return Err(Error::InvalidModulus { modulus: q, reason: "not below 2^30" });
        }
        let bits = 64 - q.leading_zeros();
        let mu = (1u64 << (2 * bits)) / q;
        Ok(Self { q: q as u32, bits, mu: mu as u32 })
    }

    /// The modulus value.
    #[inline]
    #[must_use]
    pub const fn value(&self) -> u32 {
        self.q
    }

    /// Bit length of q.
    #[inline]
    #[must_use]
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// Barrett constant `floor(2^(2k) / q)` (uploaded to kernels).
    #[inline]
    #[must_use]
    pub const fn barrett_mu(&self) -> u32 {
        self.mu
    }

    /// `a + b mod q` for `a, b < q`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn add(&self, a: u32, b: u32) -> u32 {
        let s = a + b;
        if s >= self.q {
            s - self.q
        } else {
            s
        }
    }

    /// `a - b mod q` for `a, b < q`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn sub(&self, a: u32, b: u32) -> u32 {
        if a >= b {
            a - b
        } else {
            a + self.q - b
        }
    }

    /// `-a mod q` for `a < q`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn neg(&self, a: u32) -> u32 {
        if a == 0 {
            0
        } else {
            self.q - a
        }
    }

    /// Barrett reduction of `x < 2^(2k)` given as `(hi, lo)`; output in `[0, 3q)`.
    #[inline]
    #[must_use]
    pub fn reduce_wide_lazy(&self, hi: u32, lo: u32) -> u32 {
        let k = self.bits;
        // q1 = x >> (k - 1) < 2^(k+1) <= 2^31.
        let q1 = ((u64::from(hi) << 32 | u64::from(lo)) >> (k - 1)) as u32;
        let (ph, pl) = mul_wide(q1, self.mu);
        // q2 = (q1 * mu) >> (k + 1), which fits in 32 bits.
        let q2 = ((u64::from(ph) << 32 | u64::from(pl)) >> (k + 1)) as u32;
        // x - q2 * q lies in [0, 3q), so the low words suffice.
        lo.wrapping_sub(q2.wrapping_mul(self.q))
    }

    /// Barrett reduction of `x < 2^(2k)`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn reduce_wide(&self, hi: u32, lo: u32) -> u32 {
        let mut r = self.reduce_wide_lazy(hi, lo);
        if r >= self.q {
            r -= self.q;
        }
        if r >= self.q {
            r -= self.q;
        }
        r
    }

    /// `x mod q` for any `x: u32`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn reduce_u32(&self, x: u32) -> u32 {
        // x < 2^32 <= 2^(2k) holds for k >= 16; smaller moduli take the plain path.
        if self.bits >= 16 {
            self.reduce_wide(0, x)
        } else {
            x % self.q
        }
    }

    /// `x mod q` for any `x: u64`; output in `[0, q)`. Host-side helper (not a kernel path).
    #[inline]
    #[must_use]
    pub fn reduce_u64(&self, x: u64) -> u32 {
        (x % u64::from(self.q)) as u32
    }

    /// `x mod q` for any `x: u128`; output in `[0, q)`. Host-side helper.
    #[inline]
    #[must_use]
    pub fn reduce_u128(&self, x: u128) -> u32 {
        (x % u128::from(self.q)) as u32
    }

    /// `x mod q` for a signed `x`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn reduce_i64(&self, x: i64) -> u32 {
        x.rem_euclid(i64::from(self.q)) as u32
    }

    /// Centred representative of `a < q` in `(-q/2, q/2]`.
    #[inline]
    #[must_use]
    pub fn center(&self, a: u32) -> i64 {
        if a > self.q / 2 {
            i64::from(a) - i64::from(self.q)
        } else {
            i64::from(a)
        }
    }

    /// `a * b mod q` for `a, b < q` (Barrett); output in `[0, 3q)`.
    #[inline]
    #[must_use]
    pub fn mul_lazy(&self, a: u32, b: u32) -> u32 {
        let (hi, lo) = mul_wide(a, b);
        self.reduce_wide_lazy(hi, lo)
    }

    /// `a * b mod q` for `a, b < q` (Barrett); output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn mul(&self, a: u32, b: u32) -> u32 {
        let (hi, lo) = mul_wide(a, b);
        self.reduce_wide(hi, lo)
    }

    /// Shoup precomputation `floor(w * 2^32 / q)` for a constant `w < q`.
    #[inline]
    #[must_use]
    pub fn shoup(&self, w: u32) -> u32 {
        ((u64::from(w) << 32) / u64::from(self.q)) as u32
    }

    /// `a * w mod q` for any `a: u32` and constant `w < q` with `w_shoup = shoup(w)`;
    /// output in `[0, 2q)`.
    #[inline]
    #[must_use]
    pub fn mul_shoup_lazy(&self, a: u32, w: u32, w_shoup: u32) -> u32 {
        let quot = mul_hi(a, w_shoup);
        a.wrapping_mul(w).wrapping_sub(quot.wrapping_mul(self.q))
    }

    /// `a * w mod q` for any `a: u32` and constant `w < q`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn mul_shoup(&self, a: u32, w: u32, w_shoup: u32) -> u32 {
        let r = self.mul_shoup_lazy(a, w, w_shoup);
        if r >= self.q {
            r - self.q
        } else {
            r
        }
    }

    /// `a^e mod q` for `a < q`.
    #[must_use]
    pub fn pow(&self, a: u32, mut e: u64) -> u32 {
        let mut base = a;
        let mut acc = 1 % self.q;
        while e > 0 {
            if e & 1 == 1 {
                acc = self.mul(acc, base);
            }
            base = self.mul(base, base);
            e >>= 1;
        }
        acc
    }

    /// Inverse of `a mod q`, if it exists.
    #[must_use]
    pub fn inv(&self, a: u32) -> Option<u32> {
        let (mut r0, mut r1) = (i64::from(self.q), i64::from(a % self.q));
        let (mut s0, mut s1) = (0i64, 1i64);
        while r1 != 0 {
            let quot = r0 / r1;
            (r0, r1) = (r1, r0 - quot * r1);
            (s0, s1) = (s1, s0 - quot * s1);
        }
        (r0 == 1).then(|| self.reduce_i64(s0))
    }
}

/// Montgomery arithmetic with `R = 2^32` for an odd modulus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Montgomery {
    m: Modulus,
    /// `-q^{-1} mod 2^32`.
    q_inv_neg: u32,
    /// `R^2 mod q`.
    r2: u32,
}

impl Montgomery {
    /// Montgomery constants for an odd modulus.
    pub fn new(m: Modulus) -> Result<Self> {
        let q = m.value();
        if q.is_multiple_of(2) {
            return Err(Error::InvalidModulus {
                modulus: u64::from(q),
                reason: "Montgomery form needs an odd modulus",
            });
        }
        // Newton iteration for q^{-1} mod 2^32: each step doubles the correct low bits.
        let mut inv: u32 = q;
        for _ in 0..5 {
            inv = inv.wrapping_mul(2u32.wrapping_sub(q.wrapping_mul(inv)));
        }
        let r2 = ((1u128 << 64) % u128::from(q)) as u32;
        Ok(Self { m, q_inv_neg: inv.wrapping_neg(), r2 })
    }

    /// The underlying modulus.
    #[must_use]
    pub const fn modulus(&self) -> &Modulus {
        &self.m
    }

    /// Montgomery reduction `x * 2^-32 mod q` of `x = (hi, lo) < q * 2^32`; output in `[0, 2q)`.
    #[inline]
    #[must_use]
    pub fn reduce_lazy(&self, hi: u32, lo: u32) -> u32 {
        let m = lo.wrapping_mul(self.q_inv_neg);
        let (mh, _) = mul_wide(m, self.m.value());
        // lo + ml == 0 mod 2^32 by the choice of m, so the addition carries unless lo == 0.
        let carry = u32::from(lo != 0);
        hi + mh + carry
    }

    /// `a * b * 2^-32 mod q` for `a * b < q * 2^32`; output in `[0, 2q)`.
    #[inline]
    #[must_use]
    pub fn mul_lazy(&self, a: u32, b: u32) -> u32 {
        let (hi, lo) = mul_wide(a, b);
        self.reduce_lazy(hi, lo)
    }

    /// `a * b * 2^-32 mod q` for `a * b < q * 2^32`; output in `[0, q)`.
    #[inline]
    #[must_use]
    pub fn mul(&self, a: u32, b: u32) -> u32 {
        let r = self.mul_lazy(a, b);
        if r >= self.m.value() {
            r - self.m.value()
        } else {
            r
        }
    }

    /// `a * 2^32 mod q` for `a < q`.
    #[inline]
    #[must_use]
    pub fn to_mont(&self, a: u32) -> u32 {
        self.mul(a, self.r2)
    }

    /// `a * 2^-32 mod q` for `a < q`.
    #[inline]
    #[must_use]
    pub fn from_mont(&self, a: u32) -> u32 {
        self.mul(a, 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn modulus_strategy() -> impl Strategy<Value = Modulus> {
        (2u64..(1 << 30)).prop_map(|q| Modulus::new(q).unwrap())
    }

    fn odd_modulus_strategy() -> impl Strategy<Value = Modulus> {
        (1u64..(1 << 29)).prop_map(|h| Modulus::new(2 * h + 1).unwrap())
    }

    proptest! {
        #[test]
        fn mul_wide_halves_matches_u64(a: u32, b: u32) {
            let p = u64::from(a) * u64::from(b);
            prop_assert_eq!(mul_wide_halves(a, b), ((p >> 32) as u32, p as u32));
            prop_assert_eq!(mul_wide(a, b), mul_wide_halves(a, b));
        }

        #[test]
        fn add_sub_neg_match_u64(m in modulus_strategy(), a: u32, b: u32) {
            let q = u64::from(m.value());
            let (a, b) = (a % m.value(), b % m.value());
            prop_assert_eq!(u64::from(m.add(a, b)), (u64::from(a) + u64::from(b)) % q);
            prop_assert_eq!(u64::from(m.sub(a, b)), (u64::from(a) + q - u64::from(b)) % q);
            prop_assert_eq!(u64::from(m.neg(a)), (q - u64::from(a)) % q);
        }

        #[test]
        fn barrett_matches_u64(m in modulus_strategy(), a: u32, b: u32) {
            let q = u64::from(m.value());
            let (a, b) = (a % m.value(), b % m.value());
            let want = u64::from(a) * u64::from(b) % q;
            let lazy = m.mul_lazy(a, b);
            prop_assert!(u64::from(lazy) < 3 * q);
            prop_assert_eq!(u64::from(lazy) % q, want);
            prop_assert_eq!(u64::from(m.mul(a, b)), want);
        }

        #[test]
        fn reduce_u32_matches(m in modulus_strategy(), x: u32) {
            prop_assert_eq!(m.reduce_u32(x), x % m.value());
        }

        #[test]
        fn shoup_matches_u64(m in modulus_strategy(), a: u32, w: u32) {
            let q = u64::from(m.value());
            let w = w % m.value();
            let ws = m.shoup(w);
            let want = u64::from(a) * u64::from(w) % q;
            let lazy = m.mul_shoup_lazy(a, w, ws);
            prop_assert!(u64::from(lazy) < 2 * q);
            prop_assert_eq!(u64::from(lazy) % q, want);
            prop_assert_eq!(u64::from(m.mul_shoup(a, w, ws)), want);
        }

        #[test]
        fn montgomery_matches_u64(m in odd_modulus_strategy(), a: u32, b: u32) {
            let q = u64::from(m.value());
            let mont = Montgomery::new(m).unwrap();
            let (a, b) = (a % m.value(), b % m.value());
            let (am, bm) = (mont.to_mont(a), mont.to_mont(b));
            prop_assert_eq!(u64::from(am), (u64::from(a) << 32) % q);
            let prod = mont.mul_lazy(am, bm);
            prop_assert!(u64::from(prod) < 2 * q);
            prop_assert_eq!(u64::from(mont.from_mont(prod % m.value())), u64::from(a) * u64::from(b) % q);
        }

        #[test]
        fn inverse_and_pow(m in odd_modulus_strategy(), a: u32) {
            let a = a % m.value();
            match m.inv(a) {
                Some(i) => prop_assert_eq!(m.mul(a, i), 1 % m.value()),
                None => prop_assert!(num_integer_gcd(u64::from(a), u64::from(m.value())) != 1),
            }
            let q = u64::from(m.value());
            let mut want = 1 % q;
            for _ in 0..5 { want = want * u64::from(a) % q; }
            prop_assert_eq!(u64::from(m.pow(a, 5)), want);
        }
    }

    fn num_integer_gcd(mut a: u64, mut b: u64) -> u64 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }

    #[test]
    fn rejects_bad_moduli() {
        assert!(matches!(Modulus::new(0), Err(Error::InvalidModulus { .. })));
        assert!(matches!(Modulus::new(1), Err(Error::InvalidModulus { .. })));
        assert!(matches!(Modulus::new(1 << 30), Err(Error::InvalidModulus { .. })));
        assert!(Modulus::new((1 << 30) - 35).is_ok());
        assert!(matches!(Montgomery::new(Modulus::new(65536).unwrap()), Err(Error::InvalidModulus { .. })));
    }

    #[test]
    fn barrett_edge_values() {
        for q in [2u64, 3, 17, 65537, 786_433, (1 << 30) - 35, (1 << 29) + 11] {
            let m = Modulus::new(q).unwrap();
            let top = m.value() - 1;
            assert_eq!(u64::from(m.mul(top, top)), (q - 1) * (q - 1) % q);
            assert_eq!(m.reduce_u32(u32::MAX), u32::MAX % m.value());
        }
    }
}
