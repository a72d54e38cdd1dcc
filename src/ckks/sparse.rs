//! Sparse-secret encapsulation for CKKS bootstrapping (Bossuat, Troncoso-Pastoriza, Hubaux,
//! "Bootstrapping for approximate homomorphic encryption with negligible failure-probability by
//! using sparse-secret encapsulation", IACR ePrint 2022/024).
//!
//! ModRaise turns `ct` (under `s`, modulo `Q_l`) into an encryption of `m + Q_l I(X)` whose
//! integer part `I` grows with the secret's Hamming weight, and EvalMod must cover `|I| < K`.
//! With a dense ternary `s` (`h ~ 2N/3`) `K` is large; switching first to an *ephemeral* secret
//! `s'` with exactly `h = 32` nonzero entries keeps `K` about 16 (the Irwin-Hall bound), and
//! after ModRaise the ciphertext is switched back to `s` at the top level:
//!
//! * [`Ckks::encapsulate_sparse`]: `s -> s'` at a low level, with a key modulo `Q_l` only;
//! * [`Ckks::decapsulate_sparse`]: `s' -> s` at any level, with an ordinary hybrid key at the top.
//!
//! # Security of the two keys
//! The key `s' -> s` is a set of RLWE samples *under the dense `s`*: its modulus is the set's
//! `Q P`, covered by the 2024 table like every other key. The key `s -> s'` is a set of RLWE
//! samples *under the sparse `s'`*, and a secret of weight 32 is far weaker than a ternary one
//! at the same modulus: the table's ternary bound (1747 bits at `N = 2^16`) does not apply.
//! Lattigo v6.1.1's advisory ("Wrong level for DenseToSparse Evaluation Key", versions 5.0.0 to
//! 6.1.0) is this mistake: the key was generated over the full `Q P` and its security fell to
//! about 106 bits; the fix generates it over `q_0 p_0` only (about `2^120`). The 128-bit reference
//! point used here is HEaaN's `h = 32` set at `N = 2^16` with a 117-bit modulus (listed by the
//! HomomorphicEncryption.org sparse-LWE kit): [`sparse_key_max_log_q`].
//!
//! Our hybrid key switching uses every special prime (`P` is 450 bits in `ckks-boot-n16`), so a
//! hybrid key `s -> s'` at any level would be far above that. The key `s -> s'` is therefore a
//! gadget key without special primes (Brakerski-Vaikuntanathan style) modulo `Q_l = q_0..q_l`
//! alone: each residue limb of `c_1` is cut into digits of [`SPARSE_DIGIT_BITS`] bits, and the
//! key holds, per digit, an RLWE sample under `s'` of `s` times that digit's gadget value. At the lowest level of
//! `ScalePolicy::Double` (the 3 base primes, `log2 Q_2 = 89.9` in `ckks-boot-n16`) this is well
//! inside the bound; [`check_sparse_key_level`] refuses a level above it for a secure set.
//! The switch adds `sum_t d_t e_t` with `0 <= d_t < 2^5` and no rounding term: a coefficient
//! error of standard deviation `sqrt(18 N / 3) 2^5 sigma`, about `2^16` at `N = 2^16` (18
//! digits at the base level), `2^-44` of a `2^60` scale (measured at `N = 2^10`: 37.5 bits of
//! slot precision at scale `2^60`; 33.7 with 10-bit digits). The key is small: 18 digits
//! of `(b, a)` over 3 limbs, 28 MB at `N = 2^16`.

use super::{Ciphertext, Ckks};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{Generator, Purpose, Seed};
use crate::math::zq::MAX_MODULUS_BITS;
use crate::params::Parameters;
use crate::poly::{Coeff, Eval, RnsPoly};
use crate::rlwe::wire::{read_seed, regenerate, write_seed};
use crate::rlwe::{self, CiphertextCore, KeySwitchKey, NoiseScale, SecretKey};
use crate::serial::{read_residues, write_residues, write_residues_packed, Reader, Writer};

