//! Shared by the integration tests: the GPU device, opened once per test binary.

use std::sync::{Arc, OnceLock};

use wgfhe::backend::gpu::GpuDevice;

/// The shared device, or `None` (after printing `SKIPPED: <reason>`) when there is no adapter.
/// With `WGFHE_REQUIRE_GPU=1` (set in CI) a missing adapter is a failure, never a skip.
pub fn device() -> Option<Arc<GpuDevice>> {
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

/// A device of the caller's own (or `None`, as [`device`]): for tests that read the device's
/// counters (dispatches, submissions, device time), which tests sharing [`device`] from other
/// threads would add to.
#[allow(dead_code, reason = "not every test binary reads counters")]
#[allow(clippy::expect_used, reason = "a test helper: no second device is a failure")]
pub fn own_device() -> Option<Arc<GpuDevice>> {
    device()?;
    Some(Arc::new(GpuDevice::new().expect("a second device on the adapter that opened the first")))
}

/// A small deterministic generator (splitmix64) for test inputs.
#[allow(dead_code, reason = "not every test binary draws inputs")]
pub struct Rng(pub u64);

#[allow(dead_code, reason = "not every test binary draws inputs")]
impl Rng {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (up to the modulo bias, which test inputs do not mind).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
