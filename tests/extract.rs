//! Digit extraction and the pipeline "weighted sum -> digits -> pruned sign test / LT / ReLU" on
//! encrypted values: every extracted digit, sign, comparison and ReLU is exact at full
//! precision on 1024 batched values (edge cases 0, +-1, +-B first) produced by a homomorphic
//! weighted sum, for floor and balanced digits; pruned results equal their plaintext models
//! slot by slot; sets of tables equal the tables one by one; out-of-range bounds are typed
//! errors; the GPU backend produces the CPU's ciphertexts bit for bit.
//!
//! Parameters: `insecure_test_bgv(TestRing { log_n: 10, q_primes: 22, p_primes: 4, dnum: 6 }, 65537)` (1024 slots, 22 chain primes: the ReLU
//! through 3 digits of `|x| <= 31` is depth 13).

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

mod common;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::{Bgv, Ciphertext, EvaluationKeys};
use wgfhe::compare::digits::{eq_pruned, lt_pruned, Convention, Digits};
use wgfhe::compare::extract::{
    extract_digits, layout_for_bound, less_than, relu, relu_model, sign_test, sign_test_model, DigitExtractor,
};
use wgfhe::compare::wordwise::{compare, recompose};
use wgfhe::compare::{eval_lut, eval_lut_set, Bounded, Lut, LutSet, Strategy};
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::KeyRequest;
use wgfhe::rlwe::SecretKey;
use wgfhe::Error;

const T: u32 = 65537;
/// The bound of `z = 3a - 2b + c`, `|a| <= 7`, `|b| <= 3`, `|c| <= 4`.
const B: u64 = 31;

fn test_params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 22, p_primes: 4, dnum: 6 }, u64::from(T)).unwrap()
}

struct Fixture<B: Backend> {
    bgv: Bgv<B>,
    sk: SecretKey<B>,
    keys: EvaluationKeys<B>,
}

fn fixture<B: Backend>(backend: B) -> Fixture<B> {
    let bgv = Bgv::new(backend).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[21; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    Fixture { bgv, sk, keys }
}

fn cpu() -> Fixture<CpuBackend> {
    fixture(CpuBackend::new(RingContext::new(&test_params()).unwrap()))
}

fn encrypt<B: Backend>(f: &Fixture<B>, values: &[i64], bound: u64) -> Bounded<B> {
    let pt = f.bgv.encoder().encode_signed(values).unwrap();
    Bounded::fresh(&f.bgv, f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap(), bound).unwrap()
}

fn decrypt<B: Backend>(f: &Fixture<B>, ct: &Ciphertext<B>) -> Vec<i64> {
    f.bgv.encoder().decode_signed(&f.bgv.decrypt(&f.sk, ct).unwrap()).unwrap()
}

/// Inputs `(a, b, c)` per slot: first the ones giving `z = 0, 1, -1, 31, -31, 30, -30`, then
/// uniform.
fn abc(slots: usize, rng: &mut ChaCha8Rng) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let edges = [(0, 0, 0), (0, 0, 1), (0, 0, -1), (7, -3, 4), (-7, 3, -4), (7, -3, 3), (-7, 3, -3)];
    let (mut a, mut b, mut c): (Vec<i64>, Vec<i64>, Vec<i64>) = (vec![], vec![], vec![]);
    for &(x, y, z) in &edges {
        a.push(x);
        b.push(y);
        c.push(z);
    }
    while a.len() < slots {
        a.push(rng.random_range(-7..=7));
        b.push(rng.random_range(-3..=3));
        c.push(rng.random_range(-4..=4));
    }
    (a, b, c)
}

/// `z = 3a - 2b + c` computed homomorphically, with its values; bound 31.
fn weighted_sum<B: Backend>(f: &Fixture<B>, rng: &mut ChaCha8Rng) -> (Bounded<B>, Vec<i64>) {
    let slots = f.bgv.encoder().slots();
    let (a, b, c) = abc(slots, rng);
    let (ea, eb, ec) = (encrypt(f, &a, 7), encrypt(f, &b, 3), encrypt(f, &c, 4));
    let z = Bounded::weighted_sum(&f.bgv, &[(3, &ea), (-2, &eb), (1, &ec)], 0).unwrap();
    assert_eq!(z.bound(), B);
    let values: Vec<i64> = (0..slots).map(|i| 3 * a[i] - 2 * b[i] + c[i]).collect();
    for edge in [0, 1, -1, 31, -31] {
        assert!(values.contains(&edge), "{edge}");
    }
    (z, values)
}

