use super::*;
use num_bigint::BigUint;
use proptest::prelude::*;
use rand_chacha::rand_core::{RngCore, SeedableRng};

/// SplitMix64, an independent generator for test inputs.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn test_seed(tag: u64) -> Seed {
    let mut st = tag;
    let mut s = [0u8; 32];
    for c in s.chunks_exact_mut(8) {
        c.copy_from_slice(&splitmix(&mut st).to_le_bytes());
    }
    s
}

/// Stream word `pos` of `(seed, stream)` from the twin block function.
fn twin_word(seed: &Seed, stream: u64, pos: u128) -> u32 {
    chacha20_block(seed, stream, (pos / 16) as u64)[(pos % 16) as usize]
}

/// Residue `j` of a limb, from the twin block function and big-integer reduction.
fn reference_residue(seed: &Seed, stream: u64, q: u32, j: usize) -> u32 {
    let block = chacha20_block(seed, stream, (j / 4) as u64);
    let words = &block[4 * (j % 4)..4 * (j % 4) + 4];
    let mut v = BigUint::from(0u32);
    for &w in words.iter().rev() {
        v = (v << 32u32) + BigUint::from(w);
    }
    u32::try_from(v % BigUint::from(q)).unwrap()
}

const MODULI: [u32; 5] = [2, 12_289, 786_433, (1 << 29) + 11, (1 << 30) - 35];

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
fn uniform_limb_matches_reference() {
    let cases = [
        (Purpose::CiphertextA, 0u32, MODULI[4], 64usize),
        (Purpose::PublicKeyA, 3, MODULI[3], 37),
        (Purpose::KeySwitchA, MAX_STREAM_INDEX - 1, MODULI[2], 16),
        (Purpose::CiphertextA, 9, MODULI[1], 5),
        (Purpose::Ephemeral, 1, MODULI[0], 9),
    ];
    for (ci, &(purpose, index, q, n)) in cases.iter().enumerate() {
        let seed = test_seed(1000 + ci as u64);
        let m = Modulus::new(u64::from(q)).unwrap();
        let mut out = vec![u32::MAX; n];
        uniform_limb(&seed, purpose, index, &m, &mut out).unwrap();
        let stream = u64::from(purpose.tag()) << 56 | u64::from(index) << 32 | u64::from(q);
        for (j, &r) in out.iter().enumerate() {
            assert_eq!(r, reference_residue(&seed, stream, q, j), "case {ci} j {j}");
        }
    }
}

#[test]
fn uniform_residue_matches_limb() {
    let seed = test_seed(7);
    for (mi, &q) in MODULI.iter().enumerate() {
        let m = Modulus::new(u64::from(q)).unwrap();
        let n = 4096;
        let mut out = vec![0u32; n];
        uniform_limb(&seed, Purpose::CiphertextA, mi as u32, &m, &mut out).unwrap();
        assert!(out.iter().all(|&r| r < q));
        let mut js: Vec<usize> = (0..40).chain(n - 40..n).collect();
        let mut st = 5u64;
        js.extend((0..200).map(|_| (splitmix(&mut st) % n as u64) as usize));
        for j in js {
            let r = uniform_residue(&seed, Purpose::CiphertextA, mi as u32, &m, j).unwrap();
            assert_eq!(r, out[j], "q {q} j {j}");
        }
        // A shorter (odd) length yields a prefix of the same limb.
        let mut short = vec![0u32; 1001];
        uniform_limb(&seed, Purpose::CiphertextA, mi as u32, &m, &mut short).unwrap();
        assert_eq!(short[..], out[..1001]);
    }
    // Far positions agree with the reference too.
    let m = Modulus::new(u64::from(MODULI[4])).unwrap();
    let stream = stream_id(Purpose::PublicKeyA, 5, MODULI[4]).unwrap();
    for j in [1usize << 20, (1 << 34) + 3, usize::MAX / 8] {
        assert_eq!(
            uniform_residue(&seed, Purpose::PublicKeyA, 5, &m, j).unwrap(),
            reference_residue(&seed, stream, MODULI[4], j)
        );
    }
}

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
    let same_words: Vec<u32> = (0..64).map(|j| reference_residue(&seed, stream_q, q2, j)).collect();
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

