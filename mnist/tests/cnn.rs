//! Encrypted CNN end to end on a small insecure set: a small integer model whose tables fit a
//! few levels, synthetic images (no network), two batches (the second partial): every decrypted
//! score equals the plaintext integer model's, for the baseline and `cso` inputs, on the CPU and
//! (with an adapter) on the GPU with bit-identical ciphertexts; bounds that do not fit are
//! typed errors. The digit ReLU path (extraction and a pruned word-wise sign test) equals the
//! model with every digit kept and its plaintext fault emulation with digits pruned, and the GPU
//! computes the same ciphertexts.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

#[path = "common/cnn_fixtures.rs"]
mod cnn_fixtures;
#[path = "../../tests/common/mod.rs"]
mod common;

use cnn_fixtures::{digit_params, images, params, small_model};
use wgfhe::rlwe::KeyRequest;

use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::{Bgv, PlaintextCache};
use wgfhe::compress::{Bxt, Variant};
use wgfhe::params::{self};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::{KeyPlan, KeyStorage};
use wgfhe::Error;
use wgfhe_mnist::cnn::{QuantCnn, Requant, CLASSES};
use wgfhe_mnist::cnn_infer::{run_cnn, CnnCircuit, CnnOptions, CnnStats, ReluPath, BLOCK, PREPARED_BUDGET};
use wgfhe_mnist::mnist::{Split, PIXELS};

fn options(variant: Variant, relu: ReluPath) -> CnnOptions {
    CnnOptions { images: None, variant, relu }
}

#[test]
fn encrypted_cnn_equals_the_integer_model() {
    let model = small_model();
    let b = model.bounds();
    assert!(b.conv <= 63 && b.fc1 <= 63, "{b:?}");
    let data = images(6);
    let ctx = RingContext::new(&params()).unwrap();
    // N = 1024: two 256-slot blocks per row, four images per batch; six images make two batches.
    for variant in [Variant::Baseline, Variant::Cso] {
        let run =
            run_cnn(CpuBackend::new(ctx.clone()), &model, &data, options(variant, ReluPath::Table), |_, _| {}, None)
                .unwrap();
        assert_eq!((run.images, run.batches, run.images_per_batch), (6, 2, 4));
        assert_eq!(run.score_mismatches, 0, "{variant}");
        assert_eq!(run.agreement, 1.0);
        let want = data.images().iter().zip(data.labels()).filter(|(i, &l)| model.predict(i) == l).count();
        assert_eq!(run.accuracy, want as f64 / 6.0);
        assert!(run.stats.hmults > 0 && run.stats.rotations > 0 && run.stats.pmults > 0);
        assert_eq!(run.table_domains, (b.conv, b.fc1));
    }
}

/// `key_bytes` is what the keys' shapes say. Every key at the top would be one relinearisation
/// key and one rotation key per distinct column rotation, each `dnum` digits over the `24 + 6`
/// primes of the key basis, `N` residues of 4 bytes per prime, and two polynomials a digit
/// (`b_j`, `a_j`) for the baseline and `cso`, one (`b_j` alone, bit-packed, `a_j` regenerated
/// from the seed) for the seeded keys of `cso+k`; the run generates the circuit's plan instead (each key at the
/// highest level it is used at, the digits and limbs of that level), whose bytes are
/// [`KeyPlan::resident_bytes`] and fewer.
#[test]
fn key_bytes_follow_from_the_key_shapes() {
    let model = small_model();
    let p = params();
    let ctx = RingContext::new(&p).unwrap();
    let (n, dnum, primes) = (1024u64, 4u64, 24 + 6u64);
    let data = images(4);
    let bgv = Bgv::cpu(&p).unwrap();
    let circuit = CnnCircuit::new(&bgv, &model).unwrap();
    let first: Vec<&[u8; PIXELS]> = data.images().iter().take(circuit.images_per_batch()).collect();
    let circuit_steps = circuit.rotation_steps().to_vec();
    // A column rotation by s and by s + N/2 is the same automorphism (rows of N/2 slots).
    let distinct: std::collections::BTreeSet<i64> = circuit_steps.iter().map(|s| s.rem_euclid(n as i64 / 2)).collect();
    assert!(!distinct.contains(&0) && !distinct.is_empty(), "{circuit_steps:?}");
    let keys = 1 + distinct.len() as u64;
    // Every key at the top: the shapes above.
    let elements: Vec<usize> =
        distinct.iter().map(|&s| wgfhe::rlwe::galois_element(3, s, n as usize)).collect::<Vec<_>>();
    let top = KeyPlan::top(p.q().len(), &elements);
    assert_eq!(top.resident_bytes(&ctx, KeyStorage::Stored).unwrap(), keys * dnum * 2 * primes * n * 4);
    for (variant, storage) in [
        (Variant::Baseline, KeyStorage::Stored),
        (Variant::Cso, KeyStorage::Stored),
        (Variant::CsoK, KeyStorage::SeededPacked),
    ] {
        let run =
            run_cnn(CpuBackend::new(ctx.clone()), &model, &data, options(variant, ReluPath::Table), |_, _| {}, None)
                .unwrap();
        assert_eq!(run.score_mismatches, 0, "{variant}");
        // The plan: relinearisation at the top (the first ReLU multiplies fresh inputs), every
        // rotation key of the circuit below it.
        let plan = circuit.key_plan(&p, variant, &first).unwrap();
        assert_eq!(plan.relin, Some(p.q().len() - 1));
        assert!(plan.galois.keys().all(|g| top.galois.contains_key(g)), "{plan:?}");
        assert!(plan.galois.values().all(|&l| l < p.q().len() - 1), "{plan:?}");
        let want = plan.resident_bytes(&ctx, storage).unwrap();
        assert_eq!(run.key_bytes, want, "{variant}");
        assert!(want < top.resident_bytes(&ctx, storage).unwrap(), "{variant}");
        // The keys are part of the reported device peak.
        assert!(run.peak_device_bytes > run.key_bytes, "{variant}");
    }
}

