//! The wgpu device: adapter selection, limits, pipeline cache, buffers, dispatch, readback.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::sources::{assemble, Kernel};
use crate::error::{Error, Result};

/// Threads per workgroup of every 1-D kernel.
pub const WORKGROUP_SIZE: u64 = 256;
/// Most workgroups per grid dimension.
const MAX_GROUPS_PER_DIM: u64 = 65_535;
/// Most storage buffers per shader stage the device asks for (the adapter may allow fewer).
pub const MAX_STORAGE_BUFFERS: u32 = 32;

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
}

/// Free buffers by size class (a power of two of bytes), reused instead of allocated.
#[derive(Debug, Default)]
pub struct BufferPool {
    free: Mutex<HashMap<u64, Vec<wgpu::Buffer>>>,
}

/// Buffers kept per size class.
const POOL_DEPTH: usize = 16;

impl BufferPool {
    /// Returns a buffer to its class (dropped if the class is full).
    pub fn recycle(&self, buf: wgpu::Buffer) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let class = free.entry(buf.size()).or_default();
        if class.len() < POOL_DEPTH {
            class.push(buf);
        }
    }

    fn clear(&self) {
        self.free.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }

    fn take(&self, class: u64) -> Option<wgpu::Buffer> {
        self.free.lock().unwrap_or_else(PoisonError::into_inner).get_mut(&class).and_then(Vec::pop)
    }
}

/// A wgpu device with its queue, pipeline cache and limits.
pub struct GpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    summary: AdapterSummary,
    limits: wgpu::Limits,
    /// Pipelines by kernel key: a shader's name, or a generated kernel's shape key.
    pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
    /// Compute dispatches submitted so far (tests check that a fused program is one dispatch).
    dispatches: AtomicU64,
    pool: Arc<BufferPool>,
    /// The first device error no error scope caught (wgpu's default handler would panic);
    /// reported by the next dispatch or readback.
    uncaptured: Arc<Mutex<Option<Error>>>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice").field("adapter", &self.summary).finish_non_exhaustive()
    }
}

