//! The wgpu backend: WGSL kernels (`shaders/*.wgsl`) on any Vulkan, Metal or DX12 adapter,
//! reproducing the CPU reference backend bit for bit.
//!
//! Ciphertexts and keys stay in device buffers between operations; data crosses the bus only in
//! [`Backend::upload`] and [`Backend::download`], the constant tables of the ring (uploaded once
//! per backend and kept resident) and the per-dispatch parameters (written once per submission,
//! see [`GpuDevice`]'s recording). Kernels are recorded, not submitted one by one: a submission
//! happens at [`Backend::flush`], at a readback or wait, or every
//! [`MAX_PENDING_COMMANDS`] commands.

mod device;
mod fused;
mod kernels;
mod ntt;
mod pipelines;
mod rns_kernels;
pub mod sources;
mod timer;

#[cfg(feature = "testing")]
pub use device::Fault;
pub use device::{
    should_quiet_device_select, size_class, AdapterSummary, BufferPool, DeviceCounters, DeviceMemory, DeviceOptions,
    GpuDevice, PoolStats, MAX_PENDING_COMMANDS, MAX_STORAGE_BUFFERS,
};
pub(crate) use fused::dispatches as fused_dispatches;
pub use fused::{kernel_sources as fused_kernel_sources, kernel_sources_for as fused_kernel_sources_for};
pub use ntt::NttPlan;
pub use sources::Arithmetic;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::{Backend, ConvertPart, InnerProductInput, InnerProductSums, InverseInput};
use crate::error::{Error, Result};
use crate::math::rounding::Rounding;
use crate::math::sampling::{Purpose, Seed};
use crate::ring::RingContext;

/// A buffer of `u32` words on the device (its storage may be larger: pooled buffers come in size
/// classes, [`size_class`]); returned to the device's pool when dropped.
#[derive(Debug)]
pub struct GpuBuffer {
    buf: wgpu::Buffer,
    words: usize,
    pool: Arc<device::BufferPool>,
}

impl Drop for GpuBuffer {
    fn drop(&mut self) {
        self.pool.recycle(self.buf.clone());
    }
}

/// Key of a cached constant table: its kind and the indices it was built for.
type TableKey = (&'static str, Vec<usize>);

/// The wgpu backend.
#[derive(Debug, Clone)]
pub struct GpuBackend {
    ctx: Arc<RingContext>,
    dev: Arc<GpuDevice>,
    /// Constant tables (twiddles, prime tables, permutations) uploaded once and kept resident.
    tables: Arc<Mutex<HashMap<TableKey, Arc<wgpu::Buffer>>>>,
}

impl GpuBackend {
    /// A backend computing in `ctx` on `dev`.
    #[must_use]
    pub fn new(ctx: Arc<RingContext>, dev: Arc<GpuDevice>) -> Self {
        Self { ctx, dev, tables: Arc::new(Mutex::new(HashMap::new())) }
    }

    /// The resident table `kind` for `key`, built and uploaded on first use.
    fn table(
        &self,
        kind: &'static str,
        key: &[usize],
        build: impl FnOnce() -> Result<Vec<u32>>,
    ) -> Result<Arc<wgpu::Buffer>> {
        let k = (kind, key.to_vec());
        if let Some(t) = self.tables.lock().unwrap_or_else(PoisonError::into_inner).get(&k) {
            return Ok(Arc::clone(t));
        }
        let buf = Arc::new(self.dev.upload(&build()?)?);
        self.tables.lock().unwrap_or_else(PoisonError::into_inner).insert(k, Arc::clone(&buf));
        Ok(buf)
    }

    /// The device.
    #[must_use]
    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.dev
    }

    fn n(&self) -> usize {
        self.ctx.n()
    }

    fn log_n(&self) -> u32 {
        self.ctx.params().log_n()
    }

    fn check(&self, what: &'static str, buf: &GpuBuffer, limbs: usize) -> Result<()> {
        let want = limbs * self.n();
        if buf.words != want {
            return Err(Error::DimensionMismatch { what, expected: want, found: buf.words });
        }
        Ok(())
    }

    fn wrap(&self, buf: wgpu::Buffer, words: usize) -> GpuBuffer {
        GpuBuffer { buf, words, pool: Arc::clone(self.dev.pool()) }
    }

    /// A buffer of `words` words for a kernel to overwrite completely (no clear).
    fn output(&self, words: usize) -> Result<GpuBuffer> {
        Ok(self.wrap(self.dev.output(words)?, words))
    }

    fn total(&self, words: usize) -> Result<u32> {
        u32::try_from(words).map_err(|_| Error::SizeOverflow { what: "kernel index range" })
    }
}

