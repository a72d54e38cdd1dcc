//! EvalMod, the homomorphic reduction modulo `Q_0` of CKKS bootstrapping, and the failure
//! probability of its range `K`.
//!
//! # What it computes
//! After ModRaise ([`Ckks::mod_raise`]) and CoeffToSlot, the slots hold real `x = t / Q_0` with
//! `t = m + Q_0 I`, `|m| <= ratio Q_0` (`ratio` the message-to-`Q_0` ratio) and an integer
//! `|I| <= K` (with probability [`failure_probability`]). EvalMod returns
//! `sin(2 pi x) / (2 pi) = sin(2 pi m / Q_0) / (2 pi) ~ m / Q_0`, whose relative distance to
//! `m / Q_0` is at most `(2 pi ratio)^2 / 6`.
//!
//! # How
//! * a [`ChebyshevSeries`] of degree `d` interpolating the scaled cosine
//!   `cos(2 pi (x - 1/4) / 2^r)` on `[-(K + 1), K + 1]`, evaluated by [`Ckks::eval_chebyshev_to`];
//! * `r` double-angle steps `c <- 2 c^2 - 1` (`cos 2a = 2 cos^2 a - 1`), which turn it into
//!   `cos(2 pi (x - 1/4)) = sin(2 pi x)`: each a square, a rescale, the factor 2 as a halving
//!   of the scale (free) and the integer `-scale` added to `c_0`;
//! * the final `1 / (2 pi)` is a change of scale (free).
//!
//! The scales are planned backwards from the caller's output scale `S`: the last step must
//! leave `S / (2 pi)`, and a square at level `l` maps `t` to `t^2 / (2 D_l)`, so every step's
//! input scale is `sqrt(2 D_l t_next)`; the series is evaluated straight to the first of them.
//!
//! # Levels
//! EvalMod consumes `ceil(log2(d + 1)) + r` levels ([`EvalModParams::depth`]; one rescale by
//! [`super::ScalePolicy::primes_per_level`] primes each) when the input is at
//! [`Ckks::eval_mod_input_scale`], one more otherwise (the affine map of the series then costs
//! a multiplication).
//!
//! # Precision
//! Measured (tests of this module, `ScalePolicy::Double`, `ratio = 2^-10`): the plaintext
//! pipeline reaches the `f64` floor of about `2^-45 Q_0` with `(K, r, d) = (12, 3, 40)`,
//! `(12, 2, 50)`, `(16, 3, 40)` or `(16, 2, 60)`; below those degrees it falls apart quickly
//! (`(16, 2, 40)`: `2^-16 Q_0`). Homomorphically, on `N = 2^10`, the error is about
//! `2^-41.5 Q_0` for all six configurations tested, the noise of the powers `T_i` amplified by
//! the series and the double angles; it grows with `N` (about `2^-37` at `N = 2^13`, `2^-36`
//! at `N = 2^14`). The message's relative error is that over `ratio`, plus the sine's
//! curvature `(2 pi ratio)^2 / 6`.
//!
//! # Failure probability
//! [`failure_probability`]: after ModRaise, the `I` of a coefficient is the rounding of
//! `(c_0 + <c_1, s>) / Q_0` with `c_0, c_1` centred mod `Q_0`. Modelling `c_0 / Q_0` and the
//! `h` products `+-c_1[j] / Q_0` of the secret's non-zero entries as `h + 1` independent uniform
//! variables on `[-1/2, 1/2]` (the assumption: the coefficients of a ciphertext at the lowest
//! level look uniform mod `Q_0`, and the message is negligible next to `Q_0`), their sum `S`
//! is Irwin-Hall distributed (shifted by `(h + 1) / 2`), and `|I| > K` exactly when
//! `|S| > K + 1/2`. The probability for one coefficient is computed exactly
//! ([`irwin_hall_tail`], integer arithmetic), and a union bound over the `n_coeffs`
//! coefficients gives the failure probability of one bootstrapping.

