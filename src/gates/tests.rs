use super::*;

fn setup(name: &str, seed: u8) -> (SecretKey, GateEvaluator) {
    let ctx = GateContext::by_name(name).unwrap();
    let sk = SecretKey::generate(&ctx, &[seed; 32]).unwrap();
    let ek = sk.evaluation_key(&[seed.wrapping_add(1); 32]).unwrap().expand(&ctx).unwrap();
    (sk, GateEvaluator::new(Arc::new(ek)))
}

#[test]
fn toy_gates_truth_tables() {
    let (sk, mut ev) = setup(TOY, 3);
    let mut rng = Sampler::from_seed(&[9; 32], Purpose::Ephemeral, 0);
    for _ in 0..3 {
        for (x, y) in [(false, false), (false, true), (true, false), (true, true)] {
            let (a, b) = (sk.encrypt_bit(x, &mut rng).unwrap(), sk.encrypt_bit(y, &mut rng).unwrap());
            for g in Gate::ALL {
                let c = ev.gate(g, &a, &b).unwrap();
                assert_eq!(sk.decrypt_bit(&c).unwrap(), g.eval(x, y), "{g:?} {x} {y}");
            }
            assert_eq!(sk.decrypt_bit(&ev.not(&a).unwrap()).unwrap(), !x);
        }
    }
}

#[test]
fn seeded_ciphertexts_and_keys_expand_deterministically() {
    let ctx = GateContext::by_name(TOY).unwrap();
    let sk = SecretKey::generate(&ctx, &[1; 32]).unwrap();
    let a = sk.evaluation_key(&[2; 32]).unwrap();
    let b = sk.evaluation_key(&[2; 32]).unwrap();
    assert_eq!(a, b);
    let (ea, eb) = (a.expand(&ctx).unwrap(), b.expand(&ctx).unwrap());
    assert_eq!(ea.bootstrapping_key(), eb.bootstrapping_key());
    assert_eq!(ea.key_switching_key(), eb.key_switching_key());
    assert!(a.stored_bytes() < ea.resident_bytes());
    let mut rng = Sampler::from_seed(&[3; 32], Purpose::Ephemeral, 0);
    let c = sk.encrypt_raw(5, &mut rng).unwrap();
    assert_eq!(c.expand(&ctx).unwrap(), c.expand(&ctx).unwrap());
}

#[test]
fn mismatched_keys_are_typed_errors() {
    let (sk, mut ev) = setup(TOY, 5);
    let (sk2, _) = setup(TOY, 7);
    let mut rng = Sampler::from_seed(&[4; 32], Purpose::Ephemeral, 0);
    let a = sk.encrypt_bit(true, &mut rng).unwrap();
    let b = sk2.encrypt_bit(true, &mut rng).unwrap();
    assert!(matches!(ev.and(&a, &b), Err(Error::GateKeyMismatch { .. })));
    assert!(matches!(sk.decrypt_bit(&b), Err(Error::GateKeyMismatch { .. })));
    // Same key seed under other parameters: another id.
    let ctx = GateContext::new(GateParams { log_bks: 3, ..GateParams::by_name(TOY).unwrap() }).unwrap();
    let sk3 = SecretKey::generate(&ctx, &[5; 32]).unwrap();
    assert_ne!(sk3.id(), sk.id());
    let mut short = a.clone();
    short.a.pop();
    assert!(matches!(ev.and(&a, &short), Err(Error::DimensionMismatch { .. })));
    let ek = sk.evaluation_key(&[1; 32]).unwrap();
    assert!(matches!(ek.expand(&ctx), Err(Error::DimensionMismatch { .. })));
    assert!(matches!(ev.lut(&a, 2, &[0, 1, 2]), Err(Error::GateMessage { .. })));
    assert!(matches!(ev.lut(&a, 2, &[0, 1, 2, 4]), Err(Error::GateMessage { .. })));
    assert!(matches!(sk.encrypt_message(4, 2, &mut rng), Err(Error::GateMessage { .. })));
}

