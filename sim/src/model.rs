//! The model: a per-dispatch roofline with a working-set (L2) reuse estimate, occupancy and
//! launch overhead. It is a model, not a measurement; every output says so.
//!
//! For each dispatch (one backend call) of a trace:
//! * **Passes and launches.** An NTT over `N = 2^k` makes [`ntt_plan_passes`] passes over its
//!   limbs, the plan of the main crate's `backend::gpu::ntt::NttPlan`: column passes over
//!   strided columns, then one row pass, each on tiles of workgroup memory. With the 16 KiB of
//!   workgroup memory every WebGPU adapter has ([`Costs::ntt_workgroup_bytes`]) the tile is
//!   4,096 values: one pass up to `N = 2^12`, two from `2^13` to `2^17`; smaller tiles (8 or 4
//!   KiB) need more. A record carrying `ntt_passes` (the recording device's passes of one
//!   transform) uses that number instead. Every other kernel makes one pass. Each pass moves
//!   the ciphertext and output bytes of one pass: a record with `ntt_passes` counts the bytes of
//!   all its passes (the ledger since the two-pass NTT), an older record those of one; tables
//!   are read once in all. Launches are the record's `gpu_dispatches` plus `gpu_copies` when
//!   present, else its passes (an NTT pass is one dispatch, every other backend call one).
//! * **Tables.** An NTT reads compact twiddles, [`ntt_twiddle_words`] words per limb transform
//!   (`NttPlan::twiddle_words`: 4,324 at `2^16` instead of the `2N` = 131,072 of full tables).
//!   Old traces count full tables (`2N` words per limb); such a record's table bytes are
//!   replaced by the compact size ([`table_bytes`]), in the record's word size.
//! * **Memory.** All bytes go through L2 (`l2_gbs`). Ciphertext reads hit L2 up to the bytes
//!   written by the most recent passes that together fit in 3/4 of L2 (producer-consumer reuse);
//!   a constant table hits once the same (kernel, N, size) has been read and it fits in 3/8 of
//!   L2; key and plaintext reads always come from DRAM; every written byte goes to DRAM. With a
//!   bit-to-integer converter, its latency `c` is added to the DRAM latency `L` of the packed
//!   share of the reads, which (Little's law, same bytes in flight) scales their DRAM time by
//!   `(L + c) / L`.
//! * **Integer work** in 32-bit operations at `sms * int_ops_per_clk_per_sm * clock`: each
//!   modular multiplication costs what the kernel's reduction costs ([`modmul_cost`]: Shoup in
//!   the NTT, `mul_scalar` and the conversions, Barrett elsewhere) with native 64-bit products
//!   (`shared/mul_native.wgsl`, on GPUs with `SHADER_INT64`: [`Gpu::shader_int64`]) or with the
//!   emulated ones (`shared/mul_emulated.wgsl`, four 16-bit products), see [`Mul`]; each output
//!   residue [`Costs::per_residue`] per pass; software ChaCha12 [`Costs::chacha_block`] per
//!   block, `prng_words / 16` blocks (every kernel uses all 16 words of a block: 16 residues of
//!   one word each); software unpack/pack [`Costs::unpack`] / [`Costs::pack`] per residue.
//! * **PRNG unit** (BXT hardware option): words at `prng_unit_words_per_clk_per_sm` per SM per
//!   clock, in parallel with the rest, plus its 40-cycle latency once.
//! * **Time** = `launches * launch_us + max(DRAM, L2, integer, PRNG unit) / occupancy`,
//!   occupancy = min(1, work items / (sms * resident_threads_per_sm)), one work item per output
//!   residue (per butterfly, `N/2` per limb, for an NTT).
//!
//! Not modelled: the row pass forming its twiddles (a Shoup product per block an invocation
//! works on, not in the ledger's `modmuls`); a fused kernel's uniform operand under a Galois
//! node, which computes a block per residue (the trace cannot tell).

use serde::Serialize;

use crate::gpu::Gpu;
use crate::trace::Dispatch;

