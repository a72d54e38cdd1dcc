// Negacyclic NTT of every limb of a limb-major [limb][N] buffer, in place, in two kinds of pass
// over memory (CPU twins: backend/cpu.rs ntt_forward / ntt_inverse = math/ntt.rs
// NttTable::forward / inverse, strict). Forward: Cooley-Tukey, natural in, bit-reversed out;
// inverse: Gentleman-Sande, bit-reversed in, natural out, N^{-1} folded into the last stage.
// Every butterfly is the CPU's, on the same pair, with the same twiddle and Shoup companion, in
// the same stage order, so every intermediate value (in [0, 4q) forward, [0, 2q) inverse) equals
// the CPU's bit for bit; the forward's last stage reduces to the canonical residue, the
// inverse's does in inv_last.
//
// The tile: TILE = 2^LOG_TILE values of workgroup memory (declared by the variant file in front
// of this one, see backend/gpu/ntt.rs), 256 invocations. With lt = min(log N, LOG_TILE) and
// r = log N - lt, a transform is (forward order; the inverse runs the same passes reversed):
// * column passes (only when r > 0), together stages 0 .. r-1: a pass running the k stages
//   s0 .. s0+k-1 takes, in each block of N / 2^s0 values, the 2^k values at stride
//   S = N / 2^(s0+k) of each column c < S (all the values those stages combine), C = TILE / 2^k
//   adjacent columns per workgroup (loads of C consecutive words), tile[j * C + column];
// * one row pass, stages r .. log N - 1: contiguous tiles of 2^lt values, tile tt = the values
//   tt * 2^lt ..; every block of those stages lies inside one tile.
//
// params: [log_n, lt, r, stride, workgroups, s0, k] (s0, k: column passes only). Workgroup g
// works on limb g >> r (2^r workgroups per limb in every pass).
//
// The inverse row pass reads its input through inv_in(word, limb), defined by the file after this
// one: ntt/in_place.wgsl reads `a` (the transform in place), ntt/from.wgsl forms the Eval input
// from other buffers on load (a copy, a product, an automorphism) and may also store it, so an
// out-of-place inverse needs no copy or element-wise pass in front of it.
//
// tw: per limb `stride` words (forward or inverse table, T = W or V of
// NttTable::forward_twiddles / inverse_twiddles, T' their Shoup companions), with
// P = max(2^r, 2) and H = 2^(lt - 1):
//   [q, c, d, d']  c = floor(2^32 / q), d = 2^32 mod q, d' = floor(d 2^32 / q)
//   D[0 .. P], D'[0 .. P]         T[0 .. P] and companions, as the CPU has them (the column
//                                 passes' twiddles; the inverse's D[0], D[1] carry N^{-1})
//   L[0 .. H], L'[0 .. H]         the row pass's local factors psi^(+-bitrev(i, log N)), i < H:
//                                 T[i] for the forward; the inverse's L[0] = 1 and
//                                 L[1] = psi^(-N/2), not the N^{-1}-scaled V[0], V[1]
//   F[(s - r) 2^r + tt]           per stage s >= r and row tile tt: T[2^s + tt 2^(s - r)]
// Row tile tt, stage s, local block b < 2^(s - r): the CPU's twiddle T[2^s + tt 2^(s-r) + b]
// equals L[b] F[s - r][tt] mod q (exponents add: bitrev(2^s + tt 2^(s-r) + b, log N) =
// bitrev(2^s + tt 2^(s-r), log N) + bitrev(b, log N) for b < 2^(s-r)), computed exactly as
// shoup_mul(F, L, L') (canonical), and its companion floor(w 2^32 / q) = w c + floor(w d / q)
// exactly with the per-limb constants (companion()). Each invocation forms a twiddle once per
// block it works on in a stage.
//
// Stages go through registers, up to four at a time (radix-16 trips, below), wherever the tile
// is 4096 values (LOG_TILE = 12) and 16 values per invocation fill it:
// * the row pass of a whole tile (lt = 12, N >= 2^12): three trips of four stages, the values
//   at stride 256 (loaded from the buffer), at stride 16 within blocks of 256, then 16 adjacent
//   values (stored to the buffer), through the tile twice: 2 barriers, each value in and out
//   of workgroup memory twice;
// * a column pass of k <= 4 stages: one trip on 2^(4 - k) columns per invocation, straight from
//   the buffer and back, no workgroup memory, no barrier.
// Everything else (smaller tiles, N < 2^12, column passes of 5 or more stages) makes two stages
// per trip through workgroup memory: a radix-4 unit loads 4 values at distance t/2 (block of
// 2t), does the stage with half-block t on pairs (0, 2), (1, 3) and the stage with t/2 on
// (0, 1), (2, 3) (the inverse: the other way round), and stores them, the same butterflies as
// two radix-2 stages. An odd number of stages leaves one radix-2 stage, the one with a single
// block (per tile, or per column block): first in the forward, last in the inverse.
// Either way each value goes through the CPU's butterflies in the CPU's stage order.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> tw: array<u32>;
@group(0) @binding(2) var<storage, read_write> a: array<u32>;

var<workgroup> tile: array<u32, TILE>;

const WG: u32 = 256u;

struct Plan {
    log_n: u32,
    n: u32,
    lt: u32,
    r: u32,
    p: u32,
    h: u32,
    stride: u32,
    groups: u32,
}

fn plan() -> Plan {
    let log_n = params[0];
    let lt = params[1];
    let r = params[2];
    return Plan(log_n, 1u << log_n, lt, r, max(1u << r, 2u), 1u << (lt - 1u), params[3], params[4]);
}

// Per-limb constants: base word of the limb's table, q, c, d, d'.
struct Limb {
    base: u32,
    q: u32,
    c: u32,
    d: u32,
    ds: u32,
}

fn limb_consts(limb: u32, pl: Plan) -> Limb {
    let base = limb * pl.stride;
    return Limb(base, tw[base], tw[base + 1u], tw[base + 2u], tw[base + 3u]);
}

// floor(w 2^32 / q) for w < q: w c + floor(w d / q), the quotient by Shoup (exact or one short)
// and corrected with the remainder w d - e q, which is below 2q < 2^32 so exact mod 2^32.
fn companion(w: u32, lb: Limb) -> u32 {
    var e = mul_hi(w, lb.ds);
    if (w * lb.d - e * lb.q >= lb.q) { e = e + 1u; }
    return w * lb.c + e;
}

// The row pass's twiddle of local block b with the tile's stage factor f: (w, w').
fn row_twiddle(lb: Limb, pl: Plan, b: u32, f: u32) -> vec2<u32> {
    let li = lb.base + 4u + 2u * pl.p + b;
    let w = shoup_mul(f, tw[li], tw[li + pl.h], lb.q);
    return vec2<u32>(w, companion(w, lb));
}

// Harvey forward butterfly: x, y < 4q in, both outputs < 4q.
fn fwd_bf(x: u32, y: u32, w: vec2<u32>, q: u32) -> vec2<u32> {
    let two_q = q << 1u;
    var xx = x;
    if (xx >= two_q) { xx = xx - two_q; }
    let u = shoup_mul_lazy(y, w.x, w.y, q);
    return vec2<u32>(xx + u, xx + two_q - u);
}

