//! Logistic regression on 4-bit pixels, trained in floating point and quantised to integers for
//! encrypted inference.
//!
//! * Features: each pixel is quantised to [`PIXEL_BITS`] = 4 bits, `q = pixel >> 4` in
//!   `0..=15` ([`quantise_pixel`]); the encrypted circuit sees exactly these integers.
//! * Training ([`train`]): the model is `z = sum_i w_i x_i + b` on `x_i = q_i / 15` (the quantised
//!   pixels scaled to `[0, 1]`), mean logistic loss plus `l2 / 2 * |w|^2` (the bias is not
//!   regularised), mini-batch SGD in `f64` from zero weights, samples shuffled each epoch by a
//!   seeded ChaCha8 generator, step `lr / sqrt(1 + epoch)`. Single-threaded, so the same data,
//!   configuration and seed give a bit-identical model. `y = true` (1) is the positive class.
//! * Quantisation ([`FloatLr::quantise`]): with `u_i = w_i / 15` the logit is
//!   `z = sum_i u_i q_i + b`; scaling by `s = W / max_i |u_i|` and rounding gives integer weights
//!   `w_i = round(s u_i)` in `[-W, W]` and an integer bias `round(s b)` (not clipped to `W`). The
//!   decision is `S = sum_i w_i q_i + b >= 0` ([`QuantLr::score`], [`QuantLr::predict`]).
//! * Bounds: [`QuantLr::bound`] is `sum_i |w_i| * 15 + |b|`, the bound
//!   [`wgfhe::compare::Bounded::weighted_sum`] propagates; [`QuantLr::tight_bound`] is the exact
//!   `max |S|` over all inputs, attained by the 0/15 vector [`QuantLr::extremal_input`]. The two
//!   are equal only when every non-zero weight has the bias's sign. A circuit needs a plaintext
//!   modulus `t > 2 * bound` to tell the signs of `S` apart.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::mnist::{Binary, Image, PIXELS};
use wgfhe::error::{Error, Result};

/// Bits per quantised pixel.
pub const PIXEL_BITS: u32 = 4;
/// Largest quantised pixel, `2^PIXEL_BITS - 1`.
pub const Q_MAX: u8 = (1 << PIXEL_BITS) - 1;

/// The 4-bit pixel `p >> 4`, in `0..=15`.
#[must_use]
pub const fn quantise_pixel(p: u8) -> u8 {
    p >> (8 - PIXEL_BITS)
}

/// Every pixel of an image quantised ([`quantise_pixel`]).
#[must_use]
pub fn quantise_image(image: &Image) -> Image {
    image.map(quantise_pixel)
}

// ---- data ------------------------------------------------------------------------------------

/// Samples of quantised features (each in `0..=Q_MAX`) with binary targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    dim: usize,
    q: Vec<u8>,
    y: Vec<bool>,
}

impl Dataset {
    /// `y.len()` samples of `dim` features each, row-major in `q`. Needs `dim > 0`,
    /// `q.len() == dim * y.len()` and every feature in `0..=Q_MAX`.
    pub fn new(dim: usize, q: Vec<u8>, y: Vec<bool>) -> Result<Self> {
        if dim == 0 {
            return Err(Error::InvalidField { field: "feature dimension", reason: "must be positive" });
        }
        let expected = dim.checked_mul(y.len()).ok_or(Error::SizeOverflow { what: "data set size" })?;
        if q.len() != expected {
            return Err(Error::DimensionMismatch { what: "features", expected, found: q.len() });
        }
        if let Some(index) = q.iter().position(|&v| v > Q_MAX) {
            return Err(Error::ValueOutOfRange { index, min: 0, max: i64::from(Q_MAX) });
        }
        Ok(Self { dim, q, y })
    }

