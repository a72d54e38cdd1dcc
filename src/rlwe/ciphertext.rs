//! The part of a ciphertext that BGV and CKKS share: its polynomials, the seed of an untouched
//! `c_1` and the parameter id, with the operations that only touch those.

use super::{EvaluationKeys, NoiseScale, PublicKey, SecretKey};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{Sampler, Seed};
use crate::poly::{Eval, RnsPoly};

/// Borrowed `(c_0, c_1)`.
type PolyRefs<'a, B> = (&'a RnsPoly<B, Eval>, &'a RnsPoly<B, Eval>);

/// The RLWE part of a BGV or CKKS ciphertext: `(c_0, c_1[, c_2])`, which decrypts under
/// `(1, s[, s^2])`. The schemes wrap it with their own bookkeeping (BGV: correction factor and
/// noise estimate; CKKS: scale and slot count).
///
/// # Layout
/// * `polys`: `c_0`, `c_1` and, between a tensor product and its relinearisation, `c_2`, every
///   one in the Eval domain over the basis `q_0..q_level`;
/// * `level`: the index of the last prime of that basis (its limb count minus one);
/// * `seed`: while `c_1` is still the untouched output `uniform(seed, CiphertextA, 0)` of a
///   fresh symmetric encryption, the seed it was drawn from (the wire then carries the seed
///   instead of `c_1`); `None` otherwise;
/// * `param_id`: the id of the parameters the ciphertext belongs to.
///
/// # Invariants
/// Checked by [`CiphertextCore::from_parts`], which every constructor calls (a copy keeps them):
/// * the degree is 1 or 2 (two or three polynomials);
/// * every polynomial is over the same basis, of `level + 1` limbs;
/// * a seed is only held at degree 1. Whether `c_1` is the seed's stream is not checked (that
///   would regenerate it): a seed comes only from symmetric encryption, from loading a seeded
///   ciphertext (which regenerates `c_1` from it) and from materialising a compressed one whose
///   `a` half is still its seed, and only results whose `c_1` is a copy of the seeded one keep
///   it ([`CiphertextCore::duplicate`], a new `c_0` by [`CiphertextCore::map_c0`], a modulus
///   switch by zero primes); every other result is unseeded.
#[derive(Debug)]
pub(crate) struct CiphertextCore<B: Backend> {
    polys: Vec<RnsPoly<B, Eval>>,
    level: usize,
    seed: Option<Seed>,
    param_id: u64,
}

impl<B: Backend> CiphertextCore<B> {
    /// A ciphertext of `polys` (with the seed of `c_1`, if any): checks the invariants.
    pub(crate) fn from_parts(polys: Vec<RnsPoly<B, Eval>>, seed: Option<Seed>, param_id: u64) -> Result<Self> {
        let degree = polys.len().saturating_sub(1);
        let (first, rest) = match polys.split_first() {
            Some((first, rest)) if (1..=2).contains(&rest.len()) => (first, rest),
            _ => return Err(Error::CiphertextDegree { degree, expected: if degree == 0 { 1 } else { 2 } }),
        };
        if seed.is_some() && degree != 1 {
            return Err(Error::SeedNotAllowed { reason: "only degree-1 ciphertexts can be seeded" });
        }
        let basis = first.basis();
        let level = basis
            .len()
            .checked_sub(1)
            .ok_or(Error::InvalidField { field: "ciphertext", reason: "polynomials without limbs" })?;
        if let Some(other) = rest.iter().find(|p| p.basis() != basis) {
            return Err(Error::DimensionMismatch {
                what: "ciphertext limbs",
                expected: basis.len(),
                found: other.limb_count(),
            });
        }
        Ok(Self { polys, level, seed, param_id })
    }

    /// An unseeded ciphertext of `polys` with the parameter id of `self`.
    pub(crate) fn with_polys(&self, polys: Vec<RnsPoly<B, Eval>>) -> Result<Self> {
        Self::from_parts(polys, None, self.param_id)
    }

    /// Symmetric encryption of `msg` under a fresh seed: a seeded ciphertext (see
    /// [`super::encrypt_symmetric`]).
    pub(crate) fn encrypt_symmetric(
        backend: &B,
        sk: &SecretKey<B>,
        msg: &RnsPoly<B, Eval>,
        scale: NoiseScale,
    ) -> Result<Self> {
        let ((b, a), seed) = super::encrypt_symmetric(backend, sk, msg, scale)?;
        Self::from_parts(vec![b, a], Some(seed), backend.context().params().id())
    }

    /// Public-key encryption of `msg` with the randomness of `rng` (see
    /// [`super::encrypt_public`]).
    pub(crate) fn encrypt_public(
        backend: &B,
        pk: &PublicKey<B>,
        msg: &RnsPoly<B, Eval>,
        scale: NoiseScale,
        rng: &mut Sampler,
    ) -> Result<Self> {
        let (c0, c1) = super::encrypt_public(backend, pk, msg, scale, rng)?;
        Self::from_parts(vec![c0, c1], None, backend.context().params().id())
    }

    /// The polynomials `c_0, c_1[, c_2]`.
    pub(crate) fn polys(&self) -> &[RnsPoly<B, Eval>] {
        &self.polys
    }

    /// The polynomials, by value.
    pub(crate) fn into_polys(self) -> Vec<RnsPoly<B, Eval>> {
        self.polys
    }

    /// The level: index of the last prime of the basis.
    pub(crate) fn level(&self) -> usize {
        self.level
    }

    /// The degree: 1 or 2.
    pub(crate) fn degree(&self) -> usize {
        // At least two polynomials (invariant).
        self.polys.len() - 1
    }

    /// The seed of `c_1` while `c_1` is untouched.
    pub(crate) fn seed(&self) -> Option<&Seed> {
        self.seed.as_ref()
    }

