//! Seeded pseudo-random sampling: uniform residues, ternary secrets, discrete Gaussian errors.
//!
//! # Generator
//!
//! Everything is drawn from ChaCha20 in D. J. Bernstein's original layout (20 rounds, 64-bit
//! block counter, 64-bit nonce), as [`rand_chacha::ChaCha20Rng`] implements it, keyed by a
//! 256-bit [`Seed`]. The 64-bit nonce is a *stream id* derived from what the stream is for
//! ([`Purpose`]), which object it belongs to (an index) and, for uniform residues, the limb
//! modulus ([`stream_id`]). Any word of any stream can therefore be produced on its own, which
//! is what lets a GPU kernel regenerate one residue of one limb without the others.
//!
//! ## Exact mapping (the WGSL twin must reproduce it bit for bit)
//!
//! The ChaCha20 input block is sixteen `u32` words:
//!
//! ```text
//! word  0..4  : 0x61707865 0x3320646e 0x79622d32 0x6b206574   ("expand 32-byte k")
//! word  4..12 : key word i = u32::from_le_bytes(seed[4i..4i+4]), i = 0..8
//! word 12     : block counter, low 32 bits
//! word 13     : block counter, high 32 bits
//! word 14     : stream id, low 32 bits
//! word 15     : stream id, high 32 bits
//! ```
//!
//! The block function applies ten double rounds (a column round on `(0,4,8,12)`,
//! `(1,5,9,13)`, `(2,6,10,14)`, `(3,7,11,15)`, then a diagonal round on `(0,5,10,15)`,
//! `(1,6,11,12)`, `(2,7,8,13)`, `(3,4,9,14)`; quarter round rotations 16, 12, 8, 7) and adds
//! the input block word by word (wrapping). Output word `i` of block `b` is stream word
//! `16 b + i`; [`rand_chacha::ChaCha20Rng::next_u32`] returns the stream words in that order
//! starting at word position 0, `set_stream` sets words 14 and 15 and `set_word_pos(p)` seeks
//! to stream word `p`. [`chacha20_block`] is the CPU twin of the shader function, written from
//! this description; the tests check it against `rand_chacha` and the published all-zero
//! test vector.
//!
//! ## Uniform residues
//!
//! Residue `j` of a limb with modulus `q` is
//! `(w[4j] + w[4j+1] * 2^32 + w[4j+2] * 2^64 + w[4j+3] * 2^96) mod q`, where `w` is the stream
//! [`stream_id`]`(purpose, index, q)`. So block `j / 4` holds residues `4(j/4) .. 4(j/4)+3`,
//! residue `j` taking words `4 (j mod 4) .. 4 (j mod 4) + 3` of it. Reducing a 128-bit value
//! puts every residue within statistical distance `(2^128 mod q) / 2^128 < q / 2^128 < 2^-98`
//! of uniform, so a whole key (fewer than `2^34` residues) stays below `2^-64`. The residues
//! are used directly as `Eval`-domain values.
//!
//! On the host, [`uniform_limb`] computes whole limbs with a wide generator (sixteen blocks
//! per batch, one per vector lane, at AVX-512) and a reduction by the constants
//! `2^(32 i) mod q` ([`uniform_limb_at`]); [`uniform_limb_reference`] keeps the plain path
//! (`rand_chacha` and [`uniform_from_words_u32`], the shader's reduction), and the tests check
//! that both write the same residues at every SIMD level.
//!
//! ## Host-side samplers
//!
//! [`Sampler`] draws secrets and errors on the host from the stream
//! `(0x80 | purpose) << 56 | index` of its seed: the set high bit keeps these streams apart
//! from every [`stream_id`] (whose top byte is a [`Purpose`] tag below `0x80`), and the index
//! may use all 32 bits.

use std::fmt;

use rand::rngs::OsRng;
use rand::TryRngCore;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::error::{Error, Result};
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

mod wide;
#[cfg(target_arch = "x86_64")]
use wide::avx2;
#[cfg(test)]
use wide::wide_residues;
use wide::{key_words, FastReducer, StreamOp, WideJob, WideOp};

/// Length of a seed in bytes (a ChaCha20 key).
pub const SEED_BYTES: usize = 32;

/// A 256-bit seed: the ChaCha20 key of every stream derived from it.
pub type Seed = [u8; SEED_BYTES];

