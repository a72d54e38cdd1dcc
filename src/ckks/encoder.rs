//! The CKKS encoder: the canonical embedding, computed with an `O(N log N)` FFT in `f64`.
//!
//! # Slots
//!
//! The ring is `Z[X]/(X^N + 1)` and `zeta = exp(i*pi/N)`, a primitive `2N`-th root of unity. With
//! `n` slots (`n` a power of two, `1 <= n <= N/2`) the message lives in the subring of
//! `Y = X^gap`, `gap = N/(2n)`: `m(X) = m'(Y)` with `m'` of degree below `2n`, and slot `j`
//! (`j = 0..n-1`) holds `m'(zeta_Y^(5^j mod 4n))` with `zeta_Y = zeta^gap`. Full packing is
//! `n = N/2`, `gap = 1`. Because `5^j mod 4n = (5^j mod 2N) mod 4n`, slot `j` is also the
//! value of the full polynomial at `zeta^(5^j mod 2N)`. Consequences (both are tested):
//!
//! * the automorphism `X -> X^(5^k)` rotates the `n` slots **left** by `k`;
//! * the automorphism `X -> X^(2N-1)` conjugates every slot.
//!
//! # Algorithm
//!
//! The powers `g = 5^j mod 4n`, `j = 0..n`, are exactly the `n` residues `= 1 mod 4`. Since
//! `zeta_Y^n = i` and `g = 1 mod 4`, `zeta_Y^(g n) = i^g = i`, so splitting `m'` into its low
//! and high halves gives
//!
//! ```text
//! m'(zeta_Y^g) = sum_{k<n} u_k zeta_Y^(g k),     u_k = m'_k + i m'_{k+n}.
//! ```
//!
//! Writing `g = 1 + 4 t_j` (`t_j = (g - 1)/4`, a permutation of `0..n`) and `W = zeta_Y^4 =
//! exp(2 pi i / n)`:
//!
//! ```text
//! slot_j = sum_{k<n} (u_k zeta_Y^k) W^(t_j k) = F[t_j],
//! ```
//!
//! a plain length-`n` DFT (positive exponent, no normalisation) of the "twisted" vector
//! `v_k = u_k zeta_Y^k`, read out in the order `t_j`. So
//!
//! * **decode** = pack `u_k = (c[gap k] + i c[gap k + N/2]) / scale`, twist by `zeta_Y^k`,
//!   radix-2 FFT, read `F[t_j]`;
//! * **encode** = place `z_j` at `F[t_j]`, inverse FFT (conjugate twiddles, divide by `n`),
//!   untwist by `zeta_Y^-k`, multiply by `scale`, round, and store `Re u_k` at coefficient
//!   `gap k` and `Im u_k` at coefficient `gap k + N/2` (note `gap (k + n) = gap k + N/2`).
//!
//! Every coefficient off the `gap` grid is zero after encoding; decoding reads only the grid
//! coefficients (the others are ignored: for a message in the subring they are noise only).
//!
//! All twiddles are entries of one table of the `2N` powers of `zeta`, built from its first
//! quarter by exact quarter-turn symmetries.
#![expect(
    clippy::indexing_slicing,
    reason = "hot loops over slices whose lengths are checked on entry; table indices are reduced mod their lengths"
)]

use num_complex::Complex64;

use crate::error::{Error, Result};

/// Smallest supported log2 N.
const MIN_LOG_N: u32 = 1;
/// Largest supported log2 N.
const MAX_LOG_N: u32 = 17;
/// log2 of the largest magnitude an encoded coefficient may have.
const COEFF_LIMIT_LOG2: i32 = 126;

/// The CKKS encoder for one ring degree `N = 2^log_n`. Holds the `2N` powers of
/// `zeta = exp(i*pi/N)` and the powers of 5 modulo `2N`.
#[derive(Debug, Clone)]
pub struct Encoder {
    log_n: u32,
    n: usize,
    /// `roots[e] = zeta^e`, `e = 0..2N`.
    roots: Vec<Complex64>,
    /// `pow5[j] = 5^j mod 2N`, `j = 0..N/2`.
    pow5: Vec<usize>,
}

