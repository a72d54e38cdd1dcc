//! Encrypted inference of the integer CNN ([`QuantCnn`]) with exact ReLUs as range-restricted
//! lookup tables.
//!
//! **Packing.** Each image of a batch owns a block of [`BLOCK`] = 256 consecutive slots (blocks
//! never straddle the two rows of BGV's `2 x N/2` slot matrix), so a ciphertext holds `N / 256`
//! images. The client encrypts 25 ciphertexts (seeded symmetric encryption, under the BXT
//! variant): ciphertext `k` holds, in slot `p < 169` of each image's block, the 4-bit pixel under
//! convolution tap `k` at output position `p` (the image's im2col matrix, which the client can
//! lay out because it holds the image), zeros elsewhere. The server then computes:
//!
//! 1. **Conv**: per channel `c`, `z_c = sum_k w_ck ct_k + b_c` with integer weights
//!    ([`Bxt::weighted_sum`]: one fused kernel under `cso`), then the ciphertext is
//!    materialised for the rest of the circuit. Its slots hold the channel's 169 outputs per
//!    image, every slot within the exact bound `15 L1(w_c) + |b_c|`.
//! 2. **ReLU 1**: the table `min(clip, (max(z,0) + 2^(s-1)) >> s)` on `[-B1, B1]`, `B1` the
//!    conv bound ([`eval_lut_bounded`]): one table per channel. Or, with [`ReluPath::Digits`],
//!    the digit pipeline described below.
//! 3. **FC100**: a block-diagonal matrix-vector product by generalised diagonals: output slot
//!    `n` of a block is `sum_c sum_d D_cd[n] h_c[n + d]`, `d = p - n` in `[-(H-1), 168]`, with
//!    `D_cd[n] = W[n][c, n + d]` (zero outside the matrix), so every term reads its own image's
//!    block and slot rotations never mix images. Baby-step/giant-step with `k` baby steps:
//!    `sum_g rot_gk(sum_c sum_j rot_-gk(D_c,gk+j) * rot_j(h_c))`, that is `C (k-1)` baby
//!    rotations, one rotation per giant step, and the plaintext diagonals pre-rotated. The
//!    outputs land packed in slots `0..H` of each block. Plus the bias.
//! 4. **ReLU 2**: the table on `[-B2, B2]`, `B2` the FC100 bound: one table for the whole batch.
//! 5. **FC10**: the same diagonal product (one input ciphertext), scores in slots `0..10`.
//!
//! The client decrypts the scores and takes the arg-max. Only the ReLUs multiply ciphertexts;
//! the two FC layers cost one plaintext multiplication each in depth.
//!
//! # The digit ReLU path (BXT's pruned comparison)
//!
//! With [`ReluPath::Digits`] each ReLU is computed as the BXT paper does it: digit extraction,
//! a pruned word-wise sign test, and a product. For a pre-activation `z` bounded by `B`:
//!
//! 1. one [`LutSet`] on `[-B, B]` (the powers of `z` computed once) gives the top `kept` of the
//!    [`DIGIT_COUNT`] balanced base-[`DIGIT_BASE`] digits of `z` ([`DigitExtractor`]) and the
//!    requantised value `g(z) = clamp((z + 2^(s-1)) >> s, -clip, clip)` (no ReLU in it);
//! 2. the word-wise comparison of the kept digits with those of 0 ([`sign_test_digits`]) gives
//!    `n = [z < 0]` on the truncated value;
//! 3. the activation is `g(z) (1 - n)`: one more product.
//!
//! With all digits kept this is exactly the fused table's function. With pruning, `z` in the
//! dead zone `[-(13^p - 1)/2, -1]` (`p` digits pruned) reads as non-negative and the activation
//! is `g(z)`, a small value in `[-clip, 0]`: exactly [`Faults::balanced`]'s corruption, which
//! fault-aware training and the plaintext emulation ([`QuantCnn::scores_with`]) use, so a run
//! checks every decrypted score against the emulation. Because `g` clamps at `-clip` as well,
//! corrupted activations stay within the bounds the next layer was sized for.

use std::collections::BTreeSet;
use std::time::Instant;

use serde::Serialize;

use super::checkpoint::{Checkpoint, CheckpointConfig, Digester};
use super::cnn::{argmax, CnnBounds, Faults, QuantCnn, Requant, CLASSES, POSITIONS, TAPS};
use super::mnist::Split;
use wgfhe::backend::ledger::{write_trace, Ledger, Totals};
use wgfhe::backend::{Backend, ShapeBackend};
use wgfhe::bgv::{Bgv, Ciphertext, Plaintext, PlaintextCache};
use wgfhe::compare::digits::{Convention, Digits};
use wgfhe::compare::extract::{sign_test_digits, DigitExtractor};
use wgfhe::compare::lut::{eval_lut_bounded, eval_lut_set_measured, Bounded, Lut, LutSet};
use wgfhe::compare::wordwise::EncryptedDigits;
use wgfhe::compress::{Bxt, BxtCiphertext, Variant, Weight};
use wgfhe::error::{Error, Result};
use wgfhe::eval::bsgs::{self, BabyRotations};
use wgfhe::eval::Hoisting;
use wgfhe::math::zq::Modulus;
use wgfhe::rlwe::{EvaluationKeys, KeyPlan, KeyRequest};

