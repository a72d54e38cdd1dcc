//! Exact non-linear functions on BGV: word-wise comparison of digit vectors with pruning.

pub mod digits;
