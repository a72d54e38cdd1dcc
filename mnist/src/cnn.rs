//! A CryptoDL/CryptoNets-style CNN for the ten MNIST digits, trained in integer units so that the
//! encrypted circuit computes exactly what the plaintext model does.
//!
//! Architecture (the BXT paper's five layers): `Conv 5x5 stride 2` (5 channels, the 28 x 28
//! image padded with a zero row and column to 29 x 29, giving 13 x 13 positions), `ReLU`,
//! `FC 845 -> 100`, `ReLU`, `FC 100 -> 10`.
//!
//! Integer model ([`QuantCnn`]): 4-bit pixels `p >> 4` in `0..=15`; weights are integers in
//! `[-max_weight, max_weight]`; each ReLU is fused with requantisation,
//! `a = min(clip, (max(z, 0) + 2^(s-1)) >> s)` (the table [`Lut::relu_requant`] with `mul = 1`),
//! so the activations are small integers again; the ten outputs are integer scores and the
//! prediction is their arg-max (lowest index on ties). Every pre-activation has a sound
//! worst-case bound from the weights' L1 norms ([`QuantCnn::bounds`]; attained only when a
//! neuron's weights share one sign and its bias has that sign too): the encrypted ReLU
//! tables are compiled on domains that hold them, and training keeps each FC100 row's L1 norm
//! at most [`CnnConfig::fc1_l1`] so the second table's domain stays small (default 546 with
//! 4-bit activations: `|y| <= 15 * 546 + |b| <= 8191`, a table of depth 14).
//!
//! Training ([`train`]) is quantisation-aware: float "shadow" weights in integer units, the
//! forward pass rounds and clamps them and rounds the activations exactly as the integer model
//! does (straight-through gradients), Adam, seeded mini-batches, data-parallel over rayon.
//! After every step each FC100 row is scaled down until its rounded L1 norm fits. The
//! quantised model read off the shadow weights is exactly the model trained.
//!
//! Fault-aware training ([`Faults`]) corrupts the ReLUs in the forward pass the way a pruned
//! digit sign test would (balanced digits report `x` in `[-(b^k - 1)/2, -1]` as non-negative,
//! so ReLU passes those small negative values through), which is the BXT paper's method.
//!
//! [`Lut::relu_requant`]: wgfhe::compare::lut::Lut::relu_requant

#![expect(
    clippy::indexing_slicing,
    reason = "dense layer loops over arrays whose shapes are fixed by the architecture constants and checked once at construction"
)]

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::lr::{quantise_pixel, Q_MAX};
use super::mnist::{Image, Split, PIXELS};
use wgfhe::error::{Error, Result};

/// Image side.
pub const SIDE: usize = 28;
/// Padded side (one zero row and column at the end).
pub const PADDED: usize = 29;
/// Convolution kernel side.
pub const KERNEL: usize = 5;
/// Kernel taps.
pub const TAPS: usize = KERNEL * KERNEL;
/// Convolution stride.
pub const STRIDE: usize = 2;
/// Output side of the convolution.
pub const OUT_SIDE: usize = (PADDED - KERNEL) / STRIDE + 1;
/// Output positions per channel (13 x 13).
pub const POSITIONS: usize = OUT_SIDE * OUT_SIDE;
/// Classes.
pub const CLASSES: usize = 10;

/// The input pixels a convolution position sees: `patches[p][k]` is the 4-bit pixel under tap
/// `k = ky * 5 + kx` of position `p = oy * 13 + ox` (zero in the padding).
#[must_use]
pub fn patches(image: &Image) -> Vec<[u8; TAPS]> {
    let mut out = vec![[0u8; TAPS]; POSITIONS];
    for (p, patch) in out.iter_mut().enumerate() {
        let (oy, ox) = (p / OUT_SIDE, p % OUT_SIDE);
        for (k, v) in patch.iter_mut().enumerate() {
            let (y, x) = (oy * STRIDE + k / KERNEL, ox * STRIDE + k % KERNEL);
            if y < SIDE && x < SIDE {
                *v = quantise_pixel(image[y * SIDE + x]);
            }
        }
    }
    out
}

/// ReLU fused with requantisation: `min(clip, (max(z, 0) + 2^(shift-1)) >> shift)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requant {
    /// Right shift (division by `2^shift`, rounding halves up).
    pub shift: u32,
    /// Largest output.
    pub clip: u64,
}

impl Requant {
    /// The integer activation.
    #[must_use]
    pub fn apply(&self, z: i64) -> i64 {
        let v = z.max(0).unsigned_abs();
        let r = if self.shift == 0 { v } else { (v + (1u64 << (self.shift - 1))) >> self.shift };
        r.min(self.clip) as i64
    }

    /// The requantisation without the ReLU: `clamp((z + 2^(shift-1)) >> shift, -clip, clip)`
    /// (floor division, halves rounded up). What a ReLU whose sign test reads `z` as
    /// non-negative outputs ([`Faults::relu_requant`], the digit path's `g`).
    #[must_use]
    pub fn apply_signed(&self, z: i64) -> i64 {
        let s = 1i64 << self.shift.min(62);
        let r = if self.shift == 0 { z } else { (z + s / 2).div_euclid(s) };
        let clip = i64::try_from(self.clip).unwrap_or(i64::MAX);
        r.clamp(-clip, clip)
    }
}

