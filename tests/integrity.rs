//! The wire format's integrity check: random single-byte and single-bit mutations of valid
//! objects (deterministic seed), every one rejected, each with the error its position calls for.
//!
//! Positions fall in four classes (see `wgfhe::serial`):
//!
//! | bytes | field | error |
//! |---|---|---|
//! | 0..4 | magic | `BadMagic` |
//! | 4..6 | version | `UnsupportedVersion { version }`, or `LengthMismatch` when the new version is 1 (the length is then read against a 24-byte header) |
//! | 16..24 | payload length | `LengthMismatch { declared, actual }` |
//! | everything else (object type, scheme, parameter id, checksum, payload) | | `Checksum { expected, found }` |
//!
//! Each object is mutated in place and restored, never re-encrypted: 10^5 byte and 10^5 bit
//! mutations for a seeded ciphertext, a (seeded) relinearisation key and a plaintext, 10^4 of
//! each for the other objects (10^3 for the relinearisation key loaded expanded); then every
//! header byte of every object XORed with each of the 255 non-zero masks. Version-1 objects
//! still load, unchecked (objects built here by rewriting version-2 bytes; the bytes of the real
//! version-1 writer are the golden objects of `tests/golden.rs`).

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::CpuBackend;
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant};
use wgfhe::params::{self, Parameters, TestRing};
use wgfhe::rlwe::{GaloisKey, KeyForm, PublicKey, RelinKey, SecretKey};
use wgfhe::serial::{checksum, HEADER_LEN, HEADER_LEN_V1};
use wgfhe::{Error, Result};

const BIG: usize = 100_000;
const SMALL: usize = 10_000;

fn setup() -> (Bgv<CpuBackend>, SecretKey<CpuBackend>) {
    let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    let bgv = Bgv::cpu(&p).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
    (bgv, sk)
}

fn values(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| (i * 31 + 7) % 65537).collect()
}

/// How many mutations got each error.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    bad_magic: usize,
    version: usize,
    version_to_1: usize,
    version_to_2: usize,
    length: usize,
    checksum: usize,
}

impl Tally {
    fn total(&self) -> usize {
        self.bad_magic + self.version + self.version_to_1 + self.version_to_2 + self.length + self.checksum
    }
}

/// The error a mutation of `original` into `mutated` at byte `at` must get, counted in `tally`.
fn expected_error(original: &[u8], mutated: &[u8], at: usize, tally: &mut Tally) -> Error {
    let payload_len = (original.len() - HEADER_LEN) as u64;
    match at {
        0..4 => {
            tally.bad_magic += 1;
            Error::BadMagic
        }
        4..6 => {
            let version = u16::from_le_bytes(mutated[4..6].try_into().unwrap());
            if version == 1 {
                tally.version_to_1 += 1;
                Error::LengthMismatch { declared: payload_len, actual: payload_len + 4 }
            } else if version == 2 {
                // Version 2 has version 3's header: the checksum (over the header) fails.
                tally.version_to_2 += 1;
                Error::Checksum {
                    expected: u32::from_le_bytes(mutated[24..28].try_into().unwrap()),
                    found: checksum(&mutated[..24], &mutated[HEADER_LEN..]),
                }
            } else {
                tally.version += 1;
                Error::UnsupportedVersion { version }
            }
        }
        16..24 => {
            tally.length += 1;
            Error::LengthMismatch {
                declared: u64::from_le_bytes(mutated[16..24].try_into().unwrap()),
                actual: payload_len,
            }
        }
        _ => {
            tally.checksum += 1;
            Error::Checksum {
                expected: u32::from_le_bytes(mutated[24..28].try_into().unwrap()),
                found: checksum(&mutated[..24], &mutated[HEADER_LEN..]),
            }
        }
    }
}

