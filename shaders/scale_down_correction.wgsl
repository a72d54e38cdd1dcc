// Divide-and-round correction over the kept primes (CPU twin: math/rounding.rs
// RoundingCorrection::apply, its second loop): for the digits y_s of one polynomial,
// corr_i = [sum_s y_s (-w_si) + [y_s > d_s / 2] d_s w_si]_{k_i}, the kept limbs' share of
// -delta D^{-1}. The digits are read from `src`: computed by scale_down_digits.wgsl (staged,
// prime by prime with several primes: src is its scratch, digit s at limb s) or inline from the
// dropped residues (src is the input, y_s = [x_s f_s]_{d_s} with x_s at the step's input limb).
// One invocation per coefficient and tile of TILE kept limbs: it reads (and, inline, scales) each
// digit once for the whole tile.
// params: [log_n, total = tiles * N, steps S, keep K, tri_base, keep_base, poly, inline];
// table: steps as in scale_down_digits.wgsl ([d_s, input limb, f_s, its Shoup]); at keep_base,
// per kept limb i (stride 4 + 3 S): [k_i, 0, 0, 0], then per step s [-w_si, its Shoup, d_s w_si].
// src: per polynomial S limbs; out: K limbs, the correction of polynomial `poly`.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;

const TILE: u32 = 8u;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_id(gid, nwg);
    if (idx >= params[1]) { return; }
    let log_n = params[0];
    let n = 1u << log_n;
    let c = idx & (n - 1u);
    let steps = params[2];
    let keep = params[3];
    let i0 = (idx >> log_n) * TILE;
    let cnt = min(TILE, keep - i0);
    let stride = 4u + 3u * steps;
    let base = params[6] * steps * n + c;
    var acc: array<u32, 8>;
    for (var s = 0u; s < steps; s = s + 1u) {
        let d = table[s * 4u];
        var y: u32;
        if (params[7] == 1u) {
            y = shoup_mul(src[base + table[s * 4u + 1u] * n], table[s * 4u + 2u], table[s * 4u + 3u], d);
        } else {
            y = src[base + s * n];
        }
        let high = y > (d >> 1u);
        for (var t = 0u; t < cnt; t = t + 1u) {
            let kb = params[5] + (i0 + t) * stride;
            let k = table[kb];
            let e = kb + 4u + 3u * s;
            var v = mod_add(acc[t], shoup_mul(y, table[e], table[e + 1u], k), k);
            if (high) { v = mod_add(v, table[e + 2u], k); }
            acc[t] = v;
        }
    }
    for (var t = 0u; t < cnt; t = t + 1u) {
        out[(i0 + t) * n + c] = acc[t];
    }
}
