//! A backend wrapper for testing the equivalence harness itself: it flips one bit of the first
//! output of one named kernel, so a comparison that cannot tell the difference is shown to be
//! broken (a harness that cannot fail proves nothing).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::backend::{Backend, BackendWrapper, Kernel, KernelOutput};
use crate::error::Result;

/// Wraps `B`, flipping bit 0 of word `word` in the first output of kernel `kernel`.
#[derive(Debug)]
pub struct FlipOneBit<B: Backend> {
    inner: B,
    kernel: &'static str,
    word: usize,
    fired: AtomicBool,
}

impl<B: Backend> FlipOneBit<B> {
    /// Wraps `inner`; `kernel` is the name of a kernel dispatch ([`Kernel::name`]: `"mul"`,
    /// `"ntt_forward"`, ...). Host transfers, allocations and views are never tampered with.
    #[must_use]
    pub fn new(inner: B, kernel: &'static str, word: usize) -> Self {
        Self { inner, kernel, word, fired: AtomicBool::new(false) }
    }
}

impl<B: Backend> BackendWrapper for FlipOneBit<B> {
    type Inner = B;

    fn inner(&self) -> &B {
        &self.inner
    }

    fn wrapper_name(&self) -> &'static str {
        "flip-one-bit"
    }

    /// Runs the kernel; the first time the chosen one has an output, replaces its first output
    /// by a copy with the bit flipped.
    fn dispatch<T: KernelOutput<B::Buffer>>(
        &self,
        kernel: &Kernel<'_, B>,
        run: impl FnOnce(&B) -> Result<T>,
    ) -> Result<T> {
        let mut out = run(&self.inner)?;
        if kernel.name() != self.kernel {
            return Ok(out);
        }
        if let Some(first) = out.first_output() {
            if !self.fired.swap(true, Ordering::SeqCst) {
                let mut host = self.inner.download(first)?;
                if let Some(w) = host.get_mut(self.word) {
                    *w ^= 1;
                }
                *first = self.inner.upload(&host)?;
            }
        }
        Ok(out)
    }
}
