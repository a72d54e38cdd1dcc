//! Host side of the RNS kernels: `uniform` (generator 2, one thread per ChaCha12 block of 16 residues),
//! `base_convert` (fast basis conversion) and `scale_down_correction` (the divide-and-round
//! correction). Each packs the tables of its CPU twin ([`crate::math::sampling`],
//! [`crate::math::rns`], [`crate::math::rounding`]) into buffers; the conversion and
//! correction tables stay resident ([`GpuBackend::table`]).

use super::sources::{BASE_CONVERT, SCALE_DOWN_CORRECTION, SCALE_DOWN_DIGITS, UNIFORM};
use super::{GpuBackend, GpuBuffer};
use crate::backend::key_switching::convert_positions;
use crate::backend::ConvertPart;
use crate::error::{Error, Result};
use crate::math::rounding::Rounding;
use crate::math::sampling::{candidate_mask, stream_id, Purpose, Seed, SEED_BYTES};
use crate::math::zq::Modulus;

fn count(len: usize, what: &'static str) -> Result<u32> {
    u32::try_from(len).map_err(|_| Error::SizeOverflow { what })
}

fn table_len(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::DimensionMismatch { what, expected, found })
    }
}

/// `2^32 mod q` and its Shoup companion: the radix of the wide reductions (`reduce_wide4` in
/// `shared/zq4.wgsl`, the fused kernels' sums).
pub(super) fn word_radix(m: &Modulus) -> (u32, u32) {
    // 2^32 mod q = ((2^32 - 1) mod q + 1) mod q.
    let radix = m.add(m.reduce_u32(u32::MAX), 1);
    (radix, m.shoup(radix))
}

/// The ChaCha key words of a seed: word i = `u32::from_le_bytes(seed[4i..4i+4])`.
pub(super) fn key_words(seed: &Seed) -> impl Iterator<Item = u32> + '_ {
    seed.chunks_exact(4).map(|b| b.iter().rev().fold(0u32, |w, &x| w << 8 | u32::from(x)))
}

/// `uniform.wgsl`: the resident per-limb table `[q, candidate mask]`, and in the parameters the
/// seed's key words and each limb's stream id ([`stream_id`], the one stream definition the
/// CPU twin uses too); one thread per ChaCha12 block of 16 residues.
pub(super) fn uniform(
    be: &GpuBackend,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    basis: &[usize],
) -> Result<GpuBuffer> {
    // Resolve every prime first, then the stream ids: the CPU twin's order of errors.
    let moduli = be.ctx.moduli_of(basis)?;
    let n = be.n();
    let blocks_per_limb = n.div_ceil(16);
    let blocks = be.total(basis.len() * blocks_per_limb)?;
    let mut params = Vec::with_capacity(2 + SEED_BYTES / 4 + 2 * basis.len());
    params.extend_from_slice(&[be.log_n(), blocks]);
    params.extend(key_words(seed));
    for m in &moduli {
        let id = stream_id(purpose, index, m.value())?;
        params.extend_from_slice(&[id as u32, (id >> 32) as u32]);
    }
    let words = basis.len() * n;
    let out = be.output(words)?;
    if words == 0 {
        return Ok(out);
    }
    let table = be.table("uniform limbs", basis, || {
        Ok(moduli.iter().flat_map(|m| [m.value(), candidate_mask(m.value())]).collect())
    })?;
    be.dev.dispatch(&UNIFORM, &params, &[&*table, &out.buf], u64::from(blocks))?;
    Ok(out)
}

/// Key of a resident table built for lists of primes: the lists, each followed by a separator.
fn list_key<'a>(lists: impl IntoIterator<Item = &'a [usize]>) -> Vec<usize> {
    let mut key = Vec::new();
    for l in lists {
        key.extend_from_slice(l);
        key.push(usize::MAX);
    }
    key
}

/// Target limbs one invocation of `base_convert.wgsl` and `scale_down_correction.wgsl` computes
/// (two vec4 lanes).
const TILE: usize = 8;

