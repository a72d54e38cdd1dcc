//! BXT memory compression (Bae et al., "Memory-Efficient Designs for Word-Wise Universal Fully
//! Homomorphic Encryption", arXiv 2609.04769) on both backends, and seeded evaluation keys.
//!
//! A compressed BGV ciphertext keeps each half in one of four forms ([`Half`]):
//! * `Stored`: `u32` limbs, as the baseline;
//! * `Packed`: limbs bit-packed to `bits(q_i)` bits per residue
//!   ([`crate::backend::fused::packed_layout`], the wire format's packing);
//! * `Seeded`: the uniform `a` half of a fresh symmetric encryption kept as its seed, regenerated
//!   in registers by every kernel that reads it;
//! * `Lazy`: delayed seed generation, `sum_i (prod_j w_ij) * src_i` where each source is a seed or
//!   a stored/packed polynomial and the weights are integers or plaintexts; generated only when an
//!   operation needs it (HMULT, HROTATE, serialisation, materialisation), inside that
//!   operation's kernel.
//!
//! [`Variant`] selects how an evaluator ([`Bxt`]) uses them: `baseline` (the plain BGV
//! operations), `c` (seeded halves), `cs` (+ packed limbs), `cso` (+ fused PMULT/HADD/PADD
//! chains and lazy `a` halves) and `cso+k` (+ seeded evaluation keys, whose `a` parts are
//! regenerated inside the key-switching inner product and whose `b` parts are held bit-packed and
//! unpacked there). Every variant computes the same
//! residues: materialised results are byte-identical to the baseline's.
//!
//! Every kernel of the non-baseline variants is a fused program ([`crate::backend::fused`]): one
//! dispatch with no intermediate stores, on either backend.
//!
//! # Example
//!
//! A fused weighted sum `3 x + 2 y - z` under `cso` decrypts to the slot-wise result and
//! materialises to the words the baseline computes from the same encryptions (two secret keys
//! from one seed draw the same encryption seeds); a fresh `cso` ciphertext holds its `a` half as
//! a seed and its `b` half packed, under half the baseline's bytes:
//!
//! ```
//! use wgfhe::backend::Backend;
//! use wgfhe::bgv::Bgv;
//! use wgfhe::compress::{Bxt, Variant, Weight};
//! use wgfhe::params::{self, TestRing};
//!
//! let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537)?;
//! let bgv = Bgv::cpu(&p)?;
//! let be = bgv.backend();
//! let inputs = [[1u64, 2, 3], [10, 20, 30], [4, 4, 4]];
//! let sum_words = |variant| -> wgfhe::Result<(Vec<u64>, Vec<Vec<u32>>, u64)> {
//!     let sk = bgv.gen_secret_key_from_seed(&[5; 32])?;
//!     let bxt = Bxt::new(&bgv, variant);
//!     let cts = inputs.iter().map(|v| bxt.encrypt(&sk, &bgv.encoder().encode(v)?)).collect::<Result<Vec<_>, _>>()?;
//!     let terms = [(Weight::Int(3), &cts[0]), (Weight::Int(2), &cts[1]), (Weight::Int(-1), &cts[2])];
//!     let sum = bxt.weighted_sum(&terms, None)?;
//!     let slots = bgv.encoder().decode(&bxt.decrypt(&sk, &sum)?)?;
//!     let words = bxt.materialize(&sum)?.polys().iter().map(|p| be.download(p.buffer())).collect::<Result<_, _>>()?;
//!     Ok((slots, words, cts[0].resident_bytes(be)))
//! };
//! let (base_slots, base_words, base_bytes) = sum_words(Variant::Baseline)?;
//! let (cso_slots, cso_words, cso_bytes) = sum_words(Variant::Cso)?;
//! assert_eq!(base_slots[..4], [3 + 20 - 4, 6 + 40 - 4, 9 + 60 - 4, 0]);
//! assert_eq!(cso_slots, base_slots);
//! assert!(cso_words == base_words);
//! assert!(2 * cso_bytes < base_bytes, "{cso_bytes} vs {base_bytes}");
//! # Ok::<(), wgfhe::Error>(())
//! ```

mod evaluator;
mod wire;

pub use evaluator::{Bxt, Weight, MAX_SUM_INPUTS};

use std::sync::Arc;

use crate::backend::fused::{Expr, Format, Operand, Traffic};
use crate::backend::Backend;
use crate::bgv::Ciphertext;
use crate::error::{Error, Result};
use crate::math::sampling::{Purpose, Seed, SEED_BYTES};
use crate::poly::{Eval, RnsPoly};
use crate::ring::Basis;

