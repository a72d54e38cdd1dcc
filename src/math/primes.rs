//! Deterministic generation of NTT-friendly primes and roots of unity.
//!
//! A prime `q` is NTT-friendly for ring degree `N` when `q = 1 mod 2N`: then `Z_q` holds a
//! primitive `2N`-th root of unity `psi` and `X^N + 1` splits into linear factors.

use crate::error::{Error, Result};
use crate::math::zq::{Modulus, MAX_MODULUS_BITS};

/// Deterministic primality test for `n < 2^32` (Miller-Rabin with bases 2, 7 and 61, which is
/// exact below 4,759,123,141).
#[must_use]
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 61] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    if n >= 4_759_123_141 {
        // Outside the exact range of the three bases: fall back to trial division.
        let mut d = 17u64;
        while d * d <= n {
            if n.is_multiple_of(d) {
                return false;
            }
            d += 2;
        }
        return true;
    }
    let mut d = n - 1;
    let mut s = 0;
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    let mul = |a: u64, b: u64| (u128::from(a) * u128::from(b) % u128::from(n)) as u64;
    'bases: for a in [2u64, 7, 61] {
        let mut x = 1u64;
        let (mut base, mut e) = (a % n, d);
        while e > 0 {
            if e & 1 == 1 {
                x = mul(x, base);
            }
            base = mul(base, base);
            e >>= 1;
        }
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul(x, x);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

/// The `count` largest primes `q < 2^bits` with `q = 1 mod 2N`, in descending order, skipping
/// any listed in `exclude`. Deterministic: the same arguments always give the same primes.
pub fn ntt_primes(bits: u32, n: u64, count: usize, exclude: &[u64]) -> Result<Vec<u64>> {
    if !(2..=MAX_MODULUS_BITS).contains(&bits) {
        return Err(Error::InvalidParameters { reason: format!("prime size {bits} bits is outside [2, 30]") });
    }
    if !n.is_power_of_two() {
        return Err(Error::InvalidRingDegree { n, min_log: 0, max_log: 17 });
    }
    let two_n = 2 * n;
    let upper = 1u64 << bits;
    let mut out = Vec::with_capacity(count.min(4096));
    // Largest candidate of the form k * 2N + 1 below 2^bits.
    let mut candidate = if upper > two_n { ((upper - 2) / two_n) * two_n + 1 } else { 0 };
    let lower = 1u64 << (bits - 1);
    while out.len() < count && candidate > lower {
        if is_prime(candidate) && !exclude.contains(&candidate) {
            out.push(candidate);
        }
        candidate = candidate.saturating_sub(two_n);
    }
    if out.len() < count {
        return Err(Error::NotEnoughPrimes { bits, n, wanted: count, found: out.len() });
    }
    Ok(out)
}

/// The smallest primitive `2N`-th root of unity modulo the prime `q` (`q = 1 mod 2N`).
pub fn min_primitive_root_2n(m: &Modulus, n: u64) -> Result<u32> {
    let q = u64::from(m.value());
    let two_n = 2 * n;
    if !n.is_power_of_two() || (q - 1) % two_n != 0 || !is_prime(q) {
        return Err(Error::InvalidModulus { modulus: q, reason: "not a prime equal to 1 mod 2N" });
    }
    // psi is a primitive 2N-th root iff psi^N = -1 (2N is a power of two).
    let cofactor = (q - 1) / two_n;
    let mut psi = None;
    for g in 2..q {
        let cand = m.pow(g as u32, cofactor);
        if m.pow(cand, n) == m.value() - 1 {
            psi = Some(cand);
            break;
        }
    }
    let psi = psi.ok_or(Error::InvalidModulus { modulus: q, reason: "no primitive 2N-th root" })?;
    // All primitive roots are the odd powers of psi; take the smallest for a canonical choice.
    let psi2 = m.mul(psi, psi);
    let mut cur = psi;
    let mut best = psi;
    for _ in 0..n {
        best = best.min(cur);
        cur = m.mul(cur, psi2);
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primality_matches_trial_division() {
        let slow = |n: u64| n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d));
        for n in 0..20_000u64 {
            assert_eq!(is_prime(n), slow(n), "n = {n}");
        }
        // Strong pseudoprimes to several bases.
        for n in [2_047u64, 1_373_653, 25_326_001, 3_215_031_751, 4_294_967_291] {
            assert_eq!(is_prime(n), slow(n), "n = {n}");
        }
    }

    #[test]
    fn ntt_primes_are_friendly_distinct_descending() {
        for log_n in [10u32, 13, 16, 17] {
            let n = 1u64 << log_n;
            let ps = ntt_primes(30, n, 8, &[]).unwrap();
            assert_eq!(ps.len(), 8);
            for w in ps.windows(2) {
                assert!(w[0] > w[1]);
            }
            for &p in &ps {
                assert!(is_prime(p) && p % (2 * n) == 1 && p < 1 << 30 && p > 1 << 29);
            }
            let skip = ntt_primes(30, n, 3, &ps[..2]).unwrap();
            assert_eq!(skip[0], ps[2]);
        }
    }

    #[test]
    fn not_enough_primes_is_an_error() {
        assert!(matches!(ntt_primes(20, 1 << 16, 50, &[]), Err(Error::NotEnoughPrimes { .. })));
    }

    #[test]
    fn roots_are_primitive_and_minimal() {
        let n = 1u64 << 10;
        for q in ntt_primes(30, n, 3, &[]).unwrap() {
            let m = Modulus::new(q).unwrap();
            let psi = min_primitive_root_2n(&m, n).unwrap();
            assert_eq!(m.pow(psi, n), m.value() - 1);
            assert_eq!(m.pow(psi, 2 * n), 1);
        }
        let m = Modulus::new(65537).unwrap();
        let psi = min_primitive_root_2n(&m, 8).unwrap();
        // Brute force: the smallest element of order 16.
        let want = (2..65537u32).find(|&x| m.pow(x, 8) == 65536).unwrap();
        assert_eq!(psi, want);
    }
}
