//! CKKS in a few lines: encrypt a vector, evaluate a small polynomial and a rotation-sum,
//! decrypt, and print the precision statistics against the same computation in f64.
//!
//! Run with `cargo run --release --example ckks_basics`.

use num_complex::Complex64;
use wgfhe::ckks::{precision_stats, Ckks, ScalePolicy};
use wgfhe::params;
use wgfhe::rlwe::KeyRequest;

fn main() -> wgfhe::Result<()> {
    // A shipped 128-bit set: N = 2^13, six 30-bit primes, scale 2^30 (one prime per level).
    let params = params::by_name("ckks-n13")?;
    let ckks = Ckks::cpu(&params, ScalePolicy::Single)?;
    let slots = 16;
    let sk = ckks.gen_secret_key()?;
    // Rotation keys for the steps of a rotation-sum over 16 slots.
    let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, 2, 4, 8]))?;

    let x: Vec<f64> = (0..slots).map(|i| (i as f64 - 7.5) / 8.0).collect();
    let pt = ckks.encode_real(&x)?;
    let ct = ckks.encrypt_symmetric(&sk, &pt)?;
    println!("encrypted {slots} values at scale 2^{:.1}, level {}", ct.scale().log2(), ct.level());

    // p(x) = 0.5 x^2 + x + 0.25: one HMULT, one constant multiplication, two rescales.
    let x2 = ckks.rescale(&ckks.mul_relin(&ct, &ct, &keys)?)?;
    let half_x2 = ckks.rescale(&ckks.mul_const(&x2, Complex64::new(0.5, 0.0))?)?;
    // x has scale Delta; 0.5 x^2 has scale Delta^2 / q (the scale drifts): align x explicitly.
    let x_up = ckks.drop_to_level(&ct, half_x2.level() + 1)?;
    let x_aligned = ckks.rescale_to(&x_up, half_x2.scale())?;
    let poly = ckks.add_const(&ckks.add(&half_x2, &x_aligned)?, Complex64::new(0.25, 0.0))?;
    let want_poly: Vec<Complex64> = x.iter().map(|&v| Complex64::new(0.5 * v * v + v + 0.25, 0.0)).collect();
    let got = ckks.decrypt(&sk, &poly)?;
    println!("p(x) = 0.5 x^2 + x + 0.25 at level {}:\n{}", poly.level(), precision_stats(&want_poly, &got)?);

    // Rotation-sum: after log2(slots) rotate-and-add steps every slot holds the total.
    let mut acc = ckks.encrypt_symmetric(&sk, &pt)?;
    for k in [1, 2, 4, 8] {
        acc = ckks.add(&acc, &ckks.rotate(&acc, k, &keys)?)?;
    }
    let total: f64 = x.iter().sum();
    let want_sum = vec![Complex64::new(total, 0.0); slots];
    let got = ckks.decrypt(&sk, &acc)?;
    println!("rotation-sum (total {total}):\n{}", precision_stats(&want_sum, &got)?);
    Ok(())
}
