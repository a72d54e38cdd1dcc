//! CKKS bootstrapping: ModRaise, CoeffToSlot, EvalMod, SlotToCoeff, with sparse-secret
//! encapsulation, composed from ModRaise ([`Ckks::mod_raise`]), [`super::linear`], [`super::evalmod`] and
//! [`super::sparse`].
//!
//! # Scales with 30-bit primes
//! The working policy is [`ScalePolicy::Double`] (composite scaling: two ~30-bit primes per
//! level, a scale of about `2^60`): every rescale divides by two primes, so a level holds a
//! `~2^60` scale without any prime above `2^30`. Rational rescaling (Cheddar's terminal primes)
//! is not used: composite scaling needs no new kernel, keeps every level's divisor a product
//! of chain primes (exact rounding, same words on every backend), and its `2^60` scale is
//! already above what EvalMod's approximation error lets through (about 2^-40 absolute).
//!
//! Bootstrapping itself runs at two smaller, chosen scales:
//!
//! * **Entry** (`Q_0` = the lowest [`BASE_PRIMES`] primes, about `2^60`): the input, at level
//!   [`Bootstrapper::entry_level`] or above, is dropped to that level and rescaled onto the
//!   base with the scale `Delta_b = ratio Q_0` ([`BootConfig::log_ratio`], `2^-12` by
//!   default): the message is then `|m| <= ratio Q_0`. The smaller the ratio, the closer
//!   `sin(2 pi m / Q_0) / (2 pi)` is to `m / Q_0` (relative error `(2 pi ratio)^2 / 6`), but
//!   the more EvalMod's absolute error weighs against `m / Q_0`.
//! * **After ModRaise** the ciphertext's coefficients are `t = m + Q_0 I`. Its scale is
//!   relabelled (free) to EvalMod's input scale `S_in` ([`Ckks::eval_mod_input_scale`] at the
//!   level after CoeffToSlot), and CoeffToSlot's matrices carry the factor `S_in / (2 Q_0)`
//!   (about `2^-4`: the diagonals keep ~56 bits): after the real/imaginary split the slots
//!   hold `x = t / Q_0` at `S_in`, which maps `[-(K+1), K+1]` onto `[-1, 1]` for free.
//! * **EvalMod** returns `~ m / Q_0` at `S_out`, chosen so that after SlotToCoeff the
//!   relabelled scale `S_out Delta_b / Q_0` is the divisor of the next rescale at the output
//!   level: the output continues under the double policy like a fresh ciphertext there.
//!
//! # Sparse-secret encapsulation
//! With [`BootConfig::sparse_secret`] the ciphertext is switched to an ephemeral secret of
//! Hamming weight [`SPARSE_HAMMING_WEIGHT`] on the base (the dense-to-sparse key lives on the
//! base primes only, see [`super::sparse`]), raised, and switched back to the dense secret at
//! the top: `|I|` is then a sum of 33 small terms and `K` = 16 covers it with the
//! probability [`Bootstrapper::failure_probability`] (Irwin-Hall bound). Without it `K` must
//! cover a sum of about `2N/3` terms.
//!
//! # Levels
//! From the top level `L`: CoeffToSlot takes `cts_levels`, EvalMod
//! `ceil(log2(degree + 1)) + double_angle` (its input is at the free scale), SlotToCoeff
//! `stc_levels`, each two primes: [`Bootstrapper::output_level`].

use super::evalmod::{failure_probability, EvalModParams};
use super::linear::{BootTransforms, PreparedBoot};
use super::sparse::{SparseSwitchKeys, SPARSE_HAMMING_WEIGHT};
use super::{Ciphertext, Ckks, ScalePolicy};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::Seed;
use crate::rlwe::{self, EvaluationKeys, KeyPlan, NoiseScale, SecretKey};

/// Primes of the modulus `Q_0` that ModRaise lifts from.
pub const BASE_PRIMES: usize = 2;

