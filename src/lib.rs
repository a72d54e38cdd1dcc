//! # wgfhe
//!
//! GPU-accelerated fully homomorphic encryption over RNS with `u32` residues: BGV and CKKS
//! written once against a kernel-level [`backend::Backend`] trait, with a simple CPU reference
//! backend that is the specification of every kernel and a `wgpu` backend (WGSL kernels) that
//! reproduces it bit for bit. [`backend::BackendChoice::with_backend`] runs a job written once
//! for every backend on the one chosen at run time.
//!
//! Layers, lowest first; each uses only the layers before it (`tests/layers.rs` checks this on
//! the sources):
//!
//! * [`error`]: the one [`Error`] enum.
//! * [`math`]: modular arithmetic ([`math::zq`]), primes, negacyclic NTT, RNS tools, samplers.
//! * [`serial`]: the versioned binary wire format (header, readers and writers, residue blocks).
//! * [`params`]: validated parameter sets, checked against the 2024 security guidelines.
//! * [`ring`]: [`ring::RingContext`], the primes of a set and the tables built from them.
//! * [`backend`]: the kernel set every scheme uses, the CPU reference, the GPU backend, fused
//!   element-wise programs and the traffic ledger.
//! * [`poly`]: [`poly::RnsPoly`], an RNS polynomial on a backend whose representation (`Coeff`
//!   or `Eval`) is part of its type.
//! * [`rlwe`]: keys, encryption, decryption, hybrid key switching, Galois automorphisms.
//! * [`eval`]: the [`eval::Evaluator`] trait BGV and CKKS implement, and the algorithms
//!   written once over it (baby-step giant-step sums, [`eval::bsgs`]).
//! * [`bgv`] and [`ckks`]: the schemes (batch and coefficient encoding, modulus switching; the
//!   canonical-embedding encoder, rescaling, conjugation); beside them [`gates`]: bootstrapped
//!   Boolean gates and small lookup tables (FHEW/TFHE family: LWE mod a power of two, RGSW over
//!   one NTT prime, GINX blind rotation).
//! * [`compress`]: BXT memory compression (seeded halves, bit-packed limbs, fused operations).
//! * [`compare`]: range-restricted lookup tables (ReLU, sign, comparisons), word-wise
//!   comparisons on digit vectors and digit extraction, on BGV ciphertexts.
//!
//! With the `testing` feature, `testing` holds test doubles (a backend that flips one bit of one
//! kernel's output).
//!
//! The crate is only the library: it never spawns a process, prints, or reads or changes the
//! process environment. The applications are workspace members above it: the `wgfhe` command
//! line (`cli/`), the MNIST application (`mnist/`, crate `wgfhe_mnist`) and the benchmark
//! suites (`benches/`, crate `wgfhe_bench`).

pub mod backend;
pub mod bgv;
pub mod ckks;
pub mod compare;
pub mod compress;
pub mod error;
pub mod eval;
pub mod gates;
pub mod math;
pub mod params;
pub mod poly;
pub mod ring;
pub mod rlwe;
pub mod serial;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::{Error, Result};
