//! BGV end to end: decrypt(op(enc(m))) == op(m) for every operation, at every level of several
//! parameter sets, plus the typed errors of misuse. Each test body is written once over the
//! backend and runs on the CPU reference (`cpu::*`, and the shipped sets, CPU only) and on the
//! GPU (`gpu::*`, small rings), where every decrypted ciphertext must also have the CPU's words
//! (see `common/backends.rs`).

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use backends::{cpu, cpu_and_gpu, Make, Transcript};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::Backend;
use wgfhe::bgv::{max_depth, Bgv, Ciphertext, EvaluationKeys, PlaintextCache};
use wgfhe::math::sampling::Sampler;
use wgfhe::params::{self, Parameters};
use wgfhe::rlwe::KeyRequest;
use wgfhe::rlwe::SecretKey;
use wgfhe::testing::FlipOneBit;
use wgfhe::Error;

cpu_and_gpu!(
    every_operation_every_level_insecure_n1024,
    depth_insecure_n1024,
    coefficient_encoding_with_power_of_two_t,
    reproducible_from_seed,
    misuse_gives_typed_errors,
    fresh_seeds_never_repeat,
    keys_of_other_parameters_are_refused,
    structured_plaintexts_never_decrypt_wrong,
    mixed_correction_factors_and_degrees,
    mul_plain_as_aligns_correction_factors,
    prepared_plaintexts_give_the_unprepared_words,
);

struct Fixture<'l, B: Backend> {
    bgv: Bgv<B>,
    sk: SecretKey<B>,
    keys: EvaluationKeys<B>,
    rng: ChaCha8Rng,
    log: &'l Transcript,
}

const STEPS: [i64; 4] = [1, -1, 5, 100];

fn fixture<'l, B: Backend>(make: Make<'_, B>, params: &Parameters, seed: u8, log: &'l Transcript) -> Fixture<'l, B> {
    let bgv = Bgv::new(make(params)).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[seed; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&STEPS).with_row_swap()).unwrap();
    Fixture { bgv, sk, keys, rng: ChaCha8Rng::seed_from_u64(u64::from(seed)), log }
}

fn random_values<B: Backend>(f: &mut Fixture<'_, B>) -> Vec<u64> {
    let t = u64::from(f.bgv.plaintext_modulus());
    (0..f.bgv.encoder().slots()).map(|_| f.rng.random_range(0..t)).collect()
}

fn encrypt_at<B: Backend>(f: &Fixture<'_, B>, v: &[u64], level: usize) -> Ciphertext<B> {
    let pt = f.bgv.encoder().encode(v).unwrap();
    f.bgv.encrypt_symmetric_at(&f.sk, &pt, level).unwrap()
}

/// Decrypts and decodes `ct`, recording its words in the transcript.
#[track_caller]
fn decrypt<B: Backend>(f: &Fixture<'_, B>, ct: &Ciphertext<B>) -> Vec<u64> {
    f.log.record(f.bgv.backend(), &format!("level {} degree {}", ct.level(), ct.degree()), ct.polys());
    f.bgv.encoder().decode(&f.bgv.decrypt(&f.sk, ct).unwrap()).unwrap()
}

fn zip_with(a: &[u64], b: &[u64], t: u64, op: impl Fn(u64, u64) -> u64) -> Vec<u64> {
    a.iter().zip(b).map(|(&x, &y)| op(x, y) % t).collect()
}

/// Expected slots after a left rotation of both rows by `steps`.
fn rotate(v: &[u64], steps: i64) -> Vec<u64> {
    let half = v.len() / 2;
    (0..v.len())
        .map(|k| {
            let (row, col) = (k / half, k % half);
            let src = (col as i64 + steps).rem_euclid(half as i64) as usize;
            v[row * half + src]
        })
        .collect()
}

fn swap_rows(v: &[u64]) -> Vec<u64> {
    let half = v.len() / 2;
    (0..v.len()).map(|k| v[(k + half) % v.len()]).collect()
}

/// The measured canonical norm of `c_0 + c_1 s` never exceeds the estimate the ciphertext
/// carries (the estimate bounds exactly that quantity).
fn assert_noise_within_estimate<B: Backend>(f: &Fixture<'_, B>, ct: &Ciphertext<B>) {
    let m = f.bgv.measure_noise(&f.sk, ct).unwrap();
    assert!(
        m.canonical_log2 <= ct.noise_estimate(),
        "measured canonical norm 2^{:.2} above estimate 2^{:.2} at level {}",
        m.canonical_log2,
        ct.noise_estimate(),
        ct.level()
    );
    assert!(m.infinity_log2 <= m.canonical_log2 + 1e-9, "infinity norm above canonical norm");
    assert!(f.bgv.noise_budget(&f.sk, ct).unwrap() > 0.0, "no noise budget left");
}

