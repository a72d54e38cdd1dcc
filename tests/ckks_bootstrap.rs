//! CKKS bootstrapping on a small insecure ring (`insecure_test_ckks_boot(10)`: the shipped
//! `ckks-boot-n16` chain at `N = 2^10`): a ciphertext at the entry level comes back at the
//! output level with its message, full and sparse slots, with and without the sparse secret;
//! on the GPU (lavapipe) every recorded ciphertext has the CPU's words (`common/backends.rs`).

#![expect(clippy::unwrap_used, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use backends::{cpu, cpu_and_gpu, Make, Transcript};
use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::Backend;
use wgfhe::ckks::{BootConfig, Bootstrapper, Ckks, ScalePolicy};
use wgfhe::params;
use wgfhe::Error;

cpu_and_gpu!(bootstrap_full_slots_sparse_secret);

/// Worst error (in bits, `-log2 |err|`) of one bootstrapping of uniform values in [-1, 1].
fn run<B: Backend>(make: Make<'_, B>, log: &Transcript, config: BootConfig, seed: u8) -> f64 {
    let p = params::insecure_test_ckks_boot(10).unwrap();
    let ckks = Ckks::new(make(&p), ScalePolicy::Double).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[seed; 32]).unwrap();
    let slots = config.slots;
    let boot = Bootstrapper::new(&ckks, config).unwrap();
    let keys = boot.gen_keys(&ckks, &sk, Some(&[seed.wrapping_add(1); 32])).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(u64::from(seed));
    let values: Vec<Complex64> =
        (0..slots).map(|_| Complex64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0))).collect();
    let level = boot.entry_level();
    let scale = ckks.default_scale();
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, scale, slots, level).unwrap()).unwrap();
    let out = boot.bootstrap(&ckks, &ct, &keys).unwrap();
    log.record(ckks.backend(), "bootstrapped", out.polys());
    assert_eq!(out.level(), boot.output_level());
    assert!(out.level() > level, "bootstrapping must gain levels");
    let got = ckks.decrypt(&sk, &out).unwrap();
    let err = values.iter().zip(&got).map(|(w, g)| (w - g).norm()).fold(0.0, f64::max);
    -err.log2()
}

fn bootstrap_full_slots_sparse_secret<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let bits = run(make, log, BootConfig::new(512), 7);
    eprintln!("full slots, sparse secret: {bits:.1} bits");
    assert!(bits > 14.0, "{bits:.1} bits after bootstrapping");
}

#[test]
fn prepared_diagonals_and_planned_keys_give_the_same_words() {
    let p = params::insecure_test_ckks_boot(10).unwrap();
    let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[5; 32]).unwrap();
    let boot = Bootstrapper::new(&ckks, BootConfig::new(128)).unwrap();
    let keys = boot.gen_keys(&ckks, &sk, Some(&[6; 32])).unwrap();
    // Every key sits at the level of its use: none above the top, relinearisation below it.
    let plan = boot.key_plan(&ckks).unwrap();
    assert!(plan.relin.unwrap() < ckks.max_level());
    assert!(plan.galois.values().any(|&l| l < ckks.max_level()), "some rotation key below the top");
    let values = vec![Complex64::new(0.25, -0.5); 128];
    let level = boot.entry_level() + 4;
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, ckks.default_scale(), 128, level).unwrap()).unwrap();
    let plain = boot.bootstrap(&ckks, &ct, &keys).unwrap();
    let prepared = boot.prepare(&ckks).unwrap();
    let mut stages = Vec::new();
    let fast = boot
        .bootstrap_with(&ckks, &ct, &keys, Some(&prepared), |s| {
            stages.push(s);
            Ok(())
        })
        .unwrap();
    for (a, b) in plain.polys().iter().zip(fast.polys()) {
        assert_eq!(a.to_host(ckks.backend()).unwrap(), b.to_host(ckks.backend()).unwrap());
    }
    assert_eq!(stages.len(), 6, "every stage reported once: {stages:?}");
    let got = ckks.decrypt(&sk, &fast).unwrap();
    let err = values.iter().zip(&got).map(|(w, g)| (w - g).norm()).fold(0.0, f64::max);
    assert!(err < 2f64.powi(-14), "error {err}");
}

