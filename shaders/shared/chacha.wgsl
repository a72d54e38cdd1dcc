// ChaCha20 uniform residues, shared by uniform.wgsl and the generated fused kernels (CPU twin:
// math/sampling.rs chacha20_block, uniform_limb, uniform_from_words_u32). Residue j of a limb is
// the 128-bit value of words 4 (j mod 4) .. 4 (j mod 4) + 3 of block j / 4 of the limb's stream
// (stream id = stream_id(purpose, index, q), split into its low and high words), reduced mod q
// by Horner's rule from the top word with u32 operations only. Needs zq.wgsl.

fn chacha_rotl(v: u32, s: u32) -> u32 {
    return (v << s) | (v >> (32u - s));
}

fn chacha_quarter_round(x: ptr<function, array<u32, 16>>, a: u32, b: u32, c: u32, d: u32) {
    (*x)[a] = (*x)[a] + (*x)[b];
    (*x)[d] = chacha_rotl((*x)[d] ^ (*x)[a], 16u);
    (*x)[c] = (*x)[c] + (*x)[d];
    (*x)[b] = chacha_rotl((*x)[b] ^ (*x)[c], 12u);
    (*x)[a] = (*x)[a] + (*x)[b];
    (*x)[d] = chacha_rotl((*x)[d] ^ (*x)[a], 8u);
    (*x)[c] = (*x)[c] + (*x)[d];
    (*x)[b] = chacha_rotl((*x)[b] ^ (*x)[c], 7u);
}

// The 16 output words of ChaCha20 block `block` (< 2^32) of stream (stream_lo, stream_hi) under
// the key words `key` (key word i = little-endian word i of the seed).
fn chacha20_block(key: array<u32, 8>, block: u32, stream_lo: u32, stream_hi: u32) -> array<u32, 16> {
    var input: array<u32, 16>;
    input[0] = 0x61707865u;
    input[1] = 0x3320646eu;
    input[2] = 0x79622d32u;
    input[3] = 0x6b206574u;
    for (var w = 0u; w < 8u; w = w + 1u) {
        input[4u + w] = key[w];
    }
    input[12] = block;
    input[13] = 0u;
    input[14] = stream_lo;
    input[15] = stream_hi;
    var x = input;
    for (var r = 0u; r < 10u; r = r + 1u) {
        chacha_quarter_round(&x, 0u, 4u, 8u, 12u);
        chacha_quarter_round(&x, 1u, 5u, 9u, 13u);
        chacha_quarter_round(&x, 2u, 6u, 10u, 14u);
        chacha_quarter_round(&x, 3u, 7u, 11u, 15u);
        chacha_quarter_round(&x, 0u, 5u, 10u, 15u);
        chacha_quarter_round(&x, 1u, 6u, 11u, 12u);
        chacha_quarter_round(&x, 2u, 7u, 8u, 13u);
        chacha_quarter_round(&x, 3u, 4u, 9u, 14u);
    }
    for (var w = 0u; w < 16u; w = w + 1u) {
        x[w] = x[w] + input[w];
    }
    return x;
}

// The residue of the 128-bit value w0 + 2^32 w1 + 2^64 w2 + 2^96 w3 mod q (radix = 2^32 mod q,
// radix_shoup its Shoup companion).
fn uniform_reduce(w0: u32, w1: u32, w2: u32, w3: u32, q: u32, k: u32, mu: u32, radix: u32, radix_shoup: u32) -> u32 {
    var acc = mod_reduce(w3, q, k, mu);
    acc = mod_add(shoup_mul(acc, radix, radix_shoup, q), mod_reduce(w2, q, k, mu), q);
    acc = mod_add(shoup_mul(acc, radix, radix_shoup, q), mod_reduce(w1, q, k, mu), q);
    acc = mod_add(shoup_mul(acc, radix, radix_shoup, q), mod_reduce(w0, q, k, mu), q);
    return acc;
}

// Residue j of the uniform limb (key, stream_lo, stream_hi), computing its block.
fn uniform_residue(
    key: array<u32, 8>,
    stream_lo: u32,
    stream_hi: u32,
    j: u32,
    q: u32,
    k: u32,
    mu: u32,
    radix: u32,
    radix_shoup: u32,
) -> u32 {
    var b = chacha20_block(key, j >> 2u, stream_lo, stream_hi);
    let o = (j & 3u) * 4u;
    return uniform_reduce(b[o], b[o + 1u], b[o + 2u], b[o + 3u], q, k, mu, radix, radix_shoup);
}
