//! Operands of the key-switching kernels (`base_convert` in its ModUp form and
//! `key_switch_inner_product` of [`crate::backend::Backend`]) and the layout both backends derive from them, so they
//! check the same things in the same order and read the same limbs.
//!
//! Hybrid key switching of `c` (Eval, over `q_basis`) splits `q_basis` into digits. ModUp
//! converts each digit's coefficient-domain limbs to the other primes of `q_basis ++ p_basis`
//! ([`modup_basis`]), all digits into one buffer, digit after digit, and transforms only those
//! converted limbs; a digit's own limbs are `c`'s, already in the Eval domain. The inner
//! product then reads, for digit `j` at output prime `i`, `c`'s limb where `i` is in the digit
//! and the converted limb elsewhere ([`DigitSource`]).

use crate::error::{Error, Result};
use crate::math::sampling::Seed;
use crate::ring::RingContext;

/// Most digits one GPU dispatch of the inner product binds (two key buffers each); a key with
/// more digits takes several passes, each after the first reading and rewriting the sums. The
/// ledger's cost model counts those passes on every backend.
pub const INNER_PRODUCT_DIGITS_PER_PASS: usize = 4;

/// One part of a multi-part [`crate::backend::Backend::base_convert`]: the primes `from` (each a prime of the
/// input's basis, read where it lies in the input) are converted to the primes `to`.
pub type ConvertPart<'a> = (&'a [usize], &'a [usize]);

/// The primes a digit is converted to by ModUp: every prime of `q_basis ++ p_basis` outside
/// the digit, in that order.
#[must_use]
pub fn modup_basis(q_basis: &[usize], p_basis: &[usize], digit: &[usize]) -> Vec<usize> {
    q_basis.iter().chain(p_basis).copied().filter(|i| !digit.contains(i)).collect()
}

/// One digit of a key-switching key, as the inner product reads it.
pub struct KeyDigitRef<'a, Buf> {
    /// `b_j` over the key basis (Eval): one residue per word, or bit-packed (`b_packed`).
    pub b: &'a Buf,
    /// Whether `b` is bit-packed: limb after limb, each at the bit width of its prime
    /// ([`crate::backend::fused::packed_layout`] over the key basis), unpacked inside the kernel.
    pub b_packed: bool,
    /// `a_j` over the key basis when stored; `None` when it is the uniform stream
    /// `(seed, Purpose::KeySwitchA, index)`, regenerated inside the kernel.
    pub a: Option<&'a Buf>,
    /// Stream index of `a_j`.
    pub index: u32,
}

/// The operands of [`crate::backend::Backend::key_switch_inner_product`].
///
/// The key basis may be any basis containing `q_basis ++ p_basis` (a key generated at, or
/// reduced to, a level at or above `c`'s holds exactly the limbs of that level and `P`).
pub struct InnerProductInput<'a, Buf> {
    /// The polynomial being switched, Eval over `q_basis`: each digit's own limbs.
    pub c: &'a Buf,
    /// ModUp's output, Eval: for each digit in order, its limbs over
    /// [`modup_basis`]`(q_basis, p_basis, digit)`.
    pub converted: &'a Buf,
    /// The chain primes of `c`.
    pub q_basis: &'a [usize],
    /// The special primes.
    pub p_basis: &'a [usize],
    /// The digits: disjoint lists of primes of `q_basis` that together cover it.
    pub digits: &'a [Vec<usize>],
    /// The key digits, one per digit (extra key digits are ignored).
    pub key: &'a [KeyDigitRef<'a, Buf>],
    /// Basis of every key polynomial (a superset of `q_basis ++ p_basis`).
    pub key_basis: &'a [usize],
    /// Seed of the key's `a_j` streams (read only for digits whose `a_j` is not stored).
    pub seed: &'a Seed,
}

impl<Buf> std::fmt::Debug for KeyDigitRef<'_, Buf> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyDigitRef")
            .field("stored", &self.a.is_some())
            .field("b_packed", &self.b_packed)
            .field("index", &self.index)
            .finish()
    }
}