    /// The id of the parameters.
    pub(crate) fn param_id(&self) -> u64 {
        self.param_id
    }

    /// [`Error::ParameterMismatch`] unless the ciphertext belongs to the backend's parameters.
    pub(crate) fn check_params(&self, backend: &B) -> Result<()> {
        super::check_param_id(backend, self.param_id)
    }

    /// `(c_0, c_1)` of a degree-1 ciphertext; [`Error::CiphertextDegree`] otherwise.
    pub(crate) fn degree_one(&self) -> Result<PolyRefs<'_, B>> {
        match self.polys.as_slice() {
            [c0, c1] => Ok((c0, c1)),
            _ => Err(Error::CiphertextDegree { degree: self.degree(), expected: 1 }),
        }
    }

    /// A deep copy (seed included).
    pub(crate) fn duplicate(&self, backend: &B) -> Result<Self> {
        Ok(Self { polys: self.duplicate_polys(backend)?, level: self.level, seed: self.seed, param_id: self.param_id })
    }

    /// Copies of the polynomials.
    pub(crate) fn duplicate_polys(&self, backend: &B) -> Result<Vec<RnsPoly<B, Eval>>> {
        self.polys.iter().map(|p| p.duplicate(backend)).collect()
    }

    /// `f` applied to every polynomial: an unseeded ciphertext.
    pub(crate) fn map(&self, f: impl FnMut(&RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>) -> Result<Self> {
        self.with_polys(self.polys.iter().map(f).collect::<Result<_>>()?)
    }

    /// `c_0` replaced by `f(c_0)`, the other polynomials copied; `c_1` is untouched, so the seed
    /// is kept.
    pub(crate) fn map_c0(
        &self,
        backend: &B,
        f: impl FnOnce(&RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>,
    ) -> Result<Self> {
        let (c0, rest) = self.polys.split_first().ok_or(Error::CiphertextDegree { degree: 0, expected: 1 })?;
        let mut polys = Vec::with_capacity(self.polys.len());
        polys.push(f(c0)?);
        for p in rest {
            polys.push(p.duplicate(backend)?);
        }
        Self::from_parts(polys, self.seed, self.param_id)
    }

    /// The tensor product `(a_0 b_0, a_0 b_1 + a_1 b_0, a_1 b_1)` of two degree-1 ciphertexts
    /// at the same level: a degree-2 ciphertext.
    pub(crate) fn tensor(&self, backend: &B, other: &Self) -> Result<Self> {
        let (a0, a1) = self.degree_one()?;
        let (b0, b1) = other.degree_one()?;
        let [c0, c1, c2] = RnsPoly::tensor(backend, [a0, a1], [b0, b1])?;
        self.with_polys(vec![c0, c1, c2])
    }

    /// Relinearises a degree-2 ciphertext (see [`super::relinearize`]).
    pub(crate) fn relinearize(&self, backend: &B, keys: &EvaluationKeys<B>, t: Option<u32>) -> Result<Self> {
        let (c0, c1) = super::relinearize(backend, &self.polys, keys, t)?;
        self.with_polys(vec![c0, c1])
    }

    /// The tensor product with `other` relinearised, fused (see [`super::mul_relinearize`]):
    /// the words of `self.tensor(other)?.relinearize(..)`.
    pub(crate) fn mul_relinearize(
        &self,
        backend: &B,
        other: &Self,
        keys: &EvaluationKeys<B>,
        t: Option<u32>,
    ) -> Result<Self> {
        let (a0, a1) = self.degree_one()?;
        let (b0, b1) = other.degree_one()?;
        let (c0, c1) = super::mul_relinearize(backend, [a0, a1], [b0, b1], keys, t)?;
        self.with_polys(vec![c0, c1])
    }

    /// Applies `X -> X^g` with its Galois key (see [`super::apply_galois`]).
    pub(crate) fn apply_galois(
        &self,
        backend: &B,
        g: usize,
        keys: &EvaluationKeys<B>,
        what: &str,
        t: Option<u32>,
    ) -> Result<Self> {
        let (c0, c1) = super::apply_galois(backend, &self.polys, g, keys, what, t)?;
        self.with_polys(vec![c0, c1])
    }

    /// `c_0 + c_1 s (+ c_2 s^2)` in coefficients, on the host (limb-major); checks the
    /// parameter id first.
    pub(crate) fn decrypt_to_host(&self, backend: &B, sk: &SecretKey<B>) -> Result<Vec<u32>> {
        self.check_params(backend)?;
        super::decrypt_polys(backend, sk, &self.polys)?.into_coeff(backend)?.to_host(backend)
    }
}

/// `op(a_i, b_i)` for every component of two polynomial lists of possibly different lengths (a
/// degree-1 and a degree-2 ciphertext): a missing `a_i` is zero (`op(0, b_i)`), a missing `b_i`
/// leaves `a_i` (copied).
pub(crate) fn zip_padded<B: Backend>(
    backend: &B,
    a: &[RnsPoly<B, Eval>],
    b: &[RnsPoly<B, Eval>],
    op: impl Fn(&RnsPoly<B, Eval>, &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>,
) -> Result<Vec<RnsPoly<B, Eval>>> {
    let len = a.len().max(b.len());
    let mut out = Vec::with_capacity(len);
    let (mut a, mut b) = (a.iter(), b.iter());
    for _ in 0..len {
        out.push(match (a.next(), b.next()) {
            (Some(x), Some(y)) => op(x, y)?,
            (Some(x), None) => x.duplicate(backend)?,
            (None, Some(y)) => op(&RnsPoly::zero(backend, y.basis().clone())?, y)?,
            (None, None) => continue,
        });
    }
    Ok(out)
}
