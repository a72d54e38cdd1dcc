//! The kernel set every scheme is written against, and its implementations.
//!
//! The trait exposes *kernels*, not scheme operations: NTTs, element-wise arithmetic, the Galois
//! automorphism, basis conversion, divide-and-round, the key-switching inner product and PRNG
//! expansion. Everything above it ([`crate::rlwe`], [`crate::bgv`]) is generic over the backend,
//! so the GPU backend runs the same scheme code.
//!
//! Conventions shared by every kernel:
//! * a buffer holds limb-major `[limb][N]` `u32` words; the limbs' primes are given by a basis
//!   (global prime indices of the [`RingContext`]);
//! * inputs and outputs are canonical residues in `[0, q)`, so every backend produces the same
//!   bits;
//! * data crosses between host and backend only through [`Backend::upload`] and
//!   [`Backend::download`].
//!
//! Kernel names are the names of the shaders of the GPU backend (`ntt_forward`, ...).

pub mod config;
pub mod cpu;
pub mod fused;
pub mod gpu;
pub mod key_switching;
pub mod ledger;
pub mod shape;
pub mod wrapper;

use std::sync::Arc;

use crate::error::Result;
use crate::math::rounding::Rounding;
use crate::math::sampling::{Purpose, Seed};
use crate::ring::RingContext;

pub use cpu::CpuBackend;
pub use gpu::GpuBackend;
pub use key_switching::{ConvertPart, InnerProductInput, InnerProductSums, KeyDigitRef};
pub use shape::ShapeBackend;
pub use wrapper::{BackendWrapper, InverseForm, Kernel, KernelOutput};