/// Corruption of the ReLUs by a pruned sign test (fault-aware training and emulation): values
/// in `[-dead_zone, -1]` are taken as non-negative, so the ReLU passes them through (then
/// requantised like any other value and clamped to `[-clip, clip]`, which makes them 0 after
/// rounding unless the dead zone is wider than half a quantisation step). This is what the
/// encrypted digit path ([`crate::cnn_infer::ReluPath::Digits`]) computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Faults {
    /// Width of the dead zone below zero (0: exact ReLU).
    pub dead_zone: u64,
}

impl Faults {
    /// The dead zone of a balanced-digit sign test in base `base` keeping the top `kept` of
    /// `digits` digits: `(base^(digits - kept) - 1) / 2`.
    #[must_use]
    pub fn balanced(base: u64, digits: u32, kept: u32) -> Self {
        let dropped = digits.saturating_sub(kept);
        Self { dead_zone: (base.saturating_pow(dropped) - 1) / 2 }
    }

    /// The ReLU input after corruption: the value the requantised ReLU is applied to as if it
    /// were `>= 0`. Returns `z` unchanged when the sign test is right.
    #[must_use]
    pub fn relu_requant(&self, rq: &Requant, z: i64) -> i64 {
        if z < 0 && z.unsigned_abs() <= self.dead_zone {
            // The sign test says "non-negative": the path computes the requantised value of
            // z itself, clamped to [-clip, clip], so the corrupted activation stays within the
            // bound the next layer was sized for.
            rq.apply_signed(z)
        } else {
            rq.apply(z)
        }
    }
}

/// Hyper-parameters of the CNN and its training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CnnConfig {
    /// Convolution channels.
    pub channels: usize,
    /// Hidden units of the first fully connected layer.
    pub hidden: usize,
    /// Largest weight magnitude (all layers).
    pub max_weight: i64,
    /// Largest bias magnitude of the convolution and FC100.
    pub max_bias: i64,
    /// Requantisation after the convolution.
    pub act1: Requant,
    /// Requantisation after FC100.
    pub act2: Requant,
    /// Largest L1 norm of an FC100 row (integer weights).
    pub fc1_l1: u64,
    /// Epochs.
    pub epochs: usize,
    /// Mini-batch size.
    pub batch: usize,
    /// Adam learning rate (in weight units).
    pub learning_rate: f32,
    /// Softmax temperature applied to the integer scores in training.
    pub temperature: f32,
    /// Seed of the initialisation and the shuffles.
    pub seed: u64,
    /// ReLU corruption in training (fault-aware training); none by default.
    pub faults: Faults,
    /// Largest random translation of the training images, in pixels (data augmentation).
    pub shift_pixels: usize,
    /// L2 weight decay (decoupled, per step, in units of the learning rate).
    pub weight_decay: f32,
}

impl Default for CnnConfig {
    fn default() -> Self {
        Self {
            channels: 5,
            hidden: 100,
            max_weight: 7,
            max_bias: 1023,
            act1: Requant { shift: 4, clip: 15 },
            act2: Requant { shift: 5, clip: 15 },
            fc1_l1: 546,
            epochs: 12,
            batch: 64,
            learning_rate: 0.02,
            temperature: 1.0 / 16.0,
            seed: 2026,
            faults: Faults::default(),
            shift_pixels: 1,
            weight_decay: 0.0,
        }
    }
}

/// The integer CNN.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuantCnn {
    /// Channels.
    pub channels: usize,
    /// Hidden units.
    pub hidden: usize,
    /// Convolution weights, `[channel][tap]`, row-major.
    pub conv_w: Vec<i64>,
    /// Convolution biases.
    pub conv_b: Vec<i64>,
    /// First requantised ReLU.
    pub act1: Requant,
    /// FC100 weights, `[hidden][channel * 169 + position]`.
    pub fc1_w: Vec<i64>,
    /// FC100 biases.
    pub fc1_b: Vec<i64>,
    /// Second requantised ReLU.
    pub act2: Requant,
    /// FC10 weights, `[class][hidden]`.
    pub fc2_w: Vec<i64>,
    /// FC10 biases.
    pub fc2_b: Vec<i64>,
}

/// Sound worst-case bounds of the three pre-activations over all 4-bit images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CnnBounds {
    /// `max_c 15 * L1(conv_c) + |b_c|`.
    pub conv: u64,
    /// `max_n clip1 * L1(fc1_n) + |b_n|`.
    pub fc1: u64,
    /// `max_m clip2 * L1(fc2_m) + |b_m|`.
    pub fc2: u64,
}

