//! The wide uniform-residue generators behind [`uniform_limb_at`](super::uniform_limb_at) and
//! [`legacy::uniform_limb_at`](super::legacy::uniform_limb_at): ChaCha blocks computed
//! lane-wise (16 lanes at AVX-512, 8 at AVX2 with explicit intrinsics, a portable lane count for
//! the tests), at the generator's number of double rounds, then mapped to residues:
//!
//! - generator 2 ([`super::Generator::ChaCha12Reject`]): every output word is one residue
//!   candidate, masked to the bit length of `q` and accepted below `q`; the rare rejected
//!   residue is replaced from its fallback region ([`fallback_residue`]), the fallback blocks
//!   computed lane-wise like the first candidates ([`fill_words`]);
//! - generator 1 ([`super::Generator::ChaCha20Reduce`], read-only): four words per residue
//!   reduced mod `q` by [`FastReducer`].
//!
//! Every path writes what the matching reference writes.

use super::{chacha_block, Seed, CHACHA_CONSTANTS, UNIFORM_DOUBLE_ROUNDS};
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

/// Double rounds of generator 1 (ChaCha20).
pub(super) const LEGACY_DOUBLE_ROUNDS: usize = 10;

/// The eight key words of a seed: `u32::from_le_bytes(seed[4i..4i+4])`.
pub(super) fn key_words(seed: &Seed) -> [u32; 8] {
    let mut key = [0u32; 8];
    for (k, bytes) in key.iter_mut().zip(seed.chunks_exact(4)) {
        let mut w = [0u8; 4];
        w.copy_from_slice(bytes);
        *k = u32::from_le_bytes(w);
    }
    key
}

/// Per-modulus constants of generator 2's word map: residue candidates are words masked to
/// the bit length of `q`, accepted below `q`; a rejected residue draws its next candidates
/// from its own fallback region of the same stream (see [`fill_words`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Rejector {
    q: u32,
    /// `2^bits(q) - 1`: all ones up to the top bit of `q`.
    mask: u32,
}

impl Rejector {
    pub(super) fn new(m: &Modulus) -> Self {
        let q = m.value();
        Self { q, mask: super::candidate_mask(q) }
    }

    /// The masked candidate of word `w` (accepted if below `q`).
    #[inline(always)]
    fn candidate(self, w: u32) -> u32 {
        w & self.mask
    }
}

/// Residue `j` after its main-region candidate was rejected, one block at a time (the scalar
/// [`super::uniform_residue`]): candidate `t = 1, 2, ...` is word `j mod 16` of block
/// `t * 2^32 + j / 16` (the fallback region), the first accepted one is the residue. Terminates
/// with probability 1 (each candidate is rejected with probability below 1/2); after `2^32 - 1`
/// rejected candidates (probability below `2^-(2^32)`) the last one is reduced mod `q` so the
/// function is total. The wide generator computes the same words a batch of groups at a time.
#[expect(clippy::indexing_slicing, reason = "j % 16 indexes a 16-word block")]
pub(super) fn fallback_residue(key: &[u32; 8], stream: u64, q: u32, mask: u32, j: usize) -> u32 {
    let low = (j / 16) as u64 & 0xffff_ffff;
    let mut v = 0;
    for t in 1..=u32::MAX {
        let block = chacha_block(key, stream, u64::from(t) << 32 | low, UNIFORM_DOUBLE_ROUNDS);
        v = block[j % 16] & mask;
        if v < q {
            return v;
        }
    }
    v % q
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
/// [`legacy::uniform_from_words_u32`](super::legacy::uniform_from_words_u32) computes, since both are the unique residue in `[0, q)`.
/// The conditional subtractions are branch-free: for `x < 4q`, `x.min(x - 2q)` (wrapping) is
/// `x - 2q` when `x >= 2q` and `x` otherwise, because then `x - 2q` wraps to at least
/// `2^32 - 2q > 2q > x`.
#[derive(Debug, Clone, Copy)]
pub(super) struct FastReducer {
    q: u32,
    /// `c_i = 2^(32 i) mod q`, `i = 0..4`.
    c: [u32; 4],
    /// `floor(c_i 2^32 / q)`, each below `2^32` because `c_i < q`.
    c_shoup: [u32; 4],
}

impl FastReducer {
    pub(super) fn new(m: &Modulus) -> Self {
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
    pub(super) fn reduce(self, w0: u32, w1: u32, w2: u32, w3: u32) -> u32 {
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

/// How a wide batch of ChaCha blocks becomes residues.
#[derive(Debug, Clone, Copy)]
pub(super) enum WordMap {
    /// Generator 2: one masked word per residue, rejection with fallback.
    Reject(Rejector),
    /// Generator 1: four words per residue, reduced mod `q`.
    Reduce(FastReducer),
}

/// What one call of the wide generator needs.
pub(super) struct WideJob<'a> {
    pub(super) key: [u32; 8],
    pub(super) stream: u64,
    pub(super) map: WordMap,
    pub(super) out: &'a mut [u32],
}

/// Runs `job` on the widest form `level` (clamped to what the CPU has) allows: 16 lanes at
/// AVX-512, 8 with AVX2 intrinsics, else 4 portable lanes. Every form writes the same residues.
pub(super) fn run(level: SimdLevel, job: WideJob<'_>) {
    #[cfg(target_arch = "x86_64")]
    {
        let level = level.clamp();
        if level >= SimdLevel::Avx512 {
            if let Some(s) = pulp::x86::V4::try_new() {
                s.vectorize(WideOp::<16>(job));
                return;
            }
        }
        if level >= SimdLevel::Avx2 {
            if let Some(s) = pulp::x86::V3::try_new() {
                s.vectorize(avx2::Op { s, job });
                return;
            }
        }
    }
    let _ = level;
    pulp::NullaryFnOnce::call(WideOp::<4>(job));
}

/// The wide generator with `L` blocks per batch, as a `pulp` operation (dispatched with
/// `L = 16` at AVX-512; the tests also run it with 8 and 4 lanes).
pub(super) struct WideOp<'a, const L: usize>(pub(super) WideJob<'a>);

impl<const L: usize> pulp::NullaryFnOnce for WideOp<'_, L> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let WideJob { key, stream, map, out } = self.0;
        match map {
            WordMap::Reject(rej) => {
                fill_words::<L, _>(out, &Portable::<UNIFORM_DOUBLE_ROUNDS> { key, stream }, rej);
            }
            WordMap::Reduce(red) => fill_reduced::<L, _>(out, &Portable::<LEGACY_DOUBLE_ROUNDS> { key, stream }, red),
        }
    }
}