/// 32-bit operations of one modular multiplication, per reduction the kernels use, counted from
/// `shaders/shared/zq.wgsl` with `mul_emulated.wgsl` or `mul_native.wgsl`.
///
/// Counting: every 32-bit WGSL operation (add, sub, mul, and, or, shift, compare) is 1, a
/// conditional subtraction 2 (compare, subtract); a 64-bit operation (the product of two
/// zero-extended `u32`s, a variable shift, an or) is 2, one per 32-bit half; conversions and
/// shifts by the constant 32 are 0 (they only move whole words). So:
/// * `mul_wide`: emulated 22 (4 splits, 4 products, 5 for the middle word, 3 for the low, 6 for
///   the high), native 2; `mul_hi` alone (the low word dead) emulated 19, native 2;
/// * `barrett_wide`: emulated 38 (5 to form `q1`, a `mul_wide` of 22, 5 to form `q2`, 2 for
///   `lo - q2 q`, 4 for two conditional subtractions), native 16 (2 to join the words, 3 for
///   `x >> (k - 1)`, 5 for `(q1 mu) >> (k + 1)`, 2, 4);
/// * `mod_mul` = `mul_wide` + `barrett_wide`; `mod_reduce` = `barrett_wide` + its compare;
///   `shoup_mul_lazy` = `mul_hi` + 3; `shoup_mul` = lazy + 2.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModmulCosts {
    /// `mod_mul`, Barrett (element-wise `mul`/`mul_add`, the key-switch inner product, fused
    /// products): emulated 22 + 38 = 60, native 2 + 16 = 18.
    pub barrett: f64,
    /// `shoup_mul` by a constant with its companion (`mul_scalar`, `base_convert`,
    /// `scale_down`): emulated 19 + 5 = 24, native 2 + 5 = 7.
    pub shoup: f64,
    /// `shoup_mul_lazy` (the NTT's butterflies): emulated 19 + 3 = 22, native 2 + 3 = 5.
    pub shoup_lazy: f64,
    /// The `uniform` kernel's reduction of 4 words to a residue, per ledger modmul (the ledger
    /// counts 4 a residue): 4 `mod_reduce` and 3 `shoup_mul` over 4, emulated
    /// (4 * 39 + 3 * 24) / 4 = 57, native (4 * 17 + 3 * 7) / 4 = 22.25.
    pub uniform: f64,
}

impl ModmulCosts {
    /// The emulated products (`mul_emulated.wgsl`).
    pub const EMULATED: Self = Self { barrett: 60.0, shoup: 24.0, shoup_lazy: 22.0, uniform: 57.0 };
    /// Native 64-bit products (`mul_native.wgsl`, `SHADER_INT64`).
    pub const NATIVE: Self = Self { barrett: 18.0, shoup: 7.0, shoup_lazy: 5.0, uniform: 22.25 };

    /// The cost of one modular multiplication of `kernel` (see [`modmul_cost`]).
    #[must_use]
    pub fn of(&self, kernel: &str) -> f64 {
        match kernel {
            "ntt_forward" | "ntt_inverse" => self.shoup_lazy,
            "mul_scalar" | "base_convert" | "scale_down" | "scale_down_correction" => self.shoup,
            "uniform" => self.uniform,
            _ => self.barrett,
        }
    }
}

