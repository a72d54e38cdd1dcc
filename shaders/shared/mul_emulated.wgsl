// The wide product and Barrett reduction of shared/zq.wgsl without 64-bit integers: the
// 32x32->64 product is built from 16-bit halves (CPU twin `zq::mul_wide_halves`). The host uses
// this file on devices without SHADER_INT64; shared/mul_native.wgsl computes the same words.

// (hi, lo) of a * b.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
    let a_lo = a & 0xffffu;
    let a_hi = a >> 16u;
    let b_lo = b & 0xffffu;
    let b_hi = b >> 16u;
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    let lo = (ll & 0xffffu) | (mid << 16u);
    let hi = hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, lo);
}

// Barrett reduction of x = (hi, lo) < 2^(2k) for q with k = bits(q) >= 2 and mu = floor(2^(2k) / q).
fn barrett_wide(hi: u32, lo: u32, q: u32, k: u32, mu: u32) -> u32 {
    let q1 = (lo >> (k - 1u)) | (hi << (33u - k));
    let p = mul_wide(q1, mu);
    let q2 = (p.y >> (k + 1u)) | (p.x << (31u - k));
    var r = lo - q2 * q;
    if (r >= q) { r = r - q; }
    if (r >= q) { r = r - q; }
    return r;
}

// (hi, lo) of 32x32 -> 64-bit products per lane (shared/zq4.wgsl's four-lane arithmetic).
struct Wide4 {
    hi: vec4<u32>,
    lo: vec4<u32>,
}

fn mul_wide4(a: vec4<u32>, b: vec4<u32>) -> Wide4 {
    let m = vec4<u32>(0xffffu);
    let a_lo = a & m;
    let a_hi = a >> vec4<u32>(16u);
    let b_lo = b & m;
    let b_hi = b >> vec4<u32>(16u);
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    let mid = (ll >> vec4<u32>(16u)) + (lh & m) + (hl & m);
    let lo = (ll & m) | (mid << vec4<u32>(16u));
    let hi = hh + (lh >> vec4<u32>(16u)) + (hl >> vec4<u32>(16u)) + (mid >> vec4<u32>(16u));
    return Wide4(hi, lo);
}
