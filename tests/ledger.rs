//! The traffic ledger: exact byte counts for known operations, an unchanged computation, and a
//! JSON-lines trace.

#![expect(clippy::unwrap_used, reason = "tests")]

use wgfhe::backend::ledger::{write_trace, Ledger, Record, Totals};
use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::params;
use wgfhe::ring::RingContext;
use wgfhe::rlwe::KeyRequest;

#[test]
fn hadd_reads_two_ciphertexts_and_writes_one() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap();
    let bgv = Bgv::new(Ledger::new(CpuBackend::new(RingContext::new(&p).unwrap()))).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let pt = bgv.encoder().encode(&[1, 2, 3]).unwrap();
    let a = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    let b = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    bgv.backend().take();
    let _sum = bgv.add(&a, &b).unwrap();
    let records = bgv.backend().take();
    let adds: Vec<&Record> = records.iter().filter(|r| r.kernel == "add").collect();
    assert_eq!(adds.len(), 2, "one add per polynomial: {records:?}");
    let poly_bytes = 4 * 1024 * 4u64; // 4 limbs of N = 1024 residues, 4 bytes each
    for r in adds {
        assert_eq!(r.bytes_read, 2 * poly_bytes);
        assert_eq!(r.bytes_written, poly_bytes);
        assert_eq!(r.modmuls, 0);
    }
}

#[test]
fn key_switching_reads_the_key_and_the_trace_is_json_lines() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap();
    let bgv = Bgv::new(Ledger::new(CpuBackend::new(RingContext::new(&p).unwrap()))).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[2; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
    let pt = bgv.encoder().encode(&[5]).unwrap();
    let ct = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    bgv.backend().take();
    let _rot = bgv.rotate_columns(&ct, 1, &keys).unwrap();
    let records = bgv.backend().take();
    let ks: Vec<&Record> = records.iter().filter(|r| r.kernel == "key_switch_inner_product").collect();
    assert_eq!(ks.len(), 1);
    // Two digits (dnum 2 over 4 primes), each (b, a) over the 6 limbs of Q P, 4 bytes a residue.
    assert_eq!(ks[0].key_bytes, 2 * 2 * 6 * 1024 * 4);
    let totals = Totals::of(&records);
    assert!(totals.arithmetic_intensity() > 0.0);
    assert!(totals.key_bytes <= totals.bytes_read);
    let mut trace = Vec::new();
    write_trace(&records, &mut trace).unwrap();
    let text = String::from_utf8(trace).unwrap();
    assert_eq!(text.lines().count(), records.len());
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for field in
            ["kernel", "n", "limbs", "bytes_read", "bytes_written", "key_bytes", "table_bytes", "prng_words", "modmuls"]
        {
            assert!(v.get(field).is_some(), "missing {field} in {line}");
        }
    }
}

/// Every intermediate ciphertext of a seeded BGV program (encrypt, HMULT + relinearise,
/// rotation, row swap, modulus switch, PMULT) as bytes, and the decryption.
fn transcript<B: Backend>(be: B) -> (Vec<Vec<u8>>, Vec<u64>) {
    let bgv = Bgv::new(be).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]).with_row_swap()).unwrap();
    let pt = bgv.encoder().encode(&[5, 6, 7, 8]).unwrap();
    let a = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    let prod = bgv.mul_relin(&a, &a, &keys).unwrap();
    let rot = bgv.rotate_columns(&prod, 1, &keys).unwrap();
    let swap = bgv.rotate_rows(&rot, &keys).unwrap();
    let low = bgv.mod_switch(&swap, 1).unwrap();
    let pm = bgv.mul_plain(&low, &pt).unwrap();
    let bytes = [&a, &prod, &rot, &swap, &low, &pm].into_iter().map(|c| bgv.ciphertext_to_bytes_unseeded(c).unwrap());
    (bytes.collect(), bgv.encoder().decode(&bgv.decrypt(&sk, &pm).unwrap()).unwrap())
}

#[test]
fn the_ledger_does_not_change_results() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 65537).unwrap();
    let (plain, plain_out) = transcript(CpuBackend::new(RingContext::new(&p).unwrap()));
    let (ledgered, ledgered_out) = transcript(Ledger::new(CpuBackend::new(RingContext::new(&p).unwrap())));
    assert_eq!(plain.len(), 6);
    assert!(plain == ledgered, "a ciphertext differs under the ledger");
    assert_eq!(plain_out, ledgered_out);
}

#[test]
fn a_timed_ledger_times_every_dispatch_and_changes_nothing() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap();
    let run = |timed: bool| {
        let cpu = CpuBackend::new(RingContext::new(&p).unwrap());
        let bgv = Bgv::new(if timed { Ledger::timed(cpu) } else { Ledger::new(cpu) }).unwrap();
        let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
        let pt = bgv.encoder().encode(&[7, 8]).unwrap();
        let ct = bgv.encrypt_symmetric(&sk, &pt).unwrap();
        bgv.backend().take();
        let prod = bgv.mul_relin(&ct, &ct, &keys).unwrap();
        let rot = bgv.rotate_columns(&prod, 1, &keys).unwrap();
        let records = bgv.backend().take();
        (bgv.ciphertext_to_bytes_unseeded(&rot).unwrap(), records)
    };
    let (plain_bytes, plain) = run(false);
    let (timed_bytes, timed) = run(true);
    assert_eq!(plain_bytes, timed_bytes, "timing must not change the computation");
    assert_eq!(plain.len(), timed.len());
    assert!(plain.iter().all(|r| r.elapsed_ns.is_none()));
    assert!(timed.iter().all(|r| r.elapsed_ns.is_some()), "{timed:?}");
    let mut trace = Vec::new();
    write_trace(&timed, &mut trace).unwrap();
    let text = String::from_utf8(trace).unwrap();
    assert!(text.lines().all(|l| l.contains("\"elapsed_ns\":")));
    let mut untimed = Vec::new();
    write_trace(&plain, &mut untimed).unwrap();
    assert!(!String::from_utf8(untimed).unwrap().contains("elapsed_ns"));
}
