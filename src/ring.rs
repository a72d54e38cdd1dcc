//! The ring context: every prime of a parameter set and the tables built from them.
//!
//! A [`RingContext`] owns every prime of a parameter set (the ciphertext chain `q_0..q_L`
//! followed by the special primes `p_0..p_{k-1}`), one NTT table per prime, and caches of the
//! precomputed tables of basis conversions, divide-and-round and Galois permutations. Primes are
//! addressed by their *global index* in that list, and a polynomial's basis is a [`Basis`]: the
//! ordered list of global indices of its limbs.
//!
//! This layer sits below [`crate::backend`]: the backends need the context to run their kernels,
//! and the polynomials of [`crate::poly`] (which need a backend) sit above both.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::math::ntt::{automorphism_permutation, NttTable};
use crate::math::rns::{BaseConverter, ScaleDown};
use crate::math::rounding::{Rounding, RoundingCorrection};
use crate::math::zq::Modulus;
use crate::params::Parameters;

/// Ordered global indices of the primes a polynomial's limbs are reduced by.
pub type Basis = Arc<[usize]>;

/// Key of a cached basis-conversion table.
type PairKey = (Vec<usize>, Vec<usize>, Option<u32>);

/// Everything about the ring that kernels need: primes, NTT tables, conversion tables.
#[derive(Debug)]
pub struct RingContext {
    params: Parameters,
    moduli: Vec<Modulus>,
    ntt: Vec<NttTable>,
    converters: Mutex<HashMap<PairKey, Arc<BaseConverter>>>,
    scale_downs: Mutex<HashMap<PairKey, Arc<ScaleDown>>>,
    corrections: Mutex<HashMap<(PairKey, Rounding), Arc<RoundingCorrection>>>,
    galois: Mutex<HashMap<usize, Arc<Vec<u32>>>>,
}

impl RingContext {
    /// Builds the context (NTT tables for every prime of the chain and the special primes).
    pub fn new(params: &Parameters) -> Result<Arc<Self>> {
        let moduli: Vec<Modulus> = params.q().iter().chain(params.p().iter()).copied().collect();
        let ntt = moduli.iter().map(|m| NttTable::new(*m, params.n())).collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(Self {
            params: params.clone(),
            moduli,
            ntt,
            converters: Mutex::new(HashMap::new()),
            scale_downs: Mutex::new(HashMap::new()),
            corrections: Mutex::new(HashMap::new()),
            galois: Mutex::new(HashMap::new()),
        }))
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &Parameters {
        &self.params
    }

    /// Ring degree N.
    #[must_use]
    pub fn n(&self) -> usize {
        self.params.n()
    }

    /// Number of ciphertext primes (`L + 1`).
    #[must_use]
    pub fn q_count(&self) -> usize {
        self.params.q().len()
    }

    /// Number of special primes.
    #[must_use]
    pub fn p_count(&self) -> usize {
        self.params.p().len()
    }

    /// Modulus of a global index.
    pub fn modulus(&self, index: usize) -> Result<&Modulus> {
        self.moduli.get(index).ok_or(Error::LevelOutOfRange { level: index, max: self.moduli.len().saturating_sub(1) })
    }

    /// Moduli of a basis.
    pub fn moduli_of(&self, basis: &[usize]) -> Result<Vec<Modulus>> {
        basis.iter().map(|&i| self.modulus(i).copied()).collect()
    }

    /// NTT table of a global index.
    pub fn ntt_table(&self, index: usize) -> Result<&NttTable> {
        self.ntt.get(index).ok_or(Error::LevelOutOfRange { level: index, max: self.ntt.len().saturating_sub(1) })
    }

    /// Basis `q_0..q_level`.
    pub fn q_basis(&self, level: usize) -> Result<Basis> {
        if level >= self.q_count() {
            return Err(Error::LevelOutOfRange { level, max: self.q_count().saturating_sub(1) });
        }
        Ok((0..=level).collect())
    }

    /// Basis of the special primes `p_0..p_{k-1}`.
    #[must_use]
    pub fn p_basis(&self) -> Basis {
        (self.q_count()..self.q_count() + self.p_count()).collect()
    }

    /// Basis `q_0..q_level, p_0..p_{k-1}`.
    pub fn qp_basis(&self, level: usize) -> Result<Basis> {
        let q = self.q_basis(level)?;
        Ok(q.iter().copied().chain(self.p_basis().iter().copied()).collect())
    }

    /// Cached fast base converter between two bases.
    pub fn converter(&self, from: &[usize], to: &[usize]) -> Result<Arc<BaseConverter>> {
        let key = (from.to_vec(), to.to_vec(), None);
        let mut cache = self.converters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.get(&key) {
            return Ok(Arc::clone(c));
        }
        let conv = Arc::new(BaseConverter::new(&self.moduli_of(from)?, &self.moduli_of(to)?)?);
        cache.insert(key, Arc::clone(&conv));
        Ok(conv)
    }

    /// Cached divide-and-round table (`keep`, `drop`, optional plaintext modulus).
    pub fn scale_down(&self, keep: &[usize], drop: &[usize], t: Option<u32>) -> Result<Arc<ScaleDown>> {
        let key = (keep.to_vec(), drop.to_vec(), t);
        let mut cache = self.scale_downs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.get(&key) {
            return Ok(Arc::clone(c));
        }
        let sd = Arc::new(ScaleDown::new(&self.moduli_of(keep)?, &self.moduli_of(drop)?, t)?);
        cache.insert(key, Arc::clone(&sd));
        Ok(sd)
    }

    /// Cached tables of the divide-and-round correction (`keep`, `drop`, optional plaintext
    /// modulus, rounding; see [`crate::math::rounding`]).
    pub fn rounding_correction(
        &self,
        keep: &[usize],
        drop: &[usize],
        t: Option<u32>,
        rounding: Rounding,
    ) -> Result<Arc<RoundingCorrection>> {
        let key = ((keep.to_vec(), drop.to_vec(), t), rounding);
        let mut cache = self.corrections.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.get(&key) {
            return Ok(Arc::clone(c));
        }
        let rc = Arc::new(RoundingCorrection::new(&self.moduli_of(keep)?, &self.moduli_of(drop)?, t, rounding)?);
        cache.insert(key, Arc::clone(&rc));
        Ok(rc)
    }

    /// Cached Eval-domain permutation of the automorphism `X -> X^g`.
    pub fn galois_permutation(&self, g: usize) -> Result<Arc<Vec<u32>>> {
        let mut cache = self.galois.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = cache.get(&g) {
            return Ok(Arc::clone(p));
        }
        let perm = Arc::new(automorphism_permutation(g, self.params.log_n())?);
        cache.insert(g, Arc::clone(&perm));
        Ok(perm)
    }
}

/// Positions of the elements of `sub` within `basis`.
pub fn positions_in(basis: &[usize], sub: &[usize]) -> Result<Vec<usize>> {
    sub.iter()
        .map(|s| {
            basis.iter().position(|b| b == s).ok_or(Error::DimensionMismatch {
                what: "limb not in basis",
                expected: basis.len(),
                found: *s,
            })
        })
        .collect()
}