impl<Buf> std::fmt::Debug for InnerProductInput<'_, Buf> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Buffers and the seed are not printed.
        f.debug_struct("InnerProductInput")
            .field("q_basis", &self.q_basis)
            .field("p_basis", &self.p_basis)
            .field("digits", &self.digits)
            .field("key", &self.key)
            .field("key_basis", &self.key_basis)
            .finish_non_exhaustive()
    }
}

/// The outputs of [`crate::backend::Backend::key_switch_inner_product`]: `sum_j d_j b_j` and `sum_j d_j a_j`,
/// Eval, split into their `q_basis` limbs and their `p_basis` limbs.
#[derive(Debug)]
pub struct InnerProductSums<Buf> {
    /// `sum_j d_j b_j` over `q_basis`.
    pub q0: Buf,
    /// `sum_j d_j a_j` over `q_basis`.
    pub q1: Buf,
    /// The `p_basis` limbs of `sum_j d_j b_j`, then those of `sum_j d_j a_j` (basis
    /// `p_basis ++ p_basis`: ModDown inverse-transforms both in one call).
    pub p: Buf,
}

/// Where digit `j`'s residues at one output prime come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DigitSource {
    /// Limb `k` of `c` (the prime belongs to the digit).
    Input(usize),
    /// Limb `k` of the converted buffer.
    Converted(usize),
}

/// What the inner product reads at each output limb (`q_basis ++ p_basis`, in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InnerProductLayout {
    /// The output primes: `q_basis ++ p_basis`.
    pub primes: Vec<usize>,
    /// Position of each output prime in the key basis.
    pub key_positions: Vec<usize>,
    /// Per output limb, per digit (layout `[limb][digit]`): the source of the digit's residues.
    pub sources: Vec<DigitSource>,
    /// Number of digits.
    pub digits: usize,
    /// Per output limb: the start word and the bit width of its key limb in a bit-packed key
    /// polynomial over the key basis (read for digits whose `b_j` is packed).
    pub key_packed: Vec<(usize, u32)>,
}

fn mismatch(what: &'static str, expected: usize, found: usize) -> Error {
    Error::DimensionMismatch { what, expected, found }
}

