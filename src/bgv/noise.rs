//! Heuristic noise estimates for BGV (canonical-embedding bounds).
//!
//! Every ciphertext carries an estimate of `log2 ||v||^can`, where `v = c_0 + c_1 s` over the
//! integers (message and noise together, `v = corr * m + t e`). The formulas follow the
//! canonical-embedding analysis of Costache, Laine and Player (ESORICS 2020), the one behind
//! OpenFHE's BGV parameter generation, with a tail factor `D = 6`: a random polynomial with
//! independent coefficients of variance `V` has canonical norm below `D sqrt(N V)` with
//! overwhelming probability, and the canonical norm is sub-multiplicative, so products (squares
//! included) stay bounded however correlated their operands are. Since
//! `||v||_inf <= ||v||^can`, a ciphertext decrypts correctly while the estimate stays below
//! `log2(Q_l / 2)`. The bound is pessimistic for decryption (the infinity norm of a random
//! polynomial is about `sqrt(N)` times smaller), so the library may refuse an operation at the
//! lowest level that would in fact decrypt; it never accepts one the model says fails. Tests
//! measure `||v||_inf` with the secret key and check it against these estimates at every depth.
//! (An average-case model that treats coefficients as independent was tried and measured: it
//! underestimates repeated squaring by 1.6 to 2.8 bits after two squarings, because squares
//! are correlated with their operands.)
//!
//! The estimates drive modulus switching (drop primes while the noise is above the rounding
//! floor) and give each parameter set its documented depth ([`max_depth`]).

use crate::error::{Error, Result};
use crate::params::Parameters;

/// Tail factor of the canonical-embedding bounds.
pub const TAIL_FACTOR: f64 = 6.0;
/// Variance of a uniform ternary coefficient.
const TERNARY_VARIANCE: f64 = 2.0 / 3.0;

/// `log2(2^a + 2^b)`.
#[must_use]
pub fn log2_add(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    hi + (1.0 + (lo - hi).exp2()).log2()
}

/// The noise model of one parameter set.
#[derive(Debug, Clone)]
pub struct NoiseModel {
    n: f64,
    t: f64,
    sigma: f64,
    /// log2 of every prime of the chain, in chain order.
    log_q: Vec<f64>,
    /// log2 of the product of the special primes.
    log_p: f64,
    /// Number of special primes.
    p_count: usize,
    /// log2 of the largest digit product.
    log_max_digit: f64,
    alpha: usize,
    dnum: usize,
}

impl NoiseModel {
    /// The model for BGV parameters (`t` from the parameters; 2 if absent).
    #[must_use]
    pub fn new(params: &Parameters) -> Self {
        let log_q: Vec<f64> = params.q().iter().map(|m| f64::from(m.value()).log2()).collect();
        let log_max_digit = (0..params.dnum())
            .map(|j| params.digit_range(j).filter_map(|i| log_q.get(i)).sum::<f64>())
            .fold(0.0, f64::max);
        Self {
            n: params.n() as f64,
            t: params.plaintext_modulus().unwrap_or(2) as f64,
            sigma: params.sigma(),
            log_q,
            log_p: params.p().iter().map(|m| f64::from(m.value()).log2()).sum(),
            p_count: params.p().len(),
            log_max_digit,
            alpha: params.alpha(),
            dnum: params.dnum(),
        }
    }

    /// `log2(D sqrt(N variance))`: canonical norm of a random polynomial.
    fn bound(&self, variance: f64) -> f64 {
        (TAIL_FACTOR * (self.n * variance).sqrt()).log2()
    }

    /// Fresh symmetric encryption `v = m + t e`, for a message of canonical norm `2^message`.
    #[must_use]
    pub fn fresh_secret(&self, message: f64) -> f64 {
        log2_add(self.bound(self.t * self.t * self.sigma * self.sigma), message)
    }

    /// Fresh public-key encryption `v = m + t (e u + e_1 s + e_0)`, for a message of canonical
    /// norm `2^message`.
    #[must_use]
    pub fn fresh_public(&self, message: f64) -> f64 {
        let s2 = self.sigma * self.sigma;
        log2_add(self.bound(self.t * self.t * s2 * (1.0 + 2.0 * self.n * TERNARY_VARIANCE)), message)
    }

    /// Canonical norm (log2) of a uniformly random plaintext: the message term assumed by
    /// [`max_depth`]. Operations on a known plaintext use its exact norm instead.
    #[must_use]
    pub fn uniform_plaintext(&self) -> f64 {
        self.bound(self.t * self.t / 12.0)
    }

