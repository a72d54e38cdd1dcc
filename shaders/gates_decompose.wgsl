// Bootstrapped gates, blind-rotation step part 1 (CPU twin: src/gates/rotate.rs `decompose` and
// the forward NTT): one workgroup per (gate, row). Row r = c * digits + l is digit l of the
// signed gadget decomposition of accumulator polynomial c (the lowest `skipped` digits rounded
// away), as residues mod q, then transformed by the negacyclic NTT (Cooley-Tukey, natural order
// in, bit-reversed out, strict: canonical residues; the same slots as src/math/ntt.rs). The
// CPU twin uses the lazy forward NTT (digits left in [0, 4q)); the two agree once reduced, and
// the key product below reduces whatever range it is given, so the step's words are the same.
// params: [q, k, mu, log_n, rows, digits, skipped, log_bg]
// tables: [W (N, forward twiddles psi^bitrev(k)) | V (N) | mono (2N) | exps (N)]
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read> tables: array<u32>;
@group(0) @binding(2) var<storage, read> acc: array<u32>;
@group(0) @binding(3) var<storage, read_write> digits: array<u32>;

var<workgroup> s: array<u32, 2048>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let q = params[0];
    let k = params[1];
    let mu = params[2];
    let log_n = params[3];
    let rows = params[4];
    let nd = params[5];
    let skipped = params[6];
    let log_b = params[7];
    let n = 1u << log_n;
    let poly = wid.x + wid.y * nwg.x;
    let gate = poly / rows;
    let r = poly % rows;
    let c = r / nd;
    let l = r % nd;
    let shift = log_b * skipped;
    var rnd = 0i;
    if (shift > 0u) { rnd = 1i << (shift - 1u); }
    let b = 1i << log_b;
    let half = b >> 1u;
    let base = (gate * 2u + c) * n;
    for (var p = lid; p < n; p = p + 256u) {
        let x = acc[base + p];
        var xc = i32(x);
        if (x > q / 2u) { xc = i32(x) - i32(q); }
        var cur = (xc + rnd) >> shift;
        var d = 0i;
        for (var j = 0u; j <= l; j = j + 1u) {
            if (j + 1u == nd) { d = cur; } else { d = ((cur + half) & (b - 1i)) - half; }
            cur = (cur - d) >> log_b;
        }
        var v = u32(d);
        if (d < 0i) { v = u32(d + i32(q)); }
        s[p] = v;
    }
    workgroupBarrier();
    var m = 1u;
    var t = n >> 1u;
    loop {
        if (m >= n) { break; }
        for (var bi = lid; bi < (n >> 1u); bi = bi + 256u) {
            let i = bi / t;
            let j = 2u * i * t + (bi % t);
            let w = tables[m + i];
            let x = s[j];
            let y = mod_mul(s[j + t], w, q, k, mu);
            s[j] = mod_add(x, y, q);
            s[j + t] = mod_sub(x, y, q);
        }
        workgroupBarrier();
        m = m << 1u;
        t = t >> 1u;
    }
    let out = poly * n;
    for (var p = lid; p < n; p = p + 256u) {
        digits[out + p] = s[p];
    }
}