impl Encoder {
    /// The encoder for `N = 2^log_n`, `log_n` in `[1, 17]` (otherwise
    /// [`Error::InvalidRingDegree`]).
    pub fn new(log_n: u32) -> Result<Self> {
        if !(MIN_LOG_N..=MAX_LOG_N).contains(&log_n) {
            return Err(Error::InvalidRingDegree {
                n: 1u64.checked_shl(log_n).unwrap_or(0),
                min_log: MIN_LOG_N,
                max_log: MAX_LOG_N,
            });
        }
        let n = 1usize << log_n;
        let two_n = 2 * n;
        let quarter = n / 2;
        // First quarter turn computed directly, the rest by multiplying with i, -1, -i (exact).
        let mut roots = vec![Complex64::new(0.0, 0.0); two_n];
        for e in 0..quarter {
            let angle = std::f64::consts::PI * (e as f64) / (n as f64);
            let (s, c) = angle.sin_cos();
            let z = Complex64::new(c, s);
            roots[e] = z;
            roots[e + quarter] = Complex64::new(-s, c);
            roots[e + 2 * quarter] = Complex64::new(-c, -s);
            roots[e + 3 * quarter] = Complex64::new(s, -c);
        }
        let mut pow5 = Vec::with_capacity(n / 2);
        let mut g = 1usize;
        for _ in 0..n / 2 {
            pow5.push(g);
            g = g * 5 % two_n;
        }
        Ok(Self { log_n, n, roots, pow5 })
    }

    /// The ring degree `N`.
    #[must_use]
    pub fn n(&self) -> usize {
        self.n
    }

    /// log2 of the ring degree.
    #[must_use]
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// The number of slots of full packing, `N/2`.
    #[must_use]
    pub fn max_slots(&self) -> usize {
        self.n / 2
    }

    /// Checks `slots` and returns the gap `N/(2 slots)`.
    fn gap(&self, slots: usize) -> Result<usize> {
        if slots == 0 || !slots.is_power_of_two() || slots > self.n / 2 {
            return Err(Error::SlotCount { slots, min: 1, max: self.n / 2 });
        }
        Ok(self.n / (2 * slots))
    }

    /// `t_j = ((5^j mod 4n) - 1) / 4`, the DFT index of slot `j`, for `j = 0..n`.
    fn slot_index(&self, j: usize, slots: usize) -> usize {
        (self.pow5[j] & (4 * slots - 1)) >> 2
    }

    /// Encodes `values` into `N` integer coefficients.
    ///
    /// Slot `j` receives `values[j]`; slots past `values.len()` receive 0. The result is the
    /// polynomial `m` (limb-free, `N` coefficients, coefficient `k` at index `k`) with
    /// `m(zeta^(5^j mod 2N)) ~ scale * values[j]`, each coefficient being `scale * m_k`
    /// rounded to the nearest integer, ties away from zero. Only coefficients at multiples of
    /// `gap = N/(2 slots)` can be non-zero; every coefficient has magnitude below `2^126`.
    ///
    /// Errors:
    /// * `slots` not a power of two in `[1, N/2]`: [`Error::SlotCount`];
    /// * more values than slots: [`Error::TooManyValues`];
    /// * `scale` not finite or not `> 0`: [`Error::InvalidScale`];
    /// * a non-finite value: [`Error::EncodingOverflow`] with its index (and `value_log2`
    ///   infinite or NaN);
    /// * a scaled coefficient of magnitude `>= 2^126` (or non-finite after the transform):
    ///   [`Error::EncodingOverflow`] with the coefficient index, `value_log2 = log2|scale m_k|`
    ///   and `limit_log2 = 126`. The caller checks the tighter bound of its modulus with
    ///   [`max_abs_log2`].
    pub fn encode(&self, values: &[Complex64], scale: f64, slots: usize) -> Result<Vec<i128>> {
        let gap = self.gap(slots)?;
        if values.len() > slots {
            return Err(Error::TooManyValues { given: values.len(), slots });
        }
        check_scale(scale)?;
        if let Some((index, v)) = values.iter().enumerate().find(|(_, v)| !(v.re.is_finite() && v.im.is_finite())) {
            return Err(Error::EncodingOverflow {
                index,
                value_log2: (v.norm() * scale).log2(),
                limit_log2: f64::from(COEFF_LIMIT_LOG2),
            });
        }

        let mut buf = vec![Complex64::new(0.0, 0.0); slots];
        for (j, &z) in values.iter().enumerate() {
            buf[self.slot_index(j, slots)] = z;
        }
        self.fft(&mut buf, true);

        let half = self.n / 2;
        let two_n_mask = 2 * self.n - 1;
        // 1/n (inverse DFT) and the scale in one factor; slots is a power of two, so the
        // division is exact.
        let factor = scale / (slots as f64);
        let limit = 2f64.powi(COEFF_LIMIT_LOG2);
        let mut coeffs = vec![0i128; self.n];
        for (k, &v) in buf.iter().enumerate() {
            let e = (gap * k) & two_n_mask;
            let u = v * self.roots[e].conj();
            for (index, x) in [(gap * k, u.re), (gap * k + half, u.im)] {
                let y = (x * factor).round();
                if y.is_nan() || y.abs() >= limit {
                    return Err(Error::EncodingOverflow {
                        index,
                        value_log2: y.abs().log2(),
                        limit_log2: f64::from(COEFF_LIMIT_LOG2),
                    });
                }
                // Exact: y is an integer of magnitude below 2^126.
                coeffs[index] = y as i128;
            }
        }
        Ok(coeffs)
    }