/// The top-level keys reduced to the levels of the circuit's plan for a batch give the scores
/// ciphertext of the top-level keys word for word (every switch at level l reads the limbs of
/// q_0..q_l and P, which a key reduced to l' >= l holds with the same words) and hold fewer
/// bytes; keys generated at the planned levels hold the plan's bytes and give the right scores.
#[test]
fn planned_keys_give_the_top_level_keys_words() {
    let model = small_model();
    let p = digit_params();
    let data = images(4);
    let be = CpuBackend::new(RingContext::new(&p).unwrap());
    let bgv = Bgv::new(be).unwrap();
    let circuit = CnnCircuit::with_relu(&bgv, &model, ReluPath::digits(0.5).unwrap()).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[21; 32]).unwrap();
    let bxt = Bxt::new(&bgv, Variant::Cso);
    let imgs: Vec<&[u8; PIXELS]> = data.images().iter().take(circuit.images_per_batch()).collect();
    let inputs = circuit.client_inputs(&imgs, bgv.encoder().slots()).unwrap();
    let plan = circuit.key_plan_for(&p, Variant::Cso, std::slice::from_ref(&inputs)).unwrap();
    let top = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(circuit.rotation_steps())).unwrap();
    // The top-level keys reduced to the plan (the same randomness), seeded and packed.
    let reduced = top.reduced_to(bgv.backend(), &plan).unwrap().into_seeded().into_packed(bgv.backend()).unwrap();
    assert!(reduced.resident_bytes(bgv.backend()) < top.resident_bytes(bgv.backend()) / 2);
    // Keys generated at the planned levels (their own randomness): other words, the same scores.
    let generated = bgv.gen_planned_keys(&sk, &plan).unwrap();
    let ctx = bgv.backend().context();
    assert_eq!(generated.resident_bytes(bgv.backend()), plan.resident_bytes(ctx, KeyStorage::Stored).unwrap());
    let cts: Vec<_> = inputs.iter().map(|v| bxt.encrypt(&sk, &bgv.encoder().encode(v).unwrap()).unwrap()).collect();
    let mut words = Vec::new();
    for keys in [&top, &reduced, &generated] {
        let scores = circuit.evaluate(&bxt, keys, &cts, &mut CnnStats::default()).unwrap();
        let dec = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &scores).unwrap()).unwrap();
        for (i, img) in imgs.iter().enumerate() {
            assert_eq!(dec[i * BLOCK..i * BLOCK + CLASSES], circuit.expected_scores(img)[..], "image {i}");
        }
        words.push(bgv.ciphertext_to_bytes_unseeded(&scores).unwrap());
    }
    assert!(words[0] == words[1], "the reduced keys' scores ciphertext differs from the top-level keys'");
}