/// Hamming weight of the ephemeral sparse secret.
pub const SPARSE_HAMMING_WEIGHT: usize = 32;

/// Bits per digit of the dense-to-sparse gadget key (6 digits per 30-bit limb).
pub const SPARSE_DIGIT_BITS: u32 = 5;

/// The largest `log2 Q` of the dense-to-sparse key (an RLWE instance under a secret of weight
/// [`SPARSE_HAMMING_WEIGHT`]) that we take as 128-bit at `N = 2^log_n`, or `None` where we know
/// no reference: 117 at `N = 2^16` (HEaaN's `h = 32` set at `N = 2^16`; Lattigo's fixed key
/// sits at `q_0 p_0 ~ 2^120`).
#[must_use]
pub fn sparse_key_max_log_q(log_n: u32) -> Option<f64> {
    (log_n == 16).then_some(117.0)
}

/// Checks that a dense-to-sparse key at `level` (modulo `q_0..q_level`, no special primes) to a
/// secret of weight `h` keeps 128-bit security: for a secure set, `h >= 32` and
/// `log2(q_0 ... q_level) <= sparse_key_max_log_q(log N)`; an insecure test set passes
/// unchecked. Errors: a level above the chain ([`Error::LevelOutOfRange`]), a ring degree without
/// a known bound ([`Error::UnknownSecurityLevel`], secret `"sparse"`), a weight below
/// [`SPARSE_HAMMING_WEIGHT`] or `log2 Q` above the bound ([`Error::SparseKeyInsecure`]).
pub fn check_sparse_key_level(params: &Parameters, level: usize, h: usize) -> Result<()> {
    if level > params.max_level() {
        return Err(Error::LevelOutOfRange { level, max: params.max_level() });
    }
    if params.is_insecure() {
        return Ok(());
    }
    let log_q: f64 = params.q().iter().take(level + 1).map(|m| f64::from(m.value()).log2()).sum();
    let Some(bound) = sparse_key_max_log_q(params.log_n()) else {
        return Err(Error::UnknownSecurityLevel { n: params.n() as u64, security_bits: 128, secret: "sparse" });
    };
    if h < SPARSE_HAMMING_WEIGHT || log_q > bound {
        return Err(Error::SparseKeyInsecure {
            level,
            weight: h,
            min_weight: SPARSE_HAMMING_WEIGHT,
            log_q,
            max_log_q: bound,
        });
    }
    Ok(())
}

/// The key from the dense `s` to the sparse `s'`: for every limb `j <= level` and digit `k`,
/// `(b, a) = (-a s' + e + 2^(5 k) [j] s, a)` modulo `q_0..q_level`, where `[j]` is 1 on limb
/// `j` and 0 on the others (the CRT gadget), in the Eval domain.
pub struct DenseToSparseKey<B: Backend> {
    /// `(b, a)` per digit, limb-major then digit.
    digits: Vec<(RnsPoly<B, Eval>, RnsPoly<B, Eval>)>,
    level: usize,
    /// Seed of the `a` halves (stream `(seed, Purpose::KeySwitchA, digit number)`): the wire
    /// form stores it in place of the `a` halves.
    seed: Seed,
    /// The generator of the `a` halves (written back with the key).
    generator: Generator,
    param_id: u64,
}

impl<B: Backend> std::fmt::Debug for DenseToSparseKey<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseToSparseKey")
            .field("level", &self.level)
            .field("digits", &self.digits.len())
            .finish_non_exhaustive()
    }
}

impl<B: Backend> DenseToSparseKey<B> {
    /// The level it was generated at (it switches ciphertexts at this level and below).
    #[must_use]
    pub fn level(&self) -> usize {
        self.level
    }

