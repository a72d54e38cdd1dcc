//! CKKS on the wire, the parts bootstrapping needs: packed ciphertexts and the `BootKeys`
//! object (evaluation keys at their levels and the sparse-secret switching keys), on the small
//! insecure ring `insecure_test_ckks_boot(10)`. Round trips give the same words (a bootstrap
//! with loaded keys equals one with the original keys); damaged and hostile objects are typed
//! errors, never panics or large allocations.

#![expect(clippy::unwrap_used, reason = "tests")]

use num_complex::Complex64;
use wgfhe::backend::CpuBackend;
use wgfhe::ckks::{BootConfig, BootKeys, Bootstrapper, Ciphertext, Ckks, ScalePolicy};
use wgfhe::params;
use wgfhe::rlwe::KeyForm;
use wgfhe::rlwe::KeyRequest;
use wgfhe::serial::{update_checksum, write_object, ObjectType, Scheme, Writer, HEADER_LEN};
use wgfhe::Error;

fn ring(log_n: u32) -> Ckks<CpuBackend> {
    Ckks::cpu(&params::insecure_test_ckks_boot(log_n).unwrap(), ScalePolicy::Double).unwrap()
}

fn words(ckks: &Ckks<CpuBackend>, ct: &Ciphertext<CpuBackend>) -> Vec<Vec<u32>> {
    ct.polys().iter().map(|p| p.to_host(ckks.backend()).unwrap()).collect()
}

#[test]
fn packed_ciphertexts_round_trip_to_the_same_words() {
    let ckks = ring(10);
    let sk = ckks.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let values = vec![Complex64::new(0.5, -0.25); 64];
    let pt = ckks.encode(&values, ckks.default_scale(), 64, ckks.max_level()).unwrap();
    let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
    let sq = ckks.mul(&ct, &ct).unwrap();
    for c in [&ct, &sq] {
        let plain = ckks.ciphertext_to_bytes(c).unwrap();
        let packed = ckks.ciphertext_to_bytes_packed(c).unwrap();
        assert_eq!(packed[6], plain[6], "seeded exactly when the plain form is");
        assert!(packed.len() < plain.len(), "{} vs {}", packed.len(), plain.len());
        let back = ckks.ciphertext_from_bytes(&packed).unwrap();
        assert_eq!(
            (back.level(), back.degree(), back.scale(), back.slots()),
            (c.level(), c.degree(), c.scale(), c.slots())
        );
        assert_eq!(words(&ckks, &back), words(&ckks, c));
        assert_eq!(ckks.ciphertext_to_bytes_packed(&back).unwrap(), packed);
        // Truncations, flipped bytes.
        for cut in (0..packed.len()).step_by(97).chain([HEADER_LEN - 1, HEADER_LEN, packed.len() - 1]) {
            assert!(ckks.ciphertext_from_bytes(&packed[..cut]).is_err(), "cut {cut}");
        }
        for i in (HEADER_LEN..packed.len()).step_by(211) {
            let mut b = packed.clone();
            b[i] ^= 0x10;
            assert!(matches!(ckks.ciphertext_from_bytes(&b), Err(Error::Checksum { .. })), "byte {i}");
        }
    }
    // A packed residue at or above its prime (all ones in its bits), resealed: the first
    // residue of the unseeded product sits after level, degree, scale, slots, the
    // representation tag and the block's mode byte.
    let mut b = ckks.ciphertext_to_bytes_packed(&sq).unwrap();
    assert_eq!(b[6], ObjectType::Ciphertext.tag());
    let first = HEADER_LEN + 4 + 1 + 8 + 4 + 1;
    assert_eq!(b[first], 1, "packing mode 1");
    b[first + 1..first + 5].fill(0xff);
    update_checksum(&mut b).unwrap();
    assert!(matches!(ckks.ciphertext_from_bytes(&b), Err(Error::ResidueOutOfRange { limb: 0, index: 0 })));
    // An unknown packing mode.
    let mut b = ckks.ciphertext_to_bytes_packed(&sq).unwrap();
    b[first] = 7;
    update_checksum(&mut b).unwrap();
    assert!(matches!(ckks.ciphertext_from_bytes(&b), Err(Error::UnknownPacking { mode: 7 })));
}

