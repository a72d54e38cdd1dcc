//! `wgfhe-sim`: predicts what wgfhe's kernels would do on GPUs we do not have, from the traffic
//! ledger's traces, with a documented memory-hierarchy model ([`model`]), and says how far to
//! trust it ([`calibrate`]: fitted constants and held-out error on the devices we have).
//! Everything it prints is a model prediction, labelled as such.
//!
//! The model follows the GPU engine as it is: NTTs in at most two passes over memory up to
//! `N = 2^17` (16 KiB of workgroup memory: 4,096-value tiles) with compact twiddle tables,
//! ChaCha blocks used whole (`prng_words / 16` blocks; [`model::Costs::chacha_block`]), and native
//! 64-bit products on GPUs whose description has `shader_int64` (the data-centre NVIDIA parts
//! and the A6000), emulated ones elsewhere or with `--mul emulated`. Traces that carry the
//! engine's counts (`gpu_dispatches`, `limb_ntts`, `ntt_passes`, see [`trace::Dispatch`]) are
//! taken at their word; older ones (`sim/traces/cnn-baseline` and `cnn-cso`) get the plan for
//! a 16 KiB device.

pub mod calibrate;
pub mod error;
pub mod gpu;
pub mod model;
pub mod report;
pub mod trace;

pub use error::{Error, Result};