/// Which BXT techniques an evaluator applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Both halves stored as `u32` limbs; the plain BGV kernels.
    Baseline,
    /// Seeded `a` halves regenerated inside the kernels that read them.
    C,
    /// `C` with every stored limb bit-packed.
    Cs,
    /// `CS` with fused PMULT/HADD/PADD chains and lazy (delayed) `a` halves.
    Cso,
    /// `CSO` with seeded evaluation keys whose `b` parts are bit-packed.
    CsoK,
}

impl Variant {
    /// Every variant, in report order.
    pub const ALL: [Self; 5] = [Self::Baseline, Self::C, Self::Cs, Self::Cso, Self::CsoK];

    /// Report name: `baseline`, `c`, `cs`, `cso`, `cso+k`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Baseline => "baseline",
            Self::C => "c",
            Self::Cs => "cs",
            Self::Cso => "cso",
            Self::CsoK => "cso+k",
        }
    }

    /// Parses a report name.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or(Error::InvalidField { field: "variant", reason: "must be baseline, c, cs, cso or cso+k" })
    }

    /// Fresh `a` halves stay seeds.
    #[must_use]
    pub const fn seeds(self) -> bool {
        !matches!(self, Self::Baseline)
    }

    /// Stored limbs are bit-packed.
    #[must_use]
    pub const fn packs(self) -> bool {
        matches!(self, Self::Cs | Self::Cso | Self::CsoK)
    }

    /// PMULT/HADD/PADD chains are fused and `a` halves stay lazy.
    #[must_use]
    pub const fn fuses(self) -> bool {
        matches!(self, Self::Cso | Self::CsoK)
    }

    /// Evaluation keys keep their `a` parts as seeds.
    #[must_use]
    pub const fn seeded_keys(self) -> bool {
        matches!(self, Self::CsoK)
    }

    /// Storage format of the limbs this variant writes.
    #[must_use]
    pub const fn format(self) -> Format {
        if self.packs() {
            Format::Packed
        } else {
            Format::Words
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A bit-packed polynomial (Eval domain) over `basis`.
pub struct PackedPoly<B: Backend> {
    buf: B::Buffer,
    basis: Basis,
}

impl<B: Backend> std::fmt::Debug for PackedPoly<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedPoly({} limbs)", self.basis.len())
    }
}

impl<B: Backend> PackedPoly<B> {
    /// Wraps a packed buffer, checking its size against the layout of `basis`.
    pub fn from_buffer(backend: &B, buf: B::Buffer, basis: Basis) -> Result<Self> {
        let want = crate::backend::fused::buffer_words(backend.context(), &basis, Format::Packed)?;
        let found = backend.len(&buf);
        if found != want {
            return Err(Error::DimensionMismatch { what: "packed polynomial", expected: want, found });
        }
        Ok(Self { buf, basis })
    }

    /// The packed words.
    #[must_use]
    pub fn buffer(&self) -> &B::Buffer {
        &self.buf
    }

    /// Prime indices of the limbs.
    #[must_use]
    pub fn basis(&self) -> &Basis {
        &self.basis
    }
}

/// A factor of a lazy term.
#[derive(Debug)]
pub enum Factor<B: Backend> {
    /// An integer (centred mod t), lifted to every limb as a constant.
    Int(i64),
    /// A plaintext polynomial (Eval domain, over the ciphertext's basis).
    Plain(Arc<RnsPoly<B, Eval>>),
}

impl<B: Backend> Clone for Factor<B> {
    fn clone(&self) -> Self {
        match self {
            Self::Int(k) => Self::Int(*k),
            Self::Plain(p) => Self::Plain(Arc::clone(p)),
        }
    }
}

/// Where a lazy term's polynomial comes from.
#[derive(Debug)]
pub enum Source<B: Backend> {
    /// The uniform `a` half of a fresh symmetric encryption.
    Seed(Seed),
    /// Stored limbs.
    Stored(Arc<RnsPoly<B, Eval>>),
    /// Packed limbs.
    Packed(Arc<PackedPoly<B>>),
}

impl<B: Backend> Clone for Source<B> {
    fn clone(&self) -> Self {
        match self {
            Self::Seed(s) => Self::Seed(*s),
            Self::Stored(p) => Self::Stored(Arc::clone(p)),
            Self::Packed(p) => Self::Packed(Arc::clone(p)),
        }
    }
}

/// One term `prod(factors) * source` of a lazy half.
#[derive(Debug)]
pub struct Term<B: Backend> {
    /// Multiplied together (none: 1).
    pub factors: Vec<Factor<B>>,
    /// The polynomial.
    pub source: Source<B>,
}

impl<B: Backend> Clone for Term<B> {
    fn clone(&self) -> Self {
        Self { factors: self.factors.clone(), source: self.source.clone() }
    }
}