fn layouts() -> [Digits; 2] {
    [layout_for_bound(B, 4, Convention::Floor).unwrap(), layout_for_bound(B, 5, Convention::Balanced).unwrap()]
}

#[test]
fn pipeline_is_exact_at_full_precision() {
    let f = cpu();
    let slots = f.bgv.encoder().slots();
    assert!(slots >= 1000);
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (z, zv) = weighted_sum(&f, &mut rng);
    let (w, wv) = weighted_sum(&f, &mut rng);
    for layout in layouts() {
        assert_eq!(layout.count(), 3, "{layout:?}");
        let ex = DigitExtractor::new(T, B, layout).unwrap();
        // Digits, and their recomposition.
        let (digits, stats) = extract_digits(&f.bgv, &f.keys, &z, &ex).unwrap();
        assert_eq!(stats, ex.plan().cost, "{layout:?}: measured stats differ from the plan");
        for (i, ct) in digits.digits().iter().enumerate() {
            let want: Vec<i64> = zv.iter().map(|&v| layout.decompose(v).unwrap()[i]).collect();
            assert_eq!(decrypt(&f, ct), want, "{layout:?} digit {i}");
        }
        assert_eq!(decrypt(&f, &recompose(&f.bgv, &digits).unwrap()), zv, "{layout:?} recompose");
        // Sign test.
        let (neg, s) = sign_test(&f.bgv, &f.keys, &z, &ex).unwrap();
        let want: Vec<i64> = zv.iter().map(|&v| i64::from(v < 0)).collect();
        assert_eq!(decrypt(&f, &neg), want, "{layout:?} sign");
        assert!(s.depth > stats.depth && s.relins <= s.hmults, "{s:?}");
        // Comparison of two computed values.
        let c = less_than(&f.bgv, &f.keys, &z, &w, &ex).unwrap();
        let lt: Vec<i64> = zv.iter().zip(&wv).map(|(a, b)| i64::from(a < b)).collect();
        let eq: Vec<i64> = zv.iter().zip(&wv).map(|(a, b)| i64::from(a == b)).collect();
        assert_eq!(decrypt(&f, &c.lt), lt, "{layout:?} LT");
        assert_eq!(decrypt(&f, &c.eq), eq, "{layout:?} EQ");
        // ReLU.
        let (r, rs) = relu(&f.bgv, &f.keys, &z, &ex).unwrap();
        assert_eq!(r.bound(), B);
        assert_eq!(decrypt(&f, r.ciphertext()), zv.iter().map(|&v| v.max(0)).collect::<Vec<_>>(), "{layout:?} ReLU");
        assert_eq!(rs.depth, s.depth + 1);
    }
}