    /// Number of gadget digits (`(level + 1) * ceil(30 / SPARSE_DIGIT_BITS)`).
    #[must_use]
    pub fn digit_count(&self) -> usize {
        self.digits.len()
    }

    /// Bytes held in backend buffers (both halves of every digit, one word per residue).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.digits.iter().map(|(b, a)| (backend.len(b.buffer()) + backend.len(a.buffer())) as u64 * 4).sum()
    }
}

impl<B: Backend> DenseToSparseKey<B> {
    /// Writes the key's wire block (see [`crate::ckks`]'s `wire` module): level `u32`, digit
    /// count `u32`, the seed of the `a` halves, then one residue block of `b` over
    /// `q_0..q_level` per digit, bit-packed if `packed`.
    pub(crate) fn write_wire(&self, backend: &B, w: &mut Writer, packed: bool) -> Result<()> {
        rlwe::check_param_id(backend, self.param_id)?;
        w.put_u32(u32::try_from(self.level).map_err(|_| Error::SizeOverflow { what: "level" })?);
        w.put_u32(u32::try_from(self.digits.len()).map_err(|_| Error::SizeOverflow { what: "digit count" })?);
        write_seed(w, self.generator, &self.seed);
        let ctx = backend.context();
        let moduli = ctx.moduli_of(&ctx.q_basis(self.level)?)?;
        for (b, _) in &self.digits {
            let host = b.to_host(backend)?;
            if packed {
                write_residues_packed(w, &host, &moduli, ctx.n())?;
            } else {
                write_residues(w, &host);
            }
        }
        Ok(())
    }

    /// Reads what [`DenseToSparseKey::write_wire`] wrote, validating before allocating: the
    /// level against the chain and the 128-bit rule ([`check_sparse_key_level`] for a weight
    /// [`SPARSE_HAMMING_WEIGHT`] secret), the digit count against the level
    /// (`(level + 1) * ceil(30 / SPARSE_DIGIT_BITS)`), the seed, every residue; the `a` halves
    /// are regenerated from the seed.
    pub(crate) fn read_wire(backend: &B, r: &mut Reader<'_>) -> Result<Self> {
        let ctx = backend.context();
        let params = ctx.params();
        let level = r.get_u32()? as usize;
        check_sparse_key_level(params, level, SPARSE_HAMMING_WEIGHT)?;
        let count = r.get_u32()? as usize;
        let want = (level + 1) * digits_per_limb();
        if count > want {
            return Err(Error::CountTooLarge { what: "sparse key digits", found: count as u64, limit: want as u64 });
        }
        if count != want {
            return Err(Error::KeyDimensions { reason: "sparse key digit count differs from its level" });
        }
        let (generator, seed) = read_seed(r)?;
        let basis = ctx.q_basis(level)?;
        let moduli = ctx.moduli_of(&basis)?;
        let mut digits = Vec::with_capacity(count);
        for index in 0..count {
            let b = read_residues(r, &moduli, ctx.n())?;
            let b = RnsPoly::<B, Eval>::from_host(backend, &b, basis.clone())?;
            let index = u32::try_from(index).map_err(|_| Error::SizeOverflow { what: "digit index" })?;
            let a = regenerate(backend, generator, &seed, Purpose::KeySwitchA, index, basis.clone())?;
            digits.push((b, a));
        }
        Ok(Self { digits, level, seed, generator, param_id: params.id() })
    }
}

/// The two keys of sparse-secret encapsulation ([`Ckks::gen_sparse_switch_keys`]).
#[derive(Debug)]
pub struct SparseSwitchKeys<B: Backend> {
    /// `s -> s'`, at a low level, without special primes.
    pub to_sparse: DenseToSparseKey<B>,
    /// `s' -> s`, a hybrid key at the top level.
    pub to_dense: KeySwitchKey<B>,
}

impl<B: Backend> SparseSwitchKeys<B> {
    /// Bytes held in backend buffers by both keys.
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.to_sparse.resident_bytes(backend) + self.to_dense.resident_bytes(backend)
    }
}

