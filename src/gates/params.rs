//! Parameter sets of the bootstrapped gates, their checks and their noise analysis.
//!
//! # The sets
//!
//! | name | LWE `n`, secret | `q` | `N` | `Q` | `B_g`, digits kept | `q_ks`, `B_ks` |
//! |---|---|---|---|---|---|---|
//! | [`STD128`] | 560, ternary | 2^10 | 1024 | largest NTT prime < 2^26 | 2^7, 3 of 4 | 2^14, 2^5 |
//! | [`STD128_BB`] | 720, block-binary (ell = 2) | 2^10 | 1024 | as above | 2^7, 3 of 4 | 2^14, 2^5 |
//! | [`STD128_LF`] | 600, ternary | 2^11 | 1024 | as above | 2^6, 4 of 5 | 2^15, 2^5 |
//! | [`STD128_LUT`] | 640, ternary | 2^11 | 1024 | as above | 2^5, 5 of 6 | 2^16, 2^4 |
//! | [`TOY`] (insecure) | 32, ternary | 2^9 | 256 | largest NTT prime < 2^26 | 2^7, 3 of 4 | 2^14, 2^5 |
//!
//! All use the crate's discrete Gaussian (`sigma = 3.19`, [`crate::math::sampling::SIGMA`]) for
//! every error and a uniform ternary RLWE secret.
//!
//! # Security (what the 128-bit claim rests on)
//!
//! * **Source set**: OpenFHE BinFHE `STD128` (openfhe-development, `src/binfhe/lib/binfhecontext.cpp`,
//!   the parameter map of `GenerateBinFHEContext(BINFHE_PARAMSET, BINFHE_METHOD)`): ring
//!   `N = 1024` with a 27-bit prime `Q`, LWE `n = 512`, `q = 1024`, key-switching modulus
//!   `q_ks = 2^14`, `sigma = 3.19`, `B_ks = 2^7`, `B_g = 2^7`, uniform ternary secrets, labelled
//!   128-bit classical by its authors with the lattice estimator.
//! * **RLWE side, re-checked with the 2024 table** (Bossuat et al., ePrint 2024/463, Table 5.2,
//!   [`crate::params::security::max_log_qp`]): `N = 1024`, ternary secret, 128-bit classical
//!   allows `log2 Q <= 26`. OpenFHE's 27-bit `Q` does not pass that table, so our sets take the
//!   largest NTT prime below `2^26` and [`GateParams::validate`] enforces the table.
//! * **LWE side**: the 2024 table starts at dimension 1024 (26 bits there), so it does not apply
//!   to `n = 512..720` directly. Scaling its ratio linearly (`log2 q <= 26 n / 1024`, the way the
//!   table's own entries scale with `N`) gives `log2 q_ks <= 14.2` at `n = 560`, so the ternary
//!   sets take `n = 560` instead of OpenFHE's 512 (which needs the estimator run to pass at
//!   `q_ks = 2^14`). [`GateParams::validate`] enforces `log2 q_ks <= 26 n_eff / 1024`, where
//!   `n_eff` discounts lower-entropy secrets.
//! * **Block-binary secret** (each block of two coefficients has at most one 1: `log2 3` bits of
//!   entropy per block, `0.79` per coefficient against `1.58` for ternary): we charge it as
//!   `n_eff = n * 0.78` (the entropy ratio of block-binary to binary secrets, `0.79`, rounded
//!   down), so `n = 720` gives `n_eff = 561.6 >= 560`. This is an argument by scaling, **not** an
//!   estimator run; treat [`STD128_BB`]'s 128-bit label with that caveat.
//!
//! # Failure probability
//!
//! [`GateParams::noise`] gives the variance of the noise of a bootstrapped output, stage by stage,
//! from the standard independent-noise model (see the field docs of [`NoiseReport`]), and
//! [`GateParams::failure_probability`] the probability that a gate decides wrongly:
//! `erfc(margin / sqrt(2 * var)) / 2` with the margin `q/8` (AND, OR, NAND, NOR, majority: sum
//! of 2 or 3 outputs, one boundary within reach) or `erfc(margin / sqrt(2 * var))` with `q/4`
//! (XOR, XNOR: twice the sum of two outputs, both boundaries at `q/4`).
//!
//! Both are averages over keys. One key's key-switching table has a nonzero mean error (each
//! entry is reused by every bootstrap), so that key's outputs carry a fixed bias of variance
//! about `N sigma^2 sum_j (1/2^bits_j - 1/4^bits_j) (q/q_ks)^2` over keys (`1.3` at the noise
//! proxy, biases of `-2.1..1.8` measured over six keys there), which moves every decision of a
//! gate towards or away from its boundary: at the proxy, the chained-AND failure rates of the
//! keys measured were 0.2 and 4.7 times the averaged prediction. [`crate::gates::SecretKey::output_noise`]
//! evaluates the output's mean and variance for a given key.