use num_bigint::{BigInt, BigUint};
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::chebyshev::ChebyshevSeries;
use super::{Ciphertext, Ckks};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::rlwe::EvaluationKeys;

/// The largest `K` [`EvalModParams`] accepts.
pub const MAX_EVAL_MOD_K: u32 = 1024;
/// The most double-angle steps [`EvalModParams`] accepts.
pub const MAX_DOUBLE_ANGLE: u32 = 8;

/// Parameters of EvalMod (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalModParams {
    k: u32,
    double_angle: u32,
    degree: usize,
    message_ratio: f64,
    output_scale: f64,
    series: ChebyshevSeries,
}

impl EvalModParams {
    /// Validated parameters: `k` in `[1, MAX_EVAL_MOD_K]`, `double_angle` in
    /// `[0, MAX_DOUBLE_ANGLE]`, `degree` in `[1, MAX_CHEBYSHEV_DEGREE]`, `message_ratio`
    /// (`max |m| / Q_0`) in `(0, 1/4)`, `output_scale` finite and at least 1
    /// ([`Error::InvalidField`] otherwise).
    pub fn new(k: u32, double_angle: u32, degree: usize, message_ratio: f64, output_scale: f64) -> Result<Self> {
        if !(1..=MAX_EVAL_MOD_K).contains(&k) {
            return Err(Error::InvalidField { field: "EvalMod K", reason: "must be in [1, MAX_EVAL_MOD_K]" });
        }
        if double_angle > MAX_DOUBLE_ANGLE {
            return Err(Error::InvalidField {
                field: "EvalMod double angle",
                reason: "at most MAX_DOUBLE_ANGLE steps",
            });
        }
        if !(1..=super::chebyshev::MAX_CHEBYSHEV_DEGREE).contains(&degree) {
            return Err(Error::InvalidField {
                field: "EvalMod degree",
                reason: "must be in [1, MAX_CHEBYSHEV_DEGREE]",
            });
        }
        if !(message_ratio > 0.0 && message_ratio < 0.25) {
            return Err(Error::InvalidField { field: "EvalMod message ratio", reason: "must be in (0, 1/4)" });
        }
        if !output_scale.is_finite() || output_scale < 1.0 {
            return Err(Error::InvalidField { field: "EvalMod output scale", reason: "must be finite and at least 1" });
        }
        let r = f64::from(double_angle).exp2();
        let bound = f64::from(k) + 1.0;
        let series = ChebyshevSeries::interpolate(
            |x| (2.0 * std::f64::consts::PI * (x - 0.25) / r).cos(),
            -bound,
            bound,
            degree,
        )?;
        Ok(Self { k, double_angle, degree, message_ratio, output_scale, series })
    }

    /// `K`, the bound on `|I|`.
    #[must_use]
    pub fn k(&self) -> u32 {
        self.k
    }

    /// `r`, the number of double-angle steps.
    #[must_use]
    pub fn double_angle(&self) -> u32 {
        self.double_angle
    }

    /// The degree of the Chebyshev approximation.
    #[must_use]
    pub fn degree(&self) -> usize {
        self.degree
    }

    /// `max |m| / Q_0`.
    #[must_use]
    pub fn message_ratio(&self) -> f64 {
        self.message_ratio
    }

    /// The scale of EvalMod's output.
    #[must_use]
    pub fn output_scale(&self) -> f64 {
        self.output_scale
    }

    /// The interpolated scaled cosine.
    #[must_use]
    pub fn series(&self) -> &ChebyshevSeries {
        &self.series
    }

    /// Levels EvalMod consumes from an input at [`Ckks::eval_mod_input_scale`]:
    /// `ceil(log2(degree + 1)) + r`.
    #[must_use]
    pub fn depth(&self) -> usize {
        self.series.depth() + self.double_angle as usize
    }

    /// The plaintext pipeline on one value: the series, then the double-angle steps, then
    /// `/ (2 pi)` (what the homomorphic EvalMod computes, without its noise).
    #[must_use]
    pub fn evaluate(&self, x: f64) -> f64 {
        let mut c = self.series.evaluate(x);
        for _ in 0..self.double_angle {
            c = 2.0 * c * c - 1.0;
        }
        c / (2.0 * std::f64::consts::PI)
    }