    /// The binary MNIST task with pixels quantised to 4 bits (`dim = 784`).
    #[must_use]
    pub fn from_binary(data: &Binary) -> Self {
        let q = data.images().iter().flat_map(|img| img.map(quantise_pixel)).collect();
        Self { dim: PIXELS, q, y: data.y().to_vec() }
    }

    /// Features per sample.
    #[must_use]
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of samples.
    #[must_use]
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no samples.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Sample `i`: its features and target.
    #[must_use]
    pub fn sample(&self, i: usize) -> Option<(&[u8], bool)> {
        let start = i.checked_mul(self.dim)?;
        Some((self.q.get(start..start.checked_add(self.dim)?)?, *self.y.get(i)?))
    }

    /// The samples in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], bool)> + '_ {
        self.q.chunks_exact(self.dim).zip(self.y.iter().copied())
    }

    /// Number of positive samples.
    #[must_use]
    pub fn positives(&self) -> usize {
        self.y.iter().filter(|&&y| y).count()
    }
}

/// Fraction of `data` on which `predict` is right.
fn accuracy_of(data: &Dataset, dim: usize, mut predict: impl FnMut(&[u8]) -> Result<bool>) -> Result<f64> {
    if data.dim() != dim {
        return Err(Error::DimensionMismatch { what: "features", expected: dim, found: data.dim() });
    }
    if data.is_empty() {
        return Err(Error::InvalidField { field: "data set", reason: "empty" });
    }
    let mut right = 0usize;
    for (q, y) in data.iter() {
        right += usize::from(predict(q)? == y);
    }
    Ok(right as f64 / data.len() as f64)
}

/// Checks `q` against a model of `dim` features.
fn check_input(q: &[u8], dim: usize) -> Result<()> {
    if q.len() != dim {
        return Err(Error::DimensionMismatch { what: "features", expected: dim, found: q.len() });
    }
    if let Some(index) = q.iter().position(|&v| v > Q_MAX) {
        return Err(Error::ValueOutOfRange { index, min: 0, max: i64::from(Q_MAX) });
    }
    Ok(())
}

// ---- training --------------------------------------------------------------------------------

/// Hyper-parameters of [`train`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Passes over the data.
    pub epochs: usize,
    /// Samples per SGD step (the last batch of an epoch may be smaller).
    pub batch_size: usize,
    /// Initial step size; epoch `e` uses `learning_rate / sqrt(1 + e)`.
    pub learning_rate: f64,
    /// L2 regularisation strength on the weights (not the bias).
    pub l2: f64,
    /// Seed of the shuffling generator.
    pub seed: u64,
}

impl Default for TrainConfig {
    /// The configuration used for MNIST 3 vs 8.
    fn default() -> Self {
        Self { epochs: 30, batch_size: 32, learning_rate: 0.5, l2: 1e-4, seed: 2024 }
    }
}

/// A floating-point logistic-regression model on quantised features: the logit is
/// `sum_i weights[i] * q_i / 15 + bias`, positive class when it is `>= 0`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloatLr {
    /// Weights on the features scaled to `[0, 1]` (`q_i / 15`).
    pub weights: Vec<f64>,
    /// Bias.
    pub bias: f64,
}

