//! Explicit-SIMD forward and inverse NTT for x86-64: AVX-512 (`pulp::x86::V4`, 16 `u32` lanes)
//! and AVX2 (`pulp::x86::V3`, 8 lanes), through `pulp`'s safe intrinsics.
//!
//! Both run exactly the butterflies of the specification in the parent module (Harvey's lazy
//! butterflies with Shoup twiddles, same stages, same twiddle per block), only grouped
//! differently, so every intermediate value and every output, lazy or strict, is the same word
//! as the scalar path's:
//!
//! * **Cache blocking.** Stages whose blocks are larger than [`BLOCK`] words run over the whole
//!   array, two stages per pass (radix-4: four quarter-blocks loaded, two butterfly layers, one
//!   store) so that an array living in L2 is read and written half as often. Then, one
//!   [`BLOCK`]-word chunk at a time (it stays in L1), the remaining stages down to half-blocks of
//!   one vector, again two per pass, and the tail.
//! * **Tail in registers.** The last `log2(LANES)` stages (half-blocks shorter than a vector)
//!   run on groups of two vectors held in registers. Before each stage the group is permuted
//!   (one two-source permutation per output vector: `vpermt2d` at AVX-512, two `vpermd` and a
//!   blend at AVX2) into a layout where the stage pairs lane `k` of the first vector with lane
//!   `k` of the second, and where lane `k`'s twiddle is entry `k mod r` of `r` consecutive table
//!   entries, so the twiddle vectors are plain broadcasts from memory (64-, 128-, 256-bit or a
//!   full load), never shuffled. The last permutation restores the natural order. Each group is
//!   one long dependency chain, so [`TAIL_GROUPS`] groups are interleaved per iteration.
//! * **Butterflies** on full vectors: `mul_shoup_lazy` takes the high words of the products with
//!   the Shoup companion from two `vpmuludq` (even and odd lanes) and the low words with
//!   `vpmulld`; everything else is 32-bit adds, subtracts and unsigned minima.
//!
//! Arrays shorter than two vectors (N < 32 for AVX-512, N < 16 for AVX2) go to the portable path.

#![expect(
    clippy::indexing_slicing,
    reason = "twiddle ranges m..2m with m < N (tables of length N) and vector indices below the \
              vector count; the callers check the array length against the table on entry"
)]

use core::arch::x86_64::{__m128i, __m256i, __m512i};

use pulp::x86::{V3, V4};
use pulp::{as_arrays, as_arrays_mut, cast};

/// Words per cache block: the stages with blocks of at most this many words run one block at a
/// time (16 KiB of data, comfortably inside L1 with the twiddles).
pub(super) const BLOCK: usize = 1 << 12;

/// Where the 2 x `LANES` words of a tail group sit in its two vectors: element `e` (5 bits for
/// 16 lanes, 4 for 8) is in vector `(e >> pair) & 1`, lane `sum_j ((e >> lanes[j]) & 1) << j`.
#[derive(Clone, Copy)]
struct Layout {
    pair: u32,
    lanes: [u32; 4],
}

/// Natural order, 16 lanes: vector = bit 4, lane = bits 3..0.
const NAT16: Layout = Layout { pair: 4, lanes: [0, 1, 2, 3] };
/// Stage with half-block 8: pairs across bit 3, twiddle index bit 4 in lane bit 0.
const L8_16: Layout = Layout { pair: 3, lanes: [4, 0, 1, 2] };
/// Half-block 4: pairs across bit 2, twiddle index bits 4,3 in lane bits 1,0.
const L4_16: Layout = Layout { pair: 2, lanes: [3, 4, 0, 1] };
/// Half-block 2: pairs across bit 1, twiddle index bits 4,3,2 in lane bits 2,1,0.
const L2_16: Layout = Layout { pair: 1, lanes: [2, 3, 4, 0] };
/// Half-block 1: pairs across bit 0, twiddle index bits 4..1 = lane.
const L1_16: Layout = Layout { pair: 0, lanes: [1, 2, 3, 4] };

/// Natural order, 8 lanes: vector = bit 3, lane = bits 2..0.
const NAT8: Layout = Layout { pair: 3, lanes: [0, 1, 2, 0] };
/// Half-block 4: pairs across bit 2, twiddle index bit 3 in lane bit 0.
const L4_8: Layout = Layout { pair: 2, lanes: [3, 0, 1, 0] };
/// Half-block 2: pairs across bit 1, twiddle index bits 3,2 in lane bits 1,0.
const L2_8: Layout = Layout { pair: 1, lanes: [2, 3, 0, 0] };
/// Half-block 1: pairs across bit 0, twiddle index bits 3..1 = lane.
const L1_8: Layout = Layout { pair: 0, lanes: [1, 2, 3, 0] };

/// The element held by lane `k` of vector `half` in layout `l` (`bits` lane bits).
const fn element(l: Layout, bits: u32, half: u32, k: u32) -> u32 {
    let mut e = half << l.pair;
    let mut j = 0;
    while j < bits {
        e |= ((k >> j) & 1) << l.lanes[j as usize];
        j += 1;
    }
    e
}

