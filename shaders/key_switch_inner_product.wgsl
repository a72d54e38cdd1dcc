// One digit of the key-switching inner product (CPU twin: backend/cpu.rs
// key_switch_inner_product): out0 += d * kb, out1 += d * ka element-wise, the key limbs picked by
// prime. params: [log_n, total]; limbs: per limb [q, k, mu, key_limb].
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read> d: array<u32>;
@group(0) @binding(3) var<storage, read> kb: array<u32>;
@group(0) @binding(4) var<storage, read> ka: array<u32>;
@group(0) @binding(5) var<storage, read_write> out0: array<u32>;
@group(0) @binding(6) var<storage, read_write> out1: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let n = 1u << params[0];
    let limb = i >> params[0];
    let j = i & (n - 1u);
    let q = limbs[limb * 4u];
    let k = limbs[limb * 4u + 1u];
    let mu = limbs[limb * 4u + 2u];
    let kj = limbs[limb * 4u + 3u] * n + j;
    let x = d[i];
    out0[i] = mod_add(out0[i], mod_mul(x, kb[kj], q, k, mu), q);
    out1[i] = mod_add(out1[i], mod_mul(x, ka[kj], q, k, mu), q);
}
