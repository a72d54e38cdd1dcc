//! A backend that computes shapes only: every buffer is a word count (and an identity), every
//! kernel checks its operands' shapes as the CPU backend does and returns buffers of the right
//! size with no residues in them.
//!
//! Scheme code above the backend decides levels, digit counts and modulus switches from
//! shapes and from its noise *model* (never from residues), so running a server-side
//! computation on this backend follows exactly the path it follows on a real backend, in a
//! fraction of the time and memory. [`ShapeBackend::key_switches`] then says which key each key
//! switch read (by the identity of its first `b` buffer) and at which level: the plan of an
//! evaluation-key set ([`crate::rlwe::KeyPlan`]). [`Backend::download`] returns zeros, so
//! nothing decrypted on it means anything.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::fused::buffer_words;
use super::{Backend, ConvertPart, InnerProductInput, InnerProductSums};
use crate::error::{Error, Result};
use crate::math::rounding::Rounding;
use crate::math::sampling::{Purpose, Seed};
use crate::ring::RingContext;

/// A buffer of the shape backend: its length in words and an identity unique to the backend.
#[derive(Debug)]
pub struct ShapeBuffer {
    words: usize,
    id: u64,
}

impl ShapeBuffer {
    /// The buffer's identity (every buffer the backend makes gets a new one).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }
}

/// One key switch seen by the shape backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySwitchUse {
    /// Identity of the first key digit's `b` buffer ([`ShapeBuffer::id`]).
    pub key: u64,
    /// Level of the switched polynomial (its number of chain primes less one).
    pub level: usize,
}

/// The shape-only backend (see the module documentation).
#[derive(Debug)]
pub struct ShapeBackend {
    ctx: Arc<RingContext>,
    next: AtomicU64,
    uses: Mutex<Vec<KeySwitchUse>>,
}

impl ShapeBackend {
    /// A backend computing shapes in `ctx`.
    #[must_use]
    pub fn new(ctx: Arc<RingContext>) -> Self {
        Self { ctx, next: AtomicU64::new(0), uses: Mutex::new(Vec::new()) }
    }

    /// The key switches run so far, in order.
    #[must_use]
    pub fn key_switches(&self) -> Vec<KeySwitchUse> {
        self.uses.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn buffer(&self, words: usize) -> ShapeBuffer {
        ShapeBuffer { words, id: self.next.fetch_add(1, Ordering::Relaxed) }
    }

    fn limbs(&self, basis: &[usize]) -> Result<usize> {
        self.ctx.moduli_of(basis)?;
        basis.len().checked_mul(self.ctx.n()).ok_or(Error::SizeOverflow { what: "buffer" })
    }

    fn check(&self, what: &'static str, buf: &ShapeBuffer, basis: &[usize]) -> Result<()> {
        let words = self.limbs(basis)?;
        if buf.words != words {
            return Err(Error::DimensionMismatch { what, expected: words, found: buf.words });
        }
        Ok(())
    }

    fn same(&self, a: &ShapeBuffer, b: &ShapeBuffer, basis: &[usize]) -> Result<ShapeBuffer> {
        self.check("operand", a, basis)?;
        self.check("operand", b, basis)?;
        Ok(self.buffer(a.words))
    }
}

impl Backend for ShapeBackend {
    type Buffer = ShapeBuffer;

    fn name(&self) -> &'static str {
        "shape"
    }

    fn context(&self) -> &Arc<RingContext> {
        &self.ctx
    }

    fn upload(&self, words: &[u32]) -> Result<ShapeBuffer> {
        Ok(self.buffer(words.len()))
    }

    fn download(&self, buf: &ShapeBuffer) -> Result<Vec<u32>> {
        Ok(vec![0; buf.words])
    }

    fn zeros(&self, words: usize) -> Result<ShapeBuffer> {
        Ok(self.buffer(words))
    }

    fn len(&self, buf: &ShapeBuffer) -> usize {
        buf.words
    }

    fn duplicate(&self, buf: &ShapeBuffer) -> Result<ShapeBuffer> {
        Ok(self.buffer(buf.words))
    }

    fn truncate(&self, buf: ShapeBuffer, words: usize) -> Result<ShapeBuffer> {
        if words > buf.words {
            return Err(Error::DimensionMismatch { what: "truncate", expected: buf.words, found: words });
        }
        Ok(self.buffer(words))
    }

