//! Evaluation keys and the scheme-independent operations that use them: relinearisation and
//! Galois automorphisms (rotations, row swaps, conjugation).

use std::collections::HashMap;

use super::{gen_key_switch_key, key_switch_add, Addend, GaloisKey, NoiseScale, PolyPair, RelinKey, SecretKey};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::{Eval, RnsPoly};

/// Evaluation keys: the relinearisation key and Galois keys by element.
#[derive(Debug)]
pub struct EvaluationKeys<B: Backend> {
    /// Relinearisation key.
    pub relin: Option<RelinKey<B>>,
    /// Galois keys by Galois element (a key filed under another element is refused when used).
    pub galois: HashMap<usize, GaloisKey<B>>,
}

impl<B: Backend> Default for EvaluationKeys<B> {
    fn default() -> Self {
        Self { relin: None, galois: HashMap::new() }
    }
}

impl<B: Backend> EvaluationKeys<B> {
    /// Whether every key is seeded ([`super::KeySwitchKey::is_seeded`]; true when there are
    /// no keys).
    #[must_use]
    pub fn is_seeded(&self) -> bool {
        self.relin.as_ref().is_none_or(RelinKey::is_seeded) && self.galois.values().all(GaloisKey::is_seeded)
    }

    /// The seeded form of every key: the stored `a` parts dropped, only the seeds kept.
    #[must_use]
    pub fn into_seeded(self) -> Self {
        Self {
            relin: self.relin.map(RelinKey::seeded),
            galois: self.galois.into_iter().map(|(g, k)| (g, k.seeded())).collect(),
        }
    }

    /// Whether every key's `b` parts are bit-packed ([`super::KeySwitchKey::is_packed`]; true
    /// when there are no keys).
    #[must_use]
    pub fn is_packed(&self) -> bool {
        self.relin.as_ref().is_none_or(|k| k.0.is_packed()) && self.galois.values().all(|k| k.key.is_packed())
    }

    /// Every key with its `b` parts bit-packed ([`super::KeySwitchKey::packed`]); with
    /// [`EvaluationKeys::into_seeded`], the keys held in memory are seeds and packed `b` parts.
    pub fn into_packed(self, backend: &B) -> Result<Self> {
        Ok(Self {
            relin: self.relin.map(|k| k.packed(backend)).transpose()?,
            galois: self.galois.into_iter().map(|(g, k)| Ok((g, k.packed(backend)?))).collect::<Result<_>>()?,
        })
    }

    /// The expanded form of every key (a copy; `a` parts regenerated from the seeds, `b` parts
    /// one residue per word).
    pub fn expand(&self, backend: &B) -> Result<Self> {
        Ok(Self {
            relin: self.relin.as_ref().map(|k| k.expand(backend)).transpose()?,
            galois: self.galois.iter().map(|(&g, k)| Ok((g, k.expand(backend)?))).collect::<Result<_>>()?,
        })
    }

    /// Bytes the keys hold in backend buffers ([`super::KeySwitchKey::resident_bytes`]).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.relin.as_ref().map_or(0, |k| k.resident_bytes(backend))
            + self.galois.values().map(|k| k.resident_bytes(backend)).sum::<u64>()
    }
}

/// The relinearisation key (`s^2 -> s`).
pub fn gen_relin_key<B: Backend>(backend: &B, sk: &SecretKey<B>, scale: NoiseScale) -> Result<RelinKey<B>> {
    let s2 = sk.eval().mul(backend, sk.eval())?;
    Ok(RelinKey(gen_key_switch_key(backend, &s2, sk, scale)?))
}

/// The Galois key for `X -> X^g` (`g` odd, below `2N`).
pub fn gen_galois_key<B: Backend>(backend: &B, sk: &SecretKey<B>, g: usize, scale: NoiseScale) -> Result<GaloisKey<B>> {
    let two_n = 2 * backend.context().n();
    if g.is_multiple_of(2) || g >= two_n {
        return Err(Error::InvalidField { field: "galois element", reason: "must be odd and below 2N" });
    }
    // Key from s(X^g) to s; applied after the automorphism of the ciphertext.
    let sg = sk.eval().automorphism(backend, g)?;
    Ok(GaloisKey { galois_element: g, key: gen_key_switch_key(backend, &sg, sk, scale)? })
}

/// `generator^(steps mod N/2) mod 2N`: the Galois element of a rotation by `steps` slots.
#[must_use]
pub fn galois_element(generator: u64, steps: i64, n: usize) -> usize {
    let half = (n / 2).max(1) as i64;
    let two_n = 2 * n as u64;
    let mut e = steps.rem_euclid(half) as u64;
    let (mut g, mut base) = (1u64, generator % two_n);
    while e > 0 {
        if e & 1 == 1 {
            g = g * base % two_n;
        }
        base = base * base % two_n;
        e >>= 1;
    }
    g as usize
}

/// Relinearisation key plus a Galois key for each element (duplicates and 1 skipped).
pub fn gen_evaluation_keys<B: Backend>(
    backend: &B,
    sk: &SecretKey<B>,
    elements: &[usize],
    scale: NoiseScale,
) -> Result<EvaluationKeys<B>> {
    let mut keys = EvaluationKeys { relin: Some(gen_relin_key(backend, sk, scale)?), galois: HashMap::new() };
    for &g in elements {
        if g != 1 && !keys.galois.contains_key(&g) {
            keys.galois.insert(g, gen_galois_key(backend, sk, g, scale)?);
        }
    }
    Ok(keys)
}

/// `(c_0, c_1, c_2) -> (c_0 + d_0, c_1 + d_1)` with `(d_0, d_1) = KS(c_2)` under the
/// relinearisation key.
pub fn relinearize<B: Backend>(
    backend: &B,
    polys: &[RnsPoly<B, Eval>],
    keys: &EvaluationKeys<B>,
    t: Option<u32>,
) -> Result<PolyPair<B>> {
    let rk = keys.relin.as_ref().ok_or(Error::MissingRelinKey)?;
    let [c0, c1, c2] = polys else {
        return Err(Error::CiphertextDegree { degree: polys.len().saturating_sub(1), expected: 2 });
    };
    key_switch_add(backend, c2, &rk.0, t, [Some(Addend::plain(c0)), Some(Addend::plain(c1))])
}

/// `(c_0, c_1) -> (c_0(X^g) + d_0, d_1)` with `(d_0, d_1) = KS(c_1(X^g))` under the Galois key
/// of `g`; `what` names the rotation in the error if the key is missing.
pub fn apply_galois<B: Backend>(
    backend: &B,
    polys: &[RnsPoly<B, Eval>],
    g: usize,
    keys: &EvaluationKeys<B>,
    what: &str,
    t: Option<u32>,
) -> Result<PolyPair<B>> {
    let gk = keys
        .galois
        .get(&g)
        .ok_or_else(|| Error::MissingGaloisKey { galois_element: g as u64, rotation: what.to_string() })?;
    if gk.galois_element != g {
        return Err(Error::KeyDimensions { reason: "Galois key stored under another element" });
    }
    let [c0, c1] = polys else {
        return Err(Error::CiphertextDegree { degree: polys.len().saturating_sub(1), expected: 1 });
    };
    // c_0(X^g) is added inside ModDown's last pass, permuted there.
    let c1g = c1.automorphism(backend, g)?;
    key_switch_add(backend, &c1g, &gk.key, t, [Some(Addend { poly: c0, galois: Some(g) }), None])
}
