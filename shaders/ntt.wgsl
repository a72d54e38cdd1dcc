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

// Row pass: the rr-th pair (rr < 2^lp) of invocation lid in a stage with half-block t = 2^log_t
// over a tile of 2^(lp + 9) values or fewer (2^lp pairs per invocation, lp = max(lt - 9, 0)):
// (index of x in the tile, local block, index within the block, 1 if the pair exists). Blocks
// of 2^lp pairs or more are split among 2^(log_t - lp) adjacent invocations, each taking every
// such stride of one block (one twiddle per invocation); smaller blocks go whole to one
// invocation, 2^lp consecutive pairs each.
fn row_pair(lid: u32, rr: u32, log_t: u32, lp: u32, half: u32) -> vec4<u32> {
    var blk: u32;
    var j: u32;
    var live = 1u;
    if (log_t >= lp) {
        let sh = log_t - lp;
        blk = lid >> sh;
        j = (lid & ((1u << sh) - 1u)) + (rr << sh);
        if (blk >= (half >> log_t)) { live = 0u; }
    } else {
        let p = (lid << lp) + rr;
        blk = p >> log_t;
        j = p & ((1u << log_t) - 1u);
    }
    return vec4<u32>((blk << (log_t + 1u)) + j, blk, j, live);
}

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

// Column pass, pair p of a stage with half-block 2^log_tj (in column elements): (tile index of
// x, tile index of y, block of the stage within the outer block).
fn column_pair(p: u32, log_c: u32, log_tj: u32) -> vec3<u32> {
    let col = p & ((1u << log_c) - 1u);
    let pp = p >> log_c;
    let jblk = pp >> log_tj;
    let jx = (jblk << (log_tj + 1u)) + (pp & ((1u << log_tj) - 1u));
    return vec3<u32>((jx << log_c) + col, ((jx + (1u << log_tj)) << log_c) + col, jblk);
}

// The column pass's twiddle D[i], D'[i].
fn column_twiddle(lb: Limb, pl: Plan, i: u32) -> vec2<u32> {
    let di = lb.base + 4u + i;
    return vec2<u32>(tw[di], tw[di + pl.p]);
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
    load_columns(o.z, o.w, log_c, lid);
    workgroupBarrier();
    for (var ss = 0u; ss < k; ss = ss + 1u) {
        let log_tj = k - 1u - ss;
        let first = (1u << (s0 + ss)) + (o.y << ss);
        for (var p = lid; p < TILE / 2u; p = p + WG) {
            let c = column_pair(p, log_c, log_tj);
            let r = fwd_bf(tile[c.x], tile[c.y], column_twiddle(lb, pl, first + c.z), lb.q);
            tile[c.x] = r.x;
            tile[c.y] = r.y;
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
    load_columns(o.z, o.w, log_c, lid);
    workgroupBarrier();
    for (var i = 0u; i < k; i = i + 1u) {
        let ss = k - 1u - i;
        let log_tj = i;
        let s = s0 + ss;
        let first = (1u << s) + (o.y << ss);
        for (var p = lid; p < TILE / 2u; p = p + WG) {
            let c = column_pair(p, log_c, log_tj);
            var r: vec2<u32>;
            if (s == 0u) {
                r = inv_last(tile[c.x], tile[c.y], lb, pl);
            } else {
                r = inv_bf(tile[c.x], tile[c.y], column_twiddle(lb, pl, first + c.z), lb.q);
            }
            tile[c.x] = r.x;
            tile[c.y] = r.y;
        }
        workgroupBarrier();
    }
    store_columns(o.z, o.w, log_c, lid);
}

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

@compute @workgroup_size(256)
fn fwd_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    let pl = plan();
    if (g >= pl.groups) { return; }
    let o = row_origin(g, pl);
    let lb = limb_consts(o.x, pl);
    let size = 1u << pl.lt;
    let half = size >> 1u;
    let lp = select(0u, pl.lt - 9u, pl.lt > 9u);
    for (var i = lid; i < size; i = i + WG) {
        tile[i] = a[o.z + i];
    }
    workgroupBarrier();
    for (var i = 0u; i < pl.lt; i = i + 1u) {
        let log_t = pl.lt - 1u - i;
        let t = 1u << log_t;
        let s = pl.log_n - 1u - log_t;
        let f = stage_factor(lb, pl, s, o.y);
        var w = vec2<u32>(0u, 0u);
        for (var rr = 0u; rr < (1u << lp); rr = rr + 1u) {
            let pr = row_pair(lid, rr, log_t, lp, half);
            if (pr.w == 1u) {
                if (rr == 0u || pr.z == 0u) {
                    w = row_twiddle(lb, pl, pr.y, f);
                }
                var r = fwd_bf(tile[pr.x], tile[pr.x + t], w, lb.q);
                if (log_t == 0u) {
                    r = vec2<u32>(reduce_4q(r.x, lb.q), reduce_4q(r.y, lb.q));
                }
                tile[pr.x] = r.x;
                tile[pr.x + t] = r.y;
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
    let size = 1u << pl.lt;
    let half = size >> 1u;
    let lp = select(0u, pl.lt - 9u, pl.lt > 9u);
    for (var i = lid; i < size; i = i + WG) {
        tile[i] = a[o.z + i];
    }
    workgroupBarrier();
    for (var log_t = 0u; log_t < pl.lt; log_t = log_t + 1u) {
        let t = 1u << log_t;
        let s = pl.log_n - 1u - log_t;
        // Stage 0 (the last, N^{-1} folded in) is in this pass only when r = 0; its factor is unused.
        let f = stage_factor(lb, pl, s, o.y);
        var w = vec2<u32>(0u, 0u);
        for (var rr = 0u; rr < (1u << lp); rr = rr + 1u) {
            let pr = row_pair(lid, rr, log_t, lp, half);
            if (pr.w == 1u) {
                var r: vec2<u32>;
                if (s == 0u) {
                    r = inv_last(tile[pr.x], tile[pr.x + t], lb, pl);
                } else {
                    if (rr == 0u || pr.z == 0u) {
                        w = row_twiddle(lb, pl, pr.y, f);
                    }
                    r = inv_bf(tile[pr.x], tile[pr.x + t], w, lb.q);
                }
                tile[pr.x] = r.x;
                tile[pr.x + t] = r.y;
            }
        }
        workgroupBarrier();
    }
    for (var i = lid; i < size; i = i + WG) {
        a[o.z + i] = tile[i];
    }
}
