//! Tests of the NTT tables and transforms: against schoolbook products and evaluation, and every
//! SIMD level against the scalar reference.

use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `b^e mod q` in plain u64 arithmetic (independent of `Modulus`).
fn pow_mod(mut b: u64, mut e: u64, q: u64) -> u64 {
    let mut acc = 1 % q;
    b %= q;
    while e > 0 {
        if e & 1 == 1 {
            acc = acc * b % q;
        }
        b = b * b % q;
        e >>= 1;
    }
    acc
}

/// `a(x) mod q` by Horner's rule in u64.
fn eval(a: &[u32], x: u64, q: u64) -> u64 {
    a.iter().rev().fold(0u64, |acc, &c| (acc * x + u64::from(c)) % q)
}

/// Schoolbook negacyclic product in u128.
fn schoolbook(a: &[u32], b: &[u32], q: u64) -> Vec<u32> {
    let n = a.len();
    let mut acc = vec![0u128; n];
    let mut neg = vec![0u128; n];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            let p = u128::from(x) * u128::from(y);
            if i + j < n {
                acc[i + j] += p;
            } else {
                neg[i + j - n] += p;
            }
        }
    }
    let q = u128::from(q);
    acc.iter().zip(&neg).map(|(&p, &m)| ((p % q + q - m % q) % q) as u32).collect()
}

fn random_poly(rng: &mut ChaCha8Rng, n: usize, bound: u32) -> Vec<u32> {
    (0..n).map(|_| rng.random_range(0..bound)).collect()
}

fn table(q: u64, n: usize) -> NttTable {
    NttTable::new(Modulus::new(q).unwrap(), n).unwrap()
}

/// (q, N) pairs: small textbook primes and 30-bit NTT primes.
fn cases() -> Vec<(u64, usize)> {
    let mut v = vec![(17, 2), (17, 8), (97, 16), (7681, 256), (12289, 2048)];
    for log_n in 1..=12u32 {
        let n = 1usize << log_n;
        for q in primes::ntt_primes(30, n as u64, 2, &[]).unwrap() {
            v.push((q, n));
        }
    }
    v.push((primes::ntt_primes(20, 1 << 10, 1, &[]).unwrap()[0], 1 << 10));
    v
}

#[test]
fn bit_reverse_and_exponents() {
    assert_eq!(bit_reverse(0b0001, 4), 0b1000);
    assert_eq!(bit_reverse(0b0110, 4), 0b0110);
    assert_eq!(bit_reverse(0b1011, 4), 0b1101);
    assert_eq!(bit_reverse(5, 0), 0);
    for bits in 1..=17 {
        for x in [0usize, 1, 2, 3, (1 << bits) - 1] {
            let x = x & ((1 << bits) - 1);
            let naive = (0..bits).fold(0, |acc, b| acc | ((x >> b) & 1) << (bits - 1 - b));
            assert_eq!(bit_reverse(x, bits), naive);
        }
    }
    // Slot exponents are a permutation of the odd residues mod 2N.
    let log_n = 6;
    let mut e: Vec<usize> = (0..64).map(|i| eval_exponent(i, log_n)).collect();
    e.sort_unstable();
    assert_eq!(e, (0..64).map(|k| 2 * k + 1).collect::<Vec<_>>());
}

#[test]
fn table_contents() {
    for (q, n) in [(97u64, 16usize), (7681, 256)] {
        let t = table(q, n);
        assert_eq!(t.n(), n);
        assert_eq!(t.log_n(), n.trailing_zeros());
        assert_eq!(u64::from(t.modulus().value()), q);
        // psi is the smallest x with x^N = -1 (brute force).
        let psi = (2..q).find(|&x| pow_mod(x, n as u64, q) == q - 1).unwrap();
        assert_eq!(u64::from(t.psi()), psi);
        let psi_inv = pow_mod(psi, 2 * n as u64 - 1, q);
        let n_inv = pow_mod(n as u64, q - 2, q);
        let shoup = |w: u32| ((u64::from(w) << 32) / q) as u32;
        let (w, ws) = t.forward_twiddles();
        let (v, vs) = t.inverse_twiddles();
        assert_eq!((w.len(), ws.len(), v.len(), vs.len()), (n, n, n, n));
        let log_n = t.log_n();
        for k in 0..n {
            let r = bit_reverse(k, log_n) as u64;
            assert_eq!(u64::from(w[k]), pow_mod(psi, r, q));
            let want_v = match k {
                0 => n_inv,
                1 => pow_mod(psi_inv, r, q) * n_inv % q,
                _ => pow_mod(psi_inv, r, q),
            };
            assert_eq!(u64::from(v[k]), want_v, "k = {k}");
            assert_eq!(ws[k], shoup(w[k]));
            assert_eq!(vs[k], shoup(v[k]));
        }
        assert_eq!(t.n_inv(), (n_inv as u32, shoup(n_inv as u32)));
    }
}

