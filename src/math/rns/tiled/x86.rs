//! The tiled conversion kernel of `tiled.rs` with explicit SIMD for x86-64: AVX-512
//! (`pulp::x86::V4`: 16 `u32` / 8 `u64` lanes) and AVX2 (`pulp::x86::V3`: 8 / 4 lanes).
//!
//! Per tile and source limb, the digits `y = [x w]_q` (Shoup, 32-bit lanes) are counted against
//! `floor(q / 2)` and widened to 64-bit lanes; per output limb, `vpmuludq` multiplies the rows by
//! the broadcast coefficients into 64-bit accumulators, which `reduce` brings to `[0, p)` with the
//! two Shoup products of `tiled::reduce_acc`, lane by lane. The words are those of the portable
//! kernel.

#![expect(
    clippy::indexing_slicing,
    reason = "tile-local indices: steps of W words below the tile length, rows below the row \
              count; the callers check the slice lengths on entry"
)]

use core::arch::x86_64::{__m256i, __m512i};

use pulp::cast;
use pulp::x86::{V3, V4};

use super::{Extra, Plan, ROWS_PER_REDUCTION};

/// The vector operations of one instruction-set level.
trait Lanes: Copy {
    /// A vector: `W` 32-bit or `W / 2` 64-bit lanes.
    type V: Copy;
    /// 32-bit lanes per vector.
    const W: usize;
    /// `W / 2` words of 64 bits (one vector).
    type A64: Copy;

    /// `x` as vectors of 64-bit words (`x.len()` a multiple of `W / 2`).
    fn as64(x: &[u64]) -> &[Self::A64];
    fn ld64a(self, x: &Self::A64) -> Self::V;

    /// Loads `x[..W]`.
    fn ld32(self, x: &[u32]) -> Self::V;
    /// Stores into `x[..W]`.
    fn st32(self, x: &mut [u32], v: Self::V);
    /// Stores into `x[..W / 2]`.
    fn st64(self, x: &mut [u64], v: Self::V);
    fn splat32(self, x: u32) -> Self::V;
    fn splat64(self, x: u64) -> Self::V;
    fn zero64(self) -> Self::V;

    /// `a * w mod q` in `[0, 2q)` lane-wise (Shoup, `w`, `ws`, `q` broadcast).
    fn mul_shoup_lazy(self, a: Self::V, w: Self::V, ws: Self::V, q: Self::V) -> Self::V;
    /// `min(a, a - q)` lane-wise: `a mod q` for `a < 2q`.
    fn reduce32(self, a: Self::V, q: Self::V) -> Self::V;
    /// `count + (y > half)` lane-wise (values below `2^31`).
    fn count_above(self, count: Self::V, y: Self::V, half: Self::V) -> Self::V;
    /// The low and the high half of the lanes, zero-extended to 64 bits.
    fn widen(self, v: Self::V) -> (Self::V, Self::V);
    /// The low 32 bits of the lanes of `lo` then `hi`, in order.
    fn narrow(self, lo: Self::V, hi: Self::V) -> Self::V;

