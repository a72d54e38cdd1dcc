//! Wire format of CKKS objects (see [`crate::serial`] for the container), laid out as BGV's
//! ([`crate::bgv`]'s `wire` module) with the CKKS metadata in place of the correction factor
//! and the noise estimate.
//!
//! | object | payload |
//! |---|---|
//! | `Ciphertext` | level `u32`, degree `u8`, scale `f64`, slots `u32`, representation `u8` (1 = Eval), then `degree + 1` residue blocks over `q_0..q_level` |
//! | `SeededCiphertext` | level `u32`, degree `u8` (must be 1), scale `f64`, slots `u32`, representation `u8`, generator `u8` (1 = ChaCha20), seed length `u8` (32), seed, then the residue block of `c_0`; `c_1` is regenerated from the seed |
//! | packed `Ciphertext` / `SeededCiphertext` | as above, every residue block in packing mode 1 (`bits(q_i)` bits per residue, [`crate::serial::PACKING_BITS`]): [`Ckks::ciphertext_to_bytes_packed`] |
//! | `Plaintext` | `N` as `u32`, level `u32`, scale `f64`, slots `u32`, then `N` coefficients as `i128` |
//! | `BootKeys` | relinearisation flag `u8` (0 or 1) and, if 1, a key block; the number of Galois keys `u32` (at most `N`), then per key in ascending order of element: Galois element `u64` (odd, below `2N`) and a key block; sparse flag `u8` (0 or 1) and, if 1, the sparse-to-dense key block and the dense-to-sparse block |
//! | key block (in `BootKeys`) | level `u32` (at most the top), digit count `u32` (the digits of the parameters' `dnum` whose first prime is at most the level), generator `u8`, seed length `u8`, seed of the `a_j`, then per digit the residue block of `b_j` over `q_0..q_level P` |
//! | dense-to-sparse block (in `BootKeys`) | level `u32` (checked by [`super::sparse::check_sparse_key_level`]), digit count `u32` (`(level + 1) * 6`), generator `u8`, seed length `u8`, seed of the `a` halves, then per digit the residue block of `b` over `q_0..q_level` (no `P`) |
//!
//! Loading checks, after the container's checksum ([`crate::serial::read_object`]) and before
//! allocating: parameter id and scheme, level range, degree, scale (finite and positive),
//! slots (a power of two, at most `N/2`), representation tag, generator id and seed length;
//! the residue reader then checks lengths and every residue (plain or packed, told apart by
//! each block's mode byte). A plaintext's coefficients must fit its level's modulus as
//! [`Ckks::encode`] requires. `BootKeys` residue blocks are plain ([`BootKeys::to_bytes`]) or
//! packed ([`BootKeys::to_bytes_packed`]); the uniform halves are always seeds, and loading
//! ([`BootKeys::from_bytes`]) regenerates them or keeps the evaluation keys seeded
//! ([`KeyForm`]). Flags, counts (digit counts exactly as the parameters and the level give
//! them, at most `N` Galois keys), levels and Galois elements are checked before the blocks
//! they size are read; a Galois element given twice and trailing bytes are refused.

use std::collections::HashMap;

use super::sparse::{DenseToSparseKey, SparseSwitchKeys, SPARSE_DIGIT_BITS};
use super::{BootKeys, Ciphertext, Ckks, Plaintext};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::zq::{Modulus, MAX_MODULUS_BITS};
use crate::rlwe::wire::{
    check_header, open_ciphertext, read_core, read_key_digits, read_seed, write_core_polys, write_seed,
};
use crate::rlwe::{EvaluationKeys, GaloisKey, KeyForm, KeyPlan, KeySwitchKey, RelinKey, WireForm};
use crate::serial::{
    read_object, write_object, write_residues, write_residues_packed, ObjectType, Reader, Writer, HEADER_LEN,
};

impl<B: Backend> Ckks<B> {
    /// Serialises a ciphertext; a fresh symmetric one is written as `c_0` and the seed of `c_1`.
    pub fn ciphertext_to_bytes(&self, ct: &Ciphertext<B>) -> Result<Vec<u8>> {
        self.ciphertext_to_bytes_as(ct, WireForm::SEEDED)
    }