#[test]
fn boot_keys_round_trip_and_bootstrap_to_the_same_words() {
    let ckks = ring(10);
    let sk = ckks.gen_secret_key_from_seed(&[5; 32]).unwrap();
    let boot = Bootstrapper::new(&ckks, BootConfig::new(128)).unwrap();
    let keys = boot.gen_keys(&ckks, &sk, Some(&[6; 32])).unwrap();
    assert!(keys.sparse.is_some(), "the default configuration uses the sparse secret");
    let plain = keys.to_bytes(&ckks).unwrap();
    let packed = keys.to_bytes_packed(&ckks).unwrap();
    assert_eq!(plain[6], ObjectType::BootKeys.tag());
    assert!(packed.len() < plain.len(), "{} vs {}", packed.len(), plain.len());
    // The lengths computed from the key plan's shapes are the real ones.
    let plan = boot.key_plan(&ckks).unwrap();
    assert_eq!(BootKeys::wire_len(&ckks, &plan, true, false).unwrap(), plain.len() as u64);
    assert_eq!(BootKeys::wire_len(&ckks, &plan, true, true).unwrap(), packed.len() as u64);
    eprintln!("BootKeys at N = 2^10, 128 slots: {} bytes plain, {} packed", plain.len(), packed.len());
    let expanded = BootKeys::from_bytes(&ckks, &packed, KeyForm::Expanded).unwrap();
    let seeded = BootKeys::from_bytes(&ckks, &plain, KeyForm::Seeded).unwrap();
    assert!(!expanded.eval.is_seeded() && seeded.eval.is_seeded());
    assert_eq!(expanded.resident_bytes(ckks.backend()), keys.resident_bytes(ckks.backend()));
    assert!(seeded.resident_bytes(ckks.backend()) < keys.resident_bytes(ckks.backend()));
    // Loaded straight into the cso+k form: seeds and bit-packed b halves.
    let held = BootKeys::from_bytes(&ckks, &plain, KeyForm::SeededPacked).unwrap();
    assert!(held.eval.is_seeded() && held.eval.is_packed() && !seeded.eval.is_packed());
    assert!(held.resident_bytes(ckks.backend()) < seeded.resident_bytes(ckks.backend()));
    for back in [&expanded, &seeded, &held] {
        assert_eq!(back.eval.galois.len(), keys.eval.galois.len());
        assert_eq!(back.to_bytes(&ckks).unwrap(), plain);
        assert_eq!(back.to_bytes_packed(&ckks).unwrap(), packed);
        let (a, b) = (keys.sparse.as_ref().unwrap(), back.sparse.as_ref().unwrap());
        assert_eq!((a.to_sparse.level(), a.to_sparse.digit_count()), (b.to_sparse.level(), b.to_sparse.digit_count()));
    }
    // The regenerated a halves are the generated ones.
    let (a, b) = (keys.eval.relin.as_ref().unwrap(), expanded.eval.relin.as_ref().unwrap());
    for (x, y) in a.0.digits.iter().zip(&b.0.digits) {
        let be = ckks.backend();
        assert_eq!(x.a.as_ref().unwrap().to_host(be).unwrap(), y.a.as_ref().unwrap().to_host(be).unwrap());
    }
    // Three bootstraps: the original keys, and the loaded seeded and seeded-packed ones (plain bytes); the expanded
    // ones from the packed bytes are checked against the original by their bytes and a halves.
    let values = vec![Complex64::new(0.25, -0.5); 128];
    let level = boot.entry_level();
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&values, ckks.default_scale(), 128, level).unwrap()).unwrap();
    let want = boot.bootstrap(&ckks, &ct, &keys).unwrap();
    let got = boot.bootstrap(&ckks, &ct, &seeded).unwrap();
    assert_eq!(words(&ckks, &got), words(&ckks, &want));
    let from_held = boot.bootstrap(&ckks, &ct, &held).unwrap();
    assert_eq!(words(&ckks, &from_held), words(&ckks, &want));
    let out = ckks.decrypt(&sk, &got).unwrap();
    let err = values.iter().zip(&out).map(|(w, g)| (w - g).norm()).fold(0.0, f64::max);
    assert!(err < 1e-3, "{err}");
}