    /// [`Encoder::encode`] of real values (imaginary parts 0). The resulting polynomial is
    /// invariant under `X -> X^(2N-1)` up to rounding: `c[N-k] = -c[k]`, `c[N/2] = 0`.
    pub fn encode_real(&self, values: &[f64], scale: f64, slots: usize) -> Result<Vec<i128>> {
        let complex: Vec<Complex64> = values.iter().map(|&x| Complex64::new(x, 0.0)).collect();
        self.encode(&complex, scale, slots)
    }

    /// Decodes `N` real coefficients (the raw integers of the plaintext polynomial, centred,
    /// as `f64`, coefficient `k` at index `k`) at `scale` into `slots` complex values:
    /// slot `j` is `m(zeta^(5^j mod 2N)) / scale` computed from the coefficients at multiples
    /// of `gap = N/(2 slots)` only (the others are ignored). Non-finite coefficients
    /// propagate to the slots.
    ///
    /// Errors: `coeffs.len() != N`: [`Error::DimensionMismatch`]; `slots` not a power of two
    /// in `[1, N/2]`: [`Error::SlotCount`]; `scale` not finite or not `> 0`:
    /// [`Error::InvalidScale`].
    pub fn decode(&self, coeffs: &[f64], scale: f64, slots: usize) -> Result<Vec<Complex64>> {
        let gap = self.gap(slots)?;
        if coeffs.len() != self.n {
            return Err(Error::DimensionMismatch {
                what: "CKKS plaintext coefficients",
                expected: self.n,
                found: coeffs.len(),
            });
        }
        check_scale(scale)?;
        let half = self.n / 2;
        let two_n_mask = 2 * self.n - 1;
        let mut buf: Vec<Complex64> = (0..slots)
            .map(|k| {
                let u = Complex64::new(coeffs[gap * k] / scale, coeffs[gap * k + half] / scale);
                u * self.roots[(gap * k) & two_n_mask]
            })
            .collect();
        self.fft(&mut buf, false);
        Ok((0..slots).map(|j| buf[self.slot_index(j, slots)]).collect())
    }

    /// In-place radix-2 DFT of a power-of-two length `len <= N/2`, natural order in and out:
    /// `a[t] <- sum_k a[k] w^(t k)` with `w = exp(+2 pi i / len)`, or `exp(-2 pi i / len)`
    /// when `inverse` (no normalisation either way).
    fn fft(&self, a: &mut [Complex64], inverse: bool) {
        let len = a.len();
        if len < 2 {
            return;
        }
        let log = len.trailing_zeros();
        for i in 0..len {
            let r = i.reverse_bits() >> (usize::BITS - log);
            if i < r {
                a.swap(i, r);
            }
        }
        let two_n = 2 * self.n;
        let mut size = 2;
        while size <= len {
            let step = two_n / size;
            let h = size / 2;
            for chunk in a.chunks_exact_mut(size) {
                let (lo, hi) = chunk.split_at_mut(h);
                for (j, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                    let w = self.roots[j * step];
                    let w = if inverse { w.conj() } else { w };
                    let t = *y * w;
                    let u = *x;
                    *x = u + t;
                    *y = u - t;
                }
            }
            size <<= 1;
        }
    }
}

