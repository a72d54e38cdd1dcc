//! The BGV scheme over the shared RLWE core.
//!
//! Ciphertexts encrypt `corr * m mod t`, where the *correction factor* `corr` is tracked per
//! ciphertext: with `u32` primes `q_i = 1 mod t` is impossible for useful `t`, so dropping a prime
//! `q` multiplies the plaintext by `q^-1 mod t` (OpenFHE's FLEXIBLEAUTO makes the same choice).
//! Decryption divides it out. Modulus switching drops as many primes as the noise estimate
//! allows ([`noise`]); one 30-bit prime is less than one BGV level needs.
//!
//! Entry point: [`Bgv`], which owns the backend, the encoder and the noise model, and offers key
//! generation, encryption, decryption and every homomorphic operation.

mod encoder;
mod eval;
mod evaluator;
pub mod noise;
mod prepared;
mod wire;

pub use crate::rlwe::{EvaluationKeys, KeyRequest};
pub use encoder::{Encoder, Plaintext};
pub use noise::{max_depth, NoiseModel};
pub use prepared::{PlaintextCache, PreparedPlaintext};

use std::sync::Arc;

use num_bigint::BigUint;
use num_traits::ToPrimitive;

use crate::backend::{Backend, CpuBackend, ShapeBackend};
use crate::error::{Error, Result};
use crate::math::rns::{for_each_coefficient, limbs_of, RnsBasis};
use crate::math::sampling::{Sampler, Seed};
use crate::math::zq::Modulus;
use crate::params::{Parameters, Scheme};
use crate::poly::{Coeff, Eval, RnsPoly};
use crate::ring::RingContext;
use crate::rlwe::{self, CiphertextCore, NoiseScale, PublicKey, SecretKey};

/// `log2(x)` of a big integer (0 for 0 and 1), exact to f64 precision at any size.
fn log2_big(x: &BigUint) -> Result<f64> {
    // The top 64 bits (all of them for a small `x`) and the number of bits below them.
    let shift = x.bits().saturating_sub(64);
    let top = u64::try_from(x >> shift).map_err(|_| Error::SizeOverflow { what: "top bits of a noise value" })?;
    Ok((top.max(1) as f64).log2() + shift as f64)
}

/// What [`Bgv::measure_noise`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseMeasurement {
    /// `log2 ||v||_inf`.
    pub infinity_log2: f64,
    /// `log2 ||v||^can`, the quantity the noise estimate bounds.
    pub canonical_log2: f64,
    /// `log2 Q_l`.
    pub modulus_log2: f64,
}

/// A BGV ciphertext: `(c_0, c_1[, c_2])` in the Eval domain over `q_0..q_level`, with its
/// correction factor and noise estimate.
#[derive(Debug)]
pub struct Ciphertext<B: Backend> {
    /// Polynomials, seed of an untouched `c_1` and parameter id.
    pub(crate) core: CiphertextCore<B>,
    /// Plaintext correction factor: the ciphertext encrypts `corr * m mod t`.
    pub(crate) correction: u32,
    /// Estimated `log2` of the canonical norm of `c_0 + c_1 s` (see [`noise`]).
    pub(crate) noise_log2: f64,
}

impl<B: Backend> Ciphertext<B> {
    /// Current level (index of the last prime of its modulus).
    #[must_use]
    pub fn level(&self) -> usize {
        self.core.level()
    }

    /// Degree (number of polynomials minus one).
    #[must_use]
    pub fn degree(&self) -> usize {
        self.core.degree()
    }

    /// Plaintext correction factor.
    #[must_use]
    pub fn correction_factor(&self) -> u32 {
        self.correction
    }

    /// Estimated `log2` of the noise bound.
    #[must_use]
    pub fn noise_estimate(&self) -> f64 {
        self.noise_log2
    }

    /// Whether `c_1` is still a seed (a fresh symmetric encryption).
    #[must_use]
    pub fn is_seeded(&self) -> bool {
        self.core.seed().is_some()
    }

