//! Baby-step giant-step evaluation of `sum_k D_k * rot_k(x)` over an [`Evaluator`], written
//! once for the CKKS linear transforms ([`crate::ckks::Ckks::linear_transform`]) and the MNIST
//! CNN's layers (several inputs, BGV).
//!
//! With `k = g + b` (a giant step `g` and a baby step `b`) and the diagonals pre-rotated in the
//! clear, `rot_k(x) * D_k = rot_g(rot_b(x) * rot_-g(D_k))`, so
//! `sum_k D_k rot_k(x) = sum_g rot_g(sum_b rot_-g(D_(g+b)) * rot_b(x))`: the inputs are rotated
//! once per baby step ([`BabyRotations`], hoisted where the scheme can), each giant step's inner
//! sum is rotated once, and the giant steps' results are added. The inner sums (plaintext
//! products, and how a scheme accumulates them) are the caller's, since BGV's correction factors
//! and prepared plaintexts and CKKS's fused multiply-adds differ; the rotations and the
//! accumulation are here.

use super::Evaluator;
use crate::error::{Error, Result};

/// The inputs of a baby-step giant-step sum and their rotations by each baby step.
pub struct BabyRotations<'a, C> {
    inputs: &'a [C],
    steps: Vec<i64>,
    /// `rotated[i][s]`: input `i` rotated by `steps[s]`.
    rotated: Vec<Vec<C>>,
}

impl<'a, C> BabyRotations<'a, C> {
    /// Rotates every input by each of the non-zero `steps` ([`Evaluator::rotate_many`] when
    /// `hoisted`, one [`Evaluator::rotate`] per step otherwise: the same words); step 0 is the
    /// input itself. Errors: those of the rotations.
    pub fn new<E: Evaluator<Ciphertext = C>>(
        eval: &E,
        inputs: &'a [C],
        steps: &[i64],
        keys: &E::Keys,
        hoisted: bool,
    ) -> Result<Self> {
        let steps: Vec<i64> = steps.iter().copied().filter(|&s| s != 0).collect();
        let rotated = inputs
            .iter()
            .map(|x| {
                if hoisted {
                    eval.rotate_many(x, &steps, keys)
                } else {
                    steps.iter().map(|&s| eval.rotate(x, s, keys)).collect()
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { inputs, steps, rotated })
    }

    /// Input `input` rotated by `step` (a step given to [`BabyRotations::new`], or 0).
    /// Errors: [`Error::InvalidField`] for an input or a step outside the set.
    pub fn get(&self, input: usize, step: i64) -> Result<&C> {
        let missing = Error::InvalidField { field: "baby step", reason: "an input or a step outside the rotated set" };
        if step == 0 {
            return self.inputs.get(input).ok_or(missing);
        }
        let s = self.steps.iter().position(|&t| t == step).ok_or(missing.clone())?;
        self.rotated.get(input).and_then(|row| row.get(s)).ok_or(missing)
    }

    /// The rotations done: inputs times non-zero baby steps.
    #[must_use]
    pub fn rotations(&self) -> usize {
        self.inputs.len() * self.steps.len()
    }
}

/// The rotations a [`sum`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotations {
    /// Rotations of the inputs by baby steps.
    pub baby: usize,
    /// Rotations of inner sums by non-zero giant steps.
    pub giant: usize,
}

/// `sum_g rot_g(inner(g, terms_g))` over the `giants` (`(g, terms_g)` pairs, in order): each
/// inner sum comes from `inner`, which reads the baby rotations of `babies`; a giant step whose
/// inner sum is `None` (no terms) is skipped; inner sums at different levels are added at the
/// lower ([`Evaluator::add_aligned`]). Returns `None` when every giant step was skipped, with
/// the rotations done. Errors: those of `inner` and of the rotations and additions.
pub fn sum<E, T>(
    eval: &E,
    keys: &E::Keys,
    babies: &BabyRotations<'_, E::Ciphertext>,
    giants: impl IntoIterator<Item = (i64, T)>,
    mut inner: impl FnMut(&BabyRotations<'_, E::Ciphertext>, i64, T) -> Result<Option<E::Ciphertext>>,
) -> Result<(Option<E::Ciphertext>, Rotations)>
where
    E: Evaluator,
{
    let mut rotations = Rotations { baby: babies.rotations(), giant: 0 };
    let mut acc: Option<E::Ciphertext> = None;
    for (giant, terms) in giants {
        let Some(part) = inner(babies, giant, terms)? else { continue };
        let moved = if giant == 0 {
            part
        } else {
            rotations.giant += 1;
            eval.rotate(&part, giant, keys)?
        };
        acc = Some(match acc {
            None => moved,
            Some(a) => eval.add_aligned(&a, &moved)?,
        });
    }
    Ok((acc, rotations))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bgv::{Bgv, KeyRequest};
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
        let babies = BabyRotations::new(&bgv, &inputs, &[1, 0], &keys, true).unwrap();
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