    /// Noise added by dropping one prime with exact centred rounding from a ciphertext of
    /// `degree`: `t (r_0 + r_1 s + r_2 s^2 + ...)` with `r_i` uniform in `[-1/2, 1/2]`. The
    /// first two terms are independent random polynomials; `s^k` is not (its canonical norm is
    /// `||s||^k`), so higher terms are bounded by `||r_k|| ||s||^k`.
    #[must_use]
    pub fn mod_switch_floor(&self, degree: usize) -> f64 {
        let mut out = self.bound(self.t * self.t / 12.0 * (1.0 + self.n * TERNARY_VARIANCE));
        let r = self.bound(self.t * self.t / 12.0);
        let s = self.bound(TERNARY_VARIANCE);
        for k in 2..=degree {
            out = log2_add(out, r + k as f64 * s);
        }
        out
    }

    /// Noise added by the ModDown of a key switch: `t (r_0 + r_1 s)` where the rounding terms
    /// `r_i = delta_i / P` of the centred fast-base-conversion lift lie in `[-k/2, k/2]` for `k`
    /// special primes (zero mean, variance at most `k^2 / 12`).
    fn mod_down_floor(&self) -> f64 {
        let k = self.p_count as f64;
        self.bound(self.t * self.t * (k * k / 12.0) * (1.0 + self.n * TERNARY_VARIANCE))
    }

    /// Noise added by one key switch at `level`: `t sum_j d_j e_j / P` plus the ModDown rounding.
    #[must_use]
    pub fn key_switch(&self, level: usize) -> f64 {
        let active = self.dnum.min(level / self.alpha.max(1) + 1) as f64;
        let a = self.alpha as f64;
        // d_j: a digit lifted by the centred fast base conversion, sum_i c_i qhat_i with
        // |c_i| <= q_i / 2: zero mean, |d_j| <= alpha Q_j / 2, variance at most
        // (alpha + 1)^2 Q_j^2 / 12; d_j e_j has coefficient variance N var(d_j) sigma^2.
        let log_var = (active * self.n * self.sigma * self.sigma * (a + 1.0) * (a + 1.0) / 12.0).log2()
            + 2.0 * self.log_max_digit
            + 2.0 * self.t.log2()
            - 2.0 * self.log_p;
        log2_add(TAIL_FACTOR.log2() + 0.5 * (self.n.log2() + log_var), self.mod_down_floor())
    }

    /// Noise of the product of two ciphertexts of noise `a` and `b` (before relinearisation).
    #[must_use]
    pub fn mul(&self, a: f64, b: f64) -> f64 {
        a + b
    }

    /// Noise of the product of a ciphertext of noise `b` and a plaintext of canonical norm
    /// `2^plain` (sub-multiplicativity of the canonical norm: exact, not heuristic).
    #[must_use]
    pub fn mul_plain(&self, b: f64, plain: f64) -> f64 {
        b + plain
    }

    /// Noise after dropping primes of total `log2 D`.
    #[must_use]
    pub fn after_mod_switch(&self, b: f64, log_dropped: f64, primes: usize) -> f64 {
        self.after_mod_switch_degree(b, log_dropped, primes, 1)
    }

    /// [`NoiseModel::after_mod_switch`] for a ciphertext of `degree` (1 or 2).
    #[must_use]
    pub fn after_mod_switch_degree(&self, b: f64, log_dropped: f64, primes: usize, degree: usize) -> f64 {
        let mut out = b - log_dropped;
        for _ in 0..primes {
            out = log2_add(out, self.mod_switch_floor(degree));
        }
        out
    }

    /// log2 of the product of `q_0..q_level`.
    #[must_use]
    pub fn log_q_at(&self, level: usize) -> f64 {
        self.log_q.iter().take(level + 1).sum()
    }

    /// log2 of `q_level`; [`Error::LevelOutOfRange`] beyond the chain.
    pub fn log_prime(&self, level: usize) -> Result<f64> {
        self.log_q.get(level).copied().ok_or(Error::LevelOutOfRange { level, max: self.log_q.len().saturating_sub(1) })
    }

    /// How many primes to drop from `level` before a multiplication: the most that keep the
    /// noise above the rounding floor (dropping more loses modulus without reducing noise).
    #[must_use]
    pub fn primes_to_drop(&self, noise: f64, level: usize) -> usize {
        self.primes_to_drop_degree(noise, level, 1)
    }