/// `base_convert.wgsl`: every part in one dispatch, with the tables of
/// [`crate::math::rns::BaseConverter`] (resident, built once per basis and parts).
pub(super) fn base_convert(
    be: &GpuBackend,
    a: &GpuBuffer,
    basis: &[usize],
    parts: &[ConvertPart<'_>],
) -> Result<GpuBuffer> {
    let positions = convert_positions(basis, parts)?;
    let convs = parts.iter().map(|(from, to)| be.ctx.converter(from, to)).collect::<Result<Vec<_>>>()?;
    let out_limbs: usize = parts.iter().map(|(_, to)| to.len()).sum();
    let words = out_limbs * be.n();
    let out = be.output(words)?;
    if words == 0 {
        return Ok(out);
    }
    let tiles: usize = parts.iter().map(|(_, to)| to.len().div_ceil(TILE)).sum();
    let from_total: usize = parts.iter().map(|(from, _)| from.len()).sum();
    let (from_base, tiles_base) = (8 * parts.len(), 8 * parts.len() + 4 * from_total);
    let matrix_base = tiles_base + 24 * tiles;
    let key = list_key(std::iter::once(basis).chain(parts.iter().flat_map(|(f, t)| [*f, *t])));
    let table = be.table("base_convert", &key, || {
        let mut head = Vec::with_capacity(8 * parts.len());
        let (mut from_t, mut tile_t, mut matrix) = (Vec::new(), Vec::new(), Vec::new());
        let (mut out_limb, mut tile) = (0usize, 0usize);
        for (conv, pos) in convs.iter().zip(&positions) {
            let (qs, ps) = (conv.from_moduli(), conv.to_moduli());
            let (l, m) = (qs.len(), ps.len());
            table_len("qhat_inv", l, conv.qhat_inv().len())?;
            table_len("qhat_inv_shoup", l, conv.qhat_inv_shoup().len())?;
            table_len("qhat_mod_p", l * m, conv.qhat_mod_p().len())?;
            table_len("qhat_mod_p_shoup", l * m, conv.qhat_mod_p_shoup().len())?;
            table_len("q_mod_p", m, conv.q_mod_p().len())?;
            head.extend(
                [from_t.len() / 4, l, out_limb, matrix.len(), tile, m, 0, 0]
                    .into_iter()
                    .map(|v| count(v, "base_convert table"))
                    .collect::<Result<Vec<_>>>()?,
            );
            for ((q, (&w, &ws)), &p) in qs.iter().zip(conv.qhat_inv().iter().zip(conv.qhat_inv_shoup())).zip(pos) {
                from_t.extend_from_slice(&[count(p, "base_convert input limb")?, q.value(), w, ws]);
            }
            // Per tile of 8 targets (padded with modulus 1 and zero constants): the targets'
            // constants, then per source limb the 8 matrix entries and their Shoup companions.
            for j0 in (0..m).step_by(TILE) {
                let lane = |f: &dyn Fn(usize) -> u32| -> Vec<u32> {
                    (j0..j0 + TILE).map(|j| if j < m { f(j) } else { 0 }).collect()
                };
                let p_of = |j: usize| ps.get(j).map_or(1, |p| p.value());
                let qp = |j: usize| conv.q_mod_p().get(j).copied().unwrap_or(0);
                tile_t.extend((j0..j0 + TILE).map(p_of));
                tile_t.extend(lane(&qp));
                tile_t.extend(lane(&|j| ps.get(j).map_or(0, |p| p.shoup(qp(j)))));
                for i in 0..l {
                    let entry = |v: &[u32], j: usize| v.get(j * l + i).copied().unwrap_or(0);
                    matrix.extend(lane(&|j| entry(conv.qhat_mod_p(), j)));
                    matrix.extend(lane(&|j| entry(conv.qhat_mod_p_shoup(), j)));
                }
            }
            out_limb += m;
            tile += m.div_ceil(TILE);
        }
        Ok([head, from_t, tile_t, matrix].concat())
    })?;
    let threads = tiles * be.n();
    let params = [
        be.log_n(),
        be.total(threads)?,
        count(parts.len(), "base_convert parts")?,
        count(from_base, "base_convert table")?,
        count(tiles_base, "base_convert table")?,
        count(matrix_base, "base_convert table")?,
    ];
    be.dev.dispatch(&BASE_CONVERT, &params, &[&*table, &a.buf, &out.buf], threads as u64)?;
    Ok(out)
}

/// `scale_down_digits.wgsl` (prime by prime with several primes) and
/// `scale_down_correction.wgsl` (one dispatch for every polynomial), with the tables of
/// [`crate::math::rounding::RoundingCorrection`] (resident).
pub(super) fn scale_down_correction(
    be: &GpuBackend,
    dropped: &GpuBuffer,
    keep: &[usize],
    drop: &[usize],
    t: Option<u32>,
    rounding: Rounding,
) -> Result<GpuBuffer> {
    let rc = be.ctx.rounding_correction(keep, drop, t, rounding)?;
    let n = be.n();
    let per = drop.len() * n;
    if per == 0 || dropped.words == 0 || !dropped.words.is_multiple_of(per) {
        return Err(Error::DimensionMismatch { what: "dropped limbs", expected: per, found: dropped.words });
    }
    let polys = dropped.words / per;
    let steps = rc.step_moduli().len();
    let (tri_neg, tri_shoup, tri_high) = rc.triangle();
    let (w_neg, w_shoup, w_high) = rc.weights();
    let tri_base = 4 * steps;
    let keep_base = tri_base + 3 * tri_neg.len();
    let t_key = t.map_or(usize::MAX, |t| t as usize);
    let mode = match rounding {
        Rounding::Joint => 0,
        Rounding::PrimeByPrime => 1,
    };
    let key = list_key([keep, drop, &[t_key, mode][..]]);
    let table = be.table("scale_down_correction", &key, || {
        let (f, fs) = rc.step_factors();
        let mut table = Vec::with_capacity(keep_base + keep.len().div_ceil(TILE) * (8 + 24 * steps));
        for (((d, &pos), &f), &fs) in rc.step_moduli().iter().zip(rc.step_positions()).zip(f).zip(fs) {
            table.extend_from_slice(&[d.value(), count(pos, "scale_down input limb")?, f, fs]);
        }
        for ((&g, &gs), &gh) in tri_neg.iter().zip(tri_shoup).zip(tri_high) {
            table.extend_from_slice(&[g, gs, gh]);
        }
        // Per tile of 8 kept limbs (padded with modulus 1 and zero weights): the moduli, then per
        // step the 8 lanes' -w, its Shoup companion and d_s w.
        let keep_moduli = rc.keep_moduli();
        let s_len = steps.max(1);
        for i0 in (0..keep_moduli.len()).step_by(TILE) {
            let lane = |f: &dyn Fn(usize) -> u32| -> Vec<u32> {
                (i0..i0 + TILE).map(|i| if i < keep_moduli.len() { f(i) } else { 0 }).collect()
            };
            table.extend((i0..i0 + TILE).map(|i| keep_moduli.get(i).map_or(1, |k| k.value())));
            for s in 0..steps {
                let at = |v: &[u32], i: usize| v.get(i * s_len + s).copied().unwrap_or(0);
                table.extend(lane(&|i| at(w_neg, i)));
                table.extend(lane(&|i| at(w_shoup, i)));
                table.extend(lane(&|i| at(w_high, i)));
            }
        }
        Ok(table)
    })?;
    let staged = rounding == Rounding::PrimeByPrime && steps > 1;
    // Parameters after [log_n, total]: [steps, kept limbs, tri_base, keep_base].
    let shape = [
        count(steps, "scale_down steps")?,
        count(keep.len(), "scale_down kept limbs")?,
        count(tri_base, "scale_down table")?,
        count(keep_base, "scale_down table")?,
    ];
    let scratch = if staged {
        let scratch = be.output(polys * per)?;
        let params = [&[be.log_n(), be.total(polys * n)?][..], &shape].concat();
        be.dev.dispatch(&SCALE_DOWN_DIGITS, &params, &[&*table, &dropped.buf, &scratch.buf], (polys * n) as u64)?;
        Some(scratch)
    } else {
        None
    };
    let src = scratch.as_ref().map_or(&dropped.buf, |s| &s.buf);
    let out = be.output(polys * keep.len() * n)?;
    if keep.is_empty() {
        return Ok(out);
    }
    let tiles = keep.len().div_ceil(TILE);
    let threads = polys * tiles * n;
    let head = [be.log_n(), be.total(threads)?];
    let tail = [count(tiles, "scale_down tiles")?, u32::from(!staged)];
    let params = [&head[..], &shape, &tail].concat();
    be.dev.dispatch(&SCALE_DOWN_CORRECTION, &params, &[&*table, src, &out.buf], threads as u64)?;
    Ok(out)
}