/// The vector (0 or 1) and lane holding element `e` in layout `l`.
const fn position(l: Layout, bits: u32, e: u32) -> (u32, u32) {
    let mut k = 0;
    let mut j = 0;
    while j < bits {
        k |= ((e >> l.lanes[j as usize]) & 1) << j;
        j += 1;
    }
    ((e >> l.pair) & 1, k)
}

/// `vpermt2d` indices moving a 16-lane group from layout `from` to vector `half` of `to`:
/// entry `k` is `16 * source vector + source lane` of the element lane `k` must hold.
const fn perm16(from: Layout, to: Layout, half: u32) -> [u32; 16] {
    let mut idx = [0u32; 16];
    let mut k = 0;
    while k < 16 {
        let (v, lane) = position(from, 4, element(to, 4, half, k));
        idx[k as usize] = 16 * v + lane;
        k += 1;
    }
    idx
}

/// Both output vectors of a 16-lane layout change.
const fn perm16_pair(from: Layout, to: Layout) -> [[u32; 16]; 2] {
    [perm16(from, to, 0), perm16(from, to, 1)]
}

/// The forward tail's layout changes: natural -> half-block 8 -> 4 -> 2 -> 1 -> natural.
const FWD16: [[[u32; 16]; 2]; 5] = [
    perm16_pair(NAT16, L8_16),
    perm16_pair(L8_16, L4_16),
    perm16_pair(L4_16, L2_16),
    perm16_pair(L2_16, L1_16),
    perm16_pair(L1_16, NAT16),
];

/// The inverse tail's layout changes: natural -> half-block 1 -> 2 -> 4 -> 8 -> natural.
const INV16: [[[u32; 16]; 2]; 5] = [
    perm16_pair(NAT16, L1_16),
    perm16_pair(L1_16, L2_16),
    perm16_pair(L2_16, L4_16),
    perm16_pair(L4_16, L8_16),
    perm16_pair(L8_16, NAT16),
];

/// The same for 8 lanes, as `(source lanes, blend mask)`: lane `k` takes lane `idx[k]` of
/// vector `(mask >> k) & 1`.
const fn perm8(from: Layout, to: Layout, half: u32) -> ([u32; 8], i32) {
    let mut idx = [0u32; 8];
    let mut mask = 0i32;
    let mut k = 0;
    while k < 8 {
        let (v, lane) = position(from, 3, element(to, 3, half, k));
        idx[k as usize] = lane;
        mask |= (v as i32) << k;
        k += 1;
    }
    (idx, mask)
}

/// A twiddle as the butterflies need it: `w` (per lane), its Shoup companion `ws`, and `ws_odd`,
/// whose 64-bit lanes hold in their low words the companions of the odd lanes (`vpmuludq` reads
/// only the low word of each 64-bit lane). For a broadcast constant `ws_odd = ws`.
#[derive(Clone, Copy)]
struct Tw<V> {
    w: V,
    ws: V,
    ws_odd: V,
}

/// The operations the shared stage loops need from one instruction-set level.
trait Kernel: Copy {
    /// A vector of `u32` lanes.
    type V: Copy;
    /// The same as an array (how the data is viewed).
    type A: Copy;
    /// Lanes per vector.
    const LANES: usize;

    fn vecs(a: &mut [u32]) -> &mut [Self::A];
    fn ld(self, a: &Self::A) -> Self::V;
    fn st(self, a: &mut Self::A, v: Self::V);
    fn splat(self, x: u32) -> Self::V;
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    fn mullo(self, a: Self::V, b: Self::V) -> Self::V;
    /// High words of the lane products `a * b`, with `b_odd` as described on [`Tw`].
    fn mulhi(self, a: Self::V, b: Self::V, b_odd: Self::V) -> Self::V;

    /// `log2(LANES)`: the number of tail stages.
    const BITS: usize;
    /// A layout change of a tail group (see the module documentation).
    type P: Copy;
    /// The tail's `BITS + 1` layout changes (natural order, each stage's layout in the order the
    /// stages run, natural order), padded to five.
    fn perms(self, inv: bool) -> [Self::P; 5];
    /// Applies a layout change to a group.
    fn permute(self, z: (Self::V, Self::V), p: Self::P) -> (Self::V, Self::V);
    /// A tail stage's twiddles for one group: lane `k` takes table entry `i + k mod r` (`r` in
    /// `2, 4, .., LANES`), from broadcasts.
    fn tail_tw(self, r: usize, w: &[u32], ws: &[u32], i: usize) -> Tw<Self::V>;

    /// A broadcast twiddle.
    #[inline(always)]
    fn tw(self, w: u32, ws: u32) -> Tw<Self::V> {
        let ws = self.splat(ws);
        Tw { w: self.splat(w), ws, ws_odd: ws }
    }

    /// `a * w mod q` in `[0, 2q)` (Shoup), lane-wise: the scalar `mul_shoup_lazy`.
    #[inline(always)]
    fn mul_shoup(self, a: Self::V, t: Tw<Self::V>, q: Self::V) -> Self::V {
        let quot = self.mulhi(a, t.ws, t.ws_odd);
        self.sub(self.mullo(a, t.w), self.mullo(quot, q))
    }

