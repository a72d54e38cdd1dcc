//! Ten CKKS hops (a depth-4 layer, then a bootstrap) with the cost and precision ledgers.
//!
//! ```sh
//! cargo run --release --example ckks_bootstrap                      # insecure N = 2^12 ring
//! cargo run --release --example ckks_bootstrap -- ckks-boot-n16 10  # the 128-bit set (minutes per hop)
//! ```
//!
//! Arguments: parameter set (default `insecure-test-ckks-boot-n12`), hops (10), slots (N/2),
//! `log2` of the message-to-`Q_0` ratio (-10), EvalMod degree (40), `K` (16), double angles
//! (3). Each hop prints its stages' times and the error of every slot against the same
//! computation in `f64`: worst, 99.9th percentile and median, in bits (`-log2 |error|`).

use std::time::Instant;

use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use wgfhe::ckks::{BootConfig, Bootstrapper, ChebyshevSeries, Ckks, ScalePolicy};
use wgfhe::params;

fn arg<T: std::str::FromStr>(i: usize, default: T) -> T {
    std::env::args().nth(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

/// Worst, 99.9th percentile and median bits of the slot errors.
fn ledger(want: &[Complex64], got: &[Complex64]) -> (f64, f64, f64) {
    let mut bits: Vec<f64> = want.iter().zip(got).map(|(w, g)| -((w - g).norm().max(1e-300)).log2()).collect();
    bits.sort_by(f64::total_cmp);
    let at = |q: f64| bits.get(((bits.len() - 1) as f64 * q) as usize).copied().unwrap_or(f64::NAN);
    (at(0.0), at(0.001), at(0.5))
}

fn main() -> wgfhe::Result<()> {
    let name: String = arg(1, "insecure-test-ckks-boot-n12".to_string());
    let params = params::by_name(&name).or_else(|_| params::insecure_by_name(&name))?;
    if params.is_insecure() {
        eprintln!("warning: {name} is an insecure test ring (not 128-bit secure)");
    }
    let hops: usize = arg(2, 10);
    let slots: usize = arg(3, params.n() / 2);
    let ckks = Ckks::cpu(&params, ScalePolicy::Double)?;
    // The layer's activation, as in `wgfhe bench --suite boot`: the degree-15 Chebyshev
    // interpolant of sin(pi x / 2) on [-1, 1] (depth 4).
    let series = ChebyshevSeries::interpolate(|x| (std::f64::consts::FRAC_PI_2 * x).sin(), -1.0, 1.0, 15)?;
    let (lo, hi) = series.interval();
    let config = BootConfig {
        log_ratio: arg(4, -10.0),
        degree: arg(5, 40),
        k: arg(6, 16),
        double_angle: arg(7, 3),
        output_scale_factor: 4.0 / (hi - lo),
        ..BootConfig::new(slots)
    };
    let boot = Bootstrapper::new(&ckks, config.clone())?;
    println!(
        "{name}: N = {}, {slots} slots, {config:?}; bootstrap depth {} (output level {}), failure probability {:.3e}",
        params.n(),
        boot.depth(),
        boot.output_level(),
        boot.failure_probability(params.n())?
    );

    let t = Instant::now();
    let sk = ckks.gen_secret_key_from_seed(&[11; 32])?;
    let mut keys = boot.gen_keys(&ckks, &sk, Some(&[12; 32]))?;
    keys.eval = keys.eval.into_seeded().into_packed(ckks.backend())?;
    let prepared = boot.prepare(&ckks)?;
    println!(
        "keys: {} rotation keys, {:.1} MB resident (seeded, packed, each at its level); diagonals {:.1} MB; {:.1} s",
        keys.eval.galois.len(),
        keys.resident_bytes(ckks.backend()) as f64 / 1e6,
        prepared.resident_bytes(ckks.backend()) as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
    let mut want: Vec<Complex64> = (0..slots).map(|_| Complex64::new(rng.random_range(-1.0..1.0), 0.0)).collect();
    let mut ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&want, boot.output_scale(), slots, boot.output_level())?)?;
    println!("hop  layer(ms)  boot(ms)  bits after layer (worst/p99.9/median)  after bootstrap");
    for hop in 1..=hops {
        let t = Instant::now();
        let layered = ckks.eval_chebyshev_to(&ct, &series, &keys.eval, ckks.default_scale())?;
        let layer_ms = t.elapsed().as_secs_f64() * 1e3;
        want = want.iter().map(|z| Complex64::new(series.evaluate(z.re), 0.0)).collect();
        let after_layer = ledger(&want, &ckks.decrypt(&sk, &layered)?);
        let t = Instant::now();
        let mut stages = Vec::new();
        let mut last = Instant::now();
        ct = boot.bootstrap_with(&ckks, &layered, &keys, Some(&prepared), |s| {
            stages.push(format!("{s:?} {:.0}", last.elapsed().as_secs_f64() * 1e3));
            last = Instant::now();
            Ok(())
        })?;
        let boot_ms = t.elapsed().as_secs_f64() * 1e3;
        let after = ledger(&want, &ckks.decrypt(&sk, &ct)?);
        println!(
            "{hop:>3} {layer_ms:>10.0} {boot_ms:>9.0}  {:.1} / {:.1} / {:.1}  {:.1} / {:.1} / {:.1}   [{}]",
            after_layer.0,
            after_layer.1,
            after_layer.2,
            after.0,
            after.1,
            after.2,
            stages.join(", ")
        );
    }
    Ok(())
}