pub use super::split::BLOCK;

/// Bytes of prepared plaintexts [`run_cnn`] keeps resident across batches
/// ([`CnnCircuit::evaluate_with`]): the diagonals, biases and constants are encoded into the
/// Eval domain on first use at the level each is used at, and later batches reuse them, up to
/// this budget (the rest are lifted at every use, as [`CnnCircuit::evaluate`] does). A
/// plaintext prepared over `L` limbs at `N = 2^16` takes `L` x 256 KiB, and the default
/// model's FC100 has up to 1,340 diagonals (5 channels x 268): at 30 limbs they would take
/// about 10 GB, so at that size the budget holds the first-used part of them (a cache entry is
/// kept until its key is needed at another level or factor).
pub const PREPARED_BUDGET: u64 = 1 << 30;

/// Bytes the working set of one digit-table set ([`ReluPath::Digits`]) may take by default
/// (see [`CnnCircuit::with_table_budget`]): the baby steps of its plan are capped so that
/// `(k + 2 log2(degree) + tables)` ciphertexts at the input's level fit. With the fewest-HMULT
/// plans the first set at `bgv-cnn-n17` held 99 ciphertexts of up to 88 MB and the second 208 of
/// up to 52 MB (peak RSS above 16 GB); under 7 GB the plans take 84 -> 52 and 191 -> 100 baby
/// steps (67 and 119 ciphertexts) for 8% and 18% more HMULTs in those sets (1,384 -> 1,510 in
/// the circuit).
pub const TABLE_WORKING_SET_BUDGET: u64 = 7_000_000_000;

/// The most baby steps a set of `tables` tables of degree up to `degree`, evaluated on an
/// input at `level` of a ring of degree `n`, may take for its working set to fit `budget` bytes
/// (at least one): the baby-step powers, plus about `2 log2(degree)` giant-step powers and
/// pending products, plus one result per table, each at most a degree-1 ciphertext at `level`
/// (`2 (level + 1) n` words of 4 bytes).
fn baby_steps_within(budget: u64, n: usize, level: usize, degree: usize, tables: usize) -> usize {
    let ct_bytes = 8 * (level as u64 + 1) * n as u64;
    let held = usize::try_from(budget / ct_bytes.max(1)).unwrap_or(usize::MAX);
    let log_degree = (usize::BITS - degree.leading_zeros()) as usize;
    held.saturating_sub(2 * log_degree + tables).max(1)
}

/// Base of the balanced digits of the [`ReluPath::Digits`] path.
pub const DIGIT_BASE: u32 = 13;

/// Digits of the [`ReluPath::Digits`] path: `13^4` covers `[-14280, 14280]`, which holds both
/// pre-activation bounds of the default model (conv 1215, FC100 8191 by its L1 constraint).
pub const DIGIT_COUNT: usize = 4;

/// How the circuit computes its two ReLUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ReluPath {
    /// Exact ReLU fused with requantisation as one range-restricted table (the default).
    Table,
    /// Digit extraction and a word-wise sign test on the top `kept` of [`DIGIT_COUNT`] digits
    /// (see the [module documentation](self)).
    Digits {
        /// Digits kept by the sign test (1 to [`DIGIT_COUNT`]).
        kept: usize,
    },
}

impl ReluPath {
    /// The digit layout of [`ReluPath::Digits`].
    pub fn layout() -> Result<Digits> {
        Digits::new(DIGIT_BASE, DIGIT_COUNT, Convention::Balanced)
    }

    /// The digit path keeping a fraction `keep` in `(0, 1]` of the digits (rounded, at least
    /// one): 1, 0.75, 0.5, 0.25 keep 4, 3, 2, 1. [`Error::InvalidField`] outside `(0, 1]`.
    pub fn digits(keep: f64) -> Result<Self> {
        Ok(Self::Digits { kept: Self::layout()?.kept(keep)? })
    }

    /// The ReLU corruption this path produces ([`Faults::balanced`]; none for the table).
    #[must_use]
    pub fn faults(&self) -> Faults {
        match self {
            Self::Table => Faults::default(),
            Self::Digits { kept } => Faults::balanced(u64::from(DIGIT_BASE), DIGIT_COUNT as u32, *kept as u32),
        }
    }

    /// `lut` or `digits` (the CLI's names).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Self::Table => "lut",
            Self::Digits { .. } => "digits",
        }
    }
}

/// One compiled ReLU of the circuit.
#[derive(Debug)]
enum Activation {
    /// The fused table.
    Table(Lut),
    /// Kept digit tables then `g` (last) in one set, and the layout.
    Digits { set: LutSet, layout: Digits, kept: usize },
}

