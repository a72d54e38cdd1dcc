//! Hoisted automorphisms: several Galois automorphisms of one ciphertext sharing one ModUp.
//!
//! A rotation `(c_0, c_1) -> (c_0(X^g) + d_0, d_1)`, `(d_0, d_1) = KS_g(c_1(X^g))`, spends most
//! of its transforms in the ModUp of `c_1(X^g)` ([`super::key_switch`]). In the Eval domain
//! `X -> X^g` is a permutation of every limb, so the ModUp of `c_1` can be computed once
//! ([`decompose`]) and, for each rotation, its digits (`c_1`'s own limbs and the converted
//! ones) permuted instead ([`apply_galois_hoisted`]): one inverse NTT of `l + 1` limbs and one
//! base conversion for all the rotations, instead of one per rotation.
//!
//! # Word for word the plain rotation
//! The permutation of the Eval domain is, in coefficients, `c_i X^i -> ± c_i X^(i g)`: a
//! permutation of the coefficients with some signs flipped. ModUp commutes with both: the
//! inverse NTT and the forward NTT of the converted limbs are linear and the automorphism
//! permutes their outputs exactly, and the fast base conversion
//! ([`crate::math::rns::BaseConverter`]) works coefficient by coefficient with *centred* digits
//! `c_i` in `(-q_i/2, q_i/2)` (the primes are odd), so it maps `-x` to exactly the negation of
//! what it maps `x` to. So `ModUp(c_1)(X^g) = ModUp(c_1(X^g))` word for word, the inner product
//! and ModDown are the same calls, and a hoisted rotation gives the words of the plain one (the
//! tests assert it). (With an unsigned lift, `y_i` in `[0, q_i)`, the two would differ by
//! multiples of the digit's modulus on the converted limbs, and only decrypt alike.)

use super::key_switch::{check_key, inner_product_mod_down, mod_up_kept, ModUp};
use super::{Addend, Epilogue, EvaluationKeys, PolyPair};
use crate::backend::{Backend, InverseInput};
use crate::error::{Error, Result};
use crate::poly::{Eval, RnsPoly};

/// The ModUp of one polynomial, shared by the automorphisms applied to it.
pub struct Decomposed<B: Backend> {
    /// The polynomial (Eval, over `q_0..q_l`): the digits' own limbs.
    poly: RnsPoly<B, Eval>,
    up: ModUp<B>,
}

impl<B: Backend> std::fmt::Debug for Decomposed<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Residues are not printed.
        f.debug_struct("Decomposed")
            .field("basis", self.poly.basis())
            .field("digits", &self.up.digits)
            .finish_non_exhaustive()
    }
}

impl<B: Backend> Decomposed<B> {
    /// The number of limbs less one: the level of the decomposed polynomial.
    #[must_use]
    pub fn level(&self) -> usize {
        self.poly.limb_count().saturating_sub(1)
    }
}

/// ModUp of `c` (Eval, over `q_0..q_l` for some level `l`): an inverse NTT of its limbs, one
/// base conversion of every digit and a forward NTT of the converted limbs, done once for every
/// automorphism [`apply_galois_hoisted`] then applies.
pub fn decompose<B: Backend>(backend: &B, c: &RnsPoly<B, Eval>) -> Result<Decomposed<B>> {
    // The copy of c the rotations read is kept by ModUp's inverse transform.
    let (up, poly) = mod_up_kept(backend, InverseInput::Copy(c.buffer()), c.basis())?;
    Ok(Decomposed { poly, up })
}

/// `(c_0, c_1) -> (c_0(X^g) + d_0, d_1)` as [`super::apply_galois`], with the ModUp of `c_1`
/// taken from `c1` ([`decompose`]): its digits are permuted by `X -> X^g` (in the Eval domain,
/// limb by limb) and go straight to the inner product with the Galois key of `g` and ModDown.
/// `what` names the rotation in the error if the key is missing. The result is word for word
/// [`super::apply_galois`]'s (see the module documentation).
pub fn apply_galois_hoisted<B: Backend>(
    backend: &B,
    c0: &RnsPoly<B, Eval>,
    c1: &Decomposed<B>,
    g: usize,
    keys: &EvaluationKeys<B>,
    what: &str,
    t: Option<u32>,
) -> Result<PolyPair<B>> {
    let gk = keys.galois_key(g, || what.to_string())?;
    if c0.basis() != c1.poly.basis() {
        return Err(Error::DimensionMismatch {
            what: "hoisted rotation c_0 limbs",
            expected: c1.poly.limb_count(),
            found: c0.limb_count(),
        });
    }
    let c1g = c1.poly.automorphism(backend, g)?;
    check_key(backend, &c1g, &gk.key)?;
    let up = ModUp {
        digits: c1.up.digits.clone(),
        converted: backend.automorphism(&c1.up.converted, g, &c1.up.targets)?,
        targets: c1.up.targets.clone(),
    };
    let epilogue = Epilogue::addends([Some(Addend { poly: c0, galois: Some(g) }), None]);
    let [d0, d1] = inner_product_mod_down(backend, &c1g, &up, &gk.key, t, epilogue)?;
    Ok((
        RnsPoly::from_buffer(backend, d0, c1g.basis().clone())?,
        RnsPoly::from_buffer(backend, d1, c1g.basis().clone())?,
    ))
}
