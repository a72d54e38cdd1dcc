//! Benchmark suites behind `wgfhe bench`: each runs operations on a backend wrapped in the
//! traffic ledger ([`crate::backend::ledger`]) and reports bytes, PRNG words, modular
//! multiplications and medians of interleaved timings, as rows that serialise to JSON.

pub mod bxt;
pub mod compare;
