// Negacyclic NTT of every limb of a limb-major [limb][N] buffer, in place (CPU twins:
// backend/cpu.rs ntt_forward / ntt_inverse = math/ntt.rs NttTable::forward / inverse, strict).
// Forward: Cooley-Tukey, natural in, bit-reversed out; inverse: Gentleman-Sande, bit-reversed in,
// natural out, N^{-1} folded into the last stage. Same lazy butterflies as the CPU (values in
// [0, 4q) forward, [0, 2q) inverse); the last stage reduces to the canonical residue.
//
// limbs: q per limb. tw: per limb 2N words [T | T'], T = W (forward) or V (inverse) of
// NttTable::forward_twiddles / inverse_twiddles, T' the Shoup companions; the stage with m blocks
// uses T[m + block], the inverse's last stage (m = 1) T[0] on sums and T[1] on differences.
//
// Entry points:
// * fwd_stage / inv_stage: one butterfly stage over the whole buffer, one invocation per pair.
//   params: [log_n, total = limbs * N / 2, log_t] (t = N / 2m: half the block size).
// * fwd_tile / inv_tile: all stages whose blocks fit in a tile of 2^log_tile <= 2048 values, in
//   workgroup memory, one workgroup per tile (forward: the last log_tile stages; inverse: the
//   first log_tile). params: [log_n, total = number of tiles, log_tile].
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read> tw: array<u32>;
@group(0) @binding(3) var<storage, read_write> a: array<u32>;

var<workgroup> tile: array<u32, 2048>;

// Harvey forward butterfly: x, y < 4q in, both outputs < 4q.
fn fwd_bf(x: u32, y: u32, w: u32, ws: u32, q: u32) -> vec2<u32> {
    let two_q = q << 1u;
    var xx = x;
    if (xx >= two_q) { xx = xx - two_q; }
    let u = shoup_mul_lazy(y, w, ws, q);
    return vec2<u32>(xx + u, xx + two_q - u);
}

// Harvey inverse butterfly: x, y < 2q in, both outputs < 2q.
fn inv_bf(x: u32, y: u32, w: u32, ws: u32, q: u32) -> vec2<u32> {
    let two_q = q << 1u;
    var s = x + y;
    if (s >= two_q) { s = s - two_q; }
    return vec2<u32>(s, shoup_mul_lazy(x + two_q - y, w, ws, q));
}

