//! Range-restricted lookup tables on BGV ciphertexts: every slot of a table's output decrypts to
//! `f(x) mod t` for >= 1000 random inputs plus the edge cases (0, +-1, +-B'), for ReLU, ReLU with
//! requantisation, sign, `x < c` and `x = c`; the measured HMULTs and depth equal the plan's;
//! bounds propagate exactly through linear layers (HMULTs and relinearisations are counted by the
//! traffic ledger wrapped around the backend, not by the evaluator's own statistics); out-of-domain and too-large bounds are typed
//! errors; the GPU backend produces the CPU's ciphertext bit for bit.
//!
//! Parameters: `insecure_test_bgv(TestRing { log_n: 10, q_primes: 12, p_primes: 3, dnum: 4 }, 65537)` (N = 1024 slots, 12 chain primes of
//! 30 bits) fits every table up to B' = 63 (the deepest, sign at depth 8, ends at level 2).
//! Without an adapter the GPU test prints `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` turns that
//! into a failure.

#![expect(clippy::unwrap_used, clippy::panic, reason = "tests")]

mod common;

use common::device;
use wgfhe::rlwe::KeyRequest;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::ledger::Ledger;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::{Bgv, Ciphertext, EvaluationKeys};
use wgfhe::compare::poly_eval::{best_dense, dense_cost};
use wgfhe::compare::{
    eval_lut, eval_lut_bounded, eval_lut_set_measured, eval_lut_with_plan, Bounded, EvalPlan, EvalStats, Lut, LutSet,
    Objective, Strategy,
};
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::SecretKey;
use wgfhe::Error;

const T: u32 = 65537;

struct Fixture<B: Backend> {
    bgv: Bgv<B>,
    sk: SecretKey<B>,
    keys: EvaluationKeys<B>,
}

fn test_params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 12, p_primes: 3, dnum: 4 }, u64::from(T)).unwrap()
}

