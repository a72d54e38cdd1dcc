//! Divide-and-round in the evaluation domain: `out = x D^{-1} + corr`, with `corr` computed from
//! the dropped limbs alone ([`crate::math::rounding`]).
//!
//! Dropping `S` primes of polynomials over `l + 1` primes inverse-transforms only their `S`
//! dropped limbs, computes each correction over the `l + 1 - S` kept primes in the coefficient
//! domain ([`Backend::scale_down_correction`]), transforms it, and forms `x D^{-1} + corr` (plus
//! an optional addend) for every polynomial in one fused program: `l + 1` limb-NTTs per
//! polynomial whatever `S` is, instead of an inverse and a forward transform of every remaining
//! limb per dropped prime. The words are those of the coefficient-domain algorithm, every step
//! being an exact modular map.

use crate::backend::fused::{Expr, Format, Operand, Program, Traffic};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::rounding::Rounding;
use crate::poly::{Eval, RnsPoly};

/// A polynomial added to a divided result inside the same pass, optionally under the
/// automorphism `X -> X^g` (a rotation adds `c_0(X^g)` to the switched `c_1(X^g)`).
#[derive(Debug)]
pub struct Addend<'a, B: Backend> {
    /// The polynomial (Eval, over a basis containing the kept primes).
    pub poly: &'a RnsPoly<B, Eval>,
    /// The Galois element applied to it first, if any.
    pub galois: Option<usize>,
}

impl<'a, B: Backend> Addend<'a, B> {
    /// `poly` itself.
    #[must_use]
    pub fn plain(poly: &'a RnsPoly<B, Eval>) -> Self {
        Self { poly, galois: None }
    }
}

/// What the last pass of a divide-and-round adds to each of its outputs, and how it stores
/// them: `Expr::Load(i)` in an expression loads `operands[i]` (any fused operand: stored,
/// bit-packed, a regenerated stream, a per-limb constant), so an element-wise computation that
/// would follow (adding a tensor product's `c_0` and `c_1`, a rotated `b` half, packing the
/// result) runs in the same dispatch.
#[derive(Debug)]
pub struct Epilogue<'a, B: Backend> {
    /// The operands the expressions load.
    pub operands: Vec<Operand<'a, B>>,
    /// Per output: the expression added to it, if any, and the output's format.
    pub outputs: Vec<(Option<Expr>, Format)>,
}

impl<'a, B: Backend> Epilogue<'a, B> {
    /// `count` outputs stored as words, nothing added.
    #[must_use]
    pub fn none(count: usize) -> Self {
        Self { operands: Vec::new(), outputs: (0..count).map(|_| (None, Format::Words)).collect() }
    }

    /// Words outputs with the given addends.
    #[must_use]
    pub fn addends(addends: impl IntoIterator<Item = Option<Addend<'a, B>>>) -> Self {
        let mut operands = Vec::new();
        let mut outputs = Vec::new();
        for a in addends {
            let expr = a.map(|a| {
                operands.push(Operand::words(a.poly.buffer(), a.poly.basis()));
                let load = Expr::load(operands.len() - 1);
                match a.galois {
                    Some(g) => Expr::galois(g, load),
                    None => load,
                }
            });
            outputs.push((expr, Format::Words));
        }
        Self { operands, outputs }
    }
}

/// `e` with every `Load(i)` turned into `Load(i + by)`.
fn shift(e: &Expr, by: usize) -> Expr {
    let b = |x: &Expr| Box::new(shift(x, by));
    match e {
        Expr::Load(i) => Expr::Load(i + by),
        Expr::Add(x, y) => Expr::Add(b(x), b(y)),
        Expr::Sub(x, y) => Expr::Sub(b(x), b(y)),
        Expr::Mul(x, y) => Expr::Mul(b(x), b(y)),
        Expr::Neg(x) => Expr::Neg(b(x)),
        Expr::Sum(terms) => Expr::Sum(terms.iter().map(|t| shift(t, by)).collect()),
        Expr::Galois { g, expr } => Expr::Galois { g: *g, expr: b(expr) },
    }
}

/// One polynomial to finish: `x` (Eval, over `basis`, which contains the kept primes) and its
/// correction, polynomial `index` of buffer `buffer` of the [`Corrections`].
pub(crate) struct Finish<'a, B: Backend> {
    pub(crate) x: &'a B::Buffer,
    pub(crate) basis: &'a [usize],
    pub(crate) buffer: usize,
    pub(crate) index: usize,
}