    /// Serialises a ciphertext with every polynomial stored (never seeded).
    pub fn ciphertext_to_bytes_unseeded(&self, ct: &Ciphertext<B>) -> Result<Vec<u8>> {
        self.ciphertext_to_bytes_as(ct, WireForm::UNSEEDED)
    }

    /// As [`Ckks::ciphertext_to_bytes`] (seeded when the ciphertext is), with the residues
    /// bit-packed to `bits(q_i)` bits each (packing mode 1): about `30/32` of the plain size for
    /// 30-bit primes. [`Ckks::ciphertext_from_bytes`] loads both.
    pub fn ciphertext_to_bytes_packed(&self, ct: &Ciphertext<B>) -> Result<Vec<u8>> {
        self.ciphertext_to_bytes_as(ct, WireForm::SEEDED_PACKED)
    }

    /// The ciphertext's bytes in `form` ([`WireForm`]); the other writers are shorthands for it.
    pub fn ciphertext_to_bytes_as(&self, ct: &Ciphertext<B>, form: WireForm) -> Result<Vec<u8>> {
        self.check_ct(ct)?;
        let mut w = Writer::new();
        w.put_u32(u32::try_from(ct.level()).map_err(|_| Error::SizeOverflow { what: "level" })?);
        w.put_u8(u8::try_from(ct.degree()).map_err(|_| Error::SizeOverflow { what: "degree" })?);
        w.put_f64(ct.scale);
        w.put_u32(u32::try_from(ct.slots).map_err(|_| Error::SizeOverflow { what: "slots" })?);
        let object = write_core_polys(&mut w, self.backend(), &ct.core, form)?;
        Ok(write_object(object, self.params().scheme(), self.params().id(), w.as_bytes()))
    }

    /// [`Error::InvalidField`] unless `scale` is finite and positive (a normal `f64`).
    fn check_scale(scale: f64) -> Result<()> {
        if !scale.is_normal() || scale < 0.0 {
            return Err(Error::InvalidField { field: "scale", reason: "not a finite positive value" });
        }
        Ok(())
    }

    /// [`Error::InvalidField`] unless `slots` is a power of two of at most `N/2`.
    fn check_slots(&self, slots: usize) -> Result<()> {
        if !slots.is_power_of_two() || slots > self.encoder.max_slots() {
            return Err(Error::InvalidField { field: "slots", reason: "not a power of two of at most N/2" });
        }
        Ok(())
    }

    /// Loads a ciphertext (plain or seeded), validating everything before allocating.
    pub fn ciphertext_from_bytes(&self, bytes: &[u8]) -> Result<Ciphertext<B>> {
        let (object, mut r, level, degree) = open_ciphertext(self.backend(), bytes, self.max_level())?;
        let scale = r.get_f64()?;
        Self::check_scale(scale)?;
        let slots = r.get_u32()? as usize;
        self.check_slots(slots)?;
        let core = read_core(r, self.backend(), object, level, degree, self.params().id())?;
        Ok(Ciphertext { core, scale, slots })
    }

    /// Serialises a plaintext.
    pub fn plaintext_to_bytes(&self, pt: &Plaintext) -> Result<Vec<u8>> {
        if pt.param_id != self.params().id() {
            return Err(Error::ParameterMismatch { expected: self.params().id(), found: pt.param_id });
        }
        let mut w = Writer::new();
        w.put_u32(u32::try_from(pt.coeffs.len()).map_err(|_| Error::SizeOverflow { what: "plaintext length" })?);
        w.put_u32(u32::try_from(pt.level).map_err(|_| Error::SizeOverflow { what: "level" })?);
        w.put_f64(pt.scale);
        w.put_u32(u32::try_from(pt.slots).map_err(|_| Error::SizeOverflow { what: "slots" })?);
        for c in &pt.coeffs {
            w.put_bytes(&c.to_le_bytes());
        }
        Ok(write_object(ObjectType::Plaintext, self.params().scheme(), self.params().id(), w.as_bytes()))
    }