impl Activation {
    fn new(path: ReluPath, t: u32, bound: u64, rq: Requant) -> Result<Self> {
        let bound = bound.max(1);
        match path {
            ReluPath::Table => Ok(Self::Table(Lut::relu_requant(t, bound, 1, rq.shift, rq.clip)?)),
            ReluPath::Digits { kept } => {
                let layout = ReluPath::layout()?;
                let digits = DigitExtractor::top_digits(t, bound, layout, kept)?;
                let mut tables = digits.tables().tables().to_vec();
                tables.push(Lut::compile_for_set(t, bound, |z| Ok(rq.apply_signed(z)))?);
                Ok(Self::Digits { set: LutSet::new(tables)?, layout, kept })
            }
        }
    }

    /// The table domain (the pre-activation bound).
    fn domain(&self) -> u64 {
        match self {
            Self::Table(lut) => lut.domain(),
            Self::Digits { set, .. } => set.domain(),
        }
    }

    /// The activation of `z` in every slot; the constant `one` (cache key `one_key`) is the
    /// digit path's `1 - [z < 0]`.
    #[allow(clippy::too_many_arguments)]
    fn eval<B: Backend>(
        &self,
        bgv: &Bgv<B>,
        keys: &EvaluationKeys<B>,
        z: &Bounded<B>,
        (one, one_key): (&Plaintext, usize),
        cache: &mut PlaintextCache<B>,
        stats: &mut CnnStats,
        (stage, budget): (&'static str, u64),
    ) -> Result<Ciphertext<B>> {
        match self {
            Self::Table(lut) => {
                let (a, s) = eval_lut_bounded(bgv, keys, z, lut)?;
                stats.hmults += s.hmults;
                Ok(a.into_ciphertext())
            }
            Self::Digits { set, layout, kept } => {
                let level = z.ciphertext().level();
                let degree = set.tables().iter().map(Lut::degree).max().unwrap_or(0);
                let cap = baby_steps_within(budget, bgv.params().n(), level, degree, set.tables().len());
                let plan = set.plan_within(cap)?;
                let (mut outs, s, peak) = eval_lut_set_measured(bgv, keys, z, set, &plan, true)?;
                stats.hmults += s.hmults;
                stats.record_table_set(TableSetRun {
                    stage,
                    level,
                    baby_steps: plan.baby_steps,
                    hmults: s.hmults,
                    relins: s.relins,
                    peak_ciphertexts: peak,
                    peak_bytes_bound: peak as u64 * 8 * (level as u64 + 1) * bgv.params().n() as u64,
                });
                let g = outs.pop().ok_or(Error::InvalidField { field: "cnn", reason: "empty digit table set" })?;
                let digits = EncryptedDigits::from_top_digits(*layout, outs)?;
                let (negative, cs) = sign_test_digits(bgv, keys, &digits, *kept)?;
                stats.hmults += cs.hmults + 1;
                // 1 - [z < 0], then one product with g(z).
                let pass = add_plain_cached(bgv, cache, &bgv.neg(&negative)?, one, one_key)?;
                bgv.mul_relin(&g, &pass, keys)
            }
        }
    }
}

/// `ct + pt` with the prepared form of `pt` (cache key `key`) when the cache holds or can make
/// it, else lifted at the call: the same ciphertext either way.
fn add_plain_cached<B: Backend>(
    bgv: &Bgv<B>,
    cache: &mut PlaintextCache<B>,
    ct: &Ciphertext<B>,
    pt: &Plaintext,
    key: usize,
) -> Result<Ciphertext<B>> {
    match cache.prepared(bgv, key, pt, ct.level(), ct.correction_factor())? {
        Some(pp) => bgv.add_plain_prepared(ct, pp),
        None => bgv.add_plain(ct, pt),
    }
}

/// A square-ish number of baby steps for `range` diagonals.
fn baby_steps(range: usize) -> usize {
    let mut k = 1;
    while k * k < range {
        k += 1;
    }
    k.max(1)
}

/// One diagonal product: `(giant step, [(input index, baby step, pre-rotated diagonal)])`.
type Diagonals = Vec<(i64, Vec<(usize, usize, Plaintext)>)>;

/// Shape of a block-diagonal product: `inputs` matrices of `rows x cols` per image block.
#[derive(Debug, Clone, Copy)]
struct Shape {
    slots: usize,
    baby: usize,
    inputs: usize,
    rows: usize,
    cols: usize,
}

/// The plaintext side of the encrypted circuit: tables, diagonals, biases, rotation steps.
#[derive(Debug)]
pub struct CnnCircuit {
    model: QuantCnn,
    bounds: CnnBounds,
    relu: ReluPath,
    act1: Activation,
    act2: Activation,
    one: Plaintext,
    fc1: Diagonals,
    fc1_bias: Plaintext,
    fc2: Diagonals,
    fc2_bias: Plaintext,
    conv_bias: Vec<Plaintext>,
    baby: usize,
    steps: Vec<i64>,
    images_per_batch: usize,
    table_budget: u64,
}

/// Rotates a slot vector left by `steps` within each row of `half` slots (what
/// [`Bgv::rotate_columns`] does to the slots).
fn rotate(v: &[u64], steps: i64, half: usize) -> Result<Vec<u64>> {
    if half == 0 || !v.len().is_multiple_of(half) {
        return Err(Error::DimensionMismatch { what: "slots per row", expected: half, found: v.len() });
    }
    let mut out = v.to_vec();
    let s = steps.rem_euclid(half as i64) as usize;
    for row in out.chunks_exact_mut(half) {
        row.rotate_left(s);
    }
    Ok(out)
}

impl CnnCircuit {
    /// Prepares the circuit of `model` for `bgv`'s parameters with table ReLUs
    /// ([`CnnCircuit::with_relu`] with [`ReluPath::Table`]).
    pub fn new<B: Backend>(bgv: &Bgv<B>, model: &QuantCnn) -> Result<Self> {
        Self::with_relu(bgv, model, ReluPath::Table)
    }

