//! CKKS end to end: every operation against the same computation in f64, at several levels of
//! two parameter sets and both scale policies, plus typed errors. Each test body is written once
//! over the backend and runs on the CPU reference (`cpu::*`, and the shipped sets, CPU only) and
//! on the GPU (`gpu::*`, small rings), where every checked ciphertext must also have the CPU's
//! words (see `common/backends.rs`).

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use backends::{cpu, cpu_and_gpu, Make, Transcript};
use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::Backend;
use wgfhe::ckks::{precision_stats, Ciphertext, Ckks, ScalePolicy};
use wgfhe::params::{self, Parameters};
use wgfhe::rlwe::KeyRequest;
use wgfhe::rlwe::{EvaluationKeys, SecretKey};
use wgfhe::Error;

cpu_and_gpu!(
    every_operation_insecure_n1024_single,
    every_operation_insecure_n1024_double,
    depth_chain_insecure_single,
    depth_chain_insecure_double,
    sparse_packing_and_public_key,
    flooded_decryption_costs_precision,
    misuse_gives_typed_errors,
    prepared_plaintexts_give_the_unprepared_words,
);

struct Fixture<'l, B: Backend> {
    ckks: Ckks<B>,
    sk: SecretKey<B>,
    keys: EvaluationKeys<B>,
    rng: ChaCha8Rng,
    log: &'l Transcript,
}

const STEPS: [i64; 3] = [1, -2, 7];

fn fixture<'l, B: Backend>(
    make: Make<'_, B>,
    params: &Parameters,
    policy: ScalePolicy,
    seed: u8,
    log: &'l Transcript,
) -> Fixture<'l, B> {
    let ckks = Ckks::new(make(params), policy).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[seed; 32]).unwrap();
    let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&STEPS).with_conjugation()).unwrap();
    Fixture { ckks, sk, keys, rng: ChaCha8Rng::seed_from_u64(u64::from(seed)), log }
}

fn random_values<B: Backend>(f: &mut Fixture<'_, B>, slots: usize) -> Vec<Complex64> {
    (0..slots).map(|_| Complex64::new(f.rng.random_range(-1.0..1.0), f.rng.random_range(-1.0..1.0))).collect()
}

/// The stated error bounds. Without key switching: `2^(-log2(scale) + log2(N)/2 + 10)`, the
/// fresh-encryption noise (about `6 sigma sqrt(N)`) and the rounding of a rescale over the
/// scale, with 10 bits to spare for products of values of magnitude up to 2. With key switching
/// (HMULT, rotations, conjugation): `2^(-log2(scale) + log2(N) + 6)`, since `sum_j d_j e_j / P`
/// grows like `N sigma`.
fn bound<B: Backend>(f: &Fixture<'_, B>, scale: f64, key_switch: bool) -> f64 {
    let log_n = (f.ckks.params().n() as f64).log2();
    let slack = if key_switch { log_n + 6.0 } else { log_n / 2.0 + 10.0 };
    (slack - scale.log2()).exp2()
}

fn max_err(want: &[Complex64], got: &[Complex64]) -> f64 {
    assert_eq!(want.len(), got.len());
    want.iter().zip(got).map(|(w, g)| (w - g).norm()).fold(0.0, f64::max)
}

/// Decrypts `ct` and checks it against `want` within the stated bound; records its words unless
/// it comes from a public-key encryption (fresh randomness, not reproducible from the seeds).
#[track_caller]
fn check<B: Backend>(f: &Fixture<'_, B>, ct: &Ciphertext<B>, want: &[Complex64], what: &str) {
    if !what.contains("public") {
        f.log.record(f.ckks.backend(), &format!("{what} at level {}", ct.level()), ct.polys());
    }
    let got = f.ckks.decrypt(&f.sk, ct).unwrap();
    let err = max_err(want, &got);
    let key_switch = ["rotate", "conjugate", "mul_relin", "sparse rotation"].iter().any(|w| what.starts_with(w));
    let b = bound(f, f.ckks.default_scale(), key_switch);
    assert!(err < b, "{what} at level {}: error 2^{:.1} above bound 2^{:.1}", ct.level(), err.log2(), b.log2());
}

