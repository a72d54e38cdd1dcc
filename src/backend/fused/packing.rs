//! Bit-packed limbs: residue `j` of a limb of `bits`-bit residues is bits
//! `j bits .. (j + 1) bits` of the limb's little-endian bit stream (the layout of
//! [`super::packed_layout`] and the wire format's packing mode 1).
//!
//! Whole limbs are packed and unpacked 32 residues at a time: 32 residues of `B` bits are
//! exactly `B` words, so with the width a constant (one monomorphic copy per width, chosen
//! once per limb) every shift and word index of a group is a compile-time constant and the
//! group's loop unrolls into straight-line shifts and masks. A limb whose length is not a
//! multiple of 32 finishes through the bit accumulator.

use crate::error::{Error, Result};

/// `$group::<B> $args` for the width `B = $bits` in `1..=32` (one monomorphic copy per
/// width), `$other` for any other width.
macro_rules! by_width {
    ($bits:expr, $group:ident $args:tt, $other:expr) => {
        by_width!(@arms $bits, $group $args, $other;
            1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32)
    };
    (@arms $bits:expr, $group:ident $args:tt, $other:expr; $($b:literal)*) => {
        match $bits {
            $($b => $group::<$b> $args,)*
            _ => $other,
        }
    };
}

/// Packs the residues of one limb (each below `2^bits`) into `out` (zeroed, `ceil(n bits/32)`
/// words).
pub fn pack_limb(residues: &[u32], bits: u32, out: &mut [u32]) {
    by_width!(bits, pack_groups(residues, out), pack_stream(residues, bits, out));
}

/// Unpacks a whole packed limb: `out.len()` residues of `bits` bits each from `words` (the
/// inverse of [`pack_limb`]); [`Error::DimensionMismatch`] if `words` is too short or `bits`
/// is not in `1..=32`.
pub fn unpack_limb(words: &[u32], bits: u32, out: &mut [u32]) -> Result<()> {
    let need = out.len().checked_mul(bits as usize).ok_or(Error::SizeOverflow { what: "packed limb" })?.div_ceil(32);
    if words.len() < need || bits == 0 || bits > 32 {
        return Err(Error::DimensionMismatch { what: "packed limb words", expected: need, found: words.len() });
    }
    by_width!(bits, unpack_groups(words, out), unpack_stream(words, bits, out));
    Ok(())
}

/// The mask of `bits`-bit residues (all ones from 32 bits up).
const fn width_mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// [`pack_limb`] at width `B`: whole groups of 32 residues into `B` words each, then the tail.
fn pack_groups<const B: u32>(residues: &[u32], out: &mut [u32]) {
    let b = B as usize;
    let groups = (residues.len() / 32).min(out.len() / b);
    let (head, tail) = residues.split_at(groups * 32);
    let (out_head, out_tail) = out.split_at_mut(groups * b);
    for (src, dst) in head.chunks_exact(32).zip(out_head.chunks_exact_mut(b)) {
        pack_group::<B>(src, dst);
    }
    pack_stream(tail, B, out_tail);
}

/// 32 residues into `B` words (`dst` zeroed).
#[inline(always)]
#[expect(
    clippy::indexing_slicing,
    reason = "src has 32 residues and dst B words; every index is a constant below them"
)]
fn pack_group<const B: u32>(src: &[u32], dst: &mut [u32]) {
    let (src, dst) = (&src[..32], &mut dst[..B as usize]);
    for (i, &x) in src.iter().enumerate() {
        let (pos, x) = (i * B as usize, x & width_mask(B));
        let (w, s) = (pos / 32, (pos % 32) as u32);
        dst[w] |= x << s;
        if s + B > 32 {
            dst[w + 1] |= x >> (32 - s);
        }
    }
}

/// [`unpack_limb`] at width `B` (lengths already checked): whole groups, then the tail.
fn unpack_groups<const B: u32>(words: &[u32], out: &mut [u32]) {
    let b = B as usize;
    let groups = out.len() / 32;
    let (head, tail) = out.split_at_mut(groups * 32);
    let (words_head, words_tail) = words.split_at((groups * b).min(words.len()));
    for (dst, src) in head.chunks_exact_mut(32).zip(words_head.chunks_exact(b)) {
        unpack_group::<B>(src, dst);
    }
    unpack_stream(words_tail, B, tail);
}