    /// Prepares the circuit of `model` for `bgv`'s parameters: compiles the ReLUs of `relu` on
    /// the model's worst-case bounds and encodes the diagonals. Errors: [`Error::BoundTooLarge`] if a
    /// bound (or the scores' bound) does not fit `t`; [`Error::DigitRange`] if a bound is
    /// outside the digit layout of [`ReluPath::Digits`]; [`Error::InvalidField`] for a `kept`
    /// outside `1..=DIGIT_COUNT` or a row of slots that holds no whole block;
    /// [`Error::BatchingUnavailable`].
    pub fn with_relu<B: Backend>(bgv: &Bgv<B>, model: &QuantCnn, relu: ReluPath) -> Result<Self> {
        model.validate()?;
        let t = bgv.plaintext_modulus();
        let tm = Modulus::new(u64::from(t))?;
        let slots = bgv.encoder().slots();
        if slots == 0 {
            return Err(Error::BatchingUnavailable { t: u64::from(t), n: bgv.params().n() as u64 });
        }
        let half = slots / 2;
        if half < BLOCK || !half.is_multiple_of(BLOCK) {
            return Err(Error::InvalidField { field: "cnn", reason: "a row of slots must hold whole 256-slot blocks" });
        }
        if model.hidden > BLOCK || CLASSES > BLOCK {
            return Err(Error::InvalidField { field: "cnn", reason: "more hidden units than slots per image" });
        }
        let bounds = model.bounds();
        let limit = (u64::from(t) - 1) / 2;
        if bounds.fc2 > limit {
            return Err(Error::BoundTooLarge { bound: bounds.fc2, limit });
        }
        for bound in [bounds.conv, bounds.fc1] {
            if bound > limit {
                return Err(Error::BoundTooLarge { bound, limit });
            }
        }
        let act1 = Activation::new(relu, t, bounds.conv, model.act1)?;
        let act2 = Activation::new(relu, t, bounds.fc1, model.act2)?;
        let enc = |v: &[u64]| bgv.encoder().encode(v);
        // One block of `values` (zeros after them, up to the block size) in every block of slots.
        let per_block = |values: &[i64]| -> Vec<u64> {
            let block = values.iter().copied().chain(std::iter::repeat(0)).take(BLOCK);
            block.cycle().take(slots).map(|v| u64::from(tm.reduce_i64(v))).collect()
        };
        let features = model.features();
        let h = model.hidden;
        // FC100: inputs channel c, position p; weight W[n][c * 169 + p].
        let weight = |w: &[i64], what: &'static str, i: usize| {
            w.get(i).copied().ok_or(Error::DimensionMismatch { what, expected: i + 1, found: w.len() })
        };
        let fc1_w =
            |c: usize, n: usize, p: usize| weight(&model.fc1_w, "fc1 weights", n * features + c * POSITIONS + p);
        let fc2_w = |_: usize, m: usize, n: usize| weight(&model.fc2_w, "fc2 weights", m * h + n);
        let baby = baby_steps(h + POSITIONS - 1);
        let shape1 = Shape { slots, baby, inputs: model.channels, rows: h, cols: POSITIONS };
        let fc1 = Self::diagonals(&enc, tm, shape1, &fc1_w)?;
        let fc2 = Self::diagonals(&enc, tm, Shape { inputs: 1, rows: CLASSES, cols: h, ..shape1 }, &fc2_w)?;
        let mut steps: BTreeSet<i64> = (1..baby as i64).collect();
        steps.extend(fc1.iter().chain(&fc2).map(|(g, _)| *g).filter(|&g| g != 0));
        let fc1_bias = enc(&per_block(&model.fc1_b))?;
        let fc2_bias = enc(&per_block(&model.fc2_b))?;
        let conv_bias =
            model.conv_b.iter().map(|&b| enc(&vec![u64::from(tm.reduce_i64(b)); slots])).collect::<Result<Vec<_>>>()?;
        let one = enc(&vec![1; slots])?;
        Ok(Self {
            model: model.clone(),
            bounds,
            relu,
            act1,
            act2,
            one,
            fc1,
            fc1_bias,
            fc2,
            fc2_bias,
            conv_bias,
            baby,
            steps: steps.into_iter().collect(),
            images_per_batch: slots / BLOCK,
            table_budget: TABLE_WORKING_SET_BUDGET,
        })
    }

