//! What BGV and CKKS share: the [`Evaluator`] trait, and the algorithms written once over it
//! ([`bsgs`]: baby-step giant-step sums of rotated, plaintext-weighted inputs, which the CKKS
//! linear transforms and the MNIST CNN's layers both run).
//!
//! The returning methods are the `...New` forms of Lattigo's evaluator (a new ciphertext), the
//! `_assign` ones its in-place forms; the defaults of the latter replace the operand by the
//! returned value, and a scheme overrides one where it can do better. Every method documents
//! its scheme's inherent method of the same name for the errors and the noise or scale rules:
//! the trait adds no behaviour of its own, so a generic caller gets exactly the words of the
//! scheme's own call.
//!
//! ```
//! use wgfhe::bgv::{Bgv, KeyRequest};
//! use wgfhe::eval::Evaluator;
//! use wgfhe::params::{self, TestRing};
//!
//! /// `x + rot_1(x)`, for any scheme.
//! fn add_neighbour<E: Evaluator>(e: &E, x: &E::Ciphertext, keys: &E::Keys) -> wgfhe::Result<E::Ciphertext> {
//!     let mut y = e.rotate(x, 1, keys)?;
//!     e.add_assign(&mut y, x)?;
//!     Ok(y)
//! }
//!
//! let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537)?;
//! let bgv = Bgv::cpu(&p)?;
//! let sk = bgv.gen_secret_key_from_seed(&[1; 32])?;
//! let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
//! let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[1, 2, 3])?)?;
//! let y = add_neighbour(&bgv, &x, &keys)?;
//! assert_eq!(bgv.encoder().decode(&bgv.decrypt(&sk, &y)?)?[..3], [3, 5, 3]);
//! # Ok::<(), wgfhe::Error>(())
//! ```

pub mod bsgs;

pub use bsgs::Hoisting;

use crate::error::Result;

/// The homomorphic operations BGV and CKKS share, implemented by [`crate::bgv::Bgv`] and
/// [`crate::ckks::Ckks`].
pub trait Evaluator {
    /// The scheme's ciphertext.
    type Ciphertext;
    /// The scheme's encoded plaintext.
    type Plaintext;
    /// The evaluation keys (relinearisation and Galois keys).
    type Keys;

    /// `a + b` (HADD).
    fn add(&self, a: &Self::Ciphertext, b: &Self::Ciphertext) -> Result<Self::Ciphertext>;
    /// `a - b`.
    fn sub(&self, a: &Self::Ciphertext, b: &Self::Ciphertext) -> Result<Self::Ciphertext>;
    /// `-a`.
    fn neg(&self, a: &Self::Ciphertext) -> Result<Self::Ciphertext>;
    /// `ct + pt` (PADD).
    fn add_plain(&self, ct: &Self::Ciphertext, pt: &Self::Plaintext) -> Result<Self::Ciphertext>;
    /// `ct * pt` (PMULT).
    fn mul_plain(&self, ct: &Self::Ciphertext, pt: &Self::Plaintext) -> Result<Self::Ciphertext>;
    /// `a * b` relinearised (HMULT; CKKS does not rescale).
    fn mul_relin(&self, a: &Self::Ciphertext, b: &Self::Ciphertext, keys: &Self::Keys) -> Result<Self::Ciphertext>;
    /// The slots rotated left by `steps` (negative: right); BGV rotates both rows of its slot
    /// matrix (its column rotation).
    fn rotate(&self, ct: &Self::Ciphertext, steps: i64, keys: &Self::Keys) -> Result<Self::Ciphertext>;
    /// `ct` rotated by each of `steps`, the words of [`Evaluator::rotate`] for each; a scheme
    /// that can share the decomposition of `c_1` between them (hoisting) does.
    fn rotate_many(&self, ct: &Self::Ciphertext, steps: &[i64], keys: &Self::Keys) -> Result<Vec<Self::Ciphertext>> {
        steps.iter().map(|&s| self.rotate(ct, s, keys)).collect()
    }
    /// The ciphertext's level (its top prime's index).
    fn level(&self, ct: &Self::Ciphertext) -> usize;
    /// `ct` brought down to `level` with its message kept: BGV switches the modulus, CKKS drops
    /// primes (value and scale unchanged). At `ct`'s own level, a copy.
    fn drop_to_level(&self, ct: &Self::Ciphertext, level: usize) -> Result<Self::Ciphertext>;

    /// `a += b`.
    fn add_assign(&self, a: &mut Self::Ciphertext, b: &Self::Ciphertext) -> Result<()> {
        *a = self.add(a, b)?;
        Ok(())
    }
    /// `a -= b`.
    fn sub_assign(&self, a: &mut Self::Ciphertext, b: &Self::Ciphertext) -> Result<()> {
        *a = self.sub(a, b)?;
        Ok(())
    }
    /// `ct *= pt`.
    fn mul_plain_assign(&self, ct: &mut Self::Ciphertext, pt: &Self::Plaintext) -> Result<()> {
        *ct = self.mul_plain(ct, pt)?;
        Ok(())
    }
    /// `ct` rotated by `steps` in place.
    fn rotate_assign(&self, ct: &mut Self::Ciphertext, steps: i64, keys: &Self::Keys) -> Result<()> {
        *ct = self.rotate(ct, steps, keys)?;
        Ok(())
    }
    /// `a + b` with the two brought to the lower of their levels first
    /// ([`Evaluator::drop_to_level`]); operands at one level are added as they are.
    fn add_aligned(&self, a: &Self::Ciphertext, b: &Self::Ciphertext) -> Result<Self::Ciphertext> {
        let (la, lb) = (self.level(a), self.level(b));
        if la == lb {
            return self.add(a, b);
        }
        let level = la.min(lb);
        self.add(&self.drop_to_level(a, level)?, &self.drop_to_level(b, level)?)
    }
}