/// Standard deviation of the discrete Gaussian error distribution: the one width the sampler
/// draws, the width the 2024 security table assumes, and the `sigma` of every parameter set.
pub const SIGMA: f64 = 3.19;

/// Tail cut of the discrete Gaussian: every sample lies in `[-GAUSSIAN_BOUND, GAUSSIAN_BOUND]`
/// (`19 <= 6 * SIGMA`).
pub const GAUSSIAN_BOUND: i32 = 19;

/// Number of object indices a [`stream_id`] can tell apart (`2^24`).
pub const MAX_STREAM_INDEX: u32 = 1 << 24;

/// What a stream is for. The tag (the discriminant, stable across versions) is the top byte
/// of the stream id, so streams of different purposes never coincide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Purpose {
    /// The uniform `a` part of a (seeded) ciphertext. Tag 1.
    CiphertextA = 1,
    /// The uniform `a` part of a public key. Tag 2.
    PublicKeyA = 2,
    /// The uniform `a` parts of key-switching keys (relinearisation, Galois). Tag 3.
    KeySwitchA = 3,
    /// Secret key coefficients. Tag 4.
    Secret = 4,
    /// Error (noise) coefficients. Tag 5.
    Error = 5,
    /// Ephemeral encryption randomness (the `u` of public-key encryption). Tag 6.
    Ephemeral = 6,
    /// Derivation of further seeds. Tag 7.
    SeedDerivation = 7,
}

impl Purpose {
    /// The stable tag of this purpose (`1..=7`).
    #[inline]
    #[must_use]
    pub const fn tag(self) -> u8 {
        self as u8
    }
}

