//! Trains the integer CNN on MNIST and prints its plaintext accuracy:
//! `cargo run --release --example cnn_train -- [epochs] [fc1_l1] [shift1] [shift2] [lr] [shift_pixels] [weight_decay]`.

#![expect(clippy::unwrap_used, reason = "example")]

use std::path::Path;

use wgfhe_mnist::cnn::{train, CnnConfig, Requant};
use wgfhe_mnist::mnist;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: f64| args.get(i).map_or(d, |s| s.parse().unwrap());
    let dir = Path::new(mnist::DEFAULT_DIR);
    if mnist::verify(dir).is_err() {
        mnist::fetch(dir).unwrap();
    }
    let data = mnist::load(dir).unwrap();
    let config = CnnConfig {
        epochs: arg(0, 6.0) as usize,
        fc1_l1: arg(1, 1092.0) as u64,
        act1: Requant { shift: arg(2, 4.0) as u32, clip: 15 },
        act2: Requant { shift: arg(3, 4.0) as u32, clip: 15 },
        learning_rate: arg(4, 0.02) as f32,
        shift_pixels: arg(5, 0.0) as usize,
        weight_decay: arg(6, 0.0) as f32,
        ..CnnConfig::default()
    };
    println!("{config:?}");
    let clock = std::time::Instant::now();
    let model = train(&data.train, &config, |r| {
        println!(
            "epoch {} loss {:.4} train acc {:.4} ({:.0} s)",
            r.epoch,
            r.loss,
            r.train_accuracy,
            clock.elapsed().as_secs_f64()
        );
    })
    .unwrap();
    println!("test accuracy {:.4}  bounds {:?}", model.accuracy(&data.test), model.bounds());
    std::fs::write("target/cnn.json", model.to_json().unwrap()).unwrap();
}
