//! The wgpu device: adapter selection, limits, pipeline cache, buffer pool, and the recorder
//! every kernel, copy and clear goes through.
//!
//! # Recording
//!
//! Kernels are *recorded*, not submitted: every dispatch, buffer copy and clear goes into one
//! open command encoder (dispatches into one open compute pass; wgpu puts the barriers between
//! them). The encoder is submitted by [`GpuDevice::flush`] (the schemes call it, through
//! [`Backend::flush`](crate::backend::Backend::flush), at the end of each top-level operation),
//! by a readback ([`GpuDevice::download`]) or a wait ([`GpuDevice::wait`]), and on its own once it
//! holds [`MAX_PENDING_COMMANDS`] commands, so a long chain keeps the device busy with bounded
//! host memory.
//!
//! A hand-written kernel whose parameters fit in [`IMMEDIATE_WORDS`] words takes them as
//! *immediates* (push constants) where the adapter has `wgpu::Features::IMMEDIATES`: the device
//! builds a variant of the kernel whose `params` array is immediate data
//! ([`with_immediate_params`](super::sources::with_immediate_params)). Other parameters (generated
//! kernels, long per-limb lists, adapters without immediates) go into the *parameter arena* of
//! the submission: one storage buffer, written once when the encoder is submitted, whose slices
//! (at the adapter's storage offset alignment) are binding 0 of the kernels. No dispatch uploads
//! a buffer of its own.
//!
//! # Uploads and recycled buffers
//!
//! `queue.write_buffer` runs at the start of the *next* submission, before commands already
//! recorded into the open encoder. An upload into a pooled buffer that recorded commands still
//! read would overtake them. So the pool keeps a buffer released while commands are recorded in
//! *quarantine* until the encoder that may use it is submitted: kernel outputs (written by
//! recorded commands, which run in order) may take a quarantined buffer, uploads take only
//! buffers released before the last submission.
//!
//! # Errors
//!
//! No error scope wraps a dispatch or a submission (popping one blocks the host): validation
//! and out-of-memory errors raised while recording or submitting reach the device's error
//! handler, which keeps the first, typed; the next submission, readback or wait returns it.
//! Only a pipeline's build, once per pipeline, is checked in a scope of its own. Out-of-memory is [`Error::GpuOutOfMemory`] (allocation releases the idle pooled
//! buffers and retries once first), a lost device [`Error::DeviceLost`].
//!
//! A lost device stays lost: once wgpu reports the loss (its device-lost callback, for any
//! reason, [`GpuDevice::destroy`] included), every later allocation, upload, dispatch, copy,
//! submission and readback on the device is [`Error::DeviceLost`], checked (one atomic load)
//! before any wgpu call. wgpu itself drops errors on a lost device silently and its readbacks
//! fail untyped; the check is what makes them typed, and what keeps a buffer made before the
//! loss from being read back as garbage. A new device ([`GpuDevice::new`]) can be opened after.
//!
//! # Dispatch grids
//!
//! A dispatch of `threads` invocations is a grid of 256-thread workgroups, 2-D past the device's
//! `max_compute_workgroups_per_dimension` groups; one beyond that limit in both dimensions is
//! [`Error::AdapterLimit`], before anything is recorded.
//!
//! # Injected faults (feature `testing`)
//!
//! With the `testing` feature (enabled for this crate's own tests), [`GpuDevice::inject_fault`]
//! arms a [`Fault`]: the device destroyed before the `k`-th next dispatch is recorded (a device
//! lost in the middle of an operation), or the `k`-th next allocation failing as out of memory
//! (as if the driver refused it twice, the idle pool released in between). The tests in
//! `tests/fault.rs` use them; without the feature the switch does not exist.

use std::num::NonZeroU64;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use super::pipelines::{Builder, Pipe, Pipelines};
use super::sources::{Arithmetic, Kernel, IMMEDIATE_WORDS};
use super::timer::Timer;
use crate::error::{Error, Result};

/// Threads per workgroup of every 1-D kernel.
pub const WORKGROUP_SIZE: u64 = 256;
/// Most storage buffers per shader stage the device asks for (the adapter may allow fewer).
pub const MAX_STORAGE_BUFFERS: u32 = 32;
/// Commands (dispatches, copies, clears) the open encoder holds before it is submitted without
/// waiting for a flush.
pub const MAX_PENDING_COMMANDS: usize = 512;
/// How long a readback waits for its mapping after the device reported the copy done (the
/// callback may be running on another thread's poll) before it gives up with a typed error.
const READBACK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);
/// How long [`GpuDevice::wait`] waits for the last timestamps' mappings after the device is idle.
const TIMESTAMP_PATIENCE: std::time::Duration = std::time::Duration::from_secs(1);
/// Bytes of the parameter arena of one submission (parameters of a single dispatch larger than
/// this get a buffer of their own).
const ARENA_BYTES: u64 = 1 << 20;

