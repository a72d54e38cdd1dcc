//! Accuracy of the integer CNN under the ReLU faults of a pruned digit sign test, for the plain
//! model and for fault-aware (FA) models trained with those faults, on all 10,000 MNIST test
//! images. A plaintext emulation of the encrypted digit ReLU path (`wgfhe mnist --model cnn
//! --relu digits --keep K`, [`ReluPath::Digits`]), whose encrypted runs check every decrypted
//! score against this emulation.
//!
//! Digits: balanced base 13, 4 digits (|x| <= 14280 holds both pre-activation bounds); keeping
//! the top k of 4 digits leaves the dead zone [-(13^(4-k) - 1)/2, -1] that the sign test
//! reports as non-negative ([`ReluPath::faults`]). Floor/offset digits make the sign test
//! exact at every pruning level, so their accuracy is the unpruned one.
//!
//! `cargo run --release --example cnn_faults -- [epochs]`

#![expect(clippy::unwrap_used, reason = "example")]

use std::path::Path;

use wgfhe_mnist::cnn::{train, CnnConfig};
use wgfhe_mnist::cnn_infer::ReluPath;
use wgfhe_mnist::mnist;

fn main() {
    let epochs: usize = std::env::args().nth(1).map_or(12, |s| s.parse().unwrap());
    let dir = Path::new(mnist::DEFAULT_DIR);
    mnist::fetch(dir).unwrap();
    let data = mnist::load(dir).unwrap();
    let base = CnnConfig { epochs, ..CnnConfig::default() };
    let clock = std::time::Instant::now();
    let plain = train(&data.train, &base, |_| {}).unwrap();
    println!("plain model trained ({:.0} s), bounds {:?}", clock.elapsed().as_secs_f64(), plain.bounds());
    println!("| keep | dead zone | plain model | FA model |");
    println!("|---|---|---|---|");
    for keep in [1.0, 0.75, 0.5, 0.25] {
        let faults = ReluPath::digits(keep).unwrap().faults();
        let plain_acc = plain.accuracy_with(&data.test, faults);
        let fa_acc = if faults.dead_zone == 0 {
            plain_acc
        } else {
            let fa = train(&data.train, &CnnConfig { faults, ..base.clone() }, |_| {}).unwrap();
            fa.accuracy_with(&data.test, faults)
        };
        println!("| {keep:.2} | {} | {:.2}% | {:.2}% |", faults.dead_zone, 100.0 * plain_acc, 100.0 * fa_acc);
    }
}
