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
//!
//! Keys are held *expanded* (both halves of every digit in backend buffers) or *seeded* (only
//! the `b_j`; the uniform `a_j` are regenerated from the key's seed inside the inner product),
//! with the `b_j` one residue per word or bit-packed at their primes' widths (unpacked inside
//! the inner product), over the full `Q P` or only the limbs of the highest level the key is
//! used at ([`KeySwitchKey::at_level`]): see [`KeySwitchKey`]. The algorithm and its transform counts are on [`key_switch`]'s module
//! (`key_switch.rs`); dropping primes from ciphertexts is [`drop_primes`].
//!
//! The ciphertexts of both schemes are built on one core, `CiphertextCore` (crate-internal): the
//! polynomials `c_0, c_1[, c_2]` over one basis, the seed of a still untouched `c_1` and the
//! parameter id, with the operations that need nothing else (encryption, tensor product,
//! relinearisation, automorphisms, decryption to the noisy message).

mod ciphertext;
mod encryption;
mod eval_keys;
mod hoisted;
mod key_set_wire;
mod key_switch;
mod keygen;
mod mod_down;
mod request;
pub mod wire;

pub(crate) use ciphertext::{zip_padded, CiphertextCore};
pub use encryption::{decrypt_polys, encrypt_public, encrypt_symmetric};
pub use eval_keys::{
    apply_galois, galois_element, gen_evaluation_keys, gen_galois_key, gen_planned_keys, gen_relin_key,
    mul_relinearize, relinearize, EvaluationKeys, KeyPlan, KeyStorage,
};
pub use hoisted::{apply_galois_hoisted, decompose, Decomposed};
pub use key_switch::{key_switch, key_switch_add, key_switch_formed, key_switch_with};
pub use keygen::{gen_key_switch_key, gen_key_switch_key_at, gen_public_key, gen_secret_key, gen_sparse_secret_key};
pub use mod_down::{drop_primes, Addend, Epilogue};
pub use request::KeyRequest;
pub use wire::{KeyForm, WireForm};

use std::sync::{Arc, Mutex, PoisonError};

use crate::backend::fused::{pack_limb, packed_layout, unpack_limb};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{Generator, Purpose, Sampler, Seed, SEED_BYTES};
use crate::poly::{Eval, RnsPoly};
use crate::ring::Basis;

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
    /// The generator `a` came from ([`Generator::CURRENT`] for every key made now; a key read
    /// from an old object keeps its generator so that it is written back with it).
    pub generator: Generator,
    /// Id of the parameters the key belongs to.
    pub param_id: u64,
}

/// A key polynomial `b_j` in the Eval domain over a basis: one residue per `u32` word, or
/// bit-packed (each limb at the bit width of its prime, [`crate::backend::fused::packed_layout`]),
/// which the key-switching inner product unpacks as it reads it.
pub struct KeyPoly<B: Backend> {
    buffer: B::Buffer,
    basis: Basis,
    packed: bool,
}

impl<B: Backend> std::fmt::Debug for KeyPoly<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Residues are not printed.
        f.debug_struct("KeyPoly").field("basis", &self.basis).field("packed", &self.packed).finish_non_exhaustive()
    }
}

impl<B: Backend> From<RnsPoly<B, Eval>> for KeyPoly<B> {
    fn from(p: RnsPoly<B, Eval>) -> Self {
        let (buffer, basis) = p.into_parts();
        Self { buffer, basis, packed: false }
    }
}

impl<B: Backend> KeyPoly<B> {
    /// The basis.
    #[must_use]
    pub fn basis(&self) -> &Basis {
        &self.basis
    }

    /// The backend buffer (words or packed, see [`KeyPoly::is_packed`]).
    #[must_use]
    pub fn buffer(&self) -> &B::Buffer {
        &self.buffer
    }

    /// Whether the residues are bit-packed.
    #[must_use]
    pub fn is_packed(&self) -> bool {
        self.packed
    }

    /// The residues, one per word, limb-major (unpacked on the host when packed).
    pub fn to_host(&self, backend: &B) -> Result<Vec<u32>> {
        let words = backend.download(&self.buffer)?;
        if !self.packed {
            return Ok(words);
        }
        let ctx = backend.context();
        let n = ctx.n();
        let (layout, _) = packed_layout(ctx, &self.basis)?;
        let mut out = vec![0u32; self.basis.len() * n];
        for ((&(start, len), m), o) in layout.iter().zip(ctx.moduli_of(&self.basis)?).zip(out.chunks_exact_mut(n)) {
            let src = words.get(start..start + len).ok_or(Error::DimensionMismatch {
                what: "packed key words",
                expected: start + len,
                found: words.len(),
            })?;
            unpack_limb(src, m.bits(), o)?;
        }
        Ok(out)
    }

