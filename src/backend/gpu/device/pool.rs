//! The buffer pool: free and quarantined buffers by size class (see the [parent
//! module](super)'s "Uploads and recycled buffers").

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Smallest pool size class, in bytes.
pub(super) const MIN_CLASS: u64 = 1024;

/// The pool size class of a buffer of `bytes` bytes: 8 classes per power of two (multiples of
/// `2^(e-3)` for sizes in `(2^e, 2^(e+1)]`), at least 1 KiB. A class wastes less than an
/// eighth of the size asked for (above the smallest class).
#[must_use]
pub fn size_class(bytes: u64) -> u64 {
    if bytes <= MIN_CLASS {
        return MIN_CLASS;
    }
    // 2^e < bytes <= 2^(e+1), e >= 10.
    let e = 63 - (bytes - 1).leading_zeros();
    let step = 1u64 << (e - 3);
    bytes.div_ceil(step) * step
}

/// What a [`BufferPool`] holds idle (free and quarantined buffers together).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolStats {
    /// Idle buffers.
    pub buffers: usize,
    /// Their bytes (whole size classes).
    pub bytes: u64,
}

/// Free buffers by size class, reused instead of allocated.
#[derive(Debug, Default)]
pub struct BufferPool {
    pub(super) state: Mutex<PoolState>,
}

#[derive(Debug, Default)]
pub(super) struct PoolState {
    /// Released before the last submission: no unsubmitted command uses them.
    pub(super) free: HashMap<u64, Vec<wgpu::Buffer>>,
    /// Released since: commands in the open encoder may still use them.
    pub(super) quarantine: HashMap<u64, Vec<wgpu::Buffer>>,
}

/// Buffers kept per size class (free and quarantined each).
pub(super) const POOL_DEPTH: usize = 16;

pub(super) fn put(map: &mut HashMap<u64, Vec<wgpu::Buffer>>, buf: wgpu::Buffer) {
    let class = map.entry(buf.size()).or_default();
    if class.len() < POOL_DEPTH {
        class.push(buf);
    }
}

impl BufferPool {
    pub(super) fn lock(&self) -> MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns a buffer to its class (dropped if the class is full). It stays in quarantine
    /// until the commands recorded so far are submitted.
    pub fn recycle(&self, buf: wgpu::Buffer) {
        put(&mut self.lock().quarantine, buf);
    }

    /// The idle buffers and their bytes (a walk over the size classes under the pool's lock).
    #[must_use]
    pub fn stats(&self) -> PoolStats {
        let s = self.lock();
        let mut stats = PoolStats::default();
        for (class, bufs) in s.free.iter().chain(s.quarantine.iter()) {
            stats.buffers += bufs.len();
            stats.bytes += class * bufs.len() as u64;
        }
        stats
    }

    /// Drops every idle buffer.
    pub(super) fn clear(&self) {
        let mut s = self.lock();
        s.free.clear();
        s.quarantine.clear();
    }

    /// A buffer of class `class`: with `recorded_write` (the caller writes it only through
    /// recorded commands) a quarantined one if there is one (leaving the free ones to uploads),
    /// else a free one.
    pub(super) fn take(&self, class: u64, recorded_write: bool) -> Option<wgpu::Buffer> {
        let mut s = self.lock();
        if recorded_write {
            if let Some(b) = s.quarantine.get_mut(&class).and_then(Vec::pop) {
                return Some(b);
            }
        }
        s.free.get_mut(&class).and_then(Vec::pop)
    }

    /// Takes the quarantine (at the moment the open encoder is taken for submission).
    pub(super) fn take_quarantine(&self) -> HashMap<u64, Vec<wgpu::Buffer>> {
        std::mem::take(&mut self.lock().quarantine)
    }

    /// Frees buffers taken by [`Self::take_quarantine`] once their encoder is submitted.
    pub(super) fn release(&self, bufs: HashMap<u64, Vec<wgpu::Buffer>>) {
        let mut s = self.lock();
        for buf in bufs.into_values().flatten() {
            put(&mut s.free, buf);
        }
    }
}
