//! The CPU reference backend: plain loops over limbs (rayon across limbs), the specification
//! every other backend must reproduce bit for bit.

#![expect(clippy::indexing_slicing, reason = "kernels index slices whose lengths are checked on entry")]

use std::sync::Arc;

use rayon::prelude::*;

use super::fused::unpack_limb;
use super::key_switching::{convert_positions, DigitSource};
use super::{Backend, ConvertPart, InnerProductInput, InnerProductSums};
use crate::error::{Error, Result};
use crate::math::elementwise;
use crate::math::ntt::NttTable;
use crate::math::rounding::{Rounding, WideReducer, LAZY_TERMS};
use crate::math::sampling::uniform_limb;
use crate::math::sampling::{Purpose, Seed};
use crate::math::zq::Modulus;
use crate::ring::RingContext;

/// Coefficients the CPU inner product sums together (its `u64` sums stay in cache).
const INNER_PRODUCT_BLOCK: usize = 2048;

/// The CPU reference backend.
#[derive(Debug, Clone)]
pub struct CpuBackend {
    ctx: Arc<RingContext>,
}

impl CpuBackend {
    /// A backend computing in `ctx`.
    #[must_use]
    pub fn new(ctx: Arc<RingContext>) -> Self {
        Self { ctx }
    }

    fn check(&self, what: &'static str, buf: &[u32], limbs: usize) -> Result<()> {
        let want = limbs * self.ctx.n();
        if buf.len() != want {
            return Err(Error::DimensionMismatch { what, expected: want, found: buf.len() });
        }
        Ok(())
    }

    fn moduli(&self, basis: &[usize]) -> Result<Vec<Modulus>> {
        self.ctx.moduli_of(basis)
    }

    /// Applies `f(modulus, out_limb, a_limb, b_limb)` limb by limb in parallel: a limb-level
    /// kernel of [`crate::math::elementwise`].
    fn zip2_limbs(
        &self,
        a: &[u32],
        b: &[u32],
        basis: &[usize],
        f: impl Fn(&Modulus, &mut [u32], &[u32], &[u32]) + Sync,
    ) -> Result<Vec<u32>> {
        self.check("operand a", a, basis.len())?;
        self.check("operand b", b, basis.len())?;
        let moduli = self.moduli(basis)?;
        let n = self.ctx.n();
        let mut out = vec![0u32; a.len()];
        out.par_chunks_exact_mut(n)
            .zip(a.par_chunks_exact(n).zip(b.par_chunks_exact(n)))
            .zip(moduli.par_iter())
            .for_each(|((o, (x, y)), m)| f(m, o, x, y));
        Ok(out)
    }

    /// Applies `f(table, limb)` to every limb of `buf` with the NTT table of its prime: in
    /// parallel across limbs, or on this thread when there is one limb or one rayon thread
    /// (handing a single transform to the pool costs more than a short transform).
    fn ntt_limbs(
        &self,
        buf: &mut [u32],
        basis: &[usize],
        f: impl Fn(&NttTable, &mut [u32]) -> Result<()> + Sync,
    ) -> Result<()> {
        let n = self.ctx.n();
        let one = |(limb, &i): (&mut [u32], &usize)| f(self.ctx.ntt_table(i)?, limb);
        if basis.len() <= 1 || rayon::current_num_threads() <= 1 {
            buf.chunks_exact_mut(n).zip(basis).try_for_each(one)
        } else {
            buf.par_chunks_exact_mut(n).zip(basis.par_iter()).try_for_each(one)
        }
    }
}

impl Backend for CpuBackend {
    type Buffer = Vec<u32>;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn context(&self) -> &Arc<RingContext> {
        &self.ctx
    }

    fn upload(&self, words: &[u32]) -> Result<Vec<u32>> {
        Ok(words.to_vec())
    }

    fn download(&self, buf: &Vec<u32>) -> Result<Vec<u32>> {
        Ok(buf.clone())
    }

