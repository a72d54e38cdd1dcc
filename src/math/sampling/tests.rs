use super::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// SplitMix64, an independent generator for test inputs.
pub(super) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(super) fn test_seed(tag: u64) -> Seed {
    let mut st = tag;
    let mut s = [0u8; 32];
    for c in s.chunks_exact_mut(8) {
        c.copy_from_slice(&splitmix(&mut st).to_le_bytes());
    }
    s
}

/// Stream word `pos` of the ChaCha20 stream `(seed, stream)` from the twin block function.
fn twin_word(seed: &Seed, stream: u64, pos: u128) -> u32 {
    chacha20_block(seed, stream, (pos / 16) as u64)[(pos % 16) as usize]
}

/// Stream word `pos` of the ChaCha12 stream `(seed, stream)` from the twin block function.
fn twin12_word(seed: &Seed, stream: u64, pos: u128) -> u32 {
    chacha12_block(seed, stream, (pos / 16) as u64)[(pos % 16) as usize]
}

pub(super) const MODULI: [u32; 5] = [2, 12_289, 786_433, (1 << 29) + 11, (1 << 30) - 35];

// ---- ChaCha20 ---------------------------------------------------------------------

/// The published all-zero-key, all-zero-nonce ChaCha20 block (djb's reference code; the
/// same block is test vector 1 of RFC 8439, appendix A.1).
const ZERO_BLOCK: [u8; 64] = [
    0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86, 0xbd, 0x28, 0xbd, 0xd2, 0x19,
    0xb8, 0xa0, 0x8d, 0xed, 0x1a, 0xa8, 0x36, 0xef, 0xcc, 0x8b, 0x77, 0x0d, 0xc7, 0xda, 0x41, 0x59, 0x7c, 0x51, 0x57,
    0x48, 0x8d, 0x77, 0x24, 0xe0, 0x3f, 0xb8, 0xd8, 0x4a, 0x37, 0x6a, 0x43, 0xb8, 0xf4, 0x15, 0x18, 0xa1, 0x1c, 0xc3,
    0x87, 0xb6, 0x69, 0xb2, 0xee, 0x65, 0x86,
];

#[test]
fn chacha_known_answer_all_zero() {
    let twin: Vec<u8> = chacha20_block(&[0; 32], 0, 0).iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(twin, ZERO_BLOCK);

    let mut rng = ChaCha20Rng::from_seed([0; 32]);
    let mut bytes = [0u8; 64];
    rng.fill_bytes(&mut bytes);
    assert_eq!(bytes, ZERO_BLOCK);

    let mut rng = ChaCha20Rng::from_seed([0; 32]);
    for (i, chunk) in ZERO_BLOCK.chunks_exact(4).enumerate() {
        let w = u32::from_le_bytes(chunk.try_into().unwrap());
        assert_eq!(rng.next_u32(), w, "word {i}");
    }
}

#[test]
fn chacha_stream_words_are_nonce_words_14_and_15() {
    // RFC 8439 A.1 test vector 5: zero key, 96-bit nonce 00..00 02, counter 0. In the
    // 64-bit-counter layout the last nonce byte is the top byte of word 15, i.e. stream
    // id 2 << 56.
    let expected_first = [0xc2u8, 0xc6, 0x4d, 0x37, 0x8c, 0xd5, 0x36, 0x37];
    let block = chacha20_block(&[0; 32], 2 << 56, 0);
    let bytes: Vec<u8> = block.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(&bytes[..8], &expected_first);
    let mut rng = ChaCha20Rng::from_seed([0; 32]);
    rng.set_stream(2 << 56);
    let mut got = [0u8; 8];
    rng.fill_bytes(&mut got);
    assert_eq!(got, expected_first);
}

