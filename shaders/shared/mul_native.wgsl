// The wide product and Barrett reduction of shared/zq.wgsl with native 64-bit integers (the
// SHADER_INT64 device feature). Word for word the same as shared/mul_emulated.wgsl for every
// input: `u32(x >> s)` keeps the low 32 bits of the shifted value, which is what the emulated
// code assembles from the two halves.

// (hi, lo) of a * b.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let p = u64(a) * u64(b);
    return vec2<u32>(u32(p >> 32u), u32(p));
}

// Barrett reduction of x = (hi, lo) < 2^(2k) for q with k = bits(q) >= 2 and mu = floor(2^(2k) / q).
fn barrett_wide(hi: u32, lo: u32, q: u32, k: u32, mu: u32) -> u32 {
    let x = (u64(hi) << 32u) | u64(lo);
    let q1 = u32(x >> (k - 1u));
    let q2 = u32((u64(q1) * u64(mu)) >> (k + 1u));
    var r = lo - q2 * q;
    if (r >= q) { r = r - q; }
    if (r >= q) { r = r - q; }
    return r;
}

// (hi, lo) of 32x32 -> 64-bit products per lane (shared/zq4.wgsl's four-lane arithmetic): one
// native u64 product per lane; `lo` is the wrapping u32 product, as in the emulated file.
struct Wide4 {
    hi: vec4<u32>,
    lo: vec4<u32>,
}

fn mul_wide4(a: vec4<u32>, b: vec4<u32>) -> Wide4 {
    let hi = vec4<u32>(
        u32((u64(a.x) * u64(b.x)) >> 32u),
        u32((u64(a.y) * u64(b.y)) >> 32u),
        u32((u64(a.z) * u64(b.z)) >> 32u),
        u32((u64(a.w) * u64(b.w)) >> 32u),
    );
    return Wide4(hi, a * b);
}