#[test]
fn round_trips() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for (q, n) in cases() {
        let t = table(q, n);
        let a = random_poly(&mut rng, n, q as u32);
        let mut b = a.clone();
        t.forward(&mut b).unwrap();
        assert!(b.iter().all(|&x| u64::from(x) < q));
        t.inverse(&mut b).unwrap();
        assert_eq!(a, b, "INTT(NTT(a)), q = {q}, N = {n}");
        t.inverse(&mut b).unwrap();
        assert!(b.iter().all(|&x| u64::from(x) < q));
        t.forward(&mut b).unwrap();
        assert_eq!(a, b, "NTT(INTT(a)), q = {q}, N = {n}");
    }
}

#[test]
fn forward_is_evaluation_at_odd_powers() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for (q, n) in cases().into_iter().filter(|&(_, n)| n <= 256) {
        let t = table(q, n);
        let a = random_poly(&mut rng, n, q as u32);
        let mut b = a.clone();
        t.forward(&mut b).unwrap();
        let psi = u64::from(t.psi());
        for (i, &bi) in b.iter().enumerate() {
            let x = pow_mod(psi, eval_exponent(i, t.log_n()) as u64, q);
            assert_eq!(u64::from(bi), eval(&a, x, q), "slot {i}, q = {q}, N = {n}");
        }
    }
}

#[test]
fn product_matches_schoolbook() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for (q, n) in cases().into_iter().filter(|&(_, n)| n <= 1024) {
        let t = table(q, n);
        let m = t.modulus();
        let a = random_poly(&mut rng, n, q as u32);
        let b = random_poly(&mut rng, n, q as u32);
        let (mut fa, mut fb) = (a.clone(), b.clone());
        t.forward(&mut fa).unwrap();
        t.forward(&mut fb).unwrap();
        let mut c: Vec<u32> = fa.iter().zip(&fb).map(|(&x, &y)| m.mul(x, y)).collect();
        t.inverse(&mut c).unwrap();
        assert_eq!(c, schoolbook(&a, &b, q), "q = {q}, N = {n}");
    }
}

/// Two 30-bit NTT primes at every supported degree (one at `N = 2^17`).
fn every_degree() -> Vec<(u64, usize)> {
    (MIN_LOG_N..=MAX_LOG_N)
        .flat_map(|log_n| {
            let n = 1usize << log_n;
            let count = if log_n == MAX_LOG_N { 1 } else { 2 };
            primes::ntt_primes(30, n as u64, count, &[]).unwrap().into_iter().map(move |q| (q, n))
        })
        .collect()
}

