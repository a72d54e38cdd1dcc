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
        for x in
            [0u64, 1, u64::MAX, u64::MAX - 1, 1 << 32, (1 << 60) - 1].into_iter().chain((0..1000).map(|_| rng.random()))
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
    for (n, drop_len) in [(8, 1usize), (8, 2), (8, 3), (8, 16), (8, 20), (4096, 1), (4096, 17)] {
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
        let got: Vec<u32> = keep.iter().enumerate().map(|(i, k)| k.add(k.mul(x[i], rc.d_inv()[i]), corr[i])).collect();
        assert_eq!(got, want);
    }
}

/// `(a mod m)` in `[0, m)` for a big integer.
fn big_mod(a: &BigInt, m: u32) -> u32 {
    let m = BigInt::from(m);
    u32::try_from(((a % &m) + &m) % &m).unwrap()
}

/// `corr` straight from the module documentation's definitions, one coefficient at a time
/// in big integers: the digits `c_s`, `delta` and `[-delta * D^{-1}]_{k_i}`.
fn reference(keep: &[Modulus], drop: &[Modulus], t: Option<u32>, rounding: Rounding, x: &[u32], n: usize) -> Vec<u32> {
    let t = t.unwrap_or(1);
    let order: Vec<usize> = match rounding {
        Rounding::Joint => (0..drop.len()).collect(),
        Rounding::PrimeByPrime => (0..drop.len()).rev().collect(),
    };
    let d_big: BigInt = drop.iter().map(|d| BigInt::from(d.value())).product();
    let mut out = vec![0u32; keep.len() * n];
    for c in 0..n {
        let mut delta = BigInt::from(0);
        let mut e = BigInt::from(1);
        for &p in &order {
            let d = drop[p];
            let xs = BigInt::from(x[p * n + c]);
            let y = match rounding {
                // z_s = [x_s t^{-1} (D / d_s)^{-1}]_{d_s}.
                Rounding::Joint => {
                    let other = &d_big / d.value();
                    let inv = d.inv(d.mul(d.reduce_u32(t), big_mod(&other, d.value()))).unwrap();
                    big_mod(&(xs * inv), d.value())
                }
                // y_s = [(x - delta_so_far) / E_s * t^{-1}]_{d_s}.
                Rounding::PrimeByPrime => {
                    let inv = d.inv(d.mul(d.reduce_u32(t), big_mod(&e, d.value()))).unwrap();
                    big_mod(&((xs - &delta) * inv), d.value())
                }
            };
            let cs = d.center(y);
            delta += BigInt::from(t)
                * cs
                * match rounding {
                    Rounding::Joint => &d_big / d.value(),
                    Rounding::PrimeByPrime => e.clone(),
                };
            e *= d.value();
        }
        for (i, k) in keep.iter().enumerate() {
            let d_inv = k.inv(big_mod(&d_big, k.value())).unwrap();
            out[i * n + c] = k.mul(k.neg(big_mod(&delta, k.value())), d_inv);
        }
    }
    out
}

/// `corr` from the GPU's tables ([`RoundingCorrection::weights`], [`RoundingCorrection::triangle`]):
/// the unsigned digits `y_s` with the precomputed high-half terms, as the kernels compute it.
fn from_tables(rc: &RoundingCorrection, x: &[u32], n: usize) -> Vec<u32> {
    let steps = rc.step_moduli();
    let (f, fs) = rc.step_factors();
    let (tn, tns, th) = rc.triangle();
    let (kn, kns, kh) = rc.weights();
    let s_len = steps.len();
    let mut out = vec![0u32; rc.keep_moduli().len() * n];
    for c in 0..n {
        let mut y = vec![0u32; s_len];
        let mut tri = 0;
        for (s, d) in steps.iter().enumerate() {
            let mut v = d.mul_shoup(x[rc.step_positions()[s] * n + c], f[s], fs[s]);
            if rc.rounding() == Rounding::PrimeByPrime {
                for r in 0..s {
                    v = d.add(v, d.mul_shoup(d.reduce_u32(y[r]), tn[tri + r], tns[tri + r]));
                    if y[r] > steps[r].value() / 2 {
                        v = d.add(v, th[tri + r]);
                    }
                }
                tri += s;
            }
            y[s] = v;
        }
        for (i, k) in rc.keep_moduli().iter().enumerate() {
            let mut acc = 0u32;
            for s in 0..s_len {
                let j = i * s_len + s;
                acc = k.add(acc, k.mul_shoup(k.reduce_u32(y[s]), kn[j], kns[j]));
                if y[s] > steps[s].value() / 2 {
                    acc = k.add(acc, kh[j]);
                }
            }
            out[i * n + c] = acc;
        }
    }
    out
}

