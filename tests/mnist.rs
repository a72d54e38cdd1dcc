//! Encrypted logistic regression end to end on a small insecure set: every variant's decrypted
//! scores equal the quantised plaintext model's on every image, on the CPU and (with an adapter)
//! on the GPU; a model whose bound does not fit the plaintext modulus is refused. No network:
//! the images are synthetic (the real MNIST runs in `wgfhe mnist`).

#![expect(clippy::unwrap_used, reason = "tests")]

mod common;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::{CpuBackend, GpuBackend};
use wgfhe::compress::Variant;
use wgfhe::ml::infer::{run_lr, LrOptions};
use wgfhe::ml::lr::{Dataset, QuantLr};
use wgfhe::params;
use wgfhe::ring::RingContext;
use wgfhe::Error;

const DIM: usize = 40;

fn model_and_data(images: usize) -> (QuantLr, Dataset) {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let weights: Vec<i64> = (0..DIM).map(|_| rng.random_range(-7..=7)).collect();
    let model = QuantLr::new(weights, 11, 4).unwrap();
    let q: Vec<u8> = (0..images * DIM).map(|_| rng.random_range(0..=15)).collect();
    let y: Vec<bool> = (0..images).map(|i| i % 3 == 0).collect();
    (model, Dataset::new(DIM, q, y).unwrap())
}

#[test]
fn encrypted_lr_agrees_with_the_quantised_model() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 0, dnum: 1 }, 786_433).unwrap();
    let ctx = RingContext::new(&p).unwrap();
    // More images than slots: two batches, the second partial.
    let (model, data) = model_and_data(1100);
    let mut calls = 0;
    for variant in Variant::ALL {
        let options = LrOptions { images: None, variant, timed: false };
        let run = run_lr(CpuBackend::new(ctx.clone()), &model, &data, options, |_, _| calls += 1, None).unwrap();
        assert_eq!((run.images, run.batches), (1100, 2));
        assert_eq!(run.score_mismatches, 0, "{variant}");
        assert_eq!(run.agreement, 1.0, "{variant}");
        let want = data.iter().filter(|(q, y)| (model.score(q).unwrap() >= 0) == *y).count() as f64 / 1100.0;
        assert_eq!(run.accuracy, want);
        assert!(run.bytes_moved > 0 && run.dispatches > 0);
    }
    assert_eq!(calls, 2 * Variant::ALL.len());
    if let Some(dev) = common::device() {
        let options = LrOptions { images: Some(300), variant: Variant::Cso, timed: false };
        let run = run_lr(GpuBackend::new(ctx, dev), &model, &data, options, |_, _| {}, None).unwrap();
        assert_eq!((run.images, run.score_mismatches), (300, 0));
    }
}

#[test]
fn a_bound_beyond_the_plaintext_modulus_is_refused() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 0, dnum: 1 }, 12_289).unwrap();
    let (_, data) = model_and_data(10);
    let big = QuantLr::new(vec![500; DIM], 0, 4).unwrap();
    let options = LrOptions { images: None, variant: Variant::C, timed: false };
    let err = run_lr(CpuBackend::new(RingContext::new(&p).unwrap()), &big, &data, options, |_, _| {}, None);
    assert!(matches!(err, Err(Error::BoundTooLarge { .. })), "{err:?}");
}
