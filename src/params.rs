//! Validated parameter sets.
//!
//! Parameters are built in two stages, as in lattigo:
//!
//! 1. A [`ParametersLiteral`] is plain data (serde-friendly): ring degree, explicit primes for the
//!    ciphertext chain `q` and the special primes `p`, the gadget digit count `dnum`, the plaintext
//!    modulus (BGV) or scale (CKKS), the secret distribution, the security level and the error
//!    standard deviation.
//! 2. [`Parameters::new`] checks every field (the list follows SEAL's parameter validation) and
//!    the security bound of the 2024 guidelines (see [`security`]), then precomputes the moduli,
//!    the digit partition and the parameter id.
//!
//! # Digit partition (hybrid key switching)
//!
//! With `L = len(q)` and `alpha = ceil(L / dnum)`, digit `j` (for `0 <= j < dnum`) is the range of
//! chain primes `[j * alpha, min((j + 1) * alpha, L))`. Every digit must be non-empty, and when
//! `p` is non-empty the special modulus `P` must be at least the product of the primes of every
//! digit (the noise requirement of hybrid key switching). An empty `p` is allowed: such a set has
//! no key switching (no relinearisation, no rotations).
//!
//! # Parameter id
//!
//! [`Parameters::id`] is the first 8 bytes, read as a little-endian `u64`, of the SHA-256 of the
//! canonical binary encoding of the literal (the payload written by [`Parameters::to_bytes`],
//! described there). Every serialized object carries it, so an object cannot be used with other
//! parameters by mistake.

pub mod security;

use std::ops::Range;
use std::sync::Arc;

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::math::primes::{is_prime, ntt_primes};
use crate::math::zq::{Modulus, MAX_MODULUS_BITS};
use crate::serial::{self, ObjectType, Reader, Writer};

/// Smallest supported `log2 N`.
pub const MIN_LOG_N: u32 = 1;
/// Largest supported `log2 N`.
pub const MAX_LOG_N: u32 = 17;
/// Longest parameter-set name, in UTF-8 bytes.
pub const MAX_NAME_LEN: usize = 256;
/// Most primes in `q`, and separately in `p`.
pub const MAX_PRIMES: usize = 256;
/// Largest allowed error standard deviation.
pub const MAX_SIGMA: f64 = 100.0;
/// Error standard deviation the security table assumes; [`Parameters::new`] refuses smaller
/// values (a narrower error lowers security below the table's figures).
pub const TABLE_SIGMA: f64 = 3.19;
/// Smallest CKKS `log2(scale)`.
pub const MIN_LOG_SCALE: u32 = 1;
/// Largest CKKS `log2(scale)`.
pub const MAX_LOG_SCALE: u32 = 60;

/// The homomorphic encryption scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Brakerski-Gentry-Vaikuntanathan: exact arithmetic modulo a plaintext modulus `t`.
    Bgv,
    /// Cheon-Kim-Kim-Song: approximate arithmetic on complex numbers.
    Ckks,
}

impl Scheme {
    /// Wire tag: 1 = BGV, 2 = CKKS.
    #[must_use]
    pub const fn tag(self) -> u8 {
        match self {
            Self::Bgv => 1,
            Self::Ckks => 2,
        }
    }

    /// Parses a wire tag ([`Error::InvalidField`] for an unknown one).
    pub fn from_tag(tag: u8) -> Result<Self> {
        match tag {
            1 => Ok(Self::Bgv),
            2 => Ok(Self::Ckks),
            _ => Err(Error::InvalidField { field: "scheme", reason: "unknown scheme tag" }),
        }
    }

    /// Display name, `"BGV"` or `"CKKS"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bgv => "BGV",
            Self::Ckks => "CKKS",
        }
    }
}

/// Distribution of the secret key coefficients.
///
/// Only ternary secrets (uniform in `{-1, 0, 1}`) are implemented, and the security table is the
/// one for ternary secrets; a literal naming any other distribution fails to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SecretDistribution {
    /// Coefficients uniform in `{-1, 0, 1}`.
    Ternary,
}

impl SecretDistribution {
    /// Wire tag: 1 = ternary.
    #[must_use]
    pub const fn tag(self) -> u8 {
        match self {
            Self::Ternary => 1,
        }
    }

    /// Parses a wire tag ([`Error::InvalidField`] for an unknown one).
    pub fn from_tag(tag: u8) -> Result<Self> {
        match tag {
            1 => Ok(Self::Ternary),
            _ => Err(Error::InvalidField { field: "secret", reason: "unknown secret distribution tag" }),
        }
    }

    /// Display name, `"ternary"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ternary => "ternary",
        }
    }
}

/// Target security level against classical attacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SecurityLevel {
    /// 128-bit security.
    Bits128,
    /// 192-bit security.
    Bits192,
    /// 256-bit security.
    Bits256,
}

impl SecurityLevel {
    /// The level in bits (128, 192 or 256); also its wire encoding (as `u16`).
    #[must_use]
    pub const fn bits(self) -> u32 {
        match self {
            Self::Bits128 => 128,
            Self::Bits192 => 192,
            Self::Bits256 => 256,
        }
    }

    /// The level of `bits` ([`Error::InvalidField`] unless 128, 192 or 256).
    pub fn from_bits(bits: u32) -> Result<Self> {
        match bits {
            128 => Ok(Self::Bits128),
            192 => Ok(Self::Bits192),
            256 => Ok(Self::Bits256),
            _ => Err(Error::InvalidField { field: "security", reason: "security level is not 128, 192 or 256 bits" }),
        }
    }
}

/// Plain serde literal of a parameter set; nothing is checked until [`Parameters::new`].
///
/// Primes are explicit: `q` is the ciphertext chain (`q[0]` the base prime, kept at level 0;
/// modulus switching drops primes from the end), `p` the special primes of hybrid key switching.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParametersLiteral {
    /// Name of the set (at most [`MAX_NAME_LEN`] UTF-8 bytes); part of the parameter id.
    pub name: String,
    /// The scheme.
    pub scheme: Scheme,
    /// `log2 N`, in `[MIN_LOG_N, MAX_LOG_N]`.
    pub log_n: u32,
    /// Ciphertext-chain primes, each prime, `< 2^30`, `= 1 mod 2N`; non-empty.
    pub q: Vec<u64>,
    /// Special primes (same conditions); may be empty (then no key switching).
    pub p: Vec<u64>,
    /// Number of gadget digits of hybrid key switching, in `[1, len(q)]`.
    pub dnum: usize,
    /// BGV plaintext modulus `t` (required for BGV, absent for CKKS).
    pub plaintext_modulus: Option<u64>,
    /// CKKS `log2(scale)` in `[1, 60]` (required for CKKS, absent for BGV).
    pub log_scale: Option<u32>,
    /// Secret key distribution.
    pub secret: SecretDistribution,
    /// Declared security level.
    pub security: SecurityLevel,
    /// Standard deviation of the error distribution, finite, in `(0, 100]`.
    pub sigma: f64,
}

impl ParametersLiteral {
    /// The literal as pretty-printed JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| Error::InvalidParameters { reason: format!("cannot write JSON: {e}") })
    }

    /// Parses a literal from JSON ([`Error::InvalidParameters`] on malformed JSON, unknown
    /// fields or unknown enum values). Nothing else is checked: pass the result to
    /// [`Parameters::new`].
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json)
            .map_err(|e| Error::InvalidParameters { reason: format!("cannot parse JSON literal: {e}") })
    }

    /// Appends the canonical binary encoding (see [`Parameters::to_bytes`]). Only called on
    /// validated literals, whose counts fit the `u32` fields.
    fn encode(&self, w: &mut Writer) {
        let len32 = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        w.put_u32(len32(self.name.len()));
        w.put_bytes(self.name.as_bytes());
        w.put_u8(self.scheme.tag());
        w.put_u32(self.log_n);
        w.put_u32(len32(self.q.len()));
        w.put_u32(len32(self.p.len()));
        for &x in self.q.iter().chain(&self.p) {
            w.put_u64(x);
        }
        w.put_u32(len32(self.dnum));
        match self.scheme {
            Scheme::Bgv => w.put_u64(self.plaintext_modulus.unwrap_or(0)),
            Scheme::Ckks => w.put_u32(self.log_scale.unwrap_or(0)),
        }
        w.put_u8(self.secret.tag());
        w.put_u16(u16::try_from(self.security.bits()).unwrap_or(u16::MAX));
        w.put_u64(self.sigma.to_bits());
    }

    /// Parses the canonical binary encoding. Counts are checked against their caps before any
    /// allocation; the whole payload must be consumed.
    fn decode(payload: &[u8]) -> Result<Self> {
        let mut r = Reader::new(payload);
        let name_len = r.get_u32()?;
        check_count("name length", u64::from(name_len), MAX_NAME_LEN)?;
        let name_bytes = r.get_bytes(name_len as usize)?;
        let name = std::str::from_utf8(name_bytes)
            .map_err(|_| Error::InvalidField { field: "name", reason: "not valid UTF-8" })?
            .to_owned();
        let scheme = Scheme::from_tag(r.get_u8()?)?;
        let log_n = r.get_u32()?;
        let count_q = r.get_u32()?;
        check_count("number of q primes", u64::from(count_q), MAX_PRIMES)?;
        let count_p = r.get_u32()?;
        check_count("number of p primes", u64::from(count_p), MAX_PRIMES)?;
        let mut get_primes = |count: u32| -> Result<Vec<u64>> {
            let mut v = Vec::with_capacity(count as usize);
            for _ in 0..count {
                v.push(r.get_u64()?);
            }
            Ok(v)
        };
        let q = get_primes(count_q)?;
        let p = get_primes(count_p)?;
        let dnum = r.get_u32()? as usize;
        let (plaintext_modulus, log_scale) = match scheme {
            Scheme::Bgv => (Some(r.get_u64()?), None),
            Scheme::Ckks => (None, Some(r.get_u32()?)),
        };
        let secret = SecretDistribution::from_tag(r.get_u8()?)?;
        let security = SecurityLevel::from_bits(u32::from(r.get_u16()?))?;
        let sigma = f64::from_bits(r.get_u64()?);
        r.finish()?;
        Ok(Self { name, scheme, log_n, q, p, dnum, plaintext_modulus, log_scale, secret, security, sigma })
    }
}

/// [`Error::CountTooLarge`] when `found > limit`.
fn check_count(what: &'static str, found: u64, limit: usize) -> Result<()> {
    let limit = limit as u64;
    if found > limit {
        return Err(Error::CountTooLarge { what, found, limit });
    }
    Ok(())
}

/// Validated parameters. Cheap to clone (an `Arc` inside).
#[derive(Clone, Debug)]
pub struct Parameters {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    literal: ParametersLiteral,
    q: Vec<Modulus>,
    p: Vec<Modulus>,
    log_q: f64,
    log_p: f64,
    alpha: usize,
    batching: bool,
    id: u64,
    insecure: bool,
    security_bound: Option<u32>,
}

/// Equal when the literals are equal and both are (or both are not) marked insecure.
impl PartialEq for Parameters {
    fn eq(&self, other: &Self) -> bool {
        self.inner.literal == other.inner.literal && self.inner.insecure == other.inner.insecure
    }
}

