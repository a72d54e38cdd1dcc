//! One mechanism for backend wrappers: a type that holds another backend and acts around its
//! kernels (the [`Ledger`](super::ledger::Ledger) records their traffic; the test double
//! `wgfhe::testing::FlipOneBit` tampers with one output) implements [`BackendWrapper`], and the
//! one implementation of [`Backend`] below, for every wrapper, forwards each method to the
//! wrapped backend: kernel dispatches through [`BackendWrapper::dispatch`] (with a [`Kernel`]
//! describing the call); host transfers, zeroed allocations, flushes and waits (the calls that
//! record a device command or submit the recorded ones) through [`BackendWrapper::command`] (with
//! a [`Command`]); the rest (output allocation, lengths, views, the context) directly.
//!
//! A kernel added to [`Backend`] is forwarded here, once, with its [`Kernel`] variant; the
//! compiler then asks each wrapper that inspects kernels (the ledger's cost model) to handle it.

use std::sync::Arc;

use super::fused::Program;
use super::{Backend, ConvertPart, InnerProductInput, InnerProductSums, InverseInput};
use crate::error::Result;
use crate::math::rounding::Rounding;
use crate::math::sampling::{Purpose, Seed};
use crate::ring::RingContext;

/// One kernel dispatch as a wrapper sees it: which [`Backend`] method, and the shape of its
/// operands (buffers themselves are not included).
#[derive(Debug)]
pub enum Kernel<'a, B: Backend> {
    /// [`Backend::duplicate`] of a buffer of `words` words.
    Duplicate {
        /// Words of the buffer copied.
        words: usize,
    },
    /// [`Backend::gather_limbs`].
    GatherLimbs {
        /// Positions of the limbs gathered.
        positions: &'a [usize],
    },
    /// [`Backend::ntt_forward`] (in place).
    NttForward {
        /// Basis of the buffer.
        basis: &'a [usize],
    },
    /// [`Backend::ntt_inverse`] (in place).
    NttInverse {
        /// Basis of the buffer.
        basis: &'a [usize],
    },
    /// [`Backend::ntt_inverse_from`] (out of place, the input formed on load).
    NttInverseFrom {
        /// Basis of the transform.
        basis: &'a [usize],
        /// The form of the input.
        form: InverseForm,
        /// Whether the formed input is kept (written) too.
        keep: bool,
    },
    /// [`Backend::add`].
    Add {
        /// Basis of the operands.
        basis: &'a [usize],
    },
    /// [`Backend::sub`].
    Sub {
        /// Basis of the operands.
        basis: &'a [usize],
    },
    /// [`Backend::neg`].
    Neg {
        /// Basis of the operand.
        basis: &'a [usize],
    },
    /// [`Backend::mul`].
    Mul {
        /// Basis of the operands.
        basis: &'a [usize],
    },
    /// [`Backend::mul_add`] (in place on the accumulator).
    MulAdd {
        /// Basis of the operands.
        basis: &'a [usize],
    },
    /// [`Backend::tensor`] (three outputs).
    Tensor {
        /// Basis of the operands.
        basis: &'a [usize],
    },
    /// [`Backend::mul_scalar`].
    MulScalar {
        /// Basis of the operand.
        basis: &'a [usize],
    },
    /// [`Backend::automorphism`].
    Automorphism {
        /// The Galois element.
        g: usize,
        /// Basis of the operand.
        basis: &'a [usize],
    },
    /// [`Backend::base_convert`].
    BaseConvert {
        /// Basis of the input.
        basis: &'a [usize],
        /// The conversions: `(from, to)` each.
        parts: &'a [ConvertPart<'a>],
    },
    /// [`Backend::scale_down_correction`].
    ScaleDownCorrection {
        /// Primes kept (the outputs' basis).
        keep: &'a [usize],
        /// Primes divided out (the input's basis, per polynomial).
        drop: &'a [usize],
        /// The BGV plaintext modulus, if any.
        t: Option<u32>,
        /// Joint or prime by prime.
        rounding: Rounding,
        /// Polynomials in the input.
        polys: usize,
    },
    /// [`Backend::key_switch_inner_product`].
    KeySwitchInnerProduct {
        /// The operands.
        input: &'a InnerProductInput<'a, B::Buffer>,
    },
    /// [`Backend::uniform`].
    Uniform {
        /// Stream purpose.
        purpose: Purpose,
        /// Stream index.
        index: u32,
        /// Basis of the output.
        basis: &'a [usize],
    },
    /// [`Backend::fused`]: the program, bound to the wrapped backend.
    Fused {
        /// The program.
        program: &'a Program<'a, B>,
    },
}