/// Where the fill functions get their batches from: `states(b)` returns the output words of
/// blocks `b .. b + L` as `x[w][l]` = word `w` of block `b + l`. (A trait with always-inlined
/// methods rather than a closure, so that the batch code is compiled inside the caller's
/// `target_feature` context.)
trait States<const L: usize> {
    fn states(&self, first: u64) -> [[u32; L]; 16];
    /// The output words of the blocks `ctr[0], ..., ctr[L - 1]`, lane `l` holding block
    /// `ctr[l]` (the fallback rounds, whose lanes serve unrelated groups).
    fn states_at(&self, ctr: &[u64; L]) -> [[u32; L]; 16];
}

/// [`wide_states`] with `DR` double rounds as a [`States`] source.
struct Portable<const DR: usize> {
    key: [u32; 8],
    stream: u64,
}

impl<const L: usize, const DR: usize> States<L> for Portable<DR> {
    #[inline(always)]
    fn states(&self, first: u64) -> [[u32; L]; 16] {
        wide_states::<L>(&self.key, self.stream, first, DR)
    }

    #[inline(always)]
    fn states_at(&self, ctr: &[u64; L]) -> [[u32; L]; 16] {
        wide_states_at::<L>(&self.key, self.stream, ctr, DR)
    }
}

/// Generator 2: fills `out` batch by batch from `src`, residue `16 (b + l) + w` being word `w`
/// of lane `l` masked, and lists every group of 16 residues (`j / 16 = g`) with a rejected
/// candidate. Those groups then go through their fallback rounds in a working set of `L` lanes,
/// one group per lane with its 16 candidates in the lane layout: each wide call computes block
/// `t * 2^32 + g` for every lane's group `g` and round `t` (`g < 2^32` because a limb holds at
/// most [`super::MAX_LIMB_RESIDUES`] residues) and every rejected candidate takes its word of
/// its group's block, a lane-wise select (what [`fallback_residue`] computes one block at a
/// time). A group whose residues are all accepted is written back and its lane takes the next
/// listed group, so every group stops at its own last rejection; after round `2^32 - 1` a
/// still-rejected candidate is reduced mod `q`.
#[inline(always)]
#[expect(clippy::indexing_slicing, reason = "w < 16 and l < L index the [[u32; L]; 16] batches")]
fn fill_words<const L: usize, S: States<L>>(out: &mut [u32], src: &S, rej: Rejector) {
    let mut block = 0u64;
    let mut pending: Vec<u64> = Vec::new();
    for chunk in out.chunks_mut(16 * L) {
        let x = src.states(block);
        for (l, o16) in chunk.chunks_mut(16).enumerate() {
            let mut rejected = false;
            for (w, o) in o16.iter_mut().enumerate() {
                let v = rej.candidate(x[w][l]);
                rejected |= v >= rej.q;
                *o = v;
            }
            if rejected {
                pending.push(block + l as u64);
            }
        }
        block = block.wrapping_add(L as u64);
    }
    fallback_rounds(out, src, rej, &pending);
}

