//! Evaluation keys and the scheme-independent operations that use them: relinearisation and
//! Galois automorphisms (rotations, row swaps, conjugation).

use std::collections::{BTreeMap, HashMap};

use super::{
    gen_key_switch_key, gen_key_switch_key_at, key_switch_add, key_switch_formed, Addend, Epilogue, GaloisKey,
    NoiseScale, PolyPair, RelinKey, SecretKey,
};
use crate::backend::fused::{buffer_words, Format};
use crate::backend::shape::{KeySwitchUse, ShapeBackend};
use crate::backend::{Backend, InverseInput};
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
    /// The Galois key of `g`. Errors: [`Error::MissingGaloisKey`] naming the rotation `what`
    /// (only built on that path) if there is none, [`Error::KeyDimensions`] if the key under `g`
    /// was made for another element.
    pub fn galois_key(&self, g: usize, what: impl FnOnce() -> String) -> Result<&GaloisKey<B>> {
        let gk = self
            .galois
            .get(&g)
            .ok_or_else(|| Error::MissingGaloisKey { galois_element: g as u64, rotation: what() })?;
        if gk.galois_element != g {
            return Err(Error::KeyDimensions { reason: "Galois key stored under another element" });
        }
        Ok(gk)
    }

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

    /// The keys of `plan`, each reduced to its planned level ([`super::KeySwitchKey::at_level`]):
    /// the same words, limb for limb, as these keys at every level up to the plan's. Errors:
    /// [`Error::MissingRelinKey`] or [`Error::MissingGaloisKey`] for a planned key that is not
    /// here; [`Error::LevelOutOfRange`] for a planned level above a key's own.
    pub fn reduced_to(&self, backend: &B, plan: &KeyPlan) -> Result<Self> {
        let relin = match plan.relin {
            Some(level) => Some(self.relin.as_ref().ok_or(Error::MissingRelinKey)?.at_level(backend, level)?),
            None => None,
        };
        let galois = plan
            .galois
            .iter()
            .map(|(&g, &level)| {
                let k = self.galois_key(g, || "a planned rotation".to_string())?;
                Ok((g, k.at_level(backend, level)?))
            })
            .collect::<Result<_>>()?;
        Ok(Self { relin, galois })
    }

    /// Bytes the keys hold in backend buffers ([`super::KeySwitchKey::resident_bytes`]).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.relin.as_ref().map_or(0, |k| k.resident_bytes(backend))
            + self.galois.values().map(|k| k.resident_bytes(backend)).sum::<u64>()
    }
}

/// Which evaluation keys a computation needs and the highest level it uses each at: the plan of
/// a key set generated at the levels where the keys are used ([`gen_planned_keys`]). A key at
/// level `l` holds the limbs of `q_0..q_l` and `P` of the digits that meet `q_0..q_l`
/// ([`super::KeySwitchKey::at_level`]) and switches ciphertexts at every level up to `l` with
/// the words of the top-level key.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct KeyPlan {
    /// Level of the relinearisation key (`None`: no relinearisation).
    pub relin: Option<usize>,
    /// Level of each Galois key, by Galois element.
    pub galois: BTreeMap<usize, usize>,
}

/// The storage form a key set is sized in ([`KeyPlan::resident_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStorage {
    /// `b` and `a` halves, one residue per word.
    Stored,
    /// `b` halves only, one residue per word ([`super::KeySwitchKey::seeded`]).
    Seeded,
    /// `b` halves only, bit-packed ([`super::KeySwitchKey::packed`]).
    SeededPacked,
}

impl KeyPlan {
    /// Every key at the top level: the plan of [`gen_evaluation_keys`] for `elements` (1 and
    /// duplicates skipped), with a relinearisation key.
    #[must_use]
    pub fn top(q_count: usize, elements: &[usize]) -> Self {
        let top = q_count.saturating_sub(1);
        Self { relin: Some(top), galois: elements.iter().filter(|&&g| g != 1).map(|&g| (g, top)).collect() }
    }

    /// Both plans' keys, each at the higher of its levels.
    pub fn merge(&mut self, other: &Self) {
        if let Some(l) = other.relin {
            self.relin = Some(self.relin.map_or(l, |m| m.max(l)));
        }
        for (&g, &l) in &other.galois {
            let m = self.galois.entry(g).or_insert(l);
            *m = (*m).max(l);
        }
    }

    /// The plan of the key switches a shape-backend run made with `keys` (generated on that
    /// backend): each key used, at the highest level it was used at; keys never used are left
    /// out. Errors: [`Error::KeyDimensions`] for a switch under a key that is not in `keys`.
    pub fn from_uses(keys: &EvaluationKeys<ShapeBackend>, uses: &[KeySwitchUse]) -> Result<Self> {
        let id = |k: &super::KeySwitchKey<ShapeBackend>| k.digits.first().map(|d| d.b.buffer().id());
        let relin = keys.relin.as_ref().and_then(|k| id(&k.0));
        let galois: HashMap<u64, usize> = keys.galois.iter().filter_map(|(&g, k)| id(&k.key).map(|i| (i, g))).collect();
        let mut plan = Self::default();
        for u in uses {
            if Some(u.key) == relin {
                plan.relin = Some(plan.relin.map_or(u.level, |l| l.max(u.level)));
            } else if let Some(&g) = galois.get(&u.key) {
                let l = plan.galois.entry(g).or_insert(u.level);
                *l = (*l).max(u.level);
            } else {
                return Err(Error::KeyDimensions { reason: "a key switch under a key outside the set" });
            }
        }
        Ok(plan)
    }