/// The form of an [`InverseInput`], without its buffers (what a wrapper sees of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InverseForm {
    /// [`InverseInput::Copy`].
    Copy,
    /// [`InverseInput::Product`].
    Product,
    /// [`InverseInput::Automorphism`] by this Galois element.
    Automorphism(usize),
}

impl InverseForm {
    /// The form of `input`.
    #[must_use]
    pub fn of<Buf>(input: &InverseInput<'_, Buf>) -> Self {
        match *input {
            InverseInput::Copy(_) => Self::Copy,
            InverseInput::Product(..) => Self::Product,
            InverseInput::Automorphism(_, g) => Self::Automorphism(g),
        }
    }
}

/// A backend call that is not a kernel but records a device command or submits the recorded
/// ones: what [`BackendWrapper::command`] sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// [`Backend::upload`] of `words` words (a host-to-device write).
    Upload {
        /// Words written.
        words: usize,
    },
    /// [`Backend::download`] of `words` words (a copy to a staging buffer, a submission and a
    /// wait on the GPU).
    Download {
        /// Words read back.
        words: usize,
    },
    /// [`Backend::zeros`] of `words` words (a recorded clear on the GPU).
    Zeros {
        /// Words cleared.
        words: usize,
    },
    /// [`Backend::flush`]: submits what is recorded, without waiting.
    Flush,
    /// [`Backend::synchronize`]: submits what is recorded and waits for it.
    Synchronize,
}

impl<B: Backend> Kernel<'_, B> {
    /// The name of the [`Backend`] method (and of the GPU shader): `"ntt_forward"`, ...
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Duplicate { .. } => "duplicate",
            Self::GatherLimbs { .. } => "gather_limbs",
            Self::NttForward { .. } => "ntt_forward",
            Self::NttInverse { .. } => "ntt_inverse",
            Self::NttInverseFrom { .. } => "ntt_inverse_from",
            Self::Add { .. } => "add",
            Self::Sub { .. } => "sub",
            Self::Neg { .. } => "neg",
            Self::Mul { .. } => "mul",
            Self::MulAdd { .. } => "mul_add",
            Self::Tensor { .. } => "tensor",
            Self::MulScalar { .. } => "mul_scalar",
            Self::Automorphism { .. } => "automorphism",
            Self::BaseConvert { .. } => "base_convert",
            Self::ScaleDownCorrection { .. } => "scale_down_correction",
            Self::KeySwitchInnerProduct { .. } => "key_switch_inner_product",
            Self::Uniform { .. } => "uniform",
            Self::Fused { .. } => "fused",
        }
    }
}

/// What a kernel returns, seen through its first output buffer: a new buffer, the buffer an
/// in-place kernel wrote, the first of a pair, the first of a fused program's outputs.
pub trait KernelOutput<Buf> {
    /// The first output (`None` only for a fused program without outputs).
    fn first_output(&mut self) -> Option<&mut Buf>;
}

impl<Buf> KernelOutput<Buf> for Buf {
    fn first_output(&mut self) -> Option<&mut Buf> {
        Some(self)
    }
}

