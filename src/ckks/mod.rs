//! The CKKS scheme over the shared RLWE core.
//!
//! Messages are complex vectors in `N/2` slots (fewer with sparse packing), encoded by the
//! canonical embedding ([`encoder`]) at a scale `Delta`; every error term is unscaled
//! ([`NoiseScale`] 1). Ciphertexts track their exact scale as an `f64`.
//!
//! # Scaling with `u32` primes
//! One prime is below `2^30`, so one rescale divides by about `2^30`. Two [`ScalePolicy`]s share
//! a prime chain:
//! * [`ScalePolicy::Single`]: `Delta ~ 2^30`, one prime per level, for ML inference. The scale
//!   drifts as `Delta_{l-1} = Delta_l^2 / q_l` (tracked exactly). About 16-19 bits of precision.
//! * [`ScalePolicy::Double`]: `Delta ~ 2^60`, rescale by the product of two primes per level,
//!   about 40 or more bits of precision (near the `f64` encoder's 53-bit limit), half the depth.
//!
//! In both, the base modulus (the lowest [`ScalePolicy::base_primes`] primes, about 30 bits above
//! the scale) holds the final message: a ciphertext decrypts while `|m| Delta` stays below it.
//!
//! # Levels and scales
//! Binary operations need operands at the same level and scale ([`Error::LevelMismatch`],
//! [`Error::ScaleMismatch`]); [`Ckks::drop_to_level`] aligns levels explicitly (dropping primes
//! without dividing keeps the value). Rescaling at the base is [`Error::DepthExhausted`].
//!
//! # Decryption for untrusted parties (IND-CPA-D)
//! A CKKS decryption returns the message *plus the noise*, which depends on the secret key: Li
//! and Micciancio (EUROCRYPT 2021) showed that publishing decryptions lets an attacker recover
//! the key. [`Ckks::decrypt_flooded`] adds fresh Gaussian noise of a chosen width to the
//! decryption before decoding (noise flooding), which hides the ciphertext noise when the
//! flooding is about `2^(s/2)` times larger than the noise for `s` bits of statistical
//! security, at the cost of the same number of bits of precision. It is off by default
//! ([`Ckks::decrypt`]): use it whenever a decryption leaves the secret-key holder.

pub mod bootstrap;
pub mod chebyshev;
pub mod encoder;
mod eval;
pub mod evalmod;
pub mod linear;
mod modraise;
pub mod precision;
mod prepared;
pub mod sparse;
mod wire;

pub use crate::rlwe::KeyRequest;
pub use bootstrap::{BootConfig, BootKeys, BootStage, Bootstrapper};
pub use chebyshev::ChebyshevSeries;
pub use encoder::Encoder;
pub use evalmod::{failure_probability, EvalModParams};
pub use linear::{BootTransforms, LinearTransform};
pub use precision::{precision_stats, PrecisionStats};
pub use prepared::PreparedPlaintext;

use std::sync::Arc;

use num_bigint::BigInt;
use num_complex::Complex64;
use num_traits::ToPrimitive;
use rand::RngCore;

use crate::backend::{Backend, CpuBackend};
use crate::error::{Error, Result};
use crate::math::rns::{for_each_coefficient, RnsBasis};
use crate::math::sampling::{Sampler, Seed};
use crate::params::{Parameters, Scheme};
use crate::poly::{Coeff, Eval, RnsPoly};
use crate::ring::RingContext;
use crate::rlwe::{self, CiphertextCore, EvaluationKeys, GaloisKey, NoiseScale, PublicKey, RelinKey, SecretKey};

/// How many primes one rescale drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalePolicy {
    /// `Delta ~ 2^30`: one prime per level.
    Single,
    /// `Delta ~ 2^60`: the product of two primes per level.
    Double,
}

impl ScalePolicy {
    /// Primes dropped by one rescale.
    #[must_use]
    pub const fn primes_per_level(self) -> usize {
        match self {
            Self::Single => 1,
            Self::Double => 2,
        }
    }

