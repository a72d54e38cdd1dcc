//! CKKS as an [`Evaluator`]: each method is the inherent one of the same name (several
//! rotations: [`Ckks::rotate_hoisted`], one ModUp for all).

use super::{Ciphertext, Ckks, Plaintext};
use crate::backend::Backend;
use crate::error::Result;
use crate::eval::Evaluator;
use crate::rlwe::EvaluationKeys;

impl<B: Backend> Evaluator for Ckks<B> {
    type Ciphertext = Ciphertext<B>;
    type Plaintext = Plaintext;
    type Keys = EvaluationKeys<B>;

    fn add(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Ckks::add(self, a, b)
    }

    fn sub(&self, a: &Ciphertext<B>, b: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Ckks::sub(self, a, b)
    }

    fn neg(&self, a: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        Ckks::neg(self, a)
    }

    fn add_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        Ckks::add_plain(self, ct, pt)
    }

    fn mul_plain(&self, ct: &Ciphertext<B>, pt: &Plaintext) -> Result<Ciphertext<B>> {
        Ckks::mul_plain(self, ct, pt)
    }

    fn mul_relin(&self, a: &Ciphertext<B>, b: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        Ckks::mul_relin(self, a, b, keys)
    }

    fn rotate(&self, ct: &Ciphertext<B>, steps: i64, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        Ckks::rotate(self, ct, steps, keys)
    }

    fn rotate_many(&self, ct: &Ciphertext<B>, steps: &[i64], keys: &EvaluationKeys<B>) -> Result<Vec<Ciphertext<B>>> {
        self.rotate_hoisted(ct, steps, keys)
    }

    fn level(&self, ct: &Ciphertext<B>) -> usize {
        ct.level()
    }

    fn drop_to_level(&self, ct: &Ciphertext<B>, level: usize) -> Result<Ciphertext<B>> {
        Ckks::drop_to_level(self, ct, level)
    }
}
