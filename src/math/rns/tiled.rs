//! The fast path of [`BaseConverter`](super::BaseConverter) and [`ScaleDown`](super::ScaleDown):
//! one tiled, lazily reduced kernel that both reduce to.
//!
//! # What it computes
//!
//! From `L` source limbs `x_i` (moduli `q_i`) and, for each of `M` output limbs `o` (moduli
//! `p_o`), a row of coefficients `coef[o][0..=L]` and optionally an extra input word `e_o` (the
//! output limb's own previous content), each output word is
//!
//! ```text
//! y_i = [x_i * w_i]_{q_i}  (canonical),      h = #{ i : y_i > floor(q_i / 2) },
//! out_o = ( sum_i y_i * coef[o][i] + h * coef[o][L] + e_o * ew_o ) mod p_o    in [0, p_o).
//! ```
//!
//! * Fast base conversion: `w_i = qhat_i^{-1}`, `coef[o][i] = qhat_i mod p_o` and `coef[o][L] =
//!   -Q mod p_o`: `h` centred digits each remove `Q` once, which is the definition on
//!   [`BaseConverter`](super::BaseConverter).
//! * Scale-down: the sources are the dropped limbs with `w_j = t^{-1} dhat_j^{-1}`, `coef[o][j] =
//!   -t d_j^{-1} mod k_o`, `coef[o][L] = t mod k_o` (each centred digit adds `t` back) and the
//!   extra input is the kept limb times `D^{-1}`: the definition on
//!   [`ScaleDown`](super::ScaleDown), one dropped modulus included.
//!
//! Every output is the canonical residue of an exactly defined integer, so this path gives the
//! words of the reference loops (and of the WGSL kernels) whatever the order of the additions.
//!
//! # How
//!
//! * **Lazy 64-bit accumulation, one reduction per output word.** Every product `y_i *
//!   coef[o][i]` is below `(2^30 - 1)^2 < 2^60`, so a `u64` holds the sum of up to
//!   [`MAX_PRODUCTS`] = 16 of them (`16 (2^30 - 1)^2 = 2^64 - 2^35 + 16`). The kernel adds at
//!   most [`ROWS_PER_REDUCTION`] = 15 digit products between two reductions, which leaves room
//!   (more than `2^60`) for the reduced remainder of an earlier chunk (`< 2^30`), the centring
//!   term `h * coef < L 2^30` and the extra term (`< 2^31`, already reduced to `[0, 2 p_o)`):
//!   with at most 15 source limbs (every shipped digit and every set of special primes) there is
//!   no intermediate reduction at all.
//! * **The reduction** of `a = hi 2^32 + lo < 2^64` modulo `p < 2^30` is two Shoup products:
//!   `hi * (2^32 mod p)` and `lo * 1`, each lazily in `[0, 2p)`, then two conditional
//!   subtractions: only 32x32->64 multiplications, so it vectorises (see [`reduce_acc`]).
//! * **Tiles.** The coefficients are processed in tiles of `T` (a multiple of 64, about 16 KiB
//!   of digits); for each tile the `L` digits `y_i` and the count `h` are computed once and
//!   stored widened to `u64` (so the multiply-accumulate loop needs no shuffles), then every
//!   output limb of the tile is produced from these L1-resident rows.
//! * **Precomputed constants** only ([`Plan`], built with the converter); the per-call buffers
//!   are the tile's rows.
//! * **SIMD**: the same kernel at AVX2 and AVX-512 in `x86.rs`, chosen at run time
//!   ([`SimdLevel`]); this file holds the portable version. With several rayon threads the
//!   coefficient range is split between them.

#![expect(
    clippy::indexing_slicing,
    reason = "tile-local indices below the tile length and row indices below the row count, \
              both fixed by the plan; the callers check the slice lengths on entry"
)]

use rayon::prelude::*;

use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

#[cfg(target_arch = "x86_64")]
mod x86;

/// Products of two values below `2^30` that a `u64` can hold:
/// `16 (2^30 - 1)^2 = 2^64 - 2^35 + 16 < 2^64`, while 17 could overflow.
pub const MAX_PRODUCTS: usize = 16;

/// Digit products added between two reductions of an accumulator (one below [`MAX_PRODUCTS`],
/// so that a reduced remainder `< 2^30`, the centring term `h * coef < L 2^30` and the extra
/// term `< 2^31` fit in the slack of more than `2^60`).
pub const ROWS_PER_REDUCTION: usize = 15;

/// Bytes of digit rows per tile (the tile's `(L + 1) * T` widened words).
const TILE_BYTES: usize = 16 << 10;

