//! The CKKS scheme over the shared RLWE core (in progress).

pub mod encoder;
pub mod precision;