/// Every operation at every level of `params`.
fn every_op_at_every_level<B: Backend>(make: Make<'_, B>, params: &Parameters, seed: u8, log: &Transcript) {
    let mut f = fixture(make, params, seed, log);
    let t = u64::from(f.bgv.plaintext_modulus());
    for level in (0..=f.bgv.max_level()).rev() {
        let (a, b) = (random_values(&mut f), random_values(&mut f));
        let (ca, cb) = (encrypt_at(&f, &a, level), encrypt_at(&f, &b, level));
        assert_eq!(ca.level(), level);
        assert_eq!(decrypt(&f, &ca), a, "round trip at level {level}");
        assert_noise_within_estimate(&f, &ca);

        assert_eq!(decrypt(&f, &f.bgv.add(&ca, &cb).unwrap()), zip_with(&a, &b, t, |x, y| x + y), "add at {level}");
        assert_eq!(decrypt(&f, &f.bgv.sub(&ca, &cb).unwrap()), zip_with(&a, &b, t, |x, y| x + t - y), "sub at {level}");
        assert_eq!(decrypt(&f, &f.bgv.neg(&ca).unwrap()), a.iter().map(|&x| (t - x) % t).collect::<Vec<_>>());
        let pb = f.bgv.encoder().encode(&b).unwrap();
        assert_eq!(
            decrypt(&f, &f.bgv.add_plain(&ca, &pb).unwrap()),
            zip_with(&a, &b, t, |x, y| x + y),
            "padd at {level}"
        );
        assert_eq!(decrypt(&f, &f.bgv.sub_plain(&ca, &pb).unwrap()), zip_with(&a, &b, t, |x, y| x + t - y));
        match f.bgv.mul_plain(&ca, &pb) {
            Ok(c) => {
                assert_eq!(decrypt(&f, &c), zip_with(&a, &b, t, |x, y| x * y), "pmult at {level}");
                assert_noise_within_estimate(&f, &c);
            }
            Err(Error::NoiseBudgetExhausted { .. }) => assert!(level == 0, "PMULT refused at level {level}"),
            Err(e) => panic!("PMULT at level {level}: {e}"),
        }
        match f.bgv.mul_relin(&ca, &cb, &f.keys) {
            Ok(c) => {
                assert_eq!(decrypt(&f, &c), zip_with(&a, &b, t, |x, y| x * y), "hmult at {level}");
                assert_noise_within_estimate(&f, &c);
            }
            Err(Error::NoiseBudgetExhausted { .. }) => assert!(level <= 1, "HMULT refused at level {level}"),
            Err(e) => panic!("HMULT at level {level}: {e}"),
        }
        for steps in STEPS {
            match f.bgv.rotate_columns(&ca, steps, &f.keys) {
                Ok(c) => {
                    assert_eq!(decrypt(&f, &c), rotate(&a, steps), "rotate {steps} at {level}");
                    assert_noise_within_estimate(&f, &c);
                }
                Err(Error::NoiseBudgetExhausted { .. }) => assert!(level == 0, "rotation refused at level {level}"),
                Err(e) => panic!("rotation at level {level}: {e}"),
            }
        }
        match f.bgv.rotate_rows(&ca, &f.keys) {
            Ok(c) => assert_eq!(decrypt(&f, &c), swap_rows(&a), "row swap at {level}"),
            Err(Error::NoiseBudgetExhausted { .. }) => assert!(level == 0),
            Err(e) => panic!("row swap at level {level}: {e}"),
        }
        if level > 0 {
            let c = f.bgv.mod_switch(&ca, 1).unwrap();
            assert_eq!(c.level(), level - 1);
            assert_eq!(decrypt(&f, &c), a, "mod switch from {level}");
            assert_ne!(c.correction_factor(), ca.correction_factor());
            // Operands with different correction factors are aligned by addition.
            let cb_low = encrypt_at(&f, &b, level - 1);
            match f.bgv.add(&c, &cb_low) {
                Ok(sum) => assert_eq!(decrypt(&f, &sum), zip_with(&a, &b, t, |x, y| x + y)),
                // The canonical-norm bound of a switched ciphertext can exceed a single prime.
                Err(Error::NoiseBudgetExhausted { .. }) => assert_eq!(level, 1),
                Err(e) => panic!("add after mod switch at level {level}: {e}"),
            }
        } else {
            assert!(matches!(f.bgv.mod_switch(&ca, 1), Err(Error::DepthExhausted { .. })));
        }
    }
}

fn every_operation_every_level_insecure_n1024<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 65537).unwrap();
    assert!(p.is_insecure());
    every_op_at_every_level(make, &p, 1, log);
}

#[test]
fn every_operation_every_level_bgv_n13() {
    every_op_at_every_level(&cpu, &params::by_name("bgv-n13").unwrap(), 2, &Transcript::default());
}

#[test]
fn every_operation_every_level_bgv_n14() {
    every_op_at_every_level(&cpu, &params::by_name("bgv-n14").unwrap(), 3, &Transcript::default());
}

