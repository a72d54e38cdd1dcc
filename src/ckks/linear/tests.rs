use super::*;
use crate::backend::CpuBackend;
use crate::ckks::{Encoder, ScalePolicy};
use crate::params::{self, TestRing};
use crate::rlwe::KeyRequest;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn random_vec(rng: &mut ChaCha8Rng, n: usize) -> Vec<Complex64> {
    (0..n).map(|_| Complex64::new(rng.random_range(-1.0..1.0), rng.random_range(-1.0..1.0))).collect()
}

fn max_err(a: &[Complex64], b: &[Complex64]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).norm()).fold(0.0, f64::max)
}

fn apply_all(stages: &[LinearTransform], v: &[Complex64]) -> Vec<Complex64> {
    stages.iter().fold(v.to_vec(), |x, s| s.apply(&x).unwrap())
}

#[test]
fn stages_factor_the_special_dft_for_every_budget() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for log in 1..=7u32 {
        let n = 1usize << log;
        let stc = slot_to_coeff_stages(n).unwrap();
        let cts = coeff_to_slot_stages(n).unwrap();
        assert_eq!((stc.len(), cts.len()), (log as usize, log as usize));
        for s in &stc {
            assert!(s.diagonals().len() <= 3, "a stage with {} diagonals", s.diagonals().len());
        }
        for levels in 1..=log as usize {
            let stc_g = group_stages(&stc, levels).unwrap();
            let cts_g = group_stages(&cts, levels).unwrap();
            assert_eq!(stc_g.len(), levels);
            for _ in 0..3 {
                let u = random_vec(&mut rng, n);
                // E u = T rev(u).
                let want = special_dft(&u).unwrap();
                let got = apply_all(&stc_g, &bit_reverse(&u).unwrap());
                assert!(max_err(&want, &got) < 1e-12 * n as f64, "n {n} levels {levels}");
                // E^{-1} z = rev(T^{-1} z).
                let z = random_vec(&mut rng, n);
                let want = special_dft_inverse(&z).unwrap();
                let got = bit_reverse(&apply_all(&cts_g, &z)).unwrap();
                assert!(max_err(&want, &got) < 1e-12 * n as f64, "inverse, n {n} levels {levels}");
            }
            // Each group of s stages has at most 2^(s+1) - 1 diagonals.
            for (g, size) in stc_g.iter().zip(group_sizes(log as usize, levels).unwrap()) {
                assert!(g.diagonals().len() < 1 << (size + 1));
            }
        }
    }
}

#[test]
fn special_dft_is_the_encoders_convention() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let log_n = 7;
    let enc = Encoder::new(log_n).unwrap();
    let big_n = 1usize << log_n;
    for slots in [1usize, 2, 8, 64] {
        let gap = big_n / (2 * slots);
        let c: Vec<f64> = (0..big_n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let u: Vec<Complex64> = (0..slots).map(|k| Complex64::new(c[gap * k], c[gap * k + big_n / 2])).collect();
        let z = enc.decode(&c, 1.0, slots).unwrap();
        assert!(max_err(&special_dft(&u).unwrap(), &z) < 1e-12, "decode, {slots} slots");
        assert!(max_err(&special_dft_inverse(&z).unwrap(), &u) < 1e-12, "inverse, {slots} slots");
        if slots >= 2 {
            let t = group_stages(&slot_to_coeff_stages(slots).unwrap(), 1).unwrap();
            assert!(max_err(&apply_all(&t, &bit_reverse(&u).unwrap()), &z) < 1e-12);
        }
        // Encoding E u at scale 2^40 gives back u on the grid (and 0 off it).
        let scale = 2f64.powi(40);
        let coeffs = enc.encode(&z, scale, slots).unwrap();
        for (k, uk) in u.iter().enumerate() {
            let got = Complex64::new(coeffs[gap * k] as f64, coeffs[gap * k + big_n / 2] as f64) / scale;
            assert!((got - uk).norm() < 1e-9);
        }
    }
}

