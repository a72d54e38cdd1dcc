//! Host side of the RNS kernels: `uniform` (ChaCha20 expansion), `base_convert` (fast basis
//! conversion) and `scale_down` (divide-and-round). Each packs the tables of its CPU twin
//! ([`crate::math::sampling`], [`crate::math::rns`]) into small per-call buffers and runs one
//! dispatch with one thread per output word.

use super::sources::{BASE_CONVERT, SCALE_DOWN, UNIFORM};
use super::{GpuBackend, GpuBuffer};
use crate::backend::Backend;
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

/// `uniform.wgsl`: per limb `[q, k, mu, 2^32 mod q, Shoup, stream lo, stream hi, 0]`.
pub(super) fn uniform(
    be: &GpuBackend,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    basis: &[usize],
) -> Result<GpuBuffer> {
    // Resolve every prime first, then the stream ids: the CPU twin's order of errors.
    let moduli = be.ctx.moduli_of(basis)?;
    let mut table = Vec::with_capacity(basis.len() * 8);
    for m in &moduli {
        let id = stream_id(purpose, index, m.value())?;
        let (radix, radix_shoup) = word_radix(m);
        table.extend_from_slice(&[
            m.value(),
            m.bits(),
            m.barrett_mu(),
            radix,
            radix_shoup,
            id as u32,
            (id >> 32) as u32,
            0,
        ]);
    }
    let words = basis.len() * be.n();
    let mut params = Vec::with_capacity(2 + SEED_BYTES / 4);
    params.extend_from_slice(&[be.log_n(), be.total(words)?]);
    params.extend(key_words(seed));
    let out = be.zeros(words)?;
    if words == 0 {
        return Ok(out);
    }
    let table = be.dev.upload(&table)?;
    be.dev.dispatch(&UNIFORM, &params, &[&table, &out.buf], words as u64)?;
    Ok(out)
}

/// `base_convert.wgsl`, with the tables of [`crate::math::rns::BaseConverter`].
pub(super) fn base_convert(be: &GpuBackend, a: &GpuBuffer, from: &[usize], to: &[usize]) -> Result<GpuBuffer> {
    let conv = be.ctx.converter(from, to)?;
    let (qs, ps) = (conv.from_moduli(), conv.to_moduli());
    let (l, m) = (qs.len(), ps.len());
    table_len("qhat_inv", l, conv.qhat_inv().len())?;
    table_len("qhat_inv_shoup", l, conv.qhat_inv_shoup().len())?;
    table_len("qhat_mod_p", l * m, conv.qhat_mod_p().len())?;
    table_len("qhat_mod_p_shoup", l * m, conv.qhat_mod_p_shoup().len())?;
    table_len("q_mod_p", m, conv.q_mod_p().len())?;
    let from_table: Vec<u32> = qs
        .iter()
        .zip(conv.qhat_inv().iter().zip(conv.qhat_inv_shoup()))
        .flat_map(|(q, (&w, &ws))| [q.value(), w, ws, q.value() / 2])
        .collect();
    let to_table: Vec<u32> =
        ps.iter().zip(conv.q_mod_p()).flat_map(|(p, &qp)| [p.value(), qp, p.shoup(qp), 0]).collect();
    let matrix: Vec<u32> =
        conv.qhat_mod_p().iter().zip(conv.qhat_mod_p_shoup()).flat_map(|(&w, &ws)| [w, ws]).collect();
    let words = m * be.n();
    let out = be.zeros(words)?;
    if words == 0 {
        return Ok(out);
    }
    let params = [be.log_n(), be.total(words)?, count(l, "base_convert source limbs")?];
    let from_buf = be.dev.upload(&from_table)?;
    let to_buf = be.dev.upload(&to_table)?;
    let matrix_buf = be.dev.upload(&matrix)?;
    be.dev.dispatch(&BASE_CONVERT, &params, &[&from_buf, &to_buf, &matrix_buf, &a.buf, &out.buf], words as u64)?;
    Ok(out)
}

/// `scale_down.wgsl`, with the tables of [`crate::math::rns::ScaleDown`].
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
    let t_val = sd.t().unwrap_or(1);
    let keep_table: Vec<u32> = ks
        .iter()
        .zip(sd.d_inv().iter().zip(sd.d_inv_shoup()))
        .flat_map(|(k, (&di, &dis))| [k.value(), k.bits(), k.barrett_mu(), di, dis, k.reduce_u32(t_val), 0, 0])
        .collect();
    let drop_table: Vec<u32> = ds
        .iter()
        .zip(sd.drop_factor().iter().zip(sd.drop_factor_shoup()))
        .flat_map(|(d, (&w, &ws))| [d.value(), w, ws, d.value() / 2])
        .collect();
    let lift: Vec<u32> = sd.lift_matrix().iter().zip(sd.lift_matrix_shoup()).flat_map(|(&w, &ws)| [w, ws]).collect();
    let words = kl * be.n();
    let out = be.zeros(words)?;
    if words == 0 {
        return Ok(out);
    }
    let params =
        [be.log_n(), be.total(words)?, count(dl, "scale_down dropped limbs")?, count(kl, "scale_down kept limbs")?];
    let keep_buf = be.dev.upload(&keep_table)?;
    let drop_buf = be.dev.upload(&drop_table)?;
    let lift_buf = be.dev.upload(&lift)?;
    be.dev.dispatch(&SCALE_DOWN, &params, &[&keep_buf, &drop_buf, &lift_buf, &a.buf, &out.buf], words as u64)?;
    Ok(out)
}
