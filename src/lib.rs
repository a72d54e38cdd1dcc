//! # wgfhe
//!
//! GPU-accelerated fully homomorphic encryption over RNS with `u32` residues: BGV and CKKS
//! written once against a kernel-level [`backend::Backend`] trait, with a simple CPU reference
//! backend that is the specification of every kernel. [`backend::BackendChoice::with_backend`]
//! runs a job written once for every backend on the one chosen at run time.
//!
//! Layers (each depends only on the ones above it):
//!
//! * [`math`]: modular arithmetic ([`math::zq`]), primes, negacyclic NTT, RNS tools, samplers.
//! * [`poly`]: [`poly::RnsPoly`], an RNS polynomial whose representation (`Coeff` or `Eval`) is
//!   part of its type.
//! * [`backend`]: the kernel set every scheme uses, and the CPU reference implementation.
//! * [`rlwe`]: keys, encryption, decryption, hybrid key switching, Galois automorphisms.
//! * [`bgv`]: the BGV scheme (batch and coefficient encoding, modulus switching).
//! * [`ckks`]: the CKKS scheme (canonical-embedding encoder, rescaling, conjugation).
//! * [`compare`]: range-restricted lookup tables (ReLU, sign, comparisons) on BGV ciphertexts.
//! * [`ml`]: MNIST data and plaintext integer models (logistic regression) for encrypted
//!   inference.
//! * [`params`]: validated parameter sets, checked against the 2024 security guidelines.
//! * [`serial`]: the versioned binary wire format.

pub mod backend;
pub mod bench;
pub mod bgv;
pub mod ckks;
pub mod compare;
pub mod compress;
pub mod error;
pub mod math;
pub mod ml;
pub mod params;
pub mod poly;
pub mod ring;
pub mod rlwe;
pub mod serial;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
