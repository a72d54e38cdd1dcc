//! Tests of the RNS basis, base conversion and scale-down: against big-integer arithmetic, and
//! every SIMD level against the scalar reference.

use super::*;
use crate::math::primes::ntt_primes;
use num_traits::{One, Zero};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const N_RING: u64 = 1 << 10;

fn moduli(values: &[u64]) -> Vec<Modulus> {
    values.iter().map(|&q| Modulus::new(q).unwrap()).collect()
}

fn primes(count: usize, exclude: &[u64]) -> Vec<u64> {
    ntt_primes(30, N_RING, count, exclude).unwrap()
}

fn product(ms: &[Modulus]) -> BigUint {
    ms.iter().map(|m| BigUint::from(m.value())).product()
}

/// Uniform-ish value in `[0, bound)` from random 32-bit digits.
fn random_below(rng: &mut ChaCha8Rng, bound: &BigUint) -> BigUint {
    let words = (bound.bits() / 32 + 2) as usize;
    let digits = (0..words).map(|_| rng.random::<u32>()).collect::<Vec<_>>();
    BigUint::new(digits) % bound
}

fn centre(x: BigUint, q: &BigUint) -> BigInt {
    if &x * 2u32 > *q {
        BigInt::from(x) - BigInt::from(q.clone())
    } else {
        BigInt::from(x)
    }
}

/// Residues by plain big-integer division.
fn residues(x: &BigInt, ms: &[Modulus]) -> Vec<u32> {
    ms.iter()
        .map(|m| {
            let q = BigInt::from(m.value());
            let r = ((x % &q) + &q) % &q;
            u32::try_from(&r).unwrap()
        })
        .collect()
}

/// Limb-major residues of `xs` (one value per coefficient).
fn limbs(xs: &[BigInt], ms: &[Modulus]) -> Vec<u32> {
    let per = xs.iter().map(|x| residues(x, ms)).collect::<Vec<_>>();
    let mut out = vec![0; ms.len() * xs.len()];
    for (k, r) in per.iter().enumerate() {
        for (i, &v) in r.iter().enumerate() {
            out[i * xs.len() + k] = v;
        }
    }
    out
}

fn column(data: &[u32], limbs: usize, n: usize, k: usize) -> Vec<u32> {
    (0..limbs).map(|i| data[i * n + k]).collect()
}

fn int(x: &BigUint) -> BigInt {
    BigInt::from(x.clone())
}

#[test]
fn crt_round_trips_unsigned_and_signed() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let all = primes(20, &[]);
    for count in 1..=20 {
        let ms = moduli(&all[..count]);
        let basis = RnsBasis::new(&ms).unwrap();
        let q = product(&ms);
        assert_eq!(basis.product(), &q);
        assert_eq!(basis.len(), count);
        assert!(!basis.is_empty());
        let log2 = basis.log2_product();
        assert!((log2 - q.bits() as f64).abs() <= 1.0, "{log2} vs {}", q.bits());
        let mut samples = (0..20).map(|_| random_below(&mut rng, &q)).collect::<Vec<_>>();
        samples.extend([BigUint::zero(), BigUint::one(), &q - 1u32, &q / 2u32]);
        samples.push(&q / 2u32 + 1u32);
        for x in samples {
            let want = residues(&int(&x), &ms);
            assert_eq!(basis.decompose(&x), want);
            assert_eq!(basis.reconstruct(&want).unwrap(), x);
            // decompose accepts values beyond Q.
            let big = &x + &q * 12345u32;
            assert_eq!(basis.decompose(&big), want);
            // Signed.
            let c = centre(x.clone(), &q);
            assert!(BigInt::from(2u32) * &c <= int(&q) && BigInt::from(2u32) * &c > -int(&q));
            assert_eq!(basis.decompose_signed(&c), want);
            assert_eq!(basis.reconstruct_centered(&want).unwrap(), c);
            let neg = -&c;
            assert_eq!(basis.decompose_signed(&neg), residues(&neg, &ms));
        }
    }
}

#[test]
fn centred_boundary_for_even_product() {
    // Q = 4 * 9 = 36: Q/2 = 18 stays positive, 19 maps to -17.
    let basis = RnsBasis::new(&moduli(&[4, 9])).unwrap();
    for v in 0..36i64 {
        let want = if v > 18 { v - 36 } else { v };
        let r = basis.decompose_signed(&BigInt::from(v));
        assert_eq!(r, vec![(v % 4) as u32, (v % 9) as u32]);
        assert_eq!(basis.reconstruct_centered(&r).unwrap(), BigInt::from(want));
    }
}

