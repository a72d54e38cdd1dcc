//! Hybrid key switching: ModUp, one inner product over every digit, ModDown.
//!
//! At level `l` (`l + 1` chain primes `Q_l`), with `k` special primes `P` and digits `j` of
//! `alpha_j` primes (the digit ranges of the parameters cut at `l`):
//!
//! 1. **ModUp**: `c` (Eval) is inverse-transformed out of place (`l + 1` limb-NTTs; HMULT's
//!    `a_1 b_1` and a rotation's `c_1(X^g)` are formed by that transform's first pass as it
//!    loads, and kept, see [`key_switch_formed`]); one
//!    `base_convert` call converts every digit's coefficient limbs, read in place, to the
//!    `l + 1 + k - alpha_j` other primes of `Q_l P`, all digits into one buffer, and one
//!    forward NTT transforms exactly those converted limbs. A digit's own limbs are `c`'s
//!    Eval limbs, used as they are.
//! 2. **Inner product**: one `key_switch_inner_product` call forms `sum_j d_j b_j` and
//!    `sum_j d_j a_j` over `Q_l P`, reading `a_j` where the key stores it and regenerating it
//!    from the key's seed where it does not, and returns the `Q_l` limbs and the `P` limbs
//!    apart.
//! 3. **ModDown**: only the `2k` `P` limbs of the two sums are inverse-transformed; the
//!    correction `[-delta P^{-1}]_{q_i}` of each sum ([`crate::math::rounding`], joint rounding,
//!    `delta` as defined by [`crate::math::rns::ScaleDown`] with `t` or without) is computed
//!    from them and forward-transformed over `Q_l` (`2(l + 1)` limb-NTTs), and one fused
//!    program forms `sum * P^{-1} + corr` for both outputs, plus whatever the caller adds
//!    ([`Epilogue`]: `c_0` and `c_1` for relinearisation, `c_0(X^g)` for a rotation).
//!
//! Limb-NTTs of one key switch at level `l`, counted from the calls above:
//!
//! ```text
//! (l + 1) + sum_j (l + 1 + k - alpha_j) + 2k + 2(l + 1)
//! ```
//!
//! (before: `(l + 1) + dnum_l (l + 1 + k) + 2(l + 1 + k) + 2(l + 1)`, every digit's own limbs
//! transformed back and every limb of both sums inverse-transformed). HMULT with
//! relinearisation and a rotation are one key switch each; BGV's `mul_relin` may first switch
//! its operands down ([`crate::bgv::Bgv::switch_and_tensor`]): each dropped prime range costs
//! `l + 1` limb-NTTs per polynomial at the operand's level `l`
//! ([`crate::rlwe::drop_primes`]). The tests assert these counts through the ledger.
//!
//! Every step is an exact modular map, so the result is word for word that of the
//! coefficient-domain algorithm (ModUp of every limb, ModDown of every limb), on every backend.

use super::mod_down::{finish, Addend, Epilogue, Finish};
use super::{KeySwitchKey, PolyPair};
use crate::backend::key_switching::modup_targets;
use crate::backend::{Backend, ConvertPart, InnerProductInput, InverseInput, KeyDigitRef};
use crate::error::{Error, Result};
use crate::math::rounding::Rounding;
use crate::poly::{Eval, RnsPoly};
use crate::ring::Basis;

/// Switches `c` (Eval, over `q_0..q_l`) under the key `ksk` from `s'` to `s`: returns `(d0, d1)`
/// over `q_0..q_l` with `d0 + d1 s = c s' + small`. `t` is the BGV plaintext modulus (the ModDown
/// then preserves the plaintext), `None` for CKKS.
pub fn key_switch<B: Backend>(
    backend: &B,
    c: &RnsPoly<B, Eval>,
    ksk: &KeySwitchKey<B>,
    t: Option<u32>,
) -> Result<PolyPair<B>> {
    key_switch_add(backend, c, ksk, t, [None, None])
}

/// [`key_switch`] with `addends[0]` added to `d0` and `addends[1]` to `d1` in ModDown's last
/// pass (relinearisation adds `c_0` and `c_1`, a rotation `c_0(X^g)`), saving a pass over the
/// result. The addends must be over a basis containing `c`'s.
pub fn key_switch_add<B: Backend>(
    backend: &B,
    c: &RnsPoly<B, Eval>,
    ksk: &KeySwitchKey<B>,
    t: Option<u32>,
    addends: [Option<Addend<'_, B>>; 2],
) -> Result<PolyPair<B>> {
    let [d0, d1] = key_switch_with(backend, c, ksk, t, Epilogue::addends(addends))?;
    Ok((RnsPoly::from_buffer(backend, d0, c.basis().clone())?, RnsPoly::from_buffer(backend, d1, c.basis().clone())?))
}

/// [`key_switch`] with a general last pass: the two outputs (`d0`, `d1`, over `c`'s basis) get
/// the epilogue's expressions added and are stored in its formats (two outputs; a bit-packed
/// output is laid out as [`crate::backend::fused::packed_layout`] says).
pub fn key_switch_with<'a, B: Backend>(
    backend: &B,
    c: &RnsPoly<B, Eval>,
    ksk: &KeySwitchKey<B>,
    t: Option<u32>,
    epilogue: Epilogue<'a, B>,
) -> Result<[B::Buffer; 2]> {
    check_key(backend, c, ksk)?;
    let up = mod_up(backend, c)?;
    inner_product_mod_down(backend, c, &up, ksk, t, epilogue)
}

