//! Test faults a [`GpuDevice`](super::GpuDevice) can be armed with (feature `testing`):
//! a lost device at a chosen dispatch, an out-of-memory at a chosen allocation.

use std::sync::atomic::{AtomicU64, Ordering};

/// A fault [`GpuDevice::inject_fault`](super::GpuDevice::inject_fault) arms (feature `testing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Destroy the device ([`GpuDevice::destroy`](super::GpuDevice::destroy)) just before the `after`-th next dispatch is
    /// recorded (1: the next one); that dispatch and everything after it is
    /// [`Error::DeviceLost`](crate::error::Error::DeviceLost).
    LoseDevice {
        /// Which dispatch, counting from 1.
        after: u64,
    },
    /// Make the `after`-th next allocation (pool hits included; 1: the next one) fail as
    /// [`Error::GpuOutOfMemory`](crate::error::Error::GpuOutOfMemory), releasing the idle pool first as a real failure does. Later
    /// allocations succeed again.
    OutOfMemory {
        /// Which allocation, counting from 1.
        after: u64,
    },
}

/// Countdowns of the armed faults (0: disarmed).
#[derive(Debug, Default)]
pub(super) struct Faults {
    pub(super) lose_at_dispatch: AtomicU64,
    pub(super) oom_at_alloc: AtomicU64,
}

impl Faults {
    /// Counts one event down; true when it is the armed one (which disarms it).
    pub(super) fn tick(counter: &AtomicU64) -> bool {
        counter.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)) == Ok(1)
    }
}