    /// `x mod q` for `x < 2q`: the scalar `reduce_2q`.
    #[inline(always)]
    fn reduce(self, x: Self::V, q: Self::V) -> Self::V {
        self.min(x, self.sub(x, q))
    }

    /// The scalar `fwd_butterfly`, lane-wise.
    #[inline(always)]
    fn fwd_bf(self, x: Self::V, y: Self::V, t: Tw<Self::V>, q: Self::V, two_q: Self::V) -> (Self::V, Self::V) {
        let x = self.reduce(x, two_q);
        let u = self.mul_shoup(y, t, q);
        (self.add(x, u), self.sub(self.add(x, two_q), u))
    }

    /// The scalar `inv_butterfly`, lane-wise.
    #[inline(always)]
    fn inv_bf(self, x: Self::V, y: Self::V, t: Tw<Self::V>, q: Self::V, two_q: Self::V) -> (Self::V, Self::V) {
        let s = self.reduce(self.add(x, y), two_q);
        let d = self.sub(self.add(x, two_q), y);
        (s, self.mul_shoup(d, t, q))
    }

    /// The last inverse stage's butterfly (`N^{-1}` folded in), reduced to `[0, q)` if `strict`.
    #[inline(always)]
    #[expect(clippy::too_many_arguments, reason = "vectors and constants of one butterfly")]
    fn inv_last_bf(
        self,
        x: Self::V,
        y: Self::V,
        t0: Tw<Self::V>,
        t1: Tw<Self::V>,
        q: Self::V,
        two_q: Self::V,
        strict: bool,
    ) -> (Self::V, Self::V) {
        let u = self.mul_shoup(self.add(x, y), t0, q);
        let v = self.mul_shoup(self.sub(self.add(x, two_q), y), t1, q);
        if strict {
            (self.reduce(u, q), self.reduce(v, q))
        } else {
            (u, v)
        }
    }
}

/// One forward stage over `v`: blocks of `2 tv` vectors, block `i` with twiddle `(w[i], ws[i])`.
#[inline(always)]
fn fwd_r2<K: Kernel>(k: K, v: &mut [K::A], tv: usize, w: &[u32], ws: &[u32], q: u32) {
    let (qv, two_q) = (k.splat(q), k.splat(q << 1));
    for ((block, &w), &ws) in v.chunks_exact_mut(2 * tv).zip(w).zip(ws) {
        let t = k.tw(w, ws);
        let (xs, ys) = block.split_at_mut(tv);
        for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
            let (a, b) = k.fwd_bf(k.ld(x), k.ld(y), t, qv, two_q);
            k.st(x, a);
            k.st(y, b);
        }
    }
}

/// Two forward stages over `v` in one pass: blocks of `4 hv` vectors (quarters `a0..a3`); block
/// `i` runs the first stage on `(a0, a2)`, `(a1, a3)` with `(w1[i], ws1[i])`, then the second on
/// `(a0, a1)` with entry `2i` of `(w2, ws2)` and on `(a2, a3)` with entry `2i + 1`.
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "data, sizes and the two stages' twiddles")]
fn fwd_r4<K: Kernel>(k: K, v: &mut [K::A], hv: usize, w1: &[u32], ws1: &[u32], w2: &[u32], ws2: &[u32], q: u32) {
    let (qv, two_q) = (k.splat(q), k.splat(q << 1));
    let w2 = as_arrays::<2, u32>(w2).0;
    let ws2 = as_arrays::<2, u32>(ws2).0;
    for (((block, (&w1, &ws1)), w2), ws2) in v.chunks_exact_mut(4 * hv).zip(w1.iter().zip(ws1)).zip(w2).zip(ws2) {
        let t1 = k.tw(w1, ws1);
        let t2a = k.tw(w2[0], ws2[0]);
        let t2b = k.tw(w2[1], ws2[1]);
        let (a01, a23) = block.split_at_mut(2 * hv);
        let (a0, a1) = a01.split_at_mut(hv);
        let (a2, a3) = a23.split_at_mut(hv);
        for (((x0, x1), x2), x3) in a0.iter_mut().zip(a1.iter_mut()).zip(a2.iter_mut()).zip(a3.iter_mut()) {
            let (b0, b2) = k.fwd_bf(k.ld(x0), k.ld(x2), t1, qv, two_q);
            let (b1, b3) = k.fwd_bf(k.ld(x1), k.ld(x3), t1, qv, two_q);
            let (c0, c1) = k.fwd_bf(b0, b1, t2a, qv, two_q);
            let (c2, c3) = k.fwd_bf(b2, b3, t2b, qv, two_q);
            k.st(x0, c0);
            k.st(x1, c1);
            k.st(x2, c2);
            k.st(x3, c3);
        }
    }
}