impl QuantCnn {
    /// Checks the shapes.
    pub fn validate(&self) -> Result<()> {
        let (c, h) = (self.channels, self.hidden);
        let check = |what: &'static str, expected: usize, found: usize| {
            if expected == found {
                Ok(())
            } else {
                Err(Error::DimensionMismatch { what, expected, found })
            }
        };
        if c == 0 || h == 0 {
            return Err(Error::InvalidField { field: "cnn", reason: "no channels or hidden units" });
        }
        // Untrusted sizes (from JSON): products that overflow are refused, never wrapped.
        let product = |what: &'static str, factors: &[usize]| {
            factors.iter().try_fold(1usize, |acc, &f| acc.checked_mul(f)).ok_or(Error::SizeOverflow { what })
        };
        check("conv weights", product("conv weights", &[c, TAPS])?, self.conv_w.len())?;
        check("conv biases", c, self.conv_b.len())?;
        check("fc1 weights", product("fc1 weights", &[h, c, POSITIONS])?, self.fc1_w.len())?;
        check("fc1 biases", h, self.fc1_b.len())?;
        check("fc2 weights", product("fc2 weights", &[CLASSES, h])?, self.fc2_w.len())?;
        check("fc2 biases", CLASSES, self.fc2_b.len())?;
        if self.act1.shift > 62 || self.act2.shift > 62 || self.act1.clip > 1 << 20 || self.act2.clip > 1 << 20 {
            return Err(Error::InvalidField { field: "cnn", reason: "requantisation out of range" });
        }
        let big = |v: &[i64]| v.iter().any(|w| w.unsigned_abs() > 1 << 24);
        if big(&self.conv_w)
            || big(&self.conv_b)
            || big(&self.fc1_w)
            || big(&self.fc1_b)
            || big(&self.fc2_w)
            || big(&self.fc2_b)
        {
            return Err(Error::InvalidField { field: "cnn", reason: "weight magnitude above 2^24" });
        }
        Ok(())
    }

    /// Features after the convolution: `channels * 169`.
    #[must_use]
    pub fn features(&self) -> usize {
        self.channels * POSITIONS
    }

    /// Convolution pre-activations `z1[c * 169 + p]`.
    #[must_use]
    pub fn conv(&self, patches: &[[u8; TAPS]]) -> Vec<i64> {
        let mut z = Vec::with_capacity(self.features());
        for c in 0..self.channels {
            let w = &self.conv_w[c * TAPS..(c + 1) * TAPS];
            for patch in patches.iter().take(POSITIONS) {
                z.push(w.iter().zip(patch).map(|(&w, &x)| w * i64::from(x)).sum::<i64>() + self.conv_b[c]);
            }
        }
        z
    }

    /// FC100 pre-activations from the first activations.
    #[must_use]
    pub fn fc1(&self, a1: &[i64]) -> Vec<i64> {
        let f = self.features();
        (0..self.hidden)
            .map(|n| self.fc1_w[n * f..(n + 1) * f].iter().zip(a1).map(|(&w, &a)| w * a).sum::<i64>() + self.fc1_b[n])
            .collect()
    }

    /// FC10 scores from the second activations.
    #[must_use]
    pub fn fc2(&self, a2: &[i64]) -> Vec<i64> {
        let h = self.hidden;
        (0..CLASSES)
            .map(|m| self.fc2_w[m * h..(m + 1) * h].iter().zip(a2).map(|(&w, &a)| w * a).sum::<i64>() + self.fc2_b[m])
            .collect()
    }

    /// The ten integer scores of an image, with the ReLUs corrupted by `faults`.
    #[must_use]
    pub fn scores_with(&self, image: &Image, faults: Faults) -> Vec<i64> {
        let a1: Vec<i64> = self.conv(&patches(image)).into_iter().map(|z| faults.relu_requant(&self.act1, z)).collect();
        let a2: Vec<i64> = self.fc1(&a1).into_iter().map(|z| faults.relu_requant(&self.act2, z)).collect();
        self.fc2(&a2)
    }

    /// The ten integer scores of an image.
    #[must_use]
    pub fn scores(&self, image: &Image) -> Vec<i64> {
        self.scores_with(image, Faults::default())
    }

    /// The predicted digit: the arg-max of the scores (lowest index on ties).
    #[must_use]
    pub fn predict(&self, image: &Image) -> u8 {
        argmax(&self.scores(image))
    }

    /// Fraction of `data` classified correctly, with the ReLUs corrupted by `faults`.
    #[must_use]
    pub fn accuracy_with(&self, data: &Split, faults: Faults) -> f64 {
        let correct: usize = data
            .images()
            .par_iter()
            .zip(data.labels())
            .map(|(img, &l)| usize::from(argmax(&self.scores_with(img, faults)) == l))
            .sum();
        correct as f64 / data.len().max(1) as f64
    }

    /// Fraction of `data` classified correctly.
    #[must_use]
    pub fn accuracy(&self, data: &Split) -> f64 {
        self.accuracy_with(data, Faults::default())
    }

    /// Sound worst-case bounds of the pre-activations over all 4-bit images: `max_in * L1(w) +
    /// |b|` per neuron. No input exceeds them; an input attains one only when that neuron's
    /// weights share one sign and its bias has the same sign (a test builds both cases).
    #[must_use]
    pub fn bounds(&self) -> CnnBounds {
        let l1 = |w: &[i64]| w.iter().map(|v| v.unsigned_abs()).sum::<u64>();
        let (f, h) = (self.features(), self.hidden);
        let conv = (0..self.channels)
            .map(|c| u64::from(Q_MAX) * l1(&self.conv_w[c * TAPS..(c + 1) * TAPS]) + self.conv_b[c].unsigned_abs())
            .max()
            .unwrap_or(0);
        let fc1 = (0..h)
            .map(|n| self.act1.clip * l1(&self.fc1_w[n * f..(n + 1) * f]) + self.fc1_b[n].unsigned_abs())
            .max()
            .unwrap_or(0);
        let fc2 = (0..CLASSES)
            .map(|m| self.act2.clip * l1(&self.fc2_w[m * h..(m + 1) * h]) + self.fc2_b[m].unsigned_abs())
            .max()
            .unwrap_or(0);
        CnnBounds { conv, fc1, fc2 }
    }

    /// The model as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| Error::json("encoding of the CNN model", &e))
    }

    /// A model from JSON (shapes checked).
    pub fn from_json(json: &str) -> Result<Self> {
        let m: Self = serde_json::from_str(json).map_err(|e| Error::json("decoding of the CNN model", &e))?;
        m.validate()?;
        Ok(m)
    }
}