impl<Buf> KernelOutput<Buf> for &mut Buf {
    fn first_output(&mut self) -> Option<&mut Buf> {
        Some(&mut **self)
    }
}

impl<Buf> KernelOutput<Buf> for (Buf, Buf) {
    fn first_output(&mut self) -> Option<&mut Buf> {
        Some(&mut self.0)
    }
}

impl<Buf> KernelOutput<Buf> for (Buf, Option<Buf>) {
    fn first_output(&mut self) -> Option<&mut Buf> {
        Some(&mut self.0)
    }
}

impl<Buf, const K: usize> KernelOutput<Buf> for [Buf; K] {
    fn first_output(&mut self) -> Option<&mut Buf> {
        self.first_mut()
    }
}

impl<Buf> KernelOutput<Buf> for Vec<Buf> {
    fn first_output(&mut self) -> Option<&mut Buf> {
        self.first_mut()
    }
}

/// A backend that wraps another and acts around its kernels; it is a [`Backend`] through the
/// forwarding implementation of this module. The hooks default to running the call unchanged.
pub trait BackendWrapper: Send + Sync + Sized + 'static {
    /// The wrapped backend.
    type Inner: Backend;

    /// The wrapped backend.
    fn inner(&self) -> &Self::Inner;

    /// The name reported as [`Backend::name`] (default: the wrapped backend's).
    fn wrapper_name(&self) -> &'static str {
        self.inner().name()
    }

    /// Runs one kernel dispatch: `run` performs it on the wrapped backend and returns its
    /// outputs (an in-place kernel returns the buffer it wrote).
    fn dispatch<T: KernelOutput<<Self::Inner as Backend>::Buffer>>(
        &self,
        _kernel: &Kernel<'_, Self::Inner>,
        run: impl FnOnce(&Self::Inner) -> Result<T>,
    ) -> Result<T> {
        run(self.inner())
    }

    /// Runs one [`Command`] (a host transfer, a zeroed allocation, a flush or a wait): `run`
    /// performs it on the wrapped backend.
    fn command<T>(&self, _command: Command, run: impl FnOnce(&Self::Inner) -> Result<T>) -> Result<T> {
        run(self.inner())
    }
}

impl<W: BackendWrapper> Backend for W {
    type Buffer = <W::Inner as Backend>::Buffer;

