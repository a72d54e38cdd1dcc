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

/// The path without AVX2: `rand_chacha`'s stream, 1 KiB (64 residues) per call, each
/// residue reduced by `FastReducer`.
struct StreamOp<'a> {
    seed: &'a Seed,
    stream: u64,
    red: FastReducer,
    out: &'a mut [u32],
}

impl pulp::NullaryFnOnce for StreamOp<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let mut rng = ChaCha20Rng::from_seed(*self.seed);
        rng.set_stream(self.stream);
        let mut bytes = [0u8; 1024];
        for chunk in self.out.chunks_mut(64) {
            // The last call may draw words past the end of `out`; they are dropped (the
            // generator is private to this call).
            rng.fill_bytes(&mut bytes);
            for (o, b) in chunk.iter_mut().zip(bytes.chunks_exact(16)) {
                let mut w = [0u32; 4];
                for (wi, bi) in w.iter_mut().zip(b.chunks_exact(4)) {
                    let mut le = [0u8; 4];
                    le.copy_from_slice(bi);
                    *wi = u32::from_le_bytes(le);
                }
                let [w0, w1, w2, w3] = w;
                *o = self.red.reduce(w0, w1, w2, w3);
            }
        }
    }
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

/// The eight key words of a seed: `u32::from_le_bytes(seed[4i..4i+4])`.
fn key_words(seed: &Seed) -> [u32; 8] {
    let mut key = [0u32; 8];
    for (k, bytes) in key.iter_mut().zip(seed.chunks_exact(4)) {
        let mut w = [0u8; 4];
        w.copy_from_slice(bytes);
        *k = u32::from_le_bytes(w);
    }
    key
}

/// Per-modulus constants of the lane-wise reduction of four words (the fast path).
///
/// With `c_i = 2^(32 i) mod q` (`c_0 = 1 mod q`), the value
/// `v = w0 + w1 2^32 + w2 2^64 + w3 2^96` is congruent to `sum_i w_i c_i` mod `q`. Each
/// product `w_i c_i mod q` is a lazy Shoup product ([`Modulus::mul_shoup_lazy`]) with the
/// constant `c_i' = floor(c_i 2^32 / q)`, which is exact for *any* `u32` multiplicand `w_i`:
/// with `t = floor(w_i c_i' / 2^32)`, `w_i c_i / q - 1 < w_i c_i' / 2^32 <= w_i c_i / q`
/// (as `w_i < 2^32`), so `t` is `floor(w_i c_i / q)` or one less, and
/// `r_i = w_i c_i - t q` lies in `[0, 2q)`; it is below `2^31`, so computing it with wrapping
/// `u32` arithmetic gives it exactly. Then, with `q < 2^30` (so `4q < 2^32`, no sum below
/// wraps): `r_0 + r_1` and `r_2 + r_3` lie in `[0, 4q)` and one conditional subtraction of
/// `2q` brings each into `[0, 2q)`; their sum lies in `[0, 4q)`, and conditional subtractions
/// of `2q` then `q` leave the canonical residue `v mod q` in `[0, q)` -- the value
/// [`uniform_from_words_u32`] computes, since both are the unique residue in `[0, q)`.
/// The conditional subtractions are branch-free: for `x < 4q`, `x.min(x - 2q)` (wrapping) is
/// `x - 2q` when `x >= 2q` and `x` otherwise, because then `x - 2q` wraps to at least
/// `2^32 - 2q > 2q > x`.
#[derive(Debug, Clone, Copy)]
struct FastReducer {
    q: u32,
    /// `c_i = 2^(32 i) mod q`, `i = 0..4`.
    c: [u32; 4],
    /// `floor(c_i 2^32 / q)`, each below `2^32` because `c_i < q`.
    c_shoup: [u32; 4],
}

impl FastReducer {
    fn new(m: &Modulus) -> Self {
        let q = u64::from(m.value());
        let mut c = [0u32; 4];
        let mut acc = 1 % q;
        for ci in &mut c {
            *ci = acc as u32;
            acc = (acc << 32) % q;
        }
        Self { q: m.value(), c, c_shoup: c.map(|ci| m.shoup(ci)) }
    }

