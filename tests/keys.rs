//! Seeded evaluation keys in memory: key-switching keys that keep only the seed of their `a`
//! halves give the same bits as stored keys, read half the key bytes, hold half the memory,
//! round-trip through the wire format, and depend on their seed. The key-switching bodies are
//! written once over the backend: `cpu::*` and `gpu::*` (on the GPU the seeded keys' `a` halves
//! are regenerated inside the fused inner product, and every result must be the CPU's words, see
//! `common/backends.rs`); the traffic counts run through the CPU ledger.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use backends::{cpu, cpu_and_gpu, Make, Transcript};
use num_complex::Complex64;
use wgfhe::backend::ledger::{Ledger, Record};
use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::bgv::{self, Bgv};
use wgfhe::ckks::{self, Ckks, ScalePolicy};
use wgfhe::params::{self, Parameters};
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::rlwe::KeyRequest;
use wgfhe::rlwe::{EvaluationKeys, GaloisKey, KeyForm, KeySwitchKey, RelinKey, SecretKey};

cpu_and_gpu!(
    bgv_seeded_keys_give_identical_ciphertexts,
    packed_keys_give_identical_ciphertexts,
    packed_keys_at_mixed_widths_give_identical_switches,
    packed_resident_bytes_are_the_packed_words,
    a_key_below_the_ciphertext_switches_it_down,
    ckks_seeded_keys_give_identical_ciphertexts,
    resident_bytes_halve,
    wire_round_trip_from_a_seeded_key,
    a_tampered_seed_gives_a_wrong_relinearisation,
);

type Cpu = Ledger<CpuBackend>;

/// BGV over `N = 2^10`, 5 chain primes in 3 digits (2, 2, 1 primes), 2 special primes.
fn bgv_params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 65537).unwrap()
}

struct Fixture<'l, B: Backend> {
    bgv: Bgv<B>,
    sk: SecretKey<B>,
    stored: EvaluationKeys<B>,
    seeded: EvaluationKeys<B>,
    packed: EvaluationKeys<B>,
    log: &'l Transcript,
}

fn fixture<'l, B: Backend>(make: Make<'_, B>, log: &'l Transcript) -> Fixture<'l, B> {
    let bgv = Bgv::new(make(&bgv_params())).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[7; 32]).unwrap();
    let stored = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, -3]).with_row_swap()).unwrap();
    let seeded = stored.expand(bgv.backend()).unwrap().into_seeded();
    let packed = seeded.expand(bgv.backend()).unwrap().into_seeded().into_packed(bgv.backend()).unwrap();
    assert!(!stored.is_seeded());
    assert!(seeded.is_seeded());
    assert!(packed.is_seeded() && packed.is_packed() && !seeded.is_packed());
    Fixture { bgv, sk, stored, seeded, packed, log }
}

/// The BGV fixture on the CPU through the traffic ledger.
fn ledger_fixture(log: &Transcript) -> Fixture<'_, Cpu> {
    fixture(&|p: &Parameters| Ledger::new(cpu(p)), log)
}

fn host_polys<B: Backend>(be: &B, polys: &[RnsPoly<B, Eval>]) -> Vec<Vec<u32>> {
    polys.iter().map(|p| p.to_host(be).unwrap()).collect()
}

/// The words of `ct`, recorded in the transcript.
#[track_caller]
fn bgv_hosts<B: Backend>(f: &Fixture<'_, B>, ct: &bgv::Ciphertext<B>) -> Vec<Vec<u32>> {
    f.log.record(f.bgv.backend(), &format!("level {}", ct.level()), ct.polys());
    host_polys(f.bgv.backend(), ct.polys())
}

fn values(n: usize, salt: u64) -> Vec<u64> {
    (0..n as u64).map(|i| (i * 7919 + salt * 104_729) % 65537).collect()
}

fn encrypt<B: Backend>(f: &Fixture<'_, B>, salt: u64) -> bgv::Ciphertext<B> {
    let pt = f.bgv.encoder().encode(&values(f.bgv.params().n(), salt)).unwrap();
    f.bgv.encrypt_symmetric(&f.sk, &pt).unwrap()
}

fn decrypt<B: Backend>(f: &Fixture<'_, B>, ct: &bgv::Ciphertext<B>) -> Vec<u64> {
    f.bgv.encoder().decode(&f.bgv.decrypt(&f.sk, ct).unwrap()).unwrap()
}