fn rotate(v: &[Complex64], steps: i64) -> Vec<Complex64> {
    let n = v.len() as i64;
    (0..n).map(|i| v[(i + steps).rem_euclid(n) as usize]).collect()
}

fn every_op_at_levels<B: Backend>(
    make: Make<'_, B>,
    params: &Parameters,
    policy: ScalePolicy,
    seed: u8,
    log: &Transcript,
) {
    let mut f = fixture(make, params, policy, seed, log);
    let slots = f.ckks.encoder().max_slots();
    let scale = f.ckks.default_scale();
    let k = policy.primes_per_level();
    let top = f.ckks.max_level();
    let lowest = policy.base_primes() - 1 + k;
    // The top, a middle level and the lowest level that can still rescale.
    let mut levels = vec![top, lowest + (top - lowest) / 2, lowest];
    levels.dedup();
    for level in levels {
        let (a, b) = (random_values(&mut f, slots), random_values(&mut f, slots));
        let pa = f.ckks.encode(&a, scale, slots, level).unwrap();
        let pb = f.ckks.encode(&b, scale, slots, level).unwrap();
        let ca = f.ckks.encrypt_symmetric(&f.sk, &pa).unwrap();
        let cb = f.ckks.encrypt_symmetric(&f.sk, &pb).unwrap();
        assert_eq!(ca.level(), level);
        check(&f, &ca, &a, "encrypt");
        let zip = |op: &dyn Fn(Complex64, Complex64) -> Complex64| {
            a.iter().zip(&b).map(|(&x, &y)| op(x, y)).collect::<Vec<_>>()
        };
        check(&f, &f.ckks.add(&ca, &cb).unwrap(), &zip(&|x, y| x + y), "add");
        check(&f, &f.ckks.sub(&ca, &cb).unwrap(), &zip(&|x, y| x - y), "sub");
        check(&f, &f.ckks.neg(&ca).unwrap(), &a.iter().map(|x| -x).collect::<Vec<_>>(), "neg");
        check(&f, &f.ckks.add_plain(&ca, &pb).unwrap(), &zip(&|x, y| x + y), "add_plain");
        let c = Complex64::new(0.25, -0.5);
        check(&f, &f.ckks.add_const(&ca, c).unwrap(), &a.iter().map(|x| x + c).collect::<Vec<_>>(), "add_const");
        let pm = f.ckks.rescale(&f.ckks.mul_plain(&ca, &pb).unwrap()).unwrap();
        assert_eq!(pm.level(), level - k);
        check(&f, &pm, &zip(&|x, y| x * y), "mul_plain + rescale");
        let mc = f.ckks.rescale(&f.ckks.mul_const(&ca, c).unwrap()).unwrap();
        check(&f, &mc, &a.iter().map(|x| x * c).collect::<Vec<_>>(), "mul_const + rescale");
        let hm = f.ckks.rescale(&f.ckks.mul_relin(&ca, &cb, &f.keys).unwrap()).unwrap();
        check(&f, &hm, &zip(&|x, y| x * y), "mul_relin + rescale");
        for steps in STEPS {
            check(&f, &f.ckks.rotate(&ca, steps, &f.keys).unwrap(), &rotate(&a, steps), "rotate");
        }
        check(
            &f,
            &f.ckks.conjugate(&ca, &f.keys).unwrap(),
            &a.iter().map(|x| x.conj()).collect::<Vec<_>>(),
            "conjugate",
        );
        let low = f.ckks.drop_to_level(&ca, lowest - 1).unwrap();
        check(&f, &low, &a, "drop_to_level");
        // Operands at different levels: an error until aligned explicitly.
        if level > lowest {
            let cb_low = f.ckks.drop_to_level(&cb, lowest).unwrap();
            assert!(matches!(f.ckks.add(&ca, &cb_low), Err(Error::LevelMismatch { .. })));
            let ca_low = f.ckks.drop_to_level(&ca, lowest).unwrap();
            check(&f, &f.ckks.add(&ca_low, &cb_low).unwrap(), &zip(&|x, y| x + y), "add after alignment");
        }
    }
}

fn every_operation_insecure_n1024_single<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    every_op_at_levels(
        make,
        &params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 8, p_primes: 2, dnum: 4 }, 30).unwrap(),
        ScalePolicy::Single,
        1,
        log,
    );
}