    /// `w_i c_i mod q` in `[0, 2q)` (lazy Shoup product, exact for any `w`).
    #[inline(always)]
    fn part(self, w: u32, c: u32, c_shoup: u32) -> u32 {
        let t = ((u64::from(w) * u64::from(c_shoup)) >> 32) as u32;
        w.wrapping_mul(c).wrapping_sub(t.wrapping_mul(self.q))
    }

    /// `(w0 + w1 2^32 + w2 2^64 + w3 2^96) mod q` in `[0, q)` (see the type's docs).
    #[inline(always)]
    fn reduce(self, w0: u32, w1: u32, w2: u32, w3: u32) -> u32 {
        let [c0, c1, c2, c3] = self.c;
        let [s0, s1, s2, s3] = self.c_shoup;
        let two_q = 2 * self.q;
        let lo = self.part(w0, c0, s0) + self.part(w1, c1, s1);
        let lo = lo.min(lo.wrapping_sub(two_q));
        let hi = self.part(w2, c2, s2) + self.part(w3, c3, s3);
        let hi = hi.min(hi.wrapping_sub(two_q));
        let s = lo + hi;
        let s = s.min(s.wrapping_sub(two_q));
        s.min(s.wrapping_sub(self.q))
    }
}

/// What one call of the wide generator needs.
struct WideJob<'a> {
    key: [u32; 8],
    stream: u64,
    red: FastReducer,
    out: &'a mut [u32],
}

/// The wide generator with `L` blocks per batch, as a `pulp` operation (dispatched with
/// `L = 16` at AVX-512; the tests also run it with 8 and 4 lanes).
struct WideOp<'a, const L: usize>(WideJob<'a>);

impl<const L: usize> pulp::NullaryFnOnce for WideOp<'_, L> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let WideJob { key, stream, red, out } = self.0;
        fill_batches::<L, _>(out, &Portable { key, stream, red });
    }
}

/// Where [`fill_batches`] gets its batches from: `batch(b)` returns the residues of blocks
/// `b .. b + L` as `r[k][l]` = residue `4 (b + l) + k`. (A trait with always-inlined methods
/// rather than a closure, so that the batch code is compiled inside the caller's
/// `target_feature` context.)
trait Batches<const L: usize> {
    fn batch(&self, block: u64) -> [[u32; L]; 4];
}

/// [`wide_residues`] as a [`Batches`] source.
struct Portable {
    key: [u32; 8],
    stream: u64,
    red: FastReducer,
}

impl<const L: usize> Batches<L> for Portable {
    #[inline(always)]
    fn batch(&self, block: u64) -> [[u32; L]; 4] {
        wide_residues::<L>(&self.key, self.stream, block, self.red)
    }
}

/// Fills `out` batch by batch from `src`.
#[inline(always)]
fn fill_batches<const L: usize, B: Batches<L>>(out: &mut [u32], src: &B) {
    let mut block = 0u64;
    let mut chunks = out.chunks_exact_mut(4 * L);
    for chunk in &mut chunks {
        let [r0, r1, r2, r3] = src.batch(block);
        // Residue 4 l + k of the batch is r_k[l].
        for ((((o, &a), &b), &c), &d) in chunk.chunks_exact_mut(4).zip(&r0).zip(&r1).zip(&r2).zip(&r3) {
            o.copy_from_slice(&[a, b, c, d]);
        }
        block = block.wrapping_add(L as u64);
    }
    let tail = chunks.into_remainder();
    if !tail.is_empty() {
        // A partial batch: the words past the end are computed and dropped.
        let [r0, r1, r2, r3] = src.batch(block);
        for ((((o, &a), &b), &c), &d) in tail.chunks_mut(4).zip(&r0).zip(&r1).zip(&r2).zip(&r3) {
            for (oi, v) in o.iter_mut().zip([a, b, c, d]) {
                *oi = v;
            }
        }
    }
}