    /// The errors of the plaintext pipeline over the inputs `x = I + f`, `|I| <= K`,
    /// `|f| <= ratio`, in units of `Q_0` (`samples` points per integer): the largest distance
    /// to `sin(2 pi x) / (2 pi)` (the approximation) and to `f` (also counting the sine's
    /// curvature).
    #[must_use]
    pub fn plaintext_errors(&self, samples: usize) -> (f64, f64) {
        let k = i64::from(self.k);
        let samples = samples.max(2);
        let mut worst = (0.0_f64, 0.0_f64);
        for i in -k..=k {
            for s in 0..samples {
                let f = self.message_ratio * (2.0 * s as f64 / (samples - 1) as f64 - 1.0);
                let x = i as f64 + f;
                let got = self.evaluate(x);
                let sine = (2.0 * std::f64::consts::PI * f).sin() / (2.0 * std::f64::consts::PI);
                worst = (worst.0.max((got - sine).abs()), worst.1.max((got - f).abs()));
            }
        }
        worst
    }
}

impl<B: Backend> Ckks<B> {
    /// The input scale at `level` that makes EvalMod's affine map free (see
    /// [`Ckks::chebyshev_input_scale`]): `2 D / (K + 1)`.
    pub fn eval_mod_input_scale(&self, params: &EvalModParams, level: usize) -> Result<f64> {
        self.chebyshev_input_scale(&params.series, level)
    }

    /// The level of EvalMod's output for an input at `level` and `scale`.
    pub fn eval_mod_output_level(&self, params: &EvalModParams, level: usize, scale: f64) -> Result<usize> {
        let after_series = self.chebyshev_output_level(level, scale, &params.series)?;
        let wanted = params.double_angle as usize * self.policy.primes_per_level();
        after_series
            .checked_sub(wanted)
            .filter(|&l| l + 1 >= self.policy.base_primes())
            .ok_or(Error::DepthExhausted { level: after_series, wanted })
    }

    /// EvalMod on every slot: real slots `x = I + m / Q_0` become `sin(2 pi x) / (2 pi)`
    /// (`~ m / Q_0`) at [`EvalModParams::output_scale`], [`EvalModParams::depth`] levels lower
    /// (see the module docs). Errors as [`Ckks::eval_chebyshev_to`].
    pub fn eval_mod(
        &self,
        ct: &Ciphertext<B>,
        params: &EvalModParams,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        let out_level = self.eval_mod_output_level(params, ct.level(), ct.scale)?;
        let ppl = self.policy.primes_per_level();
        // Backwards: the scale before each double-angle step (the last one first).
        let mut scale = params.output_scale / (2.0 * std::f64::consts::PI);
        for step in 0..params.double_angle as usize {
            // The square of step `r - 1 - step` happens at this level.
            let level = out_level + (step + 1) * ppl;
            scale = (2.0 * self.next_rescale_divisor(level)? * scale).sqrt();
        }
        let mut c = self.eval_chebyshev_to(ct, &params.series, keys, scale)?;
        for _ in 0..params.double_angle {
            let square = self.rescale(&self.mul_relin(&c, &c, keys)?)?;
            let doubled = Ciphertext { scale: square.scale / 2.0, ..square };
            c = self.add_integer(&doubled, -doubled.scale)?;
        }
        Ok(Ciphertext { scale: params.output_scale, ..c })
    }
}