fn every_operation_insecure_n1024_double<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    every_op_at_levels(
        make,
        &params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 9, p_primes: 3, dnum: 3 }, 30).unwrap(),
        ScalePolicy::Double,
        2,
        log,
    );
}

#[test]
fn every_operation_ckks_n13() {
    every_op_at_levels(&cpu, &params::by_name("ckks-n13").unwrap(), ScalePolicy::Single, 3, &Transcript::default());
}

#[test]
fn every_operation_ckks_n14_double() {
    every_op_at_levels(&cpu, &params::by_name("ckks-n14").unwrap(), ScalePolicy::Double, 4, &Transcript::default());
}

/// Squares down the whole chain; values stay in the unit disc.
fn depth_chain<B: Backend>(make: Make<'_, B>, params: &Parameters, policy: ScalePolicy, log: &Transcript) {
    let mut f = fixture(make, params, policy, 9, log);
    let slots = f.ckks.encoder().max_slots();
    // |z| < 1, so the squares stay in the unit disc.
    let a: Vec<Complex64> = random_values(&mut f, slots).into_iter().map(|z| z * 0.7).collect();
    let pt = f.ckks.encode(&a, f.ckks.default_scale(), slots, f.ckks.max_level()).unwrap();
    let mut ct = f.ckks.encrypt_symmetric(&f.sk, &pt).unwrap();
    let mut want = a;
    for d in 0..f.ckks.max_depth() {
        ct = f.ckks.rescale(&f.ckks.mul_relin(&ct, &ct, &f.keys).unwrap()).unwrap();
        want = want.iter().map(|z| z * z).collect();
        log.record(f.ckks.backend(), &format!("square {}", d + 1), ct.polys());
        let got = f.ckks.decrypt(&f.sk, &ct).unwrap();
        let stats = precision_stats(&want, &got).unwrap();
        assert!(stats.min_real > 12.0 && stats.min_imag > 12.0, "depth {}: {stats:?}", d + 1);
    }
    // At the base no level is left: the product no longer fits, or cannot be rescaled.
    match f.ckks.mul_relin(&ct, &ct, &f.keys) {
        Err(Error::ScaleOverflow { .. }) => {}
        Ok(prod) => assert!(matches!(f.ckks.rescale(&prod), Err(Error::DepthExhausted { .. }))),
        Err(e) => panic!("unexpected {e}"),
    }
}

fn depth_chain_insecure_single<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    depth_chain(
        make,
        &params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 8, p_primes: 2, dnum: 4 }, 30).unwrap(),
        ScalePolicy::Single,
        log,
    );
}

fn depth_chain_insecure_double<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    depth_chain(
        make,
        &params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 9, p_primes: 3, dnum: 3 }, 30).unwrap(),
        ScalePolicy::Double,
        log,
    );
}

fn sparse_packing_and_public_key<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30).unwrap();
    let mut f = fixture(make, &p, ScalePolicy::Single, 5, log);
    let a = random_values(&mut f, 8);
    let pt = f.ckks.encode(&a, f.ckks.default_scale(), 8, f.ckks.max_level()).unwrap();
    // Symmetric (reproducible, so recorded) and public-key (fresh randomness) encryptions.
    let sym = f.ckks.encrypt_symmetric(&f.sk, &pt).unwrap();
    let pk = f.ckks.gen_public_key(&f.sk).unwrap();
    let ct = f.ckks.encrypt_public(&pk, &pt).unwrap();
    assert_eq!((ct.slots(), sym.slots()), (8, 8));
    check(&f, &sym, &a, "symmetric encryption, 8 slots");
    check(&f, &ct, &a, "public-key encryption, 8 slots");
    for steps in STEPS {
        check(&f, &f.ckks.rotate(&sym, steps, &f.keys).unwrap(), &rotate(&a, steps), "sparse rotation");
        check(&f, &f.ckks.rotate(&ct, steps, &f.keys).unwrap(), &rotate(&a, steps), "sparse rotation (public)");
    }
    let real = f.ckks.encode_real(&[0.5, -0.25, 0.125]).unwrap();
    assert_eq!(real.slots(), 4);
}