// Harvey inverse butterfly: x, y < 2q in, both outputs < 2q.
fn inv_bf(x: u32, y: u32, w: vec2<u32>, q: u32) -> vec2<u32> {
    let two_q = q << 1u;
    var s = x + y;
    if (s >= two_q) { s = s - two_q; }
    return vec2<u32>(s, shoup_mul_lazy(x + two_q - y, w.x, w.y, q));
}

// Last inverse stage (one block), N^{-1} folded in (D[0] on sums, D[1] on differences): x, y < 2q
// in, canonical out.
fn inv_last(x: u32, y: u32, lb: Limb, pl: Plan) -> vec2<u32> {
    let q = lb.q;
    let two_q = q << 1u;
    let di = lb.base + 4u;
    var u = shoup_mul_lazy(x + y, tw[di], tw[di + pl.p], q);
    var v = shoup_mul_lazy(x + two_q - y, tw[di + 1u], tw[di + pl.p + 1u], q);
    if (u >= q) { u = u - q; }
    if (v >= q) { v = v - q; }
    return vec2<u32>(u, v);
}

// x mod q for x < 4q.
fn reduce_4q(x: u32, q: u32) -> u32 {
    var r = x;
    if (r >= (q << 1u)) { r = r - (q << 1u); }
    if (r >= q) { r = r - q; }
    return r;
}

// ---- radix-4 units ---------------------------------------------------------------------------

// Forward: stage A (half-block 2d) on (x0, x2), (x1, x3) with wa, then stage B (half-block d) on
// (x0, x1) with wb0 and (x2, x3) with wb1; tile indices i; canonical outputs when `last`.
fn fwd_unit(i: vec4<u32>, wa: vec2<u32>, wb0: vec2<u32>, wb1: vec2<u32>, q: u32, last: bool) {
    let a02 = fwd_bf(tile[i.x], tile[i.z], wa, q);
    let a13 = fwd_bf(tile[i.y], tile[i.w], wa, q);
    var b01 = fwd_bf(a02.x, a13.x, wb0, q);
    var b23 = fwd_bf(a02.y, a13.y, wb1, q);
    if (last) {
        b01 = vec2<u32>(reduce_4q(b01.x, q), reduce_4q(b01.y, q));
        b23 = vec2<u32>(reduce_4q(b23.x, q), reduce_4q(b23.y, q));
    }
    tile[i.x] = b01.x;
    tile[i.y] = b01.y;
    tile[i.z] = b23.x;
    tile[i.w] = b23.y;
}

// Inverse: stage B (half-block d) on (x0, x1) with wb0 and (x2, x3) with wb1, then stage A
// (half-block 2d) on (x0, x2), (x1, x3) with wa, or the last stage (N^{-1}) when `last`.
fn inv_unit(i: vec4<u32>, wb0: vec2<u32>, wb1: vec2<u32>, wa: vec2<u32>, lb: Limb, pl: Plan, last: bool) {
    let b01 = inv_bf(tile[i.x], tile[i.y], wb0, lb.q);
    let b23 = inv_bf(tile[i.z], tile[i.w], wb1, lb.q);
    var a02: vec2<u32>;
    var a13: vec2<u32>;
    if (last) {
        a02 = inv_last(b01.x, b23.x, lb, pl);
        a13 = inv_last(b01.y, b23.y, lb, pl);
    } else {
        a02 = inv_bf(b01.x, b23.x, wa, lb.q);
        a13 = inv_bf(b01.y, b23.y, wa, lb.q);
    }
    tile[i.x] = a02.x;
    tile[i.y] = a13.x;
    tile[i.z] = a02.y;
    tile[i.w] = a13.y;
}

// ---- radix-16 trips in registers ------------------------------------------------------------

// A trip does up to four consecutive stages on the 16 values x[rho] (rho < 16) one invocation
// holds in registers: m = 4 - t0 stages (trip stages t = t0 .. 3), on 2^t0 independent groups of
// 2^m values, rho = u 2^m + j for group u and element j. Trip stage t is the groups' stage
// e = t - t0: butterflies on the register pairs (rho, rho + 8 / 2^t) (rho without that bit),
// the pass's stage sbase + t (u32 arithmetic: sbase may wrap below 0), in block
// (outer << e) + (j >> (m - e)) of the pass's block `outer` (a row tile's local block, or the
// block within a column pass's outer block). The forward runs t = t0 .. 3, the inverse
// t = 3 .. t0, so every value goes through its stages in the CPU's order; each invocation forms
// the 2^e twiddles of stage t once per trip (15 for a whole radix-16 trip: 32 butterflies).
struct Trip {
    lb: Limb,
    pl: Plan,
    row: bool,
    t0: u32,
    sbase: u32,
    outer: u32,
    // Row tile (row passes' stage factors).
    tt: u32,
    // Forward: reduce to canonical residues after the trip (the transform's last stage);
    // inverse: trip stage t0 is stage 0 (inv_last, N^{-1} folded in).
    last: bool,
}

// The stage factor F of trip stage t (row trips; unused by column trips).
fn trip_factor(cx: Trip, t: u32) -> u32 {
    if (cx.row) { return stage_factor(cx.lb, cx.pl, cx.sbase + t, cx.tt); }
    return 0u;
}

// The twiddle (w, w') of trip stage t >= t0 for the pairs with c = rho >> (4 - t): the CPU's
// T[2^s + tile or outer-block offset + block] of stage s = sbase + t.
fn trip_twiddle(cx: Trip, t: u32, c: u32, f: u32) -> vec2<u32> {
    let e = t - cx.t0;
    let b = (cx.outer << e) + (c & ((1u << e) - 1u));
    if (cx.row) { return row_twiddle(cx.lb, cx.pl, b, f); }
    return column_twiddle(cx.lb, cx.pl, (1u << (cx.sbase + t)) + b);
}

// Row trips keep the tile XOR-swizzled (a bijection on 4096 words): the three trips' accesses
// (16 words at stride 256, 16, 1 per invocation) then hit 32 different banks in every 32
// adjacent invocations, where stride 16 would hit 2.
fn swizzle(i: u32) -> u32 {
    return i ^ ((i >> 4u) & 31u);
}

// The unrolled trips (constant register indices throughout, so x stays in registers), and the
// moves of x between registers and memory: load16/store16 take x[rho] at
// base + ((rho & (2^k - 1)) << la) + ((rho >> k) << 8) of the buffer, tile_load16/tile_store16
// at base + (rho << la) of the (swizzled) tile.