/// `1 / (1 + e^-z)`.
fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Trains a [`FloatLr`] on `data` (see the module documentation for the method). Deterministic:
/// the same data, configuration and seed give a bit-identical model.
///
/// Errors: [`Error::InvalidField`] for an empty data set, zero epochs or batch size, or a step
/// size or regularisation that is not finite and non-negative.
pub fn train(data: &Dataset, config: &TrainConfig) -> Result<FloatLr> {
    if data.is_empty() {
        return Err(Error::InvalidField { field: "data set", reason: "empty" });
    }
    if config.epochs == 0 || config.batch_size == 0 {
        return Err(Error::InvalidField {
            field: "training configuration",
            reason: "epochs and batch size must be positive",
        });
    }
    if !(config.learning_rate.is_finite() && config.learning_rate > 0.0 && config.l2.is_finite() && config.l2 >= 0.0) {
        return Err(Error::InvalidField {
            field: "training configuration",
            reason: "the step size must be finite and positive, the regularisation finite and non-negative",
        });
    }
    let inv_q = 1.0 / f64::from(Q_MAX);
    let mut w = vec![0.0f64; data.dim()];
    let mut b = 0.0f64;
    let mut grad = vec![0.0f64; data.dim()];
    let mut order: Vec<usize> = (0..data.len()).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    for epoch in 0..config.epochs {
        order.shuffle(&mut rng);
        let lr = config.learning_rate / (1.0 + epoch as f64).sqrt();
        for batch in order.chunks(config.batch_size) {
            grad.fill(0.0);
            let mut grad_b = 0.0;
            for &i in batch {
                let Some((q, y)) = data.sample(i) else { continue };
                let dot: f64 = w.iter().zip(q).map(|(wi, &qi)| wi * f64::from(qi)).sum();
                let err = sigmoid(dot * inv_q + b) - if y { 1.0 } else { 0.0 };
                grad_b += err;
                let e = err * inv_q;
                for (g, &qi) in grad.iter_mut().zip(q) {
                    if qi != 0 {
                        *g += e * f64::from(qi);
                    }
                }
            }
            let scale = lr / batch.len() as f64;
            let decay = 1.0 - lr * config.l2;
            for (wi, g) in w.iter_mut().zip(&grad) {
                *wi = *wi * decay - scale * g;
            }
            b -= scale * grad_b;
        }
    }
    Ok(FloatLr { weights: w, bias: b })
}

impl FloatLr {
    /// The logit `sum_i w_i q_i / 15 + b` on quantised features.
    pub fn logit(&self, q: &[u8]) -> Result<f64> {
        check_input(q, self.weights.len())?;
        let dot: f64 = self.weights.iter().zip(q).map(|(w, &qi)| w * f64::from(qi)).sum();
        Ok(dot / f64::from(Q_MAX) + self.bias)
    }

    /// `logit >= 0`.
    pub fn predict(&self, q: &[u8]) -> Result<bool> {
        Ok(self.logit(q)? >= 0.0)
    }

    /// Fraction of `data` classified right.
    pub fn accuracy(&self, data: &Dataset) -> Result<f64> {
        accuracy_of(data, self.weights.len(), |q| self.predict(q))
    }

    /// Integer weights in `[-max_weight, max_weight]` on the 4-bit pixels and an integer bias,
    /// scaled so the largest weight is `±max_weight` (module documentation). A model whose
    /// weights are all zero keeps scale 1.
    ///
    /// Errors: [`Error::InvalidField`] for `max_weight < 1` or a weight or bias that is not
    /// finite or whose scaled value does not fit; what [`QuantLr::new`] refuses.
    pub fn quantise(&self, max_weight: i64) -> Result<QuantLr> {
        if max_weight < 1 {
            return Err(Error::InvalidField { field: "max_weight", reason: "must be at least 1" });
        }
        let per_unit: Vec<f64> = self.weights.iter().map(|w| w / f64::from(Q_MAX)).collect();
        if per_unit.iter().any(|u| !u.is_finite()) || !self.bias.is_finite() {
            return Err(Error::InvalidField { field: "float model", reason: "weights and bias must be finite" });
        }
        let largest = per_unit.iter().fold(0.0f64, |m, u| m.max(u.abs()));
        let scale = if largest > 0.0 { max_weight as f64 / largest } else { 1.0 };
        let to_int = |v: f64| {
            let r = (v * scale).round();
            if r.abs() < 2f64.powi(62) {
                Ok(r as i64)
            } else {
                Err(Error::InvalidField {
                    field: "float model",
                    reason: "a scaled weight or bias does not fit in 62 bits",
                })
            }
        };
        let weights =
            per_unit.iter().map(|&u| to_int(u).map(|w| w.clamp(-max_weight, max_weight))).collect::<Result<_>>()?;
        QuantLr::new(weights, to_int(self.bias)?, PIXEL_BITS)
    }
}

