//! The CPU backend's evaluation of fused programs: the specification of the fused kernels,
//! computed limb by limb in parallel.
//!
//! Each output limb loads every operand it reads once: stored words are borrowed in place,
//! packed limbs are unpacked as one bit stream ([`unpack_limb`]), uniform streams are generated
//! by the wide generator ([`crate::math::sampling::uniform_limb`]) and per-limb scalars stay one
//! word. An expression without a Galois node is then evaluated [`CHUNK`] residues at a time,
//! every intermediate of a chunk in a small buffer that stays in the L1 cache (the CPU's
//! registers-and-no-intermediate-stores of the fused kernels); one with a Galois node, which
//! reads its operand at permuted positions, is evaluated a whole limb per node.

use std::borrow::Cow;

use super::{buffer_words, pack_limb, packed_layout, unpack_limb, Expr, Format, Operand, Program};
use crate::backend::CpuBackend;
use crate::error::{Error, Result};
use crate::math::zq::Modulus;
use crate::ring::RingContext;

/// Residues per chunk of the chunked evaluation (4 KiB per intermediate).
const CHUNK: usize = 1024;

/// One loaded operand of one output limb.
enum Loaded<'p> {
    /// The limb's residues (borrowed when stored as words).
    Limb(Cow<'p, [u32]>),
    /// A per-limb scalar: the same residue at every index.
    Const(u32),
}

fn missing_operand() -> Error {
    Error::InvalidField { field: "fused expression", reason: "loads an operand that does not exist" }
}

/// The CPU reference evaluation of `program` (the specification of the fused kernels). The
/// outputs are allocated once and every limb writes its own slice of each (packed outputs
/// through one limb-sized buffer).
pub(crate) fn evaluate_cpu(ctx: &RingContext, program: &Program<'_, CpuBackend>) -> Result<Vec<Vec<u32>>> {
    use rayon::prelude::*;
    let n = ctx.n();
    let moduli = ctx.moduli_of(program.basis)?;
    let mut outs = program
        .outputs
        .iter()
        .map(|(_, format)| Ok(vec![0u32; buffer_words(ctx, program.basis, *format)?]))
        .collect::<Result<Vec<_>>>()?;
    // dsts[l][k]: limb l of output k, in that output's format.
    let mut dsts: Vec<Vec<&mut [u32]>> = program.basis.iter().map(|_| Vec::with_capacity(outs.len())).collect();
    for (out, (_, format)) in outs.iter_mut().zip(&program.outputs) {
        match format {
            Format::Words => {
                for (d, chunk) in dsts.iter_mut().zip(out.chunks_exact_mut(n.max(1))) {
                    d.push(chunk);
                }
            }
            Format::Packed => {
                // Limb l's packed words follow limb l - 1's ([`packed_layout`]).
                let (layout, _) = packed_layout(ctx, program.basis)?;
                let (mut rest, mut offset): (&mut [u32], usize) = (out, 0);
                for (d, &(start, words)) in dsts.iter_mut().zip(&layout) {
                    if start != offset {
                        return Err(Error::SizeOverflow { what: "packed layout" });
                    }
                    offset += words;
                    let take = words.min(rest.len());
                    let (head, tail) = std::mem::take(&mut rest).split_at_mut(take);
                    d.push(head);
                    rest = tail;
                }
            }
        }
    }
    // Every operand an output loads, loaded once per limb.
    let mut used = vec![false; program.operands.len()];
    for (e, _) in &program.outputs {
        e.visit(&mut |x| {
            if let Expr::Load(i) = x {
                if let Some(u) = used.get_mut(*i) {
                    *u = true;
                }
            }
        });
    }
    // Which outputs read a permuted operand (evaluated a whole limb per node).
    let galois: Vec<bool> = program
        .outputs
        .iter()
        .map(|(e, _)| {
            let mut g = false;
            e.visit(&mut |x| g |= matches!(x, Expr::Galois { .. }));
            g
        })
        .collect();
    dsts.into_par_iter().zip(program.basis.par_iter().zip(moduli.par_iter())).enumerate().try_for_each(
        |(l, (limb_dsts, (&prime, m)))| {
            let loaded = used
                .iter()
                .enumerate()
                .map(|(i, &u)| if u { load_limb(ctx, program, l, prime, m, n, i).map(Some) } else { Ok(None) })
                .collect::<Result<Vec<_>>>()?;
            let mut scratch = Vec::new();
            for (((e, format), dst), &galois) in program.outputs.iter().zip(limb_dsts).zip(&galois) {
                match format {
                    Format::Words => eval_output(ctx, m, e, galois, &loaded, dst)?,
                    Format::Packed => {
                        scratch.resize(n, 0);
                        eval_output(ctx, m, e, galois, &loaded, &mut scratch)?;
                        pack_limb(&scratch, m.bits(), dst);
                    }
                }
            }
            Ok::<(), Error>(())
        },
    )?;
    Ok(outs)
}