fn fwd16(x: ptr<function, array<u32, 16>>, cx: Trip) {
    let q = cx.lb.q;
    if (cx.t0 <= 0u) {
        let f0 = trip_factor(cx, 0u);
        let w0_0 = trip_twiddle(cx, 0u, 0u, f0);
        let p0 = fwd_bf((*x)[0], (*x)[8], w0_0, q); (*x)[0] = p0.x; (*x)[8] = p0.y;
        let p1 = fwd_bf((*x)[1], (*x)[9], w0_0, q); (*x)[1] = p1.x; (*x)[9] = p1.y;
        let p2 = fwd_bf((*x)[2], (*x)[10], w0_0, q); (*x)[2] = p2.x; (*x)[10] = p2.y;
        let p3 = fwd_bf((*x)[3], (*x)[11], w0_0, q); (*x)[3] = p3.x; (*x)[11] = p3.y;
        let p4 = fwd_bf((*x)[4], (*x)[12], w0_0, q); (*x)[4] = p4.x; (*x)[12] = p4.y;
        let p5 = fwd_bf((*x)[5], (*x)[13], w0_0, q); (*x)[5] = p5.x; (*x)[13] = p5.y;
        let p6 = fwd_bf((*x)[6], (*x)[14], w0_0, q); (*x)[6] = p6.x; (*x)[14] = p6.y;
        let p7 = fwd_bf((*x)[7], (*x)[15], w0_0, q); (*x)[7] = p7.x; (*x)[15] = p7.y;
    }
    if (cx.t0 <= 1u) {
        let f1 = trip_factor(cx, 1u);
        let w1_0 = trip_twiddle(cx, 1u, 0u, f1);
        let w1_1 = trip_twiddle(cx, 1u, 1u, f1);
        let p0 = fwd_bf((*x)[0], (*x)[4], w1_0, q); (*x)[0] = p0.x; (*x)[4] = p0.y;
        let p1 = fwd_bf((*x)[1], (*x)[5], w1_0, q); (*x)[1] = p1.x; (*x)[5] = p1.y;
        let p2 = fwd_bf((*x)[2], (*x)[6], w1_0, q); (*x)[2] = p2.x; (*x)[6] = p2.y;
        let p3 = fwd_bf((*x)[3], (*x)[7], w1_0, q); (*x)[3] = p3.x; (*x)[7] = p3.y;
        let p8 = fwd_bf((*x)[8], (*x)[12], w1_1, q); (*x)[8] = p8.x; (*x)[12] = p8.y;
        let p9 = fwd_bf((*x)[9], (*x)[13], w1_1, q); (*x)[9] = p9.x; (*x)[13] = p9.y;
        let p10 = fwd_bf((*x)[10], (*x)[14], w1_1, q); (*x)[10] = p10.x; (*x)[14] = p10.y;
        let p11 = fwd_bf((*x)[11], (*x)[15], w1_1, q); (*x)[11] = p11.x; (*x)[15] = p11.y;
    }
    if (cx.t0 <= 2u) {
        let f2 = trip_factor(cx, 2u);
        let w2_0 = trip_twiddle(cx, 2u, 0u, f2);
        let w2_1 = trip_twiddle(cx, 2u, 1u, f2);
        let w2_2 = trip_twiddle(cx, 2u, 2u, f2);
        let w2_3 = trip_twiddle(cx, 2u, 3u, f2);
        let p0 = fwd_bf((*x)[0], (*x)[2], w2_0, q); (*x)[0] = p0.x; (*x)[2] = p0.y;
        let p1 = fwd_bf((*x)[1], (*x)[3], w2_0, q); (*x)[1] = p1.x; (*x)[3] = p1.y;
        let p4 = fwd_bf((*x)[4], (*x)[6], w2_1, q); (*x)[4] = p4.x; (*x)[6] = p4.y;
        let p5 = fwd_bf((*x)[5], (*x)[7], w2_1, q); (*x)[5] = p5.x; (*x)[7] = p5.y;
        let p8 = fwd_bf((*x)[8], (*x)[10], w2_2, q); (*x)[8] = p8.x; (*x)[10] = p8.y;
        let p9 = fwd_bf((*x)[9], (*x)[11], w2_2, q); (*x)[9] = p9.x; (*x)[11] = p9.y;
        let p12 = fwd_bf((*x)[12], (*x)[14], w2_3, q); (*x)[12] = p12.x; (*x)[14] = p12.y;
        let p13 = fwd_bf((*x)[13], (*x)[15], w2_3, q); (*x)[13] = p13.x; (*x)[15] = p13.y;
    }
    let f3 = trip_factor(cx, 3u);
    let w3_0 = trip_twiddle(cx, 3u, 0u, f3);
    let w3_1 = trip_twiddle(cx, 3u, 1u, f3);
    let w3_2 = trip_twiddle(cx, 3u, 2u, f3);
    let w3_3 = trip_twiddle(cx, 3u, 3u, f3);
    let w3_4 = trip_twiddle(cx, 3u, 4u, f3);
    let w3_5 = trip_twiddle(cx, 3u, 5u, f3);
    let w3_6 = trip_twiddle(cx, 3u, 6u, f3);
    let w3_7 = trip_twiddle(cx, 3u, 7u, f3);
    let p0 = fwd_bf((*x)[0], (*x)[1], w3_0, q); (*x)[0] = p0.x; (*x)[1] = p0.y;
    let p2 = fwd_bf((*x)[2], (*x)[3], w3_1, q); (*x)[2] = p2.x; (*x)[3] = p2.y;
    let p4 = fwd_bf((*x)[4], (*x)[5], w3_2, q); (*x)[4] = p4.x; (*x)[5] = p4.y;
    let p6 = fwd_bf((*x)[6], (*x)[7], w3_3, q); (*x)[6] = p6.x; (*x)[7] = p6.y;
    let p8 = fwd_bf((*x)[8], (*x)[9], w3_4, q); (*x)[8] = p8.x; (*x)[9] = p8.y;
    let p10 = fwd_bf((*x)[10], (*x)[11], w3_5, q); (*x)[10] = p10.x; (*x)[11] = p10.y;
    let p12 = fwd_bf((*x)[12], (*x)[13], w3_6, q); (*x)[12] = p12.x; (*x)[13] = p12.y;
    let p14 = fwd_bf((*x)[14], (*x)[15], w3_7, q); (*x)[14] = p14.x; (*x)[15] = p14.y;
    if (cx.last) {
        (*x)[0] = reduce_4q((*x)[0], q);
        (*x)[1] = reduce_4q((*x)[1], q);
        (*x)[2] = reduce_4q((*x)[2], q);
        (*x)[3] = reduce_4q((*x)[3], q);
        (*x)[4] = reduce_4q((*x)[4], q);
        (*x)[5] = reduce_4q((*x)[5], q);
        (*x)[6] = reduce_4q((*x)[6], q);
        (*x)[7] = reduce_4q((*x)[7], q);
        (*x)[8] = reduce_4q((*x)[8], q);
        (*x)[9] = reduce_4q((*x)[9], q);
        (*x)[10] = reduce_4q((*x)[10], q);
        (*x)[11] = reduce_4q((*x)[11], q);
        (*x)[12] = reduce_4q((*x)[12], q);
        (*x)[13] = reduce_4q((*x)[13], q);
        (*x)[14] = reduce_4q((*x)[14], q);
        (*x)[15] = reduce_4q((*x)[15], q);
    }
}

