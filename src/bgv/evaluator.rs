//! Homomorphic operations of BGV.
//!
//! Binary operations need operands at the same level ([`Error::LevelMismatch`] otherwise; align
//! them with [`Bgv::mod_switch_to_level`]), except [`Bgv::mul_relin`], which documents that it
//! switches both operands down as far as their noise allows and then to the lower of the two
//! levels. Correction factors are aligned automatically (the second operand is multiplied by a
//! constant mod t).

use super::noise::log2_add;
use super::{Bgv, Ciphertext, Plaintext};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::{Eval, RnsPoly};
use crate::rlwe::{self, CiphertextCore, EvaluationKeys, GaloisKey, KeyRequest, RelinKey, SecretKey};

/// Two operands, each switched down (`Some`) or used as they are (`None`).
type Switched<B> = (Option<Ciphertext<B>>, Option<Ciphertext<B>>);

impl<B: Backend> Bgv<B> {
    // ---- key generation ------------------------------------------------------------------

    /// The relinearisation key (`s^2 -> s`).
    pub fn gen_relin_key(&self, sk: &SecretKey<B>) -> Result<RelinKey<B>> {
        rlwe::gen_relin_key(self.backend(), sk, self.scale())
    }

    /// The Galois key for `X -> X^g`.
    pub fn gen_galois_key(&self, sk: &SecretKey<B>, g: usize) -> Result<GaloisKey<B>> {
        rlwe::gen_galois_key(self.backend(), sk, g, self.scale())
    }

    /// The Galois element of a left rotation of both rows by `steps` (negative: right).
    #[must_use]
    pub fn column_rotation_element(&self, steps: i64) -> usize {
        rlwe::galois_element(3, steps, self.params().n())
    }

    /// The Galois element that swaps the two rows.
    #[must_use]
    pub fn row_swap_element(&self) -> usize {
        2 * self.params().n() - 1
    }

    /// Evaluation keys: relinearisation plus the column rotations of `request` and, if it asks,
    /// the row swap.
    pub fn gen_evaluation_keys(&self, sk: &SecretKey<B>, request: &KeyRequest) -> Result<EvaluationKeys<B>> {
        let mut elements: Vec<usize> =
            request.rotation_steps().iter().map(|&s| self.column_rotation_element(s)).collect();
        if request.includes_swap() {
            elements.push(self.row_swap_element());
        }
        rlwe::gen_evaluation_keys(self.backend(), sk, &elements, self.scale())
    }

    /// Evaluation keys generated at the levels of `plan` ([`rlwe::gen_planned_keys`]; a plan
    /// from [`Bgv::plan_keys`]).
    pub fn gen_planned_keys(&self, sk: &SecretKey<B>, plan: &rlwe::KeyPlan) -> Result<EvaluationKeys<B>> {
        rlwe::gen_planned_keys(self.backend(), sk, plan, self.scale())
    }

    // ---- helpers -----------------------------------------------------------------------------