#[test]
fn digit_relu_path_equals_the_model_and_its_fault_emulation() {
    let model = small_model();
    let data = images(4);
    let ctx = RingContext::new(&digit_params()).unwrap();
    let mut hmults = Vec::new();
    for keep in [1.0, 0.75] {
        let relu = ReluPath::digits(keep).unwrap();
        let run =
            run_cnn(CpuBackend::new(ctx.clone()), &model, &data, options(Variant::Cso, relu), |_, _| {}, None).unwrap();
        assert_eq!(run.relu, relu);
        assert_eq!(run.score_mismatches, 0, "keep {keep}");
        assert_eq!(run.emulation_agreement, 1.0, "keep {keep}");
        if keep == 1.0 {
            assert_eq!(run.agreement, 1.0);
        }
        hmults.push(run.stats.hmults);
    }
    // Pruning a digit saves its extraction and its comparison.
    assert!(hmults[1] < hmults[0], "{hmults:?}");
    // Keeping 3 of 4 digits leaves the dead zone [-6, -1], and on these images the emulation
    // (which the run matched score for score) differs from the exact model: the check above
    // saw real faults.
    let faults = ReluPath::digits(0.75).unwrap().faults();
    assert_eq!(faults.dead_zone, 6);
    assert!(data.images().iter().any(|i| model.scores_with(i, faults) != model.scores(i)));
    assert_eq!(ReluPath::digits(0.25).unwrap(), ReluPath::Digits { kept: 1 });
    assert!(matches!(ReluPath::digits(0.0), Err(Error::InvalidField { .. })));
    assert!(matches!(ReluPath::digits(1.5), Err(Error::InvalidField { .. })));
}

#[test]
fn digit_path_refuses_bounds_outside_its_layout() {
    let ctx = RingContext::new(
        &params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 8, p_primes: 2, dnum: 4 }, 786_433).unwrap(),
    )
    .unwrap();
    let bgv = Bgv::new(CpuBackend::new(ctx)).unwrap();
    // A conv bound of 20,000 fits t = 786433 but not the 4 balanced base-13 digits (+-14280).
    let mut wide = small_model();
    wide.conv_b[0] = 20_000;
    let relu = ReluPath::digits(1.0).unwrap();
    assert!(matches!(CnnCircuit::with_relu(&bgv, &wide, relu), Err(Error::DigitRange { .. })));
    assert!(matches!(
        CnnCircuit::with_relu(&bgv, &small_model(), ReluPath::Digits { kept: 5 }),
        Err(Error::InvalidField { .. })
    ));
}

/// Runs the circuit with a fixed secret key and returns the scores' ciphertext bytes and the
/// decrypted scores of the first image.
fn fixed_run<B: Backend>(backend: B, model: &QuantCnn, data: &Split, relu: ReluPath) -> (Vec<u8>, Vec<i64>) {
    let bgv = Bgv::new(backend).unwrap();
    let circuit = CnnCircuit::with_relu(&bgv, model, relu).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[21; 32]).unwrap();
    let bxt = Bxt::new(&bgv, Variant::Cso);
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(circuit.rotation_steps())).unwrap();
    let imgs: Vec<&[u8; PIXELS]> = data.images().iter().take(circuit.images_per_batch()).collect();
    let cts: Vec<_> = circuit
        .client_inputs(&imgs, bgv.encoder().slots())
        .unwrap()
        .iter()
        .map(|v| bxt.encrypt(&sk, &bgv.encoder().encode(v).unwrap()).unwrap())
        .collect();
    let scores = circuit.evaluate(&bxt, &keys, &cts, &mut CnnStats::default()).unwrap();
    let dec = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &scores).unwrap()).unwrap();
    (bgv.ciphertext_to_bytes_unseeded(&scores).unwrap(), dec[..CLASSES].to_vec())
}

/// Per batch the scores ciphertexts' bytes `[unprepared, full cache, small cache]`, and the
/// two caches' sizes after each batch.
type PreparedRuns = (Vec<[Vec<u8>; 3]>, Vec<(usize, usize)>);

/// Two batches, each evaluated without prepared plaintexts, through a cache that holds all of
/// them (filled by the first batch, reused by the second) and through one whose budget holds a
/// few: the scores ciphertexts' bytes, per batch `[unprepared, full cache, small cache]`, and the
/// two caches' sizes after the first and the second batch.
fn prepared_runs<B: Backend>(backend: B, model: &QuantCnn, data: &Split) -> PreparedRuns {
    let bgv = Bgv::new(backend).unwrap();
    let circuit = CnnCircuit::new(&bgv, model).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[23; 32]).unwrap();
    let bxt = Bxt::new(&bgv, Variant::Cso);
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(circuit.rotation_steps())).unwrap();
    let mut full = PlaintextCache::new(PREPARED_BUDGET);
    // Room for a few plaintexts over every limb: the rest are lifted at each use.
    let mut small = PlaintextCache::new(3 * 4 * (bgv.max_level() as u64 + 1) * bgv.params().n() as u64);
    let (mut out, mut sizes) = (Vec::new(), Vec::new());
    for batch in data.images().chunks(circuit.images_per_batch()) {
        let imgs: Vec<&[u8; PIXELS]> = batch.iter().collect();
        let cts: Vec<_> = circuit
            .client_inputs(&imgs, bgv.encoder().slots())
            .unwrap()
            .iter()
            .map(|v| bxt.encrypt(&sk, &bgv.encoder().encode(v).unwrap()).unwrap())
            .collect();
        let bytes = |cache: Option<&mut PlaintextCache<B>>| {
            let mut stats = CnnStats::default();
            let scores = match cache {
                Some(c) => circuit.evaluate_with(&bxt, &keys, &cts, c, &mut stats).unwrap(),
                None => circuit.evaluate(&bxt, &keys, &cts, &mut stats).unwrap(),
            };
            let dec = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &scores).unwrap()).unwrap();
            for (i, img) in batch.iter().enumerate() {
                assert_eq!(dec[i * BLOCK..i * BLOCK + CLASSES], model.scores(img)[..], "image {i}");
            }
            bgv.ciphertext_to_bytes_unseeded(&scores).unwrap()
        };
        out.push([bytes(None), bytes(Some(&mut full)), bytes(Some(&mut small))]);
        sizes.push((full.len(), small.len()));
    }
    (out, sizes)
}