    fn zeros(&self, words: usize) -> Result<Vec<u32>> {
        Ok(vec![0; words])
    }

    fn len(&self, buf: &Vec<u32>) -> usize {
        buf.len()
    }

    fn duplicate(&self, buf: &Vec<u32>) -> Result<Vec<u32>> {
        Ok(buf.clone())
    }

    fn truncate(&self, mut buf: Vec<u32>, words: usize) -> Result<Vec<u32>> {
        if words > buf.len() {
            return Err(Error::DimensionMismatch { what: "truncate", expected: buf.len(), found: words });
        }
        buf.truncate(words);
        Ok(buf)
    }

    fn gather_limbs(&self, buf: &Vec<u32>, positions: &[usize]) -> Result<Vec<u32>> {
        let n = self.ctx.n();
        let limbs = buf.len() / n;
        let mut out = Vec::with_capacity(positions.len() * n);
        for &p in positions {
            if p >= limbs {
                return Err(Error::DimensionMismatch { what: "limb position", expected: limbs, found: p });
            }
            out.extend_from_slice(&buf[p * n..(p + 1) * n]);
        }
        Ok(out)
    }

    fn ntt_forward(&self, buf: &mut Vec<u32>, basis: &[usize]) -> Result<()> {
        self.check("ntt_forward input", buf, basis.len())?;
        self.ntt_limbs(buf, basis, |t, limb| t.forward(limb))
    }

    fn ntt_inverse(&self, buf: &mut Vec<u32>, basis: &[usize]) -> Result<()> {
        self.check("ntt_inverse input", buf, basis.len())?;
        self.ntt_limbs(buf, basis, |t, limb| t.inverse(limb))
    }

    fn add(&self, a: &Vec<u32>, b: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2_limbs(a, b, basis, elementwise::add)
    }

    fn sub(&self, a: &Vec<u32>, b: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2_limbs(a, b, basis, elementwise::sub)
    }

    fn neg(&self, a: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2_limbs(a, a, basis, |m, o, x, _| {
            for (o, &x) in o.iter_mut().zip(x) {
                *o = m.neg(x);
            }
        })
    }

    fn mul(&self, a: &Vec<u32>, b: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2_limbs(a, b, basis, elementwise::mul)
    }

    fn mul_add(&self, acc: &mut Vec<u32>, a: &Vec<u32>, b: &Vec<u32>, basis: &[usize]) -> Result<()> {
        self.check("accumulator", acc, basis.len())?;
        self.check("operand a", a, basis.len())?;
        self.check("operand b", b, basis.len())?;
        let moduli = self.moduli(basis)?;
        let n = self.ctx.n();
        acc.par_chunks_exact_mut(n)
            .zip(a.par_chunks_exact(n).zip(b.par_chunks_exact(n)))
            .zip(moduli.par_iter())
            .for_each(|((o, (x, y)), m)| elementwise::mul_add(m, o, x, y));
        Ok(())
    }

    fn mul_scalar(&self, a: &Vec<u32>, scalars: &[u32], basis: &[usize]) -> Result<Vec<u32>> {
        self.check("operand", a, basis.len())?;
        if scalars.len() != basis.len() {
            return Err(Error::DimensionMismatch { what: "scalars", expected: basis.len(), found: scalars.len() });
        }
        let moduli = self.moduli(basis)?;
        for (limb, (s, m)) in scalars.iter().zip(&moduli).enumerate() {
            if *s >= m.value() {
                return Err(Error::ResidueOutOfRange { limb, index: 0 });
            }
        }
        let n = self.ctx.n();
        let mut out = vec![0u32; a.len()];
        out.par_chunks_exact_mut(n).zip(a.par_chunks_exact(n)).zip(moduli.par_iter().zip(scalars.par_iter())).for_each(
            |((o, x), (m, &w))| {
                let ws = m.shoup(w);
                for (o, &x) in o.iter_mut().zip(x) {
                    *o = m.mul_shoup(x, w, ws);
                }
            },
        );
        Ok(out)
    }

