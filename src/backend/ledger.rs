//! The traffic ledger: a backend wrapper that records, for every kernel dispatch, the bytes it
//! reads and writes, the pseudo-random words it generates and the modular multiplications it
//! performs, computed from the shapes of its operands (the same on every backend). It gives the
//! arithmetic intensity of an operation and a trace that a memory-hierarchy model can replay.
//!
//! Trace format: JSON lines, one [`Record`] per dispatch, fields `kernel` (the [`Backend`]
//! method), `n`, `limbs`, `bytes_read`, `bytes_written`, `key_bytes` (the part of `bytes_read`
//! that is key material), `table_bytes` (constant tables: twiddles, conversion matrices,
//! permutations), `plaintext_bytes` (plaintext limbs; only fused kernels know their operands'
//! kinds), `prng_words` (32-bit ChaCha12 words of first candidates, one per regenerated residue), `modmuls`, `unpacked_residues` and
//! `packed_residues` (residues a fused kernel unpacks on load and packs on store; omitted when 0)
//! and, from a timed ledger only,
//! `elapsed_ns` (the dispatch's wall-clock time, device synchronised around it). Ciphertext bytes are
//! `bytes_read - key_bytes - table_bytes - plaintext_bytes`. Bit-packed operands count their
//! packed size.
//!
//! `wgfhe bench --trace FILE` writes these records with two more fields first, `op` (the
//! operation being measured) and `variant` (the BXT variant), so a replay can group dispatches
//! by operation.
//!
//! Counts assume 4-byte residues and one pass over each operand (an NTT: one per memory pass of
//! the GPU plan); constant tables are counted once per dispatch at their full size. Buffer copies
//! (`gather_limbs`, `duplicate`) and clears (`zeros`) count as records too; host transfers
//! (`upload`, `download`) do not (a timed ledger times them apart, [`Ledger::take_transfers`]).
//!
//! # What the GPU engine does with the calls
//!
//! Each record also says what the call costs the GPU backend's recording engine
//! (`backend::gpu`): `gpu_dispatches` (compute dispatches: one per NTT memory pass, per
//! key-switching pass, per fused run of outputs; none for a copy or a clear), `gpu_copies` (copy
//! and clear commands: consecutive limbs of a gather are one), `limb_ntts` and `ntt_passes` (an
//! NTT's limbs, and the memory passes of one transform). These come from the same rules the GPU
//! backend follows, evaluated on the call's shapes, so they are the same on every backend: on
//! the CPU backend they say what the calls would dispatch, with the NTT plan of a device with
//! WebGPU's default limits ([`Backend::gpu_ntt_plan`]). [`Ledger::engine`] adds them up with
//! the submissions (the recorded commands are submitted by a flush, a wait or a readback, and
//! when [`MAX_PENDING_COMMANDS`] are pending), readbacks and host uploads (each non-empty
//! upload, plus one parameter-arena write per submission that holds a dispatch: the count of a
//! device without immediates). On the GPU backend, `tests/gpu.rs` checks these counts against
//! the device's own ([`Backend::device_counters`]); with immediates the device writes the arena
//! only for kernels whose parameters do not fit them, so it uploads less.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::fused::{buffer_words, Format};
use super::gpu::{fused_dispatches, MAX_PENDING_COMMANDS, MAX_STORAGE_BUFFERS};
use super::key_switching::INNER_PRODUCT_DIGITS_PER_PASS;
use super::wrapper::{BackendWrapper, Command, InverseForm, Kernel, KernelOutput};
use super::Backend;
use crate::error::{Error, Result};
use crate::math::rounding::Rounding;

/// Bytes per residue.
const WORD: u64 = 4;

