//! A bounded fuzz harness for the MNIST application's readers (the integer models' JSON and the
//! IDX files), on stable Rust inside `cargo test`: any panic fails, every input is a model or a
//! typed error. The harness is the library's (`tests/common/fuzz.rs`); iterations and seed come
//! from `WGFHE_FUZZ_ITERS` and `WGFHE_FUZZ_SEED` as there.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

#[path = "../../tests/common/fuzz.rs"]
mod fuzz;

use fuzz::{fuzz, fuzz_json};
use wgfhe_mnist::cnn::{QuantCnn, Requant, CLASSES, POSITIONS, TAPS};
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::mnist;

#[test]
fn model_and_idx_readers_never_panic() {
    let lr = QuantLr::new((0..16).map(|i| i - 8).collect(), 3, 4).unwrap().to_json().unwrap();
    fuzz_json("lr_json", &[lr], |s| {
        let m = QuantLr::from_json(s)?;
        assert_eq!(QuantLr::from_json(&m.to_json()?)?, m);
        Ok(())
    });
    let (c, h) = (1, 2);
    let cnn = QuantCnn {
        channels: c,
        hidden: h,
        conv_w: vec![1; c * TAPS],
        conv_b: vec![0; c],
        act1: Requant { shift: 2, clip: 15 },
        fc1_w: vec![-1; h * c * POSITIONS],
        fc1_b: vec![0; h],
        act2: Requant { shift: 1, clip: 7 },
        fc2_w: vec![2; CLASSES * h],
        fc2_b: vec![0; CLASSES],
    };
    fuzz_json("cnn_json", &[cnn.to_json().unwrap()], |s| {
        let m = QuantCnn::from_json(s)?;
        assert_eq!(QuantCnn::from_json(&m.to_json()?)?, m);
        let _ = m.bounds();
        Ok(())
    });
    let mut images =
        [&0x803u32.to_be_bytes()[..], &2u32.to_be_bytes(), &28u32.to_be_bytes(), &28u32.to_be_bytes()].concat();
    images.extend((0..2 * 784).map(|i| (i % 251) as u8));
    let labels = [&0x801u32.to_be_bytes()[..], &3u32.to_be_bytes(), &[3, 8, 0]].concat();
    let seeds = [images, labels];
    fuzz("idx", &seeds, &seeds, &[28, 784, 0x801, 0x803], false, |b| {
        let images = mnist::read_idx_images(b).map(drop);
        if images.is_ok() {
            return images;
        }
        mnist::read_idx_labels(b).map(drop).or(images)
    });
}
