// Divide-and-round correction over the kept primes (CPU twin: math/rounding.rs
// RoundingCorrection::apply, its second loop): for the digits y_s of one polynomial,
// corr_i = [sum_s y_s (-w_si) + [y_s > d_s / 2] d_s w_si]_{k_i}, the kept limbs' share of
// -delta D^{-1}. The digits are read from `src`: computed by scale_down_digits.wgsl (staged,
// prime by prime with several primes: src is its scratch, digit s at limb s) or inline from the
// dropped residues (src is the input, y_s = [x_s f_s]_{d_s} with x_s at the step's input limb).
// One invocation per polynomial, coefficient and tile of 8 kept limbs (two vec4 accumulators,
// shared/zq4.wgsl): it reads (and, inline, scales) each digit once for the whole tile. The last
// tile is padded with lanes of modulus 1 and zero constants, which are not written.
// params: [log_n, total = polys * tiles * N, steps S, keep K, tri_base, keep_base, tiles, inline];
// table: steps as in scale_down_digits.wgsl ([d_s, input limb, f_s, its Shoup]); at keep_base,
// per tile (stride 8 + 24 S): the 8 lanes' [k_i], then per step s the 8 lanes' [-w_si],
// [its Shoup], [d_s w_si].
// src: per polynomial S limbs; out: per polynomial K limbs, its correction.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

fn lanes(at: u32) -> vec4<u32> {
    return vec4<u32>(table[at], table[at + 1u], table[at + 2u], table[at + 3u]);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_id(gid, nwg);
    if (idx >= params[1]) { return; }
    let log_n = params[0];
    let n = 1u << log_n;
    let per_poly = params[6] << log_n;
    let poly = idx / per_poly;
    let rest = idx - poly * per_poly;
    let c = rest & (n - 1u);
    let steps = params[2];
    let tile = rest >> log_n;
    let i0 = tile * 8u;
    let cnt = min(8u, params[3] - i0);
    let tb = params[5] + tile * (8u + 24u * steps);
    let k_lo = lanes(tb);
    let k_hi = lanes(tb + 4u);
    let base = poly * steps * n + c;
    var acc_lo = vec4<u32>(0u);
    var acc_hi = vec4<u32>(0u);
    for (var s = 0u; s < steps; s = s + 1u) {
        let d = table[s * 4u];
        var y: u32;
        if (params[7] == 1u) {
            y = shoup_mul(src[base + table[s * 4u + 1u] * n], table[s * 4u + 2u], table[s * 4u + 3u], d);
        } else {
            y = src[base + s * n];
        }
        let e = tb + 8u + 24u * s;
        acc_lo = mod_add4(acc_lo, shoup_mul4(vec4<u32>(y), lanes(e), lanes(e + 8u), k_lo), k_lo);
        acc_hi = mod_add4(acc_hi, shoup_mul4(vec4<u32>(y), lanes(e + 4u), lanes(e + 12u), k_hi), k_hi);
        if (y > (d >> 1u)) {
            acc_lo = mod_add4(acc_lo, lanes(e + 16u), k_lo);
            acc_hi = mod_add4(acc_hi, lanes(e + 20u), k_hi);
        }
    }
    let o = (poly * params[3] + i0) * n + c;
    for (var t = 0u; t < min(cnt, 4u); t = t + 1u) {
        out[o + t * n] = acc_lo[t];
    }
    for (var t = 4u; t < cnt; t = t + 1u) {
        out[o + t * n] = acc_hi[t - 4u];
    }
}
