//! Faults of the GPU backend as typed errors: the device lost in the middle of an HMULT (a
//! [`Fault`] that destroys it between two kernels, and `GpuDevice::destroy` from another thread
//! while HMULTs run), an allocation refused as out of memory at every allocation of a key switch,
//! and a dispatch beyond the adapter's grid. Each is an `Err` of the right variant, never a
//! panic, a hang or a ciphertext that decrypts: on a lost device the ciphertexts made before the
//! loss and every later operation are `DeviceLost` too. After each, a new device opened in the
//! same process computes an HMULT, rotation and modulus switch word for word as the CPU does
//! (after an out-of-memory error, the same device does too).
//!
//! The faults are armed with `GpuDevice::inject_fault` (the `testing` feature, which this crate's
//! own tests enable). Without an adapter the tests print `SKIPPED: <reason>`;
//! `WGFHE_REQUIRE_GPU=1` (set in CI) turns that into a failure.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};
use wgfhe::rlwe::KeyRequest;

use wgfhe::backend::gpu::{sources::KERNELS, Fault, GpuDevice};
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::{Bgv, Ciphertext};
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::Error;

fn small_bgv() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap()
}

fn fresh_device() -> Arc<GpuDevice> {
    Arc::new(GpuDevice::new().unwrap())
}

fn bgv_on(dev: &Arc<GpuDevice>) -> Bgv<GpuBackend> {
    Bgv::new(GpuBackend::new(RingContext::new(&small_bgv()).unwrap(), Arc::clone(dev))).unwrap()
}

/// The words of a seeded BGV HMULT, rotation and modulus switch on `be`.
fn bgv_words<B: Backend>(be: B) -> wgfhe::Result<Vec<Vec<u32>>> {
    let bgv = Bgv::new(be)?;
    let sk = bgv.gen_secret_key_from_seed(&[7; 32])?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
    let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[2, 7, 1, 8, 2, 8])?)?;
    let prod = bgv.mul_relin(&x, &x, &keys)?;
    let rot = bgv.rotate_columns(&prod, 1, &keys)?;
    let low = bgv.mod_switch(&rot, 1)?;
    let mut out = Vec::new();
    for c in [&prod, &rot, &low] {
        for p in c.polys() {
            out.push(p.to_host(bgv.backend())?);
        }
    }
    Ok(out)
}

/// A device opened now (after a fault on another) computes what the CPU does.
fn a_new_device_works() {
    let dev = fresh_device();
    assert!(!dev.is_lost());
    let cpu = bgv_words(CpuBackend::new(RingContext::new(&small_bgv()).unwrap())).unwrap();
    let gpu = bgv_words(GpuBackend::new(RingContext::new(&small_bgv()).unwrap(), dev)).unwrap();
    assert_eq!(gpu, cpu, "a device opened after the fault differs from the CPU");
}

fn is_lost<T: std::fmt::Debug>(what: &str, r: wgfhe::Result<T>) {
    match r {
        Err(Error::DeviceLost { .. }) => {}
        other => panic!("{what} on a lost device: {other:?}, not DeviceLost"),
    }
}

/// Everything on a lost device is `DeviceLost`: the ciphertexts made before the loss (no
/// garbage decrypts), a second HMULT, new encryptions and keys, bare buffers.
fn everything_is_lost(bgv: &Bgv<GpuBackend>, sk: &wgfhe::rlwe::SecretKey<GpuBackend>, old: &[&Ciphertext<GpuBackend>]) {
    let keys_err = bgv.gen_evaluation_keys(sk, &KeyRequest::rotations(&[1]));
    is_lost("key generation", keys_err.map(|_| ()));
    for (i, ct) in old.iter().enumerate() {
        is_lost(&format!("decrypting ciphertext {i} made before the loss"), bgv.decrypt(sk, ct));
        is_lost(&format!("reading ciphertext {i} back"), ct.polys()[0].to_host(bgv.backend()));
        is_lost(&format!("HMULT of ciphertext {i} (no keys needed to fail)"), bgv.mul(ct, ct).map(|_| ()));
        is_lost(&format!("modulus switch of ciphertext {i}"), bgv.mod_switch(ct, 1).map(|_| ()));
    }
    is_lost("encryption", bgv.encrypt_symmetric(sk, &bgv.encoder().encode(&[1]).unwrap()).map(|_| ()));
    let be = bgv.backend();
    is_lost("upload", be.upload(&[1, 2, 3]).map(|_| ()));
    is_lost("zeros", be.zeros(16).map(|_| ()));
    is_lost("flush", be.flush());
    is_lost("synchronize", be.synchronize());
}