    fn gather_limbs(&self, buf: &ShapeBuffer, positions: &[usize]) -> Result<ShapeBuffer> {
        let n = self.ctx.n();
        if let Some(&p) = positions.iter().find(|&&p| (p + 1) * n > buf.words) {
            return Err(Error::DimensionMismatch { what: "limb position", expected: buf.words / n.max(1), found: p });
        }
        Ok(self.buffer(positions.len() * n))
    }

    fn ntt_forward(&self, buf: &mut ShapeBuffer, basis: &[usize]) -> Result<()> {
        self.check("ntt", buf, basis)
    }

    fn ntt_inverse(&self, buf: &mut ShapeBuffer, basis: &[usize]) -> Result<()> {
        self.check("ntt", buf, basis)
    }

    fn add(&self, a: &ShapeBuffer, b: &ShapeBuffer, basis: &[usize]) -> Result<ShapeBuffer> {
        self.same(a, b, basis)
    }

    fn sub(&self, a: &ShapeBuffer, b: &ShapeBuffer, basis: &[usize]) -> Result<ShapeBuffer> {
        self.same(a, b, basis)
    }

    fn neg(&self, a: &ShapeBuffer, basis: &[usize]) -> Result<ShapeBuffer> {
        self.same(a, a, basis)
    }

    fn mul(&self, a: &ShapeBuffer, b: &ShapeBuffer, basis: &[usize]) -> Result<ShapeBuffer> {
        self.same(a, b, basis)
    }

    fn mul_add(&self, acc: &mut ShapeBuffer, a: &ShapeBuffer, b: &ShapeBuffer, basis: &[usize]) -> Result<()> {
        self.check("accumulator", acc, basis)?;
        self.same(a, b, basis).map(drop)
    }

    fn mul_scalar(&self, a: &ShapeBuffer, scalars: &[u32], basis: &[usize]) -> Result<ShapeBuffer> {
        if scalars.len() != basis.len() {
            return Err(Error::DimensionMismatch { what: "scalars", expected: basis.len(), found: scalars.len() });
        }
        self.same(a, a, basis)
    }

    fn automorphism(&self, a: &ShapeBuffer, g: usize, basis: &[usize]) -> Result<ShapeBuffer> {
        self.ctx.galois_permutation(g)?;
        self.same(a, a, basis)
    }

    fn base_convert(&self, a: &ShapeBuffer, basis: &[usize], parts: &[ConvertPart<'_>]) -> Result<ShapeBuffer> {
        self.check("base_convert input", a, basis)?;
        super::key_switching::convert_positions(basis, parts)?;
        let limbs: usize = parts.iter().map(|(_, to)| to.len()).sum();
        Ok(self.buffer(limbs * self.ctx.n()))
    }

    fn scale_down_correction(
        &self,
        dropped: &ShapeBuffer,
        keep: &[usize],
        drop: &[usize],
        _t: Option<u32>,
        _rounding: Rounding,
    ) -> Result<ShapeBuffer> {
        let per = self.limbs(drop)?;
        let keep_words = self.limbs(keep)?;
        if per == 0 || !dropped.words.is_multiple_of(per) {
            return Err(Error::DimensionMismatch { what: "dropped limbs", expected: per, found: dropped.words });
        }
        Ok(self.buffer(dropped.words / per * keep_words))
    }

    fn key_switch_inner_product(
        &self,
        input: &InnerProductInput<'_, ShapeBuffer>,
    ) -> Result<InnerProductSums<ShapeBuffer>> {
        input.layout(|b| b.words, &self.ctx)?;
        let n = self.ctx.n();
        let (lq, lp) = (input.q_basis.len(), input.p_basis.len());
        if let (Some(k), Some(level)) = (input.key.first(), lq.checked_sub(1)) {
            self.uses.lock().unwrap_or_else(PoisonError::into_inner).push(KeySwitchUse { key: k.b.id, level });
        }
        Ok(InnerProductSums { q0: self.buffer(lq * n), q1: self.buffer(lq * n), p: self.buffer(2 * lp * n) })
    }

    fn uniform(&self, _seed: &Seed, _purpose: Purpose, _index: u32, basis: &[usize]) -> Result<ShapeBuffer> {
        Ok(self.buffer(self.limbs(basis)?))
    }

    fn fused(&self, program: &super::fused::Program<'_, Self>) -> Result<Vec<ShapeBuffer>> {
        program.validate(self)?;
        program
            .outputs
            .iter()
            .map(|(_, format)| Ok(self.buffer(buffer_words(&self.ctx, program.basis, *format)?)))
            .collect()
    }
}