    /// The policy's name, as errors give it ([`Error::ScalePolicyMismatch`]).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Single => "Single",
            Self::Double => "Double",
        }
    }

    /// Primes kept at the base of the chain to hold the final message: about 30 bits above
    /// the scale (2 primes for `Delta ~ 2^30`, 3 for `Delta ~ 2^60`).
    #[must_use]
    pub const fn base_primes(self) -> usize {
        match self {
            Self::Single => 2,
            Self::Double => 3,
        }
    }
}
/// Bits of message magnitude above the scale that decryption reconstructs.
pub const DECODE_HEADROOM_BITS: f64 = 40.0;
/// Relative tolerance within which two scales count as equal.
const SCALE_TOLERANCE: f64 = 1e-9;

/// The depth (number of rescales from the top level) of a CKKS parameter set under a policy.
#[must_use]
pub fn max_depth(params: &Parameters, policy: ScalePolicy) -> usize {
    params.q().len().saturating_sub(policy.base_primes()) / policy.primes_per_level()
}

/// An encoded CKKS plaintext: integer coefficients at a scale, for a level.
#[derive(Clone, PartialEq)]
pub struct Plaintext {
    coeffs: Vec<i128>,
    scale: f64,
    slots: usize,
    level: usize,
    param_id: u64,
}

impl std::fmt::Debug for Plaintext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plaintext")
            .field("scale_log2", &self.scale.log2())
            .field("slots", &self.slots)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl Plaintext {
    /// The scale.
    #[must_use]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The number of slots.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The level it was encoded for.
    #[must_use]
    pub fn level(&self) -> usize {
        self.level
    }
}

/// A CKKS ciphertext: `(c_0, c_1[, c_2])` in the Eval domain over `q_0..q_level`, with its
/// exact scale and slot count.
#[derive(Debug)]
pub struct Ciphertext<B: Backend> {
    /// Polynomials, seed of an untouched `c_1` and parameter id.
    core: CiphertextCore<B>,
    scale: f64,
    slots: usize,
}

impl<B: Backend> Ciphertext<B> {
    /// A deep copy on `backend` (same words, level, scale and seed).
    pub(crate) fn duplicate(&self, backend: &B) -> Result<Self> {
        Ok(self.with(self.core.duplicate(backend)?, self.scale))
    }

    /// Current level.
    #[must_use]
    pub fn level(&self) -> usize {
        self.core.level()
    }

    /// Degree (number of polynomials minus one).
    #[must_use]
    pub fn degree(&self) -> usize {
        self.core.degree()
    }

    /// The exact scale.
    #[must_use]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The number of slots.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Whether `c_1` is still the seed of a fresh symmetric encryption.
    #[must_use]
    pub fn is_seeded(&self) -> bool {
        self.core.seed().is_some()
    }

    /// The polynomials.
    #[must_use]
    pub fn polys(&self) -> &[RnsPoly<B, Eval>] {
        self.core.polys()
    }

    /// A ciphertext with this one's slot count around `core`, at `scale`.
    fn with(&self, core: CiphertextCore<B>, scale: f64) -> Self {
        Self { core, scale, slots: self.slots }
    }
}

/// CKKS over a backend: encoder, keys, encryption, decryption and evaluation.
///
/// # Example
///
/// Approximate arithmetic at scale `2^30` on the CPU backend, over an explicitly insecure
/// `N = 2^10` ring (fast; the shipped sets are [`crate::params::by_name`]):
///
/// ```
/// use wgfhe::ckks::{Ckks, KeyRequest, ScalePolicy};
/// use wgfhe::params::{self, TestRing};
///
/// let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30)?;
/// let ckks = Ckks::cpu(&p, ScalePolicy::Single)?;
/// let sk = ckks.gen_secret_key_from_seed(&[1; 32])?;
/// // The relinearisation key and a Galois key for rotations by one slot (no conjugation key).
/// let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
/// let x = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&[0.5, -0.25, 1.5, 2.0])?)?;
///
/// // x^2, rescaled by one prime: one level lower.
/// let square = ckks.rescale(&ckks.mul_relin(&x, &x, &keys)?)?;
/// assert_eq!(square.level(), x.level() - 1);
/// let got = ckks.decrypt(&sk, &square)?;
/// for (z, want) in got.iter().zip([0.25, 0.0625, 2.25, 4.0]) {
///     assert!((z.re - want).abs() < 1e-3 && z.im.abs() < 1e-3, "{z} vs {want}");
/// }
/// // A rotation by one slot (of the 4 encoded).
/// let rotated = ckks.decrypt(&sk, &ckks.rotate(&x, 1, &keys)?)?;
/// for (z, want) in rotated.iter().zip([-0.25, 1.5, 2.0, 0.5]) {
///     assert!((z.re - want).abs() < 1e-3, "{z} vs {want}");
/// }
/// # Ok::<(), wgfhe::Error>(())
/// ```
#[derive(Debug)]
pub struct Ckks<B: Backend> {
    backend: Arc<B>,
    encoder: Encoder,
    policy: ScalePolicy,
}