/// The fallback rounds of [`fill_words`] for the listed groups (`pending`, in any order), in a
/// working set of `L` lanes.
#[inline(always)]
#[expect(clippy::indexing_slicing, reason = "w < 16 and l < L index the [[u32; L]; 16] batches")]
fn fallback_rounds<const L: usize, S: States<L>>(out: &mut [u32], src: &S, rej: Rejector, pending: &[u64]) {
    // The working set: lane l holds group `group[l]` at round `round[l]` (0: free lane, whose
    // candidates are all 0, accepted).
    let (mut x, mut group, mut round) = ([[0u32; L]; 16], [0u64; L], [0u64; L]);
    let mut next = pending.iter();
    loop {
        for l in 0..L {
            if round[l] == 0 {
                if let Some(&g) = next.next() {
                    let start = g as usize * 16;
                    for (w, row) in x.iter_mut().enumerate() {
                        row[l] = out.get(start + w).copied().unwrap_or_default();
                    }
                    (group[l], round[l]) = (g, 1);
                }
            }
        }
        if round.iter().all(|&t| t == 0) {
            break;
        }
        let mut ctr = [0u64; L];
        for ((c, &g), &t) in ctr.iter_mut().zip(&group).zip(&round) {
            *c = t << 32 | g;
        }
        let y = src.states_at(&ctr);
        let mut rejected = [0u32; L];
        for (row, new) in x.iter_mut().zip(&y) {
            for ((v, &c), r) in row.iter_mut().zip(new).zip(rejected.iter_mut()) {
                let c = if *v < rej.q { *v } else { rej.candidate(c) };
                *r |= u32::from(c >= rej.q);
                *v = c;
            }
        }
        for l in 0..L {
            if round[l] == 0 {
                continue;
            }
            if rejected[l] != 0 && round[l] < u64::from(u32::MAX) {
                round[l] += 1;
                continue;
            }
            let start = group[l] as usize * 16;
            for (w, row) in x.iter_mut().enumerate() {
                // Still rejected only after round 2^32 - 1: the last candidate mod q.
                if row[l] >= rej.q {
                    row[l] %= rej.q;
                }
                if let Some(o) = out.get_mut(start + w) {
                    *o = row[l];
                }
                row[l] = 0;
            }
            round[l] = 0;
        }
    }
}

/// Generator 1: fills `out` batch by batch from `src`, residue `4 (b + l) + k` being words
/// `4k .. 4k + 3` of lane `l` reduced by `red`.
#[inline(always)]
fn fill_reduced<const L: usize, S: States<L>>(out: &mut [u32], src: &S, red: FastReducer) {
    let mut block = 0u64;
    for chunk in out.chunks_mut(4 * L) {
        let [r0, r1, r2, r3] = reduce_batch(red, &src.states(block));
        // Residue 4 l + k of the batch is r_k[l]; a partial batch drops the words past the end.
        for ((((o, &a), &b), &c), &d) in chunk.chunks_mut(4).zip(&r0).zip(&r1).zip(&r2).zip(&r3) {
            for (oi, v) in o.iter_mut().zip([a, b, c, d]) {
                *oi = v;
            }
        }
        block = block.wrapping_add(L as u64);
    }
}

/// Generator 1's residues of a batch: `r[k][l]` = words `4k .. 4k + 3` of lane `l` reduced.
#[inline(always)]
pub(super) fn reduce_batch<const L: usize>(red: FastReducer, x: &[[u32; L]; 16]) -> [[u32; L]; 4] {
    let [x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15] = x;
    [
        lanes_reduce(red, x0, x1, x2, x3),
        lanes_reduce(red, x4, x5, x6, x7),
        lanes_reduce(red, x8, x9, x10, x11),
        lanes_reduce(red, x12, x13, x14, x15),
    ]
}