    /// The polynomials.
    #[must_use]
    pub fn polys(&self) -> &[RnsPoly<B, Eval>] {
        self.core.polys()
    }

    /// Id of the parameters.
    #[must_use]
    pub fn param_id(&self) -> u64 {
        self.core.param_id()
    }

    /// A deep copy.
    pub fn duplicate(&self, backend: &B) -> Result<Self> {
        Ok(Self { core: self.core.duplicate(backend)?, correction: self.correction, noise_log2: self.noise_log2 })
    }
}

/// BGV over a backend: encoder, keys, encryption, decryption and evaluation.
///
/// # Example
///
/// Slot-wise arithmetic modulo `t = 65537` on the CPU backend, over an explicitly insecure
/// `N = 2^10` ring (fast; the shipped sets are [`crate::params::by_name`]):
///
/// ```
/// use wgfhe::bgv::{Bgv, KeyRequest};
/// use wgfhe::params::{self, TestRing};
///
/// let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537)?;
/// let bgv = Bgv::cpu(&p)?;
/// let sk = bgv.gen_secret_key_from_seed(&[1; 32])?;
/// // The relinearisation key and a Galois key for column rotations by one step.
/// let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
/// let enc = bgv.encoder();
/// let a = bgv.encrypt_symmetric(&sk, &enc.encode(&[1, 2, 3, 4])?)?;
/// let b = bgv.encrypt_symmetric(&sk, &enc.encode(&[5, 6, 7, 65536])?)?;
///
/// let prod = bgv.mul_relin(&a, &b, &keys)?;
/// // 4 * 65536 = 4 * (-1) = 65533 (mod 65537); unused slots stay 0.
/// assert_eq!(enc.decode(&bgv.decrypt(&sk, &prod)?)?[..5], [5, 12, 21, 65533, 0]);
/// let sum = bgv.add(&a, &b)?;
/// assert_eq!(enc.decode(&bgv.decrypt(&sk, &sum)?)?[..4], [6, 8, 10, 3]);
/// // A rotation by one column: slot k receives slot k + 1.
/// let rotated = bgv.rotate_columns(&a, 1, &keys)?;
/// assert_eq!(enc.decode(&bgv.decrypt(&sk, &rotated)?)?[..4], [2, 3, 4, 0]);
/// // Every operation consumed noise budget, none exhausted it.
/// assert!(bgv.noise_budget(&sk, &prod)? > 0.0);
/// # Ok::<(), wgfhe::Error>(())
/// ```
#[derive(Debug)]
pub struct Bgv<B: Backend> {
    backend: Arc<B>,
    t: Modulus,
    encoder: Encoder,
    noise: NoiseModel,
}

impl Bgv<ShapeBackend> {
    /// The plan of the evaluation keys a computation needs ([`rlwe::KeyPlan`]): `run` is
    /// called with a BGV instance of `params` on the shape-only backend ([`ShapeBackend`]), a
    /// secret key and the keys of `request`, all at the top level; the plan holds each key `run` switched under, at
    /// the highest level it did. Levels follow from shapes and the noise model, never from
    /// residues, so the plan is that of the same computation on any backend from inputs with
    /// the same noise estimates. Errors: those of `run`, and [`Error::KeyDimensions`] for a
    /// switch under a key outside the set.
    pub fn plan_keys(
        params: &Parameters,
        request: &KeyRequest,
        run: impl FnOnce(&Self, &SecretKey<ShapeBackend>, &EvaluationKeys<ShapeBackend>) -> Result<()>,
    ) -> Result<rlwe::KeyPlan> {
        let bgv = Self::new(ShapeBackend::new(RingContext::new(params)?))?;
        let sk = bgv.gen_secret_key_from_seed(&[0; 32])?;
        let keys = bgv.gen_evaluation_keys(&sk, request)?;
        let before = bgv.backend().key_switches().len();
        run(&bgv, &sk, &keys)?;
        let uses = bgv.backend().key_switches();
        rlwe::KeyPlan::from_uses(&keys, uses.get(before..).unwrap_or_default())
    }
}