// ---- the integer model -----------------------------------------------------------------------

/// The fields of a [`QuantLr`] before validation (its serialised form).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct QuantLrFields {
    weights: Vec<i64>,
    bias: i64,
    pixel_bits: u32,
}

impl TryFrom<QuantLrFields> for QuantLr {
    type Error = Error;

    fn try_from(f: QuantLrFields) -> Result<Self> {
        Self::new(f.weights, f.bias, f.pixel_bits)
    }
}

/// An integer logistic-regression model: `S = sum_i w_i q_i + b` on integer pixels `q_i` in
/// `0..2^pixel_bits`, positive class when `S >= 0`. Validated on construction (and on
/// deserialisation) so that no score overflows `i64`. Serialises to JSON as
/// `{"weights": [...], "bias": b, "pixel_bits": 4}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "QuantLrFields")]
pub struct QuantLr {
    weights: Vec<i64>,
    bias: i64,
    pixel_bits: u32,
}

impl QuantLr {
    /// A model from its weights, bias and pixel width. Needs at least one weight,
    /// `pixel_bits == PIXEL_BITS` (the features this crate makes), and
    /// `sum_i |w_i| * (2^pixel_bits - 1) + |b| <= i64::MAX`.
    pub fn new(weights: Vec<i64>, bias: i64, pixel_bits: u32) -> Result<Self> {
        if weights.is_empty() {
            return Err(Error::InvalidField { field: "weights", reason: "at least one weight is needed" });
        }
        if pixel_bits != PIXEL_BITS {
            return Err(Error::InvalidField { field: "pixel_bits", reason: "only 4-bit pixels are supported" });
        }
        let q_max = i128::from(Q_MAX);
        let l1: i128 = weights.iter().map(|w| i128::from(w.unsigned_abs()) * q_max).sum::<i128>()
            + i128::from(bias.unsigned_abs());
        if l1 > i128::from(i64::MAX) {
            return Err(Error::CountTooLarge {
                what: "sum |w_i| * q_max + |b|",
                found: u64::try_from(l1).unwrap_or(u64::MAX),
                limit: i64::MAX.unsigned_abs(),
            });
        }
        Ok(Self { weights, bias, pixel_bits })
    }

    /// The weights.
    #[must_use]
    pub fn weights(&self) -> &[i64] {
        &self.weights
    }

    /// The bias.
    #[must_use]
    pub fn bias(&self) -> i64 {
        self.bias
    }

    /// Bits per pixel.
    #[must_use]
    pub fn pixel_bits(&self) -> u32 {
        self.pixel_bits
    }

    /// Largest pixel value, `2^pixel_bits - 1`.
    #[must_use]
    pub fn q_max(&self) -> i64 {
        (1 << self.pixel_bits) - 1
    }

    /// Largest `|w_i|`.
    #[must_use]
    pub fn max_weight(&self) -> u64 {
        self.weights.iter().map(|w| w.unsigned_abs()).max().unwrap_or(0)
    }

    /// `S = sum_i w_i q_i + b`. Cannot overflow (checked at construction).
    ///
    /// Errors: [`Error::DimensionMismatch`] for a wrong length, [`Error::ValueOutOfRange`] for a
    /// pixel above `q_max`.
    pub fn score(&self, q: &[u8]) -> Result<i64> {
        check_input(q, self.weights.len())?;
        Ok(self.weights.iter().zip(q).map(|(w, &qi)| w * i64::from(qi)).sum::<i64>() + self.bias)
    }

    /// `S >= 0`: the positive class.
    pub fn predict(&self, q: &[u8]) -> Result<bool> {
        Ok(self.score(q)? >= 0)
    }

    /// Fraction of `data` classified right.
    pub fn accuracy(&self, data: &Dataset) -> Result<f64> {
        accuracy_of(data, self.weights.len(), |q| self.predict(q))
    }

