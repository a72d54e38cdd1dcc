// The key-switching inner product over every digit (CPU twin: backend/cpu.rs
// key_switch_inner_product): out0 = sum_j d_j b_j, out1 = sum_j d_j a_j element-wise over
// q_basis ++ p_basis. d_j is read from c (the digit's own Eval limbs) or from the converted
// limbs (ModUp's output); a_j is loaded, or regenerated from the key's ChaCha20 stream (one
// block per 4 residues, shared/chacha.wgsl). Products are added in 64 bits (two words with a
// carry) and reduced once per output residue: a pass takes at most 4 digits, so the sum stays
// below 4 (2^30)^2 + 2^30 < 2^64; a later pass (params[9] = 1) starts from the sums written by
// the previous one. Each output is the canonical residue of the exact sum.
// One invocation per output limb and group of G = min(4, N) consecutive residues.
// params: [log_n, total, log2(N / G), log2 G, |q_basis|, |p_basis|, first digit, digits in this
//   pass (<= 4), seeded mask (bit s: slot s regenerates a_j), accumulate, table stride,
//   key_0 .. key_7 (the seed's words)];
// table: per output limb (stride 8 + 4 digits): [q, bits, mu, 2^32 mod q, its Shoup, key limb,
//   0, 0], then per digit [source, stream id low, stream id high, 0], source = limb of c, or
//   limb of the converted buffer with bit 31 set.
// Outputs: q0 and q1 over q_basis; p holds the p_basis limbs of out0, then those of out1.
// Key slots: b_s, a_s for the pass's digit s (unused slots and seeded a slots bind any buffer).
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> c: array<u32>;
@group(0) @binding(3) var<storage, read> conv: array<u32>;
@group(0) @binding(4) var<storage, read_write> out_q0: array<u32>;
@group(0) @binding(5) var<storage, read_write> out_q1: array<u32>;
@group(0) @binding(6) var<storage, read_write> out_p: array<u32>;
@group(0) @binding(7) var<storage, read> b0: array<u32>;
@group(0) @binding(8) var<storage, read> a0: array<u32>;
@group(0) @binding(9) var<storage, read> b1: array<u32>;
@group(0) @binding(10) var<storage, read> a1: array<u32>;
@group(0) @binding(11) var<storage, read> b2: array<u32>;
@group(0) @binding(12) var<storage, read> a2: array<u32>;
@group(0) @binding(13) var<storage, read> b3: array<u32>;
@group(0) @binding(14) var<storage, read> a3: array<u32>;

fn key_b(s: u32, i: u32) -> u32 {
    switch s {
        case 0u: { return b0[i]; }
        case 1u: { return b1[i]; }
        case 2u: { return b2[i]; }
        default: { return b3[i]; }
    }
}

fn key_a(s: u32, i: u32) -> u32 {
    switch s {
        case 0u: { return a0[i]; }
        case 1u: { return a1[i]; }
        case 2u: { return a2[i]; }
        default: { return a3[i]; }
    }
}

// (hi, lo) + v, v = (v.x high, v.y low).
fn add_wide(acc: vec2<u32>, v: vec2<u32>) -> vec2<u32> {
    let lo = acc.y + v.y;
    return vec2<u32>(acc.x + v.x + select(0u, 1u, lo < acc.y), lo);
}

// (hi, lo) mod q = [hi 2^32 + lo]_q.
fn reduce_pair(v: vec2<u32>, q: u32, k: u32, mu: u32, radix: u32, radix_shoup: u32) -> u32 {
    return mod_add(shoup_mul(v.x, radix, radix_shoup, q), mod_reduce(v.y, q, k, mu), q);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let n = 1u << params[0];
    let limb = i >> params[2];
    let g = 1u << params[3];
    let j0 = (i & ((1u << params[2]) - 1u)) << params[3];
    let lq = params[4];
    let lp = params[5];
    let tb = limb * params[10];
    let q = table[tb];
    let k = table[tb + 1u];
    let mu = table[tb + 2u];
    let radix = table[tb + 3u];
    let radix_shoup = table[tb + 4u];
    let kp = table[tb + 5u] * n;
    // Output offsets of sum 0 and sum 1 (in out_q0/out_q1, or in out_p).
    var o0 = limb * n;
    var o1 = limb * n;
    if (limb >= lq) {
        o0 = (limb - lq) * n;
        o1 = (lp + limb - lq) * n;
    }
    var s0: array<vec2<u32>, 4>;
    var s1: array<vec2<u32>, 4>;
    if (params[9] == 1u) {
        for (var t = 0u; t < g; t = t + 1u) {
            if (limb < lq) {
                s0[t] = vec2<u32>(0u, out_q0[o0 + j0 + t]);
                s1[t] = vec2<u32>(0u, out_q1[o1 + j0 + t]);
            } else {
                s0[t] = vec2<u32>(0u, out_p[o0 + j0 + t]);
                s1[t] = vec2<u32>(0u, out_p[o1 + j0 + t]);
            }
        }
    }
    var key: array<u32, 8>;
    for (var w = 0u; w < 8u; w = w + 1u) {
        key[w] = params[11u + w];
    }
    for (var s = 0u; s < params[7]; s = s + 1u) {
        let e = tb + 8u + (params[6] + s) * 4u;
        let src = table[e];
        let seeded = ((params[8] >> s) & 1u) == 1u;
        var blk: array<u32, 16>;
        if (seeded) {
            blk = chacha20_block(key, j0 >> 2u, table[e + 1u], table[e + 2u]);
        }
        for (var t = 0u; t < g; t = t + 1u) {
            let j = j0 + t;
            var d: u32;
            if ((src & 0x80000000u) != 0u) {
                d = conv[(src & 0x7fffffffu) * n + j];
            } else {
                d = c[src * n + j];
            }
            var a: u32;
            if (seeded) {
                let o = (j & 3u) * 4u;
                a = uniform_reduce(blk[o], blk[o + 1u], blk[o + 2u], blk[o + 3u], q, k, mu, radix, radix_shoup);
            } else {
                a = key_a(s, kp + j);
            }
            s0[t] = add_wide(s0[t], mul_wide(d, key_b(s, kp + j)));
            s1[t] = add_wide(s1[t], mul_wide(d, a));
        }
    }
    for (var t = 0u; t < g; t = t + 1u) {
        let r0 = reduce_pair(s0[t], q, k, mu, radix, radix_shoup);
        let r1 = reduce_pair(s1[t], q, k, mu, radix, radix_shoup);
        if (limb < lq) {
            out_q0[o0 + j0 + t] = r0;
            out_q1[o1 + j0 + t] = r1;
        } else {
            out_p[o0 + j0 + t] = r0;
            out_p[o1 + j0 + t] = r1;
        }
    }
}