impl Parameters {
    /// Validates `lit` and checks its security.
    ///
    /// Checks, each failing with its own error:
    /// * name at most [`MAX_NAME_LEN`] bytes, at most [`MAX_PRIMES`] primes in each of `q`, `p`
    ///   ([`Error::CountTooLarge`]);
    /// * `log_n` in `[1, 17]` ([`Error::InvalidRingDegree`]);
    /// * `q` non-empty ([`Error::InvalidParameters`]);
    /// * every prime of `q` and `p` below `2^30`, prime, `= 1 mod 2N`, no value repeated within
    ///   or across `q` and `p` ([`Error::InvalidModulus`]);
    /// * `dnum` in `[1, len(q)]` and no digit empty; if `p` is non-empty, `P >=` the product of
    ///   every digit ([`Error::InvalidParameters`]);
    /// * BGV: `plaintext_modulus` present and `log_scale` absent ([`Error::InvalidParameters`]);
    ///   `2 <= t < 2^30`, `t` coprime to every prime of `q` and `p`, `t < q[0]` (so level 0 can
    ///   still decrypt) ([`Error::InvalidPlaintextModulus`]);
    /// * CKKS: `log_scale` in `[1, 60]`, no `plaintext_modulus` ([`Error::InvalidParameters`]);
    /// * `sigma` equal to 3.19, the width of the sampler's table ([`Error::InvalidParameters`]);
    /// * security (this constructor only): `sigma >=` [`TABLE_SIGMA`]
    ///   ([`Error::InvalidParameters`], implied by the previous check); the table of [`security::max_log_qp`] has an entry for
    ///   `(N, level, secret)` ([`Error::UnknownSecurityLevel`]) and `log2(QP)` is at most that
    ///   entry ([`Error::InsecureParameters`]).
    pub fn new(lit: ParametersLiteral) -> Result<Self> {
        Self::build(lit, true)
    }

    /// The checks of [`Parameters::new`] except the security ones (sigma floor, table entry,
    /// bound); the result is marked insecure ([`Parameters::is_insecure`]). For tests only.
    pub fn new_insecure_for_tests(lit: ParametersLiteral) -> Result<Self> {
        Self::build(lit, false)
    }

    fn build(lit: ParametersLiteral, secure: bool) -> Result<Self> {
        check_count("name length", lit.name.len() as u64, MAX_NAME_LEN)?;
        if !(MIN_LOG_N..=MAX_LOG_N).contains(&lit.log_n) {
            return Err(Error::InvalidRingDegree {
                n: 1u64.checked_shl(lit.log_n).unwrap_or(u64::MAX),
                min_log: MIN_LOG_N,
                max_log: MAX_LOG_N,
            });
        }
        let n = 1u64 << lit.log_n;
        if lit.q.is_empty() {
            return Err(Error::InvalidParameters { reason: "the ciphertext chain q is empty".into() });
        }
        check_count("number of q primes", lit.q.len() as u64, MAX_PRIMES)?;
        check_count("number of p primes", lit.p.len() as u64, MAX_PRIMES)?;

        // Moduli: each one on its own, then repeats.
        let check_prime = |x: u64| -> Result<Modulus> {
            let bad = |reason| Err(Error::InvalidModulus { modulus: x, reason });
            // The size check comes first: primality testing of huge values is slow.
            if x >= 1 << MAX_MODULUS_BITS {
                return bad("not below 2^30");
            }
            if !is_prime(x) {
                return bad("not prime");
            }
            if x % (2 * n) != 1 {
                return bad("not 1 mod 2N");
            }
            Modulus::new(x)
        };
        let q = lit.q.iter().map(|&x| check_prime(x)).collect::<Result<Vec<_>>>()?;
        let p = lit.p.iter().map(|&x| check_prime(x)).collect::<Result<Vec<_>>>()?;
        let mut all: Vec<u64> = lit.q.iter().chain(&lit.p).copied().collect();
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w.first() == w.get(1)) {
            return Err(Error::InvalidModulus {
                modulus: w.first().copied().unwrap_or(0),
                reason: "repeated in q and p",
            });
        }

        // Digits.
        let len_q = lit.q.len();
        if lit.dnum == 0 || lit.dnum > len_q {
            return Err(Error::InvalidParameters {
                reason: format!("dnum = {} is outside [1, len(q) = {len_q}]", lit.dnum),
            });
        }
        let alpha = len_q.div_ceil(lit.dnum);
        if len_q.div_ceil(alpha) != lit.dnum {
            return Err(Error::InvalidParameters {
                reason: format!(
                    "dnum = {} leaves an empty digit: with alpha = ceil({len_q} / {}) = {alpha} \
                     only {} digits are non-empty",
                    lit.dnum,
                    lit.dnum,
                    len_q.div_ceil(alpha)
                ),
            });
        }
        if !lit.p.is_empty() {
            let product = |xs: &[u64]| xs.iter().fold(BigUint::from(1u32), |acc, &x| acc * x);
            let big_p = product(&lit.p);
            let max_digit = lit.q.chunks(alpha).map(product).max().unwrap_or_else(|| BigUint::from(1u32));
            if big_p < max_digit {
                return Err(Error::InvalidParameters {
                    reason: format!(
                        "P is smaller than the largest digit product (2^{:.2} < 2^{:.2}): hybrid \
                         key switching needs P >= every digit",
                        log2_sum(&lit.p),
                        lit.q.chunks(alpha).map(log2_sum).fold(0.0, f64::max)
                    ),
                });
            }
        }

        // Scheme-specific fields.
        let mut batching = false;
        match lit.scheme {
            Scheme::Bgv => {
                let Some(t) = lit.plaintext_modulus else {
                    return Err(Error::InvalidParameters { reason: "BGV needs a plaintext modulus".into() });
                };
                if lit.log_scale.is_some() {
                    return Err(Error::InvalidParameters { reason: "BGV takes no log_scale".into() });
                }
                let bad = |reason| Err(Error::InvalidPlaintextModulus { t, reason });
                if t < 2 {
                    return bad("smaller than 2");
                }
                if t >= 1 << MAX_MODULUS_BITS {
                    return bad("not below 2^30");
                }
                if lit.q.iter().chain(&lit.p).any(|&x| gcd(t, x) != 1) {
                    return bad("not coprime to every prime of q and p");
                }
                if lit.q.first().is_some_and(|&q0| t >= q0) {
                    return bad("not smaller than the base prime q[0]");
                }
                batching = is_prime(t) && t % (2 * n) == 1;
            }
            Scheme::Ckks => {
                if lit.plaintext_modulus.is_some() {
                    return Err(Error::InvalidParameters { reason: "CKKS takes no plaintext modulus".into() });
                }
                match lit.log_scale {
                    Some(s) if (MIN_LOG_SCALE..=MAX_LOG_SCALE).contains(&s) => {}
                    Some(s) => {
                        return Err(Error::InvalidParameters {
                            reason: format!("log_scale = {s} is outside [{MIN_LOG_SCALE}, {MAX_LOG_SCALE}]"),
                        })
                    }
                    None => return Err(Error::InvalidParameters { reason: "CKKS needs a log_scale".into() }),
                }
            }
        }

        if !(lit.sigma.is_finite() && lit.sigma > 0.0 && lit.sigma <= MAX_SIGMA) {
            return Err(Error::InvalidParameters {
                reason: format!("sigma = {} is not in (0, {MAX_SIGMA}]", lit.sigma),
            });
        }
        // The Gaussian sampler draws from one fixed table (sigma 3.19); a literal that claims
        // another width would make the noise model and the parameter id lie.
        if lit.sigma.to_bits() != crate::math::sampling::SIGMA.to_bits() {
            return Err(Error::InvalidParameters {
                reason: format!("sigma = {} differs from 3.19, the only width the sampler draws", lit.sigma),
            });
        }

        // Security.
        let log_q = log2_sum(&lit.q);
        let log_p = log2_sum(&lit.p);
        let log_qp = log_q + log_p;
        let security_bound = security::max_log_qp(lit.log_n, lit.security, lit.secret);
        if secure {
            if lit.sigma < TABLE_SIGMA {
                return Err(Error::InvalidParameters {
                    reason: format!(
                        "sigma = {} is below {TABLE_SIGMA}, the value the security table assumes",
                        lit.sigma
                    ),
                });
            }
            let Some(bound) = security_bound else {
                return Err(Error::UnknownSecurityLevel {
                    n,
                    security_bits: lit.security.bits(),
                    secret: lit.secret.name(),
                });
            };
            if log_qp > f64::from(bound) {
                return Err(Error::InsecureParameters {
                    n,
                    log_qp,
                    max_log_qp: bound,
                    security_bits: lit.security.bits(),
                });
            }
        }

        let mut w = Writer::new();
        lit.encode(&mut w);
        let digest = Sha256::digest(w.as_bytes());
        let mut id_bytes = [0u8; 8];
        id_bytes.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
        let id = u64::from_le_bytes(id_bytes);

