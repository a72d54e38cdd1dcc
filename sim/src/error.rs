//! Errors of the simulator.

/// Everything that can go wrong reading a trace or a GPU description, or fitting constants.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A trace line is not a ledger record.
    #[error("{path} line {line}: not a ledger record: {reason}")]
    TraceLine {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What the parser said.
        reason: String,
    },
    /// A GPU description did not parse or has an invalid value.
    #[error("GPU description {name}: {reason}")]
    Gpu {
        /// File or built-in name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// No built-in GPU and no file has this name.
    #[error("unknown GPU {0} (built-in: a6000, a100-80gb, h100, h200, apple-m2; or a .toml/.json file)")]
    UnknownGpu(String),
    /// A command-line value is malformed.
    #[error("{what}: {reason}")]
    Argument {
        /// The argument.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Calibration needs timed records (`elapsed_ns`).
    #[error("calibration: {0}")]
    Calibration(String),
}

/// Results of the simulator.
pub type Result<T> = std::result::Result<T, Error>;
