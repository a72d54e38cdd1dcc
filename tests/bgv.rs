//! BGV end to end on the CPU reference backend: decrypt(op(enc(m))) == op(m) for every operation,
//! at every level of several parameter sets, plus the typed errors of misuse.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "tests"
)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::CpuBackend;
use wgfhe::bgv::{max_depth, Bgv, Ciphertext, EvaluationKeys};
use wgfhe::math::sampling::Sampler;
use wgfhe::params::{self, Parameters};
use wgfhe::rlwe::SecretKey;
use wgfhe::Error;

struct Fixture {
    bgv: Bgv<CpuBackend>,
    sk: SecretKey<CpuBackend>,
    keys: EvaluationKeys<CpuBackend>,
    rng: ChaCha8Rng,
}

const STEPS: [i64; 4] = [1, -1, 5, 100];

fn fixture(params: &Parameters, seed: u8) -> Fixture {
    let bgv = Bgv::cpu(params).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[seed; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &STEPS, true).unwrap();
    Fixture { bgv, sk, keys, rng: ChaCha8Rng::seed_from_u64(u64::from(seed)) }
}

fn random_values(f: &mut Fixture) -> Vec<u64> {
    let t = u64::from(f.bgv.plaintext_modulus());
    (0..f.bgv.encoder().slots()).map(|_| f.rng.random_range(0..t)).collect()
}

fn encrypt_at(f: &Fixture, v: &[u64], level: usize) -> Ciphertext<CpuBackend> {
    let pt = f.bgv.encoder().encode(v).unwrap();
    f.bgv.encrypt_symmetric_at(&f.sk, &pt, level, None).unwrap()
}