#[test]
fn pruned_pipeline_equals_the_plaintext_model() {
    let f = cpu();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (z, zv) = weighted_sum(&f, &mut rng);
    let (w, wv) = weighted_sum(&f, &mut rng);
    for layout in layouts() {
        let full = DigitExtractor::new(T, B, layout).unwrap();
        for kept in 1..layout.count() {
            let ex = DigitExtractor::top_digits(T, B, layout, kept).unwrap();
            // Pruned digits are not extracted at all.
            assert!(ex.plan().cost.hmults < full.plan().cost.hmults, "{layout:?} kept {kept}");
            let (digits, _) = extract_digits(&f.bgv, &f.keys, &z, &ex).unwrap();
            assert_eq!(digits.pruned(), layout.count() - kept);
            assert!(matches!(recompose(&f.bgv, &digits), Err(Error::InvalidField { .. })));
            let (neg, _) = sign_test(&f.bgv, &f.keys, &z, &ex).unwrap();
            let model: Vec<i64> = zv.iter().map(|&v| i64::from(sign_test_model(&layout, kept, v).unwrap())).collect();
            assert_eq!(decrypt(&f, &neg), model, "{layout:?} kept {kept}: sign");
            if layout.convention() == Convention::Floor {
                assert_eq!(model, zv.iter().map(|&v| i64::from(v < 0)).collect::<Vec<_>>(), "floor sign is exact");
            } else {
                let dead = (5i64.pow((layout.count() - kept) as u32) - 1) / 2;
                assert!(zv.iter().zip(&model).all(|(&v, &m)| (m == 1) == (v < -dead)), "balanced dead zone");
            }
            let (r, _) = relu(&f.bgv, &f.keys, &z, &ex).unwrap();
            let want: Vec<i64> = zv.iter().map(|&v| relu_model(&layout, kept, v).unwrap()).collect();
            assert_eq!(decrypt(&f, r.ciphertext()), want, "{layout:?} kept {kept}: ReLU");
            let c = less_than(&f.bgv, &f.keys, &z, &w, &ex).unwrap();
            let (lt, eq): (Vec<i64>, Vec<i64>) = zv
                .iter()
                .zip(&wv)
                .map(|(&a, &b)| {
                    let (da, db) = (layout.decompose(a).unwrap(), layout.decompose(b).unwrap());
                    (i64::from(lt_pruned(&da, &db, kept)), i64::from(eq_pruned(&da, &db, kept)))
                })
                .unzip();
            assert_eq!(decrypt(&f, &c.lt), lt, "{layout:?} kept {kept}: LT");
            assert_eq!(decrypt(&f, &c.eq), eq, "{layout:?} kept {kept}: EQ");
            // A comparison cannot keep more digits than were extracted.
            let (dw, _) = extract_digits(&f.bgv, &f.keys, &w, &ex).unwrap();
            assert!(matches!(compare(&f.bgv, &f.keys, &digits, &dw, kept + 1), Err(Error::InvalidField { .. })));
        }
    }
}

#[test]
fn lut_sets_equal_the_tables_one_by_one() {
    let f = fixture(CpuBackend::new(
        RingContext::new(
            &params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 12, p_primes: 3, dnum: 4 }, 65537)
                .unwrap(),
        )
        .unwrap(),
    ));
    let slots = f.bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let b = 15i64;
    let mut values = vec![0, 1, -1, b, -b];
    while values.len() < slots {
        values.push(rng.random_range(-b..=b));
    }
    let x = encrypt(&f, &values, b as u64);
    let tables = vec![
        Lut::relu(T, 15).unwrap(),
        Lut::sign(T, 15).unwrap(),
        Lut::less_than(T, 15, 3).unwrap(),
        Lut::compile(T, 15, |v| (v * 7) % 5).unwrap(),
    ];
    let refs: [fn(i64) -> i64; 4] = [|v| v.max(0), i64::signum, |v| i64::from(v < 3), |v| (v * 7) % 5];
    let set = LutSet::new(tables.clone()).unwrap();
    let (outs, stats) = eval_lut_set(&f.bgv, &f.keys, &x, &set).unwrap();
    assert_eq!(stats, set.plan().cost);
    assert!(stats.hmults < set.separate_cost().hmults, "{stats:?} vs {:?}", set.separate_cost());
    for ((out, lut), r) in outs.iter().zip(&tables).zip(refs) {
        let want: Vec<i64> = values.iter().map(|&v| r(v)).collect();
        assert_eq!(decrypt(&f, out), want);
        let (alone, _) = eval_lut(&f.bgv, &f.keys, &x, lut).unwrap();
        assert_eq!(decrypt(&f, &alone), want);
    }
    // Every strategy and k gives the same values and the simulated cost.
    for strategy in [Strategy::Direct, Strategy::EvenOdd] {
        for k in [1, 3, 6] {
            let plan = wgfhe::compare::EvalPlan { strategy, baby_steps: k, cost: Default::default() };
            let (outs, s) = wgfhe::compare::eval_lut_set_with_plan(&f.bgv, &f.keys, &x, &set, &plan).unwrap();
            assert_eq!(s, set.cost(strategy, k).unwrap());
            for (out, r) in outs.iter().zip(refs) {
                assert_eq!(decrypt(&f, out), values.iter().map(|&v| r(v)).collect::<Vec<_>>(), "{strategy:?} {k}");
            }
        }
    }
    // Tables of different domains or moduli do not form a set.
    assert!(matches!(
        LutSet::new(vec![Lut::relu(T, 15).unwrap(), Lut::relu(T, 7).unwrap()]),
        Err(Error::InvalidField { .. })
    ));
    assert!(matches!(
        LutSet::new(vec![Lut::relu(T, 15).unwrap(), Lut::relu(786_433, 15).unwrap()]),
        Err(Error::InvalidPlaintextModulus { .. })
    ));
    assert!(matches!(LutSet::new(vec![]), Err(Error::InvalidField { .. })));
}

