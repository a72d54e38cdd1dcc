//! Shared fixtures of the encrypted CNN tests (`tests/cnn.rs`, `tests/checkpoint.rs`): a small
//! sparse integer model, synthetic images (no network) and two small insecure rings.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::params::{self, Parameters};
use wgfhe_mnist::cnn::{QuantCnn, Requant, CLASSES, POSITIONS, TAPS};
use wgfhe_mnist::mnist::{Split, PIXELS};

/// A small model with sparse weights, so the tables are short (domains about 30 and 20).
pub fn small_model() -> QuantCnn {
    let (channels, hidden) = (2, 5);
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut conv_w = vec![0i64; channels * TAPS];
    for c in 0..channels {
        conv_w[c * TAPS + rng.random_range(0..TAPS)] = 1;
        conv_w[c * TAPS + rng.random_range(0..TAPS)] -= 1;
        conv_w[c * TAPS + 12] += 1;
    }
    let features = channels * POSITIONS;
    let mut fc1_w = vec![0i64; hidden * features];
    for n in 0..hidden {
        for _ in 0..3 {
            fc1_w[n * features + rng.random_range(0..features)] = if rng.random_bool(0.5) { 1 } else { -1 };
        }
    }
    let fc2_w: Vec<i64> = (0..CLASSES * hidden).map(|_| rng.random_range(-2..=2)).collect();
    QuantCnn {
        channels,
        hidden,
        conv_w,
        conv_b: vec![-3, 2],
        act1: Requant { shift: 2, clip: 7 },
        fc1_w,
        fc1_b: (0..hidden as i64).map(|n| n - 2).collect(),
        act2: Requant { shift: 0, clip: 7 },
        fc2_w,
        fc2_b: (0..CLASSES as i64).map(|m| m % 3).collect(),
    }
}

/// `n` synthetic images (30% of pixels set), labelled `i % 10`.
pub fn images(n: usize) -> Split {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let imgs: Vec<[u8; PIXELS]> = (0..n)
        .map(|_| {
            let mut img = [0u8; PIXELS];
            for v in &mut img {
                if rng.random_bool(0.3) {
                    *v = rng.random_range(0..=255);
                }
            }
            img
        })
        .collect();
    let labels = (0..n).map(|i| (i % 10) as u8).collect();
    Split::new(imgs, labels).unwrap()
}

/// N = 2^10, 24 + 6 primes: the fused tables.
pub fn params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 24, p_primes: 6, dnum: 4 }, 65_537).unwrap()
}

/// More levels: the digit path is deeper than the fused tables.
pub fn digit_params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 60, p_primes: 15, dnum: 4 }, 65_537).unwrap()
}
