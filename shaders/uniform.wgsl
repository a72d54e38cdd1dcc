// Uniform residues from ChaCha20 (CPU twin: math/sampling.rs uniform_limb, chacha20_block,
// uniform_from_words_u32). Residue j of a limb is the 128-bit value of words 4 (j mod 4) ..
// 4 (j mod 4) + 3 of block j / 4 of the limb's stream, reduced mod q by Horner's rule from the
// top word with u32 operations only. One thread per residue (it recomputes its block).
// params: [log_n, total, key_0 .. key_7]; limbs: per limb
// [q, k, mu, 2^32 mod q, its Shoup companion, stream id low word, stream id high word, 0].
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> limbs: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

fn rotl(v: u32, s: u32) -> u32 {
    return (v << s) | (v >> (32u - s));
}

fn quarter_round(x: ptr<function, array<u32, 16>>, a: u32, b: u32, c: u32, d: u32) {
    (*x)[a] = (*x)[a] + (*x)[b];
    (*x)[d] = rotl((*x)[d] ^ (*x)[a], 16u);
    (*x)[c] = (*x)[c] + (*x)[d];
    (*x)[b] = rotl((*x)[b] ^ (*x)[c], 12u);
    (*x)[a] = (*x)[a] + (*x)[b];
    (*x)[d] = rotl((*x)[d] ^ (*x)[a], 8u);
    (*x)[c] = (*x)[c] + (*x)[d];
    (*x)[b] = rotl((*x)[b] ^ (*x)[c], 7u);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let n = 1u << params[0];
    let limb = i >> params[0];
    let j = i & (n - 1u);
    let base = limb * 8u;
    let q = limbs[base];
    let k = limbs[base + 1u];
    let mu = limbs[base + 2u];
    let radix = limbs[base + 3u];
    let radix_shoup = limbs[base + 4u];

    var input: array<u32, 16>;
    input[0] = 0x61707865u;
    input[1] = 0x3320646eu;
    input[2] = 0x79622d32u;
    input[3] = 0x6b206574u;
    for (var w = 0u; w < 8u; w = w + 1u) {
        input[4u + w] = params[2u + w];
    }
    input[12] = j >> 2u;
    input[13] = 0u;
    input[14] = limbs[base + 5u];
    input[15] = limbs[base + 6u];
    var x = input;
    for (var r = 0u; r < 10u; r = r + 1u) {
        quarter_round(&x, 0u, 4u, 8u, 12u);
        quarter_round(&x, 1u, 5u, 9u, 13u);
        quarter_round(&x, 2u, 6u, 10u, 14u);
        quarter_round(&x, 3u, 7u, 11u, 15u);
        quarter_round(&x, 0u, 5u, 10u, 15u);
        quarter_round(&x, 1u, 6u, 11u, 12u);
        quarter_round(&x, 2u, 7u, 8u, 13u);
        quarter_round(&x, 3u, 4u, 9u, 14u);
    }
    let o = (j & 3u) * 4u;
    let w0 = x[o] + input[o];
    let w1 = x[o + 1u] + input[o + 1u];
    let w2 = x[o + 2u] + input[o + 2u];
    let w3 = x[o + 3u] + input[o + 3u];
    var acc = mod_reduce(w3, q, k, mu);
    acc = mod_add(shoup_mul(acc, radix, radix_shoup, q), mod_reduce(w2, q, k, mu), q);
    acc = mod_add(shoup_mul(acc, radix, radix_shoup, q), mod_reduce(w1, q, k, mu), q);
    acc = mod_add(shoup_mul(acc, radix, radix_shoup, q), mod_reduce(w0, q, k, mu), q);
    out[i] = acc;
}