#[test]
fn prepared_plaintexts_give_the_same_scores_ciphertexts() {
    let model = small_model();
    let data = images(8);
    let ctx = RingContext::new(&params()).unwrap();
    let (cpu, sizes) = prepared_runs(CpuBackend::new(ctx), &model, &data);
    assert_eq!(cpu.len(), 2);
    for (b, [plain, full, small]) in cpu.iter().enumerate() {
        assert!(full == plain, "batch {b}: the fully prepared run differs from the unprepared one");
        assert!(small == plain, "batch {b}: the partly prepared run differs from the unprepared one");
    }
    // The first batch prepared every diagonal, bias and constant it met; the second reused
    // them (nothing new, nothing replaced); the small budget held only some.
    let (full_1, small_1) = sizes[0];
    assert!(full_1 > 3, "{sizes:?}");
    assert_eq!(sizes[1].0, full_1, "{sizes:?}");
    assert!(small_1 > 0 && small_1 < full_1, "{sizes:?}");
    // (Prepared and unprepared operations give the same words on the GPU too: tests/bgv.rs.)
}

#[test]
fn gpu_ciphertexts_equal_the_cpu_ones() {
    let model = small_model();
    let data = images(4);
    let ctx = RingContext::new(&params()).unwrap();
    let (cpu, scores) = fixed_run(CpuBackend::new(ctx.clone()), &model, &data, ReluPath::Table);
    assert_eq!(scores, model.scores(&data.images()[0]));
    if let Some(dev) = common::device() {
        let (gpu, _) = fixed_run(GpuBackend::new(ctx, dev), &model, &data, ReluPath::Table);
        assert!(gpu == cpu, "GPU scores ciphertext differs from the CPU's");
    }
}

#[test]
fn gpu_digit_path_ciphertexts_equal_the_cpu_ones() {
    let model = small_model();
    let data = images(4);
    let ctx = RingContext::new(&digit_params()).unwrap();
    let relu = ReluPath::digits(0.75).unwrap();
    let (cpu, scores) = fixed_run(CpuBackend::new(ctx.clone()), &model, &data, relu);
    assert_eq!(scores, model.scores_with(&data.images()[0], relu.faults()));
    if let Some(dev) = common::device() {
        let (gpu, _) = fixed_run(GpuBackend::new(ctx, dev), &model, &data, relu);
        assert!(gpu == cpu, "GPU scores ciphertext differs from the CPU's (digit path)");
    }
}

#[test]
fn bounds_that_do_not_fit_are_refused() {
    let ctx = RingContext::new(&params()).unwrap();
    let bgv = Bgv::new(CpuBackend::new(ctx)).unwrap();
    // Scores beyond t/2 = 32768.
    let mut big = small_model();
    big.fc2_w.iter_mut().for_each(|w| *w = 7);
    big.act2 = Requant { shift: 0, clip: 1000 };
    assert!(matches!(CnnCircuit::new(&bgv, &big), Err(Error::BoundTooLarge { .. })));
    // A conv bound beyond the table limit (t - 1) / 2.
    let mut wide = small_model();
    wide.conv_b[0] = 40_000;
    assert!(matches!(CnnCircuit::new(&bgv, &wide), Err(Error::BoundTooLarge { .. })));
    // Malformed shapes.
    let mut bad = small_model();
    bad.fc2_b.pop();
    assert!(matches!(CnnCircuit::new(&bgv, &bad), Err(Error::DimensionMismatch { .. })));
    // Too many images for one batch.
    let circuit = CnnCircuit::new(&bgv, &small_model()).unwrap();
    let data = images(5);
    let imgs: Vec<&[u8; PIXELS]> = data.images().iter().collect();
    assert!(matches!(circuit.client_inputs(&imgs, bgv.encoder().slots()), Err(Error::DimensionMismatch { .. })));
    assert_eq!(BLOCK, 256);
}