use std::fmt;

use crate::error::{Error, Result};
use crate::math::primes::is_prime;
use crate::math::sampling::SIGMA;
use crate::params::security::max_log_qp;
use crate::params::{SecretDistribution, SecurityLevel};

/// Distribution of the LWE secret (the key the blind rotation runs over).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum LweSecret {
    /// Uniform over `{-1, 0, 1}`: two bootstrapping keys per coefficient (`s = 1`, `s = -1`),
    /// one external-product decomposition per coefficient (GINX with the ternary CMux).
    Ternary,
    /// Uniform over `{0, 1}`: one bootstrapping key per coefficient.
    Binary,
    /// Block-binary with blocks of two: each pair `(s_{2j}, s_{2j+1})` is `(0,0)`, `(1,0)` or
    /// `(0,1)`, uniformly; two keys per block, one decomposition per block, so `n / 2` steps.
    BlockBinary,
}

impl LweSecret {
    /// Stable name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Ternary => "ternary",
            Self::Binary => "binary",
            Self::BlockBinary => "block-binary",
        }
    }

    /// LWE coefficients per blind-rotation step.
    #[must_use]
    pub const fn group(self) -> usize {
        match self {
            Self::Ternary | Self::Binary => 1,
            Self::BlockBinary => 2,
        }
    }

    /// Bootstrapping keys per blind-rotation step.
    #[must_use]
    pub const fn keys_per_step(self) -> usize {
        match self {
            Self::Ternary | Self::BlockBinary => 2,
            Self::Binary => 1,
        }
    }

    /// `E[s_i^2]`.
    #[must_use]
    pub const fn second_moment(self) -> f64 {
        match self {
            Self::Ternary => 2.0 / 3.0,
            Self::Binary => 0.5,
            Self::BlockBinary => 1.0 / 3.0,
        }
    }

    /// Expected number of keys per step whose bit is 1.
    #[must_use]
    pub const fn ones_per_step(self) -> f64 {
        match self {
            Self::Ternary | Self::BlockBinary => 2.0 / 3.0,
            Self::Binary => 0.5,
        }
    }

    /// The security discount of the secret: the LWE dimension counts as `n * factor` against
    /// the scaled 2024 table (see the [module docs](self)).
    #[must_use]
    pub const fn dimension_factor(self) -> f64 {
        match self {
            Self::Ternary => 1.0,
            // Binary: log2(2) / log2(3) of ternary entropy; block-binary: a further 0.79.
            Self::Binary => 0.63,
            Self::BlockBinary => 0.78,
        }
    }
}

/// A gate parameter set (plain data; [`validate`](Self::validate) checks it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct GateParams {
    /// Name (at most 64 bytes).
    pub name: String,
    /// LWE dimension `n`.
    pub n: usize,
    /// LWE secret distribution.
    pub secret: LweSecret,
    /// `log2 q` of the LWE modulus the gates work at (`q` divides `2N`).
    pub log_q: u32,
    /// `log2 N` of the ring.
    pub log_ring: u32,
    /// The NTT prime `Q < 2^28`, `Q = 1 mod 2N`.
    pub ring_q: u32,
    /// `log2` of the gadget base `B_g`.
    pub log_bg: u32,
    /// Gadget digits kept.
    pub digits: usize,
    /// Low gadget digits dropped (approximate decomposition).
    pub skipped: usize,
    /// `log2 q_ks` of the key-switching modulus (at most 16: the table is stored as `u16`).
    pub log_qks: u32,
    /// `log2` of the key-switching base.
    pub log_bks: u32,
    /// Marks a set that makes no security claim (tests only).
    pub insecure: bool,
}