/// Corrections (Coeff, over the kept primes, one polynomial after another, as
/// [`Backend::scale_down_correction`] returns them): transformed here, in one call per buffer.
pub(crate) type Corrections<B> = Vec<<B as Backend>::Buffer>;

/// Transforms every correction over `keep` (one transform call per buffer of `corrections`,
/// whatever its number of polynomials) and returns `x D^{-1} + corr` plus the epilogue's
/// addend for each polynomial, stored as the epilogue says, `D` the product of `drop`: all
/// outputs of one fused program.
pub(crate) fn finish<'a, B: Backend>(
    backend: &B,
    keep: &'a [usize],
    drop: &[usize],
    polys: Vec<Finish<'a, B>>,
    mut corrections: Corrections<B>,
    epilogue: Epilogue<'a, B>,
) -> Result<Vec<B::Buffer>> {
    let ctx = backend.context();
    if epilogue.outputs.len() != polys.len() {
        return Err(Error::DimensionMismatch {
            what: "epilogue outputs",
            expected: polys.len(),
            found: epilogue.outputs.len(),
        });
    }
    // D^{-1} mod k_i does not depend on the rounding or on t.
    let d_inv = ctx.rounding_correction(keep, drop, None, Rounding::Joint)?.d_inv().to_vec();
    let words = keep.len() * ctx.n();
    for c in &mut corrections {
        let count = backend.len(c).checked_div(words).unwrap_or_default();
        let repeated: Vec<usize> = (0..count).flat_map(|_| keep.iter().copied()).collect();
        backend.ntt_forward(c, &repeated)?;
    }
    let mut operands = vec![Operand::Scalar(d_inv)];
    operands.extend(epilogue.operands);
    let mut outputs = Vec::with_capacity(polys.len());
    for (p, (addend, format)) in polys.iter().zip(epilogue.outputs) {
        let x = operands.len();
        let buf = corrections.get(p.buffer).ok_or(Error::DimensionMismatch {
            what: "corrections",
            expected: polys.len(),
            found: corrections.len(),
        })?;
        operands.push(Operand::words(p.x, p.basis));
        operands.push(Operand::Buffer {
            buf,
            basis: keep,
            format: Format::Words,
            traffic: Traffic::Ciphertext,
            limb_offset: p.index * keep.len(),
        });
        let mut terms = vec![Expr::mul(Expr::load(x), Expr::load(0)), Expr::load(x + 1)];
        terms.extend(addend.map(|e| shift(&e, 1)));
        outputs.push((Expr::Sum(terms), format));
    }
    backend.fused(&Program { basis: keep, operands, outputs })
}

/// Drops the last `count` primes of every polynomial of `polys` (Eval, one basis), one exact
/// rounding per prime, the last prime first, keeping the plaintext mod `t` with `t`
/// ([`Rounding::PrimeByPrime`]): the words of `count` successive one-prime divide-and-rounds
/// in the coefficient domain, for `l + 1` limb-NTTs per polynomial.
pub fn drop_primes<B: Backend>(
    backend: &B,
    polys: &[RnsPoly<B, Eval>],
    count: usize,
    t: Option<u32>,
) -> Result<Vec<RnsPoly<B, Eval>>> {
    let basis = match polys.first() {
        Some(p) => p.basis().clone(),
        None => return Ok(Vec::new()),
    };
    let len = basis.len();
    if count == 0 || count >= len {
        return Err(Error::DepthExhausted { level: len.saturating_sub(1), wanted: count });
    }
    if let Some(p) = polys.iter().find(|p| p.basis() != &basis) {
        return Err(Error::DimensionMismatch { what: "polynomial bases differ", expected: len, found: p.limb_count() });
    }
    let (keep, drop) = basis.split_at(len - count);
    let positions: Vec<usize> = (len - count..len).collect();
    let mut finishes = Vec::with_capacity(polys.len());
    let mut corrections = Vec::with_capacity(polys.len());
    for (buffer, p) in polys.iter().enumerate() {
        let mut dropped = backend.gather_limbs(p.buffer(), &positions)?;
        backend.ntt_inverse(&mut dropped, drop)?;
        corrections.push(backend.scale_down_correction(&dropped, keep, drop, t, Rounding::PrimeByPrime)?);
        finishes.push(Finish { x: p.buffer(), basis: &basis, buffer, index: 0 });
    }
    let out = finish(backend, keep, drop, finishes, corrections, Epilogue::none(polys.len()))?;
    let keep: crate::ring::Basis = keep.into();
    out.into_iter().map(|buf| RnsPoly::from_buffer(backend, buf, keep.clone())).collect()
}