/// `P(S > threshold)` for `S` the sum of `terms` independent uniform variables on
/// `[-1/2, 1/2]`, exactly (integer arithmetic on the Irwin-Hall CDF
/// `F(x) = sum_(k <= x) (-1)^k C(n, k) (x - k)^n / n!`, no cancellation), rounded to `f64`.
/// `threshold` must be a multiple of `1/2^10` ([`Error::InvalidField`] otherwise, or for
/// `terms` outside `[1, 4096]`).
pub fn irwin_hall_tail(terms: usize, threshold: f64) -> Result<f64> {
    if !(1..=4096).contains(&terms) {
        return Err(Error::InvalidField { field: "Irwin-Hall terms", reason: "must be in [1, 4096]" });
    }
    const DENOMINATOR_BITS: i32 = 10;
    let scaled = threshold * f64::from(DENOMINATOR_BITS).exp2();
    if !scaled.is_finite() || scaled.fract() != 0.0 || scaled.abs() > 1e15 {
        return Err(Error::InvalidField { field: "Irwin-Hall threshold", reason: "must be a multiple of 1/1024" });
    }
    // By symmetry P(S > t) = P(S < -t) = F(n/2 - t) for the Irwin-Hall variable on [0, n];
    // with x = n/2 - t = a / 2^e, (x - k)^n = (a - k 2^e)^n / 2^(e n).
    let n = terms;
    let unit = 1i64 << DENOMINATOR_BITS;
    let a = (n as i64) * unit / 2 - scaled as i64;
    if a <= 0 {
        return Ok(0.0);
    }
    if a >= n as i64 * unit {
        return Ok(1.0);
    }
    let exponent = u32::try_from(n).map_err(|_| Error::SizeOverflow { what: "Irwin-Hall exponent" })?;
    let mut sum = BigInt::zero();
    let mut binomial = BigInt::one();
    let mut k: i64 = 0;
    while k * unit < a {
        let base = BigInt::from(a - k * unit);
        let term = &binomial * num_traits::pow::pow(base, exponent as usize);
        if k % 2 == 0 {
            sum += term;
        } else {
            sum -= term;
        }
        // C(n, k + 1) = C(n, k) (n - k) / (k + 1).
        binomial = binomial * BigInt::from(n as i64 - k) / BigInt::from(k + 1);
        k += 1;
    }
    let factorial: BigUint = (1..=n as u64).map(BigUint::from).product();
    let denominator = BigInt::from(factorial) << (DENOMINATOR_BITS as usize * n);
    Ok(ratio_to_f64(&sum, &denominator))
}

/// `num / den` as `f64` for big integers (`den > 0`), exact to the last bit or so.
fn ratio_to_f64(num: &BigInt, den: &BigInt) -> f64 {
    if num.is_zero() {
        return 0.0;
    }
    // Shift so that the quotient keeps 64 significant bits, then scale back.
    let shift = den.bits() as i64 - num.bits() as i64 + 64;
    let quotient = if shift >= 0 { (num << shift as usize) / den } else { (num >> (-shift) as usize) / den };
    let mantissa = quotient.abs().to_f64().unwrap_or(f64::INFINITY);
    let value = mantissa * (-(shift as f64)).exp2();
    if num.is_negative() {
        -value
    } else {
        value
    }
}

/// The probability that some coefficient's `|I|` exceeds `K` after ModRaise, for a secret with
/// `h` non-zero entries (see the module docs for the model): the union bound
/// `min(1, n_coeffs * 2 P(S > K + 1/2))` with `S` the sum of `h + 1` uniforms on `[-1/2, 1/2]`.
/// Errors: [`Error::InvalidField`] for `h + 1` outside `[1, 4096]` (a dense secret needs the
/// Hoeffding bound `2 exp(-2 (K + 1/2)^2 / (h + 1))` instead, see [`hoeffding_failure_bound`]).
pub fn failure_probability(n_coeffs: usize, h: usize, k: u32) -> Result<f64> {
    let one = irwin_hall_tail(h + 1, f64::from(k) + 0.5)?;
    Ok((n_coeffs as f64 * 2.0 * one).min(1.0))
}

/// Hoeffding's upper bound on the same probability as [`failure_probability`], for any `h`
/// (useful for dense secrets, where the exact sum is too long):
/// `min(1, n_coeffs * 2 exp(-2 (K + 1/2)^2 / (h + 1)))`.
#[must_use]
pub fn hoeffding_failure_bound(n_coeffs: usize, h: usize, k: u32) -> f64 {
    let t = f64::from(k) + 0.5;
    (n_coeffs as f64 * 2.0 * (-2.0 * t * t / (h as f64 + 1.0)).exp()).min(1.0)
}

