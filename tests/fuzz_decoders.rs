//! A bounded fuzz harness for every decoder, on stable Rust inside `cargo test`.
//!
//! Each public entry point that reads untrusted bytes or text gets random and mutation-based
//! inputs from a deterministic generator, and must return a typed error or a valid object, never
//! panic (a panic is caught and reported with the target, iteration and the input's first bytes):
//!
//! | target | entry point |
//! |---|---|
//! | `read_object` | [`serial::read_object`] for every object type |
//! | `read_residues` | [`serial::read_residues`] (plain and packed blocks) |
//! | `parameters` | [`Parameters::from_bytes`], [`Parameters::from_bytes_insecure_for_tests`] (a loaded set must re-serialise to the input) |
//! | `secret_key`, `public_key`, `relin_key`, `galois_key` | `from_bytes` and `from_bytes_as` (both [`KeyForm`]s), BGV and CKKS keys |
//! | `ciphertext`, `plaintext` | [`Bgv::ciphertext_from_bytes`] (words, packed, seeded), [`Bgv::plaintext_from_bytes`] |
//! | `bxt` | [`Bxt::from_bytes`] under `cs` |
//! | `literal_json` | [`ParametersLiteral::from_json`], then [`Parameters::new_insecure_for_tests`] |
//! | `variant` | [`Variant::parse`] |
//!
//! The MNIST application's readers (models' JSON, IDX files) are fuzzed by the same harness
//! (`common/fuzz.rs`) in `mnist/tests/fuzz_models.rs`.
//!
//! Inputs: the valid objects of every kind (each target also gets the others' bytes), mutated by
//! 1 to 4 of: bit flips, random bytes, interesting values (0, 1, `u32::MAX`, `u64::MAX`, the
//! ring's primes and their neighbours, ...) written over 1, 2, 4 or 8 bytes, truncation,
//! extension, deletion and duplication of a range, or splicing two seeds; plus purely random
//! inputs. Half the mutated wire objects get their length field and checksum recomputed
//! ([`serial::update_checksum`]) so that the payload parsers behind the checksum are reached, not
//! only the checksum check. JSON inputs are mutated as bytes and as tokens (numbers replaced by
//! extreme ones, elements dropped or repeated).
//!
//! Budget: `WGFHE_FUZZ_ITERS` inputs per target (default 5,000; the whole file takes seconds in
//! release mode). After a format change, add the new entry point to [`targets`] and its valid
//! objects to the seeds, and run a longer campaign once, e.g.
//! `WGFHE_FUZZ_ITERS=200000 WGFHE_FUZZ_SEED=7 cargo test --release --test fuzz_decoders`.
//! Debug builds (`cargo test --test fuzz_decoders`) also check integer overflow.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

#[path = "common/fuzz.rs"]
mod fuzz;

use fuzz::{fuzz, fuzz_json};
use wgfhe::backend::CpuBackend;
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::compress::{Bxt, Variant};
use wgfhe::math::zq::Modulus;
use wgfhe::params::{self, Parameters, ParametersLiteral, TestRing};
use wgfhe::rlwe::KeyRequest;
use wgfhe::rlwe::{EvaluationKeys, GaloisKey, KeyForm, PublicKey, RelinKey, SecretKey};
use wgfhe::serial::{self, ObjectType, Reader};
use wgfhe::Result;

const RING: TestRing = TestRing { log_n: 6, q_primes: 3, p_primes: 1, dnum: 3 };

struct Objects {
    bgv: Bgv<CpuBackend>,
    ckks: Ckks<CpuBackend>,
    params: Parameters,
    primes: Vec<u64>,
    /// Valid objects by target: parameters, secret, public, relinearisation and Galois keys,
    /// plaintexts, ciphertexts, BXT ciphertexts, evaluation key sets, CKKS plaintexts and
    /// ciphertexts.
    wire: Vec<Vec<Vec<u8>>>,
}