    fn same_level(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<()> {
        self.check_ct(a)?;
        self.check_ct(b)?;
        if a.level() != b.level() {
            return Err(Error::LevelMismatch { left: a.level(), right: b.level() });
        }
        Ok(())
    }

    /// `ct`'s polynomials times `k = target / corr mod t` (centred), and the noise after it.
    fn rescaled_polys(&self, ct: &Ciphertext<B>, target: u32) -> Result<(Vec<RnsPoly<B, Eval>>, f64)> {
        if ct.correction == target {
            return Ok((ct.core.duplicate_polys(self.backend())?, ct.noise_log2));
        }
        let inv = self
            .t
            .inv(ct.correction)
            .ok_or(Error::InvalidCorrectionFactor { factor: u64::from(ct.correction), t: u64::from(self.t.value()) })?;
        let k = self.t.center(self.t.mul(target, inv));
        let polys = ct.core.polys().iter().map(|p| p.mul_int(self.backend(), k)).collect::<Result<_>>()?;
        Ok((polys, ct.noise_log2 + (k.unsigned_abs() as f64).max(1.0).log2()))
    }

    /// [`Error::NoiseBudgetExhausted`] unless noise `2^noise` still decrypts at `level`.
    pub(crate) fn check_noise(&self, noise: f64, level: usize) -> Result<()> {
        let log_q = self.noise.log_q_at(level);
        if !self.noise.decryptable(noise, level) {
            return Err(Error::NoiseBudgetExhausted { noise_log2: noise, modulus_log2: log_q });
        }
        Ok(())
    }

    fn combine(
        &self,
        a: &Ciphertext<B>,
        b: &Ciphertext<B>,
        op: impl Fn(&RnsPoly<B, Eval>, &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>,
    ) -> Result<Ciphertext<B>> {
        self.same_level(a, b)?;
        if a.correction == b.correction && a.degree() == b.degree() {
            // The common case: no rescaling, no copies.
            let noise = log2_add(a.noise_log2, b.noise_log2);
            self.check_noise(noise, a.level())?;
            let polys = a.core.polys().iter().zip(b.core.polys()).map(|(x, y)| op(x, y)).collect::<Result<_>>()?;
            return Ok(Ciphertext { core: a.core.with_polys(polys)?, correction: a.correction, noise_log2: noise });
        }
        // Different correction factors: rescale the operand with less noise to the other's.
        let (correction, (ap, a_noise), (bp, b_noise)) = if a.noise_log2 >= b.noise_log2 {
            (a.correction, self.rescaled_polys(a, a.correction)?, self.rescaled_polys(b, a.correction)?)
        } else {
            (b.correction, self.rescaled_polys(a, b.correction)?, self.rescaled_polys(b, b.correction)?)
        };
        let noise = log2_add(a_noise, b_noise);
        self.check_noise(noise, a.level())?;
        let polys = rlwe::zip_padded(self.backend(), &ap, &bp, op)?;
        Ok(Ciphertext { core: a.core.with_polys(polys)?, correction, noise_log2: noise })
    }

    // ---- linear operations -------------------------------------------------------------------

    /// `a + b` (HADD).
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
        Ok(Ciphertext {
            core: a.core.map(|p| p.neg(self.backend()))?,
            correction: a.correction,
            noise_log2: a.noise_log2,
        })
    }

    /// `k * ct` for an integer `k` (every polynomial times `k`; the noise grows by `|k|`), the
    /// correction factor unchanged.
    pub(crate) fn mul_int(&self, ct: &Ciphertext<B>, k: i64) -> Result<Ciphertext<B>> {
        let core = ct.core.map(|p| p.mul_int(self.backend(), k))?;
        let noise = self.noise.mul_plain(ct.noise_log2, (k.unsigned_abs() as f64).max(1.0).log2());
        self.check_noise(noise, ct.level())?;
        Ok(Ciphertext { core, correction: ct.correction, noise_log2: noise })
    }

    /// `ct + pt` (PADD).
    pub fn add_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.combine_plain(ct, pt, |c0, m| c0.add(self.backend(), m))
    }

