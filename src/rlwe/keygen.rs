//! Key generation: ternary secret, public key, hybrid key-switching keys.

use super::{KeyDigit, KeySwitchKey, NoiseScale, PublicKey, SecretKey};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{fresh_seed, Generator, Purpose, Sampler, Seed};
use crate::poly::{Coeff, Eval, RnsPoly};

/// Generates a ternary secret key. With `master = None` all of the key owner's randomness comes
/// from the operating system; with a master seed it is derived from it (reproducible runs, and
/// the CPU-vs-GPU equivalence tests).
pub fn gen_secret_key<B: Backend>(backend: &B, master: Option<&Seed>) -> Result<SecretKey<B>> {
    let master = match master {
        Some(m) => *m,
        None => fresh_seed()?,
    };
    let ctx = backend.context();
    let n = ctx.n();
    let coeffs = Sampler::from_seed(&master, Purpose::Secret, 0).ternary(n);
    let wide: Vec<i64> = coeffs.iter().map(|&c| i64::from(c)).collect();
    let basis = ctx.qp_basis(ctx.q_count() - 1)?;
    let eval = RnsPoly::<B, Coeff>::from_signed(backend, &wide, basis)?.into_eval(backend)?;
    Ok(SecretKey { coeffs, eval, param_id: ctx.params().id(), state: SecretKey::<B>::new_state(&master) })
}

/// An error polynomial `scale * e` over `basis`, in the Eval domain.
pub(crate) fn error_poly<B: Backend>(
    backend: &B,
    sk: &SecretKey<B>,
    scale: NoiseScale,
    basis: crate::ring::Basis,
) -> Result<RnsPoly<B, Eval>> {
    let e = sk.gaussian(backend.context().n())?;
    let scaled: Vec<i64> = e.iter().map(|&x| i64::from(x) * i64::from(scale.0)).collect();
    RnsPoly::<B, Coeff>::from_signed(backend, &scaled, basis)?.into_eval(backend)
}

/// Generates a public key over the top-level `Q`.
pub fn gen_public_key<B: Backend>(backend: &B, sk: &SecretKey<B>, scale: NoiseScale) -> Result<PublicKey<B>> {
    sk.check_params(backend)?;
    let ctx = backend.context();
    let basis = ctx.q_basis(ctx.q_count() - 1)?;
    let seed = sk.fresh_seed()?;
    let a = RnsPoly::<B, Eval>::uniform(backend, &seed, Purpose::PublicKeyA, 0, basis.clone())?;
    let s = sk.eval.select(backend, &basis)?;
    let e = error_poly(backend, sk, scale, basis)?;
    let b = e.sub(backend, &a.mul(backend, &s)?)?;
    Ok(PublicKey { b, a, seed, generator: Generator::CURRENT, param_id: ctx.params().id() })
}

/// Generates the hybrid key-switching key from `s_from` (Eval over the full `Q P`) to `sk`, in
/// the expanded form (see [`KeySwitchKey::seeded`]).
pub fn gen_key_switch_key<B: Backend>(
    backend: &B,
    s_from: &RnsPoly<B, Eval>,
    sk: &SecretKey<B>,
    scale: NoiseScale,
) -> Result<KeySwitchKey<B>> {
    gen_key_switch_key_at(backend, s_from, sk, scale, backend.context().q_count() - 1)
}

