//! The CPU reference backend: plain loops over limbs (rayon across limbs), the specification
//! every other backend must reproduce bit for bit.

#![expect(clippy::indexing_slicing, reason = "kernels index slices whose lengths are checked on entry")]

use std::sync::Arc;

use rayon::prelude::*;

use super::Backend;
use crate::error::{Error, Result};
use crate::math::ntt::NttTable;
use crate::math::sampling::{uniform_limb, Purpose, Seed};
use crate::math::zq::Modulus;
use crate::ring::{positions_in, RingContext};

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

    /// Applies `f(modulus, a_limb, b_limb, out_limb)` limb by limb in parallel.
    fn zip2(
        &self,
        a: &[u32],
        b: &[u32],
        basis: &[usize],
        f: impl Fn(&Modulus, u32, u32) -> u32 + Sync,
    ) -> Result<Vec<u32>> {
        self.check("operand a", a, basis.len())?;
        self.check("operand b", b, basis.len())?;
        let moduli = self.moduli(basis)?;
        let n = self.ctx.n();
        let mut out = vec![0u32; a.len()];
        out.par_chunks_exact_mut(n)
            .zip(a.par_chunks_exact(n).zip(b.par_chunks_exact(n)))
            .zip(moduli.par_iter())
            .for_each(|((o, (x, y)), m)| {
                for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                    *o = f(m, x, y);
                }
            });
        Ok(out)
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

    fn merge_limbs(
        &self,
        first: (&Vec<u32>, &[usize]),
        second: (&Vec<u32>, &[usize]),
        limbs: usize,
    ) -> Result<Vec<u32>> {
        let n = self.ctx.n();
        let mut out = vec![0u32; limbs * n];
        let mut seen = vec![false; limbs];
        for (src, positions) in [first, second] {
            self.check("merge_limbs input", src, positions.len())?;
            for (k, &p) in positions.iter().enumerate() {
                if p >= limbs || seen[p] {
                    return Err(Error::DimensionMismatch { what: "merge_limbs position", expected: limbs, found: p });
                }
                seen[p] = true;
                out[p * n..(p + 1) * n].copy_from_slice(&src[k * n..(k + 1) * n]);
            }
        }
        if seen.iter().any(|s| !s) {
            return Err(Error::DimensionMismatch { what: "merge_limbs coverage", expected: limbs, found: limbs });
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
        self.zip2(a, b, basis, |m, x, y| m.add(x, y))
    }

    fn sub(&self, a: &Vec<u32>, b: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2(a, b, basis, |m, x, y| m.sub(x, y))
    }

    fn neg(&self, a: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2(a, a, basis, |m, x, _| m.neg(x))
    }

    fn mul(&self, a: &Vec<u32>, b: &Vec<u32>, basis: &[usize]) -> Result<Vec<u32>> {
        self.zip2(a, b, basis, |m, x, y| m.mul(x, y))
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
            .for_each(|((o, (x, y)), m)| {
                for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                    *o = m.add(*o, m.mul(x, y));
                }
            });
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

    fn base_convert(&self, a: &Vec<u32>, from: &[usize], to: &[usize]) -> Result<Vec<u32>> {
        self.check("base_convert input", a, from.len())?;
        let conv = self.ctx.converter(from, to)?;
        let n = self.ctx.n();
        let mut out = vec![0u32; to.len() * n];
        conv.convert(a, n, &mut out)?;
        Ok(out)
    }

    fn scale_down(&self, a: &Vec<u32>, keep: &[usize], drop: &[usize], t: Option<u32>) -> Result<Vec<u32>> {
        self.check("scale_down input", a, keep.len() + drop.len())?;
        let sd = self.ctx.scale_down(keep, drop, t)?;
        let n = self.ctx.n();
        let (keep_part, drop_part) = a.split_at(keep.len() * n);
        let mut out = vec![0u32; keep.len() * n];
        sd.apply(keep_part, drop_part, n, &mut out)?;
        Ok(out)
    }

    fn key_switch_inner_product(
        &self,
        digits: &[&Vec<u32>],
        basis: &[usize],
        key: &[(&Vec<u32>, &Vec<u32>)],
        key_basis: &[usize],
    ) -> Result<(Vec<u32>, Vec<u32>)> {
        if digits.len() > key.len() {
            return Err(Error::KeyDimensions { reason: "fewer key digits than ciphertext digits" });
        }
        let n = self.ctx.n();
        for d in digits {
            self.check("key-switch digit", d, basis.len())?;
        }
        for (kb, ka) in key {
            self.check("key polynomial", kb, key_basis.len())?;
            self.check("key polynomial", ka, key_basis.len())?;
        }
        let positions = positions_in(key_basis, basis)?;
        let moduli = self.moduli(basis)?;
        let mut out0 = vec![0u32; basis.len() * n];
        let mut out1 = vec![0u32; basis.len() * n];
        out0.par_chunks_exact_mut(n).zip(out1.par_chunks_exact_mut(n)).enumerate().for_each(|(limb, (o0, o1))| {
            let m = &moduli[limb];
            let kp = positions[limb];
            for (d, (kb, ka)) in digits.iter().zip(key) {
                let d = &d[limb * n..(limb + 1) * n];
                let kb = &kb[kp * n..(kp + 1) * n];
                let ka = &ka[kp * n..(kp + 1) * n];
                for i in 0..n {
                    o0[i] = m.add(o0[i], m.mul(d[i], kb[i]));
                    o1[i] = m.add(o1[i], m.mul(d[i], ka[i]));
                }
            }
        });
        Ok((out0, out1))
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
