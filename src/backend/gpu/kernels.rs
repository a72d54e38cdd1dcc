//! Host side of the WGSL kernels: tables, parameters and dispatches. One function per kernel
//! family, named like its shader.

use super::sources::{AUTOMORPHISM, ELEMENTWISE, KEY_SWITCH_INNER_PRODUCT};
use super::{GpuBackend, GpuBuffer};
use crate::backend::key_switching::{DigitSource, INNER_PRODUCT_DIGITS_PER_PASS};
use crate::backend::{Backend, InnerProductInput, InnerProductSums};
use crate::error::{Error, Result};
use crate::math::sampling::{candidate_mask, stream_id, Purpose};

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
pub(super) fn limb_table(be: &GpuBackend, basis: &[usize]) -> Result<Vec<u32>> {
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

/// `key_switch_inner_product.wgsl`: every digit in one dispatch (a pass per
/// [`INNER_PRODUCT_DIGITS_PER_PASS`] digits), the table resident.
pub(super) fn key_switch_inner_product(
    be: &GpuBackend,
    input: &InnerProductInput<'_, GpuBuffer>,
) -> Result<InnerProductSums<GpuBuffer>> {
    let n = be.n();
    let layout = input.layout(|b: &GpuBuffer| b.words, &be.ctx)?;
    let need = 7 + 2 * INNER_PRODUCT_DIGITS_PER_PASS as u32;
    if be.dev.max_storage_buffers() < need {
        return Err(Error::AdapterLimit {
            reason: format!(
                "the key-switching inner product binds {need} storage buffers, the adapter allows {}",
                be.dev.max_storage_buffers()
            ),
        });
    }
    let (lq, lp) = (input.q_basis.len(), input.p_basis.len());
    let digits = layout.digits;
    let key =
        input.key.get(..digits).ok_or(Error::KeyDimensions { reason: "fewer key digits than ciphertext digits" })?;
    let stride = 8 + 4 * digits;
    let mut table_key: Vec<usize> = Vec::new();
    for list in
        [input.q_basis, input.p_basis, input.key_basis].into_iter().chain(input.digits.iter().map(Vec::as_slice))
    {
        table_key.extend_from_slice(list);
        table_key.push(usize::MAX);
    }
    table_key.extend(key.iter().map(|k| k.index as usize));
    let table = be.table("key_switch_inner_product", &table_key, || {
        let mut t = Vec::with_capacity(layout.primes.len() * stride);
        for (((&prime, &kp), &(start, bits)), sources) in layout
            .primes
            .iter()
            .zip(&layout.key_positions)
            .zip(&layout.key_packed)
            .zip(layout.sources.chunks_exact(digits.max(1)))
        {
            let m = be.ctx.modulus(prime)?;
            let (radix, radix_shoup) = super::rns_kernels::word_radix(m);
            let kp = u32::try_from(kp).map_err(|_| Error::SizeOverflow { what: "key limb" })?;
            let start = be.total(start)?;
            t.extend_from_slice(&[
                m.value(),
                m.shoup(1),
                candidate_mask(m.value()),
                radix,
                radix_shoup,
                kp,
                start,
                bits,
            ]);
            for (src, k) in sources.iter().zip(key) {
                let word = match *src {
                    DigitSource::Input(l) => be.total(l)?,
                    DigitSource::Converted(l) => be.total(l)? | 0x8000_0000,
                };
                let id = stream_id(Purpose::KeySwitchA, k.index, m.value())?;
                t.extend_from_slice(&[word, id as u32, (id >> 32) as u32, 0]);
            }
        }
        Ok(t)
    })?;
    // The first pass writes every output word (later passes accumulate onto it); with no digit
    // at all nothing runs and the sums are zero.
    let alloc = |words: usize| if key.is_empty() { be.zeros(words) } else { be.output(words) };
    let q0 = alloc(lq * n)?;
    let q1 = alloc(lq * n)?;
    let p = alloc(2 * lp * n)?;
    // Sixteen residues per invocation (one ChaCha12 block of generator 2).
    let log_groups = (n / 16).max(1).trailing_zeros();
    let threads = layout.primes.len() << log_groups;
    for (pass, slots) in key.chunks(INNER_PRODUCT_DIGITS_PER_PASS).enumerate() {
        let first = pass * INNER_PRODUCT_DIGITS_PER_PASS;
        let seeded = slots.iter().enumerate().fold(0u32, |m, (s, k)| if k.a.is_none() { m | 1 << s } else { m });
        let packed = slots.iter().enumerate().fold(0u32, |m, (s, k)| if k.b_packed { m | 1 << s } else { m });
        let mut params = vec![
            be.log_n(),
            be.total(threads)?,
            log_groups,
            packed,
            be.total(lq)?,
            be.total(lp)?,
            be.total(first)?,
            be.total(slots.len())?,
            seeded,
            u32::from(pass > 0),
            be.total(stride)?,
        ];
        params.extend(super::rns_kernels::key_words(input.seed));
        let mut buffers: Vec<&wgpu::Buffer> =
            vec![&*table, &input.c.buf, &input.converted.buf, &q0.buf, &q1.buf, &p.buf];
        for s in 0..INNER_PRODUCT_DIGITS_PER_PASS {
            let (b, a) = match slots.get(s) {
                Some(k) => (&k.b.buf, k.a.map_or(&k.b.buf, |a| &a.buf)),
                None => (&input.c.buf, &input.c.buf),
            };
            buffers.extend([b, a]);
        }
        be.dev.dispatch(&KEY_SWITCH_INNER_PRODUCT, &params, &buffers, threads as u64)?;
    }
    Ok(InnerProductSums { q0, q1, p })
}
