//! Seeded evaluation keys in memory: key-switching keys that keep only the seed of their `a`
//! halves give the same bits as stored keys, read half the key bytes, hold half the memory,
//! round-trip through the wire format, and depend on their seed.

#![expect(clippy::unwrap_used, reason = "tests")]

use num_complex::Complex64;
use wgfhe::backend::ledger::{Ledger, Record};
use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::bgv::{self, Bgv};
use wgfhe::ckks::{self, Ckks, ScalePolicy};
use wgfhe::params::{self, Parameters};
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::{EvaluationKeys, GaloisKey, KeyForm, RelinKey, SecretKey};

type Cpu = Ledger<CpuBackend>;

/// BGV over `N = 2^10`, 5 chain primes in 3 digits (2, 2, 1 primes), 2 special primes.
fn bgv_params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 65537).unwrap()
}

struct Fixture {
    bgv: Bgv<Cpu>,
    sk: SecretKey<Cpu>,
    stored: EvaluationKeys<Cpu>,
    seeded: EvaluationKeys<Cpu>,
}

fn fixture() -> Fixture {
    let p = bgv_params();
    let bgv = Bgv::new(Ledger::new(CpuBackend::new(RingContext::new(&p).unwrap()))).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[7; 32]).unwrap();
    let stored = bgv.gen_evaluation_keys(&sk, &[1, -3], true).unwrap();
    let seeded = stored.expand(bgv.backend()).unwrap().into_seeded();
    assert!(!stored.is_seeded());
    assert!(seeded.is_seeded());
    Fixture { bgv, sk, stored, seeded }
}

fn host_polys<B: Backend>(be: &B, polys: &[RnsPoly<B, Eval>]) -> Vec<Vec<u32>> {
    polys.iter().map(|p| p.to_host(be).unwrap()).collect()
}

fn bgv_hosts(f: &Fixture, ct: &bgv::Ciphertext<Cpu>) -> Vec<Vec<u32>> {
    host_polys(f.bgv.backend(), ct.polys())
}

fn values(n: usize, salt: u64) -> Vec<u64> {
    (0..n as u64).map(|i| (i * 7919 + salt * 104_729) % 65537).collect()
}

fn encrypt(f: &Fixture, salt: u64) -> bgv::Ciphertext<Cpu> {
    let pt = f.bgv.encoder().encode(&values(f.bgv.params().n(), salt)).unwrap();
    f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap()
}

fn decrypt(f: &Fixture, ct: &bgv::Ciphertext<Cpu>) -> Vec<u64> {
    f.bgv.encoder().decode(&f.bgv.decrypt(&f.sk, ct).unwrap()).unwrap()
}

/// Relinearisation, column rotations and the row swap at the top level (3 digits) and at
/// lower levels (2 and 1 digits; level 0, a single prime, leaves no noise budget for key
/// switching with t = 65537): seeded keys give the stored keys' bytes.
#[test]
fn bgv_seeded_keys_give_identical_ciphertexts() {
    let f = fixture();
    let (a, b) = (encrypt(&f, 1), encrypt(&f, 2));
    for level in [4, 2, 1] {
        let ca = f.bgv.mod_switch_to_level(&a, level).unwrap();
        let cb = f.bgv.mod_switch_to_level(&b, level).unwrap();
        let prod = f.bgv.mul(&ca, &cb).unwrap();
        let want = f.bgv.relinearize(&prod, &f.stored).unwrap();
        let got = f.bgv.relinearize(&prod, &f.seeded).unwrap();
        assert_eq!(bgv_hosts(&f, &got), bgv_hosts(&f, &want), "relinearisation at level {level}");
        assert_eq!(decrypt(&f, &got), decrypt(&f, &want));
        for steps in [1, -3] {
            let want = f.bgv.rotate_columns(&ca, steps, &f.stored).unwrap();
            let got = f.bgv.rotate_columns(&ca, steps, &f.seeded).unwrap();
            assert_eq!(bgv_hosts(&f, &got), bgv_hosts(&f, &want), "rotation by {steps} at level {level}");
        }
        let want = f.bgv.rotate_rows(&ca, &f.stored).unwrap();
        let got = f.bgv.rotate_rows(&ca, &f.seeded).unwrap();
        assert_eq!(bgv_hosts(&f, &got), bgv_hosts(&f, &want), "row swap at level {level}");
    }
    // And the result is right, not just equal.
    let rotated = f.bgv.rotate_rows(&a, &f.seeded).unwrap();
    let v = values(f.bgv.params().n(), 1);
    let half = v.len() / 2;
    let swapped: Vec<u64> = (0..v.len()).map(|k| v[(k + half) % v.len()]).collect();
    assert_eq!(decrypt(&f, &rotated), swapped);
}