/// Integer-operation costs of our kernels (counted from the WGSL in `shaders/`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Costs {
    /// Modular multiplications with the emulated 32x32->64 product (`mul_emulated.wgsl`: four
    /// 16-bit products).
    pub modmul_emulated: ModmulCosts,
    /// Modular multiplications with native 64-bit products (`mul_native.wgsl`).
    pub modmul_native: ModmulCosts,
    /// Indexing, loads/stores and a modular add per output residue and pass.
    pub per_residue: f64,
    /// One ChaCha12 block of generator 2 in software (6 double rounds of 8 quarter rounds of 4
    /// adds, 4 xors and 4 rotates, a rotate being 3 operations in WGSL, plus 16 final adds:
    /// 976; a compiler that maps the rotate to a funnel shift makes it 592).
    pub chacha_block: f64,
    /// Words of each ChaCha12 block used: all 16 (`uniform.wgsl`, the inner product and the
    /// fused kernels take 16 residues of one word each from a block), so a record costs
    /// `prng_words / 16` blocks (fallback blocks of rejected residues are not counted).
    pub words_per_block: f64,
    /// Unpacking one residue in software (bit offset, two loads, shifts, or, mask).
    pub unpack: f64,
    /// Packing one residue in software.
    pub pack: f64,
    /// Workgroup memory in bytes the NTT plan assumes when a record has no `ntt_passes`:
    /// 16,384 (every WebGPU adapter; tiles of 4,096 values).
    pub ntt_workgroup_bytes: u32,
    /// Latency of the hardware PRNG unit in cycles.
    pub prng_unit_latency_cycles: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            modmul_emulated: ModmulCosts::EMULATED,
            modmul_native: ModmulCosts::NATIVE,
            per_residue: 6.0,
            chacha_block: 976.0,
            words_per_block: 16.0,
            unpack: 8.0,
            pack: 10.0,
            ntt_workgroup_bytes: 16 * 1024,
            prng_unit_latency_cycles: 40.0,
        }
    }
}

/// Which 32x32->64 product the kernels use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mul {
    /// What the device selects: native where the GPU has `SHADER_INT64` ([`Gpu::shader_int64`]),
    /// emulated elsewhere.
    Auto,
    /// Native 64-bit products (`mul_native.wgsl`) whatever the GPU description says.
    Native,
    /// The emulated product from 16-bit halves (`mul_emulated.wgsl`) whatever the GPU has.
    Emulated,
}

impl Mul {
    /// Whether the kernels multiply natively on `gpu`.
    #[must_use]
    pub fn native_on(self, gpu: &Gpu) -> bool {
        match self {
            Self::Auto => gpu.shader_int64,
            Self::Native => true,
            Self::Emulated => false,
        }
    }
}

/// How pseudo-random `a` halves are produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prng {
    /// Software ChaCha12 in the kernel (what our kernels do).
    Software,
    /// A hardware PRNG unit per SM (the BXT paper's addition).
    Unit,
}

/// How bit-packed limbs are unpacked on load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unpack {
    /// Shifts and masks in the kernel (what our kernels do).
    Software,
    /// A bit-to-integer converter between L2 and L1 with this latency in cycles.
    Converter {
        /// Added latency in cycles.
        latency_cycles: f64,
    },
}

/// Model options.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    /// PRNG mode.
    pub prng: Prng,
    /// Unpack mode.
    pub unpack: Unpack,
    /// The 32x32->64 product: what the GPU selects ([`Mul::Auto`]), or forced.
    pub mul: Mul,
    /// Kernel costs.
    pub costs: Costs,
}

impl Default for Options {
    fn default() -> Self {
        Self { prng: Prng::Software, unpack: Unpack::Software, mul: Mul::Auto, costs: Costs::default() }
    }
}

impl Options {
    /// Software PRNG and unpack, products as the GPU selects: our kernels as they are.
    #[must_use]
    pub fn software() -> Self {
        Self::default()
    }

    /// The BXT hardware: a PRNG unit and a converter of `latency_cycles`.
    #[must_use]
    pub fn bxt_hardware(latency_cycles: f64) -> Self {
        Self { prng: Prng::Unit, unpack: Unpack::Converter { latency_cycles }, ..Self::default() }
    }

    /// A short label for reports.
    #[must_use]
    pub fn label(&self) -> String {
        let prng = match self.prng {
            Prng::Software => "sw-prng",
            Prng::Unit => "prng-unit",
        };
        let unpack = match self.unpack {
            Unpack::Software => "sw-unpack".to_string(),
            Unpack::Converter { latency_cycles } => format!("converter-{latency_cycles}cy"),
        };
        let mul = match self.mul {
            Mul::Auto => "",
            Mul::Native => ", native mul",
            Mul::Emulated => ", emulated mul",
        };
        format!("{prng}, {unpack}{mul}")
    }