    /// The circuit with the working set of each digit-table set capped at `bytes` (default
    /// [`TABLE_WORKING_SET_BUDGET`]; `u64::MAX` for the fewest-HMULT plans): the plan of a set
    /// is chosen at its input's level with at most as many baby steps as fit. The tables
    /// compute the same values whatever the plan; only the cost and the ciphertexts' words
    /// differ. The [`ReluPath::Table`] path is not capped.
    #[must_use]
    pub fn with_table_budget(mut self, bytes: u64) -> Self {
        self.table_budget = bytes;
        self
    }

    /// The pre-rotated generalised diagonals of `inputs` matrices `rows x cols` (entry
    /// `weight(input, row, col)`), grouped by giant step.
    fn diagonals(
        enc: &dyn Fn(&[u64]) -> Result<Plaintext>,
        tm: Modulus,
        shape: Shape,
        weight: &dyn Fn(usize, usize, usize) -> Result<i64>,
    ) -> Result<Diagonals> {
        let Shape { slots, baby, inputs, rows, cols } = shape;
        let half = slots / 2;
        let (lo, hi) = (-(rows as i64 - 1), cols as i64 - 1);
        let k = baby as i64;
        let mut out: Diagonals = Vec::new();
        for g in lo.div_euclid(k)..=hi.div_euclid(k) {
            let mut terms = Vec::new();
            for j in 0..baby {
                let d = g * k + j as i64;
                if d < lo || d > hi {
                    continue;
                }
                for input in 0..inputs {
                    let mut v = vec![0u64; slots];
                    let mut any = false;
                    for (s, slot) in v.iter_mut().enumerate() {
                        let n = s % BLOCK;
                        let col = n as i64 + d;
                        if n < rows && (0..cols as i64).contains(&col) {
                            let w = weight(input, n, col as usize)?;
                            any |= w != 0;
                            *slot = u64::from(tm.reduce_i64(w));
                        }
                    }
                    if any {
                        terms.push((input, j, enc(&rotate(&v, -g * k, half)?)?));
                    }
                }
            }
            if !terms.is_empty() {
                out.push((g * k, terms));
            }
        }
        Ok(out)
    }

    /// Column rotations the server needs keys for.
    #[must_use]
    pub fn rotation_steps(&self) -> &[i64] {
        &self.steps
    }

    /// The evaluation keys the server's circuit needs at `params` under `variant` for a batch
    /// of `images`, each key at the highest level it is used at ([`Bgv::plan_keys`]: the
    /// circuit run on the shape-only backend on the batch's inputs,
    /// [`CnnCircuit::key_plan_for`]). Levels follow from the noise estimates, and fresh inputs'
    /// estimates depend on their plaintexts' norms, so another batch may reach a rotation or
    /// the relinearisation one level above the plan's; it is then switched down to the key's
    /// level there ([`Bgv::relinearize`], [`Bgv::apply_galois`]): correct scores, one level
    /// less of budget. Rotation steps the circuit never takes get no key.
    pub fn key_plan(
        &self,
        params: &wgfhe::params::Parameters,
        variant: Variant,
        images: &[&super::mnist::Image],
    ) -> Result<KeyPlan> {
        let inputs = self.client_inputs(images, params.n())?;
        self.key_plan_for(params, variant, std::slice::from_ref(&inputs))
    }

    /// The plan of the keys the circuit uses on each of `inputs` (the 25 slot vectors of a
    /// batch each, as [`CnnCircuit::client_inputs`] lays them out), every key at the highest
    /// level any of them uses it at.
    pub fn key_plan_for(
        &self,
        params: &wgfhe::params::Parameters,
        variant: Variant,
        inputs: &[Vec<Vec<u64>>],
    ) -> Result<KeyPlan> {
        let mut plan = KeyPlan::default();
        for batch in inputs {
            let run = Bgv::plan_keys(params, &KeyRequest::rotations(&self.steps), |bgv, sk, keys| {
                let bxt = Bxt::new(bgv, variant);
                let cts =
                    batch.iter().map(|v| bxt.encrypt(sk, &bgv.encoder().encode(v)?)).collect::<Result<Vec<_>>>()?;
                self.evaluate(&bxt, keys, &cts, &mut CnnStats::default()).map(drop)
            })?;
            plan.merge(&run);
        }
        Ok(plan)
    }

    /// Images per batch (`slots / 256`).
    #[must_use]
    pub fn images_per_batch(&self) -> usize {
        self.images_per_batch
    }

    /// How the ReLUs are computed.
    #[must_use]
    pub fn relu(&self) -> ReluPath {
        self.relu
    }

    /// Domains of the two ReLUs' tables (the pre-activation bounds after the convolution and
    /// after FC100).
    #[must_use]
    pub fn table_domains(&self) -> (u64, u64) {
        (self.act1.domain(), self.act2.domain())
    }