/// One dispatch.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Kernel (backend method) name.
    pub kernel: &'static str,
    /// Ring degree.
    pub n: u64,
    /// Limbs of the output.
    pub limbs: u64,
    /// Bytes read from device memory (operands, keys, tables).
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Part of `bytes_read` that is key material.
    pub key_bytes: u64,
    /// Part of `bytes_read` that is constant tables.
    pub table_bytes: u64,
    /// Part of `bytes_read` that is plaintext limbs (fused kernels; element-wise kernels do not
    /// know what their operands are and count them as ciphertext).
    pub plaintext_bytes: u64,
    /// 32-bit words of pseudo-random output generated.
    pub prng_words: u64,
    /// Modular multiplications.
    pub modmuls: u64,
    /// Compute dispatches the GPU backend makes for the call (see the module docs).
    pub gpu_dispatches: u64,
    /// Copy and clear commands the GPU backend records for the call; omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub gpu_copies: u64,
    /// Limb transforms (NTT records); omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub limb_ntts: u64,
    /// Memory passes of one transform on the GPU (NTT records); omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub ntt_passes: u64,
    /// Residues unpacked on load (bit-packed operands of fused kernels); omitted from the trace
    /// when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub unpacked_residues: u64,
    /// Residues packed on store (bit-packed outputs of fused kernels); omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub packed_residues: u64,
    /// Wall-clock nanoseconds of the dispatch, measured only by a [`Ledger::timed`] ledger
    /// (the device is synchronised before and after the kernel, so the time includes its
    /// launch and completion but no other queued work); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ns: Option<u64>,
}

/// Whether a count is zero (fields left out of the trace).
#[expect(clippy::trivially_copy_pass_by_ref, reason = "serde's skip_serializing_if passes a reference")]
fn is_zero(x: &u64) -> bool {
    *x == 0
}

impl Record {
    /// The part of `bytes_read` that is ciphertext limbs.
    #[must_use]
    pub fn ciphertext_bytes(&self) -> u64 {
        self.bytes_read.saturating_sub(self.key_bytes + self.table_bytes + self.plaintext_bytes)
    }
}

/// Totals over records.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Records (backend calls that are kernels, copies or clears).
    pub records: u64,
    /// GPU compute dispatches of those calls.
    pub gpu_dispatches: u64,
    /// Limb transforms.
    pub limb_ntts: u64,
    /// Bytes read.
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Key bytes read.
    pub key_bytes: u64,
    /// Table bytes read.
    pub table_bytes: u64,
    /// Plaintext bytes read.
    pub plaintext_bytes: u64,
    /// PRNG words.
    pub prng_words: u64,
    /// Modular multiplications.
    pub modmuls: u64,
}

impl Totals {
    /// Totals over `records`.
    #[must_use]
    pub fn of(records: &[Record]) -> Self {
        records.iter().fold(Self::default(), |mut t, r| {
            t.records += 1;
            t.gpu_dispatches += r.gpu_dispatches;
            t.limb_ntts += r.limb_ntts;
            t.bytes_read += r.bytes_read;
            t.bytes_written += r.bytes_written;
            t.key_bytes += r.key_bytes;
            t.table_bytes += r.table_bytes;
            t.plaintext_bytes += r.plaintext_bytes;
            t.prng_words += r.prng_words;
            t.modmuls += r.modmuls;
            t
        })
    }

    /// Modular multiplications per byte moved.
    #[must_use]
    pub fn arithmetic_intensity(&self) -> f64 {
        let bytes = self.bytes_read + self.bytes_written;
        if bytes == 0 {
            0.0
        } else {
            self.modmuls as f64 / bytes as f64
        }
    }
}

/// Host transfers ([`Backend::upload`], [`Backend::download`]) timed by a [`Ledger::timed`]
/// ledger; they are not dispatches and are kept apart from the records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Transfers {
    /// Uploads and downloads.
    pub count: u64,
    /// Bytes copied between host and backend.
    pub bytes: u64,
    /// Wall-clock nanoseconds, device synchronised around each transfer.
    pub elapsed_ns: u64,
}