    /// [`NoiseModel::primes_to_drop`] for a ciphertext of `degree`: switching a degree-2
    /// ciphertext adds the rounding term `r s^2`, a floor about `||s||` higher, so it stops that
    /// much earlier (dropping further would only replace noise by rounding noise).
    #[must_use]
    pub fn primes_to_drop_degree(&self, noise: f64, level: usize, degree: usize) -> usize {
        let floor = self.mod_switch_floor(degree.max(1));
        let mut k = 0;
        let mut dropped = 0.0;
        // q_level, q_level-1, ..., q_1: the primes that can be dropped, last first.
        for log_q in self.log_q.iter().take(level + 1).skip(1).rev() {
            let next = dropped + log_q;
            if noise - next < floor {
                break;
            }
            dropped = next;
            k += 1;
        }
        k
    }

    /// Whether a ciphertext with this noise at `level` decrypts, possibly after switching down.
    #[must_use]
    pub fn decryptable(&self, noise: f64, level: usize) -> bool {
        (0..=level).any(|l| {
            let dropped = self.log_q_at(level) - self.log_q_at(l);
            let after = if l == level { noise } else { self.after_mod_switch(noise, dropped, level - l) };
            after < self.log_q_at(l) - 1.0
        })
    }
}

/// The number of sequential HMULTs (square, relinearise) from a fresh public-key encryption at the
/// top level that still decrypt, with noise-driven modulus switching before each product.
#[must_use]
pub fn max_depth(params: &Parameters) -> usize {
    let model = NoiseModel::new(params);
    if params.p().is_empty() {
        return 0;
    }
    let mut level = params.q().len() - 1;
    let mut noise = model.fresh_public(model.uniform_plaintext());
    let mut depth = 0;
    loop {
        let k = model.primes_to_drop(noise, level);
        let dropped = model.log_q_at(level) - model.log_q_at(level - k);
        noise = model.after_mod_switch(noise, dropped, k);
        level -= k;
        let product = log2_add(model.mul(noise, noise), model.key_switch(level));
        if !model.decryptable(product, level) {
            return depth;
        }
        noise = product;
        depth += 1;
    }
}

/// `log2` of the canonical norm `max_j |a(zeta^(2j+1))|` of a real polynomial (`zeta = e^(i pi / N)`),
/// computed exactly (up to rounding) with a complex FFT; 0 for the zero polynomial.
#[must_use]
pub fn canonical_norm_log2(coeffs: &[f64]) -> f64 {
    let n = coeffs.len();
    if n == 0 || !n.is_power_of_two() {
        return 0.0;
    }
    // a(zeta^(2j+1)) = sum_i (a_i zeta^i) omega^(i j) with omega = zeta^2: twist, then a DFT.
    let mut re = Vec::with_capacity(n);
    let mut im = Vec::with_capacity(n);
    for (i, &c) in coeffs.iter().enumerate() {
        let ang = std::f64::consts::PI * i as f64 / n as f64;
        re.push(c * ang.cos());
        im.push(c * ang.sin());
    }
    fft_in_place(&mut re, &mut im);
    let max = re.iter().zip(&im).map(|(r, i)| r.hypot(*i)).fold(0.0f64, f64::max);
    if max > 0.0 {
        max.log2()
    } else {
        0.0
    }
}

