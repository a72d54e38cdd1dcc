//! Hybrid key switching: ModUp per digit, inner product with the key, ModDown.
//!
//! The inner product runs as the `key_switch_inner_product` kernel when every digit of the key
//! holds its `a_j`, and as one fused program ([`crate::backend::fused`]) when some are seeded:
//! `(sum_j d_j * b_j, sum_j d_j * PRG_j)` with `PRG_j` the uniform stream
//! `(seed, Purpose::KeySwitchA, index_j)` regenerated in registers. Both add the products in
//! digit order modulo each prime, so they give the same bits.

use super::{KeyDigit, KeySwitchKey, PolyPair};
use crate::backend::fused::{Expr, Format, Operand, Program, Traffic, MAX_OPERANDS};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{Purpose, Seed};
use crate::poly::{Eval, RnsPoly};
use crate::ring::positions_in;

/// Most digits one fused inner-product program takes: three operands each (`d_j`, `b_j`,
/// `a_j`) plus the two running sums carried over from the previous program.
const DIGITS_PER_PROGRAM: usize = (MAX_OPERANDS - 2) / 3;

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
    if ksk.digits.iter().any(|d| d.b.basis() != &key_basis || d.a.as_ref().is_some_and(|a| a.basis() != &key_basis)) {
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
    let used = ksk
        .digits
        .get(..digits.len())
        .ok_or(Error::KeyDimensions { reason: "key has fewer digits than the parameters" })?;
    let digit_bufs: Vec<&B::Buffer> = digits.iter().map(RnsPoly::buffer).collect();
    let stored: Option<Vec<(&B::Buffer, &B::Buffer)>> =
        used.iter().map(|d| d.a.as_ref().map(|a| (d.b.buffer(), a.buffer()))).collect();
    let (acc0, acc1) = match stored {
        Some(key) => backend.key_switch_inner_product(&digit_bufs, &ext_basis, &key, &key_basis)?,
        None => fused_inner_product(backend, &digit_bufs, &ext_basis, used, &key_basis, &ksk.seed, DIGITS_PER_PROGRAM)?,
    };
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

/// `(sum_j d_j * b_j, sum_j d_j * a_j)` over `basis` with fused programs of at most `chunk`
/// digits each (one program unless the key has more than [`DIGITS_PER_PROGRAM`] digits); each
/// `a_j` is loaded where the key stores it and regenerated from `seed` where it does not. A
/// later program starts its sums from the previous program's outputs, so the additions happen
/// in digit order exactly as in `key_switch_inner_product`.
fn fused_inner_product<B: Backend>(
    backend: &B,
    digits: &[&B::Buffer],
    basis: &[usize],
    key: &[KeyDigit<B>],
    key_basis: &[usize],
    seed: &Seed,
    chunk: usize,
) -> Result<(B::Buffer, B::Buffer)> {
    if digits.len() > key.len() {
        return Err(Error::KeyDimensions { reason: "fewer key digits than ciphertext digits" });
    }
    let mut acc: Option<(B::Buffer, B::Buffer)> = None;
    for (ds, ks) in digits.chunks(chunk.max(1)).zip(key.chunks(chunk.max(1))) {
        let outputs = {
            let mut operands = Vec::with_capacity(2 + 3 * ds.len());
            let (mut sum0, mut sum1) = (Vec::with_capacity(ds.len() + 1), Vec::with_capacity(ds.len() + 1));
            if let Some((a0, a1)) = &acc {
                operands.push(stored(a0, basis, Traffic::Ciphertext));
                operands.push(stored(a1, basis, Traffic::Ciphertext));
                sum0.push(Expr::load(0));
                sum1.push(Expr::load(1));
            }
            for (&d, k) in ds.iter().zip(ks) {
                let i = operands.len();
                operands.push(stored(d, basis, Traffic::Ciphertext));
                operands.push(stored(k.b.buffer(), key_basis, Traffic::Key));
                operands.push(match &k.a {
                    Some(a) => stored(a.buffer(), key_basis, Traffic::Key),
                    None => Operand::Uniform { seed: *seed, purpose: Purpose::KeySwitchA, index: k.index },
                });
                sum0.push(Expr::mul(Expr::load(i), Expr::load(i + 1)));
                sum1.push(Expr::mul(Expr::load(i), Expr::load(i + 2)));
            }
            let program = Program {
                basis,
                operands,
                outputs: vec![(Expr::Sum(sum0), Format::Words), (Expr::Sum(sum1), Format::Words)],
            };
            backend.fused(&program)?
        };
        let mut it = outputs.into_iter();
        match (it.next(), it.next()) {
            (Some(o0), Some(o1)) => acc = Some((o0, o1)),
            _ => return Err(Error::KeyDimensions { reason: "fused inner product produced no output" }),
        }
    }
    acc.ok_or(Error::KeyDimensions { reason: "key switch without digits" })
}

/// A plain-word buffer operand.
fn stored<'a, B: Backend>(buf: &'a B::Buffer, basis: &'a [usize], traffic: Traffic) -> Operand<'a, B> {
    Operand::Buffer { buf, basis, format: Format::Words, traffic }
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

#[cfg(test)]
mod tests {

    use super::*;
    use crate::backend::CpuBackend;
    use crate::params;
    use crate::ring::RingContext;
    use crate::rlwe::{gen_key_switch_key, gen_secret_key, NoiseScale};

    /// Fused programs split into chunks of any size give the kernel's bits, for seeded, stored
    /// and mixed keys.
    #[test]
    fn chunked_fused_inner_product_equals_the_kernel() {
        let p =
            params::insecure_test_bgv(params::TestRing { log_n: 6, q_primes: 4, p_primes: 1, dnum: 4 }, 65537).unwrap();
        let be = CpuBackend::new(RingContext::new(&p).unwrap());
        let ctx = be.context().clone();
        let sk = gen_secret_key(&be, Some(&[3; 32])).unwrap();
        let other = gen_secret_key(&be, Some(&[4; 32])).unwrap();
        let ksk = gen_key_switch_key(&be, other.eval(), &sk, NoiseScale(1)).unwrap();
        let basis = ctx.qp_basis(ctx.q_count() - 1).unwrap();
        let digits: Vec<RnsPoly<CpuBackend, Eval>> =
            (0..4u32).map(|j| RnsPoly::uniform(&be, &[9; 32], Purpose::Ephemeral, j, basis.clone()).unwrap()).collect();
        let bufs: Vec<&Vec<u32>> = digits.iter().map(RnsPoly::buffer).collect();
        let key: Vec<(&Vec<u32>, &Vec<u32>)> =
            ksk.digits.iter().map(|d| (d.b.buffer(), d.a.as_ref().unwrap().buffer())).collect();
        let want = be.key_switch_inner_product(&bufs, &basis, &key, &basis).unwrap();
        let mut mixed = ksk.expand(&be).unwrap();
        mixed.digits[1].a = None;
        mixed.digits[2].a = None;
        let seeded = ksk.expand(&be).unwrap().seeded();
        for k in [&ksk, &mixed, &seeded] {
            for chunk in [1, 2, 3, 4, DIGITS_PER_PROGRAM] {
                let got = fused_inner_product(&be, &bufs, &basis, &k.digits, &basis, &k.seed, chunk).unwrap();
                assert_eq!(got, want, "chunk {chunk}");
            }
        }
    }
}
