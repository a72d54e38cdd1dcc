// Bootstrapped gates, blind-rotation step part 2 (CPU twin: src/gates/rotate.rs `KeyProduct`):
// one invocation per (gate, slot). For each key of the step with exponent e != 0 and each output
// component, the inner product of the decomposed rows with the key's rows accumulated lazily in
// two u32 words (lo, hi with carry), reduced once (hi * (2^32 mod q) + lo mod q), multiplied by
// the evaluation of X^e - 1 and added to the accumulator's NTT form. The CPU twin reduces the
// same 64-bit sum with Shoup constants (and takes lazy [0, 4q) digits, so its bound rows * 4q^2
// < 2^64 in src/gates/params.rs is the stricter one); both end in canonical residues.
// params: [q, k, mu, log_n, rows, keys, secret (0 ternary, 1 binary, 2 block-binary), n_lwe,
//          step, gates, radix = 2^32 mod q]
// tables: [W (N) | V (N) | mono (2N) | exps (N)]
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> tables: array<u32>;
@group(0) @binding(2) var<storage, read> digits: array<u32>;
@group(0) @binding(3) var<storage, read> key: array<u32>;
@group(0) @binding(4) var<storage, read> a2n: array<u32>;
@group(0) @binding(5) var<storage, read_write> acc_ntt: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = linear_id(gid, nwg);
    let q = params[0];
    let k = params[1];
    let mu = params[2];
    let log_n = params[3];
    let rows = params[4];
    let keys = params[5];
    let secret = params[6];
    let n_lwe = params[7];
    let g = params[8];
    let gates = params[9];
    let radix = params[10];
    let n = 1u << log_n;
    if (i >= gates * n) { return; }
    let gate = i >> log_n;
    let p = i & (n - 1u);
    let mask = 2u * n - 1u;
    for (var kk = 0u; kk < keys; kk = kk + 1u) {
        var e = 0u;
        if (secret == 0u) {
            e = a2n[gate * n_lwe + g];
            if (kk == 1u) { e = (2u * n - e) & mask; }
        } else if (secret == 1u) {
            e = a2n[gate * n_lwe + g];
        } else {
            e = a2n[gate * n_lwe + 2u * g + kk];
        }
        if (e == 0u) { continue; }
        let w = tables[2u * n + ((e * tables[4u * n + p]) & mask)];
        for (var co = 0u; co < 2u; co = co + 1u) {
            var lo = 0u;
            var hi = 0u;
            for (var r = 0u; r < rows; r = r + 1u) {
                let d = digits[(gate * rows + r) * n + p];
                let kv = key[(((g * keys + kk) * rows + r) * 2u + co) * n + p];
                let prod = mul_wide(d, kv);
                let nlo = lo + prod.y;
                var carry = 0u;
                if (nlo < lo) { carry = 1u; }
                hi = hi + prod.x + carry;
                lo = nlo;
            }
            let red = mod_add(mod_mul(mod_reduce(hi, q, k, mu), radix, q, k, mu), mod_reduce(lo, q, k, mu), q);
            let y = mod_mul(red, w, q, k, mu);
            let at = (gate * 2u + co) * n + p;
            acc_ntt[at] = mod_add(acc_ntt[at], y, q);
        }
    }
}