#[test]
fn basis_errors() {
    assert!(matches!(RnsBasis::new(&[]), Err(Error::InvalidModulus { modulus: 0, .. })));
    assert!(matches!(RnsBasis::new(&moduli(&[6, 35, 15])), Err(Error::InvalidModulus { .. })));
    let p = primes(2, &[]);
    assert!(matches!(RnsBasis::new(&moduli(&[p[0], p[1], p[0]])), Err(Error::InvalidModulus { .. })));
    let basis = RnsBasis::new(&moduli(&p)).unwrap();
    assert!(matches!(basis.reconstruct(&[1]), Err(Error::DimensionMismatch { expected: 2, found: 1, .. })));
    assert!(matches!(basis.reconstruct(&[1, p[1] as u32]), Err(Error::ResidueOutOfRange { limb: 1, index: 0 })));
    assert!(basis.reconstruct_centered(&[0, 0, 0]).is_err());
}

/// Independent centred fast base conversion: returns `u` with
/// `sum_i c_i * qhat_i = x + u * Q`, `c_i` the centred `[x qhat_i^-1]_{q_i}`.
fn fast_conv_u(x: &BigUint, from: &[Modulus]) -> BigInt {
    let q = product(from);
    let mut s = BigInt::zero();
    for m in from {
        let qi = BigUint::from(m.value());
        let qhat = &q / &qi;
        let inv = (&qhat % &qi).modinv(&qi).unwrap();
        let y = (x % &qi) * inv % &qi;
        let c = if &y * 2u32 > qi { int(&y) - int(&qi) } else { int(&y) };
        s += c * int(&qhat);
    }
    let diff = s - int(x);
    assert!((&diff % int(&q)).is_zero());
    diff / int(&q)
}

/// `|u| <= (L + 1) / 2` for `L` centred digits.
fn u_in_range(u: &BigInt, len: usize) -> bool {
    u.magnitude() <= &BigUint::from(len.div_ceil(2))
}

fn check_base_conversion(from: &[Modulus], to: &[Modulus], rng: &mut ChaCha8Rng) {
    let n = 16;
    let conv = BaseConverter::new(from, to).unwrap();
    let q = product(from);
    let mut xs = (0..n - 3).map(|_| random_below(rng, &q)).collect::<Vec<_>>();
    xs.extend([BigUint::zero(), &q - 1u32, &q / 2u32]);
    let input = limbs(&xs.iter().map(int).collect::<Vec<_>>(), from);
    let mut out = vec![0u32; to.len() * n];
    conv.convert(&input, n, &mut out).unwrap();
    for (k, x) in xs.iter().enumerate() {
        let u = fast_conv_u(x, from);
        assert!(u_in_range(&u, from.len()), "u = {u}");
        let want = residues(&(int(x) + &u * int(&q)), to);
        assert_eq!(column(&out, to.len(), n, k), want, "coefficient {k}");
    }
}

#[test]
fn base_conversion_matches_big_integers() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let all = primes(60, &[]);
    for (l, m) in [(1usize, 1usize), (1, 3), (3, 1), (4, 5), (15, 2), (16, 3), (20, 20), (31, 2), (45, 4)] {
        let from = moduli(&all[..l]);
        let to = moduli(&all[l..l + m]);
        check_base_conversion(&from, &to, &mut rng);
    }
    // Targets smaller than the sources, composite, even, or shared with the source basis.
    let from = moduli(&all[..5]);
    let to = moduli(&[2, 3, 65536, 1_000_000, 17, all[2], (1 << 30) - 1]);
    check_base_conversion(&from, &to, &mut rng);
    // Small composite source moduli.
    let from = moduli(&[9, 16, 25, 7, 11 * 13]);
    let to = moduli(&[all[0], 3, 1 << 29]);
    check_base_conversion(&from, &to, &mut rng);
}

#[test]
fn base_conversion_worst_case_accumulators() {
    // All y_i = q_i - 1 and all table entries large: exercises the chunked reduction.
    let all = primes(40, &[]);
    let from = moduli(&all[..38]);
    let to = moduli(&all[38..]);
    let conv = BaseConverter::new(&from, &to).unwrap();
    let q = product(&from);
    // x with y_i = q_i - 1 for all i: x = sum_i (q_i - 1) * qhat_i mod Q.
    let mut x = BigUint::zero();
    for m in &from {
        let qhat = &q / m.value();
        x += &qhat * (m.value() - 1);
    }
    x %= &q;
    // Every y_i = q_i - 1 is centred to -1: the conversion yields -sum_i qhat_i.
    let s: BigInt = -from.iter().map(|m| int(&(&q / m.value()))).sum::<BigInt>();
    let u = fast_conv_u(&x, &from);
    assert_eq!(&s - int(&x), &u * int(&q));
    let input = residues(&int(&x), &from);
    let mut out = vec![0u32; to.len()];
    conv.convert(&input, 1, &mut out).unwrap();
    assert_eq!(out, residues(&s, &to));
}