/// The bytes of a key-switching key counted from its buffers: `(all, b halves only)`, 4 bytes
/// per downloaded word.
fn counted_bytes<B: Backend>(be: &B, key: &KeySwitchKey<B>) -> (u64, u64) {
    let words = |buf: &B::Buffer| be.download(buf).unwrap().len() as u64 * 4;
    let b: u64 = key.digits.iter().map(|d| words(d.b.buffer())).sum();
    let a: u64 = key.digits.iter().filter_map(|d| d.a.as_ref()).map(|a| words(a.buffer())).sum();
    (a + b, b)
}

/// Relinearisation, column rotations and the row swap at the top level (3 digits) and at
/// lower levels (2 and 1 digits; level 0, a single prime, leaves no noise budget for key
/// switching with t = 65537): seeded keys give the stored keys' bytes.
fn bgv_seeded_keys_give_identical_ciphertexts<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
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

/// Seeded keys with bit-packed `b` halves (the `b` parts unpacked inside the inner product):
/// relinearisation, rotations and the row swap at every level give the stored keys' words.
fn packed_keys_give_identical_ciphertexts<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
    let (a, b) = (encrypt(&f, 1), encrypt(&f, 2));
    for level in [4, 2, 1] {
        let ca = f.bgv.mod_switch_to_level(&a, level).unwrap();
        let cb = f.bgv.mod_switch_to_level(&b, level).unwrap();
        let prod = f.bgv.mul(&ca, &cb).unwrap();
        let want = f.bgv.relinearize(&prod, &f.stored).unwrap();
        let got = f.bgv.relinearize(&prod, &f.packed).unwrap();
        assert_eq!(bgv_hosts(&f, &got), bgv_hosts(&f, &want), "relinearisation at level {level}");
        for steps in [1, -3] {
            let want = f.bgv.rotate_columns(&ca, steps, &f.stored).unwrap();
            let got = f.bgv.rotate_columns(&ca, steps, &f.packed).unwrap();
            assert_eq!(bgv_hosts(&f, &got), bgv_hosts(&f, &want), "rotation by {steps} at level {level}");
        }
        let want = f.bgv.rotate_rows(&ca, &f.stored).unwrap();
        let got = f.bgv.rotate_rows(&ca, &f.packed).unwrap();
        assert_eq!(bgv_hosts(&f, &got), bgv_hosts(&f, &want), "row swap at level {level}");
    }
    let prod = f.bgv.mul(&a, &a).unwrap();
    let v = values(f.bgv.params().n(), 1);
    assert_eq!(
        decrypt(&f, &f.bgv.relinearize(&prod, &f.packed).unwrap()),
        v.iter().map(|x| x * x % 65537).collect::<Vec<_>>()
    );
}

/// A CKKS set (insecure, for tests) whose primes have different sizes (q of 30, 26, 22 and 18
/// bits, p of 29 and 20 bits), so packed limbs of different widths meet inside one word.
fn mixed_widths() -> Parameters {
    let n = 1u64 << 10;
    let mut primes: Vec<u64> = Vec::new();
    for bits in [30, 26, 22, 18, 29, 20] {
        let p = wgfhe::math::primes::ntt_primes(bits, n, 1, &primes).unwrap();
        primes.extend(p);
    }
    let mut lit = params::ckks_literal("mixed-widths-keys", 10, 4, 2, 4, 16).unwrap();
    lit.p = primes.split_off(4);
    lit.q = primes;
    Parameters::new_insecure_for_tests(lit).unwrap()
}