/// Sequential squarings reach the documented depth and decrypt correctly.
fn reaches_documented_depth<B: Backend>(make: Make<'_, B>, params: &Parameters, seed: u8, log: &Transcript) {
    let mut f = fixture(make, params, seed, log);
    let t = u64::from(f.bgv.plaintext_modulus());
    let depth = max_depth(params);
    assert!(depth >= 1, "parameter set without a multiplication");
    let a = random_values(&mut f);
    let pk = f.bgv.gen_public_key(&f.sk).unwrap();
    let mut rng = Sampler::from_seed(&[seed + 100; 32], wgfhe::math::sampling::Purpose::Ephemeral, 0);
    let mut ct = f.bgv.encrypt_public_with_rng(&pk, &f.bgv.encoder().encode(&a).unwrap(), &mut rng).unwrap();
    let mut want = a;
    for d in 1..=depth {
        ct = f.bgv.mul_relin(&ct, &ct, &f.keys).unwrap_or_else(|e| panic!("square {d} of {depth}: {e}"));
        want = want.iter().map(|&x| x * x % t).collect();
        assert_eq!(decrypt(&f, &ct), want, "after {d} squarings");
        assert_noise_within_estimate(&f, &ct);
    }
    let low = f.bgv.mod_switch_to_min(&ct).unwrap();
    assert!(low.level() <= ct.level());
    assert_eq!(decrypt(&f, &low), want);
}

fn depth_insecure_n1024<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    reaches_documented_depth(
        make,
        &params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 8, p_primes: 3, dnum: 3 }, 65537).unwrap(),
        4,
        log,
    );
}

#[test]
fn depth_bgv_n13() {
    reaches_documented_depth(&cpu, &params::by_name("bgv-n13").unwrap(), 5, &Transcript::default());
}

#[test]
fn depth_bgv_n14() {
    reaches_documented_depth(&cpu, &params::by_name("bgv-n14").unwrap(), 6, &Transcript::default());
}

fn coefficient_encoding_with_power_of_two_t<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    // t = 256 does not batch, but is coprime to every (odd) prime of Q.
    let p = params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 256).unwrap();
    let mut f = fixture_without_rotations(make, &p, log);
    let n = p.n();
    let a: Vec<u64> = (0..n).map(|_| f.rng.random_range(0..256)).collect();
    let b: Vec<u64> = (0..n).map(|_| f.rng.random_range(0..4)).collect();
    let enc = f.bgv.encoder();
    assert!(matches!(enc.encode(&a), Err(Error::BatchingUnavailable { .. })));
    let ca = f.bgv.encrypt_symmetric(&f.sk, &enc.encode_coeffs(&a).unwrap()).unwrap();
    let cb = f.bgv.encrypt_symmetric(&f.sk, &enc.encode_coeffs(&b).unwrap()).unwrap();
    let prod = f.bgv.mul_relin(&ca, &cb, &f.keys).unwrap();
    log.record(f.bgv.backend(), "coefficient product", prod.polys());
    let got = enc.decode_coeffs(&f.bgv.decrypt(&f.sk, &prod).unwrap()).unwrap();
    // Schoolbook negacyclic product mod 256.
    let mut want = vec![0i64; n];
    for i in 0..n {
        for j in 0..n {
            let v = (a[i] * b[j]) as i64;
            if i + j < n {
                want[i + j] += v;
            } else {
                want[i + j - n] -= v;
            }
        }
    }
    let want: Vec<u64> = want.iter().map(|v| v.rem_euclid(256) as u64).collect();
    assert_eq!(got, want);
}

fn fixture_without_rotations<'l, B: Backend>(
    make: Make<'_, B>,
    params: &Parameters,
    log: &'l Transcript,
) -> Fixture<'l, B> {
    let bgv = Bgv::new(make(params)).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[9; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    Fixture { bgv, sk, keys, rng: ChaCha8Rng::seed_from_u64(9), log }
}