#[test]
fn dense_round_trip_composition_and_scaling() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let n = 16;
    let rows: Vec<Vec<Complex64>> = (0..n).map(|_| random_vec(&mut rng, n)).collect();
    let a = LinearTransform::from_dense(&rows).unwrap();
    assert_eq!(a.to_dense(), rows);
    let b = LinearTransform::from_dense(&(0..n).map(|_| random_vec(&mut rng, n)).collect::<Vec<_>>()).unwrap();
    let z = random_vec(&mut rng, n);
    let ab = a.then(&b).unwrap();
    assert!(max_err(&ab.apply(&z).unwrap(), &b.apply(&a.apply(&z).unwrap()).unwrap()) < 1e-12);
    let c = Complex64::new(0.5, -2.0);
    let want: Vec<Complex64> = a.apply(&z).unwrap().iter().map(|x| x * c).collect();
    assert!(max_err(&a.scaled(c).unwrap().apply(&z).unwrap(), &want) < 1e-12);
    assert!(matches!(
        LinearTransform::new(16, BTreeMap::from([(16, vec![ONE; 16])])),
        Err(Error::TransformShape { problem: ShapeError::DiagonalOutOfRange { index: 16, slots: 16 } })
    ));
    assert!(matches!(
        LinearTransform::new(16, BTreeMap::from([(1, vec![ONE; 15])])),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        LinearTransform::new(12, BTreeMap::from([(1, vec![ONE; 12])])),
        Err(Error::TransformShape { problem: ShapeError::NotPowerOfTwo { what: "slot count", len: 12 } })
    ));
    assert!(matches!(
        LinearTransform::new(16, BTreeMap::from([(1, vec![ZERO; 16])])),
        Err(Error::TransformShape { problem: ShapeError::NoDiagonal })
    ));
    assert!(matches!(
        BsgsPlan::new(8, [3, 8]),
        Err(Error::TransformShape { problem: ShapeError::DiagonalOutOfRange { index: 8, slots: 8 } })
    ));
    assert!(matches!(
        bit_reverse(&[1, 2, 3]),
        Err(Error::TransformShape { problem: ShapeError::NotPowerOfTwo { what: "length", len: 3 } })
    ));
    for levels in [0, 4] {
        assert_eq!(
            group_stages(&slot_to_coeff_stages(8).unwrap(), levels),
            Err(Error::TransformShape { problem: ShapeError::LevelBudget { levels, stages: 3 } })
        );
    }
    assert!(matches!(
        BootTransforms::new(1024, 1024, 2, 2, 1.0),
        Err(Error::SlotCount { slots: 1024, min: 2, max: 512 })
    ));
    assert!(matches!(BootTransforms::new(1024, 1, 1, 1, 1.0), Err(Error::SlotCount { slots: 1, .. })));
    assert!(matches!(BootTransforms::new(1024, 48, 1, 1, 1.0), Err(Error::SlotCount { slots: 48, .. })));
    assert!(matches!(
        BootTransforms::new(1000, 4, 1, 1, 1.0),
        Err(Error::TransformShape { problem: ShapeError::NotPowerOfTwo { what: "ring degree", len: 1000 } })
    ));
}