/// `B` words into 32 residues.
#[inline(always)]
#[expect(
    clippy::indexing_slicing,
    reason = "src has B words and dst 32 residues; every index is a constant below them"
)]
fn unpack_group<const B: u32>(src: &[u32], dst: &mut [u32]) {
    let (src, dst) = (&src[..B as usize], &mut dst[..32]);
    for (i, o) in dst.iter_mut().enumerate() {
        let pos = i * B as usize;
        let (w, s) = (pos / 32, (pos % 32) as u32);
        let lo = src[w] >> s;
        let hi = if s + B > 32 { src[w + 1] << (32 - s) } else { 0 };
        *o = (lo | hi) & width_mask(B);
    }
}

/// [`pack_limb`] one residue at a time through a bit accumulator (any length, any width).
fn pack_stream(residues: &[u32], bits: u32, out: &mut [u32]) {
    let mask = width_mask(bits);
    // A little-endian bit accumulator: `have < 32` bits wait in `acc` between residues.
    let (mut acc, mut have, mut dst) = (0u64, 0u32, out.iter_mut());
    for &x in residues {
        acc |= u64::from(x & mask) << have;
        have += bits.min(32);
        if have >= 32 {
            if let Some(o) = dst.next() {
                *o |= acc as u32;
            }
            acc >>= 32;
            have -= 32;
        }
    }
    if have > 0 {
        if let Some(o) = dst.next() {
            *o |= acc as u32;
        }
    }
}

/// Residue `j` of a packed limb; [`Error::DimensionMismatch`] if the limb's words end before
/// it.
pub fn unpack_residue(words: &[u32], bits: u32, j: usize) -> Result<u32> {
    let mask = width_mask(bits);
    let pos = j * bits as usize;
    let (w, s) = (pos / 32, (pos % 32) as u32);
    let word = |i: usize| {
        words.get(i).copied().ok_or_else(|| Error::DimensionMismatch {
            what: "packed limb words",
            expected: i + 1,
            found: words.len(),
        })
    };
    let lo = word(w)? >> s;
    let hi = if s + bits > 32 { word(w + 1)? << (32 - s) } else { 0 };
    Ok((lo | hi) & mask)
}

/// [`unpack_limb`] one residue at a time through a bit accumulator (lengths checked by the
/// caller).
fn unpack_stream(words: &[u32], bits: u32, out: &mut [u32]) {
    let mask = width_mask(bits);
    let (mut acc, mut have, mut next) = (0u64, 0u32, words.iter());
    for o in out {
        if have < bits {
            acc |= u64::from(next.next().copied().unwrap_or(0)) << have;
            have += 32;
        }
        *o = (acc as u32) & mask;
        acc >>= bits;
        have -= bits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packing written bit by bit: the definition both paths must meet.
    fn pack_by_bits(residues: &[u32], bits: u32) -> Vec<u32> {
        let mut out = vec![0u32; (residues.len() * bits as usize).div_ceil(32)];
        for (j, &x) in residues.iter().enumerate() {
            for k in 0..bits as usize {
                if (x >> k) & 1 == 1 {
                    let pos = j * bits as usize + k;
                    out[pos / 32] |= 1 << (pos % 32);
                }
            }
        }
        out
    }

    #[test]
    fn every_width_and_length_packs_as_the_bit_stream_and_unpacks_back() {
        let mut state = 0x9e37_79b9_u32;
        for bits in 1..=32u32 {
            for len in [0usize, 1, 5, 31, 32, 33, 64, 95, 1031] {
                let mask = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
                let vals: Vec<u32> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 17;
                        state ^= state << 5;
                        state & mask
                    })
                    .collect();
                let want = pack_by_bits(&vals, bits);
                let mut packed = vec![0u32; want.len()];
                pack_limb(&vals, bits, &mut packed);
                assert_eq!(packed, want, "bits {bits} len {len}");
                let mut back = vec![0u32; len];
                unpack_limb(&packed, bits, &mut back).unwrap();
                assert_eq!(back, vals, "bits {bits} len {len}");
                for (j, &v) in vals.iter().enumerate().step_by(7) {
                    assert_eq!(unpack_residue(&packed, bits, j).unwrap(), v);
                }
                if !packed.is_empty() {
                    assert!(unpack_limb(&packed[..packed.len() - 1], bits, &mut back).is_err());
                }
            }
        }
    }

    #[test]
    fn bits_outside_one_to_thirty_two_are_refused() {
        let mut out = [0u32; 4];
        assert!(unpack_limb(&[0; 8], 0, &mut out).is_err());
        assert!(unpack_limb(&[0; 8], 33, &mut out).is_err());
    }
}
