//! Fused element-wise programs: the one kernel family the BXT compression layer
//! (`crate::compress`) is built on.
//!
//! A [`Program`] evaluates one or more expressions over the Eval-domain residues of an output
//! basis, residue by residue, in a single dispatch with no intermediate stores. Each operand is
//! either a buffer of stored residues (plain `u32` words or bit-packed, see [`Format`]), a
//! generator-2 uniform stream regenerated in registers from its seed (the seeded `a` half of a
//! fresh ciphertext), or a per-limb constant. Each output is written plain or packed. So
//! `sum_i w_i * x_i + b`, a tensor product whose `a` halves are seeds, the lazy `a` half
//! `sum_i w_i * PRG(seed_i)` and the last pass of a divide-and-round (`x D^{-1} + corr` plus an
//! addend, [`crate::rlwe::drop_primes`]) are all one dispatch each.
//!
//! Semantics (every backend computes exactly this): for every output limb `l` (prime
//! `q = basis[l]`) and residue index `j`, an expression evaluates to a residue in `[0, q)`:
//! * [`Expr::Load`] of a [`Operand::Buffer`]: residue `j` of the operand's limb with the same
//!   prime (the operand's basis may be a superset of the output basis); of a
//!   [`Operand::Uniform`]: residue `j` of the stream's limb for `q`
//!   ([`crate::math::sampling::uniform_residue`]); of a [`Operand::Scalar`]: its value for limb `l`;
//! * `Add`, `Sub`, `Neg`, `Mul`, `Sum`: the modular operations (Barrett products);
//! * [`Expr::Galois`]`{ g, expr }`: `expr` evaluated at index `perm_g[j]`, the Eval-domain
//!   automorphism `X -> X^g` ([`RingContext::galois_permutation`]).
//!
//! Packed layout ([`packed_layout`]): limb `l` occupies `ceil(N bits(q_l) / 32)` words starting
//! at the sum of the previous limbs' sizes; residue `j` is bits `j bits(q_l) .. (j + 1) bits(q_l)`
//! of the limb's little-endian bit stream (least-significant bit first), padding bits are zero.
//! For `N >= 32` this is byte for byte the wire format's packing mode 1
//! ([`crate::serial::write_residues_packed`]).

use crate::error::{Error, Result};
use crate::math::sampling::{stream_id, Purpose, Seed};
use crate::ring::RingContext;

use super::Backend;

/// Storage format of a buffer operand or of an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One residue per `u32` word.
    Words,
    /// Residues bit-packed to `bits(q)` bits per limb ([`packed_layout`]).
    Packed,
}

/// What kind of data a buffer operand is, for the traffic ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Traffic {
    /// Ciphertext limbs.
    Ciphertext,
    /// Evaluation-key limbs.
    Key,
    /// Plaintext limbs.
    Plaintext,
}

/// One input of a [`Program`].
pub enum Operand<'a, B: Backend> {
    /// Stored residues over `basis` (a superset of the program's output basis).
    Buffer {
        /// The buffer.
        buf: &'a B::Buffer,
        /// Prime indices of its limbs, in storage order.
        basis: &'a [usize],
        /// How the residues are stored.
        format: Format,
        /// Ledger class.
        traffic: Traffic,
        /// Limbs of `buf` before the operand's first (a view of one polynomial in a buffer of
        /// several, as [`crate::backend::Backend::scale_down_correction`] returns them); `Words`
        /// only, 0 for packed operands.
        limb_offset: usize,
    },
    /// Uniform residues of the generator-2 streams `(seed, purpose, index, q)`, regenerated.
    Uniform {
        /// The seed.
        seed: Seed,
        /// Stream purpose.
        purpose: Purpose,
        /// Object index of the stream.
        index: u32,
    },
    /// One constant per output limb (each below its limb's prime).
    Scalar(Vec<u32>),
}

impl<'a, B: Backend> Operand<'a, B> {
    /// A whole buffer of words over `basis`, read as ciphertext traffic: the common
    /// [`Operand::Buffer`] ([`Format::Words`], [`Traffic::Ciphertext`], no limb offset).
    #[must_use]
    pub fn words(buf: &'a B::Buffer, basis: &'a [usize]) -> Self {
        Self::Buffer { buf, basis, format: Format::Words, traffic: Traffic::Ciphertext, limb_offset: 0 }
    }
}

