//! ModRaise, the first step of CKKS bootstrapping.
//!
//! A ciphertext at a low level `l` (basis `q_0..q_l`, `Q_0` their product) decrypts to
//! `c_0 + c_1 s = m mod Q_0`. Reading the centred representatives of `c_0` and `c_1` mod `Q_0`
//! as integers and reducing them mod every prime of the top basis gives a top-level ciphertext
//! that decrypts to `m + Q_0 I` over the whole chain, for a small integer polynomial `I` (see
//! [`super::evalmod`] for its distribution and [`super::evalmod::failure_probability`]); the
//! scale is kept, so the slots then hold `(m + Q_0 I) / scale`.
//!
//! The per-coefficient CRT lift runs on the host: both polynomials are brought to the
//! coefficient domain on the backend, downloaded, lifted (an exact `u128` CRT while `Q_0 < 2^127`,
//! big integers beyond), uploaded and transformed back. No backend kernel is involved beyond
//! the NTTs, so the CPU and GPU backends give the same words.

use num_traits::ToPrimitive;

use super::{Ciphertext, Ckks};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::rns::{for_each_coefficient, RnsBasis};
use crate::poly::{Coeff, Eval, RnsPoly};
use crate::rlwe::CiphertextCore;

impl<B: Backend> Ckks<B> {
    /// The ciphertext lifted from its level to the top level, with `Q_0` the product of the
    /// primes of its basis (see the module docs). Errors: [`Error::CiphertextDegree`] for a
    /// degree-2 ciphertext, [`Error::LevelOutOfRange`] if it is already at the top level, and
    /// the errors of the transfers.
    pub fn mod_raise(&self, ct: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let (c0, c1) = ct.core.degree_one()?;
        let top = self.max_level();
        if ct.level() >= top {
            return Err(Error::LevelOutOfRange { level: ct.level() + 1, max: top });
        }
        let lifter = Lifter::new(self, ct.level(), top)?;
        let polys = vec![lifter.lift(c0)?, lifter.lift(c1)?];
        self.backend().flush()?;
        Ok(ct.with(CiphertextCore::from_parts(polys, None, ct.core.param_id())?, ct.scale))
    }
}

/// The CRT lift from `q_0..q_low` to `q_0..q_top`.
struct Lifter<'a, B: Backend> {
    ckks: &'a Ckks<B>,
    low: RnsBasis,
    top: RnsBasis,
    top_basis: crate::ring::Basis,
    /// `Q_0` and `Q_0 / q_i` when `Q_0 < 2^127`.
    small: Option<(u128, Vec<u128>)>,
}

impl<'a, B: Backend> Lifter<'a, B> {
    fn new(ckks: &'a Ckks<B>, low: usize, top: usize) -> Result<Self> {
        let ctx = ckks.backend.context();
        let low = RnsBasis::new(&ctx.moduli_of(&ctx.q_basis(low)?)?)?;
        let top_basis = ctx.q_basis(top)?;
        let top = RnsBasis::new(&ctx.moduli_of(&top_basis)?)?;
        let small = match low.product().to_u128() {
            Some(q0) if q0 < (1u128 << 127) => {
                Some((q0, low.moduli().iter().map(|m| q0 / u128::from(m.value())).collect()))
            }
            _ => None,
        };
        Ok(Self { ckks, low, top, top_basis, small })
    }

    /// The centred value of one coefficient's residues mod `Q_0`, reduced mod every top prime.
    fn lift_column(&self, column: &[u32], out: &mut Vec<u32>) -> Result<()> {
        if let Some((q0, qhat)) = &self.small {
            let mut acc: u128 = 0;
            for (((m, &x), &inv), &h) in self.low.moduli().iter().zip(column).zip(self.low.qhat_inv()).zip(qhat) {
                if x >= m.value() {
                    return Err(Error::ResidueOutOfRange { limb: 0, index: 0 });
                }
                // Each term is below Q_0 < 2^127, so the sum of two fits.
                acc += u128::from(m.mul(x, inv)) * h;
                if acc >= *q0 {
                    acc -= q0;
                }
            }
            let centred: i128 = if acc > q0 - acc { -((q0 - acc) as i128) } else { acc as i128 };
            out.extend(self.top.moduli().iter().map(|m| centred.rem_euclid(i128::from(m.value())) as u32));
        } else {
            let centred = self.low.reconstruct_centered(column)?;
            out.extend(self.top.decompose_signed(&centred));
        }
        Ok(())
    }

    fn lift(&self, poly: &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>> {
        let be = self.ckks.backend();
        let n = be.context().n();
        let host = poly.duplicate(be)?.into_coeff(be)?.to_host(be)?;
        // Coefficient-major first (one column per coefficient), then transposed to limb-major.
        let limbs = self.top.len();
        let mut columns = Vec::with_capacity(limbs * n);
        for_each_coefficient(&host, self.low.len(), n, |column| self.lift_column(column, &mut columns))?;
        let mut residues = vec![0u32; limbs * n];
        for (j, column) in columns.chunks_exact(limbs).enumerate() {
            for (limb, &r) in column.iter().enumerate() {
                if let Some(slot) = residues.get_mut(limb * n + j) {
                    *slot = r;
                }
            }
        }
        RnsPoly::<B, Coeff>::from_host(be, &residues, self.top_basis.clone())?.into_eval(be)
    }
}