/// The signed CPU path equals the big-integer definition and the GPU tables' formula, for
/// lengths that are not multiples of a tile or a vector, kept counts that are not multiples
/// of a group, 1 to 33 steps (past [`SIGNED_TERMS`]), both roundings, with and without `t`,
/// moduli from 3 (and an even one) to just below `2^30`, and input words of any value, at
/// every SIMD level the CPU has.
#[test]
fn signed_path_matches_references() {
    let large = moduli(40);
    let small: Vec<Modulus> =
        [3u64, 5, 7, 17, 257, 12_289, 65_537, 786_433].into_iter().map(|q| Modulus::new(q).unwrap()).collect();
    let even = Modulus::new(1 << 20).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for (s_len, keep_len) in [(1usize, 1usize), (1, 6), (2, 5), (2, 43), (3, 4), (15, 9), (15, 43), (30, 7), (33, 5)] {
        // Dropped: some small primes, then large ones; kept: the even modulus, a small prime,
        // then large ones.
        let mut pool = large.clone();
        let n_small = s_len.min(3);
        let mut drop: Vec<Modulus> = small[..n_small].to_vec();
        drop.extend(pool.drain(..s_len - n_small));
        let mut keep = vec![even, small[7]];
        keep.extend(pool.drain(..).take(keep_len.saturating_sub(2)));
        keep.truncate(keep_len);
        if keep_len > 2 {
            // A large prime first, so a group mixes sizes.
            keep.rotate_left(2);
        }
        for t in [None, Some(65_537u32)] {
            // 65537 is a dropped modulus only with more than 6 small ones: never here.
            for rounding in [Rounding::Joint, Rounding::PrimeByPrime] {
                let rc = RoundingCorrection::new(&keep, &drop, t, rounding).unwrap();
                for n in [1usize, 7, 16, 17, 33, 100] {
                    let x: Vec<u32> = (0..s_len * n)
                        .map(|j| {
                            let d = drop[j / n].value();
                            match rng.random_range(0..8) {
                                0 => 0,
                                1 => d - 1,
                                2 => d / 2,
                                3 => d / 2 + 1,
                                4 => u32::MAX - rng.random_range(0..4),
                                5 => rng.random(),
                                _ => rng.random_range(0..d),
                            }
                        })
                        .collect();
                    let want = reference(&keep, &drop, t, rounding, &x, n);
                    let what = format!("S {s_len}, keep {keep_len}, n {n}, t {t:?}, {rounding:?}");
                    assert_eq!(from_tables(&rc, &x, n), want, "tables: {what}");
                    let mut got = vec![0u32; keep.len() * n];
                    rc.apply(&x, n, &mut got).unwrap();
                    assert_eq!(got, want, "apply: {what}");
                    for level in SimdLevel::available() {
                        got.fill(0);
                        rc.apply_with(&x, n, &mut got, level).unwrap();
                        assert_eq!(got, want, "{level:?}: {what}");
                    }
                }
            }
        }
    }
}

/// The signed reducer against `rem_euclid` on edge and random values, for moduli from 2 to
/// just below `2^30`.
#[test]
fn signed_reducer_matches_rem_euclid() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for q in [2u32, 3, 1 << 20, 65_537, (1 << 30) - 35].into_iter().chain(moduli(2).iter().map(Modulus::value)) {
        let red = SignedReducer::new(Modulus::new(u64::from(q)).unwrap());
        for x in [0i64, 1, -1, i64::MAX, i64::MIN, i64::MIN + 1, 1 << 62, -(1 << 62)]
            .into_iter()
            .chain((0..2000).map(|_| rng.random()))
        {
            assert_eq!(red.reduce(x), x.rem_euclid(i64::from(q)) as u64, "{x} mod {q}");
        }
    }
}