    /// The ten scores the circuit computes for `image` in plaintext: the integer model with
    /// the ReLU corruption of the path ([`ReluPath::faults`]; exact for the table path and for
    /// the digit path keeping every digit).
    #[must_use]
    pub fn expected_scores(&self, image: &super::mnist::Image) -> Vec<i64> {
        self.model.scores_with(image, self.relu.faults())
    }

    /// The first ReLU alone, on one channel's pre-activations `z` (bounded by the conv bound):
    /// what [`CnnCircuit::evaluate`] applies to each channel after the convolution. Needs only
    /// the relinearisation key; for measuring one stage at a ring size where the whole circuit's
    /// keys do not fit in memory (`--example cnn_relu_stage`).
    pub fn relu1<B: Backend>(
        &self,
        bgv: &Bgv<B>,
        keys: &EvaluationKeys<B>,
        z: &Bounded<B>,
        stats: &mut CnnStats,
    ) -> Result<Ciphertext<B>> {
        let mut cache = PlaintextCache::new(0);
        self.act1.eval(bgv, keys, z, (&self.one, self.key_one()), &mut cache, stats, ("relu1", self.table_budget))
    }

    /// Cache keys of the circuit's plaintexts ([`PlaintextCache`]): the FC100 diagonals in
    /// order, then FC10's, the two FC biases, the conv biases and the constant one.
    fn key_fc2(&self) -> usize {
        self.fc1.iter().map(|(_, terms)| terms.len()).sum()
    }

    fn key_fc1_bias(&self) -> usize {
        self.key_fc2() + self.fc2.iter().map(|(_, terms)| terms.len()).sum::<usize>()
    }

    fn key_fc2_bias(&self) -> usize {
        self.key_fc1_bias() + 1
    }

    fn key_conv_bias(&self) -> usize {
        self.key_fc2_bias() + 1
    }

    fn key_one(&self) -> usize {
        self.key_conv_bias() + self.conv_bias.len()
    }

    /// The client's 25 slot vectors for a batch of images (at most [`Self::images_per_batch`]).
    pub fn client_inputs(&self, images: &[&super::mnist::Image], slots: usize) -> Result<Vec<Vec<u64>>> {
        if images.len() > self.images_per_batch {
            return Err(Error::DimensionMismatch {
                what: "images in a batch",
                expected: self.images_per_batch,
                found: images.len(),
            });
        }
        super::split::cnn_client_columns(images, slots)
    }

    /// The diagonal product of `inputs` (same level) with `diags`, whose plaintexts have the
    /// cache keys `first_key..` in order.
    fn matvec<B: Backend>(
        &self,
        bgv: &Bgv<B>,
        keys: &EvaluationKeys<B>,
        inputs: &[Ciphertext<B>],
        (diags, first_key): (&Diagonals, usize),
        cache: &mut PlaintextCache<B>,
        stats: &mut CnnStats,
    ) -> Result<Ciphertext<B>> {
        // Drop the primes the noise allows (the products then run on fewer limbs and cost no
        // more budget), at one common level.
        let inputs = inputs.iter().map(|x| bgv.mod_switch_auto(x)).collect::<Result<Vec<_>>>()?;
        let level = inputs.iter().map(Ciphertext::level).min().unwrap_or(0);
        let inputs = inputs.iter().map(|x| bgv.mod_switch_to_level(x, level)).collect::<Result<Vec<_>>>()?;
        // Inputs with different correction factors would be rescaled when the products are
        // added, multiplying the noise by up to t/2: every product takes the first input's
        // factor instead (folded into its plaintext diagonal, free in noise).
        let target = inputs.first().map_or(1, Ciphertext::correction_factor);
        // Baby steps of every input (step 0: the input itself), then the giant steps' sums
        // ([`bsgs::sum`]).
        let steps: Vec<i64> = (1..self.baby as i64).collect();
        let babies = BabyRotations::new(bgv, &inputs, &steps, keys, Hoisting::OneByOne)?;
        let mut key = first_key;
        let giants = diags.iter().map(|(giant, terms)| (*giant, terms));
        let (acc, rotations) = bsgs::sum(bgv, keys, &babies, giants, |babies, _, terms| {
            let mut inner: Option<Ciphertext<B>> = None;
            for (input, j, pt) in terms {
                let b = i64::try_from(*j)
                    .ok()
                    .and_then(|j| babies.get(*input, j).ok())
                    .ok_or(Error::InvalidField { field: "cnn", reason: "diagonal refers to a missing baby step" })?;
                // The diagonal prepared with the factor that gives the product `target`, when
                // the cache holds or can make it: the same words as `mul_plain_as`.
                let factor = bgv.plain_factor(b, target)?;
                let prod = match cache.prepared(bgv, key, pt, b.level(), factor)? {
                    Some(pp) => bgv.mul_plain_prepared(b, pp)?,
                    None => bgv.mul_plain_as(b, pt, target)?,
                };
                key += 1;
                stats.pmults += 1;
                inner = Some(match inner {
                    None => prod,
                    Some(a) => bgv.add(&a, &prod)?,
                });
            }
            Ok(inner)
        })?;
        stats.rotations += rotations.baby + rotations.giant;
        acc.ok_or(Error::InvalidField { field: "cnn", reason: "an all-zero weight matrix" })
    }