/// Wraps a backend and records every dispatch (a [`BackendWrapper`]: the record of each
/// [`Kernel`] is computed from its operands' shapes before it runs).
#[derive(Debug)]
pub struct Ledger<B: Backend> {
    inner: B,
    records: Arc<Mutex<Vec<Record>>>,
    transfers: Arc<Mutex<Transfers>>,
    engine: Arc<Mutex<Engine>>,
    timed: AtomicBool,
}

/// What the GPU engine did, or would do, with a run of backend calls ([`Ledger::engine`]; the
/// rules are in the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct EngineCounts {
    /// Compute dispatches.
    pub gpu_dispatches: u64,
    /// Copy and clear commands.
    pub gpu_copies: u64,
    /// Queue submissions.
    pub submissions: u64,
    /// Host-to-device writes: non-empty uploads, and one parameter-arena write per submission
    /// that holds a dispatch.
    pub uploads: u64,
    /// Device-to-host readbacks.
    pub readbacks: u64,
    /// Limb transforms.
    pub limb_ntts: u64,
}

/// The counts so far and the commands recorded since the last modelled submission.
#[derive(Debug, Default)]
struct Engine {
    counts: EngineCounts,
    pending: usize,
    pending_dispatch: bool,
}

impl Engine {
    /// Submits what is pending (nothing if nothing is).
    fn submit(&mut self) {
        if self.pending > 0 {
            self.counts.submissions += 1;
            self.counts.uploads += u64::from(self.pending_dispatch);
        }
        self.pending = 0;
        self.pending_dispatch = false;
    }

    /// Records `commands` commands, `dispatch` saying whether they are dispatches; a full
    /// encoder is submitted first, as the device does.
    fn record(&mut self, commands: u64, dispatch: bool) {
        for _ in 0..commands {
            if self.pending >= MAX_PENDING_COMMANDS {
                self.submit();
            }
            self.pending += 1;
            self.pending_dispatch |= dispatch;
        }
    }

    fn add(&mut self, r: &Record) {
        self.counts.gpu_dispatches += r.gpu_dispatches;
        self.counts.gpu_copies += r.gpu_copies;
        self.counts.limb_ntts += r.limb_ntts;
        self.record(r.gpu_copies, false);
        self.record(r.gpu_dispatches, true);
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Upload { words } => self.counts.uploads += u64::from(words > 0),
            Command::Download { words } => {
                if words > 0 {
                    // The copy to the staging buffer, submitted with everything pending.
                    self.record(1, false);
                    self.submit();
                    self.counts.readbacks += 1;
                }
            }
            Command::Zeros { .. } => {}
            Command::Flush | Command::Synchronize => self.submit(),
        }
    }
}