fn inv16(x: ptr<function, array<u32, 16>>, cx: Trip) {
    if (cx.last && cx.t0 == 3u) {
        let p0 = inv_last((*x)[0], (*x)[1], cx.lb, cx.pl); (*x)[0] = p0.x; (*x)[1] = p0.y;
        let p2 = inv_last((*x)[2], (*x)[3], cx.lb, cx.pl); (*x)[2] = p2.x; (*x)[3] = p2.y;
        let p4 = inv_last((*x)[4], (*x)[5], cx.lb, cx.pl); (*x)[4] = p4.x; (*x)[5] = p4.y;
        let p6 = inv_last((*x)[6], (*x)[7], cx.lb, cx.pl); (*x)[6] = p6.x; (*x)[7] = p6.y;
        let p8 = inv_last((*x)[8], (*x)[9], cx.lb, cx.pl); (*x)[8] = p8.x; (*x)[9] = p8.y;
        let p10 = inv_last((*x)[10], (*x)[11], cx.lb, cx.pl); (*x)[10] = p10.x; (*x)[11] = p10.y;
        let p12 = inv_last((*x)[12], (*x)[13], cx.lb, cx.pl); (*x)[12] = p12.x; (*x)[13] = p12.y;
        let p14 = inv_last((*x)[14], (*x)[15], cx.lb, cx.pl); (*x)[14] = p14.x; (*x)[15] = p14.y;
    } else {
        let f3 = trip_factor(cx, 3u);
        let w3_0 = trip_twiddle(cx, 3u, 0u, f3);
        let w3_1 = trip_twiddle(cx, 3u, 1u, f3);
        let w3_2 = trip_twiddle(cx, 3u, 2u, f3);
        let w3_3 = trip_twiddle(cx, 3u, 3u, f3);
        let w3_4 = trip_twiddle(cx, 3u, 4u, f3);
        let w3_5 = trip_twiddle(cx, 3u, 5u, f3);
        let w3_6 = trip_twiddle(cx, 3u, 6u, f3);
        let w3_7 = trip_twiddle(cx, 3u, 7u, f3);
        let p0 = inv_bf((*x)[0], (*x)[1], w3_0, cx.lb.q); (*x)[0] = p0.x; (*x)[1] = p0.y;
        let p2 = inv_bf((*x)[2], (*x)[3], w3_1, cx.lb.q); (*x)[2] = p2.x; (*x)[3] = p2.y;
        let p4 = inv_bf((*x)[4], (*x)[5], w3_2, cx.lb.q); (*x)[4] = p4.x; (*x)[5] = p4.y;
        let p6 = inv_bf((*x)[6], (*x)[7], w3_3, cx.lb.q); (*x)[6] = p6.x; (*x)[7] = p6.y;
        let p8 = inv_bf((*x)[8], (*x)[9], w3_4, cx.lb.q); (*x)[8] = p8.x; (*x)[9] = p8.y;
        let p10 = inv_bf((*x)[10], (*x)[11], w3_5, cx.lb.q); (*x)[10] = p10.x; (*x)[11] = p10.y;
        let p12 = inv_bf((*x)[12], (*x)[13], w3_6, cx.lb.q); (*x)[12] = p12.x; (*x)[13] = p12.y;
        let p14 = inv_bf((*x)[14], (*x)[15], w3_7, cx.lb.q); (*x)[14] = p14.x; (*x)[15] = p14.y;
    }
    if (cx.t0 <= 2u) {
        if (cx.last && cx.t0 == 2u) {
            let p0 = inv_last((*x)[0], (*x)[2], cx.lb, cx.pl); (*x)[0] = p0.x; (*x)[2] = p0.y;
            let p1 = inv_last((*x)[1], (*x)[3], cx.lb, cx.pl); (*x)[1] = p1.x; (*x)[3] = p1.y;
            let p4 = inv_last((*x)[4], (*x)[6], cx.lb, cx.pl); (*x)[4] = p4.x; (*x)[6] = p4.y;
            let p5 = inv_last((*x)[5], (*x)[7], cx.lb, cx.pl); (*x)[5] = p5.x; (*x)[7] = p5.y;
            let p8 = inv_last((*x)[8], (*x)[10], cx.lb, cx.pl); (*x)[8] = p8.x; (*x)[10] = p8.y;
            let p9 = inv_last((*x)[9], (*x)[11], cx.lb, cx.pl); (*x)[9] = p9.x; (*x)[11] = p9.y;
            let p12 = inv_last((*x)[12], (*x)[14], cx.lb, cx.pl); (*x)[12] = p12.x; (*x)[14] = p12.y;
            let p13 = inv_last((*x)[13], (*x)[15], cx.lb, cx.pl); (*x)[13] = p13.x; (*x)[15] = p13.y;
        } else {
            let f2 = trip_factor(cx, 2u);
            let w2_0 = trip_twiddle(cx, 2u, 0u, f2);
            let w2_1 = trip_twiddle(cx, 2u, 1u, f2);
            let w2_2 = trip_twiddle(cx, 2u, 2u, f2);
            let w2_3 = trip_twiddle(cx, 2u, 3u, f2);
            let p0 = inv_bf((*x)[0], (*x)[2], w2_0, cx.lb.q); (*x)[0] = p0.x; (*x)[2] = p0.y;
            let p1 = inv_bf((*x)[1], (*x)[3], w2_0, cx.lb.q); (*x)[1] = p1.x; (*x)[3] = p1.y;
            let p4 = inv_bf((*x)[4], (*x)[6], w2_1, cx.lb.q); (*x)[4] = p4.x; (*x)[6] = p4.y;
            let p5 = inv_bf((*x)[5], (*x)[7], w2_1, cx.lb.q); (*x)[5] = p5.x; (*x)[7] = p5.y;
            let p8 = inv_bf((*x)[8], (*x)[10], w2_2, cx.lb.q); (*x)[8] = p8.x; (*x)[10] = p8.y;
            let p9 = inv_bf((*x)[9], (*x)[11], w2_2, cx.lb.q); (*x)[9] = p9.x; (*x)[11] = p9.y;
            let p12 = inv_bf((*x)[12], (*x)[14], w2_3, cx.lb.q); (*x)[12] = p12.x; (*x)[14] = p12.y;
            let p13 = inv_bf((*x)[13], (*x)[15], w2_3, cx.lb.q); (*x)[13] = p13.x; (*x)[15] = p13.y;
        }
    }
    if (cx.t0 <= 1u) {
        if (cx.last && cx.t0 == 1u) {
            let p0 = inv_last((*x)[0], (*x)[4], cx.lb, cx.pl); (*x)[0] = p0.x; (*x)[4] = p0.y;
            let p1 = inv_last((*x)[1], (*x)[5], cx.lb, cx.pl); (*x)[1] = p1.x; (*x)[5] = p1.y;
            let p2 = inv_last((*x)[2], (*x)[6], cx.lb, cx.pl); (*x)[2] = p2.x; (*x)[6] = p2.y;
            let p3 = inv_last((*x)[3], (*x)[7], cx.lb, cx.pl); (*x)[3] = p3.x; (*x)[7] = p3.y;
            let p8 = inv_last((*x)[8], (*x)[12], cx.lb, cx.pl); (*x)[8] = p8.x; (*x)[12] = p8.y;
            let p9 = inv_last((*x)[9], (*x)[13], cx.lb, cx.pl); (*x)[9] = p9.x; (*x)[13] = p9.y;
            let p10 = inv_last((*x)[10], (*x)[14], cx.lb, cx.pl); (*x)[10] = p10.x; (*x)[14] = p10.y;
            let p11 = inv_last((*x)[11], (*x)[15], cx.lb, cx.pl); (*x)[11] = p11.x; (*x)[15] = p11.y;
        } else {
            let f1 = trip_factor(cx, 1u);
            let w1_0 = trip_twiddle(cx, 1u, 0u, f1);
            let w1_1 = trip_twiddle(cx, 1u, 1u, f1);
            let p0 = inv_bf((*x)[0], (*x)[4], w1_0, cx.lb.q); (*x)[0] = p0.x; (*x)[4] = p0.y;
            let p1 = inv_bf((*x)[1], (*x)[5], w1_0, cx.lb.q); (*x)[1] = p1.x; (*x)[5] = p1.y;
            let p2 = inv_bf((*x)[2], (*x)[6], w1_0, cx.lb.q); (*x)[2] = p2.x; (*x)[6] = p2.y;
            let p3 = inv_bf((*x)[3], (*x)[7], w1_0, cx.lb.q); (*x)[3] = p3.x; (*x)[7] = p3.y;
            let p8 = inv_bf((*x)[8], (*x)[12], w1_1, cx.lb.q); (*x)[8] = p8.x; (*x)[12] = p8.y;
            let p9 = inv_bf((*x)[9], (*x)[13], w1_1, cx.lb.q); (*x)[9] = p9.x; (*x)[13] = p9.y;
            let p10 = inv_bf((*x)[10], (*x)[14], w1_1, cx.lb.q); (*x)[10] = p10.x; (*x)[14] = p10.y;
            let p11 = inv_bf((*x)[11], (*x)[15], w1_1, cx.lb.q); (*x)[11] = p11.x; (*x)[15] = p11.y;
        }
    }
    if (cx.t0 <= 0u) {
        if (cx.last && cx.t0 == 0u) {
            let p0 = inv_last((*x)[0], (*x)[8], cx.lb, cx.pl); (*x)[0] = p0.x; (*x)[8] = p0.y;
            let p1 = inv_last((*x)[1], (*x)[9], cx.lb, cx.pl); (*x)[1] = p1.x; (*x)[9] = p1.y;
            let p2 = inv_last((*x)[2], (*x)[10], cx.lb, cx.pl); (*x)[2] = p2.x; (*x)[10] = p2.y;
            let p3 = inv_last((*x)[3], (*x)[11], cx.lb, cx.pl); (*x)[3] = p3.x; (*x)[11] = p3.y;
            let p4 = inv_last((*x)[4], (*x)[12], cx.lb, cx.pl); (*x)[4] = p4.x; (*x)[12] = p4.y;
            let p5 = inv_last((*x)[5], (*x)[13], cx.lb, cx.pl); (*x)[5] = p5.x; (*x)[13] = p5.y;
            let p6 = inv_last((*x)[6], (*x)[14], cx.lb, cx.pl); (*x)[6] = p6.x; (*x)[14] = p6.y;
            let p7 = inv_last((*x)[7], (*x)[15], cx.lb, cx.pl); (*x)[7] = p7.x; (*x)[15] = p7.y;
        } else {
            let f0 = trip_factor(cx, 0u);
            let w0_0 = trip_twiddle(cx, 0u, 0u, f0);
            let p0 = inv_bf((*x)[0], (*x)[8], w0_0, cx.lb.q); (*x)[0] = p0.x; (*x)[8] = p0.y;
            let p1 = inv_bf((*x)[1], (*x)[9], w0_0, cx.lb.q); (*x)[1] = p1.x; (*x)[9] = p1.y;
            let p2 = inv_bf((*x)[2], (*x)[10], w0_0, cx.lb.q); (*x)[2] = p2.x; (*x)[10] = p2.y;
            let p3 = inv_bf((*x)[3], (*x)[11], w0_0, cx.lb.q); (*x)[3] = p3.x; (*x)[11] = p3.y;
            let p4 = inv_bf((*x)[4], (*x)[12], w0_0, cx.lb.q); (*x)[4] = p4.x; (*x)[12] = p4.y;
            let p5 = inv_bf((*x)[5], (*x)[13], w0_0, cx.lb.q); (*x)[5] = p5.x; (*x)[13] = p5.y;
            let p6 = inv_bf((*x)[6], (*x)[14], w0_0, cx.lb.q); (*x)[6] = p6.x; (*x)[14] = p6.y;
            let p7 = inv_bf((*x)[7], (*x)[15], w0_0, cx.lb.q); (*x)[7] = p7.x; (*x)[15] = p7.y;
        }
    }
}

