// Fast basis conversion with centred digits, several conversions ("parts") in one dispatch (CPU
// twin: backend/cpu.rs base_convert = math/rns.rs BaseConverter::convert per part). For a part
// with source primes q_i and target primes p_j:
// y_i = [x_i qhat_i^{-1}]_{q_i} (Shoup, any input word read mod q_i), h = #{i : y_i > q_i / 2},
// out_j = sum_i y_i (qhat_i mod p_j) - h (Q mod p_j) mod p_j.
// One invocation per coefficient and tile of 8 target limbs of one part (two vec4 accumulators,
// shared/zq4.wgsl): it reads and scales each source residue once for the whole tile, not once
// per target limb. A part's last tile is padded with lanes of modulus 1 and zero constants,
// which compute 0 and are not written.
// params: [log_n, total = tiles * N, parts, from_base, tiles_base, matrix_base];
// table: per part p (8 words at 8 p): [from_start, from_len, out_limb, matrix_start, tile_start,
//   to_len, 0, 0]; from entries (4 words) at from_base + 4 (from_start + i): [limb of a, q_i,
//   qhat_inv_i, its Shoup]; per tile (global index t, 24 words at tiles_base + 24 t): the 8
//   lanes' [p_j], [Q mod p_j], [its Shoup]; the matrix at matrix_base + matrix_start, per tile of
//   the part and source limb i (16 words at 16 (tile * from_len + i)): the 8 lanes'
//   [qhat_i mod p_j], [its Shoup].
// a: the input limbs; out: every part's targets, part after part (part p from limb out_limb).
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn lanes(at: u32) -> vec4<u32> {
    return vec4<u32>(table[at], table[at + 1u], table[at + 2u], table[at + 3u]);
}

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
        if (table[p * 8u + 4u] <= tile) { hb = p * 8u; }
    }
    let from_start = table[hb];
    let from_len = table[hb + 1u];
    let out_limb = table[hb + 2u];
    let tt = tile - table[hb + 4u];
    let j0 = tt * 8u;
    let cnt = min(8u, table[hb + 5u] - j0);
    let mbase = params[5] + table[hb + 3u] + tt * from_len * 16u;
    let tb = params[4] + tile * 24u;
    let p_lo = lanes(tb);
    let p_hi = lanes(tb + 4u);
    var acc_lo = vec4<u32>(0u);
    var acc_hi = vec4<u32>(0u);
    var h = 0u;
    for (var i = 0u; i < from_len; i = i + 1u) {
        let f = params[3] + (from_start + i) * 4u;
        let q = table[f + 1u];
        let y = shoup_mul(a[table[f] * n + c], table[f + 2u], table[f + 3u], q);
        if (y > (q >> 1u)) { h = h + 1u; }
        let m = mbase + i * 16u;
        acc_lo = mod_add4(acc_lo, shoup_mul4(vec4<u32>(y), lanes(m), lanes(m + 8u), p_lo), p_lo);
        acc_hi = mod_add4(acc_hi, shoup_mul4(vec4<u32>(y), lanes(m + 4u), lanes(m + 12u), p_hi), p_hi);
    }
    let hv = vec4<u32>(h);
    let r_lo = mod_sub4(acc_lo, shoup_mul4(hv, lanes(tb + 8u), lanes(tb + 16u), p_lo), p_lo);
    let r_hi = mod_sub4(acc_hi, shoup_mul4(hv, lanes(tb + 12u), lanes(tb + 20u), p_hi), p_hi);
    let o = (out_limb + j0) * n + c;
    for (var t = 0u; t < min(cnt, 4u); t = t + 1u) {
        out[o + t * n] = r_lo[t];
    }
    for (var t = 4u; t < cnt; t = t + 1u) {
        out[o + t * n] = r_hi[t - 4u];
    }
}