/// Random words below each limb's modulus, limb-major, with some arbitrary `u32` words (read
/// mod q) and, with `worst`, every word `q - 1`.
fn words(rng: &mut ChaCha8Rng, ms: &[Modulus], n: usize, worst: bool) -> Vec<u32> {
    ms.iter()
        .flat_map(|m| (0..n).map(|_| m.value()).collect::<Vec<_>>())
        .enumerate()
        .map(|(i, q)| match (worst, i % 11) {
            (true, _) => q - 1,
            (false, 0) => rng.random(),
            (false, 1) => u32::MAX,
            _ => rng.random_range(0..q),
        })
        .collect()
}

/// Shapes `(from, to, n)`: one to many limbs (more than ROWS_PER_REDUCTION, so the kernels
/// reduce between chunks), coefficient counts that are not whole vectors, blocks or tiles.
fn shapes() -> Vec<(usize, usize, usize)> {
    vec![
        (1, 1, 1),
        (1, 3, 200),
        (2, 5, 17),
        (3, 1, 64),
        (15, 43, 300),
        (15, 4, 1030),
        (16, 3, 97),
        (31, 2, 129),
        (45, 3, 40),
    ]
}

#[test]
fn every_level_converts_like_the_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let all = moduli(&primes(60, &[]));
    let mut cases: Vec<(Vec<Modulus>, Vec<Modulus>, usize)> =
        shapes().into_iter().map(|(l, m, n)| (all[..l].to_vec(), all[l..l + m].to_vec(), n)).collect();
    // Small, composite and even moduli on either side.
    cases.push((
        all[..5].to_vec(),
        moduli(&[2, 3, 65536, 1_000_000, 17, u64::from(all[2].value()), (1 << 30) - 1]),
        33,
    ));
    cases.push((moduli(&[9, 16, 25, 7, 11 * 13]), moduli(&[u64::from(all[0].value()), 3, 1 << 29]), 70));
    for (from, to, n) in cases {
        let conv = BaseConverter::new(&from, &to).unwrap();
        for worst in [false, true] {
            let input = words(&mut rng, &from, n, worst);
            let mut want = vec![0u32; to.len() * n];
            conv.convert_reference(&input, n, &mut want).unwrap();
            for level in SimdLevel::available() {
                let mut got = vec![7u32; to.len() * n];
                conv.convert_with(&input, n, &mut got, level).unwrap();
                assert!(got == want, "{level:?}, {} -> {} limbs, n = {n}, worst {worst}", from.len(), to.len());
            }
            let mut got = vec![7u32; to.len() * n];
            conv.convert(&input, n, &mut got).unwrap();
            assert!(got == want, "default level");
        }
    }
}

#[test]
fn every_level_scales_down_like_the_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let all = moduli(&primes(60, &[]));
    for (l, m, n) in shapes() {
        let (drop, keep) = (&all[..l], &all[l..l + m]);
        for t in [None, Some(65537), Some(786_433), Some(2)] {
            let sd = ScaleDown::new(keep, drop, t).unwrap();
            for worst in [false, true] {
                let x_drop = words(&mut rng, drop, n, worst);
                let x_keep = words(&mut rng, keep, n, worst);
                let mut want = x_keep.clone();
                sd.apply_in_place_reference(&mut want, &x_drop, n).unwrap();
                for level in SimdLevel::available() {
                    let mut got = x_keep.clone();
                    sd.apply_in_place_with(&mut got, &x_drop, n, level).unwrap();
                    assert!(got == want, "{level:?}, keep {m}, drop {l}, n = {n}, t {t:?}, worst {worst}");
                }
                for level in SimdLevel::available() {
                    let mut got = vec![0u32; m * n];
                    sd.apply_with(&x_keep, &x_drop, n, &mut got, level).unwrap();
                    assert!(got == want, "apply, {level:?}");
                }
                let mut got = vec![0u32; m * n];
                sd.apply(&x_keep, &x_drop, n, &mut got).unwrap();
                assert!(got == want, "apply, default level");
            }
        }
    }
}