/// One inverse stage over `v`: blocks of `2 tv` vectors, block `i` with twiddle `(w[i], ws[i])`.
#[inline(always)]
fn inv_r2<K: Kernel>(k: K, v: &mut [K::A], tv: usize, w: &[u32], ws: &[u32], q: u32) {
    let (qv, two_q) = (k.splat(q), k.splat(q << 1));
    for ((block, &w), &ws) in v.chunks_exact_mut(2 * tv).zip(w).zip(ws) {
        let t = k.tw(w, ws);
        let (xs, ys) = block.split_at_mut(tv);
        for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
            let (a, b) = k.inv_bf(k.ld(x), k.ld(y), t, qv, two_q);
            k.st(x, a);
            k.st(y, b);
        }
    }
}

/// The last inverse stage (one block: `v` is the whole array) with `N^{-1}` folded in: `(x, y)
/// <- (mul(x + y, V[0]), mul(x - y + 2q, V[1]))`, reduced to `[0, q)` if `strict`.
#[inline(always)]
fn inv_last_r2<K: Kernel>(k: K, v: &mut [K::A], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    let (qv, two_q) = (k.splat(q), k.splat(q << 1));
    let (t0, t1) = (k.tw(w[0], ws[0]), k.tw(w[1], ws[1]));
    let (xs, ys) = v.split_at_mut(v.len() / 2);
    for (x, y) in xs.iter_mut().zip(ys.iter_mut()) {
        let (a, b) = k.inv_last_bf(k.ld(x), k.ld(y), t0, t1, qv, two_q, strict);
        k.st(x, a);
        k.st(y, b);
    }
}

/// Two inverse stages over `v` in one pass: blocks of `4 hv` vectors (quarters `a0..a3`); block
/// `i` runs the first stage on `(a0, a1)` with entry `2i` of `(w1, ws1)` and on `(a2, a3)` with
/// entry `2i + 1`, then the second on `(a0, a2)`, `(a1, a3)` with `(w2[i], ws2[i])`. With `LAST`
/// the second stage is the last one of the transform (`v` is the whole array, `w2` and `ws2`
/// hold `V[0], V[1]`), reduced to `[0, q)` if `strict`.
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "data, sizes and the two stages' twiddles")]
fn inv_r4<K: Kernel, const LAST: bool>(
    k: K,
    v: &mut [K::A],
    hv: usize,
    w1: &[u32],
    ws1: &[u32],
    w2: &[u32],
    ws2: &[u32],
    q: u32,
    strict: bool,
) {
    let (qv, two_q) = (k.splat(q), k.splat(q << 1));
    let w1 = as_arrays::<2, u32>(w1).0;
    let ws1 = as_arrays::<2, u32>(ws1).0;
    // With LAST, `V[0]` and `V[1]` (the caller passes both); unused otherwise, where `w2` may
    // hold one entry.
    let last = |i: usize| if LAST { k.tw(w2[i], ws2[i]) } else { k.tw(0, 0) };
    let (last0, last1) = (last(0), last(1));
    for (((block, (&w2, &ws2)), w1), ws1) in v.chunks_exact_mut(4 * hv).zip(w2.iter().zip(ws2)).zip(w1).zip(ws1) {
        let t1a = k.tw(w1[0], ws1[0]);
        let t1b = k.tw(w1[1], ws1[1]);
        let t2 = k.tw(w2, ws2);
        let (a01, a23) = block.split_at_mut(2 * hv);
        let (a0, a1) = a01.split_at_mut(hv);
        let (a2, a3) = a23.split_at_mut(hv);
        for (((x0, x1), x2), x3) in a0.iter_mut().zip(a1.iter_mut()).zip(a2.iter_mut()).zip(a3.iter_mut()) {
            let (b0, b1) = k.inv_bf(k.ld(x0), k.ld(x1), t1a, qv, two_q);
            let (b2, b3) = k.inv_bf(k.ld(x2), k.ld(x3), t1b, qv, two_q);
            let ((c0, c2), (c1, c3)) = if LAST {
                (
                    k.inv_last_bf(b0, b2, last0, last1, qv, two_q, strict),
                    k.inv_last_bf(b1, b3, last0, last1, qv, two_q, strict),
                )
            } else {
                (k.inv_bf(b0, b2, t2, qv, two_q), k.inv_bf(b1, b3, t2, qv, two_q))
            };
            k.st(x0, c0);
            k.st(x1, c1);
            k.st(x2, c2);
            k.st(x3, c3);
        }
    }
}

/// Forward stages with half-blocks of `t_hi, t_hi / 2, .., t_lo` vectors (powers of two,
/// `t_lo >= 1`) on `v`, chunk number `b` of equal chunks of an array of `nv` vectors. The stage
/// with half-block `tv` has `m = nv / (2 tv)` blocks in all, of which this chunk holds
/// `cnt = v.len() / (2 tv)`, starting with block `b * cnt`.
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "data, its place in the array, stage range, table")]
fn fwd_stages<K: Kernel>(
    k: K,
    v: &mut [K::A],
    b: usize,
    nv: usize,
    t_hi: usize,
    t_lo: usize,
    w: &[u32],
    ws: &[u32],
    q: u32,
) {
    let mut tv = t_hi;
    while tv >= t_lo {
        let cnt = v.len() / (2 * tv);
        let i1 = nv / (2 * tv) + b * cnt;
        if tv / 2 >= t_lo {
            let i2 = 2 * i1;
            let (w1, ws1) = (&w[i1..i1 + cnt], &ws[i1..i1 + cnt]);
            let (w2, ws2) = (&w[i2..i2 + 2 * cnt], &ws[i2..i2 + 2 * cnt]);
            fwd_r4(k, v, tv / 2, w1, ws1, w2, ws2, q);
            tv /= 4;
        } else {
            fwd_r2(k, v, tv, &w[i1..i1 + cnt], &ws[i1..i1 + cnt], q);
            tv /= 2;
        }
    }
}

