//! Host side of the RNS kernels: `uniform` (ChaCha20 expansion), `base_convert` (fast basis
//! conversion) and `scale_down` (divide-and-round). Each packs the tables of its CPU twin
//! ([`crate::math::sampling`], [`crate::math::rns`]) into buffers uploaded once per basis and
//! kept resident ([`GpuBackend::table`]), and records one dispatch: one thread per output word,
//! one per ChaCha20 block (4 residues) for `uniform`.

use super::sources::{BASE_CONVERT, SCALE_DOWN, UNIFORM};
use super::{GpuBackend, GpuBuffer};
use crate::error::{Error, Result};
use crate::math::sampling::{stream_id, Purpose, Seed, SEED_BYTES};
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

/// `2^32 mod q` and its Shoup companion: the radix of `uniform_reduce` (`shared/chacha.wgsl`).
pub(super) fn word_radix(m: &Modulus) -> (u32, u32) {
    // 2^32 mod q = ((2^32 - 1) mod q + 1) mod q, as the CPU's word reducer builds it.
    let radix = m.add(m.reduce_u32(u32::MAX), 1);
    (radix, m.shoup(radix))
}

/// The ChaCha20 key words of a seed: word i = `u32::from_le_bytes(seed[4i..4i+4])`.
pub(super) fn key_words(seed: &Seed) -> impl Iterator<Item = u32> + '_ {
    seed.chunks_exact(4).map(|b| b.iter().rev().fold(0u32, |w, &x| w << 8 | u32::from(x)))
}

/// `uniform.wgsl`: the resident per-limb table `[q, k, mu, 2^32 mod q, Shoup, 0, 0, 0]`, and in
/// the parameters the seed's key words and each limb's stream id ([`stream_id`], the one stream
/// definition the CPU twin uses too); one thread per ChaCha20 block.
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
    let blocks_per_limb = n.div_ceil(4);
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
        Ok(moduli
            .iter()
            .flat_map(|m| {
                let (radix, radix_shoup) = word_radix(m);
                [m.value(), m.bits(), m.barrett_mu(), radix, radix_shoup, 0, 0, 0]
            })
            .collect())
    })?;
    be.dev.dispatch(&UNIFORM, &params, &[&*table, &out.buf], u64::from(blocks))?;
    Ok(out)
}

/// Key of a resident table built for two index lists.
fn pair_key(a: &[usize], b: &[usize], extra: Option<u32>) -> Vec<usize> {
    let mut k: Vec<usize> = a.iter().copied().chain([usize::MAX]).chain(b.iter().copied()).collect();
    if let Some(x) = extra {
        k.extend([usize::MAX, x as usize]);
    }
    k
}

/// `base_convert.wgsl`, with the tables of [`crate::math::rns::BaseConverter`] (resident per
/// `(from, to)`).
pub(super) fn base_convert(be: &GpuBackend, a: &GpuBuffer, from: &[usize], to: &[usize]) -> Result<GpuBuffer> {
    let conv = be.ctx.converter(from, to)?;
    let (qs, ps) = (conv.from_moduli(), conv.to_moduli());
    let (l, m) = (qs.len(), ps.len());
    table_len("qhat_inv", l, conv.qhat_inv().len())?;
    table_len("qhat_inv_shoup", l, conv.qhat_inv_shoup().len())?;
    table_len("qhat_mod_p", l * m, conv.qhat_mod_p().len())?;
    table_len("qhat_mod_p_shoup", l * m, conv.qhat_mod_p_shoup().len())?;
    table_len("q_mod_p", m, conv.q_mod_p().len())?;
    let words = m * be.n();
    let out = be.output(words)?;
    if words == 0 {
        return Ok(out);
    }
    let key = pair_key(from, to, None);
    let from_buf = be.table("base_convert from", &key, || {
        Ok(qs
            .iter()
            .zip(conv.qhat_inv().iter().zip(conv.qhat_inv_shoup()))
            .flat_map(|(q, (&w, &ws))| [q.value(), w, ws, q.value() / 2])
            .collect())
    })?;
    let to_buf = be.table("base_convert to", &key, || {
        Ok(ps.iter().zip(conv.q_mod_p()).flat_map(|(p, &qp)| [p.value(), qp, p.shoup(qp), 0]).collect())
    })?;
    let matrix_buf = be.table("base_convert matrix", &key, || {
        Ok(conv.qhat_mod_p().iter().zip(conv.qhat_mod_p_shoup()).flat_map(|(&w, &ws)| [w, ws]).collect())
    })?;
    let params = [be.log_n(), be.total(words)?, count(l, "base_convert source limbs")?];
    be.dev.dispatch(&BASE_CONVERT, &params, &[&*from_buf, &*to_buf, &*matrix_buf, &a.buf, &out.buf], words as u64)?;
    Ok(out)
}

/// `scale_down.wgsl`, with the tables of [`crate::math::rns::ScaleDown`] (resident per
/// `(keep, drop, t)`).
pub(super) fn scale_down(
    be: &GpuBackend,
    a: &GpuBuffer,
    keep: &[usize],
    drop: &[usize],
    t: Option<u32>,
) -> Result<GpuBuffer> {
    let sd = be.ctx.scale_down(keep, drop, t)?;
    let (ks, ds) = (sd.keep_moduli(), sd.drop_moduli());
    let (kl, dl) = (ks.len(), ds.len());
    table_len("d_inv", kl, sd.d_inv().len())?;
    table_len("d_inv_shoup", kl, sd.d_inv_shoup().len())?;
    table_len("drop_factor", dl, sd.drop_factor().len())?;
    table_len("drop_factor_shoup", dl, sd.drop_factor_shoup().len())?;
    table_len("lift_matrix", kl * dl, sd.lift_matrix().len())?;
    table_len("lift_matrix_shoup", kl * dl, sd.lift_matrix_shoup().len())?;
    let words = kl * be.n();
    let out = be.output(words)?;
    if words == 0 {
        return Ok(out);
    }
    let key = pair_key(keep, drop, Some(t.map_or(0, |t| t.saturating_add(1))));
    let keep_buf = be.table("scale_down keep", &key, || {
        let t_val = sd.t().unwrap_or(1);
        Ok(ks
            .iter()
            .zip(sd.d_inv().iter().zip(sd.d_inv_shoup()))
            .flat_map(|(k, (&di, &dis))| [k.value(), k.bits(), k.barrett_mu(), di, dis, k.reduce_u32(t_val), 0, 0])
            .collect())
    })?;
    let drop_buf = be.table("scale_down drop", &key, || {
        Ok(ds
            .iter()
            .zip(sd.drop_factor().iter().zip(sd.drop_factor_shoup()))
            .flat_map(|(d, (&w, &ws))| [d.value(), w, ws, d.value() / 2])
            .collect())
    })?;
    let lift_buf = be.table("scale_down lift", &key, || {
        Ok(sd.lift_matrix().iter().zip(sd.lift_matrix_shoup()).flat_map(|(&w, &ws)| [w, ws]).collect())
    })?;
    let params =
        [be.log_n(), be.total(words)?, count(dl, "scale_down dropped limbs")?, count(kl, "scale_down kept limbs")?];
    be.dev.dispatch(&SCALE_DOWN, &params, &[&*keep_buf, &*drop_buf, &*lift_buf, &a.buf, &out.buf], words as u64)?;
    Ok(out)
}