/// The ChaCha20 stream id (nonce) of limb `q` of object `index` for `purpose`:
///
/// ```text
/// stream id = (purpose tag as u64) << 56 | (index as u64) << 32 | q as u64
/// ```
///
/// so bits 56..64 hold the purpose tag, bits 32..56 the index and bits 0..32 the modulus.
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24` ([`MAX_STREAM_INDEX`]).
pub fn stream_id(purpose: Purpose, index: u32, q: u32) -> Result<u64> {
    if index >= MAX_STREAM_INDEX {
        return Err(Error::CountTooLarge {
            what: "stream object index",
            found: u64::from(index),
            limit: u64::from(MAX_STREAM_INDEX - 1),
        });
    }
    Ok(u64::from(purpose.tag()) << 56 | u64::from(index) << 32 | u64::from(q))
}

/// The stream id of a host-side [`Sampler`]: `(0x80 | purpose tag) << 56 | index`. Never equal
/// to a [`stream_id`], whose top byte is below `0x80`.
fn sampler_stream_id(purpose: Purpose, index: u32) -> u64 {
    u64::from(0x80 | purpose.tag()) << 56 | u64::from(index)
}

/// The ChaCha20 constants `"expand 32-byte k"` as little-endian words.
const CHACHA_CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// One ChaCha20 quarter round on words `a, b, c, d` of `x`.
#[inline(always)]
#[expect(clippy::indexing_slicing, reason = "called only with constant indices below 16 on a 16-word array")]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// The ChaCha20 block `block` of stream `stream` under key `seed`: stream words
/// `16 * block .. 16 * block + 16`, laid out as described in the [module docs](self).
///
/// This is the CPU twin of the shader block function (plain `u32` operations only); the
/// host paths use `rand_chacha` or the wide generator of [`uniform_limb_at`], and the tests
/// check all of them agree.
#[must_use]
pub fn chacha20_block(seed: &Seed, stream: u64, block: u64) -> [u32; 16] {
    let mut input = [0u32; 16];
    let [c0, c1, c2, c3] = CHACHA_CONSTANTS;
    let [k0, k1, k2, k3, k4, k5, k6, k7] = key_words(seed);
    let words = [
        c0,
        c1,
        c2,
        c3,
        k0,
        k1,
        k2,
        k3,
        k4,
        k5,
        k6,
        k7,
        block as u32,
        (block >> 32) as u32,
        stream as u32,
        (stream >> 32) as u32,
    ];
    input.copy_from_slice(&words);
    let mut x = input;
    for _ in 0..10 {
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    for (o, i) in x.iter_mut().zip(input) {
        *o = o.wrapping_add(i);
    }
    x
}

/// Reduces the 128-bit value `w[0] + w[1] * 2^32 + w[2] * 2^64 + w[3] * 2^96` mod `q`
/// (host form, native `u128` arithmetic); output in `[0, q)`.
#[inline]
#[must_use]
pub fn uniform_from_words(w: [u32; 4], m: &Modulus) -> u32 {
    let [w0, w1, w2, w3] = w.map(u128::from);
    m.reduce_u128(w0 | w1 << 32 | w2 << 64 | w3 << 96)
}

/// Per-modulus constants of the `u32`-only reduction of four words.
#[derive(Debug, Clone, Copy)]
struct WordReducer {
    m: Modulus,
    /// `2^32 mod q`.
    radix: u32,
    /// Shoup constant of `radix`.
    radix_shoup: u32,
}

impl WordReducer {
    fn new(m: &Modulus) -> Self {
        // 2^32 mod q = ((2^32 - 1) mod q + 1) mod q; 1 < q since q >= 2.
        let radix = m.add(m.reduce_u32(u32::MAX), 1);
        Self { m: *m, radix, radix_shoup: m.shoup(radix) }
    }

    /// Horner evaluation from the top word: `r = (r * 2^32 + w_i) mod q`, with `r * 2^32`
    /// as a Shoup product by `2^32 mod q` and `w_i mod q` by Barrett. Output in `[0, q)`.
    #[inline]
    fn reduce(&self, w: [u32; 4]) -> u32 {
        let m = &self.m;
        let [w0, w1, w2, w3] = w;
        let mut r = m.reduce_u32(w3);
        for wi in [w2, w1, w0] {
            r = m.add(m.mul_shoup(r, self.radix, self.radix_shoup), m.reduce_u32(wi));
        }
        r
    }
}

/// The same reduction as [`uniform_from_words`], computed with `u32` operations only, as the
/// shader does it: Horner's rule from the top word, `r <- (r * 2^32 + w_i) mod q`, where
/// `r * 2^32 mod q` is a Shoup product by the constant `2^32 mod q` and `w_i mod q` a Barrett
/// reduction (both from [`crate::math::zq`]). The kernel receives `2^32 mod q` and its Shoup
/// constant as uploaded per-limb constants. Output in `[0, q)`.
#[inline]
#[must_use]
pub fn uniform_from_words_u32(w: [u32; 4], m: &Modulus) -> u32 {
    WordReducer::new(m).reduce(w)
}

/// A ChaCha20 generator on the uniform stream of one limb, at word position 0.
fn limb_rng(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus) -> Result<ChaCha20Rng> {
    let id = stream_id(purpose, index, m.value())?;
    let mut rng = ChaCha20Rng::from_seed(*seed);
    rng.set_stream(id);
    Ok(rng)
}

/// Fills `out` with residues `0 .. out.len()` of the uniform limb
/// `(seed, purpose, index, q)`, each in `[0, q)` (see the [module docs](self) for the exact
/// stream layout). `out` normally has length `N`; any length is accepted.
///
/// Runs the wide generator of [`uniform_limb_at`] at [`SimdLevel::active`]; every level
/// writes exactly what [`uniform_limb_reference`] writes.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24`.
pub fn uniform_limb(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, out: &mut [u32]) -> Result<()> {
    uniform_limb_at(SimdLevel::active(), seed, purpose, index, m, out)
}