/// The kernel-level operation set.
pub trait Backend: Send + Sync + Sized + 'static {
    /// A buffer of `u32` words resident on the backend.
    type Buffer: Send + Sync;

    /// Short name ("cpu", "gpu").
    fn name(&self) -> &'static str;
    /// The ring this backend computes in.
    fn context(&self) -> &Arc<RingContext>;

    /// Copies host words to a new buffer.
    fn upload(&self, words: &[u32]) -> Result<Self::Buffer>;
    /// Copies a buffer to the host.
    fn download(&self, buf: &Self::Buffer) -> Result<Vec<u32>>;
    /// A zero-filled buffer of `words` words.
    fn zeros(&self, words: usize) -> Result<Self::Buffer>;
    /// Number of words in a buffer.
    fn len(&self, buf: &Self::Buffer) -> usize;
    /// A copy of a buffer.
    fn duplicate(&self, buf: &Self::Buffer) -> Result<Self::Buffer>;
    /// Keeps the first `words` words.
    fn truncate(&self, buf: Self::Buffer, words: usize) -> Result<Self::Buffer>;
    /// A new buffer made of the limbs at `positions` of `buf`, in that order.
    fn gather_limbs(&self, buf: &Self::Buffer, positions: &[usize]) -> Result<Self::Buffer>;

    /// `ntt_forward`: negacyclic NTT of every limb, natural order in, bit-reversed out.
    fn ntt_forward(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()>;
    /// `ntt_inverse`: inverse of [`Backend::ntt_forward`], bit-reversed in, natural out.
    fn ntt_inverse(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()>;
    /// `ntt_inverse_from`: the inverse NTT of `input` into a new buffer, the input formed from
    /// its sources as the transform loads it (the sources are left as they are); with `keep`,
    /// the formed Eval-domain input is returned too (`Some`). Key switching needs its input in
    /// both domains: HMULT transforms `a_1 b_1` and a rotation `c_1(X^g)` this way with no
    /// element-wise, automorphism or copy pass in front of the transform.
    ///
    /// The default forms the input with [`Backend::duplicate`], [`Backend::mul`] or
    /// [`Backend::automorphism`], copies it when kept, and transforms it in place; the CPU
    /// backend keeps it (the twin of the GPU kernel, whose first pass forms, keeps and transforms).
    fn ntt_inverse_from(
        &self,
        input: InverseInput<'_, Self::Buffer>,
        basis: &[usize],
        keep: bool,
    ) -> Result<(Self::Buffer, Option<Self::Buffer>)> {
        let mut formed = match input {
            InverseInput::Copy(a) => self.duplicate(a)?,
            InverseInput::Product(a, b) => self.mul(a, b, basis)?,
            InverseInput::Automorphism(a, g) => self.automorphism(a, g, basis)?,
        };
        let kept = if keep { Some(self.duplicate(&formed)?) } else { None };
        self.ntt_inverse(&mut formed, basis)?;
        Ok((formed, kept))
    }

    /// `add`: element-wise `a + b`.
    fn add(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer>;
    /// `sub`: element-wise `a - b`.
    fn sub(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer>;
    /// `neg`: element-wise `-a`.
    fn neg(&self, a: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer>;
    /// `mul`: element-wise `a * b` (Barrett).
    fn mul(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer>;
    /// `mul_add`: `acc += a * b` element-wise.
    fn mul_add(&self, acc: &mut Self::Buffer, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<()>;
    /// `tensor`: the tensor product of two degree-1 ciphertexts over `basis`,
    /// `[a_0 b_0, a_0 b_1 + a_1 b_0, a_1 b_1]`, one kernel reading each input once (the GPU
    /// backend runs one generated kernel). The default runs three [`Backend::mul`]s and a
    /// [`Backend::mul_add`] (the same canonical residues), which the CPU backend keeps.
    fn tensor(&self, a: [&Self::Buffer; 2], b: [&Self::Buffer; 2], basis: &[usize]) -> Result<[Self::Buffer; 3]> {
        let c0 = self.mul(a[0], b[0], basis)?;
        let mut c1 = self.mul(a[0], b[1], basis)?;
        self.mul_add(&mut c1, a[1], b[0], basis)?;
        Ok([c0, c1, self.mul(a[1], b[1], basis)?])
    }
    /// `mul_scalar`: limb `i` times the constant `scalars[i] < q_i` (Shoup).
    fn mul_scalar(&self, a: &Self::Buffer, scalars: &[u32], basis: &[usize]) -> Result<Self::Buffer>;

    /// `automorphism`: `X -> X^g` in the Eval domain (a permutation of every limb).
    fn automorphism(&self, a: &Self::Buffer, g: usize, basis: &[usize]) -> Result<Self::Buffer>;

    /// `base_convert`: fast basis conversion ([`crate::math::rns::BaseConverter`]) of Coeff
    /// limbs, several conversions in one call. `a` holds limbs over `basis`; each part
    /// `(from, to)` converts the limbs of `a` at the primes `from` (read where they lie in `a`,
    /// not copied out) to the primes `to`. The output holds every part's converted limbs, part
    /// after part (`sum |to|` limbs). Key switching's ModUp converts all its digits in one call.
    fn base_convert(&self, a: &Self::Buffer, basis: &[usize], parts: &[ConvertPart<'_>]) -> Result<Self::Buffer>;

    /// `scale_down_correction`: the divide-and-round correction `corr = [-delta D^{-1}]_{k_i}`
    /// over the primes `keep` ([`crate::math::rounding`]) of every polynomial whose dropped
    /// limbs `dropped` holds: Coeff limbs over `drop`, one polynomial after another (the number
    /// of polynomials is the buffer's length over `drop.len() N`). Returns the corrections in
    /// one buffer, Coeff limbs over `keep`, one polynomial after another (so that one transform
    /// call handles them all); `x D^{-1} + corr` is then the divided `x` (in either domain once
    /// `corr` is transformed). `t` selects the BGV rounding that keeps the plaintext mod `t`;
    /// `rounding` joint (ModDown) or prime by prime (modulus switching, rescaling).
    fn scale_down_correction(
        &self,
        dropped: &Self::Buffer,
        keep: &[usize],
        drop: &[usize],
        t: Option<u32>,
        rounding: Rounding,
    ) -> Result<Self::Buffer>;

    /// `key_switch_inner_product`: `(sum_j d_j b_j, sum_j d_j a_j)` in the Eval domain over
    /// `q_basis ++ p_basis`, all digits in one call: digit `j` is read from `c` at its own primes
    /// and from the converted limbs elsewhere; `a_j` is loaded where the key stores it and
    /// regenerated from the key's seed where it does not. Each sum is the canonical residue of
    /// the exact sum, so the order and grouping of the additions do not matter. The sums come
    /// out split into their `q_basis` and `p_basis` limbs ([`InnerProductSums`]).
    fn key_switch_inner_product(
        &self,
        input: &InnerProductInput<'_, Self::Buffer>,
    ) -> Result<InnerProductSums<Self::Buffer>>;

    /// `uniform`: residues of generator-2 streams (ChaCha12, masked rejection), one per limb, as Eval-domain values.
    fn uniform(&self, seed: &Seed, purpose: Purpose, index: u32, basis: &[usize]) -> Result<Self::Buffer>;

    /// `fused`: evaluates a [`fused::Program`] in one dispatch (operands stored, bit-packed or
    /// regenerated from seeds; outputs stored or packed); one buffer per output, in order.
    fn fused(&self, program: &fused::Program<'_, Self>) -> Result<Vec<Self::Buffer>>;

    /// Most buffers (operands and outputs) one fused dispatch can bind; callers chunk larger
    /// sums. Unbounded on the CPU.
    fn max_fused_buffers(&self) -> usize {
        usize::MAX
    }

    /// Blocks until every dispatched kernel has finished (a no-op on synchronous backends);
    /// benchmarks call it before reading the clock.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// Submits recorded work; called by the schemes at the end of each top-level operation. A
    /// no-op on backends that run each kernel when it is called. Results never depend on it
    /// ([`Backend::download`] and [`Backend::synchronize`] submit what is recorded first); it
    /// starts the device on the work without waiting for a readback.
    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Builds the device pipelines `work` would use, without running its kernels
    /// ([`gpu::GpuDevice::build_pipelines`], whose caveats hold: results made inside `work` hold
    /// unspecified words and must not outlive it), and returns how many were new. A no-op
    /// returning 0 on backends without pipelines (`work` is not called).
    fn build_pipelines(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<usize> {
        let _ = work;
        Ok(0)
    }

    /// What the device under this backend has counted so far (dispatches, submissions,
    /// uploads, ...): `Some` on the GPU backend, `None` on a backend without a device.
    fn device_counters(&self) -> Option<gpu::DeviceCounters> {
        None
    }

    /// The device memory the device under this backend holds now ([`gpu::DeviceMemory`]):
    /// `Some` on the GPU backend, `None` on a backend without a device.
    fn device_memory(&self) -> Option<gpu::DeviceMemory> {
        None
    }

    /// The adapter under this backend ([`gpu::AdapterSummary`]: name, graphics API, driver):
    /// `Some` on the GPU backend, `None` on a backend without a device.
    fn adapter(&self) -> Option<&gpu::AdapterSummary> {
        None
    }

    /// The plan of the GPU NTT at this ring's degree ([`gpu::NttPlan`]: memory passes, twiddle
    /// words): the device's own on the GPU backend; elsewhere the plan of a device with WebGPU's
    /// default limits (16 KiB of workgroup memory), which every adapter meets. The traffic
    /// ledger models a transform with it.
    ///
    /// Errors: a degree the GPU NTT does not plan ([`crate::Error::InvalidParameters`]).
    fn gpu_ntt_plan(&self) -> Result<gpu::NttPlan> {
        gpu::NttPlan::new(self.context().params().log_n(), &wgpu::Limits::default())
    }
}

/// The Eval-domain input of [`Backend::ntt_inverse_from`], formed as the transform loads it:
/// every form is over the transform's basis.
#[derive(Debug)]
pub enum InverseInput<'a, Buf> {
    /// A buffer as it is.
    Copy(&'a Buf),
    /// The element-wise product `a * b` ([`Backend::mul`]).
    Product(&'a Buf, &'a Buf),
    /// `a(X^g)` ([`Backend::automorphism`] by the Galois element `g`).
    Automorphism(&'a Buf, usize),
}

// Not derived: a derive would ask `Buf: Copy`, and only references are held.
impl<Buf> Clone for InverseInput<'_, Buf> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Buf> Copy for InverseInput<'_, Buf> {}

/// Whether `WGFHE_BACKEND=auto` runs on `adapter`: any but a software renderer
/// ([`gpu::AdapterSummary::is_software`]).
#[must_use]
pub fn auto_accepts(adapter: &gpu::AdapterSummary) -> bool {
    !adapter.is_software()
}

/// A job written once for every backend, run by [`BackendChoice::with_backend`] on the backend
/// it opens. (A closure cannot be generic over the backend type; a trait method can.)
pub trait BackendTask {
    /// What the job returns.
    type Output;
    /// Runs the job on `backend`.
    fn run<B: Backend>(self, backend: B) -> Result<Self::Output>;
}

/// A job that opens backends of one kind on rings of its own choosing (a benchmark suite that
/// sweeps several rings), run by [`BackendChoice::with_backends`].
pub trait MultiRingTask {
    /// What the job returns.
    type Output;
    /// Runs the job; `open` opens a backend of the chosen kind on a ring.
    fn run<B: Backend>(self, open: &dyn Fn(Arc<RingContext>) -> B) -> Result<Self::Output>;
}

/// Which backend a run asks for: `auto`, `gpu` or `cpu` (what the applications read from
/// `WGFHE_BACKEND` or a `--backend` option).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BackendKind {
    /// The GPU if a hardware adapter exists, else the CPU (a software renderer such as
    /// llvmpipe/lavapipe, SwiftShader or WARP runs the GPU kernels on the CPU, slower than the
    /// CPU backend: see [`auto_accepts`]).
    #[default]
    Auto,
    /// The GPU backend on any adapter, software renderers included; none is an error.
    Gpu,
    /// The CPU reference backend; never opens an adapter.
    Cpu,
}

impl BackendKind {
    /// `auto`, `gpu` or `cpu`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Gpu => "gpu",
            Self::Cpu => "cpu",
        }
    }
}

impl std::str::FromStr for BackendKind {
    type Err = crate::Error;

    /// Parses `auto`, `gpu` or `cpu`; anything else is [`crate::Error::InvalidField`].
    fn from_str(name: &str) -> crate::Result<Self> {
        match name {
            "auto" => Ok(Self::Auto),
            "gpu" => Ok(Self::Gpu),
            "cpu" => Ok(Self::Cpu),
            _ => Err(crate::Error::InvalidField { field: "backend", reason: "must be auto, gpu or cpu" }),
        }
    }
}

/// A backend opened by [`BackendChoice::open`], with the reason `auto` did not take a GPU (for
/// the application to report; the library prints nothing).
#[derive(Debug)]
pub struct Opened {
    /// The backend to run on.
    pub choice: BackendChoice,
    /// Why [`BackendKind::Auto`] fell back to the CPU (no adapter, or only a software one);
    /// `None` when nothing fell back.
    pub fallback: Option<crate::Error>,
}

/// Which backend to run on.
#[derive(Debug, Clone)]
pub enum BackendChoice {
    /// The CPU reference backend.
    Cpu,
    /// The GPU backend on this device.
    Gpu(Arc<gpu::GpuDevice>),
}

impl BackendChoice {
    /// Opens the backend `kind` asks for, the GPU with `options`: `gpu` requires an adapter
    /// (typed error otherwise) and takes any, software renderers included; `cpu` never opens
    /// one; `auto` takes the GPU if a hardware adapter exists and otherwise falls back to the
    /// CPU, saying why in [`Opened::fallback`] (it sets [`gpu::DeviceOptions::reject_software`]).
    pub fn open(kind: BackendKind, options: gpu::DeviceOptions) -> crate::Result<Opened> {
        match kind {
            BackendKind::Cpu => Ok(Opened { choice: Self::Cpu, fallback: None }),
            BackendKind::Gpu => {
                Ok(Opened { choice: Self::Gpu(Arc::new(gpu::GpuDevice::with_options(options)?)), fallback: None })
            }
            BackendKind::Auto => {
                match gpu::GpuDevice::with_options(gpu::DeviceOptions { reject_software: true, ..options }) {
                    Ok(d) => Ok(Opened { choice: Self::Gpu(Arc::new(d)), fallback: None }),
                    Err(e) => Ok(Opened { choice: Self::Cpu, fallback: Some(e) }),
                }
            }
        }
    }

    /// As [`BackendChoice::open`] for a choice by name (`auto`, `gpu` or `cpu`) with default
    /// device options, dropping the reason of a fallback. Any other name is
    /// [`crate::Error::InvalidField`].
    pub fn from_name(want: &str) -> crate::Result<Self> {
        Ok(Self::open(want.parse()?, gpu::DeviceOptions::default())?.choice)
    }

    /// Opens the chosen backend on `ring` and runs `task` on it: the one place where the choice
    /// becomes a backend type.
    ///
    /// ```
    /// use wgfhe::backend::{Backend, BackendChoice, BackendTask};
    /// use wgfhe::bgv::Bgv;
    /// use wgfhe::params::{insecure_test_bgv, TestRing};
    /// use wgfhe::ring::RingContext;
    ///
    /// /// Encrypts a vector, doubles it under encryption and decrypts it, on any backend.
    /// struct Double(Vec<u64>);
    ///
    /// impl BackendTask for Double {
    ///     type Output = Vec<u64>;
    ///     fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Vec<u64>> {
    ///         let bgv = Bgv::new(backend)?;
    ///         let sk = bgv.gen_secret_key()?;
    ///         let ct = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&self.0)?)?;
    ///         let sum = bgv.add(&ct, &ct)?;
    ///         bgv.encoder().decode(&bgv.decrypt(&sk, &sum)?)
    ///     }
    /// }
    ///
    /// let params = insecure_test_bgv(TestRing { log_n: 4, q_primes: 2, p_primes: 1, dnum: 2 }, 97)?;
    /// let out = BackendChoice::Cpu.with_backend(RingContext::new(&params)?, Double(vec![1, 2, 60]))?;
    /// assert_eq!(out[..3], [2, 4, 23]); // 120 mod 97
    /// # Ok::<(), wgfhe::Error>(())
    /// ```
    pub fn with_backend<T: BackendTask>(&self, ring: Arc<RingContext>, task: T) -> Result<T::Output> {
        /// [`BackendTask`] as a [`MultiRingTask`] that opens one backend on `ring`.
        struct OnRing<T> {
            ring: Arc<RingContext>,
            task: T,
        }
        impl<T: BackendTask> MultiRingTask for OnRing<T> {
            type Output = T::Output;
            fn run<B: Backend>(self, open: &dyn Fn(Arc<RingContext>) -> B) -> Result<T::Output> {
                self.task.run(open(self.ring))
            }
        }
        self.with_backends(OnRing { ring, task })
    }

    /// Runs `task`, which opens backends of the chosen kind on rings of its choosing.
    pub fn with_backends<T: MultiRingTask>(&self, task: T) -> Result<T::Output> {
        match self {
            Self::Cpu => task.run(&CpuBackend::new),
            Self::Gpu(dev) => task.run(&|ring| GpuBackend::new(ring, Arc::clone(dev))),
        }
    }
}
