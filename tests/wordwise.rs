//! Word-wise comparison of encrypted digit vectors: EQ, LT and MAX are exact at `keep = 1` on
//! every slot (1024 random pairs per layout plus edge cases: 0, +-1, the range ends, equal
//! values), for floor and balanced digits; pruned comparisons equal their plaintext reference
//! slot by slot; values produced by a homomorphic weighted sum compare correctly; bad layouts and
//! out-of-range values are typed errors; the GPU produces the CPU's ciphertexts bit for bit.
//!
//! Parameters: `insecure_test_bgv(TestRing { log_n: 10, q_primes: 12, p_primes: 3, dnum: 4 }, 65537)` (1024 slots, 12 chain primes).

#![expect(clippy::unwrap_used, reason = "tests")]

mod common;

use std::sync::Arc;
use wgfhe::rlwe::KeyRequest;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::{Bgv, Ciphertext, EvaluationKeys};
use wgfhe::compare::digits::{eq_pruned, lt_pruned, Convention, Digits};
use wgfhe::compare::wordwise::{compare, equal, max, recompose, EncryptedDigits};
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::SecretKey;
use wgfhe::Error;

fn test_params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 12, p_primes: 3, dnum: 4 }, 65537).unwrap()
}

struct Fixture<B: Backend> {
    bgv: Bgv<B>,
    sk: SecretKey<B>,
    keys: EvaluationKeys<B>,
}

fn fixture<B: Backend>(backend: B) -> Fixture<B> {
    let bgv = Bgv::new(backend).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    Fixture { bgv, sk, keys }
}

/// Pairs: edge cases first (0, +-1, range ends, equal values), then uniform.
fn pairs(layout: &Digits, slots: usize, rng: &mut ChaCha8Rng) -> (Vec<i64>, Vec<i64>) {
    let (lo, hi) = layout.range();
    let edges =
        [(0, 0), (0, 1), (1, 0), (-1, 0), (0, -1), (lo, hi), (hi, lo), (lo, lo), (hi, hi), (-1, 1), (lo, 0), (hi, 0)];
    let mut xs: Vec<i64> = edges.iter().map(|e| e.0).collect();
    let mut ys: Vec<i64> = edges.iter().map(|e| e.1).collect();
    while xs.len() < slots {
        let x = rng.random_range(lo..=hi);
        // Every fourth pair equal, so EQ sees both answers often.
        let y = if xs.len().is_multiple_of(4) { x } else { rng.random_range(lo..=hi) };
        xs.push(x);
        ys.push(y);
    }
    (xs, ys)
}

fn decrypt<B: Backend>(f: &Fixture<B>, ct: &Ciphertext<B>) -> Vec<i64> {
    f.bgv.encoder().decode_signed(&f.bgv.decrypt(&f.sk, ct).unwrap()).unwrap()
}

fn layouts() -> Vec<Digits> {
    vec![
        Digits::new(16, 2, Convention::Floor).unwrap(),
        Digits::new(4, 4, Convention::Floor).unwrap(),
        Digits::new(15, 2, Convention::Balanced).unwrap(),
        Digits::new(5, 4, Convention::Balanced).unwrap(),
    ]
}

#[test]
fn eq_lt_max_are_exact_at_full_precision() {
    let f = fixture(CpuBackend::new(RingContext::new(&test_params()).unwrap()));
    let slots = f.bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for layout in layouts() {
        let (xs, ys) = pairs(&layout, slots, &mut rng);
        let ex = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &xs).unwrap();
        let ey = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &ys).unwrap();
        let l = layout.count();
        let c = compare(&f.bgv, &f.keys, &ex, &ey, l).unwrap();
        let want_lt: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| i64::from(a < b)).collect();
        let want_eq: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| i64::from(a == b)).collect();
        assert_eq!(decrypt(&f, &c.lt), want_lt, "{layout:?} LT");
        assert_eq!(decrypt(&f, &c.eq), want_eq, "{layout:?} EQ from compare");
        let (eq, _) = equal(&f.bgv, &f.keys, &ex, &ey, l).unwrap();
        assert_eq!(decrypt(&f, &eq), want_eq, "{layout:?} EQ");
        let (m, stats) = max(&f.bgv, &f.keys, &ex, &ey, l).unwrap();
        let want_max: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| *a.max(b)).collect();
        assert_eq!(decrypt(&f, &m), want_max, "{layout:?} MAX");
        assert_eq!(stats.hmults, c.stats.hmults + 1);
        assert_eq!(decrypt(&f, &recompose(&f.bgv, &ex).unwrap()), xs, "{layout:?} recompose");
    }
}

