//! Seeded pseudo-random sampling: uniform residues, ternary secrets, discrete Gaussian errors.
//!
//! # Generators
//!
//! Everything is drawn from ChaCha in D. J. Bernstein's original layout (64-bit block counter,
//! 64-bit nonce), as [`rand_chacha`] implements it, keyed by a 256-bit [`Seed`]. The 64-bit
//! nonce is a *stream id* derived from what the stream is for ([`Purpose`]), which object it
//! belongs to (an index) and, for uniform residues, the limb modulus ([`stream_id`]). Any word
//! of any stream can therefore be produced on its own, which is what lets a GPU kernel
//! regenerate one residue of one limb without the others.
//!
//! Uniform residues (the `a` halves of ciphertexts and keys, which seeded objects store as a
//! seed) come from [`Generator::ChaCha12Reject`] (wire generator id 2, format version 3:
//! ChaCha12 words, one per residue, by masked rejection; exactly uniform), on the CPU here and
//! in `shaders/shared/chacha.wgsl` on the GPU, bit-identical. [`Generator::ChaCha20Reduce`]
//! (id 1; ChaCha20, four words per residue reduced mod `q`, see [`legacy`]) is what objects of
//! format versions 1 and 2 name; it is kept only to read them, on the CPU, at load
//! (`rlwe::wire`). Host-side secrets and errors ([`Sampler`]) are drawn from ChaCha20; they are never
//! regenerated from a stored seed by a kernel.
//!
//! ## Exact mapping (the WGSL twin must reproduce it bit for bit)
//!
//! The ChaCha input block is sixteen `u32` words:
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
//! The block function applies `R / 2` double rounds (a column round on `(0,4,8,12)`,
//! `(1,5,9,13)`, `(2,6,10,14)`, `(3,7,11,15)`, then a diagonal round on `(0,5,10,15)`,
//! `(1,6,11,12)`, `(2,7,8,13)`, `(3,4,9,14)`; quarter round rotations 16, 12, 8, 7) and adds
//! the input block word by word (wrapping): `R = 12` for ChaCha12 ([`chacha12_block`]),
//! `R = 20` for ChaCha20 ([`chacha20_block`]). Output word `i` of block `b` is stream word
//! `16 b + i`; [`rand_chacha::ChaCha12Rng::next_u32`] returns the stream words in that order
//! starting at word position 0, `set_stream` sets words 14 and 15 and `set_word_pos(p)` seeks
//! to stream word `p`. The block functions here are the CPU twins of the shader's, written
//! from this description; the tests check them against `rand_chacha` and the published
//! all-zero ChaCha20 test vector.
//!
//! ## Uniform residues (generator 2)
//!
//! Let `k = ceil(log2 q)` and `mask = 2^k - 1` ([`candidate_mask`]). Residue `j` of a limb with modulus `q` takes *candidates*
//! `c_0, c_1, ...` and is the first one below `q`, where candidate `t` is
//!
//! ```text
//! c_t = word (j mod 16) of block  t * 2^32 + floor(j / 16)  of stream stream_id(purpose, index, q),  masked by `mask`
//! ```
//!
//! So candidate 0 is stream word `j` (the main region: block `j / 16`, 16 residues a block),
//! and a rejected residue draws its next candidates from its own word of the fallback blocks
//! `2^32 t + j / 16`, which no other residue touches (a limb has fewer than `2^36` residues,
//! [`MAX_LIMB_RESIDUES`], so main-region blocks stay below `2^32`). Every residue is
//! therefore regenerated on its own, and, the words being uniform, every accepted value is
//! *exactly* uniform on `[0, q)`: no statistical distance at all. A candidate is rejected
//! with probability `p = 1 - q / 2^k` ([`rejection_probability`], below `1/2`); a residue
//! takes `1 / (1 - p) = 2^k / q` words on average. Over the 223 distinct primes of the shipped
//! and application parameter sets `p` runs from `4.6e-5` (primes just below a power of two)
//! to `0.4995` (28-bit primes just above `2^27`), median `0.11`: the primes just above a power
//! of two need up to two words per residue on average, and a kernel draws a fallback block for
//! a rejected residue. (After `2^32 - 1` rejected candidates,
//! an event of probability below `2^-(2^32)`, the last candidate is reduced mod `q`, so the
//! map is total.)
//!
//! The residues are used directly as `Eval`-domain values. On the host, [`uniform_limb`]
//! computes whole limbs with a wide generator (sixteen blocks per batch, one per vector lane,
//! at AVX-512; eight with explicit AVX2 intrinsics); [`uniform_limb_reference`] keeps the plain
//! path (`rand_chacha`'s ChaCha12 stream, seeks for the fallback candidates), and the tests
//! check that both write the same residues at every SIMD level.
//!
//! ### Why ChaCha12
//!
//! The halves are public (a seeded object ships its seed), so what matters is that the
//! expansion of a known seed is indistinguishable from uniform, the same heuristic as
//! Kyber's expansion of its public matrix seed. ChaCha12 is `rand`'s `StdRng` and the
//! generator FIDESlib's 32-bit fork uses for its key halves; the best published attacks on
//! ChaCha reach 7 rounds (Aumasson, "Too Much Crypto", ePrint 2019/1492, which argues even 8
//! rounds keep a margin). 12 rounds cost 60 % of ChaCha20's block; with one 32-bit word per
//! residue instead of four, a residue costs about 15 % of what it did.
//!
//! ## Host-side samplers
//!
//! [`Sampler`] draws secrets and errors on the host from the ChaCha20 stream
//! `(0x80 | purpose) << 56 | index` of its seed: the set high bit keeps these streams apart
//! from every [`stream_id`] (whose top byte is a [`Purpose`] tag below `0x80`), and the index
//! may use all 32 bits.