/// Inverse stages with half-blocks of `t_lo, 2 t_lo, .., t_hi` vectors on `v`, chunk `b` of an
/// array of `nv` vectors (as in [`fwd_stages`]); the stage with `m = 1` (only when `v` is the
/// whole array) is the last one, `N^{-1}` folded in.
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "data, its place in the array, stage range, table")]
fn inv_stages<K: Kernel>(
    k: K,
    v: &mut [K::A],
    b: usize,
    nv: usize,
    t_lo: usize,
    t_hi: usize,
    w: &[u32],
    ws: &[u32],
    q: u32,
    strict: bool,
) {
    let mut tv = t_lo;
    while tv <= t_hi {
        let cnt = v.len() / (2 * tv);
        let m = nv / (2 * tv);
        if m == 1 {
            inv_last_r2(k, v, &w[..2], &ws[..2], q, strict);
            break;
        }
        let i1 = m + b * cnt;
        if 2 * tv <= t_hi {
            let (w1, ws1) = (&w[i1..i1 + cnt], &ws[i1..i1 + cnt]);
            if m == 2 {
                inv_r4::<K, true>(k, v, tv, w1, ws1, &w[..2], &ws[..2], q, strict);
            } else {
                let i2 = m / 2 + b * cnt / 2;
                let (w2, ws2) = (&w[i2..i2 + cnt / 2], &ws[i2..i2 + cnt / 2]);
                inv_r4::<K, false>(k, v, tv, w1, ws1, w2, ws2, q, strict);
            }
            tv *= 4;
        } else {
            inv_r2(k, v, tv, &w[i1..i1 + cnt], &ws[i1..i1 + cnt], q);
            tv *= 2;
        }
    }
}

/// The forward transform of `a` (length `n >= 2 * K::LANES`, a power of two; tables of length
/// `n`), in place, as specified in the parent module.
#[inline(always)]
fn forward<K: Kernel>(k: K, a: &mut [u32], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    let n = a.len();
    let v = K::vecs(a);
    let nv = v.len();
    let bv = (BLOCK / K::LANES).min(nv);
    if nv / 2 >= bv {
        fwd_stages(k, v, 0, nv, nv / 2, bv, w, ws, q);
    }
    for (b, chunk) in v.chunks_exact_mut(bv).enumerate() {
        fwd_stages(k, chunk, b, nv, bv / 2, 1, w, ws, q);
        tail::<K, false>(k, chunk, b * bv / 2, w, ws, n, q, strict);
    }
}

/// The inverse transform of `a` (length `n >= 2 * K::LANES`), in place.
#[inline(always)]
fn inverse<K: Kernel>(k: K, a: &mut [u32], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    let n = a.len();
    let v = K::vecs(a);
    let nv = v.len();
    let bv = (BLOCK / K::LANES).min(nv);
    for (b, chunk) in v.chunks_exact_mut(bv).enumerate() {
        tail::<K, true>(k, chunk, b * bv / 2, w, ws, n, q, false);
        inv_stages(k, chunk, b, nv, 1, bv / 2, w, ws, q, strict);
    }
    if nv > bv {
        inv_stages(k, v, 0, nv, bv, nv / 2, w, ws, q, strict);
    }
}

impl Kernel for V4 {
    type V = __m512i;
    type A = [u32; 16];
    const LANES: usize = 16;

    #[inline(always)]
    fn vecs(a: &mut [u32]) -> &mut [[u32; 16]] {
        as_arrays_mut::<16, u32>(a).0
    }
    #[inline(always)]
    fn ld(self, a: &[u32; 16]) -> __m512i {
        cast(*a)
    }
    #[inline(always)]
    fn st(self, a: &mut [u32; 16], v: __m512i) {
        *a = cast(v);
    }
    #[inline(always)]
    fn splat(self, x: u32) -> __m512i {
        self.avx512f._mm512_set1_epi32(x as i32)
    }
    #[inline(always)]
    fn add(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_add_epi32(a, b)
    }
    #[inline(always)]
    fn sub(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_sub_epi32(a, b)
    }
    #[inline(always)]
    fn min(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_min_epu32(a, b)
    }
    #[inline(always)]
    fn mullo(self, a: __m512i, b: __m512i) -> __m512i {
        self.avx512f._mm512_mullo_epi32(a, b)
    }
    #[inline(always)]
    fn mulhi(self, a: __m512i, b: __m512i, b_odd: __m512i) -> __m512i {
        let f = self.avx512f;
        let even = f._mm512_mul_epu32(a, b);
        let odd = f._mm512_mul_epu32(f._mm512_srli_epi64::<32>(a), b_odd);
        // Odd lanes: the high words of `odd`, already in place. Even lanes (mask 0x5555): word 1
        // of each 64-bit product of `even`, moved down (dword shuffle 1, 1, 3, 3 = 0xF5).
        f._mm512_mask_shuffle_epi32::<0xF5>(odd, 0x5555, even)
    }