    /// The server's circuit on the 25 input ciphertexts of a batch: returns the scores'
    /// ciphertext. Every plaintext is lifted at its use ([`CnnCircuit::evaluate_with`] with an
    /// empty cache of no budget).
    pub fn evaluate<B: Backend>(
        &self,
        bxt: &Bxt<'_, B>,
        keys: &EvaluationKeys<B>,
        inputs: &[BxtCiphertext<B>],
        stats: &mut CnnStats,
    ) -> Result<Ciphertext<B>> {
        self.evaluate_with(bxt, keys, inputs, &mut PlaintextCache::new(0), stats)
    }

    /// [`CnnCircuit::evaluate`] with the circuit's plaintexts (diagonals, biases, constants)
    /// taken prepared from `cache` where it holds them or has room to prepare them, so that the
    /// batches after the first do not encode them again. The same scores ciphertext, word for
    /// word, whatever the cache holds. A cache serves one circuit on one BGV instance: its
    /// keys are this circuit's ([`run_cnn`] keeps one across its batches, with
    /// [`PREPARED_BUDGET`]).
    ///
    /// ```no_run
    /// # use wgfhe::bgv::{Bgv, PlaintextCache};
    /// # use wgfhe::compress::{Bxt, BxtCiphertext, Variant};
    /// # use wgfhe_mnist::cnn_infer::{CnnCircuit, CnnStats, PREPARED_BUDGET};
    /// # fn batches<'a>(bgv: &Bgv<wgfhe::backend::CpuBackend>, circuit: &CnnCircuit,
    /// #     keys: &wgfhe::bgv::EvaluationKeys<wgfhe::backend::CpuBackend>,
    /// #     inputs: &[Vec<BxtCiphertext<wgfhe::backend::CpuBackend>>]) -> wgfhe::Result<()> {
    /// let bxt = Bxt::new(bgv, Variant::Cso);
    /// let mut cache = PlaintextCache::new(PREPARED_BUDGET);
    /// let mut stats = CnnStats::default();
    /// for batch in inputs {
    ///     let scores = circuit.evaluate_with(&bxt, keys, batch, &mut cache, &mut stats)?;
    ///     # drop(scores);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn evaluate_with<B: Backend>(
        &self,
        bxt: &Bxt<'_, B>,
        keys: &EvaluationKeys<B>,
        inputs: &[BxtCiphertext<B>],
        cache: &mut PlaintextCache<B>,
        stats: &mut CnnStats,
    ) -> Result<Ciphertext<B>> {
        self.evaluate_checkpointed(bxt, keys, inputs, cache, stats, None)
    }

    /// [`CnnCircuit::evaluate_with`] with a checkpoint: the stages ([`STAGES`]) already
    /// completed for the checkpoint's current batch are loaded from it instead of computed
    /// (the newest that loads cleanly), and each stage computed is written to it before the
    /// next one starts. The same scores ciphertext, word for word. Errors, besides those of
    /// the circuit: the checkpoint's ([`Error::CheckpointFile`], [`Error::Io`],
    /// [`Error::CheckpointStopped`] after its `stop_after` stage).
    pub fn evaluate_checkpointed<B: Backend>(
        &self,
        bxt: &Bxt<'_, B>,
        keys: &EvaluationKeys<B>,
        inputs: &[BxtCiphertext<B>],
        cache: &mut PlaintextCache<B>,
        stats: &mut CnnStats,
        mut checkpoint: Option<&mut Checkpoint>,
    ) -> Result<Ciphertext<B>> {
        let bgv = bxt.bgv();
        if inputs.len() != TAPS {
            return Err(Error::DimensionMismatch { what: "input ciphertexts", expected: TAPS, found: inputs.len() });
        }
        let m = &self.model;
        let bounds = self.bounds;
        stats.noise.clear();
        let mut state = match checkpoint.as_deref_mut() {
            Some(cp) => match cp.resume(|bytes| bgv.ciphertext_from_bytes(bytes))? {
                Some((index, cts)) => {
                    let batch = cp.batch();
                    let names = checkpoint_stages(m.channels);
                    let done = names.get(..=index).unwrap_or(&names);
                    stats.restored.extend(done.iter().map(|n| format!("batch {batch}: {n}")));
                    Stage::restore(index, cts, m.channels)?
                }
                None => Stage::Inputs,
            },
            None => Stage::Inputs,
        };
        if let Some((name, ct)) = state.first() {
            stats.noise.push(StageNoise::of(bgv, name, ct));
        }
        loop {
            let clock = Instant::now();
            state = match state {
                Stage::Inputs => {
                    let mut conv = Vec::with_capacity(m.channels);
                    // The conv biases are added at the inputs' level with their correction factor.
                    let (in_level, in_factor) = inputs.first().map_or((0, 1), |c| (c.level(), c.correction_factor()));
                    for (c, (weights, bias)) in m.conv_w.chunks_exact(TAPS).zip(&self.conv_bias).enumerate() {
                        let terms: Vec<(Weight<'_>, &BxtCiphertext<B>)> =
                            weights.iter().zip(inputs).map(|(&w, ct)| (Weight::Int(w), ct)).collect();
                        let z = match cache.prepared(bgv, self.key_conv_bias() + c, bias, in_level, in_factor)? {
                            Some(pp) => bxt.weighted_sum_prepared(&terms, Some(pp))?,
                            None => bxt.weighted_sum(&terms, Some(bias))?,
                        };
                        conv.push(bxt.materialize(&z)?);
                    }
                    bgv.backend().synchronize()?;
                    stats.conv_ms += clock.elapsed().as_secs_f64() * 1e3;
                    Stage::Conv(conv)
                }
                Stage::Conv(conv) => self.relu1_step(bgv, keys, Vec::with_capacity(m.channels), conv, cache, stats)?,
                Stage::Relu1Part { done, rest } => self.relu1_step(bgv, keys, done, rest, cache, stats)?,
                Stage::Relu1(act1) => {
                    let level = act1.iter().map(Ciphertext::level).min().unwrap_or(0);
                    let act1 = act1.iter().map(|c| bgv.mod_switch_to_level(c, level)).collect::<Result<Vec<_>>>()?;
                    let h1 = self.matvec(bgv, keys, &act1, (&self.fc1, 0), cache, stats)?;
                    drop(act1);
                    let z2 = add_plain_cached(bgv, cache, &h1, &self.fc1_bias, self.key_fc1_bias())?;
                    bgv.backend().synchronize()?;
                    stats.fc1_ms += clock.elapsed().as_secs_f64() * 1e3;
                    Stage::Fc1(z2)
                }
                Stage::Fc1(z2) => {
                    let z2 = Bounded::fresh(bgv, z2, bounds.fc1)?;
                    let a2 = self.act2.eval(
                        bgv,
                        keys,
                        &z2,
                        (&self.one, self.key_one()),
                        cache,
                        stats,
                        ("relu2", self.table_budget),
                    )?;
                    bgv.backend().synchronize()?;
                    stats.relu2_ms += clock.elapsed().as_secs_f64() * 1e3;
                    Stage::Relu2(a2)
                }
                Stage::Relu2(a2) => {
                    let h2 =
                        self.matvec(bgv, keys, std::slice::from_ref(&a2), (&self.fc2, self.key_fc2()), cache, stats)?;
                    let scores = add_plain_cached(bgv, cache, &h2, &self.fc2_bias, self.key_fc2_bias())?;
                    bgv.backend().synchronize()?;
                    stats.fc2_ms += clock.elapsed().as_secs_f64() * 1e3;
                    Stage::Fc2(scores)
                }
                Stage::Fc2(scores) => return Ok(scores),
            };
            if let Some((name, ct)) = state.first() {
                stats.noise.push(StageNoise::of(bgv, name, ct));
            }
            if let Some(cp) = checkpoint.as_deref_mut() {
                let index = state
                    .index(m.channels)
                    .ok_or(Error::InvalidField { field: "cnn", reason: "no stage to record" })?;
                let cts = state.ciphertexts();
                cp.completed_stage(index, cts.len(), |i| {
                    let ct = cts.get(i).ok_or(Error::DimensionMismatch {
                        what: "stage ciphertexts",
                        expected: i + 1,
                        found: cts.len(),
                    })?;
                    bgv.ciphertext_to_bytes_packed(ct)
                })?;
            }
        }
    }
}