/// Edge residue patterns, limb-major over `ms` with `n` coefficients: every word 0, every word
/// `q - 1`, the two alternating (offset by limb, so each column mixes them), 0 with one `q - 1`
/// at the first and last coefficient, and `q - 1` with one 0 there.
fn edge_words(ms: &[Modulus], n: usize) -> Vec<Vec<u32>> {
    let fill = |f: &dyn Fn(u32, usize, usize) -> u32| -> Vec<u32> {
        ms.iter()
            .enumerate()
            .flat_map(|(i, m)| (0..n).map(move |j| (m.value(), i, j)))
            .map(|(q, i, j)| f(q, i, j))
            .collect()
    };
    let ends = |j: usize| j == 0 || j + 1 == n;
    vec![
        fill(&|_, _, _| 0),
        fill(&|q, _, _| q - 1),
        fill(&|q, i, j| if (i + j) % 2 == 0 { 0 } else { q - 1 }),
        fill(&|q, i, j| if (i + j) % 2 == 1 { 0 } else { q - 1 }),
        fill(&|q, _, j| if ends(j) { q - 1 } else { 0 }),
        fill(&|q, _, j| if ends(j) { 0 } else { q - 1 }),
    ]
}

/// Limb counts `(from or drop, to or keep)`: one limb, a few, around a reduction chunk
/// ([`ROWS_PER_REDUCTION`] and [`MAX_PRODUCTS`]), and past two chunks; and coefficient counts
/// below, at and past a vector of either width, and past one tile.
const EDGE_LIMBS: [(usize, usize); 10] =
    [(1, 1), (1, 4), (2, 1), (3, 7), (8, 2), (14, 3), (15, 1), (16, 5), (17, 2), (33, 3)];
const EDGE_N: [usize; 6] = [1, 7, 8, 16, 33, 1100];

/// Base conversion on every SIMD level gives the scalar reference's words on edge residues
/// (0 and `q - 1` in every arrangement [`edge_words`] makes), at several limb counts.
#[test]
fn every_level_converts_edge_residues_like_the_reference() {
    let all = moduli(&primes(50, &[]));
    for (l, m) in EDGE_LIMBS {
        let (from, to) = (&all[..l], &all[l..l + m]);
        let conv = BaseConverter::new(from, to).unwrap();
        for n in EDGE_N {
            for (k, input) in edge_words(from, n).into_iter().enumerate() {
                let mut want = vec![0u32; m * n];
                conv.convert_reference(&input, n, &mut want).unwrap();
                if k == 0 {
                    assert!(want.iter().all(|&w| w == 0), "zero converts to zero");
                }
                for level in SimdLevel::available() {
                    let mut got = vec![u32::MAX; m * n];
                    conv.convert_with(&input, n, &mut got, level).unwrap();
                    assert!(got == want, "{level:?}, {l} -> {m} limbs, n = {n}, pattern {k}");
                }
            }
        }
    }
}