#[cfg(test)]
mod tests {
    use num_complex::Complex64;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::ckks::ScalePolicy;
    use crate::params::{self, TestRing};
    use crate::rlwe::KeyRequest;

    #[test]
    fn irwin_hall_tail_matches_known_values() {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-15 * b.abs().max(1e-300);
        assert!(close(irwin_hall_tail(1, 0.25).unwrap(), 0.25));
        assert!(close(irwin_hall_tail(2, 0.5).unwrap(), 0.125));
        assert!(close(irwin_hall_tail(3, 1.0).unwrap(), 1.0 / 48.0));
        assert!(close(irwin_hall_tail(5, 1.5).unwrap(), 1.0 / 120.0));
        for n in [1, 2, 7, 33, 200] {
            assert!(close(irwin_hall_tail(n, 0.0).unwrap(), 0.5), "n = {n}");
            assert_eq!(irwin_hall_tail(n, n as f64 / 2.0).unwrap(), 0.0);
            assert_eq!(irwin_hall_tail(n, -(n as f64) / 2.0).unwrap(), 1.0);
            // Symmetry: P(S > t) + P(S > -t) = 1.
            let t = (n as f64).sqrt() / 3.0;
            let t = (t * 1024.0).round() / 1024.0;
            let sum = irwin_hall_tail(n, t).unwrap() + irwin_hall_tail(n, -t).unwrap();
            assert!((sum - 1.0).abs() < 1e-14, "n = {n}: {sum}");
        }
        // Reference values computed independently with exact rationals (Python fractions).
        let cases =
            [(33, 12.5, 8.47642975447192e-18), (201, 16.5, 2.6151553054715727e-05), (9, 2.0, 0.009559020457864859)];
        for (n, t, want) in cases {
            let got = irwin_hall_tail(n, t).unwrap();
            assert!((got - want).abs() <= 1e-13 * want, "n = {n}, t = {t}: {got:e} vs {want:e}");
        }
        // h = 32, K = 16: the sum of 33 terms never exceeds 16.5.
        assert_eq!(failure_probability(1 << 16, 32, 16).unwrap(), 0.0);
        let p = failure_probability(1 << 16, 32, 12).unwrap();
        assert!((p - 1.1110226007781434e-12).abs() < 1e-24, "{p:e}");
        assert!(matches!(irwin_hall_tail(0, 1.0), Err(Error::InvalidField { .. })));
        assert!(matches!(irwin_hall_tail(4097, 1.0), Err(Error::InvalidField { .. })));
        assert!(matches!(irwin_hall_tail(3, 0.1), Err(Error::InvalidField { .. })));
        assert!(matches!(irwin_hall_tail(3, f64::NAN), Err(Error::InvalidField { .. })));
        assert!(matches!(failure_probability(16, 5000, 3), Err(Error::InvalidField { .. })));
    }

    #[test]
    fn irwin_hall_tail_matches_monte_carlo() {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let samples = 200_000;
        for (n, t) in [(3usize, 0.75), (5, 1.5), (9, 2.0), (17, 2.5)] {
            let hits = (0..samples).filter(|_| (0..n).map(|_| rng.random::<f64>() - 0.5).sum::<f64>() > t).count();
            let mc = hits as f64 / samples as f64;
            let exact = irwin_hall_tail(n, t).unwrap();
            let sigma = (exact * (1.0 - exact) / samples as f64).sqrt();
            assert!((mc - exact).abs() < 5.0 * sigma, "n = {n}, t = {t}: Monte-Carlo {mc} vs {exact}");
        }
        // Hoeffding is an upper bound of the exact value.
        for (h, k) in [(32, 8), (64, 12), (200, 16), (600, 40)] {
            let exact = failure_probability(1 << 16, h, k).unwrap();
            assert!(exact <= hoeffding_failure_bound(1 << 16, h, k), "h = {h}, K = {k}");
        }
    }

