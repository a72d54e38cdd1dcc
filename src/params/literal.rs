//! The plain, serde-friendly literal of a parameter set; nothing is checked until
//! [`Parameters::new`].

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::{Parameters, MAX_NAME_LEN};
use super::{Scheme, SecretDistribution, SecurityLevel};
use crate::error::{Error, Result};

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
        serde_json::to_string_pretty(self).map_err(|e| Error::json("encoding of a parameter literal", &e))
    }

    /// Parses a literal from JSON ([`Error::Json`] on malformed JSON, unknown fields or unknown
    /// enum values). Nothing else is checked: pass the result to
    /// [`Parameters::new`].
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::json("decoding of a parameter literal", &e))
    }
}