impl<B: Backend> Ledger<B> {
    /// Wraps `inner` with an empty ledger.
    #[must_use]
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            records: Arc::new(Mutex::new(Vec::new())),
            transfers: Arc::new(Mutex::new(Transfers::default())),
            engine: Arc::new(Mutex::new(Engine::default())),
            timed: AtomicBool::new(false),
        }
    }

    /// Wraps `inner` with an empty ledger that also times every dispatch
    /// ([`Record::elapsed_ns`]). Each dispatch then waits for the device before and after it,
    /// which serialises the queue: use it to attribute time to kernels, not to measure an
    /// operation's total.
    #[must_use]
    pub fn timed(inner: B) -> Self {
        let ledger = Self::new(inner);
        ledger.set_timed(true);
        ledger
    }

    /// Turns timing of every dispatch on or off (the synchronisations of a timed ledger are
    /// submissions of their own: count the engine's work with timing off).
    pub fn set_timed(&self, timed: bool) {
        self.timed.store(timed, Ordering::Relaxed);
    }

    /// Whether every dispatch is timed ([`Ledger::set_timed`]).
    #[must_use]
    pub fn is_timed(&self) -> bool {
        self.timed.load(Ordering::Relaxed)
    }

    /// Removes and returns what the GPU engine did, or would do, with the calls so far (see the
    /// module docs; pending commands stay pending).
    pub fn take_engine(&self) -> EngineCounts {
        std::mem::take(&mut self.engine.lock().unwrap_or_else(PoisonError::into_inner).counts)
    }

    /// What the GPU engine did, or would do, with the calls so far.
    #[must_use]
    pub fn engine(&self) -> EngineCounts {
        self.engine.lock().unwrap_or_else(PoisonError::into_inner).counts
    }

    /// Runs `f`; in a timed ledger, with the device synchronised before and after it, also
    /// returns its wall-clock time in nanoseconds.
    fn measure<T>(&self, f: impl FnOnce(&B) -> Result<T>) -> Result<(T, Option<u64>)> {
        if !self.timed.load(Ordering::Relaxed) {
            return Ok((f(&self.inner)?, None));
        }
        self.inner.synchronize()?;
        let start = std::time::Instant::now();
        let out = f(&self.inner)?;
        self.inner.synchronize()?;
        Ok((out, Some(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX))))
    }

    /// Removes and returns the host transfers timed so far (all zero unless timed).
    pub fn take_transfers(&self) -> Transfers {
        std::mem::take(&mut *self.transfers.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The wrapped backend.
    #[must_use]
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// A copy of the records so far.
    #[must_use]
    pub fn records(&self) -> Vec<Record> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Removes and returns the records so far.
    pub fn take(&self) -> Vec<Record> {
        std::mem::take(&mut *self.records.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn n(&self) -> u64 {
        self.inner.context().n() as u64
    }

    fn push(&self, r: Record) {
        self.engine.lock().unwrap_or_else(PoisonError::into_inner).add(&r);
        self.records.lock().unwrap_or_else(PoisonError::into_inner).push(r);
    }

    /// The record of an element-wise kernel over `limbs` limbs with `inputs` operands read,
    /// `outputs` written and `muls` modular multiplications per element.
    fn elementwise(&self, kernel: &'static str, limbs: usize, inputs: u64, outputs: u64, muls: u64) -> Record {
        let words = limbs as u64 * self.n();
        Record {
            kernel,
            n: self.n(),
            limbs: limbs as u64,
            bytes_read: inputs * words * WORD,
            bytes_written: outputs * words * WORD,
            modmuls: muls * words,
            gpu_dispatches: u64::from(words > 0),
            ..Record::default()
        }
    }

    /// The record of a copy of `limbs` limbs in `runs` copy commands.
    fn copy(&self, limbs: usize, runs: u64) -> Record {
        let words = limbs as u64 * self.n();
        Record {
            kernel: "",
            n: self.n(),
            limbs: limbs as u64,
            bytes_read: words * WORD,
            bytes_written: words * WORD,
            gpu_copies: if words > 0 { runs } else { 0 },
            ..Record::default()
        }
    }
}

/// Writes `records` as JSON lines.
pub fn write_trace(records: &[Record], out: &mut impl Write) -> Result<()> {
    for r in records {
        let line =
            serde_json::to_string(r).map_err(|e| Error::InvalidField { field: "trace", reason: trace_error(e) })?;
        writeln!(out, "{line}").map_err(|_| Error::InvalidField { field: "trace", reason: "write failed" })?;
    }
    Ok(())
}

/// A static reason for a record that did not serialise.
fn trace_error(_: serde_json::Error) -> &'static str {
    "trace record did not serialise"
}

impl<B: Backend> BackendWrapper for Ledger<B> {
    type Inner = B;

    fn inner(&self) -> &B {
        &self.inner
    }

    /// Pushes the dispatch's record, then runs it; in a timed ledger, measures it.
    fn dispatch<T: KernelOutput<B::Buffer>>(
        &self,
        kernel: &Kernel<'_, B>,
        run: impl FnOnce(&B) -> Result<T>,
    ) -> Result<T> {
        self.push(self.record(kernel)?);
        let (out, ns) = self.measure(run)?;
        self.set_last_elapsed(ns);
        Ok(out)
    }

    /// Counts the command in the engine model. A clear (`zeros`) is a record of its own (its
    /// bytes written, one clear command), timed like a kernel. A transfer runs and, in a timed
    /// ledger, is measured and added to [`Ledger::take_transfers`].
    fn command<T>(&self, command: Command, run: impl FnOnce(&B) -> Result<T>) -> Result<T> {
        self.engine.lock().unwrap_or_else(PoisonError::into_inner).command(command);
        let words = match command {
            Command::Zeros { words } => {
                let bytes = words as u64 * WORD;
                self.push(Record {
                    kernel: "zeros",
                    n: self.n(),
                    limbs: (words as u64).checked_div(self.n()).unwrap_or(0),
                    bytes_written: bytes,
                    gpu_copies: u64::from(words > 0),
                    ..Record::default()
                });
                let (out, ns) = self.measure(run)?;
                self.set_last_elapsed(ns);
                return Ok(out);
            }
            Command::Upload { words } | Command::Download { words } => words,
            Command::Flush | Command::Synchronize => return run(&self.inner),
        };
        let (out, ns) = self.measure(run)?;
        let Some(ns) = ns else { return Ok(out) };
        let mut t = self.transfers.lock().unwrap_or_else(PoisonError::into_inner);
        t.count += 1;
        t.bytes += words as u64 * WORD;
        t.elapsed_ns = t.elapsed_ns.saturating_add(ns);
        Ok(out)
    }
}

impl<B: Backend> Ledger<B> {
    /// Storage bindings of one GPU kernel: the wrapped device's, or at most what the GPU device
    /// asks an adapter for ([`MAX_STORAGE_BUFFERS`]).
    fn max_bindings(&self) -> usize {
        self.inner.max_fused_buffers().saturating_add(1).min(MAX_STORAGE_BUFFERS as usize)
    }

    /// Sets the time of the last record (a timed ledger's measurement).
    fn set_last_elapsed(&self, ns: Option<u64>) {
        if let Some(ns) = ns {
            if let Some(last) = self.records.lock().unwrap_or_else(PoisonError::into_inner).last_mut() {
                last.elapsed_ns = Some(ns);
            }
        }
    }

    /// The record of one dispatch, computed from the shapes of its operands.
    fn record(&self, kernel: &Kernel<'_, B>) -> Result<Record> {
        let name = kernel.name();
        let n = self.n();
        Ok(match *kernel {
            Kernel::Duplicate { words } => {
                Record { kernel: name, ..self.copy(words / self.inner.context().n().max(1), 1) }
            }
            Kernel::GatherLimbs { positions } => {
                // Copies of consecutive source limbs join into one command.
                let joined = positions.windows(2).filter(|w| matches!(w, [a, b] if a + 1 == *b)).count();
                let runs = positions.len() - joined;
                Record { kernel: name, ..self.copy(positions.len(), runs as u64) }
            }
            Kernel::NttForward { basis } | Kernel::NttInverse { basis } => {
                // Every limb read and written once per memory pass of the GPU plan (in place),
                // the plan's twiddles read, and `N/2 log2 N` Shoup multiplications per limb.
                let plan = self.inner.gpu_ntt_plan()?;
                let (l, passes) = (basis.len() as u64, u64::from(plan.passes()));
                let table = l * plan.twiddle_words() as u64 * WORD;
                Record {
                    kernel: name,
                    n,
                    limbs: l,
                    bytes_read: passes * l * n * WORD + table,
                    bytes_written: passes * l * n * WORD,
                    table_bytes: table,
                    modmuls: l * (n / 2) * u64::from(n.trailing_zeros()),
                    gpu_dispatches: if l > 0 { passes } else { 0 },
                    limb_ntts: l,
                    ntt_passes: passes,
                    ..Record::default()
                }
            }
            Kernel::NttInverseFrom { basis, form, keep } => {
                // The in-place transform's traffic, except that the first pass reads the sources
                // (two for a product, one and the permutation for an automorphism) instead of
                // the buffer, and also writes the formed input when it is kept; a product costs
                // one Barrett product per residue.
                let plan = self.inner.gpu_ntt_plan()?;
                let (l, passes) = (basis.len() as u64, u64::from(plan.passes()));
                let words = l * n * WORD;
                let table = l * plan.twiddle_words() as u64 * WORD;
                let (sources, extra, products) = match form {
                    InverseForm::Copy => (1, 0, 0),
                    InverseForm::Product => (2, 4 * l * WORD, l * n),
                    InverseForm::Automorphism(_) => (1, n * WORD, 0),
                };
                Record {
                    kernel: name,
                    n,
                    limbs: l,
                    bytes_read: (passes - 1 + sources) * words + table + extra,
                    bytes_written: (passes + u64::from(keep)) * words,
                    table_bytes: table + extra,
                    modmuls: l * (n / 2) * u64::from(n.trailing_zeros()) + products,
                    gpu_dispatches: if l > 0 { passes } else { 0 },
                    limb_ntts: l,
                    ntt_passes: passes,
                    ..Record::default()
                }
            }
            Kernel::Add { basis } | Kernel::Sub { basis } => self.elementwise(name, basis.len(), 2, 1, 0),
            Kernel::Neg { basis } => self.elementwise(name, basis.len(), 1, 1, 0),
            Kernel::Mul { basis } => self.elementwise(name, basis.len(), 2, 1, 1),
            Kernel::MulAdd { basis } => self.elementwise(name, basis.len(), 3, 1, 1),
            Kernel::Tensor { basis } => self.elementwise(name, basis.len(), 4, 3, 4),
            Kernel::MulScalar { basis } => self.elementwise(name, basis.len(), 1, 1, 1),
            Kernel::Automorphism { basis, .. } => Record {
                kernel: name,
                n,
                limbs: basis.len() as u64,
                bytes_read: basis.len() as u64 * n * WORD + n * WORD,
                bytes_written: basis.len() as u64 * n * WORD,
                table_bytes: n * WORD,
                gpu_dispatches: u64::from(!basis.is_empty()),
                ..Record::default()
            },
            Kernel::BaseConvert { parts, .. } => {
                // Per part: its input limbs read once, its output written, the tables (a header,
                // four words per input prime; per tile of 8 outputs their constants and the
                // matrix with Shoup companions) and one Shoup product per input residue, per
                // matrix entry and per output.
                let mut r = Record { kernel: name, n, ..Record::default() };
                for (from, to) in parts {
                    let (l, m) = (from.len() as u64, to.len() as u64);
                    let tiles = m.div_ceil(8);
                    let table = (8 + 4 * l + 24 * tiles + 16 * l * tiles) * WORD;
                    r.limbs += m;
                    r.bytes_read += l * n * WORD + table;
                    r.bytes_written += m * n * WORD;
                    r.table_bytes += table;
                    r.modmuls += (l + l * m + m) * n;
                }
                // Every part in one dispatch.
                r.gpu_dispatches = u64::from(r.limbs > 0);
                r
            }
            Kernel::ScaleDownCorrection { keep, drop, rounding, polys, .. } => {
                // Per polynomial: the dropped limbs read, the correction written; prime by
                // prime with several primes, the digits y_s also go through a scratch buffer
                // (written once, read once). Products: f_s per dropped residue, the triangle
                // (prime by prime), one per (kept prime, dropped prime).
                let (k, d, p) = (keep.len() as u64, drop.len() as u64, polys as u64);
                let staged = rounding == Rounding::PrimeByPrime && d > 1;
                let tri = if rounding == Rounding::PrimeByPrime { d * d.saturating_sub(1) / 2 } else { 0 };
                let scratch = if staged { d * n * WORD } else { 0 };
                let table = (4 * d + 3 * tri + k.div_ceil(8) * (8 + 24 * d)) * WORD;
                Record {
                    kernel: name,
                    n,
                    limbs: p * k,
                    bytes_read: p * (d * n * WORD + scratch) + table,
                    bytes_written: p * (k * n * WORD + scratch),
                    table_bytes: table,
                    modmuls: p * (d + tri + k * d) * n,
                    // The staged digits, then the corrections, each once for all polynomials.
                    gpu_dispatches: if k > 0 && p > 0 { u64::from(staged) + 1 } else { 0 },
                    ..Record::default()
                }
            }
            Kernel::KeySwitchInnerProduct { input } => {
                // Output limbs L (q then p), digits D, stored a_j S: every digit residue and key
                // residue read once (packed b_j at their bit widths), the seeded a_j regenerated (one ChaCha12
                // word per residue, a block per 16), two sums written; a pass binds at most
                // INNER_PRODUCT_DIGITS_PER_PASS digits and every later pass reads and rewrites
                // the sums. Products: two per digit and residue (regeneration needs none), and
                // the reductions of the 64-bit sums (2 per output residue per pass).
                let l = (input.q_basis.len() + input.p_basis.len()) as u64;
                let d = input.digits.len() as u64;
                let stored = input.stored_digits() as u64;
                let passes = d.div_ceil(INNER_PRODUCT_DIGITS_PER_PASS as u64).max(1);
                let packed = input.packed_digits() as u64;
                let words = l * n * WORD;
                // A packed b_j is read at its primes' bit widths (whole words per limb).
                let key_basis: Vec<usize> = input.q_basis.iter().chain(input.p_basis).copied().collect();
                let packed_words = buffer_words(self.inner.context(), &key_basis, Format::Packed)? as u64;
                let key_bytes = (d - packed + stored) * words + packed * packed_words * WORD;
                let table = (8 + 4 * d) * l * WORD;
                Record {
                    kernel: name,
                    n,
                    limbs: 2 * l,
                    bytes_read: d * words + key_bytes + (passes - 1) * 2 * words + table,
                    bytes_written: passes * 2 * words,
                    key_bytes,
                    table_bytes: table,
                    prng_words: (d - stored) * l * n,
                    modmuls: (2 * d + 2 * passes) * l * n,
                    // One dispatch per pass; without digits the sums are cleared instead.
                    gpu_dispatches: if d > 0 { passes } else { 0 },
                    gpu_copies: if d > 0 || l == 0 { 0 } else { 3 },
                    ..Record::default()
                }
            }
            Kernel::Uniform { basis, .. } => {
                let l = basis.len() as u64;
                Record {
                    kernel: name,
                    n,
                    limbs: l,
                    bytes_written: l * n * WORD,
                    prng_words: l * n,
                    gpu_dispatches: u64::from(l > 0),
                    ..Record::default()
                }
            }
            Kernel::Fused { program } => {
                let t = program.traffic(self.inner.context())?;
                Record {
                    kernel: name,
                    n,
                    limbs: program.basis.len() as u64,
                    bytes_read: t.ciphertext_bytes + t.key_bytes + t.plaintext_bytes + t.table_bytes,
                    bytes_written: t.bytes_written,
                    key_bytes: t.key_bytes,
                    table_bytes: t.table_bytes,
                    plaintext_bytes: t.plaintext_bytes,
                    prng_words: t.prng_words,
                    modmuls: t.modmuls,
                    unpacked_residues: t.unpacked_residues,
                    packed_residues: t.packed_residues,
                    gpu_dispatches: fused_dispatches(program, self.max_bindings())?,
                    ..Record::default()
                }
            }
        })
    }
}