/// A source limb: the Shoup constant that makes its digit and the centring threshold.
#[derive(Debug, Clone, Copy)]
pub(super) struct SrcLimb {
    pub(super) q: u32,
    pub(super) w: u32,
    pub(super) ws: u32,
    pub(super) half: u32,
}

/// An output limb: its modulus, the constants of [`reduce_acc`] and the factor of the extra
/// input (zero when there is none).
#[derive(Debug, Clone, Copy)]
pub(super) struct DstLimb {
    pub(super) p: u32,
    /// `2^32 mod p` and its Shoup companion.
    pub(super) r32: u32,
    pub(super) r32s: u32,
    /// `floor(2^32 / p)`, the Shoup companion of 1.
    pub(super) one_s: u32,
    /// The factor of the extra input and its Shoup companion.
    pub(super) ew: u32,
    pub(super) ews: u32,
}

impl DstLimb {
    pub(super) fn new(p: &Modulus, ew: u32) -> Self {
        let r32 = p.reduce_u64(1 << 32);
        Self { p: p.value(), r32, r32s: p.shoup(r32), one_s: p.shoup(1 % p.value()), ew, ews: p.shoup(ew) }
    }
}

/// Where the extra input words `e_o` come from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Extra<'a> {
    /// No extra term.
    None,
    /// The output limbs' own words on entry.
    InPlace,
    /// A separate array of the output's shape (`M * n` words, limb-major).
    From(&'a [u32]),
}

/// The precomputed constants of one conversion (see the module documentation).
#[derive(Debug, Clone)]
pub(super) struct Plan {
    pub(super) src: Vec<SrcLimb>,
    pub(super) dst: Vec<DstLimb>,
    /// `coef[o * (L + 1) + r]`, in `[0, p_o)` (the kernels broadcast them from memory).
    pub(super) coef: Vec<u32>,
    /// Coefficients per tile, a multiple of 64 (whole blocks of the vector kernels).
    pub(super) tile: usize,
}

impl Plan {
    /// A plan from its limbs and the coefficient rows (`dst.len()` rows of `src.len() + 1`).
    pub(super) fn new(src: Vec<SrcLimb>, dst: Vec<DstLimb>, coef: Vec<u32>) -> Self {
        let row_bytes = (src.len() + 1) * 8;
        let tile = (TILE_BYTES / row_bytes).clamp(64, 1024) & !63;
        Self { src, dst, coef, tile }
    }

    /// Runs the conversion on `n` coefficients: `src` holds the `L` source limbs (`L * n`
    /// words), `out` receives the `M` output limbs (`M * n` words), `extra` says where the extra
    /// inputs are. Lengths are checked by the callers.
    pub(super) fn run(&self, level: SimdLevel, src: &[u32], n: usize, out: &mut [u32], extra: Extra<'_>) {
        if n == 0 || self.dst.is_empty() {
            return;
        }
        let limbs: Vec<&mut [u32]> = out.chunks_exact_mut(n).collect();
        let parts = rayon::current_num_threads().min(n.div_ceil(self.tile)).max(1);
        if parts == 1 {
            let mut limbs = limbs;
            self.run_range(level, src, n, 0, &mut limbs, extra);
            return;
        }
        // Split the coefficients into `parts` ranges of whole tiles; each range owns its piece of
        // every output limb.
        let per = n.div_ceil(parts).div_ceil(self.tile) * self.tile;
        let mut ranges: Vec<(usize, Vec<&mut [u32]>)> = (0..n.div_ceil(per)).map(|r| (r * per, Vec::new())).collect();
        for limb in limbs {
            for ((_, pieces), piece) in ranges.iter_mut().zip(limb.chunks_mut(per)) {
                pieces.push(piece);
            }
        }
        ranges.into_par_iter().for_each(|(c0, mut pieces)| self.run_range(level, src, n, c0, &mut pieces, extra));
    }

    /// The conversion of coefficients `c0 .. c0 + out[o].len()` (every piece the same length).
    fn run_range(&self, level: SimdLevel, src: &[u32], n: usize, c0: usize, out: &mut [&mut [u32]], extra: Extra<'_>) {
        #[cfg(target_arch = "x86_64")]
        {
            let level = level.clamp();
            if level >= SimdLevel::Avx512 {
                if let Some(s) = pulp::x86::V4::try_new() {
                    return x86::run_v4(s, self, src, n, c0, out, extra);
                }
            }
            if level >= SimdLevel::Avx2 {
                if let Some(s) = pulp::x86::V3::try_new() {
                    return x86::run_v3(s, self, src, n, c0, out, extra);
                }
            }
        }
        let _ = level;
        self.run_portable(src, n, c0, out, extra);
    }