proptest! {
    #[test]
    fn words_u32_form_matches_u128(q in 2u32..(1 << 30), w: [u32; 4]) {
        let m = Modulus::new(u64::from(q)).unwrap();
        let v = u128::from(w[0])
            | u128::from(w[1]) << 32
            | u128::from(w[2]) << 64
            | u128::from(w[3]) << 96;
        let want = (v % u128::from(q)) as u32;
        prop_assert_eq!(uniform_from_words_u32(w, &m), want);
        let big = BigUint::from(w[0])
            + (BigUint::from(w[1]) << 32u32)
            + (BigUint::from(w[2]) << 64u32)
            + (BigUint::from(w[3]) << 96u32);
        let big_want = u32::try_from(big % BigUint::from(q)).unwrap();
        prop_assert_eq!(uniform_from_words(w, &m), big_want);
        prop_assert_eq!(want, big_want);
    }
}

#[test]
fn words_u32_form_edge_values() {
    let edges = [0u32, 1, 2, 0x7fff_ffff, 0x8000_0000, u32::MAX - 1, u32::MAX];
    for &q in &MODULI {
        let m = Modulus::new(u64::from(q)).unwrap();
        for &a in &edges {
            for &b in &edges {
                for w in [[a, b, a, b], [b, a, b, a], [a, a, b, b], [u32::MAX; 4]] {
                    let v = u128::from(w[0]) | u128::from(w[1]) << 32 | u128::from(w[2]) << 64 | u128::from(w[3]) << 96;
                    let want = (v % u128::from(q)) as u32;
                    assert_eq!(uniform_from_words_u32(w, &m), want, "q {q} w {w:?}");
                }
            }
        }
    }
}

// ---- the wide generator against the reference ---------------------------------------

/// Moduli of every class the fast reduction must handle: tiny, 16-bit, Fermat prime,
/// NTT-friendly primes of 14 to 30 bits, the largest 30-bit prime, and powers of two.
const FAST_MODULI: [u32; 12] = [
    2,
    3,
    5,
    1 << 16,
    65_537,
    12_289,
    786_433,
    (1 << 29) + 11,
    1_073_479_681, // 30-bit, = 1 mod 2^15
    1_071_513_601, // 30-bit, = 1 mod 2^15
    (1 << 30) - 35,
    (1 << 30) - 1,
];

fn fast_reduce(w: [u32; 4], m: &Modulus) -> u32 {
    FastReducer::new(m).reduce(w[0], w[1], w[2], w[3])
}

proptest! {
    #[test]
    fn fast_reduction_matches_reference(q in 2u32..(1 << 30), w: [u32; 4]) {
        let m = Modulus::new(u64::from(q)).unwrap();
        prop_assert_eq!(fast_reduce(w, &m), uniform_from_words_u32(w, &m));
        prop_assert_eq!(fast_reduce(w, &m), uniform_from_words(w, &m));
    }
}

#[test]
fn fast_reduction_edge_values() {
    let edges = [0u32, 1, 2, 0x7fff_ffff, 0x8000_0000, u32::MAX - 1, u32::MAX];
    let mut st = 17u64;
    for &q in &FAST_MODULI {
        let m = Modulus::new(u64::from(q)).unwrap();
        let mut words: Vec<[u32; 4]> = Vec::new();
        for &a in &edges {
            for &b in &edges {
                words.extend([[a, b, a, b], [b, a, b, a], [a, a, b, b], [a, b, b, a]]);
            }
        }
        words.extend([[0; 4], [u32::MAX; 4], [q - 1, 0, 0, 0], [q, 0, 0, 0], [0, 0, 0, q - 1]]);
        // Values congruent to q - 1 (and to 0) with the largest possible low word: the
        // top three words random or extreme, w0 the largest word with the wanted residue.
        for hi in [[u32::MAX; 3], [0; 3], [1, 0, 0]].into_iter().chain((0..50).map(|_| {
            let r = splitmix(&mut st);
            [r as u32, (r >> 32) as u32, splitmix(&mut st) as u32]
        })) {
            let v_hi = (u128::from(hi[0]) << 32 | u128::from(hi[1]) << 64 | u128::from(hi[2]) << 96) % u128::from(q);
            for want in [q - 1, 0] {
                // w0 = want - v_hi (mod q), raised by multiples of q as far as u32 allows.
                let base = (u128::from(want) + u128::from(q) - v_hi) % u128::from(q);
                let w0 = base + (u128::from(u32::MAX) - base) / u128::from(q) * u128::from(q);
                let w = [w0 as u32, hi[0], hi[1], hi[2]];
                assert_eq!(uniform_from_words(w, &m), want);
                words.push(w);
            }
        }
        for w in words {
            let v = u128::from(w[0]) | u128::from(w[1]) << 32 | u128::from(w[2]) << 64 | u128::from(w[3]) << 96;
            let want = (v % u128::from(q)) as u32;
            assert_eq!(fast_reduce(w, &m), want, "q {q} w {w:?}");
            assert_eq!(uniform_from_words_u32(w, &m), want, "q {q} w {w:?}");
        }
    }
}