    /// `a + (b mod 2^32) * (c mod 2^32)` on 64-bit lanes (`vpmuludq`, `vpaddq`).
    fn mac(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a * b` of the low 32 bits of the 64-bit lanes, as 64-bit products.
    fn mul64(self, a: Self::V, b: Self::V) -> Self::V;
    fn add64(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a >> 32` on 64-bit lanes.
    fn high64(self, a: Self::V) -> Self::V;
    /// `a & (2^32 - 1)` on 64-bit lanes.
    fn low64(self, a: Self::V) -> Self::V;
    /// 32-bit lane-wise (on the words of the 64-bit lanes) `a - b`, `a + b`, `min(a, b)`.
    fn sub_w(self, a: Self::V, b: Self::V) -> Self::V;
    fn add_w(self, a: Self::V, b: Self::V) -> Self::V;
    fn min_w(self, a: Self::V, b: Self::V) -> Self::V;
}

/// The reduction constants of one output limb, broadcast (see `tiled::reduce_acc`).
#[derive(Clone, Copy)]
struct Red<V> {
    p: V,
    two_p: V,
    r32: V,
    r32s: V,
    one_s: V,
}

/// `a mod p` on 64-bit lanes, in the low word of each lane (the high word is left unspecified):
/// `tiled::reduce_acc` lane by lane.
#[inline(always)]
fn reduce<K: Lanes>(k: K, a: K::V, r: Red<K::V>) -> K::V {
    let hi = k.high64(a);
    let quot = k.high64(k.mul64(hi, r.r32s));
    let t = k.sub_w(k.mul64(hi, r.r32), k.mul64(quot, r.p));
    let quot = k.high64(k.mul64(a, r.one_s));
    let l = k.sub_w(a, k.mul64(quot, r.p));
    let s = k.add_w(t, l);
    let s = k.min_w(s, k.sub_w(s, r.two_p));
    k.min_w(s, k.sub_w(s, r.p))
}

/// The kernel on coefficients `c0 .. c0 + out[o].len()` (see `Plan::run`), `A` accumulators
/// (`A / 2` vectors of coefficients) per output block, kept in registers while the rows stream by.
#[inline(always)]
fn run<K: Lanes, const A: usize>(
    k: K,
    plan: &Plan,
    src: &[u32],
    n: usize,
    c0: usize,
    out: &mut [&mut [u32]],
    extra: Extra<'_>,
) {
    let w = K::W;
    let hw = w / 2;
    let block = A * hw;
    let l = plan.src.len();
    let t = plan.tile;
    let len = out.first().map_or(0, |o| o.len());
    // Digit rows (row l: the centring count), widened; and the counts while they are summed.
    let mut rows = vec![0u64; (l + 1) * t];
    let mut counts = vec![0u32; t];
    // A zero-padded copy of a partial vector at the end of the range.
    let mut part = [0u32; 16];
    for start in (0..len).step_by(t) {
        let width = t.min(len - start);
        let steps = width.div_ceil(w);
        counts.fill(0);
        for (i, s) in plan.src.iter().enumerate() {
            let x = &src[i * n + c0 + start..i * n + c0 + start + width];
            let (wv, wsv, qv, half) = (k.splat32(s.w), k.splat32(s.ws), k.splat32(s.q), k.splat32(s.half));
            let row = &mut rows[i * t..(i + 1) * t];
            for st in 0..steps {
                let xv = if (st + 1) * w <= width {
                    k.ld32(&x[st * w..])
                } else {
                    part = [0; 16];
                    part[..width - st * w].copy_from_slice(&x[st * w..]);
                    k.ld32(&part)
                };
                let y = k.reduce32(k.mul_shoup_lazy(xv, wv, wsv, qv), qv);
                let c = &mut counts[st * w..];
                k.st32(c, k.count_above(k.ld32(c), y, half));
                let (lo, hi) = k.widen(y);
                k.st64(&mut row[st * w..], lo);
                k.st64(&mut row[st * w + hw..], hi);
            }
        }
        for st in 0..steps {
            let (lo, hi) = k.widen(k.ld32(&counts[st * w..]));
            k.st64(&mut rows[l * t + st * w..], lo);
            k.st64(&mut rows[l * t + st * w + hw..], hi);
        }
        let (digits, count) = rows.split_at(l * t);
        for (oi, ((o, d), coef)) in out.iter_mut().zip(&plan.dst).zip(plan.coef.chunks_exact(l + 1)).enumerate() {
            let r = Red {
                p: k.splat64(u64::from(d.p)),
                two_p: k.splat64(u64::from(2 * d.p)),
                r32: k.splat64(u64::from(d.r32)),
                r32s: k.splat64(u64::from(d.r32s)),
                one_s: k.splat64(u64::from(d.one_s)),
            };
            let (p32, ew, ews) = (k.splat32(d.p), k.splat32(d.ew), k.splat32(d.ews));
            let (coef, count_coef) = coef.split_at(l);
            let o = &mut o[start..start + width];
            // Blocks of `block` coefficients (the rows are padded to whole blocks).
            for b0 in (0..width).step_by(block) {
                let mut acc = [k.zero64(); A];
                // At most ROWS_PER_REDUCTION digit products between two reductions.
                for (ci, (chunk, cs)) in
                    digits.chunks(ROWS_PER_REDUCTION * t).zip(coef.chunks(ROWS_PER_REDUCTION)).enumerate()
                {
                    if ci > 0 {
                        for a in &mut acc {
                            *a = k.low64(reduce(k, *a, r));
                        }
                    }
                    for (row, &c) in chunk.chunks_exact(t).zip(cs) {
                        let c = k.splat32(c);
                        for (a, v) in acc.iter_mut().zip(K::as64(&row[b0..b0 + block])) {
                            *a = k.mac(*a, k.ld64a(v), c);
                        }
                    }
                }
                let c = k.splat32(count_coef[0]);
                for (a, v) in acc.iter_mut().zip(K::as64(&count[b0..b0 + block])) {
                    *a = k.mac(*a, k.ld64a(v), c);
                }
                for (j, pair) in acc.chunks_exact(2).enumerate() {
                    let at = b0 + j * w;
                    if at >= width {
                        break;
                    }
                    let full = at + w <= width;
                    let (mut lo, mut hi) = (pair[0], pair[1]);
                    let e_src = match extra {
                        Extra::None => None,
                        Extra::InPlace => Some(&o[at..]),
                        Extra::From(x) => Some(&x[oi * n + c0 + start + at..oi * n + c0 + start + width]),
                    };
                    if let Some(e_src) = e_src {
                        let e = if full {
                            k.ld32(e_src)
                        } else {
                            part = [0; 16];
                            part[..width - at].copy_from_slice(e_src);
                            k.ld32(&part)
                        };
                        let (elo, ehi) = k.widen(k.mul_shoup_lazy(e, ew, ews, p32));
                        lo = k.add64(lo, elo);
                        hi = k.add64(hi, ehi);
                    }
                    let res = k.narrow(reduce(k, lo, r), reduce(k, hi, r));
                    if full {
                        k.st32(&mut o[at..], res);
                    } else {
                        k.st32(&mut part, res);
                        o[at..].copy_from_slice(&part[..width - at]);
                    }
                }
            }
        }
    }
}

impl Lanes for V4 {
    type V = __m512i;
    const W: usize = 16;
    type A64 = [u64; 8];