/// Key switching under a packed (and packed seeded, and reduced) key at primes of mixed widths
/// gives the stored key's words at every level.
fn packed_keys_at_mixed_widths_give_identical_switches<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = mixed_widths();
    let be = make(&p);
    let sk = wgfhe::rlwe::gen_secret_key(&be, Some(&[3; 32])).unwrap();
    let other = wgfhe::rlwe::gen_secret_key(&be, Some(&[4; 32])).unwrap();
    let stored = wgfhe::rlwe::gen_key_switch_key(&be, other.eval(), &sk, wgfhe::rlwe::NoiseScale(1)).unwrap();
    let packed = stored.expand(&be).unwrap().packed(&be).unwrap();
    let packed_seeded = stored.expand(&be).unwrap().seeded().packed(&be).unwrap();
    for level in 0..p.q().len() {
        let basis = be.context().q_basis(level).unwrap();
        let c =
            RnsPoly::<B, Eval>::uniform(&be, &[9; 32], wgfhe::math::sampling::Purpose::Ephemeral, 2, basis).unwrap();
        let (w0, w1) = wgfhe::rlwe::key_switch(&be, &c, &stored, None).unwrap();
        let reduced = packed_seeded.at_level(&be, level).unwrap();
        for (form, key) in [("packed", &packed), ("packed seeded", &packed_seeded), ("reduced", &reduced)] {
            let (d0, d1) = wgfhe::rlwe::key_switch(&be, &c, key, None).unwrap();
            assert_eq!(d0.to_host(&be).unwrap(), w0.to_host(&be).unwrap(), "{form} level {level}");
            assert_eq!(d1.to_host(&be).unwrap(), w1.to_host(&be).unwrap(), "{form} level {level}");
            log.record(&be, form, [&d0, &d1]);
        }
    }
}

/// The resident bytes of a packed seeded key are its packed words: per digit, per prime of the
/// key's basis, `ceil(N bits(q) / 32)` words of 4 bytes, counted by downloading the buffers; a
/// key reduced to a level holds only that level's limbs and digits.
fn packed_resident_bytes_are_the_packed_words<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
    let be = f.bgv.backend();
    let p = f.bgv.params();
    let ctx = be.context();
    let rk = f.packed.relin.as_ref().unwrap();
    let shape = |level: usize| -> u64 {
        let basis = ctx.qp_basis(level).unwrap();
        let words: usize =
            ctx.moduli_of(&basis).unwrap().iter().map(|m| (p.n() * m.bits() as usize).div_ceil(32)).sum();
        let digits = (0..p.dnum()).filter(|&j| p.digit_range(j).any(|i| i <= level)).count();
        (digits * words * 4) as u64
    };
    let top = p.q().len() - 1;
    assert_eq!(counted_bytes(be, &rk.0), (shape(top), shape(top)));
    assert_eq!(rk.resident_bytes(be), shape(top));
    assert!(rk.resident_bytes(be) < f.seeded.relin.as_ref().unwrap().resident_bytes(be));
    for level in 0..=top {
        let reduced = rk.at_level(be, level).unwrap();
        assert_eq!(reduced.resident_bytes(be), shape(level), "level {level}");
        assert_eq!(counted_bytes(be, &reduced.0).0, shape(level), "level {level}");
        log.record(be, "reduced key", [&reduced.0.digits[0].b.to_words(be).unwrap()]);
    }
    // Unpacked again, the words are the seeded key's.
    let back = f.packed.expand(be).unwrap();
    for (d, e) in back.relin.as_ref().unwrap().0.digits.iter().zip(&f.stored.relin.as_ref().unwrap().0.digits) {
        assert_eq!(d.b.to_host(be).unwrap(), e.b.to_host(be).unwrap());
        assert!(!d.b.is_packed());
    }
    // The wire form of a packed key is the stored key's; a reduced key has none.
    assert_eq!(rk.to_bytes(be).unwrap(), f.stored.relin.as_ref().unwrap().to_bytes(be).unwrap());
    assert!(rk.at_level(be, 1).unwrap().to_bytes(be).is_err());
}

