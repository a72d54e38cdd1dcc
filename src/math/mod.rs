//! Number theory on `u32` residues: modular arithmetic, primes, NTT, RNS, sampling.

pub(crate) mod elementwise;
pub mod ntt;
pub mod primes;
pub mod rns;
pub mod rounding;
pub mod sampling;
pub mod simd;
pub mod zq;
