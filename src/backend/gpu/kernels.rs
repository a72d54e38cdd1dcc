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

/// Per-limb `[q, k, mu, w, w_shoup, 0, 0, 0]`.
fn limb_table(be: &GpuBackend, basis: &[usize], scalars: Option<&[u32]>) -> Result<Vec<u32>> {
    // Resolve every prime first, then check the scalars: the CPU twin's order of errors.
    let moduli = be.ctx.moduli_of(basis)?;
    let mut t = Vec::with_capacity(basis.len() * 8);
    for (i, m) in moduli.iter().enumerate() {
        let (w, ws) = match scalars {
            Some(s) => {
                let w = *s.get(i).ok_or(Error::DimensionMismatch {
                    what: "scalars",
                    expected: basis.len(),
                    found: s.len(),
                })?;
                if w >= m.value() {
                    return Err(Error::ResidueOutOfRange { limb: i, index: 0 });
                }
                (w, m.shoup(w))
            }
            None => (0, 0),
        };
        t.extend_from_slice(&[m.value(), m.bits(), m.barrett_mu(), w, ws, 0, 0, 0]);
    }
    Ok(t)
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
    if let Some(s) = scalars {
        if s.len() != basis.len() {
            return Err(Error::DimensionMismatch { what: "scalars", expected: basis.len(), found: s.len() });
        }
    }
    let table = match scalars {
        Some(_) => std::sync::Arc::new(be.dev.upload(&limb_table(be, basis, scalars)?)?),
        None => be.table("limbs", basis, || limb_table(be, basis, None))?,
    };
    let out = be.zeros(a.words)?;
    let params = [op as u32, be.log_n(), be.total(a.words)?];
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
    let table = be.table("limbs", basis, || limb_table(be, basis, None))?;
    let params = [Op::MulAdd as u32, be.log_n(), be.total(a.words)?];
    be.dev.dispatch(&ELEMENTWISE, &params, &[&*table, &a.buf, &b.buf, &acc.buf], a.words as u64)
}

pub(super) fn automorphism(be: &GpuBackend, a: &GpuBuffer, g: usize) -> Result<GpuBuffer> {
    let perm_buf = be.table("galois permutation", &[g], || Ok(be.ctx.galois_permutation(g)?.to_vec()))?;
    let out = be.zeros(a.words)?;
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
    let mut table = Vec::with_capacity(basis.len() * 4);
    for (&idx, &kp) in basis.iter().zip(key_positions) {
        let m = be.ctx.modulus(idx)?;
        let kp = u32::try_from(kp).map_err(|_| Error::SizeOverflow { what: "key limb" })?;
        table.extend_from_slice(&[m.value(), m.bits(), m.barrett_mu(), kp]);
    }
    let table = be.dev.upload(&table)?;
    let out0 = be.zeros(words)?;
    let out1 = be.zeros(words)?;
    let params = [be.log_n(), be.total(words)?];
    for (d, (kb, ka)) in digits.iter().zip(key) {
        be.dev.dispatch(
            &KEY_SWITCH_INNER_PRODUCT,
            &params,
            &[&table, &d.buf, &kb.buf, &ka.buf, &out0.buf, &out1.buf],
            words as u64,
        )?;
    }
    Ok((out0, out1))
}