    const BITS: usize = 4;
    type P = (__m512i, __m512i);

    #[inline(always)]
    fn perms(self, inv: bool) -> [(__m512i, __m512i); 5] {
        (if inv { INV16 } else { FWD16 }).map(|[i0, i1]| (cast(i0), cast(i1)))
    }

    #[inline(always)]
    fn permute(self, (x, y): (__m512i, __m512i), (i0, i1): (__m512i, __m512i)) -> (__m512i, __m512i) {
        let f = self.avx512f;
        (f._mm512_permutex2var_epi32(x, i0, y), f._mm512_permutex2var_epi32(x, i1, y))
    }

    #[inline(always)]
    fn tail_tw(self, r: usize, w: &[u32], ws: &[u32], i: usize) -> Tw<__m512i> {
        match r {
            2 => tw_tail16::<2>(self, w, ws, i),
            4 => tw_tail16::<4>(self, w, ws, i),
            8 => tw_tail16::<8>(self, w, ws, i),
            _ => tw_tail16::<16>(self, w, ws, i),
        }
    }
}

/// Tail groups processed together: each group is a long dependency chain (four stages of
/// multiplications and permutations), so several are interleaved in one loop body for the
/// out-of-order core to overlap (measured: 4 beats 1, 2 and 8).
const TAIL_GROUPS: usize = 4;

/// The tail (see the module documentation) on `v`, groups of two vectors, the first one group
/// `g0` of the array, [`TAIL_GROUPS`] groups per iteration when they divide `v`. Forward tail
/// stage `st` has half-blocks of `LANES / 2 >> st` words, inverse tail stage `st` of `1 << st`;
/// with `strict`, the forward reduces its outputs to `[0, q)`.
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "data, its place in the array, table and modulus")]
fn tail<K: Kernel, const INV: bool>(
    k: K,
    v: &mut [K::A],
    g0: usize,
    w: &[u32],
    ws: &[u32],
    n: usize,
    q: u32,
    strict: bool,
) {
    if v.len() % (2 * TAIL_GROUPS) == 0 {
        tail_groups::<K, INV, TAIL_GROUPS>(k, v, g0, w, ws, n, q, strict);
    } else {
        tail_groups::<K, INV, 1>(k, v, g0, w, ws, n, q, strict);
    }
}

/// [`tail`] with `G` groups per iteration (`v.len()` a multiple of `2 G`).
#[inline(always)]
#[expect(clippy::too_many_arguments, reason = "data, its place in the array, table and modulus")]
fn tail_groups<K: Kernel, const INV: bool, const G: usize>(
    k: K,
    v: &mut [K::A],
    g0: usize,
    w: &[u32],
    ws: &[u32],
    n: usize,
    q: u32,
    strict: bool,
) {
    let (qv, two_q) = (k.splat(q), k.splat(q << 1));
    let p = k.perms(INV);
    for (i, grp) in v.chunks_exact_mut(2 * G).enumerate() {
        let g = g0 + i * G;
        let mut z: [(K::V, K::V); G] = core::array::from_fn(|j| (k.ld(&grp[2 * j]), k.ld(&grp[2 * j + 1])));
        for zj in &mut z {
            *zj = k.permute(*zj, p[0]);
        }
        for st in 0..K::BITS {
            // Distinct twiddles per group (r) and the stage's block count (m = its first entry).
            let (r, m) = if INV { (K::LANES >> st, (n / 2) >> st) } else { (2 << st, (n / K::LANES) << st) };
            for (j, (x, y)) in z.iter_mut().enumerate() {
                let t = k.tail_tw(r, w, ws, m + r * (g + j));
                (*x, *y) = if INV { k.inv_bf(*x, *y, t, qv, two_q) } else { k.fwd_bf(*x, *y, t, qv, two_q) };
            }
            if !INV && strict && st + 1 == K::BITS {
                for (x, y) in &mut z {
                    (*x, *y) = (k.reduce(k.reduce(*x, two_q), qv), k.reduce(k.reduce(*y, two_q), qv));
                }
            }
            for zj in &mut z {
                *zj = k.permute(*zj, p[st + 1]);
            }
        }
        for (j, (x, y)) in z.iter().enumerate() {
            k.st(&mut grp[2 * j], *x);
            k.st(&mut grp[2 * j + 1], *y);
        }
    }
}

