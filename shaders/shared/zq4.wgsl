// Four-lane u32 modular arithmetic: the component-wise twins of zq.wgsl's functions, each lane
// with its own modulus (or the same one splatted). Kernels that produce four outputs per
// invocation (four target limbs of a basis conversion, four residues of a limb) keep them in
// vec4 registers instead of indexing a private array. Every strict function returns the
// canonical residue per lane, as zq.wgsl does. The per-lane wide product `mul_wide4` (and its
// `Wide4`) comes with `mul_wide` from the device's arithmetic: shared/mul_native.wgsl (native
// u64 products) or shared/mul_emulated.wgsl (16-bit halves), the same words for every input.

// (hi, lo) + v per lane, with the carry.
fn add_wide4(acc: Wide4, v: Wide4) -> Wide4 {
    let lo = acc.lo + v.lo;
    return Wide4(acc.hi + v.hi + select(vec4<u32>(0u), vec4<u32>(1u), lo < acc.lo), lo);
}

// a * w mod q per lane, strict, for any a and constants w < q with ws = floor(w 2^32 / q).
fn shoup_mul4(a: vec4<u32>, w: vec4<u32>, ws: vec4<u32>, q: vec4<u32>) -> vec4<u32> {
    let r = a * w - mul_wide4(a, ws).hi * q;
    return select(r, r - q, r >= q);
}

fn mod_add4(a: vec4<u32>, b: vec4<u32>, q: vec4<u32>) -> vec4<u32> {
    let s = a + b;
    return select(s, s - q, s >= q);
}

fn mod_sub4(a: vec4<u32>, b: vec4<u32>, q: vec4<u32>) -> vec4<u32> {
    return select(a + q - b, a - b, a >= b);
}

// x mod q per lane for any x (Shoup with w = 1, one_shoup = floor(2^32 / q)).
fn reduce4(x: vec4<u32>, one_shoup: vec4<u32>, q: vec4<u32>) -> vec4<u32> {
    return shoup_mul4(x, vec4<u32>(1u), one_shoup, q);
}

// [hi 2^32 + lo]_q per lane (radix = 2^32 mod q and its Shoup companion).
fn reduce_wide4(v: Wide4, radix: vec4<u32>, radix_shoup: vec4<u32>, one_shoup: vec4<u32>, q: vec4<u32>) -> vec4<u32> {
    return mod_add4(shoup_mul4(v.hi, radix, radix_shoup, q), reduce4(v.lo, one_shoup, q), q);
}
