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