#[test]
fn std128_gates_and_block_binary() {
    for name in [STD128, STD128_BB] {
        let (sk, mut ev) = setup(name, 11);
        let mut rng = Sampler::from_seed(&[6; 32], Purpose::Ephemeral, 0);
        for (x, y) in [(false, true), (true, true)] {
            let (a, b) = (sk.encrypt_bit(x, &mut rng).unwrap(), sk.encrypt_bit(y, &mut rng).unwrap());
            let c = ev.and(&a, &b).unwrap();
            assert_eq!(sk.decrypt_bit(&c).unwrap(), x & y, "{name}");
            let d = ev.xor(&c, &a).unwrap();
            assert_eq!(sk.decrypt_bit(&d).unwrap(), (x & y) ^ x, "{name}");
        }
    }
}

#[test]
fn samplers_match_their_distributions() {
    // Discrete Gaussian: chi-square of 400k samples against the normalised exp(-x^2 / 2 sigma^2)
    // on [-19, 19], bins with expected count >= 20 (|x| <= 12), tails pooled.
    let mut s = Sampler::from_seed(&[42; 32], Purpose::Error, 0);
    let count = 400_000usize;
    let xs = s.gaussian(count);
    let sigma = sampling::SIGMA;
    let rho = |x: f64| (-x * x / (2.0 * sigma * sigma)).exp();
    let total: f64 = (-19..=19).map(|x| rho(f64::from(x))).sum();
    let mut chi2 = 0.0;
    let mut bins = 0;
    let mut tail_obs = 0usize;
    let mut tail_exp = 0.0;
    for x in -19i32..=19 {
        let obs = xs.iter().filter(|&&v| v == x).count();
        let exp = rho(f64::from(x)) / total * count as f64;
        if x.abs() <= 11 {
            chi2 += (obs as f64 - exp).powi(2) / exp;
            bins += 1;
        } else {
            tail_obs += obs;
            tail_exp += exp;
        }
    }
    chi2 += (tail_obs as f64 - tail_exp).powi(2) / tail_exp;
    bins += 1;
    // 23 degrees of freedom: P(chi2 > 60) < 1e-4.
    assert!(chi2 < 60.0, "gaussian chi2 = {chi2} over {bins} bins");
    let mean = xs.iter().map(|&v| f64::from(v)).sum::<f64>() / count as f64;
    let var = xs.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / count as f64 - mean * mean;
    assert!(mean.abs() < 0.03 && (var.sqrt() - sigma).abs() < 0.02, "mean {mean} sd {}", var.sqrt());
    assert!(xs.iter().all(|v| v.abs() <= sampling::GAUSSIAN_BOUND));
    // Ternary and block-binary secrets.
    let t = Sampler::from_seed(&[43; 32], Purpose::Secret, 0).ternary(300_000);
    for v in [-1i8, 0, 1] {
        let c = t.iter().filter(|&&x| x == v).count() as f64;
        assert!((c / 300_000.0 - 1.0 / 3.0).abs() < 0.004, "ternary {v}: {c}");
    }
    let ctx = GateContext::by_name(STD128_BB).unwrap();
    let sk = SecretKey::generate(&ctx, &[44; 32]).unwrap();
    let mut counts = [0usize; 3];
    for pair in sk.lwe.chunks_exact(2) {
        match (pair[0], pair[1]) {
            (0, 0) => counts[0] += 1,
            (1, 0) => counts[1] += 1,
            (0, 1) => counts[2] += 1,
            other => panic!("block {other:?}"),
        }
    }
    assert!(counts.iter().all(|&c| c > 80), "{counts:?}");
}

#[test]
fn lut_bootstrapping_small_messages() {
    let (sk, mut ev) = setup(TOY, 13);
    let mut rng = Sampler::from_seed(&[8; 32], Purpose::Ephemeral, 0);
    for bits in [2u32, 3] {
        let size = 1u32 << bits;
        let table: Vec<u32> = (0..size).map(|m| (m * m + 1) % size).collect();
        for m in 0..size {
            let c = sk.encrypt_message(m, bits, &mut rng).unwrap();
            assert_eq!(sk.decrypt_message(&c, bits).unwrap(), m);
            let r = ev.lut(&c, bits, &table).unwrap();
            assert_eq!(sk.decrypt_message(&r, bits).unwrap(), table[m as usize], "bits {bits} m {m}");
        }
    }
}