/// `log2` of the largest coefficient magnitude (`-inf` for the zero polynomial), for the
/// caller's check against its modulus: coefficients of magnitude `< 2^b` fit a modulus
/// `Q > 2^(b+1)` in centred representation.
#[must_use]
pub fn max_abs_log2(coeffs: &[i128]) -> f64 {
    let max = coeffs.iter().map(|c| c.unsigned_abs()).max().unwrap_or(0);
    if max == 0 {
        f64::NEG_INFINITY
    } else {
        (max as f64).log2()
    }
}

fn check_scale(scale: f64) -> Result<()> {
    if !scale.is_finite() {
        return Err(Error::InvalidScale { reason: "scale is not finite" });
    }
    if scale <= 0.0 {
        return Err(Error::InvalidScale { reason: "scale is not positive" });
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// `zeta^e` for `zeta = exp(i pi / N)`, from the exponent reduced exactly mod 2N.
    fn zeta_pow(e: u64, n: usize) -> Complex64 {
        let e = e % (2 * n as u64);
        Complex64::from_polar(1.0, std::f64::consts::PI * (e as f64) / (n as f64))
    }

    /// `5^j mod m` by repeated multiplication.
    fn pow5_mod(j: usize, m: u64) -> u64 {
        let mut g = 1u64;
        for _ in 0..j {
            g = g * 5 % m;
        }
        g
    }

    /// Direct O(N^2) evaluation of the full polynomial at `zeta^e`.
    fn eval_full(coeffs: &[f64], e: u64) -> Complex64 {
        let n = coeffs.len();
        coeffs.iter().enumerate().map(|(k, &c)| zeta_pow(e * k as u64, n) * c).sum()
    }

    /// The sparse definition: `m'(zeta_Y^(5^j mod 4 slots))`, `m'_k = m_(gap k)`,
    /// `zeta_Y = zeta^gap`.
    fn eval_sparse(coeffs: &[f64], slots: usize, j: usize) -> Complex64 {
        let n = coeffs.len();
        let gap = n / (2 * slots);
        let g = pow5_mod(j, 4 * slots as u64);
        (0..2 * slots).map(|k| zeta_pow(gap as u64 * ((g * k as u64) % (4 * slots as u64)), n) * coeffs[gap * k]).sum()
    }

    /// Direct inverse: `m'_k = (1/slots) Re sum_j z_j zeta_Y^(-g_j k)` for `k < 2 slots`, i.e.
    /// the unique real polynomial of the subring with these values at the `5^j` roots (and
    /// their conjugates at the `-5^j` roots). Returns the `N` unrounded, scaled coefficients.
    fn direct_encode(values: &[Complex64], scale: f64, n: usize, slots: usize) -> Vec<f64> {
        let gap = n / (2 * slots);
        let four_s = 4 * slots as u64;
        let mut out = vec![0.0; n];
        for k in 0..2 * slots {
            let mut acc = Complex64::new(0.0, 0.0);
            for (j, z) in values.iter().enumerate() {
                let g = pow5_mod(j, four_s);
                let e = (four_s - (g * k as u64) % four_s) % four_s;
                acc += z * zeta_pow(gap as u64 * e, n);
            }
            out[gap * k] = acc.re / (slots as f64) * scale;
        }
        out
    }

    fn random_values(rng: &mut ChaCha8Rng, count: usize) -> Vec<Complex64> {
        (0..count).map(|_| Complex64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0))).collect()
    }

    /// `X -> X^g` on negacyclic coefficients.
    fn automorphism(coeffs: &[i128], g: usize) -> Vec<i128> {
        let n = coeffs.len();
        let mut out = vec![0i128; n];
        for (k, &c) in coeffs.iter().enumerate() {
            let e = (k * g) % (2 * n);
            if e < n {
                out[e] += c;
            } else {
                out[e - n] -= c;
            }
        }
        out
    }

    fn to_f64(c: &[i128]) -> Vec<f64> {
        c.iter().map(|&x| x as f64).collect()
    }

    fn max_dist(a: &[Complex64], b: &[Complex64]) -> f64 {
        assert_eq!(a.len(), b.len());
        a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
    }

    fn slot_counts(log_n: u32) -> Vec<usize> {
        (0..log_n).map(|i| 1usize << i).collect()
    }

    #[test]
    fn ring_degree_range() {
        for bad in [0, 18, 64, 200] {
            assert!(matches!(Encoder::new(bad), Err(Error::InvalidRingDegree { min_log: 1, max_log: 17, .. })));
        }
        let e = Encoder::new(5).unwrap();
        assert_eq!((e.n(), e.max_slots(), e.log_n()), (32, 16, 5));
        assert_eq!(Encoder::new(1).unwrap().max_slots(), 1);
    }

    #[test]
    fn roots_table_matches_direct_powers() {
        let e = Encoder::new(6).unwrap();
        for (k, r) in e.roots.iter().enumerate() {
            assert!((r - zeta_pow(k as u64, 64)).norm() < 1e-15, "k = {k}");
        }
    }

    #[test]
    fn encode_matches_direct_inverse() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let scale = 2f64.powi(24);
        for log_n in [1u32, 2, 3, 5, 8] {
            let enc = Encoder::new(log_n).unwrap();
            let n = enc.n();
            for slots in slot_counts(log_n) {
                for count in [slots, slots.div_ceil(2)] {
                    let values = random_values(&mut rng, count);
                    let got = enc.encode(&values, scale, slots).unwrap();
                    let want = direct_encode(&values, scale, n, slots);
                    let gap = n / (2 * slots);
                    for k in 0..n {
                        if k % gap != 0 {
                            assert_eq!(got[k], 0, "off-grid coefficient {k}");
                        }
                        // Rounding of nearly equal reals: never more than one apart.
                        let d = (got[k] as f64 - want[k].round()).abs();
                        assert!(d <= 1.0, "log_n {log_n} slots {slots} k {k}: {d}");
                        assert!((got[k] as f64 - want[k]).abs() <= 0.5 + 1e-6);
                    }
                }
            }
        }
    }

    #[test]
    fn decode_matches_direct_evaluation() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let scale = 2f64.powi(20);
        for log_n in [1u32, 2, 4, 6, 9] {
            let enc = Encoder::new(log_n).unwrap();
            let n = enc.n();
            for slots in slot_counts(log_n) {
                // Random coefficients everywhere: decoding must ignore the off-grid ones.
                let coeffs: Vec<f64> = (0..n).map(|_| rng.random_range(-(1i64 << 20)..=(1i64 << 20)) as f64).collect();
                let got = enc.decode(&coeffs, scale, slots).unwrap();
                let want: Vec<Complex64> = (0..slots).map(|j| eval_sparse(&coeffs, slots, j) / scale).collect();
                let err = max_dist(&got, &want);
                assert!(err < 1e-9, "log_n {log_n} slots {slots}: {err}");

                // On the subring the sparse definition is the full evaluation at 5^j mod 2N.
                let gap = n / (2 * slots);
                let grid: Vec<f64> =
                    coeffs.iter().enumerate().map(|(k, &c)| if k % gap == 0 { c } else { 0.0 }).collect();
                let want_full: Vec<Complex64> =
                    (0..slots).map(|j| eval_full(&grid, pow5_mod(j, 2 * n as u64)) / scale).collect();
                let err = max_dist(&got, &want_full);
                assert!(err < 1e-9, "full, log_n {log_n} slots {slots}: {err}");
            }
        }
    }

    #[test]
    fn encoded_polynomial_takes_the_values_at_the_roots() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let scale = 2f64.powi(40);
        for log_n in [3u32, 7] {
            let enc = Encoder::new(log_n).unwrap();
            let n = enc.n();
            for slots in slot_counts(log_n) {
                let values = random_values(&mut rng, slots);
                let c = to_f64(&enc.encode(&values, scale, slots).unwrap());
                for (j, z) in values.iter().enumerate() {
                    let full = eval_full(&c, pow5_mod(j, 2 * n as u64)) / scale;
                    let sparse = eval_sparse(&c, slots, j) / scale;
                    // Rounding error at most N/2 * 0.5 / scale per slot.
                    assert!((full - z).norm() < 1e-9, "full, slots {slots} j {j}");
                    assert!((sparse - z).norm() < 1e-9, "sparse, slots {slots} j {j}");
                    // The conjugate root carries the conjugate value.
                    let conj = eval_full(&c, 2 * n as u64 - pow5_mod(j, 2 * n as u64)) / scale;
                    assert!((conj - z.conj()).norm() < 1e-9);
                }
            }
        }
    }

    #[test]
    fn round_trip_error_bound() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for log_n in 10u32..=14 {
            let enc = Encoder::new(log_n).unwrap();
            for log_scale in [30i32, 40] {
                let scale = 2f64.powi(log_scale);
                // Per slot: at most 2 slots coefficients, each rounded by <= 1/2.
                let bound = 2f64.powi(-(log_scale - log_n as i32));
                for slots in [enc.max_slots(), enc.max_slots() / 8, 4] {
                    let values = random_values(&mut rng, slots);
                    let c = enc.encode(&values, scale, slots).unwrap();
                    let back = enc.decode(&to_f64(&c), scale, slots).unwrap();
                    let err = max_dist(&back, &values);
                    assert!(err < bound, "log_n {log_n} 2^{log_scale} slots {slots}: {err}");
                    // The error is rounding noise, not zero and not systematic.
                    assert!(err > 0.0);
                }
            }
        }
    }

    #[test]
    fn real_values_give_conjugation_invariant_polynomials() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let enc = Encoder::new(10).unwrap();
        let n = enc.n();
        let scale = 2f64.powi(35);
        for slots in [enc.max_slots(), 64, 1] {
            let values: Vec<f64> = (0..slots).map(|_| rng.random_range(-1.0..1.0)).collect();
            let c = enc.encode_real(&values, scale, slots).unwrap();
            assert!(c[n / 2].abs() <= 1);
            for k in 1..n {
                assert!((c[k] + c[n - k]).abs() <= 1, "k = {k}");
            }
            let back = enc.decode(&to_f64(&c), scale, slots).unwrap();
            for (b, v) in back.iter().zip(&values) {
                assert!(b.im.abs() < 1e-8 && (b.re - v).abs() < 1e-8);
            }
        }
    }

    #[test]
    fn automorphisms_rotate_and_conjugate() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let scale = 2f64.powi(40);
        for log_n in [4u32, 10] {
            let enc = Encoder::new(log_n).unwrap();
            let n = enc.n();
            for slots in [enc.max_slots(), enc.max_slots() / 4, 2] {
                let values = random_values(&mut rng, slots);
                let c = enc.encode(&values, scale, slots).unwrap();
                for k in [1usize, 2, 3, slots - 1] {
                    let g = pow5_mod(k, 2 * n as u64) as usize;
                    let rotated = automorphism(&c, g);
                    let got = enc.decode(&to_f64(&rotated), scale, slots).unwrap();
                    let want: Vec<Complex64> = (0..slots).map(|j| values[(j + k) % slots]).collect();
                    let err = max_dist(&got, &want);
                    assert!(err < 1e-8, "log_n {log_n} slots {slots} k {k}: {err}");
                }
                let conj = automorphism(&c, 2 * n - 1);
                let got = enc.decode(&to_f64(&conj), scale, slots).unwrap();
                let want: Vec<Complex64> = values.iter().map(|z| z.conj()).collect();
                assert!(max_dist(&got, &want) < 1e-8);
            }
        }
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        // One slot: m = Re z + Im z X^(N/2), computed exactly.
        let enc = Encoder::new(4).unwrap();
        let c = enc.encode(&[Complex64::new(2.5, -0.5)], 1.0, 1).unwrap();
        assert_eq!((c[0], c[8]), (3, -1));
        let c = enc.encode(&[Complex64::new(-2.5, 1.5)], 1.0, 1).unwrap();
        assert_eq!((c[0], c[8]), (-3, 2));
        let c = enc.encode(&[Complex64::new(0.25, 0.375)], 4.0, 1).unwrap();
        assert_eq!((c[0], c[8]), (1, 2));
        assert!(c.iter().enumerate().all(|(k, &x)| x == 0 || k == 0 || k == 8));
    }

    #[test]
    fn missing_values_are_zero() {
        let enc = Encoder::new(6).unwrap();
        let vals = [Complex64::new(0.5, 0.25), Complex64::new(-0.75, 0.0)];
        let c = enc.encode(&vals, 2f64.powi(30), 16).unwrap();
        let back = enc.decode(&to_f64(&c), 2f64.powi(30), 16).unwrap();
        assert!(max_dist(&back[..2], &vals) < 1e-7);
        assert!(back[2..].iter().all(|z| z.norm() < 1e-7));
        assert_eq!(enc.encode(&[], 2f64.powi(30), 16).unwrap(), vec![0; 64]);
    }

    #[test]
    fn max_abs_log2_of_coefficients() {
        assert_eq!(max_abs_log2(&[0, 0]), f64::NEG_INFINITY);
        assert_eq!(max_abs_log2(&[3, -1024, 7]), 10.0);
        assert_eq!(max_abs_log2(&[i128::MIN]), 127.0);
    }

    #[test]
    fn error_cases() {
        let enc = Encoder::new(5).unwrap();
        let one = [Complex64::new(0.5, 0.0)];
        for slots in [0usize, 3, 12, 32, 64] {
            let want = Error::SlotCount { slots, min: 1, max: 16 };
            assert_eq!(enc.encode(&one, 1e6, slots).err(), Some(want.clone()));
            assert_eq!(enc.decode(&[0.0; 32], 1e6, slots).err(), Some(want));
        }
        assert!(matches!(
            enc.encode(&[Complex64::new(0.0, 0.0); 5], 1e6, 4),
            Err(Error::TooManyValues { given: 5, slots: 4 })
        ));
        assert!(matches!(enc.encode_real(&[0.0; 17], 1e6, 16), Err(Error::TooManyValues { given: 17, slots: 16 })));
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(enc.encode(&one, scale, 16), Err(Error::InvalidScale { .. })));
            assert!(matches!(enc.decode(&[0.0; 32], scale, 16), Err(Error::InvalidScale { .. })));
        }
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            // The message names the value as NaN or infinite, never as a power of two.
            let msg = enc.encode_real(&[bad], 1e6, 16).unwrap_err().to_string();
            assert!(!msg.contains("2^") && (msg.contains("NaN") || msg.contains("infinite")), "{msg}");
            assert!(matches!(
                enc.encode(&[Complex64::new(0.0, 0.0), Complex64::new(0.0, bad)], 1e6, 16),
                Err(Error::EncodingOverflow { index: 1, .. })
            ));
            assert!(matches!(
                enc.encode_real(&[0.0, 0.0, bad], 1e6, 16),
                Err(Error::EncodingOverflow { index: 2, .. })
            ));
        }
        // One slot: coefficient 0 is scale * value exactly. 2^100 * 2^27 = 2^127 >= 2^126.
        match enc.encode_real(&[2f64.powi(27)], 2f64.powi(100), 1) {
            Err(Error::EncodingOverflow { index, value_log2, limit_log2 }) => {
                assert_eq!(index, 0);
                assert_eq!(value_log2, 127.0);
                assert_eq!(limit_log2, 126.0);
            }
            other => panic!("{other:?}"),
        }
        // Just below the limit is fine and exact; the imaginary part lands at N/2.
        let c = enc.encode(&[Complex64::new(-1.0, 2f64.powi(25))], 2f64.powi(100), 1).unwrap();
        assert_eq!((c[0], c[16]), (-(1i128 << 100), 1i128 << 125));
        match enc.encode(&[Complex64::new(0.0, -(2f64.powi(26)))], 2f64.powi(100), 1) {
            Err(Error::EncodingOverflow { index, .. }) => assert_eq!(index, 16),
            other => panic!("{other:?}"),
        }
        // Finite but huge values overflow inside the transform.
        assert!(matches!(enc.encode_real(&[1e300, -1e300, 1e300], 1e300, 16), Err(Error::EncodingOverflow { .. })));
        assert!(matches!(
            enc.decode(&[0.0; 31], 1e6, 16),
            Err(Error::DimensionMismatch { expected: 32, found: 31, .. })
        ));
    }
}