#[test]
fn pruned_comparisons_equal_their_plaintext_reference() {
    let f = fixture(CpuBackend::new(RingContext::new(&test_params()).unwrap()));
    let slots = f.bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for layout in [Digits::new(4, 4, Convention::Floor).unwrap(), Digits::new(5, 4, Convention::Balanced).unwrap()] {
        let (xs, ys) = pairs(&layout, slots, &mut rng);
        let zeros = vec![0; slots];
        let ex = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &xs).unwrap();
        let ey = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &ys).unwrap();
        let ez = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &zeros).unwrap();
        let dx: Vec<_> = xs.iter().map(|&v| layout.decompose(v).unwrap()).collect();
        let dy: Vec<_> = ys.iter().map(|&v| layout.decompose(v).unwrap()).collect();
        let dz = layout.decompose(0).unwrap();
        let mut previous_hmults = usize::MAX;
        for keep in [0.75, 0.5, 0.25] {
            let kept = layout.kept(keep).unwrap();
            let c = compare(&f.bgv, &f.keys, &ex, &ey, kept).unwrap();
            let want: Vec<i64> = dx.iter().zip(&dy).map(|(a, b)| i64::from(lt_pruned(a, b, kept))).collect();
            assert_eq!(decrypt(&f, &c.lt), want, "{layout:?} keep {keep}");
            let want: Vec<i64> = dx.iter().zip(&dy).map(|(a, b)| i64::from(eq_pruned(a, b, kept))).collect();
            assert_eq!(decrypt(&f, &c.eq), want, "{layout:?} keep {keep} EQ");
            assert!(c.stats.hmults < previous_hmults, "pruning saves multiplications");
            previous_hmults = c.stats.hmults;
            // The sign test: exact with floor digits at any pruning, a dead zone with balanced.
            let s = compare(&f.bgv, &f.keys, &ex, &ez, kept).unwrap();
            let got = decrypt(&f, &s.lt);
            let want: Vec<i64> = dx.iter().map(|a| i64::from(lt_pruned(a, &dz, kept))).collect();
            assert_eq!(got, want);
            if layout.convention() == Convention::Floor {
                let exact: Vec<i64> = xs.iter().map(|&x| i64::from(x < 0)).collect();
                assert_eq!(got, exact, "floor digits: the pruned sign test is exact");
            }
        }
    }
}

#[test]
fn digits_from_homomorphic_additions_compare_correctly() {
    // Digit ciphertexts that are sums of encryptions (z's digits plus the all-zero digits of
    // the range's low end), not fresh encryptions.
    let f = fixture(CpuBackend::new(RingContext::new(&test_params()).unwrap()));
    let layout = Digits::new(4, 4, Convention::Floor).unwrap();
    let slots = f.bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (lo, hi) = layout.range();
    let zs: Vec<i64> = (0..slots).map(|_| rng.random_range(lo..=hi)).collect();
    let ys: Vec<i64> = (0..slots).map(|_| rng.random_range(lo..=hi)).collect();
    let ez = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &zs).unwrap();
    let zero = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &vec![lo; slots]).unwrap();
    let summed: Vec<Ciphertext<_>> =
        ez.digits().iter().zip(zero.digits()).map(|(a, b)| f.bgv.add(a, b).unwrap()).collect();
    // lo has all-zero floor digits, so the sum has z's digits.
    let ez2 = EncryptedDigits::from_digits(layout, summed).unwrap();
    let ey = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, &ys).unwrap();
    let c = compare(&f.bgv, &f.keys, &ez2, &ey, 4).unwrap();
    let want: Vec<i64> = zs.iter().zip(&ys).map(|(a, b)| i64::from(a < b)).collect();
    assert_eq!(decrypt(&f, &c.lt), want);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let f = fixture(CpuBackend::new(RingContext::new(&test_params()).unwrap()));
    let a = Digits::new(4, 4, Convention::Floor).unwrap();
    let b = Digits::new(16, 2, Convention::Floor).unwrap();
    let (_, hi) = a.range();
    assert!(matches!(EncryptedDigits::encrypt(&f.bgv, &f.sk, a, &[hi + 1]), Err(Error::InvalidField { .. })));
    let too_many = vec![0; f.bgv.encoder().slots() + 1];
    assert!(EncryptedDigits::encrypt(&f.bgv, &f.sk, a, &too_many).is_err());
    let x = EncryptedDigits::encrypt(&f.bgv, &f.sk, a, &[1, 2]).unwrap();
    let y = EncryptedDigits::encrypt(&f.bgv, &f.sk, b, &[1, 2]).unwrap();
    assert!(matches!(compare(&f.bgv, &f.keys, &x, &y, 2), Err(Error::InvalidField { .. })));
    assert!(matches!(compare(&f.bgv, &f.keys, &x, &x, 0), Err(Error::InvalidField { .. })));
    assert!(matches!(compare(&f.bgv, &f.keys, &x, &x, 5), Err(Error::InvalidField { .. })));
    assert!(matches!(EncryptedDigits::<CpuBackend>::from_digits(a, Vec::new()), Err(Error::DimensionMismatch { .. })));
    // MAX needs the values to fit the plaintext space: 2^20 does not fit t = 65537.
    let wide = Digits::new(16, 5, Convention::Floor).unwrap();
    let w = EncryptedDigits::encrypt(&f.bgv, &f.sk, wide, &[1]).unwrap();
    assert!(matches!(max(&f.bgv, &f.keys, &w, &w, 5), Err(Error::BoundTooLarge { .. })));
}