    fn automorphism(&self, a: &Vec<u32>, g: usize, basis: &[usize]) -> Result<Vec<u32>> {
        self.check("operand", a, basis.len())?;
        let perm = self.ctx.galois_permutation(g)?;
        let n = self.ctx.n();
        let mut out = vec![0u32; a.len()];
        out.par_chunks_exact_mut(n).zip(a.par_chunks_exact(n)).for_each(|(o, x)| {
            for (o, &p) in o.iter_mut().zip(perm.iter()) {
                *o = x[p as usize];
            }
        });
        Ok(out)
    }

    fn base_convert(&self, a: &Vec<u32>, basis: &[usize], parts: &[ConvertPart<'_>]) -> Result<Vec<u32>> {
        self.check("base_convert input", a, basis.len())?;
        let positions = convert_positions(basis, parts)?;
        let n = self.ctx.n();
        let convs = parts.iter().map(|(from, to)| self.ctx.converter(from, to)).collect::<Result<Vec<_>>>()?;
        let mut out = vec![0u32; parts.iter().map(|(_, to)| to.len()).sum::<usize>() * n];
        let mut slices = Vec::with_capacity(parts.len());
        let mut rest = out.as_mut_slice();
        for (_, to) in parts {
            let (head, tail) = rest.split_at_mut(to.len() * n);
            slices.push(head);
            rest = tail;
        }
        slices.into_par_iter().zip(convs.par_iter().zip(positions.par_iter())).try_for_each(|(o, (conv, pos))| {
            // The part's limbs in place when they are consecutive in `a`, else gathered.
            let first = pos.first().copied().unwrap_or(0);
            let consecutive = pos.iter().enumerate().all(|(k, &p)| p == first + k);
            if consecutive {
                conv.convert(&a[first * n..(first + pos.len()) * n], n, o)
            } else {
                let gathered: Vec<u32> = pos.iter().flat_map(|&p| a[p * n..(p + 1) * n].iter().copied()).collect();
                conv.convert(&gathered, n, o)
            }
        })?;
        Ok(out)
    }

    fn scale_down_correction(
        &self,
        dropped: &Vec<u32>,
        keep: &[usize],
        drop: &[usize],
        t: Option<u32>,
        rounding: Rounding,
    ) -> Result<Vec<u32>> {
        let rc = self.ctx.rounding_correction(keep, drop, t, rounding)?;
        let n = self.ctx.n();
        let per = drop.len() * n;
        if per == 0 || dropped.is_empty() || !dropped.len().is_multiple_of(per) {
            return Err(Error::DimensionMismatch { what: "dropped limbs", expected: per, found: dropped.len() });
        }
        let mut out = vec![0u32; dropped.len() / per * keep.len() * n];
        if keep.is_empty() {
            return Ok(out);
        }
        dropped
            .par_chunks_exact(per)
            .zip(out.par_chunks_exact_mut(keep.len() * n))
            .try_for_each(|(x, o)| rc.apply(x, n, o))?;
        Ok(out)
    }

    fn key_switch_inner_product(&self, input: &InnerProductInput<'_, Vec<u32>>) -> Result<InnerProductSums<Vec<u32>>> {
        let n = self.ctx.n();
        let layout = input.layout(Vec::len, &self.ctx)?;
        let moduli = self.moduli(&layout.primes)?;
        let lq = input.q_basis.len();
        let lp = input.p_basis.len();
        let (mut q0, mut q1) = (vec![0u32; lq * n], vec![0u32; lq * n]);
        let mut p = vec![0u32; 2 * lp * n];
        let (p0, p1) = p.split_at_mut(lp * n);
        // One task per output limb: its two output slices, modulus, key limb and digit sources.
        let outs = q0
            .chunks_exact_mut(n)
            .zip(q1.chunks_exact_mut(n))
            .chain(p0.chunks_exact_mut(n).zip(p1.chunks_exact_mut(n)));
        let tasks: Vec<_> = outs
            .zip(moduli.iter().zip(layout.key_positions.iter().zip(&layout.key_packed)))
            .zip(layout.sources.chunks_exact(layout.digits.max(1)))
            .collect();
        tasks.into_par_iter().try_for_each(|(((o0, o1), (m, (&kp, &(start, bits)))), sources)| {
            let red = WideReducer::new(*m);
            // Per digit: its residues, b_j and a_j at this limb (packed b_j unpacked and seeded
            // a_j generated once).
            let mut limbs = Vec::with_capacity(sources.len());
            for (src, k) in sources.iter().zip(input.key) {
                let d = match *src {
                    DigitSource::Input(l) => &input.c[l * n..(l + 1) * n],
                    DigitSource::Converted(l) => &input.converted[l * n..(l + 1) * n],
                };
                let a: std::borrow::Cow<'_, [u32]> = match k.a {
                    Some(a) => a[kp * n..(kp + 1) * n].into(),
                    None => {
                        let mut v = vec![0u32; n];
                        uniform_limb(input.seed, Purpose::KeySwitchA, k.index, m, &mut v)?;
                        v.into()
                    }
                };
                let b: std::borrow::Cow<'_, [u32]> = if k.b_packed {
                    let words = (n * bits as usize).div_ceil(32);
                    let src = k.b.get(start..start + words).ok_or(Error::DimensionMismatch {
                        what: "packed key limb",
                        expected: start + words,
                        found: k.b.len(),
                    })?;
                    let mut v = vec![0u32; n];
                    unpack_limb(src, bits, &mut v)?;
                    v.into()
                } else {
                    k.b[kp * n..(kp + 1) * n].into()
                };
                limbs.push((d, b, a));
            }
            // Blocks of coefficients, so the sums stay in cache.
            let block = INNER_PRODUCT_BLOCK.min(n);
            let (mut acc0, mut acc1) = (vec![0u64; block], vec![0u64; block]);
            for c0 in (0..n).step_by(block) {
                let range = c0..(c0 + block).min(n);
                let (acc0, acc1) = (&mut acc0[..range.len()], &mut acc1[..range.len()]);
                acc0.fill(0);
                acc1.fill(0);
                for (j, (d, kb, ka)) in limbs.iter().enumerate() {
                    let (d, kb, ka) = (&d[range.clone()], &kb[range.clone()], &ka[range.clone()]);
                    for ((((a0, a1), &x), &b), &a) in acc0.iter_mut().zip(acc1.iter_mut()).zip(d).zip(kb).zip(ka) {
                        *a0 += u64::from(x) * u64::from(b);
                        *a1 += u64::from(x) * u64::from(a);
                    }
                    if (j + 1) % LAZY_TERMS == 0 && j + 1 < limbs.len() {
                        for a in acc0.iter_mut().chain(acc1.iter_mut()) {
                            *a = u64::from(red.reduce(*a));
                        }
                    }
                }
                for ((o, a0), (p, a1)) in
                    o0[range.clone()].iter_mut().zip(acc0.iter()).zip(o1[range].iter_mut().zip(acc1.iter()))
                {
                    *o = red.reduce(*a0);
                    *p = red.reduce(*a1);
                }
            }
            Ok::<(), Error>(())
        })?;
        Ok(InnerProductSums { q0, q1, p })
    }

    fn uniform(&self, seed: &Seed, purpose: Purpose, index: u32, basis: &[usize]) -> Result<Vec<u32>> {
        let moduli = self.moduli(basis)?;
        let n = self.ctx.n();
        let mut out = vec![0u32; basis.len() * n];
        out.par_chunks_exact_mut(n)
            .zip(moduli.par_iter())
            .try_for_each(|(o, m)| uniform_limb(seed, purpose, index, m, o))?;
        Ok(out)
    }

    fn fused(&self, program: &super::fused::Program<'_, Self>) -> Result<Vec<Vec<u32>>> {
        program.validate(self)?;
        super::fused::evaluate_cpu(&self.ctx, program)
    }
}