fn fixture_on<B: Backend>(bgv: Bgv<B>, seed: u8) -> Fixture<B> {
    let sk = bgv.gen_secret_key_from_seed(&[seed; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    Fixture { bgv, sk, keys }
}

/// The CPU fixture, its backend wrapped in the traffic ledger so that [`check_lut`] counts the
/// kernels the evaluation really dispatched.
fn fixture(params: &Parameters, seed: u8) -> Fixture<Ledger<CpuBackend>> {
    fixture_on(Bgv::new(Ledger::new(CpuBackend::new(RingContext::new(params).unwrap()))).unwrap(), seed)
}

/// One value per slot: the edge cases 0, +-1, +-B', +-(B'-1), then uniform in `[-B', B']`.
fn inputs(slots: usize, b: i64, rng: &mut ChaCha8Rng) -> Vec<i64> {
    let mut v = vec![0, 1, -1, b, -b, b - 1, 1 - b];
    v.truncate(slots);
    while v.len() < slots {
        v.push(rng.random_range(-b..=b));
    }
    v
}

fn encrypt<B: Backend>(f: &Fixture<B>, values: &[i64], bound: u64) -> Bounded<B> {
    let pt = f.bgv.encoder().encode_signed(values).unwrap();
    let ct = f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap();
    Bounded::fresh(&f.bgv, ct, bound).unwrap()
}

fn decrypt<B: Backend>(f: &Fixture<B>, ct: &Ciphertext<B>) -> Vec<u64> {
    f.bgv.encoder().decode(&f.bgv.decrypt(&f.sk, ct).unwrap()).unwrap()
}

fn modt(v: i64) -> u64 {
    v.rem_euclid(i64::from(T)) as u64
}

/// Evaluates `lut` on `x` (holding `values`) and checks every slot against `f`, the stats
/// against the plan and the measured noise against the estimate.
///
/// HMULTs and relinearisations are counted from the ledger's records: a tensor product
/// `(a_0 b_0, a_0 b_1 + a_1 b_0, a_1 b_1)` is exactly one `tensor` kernel and a relinearisation
/// exactly one `key_switch_inner_product`.
fn check_lut(
    f: &Fixture<Ledger<CpuBackend>>,
    x: &Bounded<Ledger<CpuBackend>>,
    values: &[i64],
    lut: &Lut,
    name: &str,
    reference: impl Fn(i64) -> i64,
) -> EvalStats {
    f.bgv.backend().take();
    let (out, stats) = eval_lut(&f.bgv, &f.keys, x, lut).unwrap_or_else(|e| panic!("{name}: {e}"));
    let records = f.bgv.backend().take();
    let dispatched = |kernel: &str| records.iter().filter(|r| r.kernel == kernel).count();
    let plan = lut.plan().cost;
    assert_eq!(dispatched("tensor"), plan.hmults, "{name}: tensor products dispatched vs the plan's HMULTs");
    assert_eq!(
        dispatched("key_switch_inner_product"),
        plan.relins,
        "{name}: key switches dispatched vs the plan's relinearisations"
    );
    assert_eq!(stats, plan, "{name}: the evaluator's own stats differ from the plan");
    let got = decrypt(f, &out);
    for (slot, (&g, &v)) in got.iter().zip(values).enumerate() {
        assert_eq!(g, modt(reference(v)), "{name}: slot {slot}, x = {v}");
    }
    let m = f.bgv.measure_noise(&f.sk, &out).unwrap();
    assert!(
        m.canonical_log2 <= out.noise_estimate(),
        "{name}: measured noise 2^{:.1} above the estimate 2^{:.1}",
        m.canonical_log2,
        out.noise_estimate()
    );
    stats
}

fn relu_requant_ref(mul: i64, shift: u32, clip: i64) -> impl Fn(i64) -> i64 {
    move |x| {
        let v = x.max(0) * mul;
        let r = if shift == 0 { v } else { (v + (1 << (shift - 1))) >> shift };
        r.clamp(0, clip)
    }
}

/// Every built-in table on B' in `domains`, >= 1000 random inputs plus edge cases.
fn builtins_on_encrypted_inputs(domains: &[u64], seed: u8) {
    let f = fixture(&test_params(), seed);
    let slots = f.bgv.encoder().slots();
    assert!(slots >= 1000);
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(seed));
    for &b in domains {
        let bi = b as i64;
        let values = inputs(slots, bi, &mut rng);
        let x = encrypt(&f, &values, b);
        let name = |what: &str| format!("{what}, B' = {b}");
        check_lut(&f, &x, &values, &Lut::relu(T, b).unwrap(), &name("relu"), |v| v.max(0));
        check_lut(
            &f,
            &x,
            &values,
            &Lut::relu_requant(T, b, 77, 4, 127).unwrap(),
            &name("relu_requant(77, 4, 127)"),
            relu_requant_ref(77, 4, 127),
        );
        check_lut(
            &f,
            &x,
            &values,
            &Lut::relu_requant(T, b, 3, 1, b / 2).unwrap(),
            &name("relu_requant(3, 1, B'/2)"),
            relu_requant_ref(3, 1, bi / 2),
        );
        check_lut(&f, &x, &values, &Lut::sign(T, b).unwrap(), &name("sign"), i64::signum);
        for c in [0, 3, -bi / 2, bi] {
            let lt = Lut::less_than(T, b, c).unwrap();
            check_lut(&f, &x, &values, &lt, &name(&format!("x < {c}")), |v| i64::from(v < c));
            let eq = Lut::equals(T, b, c).unwrap();
            check_lut(&f, &x, &values, &eq, &name(&format!("x = {c}")), |v| i64::from(v == c));
        }
    }
}

#[test]
fn builtins_exact_on_encrypted_inputs_b7_b15() {
    builtins_on_encrypted_inputs(&[7, 15], 1);
}

#[test]
fn builtins_exact_on_encrypted_inputs_b31_b63() {
    builtins_on_encrypted_inputs(&[31, 63], 2);
}

#[test]
fn measured_costs_match_the_formula() {
    // Degree 30 (B' = 15), dense (a table without structure): 11 HMULTs at depth 5 with k = 8.
    // The closed form counts a relinearisation per HMULT (eager).
    assert_eq!(dense_cost(30, 8), Some(EvalStats { hmults: 11, depth: 5, relins: 11 }));
    assert_eq!(best_dense(30, Objective::Hmults), (8, EvalStats { hmults: 11, depth: 5, relins: 11 }));
    let f = fixture(&test_params(), 3);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let values = inputs(f.bgv.encoder().slots(), 15, &mut rng);
    let x = encrypt(&f, &values, 15);
    // less_than(3) on [-15, 15] has all 31 coefficients non-zero.
    let lt = Lut::less_than(T, 15, 3).unwrap();
    assert!(lt.coefficients().iter().all(|&c| c != 0) && lt.degree() == 30);
    let plan = lt.plan();
    assert_eq!((plan.strategy, plan.baby_steps), (Strategy::Direct, 8));
    assert_eq!((plan.cost.hmults, plan.cost.depth), (11, 5));
    let stats = check_lut(&f, &x, &values, &lt, "x < 3", |v| i64::from(v < 3));
    assert_eq!((stats.hmults, stats.depth), (11, 5));
    // Lazy relinearisation: fewer key switches than products, as the plan predicted.
    assert!(stats.relins < stats.hmults, "{stats:?}");
    // ReLU: p_e(x^2) + x/2, so 1 + dense(15) = 1 + 7 at depth 1 + 4 (p_e is dense).
    let relu = Lut::relu(T, 15).unwrap();
    assert_eq!(relu.plan().strategy, Strategy::EvenOdd);
    // p_e = |x|/2 on the squares: every coefficient but the constant (0) is non-zero.
    assert!(relu.even_part().iter().skip(1).all(|&c| c != 0));
    let want = dense_cost(15, relu.plan().baby_steps).unwrap();
    let cost = relu.plan().cost;
    assert_eq!((cost.hmults, cost.depth), (1 + want.hmults, 1 + want.depth));
    assert_eq!((cost.hmults, cost.depth), (8, 5));
    assert!(cost.relins <= cost.hmults, "{cost:?}");
    check_lut(&f, &x, &values, &relu, "relu", |v| v.max(0));
}

#[test]
fn every_strategy_and_baby_step_count_is_exact() {
    let f = fixture(&test_params(), 4);
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let b = 7;
    let values = inputs(f.bgv.encoder().slots(), b, &mut rng);
    let x = encrypt(&f, &values, b as u64);
    for (lut, reference) in [
        (Lut::less_than(T, 7, 2).unwrap(), Box::new(|v: i64| i64::from(v < 2)) as Box<dyn Fn(i64) -> i64>),
        (Lut::sign(T, 7).unwrap(), Box::new(i64::signum)),
        (Lut::relu(T, 7).unwrap(), Box::new(|v: i64| v.max(0))),
        (Lut::compile(T, 7, |_| -3).unwrap(), Box::new(|_| -3)),
        (Lut::compile(T, 7, |v| 5 * v - 2).unwrap(), Box::new(|v| 5 * v - 2)),
    ] {
        for strategy in [Strategy::Direct, Strategy::EvenOdd] {
            for k in 1..=9 {
                let plan = EvalPlan { strategy, baby_steps: k, cost: EvalStats::default() };
                f.bgv.backend().take();
                let (out, stats) = eval_lut_with_plan(&f.bgv, &f.keys, &x, &lut, &plan).unwrap();
                let records = f.bgv.backend().take();
                let want = lut.cost(strategy, k).unwrap();
                let tensors = records.iter().filter(|r| r.kernel == "tensor").count();
                assert_eq!(tensors, want.hmults, "tensor products dispatched, {strategy:?}, k = {k}");
                assert_eq!(stats, want, "{strategy:?}, k = {k}");
                let got = decrypt(&f, &out);
                for (&g, &v) in got.iter().zip(&values) {
                    assert_eq!(g, modt(reference(v)), "{strategy:?}, k = {k}, x = {v}");
                }
            }
        }
        let zero = EvalPlan { strategy: Strategy::Direct, baby_steps: 0, cost: EvalStats::default() };
        assert!(matches!(eval_lut_with_plan(&f.bgv, &f.keys, &x, &lut, &zero), Err(Error::InvalidField { .. })));
    }
}

#[test]
fn depth_objective_plans_are_exact_too() {
    let f = fixture(&test_params(), 5);
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let values = inputs(f.bgv.encoder().slots(), 31, &mut rng);
    let x = encrypt(&f, &values, 31);
    // Odd: the even/odd split costs a level more than the direct evaluation at depth 6.
    let sign = Lut::sign(T, 31).unwrap();
    let shallow = sign.with_objective(Objective::Depth).unwrap();
    assert_eq!(sign.plan().cost.depth, 7);
    assert_eq!(shallow.plan().cost.depth, 6);
    assert!(shallow.plan().cost.hmults > sign.plan().cost.hmults);
    check_lut(&f, &x, &values, &shallow, "sign (depth objective)", i64::signum);
}

#[test]
fn weighted_sum_input_with_propagated_bound() {
    let p = test_params();
    let f = fixture(&p, 6);
    let slots = f.bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let a_vals = inputs(slots, 3, &mut rng);
    let b_vals = inputs(slots, 2, &mut rng);
    let c_vals = inputs(slots, 5, &mut rng);
    let a = encrypt(&f, &a_vals, 3);
    let b = encrypt(&f, &b_vals, 2);
    // c at a lower level: the weighted sum switches the others down to it.
    let c_ct = f
        .bgv
        .encrypt_symmetric_at(&f.sk, &f.bgv.encoder().encode_signed(&c_vals).unwrap(), f.bgv.max_level() - 1)
        .unwrap();
    let c = Bounded::fresh(&f.bgv, c_ct, 5).unwrap();
    // z = 3a - 2b + c + 4: |z| <= 9 + 4 + 5 + 4 = 22 (reached: a = 3, b = -2, c = 5).
    let z = Bounded::weighted_sum(&f.bgv, &[(3, &a), (-2, &b), (1, &c)], 4).unwrap();
    assert_eq!(z.bound(), 22);
    let z_vals: Vec<i64> = (0..slots).map(|i| 3 * a_vals[i] - 2 * b_vals[i] + c_vals[i] + 4).collect();
    assert_eq!(decrypt(&f, z.ciphertext()), z_vals.iter().map(|&v| modt(v)).collect::<Vec<_>>());
    // A table on a domain just covering the bound, and one on a wider domain.
    for domain in [22, 31] {
        check_lut(&f, &z, &z_vals, &Lut::relu(T, domain).unwrap(), &format!("relu on [-{domain}, {domain}]"), |v| {
            v.max(0)
        });
    }
    check_lut(&f, &z, &z_vals, &Lut::less_than(T, 22, -7).unwrap(), "z < -7", |v| i64::from(v < -7));
    // The other linear operations and their bounds.
    assert_eq!(a.add(&f.bgv, &b).unwrap().bound(), 5);
    assert_eq!(a.sub(&f.bgv, &c).unwrap().bound(), 8);
    assert_eq!(a.neg(&f.bgv).unwrap().bound(), 3);
    let a7 = a.mul_int(&f.bgv, -7).unwrap();
    assert_eq!(a7.bound(), 21);
    let plain: Vec<i64> = (0..slots as i64).map(|i| i % 11 - 5).collect();
    let pt = f.bgv.encoder().encode_signed(&plain).unwrap();
    let shifted = a7.add_plain(&f.bgv, &pt).unwrap();
    assert_eq!(shifted.bound(), 26);
    let want: Vec<i64> = (0..slots).map(|i| -7 * a_vals[i] + plain[i]).collect();
    check_lut(&f, &shifted, &want, &Lut::sign(T, 26).unwrap(), "sign(-7a + p)", i64::signum);
    let diff = a.sub(&f.bgv, &c).unwrap();
    let want: Vec<i64> = (0..slots).map(|i| a_vals[i] - c_vals[i]).collect();
    check_lut(&f, &diff, &want, &Lut::equals(T, 8, 0).unwrap(), "a = c", |v| i64::from(v == 0));
}

#[test]
fn lut_output_feeds_the_next_layer() {
    let f = fixture(
        &params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 16, p_primes: 4, dnum: 4 }, u64::from(T))
            .unwrap(),
        7,
    );
    let slots = f.bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let values = inputs(slots, 3, &mut rng);
    let x = encrypt(&f, &values, 3);
    let requant = Lut::relu_requant(T, 3, 3, 1, 4).unwrap();
    let (h, _) = eval_lut_bounded(&f.bgv, &f.keys, &x, &requant).unwrap();
    assert_eq!(h.bound(), 4);
    // y = 2 h - x - 1: |y| <= 8 + 3 + 1 = 12.
    let y = Bounded::weighted_sum(&f.bgv, &[(2, &h), (-1, &x)], -1).unwrap();
    assert_eq!(y.bound(), 12);
    let want: Vec<i64> = values.iter().map(|&v| 2 * relu_requant_ref(3, 1, 4)(v) - v - 1).collect();
    check_lut(&f, &y, &want, &Lut::sign(T, 12).unwrap(), "sign of the second layer", i64::signum);
}

