// Galois automorphism X -> X^g in the Eval domain: a permutation of every limb
// (CPU twin: backend/cpu.rs automorphism). params: [log_n, total]; perm: N entries.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> perm: array<u32>;
@group(0) @binding(2) var<storage, read> a: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let n = 1u << params[0];
    let limb = i >> params[0];
    let j = i & (n - 1u);
    out[i] = a[limb * n + perm[j]];
}