    /// The polynomial with one residue per word (a copy).
    pub fn to_words(&self, backend: &B) -> Result<RnsPoly<B, Eval>> {
        if self.packed {
            RnsPoly::from_host(backend, &self.to_host(backend)?, self.basis.clone())
        } else {
            RnsPoly::from_buffer(backend, backend.duplicate(&self.buffer)?, self.basis.clone())
        }
    }

    /// The bit-packed form (packed on the host; unchanged if already packed).
    pub fn packed(self, backend: &B) -> Result<Self> {
        if self.packed {
            return Ok(self);
        }
        let words = backend.download(&self.buffer)?;
        drop(self.buffer);
        Self::packed_from_host(backend, &words, self.basis)
    }

    /// The bit-packed form of `words` (one residue per word, limb-major over `basis`), packed
    /// on the host and uploaded once.
    pub(crate) fn packed_from_host(backend: &B, words: &[u32], basis: Basis) -> Result<Self> {
        let ctx = backend.context();
        let n = ctx.n();
        let (layout, total) = packed_layout(ctx, &basis)?;
        if words.len() != basis.len() * n {
            return Err(Error::DimensionMismatch {
                what: "key residues",
                expected: basis.len() * n,
                found: words.len(),
            });
        }
        let mut out = vec![0u32; total];
        for ((&(start, len), m), limb) in layout.iter().zip(ctx.moduli_of(&basis)?).zip(words.chunks_exact(n)) {
            let dst = out.get_mut(start..start + len).ok_or(Error::SizeOverflow { what: "packed key" })?;
            pack_limb(limb, m.bits(), dst);
        }
        Ok(Self { buffer: backend.upload(&out)?, basis, packed: true })
    }

    /// The limbs of `sub` (each in this polynomial's basis), in the same format.
    pub fn select(&self, backend: &B, sub: &[usize]) -> Result<Self> {
        if self.packed {
            let ctx = backend.context();
            let positions = crate::ring::positions_in(&self.basis, sub)?;
            let (layout, _) = packed_layout(ctx, &self.basis)?;
            let words = backend.download(&self.buffer)?;
            let mut out = Vec::new();
            for p in positions {
                let &(start, len) = layout.get(p).ok_or(Error::SizeOverflow { what: "packed key" })?;
                out.extend_from_slice(words.get(start..start + len).ok_or(Error::SizeOverflow { what: "packed key" })?);
            }
            Ok(Self { buffer: backend.upload(&out)?, basis: sub.into(), packed: true })
        } else {
            let positions = crate::ring::positions_in(&self.basis, sub)?;
            Ok(Self { buffer: backend.gather_limbs(&self.buffer, &positions)?, basis: sub.into(), packed: false })
        }
    }

    /// A deep copy.
    pub fn duplicate(&self, backend: &B) -> Result<Self> {
        Ok(Self { buffer: backend.duplicate(&self.buffer)?, basis: self.basis.clone(), packed: self.packed })
    }

    /// Bytes the buffer holds (4 a word).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        4 * backend.len(&self.buffer) as u64
    }
}

/// One digit of a [`KeySwitchKey`]: `b_j` is always held in a backend buffer (one residue per
/// word, or bit-packed: [`KeyPoly`]), `a_j` either held too (the *expanded* form) or only
/// implied by the key's seed (the *seeded* form).
#[derive(Debug)]
pub struct KeyDigit<B: Backend> {
    /// `b_j = -a_j s + E e_j + P g_j s'` over the key's basis (`Q P`, or `Q_l P` for a key at
    /// level `l`).
    pub b: KeyPoly<B>,
    /// `a_j` over the key's basis when stored; `None` when seeded: `a_j` is then the uniform
    /// stream `(seed, Purpose::KeySwitchA, index)` of the key, regenerated where it is used.
    pub a: Option<RnsPoly<B, Eval>>,
    /// Stream index of `a_j`: the digit number `j` key generation drew it with.
    pub index: u32,
}