    #[inline(always)]
    fn as64(x: &[u64]) -> &[[u64; 8]] {
        pulp::as_arrays::<8, u64>(x).0
    }
    #[inline(always)]
    fn ld64a(self, x: &[u64; 8]) -> __m512i {
        cast(*x)
    }

    #[inline(always)]
    fn ld32(self, x: &[u32]) -> __m512i {
        let mut a = [0u32; 16];
        a.copy_from_slice(&x[..16]);
        cast(a)
    }
    #[inline(always)]
    fn st32(self, x: &mut [u32], v: __m512i) {
        x[..16].copy_from_slice(&cast::<__m512i, [u32; 16]>(v));
    }
    #[inline(always)]
    fn st64(self, x: &mut [u64], v: __m512i) {
        x[..8].copy_from_slice(&cast::<__m512i, [u64; 8]>(v));
    }
    #[inline(always)]
    fn splat32(self, x: u32) -> __m512i {
        self.avx512f._mm512_set1_epi32(x as i32)
    }
    #[inline(always)]
    fn splat64(self, x: u64) -> __m512i {
        self.avx512f._mm512_set1_epi64(x as i64)
    }
    #[inline(always)]
    fn zero64(self) -> __m512i {
        self.avx512f._mm512_setzero_si512()
    }
    #[inline(always)]
    fn mul_shoup_lazy(self, a: __m512i, w: __m512i, ws: __m512i, q: __m512i) -> __m512i {
        let f = self.avx512f;
        let even = f._mm512_mul_epu32(a, ws);
        let odd = f._mm512_mul_epu32(f._mm512_srli_epi64::<32>(a), ws);
        // High words: odd lanes in place in `odd`, even lanes moved down from `even`.
        let quot = f._mm512_mask_shuffle_epi32::<0xF5>(odd, 0x5555, even);
        f._mm512_sub_epi32(f._mm512_mullo_epi32(a, w), f._mm512_mullo_epi32(quot, q))
    }
    #[inline(always)]
    fn reduce32(self, a: __m512i, q: __m512i) -> __m512i {
        let f = self.avx512f;
        f._mm512_min_epu32(a, f._mm512_sub_epi32(a, q))
    }
    #[inline(always)]
    fn count_above(self, count: __m512i, y: __m512i, half: __m512i) -> __m512i {
        let f = self.avx512f;
        let above = f._mm512_cmpgt_epu32_mask(y, half);
        f._mm512_mask_add_epi32(count, above, count, f._mm512_set1_epi32(1))
    }
    #[inline(always)]
    fn widen(self, v: __m512i) -> (__m512i, __m512i) {
        let f = self.avx512f;
        (
            f._mm512_cvtepu32_epi64(f._mm512_castsi512_si256(v)),
            f._mm512_cvtepu32_epi64(f._mm512_extracti64x4_epi64::<1>(v)),
        )
    }
    #[inline(always)]
    fn narrow(self, lo: __m512i, hi: __m512i) -> __m512i {
        let idx: [u32; 16] = core::array::from_fn(|i| 2 * i as u32);
        self.avx512f._mm512_permutex2var_epi32(lo, cast(idx), hi)
    }
    #[inline(always)]
    fn mac(self, a: __m512i, b: __m512i, c: __m512i) -> __m512i {
        let f = self.avx512f;
        f._mm512_add_epi64(a, f._mm512_mul_epu32(b, c))
    }
    #[inline(always)]
    fn mul64(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_mul_epu32(a, b)
    }
    #[inline(always)]
    fn add64(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_add_epi64(a, b)
    }
    #[inline(always)]
    fn high64(self, a: __m512i) -> __m512i {
        self.avx512f._mm512_srli_epi64::<32>(a)
    }
    #[inline(always)]
    fn low64(self, a: __m512i) -> __m512i {
        let f = self.avx512f;
        f._mm512_and_si512(a, f._mm512_set1_epi64(0xffff_ffff))
    }
    #[inline(always)]
    fn sub_w(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_sub_epi32(a, b)
    }
    #[inline(always)]
    fn add_w(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_add_epi32(a, b)
    }
    #[inline(always)]
    fn min_w(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_min_epu32(a, b)
    }
}

impl Lanes for V3 {
    type V = __m256i;
    const W: usize = 8;
    type A64 = [u64; 4];