#[test]
fn bsgs_plan_covers_every_diagonal_once() {
    for (n, offsets) in [
        (64usize, (0..64).collect::<Vec<_>>()),
        (64, vec![0, 1, 2, 3, 61, 62, 63]),
        (256, vec![0, 16, 32, 48, 208, 224, 240]),
        (8, vec![5]),
    ] {
        let plan = BsgsPlan::new(n, offsets.iter().copied()).unwrap();
        let n1 = plan.n1();
        let mut seen = Vec::new();
        for (&g, terms) in plan.giants() {
            for &(b, k) in terms {
                assert_eq!((g + b) % n, k);
                assert!(b < n1);
                seen.push(k);
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, offsets);
    }
    // Offsets -3..=3 need 2 baby and 2 giant steps (n1 = 2 or 4), not 6 rotations.
    let plan = BsgsPlan::new(64, [0, 1, 2, 3, 61, 62, 63]).unwrap();
    assert_eq!(plan.rotation_count(), 4);
}

#[test]
fn estimated_cost_is_the_planned_cost() {
    for (big_n, slots) in [(64usize, 32usize), (64, 8), (256, 128), (256, 16)] {
        let log = slots.trailing_zeros() as usize;
        for cts in 1..=log {
            for stc in [1, log] {
                let plan = BootTransforms::new(big_n, slots, cts, stc, 1.0).unwrap();
                assert_eq!(plan.cost(), BootCost::estimate(big_n, slots, cts, stc).unwrap(), "{big_n} {slots} {cts}");
                assert_eq!(plan.cost().rotation_keys, plan.rotations().len());
            }
        }
    }
}

/// The cost table of CoeffToSlot and SlotToCoeff for N = 2^16, n = 2^9..2^15 at 2, 3 and 4
/// levels (`--nocapture` prints it), checked against what the shape alone implies: the subring
/// trace takes log2(N / 2n) rotations; each transform consumes its levels; more levels never
/// need more diagonals; no transform rotates more often than it has diagonals; and the distinct
/// rotation keys are at most the rotations made.
#[test]
fn boot_cost_table_follows_from_the_shape() {
    let big_n = 1usize << 16;
    println!("slots levels | trace | CtS diag rot modup | StC diag rot modup | key switches | rotation keys");
    for log_slots in 9..=15u32 {
        let mut previous: Option<BootCost> = None;
        for levels in [2, 3, 4] {
            let c = BootCost::estimate(big_n, 1 << log_slots, levels, levels).unwrap();
            println!(
                "2^{log_slots} {levels} | {} | {} {} {} | {} {} {} | {} | {}",
                c.trace_rotations,
                c.coeff_to_slot.diagonals,
                c.coeff_to_slot.rotations,
                c.coeff_to_slot.mod_ups,
                c.slot_to_coeff.diagonals,
                c.slot_to_coeff.rotations,
                c.slot_to_coeff.mod_ups,
                c.key_switches(),
                c.rotation_keys
            );
            assert_eq!(c.trace_rotations, (15 - log_slots) as usize, "2^{log_slots}");
            for t in [&c.coeff_to_slot, &c.slot_to_coeff] {
                assert_eq!(t.levels, levels);
                assert!(t.rotations <= t.diagonals, "2^{log_slots} {levels}: {t:?}");
                assert!(t.mod_ups <= t.rotations, "2^{log_slots} {levels}: {t:?}");
            }
            let made = c.trace_rotations + c.coeff_to_slot.rotations + c.slot_to_coeff.rotations;
            assert!(c.rotation_keys <= made, "2^{log_slots} {levels}: {} keys, {made} rotations", c.rotation_keys);
            assert_eq!(c.key_switches(), made + 1);
            if let Some(p) = previous {
                assert!(c.coeff_to_slot.diagonals <= p.coeff_to_slot.diagonals, "2^{log_slots} {levels}");
                assert!(c.slot_to_coeff.diagonals <= p.slot_to_coeff.diagonals, "2^{log_slots} {levels}");
            }
            previous = Some(c);
        }
    }
}

// ---- homomorphic ---------------------------------------------------------------------------

struct Fixture {
    ckks: Ckks<CpuBackend>,
    sk: crate::rlwe::SecretKey<CpuBackend>,
}

/// N = 2^10, double scaling (scale ~2^60), 15 chain primes: 6 levels.
fn fixture() -> Fixture {
    let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 15, p_primes: 3, dnum: 5 }, 30).unwrap();
    let ckks = Ckks::cpu(&p, ScalePolicy::Double).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[7; 32]).unwrap();
    Fixture { ckks, sk }
}