    /// The portable kernel: the same tiles, rows and reductions in plain Rust.
    fn run_portable(&self, src: &[u32], n: usize, c0: usize, out: &mut [&mut [u32]], extra: Extra<'_>) {
        let l = self.src.len();
        let len = out.first().map_or(0, |o| o.len());
        let t = self.tile;
        let mut rows = vec![0u64; (l + 1) * t];
        let mut acc = vec![0u64; t];
        for start in (0..len).step_by(t) {
            let width = t.min(len - start);
            // Digits and the centring count of the tile.
            let (digits, count) = rows.split_at_mut(l * t);
            count.fill(0);
            for ((s, x), row) in self.src.iter().zip(src.chunks_exact(n)).zip(digits.chunks_exact_mut(t)) {
                let x = &x[c0 + start..c0 + start + width];
                for ((r, h), &x) in row.iter_mut().zip(count.iter_mut()).zip(x) {
                    let y = mul_shoup(x, s.w, s.ws, s.q);
                    *r = u64::from(y);
                    *h += u64::from(y > s.half);
                }
            }
            let (digits, count) = rows.split_at(l * t);
            for (oi, ((o, d), coef)) in out.iter_mut().zip(&self.dst).zip(self.coef.chunks_exact(l + 1)).enumerate() {
                let (coef, count_coef) = coef.split_at(l);
                let acc = &mut acc[..width];
                acc.fill(0);
                for (i, (chunk, cs)) in
                    digits.chunks(ROWS_PER_REDUCTION * t).zip(coef.chunks(ROWS_PER_REDUCTION)).enumerate()
                {
                    if i > 0 {
                        acc.iter_mut().for_each(|a| *a = u64::from(reduce_acc(*a, d)));
                    }
                    for (row, &k) in chunk.chunks_exact(t).zip(cs) {
                        for (a, &y) in acc.iter_mut().zip(row) {
                            *a += y * u64::from(k);
                        }
                    }
                }
                for (a, &h) in acc.iter_mut().zip(count.iter()) {
                    *a += h * u64::from(count_coef[0]);
                }
                let o = &mut o[start..start + width];
                match extra {
                    Extra::None => {}
                    Extra::InPlace => {
                        for (a, &e) in acc.iter_mut().zip(o.iter()) {
                            *a += u64::from(mul_shoup_lazy(e, d.ew, d.ews, d.p));
                        }
                    }
                    Extra::From(x) => {
                        let x = &x[oi * n + c0 + start..oi * n + c0 + start + width];
                        for (a, &e) in acc.iter_mut().zip(x) {
                            *a += u64::from(mul_shoup_lazy(e, d.ew, d.ews, d.p));
                        }
                    }
                }
                for (word, &a) in o.iter_mut().zip(acc.iter()) {
                    *word = reduce_acc(a, d);
                }
            }
        }
    }
}

/// `a * w mod q` in `[0, 2q)` for any `a: u32` and `w < q` with `ws = floor(w 2^32 / q)`.
#[inline(always)]
pub(super) fn mul_shoup_lazy(a: u32, w: u32, ws: u32, q: u32) -> u32 {
    let quot = ((u64::from(a) * u64::from(ws)) >> 32) as u32;
    a.wrapping_mul(w).wrapping_sub(quot.wrapping_mul(q))
}

/// `a * w mod q` in `[0, q)`.
#[inline(always)]
fn mul_shoup(a: u32, w: u32, ws: u32, q: u32) -> u32 {
    let r = mul_shoup_lazy(a, w, ws, q);
    r.min(r.wrapping_sub(q))
}

/// `a mod p` in `[0, p)` for any `a: u64`: with `a = hi 2^32 + lo`, `hi 2^32 = hi (2^32 mod p)`
/// and `lo = lo * 1` are each reduced to `[0, 2p)` by a Shoup product, and their sum (`< 4p <
/// 2^32`) by two conditional subtractions. (The vector kernels compute exactly this.)
#[inline(always)]
pub(super) fn reduce_acc(a: u64, d: &DstLimb) -> u32 {
    let t = mul_shoup_lazy((a >> 32) as u32, d.r32, d.r32s, d.p);
    let lo = a as u32;
    let l = lo.wrapping_sub((((u64::from(lo) * u64::from(d.one_s)) >> 32) as u32).wrapping_mul(d.p));
    let s = t + l;
    let s = s.min(s.wrapping_sub(2 * d.p));
    s.min(s.wrapping_sub(d.p))
}