    /// `sum_i |w_i| * q_max + |b|`: the bound on `|S|` that
    /// [`wgfhe::compare::Bounded::weighted_sum`] computes for inputs bounded by `q_max`. At least
    /// [`QuantLr::tight_bound`]; equal to it when every non-zero weight has the bias's sign.
    #[must_use]
    pub fn bound(&self) -> u64 {
        let q_max = self.q_max().unsigned_abs();
        // No overflow: checked against i64::MAX at construction.
        self.weights.iter().map(|w| w.unsigned_abs() * q_max).sum::<u64>() + self.bias.unsigned_abs()
    }

    /// The exact `max |S|` over all inputs in `0..=q_max`: `max(q_max * P + b, q_max * N - b)`
    /// with `P` the sum of the positive weights and `N` that of the negative ones' magnitudes.
    /// Attained by [`QuantLr::extremal_input`].
    #[must_use]
    pub fn tight_bound(&self) -> u64 {
        let (high, low) = self.extremes();
        high.unsigned_abs().max(low.unsigned_abs())
    }

    /// The largest and smallest `S` over all inputs.
    fn extremes(&self) -> (i64, i64) {
        let q_max = self.q_max();
        let pos: i64 = self.weights.iter().filter(|&&w| w > 0).sum();
        let neg: i64 = self.weights.iter().filter(|&&w| w < 0).sum();
        (q_max * pos + self.bias, q_max * neg + self.bias)
    }

    /// A 0/`q_max` input whose `|S|` is [`QuantLr::tight_bound`]: `q_max` on the positive weights
    /// if the largest `S` is the extreme, else on the negative ones; 0 elsewhere.
    #[must_use]
    pub fn extremal_input(&self) -> Vec<u8> {
        let (high, low) = self.extremes();
        let q_max = u8::try_from(self.q_max()).unwrap_or(Q_MAX);
        let up = high.unsigned_abs() >= low.unsigned_abs();
        self.weights.iter().map(|&w| if (up && w > 0) || (!up && w < 0) { q_max } else { 0 }).collect()
    }

    /// The smallest plaintext modulus that holds every score as a centred residue:
    /// `2 * bound() + 1` (so `2 * bound < t`).
    #[must_use]
    pub fn min_plaintext_modulus(&self) -> u64 {
        2 * self.bound() + 1
    }