fn reproducible_from_seed<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    let run = || {
        let f = fixture_without_rotations(make, &p, log);
        let pt = f.bgv.encoder().encode(&[1, 2, 3]).unwrap();
        let ct = f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap();
        assert_eq!(decrypt(&f, &ct)[..4], [1, 2, 3, 0]);
        ct.polys().iter().map(|p| p.to_host(f.bgv.backend()).unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

// ---- typed errors of misuse -------------------------------------------------------------------

fn misuse_gives_typed_errors<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap();
    let mut f = fixture(make, &p, 11, log);
    let a = random_values(&mut f);
    let ca = encrypt_at(&f, &a, 3);
    let cb = encrypt_at(&f, &a, 2);
    assert!(matches!(f.bgv.add(&ca, &cb), Err(Error::LevelMismatch { left: 3, right: 2 })));
    assert!(matches!(f.bgv.mul(&ca, &cb), Err(Error::LevelMismatch { .. })));

    let empty = EvaluationKeys::default();
    assert!(matches!(f.bgv.mul_relin(&ca, &ca, &empty), Err(Error::MissingRelinKey)));
    match f.bgv.rotate_columns(&ca, 7, &f.keys) {
        Err(Error::MissingGaloisKey { galois_element, rotation }) => {
            assert_eq!(galois_element as usize, f.bgv.column_rotation_element(7));
            assert!(rotation.contains('7'));
        }
        other => panic!("expected MissingGaloisKey, got {:?}", other.map(|c| c.level())),
    }
    let deg2 = f.bgv.mul(&ca, &ca).unwrap();
    assert_eq!(decrypt(&f, &deg2), a.iter().map(|x| x * x % 65537).collect::<Vec<_>>());
    assert!(matches!(f.bgv.rotate_columns(&deg2, 1, &f.keys), Err(Error::CiphertextDegree { degree: 2, expected: 1 })));
    assert!(matches!(f.bgv.mul(&deg2, &ca), Err(Error::CiphertextDegree { .. })));
    assert!(matches!(f.bgv.relinearize(&ca, &f.keys), Err(Error::CiphertextDegree { degree: 1, expected: 2 })));

    let low = f.bgv.mod_switch_to_level(&ca, 0).unwrap();
    assert!(matches!(f.bgv.mod_switch(&low, 1), Err(Error::DepthExhausted { level: 0, wanted: 1 })));
    assert!(matches!(f.bgv.mod_switch_to_level(&low, 2), Err(Error::LevelOutOfRange { .. })));

    let enc = f.bgv.encoder();
    let slots = enc.slots();
    assert!(matches!(enc.encode(&vec![0; slots + 1]), Err(Error::TooManyValues { .. })));
    assert!(matches!(enc.encode(&[1, 65537]), Err(Error::ValueOutOfRange { index: 1, .. })));
    assert!(matches!(enc.encode_signed(&[40000]), Err(Error::ValueOutOfRange { index: 0, .. })));

    // Objects of other parameters.
    let other =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 2, dnum: 2 }, 65537).unwrap();
    let g = Bgv::new(make(&other)).unwrap();
    let sk2 = g.gen_secret_key_from_seed(&[12; 32]).unwrap();
    let foreign = g.encrypt_symmetric(&sk2, &g.encoder().encode(&[1]).unwrap()).unwrap();
    assert!(matches!(f.bgv.add(&ca, &foreign), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f.bgv.decrypt(&f.sk, &foreign), Err(Error::ParameterMismatch { .. })));
    let foreign_pt = g.encoder().encode(&[1]).unwrap();
    assert!(matches!(f.bgv.add_plain(&ca, &foreign_pt), Err(Error::ParameterMismatch { .. })));

    // A Galois key filed under another element is refused, not applied.
    let g1 = f.bgv.column_rotation_element(1);
    let wrong = f.bgv.gen_galois_key(&f.sk, f.bgv.column_rotation_element(2)).unwrap();
    let mut keys = EvaluationKeys::default();
    keys.galois.insert(g1, wrong);
    assert!(matches!(f.bgv.rotate_columns(&ca, 1, &keys), Err(Error::KeyDimensions { .. })));
}

fn fresh_seeds_never_repeat<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 2, p_primes: 1, dnum: 2 }, 65537).unwrap();
    let f = fixture_without_rotations(make, &p, log);
    let mut seen = std::collections::HashSet::new();
    let first = u64::from_le_bytes(f.sk.fresh_seed().unwrap()[24..].try_into().unwrap());
    for i in 1..1000u64 {
        let seed = f.sk.fresh_seed().unwrap();
        // Unique by construction: the last 8 bytes are a counter that only increases.
        assert_eq!(seed[24..], (first + i).to_le_bytes());
        assert!(seen.insert(seed));
    }
    // Encryptions draw from the same counter: their seeds differ too.
    let pt = f.bgv.encoder().encode(&[1]).unwrap();
    let (ca, cb) = (f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap(), f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap());
    assert_eq!((decrypt(&f, &ca)[0], decrypt(&f, &cb)[0]), (1, 1));
    let (a, b) = (f.bgv.ciphertext_to_bytes(&ca).unwrap(), f.bgv.ciphertext_to_bytes(&cb).unwrap());
    assert_ne!(a[48..80], b[48..80]);
}

fn keys_of_other_parameters_are_refused<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    // Same shape (N, limb counts), different primes: only the parameter id tells them apart.
    let p1 =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    let p2 =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 12289).unwrap();
    let f1 = fixture(make, &p1, 21, log);
    let f2 = fixture(make, &p2, 22, log);
    let ct = f1.bgv.encrypt_symmetric(&f1.sk, &f1.bgv.encoder().encode(&[1, 2]).unwrap()).unwrap();
    assert_eq!(decrypt(&f1, &ct)[..3], [1, 2, 0]);
    assert!(matches!(f1.bgv.mul_relin(&ct, &ct, &f2.keys), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f1.bgv.rotate_columns(&ct, 1, &f2.keys), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f1.bgv.decrypt(&f2.sk, &ct), Err(Error::ParameterMismatch { .. })));
    let pt = f1.bgv.encoder().encode(&[1]).unwrap();
    assert!(matches!(f1.bgv.encrypt_symmetric(&f2.sk, &pt), Err(Error::ParameterMismatch { .. })));
    let pk2 = f2.bgv.gen_public_key(&f2.sk).unwrap();
    assert!(matches!(f1.bgv.encrypt_public(&pk2, &pt), Err(Error::ParameterMismatch { .. })));
}

