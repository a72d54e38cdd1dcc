// Divide-and-round by the product D of the dropped moduli (CPU twin: math/rns.rs
// ScaleDown::apply). z_j = [x_j * drop_factor_j]_{d_j}; h = #{j : z_j > d_j / 2};
// out_i = x_i D^{-1} - sum_j z_j (t d_j^{-1}) + h t  mod k_i.
// With several dropped moduli this is the CPU formula term for term. With one it is the CPU's
// centred lift c = z - d [z > d / 2] rewritten: c t d^{-1} = z t d^{-1} - t [z > d / 2] mod k_i,
// the same residue. One thread per output word.
// params: [log_n, total, drop_len, keep_len]; keep: per kept limb
// [k_i, bits, mu, D^{-1} mod k_i, its Shoup, t mod k_i, 0, 0]; drop: per dropped limb
// [d_j, drop_factor_j, its Shoup, d_j / 2]; lift: per (i, j), i-major, [t d_j^{-1} mod k_i, its
// Shoup]; a: keep_len kept limbs then drop_len dropped limbs; out: keep_len limbs.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> keep: array<u32>;
@group(0) @binding(2) var<storage, read> drop_limbs: array<u32>;
@group(0) @binding(3) var<storage, read> lift: array<u32>;
@group(0) @binding(4) var<storage, read> a: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_id(gid, nwg);
    if (idx >= params[1]) { return; }
    let n = 1u << params[0];
    let l = params[2];
    let kl = params[3];
    let i = idx >> params[0];
    let c = idx & (n - 1u);
    let kb = i * 8u;
    let q = keep[kb];
    let bits = keep[kb + 1u];
    let mu = keep[kb + 2u];
    var acc = 0u;
    var h = 0u;
    for (var j = 0u; j < l; j = j + 1u) {
        let d = drop_limbs[j * 4u];
        let z = shoup_mul(a[(kl + j) * n + c], drop_limbs[j * 4u + 1u], drop_limbs[j * 4u + 2u], d);
        if (z > drop_limbs[j * 4u + 3u]) { h = h + 1u; }
        let m = (i * l + j) * 2u;
        acc = mod_add(acc, shoup_mul(z, lift[m], lift[m + 1u], q), q);
    }
    let scaled = shoup_mul(a[idx], keep[kb + 3u], keep[kb + 4u], q);
    let back = mod_mul(mod_reduce(h, q, bits, mu), keep[kb + 5u], q, bits, mu);
    out[idx] = mod_add(mod_sub(scaled, acc, q), back, q);
}
