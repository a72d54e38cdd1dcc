//! Sparse-secret encapsulation (`wgfhe::ckks::sparse`) on both backends: a ciphertext switched
//! from the dense secret to the sparse one decrypts under the sparse one to the same message,
//! and back under the dense one; the GPU run must give the CPU's words for every ciphertext
//! (see `common/backends.rs`). Small insecure bootstrapping ring (`N = 2^10`, 43 + 15 primes).

#![expect(clippy::unwrap_used, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use backends::{cpu_and_gpu, Make, Transcript};
use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::Backend;
use wgfhe::ckks::sparse::SPARSE_HAMMING_WEIGHT;
use wgfhe::ckks::{Ciphertext, Ckks, ScalePolicy};
use wgfhe::params;

cpu_and_gpu!(encapsulate_and_decapsulate);

/// `-log2` of the largest slot error.
fn worst_bits(got: &[Complex64], want: &[Complex64]) -> f64 {
    let err = got.iter().zip(want).map(|(g, w)| (g - w).norm()).fold(0.0f64, f64::max);
    -err.max(f64::MIN_POSITIVE).log2()
}

fn record<B: Backend>(ckks: &Ckks<B>, log: &Transcript, note: &str, ct: &Ciphertext<B>) {
    log.record(ckks.backend(), note, ct.polys());
}

fn encapsulate_and_decapsulate<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = params::insecure_test_ckks_boot(10).unwrap();
    let ckks = Ckks::new(make(&p), ScalePolicy::Double).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[4; 32]).unwrap();
    let sparse = ckks.gen_sparse_secret_key(Some(&[4; 32]), SPARSE_HAMMING_WEIGHT).unwrap();
    assert_eq!(sparse.coefficients().iter().filter(|&&c| c != 0).count(), SPARSE_HAMMING_WEIGHT);
    let level = ckks.sparse_key_level();
    let keys = ckks.gen_sparse_switch_keys(&sk, &sparse, level).unwrap();

    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let slots = 512;
    let want: Vec<Complex64> =
        (0..slots).map(|_| Complex64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0))).collect();

    // At the key's level (the base primes), scale 2^60.
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&want, 2f64.powi(60), slots, level).unwrap()).unwrap();
    let enc = ckks.encapsulate_sparse(&ct, &keys).unwrap();
    record(&ckks, log, "encapsulated", &enc);
    let bits = worst_bits(&ckks.decrypt(&sparse, &enc).unwrap(), &want);
    eprintln!("encapsulated, under s': {bits:.1} bits");
    assert!(bits > 34.0, "under s': {bits} bits");
    let dec = ckks.decapsulate_sparse(&enc, &keys).unwrap();
    record(&ckks, log, "decapsulated", &dec);
    let bits = worst_bits(&ckks.decrypt(&sk, &dec).unwrap(), &want);
    eprintln!("decapsulated, under s: {bits:.1} bits");
    assert!(bits > 34.0, "back under s: {bits} bits");

    // At the top level (where bootstrapping switches back after ModRaise).
    let top = ckks.encode(&want, ckks.default_scale(), slots, ckks.max_level()).unwrap();
    let under_sparse = ckks.encrypt_symmetric(&sparse, &top).unwrap();
    let back = ckks.decapsulate_sparse(&under_sparse, &keys).unwrap();
    record(&ckks, log, "decapsulated at the top", &back);
    let bits = worst_bits(&ckks.decrypt(&sk, &back).unwrap(), &want);
    eprintln!("decapsulated at the top, under s: {bits:.1} bits");
    assert!(bits > 40.0, "top level, back under s: {bits} bits");
}