#[test]
fn other_plaintext_modulus_786433() {
    let t = 786_433u32;
    let p = params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 14, p_primes: 4, dnum: 4 }, u64::from(t))
        .unwrap();
    let f = fixture(&p, 8);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let values = inputs(f.bgv.encoder().slots(), 15, &mut rng);
    let x = encrypt(&f, &values, 15);
    for (lut, name, reference) in [
        (Lut::relu(t, 15).unwrap(), "relu", Box::new(|v: i64| v.max(0)) as Box<dyn Fn(i64) -> i64>),
        (Lut::sign(t, 15).unwrap(), "sign", Box::new(i64::signum)),
    ] {
        let (out, stats) = eval_lut(&f.bgv, &f.keys, &x, &lut).unwrap();
        assert_eq!(stats, lut.plan().cost);
        let got = decrypt(&f, &out);
        for (&g, &v) in got.iter().zip(&values) {
            assert_eq!(g, reference(v).rem_euclid(i64::from(t)) as u64, "{name}, x = {v}");
        }
    }
    // A table for 65537 on these parameters is refused.
    let wrong = Lut::relu(T, 15).unwrap();
    assert!(matches!(eval_lut(&f.bgv, &f.keys, &x, &wrong), Err(Error::InvalidPlaintextModulus { t: 65537, .. })));
}

