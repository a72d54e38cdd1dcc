//! The shape-only trace (`wgfhe mnist --backend shape`, [`trace_cnn_shapes`],
//! [`trace_lr_shapes`]) is the trace of the real run: on small insecure rings, the ledger
//! records the server writes on the shape-only backend are, line for line, those it writes on
//! the CPU backend for the same command (kernel, ring degree, limbs, bytes, key, table and
//! plaintext bytes, PRNG words, modular multiplications, GPU dispatches and copies, NTT passes,
//! packed residues: every field, untimed), and so are the totals, the planned keys' bytes, the
//! operation counts and the levels and noise estimates after each stage. Two batches each, the
//! second partial, so the second batch runs with the keys planned on the first. A trace of
//! another variant differs from the real run's, so the comparison can fail.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

#[path = "common/cnn_fixtures.rs"]
mod cnn_fixtures;

use cnn_fixtures::{digit_params, images, params, small_model};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::CpuBackend;
use wgfhe::compress::Variant;
use wgfhe::params::{self as sets, Parameters};
use wgfhe::ring::RingContext;
use wgfhe_mnist::cnn_infer::{run_cnn, trace_cnn_shapes, CnnOptions, ReluPath};
use wgfhe_mnist::infer::{run_lr, trace_lr_shapes, LrOptions};
use wgfhe_mnist::lr::{Dataset, QuantLr};

/// The JSON lines of a trace.
fn lines(trace: &[u8]) -> Vec<String> {
    String::from_utf8(trace.to_vec()).unwrap().lines().map(str::to_owned).collect()
}

/// Asserts that two traces hold the same records in the same order (naming the first
/// difference).
fn assert_same_records(real: &[String], shape: &[String], what: &str) {
    for (i, (r, s)) in real.iter().zip(shape).enumerate() {
        assert_eq!(r, s, "{what}: record {i} differs");
    }
    assert_eq!(real.len(), shape.len(), "{what}: record counts");
    assert!(!real.is_empty(), "{what}: an empty trace");
}

/// The real CPU run's trace and the shape-only trace of the CNN, compared; returns the real
/// trace.
fn compare_cnn(p: &Parameters, options: CnnOptions, what: &str) -> Vec<String> {
    let model = small_model();
    let data = images(6);
    let ctx = RingContext::new(p).unwrap();
    let mut real_trace = Vec::new();
    let real = run_cnn(CpuBackend::new(ctx.clone()), &model, &data, options, |_, _| {}, Some(&mut real_trace)).unwrap();
    assert_eq!(real.score_mismatches, 0, "{what}");
    let mut shape_trace = Vec::new();
    let mut calls = Vec::new();
    let shape =
        trace_cnn_shapes(ctx, &model, &data, options, |done, total| calls.push((done, total)), Some(&mut shape_trace))
            .unwrap();
    let (real_lines, shape_lines) = (lines(&real_trace), lines(&shape_trace));
    assert_same_records(&real_lines, &shape_lines, what);
    // N = 1024: four images per batch, six images in two batches.
    assert_eq!((shape.images, shape.batches, shape.images_per_batch), (6, 2, 4), "{what}");
    assert_eq!(calls, vec![(4, 6), (6, 6)], "{what}");
    assert_eq!(shape.records, real_lines.len() as u64, "{what}");
    assert_eq!(
        (shape.bytes_moved, shape.gpu_dispatches, shape.key_bytes, shape.peak_device_bytes),
        (real.bytes_moved, real.gpu_dispatches, real.key_bytes, real.peak_device_bytes),
        "{what}"
    );
    assert_eq!(
        (shape.hmults, shape.rotations, shape.pmults, shape.table_domains),
        (real.stats.hmults, real.stats.rotations, real.stats.pmults, real.table_domains),
        "{what}"
    );
    let stages = |v: &[wgfhe_mnist::cnn_infer::StageNoise]| -> Vec<(&'static str, usize, u64, u64)> {
        v.iter().map(|n| (n.stage, n.level, n.noise_bits.to_bits(), n.modulus_bits.to_bits())).collect()
    };
    assert_eq!(stages(&shape.noise), stages(&real.stats.noise), "{what}");
    assert_eq!(shape.noise.len(), 5, "{what}");
    real_lines
}

#[test]
fn cnn_digit_path_shape_trace_is_the_cpu_runs_trace() {
    let keep_half = ReluPath::digits(0.5).unwrap();
    let options = CnnOptions { images: None, variant: Variant::Cso, relu: keep_half };
    let real = compare_cnn(&digit_params(), options, "digits keep 0.5, cso");
    // The comparison can fail: the baseline's shape trace is not the `cso` run's trace.
    let model = small_model();
    let mut baseline = Vec::new();
    let ctx = RingContext::new(&digit_params()).unwrap();
    let options = CnnOptions { variant: Variant::Baseline, ..options };
    trace_cnn_shapes(ctx, &model, &images(6), options, |_, _| {}, Some(&mut baseline)).unwrap();
    assert_ne!(lines(&baseline), real);
}

#[test]
fn cnn_table_path_shape_traces_are_the_cpu_runs_traces() {
    for variant in [Variant::Baseline, Variant::CsoK] {
        let options = CnnOptions { images: None, variant, relu: ReluPath::Table };
        compare_cnn(&params(), options, &format!("tables, {variant}"));
    }
}

#[test]
fn lr_shape_traces_are_the_cpu_runs_traces() {
    const DIM: usize = 40;
    let p = sets::insecure_test_bgv(sets::TestRing { log_n: 10, q_primes: 3, p_primes: 0, dnum: 1 }, 786_433).unwrap();
    let ctx = RingContext::new(&p).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let model = QuantLr::new((0..DIM).map(|_| rng.random_range(-7..=7)).collect(), 11, 4).unwrap();
    // More images than slots: two batches, the second partial.
    let images = 1100;
    let q: Vec<u8> = (0..images * DIM).map(|_| rng.random_range(0..=15)).collect();
    let data = Dataset::new(DIM, q, (0..images).map(|i| i % 3 == 0).collect()).unwrap();
    for variant in Variant::ALL {
        let options = LrOptions { images: None, variant, timed: false };
        let mut real_trace = Vec::new();
        let real =
            run_lr(CpuBackend::new(ctx.clone()), &model, &data, options, |_, _| {}, Some(&mut real_trace)).unwrap();
        assert_eq!(real.score_mismatches, 0, "{variant}");
        let mut shape_trace = Vec::new();
        let shape = trace_lr_shapes(ctx.clone(), &model, &data, options, |_, _| {}, Some(&mut shape_trace)).unwrap();
        let real_lines = lines(&real_trace);
        assert_same_records(&real_lines, &lines(&shape_trace), &format!("lr, {variant}"));
        assert_eq!((shape.images, shape.batches, shape.records), (images, 2, real_lines.len() as u64));
        assert_eq!(
            (shape.bytes_moved, shape.gpu_dispatches, shape.peak_device_bytes),
            (real.bytes_moved, real.gpu_dispatches, real.peak_device_bytes),
            "{variant}"
        );
    }
    // A shape-only run has no dispatch times.
    let timed = LrOptions { images: None, variant: Variant::Cso, timed: true };
    assert!(trace_lr_shapes(ctx, &model, &data, timed, |_, _| {}, None).is_err());
}