fn decrypt(f: &Fixture, ct: &Ciphertext<CpuBackend>) -> Vec<u64> {
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

/// The measured noise never exceeds the estimate carried by the ciphertext.
fn assert_noise_within_estimate(f: &Fixture, ct: &Ciphertext<CpuBackend>) {
    let budget = f.bgv.noise_budget(&f.sk, ct).unwrap();
    let log_q = f.bgv.noise_model().log_q_at(ct.level());
    let measured = log_q - 1.0 - budget;
    assert!(
        measured <= ct.noise_estimate() + 0.5,
        "measured noise 2^{measured:.1} above estimate 2^{:.1} at level {}",
        ct.noise_estimate(),
        ct.level()
    );
    assert!(budget > 0.0, "no noise budget left");
}

/// Every operation at every level of `params`.
fn every_op_at_every_level(params: &Parameters, seed: u8) {
    let mut f = fixture(params, seed);
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

#[test]
fn every_operation_every_level_insecure_n1024() {
    let p = params::insecure_test_bgv(10, 6, 2, 3, 65537).unwrap();
    assert!(p.is_insecure());
    every_op_at_every_level(&p, 1);
}

#[test]
fn every_operation_every_level_bgv_n13() {
    every_op_at_every_level(&params::by_name("bgv-n13").unwrap(), 2);
}

#[test]
fn every_operation_every_level_bgv_n14() {
    every_op_at_every_level(&params::by_name("bgv-n14").unwrap(), 3);
}

/// Sequential squarings reach the documented depth and decrypt correctly.
fn reaches_documented_depth(params: &Parameters, seed: u8) {
    let mut f = fixture(params, seed);
    let t = u64::from(f.bgv.plaintext_modulus());
    let depth = max_depth(params);
    assert!(depth >= 1, "parameter set without a multiplication");
    let a = random_values(&mut f);
    let pk = f.bgv.gen_public_key(&f.sk).unwrap();
    let mut rng = Sampler::from_seed(&[seed + 100; 32], wgfhe::math::sampling::Purpose::Ephemeral, 0);
    let mut ct = f.bgv.encrypt_public(&pk, &f.bgv.encoder().encode(&a).unwrap(), &mut rng).unwrap();
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

#[test]
fn depth_insecure_n1024() {
    reaches_documented_depth(&params::insecure_test_bgv(10, 8, 3, 3, 65537).unwrap(), 4);
}

#[test]
fn depth_bgv_n13() {
    reaches_documented_depth(&params::by_name("bgv-n13").unwrap(), 5);
}

#[test]
fn depth_bgv_n14() {
    reaches_documented_depth(&params::by_name("bgv-n14").unwrap(), 6);
}

#[test]
fn coefficient_encoding_with_power_of_two_t() {
    // t = 256 does not batch, but is coprime to every (odd) prime of Q.
    let p = params::insecure_test_bgv(10, 5, 2, 3, 256).unwrap();
    let mut f = fixture_without_rotations(&p);
    let n = p.n();
    let a: Vec<u64> = (0..n).map(|_| f.rng.random_range(0..256)).collect();
    let b: Vec<u64> = (0..n).map(|_| f.rng.random_range(0..4)).collect();
    let enc = f.bgv.encoder();
    assert!(matches!(enc.encode(&a), Err(Error::BatchingUnavailable { .. })));
    let ca = f.bgv.encrypt_symmetric(&f.sk, &enc.encode_coeffs(&a).unwrap()).unwrap();
    let cb = f.bgv.encrypt_symmetric(&f.sk, &enc.encode_coeffs(&b).unwrap()).unwrap();
    let prod = f.bgv.mul_relin(&ca, &cb, &f.keys).unwrap();
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
    let _ = &mut f.rng;
}

fn fixture_without_rotations(params: &Parameters) -> Fixture {
    let bgv = Bgv::cpu(params).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[9; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &[], false).unwrap();
    Fixture { bgv, sk, keys, rng: ChaCha8Rng::seed_from_u64(9) }
}

#[test]
fn reproducible_from_seed() {
    let p = params::insecure_test_bgv(10, 3, 1, 3, 65537).unwrap();
    let run = || {
        let f = fixture_without_rotations(&p);
        let pt = f.bgv.encoder().encode(&[1, 2, 3]).unwrap();
        let ct = f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap();
        ct.polys().iter().map(|p| p.to_host(f.bgv.backend()).unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

// ---- typed errors of misuse -------------------------------------------------------------------

#[test]
fn misuse_gives_typed_errors() {
    let p = params::insecure_test_bgv(10, 4, 2, 2, 65537).unwrap();
    let mut f = fixture(&p, 11);
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
        other => panic!("expected MissingGaloisKey, got {other:?}"),
    }
    let deg2 = f.bgv.mul(&ca, &ca).unwrap();
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
    let other = params::insecure_test_bgv(10, 3, 2, 2, 65537).unwrap();
    let g = Bgv::cpu(&other).unwrap();
    let sk2 = g.gen_secret_key_from_seed(&[12; 32]).unwrap();
    let foreign = g.encrypt_symmetric(&sk2, &g.encoder().encode(&[1]).unwrap()).unwrap();
    assert!(matches!(f.bgv.add(&ca, &foreign), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f.bgv.decrypt(&f.sk, &foreign), Err(Error::ParameterMismatch { .. })));
    let foreign_pt = g.encoder().encode(&[1]).unwrap();
    assert!(matches!(f.bgv.add_plain(&ca, &foreign_pt), Err(Error::ParameterMismatch { .. })));

    // A seed is never used twice under one key.
    let pt = enc.encode(&[5]).unwrap();
    let seed = [42u8; 32];
    f.bgv.encrypt_symmetric_at(&f.sk, &pt, 3, Some(seed)).unwrap();
    assert!(matches!(f.bgv.encrypt_symmetric_at(&f.sk, &pt, 3, Some(seed)), Err(Error::SeedReuse)));
}

#[test]
fn fresh_seeds_never_repeat() {
    let p = params::insecure_test_bgv(10, 2, 1, 2, 65537).unwrap();
    let f = fixture_without_rotations(&p);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..1000 {
        assert!(seen.insert(f.sk.fresh_seed().unwrap()));
    }
}

#[test]
fn keys_of_other_parameters_are_refused() {
    // Same shape (N, limb counts), different primes: only the parameter id tells them apart.
    let p1 = params::insecure_test_bgv(10, 3, 1, 3, 65537).unwrap();
    let p2 = params::insecure_test_bgv(10, 3, 1, 3, 12289).unwrap();
    let f1 = fixture(&p1, 21);
    let f2 = fixture(&p2, 22);
    let ct = f1.bgv.encrypt_symmetric(&f1.sk, &f1.bgv.encoder().encode(&[1, 2]).unwrap()).unwrap();
    assert!(matches!(f1.bgv.mul_relin(&ct, &ct, &f2.keys), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f1.bgv.rotate_columns(&ct, 1, &f2.keys), Err(Error::ParameterMismatch { .. })));
    assert!(matches!(f1.bgv.decrypt(&f2.sk, &ct), Err(Error::ParameterMismatch { .. })));
    let pt = f1.bgv.encoder().encode(&[1]).unwrap();
    assert!(matches!(f1.bgv.encrypt_symmetric(&f2.sk, &pt), Err(Error::ParameterMismatch { .. })));
    let pk2 = f2.bgv.gen_public_key(&f2.sk).unwrap();
    let mut rng = Sampler::from_seed(&[1; 32], wgfhe::math::sampling::Purpose::Ephemeral, 0);
    assert!(matches!(f1.bgv.encrypt_public(&pk2, &pt, &mut rng), Err(Error::ParameterMismatch { .. })));
}
