//! `wgfhe-sim`: predicts what wgfhe's kernels would do on GPUs we do not have, from the traffic
//! ledger's traces, with a documented memory-hierarchy model ([`model`]), and says how far to
//! trust it ([`calibrate`]: fitted constants and held-out error on the devices we have).
//! Everything it prints is a model prediction, labelled as such.

pub mod calibrate;
pub mod error;
pub mod gpu;
pub mod model;
pub mod report;
pub mod trace;

pub use error::{Error, Result};