use std::fmt;

use rand::rngs::OsRng;
use rand::TryRngCore;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::{ChaCha12Rng, ChaCha20Rng};

use crate::error::{Error, Result};
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

pub mod legacy;
mod wide;
use wide::{fallback_residue, key_words, Rejector, WideJob, WordMap};

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

/// The generator of the uniform halves of seeded objects, as the wire format names it (the
/// generator id byte before every stored seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Generator {
    /// ChaCha20, four words per residue reduced mod `q` ([`legacy`]): the generator of every
    /// seeded object of wire versions 1 and 2, kept only to read them (on the CPU, at load).
    /// Id 1.
    ChaCha20Reduce = 1,
    /// ChaCha12, one word per residue by masked rejection (the [module docs](self)): what every
    /// object made now and every kernel (CPU and WGSL) uses. Id 2.
    ChaCha12Reject = 2,
}

impl Generator {
    /// The generator new objects use.
    pub const CURRENT: Self = Self::ChaCha12Reject;

    /// The wire id of this generator.
    #[inline]
    #[must_use]
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// The generator of wire id `id`; [`Error::UnknownGenerator`] for any other id.
    pub fn from_id(id: u8) -> Result<Self> {
        match id {
            1 => Ok(Self::ChaCha20Reduce),
            2 => Ok(Self::ChaCha12Reject),
            _ => Err(Error::UnknownGenerator { id }),
        }
    }
}

/// Double rounds of the uniform generator (ChaCha12: 12 rounds).
pub const UNIFORM_DOUBLE_ROUNDS: usize = 6;

/// Residues a uniform limb may have (`2^36`): main-region blocks stay below `2^32`, apart from
/// the fallback blocks (see the [module docs](self)).
pub const MAX_LIMB_RESIDUES: u64 = 1 << 36;

/// The ChaCha constants `"expand 32-byte k"` as little-endian words.
const CHACHA_CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// One ChaCha quarter round on words `a, b, c, d` of `x`.
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