#[test]
fn out_of_domain_bound_is_a_typed_error() {
    let f = fixture(&test_params(), 9);
    let x = encrypt(&f, &[16, -3], 16);
    let lut = Lut::relu(T, 15).unwrap();
    assert!(matches!(eval_lut(&f.bgv, &f.keys, &x, &lut), Err(Error::LutDomain { bound: 16, domain: 15 })));
    // A sum whose bound grows past the domain is refused too, even if its values are small.
    let y = encrypt(&f, &[1, 1], 8);
    let sum = y.add(&f.bgv, &y).unwrap();
    assert_eq!(sum.bound(), 16);
    assert!(matches!(eval_lut(&f.bgv, &f.keys, &sum, &lut), Err(Error::LutDomain { bound: 16, domain: 15 })));
    // Without a relinearisation key.
    let ok = encrypt(&f, &[1], 15);
    let no_keys = EvaluationKeys::default();
    assert!(matches!(eval_lut(&f.bgv, &no_keys, &ok, &lut), Err(Error::MissingRelinKey)));
}

#[test]
fn bounds_at_or_above_half_t_are_typed_errors() {
    let f = fixture(&test_params(), 10);
    let limit = u64::from(T - 1) / 2; // 32768
    let ct = || f.bgv.encrypt_symmetric(&f.sk, &f.bgv.encoder().encode(&[1]).unwrap()).unwrap();
    assert!(matches!(Bounded::fresh(&f.bgv, ct(), limit), Err(Error::BoundTooLarge { bound: 32768, limit: 32768 })));
    assert!(matches!(Bounded::fresh(&f.bgv, ct(), u64::MAX), Err(Error::BoundTooLarge { .. })));
    let x = Bounded::fresh(&f.bgv, ct(), limit - 1).unwrap();
    assert!(matches!(x.add(&f.bgv, &x), Err(Error::BoundTooLarge { bound: 65534, .. })));
    assert!(matches!(x.mul_int(&f.bgv, 2), Err(Error::BoundTooLarge { .. })));
    assert!(matches!(x.mul_int(&f.bgv, i64::MIN), Err(Error::BoundTooLarge { .. })));
    let small = Bounded::fresh(&f.bgv, ct(), 1000).unwrap();
    assert!(matches!(
        Bounded::weighted_sum(&f.bgv, &[(16, &small), (16, &small), (1, &small)], 0),
        Err(Error::BoundTooLarge { bound: 33000, .. })
    ));
    assert!(matches!(Bounded::weighted_sum(&f.bgv, &[(1, &small)], 40000), Err(Error::BoundTooLarge { .. })));
    assert!(matches!(
        Bounded::weighted_sum(&f.bgv, &[(i64::MAX, &small)], 0),
        Err(Error::BoundTooLarge { bound: u64::MAX, .. })
    ));
    assert!(matches!(Bounded::weighted_sum(&f.bgv, &[], 1), Err(Error::InvalidField { .. })));
    let big: Vec<i64> = vec![32768 - 1000; 4];
    let pt = f.bgv.encoder().encode_signed(&big).unwrap();
    assert!(matches!(small.add_plain(&f.bgv, &pt), Err(Error::BoundTooLarge { bound: 32768, .. })));
    // Tables: the domain must be below (t-1)/2 as well.
    assert!(matches!(Lut::sign(T, limit), Err(Error::BoundTooLarge { bound: 32768, limit: 32768 })));
    assert!(matches!(Lut::sign(T, 40_000), Err(Error::BoundTooLarge { .. })));
    // A ciphertext of other parameters.
    let g = fixture(
        &params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, u64::from(T))
            .unwrap(),
        11,
    );
    let foreign = g.bgv.encrypt_symmetric(&g.sk, &g.bgv.encoder().encode(&[1]).unwrap()).unwrap();
    assert!(matches!(Bounded::fresh(&f.bgv, foreign, 1), Err(Error::ParameterMismatch { .. })));
}