/// `count` single-byte mutations (a random position set to a random different value) and
/// `count` single-bit mutations of `bytes`, each loaded by `load`: every one must fail with
/// [`expected_error`]. Returns the tallies of the byte and the bit mutations.
fn mutate_all<T>(name: &str, bytes: &[u8], count: usize, seed: u64, load: impl Fn(&[u8]) -> Result<T>) -> [Tally; 2] {
    assert!(load(bytes).is_ok(), "{name}: the unmutated object loads");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut work = bytes.to_vec();
    let mut tallies = [Tally::default(), Tally::default()];
    // Expected class sizes, counted from the positions alone.
    let mut header_hits = [[0usize; 3]; 2];
    for (kind, tally) in tallies.iter_mut().enumerate() {
        for i in 0..count {
            let at = rng.random_range(0..work.len());
            let mask = if kind == 0 { rng.random_range(1..=255u8) } else { 1u8 << rng.random_range(0..8) };
            work[at] ^= mask;
            let want = expected_error(bytes, &work, at, tally);
            // `None`: the mutated object loaded.
            let got = load(&work).err();
            let what = ["byte", "bit"][kind];
            assert_eq!(got, Some(want), "{name}: mutation {i} ({what}) at byte {at}, mask {mask:#04x}");
            work[at] ^= mask;
            match at {
                0..4 => header_hits[kind][0] += 1,
                4..6 => header_hits[kind][1] += 1,
                16..24 => header_hits[kind][2] += 1,
                _ => {}
            }
        }
    }
    assert_eq!(work, bytes);
    for (kind, t) in tallies.iter().enumerate() {
        let [magic, version, length] = header_hits[kind];
        assert_eq!(t.total(), count, "{name}");
        assert_eq!(t.bad_magic, magic, "{name}");
        assert_eq!(t.version + t.version_to_1 + t.version_to_2, version, "{name}");
        assert_eq!(t.length, length, "{name}");
        assert_eq!(t.checksum, count - magic - version - length, "{name}");
        // Version 3 = [3, 0]: a single flipped bit turns it into version 1 or 2 only at byte 4.
        if kind == 1 {
            assert!(t.version_to_1 + t.version_to_2 <= version, "{name}");
        }
    }
    eprintln!("{name} ({} bytes): byte mutations {:?}, bit mutations {:?}", bytes.len(), tallies[0], tallies[1]);
    sweep_header(name, bytes, &load);
    tallies
}

/// Every byte of the header XORed with every non-zero mask (28 * 255 mutations): the exact
/// error of each, and the exact count of each class.
fn sweep_header<T>(name: &str, bytes: &[u8], load: &impl Fn(&[u8]) -> Result<T>) {
    let mut work = bytes.to_vec();
    let mut tally = Tally::default();
    for at in 0..HEADER_LEN {
        for mask in 1..=255u8 {
            work[at] ^= mask;
            let want = expected_error(bytes, &work, at, &mut tally);
            assert_eq!(load(&work).err(), Some(want), "{name}: header byte {at}, mask {mask:#04x}");
            work[at] ^= mask;
        }
    }
    // Version 3 = [3, 0]: only byte 4 set to 1 reads as version 1, set to 2 as version 2.
    let want = Tally {
        bad_magic: 4 * 255,
        version: 2 * 255 - 2,
        version_to_1: 1,
        version_to_2: 1,
        length: 8 * 255,
        checksum: 14 * 255,
    };
    assert_eq!(tally, want, "{name}");
}

#[test]
fn every_mutated_ciphertext_is_rejected() {
    let (bgv, sk) = setup();
    let ct = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&values(1024)).unwrap()).unwrap();
    let seeded = bgv.ciphertext_to_bytes(&ct).unwrap();
    let [bytes, bits] = mutate_all("seeded ciphertext", &seeded, BIG, 1, |b| bgv.ciphertext_from_bytes(b));
    // Nearly every position is checksummed: at least 99% of the mutations of a 4 KiB+ object.
    assert!(bytes.checksum * 100 > 99 * BIG && bits.checksum * 100 > 99 * BIG);
    let unseeded = bgv.ciphertext_to_bytes_unseeded(&ct).unwrap();
    mutate_all("ciphertext", &unseeded, SMALL, 2, |b| bgv.ciphertext_from_bytes(b));
    let packed = bgv.ciphertext_to_bytes_packed(&bgv.mod_switch(&ct, 1).unwrap()).unwrap();
    mutate_all("packed ciphertext", &packed, SMALL, 3, |b| bgv.ciphertext_from_bytes(b));
    let bxt = Bxt::new(&bgv, Variant::Cs);
    let cs = bxt.to_bytes(&bxt.encrypt(&sk, &bgv.encoder().encode(&values(8)).unwrap()).unwrap()).unwrap();
    mutate_all("BXT cs ciphertext", &cs, SMALL, 4, |b| bxt.from_bytes(b));
}

