//! The BXT evaluator: BGV operations on compressed ciphertexts, one fused program per kernel.
//!
//! Each operation computes exactly what the plain BGV operation computes (the same residues,
//! correction factor and noise estimate), so every variant materialises to the baseline's bytes.
//! Cases a fused path does not cover (operands at different levels or with different correction
//! factors, an HMULT that first needs a modulus switch) materialise the operands, run the plain
//! BGV operation and compress the result; they are correct, not fast.

use std::sync::Arc;

use super::{BxtCiphertext, Factor, Half, Meta, PackedPoly, ProgramBuilder, Repr, Term, Variant};
use crate::backend::fused::{Expr, Format, Program, Traffic};
use crate::backend::Backend;
use crate::bgv::noise::log2_add;
use crate::bgv::{Bgv, Ciphertext, EvaluationKeys, Plaintext, PreparedPlaintext};
use crate::error::{Error, Result};
use crate::poly::{Eval, RnsPoly};
use crate::ring::Basis;
use crate::rlwe::{self, CiphertextCore, Epilogue, SecretKey};

/// Most buffers a lazy half may reference before it is materialised. It bounds the bindings of
/// the kernel that eventually generates it: an HMULT's last kernel reads two `b` halves, two
/// lazy `a` halves and one key-switching output for one output, `2 + 2 * 4 + 1 = 11` buffers,
/// within the 16 storage bindings most adapters give.
pub const MAX_LAZY_BUFFERS: usize = 4;

/// Most terms a lazy half may have before it is materialised (bounds the size of the kernels
/// that generate it; a longer sum is generated in chunks of this many terms).
pub const MAX_LAZY_TERMS: usize = 16;

/// Most ciphertext inputs one fused weighted-sum kernel reads (fewer if the backend binds
/// fewer buffers); longer sums run in chunks that accumulate into a partial sum.
pub const MAX_SUM_INPUTS: usize = 16;

/// A weight of [`Bxt::weighted_sum`].
#[derive(Debug, Clone, Copy)]
pub enum Weight<'p> {
    /// An integer, the same in every slot (read from the kernel's parameters, no memory
    /// traffic): the weights of a dense or convolution layer over one-ciphertext-per-pixel data.
    Int(i64),
    /// A plaintext (its limbs are read from memory).
    Plain(&'p Plaintext),
}

/// BGV evaluation under one [`Variant`].
#[derive(Debug, Clone, Copy)]
pub struct Bxt<'a, B: Backend> {
    bgv: &'a Bgv<B>,
    variant: Variant,
}

impl<'a, B: Backend> Bxt<'a, B> {
    /// An evaluator applying `variant` over `bgv`.
    #[must_use]
    pub fn new(bgv: &'a Bgv<B>, variant: Variant) -> Self {
        Self { bgv, variant }
    }