// ---- GPU -----------------------------------------------------------------------------------

fn words<B: Backend>(bgv: &Bgv<B>, ct: &Ciphertext<B>) -> Vec<Vec<u32>> {
    ct.polys().iter().map(|p| bgv.backend().download(p.buffer()).unwrap()).collect()
}

#[test]
fn gpu_evaluation_is_bit_identical_to_cpu() {
    let Some(dev) = device() else { return };
    let p = test_params();
    let cpu = fixture(&p, 12);
    let gpu = fixture_on(Bgv::new(GpuBackend::new(RingContext::new(&p).unwrap(), dev)).unwrap(), 12);
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for b in [7i64, 15, 63] {
        gpu_tables_at(&cpu, &gpu, b, &mut rng);
    }
}

/// Every built-in table on `[-b, b]`, >= 1000 inputs with the edge cases, CPU against GPU.
fn gpu_tables_at(cpu: &Fixture<Ledger<CpuBackend>>, gpu: &Fixture<GpuBackend>, b: i64, rng: &mut ChaCha8Rng) {
    let values = inputs(cpu.bgv.encoder().slots(), b, rng);
    let x_cpu = encrypt(cpu, &values, b as u64);
    let x_gpu = encrypt(gpu, &values, b as u64);
    assert_eq!(words(&cpu.bgv, x_cpu.ciphertext()), words(&gpu.bgv, x_gpu.ciphertext()), "fresh encryptions");
    for (lut, reference) in [
        (Lut::relu(T, b as u64).unwrap(), Box::new(|v: i64| v.max(0)) as Box<dyn Fn(i64) -> i64>),
        (Lut::less_than(T, b as u64, 3).unwrap(), Box::new(|v: i64| i64::from(v < 3))),
        (Lut::sign(T, b as u64).unwrap(), Box::new(i64::signum)),
        (Lut::equals(T, b as u64, -2).unwrap(), Box::new(|v: i64| i64::from(v == -2))),
        (Lut::relu_requant(T, b as u64, 77, 4, 127).unwrap(), Box::new(relu_requant_ref(77, 4, 127))),
    ] {
        let (out_cpu, stats_cpu) = eval_lut(&cpu.bgv, &cpu.keys, &x_cpu, &lut).unwrap();
        let (out_gpu, stats_gpu) = eval_lut(&gpu.bgv, &gpu.keys, &x_gpu, &lut).unwrap();
        assert_eq!(stats_cpu, stats_gpu);
        assert_eq!(out_cpu.level(), out_gpu.level());
        assert_eq!(out_cpu.correction_factor(), out_gpu.correction_factor());
        assert_eq!(words(&cpu.bgv, &out_cpu), words(&gpu.bgv, &out_gpu), "B' = {b}: output ciphertexts differ");
        let got = decrypt(gpu, &out_gpu);
        for (&g, &v) in got.iter().zip(&values) {
            assert_eq!(g, modt(reference(v)), "GPU decryption, B' = {b}, x = {v}");
        }
    }
}

