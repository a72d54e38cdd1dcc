//! `wgfhe serve` as its users meet it: the built binary in its own process on a loopback
//! ephemeral port, spoken to over raw HTTP/1.1 (so that malformed, truncated and abandoned
//! requests can be sent). Every server here runs `--backend cpu` on a small INSECURE test ring
//! so that the file stays fast in CI; the GPU path is the same code behind the engine trait.
//! Each socket read is bounded by a timeout, so no test can hang.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, clippy::panic, missing_docs)]

mod cnn;
mod common;
mod faults;
mod load;
mod lr;