// Last inverse stage (one block), N^{-1} folded in: x, y < 2q in, canonical out.
fn inv_last(x: u32, y: u32, q: u32, base: u32, n: u32) -> vec2<u32> {
    let two_q = q << 1u;
    var u = shoup_mul_lazy(x + y, tw[base], tw[base + n], q);
    var v = shoup_mul_lazy(x + two_q - y, tw[base + 1u], tw[base + n + 1u], q);
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

// Pair p (< N/2) of a stage with half-block t = 2^log_t: (index of x within the limb, block).
fn pair_index(p: u32, log_t: u32) -> vec2<u32> {
    let blk = p >> log_t;
    let j = p & ((1u << log_t) - 1u);
    return vec2<u32>((blk << (log_t + 1u)) + j, blk);
}

@compute @workgroup_size(256)
fn fwd_stage(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let log_n = params[0];
    let log_t = params[2];
    let n = 1u << log_n;
    let limb = i >> (log_n - 1u);
    let p = i & ((n >> 1u) - 1u);
    let q = limbs[limb];
    let pi = pair_index(p, log_t);
    let m = n >> (log_t + 1u);
    let base = limb * 2u * n;
    let w = tw[base + m + pi.y];
    let ws = tw[base + n + m + pi.y];
    let ix = limb * n + pi.x;
    let iy = ix + (1u << log_t);
    var r = fwd_bf(a[ix], a[iy], w, ws, q);
    if (log_t == 0u) {
        r = vec2<u32>(reduce_4q(r.x, q), reduce_4q(r.y, q));
    }
    a[ix] = r.x;
    a[iy] = r.y;
}

@compute @workgroup_size(256)
fn inv_stage(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let log_n = params[0];
    let log_t = params[2];
    let n = 1u << log_n;
    let limb = i >> (log_n - 1u);
    let p = i & ((n >> 1u) - 1u);
    let q = limbs[limb];
    let pi = pair_index(p, log_t);
    let m = n >> (log_t + 1u);
    let base = limb * 2u * n;
    let ix = limb * n + pi.x;
    let iy = ix + (1u << log_t);
    var r: vec2<u32>;
    if (m == 1u) {
        r = inv_last(a[ix], a[iy], q, base, n);
    } else {
        r = inv_bf(a[ix], a[iy], tw[base + m + pi.y], tw[base + n + m + pi.y], q);
    }
    a[ix] = r.x;
    a[iy] = r.y;
}

@compute @workgroup_size(256)
fn fwd_tile(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    if (g >= params[1]) { return; }
    let log_n = params[0];
    let log_tile = params[2];
    let n = 1u << log_n;
    let size = 1u << log_tile;
    let half = size >> 1u;
    let tiles_log = log_n - log_tile;
    let limb = g >> tiles_log;
    let tt = g & ((1u << tiles_log) - 1u);
    let q = limbs[limb];
    let base = limb * 2u * n;
    let off = limb * n + (tt << log_tile);
    for (var k = lid; k < size; k = k + 256u) {
        tile[k] = a[off + k];
    }
    workgroupBarrier();
    for (var s = 0u; s < log_tile; s = s + 1u) {
        let log_t = log_tile - 1u - s;
        let m = n >> (log_t + 1u);
        // Blocks of this stage before the tile.
        let first = tt << (log_tile - log_t - 1u);
        for (var p = lid; p < half; p = p + 256u) {
            let pi = pair_index(p, log_t);
            let wi = base + m + first + pi.y;
            let iy = pi.x + (1u << log_t);
            var r = fwd_bf(tile[pi.x], tile[iy], tw[wi], tw[wi + n], q);
            if (log_t == 0u) {
                r = vec2<u32>(reduce_4q(r.x, q), reduce_4q(r.y, q));
            }
            tile[pi.x] = r.x;
            tile[iy] = r.y;
        }
        workgroupBarrier();
    }
    for (var k = lid; k < size; k = k + 256u) {
        a[off + k] = tile[k];
    }
}

@compute @workgroup_size(256)
fn inv_tile(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32,
            @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = wid.x + wid.y * nwg.x;
    if (g >= params[1]) { return; }
    let log_n = params[0];
    let log_tile = params[2];
    let n = 1u << log_n;
    let size = 1u << log_tile;
    let half = size >> 1u;
    let tiles_log = log_n - log_tile;
    let limb = g >> tiles_log;
    let tt = g & ((1u << tiles_log) - 1u);
    let q = limbs[limb];
    let base = limb * 2u * n;
    let off = limb * n + (tt << log_tile);
    for (var k = lid; k < size; k = k + 256u) {
        tile[k] = a[off + k];
    }
    workgroupBarrier();
    for (var log_t = 0u; log_t < log_tile; log_t = log_t + 1u) {
        let m = n >> (log_t + 1u);
        let first = tt << (log_tile - log_t - 1u);
        for (var p = lid; p < half; p = p + 256u) {
            let pi = pair_index(p, log_t);
            let iy = pi.x + (1u << log_t);
            var r: vec2<u32>;
            if (m == 1u) {
                r = inv_last(tile[pi.x], tile[iy], q, base, n);
            } else {
                let wi = base + m + first + pi.y;
                r = inv_bf(tile[pi.x], tile[iy], tw[wi], tw[wi + n], q);
            }
            tile[pi.x] = r.x;
            tile[iy] = r.y;
        }
        workgroupBarrier();
    }
    for (var k = lid; k < size; k = k + 256u) {
        a[off + k] = tile[k];
    }
}