/// A hybrid key-switching key from `s'` to `s`: one [`KeyDigit`] per digit, over `Q P`.
///
/// The uniform halves `a_j` are `uniform(seed, Purpose::KeySwitchA, j)` over the full `Q P`, so
/// a key may drop them and keep only its seed ([`KeySwitchKey::seeded`]): half the resident
/// memory, and half the key bytes key switching reads, since [`key_switch`] then regenerates
/// the `a_j` inside its inner product ([`Backend::key_switch_inner_product`]) instead of
/// loading them. The
/// result is bit for bit the same. [`KeySwitchKey::expand`] regenerates the stored form.
#[derive(Debug)]
pub struct KeySwitchKey<B: Backend> {
    /// The digits, in digit order.
    pub digits: Vec<KeyDigit<B>>,
    /// Seed the `a_j` are expanded from (stream index [`KeyDigit::index`]).
    pub seed: Seed,
    /// The generator of the `a_j` streams. A key of the old generator (read from a version-1 or
    /// version-2 object) holds every `a_j` in memory: the backends regenerate only
    /// [`Generator::CURRENT`], so [`KeySwitchKey::seeded`] keeps its halves.
    pub generator: Generator,
    /// Id of the parameters the key belongs to.
    pub param_id: u64,
}

impl<B: Backend> KeySwitchKey<B> {
    /// Whether no digit holds its `a` part (every `a_j` is regenerated from the seed).
    #[must_use]
    pub fn is_seeded(&self) -> bool {
        self.digits.iter().all(|d| d.a.is_none())
    }

    /// Whether every `b_j` is bit-packed ([`KeyPoly::is_packed`]).
    #[must_use]
    pub fn is_packed(&self) -> bool {
        self.digits.iter().all(|d| d.b.is_packed())
    }

    /// The seeded form: drops every stored `a_j` (the seed regenerates them). A key of the old
    /// generator ([`Generator::ChaCha20Reduce`]) is returned unchanged: no kernel regenerates
    /// its streams.
    #[must_use]
    pub fn seeded(mut self) -> Self {
        if self.generator != Generator::CURRENT {
            return self;
        }
        for d in &mut self.digits {
            d.a = None;
        }
        self
    }

    /// The packed form: every `b_j` bit-packed at its primes' widths ([`KeyPoly::packed`]);
    /// with [`KeySwitchKey::seeded`], the key held in memory is its seed and its packed `b`
    /// halves. Key switching gives the same words in every form.
    pub fn packed(self, backend: &B) -> Result<Self> {
        check_param_id(backend, self.param_id)?;
        let digits = self
            .digits
            .into_iter()
            .map(|d| Ok(KeyDigit { b: d.b.packed(backend)?, a: d.a, index: d.index }))
            .collect::<Result<_>>()?;
        Ok(Self { digits, seed: self.seed, generator: self.generator, param_id: self.param_id })
    }

    /// The basis of the key's polynomials: `q_0..q_l` and `P`, `l` the key's level
    /// ([`KeySwitchKey::level`]).
    pub fn basis(&self) -> Result<&Basis> {
        self.digits.first().map(|d| d.b.basis()).ok_or(Error::KeyDimensions { reason: "key without digits" })
    }

    /// The highest level the key switches at: its number of chain primes less one.
    pub fn level(&self, backend: &B) -> Result<usize> {
        let q = backend.context().q_count();
        self.basis()?
            .iter()
            .filter(|&&i| i < q)
            .count()
            .checked_sub(1)
            .ok_or(Error::KeyDimensions { reason: "key without chain primes" })
    }

    /// The key reduced to `level` (at most the key's own): the limbs of `q_0..q_level` and `P` of
    /// every digit that meets `q_0..q_level`, in the key's format. Since the gadget `g_j` of a
    /// digit is `1` on its primes and `0` on every other, and every residue of `a_j` and `e_j` is
    /// that of one integer polynomial, the reduced key is the key generation's at `level` with
    /// the same seed and errors, and key switching at any level up to `level` gives the words of
    /// the original key.
    pub fn at_level(&self, backend: &B, level: usize) -> Result<Self> {
        check_param_id(backend, self.param_id)?;
        let ctx = backend.context();
        let params = ctx.params();
        if level > self.level(backend)? {
            return Err(Error::LevelOutOfRange { level, max: self.level(backend)? });
        }
        let basis = ctx.qp_basis(level)?;
        let keep = params.digits_at(level);
        let digits = self
            .digits
            .iter()
            .take(keep)
            .map(|d| {
                let a = d.a.as_ref().map(|a| a.select(backend, &basis)).transpose()?;
                Ok(KeyDigit { b: d.b.select(backend, &basis)?, a, index: d.index })
            })
            .collect::<Result<_>>()?;
        Ok(Self { digits, seed: self.seed, generator: self.generator, param_id: self.param_id })
    }

