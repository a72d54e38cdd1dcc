// Shared u32 modular arithmetic, the WGSL twin of src/math/zq.rs. Every strict function returns
// the canonical residue in [0, q), so kernels agree with the CPU backend bit for bit.
//
// The 32x32->64 product `mul_wide` and the Barrett reduction of a 64-bit value `barrett_wide`
// come from one of two files the host puts after this one: shared/mul_native.wgsl (native u64,
// on devices with the SHADER_INT64 feature) or shared/mul_emulated.wgsl (16-bit halves, CPU twin
// `zq::mul_wide_halves`, everywhere else). Both compute the same words for every input.

fn mul_hi(a: u32, b: u32) -> u32 {
    return mul_wide(a, b).x;
}

// a * b mod q for a, b < q.
fn mod_mul(a: u32, b: u32, q: u32, k: u32, mu: u32) -> u32 {
    let p = mul_wide(a, b);
    return barrett_wide(p.x, p.y, q, k, mu);
}

// x mod q for any u32 (k >= 16; smaller moduli fall back to %).
fn mod_reduce(x: u32, q: u32, k: u32, mu: u32) -> u32 {
    if (k >= 16u) {
        return barrett_wide(0u, x, q, k, mu);
    }
    return x % q;
}

fn mod_add(a: u32, b: u32, q: u32) -> u32 {
    let s = a + b;
    if (s >= q) { return s - q; }
    return s;
}

fn mod_sub(a: u32, b: u32, q: u32) -> u32 {
    if (a >= b) { return a - b; }
    return a + q - b;
}

fn mod_neg(a: u32, q: u32) -> u32 {
    if (a == 0u) { return 0u; }
    return q - a;
}

// a * w mod q, lazy: output in [0, 2q), for any a and constant w < q with ws = floor(w 2^32 / q).
fn shoup_mul_lazy(a: u32, w: u32, ws: u32, q: u32) -> u32 {
    let quot = mul_hi(a, ws);
    return a * w - quot * q;
}

// a * w mod q, strict.
fn shoup_mul(a: u32, w: u32, ws: u32, q: u32) -> u32 {
    let r = shoup_mul_lazy(a, w, ws, q);
    if (r >= q) { return r - q; }
    return r;
}

// Linear invocation index over a 2-D grid of 256-thread workgroups.
fn linear_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}