/// The device destroyed between two kernels of an HMULT (at the first, a middle and the last
/// of its dispatches, on a device of its own each time): the HMULT is `DeviceLost`, and so is
/// everything after it on that device; a new device works.
#[test]
fn device_lost_in_the_middle_of_an_hmult() {
    let Some(_) = common::device() else { return };
    // Dispatches of one HMULT with relinearisation, tables resident.
    let dispatches = {
        let dev = fresh_device();
        let bgv = bgv_on(&dev);
        let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
        let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[3, 4]).unwrap()).unwrap();
        bgv.mul_relin(&x, &x, &keys).unwrap();
        let before = dev.counters();
        bgv.mul_relin(&x, &x, &keys).unwrap();
        (dev.counters() - before).dispatches
    };
    assert!(dispatches > 4, "an HMULT of {dispatches} dispatches");
    for at in [1, dispatches / 2, dispatches] {
        let dev = fresh_device();
        let bgv = bgv_on(&dev);
        let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
        let enc = |v: &[u64]| bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(v).unwrap()).unwrap();
        let (x, y) = (enc(&[3, 4]), enc(&[5, 6]));
        let first = bgv.mul_relin(&x, &y, &keys).unwrap();
        assert_eq!(bgv.encoder().decode(&bgv.decrypt(&sk, &first).unwrap()).unwrap()[..2], [15, 24]);
        let before = dev.counters();
        dev.inject_fault(Fault::LoseDevice { after: at });
        let r = bgv.mul_relin(&x, &y, &keys);
        assert!(dev.is_lost());
        assert_eq!((dev.counters() - before).dispatches, at - 1, "the loss was not at dispatch {at}");
        is_lost(&format!("an HMULT losing its device at dispatch {at} of {dispatches}"), r.map(|_| ()));
        everything_is_lost(&bgv, &sk, &[&x, &y, &first]);
    }
    a_new_device_works();
}