/// Keys reduced below a ciphertext's level (a key plan that expected the ciphertext lower):
/// BGV switches the ciphertext down to the key's level first, and the result decrypts right; at
/// or below the key's level the words are the top-level key's.
fn a_key_below_the_ciphertext_switches_it_down<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
    let be = f.bgv.backend();
    let g = f.bgv.column_rotation_element(1);
    let plan = wgfhe::rlwe::KeyPlan { relin: Some(2), galois: [(g, 2)].into_iter().collect() };
    let low = f.packed.reduced_to(be, &plan).unwrap();
    let a = encrypt(&f, 6);
    let v = values(f.bgv.params().n(), 6);
    let half = v.len() / 2;
    // Level 4 > 2: switched down first.
    let rotated = f.bgv.rotate_columns(&a, 1, &low).unwrap();
    assert_eq!(rotated.level(), 2);
    let want: Vec<u64> = (0..v.len()).map(|k| v[(k / half) * half + (k % half + 1) % half]).collect();
    assert_eq!(decrypt(&f, &rotated), want);
    let prod = f.bgv.relinearize(&f.bgv.mul(&a, &a).unwrap(), &low).unwrap();
    assert_eq!(prod.level(), 2);
    assert_eq!(decrypt(&f, &prod), v.iter().map(|x| x * x % 65537).collect::<Vec<_>>());
    bgv_hosts(&f, &prod);
    // At the key's level: the top-level key's words.
    let a2 = f.bgv.mod_switch_to_level(&a, 2).unwrap();
    let want = f.bgv.rotate_columns(&a2, 1, &f.stored).unwrap();
    assert_eq!(bgv_hosts(&f, &f.bgv.rotate_columns(&a2, 1, &low).unwrap()), bgv_hosts(&f, &want));
}

/// CKKS: HMULT with relinearisation, a rotation and conjugation.
fn ckks_seeded_keys_give_identical_ciphertexts<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let p = params::insecure_test_ckks(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30).unwrap();
    let ckks = Ckks::new(make(&p), ScalePolicy::Single).unwrap();
    let be = ckks.backend();
    let sk = ckks.gen_secret_key_from_seed(&[11; 32]).unwrap();
    let stored = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[2]).with_conjugation()).unwrap();
    let seeded = stored.expand(be).unwrap().into_seeded();
    let slots = 16;
    let x: Vec<f64> = (0..slots).map(|i| (i as f64 / slots as f64) - 0.5).collect();
    let ct = ckks.encrypt_symmetric(&sk, &ckks.encode_real(&x).unwrap()).unwrap();
    let hosts = |c: &ckks::Ciphertext<B>| {
        log.record(be, "ckks", c.polys());
        host_polys(be, c.polys())
    };
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
/// reads `b_j` and `a_j` of every digit with a prime at or below the level, each over the
/// ciphertext's primes and the special primes (`(level + 1 + #P) * N * 4` bytes), the seeded
/// path only `b_j` and regenerates `a_j` inside the same inner-product kernel (counted as PRNG
/// words, not bytes). The expected counts come from the parameters' digit partition, not from
/// the ledger.
#[test]
fn seeded_key_switching_reads_half_the_key_bytes() {
    let log = Transcript::default();
    let f = ledger_fixture(&log);
    let be = f.bgv.backend();
    let p = f.bgv.params();
    let n = p.n() as u64;
    let a = encrypt(&f, 3);
    for level in [4usize, 1] {
        let ca = f.bgv.mod_switch_to_level(&a, level).unwrap();
        let prod = f.bgv.mul(&ca, &ca).unwrap();
        let digits = (0..p.dnum()).filter(|&j| p.digit_range(j).start <= level).count() as u64;
        let limbs = (level + 1 + p.p().len()) as u64;
        let stored_read = 2 * digits * limbs * n * 4;

        be.take();
        f.bgv.relinearize(&prod, &f.stored).unwrap();
        let stored = be.take();
        be.take();
        f.bgv.relinearize(&prod, &f.seeded).unwrap();
        let seeded = be.take();
        assert_eq!(key_bytes(&stored), stored_read, "level {level}");
        assert_eq!(key_bytes(&seeded) * 2, key_bytes(&stored), "level {level}");
        let inner = |rs: &[Record]| -> Vec<Record> {
            rs.iter().filter(|r| r.kernel == "key_switch_inner_product").cloned().collect()
        };
        let (stored_ip, seeded_ip) = (inner(&stored), inner(&seeded));
        assert_eq!((stored_ip.len(), seeded_ip.len()), (1, 1), "one inner-product dispatch per key switch");
        assert_eq!(stored_ip[0].prng_words, 0);
        // One regenerated residue per (digit, limb, coefficient), one ChaCha12 first-candidate
        // word each (generator 2).
        assert_eq!(seeded_ip[0].prng_words, digits * limbs * n);
        // Everything else is the same dispatch for dispatch.
        let others = |rs: &[Record]| -> Vec<Record> {
            rs.iter().filter(|r| r.kernel != "key_switch_inner_product").cloned().collect()
        };
        assert_eq!(others(&seeded), others(&stored));
        // Packed b_j are read at the primes' bit widths.
        be.take();
        f.bgv.relinearize(&prod, &f.packed).unwrap();
        let packed = be.take();
        let ctx = be.context();
        let packed_words: u64 = ctx
            .moduli_of(&ctx.qp_basis(level).unwrap())
            .unwrap()
            .iter()
            .map(|m| (n * u64::from(m.bits())).div_ceil(32))
            .sum();
        assert_eq!(key_bytes(&packed), digits * packed_words * 4, "level {level}");
        assert_eq!(others(&packed), others(&stored));

        be.take();
        f.bgv.rotate_columns(&ca, 1, &f.stored).unwrap();
        let stored = be.take();
        f.bgv.rotate_columns(&ca, 1, &f.seeded).unwrap();
        let seeded = be.take();
        assert_eq!(key_bytes(&stored), stored_read);
        assert_eq!(key_bytes(&seeded) * 2, key_bytes(&stored), "rotation at level {level}");
    }
}