/// Loads operand `i` for output limb `l` (prime index `prime`): stored words borrowed, the
/// rest materialised (a scalar as one word).
fn load_limb<'p>(
    ctx: &RingContext,
    program: &Program<'p, CpuBackend>,
    l: usize,
    prime: usize,
    m: &Modulus,
    n: usize,
    i: usize,
) -> Result<Loaded<'p>> {
    let op = program.operands.get(i).ok_or_else(missing_operand)?;
    match op {
        Operand::Buffer { buf, basis, format, limb_offset, .. } => {
            let pos = basis.iter().position(|&b| b == prime).ok_or(Error::DimensionMismatch {
                what: "fused operand basis",
                expected: program.basis.len(),
                found: basis.len(),
            })?;
            let at = limb_offset + pos;
            match format {
                Format::Words => buf.get(at * n..(at + 1) * n).map(|v| Loaded::Limb(Cow::Borrowed(v))).ok_or(
                    Error::DimensionMismatch { what: "fused operand", expected: basis.len() * n, found: buf.len() },
                ),
                Format::Packed => {
                    let (layout, _) = packed_layout(ctx, basis)?;
                    let &(start, words) = layout.get(pos).ok_or(Error::SizeOverflow { what: "packed layout" })?;
                    let src = buf.get(start..start + words).ok_or(Error::DimensionMismatch {
                        what: "fused operand",
                        expected: start + words,
                        found: buf.len(),
                    })?;
                    let mut v = vec![0u32; n];
                    unpack_limb(src, ctx.modulus(prime)?.bits(), &mut v)?;
                    if let Some(index) = v.iter().position(|&x| x >= m.value()) {
                        return Err(Error::ResidueOutOfRange { limb: pos, index });
                    }
                    Ok(Loaded::Limb(v.into()))
                }
            }
        }
        Operand::Uniform { seed, purpose, index } => {
            let mut v = vec![0u32; n];
            crate::math::sampling::uniform_limb(seed, *purpose, *index, m, &mut v)?;
            Ok(Loaded::Limb(v.into()))
        }
        Operand::Scalar(s) => {
            let w = *s.get(l).ok_or(Error::DimensionMismatch {
                what: "fused scalars",
                expected: program.basis.len(),
                found: s.len(),
            })?;
            Ok(Loaded::Const(w))
        }
    }
}

