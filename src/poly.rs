//! RNS polynomials on a backend.
//!
//! An [`RnsPoly`] stores its residues in a backend buffer, limb-major (`[limb][N]` u32, every
//! residue in `[0, q)`), over a [`Basis`] of the [`crate::ring::RingContext`], and carries its
//! representation in its type: [`Coeff`] (coefficients) or [`Eval`] (NTT domain, bit-reversed
//! order; see [`crate::math::ntt`]). Kernels that only make sense in one domain take that
//! domain's type, so a product of coefficient vectors does not compile.

use std::marker::PhantomData;
use std::sync::Arc;

use rayon::prelude::*;

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::ring::{positions_in, Basis};

/// Marker trait of polynomial representations.
pub trait Representation: Send + Sync + 'static {
    /// Name used in errors and the wire format.
    const NAME: &'static str;
    /// Tag of the wire format.
    const TAG: u8;
}

/// Coefficient representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coeff;
/// Evaluation (NTT) representation, bit-reversed slot order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Eval;

impl Representation for Coeff {
    const NAME: &'static str = "Coeff";
    const TAG: u8 = 0;
}
impl Representation for Eval {
    const NAME: &'static str = "Eval";
    const TAG: u8 = 1;
}

/// An RNS polynomial on a backend, in representation `R`.
pub struct RnsPoly<B: Backend, R: Representation> {
    data: B::Buffer,
    basis: Basis,
    _rep: PhantomData<R>,
}

impl<B: Backend, R: Representation> std::fmt::Debug for RnsPoly<B, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Residues are never printed: they may be secret.
        f.debug_struct("RnsPoly").field("rep", &R::NAME).field("basis", &self.basis).finish_non_exhaustive()
    }
}

impl<B: Backend, R: Representation> RnsPoly<B, R> {
    /// Wraps a buffer; checks its length against the basis.
    pub fn from_buffer(backend: &B, data: B::Buffer, basis: Basis) -> Result<Self> {
        let words = basis.len() * backend.context().n();
        let len = backend.len(&data);
        if len != words {
            return Err(Error::DimensionMismatch { what: "polynomial words", expected: words, found: len });
        }
        Ok(Self { data, basis, _rep: PhantomData })
    }

    /// Uploads host residues (limb-major, each `< q` of its limb; checked).
    pub fn from_host(backend: &B, residues: &[u32], basis: Basis) -> Result<Self> {
        let ctx = backend.context();
        let n = ctx.n();
        if residues.len() != basis.len() * n {
            return Err(Error::DimensionMismatch {
                what: "polynomial words",
                expected: basis.len() * n,
                found: residues.len(),
            });
        }
        for (limb, (chunk, &idx)) in residues.chunks_exact(n).zip(basis.iter()).enumerate() {
            let q = ctx.modulus(idx)?.value();
            if let Some(index) = chunk.iter().position(|&x| x >= q) {
                return Err(Error::ResidueOutOfRange { limb, index });
            }
        }
        let data = backend.upload(residues)?;
        Ok(Self { data, basis, _rep: PhantomData })
    }

    /// The zero polynomial.
    pub fn zero(backend: &B, basis: Basis) -> Result<Self> {
        let data = backend.zeros(basis.len() * backend.context().n())?;
        Ok(Self { data, basis, _rep: PhantomData })
    }

    /// Downloads the residues (limb-major).
    pub fn to_host(&self, backend: &B) -> Result<Vec<u32>> {
        backend.download(&self.data)
    }

    /// The basis.
    #[must_use]
    pub fn basis(&self) -> &Basis {
        &self.basis
    }

    /// Number of limbs.
    #[must_use]
    pub fn limb_count(&self) -> usize {
        self.basis.len()
    }

    /// The backend buffer.
    #[must_use]
    pub fn buffer(&self) -> &B::Buffer {
        &self.data
    }

    /// The backend buffer, mutably.
    pub fn buffer_mut(&mut self) -> &mut B::Buffer {
        &mut self.data
    }