/// The wide generator at AVX2 with explicit intrinsics (8 blocks per batch, one per lane of
/// a `ymm` register): the compiler leaves [`wide_states`] scalar at this level.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use core::arch::x86_64::__m256i;

    use pulp::cast;
    use pulp::x86::V3;

    use super::{WordMap, CHACHA_CONSTANTS, LEGACY_DOUBLE_ROUNDS, UNIFORM_DOUBLE_ROUNDS};

    /// The AVX2 form of the wide generator, as a `pulp` operation.
    pub(in crate::math::sampling) struct Op<'a> {
        pub(in crate::math::sampling) s: V3,
        pub(in crate::math::sampling) job: super::WideJob<'a>,
    }

    impl pulp::NullaryFnOnce for Op<'_> {
        type Output = ();

        #[inline(always)]
        fn call(self) {
            let Op { s, job: super::WideJob { key, stream, map, out } } = self;
            match map {
                WordMap::Reject(rej) => {
                    super::fill_words::<8, _>(out, &Source::<UNIFORM_DOUBLE_ROUNDS> { s, key, stream }, rej);
                }
                WordMap::Reduce(red) => {
                    super::fill_reduced::<8, _>(out, &Source::<LEGACY_DOUBLE_ROUNDS> { s, key, stream }, red);
                }
            }
        }
    }

    /// [`states8`] with `DR` double rounds as a [`super::States`] source.
    struct Source<const DR: usize> {
        s: V3,
        key: [u32; 8],
        stream: u64,
    }

    impl<const DR: usize> super::States<8> for Source<DR> {
        #[inline(always)]
        fn states(&self, first: u64) -> [[u32; 8]; 16] {
            states8(self.s, &self.key, self.stream, first, DR)
        }

        #[inline(always)]
        fn states_at(&self, ctr: &[u64; 8]) -> [[u32; 8]; 16] {
            states8_at(self.s, &self.key, self.stream, ctr, DR)
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

    /// [`super::wide_states`] with `L = 8`, written with AVX2 intrinsics.
    #[inline(always)]
    pub(in crate::math::sampling) fn states8(
        s: V3,
        key: &[u32; 8],
        stream: u64,
        first: u64,
        double_rounds: usize,
    ) -> [[u32; 8]; 16] {
        let mut ctr = [0u64; 8];
        for (l, c) in ctr.iter_mut().enumerate() {
            *c = first.wrapping_add(l as u64);
        }
        states8_at(s, key, stream, &ctr, double_rounds)
    }

    /// [`states8`] of the blocks `ctr[0], ..., ctr[7]`, lane `l` holding block `ctr[l]`.
    #[inline(always)]
    pub(in crate::math::sampling) fn states8_at(
        s: V3,
        key: &[u32; 8],
        stream: u64,
        ctr: &[u64; 8],
        double_rounds: usize,
    ) -> [[u32; 8]; 16] {
        let (r16, r8) = (rotation(2), rotation(1));
        let mut ctr_lo = [0u32; 8];
        let mut ctr_hi = [0u32; 8];
        for ((lo, hi), &b) in ctr_lo.iter_mut().zip(ctr_hi.iter_mut()).zip(ctr) {
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
        for _ in 0..double_rounds {
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
        w
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

/// One ChaCha quarter round on four state words, each an array of `L` lanes.
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

/// The output words of ChaCha blocks `first .. first + L` of `(key, stream)` with
/// `double_rounds` double rounds, lane `l` holding block `first + l` (the same block function
/// as [`chacha_block`]): `x[w][l]` = word `w` of block `first + l`.
#[inline(always)]
pub(super) fn wide_states<const L: usize>(
    key: &[u32; 8],
    stream: u64,
    first: u64,
    double_rounds: usize,
) -> [[u32; L]; 16] {
    let mut ctr = [0u64; L];
    for (l, c) in ctr.iter_mut().enumerate() {
        *c = first.wrapping_add(l as u64);
    }
    wide_states_at(key, stream, &ctr, double_rounds)
}

/// The output words of ChaCha blocks `ctr[0], ..., ctr[L - 1]` of `(key, stream)` with
/// `double_rounds` double rounds, lane `l` holding block `ctr[l]`.
#[inline(always)]
pub(super) fn wide_states_at<const L: usize>(
    key: &[u32; 8],
    stream: u64,
    ctr: &[u64; L],
    double_rounds: usize,
) -> [[u32; L]; 16] {
    let [c0, c1, c2, c3] = CHACHA_CONSTANTS;
    let [k0, k1, k2, k3, k4, k5, k6, k7] = *key;
    let mut ctr_lo = [0u32; L];
    let mut ctr_hi = [0u32; L];
    for ((lo, hi), &b) in ctr_lo.iter_mut().zip(ctr_hi.iter_mut()).zip(ctr) {
        *lo = b as u32;
        *hi = (b >> 32) as u32;
    }
    let (s_lo, s_hi) = (stream as u32, (stream >> 32) as u32);
    let (mut x0, mut x1, mut x2, mut x3) = ([c0; L], [c1; L], [c2; L], [c3; L]);
    let (mut x4, mut x5, mut x6, mut x7) = ([k0; L], [k1; L], [k2; L], [k3; L]);
    let (mut x8, mut x9, mut x10, mut x11) = ([k4; L], [k5; L], [k6; L], [k7; L]);
    let (mut x12, mut x13, mut x14, mut x15) = (ctr_lo, ctr_hi, [s_lo; L], [s_hi; L]);
    for _ in 0..double_rounds {
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
    [x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15]
}