        Ok(Self {
            inner: Arc::new(Inner {
                literal: lit,
                q,
                p,
                log_q,
                log_p,
                alpha,
                batching,
                id,
                insecure: !secure,
                security_bound,
            }),
        })
    }

    /// The literal the set was built from.
    #[must_use]
    pub fn literal(&self) -> &ParametersLiteral {
        &self.inner.literal
    }

    /// The parameter id (see the module documentation).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Ring degree `N`.
    #[must_use]
    pub fn n(&self) -> usize {
        1usize << self.inner.literal.log_n
    }

    /// `log2 N`.
    #[must_use]
    pub fn log_n(&self) -> u32 {
        self.inner.literal.log_n
    }

    /// Ciphertext-chain moduli, `q[0]` first.
    #[must_use]
    pub fn q(&self) -> &[Modulus] {
        &self.inner.q
    }

    /// Special moduli (empty when the set has no key switching).
    #[must_use]
    pub fn p(&self) -> &[Modulus] {
        &self.inner.p
    }

    /// Highest level, `len(q) - 1`; level `l` uses primes `q[0..=l]`.
    #[must_use]
    pub fn max_level(&self) -> usize {
        self.inner.q.len() - 1
    }

    /// Number of gadget digits (every one non-empty).
    #[must_use]
    pub fn dnum(&self) -> usize {
        self.inner.literal.dnum
    }

    /// Primes per digit, `ceil(len(q) / dnum)` (the last digit may hold fewer).
    #[must_use]
    pub fn alpha(&self) -> usize {
        self.inner.alpha
    }

    /// Chain-prime indices of digit `j`: `[j * alpha, min((j + 1) * alpha, len(q)))`. Empty for
    /// `j >= dnum`.
    #[must_use]
    pub fn digit_range(&self, j: usize) -> Range<usize> {
        let len_q = self.inner.q.len();
        let start = j.saturating_mul(self.inner.alpha).min(len_q);
        let end = j.saturating_add(1).saturating_mul(self.inner.alpha).min(len_q);
        start..end
    }

    /// BGV plaintext modulus `t` (`None` for CKKS).
    #[must_use]
    pub fn plaintext_modulus(&self) -> Option<u64> {
        self.inner.literal.plaintext_modulus
    }

    /// CKKS `log2(scale)` (`None` for BGV).
    #[must_use]
    pub fn log_scale(&self) -> Option<u32> {
        self.inner.literal.log_scale
    }

    /// Whether BGV batching (SIMD slots) is available: `t` prime and `t = 1 mod 2N`.
    /// Always `false` for CKKS.
    #[must_use]
    pub fn batching(&self) -> bool {
        self.inner.batching
    }

    /// Whether the set was built by an `*_insecure_for_tests` constructor (its security was not
    /// checked, whether or not it would pass).
    #[must_use]
    pub fn is_insecure(&self) -> bool {
        self.inner.insecure
    }

    /// `log2(Q)`, the sum of `log2` of the chain primes.
    #[must_use]
    pub fn log_q(&self) -> f64 {
        self.inner.log_q
    }

    /// `log2(P)`, the sum of `log2` of the special primes (0 when there are none).
    #[must_use]
    pub fn log_p(&self) -> f64 {
        self.inner.log_p
    }

    /// `log2(Q*P) = log_q + log_p`.
    #[must_use]
    pub fn log_qp(&self) -> f64 {
        self.inner.log_q + self.inner.log_p
    }

    /// The table bound on `log2(Q*P)` for this `(N, level, secret)`, or `None` where the table
    /// has no entry (only possible for insecure sets).
    #[must_use]
    pub fn security_bound(&self) -> Option<u32> {
        self.inner.security_bound
    }

    /// Declared security level.
    #[must_use]
    pub fn security(&self) -> SecurityLevel {
        self.inner.literal.security
    }

    /// The scheme.
    #[must_use]
    pub fn scheme(&self) -> Scheme {
        self.inner.literal.scheme
    }

    /// Standard deviation of the error distribution.
    #[must_use]
    pub fn sigma(&self) -> f64 {
        self.inner.literal.sigma
    }

    /// Name of the set.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.literal.name
    }

    /// Serializes the set as a wire object (type `Parameters`, see [`crate::serial`]) whose
    /// payload is the canonical encoding of the literal, all integers little-endian:
    ///
    /// | field | encoding |
    /// |---|---|
    /// | name | `u32` byte length (at most 256), then UTF-8 bytes |
    /// | scheme | `u8` ([`Scheme::tag`]) |
    /// | log_n | `u32` |
    /// | len(q), len(p) | `u32` each (at most 256 each) |
    /// | q primes, then p primes | `u64` each |
    /// | dnum | `u32` |
    /// | BGV: t / CKKS: log_scale | `u64` / `u32` |
    /// | secret | `u8` ([`SecretDistribution::tag`]) |
    /// | security | `u16` bits (128, 192, 256) |
    /// | sigma | `u64`, the IEEE-754 bits |
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.inner.literal.encode(&mut w);
        serial::write_object(ObjectType::Parameters, self.scheme(), self.id(), w.as_bytes())
    }

    /// Parses a `Parameters` wire object and re-validates it with [`Parameters::new`] (an
    /// insecure set fails here). Errors: any of [`serial::read_object`], payload truncation
    /// ([`Error::Truncated`]), counts over their caps ([`Error::CountTooLarge`], checked before
    /// allocating), unknown tags ([`Error::InvalidField`]), trailing payload bytes
    /// ([`Error::TrailingBytes`]), header scheme differing from the literal's
    /// ([`Error::SchemeMismatch`]), every validation error, and a header id differing from the
    /// recomputed one ([`Error::ParameterMismatch`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::from_bytes_impl(bytes, true)
    }

    /// [`Parameters::from_bytes`] through [`Parameters::new_insecure_for_tests`]. For tests only.
    pub fn from_bytes_insecure_for_tests(bytes: &[u8]) -> Result<Self> {
        Self::from_bytes_impl(bytes, false)
    }

    fn from_bytes_impl(bytes: &[u8], secure: bool) -> Result<Self> {
        let (header, payload) = serial::read_object(bytes, ObjectType::Parameters)?;
        let lit = ParametersLiteral::decode(payload)?;
        if header.scheme != lit.scheme {
            return Err(Error::SchemeMismatch { expected: header.scheme.name(), found: lit.scheme.name() });
        }
        let params = Self::build(lit, secure)?;
        if header.param_id != params.id() {
            return Err(Error::ParameterMismatch { expected: params.id(), found: header.param_id });
        }
        Ok(params)
    }
}