/// One output limb of `e` into `out` (`N` residues): [`CHUNK`] residues at a time, or a whole
/// limb per node when `e` has a Galois node (`galois`).
fn eval_output(
    ctx: &RingContext,
    m: &Modulus,
    e: &Expr,
    galois: bool,
    loaded: &[Option<Loaded<'_>>],
    out: &mut [u32],
) -> Result<()> {
    if galois {
        let v = eval_limb(ctx, m, out.len(), e, loaded)?;
        let v = v.get(..out.len()).ok_or(Error::DimensionMismatch {
            what: "fused output",
            expected: out.len(),
            found: v.len(),
        })?;
        out.copy_from_slice(v);
        return Ok(());
    }
    let mut pool = Vec::new();
    for (c, dst) in out.chunks_mut(CHUNK).enumerate() {
        eval_into(m, c * CHUNK, e, loaded, dst, &mut pool)?;
    }
    Ok(())
}

/// Writes residues `start .. start + dst.len()` of `e` into `dst`; `pool` holds spare chunk
/// buffers for the intermediates.
fn eval_into(
    m: &Modulus,
    start: usize,
    e: &Expr,
    loaded: &[Option<Loaded<'_>>],
    dst: &mut [u32],
    pool: &mut Vec<Vec<u32>>,
) -> Result<()> {
    let len = dst.len();
    // A scratch chunk from the pool, returned after use.
    let take = |pool: &mut Vec<Vec<u32>>| {
        let mut t = pool.pop().unwrap_or_default();
        t.resize(len, 0);
        t
    };
    let mut binary = |a: &Expr, b: &Expr, dst: &mut [u32], f: &dyn Fn(&mut [u32], &[u32])| -> Result<()> {
        eval_into(m, start, a, loaded, dst, pool)?;
        let mut t = take(pool);
        eval_into(m, start, b, loaded, &mut t, pool)?;
        f(dst, &t);
        pool.push(t);
        Ok(())
    };
    match e {
        Expr::Load(i) => match loaded.get(*i) {
            Some(Some(Loaded::Limb(v))) => dst.copy_from_slice(v.get(start..start + len).ok_or_else(|| {
                Error::DimensionMismatch { what: "fused operand", expected: start + len, found: v.len() }
            })?),
            Some(Some(Loaded::Const(w))) => dst.fill(*w),
            _ => return Err(missing_operand()),
        },
        // One call per chunk through `f`; the element loops inside are monomorphic.
        Expr::Add(a, b) => binary(a, b, dst, &|d, t| d.iter_mut().zip(t).for_each(|(x, &y)| *x = m.add(*x, y)))?,
        Expr::Sub(a, b) => binary(a, b, dst, &|d, t| d.iter_mut().zip(t).for_each(|(x, &y)| *x = m.sub(*x, y)))?,
        Expr::Mul(a, b) => binary(a, b, dst, &|d, t| d.iter_mut().zip(t).for_each(|(x, &y)| *x = m.mul(*x, y)))?,
        Expr::Neg(a) => {
            eval_into(m, start, a, loaded, dst, pool)?;
            dst.iter_mut().for_each(|x| *x = m.neg(*x));
        }
        Expr::Sum(terms) => {
            dst.fill(0);
            let mut t = take(pool);
            for term in terms {
                eval_into(m, start, term, loaded, &mut t, pool)?;
                dst.iter_mut().zip(&t).for_each(|(x, &y)| *x = m.add(*x, y));
            }
            pool.push(t);
        }
        Expr::Galois { .. } => {
            return Err(Error::InvalidField {
                field: "fused expression",
                reason: "a Galois node cannot be evaluated chunk by chunk",
            })
        }
    }
    Ok(())
}

/// One output limb of `e` a whole limb per node (a load is borrowed, every other node is a
/// new limb): the evaluation of expressions with Galois nodes.
fn eval_limb<'v>(
    ctx: &RingContext,
    m: &Modulus,
    n: usize,
    e: &Expr,
    loaded: &'v [Option<Loaded<'_>>],
) -> Result<Cow<'v, [u32]>> {
    let rec = |e: &Expr| eval_limb(ctx, m, n, e, loaded);
    fn zip<'v>(a: &[u32], b: &[u32], f: impl Fn(u32, u32) -> u32) -> Cow<'v, [u32]> {
        Cow::Owned(a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect())
    }
    Ok(match e {
        Expr::Load(i) => match loaded.get(*i) {
            Some(Some(Loaded::Limb(v))) => Cow::Borrowed(&**v),
            Some(Some(Loaded::Const(w))) => Cow::Owned(vec![*w; n]),
            _ => return Err(missing_operand()),
        },
        Expr::Add(a, b) => zip(&rec(a)?, &rec(b)?, |x, y| m.add(x, y)),
        Expr::Sub(a, b) => zip(&rec(a)?, &rec(b)?, |x, y| m.sub(x, y)),
        Expr::Mul(a, b) => zip(&rec(a)?, &rec(b)?, |x, y| m.mul(x, y)),
        Expr::Neg(a) => Cow::Owned(rec(a)?.iter().map(|&x| m.neg(x)).collect()),
        Expr::Sum(terms) => {
            let mut acc = vec![0u32; n];
            for t in terms {
                acc.iter_mut().zip(rec(t)?.iter()).for_each(|(a, &x)| *a = m.add(*a, x));
            }
            Cow::Owned(acc)
        }
        Expr::Galois { g, expr } => {
            let perm = ctx.galois_permutation(*g)?;
            let v = rec(expr)?;
            Cow::Owned(
                perm.iter()
                    .map(|&p| {
                        v.get(p as usize).copied().ok_or(Error::DimensionMismatch {
                            what: "Galois permutation index",
                            expected: v.len(),
                            found: p as usize,
                        })
                    })
                    .collect::<Result<_>>()?,
            )
        }
    })
}
