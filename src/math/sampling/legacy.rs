//! Generator 1, ChaCha20 with 128-bit reduction: how the uniform halves of every seeded object
//! and kernel are generated today (see [`super::Generator`]). Once generator 2 is wired into
//! the kernels and the wire format, it stays only so old objects still load.
//!
//! Residue `j` of a limb with modulus `q` is
//! `(w[4j] + w[4j+1] * 2^32 + w[4j+2] * 2^64 + w[4j+3] * 2^96) mod q`, where `w` is the
//! ChaCha20 stream [`stream_id`]`(purpose, index, q)` (20 rounds, the layout of the
//! [parent module](super)). So block `j / 4` holds residues `4(j/4) .. 4(j/4)+3`, residue `j`
//! taking words `4 (j mod 4) .. 4 (j mod 4) + 3` of it. Reducing a 128-bit value puts every
//! residue within statistical distance `(2^128 mod q) / 2^128 < q / 2^128 < 2^-98` of uniform.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::wide::{key_words, FastReducer, WideJob, WordMap};
use super::{stream_id, Purpose, Seed};
use crate::error::Result;
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

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

/// Fills `out` with generator 1's residues `0 .. out.len()` of the uniform limb
/// `(seed, purpose, index, q)`, each in `[0, q)` (see the [module docs](self)). `out` normally has length `N`; any length is accepted.
///
/// Runs the wide generator of [`uniform_limb_at`] at [`SimdLevel::active`]; every level
/// writes exactly what [`uniform_limb_reference`] writes.
///
/// Errors with [`Error::CountTooLarge`](crate::error::Error::CountTooLarge) if `index >= 2^24`.
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
/// there); without AVX2 it runs on 4 portable lanes.
///
/// Errors with [`Error::CountTooLarge`](crate::error::Error::CountTooLarge) if `index >= 2^24`.
pub fn uniform_limb_at(
    level: SimdLevel,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    m: &Modulus,
    out: &mut [u32],
) -> Result<()> {
    let stream = stream_id(purpose, index, m.value())?;
    super::wide::run(level, WideJob { key: key_words(seed), stream, map: WordMap::Reduce(FastReducer::new(m)), out });
    Ok(())
}

/// The residues [`uniform_limb`] writes, computed the reference way: `rand_chacha`'s stream,
/// 64 bytes at a time, each residue reduced by [`uniform_from_words_u32`]'s `u32`-only Horner
/// steps (the shader's reduction). Kept as the documented reference that the tests compare
/// the wide generator with, and as the baseline of the sampling benchmark.
///
/// Errors with [`Error::CountTooLarge`](crate::error::Error::CountTooLarge) if `index >= 2^24`.
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
/// Errors with [`Error::CountTooLarge`](crate::error::Error::CountTooLarge) if `index >= 2^24`.
pub fn uniform_residue(seed: &Seed, purpose: Purpose, index: u32, m: &Modulus, j: usize) -> Result<u32> {
    let mut rng = limb_rng(seed, purpose, index, m)?;
    rng.set_word_pos(4 * j as u128);
    let w = [rng.next_u32(), rng.next_u32(), rng.next_u32(), rng.next_u32()];
    Ok(uniform_from_words_u32(w, m))
}

#[cfg(test)]
mod tests;