    /// The expanded form: a copy with every `b_j` one residue per word and every `a_j` held in a
    /// buffer (regenerated from the seed where the key is seeded, copied where it is stored).
    pub fn expand(&self, backend: &B) -> Result<Self> {
        check_param_id(backend, self.param_id)?;
        let digits = self
            .digits
            .iter()
            .map(|d| {
                let a = match &d.a {
                    Some(a) => a.duplicate(backend)?,
                    None => RnsPoly::uniform(backend, &self.seed, Purpose::KeySwitchA, d.index, d.b.basis().clone())?,
                };
                Ok(KeyDigit { b: d.b.to_words(backend)?.into(), a: Some(a), index: d.index })
            })
            .collect::<Result<_>>()?;
        Ok(Self { digits, seed: self.seed, generator: self.generator, param_id: self.param_id })
    }

    /// Bytes the key holds in backend buffers: every `b_j` (packed or not) and every stored
    /// `a_j`, 4 bytes a buffer word (the 32-byte seed lives on the host and is not counted).
    /// Expanded: `digits * 2 * (#Q + #P) * N * 4`; seeded: half of that; seeded and packed:
    /// `digits * sum_i ceil(N bits(q_i) / 32) * 4` over the key's primes.
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        let bytes = |p: &RnsPoly<B, Eval>| 4 * backend.len(p.buffer()) as u64;
        self.digits.iter().map(|d| d.b.resident_bytes(backend) + d.a.as_ref().map_or(0, bytes)).sum()
    }
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

impl<B: Backend> RelinKey<B> {
    /// Whether the key is seeded ([`KeySwitchKey::is_seeded`]).
    #[must_use]
    pub fn is_seeded(&self) -> bool {
        self.0.is_seeded()
    }

    /// The seeded form ([`KeySwitchKey::seeded`]).
    #[must_use]
    pub fn seeded(self) -> Self {
        Self(self.0.seeded())
    }

    /// The expanded form ([`KeySwitchKey::expand`]).
    pub fn expand(&self, backend: &B) -> Result<Self> {
        Ok(Self(self.0.expand(backend)?))
    }

    /// The packed form ([`KeySwitchKey::packed`]).
    pub fn packed(self, backend: &B) -> Result<Self> {
        Ok(Self(self.0.packed(backend)?))
    }

    /// The key reduced to `level` ([`KeySwitchKey::at_level`]).
    pub fn at_level(&self, backend: &B, level: usize) -> Result<Self> {
        Ok(Self(self.0.at_level(backend, level)?))
    }

    /// Bytes held in backend buffers ([`KeySwitchKey::resident_bytes`]).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.0.resident_bytes(backend)
    }
}

impl<B: Backend> GaloisKey<B> {
    /// Whether the key is seeded ([`KeySwitchKey::is_seeded`]).
    #[must_use]
    pub fn is_seeded(&self) -> bool {
        self.key.is_seeded()
    }

    /// The seeded form ([`KeySwitchKey::seeded`]).
    #[must_use]
    pub fn seeded(self) -> Self {
        Self { galois_element: self.galois_element, key: self.key.seeded() }
    }

    /// The expanded form ([`KeySwitchKey::expand`]).
    pub fn expand(&self, backend: &B) -> Result<Self> {
        Ok(Self { galois_element: self.galois_element, key: self.key.expand(backend)? })
    }

    /// The packed form ([`KeySwitchKey::packed`]).
    pub fn packed(self, backend: &B) -> Result<Self> {
        Ok(Self { galois_element: self.galois_element, key: self.key.packed(backend)? })
    }

    /// The key reduced to `level` ([`KeySwitchKey::at_level`]).
    pub fn at_level(&self, backend: &B, level: usize) -> Result<Self> {
        Ok(Self { galois_element: self.galois_element, key: self.key.at_level(backend, level)? })
    }

    /// Bytes held in backend buffers ([`KeySwitchKey::resident_bytes`]).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.key.resident_bytes(backend)
    }
}
