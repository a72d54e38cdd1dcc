// Uniform residues from ChaCha20, one thread per ChaCha20 block: a block holds the 128-bit words
// of 4 consecutive residues, and the thread writes those 4 (fewer only when N < 4). The block
// and the reduction are shared/chacha.wgsl, which the host prepends; the residues are those of
// the CPU twin math/sampling.rs uniform_limb.
// params: [log_n, total blocks, key_0 .. key_7, then per limb: stream id low word, high word];
// limbs: per limb [q, k, mu, 2^32 mod q, its Shoup companion, 0, 0, 0].
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let log_n = params[0];
    let n = 1u << log_n;
    // Blocks per limb: N / 4, at least 1.
    let log_bpl = max(log_n, 2u) - 2u;
    let limb = i >> log_bpl;
    let blk = i & ((1u << log_bpl) - 1u);
    var key: array<u32, 8>;
    for (var w = 0u; w < 8u; w = w + 1u) {
        key[w] = params[2u + w];
    }
    let b = chacha20_block(key, blk, params[10u + 2u * limb], params[11u + 2u * limb]);
    let base = limb * 8u;
    let q = limbs[base];
    let k = limbs[base + 1u];
    let mu = limbs[base + 2u];
    let radix = limbs[base + 3u];
    let radix_shoup = limbs[base + 4u];
    for (var t = 0u; t < 4u; t = t + 1u) {
        let j = (blk << 2u) + t;
        if (j < n) {
            let o = t * 4u;
            out[(limb << log_n) + j] = uniform_reduce(b[o], b[o + 1u], b[o + 2u], b[o + 3u], q, k, mu, radix, radix_shoup);
        }
    }
}