/// Sum of `log2` of each value (`log2` of their product).
fn log2_sum(xs: &[u64]) -> f64 {
    xs.iter().map(|&x| (x as f64).log2()).sum()
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Error standard deviation of the shipped sets.
pub const SHIPPED_SIGMA: f64 = 3.19;
/// Gadget digit count of the shipped BGV sets (the CKKS sets give theirs in [`shipped`]).
pub const SHIPPED_DNUM: usize = 3;
/// `log2(scale)` of the shipped CKKS sets.
pub const SHIPPED_LOG_SCALE: u32 = 30;

/// A shipped set: name, scheme, `log2 N`, plaintext modulus (BGV) or `log2(scale)` (CKKS),
/// number of special primes, digit count, and all primes, special primes first. The primes are
/// exactly those of [`bgv_literal`] / [`ckks_literal`] (checked by a test); they are written out
/// so that a shipped set, and hence its id, never changes.
struct ShippedSet {
    name: &'static str,
    scheme: Scheme,
    log_n: u32,
    plaintext_modulus: Option<u64>,
    log_scale: Option<u32>,
    count_p: usize,
    dnum: usize,
    primes: &'static [u64],
}

impl ShippedSet {
    const fn bgv(name: &'static str, log_n: u32, t: u64, count_p: usize, primes: &'static [u64]) -> Self {
        Self {
            name,
            scheme: Scheme::Bgv,
            log_n,
            plaintext_modulus: Some(t),
            log_scale: None,
            count_p,
            dnum: SHIPPED_DNUM,
            primes,
        }
    }

    const fn ckks(name: &'static str, log_n: u32, count_p: usize, dnum: usize, primes: &'static [u64]) -> Self {
        Self {
            name,
            scheme: Scheme::Ckks,
            log_n,
            plaintext_modulus: None,
            log_scale: Some(SHIPPED_LOG_SCALE),
            count_p,
            dnum,
            primes,
        }
    }
}

/// BGV sets first, then CKKS. For a given `N` both schemes use the same primes (the largest
/// 30-bit ones), split differently between `q` and `p`.
const SHIPPED: [ShippedSet; 9] = [
    ShippedSet::bgv("bgv-n13", 13, 65537, 2, &N13_PRIMES),
    ShippedSet::bgv("bgv-n14", 14, 65537, 4, &N14_PRIMES),
    ShippedSet::bgv("bgv-n15", 15, 65537, 7, &N15_PRIMES),
    ShippedSet::bgv("bgv-n16", 16, 786_433, 15, &N16_PRIMES),
    ShippedSet::bgv("bgv-n17", 17, 786_433, 30, &N17_PRIMES),
    ShippedSet::ckks("ckks-n13", 13, 1, 6, &N13_PRIMES),
    ShippedSet::ckks("ckks-n14", 14, 2, 6, &N14_PRIMES),
    ShippedSet::ckks("ckks-n15", 15, 7, 3, &N15_PRIMES),
    ShippedSet::ckks("ckks-n16", 16, 15, 3, &N16_PRIMES),
];

/// The shipped sets, the BGV ones followed by the CKKS ones. All are 128-bit, ternary secret,
/// sigma 3.19, 30-bit primes with the special primes the largest ones.
///
/// BGV, dnum 3:
///
/// | name | N | t | len(q) + len(p) | log2(QP) | bound |
/// |---|---|---|---|---|---|
/// | `bgv-n13` | 2^13 | 65537 | 5 + 2 | 210.00 | 214 |
/// | `bgv-n14` | 2^14 | 65537 | 10 + 4 | 419.96 | 430 |
/// | `bgv-n15` | 2^15 | 65537 | 21 + 7 | 839.60 | 868 |
/// | `bgv-n16` | 2^16 | 786433 | 43 + 15 | 1736.57 | 1747 |
/// | `bgv-n17` | 2^17 | 786433 | 88 + 30 | 3511.84 | 3523 |
///
/// (65537 = 1 mod 2^17 batches up to N = 2^15; 786433 = 3 * 2^18 + 1 batches up to N = 2^17.)
///
/// CKKS, `log2(scale) = 30`:
///
/// | name | N | len(q) + len(p) | dnum | log2(QP) | bound |
/// |---|---|---|---|---|---|
/// | `ckks-n13` | 2^13 | 6 + 1 | 6 | 210.00 | 214 |
/// | `ckks-n14` | 2^14 | 12 + 2 | 6 | 419.96 | 430 |
/// | `ckks-n15` | 2^15 | 21 + 7 | 3 | 839.60 | 868 |
/// | `ckks-n16` | 2^16 | 43 + 15 | 3 | 1736.57 | 1747 |
#[must_use]
pub fn shipped() -> Vec<ParametersLiteral> {
    SHIPPED
        .iter()
        .map(|s| {
            let (p, q) = s.primes.split_at(s.count_p.min(s.primes.len()));
            ParametersLiteral {
                name: s.name.to_owned(),
                scheme: s.scheme,
                log_n: s.log_n,
                q: q.to_vec(),
                p: p.to_vec(),
                dnum: s.dnum,
                plaintext_modulus: s.plaintext_modulus,
                log_scale: s.log_scale,
                secret: SecretDistribution::Ternary,
                security: SecurityLevel::Bits128,
                sigma: SHIPPED_SIGMA,
            }
        })
        .collect()
}

/// The shipped set or application set ([`application_literals`]) called `name`, validated
/// ([`Error::UnknownParameterSet`] if none is called `name`).
pub fn by_name(name: &str) -> Result<Parameters> {
    let lit = shipped()
        .into_iter()
        .chain(application_literals())
        .find(|l| l.name == name)
        .ok_or_else(|| Error::UnknownParameterSet { name: name.to_owned() })?;
    Parameters::new(lit)
}

/// An insecure test set by the name [`insecure_test_bgv`] gives it,
/// `insecure-test-bgv-n{log_n}-q{count_q}-p{count_p}-d{dnum}-t{t}`: for experiments that must
/// say they are insecure (the CLI asks for `--insecure`). Errors:
/// [`Error::UnknownParameterSet`] for another name; the constructor's errors otherwise.
pub fn insecure_by_name(name: &str) -> Result<Parameters> {
    let unknown = || Error::UnknownParameterSet { name: name.to_owned() };
    let rest = name.strip_prefix("insecure-test-bgv-").ok_or_else(unknown)?;
    let mut fields = rest.split('-');
    let mut next = |prefix: char| -> Result<u64> {
        fields.next().and_then(|f| f.strip_prefix(prefix)).and_then(|v| v.parse().ok()).ok_or_else(unknown)
    };
    let (log_n, q, p, d, t) = (next('n')?, next('q')?, next('p')?, next('d')?, next('t')?);
    if fields.next().is_some() || log_n > 17 || q > 256 || p > 256 || d > 256 {
        return Err(unknown());
    }
    insecure_test_bgv(log_n as u32, q as usize, p as usize, d as usize, t)
}

/// Name of the lookup-table set ([`application_literals`]).
pub const LUT_SET: &str = "bgv-lut-n16";

/// Name of the MNIST CNN set ([`application_literals`]).
pub const CNN_SET: &str = "bgv-cnn-n16";

/// Name of the MNIST CNN set for the digit-extraction ReLU path ([`application_literals`]).
pub const CNN_DIGITS_SET: &str = "bgv-cnn-n17";

/// Name of the MNIST logistic-regression set ([`application_literals`]).
pub const LR_SET: &str = "bgv-lr-n13";

/// Sets made for one application, 128-bit secure like the shipped ones, resolved by
/// [`by_name`] and listed by `wgfhe params`:
///
/// | name | N | t | len(q) + len(p) | dnum | log2(QP) | for |
/// |---|---|---|---|---|---|---|
/// | `bgv-lr-n13` | 2^13 | 786433 | 3 + 0 | 1 | 90.0 | one linear layer (MNIST logistic regression: 784 inputs, 8192 images per batch); no key switching |
/// | `bgv-lut-n16` | 2^16 | 786433 | 45 + 12 | 4 | 1706.7 | range-restricted lookup tables (ReLU, sign) up to depth ~15 with linear layers around them |
/// | `bgv-cnn-n16` | 2^16 | 786433 | 48 + 10 | 5 | see `wgfhe params` | the MNIST CNN: two tables of depth 12 and 14 with a plaintext-diagonal product after each (more levels than `bgv-lut-n16` for the same log QP, bought with a larger dnum) |
/// | `bgv-cnn-n17` | 2^17 | 786433 | 84 + 21 | 4 | see `wgfhe params` | the MNIST CNN with `--relu digits`: per ReLU a set of digit tables and the requantisation table (depth 12 / 14), a word-wise sign test (table depth 5 and two scan rounds) and a product; about 70 levels at `N = 2^11`, ~15 more primes for the larger ring's noise and a margin; 512 images per batch |
/// | `bgv-bxt-n16` | 2^16 | 786433 | 48 + 15 | 3 | 1745.6 | the BXT paper's set in u32 primes ([`bxt_paper_literal`]) |
///
/// The primes of `bgv-lr-n13`, `bgv-lut-n16`, `bgv-cnn-n16` and `bgv-cnn-n17` are those of [`bgv_literal`] (the largest
/// 30-bit primes `= 1 mod 2N`, the special primes the largest).
pub fn application_literals() -> Vec<ParametersLiteral> {
    let mut out = Vec::with_capacity(5);
    if let Ok(l) = bgv_literal(LR_SET, 13, 3, 0, 1, 786_433) {
        out.push(l);
    }
    if let Ok(l) = bgv_literal(LUT_SET, 16, 45, 12, 4, 786_433) {
        out.push(l);
    }
    if let Ok(l) = bgv_literal(CNN_SET, 16, 48, 10, 5, 786_433) {
        out.push(l);
    }
    if let Ok(l) = bgv_literal(CNN_DIGITS_SET, 17, 84, 21, 4, 786_433) {
        out.push(l);
    }
    out.push(bxt_paper_literal());
    out
}

/// Name of the BXT paper's parameter set re-expressed in `u32` primes (see
/// [`bxt_paper_literal`]).
pub const BXT_PAPER_SET: &str = "bgv-bxt-n16";

/// Primes of [`BXT_PAPER_SET`], special primes first: the 15 largest 30-bit primes `= 1 mod
/// 2^17`, the next two (the base), then the 46 primes `= 1 mod 2^17` closest to `2^26.87`
/// (27 and 28 bits), descending.
const BXT_PRIMES: [u64; 63] = [
    1073479681, 1071513601, 1070727169, 1068236801, 1065484289, 1064697857, 1062862849, 1062469633, 1060765697,
    1056440321, 1056178177, 1055260673, 1054212097, 1053818881, 1052508161, 1051721729, 1049100289, 151388161,
    151257089, 150863873, 149815297, 147849217, 145489921, 144310273, 142344193, 141557761, 140771329, 138412033,
    136314881, 135135233, 134348801, 132120577, 130809857, 127795201, 127664129, 126615553, 126222337, 125698049,
    125042689, 123863041, 120586241, 120324097, 118751233, 117964801, 115998721, 115212289, 115081217, 114032641,
    113246209, 113115137, 112066561, 111280129, 111149057, 107216897, 106037249, 104857601, 103284737, 102629377,
    101711873, 100139009, 99483649, 98959361, 98697217,
];

/// The parameter set of the BXT paper (from GME: N = 2^16, log2 QP = 1728 as 24 + 8 limbs of
/// 54 bits, dnum 3, 23 levels) re-expressed in `u32` primes: two ~30-bit base primes, 23 levels
/// of two ~27-bit primes (a ~2^53.7 level, the paper's scale) and 15 special primes: 48 + 15 =
/// 63 limbs, dnum 3, log2(QP) = 1745.57 <= 1747 (128-bit bound at N = 2^16), t = 786433. Used
/// to compare our traffic with the paper's setting; resolved by [`by_name`] but not listed by
/// [`shipped`].
#[must_use]
pub fn bxt_paper_literal() -> ParametersLiteral {
    let (p, q) = BXT_PRIMES.split_at(15);
    ParametersLiteral {
        name: BXT_PAPER_SET.to_owned(),
        scheme: Scheme::Bgv,
        log_n: 16,
        q: q.to_vec(),
        p: p.to_vec(),
        dnum: SHIPPED_DNUM,
        plaintext_modulus: Some(786_433),
        log_scale: None,
        secret: SecretDistribution::Ternary,
        security: SecurityLevel::Bits128,
        sigma: SHIPPED_SIGMA,
    }
}

/// The `count_p + count_q` largest 30-bit primes `= 1 mod 2N` in descending order, split into
/// `(q, p)`: `p` the largest `count_p`, `q` the next `count_q`. Checks `log_n` and the counts.
fn builder_primes(log_n: u32, count_q: usize, count_p: usize) -> Result<(Vec<u64>, Vec<u64>)> {
    if !(MIN_LOG_N..=MAX_LOG_N).contains(&log_n) {
        return Err(Error::InvalidRingDegree {
            n: 1u64.checked_shl(log_n).unwrap_or(u64::MAX),
            min_log: MIN_LOG_N,
            max_log: MAX_LOG_N,
        });
    }
    check_count("number of q primes", count_q as u64, MAX_PRIMES)?;
    check_count("number of p primes", count_p as u64, MAX_PRIMES)?;
    let mut q = ntt_primes(MAX_MODULUS_BITS, 1u64 << log_n, count_p + count_q, &[])?;
    let p = q.drain(..count_p.min(q.len())).collect();
    Ok((q, p))
}

/// A BGV literal from prime counts: the `count_p + count_q` largest 30-bit primes `= 1 mod 2N`
/// in descending order; `p` takes the largest `count_p` of them (so that `P` covers a digit of
/// `count_p` chain primes), `q` the next `count_q`, `q[0]` the largest of those. Ternary secret,
/// 128-bit level, sigma 3.19. Nothing is validated beyond what building needs: `log_n` in
/// `[1, 17]` ([`Error::InvalidRingDegree`]), counts at most 256 ([`Error::CountTooLarge`]) and
/// enough primes existing ([`Error::NotEnoughPrimes`]).
pub fn bgv_literal(
    name: &str,
    log_n: u32,
    count_q: usize,
    count_p: usize,
    dnum: usize,
    t: u64,
) -> Result<ParametersLiteral> {
    let (q, p) = builder_primes(log_n, count_q, count_p)?;
    Ok(ParametersLiteral {
        name: name.to_owned(),
        scheme: Scheme::Bgv,
        log_n,
        q,
        p,
        dnum,
        plaintext_modulus: Some(t),
        log_scale: None,
        secret: SecretDistribution::Ternary,
        security: SecurityLevel::Bits128,
        sigma: SHIPPED_SIGMA,
    })
}

/// A CKKS literal from prime counts, with the primes of [`bgv_literal`] (the `count_p + count_q`
/// largest 30-bit primes `= 1 mod 2N`, descending, `p` the largest `count_p`), no plaintext
/// modulus and the given `log2(scale)`. Ternary secret, 128-bit level, sigma 3.19. Nothing is
/// validated beyond what building needs (`log_scale` included: [`Parameters::new`] checks it):
/// `log_n` in `[1, 17]` ([`Error::InvalidRingDegree`]), counts at most 256
/// ([`Error::CountTooLarge`]) and enough primes existing ([`Error::NotEnoughPrimes`]).
pub fn ckks_literal(
    name: &str,
    log_n: u32,
    count_q: usize,
    count_p: usize,
    dnum: usize,
    log_scale: u32,
) -> Result<ParametersLiteral> {
    let (q, p) = builder_primes(log_n, count_q, count_p)?;
    Ok(ParametersLiteral {
        name: name.to_owned(),
        scheme: Scheme::Ckks,
        log_n,
        q,
        p,
        dnum,
        plaintext_modulus: None,
        log_scale: Some(log_scale),
        secret: SecretDistribution::Ternary,
        security: SecurityLevel::Bits128,
        sigma: SHIPPED_SIGMA,
    })
}

/// An insecure BGV set for tests: [`bgv_literal`] named
/// `"insecure-test-bgv-n{log_n}-q{count_q}-p{count_p}-d{dnum}-t{t}"`, built with
/// [`Parameters::new_insecure_for_tests`]. Batching plaintext moduli: 12289 (`= 3 * 2^12 + 1`)
/// for `N <= 2^11`, 65537 for `N <= 2^15`, 786433 for `N <= 2^17`.
pub fn insecure_test_bgv(log_n: u32, count_q: usize, count_p: usize, dnum: usize, t: u64) -> Result<Parameters> {
    let name = format!("insecure-test-bgv-n{log_n}-q{count_q}-p{count_p}-d{dnum}-t{t}");
    Parameters::new_insecure_for_tests(bgv_literal(&name, log_n, count_q, count_p, dnum, t)?)
}

/// An insecure CKKS set for tests: [`ckks_literal`] named
/// `"insecure-test-ckks-n{log_n}-q{count_q}-p{count_p}-d{dnum}-s{log_scale}"`, built with
/// [`Parameters::new_insecure_for_tests`] (so `log_scale` must be in `[1, 60]`).
pub fn insecure_test_ckks(
    log_n: u32,
    count_q: usize,
    count_p: usize,
    dnum: usize,
    log_scale: u32,
) -> Result<Parameters> {
    let name = format!("insecure-test-ckks-n{log_n}-q{count_q}-p{count_p}-d{dnum}-s{log_scale}");
    Parameters::new_insecure_for_tests(ckks_literal(&name, log_n, count_q, count_p, dnum, log_scale)?)
}

/// N = 2^13, largest first: BGV takes 2 special primes and 5 chain primes, CKKS 1 and 6.
#[rustfmt::skip]
const N13_PRIMES: [u64; 7] = [
    1_073_692_673, 1_073_643_521, 1_073_479_681, 1_073_430_529, 1_073_299_457, 1_073_233_921,
    1_073_184_769,
];
/// N = 2^14, largest first: BGV takes 4 special primes and 10 chain primes, CKKS 2 and 12.
#[rustfmt::skip]
const N14_PRIMES: [u64; 14] = [
    1_073_643_521, 1_073_479_681, 1_073_184_769, 1_073_053_697, 1_072_857_089, 1_072_496_641,
    1_071_513_601, 1_071_415_297, 1_071_087_617, 1_070_727_169, 1_070_432_257, 1_069_219_841,
    1_068_564_481, 1_068_466_177,
];
/// N = 2^15, largest first: 7 special primes, then 21 chain primes (BGV and CKKS).
#[rustfmt::skip]
const N15_PRIMES: [u64; 28] = [
    1_073_479_681, 1_072_496_641, 1_071_513_601, 1_070_727_169, 1_069_219_841, 1_068_564_481,
    1_068_433_409, 1_068_236_801, 1_065_811_969, 1_065_484_289, 1_064_697_857, 1_063_452_673,
    1_063_321_601, 1_063_059_457, 1_062_862_849, 1_062_535_169, 1_062_469_633, 1_061_093_377,
    1_060_765_697, 1_060_700_161, 1_060_175_873, 1_058_209_793, 1_056_440_321, 1_056_178_177,
    1_055_260_673, 1_054_212_097, 1_054_015_489, 1_053_818_881,
];
/// N = 2^16, largest first: 15 special primes, then 43 chain primes (BGV and CKKS).
#[rustfmt::skip]
const N16_PRIMES: [u64; 58] = [
    1_073_479_681, 1_071_513_601, 1_070_727_169, 1_068_236_801, 1_065_484_289, 1_064_697_857,
    1_062_862_849, 1_062_469_633, 1_060_765_697, 1_056_440_321, 1_056_178_177, 1_055_260_673,
    1_054_212_097, 1_053_818_881, 1_052_508_161, 1_051_721_729, 1_049_100_289, 1_048_707_073,
    1_045_430_273, 1_043_464_193, 1_042_415_617, 1_040_842_753, 1_040_056_321, 1_038_745_601,
    1_037_303_809, 1_036_779_521, 1_034_813_441, 1_032_192_001, 1_031_667_713, 1_030_619_137,
    1_029_308_417, 1_026_686_977, 1_026_162_689, 1_023_148_033, 1_021_444_097, 1_019_609_089,
    1_019_478_017, 1_018_429_441, 1_016_463_361, 1_015_283_713, 1_014_366_209, 1_012_924_417,
    1_012_006_913, 1_010_565_121, 1_007_681_537, 1_006_108_673, 1_005_060_097, 1_004_535_809,
    1_000_210_433, 999_948_289, 999_424_001, 999_161_857, 998_244_353, 996_278_273,
    995_622_913, 994_705_409, 993_918_977, 993_263_617,
];
/// N = 2^17: 30 special primes, then 88 chain primes.
#[rustfmt::skip]
const N17_PRIMES: [u64; 118] = [
    1_073_479_681, 1_068_236_801, 1_062_469_633, 1_056_440_321, 1_056_178_177, 1_053_818_881,
    1_052_508_161, 1_051_721_729, 1_049_100_289, 1_045_430_273, 1_037_303_809, 1_036_779_521,
    1_023_148_033, 1_019_478_017, 1_018_429_441, 1_015_283_713, 1_012_924_417, 1_010_565_121,
    1_007_681_537, 1_006_108_673, 1_005_060_097, 1_004_535_809, 998_244_353, 995_622_913,
    993_263_617, 985_661_441, 983_826_433, 980_156_417, 979_107_841, 977_534_977,
    976_224_257, 975_175_681, 972_029_953, 971_243_521, 969_146_369, 962_854_913,
    962_592_769, 958_922_753, 958_136_321, 957_349_889, 951_582_721, 950_009_857,
    948_699_137, 946_339_841, 943_718_401, 940_572_673, 938_475_521, 935_329_793,
    932_970_497, 925_892_609, 924_844_033, 919_601_153, 919_339_009, 918_552_577,
    914_096_129, 913_309_697, 909_377_537, 908_328_961, 907_804_673, 907_542_529,
    907_018_241, 903_086_081, 900_464_641, 899_678_209, 897_581_057, 897_318_913,
    896_008_193, 894_959_617, 889_454_593, 888_668_161, 885_522_433, 883_949_569,
    881_590_273, 880_803_841, 879_230_977, 875_298_817, 873_725_953, 872_153_089,
    867_434_497, 864_550_913, 863_764_481, 862_978_049, 860_618_753, 851_705_857,
    850_395_137, 848_560_129, 844_890_113, 844_627_969, 842_530_817, 839_385_089,
    835_452_929, 833_617_921, 829_685_761, 828_112_897, 825_753_601, 824_442_881,
    824_180_737, 821_297_153, 820_510_721, 820_248_577, 818_937_857, 813_432_833,
    813_170_689, 811_859_969, 810_024_961, 808_714_241, 802_160_641, 801_374_209,
    800_849_921, 800_063_489, 799_014_913, 798_228_481, 795_082_753, 793_509_889,
    792_199_169, 790_364_161, 786_432_001, 782_499_841,
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]
    use super::*;

    /// Independent primality by trial division (values < 2^31 only).
    fn slow_prime(n: u64) -> bool {
        n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
    }

    /// log2 of a big integer from its top 64 bits.
    fn big_log2(x: &BigUint) -> f64 {
        let bits = x.bits();
        let shift = bits.saturating_sub(64);
        let top: u64 = (x >> shift).try_into().unwrap();
        shift as f64 + (top as f64).log2()
    }

    fn product(xs: &[u64]) -> BigUint {
        xs.iter().fold(BigUint::from(1u32), |a, &x| a * x)
    }

    /// A small valid BGV literal: N = 2^10, 4 chain primes, 2 special primes, dnum 2.
    fn small() -> ParametersLiteral {
        bgv_literal("small", 10, 4, 2, 2, 65537).unwrap()
    }

    fn insecure(lit: ParametersLiteral) -> Result<Parameters> {
        Parameters::new_insecure_for_tests(lit)
    }

    fn modulus_reason(r: Result<Parameters>) -> &'static str {
        match r {
            Err(Error::InvalidModulus { reason, .. }) => reason,
            other => panic!("expected InvalidModulus, got {other:?}"),
        }
    }

    fn params_reason(r: Result<Parameters>) -> String {
        match r {
            Err(Error::InvalidParameters { reason }) => reason,
            other => panic!("expected InvalidParameters, got {other:?}"),
        }
    }

    fn t_reason(r: Result<Parameters>) -> &'static str {
        match r {
            Err(Error::InvalidPlaintextModulus { reason, .. }) => reason,
            other => panic!("expected InvalidPlaintextModulus, got {other:?}"),
        }
    }

    #[test]
    fn shipped_sets_validate_and_fit_their_bounds() {
        // (name, log_n, t, len q, len p, log2(QP) computed outside this crate)
        let want = [
            ("bgv-n13", 13, 65537, 5, 2, 209.997_005_546_076_08),
            ("bgv-n14", 14, 65537, 10, 4, 419.956_604_293_161_43),
            ("bgv-n15", 15, 65537, 21, 7, 839.597_655_987_389_4),
            ("bgv-n16", 16, 786_433, 43, 15, 1_736.570_706_767_111_7),
            ("bgv-n17", 17, 786_433, 88, 30, 3_511.841_821_103_695),
        ];
        let lits: Vec<_> = shipped().into_iter().filter(|l| l.scheme == Scheme::Bgv).collect();
        assert_eq!(lits.len(), want.len());
        // BGV sets come first.
        assert!(shipped()[..want.len()].iter().all(|l| l.scheme == Scheme::Bgv));
        for (lit, (name, log_n, t, lq, lp, log_qp)) in lits.into_iter().zip(want) {
            assert_eq!(lit.name, name);
            let params = Parameters::new(lit.clone()).unwrap();
            assert!(!params.is_insecure());
            assert_eq!(params.log_n(), log_n);
            assert_eq!(params.n(), 1 << log_n);
            assert_eq!(params.plaintext_modulus(), Some(t));
            assert_eq!((params.q().len(), params.p().len()), (lq, lp));
            assert_eq!(params.max_level(), lq - 1);
            assert_eq!(params.dnum(), 3);
            assert_eq!(params.sigma(), 3.19);
            assert_eq!(params.scheme(), Scheme::Bgv);
            assert_eq!(params.security(), SecurityLevel::Bits128);
            assert!(params.batching(), "{name}");
            assert!((params.log_qp() - log_qp).abs() < 1e-6, "{name}");
            // Independently: the table bound from the guidelines, and the primes.
            let bound = [214, 430, 868, 1747, 3523][(log_n - 13) as usize];
            assert_eq!(params.security_bound(), Some(bound));
            assert!(log_qp <= f64::from(bound));
            let two_n = 2u64 << log_n;
            for &x in lit.q.iter().chain(&lit.p) {
                assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30 && x > 1 << 29);
            }
            assert!((t - 1) % two_n == 0 && slow_prime(t));
            // P covers every digit.
            let big_p = product(&lit.p);
            for j in 0..3 {
                assert!(big_p >= product(&lit.q[params.digit_range(j)]));
            }
            // The written-out primes are those of the builder.
            assert_eq!(bgv_literal(name, log_n, lq, lp, 3, t).unwrap(), lit);
            // by_name gives the same set.
            assert_eq!(by_name(name).unwrap(), params);
        }
    }

    #[test]
    fn lut_set_is_secure_and_switchable() {
        let params = by_name(LUT_SET).unwrap();
        assert!(!params.is_insecure());
        assert_eq!((params.q().len(), params.p().len(), params.dnum()), (45, 12, 4));
        assert!(params.log_qp() <= 1747.0, "{}", params.log_qp());
        assert!(params.batching());
        let lit = application_literals().into_iter().find(|l| l.name == LUT_SET).unwrap();
        let big_p = product(&lit.p);
        for j in 0..4 {
            assert!(big_p >= product(&lit.q[params.digit_range(j)]));
        }
    }

    #[test]
    fn cnn_sets_are_secure_and_switchable() {
        for (name, log_n, counts, bound) in
            [(CNN_SET, 16, (48, 10, 5), 1747.0), (CNN_DIGITS_SET, 17, (84, 21, 4), 3523.0)]
        {
            let params = by_name(name).unwrap();
            assert!(!params.is_insecure());
            assert_eq!(params.log_n(), log_n);
            assert_eq!((params.q().len(), params.p().len(), params.dnum()), counts);
            assert!(params.log_qp() <= bound, "{name}: {}", params.log_qp());
            assert!(params.batching());
            let lit = application_literals().into_iter().find(|l| l.name == name).unwrap();
            let big_p = product(&lit.p);
            for j in 0..counts.2 {
                assert!(big_p >= product(&lit.q[params.digit_range(j)]), "{name} digit {j}");
            }
        }
    }

    #[test]
    fn bxt_paper_set_is_secure_and_switchable() {
        let lit = bxt_paper_literal();
        let params = by_name(BXT_PAPER_SET).unwrap();
        assert!(!params.is_insecure());
        assert_eq!((params.q().len(), params.p().len(), params.dnum()), (48, 15, 3));
        assert!((params.log_qp() - 1745.57).abs() < 0.01, "{}", params.log_qp());
        assert_eq!(params.security_bound(), Some(1747));
        let two_n = 2u64 << 16;
        for &x in lit.q.iter().chain(&lit.p) {
            assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30);
        }
        let big_p = product(&lit.p);
        for j in 0..3 {
            assert!(big_p >= product(&lit.q[params.digit_range(j)]));
        }
        assert!(params.batching());
    }

    #[test]
    fn shipped_ckks_sets_validate_and_fit_their_bounds() {
        // (name, log_n, len q, len p, dnum, log2(QP) computed outside this crate, bound of the
        // 2024 table)
        let want = [
            ("ckks-n13", 13, 6, 1, 6, 209.997_005_546_076_08, 214),
            ("ckks-n14", 14, 12, 2, 6, 419.956_604_293_161_43, 430),
            ("ckks-n15", 15, 21, 7, 3, 839.597_655_987_389_4, 868),
            ("ckks-n16", 16, 43, 15, 3, 1_736.570_706_767_111_7, 1747),
        ];
        let all = shipped();
        let lits: Vec<_> = all.iter().filter(|l| l.scheme == Scheme::Ckks).cloned().collect();
        assert_eq!(lits.len(), want.len());
        // The CKKS sets follow the BGV ones.
        assert_eq!(&all[all.len() - want.len()..], &lits[..]);
        for (lit, (name, log_n, lq, lp, dnum, log_qp, bound)) in lits.into_iter().zip(want) {
            assert_eq!(lit.name, name);
            let params = Parameters::new(lit.clone()).unwrap();
            assert!(!params.is_insecure());
            assert_eq!(params.scheme(), Scheme::Ckks);
            assert_eq!(params.n(), 1 << log_n);
            assert_eq!(params.log_scale(), Some(30));
            assert_eq!(params.plaintext_modulus(), None);
            assert!(!params.batching());
            assert_eq!((params.q().len(), params.p().len()), (lq, lp));
            assert_eq!(params.dnum(), dnum);
            assert_eq!(params.sigma(), 3.19);
            assert_eq!(params.security(), SecurityLevel::Bits128);
            assert_eq!(params.security_bound(), Some(bound));
            assert!((params.log_qp() - log_qp).abs() < 1e-6, "{name}");
            assert!(big_log2(&(product(&lit.q) * product(&lit.p))) <= f64::from(bound));
            let two_n = 2u64 << log_n;
            for &x in lit.q.iter().chain(&lit.p) {
                assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30 && x > 1 << 29);
            }
            // Special primes are the largest ones; P covers every digit (each non-empty).
            let min_p = lit.p.iter().min().unwrap();
            assert!(lit.q.iter().all(|x| x < min_p));
            let big_p = product(&lit.p);
            let alpha = lq.div_ceil(dnum);
            for j in 0..dnum {
                let digit = &lit.q[j * alpha..((j + 1) * alpha).min(lq)];
                assert!(!digit.is_empty());
                assert_eq!(params.digit_range(j), j * alpha..((j + 1) * alpha).min(lq));
                assert!(big_p >= product(digit), "{name}, digit {j}");
            }
            // The written-out primes are those of the builder.
            assert_eq!(ckks_literal(name, log_n, lq, lp, dnum, 30).unwrap(), lit);
            assert_eq!(by_name(name).unwrap(), params);
        }
    }

    #[test]
    fn shipped_names_are_unique() {
        let mut names: Vec<String> = shipped().into_iter().map(|l| l.name).collect();
        let n = names.len();
        assert_eq!(n, 9);
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }

    #[test]
    fn ckks_helpers() {
        let p = insecure_test_ckks(10, 4, 2, 2, 25).unwrap();
        assert!(p.is_insecure());
        assert_eq!(p.name(), "insecure-test-ckks-n10-q4-p2-d2-s25");
        assert_eq!((p.scheme(), p.log_scale(), p.plaintext_modulus()), (Scheme::Ckks, Some(25), None));
        assert_eq!((p.q().len(), p.p().len(), p.dnum()), (4, 2, 2));
        // Same primes as the BGV builder.
        let b = bgv_literal("x", 10, 4, 2, 2, 65537).unwrap();
        assert_eq!(p.literal().q, b.q);
        assert_eq!(p.literal().p, b.p);
        // log_scale is checked by the constructor, not the literal builder.
        assert!(ckks_literal("x", 10, 2, 1, 1, 0).is_ok());
        assert!(params_reason(insecure_test_ckks(10, 2, 2, 1, 0)).contains("log_scale"));
        assert!(params_reason(insecure_test_ckks(10, 2, 2, 1, 61)).contains("log_scale"));
        assert!(insecure_test_ckks(10, 2, 2, 1, 60).is_ok());
        // Builder errors.
        assert!(matches!(ckks_literal("x", 0, 2, 1, 1, 30), Err(Error::InvalidRingDegree { .. })));
        assert!(matches!(ckks_literal("x", 18, 2, 1, 1, 30), Err(Error::InvalidRingDegree { .. })));
        assert!(matches!(ckks_literal("x", 10, 257, 0, 1, 30), Err(Error::CountTooLarge { .. })));
        assert!(matches!(ckks_literal("x", 10, 1, 257, 1, 30), Err(Error::CountTooLarge { .. })));
        assert!(matches!(ckks_literal("x", 17, 250, 0, 1, 30), Err(Error::NotEnoughPrimes { .. })));
        // A CKKS set above its bound is refused by the secure constructor.
        let lit = ckks_literal("too-big", 13, 7, 1, 7, 30).unwrap();
        assert!(matches!(
            Parameters::new(lit),
            Err(Error::InsecureParameters { n: 8192, max_log_qp: 214, security_bits: 128, .. })
        ));
    }

    #[test]
    fn ckks_literal_with_a_plaintext_modulus_is_refused() {
        for name in ["ckks-n13", "ckks-n16"] {
            let mut lit = shipped().into_iter().find(|l| l.name == name).unwrap();
            lit.plaintext_modulus = Some(65537);
            assert!(params_reason(Parameters::new(lit.clone())).contains("plaintext modulus"));
            assert!(params_reason(insecure(lit)).contains("plaintext modulus"));
        }
        // Also without log_scale, and through the JSON path.
        let mut lit = ckks_literal("x", 10, 2, 1, 1, 30).unwrap();
        lit.plaintext_modulus = Some(3);
        lit.log_scale = None;
        assert!(insecure(lit.clone()).is_err());
        let back = ParametersLiteral::from_json(&lit.to_json().unwrap()).unwrap();
        assert!(insecure(back).is_err());
    }

    #[test]
    fn by_name_unknown_is_an_error() {
        assert_eq!(by_name("bgv-n12"), Err(Error::UnknownParameterSet { name: "bgv-n12".into() }));
        // There is no CKKS set for N = 2^17.
        assert_eq!(by_name("ckks-n17"), Err(Error::UnknownParameterSet { name: "ckks-n17".into() }));
    }

    #[test]
    fn logs_match_big_integer_products() {
        for lit in shipped().into_iter().chain([small()]) {
            let params = insecure(lit.clone()).unwrap();
            let q = product(&lit.q);
            let p = product(&lit.p);
            assert!((params.log_q() - big_log2(&q)).abs() < 1e-6);
            assert!((params.log_p() - big_log2(&p)).abs() < 1e-6);
            assert!((params.log_qp() - big_log2(&(q * p))).abs() < 1e-6);
        }
        let mut lit = small();
        lit.p.clear();
        let params = insecure(lit).unwrap();
        assert_eq!(params.log_p(), 0.0);
        assert_eq!(params.log_qp(), params.log_q());
    }

    /// The canonical encoding written out by hand, independently of `encode`.
    fn hand_encoding(lit: &ParametersLiteral) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(lit.name.len() as u32).to_le_bytes());
        v.extend_from_slice(lit.name.as_bytes());
        v.push(match lit.scheme {
            Scheme::Bgv => 1,
            Scheme::Ckks => 2,
        });
        v.extend_from_slice(&lit.log_n.to_le_bytes());
        v.extend_from_slice(&(lit.q.len() as u32).to_le_bytes());
        v.extend_from_slice(&(lit.p.len() as u32).to_le_bytes());
        for x in lit.q.iter().chain(&lit.p) {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&(lit.dnum as u32).to_le_bytes());
        match lit.scheme {
            Scheme::Bgv => v.extend_from_slice(&lit.plaintext_modulus.unwrap().to_le_bytes()),
            Scheme::Ckks => v.extend_from_slice(&lit.log_scale.unwrap().to_le_bytes()),
        }
        v.push(1);
        let bits: u16 = match lit.security {
            SecurityLevel::Bits128 => 128,
            SecurityLevel::Bits192 => 192,
            SecurityLevel::Bits256 => 256,
        };
        v.extend_from_slice(&bits.to_le_bytes());
        v.extend_from_slice(&lit.sigma.to_bits().to_le_bytes());
        v
    }

    fn ckks_small() -> ParametersLiteral {
        let mut lit = small();
        lit.name = "ckks-small".into();
        lit.scheme = Scheme::Ckks;
        lit.plaintext_modulus = None;
        lit.log_scale = Some(40);
        lit
    }

    #[test]
    fn id_is_sha256_of_the_canonical_encoding() {
        for lit in shipped().into_iter().chain([small(), ckks_small()]) {
            let params = insecure(lit.clone()).unwrap();
            let enc = hand_encoding(&lit);
            let digest = Sha256::digest(&enc);
            let id = u64::from_le_bytes(digest[..8].try_into().unwrap());
            assert_eq!(params.id(), id);
            // The payload of the wire object is that encoding.
            let bytes = params.to_bytes();
            assert_eq!(&bytes[serial::HEADER_LEN..], &enc[..]);
        }
    }

    #[test]
    fn pinned_id_of_bgv_n13() {
        // Changing the encoding, the primes or any field of bgv-n13 changes this value.
        assert_eq!(by_name("bgv-n13").unwrap().id(), PINNED_N13_ID);
    }
    /// Computed outside this crate (SHA-256 of the encoding written by hand).
    const PINNED_N13_ID: u64 = 0x4014_cf3d_8865_f221;

    #[test]
    fn pinned_id_of_ckks_n13() {
        // Changing the encoding, the primes or any field of ckks-n13 changes this value.
        assert_eq!(by_name("ckks-n13").unwrap().id(), PINNED_CKKS_N13_ID);
    }
    /// Computed outside this crate (SHA-256 of the encoding written by hand).
    const PINNED_CKKS_N13_ID: u64 = 0xb36d_42db_78b0_3d4e;

    #[test]
    fn ids_differ_across_sets_and_fields() {
        let mut ids: Vec<u64> = shipped().into_iter().map(|l| Parameters::new(l).unwrap().id()).collect();
        let base = small();
        ids.push(insecure(base.clone()).unwrap().id());
        let mut l = base.clone();
        l.name.push('x');
        ids.push(insecure(l).unwrap().id());
        let mut l = base.clone();
        l.plaintext_modulus = Some(65539);
        ids.push(insecure(l).unwrap().id());
        let mut l = base.clone();
        l.dnum = 1;
        l.p = bgv_literal("", 10, 10, 10, 1, 2).unwrap().p; // enough P for one digit
        l.q = bgv_literal("", 10, 4, 10, 1, 2).unwrap().q;
        ids.push(insecure(l).unwrap().id());
        let mut l = base;
        l.security = SecurityLevel::Bits192;
        ids.push(insecure(l).unwrap().id());
        let n = ids.len();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }

    #[test]
    fn ring_degree_range() {
        for log_n in [0u32, 18, 63, 64, u32::MAX] {
            let mut lit = small();
            lit.log_n = log_n;
            assert!(matches!(insecure(lit), Err(Error::InvalidRingDegree { min_log: 1, max_log: 17, .. })));
            assert!(matches!(bgv_literal("x", log_n, 2, 1, 1, 3), Err(Error::InvalidRingDegree { .. })));
        }
        // The smallest degree works through the insecure constructor (primes = 1 mod 4).
        let p = insecure_test_bgv(1, 2, 1, 2, 3).unwrap();
        assert_eq!(p.n(), 2);
    }

    #[test]
    fn modulus_checks() {
        let base = small();
        // Composite, = 1 mod 2048: 2049 = 3 * 683.
        let mut l = base.clone();
        l.q[1] = 2049;
        assert_eq!(modulus_reason(insecure(l)), "not prime");
        let mut l = base.clone();
        l.p[0] = 1;
        assert_eq!(modulus_reason(insecure(l)), "not prime");
        // Prime but not 1 mod 2N.
        assert!(slow_prime(1_000_000_007));
        let mut l = base.clone();
        l.q[2] = 1_000_000_007;
        assert_eq!(modulus_reason(insecure(l)), "not 1 mod 2N");
        // Prime, = 1 mod 2N, but too large (3 * 2^30 + 1).
        let mut l = base.clone();
        l.p[1] = 3_221_225_473;
        assert_eq!(modulus_reason(insecure(l)), "not below 2^30");
        // Huge values are refused at once (no slow primality test).
        let mut l = base.clone();
        l.q[0] = u64::MAX;
        assert_eq!(modulus_reason(insecure(l)), "not below 2^30");
        // Repeats within q, and across q and p.
        let mut l = base.clone();
        l.q[3] = l.q[1];
        assert_eq!(modulus_reason(insecure(l)), "repeated in q and p");
        let mut l = base.clone();
        l.p[1] = l.q[0];
        assert_eq!(modulus_reason(insecure(l)), "repeated in q and p");
        // Empty chain.
        let mut l = base;
        l.q.clear();
        assert!(params_reason(insecure(l)).contains("empty"));
    }

    #[test]
    fn plaintext_modulus_checks() {
        let base = small();
        let with_t = |t| {
            let mut l = base.clone();
            l.plaintext_modulus = Some(t);
            insecure(l)
        };
        assert_eq!(t_reason(with_t(0)), "smaller than 2");
        assert_eq!(t_reason(with_t(1)), "smaller than 2");
        assert_eq!(t_reason(with_t(1 << 30)), "not below 2^30");
        assert_eq!(t_reason(with_t(u64::MAX)), "not below 2^30");
        let coprime = "not coprime to every prime of q and p";
        assert_eq!(t_reason(with_t(base.q[1])), coprime);
        assert_eq!(t_reason(with_t(base.p[0])), coprime);
        // Coprime but not below q[0].
        let t = base.q[0] + 2;
        assert!(base.q.iter().chain(&base.p).all(|&x| !t.is_multiple_of(x)));
        assert_eq!(t_reason(with_t(t)), "not smaller than the base prime q[0]");
        // Composite t is allowed (no batching).
        let p = with_t(65536).unwrap();
        assert!(!p.batching());
        assert!(with_t(2).is_ok());
        // BGV needs t and refuses log_scale.
        let mut l = base.clone();
        l.plaintext_modulus = None;
        assert!(params_reason(insecure(l)).contains("plaintext modulus"));
        let mut l = base;
        l.log_scale = Some(40);
        assert!(params_reason(insecure(l)).contains("log_scale"));
    }

    #[test]
    fn ckks_checks() {
        let p = insecure(ckks_small()).unwrap();
        assert_eq!(p.scheme(), Scheme::Ckks);
        assert_eq!(p.log_scale(), Some(40));
        assert_eq!(p.plaintext_modulus(), None);
        assert!(!p.batching());
        for s in [1, 60] {
            let mut l = ckks_small();
            l.log_scale = Some(s);
            assert!(insecure(l).is_ok());
        }
        for s in [Some(0), Some(61), None] {
            let mut l = ckks_small();
            l.log_scale = s;
            assert!(params_reason(insecure(l)).contains("log_scale"));
        }
        let mut l = ckks_small();
        l.plaintext_modulus = Some(65537);
        assert!(params_reason(insecure(l)).contains("plaintext modulus"));
    }

    #[test]
    fn dnum_and_special_primes() {
        let base = small();
        for dnum in [0, 5, usize::MAX] {
            let mut l = base.clone();
            l.dnum = dnum;
            assert!(params_reason(insecure(l)).contains("outside"));
        }
        // 5 primes, dnum 4: alpha 2 leaves only 3 digits.
        let l = bgv_literal("x", 10, 5, 3, 4, 65537).unwrap();
        assert!(params_reason(insecure(l)).contains("empty digit"));
        // P too small: one digit of 5 primes against 2 special primes.
        let l = bgv_literal("x", 10, 5, 2, 1, 65537).unwrap();
        assert!(params_reason(insecure(l)).contains("P is smaller"));
        // Same counts, but P made of the smaller primes: P < the digit.
        let all = ntt_primes(30, 1024, 4, &[]).unwrap();
        let mut l = base.clone();
        l.q = all[..2].to_vec();
        l.p = all[2..].to_vec();
        l.dnum = 1;
        assert!(product(&l.p) < product(&l.q));
        assert!(params_reason(insecure(l.clone())).contains("P is smaller"));
        // Swapped, P larger: fine.
        std::mem::swap(&mut l.q, &mut l.p);
        assert!(insecure(l).is_ok());
        // No special primes: allowed (no key switching).
        let mut l = base;
        l.p.clear();
        let p = insecure(l).unwrap();
        assert!(p.p().is_empty());
    }

    #[test]
    fn digit_partition() {
        let all = ntt_primes(30, 1024, 40, &[]).unwrap();
        for len_q in 1..=12usize {
            for dnum in 1..=len_q {
                let alpha = len_q.div_ceil(dnum);
                let non_empty = len_q.div_ceil(alpha);
                let mut lit = small();
                lit.q = all[20..20 + len_q].to_vec();
                lit.p = all[..alpha].to_vec();
                lit.dnum = dnum;
                let r = insecure(lit);
                if non_empty != dnum {
                    assert!(r.is_err());
                    continue;
                }
                let p = r.unwrap();
                assert_eq!(p.alpha(), alpha);
                // Independent: each index belongs to digit i / alpha.
                let mut seen = vec![usize::MAX; len_q];
                for j in 0..dnum {
                    let range = p.digit_range(j);
                    assert!(!range.is_empty());
                    for i in range {
                        assert_eq!(seen[i], usize::MAX);
                        seen[i] = j;
                    }
                }
                for (i, &j) in seen.iter().enumerate() {
                    assert_eq!(j, i / alpha);
                }
                assert!(p.digit_range(dnum).is_empty());
                assert!(p.digit_range(usize::MAX).is_empty());
            }
        }
    }

    #[test]
    fn sigma_checks() {
        for s in [0.0, -1.0, 100.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let mut l = small();
            l.sigma = s;
            assert!(params_reason(insecure(l)).contains("sigma"));
        }
        // The sampler's width is the only one accepted, by every constructor.
        for s in [1e-3, 3.0, 3.2, 100.0] {
            let mut l = small();
            l.sigma = s;
            assert!(params_reason(insecure(l)).contains("3.19"));
            let mut l = shipped().remove(0);
            l.sigma = s;
            assert!(params_reason(Parameters::new(l)).contains("sigma"));
        }
        assert!(insecure(small()).is_ok());
    }

    #[test]
    fn security_bound_is_enforced() {
        // bgv-n13 with one chain prime more: 8 primes, log2(QP) ~ 240 > 214.
        let lit = bgv_literal("too-big", 13, 6, 2, 3, 65537).unwrap();
        match Parameters::new(lit.clone()) {
            Err(Error::InsecureParameters { n, log_qp, max_log_qp, security_bits }) => {
                assert_eq!((n, max_log_qp, security_bits), (8192, 214, 128));
                assert!(log_qp > 239.0 && log_qp < 240.0);
            }
            other => panic!("{other:?}"),
        }
        let p = Parameters::new_insecure_for_tests(lit).unwrap();
        assert!(p.is_insecure());
        assert_eq!(p.security_bound(), Some(214));
        // A higher level lowers the bound: bgv-n14 does not reach 192 bits.
        let mut lit = shipped().remove(1);
        lit.security = SecurityLevel::Bits192;
        assert!(matches!(
            Parameters::new(lit),
            Err(Error::InsecureParameters { max_log_qp: 297, security_bits: 192, .. })
        ));
        // No table entry: N = 512, and N = 1024 at 192 bits.
        let small_n = bgv_literal("x", 9, 1, 0, 1, 65537).unwrap();
        assert_eq!(
            Parameters::new(small_n.clone()),
            Err(Error::UnknownSecurityLevel { n: 512, security_bits: 128, secret: "ternary" })
        );
        assert_eq!(insecure(small_n).unwrap().security_bound(), None);
        let mut lit = bgv_literal("x", 10, 1, 0, 1, 65537).unwrap();
        assert!(Parameters::new(lit.clone()).is_err()); // 30 bits > 26
        lit.security = SecurityLevel::Bits192;
        assert!(matches!(Parameters::new(lit), Err(Error::UnknownSecurityLevel { n: 1024, .. })));
        // Exactly at a bound passes; just above fails. A set of N = 2^11 with one prime: 30 <= 36.
        let lit = bgv_literal("x", 11, 1, 0, 1, 65537).unwrap();
        let mut l192 = lit.clone();
        l192.security = SecurityLevel::Bits192;
        assert!(Parameters::new(l192).is_ok());
        let mut l256 = lit;
        l256.security = SecurityLevel::Bits256; // 30 > 27
        assert!(matches!(Parameters::new(l256), Err(Error::InsecureParameters { max_log_qp: 27, .. })));
    }

    #[test]
    fn insecure_marker() {
        let lit = shipped().remove(0);
        let secure = Parameters::new(lit.clone()).unwrap();
        let marked = insecure(lit).unwrap();
        assert!(!secure.is_insecure() && marked.is_insecure());
        assert_eq!(secure.id(), marked.id());
        assert_ne!(secure, marked);
    }

    #[test]
    fn batching_availability() {
        // Independent check: t prime and 2N | t - 1.
        for (t, log_n) in [
            (12289u64, 10u32),
            (12289, 12),
            (12289, 13),
            (65537, 10),
            (65537, 15),
            (65537, 16),
            (786_433, 16),
            (786_433, 17),
            (65536, 10),
            (17, 3),
        ] {
            let want = slow_prime(t) && (t - 1) % (2u64 << log_n) == 0;
            let p = insecure_test_bgv(log_n, 2, 1, 2, t).unwrap();
            assert_eq!(p.batching(), want, "t = {t}, N = 2^{log_n}");
            assert!(p.is_insecure());
        }
        assert!(insecure_test_bgv(11, 2, 1, 2, 12289).unwrap().batching());
        assert!(!insecure_test_bgv(12, 2, 1, 2, 12289).unwrap().batching());
        assert!(insecure_test_bgv(15, 2, 1, 2, 65537).unwrap().batching());
        assert!(!insecure_test_bgv(16, 2, 1, 2, 65537).unwrap().batching());
    }

    #[test]
    fn count_and_name_caps() {
        let mut l = small();
        l.name = "x".repeat(MAX_NAME_LEN + 1);
        assert!(matches!(insecure(l), Err(Error::CountTooLarge { what: "name length", .. })));
        let mut l = small();
        l.name = "é".repeat(MAX_NAME_LEN / 2);
        assert!(insecure(l).is_ok());
        assert!(matches!(bgv_literal("x", 10, 257, 0, 1, 3), Err(Error::CountTooLarge { .. })));
        let mut l = small();
        l.q = vec![3; 300];
        assert!(matches!(insecure(l), Err(Error::CountTooLarge { .. })));
        assert!(matches!(bgv_literal("x", 17, 250, 0, 1, 3), Err(Error::NotEnoughPrimes { .. })));
    }

    #[test]
    fn binary_round_trips() {
        let mut schemes = Vec::new();
        for lit in shipped() {
            let scheme = lit.scheme;
            let p = Parameters::new(lit).unwrap();
            let bytes = p.to_bytes();
            let back = Parameters::from_bytes(&bytes).unwrap();
            assert_eq!(back, p);
            assert_eq!(back.id(), p.id());
            assert_eq!(back.log_scale(), p.log_scale());
            assert_eq!(back.plaintext_modulus(), p.plaintext_modulus());
            let header = serial::read_object(&bytes, ObjectType::Parameters).unwrap().0;
            assert_eq!(header.param_id, p.id());
            assert_eq!(header.scheme, scheme);
            schemes.push(scheme);
        }
        assert!(schemes.contains(&Scheme::Bgv) && schemes.contains(&Scheme::Ckks));
        for lit in [small(), ckks_small()] {
            let p = insecure(lit).unwrap();
            let bytes = p.to_bytes();
            // Insecure sets only load through the test entry point.
            assert!(matches!(
                Parameters::from_bytes(&bytes),
                Err(Error::InsecureParameters { .. } | Error::UnknownSecurityLevel { .. })
            ));
            let back = Parameters::from_bytes_insecure_for_tests(&bytes).unwrap();
            assert_eq!(back, p);
            assert_eq!(back.id(), p.id());
        }
    }

    fn n13_bytes() -> (Parameters, Vec<u8>) {
        let p = by_name("bgv-n13").unwrap();
        let b = p.to_bytes();
        (p, b)
    }

    #[test]
    fn truncation_at_every_offset() {
        let (p, bytes) = n13_bytes();
        for k in 0..bytes.len() {
            match Parameters::from_bytes(&bytes[..k]) {
                Err(Error::Truncated { .. }) if k < serial::HEADER_LEN => {}
                Err(Error::LengthMismatch { declared, actual }) if k >= serial::HEADER_LEN => {
                    assert_eq!(declared as usize, bytes.len() - serial::HEADER_LEN);
                    assert_eq!(actual as usize, k - serial::HEADER_LEN);
                }
                other => panic!("k = {k}: {other:?}"),
            }
        }
        // Truncated payloads under a consistent header reach the payload reader.
        let payload = &bytes[serial::HEADER_LEN..];
        for k in 0..payload.len() {
            let obj = serial::write_object(ObjectType::Parameters, Scheme::Bgv, p.id(), &payload[..k]);
            assert!(matches!(Parameters::from_bytes(&obj), Err(Error::Truncated { .. })), "k = {k}");
        }
    }

    #[test]
    fn corrupted_objects() {
        let (p, bytes) = n13_bytes();
        let payload = bytes[serial::HEADER_LEN..].to_vec();
        let obj = |payload: &[u8]| serial::write_object(ObjectType::Parameters, Scheme::Bgv, p.id(), payload);
        // Trailing bytes inside the payload.
        let mut long = payload.clone();
        long.push(0);
        assert_eq!(Parameters::from_bytes(&obj(&long)), Err(Error::TrailingBytes { count: 1 }));
        // Trailing bytes after the declared payload.
        let mut b = bytes.clone();
        b.extend_from_slice(&[0, 0]);
        assert!(matches!(Parameters::from_bytes(&b), Err(Error::LengthMismatch { .. })));
        // Declared length differs.
        let mut b = bytes.clone();
        b[16..24].copy_from_slice(&(payload.len() as u64 - 1).to_le_bytes());
        assert_eq!(
            Parameters::from_bytes(&b),
            Err(Error::LengthMismatch { declared: payload.len() as u64 - 1, actual: payload.len() as u64 })
        );
        // Wrong id in the header.
        let mut b = bytes.clone();
        b[8] ^= 1;
        assert!(matches!(Parameters::from_bytes(&b), Err(Error::ParameterMismatch { .. })));
        // Header scheme differs from the literal's.
        let mut b = bytes.clone();
        b[7] = Scheme::Ckks.tag();
        assert!(matches!(Parameters::from_bytes(&b), Err(Error::SchemeMismatch { .. })));
        // Wrong object type, bad magic, bad version.
        let mut b = bytes.clone();
        b[6] = ObjectType::Ciphertext.tag();
        assert!(matches!(Parameters::from_bytes(&b), Err(Error::ObjectTypeMismatch { .. })));
        let mut b = bytes.clone();
        b[0] = b'X';
        assert_eq!(Parameters::from_bytes(&b), Err(Error::BadMagic));
        let mut b = bytes.clone();
        b[4] = 2;
        assert_eq!(Parameters::from_bytes(&b), Err(Error::UnsupportedVersion { version: 2 }));
        // A changed prime (still the same length) fails validation or the id check.
        let mut pl = payload.clone();
        let name_len = p.name().len();
        let q0_at = 4 + name_len + 1 + 4 + 4 + 4;
        pl[q0_at] ^= 0x02;
        assert!(Parameters::from_bytes(&obj(&pl)).is_err());
        // Unknown tags inside the payload.
        let mut pl = payload.clone();
        pl[4 + name_len] = 9; // scheme
        assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "scheme", .. })));
        let secret_at = payload.len() - 8 - 2 - 1;
        let mut pl = payload.clone();
        pl[secret_at] = 2;
        assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "secret", .. })));
        let mut pl = payload.clone();
        pl[secret_at + 1..secret_at + 3].copy_from_slice(&100u16.to_le_bytes());
        assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "security", .. })));
        // Name that is not UTF-8.
        let mut pl = payload;
        pl[4] = 0xff;
        assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "name", .. })));
    }

    #[test]
    fn huge_declared_counts_are_refused_before_allocating() {
        let (p, bytes) = n13_bytes();
        let payload = &bytes[serial::HEADER_LEN..];
        let name_len = p.name().len();
        let obj = |payload: &[u8]| serial::write_object(ObjectType::Parameters, Scheme::Bgv, p.id(), payload);
        // Name length.
        for len in [257u32, u32::MAX] {
            let mut pl = payload.to_vec();
            pl[..4].copy_from_slice(&len.to_le_bytes());
            assert_eq!(
                Parameters::from_bytes(&obj(&pl)),
                Err(Error::CountTooLarge { what: "name length", found: u64::from(len), limit: 256 })
            );
        }
        // Prime counts.
        let count_q_at = 4 + name_len + 1 + 4;
        for (at, what) in [(count_q_at, "number of q primes"), (count_q_at + 4, "number of p primes")] {
            let mut pl = payload.to_vec();
            pl[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
            assert_eq!(
                Parameters::from_bytes(&obj(&pl)),
                Err(Error::CountTooLarge { what, found: u64::from(u32::MAX), limit: 256 })
            );
            // A count within the cap but beyond the data: truncation, not a panic.
            let mut pl = payload.to_vec();
            pl[at..at + 4].copy_from_slice(&256u32.to_le_bytes());
            assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::Truncated { .. })));
        }
    }

    #[test]
    fn insecure_sets_resolve_only_by_their_exact_name() {
        let p = insecure_by_name("insecure-test-bgv-n12-q5-p2-d3-t786433").unwrap();
        assert_eq!((p.n(), p.name()), (4096, "insecure-test-bgv-n12-q5-p2-d3-t786433"));
        for bad in [
            "bgv-n14",
            "insecure-test-bgv-n12-q5-p2-d3",
            "insecure-test-bgv-n12-q5-p2-d3-t786433-x",
            "insecure-test-bgv-n99-q5-p2-d3-t786433",
            "insecure-test-bgv-nx-q5-p2-d3-t786433",
        ] {
            assert!(matches!(insecure_by_name(bad), Err(Error::UnknownParameterSet { .. })), "{bad}");
        }
        // A shipped name is not an insecure one, and by_name never resolves insecure names.
        assert!(by_name("insecure-test-bgv-n12-q5-p2-d3-t786433").is_err());
    }

    #[test]
    fn json_round_trips_and_rejects_unknown_values() {
        for lit in shipped().into_iter().chain([small(), ckks_small()]) {
            let json = lit.to_json().unwrap();
            let back = ParametersLiteral::from_json(&json).unwrap();
            assert_eq!(back, lit);
            assert_eq!(back.sigma.to_bits(), lit.sigma.to_bits());
            assert_eq!(insecure(back).unwrap().id(), insecure(lit).unwrap().id());
        }
        let ckks = by_name("ckks-n13").unwrap().literal().to_json().unwrap();
        assert!(ckks.contains("\"scheme\": \"ckks\""));
        assert!(ckks.contains("\"log_scale\": 30"));
        assert!(ckks.contains("\"plaintext_modulus\": null"));
        let json = shipped().remove(0).to_json().unwrap();
        assert!(json.contains("\"secret\": \"ternary\""));
        assert!(json.contains("\"scheme\": \"bgv\""));
        assert!(json.contains("\"security\": \"bits128\""));
        let gaussian = json.replace("\"ternary\"", "\"gaussian\"");
        assert!(matches!(ParametersLiteral::from_json(&gaussian), Err(Error::InvalidParameters { .. })));
        let bad_level = json.replace("\"bits128\"", "\"bits100\"");
        assert!(ParametersLiteral::from_json(&bad_level).is_err());
        let extra = json.replacen('{', "{\"extra\": 1,", 1);
        assert!(ParametersLiteral::from_json(&extra).is_err());
        assert!(ParametersLiteral::from_json("{").is_err());
    }
}