fn backend_err(reason: impl Into<String>) -> Error {
    Error::Backend { backend: "gpu", reason: reason.into() }
}

/// What the adapter is (for `wgfhe info` and test reports).
#[derive(Debug, Clone, serde::Serialize)]
pub struct AdapterSummary {
    /// Adapter name.
    pub name: String,
    /// Graphics API ("Vulkan", "Metal", ...).
    pub backend: String,
    /// Device type ("DiscreteGpu", "Cpu", ...).
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// The adapter's optional features (wgpu's names).
    pub features: Vec<String>,
    /// How the kernels form 64-bit products on this device.
    pub arithmetic: Arithmetic,
}

impl AdapterSummary {
    /// Whether the adapter is a software renderer running on the CPU (llvmpipe/lavapipe,
    /// SwiftShader, WARP): wgpu reports those as device type `Cpu`; the names are checked too,
    /// for drivers that report another type.
    #[must_use]
    pub fn is_software(&self) -> bool {
        const NAMES: [&str; 4] = ["llvmpipe", "lavapipe", "swiftshader", "microsoft basic render driver"];
        let name = self.name.to_lowercase();
        self.device_type == "Cpu" || NAMES.iter().any(|n| name.contains(n))
    }
}

/// How to open a device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceOptions {
    /// Refuse a software adapter ([`AdapterSummary::is_software`]) with [`Error::NoAdapter`]
    /// (what `WGFHE_BACKEND=auto` does: the CPU backend is faster than a GPU emulated on it).
    pub reject_software: bool,
    /// Use [`Arithmetic::Emulated`] even where the adapter has native 64-bit integers (to test
    /// that path on such an adapter).
    pub emulate_int64: bool,
    /// Pass every kernel's parameters through the parameter arena even where the adapter has
    /// immediates (to test that path on such an adapter).
    pub no_immediates: bool,
    /// Do not ask for timestamp queries even where the adapter has them (device time is then
    /// not measured; [`GpuDevice::has_timestamps`]).
    pub no_timestamps: bool,
    /// The graphics APIs to look for adapters on; `None` is Vulkan, Metal and DX12. The library
    /// reads no environment: an application that honours wgpu's `WGPU_BACKEND` passes
    /// `wgpu::Backends::from_env()` here.
    pub backends: Option<wgpu::Backends>,
}

mod counters;
mod pool;
use counters::Counters;
pub use counters::{DeviceCounters, DeviceMemory};
pub use pool::{size_class, BufferPool, PoolStats};
#[cfg(feature = "testing")]
mod faults;
#[cfg(feature = "testing")]
pub use faults::Fault;
#[cfg(feature = "testing")]
use faults::Faults;

/// The open encoder and what belongs to it.
#[derive(Default)]
struct Recorder {
    encoder: Option<wgpu::CommandEncoder>,
    /// The open compute pass of `encoder` (closed before a copy is recorded).
    pass: Option<wgpu::ComputePass<'static>>,
    /// Commands recorded into `encoder`.
    commands: usize,
    /// Parameter words of the recorded dispatches, written to `arena_buf` at submission.
    arena: Vec<u32>,
    /// The arena's device buffer ([`ARENA_BYTES`]), created on first use and reused by every
    /// submission (its write is ordered after the previous submission's reads).
    arena_buf: Option<wgpu::Buffer>,
}

impl Recorder {
    /// A new encoder, its start marked by `timer`.
    fn open(device: &wgpu::Device, timer: Option<&Timer>) -> wgpu::CommandEncoder {
        let mut enc = device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("wgfhe") });
        if let Some(t) = timer {
            t.start(&mut enc);
        }
        enc
    }

    /// The open encoder, its compute pass closed.
    fn encoder(&mut self, device: &wgpu::Device, timer: Option<&Timer>) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| Self::open(device, timer))
    }

    /// The open compute pass.
    fn pass(&mut self, device: &wgpu::Device, timer: Option<&Timer>) -> &mut wgpu::ComputePass<'static> {
        let Self { encoder, pass, .. } = self;
        let enc = encoder.get_or_insert_with(|| Self::open(device, timer));
        pass.get_or_insert_with(|| {
            enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("kernels"), timestamp_writes: None })
                .forget_lifetime()
        })
    }
}

/// A wgpu device with its queue, pipeline cache, buffer pool and command recorder.
pub struct GpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    summary: AdapterSummary,
    limits: wgpu::Limits,
    arithmetic: Arithmetic,
    /// Whether hand-written kernels take short parameters as immediates.
    immediates: bool,
    /// Pipelines of hand-written kernels by name, of generated ones by shape.
    pipelines: Mutex<Pipelines>,
    recorder: Mutex<Recorder>,
    /// Device time from timestamps, where the adapter has them.
    timer: Option<Timer>,
    /// Set while [`Self::build_pipelines`] runs its work: dispatches, copies and clears are
    /// not recorded (their pipelines are built), readbacks are refused.
    dry: std::sync::atomic::AtomicBool,
    counters: Counters,
    pool: Arc<BufferPool>,
    /// The first device error no error scope caught (wgpu's default handler would panic);
    /// reported by the next submission, readback or wait.
    uncaptured: Arc<Mutex<Option<Error>>>,
    /// Why the device was lost, once it is (set by the device-lost callback or
    /// [`Self::destroy`]); every later call is [`Error::DeviceLost`].
    lost: Arc<OnceLock<String>>,
    /// Armed test faults.
    #[cfg(feature = "testing")]
    faults: Faults,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice").field("adapter", &self.summary).finish_non_exhaustive()
    }
}