/// `GpuDevice::destroy` from another thread while HMULTs run on this one: the first failing
/// operation is `DeviceLost` (wherever in the HMULT the loss lands), never a panic or a hang,
/// and so is everything after; a new device works.
#[test]
fn device_destroyed_from_another_thread_during_hmults() {
    let Some(_) = common::device() else { return };
    let dev = fresh_device();
    let bgv = bgv_on(&dev);
    let sk = bgv.gen_secret_key_from_seed(&[2; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
    let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[9, 9]).unwrap()).unwrap();
    // One HMULT to build the kernels, one timed, so the other thread's delay lands among the
    // ones below.
    let warm = bgv.mul_relin(&x, &x, &keys).unwrap();
    bgv.backend().synchronize().unwrap();
    let start = Instant::now();
    bgv.mul_relin(&x, &x, &keys).and_then(|p| bgv.decrypt(&sk, &p)).unwrap();
    let one = start.elapsed();
    let killer = {
        let dev = Arc::clone(&dev);
        std::thread::spawn(move || {
            std::thread::sleep(one * 3 + one / 2);
            dev.destroy();
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120) + one * 50;
    let mut done = 0;
    let err = loop {
        assert!(Instant::now() < deadline, "HMULTs kept succeeding on a destroyed device");
        // The product is computed and read back: a loss is seen at the latest at the readback.
        match bgv.mul_relin(&x, &x, &keys).and_then(|p| bgv.decrypt(&sk, &p)) {
            Ok(pt) => {
                assert_eq!(bgv.encoder().decode(&pt).unwrap()[..2], [81, 81], "a wrong product before the loss");
                done += 1;
            }
            Err(e) => break e,
        }
    };
    killer.join().unwrap();
    eprintln!("device destroyed after {done} HMULTs (one took {one:?}): {err}");
    assert!(matches!(err, Error::DeviceLost { .. }), "{err:?}");
    everything_is_lost(&bgv, &sk, &[&x, &warm]);
    a_new_device_works();
}

/// An allocation refused as out of memory at each allocation of a key switch (a rotation), in
/// turn: the rotation is `GpuOutOfMemory`; the device stays usable (the ciphertexts made before
/// decrypt, and a rotation after it is right), and a new device works.
#[test]
fn out_of_memory_at_every_allocation_of_a_key_switch() {
    let Some(_) = common::device() else { return };
    let dev = fresh_device();
    let bgv = bgv_on(&dev);
    let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
    let values: Vec<u64> = (1..=8).collect();
    let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&values).unwrap()).unwrap();
    let want = bgv.encoder().decode(&bgv.decrypt(&sk, &bgv.rotate_columns(&x, 1, &keys).unwrap()).unwrap()).unwrap();
    let mut failures = 0u64;
    for at in 1.. {
        assert!(at < 10_000, "a key switch of 10,000 allocations?");
        dev.inject_fault(Fault::OutOfMemory { after: at });
        match bgv.rotate_columns(&x, 1, &keys) {
            Err(Error::GpuOutOfMemory { .. }) => failures += 1,
            Err(e) => panic!("allocation {at} of a key switch refused: {e:?}, not GpuOutOfMemory"),
            Ok(rot) => {
                // Fewer than `at` allocations: the fault did not fire. Disarm it.
                dev.inject_fault(Fault::OutOfMemory { after: 0 });
                let got = bgv.encoder().decode(&bgv.decrypt(&sk, &rot).unwrap()).unwrap();
                assert_eq!(got, want, "the rotation after {failures} refused allocations differs");
                break;
            }
        }
        // The device survives each refusal: the input still decrypts.
        assert!(!dev.is_lost());
        assert_eq!(bgv.encoder().decode(&bgv.decrypt(&sk, &x).unwrap()).unwrap()[..8], values[..]);
    }
    eprintln!("a key switch failed at each of its {failures} allocations");
    assert!(failures > 2, "a key switch of {failures} allocations");
    // A whole HMULT, rotation and modulus switch on the same device, against the CPU.
    let cpu = bgv_words(CpuBackend::new(RingContext::new(&small_bgv()).unwrap())).unwrap();
    let same = bgv_words(GpuBackend::new(RingContext::new(&small_bgv()).unwrap(), Arc::clone(&dev))).unwrap();
    assert_eq!(same, cpu, "the device differs from the CPU after out-of-memory errors");
    a_new_device_works();
}

/// A dispatch whose grid exceeds the adapter's workgroups per dimension (in both dimensions) is
/// `AdapterLimit` before anything is recorded, not a validation abort; the device goes on.
#[test]
fn dispatch_beyond_the_grid_is_a_typed_error() {
    let Some(_) = common::device() else { return };
    let dev = fresh_device();
    let max = u64::from(dev.limits().max_compute_workgroups_per_dimension);
    let kernel = KERNELS.iter().find(|k| k.name == "elementwise").unwrap();
    let buf = dev.zeros(64).unwrap();
    let before = dev.counters();
    for threads in [256 * max * max + 1, u64::MAX] {
        let r = dev.dispatch(kernel, &[0; 4], &[&buf, &buf, &buf], threads);
        assert!(matches!(r, Err(Error::AdapterLimit { .. })), "{threads} threads: {r:?}");
        // Refused before the kernel is built: its source is never asked for.
        let asked = std::cell::Cell::new(false);
        let source = || {
            asked.set(true);
            kernel.wgsl()
        };
        let r = dev.dispatch_generated(&"grid-test", "grid-test", source, kernel.entry, &[0; 4], &[&buf], threads);
        assert!(matches!(r, Err(Error::AdapterLimit { .. })), "{threads} threads (generated): {r:?}");
        assert!(!asked.get());
    }
    assert_eq!((dev.counters() - before).dispatches, 0);
    dev.wait().unwrap();
    let cpu = bgv_words(CpuBackend::new(RingContext::new(&small_bgv()).unwrap())).unwrap();
    assert_eq!(bgv_words(GpuBackend::new(RingContext::new(&small_bgv()).unwrap(), dev)).unwrap(), cpu);
}
