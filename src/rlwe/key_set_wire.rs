//! Wire format of a whole set of evaluation keys ([`EvaluationKeys`]): what a client sends a
//! server once (see [`crate::serial`] for the container).
//!
//! | object | payload |
//! |---|---|
//! | `GaloisKeySet` | relinearisation flag `u8` (0 or 1); if 1, the `RelinKey` object's length `u64` and the object; the number of Galois keys `u32` (at most `N`); then per key, in ascending order of Galois element, the `GaloisKey` object's length `u64` and the object |
//!
//! Each nested key is a complete wire object with its own header and CRC-32C, loaded by
//! [`RelinKey::from_bytes_as`] / [`GaloisKey::from_bytes_as`] (every check of theirs applies);
//! the set's own checksum covers the whole payload before anything is parsed. Loading also
//! refuses a count above `N` before allocating, a nested length beyond the payload
//! ([`Error::Truncated`]), a Galois element given twice and trailing bytes.

use std::collections::HashMap;

use super::{EvaluationKeys, GaloisKey, KeyForm, RelinKey};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::rlwe::wire::check_header;
use crate::serial::{read_object, write_object, ObjectType, Reader, Writer};

fn put_nested(w: &mut Writer, object: &[u8]) {
    w.put_u64(object.len() as u64);
    w.put_bytes(object);
}

fn get_nested<'a>(r: &mut Reader<'a>) -> Result<&'a [u8]> {
    let len = r.get_u64()?;
    let len = usize::try_from(len).map_err(|_| Error::SizeOverflow { what: "nested key length" })?;
    r.get_bytes(len)
}

impl<B: Backend> EvaluationKeys<B> {
    /// Serialises every key of the set (the uniform halves as seeds) as one `GaloisKeySet`
    /// object; the Galois keys in ascending order of element, so equal sets give equal bytes.
    pub fn to_bytes(&self, backend: &B) -> Result<Vec<u8>> {
        let mut w = Writer::new();
        match &self.relin {
            Some(rk) => {
                w.put_u8(1);
                put_nested(&mut w, &rk.to_bytes(backend)?);
            }
            None => w.put_u8(0),
        }
        let mut elements: Vec<usize> = self.galois.keys().copied().collect();
        elements.sort_unstable();
        w.put_u32(u32::try_from(elements.len()).map_err(|_| Error::SizeOverflow { what: "Galois key count" })?);
        for g in elements {
            let key = self.galois.get(&g).ok_or(Error::KeyDimensions { reason: "Galois key vanished" })?;
            if key.galois_element != g {
                return Err(Error::KeyDimensions { reason: "Galois key stored under another element" });
            }
            put_nested(&mut w, &key.to_bytes(backend)?);
        }
        let params = backend.context().params();
        Ok(write_object(ObjectType::GaloisKeySet, params.scheme(), params.id(), w.as_bytes()))
    }

    /// Loads a key set with every key in the expanded form.
    pub fn from_bytes(backend: &B, bytes: &[u8]) -> Result<Self> {
        Self::from_bytes_as(backend, bytes, KeyForm::Expanded)
    }

    /// Loads a key set with every key in the given form, validating as the module says.
    pub fn from_bytes_as(backend: &B, bytes: &[u8], form: KeyForm) -> Result<Self> {
        let (h, payload) = read_object(bytes, ObjectType::GaloisKeySet)?;
        check_header(backend, &h)?;
        let mut r = Reader::new(payload);
        let relin = match r.get_u8()? {
            0 => None,
            1 => Some(RelinKey::from_bytes_as(backend, get_nested(&mut r)?, form)?),
            _ => return Err(Error::InvalidField { field: "relinearisation flag", reason: "must be 0 or 1" }),
        };
        let count = u64::from(r.get_u32()?);
        let limit = backend.context().n() as u64;
        if count > limit {
            return Err(Error::CountTooLarge { what: "Galois keys", found: count, limit });
        }
        let mut galois = HashMap::new();
        for _ in 0..count {
            let key = GaloisKey::from_bytes_as(backend, get_nested(&mut r)?, form)?;
            if galois.insert(key.galois_element, key).is_some() {
                return Err(Error::InvalidField { field: "galois element", reason: "given twice in a key set" });
            }
        }
        r.finish()?;
        Ok(Self { relin, galois })
    }
}

#[cfg(test)]
mod tests {
    #![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

    use super::*;
    use crate::bgv::Bgv;
    use crate::params::{insecure_test_bgv, TestRing};
    use crate::serial::HEADER_LEN;