fn load16(x: ptr<function, array<u32, 16>>, base: u32, k: u32, la: u32) {
    let m = (1u << k) - 1u;
    (*x)[0] = a[base + ((0u & m) << la) + ((0u >> k) << 8u)];
    (*x)[1] = a[base + ((1u & m) << la) + ((1u >> k) << 8u)];
    (*x)[2] = a[base + ((2u & m) << la) + ((2u >> k) << 8u)];
    (*x)[3] = a[base + ((3u & m) << la) + ((3u >> k) << 8u)];
    (*x)[4] = a[base + ((4u & m) << la) + ((4u >> k) << 8u)];
    (*x)[5] = a[base + ((5u & m) << la) + ((5u >> k) << 8u)];
    (*x)[6] = a[base + ((6u & m) << la) + ((6u >> k) << 8u)];
    (*x)[7] = a[base + ((7u & m) << la) + ((7u >> k) << 8u)];
    (*x)[8] = a[base + ((8u & m) << la) + ((8u >> k) << 8u)];
    (*x)[9] = a[base + ((9u & m) << la) + ((9u >> k) << 8u)];
    (*x)[10] = a[base + ((10u & m) << la) + ((10u >> k) << 8u)];
    (*x)[11] = a[base + ((11u & m) << la) + ((11u >> k) << 8u)];
    (*x)[12] = a[base + ((12u & m) << la) + ((12u >> k) << 8u)];
    (*x)[13] = a[base + ((13u & m) << la) + ((13u >> k) << 8u)];
    (*x)[14] = a[base + ((14u & m) << la) + ((14u >> k) << 8u)];
    (*x)[15] = a[base + ((15u & m) << la) + ((15u >> k) << 8u)];
}

