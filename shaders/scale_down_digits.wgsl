// Divide-and-round, prime by prime: the digits y_s of every coefficient (CPU twin:
// math/rounding.rs RoundingCorrection::apply, its first loop). Steps s run over the dropped
// primes d_s in processing order (the last prime of the dropped list first);
// y_s = [x_s f_s + sum_{r<s} (y_r (-g_sr) + [y_r > d_r / 2] d_r g_sr)]_{d_s}, a triangular
// recurrence, so one invocation per coefficient and polynomial computes them in order, reading
// back the y_r it wrote. scale_down_correction.wgsl then forms the correction from them.
// params: [log_n, total = polys * N, steps S, keep K, tri_base, keep_base];
// table: per step (4 words): [d_s, limb of d_s in the input, f_s, its Shoup]; at tri_base the
// triangle, row s from tri_base + 3 s (s - 1) / 2, 3 words per r < s: [-g_sr, its Shoup, d_r g_sr].
// x: per polynomial S limbs over the dropped primes (basis order); scratch: per polynomial the S
// digits, in step order.
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> table: array<u32>;
@group(0) @binding(2) var<storage, read> x: array<u32>;
@group(0) @binding(3) var<storage, read_write> scratch: array<u32>;

@compute @workgroup_size(256)
fn digits(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = linear_id(gid, nwg);
    if (idx >= params[1]) { return; }
    let log_n = params[0];
    let n = 1u << log_n;
    let poly = idx >> log_n;
    let c = idx & (n - 1u);
    let steps = params[2];
    let base = poly * steps * n + c;
    for (var s = 0u; s < steps; s = s + 1u) {
        let d = table[s * 4u];
        var acc = shoup_mul(x[base + table[s * 4u + 1u] * n], table[s * 4u + 2u], table[s * 4u + 3u], d);
        let row = params[4] + 3u * ((s * (s - 1u)) >> 1u);
        for (var r = 0u; r < s; r = r + 1u) {
            let y = scratch[base + r * n];
            let e = row + 3u * r;
            acc = mod_add(acc, shoup_mul(y, table[e], table[e + 1u], d), d);
            if (y > (table[r * 4u] >> 1u)) { acc = mod_add(acc, table[e + 2u], d); }
        }
        scratch[base + s * n] = acc;
    }
}