/// The working set of a table evaluation (ciphertexts held at once): with the powers released
/// after their last use and kept at the one level the blocks are formed at, the direct
/// strategy on dense tables holds at most `k` baby steps + `m - 1` giant steps + `m` pending
/// products `q G` (one per recursion level) + a quotient and its relinearised form + the block
/// `r` being added to a product + the `s - 1` results already computed, for `s` tables of `n` coefficients, `m = ceil(log2(n /
/// k))`; never more than when everything is held to the end; and the ciphertexts are the same
/// bit for bit either way.
#[test]
fn table_working_set_is_bounded() {
    let f = fixture(&test_params(), 9);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for b in [15u64, 63] {
        let values = inputs(f.bgv.encoder().slots(), b as i64, &mut rng);
        let x = encrypt(&f, &values, b);
        let sets = [
            vec![Lut::less_than(T, b, 3).unwrap()],
            vec![Lut::relu(T, b).unwrap()],
            vec![Lut::less_than(T, b, 3).unwrap(), Lut::sign(T, b).unwrap(), Lut::less_than(T, b, -2).unwrap()],
        ];
        for tables in sets {
            let s = tables.len();
            let set = LutSet::new(tables).unwrap();
            for (strategy, k) in
                [(Strategy::Direct, 4), (Strategy::Direct, 8), (Strategy::Direct, 16), (Strategy::EvenOdd, 8)]
            {
                let plan = EvalPlan { strategy, baby_steps: k, cost: EvalStats::default() };
                let (new, _, peak) = eval_lut_set_measured(&f.bgv, &f.keys, &x, &set, &plan, true).unwrap();
                let (old, _, held) = eval_lut_set_measured(&f.bgv, &f.keys, &x, &set, &plan, false).unwrap();
                let what = format!("B' = {b}, {s} tables, {strategy:?}, k = {k}");
                for (a, o) in new.iter().zip(&old) {
                    assert_eq!(words(&f.bgv, a), words(&f.bgv, o), "{what}");
                }
                assert!(peak <= held, "{what}: {peak} > {held}");
                if strategy == Strategy::Direct
                    && set.tables().iter().all(|l| l.coefficients().iter().skip(1).all(|&c| c != 0))
                {
                    let n = 2 * b as usize + 1;
                    let m = n.div_ceil(k).next_power_of_two().trailing_zeros() as usize;
                    let bound = k + (m - 1) + m + 3 + (s - 1);
                    assert!(peak <= bound, "{what}: {peak} ciphertexts held, bound {bound}");
                }
                println!("{what}: peak {peak} ciphertexts (held to the end: {held})");
            }
        }
    }
}