    /// Splits into buffer and basis.
    #[must_use]
    pub fn into_parts(self) -> (B::Buffer, Basis) {
        (self.data, self.basis)
    }

    /// A deep copy.
    pub fn duplicate(&self, backend: &B) -> Result<Self> {
        Ok(Self { data: backend.duplicate(&self.data)?, basis: Arc::clone(&self.basis), _rep: PhantomData })
    }

    /// Keeps the first `count` limbs (a level drop without arithmetic: the view of a lower
    /// level). Cheap: the backend truncates in place.
    pub fn keep_limbs(self, backend: &B, count: usize) -> Result<Self> {
        if count == 0 || count > self.basis.len() {
            return Err(Error::DimensionMismatch { what: "limbs kept", expected: self.basis.len(), found: count });
        }
        let basis: Basis = self.basis.iter().take(count).copied().collect();
        let data = backend.truncate(self.data, count * backend.context().n())?;
        Ok(Self { data, basis, _rep: PhantomData })
    }

    /// Copies the limbs of `sub` (each must be in this polynomial's basis) into a new polynomial.
    pub fn select(&self, backend: &B, sub: &[usize]) -> Result<Self> {
        let positions = positions_in(&self.basis, sub)?;
        let data = backend.gather_limbs(&self.data, &positions)?;
        Ok(Self { data, basis: sub.into(), _rep: PhantomData })
    }

    fn check_same_basis(&self, other: &Self) -> Result<()> {
        if self.basis.len() != other.basis.len() {
            return Err(Error::LevelMismatch { left: self.basis.len(), right: other.basis.len() });
        }
        if self.basis != other.basis {
            return Err(Error::DimensionMismatch {
                what: "polynomial bases differ",
                expected: self.basis.len(),
                found: other.basis.len(),
            });
        }
        Ok(())
    }

    /// `self + other`.
    pub fn add(&self, backend: &B, other: &Self) -> Result<Self> {
        self.check_same_basis(other)?;
        Ok(Self {
            data: backend.add(&self.data, &other.data, &self.basis)?,
            basis: Arc::clone(&self.basis),
            _rep: PhantomData,
        })
    }

    /// `self - other`.
    pub fn sub(&self, backend: &B, other: &Self) -> Result<Self> {
        self.check_same_basis(other)?;
        Ok(Self {
            data: backend.sub(&self.data, &other.data, &self.basis)?,
            basis: Arc::clone(&self.basis),
            _rep: PhantomData,
        })
    }

    /// `-self`.
    pub fn neg(&self, backend: &B) -> Result<Self> {
        Ok(Self { data: backend.neg(&self.data, &self.basis)?, basis: Arc::clone(&self.basis), _rep: PhantomData })
    }

    /// Multiplies limb `i` by the constant `scalars[i]` (each `< q_i`).
    pub fn mul_scalar(&self, backend: &B, scalars: &[u32]) -> Result<Self> {
        Ok(Self {
            data: backend.mul_scalar(&self.data, scalars, &self.basis)?,
            basis: Arc::clone(&self.basis),
            _rep: PhantomData,
        })
    }

    /// Multiplies by a small signed integer constant (reduced into every limb).
    pub fn mul_int(&self, backend: &B, k: i64) -> Result<Self> {
        let ctx = backend.context();
        let scalars = self.basis.iter().map(|&i| Ok(ctx.modulus(i)?.reduce_i64(k))).collect::<Result<Vec<_>>>()?;
        self.mul_scalar(backend, &scalars)
    }
}

impl<B: Backend> RnsPoly<B, Coeff> {
    /// Forward NTT of every limb.
    pub fn into_eval(self, backend: &B) -> Result<RnsPoly<B, Eval>> {
        let mut data = self.data;
        backend.ntt_forward(&mut data, &self.basis)?;
        Ok(RnsPoly { data, basis: self.basis, _rep: PhantomData })
    }

