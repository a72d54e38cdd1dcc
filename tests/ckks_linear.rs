//! CKKS linear transforms on both backends: hoisted rotations, a baby-step giant-step transform,
//! the subring trace, CoeffToSlot and SlotToCoeff of sparse slots, checked against the clear
//! computation on the CPU (`cpu::*`) and, on the GPU (`gpu::*`), also word for word against the
//! CPU's run (see `common/backends.rs`).

#![expect(clippy::unwrap_used, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use std::collections::BTreeMap;
use wgfhe::rlwe::KeyRequest;

use backends::{cpu_and_gpu, Make, Transcript};
use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::Backend;
use wgfhe::ckks::linear::{bit_reverse, special_dft_inverse, BootTransforms, LinearTransform};
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::params::{self, TestRing};

cpu_and_gpu!(linear_transforms_on_a_small_ring);

fn max_err(a: &[Complex64], b: &[Complex64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
}

/// N = 2^10, double scaling, 64 slots: errors near 2^-48 (see the unit tests of
/// `ckks::linear`), checked against 2^-40.
fn linear_transforms_on_a_small_ring<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    const BOUND: f64 = 1.0 / (1u64 << 40) as f64;
    let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 11, p_primes: 3, dnum: 4 }, 30).unwrap();
    let ckks = Ckks::new(make(&p), ScalePolicy::Double).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let slots = 64;
    let mut random = |n: usize| -> Vec<Complex64> {
        (0..n).map(|_| Complex64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0))).collect()
    };
    let plan = BootTransforms::new(1024, slots, 2, 2, 1.0).unwrap();
    let diags: BTreeMap<usize, Vec<Complex64>> =
        [0usize, 1, 3, 9, 62].into_iter().map(|k| (k, random(slots))).collect();
    let lt = LinearTransform::new(slots, diags).unwrap();
    let mut steps = plan.rotations();
    steps.extend(lt.rotations());
    let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&steps).with_conjugation()).unwrap();
    let z = random(slots);
    let ct =
        ckks.encrypt_symmetric(&sk, &ckks.encode(&z, ckks.default_scale(), slots, ckks.max_level()).unwrap()).unwrap();
    let be = ckks.backend();

    for r in ckks.rotate_hoisted(&ct, &[1, 3, 9], &keys).unwrap() {
        log.record(be, "hoisted rotation", r.polys());
    }
    let out = ckks.linear_transform(&ct, &lt, &keys).unwrap();
    log.record(be, "linear transform", out.polys());
    assert!(max_err(&ckks.decrypt(&sk, &out).unwrap(), &lt.apply(&z).unwrap()) < BOUND);

    let trace = ckks.subring_trace(&ct, &keys).unwrap();
    log.record(be, "subring trace", trace.polys());
    let mid = ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
    log.record(be, "coeff to slot", mid.polys());
    let want = bit_reverse(&special_dft_inverse(&z).unwrap()).unwrap();
    assert!(max_err(&ckks.decrypt(&sk, &mid).unwrap(), &want) < BOUND);
    let back = ckks.slot_to_coeff(&mid, &plan, &keys).unwrap();
    log.record(be, "slot to coeff", back.polys());
    assert!(max_err(&ckks.decrypt(&sk, &back).unwrap(), &z) < BOUND);
}
