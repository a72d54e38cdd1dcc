// Fast basis conversion with centred digits, several conversions ("parts") in one dispatch (CPU
// twin: backend/cpu.rs base_convert = math/rns.rs BaseConverter::convert per part). For a part
// with source primes q_i and target primes p_j:
// y_i = [x_i qhat_i^{-1}]_{q_i} (Shoup, any input word read mod q_i), h = #{i : y_i > q_i / 2},
// out_j = sum_i y_i (qhat_i mod p_j) - h (Q mod p_j) mod p_j.
// One invocation per coefficient and tile of TILE target limbs of one part: it reads and scales
// each source residue once for the whole tile (not once per target limb).
// params: [log_n, total, parts, from_base, to_base, matrix_base]; total = tiles * N.
// table: per part p (8 words at 8 p): [from_start, from_len, to_start, to_len, out_limb,
//   matrix_start, tile_start, 0]; from entries (4 words) at from_base + 4 (from_start + i):
//   [limb of a, q_i, qhat_inv_i, its Shoup]; to entries (4 words) at to_base + 4 (to_start + j):
//   [p_j, Q mod p_j, its Shoup, 0]; matrix (2 words per entry, j-major within a part) at
//   matrix_base + matrix_start + 2 (j from_len + i): [qhat_i mod p_j, its Shoup].
// a: the input limbs; out: every part's targets, part after part (part p from limb out_limb).
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const TILE: u32 = 8u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_id(gid, nwg);
    if (idx >= params[1]) { return; }
    let log_n = params[0];
    let n = 1u << log_n;
    let tile = idx >> log_n;
    let c = idx & (n - 1u);
    // The part holding this tile (tile_start increases with the part).
    var hb = 0u;
    for (var p = 1u; p < params[2]; p = p + 1u) {
        if (table[p * 8u + 6u] <= tile) { hb = p * 8u; }
    }
    let from_start = table[hb];
    let from_len = table[hb + 1u];
    let to_start = table[hb + 2u];
    let to_len = table[hb + 3u];
    let out_limb = table[hb + 4u];
    let mstart = params[5] + table[hb + 5u];
    let j0 = (tile - table[hb + 6u]) * TILE;
    let cnt = min(TILE, to_len - j0);
    var acc: array<u32, 8>;
    var h = 0u;
    for (var i = 0u; i < from_len; i = i + 1u) {
        let f = params[3] + (from_start + i) * 4u;
        let q = table[f + 1u];
        let y = shoup_mul(a[table[f] * n + c], table[f + 2u], table[f + 3u], q);
        if (y > (q >> 1u)) { h = h + 1u; }
        for (var t = 0u; t < cnt; t = t + 1u) {
            let j = j0 + t;
            let p = table[params[4] + (to_start + j) * 4u];
            let m = mstart + (j * from_len + i) * 2u;
            acc[t] = mod_add(acc[t], shoup_mul(y, table[m], table[m + 1u], p), p);
        }
    }
    for (var t = 0u; t < cnt; t = t + 1u) {
        let j = j0 + t;
        let e = params[4] + (to_start + j) * 4u;
        let p = table[e];
        out[(out_limb + j) * n + c] = mod_sub(acc[t], shoup_mul(h, table[e + 1u], table[e + 2u], p), p);
    }
}
