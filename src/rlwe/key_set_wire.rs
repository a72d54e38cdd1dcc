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
    use super::*;
    use crate::backend::CpuBackend;
    use crate::params::{insecure_test_bgv, TestRing};
    use crate::ring::RingContext;
    use crate::rlwe::{galois_element, gen_evaluation_keys, gen_secret_key, NoiseScale};
    use crate::serial::HEADER_LEN;

    fn backend(t: u64) -> CpuBackend {
        let p = insecure_test_bgv(TestRing { log_n: 6, q_primes: 3, p_primes: 1, dnum: 3 }, t).unwrap();
        CpuBackend::new(RingContext::new(&p).unwrap())
    }

    fn keys(be: &CpuBackend, seed: u8) -> EvaluationKeys<CpuBackend> {
        let sk = gen_secret_key(be, Some(&[seed; 32])).unwrap();
        let elements = [galois_element(3, 1, 64), galois_element(3, -3, 64), 127];
        gen_evaluation_keys(be, &sk, &elements, NoiseScale(257)).unwrap()
    }

    #[test]
    fn a_key_set_round_trips_in_both_forms() {
        let be = backend(257);
        let keys = keys(&be, 5);
        let bytes = keys.to_bytes(&be).unwrap();
        for form in [KeyForm::Expanded, KeyForm::Seeded] {
            let back = EvaluationKeys::from_bytes_as(&be, &bytes, form).unwrap();
            assert_eq!(back.galois.len(), 3);
            assert!(back.relin.is_some());
            assert_eq!(back.is_seeded(), form == KeyForm::Seeded);
            // Every seed and every b_j as before: the same bytes again.
            assert_eq!(back.to_bytes(&be).unwrap(), bytes);
            // The expanded form regenerates the a_j the key generation made.
            if form == KeyForm::Expanded {
                let (a, b) = (keys.relin.as_ref().unwrap(), back.relin.as_ref().unwrap());
                assert_eq!(a.resident_bytes(&be), b.resident_bytes(&be));
            }
        }
        let empty = EvaluationKeys::<CpuBackend>::default();
        let back = EvaluationKeys::from_bytes(&be, &empty.to_bytes(&be).unwrap()).unwrap();
        assert!(back.relin.is_none() && back.galois.is_empty());
    }

    #[test]
    fn damaged_or_hostile_key_sets_are_typed_errors() {
        let be = backend(257);
        let keys = keys(&be, 6);
        let bytes = keys.to_bytes(&be).unwrap();
        // Truncations and flipped payload bytes are errors, never panics.
        for cut in [0, 10, HEADER_LEN, HEADER_LEN + 1, bytes.len() - 1] {
            assert!(EvaluationKeys::from_bytes(&be, &bytes[..cut]).is_err());
        }
        for i in (HEADER_LEN..bytes.len()).step_by(97) {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(matches!(EvaluationKeys::from_bytes(&be, &b), Err(Error::Checksum { .. })), "byte {i}");
        }
        // Hostile payloads with valid checksums: a bad flag, a huge count, a duplicate key, a
        // nested length past the end, trailing bytes, another object type nested.
        let params = be.context().params();
        let make = |w: &Writer| write_object(ObjectType::GaloisKeySet, params.scheme(), params.id(), w.as_bytes());
        let mut w = Writer::new();
        w.put_u8(2);
        assert!(matches!(EvaluationKeys::from_bytes(&be, &make(&w)), Err(Error::InvalidField { .. })));
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(u32::MAX);
        assert!(matches!(EvaluationKeys::from_bytes(&be, &make(&w)), Err(Error::CountTooLarge { .. })));
        let gk = keys.galois.values().next().unwrap().to_bytes(&be).unwrap();
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(2);
        put_nested(&mut w, &gk);
        put_nested(&mut w, &gk);
        assert!(matches!(EvaluationKeys::from_bytes(&be, &make(&w)), Err(Error::InvalidField { .. })));
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(1);
        w.put_u64(u64::MAX);
        assert!(EvaluationKeys::from_bytes(&be, &make(&w)).is_err());
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(0);
        w.put_u8(0);
        assert!(matches!(EvaluationKeys::from_bytes(&be, &make(&w)), Err(Error::TrailingBytes { .. })));
        let rk = keys.relin.as_ref().unwrap().to_bytes(&be).unwrap();
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(1);
        put_nested(&mut w, &rk);
        assert!(matches!(EvaluationKeys::from_bytes(&be, &make(&w)), Err(Error::ObjectTypeMismatch { .. })));
        // Keys of another parameter set.
        assert!(matches!(EvaluationKeys::from_bytes(&backend(641), &bytes), Err(Error::ParameterMismatch { .. })));
    }
}
