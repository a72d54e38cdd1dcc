//! ModRaise, the first step of CKKS bootstrapping.
//!
//! A ciphertext at a low level `l` (basis `q_0..q_l`, `Q_0` their product) decrypts to
//! `c_0 + c_1 s = m mod Q_0`. Reading the centred representatives of `c_0` and `c_1` mod `Q_0`
//! as integers and reducing them mod every prime of the top basis gives a top-level ciphertext
//! that decrypts to `m + Q_0 I` over the whole chain, for a small integer polynomial `I` (see
//! [`super::evalmod`] for its distribution and [`super::evalmod::failure_probability`]); the
//! scale is kept, so the slots then hold `(m + Q_0 I) / scale`.
//!
//! The per-coefficient CRT lift runs on the host: both polynomials are brought to the
//! coefficient domain on the backend, downloaded, lifted (an exact `u128` CRT while `Q_0 < 2^127`,
//! big integers beyond; coefficients in parallel on the rayon pool), uploaded and transformed
//! back. No backend kernel is involved beyond the NTTs, so the CPU and GPU backends give the
//! same words.

use num_traits::ToPrimitive;
use rayon::prelude::*;

use super::{Ciphertext, Ckks};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::rns::RnsBasis;
use crate::poly::{Coeff, Eval, RnsPoly};
use crate::rlwe::CiphertextCore;

impl<B: Backend> Ckks<B> {
    /// The ciphertext lifted from its level to the top level, with `Q_0` the product of the
    /// primes of its basis (see the module docs). Errors: [`Error::CiphertextDegree`] for a
    /// degree-2 ciphertext, [`Error::LevelOutOfRange`] if it is already at the top level, and
    /// the errors of the transfers.
    pub fn mod_raise(&self, ct: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let (c0, c1) = ct.core.degree_one()?;
        let top = self.max_level();
        if ct.level() >= top {
            return Err(Error::LevelOutOfRange { level: ct.level() + 1, max: top });
        }
        let lifter = Lifter::new(self, ct.level(), top)?;
        let polys = vec![lifter.lift(c0)?, lifter.lift(c1)?];
        self.backend().flush()?;
        Ok(ct.with(CiphertextCore::from_parts(polys, None, ct.core.param_id())?, ct.scale))
    }
}

/// The CRT lift from `q_0..q_low` to `q_0..q_top`.
struct Lifter<'a, B: Backend> {
    ckks: &'a Ckks<B>,
    low: RnsBasis,
    top: RnsBasis,
    top_basis: crate::ring::Basis,
    /// `Q_0` and `Q_0 / q_i` when `Q_0 < 2^127`.
    small: Option<(u128, Vec<u128>)>,
    /// `2^64 mod p` for every top prime `p`.
    two64: Vec<u64>,
}

impl<'a, B: Backend> Lifter<'a, B> {
    fn new(ckks: &'a Ckks<B>, low: usize, top: usize) -> Result<Self> {
        let ctx = ckks.backend.context();
        let low = RnsBasis::new(&ctx.moduli_of(&ctx.q_basis(low)?)?)?;
        let top_basis = ctx.q_basis(top)?;
        let top = RnsBasis::new(&ctx.moduli_of(&top_basis)?)?;
        let small = match low.product().to_u128() {
            Some(q0) if q0 < (1u128 << 127) => {
                Some((q0, low.moduli().iter().map(|m| q0 / u128::from(m.value())).collect()))
            }
            _ => None,
        };
        let two64 = top.moduli().iter().map(|m| ((1u128 << 64) % u128::from(m.value())) as u64).collect();
        Ok(Self { ckks, low, top, top_basis, small, two64 })
    }

    /// The centred value of one coefficient's residues mod `Q_0`, reduced mod every top prime.
    fn lift_column(&self, column: &[u32], out: &mut Vec<u32>) -> Result<()> {
        if let Some((q0, qhat)) = &self.small {
            let mut acc: u128 = 0;
            for (((m, &x), &inv), &h) in self.low.moduli().iter().zip(column).zip(self.low.qhat_inv()).zip(qhat) {
                if x >= m.value() {
                    return Err(Error::ResidueOutOfRange { limb: 0, index: 0 });
                }
                // Each term is below Q_0 < 2^127, so the sum of two fits.
                acc += u128::from(m.mul(x, inv)) * h;
                if acc >= *q0 {
                    acc -= q0;
                }
            }
            // The centred value is -(Q_0 - acc) above Q_0 / 2: reduce its magnitude (as two
            // 64-bit halves) and negate.
            let (magnitude, negative) = if acc > q0 - acc { (q0 - acc, true) } else { (acc, false) };
            let (hi, lo) = ((magnitude >> 64) as u64, magnitude as u64);
            out.extend(self.top.moduli().iter().zip(&self.two64).map(|(m, &two64)| {
                let q = u64::from(m.value());
                let r = ((hi % q) * two64 + lo % q) % q;
                if negative && r != 0 {
                    (q - r) as u32
                } else {
                    r as u32
                }
            }));
        } else {
            let centred = self.low.reconstruct_centered(column)?;
            out.extend(self.top.decompose_signed(&centred));
        }
        Ok(())
    }