#[test]
fn chacha_twin_matches_rand_chacha() {
    let streams = [0u64, 1, 0xffff_ffff, 1 << 32, 2 << 56, u64::MAX, 0x0503_0201_1234_5678];
    // Block positions including the crossing of the low counter word.
    let blocks = [0u64, 1, 3, 4, 5, 1000, 0xffff_ffff, 1 << 32, (1 << 32) + 7, u64::MAX];
    for (si, &stream) in streams.iter().enumerate() {
        let seed = test_seed(si as u64 + 1);
        for &b in &blocks {
            for offset in [0u128, 5, 15] {
                let pos = u128::from(b) * 16 + offset;
                let mut rng = ChaCha20Rng::from_seed(seed);
                rng.set_stream(stream);
                rng.set_word_pos(pos);
                for k in 0..40u128 {
                    // The counter wraps at 2^64 blocks (word position 2^68).
                    let p = (pos + k) % (1u128 << 68);
                    assert_eq!(rng.next_u32(), twin_word(&seed, stream, p), "stream {stream:#x} word {p}");
                }
            }
        }
    }
}

#[test]
fn chacha_sequential_reading_matches_twin() {
    let seed = test_seed(99);
    let mut rng = ChaCha20Rng::from_seed(seed);
    rng.set_stream(12345);
    for p in 0..16 * 9 {
        assert_eq!(rng.next_u32(), twin_word(&seed, 12345, p));
    }
    assert_eq!(rng.get_word_pos(), 16 * 9);
}

// ---- stream ids -------------------------------------------------------------------