/// Resident bytes: what the key's buffers hold (counted by downloading them), exactly half
/// seeded (the `b` halves), and the stored form back after `expand`; the buffers have the shape
/// of the digit partition, `dnum * 2 * (#Q + #P) * N * 4` bytes.
fn resident_bytes_halve<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
    let be = f.bgv.backend();
    let p = f.bgv.params();
    let rk = f.stored.relin.as_ref().unwrap();
    let rk_seeded = f.seeded.relin.as_ref().unwrap();
    for d in &rk.0.digits {
        log.record(be, "relinearisation key digit", [&d.b.to_words(be).unwrap(), d.a.as_ref().unwrap()]);
    }
    let (full, half) = counted_bytes(be, &rk.0);
    assert_eq!(counted_bytes(be, &rk_seeded.0), (half, half), "a seeded key keeps only its b halves");
    assert_eq!(2 * half, full);
    assert_eq!(full, (p.dnum() * 2 * (p.q().len() + p.p().len()) * p.n() * 4) as u64);
    assert_eq!(rk.resident_bytes(be), full);
    assert_eq!(rk_seeded.resident_bytes(be), half);
    let g = f.bgv.column_rotation_element(1);
    assert_eq!(counted_bytes(be, &f.stored.galois[&g].key), (full, half));
    assert_eq!(f.stored.galois[&g].resident_bytes(be), full);
    assert_eq!(f.seeded.galois[&g].resident_bytes(be), half);
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
fn wire_round_trip_from_a_seeded_key<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
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
    // Loaded straight into the packed form: fewer resident bytes, the same words.
    let packed = RelinKey::from_bytes_as(be, &bytes, KeyForm::SeededPacked).unwrap();
    assert!(packed.is_seeded() && packed.0.is_packed());
    assert!(packed.resident_bytes(be) < rk_seeded.resident_bytes(be));
    assert_eq!(packed.to_bytes(be).unwrap(), bytes);
    let keys = EvaluationKeys { relin: Some(packed), ..EvaluationKeys::default() };
    let want = f.bgv.relinearize(&prod, &f.stored).unwrap();
    assert_eq!(bgv_hosts(&f, &f.bgv.relinearize(&prod, &keys).unwrap()), bgv_hosts(&f, &want));
}

/// A seeded key is only as good as its seed: one flipped bit regenerates other `a_j`, and the
/// relinearised ciphertext no longer decrypts to the product. A stored key does not consult
/// its seed.
fn a_tampered_seed_gives_a_wrong_relinearisation<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let f = fixture(make, log);
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
    bgv_hosts(&f, &bad);
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