impl CnnCircuit {
    /// One channel of the first ReLU: its activation appended to `done` and removed from
    /// `rest` (the conv outputs still to do); [`Stage::Relu1`] once `rest` is empty, else
    /// [`Stage::Relu1Part`] (a checkpoint records every channel).
    fn relu1_step<B: Backend>(
        &self,
        bgv: &Bgv<B>,
        keys: &EvaluationKeys<B>,
        mut done: Vec<Ciphertext<B>>,
        mut rest: Vec<Ciphertext<B>>,
        cache: &mut PlaintextCache<B>,
        stats: &mut CnnStats,
    ) -> Result<Stage<B>> {
        let clock = Instant::now();
        if !rest.is_empty() {
            let z = Bounded::fresh(bgv, rest.remove(0), self.bounds.conv)?;
            done.push(self.act1.eval(
                bgv,
                keys,
                &z,
                (&self.one, self.key_one()),
                cache,
                stats,
                ("relu1", self.table_budget),
            )?);
        }
        bgv.backend().synchronize()?;
        stats.relu1_ms += clock.elapsed().as_secs_f64() * 1e3;
        Ok(if rest.is_empty() { Stage::Relu1(done) } else { Stage::Relu1Part { done, rest } })
    }
}

mod run;
mod stage;
pub use run::*;
use stage::Stage;
pub use stage::{checkpoint_stages, STAGES};

#[cfg(test)]
mod tests;