/// [`key_switch_with`] of the polynomial `input` forms over `basis` (`q_0..q_l`): the product
/// `a_1 b_1` of HMULT or the automorphism `c_1(X^g)` of a rotation, formed by ModUp's inverse
/// transform as it loads it and kept for the inner product, so no pass forms it in front.
pub fn key_switch_formed<'a, B: Backend>(
    backend: &B,
    input: InverseInput<'_, B::Buffer>,
    basis: &Basis,
    ksk: &KeySwitchKey<B>,
    t: Option<u32>,
    epilogue: Epilogue<'a, B>,
) -> Result<[B::Buffer; 2]> {
    check_key_for(backend, basis, ksk)?;
    let (up, c) = mod_up_kept(backend, input, basis)?;
    inner_product_mod_down(backend, &c, &up, ksk, t, epilogue)
}

/// ModUp's output for `c` (Eval, over `q_0..q_l`): every digit's limbs converted to the other
/// primes of `Q_l P`, transformed (Eval), digit after digit.
pub(crate) struct ModUp<B: Backend> {
    /// The digits of `q_0..q_l`.
    pub(crate) digits: Vec<Vec<usize>>,
    /// The converted limbs (Eval), over `targets`.
    pub(crate) converted: B::Buffer,
    /// The basis of `converted`: each digit's [`modup_targets`] in order (primes repeat).
    pub(crate) targets: Vec<usize>,
}

/// Checks that `ksk` can switch `c`: the parameters, the key's basis (`q_0..q_l'` and `P`) and
/// its level (at least `c`'s).
pub(crate) fn check_key<B: Backend>(backend: &B, c: &RnsPoly<B, Eval>, ksk: &KeySwitchKey<B>) -> Result<()> {
    check_key_for(backend, c.basis(), ksk)
}

/// [`check_key`] for an input over `basis`.
pub(crate) fn check_key_for<B: Backend>(backend: &B, basis: &Basis, ksk: &KeySwitchKey<B>) -> Result<()> {
    super::check_param_id(backend, ksk.param_id)?;
    let ctx = backend.context();
    let level = basis.len().checked_sub(1).ok_or(Error::LevelOutOfRange { level: 0, max: 0 })?;
    let q_basis = ctx.q_basis(level)?;
    if basis != &q_basis {
        return Err(Error::DimensionMismatch {
            what: "key-switch input basis",
            expected: q_basis.len(),
            found: basis.len(),
        });
    }
    let p_basis = ctx.p_basis();
    // The key's basis: q_0..q_l' and P for a key at level l' (the top level unless reduced).
    let key_basis = ksk.basis()?;
    if p_basis.is_empty()
        || ksk.digits.iter().any(|d| d.b.basis() != key_basis || d.a.as_ref().is_some_and(|a| a.basis() != key_basis))
        || !key_basis
            .iter()
            .copied()
            .eq((0..key_basis.len().saturating_sub(p_basis.len())).chain(p_basis.iter().copied()))
    {
        return Err(Error::KeyDimensions { reason: "key does not cover Q and P" });
    }
    if ksk.level(backend)? < level {
        return Err(Error::KeyDimensions { reason: "key below the level of the ciphertext" });
    }
    Ok(())
}

/// ModUp of `c` (Eval, over `q_0..q_l`): one `base_convert` call for every digit, then one
/// forward NTT of exactly the converted limbs.
pub(crate) fn mod_up<B: Backend>(backend: &B, c: &RnsPoly<B, Eval>) -> Result<ModUp<B>> {
    Ok(mod_up_from(backend, InverseInput::Copy(c.buffer()), c.basis(), false)?.0)
}

/// [`mod_up_from`] keeping the formed polynomial (Eval): the ModUp and that polynomial.
pub(crate) fn mod_up_kept<B: Backend>(
    backend: &B,
    input: InverseInput<'_, B::Buffer>,
    basis: &Basis,
) -> Result<(ModUp<B>, RnsPoly<B, Eval>)> {
    let (up, kept) = mod_up_from(backend, input, basis, true)?;
    // `Backend::ntt_inverse_from` returns the formed input whenever it is asked to keep it.
    Ok((up, kept.ok_or(Error::KeyDimensions { reason: "ModUp kept no input" })?))
}

