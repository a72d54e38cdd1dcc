// Generator 2 uniform residues, shared by uniform.wgsl, key_switch_inner_product.wgsl and the
// generated fused kernels (CPU twin: math/sampling.rs chacha12_block, uniform_limb,
// uniform_residue). Residue j of a limb is word j mod 16 of ChaCha12 block j / 16 of the
// limb's stream (stream id = stream_id(purpose, index, q), split into its low and high words),
// masked to ceil(log2 q) bits and accepted below q; a rejected residue takes candidate t from
// word j mod 16 of block 2^32 t + j / 16 (block counter low word j / 16, high word t), t = 1,
// 2, ..., and after 2^32 - 1 rejections the last candidate mod q. u32 operations only; the
// block lives in four vec4 rows (words 0-3, 4-7, 8-11, 12-15) so no word is ever selected by
// a dynamic index into a private array.

// The 16 words of a block as four rows.
struct ChaBlock {
    r0: vec4<u32>,
    r1: vec4<u32>,
    r2: vec4<u32>,
    r3: vec4<u32>,
}

fn chacha_rotl4(v: vec4<u32>, s: u32) -> vec4<u32> {
    return (v << vec4<u32>(s)) | (v >> vec4<u32>(32u - s));
}

// Four quarter rounds at once, one per column of the rows (a, b, c, d).
fn chacha_columns(x: ChaBlock) -> ChaBlock {
    var a = x.r0;
    var b = x.r1;
    var c = x.r2;
    var d = x.r3;
    a = a + b;
    d = chacha_rotl4(d ^ a, 16u);
    c = c + d;
    b = chacha_rotl4(b ^ c, 12u);
    a = a + b;
    d = chacha_rotl4(d ^ a, 8u);
    c = c + d;
    b = chacha_rotl4(b ^ c, 7u);
    return ChaBlock(a, b, c, d);
}

// The ChaCha12 block (block_lo + 2^32 block_hi) of stream (stream_lo, stream_hi) under the key
// words `key` (key word i = little-endian word i of the seed): six double rounds, the diagonal
// rounds as column rounds on rows rotated by 1, 2 and 3 words.
fn chacha12_block(key: array<u32, 8>, block_lo: u32, block_hi: u32, stream_lo: u32, stream_hi: u32) -> ChaBlock {
    let input = ChaBlock(
        vec4<u32>(0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u),
        vec4<u32>(key[0], key[1], key[2], key[3]),
        vec4<u32>(key[4], key[5], key[6], key[7]),
        vec4<u32>(block_lo, block_hi, stream_lo, stream_hi),
    );
    var x = input;
    for (var r = 0u; r < 6u; r = r + 1u) {
        x = chacha_columns(x);
        x = chacha_columns(ChaBlock(x.r0, x.r1.yzwx, x.r2.zwxy, x.r3.wxyz));
        x = ChaBlock(x.r0, x.r1.wxyz, x.r2.zwxy, x.r3.yzwx);
    }
    return ChaBlock(x.r0 + input.r0, x.r1 + input.r1, x.r2 + input.r2, x.r3 + input.r3);
}

// Row w / 4 of a block (w < 16), chosen by selects.
fn chacha_row(b: ChaBlock, w: u32) -> vec4<u32> {
    let hi = w >= 8u;
    let odd = (w & 4u) != 0u;
    return select(select(b.r0, b.r1, odd), select(b.r2, b.r3, odd), hi);
}

// Word w (< 16) of a block.
fn chacha_word(b: ChaBlock, w: u32) -> u32 {
    return chacha_row(b, w)[w & 3u];
}

// Residue j of the limb from its first candidate word `first` (word j mod 16 of block j / 16,
// unmasked): the masked word if below q, else the fallback candidates.
fn uniform_accept(key: array<u32, 8>, stream_lo: u32, stream_hi: u32, j: u32, first: u32, q: u32, mask: u32) -> u32 {
    var v = first & mask;
    if (v < q) {
        return v;
    }
    for (var t = 1u; t != 0u; t = t + 1u) {
        v = chacha_word(chacha12_block(key, j >> 4u, t, stream_lo, stream_hi), j & 15u) & mask;
        if (v < q) {
            return v;
        }
    }
    return v % q;
}

// The 16 residues 16 jb16 .. 16 jb16 + 15 of the limb, as a block of rows: the first
// candidates of block jb16, then, while any is rejected, the candidates of the fallback block
// 2^32 t + jb16 (t = 1, 2, ...) for the rejected ones only: one fallback block serves every
// rejected residue of the group, so a group costs 1 + (expected rounds) blocks, not one block
// per rejection. After round 2^32 - 1 a residue still rejected is its last candidate mod q.
fn uniform_block16(key: array<u32, 8>, stream_lo: u32, stream_hi: u32, jb16: u32, q: u32, mask: u32) -> ChaBlock {
    let qv = vec4<u32>(q);
    let mv = vec4<u32>(mask);
    let b = chacha12_block(key, jb16, 0u, stream_lo, stream_hi);
    var v = ChaBlock(b.r0 & mv, b.r1 & mv, b.r2 & mv, b.r3 & mv);
    var t = 1u;
    loop {
        let ok0 = v.r0 < qv;
        let ok1 = v.r1 < qv;
        let ok2 = v.r2 < qv;
        let ok3 = v.r3 < qv;
        if (all(ok0) && all(ok1) && all(ok2) && all(ok3)) {
            break;
        }
        if (t == 0u) {
            v = ChaBlock(select(v.r0 % qv, v.r0, ok0), select(v.r1 % qv, v.r1, ok1), select(v.r2 % qv, v.r2, ok2), select(v.r3 % qv, v.r3, ok3));
            break;
        }
        let f = chacha12_block(key, jb16, t, stream_lo, stream_hi);
        v = ChaBlock(select(f.r0 & mv, v.r0, ok0), select(f.r1 & mv, v.r1, ok1), select(f.r2 & mv, v.r2, ok2), select(f.r3 & mv, v.r3, ok3));
        t = t + 1u;
    }
    return v;
}

// Residue j of the uniform limb (key, stream_lo, stream_hi), computing its block.
fn uniform_residue(key: array<u32, 8>, stream_lo: u32, stream_hi: u32, j: u32, q: u32, mask: u32) -> u32 {
    let b = chacha12_block(key, j >> 4u, 0u, stream_lo, stream_hi);
    return uniform_accept(key, stream_lo, stream_hi, j, chacha_word(b, j & 15u), q, mask);
}