fn structured_plaintexts_never_decrypt_wrong<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    // All coefficients (t-1)/2: canonical norm about N t / pi, far above a random plaintext's.
    // Repeated PMULT either decrypts right or is refused; it never returns a wrong result.
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 10, p_primes: 4, dnum: 3 }, 65537).unwrap();
    let f = fixture_without_rotations(make, &p, log);
    let n = p.n();
    let t = 65537u64;
    let big = f.bgv.encoder().encode_coeffs(&vec![(t - 1) / 2; n]).unwrap();
    let one = f.bgv.encoder().encode_coeffs(&[1]).unwrap();
    let mut ct = f.bgv.encrypt_symmetric(&f.sk, &big).unwrap();
    assert_noise_within_estimate(&f, &ct);
    let mut want: Vec<u64> = vec![(t - 1) / 2; n];
    let mut refused = false;
    for step in 0..40 {
        match f.bgv.mul_plain(&ct, &big) {
            Ok(next) => {
                // Negacyclic product with the constant-coefficient polynomial, mod t.
                let c = (t - 1) / 2;
                let mut acc = vec![0i128; n];
                for (i, &w) in want.iter().enumerate() {
                    for (j, a) in acc.iter_mut().enumerate() {
                        let v = i128::from(w) * i128::from(c);
                        if j >= i {
                            *a += v
                        } else {
                            *a -= v
                        }
                    }
                }
                want = acc.iter().map(|v| v.rem_euclid(i128::from(t)) as u64).collect();
                log.record(f.bgv.backend(), &format!("PMULT step {step}"), next.polys());
                let got = f.bgv.encoder().decode_coeffs(&f.bgv.decrypt(&f.sk, &next).unwrap()).unwrap();
                assert_eq!(got, want, "PMULT step {step}");
                assert_noise_within_estimate(&f, &next);
                ct = next;
            }
            Err(Error::NoiseBudgetExhausted { .. }) => {
                refused = true;
                break;
            }
            Err(e) => panic!("step {step}: {e}"),
        }
    }
    assert!(refused, "the noise estimate never stopped the chain");
    // Adding a structured plaintext is accounted for too.
    let sum = f.bgv.add_plain(&f.bgv.encrypt_symmetric(&f.sk, &one).unwrap(), &big).unwrap();
    assert_noise_within_estimate(&f, &sum);
}

fn mixed_correction_factors_and_degrees<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 65537).unwrap();
    let mut f = fixture(make, &p, 31, log);
    let t = 65537u64;
    let (a, b, c) = (random_values(&mut f), random_values(&mut f), random_values(&mut f));
    let top = f.bgv.max_level();
    let (ca, cb, cc) = (encrypt_at(&f, &a, top), encrypt_at(&f, &b, top), encrypt_at(&f, &c, top));
    // Tensor product at the top level, relinearised there (no automatic switching).
    let deg2 = f.bgv.mul(&ca, &cb).unwrap();
    assert_eq!(deg2.degree(), 2);
    let ab = zip_with(&a, &b, t, |x, y| x * y);
    assert_eq!(decrypt(&f, &deg2), ab, "degree-2 decryption");
    let relin = f.bgv.relinearize(&deg2, &f.keys).unwrap();
    assert_eq!(relin.level(), top);
    assert_eq!(decrypt(&f, &relin), ab);
    assert_noise_within_estimate(&f, &relin);
    // Degree 2 plus degree 1, and degree 1 minus degree 2.
    assert_eq!(decrypt(&f, &f.bgv.add(&deg2, &cc).unwrap()), zip_with(&ab, &c, t, |x, y| x + y));
    assert_eq!(decrypt(&f, &f.bgv.sub(&cc, &deg2).unwrap()), zip_with(&c, &ab, t, |x, y| x + t - y));
    // A product (correction factor c^2 after switching) plus a fresh ciphertext at its level
    // (factor c): the fresh operand is rescaled by a constant mod t.
    let ca1 = f.bgv.mod_switch(&ca, 1).unwrap();
    let cb1 = f.bgv.mod_switch(&cb, 1).unwrap();
    let prod = f.bgv.mul_relin(&ca1, &cb1, &f.keys).unwrap();
    let low = f.bgv.mod_switch(&prod, 1).unwrap();
    let fresh = encrypt_at(&f, &c, low.level());
    assert_ne!(low.correction_factor(), fresh.correction_factor());
    let sum = f.bgv.add(&low, &fresh).unwrap();
    assert_eq!(decrypt(&f, &sum), zip_with(&ab, &c, t, |x, y| x + y));
    assert_noise_within_estimate(&f, &sum);
    let diff = f.bgv.sub(&fresh, &low).unwrap();
    assert_eq!(decrypt(&f, &diff), zip_with(&c, &ab, t, |x, y| x + t - y));
    assert_noise_within_estimate(&f, &diff);
    // Switching a degree-2 ciphertext accounts for the s^2 term.
    let deg2_low = f.bgv.mod_switch(&deg2, 2).unwrap();
    assert_eq!(decrypt(&f, &deg2_low), ab);
    assert_noise_within_estimate(&f, &deg2_low);
}