/// Key-switching and rescaling noise (a few tens of bits in coefficients at N = 2^10) over the
/// scale ~2^60, and the f64 rounding of the encoder and of the merged diagonals, leave errors
/// near 2^-48 here (measured: 2e-15 to 6e-15). 2^-40 is a margin of about 2^8 over that, and
/// catches any wrong diagonal, rotation or scale (errors of order 1).
const BOUND: f64 = 1.0 / (1u64 << 40) as f64;

#[test]
fn linear_transform_matches_the_plaintext_product() {
    let f = fixture();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for slots in [512usize, 64] {
        let mut diags = BTreeMap::new();
        for k in [0usize, 1, 2, 5, 17, slots - 1, slots - 3, slots / 2] {
            diags.insert(k, random_vec(&mut rng, slots));
        }
        let lt = LinearTransform::new(slots, diags).unwrap().scaled(Complex64::new(0.25, 0.0)).unwrap();
        let keys = f.ckks.gen_evaluation_keys(&f.sk, &KeyRequest::rotations(&lt.rotations())).unwrap();
        assert_eq!(keys.galois.len(), lt.rotations().len());
        let z = random_vec(&mut rng, slots);
        let pt = f.ckks.encode(&z, f.ckks.default_scale(), slots, f.ckks.max_level()).unwrap();
        let ct = f.ckks.encrypt_symmetric(&f.sk, &pt).unwrap();
        let want = lt.apply(&z).unwrap();
        let mut words = Vec::new();
        for baby in [Hoisting::OneByOne, Hoisting::Hoisted] {
            let out = f.ckks.linear_transform_with(&ct, &lt, &keys, baby).unwrap();
            words.push(out.polys().iter().map(|p| p.to_host(f.ckks.backend()).unwrap()).collect::<Vec<_>>());
            assert_eq!(out.level(), ct.level() - 2);
            assert_eq!(out.scale(), ct.scale());
            let got = f.ckks.decrypt(&f.sk, &out).unwrap();
            let err = max_err(&want, &got);
            assert!(err < BOUND, "{slots} slots, {baby:?}: error {err:e}");
        }
        assert!(words[0] == words[1], "hoisted baby steps changed the words");
    }
}

#[test]
fn hoisted_rotations_are_the_plain_rotations_word_for_word() {
    let f = fixture();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let slots = 512;
    let steps = [1i64, 2, 3, 7, 100, -1, 0];
    let keys = f.ckks.gen_evaluation_keys(&f.sk, &KeyRequest::rotations(&steps)).unwrap();
    let z = random_vec(&mut rng, slots);
    let be = f.ckks.backend();
    for level in [f.ckks.max_level(), 8, 3] {
        let ct =
            f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode(&z, f.ckks.default_scale(), slots, level).unwrap()).unwrap();
        let hoisted = f.ckks.rotate_hoisted(&ct, &steps, &keys).unwrap();
        for (&s, h) in steps.iter().zip(&hoisted) {
            let plain = f.ckks.rotate(&ct, s, &keys).unwrap();
            assert_eq!((h.level(), h.scale()), (plain.level(), plain.scale()));
            for (a, b) in h.polys().iter().zip(plain.polys()) {
                assert!(a.to_host(be).unwrap() == b.to_host(be).unwrap(), "step {s} at level {level}");
            }
            let want: Vec<Complex64> =
                (0..slots).map(|j| z[(j as i64 + s).rem_euclid(slots as i64) as usize]).collect();
            assert!(max_err(&f.ckks.decrypt(&f.sk, h).unwrap(), &want) < BOUND, "step {s}");
        }
    }
    assert!(matches!(
        f.ckks.rotate_hoisted(
            &f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode_real(&[1.0]).unwrap()).unwrap(),
            &[5],
            &keys
        ),
        Err(Error::MissingGaloisKey { .. })
    ));
}