/// [`mod_up_from`]'s output: the ModUp and, when kept, the formed polynomial (Eval).
type ModUpKept<B> = (ModUp<B>, Option<RnsPoly<B, Eval>>);

/// [`mod_up`] of the polynomial `input` forms over `basis` (`q_0..q_l`), formed by the inverse
/// transform as it loads it ([`Backend::ntt_inverse_from`]): a copy, the product `a_1 b_1` of
/// HMULT, the automorphism `c_1(X^g)` of a rotation. With `keep`, the formed polynomial (Eval)
/// comes back too: the inner product reads each digit's own limbs from it.
fn mod_up_from<B: Backend>(
    backend: &B,
    input: InverseInput<'_, B::Buffer>,
    basis: &Basis,
    keep: bool,
) -> Result<ModUpKept<B>> {
    let ctx = backend.context();
    let params = ctx.params();
    let level = basis.len().checked_sub(1).ok_or(Error::LevelOutOfRange { level: 0, max: 0 })?;
    let q_basis = ctx.q_basis(level)?;
    if basis != &q_basis {
        return Err(Error::DimensionMismatch {
            what: "key-switch input basis",
            expected: q_basis.len(),
            found: basis.len(),
        });
    }
    let p_basis = ctx.p_basis();
    let digits: Vec<Vec<usize>> = (0..params.dnum())
        .map(|j| params.digit_range(j).filter(|&i| i <= level).collect::<Vec<_>>())
        .filter(|g| !g.is_empty())
        .collect();
    // ModUp: every digit converted in one call, only the converted limbs transformed.
    let targets = modup_targets(&q_basis, &p_basis, &digits);
    let (c_coeff, kept) = backend.ntt_inverse_from(input, &q_basis, keep)?;
    let kept = kept.map(|k| RnsPoly::from_buffer(backend, k, basis.clone())).transpose()?;
    let parts: Vec<ConvertPart<'_>> = digits.iter().zip(&targets).map(|(d, t)| (&d[..], &t[..])).collect();
    let mut converted = backend.base_convert(&c_coeff, &q_basis, &parts)?;
    drop(c_coeff);
    let targets = targets.concat();
    backend.ntt_forward(&mut converted, &targets)?;
    Ok((ModUp { digits, converted, targets }, kept))
}

/// The inner product of `c`'s digits (its own limbs and `up`'s converted ones) with `ksk`, and
/// ModDown with the epilogue. The key must have passed [`check_key`] for `c`.
pub(crate) fn inner_product_mod_down<'a, B: Backend>(
    backend: &B,
    c: &RnsPoly<B, Eval>,
    up: &ModUp<B>,
    ksk: &KeySwitchKey<B>,
    t: Option<u32>,
    epilogue: Epilogue<'a, B>,
) -> Result<[B::Buffer; 2]> {
    let ctx = backend.context();
    let q_basis = c.basis();
    let p_basis = ctx.p_basis();
    let key_basis = ksk.basis()?.clone();
    let digits = &up.digits;
    let used = ksk
        .digits
        .get(..digits.len())
        .ok_or(Error::KeyDimensions { reason: "key has fewer digits than the parameters" })?;

    // The inner product over every digit, stored and seeded a_j alike.
    let key: Vec<KeyDigitRef<'_, B::Buffer>> = used
        .iter()
        .map(|d| KeyDigitRef {
            b: d.b.buffer(),
            b_packed: d.b.is_packed(),
            a: d.a.as_ref().map(RnsPoly::buffer),
            index: d.index,
        })
        .collect();
    let sums = backend.key_switch_inner_product(&InnerProductInput {
        c: c.buffer(),
        converted: &up.converted,
        q_basis,
        p_basis: &p_basis,
        digits,
        key: &key,
        key_basis: &key_basis,
        seed: &ksk.seed,
    })?;

    // ModDown: only the P limbs go back to coefficients.
    let mut p = sums.p;
    let pp: Vec<usize> = p_basis.iter().chain(p_basis.iter()).copied().collect();
    backend.ntt_inverse(&mut p, &pp)?;
    // Both polynomials' corrections in one buffer: one correction dispatch, one transform call.
    let corrections = backend.scale_down_correction(&p, q_basis, &p_basis, t, Rounding::Joint)?;
    drop(p);
    let finishes = [&sums.q0, &sums.q1]
        .into_iter()
        .enumerate()
        .map(|(index, x)| Finish { x, basis: c.basis(), buffer: 0, index })
        .collect();
    let mut out = finish(backend, c.basis(), &p_basis, finishes, vec![corrections], epilogue)?.into_iter();
    match (out.next(), out.next()) {
        (Some(d0), Some(d1)) => Ok([d0, d1]),
        _ => Err(Error::KeyDimensions { reason: "key switch produced no output" }),
    }
}
