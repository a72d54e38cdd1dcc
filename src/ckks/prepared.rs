//! Prepared CKKS plaintexts: encoded once into the Eval domain at the level they are used, for
//! repeated PMULT and PADD without the per-call upload and NTT of [`Ckks::mul_plain`] and
//! [`Ckks::add_plain`]. An operation with a prepared plaintext gives the same ciphertext words
//! and scale as the unprepared one.

use super::{Ciphertext, Ckks, Plaintext};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::{Eval, RnsPoly};

/// A CKKS plaintext lifted to `q_0..q_level` in the Eval domain on the backend, with its scale.
/// Made by [`Ckks::prepare_plain`]; used by [`Ckks::mul_plain_prepared`] and
/// [`Ckks::add_plain_prepared`]. Its `Debug` output does not show the residues.
pub struct PreparedPlaintext<B: Backend> {
    poly: RnsPoly<B, Eval>,
    level: usize,
    scale: f64,
    param_id: u64,
}

impl<B: Backend> std::fmt::Debug for PreparedPlaintext<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedPlaintext")
            .field("level", &self.level)
            .field("scale_log2", &self.scale.log2())
            .finish_non_exhaustive()
    }
}

impl<B: Backend> PreparedPlaintext<B> {
    /// The level it was prepared for: operations take ciphertexts at exactly this level.
    #[must_use]
    pub fn level(&self) -> usize {
        self.level
    }

    /// The plaintext's scale.
    #[must_use]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The lifted polynomial (Eval domain, over `q_0..q_level`).
    #[must_use]
    pub fn poly(&self) -> &RnsPoly<B, Eval> {
        &self.poly
    }
}

impl<B: Backend> Ckks<B> {
    /// Lifts `pt` once for ciphertexts at `level` (what [`Ckks::mul_plain`] and
    /// [`Ckks::add_plain`] do at every call). Errors: [`Error::ParameterMismatch`] for a
    /// plaintext of other parameters, [`Error::LevelOutOfRange`] above the top level.
    ///
    /// ```
    /// use num_complex::Complex64;
    /// use wgfhe::ckks::{Ckks, ScalePolicy};
    /// use wgfhe::params::{self, TestRing};
    ///
    /// let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 4, p_primes: 1, dnum: 4 }, 30)?;
    /// let ckks = Ckks::cpu(&p, ScalePolicy::Single)?;
    /// let sk = ckks.gen_secret_key_from_seed(&[3; 32])?;
    /// let level = ckks.max_level();
    /// let w = ckks.encode(&[Complex64::new(0.5, 0.0); 4], ckks.next_rescale_divisor(level)?, 4, level)?;
    /// let pw = ckks.prepare_plain(&w, level)?;
    /// let ct = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&[1.0, 2.0, 3.0, 4.0])?)?;
    /// let half = ckks.rescale(&ckks.mul_plain_prepared(&ct, &pw)?)?;
    /// for (z, want) in ckks.decrypt(&sk, &half)?.iter().zip([0.5, 1.0, 1.5, 2.0]) {
    ///     assert!((z.re - want).abs() < 1e-3, "{z} vs {want}");
    /// }
    /// # Ok::<(), wgfhe::Error>(())
    /// ```
    pub fn prepare_plain(&self, pt: &Plaintext, level: usize) -> Result<PreparedPlaintext<B>> {
        if level > self.max_level() {
            return Err(Error::LevelOutOfRange { level, max: self.max_level() });
        }
        Ok(PreparedPlaintext { poly: self.lift(pt, level)?, level, scale: pt.scale, param_id: pt.param_id })
    }

    fn check_prepared(&self, ct: &Ciphertext<B>, pp: &PreparedPlaintext<B>) -> Result<()> {
        self.check_ct(ct)?;
        if pp.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: pp.param_id });
        }
        if pp.level != ct.level() {
            return Err(Error::LevelMismatch { left: ct.level(), right: pp.level });
        }
        Ok(())
    }

    /// `ct * pt` (PMULT) with a prepared plaintext: one element-wise product per polynomial.
    /// The same ciphertext as [`Ckks::mul_plain`]; [`Error::LevelMismatch`] unless `ct` is at
    /// the prepared level.
    pub fn mul_plain_prepared(&self, ct: &Ciphertext<B>, pp: &PreparedPlaintext<B>) -> Result<Ciphertext<B>> {
        self.check_prepared(ct, pp)?;
        let scale = self.checked_scale(ct.scale * pp.scale, ct.level())?;
        Ok(ct.with(ct.core.map(|p| p.mul(self.backend(), &pp.poly))?, scale))
    }

    /// `ct + pt` (PADD) with a prepared plaintext of the ciphertext's scale: the same
    /// ciphertext as [`Ckks::add_plain`]; [`Error::LevelMismatch`] unless `ct` is at the
    /// prepared level, [`Error::ScaleMismatch`].
    pub fn add_plain_prepared(&self, ct: &Ciphertext<B>, pp: &PreparedPlaintext<B>) -> Result<Ciphertext<B>> {
        self.check_prepared(ct, pp)?;
        self.same_level_and_scale(ct, ct.level(), pp.scale)?;
        Ok(ct.with(ct.core.map_c0(self.backend(), |c0| c0.add(self.backend(), &pp.poly))?, ct.scale))
    }
}