    #[test]
    fn bad_eval_mod_parameters_are_typed_errors() {
        let ok = EvalModParams::new(12, 3, 40, 1.0 / 1024.0, 2f64.powi(50)).unwrap();
        assert_eq!(ok.depth(), 6 + 3);
        assert_eq!((ok.k(), ok.double_angle(), ok.degree()), (12, 3, 40));
        for bad in [
            EvalModParams::new(0, 3, 40, 0.001, 1e15),
            EvalModParams::new(MAX_EVAL_MOD_K + 1, 3, 40, 0.001, 1e15),
            EvalModParams::new(12, MAX_DOUBLE_ANGLE + 1, 40, 0.001, 1e15),
            EvalModParams::new(12, 3, 0, 0.001, 1e15),
            EvalModParams::new(12, 3, 5000, 0.001, 1e15),
            EvalModParams::new(12, 3, 40, 0.0, 1e15),
            EvalModParams::new(12, 3, 40, 0.25, 1e15),
            EvalModParams::new(12, 3, 40, f64::NAN, 1e15),
            EvalModParams::new(12, 3, 40, 0.001, 0.5),
            EvalModParams::new(12, 3, 40, 0.001, f64::INFINITY),
        ] {
            assert!(matches!(bad, Err(Error::InvalidField { .. })), "{bad:?}");
        }
    }

    /// The plaintext pipeline's error in units of `Q_0`, by `K`, `r` and degree (printed with
    /// `--nocapture`): the configurations below reach the `f64` floor of about `2^-44`.
    #[test]
    fn plaintext_eval_mod_error_by_degree_and_double_angle() {
        let ratio = 1.0 / 1024.0;
        for k in [12u32, 16] {
            for r in [1u32, 2, 3] {
                let row: Vec<String> = [30usize, 40, 50, 60, 80, 120]
                    .iter()
                    .map(|&d| {
                        let (approx, _) = EvalModParams::new(k, r, d, ratio, 1e15).unwrap().plaintext_errors(9);
                        format!("d={d}: 2^{:.1}", approx.log2())
                    })
                    .collect();
                eprintln!("K = {k}, r = {r}: {}", row.join(", "));
            }
        }
        // Reached bounds (measured 2^-45.0, 2^-44.7, 2^-45.7, 2^-46.7 with f64 in Python).
        for (k, r, d) in [(12u32, 3u32, 40usize), (16, 3, 40), (16, 2, 60), (12, 1, 80)] {
            let p = EvalModParams::new(k, r, d, ratio, 1e15).unwrap();
            let (approx, total) = p.plaintext_errors(33);
            assert!(approx < 2f64.powi(-43), "K = {k}, r = {r}, d = {d}: 2^{}", approx.log2());
            // The sine's curvature: |sin(2 pi f) / (2 pi) - f| <= (2 pi)^2 f^3 / 6.
            let curvature = (2.0 * std::f64::consts::PI).powi(2) * ratio.powi(3) / 6.0;
            assert!(total <= curvature * 1.001 + approx, "{total:e} vs {curvature:e}");
        }
        // Too low a degree does not reach it.
        let (approx, _) = EvalModParams::new(16, 1, 40, ratio, 1e15).unwrap().plaintext_errors(9);
        assert!(approx > 0.1);
    }

