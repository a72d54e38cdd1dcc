//! BGV as an [`Evaluator`]: each method is the inherent one of the same name (rotation: the
//! column rotation, [`Bgv::rotate_columns`]; level alignment: [`Bgv::mod_switch_to_level`]).

use super::{Bgv, Ciphertext, Plaintext};
use crate::backend::Backend;
use crate::error::Result;
use crate::eval::Evaluator;
use crate::rlwe::EvaluationKeys;

impl<B: Backend> Evaluator for Bgv<B> {
    type Ciphertext = Ciphertext<B>;
    type Plaintext = Plaintext;
    type Keys = EvaluationKeys<B>;

    fn add(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Bgv::add(self, a, b)
    }

    fn sub(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Bgv::sub(self, a, b)
    }

    fn neg(&self, a: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Bgv::neg(self, a)
    }

    fn add_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        Bgv::add_plain(self, ct, pt)
    }

    fn mul_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        Bgv::mul_plain(self, ct, pt)
    }

    fn mul_relin(&self, a: &Ciphertext<B>, b: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        Bgv::mul_relin(self, a, b, keys)
    }

    fn rotate(&self, ct: &Ciphertext<B>, steps: i64, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.rotate_columns(ct, steps, keys)
    }

    fn level(&self, ct: &Ciphertext<B>) -> usize {
        ct.level()
    }

    fn drop_to_level(&self, ct: &Ciphertext<B>, level: usize) -> Result<Ciphertext<B>> {
        self.mod_switch_to_level(ct, level)
    }
}

#[cfg(test)]
mod tests {
    use crate::bgv::{Bgv, KeyRequest};
    use crate::eval::bsgs::{sum, BabyRotations, Hoisting, Rotations};
    use crate::params::{self, TestRing};

    /// `sum_k d_k * rot_k(x)` by baby-step giant-step over BGV (two baby steps, giant steps 0,
    /// 2 and 4, one of them empty) against the slot-wise product computed in the clear.
    #[test]
    fn bsgs_sum_is_the_diagonal_product() {
        let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap();
        let bgv = Bgv::cpu(&p).unwrap();
        let t = 65537u64;
        let sk = bgv.gen_secret_key_from_seed(&[4; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, 2, 4])).unwrap();
        let enc = bgv.encoder();
        let half = enc.slots() / 2;
        // Column rotation by r: slot j of a row takes slot (j + r) mod half of that row.
        let rot = |v: &[u64], r: usize| -> Vec<u64> {
            (0..v.len()).map(|j| v[(j / half) * half + (j % half + r) % half]).collect()
        };
        let x: Vec<u64> = (0..enc.slots() as u64).map(|i| (i * 7 + 3) % 100).collect();
        let diag = |k: usize| -> Vec<u64> { (0..enc.slots() as u64).map(|i| (i + 11 * k as u64) % 50).collect() };
        let ct = bgv.encrypt_symmetric(&sk, &enc.encode(&x).unwrap()).unwrap();
        let inputs = [ct];
        let babies = BabyRotations::new(&bgv, &inputs, &[1, 0], &keys, Hoisting::Hoisted).unwrap();
        assert_eq!(babies.rotations(), 1);
        assert!(babies.get(0, 3).is_err() && babies.get(1, 0).is_err());
        // Offsets k = g + b for g in {0, 2}, b in {0, 1}; giant step 4 has no terms.
        let giants: Vec<(i64, Vec<usize>)> = vec![(0, vec![0, 1]), (2, vec![0, 1]), (4, vec![])];
        let (out, rotations) = sum(&bgv, &keys, &babies, giants.clone(), |babies, g, bs| {
            let mut acc: Option<crate::bgv::Ciphertext<_>> = None;
            for b in bs {
                // rot_-g(d_(g+b)), so that rot_g of the product lines it up with rot_(g+b)(x).
                let d = rot(&diag(g as usize + b), half - g as usize);
                let prod = bgv.mul_plain(babies.get(0, b as i64)?, &enc.encode(&d)?)?;
                acc = Some(match acc {
                    None => prod,
                    Some(a) => bgv.add(&a, &prod)?,
                });
            }
            Ok(acc)
        })
        .unwrap();
        assert_eq!(rotations, Rotations { baby: 1, giant: 1 });
        let got = enc.decode(&bgv.decrypt(&sk, &out.unwrap()).unwrap()).unwrap();
        let want: Vec<u64> = (0..enc.slots())
            .map(|j| [0usize, 1, 2, 3].iter().map(|&k| diag(k)[j] * rot(&x, k)[j]).sum::<u64>() % t)
            .collect();
        assert_eq!(got, want);
        // Every giant step empty: nothing to sum.
        let (none, rotations) =
            sum(&bgv, &keys, &babies, [(2i64, ())], |_, _, ()| Ok(None::<crate::bgv::Ciphertext<_>>)).unwrap();
        assert!(none.is_none() && rotations.giant == 0);
    }
}