    fn name(&self) -> &'static str {
        self.wrapper_name()
    }
    fn context(&self) -> &Arc<RingContext> {
        self.inner().context()
    }
    fn upload(&self, words: &[u32]) -> Result<Self::Buffer> {
        self.command(Command::Upload { words: words.len() }, |k| k.upload(words))
    }
    fn download(&self, buf: &Self::Buffer) -> Result<Vec<u32>> {
        self.command(Command::Download { words: self.inner().len(buf) }, |k| k.download(buf))
    }
    fn zeros(&self, words: usize) -> Result<Self::Buffer> {
        self.command(Command::Zeros { words }, |k| k.zeros(words))
    }
    fn len(&self, buf: &Self::Buffer) -> usize {
        self.inner().len(buf)
    }
    fn duplicate(&self, buf: &Self::Buffer) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Duplicate { words: self.inner().len(buf) }, |k| k.duplicate(buf))
    }
    fn truncate(&self, buf: Self::Buffer, words: usize) -> Result<Self::Buffer> {
        self.inner().truncate(buf, words)
    }
    fn gather_limbs(&self, buf: &Self::Buffer, positions: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::GatherLimbs { positions }, |k| k.gather_limbs(buf, positions))
    }
    fn ntt_forward(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()> {
        self.dispatch(&Kernel::NttForward { basis }, |k| k.ntt_forward(buf, basis).map(|()| buf)).map(|_| ())
    }
    fn ntt_inverse(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()> {
        self.dispatch(&Kernel::NttInverse { basis }, |k| k.ntt_inverse(buf, basis).map(|()| buf)).map(|_| ())
    }
    fn ntt_inverse_from(
        &self,
        input: InverseInput<'_, Self::Buffer>,
        basis: &[usize],
        keep: bool,
    ) -> Result<(Self::Buffer, Option<Self::Buffer>)> {
        let form = InverseForm::of(&input);
        self.dispatch(&Kernel::NttInverseFrom { basis, form, keep }, |k| k.ntt_inverse_from(input, basis, keep))
    }
    fn add(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Add { basis }, |k| k.add(a, b, basis))
    }
    fn sub(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Sub { basis }, |k| k.sub(a, b, basis))
    }
    fn neg(&self, a: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Neg { basis }, |k| k.neg(a, basis))
    }
    fn mul(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Mul { basis }, |k| k.mul(a, b, basis))
    }
    fn mul_add(&self, acc: &mut Self::Buffer, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<()> {
        self.dispatch(&Kernel::MulAdd { basis }, |k| k.mul_add(acc, a, b, basis).map(|()| acc)).map(|_| ())
    }
    fn tensor(&self, a: [&Self::Buffer; 2], b: [&Self::Buffer; 2], basis: &[usize]) -> Result<[Self::Buffer; 3]> {
        self.dispatch(&Kernel::Tensor { basis }, |k| k.tensor(a, b, basis))
    }
    fn mul_scalar(&self, a: &Self::Buffer, scalars: &[u32], basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::MulScalar { basis }, |k| k.mul_scalar(a, scalars, basis))
    }
    fn automorphism(&self, a: &Self::Buffer, g: usize, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Automorphism { g, basis }, |k| k.automorphism(a, g, basis))
    }
    fn base_convert(&self, a: &Self::Buffer, basis: &[usize], parts: &[ConvertPart<'_>]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::BaseConvert { basis, parts }, |k| k.base_convert(a, basis, parts))
    }
    fn scale_down_correction(
        &self,
        dropped: &Self::Buffer,
        keep: &[usize],
        drop: &[usize],
        t: Option<u32>,
        rounding: Rounding,
    ) -> Result<Self::Buffer> {
        let per = drop.len() * self.context().n();
        let polys = self.inner().len(dropped).checked_div(per).unwrap_or(0);
        self.dispatch(&Kernel::ScaleDownCorrection { keep, drop, t, rounding, polys }, |k| {
            k.scale_down_correction(dropped, keep, drop, t, rounding)
        })
    }
    fn key_switch_inner_product(
        &self,
        input: &InnerProductInput<'_, Self::Buffer>,
    ) -> Result<InnerProductSums<Self::Buffer>> {
        self.dispatch(&Kernel::KeySwitchInnerProduct { input }, |k| k.key_switch_inner_product(input))
    }
    fn uniform(&self, seed: &Seed, purpose: Purpose, index: u32, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Uniform { purpose, index, basis }, |k| k.uniform(seed, purpose, index, basis))
    }
    fn fused(&self, program: &Program<'_, Self>) -> Result<Vec<Self::Buffer>> {
        let program = program.rebind::<W::Inner>();
        self.dispatch(&Kernel::Fused { program: &program }, |k| k.fused(&program))
    }
    fn max_fused_buffers(&self) -> usize {
        self.inner().max_fused_buffers()
    }
    fn synchronize(&self) -> Result<()> {
        self.command(Command::Synchronize, Backend::synchronize)
    }
    fn flush(&self) -> Result<()> {
        self.command(Command::Flush, Backend::flush)
    }
    fn build_pipelines(&self, work: &mut dyn FnMut() -> Result<()>) -> Result<usize> {
        self.inner().build_pipelines(work)
    }
    fn device_counters(&self) -> Option<super::gpu::DeviceCounters> {
        self.inner().device_counters()
    }
    fn gpu_ntt_plan(&self) -> Result<super::gpu::NttPlan> {
        self.inner().gpu_ntt_plan()
    }
}