/// Largest NTT prime below `2^bits` with `Q = 1 mod 2N`, or 0 if none.
#[must_use]
pub fn largest_ntt_prime(bits: u32, log_ring: u32) -> u32 {
    let two_n = 2u64 << log_ring;
    let upper = 1u64 << bits;
    let mut c = ((upper - 2) / two_n) * two_n + 1;
    while c > two_n {
        if is_prime(c) {
            return c as u32;
        }
        c -= two_n;
    }
    0
}

/// `Q` of the shipped sets with `N = 1024`: the largest NTT prime below `2^26`.
pub const RING_Q_1024: u32 = 67_104_769;
/// `Q` of the toy set (`N = 256`): the largest NTT prime below `2^26` with `Q = 1 mod 512`.
pub const RING_Q_256: u32 = 67_104_769;

/// Name of the ternary 128-bit set.
pub const STD128: &str = "gates-std128";
/// Name of the block-binary 128-bit set.
pub const STD128_BB: &str = "gates-std128-bb";
/// Name of the low-failure 128-bit set.
pub const STD128_LF: &str = "gates-std128-lf";
/// Name of the 128-bit set for 3- and 4-bit lookup tables.
pub const STD128_LUT: &str = "gates-std128-lut";
/// Name of the insecure toy set.
pub const TOY: &str = "gates-toy";

impl GateParams {
    fn std(name: &str, n: usize, secret: LweSecret, log_q: u32, log_bg: u32, digits: usize, skipped: usize) -> Self {
        Self {
            name: name.to_owned(),
            n,
            secret,
            log_q,
            log_ring: 10,
            ring_q: RING_Q_1024,
            log_bg,
            digits,
            skipped,
            log_qks: 14,
            log_bks: 5,
            insecure: false,
        }
    }

    /// The shipped set called `name` ([`STD128`], [`STD128_BB`], [`STD128_LF`], [`TOY`]).
    ///
    /// Errors with [`Error::UnknownParameterSet`] for any other name.
    pub fn by_name(name: &str) -> Result<Self> {
        match name {
            STD128 => Ok(Self::std(STD128, 560, LweSecret::Ternary, 10, 7, 3, 1)),
            STD128_BB => Ok(Self::std(STD128_BB, 720, LweSecret::BlockBinary, 10, 7, 3, 1)),
            STD128_LF => Ok(Self { log_qks: 15, ..Self::std(STD128_LF, 600, LweSecret::Ternary, 11, 6, 4, 1) }),
            STD128_LUT => {
                Ok(Self { log_qks: 16, log_bks: 4, ..Self::std(STD128_LUT, 640, LweSecret::Ternary, 11, 5, 5, 1) })
            }
            TOY => Ok(Self {
                name: TOY.to_owned(),
                n: 32,
                secret: LweSecret::Ternary,
                log_q: 9,
                log_ring: 8,
                ring_q: RING_Q_256,
                log_bg: 7,
                digits: 3,
                skipped: 1,
                log_qks: 14,
                log_bks: 5,
                insecure: true,
            }),
            _ => Err(Error::UnknownParameterSet { name: name.to_owned() }),
        }
    }

    /// The noise-inflated proxy of the Monte-Carlo check (insecure, tiny: `n = 64`, `N = 64`,
    /// `q = 128`, `q_ks = 2^11`, `B_ks = 2^3`): the same pipeline as the shipped sets with a
    /// two-input failure probability near `6e-4`, so `10^5` gates measure it.
    #[must_use]
    pub fn noise_proxy() -> Self {
        Self {
            name: "gates-noise-proxy".to_owned(),
            n: 64,
            secret: LweSecret::Ternary,
            log_q: 7,
            log_ring: 6,
            ring_q: RING_Q_256,
            log_bg: 7,
            digits: 3,
            skipped: 1,
            log_qks: 11,
            log_bks: 3,
            insecure: true,
        }
    }