/// Whether Mesa's device-selection layer should be switched off with `NODEVICE_SELECT=1` for
/// a process with these environment facts: it should be when the user has not configured the
/// layer (`nodevice_select_set`: `NODEVICE_SELECT` or `MESA_VK_DEVICE_SELECT` present) and
/// there is no display session (`session`: `XDG_RUNTIME_DIR` names a directory).
///
/// The layer (`VK_LAYER_MESA_device_select`, an implicit Vulkan layer every instance loads)
/// connects to the Wayland compositor to find the display's GPU whenever the instance enables
/// the Wayland surface extension, which wgpu always does; without a session libwayland prints
/// `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` on every instance. The
/// layer only reorders adapters for presentation, which a compute library does not use, and has
/// a documented off switch. The library never changes the environment (that is unsound while
/// other threads read it): an application sets the variable itself, before its first thread,
/// as the `wgfhe` command line and the Python module do.
#[must_use]
pub fn should_quiet_device_select(nodevice_select_set: bool, session: bool) -> bool {
    !nodevice_select_set && !session
}

/// Workgroup grid `(x, y)` of `threads` invocations, at most `max_per_dim` workgroups in each
/// dimension (the device's `max_compute_workgroups_per_dimension`); a larger one is
/// [`Error::AdapterLimit`].
fn grid(threads: u64, max_per_dim: u32) -> Result<(u32, u32)> {
    let max = u64::from(max_per_dim.max(1));
    let groups = threads.div_ceil(WORKGROUP_SIZE);
    let x = groups.clamp(1, max);
    let y = groups.div_ceil(x);
    if y > max {
        return Err(Error::AdapterLimit {
            reason: format!(
                "{threads} invocations need {groups} workgroups of {WORKGROUP_SIZE}, beyond the dispatch grid of \
                 {max} x {max} workgroups"
            ),
        });
    }
    Ok((x as u32, y as u32))
}

impl GpuDevice {
    /// Opens the first adapter (Vulkan, Metal or DX12 unless [`DeviceOptions::backends`] says otherwise),
    /// software adapters included, with default [`DeviceOptions`]: the adapter's own
    /// storage-binding, buffer-size, workgroup-memory and workgroup-size limits instead of
    /// WebGPU's defaults.
    pub fn new() -> Result<Self> {
        Self::with_options(DeviceOptions::default())
    }