/// `r` hoisted rotations at level `l` make one ModUp (`l + 1` inverse and `sum_j (l + 1 + k -
/// alpha_j)` forward limb-NTTs) and `r` ModDowns (`2k + 2(l + 1)` each): against `r` full key
/// switches, `(r - 1)` ModUps fewer (counted through the ledger).
#[test]
fn hoisted_rotations_share_one_mod_up() {
    use crate::backend::ledger::Ledger;
    let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 15, p_primes: 3, dnum: 5 }, 30).unwrap();
    let ckks = Ckks::new(Ledger::new(CpuBackend::new(crate::ring::RingContext::new(&p).unwrap())), ScalePolicy::Double)
        .unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[9; 32]).unwrap();
    let steps = [1i64, 2, 3, 5];
    let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&steps)).unwrap();
    let ntts =
        |records: Vec<crate::backend::ledger::Record>| -> usize { records.iter().map(|r| r.limb_ntts as usize).sum() };
    for level in [14usize, 9, 4] {
        let ct = ckks.encrypt_symmetric(&sk, &ckks.encode(&[ONE], ckks.default_scale(), 8, level).unwrap()).unwrap();
        let (l1, k) = (level + 1, p.p().len());
        let modup: usize = (0..p.dnum())
            .map(|j| p.digit_range(j).filter(|&i| i <= level).count())
            .filter(|&alpha| alpha > 0)
            .map(|alpha| l1 + k - alpha)
            .sum();
        let moddown = 2 * k + 2 * l1;
        ckks.backend().take();
        ckks.rotate_hoisted(&ct, &steps, &keys).unwrap();
        assert_eq!(ntts(ckks.backend().take()), l1 + modup + steps.len() * moddown, "level {level}");
        for &s in &steps {
            ckks.rotate(&ct, s, &keys).unwrap();
        }
        assert_eq!(ntts(ckks.backend().take()), steps.len() * (l1 + modup + moddown), "level {level}");
    }
}

fn boot_keys(f: &Fixture, plan: &BootTransforms) -> EvaluationKeys<CpuBackend> {
    let rot = plan.rotations();
    let keys = f.ckks.gen_evaluation_keys(&f.sk, &KeyRequest::rotations(&rot).with_conjugation()).unwrap();
    // Only the planned rotations (and the conjugation) have keys.
    assert_eq!(keys.galois.len(), rot.len() + 1);
    keys
}

#[test]
fn coeff_to_slot_then_slot_to_coeff_is_the_identity() {
    let f = fixture();
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for (slots, cts, stc) in [(512usize, 3usize, 2usize), (64, 2, 3), (128, 1, 1)] {
        let plan = BootTransforms::new(1024, slots, cts, stc, 1.0).unwrap();
        let keys = boot_keys(&f, &plan);
        let z = random_vec(&mut rng, slots);
        let ct = f
            .ckks
            .encrypt_symmetric(&f.sk, &f.ckks.encode(&z, f.ckks.default_scale(), slots, f.ckks.max_level()).unwrap())
            .unwrap();
        // A sparse encoding is in the subring: the trace multiplies by gap, CtS divides.
        let mid = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
        assert_eq!(mid.level(), ct.level() - 2 * cts);
        let u = special_dft_inverse(&z).unwrap();
        let want_mid = bit_reverse(&u).unwrap();
        let err = max_err(&f.ckks.decrypt(&f.sk, &mid).unwrap(), &want_mid);
        assert!(err < BOUND, "CtS, {slots} slots: error {err:e}");
        let back = f.ckks.slot_to_coeff(&mid, &plan, &keys).unwrap();
        assert_eq!(back.level(), ct.level() - 2 * (cts + stc));
        let err = max_err(&f.ckks.decrypt(&f.sk, &back).unwrap(), &z);
        assert!(err < BOUND, "CtS then StC, {slots} slots: error {err:e}");
    }
}