/// Every SIMD level gives the reference's words, lazy and strict, forward on inputs in
/// `[0, 4q)` and inverse on inputs in `[0, 2q)` (edges included), at every degree; the
/// default entry points agree with them.
#[test]
fn every_level_matches_the_reference() {
    let levels = SimdLevel::available();
    assert_eq!(levels.first(), Some(&SimdLevel::Scalar));
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    for (q, n) in every_degree() {
        let t = table(q, n);
        let qq = q as u32;
        let fwd_inputs = [random_poly(&mut rng, n, 4 * qq), vec![4 * qq - 1; n]];
        let inv_inputs = [random_poly(&mut rng, n, 2 * qq), vec![2 * qq - 1; n]];
        for strict in [true, false] {
            for a in &fwd_inputs {
                let mut want = a.clone();
                t.forward_reference(&mut want, strict).unwrap();
                for &level in &levels {
                    let mut got = a.clone();
                    t.forward_with(&mut got, level, strict).unwrap();
                    assert!(got == want, "forward, {level:?}, strict {strict}, q = {q}, N = {n}");
                }
                let mut got = a.clone();
                if strict {
                    t.forward(&mut got).unwrap();
                } else {
                    t.forward_lazy(&mut got).unwrap();
                }
                assert!(got == want, "default forward, strict {strict}, q = {q}, N = {n}");
            }
            for a in &inv_inputs {
                let mut want = a.clone();
                t.inverse_reference(&mut want, strict).unwrap();
                for &level in &levels {
                    let mut got = a.clone();
                    t.inverse_with(&mut got, level, strict).unwrap();
                    assert!(got == want, "inverse, {level:?}, strict {strict}, q = {q}, N = {n}");
                }
                let mut got = a.clone();
                if strict {
                    t.inverse(&mut got).unwrap();
                } else {
                    t.inverse_lazy(&mut got).unwrap();
                }
                assert!(got == want, "default inverse, strict {strict}, q = {q}, N = {n}");
            }
        }
    }
}

/// Edge inputs of length `n` built from `values`: each value everywhere, the first two
/// alternating (both phases), the first value with the second at both ends, and every value
/// cycled through the positions.
fn edge_inputs(n: usize, values: &[u32]) -> Vec<Vec<u32>> {
    let (a, b) = (values[0], values[1]);
    let mut v: Vec<Vec<u32>> = values.iter().map(|&x| vec![x; n]).collect();
    v.push((0..n).map(|j| if j % 2 == 0 { a } else { b }).collect());
    v.push((0..n).map(|j| if j % 2 == 1 { a } else { b }).collect());
    v.push((0..n).map(|j| if j == 0 || j + 1 == n { b } else { a }).collect());
    v.push((0..n).map(|j| values[j % values.len()]).collect());
    v
}

/// Every SIMD level gives the reference's words, lazy and strict, on edge residues: 0 and
/// `q - 1` in every arrangement [`edge_inputs`] makes, with the lazy ranges' tops (`q`,
/// `2q - 1`, and for the forward transform `3q`, `4q - 1`), at every degree.
#[test]
fn every_level_matches_the_reference_on_edge_residues() {
    let levels = SimdLevel::available();
    for (q, n) in every_degree() {
        let t = table(q, n);
        let q = q as u32;
        let fwd = edge_inputs(n, &[0, q - 1, q, 2 * q - 1, 3 * q, 4 * q - 1]);
        let inv = edge_inputs(n, &[0, q - 1, q, 2 * q - 1]);
        for strict in [true, false] {
            for (k, a) in fwd.iter().enumerate() {
                let mut want = a.clone();
                t.forward_reference(&mut want, strict).unwrap();
                for &level in &levels {
                    let mut got = a.clone();
                    t.forward_with(&mut got, level, strict).unwrap();
                    assert!(got == want, "forward, {level:?}, strict {strict}, q = {q}, N = {n}, input {k}");
                }
            }
            for (k, a) in inv.iter().enumerate() {
                let mut want = a.clone();
                t.inverse_reference(&mut want, strict).unwrap();
                for &level in &levels {
                    let mut got = a.clone();
                    t.inverse_with(&mut got, level, strict).unwrap();
                    assert!(got == want, "inverse, {level:?}, strict {strict}, q = {q}, N = {n}, input {k}");
                }
            }
        }
        // The all-zero input stays zero; the strict transforms of `q - 1` everywhere and of
        // `2q - 1` (the same residue) everywhere agree.
        let mut zero = vec![0u32; n];
        t.forward_with(&mut zero, SimdLevel::active(), true).unwrap();
        assert!(zero.iter().all(|&x| x == 0));
        let (mut a, mut b) = (vec![q - 1; n], vec![2 * q - 1; n]);
        t.forward(&mut a).unwrap();
        t.forward(&mut b).unwrap();
        assert_eq!(a, b, "forward of q - 1 and of 2q - 1, q = {q}, N = {n}");
    }
}