    /// Opens the best adapter (Vulkan, Metal or DX12 unless [`DeviceOptions::backends`] says otherwise) with
    /// the adapter's own storage-binding, buffer-size and offset-alignment limits instead of
    /// WebGPU's defaults, and `SHADER_INT64` where the adapter has it (unless
    /// [`DeviceOptions::emulate_int64`]).
    pub fn with_options(options: DeviceOptions) -> Result<Self> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends =
            options.backends.unwrap_or(wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12);
        let instance = wgpu::Instance::new(desc);
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| Error::NoAdapter { reason: e.to_string() })?;
        let info = adapter.get_info();
        let features = adapter.features();
        let arithmetic = if features.contains(wgpu::Features::SHADER_INT64) && !options.emulate_int64 {
            Arithmetic::NativeInt64
        } else {
            Arithmetic::Emulated
        };
        let summary = AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info),
            features: features.iter_names().map(|(name, _)| name.to_owned()).collect(),
            arithmetic,
        };
        if options.reject_software && !crate::backend::auto_accepts(&summary) {
            return Err(Error::NoAdapter {
                reason: format!("{} is a software renderer (WGFHE_BACKEND=gpu takes it)", summary.name),
            });
        }
        let supported = adapter.limits();
        // The NTT sizes its workgroup-memory tiles from the compute limits (backend/gpu/ntt.rs).
        let limits = wgpu::Limits {
            max_compute_workgroup_storage_size: supported.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: supported.max_compute_invocations_per_workgroup,
            max_compute_workgroup_size_x: supported.max_compute_workgroup_size_x,
            max_storage_buffer_binding_size: supported.max_storage_buffer_binding_size,
            max_buffer_size: supported.max_buffer_size,
            max_storage_buffers_per_shader_stage: supported
                .max_storage_buffers_per_shader_stage
                .min(MAX_STORAGE_BUFFERS),
            min_storage_buffer_offset_alignment: supported.min_storage_buffer_offset_alignment,
            ..wgpu::Limits::default()
        };
        let immediate_bytes = (IMMEDIATE_WORDS * 4) as u32;
        let immediates = features.contains(wgpu::Features::IMMEDIATES)
            && supported.max_immediate_size >= immediate_bytes
            && !options.no_immediates;
        let mut required_features = match arithmetic {
            Arithmetic::NativeInt64 => wgpu::Features::SHADER_INT64,
            Arithmetic::Emulated => wgpu::Features::empty(),
        };
        let timestamps = features.contains(Timer::FEATURES) && !options.no_timestamps;
        if timestamps {
            required_features |= Timer::FEATURES;
        }
        let mut limits = limits;
        if immediates {
            required_features |= wgpu::Features::IMMEDIATES;
            limits.max_immediate_size = immediate_bytes;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgfhe"),
            required_features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| Error::NoAdapter { reason: format!("device request failed: {e}") })?;
        let uncaptured: Arc<Mutex<Option<Error>>> = Arc::default();
        let sink = Arc::clone(&uncaptured);
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let err = match e {
                wgpu::Error::OutOfMemory { .. } => Error::GpuOutOfMemory { reason: e.to_string() },
                wgpu::Error::Internal { .. } => Error::DeviceLost { reason: e.to_string() },
                wgpu::Error::Validation { .. } => backend_err(e.to_string()),
            };
            let mut slot = sink.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.is_none() {
                *slot = Some(err);
            }
        }));
        let lost: Arc<OnceLock<String>> = Arc::default();
        let sink = Arc::clone(&lost);
        device.set_device_lost_callback(move |reason, message| {
            // Destroyed included: a device destroyed under us (wgpu::Device::destroy) is lost.
            let _ = sink.set(format!("{reason:?}: {message}"));
        });
        let timer = timestamps.then(|| Timer::new(&device, &queue));
        Ok(Self {
            timer,
            device,
            queue,
            summary,
            limits,
            arithmetic,
            immediates,
            pipelines: Mutex::default(),
            dry: std::sync::atomic::AtomicBool::new(false),
            recorder: Mutex::default(),
            counters: Counters::default(),
            pool: Arc::default(),
            uncaptured,
            lost,
            #[cfg(feature = "testing")]
            faults: Faults::default(),
        })
    }

    /// Destroys the device now, as a driver reset or a removed adapter would: every later call
    /// on it (and on the buffers made on it) is [`Error::DeviceLost`]. May be called from any
    /// thread, while another records; the work recorded there fails with that error. For tests
    /// of that path, and to release the device's memory at once.
    pub fn destroy(&self) {
        let _ = self.lost.set("destroyed (GpuDevice::destroy)".to_owned());
        self.device.destroy();
    }

    /// Whether the device is lost ([`Self::destroy`], or reported lost by the driver).
    #[must_use]
    pub fn is_lost(&self) -> bool {
        self.lost.get().is_some()
    }

    /// [`Error::DeviceLost`] once the device is lost.
    fn alive(&self) -> Result<()> {
        match self.lost.get() {
            Some(reason) => Err(Error::DeviceLost { reason: reason.clone() }),
            None => Ok(()),
        }
    }

    /// Arms `fault` (feature `testing`; see the module docs). Arming a fault of the same kind
    /// again replaces it.
    #[cfg(feature = "testing")]
    pub fn inject_fault(&self, fault: Fault) {
        match fault {
            Fault::LoseDevice { after } => self.faults.lose_at_dispatch.store(after, Ordering::SeqCst),
            Fault::OutOfMemory { after } => self.faults.oom_at_alloc.store(after, Ordering::SeqCst),
        }
    }

    /// The adapter.
    #[must_use]
    pub fn summary(&self) -> &AdapterSummary {
        &self.summary
    }

    /// The limits the device was created with.
    #[must_use]
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// How the kernels form 64-bit products on this device.
    #[must_use]
    pub fn arithmetic(&self) -> Arithmetic {
        self.arithmetic
    }

    /// Whether hand-written kernels take parameters of up to [`IMMEDIATE_WORDS`] words as
    /// immediates (else every parameter goes through the parameter arena).
    #[must_use]
    pub fn uses_immediates(&self) -> bool {
        self.immediates
    }

    /// Compute dispatches recorded on this device so far.
    #[must_use]
    pub fn dispatch_count(&self) -> u64 {
        self.counters.dispatches.load(Ordering::Relaxed)
    }

    /// Whether the device measures its own time with timestamp queries (the adapter has
    /// `TIMESTAMP_QUERY` and `TIMESTAMP_QUERY_INSIDE_ENCODERS`, and
    /// [`DeviceOptions::no_timestamps`] is off): then [`DeviceCounters::device_ns`] is the
    /// device's time.
    #[must_use]
    pub fn has_timestamps(&self) -> bool {
        self.timer.is_some()
    }

    /// Everything counted on this device so far.
    #[must_use]
    pub fn counters(&self) -> DeviceCounters {
        let mut c = self.counters.read();
        if let Some(t) = &self.timer {
            t.collect();
            (c.device_ns, c.timed_submissions) = t.read();
        }
        let pipelines = self.pipelines.lock().unwrap_or_else(PoisonError::into_inner);
        c.pipelines_built = pipelines.count() as u64;
        c.pipeline_build_ns = pipelines.build_ns();
        c
    }

    /// The device memory its buffers hold now ([`DeviceMemory`]).
    #[must_use]
    pub fn memory(&self) -> DeviceMemory {
        let hal = self.device.get_internal_counters().hal;
        // The counts are signed (a layer adds on create, subtracts on destroy); never negative.
        let count = |v: isize| u64::try_from(v).unwrap_or(0);
        DeviceMemory {
            buffer_bytes: count(hal.buffer_memory.read()),
            buffers: count(hal.buffers.read()),
            pool: self.pool.stats(),
        }
    }

    /// Pipelines built (and cached) on this device so far.
    #[must_use]
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.lock().unwrap_or_else(PoisonError::into_inner).count()
    }

    /// Storage buffers one kernel may bind (binding 0, the parameters, included).
    #[must_use]
    pub fn max_storage_buffers(&self) -> u32 {
        self.limits.max_storage_buffers_per_shader_stage
    }

    /// Largest buffer, in 32-bit words, one storage binding can hold.
    #[must_use]
    pub fn max_binding_words(&self) -> usize {
        (self.limits.max_storage_buffer_binding_size / 4) as usize
    }

    fn check_words(&self, words: usize) -> Result<u64> {
        let bytes = (words as u64).checked_mul(4).ok_or(Error::SizeOverflow { what: "buffer size" })?;
        if bytes > self.limits.max_storage_buffer_binding_size || bytes > self.limits.max_buffer_size {
            return Err(Error::AdapterLimit {
                reason: format!(
                    "a buffer of {bytes} bytes exceeds the storage-binding limit of {} bytes",
                    self.limits.max_storage_buffer_binding_size
                ),
            });
        }
        Ok(bytes.max(4))
    }

    const USAGE: wgpu::BufferUsages =
        wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_SRC).union(wgpu::BufferUsages::COPY_DST);

    /// Returns (and clears) a device error that no error scope caught.
    fn take_uncaptured(&self) -> Result<()> {
        self.alive()?;
        match self.uncaptured.lock().unwrap_or_else(PoisonError::into_inner).take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The buffer pool.
    #[must_use]
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    fn lock_recorder(&self) -> MutexGuard<'_, Recorder> {
        self.recorder.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A storage buffer of at least `words` words (its size class), from the pool when one is
    /// idle. Contents are unspecified. `recorded_write`: the caller writes it only through
    /// recorded commands (a kernel output), so a buffer still used by unsubmitted commands will
    /// do; otherwise (a `queue.write_buffer`) only one free of them.
    fn alloc(&self, words: usize, recorded_write: bool) -> Result<wgpu::Buffer> {
        self.alive()?;
        let bytes = self.check_words(words)?;
        #[cfg(feature = "testing")]
        if Faults::tick(&self.faults.oom_at_alloc) {
            self.pool.clear();
            return Err(Error::GpuOutOfMemory {
                reason: format!("injected fault: allocation of {bytes} bytes refused"),
            });
        }
        let class = size_class(bytes);
        let limit = self.limits.max_storage_buffer_binding_size.min(self.limits.max_buffer_size);
        let size = if class <= limit { class } else { bytes.div_ceil(4) * 4 };
        if let Some(buf) = self.pool.take(size, recorded_write) {
            return Ok(buf);
        }
        let create = || {
            Counters::add(&self.counters.allocations, 1);
            let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
            let buf = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size,
                usage: Self::USAGE,
                mapped_at_creation: false,
            });
            match pollster::block_on(scope.pop()) {
                Some(e) => Err(Error::GpuOutOfMemory { reason: e.to_string() }),
                None => Ok(buf),
            }
        };
        create().or_else(|_| {
            // Out of memory: release the idle pooled buffers and try once more.
            self.pool.clear();
            create()
        })
    }

    /// A storage buffer of at least `words` words with unspecified contents, for a kernel (or
    /// recorded copies) to fill completely.
    pub fn output(&self, words: usize) -> Result<wgpu::Buffer> {
        self.alloc(words, true)
    }

    /// A zero-filled storage buffer of at least `words` words (the clear is recorded).
    pub fn zeros(&self, words: usize) -> Result<wgpu::Buffer> {
        let buf = self.alloc(words, true)?;
        if words > 0 && !self.is_dry() {
            let mut rec = self.lock_recorder();
            self.make_room(&mut rec)?;
            rec.encoder(&self.device, self.timer.as_ref()).clear_buffer(&buf, 0, Some((words as u64) * 4));
            rec.commands += 1;
            Counters::add(&self.counters.copies, 1);
        }
        Ok(buf)
    }

    /// A storage buffer of at least `words.len()` words, starting with `words`. The write
    /// happens before the commands recorded after this call and after those recorded before it
    /// that used the buffer (see the module docs).
    pub fn upload(&self, words: &[u32]) -> Result<wgpu::Buffer> {
        let buf = self.alloc(words.len(), false)?;
        if !words.is_empty() {
            self.queue.write_buffer(&buf, 0, bytemuck::cast_slice(words));
            self.counters.upload((words.len() as u64) * 4);
        }
        Ok(buf)
    }

    /// Reads `words` words of `buf` back to the host, after everything recorded so far (one
    /// submission: the recorded work and the copy to a staging buffer).
    pub fn download(&self, buf: &wgpu::Buffer, words: usize) -> Result<Vec<u32>> {
        if words == 0 {
            return Ok(Vec::new());
        }
        self.alive()?;
        if self.is_dry() {
            return Err(backend_err(
                "a readback inside GpuDevice::build_pipelines (its work is not run, so there is nothing to read)",
            ));
        }
        let size = (words as u64) * 4;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        {
            let mut rec = self.lock_recorder();
            rec.encoder(&self.device, self.timer.as_ref()).copy_buffer_to_buffer(buf, 0, &staging, 0, size);
            rec.commands += 1;
            self.submit(&mut rec)?;
        }
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceLost { reason: e.to_string() })?;
        // The wait covered the copy, but the mapping's callback may still be running on another
        // thread that polls the same device (it runs callbacks of every mapping it finds
        // resolved), and on a device lost meanwhile it may never run: wait for it in short
        // steps, polling again, stopping at a loss or after READBACK_PATIENCE.
        let start = std::time::Instant::now();
        let mapped = loop {
            match rx.recv_timeout(std::time::Duration::from_millis(5)) {
                Ok(r) => break r.map_err(|e| Error::ReadbackFailed { reason: e.to_string() }),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(Error::ReadbackFailed { reason: "the mapping's callback was dropped".into() })
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    self.alive()?;
                    if start.elapsed() > READBACK_PATIENCE {
                        break Err(Error::ReadbackFailed {
                            reason: format!("the mapping did not complete within {READBACK_PATIENCE:?}"),
                        });
                    }
                    self.device.poll(wgpu::PollType::Poll).map_err(|e| Error::DeviceLost { reason: e.to_string() })?;
                }
            }
        };
        // A loss explains a failed mapping, and voids a successful one.
        self.alive()?;
        mapped?;
        self.take_uncaptured()?;
        let view = slice.get_mapped_range().map_err(|e| Error::ReadbackFailed { reason: format!("{e:?}") })?;
        let out: Vec<u32> = bytemuck::cast_slice(&view).to_vec();
        drop(view);
        staging.unmap();
        Counters::add(&self.counters.readbacks, 1);
        Counters::add(&self.counters.readback_bytes, size);
        Ok(out)
    }

    /// Submits everything recorded so far (nothing if nothing is); does not wait.
    pub fn flush(&self) -> Result<()> {
        let mut rec = self.lock_recorder();
        self.submit(&mut rec)
    }

    /// Submits everything recorded and blocks until the device has finished it (for timing).
    pub fn wait(&self) -> Result<()> {
        self.flush()?;
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceLost { reason: e.to_string() })?;
        if let Some(t) = &self.timer {
            // The wait covered every submission; a mapping's callback may still be running on
            // another thread's poll: give the last ones a moment.
            let start = std::time::Instant::now();
            t.collect();
            while !t.complete() && start.elapsed() < TIMESTAMP_PATIENCE && self.alive().is_ok() {
                std::thread::sleep(std::time::Duration::from_micros(200));
                self.device.poll(wgpu::PollType::Poll).map_err(|e| Error::DeviceLost { reason: e.to_string() })?;
                t.collect();
            }
        }
        self.take_uncaptured()
    }

    /// Submits the open encoder (after writing the parameter arena),
    /// then frees the buffers quarantined while it was recorded.
    fn submit(&self, rec: &mut Recorder) -> Result<()> {
        rec.pass = None;
        let encoder = rec.encoder.take();
        // Taken together with the encoder: every buffer released so far was last used by
        // commands in it (or submitted earlier).
        let released = self.pool.take_quarantine();
        let Some(encoder) = encoder else {
            self.pool.release(released);
            return self.take_uncaptured();
        };
        if let Err(e) = self.alive() {
            // Nothing recorded for a lost device runs.
            rec.arena.clear();
            rec.commands = 0;
            self.pool.release(released);
            return Err(e);
        }
        if !rec.arena.is_empty() {
            if let Some(buf) = &rec.arena_buf {
                self.queue.write_buffer(buf, 0, bytemuck::cast_slice(&rec.arena));
                self.counters.parameters((rec.arena.len() as u64) * 4);
            }
            rec.arena.clear();
        }
        rec.commands = 0;
        let mut encoder = encoder;
        let staging = self.timer.as_ref().map(|t| t.finish(&self.device, &mut encoder));
        // No error scope: wgpu reports a submission's errors to the device's handler while
        // `submit` runs, which keeps the first (typed) for `take_uncaptured` just below.
        self.queue.submit([encoder.finish()]);
        if let (Some(t), Some(staging)) = (self.timer.as_ref(), staging) {
            t.after_submit(staging);
            t.collect();
        }
        Counters::add(&self.counters.submissions, 1);
        self.pool.release(released);
        self.take_uncaptured()
    }

    /// Submits the open encoder if it holds [`MAX_PENDING_COMMANDS`] commands.
    fn make_room(&self, rec: &mut Recorder) -> Result<()> {
        if rec.commands >= MAX_PENDING_COMMANDS {
            self.submit(rec)?;
        }
        Ok(())
    }

    /// Records a copy of `words` words from `src` at word `src_off` to `dst` at word `dst_off`.
    pub fn copy(
        &self,
        src: &wgpu::Buffer,
        src_off: usize,
        dst: &wgpu::Buffer,
        dst_off: usize,
        words: usize,
    ) -> Result<()> {
        self.copy_many(&[(src, src_off, dst, dst_off, words)])
    }

    /// Records several copies `(src, src_off, dst, dst_off, words)` (offsets and lengths in
    /// words), in order; a copy continuing the previous one in both buffers (consecutive limbs)
    /// joins it.
    pub fn copy_many(&self, copies: &[(&wgpu::Buffer, usize, &wgpu::Buffer, usize, usize)]) -> Result<()> {
        let mut runs: Vec<(&wgpu::Buffer, usize, &wgpu::Buffer, usize, usize)> = Vec::with_capacity(copies.len());
        for &(src, src_off, dst, dst_off, words) in copies.iter().filter(|c| c.4 > 0) {
            match runs.last_mut() {
                Some((s, so, d, d_off, w))
                    if *s == src && *d == dst && *so + *w == src_off && *d_off + *w == dst_off =>
                {
                    *w += words;
                }
                _ => runs.push((src, src_off, dst, dst_off, words)),
            }
        }
        if runs.is_empty() {
            return Ok(());
        }
        self.alive()?;
        if self.is_dry() {
            return Ok(());
        }
        let mut rec = self.lock_recorder();
        self.make_room(&mut rec)?;
        let enc = rec.encoder(&self.device, self.timer.as_ref());
        for &(src, src_off, dst, dst_off, words) in &runs {
            enc.copy_buffer_to_buffer(src, (src_off as u64) * 4, dst, (dst_off as u64) * 4, (words as u64) * 4);
        }
        rec.commands += runs.len();
        Counters::add(&self.counters.copies, runs.len() as u64);
        Ok(())
    }

    /// Whether [`Self::build_pipelines`] is running its work.
    fn is_dry(&self) -> bool {
        self.dry.load(Ordering::Acquire)
    }

    /// Builds every pipeline `work` dispatches, without running it, and returns how many were
    /// new: what is recorded so far is submitted first, then `work` runs with recording off, so
    /// its dispatches build (and cache) their pipelines while no dispatch, copy or clear reaches
    /// the device. Uploads still happen (tables the backend caches stay right); a readback is
    /// an error, there being nothing to read. A server calls it once when it starts, with one
    /// evaluation of its circuit on placeholder inputs, so that no pipeline is compiled inside
    /// the work it times.
    ///
    /// Every buffer a kernel or copy was to fill inside `work` holds unspecified words: results
    /// made inside it must not outlive it (a cache of prepared plaintexts must not be filled
    /// there). Recording is off for the whole device while `work` runs, so work submitted
    /// meanwhile from other threads does not run either: call it before serving, with nothing
    /// else on the device.
    ///
    /// Errors: those of `work`, and of the first submission.
    pub fn build_pipelines(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<usize> {
        /// Turns recording back on however `work` ends.
        struct Wet<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Wet<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        self.flush()?;
        let before = self.pipeline_count();
        self.dry.store(true, Ordering::Release);
        let wet = Wet(&self.dry);
        let done = work();
        drop(wet);
        done?;
        Ok(self.pipeline_count() - before)
    }

    /// What builds this device's pipelines.
    fn builder(&self) -> Builder<'_> {
        Builder { arithmetic: self.arithmetic, device: &self.device }
    }

    /// Records `kernel` (its [`Kernel::wgsl_for`] this device's arithmetic) over `threads`
    /// invocations (256 per workgroup, a 2-D grid past 65,535 groups). Binding 0 is the kernel's
    /// `params` array holding `params` (as immediates where the device uses them and `params`
    /// fits, see the module docs); bindings `1..` are `buffers` in order.
    pub fn dispatch(&self, kernel: &Kernel, params: &[u32], buffers: &[&wgpu::Buffer], threads: u64) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        // Before the pipeline is built: a grid beyond the limit needs none.
        let groups = grid(threads, self.limits.max_compute_workgroups_per_dimension)?;
        let immediates = self.immediates && params.len() <= IMMEDIATE_WORDS;
        let pipe = {
            let mut cache = self.pipelines.lock().unwrap_or_else(PoisonError::into_inner);
            // A pipeline built on a lost device would be invalid, and cached.
            self.alive()?;
            cache.kernel(kernel, immediates, &self.builder())?
        };
        let params = if pipe.immediates { Params::Immediate(params) } else { Params::Arena(params) };
        self.record(&pipe, params, buffers, groups)
    }

    /// [`Self::dispatch`] for a generated kernel (parameters always in the arena): `shape` is
    /// everything its source depends on (the pipeline-cache key, compared by value), `label`
    /// names it to the driver, and `source` is called only when no pipeline of `shape` is
    /// cached yet.
    #[allow(clippy::too_many_arguments, reason = "one dispatch's complete description")]
    pub fn dispatch_generated<K: std::hash::Hash + Eq + Clone + Send + Sync + 'static>(
        &self,
        shape: &K,
        label: &'static str,
        source: impl FnOnce() -> String,
        entry: &str,
        params: &[u32],
        buffers: &[&wgpu::Buffer],
        threads: u64,
    ) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let groups = grid(threads, self.limits.max_compute_workgroups_per_dimension)?;
        let pipe = {
            let mut cache = self.pipelines.lock().unwrap_or_else(PoisonError::into_inner);
            self.alive()?;
            cache.generated(shape, label, source, entry, &self.builder())?
        };
        self.record(&pipe, Params::Arena(params), buffers, groups)
    }

    /// Records one dispatch of `pipe` over the workgroup grid `(x, y)` ([`grid`]) into the
    /// open compute pass.
    fn record(&self, pipe: &Pipe, params: Params<'_>, buffers: &[&wgpu::Buffer], (x, y): (u32, u32)) -> Result<()> {
        #[cfg(feature = "testing")]
        if Faults::tick(&self.faults.lose_at_dispatch) {
            self.destroy();
        }
        self.alive()?;
        if self.is_dry() {
            return Ok(());
        }
        let mut rec = self.lock_recorder();
        let mut entries = Vec::with_capacity(buffers.len() + 1);
        // The arena slice (or buffer of their own) of arena parameters.
        let params_buf;
        if let Params::Arena(words) = params {
            let words = if words.is_empty() { &[0][..] } else { words };
            let bytes = (words.len() as u64) * 4;
            let offset = if bytes > ARENA_BYTES {
                params_buf = wgpu::util::DeviceExt::create_buffer_init(
                    &self.device,
                    &wgpu::util::BufferInitDescriptor {
                        label: Some("parameters"),
                        contents: bytemuck::cast_slice(words),
                        usage: wgpu::BufferUsages::STORAGE,
                    },
                );
                self.counters.parameters(bytes);
                self.make_room(&mut rec)?;
                0
            } else {
                let align = (u64::from(self.limits.min_storage_buffer_offset_alignment).max(4) / 4) as usize;
                let fits =
                    |rec: &Recorder| (rec.arena.len().div_ceil(align) * align + words.len()) as u64 * 4 <= ARENA_BYTES;
                if rec.commands >= MAX_PENDING_COMMANDS || !fits(&rec) {
                    self.submit(&mut rec)?;
                }
                let start = rec.arena.len().div_ceil(align) * align;
                rec.arena.resize(start, 0);
                rec.arena.extend_from_slice(words);
                params_buf = match &rec.arena_buf {
                    Some(b) => b.clone(),
                    None => {
                        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
                            label: Some("parameter arena"),
                            size: ARENA_BYTES,
                            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        });
                        rec.arena_buf = Some(b.clone());
                        b
                    }
                };
                (start as u64) * 4
            };
            entries.push(wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &params_buf,
                    offset,
                    size: NonZeroU64::new(bytes),
                }),
            });
        } else {
            self.make_room(&mut rec)?;
        }
        for (i, b) in buffers.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry { binding: (i + 1) as u32, resource: b.as_entire_binding() });
        }
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(pipe.label),
            layout: &pipe.layout,
            entries: &entries,
        });
        let pass = rec.pass(&self.device, self.timer.as_ref());
        pass.set_pipeline(&pipe.pipeline);
        if let Params::Immediate(words) = params {
            let mut block = [0u32; IMMEDIATE_WORDS];
            for (b, &w) in block.iter_mut().zip(words) {
                *b = w;
            }
            pass.set_immediates(0, bytemuck::cast_slice(&block));
        }
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(x, y, 1);
        rec.commands += 1;
        Counters::add(&self.counters.dispatches, 1);
        Ok(())
    }
}

/// Where a dispatch's parameters go.
#[derive(Clone, Copy)]
enum Params<'a> {
    /// Immediate data (at most [`IMMEDIATE_WORDS`] words).
    Immediate(&'a [u32]),
    /// The parameter arena (binding 0).
    Arena(&'a [u32]),
}

#[cfg(test)]
mod tests;