#[test]
fn sparse_slots_bootstrap() {
    for slots in [64, 8] {
        let bits = run(&cpu, &Transcript::default(), BootConfig::new(slots), 9);
        eprintln!("{slots} slots, sparse secret: {bits:.1} bits");
        assert!(bits > 14.0, "{slots} slots: {bits:.1} bits after bootstrapping");
    }
}

/// A constant vector puts the whole message in one coefficient, at the ratio's bound: the
/// worst case of EvalMod's sine (`(2 pi 2^-10)^2 / 6`, about 17 bits relative).
#[test]
fn constant_vector_at_the_ratio_bound() {
    let p = params::insecure_test_ckks_boot(10).unwrap();
    let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[21; 32]).unwrap();
    let boot = Bootstrapper::new(&ckks, BootConfig::new(512)).unwrap();
    let keys = boot.gen_keys(&ckks, &sk, Some(&[22; 32])).unwrap();
    for c in [1.0, -0.75] {
        let values = vec![Complex64::new(c, 0.0); 512];
        let ct = ckks
            .encrypt_symmetric(&sk, &ckks.encode(&values, ckks.default_scale(), 512, boot.entry_level()).unwrap())
            .unwrap();
        let got = ckks.decrypt(&sk, &boot.bootstrap(&ckks, &ct, &keys).unwrap()).unwrap();
        let err = values.iter().zip(&got).map(|(w, g)| (w - g).norm()).fold(0.0, f64::max);
        eprintln!("constant {c}: {:.1} bits", -err.log2());
        assert!(-err.log2() > 15.0, "constant {c}: {:.1} bits", -err.log2());
    }
}

#[test]
fn bad_inputs_are_typed_errors() {
    let p = params::insecure_test_ckks_boot(10).unwrap();
    let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
    let single = Ckks::cpu(&p, ScalePolicy::Single).unwrap();
    assert_eq!(
        Bootstrapper::new(&single, BootConfig::new(512)).err(),
        Some(Error::ScalePolicyMismatch { expected: "Double", found: "Single" })
    );
    assert!(Bootstrapper::new(&ckks, BootConfig { slots: 1024, ..BootConfig::new(512) }).is_err());
    assert!(Bootstrapper::new(&ckks, BootConfig { log_ratio: f64::NAN, ..BootConfig::new(512) }).is_err());
    assert!(matches!(
        Bootstrapper::new(&ckks, BootConfig { cts_levels: 30, ..BootConfig::new(512) }),
        Err(Error::DepthExhausted { .. })
    ));
    let boot = Bootstrapper::new(&ckks, BootConfig::new(64)).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let keys = boot.gen_keys(&ckks, &sk, Some(&[2; 32])).unwrap();
    // Too few slots, too low a level.
    let pt = ckks.encode(&[Complex64::new(0.5, 0.0); 32], ckks.default_scale(), 32, ckks.max_level()).unwrap();
    let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
    assert!(matches!(boot.bootstrap(&ckks, &ct, &keys), Err(Error::DimensionMismatch { .. })));
    let pt = ckks.encode(&[Complex64::new(0.5, 0.0); 64], ckks.default_scale(), 64, 2).unwrap();
    let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
    assert!(matches!(boot.bootstrap(&ckks, &ct, &keys), Err(Error::DepthExhausted { .. })));
    // A plan made for N = 2^10, run at N = 2^11.
    let other = Ckks::cpu(&params::insecure_test_ckks_boot(11).unwrap(), ScalePolicy::Double).unwrap();
    let pt = other.encode(&[Complex64::new(0.5, 0.0); 64], other.default_scale(), 64, other.max_level()).unwrap();
    let ct = other.encrypt_symmetric(&other.gen_secret_key_from_seed(&[3; 32]).unwrap(), &pt).unwrap();
    assert_eq!(
        boot.bootstrap(&other, &ct, &keys).err(),
        Some(Error::BootstrapPlanMismatch {
            plan_ring_degree: 1 << 10,
            plan_top_level: ckks.max_level(),
            ring_degree: 1 << 11,
            top_level: other.max_level(),
        })
    );
}
