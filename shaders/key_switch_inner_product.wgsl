// The key-switching inner product over every digit (CPU twin: backend/cpu.rs
// key_switch_inner_product): out0 = sum_j d_j b_j, out1 = sum_j d_j a_j element-wise over
// q_basis ++ p_basis. d_j is read from c (the digit's own Eval limbs) or from the converted
// limbs (ModUp's output); a_j is loaded, or regenerated from the key's generator-2 stream (one
// ChaCha12 block for the invocation's 16 residues, shared/chacha.wgsl). Products are added in 64 bits (two
// words with a carry) and reduced once per output residue: a pass takes at most 4 digits, so a
// sum stays below 4 (2^30)^2 + 2^30 < 2^64; a later pass (params[9] = 1) starts from the sums
// written by the previous one. Each output is the canonical residue of the exact sum.
// One invocation per output limb and 16 consecutive residues, four groups of vec4 lanes
// (shared/zq4.wgsl; for N < 16 the extra lanes repeat the last residue and are not written).
// b_j is loaded word by word, or unpacked from a bit-packed key (each limb at the bit width k
// of its prime, residue j at bits j k .. (j + 1) k of the limb's words, least significant
// first: backend/fused.rs packed_layout).
// params: [log_n, total, log2(N / 16) (0 if N < 16), packed mask (bit s: slot s's b_j is
//   bit-packed), |q_basis|, |p_basis|, first digit, digits in this pass (<= 4), seeded mask
//   (bit s: slot s regenerates a_j), accumulate, table stride, key_0 .. key_7 (the seed's
//   words)];
// table: per output limb (stride 8 + 4 digits): [q, floor(2^32 / q), candidate mask of q,
//   2^32 mod q, its Shoup,
//   key limb, start word of the key limb when packed, its bit width k], then per digit
//   [source, stream id low, stream id high, 0], source = limb of c, or limb of the converted
//   buffer with bit 31 set.
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

fn key_b(s: u32, i: vec4<u32>) -> vec4<u32> {
    switch s {
        case 0u: { return vec4<u32>(b0[i.x], b0[i.y], b0[i.z], b0[i.w]); }
        case 1u: { return vec4<u32>(b1[i.x], b1[i.y], b1[i.z], b1[i.w]); }
        case 2u: { return vec4<u32>(b2[i.x], b2[i.y], b2[i.z], b2[i.w]); }
        default: { return vec4<u32>(b3[i.x], b3[i.y], b3[i.z], b3[i.w]); }
    }
}

fn key_b_word(s: u32, w: u32) -> u32 {
    switch s {
        case 0u: { return b0[w]; }
        case 1u: { return b1[w]; }
        case 2u: { return b2[w]; }
        default: { return b3[w]; }
    }
}

// Residues jj of the packed key limb of slot s starting at word start, k < 32 bits each.
fn key_b_packed(s: u32, start: u32, k: u32, jj: vec4<u32>) -> vec4<u32> {
    var v: vec4<u32>;
    for (var t = 0u; t < 4u; t = t + 1u) {
        let pos = jj[t] * k;
        let w = start + (pos >> 5u);
        let sh = pos & 31u;
        var x = key_b_word(s, w) >> sh;
        if (sh + k > 32u) {
            x = x | (key_b_word(s, w + 1u) << (32u - sh));
        }
        v[t] = x & ((1u << k) - 1u);
    }
    return v;
}

fn key_a(s: u32, i: vec4<u32>) -> vec4<u32> {
    switch s {
        case 0u: { return vec4<u32>(a0[i.x], a0[i.y], a0[i.z], a0[i.w]); }
        case 1u: { return vec4<u32>(a1[i.x], a1[i.y], a1[i.z], a1[i.w]); }
        case 2u: { return vec4<u32>(a2[i.x], a2[i.y], a2[i.z], a2[i.w]); }
        default: { return vec4<u32>(a3[i.x], a3[i.y], a3[i.z], a3[i.w]); }
    }
}

fn load_q0(i: vec4<u32>) -> vec4<u32> { return vec4<u32>(out_q0[i.x], out_q0[i.y], out_q0[i.z], out_q0[i.w]); }
fn load_q1(i: vec4<u32>) -> vec4<u32> { return vec4<u32>(out_q1[i.x], out_q1[i.y], out_q1[i.z], out_q1[i.w]); }
fn load_p(i: vec4<u32>) -> vec4<u32> { return vec4<u32>(out_p[i.x], out_p[i.y], out_p[i.z], out_p[i.w]); }

// The two sums of one group of 4 residues.
struct Sums {
    s0: Wide4,
    s1: Wide4,
}

// Limb-wide constants of an invocation.
struct Limb {
    tb: u32,
    n: u32,
    lq: u32,
    lp: u32,
    limb: u32,
}

// Output positions of sum 0 and sum 1 of residues jj (in out_q0/out_q1, or in out_p).
fn out_pos(l: Limb, jj: vec4<u32>) -> array<vec4<u32>, 2> {
    if (l.limb >= l.lq) {
        return array<vec4<u32>, 2>(vec4<u32>((l.limb - l.lq) * l.n) + jj, vec4<u32>((l.lp + l.limb - l.lq) * l.n) + jj);
    }
    let o = vec4<u32>(l.limb * l.n) + jj;
    return array<vec4<u32>, 2>(o, o);
}