/// Index of the largest value (lowest index on ties); 0 for an empty slice.
#[must_use]
pub fn argmax(v: &[i64]) -> u8 {
    let mut best = 0usize;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best as u8
}

// ---- training --------------------------------------------------------------------------------

/// Float shadow weights in integer units.
#[derive(Debug, Clone)]
struct Shadow {
    conv_w: Vec<f32>,
    conv_b: Vec<f32>,
    fc1_w: Vec<f32>,
    fc1_b: Vec<f32>,
    fc2_w: Vec<f32>,
    fc2_b: Vec<f32>,
}

impl Shadow {
    fn params(&mut self) -> [&mut Vec<f32>; 6] {
        [&mut self.conv_w, &mut self.conv_b, &mut self.fc1_w, &mut self.fc1_b, &mut self.fc2_w, &mut self.fc2_b]
    }

    fn zeros_like(&self) -> Self {
        let z = |v: &Vec<f32>| vec![0.0; v.len()];
        Self {
            conv_w: z(&self.conv_w),
            conv_b: z(&self.conv_b),
            fc1_w: z(&self.fc1_w),
            fc1_b: z(&self.fc1_b),
            fc2_w: z(&self.fc2_w),
            fc2_b: z(&self.fc2_b),
        }
    }

    fn add_assign(&mut self, o: &Self) {
        let pairs = [
            (&mut self.conv_w, &o.conv_w),
            (&mut self.conv_b, &o.conv_b),
            (&mut self.fc1_w, &o.fc1_w),
            (&mut self.fc1_b, &o.fc1_b),
            (&mut self.fc2_w, &o.fc2_w),
            (&mut self.fc2_b, &o.fc2_b),
        ];
        for (a, b) in pairs {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
        }
    }
}

fn q(w: f32, max: i64) -> i64 {
    (w.round() as i64).clamp(-max, max)
}

/// The quantised model the shadow weights stand for.
fn quantise(s: &Shadow, c: &CnnConfig) -> QuantCnn {
    let qv = |v: &[f32], m: i64| v.iter().map(|&w| q(w, m)).collect::<Vec<i64>>();
    QuantCnn {
        channels: c.channels,
        hidden: c.hidden,
        conv_w: qv(&s.conv_w, c.max_weight),
        conv_b: qv(&s.conv_b, c.max_bias),
        act1: c.act1,
        fc1_w: qv(&s.fc1_w, c.max_weight),
        fc1_b: qv(&s.fc1_b, c.max_bias),
        act2: c.act2,
        fc2_w: qv(&s.fc2_w, c.max_weight),
        fc2_b: qv(&s.fc2_b, c.max_bias),
    }
}