    /// The model as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::json("encoding of the logistic-regression model", &e))
    }

    /// A model from JSON (validated as by [`QuantLr::new`]).
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::json("decoding of the logistic-regression model", &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn pixel_quantisation() {
        assert_eq!([0u8, 15, 16, 31, 128, 255].map(quantise_pixel), [0, 0, 1, 1, 8, 15]);
        let mut img = [0u8; PIXELS];
        img[5] = 200;
        assert_eq!(quantise_image(&img)[5], 12);
    }

    #[test]
    fn quantise_hand_built_model() {
        // Per-unit weights w/15 = [1, -0.5, 0.25, 0]: scaled to W = 4 by s = 4, bias 0.3 * 4.
        let float = FloatLr { weights: vec![15.0, -7.5, 3.75, 0.0], bias: 0.3 };
        let q = float.quantise(4).unwrap();
        assert_eq!((q.weights(), q.bias(), q.pixel_bits()), (&[4, -2, 1, 0][..], 1, 4));
        // 4 * 1 - 2 * 2 + 1 * 3 + 0 * 15 + 1
        assert_eq!(q.score(&[1, 2, 3, 15]).unwrap(), 4);
        assert_eq!(q.max_weight(), 4);
        // W = 7: s = 7, weights round half away from zero, bias 2.1 -> 2.
        let q = float.quantise(7).unwrap();
        assert_eq!((q.weights(), q.bias()), (&[7, -4, 2, 0][..], 2));
        // The decisions of both models agree on inputs far from the boundary.
        for input in [[15u8, 0, 0, 0], [0, 15, 0, 0], [3, 3, 3, 3], [0, 0, 15, 9]] {
            let f = float.logit(&input).unwrap();
            if f.abs() > 0.5 {
                assert_eq!(q.predict(&input).unwrap(), f >= 0.0, "{input:?}");
            }
        }
        // An all-zero model keeps scale 1.
        let zero = FloatLr { weights: vec![0.0; 3], bias: -2.4 }.quantise(7).unwrap();
        assert_eq!((zero.weights(), zero.bias()), (&[0, 0, 0][..], -2));
        assert!(FloatLr { weights: vec![f64::NAN], bias: 0.0 }.quantise(7).is_err());
        assert!(float.quantise(0).is_err());
    }

    #[test]
    fn score_checks_inputs() {
        let q = QuantLr::new(vec![1, -1], 0, 4).unwrap();
        assert_eq!(q.score(&[1]), Err(Error::DimensionMismatch { what: "features", expected: 2, found: 1 }));
        assert_eq!(q.score(&[1, 16]), Err(Error::ValueOutOfRange { index: 1, min: 0, max: 15 }));
        assert!(QuantLr::new(vec![], 0, 4).is_err());
        assert!(QuantLr::new(vec![1], 0, 5).is_err());
        assert!(matches!(QuantLr::new(vec![i64::MAX / 15 + 1], 0, 4), Err(Error::CountTooLarge { .. })));
        assert!(QuantLr::new(vec![i64::MAX / 15], 0, 4).is_ok());
    }

    /// max |S| by enumerating every input in `0..=15`^d.
    fn brute_force_max(q: &QuantLr) -> u64 {
        let d = q.weights().len();
        let mut input = vec![0u8; d];
        let mut best = 0;
        loop {
            best = best.max(q.score(&input).unwrap().unsigned_abs());
            let mut k = 0;
            while k < d && input[k] == 15 {
                input[k] = 0;
                k += 1;
            }
            if k == d {
                return best;
            }
            input[k] += 1;
        }
    }

    #[test]
    fn bound_is_exact() {
        // Mixed signs: the L1 bound is not attained, the tight one is.
        let q = QuantLr::new(vec![3, -5, 2], -4, 4).unwrap();
        assert_eq!(q.bound(), 10 * 15 + 4);
        assert_eq!(q.tight_bound(), 5 * 15 + 4);
        assert_eq!(brute_force_max(&q), q.tight_bound());
        assert_eq!(q.extremal_input(), vec![0, 15, 0]);
        assert_eq!(q.score(&q.extremal_input()).unwrap(), -79);
        assert_eq!(q.min_plaintext_modulus(), 2 * 154 + 1);
        // Weights of the bias's sign (or zero): the L1 bound itself is attained by a 0/15 vector.
        for (w, b) in [(vec![3, 0, 2], 4), (vec![-1, -7, 0], -2), (vec![0, 0, 0], 0), (vec![6, 1, 1], 0)] {
            let q = QuantLr::new(w, b, 4).unwrap();
            assert_eq!(q.bound(), q.tight_bound());
            assert_eq!(brute_force_max(&q), q.bound());
            let x = q.extremal_input();
            assert!(x.iter().all(|&v| v == 0 || v == 15));
            assert_eq!(q.score(&x).unwrap().unsigned_abs(), q.bound());
        }
        // Random models: the tight bound is the brute-force maximum, attained by its extremal
        // 0/15 input, and never above the L1 bound.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for _ in 0..40 {
            let w: Vec<i64> = (0..3).map(|_| rng.random_range(-7..=7)).collect();
            let q = QuantLr::new(w, rng.random_range(-60..=60), 4).unwrap();
            assert_eq!(brute_force_max(&q), q.tight_bound(), "{q:?}");
            assert_eq!(q.score(&q.extremal_input()).unwrap().unsigned_abs(), q.tight_bound());
            assert!(q.tight_bound() <= q.bound());
        }
    }

    #[test]
    fn json_round_trip_validates() {
        let q = QuantLr::new(vec![7, -3, 0], -12, 4).unwrap();
        let json = q.to_json().unwrap();
        assert_eq!(json, r#"{"weights":[7,-3,0],"bias":-12,"pixel_bits":4}"#);
        assert_eq!(QuantLr::from_json(&json).unwrap(), q);
        assert!(QuantLr::from_json(r#"{"weights":[],"bias":0,"pixel_bits":4}"#).is_err());
        assert!(QuantLr::from_json(r#"{"weights":[1],"bias":0,"pixel_bits":9}"#).is_err());
        let big = format!(r#"{{"weights":[{}],"bias":0,"pixel_bits":4}}"#, i64::MAX);
        assert!(QuantLr::from_json(&big).is_err());
    }

    /// A linearly separable set with margin: `y = (a . q + c > 0)`, samples with
    /// `|a . q + c| < 12` dropped.
    fn separable(n: usize, seed: u64) -> Dataset {
        let a = [3i64, -2, 1, 0, -1, 2, 0, 1];
        let c = -30;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut q, mut y) = (Vec::new(), Vec::new());
        while y.len() < n {
            let x: Vec<u8> = (0..a.len()).map(|_| rng.random_range(0..=Q_MAX)).collect();
            let s: i64 = a.iter().zip(&x).map(|(ai, &xi)| ai * i64::from(xi)).sum::<i64>() + c;
            if s.abs() >= 12 {
                q.extend_from_slice(&x);
                y.push(s > 0);
            }
        }
        Dataset::new(a.len(), q, y).unwrap()
    }

    #[test]
    fn training_separates_synthetic_data() {
        let data = separable(600, 1);
        assert!(data.positives() > 100 && data.positives() < 500);
        let config = TrainConfig { epochs: 200, batch_size: 16, learning_rate: 1.0, l2: 0.0, seed: 3 };
        let model = train(&data, &config).unwrap();
        assert_eq!(model.accuracy(&data).unwrap(), 1.0);
        let held_out = separable(400, 2);
        assert!(model.accuracy(&held_out).unwrap() >= 0.99);
        let q = model.quantise(15).unwrap();
        assert!(q.accuracy(&data).unwrap() >= 0.98, "{q:?}");
    }

    #[test]
    fn training_is_deterministic() {
        let data = separable(300, 5);
        let config = TrainConfig { epochs: 5, batch_size: 7, learning_rate: 0.3, l2: 1e-3, seed: 11 };
        let a = train(&data, &config).unwrap();
        let b = train(&data, &config).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.quantise(7).unwrap(), b.quantise(7).unwrap());
        let c = train(&data, &TrainConfig { seed: 12, ..config }).unwrap();
        assert_ne!(a, c);
    }

    #[test]
    fn training_refuses_bad_input() {
        let data = separable(10, 5);
        let good = TrainConfig::default();
        assert!(train(&Dataset::new(3, vec![], vec![]).unwrap(), &good).is_err());
        assert!(train(&data, &TrainConfig { epochs: 0, ..good }).is_err());
        assert!(train(&data, &TrainConfig { batch_size: 0, ..good }).is_err());
        assert!(train(&data, &TrainConfig { learning_rate: f64::NAN, ..good }).is_err());
        assert!(train(&data, &TrainConfig { l2: -1.0, ..good }).is_err());
        assert!(Dataset::new(0, vec![], vec![]).is_err());
        assert!(Dataset::new(2, vec![1, 2, 3], vec![true, false]).is_err());
        assert!(Dataset::new(2, vec![1, 16], vec![true]).is_err());
        assert_eq!(data.sample(9).map(|(q, _)| q.len()), Some(8));
        assert_eq!(data.sample(10), None);
    }
}