/// CKKS: HMULT with relinearisation, a rotation and conjugation.
#[test]
fn ckks_seeded_keys_give_identical_ciphertexts() {
    let p = params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30).unwrap();
    let ckks = Ckks::cpu(&p, ScalePolicy::Single).unwrap();
    let be = ckks.backend();
    let sk = ckks.gen_secret_key_from_seed(&[11; 32]).unwrap();
    let stored = ckks.gen_evaluation_keys(&sk, &[2], true).unwrap();
    let seeded = stored.expand(be).unwrap().into_seeded();
    let slots = 16;
    let x: Vec<f64> = (0..slots).map(|i| (i as f64 / slots as f64) - 0.5).collect();
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&x).unwrap()).unwrap();
    let hosts = |c: &ckks::Ciphertext<CpuBackend>| host_polys(be, c.polys());
    let want = ckks.mul_relin(&ct, &ct, &stored).unwrap();
    let got = ckks.mul_relin(&ct, &ct, &seeded).unwrap();
    assert_eq!(hosts(&got), hosts(&want), "HMULT");
    let back = ckks.decrypt(&sk, &ckks.rescale(&got).unwrap()).unwrap();
    let err = x.iter().zip(&back).map(|(v, c)| (Complex64::new(v * v, 0.0) - c).norm()).fold(0.0, f64::max);
    assert!(err < 1e-3, "HMULT error {err}");
    let want = ckks.rotate(&ct, 2, &stored).unwrap();
    let got = ckks.rotate(&ct, 2, &seeded).unwrap();
    assert_eq!(hosts(&got), hosts(&want), "rotation");
    let want = ckks.conjugate(&ct, &stored).unwrap();
    let got = ckks.conjugate(&ct, &seeded).unwrap();
    assert_eq!(hosts(&got), hosts(&want), "conjugation");
}

/// Key bytes read by the records of one operation.
fn key_bytes(records: &[Record]) -> u64 {
    records.iter().map(|r| r.key_bytes).sum()
}

/// Through the ledger, a seeded key switch reads exactly half the key bytes: the stored path
/// reads `b_j` and `a_j` (each `#limbs * N * 4` bytes per digit used), the fused path only `b_j`
/// and regenerates `a_j` (counted as PRNG words, not bytes). No slack is needed: both counts
/// are computed from the same shapes.
#[test]
fn seeded_key_switching_reads_half_the_key_bytes() {
    let f = fixture();
    let be = f.bgv.backend();
    let (n, limbs_qp) = (1024u64, 7u64);
    let a = encrypt(&f, 3);
    for level in [4usize, 1] {
        let ca = f.bgv.mod_switch_to_level(&a, level).unwrap();
        let prod = f.bgv.mul(&ca, &ca).unwrap();
        let digits = (level as u64 + 1).div_ceil(2);
        let limbs = level as u64 + 1 + 2;
        let stored_read = 2 * digits * limbs * n * 4;

        be.take();
        f.bgv.relinearize(&prod, &f.stored).unwrap();
        let stored = be.take();
        be.take();
        f.bgv.relinearize(&prod, &f.seeded).unwrap();
        let seeded = be.take();
        assert_eq!(key_bytes(&stored), stored_read, "level {level}");
        assert_eq!(key_bytes(&seeded) * 2, key_bytes(&stored), "level {level}");
        assert!(stored.iter().any(|r| r.kernel == "key_switch_inner_product"));
        assert!(!seeded.iter().any(|r| r.kernel == "key_switch_inner_product"));
        let fused: Vec<&Record> = seeded.iter().filter(|r| r.kernel == "fused").collect();
        assert_eq!(fused.len(), 1, "one fused program per key switch");
        // One regenerated residue per (digit, limb, coefficient), 4 ChaCha20 words each.
        assert_eq!(fused[0].prng_words, 4 * digits * limbs * n);
        // Everything else is the same dispatch for dispatch.
        let others = |rs: &[Record]| -> Vec<Record> {
            rs.iter().filter(|r| r.kernel != "fused" && r.kernel != "key_switch_inner_product").cloned().collect()
        };
        assert_eq!(others(&seeded), others(&stored));

        be.take();
        f.bgv.rotate_columns(&ca, 1, &f.stored).unwrap();
        let stored = be.take();
        f.bgv.rotate_columns(&ca, 1, &f.seeded).unwrap();
        let seeded = be.take();
        assert_eq!(key_bytes(&stored), stored_read);
        assert_eq!(key_bytes(&seeded) * 2, key_bytes(&stored), "rotation at level {level}");
    }
    assert_eq!(limbs_qp, f.bgv.params().q().len() as u64 + f.bgv.params().p().len() as u64);
}