/// Scales each FC100 row down, by the largest factor found by bisection, until the L1 norm
/// of its rounded weights is at most `l1`.
fn project_l1(s: &mut Shadow, c: &CnnConfig) {
    let f = c.channels * POSITIONS;
    let norm =
        |row: &[f32], factor: f32| -> u64 { row.iter().map(|&w| q(w * factor, c.max_weight).unsigned_abs()).sum() };
    for row in s.fc1_w.chunks_mut(f) {
        if norm(row, 1.0) <= c.fc1_l1 {
            continue;
        }
        let (mut lo, mut hi) = (0.0f32, 1.0f32);
        for _ in 0..30 {
            let mid = 0.5 * (lo + hi);
            if norm(row, mid) <= c.fc1_l1 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        row.iter_mut().for_each(|w| *w *= lo);
    }
}

/// Gradient of the cross-entropy loss of one image (straight-through through the rounding).
fn gradient(m: &QuantCnn, c: &CnnConfig, image: &Image, label: u8, g: &mut Shadow) -> (f32, bool) {
    let pat = patches(image);
    let z1 = m.conv(&pat);
    let a1: Vec<i64> = z1.iter().map(|&z| c.faults.relu_requant(&m.act1, z)).collect();
    let z2 = m.fc1(&a1);
    let a2: Vec<i64> = z2.iter().map(|&z| c.faults.relu_requant(&m.act2, z)).collect();
    let z3 = m.fc2(&a2);
    let correct = argmax(&z3) == label;
    // Softmax cross-entropy on temperature * scores.
    let logits: Vec<f32> = z3.iter().map(|&z| z as f32 * c.temperature).collect();
    let max = logits.iter().copied().fold(f32::MIN, f32::max);
    let exps: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exps.iter().sum();
    let loss = -((exps[usize::from(label)] / sum).max(1e-30)).ln();
    let dz3: Vec<f32> = exps
        .iter()
        .enumerate()
        .map(|(i, e)| c.temperature * (e / sum - f32::from(u8::from(i == usize::from(label)))))
        .collect();
    let h = m.hidden;
    let f = m.features();
    let mut da2 = vec![0f32; h];
    for (k, &d) in dz3.iter().enumerate() {
        g.fc2_b[k] += d;
        let row = &m.fc2_w[k * h..(k + 1) * h];
        let grow = &mut g.fc2_w[k * h..(k + 1) * h];
        for n in 0..h {
            grow[n] += d * a2[n] as f32;
            da2[n] += d * row[n] as f32;
        }
    }
    // Straight-through requantisation: slope 2^-shift where the output is not clipped.
    let ste = |rq: &Requant, z: i64, a: i64| -> f32 {
        if z > 0 && a < rq.clip as i64 {
            1.0 / (1u64 << rq.shift) as f32
        } else {
            0.0
        }
    };
    let dz2: Vec<f32> = (0..h).map(|n| da2[n] * ste(&m.act2, z2[n], a2[n])).collect();
    let mut da1 = vec![0f32; f];
    for (n, &d) in dz2.iter().enumerate() {
        if d == 0.0 {
            continue;
        }
        g.fc1_b[n] += d;
        let row = &m.fc1_w[n * f..(n + 1) * f];
        let grow = &mut g.fc1_w[n * f..(n + 1) * f];
        for i in 0..f {
            grow[i] += d * a1[i] as f32;
            da1[i] += d * row[i] as f32;
        }
    }
    for ch in 0..m.channels {
        let grow = &mut g.conv_w[ch * TAPS..(ch + 1) * TAPS];
        let mut db = 0f32;
        for (p, patch) in pat.iter().enumerate() {
            let i = ch * POSITIONS + p;
            let d = da1[i] * ste(&m.act1, z1[i], a1[i]);
            if d == 0.0 {
                continue;
            }
            db += d;
            for (gw, &x) in grow.iter_mut().zip(patch) {
                *gw += d * f32::from(x);
            }
        }
        g.conv_b[ch] += db;
    }
    (loss, correct)
}

/// `image` translated by `(dy, dx)` pixels, zeros shifted in.
fn translate(image: &Image, dy: i64, dx: i64) -> Image {
    let mut out = [0u8; PIXELS];
    for y in 0..SIDE as i64 {
        for x in 0..SIDE as i64 {
            let (sy, sx) = (y - dy, x - dx);
            if (0..SIDE as i64).contains(&sy) && (0..SIDE as i64).contains(&sx) {
                out[(y as usize) * SIDE + x as usize] = image[(sy as usize) * SIDE + sx as usize];
            }
        }
    }
    out
}

/// Images per partial gradient (summed in a fixed order).
const GRADIENT_CHUNK: usize = 16;

/// What training reports after each epoch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpochReport {
    /// Epoch, from 1.
    pub epoch: usize,
    /// Mean training loss.
    pub loss: f64,
    /// Training accuracy during the epoch (of the weights at each step).
    pub train_accuracy: f64,
}