    fn lift(&self, poly: &RnsPoly<B, Eval>) -> Result<RnsPoly<B, Eval>> {
        let be = self.ckks.backend();
        let n = be.context().n();
        let host = poly.duplicate(be)?.into_coeff(be)?.to_host(be)?;
        let low = self.low.len();
        if host.len() != low * n {
            return Err(Error::DimensionMismatch {
                what: "ModRaise input residues",
                expected: low * n,
                found: host.len(),
            });
        }
        // Coefficient-major first (one column per coefficient, chunks of coefficients in
        // parallel), then transposed to limb-major (one limb per task): the same words as one
        // coefficient after another.
        let limbs = self.top.len();
        let mut columns = vec![0u32; limbs * n];
        columns.par_chunks_mut(LIFT_CHUNK * limbs).enumerate().try_for_each(|(chunk, out)| -> Result<()> {
            let mut column = vec![0u32; low];
            let mut lifted = Vec::with_capacity(limbs);
            for (k, dst) in out.chunks_exact_mut(limbs).enumerate() {
                let j = chunk * LIFT_CHUNK + k;
                for (i, x) in column.iter_mut().enumerate() {
                    *x = host.get(i * n + j).copied().ok_or(Error::SizeOverflow { what: "ModRaise column" })?;
                }
                lifted.clear();
                self.lift_column(&column, &mut lifted)?;
                if lifted.len() != dst.len() {
                    return Err(Error::DimensionMismatch {
                        what: "lifted residues",
                        expected: dst.len(),
                        found: lifted.len(),
                    });
                }
                dst.copy_from_slice(&lifted);
            }
            Ok(())
        })?;
        let mut residues = vec![0u32; limbs * n];
        residues.par_chunks_mut(n).enumerate().for_each(|(limb, row)| {
            for (j, r) in row.iter_mut().enumerate() {
                if let Some(&v) = columns.get(j * limbs + limb) {
                    *r = v;
                }
            }
        });
        RnsPoly::<B, Coeff>::from_host(be, &residues, self.top_basis.clone())?.into_eval(be)
    }
}

/// Coefficients a ModRaise task lifts.
const LIFT_CHUNK: usize = 1024;

#[cfg(test)]
mod tests {
    use num_bigint::BigInt;
    use num_complex::Complex64;
    use num_traits::{Signed, ToPrimitive, Zero};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::backend::CpuBackend;
    use crate::ckks::evalmod::failure_probability;
    use crate::ckks::ScalePolicy;
    use crate::math::rns::for_each_coefficient;
    use crate::params::{self, TestRing};
    use crate::rlwe::KeyRequest;
    use crate::rlwe::SecretKey;

    /// `c_0 + c_1 s` of every coefficient, centred over the ciphertext's whole basis.
    fn exact_decrypt(ckks: &Ckks<CpuBackend>, sk: &SecretKey<CpuBackend>, ct: &Ciphertext<CpuBackend>) -> Vec<BigInt> {
        let be = ckks.backend();
        let ctx = be.context();
        let v = ct.core.decrypt_to_host(be, sk).unwrap();
        let basis = RnsBasis::new(&ctx.moduli_of(&ctx.q_basis(ct.level()).unwrap()).unwrap()).unwrap();
        let mut out = Vec::new();
        for_each_coefficient(&v, ct.level() + 1, ctx.n(), |column| {
            out.push(basis.reconstruct_centered(column)?);
            Ok(())
        })
        .unwrap();
        out
    }

