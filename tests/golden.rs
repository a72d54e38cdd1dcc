//! Golden wire objects: bytes written once by the writer of each format version (version 1 by
//! the commit before version 2 existed, version 2 by the last writer of the old generator,
//! version 3 by the current writer; see
//! `tests/data/golden/README.md` and the generator `tests/data/golden/generate.rs`), loaded by
//! today's reader. Each object must load, decrypt to the values it was made from and work as a
//! key; version-3 objects must also be written back byte for byte, so drift of either the
//! reader or the writer fails here instead of in a user's stored data. Versions 1 and 2 seed
//! their uniform halves with the old generator (ChaCha20, reduced): they must still decrypt and
//! work, and be written back as version 3 objects that load to the same values.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

use std::path::PathBuf;

use num_complex::Complex64;
use wgfhe::backend::CpuBackend;
use wgfhe::bgv::{self, Bgv};
use wgfhe::ckks::{self, Ckks, ScalePolicy};
use wgfhe::params::{self, Parameters, TestRing};
use wgfhe::rlwe::{EvaluationKeys, GaloisKey, KeyForm, PublicKey, RelinKey, SecretKey};
use wgfhe::serial::{FORMAT_VERSION, FORMAT_VERSION_V1};

fn read(version: u16, name: &str) -> Vec<u8> {
    let path: PathBuf =
        [env!("CARGO_MANIFEST_DIR"), "tests", "data", "golden", &format!("v{version}"), name].iter().collect();
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(version_of(&bytes), version, "{name} is not a version-{version} object");
    bytes
}

/// The format version, bytes 4..6 of the header (little-endian), read without the library.
fn version_of(bytes: &[u8]) -> u16 {
    u16::from_le_bytes([bytes[4], bytes[5]])
}

fn bgv_values() -> Vec<u64> {
    (0..1024u64).map(|i| (i * 31 + 7) % 65537).collect()
}

fn ckks_values() -> Vec<Complex64> {
    (0..8).map(|i| Complex64::new(f64::from(i) / 8.0, -f64::from(i) / 16.0)).collect()
}

/// `bytes` written back by the current writer must be `bytes` (version 3 only: an older
/// object is written back as version 3).
fn same_back(version: u16, name: &str, bytes: &[u8], back: &[u8]) {
    if version == FORMAT_VERSION {
        assert!(bytes == back, "{name}: the current writer no longer writes the version-3 bytes");
    } else {
        assert_eq!(version_of(back), FORMAT_VERSION, "{name}: written back as the current version");
    }
}

type BgvWriter = fn(&Bgv<CpuBackend>, &bgv::Ciphertext<CpuBackend>) -> wgfhe::Result<Vec<u8>>;
type CkksWriter = fn(&Ckks<CpuBackend>, &ckks::Ciphertext<CpuBackend>) -> wgfhe::Result<Vec<u8>>;

fn bgv_objects(version: u16) {
    let p = Parameters::from_bytes_insecure_for_tests(&read(version, "bgv_params.bin")).unwrap();
    let want = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    assert_eq!(p, want, "v{version} BGV parameters");
    let n13 = Parameters::from_bytes(&read(version, "bgv_n13_params.bin")).unwrap();
    assert_eq!(n13, params::by_name("bgv-n13").unwrap(), "v{version} bgv-n13");

    let bgv: Bgv<CpuBackend> = Bgv::cpu(&p).unwrap();
    let be = bgv.backend();
    let skb = read(version, "bgv_secret_key.bin");
    let sk = SecretKey::from_bytes(be, &skb).unwrap();
    same_back(version, "secret key", &skb, &sk.to_bytes(be).unwrap());
    let values = bgv_values();
    let ptb = read(version, "bgv_plaintext.bin");
    let pt = bgv.plaintext_from_bytes(&ptb).unwrap();
    assert_eq!(bgv.encoder().decode(&pt).unwrap(), values, "v{version} plaintext");
    same_back(version, "plaintext", &ptb, &bgv.plaintext_to_bytes(&pt).unwrap());

    let decrypts = |ct: &bgv::Ciphertext<CpuBackend>, what: &str, want: &[u64]| {
        let got = bgv.encoder().decode(&bgv.decrypt(&sk, ct).unwrap()).unwrap();
        let wrong = got.iter().zip(want).position(|(g, w)| g != w);
        assert!(got.len() == want.len() && wrong.is_none(), "v{version} {what}: slot {wrong:?} differs");
    };
    let mut cts = Vec::new();
    for (name, write) in [
        ("bgv_ciphertext_seeded.bin", Bgv::ciphertext_to_bytes as BgvWriter),
        ("bgv_ciphertext.bin", Bgv::ciphertext_to_bytes_unseeded),
        ("bgv_ciphertext_packed.bin", Bgv::ciphertext_to_bytes_packed),
    ] {
        let bytes = read(version, name);
        let ct = bgv.ciphertext_from_bytes(&bytes).unwrap();
        decrypts(&ct, name, &values);
        let back = write(&bgv, &ct).unwrap();
        same_back(version, name, &bytes, &back);
        // Written back (as version 3), it loads to the same values.
        decrypts(&bgv.ciphertext_from_bytes(&back).unwrap(), &format!("{name} written back"), &values);
        cts.push(ct);
    }

    // The relinearisation key relinearises a square; the public key encrypts; the Galois key
    // acts as one generated today from the same secret key does.
    let rkb = read(version, "bgv_relin_key.bin");
    let rk = RelinKey::from_bytes(be, &rkb).unwrap();
    let back = rk.to_bytes(be).unwrap();
    same_back(version, "relinearisation key", &rkb, &back);
    // The key written back (an old key keeps its generator's id), loaded in the seeded form,
    // relinearises.
    let rk = RelinKey::from_bytes_as(be, &back, KeyForm::Seeded).unwrap();
    let keys = EvaluationKeys { relin: Some(rk), ..EvaluationKeys::default() };
    let sq = bgv.mul_relin(&cts[1], &cts[1], &keys).unwrap();
    let squares: Vec<u64> = values.iter().map(|&v| v * v % 65537).collect();
    decrypts(&sq, "square relinearised with the golden key", &squares);

    let pkb = read(version, "bgv_public_key.bin");
    let pk = PublicKey::from_bytes(be, &pkb).unwrap();
    same_back(version, "public key", &pkb, &pk.to_bytes(be).unwrap());
    decrypts(&bgv.encrypt_public(&pk, &pt).unwrap(), "encrypted with the golden public key", &values);

    let gkb = read(version, "bgv_galois_key_3.bin");
    let gk = GaloisKey::from_bytes(be, &gkb).unwrap();
    same_back(version, "Galois key", &gkb, &gk.to_bytes(be).unwrap());
    let golden = EvaluationKeys { galois: [(3, gk)].into_iter().collect(), ..EvaluationKeys::default() };
    let fresh = EvaluationKeys {
        galois: [(3, bgv.gen_galois_key(&sk, 3).unwrap())].into_iter().collect(),
        ..EvaluationKeys::default()
    };
    let a = bgv.encoder().decode(&bgv.decrypt(&sk, &bgv.apply_galois(&cts[1], 3, &golden, "g").unwrap()).unwrap());
    let b = bgv.encoder().decode(&bgv.decrypt(&sk, &bgv.apply_galois(&cts[1], 3, &fresh, "g").unwrap()).unwrap());
    assert_eq!(a.unwrap(), b.unwrap(), "v{version} Galois key 3");
}