/// Trains the integer CNN on `data` (quantisation-aware, see the module docs), calling
/// `progress` after each epoch. Deterministic for a given configuration on any number of
/// threads (partial gradients over fixed chunks of 16 images are combined in a fixed order).
pub fn train(data: &Split, config: &CnnConfig, mut progress: impl FnMut(EpochReport)) -> Result<QuantCnn> {
    if data.is_empty() || config.batch == 0 || config.channels == 0 || config.hidden == 0 {
        return Err(Error::InvalidField {
            field: "cnn training",
            reason: "empty data, batch, channels or hidden units",
        });
    }
    let (ch, h) = (config.channels, config.hidden);
    let f = ch * POSITIONS;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut init = |n: usize, scale: f32| -> Vec<f32> { (0..n).map(|_| rng.random_range(-scale..scale)).collect() };
    let mut s = Shadow {
        conv_w: init(ch * TAPS, 3.0),
        conv_b: vec![0.0; ch],
        fc1_w: init(h * f, 1.5),
        fc1_b: vec![0.0; h],
        fc2_w: init(CLASSES * h, 2.5),
        fc2_b: vec![0.0; CLASSES],
    };
    project_l1(&mut s, config);
    // Adam state.
    let mut m1 = s.zeros_like();
    let mut m2 = s.zeros_like();
    let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
    let mut step = 0i32;
    let mut order: Vec<usize> = (0..data.len()).collect();
    let images = data.images();
    let labels = data.labels();
    for epoch in 1..=config.epochs {
        order.shuffle(&mut rng);
        let (mut loss_sum, mut correct) = (0f64, 0usize);
        let steps_per_epoch = data.len().div_ceil(config.batch);
        let total_steps = (steps_per_epoch * config.epochs) as f32;
        let shifts: Vec<(i64, i64)> = if config.shift_pixels == 0 {
            vec![(0, 0); data.len()]
        } else {
            let r = config.shift_pixels as i64;
            (0..data.len()).map(|_| (rng.random_range(-r..=r), rng.random_range(-r..=r))).collect()
        };
        for batch in order.chunks(config.batch) {
            // Cosine decay of the learning rate over the whole run.
            let progress_frac = step as f32 / total_steps;
            let lr = config.learning_rate * 0.5 * (1.0 + (std::f32::consts::PI * progress_frac).cos());
            let model = quantise(&s, config);
            // Fixed chunks summed in order: the result does not depend on the thread count.
            let parts: Vec<(Shadow, f32, usize)> = batch
                .par_chunks(GRADIENT_CHUNK)
                .map(|part| {
                    let mut g = s.zeros_like();
                    let (mut l, mut ok) = (0f32, 0usize);
                    for &i in part {
                        let (dy, dx) = shifts[i];
                        let img = if (dy, dx) == (0, 0) { images[i] } else { translate(&images[i], dy, dx) };
                        let (li, ci) = gradient(&model, config, &img, labels[i], &mut g);
                        l += li;
                        ok += usize::from(ci);
                    }
                    (g, l, ok)
                })
                .collect();
            let mut g = s.zeros_like();
            for (pg, l, ok) in &parts {
                g.add_assign(pg);
                loss_sum += f64::from(*l);
                correct += ok;
            }
            step += 1;
            let inv = 1.0 / batch.len() as f32;
            let (c1, c2) = (1.0 - b1.powi(step), 1.0 - b2.powi(step));
            let gp = [&g.conv_w, &g.conv_b, &g.fc1_w, &g.fc1_b, &g.fc2_w, &g.fc2_b];
            let mut m1p = m1.params();
            let mut m2p = m2.params();
            for (i, w) in s.params().into_iter().enumerate() {
                let (gi, mi, vi) = (gp[i], &mut m1p[i], &mut m2p[i]);
                for j in 0..w.len() {
                    let gj = gi[j] * inv;
                    mi[j] = b1 * mi[j] + (1.0 - b1) * gj;
                    vi[j] = b2 * vi[j] + (1.0 - b2) * gj * gj;
                    w[j] -= lr * ((mi[j] / c1) / ((vi[j] / c2).sqrt() + eps) + config.weight_decay * w[j]);
                }
            }
            // Keep the shadow weights near the representable range.
            let (mw, mb) = (config.max_weight as f32 + 0.49, config.max_bias as f32 + 0.49);
            s.conv_w.iter_mut().chain(s.fc1_w.iter_mut()).chain(s.fc2_w.iter_mut()).for_each(|w| *w = w.clamp(-mw, mw));
            s.conv_b.iter_mut().chain(s.fc1_b.iter_mut()).chain(s.fc2_b.iter_mut()).for_each(|w| *w = w.clamp(-mb, mb));
            project_l1(&mut s, config);
        }
        let n = data.len() as f64;
        progress(EpochReport { epoch, loss: loss_sum / n, train_accuracy: correct as f64 / n });
    }
    let model = quantise(&s, config);
    model.validate()?;
    Ok(model)
}