/// `mul_plain_as` lets products of ciphertexts with different correction factors be added
/// without the rescaling `add` would do: same decryption, and a smaller noise estimate that
/// still bounds the measured noise.
fn mul_plain_as_aligns_correction_factors<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 65537).unwrap();
    let mut f = fixture(make, &p, 7, log);
    let t = u64::from(f.bgv.plaintext_modulus());
    let (x, y, w) = (random_values(&mut f), random_values(&mut f), random_values(&mut f));
    let top = f.bgv.max_level();
    let pt = f.bgv.encoder().encode(&w).unwrap();
    let expected: Vec<u64> =
        zip_with(&zip_with(&x, &w, t, |u, v| u * v), &zip_with(&y, &w, t, |u, v| u * v), t, |u, v| u + v);

    // A fresh ciphertext whose correction factor differs from `b`'s.
    // A product switched down (correction factor c^2 / q) next to a fresh ciphertext at its level.
    let ones = vec![1u64; x.len()];
    let prod = f.bgv.mul_relin(&encrypt_at(&f, &y, top - 1), &encrypt_at(&f, &ones, top - 1), &f.keys).unwrap();
    let b2 = f.bgv.mod_switch(&prod, 1).unwrap();
    let c = encrypt_at(&f, &x, b2.level());
    assert_ne!(c.correction_factor(), b2.correction_factor(), "the test needs different factors");

    let target = c.correction_factor();
    let aligned = f
        .bgv
        .add(&f.bgv.mul_plain_as(&c, &pt, target).unwrap(), &f.bgv.mul_plain_as(&b2, &pt, target).unwrap())
        .unwrap();
    assert_eq!(aligned.correction_factor(), target);
    assert_eq!(decrypt(&f, &aligned), expected);
    assert_noise_within_estimate(&f, &aligned);

    let rescaled = f.bgv.add(&f.bgv.mul_plain(&c, &pt).unwrap(), &f.bgv.mul_plain(&b2, &pt).unwrap()).unwrap();
    assert_eq!(decrypt(&f, &rescaled), expected);
    assert!(
        aligned.noise_estimate() < rescaled.noise_estimate(),
        "aligned 2^{:.1} vs rescaled 2^{:.1}",
        aligned.noise_estimate(),
        rescaled.noise_estimate()
    );

    // A factor that is not invertible mod t (0) is a typed error.
    assert!(matches!(f.bgv.mul_plain_as(&c, &pt, 0), Err(Error::InvalidCorrectionFactor { .. })));
}

/// The words of a ciphertext (downloaded), for comparing two computations of it.
fn words<B: Backend>(f: &Fixture<'_, B>, ct: &Ciphertext<B>) -> Vec<Vec<u32>> {
    ct.polys().iter().map(|p| p.to_host(f.bgv.backend()).unwrap()).collect()
}

/// `a * b^-1 mod t` by Fermat (t prime), computed here independently of the library.
fn div_mod(a: u64, b: u64, t: u64) -> u64 {
    let (mut base, mut e, mut inv) = (b % t, t - 2, 1u64);
    while e > 0 {
        if e & 1 == 1 {
            inv = inv * base % t;
        }
        base = base * base % t;
        e >>= 1;
    }
    a * inv % t
}

