//! The wire encoding of a parameter set: the canonical binary form of its literal, whose
//! SHA-256 is the parameter id, inside a `Parameters` wire object.

use super::{check_count, Parameters, ParametersLiteral, Scheme, SecretDistribution, SecurityLevel};
use super::{MAX_NAME_LEN, MAX_PRIMES};
use crate::error::{Error, Result};
use crate::serial::{self, ObjectType, Reader, Writer};

impl Parameters {
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

impl ParametersLiteral {
    /// Appends the canonical binary encoding (see [`Parameters::to_bytes`]). Only called on
    /// validated literals, whose counts fit the `u32` fields.
    pub(super) fn encode(&self, w: &mut Writer) {
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
    pub(super) fn decode(payload: &[u8]) -> Result<Self> {
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