/// Digits per limb of the dense-to-sparse key (every prime is below `2^30`).
const fn digits_per_limb() -> usize {
    MAX_MODULUS_BITS.div_ceil(SPARSE_DIGIT_BITS) as usize
}

impl<B: Backend> Ckks<B> {
    /// The lowest level of this policy (the base primes), where
    /// [`Ckks::gen_sparse_switch_keys`] should put the dense-to-sparse key.
    #[must_use]
    pub fn sparse_key_level(&self) -> usize {
        self.policy.base_primes() - 1
    }

    /// A sparse ternary secret with exactly `h` nonzero entries (use [`SPARSE_HAMMING_WEIGHT`]),
    /// positions and signs from the seeded sampler ([`rlwe::gen_sparse_secret_key`]; `master =
    /// None`: the operating system's randomness). A dense and a sparse key made from one master
    /// share no randomness.
    pub fn gen_sparse_secret_key(&self, master: Option<&Seed>, h: usize) -> Result<SecretKey<B>> {
        rlwe::gen_sparse_secret_key(self.backend(), master, h)
    }

    /// The encapsulation keys between the dense `sk` and the sparse `sparse`: `s -> s'` at
    /// `level` (checked by [`check_sparse_key_level`]: use [`Ckks::sparse_key_level`]) and
    /// `s' -> s` at the top level. Errors: either key of other parameters
    /// ([`Error::ParameterMismatch`]), the level check's errors.
    pub fn gen_sparse_switch_keys(
        &self,
        sk: &SecretKey<B>,
        sparse: &SecretKey<B>,
        level: usize,
    ) -> Result<SparseSwitchKeys<B>> {
        let be = self.backend();
        sk.check_params(be)?;
        sparse.check_params(be)?;
        let weight = sparse.coefficients().iter().filter(|&&c| c != 0).count();
        check_sparse_key_level(self.params(), level, weight)?;
        let ctx = be.context();
        let n = ctx.n();
        let basis = ctx.q_basis(level)?;
        let s = sk.eval().select(be, &basis)?;
        let s_sparse = sparse.eval().select(be, &basis)?;
        let seed = sk.fresh_seed()?;
        let mut digits = Vec::with_capacity((level + 1) * digits_per_limb());
        for (j, &limb) in basis.iter().enumerate() {
            let q = ctx.modulus(limb)?;
            for k in 0..digits_per_limb() {
                let index = u32::try_from(digits.len())
                    .map_err(|_| Error::KeyDimensions { reason: "too many sparse-key digits" })?;
                let a = RnsPoly::<B, Eval>::uniform(be, &seed, Purpose::KeySwitchA, index, basis.clone())?;
                let e: Vec<i64> = sk.gaussian(n)?.into_iter().map(i64::from).collect();
                let e = RnsPoly::<B, Coeff>::from_signed(be, &e, basis.clone())?.into_eval(be)?;
                let power = q.reduce_u32(1u32 << (SPARSE_DIGIT_BITS as usize * k));
                let gadget: Vec<u32> = (0..basis.len()).map(|i| if i == j { power } else { 0 }).collect();
                let b = e.sub(be, &a.mul(be, &s_sparse)?)?.add(be, &s.mul_scalar(be, &gadget)?)?;
                digits.push((b, a));
            }
        }
        let to_sparse =
            DenseToSparseKey { digits, level, seed, generator: Generator::CURRENT, param_id: self.params().id() };
        let to_dense = rlwe::gen_key_switch_key(be, sparse.eval(), sk, NoiseScale(1))?;
        be.flush()?;
        Ok(SparseSwitchKeys { to_sparse, to_dense })
    }

