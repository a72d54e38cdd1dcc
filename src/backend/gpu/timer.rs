//! Device time from timestamp queries.
//!
//! Where the adapter has `wgpu::Features::TIMESTAMP_QUERY` and
//! `TIMESTAMP_QUERY_INSIDE_ENCODERS`, every submission's encoder starts and ends with a
//! timestamp (two queries of one query set, reused by every submission: the queue runs them in
//! order). At submission the pair is resolved and copied into a small staging buffer that is
//! mapped without waiting; once the device has run the submission, the mapping completes (on
//! any poll: a readback, a wait, the next submission) and [`Timer::collect`] adds
//! `(end - start) x period` to the device time. Nothing waits for a timestamp: a reading of
//! [`DeviceCounters`](super::DeviceCounters) counts the submissions whose timestamps have
//! arrived (`timed_submissions`); after [`GpuDevice::wait`](super::GpuDevice::wait) that is every
//! submission so far.
//!
//! What the figure means: the device's own clock between the first and the last command of
//! each submission, summed over submissions, so host time between submissions (recording,
//! waits) is not in it while copies, clears and dispatches are. wgpu warns that a driver may
//! reorder commands around an encoder timestamp; on Vulkan (wgpu writes them at the
//! bottom-of-pipe stage) the end mark follows all the submission's work, and a start mark waits
//! for the work submitted before it, so submissions' spans do not overlap.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes of the two resolved timestamps of one submission (`u64` ticks).
const PAIR_BYTES: u64 = 16;

/// The timestamp machinery of one device (see the module docs).
pub(super) struct Timer {
    query_set: wgpu::QuerySet,
    /// The resolve target (`QUERY_RESOLVE | COPY_SRC`), copied out at once in the same encoder.
    resolve: wgpu::Buffer,
    /// Nanoseconds per tick ([`wgpu::Queue::get_timestamp_period`]).
    period_ns: f64,
    /// Idle staging buffers (`MAP_READ | COPY_DST`).
    idle: Mutex<Vec<wgpu::Buffer>>,
    /// Staging buffers whose mapping completed (`true`) or failed, for [`Self::collect`].
    ready: Arc<Mutex<Vec<(wgpu::Buffer, bool)>>>,
    device_ns: AtomicU64,
    timed: AtomicU64,
    /// Submissions whose timestamps were mapped ([`Self::after_submit`]).
    issued: AtomicU64,
    /// Of those, the ones collected (timed or failed).
    done: AtomicU64,
}

impl Timer {
    /// The features the timer needs.
    pub(super) const FEATURES: wgpu::Features =
        wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS);

    pub(super) fn new(device: &wgpu::Device, queue: &wgpu::Queue) -> Self {
        let query_set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("submission timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamp resolve"),
            size: PAIR_BYTES,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        Self {
            query_set,
            resolve,
            period_ns: f64::from(queue.get_timestamp_period()),
            idle: Mutex::default(),
            ready: Arc::default(),
            device_ns: AtomicU64::new(0),
            timed: AtomicU64::new(0),
            issued: AtomicU64::new(0),
            done: AtomicU64::new(0),
        }
    }

    /// Marks the start of a new encoder's work.
    pub(super) fn start(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.write_timestamp(&self.query_set, 0);
    }

    /// Marks the end of `encoder`'s work and records the copy of both marks into a staging
    /// buffer, which the caller passes to [`Self::after_submit`] once the encoder is submitted.
    pub(super) fn finish(&self, device: &wgpu::Device, encoder: &mut wgpu::CommandEncoder) -> wgpu::Buffer {
        encoder.write_timestamp(&self.query_set, 1);
        encoder.resolve_query_set(&self.query_set, 0..2, &self.resolve, 0);
        let staging = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop().unwrap_or_else(|| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamp staging"),
                size: PAIR_BYTES,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        });
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &staging, 0, PAIR_BYTES);
        staging
    }

    /// Maps `staging` (its copy submitted); the mapping completes once the device has run it.
    pub(super) fn after_submit(&self, staging: wgpu::Buffer) {
        self.issued.fetch_add(1, Ordering::Relaxed);
        let ready = Arc::clone(&self.ready);
        let buf = staging.clone();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            // A failed mapping (a lost device) loses only this submission's figure.
            ready.lock().unwrap_or_else(PoisonError::into_inner).push((buf, r.is_ok()));
        });
    }

    /// Adds the device time of every submission whose timestamps have arrived.
    pub(super) fn collect(&self) {
        let done: Vec<(wgpu::Buffer, bool)> =
            std::mem::take(&mut *self.ready.lock().unwrap_or_else(PoisonError::into_inner));
        if done.is_empty() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        for (buf, mapped) in done {
            self.done.fetch_add(1, Ordering::Relaxed);
            if !mapped {
                continue;
            }
            let ticks = buf.get_mapped_range(..).ok().and_then(|view| {
                // The view is not 8-byte aligned by contract: read the words as bytes.
                let w = |i: usize| view.get(i * 8..i * 8 + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
                Some(w(1)?.saturating_sub(w(0)?))
            });
            buf.unmap();
            if let Some(ticks) = ticks {
                let ns = (ticks as f64 * self.period_ns).round() as u64;
                self.device_ns.fetch_add(ns, Ordering::Relaxed);
                self.timed.fetch_add(1, Ordering::Relaxed);
            }
            idle.push(buf);
        }
    }

    /// Whether every submission's timestamps have arrived.
    pub(super) fn complete(&self) -> bool {
        self.done.load(Ordering::Relaxed) >= self.issued.load(Ordering::Relaxed)
    }

    /// Device nanoseconds and timed submissions so far (after [`Self::collect`]).
    pub(super) fn read(&self) -> (u64, u64) {
        (self.device_ns.load(Ordering::Relaxed), self.timed.load(Ordering::Relaxed))
    }
}