impl Bgv<CpuBackend> {
    /// BGV on the CPU reference backend.
    pub fn cpu(params: &Parameters) -> Result<Self> {
        Self::new(CpuBackend::new(RingContext::new(params)?))
    }
}

impl<B: Backend> Bgv<B> {
    /// BGV on `backend` (its context must hold BGV parameters).
    pub fn new(backend: B) -> Result<Self> {
        let params = backend.context().params().clone();
        if params.scheme() != Scheme::Bgv {
            return Err(Error::SchemeMismatch { expected: "BGV", found: "CKKS" });
        }
        let t_value = params
            .plaintext_modulus()
            .ok_or(Error::InvalidParameters { reason: "BGV needs a plaintext modulus".into() })?;
        let t = Modulus::new(t_value)?;
        let encoder = Encoder::new(t, params.log_n(), params.id(), params.batching())?;
        let noise = NoiseModel::new(&params);
        Ok(Self { backend: Arc::new(backend), t, encoder, noise })
    }

    /// The backend.
    #[must_use]
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &Parameters {
        self.backend.context().params()
    }

    /// The encoder.
    #[must_use]
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// The noise model.
    #[must_use]
    pub fn noise_model(&self) -> &NoiseModel {
        &self.noise
    }

    /// The plaintext modulus.
    #[must_use]
    pub fn plaintext_modulus(&self) -> u32 {
        self.t.value()
    }

    /// Highest level of the chain.
    #[must_use]
    pub fn max_level(&self) -> usize {
        self.params().q().len() - 1
    }

    /// The correction factor of level `level`: `prod_{i > level} q_i^-1 mod t`, what switching
    /// a top-level ciphertext down to `level` multiplies into its plaintext. Fresh encryptions at
    /// a lower level use it too, so ciphertexts at one level add without realignment.
    pub fn level_correction(&self, level: usize) -> Result<u32> {
        let q = self.params().q();
        if level >= q.len() {
            return Err(Error::LevelOutOfRange { level, max: q.len() - 1 });
        }
        q.iter().skip(level + 1).try_fold(1 % self.t.value(), |acc, m| {
            let inv = self.t.inv(self.t.reduce_u32(m.value())).ok_or(Error::InvalidPlaintextModulus {
                t: u64::from(self.t.value()),
                reason: "not coprime to a chain prime",
            })?;
            Ok(self.t.mul(acc, inv))
        })
    }

    pub(crate) fn scale(&self) -> NoiseScale {
        NoiseScale(self.t.value())
    }

    pub(crate) fn check_ct(&self, ct: &Ciphertext<B>) -> Result<()> {
        ct.core.check_params(self.backend())
    }

    // ---- keys -----------------------------------------------------------------------------

    /// A fresh secret key (randomness from the operating system).
    pub fn gen_secret_key(&self) -> Result<SecretKey<B>> {
        rlwe::gen_secret_key(self.backend(), None)
    }

    /// A secret key whose randomness (and all seeds and errors it later draws) derives from
    /// `master`: for reproducible runs and backend-equivalence tests only. Never use it for real
    /// data: two key instances made from one master seed draw the same seeds and errors, so two
    /// ciphertexts of different messages under them differ by exactly `m - m'`.
    pub fn gen_secret_key_from_seed(&self, master: &Seed) -> Result<SecretKey<B>> {
        rlwe::gen_secret_key(self.backend(), Some(master))
    }

    /// A public key.
    pub fn gen_public_key(&self, sk: &SecretKey<B>) -> Result<PublicKey<B>> {
        rlwe::gen_public_key(self.backend(), sk, self.scale())
    }

    // ---- encryption -----------------------------------------------------------------------