/// What a bootstrapping does and costs.
#[derive(Debug, Clone, PartialEq)]
pub struct BootConfig {
    /// Slots (a power of two, at most `N/2`): the ciphertexts it refreshes have this many.
    pub slots: usize,
    /// Levels of CoeffToSlot (`1..=log2 slots`).
    pub cts_levels: usize,
    /// Levels of SlotToCoeff (`1..=log2 slots`).
    pub stc_levels: usize,
    /// EvalMod's bound `K` on `|I|`.
    pub k: u32,
    /// EvalMod's double-angle steps.
    pub double_angle: u32,
    /// Degree of EvalMod's Chebyshev series.
    pub degree: usize,
    /// `log2(Delta_b / Q_0)`: the message-to-`Q_0` ratio at ModRaise (negative).
    pub log_ratio: f64,
    /// Switch to an ephemeral sparse secret around ModRaise.
    pub sparse_secret: bool,
    /// The output scale over the divisor of the next rescale at the output level (1 by
    /// default; e.g. 2 for a Chebyshev series on `[-1, 1]` next, whose affine map is then
    /// free: [`Ckks::chebyshev_input_scale`]). In `[2^-8, 2^8]`.
    pub output_scale_factor: f64,
}

impl BootConfig {
    /// The default for `slots` slots: CoeffToSlot and SlotToCoeff in 3 levels each (fewer for
    /// tiny slot counts), `K = 16`, 3 double-angle steps, degree 40 (EvalMod in 9 levels),
    /// ratio `2^-10`, sparse secret.
    ///
    /// Measured at `N = 2^14`, 8,192 slots, uniform real inputs (`examples/ckks_bootstrap.rs`,
    /// worst slot / median bits): degree 63 gave 20.0 / 22.6 at ratio `2^-12` and degree 40
    /// 20.5 / 22.7 in 28% less EvalMod time; at degree 40 the ratios `2^-8`, `2^-9`, `2^-10`,
    /// `2^-12`, `2^-14` gave 24.4, 23.6, 22.8, 20.5 and 18.7 worst-slot bits. The ratio bounds
    /// the error of `sin(2 pi m / Q_0) / (2 pi)` against `m / Q_0`, `(2 pi ratio)^2 / 6`
    /// relative for a coefficient at the bound (17 bits at `2^-10`, reached only by inputs with
    /// one dominant coefficient such as a constant vector); random inputs have coefficients
    /// near `ratio / sqrt(slots)`.
    #[must_use]
    pub fn new(slots: usize) -> Self {
        let log_slots = slots.max(2).trailing_zeros() as usize;
        Self {
            slots,
            cts_levels: 3.min(log_slots),
            stc_levels: 3.min(log_slots),
            k: 16,
            double_angle: 3,
            degree: 40,
            log_ratio: -10.0,
            sparse_secret: true,
            output_scale_factor: 1.0,
        }
    }
}

/// The stages of one bootstrapping, in order (for [`Bootstrapper::bootstrap_with`]'s hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BootStage {
    /// Drop to the entry level, rescale onto the base, switch to the sparse secret.
    Prepare,
    /// The CRT lift to the top level.
    ModRaise,
    /// Back to the dense secret at the top level.
    Decapsulate,
    /// The subring trace (sparse slots) and CoeffToSlot.
    CoeffToSlot,
    /// The real/imaginary split, two EvalMods and the join.
    EvalMod,
    /// SlotToCoeff.
    SlotToCoeff,
}

/// The keys of a bootstrapping: the relinearisation key, the rotation keys of its transforms
/// and conjugation, and the sparse-secret switching keys.
#[derive(Debug)]
pub struct BootKeys<B: Backend> {
    /// Relinearisation, rotation and conjugation keys.
    pub eval: EvaluationKeys<B>,
    /// The dense-to-sparse and sparse-to-dense keys ([`BootConfig::sparse_secret`]).
    pub sparse: Option<SparseSwitchKeys<B>>,
}

impl<B: Backend> BootKeys<B> {
    /// Bytes of every key as held in memory.
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.eval.resident_bytes(backend) + self.sparse.as_ref().map_or(0, |s| s.resident_bytes(backend))
    }
}

/// A bootstrapping plan for one parameter set and slot count (see the module docs).
#[derive(Debug, Clone)]
pub struct Bootstrapper {
    config: BootConfig,
    transforms: BootTransforms,
    eval_mod: EvalModParams,
    q0: f64,
    top: usize,
    s_in: f64,
    out_level: usize,
    out_scale: f64,
}