/// [`uniform_limb`] at a given SIMD level (clamped to what the CPU has, see
/// [`SimdLevel::clamp`]); every level writes the same residues. For tests and benchmarks.
///
/// At AVX-512 the generator computes 16 ChaCha20 blocks at once, one block per 32-bit lane:
/// the sixteen state words are sixteen arrays of 16 lanes, lane `l` holding block `b + l`, so
/// the rounds are plain lane-wise `u32` operations that the compiler vectorises (one `zmm`
/// register per state word, rotations as `vprold`) under `pulp`'s run-time dispatch. Residue
/// `4 (b + l) + k` takes words `4k .. 4k + 3` of lane `l` (the [module docs](self)' layout),
/// reduced lane-wise by `FastReducer` (four lazy Shoup products and branch-free conditional
/// subtractions, exact: see its docs); no transposition is needed. At AVX2 the same scheme
/// runs on 8 lanes with explicit intrinsics (the compiler leaves the portable rounds scalar
/// there); without AVX2 the words come from `rand_chacha`, 1 KiB at a time, and only the
/// reduction is the fast one.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24`.
pub fn uniform_limb_at(
    level: SimdLevel,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    m: &Modulus,
    out: &mut [u32],
) -> Result<()> {
    let stream = stream_id(purpose, index, m.value())?;
    let red = FastReducer::new(m);
    #[cfg(target_arch = "x86_64")]
    {
        let level = level.clamp();
        if level >= SimdLevel::Avx512 {
            if let Some(s) = pulp::x86::V4::try_new() {
                s.vectorize(WideOp::<16>(WideJob { key: key_words(seed), stream, red, out }));
                return Ok(());
            }
        }
        if level >= SimdLevel::Avx2 {
            if let Some(s) = pulp::x86::V3::try_new() {
                s.vectorize(avx2::Op { s, job: WideJob { key: key_words(seed), stream, red, out } });
                return Ok(());
            }
        }
    }
    let _ = level;
    pulp::NullaryFnOnce::call(StreamOp { seed, stream, red, out });
    Ok(())
}

/// The residues [`uniform_limb`] writes, computed the reference way: `rand_chacha`'s stream,
/// 64 bytes at a time, each residue reduced by [`uniform_from_words_u32`]'s `u32`-only Horner
/// steps (the shader's reduction). Kept as the documented reference that the tests compare
/// the wide generator with, and as the baseline of the sampling benchmark.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24`.
pub fn uniform_limb_reference(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, out: &mut [u32]) -> Result<()> {
    let mut rng = limb_rng(seed, purpose, index, m)?;
    let red = WordReducer::new(m);
    // One block at a time: 64 bytes = 16 words = 4 residues. Words past the end of `out`
    // are drawn and dropped; the generator is private to this call.
    let mut bytes = [0u8; 64];
    for chunk in out.chunks_mut(4) {
        rng.fill_bytes(&mut bytes);
        for (o, b) in chunk.iter_mut().zip(bytes.chunks_exact(16)) {
            let mut w = [0u32; 4];
            for (wi, bi) in w.iter_mut().zip(b.chunks_exact(4)) {
                let mut le = [0u8; 4];
                le.copy_from_slice(bi);
                *wi = u32::from_le_bytes(le);
            }
            *o = red.reduce(w);
        }
    }
    Ok(())
}

/// Residue `j` of the uniform limb `(seed, purpose, index, q)`, in `[0, q)`, computed without
/// generating the others (the generator seeks to stream word `4 j`). Equal to element `j` of
/// what [`uniform_limb`] writes for any output length above `j`.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24`.
pub fn uniform_residue(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, j: usize) -> Result<u32> {
    let mut rng = limb_rng(seed, purpose, index, m)?;
    rng.set_word_pos(4 * j as u128);
    let w = [rng.next_u32(), rng.next_u32(), rng.next_u32(), rng.next_u32()];
    Ok(uniform_from_words_u32(w, m))
}

/// A fresh seed from the operating system's random generator.
///
/// Errors with [`Error::Randomness`] if the operating system cannot provide randomness.
pub fn fresh_seed() -> Result<Seed> {
    let mut seed = [0u8; SEED_BYTES];
    OsRng.try_fill_bytes(&mut seed).map_err(|e| Error::Randomness { reason: e.to_string() })?;
    Ok(seed)
}

/// `2^64 * P(|x| > i)` for `i = 0 .. 19`, rounded to nearest, for the discrete Gaussian
/// `P(x) ~ exp(-x^2 / (2 SIGMA^2))` on `[-19, 19]` (normalised over that range), so that
/// `P(|x| = 0) = rho(0) / S` and `P(|x| = k) = 2 rho(k) / S` for `k >= 1` (a sign is applied
/// afterwards, and a "negative zero" is zero, so each signed value gets mass `rho(x) / S`).
///
/// This is the complement of the cumulative distribution table of `|x|`: with `r` uniform in
/// `[0, 2^64)`, `|x| = #{i : r < TAIL[i]}` gives `P(|x| > i) = TAIL[i] / 2^64`. Computed with
/// 60-digit decimal arithmetic (`exp` of `-k^2 / (2 * 3.19^2)`), so each entry is exact to
/// within rounding; the tests recompute it in `f64`.
const GAUSSIAN_TAIL: [u64; GAUSSIAN_BOUND as usize] = [
    0xdffc_0cbc_2708_b5df,
    0xa306_1820_a1e3_4c8b,
    0x6e6b_02f2_42e9_9ca5,
    0x4545_5d0e_401b_aaac,
    0x2819_54cc_4bdc_bfe8,
    0x155a_46db_b15d_c5fb,
    0x0a6e_fbf1_c7b1_7b2f,
    0x04ab_34cf_d19d_5d7b,
    0x01e8_fdd2_f4f9_52f0,
    0x00b6_ac03_aaa8_497e,
    0x003e_3ded_7062_b9c2,
    0x0013_537d_6388_5550,
    0x0005_76db_323d_0088,
    0x0001_67ec_5bcb_7a89,
    0x0000_5439_4862_5595,
    0x0000_11e8_d86d_94eb,
    0x0000_0373_ac6e_c7d4,
    0x0000_0098_466b_91cb,
    0x0000_0015_44e6_93cd,
];