/// A generated key of a shipped set: its resident bytes are what its buffers hold (counted by
/// downloading them), the `b` halves alone when seeded, and the buffers have the shape of the
/// set's digit partition: one `(b, a)` pair per non-empty digit, each over `Q P`.
fn check_shipped_key_sizes(name: &str) {
    let p = params::by_name(name).unwrap();
    let bgv = Bgv::cpu(&p).unwrap();
    let be = bgv.backend();
    let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let rk = bgv.gen_relin_key(&sk).unwrap();
    let gk = bgv.gen_galois_key(&sk, bgv.column_rotation_element(1)).unwrap();
    let digits = (0..p.dnum()).filter(|&j| !p.digit_range(j).is_empty()).count();
    let shape = (digits * 2 * (p.q().len() + p.p().len()) * p.n() * 4) as u64;
    let measure = |key: &KeySwitchKey<CpuBackend>| (key.digits.len(), counted_bytes(be, key));
    let (rk_measured, gk_measured) = (measure(&rk.0), measure(&gk.key));
    let rk_packed = rk.expand(be).unwrap().seeded().packed(be).unwrap();
    let gk_packed = gk.expand(be).unwrap().seeded().packed(be).unwrap();
    let packed_shape: u64 = {
        let ctx = be.context();
        let words: usize = ctx
            .moduli_of(&ctx.qp_basis(p.q().len() - 1).unwrap())
            .unwrap()
            .iter()
            .map(|m| (p.n() * m.bits() as usize).div_ceil(32))
            .sum();
        (digits * words * 4) as u64
    };
    for (what, packed) in [("relin", &rk_packed.0), ("galois", &gk_packed.key)] {
        let bytes = packed.resident_bytes(be);
        println!("{name} {what}: seeded and packed {bytes} bytes");
        assert_eq!(counted_bytes(be, packed), (bytes, bytes), "{name} {what}");
        assert_eq!(bytes, packed_shape, "{name} {what}");
    }
    for (what, (key_digits, (counted, counted_b)), full, half) in [
        ("relin", rk_measured, rk.resident_bytes(be), rk.seeded().resident_bytes(be)),
        ("galois", gk_measured, gk.resident_bytes(be), gk.seeded().resident_bytes(be)),
    ] {
        println!("{name} {what}: stored {full} bytes, seeded {half} bytes");
        assert_eq!(key_digits, digits, "{name} {what}");
        assert_eq!((full, half), (counted, counted_b), "{name} {what}: resident bytes are not the buffers' bytes");
        assert_eq!(counted, shape, "{name} {what}");
        assert_eq!(2 * counted_b, counted, "{name} {what}");
    }
}

#[test]
fn shipped_bgv_n13_key_sizes() {
    check_shipped_key_sizes("bgv-n13");
}

/// `bgv-n16` keys generated for real (two keys take under a second on the CPU in release), with
/// the sizes printed (`--nocapture`).
#[test]
fn shipped_bgv_n16_key_sizes() {
    check_shipped_key_sizes("bgv-n16");
}

/// A key plan from a shape-only run: each key switched under, at the highest level it was
/// used at; keys never used are left out; its bytes are the planned keys' resident bytes.
#[test]
fn a_plan_holds_each_used_key_at_its_highest_level() {
    let p = bgv_params();
    let plan = Bgv::plan_keys(&p, &KeyRequest::rotations(&[1, -3]).with_row_swap(), |bgv, sk, keys| {
        let ct = bgv.encrypt_symmetric(sk, &bgv.encoder().encode(&[1, 2, 3])?)?;
        bgv.rotate_columns(&bgv.mod_switch_to_level(&ct, 2)?, 1, keys)?;
        bgv.rotate_columns(&bgv.mod_switch_to_level(&ct, 1)?, 1, keys)?;
        let c3 = bgv.mod_switch_to_level(&ct, 3)?;
        bgv.relinearize(&bgv.mul(&c3, &c3)?, keys)?;
        Ok(())
    })
    .unwrap();
    let bgv = Bgv::cpu(&p).unwrap();
    let g = bgv.column_rotation_element(1);
    assert_eq!(plan.relin, Some(3));
    assert_eq!(plan.galois.iter().map(|(&e, &l)| (e, l)).collect::<Vec<_>>(), [(g, 2)]);
    let sk = bgv.gen_secret_key_from_seed(&[5; 32]).unwrap();
    let keys = bgv.gen_planned_keys(&sk, &plan).unwrap();
    let ctx = bgv.backend().context();
    assert_eq!(keys.resident_bytes(bgv.backend()), plan.resident_bytes(ctx, wgfhe::rlwe::KeyStorage::Stored).unwrap());
    assert_eq!(keys.relin.as_ref().unwrap().0.level(bgv.backend()).unwrap(), 3);
    assert_eq!(keys.galois[&g].key.level(bgv.backend()).unwrap(), 2);
}