    /// The variant.
    #[must_use]
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The BGV instance.
    #[must_use]
    pub fn bgv(&self) -> &'a Bgv<B> {
        self.bgv
    }

    fn be(&self) -> &'a B {
        self.bgv.backend()
    }

    fn t(&self) -> u32 {
        self.bgv.plaintext_modulus()
    }

    fn basis(&self, level: usize) -> Result<Basis> {
        self.be().context().q_basis(level)
    }

    /// Runs `outputs` over `builder`'s operands: one dispatch.
    fn run(&self, builder: ProgramBuilder<'_, B>, outputs: Vec<(Expr, Format)>) -> Result<Vec<B::Buffer>> {
        let program = Program { basis: builder.basis(), operands: builder.operands, outputs };
        self.be().fused(&program)
    }

    fn wrap(&self, buf: B::Buffer, basis: &Basis, format: Format) -> Result<Half<B>> {
        Ok(match format {
            Format::Words => Half::Stored(Arc::new(RnsPoly::from_buffer(self.be(), buf, basis.clone())?)),
            Format::Packed => Half::Packed(Arc::new(PackedPoly::from_buffer(self.be(), buf, basis.clone())?)),
        })
    }

    fn builder<'b>(&self, basis: &'b Basis) -> Result<ProgramBuilder<'b, B>> {
        ProgramBuilder::new(self.be(), basis)
    }

    /// Two outputs of one run, in order.
    fn two(bufs: Vec<B::Buffer>) -> Result<(B::Buffer, B::Buffer)> {
        let mut it = bufs.into_iter();
        match (it.next(), it.next()) {
            (Some(x), Some(y)) => Ok((x, y)),
            _ => Err(Error::Backend { backend: "fused", reason: "a fused program returned too few outputs".into() }),
        }
    }

    fn one(bufs: Vec<B::Buffer>) -> Result<B::Buffer> {
        bufs.into_iter()
            .next()
            .ok_or(Error::Backend { backend: "fused", reason: "a fused program returned no output".into() })
    }

    // ---- conversions ---------------------------------------------------------------------------

    /// Symmetric encryption at the top level; the `a` half stays a seed unless the variant is
    /// the baseline.
    pub fn encrypt(&self, sk: &SecretKey<B>, pt: &Plaintext) -> Result<BxtCiphertext<B>> {
        self.compress(self.bgv.encrypt_symmetric(sk, pt)?)
    }

    /// Brings a degree-1 BGV ciphertext into this variant's form: a fresh symmetric ciphertext's
    /// `a` half becomes its seed (`c` and above) and stored limbs are packed (`cs` and above).
    pub fn compress(&self, ct: Ciphertext<B>) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return Ok(BxtCiphertext { repr: Repr::Plain(ct) });
        }
        let meta = Meta {
            level: ct.level(),
            correction: ct.correction_factor(),
            noise_log2: ct.noise_estimate(),
            param_id: ct.param_id(),
        };
        let seed = ct.core.seed().copied();
        let degree = ct.degree();
        let Ok([b, a]) = <[RnsPoly<B, Eval>; 2]>::try_from(ct.core.into_polys()) else {
            return Err(Error::CiphertextDegree { degree, expected: 1 });
        };
        let basis = b.basis().clone();
        let seeded = seed.filter(|_| self.variant.seeds());
        let (b, a) = if self.variant.packs() {
            let mut pb = self.builder(&basis)?;
            let eb = pb.poly(&b, Traffic::Ciphertext);
            let mut outputs = vec![(eb, Format::Packed)];
            if seeded.is_none() {
                let ea = pb.poly(&a, Traffic::Ciphertext);
                outputs.push((ea, Format::Packed));
            }
            let mut bufs = self.run(pb, outputs)?.into_iter();
            let pb_buf = bufs.next().ok_or(Error::Backend { backend: "fused", reason: "no output".into() })?;
            let b = self.wrap(pb_buf, &basis, Format::Packed)?;
            let a = match (seeded, bufs.next()) {
                (Some(s), _) => Half::Seeded(s),
                (None, Some(buf)) => self.wrap(buf, &basis, Format::Packed)?,
                (None, None) => return Err(Error::Backend { backend: "fused", reason: "no output".into() }),
            };
            (b, a)
        } else {
            let a = match seeded {
                Some(s) => Half::Seeded(s),
                None => Half::Stored(Arc::new(a)),
            };
            (Half::Stored(Arc::new(b)), a)
        };
        Ok(BxtCiphertext { repr: Repr::Halves { b, a, meta } })
    }

    /// The plain BGV ciphertext (both halves as `u32` limbs, one dispatch); a still-seeded `a`
    /// half keeps its seed for the wire.
    pub fn materialize(&self, ct: &BxtCiphertext<B>) -> Result<Ciphertext<B>> {
        match &ct.repr {
            Repr::Plain(c) => c.duplicate(self.be()),
            Repr::Halves { b, a, meta } => {
                let basis = self.basis(meta.level)?;
                let mut pb = self.builder(&basis)?;
                let eb = pb.half(b)?;
                let ea = pb.half(a)?;
                let (bb, ab) = Self::two(self.run(pb, vec![(eb, Format::Words), (ea, Format::Words)])?)?;
                let seed = match a {
                    Half::Seeded(s) => Some(*s),
                    _ => None,
                };
                let polys = vec![
                    RnsPoly::from_buffer(self.be(), bb, basis.clone())?,
                    RnsPoly::from_buffer(self.be(), ab, basis)?,
                ];
                Ok(Ciphertext {
                    core: CiphertextCore::from_parts(polys, seed, meta.param_id)?,
                    correction: meta.correction,
                    noise_log2: meta.noise_log2,
                })
            }
        }
    }

    /// Decrypts (materialising first).
    pub fn decrypt(&self, sk: &SecretKey<B>, ct: &BxtCiphertext<B>) -> Result<Plaintext> {
        match &ct.repr {
            Repr::Plain(c) => self.bgv.decrypt(sk, c),
            Repr::Halves { .. } => self.bgv.decrypt(sk, &self.materialize(ct)?),
        }
    }

    /// Evaluation keys in this variant's form: `cso+k` keeps only the seeds of the `a` parts
    /// and bit-packs the `b` parts ([`EvaluationKeys::into_packed`]; key switching unpacks them
    /// inside its inner product, with the same words).
    pub fn prepare_keys(&self, keys: EvaluationKeys<B>) -> Result<EvaluationKeys<B>> {
        if self.variant.seeded_keys() {
            keys.into_seeded().into_packed(self.bgv.backend())
        } else {
            Ok(keys)
        }
    }

    fn halves<'c>(&self, ct: &'c BxtCiphertext<B>) -> Result<(&'c Half<B>, &'c Half<B>, Meta)> {
        match &ct.repr {
            Repr::Halves { b, a, meta } => {
                if meta.param_id != self.bgv.params().id() {
                    return Err(Error::ParameterMismatch { expected: self.bgv.params().id(), found: meta.param_id });
                }
                Ok((b, a, *meta))
            }
            Repr::Plain(_) => Err(Error::InvalidField {
                field: "ciphertext",
                reason: "a baseline ciphertext given to a BXT evaluator",
            }),
        }
    }

    fn plain<'c>(&self, ct: &'c BxtCiphertext<B>) -> Result<&'c Ciphertext<B>> {
        match &ct.repr {
            Repr::Plain(c) => Ok(c),
            Repr::Halves { .. } => Err(Error::InvalidField {
                field: "ciphertext",
                reason: "a compressed ciphertext given to the baseline",
            }),
        }
    }

    /// The plain operation on materialised operands, compressed again (the uncovered cases).
    fn fallback(
        &self,
        inputs: &[&BxtCiphertext<B>],
        op: impl FnOnce(&[Ciphertext<B>]) -> Result<Ciphertext<B>>,
    ) -> Result<BxtCiphertext<B>> {
        let plain = inputs.iter().map(|c| self.materialize(c)).collect::<Result<Vec<_>>>()?;
        self.compress(op(&plain)?)
    }

    /// Materialises a lazy `a` half that references too many buffers.
    fn bound_lazy(&self, a: Half<B>, basis: &Basis) -> Result<Half<B>> {
        let Half::Lazy(terms) = &a else { return Ok(a) };
        if a.buffer_count() <= MAX_LAZY_BUFFERS && terms.len() <= MAX_LAZY_TERMS {
            return Ok(a);
        }
        let format = self.variant.format();
        self.wrap(self.generate_terms(terms, basis, format)?, basis, format)
    }

    /// The sum of `terms` in `format`, generated in chunks of at most [`MAX_LAZY_TERMS`] terms
    /// and [`MAX_LAZY_BUFFERS`] buffers, each chunk adding the previous partial sum (plain
    /// words) to its own.
    fn generate_terms(&self, terms: &[Term<B>], basis: &Basis, format: Format) -> Result<B::Buffer> {
        let mut chunks: Vec<Vec<Term<B>>> = Vec::new();
        let mut cur: Vec<Term<B>> = Vec::new();
        for t in terms {
            let mut probe = cur.clone();
            probe.push(t.clone());
            if !cur.is_empty() && (probe.len() > MAX_LAZY_TERMS || Half::Lazy(probe).buffer_count() > MAX_LAZY_BUFFERS)
            {
                chunks.push(std::mem::take(&mut cur));
            }
            cur.push(t.clone());
        }
        if !cur.is_empty() {
            chunks.push(cur);
        }
        let last = chunks.len().saturating_sub(1);
        let mut partial: Option<RnsPoly<B, Eval>> = None;
        for (i, chunk) in chunks.into_iter().enumerate() {
            let half = Half::Lazy(chunk);
            let mut pb = self.builder(basis)?;
            let mut e = pb.half(&half)?;
            if let Some(p) = &partial {
                e = Expr::add(pb.poly(p, Traffic::Ciphertext), e);
            }
            let out_format = if i == last { format } else { Format::Words };
            let buf = Self::one(self.run(pb, vec![(e, out_format)])?)?;
            if i == last {
                return Ok(buf);
            }
            partial = Some(RnsPoly::from_buffer(self.be(), buf, basis.clone())?);
        }
        Err(Error::InvalidField { field: "lazy half", reason: "no terms" })
    }

    // ---- linear operations -------------------------------------------------------------------

    /// `x + y` (HADD). `c`/`cs`: one kernel writing both halves (seeded halves regenerated);
    /// `cso`: one kernel for `b`, the `a` half stays lazy.
    pub fn add(&self, x: &BxtCiphertext<B>, y: &BxtCiphertext<B>) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.bgv.add(self.plain(x)?, self.plain(y)?)?);
        }
        let (xb, xa, xm) = self.halves(x)?;
        let (yb, ya, ym) = self.halves(y)?;
        if xm.level != ym.level || xm.correction != ym.correction {
            return self.fallback(&[x, y], |p| match p {
                [a, b] => self.bgv.add(a, b),
                _ => Err(Error::CiphertextDegree { degree: 0, expected: 1 }),
            });
        }
        let noise = log2_add(xm.noise_log2, ym.noise_log2);
        self.bgv.check_noise(noise, xm.level)?;
        let meta = Meta { noise_log2: noise, ..xm };
        let basis = self.basis(xm.level)?;
        let format = self.variant.format();
        let mut pb = self.builder(&basis)?;
        let eb = Expr::add(pb.half(xb)?, pb.half(yb)?);
        let (b, a) = if self.variant.fuses() {
            let b = self.wrap(Self::one(self.run(pb, vec![(eb, format)])?)?, &basis, format)?;
            let mut terms = xa.terms();
            terms.extend(ya.terms());
            (b, self.bound_lazy(Half::Lazy(terms), &basis)?)
        } else {
            let ea = Expr::add(pb.half(xa)?, pb.half(ya)?);
            let (bb, ab) = Self::two(self.run(pb, vec![(eb, format), (ea, format)])?)?;
            (self.wrap(bb, &basis, format)?, self.wrap(ab, &basis, format)?)
        };
        Ok(BxtCiphertext { repr: Repr::Halves { b, a, meta } })
    }

    /// `ct + pt` (PADD): one kernel on `b`; `a` is untouched (a seed stays a seed).
    pub fn add_plain(&self, ct: &BxtCiphertext<B>, pt: &Plaintext) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.bgv.add_plain(self.plain(ct)?, pt)?);
        }
        let (_, _, meta) = self.halves(ct)?;
        let m = self.bgv.lift(pt, meta.correction, meta.level)?;
        self.add_lifted(ct, &m, self.bgv.plain_norm_log2(pt, meta.correction))
    }

    /// `ct + pt` (PADD) with a prepared plaintext, as [`Bxt::add_plain`] (the same words):
    /// `pp` must have been prepared at the ciphertext's level with its correction factor (see
    /// [`Bgv::add_plain_prepared`] for the errors).
    ///
    /// ```
    /// use wgfhe::bgv::Bgv;
    /// use wgfhe::compress::{Bxt, Variant};
    /// use wgfhe::params::{self, TestRing};
    ///
    /// let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)?;
    /// let bgv = Bgv::cpu(&p)?;
    /// let sk = bgv.gen_secret_key_from_seed(&[6; 32])?;
    /// let bxt = Bxt::new(&bgv, Variant::Cso);
    /// let ct = bxt.encrypt(&sk, &bgv.encoder().encode(&[40])?)?;
    /// let top = bgv.max_level();
    /// let bias = bgv.prepare_plain_with_factor(&bgv.encoder().encode(&[2])?, top, bgv.level_correction(top)?)?;
    /// let sum = bxt.add_plain_prepared(&ct, &bias)?;
    /// assert_eq!(bgv.encoder().decode(&bxt.decrypt(&sk, &sum)?)?[0], 42);
    /// # Ok::<(), wgfhe::Error>(())
    /// ```
    pub fn add_plain_prepared(&self, ct: &BxtCiphertext<B>, pp: &PreparedPlaintext<B>) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.bgv.add_plain_prepared(self.plain(ct)?, pp)?);
        }
        let (_, _, meta) = self.halves(ct)?;
        self.bgv.check_prepared_at(pp, meta.level)?;
        Bgv::check_add_factor(pp, meta.correction)?;
        self.add_lifted(ct, &pp.poly, pp.norm_log2)
    }

    /// `ct + m` for the lifted plaintext `m = corr * pt` of canonical norm `2^norm_log2`: one
    /// kernel on `b`; `a` is untouched.
    fn add_lifted(&self, ct: &BxtCiphertext<B>, m: &RnsPoly<B, Eval>, norm_log2: f64) -> Result<BxtCiphertext<B>> {
        let (b, a, meta) = self.halves(ct)?;
        let noise = log2_add(meta.noise_log2, norm_log2);
        self.bgv.check_noise(noise, meta.level)?;
        let basis = self.basis(meta.level)?;
        let format = self.variant.format();
        let mut pb = self.builder(&basis)?;
        let e = Expr::add(pb.half(b)?, pb.poly(m, Traffic::Plaintext));
        let b = self.wrap(Self::one(self.run(pb, vec![(e, format)])?)?, &basis, format)?;
        Ok(BxtCiphertext { repr: Repr::Halves { b, a: a.clone(), meta: Meta { noise_log2: noise, ..meta } } })
    }

    /// `ct * pt` (PMULT). `c`/`cs`: one kernel writing both halves; `cso`: one kernel for `b`,
    /// the `a` half becomes lazy `pt * a`.
    pub fn mul_plain(&self, ct: &BxtCiphertext<B>, pt: &Plaintext) -> Result<BxtCiphertext<B>> {
        self.scale_by(ct, Weight::Plain(pt))
    }

    /// `k * ct` for an integer `k` (the same in every slot).
    pub fn mul_int(&self, ct: &BxtCiphertext<B>, k: i64) -> Result<BxtCiphertext<B>> {
        self.scale_by(ct, Weight::Int(k))
    }

    /// The noise of `w * ct` and the weight's factor (lifted with correction 1, as PMULT does).
    fn weight_factor(&self, w: Weight<'_>, level: usize, noise: f64) -> Result<(Factor<B>, f64)> {
        let model = self.bgv.noise_model();
        Ok(match w {
            Weight::Int(k) => (Factor::Int(k), model.mul_plain(noise, (k.unsigned_abs() as f64).max(1.0).log2())),
            Weight::Plain(pt) => (
                Factor::Plain(Arc::new(self.bgv.lift(pt, 1, level)?)),
                model.mul_plain(noise, self.bgv.plain_norm_log2(pt, 1)),
            ),
        })
    }

    fn baseline_scale(&self, ct: &Ciphertext<B>, w: Weight<'_>) -> Result<Ciphertext<B>> {
        match w {
            Weight::Plain(pt) => self.bgv.mul_plain(ct, pt),
            Weight::Int(k) => self.bgv.mul_int(ct, k),
        }
    }

    fn scale_by(&self, ct: &BxtCiphertext<B>, w: Weight<'_>) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.baseline_scale(self.plain(ct)?, w)?);
        }
        let (_, _, meta) = self.halves(ct)?;
        let (factor, noise) = self.weight_factor(w, meta.level, meta.noise_log2)?;
        self.scale_with(ct, &factor, noise, meta.correction)
    }

    /// `ct * pt` (PMULT) with a prepared plaintext, as [`Bxt::mul_plain`] (factor 1) or the
    /// product [`Bgv::mul_plain_prepared`] describes: the same words, no lifting at the call.
    /// Errors: those of [`Bgv::mul_plain_prepared`].
    ///
    /// ```
    /// use wgfhe::bgv::Bgv;
    /// use wgfhe::compress::{Bxt, Variant};
    /// use wgfhe::params::{self, TestRing};
    ///
    /// let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)?;
    /// let bgv = Bgv::cpu(&p)?;
    /// let sk = bgv.gen_secret_key_from_seed(&[4; 32])?;
    /// let bxt = Bxt::new(&bgv, Variant::Cs);
    /// let w = bgv.prepare_plain(&bgv.encoder().encode(&[7])?, bgv.max_level())?;
    /// let ct = bxt.encrypt(&sk, &bgv.encoder().encode(&[6])?)?;
    /// assert_eq!(bgv.encoder().decode(&bxt.decrypt(&sk, &bxt.mul_plain_prepared(&ct, &w)?)?)?[0], 42);
    /// # Ok::<(), wgfhe::Error>(())
    /// ```
    pub fn mul_plain_prepared(&self, ct: &BxtCiphertext<B>, pp: &PreparedPlaintext<B>) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.bgv.mul_plain_prepared(self.plain(ct)?, pp)?);
        }
        let (_, _, meta) = self.halves(ct)?;
        self.bgv.check_prepared_at(pp, meta.level)?;
        let noise = self.bgv.noise_model().mul_plain(meta.noise_log2, pp.norm_log2);
        let correction = u32::try_from(u64::from(meta.correction) * u64::from(pp.factor()) % u64::from(self.t()))
            .map_err(|_| Error::SizeOverflow { what: "correction factor" })?;
        self.scale_with(ct, &Factor::Plain(Arc::clone(&pp.poly)), noise, correction)
    }

    /// `factor * ct` with the result's noise estimate and correction factor given.
    fn scale_with(
        &self,
        ct: &BxtCiphertext<B>,
        factor: &Factor<B>,
        noise: f64,
        correction: u32,
    ) -> Result<BxtCiphertext<B>> {
        let (b, a, meta) = self.halves(ct)?;
        self.bgv.check_noise(noise, meta.level)?;
        let meta = Meta { noise_log2: noise, correction, ..meta };
        let basis = self.basis(meta.level)?;
        let format = self.variant.format();
        let mut pb = self.builder(&basis)?;
        let ew = factor_expr(&mut pb, factor);
        let eb = Expr::mul(ew.clone(), pb.half(b)?);
        let (b, a) = if self.variant.fuses() {
            let b = self.wrap(Self::one(self.run(pb, vec![(eb, format)])?)?, &basis, format)?;
            (b, self.bound_lazy(Half::Lazy(scaled_terms(a, factor)), &basis)?)
        } else {
            let ea = Expr::mul(ew, pb.half(a)?);
            let (bb, ab) = Self::two(self.run(pb, vec![(eb, format), (ea, format)])?)?;
            (self.wrap(bb, &basis, format)?, self.wrap(ab, &basis, format)?)
        };
        Ok(BxtCiphertext { repr: Repr::Halves { b, a, meta } })
    }

    /// `sum_i w_i * x_i (+ bias)`: a dense or convolution layer. `cso` runs it as one kernel
    /// writing only `b` (the `a` half stays lazy); the other variants run the chain of PMULT and
    /// HADD (and a PADD for the bias) kernels.
    pub fn weighted_sum(
        &self,
        terms: &[(Weight<'_>, &BxtCiphertext<B>)],
        bias: Option<&Plaintext>,
    ) -> Result<BxtCiphertext<B>> {
        self.weighted_sum_with(terms, bias.map(BiasRef::Plain))
    }

    /// [`Bxt::weighted_sum`] with a prepared bias: the same words as with the plaintext, without
    /// lifting it at every call. `bias` must have been prepared at the terms' level with their
    /// correction factor (fresh encryptions at the top level: [`Bgv::level_correction`] of it);
    /// [`Error::LevelMismatch`] or [`Error::CorrectionMismatch`] otherwise.
    ///
    /// ```
    /// use wgfhe::bgv::Bgv;
    /// use wgfhe::compress::{Bxt, Variant, Weight};
    /// use wgfhe::params::{self, TestRing};
    ///
    /// let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)?;
    /// let bgv = Bgv::cpu(&p)?;
    /// let sk = bgv.gen_secret_key_from_seed(&[2; 32])?;
    /// let bxt = Bxt::new(&bgv, Variant::Cso);
    /// let top = bgv.max_level();
    /// let bias = bgv.prepare_plain_with_factor(&bgv.encoder().encode(&[100])?, top, bgv.level_correction(top)?)?;
    /// let x = bxt.encrypt(&sk, &bgv.encoder().encode(&[3])?)?;
    /// let y = bxt.encrypt(&sk, &bgv.encoder().encode(&[5])?)?;
    /// let s = bxt.weighted_sum_prepared(&[(Weight::Int(2), &x), (Weight::Int(-1), &y)], Some(&bias))?;
    /// assert_eq!(bgv.encoder().decode_signed(&bxt.decrypt(&sk, &s)?)?[0], 2 * 3 - 5 + 100);
    /// # Ok::<(), wgfhe::Error>(())
    /// ```
    pub fn weighted_sum_prepared(
        &self,
        terms: &[(Weight<'_>, &BxtCiphertext<B>)],
        bias: Option<&PreparedPlaintext<B>>,
    ) -> Result<BxtCiphertext<B>> {
        self.weighted_sum_with(terms, bias.map(BiasRef::Prepared))
    }

    fn weighted_sum_with(
        &self,
        terms: &[(Weight<'_>, &BxtCiphertext<B>)],
        bias: Option<BiasRef<'_, B>>,
    ) -> Result<BxtCiphertext<B>> {
        let first = terms.first().ok_or(Error::InvalidField { field: "weighted sum", reason: "no terms" })?;
        let fused_ok = self.variant.fuses()
            && terms.iter().all(|(_, c)| match (&c.repr, &first.1.repr) {
                (Repr::Halves { meta: m, .. }, Repr::Halves { meta: m0, .. }) => {
                    m.level == m0.level && m.correction == m0.correction
                }
                _ => false,
            });
        if !fused_ok {
            let mut acc = self.scale_by(first.1, first.0)?;
            for (w, c) in terms.iter().skip(1) {
                acc = self.add(&acc, &self.scale_by(c, *w)?)?;
            }
            return match bias {
                Some(BiasRef::Plain(pt)) => self.add_plain(&acc, pt),
                Some(BiasRef::Prepared(pp)) => self.add_plain_prepared(&acc, pp),
                None => Ok(acc),
            };
        }
        let (_, _, meta0) = self.halves(first.1)?;
        let basis = self.basis(meta0.level)?;
        let mut factors = Vec::with_capacity(terms.len());
        let mut noise: Option<f64> = None;
        for (w, c) in terms {
            let (_, _, m) = self.halves(c)?;
            let (f, n) = self.weight_factor(*w, m.level, m.noise_log2)?;
            self.bgv.check_noise(n, m.level)?;
            noise = Some(noise.map_or(n, |acc| log2_add(acc, n)));
            factors.push(f);
        }
        let mut noise = noise.unwrap_or(meta0.noise_log2);
        let lifted;
        let m = match bias {
            Some(BiasRef::Plain(pt)) => {
                noise = log2_add(noise, self.bgv.plain_norm_log2(pt, meta0.correction));
                lifted = self.bgv.lift(pt, meta0.correction, meta0.level)?;
                Some(&lifted)
            }
            Some(BiasRef::Prepared(pp)) => {
                self.bgv.check_prepared_at(pp, meta0.level)?;
                Bgv::check_add_factor(pp, meta0.correction)?;
                noise = log2_add(noise, pp.norm_log2);
                Some(pp.poly.as_ref())
            }
            None => None,
        };
        self.bgv.check_noise(noise, meta0.level)?;
        let format = self.variant.format();
        let mut lazy = Vec::new();
        for ((_, c), f) in terms.iter().zip(&factors) {
            let (_, a, _) = self.halves(c)?;
            lazy.extend(scaled_terms(a, f));
        }
        // The `b` side: one kernel per chunk of inputs (bias, partial sum and output take the
        // other bindings; plaintext weights take one each).
        let per_input = 1 + usize::from(factors.iter().any(|f| matches!(f, Factor::Plain(_))));
        let chunk = (self.be().max_fused_buffers().saturating_sub(3) / per_input).clamp(1, MAX_SUM_INPUTS);
        let pairs: Vec<_> = terms.iter().zip(&factors).collect();
        let chunks: Vec<_> = pairs.chunks(chunk).collect();
        let last = chunks.len().saturating_sub(1);
        let mut partial: Option<RnsPoly<B, Eval>> = None;
        let mut b_buf = None;
        for (i, part) in chunks.into_iter().enumerate() {
            let mut pb = self.builder(&basis)?;
            let mut sum = Vec::with_capacity(part.len() + 2);
            if let Some(p) = &partial {
                sum.push(pb.poly(p, Traffic::Ciphertext));
            }
            for ((_, c), f) in part {
                let (b, _, _) = self.halves(c)?;
                let ew = factor_expr(&mut pb, f);
                sum.push(Expr::mul(ew, pb.half(b)?));
            }
            if i == last {
                if let Some(m) = m {
                    sum.push(pb.poly(m, Traffic::Plaintext));
                }
            }
            let out_format = if i == last { format } else { Format::Words };
            let buf = Self::one(self.run(pb, vec![(Expr::Sum(sum), out_format)])?)?;
            if i == last {
                b_buf = Some(buf);
            } else {
                partial = Some(RnsPoly::from_buffer(self.be(), buf, basis.clone())?);
            }
        }
        let b_buf = b_buf.ok_or(Error::InvalidField { field: "weighted sum", reason: "no terms" })?;
        let b = self.wrap(b_buf, &basis, format)?;
        let a = self.bound_lazy(Half::Lazy(lazy), &basis)?;
        self.be().flush()?;
        Ok(BxtCiphertext { repr: Repr::Halves { b, a, meta: Meta { noise_log2: noise, ..meta0 } } })
    }

    // ---- multiplication and rotation ----------------------------------------------------------

    /// HMULT with relinearisation, as [`Bgv::mul_relin`]. The tensor kernel regenerates seeded
    /// and lazy `a` halves in registers; `cso` computes only `c_2` there and fuses `c_0`, `c_1`
    /// into the kernel that adds the key-switching result.
    pub fn mul_relin(
        &self,
        x: &BxtCiphertext<B>,
        y: &BxtCiphertext<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.bgv.mul_relin(self.plain(x)?, self.plain(y)?, keys)?);
        }
        let rk = keys.relin.as_ref().ok_or(Error::MissingRelinKey)?;
        let (xb, xa, xm) = self.halves(x)?;
        let (yb, ya, ym) = self.halves(y)?;
        let model = self.bgv.noise_model();
        let needs_switch = model.primes_to_drop(xm.noise_log2, xm.level) > 0
            || model.primes_to_drop(ym.noise_log2, ym.level) > 0
            || xm.level != ym.level;
        if needs_switch {
            return self.fallback(&[x, y], |p| match p {
                [a, b] => self.bgv.mul_relin(a, b, keys),
                _ => Err(Error::CiphertextDegree { degree: 0, expected: 1 }),
            });
        }
        let level = xm.level;
        let noise = model.mul(xm.noise_log2, ym.noise_log2);
        self.bgv.check_noise(noise, level)?;
        let out_noise = log2_add(noise, model.key_switch(level));
        let t = u64::from(self.t());
        let correction = u32::try_from(u64::from(xm.correction) * u64::from(ym.correction) % t)
            .map_err(|_| Error::SizeOverflow { what: "correction factor" })?;
        let basis = self.basis(level)?;
        let format = self.variant.format();
        // Step 1: the tensor product (c2 only under cso).
        let mut pb = self.builder(&basis)?;
        let (eb1, ea1, eb2, ea2) = (pb.half(xb)?, pb.half(xa)?, pb.half(yb)?, pb.half(ya)?);
        let c2 = Expr::mul(ea1.clone(), ea2.clone());
        let e0 = Expr::mul(eb1.clone(), eb2.clone());
        let e1 = Expr::add(Expr::mul(eb1, ea2), Expr::mul(ea1, eb2));
        let fuse = self.variant.fuses();
        let outputs = if fuse {
            vec![(c2, Format::Words)]
        } else {
            vec![(e0.clone(), Format::Words), (e1.clone(), Format::Words), (c2, Format::Words)]
        };
        let mut bufs = self.run(pb, outputs)?;
        let c2 = RnsPoly::from_buffer(
            self.be(),
            bufs.pop().ok_or(Error::Backend { backend: "fused", reason: "no output".into() })?,
            basis.clone(),
        )?;
        // Step 2: key switching of c2 (seeded keys regenerate their `a` parts inside it), whose
        // last pass adds c0 and c1 (recomputed from the halves under cso) and stores both halves
        // in the variant's format.
        let c01: Vec<RnsPoly<B, Eval>> =
            bufs.into_iter().map(|b| RnsPoly::from_buffer(self.be(), b, basis.clone())).collect::<Result<_>>()?;
        let mut pb = self.builder(&basis)?;
        let (e0, e1) = match c01.as_slice() {
            [c0, c1] => (pb.poly(c0, Traffic::Ciphertext), pb.poly(c1, Traffic::Ciphertext)),
            _ => {
                let (eb1, ea1, eb2, ea2) = (pb.half(xb)?, pb.half(xa)?, pb.half(yb)?, pb.half(ya)?);
                (Expr::mul(eb1.clone(), eb2.clone()), Expr::add(Expr::mul(eb1, ea2), Expr::mul(ea1, eb2)))
            }
        };
        let epilogue = Epilogue { operands: pb.operands, outputs: vec![(Some(e0), format), (Some(e1), format)] };
        let [b, a] = rlwe::key_switch_with(self.be(), &c2, &rk.0, Some(self.t()), epilogue)?;
        drop(c2);
        self.bgv.check_noise(out_noise, level)?;
        let meta = Meta { level, correction, noise_log2: out_noise, param_id: xm.param_id };
        let out = BxtCiphertext {
            repr: Repr::Halves { b: self.wrap(b, &basis, format)?, a: self.wrap(a, &basis, format)?, meta },
        };
        self.be().flush()?;
        Ok(out)
    }

    /// HROTATE: rotates both rows of the slot matrix left by `steps`, as
    /// [`Bgv::rotate_columns`]. The automorphism of the `a` half (regenerated from its seed or
    /// lazy terms) is the first kernel; the key switch's last pass applies it to `b`, adds it to
    /// the key-switching result and stores both halves in the variant's format.
    pub fn rotate_columns(
        &self,
        ct: &BxtCiphertext<B>,
        steps: i64,
        keys: &EvaluationKeys<B>,
    ) -> Result<BxtCiphertext<B>> {
        if self.variant == Variant::Baseline {
            return self.compress(self.bgv.rotate_columns(self.plain(ct)?, steps, keys)?);
        }
        let g = self.bgv.column_rotation_element(steps);
        if g == 1 {
            let (b, a, meta) = self.halves(ct)?;
            return Ok(BxtCiphertext { repr: Repr::Halves { b: b.clone(), a: a.clone(), meta } });
        }
        let gk = keys.galois_key(g, || format!("columns by {steps}"))?;
        let (b, a, meta) = self.halves(ct)?;
        let noise = log2_add(meta.noise_log2, self.bgv.noise_model().key_switch(meta.level));
        self.bgv.check_noise(noise, meta.level)?;
        let basis = self.basis(meta.level)?;
        let format = self.variant.format();
        let mut pb = self.builder(&basis)?;
        let ea = Expr::galois(g, pb.half(a)?);
        let ag = RnsPoly::from_buffer(self.be(), Self::one(self.run(pb, vec![(ea, Format::Words)])?)?, basis.clone())?;
        // The key switch's last pass adds b(X^g) and stores both halves in the variant's format.
        let mut pb = self.builder(&basis)?;
        let eb = Expr::galois(g, pb.half(b)?);
        let epilogue = Epilogue { operands: pb.operands, outputs: vec![(Some(eb), format), (None, format)] };
        let [bb, ab] = rlwe::key_switch_with(self.be(), &ag, &gk.key, Some(self.t()), epilogue)?;
        drop(ag);
        let (b, a) = (self.wrap(bb, &basis, format)?, self.wrap(ab, &basis, format)?);
        self.be().flush()?;
        Ok(BxtCiphertext { repr: Repr::Halves { b, a, meta: Meta { noise_log2: noise, ..meta } } })
    }
}

/// The bias of a weighted sum: a plaintext lifted at the call, or a prepared one.
enum BiasRef<'p, B: Backend> {
    Plain(&'p Plaintext),
    Prepared(&'p PreparedPlaintext<B>),
}

/// The expression of a weight factor.
fn factor_expr<'b, B: Backend>(pb: &mut ProgramBuilder<'b, B>, f: &'b Factor<B>) -> Expr {
    match f {
        Factor::Int(k) => pb.int(*k),
        Factor::Plain(p) => pb.poly(p, Traffic::Plaintext),
    }
}

/// The terms of `w * half`.
fn scaled_terms<B: Backend>(half: &Half<B>, w: &Factor<B>) -> Vec<Term<B>> {
    half.terms()
        .into_iter()
        .map(|mut t| {
            t.factors.push(w.clone());
            t
        })
        .collect()
}
