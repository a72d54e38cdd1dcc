//! What several subcommands print or write: JSON or a table, trace files, progress bars.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use wgfhe::Error;

/// Prints `value` as pretty JSON (`what` names it in an encoding error).
pub(crate) fn print_json(what: &'static str, value: &impl Serialize) -> wgfhe::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::json(what, &e))?;
    println!("{text}");
    Ok(())
}

/// Prints `report` as JSON with `json`, else the text `table`.
pub(crate) fn print_report(report: &impl Serialize, table: String, json: bool) -> wgfhe::Result<()> {
    if json {
        print_json("encoding of the report", report)
    } else {
        print!("{table}");
        Ok(())
    }
}

/// A trace file (JSON lines of ledger records) being written, buffered.
pub(crate) struct Trace {
    path: PathBuf,
    out: BufWriter<File>,
}

impl Trace {
    /// Creates the trace file at `path`, if given.
    pub(crate) fn create(path: Option<&Path>) -> wgfhe::Result<Option<Self>> {
        path.map(|p| {
            File::create(p)
                .map(|f| Self { path: p.to_path_buf(), out: BufWriter::new(f) })
                .map_err(|e| Error::io("create the trace file", Some(p), &e))
        })
        .transpose()
    }

    /// The writer the library's runs write the records to.
    pub(crate) fn writer(&mut self) -> &mut dyn Write {
        &mut self.out
    }

    /// Flushes the buffered records to the file.
    pub(crate) fn finish(mut self) -> wgfhe::Result<()> {
        self.out.flush().map_err(|e| Error::io("write the trace file", Some(&self.path), &e))
    }
}

/// The writer of an optional trace, for the library's `Option<&mut dyn Write>` arguments.
pub(crate) fn trace_writer(trace: &mut Option<Trace>) -> Option<&mut dyn Write> {
    trace.as_mut().map(Trace::writer)
}

/// Flushes an optional trace.
pub(crate) fn finish_trace(trace: Option<Trace>) -> wgfhe::Result<()> {
    trace.map_or(Ok(()), Trace::finish)
}

/// The progress bar of an encrypted inference over `total` images (hidden under `--json`).
pub(crate) fn image_bar(total: usize, hidden: bool) -> indicatif::ProgressBar {
    let bar = if hidden { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new(total as u64) };
    bar.set_style(
        indicatif::ProgressStyle::with_template("encrypted inference {bar:30} {pos}/{len} images [{elapsed}]")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar
}

/// A field of `/proc/self/status` in KiB (`VmRSS`, `VmHWM`, ...): Linux only; `None` elsewhere
/// or if it cannot be read.
pub(crate) fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    line.get(field.len() + 1..)?.trim().trim_end_matches("kB").trim().parse().ok()
}

/// The peak resident memory of this process so far in bytes: `VmHWM` of `/proc/self/status`
/// (Linux; `None` elsewhere). It is the whole process: the client's key generation,
/// encryption and decryption, the data and the model count as well as the server's work.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    proc_status_kib("VmHWM").map(|k| k * 1024)
}

/// `peak_rss_bytes` for the text output: `"1234.5 MB"`, or `"unavailable"` off Linux.
pub(crate) fn peak_rss_text() -> String {
    peak_rss_bytes().map_or_else(|| "unavailable".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6))
}

/// Says on stderr what a checkpointed run resumed from (and any fallback from a damaged stage)
/// and what it wrote.
pub(crate) fn checkpoint_notes(checkpoint: Option<&wgfhe_mnist::checkpoint::Checkpoint>) {
    let Some(cp) = checkpoint else { return };
    for note in cp.notes() {
        eprintln!("checkpoint: {note}");
    }
    let writes = cp.writes();
    if !writes.is_empty() {
        let bytes: u64 = writes.iter().map(|w| w.bytes).sum();
        let ms: f64 = writes.iter().map(|w| w.serialize_ms + w.write_ms).sum();
        eprintln!(
            "checkpoint: {} stage(s) written to {} ({:.1} MB, {:.0} ms serialising and writing; {:.0} ms hashing the \
             inputs)",
            writes.len(),
            cp.dir().display(),
            bytes as f64 / 1e6,
            ms,
            cp.inputs_digest_ms()
        );
    }
}

/// The `checkpoint` object of `--json`: the directory, what was resumed, and each stage
/// written with its size and times (`null` without `--checkpoint`).
pub(crate) fn checkpoint_json(checkpoint: Option<&wgfhe_mnist::checkpoint::Checkpoint>) -> serde_json::Value {
    checkpoint.map_or(serde_json::Value::Null, |cp| {
        serde_json::json!({
            "dir": cp.dir().display().to_string(),
            "notes": cp.notes(),
            "stages_written": cp.writes(),
            "inputs_digest_ms": cp.inputs_digest_ms(),
            "job_peak_rss_bytes": cp.job_peak_rss_bytes().max(peak_rss_bytes()),
            "job_peak_rss_note": "the largest VmHWM of this job's processes (across restarts), each read when a stage was written, and this process's",
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_resident_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let rss = proc_status_kib("VmRSS").unwrap_or(0);
            // The high-water mark is at least the current resident set.
            assert!(peak_rss_bytes().is_some_and(|b| b > 0 && b >= rss * 1024));
            // A field whose name is a prefix of another's is not mistaken for it.
            assert!(proc_status_kib("Vm").is_none());
        } else {
            assert!(peak_rss_bytes().is_none());
            assert_eq!(peak_rss_text(), "unavailable");
        }
    }
}
