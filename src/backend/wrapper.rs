//! One mechanism for backend wrappers: a type that holds another backend and acts around its
//! kernels (the [`Ledger`](super::ledger::Ledger) records their traffic; the test double
//! `wgfhe::testing::FlipOneBit` tampers with one output) implements [`BackendWrapper`], and the
//! one implementation of [`Backend`] below, for every wrapper, forwards each method to the
//! wrapped backend: kernel dispatches through [`BackendWrapper::dispatch`] (with a [`Kernel`]
//! describing the call), host transfers through [`BackendWrapper::transfer`], the rest
//! (allocation, lengths, views, the context, synchronisation) directly.
//!
//! A kernel added to [`Backend`] is forwarded here, once, with its [`Kernel`] variant; the
//! compiler then asks each wrapper that inspects kernels (the ledger's cost model) to handle it.

use std::sync::Arc;

use super::fused::Program;
use super::Backend;
use crate::error::Result;
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
    /// [`Backend::merge_limbs`].
    MergeLimbs {
        /// Limbs of the output.
        limbs: usize,
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
        from: &'a [usize],
        /// Basis of the output.
        to: &'a [usize],
    },
    /// [`Backend::scale_down`].
    ScaleDown {
        /// Primes kept (the output's basis).
        keep: &'a [usize],
        /// Primes divided out.
        drop: &'a [usize],
        /// The BGV plaintext modulus, if any.
        t: Option<u32>,
    },
    /// [`Backend::key_switch_inner_product`].
    KeySwitchInnerProduct {
        /// Number of digits.
        digits: usize,
        /// Basis of the digits and outputs.
        basis: &'a [usize],
        /// Basis of the key polynomials.
        key_basis: &'a [usize],
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

impl<B: Backend> Kernel<'_, B> {
    /// The name of the [`Backend`] method (and of the GPU shader): `"ntt_forward"`, ...
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Duplicate { .. } => "duplicate",
            Self::GatherLimbs { .. } => "gather_limbs",
            Self::MergeLimbs { .. } => "merge_limbs",
            Self::NttForward { .. } => "ntt_forward",
            Self::NttInverse { .. } => "ntt_inverse",
            Self::Add { .. } => "add",
            Self::Sub { .. } => "sub",
            Self::Neg { .. } => "neg",
            Self::Mul { .. } => "mul",
            Self::MulAdd { .. } => "mul_add",
            Self::MulScalar { .. } => "mul_scalar",
            Self::Automorphism { .. } => "automorphism",
            Self::BaseConvert { .. } => "base_convert",
            Self::ScaleDown { .. } => "scale_down",
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

    /// Runs one host transfer ([`Backend::upload`] or [`Backend::download`]) of `words` words.
    fn transfer<T>(&self, _words: usize, run: impl FnOnce(&Self::Inner) -> Result<T>) -> Result<T> {
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
        self.transfer(words.len(), |k| k.upload(words))
    }
    fn download(&self, buf: &Self::Buffer) -> Result<Vec<u32>> {
        self.transfer(self.inner().len(buf), |k| k.download(buf))
    }
    fn zeros(&self, words: usize) -> Result<Self::Buffer> {
        self.inner().zeros(words)
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
    fn merge_limbs(
        &self,
        first: (&Self::Buffer, &[usize]),
        second: (&Self::Buffer, &[usize]),
        limbs: usize,
    ) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::MergeLimbs { limbs }, |k| k.merge_limbs(first, second, limbs))
    }
    fn ntt_forward(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()> {
        self.dispatch(&Kernel::NttForward { basis }, |k| k.ntt_forward(buf, basis).map(|()| buf)).map(|_| ())
    }
    fn ntt_inverse(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()> {
        self.dispatch(&Kernel::NttInverse { basis }, |k| k.ntt_inverse(buf, basis).map(|()| buf)).map(|_| ())
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
    fn mul_scalar(&self, a: &Self::Buffer, scalars: &[u32], basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::MulScalar { basis }, |k| k.mul_scalar(a, scalars, basis))
    }
    fn automorphism(&self, a: &Self::Buffer, g: usize, basis: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::Automorphism { g, basis }, |k| k.automorphism(a, g, basis))
    }
    fn base_convert(&self, a: &Self::Buffer, from: &[usize], to: &[usize]) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::BaseConvert { from, to }, |k| k.base_convert(a, from, to))
    }
    fn scale_down(&self, a: &Self::Buffer, keep: &[usize], drop: &[usize], t: Option<u32>) -> Result<Self::Buffer> {
        self.dispatch(&Kernel::ScaleDown { keep, drop, t }, |k| k.scale_down(a, keep, drop, t))
    }
    fn key_switch_inner_product(
        &self,
        digits: &[&Self::Buffer],
        basis: &[usize],
        key: &[(&Self::Buffer, &Self::Buffer)],
        key_basis: &[usize],
    ) -> Result<(Self::Buffer, Self::Buffer)> {
        self.dispatch(&Kernel::KeySwitchInnerProduct { digits: digits.len(), basis, key_basis }, |k| {
            k.key_switch_inner_product(digits, basis, key, key_basis)
        })
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
        self.inner().synchronize()
    }
}