    /// The plaintext `factor * m`, centred mod t and lifted to `q_0..q_level`, in the Eval domain.
    pub(crate) fn lift(&self, pt: &Plaintext, factor: u32, level: usize) -> Result<RnsPoly<B, Eval>> {
        if pt.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: pt.param_id });
        }
        let ctx = self.backend.context();
        let centred: Vec<i64> = pt.coeffs.iter().map(|&c| self.t.center(self.t.mul(c, factor))).collect();
        RnsPoly::<B, Coeff>::from_signed(self.backend(), &centred, ctx.q_basis(level)?)?.into_eval(self.backend())
    }

    /// `log2` of the canonical norm of `factor * m` (centred mod t): the exact size of the
    /// plaintext term an operation adds, used by the noise estimates.
    pub(crate) fn plain_norm_log2(&self, pt: &Plaintext, factor: u32) -> f64 {
        let centred: Vec<f64> = pt.coeffs.iter().map(|&c| self.t.center(self.t.mul(c, factor)) as f64).collect();
        noise::canonical_norm_log2(&centred)
    }

    /// Symmetric encryption at the top level with a fresh seed; `c_1` stays a seed on the wire.
    pub fn encrypt_symmetric(&self, sk: &SecretKey<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.encrypt_symmetric_at(sk, pt, self.max_level())
    }

    /// Symmetric encryption at `level` with a fresh seed (never used before under this key).
    pub fn encrypt_symmetric_at(&self, sk: &SecretKey<B>, pt: &Plaintext, level: usize) -> Result<Ciphertext<B>> {
        let correction = self.level_correction(level)?;
        let msg = self.lift(pt, correction, level)?;
        Ok(Ciphertext {
            core: CiphertextCore::encrypt_symmetric(self.backend(), sk, &msg, self.scale())?,
            correction,
            noise_log2: self.noise.fresh_secret(self.plain_norm_log2(pt, correction)),
        })
    }

    /// Public-key encryption at the top level, randomness from the operating system.
    pub fn encrypt_public(&self, pk: &PublicKey<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.encrypt_public_with_rng(pk, pt, &mut Sampler::fresh()?)
    }

    /// Public-key encryption at the top level with the randomness of `rng`. Deterministic for
    /// a seeded sampler: for reproducible tests only. Two encryptions with the same sampler
    /// state share `u`, `e_0`, `e_1`, and their difference reveals `m - m'`.
    pub fn encrypt_public_with_rng(
        &self,
        pk: &PublicKey<B>,
        pt: &Plaintext,
        rng: &mut Sampler,
    ) -> Result<Ciphertext<B>> {
        let msg = self.lift(pt, 1, self.max_level())?;
        Ok(Ciphertext {
            core: CiphertextCore::encrypt_public(self.backend(), pk, &msg, self.scale(), rng)?,
            correction: 1,
            noise_log2: self.noise.fresh_public(self.plain_norm_log2(pt, 1)),
        })
    }

    // ---- decryption -----------------------------------------------------------------------

    /// `c_0 + c_1 s (+ c_2 s^2)` in coefficients, on the host.
    fn raw_decrypt(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<Vec<u32>> {
        ct.core.decrypt_to_host(self.backend(), sk)
    }

    /// Decrypts to the plaintext `m` (correction factor removed).
    pub fn decrypt(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<Plaintext> {
        let level = ct.level();
        let residues = self.raw_decrypt(sk, ct)?;
        let ctx = self.backend.context();
        let n = ctx.n();
        let moduli: Vec<Modulus> = ctx.moduli_of(&ctx.q_basis(level)?)?;
        // Centred CRT reduced mod t: v = sum_i y_i Qhat_i - k Q with y_i = [x_i Qhat_i^-1]_{q_i}
        // and k = round(sum_i y_i / q_i); then v mod t needs only Qhat_i mod t and Q mod t.
        let t = u64::from(self.t.value());
        let basis = RnsBasis::new(&moduli)?;
        // prod_{j != skip} q_j mod t.
        let product_mod_t = |skip: Option<usize>| {
            moduli
                .iter()
                .enumerate()
                .filter(|&(j, _)| Some(j) != skip)
                .fold(1 % self.t.value(), |acc, (_, m)| self.t.mul(acc, self.t.reduce_u32(m.value())))
        };
        // Per limb: Qhat_i^-1 mod q_i with its Shoup companion, and Qhat_i mod t.
        let per_limb: Vec<(u32, u32, u64)> = moduli
            .iter()
            .zip(basis.qhat_inv())
            .enumerate()
            .map(|(i, (m, &inv))| (inv, m.shoup(inv), u64::from(product_mod_t(Some(i)))))
            .collect();
        let q_mod_t = u64::from(product_mod_t(None));
        let corr_inv =
            self.t.inv(ct.correction).ok_or(Error::InvalidCorrectionFactor { factor: u64::from(ct.correction), t })?;
        // Limb by limb, every coefficient: sum_i y_i / q_i and sum_i y_i Qhat_i mod t.
        let mut frac = vec![0.0f64; n];
        let mut acc = vec![0u64; n];
        for (row, (m, &(w, ws, qhat_mod_t))) in limbs_of(&residues, moduli.len(), n)?.zip(moduli.iter().zip(&per_limb))
        {
            for ((&x, f), a) in row.iter().zip(frac.iter_mut()).zip(acc.iter_mut()) {
                let y = m.mul_shoup(x, w, ws);
                *f += f64::from(y) / f64::from(m.value());
                *a = (*a + u64::from(y) * qhat_mod_t) % t;
            }
        }
        let coeffs = frac
            .iter()
            .zip(&acc)
            .map(|(&f, &a)| {
                let k = f.round() as u64 % t;
                let v = (a + t - k * q_mod_t % t) % t;
                self.t.mul(v as u32, corr_inv)
            })
            .collect();
        Ok(Plaintext { coeffs, param_id: self.params().id() })
    }

    /// Measures `v = c_0 + c_1 s (+ c_2 s^2)` with the secret key: `log2` of its infinity and
    /// canonical norms. For tests and diagnostics only (see [`Bgv::noise_budget`]).
    pub fn measure_noise(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<NoiseMeasurement> {
        let level = ct.level();
        let residues = self.raw_decrypt(sk, ct)?;
        let ctx = self.backend.context();
        let n = ctx.n();
        let moduli = ctx.moduli_of(&ctx.q_basis(level)?)?;
        let basis = RnsBasis::new(&moduli)?;
        let mut values = Vec::with_capacity(n);
        for_each_coefficient(&residues, moduli.len(), n, |column| {
            values.push(basis.reconstruct_centered(column)?);
            Ok(())
        })?;
        let max_bits = values.iter().map(|v| v.magnitude().bits()).max().unwrap_or(0);
        // Scale down so every value converts to f64 without overflow.
        let shift = max_bits.saturating_sub(900);
        let scaled: Vec<f64> = values
            .iter()
            .map(|v| (v >> shift).to_f64().ok_or(Error::SizeOverflow { what: "noise value as f64" }))
            .collect::<Result<_>>()?;
        let inf =
            values.iter().map(|v| log2_big(v.magnitude())).try_fold(0.0, |m, l| Ok::<_, Error>(f64::max(m, l?)))?;
        Ok(NoiseMeasurement {
            infinity_log2: inf,
            canonical_log2: noise::canonical_norm_log2(&scaled) + shift as f64,
            modulus_log2: basis.log2_product(),
        })
    }

    /// Remaining noise budget in bits: `log2(Q_l / 2) - log2 ||c_0 + c_1 s||_inf`, measured with
    /// the secret key. For tests and diagnostics only: it reveals information about the noise,
    /// so library code never calls it on untrusted ciphertexts.
    pub fn noise_budget(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<f64> {
        let m = self.measure_noise(sk, ct)?;
        Ok(m.modulus_log2 - 1.0 - m.infinity_log2)
    }
}