impl GpuDevice {
    /// Opens the first adapter (Vulkan, Metal or DX12; `WGPU_BACKEND` narrows the choice), with
    /// the adapter's own storage-binding, buffer-size, workgroup-memory and workgroup-size
    /// limits instead of WebGPU's defaults.
    pub fn new() -> Result<Self> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        if std::env::var_os("WGPU_BACKEND").is_none() {
            desc.backends = wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12;
        }
        let instance = wgpu::Instance::new(desc);
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| Error::NoAdapter { reason: e.to_string() })?;
        let info = adapter.get_info();
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
            ..wgpu::Limits::default()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("wgfhe"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| Error::NoAdapter { reason: format!("device request failed: {e}") })?;
        let summary = AdapterSummary {
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info),
        };
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
        Ok(Self {
            device,
            queue,
            summary,
            limits,
            pipelines: Mutex::new(HashMap::new()),
            dispatches: AtomicU64::new(0),
            pool: Arc::default(),
            uncaptured,
        })
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

    /// Compute dispatches submitted on this device so far.
    #[must_use]
    pub fn dispatch_count(&self) -> u64 {
        self.dispatches.load(Ordering::Relaxed)
    }

    /// Pipelines built (and cached) on this device so far.
    #[must_use]
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.lock().unwrap_or_else(PoisonError::into_inner).len()
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

    /// A storage buffer of at least `words` words, from the pool when one of its size class is
    /// free. Contents are unspecified.
    fn alloc(&self, words: usize) -> Result<wgpu::Buffer> {
        let bytes = self.check_words(words)?;
        let class = bytes.next_power_of_two().max(1024);
        let size = if class <= self.limits.max_storage_buffer_binding_size { class } else { bytes.div_ceil(4) * 4 };
        if let Some(buf) = self.pool.take(size) {
            return Ok(buf);
        }
        let create = || {
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

    /// A zero-filled storage buffer of at least `words` words.
    pub fn zeros(&self, words: usize) -> Result<wgpu::Buffer> {
        let buf = self.alloc(words)?;
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("zeros") });
        enc.clear_buffer(&buf, 0, None);
        self.queue.submit([enc.finish()]);
        Ok(buf)
    }

    /// A storage buffer of at least `words.len()` words, starting with `words`.
    pub fn upload(&self, words: &[u32]) -> Result<wgpu::Buffer> {
        let buf = self.alloc(words.len())?;
        if !words.is_empty() {
            self.queue.write_buffer(&buf, 0, bytemuck::cast_slice(words));
        }
        Ok(buf)
    }

    /// Reads `words` words of `buf` back to the host.
    pub fn download(&self, buf: &wgpu::Buffer, words: usize) -> Result<Vec<u32>> {
        if words == 0 {
            return Ok(Vec::new());
        }
        let size = (words as u64) * 4;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        enc.copy_buffer_to_buffer(buf, 0, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceLost { reason: e.to_string() })?;
        rx.recv()
            .map_err(|_| Error::ReadbackFailed { reason: "callback dropped".into() })?
            .map_err(|e| Error::ReadbackFailed { reason: e.to_string() })?;
        self.take_uncaptured()?;
        let view = slice.get_mapped_range().map_err(|e| Error::ReadbackFailed { reason: format!("{e:?}") })?;
        let out: Vec<u32> = bytemuck::cast_slice(&view).to_vec();
        drop(view);
        staging.unmap();
        Ok(out)
    }

    /// Blocks until every submitted command has finished (for timing).
    pub fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::DeviceLost { reason: e.to_string() })?;
        self.take_uncaptured()
    }

    /// Copies `words` words from `src` at word `src_off` to `dst` at word `dst_off`.
    pub fn copy(&self, src: &wgpu::Buffer, src_off: usize, dst: &wgpu::Buffer, dst_off: usize, words: usize) {
        self.copy_many(&[(src, src_off, dst, dst_off, words)]);
    }

    /// Several copies `(src, src_off, dst, dst_off, words)` (offsets and lengths in words) in
    /// one submission.
    pub fn copy_many(&self, copies: &[(&wgpu::Buffer, usize, &wgpu::Buffer, usize, usize)]) {
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("copies") });
        for &(src, src_off, dst, dst_off, words) in copies {
            if words > 0 {
                enc.copy_buffer_to_buffer(src, (src_off as u64) * 4, dst, (dst_off as u64) * 4, (words as u64) * 4);
            }
        }
        self.queue.submit([enc.finish()]);
    }

    /// The cached pipeline `key`, built on first use from `source()` (the shared arithmetic is
    /// prepended, [`assemble`]).
    fn pipeline(&self, key: &str, source: impl FnOnce() -> String, entry: &str) -> Result<Arc<wgpu::ComputePipeline>> {
        let mut cache = self.pipelines.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = cache.get(key) {
            return Ok(Arc::clone(p));
        }
        let full = assemble(&source());
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(key),
            source: wgpu::ShaderSource::Wgsl(full.into()),
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(key),
            layout: None,
            module: &module,
            entry_point: Some(entry),
            compilation_options: wgpu::PipelineCompilationOptions::default(),
            cache: None,
        });
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(backend_err(format!("kernel {key} failed to build: {e}")));
        }
        let p = Arc::new(pipeline);
        cache.insert(key.to_owned(), Arc::clone(&p));
        Ok(p)
    }

    /// Runs `kernel` (its [`Kernel::wgsl`]) over `threads` invocations (256 per workgroup, a 2-D
    /// grid past 65,535 groups). Binding 0 is a read-only `array<u32>` holding `params`; bindings
    /// `1..` are `buffers` in order.
    pub fn dispatch(&self, kernel: &Kernel, params: &[u32], buffers: &[&wgpu::Buffer], threads: u64) -> Result<()> {
        self.dispatch_generated(kernel.name, || kernel.source().to_owned(), kernel.entry, params, buffers, threads)
    }

    /// [`Self::dispatch`] for a generated kernel: `key` names its shape (the pipeline cache
    /// key), and `source` is called only when no pipeline for `key` is cached yet.
    pub fn dispatch_generated(
        &self,
        kernel: &str,
        source: impl FnOnce() -> String,
        entry: &str,
        params: &[u32],
        buffers: &[&wgpu::Buffer],
        threads: u64,
    ) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let pipeline = self.pipeline(kernel, source, entry)?;
        let params_buf = self.upload(if params.is_empty() { &[0] } else { params })?;
        let layout = pipeline.get_bind_group_layout(0);
        let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: params_buf.as_entire_binding() }];
        for (i, b) in buffers.iter().enumerate() {
            entries.push(wgpu::BindGroupEntry { binding: (i + 1) as u32, resource: b.as_entire_binding() });
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(kernel),
            layout: &layout,
            entries: &entries,
        });
        let groups = threads.div_ceil(WORKGROUP_SIZE);
        let x = groups.min(MAX_GROUPS_PER_DIM);
        let y = groups.div_ceil(x);
        if y > MAX_GROUPS_PER_DIM {
            return Err(Error::AdapterLimit { reason: format!("{threads} invocations exceed the dispatch grid") });
        }
        let mut enc = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(kernel) });
        {
            let mut pass =
                enc.begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(kernel), timestamp_writes: None });
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(x as u32, y as u32, 1);
        }
        self.queue.submit([enc.finish()]);
        self.dispatches.fetch_add(1, Ordering::Relaxed);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(backend_err(format!("kernel {kernel} failed: {e}")));
        }
        self.take_uncaptured()
    }
}