    fn bgv() -> Bgv<crate::backend::CpuBackend> {
        let p = insecure_test_bgv(TestRing { log_n: 6, q_primes: 3, p_primes: 1, dnum: 3 }, 257).unwrap();
        Bgv::cpu(&p).unwrap()
    }

    #[test]
    fn a_key_set_round_trips_and_still_rotates() {
        let bgv = bgv();
        let sk = bgv.gen_secret_key_from_seed(&[5; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &[1, -3], true).unwrap();
        let bytes = keys.to_bytes(bgv.backend()).unwrap();
        for form in [KeyForm::Expanded, KeyForm::Seeded] {
            let back = EvaluationKeys::from_bytes_as(bgv.backend(), &bytes, form).unwrap();
            assert_eq!(back.galois.len(), keys.galois.len());
            assert_eq!(back.is_seeded(), form == KeyForm::Seeded);
            // The same bytes again (the seeded form writes the same seeds and b halves).
            assert_eq!(back.to_bytes(bgv.backend()).unwrap(), bytes);
            let slots = bgv.encoder().slots();
            let v: Vec<u64> = (0..slots as u64).collect();
            let ct = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&v).unwrap()).unwrap();
            let rot = bgv.rotate_columns(&ct, 1, &back).unwrap();
            let got = bgv.encoder().decode(&bgv.decrypt(&sk, &rot).unwrap()).unwrap();
            assert_eq!(got[0], 1);
            let sq = bgv.mul_relin(&ct, &ct, &back).unwrap();
            assert_eq!(bgv.encoder().decode(&bgv.decrypt(&sk, &sq).unwrap()).unwrap()[3], 9);
        }
        let empty = EvaluationKeys::<crate::backend::CpuBackend>::default();
        let e = empty.to_bytes(bgv.backend()).unwrap();
        let back = EvaluationKeys::from_bytes(bgv.backend(), &e).unwrap();
        assert!(back.relin.is_none() && back.galois.is_empty());
    }

    #[test]
    fn damaged_or_hostile_key_sets_are_typed_errors() {
        let bgv = bgv();
        let sk = bgv.gen_secret_key_from_seed(&[6; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &[1], false).unwrap();
        let bytes = keys.to_bytes(bgv.backend()).unwrap();
        let be = bgv.backend();
        // Every truncation and every flipped payload byte is an error, never a panic.
        for cut in [0, 10, HEADER_LEN, HEADER_LEN + 1, bytes.len() - 1] {
            assert!(EvaluationKeys::from_bytes(be, &bytes[..cut]).is_err());
        }
        for i in (HEADER_LEN..bytes.len()).step_by(97) {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(matches!(EvaluationKeys::from_bytes(be, &b), Err(Error::Checksum { .. })), "byte {i}");
        }
        // Hostile payloads with valid checksums: a bad flag, a huge count, a duplicate key, a
        // nested length past the end, trailing bytes, another object type nested.
        let params = be.context().params();
        let make = |w: &Writer| write_object(ObjectType::GaloisKeySet, params.scheme(), params.id(), w.as_bytes());
        let mut w = Writer::new();
        w.put_u8(2);
        assert!(matches!(EvaluationKeys::from_bytes(be, &make(&w)), Err(Error::InvalidField { .. })));
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(u32::MAX);
        assert!(matches!(EvaluationKeys::from_bytes(be, &make(&w)), Err(Error::CountTooLarge { .. })));
        let gk = keys.galois.values().next().unwrap().to_bytes(be).unwrap();
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(2);
        put_nested(&mut w, &gk);
        put_nested(&mut w, &gk);
        assert!(matches!(EvaluationKeys::from_bytes(be, &make(&w)), Err(Error::InvalidField { .. })));
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(1);
        w.put_u64(u64::MAX);
        assert!(EvaluationKeys::from_bytes(be, &make(&w)).is_err());
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(0);
        w.put_u8(0);
        assert!(matches!(EvaluationKeys::from_bytes(be, &make(&w)), Err(Error::TrailingBytes { .. })));
        let rk = keys.relin.as_ref().unwrap().to_bytes(be).unwrap();
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(1);
        put_nested(&mut w, &rk);
        assert!(matches!(EvaluationKeys::from_bytes(be, &make(&w)), Err(Error::ObjectTypeMismatch { .. })));
        // Keys of another parameter set.
        let other =
            Bgv::cpu(&insecure_test_bgv(TestRing { log_n: 6, q_primes: 3, p_primes: 1, dnum: 3 }, 641).unwrap())
                .unwrap();
        assert!(matches!(EvaluationKeys::from_bytes(other.backend(), &bytes), Err(Error::ParameterMismatch { .. })));
    }
}