/// The tail twiddle vector for `R` consecutive table entries from `i` (lane `k` takes entry
/// `i + k mod R`), as broadcasts from memory. `ws_odd` is read one entry further on (its 64-bit
/// lanes then start with the odd lanes' companions), except for `R = 16`, where the entry after
/// the last group would be past the table: there it is shifted down in a register.
#[inline(always)]
fn tw_tail16<const R: usize>(s: V4, w: &[u32], ws: &[u32], i: usize) -> Tw<__m512i> {
    let f = s.avx512f;
    match R {
        2 => {
            let b = |t: &[u32], i: usize| f._mm512_set1_epi64(cast::<[u32; 2], i64>([t[i], t[i + 1]]));
            Tw { w: b(w, i), ws: b(ws, i), ws_odd: b(ws, i + 1) }
        }
        4 => {
            let b = |t: &[u32], i: usize| f._mm512_broadcast_i32x4(cast::<[u32; 4], __m128i>(arr::<4>(t, i)));
            Tw { w: b(w, i), ws: b(ws, i), ws_odd: b(ws, i + 1) }
        }
        8 => {
            let d = s.avx512dq;
            let b = |t: &[u32], i: usize| d._mm512_broadcast_i32x8(cast::<[u32; 8], __m256i>(arr::<8>(t, i)));
            Tw { w: b(w, i), ws: b(ws, i), ws_odd: b(ws, i + 1) }
        }
        _ => {
            let ws_v: __m512i = cast(arr::<16>(ws, i));
            Tw { w: cast(arr::<16>(w, i)), ws: ws_v, ws_odd: f._mm512_srli_epi64::<32>(ws_v) }
        }
    }
}

/// `t[i..i + L]` as an array.
#[inline(always)]
fn arr<const L: usize>(t: &[u32], i: usize) -> [u32; L] {
    let mut out = [0u32; L];
    out.copy_from_slice(&t[i..i + L]);
    out
}

impl Kernel for V3 {
    type V = __m256i;
    type A = [u32; 8];
    const LANES: usize = 8;

    #[inline(always)]
    fn vecs(a: &mut [u32]) -> &mut [[u32; 8]] {
        as_arrays_mut::<8, u32>(a).0
    }
    #[inline(always)]
    fn ld(self, a: &[u32; 8]) -> __m256i {
        cast(*a)
    }
    #[inline(always)]
    fn st(self, a: &mut [u32; 8], v: __m256i) {
        *a = cast(v);
    }
    #[inline(always)]
    fn splat(self, x: u32) -> __m256i {
        self.avx._mm256_set1_epi32(x as i32)
    }
    #[inline(always)]
    fn add(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_add_epi32(a, b)
    }
    #[inline(always)]
    fn sub(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_sub_epi32(a, b)
    }
    #[inline(always)]
    fn min(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_min_epu32(a, b)
    }
    #[inline(always)]
    fn mullo(self, a: __m256i, b: __m256i) -> __m256i {
        self.avx2._mm256_mullo_epi32(a, b)
    }
    #[inline(always)]
    fn mulhi(self, a: __m256i, b: __m256i, b_odd: __m256i) -> __m256i {
        let f = self.avx2;
        let even = f._mm256_mul_epu32(a, b);
        let odd = f._mm256_mul_epu32(f._mm256_srli_epi64::<32>(a), b_odd);
        // Even lanes: high words of `even` shifted down; odd lanes: high words of `odd` in place.
        f._mm256_blend_epi32::<0b1010_1010>(f._mm256_srli_epi64::<32>(even), odd)
    }

    const BITS: usize = 3;
    type P = Perm8;

    #[inline(always)]
    fn perms(self, inv: bool) -> [Perm8; 5] {
        if inv {
            [
                Perm8::new(NAT8, L1_8),
                Perm8::new(L1_8, L2_8),
                Perm8::new(L2_8, L4_8),
                Perm8::new(L4_8, NAT8),
                Perm8::new(NAT8, NAT8),
            ]
        } else {
            [
                Perm8::new(NAT8, L4_8),
                Perm8::new(L4_8, L2_8),
                Perm8::new(L2_8, L1_8),
                Perm8::new(L1_8, NAT8),
                Perm8::new(NAT8, NAT8),
            ]
        }
    }

    #[inline(always)]
    fn permute(self, z: (__m256i, __m256i), p: Perm8) -> (__m256i, __m256i) {
        p.apply(self, z)
    }

    #[inline(always)]
    fn tail_tw(self, r: usize, w: &[u32], ws: &[u32], i: usize) -> Tw<__m256i> {
        match r {
            2 => tw_tail8::<2>(self, w, ws, i),
            4 => tw_tail8::<4>(self, w, ws, i),
            _ => tw_tail8::<8>(self, w, ws, i),
        }
    }
}

/// A layout change of an 8-lane group: output vector `h` gathers its lanes from both inputs
/// with one `vpermd` per input and a blend on `sel[h]` (all ones where the lane comes from the
/// second input).
#[derive(Clone, Copy)]
struct Perm8 {
    idx: [__m256i; 2],
    sel: [__m256i; 2],
}

impl Perm8 {
    #[inline(always)]
    fn new(from: Layout, to: Layout) -> Self {
        let half = |h: u32| {
            let (idx, mask) = perm8(from, to, h);
            let sel: [u32; 8] = core::array::from_fn(|k| if (mask >> k) & 1 == 1 { u32::MAX } else { 0 });
            (cast::<[u32; 8], __m256i>(idx), cast::<[u32; 8], __m256i>(sel))
        };
        let ((i0, s0), (i1, s1)) = (half(0), half(1));
        Self { idx: [i0, i1], sel: [s0, s1] }
    }

