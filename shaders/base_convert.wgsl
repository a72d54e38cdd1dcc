// Fast basis conversion with centred digits (CPU twin: math/rns.rs BaseConverter::convert):
// y_i = [x_i qhat_i^{-1}]_{q_i} (Shoup, any input word read mod q_i), h = #{i : y_i > q_i / 2},
// out_j = sum_i y_i (qhat_i mod p_j) - h (Q mod p_j) mod p_j. One thread per output word.
// params: [log_n, total, from_len]; from: per source limb [q_i, qhat_inv_i, its Shoup, q_i / 2];
// to: per target limb [p_j, Q mod p_j, its Shoup, 0]; matrix: per (j, i), j-major,
// [qhat_i mod p_j, its Shoup companion]; a: from_len limbs; out: to_len limbs.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> from_limbs: array<u32>;
@group(0) @binding(2) var<storage, read> to_limbs: array<u32>;
@group(0) @binding(3) var<storage, read> qhat_mod_p: array<u32>;
@group(0) @binding(4) var<storage, read> a: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_id(gid, nwg);
    if (idx >= params[1]) { return; }
    let n = 1u << params[0];
    let l = params[2];
    let j = idx >> params[0];
    let c = idx & (n - 1u);
    let p = to_limbs[j * 4u];
    var acc = 0u;
    var h = 0u;
    for (var i = 0u; i < l; i = i + 1u) {
        let q = from_limbs[i * 4u];
        let y = shoup_mul(a[i * n + c], from_limbs[i * 4u + 1u], from_limbs[i * 4u + 2u], q);
        if (y > from_limbs[i * 4u + 3u]) { h = h + 1u; }
        let m = (j * l + i) * 2u;
        acc = mod_add(acc, shoup_mul(y, qhat_mod_p[m], qhat_mod_p[m + 1u], p), p);
    }
    out[idx] = mod_sub(acc, shoup_mul(h, to_limbs[j * 4u + 1u], to_limbs[j * 4u + 2u], p), p);
}