    /// [`Options::label`] with the product the kernels use on `gpu`.
    #[must_use]
    pub fn label_on(&self, gpu: &Gpu) -> String {
        let mul = if self.mul.native_on(gpu) { "native u64 mul" } else { "emulated mul" };
        let forced = if self.mul == Mul::Auto { "" } else { " (forced)" };
        let base = Options { mul: Mul::Auto, ..*self }.label();
        format!("{base}, {mul}{forced}")
    }
}

/// The model's prediction for one dispatch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Kernel.
    pub kernel: String,
    /// Operation label, if any.
    pub op: Option<String>,
    /// Variant label, if any.
    pub variant: Option<String>,
    /// Predicted seconds.
    pub seconds: f64,
    /// Launches (GPU dispatches).
    pub launches: u64,
    /// Launch overhead seconds.
    pub launch_s: f64,
    /// DRAM seconds (before occupancy).
    pub dram_s: f64,
    /// L2 seconds (before occupancy).
    pub l2_s: f64,
    /// Integer seconds (before occupancy).
    pub int_s: f64,
    /// PRNG-unit seconds.
    pub prng_unit_s: f64,
    /// Bytes from or to DRAM.
    pub dram_bytes: f64,
    /// Bytes read that hit in L2.
    pub l2_hit_bytes: f64,
    /// 32-bit integer operations.
    pub int_ops: f64,
    /// Occupancy factor in (0, 1].
    pub occupancy: f64,
    /// The largest term: `dram`, `l2`, `int`, `prng_unit` or `launch`.
    pub bound: &'static str,
}

/// Whether `d` is an NTT record.
fn is_ntt(d: &Dispatch) -> bool {
    matches!(d.kernel.as_str(), "ntt_forward" | "ntt_inverse")
}

/// `log2` of the NTT tile (values a workgroup holds) on a device with `workgroup_bytes` of
/// workgroup memory: the largest of 4,096, 2,048 and 1,024 values (4 bytes each) that fits,
/// as `NttPlan::new`; `None` under 4 KiB (the device refuses the NTT).
#[must_use]
pub fn ntt_log_tile(workgroup_bytes: u32) -> Option<u32> {
    [12u32, 11, 10].into_iter().find(|&lt| 4u64 << lt <= u64::from(workgroup_bytes))
}

/// `(column stages r, row tile lt)` of the plan for `2^log_n` with tiles of `2^log_tile`.
fn plan_shape(log_n: u32, log_tile: u32) -> (u32, u32) {
    let lt = log_n.min(log_tile);
    (log_n - lt, lt)
}

/// Passes over memory of one NTT of `2^log_n` values per limb on a device with
/// `workgroup_bytes` of workgroup memory (`NttPlan::passes`): the row pass plus
/// `ceil(r / (log_tile - 5))` column passes, `r = log_n - min(log_n, log_tile)`. With 16 KiB: 1
/// up to `2^12`, 2 from `2^13` to `2^17`. Under 4 KiB (no plan) this counts 1-stage column
/// passes, the most a plan could need.
#[must_use]
pub fn ntt_plan_passes(log_n: u32, workgroup_bytes: u32) -> u64 {
    match ntt_log_tile(workgroup_bytes) {
        Some(log_tile) => {
            let (r, _) = plan_shape(log_n, log_tile);
            1 + u64::from(r.div_ceil(log_tile - 5))
        }
        None => 1 + u64::from(log_n),
    }
}

/// Words of compact twiddle table per limb and transform (`NttPlan::twiddle_words`):
/// `4 + 2 max(2^r, 2) + 2 * 2^(lt - 1) + lt 2^r` (constants, column twiddles and companions,
/// local factors and companions, one factor per row tile and stage). With 16 KiB: 4,116 at
/// `2^12`, 4,324 at `2^16`.
#[must_use]
pub fn ntt_twiddle_words(log_n: u32, workgroup_bytes: u32) -> u64 {
    let log_tile = ntt_log_tile(workgroup_bytes).unwrap_or(10);
    let (r, lt) = plan_shape(log_n.max(1), log_tile);
    4 + 2 * (1u64 << r).max(2) + (1u64 << lt) + (u64::from(lt) << r)
}

