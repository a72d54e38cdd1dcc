//! The GPU backend against the CPU reference, bit for bit: every kernel on seeded random inputs
//! (several N and limb counts, sizes that are not multiples of the workgroup size, each run
//! twice), and whole seeded BGV and CKKS programs with every intermediate ciphertext compared.
//! A backend that flips one bit of one kernel's output must make the comparison fail.
//!
//! Without an adapter the tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` (set in CI) turns
//! that into a failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "tests"
)]

use std::sync::{Arc, OnceLock};

use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::testing::FlipOneBit;
use wgfhe::backend::CpuBackend;
use wgfhe::params::{self, Parameters};
use wgfhe::poly::RingContext;
use wgfhe::verify;

/// The shared device, or why there is none.
fn device() -> Option<Arc<GpuDevice>> {
    static DEV: OnceLock<Result<Arc<GpuDevice>, String>> = OnceLock::new();
    match DEV.get_or_init(|| GpuDevice::new().map(Arc::new).map_err(|e| e.to_string())) {
        Ok(d) => {
            eprintln!("GPU adapter: {:?}", d.summary());
            Some(Arc::clone(d))
        }
        Err(reason) => {
            assert!(
                std::env::var("WGFHE_REQUIRE_GPU").as_deref() != Ok("1"),
                "WGFHE_REQUIRE_GPU=1 but no GPU: {reason}"
            );
            println!("SKIPPED: {reason}");
            None
        }
    }
}

fn check_kernels(params: &Parameters, seed: u64) {
    let Some(dev) = device() else { return };
    let checks = verify::kernel_checks(params, &dev, seed).unwrap();
    assert!(checks.len() > 20, "only {} checks ran", checks.len());
    let failed: Vec<_> = checks.iter().filter(|c| !c.identical).collect();
    assert!(failed.is_empty(), "{}: kernels differ from the CPU: {failed:?}", params.name());
}

#[test]
fn kernels_match_cpu_small_rings() {
    // N = 16 and 128: sizes below and not multiples of the 256-thread workgroup.
    check_kernels(&params::insecure_test_bgv(4, 3, 2, 3, 97).unwrap(), 1);
    check_kernels(&params::insecure_test_bgv(7, 4, 2, 2, 257).unwrap(), 2);
}

#[test]
fn kernels_match_cpu_n1024_to_n16384() {
    check_kernels(&params::insecure_test_bgv(10, 4, 2, 2, 65537).unwrap(), 3);
    check_kernels(&params::insecure_test_ckks(12, 5, 2, 3, 30).unwrap(), 4);
    check_kernels(&params::insecure_test_ckks(14, 3, 1, 3, 30).unwrap(), 5);
}

#[test]
fn scheme_programs_identical_on_both_backends() {
    let Some(dev) = device() else { return };
    for p in [
        params::insecure_test_bgv(10, 5, 2, 3, 65537).unwrap(),
        params::by_name("bgv-n13").unwrap(),
        params::insecure_test_ckks(10, 5, 2, 3, 30).unwrap(),
        params::by_name("ckks-n13").unwrap(),
    ] {
        let check = verify::program_check(&p, &dev, 7).unwrap();
        assert!(check.identical, "{}: CPU and GPU transcripts differ: {check:?}", p.name());
    }
}

#[test]
fn harness_detects_one_flipped_bit() {
    let p = params::insecure_test_bgv(10, 5, 2, 3, 65537).unwrap();
    let plain = verify::transcript(CpuBackend::new(RingContext::new(&p).unwrap()), &p, 7).unwrap();
    for kernel in ["mul", "ntt_forward", "key_switch_inner_product", "scale_down"] {
        let flip = FlipOneBit::new(CpuBackend::new(RingContext::new(&p).unwrap()), kernel, 3);
        let tampered = verify::transcript(flip, &p, 7).unwrap();
        let check = verify::compare_transcripts("flip", &p, &plain, &tampered);
        assert!(!check.identical, "a flipped bit in one {kernel} output went unnoticed");
    }
}

#[test]
fn buffers_beyond_the_adapter_limit_are_typed_errors() {
    let Some(dev) = device() else { return };
    let words = dev.max_binding_words() + 1;
    assert!(matches!(dev.zeros(words), Err(wgfhe::Error::AdapterLimit { .. })));
    let p = params::insecure_test_bgv(10, 2, 1, 2, 65537).unwrap();
    let gpu = wgfhe::backend::GpuBackend::new(RingContext::new(&p).unwrap(), dev);
    use wgfhe::backend::Backend;
    assert!(matches!(gpu.zeros(words), Err(wgfhe::Error::AdapterLimit { .. })));
}