/// The wide generator at AVX2 with explicit intrinsics (8 blocks per batch, one per lane of
/// a `ymm` register): the compiler leaves [`wide_residues`] scalar at this level.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::__m256i;

    use pulp::cast;
    use pulp::x86::V3;

    use super::{lanes_reduce, FastReducer, CHACHA_CONSTANTS};

    /// The AVX2 form of the wide generator, as a `pulp` operation.
    pub(super) struct Op<'a> {
        pub(super) s: V3,
        pub(super) job: super::WideJob<'a>,
    }

    impl pulp::NullaryFnOnce for Op<'_> {
        type Output = ();

        #[inline(always)]
        fn call(self) {
            let Op { s, job: super::WideJob { key, stream, red, out } } = self;
            super::fill_batches::<8, _>(out, &Source { s, key, stream, red });
        }
    }

    /// [`residues8`] as a [`super::Batches`] source.
    struct Source {
        s: V3,
        key: [u32; 8],
        stream: u64,
        red: FastReducer,
    }

    impl super::Batches<8> for Source {
        #[inline(always)]
        fn batch(&self, block: u64) -> [[u32; 8]; 4] {
            residues8(self.s, &self.key, self.stream, block, self.red)
        }
    }

    /// The byte shuffle that rotates every 32-bit word left by `8 * r` bits (`r` in 1..4):
    /// output byte `j` of a word is input byte `(j - r) mod 4`, within each 128-bit half.
    #[inline(always)]
    fn rotation(r: usize) -> __m256i {
        let mut m = [0u8; 32];
        for (i, mi) in m.iter_mut().enumerate() {
            *mi = (4 * ((i / 4) % 4) + (i + 4 - r) % 4) as u8;
        }
        cast(m)
    }

    /// One quarter round on four state words of eight lanes; `r16`, `r8` are the byte
    /// shuffles that rotate each word left by 16 and 8 bits.
    #[inline(always)]
    #[expect(clippy::many_single_char_names, reason = "the quarter round's own names")]
    fn quarter_round(s: V3, [a, b, c, d]: [&mut __m256i; 4], r16: __m256i, r8: __m256i) {
        let v = s.avx2;
        *a = v._mm256_add_epi32(*a, *b);
        *d = v._mm256_shuffle_epi8(v._mm256_xor_si256(*d, *a), r16);
        *c = v._mm256_add_epi32(*c, *d);
        let t = v._mm256_xor_si256(*b, *c);
        *b = v._mm256_or_si256(v._mm256_slli_epi32::<12>(t), v._mm256_srli_epi32::<20>(t));
        *a = v._mm256_add_epi32(*a, *b);
        *d = v._mm256_shuffle_epi8(v._mm256_xor_si256(*d, *a), r8);
        *c = v._mm256_add_epi32(*c, *d);
        let t = v._mm256_xor_si256(*b, *c);
        *b = v._mm256_or_si256(v._mm256_slli_epi32::<7>(t), v._mm256_srli_epi32::<25>(t));
    }

    /// [`super::wide_residues`] with `L = 8`, written with AVX2 intrinsics.
    #[inline(always)]
    pub(super) fn residues8(s: V3, key: &[u32; 8], stream: u64, first: u64, red: FastReducer) -> [[u32; 8]; 4] {
        let (r16, r8) = (rotation(2), rotation(1));
        let mut ctr_lo = [0u32; 8];
        let mut ctr_hi = [0u32; 8];
        for (l, (lo, hi)) in ctr_lo.iter_mut().zip(ctr_hi.iter_mut()).enumerate() {
            let b = first.wrapping_add(l as u64);
            *lo = b as u32;
            *hi = (b >> 32) as u32;
        }
        let [c0, c1, c2, c3] = CHACHA_CONSTANTS;
        let [k0, k1, k2, k3, k4, k5, k6, k7] = *key;
        let input: [__m256i; 16] = [
            cast([c0; 8]),
            cast([c1; 8]),
            cast([c2; 8]),
            cast([c3; 8]),
            cast([k0; 8]),
            cast([k1; 8]),
            cast([k2; 8]),
            cast([k3; 8]),
            cast([k4; 8]),
            cast([k5; 8]),
            cast([k6; 8]),
            cast([k7; 8]),
            cast(ctr_lo),
            cast(ctr_hi),
            cast([stream as u32; 8]),
            cast([(stream >> 32) as u32; 8]),
        ];
        let [mut x0, mut x1, mut x2, mut x3, mut x4, mut x5, mut x6, mut x7, mut x8, mut x9, mut x10, mut x11, mut x12, mut x13, mut x14, mut x15] =
            input;
        for _ in 0..10 {
            quarter_round(s, [&mut x0, &mut x4, &mut x8, &mut x12], r16, r8);
            quarter_round(s, [&mut x1, &mut x5, &mut x9, &mut x13], r16, r8);
            quarter_round(s, [&mut x2, &mut x6, &mut x10, &mut x14], r16, r8);
            quarter_round(s, [&mut x3, &mut x7, &mut x11, &mut x15], r16, r8);
            quarter_round(s, [&mut x0, &mut x5, &mut x10, &mut x15], r16, r8);
            quarter_round(s, [&mut x1, &mut x6, &mut x11, &mut x12], r16, r8);
            quarter_round(s, [&mut x2, &mut x7, &mut x8, &mut x13], r16, r8);
            quarter_round(s, [&mut x3, &mut x4, &mut x9, &mut x14], r16, r8);
        }
        let x = [x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15];
        let mut w = [[0u32; 8]; 16];
        for ((wi, &xi), &ii) in w.iter_mut().zip(&x).zip(&input) {
            *wi = cast(s.avx2._mm256_add_epi32(xi, ii));
        }
        let [w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, w12, w13, w14, w15] = w;
        [
            lanes_reduce(red, &w0, &w1, &w2, &w3),
            lanes_reduce(red, &w4, &w5, &w6, &w7),
            lanes_reduce(red, &w8, &w9, &w10, &w11),
            lanes_reduce(red, &w12, &w13, &w14, &w15),
        ]
    }
}