    /// Switches `ct` (degree 1, at or below the dense-to-sparse key's level) from `s` to `s'`:
    /// the same message, scale and level, plus `sum_t d_t e_t` (see the module docs).
    /// Errors: [`Error::CiphertextDegree`], [`Error::KeyDimensions`] for a ciphertext above the
    /// key's level, [`Error::ParameterMismatch`].
    pub fn encapsulate_sparse(&self, ct: &Ciphertext<B>, keys: &SparseSwitchKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let key = &keys.to_sparse;
        rlwe::check_param_id(self.backend(), key.param_id)?;
        let be = self.backend();
        let (c0, c1) = ct.core.degree_one()?;
        let level = ct.level();
        if level > key.level {
            return Err(Error::KeyDimensions { reason: "ciphertext above the level of the dense-to-sparse key" });
        }
        let ctx = be.context();
        let n = ctx.n();
        let basis = ctx.q_basis(level)?;
        let host = c1.duplicate(be)?.into_coeff(be)?.to_host(be)?;
        let mask = (1u32 << SPARSE_DIGIT_BITS) - 1;
        let mut d0 = c0.duplicate(be)?;
        let mut d1 = RnsPoly::<B, Eval>::zero(be, basis.clone())?;
        // The key cut to the ciphertext's limbs when it is below the key's level.
        let cut = if level < key.level {
            Some(
                key.digits
                    .iter()
                    .map(|(b, a)| Ok((b.select(be, &basis)?, a.select(be, &basis)?)))
                    .collect::<Result<Vec<_>>>()?,
            )
        } else {
            None
        };
        let key_digits = cut.as_deref().unwrap_or(&key.digits);
        let mut digit = vec![0u32; basis.len() * n];
        for (j, limb) in host.chunks_exact(n).enumerate() {
            for k in 0..digits_per_limb() {
                let shift = SPARSE_DIGIT_BITS as usize * k;
                // The digit is below every prime: the same word on every limb.
                for out in digit.chunks_exact_mut(n) {
                    for (o, &c) in out.iter_mut().zip(limb) {
                        *o = (c >> shift) & mask;
                    }
                }
                let d = RnsPoly::<B, Coeff>::from_host(be, &digit, basis.clone())?.into_eval(be)?;
                let (b, a) = key_digits
                    .get(j * digits_per_limb() + k)
                    .ok_or(Error::KeyDimensions { reason: "dense-to-sparse key has too few digits" })?;
                d0.mul_add_assign(be, &d, b)?;
                d1.mul_add_assign(be, &d, a)?;
            }
        }
        be.flush()?;
        Ok(ct.with(CiphertextCore::from_parts(vec![d0, d1], None, ct.core.param_id())?, ct.scale))
    }

    /// Switches `ct` (degree 1, any level) from `s'` back to `s` with the top-level hybrid key:
    /// the same message, scale and level plus the usual key-switching noise. Errors:
    /// [`Error::CiphertextDegree`], [`Error::ParameterMismatch`].
    pub fn decapsulate_sparse(&self, ct: &Ciphertext<B>, keys: &SparseSwitchKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let be = self.backend();
        let (c0, c1) = ct.core.degree_one()?;
        let (d0, d1) = rlwe::key_switch(be, c1, &keys.to_dense, None)?;
        let d0 = d0.add(be, c0)?;
        be.flush()?;
        Ok(ct.with(CiphertextCore::from_parts(vec![d0, d1], None, ct.core.param_id())?, ct.scale))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::backend::CpuBackend;
    use crate::ckks::ScalePolicy;
    use crate::params::{by_name, insecure_test_ckks_boot, CKKS_BOOT_SET};
    use num_complex::Complex64;

    /// `-log2` of the largest slot error (real and imaginary parts together).
    fn worst_bits(got: &[Complex64], want: &[Complex64]) -> f64 {
        let err = got.iter().zip(want).map(|(g, w)| (g - w).norm()).fold(0.0f64, f64::max);
        -err.max(f64::MIN_POSITIVE).log2()
    }

    fn ring() -> Ckks<CpuBackend> {
        Ckks::cpu(&insecure_test_ckks_boot(10).unwrap(), ScalePolicy::Double).unwrap()
    }

    fn message(slots: usize, seed: u64) -> Vec<Complex64> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        (0..slots).map(|_| Complex64::new(next(), next())).collect()
    }

