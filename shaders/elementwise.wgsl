// Element-wise kernels over limb-major [limb][N] buffers (CPU twins: backend/cpu.rs add, sub,
// neg, mul, mul_add, mul_scalar). params: [op, log_n, total], then for mul_scalar per limb
// [w, w_shoup] (the limb's scalar and its Shoup companion); limbs: per limb [q, k, mu, 0].
// op: 0 add, 1 sub, 2 neg, 3 mul, 4 mul_add (out += a * b), 5 mul_scalar.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<u32>;
@group(0) @binding(3) var<storage, read> b: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[2]) { return; }
    let limb = i >> params[1];
    let q = limbs[limb * 4u];
    let k = limbs[limb * 4u + 1u];
    let mu = limbs[limb * 4u + 2u];
    let op = params[0];
    if (op == 0u) {
        out[i] = mod_add(a[i], b[i], q);
    } else if (op == 1u) {
        out[i] = mod_sub(a[i], b[i], q);
    } else if (op == 2u) {
        out[i] = mod_neg(a[i], q);
    } else if (op == 3u) {
        out[i] = mod_mul(a[i], b[i], q, k, mu);
    } else if (op == 4u) {
        out[i] = mod_add(out[i], mod_mul(a[i], b[i], q, k, mu), q);
    } else {
        out[i] = shoup_mul(a[i], params[3u + 2u * limb], params[4u + 2u * limb], q);
    }
}