#[test]
fn wide_generator_matches_reference_at_every_level() {
    let lengths = [0usize, 1, 3, 4, 5, 15, 16, 17, 31, 33, 63, 64, 65, 127, 1001, 1 << 10, (1 << 10) + 7];
    let purposes = [Purpose::KeySwitchA, Purpose::CiphertextA, Purpose::PublicKeyA];
    for (mi, &q) in FAST_MODULI.iter().enumerate() {
        let m = Modulus::new(u64::from(q)).unwrap();
        let seed = test_seed(500 + mi as u64);
        let purpose = purposes[mi % purposes.len()];
        let index = [0u32, 7, MAX_STREAM_INDEX - 1][mi % 3];
        let mut want = vec![0u32; (1 << 10) + 7];
        uniform_limb_reference(&seed, purpose, index, &m, &mut want).unwrap();
        // The reference itself against the twin block function and big integers.
        let stream = stream_id(purpose, index, q).unwrap();
        for j in (0..want.len()).step_by(37) {
            assert_eq!(want[j], reference_residue(&seed, stream, q, j), "q {q} j {j}");
        }
        for level in SimdLevel::ALL {
            for &n in &lengths {
                let mut got = vec![u32::MAX; n];
                uniform_limb_at(level, &seed, purpose, index, &m, &mut got).unwrap();
                assert_eq!(got[..], want[..n], "q {q} level {level:?} n {n}");
            }
        }
        let mut got = vec![u32::MAX; 1 << 10];
        uniform_limb(&seed, purpose, index, &m, &mut got).unwrap();
        assert_eq!(got[..], want[..1 << 10], "q {q}");
    }
}

#[test]
fn wide_blocks_match_twin_across_counter_words() {
    // Batches whose blocks cross the low counter word (block 2^32) and the end of the
    // 64-bit counter, against the twin block function and big-integer reduction.
    let seed = test_seed(77);
    let q = FAST_MODULI[8];
    let m = Modulus::new(u64::from(q)).unwrap();
    let red = FastReducer::new(&m);
    let stream = stream_id(Purpose::KeySwitchA, 3, q).unwrap();
    let key = key_words(&seed);
    for first in [0u64, 5, (1 << 32) - 9, (1 << 32) - 1, u64::MAX - 10] {
        let r16 = wide_residues::<16>(&key, stream, first, red);
        let r8 = wide_residues::<8>(&key, stream, first, red);
        let r4 = wide_residues::<4>(&key, stream, first, red);
        #[cfg(target_arch = "x86_64")]
        let r8_avx2 = pulp::x86::V3::try_new().map(|s| avx2::residues8(s, &key, stream, first, red));
        for l in 0..16 {
            let block = chacha20_block(&seed, stream, first.wrapping_add(l as u64));
            for k in 0..4 {
                let w: [u32; 4] = block[4 * k..4 * k + 4].try_into().unwrap();
                let want = uniform_from_words(w, &m);
                assert_eq!(r16[k][l], want, "first {first} l {l} k {k}");
                if l < 8 {
                    assert_eq!(r8[k][l], want);
                    #[cfg(target_arch = "x86_64")]
                    if let Some(r) = &r8_avx2 {
                        assert_eq!(r[k][l], want);
                    }
                }
                if l < 4 {
                    assert_eq!(r4[k][l], want);
                }
            }
        }
    }
}

#[test]
fn uniform_limb_errors_at_every_level() {
    let m = Modulus::new(17).unwrap();
    let seed = test_seed(1);
    let mut out = [0u32; 8];
    for level in SimdLevel::ALL {
        assert!(matches!(
            uniform_limb_at(level, &seed, Purpose::CiphertextA, MAX_STREAM_INDEX, &m, &mut out),
            Err(Error::CountTooLarge { .. })
        ));
    }
    assert!(matches!(
        uniform_limb_reference(&seed, Purpose::CiphertextA, MAX_STREAM_INDEX, &m, &mut out),
        Err(Error::CountTooLarge { .. })
    ));
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
