//! Generator 1 (read only): the ChaCha20 four-word reduction, its wide forms and reference.

use super::super::tests::{splitmix, test_seed, MODULI};
use super::*;
use crate::error::Error;
#[cfg(target_arch = "x86_64")]
use crate::math::sampling::wide::avx2;
use crate::math::sampling::wide::{reduce_batch, wide_states, FastReducer, LEGACY_DOUBLE_ROUNDS};
use crate::math::sampling::{chacha20_block, key_words, stream_id, MAX_STREAM_INDEX};
use num_bigint::BigUint;
use proptest::prelude::*;

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
        let r16 = reduce_batch(red, &wide_states::<16>(&key, stream, first, LEGACY_DOUBLE_ROUNDS));
        let r8 = reduce_batch(red, &wide_states::<8>(&key, stream, first, LEGACY_DOUBLE_ROUNDS));
        let r4 = reduce_batch(red, &wide_states::<4>(&key, stream, first, LEGACY_DOUBLE_ROUNDS));
        #[cfg(target_arch = "x86_64")]
        let r8_avx2 = pulp::x86::V3::try_new()
            .map(|s| reduce_batch(red, &avx2::states8(s, &key, stream, first, LEGACY_DOUBLE_ROUNDS)));
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
