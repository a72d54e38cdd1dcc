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

//!
//! The module is split by concern: [`ParametersLiteral`] (plain data, JSON) in `literal`,
//! validation and the accessors of [`Parameters`] here, the wire encoding in `wire`, the shipped
//! and application catalogues in `catalogue` (with the prime tables they are written out from,
//! in `primes`), and the security table in [`security`].

mod catalogue;
mod literal;
mod primes;
pub mod security;
mod wire;

use std::ops::Range;
use std::sync::Arc;

use num_bigint::BigUint;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::math::primes::is_prime;
use crate::math::sampling::SIGMA;
use crate::math::zq::{Modulus, MAX_MODULUS_BITS};
use crate::serial::Writer;

pub use crate::serial::Scheme;
pub use catalogue::*;
pub use literal::ParametersLiteral;

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
/// Smallest CKKS `log2(scale)`.
pub const MIN_LOG_SCALE: u32 = 1;
/// Largest CKKS `log2(scale)`.
pub const MAX_LOG_SCALE: u32 = 60;

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

/// [`Error::CountTooLarge`] when `found > limit`.
fn check_count(what: &'static str, found: u64, limit: usize) -> Result<()> {
    let limit = limit as u64;
    if found > limit {
        return Err(Error::CountTooLarge { what, found, limit });
    }
    Ok(())
}

/// Validated parameters. Cheap to clone (an `Arc` inside).
///
/// # Example
///
/// A shipped set, its digit partition, its id and its wire form; and an explicitly insecure test
/// ring, which the secure loader refuses:
///
/// ```
/// use sha2::{Digest, Sha256};
/// use wgfhe::params::{self, Parameters, TestRing};
/// use wgfhe::serial::HEADER_LEN;
///
/// let p = params::by_name("bgv-n13")?;
/// assert_eq!(p.n(), 1 << 13);
/// assert!(!p.is_insecure());
/// // Digit j of hybrid key switching: chain primes [j alpha, min((j + 1) alpha, L)).
/// let (l, alpha) = (p.q().len(), p.q().len().div_ceil(p.dnum()));
/// assert_eq!(p.alpha(), alpha);
/// for j in 0..p.dnum() {
///     assert_eq!(p.digit_range(j), j * alpha..((j + 1) * alpha).min(l));
///     // The special modulus P covers every digit.
///     let digit_bits: f64 = p.q()[p.digit_range(j)].iter().map(|q| f64::from(q.value()).log2()).sum();
///     assert!(p.log_p() >= digit_bits);
/// }
/// // The id: the first 8 bytes (little-endian) of the SHA-256 of the wire payload.
/// let bytes = p.to_bytes();
/// let digest = Sha256::digest(&bytes[HEADER_LEN..]);
/// assert_eq!(p.id(), u64::from_le_bytes(digest[..8].try_into()?));
/// assert_eq!(Parameters::from_bytes(&bytes)?, p);
///
/// let test = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537)?;
/// assert!(test.is_insecure() && test.n() == 1024 && test.plaintext_modulus() == Some(65537));
/// assert!(Parameters::from_bytes(&test.to_bytes()).is_err());
/// assert_eq!(Parameters::from_bytes_insecure_for_tests(&test.to_bytes())?, test);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// * `sigma` equal to [`SIGMA`] (3.19), the width of the sampler's table and the width the
    ///   security table assumes ([`Error::InvalidParameters`]);
    /// * security (this constructor only): the table of [`security::max_log_qp`] has an entry
    ///   for `(N, level, secret)` ([`Error::UnknownSecurityLevel`]) and `log2(QP)` is at most
    ///   that entry ([`Error::InsecureParameters`]).
    pub fn new(lit: ParametersLiteral) -> Result<Self> {
        Self::build(lit, true)
    }

    /// The checks of [`Parameters::new`] except the security ones (table entry and bound); the result is marked insecure ([`Parameters::is_insecure`]). For tests only.
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
        if let Some(&[repeated, _]) = all.windows(2).find(|w| w.first() == w.get(1)) {
            return Err(Error::InvalidModulus { modulus: repeated, reason: "repeated in q and p" });
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
        if lit.sigma.to_bits() != SIGMA.to_bits() {
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
        let digest: [u8; 32] = Sha256::digest(w.as_bytes()).into();
        let [b0, b1, b2, b3, b4, b5, b6, b7, ..] = digest;
        let id = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);

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

    /// How many key-switching digits a key at `level` has: those with a prime at or below it.
    #[must_use]
    pub fn digits_at(&self, level: usize) -> usize {
        (0..self.dnum()).filter(|&j| self.digit_range(j).any(|i| i <= level)).count()
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

#[cfg(test)]
mod tests;