fn ckks_objects(version: u16) {
    let p = Parameters::from_bytes_insecure_for_tests(&read(version, "ckks_params.bin")).unwrap();
    let want = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30).unwrap();
    assert_eq!(p, want, "v{version} CKKS parameters");
    let ckks: Ckks<CpuBackend> = Ckks::cpu(&p, ScalePolicy::Single).unwrap();
    let be = ckks.backend();
    let skb = read(version, "ckks_secret_key.bin");
    let sk = SecretKey::from_bytes(be, &skb).unwrap();
    same_back(version, "CKKS secret key", &skb, &sk.to_bytes(be).unwrap());
    let values = ckks_values();
    // A fresh encryption at scale 2^30 over N = 1024 carries an error of about 2^-20 a slot (a
    // product rescaled about 2^-18); a wrongly read limb or scale is off by far more than 2^-12.
    let close = |got: &[Complex64], want: &[Complex64], what: &str| {
        assert!(got.len() >= want.len(), "{what}: {} slots", got.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).norm() < 2f64.powi(-12), "v{version} {what}: {g} vs {w}");
        }
    };
    let rkb = read(version, "ckks_relin_key.bin");
    let rk = RelinKey::from_bytes(be, &rkb).unwrap();
    same_back(version, "CKKS relinearisation key", &rkb, &rk.to_bytes(be).unwrap());
    let keys = EvaluationKeys { relin: Some(rk), ..EvaluationKeys::default() };
    // Version 1 had no CKKS plaintext or ciphertext objects (they came with version 2): its
    // plaintext is encoded here, the rest is read.
    let pt = if version == FORMAT_VERSION_V1 {
        ckks.encode(&values, ckks.default_scale(), 8, ckks.max_level()).unwrap()
    } else {
        let ptb = read(version, "ckks_plaintext.bin");
        let pt = ckks.plaintext_from_bytes(&ptb).unwrap();
        same_back(version, "CKKS plaintext", &ptb, &ckks.plaintext_to_bytes(&pt).unwrap());
        for (name, write) in [
            ("ckks_ciphertext_seeded.bin", Ckks::ciphertext_to_bytes as CkksWriter),
            ("ckks_ciphertext.bin", Ckks::ciphertext_to_bytes_unseeded),
        ] {
            let bytes = read(version, name);
            let ct = ckks.ciphertext_from_bytes(&bytes).unwrap();
            close(&ckks.decrypt(&sk, &ct).unwrap(), &values, name);
            same_back(version, name, &bytes, &write(&ckks, &ct).unwrap());
        }
        pt
    };
    let ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
    close(&ckks.decrypt(&sk, &ct).unwrap(), &values, "the plaintext encrypted under the golden key");
    let sq = ckks.rescale(&ckks.mul_relin(&ct, &ct, &keys).unwrap()).unwrap();
    let squares: Vec<Complex64> = values.iter().map(|v| v * v).collect();
    close(&ckks.decrypt(&sk, &sq).unwrap(), &squares, "a square relinearised with the golden key");
}

#[test]
fn version_1_bgv_objects_load_and_work() {
    bgv_objects(FORMAT_VERSION_V1);
}

#[test]
fn version_2_bgv_objects_of_the_old_generator_load_and_work() {
    bgv_objects(2);
}

#[test]
fn version_3_bgv_objects_load_work_and_write_back_byte_for_byte() {
    bgv_objects(FORMAT_VERSION);
}

#[test]
fn version_1_ckks_objects_load_and_work() {
    ckks_objects(FORMAT_VERSION_V1);
}

#[test]
fn version_2_ckks_objects_of_the_old_generator_load_and_work() {
    ckks_objects(2);
}

#[test]
fn version_3_ckks_objects_load_work_and_write_back_byte_for_byte() {
    ckks_objects(FORMAT_VERSION);
}