impl Ckks<CpuBackend> {
    /// CKKS on the CPU reference backend.
    pub fn cpu(params: &Parameters, policy: ScalePolicy) -> Result<Self> {
        Self::new(CpuBackend::new(RingContext::new(params)?), policy)
    }
}

impl<B: Backend> Ckks<B> {
    /// CKKS on `backend` (its context must hold CKKS parameters). Errors: parameters of
    /// another scheme ([`Error::SchemeMismatch`]), a chain whose top level cannot be rescaled
    /// under `policy` (fewer than [`ScalePolicy::base_primes`] +
    /// [`ScalePolicy::primes_per_level`] primes: [`Error::DepthExhausted`] at the top level).
    pub fn new(backend: B, policy: ScalePolicy) -> Result<Self> {
        let params = backend.context().params().clone();
        if params.scheme() != Scheme::Ckks {
            return Err(Error::SchemeMismatch { expected: "CKKS", found: params.scheme().name() });
        }
        if params.q().len() < policy.base_primes() + policy.primes_per_level() {
            return Err(Error::DepthExhausted { level: params.max_level(), wanted: policy.primes_per_level() });
        }
        let encoder = Encoder::new(params.log_n())?;
        Ok(Self { backend: Arc::new(backend), encoder, policy })
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

    /// The scale policy.
    #[must_use]
    pub fn policy(&self) -> ScalePolicy {
        self.policy
    }

    /// The encoder.
    #[must_use]
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
    }

    /// Highest level.
    #[must_use]
    pub fn max_level(&self) -> usize {
        self.params().q().len() - 1
    }

    /// The depth under this policy.
    #[must_use]
    pub fn max_depth(&self) -> usize {
        max_depth(self.params(), self.policy)
    }

    /// The default scale of a fresh top-level ciphertext: the divisor of its first rescale (the
    /// top prime, or the top two), about `2^30` (single) or `2^60` (double). Starting exactly at
    /// the divisor keeps the drift `Delta_{l-1} = Delta_l^2 / q_l` to the gaps between primes;
    /// a power of two above every prime would double its excess at every squaring (at
    /// `N = 2^16`: `2^30` becomes `2^144` after ten squarings).
    #[must_use]
    pub fn default_scale(&self) -> f64 {
        self.next_rescale_divisor(self.max_level()).unwrap_or_else(|_| {
            let log_scale = self.params().log_scale().unwrap_or(30);
            f64::from(log_scale * self.policy.primes_per_level() as u32).exp2()
        })
    }

    fn log_q_at(&self, level: usize) -> f64 {
        self.params().q().iter().take(level + 1).map(|m| f64::from(m.value()).log2()).sum()
    }

    fn check_ct(&self, ct: &Ciphertext<B>) -> Result<()> {
        ct.core.check_params(self.backend())
    }

    // ---- encoding ---------------------------------------------------------------------------

    /// Encodes complex values into `slots` slots at `scale` for `level`. The scaled coefficients
    /// must fit the modulus of that level ([`Error::EncodingOverflow`]); decryption recovers
    /// messages up to `2^DECODE_HEADROOM_BITS` in magnitude.
    pub fn encode(&self, values: &[Complex64], scale: f64, slots: usize, level: usize) -> Result<Plaintext> {
        if level > self.max_level() {
            return Err(Error::LevelOutOfRange { level, max: self.max_level() });
        }
        let coeffs = self.encoder.encode(values, scale, slots)?;
        let limit = self.log_q_at(level) - 2.0;
        if let Some((index, c)) = coeffs.iter().enumerate().find(|(_, c)| (c.unsigned_abs() as f64).log2() >= limit) {
            return Err(Error::EncodingOverflow {
                index,
                value_log2: (c.unsigned_abs() as f64).log2(),
                limit_log2: limit,
            });
        }
        Ok(Plaintext { coeffs, scale, slots, level, param_id: self.params().id() })
    }