#[test]
fn every_mutated_key_is_rejected() {
    let (bgv, sk) = setup();
    let be = bgv.backend();
    let rk = bgv.gen_relin_key(&sk).unwrap().to_bytes(be).unwrap();
    mutate_all("relinearisation key", &rk, BIG, 5, |b| RelinKey::from_bytes_as(be, b, KeyForm::Seeded));
    mutate_all("relinearisation key (expanded)", &rk, SMALL / 10, 6, |b| RelinKey::from_bytes(be, b));
    let pk = bgv.gen_public_key(&sk).unwrap().to_bytes(be).unwrap();
    mutate_all("public key", &pk, SMALL, 7, |b| PublicKey::from_bytes(be, b));
    let g = bgv.column_rotation_element(1);
    let gk = bgv.gen_galois_key(&sk, g).unwrap().to_bytes(be).unwrap();
    mutate_all("Galois key", &gk, SMALL, 8, |b| GaloisKey::from_bytes_as(be, b, KeyForm::Seeded));
    let skb = sk.to_bytes(be).unwrap();
    mutate_all("secret key", &skb, SMALL, 9, |b| SecretKey::from_bytes(be, b));
}

#[test]
fn every_mutated_plaintext_and_parameter_set_is_rejected() {
    let (bgv, _) = setup();
    let pt = bgv.plaintext_to_bytes(&bgv.encoder().encode(&values(1024)).unwrap()).unwrap();
    mutate_all("plaintext", &pt, BIG, 10, |b| bgv.plaintext_from_bytes(b));
    let p = params::by_name("bgv-n13").unwrap().to_bytes();
    mutate_all("parameters bgv-n13", &p, SMALL, 11, Parameters::from_bytes);
    let ckks = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 30).unwrap();
    mutate_all("parameters (CKKS)", &ckks.to_bytes(), SMALL, 12, Parameters::from_bytes_insecure_for_tests);
}

/// A version-2 object rewritten as version 1: the checksum field dropped.
fn as_v1(v2: &[u8]) -> Vec<u8> {
    let mut b = [&v2[..24], &v2[HEADER_LEN..]].concat();
    b[4..6].copy_from_slice(&1u16.to_le_bytes());
    b
}

#[test]
fn version_1_objects_still_load_without_the_check() {
    let (bgv, sk) = setup();
    let be = bgv.backend();
    let pt = bgv.encoder().encode(&values(1024)).unwrap();
    let ct = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    for bytes in [bgv.ciphertext_to_bytes(&ct).unwrap(), bgv.ciphertext_to_bytes_unseeded(&ct).unwrap()] {
        let v1 = as_v1(&bytes);
        assert_eq!(v1.len() + HEADER_LEN - HEADER_LEN_V1, bytes.len());
        let back = bgv.ciphertext_from_bytes(&v1).unwrap();
        assert_eq!(bgv.decrypt(&sk, &back).unwrap(), pt);
    }
    let rk = bgv.gen_relin_key(&sk).unwrap();
    let back = RelinKey::from_bytes(be, &as_v1(&rk.to_bytes(be).unwrap())).unwrap();
    assert_eq!(back.to_bytes(be).unwrap(), rk.to_bytes(be).unwrap(), "loaded as v1, written as v2");
    assert_eq!(bgv.plaintext_from_bytes(&as_v1(&bgv.plaintext_to_bytes(&pt).unwrap())).unwrap(), pt);
    let p = params::by_name("bgv-n13").unwrap();
    assert_eq!(Parameters::from_bytes(&as_v1(&p.to_bytes())).unwrap(), p);
    // What version 1 lacks: a damaged residue below its modulus loads, and decrypts to garbage.
    let mut v1 = as_v1(&bgv.ciphertext_to_bytes_unseeded(&ct).unwrap());
    let last = v1.len() - 1;
    v1[last - 3] ^= 1;
    let damaged = bgv.ciphertext_from_bytes(&v1).unwrap();
    assert_ne!(bgv.decrypt(&sk, &damaged).unwrap(), pt);
    // The same damage in version 2 is caught.
    let mut v2 = bgv.ciphertext_to_bytes_unseeded(&ct).unwrap();
    let last = v2.len() - 1;
    v2[last - 3] ^= 1;
    assert!(matches!(bgv.ciphertext_from_bytes(&v2), Err(Error::Checksum { .. })));
}