fn flooded_decryption_costs_precision<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 4, p_primes: 1, dnum: 4 }, 30).unwrap();
    let mut f = fixture(make, &p, ScalePolicy::Single, 6, log);
    let slots = f.ckks.encoder().max_slots();
    let a = random_values(&mut f, slots);
    let ct = f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode(&a, f.ckks.default_scale(), slots, 3).unwrap()).unwrap();
    check(&f, &ct, &a, "encrypt");
    let plain = max_err(&a, &f.ckks.decrypt(&f.sk, &ct).unwrap());
    let flooded = max_err(&a, &f.ckks.decrypt_flooded(&f.sk, &ct, 20.0).unwrap());
    // Flooding of 2^20 per coefficient: slot errors near 2^20 sqrt(N) / 2^30 = 2^-5, far above
    // the unflooded error and below 2^(20 + log2(N)/2 + 3 - 30).
    assert!(flooded > 16.0 * plain, "flooded 2^{:.1} vs plain 2^{:.1}", flooded.log2(), plain.log2());
    assert!(flooded < (20.0 + 5.0 + 3.0 - 30.0f64).exp2(), "flooded error 2^{:.1}", flooded.log2());
    assert!(matches!(f.ckks.decrypt_flooded(&f.sk, &ct, f64::NAN), Err(Error::InvalidField { .. })));
}

fn misuse_gives_typed_errors<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30).unwrap();
    let mut f = fixture(make, &p, ScalePolicy::Single, 7, log);
    let slots = f.ckks.encoder().max_slots();
    let scale = f.ckks.default_scale();
    let top = f.ckks.max_level();
    let a = random_values(&mut f, slots);
    let pa = f.ckks.encode(&a, scale, slots, top).unwrap();
    let ca = f.ckks.encrypt_symmetric(&f.sk, &pa).unwrap();
    // Scale mismatch: a product before rescaling added to a fresh ciphertext.
    let prod = f.ckks.mul_relin(&ca, &ca, &f.keys).unwrap();
    let square: Vec<Complex64> = a.iter().map(|z| z * z).collect();
    check(&f, &f.ckks.rescale(&prod).unwrap(), &square, "mul_relin + rescale");
    assert!(matches!(f.ckks.add(&prod, &ca), Err(Error::ScaleMismatch { .. })));
    assert!(matches!(f.ckks.add_plain(&prod, &pa), Err(Error::ScaleMismatch { .. })));
    // Scale overflow: a third factor of 2^30 does not fit in 5 primes once the base is reached.
    let p3 = f.ckks.mul_relin(&prod, &ca, &f.keys).unwrap();
    let p4 = f.ckks.mul_relin(&p3, &ca, &f.keys).unwrap();
    assert!(matches!(f.ckks.mul(&p4, &ca), Err(Error::ScaleOverflow { .. })));
    // Missing keys.
    assert!(matches!(f.ckks.rotate(&ca, 3, &f.keys), Err(Error::MissingGaloisKey { .. })));
    assert!(matches!(f.ckks.mul_relin(&ca, &ca, &EvaluationKeys::default()), Err(Error::MissingRelinKey)));
    assert!(matches!(f.ckks.relinearize(&ca, &f.keys), Err(Error::CiphertextDegree { .. })));
    let deg2 = f.ckks.mul(&ca, &ca).unwrap();
    assert!(matches!(f.ckks.rotate(&deg2, 1, &f.keys), Err(Error::CiphertextDegree { .. })));
    // Encoding: overflow, too many values, bad scale, bad slot count.
    let big = vec![Complex64::new(1e40, 0.0)];
    assert!(matches!(f.ckks.encode(&big, scale, slots, top), Err(Error::EncodingOverflow { .. })));
    assert!(matches!(
        f.ckks.encode(&vec![Complex64::new(0.0, 0.0); slots + 1], scale, slots, top),
        Err(Error::TooManyValues { .. })
    ));
    assert!(matches!(f.ckks.encode(&a, -1.0, slots, top), Err(Error::InvalidScale { .. })));
    assert!(matches!(f.ckks.encode(&a, f64::NAN, slots, top), Err(Error::InvalidScale { .. })));
    assert!(f.ckks.encode(&a[..3], scale, 3, top).is_err());
    assert!(matches!(f.ckks.encode(&a, scale, slots, top + 1), Err(Error::LevelOutOfRange { .. })));
    // Depth exhausted.
    let mut ct = ca;
    for _ in 0..f.ckks.max_depth() {
        ct = f.ckks.rescale(&f.ckks.mul_const(&ct, Complex64::new(1.0, 0.0)).unwrap()).unwrap();
    }
    assert!(matches!(f.ckks.rescale(&ct), Err(Error::DepthExhausted { .. })));
    // A BGV parameter set is refused.
    let bgv =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    assert!(matches!(Ckks::new(make(&bgv), ScalePolicy::Single), Err(Error::SchemeMismatch { .. })));
}