impl<Buf> InnerProductInput<'_, Buf> {
    /// Checks the operands (`len` gives a buffer's words, `ctx` is the ring) and returns
    /// the layout. Errors: [`Error::KeyDimensions`] with fewer key digits than digits,
    /// [`Error::DimensionMismatch`] for digits that do not partition `q_basis`, a `p_basis`
    /// that meets `q_basis`, a key basis missing an output prime, or a buffer of the wrong
    /// length.
    pub fn layout(&self, len: impl Fn(&Buf) -> usize, ctx: &RingContext) -> Result<InnerProductLayout> {
        let n = ctx.n();
        let (lq, lp) = (self.q_basis.len(), self.p_basis.len());
        if self.digits.len() > self.key.len() {
            return Err(Error::KeyDimensions { reason: "fewer key digits than ciphertext digits" });
        }
        let mut seen = vec![false; lq];
        for &i in self.digits.iter().flatten() {
            let pos = self.q_basis.iter().position(|&q| q == i).ok_or(mismatch("digit prime", lq, i))?;
            match seen.get_mut(pos) {
                Some(s) if !*s => *s = true,
                _ => return Err(mismatch("digit partition", lq, i)),
            }
        }
        if seen.iter().any(|s| !s) || self.digits.iter().any(Vec::is_empty) {
            return Err(mismatch("digit partition", lq, self.digits.iter().map(Vec::len).sum()));
        }
        if let Some(&p) = self.p_basis.iter().find(|p| self.q_basis.contains(p)) {
            return Err(mismatch("special prime in the chain basis", lp, p));
        }
        let primes: Vec<usize> = self.q_basis.iter().chain(self.p_basis).copied().collect();
        let key_positions = crate::ring::positions_in(self.key_basis, &primes)?;
        let words = |limbs: usize| limbs * n;
        if len(self.c) != words(lq) {
            return Err(mismatch("key-switch input", words(lq), len(self.c)));
        }
        let converted: usize = self.digits.iter().map(|d| lq + lp - d.len()).sum();
        if len(self.converted) != words(converted) {
            return Err(mismatch("key-switch converted digits", words(converted), len(self.converted)));
        }
        let (packed_limbs, packed_words) = crate::backend::fused::packed_layout(ctx, self.key_basis)?;
        for k in self.key.iter().take(self.digits.len()) {
            let b_words = if k.b_packed { packed_words } else { words(self.key_basis.len()) };
            if len(k.b) != b_words {
                return Err(mismatch("key polynomial", b_words, len(k.b)));
            }
            if let Some(a) = k.a {
                if len(a) != words(self.key_basis.len()) {
                    return Err(mismatch("key polynomial", words(self.key_basis.len()), len(a)));
                }
            }
        }
        let key_packed = key_positions
            .iter()
            .map(|&kp| {
                let &(start, _) = packed_limbs.get(kp).ok_or(mismatch("key limb", self.key_basis.len(), kp))?;
                let prime = *self.key_basis.get(kp).ok_or(mismatch("key limb", self.key_basis.len(), kp))?;
                Ok((start, ctx.modulus(prime)?.bits()))
            })
            .collect::<Result<Vec<_>>>()?;
        let q_pos = |i: usize| self.q_basis.iter().position(|&q| q == i);
        let mut sources = Vec::with_capacity(primes.len() * self.digits.len());
        for &prime in &primes {
            let mut offset = 0usize;
            for digit in self.digits {
                let others = modup_basis(self.q_basis, self.p_basis, digit);
                sources.push(match (digit.contains(&prime), others.iter().position(|&o| o == prime)) {
                    (true, _) => DigitSource::Input(q_pos(prime).ok_or(mismatch("digit prime", lq, prime))?),
                    (false, Some(k)) => DigitSource::Converted(offset + k),
                    (false, None) => return Err(mismatch("output prime", primes.len(), prime)),
                });
                offset += others.len();
            }
        }
        Ok(InnerProductLayout { primes, key_positions, sources, digits: self.digits.len(), key_packed })
    }

    /// Number of digits whose `a_j` is stored (the rest are regenerated).
    #[must_use]
    pub fn stored_digits(&self) -> usize {
        self.key.iter().take(self.digits.len()).filter(|k| k.a.is_some()).count()
    }

    /// Number of digits whose `b_j` is bit-packed.
    #[must_use]
    pub fn packed_digits(&self) -> usize {
        self.key.iter().take(self.digits.len()).filter(|k| k.b_packed).count()
    }
}

/// The digits of the ModUp of a buffer over `q_basis` as [`crate::backend::Backend::base_convert`] parts:
/// `(digit, modup_basis(digit))` per digit, with the target lists they borrow.
#[must_use]
pub fn modup_targets(q_basis: &[usize], p_basis: &[usize], digits: &[Vec<usize>]) -> Vec<Vec<usize>> {
    digits.iter().map(|d| modup_basis(q_basis, p_basis, d)).collect()
}

/// Checks the limb lists of a multi-part [`crate::backend::Backend::base_convert`] against the input basis:
/// every `from` prime must be in `basis` (its position is returned, part by part).
pub fn convert_positions(basis: &[usize], parts: &[ConvertPart<'_>]) -> Result<Vec<Vec<usize>>> {
    parts.iter().map(|(from, _)| crate::ring::positions_in(basis, from)).collect()
}

/// Lets wrappers see the first output (`q0`) of the inner product.
impl<Buf> super::KernelOutput<Buf> for InnerProductSums<Buf> {
    fn first_output(&mut self) -> Option<&mut Buf> {
        Some(&mut self.q0)
    }
}