    /// Loads a plaintext, validating as the module says.
    pub fn plaintext_from_bytes(&self, bytes: &[u8]) -> Result<Plaintext> {
        let (h, payload) = read_object(bytes, ObjectType::Plaintext)?;
        check_header(self.backend(), &h)?;
        let mut r = Reader::new(payload);
        let n = r.get_u32()? as usize;
        if n != self.params().n() {
            return Err(Error::DimensionMismatch { what: "plaintext length", expected: self.params().n(), found: n });
        }
        let level = r.get_u32()? as usize;
        if level > self.max_level() {
            return Err(Error::LevelOutOfRange { level, max: self.max_level() });
        }
        let scale = r.get_f64()?;
        Self::check_scale(scale)?;
        let slots = r.get_u32()? as usize;
        self.check_slots(slots)?;
        let raw = r.get_bytes(n.checked_mul(16).ok_or(Error::SizeOverflow { what: "plaintext length" })?)?;
        r.finish()?;
        let limit = self.log_q_at(level) - 2.0;
        let mut coeffs = Vec::with_capacity(n);
        for (index, chunk) in raw.chunks_exact(16).enumerate() {
            let mut b = [0u8; 16];
            b.copy_from_slice(chunk);
            let c = i128::from_le_bytes(b);
            let value_log2 = (c.unsigned_abs() as f64).log2();
            if value_log2 >= limit {
                return Err(Error::EncodingOverflow { index, value_log2, limit_log2: limit });
            }
            coeffs.push(c);
        }
        Ok(Plaintext { coeffs, scale, slots, level, param_id: self.params().id() })
    }
}

/// Writes a residue block, bit-packed at the primes' widths if `packed`.
fn put_block(w: &mut Writer, data: &[u32], moduli: &[Modulus], n: usize, packed: bool) -> Result<()> {
    if packed {
        write_residues_packed(w, data, moduli, n)
    } else {
        write_residues(w, data);
        Ok(())
    }
}

/// Writes a key-switching key at its own level (the key block of the module table).
fn write_key<B: Backend>(backend: &B, w: &mut Writer, key: &KeySwitchKey<B>, packed: bool) -> Result<()> {
    crate::rlwe::check_param_id(backend, key.param_id)?;
    let ctx = backend.context();
    let level = key.level(backend)?;
    let basis = ctx.qp_basis(level)?;
    if key.basis()? != &basis {
        return Err(Error::KeyDimensions { reason: "key basis is not q_0..q_level P" });
    }
    let indices = digit_indices(backend, level);
    if key.digits.len() != indices.len() || key.digits.iter().zip(&indices).any(|(d, &j)| d.index as usize != j) {
        return Err(Error::KeyDimensions { reason: "key digits differ from the parameters' digits at its level" });
    }
    w.put_u32(u32::try_from(level).map_err(|_| Error::SizeOverflow { what: "level" })?);
    w.put_u32(u32::try_from(key.digits.len()).map_err(|_| Error::SizeOverflow { what: "digit count" })?);
    write_seed(w, key.generator, &key.seed);
    let moduli = ctx.moduli_of(&basis)?;
    for d in &key.digits {
        if d.b.basis() != &basis {
            return Err(Error::KeyDimensions { reason: "key digits over different bases" });
        }
        put_block(w, &d.b.to_host(backend)?, &moduli, ctx.n(), packed)?;
    }
    Ok(())
}

/// The stream indices of the digits a key at `level` has: the parameters' non-empty digits
/// whose first prime is at most `level` (as key generation makes them).
fn digit_indices<B: Backend>(backend: &B, level: usize) -> Vec<usize> {
    let params = backend.context().params();
    (0..params.dnum())
        .filter(|&j| {
            let range = params.digit_range(j);
            !range.is_empty() && range.start <= level
        })
        .collect()
}

/// Reads a key block, validating level and digit count before allocating.
fn read_key<B: Backend>(backend: &B, r: &mut Reader<'_>, form: KeyForm) -> Result<KeySwitchKey<B>> {
    let ctx = backend.context();
    let max = ctx.q_count() - 1;
    let level = r.get_u32()? as usize;
    if level > max {
        return Err(Error::LevelOutOfRange { level, max });
    }
    let count = r.get_u32()? as usize;
    let indices = digit_indices(backend, level);
    if count > indices.len() {
        return Err(Error::CountTooLarge { what: "key digits", found: count as u64, limit: indices.len() as u64 });
    }
    if count != indices.len() {
        return Err(Error::KeyDimensions { reason: "digit count differs from the parameters at the key's level" });
    }
    let (generator, seed) = read_seed(r)?;
    let digits = read_key_digits(backend, r, form, (generator, &seed), &indices, &ctx.qp_basis(level)?)?;
    Ok(KeySwitchKey { digits, seed, generator, param_id: ctx.params().id() })
}