/// A small `BootKeys` (top-level keys for two rotations and conjugation, and the sparse keys)
/// and its plain bytes.
fn small_keys(ckks: &Ckks<CpuBackend>) -> (BootKeys<CpuBackend>, Vec<u8>) {
    let sk = ckks.gen_secret_key_from_seed(&[9; 32]).unwrap();
    let eval = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, 2]).with_conjugation()).unwrap();
    let sparse = ckks.gen_sparse_secret_key(Some(&[9; 32]), 32).unwrap();
    let sparse = Some(ckks.gen_sparse_switch_keys(&sk, &sparse, ckks.sparse_key_level()).unwrap());
    let keys = BootKeys { eval, sparse };
    let bytes = keys.to_bytes(ckks).unwrap();
    (keys, bytes)
}

#[test]
fn damaged_and_hostile_boot_keys_are_typed_errors() {
    let ckks = ring(10);
    let (keys, bytes) = small_keys(&ckks);
    let load = |b: &[u8]| BootKeys::from_bytes(&ckks, b, KeyForm::Expanded);
    load(&bytes).unwrap();
    let packed = keys.to_bytes_packed(&ckks).unwrap();
    for obj in [&bytes, &packed] {
        // Truncation: every header prefix, then prefixes across the payload.
        let cuts =
            (0..=HEADER_LEN + 64).chain((HEADER_LEN + 64..obj.len()).step_by(obj.len() / 97)).chain([obj.len() - 1]);
        for cut in cuts {
            assert!(load(&obj[..cut]).is_err(), "cut {cut}");
        }
        // A flipped byte anywhere in the payload: the checksum.
        for i in (HEADER_LEN..obj.len()).step_by(obj.len() / 61) {
            let mut b = obj.clone();
            b[i] ^= 0x01;
            assert!(matches!(load(&b), Err(Error::Checksum { .. })), "byte {i}");
        }
    }
    // Another parameter set, another object type, a ciphertext loader given the keys.
    assert!(matches!(BootKeys::from_bytes(&ring(11), &bytes, KeyForm::Expanded), Err(Error::ParameterMismatch { .. })));
    let sk = ckks.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&[1.0]).unwrap()).unwrap();
    let ct_bytes = ckks.ciphertext_to_bytes(&ct).unwrap();
    assert!(matches!(load(&ct_bytes), Err(Error::ObjectTypeMismatch { .. })));
    assert!(matches!(ckks.ciphertext_from_bytes(&bytes), Err(Error::ObjectTypeMismatch { .. })));
    assert!(matches!(load(&keys.eval.to_bytes(ckks.backend()).unwrap()), Err(Error::ObjectTypeMismatch { .. })));
    // A header declaring a huge payload.
    let mut b = bytes.clone();
    b[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(update_checksum(&mut b).is_err(), "a length the bytes do not have cannot be resealed");
    assert!(matches!(load(&b), Err(Error::Checksum { .. } | Error::LengthMismatch { .. })));

    // Hostile payloads with valid checksums.
    let params = ckks.params();
    let make = |w: &Writer| write_object(ObjectType::BootKeys, Scheme::Ckks, params.id(), w.as_bytes());
    let seed = |w: &mut Writer| {
        w.put_u8(1);
        w.put_u8(32);
        w.put_bytes(&[0; 32]);
    };
    let n = params.n() as u32;
    let top = ckks.max_level() as u32;
    // Flags.
    let mut w = Writer::new();
    w.put_u8(2);
    assert!(matches!(load(&make(&w)), Err(Error::InvalidField { field: "relinearisation flag", .. })));
    let mut w = Writer::new();
    w.put_u8(0);
    w.put_u32(0);
    w.put_u8(9);
    assert!(matches!(load(&make(&w)), Err(Error::InvalidField { field: "sparse flag", .. })));
    // Empty keys are a valid object; trailing bytes are not.
    let mut w = Writer::new();
    w.put_u8(0);
    w.put_u32(0);
    w.put_u8(0);
    let empty = load(&make(&w)).unwrap();
    assert!(empty.eval.relin.is_none() && empty.eval.galois.is_empty() && empty.sparse.is_none());
    w.put_u8(0);
    assert!(matches!(load(&make(&w)), Err(Error::TrailingBytes { .. })));
    // A key level above the chain, a huge digit count, a digit count off the parameters.
    for (level, count) in [(top + 1, 1u32), (u32::MAX, 1)] {
        let mut w = Writer::new();
        w.put_u8(1);
        w.put_u32(level);
        w.put_u32(count);
        assert!(matches!(load(&make(&w)), Err(Error::LevelOutOfRange { .. })), "{level}");
    }
    let mut w = Writer::new();
    w.put_u8(1);
    w.put_u32(top);
    w.put_u32(u32::MAX);
    assert!(matches!(load(&make(&w)), Err(Error::CountTooLarge { what: "key digits", .. })));
    let mut w = Writer::new();
    w.put_u8(1);
    w.put_u32(0);
    w.put_u32(2);
    assert!(matches!(load(&make(&w)), Err(Error::CountTooLarge { .. } | Error::KeyDimensions { .. })));
    let mut w = Writer::new();
    w.put_u8(1);
    w.put_u32(top);
    w.put_u32(0);
    assert!(matches!(load(&make(&w)), Err(Error::KeyDimensions { .. })));
    // A seed of an unknown generator or length.
    let digits = keys.eval.relin.as_ref().unwrap().0.digits.len() as u32;
    for (generator, len, want) in [(3u8, 32u8, "generator"), (1, 31, "length")] {
        let mut w = Writer::new();
        w.put_u8(1);
        w.put_u32(top);
        w.put_u32(digits);
        w.put_u8(generator);
        w.put_u8(len);
        w.put_bytes(&[0; 32]);
        let e = load(&make(&w)).unwrap_err();
        assert!(matches!(e, Error::UnknownGenerator { .. } | Error::BadSeedLength { .. }), "{want}: {e:?}");
    }
    // A key block that ends before its residues: truncated, not allocated.
    let mut w = Writer::new();
    w.put_u8(1);
    w.put_u32(top);
    w.put_u32(digits);
    seed(&mut w);
    w.put_u8(0);
    assert!(matches!(load(&make(&w)), Err(Error::Truncated { .. })));
    // Galois keys: a huge count, an even element, one beyond 2N, one given twice.
    let mut w = Writer::new();
    w.put_u8(0);
    w.put_u32(u32::MAX);
    assert!(matches!(load(&make(&w)), Err(Error::CountTooLarge { what: "Galois keys", .. })));
    for g in [4u64, 2 * u64::from(n) + 1, u64::MAX] {
        let mut w = Writer::new();
        w.put_u8(0);
        w.put_u32(1);
        w.put_u64(g);
        assert!(matches!(load(&make(&w)), Err(Error::InvalidField { field: "galois element", .. })), "{g}");
    }
    // The same Galois key twice: cut one key's block out of the real object and repeat it.
    let small = BootKeys { eval: ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap(), sparse: None };
    let one = small.to_bytes(&ckks).unwrap();
    let mut single = one[HEADER_LEN..].to_vec();
    // relin flag 1 + relin block, then the count; find the Galois part from the tail: count u32,
    // element and key block, sparse flag.
    let relin_len = {
        let r = BootKeys {
            eval: wgfhe::rlwe::EvaluationKeys { relin: small.eval.relin, galois: Default::default() },
            sparse: None,
        };
        r.to_bytes(&ckks).unwrap().len() - HEADER_LEN - 4 - 1
    };
    let galois_block = single[relin_len + 4..single.len() - 1].to_vec();
    single.truncate(relin_len);
    single.extend_from_slice(&2u32.to_le_bytes());
    single.extend_from_slice(&galois_block);
    single.extend_from_slice(&galois_block);
    single.push(0);
    let b = write_object(ObjectType::BootKeys, Scheme::Ckks, params.id(), &single);
    assert!(
        matches!(load(&b), Err(Error::InvalidField { field: "galois element", reason }) if reason.contains("twice"))
    );
    // The dense-to-sparse block: a level above the chain, a digit count off its level.
    let full = &bytes[HEADER_LEN..];
    // The real object ends with the dense-to-sparse block: level, count, seed (34 bytes) and
    // its residue blocks; find its start from its size.
    let to_sparse = &keys.sparse.as_ref().unwrap().to_sparse;
    let limbs = to_sparse.level() + 1;
    let block = 4 + 4 + 34 + to_sparse.digit_count() * (1 + 4 * limbs * params.n());
    let start = full.len() - block;
    assert_eq!(u32::from_le_bytes(full[start..start + 4].try_into().unwrap()) as usize, to_sparse.level());
    let with = |level: u32, count: u32| {
        let mut p = full.to_vec();
        p[start..start + 4].copy_from_slice(&level.to_le_bytes());
        p[start + 4..start + 8].copy_from_slice(&count.to_le_bytes());
        load(&write_object(ObjectType::BootKeys, Scheme::Ckks, params.id(), &p))
    };
    let good = to_sparse.digit_count() as u32;
    assert!(matches!(with(top + 1, good), Err(Error::LevelOutOfRange { .. })));
    assert!(matches!(with(u32::MAX, good), Err(Error::LevelOutOfRange { .. })));
    assert!(matches!(
        with(to_sparse.level() as u32, u32::MAX),
        Err(Error::CountTooLarge { what: "sparse key digits", .. })
    ));
    assert!(matches!(with(to_sparse.level() as u32, good - 1), Err(Error::KeyDimensions { .. })));
    // One level lower with its own digit count: the blocks no longer line up (an error).
    let lower = (to_sparse.level() as u32 - 1, good / limbs as u32 * (limbs as u32 - 1));
    assert!(with(lower.0, lower.1).is_err());
    // A residue at or above its prime in the first b of the dense-to-sparse key.
    let mut p = full.to_vec();
    assert_eq!(p[start + 42], 0, "plain residues");
    p[start + 43..start + 47].copy_from_slice(&u32::MAX.to_le_bytes());
    let b = write_object(ObjectType::BootKeys, Scheme::Ckks, params.id(), &p);
    assert!(matches!(load(&b), Err(Error::ResidueOutOfRange { limb: 0, index: 0 })));
    // And in the first b of the relinearisation key: after the flag, level, count and seed.
    let mut p = full.to_vec();
    let first = 1 + 4 + 4 + 34;
    assert_eq!(p[first], 0);
    p[first + 1..first + 5].copy_from_slice(&u32::MAX.to_le_bytes());
    let b = write_object(ObjectType::BootKeys, Scheme::Ckks, params.id(), &p);
    assert!(matches!(load(&b), Err(Error::ResidueOutOfRange { limb: 0, index: 0 })));
    // The secure set's 128-bit rule for the dense-to-sparse level is the one loading applies
    // (`check_sparse_key_level`, tested on `ckks-boot-n16` in the library's sparse tests).
    let p = params::by_name(params::CKKS_BOOT_SET).unwrap();
    assert!(wgfhe::ckks::sparse::check_sparse_key_level(&p, 3, 32).is_err());
}