/// The ChaCha block `block` of stream `stream` under the key words `key`, with
/// `double_rounds` double rounds (plain `u32` operations only).
fn chacha_block(key: &[u32; 8], stream: u64, block: u64, double_rounds: usize) -> [u32; 16] {
    let [c0, c1, c2, c3] = CHACHA_CONSTANTS;
    let [k0, k1, k2, k3, k4, k5, k6, k7] = *key;
    let input = [
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
    let mut x = input;
    for _ in 0..double_rounds {
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

/// The ChaCha20 block `block` of stream `stream` under key `seed`: stream words
/// `16 * block .. 16 * block + 16`, laid out as described in the [module docs](self). The CPU
/// twin of the (legacy) 20-round block function.
#[must_use]
pub fn chacha20_block(seed: &Seed, stream: u64, block: u64) -> [u32; 16] {
    chacha_block(&key_words(seed), stream, block, 10)
}

/// The ChaCha12 block `block` of stream `stream` under key `seed` (the uniform generator's
/// block function; CPU twin of `chacha12_block` in `shaders/shared/chacha.wgsl`).
#[must_use]
pub fn chacha12_block(seed: &Seed, stream: u64, block: u64) -> [u32; 16] {
    chacha_block(&key_words(seed), stream, block, UNIFORM_DOUBLE_ROUNDS)
}

/// The candidate mask of modulus `q`: `2^k - 1` with `k = ceil(log2 q)`, the smallest power of
/// two `2^k >= q` less one (all ones for `q > 2^31`; `0` for `q < 2`, which no [`Modulus`]
/// has).
#[inline]
#[must_use]
pub const fn candidate_mask(q: u32) -> u32 {
    if q < 2 {
        0
    } else {
        u32::MAX >> (q - 1).leading_zeros()
    }
}

/// The probability `1 - q / 2^ceil(log2 q)` that a candidate of modulus `q` is rejected
/// (below `1/2` for every `q >= 2`, zero for a power of two); a residue takes `1 / (1 - p)`
/// words on average.
#[must_use]
pub fn rejection_probability(q: u32) -> f64 {
    let range = f64::from(candidate_mask(q)) + 1.0;
    1.0 - f64::from(q) / range
}

/// [`Error::CountTooLarge`] unless a limb of `len` residues fits [`MAX_LIMB_RESIDUES`].
fn check_limb_len(len: usize) -> Result<()> {
    if len as u64 > MAX_LIMB_RESIDUES {
        return Err(Error::CountTooLarge {
            what: "uniform limb residues",
            found: len as u64,
            limit: MAX_LIMB_RESIDUES,
        });
    }
    Ok(())
}

/// Fills `out` with residues `0 .. out.len()` of the uniform limb `(seed, purpose, index, q)`,
/// each exactly uniform in `[0, q)` (generator 2; see the [module docs](self) for the exact
/// stream layout). `out` normally has length `N`; any length up to [`MAX_LIMB_RESIDUES`] is
/// accepted.
///
/// Runs the wide generator of [`uniform_limb_at`] at [`SimdLevel::active`]; every level
/// writes exactly what [`uniform_limb_reference`] writes.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24` or `out` is too long.
pub fn uniform_limb(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, out: &mut [u32]) -> Result<()> {
    uniform_limb_at(SimdLevel::active(), seed, purpose, index, m, out)
}

/// The uniform limb of `generator`: [`uniform_limb`] for [`Generator::ChaCha12Reject`],
/// [`legacy::uniform_limb`] for [`Generator::ChaCha20Reduce`] (loading old objects).
///
/// Errors as those do.
pub fn uniform_limb_with(
    generator: Generator,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    m: &Modulus,
    out: &mut [u32],
) -> Result<()> {
    match generator {
        Generator::ChaCha12Reject => uniform_limb(seed, purpose, index, m, out),
        Generator::ChaCha20Reduce => legacy::uniform_limb(seed, purpose, index, m, out),
    }
}

/// [`uniform_limb`] at a given SIMD level (clamped to what the CPU has, see
/// [`SimdLevel::clamp`]); every level writes the same residues. For tests and benchmarks.
///
/// At AVX-512 the generator computes 16 ChaCha12 blocks at once, one block per 32-bit lane:
/// the sixteen state words are sixteen arrays of 16 lanes, lane `l` holding block `b + l`, so
/// the rounds are plain lane-wise `u32` operations that the compiler vectorises (one `zmm`
/// register per state word, rotations as `vprold`) under `pulp`'s run-time dispatch; residue
/// `16 (b + l) + w` is word `w` of lane `l`, masked, and a batch with a rejected candidate has
/// those residues replaced from their fallback regions. At AVX2 the same scheme runs on 8
/// lanes with explicit intrinsics (the compiler leaves the portable rounds scalar there);
/// without AVX2 it runs on the portable lanes.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24` or `out` is too long.
pub fn uniform_limb_at(
    level: SimdLevel,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    m: &Modulus,
    out: &mut [u32],
) -> Result<()> {
    let stream = stream_id(purpose, index, m.value())?;
    check_limb_len(out.len())?;
    let key = key_words(seed);
    wide::run(level, WideJob { key, stream, map: WordMap::Reject(Rejector::new(m)), out });
    Ok(())
}

/// The residues [`uniform_limb`] writes, computed the reference way: `rand_chacha`'s ChaCha12
/// stream read word by word, each word masked, and each rejected residue's fallback candidates
/// read by seeking the same generator to stream word `16 (2^32 t + j / 16) + j mod 16`. Kept
/// as the documented reference that the tests compare the wide generator with, and as the
/// baseline of the sampling benchmark.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24` or `out` is too long.
pub fn uniform_limb_reference(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, out: &mut [u32]) -> Result<()> {
    let stream = stream_id(purpose, index, m.value())?;
    check_limb_len(out.len())?;
    let (q, mask) = (m.value(), candidate_mask(m.value()));
    let mut rng = ChaCha12Rng::from_seed(*seed);
    rng.set_stream(stream);
    for o in out.iter_mut() {
        *o = rng.next_u32() & mask;
    }
    let mut seek = ChaCha12Rng::from_seed(*seed);
    seek.set_stream(stream);
    for (j, o) in out.iter_mut().enumerate() {
        let (low, word) = ((j / 16) as u128, (j % 16) as u128);
        let mut t = 1u128;
        while *o >= q && t <= u128::from(u32::MAX) {
            seek.set_word_pos(16 * (t << 32 | low) + word);
            *o = seek.next_u32() & mask;
            t += 1;
        }
        if *o >= q {
            *o %= q;
        }
    }
    Ok(())
}

/// Residue `j` of the uniform limb `(seed, purpose, index, q)`, in `[0, q)`, computed without
/// generating the others (one ChaCha12 block, more only if its candidate is rejected). Equal
/// to element `j` of what [`uniform_limb`] writes for any output length above `j`.
///
/// Errors with [`Error::CountTooLarge`] if `index >= 2^24` or `j >= 2^36`.
#[expect(clippy::indexing_slicing, reason = "j % 16 indexes a 16-word block")]
pub fn uniform_residue(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, j: usize) -> Result<u32> {
    let stream = stream_id(purpose, index, m.value())?;
    check_limb_len(j.saturating_add(1))?;
    let key = key_words(seed);
    let (q, mask) = (m.value(), candidate_mask(m.value()));
    let v = chacha_block(&key, stream, (j / 16) as u64, UNIFORM_DOUBLE_ROUNDS)[j % 16] & mask;
    Ok(if v < q { v } else { fallback_residue(&key, stream, q, mask, j) })
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
        (0..n).map(|_| self.gaussian_one()).collect()
    }

    /// One sample of [`Sampler::gaussian`] (the same draws: `gaussian(n)` is `n` of these).
    #[must_use]
    pub fn gaussian_one(&mut self) -> i32 {
        let r = self.rng.next_u64();
        let s = self.rng.next_u32();
        let mag = GAUSSIAN_TAIL.iter().fold(0i32, |acc, &t| acc + i32::from(r < t));
        let mask = -((s & 1) as i32);
        (mag ^ mask) - mask
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