/// Reads a flag byte (0 or 1).
fn get_flag(r: &mut Reader<'_>, field: &'static str) -> Result<bool> {
    match r.get_u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::InvalidField { field, reason: "must be 0 or 1" }),
    }
}

/// Bytes of one residue block over `moduli` (mode byte included), plain or packed.
fn block_len(moduli: &[Modulus], n: usize, packed: bool) -> u64 {
    let body: u64 = if packed {
        moduli.iter().map(|m| (n as u64 * u64::from(m.bits())).div_ceil(8)).sum()
    } else {
        4 * moduli.len() as u64 * n as u64
    };
    1 + body
}

impl<B: Backend> BootKeys<B> {
    /// The length of [`BootKeys::to_bytes`] (or [`BootKeys::to_bytes_packed`] if `packed`) for
    /// the keys of `plan` (each at its planned level, as [`crate::rlwe::gen_planned_keys`]
    /// makes them) and, if `sparse`, the sparse switching keys at [`Ckks::sparse_key_level`],
    /// computed from shapes without generating a key.
    pub fn wire_len(ckks: &Ckks<B>, plan: &KeyPlan, sparse: bool, packed: bool) -> Result<u64> {
        let ctx = ckks.backend().context();
        let n = ctx.n();
        let key = |level: usize| -> Result<u64> {
            let moduli = ctx.moduli_of(&ctx.qp_basis(level)?)?;
            Ok(4 + 4 + 34 + digit_indices(ckks.backend(), level).len() as u64 * block_len(&moduli, n, packed))
        };
        let mut total = HEADER_LEN as u64 + 1 + 4 + 1;
        if let Some(level) = plan.relin {
            total += key(level)?;
        }
        for &level in plan.galois.values() {
            total += 8 + key(level)?;
        }
        if sparse {
            let level = ckks.sparse_key_level();
            total += key(ctx.q_count() - 1)?;
            let moduli = ctx.moduli_of(&ctx.q_basis(level)?)?;
            let digits = (level as u64 + 1) * u64::from(MAX_MODULUS_BITS.div_ceil(SPARSE_DIGIT_BITS));
            total += 4 + 4 + 34 + digits * block_len(&moduli, n, packed);
        }
        Ok(total)
    }

    /// Serialises every key of the bootstrapping as one `BootKeys` object (the uniform halves as
    /// seeds, residues as `u32` words; see the module table). Equal keys give equal bytes.
    pub fn to_bytes(&self, ckks: &Ckks<B>) -> Result<Vec<u8>> {
        self.to_bytes_with(ckks, false)
    }

    /// As [`BootKeys::to_bytes`] with every residue block bit-packed at its primes' widths.
    pub fn to_bytes_packed(&self, ckks: &Ckks<B>) -> Result<Vec<u8>> {
        self.to_bytes_with(ckks, true)
    }

    fn to_bytes_with(&self, ckks: &Ckks<B>, packed: bool) -> Result<Vec<u8>> {
        let be = ckks.backend();
        let mut w = Writer::new();
        match &self.eval.relin {
            Some(rk) => {
                w.put_u8(1);
                write_key(be, &mut w, &rk.0, packed)?;
            }
            None => w.put_u8(0),
        }
        let mut elements: Vec<usize> = self.eval.galois.keys().copied().collect();
        elements.sort_unstable();
        w.put_u32(u32::try_from(elements.len()).map_err(|_| Error::SizeOverflow { what: "Galois key count" })?);
        for g in elements {
            let key = self.eval.galois.get(&g).ok_or(Error::KeyDimensions { reason: "Galois key vanished" })?;
            if key.galois_element != g {
                return Err(Error::KeyDimensions { reason: "Galois key stored under another element" });
            }
            w.put_u64(g as u64);
            write_key(be, &mut w, &key.key, packed)?;
        }
        match &self.sparse {
            Some(s) => {
                w.put_u8(1);
                write_key(be, &mut w, &s.to_dense, packed)?;
                s.to_sparse.write_wire(be, &mut w, packed)?;
            }
            None => w.put_u8(0),
        }
        Ok(write_object(ObjectType::BootKeys, ckks.params().scheme(), ckks.params().id(), w.as_bytes()))
    }