    /// Names of the shipped sets.
    #[must_use]
    pub fn shipped_names() -> [&'static str; 5] {
        [STD128, STD128_BB, STD128_LF, STD128_LUT, TOY]
    }

    /// Ring degree `N`.
    #[must_use]
    pub fn ring_n(&self) -> usize {
        1 << self.log_ring
    }

    /// LWE modulus `q`.
    #[must_use]
    pub fn q(&self) -> u32 {
        1 << self.log_q
    }

    /// Key-switching digits `ceil(log2 q_ks / log2 B_ks)`.
    #[must_use]
    pub fn ks_digits(&self) -> usize {
        self.log_qks.div_ceil(self.log_bks.max(1)) as usize
    }

    /// Blind-rotation steps (`n` or `n / 2`).
    #[must_use]
    pub fn steps(&self) -> usize {
        self.n / self.secret.group()
    }

    /// Rows of one RGSW key (`2 * digits`).
    #[must_use]
    pub fn rows(&self) -> usize {
        2 * self.digits
    }

    fn bad(&self, reason: impl Into<String>) -> Error {
        Error::InvalidGateParameters { name: self.name.chars().take(64).collect(), reason: reason.into() }
    }

    /// Checks the set: shapes, moduli, the decomposition, the lazy-accumulation bound, the
    /// sizes of the keys and (unless `insecure`) the security rules of the [module docs](self).
    ///
    /// Errors with [`Error::InvalidGateParameters`].
    pub fn validate(&self) -> Result<()> {
        if self.name.is_empty() || self.name.len() > 64 {
            return Err(self.bad("name must have 1..=64 bytes"));
        }
        if !(4..=12).contains(&self.log_ring) {
            return Err(self.bad("log2 N must be in [4, 12]"));
        }
        if self.n < 2 || self.n > 4096 {
            return Err(self.bad("LWE dimension must be in [2, 4096]"));
        }
        if self.secret == LweSecret::BlockBinary && !self.n.is_multiple_of(2) {
            return Err(self.bad("block-binary secrets need an even dimension"));
        }
        if self.log_q < 3 || self.log_q > self.log_ring + 1 {
            return Err(self.bad("q must be a power of two in [8, 2N]"));
        }
        if self.log_qks < self.log_q || self.log_qks > 16 {
            return Err(self.bad("q_ks must be a power of two in [q, 2^16]"));
        }
        if self.log_bks == 0 || self.log_bks > 8 {
            return Err(self.bad("log2 B_ks must be in [1, 8]"));
        }
        let q = u64::from(self.ring_q);
        let two_n = 2u64 << self.log_ring;
        if !(1 << 12..1 << 28).contains(&q) || !is_prime(q) || q % two_n != 1 {
            return Err(self.bad("Q must be a prime in [2^12, 2^28) with Q = 1 mod 2N"));
        }
        if self.log_bg == 0 || self.log_bg > 16 || self.digits == 0 {
            return Err(self.bad("log2 B_g must be in [1, 16] and at least one digit kept"));
        }
        let q_bits = 64 - q.leading_zeros();
        let total = (self.digits + self.skipped) as u32 * self.log_bg;
        if total < q_bits || total > q_bits + self.log_bg {
            return Err(self.bad("digits * log2 B_g must cover log2 Q with at most one spare digit"));
        }
        if self.skipped as u32 * self.log_bg + 1 >= q_bits {
            return Err(self.bad("the dropped digits cover the whole of Q"));
        }
        // Lazy accumulation: rows products of a lazy NTT output (< 4Q) and a key word (< Q).
        let bound = (self.rows() as u128) * 4 * u128::from(q) * u128::from(q);
        if bound >= 1 << 64 {
            return Err(self.bad("2 * digits * 4Q^2 must stay below 2^64 (lazy 64-bit accumulation)"));
        }
        let ks_entries = (self.ring_n() as u64) * self.ks_digits() as u64 * (1u64 << self.log_bks);
        if ks_entries >= 1 << 24 {
            return Err(self.bad("key-switching table too large"));
        }
        if !self.insecure {
            let max_q = max_log_qp(self.log_ring, SecurityLevel::Bits128, SecretDistribution::Ternary)
                .ok_or_else(|| self.bad("no 2024 table entry for this ring degree"))?;
            if f64::from(self.ring_q).log2() > f64::from(max_q) {
                return Err(self.bad(format!("log2 Q exceeds {max_q} bits (2024 table, 128-bit, N)")));
            }
            let n_eff = self.n as f64 * self.secret.dimension_factor();
            let limit = 26.0 * n_eff / 1024.0;
            if f64::from(self.log_qks) > limit {
                return Err(self.bad(format!("log2 q_ks exceeds {limit:.2} for this LWE dimension and secret")));
            }
        }
        Ok(())
    }