    #[test]
    fn homomorphic_eval_mod_matches_the_plaintext_pipeline() {
        for (k, r, degree) in [(12u32, 1u32, 80usize), (12, 2, 50), (12, 3, 40), (16, 2, 60), (16, 3, 40), (16, 3, 60)]
        {
            let ratio = 1.0 / 1024.0;
            let eval_mod = EvalModParams::new(k, r, degree, ratio, 2f64.powi(50)).unwrap();
            let depth = eval_mod.depth();
            let q_primes = 3 + 2 * depth;
            let p = params::insecure_test_ckks(
                TestRing { log_n: 10, q_primes, p_primes: 3, dnum: q_primes.div_ceil(3) },
                30,
            )
            .unwrap();
            let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
            let sk = ckks.gen_secret_key_from_seed(&[9; 32]).unwrap();
            let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let slots = 128;
            let ki = i64::from(k);
            let xs: Vec<f64> =
                (0..slots).map(|_| rng.random_range(-ki..=ki) as f64 + rng.random_range(-ratio..=ratio)).collect();
            let level = ckks.max_level();
            let scale = ckks.eval_mod_input_scale(&eval_mod, level).unwrap();
            let values: Vec<Complex64> = xs.iter().map(|&x| Complex64::new(x, 0.0)).collect();
            let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, scale, slots, level).unwrap()).unwrap();
            let out = ckks.eval_mod(&ct, &eval_mod, &keys).unwrap();
            assert_eq!((level - out.level()) / 2, depth);
            assert_eq!(out.level(), ckks.eval_mod_output_level(&eval_mod, level, scale).unwrap());
            assert_eq!(out.scale(), 2f64.powi(50));
            let got = ckks.decrypt(&sk, &out).unwrap();
            let (mut err, mut to_sine) = (0.0_f64, 0.0_f64);
            for (&x, z) in xs.iter().zip(&got) {
                err = err.max((z.re - eval_mod.evaluate(x)).abs()).max(z.im.abs());
                let f = x - x.round();
                to_sine =
                    to_sine.max((z.re - (2.0 * std::f64::consts::PI * f).sin() / (2.0 * std::f64::consts::PI)).abs());
            }
            eprintln!(
                "K = {k}, r = {r}, d = {degree}: {depth} levels, error vs the plaintext pipeline 2^{:.1}, vs sin(2 pi x) / (2 pi) 2^{:.1} (units of Q_0)",
                err.log2(),
                to_sine.log2()
            );
            // Bound: the input carries at most 2^-40 (see the Chebyshev tests) and the
            // pipeline's slope is at most 1 away from the Chebyshev error; the series'
            // own evaluation error (sum |c_i| i^2 2^-36, below 2^-22 here) is multiplied by at most
            // 4 per double-angle step and divided by 2 pi.
            let series_bound: f64 = eval_mod
                .series()
                .coeffs()
                .iter()
                .enumerate()
                .map(|(i, c)| c.abs() * (i * i).max(1) as f64)
                .sum::<f64>()
                * 2f64.powi(-36);
            let bound = 2f64.powi(-40) + series_bound * 4f64.powi(r as i32) / (2.0 * std::f64::consts::PI);
            assert!(err < bound, "{err:e} >= {bound:e}");
            assert!(to_sine < bound + 2f64.powi(-43));
            if (k, r) == (12, 3) {
                // An input at the default scale instead: the affine map costs one more level.
                let ct = ckks
                    .encrypt_symmetric(&sk, &ckks.encode(&values, ckks.default_scale(), slots, level).unwrap())
                    .unwrap();
                let out = ckks.eval_mod(&ct, &eval_mod, &keys);
                assert!(matches!(out, Err(Error::DepthExhausted { .. })), "{out:?}");
                let p = params::insecure_test_ckks(
                    TestRing { log_n: 10, q_primes: q_primes + 2, p_primes: 3, dnum: (q_primes + 2).div_ceil(3) },
                    30,
                )
                .unwrap();
                let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
                let sk = ckks.gen_secret_key_from_seed(&[9; 32]).unwrap();
                let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
                let level = ckks.max_level();
                let ct = ckks
                    .encrypt_symmetric(&sk, &ckks.encode(&values, ckks.default_scale(), slots, level).unwrap())
                    .unwrap();
                let out = ckks.eval_mod(&ct, &eval_mod, &keys).unwrap();
                assert_eq!((level - out.level()) / 2, depth + 1);
                let got = ckks.decrypt(&sk, &out).unwrap();
                let err = xs.iter().zip(&got).map(|(&x, z)| (z.re - eval_mod.evaluate(x)).abs()).fold(0.0, f64::max);
                assert!(err < bound, "{err:e} >= {bound:e}");
            }
        }
    }
}