/// Coefficient `k` of the negacyclic product `a * b` (schoolbook, in u128).
fn schoolbook_coeff(a: &[u32], b: &[u32], k: usize, q: u64) -> u32 {
    let n = a.len();
    let (mut plus, mut minus) = (0u128, 0u128);
    for (i, &x) in a.iter().enumerate() {
        // X^i * X^j = X^k for j = k - i, or -X^k for j = k - i + N.
        let p = u128::from(x);
        if i <= k {
            plus += p * u128::from(b[k - i]);
        } else {
            minus += p * u128::from(b[k + n - i]);
        }
    }
    let q = u128::from(q);
    ((plus % q + q - minus % q) % q) as u32
}

/// `INTT(NTT(a) . NTT(b))` on every level is the negacyclic product at every degree: all
/// coefficients against the schoolbook product up to `N = 2^10`, 64 of them (both ends and
/// random ones, each a full schoolbook sum) above.
#[test]
fn every_level_multiplies_like_schoolbook() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for (q, n) in every_degree() {
        let t = table(q, n);
        let m = t.modulus();
        let a = random_poly(&mut rng, n, q as u32);
        let b = random_poly(&mut rng, n, q as u32);
        let coeffs: Vec<usize> = if n <= 1 << 10 {
            (0..n).collect()
        } else {
            [0, 1, n / 2, n - 2, n - 1].into_iter().chain((0..59).map(|_| rng.random_range(0..n))).collect()
        };
        let want: Vec<u32> = coeffs.iter().map(|&k| schoolbook_coeff(&a, &b, k, q)).collect();
        for level in SimdLevel::available() {
            let (mut fa, mut fb) = (a.clone(), b.clone());
            t.forward_with(&mut fa, level, true).unwrap();
            t.forward_with(&mut fb, level, true).unwrap();
            let mut c: Vec<u32> = fa.iter().zip(&fb).map(|(&x, &y)| m.mul(x, y)).collect();
            t.inverse_with(&mut c, level, true).unwrap();
            let got: Vec<u32> = coeffs.iter().map(|&k| c[k]).collect();
            assert!(got == want, "{level:?}, q = {q}, N = {n}");
        }
    }
}

#[test]
fn the_reference_is_the_schoolbook_product() {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    for (q, n) in cases().into_iter().filter(|&(_, n)| n <= 256) {
        let t = table(q, n);
        let m = t.modulus();
        let a = random_poly(&mut rng, n, q as u32);
        let b = random_poly(&mut rng, n, q as u32);
        let (mut fa, mut fb) = (a.clone(), b.clone());
        t.forward_reference(&mut fa, true).unwrap();
        t.forward_reference(&mut fb, true).unwrap();
        let mut c: Vec<u32> = fa.iter().zip(&fb).map(|(&x, &y)| m.mul(x, y)).collect();
        t.inverse_reference(&mut c, true).unwrap();
        assert_eq!(c, schoolbook(&a, &b, q), "q = {q}, N = {n}");
    }
}

#[test]
fn lazy_forms_agree_and_respect_ranges() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for (q, n) in cases() {
        let t = table(q, n);
        let qq = q as u32;
        let reduce = |v: &[u32]| v.iter().map(|&x| x % qq).collect::<Vec<_>>();
        // Forward: inputs anywhere in [0, 4q), including the top edge.
        let inputs = [random_poly(&mut rng, n, 4 * qq), vec![4 * qq - 1; n], vec![3 * qq; n], vec![0; n]];
        for a in &inputs {
            let mut want = reduce(a);
            t.forward(&mut want).unwrap();
            let mut strict = a.clone();
            t.forward(&mut strict).unwrap();
            assert_eq!(strict, want, "strict forward of [0, 4q) input");
            let mut lazy = a.clone();
            t.forward_lazy(&mut lazy).unwrap();
            assert!(lazy.iter().all(|&x| x < 4 * qq), "forward_lazy range");
            assert_eq!(reduce(&lazy), want, "forward_lazy mod q");
        }
        // Inverse: inputs anywhere in [0, 2q).
        let inputs = [random_poly(&mut rng, n, 2 * qq), vec![2 * qq - 1; n], vec![qq; n]];
        for a in &inputs {
            let mut want = reduce(a);
            t.inverse(&mut want).unwrap();
            let mut strict = a.clone();
            t.inverse(&mut strict).unwrap();
            assert_eq!(strict, want, "strict inverse of [0, 2q) input");
            let mut lazy = a.clone();
            t.inverse_lazy(&mut lazy).unwrap();
            assert!(lazy.iter().all(|&x| x < 2 * qq), "inverse_lazy range");
            assert_eq!(reduce(&lazy), want, "inverse_lazy mod q");
        }
    }
}