    /// Noise variances stage by stage (independent-noise model).
    #[must_use]
    pub fn noise(&self) -> NoiseReport {
        let sigma2 = SIGMA * SIGMA;
        let big_n = self.ring_n() as f64;
        let bg = f64::from(1u32 << self.log_bg);
        let s_ring = 2.0 / 3.0;
        // Signed digits: the lower kept digits are uniform over [-B_g/2, B_g/2); the top digit
        // takes what is left of a centred residue, |x| <= Q/2, so it is uniform over a range
        // of Q / B_g^(skipped + digits - 1) values (32 of 128 at Q < 2^26, B_g = 2^7, 3 + 1).
        let top_range = f64::from(self.ring_q) / bg.powi((self.skipped + self.digits - 1) as i32);
        let digits_var = (self.digits - 1) as f64 * bg * bg / 12.0 + top_range * top_range / 12.0;
        // One key's external-product error: 2 components * N * sum_l Var(digit_l) * sigma^2,
        // doubled by the factor (X^e - 1).
        let per_key = 2.0 * 2.0 * big_n * digits_var * sigma2;
        let round = if self.skipped == 0 {
            0.0
        } else {
            let step = f64::from(1u32 << (self.log_bg * self.skipped as u32));
            step * step / 12.0
        };
        let per_one = 2.0 * (big_n * s_ring + 1.0) * round;
        let steps = self.steps() as f64;
        let blind_rotation =
            steps * (self.secret.keys_per_step() as f64 * per_key + self.secret.ones_per_step() * per_one);
        let qks = f64::from(1u32 << self.log_qks);
        let big_q = f64::from(self.ring_q);
        let to_qks = blind_rotation * (qks / big_q).powi(2) + (1.0 + big_n * s_ring) / 12.0;
        // Digit j is uniform over its bits_j bits; a zero digit adds no table entry.
        let nonzero: f64 = (0..self.ks_digits() as u32)
            .map(|j| {
                let bits = self.log_bks.min(self.log_qks.saturating_sub(j * self.log_bks));
                1.0 - 0.5f64.powi(bits as i32)
            })
            .sum();
        let key_switch = big_n * nonzero * sigma2;
        let q = f64::from(self.q());
        let output =
            (to_qks + key_switch) * (q / qks).powi(2) + (1.0 + self.n as f64 * self.secret.second_moment()) / 12.0;
        NoiseReport { blind_rotation, after_mod_switch: to_qks, key_switch, output, fresh: sigma2 }
    }

    /// Probability that one gate of `kind` decides wrongly, for inputs that are outputs of
    /// earlier gates (the larger of the bootstrapped and fresh variances).
    #[must_use]
    pub fn failure_probability(&self, kind: MarginKind) -> f64 {
        let r = self.noise();
        let v = r.output.max(r.fresh);
        let q = f64::from(self.q());
        let (var, margin) = match kind {
            MarginKind::TwoInput => (2.0 * v, q / 8.0),
            MarginKind::ThreeInput => (3.0 * v, q / 8.0),
            MarginKind::Xor => (8.0 * v, q / 4.0),
        };
        // Every AND/OR/majority phase sits q/8 from one boundary and at least 3q/8 from the
        // other (one-sided); XOR phases sit q/4 from both (two-sided).
        let tails = match kind {
            MarginKind::TwoInput | MarginKind::ThreeInput => 0.5,
            MarginKind::Xor => 1.0,
        };
        tails * erfc(margin / (2.0 * var).sqrt())
    }
}

