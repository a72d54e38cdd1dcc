//! The RLWE core shared by BGV and CKKS: keys, encryption, decryption, hybrid key switching and
//! Galois automorphisms.
//!
//! Scheme differences enter through one number, the *noise scale*: BGV multiplies every error
//! term by the plaintext modulus `t` (and divides-and-rounds with the `t`-preserving variant),
//! CKKS uses 1. Every polynomial of a key or ciphertext is kept in the Eval domain.
//!
//! Hybrid key switching (Han-Ki, "Better bootstrapping for approximate HE"; as in Lattigo and
//! OpenFHE): the chain `q_0..q_L` is cut into `dnum` digits of `alpha` consecutive primes, the
//! special primes `P = p_0..p_{k-1}` satisfy `P >= max digit`, and the key for digit `j` is
//! `(b_j, a_j) = (-a_j s + E e_j + P g_j s', a_j)` over `QP`, where `g_j = 1 mod` the primes of digit
//! `j` and `0 mod` every other prime. Switching `c` (level `l`): each digit of `c` (its residues in
//! that digit's primes) is extended to `Q_l P` by fast base conversion (ModUp), multiplied with
//! the key and summed, and the sum is divided by `P` (ModDown).

mod encryption;
mod eval_keys;
mod key_switch;
mod keygen;
pub mod wire;

pub use encryption::{decrypt_polys, encrypt_public, encrypt_symmetric};
pub use eval_keys::{
    apply_galois, galois_element, gen_evaluation_keys, gen_galois_key, gen_relin_key, relinearize, EvaluationKeys,
};
pub use key_switch::key_switch;
pub use keygen::{gen_key_switch_key, gen_public_key, gen_secret_key};

use std::sync::{Arc, Mutex, PoisonError};

use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{Purpose, Sampler, Seed, SEED_BYTES};
use crate::poly::{Eval, RnsPoly};

/// A pair of Eval-domain polynomials: a degree-1 ciphertext or a key-switching result.
pub type PolyPair<B> = (RnsPoly<B, Eval>, RnsPoly<B, Eval>);

/// Scale applied to every error term: `t` for BGV, 1 for CKKS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoiseScale(pub u32);

/// The secret randomness of a key owner: where seeds and errors come from.
///
/// Seeds are unique by construction: seed `i` is 24 pseudo-random bytes from the seed stream
/// followed by the 64-bit counter `i`, which only ever increases; nothing needs storing.
pub(crate) struct RandomState {
    seeds: Sampler,
    noise: Sampler,
    counter: u64,
}

/// A ternary secret key.
pub struct SecretKey<B: Backend> {
    pub(crate) coeffs: Vec<i8>,
    /// `s` in the Eval domain over every prime of `Q` and `P`.
    pub(crate) eval: RnsPoly<B, Eval>,
    pub(crate) param_id: u64,
    state: Arc<Mutex<RandomState>>,
}

impl<B: Backend> std::fmt::Debug for SecretKey<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

impl<B: Backend> Drop for SecretKey<B> {
    fn drop(&mut self) {
        // Wipes the host copy of the secret (the backend buffer of `eval` is not wiped).
        zeroize::Zeroize::zeroize(&mut self.coeffs);
    }
}

impl<B: Backend> SecretKey<B> {
    /// The secret as signed coefficients (host side).
    #[must_use]
    pub fn coefficients(&self) -> &[i8] {
        &self.coeffs
    }

    /// The secret in the Eval domain over `Q P`.
    #[must_use]
    pub fn eval(&self) -> &RnsPoly<B, Eval> {
        &self.eval
    }

    /// Id of the parameters the key belongs to.
    #[must_use]
    pub fn param_id(&self) -> u64 {
        self.param_id
    }

    /// Checks that the key belongs to the backend's parameters.
    pub(crate) fn check_params<B2: Backend>(&self, backend: &B2) -> Result<()> {
        check_param_id(backend, self.param_id)
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut RandomState) -> Result<T>) -> Result<T> {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut st)
    }

    /// A seed never used before by this key instance: 24 pseudo-random bytes and a counter.
    /// [`Error::SeedReuse`] once the 64-bit counter is exhausted.
    pub fn fresh_seed(&self) -> Result<Seed> {
        self.with_state(|st| {
            let i = st.counter;
            st.counter = i.checked_add(1).ok_or(Error::SeedReuse)?;
            let mut seed = [0u8; SEED_BYTES];
            let (random, count) = seed.split_at_mut(SEED_BYTES - 8);
            st.seeds.fill_bytes(random);
            count.copy_from_slice(&i.to_le_bytes());
            Ok(seed)
        })
    }

    /// Draws `n` error coefficients from the key owner's noise stream.
    pub(crate) fn gaussian(&self, n: usize) -> Result<Vec<i32>> {
        self.with_state(|st| Ok(st.noise.gaussian(n)))
    }

    pub(crate) fn new_state(master: &Seed) -> Arc<Mutex<RandomState>> {
        Arc::new(Mutex::new(RandomState {
            seeds: Sampler::from_seed(master, Purpose::SeedDerivation, 0),
            noise: Sampler::from_seed(master, Purpose::Error, 0),
            counter: 0,
        }))
    }
}

/// [`Error::ParameterMismatch`] unless `found` is the id of the backend's parameters.
pub(crate) fn check_param_id<B: Backend>(backend: &B, found: u64) -> Result<()> {
    let expected = backend.context().params().id();
    if found != expected {
        return Err(Error::ParameterMismatch { expected, found });
    }
    Ok(())
}

/// A public key `(b, a) = (-a s + E e, a)` over the top-level `Q`, with `a` from a seed.
#[derive(Debug)]
pub struct PublicKey<B: Backend> {
    /// `b` half.
    pub b: RnsPoly<B, Eval>,
    /// `a` half.
    pub a: RnsPoly<B, Eval>,
    /// Seed of `a`.
    pub seed: Seed,
    /// Id of the parameters the key belongs to.
    pub param_id: u64,
}

/// A hybrid key-switching key from `s'` to `s`: one `(b_j, a_j)` pair per digit, over `Q P`.
#[derive(Debug)]
pub struct KeySwitchKey<B: Backend> {
    /// `(b_j, a_j)` per digit.
    pub digits: Vec<(RnsPoly<B, Eval>, RnsPoly<B, Eval>)>,
    /// Seed the `a_j` were expanded from (stream index = digit).
    pub seed: Seed,
    /// Id of the parameters the key belongs to.
    pub param_id: u64,
}

/// A relinearisation key (`s^2 -> s`).
#[derive(Debug)]
pub struct RelinKey<B: Backend>(pub KeySwitchKey<B>);

/// A Galois key for `X -> X^g` (`s(X^g) -> s`).
#[derive(Debug)]
pub struct GaloisKey<B: Backend> {
    /// The Galois element.
    pub galois_element: usize,
    /// The switching key.
    pub key: KeySwitchKey<B>,
}