fn store16(x: ptr<function, array<u32, 16>>, base: u32, k: u32, la: u32) {
    let m = (1u << k) - 1u;
    a[base + ((0u & m) << la) + ((0u >> k) << 8u)] = (*x)[0];
    a[base + ((1u & m) << la) + ((1u >> k) << 8u)] = (*x)[1];
    a[base + ((2u & m) << la) + ((2u >> k) << 8u)] = (*x)[2];
    a[base + ((3u & m) << la) + ((3u >> k) << 8u)] = (*x)[3];
    a[base + ((4u & m) << la) + ((4u >> k) << 8u)] = (*x)[4];
    a[base + ((5u & m) << la) + ((5u >> k) << 8u)] = (*x)[5];
    a[base + ((6u & m) << la) + ((6u >> k) << 8u)] = (*x)[6];
    a[base + ((7u & m) << la) + ((7u >> k) << 8u)] = (*x)[7];
    a[base + ((8u & m) << la) + ((8u >> k) << 8u)] = (*x)[8];
    a[base + ((9u & m) << la) + ((9u >> k) << 8u)] = (*x)[9];
    a[base + ((10u & m) << la) + ((10u >> k) << 8u)] = (*x)[10];
    a[base + ((11u & m) << la) + ((11u >> k) << 8u)] = (*x)[11];
    a[base + ((12u & m) << la) + ((12u >> k) << 8u)] = (*x)[12];
    a[base + ((13u & m) << la) + ((13u >> k) << 8u)] = (*x)[13];
    a[base + ((14u & m) << la) + ((14u >> k) << 8u)] = (*x)[14];
    a[base + ((15u & m) << la) + ((15u >> k) << 8u)] = (*x)[15];
}

// The inverse row pass's first load: 16 adjacent input words from `base` (of limb `limb`),
// through inv_in (ntt/in_place.wgsl: the buffer itself; ntt/from.wgsl: formed from other buffers).
fn inv_in16(x: ptr<function, array<u32, 16>>, base: u32, limb: u32) {
    (*x)[0] = inv_in(base, limb);
    (*x)[1] = inv_in(base + 1u, limb);
    (*x)[2] = inv_in(base + 2u, limb);
    (*x)[3] = inv_in(base + 3u, limb);
    (*x)[4] = inv_in(base + 4u, limb);
    (*x)[5] = inv_in(base + 5u, limb);
    (*x)[6] = inv_in(base + 6u, limb);
    (*x)[7] = inv_in(base + 7u, limb);
    (*x)[8] = inv_in(base + 8u, limb);
    (*x)[9] = inv_in(base + 9u, limb);
    (*x)[10] = inv_in(base + 10u, limb);
    (*x)[11] = inv_in(base + 11u, limb);
    (*x)[12] = inv_in(base + 12u, limb);
    (*x)[13] = inv_in(base + 13u, limb);
    (*x)[14] = inv_in(base + 14u, limb);
    (*x)[15] = inv_in(base + 15u, limb);
}

fn tile_load16(x: ptr<function, array<u32, 16>>, base: u32, la: u32) {
    (*x)[0] = tile[swizzle(base + (0u << la))];
    (*x)[1] = tile[swizzle(base + (1u << la))];
    (*x)[2] = tile[swizzle(base + (2u << la))];
    (*x)[3] = tile[swizzle(base + (3u << la))];
    (*x)[4] = tile[swizzle(base + (4u << la))];
    (*x)[5] = tile[swizzle(base + (5u << la))];
    (*x)[6] = tile[swizzle(base + (6u << la))];
    (*x)[7] = tile[swizzle(base + (7u << la))];
    (*x)[8] = tile[swizzle(base + (8u << la))];
    (*x)[9] = tile[swizzle(base + (9u << la))];
    (*x)[10] = tile[swizzle(base + (10u << la))];
    (*x)[11] = tile[swizzle(base + (11u << la))];
    (*x)[12] = tile[swizzle(base + (12u << la))];
    (*x)[13] = tile[swizzle(base + (13u << la))];
    (*x)[14] = tile[swizzle(base + (14u << la))];
    (*x)[15] = tile[swizzle(base + (15u << la))];
}

fn tile_store16(x: ptr<function, array<u32, 16>>, base: u32, la: u32) {
    tile[swizzle(base + (0u << la))] = (*x)[0];
    tile[swizzle(base + (1u << la))] = (*x)[1];
    tile[swizzle(base + (2u << la))] = (*x)[2];
    tile[swizzle(base + (3u << la))] = (*x)[3];
    tile[swizzle(base + (4u << la))] = (*x)[4];
    tile[swizzle(base + (5u << la))] = (*x)[5];
    tile[swizzle(base + (6u << la))] = (*x)[6];
    tile[swizzle(base + (7u << la))] = (*x)[7];
    tile[swizzle(base + (8u << la))] = (*x)[8];
    tile[swizzle(base + (9u << la))] = (*x)[9];
    tile[swizzle(base + (10u << la))] = (*x)[10];
    tile[swizzle(base + (11u << la))] = (*x)[11];
    tile[swizzle(base + (12u << la))] = (*x)[12];
    tile[swizzle(base + (13u << la))] = (*x)[13];
    tile[swizzle(base + (14u << la))] = (*x)[14];
    tile[swizzle(base + (15u << la))] = (*x)[15];
}

// ---- column passes ---------------------------------------------------------------------------

// Column pass geometry of workgroup g: (limb, outer block, word offset of the workgroup's first
// column, log2 of the column stride).
fn column_origin(g: u32, pl: Plan, s0: u32, k: u32) -> vec4<u32> {
    let limb = g >> pl.r;
    let gg = g & ((1u << pl.r) - 1u);
    let log_c = LOG_TILE - k;
    let log_s = pl.log_n - s0 - k;
    let per_block = log_s - log_c;
    let outer = gg >> per_block;
    let c0 = (gg & ((1u << per_block) - 1u)) << log_c;
    return vec4<u32>(limb, outer, limb * pl.n + (outer << (pl.log_n - s0)) + c0, log_s);
}

fn load_columns(off: u32, log_s: u32, log_c: u32, lid: u32) {
    for (var i = lid; i < TILE; i = i + WG) {
        tile[i] = a[off + ((i >> log_c) << log_s) + (i & ((1u << log_c) - 1u))];
    }
}

fn store_columns(off: u32, log_s: u32, log_c: u32, lid: u32) {
    for (var i = lid; i < TILE; i = i + WG) {
        a[off + ((i >> log_c) << log_s) + (i & ((1u << log_c) - 1u))] = tile[i];
    }
}

// The column pass's twiddle D[i], D'[i].
fn column_twiddle(lb: Limb, pl: Plan, i: u32) -> vec2<u32> {
    let di = lb.base + 4u + i;
    return vec2<u32>(tw[di], tw[di + pl.p]);
}

// Column radix-4 unit u (< TILE / 4) of the stages with half-blocks 2d and d = 2^log_d (in column
// elements): (tile indices, block of the half-block-d stage pair's first block: b4, so stage A's
// block is b4 and stage B's 2 b4 and 2 b4 + 1 within the outer block).
fn column_unit(u: u32, log_c: u32, log_d: u32) -> vec4<u32> {
    let col = u & ((1u << log_c) - 1u);
    let pp = u >> log_c;
    let b4 = pp >> log_d;
    let j = (b4 << (log_d + 2u)) + (pp & ((1u << log_d) - 1u));
    let d = 1u << log_d;
    return vec4<u32>((j << log_c) + col, ((j + d) << log_c) + col, ((j + 2u * d) << log_c) + col,
                     ((j + 3u * d) << log_c) + col);
}