    /// Bytes the planned keys hold in `storage` over `ctx`, computed from shapes: per key at
    /// level `l`, per digit meeting `q_0..q_l`, the limbs of `q_0..q_l` and `P` (`N` words each,
    /// twice when stored; `ceil(N bits(q) / 32)` words packed), 4 bytes a word. These are the
    /// [`EvaluationKeys::resident_bytes`] of [`gen_planned_keys`]' keys in that form.
    pub fn resident_bytes(&self, ctx: &crate::ring::RingContext, storage: KeyStorage) -> Result<u64> {
        let params = ctx.params();
        let n = ctx.n() as u64;
        let key = |level: usize| -> Result<u64> {
            let basis = ctx.qp_basis(level)?;
            let digits = params.digits_at(level) as u64;
            let words: u64 = match storage {
                KeyStorage::Stored => 2 * basis.len() as u64 * n,
                KeyStorage::Seeded => basis.len() as u64 * n,
                KeyStorage::SeededPacked => buffer_words(ctx, &basis, Format::Packed)? as u64,
            };
            Ok(4 * digits * words)
        };
        let mut total = self.relin.map(key).transpose()?.unwrap_or(0);
        for &l in self.galois.values() {
            total += key(l)?;
        }
        Ok(total)
    }
}

/// The keys of `plan`, each generated at its planned level ([`gen_key_switch_key_at`]).
pub fn gen_planned_keys<B: Backend>(
    backend: &B,
    sk: &SecretKey<B>,
    plan: &KeyPlan,
    scale: NoiseScale,
) -> Result<EvaluationKeys<B>> {
    let relin = match plan.relin {
        Some(level) => {
            let s2 = sk.eval().mul(backend, sk.eval())?;
            Some(RelinKey(gen_key_switch_key_at(backend, &s2, sk, scale, level)?))
        }
        None => None,
    };
    let two_n = 2 * backend.context().n();
    let mut galois = HashMap::with_capacity(plan.galois.len());
    for (&g, &level) in &plan.galois {
        if g.is_multiple_of(2) || g >= two_n {
            return Err(Error::InvalidField { field: "galois element", reason: "must be odd and below 2N" });
        }
        let sg = sk.eval().automorphism(backend, g)?;
        galois.insert(g, GaloisKey { galois_element: g, key: gen_key_switch_key_at(backend, &sg, sk, scale, level)? });
    }
    Ok(EvaluationKeys { relin, galois })
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

/// HMULT's tensor product and relinearisation in one: [`relinearize`] of
/// `(a_0 b_0, a_0 b_1 + a_1 b_0, a_1 b_1)` with only `a_1 b_1` formed as a polynomial (it is
/// key-switched); `a_0 b_0` and `a_0 b_1 + a_1 b_0` are computed inside ModDown's last pass
/// from the operands, instead of being written by the tensor kernel and read back. The same
/// words as relinearising the tensor product (every step is exact modular arithmetic), about
/// two polynomials less traffic.
pub fn mul_relinearize<B: Backend>(
    backend: &B,
    a: [&RnsPoly<B, Eval>; 2],
    b: [&RnsPoly<B, Eval>; 2],
    keys: &EvaluationKeys<B>,
    t: Option<u32>,
) -> Result<PolyPair<B>> {
    use crate::backend::fused::{Expr, Operand};
    let rk = keys.relin.as_ref().ok_or(Error::MissingRelinKey)?;
    let basis = a[0].basis();
    if let Some(p) = [a[1], b[0], b[1]].into_iter().find(|p| p.basis() != basis) {
        return Err(Error::DimensionMismatch {
            what: "tensor operand bases differ",
            expected: a[0].limb_count(),
            found: p.limb_count(),
        });
    }
    let operands = [a[0], a[1], b[0], b[1]].into_iter().map(|p| Operand::words(p.buffer(), p.basis())).collect();
    // Loads 0..4: a_0, a_1, b_0, b_1.
    let d0 = Expr::mul(Expr::load(0), Expr::load(2));
    let d1 = Expr::Sum(vec![Expr::mul(Expr::load(0), Expr::load(3)), Expr::mul(Expr::load(1), Expr::load(2))]);
    let epilogue = Epilogue { operands, outputs: vec![(Some(d0), Format::Words), (Some(d1), Format::Words)] };
    // a_1 b_1 is formed by ModUp's inverse transform as it loads the operands.
    let c2 = InverseInput::Product(a[1].buffer(), b[1].buffer());
    let [o0, o1] = key_switch_formed(backend, c2, basis, &rk.0, t, epilogue)?;
    Ok((RnsPoly::from_buffer(backend, o0, basis.clone())?, RnsPoly::from_buffer(backend, o1, basis.clone())?))
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
    let gk = keys.galois_key(g, || what.to_string())?;
    let [c0, c1] = polys else {
        return Err(Error::CiphertextDegree { degree: polys.len().saturating_sub(1), expected: 1 });
    };
    // c_1(X^g) is formed by ModUp's inverse transform as it loads c_1; c_0(X^g) is added inside
    // ModDown's last pass, permuted there.
    let epilogue = Epilogue::addends([Some(Addend { poly: c0, galois: Some(g) }), None]);
    let [d0, d1] =
        key_switch_formed(backend, InverseInput::Automorphism(c1.buffer(), g), c1.basis(), &gk.key, t, epilogue)?;
    Ok((RnsPoly::from_buffer(backend, d0, c1.basis().clone())?, RnsPoly::from_buffer(backend, d1, c1.basis().clone())?))
}