// The sums a pass starts from: zero, or (params[9] = 1) what the previous pass wrote.
fn start_sums(l: Limb, jj: vec4<u32>) -> Sums {
    var r = Sums(Wide4(vec4<u32>(0u), vec4<u32>(0u)), Wide4(vec4<u32>(0u), vec4<u32>(0u)));
    if (params[9] == 1u) {
        var o = out_pos(l, jj);
        if (l.limb < l.lq) {
            r.s0.lo = load_q0(o[0]);
            r.s1.lo = load_q1(o[1]);
        } else {
            r.s0.lo = load_p(o[0]);
            r.s1.lo = load_p(o[1]);
        }
    }
    return r;
}

// Adds d_s b_s and d_s a_s at residues jj; `a` is the regenerated a_s when slot s is seeded.
fn add_term(acc: Sums, l: Limb, s: u32, e: u32, jj: vec4<u32>, seeded: bool, a_gen: vec4<u32>) -> Sums {
    let src = table[e];
    var d: vec4<u32>;
    if ((src & 0x80000000u) != 0u) {
        let di = vec4<u32>((src & 0x7fffffffu) * l.n) + jj;
        d = vec4<u32>(conv[di.x], conv[di.y], conv[di.z], conv[di.w]);
    } else {
        let di = vec4<u32>(src * l.n) + jj;
        d = vec4<u32>(c[di.x], c[di.y], c[di.z], c[di.w]);
    }
    let kj = vec4<u32>(table[l.tb + 5u] * l.n) + jj;
    var a = a_gen;
    if (!seeded) {
        a = key_a(s, kj);
    }
    var b: vec4<u32>;
    if (((params[3] >> s) & 1u) == 1u) {
        b = key_b_packed(s, table[l.tb + 6u], table[l.tb + 7u], jj);
    } else {
        b = key_b(s, kj);
    }
    return Sums(add_wide4(acc.s0, mul_wide4(d, b)), add_wide4(acc.s1, mul_wide4(d, a)));
}

// Reduces and writes the sums of residues jj (those below N).
fn write_sums(l: Limb, jj: vec4<u32>, j0: u32, acc: Sums) {
    let tb = l.tb;
    let q = vec4<u32>(table[tb]);
    let one_shoup = vec4<u32>(table[tb + 1u]);
    let radix = vec4<u32>(table[tb + 3u]);
    let radix_shoup = vec4<u32>(table[tb + 4u]);
    let r0 = reduce_wide4(acc.s0, radix, radix_shoup, one_shoup, q);
    let r1 = reduce_wide4(acc.s1, radix, radix_shoup, one_shoup, q);
    var o = out_pos(l, jj);
    for (var t = 0u; t < 4u; t = t + 1u) {
        if (j0 + t < l.n) {
            if (l.limb < l.lq) {
                out_q0[o[0][t]] = r0[t];
                out_q1[o[1][t]] = r1[t];
            } else {
                out_p[o[0][t]] = r0[t];
                out_p[o[1][t]] = r1[t];
            }
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    if (i >= params[1]) { return; }
    let n = 1u << params[0];
    let limb = i >> params[2];
    let l = Limb(limb * params[10], n, params[4], params[5], limb);
    let jb = (i & ((1u << params[2]) - 1u)) << 4u;
    // The invocation's four groups of residue indices within a limb (clamped for N < 16).
    let lanes = vec4<u32>(0u, 1u, 2u, 3u);
    let last = vec4<u32>(n - 1u);
    let jj0 = min(vec4<u32>(jb) + lanes, last);
    let jj1 = min(vec4<u32>(jb + 4u) + lanes, last);
    let jj2 = min(vec4<u32>(jb + 8u) + lanes, last);
    let jj3 = min(vec4<u32>(jb + 12u) + lanes, last);
    var acc0 = start_sums(l, jj0);
    var acc1 = start_sums(l, jj1);
    var acc2 = start_sums(l, jj2);
    var acc3 = start_sums(l, jj3);
    var key: array<u32, 8>;
    for (var w = 0u; w < 8u; w = w + 1u) {
        key[w] = params[11u + w];
    }
    let q = table[l.tb];
    let mask = table[l.tb + 2u];
    for (var s = 0u; s < params[7]; s = s + 1u) {
        let e = l.tb + 8u + (params[6] + s) * 4u;
        let seeded = ((params[8] >> s) & 1u) == 1u;
        var a = ChaBlock(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
        if (seeded) {
            // Residue j: word j mod 16 of block j / 16 masked, or its fallback candidates.
            let slo = table[e + 1u];
            let shi = table[e + 2u];
            a = uniform_block16(key, slo, shi, jb >> 4u, q, mask);
        }
        acc0 = add_term(acc0, l, s, e, jj0, seeded, a.r0);
        acc1 = add_term(acc1, l, s, e, jj1, seeded, a.r1);
        acc2 = add_term(acc2, l, s, e, jj2, seeded, a.r2);
        acc3 = add_term(acc3, l, s, e, jj3, seeded, a.r3);
    }
    write_sums(l, jj0, jb, acc0);
    write_sums(l, jj1, jb + 4u, acc1);
    write_sums(l, jj2, jb + 8u, acc2);
    write_sums(l, jj3, jb + 12u, acc3);
}