@compute @workgroup_size(256)
fn fwd_columns(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    let pl = plan();
    if (g >= pl.groups) { return; }
    let s0 = params[5];
    let k = params[6];
    let o = column_origin(g, pl, s0, k);
    let lb = limb_consts(o.x, pl);
    let log_c = LOG_TILE - k;
    if (LOG_TILE == 12u && k <= 4u) {
        // One trip in registers: 2^(4 - k) columns per invocation (columns lid + 256 u).
        var x: array<u32, 16>;
        load16(&x, o.z + lid, k, o.w);
        fwd16(&x, Trip(lb, pl, false, 4u - k, s0 - (4u - k), o.y, 0u, false));
        store16(&x, o.z + lid, k, o.w);
        return;
    }
    load_columns(o.z, o.w, log_c, lid);
    workgroupBarrier();
    var ss = 0u;
    if ((k & 1u) == 1u) {
        // Stage s0: one block per outer block, pairs (j, j + 2^(k-1)).
        let w = column_twiddle(lb, pl, (1u << s0) + o.y);
        let half = TILE / 2u;
        for (var p = lid; p < half; p = p + WG) {
            let r = fwd_bf(tile[p], tile[p + half], w, lb.q);
            tile[p] = r.x;
            tile[p + half] = r.y;
        }
        workgroupBarrier();
        ss = 1u;
    }
    for (; ss < k; ss = ss + 2u) {
        let log_d = k - 2u - ss;
        let fa = (1u << (s0 + ss)) + (o.y << ss);
        let fb = (1u << (s0 + ss + 1u)) + (o.y << (ss + 1u));
        for (var u = lid; u < TILE / 4u; u = u + WG) {
            let i = column_unit(u, log_c, log_d);
            let b4 = (u >> log_c) >> log_d;
            fwd_unit(i, column_twiddle(lb, pl, fa + b4), column_twiddle(lb, pl, fb + 2u * b4),
                     column_twiddle(lb, pl, fb + 2u * b4 + 1u), lb.q, false);
        }
        workgroupBarrier();
    }
    store_columns(o.z, o.w, log_c, lid);
}

@compute @workgroup_size(256)
fn inv_columns(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    let pl = plan();
    if (g >= pl.groups) { return; }
    let s0 = params[5];
    let k = params[6];
    let o = column_origin(g, pl, s0, k);
    let lb = limb_consts(o.x, pl);
    let log_c = LOG_TILE - k;
    if (LOG_TILE == 12u && k <= 4u) {
        var x: array<u32, 16>;
        load16(&x, o.z + lid, k, o.w);
        inv16(&x, Trip(lb, pl, false, 4u - k, s0 - (4u - k), o.y, 0u, s0 == 0u));
        store16(&x, o.z + lid, k, o.w);
        return;
    }
    load_columns(o.z, o.w, log_c, lid);
    workgroupBarrier();
    // Stage pairs (ss + 1, ss) from the last: ss = k - 2, k - 4, ...
    let odd = k & 1u;
    for (var e = k - odd; e >= 2u; e = e - 2u) {
        let ss = e - 2u + odd;
        let log_d = k - 2u - ss;
        let sa = s0 + ss;
        let fa = (1u << sa) + (o.y << ss);
        let fb = (1u << (sa + 1u)) + (o.y << (ss + 1u));
        for (var u = lid; u < TILE / 4u; u = u + WG) {
            let i = column_unit(u, log_c, log_d);
            let b4 = (u >> log_c) >> log_d;
            inv_unit(i, column_twiddle(lb, pl, fb + 2u * b4), column_twiddle(lb, pl, fb + 2u * b4 + 1u),
                     column_twiddle(lb, pl, fa + b4), lb, pl, sa == 0u);
        }
        workgroupBarrier();
    }
    if (odd == 1u) {
        // Stage s0: one block per outer block.
        let half = TILE / 2u;
        let w = column_twiddle(lb, pl, (1u << s0) + o.y);
        for (var p = lid; p < half; p = p + WG) {
            var r: vec2<u32>;
            if (s0 == 0u) {
                r = inv_last(tile[p], tile[p + half], lb, pl);
            } else {
                r = inv_bf(tile[p], tile[p + half], w, lb.q);
            }
            tile[p] = r.x;
            tile[p + half] = r.y;
        }
        workgroupBarrier();
    }
    store_columns(o.z, o.w, log_c, lid);
}

// ---- the row pass ----------------------------------------------------------------------------

// Row tile geometry of workgroup g: (limb, tile index within the limb, word offset).
fn row_origin(g: u32, pl: Plan) -> vec3<u32> {
    let limb = g >> pl.r;
    let tt = g & ((1u << pl.r) - 1u);
    return vec3<u32>(limb, tt, limb * pl.n + (tt << pl.lt));
}

// F[s - r][tt]: the stage factor of row tile tt at stage s >= r.
fn stage_factor(lb: Limb, pl: Plan, s: u32, tt: u32) -> u32 {
    return tw[lb.base + 4u + 2u * pl.p + 2u * pl.h + ((s - pl.r) << pl.r) + tt];
}

// Row radix-4 steps: a tile of 2^lt values holds 2^(lt - 2) units, 2^lu per invocation
// (lu = max(lt - 10, 0)). The stages with half-blocks 2d and d = 2^log_d have blocks of 4d
// values, d units each: with d >= 2^lu, 2^(log_d - lu) adjacent invocations share a block, each
// taking every such stride of it (one set of twiddles per invocation, adjacent invocations on
// adjacent words); smaller blocks go whole to one invocation, 2^(lu - log_d) blocks each, block
// b4 = bi 256 + lid (adjacent invocations on adjacent blocks). Unit j of block b4 starts at
// b4 4d + j.

