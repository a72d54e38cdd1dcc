// The inverse row pass's input for ntt.wgsl, out of place (CPU twin: Backend::ntt_inverse_from's
// default in backend/mod.rs): the Eval-domain input is formed from other buffers as the first pass
// loads it, the pass writes `a` (the output, which needs no initial contents), and with keep the
// formed input is also stored to `kept` (the word the CPU forms first). params[5]: the form,
// 0 copy (src0), 1 product (src0 src1 mod q, Barrett with aux's per-limb [q, k, mu, 0]),
// 2 automorphism (src0 at aux's permutation of the limb's N positions); params[6]: keep.
// Word i of limb `limb` is input word i in every form but the automorphism.
@group(0) @binding(3) var<storage, read> src0: array<u32>;
@group(0) @binding(4) var<storage, read> src1: array<u32>;
@group(0) @binding(5) var<storage, read> aux: array<u32>;
@group(0) @binding(6) var<storage, read_write> kept: array<u32>;

fn inv_in(i: u32, limb: u32) -> u32 {
    let form = params[5];
    var v: u32;
    if (form == 1u) {
        let t = limb * 4u;
        v = mod_mul(src0[i], src1[i], aux[t], aux[t + 1u], aux[t + 2u]);
    } else if (form == 2u) {
        let n = 1u << params[0];
        v = src0[limb * n + aux[i & (n - 1u)]];
    } else {
        v = src0[i];
    }
    if (params[6] != 0u) {
        kept[i] = v;
    }
    return v;
}