/// Resident bytes: `dnum * 2 * (#Q + #P) * N * 4` for a stored key, exactly half seeded, and the
/// stored form back after `expand`.
#[test]
fn resident_bytes_halve() {
    let f = fixture();
    let be = f.bgv.backend();
    let p = f.bgv.params();
    let (dnum, limbs, n) = (p.dnum() as u64, (p.q().len() + p.p().len()) as u64, p.n() as u64);
    let full = dnum * 2 * limbs * n * 4;
    assert_eq!(full, 3 * 2 * 7 * 1024 * 4);
    let rk = f.stored.relin.as_ref().unwrap();
    let rk_seeded = f.seeded.relin.as_ref().unwrap();
    assert_eq!(rk.resident_bytes(be), full);
    assert_eq!(rk_seeded.resident_bytes(be), full / 2);
    assert_eq!(rk_seeded.resident_bytes(be) * 2, rk.resident_bytes(be));
    let g = f.bgv.column_rotation_element(1);
    assert_eq!(f.stored.galois[&g].resident_bytes(be), full);
    assert_eq!(f.seeded.galois[&g].resident_bytes(be), full / 2);
    // Relinearisation plus three Galois keys.
    assert_eq!(f.stored.resident_bytes(be), 4 * full);
    assert_eq!(f.seeded.resident_bytes(be), 2 * full);
    // Expanding regenerates exactly the stored a parts.
    let back = f.seeded.expand(be).unwrap();
    assert!(!back.is_seeded());
    assert_eq!(back.resident_bytes(be), f.stored.resident_bytes(be));
    let rk_back = back.relin.as_ref().unwrap();
    for (d, e) in rk_back.0.digits.iter().zip(&rk.0.digits) {
        assert_eq!(d.index, e.index);
        assert_eq!(d.b.to_host(be).unwrap(), e.b.to_host(be).unwrap());
        assert_eq!(d.a.as_ref().unwrap().to_host(be).unwrap(), e.a.as_ref().unwrap().to_host(be).unwrap());
    }
}

/// A seeded key writes the same bytes as the stored key, and loads in either form.
#[test]
fn wire_round_trip_from_a_seeded_key() {
    let f = fixture();
    let be = f.bgv.backend();
    let rk = f.stored.relin.as_ref().unwrap();
    let rk_seeded = f.seeded.relin.as_ref().unwrap();
    let bytes = rk_seeded.to_bytes(be).unwrap();
    assert_eq!(bytes, rk.to_bytes(be).unwrap());
    let loaded_seeded = RelinKey::from_bytes_as(be, &bytes, KeyForm::Seeded).unwrap();
    assert!(loaded_seeded.is_seeded());
    assert_eq!(loaded_seeded.resident_bytes(be), rk_seeded.resident_bytes(be));
    let loaded = RelinKey::from_bytes(be, &bytes).unwrap();
    assert!(!loaded.is_seeded());
    for ((l, s), e) in loaded.0.digits.iter().zip(&loaded_seeded.0.digits).zip(&rk.0.digits) {
        assert_eq!((l.index, s.index), (e.index, e.index));
        assert_eq!(s.b.to_host(be).unwrap(), e.b.to_host(be).unwrap());
        assert_eq!(l.a.as_ref().unwrap().to_host(be).unwrap(), e.a.as_ref().unwrap().to_host(be).unwrap());
    }
    assert_eq!(loaded_seeded.to_bytes(be).unwrap(), bytes);
    // Galois keys the same way.
    let g = f.bgv.row_swap_element();
    let gbytes = f.seeded.galois[&g].to_bytes(be).unwrap();
    let gk = GaloisKey::from_bytes_as(be, &gbytes, KeyForm::Seeded).unwrap();
    assert!(gk.is_seeded());
    assert_eq!(gk.galois_element, g);
    // Keys loaded seeded compute what the original keys compute.
    let mut keys = EvaluationKeys { relin: Some(loaded_seeded), ..EvaluationKeys::default() };
    keys.galois.insert(g, gk);
    let a = encrypt(&f, 4);
    let prod = f.bgv.mul(&a, &a).unwrap();
    let want = f.bgv.relinearize(&prod, &f.stored).unwrap();
    assert_eq!(bgv_hosts(&f, &f.bgv.relinearize(&prod, &keys).unwrap()), bgv_hosts(&f, &want));
    let want = f.bgv.rotate_rows(&a, &f.stored).unwrap();
    assert_eq!(bgv_hosts(&f, &f.bgv.rotate_rows(&a, &keys).unwrap()), bgv_hosts(&f, &want));
}