    /// Loads bootstrapping keys, the evaluation keys and the sparse-to-dense key in `form`
    /// (the dense-to-sparse key is always expanded), validating as the module says.
    pub fn from_bytes(ckks: &Ckks<B>, bytes: &[u8], form: KeyForm) -> Result<Self> {
        let be = ckks.backend();
        let (h, payload) = read_object(bytes, ObjectType::BootKeys)?;
        check_header(be, &h)?;
        let mut r = Reader::new(payload);
        let relin =
            if get_flag(&mut r, "relinearisation flag")? { Some(RelinKey(read_key(be, &mut r, form)?)) } else { None };
        let count = u64::from(r.get_u32()?);
        let n = be.context().n();
        if count > n as u64 {
            return Err(Error::CountTooLarge { what: "Galois keys", found: count, limit: n as u64 });
        }
        let mut galois = HashMap::new();
        for _ in 0..count {
            let g = r.get_u64()?;
            if g % 2 == 0 || g >= 2 * n as u64 {
                return Err(Error::InvalidField { field: "galois element", reason: "must be odd and below 2N" });
            }
            let g = usize::try_from(g).map_err(|_| Error::SizeOverflow { what: "galois element" })?;
            if galois.contains_key(&g) {
                return Err(Error::InvalidField { field: "galois element", reason: "given twice in a key set" });
            }
            let key = read_key(be, &mut r, form)?;
            galois.insert(g, GaloisKey { galois_element: g, key });
        }
        let sparse = if get_flag(&mut r, "sparse flag")? {
            let to_dense = read_key(be, &mut r, form)?;
            let to_sparse = DenseToSparseKey::read_wire(be, &mut r)?;
            Some(SparseSwitchKeys { to_sparse, to_dense })
        } else {
            None
        };
        r.finish()?;
        Ok(Self { eval: EvaluationKeys { relin, galois }, sparse })
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::backend::CpuBackend;
    use crate::ckks::ScalePolicy;
    use crate::params::{insecure_test_ckks, TestRing};
    use crate::rlwe::KeyRequest;
    use crate::serial::{update_checksum, HEADER_LEN};

    const RING: TestRing = TestRing { log_n: 6, q_primes: 4, p_primes: 1, dnum: 4 };

    fn ckks() -> Ckks<CpuBackend> {
        Ckks::cpu(&insecure_test_ckks(RING, 25).unwrap(), ScalePolicy::Single).unwrap()
    }

    fn close(got: &[num_complex::Complex64], want: &[f64]) {
        for (z, w) in got.iter().zip(want) {
            assert!((z.re - w).abs() < 1e-2, "{z} vs {w}");
        }
    }

    #[test]
    fn ciphertexts_and_plaintexts_round_trip() {
        let ckks = ckks();
        let sk = ckks.gen_secret_key_from_seed(&[2; 32]).unwrap();
        let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
        let v = [0.5, -1.25, 3.0, 0.0];
        let pt = ckks.encode_real(&v).unwrap();
        let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
        let seeded = ckks.ciphertext_to_bytes(&ct).unwrap();
        let plain = ckks.ciphertext_to_bytes_unseeded(&ct).unwrap();
        assert_eq!(seeded[6], ObjectType::SeededCiphertext.tag());
        assert_eq!(plain[6], ObjectType::Ciphertext.tag());
        assert!(seeded.len() < plain.len());
        for b in [&seeded, &plain] {
            let back = ckks.ciphertext_from_bytes(b).unwrap();
            assert_eq!((back.level(), back.slots(), back.scale()), (ct.level(), ct.slots(), ct.scale()));
            close(&ckks.decrypt(&sk, &back).unwrap(), &v);
            // The same bytes again.
            assert_eq!(ckks.ciphertext_to_bytes(&back).unwrap(), **b);
        }
        // A degree-2 product and a rescaled one, lower level and another scale.
        let sq = ckks.mul(&ct, &ct).unwrap();
        let back = ckks.ciphertext_from_bytes(&ckks.ciphertext_to_bytes(&sq).unwrap()).unwrap();
        assert_eq!(back.degree(), 2);
        let r = ckks.rescale(&ckks.relinearize(&back, &keys).unwrap()).unwrap();
        let back = ckks.ciphertext_from_bytes(&ckks.ciphertext_to_bytes(&r).unwrap()).unwrap();
        assert_eq!((back.level(), back.scale()), (r.level(), r.scale()));
        close(&ckks.decrypt(&sk, &back).unwrap(), &[0.25, 1.5625, 9.0, 0.0]);
        let pb = ckks.plaintext_to_bytes(&pt).unwrap();
        assert!(ckks.plaintext_from_bytes(&pb).unwrap() == pt);
    }

    #[test]
    fn damaged_and_hostile_objects_are_typed_errors() {
        let ckks = ckks();
        let sk = ckks.gen_secret_key_from_seed(&[3; 32]).unwrap();
        let pt = ckks.encode_real(&[1.0, 2.0]).unwrap();
        let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
        let objects = [ckks.ciphertext_to_bytes(&ct).unwrap(), ckks.ciphertext_to_bytes_unseeded(&ct).unwrap()];
        for bytes in &objects {
            for cut in 0..bytes.len() {
                assert!(ckks.ciphertext_from_bytes(&bytes[..cut]).is_err(), "cut {cut}");
            }
            for i in (HEADER_LEN..bytes.len()).step_by(7) {
                let mut b = bytes.clone();
                b[i] ^= 0x04;
                assert!(matches!(ckks.ciphertext_from_bytes(&b), Err(Error::Checksum { .. })), "byte {i}");
            }
            // Resealed hostile metadata: level, degree, scale, slots, representation.
            let field = |offset: usize, value: &[u8]| {
                let mut b = bytes.clone();
                b[HEADER_LEN + offset..HEADER_LEN + offset + value.len()].copy_from_slice(value);
                update_checksum(&mut b).unwrap();
                ckks.ciphertext_from_bytes(&b)
            };
            assert!(matches!(field(0, &99u32.to_le_bytes()), Err(Error::LevelOutOfRange { .. })));
            assert!(matches!(field(4, &[0]), Err(Error::CiphertextDegree { .. })));
            assert!(matches!(field(4, &[3]), Err(Error::CountTooLarge { .. })));
            for bad in [f64::NAN, f64::INFINITY, -1.0, 0.0] {
                assert!(matches!(field(5, &bad.to_le_bytes()), Err(Error::InvalidField { field: "scale", .. })));
            }
            for bad in [0u32, 3, 64] {
                assert!(matches!(field(13, &bad.to_le_bytes()), Err(Error::InvalidField { field: "slots", .. })));
            }
            assert!(matches!(field(17, &[0]), Err(Error::InvalidRepresentation { .. })));
            // Trailing bytes.
            let mut b = bytes.clone();
            b.push(0);
            let len = (b.len() - HEADER_LEN) as u64;
            b[16..24].copy_from_slice(&len.to_le_bytes());
            update_checksum(&mut b).unwrap();
            assert!(ckks.ciphertext_from_bytes(&b).is_err());
        }
        // A degree-2 ciphertext claimed seeded.
        let sq = ckks.ciphertext_to_bytes(&ckks.mul(&ct, &ct).unwrap()).unwrap();
        let mut b = sq.clone();
        b[6] = ObjectType::SeededCiphertext.tag();
        update_checksum(&mut b).unwrap();
        assert!(matches!(ckks.ciphertext_from_bytes(&b), Err(Error::SeedNotAllowed { .. })));
        // A plaintext coefficient beyond the level's modulus.
        let mut pb = ckks.plaintext_to_bytes(&pt).unwrap();
        pb[HEADER_LEN + 20..HEADER_LEN + 36].copy_from_slice(&(i128::MAX).to_le_bytes());
        update_checksum(&mut pb).unwrap();
        assert!(matches!(ckks.plaintext_from_bytes(&pb), Err(Error::EncodingOverflow { .. })));
        // Objects of another set (a BGV object is refused the same way: tests/fuzz_decoders.rs).
        let other = Ckks::cpu(&insecure_test_ckks(RING, 24).unwrap(), ScalePolicy::Single).unwrap();
        assert!(matches!(other.ciphertext_from_bytes(&objects[0]), Err(Error::ParameterMismatch { .. })));
    }
}