/// Puts `re` and `im` (of one power-of-two length) in bit-reversed order.
fn bit_reverse(re: &mut [f64], im: &mut [f64]) {
    let n = re.len().min(im.len());
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if j > i {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
}

/// In-place iterative radix-2 DFT (`X_k = sum_j x_j e^(2 pi i j k / N)`), `N` a power of two.
fn fft_in_place(re: &mut [f64], im: &mut [f64]) {
    let n = re.len();
    bit_reverse(re, im);
    let mut len = 2;
    while len <= n {
        let ang = 2.0 * std::f64::consts::PI / len as f64;
        // Each twiddle computed once per stage (n - 1 in all, not n/2 per stage); the
        // butterflies of a stage touch disjoint pairs, so their order changes no value.
        for k in 0..len / 2 {
            let (wr, wi) = ((ang * k as f64).cos(), (ang * k as f64).sin());
            for start in (0..n).step_by(len) {
                let (a, b) = (start + k, start + k + len / 2);
                let (Some(&br), Some(&bi), Some(&ar), Some(&ai)) = (re.get(b), im.get(b), re.get(a), im.get(a)) else {
                    return;
                };
                let (tr, ti) = (br * wr - bi * wi, br * wi + bi * wr);
                if let (Some(x), Some(y)) = (re.get_mut(a), im.get_mut(a)) {
                    *x = ar + tr;
                    *y = ai + ti;
                }
                if let (Some(x), Some(y)) = (re.get_mut(b), im.get_mut(b)) {
                    *x = ar - tr;
                    *y = ai - ti;
                }
            }
        }
        len <<= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DFT with its twiddles computed inside the butterfly loop (the loop order before the
    /// twiddles were hoisted): the hoisted one must give the same bits.
    fn fft_reference(re: &mut [f64], im: &mut [f64]) {
        let n = re.len();
        bit_reverse(re, im);
        let mut len = 2;
        while len <= n {
            let ang = 2.0 * std::f64::consts::PI / len as f64;
            for start in (0..n).step_by(len) {
                for k in 0..len / 2 {
                    let (wr, wi) = ((ang * k as f64).cos(), (ang * k as f64).sin());
                    let (a, b) = (start + k, start + k + len / 2);
                    let (tr, ti) = (re[b] * wr - im[b] * wi, re[b] * wi + im[b] * wr);
                    let (ar, ai) = (re[a], im[a]);
                    re[a] = ar + tr;
                    im[a] = ai + ti;
                    re[b] = ar - tr;
                    im[b] = ai - ti;
                }
            }
            len <<= 1;
        }
    }

    #[test]
    fn the_hoisted_twiddles_give_the_same_bits() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for n in [2usize, 16, 1024, 4096] {
            let mut re: Vec<f64> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % 65_537) as f64 - 32_768.0
                })
                .collect();
            let mut im = vec![0.5; n];
            let (mut re2, mut im2) = (re.clone(), im.clone());
            fft_in_place(&mut re, &mut im);
            fft_reference(&mut re2, &mut im2);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!((bits(&re), bits(&im)), (bits(&re2), bits(&im2)), "N = {n}");
        }
    }

    #[test]
    fn degree_two_switches_stop_at_their_higher_floor() {
        let params = crate::params::by_name("bgv-n16").unwrap();
        let m = NoiseModel::new(&params);
        let level = params.q().len() - 1;
        assert!(m.mod_switch_floor(2) > m.mod_switch_floor(1) + 10.0);
        let mut fewer = 0;
        for step in 0..60 {
            let noise = 60.0 + 5.0 * f64::from(step);
            let (d1, d2) = (m.primes_to_drop(noise, level), m.primes_to_drop_degree(noise, level, 2));
            assert!(d2 <= d1, "noise 2^{noise}: degree 2 drops {d2}, degree 1 {d1}");
            assert_eq!(d1, m.primes_to_drop_degree(noise, level, 1));
            // What a degree-2 switch leaves stays above its own floor.
            let dropped = m.log_q_at(level) - m.log_q_at(level - d2);
            assert!(noise - dropped >= m.mod_switch_floor(2), "noise 2^{noise}");
            fewer += usize::from(d2 < d1);
        }
        assert!(fewer > 0, "the degree-2 floor never changed the count");
    }

    #[test]
    fn canonical_norm_matches_direct_evaluation() {
        let n = 16;
        let coeffs: Vec<f64> = (0..n).map(|i| ((i * 7 + 3) % 11) as f64 - 5.0).collect();
        let mut max = 0.0f64;
        for j in 0..n {
            let ang = std::f64::consts::PI * (2 * j + 1) as f64 / n as f64;
            let (mut r, mut im) = (0.0, 0.0);
            for (i, c) in coeffs.iter().enumerate() {
                r += c * (ang * i as f64).cos();
                im += c * (ang * i as f64).sin();
            }
            max = max.max(r.hypot(im));
        }
        assert!((canonical_norm_log2(&coeffs) - max.log2()).abs() < 1e-9);
        // A constant c has canonical norm |c|; X^k has norm 1.
        let mut c = vec![0.0; 64];
        c[0] = 8.0;
        assert!((canonical_norm_log2(&c) - 3.0).abs() < 1e-9);
        let mut x = vec![0.0; 64];
        x[5] = -1.0;
        assert!(canonical_norm_log2(&x).abs() < 1e-9);
    }
}