/// Lane-wise `a += b`.
#[inline(always)]
fn lanes_add<const L: usize>(a: &mut [u32; L], b: &[u32; L]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = x.wrapping_add(*y);
    }
}

/// Lane-wise `a += s` for one value `s`.
#[inline(always)]
fn lanes_add_splat<const L: usize>(a: &mut [u32; L], s: u32) {
    for x in a.iter_mut() {
        *x = x.wrapping_add(s);
    }
}

/// Lane-wise [`FastReducer::reduce`] of four state words.
#[inline(always)]
fn lanes_reduce<const L: usize>(
    red: FastReducer,
    w0: &[u32; L],
    w1: &[u32; L],
    w2: &[u32; L],
    w3: &[u32; L],
) -> [u32; L] {
    let mut r = [0u32; L];
    for ((((o, &a), &b), &c), &d) in r.iter_mut().zip(w0).zip(w1).zip(w2).zip(w3) {
        *o = red.reduce(a, b, c, d);
    }
    r
}

/// One ChaCha20 quarter round on four state words, each an array of `L` lanes.
#[inline(always)]
fn lanes_quarter_round<const L: usize>(a: &mut [u32; L], b: &mut [u32; L], c: &mut [u32; L], d: &mut [u32; L]) {
    for (((a, b), c), d) in a.iter_mut().zip(b.iter_mut()).zip(c.iter_mut()).zip(d.iter_mut()) {
        *a = a.wrapping_add(*b);
        *d = (*d ^ *a).rotate_left(16);
        *c = c.wrapping_add(*d);
        *b = (*b ^ *c).rotate_left(12);
        *a = a.wrapping_add(*b);
        *d = (*d ^ *a).rotate_left(8);
        *c = c.wrapping_add(*d);
        *b = (*b ^ *c).rotate_left(7);
    }
}