/// The 28 x 28 image of `PIXELS` bytes.
const _: () = assert!(PIXELS == SIDE * SIDE);

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(n: usize, seed: u64) -> Split {
        // Digit d: a bright horizontal bar at row 2d + 4, plus noise.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut images = Vec::new();
        let mut labels = Vec::new();
        for i in 0..n {
            let d = (i % 10) as u8;
            let mut img = [0u8; PIXELS];
            for x in 4..24 {
                img[(2 * usize::from(d) + 4) * SIDE + x] = 200 + rng.random_range(0..56u8);
            }
            for _ in 0..20 {
                img[rng.random_range(0..PIXELS)] = rng.random_range(0..=255u8);
            }
            images.push(img);
            labels.push(d);
        }
        Split::new(images, labels).unwrap()
    }

    #[test]
    fn patches_follow_the_layout() {
        let mut img = [0u8; PIXELS];
        img[0] = 0xF0; // (0, 0)
        img[27 * SIDE + 27] = 0xA0; // bottom right
        let p = patches(&img);
        assert_eq!(p[0][0], 15);
        // Position (13 - 1, 13 - 1) covers rows and columns 24..29: pixel (27, 27) is tap (3, 3).
        assert_eq!(p[POSITIONS - 1][3 * KERNEL + 3], 10);
        // Padding (row 28) reads zero.
        assert_eq!(p[POSITIONS - 1][4 * KERNEL + 4], 0);
        assert_eq!(OUT_SIDE, 13);
    }

    #[test]
    fn requantisation_matches_the_lookup_table_definition() {
        let rq = Requant { shift: 3, clip: 15 };
        let t = 786_433u32;
        let lut = wgfhe::compare::lut::Lut::relu_requant(t, 300, 1, 3, 15).unwrap();
        for z in -300..=300 {
            assert_eq!(lut.eval_plain(z), rq.apply(z) as u64, "z = {z}");
        }
        let rq0 = Requant { shift: 0, clip: 7 };
        assert_eq!(rq0.apply(5), 5);
        assert_eq!(rq0.apply(9), 7);
        assert_eq!(rq0.apply(-2), 0);
    }

    #[test]
    fn faults_pass_small_negatives_through_the_relu() {
        let f = Faults::balanced(7, 4, 2); // dead zone (49 - 1) / 2 = 24
        assert_eq!(f.dead_zone, 24);
        let rq = Requant { shift: 0, clip: 100 };
        assert_eq!(f.relu_requant(&rq, -24), -24);
        assert_eq!(f.relu_requant(&rq, -25), 0);
        assert_eq!(f.relu_requant(&rq, 30), 30);
        assert_eq!(Faults::default().relu_requant(&rq, -1), 0);
        // Clamped to [-clip, clip]; halves round up (floor division of z + 2^(s-1)).
        let narrow = Requant { shift: 0, clip: 10 };
        assert_eq!(f.relu_requant(&narrow, -24), -10);
        let shifted = Requant { shift: 2, clip: 15 };
        assert_eq!(f.relu_requant(&shifted, -2), 0);
        assert_eq!(f.relu_requant(&shifted, -3), -1);
        assert_eq!(f.relu_requant(&shifted, -24), -6);
    }

    #[test]
    fn training_learns_and_keeps_the_constraints() {
        let data = synthetic(600, 1);
        let config = CnnConfig {
            channels: 2,
            hidden: 12,
            epochs: 8,
            fc1_l1: 60,
            seed: 5,
            act2: Requant { shift: 2, clip: 15 },
            shift_pixels: 0,
            learning_rate: 0.05,
            ..CnnConfig::default()
        };
        let mut reports = Vec::new();
        let model = train(&data, &config, |r| reports.push(r)).unwrap();
        assert_eq!(reports.len(), 8, "{reports:?}");
        let test = synthetic(300, 2);
        assert!(model.accuracy(&test) > 0.9, "accuracy {}", model.accuracy(&test));
        let f = model.features();
        for row in model.fc1_w.chunks(f) {
            assert!(row.iter().map(|w| w.unsigned_abs()).sum::<u64>() <= 60);
        }
        assert!(model.conv_w.iter().chain(&model.fc1_w).chain(&model.fc2_w).all(|w| w.abs() <= 7));
        // Deterministic.
        let again = train(&data, &config, |_| {}).unwrap();
        assert_eq!(model, again);
        // JSON round trip, and a malformed model is refused.
        assert_eq!(QuantCnn::from_json(&model.to_json().unwrap()).unwrap(), model);
        let mut bad = model.clone();
        bad.fc1_b.pop();
        assert!(QuantCnn::from_json(&bad.to_json().unwrap()).is_err());
    }

    /// The image whose position-0 patch (rows and columns 0..5, inside the image) is ink (15)
    /// under the taps where `pick` holds for channel `c`'s weight and background elsewhere.
    fn vertex_image(m: &QuantCnn, c: usize, pick: impl Fn(i64) -> bool) -> Image {
        let mut img = [0u8; PIXELS];
        for (k, &w) in m.conv_w[c * TAPS..(c + 1) * TAPS].iter().enumerate() {
            if pick(w) {
                img[(k / KERNEL) * SIDE + k % KERNEL] = 255;
            }
        }
        img
    }

    /// The bounds are sound and as tight as claimed, on a trained model (weights of both signs)
    /// and on a hand-built one (all weights and biases positive).
    ///
    /// A channel's pre-activation at one position is linear in its 25 pixels, each in
    /// `0..=15`, so its extremes are at vertices of the box: ink under the positive weights
    /// gives `15 P_c + b_c`, ink under the negative ones `b_c - 15 N_c` (`P_c`, `N_c` the sums of
    /// the positive weights and of the magnitudes of the negative ones). The largest
    /// `|z|` over all images is therefore `max_c max(15 P_c + b_c, 15 N_c - b_c)`, which the
    /// vertex images below reach; [`QuantCnn::bounds`] gives `15 (P_c + N_c) + |b_c|`, equal to
    /// it exactly when one side is empty and the bias has the other side's sign. The same holds
    /// for the dense layers over activations in `0..=clip`.
    #[test]
    fn bounds_hold_the_worst_case_input() {
        let data = synthetic(200, 3);
        let config = CnnConfig { channels: 2, hidden: 8, epochs: 1, fc1_l1: 40, ..CnnConfig::default() };
        let m = train(&data, &config, |_| {}).unwrap();
        let b = m.bounds();
        let mut exact_conv = 0u64;
        for c in 0..m.channels {
            let w = &m.conv_w[c * TAPS..(c + 1) * TAPS];
            let pos: i64 = w.iter().filter(|&&v| v > 0).sum();
            let neg: i64 = -w.iter().filter(|&&v| v < 0).sum::<i64>();
            let bias = m.conv_b[c];
            assert!(pos > 0 && neg > 0, "the trained channel {c} should have weights of both signs");
            // The vertex images reach both extremes at position 0.
            let high = m.conv(&patches(&vertex_image(&m, c, |v| v > 0)))[c * POSITIONS];
            let low = m.conv(&patches(&vertex_image(&m, c, |v| v < 0)))[c * POSITIONS];
            assert_eq!(high, 15 * pos + bias, "channel {c}");
            assert_eq!(low, bias - 15 * neg, "channel {c}");
            exact_conv = exact_conv.max(high.unsigned_abs()).max(low.unsigned_abs());
        }
        // Sound: the worst case is within the bound; and not tight here (mixed signs), by
        // exactly the smaller side of the maximising channel at least.
        assert!(exact_conv <= b.conv, "{exact_conv} > {}", b.conv);
        assert!(exact_conv < b.conv, "mixed-sign weights cannot attain 15 L1 + |b|");
        // No image beats the vertex: the real images and random ones stay within it.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let random: Vec<Image> = (0..100)
            .map(|_| {
                let mut img = [0u8; PIXELS];
                img.iter_mut().for_each(|p| *p = rng.random_range(0..=255u8));
                img
            })
            .collect();
        for img in data.images().iter().take(50).chain(&random) {
            let z1 = m.conv(&patches(img));
            assert!(z1.iter().all(|z| z.unsigned_abs() <= exact_conv));
            let a1: Vec<i64> = z1.iter().map(|&z| m.act1.apply(z)).collect();
            let z2 = m.fc1(&a1);
            assert!(z2.iter().all(|z| z.unsigned_abs() <= b.fc1));
            let a2: Vec<i64> = z2.iter().map(|&z| m.act2.apply(z)).collect();
            assert!(m.fc2(&a2).iter().all(|z| z.unsigned_abs() <= b.fc2));
        }
        // Dense layers: the worst activation vector for a row is `clip` under its positive
        // weights (or under its negative ones) and 0 elsewhere; both stay within the bound.
        let f = m.features();
        for n in 0..m.hidden {
            let row = &m.fc1_w[n * f..(n + 1) * f];
            let clip = m.act1.clip as i64;
            for sign in [1, -1] {
                let a1: Vec<i64> = row.iter().map(|&w| if w * sign > 0 { clip } else { 0 }).collect();
                let z = m.fc1(&a1)[n];
                let want: i64 = row.iter().filter(|&&w| w * sign > 0).map(|&w| clip * w).sum::<i64>() + m.fc1_b[n];
                assert_eq!(z, want);
                assert!(z.unsigned_abs() <= b.fc1);
            }
        }

        // A hand-built model whose weights and biases are all positive: the all-ink image
        // attains every bound exactly. The convolution saturates the first activation at
        // every position (even the corner ones, 16 taps inside the image: 15 * 7 * 16 >> 3 >
        // 15), so the dense layers see `a = clip` everywhere too.
        let hidden = 2;
        let tight = QuantCnn {
            channels: 1,
            hidden,
            conv_w: vec![7; TAPS],
            conv_b: vec![3],
            act1: Requant { shift: 3, clip: 15 },
            fc1_w: (0..hidden * POSITIONS).map(|i| (i % 3) as i64).collect(),
            fc1_b: vec![5, 0],
            act2: Requant { shift: 4, clip: 15 },
            fc2_w: (0..CLASSES * hidden).map(|i| (i / hidden + i % hidden) as i64).collect(),
            fc2_b: (0..CLASSES as i64).collect(),
        };
        tight.validate().unwrap();
        let b = tight.bounds();
        // By hand: conv 15 * 7 * 25 + 3; fc1 row sums of (i mod 3) over its 169 entries.
        assert_eq!(b.conv, 15 * 7 * 25 + 3);
        let row_sum = |n: usize| (n * POSITIONS..(n + 1) * POSITIONS).map(|i| (i % 3) as u64).sum::<u64>();
        assert_eq!(b.fc1, (15 * row_sum(0) + 5).max(15 * row_sum(1)));
        // fc2 row m is (m, m + 1), bias m: 15 (2m + 1) + m, largest at m = 9.
        assert_eq!(b.fc2, 15 * 19 + 9);
        let ink = [255u8; PIXELS];
        let z1 = tight.conv(&patches(&ink));
        assert_eq!(z1.iter().map(|z| z.unsigned_abs()).max(), Some(b.conv));
        let a1: Vec<i64> = z1.iter().map(|&z| tight.act1.apply(z)).collect();
        assert!(a1.iter().all(|&a| a == 15), "the first activation should saturate");
        let z2 = tight.fc1(&a1);
        assert_eq!(z2.iter().map(|z| z.unsigned_abs()).max(), Some(b.fc1));
        let a2: Vec<i64> = z2.iter().map(|&z| tight.act2.apply(z)).collect();
        assert!(a2.iter().all(|&a| a == 15), "the second activation should saturate");
        assert_eq!(tight.scores(&ink).iter().map(|z| z.unsigned_abs()).max(), Some(b.fc2));
    }
}