#[test]
fn constant_and_monomial_transforms() {
    // NTT(c) = c everywhere; NTT(X) at slot i = psi^(e_i).
    let (q, n) = (7681u64, 256usize);
    let t = table(q, n);
    let mut c = vec![0u32; n];
    c[0] = 1234;
    t.forward(&mut c).unwrap();
    assert!(c.iter().all(|&x| x == 1234));
    let mut x = vec![0u32; n];
    x[1] = 1;
    t.forward(&mut x).unwrap();
    for (i, &xi) in x.iter().enumerate() {
        let e = eval_exponent(i, t.log_n()) as u64;
        assert_eq!(u64::from(xi), pow_mod(u64::from(t.psi()), e, q));
    }
}

fn galois_elements(n: usize) -> Vec<usize> {
    let two_n = 2 * n;
    let mut gs = vec![1, two_n - 1];
    let (mut p3, mut p5) = (1usize, 1usize);
    for _ in 0..6 {
        p3 = p3 * 3 % two_n;
        p5 = p5 * 5 % two_n;
        gs.push(p3);
        gs.push(p5);
        gs.push(two_n - p5);
    }
    gs
}

#[test]
fn automorphism_coeff_matches_evaluation() {
    // b(X) = a(X^g) iff b(x) = a(x^g) at every root x = psi^e of X^N + 1.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for (q, n) in [(17u64, 8usize), (97, 16), (7681, 64)] {
        let m = Modulus::new(q).unwrap();
        let psi = u64::from(table(q, n).psi());
        let a = random_poly(&mut rng, n, q as u32);
        for g in galois_elements(n) {
            let mut b = vec![0u32; n];
            automorphism_coeff(&a, g, &m, &mut b).unwrap();
            assert!(b.iter().all(|&x| u64::from(x) < q));
            for e in (1..2 * n as u64).step_by(2) {
                let x = pow_mod(psi, e, q);
                let xg = pow_mod(psi, e * g as u64, q);
                assert_eq!(eval(&b, x, q), eval(&a, xg, q), "g = {g}, e = {e}");
            }
        }
    }
}