#[test]
fn gpu_comparison_is_bit_identical_to_cpu() {
    let Some(dev) = common::device() else { return };
    let ctx = RingContext::new(&test_params()).unwrap();
    let layout = Digits::new(4, 4, Convention::Floor).unwrap();
    let values: Vec<i64> = (0..64).map(|i| i * 3 - 100).collect();
    let others: Vec<i64> = (0..64).map(|i| 90 - i * 2).collect();
    let cpu = fixture(CpuBackend::new(Arc::clone(&ctx)));
    let gpu = fixture(GpuBackend::new(Arc::clone(&ctx), dev));
    let (cpu_words, _) = lt_eq_words(&cpu, layout, &values, &others);
    let (gpu_words, lt) = lt_eq_words(&gpu, layout, &values, &others);
    assert!(cpu_words == gpu_words, "GPU comparison differs from the CPU's");
    let want: Vec<i64> = values.iter().zip(&others).map(|(a, b)| i64::from(a < b)).collect();
    let got = decrypt(&gpu, &lt);
    assert_eq!(&got[..64], &want[..]);
}

/// The words of LT and EQ (three of four digits kept) and the full-precision LT ciphertext.
fn lt_eq_words<B: Backend>(f: &Fixture<B>, layout: Digits, xs: &[i64], ys: &[i64]) -> (Vec<Vec<u32>>, Ciphertext<B>) {
    let x = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, xs).unwrap();
    let y = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, ys).unwrap();
    let c = compare(&f.bgv, &f.keys, &x, &y, 3).unwrap();
    let words =
        c.lt.polys().iter().chain(c.eq.polys()).map(|p| f.bgv.backend().download(p.buffer()).unwrap()).collect();
    (words, compare(&f.bgv, &f.keys, &x, &y, 4).unwrap().lt)
}

#[test]
fn gpu_eq_lt_max_are_exact_and_bit_identical_on_every_layout() {
    let Some(dev) = common::device() else { return };
    let ctx = RingContext::new(&test_params()).unwrap();
    let cpu = fixture(CpuBackend::new(Arc::clone(&ctx)));
    let gpu = fixture(GpuBackend::new(Arc::clone(&ctx), dev));
    let slots = cpu.bgv.encoder().slots();
    assert!(slots >= 1000);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for layout in layouts() {
        let (xs, ys) = pairs(&layout, slots, &mut rng);
        let (lt_c, eq_c, max_c) = lt_eq_max(&cpu, layout, &xs, &ys);
        let (lt_g, eq_g, max_g) = lt_eq_max(&gpu, layout, &xs, &ys);
        for (what, a, b) in [("LT", &lt_c, &lt_g), ("EQ", &eq_c, &eq_g), ("MAX", &max_c, &max_g)] {
            let wa: Vec<Vec<u32>> = a.polys().iter().map(|p| cpu.bgv.backend().download(p.buffer()).unwrap()).collect();
            let wb: Vec<Vec<u32>> = b.polys().iter().map(|p| gpu.bgv.backend().download(p.buffer()).unwrap()).collect();
            assert!(wa == wb, "{layout:?} {what}: GPU ciphertext differs from the CPU's");
        }
        let want_lt: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| i64::from(a < b)).collect();
        let want_eq: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| i64::from(a == b)).collect();
        let want_max: Vec<i64> = xs.iter().zip(&ys).map(|(a, b)| *a.max(b)).collect();
        assert_eq!(decrypt(&gpu, &lt_g), want_lt, "{layout:?} GPU LT");
        assert_eq!(decrypt(&gpu, &eq_g), want_eq, "{layout:?} GPU EQ");
        assert_eq!(decrypt(&gpu, &max_g), want_max, "{layout:?} GPU MAX");
    }
}

type Triple<B> = (Ciphertext<B>, Ciphertext<B>, Ciphertext<B>);

/// LT, EQ and MAX at full precision.
fn lt_eq_max<B: Backend>(f: &Fixture<B>, layout: Digits, xs: &[i64], ys: &[i64]) -> Triple<B> {
    let l = layout.count();
    let x = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, xs).unwrap();
    let y = EncryptedDigits::encrypt(&f.bgv, &f.sk, layout, ys).unwrap();
    let c = compare(&f.bgv, &f.keys, &x, &y, l).unwrap();
    let (e, _) = equal(&f.bgv, &f.keys, &x, &y, l).unwrap();
    let (m, _) = max(&f.bgv, &f.keys, &x, &y, l).unwrap();
    (c.lt, e, m)
}