    #[test]
    fn raised_ciphertexts_decrypt_to_m_plus_q0_times_a_small_integer() {
        let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 9, p_primes: 3, dnum: 3 }, 30).unwrap();
        let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
        let n = ckks.params().n();
        let mut worst_ratio = 0.0_f64;
        for seed in 1..=3u8 {
            let sk = ckks.gen_secret_key_from_seed(&[seed; 32]).unwrap();
            let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
            let h = sk.coefficients().iter().filter(|&&c| c != 0).count();
            // K with a failure probability below 2^-20 for the N coefficients.
            let k = (1..).find(|&k| failure_probability(n, h, k).unwrap() < 2f64.powi(-20)).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(u64::from(seed));
            let values: Vec<Complex64> = (0..n / 2).map(|_| Complex64::new(rng.random_range(-1.0..1.0), 0.0)).collect();
            // Fresh at level 2 (Q_0 of 3 primes, the u128 path), fresh at level 4 (5 primes,
            // 150 bits: the big-integer path), and a product rescaled down to level 2.
            let fresh2 = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, 2f64.powi(55), n / 2, 2).unwrap()).unwrap();
            let fresh4 = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, 2f64.powi(55), n / 2, 4).unwrap()).unwrap();
            let x =
                ckks.encrypt_symmetric(&sk, &ckks.encode(&values, ckks.default_scale(), n / 2, 6).unwrap()).unwrap();
            let sq = ckks.rescale(&ckks.mul_relin(&x, &x, &keys).unwrap()).unwrap();
            let product = ckks.rescale(&ckks.mul_relin(&sq, &sq, &keys).unwrap()).unwrap();
            assert_eq!(product.level(), 2);
            for ct in [&fresh2, &fresh4, &product] {
                let raised = ckks.mod_raise(ct).unwrap();
                assert_eq!(
                    (raised.level(), raised.scale(), raised.slots()),
                    (ckks.max_level(), ct.scale(), ct.slots())
                );
                let ctx = ckks.backend().context();
                let q0: BigInt = ctx
                    .moduli_of(&ctx.q_basis(ct.level()).unwrap())
                    .unwrap()
                    .iter()
                    .map(|m| BigInt::from(m.value()))
                    .product();
                let low = exact_decrypt(&ckks, &sk, ct);
                let high = exact_decrypt(&ckks, &sk, &raised);
                let mut max_i = 0i64;
                let mut sum_sq = 0.0;
                for (t, m) in high.iter().zip(&low) {
                    let diff = t - m;
                    assert!((&diff % &q0).is_zero(), "not a multiple of Q_0");
                    let i = (diff / &q0).to_i64().unwrap();
                    max_i = max_i.max(i.abs());
                    sum_sq += (i * i) as f64;
                    assert!(m.abs() < &q0 / 1024, "the message is small next to Q_0");
                }
                // The Irwin-Hall model: |I| <= K with probability 1 - 2^-20, and the spread of I
                // that of a sum of h + 1 (or h, for a fresh encryption) uniforms.
                assert!(max_i <= i64::from(k), "seed {seed}: |I| = {max_i} > K = {k} (h = {h})");
                let std = (sum_sq / n as f64).sqrt();
                let model = ((h + 1) as f64 / 12.0).sqrt();
                worst_ratio = worst_ratio.max((std / model - 1.0).abs());
                assert!((std / model - 1.0).abs() < 0.15, "std of I {std} vs model {model}");
                eprintln!(
                    "seed {seed}, level {}: h = {h}, max |I| = {max_i} (K = {k}), std {std:.2} (model {model:.2})",
                    ct.level()
                );
            }
            // A degree-2 ciphertext and a top-level one are refused.
            let tensor = ckks.mul(&fresh4, &fresh4).unwrap();
            assert!(matches!(ckks.mod_raise(&tensor), Err(Error::CiphertextDegree { .. })));
            let top = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&[0.5]).unwrap()).unwrap();
            assert!(matches!(ckks.mod_raise(&top), Err(Error::LevelOutOfRange { .. })));
        }
        assert!(worst_ratio < 0.15);
    }

    /// The parallel lift (chunks of [`LIFT_CHUNK`] coefficients, then a transpose per limb)
    /// gives, word for word, the coefficient-by-coefficient lift, over several chunks.
    #[test]
    fn the_parallel_lift_is_the_sequential_one() {
        let p = params::insecure_test_ckks(TestRing { log_n: 12, q_primes: 6, p_primes: 2, dnum: 3 }, 30).unwrap();
        let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
        let be = ckks.backend();
        let n = ckks.params().n();
        assert!(n > 2 * LIFT_CHUNK);
        let sk = ckks.gen_secret_key_from_seed(&[7; 32]).unwrap();
        let ct = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&[0.25, -0.5]).unwrap()).unwrap();
        let ct = ckks.drop_to_level(&ct, 1).unwrap();
        let (c0, _) = ct.core.degree_one().unwrap();
        let lifter = Lifter::new(&ckks, 1, ckks.max_level()).unwrap();
        let got = lifter.lift(c0).unwrap().into_coeff(be).unwrap().to_host(be).unwrap();
        let host = c0.duplicate(be).unwrap().into_coeff(be).unwrap().to_host(be).unwrap();
        let mut columns = Vec::new();
        for_each_coefficient(&host, 2, n, |column| lifter.lift_column(column, &mut columns)).unwrap();
        let limbs = ckks.max_level() + 1;
        for (j, column) in columns.chunks_exact(limbs).enumerate() {
            for (limb, &want) in column.iter().enumerate() {
                assert_eq!(got[limb * n + j], want, "coefficient {j}, limb {limb}");
            }
        }
    }
}