#[test]
fn coeff_to_slot_puts_known_coefficients_in_the_slots() {
    let f = fixture();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let big_n = 1024;
    for (slots, cts) in [(512usize, 3usize), (32, 2)] {
        let gap = big_n / (2 * slots);
        let plan = BootTransforms::new(big_n, slots, cts, 1, 1.0).unwrap();
        let keys = boot_keys(&f, &plan);
        let scale = f.ckks.default_scale();
        // Every one of the N coefficients set, off the grid too.
        let x: Vec<f64> = (0..big_n).map(|_| rng.random_range(-1.0..1.0)).collect();
        let coeffs: Vec<i128> = x.iter().map(|v| (v * scale).round() as i128).collect();
        let pt = Plaintext { coeffs, scale, slots, level: 11, param_id: f.ckks.params().id() };
        let ct = f.ckks.encrypt_symmetric(&f.sk, &pt).unwrap();
        let out = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
        let u: Vec<Complex64> = (0..slots).map(|k| Complex64::new(x[gap * k], x[gap * k + big_n / 2])).collect();
        let want = bit_reverse(&u).unwrap();
        let err = max_err(&f.ckks.decrypt(&f.sk, &out).unwrap(), &want);
        assert!(err < BOUND, "{slots} slots: error {err:e}");
        // The doubled real and imaginary parts, and back.
        let (re, im) = f.ckks.split_real_imag(&out, &keys).unwrap();
        let re_want: Vec<Complex64> = want.iter().map(|w| Complex64::new(2.0 * w.re, 0.0)).collect();
        let im_want: Vec<Complex64> = want.iter().map(|w| Complex64::new(2.0 * w.im, 0.0)).collect();
        assert!(max_err(&f.ckks.decrypt(&f.sk, &re).unwrap(), &re_want) < BOUND);
        assert!(max_err(&f.ckks.decrypt(&f.sk, &im).unwrap(), &im_want) < BOUND);
        let joined = f.ckks.combine_real_imag(&re, &im).unwrap();
        assert_eq!(joined.level(), out.level());
        let twice: Vec<Complex64> = want.iter().map(|w| w * 2.0).collect();
        assert!(max_err(&f.ckks.decrypt(&f.sk, &joined).unwrap(), &twice) < BOUND);
    }
}

#[test]
fn prepared_transforms_and_planned_keys_give_the_same_words() {
    let f = fixture();
    let be = f.ckks.backend();
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let slots = 64;
    let plan = BootTransforms::new(1024, slots, 2, 3, 0.5).unwrap();
    let keys = boot_keys(&f, &plan);
    let (cts_level, stc_level) = (f.ckks.max_level(), f.ckks.max_level() - 4);
    let key_plan = f.ckks.boot_key_plan(&plan, cts_level, stc_level).unwrap();
    assert_eq!(key_plan.galois.len(), keys.galois.len());
    assert!(key_plan.galois.values().any(|&l| l < cts_level));
    // Every key at the highest level it is used at: fewer bytes, the same words.
    let reduced = keys.reduced_to(be, &key_plan).unwrap();
    assert!(reduced.resident_bytes(be) < keys.resident_bytes(be));
    let prepared = f.ckks.prepare_boot(&plan, cts_level, stc_level).unwrap();
    assert_eq!((prepared.cts_level(), prepared.stc_level()), (Some(cts_level), Some(stc_level)));
    let z = random_vec(&mut rng, slots);
    let ct =
        f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode(&z, f.ckks.default_scale(), slots, cts_level).unwrap()).unwrap();
    let words = |c: &Ciphertext<CpuBackend>| c.polys().iter().map(|p| p.to_host(be).unwrap()).collect::<Vec<_>>();
    let a = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
    let b = f.ckks.coeff_to_slot_prepared(&ct, &prepared, &reduced).unwrap();
    assert!(words(&a) == words(&b));
    let (ra, ia) = f.ckks.split_real_imag(&a, &keys).unwrap();
    let (rb, ib) = f.ckks.split_real_imag(&b, &reduced).unwrap();
    assert!(words(&ra) == words(&rb) && words(&ia) == words(&ib));
    assert_eq!(a.level(), stc_level);
    let c = f.ckks.slot_to_coeff(&a, &plan, &keys).unwrap();
    let d = f.ckks.slot_to_coeff_prepared(&b, &prepared, &reduced).unwrap();
    assert!(words(&c) == words(&d));
    // CtS scaled by 0.5: StC gives back z / 2.
    let half: Vec<Complex64> = z.iter().map(|v| v * 0.5).collect();
    assert!(max_err(&f.ckks.decrypt(&f.sk, &d).unwrap(), &half) < BOUND);
    // A prepared transform runs at its level only.
    let low = f.ckks.drop_to_level(&ct, cts_level - 1).unwrap();
    assert!(matches!(f.ckks.coeff_to_slot_prepared(&low, &prepared, &reduced), Err(Error::LevelMismatch { .. })));
}