/// A prepared plaintext gives exactly the unprepared PMULT's and PADD's ciphertext (words and
/// scale) and the f64 computation's values, at several levels; mismatches are typed errors.
fn prepared_plaintexts_give_the_unprepared_words<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 30).unwrap();
    let mut f = fixture(make, &p, ScalePolicy::Single, 12, log);
    let slots = f.ckks.encoder().max_slots();
    let scale = f.ckks.default_scale();
    let top = f.ckks.max_level();
    let words = |f: &Fixture<'_, B>, ct: &Ciphertext<B>| -> Vec<Vec<u32>> {
        ct.polys().iter().map(|p| p.to_host(f.ckks.backend()).unwrap()).collect()
    };
    for level in [top, 3, 2] {
        let (a, b) = (random_values(&mut f, slots), random_values(&mut f, slots));
        let ca = f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode(&a, scale, slots, level).unwrap()).unwrap();
        // A plaintext encoded for the top level, prepared (and used unprepared) at `level`.
        let pb = f.ckks.encode(&b, scale, slots, top).unwrap();
        let prepared = f.ckks.prepare_plain(&pb, level).unwrap();
        assert_eq!(prepared.level(), level);
        let (u, v) = (f.ckks.mul_plain(&ca, &pb).unwrap(), f.ckks.mul_plain_prepared(&ca, &prepared).unwrap());
        assert_eq!(words(&f, &u), words(&f, &v), "PMULT words at level {level}");
        assert_eq!(u.scale().to_bits(), v.scale().to_bits());
        let prod: Vec<Complex64> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        check(&f, &f.ckks.rescale(&v).unwrap(), &prod, "prepared mul_plain + rescale");
        let (u, v) = (f.ckks.add_plain(&ca, &pb).unwrap(), f.ckks.add_plain_prepared(&ca, &prepared).unwrap());
        assert_eq!(words(&f, &u), words(&f, &v), "PADD words at level {level}");
        assert_eq!(v.is_seeded(), u.is_seeded());
        let sum: Vec<Complex64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
        check(&f, &v, &sum, "prepared add_plain");
        // Another level, another scale: typed errors.
        let elsewhere = f.ckks.prepare_plain(&pb, level - 1).unwrap();
        assert!(matches!(f.ckks.mul_plain_prepared(&ca, &elsewhere), Err(Error::LevelMismatch { .. })));
        assert!(matches!(f.ckks.add_plain_prepared(&ca, &elsewhere), Err(Error::LevelMismatch { .. })));
        let square = f.ckks.mul(&ca, &ca).unwrap();
        assert!(matches!(f.ckks.add_plain_prepared(&square, &prepared), Err(Error::ScaleMismatch { .. })));
    }
    assert!(matches!(
        f.ckks.prepare_plain(&f.ckks.encode_real(&[1.0]).unwrap(), top + 1),
        Err(Error::LevelOutOfRange { .. })
    ));
    let other_p =
        params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30).unwrap();
    let other = Ckks::new(make(&other_p), ScalePolicy::Single).unwrap();
    let foreign = other.encode_real(&[1.0]).unwrap();
    assert!(matches!(f.ckks.prepare_plain(&foreign, 1), Err(Error::ParameterMismatch { .. })));
    let ca = f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode_real(&[0.5]).unwrap()).unwrap();
    // Prepared by the other instance at the same level: refused by its parameter id.
    let ca = f.ckks.drop_to_level(&ca, other.max_level()).unwrap();
    let foreign_prepared = other.prepare_plain(&foreign, other.max_level()).unwrap();
    assert!(matches!(f.ckks.mul_plain_prepared(&ca, &foreign_prepared), Err(Error::ParameterMismatch { .. })));
}