/// Residues `4 first .. 4 (first + L)` of a limb (relative to the stream start): ChaCha20
/// blocks `first .. first + L` of `(key, stream)`, lane `l` holding block `first + l`
/// (the same block function as [`chacha20_block`]), then `r[k][l]` = words `4k .. 4k + 3` of
/// lane `l` reduced by `red`.
#[inline(always)]
fn wide_residues<const L: usize>(key: &[u32; 8], stream: u64, first: u64, red: FastReducer) -> [[u32; L]; 4] {
    let [c0, c1, c2, c3] = CHACHA_CONSTANTS;
    let [k0, k1, k2, k3, k4, k5, k6, k7] = *key;
    let mut ctr_lo = [0u32; L];
    let mut ctr_hi = [0u32; L];
    for (l, (lo, hi)) in ctr_lo.iter_mut().zip(ctr_hi.iter_mut()).enumerate() {
        let b = first.wrapping_add(l as u64);
        *lo = b as u32;
        *hi = (b >> 32) as u32;
    }
    let (s_lo, s_hi) = (stream as u32, (stream >> 32) as u32);
    let (mut x0, mut x1, mut x2, mut x3) = ([c0; L], [c1; L], [c2; L], [c3; L]);
    let (mut x4, mut x5, mut x6, mut x7) = ([k0; L], [k1; L], [k2; L], [k3; L]);
    let (mut x8, mut x9, mut x10, mut x11) = ([k4; L], [k5; L], [k6; L], [k7; L]);
    let (mut x12, mut x13, mut x14, mut x15) = (ctr_lo, ctr_hi, [s_lo; L], [s_hi; L]);
    for _ in 0..10 {
        lanes_quarter_round(&mut x0, &mut x4, &mut x8, &mut x12);
        lanes_quarter_round(&mut x1, &mut x5, &mut x9, &mut x13);
        lanes_quarter_round(&mut x2, &mut x6, &mut x10, &mut x14);
        lanes_quarter_round(&mut x3, &mut x7, &mut x11, &mut x15);
        lanes_quarter_round(&mut x0, &mut x5, &mut x10, &mut x15);
        lanes_quarter_round(&mut x1, &mut x6, &mut x11, &mut x12);
        lanes_quarter_round(&mut x2, &mut x7, &mut x8, &mut x13);
        lanes_quarter_round(&mut x3, &mut x4, &mut x9, &mut x14);
    }
    // The feed-forward (add the input block), one state word at a time.
    for (x, s) in [(&mut x0, c0), (&mut x1, c1), (&mut x2, c2), (&mut x3, c3)] {
        lanes_add_splat(x, s);
    }
    for (x, s) in [(&mut x4, k0), (&mut x5, k1), (&mut x6, k2), (&mut x7, k3)] {
        lanes_add_splat(x, s);
    }
    for (x, s) in [(&mut x8, k4), (&mut x9, k5), (&mut x10, k6), (&mut x11, k7)] {
        lanes_add_splat(x, s);
    }
    lanes_add(&mut x12, &ctr_lo);
    lanes_add(&mut x13, &ctr_hi);
    lanes_add_splat(&mut x14, s_lo);
    lanes_add_splat(&mut x15, s_hi);
    [
        lanes_reduce(red, &x0, &x1, &x2, &x3),
        lanes_reduce(red, &x4, &x5, &x6, &x7),
        lanes_reduce(red, &x8, &x9, &x10, &x11),
        lanes_reduce(red, &x12, &x13, &x14, &x15),
    ]
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
mod tests {

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
        0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86, 0xbd, 0x28, 0xbd, 0xd2,
        0x19, 0xb8, 0xa0, 0x8d, 0xed, 0x1a, 0xa8, 0x36, 0xef, 0xcc, 0x8b, 0x77, 0x0d, 0xc7, 0xda, 0x41, 0x59, 0x7c,
        0x51, 0x57, 0x48, 0x8d, 0x77, 0x24, 0xe0, 0x3f, 0xb8, 0xd8, 0x4a, 0x37, 0x6a, 0x43, 0xb8, 0xf4, 0x15, 0x18,
        0xa1, 0x1c, 0xc3, 0x87, 0xb6, 0x69, 0xb2, 0xee, 0x65, 0x86,
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
            assert!(matches!(
                uniform_residue(&seed, Purpose::CiphertextA, bad, &m, 0),
                Err(Error::CountTooLarge { .. })
            ));
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
                        let v =
                            u128::from(w[0]) | u128::from(w[1]) << 32 | u128::from(w[2]) << 64 | u128::from(w[3]) << 96;
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
                let v_hi =
                    (u128::from(hi[0]) << 32 | u128::from(hi[1]) << 64 | u128::from(hi[2]) << 96) % u128::from(q);
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
}
