//! What a device counts: the public [`DeviceCounters`] snapshot and its atomic twins.

use std::sync::atomic::{AtomicU64, Ordering};

/// The device memory a device's buffers hold now (a gauge, unlike [`DeviceCounters`]): read by
/// [`GpuDevice::memory`](super::GpuDevice::memory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceMemory {
    /// Bytes of device memory bound to the device's live buffers, as wgpu's Vulkan and DX12
    /// layers count them when they create and destroy a buffer (every buffer: data, the pool's
    /// idle ones, constant tables, the parameter arena, staging). Zero on a graphics API whose
    /// layer does not count (Metal, GL). wgpu destroys a dropped buffer once the device is done
    /// with it, so a reading can lag a drop until the next wait.
    pub buffer_bytes: u64,
    /// Live buffers, as the same layer counts them.
    pub buffers: u64,
    /// Of those, the buffer pool's idle ones and their bytes (whole size classes).
    pub pool: super::PoolStats,
}

/// Cumulative counts of what a device did (take the difference of two readings for one
/// operation). Uploads are host-to-device writes: buffer uploads, constant tables and the
/// parameter arena of each submission.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceCounters {
    /// Compute dispatches recorded.
    pub dispatches: u64,
    /// Buffer-to-buffer copies and clears recorded.
    pub copies: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Host-to-device writes.
    pub uploads: u64,
    /// Bytes of those writes.
    pub upload_bytes: u64,
    /// Device-to-host readbacks.
    pub readbacks: u64,
    /// Bytes read back.
    pub readback_bytes: u64,
    /// Device buffers created (pool misses).
    pub allocations: u64,
    /// Device time of the timed submissions, in nanoseconds, from the device's timestamps
    /// (zero where the adapter has none, [`GpuDevice::has_timestamps`](super::GpuDevice::has_timestamps); see the `timer` module:
    /// the span of each submission's commands on the device's clock, summed).
    pub device_ns: u64,
    /// Submissions whose timestamps have arrived (all of them after [`GpuDevice::wait`](super::GpuDevice::wait)).
    pub timed_submissions: u64,
    /// Of `upload_bytes`, the bytes of dispatch parameters (the parameter arena, and the
    /// occasional parameter list too long for it): the rest is data (buffers and tables).
    pub parameter_bytes: u64,
    /// Pipelines built (compiled) so far.
    pub pipelines_built: u64,
    /// Host time spent building them, in nanoseconds.
    pub pipeline_build_ns: u64,
}

impl std::ops::Sub for DeviceCounters {
    type Output = Self;

    /// The counts between an earlier reading `rhs` and this one.
    fn sub(self, rhs: Self) -> Self {
        Self {
            dispatches: self.dispatches.saturating_sub(rhs.dispatches),
            copies: self.copies.saturating_sub(rhs.copies),
            submissions: self.submissions.saturating_sub(rhs.submissions),
            uploads: self.uploads.saturating_sub(rhs.uploads),
            upload_bytes: self.upload_bytes.saturating_sub(rhs.upload_bytes),
            readbacks: self.readbacks.saturating_sub(rhs.readbacks),
            readback_bytes: self.readback_bytes.saturating_sub(rhs.readback_bytes),
            allocations: self.allocations.saturating_sub(rhs.allocations),
            device_ns: self.device_ns.saturating_sub(rhs.device_ns),
            timed_submissions: self.timed_submissions.saturating_sub(rhs.timed_submissions),
            parameter_bytes: self.parameter_bytes.saturating_sub(rhs.parameter_bytes),
            pipelines_built: self.pipelines_built.saturating_sub(rhs.pipelines_built),
            pipeline_build_ns: self.pipeline_build_ns.saturating_sub(rhs.pipeline_build_ns),
        }
    }
}

/// The atomic twins of [`DeviceCounters`].
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) dispatches: AtomicU64,
    pub(super) copies: AtomicU64,
    pub(super) submissions: AtomicU64,
    pub(super) uploads: AtomicU64,
    pub(super) upload_bytes: AtomicU64,
    pub(super) readbacks: AtomicU64,
    pub(super) readback_bytes: AtomicU64,
    pub(super) allocations: AtomicU64,
    pub(super) parameter_bytes: AtomicU64,
}

impl Counters {
    pub(super) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn upload(&self, bytes: u64) {
        Self::add(&self.uploads, 1);
        Self::add(&self.upload_bytes, bytes);
    }

    pub(super) fn parameters(&self, bytes: u64) {
        self.upload(bytes);
        Self::add(&self.parameter_bytes, bytes);
    }

    pub(super) fn read(&self) -> DeviceCounters {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DeviceCounters {
            dispatches: r(&self.dispatches),
            copies: r(&self.copies),
            submissions: r(&self.submissions),
            uploads: r(&self.uploads),
            upload_bytes: r(&self.upload_bytes),
            readbacks: r(&self.readbacks),
            readback_bytes: r(&self.readback_bytes),
            allocations: r(&self.allocations),
            device_ns: 0,
            timed_submissions: 0,
            parameter_bytes: r(&self.parameter_bytes),
            pipelines_built: 0,
            pipeline_build_ns: 0,
        }
    }
}