#[test]
fn automorphism_permutation_matches_coeff_path() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for (q, n) in cases().into_iter().filter(|&(_, n)| (4..=4096).contains(&n)) {
        let t = table(q, n);
        let a = random_poly(&mut rng, n, q as u32);
        let mut fa = a.clone();
        t.forward(&mut fa).unwrap();
        for g in galois_elements(n) {
            let perm = automorphism_permutation(g, t.log_n()).unwrap();
            assert_eq!(perm.len(), n);
            let mut b = vec![0u32; n];
            automorphism_coeff(&a, g, t.modulus(), &mut b).unwrap();
            t.forward(&mut b).unwrap();
            let permuted: Vec<u32> = perm.iter().map(|&p| fa[p as usize]).collect();
            assert_eq!(b, permuted, "g = {g}, q = {q}, N = {n}");
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let t = table(97, 16);
    for len in [0usize, 15, 17, 32] {
        let mut a = vec![0u32; len];
        let dim = |r: Result<()>| matches!(r, Err(Error::DimensionMismatch { .. }));
        assert!(dim(t.forward(&mut a)));
        assert!(dim(t.forward_lazy(&mut a)));
        assert!(dim(t.inverse(&mut a)));
        assert!(dim(t.inverse_lazy(&mut a)));
    }
    let m = Modulus::new(97).unwrap();
    for n in [0usize, 1, 3, 12, 1 << 18] {
        assert!(matches!(NttTable::new(m, n), Err(Error::InvalidRingDegree { .. })));
    }
    // 97 = 1 mod 32 but not 1 mod 64; 91 = 7 * 13 is not prime; 65 = 1 mod 64 is not prime.
    assert!(matches!(NttTable::new(m, 32), Err(Error::InvalidModulus { .. })));
    for q in [91u64, 65] {
        assert!(matches!(NttTable::new(Modulus::new(q).unwrap(), 2), Err(Error::InvalidModulus { .. })));
    }
    // Galois elements.
    for g in [0usize, 2, 32, 33, 1000] {
        assert!(matches!(automorphism_permutation(g, 4), Err(Error::InvalidParameters { .. })));
        let (a, mut b) = (vec![0u32; 16], vec![0u32; 16]);
        assert!(matches!(automorphism_coeff(&a, g, &m, &mut b), Err(Error::InvalidParameters { .. })));
    }
    for log_n in [0u32, 18, 64, 200] {
        assert!(matches!(automorphism_permutation(1, log_n), Err(Error::InvalidRingDegree { .. })));
    }
    let (a, mut b) = (vec![0u32; 16], vec![0u32; 8]);
    assert!(matches!(automorphism_coeff(&a, 3, &m, &mut b), Err(Error::DimensionMismatch { .. })));
    let (a, mut b) = (vec![0u32; 12], vec![0u32; 12]);
    assert!(matches!(automorphism_coeff(&a, 3, &m, &mut b), Err(Error::InvalidRingDegree { .. })));
}

#[test]
fn out_of_range_values_do_not_panic() {
    let t = table(97, 16);
    let mut a = vec![u32::MAX; 16];
    t.forward(&mut a).unwrap();
    let mut a = vec![u32::MAX; 16];
    t.forward_lazy(&mut a).unwrap();
    let mut a = vec![u32::MAX; 16];
    t.inverse(&mut a).unwrap();
    let mut a = vec![u32::MAX; 16];
    t.inverse_lazy(&mut a).unwrap();
    let mut b = vec![0u32; 16];
    automorphism_coeff(&a, 3, t.modulus(), &mut b).unwrap();
}

#[test]
fn largest_degree_works() {
    let n = 1usize << 17;
    let q = primes::ntt_primes(30, n as u64, 1, &[]).unwrap()[0];
    let t = table(q, n);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let a = random_poly(&mut rng, n, q as u32);
    let mut b = a.clone();
    t.forward(&mut b).unwrap();
    let psi = u64::from(t.psi());
    for i in [0usize, 1, 2, 12345, n / 2, n - 1] {
        let x = pow_mod(psi, eval_exponent(i, t.log_n()) as u64, q);
        assert_eq!(u64::from(b[i]), eval(&a, x, q), "slot {i}");
    }
    t.inverse(&mut b).unwrap();
    assert_eq!(a, b);
}

#[derive(serde::Deserialize)]
struct KatCase {
    n: usize,
    q: u64,
    psi: u32,
    input: Vec<u32>,
    forward: Vec<u32>,
}

#[derive(serde::Deserialize)]
struct Kat {
    cases: Vec<KatCase>,
}

#[test]
fn known_answer_vectors() {
    let kat: Kat = serde_json::from_str(include_str!("../../../tests/data/ntt_kat.json")).unwrap();
    let sizes: Vec<(usize, u64)> = kat.cases.iter().map(|c| (c.n, c.q)).collect();
    let q1024 = primes::ntt_primes(30, 1024, 1, &[]).unwrap()[0];
    assert_eq!(sizes, vec![(16, 7681), (1024, q1024)]);
    for c in &kat.cases {
        let t = table(c.q, c.n);
        assert_eq!(t.psi(), c.psi);
        let mut a = c.input.clone();
        t.forward(&mut a).unwrap();
        assert_eq!(a, c.forward, "forward, N = {}", c.n);
        t.inverse(&mut a).unwrap();
        assert_eq!(a, c.input, "inverse, N = {}", c.n);
    }
}