/// `log2 N` of a record (0 for `N <= 1`).
fn log_n(d: &Dispatch) -> u32 {
    if d.n > 1 {
        63 - d.n.leading_zeros()
    } else {
        0
    }
}

/// Passes over memory of a record: for an NTT its `ntt_passes` when the trace has it, else
/// [`ntt_plan_passes`] on a device with [`Costs::ntt_workgroup_bytes`]; 1 for every other
/// kernel.
#[must_use]
pub fn passes(d: &Dispatch, costs: &Costs) -> u64 {
    if !is_ntt(d) || d.n <= 1 {
        return 1;
    }
    d.ntt_passes.unwrap_or_else(|| ntt_plan_passes(log_n(d), costs.ntt_workgroup_bytes)).max(1)
}

/// Launches of a record (GPU dispatches, copy and clear commands): its `gpu_dispatches` plus
/// `gpu_copies` when the trace has them, else [`passes`] (an NTT pass is one dispatch; every
/// other backend call one).
#[must_use]
pub fn launches(d: &Dispatch, costs: &Costs) -> u64 {
    match d.gpu_dispatches {
        Some(g) => g + d.gpu_copies.unwrap_or(0),
        None => passes(d, costs),
    }
}

/// Passes whose bytes a record counts: all of them for a record with `ntt_passes` (the ledger
/// since the two-pass NTT), one for an older record.
fn counted_passes(d: &Dispatch) -> u64 {
    d.ntt_passes.unwrap_or(1).max(1)
}

/// Table bytes the model reads for a record. An NTT record that counts full twiddle tables (at
/// least `2N` words per limb, the ledger's count before compact tables) reads
/// [`ntt_twiddle_words`] per limb transform (`limb_ntts`, else `limbs`) instead, in the
/// record's word size (ciphertext bytes per residue: 4, or 8 in a 64-bit baseline); a record
/// already under the full size is taken as written. Other kernels: `table_bytes`.
#[must_use]
pub fn table_bytes(d: &Dispatch, costs: &Costs) -> u64 {
    let residues = d.n * d.limbs;
    if !is_ntt(d) || residues == 0 || d.n <= 1 {
        return d.table_bytes;
    }
    let word = (d.ciphertext_bytes() / counted_passes(d) / residues).max(1);
    let transforms = d.limb_ntts.unwrap_or(d.limbs);
    if d.table_bytes < 2 * d.n * word * d.limbs {
        return d.table_bytes;
    }
    ntt_twiddle_words(log_n(d), costs.ntt_workgroup_bytes) * word * transforms
}

/// Integer operations of a dispatch under `opts` on `gpu` (which product [`Options::mul`]
/// selects there; software PRNG and unpack counted only when selected).
#[must_use]
pub fn int_ops(d: &Dispatch, opts: &Options, gpu: &Gpu) -> f64 {
    let c = &opts.costs;
    let costs = if opts.mul.native_on(gpu) { &c.modmul_native } else { &c.modmul_emulated };
    let mut ops = d.modmuls as f64 * costs.of(&d.kernel) + (d.n * d.limbs * passes(d, c)) as f64 * c.per_residue;
    if opts.prng == Prng::Software {
        ops += d.prng_words as f64 / c.words_per_block * c.chacha_block;
    }
    if opts.unpack == Unpack::Software {
        ops += d.unpacked_residues as f64 * c.unpack;
    }
    ops + d.packed_residues as f64 * c.pack
}

/// The cost of one modular multiplication of `kernel` under `opts` on `gpu`.
#[must_use]
pub fn modmul_cost(kernel: &str, opts: &Options, gpu: &Gpu) -> f64 {
    let c = &opts.costs;
    if opts.mul.native_on(gpu) {
        c.modmul_native.of(kernel)
    } else {
        c.modmul_emulated.of(kernel)
    }
}