    /// Builds a polynomial from small signed coefficients (reduced into every limb).
    pub fn from_signed(backend: &B, coeffs: &[i64], basis: Basis) -> Result<Self> {
        let ctx = backend.context();
        let n = ctx.n();
        if coeffs.len() != n {
            return Err(Error::DimensionMismatch { what: "coefficients", expected: n, found: coeffs.len() });
        }
        let moduli = basis.iter().map(|&i| ctx.modulus(i)).collect::<Result<Vec<_>>>()?;
        // One limb per task: the reductions of a plaintext at N = 2^16 and 48 primes are about
        // three million, on the host before the upload.
        let mut host = vec![0u32; basis.len() * n];
        host.par_chunks_mut(n).zip(moduli.par_iter()).for_each(|(row, m)| {
            for (r, &c) in row.iter_mut().zip(coeffs) {
                *r = m.reduce_i64(c);
            }
        });
        let data = backend.upload(&host)?;
        Ok(Self { data, basis, _rep: PhantomData })
    }

    /// Fast base conversion of these limbs to `to` (see [`crate::math::rns::BaseConverter`]).
    pub fn base_convert(&self, backend: &B, to: &[usize]) -> Result<Self> {
        let data = backend.base_convert(&self.data, &self.basis, &[(&self.basis, to)])?;
        Ok(Self { data, basis: to.into(), _rep: PhantomData })
    }
}

impl<B: Backend> RnsPoly<B, Eval> {
    /// Inverse NTT of every limb.
    pub fn into_coeff(self, backend: &B) -> Result<RnsPoly<B, Coeff>> {
        let mut data = self.data;
        backend.ntt_inverse(&mut data, &self.basis)?;
        Ok(RnsPoly { data, basis: self.basis, _rep: PhantomData })
    }

    /// Point-wise product.
    pub fn mul(&self, backend: &B, other: &Self) -> Result<Self> {
        self.check_same_basis(other)?;
        Ok(Self {
            data: backend.mul(&self.data, &other.data, &self.basis)?,
            basis: Arc::clone(&self.basis),
            _rep: PhantomData,
        })
    }

    /// `self += a * b` point-wise.
    pub fn mul_add_assign(&mut self, backend: &B, a: &Self, b: &Self) -> Result<()> {
        self.check_same_basis(a)?;
        self.check_same_basis(b)?;
        backend.mul_add(&mut self.data, &a.data, &b.data, &self.basis)
    }

    /// The tensor product of `(a_0, a_1)` and `(b_0, b_1)`, all over one basis:
    /// `[a_0 b_0, a_0 b_1 + a_1 b_0, a_1 b_1]` ([`Backend::tensor`]: one kernel).
    ///
    /// Errors: inputs of different bases ([`Error::LevelMismatch`], [`Error::DimensionMismatch`]).
    pub fn tensor(backend: &B, a: [&Self; 2], b: [&Self; 2]) -> Result<[Self; 3]> {
        for other in [a[1], b[0], b[1]] {
            a[0].check_same_basis(other)?;
        }
        let out = backend.tensor([&a[0].data, &a[1].data], [&b[0].data, &b[1].data], &a[0].basis)?;
        Ok(out.map(|data| Self { data, basis: Arc::clone(&a[0].basis), _rep: PhantomData }))
    }

    /// The Galois automorphism `X -> X^g` (g odd, `< 2N`), applied in the Eval domain.
    pub fn automorphism(&self, backend: &B, g: usize) -> Result<Self> {
        Ok(Self {
            data: backend.automorphism(&self.data, g, &self.basis)?,
            basis: Arc::clone(&self.basis),
            _rep: PhantomData,
        })
    }

    /// Uniform residues from a ChaCha20 stream, sampled directly in the Eval domain.
    pub fn uniform(
        backend: &B,
        seed: &crate::math::sampling::Seed,
        purpose: crate::math::sampling::Purpose,
        index: u32,
        basis: Basis,
    ) -> Result<Self> {
        let data = backend.uniform(seed, purpose, index, &basis)?;
        Ok(Self { data, basis, _rep: PhantomData })
    }
}