fn objects() -> Objects {
    let p = params::insecure_test_bgv(RING, 65537).unwrap();
    let bgv = Bgv::cpu(&p).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[5; 32]).unwrap();
    let be = bgv.backend();
    let pt = bgv.encoder().encode(&(0..64).collect::<Vec<u64>>()).unwrap();
    let ct = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    let sq = bgv.mul(&ct, &ct).unwrap();
    let bxt = Bxt::new(&bgv, Variant::Cs);
    let bxt_ct = bxt.encrypt(&sk, &pt).unwrap();
    let cp = params::insecure_test_ckks(RING, 30).unwrap();
    let ckks = Ckks::cpu(&cp, ScalePolicy::Single).unwrap();
    let csk = ckks.gen_secret_key_from_seed(&[6; 32]).unwrap();
    let cbe = ckks.backend();
    let cpt = ckks.encode_real(&[0.5, -1.5, 2.25]).unwrap();
    let cct = ckks.encrypt_symmetric(&csk, &cpt).unwrap();
    let wire = vec![
        vec![p.to_bytes(), cp.to_bytes()],
        vec![sk.to_bytes(be).unwrap(), csk.to_bytes(cbe).unwrap()],
        vec![
            bgv.gen_public_key(&sk).unwrap().to_bytes(be).unwrap(),
            ckks.gen_public_key(&csk).unwrap().to_bytes(cbe).unwrap(),
        ],
        vec![
            bgv.gen_relin_key(&sk).unwrap().to_bytes(be).unwrap(),
            ckks.gen_relin_key(&csk).unwrap().to_bytes(cbe).unwrap(),
        ],
        vec![bgv.gen_galois_key(&sk, bgv.column_rotation_element(1)).unwrap().to_bytes(be).unwrap()],
        vec![bgv.plaintext_to_bytes(&pt).unwrap()],
        vec![
            bgv.ciphertext_to_bytes(&ct).unwrap(),
            bgv.ciphertext_to_bytes_unseeded(&ct).unwrap(),
            bgv.ciphertext_to_bytes_packed(&bgv.mod_switch(&ct, 1).unwrap()).unwrap(),
            bgv.ciphertext_to_bytes(&sq).unwrap(),
        ],
        vec![bxt.to_bytes(&bxt_ct).unwrap()],
        vec![
            bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]).with_row_swap()).unwrap().to_bytes(be).unwrap(),
            ckks.gen_evaluation_keys(&csk, &KeyRequest::rotations(&[1])).unwrap().to_bytes(cbe).unwrap(),
        ],
        vec![ckks.plaintext_to_bytes(&cpt).unwrap()],
        vec![
            ckks.ciphertext_to_bytes(&cct).unwrap(),
            ckks.ciphertext_to_bytes_unseeded(&cct).unwrap(),
            ckks.ciphertext_to_bytes(&ckks.mul(&cct, &cct).unwrap()).unwrap(),
        ],
    ];
    let primes = p.literal().q.iter().chain(&p.literal().p).copied().chain([65537]).collect();
    Objects { bgv, ckks, params: p, primes, wire }
}

