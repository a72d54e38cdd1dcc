// Uniform residues from ChaCha20, one thread per residue (it recomputes its block); the block
// and the reduction are shared/chacha.wgsl, which the host prepends.
// params: [log_n, total, key_0 .. key_7]; limbs: per limb
// [q, k, mu, 2^32 mod q, its Shoup companion, stream id low word, stream id high word, 0].
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let n = 1u << params[0];
    let limb = i >> params[0];
    let j = i & (n - 1u);
    let base = limb * 8u;
    var key: array<u32, 8>;
    for (var w = 0u; w < 8u; w = w + 1u) {
        key[w] = params[2u + w];
    }
    out[i] = uniform_residue(
        key,
        limbs[base + 5u],
        limbs[base + 6u],
        j,
        limbs[base],
        limbs[base + 1u],
        limbs[base + 2u],
        limbs[base + 3u],
        limbs[base + 4u],
    );
}