impl GateParams {
    /// Probability that a lookup-table bootstrap of a `bits`-bit message
    /// ([`crate::gates::GateEvaluator::lut`]) reads the wrong entry: the input's noise (the
    /// larger of the bootstrapped and fresh variances) leaves its slot of width
    /// `q / 2^(bits+1)` on either side, `erfc(q / 2^(bits+2) / sqrt(2 var))`. At `gates-std128`
    /// this is about `2e-6` for 2 bits and `2e-2` for 3 bits; [`STD128_LUT`] (larger `q` and
    /// `q_ks`, finer gadget) is the set for 3-bit tables (below `1e-9`); 4-bit tables stay near
    /// `1e-3` per evaluation there (the fresh and rounding noise at `q = 2N = 2048` bound them).
    #[must_use]
    pub fn lut_failure_probability(&self, bits: u32) -> f64 {
        let r = self.noise();
        let v = r.output.max(r.fresh);
        let margin = f64::from(self.q()) / f64::from(1u32 << (bits + 2).min(31));
        erfc(margin / (2.0 * v).sqrt())
    }
}

impl fmt::Display for GateParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (n = {}, {}, q = 2^{}, N = 2^{}, Q = {}, B_g = 2^{} x {} (+{} dropped), q_ks = 2^{}, B_ks = 2^{}{})",
            self.name,
            self.n,
            self.secret.name(),
            self.log_q,
            self.log_ring,
            self.ring_q,
            self.log_bg,
            self.digits,
            self.skipped,
            self.log_qks,
            self.log_bks,
            if self.insecure { ", INSECURE" } else { "" }
        )
    }
}

/// Which decision a gate makes (see [`GateParams::failure_probability`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarginKind {
    /// AND, OR, NAND, NOR (and the gates built from them): two outputs summed, margin `q/8`.
    TwoInput,
    /// Majority: three outputs summed, margin `q/8`.
    ThreeInput,
    /// XOR, XNOR: twice the sum of two outputs, margin `q/4`.
    Xor,
}

/// Noise variances of one bootstrap, stage by stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseReport {
    /// After the blind rotation, at `Q`: `steps * (keys * 2 * 2 * N * V_g * sigma^2 +
    /// ones * 2 * (N * 2/3 + 1) * B_g^(2 skipped)/12)` (key errors times digits, doubled by
    /// `X^e - 1`; the dropped digits times the ring secret where a key bit is 1), where
    /// `V_g = (digits - 1) B_g^2/12 + T^2/12` sums the digit variances of one component: the
    /// top digit of a centred residue spans only `T = Q / B_g^(skipped + digits - 1)` values.
    pub blind_rotation: f64,
    /// After the switch `Q -> q_ks` of the extracted LWE: scaled, plus rounding
    /// `(1 + N * 2/3) / 12`.
    pub after_mod_switch: f64,
    /// Added by the table key switch: `N * sigma^2 * sum_j P(digit j != 0)` (a zero digit adds
    /// no entry; digit `j` is uniform over its bits).
    pub key_switch: f64,
    /// At `q` after the final switch: scaled, plus rounding `(1 + n E[s^2]) / 12`.
    pub output: f64,
    /// A fresh encryption at `q`: `sigma^2`.
    pub fresh: f64,
}

