//! The model: a per-dispatch roofline with a working-set (L2) reuse estimate, occupancy and
//! launch overhead. It is a model, not a measurement; every output says so.
//!
//! For each dispatch of a trace:
//! * **Passes.** An NTT over `N = 2^k` runs `1 + max(0, k - 11)` passes over its limbs (our
//!   `ntt.wgsl` does every stage whose blocks exceed a 2,048-value workgroup tile as its own
//!   dispatch, then one tile pass); every other kernel one. Each pass is one launch and moves the
//!   record's ciphertext and output bytes once; tables are read once in all.
//! * **Memory.** All bytes go through L2 (`l2_gbs`). Ciphertext reads hit L2 up to the bytes
//!   written by the most recent passes that together fit in 3/4 of L2 (producer-consumer reuse);
//!   a constant table hits once the same (kernel, N, size) has been read and it fits in 3/8 of
//!   L2; key and plaintext reads always come from DRAM; every written byte goes to DRAM. With a
//!   bit-to-integer converter, its latency `c` is added to the DRAM latency `L` of the packed
//!   share of the reads, which (Little's law, same bytes in flight) scales their DRAM time by
//!   `(L + c) / L`.
//! * **Integer work** in 32-bit operations at `sms * int_ops_per_clk_per_sm * clock`: each
//!   modular multiplication costs [`Costs::modmul_emulated`] (WGSL has no `mul_hi`: the 32x32
//!   product is built from four 16-bit products) or [`Costs::modmul_native`] with a native high
//!   product; each output residue [`Costs::per_residue`] per pass; software ChaCha20
//!   [`Costs::chacha_block`] per block, and our kernels compute one block per residue and use 4
//!   of its 16 words; software unpack/pack [`Costs::unpack`] / [`Costs::pack`] per residue.
//! * **PRNG unit** (BXT hardware option): words at `prng_unit_words_per_clk_per_sm` per SM per
//!   clock, in parallel with the rest, plus its 40-cycle latency once.
//! * **Time** = `passes * launch_us + max(DRAM, L2, integer, PRNG unit) / occupancy`, occupancy
//!   = min(1, threads / (sms * resident_threads_per_sm)), one thread per output residue (half
//!   for an NTT pass).

use serde::Serialize;

use crate::gpu::Gpu;
use crate::trace::Dispatch;

/// Integer-operation costs of our kernels (counted from the WGSL in `shaders/`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Costs {
    /// One modular multiplication with the emulated 32x32->64 product (`mul_wide` from four
    /// 16-bit products, then Barrett or Shoup).
    pub modmul_emulated: f64,
    /// One modular multiplication with a native high product.
    pub modmul_native: f64,
    /// Indexing, loads/stores and a modular add per output residue and pass.
    pub per_residue: f64,
    /// One ChaCha20 block in software (10 double rounds of 8 quarter rounds of 4 adds, 4 xors
    /// and 4 rotates, a rotate being 3 operations in WGSL, plus the final adds).
    pub chacha_block: f64,
    /// Words of each block a residue uses (ours: 4 of 16, one block per residue).
    pub words_per_block: f64,
    /// Unpacking one residue in software (bit offset, two loads, shifts, or, mask).
    pub unpack: f64,
    /// Packing one residue in software.
    pub pack: f64,
    /// `log2` of the NTT tile done in workgroup memory.
    pub ntt_log_tile: u32,
    /// Latency of the hardware PRNG unit in cycles.
    pub prng_unit_latency_cycles: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Self {
            modmul_emulated: 30.0,
            modmul_native: 8.0,
            per_residue: 6.0,
            chacha_block: 1632.0,
            words_per_block: 4.0,
            unpack: 8.0,
            pack: 10.0,
            ntt_log_tile: 11,
            prng_unit_latency_cycles: 40.0,
        }
    }
}

/// How pseudo-random `a` halves are produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prng {
    /// Software ChaCha20 in the kernel (what our kernels do).
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
    /// A native 32x32 high product instead of the emulated one.
    pub native_mulhi: bool,
    /// Kernel costs.
    pub costs: Costs,
}

impl Default for Options {
    fn default() -> Self {
        Self { prng: Prng::Software, unpack: Unpack::Software, native_mulhi: false, costs: Costs::default() }
    }
}

impl Options {
    /// Software PRNG and unpack: our kernels as they are.
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
        let mulhi = if self.native_mulhi { ", native mulhi" } else { "" };
        format!("{prng}, {unpack}{mulhi}")
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
    /// Launches (passes).
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

/// NTT passes for a record.
#[must_use]
pub fn passes(d: &Dispatch, costs: &Costs) -> u64 {
    if matches!(d.kernel.as_str(), "ntt_forward" | "ntt_inverse") && d.n > 1 {
        let log_n = 63 - u64::from(d.n.leading_zeros());
        1 + log_n.saturating_sub(u64::from(costs.ntt_log_tile))
    } else {
        1
    }
}

/// Integer operations of a dispatch under `opts` (software PRNG and unpack counted only when
/// selected).
#[must_use]
pub fn int_ops(d: &Dispatch, opts: &Options) -> f64 {
    let c = &opts.costs;
    let modmul = if opts.native_mulhi { c.modmul_native } else { c.modmul_emulated };
    let mut ops = d.modmuls as f64 * modmul + (d.n * d.limbs * passes(d, c)) as f64 * c.per_residue;
    if opts.prng == Prng::Software {
        ops += d.prng_words as f64 * c.chacha_block / c.words_per_block;
    }
    if opts.unpack == Unpack::Software {
        ops += d.unpacked_residues as f64 * c.unpack;
    }
    ops + d.packed_residues as f64 * c.pack
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
        let ct = d.ciphertext_bytes() as f64;
        let written = d.bytes_written as f64;
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
        let table = d.table_bytes as f64;
        let key = (d.kernel.clone(), d.n, d.table_bytes);
        if d.table_bytes > 0 && table <= usable / 2.0 && tables.contains(&key) {
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
        let ops = int_ops(d, opts);
        let int_s = ops / gpu.int_ops_per_s();
        let prng_unit_s = match opts.prng {
            Prng::Unit if d.prng_words > 0 => {
                d.prng_words as f64 / (f64::from(gpu.sms) * gpu.prng_unit_words_per_clk_per_sm * gpu.clock_hz())
                    + c.prng_unit_latency_cycles / gpu.clock_hz()
            }
            _ => 0.0,
        };
        let threads = if p > 1 || d.kernel.starts_with("ntt") { d.n * d.limbs / 2 } else { d.n * d.limbs };
        let capacity = f64::from(gpu.sms) * f64::from(gpu.resident_threads_per_sm);
        let occupancy = if threads == 0 { 1.0 } else { (threads as f64 / capacity).min(1.0) };
        let launch_s = p as f64 * gpu.launch_us * 1e-6;
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
            launches: p,
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