    #[test]
    fn sparse_secret_has_exactly_h_nonzeros() {
        let ckks = ring();
        for h in [1, 32, 100] {
            let s = ckks.gen_sparse_secret_key(Some(&[7; 32]), h).unwrap();
            let c = s.coefficients();
            assert_eq!(c.len(), 1024);
            assert_eq!(c.iter().filter(|&&x| x != 0).count(), h);
            assert!(c.iter().all(|&x| (-1..=1).contains(&x)));
        }
        let a = ckks.gen_sparse_secret_key(Some(&[7; 32]), 32).unwrap();
        let b = ckks.gen_sparse_secret_key(Some(&[7; 32]), 32).unwrap();
        let c = ckks.gen_sparse_secret_key(Some(&[8; 32]), 32).unwrap();
        assert_eq!(a.coefficients(), b.coefficients());
        assert_ne!(a.coefficients(), c.coefficients());
        // Both signs occur, and the dense key of the same master is another secret.
        assert!(a.coefficients().contains(&1) && a.coefficients().contains(&-1));
        let dense = ckks.gen_secret_key_from_seed(&[7; 32]).unwrap();
        assert_ne!(dense.coefficients(), a.coefficients());
        for h in [0, 1025] {
            assert!(matches!(ckks.gen_sparse_secret_key(None, h), Err(Error::InvalidField { .. })));
        }
    }

    #[test]
    fn encapsulation_round_trip_keeps_the_message() {
        let ckks = ring();
        let sk = ckks.gen_secret_key_from_seed(&[1; 32]).unwrap();
        let sparse = ckks.gen_sparse_secret_key(Some(&[1; 32]), SPARSE_HAMMING_WEIGHT).unwrap();
        let level = ckks.sparse_key_level();
        assert_eq!(level, 2);
        let keys = ckks.gen_sparse_switch_keys(&sk, &sparse, level).unwrap();
        assert_eq!(keys.to_sparse.level(), 2);
        assert_eq!(keys.to_sparse.digit_count(), 18);
        let slots = 512;
        let want = message(slots, 3);
        let scale = 2f64.powi(60);
        let pt = ckks.encode(&want, scale, slots, level).unwrap();
        let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
        assert!(worst_bits(&ckks.decrypt(&sk, &ct).unwrap(), &want) > 40.0);

        // s -> s': decrypts under s' (and not under s), same level and scale.
        let enc = ckks.encapsulate_sparse(&ct, &keys).unwrap();
        assert_eq!((enc.level(), enc.scale(), enc.slots()), (level, scale, slots));
        let bits = worst_bits(&ckks.decrypt(&sparse, &enc).unwrap(), &want);
        assert!(bits > 34.0, "{bits}");
        assert!(worst_bits(&ckks.decrypt(&sk, &enc).unwrap(), &want) < 1.0);

        // s' -> s at the same level.
        let dec = ckks.decapsulate_sparse(&enc, &keys).unwrap();
        assert_eq!((dec.level(), dec.scale()), (level, scale));
        let bits = worst_bits(&ckks.decrypt(&sk, &dec).unwrap(), &want);
        assert!(bits > 34.0, "{bits}");

        // Below the key's level: the key is cut to the ciphertext's limbs.
        let low = ckks.encrypt_symmetric(&sk, &ckks.encode(&want, 2f64.powi(50), slots, 1).unwrap()).unwrap();
        let e = ckks.encapsulate_sparse(&low, &keys).unwrap();
        assert_eq!(e.level(), 1);
        let bits = worst_bits(&ckks.decrypt(&sparse, &e).unwrap(), &want);
        assert!(bits > 24.0, "{bits}");

        // Above the key's level: refused.
        let top = ckks.encrypt_symmetric(&sk, &ckks.encode(&want, scale, slots, ckks.max_level()).unwrap()).unwrap();
        assert!(matches!(ckks.encapsulate_sparse(&top, &keys), Err(Error::KeyDimensions { .. })));
    }