/// Complementary error function, relative error below `1.2e-7` everywhere (Chebyshev fit of
/// `exp(-x^2) * t * poly(t)`, `t = 1 / (1 + x/2)`), usable deep into the tail.
#[must_use]
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98 + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_sets_validate_and_primes_are_the_largest() {
        for name in GateParams::shipped_names() {
            let p = GateParams::by_name(name).unwrap();
            p.validate().unwrap();
            assert_eq!(p.ring_q, largest_ntt_prime(26, p.log_ring), "{name}");
        }
        assert!(GateParams::by_name("nope").is_err());
    }

    #[test]
    fn bad_parameters_are_typed_errors() {
        let good = GateParams::by_name(STD128).unwrap();
        type Edit = Box<dyn Fn(&mut GateParams)>;
        let cases: Vec<Edit> = vec![
            Box::new(|p| p.ring_q += 2),
            Box::new(|p| p.ring_q = largest_ntt_prime(27, 10)),
            Box::new(|p| p.log_q = 12),
            Box::new(|p| p.log_qks = 15),
            Box::new(|p| p.n = 400),
            Box::new(|p| p.digits = 1),
            Box::new(|p| p.skipped = 4),
            Box::new(|p| p.log_bks = 9),
            Box::new(|p| p.log_ring = 13),
            Box::new(|p| {
                p.secret = LweSecret::BlockBinary;
                p.n = 561;
            }),
            Box::new(|p| p.secret = LweSecret::BlockBinary),
        ];
        for (i, f) in cases.iter().enumerate() {
            let mut p = good.clone();
            f(&mut p);
            assert!(matches!(p.validate(), Err(Error::InvalidGateParameters { .. })), "case {i}");
        }
    }

    /// The noise report of every shipped set (`--nocapture` prints it), checked for what any
    /// report must satisfy: a positive finite output variance; probabilities in [0, 1]; a
    /// three-input gate (smaller margin) failing at least as often as a two-input one; and a
    /// wider LUT message failing at least as often as a narrower one.
    #[test]
    fn noise_report_of_every_shipped_set() {
        for name in GateParams::shipped_names() {
            let p = GateParams::by_name(name).unwrap();
            let r = p.noise();
            let (two, three, xor) = (
                p.failure_probability(MarginKind::TwoInput),
                p.failure_probability(MarginKind::ThreeInput),
                p.failure_probability(MarginKind::Xor),
            );
            let lut: Vec<f64> = (2..=4).map(|b| p.lut_failure_probability(b)).collect();
            println!(
                "{name}: {r:?} sd_out {:.2} fail2 {two:e} fail3 {three:e} xor {xor:e} lut2..4 {:e} {:e} {:e}",
                r.output.sqrt(),
                lut[0],
                lut[1],
                lut[2]
            );
            assert!(r.output.is_finite() && r.output > 0.0, "{name}: {r:?}");
            for f in [two, three, xor].iter().chain(&lut) {
                assert!((0.0..=1.0).contains(f), "{name}: {f:e}");
            }
            assert!(two <= three, "{name}: two-input {two:e} > three-input {three:e}");
            assert!(lut.windows(2).all(|w| w[0] <= w[1]), "{name}: {lut:?}");
        }
    }

    #[test]
    fn erfc_matches_known_values() {
        for (x, want) in [(0.0, 1.0), (1.0, 0.157_299_207), (2.0, 4.677_734_98e-3), (5.0, 1.537_459_79e-12)] {
            assert!((erfc(x) - want).abs() <= want * 2e-7 + 1e-15, "{x}");
        }
        assert!((erfc(-1.0) - 1.842_700_79).abs() < 1e-6);
    }

    #[test]
    fn lut_failure_grows_with_the_message_width() {
        let p = GateParams::by_name(STD128).unwrap();
        let f: Vec<f64> = (1..=4).map(|b| p.lut_failure_probability(b)).collect();
        assert!(f.windows(2).all(|w| w[0] < w[1]), "{f:?}");
        assert!(f[1] < 1e-4 && f[2] > 1e-3, "{f:?}");
        assert!(GateParams::by_name(TOY).unwrap().lut_failure_probability(3) < 1e-5);
        let lut = GateParams::by_name(STD128_LUT).unwrap();
        assert!(lut.lut_failure_probability(3) < 1e-9 && lut.lut_failure_probability(4) < 1e-2);
    }

    #[test]
    fn shipped_failure_probabilities_are_small() {
        for name in [STD128, STD128_BB, STD128_LF] {
            let p = GateParams::by_name(name).unwrap();
            let f = p.failure_probability(MarginKind::TwoInput);
            assert!(f < 1e-9, "{name}: {f:e}");
        }
        let lf = GateParams::by_name(STD128_LF).unwrap();
        let std = GateParams::by_name(STD128).unwrap();
        assert!(lf.failure_probability(MarginKind::Xor) < std.failure_probability(MarginKind::Xor));
    }
}
