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
//! | `lr_json`, `cnn_json` | [`QuantLr::from_json`], [`QuantCnn::from_json`] (a loaded model must round-trip) |
//! | `idx` | [`mnist::read_idx_images`], [`mnist::read_idx_labels`] |
//! | `variant` | [`Variant::parse`] |
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

use std::panic::{catch_unwind, AssertUnwindSafe};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::CpuBackend;
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::compress::{Bxt, Variant};
use wgfhe::math::zq::Modulus;
use wgfhe::ml::cnn::{QuantCnn, Requant, CLASSES, POSITIONS, TAPS};
use wgfhe::ml::lr::QuantLr;
use wgfhe::ml::mnist;
use wgfhe::params::{self, Parameters, ParametersLiteral, TestRing};
use wgfhe::rlwe::{EvaluationKeys, GaloisKey, KeyForm, PublicKey, RelinKey, SecretKey};
use wgfhe::serial::{self, ObjectType, Reader, HEADER_LEN};
use wgfhe::Result;

const RING: TestRing = TestRing { log_n: 6, q_primes: 3, p_primes: 1, dnum: 3 };

fn iterations() -> usize {
    std::env::var("WGFHE_FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(5000)
}

fn base_seed() -> u64 {
    std::env::var("WGFHE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed)
}

/// Values worth writing over a field.
fn interesting(rng: &mut ChaCha8Rng, primes: &[u64]) -> u64 {
    const FIXED: [u64; 14] = [0, 1, 2, 3, 7, 8, 31, 32, 255, 256, 65535, 65537, u32::MAX as u64, u64::MAX];
    match rng.random_range(0..4) {
        0 if !primes.is_empty() => {
            let q = primes[rng.random_range(0..primes.len())];
            [q - 1, q, q + 1][rng.random_range(0..3)]
        }
        1 => 1u64 << rng.random_range(0..64),
        2 => u64::MAX - rng.random_range(0..4),
        _ => FIXED[rng.random_range(0..FIXED.len())],
    }
}

/// One random structural or value mutation of `b` (`other`: a second seed to splice from).
fn mutate_once(rng: &mut ChaCha8Rng, b: &mut Vec<u8>, other: &[u8], primes: &[u64]) {
    let len = b.len();
    let at = if len == 0 { 0 } else { rng.random_range(0..len) };
    match rng.random_range(0..10) {
        0 | 1 if len > 0 => b[at] ^= 1 << rng.random_range(0..8),
        2 if len > 0 => b[at] = rng.random(),
        3 | 4 => {
            let width = [1usize, 2, 4, 8][rng.random_range(0..4)];
            let v = interesting(rng, primes).to_le_bytes();
            for (i, x) in v.iter().take(width).enumerate() {
                if let Some(slot) = b.get_mut(at + i) {
                    *slot = *x;
                }
            }
        }
        5 => b.truncate(at),
        6 => {
            let extra = rng.random_range(1..64);
            b.extend((0..extra).map(|_| rng.random::<u8>()));
        }
        7 if len > 0 => {
            let end = (at + rng.random_range(1..64)).min(len);
            b.drain(at..end);
        }
        8 if len > 0 => {
            let end = (at + rng.random_range(1..64)).min(len);
            let chunk = b[at..end].to_vec();
            b.splice(at..at, chunk);
        }
        _ => {
            if !other.is_empty() {
                let from = rng.random_range(0..other.len());
                let take = rng.random_range(1..=(other.len() - from).min(256));
                b.truncate(at);
                b.extend_from_slice(&other[from..from + take]);
            }
        }
    }
}

/// Sets the length field to the payload's length and recomputes the checksum, where the bytes
/// still have a current header.
fn reseal(b: &mut [u8]) {
    if b.len() >= HEADER_LEN {
        let len = (b.len() - HEADER_LEN) as u64;
        b[16..24].copy_from_slice(&len.to_le_bytes());
        let _ = serial::update_checksum(b);
    }
}

/// The next fuzz input for a binary target: mostly a mutation of one of its own `seeds`,
/// sometimes of one of `all` (every target's seeds), or random bytes.
fn next_input(rng: &mut ChaCha8Rng, seeds: &[Vec<u8>], all: &[Vec<u8>], primes: &[u64], wire: bool) -> Vec<u8> {
    if rng.random_range(0..16) == 0 {
        // Purely random, sometimes behind a plausible header.
        let n = rng.random_range(0..512);
        let mut b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        if wire && b.len() >= HEADER_LEN && rng.random() {
            b[..4].copy_from_slice(&serial::MAGIC);
            b[4..6].copy_from_slice(&serial::FORMAT_VERSION.to_le_bytes());
            b[6] = rng.random_range(1..=9);
            b[7] = rng.random_range(1..=2);
            reseal(&mut b);
        }
        return b;
    }
    let pool = if rng.random_range(0..4) == 0 { all } else { seeds };
    let mut b = pool[rng.random_range(0..pool.len())].clone();
    let other = &all[rng.random_range(0..all.len())];
    for _ in 0..rng.random_range(1..=4) {
        mutate_once(rng, &mut b, other, primes);
    }
    if wire && rng.random() {
        reseal(&mut b);
    }
    b
}

/// The variant name of an error (`Checksum`, `ResidueOutOfRange`, ...).
fn kind(e: &wgfhe::Error) -> String {
    format!("{e:?}").split([' ', '{', '(']).next().unwrap_or("").to_owned()
}

/// What a target's inputs came to: accepted, or the typed errors by variant.
#[derive(Default)]
struct Outcomes {
    ok: usize,
    errors: std::collections::BTreeMap<String, usize>,
}

impl Outcomes {
    fn record<T>(&mut self, r: &Result<T>) {
        match r {
            Ok(_) => self.ok += 1,
            Err(e) => *self.errors.entry(kind(e)).or_default() += 1,
        }
    }

    fn report(&self, name: &str) {
        let n = self.ok + self.errors.values().sum::<usize>();
        eprintln!("{name}: {n} inputs, {} accepted, errors {:?}", self.ok, self.errors);
    }
}

/// Runs `check` on `iterations()` inputs made from `seeds` (and `all`); any panic fails the
/// test with the input's description.
fn fuzz(
    name: &str,
    seeds: &[Vec<u8>],
    all: &[Vec<u8>],
    primes: &[u64],
    wire: bool,
    check: impl Fn(&[u8]) -> Result<()>,
) {
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() ^ name.bytes().fold(0u64, |h, c| h * 31 + u64::from(c)));
    let mut out = Outcomes::default();
    for s in seeds {
        // The seeds are valid.
        check(s).unwrap();
    }
    for i in 0..iterations() {
        let input = next_input(&mut rng, seeds, all, primes, wire);
        match catch_unwind(AssertUnwindSafe(|| check(&input))) {
            Ok(r) => out.record(&r),
            Err(_) => {
                let head: Vec<String> = input.iter().take(96).map(|x| format!("{x:02x}")).collect();
                panic!(
                    "{name}: input {i} panicked (seed {:#x}, {} bytes, starting {})",
                    base_seed(),
                    input.len(),
                    head.join("")
                );
            }
        }
    }
    out.report(name);
    // The harness must reach past the container: some inputs load or fail deeper than the
    // header and checksum checks.
    assert!(
        out.ok > 0
            || out.errors.keys().any(|k| !["Checksum", "LengthMismatch", "ObjectTypeMismatch"].contains(&k.as_str())),
        "{name}: no input got past the container"
    );
}

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
            bgv.gen_evaluation_keys(&sk, &[1], true).unwrap().to_bytes(be).unwrap(),
            ckks.gen_evaluation_keys(&csk, &[1], false).unwrap().to_bytes(cbe).unwrap(),
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

/// JSON mutations: bytes (through [`next_input`]) and tokens (numbers replaced by extreme ones,
/// a value dropped or repeated).
fn json_inputs(rng: &mut ChaCha8Rng, seeds: &[String]) -> Vec<u8> {
    const NUMBERS: [&str; 12] = [
        "0",
        "-1",
        "1",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "18446744073709551615",
        "18446744073709551616",
        "1e400",
        "0.5",
        "null",
    ];
    if rng.random() {
        let bytes: Vec<Vec<u8>> = seeds.iter().map(|s| s.clone().into_bytes()).collect();
        return next_input(rng, &bytes, &bytes, &[], false);
    }
    let s = &seeds[rng.random_range(0..seeds.len())];
    // Split into number runs and the rest, then edit some number runs.
    let mut tokens: Vec<String> = Vec::new();
    for c in s.chars() {
        let numeric = c.is_ascii_digit() || c == '-';
        match tokens.last_mut() {
            Some(t) if numeric && t.chars().all(|d| d.is_ascii_digit() || d == '-') => t.push(c),
            _ => tokens.push(c.to_string()),
        }
    }
    for _ in 0..rng.random_range(1..=3) {
        let i = rng.random_range(0..tokens.len());
        if tokens[i].chars().all(|d| d.is_ascii_digit() || d == '-') {
            tokens[i] = NUMBERS[rng.random_range(0..NUMBERS.len())].to_owned();
        } else if tokens[i] == "," {
            match rng.random_range(0..3) {
                0 => tokens[i].clear(),
                1 => tokens[i] = ",0,".into(),
                _ => tokens[i] = format!(",{}", "1,".repeat(rng.random_range(1..400))),
            }
        }
    }
    tokens.concat().into_bytes()
}

fn fuzz_json(name: &str, seeds: &[String], check: impl Fn(&str) -> Result<()>) {
    let mut rng = ChaCha8Rng::seed_from_u64(base_seed() ^ name.bytes().fold(0u64, |h, c| h * 31 + u64::from(c)));
    let mut out = Outcomes::default();
    for s in seeds {
        check(s).unwrap();
    }
    for i in 0..iterations() {
        let input = json_inputs(&mut rng, seeds);
        let text = String::from_utf8_lossy(&input);
        match catch_unwind(AssertUnwindSafe(|| check(&text))) {
            Ok(r) => out.record(&r),
            Err(_) => panic!("{name}: input {i} panicked (seed {:#x}): {text}", base_seed()),
        }
    }
    out.report(name);
    assert!(out.ok > 0 && !out.errors.is_empty(), "{name}: every input accepted or every input refused");
}

#[test]
fn json_and_text_readers_never_panic() {
    let literals: Vec<String> = params::shipped().iter().take(3).map(|l| l.to_json().unwrap()).collect();
    fuzz_json("literal_json", &literals, |s| {
        let lit = ParametersLiteral::from_json(s)?;
        assert_eq!(ParametersLiteral::from_json(&lit.to_json()?)?, lit);
        Parameters::new_insecure_for_tests(lit).map(drop)
    });
    let lr = QuantLr::new((0..16).map(|i| i - 8).collect(), 3, 4).unwrap().to_json().unwrap();
    fuzz_json("lr_json", &[lr], |s| {
        let m = QuantLr::from_json(s)?;
        assert_eq!(QuantLr::from_json(&m.to_json()?)?, m);
        Ok(())
    });
    let (c, h) = (1, 2);
    let cnn = QuantCnn {
        channels: c,
        hidden: h,
        conv_w: vec![1; c * TAPS],
        conv_b: vec![0; c],
        act1: Requant { shift: 2, clip: 15 },
        fc1_w: vec![-1; h * c * POSITIONS],
        fc1_b: vec![0; h],
        act2: Requant { shift: 1, clip: 7 },
        fc2_w: vec![2; CLASSES * h],
        fc2_b: vec![0; CLASSES],
    };
    fuzz_json("cnn_json", &[cnn.to_json().unwrap()], |s| {
        let m = QuantCnn::from_json(s)?;
        assert_eq!(QuantCnn::from_json(&m.to_json()?)?, m);
        let _ = m.bounds();
        Ok(())
    });
    fuzz_json("variant", &["cso+k".into(), "baseline".into()], |s| Variant::parse(s).map(drop));
    let mut images =
        [&0x803u32.to_be_bytes()[..], &2u32.to_be_bytes(), &28u32.to_be_bytes(), &28u32.to_be_bytes()].concat();
    images.extend((0..2 * 784).map(|i| (i % 251) as u8));
    let labels = [&0x801u32.to_be_bytes()[..], &3u32.to_be_bytes(), &[3, 8, 0]].concat();
    let seeds = [images, labels];
    fuzz("idx", &seeds, &seeds, &[28, 784, 0x801, 0x803], false, |b| {
        let images = mnist::read_idx_images(b).map(drop);
        if images.is_ok() {
            return images;
        }
        mnist::read_idx_labels(b).map(drop).or(images)
    });
}