@compute @workgroup_size(256)
fn fwd_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    let pl = plan();
    if (g >= pl.groups) { return; }
    let o = row_origin(g, pl);
    let lb = limb_consts(o.x, pl);
    if (LOG_TILE == 12u && pl.lt == 12u) {
        // Three trips in registers: the 16 values at stride 256 (from the buffer), at stride 16
        // within blocks of 256, then 16 adjacent ones (to the buffer).
        var x: array<u32, 16>;
        var cx = Trip(lb, pl, true, 0u, pl.r, 0u, o.y, false);
        load16(&x, o.z + lid, 4u, 8u);
        fwd16(&x, cx);
        tile_store16(&x, lid, 8u);
        workgroupBarrier();
        let mid = ((lid >> 4u) << 8u) + (lid & 15u);
        tile_load16(&x, mid, 4u);
        cx.sbase = pl.r + 4u;
        cx.outer = lid >> 4u;
        fwd16(&x, cx);
        tile_store16(&x, mid, 4u);
        workgroupBarrier();
        tile_load16(&x, lid << 4u, 0u);
        cx.sbase = pl.r + 8u;
        cx.outer = lid;
        cx.last = true;
        fwd16(&x, cx);
        store16(&x, o.z + (lid << 4u), 4u, 0u);
        return;
    }
    let size = 1u << pl.lt;
    for (var i = lid; i < size; i = i + WG) {
        tile[i] = a[o.z + i];
    }
    workgroupBarrier();
    var hi = pl.lt;
    if ((pl.lt & 1u) == 1u) {
        // Stage r: one block per tile (local block 0), pairs (p, p + size / 2).
        let half = size >> 1u;
        let w = row_twiddle(lb, pl, 0u, stage_factor(lb, pl, pl.r, o.y));
        for (var p = lid; p < half; p = p + WG) {
            var r = fwd_bf(tile[p], tile[p + half], w, lb.q);
            if (half == 1u) {
                r = vec2<u32>(reduce_4q(r.x, lb.q), reduce_4q(r.y, lb.q));
            }
            tile[p] = r.x;
            tile[p + half] = r.y;
        }
        workgroupBarrier();
        hi = hi - 1u;
    }
    let lu = select(0u, pl.lt - 10u, pl.lt > 10u);
    let units = size >> 2u;
    for (; hi >= 2u; hi = hi - 2u) {
        let log_d = hi - 2u;
        let d = 1u << log_d;
        let sa = pl.log_n - hi;
        let fa = stage_factor(lb, pl, sa, o.y);
        let fb = stage_factor(lb, pl, sa + 1u, o.y);
        let last = log_d == 0u;
        if (log_d >= lu) {
            let sh = log_d - lu;
            let b4 = lid >> sh;
            if (b4 < (units >> log_d)) {
                let wa = row_twiddle(lb, pl, b4, fa);
                let wb0 = row_twiddle(lb, pl, 2u * b4, fb);
                let wb1 = row_twiddle(lb, pl, 2u * b4 + 1u, fb);
                let j0 = (b4 << (log_d + 2u)) + (lid & ((1u << sh) - 1u));
                for (var rr = 0u; rr < (1u << lu); rr = rr + 1u) {
                    let x = j0 + (rr << sh);
                    fwd_unit(vec4<u32>(x, x + d, x + 2u * d, x + 3u * d), wa, wb0, wb1, lb.q, last);
                }
            }
        } else {
            let per = lu - log_d;
            for (var bi = 0u; bi < (1u << per); bi = bi + 1u) {
                let b4 = bi * WG + lid;
                let wa = row_twiddle(lb, pl, b4, fa);
                let wb0 = row_twiddle(lb, pl, 2u * b4, fb);
                let wb1 = row_twiddle(lb, pl, 2u * b4 + 1u, fb);
                for (var j = 0u; j < d; j = j + 1u) {
                    let x = (b4 << (log_d + 2u)) + j;
                    fwd_unit(vec4<u32>(x, x + d, x + 2u * d, x + 3u * d), wa, wb0, wb1, lb.q, last);
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = lid; i < size; i = i + WG) {
        a[o.z + i] = tile[i];
    }
}

@compute @workgroup_size(256)
fn inv_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    let pl = plan();
    if (g >= pl.groups) { return; }
    let o = row_origin(g, pl);
    let lb = limb_consts(o.x, pl);
    if (LOG_TILE == 12u && pl.lt == 12u) {
        // The forward's trips reversed.
        var x: array<u32, 16>;
        var cx = Trip(lb, pl, true, 0u, pl.r + 8u, lid, o.y, false);
        inv_in16(&x, o.z + (lid << 4u), o.x);
        inv16(&x, cx);
        tile_store16(&x, lid << 4u, 0u);
        workgroupBarrier();
        let mid = ((lid >> 4u) << 8u) + (lid & 15u);
        tile_load16(&x, mid, 4u);
        cx.sbase = pl.r + 4u;
        cx.outer = lid >> 4u;
        inv16(&x, cx);
        tile_store16(&x, mid, 4u);
        workgroupBarrier();
        tile_load16(&x, lid, 8u);
        cx.sbase = pl.r;
        cx.outer = 0u;
        cx.last = pl.r == 0u;
        inv16(&x, cx);
        store16(&x, o.z + lid, 4u, 8u);
        return;
    }
    let size = 1u << pl.lt;
    for (var i = lid; i < size; i = i + WG) {
        tile[i] = inv_in(o.z + i, o.x);
    }
    workgroupBarrier();
    let lu = select(0u, pl.lt - 10u, pl.lt > 10u);
    let units = size >> 2u;
    let even = pl.lt - (pl.lt & 1u);
    for (var lo = 0u; lo < even; lo = lo + 2u) {
        // Stages with half-blocks d = 2^lo (stage sb) then 2d (stage sb - 1).
        let log_d = lo;
        let d = 1u << log_d;
        let sb = pl.log_n - 1u - lo;
        let fb = stage_factor(lb, pl, sb, o.y);
        // Stage sb - 1 = 0 (the last, N^{-1} folded in) is in this pass only when r = 0; then its
        // factor is unused.
        let fa = stage_factor(lb, pl, sb - 1u, o.y);
        let last = sb == 1u;
        if (log_d >= lu) {
            let sh = log_d - lu;
            let b4 = lid >> sh;
            if (b4 < (units >> log_d)) {
                let wb0 = row_twiddle(lb, pl, 2u * b4, fb);
                let wb1 = row_twiddle(lb, pl, 2u * b4 + 1u, fb);
                let wa = row_twiddle(lb, pl, b4, fa);
                let j0 = (b4 << (log_d + 2u)) + (lid & ((1u << sh) - 1u));
                for (var rr = 0u; rr < (1u << lu); rr = rr + 1u) {
                    let x = j0 + (rr << sh);
                    inv_unit(vec4<u32>(x, x + d, x + 2u * d, x + 3u * d), wb0, wb1, wa, lb, pl, last);
                }
            }
        } else {
            let per = lu - log_d;
            for (var bi = 0u; bi < (1u << per); bi = bi + 1u) {
                let b4 = bi * WG + lid;
                let wb0 = row_twiddle(lb, pl, 2u * b4, fb);
                let wb1 = row_twiddle(lb, pl, 2u * b4 + 1u, fb);
                let wa = row_twiddle(lb, pl, b4, fa);
                for (var j = 0u; j < d; j = j + 1u) {
                    let x = (b4 << (log_d + 2u)) + j;
                    inv_unit(vec4<u32>(x, x + d, x + 2u * d, x + 3u * d), wb0, wb1, wa, lb, pl, last);
                }
            }
        }
        workgroupBarrier();
    }
    if ((pl.lt & 1u) == 1u) {
        // Stage r: one block per tile (local block 0).
        let half = size >> 1u;
        let w = row_twiddle(lb, pl, 0u, stage_factor(lb, pl, pl.r, o.y));
        for (var p = lid; p < half; p = p + WG) {
            var r: vec2<u32>;
            if (pl.r == 0u) {
                r = inv_last(tile[p], tile[p + half], lb, pl);
            } else {
                r = inv_bf(tile[p], tile[p + half], w, lb.q);
            }
            tile[p] = r.x;
            tile[p + half] = r.y;
        }
        workgroupBarrier();
    }
    for (var i = lid; i < size; i = i + WG) {
        a[o.z + i] = tile[i];
    }
}