impl Bootstrapper {
    /// The plan for `ckks` (its policy must be [`ScalePolicy::Double`]). Errors:
    /// [`Error::ScalePolicyMismatch`] for another policy, [`Error::DepthExhausted`] for a chain too
    /// short for the levels (the level it ran out at and the primes still wanted),
    /// [`Error::InvalidField`] for EvalMod parameters out of range, and those of
    /// [`BootTransforms::new`].
    pub fn new<B: Backend>(ckks: &Ckks<B>, config: BootConfig) -> Result<Self> {
        if ckks.policy() != ScalePolicy::Double {
            return Err(Error::ScalePolicyMismatch {
                expected: ScalePolicy::Double.name(),
                found: ckks.policy().name(),
            });
        }
        if !(config.log_ratio.is_finite() && (-40.0..=-4.0).contains(&config.log_ratio)) {
            return Err(Error::InvalidField { field: "bootstrapping log ratio", reason: "must be in [-40, -4]" });
        }
        if !(config.output_scale_factor.is_finite() && (2f64.powi(-8)..=256.0).contains(&config.output_scale_factor)) {
            return Err(Error::InvalidField {
                field: "bootstrapping output scale factor",
                reason: "must be in [2^-8, 2^8]",
            });
        }
        let ppl = ckks.policy().primes_per_level();
        let top = ckks.max_level();
        let q0: f64 = ckks.params().q().iter().take(BASE_PRIMES).map(|m| f64::from(m.value())).product();
        let ratio = config.log_ratio.exp2();
        let cts_out = top
            .checked_sub(ppl * config.cts_levels)
            .ok_or(Error::DepthExhausted { level: top, wanted: ppl * config.cts_levels })?;
        // EvalMod's output scale is fixed below; the input scale and depth do not depend on it.
        let probe = EvalModParams::new(config.k, config.double_angle, config.degree, ratio, 1.0)?;
        let s_in = ckks.eval_mod_input_scale(&probe, cts_out)?;
        let eval_out = ckks.eval_mod_output_level(&probe, cts_out, s_in)?;
        let out_level = eval_out
            .checked_sub(ppl * config.stc_levels)
            .filter(|&l| l > BASE_PRIMES - 1 + ppl)
            .ok_or(Error::DepthExhausted { level: eval_out, wanted: ppl * config.stc_levels + BASE_PRIMES + ppl })?;
        let out_scale = ckks.next_rescale_divisor(out_level)? * config.output_scale_factor;
        let s_out = out_scale / ratio;
        let eval_mod = EvalModParams::new(config.k, config.double_angle, config.degree, ratio, s_out)?;
        let transforms = BootTransforms::new(
            ckks.params().n(),
            config.slots,
            config.cts_levels,
            config.stc_levels,
            s_in / (2.0 * q0),
        )?;
        Ok(Self { config, transforms, eval_mod, q0, top, s_in, out_level, out_scale })
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &BootConfig {
        &self.config
    }

    /// The CoeffToSlot and SlotToCoeff transforms.
    #[must_use]
    pub fn transforms(&self) -> &BootTransforms {
        &self.transforms
    }

    /// EvalMod's parameters.
    #[must_use]
    pub fn eval_mod_params(&self) -> &EvalModParams {
        &self.eval_mod
    }

    /// The lowest level a ciphertext may enter at: one rescale above the base.
    #[must_use]
    pub fn entry_level(&self) -> usize {
        BASE_PRIMES - 1 + ScalePolicy::Double.primes_per_level()
    }

    /// The level of a bootstrapped ciphertext.
    #[must_use]
    pub fn output_level(&self) -> usize {
        self.out_level
    }

    /// The scale of a bootstrapped ciphertext: [`BootConfig::output_scale_factor`] times the
    /// divisor of the next rescale at [`Bootstrapper::output_level`].
    #[must_use]
    pub fn output_scale(&self) -> f64 {
        self.out_scale
    }

    /// Levels a bootstrapping consumes from the top.
    #[must_use]
    pub fn depth(&self) -> usize {
        (self.top - self.out_level) / ScalePolicy::Double.primes_per_level()
    }

    /// Every rotation step the transforms use (keys are generated for these only).
    #[must_use]
    pub fn rotations(&self) -> Vec<i64> {
        self.transforms.rotations()
    }

    /// The probability that some coefficient's `|I|` exceeds `K` in one bootstrapping, in a
    /// ring of `n` coefficients (Irwin-Hall bound, [`failure_probability`]): with the sparse
    /// secret `h` = [`SPARSE_HAMMING_WEIGHT`]; without it, `h = 2n/3` (the expected weight of a
    /// uniform ternary secret). Errors: those of [`failure_probability`].
    pub fn failure_probability(&self, n: usize) -> Result<f64> {
        let h = if self.config.sparse_secret { SPARSE_HAMMING_WEIGHT } else { 2 * n / 3 };
        failure_probability(n, h, self.config.k)
    }

    /// The level CoeffToSlot's output (EvalMod's input) is at.
    fn cts_out(&self) -> usize {
        self.top - ScalePolicy::Double.primes_per_level() * self.config.cts_levels
    }

    /// The level EvalMod's output (SlotToCoeff's input) is at.
    fn eval_out(&self) -> usize {
        self.out_level + ScalePolicy::Double.primes_per_level() * self.config.stc_levels
    }

    /// Each evaluation key at the highest level bootstrapping uses it: the rotation keys of
    /// the trace and of every CoeffToSlot and SlotToCoeff group at that group's level,
    /// conjugation at CoeffToSlot's output, relinearisation at EvalMod's input
    /// ([`Ckks::boot_key_plan`]). Errors: those of [`Ckks::boot_key_plan`].
    pub fn key_plan<B: Backend>(&self, ckks: &Ckks<B>) -> Result<KeyPlan> {
        let mut plan = ckks.boot_key_plan(&self.transforms, self.top, self.eval_out())?;
        plan.merge(&KeyPlan { relin: Some(self.cts_out()), ..KeyPlan::default() });
        Ok(plan)
    }

    /// The keys: relinearisation, the transforms' rotations and conjugation under `sk`, each
    /// generated at the level of its use ([`Bootstrapper::key_plan`]), and with
    /// [`BootConfig::sparse_secret`] an ephemeral sparse secret (from `master` when given, else
    /// the operating system) with its two switching keys.
    pub fn gen_keys<B: Backend>(
        &self,
        ckks: &Ckks<B>,
        sk: &SecretKey<B>,
        master: Option<&Seed>,
    ) -> Result<BootKeys<B>> {
        let eval = rlwe::gen_planned_keys(ckks.backend(), sk, &self.key_plan(ckks)?, NoiseScale(1))?;
        let sparse = if self.config.sparse_secret {
            let s = ckks.gen_sparse_secret_key(master, SPARSE_HAMMING_WEIGHT)?;
            Some(ckks.gen_sparse_switch_keys(sk, &s, ckks.sparse_key_level())?)
        } else {
            None
        };
        Ok(BootKeys { eval, sparse })
    }

    /// CoeffToSlot's and SlotToCoeff's diagonals lifted once at the levels they run at
    /// ([`Ckks::prepare_boot`]), for [`Bootstrapper::bootstrap_with`]: the same words as the
    /// unprepared transforms, without re-encoding every diagonal at every bootstrap (at the
    /// cost of holding them: [`PreparedBoot::resident_bytes`]).
    pub fn prepare<B: Backend>(&self, ckks: &Ckks<B>) -> Result<PreparedBoot<B>> {
        ckks.prepare_boot(&self.transforms, self.top, self.eval_out())
    }

    /// Bootstraps `ct` (degree 1, [`BootConfig::slots`] slots, at [`Bootstrapper::entry_level`]
    /// or above): the same message at [`Bootstrapper::output_level`] and
    /// [`Bootstrapper::output_scale`].
    pub fn bootstrap<B: Backend>(
        &self,
        ckks: &Ckks<B>,
        ct: &Ciphertext<B>,
        keys: &BootKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.bootstrap_with(ckks, ct, keys, None, |_| Ok(()))
    }

    /// [`Bootstrapper::bootstrap`] with the transforms' diagonals `prepared` by
    /// [`Bootstrapper::prepare`] (the same words), calling `after` at the end of every stage
    /// (after the backend's queue is flushed), for timing and traffic ledgers.
    ///
    /// Errors (those of [`Bootstrapper::bootstrap`] too): a degree-2 ciphertext
    /// ([`Error::CiphertextDegree`]), another slot count ([`Error::DimensionMismatch`]), a
    /// `ckks` of another ring degree or top level than the plan's
    /// ([`Error::BootstrapPlanMismatch`]), `ct` below the entry level ([`Error::DepthExhausted`]),
    /// and those of the stages and of `after`.
    pub fn bootstrap_with<B: Backend>(
        &self,
        ckks: &Ckks<B>,
        ct: &Ciphertext<B>,
        keys: &BootKeys<B>,
        prepared: Option<&PreparedBoot<B>>,
        mut after: impl FnMut(BootStage) -> Result<()>,
    ) -> Result<Ciphertext<B>> {
        ckks.check_ct(ct)?;
        if ct.degree() != 1 {
            return Err(Error::CiphertextDegree { degree: ct.degree(), expected: 1 });
        }
        if ct.slots() != self.config.slots {
            return Err(Error::DimensionMismatch {
                what: "bootstrapped slots",
                expected: self.config.slots,
                found: ct.slots(),
            });
        }
        if ckks.params().n() != self.transforms.ring_degree() || ckks.max_level() != self.top {
            return Err(Error::BootstrapPlanMismatch {
                plan_ring_degree: self.transforms.ring_degree(),
                plan_top_level: self.top,
                ring_degree: ckks.params().n(),
                top_level: ckks.max_level(),
            });
        }
        let entry = self.entry_level();
        if ct.level() < entry {
            return Err(Error::DepthExhausted { level: ct.level(), wanted: entry - ct.level() });
        }
        if self.config.sparse_secret != keys.sparse.is_some() {
            return Err(Error::KeyDimensions { reason: "sparse-secret keys given or missing against the plan" });
        }
        let mut mark = |stage| -> Result<()> {
            ckks.backend().flush()?;
            after(stage)
        };

        // Prepare: onto the base at Delta_b = ratio Q_0.
        let at_entry = if ct.level() > entry { ckks.drop_to_level(ct, entry)? } else { ct.duplicate(ckks.backend())? };
        let mut base = ckks.rescale_to_above(&at_entry, self.eval_mod.message_ratio() * self.q0, BASE_PRIMES)?;
        if let Some(sparse) = &keys.sparse {
            base = ckks.encapsulate_sparse(&base, sparse)?;
        }
        mark(BootStage::Prepare)?;

        let mut raised = ckks.mod_raise(&base)?;
        mark(BootStage::ModRaise)?;
        if let Some(sparse) = &keys.sparse {
            raised = ckks.decapsulate_sparse(&raised, sparse)?;
            mark(BootStage::Decapsulate)?;
        }

        // Relabelled so that CoeffToSlot (with S_in / (2 Q_0) in its matrices) leaves x = t / Q_0
        // at S_in after the split.
        let raised = Ciphertext { scale: self.s_in, ..raised };
        let slots = match prepared {
            Some(p) => ckks.coeff_to_slot_prepared(&raised, p, &keys.eval)?,
            None => ckks.coeff_to_slot(&raised, &self.transforms, &keys.eval)?,
        };
        mark(BootStage::CoeffToSlot)?;

        let (re, im) = ckks.split_real_imag(&slots, &keys.eval)?;
        let re = ckks.eval_mod(&re, &self.eval_mod, &keys.eval)?;
        let im = ckks.eval_mod(&im, &self.eval_mod, &keys.eval)?;
        let joined = ckks.combine_real_imag(&re, &im)?;
        mark(BootStage::EvalMod)?;

        let out = match prepared {
            Some(p) => ckks.slot_to_coeff_prepared(&joined, p, &keys.eval)?,
            None => ckks.slot_to_coeff(&joined, &self.transforms, &keys.eval)?,
        };
        mark(BootStage::SlotToCoeff)?;
        if out.level() != self.out_level {
            return Err(Error::LevelMismatch { left: out.level(), right: self.out_level });
        }
        // Coefficients S_out m / Q_0 = (S_out Delta_b / Q_0) (m / Delta_b): the planned scale.
        Ok(Ciphertext { scale: self.out_scale, ..out })
    }
}