#[test]
fn wire_decoders_never_panic() {
    let o = objects();
    let (be, cbe) = (o.bgv.backend(), o.ckks.backend());
    let all: Vec<Vec<u8>> = o.wire.concat();
    let primes = &o.primes[..];
    let [params_seeds, sk_seeds, pk_seeds, rk_seeds, gk_seeds, pt_seeds, ct_seeds, bxt_seeds, set_seeds, cpt_seeds, cct_seeds] =
        &o.wire[..]
    else {
        panic!("eleven seed groups")
    };
    fuzz("read_object", &all, &all, primes, true, |b| {
        let mut last = Ok(());
        for t in 1..=10u8 {
            last = serial::read_object(b, ObjectType::try_from(t)?).map(drop);
            if last.is_ok() {
                break;
            }
        }
        last
    });
    let moduli: Vec<Modulus> = primes.iter().map(|&q| Modulus::new(q).unwrap()).collect();
    // Residue blocks: the first byte is N (below 70), then the block; plain and packed seeds.
    let mut blocks = Vec::new();
    for n in [0usize, 1, 7, 64] {
        let data: Vec<u32> = (0..moduli.len() * n).map(|i| (i as u32 * 7919) % moduli[i / n].value()).collect();
        let mut w = serial::Writer::new();
        w.put_u8(n as u8);
        w.put_residues(&data);
        blocks.push(w.into_bytes());
        let mut w = serial::Writer::new();
        w.put_u8(n as u8);
        serial::write_residues_packed(&mut w, &data, &moduli, n).unwrap();
        blocks.push(w.into_bytes());
    }
    fuzz("read_residues", &blocks, &blocks, primes, false, |b| {
        let n = usize::from(b.first().copied().unwrap_or(0) % 70);
        let mut r = Reader::new(b.get(1..).unwrap_or(&[]));
        let v = serial::read_residues(&mut r, &moduli, n)?;
        assert_eq!(v.len(), moduli.len() * n);
        assert!(v.iter().enumerate().all(|(i, &x)| x < moduli[i / n.max(1)].value()));
        Ok(())
    });
    fuzz("parameters", params_seeds, &all, primes, true, |b| {
        let secure = Parameters::from_bytes(b);
        let p = Parameters::from_bytes_insecure_for_tests(b)?;
        if let Ok(s) = secure {
            assert_eq!(s, p);
        }
        // A loaded current-version set is canonical: it writes the bytes it was read from.
        if b[4] == 2 {
            assert_eq!(p.to_bytes(), b);
        }
        Ok(())
    });
    // Keys: each input goes to the BGV and the CKKS backend; the result reported is the one of
    // the backend whose parameters the input names.
    let either = |a: Result<()>, b: Result<()>| if a.is_ok() { a } else { b.or(a) };
    fuzz("secret_key", sk_seeds, &all, primes, true, |b| {
        either(SecretKey::from_bytes(be, b).map(drop), SecretKey::from_bytes(cbe, b).map(drop))
    });
    fuzz("public_key", pk_seeds, &all, primes, true, |b| {
        either(PublicKey::from_bytes(be, b).map(drop), PublicKey::from_bytes(cbe, b).map(drop))
    });
    fuzz("relin_key", rk_seeds, &all, primes, true, |b| {
        let seeded = RelinKey::from_bytes_as(be, b, KeyForm::Seeded).map(drop);
        let expanded = RelinKey::from_bytes(be, b).map(drop);
        assert_eq!(seeded.is_ok(), expanded.is_ok(), "both forms accept the same bytes");
        either(expanded, RelinKey::from_bytes(cbe, b).map(drop))
    });
    fuzz("galois_key", gk_seeds, &all, primes, true, |b| {
        let seeded = GaloisKey::from_bytes_as(be, b, KeyForm::Seeded).map(drop);
        let expanded = GaloisKey::from_bytes(be, b).map(drop);
        assert_eq!(seeded.is_ok(), expanded.is_ok(), "both forms accept the same bytes");
        expanded
    });
    fuzz("plaintext", pt_seeds, &all, primes, true, |b| o.bgv.plaintext_from_bytes(b).map(drop));
    fuzz("ciphertext", ct_seeds, &all, primes, true, |b| o.bgv.ciphertext_from_bytes(b).map(drop));
    let bxt = Bxt::new(&o.bgv, Variant::Cs);
    fuzz("bxt", bxt_seeds, &all, primes, true, |b| bxt.from_bytes(b).map(drop));
    fuzz("key_set", set_seeds, &all, primes, true, |b| {
        let seeded = EvaluationKeys::from_bytes_as(be, b, KeyForm::Seeded).map(drop);
        let expanded = EvaluationKeys::from_bytes(be, b).map(drop);
        assert_eq!(seeded.is_ok(), expanded.is_ok(), "both forms accept the same bytes");
        either(expanded, EvaluationKeys::from_bytes(cbe, b).map(drop))
    });
    fuzz("ckks_plaintext", cpt_seeds, &all, primes, true, |b| o.ckks.plaintext_from_bytes(b).map(drop));
    fuzz("ckks_ciphertext", cct_seeds, &all, primes, true, |b| o.ckks.ciphertext_from_bytes(b).map(drop));
    assert!(o.params.is_insecure());
}

#[test]
fn json_and_text_readers_never_panic() {
    let literals: Vec<String> = params::shipped().iter().take(3).map(|l| l.to_json().unwrap()).collect();
    fuzz_json("literal_json", &literals, |s| {
        let lit = ParametersLiteral::from_json(s)?;
        assert_eq!(ParametersLiteral::from_json(&lit.to_json()?)?, lit);
        Parameters::new_insecure_for_tests(lit).map(drop)
    });
    fuzz_json("variant", &["cso+k".into(), "baseline".into()], |s| Variant::parse(s).map(drop));
}