    /// `ct - pt`.
    pub fn sub_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.combine_plain(ct, pt, |c0, m| c0.sub(self.backend(), m))
    }

    /// Applies `op(c_0, corr * m)`; `c_1` (and a seed standing for it) is untouched.
    fn combine_plain(
        &self,
        ct: &Ciphertext<B>,
        pt: &Plaintext,
        op: impl Fn(&RnsPoly<B, Eval>, &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>,
    ) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let m = self.lift(pt, ct.correction, ct.level())?;
        self.combine_lifted(ct, &m, self.plain_norm_log2(pt, ct.correction), op)
    }

    /// `op(c_0, m)` for the lifted plaintext `m = corr * pt` of canonical norm `2^norm_log2`
    /// (PADD and its prepared form).
    pub(crate) fn combine_lifted(
        &self,
        ct: &Ciphertext<B>,
        m: &RnsPoly<B, Eval>,
        norm_log2: f64,
        op: impl Fn(&RnsPoly<B, Eval>, &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>>,
    ) -> Result<Ciphertext<B>> {
        let core = ct.core.map_c0(self.backend(), |c0| op(c0, m))?;
        let noise = log2_add(ct.noise_log2, norm_log2);
        self.check_noise(noise, ct.level())?;
        Ok(Ciphertext { core, correction: ct.correction, noise_log2: noise })
    }

    /// `ct * pt` (PMULT).
    pub fn mul_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        self.mul_plain_as(ct, pt, ct.correction)
    }

    /// `ct * pt` with the result's correction factor set to `correction`: the plaintext is
    /// multiplied by `correction / ct.correction_factor() mod t` before the product. Products of
    /// inputs with different correction factors can then be added without rescaling one of them
    /// by an integer up to `t/2` (which [`Bgv::add`] must do, multiplying its noise by as
    /// much); here the factor only changes the plaintext, whose exact norm enters the noise
    /// estimate. Errors: [`Error::InvalidCorrectionFactor`] if `correction` is not invertible
    /// mod t, and those of [`Bgv::mul_plain`].
    pub fn mul_plain_as(&self, ct: &Ciphertext<B>, pt: &Plaintext, correction: u32) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let factor = self.plain_factor(ct, correction)?;
        let m = self.lift(pt, factor, ct.level())?;
        self.mul_plain_lifted(ct, &m, self.plain_norm_log2(pt, factor), correction)
    }

    /// The factor [`Bgv::mul_plain_as`] multiplies its plaintext by: `correction /
    /// ct.correction_factor() mod t` (1 when they are equal), the factor of the prepared
    /// plaintext that stands for it ([`Bgv::prepare_plain_with_factor`]). Errors:
    /// [`Error::InvalidCorrectionFactor`] if `correction` or the ciphertext's factor is not
    /// invertible mod t.
    pub fn plain_factor(&self, ct: &Ciphertext<B>, correction: u32) -> Result<u32> {
        let invalid =
            |factor: u32| Error::InvalidCorrectionFactor { factor: u64::from(factor), t: u64::from(self.t.value()) };
        if correction == 0 || correction >= self.t.value() || self.t.inv(correction).is_none() {
            return Err(invalid(correction));
        }
        Ok(if correction == ct.correction {
            1
        } else {
            self.t.mul(correction, self.t.inv(ct.correction).ok_or_else(|| invalid(ct.correction))?)
        })
    }

    /// `ct * m` for the lifted plaintext `m` of canonical norm `2^norm_log2`, the result's
    /// correction factor `correction` (PMULT and its prepared form).
    pub(crate) fn mul_plain_lifted(
        &self,
        ct: &Ciphertext<B>,
        m: &RnsPoly<B, Eval>,
        norm_log2: f64,
        correction: u32,
    ) -> Result<Ciphertext<B>> {
        let core = ct.core.map(|p| p.mul(self.backend(), m))?;
        let noise = self.noise.mul_plain(ct.noise_log2, norm_log2);
        self.check_noise(noise, ct.level())?;
        Ok(Ciphertext { core, correction, noise_log2: noise })
    }

    // ---- multiplication ----------------------------------------------------------------------

    /// The tensor product `(a_0 b_0, a_0 b_1 + a_1 b_0, a_1 b_1)`: a degree-2 ciphertext,
    /// operands at the same level and of degree 1.
    pub fn mul(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.same_level(a, b)?;
        let core = a.core.tensor(self.backend(), &b.core)?;
        let noise = self.noise.mul(a.noise_log2, b.noise_log2);
        self.check_noise(noise, a.level())?;
        Ok(Ciphertext { core, correction: self.t.mul(a.correction, b.correction), noise_log2: noise })
    }

    /// Relinearises a degree-2 ciphertext to degree 1.
    pub fn relinearize(&self, ct: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        if keys.relin.is_none() {
            return Err(Error::MissingRelinKey);
        }
        if ct.degree() != 2 {
            return Err(Error::CiphertextDegree { degree: ct.degree(), expected: 2 });
        }
        let switched = self.to_key_level(ct, keys.relin.as_ref().map(|k| &k.0))?;
        let ct = switched.as_ref().unwrap_or(ct);
        let core = ct.core.relinearize(self.backend(), keys, Some(self.t.value()))?;
        self.backend().flush()?;
        let noise = log2_add(ct.noise_log2, self.noise.key_switch(ct.level()));
        self.check_noise(noise, ct.level())?;
        Ok(Ciphertext { core, correction: ct.correction, noise_log2: noise })
    }

    /// HMULT: switches each operand down as far as its noise allows, aligns the levels, takes the
    /// tensor product and relinearises: the words of [`Bgv::switch_and_tensor`] followed by
    /// [`Bgv::relinearize`], with the tensor product fused into the key switch
    /// ([`rlwe::mul_relinearize`]) unless the relinearisation key sits below the operands' level
    /// (planned keys; then the product is switched down to it first, as `relinearize` does).
    pub fn mul_relin(&self, a: &Ciphertext<B>, b: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        let Some(rk) = keys.relin.as_ref() else { return Err(Error::MissingRelinKey) };
        let (a_sw, b_sw) = self.aligned_operands(a, b)?;
        let (a, b) = (a_sw.as_ref().unwrap_or(a), b_sw.as_ref().unwrap_or(b));
        let out = if rk.0.level(self.backend())? < a.level() {
            self.relinearize(&self.mul(a, b)?, keys)?
        } else {
            self.same_level(a, b)?;
            if a.degree() != 1 || b.degree() != 1 {
                return Err(Error::CiphertextDegree { degree: a.degree().max(b.degree()), expected: 1 });
            }
            let product_noise = self.noise.mul(a.noise_log2, b.noise_log2);
            self.check_noise(product_noise, a.level())?;
            let core = a.core.mul_relinearize(self.backend(), &b.core, keys, Some(self.t.value()))?;
            self.backend().flush()?;
            let noise = log2_add(product_noise, self.noise.key_switch(a.level()));
            Ciphertext { core, correction: self.t.mul(a.correction, b.correction), noise_log2: noise }
        };
        self.check_noise(out.noise_log2, out.level())?;
        Ok(out)
    }

    /// The operands of a product switched down as far as their noise allows, then to the lower
    /// of the two levels (`None`: the operand is used as it is, no copy).
    fn aligned_operands(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Switched<B>> {
        self.check_ct(a)?;
        self.check_ct(b)?;
        let auto_level =
            |c: &Ciphertext<B>| c.level() - self.noise.primes_to_drop_degree(c.noise_log2, c.level(), c.degree());
        let level = auto_level(a).min(auto_level(b));
        let switch = |c: &Ciphertext<B>| -> Result<Option<Ciphertext<B>>> {
            if c.level() == level {
                Ok(None)
            } else {
                self.mod_switch_recorded(c, c.level() - level).map(Some)
            }
        };
        Ok((switch(a)?, switch(b)?))
    }

    /// The first half of [`Bgv::mul_relin`], without the relinearisation: switches each operand
    /// (of degree 1) down as far as its noise allows, aligns the levels and returns the tensor
    /// product, a degree-2 ciphertext `(c_0, c_1, c_2)` decrypting under `(1, s, s^2)`.
    ///
    /// Degree-2 ciphertexts can be added to each other and to degree-1 ones ([`Bgv::add`] pads
    /// the shorter), multiplied by integers and plaintexts and switched down; a sum of products
    /// then needs one [`Bgv::relinearize`] instead of one per product (lazy relinearisation).
    /// Errors: [`Error::CiphertextDegree`] for an operand of degree 2.
    pub fn switch_and_tensor(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        // The level after each operand's automatic switch, then the lower of the two; operands
        // already there are used as they are (no copy).
        let (a_sw, b_sw) = self.aligned_operands(a, b)?;
        self.mul(a_sw.as_ref().unwrap_or(a), b_sw.as_ref().unwrap_or(b))
    }

    // ---- modulus switching -------------------------------------------------------------------

    /// Drops the last `count` primes, one at a time with exact centred rounding that preserves
    /// the plaintext mod t; the correction factor absorbs `q^-1 mod t` per dropped prime. The
    /// roundings run on the dropped limbs only ([`rlwe::drop_primes`]): `l + 1` limb-NTTs per
    /// polynomial for any `count`.
    pub fn mod_switch(&self, ct: &Ciphertext<B>, count: usize) -> Result<Ciphertext<B>> {
        let out = self.mod_switch_recorded(ct, count)?;
        self.backend().flush()?;
        Ok(out)
    }

    /// [`Bgv::mod_switch`] without the flush: for operations that switch as one of their steps.
    fn mod_switch_recorded(&self, ct: &Ciphertext<B>, count: usize) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let level = ct.level();
        if count > level {
            return Err(Error::DepthExhausted { level, wanted: count });
        }
        let be = self.backend();
        let polys = if count == 0 {
            ct.core.duplicate_polys(be)?
        } else {
            rlwe::drop_primes(be, ct.core.polys(), count, Some(self.t.value()))?
        };
        let mut correction = ct.correction;
        let mut noise = ct.noise_log2;
        let ctx = be.context();
        for step in 0..count {
            let l = level - step;
            let q = ctx.modulus(l)?.value();
            let q_inv = self.t.inv(self.t.reduce_u32(q)).ok_or(Error::InvalidPlaintextModulus {
                t: u64::from(self.t.value()),
                reason: "not coprime to a chain prime",
            })?;
            correction = self.t.mul(correction, q_inv);
            noise = self.noise.after_mod_switch_degree(noise, self.noise.log_prime(l)?, 1, ct.degree());
        }
        // No prime dropped: `c_1` is untouched and keeps its seed.
        let seed = if count == 0 { ct.core.seed().copied() } else { None };
        Ok(Ciphertext { core: CiphertextCore::from_parts(polys, seed, ct.param_id())?, correction, noise_log2: noise })
    }

    /// Switches down to `level` (no-op at the same level).
    pub fn mod_switch_to_level(&self, ct: &Ciphertext<B>, level: usize) -> Result<Ciphertext<B>> {
        let cur = ct.level();
        if level > cur {
            return Err(Error::LevelOutOfRange { level, max: cur });
        }
        self.mod_switch(ct, cur - level)
    }

    /// Drops as many primes as the noise estimate allows without losing precision (the noise
    /// stays above the rounding floor), the step taken before each multiplication.
    pub fn mod_switch_auto(&self, ct: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        let k = self.noise.primes_to_drop_degree(ct.noise_log2, ct.level(), ct.degree());
        self.mod_switch(ct, k)
    }

    /// Switches down to the lowest level at which the ciphertext still decrypts with a margin:
    /// the smallest (and cheapest to store or send) form of a final result.
    pub fn mod_switch_to_min(&self, ct: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        let level = ct.level();
        let target = (0..=level)
            .find(|&l| {
                let dropped = self.noise.log_q_at(level) - self.noise.log_q_at(l);
                let after = if l == level {
                    ct.noise_log2
                } else {
                    self.noise.after_mod_switch(ct.noise_log2, dropped, level - l)
                };
                after < self.noise.log_q_at(l) - 1.0
            })
            .unwrap_or(level);
        self.mod_switch_to_level(ct, target)
    }

    // ---- rotations -------------------------------------------------------------------------

    /// Applies `X -> X^g` with its Galois key: the slots permute accordingly.
    pub fn apply_galois(
        &self,
        ct: &Ciphertext<B>,
        g: usize,
        keys: &EvaluationKeys<B>,
        what: &str,
    ) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let switched = self.to_key_level(ct, keys.galois.get(&g).map(|k| &k.key))?;
        let ct = switched.as_ref().unwrap_or(ct);
        let core = ct.core.apply_galois(self.backend(), g, keys, what, Some(self.t.value()))?;
        self.backend().flush()?;
        let noise = log2_add(ct.noise_log2, self.noise.key_switch(ct.level()));
        self.check_noise(noise, ct.level())?;
        Ok(Ciphertext { core, correction: ct.correction, noise_log2: noise })
    }

    /// `ct` switched down to the level of `key` when the key holds fewer levels than `ct` (a key
    /// generated at the highest level a plan expected it at, [`Bgv::gen_planned_keys`], met by
    /// a ciphertext that kept more primes): modulus switching preserves the plaintext and the
    /// noise estimate follows it, so the result decrypts as any switched ciphertext does (its
    /// words are not those of a switch at the higher level). `None` when the key covers `ct` or
    /// there is no key (the key switch then reports the missing key).
    fn to_key_level(&self, ct: &Ciphertext<B>, key: Option<&rlwe::KeySwitchKey<B>>) -> Result<Option<Ciphertext<B>>> {
        let Some(key) = key else { return Ok(None) };
        let level = key.level(self.backend())?;
        if level >= ct.level() {
            return Ok(None);
        }
        self.mod_switch_to_level(ct, level).map(Some)
    }

    /// Rotates both rows of the slot matrix left by `steps` (negative: right) (HROTATE).
    /// Naming follows Lattigo: SEAL calls this `rotate_rows` and the row swap `rotate_columns`.
    pub fn rotate_columns(&self, ct: &Ciphertext<B>, steps: i64, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        let g = self.column_rotation_element(steps);
        if g == 1 {
            return ct.duplicate(self.backend());
        }
        self.apply_galois(ct, g, keys, &format!("columns by {steps}"))
    }

    /// Swaps the two rows of the slot matrix.
    pub fn rotate_rows(&self, ct: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.apply_galois(ct, self.row_swap_element(), keys, "row swap")
    }
}