#[test]
fn transforms_refuse_mismatched_inputs() {
    let f = fixture();
    let plan = BootTransforms::new(1024, 64, 2, 2, 1.0).unwrap();
    let keys = EvaluationKeys::default();
    let ct = f.ckks.encrypt_symmetric(&f.sk, &f.ckks.encode(&[ONE], f.ckks.default_scale(), 32, 11).unwrap()).unwrap();
    assert!(matches!(f.ckks.coeff_to_slot(&ct, &plan, &keys), Err(Error::DimensionMismatch { .. })));
    let lt = LinearTransform::new(32, BTreeMap::from([(1, vec![ONE; 32])])).unwrap();
    assert!(matches!(f.ckks.linear_transform(&ct, &lt, &keys), Err(Error::MissingGaloisKey { .. })));
}

/// The time of one CoeffToSlot (full slots, 3 levels) on the N = 2^10 test ring (run in
/// release with `--ignored --nocapture`; prints, asserts nothing about time).
#[test]
#[ignore = "timing, printed only"]
fn time_one_coeff_to_slot() {
    let f = fixture();
    // Building the N = 2^16, 2^15-slot transforms in the clear (3 levels each).
    let t = std::time::Instant::now();
    let big = BootTransforms::new(1 << 16, 1 << 15, 3, 3, 1.0).unwrap();
    println!("BootTransforms::new(2^16, 2^15, 3, 3): {:?}", t.elapsed());
    assert_eq!(big.cost(), BootCost::estimate(1 << 16, 1 << 15, 3, 3).unwrap());
    for (slots, levels) in [(512usize, 3usize), (512, 2), (512, 4)] {
        let plan = BootTransforms::new(1024, slots, levels, levels, 1.0).unwrap();
        let keys =
            f.ckks.gen_evaluation_keys(&f.sk, &KeyRequest::rotations(&plan.rotations()).with_conjugation()).unwrap();
        let ct = f
            .ckks
            .encrypt_symmetric(&f.sk, &f.ckks.encode(&[ONE], f.ckks.default_scale(), slots, 14).unwrap())
            .unwrap();
        let t = std::time::Instant::now();
        let out = f.ckks.coeff_to_slot(&ct, &plan, &keys).unwrap();
        let clear = t.elapsed();
        let prepared = f.ckks.prepare_boot(&plan, 14, 14).unwrap();
        let t = std::time::Instant::now();
        let again = f.ckks.coeff_to_slot_prepared(&ct, &prepared, &keys).unwrap();
        println!(
            "CtS N=2^10 {slots} slots {levels} levels at level 14: {clear:?}, prepared diagonals {:?} ({:?})",
            t.elapsed(),
            plan.cost().coeff_to_slot
        );
        assert_eq!(again.level(), out.level());
        assert_eq!(out.level(), 14 - 2 * levels);
    }
}
