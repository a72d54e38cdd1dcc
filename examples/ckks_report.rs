//! Precision and single-operation times of CKKS on a shipped parameter set (default the
//! deepest, `ckks-n16`), scale policy 2^30: precision after one HMULT + rescale and after a
//! chain of squarings, and the median time of HMULT with relinearisation and of one rotation.
//! Keys are generated outside the timed region.
//!
//! Run single-threaded with
//! `RAYON_NUM_THREADS=1 cargo run --release --example ckks_report -- ckks-n16 10 7`
//! (arguments: parameter set, chain depth (capped at the set's depth), timing repetitions,
//! scale policy `single` or `double`).

use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::ckks::{precision_stats, Ckks, ScalePolicy};
use wgfhe::params;

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let mid = samples.len() / 2;
    if samples.len().is_multiple_of(2) {
        (samples.get(mid - 1).copied().unwrap_or(0.0) + samples.get(mid).copied().unwrap_or(0.0)) / 2.0
    } else {
        samples.get(mid).copied().unwrap_or(0.0)
    }
}

fn main() -> wgfhe::Result<()> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "ckks-n16".to_string());
    let depth: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    let policy = match args.next().as_deref() {
        Some("double") => ScalePolicy::Double,
        _ => ScalePolicy::Single,
    };
    let params = params::by_name(&name)?;
    let ckks = Ckks::cpu(&params, policy)?;
    let depth = depth.min(ckks.max_depth());
    let slots = ckks.encoder().max_slots();
    let t0 = Instant::now();
    let sk = ckks.gen_secret_key()?;
    let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
    let keygen = t0.elapsed().as_secs_f64();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let values: Vec<Complex64> = (0..slots).map(|_| Complex64::new(rng.random_range(-0.7..0.7), 0.0)).collect();
    let pt = ckks.encode(&values, ckks.default_scale(), slots, ckks.max_level())?;
    let a = ckks.encrypt_symmetric(&sk, &pt)?;
    let b = ckks.encrypt_symmetric(&sk, &pt)?;

    // Precision after one HMULT + rescale, and after `depth` squarings.
    let sq = ckks.rescale(&ckks.mul_relin(&a, &b, &keys)?)?;
    let want1: Vec<Complex64> = values.iter().map(|v| v * v).collect();
    let one = precision_stats(&want1, &ckks.decrypt(&sk, &sq)?)?;
    // Chain: x * y_1 * ... * y_depth, each y_i a fresh ciphertext of values in [0.9, 1.1]
    // (brought down to the running product's level and scale), so the values stay of order 1.
    let mut ct = ckks.encrypt_symmetric(&sk, &pt)?;
    let mut want = values.clone();
    for _ in 0..depth {
        let y: Vec<Complex64> = (0..slots).map(|_| Complex64::new(rng.random_range(0.9..1.1), 0.0)).collect();
        let yc = ckks.encrypt_symmetric(&sk, &ckks.encode(&y, ct.scale(), slots, ct.level())?)?;
        ct = ckks.rescale(&ckks.mul_relin(&ct, &yc, &keys)?)?;
        want = want.iter().zip(&y).map(|(v, w)| v * w).collect();
    }
    let chain = precision_stats(&want, &ckks.decrypt(&sk, &ct)?)?;

    // Timings, interleaved: HMULT + relinearisation, then one rotation, `reps` times each.
    let (mut t_mul, mut t_rot) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        let r = ckks.mul_relin(&a, &b, &keys)?;
        t_mul.push(t.elapsed().as_secs_f64() * 1e3);
        drop(r);
        let t = Instant::now();
        let r = ckks.rotate(&a, 1, &keys)?;
        t_rot.push(t.elapsed().as_secs_f64() * 1e3);
        drop(r);
    }
    println!(
        "{{\"params\": \"{name}\", \"policy\": \"{policy:?}\", \"n\": {}, \"limbs\": {}, \"special_limbs\": {}, \"dnum\": {}, \"log_qp\": {:.2}, \
         \"threads\": \"{}\", \"keygen_s\": {keygen:.2}, \
         \"hmult_rescale_bits\": {{\"min\": {:.2}, \"mean\": {:.2}, \"median\": {:.2}}}, \
         \"chain_depth\": {depth}, \"chain_bits\": {{\"min\": {:.2}, \"mean\": {:.2}, \"median\": {:.2}}}, \
         \"hmult_relin_ms_median\": {:.1}, \"rotate_ms_median\": {:.1}, \"reps\": {reps}}}",
        params.n(),
        params.q().len(),
        params.p().len(),
        params.dnum(),
        params.log_qp(),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".into()),
        one.min_real,
        one.mean_real,
        one.median_real,
        chain.min_real,
        chain.mean_real,
        chain.median_real,
        median_ms(t_mul),
        median_ms(t_rot),
    );
    Ok(())
}