/// Scale-down (in place and out of place, CKKS and BGV) on every SIMD level gives the scalar
/// reference's words on edge residues in both the kept and the dropped limbs, at several limb
/// counts.
#[test]
fn every_level_scales_down_edge_residues_like_the_reference() {
    let all = moduli(&primes(50, &[]));
    for (l, m) in EDGE_LIMBS {
        let (drop, keep) = (&all[..l], &all[l..l + m]);
        for t in [None, Some(65537)] {
            let sd = ScaleDown::new(keep, drop, t).unwrap();
            for n in EDGE_N {
                let drops = edge_words(drop, n);
                let keeps = edge_words(keep, n);
                for (a, x_drop) in drops.iter().enumerate() {
                    for (b, x_keep) in keeps.iter().enumerate() {
                        let mut want = x_keep.clone();
                        sd.apply_in_place_reference(&mut want, x_drop, n).unwrap();
                        if a == 0 && b == 0 {
                            assert!(want.iter().all(|&w| w == 0), "zero scales to zero");
                        }
                        for level in SimdLevel::available() {
                            let mut got = x_keep.clone();
                            sd.apply_in_place_with(&mut got, x_drop, n, level).unwrap();
                            assert!(got == want, "{level:?}, keep {m}, drop {l}, n = {n}, t {t:?}, patterns {a}/{b}");
                            let mut got = vec![u32::MAX; m * n];
                            sd.apply_with(x_keep, x_drop, n, &mut got, level).unwrap();
                            assert!(got == want, "apply, {level:?}, keep {m}, drop {l}, n = {n}, patterns {a}/{b}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn lazy_sums_fit_and_reduce_exactly() {
    // 16 products of two words below 2^30 fit in a u64, 17 need not.
    let top = u128::from((1u32 << 30) - 1);
    assert!(MAX_PRODUCTS as u128 * top * top < 1 << 64);
    assert!((MAX_PRODUCTS as u128 + 1) * top * top >= 1 << 64);
    // The slack left by ROWS_PER_REDUCTION products holds a reduced remainder, a count of up
    // to 2^16 digits times a coefficient and the extra term.
    assert!(ROWS_PER_REDUCTION as u128 * top * top + (1 << 30) + (1 << 46) + (1 << 31) < 1 << 64);
    let mut rng = ChaCha8Rng::seed_from_u64(22);
    for p in [2u64, 3, 17, 65536, 1_000_000, (1 << 29) + 11, (1 << 30) - 35, (1 << 30) - 1] {
        let d = tiled::DstLimb::new(&Modulus::new(p).unwrap(), 0);
        let mut values = vec![0u64, 1, p - 1, p, u64::MAX, u64::MAX - 1, 1 << 32, (1 << 32) - 1, 1 << 63];
        values.extend((0..1000).map(|_| rng.random::<u64>()));
        for a in values {
            assert_eq!(u64::from(tiled::reduce_acc(a, &d)), a % p, "{a} mod {p}");
        }
    }
}

#[test]
fn accumulate_never_overflows_at_the_bounds() {
    let top = (1u32 << 30) - 1;
    let p = (1u64 << 30) - 35;
    for rows_count in [1usize, 14, 15, 16, 31, 64] {
        let n = 3;
        let rows = vec![top; rows_count * n];
        let coeffs = vec![top; rows_count];
        let mut acc = vec![p - 1; n];
        accumulate(&mut acc, &rows, &coeffs, n, p);
        let want = (u128::from(p - 1) + rows_count as u128 * u128::from(top) * u128::from(top)) % u128::from(p);
        for a in acc {
            assert_eq!(u128::from(a) % u128::from(p), want);
        }
    }
}

#[test]
fn base_conversion_reads_words_mod_q() {
    let all = primes(4, &[]);
    let from = moduli(&all[..2]);
    let to = moduli(&all[2..]);
    let conv = BaseConverter::new(&from, &to).unwrap();
    let raw = [u32::MAX, 3_000_000_000];
    let canon = [u32::MAX % from[0].value(), 3_000_000_000 % from[1].value()];
    let (mut a, mut b) = ([0u32; 2], [0u32; 2]);
    conv.convert(&raw, 1, &mut a).unwrap();
    conv.convert(&canon, 1, &mut b).unwrap();
    assert_eq!(a, b);
}

#[test]
fn base_conversion_tables_and_errors() {
    let all = primes(5, &[]);
    let from = moduli(&all[..3]);
    let to = moduli(&all[3..]);
    let conv = BaseConverter::new(&from, &to).unwrap();
    let q = product(&from);
    for (i, m) in from.iter().enumerate() {
        let qi = BigUint::from(m.value());
        let qhat = &q / &qi;
        let inv = (&qhat % &qi).modinv(&qi).unwrap();
        assert_eq!(BigUint::from(conv.qhat_inv()[i]), inv);
        assert_eq!(conv.qhat_inv_shoup()[i], m.shoup(conv.qhat_inv()[i]));
        for (j, p) in to.iter().enumerate() {
            let e = conv.qhat_mod_p()[j * from.len() + i];
            assert_eq!(BigUint::from(e), &qhat % p.value());
            assert_eq!(conv.qhat_mod_p_shoup()[j * from.len() + i], p.shoup(e));
        }
    }
    assert_eq!(conv.from_moduli(), &from[..]);
    assert_eq!(conv.to_moduli(), &to[..]);

    let mut out = vec![0u32; 2 * 4];
    assert!(matches!(
        conv.convert(&[0; 11], 4, &mut out),
        Err(Error::DimensionMismatch { expected: 12, found: 11, .. })
    ));
    assert!(matches!(
        conv.convert(&[0; 12], 4, &mut out[..7]),
        Err(Error::DimensionMismatch { expected: 8, found: 7, .. })
    ));
    assert!(matches!(conv.convert(&[], usize::MAX, &mut []), Err(Error::SizeOverflow { .. })));
    conv.convert(&[], 0, &mut []).unwrap();
    assert!(matches!(BaseConverter::new(&[], &to), Err(Error::InvalidModulus { modulus: 0, .. })));
    assert!(matches!(BaseConverter::new(&moduli(&[all[0], all[0]]), &to), Err(Error::InvalidModulus { .. })));
    // An empty target set is allowed.
    let empty = BaseConverter::new(&from, &[]).unwrap();
    empty.convert(&[1, 2, 3], 1, &mut []).unwrap();
}

/// Runs `ScaleDown::apply` on the given integers; returns the output limbs.
fn scale_down(sd: &ScaleDown, xs: &[BigInt]) -> Vec<u32> {
    let n = xs.len();
    let keep_in = limbs(xs, sd.keep_moduli());
    let drop_in = limbs(xs, sd.drop_moduli());
    let mut out = vec![0u32; sd.keep_moduli().len() * n];
    sd.apply(&keep_in, &drop_in, n, &mut out).unwrap();
    for (i, k) in sd.keep_moduli().iter().enumerate() {
        assert!(out[i * n..(i + 1) * n].iter().all(|&v| v < k.value()));
    }
    let mut inplace = keep_in;
    sd.apply_in_place(&mut inplace, &drop_in, n).unwrap();
    assert_eq!(inplace, out);
    out
}

/// Random centred values mod `q` plus edge values.
fn samples(rng: &mut ChaCha8Rng, q: &BigUint, d: &BigUint, count: usize) -> Vec<BigInt> {
    let mut xs = (0..count).map(|_| centre(random_below(rng, q), q)).collect::<Vec<_>>();
    let half_d = int(&(d / 2u32));
    let d_i = int(d);
    for base in [BigInt::zero(), &d_i * 12345u32, -(&d_i * 777u32)] {
        for off in [BigInt::zero(), BigInt::one(), -BigInt::one()] {
            xs.push(&base + &half_d + &off);
            xs.push(&base - &half_d + &off);
        }
    }
    xs.push(centre(q - 1u32, q));
    xs.push(centre(q / 2u32, q));
    xs.into_iter().map(|x| centre(modq(x, q), q)).collect()
}

fn modq(x: BigInt, q: &BigUint) -> BigUint {
    let qi = int(q);
    (((x % &qi) + &qi) % &qi).to_biguint().unwrap()
}

fn check_single_drop_round(keep: &[Modulus], d: Modulus, rng: &mut ChaCha8Rng) {
    let sd = ScaleDown::new(keep, &[d], None).unwrap();
    let k = product(keep);
    let dd = BigUint::from(d.value());
    let q = &k * &dd;
    let xs = samples(rng, &q, &dd, 40);
    let out = scale_down(&sd, &xs);
    let basis = RnsBasis::new(keep).unwrap();
    for (j, x) in xs.iter().enumerate() {
        // Nearest integer to x / d, ties down, via non-negative floor division.
        let shift: BigInt = int(&q) * 4u32;
        let xp = (x + &shift).to_biguint().unwrap();
        let (mut r, rem) = (&xp / &dd, &xp % &dd);
        if &rem * 2u32 > dd {
            r += 1u32;
        }
        let r = int(&r) - (shift / int(&dd));
        let got = basis.reconstruct(&column(&out, keep.len(), xs.len(), j)).unwrap();
        assert_eq!(got, modq(r, &k), "x = {x}, d = {}", d.value());
    }
}

#[test]
fn scale_down_one_prime_rounds_exactly() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let all = primes(6, &[]);
    check_single_drop_round(&moduli(&all[..3]), Modulus::new(all[3]).unwrap(), &mut rng);
    check_single_drop_round(&moduli(&all[..1]), Modulus::new(all[5]).unwrap(), &mut rng);
    // Dropped modulus larger / smaller than the kept ones, and even (ties possible).
    check_single_drop_round(&moduli(&[65537, 12289, 17]), Modulus::new(all[0]).unwrap(), &mut rng);
    check_single_drop_round(&moduli(&all[..2]), Modulus::new(1024).unwrap(), &mut rng);
    check_single_drop_round(&moduli(&all[..2]), Modulus::new(3).unwrap(), &mut rng);
    check_single_drop_round(&moduli(&[7, 11]), Modulus::new(2).unwrap(), &mut rng);
}

fn check_single_drop_bgv(keep: &[Modulus], d: Modulus, t: u32, rng: &mut ChaCha8Rng) {
    let sd = ScaleDown::new(keep, &[d], Some(t)).unwrap();
    assert_eq!(sd.t(), Some(t));
    let k = product(keep);
    let dd = BigUint::from(d.value());
    let q = &k * &dd;
    let xs = samples(rng, &q, &dd, 40);
    let out = scale_down(&sd, &xs);
    let basis = RnsBasis::new(keep).unwrap();
    let ti = BigInt::from(t);
    let di = int(&dd);
    for (j, x) in xs.iter().enumerate() {
        let o = basis.reconstruct(&column(&out, keep.len(), xs.len(), j)).unwrap();
        // delta = x - out * d, taken centred mod Q (|delta| <= t d / 2 < Q / 2 fixes it).
        let delta = centre(modq(x - int(&o) * &di, &q), &q);
        assert!(BigInt::from(2u32) * int(delta.magnitude()) <= &ti * &di, "delta = {delta}");
        assert!((&delta % &ti).is_zero(), "delta = {delta} not 0 mod t");
        assert!(((x - &delta) % &di).is_zero(), "delta != x mod d");
    }
}

#[test]
fn scale_down_one_prime_bgv() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let all = primes(5, &[]);
    let d = Modulus::new(all[4]).unwrap();
    for t in [2u32, 3, 257, 65537, 786_433] {
        check_single_drop_bgv(&moduli(&all[..3]), d, t, &mut rng);
    }
    check_single_drop_bgv(&moduli(&[65537, 12289]), Modulus::new(all[0]).unwrap(), 17, &mut rng);
    check_single_drop_bgv(&moduli(&all[..3]), Modulus::new(1 << 20).unwrap(), 65537, &mut rng);
    // t larger than every modulus.
    check_single_drop_bgv(&moduli(&all[..3]), d, u32::MAX, &mut rng);
}

/// Independent ScaleDown with several dropped moduli: `(x - t * (y + u D)) / D mod K`.
fn check_multi_drop(keep: &[Modulus], drop: &[Modulus], t: Option<u32>, rng: &mut ChaCha8Rng) {
    let sd = ScaleDown::new(keep, drop, t).unwrap();
    let k = product(keep);
    let d = product(drop);
    let q = &k * &d;
    let tt = BigUint::from(t.unwrap_or(1));
    let t_inv = (&tt % &d).modinv(&d).unwrap();
    let xs = samples(rng, &q, &d, 30);
    let out = scale_down(&sd, &xs);
    let basis = RnsBasis::new(keep).unwrap();
    let l = drop.len();
    for (j, x) in xs.iter().enumerate() {
        let got = basis.reconstruct(&column(&out, keep.len(), xs.len(), j)).unwrap();
        let y = modq(x.clone(), &d) * &t_inv % &d;
        let u = fast_conv_u(&y, drop);
        assert!(u_in_range(&u, l));
        let delta = int(&tt) * (int(&y) + &u * int(&d));
        let num = x - &delta;
        assert!((&num % int(&d)).is_zero());
        assert_eq!(got, modq(num / int(&d), &k), "x = {x}");
        // The documented bound, from the output alone: e = x - out * D, centred mod Q.
        let e = centre(modq(x - int(&got) * int(&d), &q), &q);
        assert!(e.magnitude() <= &(&tt * BigUint::from(l) * &d), "error {e} beyond t L D");
        assert!((&e % int(&tt)).is_zero());
        assert_eq!(modq(e.clone(), &d), modq(x.clone(), &d));
    }
}

#[test]
fn scale_down_several_primes() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let all = primes(60, &[]);
    for (nk, nd) in [(1usize, 2usize), (3, 2), (4, 4), (2, 16), (5, 20), (3, 33)] {
        let keep = moduli(&all[..nk]);
        let drop = moduli(&all[nk..nk + nd]);
        check_multi_drop(&keep, &drop, None, &mut rng);
        check_multi_drop(&keep, &drop, Some(65537), &mut rng);
    }
    check_multi_drop(&moduli(&all[..4]), &moduli(&[1024, 3, 5]), None, &mut rng);
    check_multi_drop(&moduli(&[17, 12289]), &moduli(&all[..3]), Some(7), &mut rng);
}

#[test]
fn scale_down_tables() {
    let all = primes(5, &[]);
    let keep = moduli(&all[..2]);
    let drop = moduli(&all[2..]);
    let t = 65537u32;
    let sd = ScaleDown::new(&keep, &drop, Some(t)).unwrap();
    let d = product(&drop);
    for (i, k) in keep.iter().enumerate() {
        let kv = BigUint::from(k.value());
        let dinv = (&d % &kv).modinv(&kv).unwrap();
        assert_eq!(BigUint::from(sd.d_inv()[i]), dinv);
        assert_eq!(BigUint::from(sd.d_mod_keep()[i]), &d % &kv);
        assert_eq!(sd.d_inv_shoup()[i], k.shoup(sd.d_inv()[i]));
        for (j, dj) in drop.iter().enumerate() {
            let e = sd.lift_matrix()[i * drop.len() + j];
            let want = BigUint::from(t) * (BigUint::from(dj.value()) % &kv).modinv(&kv).unwrap() % &kv;
            assert_eq!(BigUint::from(e), want);
            assert_eq!(sd.lift_matrix_shoup()[i * drop.len() + j], k.shoup(e));
        }
    }
    for (j, dj) in drop.iter().enumerate() {
        let dv = BigUint::from(dj.value());
        let dhat = &d / &dv;
        let want = (BigUint::from(t) * dhat % &dv).modinv(&dv).unwrap();
        assert_eq!(BigUint::from(sd.drop_factor()[j]), want);
        assert_eq!(sd.drop_factor_shoup()[j], dj.shoup(sd.drop_factor()[j]));
    }
    assert_eq!(sd.keep_moduli(), &keep[..]);
    assert_eq!(sd.drop_moduli(), &drop[..]);
}

#[test]
fn scale_down_reads_words_mod_q() {
    let all = primes(4, &[]);
    for drop in [&all[2..3], &all[2..4]] {
        let sd = ScaleDown::new(&moduli(&all[..2]), &moduli(drop), Some(257)).unwrap();
        let keep_raw = [u32::MAX, 4_000_000_000];
        let keep_canon: Vec<u32> = keep_raw.iter().zip(sd.keep_moduli()).map(|(&w, m)| w % m.value()).collect();
        let drop_raw = vec![3_999_999_999u32; drop.len()];
        let drop_canon: Vec<u32> = drop_raw.iter().zip(sd.drop_moduli()).map(|(&w, m)| w % m.value()).collect();
        let (mut a, mut b) = ([0u32; 2], [0u32; 2]);
        sd.apply(&keep_raw, &drop_raw, 1, &mut a).unwrap();
        sd.apply(&keep_canon, &drop_canon, 1, &mut b).unwrap();
        assert_eq!(a, b);
    }
}

#[test]
fn scale_down_errors() {
    let all = primes(4, &[]);
    let keep = moduli(&all[..2]);
    let drop = moduli(&all[2..]);
    assert!(matches!(ScaleDown::new(&[], &drop, None), Err(Error::InvalidModulus { modulus: 0, .. })));
    assert!(matches!(ScaleDown::new(&keep, &[], None), Err(Error::InvalidModulus { modulus: 0, .. })));
    assert!(matches!(ScaleDown::new(&keep, &moduli(&[all[2], all[1]]), None), Err(Error::InvalidModulus { .. })));
    assert!(matches!(ScaleDown::new(&moduli(&[6, 35]), &moduli(&[10]), None), Err(Error::InvalidModulus { .. })));
    assert!(matches!(
        ScaleDown::new(&moduli(&[7, 11]), &moduli(&[13, 4]), Some(6)),
        Err(Error::InvalidPlaintextModulus { t: 6, .. })
    ));
    assert!(matches!(ScaleDown::new(&keep, &drop, Some(all[3] as u32)), Err(Error::InvalidPlaintextModulus { .. })));
    assert!(matches!(ScaleDown::new(&keep, &drop, Some(0)), Err(Error::InvalidPlaintextModulus { t: 0, .. })));
    // t sharing a factor with a kept modulus only is fine.
    assert!(ScaleDown::new(&moduli(&[7, 11]), &moduli(&[13]), Some(7)).is_ok());

    let sd = ScaleDown::new(&keep, &drop, Some(65537)).unwrap();
    let n = 4;
    let mut out = vec![0u32; 8];
    assert!(matches!(
        sd.apply(&[0; 7], &[0; 8], n, &mut out),
        Err(Error::DimensionMismatch { expected: 8, found: 7, .. })
    ));
    assert!(matches!(
        sd.apply(&[0; 8], &[0; 9], n, &mut out),
        Err(Error::DimensionMismatch { expected: 8, found: 9, .. })
    ));
    assert!(matches!(
        sd.apply(&[0; 8], &[0; 8], n, &mut out[..6]),
        Err(Error::DimensionMismatch { expected: 8, found: 6, .. })
    ));
    assert!(matches!(sd.apply_in_place(&mut out, &[0; 3], n), Err(Error::DimensionMismatch { .. })));
    assert!(matches!(sd.apply(&[], &[], usize::MAX, &mut []), Err(Error::SizeOverflow { .. })));
    sd.apply(&[], &[], 0, &mut []).unwrap();
    sd.apply(&[0; 8], &[0; 8], n, &mut out).unwrap();
    assert_eq!(out, vec![0; 8]);
}
