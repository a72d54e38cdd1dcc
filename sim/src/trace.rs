//! Ledger traces: JSON lines, one record per dispatch, as written by `wgfhe bench --trace` (with
//! `op` and `variant` labels) and `wgfhe mnist --trace` (without). The fields mirror the main
//! crate's `backend::ledger::Record`; files ending in `.gz` are decompressed. Every field but
//! `kernel` may be missing; the engine's counts `gpu_dispatches`, `limb_ntts` and `ntt_passes`
//! are absent from traces written before the two-pass NTT (`sim/traces/cnn-baseline` and
//! `cnn-cso`), and the model then plans them itself ([`crate::model::passes`],
//! [`crate::model::launches`]).

use std::io::{BufRead, BufReader, Read};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One dispatch of a trace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Dispatch {
    /// Operation label (bench traces only).
    pub op: Option<String>,
    /// BXT variant label (bench traces only).
    pub variant: Option<String>,
    /// Kernel (backend method) name.
    pub kernel: String,
    /// Ring degree.
    pub n: u64,
    /// Output limbs.
    pub limbs: u64,
    /// Bytes read (all kinds).
    pub bytes_read: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Part of `bytes_read` that is key material.
    pub key_bytes: u64,
    /// Part of `bytes_read` that is constant tables.
    pub table_bytes: u64,
    /// Part of `bytes_read` that is plaintext.
    pub plaintext_bytes: u64,
    /// 32-bit ChaCha12 words of first candidates (16 a block; our kernels use all 16, one per residue).
    pub prng_words: u64,
    /// Modular multiplications.
    pub modmuls: u64,
    /// Residues unpacked on load (bit-packed operands).
    pub unpacked_residues: u64,
    /// Residues packed on store (bit-packed outputs).
    pub packed_residues: u64,
    /// Measured wall-clock nanoseconds (timed traces only).
    pub elapsed_ns: Option<u64>,
    /// GPU dispatches of this backend call (newer traces): the model's launches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_dispatches: Option<u64>,
    /// Copy and clear commands of this backend call (newer traces; absent when 0): launches
    /// too, with `gpu_dispatches`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_copies: Option<u64>,
    /// Limb transforms of this backend call (newer traces): the limbs whose twiddle tables an
    /// NTT reads (else `limbs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limb_ntts: Option<u64>,
    /// Passes over memory of ONE transform at this `n` on the recording device (newer traces):
    /// an NTT record's passes (else planned for a 16 KiB device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ntt_passes: Option<u64>,
}

impl Dispatch {
    /// Ciphertext bytes read.
    #[must_use]
    pub fn ciphertext_bytes(&self) -> u64 {
        self.bytes_read.saturating_sub(self.key_bytes + self.table_bytes + self.plaintext_bytes)
    }

    /// The kernel family used in calibration reports.
    #[must_use]
    pub fn family(&self) -> &'static str {
        match self.kernel.as_str() {
            "ntt_forward" | "ntt_inverse" => "ntt",
            "add" | "sub" | "neg" | "mul" | "mul_add" | "mul_scalar" | "tensor" => "elementwise",
            "duplicate" | "gather_limbs" | "merge_limbs" | "zeros" => "copy",
            "fused" => "fused",
            "automorphism" => "automorphism",
            "base_convert" => "base_convert",
            "scale_down" | "scale_down_correction" => "scale_down",
            "key_switch_inner_product" => "key_switch",
            "uniform" => "uniform",
            _ => "other",
        }
    }
}

/// Parses JSON lines (blank lines skipped); `path` names the source in errors.
pub fn parse(path: &str, reader: impl BufRead) -> Result<Vec<Dispatch>> {
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|source| Error::Io { path: path.to_string(), source })?;
        if line.trim().is_empty() {
            continue;
        }
        let d: Dispatch = serde_json::from_str(&line).map_err(|e| Error::TraceLine {
            path: path.to_string(),
            line: i + 1,
            reason: e.to_string(),
        })?;
        out.push(d);
    }
    Ok(out)
}

/// Reads a trace file (gzip if it ends in `.gz`).
pub fn read(path: &std::path::Path) -> Result<Vec<Dispatch>> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| Error::Io { path: name.clone(), source })?;
    let reader: Box<dyn Read> =
        if name.ends_with(".gz") { Box::new(flate2::read::GzDecoder::new(file)) } else { Box::new(file) };
    parse(&name, BufReader::new(reader))
}