#[test]
fn out_of_range_inputs_are_typed_errors() {
    let f = cpu();
    let ex = DigitExtractor::for_bound(T, 20, 4, Convention::Floor).unwrap();
    let x = encrypt(&f, &[21, -3], 21);
    assert!(matches!(extract_digits(&f.bgv, &f.keys, &x, &ex), Err(Error::DigitRange { bound: 21, limit: 20, .. })));
    assert!(matches!(sign_test(&f.bgv, &f.keys, &x, &ex), Err(Error::DigitRange { .. })));
    assert!(matches!(relu(&f.bgv, &f.keys, &x, &ex), Err(Error::DigitRange { .. })));
    // Bounds at or above (t-1)/2, and outside the layout.
    assert!(matches!(
        DigitExtractor::for_bound(T, 32768, 16, Convention::Floor),
        Err(Error::DigitRange { bound: 32768, .. })
    ));
    let small = Digits::new(4, 2, Convention::Floor).unwrap(); // [-8, 7]
    assert!(matches!(DigitExtractor::new(T, 8, small), Err(Error::DigitRange { bound: 8, limit: 7, .. })));
    // A table set for another plaintext modulus.
    let other = DigitExtractor::for_bound(786_433, 20, 4, Convention::Floor).unwrap();
    let y = encrypt(&f, &[3], 20);
    assert!(matches!(extract_digits(&f.bgv, &f.keys, &y, &other), Err(Error::InvalidPlaintextModulus { .. })));
}

// ---- GPU -----------------------------------------------------------------------------------

fn words<B: Backend>(bgv: &Bgv<B>, ct: &Ciphertext<B>) -> Vec<Vec<u32>> {
    ct.polys().iter().map(|p| bgv.backend().download(p.buffer()).unwrap()).collect()
}

/// Extraction (2 of 3 floor digits) and the pruned sign test of a weighted sum: the ciphertexts
/// and their words.
fn gpu_case<B: Backend>(f: &Fixture<B>) -> (Vec<Vec<Vec<u32>>>, Vec<i64>, Ciphertext<B>) {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (z, zv) = weighted_sum(f, &mut rng);
    let layout = layout_for_bound(B, 4, Convention::Floor).unwrap();
    let ex = DigitExtractor::top_digits(T, B, layout, 2).unwrap();
    let (digits, _) = extract_digits(&f.bgv, &f.keys, &z, &ex).unwrap();
    let mut all: Vec<Vec<Vec<u32>>> = digits.digits().iter().map(|d| words(&f.bgv, d)).collect();
    let (neg, _) = sign_test(&f.bgv, &f.keys, &z, &ex).unwrap();
    all.push(words(&f.bgv, &neg));
    (all, zv, neg)
}

#[test]
fn gpu_extraction_is_bit_identical_to_cpu() {
    let Some(dev) = common::device() else { return };
    let ctx = RingContext::new(&test_params()).unwrap();
    let cpu = fixture(CpuBackend::new(std::sync::Arc::clone(&ctx)));
    let gpu = fixture(GpuBackend::new(ctx, dev));
    let (cpu_words, zv, _) = gpu_case(&cpu);
    let (gpu_words, _, neg) = gpu_case(&gpu);
    assert!(cpu_words == gpu_words, "GPU extraction or sign test differs from the CPU's");
    assert_eq!(decrypt(&gpu, &neg), zv.iter().map(|&v| i64::from(v < 0)).collect::<Vec<_>>());
}