/// One half of a compressed ciphertext.
#[derive(Debug)]
pub enum Half<B: Backend> {
    /// `u32` limbs.
    Stored(Arc<RnsPoly<B, Eval>>),
    /// Bit-packed limbs.
    Packed(Arc<PackedPoly<B>>),
    /// The PRG output of a seed (`Purpose::CiphertextA`, stream index 0).
    Seeded(Seed),
    /// The sum of its terms, generated when needed.
    Lazy(Vec<Term<B>>),
}

impl<B: Backend> Clone for Half<B> {
    fn clone(&self) -> Self {
        match self {
            Self::Stored(p) => Self::Stored(Arc::clone(p)),
            Self::Packed(p) => Self::Packed(Arc::clone(p)),
            Self::Seeded(s) => Self::Seeded(*s),
            Self::Lazy(t) => Self::Lazy(t.clone()),
        }
    }
}

impl<B: Backend> Half<B> {
    /// The half as a sum of terms.
    #[must_use]
    pub fn terms(&self) -> Vec<Term<B>> {
        let single = |source| vec![Term { factors: Vec::new(), source }];
        match self {
            Self::Stored(p) => single(Source::Stored(Arc::clone(p))),
            Self::Packed(p) => single(Source::Packed(Arc::clone(p))),
            Self::Seeded(s) => single(Source::Seed(*s)),
            Self::Lazy(t) => t.clone(),
        }
    }

    /// Short name of the form: `stored`, `packed`, `seeded`, `lazy`.
    #[must_use]
    pub fn form(&self) -> &'static str {
        match self {
            Self::Stored(_) => "stored",
            Self::Packed(_) => "packed",
            Self::Seeded(_) => "seeded",
            Self::Lazy(_) => "lazy",
        }
    }

    /// Distinct buffers the half's expression reads (plaintext factors and stored sources).
    #[must_use]
    pub fn buffer_count(&self) -> usize {
        let mut n = 0;
        for t in self.terms() {
            n += t.factors.iter().filter(|f| matches!(f, Factor::Plain(_))).count();
            n += usize::from(!matches!(t.source, Source::Seed(_)));
        }
        n
    }

    /// Bytes this half holds in backend buffers (plaintext factors of lazy terms included, once
    /// per reference) plus 32 bytes per seed.
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        let words = |b: &B::Buffer| backend.len(b) as u64 * 4;
        self.terms()
            .iter()
            .map(|t| {
                let f: u64 = t
                    .factors
                    .iter()
                    .map(|f| match f {
                        Factor::Int(_) => 8,
                        Factor::Plain(p) => words(p.buffer()),
                    })
                    .sum();
                f + match &t.source {
                    Source::Seed(_) => SEED_BYTES as u64,
                    Source::Stored(p) => words(p.buffer()),
                    Source::Packed(p) => words(p.buffer()),
                }
            })
            .sum()
    }
}

/// A BGV ciphertext of degree 1 with compressed halves, or (baseline) a plain one.
#[derive(Debug)]
pub struct BxtCiphertext<B: Backend> {
    pub(crate) repr: Repr<B>,
}

#[derive(Debug)]
pub(crate) enum Repr<B: Backend> {
    /// The baseline: a plain BGV ciphertext.
    Plain(Ciphertext<B>),
    /// Compressed halves and the BGV bookkeeping.
    Halves { b: Half<B>, a: Half<B>, meta: Meta },
}

/// The BGV bookkeeping of a compressed ciphertext.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub level: usize,
    pub correction: u32,
    pub noise_log2: f64,
    pub param_id: u64,
}

impl<B: Backend> BxtCiphertext<B> {
    /// Level (index of the last prime of its modulus).
    #[must_use]
    pub fn level(&self) -> usize {
        match &self.repr {
            Repr::Plain(ct) => ct.level(),
            Repr::Halves { meta, .. } => meta.level,
        }
    }

    /// The BGV correction factor (see [`crate::bgv`]): what a plaintext added to it is
    /// prepared with ([`crate::bgv::Bgv::prepare_plain_with_factor`]).
    #[must_use]
    pub fn correction_factor(&self) -> u32 {
        match &self.repr {
            Repr::Plain(ct) => ct.correction_factor(),
            Repr::Halves { meta, .. } => meta.correction,
        }
    }

    /// Estimated `log2` of the noise bound (the same model as [`crate::bgv`]).
    #[must_use]
    pub fn noise_estimate(&self) -> f64 {
        match &self.repr {
            Repr::Plain(ct) => ct.noise_estimate(),
            Repr::Halves { meta, .. } => meta.noise_log2,
        }
    }

