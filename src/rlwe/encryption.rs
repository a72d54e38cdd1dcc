//! Encryption (seeded symmetric and public key) and decryption to the noisy message.

use super::keygen::error_poly;
use super::{NoiseScale, PolyPair, PublicKey, SecretKey};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{Purpose, Seed};
use crate::poly::{Coeff, Eval, RnsPoly};

/// Symmetric encryption of `msg` (Eval, over `q_0..q_level`): returns `((b, a), seed)` with
/// `a = PRG(seed)`, `b = -a s + E e + msg`, and the seed, which is fresh under this key.
pub fn encrypt_symmetric<B: Backend>(
    backend: &B,
    sk: &SecretKey<B>,
    msg: &RnsPoly<B, Eval>,
    scale: NoiseScale,
) -> Result<(PolyPair<B>, Seed)> {
    sk.check_params(backend)?;
    let seed = sk.fresh_seed()?;
    let basis = msg.basis().clone();
    let a = RnsPoly::<B, Eval>::uniform(backend, &seed, Purpose::CiphertextA, 0, basis.clone())?;
    let s = sk.eval.select(backend, &basis)?;
    let e = error_poly(backend, sk, scale, basis)?;
    let b = e.add(backend, msg)?.sub(backend, &a.mul(backend, &s)?)?;
    Ok(((b, a), seed))
}

/// Public-key encryption of `msg` (Eval, over `q_0..q_level`):
/// `(u b + E e0 + msg, u a + E e1)` with a ternary `u`, all drawn from `rng` (seed it from the
/// operating system, or from a fixed seed for reproducible runs).
pub fn encrypt_public<B: Backend>(
    backend: &B,
    pk: &PublicKey<B>,
    msg: &RnsPoly<B, Eval>,
    scale: NoiseScale,
    rng: &mut crate::math::sampling::Sampler,
) -> Result<PolyPair<B>> {
    super::check_param_id(backend, pk.param_id)?;
    let ctx = backend.context();
    let n = ctx.n();
    let basis = msg.basis().clone();
    let top = ctx.q_basis(ctx.q_count() - 1)?;
    if pk.b.basis() != &top || pk.a.basis() != &top {
        return Err(Error::KeyDimensions { reason: "public key does not cover the top-level Q" });
    }
    let pk_b = pk.b.select(backend, &basis)?;
    let pk_a = pk.a.select(backend, &basis)?;
    let u: Vec<i64> = rng.ternary(n).iter().map(|&x| i64::from(x)).collect();
    let u = RnsPoly::<B, Coeff>::from_signed(backend, &u, basis.clone())?.into_eval(backend)?;
    let mut errs = Vec::with_capacity(2);
    for _ in 0..2 {
        let e: Vec<i64> = rng.gaussian(n).iter().map(|&x| i64::from(x) * i64::from(scale.0)).collect();
        errs.push(RnsPoly::<B, Coeff>::from_signed(backend, &e, basis.clone())?.into_eval(backend)?);
    }
    let mut it = errs.into_iter();
    let (e0, e1) = match (it.next(), it.next()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(Error::Backend { backend: backend.name(), reason: "error sampling".into() }),
    };
    let c0 = u.mul(backend, &pk_b)?.add(backend, &e0)?.add(backend, msg)?;
    let c1 = u.mul(backend, &pk_a)?.add(backend, &e1)?;
    Ok((c0, c1))
}

/// `c_0 + c_1 s + c_2 s^2 + ...` (Eval, over the ciphertext's basis).
pub fn decrypt_polys<B: Backend>(
    backend: &B,
    sk: &SecretKey<B>,
    polys: &[RnsPoly<B, Eval>],
) -> Result<RnsPoly<B, Eval>> {
    sk.check_params(backend)?;
    let (first, rest) = polys.split_first().ok_or(Error::CiphertextDegree { degree: 0, expected: 1 })?;
    let basis = first.basis().clone();
    let s = sk.eval.select(backend, &basis)?;
    // Horner: ((c_d s + c_{d-1}) s + ...) s + c_0.
    let mut acc: Option<RnsPoly<B, Eval>> = None;
    for c in rest.iter().rev() {
        acc = Some(match acc {
            None => c.duplicate(backend)?,
            Some(a) => a.mul(backend, &s)?.add(backend, c)?,
        });
    }
    match acc {
        None => first.duplicate(backend),
        Some(a) => a.mul(backend, &s)?.add(backend, first),
    }
}