    /// Encodes real values at the default scale for the top level, in the fewest slots
    /// (a power of two) that hold them.
    pub fn encode_real(&self, values: &[f64]) -> Result<Plaintext> {
        let slots = values.len().max(1).next_power_of_two().min(self.encoder.max_slots());
        let complex: Vec<Complex64> = values.iter().map(|&v| Complex64::new(v, 0.0)).collect();
        self.encode(&complex, self.default_scale(), slots, self.max_level())
    }

    fn lift(&self, pt: &Plaintext, level: usize) -> Result<RnsPoly<B, Eval>> {
        if pt.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: pt.param_id });
        }
        let ctx = self.backend.context();
        let basis = ctx.q_basis(level)?;
        let n = ctx.n();
        let mut host = Vec::with_capacity(basis.len() * n);
        for &i in basis.iter() {
            let q = i128::from(ctx.modulus(i)?.value());
            host.extend(pt.coeffs.iter().map(|&c| c.rem_euclid(q) as u32));
        }
        RnsPoly::<B, Coeff>::from_buffer(self.backend(), self.backend.upload(&host)?, basis)?.into_eval(self.backend())
    }

    // ---- keys -------------------------------------------------------------------------------

    /// A fresh secret key (randomness from the operating system).
    pub fn gen_secret_key(&self) -> Result<SecretKey<B>> {
        rlwe::gen_secret_key(self.backend(), None)
    }

    /// A secret key derived from `master`: for reproducible tests only (see
    /// [`crate::bgv::Bgv::gen_secret_key_from_seed`] for why never for real data).
    pub fn gen_secret_key_from_seed(&self, master: &Seed) -> Result<SecretKey<B>> {
        rlwe::gen_secret_key(self.backend(), Some(master))
    }

    /// A public key.
    pub fn gen_public_key(&self, sk: &SecretKey<B>) -> Result<PublicKey<B>> {
        rlwe::gen_public_key(self.backend(), sk, NoiseScale(1))
    }

    /// The relinearisation key.
    pub fn gen_relin_key(&self, sk: &SecretKey<B>) -> Result<RelinKey<B>> {
        rlwe::gen_relin_key(self.backend(), sk, NoiseScale(1))
    }

    /// The Galois element of a left rotation by `steps` slots (`5^steps mod 2N`).
    #[must_use]
    pub fn rotation_element(&self, steps: i64) -> usize {
        rlwe::galois_element(5, steps, self.params().n())
    }

    /// The Galois element of complex conjugation (`2N - 1`).
    #[must_use]
    pub fn conjugation_element(&self) -> usize {
        2 * self.params().n() - 1
    }

    /// The Galois key of `X -> X^g`.
    pub fn gen_galois_key(&self, sk: &SecretKey<B>, g: usize) -> Result<GaloisKey<B>> {
        rlwe::gen_galois_key(self.backend(), sk, g, NoiseScale(1))
    }

    /// Relinearisation key plus the rotation keys of `request` and, if it asks, conjugation.
    pub fn gen_evaluation_keys(&self, sk: &SecretKey<B>, request: &KeyRequest) -> Result<EvaluationKeys<B>> {
        let mut elements: Vec<usize> = request.rotation_steps().iter().map(|&s| self.rotation_element(s)).collect();
        if request.includes_swap() {
            elements.push(self.conjugation_element());
        }
        rlwe::gen_evaluation_keys(self.backend(), sk, &elements, NoiseScale(1))
    }

    // ---- encryption and decryption -------------------------------------------------------------

    /// Symmetric encryption (seeded `c_1`) at the plaintext's level.
    pub fn encrypt_symmetric(&self, sk: &SecretKey<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        let msg = self.lift(pt, pt.level)?;
        let core = CiphertextCore::encrypt_symmetric(self.backend(), sk, &msg, NoiseScale(1))?;
        Ok(Ciphertext { core, scale: pt.scale, slots: pt.slots })
    }

    /// Public-key encryption at the plaintext's level, randomness from the operating system.
    pub fn encrypt_public(&self, pk: &PublicKey<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        let msg = self.lift(pt, pt.level)?;
        let core = CiphertextCore::encrypt_public(self.backend(), pk, &msg, NoiseScale(1), &mut Sampler::fresh()?)?;
        Ok(Ciphertext { core, scale: pt.scale, slots: pt.slots })
    }

    /// `c_0 + c_1 s (+ c_2 s^2)` as centred integers (as `f64`), reconstructed from the fewest
    /// primes whose product exceeds the scale by [`DECODE_HEADROOM_BITS`] (at least the base
    /// primes): exact while `|m| < 2^DECODE_HEADROOM_BITS`.
    fn raw_decrypt(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<Vec<f64>> {
        let be = self.backend();
        let v = ct.core.decrypt_to_host(be, sk)?;
        let ctx = be.context();
        let n = ctx.n();
        let need = ct.scale.log2() + DECODE_HEADROOM_BITS;
        let keep = (self.policy.base_primes()..=ct.level() + 1)
            .find(|&k| self.log_q_at(k - 1) > need)
            .unwrap_or(ct.level() + 1)
            .min(ct.level() + 1);
        let basis = RnsBasis::new(&ctx.moduli_of(&ctx.q_basis(keep - 1)?)?)?;
        let mut out = Vec::with_capacity(n);
        for_each_coefficient(&v, keep, n, |column| {
            let c: BigInt = basis.reconstruct_centered(column)?;
            out.push(c.to_f64().ok_or(Error::SizeOverflow { what: "decrypted coefficient as f64" })?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Decrypts and decodes (no noise flooding: see the module docs before sharing the result).
    pub fn decrypt(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<Vec<Complex64>> {
        let v = self.raw_decrypt(sk, ct)?;
        self.encoder.decode(&v, ct.scale, ct.slots)
    }

    /// Decrypts with noise flooding: adds to every coefficient fresh Gaussian noise of standard
    /// deviation `2^flood_log2` (drawn from the operating system's randomness) before decoding.
    /// Choose `flood_log2` about `s/2` bits above the ciphertext's noise for `s` bits of
    /// statistical security; the precision drops by as many bits.
    pub fn decrypt_flooded(&self, sk: &SecretKey<B>, ct: &Ciphertext<B>, flood_log2: f64) -> Result<Vec<Complex64>> {
        if !flood_log2.is_finite() || !(0.0..=120.0).contains(&flood_log2) {
            return Err(Error::InvalidField { field: "flooding width", reason: "log2 must be in [0, 120]" });
        }
        let mut v = self.raw_decrypt(sk, ct)?;
        let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::from_seed(crate::math::sampling::fresh_seed()?);
        let sigma = flood_log2.exp2();
        for c in &mut v {
            *c += sigma * gaussian_f64(&mut rng)?;
        }
        self.encoder.decode(&v, ct.scale, ct.slots)
    }

    // ---- evaluation ---------------------------------------------------------------------------

    fn same_level_and_scale(&self, a: &Ciphertext<B>, b_level: usize, b_scale: f64) -> Result<()> {
        self.check_ct(a)?;
        if a.level() != b_level {
            return Err(Error::LevelMismatch { left: a.level(), right: b_level });
        }
        if ((a.scale - b_scale) / a.scale).abs() > SCALE_TOLERANCE {
            return Err(Error::ScaleMismatch { left_log2: a.scale.log2(), right_log2: b_scale.log2() });
        }
        Ok(())
    }

    fn combine(
        &self,
        a: &Ciphertext<B>,
        b: &Ciphertext<B>,
        op: impl Fn(&RnsPoly<B, Eval>, &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>,
    ) -> Result<Ciphertext<B>> {
        self.check_ct(b)?;
        self.same_level_and_scale(a, b.level(), b.scale)?;
        let polys = rlwe::zip_padded(self.backend(), a.core.polys(), b.core.polys(), op)?;
        Ok(a.with(a.core.with_polys(polys)?, a.scale))
    }

    /// `a + b`.
    pub fn add(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.combine(a, b, |x, y| x.add(self.backend(), y))
    }

    /// `a - b`.
    pub fn sub(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.combine(a, b, |x, y| x.sub(self.backend(), y))
    }

    /// `-a`.
    pub fn neg(&self, a: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.check_ct(a)?;
        Ok(a.with(a.core.map(|p| p.neg(self.backend()))?, a.scale))
    }

    /// `ct + pt` (PADD): the plaintext must have the ciphertext's scale; it is lifted to the
    /// ciphertext's level.
    pub fn add_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.same_level_and_scale(ct, ct.level(), pt.scale)?;
        let m = self.lift(pt, ct.level())?;
        Ok(ct.with(ct.core.map_c0(self.backend(), |c0| c0.add(self.backend(), &m))?, ct.scale))
    }

    /// `ct + c` for a constant `c` in every slot.
    pub fn add_const(&self, ct: &Ciphertext<B>, c: Complex64) -> Result<Ciphertext<B>> {
        let pt = self.encode(&vec![c; ct.slots], ct.scale, ct.slots, ct.level())?;
        self.add_plain(ct, &pt)
    }

    /// `ct * pt` (PMULT): the scales multiply (rescale afterwards).
    pub fn mul_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let scale = self.checked_scale(ct.scale * pt.scale, ct.level())?;
        let m = self.lift(pt, ct.level())?;
        Ok(ct.with(ct.core.map(|p| p.mul(self.backend(), &m))?, scale))
    }

    /// `ct * c` for a constant `c` in every slot, encoded at the scale of the next rescale so
    /// that rescaling returns to about the ciphertext's scale.
    pub fn mul_const(&self, ct: &Ciphertext<B>, c: Complex64) -> Result<Ciphertext<B>> {
        let pt = self.encode(&vec![c; ct.slots], self.next_rescale_divisor(ct.level())?, ct.slots, ct.level())?;
        self.mul_plain(ct, &pt)
    }

    fn checked_scale(&self, scale: f64, level: usize) -> Result<f64> {
        let modulus_log2 = self.log_q_at(level);
        if !scale.is_finite() || scale <= 0.0 {
            return Err(Error::InvalidScale { reason: "scale must be finite and positive" });
        }
        if scale.log2() + 1.0 >= modulus_log2 {
            return Err(Error::ScaleOverflow { scale_log2: scale.log2(), modulus_log2 });
        }
        Ok(scale)
    }

    /// The tensor product (degree 2); the scales multiply.
    pub fn mul(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.check_ct(a)?;
        self.check_ct(b)?;
        if a.level() != b.level() {
            return Err(Error::LevelMismatch { left: a.level(), right: b.level() });
        }
        let scale = self.checked_scale(a.scale * b.scale, a.level())?;
        Ok(a.with(a.core.tensor(self.backend(), &b.core)?, scale))
    }

    /// Relinearises a degree-2 ciphertext.
    pub fn relinearize(&self, ct: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        if ct.degree() != 2 {
            return Err(Error::CiphertextDegree { degree: ct.degree(), expected: 2 });
        }
        let core = ct.core.relinearize(self.backend(), keys, None)?;
        self.backend().flush()?;
        Ok(ct.with(core, ct.scale))
    }

    /// HMULT: tensor product and relinearisation (no rescale), fused
    /// ([`rlwe::mul_relinearize`]): the words of [`Ckks::mul`] followed by [`Ckks::relinearize`].
    pub fn mul_relin(&self, a: &Ciphertext<B>, b: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        if keys.relin.is_none() {
            return Err(Error::MissingRelinKey);
        }
        self.check_ct(a)?;
        self.check_ct(b)?;
        if a.level() != b.level() {
            return Err(Error::LevelMismatch { left: a.level(), right: b.level() });
        }
        if a.degree() != 1 || b.degree() != 1 {
            return Err(Error::CiphertextDegree { degree: a.degree().max(b.degree()), expected: 1 });
        }
        let scale = self.checked_scale(a.scale * b.scale, a.level())?;
        let core = a.core.mul_relinearize(self.backend(), &b.core, keys, None)?;
        self.backend().flush()?;
        Ok(a.with(core, scale))
    }

    /// The divisor of the next rescale from `level`: the last prime, or the last two.
    pub fn next_rescale_divisor(&self, level: usize) -> Result<f64> {
        self.rescale_divisor_above(level, self.policy.base_primes())
    }

    /// The divisor of a rescale from `level` that keeps at least `floor` primes.
    fn rescale_divisor_above(&self, level: usize, floor: usize) -> Result<f64> {
        let k = self.policy.primes_per_level();
        if level + 1 < floor + k {
            return Err(Error::DepthExhausted { level, wanted: k });
        }
        Ok(self.params().q().iter().skip(level + 1 - k).take(k).map(|m| f64::from(m.value())).product())
    }

    /// Divides by the last prime (single policy) or the last two (double policy), with exact
    /// rounding per prime (the last prime first); the scale is divided by the same exact value.
    /// Only the dropped limbs are inverse-transformed ([`crate::rlwe::drop_primes`]).
    pub fn rescale(&self, ct: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.rescale_above(ct, self.policy.base_primes())
    }

    /// [`Ckks::rescale`] down to as few as `floor` primes (the policy's base, or for
    /// bootstrapping's entry the smaller base below it).
    fn rescale_above(&self, ct: &Ciphertext<B>, floor: usize) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let divisor = self.rescale_divisor_above(ct.level(), floor)?;
        let polys = crate::rlwe::drop_primes(self.backend(), ct.core.polys(), self.policy.primes_per_level(), None)?;
        self.backend().flush()?;
        Ok(ct.with(ct.core.with_polys(polys)?, ct.scale / divisor))
    }

    /// Brings `ct` to scale `target` one level down: multiplies by 1 encoded at the scale that
    /// makes the next rescale land on `target`, then rescales. Aligns the scale of a ciphertext
    /// with that of one that went through a different chain of rescales (the constant is
    /// rounded to an integer, a relative error below `2^-log2(scale)`).
    pub fn rescale_to(&self, ct: &Ciphertext<B>, target: f64) -> Result<Ciphertext<B>> {
        self.rescale_to_above(ct, target, self.policy.base_primes())
    }

    /// [`Ckks::rescale_to`] down to as few as `floor` primes: bootstrapping rescales onto its
    /// 2-prime base, below the double policy's 3-prime base for decoding.
    pub(crate) fn rescale_to_above(&self, ct: &Ciphertext<B>, target: f64, floor: usize) -> Result<Ciphertext<B>> {
        let factor = target * self.rescale_divisor_above(ct.level(), floor)? / ct.scale;
        if !factor.is_finite() || factor < 1.0 {
            return Err(Error::InvalidScale { reason: "target scale is too small for one rescale from this level" });
        }
        let one = self.encode(&vec![Complex64::new(1.0, 0.0); ct.slots], factor, ct.slots, ct.level())?;
        let mut out = self.rescale_above(&self.mul_plain(ct, &one)?, floor)?;
        out.scale = target;
        Ok(out)
    }

    /// Drops primes down to `level` without dividing: the value and scale are unchanged (aligns
    /// levels before an addition).
    pub fn drop_to_level(&self, ct: &Ciphertext<B>, level: usize) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        if level > ct.level() {
            return Err(Error::LevelOutOfRange { level, max: ct.level() });
        }
        let core = ct.core.map(|p| p.duplicate(self.backend())?.keep_limbs(self.backend(), level + 1))?;
        Ok(ct.with(core, ct.scale))
    }

    /// Rotates the slots left by `steps` (negative: right).
    pub fn rotate(&self, ct: &Ciphertext<B>, steps: i64, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let g = self.rotation_element(steps);
        if g == 1 {
            return ct.duplicate(self.backend());
        }
        let core = ct.core.apply_galois(self.backend(), g, keys, &format!("rotation by {steps}"), None)?;
        self.backend().flush()?;
        Ok(ct.with(core, ct.scale))
    }

    /// Conjugates every slot.
    pub fn conjugate(&self, ct: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let core = ct.core.apply_galois(self.backend(), self.conjugation_element(), keys, "conjugation", None)?;
        self.backend().flush()?;
        Ok(ct.with(core, ct.scale))
    }
}

/// A standard normal sample (Box-Muller on two 53-bit uniforms).
fn gaussian_f64(rng: &mut impl RngCore) -> Result<f64> {
    let mut u = || -> f64 { (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 };
    let u1 = 1.0 - u(); // in (0, 1]
    let u2 = u();
    Ok((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos())
}