/// Replays `trace` on `gpu` under `opts`, in order (the L2 state carries from one dispatch to
/// the next).
#[must_use]
pub fn predict(gpu: &Gpu, trace: &[Dispatch], opts: &Options) -> Vec<Prediction> {
    let usable = 0.75 * gpu.l2_bytes();
    let mut recent: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
    let mut tables: std::collections::HashSet<(String, u64, u64)> = std::collections::HashSet::new();
    let dram_bw = gpu.dram_gbs * 1e9;
    let l2_bw = gpu.l2_gbs * 1e9;
    let mut out = Vec::with_capacity(trace.len());
    for d in trace {
        let c = &opts.costs;
        let p = passes(d, c);
        let launches = launches(d, c);
        let per_pass = counted_passes(d) as f64;
        let ct = d.ciphertext_bytes() as f64 / per_pass;
        let written = d.bytes_written as f64 / per_pass;
        let (mut dram, mut hits) = (0.0, 0.0);
        for _ in 0..p {
            let resident: f64 = {
                let mut sum = 0.0;
                for &w in recent.iter().rev() {
                    if sum + w > usable {
                        break;
                    }
                    sum += w;
                }
                sum
            };
            let hit = ct.min(resident);
            hits += hit;
            dram += ct - hit + written;
            recent.push_back(written);
            while recent.len() > 64 {
                recent.pop_front();
            }
        }
        let table_b = table_bytes(d, c);
        let table = table_b as f64;
        let key = (d.kernel.clone(), d.n, table_b);
        if table_b > 0 && table <= usable / 2.0 && tables.contains(&key) {
            hits += table;
        } else {
            dram += table;
            tables.insert(key);
        }
        dram += (d.key_bytes + d.plaintext_bytes) as f64;
        let l2_bytes = (ct + written) * p as f64 + table + (d.key_bytes + d.plaintext_bytes) as f64;
        let mut dram_s = dram / dram_bw;
        if let Unpack::Converter { latency_cycles } = opts.unpack {
            let read_residues = (d.bytes_read as f64 / 4.0).max(1.0);
            let share = (d.unpacked_residues as f64 / read_residues).min(1.0);
            dram_s *= 1.0 + share * latency_cycles / gpu.dram_latency_cycles;
        }
        let l2_s = l2_bytes / l2_bw;
        let ops = int_ops(d, opts, gpu);
        let int_s = ops / gpu.int_ops_per_s();
        let prng_unit_s = match opts.prng {
            Prng::Unit if d.prng_words > 0 => {
                d.prng_words as f64 / (f64::from(gpu.sms) * gpu.prng_unit_words_per_clk_per_sm * gpu.clock_hz())
                    + c.prng_unit_latency_cycles / gpu.clock_hz()
            }
            _ => 0.0,
        };
        let threads = if is_ntt(d) { d.n * d.limbs / 2 } else { d.n * d.limbs };
        let capacity = f64::from(gpu.sms) * f64::from(gpu.resident_threads_per_sm);
        let occupancy = if threads == 0 { 1.0 } else { (threads as f64 / capacity).min(1.0) };
        let launch_s = launches as f64 * gpu.launch_us * 1e-6;
        let terms = [("dram", dram_s), ("l2", l2_s), ("int", int_s), ("prng_unit", prng_unit_s)];
        let (mut bound, mut body) = ("launch", 0.0);
        for (name, t) in terms {
            if t > body {
                bound = name;
                body = t;
            }
        }
        let body = body / occupancy;
        if launch_s > body {
            bound = "launch";
        }
        out.push(Prediction {
            kernel: d.kernel.clone(),
            op: d.op.clone(),
            variant: d.variant.clone(),
            seconds: launch_s + body,
            launches,
            launch_s,
            dram_s,
            l2_s,
            int_s,
            prng_unit_s,
            dram_bytes: dram,
            l2_hit_bytes: hits,
            int_ops: ops,
            occupancy,
            bound,
        });
    }
    out
}

/// Total predicted seconds.
#[must_use]
pub fn total(preds: &[Prediction]) -> f64 {
    preds.iter().map(|p| p.seconds).sum()
}