    #[inline(always)]
    fn as64(x: &[u64]) -> &[[u64; 4]] {
        pulp::as_arrays::<4, u64>(x).0
    }
    #[inline(always)]
    fn ld64a(self, x: &[u64; 4]) -> __m256i {
        cast(*x)
    }

    #[inline(always)]
    fn ld32(self, x: &[u32]) -> __m256i {
        let mut a = [0u32; 8];
        a.copy_from_slice(&x[..8]);
        cast(a)
    }
    #[inline(always)]
    fn st32(self, x: &mut [u32], v: __m256i) {
        x[..8].copy_from_slice(&cast::<__m256i, [u32; 8]>(v));
    }
    #[inline(always)]
    fn st64(self, x: &mut [u64], v: __m256i) {
        x[..4].copy_from_slice(&cast::<__m256i, [u64; 4]>(v));
    }
    #[inline(always)]
    fn splat32(self, x: u32) -> __m256i {
        self.avx._mm256_set1_epi32(x as i32)
    }
    #[inline(always)]
    fn splat64(self, x: u64) -> __m256i {
        self.avx._mm256_set1_epi64x(x as i64)
    }
    #[inline(always)]
    fn zero64(self) -> __m256i {
        self.avx._mm256_setzero_si256()
    }
    #[inline(always)]
    fn mul_shoup_lazy(self, a: __m256i, w: __m256i, ws: __m256i, q: __m256i) -> __m256i {
        let f = self.avx2;
        let even = f._mm256_mul_epu32(a, ws);
        let odd = f._mm256_mul_epu32(f._mm256_srli_epi64::<32>(a), ws);
        let quot = f._mm256_blend_epi32::<0b1010_1010>(f._mm256_srli_epi64::<32>(even), odd);
        f._mm256_sub_epi32(f._mm256_mullo_epi32(a, w), f._mm256_mullo_epi32(quot, q))
    }
    #[inline(always)]
    fn reduce32(self, a: __m256i, q: __m256i) -> __m256i {
        let f = self.avx2;
        f._mm256_min_epu32(a, f._mm256_sub_epi32(a, q))
    }
    #[inline(always)]
    fn count_above(self, count: __m256i, y: __m256i, half: __m256i) -> __m256i {
        // Both below 2^31, so the signed comparison is the unsigned one; true lanes are -1.
        let f = self.avx2;
        f._mm256_sub_epi32(count, f._mm256_cmpgt_epi32(y, half))
    }
    #[inline(always)]
    fn widen(self, v: __m256i) -> (__m256i, __m256i) {
        let f = self.avx2;
        (
            f._mm256_cvtepu32_epi64(self.avx._mm256_castsi256_si128(v)),
            f._mm256_cvtepu32_epi64(f._mm256_extracti128_si256::<1>(v)),
        )
    }
    #[inline(always)]
    fn narrow(self, lo: __m256i, hi: __m256i) -> __m256i {
        // Words 0, 2 of each 128-bit half of `lo`, then of `hi`: (c0 c1 c4 c5 | c2 c3 c6 c7);
        // then the 64-bit pairs in the order 0, 2, 1, 3.
        let a = self.avx;
        let mixed = a._mm256_castps_si256(
            a._mm256_shuffle_ps::<0b10_00_10_00>(a._mm256_castsi256_ps(lo), a._mm256_castsi256_ps(hi)),
        );
        self.avx2._mm256_permute4x64_epi64::<0b11_01_10_00>(mixed)
    }
    #[inline(always)]
    fn mac(self, a: __m256i, b: __m256i, c: __m256i) -> __m256i {
        let f = self.avx2;
        f._mm256_add_epi64(a, f._mm256_mul_epu32(b, c))
    }
    #[inline(always)]
    fn mul64(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_mul_epu32(a, b)
    }
    #[inline(always)]
    fn add64(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_add_epi64(a, b)
    }
    #[inline(always)]
    fn high64(self, a: __m256i) -> __m256i {
        self.avx2._mm256_srli_epi64::<32>(a)
    }
    #[inline(always)]
    fn low64(self, a: __m256i) -> __m256i {
        let f = self.avx2;
        f._mm256_and_si256(a, self.avx._mm256_set1_epi64x(0xffff_ffff))
    }
    #[inline(always)]
    fn sub_w(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_sub_epi32(a, b)
    }
    #[inline(always)]
    fn add_w(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_add_epi32(a, b)
    }
    #[inline(always)]
    fn min_w(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_min_epu32(a, b)
    }
}

/// The kernel at AVX-512.
pub(super) fn run_v4(s: V4, plan: &Plan, src: &[u32], n: usize, c0: usize, out: &mut [&mut [u32]], extra: Extra<'_>) {
    struct Op<'a, 'b>(V4, &'a Plan, &'a [u32], usize, usize, &'a mut [&'b mut [u32]], Extra<'a>);
    impl pulp::NullaryFnOnce for Op<'_, '_> {
        type Output = ();
        #[inline(always)]
        fn call(self) {
            run::<V4, 8>(self.0, self.1, self.2, self.3, self.4, self.5, self.6);
        }
    }
    s.vectorize(Op(s, plan, src, n, c0, out, extra));
}

/// The kernel at AVX2.
pub(super) fn run_v3(s: V3, plan: &Plan, src: &[u32], n: usize, c0: usize, out: &mut [&mut [u32]], extra: Extra<'_>) {
    struct Op<'a, 'b>(V3, &'a Plan, &'a [u32], usize, usize, &'a mut [&'b mut [u32]], Extra<'a>);
    impl pulp::NullaryFnOnce for Op<'_, '_> {
        type Output = ();
        #[inline(always)]
        fn call(self) {
            run::<V3, 4>(self.0, self.1, self.2, self.3, self.4, self.5, self.6);
        }
    }
    s.vectorize(Op(s, plan, src, n, c0, out, extra));
}