/// A prepared plaintext gives exactly the unprepared operation's ciphertext (words, correction
/// factor, noise estimate) and the plaintext arithmetic's slots: PMULT (factor 1 and the factor
/// of `mul_plain_as`), PADD and PSUB with the ciphertext's factor, on fresh ciphertexts at every
/// level, a switched-down product (another correction factor) and a degree-2 ciphertext.
/// Mismatches are typed errors.
fn prepared_plaintexts_give_the_unprepared_words<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 65537).unwrap();
    let mut f = fixture(make, &p, 41, log);
    let t = u64::from(f.bgv.plaintext_modulus());
    let top = f.bgv.max_level();
    let (x, w) = (random_values(&mut f), random_values(&mut f));
    let pw = f.bgv.encoder().encode(&w).unwrap();
    let xw = zip_with(&x, &w, t, |u, v| u * v);
    let x_plus_w = zip_with(&x, &w, t, |u, v| u + v);
    let x_minus_w = zip_with(&x, &w, t, |u, v| u + t - v);
    // Fresh ciphertexts at every level, then a product switched down: its correction factor
    // differs from the fresh ones' at its level.
    let mut cases: Vec<Ciphertext<B>> = (0..=top).map(|l| encrypt_at(&f, &x, l)).collect();
    let ones = vec![1u64; x.len()];
    let prod = f.bgv.mul_relin(&encrypt_at(&f, &x, top - 1), &encrypt_at(&f, &ones, top - 1), &f.keys).unwrap();
    let switched = f.bgv.mod_switch(&prod, 1).unwrap();
    assert_ne!(switched.correction_factor(), f.bgv.level_correction(switched.level()).unwrap());
    cases.push(switched);
    for ct in &cases {
        let level = ct.level();
        let corr = ct.correction_factor();
        // PMULT, factor 1.
        let prepared = f.bgv.prepare_plain(&pw, level).unwrap();
        assert_eq!((prepared.level(), prepared.factor()), (level, 1));
        match (f.bgv.mul_plain(ct, &pw), f.bgv.mul_plain_prepared(ct, &prepared)) {
            (Ok(a), Ok(b)) => {
                assert_eq!(words(&f, &a), words(&f, &b), "PMULT words at level {level}");
                assert_eq!(a.correction_factor(), b.correction_factor());
                assert_eq!(a.noise_estimate().to_bits(), b.noise_estimate().to_bits());
                assert_eq!(decrypt(&f, &b), xw, "prepared PMULT at {level}");
            }
            (Err(Error::NoiseBudgetExhausted { .. }), Err(Error::NoiseBudgetExhausted { .. })) => {
                assert_eq!(level, 0);
            }
            (a, b) => panic!("PMULT at level {level}: {:?} vs {:?}", a.err(), b.err()),
        }
        // PMULT with a correction factor: mul_plain_as(ct, pt, target) is the prepared product
        // with factor target / corr.
        if level > 0 {
            let target = (u64::from(corr) * 3 + 1) % t;
            let factor = div_mod(target, u64::from(corr), t) as u32;
            let scaled = f.bgv.prepare_plain_with_factor(&pw, level, factor).unwrap();
            let a = f.bgv.mul_plain_as(ct, &pw, target as u32).unwrap();
            let b = f.bgv.mul_plain_prepared(ct, &scaled).unwrap();
            assert_eq!(words(&f, &a), words(&f, &b), "PMULT-as words at level {level}");
            assert_eq!(u64::from(b.correction_factor()), target);
            assert_eq!(a.noise_estimate().to_bits(), b.noise_estimate().to_bits());
            assert_eq!(decrypt(&f, &b), xw, "prepared PMULT-as at {level}");
        }
        // PADD and PSUB need the ciphertext's factor.
        let additive = f.bgv.prepare_plain_with_factor(&pw, level, corr).unwrap();
        let sum = f.bgv.add_plain_prepared(ct, &additive).unwrap();
        let unprepared = f.bgv.add_plain(ct, &pw).unwrap();
        assert_eq!(words(&f, &sum), words(&f, &unprepared), "PADD words at level {level}");
        assert_eq!(sum.noise_estimate().to_bits(), unprepared.noise_estimate().to_bits());
        assert_eq!(sum.is_seeded(), unprepared.is_seeded());
        assert_eq!(decrypt(&f, &sum), x_plus_w, "prepared PADD at {level}");
        let diff = f.bgv.sub_plain_prepared(ct, &additive).unwrap();
        assert_eq!(words(&f, &diff), words(&f, &f.bgv.sub_plain(ct, &pw).unwrap()), "PSUB words at level {level}");
        assert_eq!(decrypt(&f, &diff), x_minus_w, "prepared PSUB at {level}");
        // The factor-1 form is refused for PADD unless the factor is 1.
        if corr != 1 {
            assert!(matches!(
                f.bgv.add_plain_prepared(ct, &prepared),
                Err(Error::CorrectionMismatch { ciphertext, plaintext: 1 }) if ciphertext == u64::from(corr)
            ));
        }
    }
    // A degree-2 ciphertext: every polynomial is multiplied.
    let (ca, cb) = (encrypt_at(&f, &x, top), encrypt_at(&f, &w, top));
    let deg2 = f.bgv.mul(&ca, &cb).unwrap();
    let prepared = f.bgv.prepare_plain(&pw, top).unwrap();
    let b = f.bgv.mul_plain_prepared(&deg2, &prepared).unwrap();
    assert_eq!(b.degree(), 2);
    assert_eq!(words(&f, &b), words(&f, &f.bgv.mul_plain(&deg2, &pw).unwrap()));
    assert_eq!(decrypt(&f, &b), zip_with(&xw, &w, t, |u, v| u * v));
    // Typed errors: another level, another parameter set, a factor not invertible mod t, a level
    // above the chain.
    let low = f.bgv.prepare_plain(&pw, top - 1).unwrap();
    assert!(matches!(
        f.bgv.mul_plain_prepared(&ca, &low),
        Err(Error::LevelMismatch { left, right }) if left == top && right == top - 1
    ));
    assert!(matches!(f.bgv.sub_plain_prepared(&ca, &low), Err(Error::LevelMismatch { .. })));
    assert!(matches!(f.bgv.prepare_plain_with_factor(&pw, top, 0), Err(Error::InvalidCorrectionFactor { .. })));
    assert!(matches!(f.bgv.prepare_plain_with_factor(&pw, top, 65537), Err(Error::InvalidCorrectionFactor { .. })));
    assert!(matches!(f.bgv.prepare_plain(&pw, top + 1), Err(Error::LevelOutOfRange { .. })));
    let other_p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 786_433).unwrap();
    let other = Bgv::new(make(&other_p)).unwrap();
    let foreign = other.encoder().encode(&[1, 2]).unwrap();
    assert!(matches!(f.bgv.prepare_plain(&foreign, top), Err(Error::ParameterMismatch { .. })));
    let foreign_prepared = other.prepare_plain(&foreign, top).unwrap();
    assert!(matches!(f.bgv.mul_plain_prepared(&ca, &foreign_prepared), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f.bgv.add_plain_prepared(&ca, &foreign_prepared), Err(Error::ParameterMismatch { .. })));
    // The cache: prepared once per key, replaced at another level, bounded by its budget.
    let words_per_limb = 4 * p.n() as u64;
    let mut cache = PlaintextCache::new(words_per_limb * (top as u64 + 1) + 1);
    assert!(cache.prepared(&f.bgv, 0, &pw, top, 1).unwrap().is_some());
    assert!(cache.prepared(&f.bgv, 1, &pw, top, 1).unwrap().is_none(), "over the budget");
    assert_eq!((cache.len(), cache.resident_bytes()), (1, words_per_limb * (top as u64 + 1)));
    let again = cache.prepared(&f.bgv, 0, &pw, 0, 1).unwrap().unwrap();
    assert_eq!(again.level(), 0);
    assert_eq!(cache.resident_bytes(), words_per_limb);
    assert!(cache.prepared(&f.bgv, 1, &pw, 0, 1).unwrap().is_some());
    assert_eq!(cache.len(), 2);
    assert_eq!(cache.preparations(), 3, "key 0 twice, key 1 once (refused over the budget before)");
    // A shared cache: the same prepared words (not prepared again), no budget for a new key,
    // and a replacement of no more bytes made in it alone.
    let mut shared = cache.share();
    assert_eq!((shared.len(), shared.resident_bytes(), shared.preparations()), (2, cache.resident_bytes(), 0));
    let fresh = f.bgv.prepare_plain(&pw, 0).unwrap();
    let words = |pp: &wgfhe::bgv::PreparedPlaintext<_>| f.bgv.backend().download(pp.poly().buffer()).unwrap();
    assert_eq!(words(shared.prepared(&f.bgv, 0, &pw, 0, 1).unwrap().unwrap()), words(&fresh));
    assert_eq!(shared.preparations(), 0);
    assert!(shared.prepared(&f.bgv, 2, &pw, 0, 1).unwrap().is_none(), "a shared cache has no budget for a new key");
    assert!(shared.prepared(&f.bgv, 1, &pw, 0, 3).unwrap().is_some(), "a same-size replacement");
    assert_eq!(shared.preparations(), 1);
    assert_eq!(cache.prepared(&f.bgv, 1, &pw, 0, 1).unwrap().unwrap().factor(), 1, "the original keeps its form");
    assert_eq!(cache.preparations(), 3);
}