    #[test]
    fn decapsulation_at_the_top_level() {
        let ckks = ring();
        let sk = ckks.gen_secret_key_from_seed(&[2; 32]).unwrap();
        let sparse = ckks.gen_sparse_secret_key(Some(&[2; 32]), SPARSE_HAMMING_WEIGHT).unwrap();
        let keys = ckks.gen_sparse_switch_keys(&sk, &sparse, ckks.sparse_key_level()).unwrap();
        let slots = 512;
        let want = message(slots, 5);
        let pt = ckks.encode(&want, ckks.default_scale(), slots, ckks.max_level()).unwrap();
        let under_sparse = ckks.encrypt_symmetric(&sparse, &pt).unwrap();
        let back = ckks.decapsulate_sparse(&under_sparse, &keys).unwrap();
        assert_eq!(back.level(), ckks.max_level());
        let bits = worst_bits(&ckks.decrypt(&sk, &back).unwrap(), &want);
        assert!(bits > 40.0, "{bits}");
        assert!(worst_bits(&ckks.decrypt(&sparse, &back).unwrap(), &want) < 1.0);
    }

    #[test]
    fn other_keys_are_refused() {
        let ckks = ring();
        let other = Ckks::cpu(&insecure_test_ckks_boot(11).unwrap(), ScalePolicy::Double).unwrap();
        let sk = ckks.gen_secret_key_from_seed(&[3; 32]).unwrap();
        let foreign = other.gen_sparse_secret_key(Some(&[3; 32]), 32).unwrap();
        assert!(matches!(ckks.gen_sparse_switch_keys(&sk, &foreign, 2), Err(Error::ParameterMismatch { .. })));
        let sparse = ckks.gen_sparse_secret_key(Some(&[3; 32]), 32).unwrap();
        assert!(matches!(
            ckks.gen_sparse_switch_keys(&sk, &sparse, ckks.max_level() + 1),
            Err(Error::LevelOutOfRange { .. })
        ));
    }

    #[test]
    fn the_dense_to_sparse_key_level_is_checked_on_the_secure_set() {
        let p = by_name(CKKS_BOOT_SET).unwrap();
        // The three base primes (~89.9 bits): inside the 117-bit bound for h = 32 at N = 2^16.
        check_sparse_key_level(&p, 2, SPARSE_HAMMING_WEIGHT).unwrap();
        // A fourth prime (~119.8 bits) is above it; so is the top level (what Lattigo's advisory
        // is about), and a lighter secret.
        for (level, h) in [(3, 32), (p.max_level(), 32), (2, 16)] {
            let err = check_sparse_key_level(&p, level, h);
            assert!(
                matches!(
                    err,
                    Err(Error::SparseKeyInsecure { level: l, weight, min_weight: SPARSE_HAMMING_WEIGHT, log_q, max_log_q })
                        if l == level && weight == h && max_log_q == 117.0 && (log_q > max_log_q || h < 32)
                ),
                "{level} {h}: {err:?}"
            );
        }
        // Sets without a known sparse bound are refused rather than guessed.
        let n15 = by_name("ckks-n15").unwrap();
        assert_eq!(
            check_sparse_key_level(&n15, 2, 32),
            Err(Error::UnknownSecurityLevel { n: 1 << 15, security_bits: 128, secret: "sparse" })
        );
        // Insecure test sets pass unchecked.
        check_sparse_key_level(&insecure_test_ckks_boot(10).unwrap(), 10, 1).unwrap();
    }
}
