// Shared u32 modular arithmetic, the WGSL twin of src/math/zq.rs. WGSL has no 64-bit integers
// and no high-product instruction, so the 32x32->64 product is built from 16-bit halves
// (`mul_wide`, CPU twin `zq::mul_wide_halves`). Every strict function returns the canonical
// residue in [0, q), so kernels agree with the CPU backend bit for bit.

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

fn mul_hi(a: u32, b: u32) -> u32 {
    return mul_wide(a, b).x;
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
