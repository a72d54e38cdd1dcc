//! Hybrid key switching: ModUp per digit, inner product with the key, ModDown.

use super::{KeySwitchKey, PolyPair};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::{positions_in, Eval, RnsPoly};

/// Switches `c` (Eval, over `q_0..q_l`) under the key `ksk` from `s'` to `s`: returns `(d0, d1)`
/// over `q_0..q_l` with `d0 + d1 s = c s' + small`. `t` is the BGV plaintext modulus (the ModDown
/// then preserves the plaintext), `None` for CKKS.
pub fn key_switch<B: Backend>(
    backend: &B,
    c: &RnsPoly<B, Eval>,
    ksk: &KeySwitchKey<B>,
    t: Option<u32>,
) -> Result<PolyPair<B>> {
    super::check_param_id(backend, ksk.param_id)?;
    let ctx = backend.context();
    let params = ctx.params();
    let level = c.limb_count().checked_sub(1).ok_or(Error::LevelOutOfRange { level: 0, max: 0 })?;
    let q_basis = ctx.q_basis(level)?;
    if c.basis() != &q_basis {
        return Err(Error::DimensionMismatch {
            what: "key-switch input basis",
            expected: q_basis.len(),
            found: c.limb_count(),
        });
    }
    let ext_basis = ctx.qp_basis(level)?;
    let key_basis = ctx.qp_basis(ctx.q_count() - 1)?;
    if ksk.digits.iter().any(|(b, a)| b.basis() != &key_basis || a.basis() != &key_basis) {
        return Err(Error::KeyDimensions { reason: "key does not cover Q and P" });
    }
    let c_coeff = c.duplicate(backend)?.into_coeff(backend)?;
    let mut digits = Vec::new();
    for j in 0..params.dnum() {
        let group: Vec<usize> = params.digit_range(j).filter(|&i| i <= level).collect();
        if group.is_empty() {
            continue;
        }
        let rest: Vec<usize> = ext_basis.iter().copied().filter(|i| !group.contains(i)).collect();
        let part = c_coeff.select(backend, &group)?;
        let converted = part.base_convert(backend, &rest)?;
        // Reassemble in the order of ext_basis: the digit's own residues, converted elsewhere.
        let (conv_buf, _) = converted.into_parts();
        let (part_buf, _) = part.into_parts();
        let joined = join_limbs(backend, &ext_basis, (&group, &part_buf), (&rest, &conv_buf))?;
        let poly = RnsPoly::<B, crate::poly::Coeff>::from_buffer(backend, joined, ext_basis.clone())?;
        digits.push(poly.into_eval(backend)?);
    }
    if digits.len() > ksk.digits.len() {
        return Err(Error::KeyDimensions { reason: "key has fewer digits than the parameters" });
    }
    let digit_bufs: Vec<&B::Buffer> = digits.iter().map(RnsPoly::buffer).collect();
    let key: Vec<(&B::Buffer, &B::Buffer)> = ksk.digits.iter().map(|(b, a)| (b.buffer(), a.buffer())).collect();
    let (acc0, acc1) = backend.key_switch_inner_product(&digit_bufs, &ext_basis, &key, &key_basis)?;
    let mut out = Vec::with_capacity(2);
    for acc in [acc0, acc1] {
        let poly = RnsPoly::<B, Eval>::from_buffer(backend, acc, ext_basis.clone())?.into_coeff(backend)?;
        out.push(poly.scale_down(backend, ctx.p_count(), t)?.into_eval(backend)?);
    }
    let mut it = out.into_iter();
    match (it.next(), it.next()) {
        (Some(d0), Some(d1)) => Ok((d0, d1)),
        _ => Err(Error::KeyDimensions { reason: "key switch produced no output" }),
    }
}

/// Builds a buffer over `basis` from two buffers over disjoint sub-bases covering it.
fn join_limbs<B: Backend>(
    backend: &B,
    basis: &[usize],
    first: (&[usize], &B::Buffer),
    second: (&[usize], &B::Buffer),
) -> Result<B::Buffer> {
    let pa = positions_in(basis, first.0)?;
    let pb = positions_in(basis, second.0)?;
    backend.merge_limbs((first.1, &pa), (second.1, &pb), basis.len())
}
