//! The traffic ledger: a backend wrapper that records, for every kernel dispatch, the bytes it
//! reads and writes, the pseudo-random words it generates and the modular multiplications it
//! performs, computed from the shapes of its operands (the same on every backend). It gives the
//! arithmetic intensity of an operation and a trace that a memory-hierarchy model can replay.
//!
//! Trace format: JSON lines, one [`Record`] per dispatch, fields `kernel` (the [`Backend`]
//! method), `n`, `limbs`, `bytes_read`, `bytes_written`, `key_bytes` (the part of `bytes_read`
//! that is key material), `table_bytes` (constant tables: twiddles, conversion matrices,
//! permutations), `plaintext_bytes` (plaintext limbs; only fused kernels know their operands'
//! kinds), `prng_words` (32-bit words of ChaCha20 output), `modmuls`, `unpacked_residues` and
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
//! Counts assume 4-byte residues and one pass over each operand; constant tables are counted
//! once per dispatch at their full size. Buffer copies (`gather_limbs`, `merge_limbs`,
//! `duplicate`) count as kernels too; host transfers (`upload`, `download`) do not (a timed
//! ledger times them apart, [`Ledger::take_transfers`]).

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

use super::wrapper::{BackendWrapper, Kernel, KernelOutput};
use super::Backend;
use crate::error::{Error, Result};

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
    /// Dispatches.
    pub dispatches: u64,
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
            t.dispatches += 1;
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
    timed: bool,
}

impl<B: Backend> Ledger<B> {
    /// Wraps `inner` with an empty ledger.
    #[must_use]
    pub fn new(inner: B) -> Self {
        Self {
            inner,
            records: Arc::new(Mutex::new(Vec::new())),
            transfers: Arc::new(Mutex::new(Transfers::default())),
            timed: false,
        }
    }

    /// Wraps `inner` with an empty ledger that also times every dispatch
    /// ([`Record::elapsed_ns`]). Each dispatch then waits for the device before and after it,
    /// which serialises the queue: use it to attribute time to kernels, not to measure an
    /// operation's total.
    #[must_use]
    pub fn timed(inner: B) -> Self {
        Self { timed: true, ..Self::new(inner) }
    }

    /// Runs `f`; in a timed ledger, with the device synchronised before and after it, also
    /// returns its wall-clock time in nanoseconds.
    fn measure<T>(&self, f: impl FnOnce(&B) -> Result<T>) -> Result<(T, Option<u64>)> {
        if !self.timed {
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
        if let Some(ns) = ns {
            if let Some(last) = self.records.lock().unwrap_or_else(PoisonError::into_inner).last_mut() {
                last.elapsed_ns = Some(ns);
            }
        }
        Ok(out)
    }

    /// Runs the transfer; in a timed ledger, measures it and adds it to [`Ledger::take_transfers`].
    fn transfer<T>(&self, words: usize, run: impl FnOnce(&B) -> Result<T>) -> Result<T> {
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
    /// The record of one dispatch, computed from the shapes of its operands.
    fn record(&self, kernel: &Kernel<'_, B>) -> Result<Record> {
        let name = kernel.name();
        let n = self.n();
        Ok(match *kernel {
            Kernel::Duplicate { words } => self.elementwise(name, words / self.inner.context().n().max(1), 1, 1, 0),
            Kernel::GatherLimbs { positions } => self.elementwise(name, positions.len(), 1, 1, 0),
            Kernel::MergeLimbs { limbs } => self.elementwise(name, limbs, 1, 1, 0),
            Kernel::NttForward { basis } | Kernel::NttInverse { basis } => {
                // Every limb read and written once (in place), the twiddle tables read, and
                // `N/2 log2 N` Shoup multiplications per limb.
                let l = basis.len() as u64;
                let table = l * 2 * n * WORD;
                Record {
                    kernel: name,
                    n,
                    limbs: l,
                    bytes_read: l * n * WORD + table,
                    bytes_written: l * n * WORD,
                    table_bytes: table,
                    modmuls: l * (n / 2) * u64::from(n.trailing_zeros()),
                    ..Record::default()
                }
            }
            Kernel::Add { basis } | Kernel::Sub { basis } => self.elementwise(name, basis.len(), 2, 1, 0),
            Kernel::Neg { basis } => self.elementwise(name, basis.len(), 1, 1, 0),
            Kernel::Mul { basis } => self.elementwise(name, basis.len(), 2, 1, 1),
            Kernel::MulAdd { basis } => self.elementwise(name, basis.len(), 3, 1, 1),
            Kernel::MulScalar { basis } => self.elementwise(name, basis.len(), 1, 1, 1),
            Kernel::Automorphism { basis, .. } => Record {
                kernel: name,
                n,
                limbs: basis.len() as u64,
                bytes_read: basis.len() as u64 * n * WORD + n * WORD,
                bytes_written: basis.len() as u64 * n * WORD,
                table_bytes: n * WORD,
                ..Record::default()
            },
            Kernel::BaseConvert { from, to } => {
                let (l, m) = (from.len() as u64, to.len() as u64);
                let table = (l + l * m) * WORD * 2;
                Record {
                    kernel: name,
                    n,
                    limbs: m,
                    bytes_read: l * n * WORD + table,
                    bytes_written: m * n * WORD,
                    table_bytes: table,
                    modmuls: (l + l * m + m) * n,
                    ..Record::default()
                }
            }
            Kernel::ScaleDown { keep, drop, .. } => {
                let (k, d) = (keep.len() as u64, drop.len() as u64);
                let table = (2 * k + 2 * d + 2 * k * d) * WORD;
                Record {
                    kernel: name,
                    n,
                    limbs: k,
                    bytes_read: (k + d) * n * WORD + table,
                    bytes_written: k * n * WORD,
                    table_bytes: table,
                    modmuls: (d + k * d + 2 * k) * n,
                    ..Record::default()
                }
            }
            Kernel::KeySwitchInnerProduct { digits, basis, .. } => {
                let (l, dn) = (basis.len() as u64, digits as u64);
                let key_bytes = 2 * dn * l * n * WORD;
                Record {
                    kernel: name,
                    n,
                    limbs: l,
                    bytes_read: dn * l * n * WORD + key_bytes,
                    bytes_written: 2 * l * n * WORD,
                    key_bytes,
                    modmuls: 2 * dn * l * n,
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
                    prng_words: 4 * l * n,
                    modmuls: 4 * l * n,
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
                    elapsed_ns: None,
                }
            }
        })
    }
}