/// A seeded key is only as good as its seed: one flipped bit regenerates other `a_j`, and the
/// relinearised ciphertext no longer decrypts to the product. A stored key does not consult
/// its seed.
#[test]
fn a_tampered_seed_gives_a_wrong_relinearisation() {
    let f = fixture();
    let be = f.bgv.backend();
    let a = encrypt(&f, 5);
    let prod = f.bgv.mul(&a, &a).unwrap();
    let right = decrypt(&f, &f.bgv.relinearize(&prod, &f.seeded).unwrap());
    let v = values(f.bgv.params().n(), 5);
    assert_eq!(right, v.iter().map(|x| x * x % 65537).collect::<Vec<_>>());

    let mut tampered = f.seeded.relin.as_ref().unwrap().expand(be).unwrap().seeded();
    tampered.0.seed[0] ^= 1;
    let keys = EvaluationKeys { relin: Some(tampered), ..EvaluationKeys::default() };
    let bad = f.bgv.relinearize(&prod, &keys).unwrap();
    let wrong = decrypt(&f, &bad);
    assert_ne!(wrong, right);
    // Not a near miss: almost every slot is wrong.
    let same = wrong.iter().zip(&right).filter(|(x, y)| x == y).count();
    assert!(same < v.len() / 10, "{same} of {} slots still right", v.len());

    // The same tampering on a stored key changes nothing (its a_j are in memory).
    let mut stored = f.stored.relin.as_ref().unwrap().expand(be).unwrap();
    stored.0.seed[0] ^= 1;
    let keys = EvaluationKeys { relin: Some(stored), ..EvaluationKeys::default() };
    assert_eq!(decrypt(&f, &f.bgv.relinearize(&prod, &keys).unwrap()), right);
}

/// The resident bytes of one key-switching key of a shipped set, from its shape (the formula
/// `resident_bytes` implements; generating `N = 2^16` keys on the CPU is not needed for this).
fn shipped_key_bytes(p: &Parameters) -> (u64, u64) {
    let digits = (0..p.dnum()).filter(|&j| !p.digit_range(j).is_empty()).count() as u64;
    let limbs = (p.q().len() + p.p().len()) as u64;
    let b = digits * limbs * p.n() as u64 * 4;
    (2 * b, b)
}

#[test]
fn shipped_bgv_n16_key_sizes() {
    let p = params::by_name("bgv-n16").unwrap();
    let (stored, seeded) = shipped_key_bytes(&p);
    // dnum 3, 43 + 15 primes, N = 2^16.
    assert_eq!(stored, 3 * 2 * 58 * 65536 * 4);
    assert_eq!(stored, 91_226_112);
    assert_eq!(seeded, 45_613_056);
}

/// The formula against `resident_bytes` of a real key of a shipped set small enough to generate
/// quickly (`bgv-n13`).
#[test]
fn shipped_formula_matches_a_generated_key() {
    let p = params::by_name("bgv-n13").unwrap();
    let bgv = Bgv::cpu(&p).unwrap();
    let be = bgv.backend();
    let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let rk = bgv.gen_relin_key(&sk).unwrap();
    let (stored, seeded) = shipped_key_bytes(&p);
    assert_eq!(rk.resident_bytes(be), stored);
    assert_eq!(rk.seeded().resident_bytes(be), seeded);
}

/// `bgv-n16` keys generated for real (two keys take under a second on the CPU in release), with
/// the sizes printed (`--nocapture`).
#[test]
fn bgv_n16_generated_key_sizes() {
    let p = params::by_name("bgv-n16").unwrap();
    let bgv = Bgv::cpu(&p).unwrap();
    let be = bgv.backend();
    let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let start = std::time::Instant::now();
    let rk = bgv.gen_relin_key(&sk).unwrap();
    let gk = bgv.gen_galois_key(&sk, bgv.column_rotation_element(1)).unwrap();
    println!("two bgv-n16 keys in {:?}", start.elapsed());
    let (stored, seeded) = shipped_key_bytes(&p);
    for (what, full, half) in [
        ("relin", rk.resident_bytes(be), rk.seeded().resident_bytes(be)),
        ("galois", gk.resident_bytes(be), gk.seeded().resident_bytes(be)),
    ] {
        println!("{what}: stored {full} bytes, seeded {half} bytes");
        assert_eq!((full, half), (stored, seeded));
    }
}