    /// The forms of the `(b, a)` halves (`stored`, `packed`, `seeded`, `lazy`).
    #[must_use]
    pub fn forms(&self) -> (&'static str, &'static str) {
        match &self.repr {
            Repr::Plain(_) => ("stored", "stored"),
            Repr::Halves { b, a, .. } => (b.form(), a.form()),
        }
    }

    /// The halves, for a compressed ciphertext.
    #[must_use]
    pub fn halves(&self) -> Option<(&Half<B>, &Half<B>)> {
        match &self.repr {
            Repr::Plain(_) => None,
            Repr::Halves { b, a, .. } => Some((b, a)),
        }
    }

    /// Bytes resident in backend buffers (seeds count 32 bytes).
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        match &self.repr {
            Repr::Plain(ct) => ct.polys().iter().map(|p| backend.len(p.buffer()) as u64 * 4).sum(),
            Repr::Halves { b, a, .. } => b.resident_bytes(backend) + a.resident_bytes(backend),
        }
    }
}

/// Builds the operands of a fused program from halves, loading each buffer and stream once.
pub(crate) struct ProgramBuilder<'a, B: Backend> {
    pub operands: Vec<Operand<'a, B>>,
    basis: &'a [usize],
    moduli: Vec<crate::math::zq::Modulus>,
}

impl<'a, B: Backend> ProgramBuilder<'a, B> {
    pub fn new(backend: &B, basis: &'a [usize]) -> Result<Self> {
        Ok(Self { operands: Vec::new(), basis, moduli: backend.context().moduli_of(basis)? })
    }

    fn push(&mut self, op: Operand<'a, B>) -> Expr {
        self.operands.push(op);
        Expr::Load(self.operands.len() - 1)
    }

    /// Loads a buffer (once per buffer).
    pub fn buffer(&mut self, buf: &'a B::Buffer, basis: &'a [usize], format: Format, traffic: Traffic) -> Expr {
        for (i, op) in self.operands.iter().enumerate() {
            if let Operand::Buffer { buf: b, .. } = op {
                if std::ptr::eq(*b, buf) {
                    return Expr::Load(i);
                }
            }
        }
        self.push(Operand::Buffer { buf, basis, format, traffic, limb_offset: 0 })
    }

    /// A stored polynomial.
    pub fn poly(&mut self, p: &'a RnsPoly<B, Eval>, traffic: Traffic) -> Expr {
        self.buffer(p.buffer(), p.basis(), Format::Words, traffic)
    }

    /// The ciphertext-`a` stream of `seed` (once per seed).
    pub fn seed(&mut self, seed: &Seed) -> Expr {
        for (i, op) in self.operands.iter().enumerate() {
            if let Operand::Uniform { seed: s, purpose: Purpose::CiphertextA, index: 0 } = op {
                if s == seed {
                    return Expr::Load(i);
                }
            }
        }
        self.push(Operand::Uniform { seed: *seed, purpose: Purpose::CiphertextA, index: 0 })
    }

    /// The integer `k` (centred mod t) as a per-limb constant.
    pub fn int(&mut self, k: i64) -> Expr {
        let scalars = self.moduli.iter().map(|m| m.reduce_i64(k)).collect();
        self.push(Operand::Scalar(scalars))
    }

    /// The expression of a half.
    pub fn half(&mut self, h: &'a Half<B>) -> Result<Expr> {
        match h {
            Half::Stored(p) => Ok(self.poly(p, Traffic::Ciphertext)),
            Half::Packed(p) => Ok(self.buffer(p.buffer(), p.basis(), Format::Packed, Traffic::Ciphertext)),
            Half::Seeded(s) => Ok(self.seed(s)),
            Half::Lazy(terms) => {
                let mut sum = Vec::with_capacity(terms.len());
                for t in terms {
                    let mut e = match &t.source {
                        Source::Seed(s) => self.seed(s),
                        Source::Stored(p) => self.poly(p, Traffic::Ciphertext),
                        Source::Packed(p) => self.buffer(p.buffer(), p.basis(), Format::Packed, Traffic::Ciphertext),
                    };
                    for f in &t.factors {
                        let w = match f {
                            Factor::Int(k) => self.int(*k),
                            Factor::Plain(p) => self.poly(p, Traffic::Plaintext),
                        };
                        e = Expr::mul(w, e);
                    }
                    sum.push(e);
                }
                if sum.len() == 1 {
                    sum.pop().ok_or(Error::InvalidField { field: "lazy half", reason: "empty" })
                } else {
                    Ok(Expr::Sum(sum))
                }
            }
        }
    }

    /// The output basis.
    pub fn basis(&self) -> &'a [usize] {
        self.basis
    }
}