    #[inline(always)]
    fn apply(&self, s: V3, (x, y): (__m256i, __m256i)) -> (__m256i, __m256i) {
        let f = s.avx2;
        let out = |h: usize| {
            let a = f._mm256_permutevar8x32_epi32(x, self.idx[h]);
            let b = f._mm256_permutevar8x32_epi32(y, self.idx[h]);
            f._mm256_blendv_epi8(a, b, self.sel[h])
        };
        (out(0), out(1))
    }
}

/// The 8-lane tail twiddle vector for `R` consecutive entries from `i` (see [`tw_tail16`]).
#[inline(always)]
fn tw_tail8<const R: usize>(s: V3, w: &[u32], ws: &[u32], i: usize) -> Tw<__m256i> {
    match R {
        2 => {
            let b = |t: &[u32], i: usize| s.avx._mm256_set1_epi64x(cast::<[u32; 2], i64>([t[i], t[i + 1]]));
            Tw { w: b(w, i), ws: b(ws, i), ws_odd: b(ws, i + 1) }
        }
        4 => {
            let b = |t: &[u32], i: usize| s.avx2._mm256_broadcastsi128_si256(cast::<[u32; 4], __m128i>(arr::<4>(t, i)));
            Tw { w: b(w, i), ws: b(ws, i), ws_odd: b(ws, i + 1) }
        }
        _ => {
            let ws_v: __m256i = cast(arr::<8>(ws, i));
            Tw { w: cast(arr::<8>(w, i)), ws: ws_v, ws_odd: s.avx2._mm256_srli_epi64::<32>(ws_v) }
        }
    }
}

/// The forward transform at AVX-512 (`a.len() >= 32`, tables of length `a.len()`).
pub(super) fn forward_v4(s: V4, a: &mut [u32], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    struct Op<'a>(V4, &'a mut [u32], &'a [u32], &'a [u32], u32, bool);
    impl pulp::NullaryFnOnce for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn call(self) {
            forward(self.0, self.1, self.2, self.3, self.4, self.5);
        }
    }
    s.vectorize(Op(s, a, w, ws, q, strict));
}

/// The inverse transform at AVX-512 (`a.len() >= 32`).
pub(super) fn inverse_v4(s: V4, a: &mut [u32], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    struct Op<'a>(V4, &'a mut [u32], &'a [u32], &'a [u32], u32, bool);
    impl pulp::NullaryFnOnce for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn call(self) {
            inverse(self.0, self.1, self.2, self.3, self.4, self.5);
        }
    }
    s.vectorize(Op(s, a, w, ws, q, strict));
}

/// The forward transform at AVX2 (`a.len() >= 16`).
pub(super) fn forward_v3(s: V3, a: &mut [u32], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    struct Op<'a>(V3, &'a mut [u32], &'a [u32], &'a [u32], u32, bool);
    impl pulp::NullaryFnOnce for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn call(self) {
            forward(self.0, self.1, self.2, self.3, self.4, self.5);
        }
    }
    s.vectorize(Op(s, a, w, ws, q, strict));
}

/// The inverse transform at AVX2 (`a.len() >= 16`).
pub(super) fn inverse_v3(s: V3, a: &mut [u32], w: &[u32], ws: &[u32], q: u32, strict: bool) {
    struct Op<'a>(V3, &'a mut [u32], &'a [u32], &'a [u32], u32, bool);
    impl pulp::NullaryFnOnce for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn call(self) {
            inverse(self.0, self.1, self.2, self.3, self.4, self.5);
        }
    }
    s.vectorize(Op(s, a, w, ws, q, strict));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layout change is a permutation, and each stage layout pairs the right elements
    /// with the twiddle pattern the broadcasts give.
    #[test]
    fn layouts_are_consistent() {
        for (l, bits, t) in
            [(L8_16, 4, 8u32), (L4_16, 4, 4), (L2_16, 4, 2), (L1_16, 4, 1), (L4_8, 3, 4), (L2_8, 3, 2), (L1_8, 3, 1)]
        {
            let lanes = 1u32 << bits;
            let r = lanes / t; // distinct twiddles per group
            for k in 0..lanes {
                let x = element(l, bits, 0, k);
                let y = element(l, bits, 1, k);
                assert_eq!(y, x + t, "pair partner");
                assert_eq!(x & t, 0);
                // twiddle index of the block = x / (2t) must be k mod r
                assert_eq!(x / (2 * t), k % r);
            }
        }
        let layouts16 = [NAT16, L8_16, L4_16, L2_16, L1_16];
        for &a in &layouts16 {
            for &b in &layouts16 {
                let mut seen = [false; 32];
                for h in 0..2 {
                    for (k, &i) in perm16(a, b, h).iter().enumerate() {
                        let e = element(a, 4, i / 16, i % 16);
                        assert_eq!(e, element(b, 4, h, k as u32));
                        seen[e as usize] = true;
                    }
                }
                assert!(seen.iter().all(|&s| s));
            }
        }
    }
}