impl Backend for GpuBackend {
    type Buffer = GpuBuffer;

    fn name(&self) -> &'static str {
        "gpu"
    }

    fn context(&self) -> &Arc<RingContext> {
        &self.ctx
    }

    fn upload(&self, words: &[u32]) -> Result<GpuBuffer> {
        Ok(self.wrap(self.dev.upload(words)?, words.len()))
    }

    fn download(&self, buf: &GpuBuffer) -> Result<Vec<u32>> {
        self.dev.download(&buf.buf, buf.words)
    }

    fn zeros(&self, words: usize) -> Result<GpuBuffer> {
        Ok(self.wrap(self.dev.zeros(words)?, words))
    }

    fn len(&self, buf: &GpuBuffer) -> usize {
        buf.words
    }

    fn duplicate(&self, buf: &GpuBuffer) -> Result<GpuBuffer> {
        let out = self.dev.output(buf.words)?;
        self.dev.copy(&buf.buf, 0, &out, 0, buf.words)?;
        Ok(self.wrap(out, buf.words))
    }

    fn truncate(&self, mut buf: GpuBuffer, words: usize) -> Result<GpuBuffer> {
        if words > buf.words {
            return Err(Error::DimensionMismatch { what: "truncate", expected: buf.words, found: words });
        }
        // A view: the storage stays, only the logical length shrinks.
        buf.words = words;
        Ok(buf)
    }

    fn gather_limbs(&self, buf: &GpuBuffer, positions: &[usize]) -> Result<GpuBuffer> {
        let n = self.n();
        let limbs = buf.words / n;
        if let Some(&p) = positions.iter().find(|&&p| p >= limbs) {
            return Err(Error::DimensionMismatch { what: "limb position", expected: limbs, found: p });
        }
        let out = self.dev.output(positions.len() * n)?;
        let copies: Vec<_> = positions.iter().enumerate().map(|(k, &p)| (&buf.buf, p * n, &out, k * n, n)).collect();
        self.dev.copy_many(&copies)?;
        Ok(self.wrap(out, positions.len() * n))
    }

    fn ntt_forward(&self, buf: &mut GpuBuffer, basis: &[usize]) -> Result<()> {
        self.check("ntt_forward input", buf, basis.len())?;
        ntt::ntt(self, buf, basis, false)
    }

    fn ntt_inverse(&self, buf: &mut GpuBuffer, basis: &[usize]) -> Result<()> {
        self.check("ntt_inverse input", buf, basis.len())?;
        ntt::ntt(self, buf, basis, true)
    }

    /// One generated kernel (a fused program: four loads, three stores per residue), or the
    /// default's four dispatches on a device binding fewer than seven buffers.
    fn tensor(&self, a: [&GpuBuffer; 2], b: [&GpuBuffer; 2], basis: &[usize]) -> Result<[GpuBuffer; 3]> {
        use crate::backend::fused::{Expr, Format, Operand, Program};
        for x in a.iter().chain(&b) {
            self.check("tensor operand", x, basis.len())?;
        }
        if self.max_fused_buffers() < 7 {
            let c0 = self.mul(a[0], b[0], basis)?;
            let mut c1 = self.mul(a[0], b[1], basis)?;
            self.mul_add(&mut c1, a[1], b[0], basis)?;
            return Ok([c0, c1, self.mul(a[1], b[1], basis)?]);
        }
        let operands = [a[0], a[1], b[0], b[1]].map(|buf| Operand::words(buf, basis));
        let l = Expr::load;
        let program = Program {
            basis,
            operands: operands.into(),
            outputs: vec![
                (Expr::mul(l(0), l(2)), Format::Words),
                (Expr::add(Expr::mul(l(0), l(3)), Expr::mul(l(1), l(2))), Format::Words),
                (Expr::mul(l(1), l(3)), Format::Words),
            ],
        };
        let found = |found| Error::DimensionMismatch { what: "tensor product outputs", expected: 3, found };
        let outs = fused::fused(self, &program)?;
        let len = outs.len();
        <[GpuBuffer; 3]>::try_from(outs).map_err(|_| found(len))
    }

    fn ntt_inverse_from(
        &self,
        input: InverseInput<'_, GpuBuffer>,
        basis: &[usize],
        keep: bool,
    ) -> Result<(GpuBuffer, Option<GpuBuffer>)> {
        ntt::inverse_from(self, input, basis, keep, &self.ntt_plan(self.log_n())?)
    }

    fn add(&self, a: &GpuBuffer, b: &GpuBuffer, basis: &[usize]) -> Result<GpuBuffer> {
        kernels::elementwise(self, kernels::Op::Add, a, Some(b), None, basis)
    }

    fn sub(&self, a: &GpuBuffer, b: &GpuBuffer, basis: &[usize]) -> Result<GpuBuffer> {
        kernels::elementwise(self, kernels::Op::Sub, a, Some(b), None, basis)
    }

    fn neg(&self, a: &GpuBuffer, basis: &[usize]) -> Result<GpuBuffer> {
        kernels::elementwise(self, kernels::Op::Neg, a, None, None, basis)
    }

    fn mul(&self, a: &GpuBuffer, b: &GpuBuffer, basis: &[usize]) -> Result<GpuBuffer> {
        kernels::elementwise(self, kernels::Op::Mul, a, Some(b), None, basis)
    }

    fn mul_add(&self, acc: &mut GpuBuffer, a: &GpuBuffer, b: &GpuBuffer, basis: &[usize]) -> Result<()> {
        self.check("accumulator", acc, basis.len())?;
        kernels::mul_add(self, acc, a, b, basis)
    }

    fn mul_scalar(&self, a: &GpuBuffer, scalars: &[u32], basis: &[usize]) -> Result<GpuBuffer> {
        kernels::elementwise(self, kernels::Op::MulScalar, a, None, Some(scalars), basis)
    }

    fn automorphism(&self, a: &GpuBuffer, g: usize, basis: &[usize]) -> Result<GpuBuffer> {
        self.check("operand", a, basis.len())?;
        kernels::automorphism(self, a, g)
    }

    fn base_convert(&self, a: &GpuBuffer, basis: &[usize], parts: &[ConvertPart<'_>]) -> Result<GpuBuffer> {
        self.check("base_convert input", a, basis.len())?;
        rns_kernels::base_convert(self, a, basis, parts)
    }

    fn scale_down_correction(
        &self,
        dropped: &GpuBuffer,
        keep: &[usize],
        drop: &[usize],
        t: Option<u32>,
        rounding: Rounding,
    ) -> Result<GpuBuffer> {
        rns_kernels::scale_down_correction(self, dropped, keep, drop, t, rounding)
    }

    fn key_switch_inner_product(
        &self,
        input: &InnerProductInput<'_, GpuBuffer>,
    ) -> Result<InnerProductSums<GpuBuffer>> {
        kernels::key_switch_inner_product(self, input)
    }

    fn uniform(&self, seed: &Seed, purpose: Purpose, index: u32, basis: &[usize]) -> Result<GpuBuffer> {
        rns_kernels::uniform(self, seed, purpose, index, basis)
    }

    fn fused(&self, program: &crate::backend::fused::Program<'_, Self>) -> Result<Vec<GpuBuffer>> {
        fused::fused(self, program)
    }

    fn synchronize(&self) -> Result<()> {
        self.dev.wait()
    }

    fn flush(&self) -> Result<()> {
        self.dev.flush()
    }

    fn max_fused_buffers(&self) -> usize {
        // Binding 0 holds the parameters.
        (self.dev.max_storage_buffers() as usize).saturating_sub(1)
    }

    fn build_pipelines(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<usize> {
        self.dev.build_pipelines(work)
    }

    fn device_counters(&self) -> Option<DeviceCounters> {
        Some(self.dev.counters())
    }

    fn device_memory(&self) -> Option<DeviceMemory> {
        Some(self.dev.memory())
    }

    fn adapter(&self) -> Option<&AdapterSummary> {
        Some(self.dev.summary())
    }

    fn gpu_ntt_plan(&self) -> Result<NttPlan> {
        self.ntt_plan(self.log_n())
    }
}