impl<B: Backend> std::fmt::Debug for Operand<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Buffer { basis, format, traffic, .. } => {
                write!(f, "Buffer({format:?}, {traffic:?}, {} limbs)", basis.len())
            }
            Self::Uniform { purpose, index, .. } => write!(f, "Uniform({purpose:?}, {index})"),
            Self::Scalar(s) => write!(f, "Scalar({} limbs)", s.len()),
        }
    }
}

/// An expression over the operands of a [`Program`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// Operand number `i`.
    Load(usize),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a - b`.
    Sub(Box<Expr>, Box<Expr>),
    /// `-a`.
    Neg(Box<Expr>),
    /// `a * b`.
    Mul(Box<Expr>, Box<Expr>),
    /// The sum of the terms (0 when empty).
    Sum(Vec<Expr>),
    /// `expr` under the automorphism `X -> X^g` (Eval domain).
    Galois {
        /// The Galois element (odd, below `2N`).
        g: usize,
        /// The expression permuted.
        expr: Box<Expr>,
    },
}

#[expect(clippy::should_implement_trait, reason = "constructors of expression nodes, not arithmetic on values")]
impl Expr {
    /// `Load(i)`.
    #[must_use]
    pub fn load(i: usize) -> Self {
        Self::Load(i)
    }
    /// `a + b`.
    #[must_use]
    pub fn add(a: Self, b: Self) -> Self {
        Self::Add(Box::new(a), Box::new(b))
    }
    /// `a - b`.
    #[must_use]
    pub fn sub(a: Self, b: Self) -> Self {
        Self::Sub(Box::new(a), Box::new(b))
    }
    /// `a * b`.
    #[must_use]
    pub fn mul(a: Self, b: Self) -> Self {
        Self::Mul(Box::new(a), Box::new(b))
    }
    /// `-a`.
    #[must_use]
    pub fn neg(a: Self) -> Self {
        Self::Neg(Box::new(a))
    }
    /// `a` under `X -> X^g`.
    #[must_use]
    pub fn galois(g: usize, a: Self) -> Self {
        Self::Galois { g, expr: Box::new(a) }
    }

    /// Calls `f` on every node, parents first.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Self::Load(_) => {}
            Self::Add(a, b) | Self::Sub(a, b) | Self::Mul(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Self::Neg(a) | Self::Galois { expr: a, .. } => a.visit(f),
            Self::Sum(terms) => terms.iter().for_each(|t| t.visit(f)),
        }
    }

    /// Number of `Mul` nodes (modular multiplications per residue).
    #[must_use]
    pub fn mul_count(&self) -> u64 {
        let mut n = 0;
        self.visit(&mut |e| {
            if matches!(e, Self::Mul(..)) {
                n += 1;
            }
        });
        n
    }

    /// Depth of the tree (a `Load` has depth 1).
    #[must_use]
    pub fn depth(&self) -> usize {
        match self {
            Self::Load(_) => 1,
            Self::Add(a, b) | Self::Sub(a, b) | Self::Mul(a, b) => 1 + a.depth().max(b.depth()),
            Self::Neg(a) | Self::Galois { expr: a, .. } => 1 + a.depth(),
            Self::Sum(terms) => 1 + terms.iter().map(Self::depth).max().unwrap_or(0),
        }
    }
}

/// Largest expression depth a program may have (bounds recursion in every backend).
pub const MAX_DEPTH: usize = 64;
/// Most operands a program may have.
pub const MAX_OPERANDS: usize = 256;

/// A fused program: operands, and expressions with the format each output is stored in.
#[derive(Debug)]
pub struct Program<'a, B: Backend> {
    /// Prime indices of the output limbs.
    pub basis: &'a [usize],
    /// The inputs.
    pub operands: Vec<Operand<'a, B>>,
    /// One output per entry.
    pub outputs: Vec<(Expr, Format)>,
}

impl<'a, B: Backend> Program<'a, B> {
    /// The same program for another backend with the same buffer type (a wrapper such as the
    /// ledger).
    #[must_use]
    pub fn rebind<B2: Backend<Buffer = B::Buffer>>(&self) -> Program<'a, B2> {
        Program {
            basis: self.basis,
            operands: self
                .operands
                .iter()
                .map(|op| match op {
                    Operand::Buffer { buf, basis, format, traffic, limb_offset } => Operand::Buffer {
                        buf: *buf,
                        basis,
                        format: *format,
                        traffic: *traffic,
                        limb_offset: *limb_offset,
                    },
                    Operand::Uniform { seed, purpose, index } => {
                        Operand::Uniform { seed: *seed, purpose: *purpose, index: *index }
                    }
                    Operand::Scalar(s) => Operand::Scalar(s.clone()),
                })
                .collect(),
            outputs: self.outputs.clone(),
        }
    }
}

/// Start word and word count of every limb of a packed buffer over `basis`, and the total.
pub fn packed_layout(ctx: &RingContext, basis: &[usize]) -> Result<(Vec<(usize, usize)>, usize)> {
    let n = ctx.n();
    let mut out = Vec::with_capacity(basis.len());
    let mut total = 0usize;
    for m in ctx.moduli_of(basis)? {
        let words = n.checked_mul(m.bits() as usize).ok_or(Error::SizeOverflow { what: "packed limb" })?.div_ceil(32);
        out.push((total, words));
        total = total.checked_add(words).ok_or(Error::SizeOverflow { what: "packed buffer" })?;
    }
    Ok((out, total))
}

/// Words of a buffer over `basis` in `format`.
pub fn buffer_words(ctx: &RingContext, basis: &[usize], format: Format) -> Result<usize> {
    match format {
        Format::Words => basis.len().checked_mul(ctx.n()).ok_or(Error::SizeOverflow { what: "buffer" }),
        Format::Packed => packed_layout(ctx, basis).map(|(_, t)| t),
    }
}

mod packing;
pub use packing::{pack_limb, unpack_limb, unpack_residue};

/// What a program moves and computes, from shapes (identical on every backend): the fields of
/// one ledger record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProgramTraffic {
    /// Ciphertext bytes read.
    pub ciphertext_bytes: u64,
    /// Key bytes read.
    pub key_bytes: u64,
    /// Plaintext bytes read.
    pub plaintext_bytes: u64,
    /// Table bytes read (Galois permutations).
    pub table_bytes: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// 32-bit ChaCha12 words of first candidates (one per regenerated residue; the fallback
    /// blocks of rejected residues, `p / (1 - p)` per residue expected, are not counted).
    pub prng_words: u64,
    /// Modular multiplications (`Mul` nodes; generator 2 regenerates without any).
    pub modmuls: u64,
    /// Residues unpacked on load (bit-packed operands).
    pub unpacked_residues: u64,
    /// Residues packed on store (bit-packed outputs).
    pub packed_residues: u64,
}

impl<B: Backend> Program<'_, B> {
    /// Checks the program's shape against `ctx` and the backend's buffer lengths: operand
    /// indices, bases (every output prime present in each buffer operand), buffer sizes,
    /// scalar counts and ranges, stream indices, Galois elements and depth.
    pub fn validate(&self, backend: &B) -> Result<()> {
        let ctx = backend.context();
        let moduli = ctx.moduli_of(self.basis)?;
        if self.operands.len() > MAX_OPERANDS {
            return Err(Error::CountTooLarge {
                what: "fused operands",
                found: self.operands.len() as u64,
                limit: MAX_OPERANDS as u64,
            });
        }
        for op in &self.operands {
            match op {
                Operand::Buffer { buf, basis, format, limb_offset, .. } => {
                    crate::ring::positions_in(basis, self.basis)?;
                    let want = buffer_words(ctx, basis, *format)?;
                    let found = backend.len(buf);
                    // Words may be a view of one polynomial in a buffer of several of its size
                    // (one after another): the view starts at a polynomial and lies inside.
                    // Packed operands are whole buffers.
                    let fits = match format {
                        Format::Words => {
                            let start = limb_offset.checked_mul(ctx.n());
                            want > 0
                                && found.is_multiple_of(want)
                                && start.is_some_and(|s| s.is_multiple_of(want) && s + want <= found)
                        }
                        Format::Packed => *limb_offset == 0 && found == want,
                    } || (want == 0 && found == 0 && *limb_offset == 0);
                    if !fits {
                        return Err(Error::DimensionMismatch { what: "fused operand", expected: want, found });
                    }
                }
                Operand::Uniform { purpose, index, .. } => {
                    stream_id(*purpose, *index, 0)?;
                }
                Operand::Scalar(s) => {
                    if s.len() != moduli.len() {
                        return Err(Error::DimensionMismatch {
                            what: "fused scalars",
                            expected: moduli.len(),
                            found: s.len(),
                        });
                    }
                    if let Some(limb) = s.iter().zip(&moduli).position(|(&w, m)| w >= m.value()) {
                        return Err(Error::ResidueOutOfRange { limb, index: 0 });
                    }
                }
            }
        }
        for (e, _) in &self.outputs {
            if e.depth() > MAX_DEPTH {
                return Err(Error::CountTooLarge {
                    what: "fused expression depth",
                    found: e.depth() as u64,
                    limit: MAX_DEPTH as u64,
                });
            }
            let mut bad = None;
            e.visit(&mut |node| match node {
                Expr::Load(i) if *i >= self.operands.len() => {
                    bad = Some(Error::InvalidField {
                        field: "fused expression",
                        reason: "loads an operand that does not exist",
                    })
                }
                Expr::Galois { g, .. } if g % 2 == 0 || *g >= 2 * ctx.n() => {
                    bad = Some(Error::InvalidField { field: "fused expression", reason: "bad Galois element" });
                }
                _ => {}
            });
            if let Some(err) = bad {
                return Err(err);
            }
        }
        Ok(())
    }

    /// The program's traffic over `n`-residue limbs: each buffer operand an expression loads is
    /// read once (its limbs of the output basis), each uniform operand regenerated once per
    /// residue, each Galois permutation read once; outputs written once.
    pub fn traffic(&self, ctx: &RingContext) -> Result<ProgramTraffic> {
        let n = ctx.n() as u64;
        let limbs = self.basis.len() as u64;
        let mut used = vec![false; self.operands.len()];
        let mut galois = Vec::new();
        let mut t = ProgramTraffic::default();
        for (e, format) in &self.outputs {
            e.visit(&mut |node| match node {
                Expr::Load(i) => {
                    if let Some(u) = used.get_mut(*i) {
                        *u = true;
                    }
                }
                Expr::Galois { g, .. } if !galois.contains(g) => galois.push(*g),
                _ => {}
            });
            t.modmuls += e.mul_count() * limbs * n;
            t.bytes_written += 4 * buffer_words(ctx, self.basis, *format)? as u64;
            if *format == Format::Packed {
                t.packed_residues += limbs * n;
            }
        }
        let packed = 4 * buffer_words(ctx, self.basis, Format::Packed)? as u64;
        for (op, _) in self.operands.iter().zip(&used).filter(|(_, &u)| u) {
            match op {
                Operand::Buffer { format, traffic, .. } => {
                    let bytes = match format {
                        Format::Words => 4 * limbs * n,
                        Format::Packed => {
                            t.unpacked_residues += limbs * n;
                            packed
                        }
                    };
                    match traffic {
                        Traffic::Ciphertext => t.ciphertext_bytes += bytes,
                        Traffic::Key => t.key_bytes += bytes,
                        Traffic::Plaintext => t.plaintext_bytes += bytes,
                    }
                }
                Operand::Uniform { .. } => {
                    t.prng_words += limbs * n;
                }
                Operand::Scalar(_) => {}
            }
        }
        t.table_bytes = 4 * n * galois.len() as u64;
        Ok(t)
    }
}

mod cpu_eval;
pub(crate) use cpu_eval::evaluate_cpu;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trip_at_every_offset() {
        for bits in [17u32, 20, 29, 30, 31] {
            let n = 64;
            let vals: Vec<u32> = (0..n as u32).map(|j| (j.wrapping_mul(2_654_435_761)) & ((1 << bits) - 1)).collect();
            let mut out = vec![0u32; (n * bits as usize).div_ceil(32)];
            pack_limb(&vals, bits, &mut out);
            for (j, &v) in vals.iter().enumerate() {
                assert_eq!(unpack_residue(&out, bits, j).unwrap(), v, "bits {bits} j {j}");
            }
            let mut back = vec![0u32; vals.len()];
            unpack_limb(&out, bits, &mut back).unwrap();
            assert_eq!(back, vals, "bits {bits}");
            assert!(unpack_limb(&out[..out.len() - 1], bits, &mut back).is_err());
        }
    }
}
