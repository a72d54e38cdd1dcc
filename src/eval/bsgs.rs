//! Baby-step giant-step evaluation of `sum_k D_k * rot_k(x)` over an [`Evaluator`], written
//! once for the CKKS linear transforms ([`crate::ckks::Ckks::linear_transform`]) and the MNIST
//! CNN's layers (several inputs, BGV).
//!
//! With `k = g + b` (a giant step `g` and a baby step `b`) and the diagonals pre-rotated in the
//! clear, `rot_k(x) * D_k = rot_g(rot_b(x) * rot_-g(D_k))`, so
//! `sum_k D_k rot_k(x) = sum_g rot_g(sum_b rot_-g(D_(g+b)) * rot_b(x))`: the inputs are rotated
//! once per baby step ([`BabyRotations`], [`Hoisting::Hoisted`] where the scheme can), each
//! giant step's inner sum is rotated once, and the giant steps' results are added. The inner
//! sums (plaintext products, and how a scheme accumulates them) are the caller's, since BGV's
//! correction factors and prepared plaintexts and CKKS's fused multiply-adds differ; the
//! rotations and the accumulation are here.

use super::Evaluator;
use crate::error::{Error, Result};

/// How [`BabyRotations::new`] rotates each input by the baby steps. Both give the same words;
/// they differ in cost only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hoisting {
    /// All the steps of an input at once ([`Evaluator::rotate_many`]): a scheme that can share
    /// the decomposition of `c_1` between them (one ModUp for every step) does.
    Hoisted,
    /// One [`Evaluator::rotate`] per step (a full key switch, ModUp included, each).
    OneByOne,
}

/// The inputs of a baby-step giant-step sum and their rotations by each baby step.
pub struct BabyRotations<'a, C> {
    inputs: &'a [C],
    steps: Vec<i64>,
    /// `rotated[i][s]`: input `i` rotated by `steps[s]`.
    rotated: Vec<Vec<C>>,
}

impl<'a, C> BabyRotations<'a, C> {
    /// Rotates every input by each of the non-zero `steps` as `hoisting` says (the same words
    /// either way); step 0 is the input itself. Errors: those of the rotations.
    pub fn new<E: Evaluator<Ciphertext = C>>(
        eval: &E,
        inputs: &'a [C],
        steps: &[i64],
        keys: &E::Keys,
        hoisting: Hoisting,
    ) -> Result<Self> {
        let steps: Vec<i64> = steps.iter().copied().filter(|&s| s != 0).collect();
        let rotated = inputs
            .iter()
            .map(|x| match hoisting {
                Hoisting::Hoisted => eval.rotate_many(x, &steps, keys),
                Hoisting::OneByOne => steps.iter().map(|&s| eval.rotate(x, s, keys)).collect(),
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