/// [`gen_key_switch_key`] at `level`: the key over `q_0..q_level` and `P` only, with the digits
/// that meet `q_0..q_level`; it switches ciphertexts at every level up to `level`. Its words are
/// those of the top-level key generated from the same seed and errors, restricted to these limbs
/// ([`KeySwitchKey::at_level`]).
pub fn gen_key_switch_key_at<B: Backend>(
    backend: &B,
    s_from: &RnsPoly<B, Eval>,
    sk: &SecretKey<B>,
    scale: NoiseScale,
    level: usize,
) -> Result<KeySwitchKey<B>> {
    sk.check_params(backend)?;
    let ctx = backend.context();
    let params = ctx.params();
    if ctx.p_count() == 0 {
        return Err(Error::KeyDimensions { reason: "parameters without special primes cannot switch keys" });
    }
    if s_from.basis() != &ctx.qp_basis(ctx.q_count() - 1)? {
        return Err(Error::KeyDimensions { reason: "source secret must cover every prime of Q and P" });
    }
    let basis = ctx.qp_basis(level)?;
    let (s_from, s) = if level + 1 == ctx.q_count() {
        (s_from.duplicate(backend)?, sk.eval.duplicate(backend)?)
    } else {
        (s_from.select(backend, &basis)?, sk.eval.select(backend, &basis)?)
    };
    // P mod q_i for every ciphertext prime.
    let p_mod_q: Vec<u32> = ctx
        .params()
        .q()
        .iter()
        .map(|m| ctx.params().p().iter().fold(1 % m.value(), |acc, p| m.mul(acc, m.reduce_u32(p.value()))))
        .collect();
    let seed = sk.fresh_seed()?;
    let mut digits = Vec::with_capacity(params.dnum());
    for j in 0..params.dnum() {
        let range = params.digit_range(j);
        if range.is_empty() || range.start > level {
            continue;
        }
        let index = u32::try_from(j).map_err(|_| Error::KeyDimensions { reason: "too many digits" })?;
        let a = RnsPoly::<B, Eval>::uniform(backend, &seed, Purpose::KeySwitchA, index, basis.clone())?;
        let e = error_poly(backend, sk, scale, basis.clone())?;
        // g_j * P per limb: P mod q_i on the digit's primes, 0 elsewhere (and on P).
        let gadget = basis
            .iter()
            .map(|&i| {
                if range.contains(&i) {
                    p_mod_q.get(i).copied().ok_or(Error::KeyDimensions { reason: "digit prime outside the chain" })
                } else {
                    Ok(0)
                }
            })
            .collect::<Result<Vec<u32>>>()?;
        let b = e.sub(backend, &a.mul(backend, &s)?)?.add(backend, &s_from.mul_scalar(backend, &gadget)?)?;
        digits.push(KeyDigit { b: b.into(), a: Some(a), index });
    }
    Ok(KeySwitchKey { digits, seed, generator: Generator::CURRENT, param_id: params.id() })
}

/// The stream index (under [`Purpose::SeedDerivation`]) from which a sparse secret's own master
/// seed is derived from the master of [`gen_sparse_secret_key`]: distinct from the index 0
/// that a dense key's seed stream uses, so that a dense and a sparse key made from one master
/// never share seeds, errors or coefficients.
const SPARSE_MASTER_INDEX: u32 = 1;

/// Generates a sparse ternary secret key: exactly `h` nonzero coefficients, at positions
/// uniform among the `N` (distinct) and with uniform signs, all drawn from the seeded sampler
/// (the [`Purpose::Secret`] stream of a master derived from `master`, or from the operating
/// system's randomness with `master = None`). Its `eval` covers every prime of `Q` and `P`
/// like a dense key's, and it carries its own seed and noise streams.
///
/// Used as the ephemeral secret of CKKS bootstrapping (sparse-secret encapsulation, `h = 32`):
/// an RLWE sample under such a secret is only as hard as its modulus is small, so keys *to* it
/// must be generated at a low level (see `crate::ckks::sparse`).
///
/// Errors: [`Error::InvalidField`] unless `1 <= h <= N`.
pub fn gen_sparse_secret_key<B: Backend>(backend: &B, master: Option<&Seed>, h: usize) -> Result<SecretKey<B>> {
    let ctx = backend.context();
    let n = ctx.n();
    if h == 0 || h > n {
        return Err(Error::InvalidField { field: "sparse secret weight", reason: "must be in [1, N]" });
    }
    let outer = match master {
        Some(m) => *m,
        None => fresh_seed()?,
    };
    let own = Sampler::from_seed(&outer, Purpose::SeedDerivation, SPARSE_MASTER_INDEX).next_seed();
    let mut sampler = Sampler::from_seed(&own, Purpose::Secret, 0);
    let mut coeffs = vec![0i8; n];
    // N is a power of two: a masked word is an exact uniform position; taken positions are
    // drawn again (h <= N, so this ends; for h << N almost never).
    let mask = n - 1;
    let mut placed = 0;
    let mut word = [0u8; 4];
    while placed < h {
        sampler.fill_bytes(&mut word);
        let r = u32::from_le_bytes(word) as usize;
        let slot =
            coeffs.get_mut(r & mask).ok_or(Error::InvalidField { field: "sparse secret", reason: "position" })?;
        if *slot == 0 {
            // Sign from bit 31 (independent of the position bits for N <= 2^31).
            *slot = if r >> 31 == 1 { -1 } else { 1 };
            placed += 1;
        }
    }
    let wide: Vec<i64> = coeffs.iter().map(|&c| i64::from(c)).collect();
    let basis = ctx.qp_basis(ctx.q_count() - 1)?;
    let eval = RnsPoly::<B, Coeff>::from_signed(backend, &wide, basis)?.into_eval(backend)?;
    Ok(SecretKey { coeffs, eval, param_id: ctx.params().id(), state: SecretKey::<B>::new_state(&own) })
}
