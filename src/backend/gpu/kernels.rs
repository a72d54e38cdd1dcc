//! Host side of the WGSL kernels: tables, parameters and dispatches. One function per kernel
//! family, named like its shader.

use super::sources::{AUTOMORPHISM, ELEMENTWISE, KEY_SWITCH_INNER_PRODUCT};
use super::{GpuBackend, GpuBuffer};
use crate::backend::Backend;
use crate::error::{Error, Result};

/// Element-wise operations of `elementwise.wgsl` (the op code is the discriminant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Add = 0,
    Sub = 1,
    Neg = 2,
    Mul = 3,
    MulAdd = 4,
    MulScalar = 5,
}

/// Per-limb `[q, k, mu, 0]` of `elementwise.wgsl`.
fn limb_table(be: &GpuBackend, basis: &[usize]) -> Result<Vec<u32>> {
    Ok(be.ctx.moduli_of(basis)?.iter().flat_map(|m| [m.value(), m.bits(), m.barrett_mu(), 0]).collect())
}

/// Per-limb `[w, w_shoup]` of `mul_scalar`, appended to the parameters.
fn scalar_params(be: &GpuBackend, basis: &[usize], scalars: &[u32], params: &mut Vec<u32>) -> Result<()> {
    // Resolve every prime first, then check the scalars: the CPU twin's order of errors.
    let moduli = be.ctx.moduli_of(basis)?;
    for (i, m) in moduli.iter().enumerate() {
        let w = *scalars.get(i).ok_or(Error::DimensionMismatch {
            what: "scalars",
            expected: basis.len(),
            found: scalars.len(),
        })?;
        if w >= m.value() {
            return Err(Error::ResidueOutOfRange { limb: i, index: 0 });
        }
        params.extend_from_slice(&[w, m.shoup(w)]);
    }
    Ok(())
}

pub(super) fn elementwise(
    be: &GpuBackend,
    op: Op,
    a: &GpuBuffer,
    b: Option<&GpuBuffer>,
    scalars: Option<&[u32]>,
    basis: &[usize],
) -> Result<GpuBuffer> {
    be.check("operand a", a, basis.len())?;
    if let Some(b) = b {
        be.check("operand b", b, basis.len())?;
    }
    let mut params = vec![op as u32, be.log_n(), be.total(a.words)?];
    if let Some(s) = scalars {
        if s.len() != basis.len() {
            return Err(Error::DimensionMismatch { what: "scalars", expected: basis.len(), found: s.len() });
        }
        scalar_params(be, basis, s, &mut params)?;
    }
    let table = be.table("limbs", basis, || limb_table(be, basis))?;
    let out = be.output(a.words)?;
    let b_buf = b.map_or(&a.buf, |b| &b.buf);
    be.dev.dispatch(&ELEMENTWISE, &params, &[&*table, &a.buf, b_buf, &out.buf], a.words as u64)?;
    Ok(out)
}

pub(super) fn mul_add(
    be: &GpuBackend,
    acc: &mut GpuBuffer,
    a: &GpuBuffer,
    b: &GpuBuffer,
    basis: &[usize],
) -> Result<()> {
    be.check("operand a", a, basis.len())?;
    be.check("operand b", b, basis.len())?;
    let table = be.table("limbs", basis, || limb_table(be, basis))?;
    let params = [Op::MulAdd as u32, be.log_n(), be.total(a.words)?];
    be.dev.dispatch(&ELEMENTWISE, &params, &[&*table, &a.buf, &b.buf, &acc.buf], a.words as u64)
}

pub(super) fn automorphism(be: &GpuBackend, a: &GpuBuffer, g: usize) -> Result<GpuBuffer> {
    let perm_buf = be.table("galois permutation", &[g], || Ok(be.ctx.galois_permutation(g)?.to_vec()))?;
    let out = be.output(a.words)?;
    let params = [be.log_n(), be.total(a.words)?];
    be.dev.dispatch(&AUTOMORPHISM, &params, &[&*perm_buf, &a.buf, &out.buf], a.words as u64)?;
    Ok(out)
}

pub(super) fn key_switch_inner_product(
    be: &GpuBackend,
    digits: &[&GpuBuffer],
    basis: &[usize],
    key: &[(&GpuBuffer, &GpuBuffer)],
    key_positions: &[usize],
) -> Result<(GpuBuffer, GpuBuffer)> {
    let words = basis.len() * be.n();
    // Resident per (basis, key positions): `basis ++ [usize::MAX] ++ key_positions`.
    let key_of: Vec<usize> = basis.iter().copied().chain([usize::MAX]).chain(key_positions.iter().copied()).collect();
    let table = be.table("key switch limbs", &key_of, || {
        let mut table = Vec::with_capacity(basis.len() * 4);
        for (&idx, &kp) in basis.iter().zip(key_positions) {
            let m = be.ctx.modulus(idx)?;
            let kp = u32::try_from(kp).map_err(|_| Error::SizeOverflow { what: "key limb" })?;
            table.extend_from_slice(&[m.value(), m.bits(), m.barrett_mu(), kp]);
        }
        Ok(table)
    })?;
    // The digits accumulate into the outputs: they start at zero.
    let out0 = be.zeros(words)?;
    let out1 = be.zeros(words)?;
    let params = [be.log_n(), be.total(words)?];
    for (d, (kb, ka)) in digits.iter().zip(key) {
        be.dev.dispatch(
            &KEY_SWITCH_INNER_PRODUCT,
            &params,
            &[&*table, &d.buf, &kb.buf, &ka.buf, &out0.buf, &out1.buf],
            words as u64,
        )?;
    }
    Ok((out0, out1))
}
