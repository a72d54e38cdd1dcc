// Bootstrapped gates, blind-rotation step part 3 (CPU twin: the strict inverse NTT of
// src/math/ntt.rs): one workgroup per (gate, component); Gentleman-Sande, bit-reversed order in,
// natural order out, then N^{-1}: canonical residues, the accumulator's coefficient form. (The
// CPU's inverse folds N^{-1} into its last stage's twiddles; the residues are the same.)
// params: [q, k, mu, log_n, n_inv]
// tables: [W (N) | V (N, psi^-bitrev(k)) | mono (2N) | exps (N)]
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> tables: array<u32>;
@group(0) @binding(2) var<storage, read> acc_ntt: array<u32>;
@group(0) @binding(3) var<storage, read_write> acc: array<u32>;

var<workgroup> s: array<u32, 2048>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let q = params[0];
    let k = params[1];
    let mu = params[2];
    let log_n = params[3];
    let n_inv = params[4];
    let n = 1u << log_n;
    let poly = wid.x + wid.y * nwg.x;
    let base = poly * n;
    for (var p = lid; p < n; p = p + 256u) {
        s[p] = acc_ntt[base + p];
    }
    workgroupBarrier();
    var m = n >> 1u;
    var t = 1u;
    loop {
        if (m == 0u) { break; }
        for (var bi = lid; bi < (n >> 1u); bi = bi + 256u) {
            let i = bi / t;
            let j = 2u * i * t + (bi % t);
            let w = tables[n + m + i];
            let x = s[j];
            let y = s[j + t];
            s[j] = mod_add(x, y, q);
            s[j + t] = mod_mul(mod_sub(x, y, q), w, q, k, mu);
        }
        workgroupBarrier();
        m = m >> 1u;
        t = t << 1u;
    }
    for (var p = lid; p < n; p = p + 256u) {
        acc[base + p] = mod_mul(s[p], n_inv, q, k, mu);
    }
}