/// Deterministic host-side sampler for secrets, errors and derived seeds: ChaCha20 keyed by a
/// seed, on the stream `(0x80 | purpose) << 56 | index` (see the [module docs](self)).
///
/// Its `Debug` output does not show the generator state.
pub struct Sampler {
    rng: ChaCha20Rng,
}

impl fmt::Debug for Sampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampler").finish_non_exhaustive()
    }
}

impl Sampler {
    /// The sampler of stream `(0x80 | purpose) << 56 | index` under `seed`, at word 0.
    #[must_use]
    pub fn from_seed(seed: &Seed, purpose: Purpose, index: u32) -> Self {
        let mut rng = ChaCha20Rng::from_seed(*seed);
        rng.set_stream(sampler_stream_id(purpose, index));
        Self { rng }
    }

    /// A sampler keyed by a fresh operating-system seed ([`fresh_seed`]), on the
    /// [`Purpose::Ephemeral`] stream with index 0.
    ///
    /// Errors with [`Error::Randomness`] if the operating system cannot provide randomness.
    pub fn fresh() -> Result<Self> {
        Ok(Self::from_seed(&fresh_seed()?, Purpose::Ephemeral, 0))
    }

    /// `n` values uniform over `{-1, 0, 1}`: each draws one word `r` and returns
    /// `((r as u64 * 3) >> 32) - 1`. Since `2^32 = 3 * 1431655765 + 1`, the value `-1`
    /// (from `r < 1431655766`) has one more preimage than `0` and `1`: every probability is
    /// within `2^-32` of `1/3`. Branch-free.
    #[must_use]
    pub fn ternary(&mut self, n: usize) -> Vec<i8> {
        (0..n)
            .map(|_| {
                let r = u64::from(self.rng.next_u32());
                ((r * 3) >> 32) as i8 - 1
            })
            .collect()
    }

    /// `n` samples of the discrete Gaussian with standard deviation [`SIGMA`]
    /// (`P(x) ~ exp(-x^2 / (2 SIGMA^2))`) cut at `|x| <= GAUSSIAN_BOUND` and renormalised.
    ///
    /// Each sample draws a 64-bit `r` (two words, low word first) and one word `s`: the
    /// magnitude is the number of tail-table entries above `r`, counted over the whole table
    /// (no early exit, no secret-indexed lookup), and the sign is bit 0 of `s`, applied with a
    /// mask. Table rounding moves each probability by at most `2^-64`.
    #[must_use]
    pub fn gaussian(&mut self, n: usize) -> Vec<i32> {
        (0..n)
            .map(|_| {
                let r = self.rng.next_u64();
                let s = self.rng.next_u32();
                let mag = GAUSSIAN_TAIL.iter().fold(0i32, |acc, &t| acc + i32::from(r < t));
                let mask = -((s & 1) as i32);
                (mag ^ mask) - mask
            })
            .collect()
    }

    /// Fills `out` with the next bytes of the stream.
    pub fn fill_bytes(&mut self, out: &mut [u8]) {
        self.rng.fill_bytes(out);
    }

    /// The next [`SEED_BYTES`] bytes of the stream, as a seed.
    #[must_use]
    pub fn next_seed(&mut self) -> Seed {
        let mut seed = [0u8; SEED_BYTES];
        self.rng.fill_bytes(&mut seed);
        seed
    }
}

#[cfg(test)]
mod tests;