#[test]
fn stream_id_layout_and_bounds() {
    assert_eq!(stream_id(Purpose::KeySwitchA, 0x12_3456, 0x3fff_ffdd).unwrap(), 0x0312_3456_3fff_ffdd);
    assert_eq!(stream_id(Purpose::SeedDerivation, MAX_STREAM_INDEX - 1, 7).unwrap(), 0x07ff_ffff_0000_0007);
    for bad in [MAX_STREAM_INDEX, MAX_STREAM_INDEX + 1, u32::MAX] {
        assert!(matches!(
            stream_id(Purpose::CiphertextA, bad, 17),
            Err(Error::CountTooLarge { found, limit, .. })
                if found == u64::from(bad) && limit == 0xff_ffff
        ));
        let m = Modulus::new(17).unwrap();
        let seed = test_seed(1);
        let mut out = [0u32; 8];
        assert!(matches!(
            uniform_limb(&seed, Purpose::CiphertextA, bad, &m, &mut out),
            Err(Error::CountTooLarge { .. })
        ));
        assert!(matches!(uniform_residue(&seed, Purpose::CiphertextA, bad, &m, 0), Err(Error::CountTooLarge { .. })));
    }
    let tags: Vec<u8> = [
        Purpose::CiphertextA,
        Purpose::PublicKeyA,
        Purpose::KeySwitchA,
        Purpose::Secret,
        Purpose::Error,
        Purpose::Ephemeral,
        Purpose::SeedDerivation,
    ]
    .iter()
    .map(|p| p.tag())
    .collect();
    assert_eq!(tags, [1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn sampler_streams_never_meet_limb_streams() {
    let purposes = [Purpose::Secret, Purpose::Error, Purpose::CiphertextA];
    for p in purposes {
        for index in [0u32, 1, MAX_STREAM_INDEX - 1, MAX_STREAM_INDEX, u32::MAX] {
            let s = sampler_stream_id(p, index);
            assert_eq!(s >> 56, 0x80 | u64::from(p.tag()));
            assert_eq!(s as u32, index);
            for q in [2u32, 17, (1 << 30) - 35] {
                for idx in [0u32, 1, MAX_STREAM_INDEX - 1] {
                    for lp in purposes {
                        assert_ne!(stream_id(lp, idx, q).unwrap(), s);
                    }
                }
            }
        }
    }
}

// ---- uniform residues -------------------------------------------------------------

#[test]
fn uniform_streams_are_distinct_and_deterministic() {
    let seed = test_seed(11);
    let q = MODULI[4];
    let m = Modulus::new(u64::from(q)).unwrap();
    let limb = |seed: &Seed, p: Purpose, i: u32, m: &Modulus| {
        let mut out = vec![0u32; 64];
        uniform_limb(seed, p, i, m, &mut out).unwrap();
        out
    };
    let base = limb(&seed, Purpose::CiphertextA, 0, &m);
    assert_eq!(base, limb(&seed, Purpose::CiphertextA, 0, &m));
    let others = [
        limb(&seed, Purpose::PublicKeyA, 0, &m),
        limb(&seed, Purpose::KeySwitchA, 0, &m),
        limb(&seed, Purpose::CiphertextA, 1, &m),
        limb(&seed, Purpose::CiphertextA, 1 << 23, &m),
        limb(&test_seed(12), Purpose::CiphertextA, 0, &m),
    ];
    for (k, o) in others.iter().enumerate() {
        let same = base.iter().zip(o).filter(|(a, b)| a == b).count();
        assert!(same <= 1, "variant {k} shares {same} of 64 residues");
    }
    // Another modulus uses another stream, not the same words reduced differently.
    let q2 = MODULI[3];
    let m2 = Modulus::new(u64::from(q2)).unwrap();
    let other_q = limb(&seed, Purpose::CiphertextA, 0, &m2);
    let stream_q = stream_id(Purpose::CiphertextA, 0, q).unwrap();
    let same_words: Vec<u32> = (0..64).map(|j| twin12_word(&seed, stream_q, j as u128) & candidate_mask(q2)).collect();
    let same = other_q.iter().zip(&same_words).filter(|(a, b)| a == b).count();
    assert!(same <= 1);
}

/// Pearson chi-square statistic of `samples` (all `< q`) over `buckets` equal-width ranges,
/// with the exact expected mass of each range.
fn chi_square(samples: &[u32], q: u32, buckets: u64) -> f64 {
    let q64 = u64::from(q);
    let mut counts = vec![0u64; buckets as usize];
    for &r in samples {
        counts[(u64::from(r) * buckets / q64) as usize] += 1;
    }
    // Bucket b holds the r with b*q <= r*B < (b+1)*q, i.e. r in [ceil(bq/B), ceil((b+1)q/B)).
    let lo = |b: u64| (b * q64).div_ceil(buckets);
    let n = samples.len() as f64;
    (0..buckets)
        .map(|b| {
            let expected = n * (lo(b + 1) - lo(b)) as f64 / q as f64;
            let d = counts[b as usize] as f64 - expected;
            d * d / expected
        })
        .sum()
}

#[test]
fn uniform_residues_pass_chi_square() {
    // 64 buckets: 63 degrees of freedom, mean 63, standard deviation ~11.2. The bound
    // 63 + 6 sd = 130 fails a correct generator with probability below 1e-6.
    let bound = 130.0;
    let seed = test_seed(21);
    for &q in &MODULI[1..] {
        let m = Modulus::new(u64::from(q)).unwrap();
        let mut out = vec![0u32; 1 << 16];
        uniform_limb(&seed, Purpose::CiphertextA, 2, &m, &mut out).unwrap();
        let stat = chi_square(&out, q, 64);
        assert!(stat < bound, "q {q}: chi-square {stat}");

        // Negative controls: the same test rejects visibly biased data.
        let mut skewed = out.clone();
        for r in skewed.iter_mut().step_by(33) {
            *r = 0; // ~3% extra mass in the first bucket
        }
        assert!(chi_square(&skewed, q, 64) > bound);
        let minimum: Vec<u32> = out.chunks_exact(2).map(|c| c[0].min(c[1])).collect();
        assert!(chi_square(&minimum, q, 64) > bound);
    }
    // q = 2: both values about equally often (5 sd of a binomial with n = 2^16 is 640).
    let m = Modulus::new(2).unwrap();
    let mut out = vec![0u32; 1 << 16];
    uniform_limb(&seed, Purpose::CiphertextA, 2, &m, &mut out).unwrap();
    let ones = out.iter().filter(|&&r| r == 1).count() as i64;
    assert!((ones - (1 << 15)).abs() < 640, "{ones}");
}

// ---- host sampler -----------------------------------------------------------------

#[test]
fn sampler_is_deterministic_and_stream_separated() {
    let seed = test_seed(31);
    let a = Sampler::from_seed(&seed, Purpose::Secret, 0).ternary(256);
    assert_eq!(a, Sampler::from_seed(&seed, Purpose::Secret, 0).ternary(256));
    let variants = [
        Sampler::from_seed(&seed, Purpose::Error, 0).ternary(256),
        Sampler::from_seed(&seed, Purpose::Secret, 1).ternary(256),
        Sampler::from_seed(&seed, Purpose::Secret, u32::MAX).ternary(256),
        Sampler::from_seed(&test_seed(32), Purpose::Secret, 0).ternary(256),
    ];
    for v in &variants {
        let same = a.iter().zip(v).filter(|(x, y)| x == y).count();
        // Independent uniform ternary vectors agree in ~1/3 of places (85 +- 8).
        assert!(same < 140, "{same}");
    }
    let g = Sampler::from_seed(&seed, Purpose::Error, 4).gaussian(300);
    assert_eq!(g, Sampler::from_seed(&seed, Purpose::Error, 4).gaussian(300));
}

#[test]
fn ternary_mapping_and_frequencies() {
    let seed = test_seed(41);
    let n = 300_000usize;
    let t = Sampler::from_seed(&seed, Purpose::Secret, 3).ternary(n);
    // The documented mapping, from the twin block function on the sampler stream.
    let stream = 0x84u64 << 56 | 3;
    for (i, &x) in t.iter().take(1000).enumerate() {
        let r = u64::from(twin_word(&seed, stream, i as u128));
        assert_eq!(i64::from(x), ((r * 3) >> 32) as i64 - 1, "i {i}");
    }
    let mut counts = [0usize; 3];
    for &x in &t {
        assert!((-1..=1).contains(&x));
        counts[(x + 1) as usize] += 1;
    }
    // Binomial(n, 1/3): sd = sqrt(n * 2/9) ~ 258; allow 5 sd.
    for c in counts {
        assert!((c as f64 - n as f64 / 3.0).abs() < 5.0 * 258.2, "{counts:?}");
    }
}

/// Masses of the discrete Gaussian on [-19, 19], in f64.
fn gaussian_masses() -> Vec<f64> {
    let rho = |x: i32| (-f64::from(x * x) / (2.0 * SIGMA * SIGMA)).exp();
    let s: f64 = (-GAUSSIAN_BOUND..=GAUSSIAN_BOUND).map(rho).sum();
    (-GAUSSIAN_BOUND..=GAUSSIAN_BOUND).map(|x| rho(x) / s).collect()
}

#[test]
fn gaussian_tail_table_matches_f64() {
    let p = gaussian_masses(); // index x + 19
    for i in 0..GAUSSIAN_BOUND {
        let tail: f64 = (i + 1..=GAUSSIAN_BOUND).map(|k| 2.0 * p[(k + GAUSSIAN_BOUND) as usize]).sum();
        let want = tail * 2f64.powi(64);
        let got = GAUSSIAN_TAIL[i as usize] as f64;
        assert!(((got - want) / want).abs() < 1e-12, "entry {i}: {got} vs {want}");
    }
    assert!(GAUSSIAN_TAIL.windows(2).all(|w| w[0] > w[1]));
}

#[test]
fn gaussian_mapping_matches_search() {
    // The documented draw (low word, high word, sign word) and a plain search of the
    // table give the same values.
    let seed = test_seed(51);
    let g = Sampler::from_seed(&seed, Purpose::Error, 9).gaussian(2000);
    let stream = 0x85u64 << 56 | 9;
    for (i, &x) in g.iter().enumerate() {
        let p = 3 * i as u128;
        let r = u64::from(twin_word(&seed, stream, p)) | u64::from(twin_word(&seed, stream, p + 1)) << 32;
        let s = twin_word(&seed, stream, p + 2);
        let mut mag = 0;
        while mag < GAUSSIAN_BOUND && r < GAUSSIAN_TAIL[mag as usize] {
            mag += 1;
        }
        let want = if s & 1 == 1 { -mag } else { mag };
        assert_eq!(x, want, "sample {i}");
    }
}

#[test]
fn gaussian_statistics() {
    let n = 1_000_000usize;
    let g = Sampler::from_seed(&test_seed(61), Purpose::Error, 0).gaussian(n);
    let p = gaussian_masses();
    let var_exact: f64 =
        (-GAUSSIAN_BOUND..=GAUSSIAN_BOUND).map(|x| f64::from(x * x) * p[(x + GAUSSIAN_BOUND) as usize]).sum();
    // The tail cut and discreteness change the variance by far less than 1e-6.
    assert!((var_exact - SIGMA * SIGMA).abs() < 1e-6, "{var_exact}");

    assert!(g.iter().all(|x| x.abs() <= GAUSSIAN_BOUND));
    let nf = n as f64;
    let mean = g.iter().map(|&x| f64::from(x)).sum::<f64>() / nf;
    let var = g.iter().map(|&x| f64::from(x * x)).sum::<f64>() / nf - mean * mean;
    // sd of the mean: sigma / sqrt(n) = 0.0032; of the variance: ~sigma^2 sqrt(2/n) = 0.0144.
    assert!(mean.abs() < 5.0 * 0.0032, "mean {mean}");
    assert!((var - var_exact).abs() < 5.0 * 0.0144, "variance {var}");

    for x in [-2, -1, 0, 1, 2] {
        let count = g.iter().filter(|&&y| y == x).count() as f64;
        let pe = p[(x + GAUSSIAN_BOUND) as usize];
        let sd = (nf * pe * (1.0 - pe)).sqrt();
        assert!((count - nf * pe).abs() < 5.0 * sd, "x = {x}: {count} vs {}", nf * pe);
    }
    // Symmetry of the tails.
    let pos = g.iter().filter(|&&y| y > 0).count() as f64;
    let neg = g.iter().filter(|&&y| y < 0).count() as f64;
    assert!((pos - neg).abs() < 5.0 * (pos + neg).sqrt());
}

#[test]
fn fill_bytes_and_next_seed_follow_the_stream() {
    let seed = test_seed(71);
    let mut a = Sampler::from_seed(&seed, Purpose::SeedDerivation, 2);
    let mut b = Sampler::from_seed(&seed, Purpose::SeedDerivation, 2);
    let s1 = a.next_seed();
    let s2 = a.next_seed();
    let mut bytes = [0u8; 64];
    b.fill_bytes(&mut bytes);
    assert_eq!(s1[..], bytes[..32]);
    assert_eq!(s2[..], bytes[32..]);
    assert_ne!(s1, s2);
    let stream = 0x87u64 << 56 | 2;
    let twin: Vec<u8> = chacha20_block(&seed, stream, 0).iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(bytes[..], twin[..]);
}

#[test]
fn fresh_seeds_differ() {
    let a = fresh_seed().unwrap();
    let b = fresh_seed().unwrap();
    assert_ne!(a, b);
    let mut s = Sampler::fresh().unwrap();
    let t = s.ternary(64);
    assert!(t.iter().all(|x| (-1..=1).contains(x)));
    assert_eq!(format!("{s:?}"), "Sampler { .. }");
}

// ---- generator 2: ChaCha12, masked rejection ----------------------------------------

/// Moduli for the rejection sampler: tiny (rejection 1/2 and 1/4), just above a power of two
/// (rejection close to 1/2, so fallbacks are frequent), NTT primes just below one, the largest.
const REJECT_MODULI: [u32; 10] = [2, 3, 5, 17, 65_537, 12_289, 786_433, (1 << 29) + 11, 1_073_479_681, (1 << 30) - 35];

/// Residue `j` straight from the definition in the module docs: the first candidate below `q`,
/// candidate `t` being word `j mod 16` of block `2^32 t + j / 16`, masked.
fn definition_residue(seed: &Seed, stream: u64, q: u32, j: usize) -> u32 {
    // 2^ceil(log2 q) - 1, computed independently of candidate_mask.
    let mut range = 1u64;
    while range < u64::from(q) {
        range <<= 1;
    }
    let mask = (range - 1) as u32;
    for t in 0u64.. {
        let v = chacha12_block(seed, stream, t << 32 | (j / 16) as u64)[j % 16] & mask;
        if v < q {
            return v;
        }
    }
    unreachable!()
}

#[test]
fn candidate_mask_is_the_bit_length_mask() {
    for (q, mask) in
        [(2u32, 1u32), (3, 3), (4, 3), (5, 7), (17, 31), (65_537, 0x1_ffff), ((1 << 30) - 35, (1 << 30) - 1)]
    {
        assert_eq!(candidate_mask(q), mask, "q {q}");
        assert_eq!(rejection_probability(q), 1.0 - f64::from(q) / (f64::from(mask) + 1.0));
    }
    assert_eq!(candidate_mask(u32::MAX), u32::MAX);
    assert_eq!(candidate_mask(1 << 31), u32::MAX >> 1);
    assert_eq!(candidate_mask((1 << 31) + 1), u32::MAX);
    assert_eq!(rejection_probability(1 << 20), 0.0);
    for q in 2u32..2000 {
        assert!(rejection_probability(q) < 0.5, "q {q}");
    }
}

#[test]
fn chacha12_twin_matches_rand_chacha() {
    let streams = [0u64, 1, 0xffff_ffff, 1 << 32, 2 << 56, u64::MAX, 0x0503_0201_1234_5678];
    let blocks = [0u64, 1, 15, 16, 1000, 0xffff_ffff, 1 << 32, (1 << 32) + 7, 5 << 32, u64::MAX];
    for (si, &stream) in streams.iter().enumerate() {
        let seed = test_seed(si as u64 + 40);
        for &b in &blocks {
            for offset in [0u128, 9] {
                let pos = u128::from(b) * 16 + offset;
                let mut rng = rand_chacha::ChaCha12Rng::from_seed(seed);
                rng.set_stream(stream);
                rng.set_word_pos(pos);
                for k in 0..40u128 {
                    let p = (pos + k) % (1u128 << 68);
                    assert_eq!(rng.next_u32(), twin12_word(&seed, stream, p), "stream {stream:#x} word {p}");
                }
            }
        }
    }
    // ChaCha12 is not ChaCha20 with another name.
    assert_ne!(chacha12_block(&[0; 32], 0, 0), chacha20_block(&[0; 32], 0, 0));
}

#[test]
fn uniform_limb_matches_definition_at_every_level() {
    let lengths = [0usize, 1, 3, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1001, 4096 + 5];
    let purposes = [Purpose::KeySwitchA, Purpose::CiphertextA, Purpose::PublicKeyA];
    let mut fallbacks = 0usize;
    for (mi, &q) in REJECT_MODULI.iter().enumerate() {
        let m = Modulus::new(u64::from(q)).unwrap();
        let seed = test_seed(600 + mi as u64);
        let purpose = purposes[mi % purposes.len()];
        let index = [0u32, 7, MAX_STREAM_INDEX - 1][mi % 3];
        let stream = stream_id(purpose, index, q).unwrap();
        let n = 4096 + 5;
        let mut want = vec![u32::MAX; n];
        uniform_limb_reference(&seed, purpose, index, &m, &mut want).unwrap();
        for (j, &w) in want.iter().enumerate() {
            assert_eq!(w, definition_residue(&seed, stream, q, j), "q {q} j {j}");
            fallbacks += usize::from(twin12_word(&seed, stream, j as u128) & candidate_mask(q) >= q);
        }
        for level in SimdLevel::ALL {
            for &len in &lengths {
                let mut got = vec![u32::MAX; len];
                uniform_limb_at(level, &seed, purpose, index, &m, &mut got).unwrap();
                assert_eq!(got[..], want[..len], "q {q} level {level:?} n {len}");
            }
        }
        let mut got = vec![u32::MAX; n];
        uniform_limb(&seed, purpose, index, &m, &mut got).unwrap();
        assert_eq!(got, want, "q {q}");
        let mut got = vec![u32::MAX; n];
        uniform_limb_with(Generator::ChaCha12Reject, &seed, purpose, index, &m, &mut got).unwrap();
        assert_eq!(got, want, "q {q}");
    }
    // The moduli above a power of two reject about half their candidates: the fallback path
    // was exercised thousands of times.
    assert!(fallbacks > 4000, "{fallbacks}");
}

#[test]
fn wide_states_match_twin_across_counter_words() {
    let seed = test_seed(78);
    let stream = stream_id(Purpose::KeySwitchA, 3, 65_537).unwrap();
    let key = key_words(&seed);
    for first in [0u64, 5, (1 << 32) - 9, (1 << 32) - 1, u64::MAX - 10] {
        let x16 = wide::wide_states::<16>(&key, stream, first, UNIFORM_DOUBLE_ROUNDS);
        let x4 = wide::wide_states::<4>(&key, stream, first, UNIFORM_DOUBLE_ROUNDS);
        #[cfg(target_arch = "x86_64")]
        let x8 = pulp::x86::V3::try_new().map(|s| wide::avx2::states8(s, &key, stream, first, UNIFORM_DOUBLE_ROUNDS));
        for l in 0..16 {
            let block = chacha12_block(&seed, stream, first.wrapping_add(l as u64));
            for w in 0..16 {
                assert_eq!(x16[w][l], block[w], "first {first} l {l} w {w}");
                if l < 4 {
                    assert_eq!(x4[w][l], block[w]);
                }
                #[cfg(target_arch = "x86_64")]
                if let (Some(x), true) = (&x8, l < 8) {
                    assert_eq!(x[w][l], block[w]);
                }
            }
        }
    }
}

#[test]
fn uniform_residue_matches_limb_and_definition() {
    for (mi, &q) in REJECT_MODULI.iter().enumerate() {
        let seed = test_seed(700 + mi as u64);
        let m = Modulus::new(u64::from(q)).unwrap();
        let n = 4096;
        let mut out = vec![0u32; n];
        uniform_limb(&seed, Purpose::CiphertextA, mi as u32, &m, &mut out).unwrap();
        let mut js: Vec<usize> = (0..40).chain(n - 40..n).collect();
        let mut st = 5u64;
        js.extend((0..200).map(|_| (splitmix(&mut st) % n as u64) as usize));
        for j in js {
            assert_eq!(uniform_residue(&seed, Purpose::CiphertextA, mi as u32, &m, j).unwrap(), out[j], "q {q} j {j}");
        }
        // Far positions, up to the last residue a limb may have.
        let stream = stream_id(Purpose::PublicKeyA, 5, q).unwrap();
        for j in [1usize << 20, (1 << 32) + 3, (1 << 36) - 1] {
            assert_eq!(
                uniform_residue(&seed, Purpose::PublicKeyA, 5, &m, j).unwrap(),
                definition_residue(&seed, stream, q, j),
                "q {q} j {j}"
            );
        }
        assert!(matches!(
            uniform_residue(&seed, Purpose::PublicKeyA, 5, &m, 1 << 36),
            Err(Error::CountTooLarge { what: "uniform limb residues", .. })
        ));
    }
}

#[test]
fn small_moduli_pass_chi_square_and_unmasked_words_would_not() {
    // One bucket per value. Bounds: the chi-square quantile at 1 - 1e-6 for q - 1 degrees of
    // freedom (27.6, 33.4, 51.2 for 2, 4, 16), rounded up.
    for (q, bound) in [(3u32, 28.0), (5, 34.0), (17, 52.0)] {
        let m = Modulus::new(u64::from(q)).unwrap();
        let mut out = vec![0u32; 1 << 16];
        uniform_limb(&test_seed(31), Purpose::CiphertextA, 2, &m, &mut out).unwrap();
        let stat = chi_square(&out, q, u64::from(q));
        assert!(stat < bound, "q {q}: chi-square {stat}");
        // Negative control: the masked words reduced mod q instead of rejected are biased.
        let stream = stream_id(Purpose::CiphertextA, 2, q).unwrap();
        let folded: Vec<u32> =
            (0..1u128 << 16).map(|j| (twin12_word(&test_seed(31), stream, j) & candidate_mask(q)) % q).collect();
        assert!(chi_square(&folded, q, u64::from(q)) > bound, "q {q}");
    }
}

#[test]
fn generator_ids_round_trip() {
    for g in [Generator::ChaCha20Reduce, Generator::ChaCha12Reject] {
        assert_eq!(Generator::from_id(g.id()).unwrap(), g);
    }
    assert_eq!(Generator::CURRENT.id(), 2);
    for id in [0u8, 3, 255] {
        assert!(matches!(Generator::from_id(id), Err(Error::UnknownGenerator { id: i }) if i == id));
    }
    // uniform_limb_with selects the old generator for id 1.
    let m = Modulus::new(12_289).unwrap();
    let (mut a, mut b) = (vec![0u32; 64], vec![0u32; 64]);
    uniform_limb_with(Generator::ChaCha20Reduce, &test_seed(3), Purpose::CiphertextA, 0, &m, &mut a).unwrap();
    legacy::uniform_limb(&test_seed(3), Purpose::CiphertextA, 0, &m, &mut b).unwrap();
    assert_eq!(a, b);
    uniform_limb(&test_seed(3), Purpose::CiphertextA, 0, &m, &mut b).unwrap();
    assert_ne!(a, b);
}