// ---- the CPU/GPU comparison itself ------------------------------------------------------------

/// A sum and a product of two fresh encryptions, recorded.
fn sum_and_product<B: Backend>(be: B) -> Transcript {
    let log = Transcript::default();
    let bgv = Bgv::new(be).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[4; 32]).unwrap();
    let pt = bgv.encoder().encode(&[1, 2, 3]).unwrap();
    let (a, b) = (bgv.encrypt_symmetric(&sk, &pt).unwrap(), bgv.encrypt_symmetric(&sk, &pt).unwrap());
    log.record(bgv.backend(), "sum", bgv.add(&a, &b).unwrap().polys());
    log.record(bgv.backend(), "product", bgv.mul(&a, &b).unwrap().polys());
    log
}

/// The transcript comparison the `gpu::*` tests rely on passes on identical runs and fails when
/// one bit of one kernel's output differs (a backend that flips it, see `wgfhe::testing`).
#[test]
fn transcripts_tell_one_flipped_bit_apart() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    let reference = sum_and_product(cpu(&p));
    sum_and_product(cpu(&p)).assert_same_as(&reference);
    for kernel in ["add", "mul"] {
        let flipped = sum_and_product(FlipOneBit::new(cpu(&p), kernel, 3));
        let compared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| flipped.assert_same_as(&reference)));
        assert!(compared.is_err(), "one flipped bit in an {kernel} output went unnoticed");
    }
}
