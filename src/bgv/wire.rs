//! Wire format of BGV objects (see [`crate::serial`] for the container).
//!
//! | object | payload |
//! |---|---|
//! | `Ciphertext` | level `u32`, degree `u8`, correction `u32`, noise estimate `f64`, representation `u8` (1 = Eval), then `degree + 1` residue blocks over `q_0..q_level` |
//! | `SeededCiphertext` | level `u32`, degree `u8` (must be 1), correction `u32`, noise `f64`, representation `u8`, generator `u8` (1 = ChaCha20), seed length `u8` (32), seed, then the residue block of `c_0`; `c_1` is regenerated from the seed |
//! | `Plaintext` | `N` as `u32`, one residue block mod `t` |
//!
//! Loading checks, after the container's checksum ([`crate::serial::read_object`]) and before
//! allocating: parameter id and scheme, level range, degree, correction
//! factor (invertible mod t), noise estimate (finite, in `[0, 8192]`), representation tag,
//! generator id and seed length; the residue reader then checks lengths and every residue.

use super::{Bgv, Ciphertext, Plaintext};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::rlwe::wire::{check_header, open_ciphertext, read_core, write_core_polys};
use crate::rlwe::WireForm;
use crate::serial::{read_object, read_residues, write_object, write_residues, ObjectType, Reader, Writer};

/// Largest noise estimate accepted on load (bits).
const MAX_NOISE_LOG2: f64 = 8192.0;

impl<B: Backend> Bgv<B> {
    /// Serialises a ciphertext; a fresh symmetric one is written as `c_0` and the seed of `c_1`.
    pub fn ciphertext_to_bytes(&self, ct: &Ciphertext<B>) -> Result<Vec<u8>> {
        self.ciphertext_to_bytes_as(ct, WireForm::SEEDED)
    }

    /// As [`Bgv::ciphertext_to_bytes`], with the residues bit-packed to `bits(q_i)` bits each
    /// (packing mode 1): about `30/32` of the plain size for 30-bit primes. Loading accepts both.
    pub fn ciphertext_to_bytes_packed(&self, ct: &Ciphertext<B>) -> Result<Vec<u8>> {
        self.ciphertext_to_bytes_as(ct, WireForm::SEEDED_PACKED)
    }

    /// The ciphertext's bytes in `form` ([`WireForm`]: residues bit-packed if `packed`, `c_1`
    /// as its seed if the ciphertext is seeded and `seeded` allows it); the other writers are
    /// shorthands for it.
    pub fn ciphertext_to_bytes_as(&self, ct: &Ciphertext<B>, form: WireForm) -> Result<Vec<u8>> {
        self.check_ct(ct)?;
        let mut w = Writer::new();
        w.put_u32(u32::try_from(ct.level()).map_err(|_| Error::SizeOverflow { what: "level" })?);
        w.put_u8(u8::try_from(ct.degree()).map_err(|_| Error::SizeOverflow { what: "degree" })?);
        w.put_u32(ct.correction);
        w.put_f64(ct.noise_log2);
        let object = write_core_polys(&mut w, self.backend(), &ct.core, form)?;
        Ok(write_object(object, self.params().scheme(), self.params().id(), w.as_bytes()))
    }

    /// Serialises a ciphertext with every polynomial stored (never seeded).
    pub fn ciphertext_to_bytes_unseeded(&self, ct: &Ciphertext<B>) -> Result<Vec<u8>> {
        self.ciphertext_to_bytes_as(ct, WireForm::UNSEEDED)
    }

    /// Loads a ciphertext (plain or seeded), validating everything before allocating.
    pub fn ciphertext_from_bytes(&self, bytes: &[u8]) -> Result<Ciphertext<B>> {
        let (object, mut r, level, degree) = open_ciphertext(self.backend(), bytes, self.max_level())?;
        let correction = r.get_u32()?;
        let t = self.t.value();
        if correction >= t || self.t.inv(correction).is_none() {
            return Err(Error::InvalidCorrectionFactor { factor: u64::from(correction), t: u64::from(t) });
        }
        let noise_log2 = r.get_f64()?;
        if !noise_log2.is_finite() || !(0.0..=MAX_NOISE_LOG2).contains(&noise_log2) {
            return Err(Error::InvalidField { field: "noise estimate", reason: "not a finite value in [0, 8192]" });
        }
        // A peer cannot claim less noise than a fresh encryption of a zero message carries.
        let noise_log2 = noise_log2.max(self.noise_model().fresh_secret(0.0));
        let core = read_core(r, self.backend(), object, level, degree, self.params().id())?;
        Ok(Ciphertext { core, correction, noise_log2 })
    }

    /// Serialises a plaintext.
    pub fn plaintext_to_bytes(&self, pt: &Plaintext) -> Result<Vec<u8>> {
        if pt.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: pt.param_id });
        }
        let mut w = Writer::new();
        w.put_u32(u32::try_from(pt.coeffs.len()).map_err(|_| Error::SizeOverflow { what: "plaintext length" })?);
        write_residues(&mut w, &pt.coeffs);
        Ok(write_object(ObjectType::Plaintext, self.params().scheme(), self.params().id(), w.as_bytes()))
    }

    /// Loads a plaintext.
    pub fn plaintext_from_bytes(&self, bytes: &[u8]) -> Result<Plaintext> {
        let (h, payload) = read_object(bytes, ObjectType::Plaintext)?;
        check_header(self.backend(), &h)?;
        let mut r = Reader::new(payload);
        let n = r.get_u32()? as usize;
        if n != self.params().n() {
            return Err(Error::DimensionMismatch { what: "plaintext length", expected: self.params().n(), found: n });
        }
        let coeffs = read_residues(&mut r, &[self.t], n)?;
        r.finish()?;
        Ok(Plaintext { coeffs, param_id: self.params().id() })
    }
}
