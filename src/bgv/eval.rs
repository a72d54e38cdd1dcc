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
