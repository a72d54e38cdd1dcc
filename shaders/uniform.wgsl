// Uniform residues of generator 2, one thread per ChaCha12 block: a block holds the candidate
// words of 16 consecutive residues, and the thread writes those 16 (fewer only when N < 16).
// The block, the acceptance and the shared fallback blocks are shared/chacha.wgsl, which the host prepends;
// the residues are those of the CPU twin math/sampling.rs uniform_limb.
// params: [log_n, total blocks, key_0 .. key_7, then per limb: stream id low word, high word];
// limbs: per limb [q, candidate mask 2^ceil(log2 q) - 1].
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let log_n = params[0];
    let n = 1u << log_n;
    // Blocks per limb: N / 16, at least 1.
    let log_bpl = max(log_n, 4u) - 4u;
    let limb = i >> log_bpl;
    let blk = i & ((1u << log_bpl) - 1u);
    var key: array<u32, 8>;
    for (var w = 0u; w < 8u; w = w + 1u) {
        key[w] = params[2u + w];
    }
    let slo = params[10u + 2u * limb];
    let shi = params[11u + 2u * limb];
    let q = limbs[2u * limb];
    let mask = limbs[2u * limb + 1u];
    let v = uniform_block16(key, slo, shi, blk, q, mask);
    let base = (limb << log_n) + (blk << 4u);
    if (n >= 16u) {
        for (var t = 0u; t < 4u; t = t + 1u) {
            out[base + t] = v.r0[t];
            out[base + 4u + t] = v.r1[t];
            out[base + 8u + t] = v.r2[t];
            out[base + 12u + t] = v.r3[t];
        }
    } else {
        for (var j = 0u; j < n; j = j + 1u) {
            out[base + j] = chacha_word(v, j);
        }
    }
}
