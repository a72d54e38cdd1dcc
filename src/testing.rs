//! A backend wrapper for testing the equivalence harness itself: it flips one bit of the first
//! output of one named kernel, so a comparison that cannot tell the difference is shown to be
//! broken (a harness that cannot fail proves nothing).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::backend::Backend;
use crate::error::Result;
use crate::math::sampling::{Purpose, Seed};
use crate::ring::RingContext;

/// Wraps `B`, flipping bit 0 of word `word` in the first output of kernel `kernel`.
#[derive(Debug)]
pub struct FlipOneBit<B: Backend> {
    inner: B,
    kernel: &'static str,
    word: usize,
    fired: AtomicBool,
}

impl<B: Backend> FlipOneBit<B> {
    /// Wraps `inner`; `kernel` is a [`Backend`] method name (`"mul"`, `"ntt_forward"`, ...).
    #[must_use]
    pub fn new(inner: B, kernel: &'static str, word: usize) -> Self {
        Self { inner, kernel, word, fired: AtomicBool::new(false) }
    }

    /// The flipped copy of `buf` if this is the first output of the chosen kernel.
    fn flipped(&self, name: &str, buf: &B::Buffer) -> Result<Option<B::Buffer>> {
        if name != self.kernel || self.fired.swap(true, Ordering::SeqCst) {
            return Ok(None);
        }
        let mut host = self.inner.download(buf)?;
        if let Some(w) = host.get_mut(self.word) {
            *w ^= 1;
        }
        self.inner.upload(&host).map(Some)
    }

    fn tamper(&self, name: &str, buf: B::Buffer) -> Result<B::Buffer> {
        Ok(self.flipped(name, &buf)?.unwrap_or(buf))
    }

    fn tamper_in_place(&self, name: &str, buf: &mut B::Buffer) -> Result<()> {
        if let Some(b) = self.flipped(name, buf)? {
            *buf = b;
        }
        Ok(())
    }
}

impl<B: Backend> Backend for FlipOneBit<B> {
    type Buffer = B::Buffer;

    fn name(&self) -> &'static str {
        "flip-one-bit"
    }
    fn context(&self) -> &Arc<RingContext> {
        self.inner.context()
    }
    fn upload(&self, words: &[u32]) -> Result<Self::Buffer> {
        self.inner.upload(words)
    }
    fn download(&self, buf: &Self::Buffer) -> Result<Vec<u32>> {
        self.inner.download(buf)
    }
    fn zeros(&self, words: usize) -> Result<Self::Buffer> {
        self.inner.zeros(words)
    }
    fn len(&self, buf: &Self::Buffer) -> usize {
        self.inner.len(buf)
    }
    fn duplicate(&self, buf: &Self::Buffer) -> Result<Self::Buffer> {
        self.inner.duplicate(buf)
    }
    fn truncate(&self, buf: Self::Buffer, words: usize) -> Result<Self::Buffer> {
        self.inner.truncate(buf, words)
    }
    fn gather_limbs(&self, buf: &Self::Buffer, positions: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.gather_limbs(buf, positions)?;
        self.tamper("gather_limbs", out)
    }
    fn merge_limbs(
        &self,
        first: (&Self::Buffer, &[usize]),
        second: (&Self::Buffer, &[usize]),
        limbs: usize,
    ) -> Result<Self::Buffer> {
        let out = self.inner.merge_limbs(first, second, limbs)?;
        self.tamper("merge_limbs", out)
    }
    fn ntt_forward(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()> {
        self.inner.ntt_forward(buf, basis)?;
        self.tamper_in_place("ntt_forward", buf)
    }
    fn ntt_inverse(&self, buf: &mut Self::Buffer, basis: &[usize]) -> Result<()> {
        self.inner.ntt_inverse(buf, basis)?;
        self.tamper_in_place("ntt_inverse", buf)
    }
    fn add(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.add(a, b, basis)?;
        self.tamper("add", out)
    }
    fn sub(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.sub(a, b, basis)?;
        self.tamper("sub", out)
    }
    fn neg(&self, a: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.neg(a, basis)?;
        self.tamper("neg", out)
    }
    fn mul(&self, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.mul(a, b, basis)?;
        self.tamper("mul", out)
    }
    fn mul_add(&self, acc: &mut Self::Buffer, a: &Self::Buffer, b: &Self::Buffer, basis: &[usize]) -> Result<()> {
        self.inner.mul_add(acc, a, b, basis)?;
        self.tamper_in_place("mul_add", acc)
    }
    fn mul_scalar(&self, a: &Self::Buffer, scalars: &[u32], basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.mul_scalar(a, scalars, basis)?;
        self.tamper("mul_scalar", out)
    }
    fn automorphism(&self, a: &Self::Buffer, g: usize, basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.automorphism(a, g, basis)?;
        self.tamper("automorphism", out)
    }
    fn base_convert(&self, a: &Self::Buffer, from: &[usize], to: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.base_convert(a, from, to)?;
        self.tamper("base_convert", out)
    }
    fn scale_down(&self, a: &Self::Buffer, keep: &[usize], drop: &[usize], t: Option<u32>) -> Result<Self::Buffer> {
        let out = self.inner.scale_down(a, keep, drop, t)?;
        self.tamper("scale_down", out)
    }
    fn key_switch_inner_product(
        &self,
        digits: &[&Self::Buffer],
        basis: &[usize],
        key: &[(&Self::Buffer, &Self::Buffer)],
        key_basis: &[usize],
    ) -> Result<(Self::Buffer, Self::Buffer)> {
        let (a, b) = self.inner.key_switch_inner_product(digits, basis, key, key_basis)?;
        Ok((self.tamper("key_switch_inner_product", a)?, b))
    }
    fn uniform(&self, seed: &Seed, purpose: Purpose, index: u32, basis: &[usize]) -> Result<Self::Buffer> {
        let out = self.inner.uniform(seed, purpose, index, basis)?;
        self.tamper("uniform", out)
    }
    fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn max_fused_buffers(&self) -> usize {
        self.inner.max_fused_buffers()
    }
    fn fused(&self, program: &crate::backend::fused::Program<'_, Self>) -> Result<Vec<Self::Buffer>> {
        let mut outs = self.inner.fused(&program.rebind())?;
        if let Some(first) = outs.first_mut() {
            self.tamper_in_place("fused", first)?;
        }
        Ok(outs)
    }
}
