//! BXT compression: every operation under every variant materialises to the baseline's bytes,
//! on the CPU backend and (with an adapter) on the GPU; the traffic ledger shows what each
//! technique saves; compressed ciphertexts survive the wire; malformed input is a typed error.
//!
//! Without an adapter the GPU tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` (set in CI)
//! turns that into a failure.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

mod common;

use common::device;
use wgfhe::rlwe::KeyRequest;

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::ledger::{Ledger, Record};
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::{Bgv, Ciphertext, EvaluationKeys, Plaintext};
use wgfhe::compress::{Bxt, BxtCiphertext, Variant, Weight};
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::SecretKey;
use wgfhe::serial::{update_checksum, HEADER_LEN};
use wgfhe::Error;

const INPUTS: usize = 16;

fn params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap()
}

/// Everything one run needs, made from fixed seeds so every variant sees the same ciphertexts.
struct Setup<B: Backend> {
    bgv: Bgv<B>,
    sk: SecretKey<B>,
    values: Vec<Vec<u64>>,
    weight: Plaintext,
    weight_values: Vec<u64>,
    ints: Vec<i64>,
}

fn setup<B: Backend>(backend: B) -> Setup<B> {
    let bgv = Bgv::new(backend).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[7; 32]).unwrap();
    let t = u64::from(bgv.plaintext_modulus());
    let slots = bgv.encoder().slots();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let values: Vec<Vec<u64>> = (0..INPUTS).map(|_| (0..slots).map(|_| rng.random_range(0..t)).collect()).collect();
    let weight_values: Vec<u64> = (0..slots).map(|_| rng.random_range(0..16)).collect();
    let weight = bgv.encoder().encode(&weight_values).unwrap();
    let ints = (0..INPUTS).map(|_| rng.random_range(-8i64..8)).collect();
    Setup { bgv, sk, values, weight, weight_values, ints }
}

/// One operation's materialised result and decryption.
struct Outcome {
    op: &'static str,
    words: Vec<Vec<u32>>,
    slots: Vec<u64>,
}

fn outcome<B: Backend>(s: &Setup<B>, bxt: &Bxt<'_, B>, op: &'static str, ct: &BxtCiphertext<B>) -> Outcome {
    let plain: Ciphertext<B> = bxt.materialize(ct).unwrap();
    let words = plain.polys().iter().map(|p| s.bgv.backend().download(p.buffer()).unwrap()).collect();
    let slots = s.bgv.encoder().decode(&bxt.decrypt(&s.sk, ct).unwrap()).unwrap();
    Outcome { op, words, slots }
}

/// Runs every operation (and chains that feed lazy halves into HMULT, HROTATE and HADD) under
/// `variant`, with a fresh secret key from the same master seed (so the same seeds).
fn run_variant<B: Backend>(make: &dyn Fn() -> B, variant: Variant) -> (Vec<Outcome>, Setup<B>) {
    let s = setup(make());
    let out = run_ops(&s, variant);
    (out, s)
}

fn run_ops<B: Backend>(s: &Setup<B>, variant: Variant) -> Vec<Outcome> {
    let bxt = Bxt::new(&s.bgv, variant);
    let keys = bxt.prepare_keys(s.bgv.gen_evaluation_keys(&s.sk, &KeyRequest::rotations(&[1])).unwrap()).unwrap();
    let xs: Vec<BxtCiphertext<B>> =
        s.values.iter().map(|v| bxt.encrypt(&s.sk, &s.bgv.encoder().encode(v).unwrap()).unwrap()).collect();
    let bias = s.bgv.encoder().encode(&s.values[2]).unwrap();
    let mut out = Vec::new();
    let mut push = |op, ct: &BxtCiphertext<B>| out.push(outcome(s, &bxt, op, ct));
    let padd = bxt.add_plain(&xs[0], &s.weight).unwrap();
    push("padd", &padd);
    let pmult = bxt.mul_plain(&xs[0], &s.weight).unwrap();
    push("pmult", &pmult);
    let hadd = bxt.add(&xs[0], &xs[1]).unwrap();
    push("hadd", &hadd);
    push("hmult", &bxt.mul_relin(&xs[0], &xs[1], &keys).unwrap());
    push("hrotate", &bxt.rotate_columns(&xs[0], 1, &keys).unwrap());
    let terms: Vec<(Weight<'_>, &BxtCiphertext<B>)> =
        s.ints.iter().zip(&xs).map(|(&k, x)| (Weight::Int(k), x)).collect();
    let fsum = bxt.weighted_sum(&terms, Some(&bias)).unwrap();
    push("fused_sum", &fsum);
    let plain_terms =
        vec![(Weight::Plain(&s.weight), &xs[3]), (Weight::Int(3), &xs[4]), (Weight::Plain(&s.weight), &xs[5])];
    push("fused_sum_plain", &bxt.weighted_sum(&plain_terms, None).unwrap());
    push("hmult_of_sum", &bxt.mul_relin(&fsum, &xs[2], &keys).unwrap());
    push("hrotate_of_sum", &bxt.rotate_columns(&fsum, 1, &keys).unwrap());
    push("hadd_of_lazy", &bxt.add(&pmult, &hadd).unwrap());
    push("padd_of_lazy", &bxt.add_plain(&pmult, &bias).unwrap());
    push("pmult_of_lazy", &bxt.mul_int(&fsum, -5).unwrap());
    // Five plaintext weights: the lazy `a` half passes MAX_LAZY_BUFFERS and is materialised.
    let five: Vec<_> = xs[6..11].iter().map(|x| (Weight::Plain(&s.weight), x)).collect();
    let big = bxt.weighted_sum(&five, None).unwrap();
    if variant.fuses() {
        assert_ne!(big.forms().1, "lazy", "a lazy half over five plaintexts should have been materialised");
    }
    push("fused_sum_plain5", &big);
    // Prepared plaintexts: the unprepared operations' words (checked in `check_variants`).
    let top = s.bgv.max_level();
    let corr = xs[0].correction_factor();
    let w_add = s.bgv.prepare_plain_with_factor(&s.weight, top, corr).unwrap();
    let w_mul = s.bgv.prepare_plain(&s.weight, top).unwrap();
    let bias_pp = s.bgv.prepare_plain_with_factor(&bias, top, corr).unwrap();
    push("padd_prepared", &bxt.add_plain_prepared(&xs[0], &w_add).unwrap());
    push("pmult_prepared", &bxt.mul_plain_prepared(&xs[0], &w_mul).unwrap());
    push("fused_sum_prepared", &bxt.weighted_sum_prepared(&terms, Some(&bias_pp)).unwrap());
    push("padd_of_lazy_prepared", &bxt.add_plain_prepared(&pmult, &bias_pp).unwrap());
    // A bias prepared for another correction factor or level is refused, typed.
    let other = s.bgv.prepare_plain_with_factor(&bias, top, corr % 7 + 2).unwrap();
    assert!(matches!(bxt.weighted_sum_prepared(&terms, Some(&other)), Err(Error::CorrectionMismatch { .. })));
    assert!(matches!(bxt.add_plain_prepared(&xs[0], &other), Err(Error::CorrectionMismatch { .. })));
    let low = s.bgv.prepare_plain(&s.weight, top - 1).unwrap();
    assert!(matches!(bxt.mul_plain_prepared(&xs[0], &low), Err(Error::LevelMismatch { .. })));
    out
}

/// Each prepared operation of `run_ops` and the unprepared one it stands for.
const PREPARED: [(&str, &str); 4] = [
    ("padd_prepared", "padd"),
    ("pmult_prepared", "pmult"),
    ("fused_sum_prepared", "fused_sum"),
    ("padd_of_lazy_prepared", "padd_of_lazy"),
];

fn expected(s: &Setup<impl Backend>) -> Vec<(&'static str, Vec<u64>)> {
    let t = u64::from(s.bgv.plaintext_modulus());
    let v = &s.values;
    let w = &s.weight_values;
    let zip = |a: &[u64], b: &[u64], f: &dyn Fn(u64, u64) -> u64| -> Vec<u64> {
        a.iter().zip(b).map(|(&x, &y)| f(x, y) % t).collect()
    };
    let scale = |a: &[u64], k: i64| -> Vec<u64> {
        a.iter().map(|&x| ((i128::from(x) * i128::from(k)).rem_euclid(i128::from(t))) as u64).collect()
    };
    let rot = |a: &[u64]| -> Vec<u64> {
        let half = a.len() / 2;
        (0..a.len()).map(|k| a[(k / half) * half + (k % half + 1) % half]).collect()
    };
    let mut fsum = v[2].clone();
    for (k, x) in s.ints.iter().zip(v) {
        fsum = zip(&fsum, &scale(x, *k), &|a, b| a + b);
    }
    let pmult = zip(&v[0], w, &|a, b| a * b);
    let hadd = zip(&v[0], &v[1], &|a, b| a + b);
    let fplain = zip(
        &zip(&zip(&v[3], w, &|a, b| a * b), &scale(&v[4], 3), &|a, b| a + b),
        &zip(&v[5], w, &|a, b| a * b),
        &|a, b| a + b,
    );
    vec![
        ("padd", zip(&v[0], w, &|a, b| a + b)),
        ("pmult", pmult.clone()),
        ("hadd", hadd.clone()),
        ("hmult", zip(&v[0], &v[1], &|a, b| a * b)),
        ("hrotate", rot(&v[0])),
        ("fused_sum", fsum.clone()),
        ("fused_sum_plain", fplain),
        ("hmult_of_sum", zip(&fsum, &v[2], &|a, b| a * b)),
        ("hrotate_of_sum", rot(&fsum)),
        ("hadd_of_lazy", zip(&pmult, &hadd, &|a, b| a + b)),
        ("padd_of_lazy", zip(&pmult, &v[2], &|a, b| a + b)),
        ("pmult_of_lazy", scale(&fsum, -5)),
        ("fused_sum_plain5", {
            let mut acc = vec![0; w.len()];
            for x in &v[6..11] {
                acc = zip(&acc, &zip(x, w, &|a, b| a * b), &|a, b| a + b);
            }
            acc
        }),
        ("padd_prepared", zip(&v[0], w, &|a, b| a + b)),
        ("pmult_prepared", pmult.clone()),
        ("fused_sum_prepared", fsum.clone()),
        ("padd_of_lazy_prepared", zip(&pmult, &v[2], &|a, b| a + b)),
    ]
}

/// Every variant against the baseline, byte for byte, and every decryption against plaintext;
/// returns the baseline's outcomes.
fn check_variants<B: Backend>(make: &dyn Fn() -> B) -> Vec<Outcome> {
    let (base, s) = run_variant(make, Variant::Baseline);
    let want = expected(&s);
    for (o, (op, slots)) in base.iter().zip(&want) {
        assert_eq!(o.op, *op);
        assert_eq!(&o.slots, slots, "baseline {op} decrypts wrong");
    }
    assert_eq!(base.len(), want.len());
    let words = |outs: &[Outcome], op: &str| outs.iter().find(|o| o.op == op).unwrap().words.clone();
    for (prepared, plain) in PREPARED {
        assert!(words(&base, prepared) == words(&base, plain), "baseline {prepared} differs from {plain}");
    }
    for variant in Variant::ALL.into_iter().skip(1) {
        let (outs, _) = run_variant(make, variant);
        for (prepared, plain) in PREPARED {
            assert!(words(&outs, prepared) == words(&outs, plain), "{variant} {prepared} differs from {plain}");
        }
        assert_eq!(outs.len(), base.len());
        for (o, b) in outs.iter().zip(&base) {
            assert_eq!(o.op, b.op);
            assert_eq!(o.slots, b.slots, "{variant} {} decrypts differently", o.op);
            assert!(o.words == b.words, "{variant} {} differs from the baseline bytes", o.op);
        }
    }
    base
}

#[test]
fn every_variant_equals_the_baseline_on_the_cpu() {
    let p = params();
    let ctx = RingContext::new(&p).unwrap();
    check_variants(&|| CpuBackend::new(Arc::clone(&ctx)));
}

#[test]
fn every_variant_equals_the_baseline_on_the_gpu() {
    let Some(dev) = device() else { return };
    let p = params();
    let ctx = RingContext::new(&p).unwrap();
    let gpu = check_variants(&|| GpuBackend::new(Arc::clone(&ctx), Arc::clone(&dev)));
    // And the GPU's results are the CPU's.
    let (cpu, _) = run_variant(&|| CpuBackend::new(Arc::clone(&ctx)), Variant::Baseline);
    for (g, c) in gpu.iter().zip(&cpu) {
        assert!(g.words == c.words, "{}: GPU and CPU differ", g.op);
    }
}

/// Records of one operation through the ledger.
fn ledger_of<T>(
    variant: Variant,
    op: impl Fn(
        &Bxt<'_, Ledger<CpuBackend>>,
        &[BxtCiphertext<Ledger<CpuBackend>>],
        &EvaluationKeys<Ledger<CpuBackend>>,
    ) -> T,
) -> Vec<Record> {
    let p = params();
    let be = Ledger::new(CpuBackend::new(RingContext::new(&p).unwrap()));
    let s = setup(be);
    let bxt = Bxt::new(&s.bgv, variant);
    let xs: Vec<_> =
        s.values.iter().map(|v| bxt.encrypt(&s.sk, &s.bgv.encoder().encode(v).unwrap()).unwrap()).collect();
    let keys = bxt.prepare_keys(s.bgv.gen_evaluation_keys(&s.sk, &KeyRequest::rotations(&[1])).unwrap()).unwrap();
    s.bgv.backend().take();
    let _ = op(&bxt, &xs, &keys);
    s.bgv.backend().take()
}

fn sum(records: &[Record], f: impl Fn(&Record) -> u64) -> u64 {
    records.iter().map(f).sum()
}

#[test]
fn ledger_shows_what_each_technique_saves() {
    let hadd = |v| ledger_of(v, |b, xs, _| b.add(&xs[0], &xs[1]).unwrap());
    let (base, c, cs) = (hadd(Variant::Baseline), hadd(Variant::C), hadd(Variant::Cs));
    let ct_read = |r: &[Record]| sum(r, Record::ciphertext_bytes);
    // HADD with seeded halves reads at most half the ciphertext bytes.
    assert!(2 * ct_read(&c) <= ct_read(&base), "c reads {} vs baseline {}", ct_read(&c), ct_read(&base));
    // Packed limbs: stores at most ceil(log2 q)/32 of the c bytes (all test primes have <= 30 bits).
    let written = |r: &[Record]| sum(r, |x| x.bytes_written);
    assert!(32 * written(&cs) <= 30 * written(&c), "cs writes {} vs c {}", written(&cs), written(&c));
    // The fused 16-input sum writes exactly one packed `b` half and nothing else.
    let fused = |v| {
        ledger_of(v, |b, xs, _| {
            let terms: Vec<_> = xs.iter().enumerate().map(|(i, x)| (Weight::Int(i as i64 - 8), x)).collect();
            b.weighted_sum(&terms, None).unwrap()
        })
    };
    let f = fused(Variant::Cso);
    assert_eq!(f.len(), 1, "one dispatch, got {:?}", f.iter().map(|r| r.kernel).collect::<Vec<_>>());
    let n = 1u64 << 10;
    let one_packed_half: u64 = params().q().iter().map(|m| n * u64::from(m.bits()) / 8).sum();
    assert_eq!(written(&f), one_packed_half);
    let unfused = fused(Variant::Cs);
    assert!(unfused.len() >= INPUTS, "the unfused chain runs one kernel per PMULT/HADD");
    assert!(written(&unfused) > 20 * written(&f));
    // Key switching with seeded, packed keys reads the b halves only, at their primes' widths:
    // per digit, ceil(N bits(q) / 32) words of every prime of the ciphertext's level and P.
    let relin = |v| ledger_of(v, |b, xs, k| b.mul_relin(&xs[0], &xs[1], k).unwrap());
    let key = |r: &[Record]| sum(r, |x| x.key_bytes);
    let (cso, k) = (relin(Variant::Cso), relin(Variant::CsoK));
    assert!(key(&cso) > 0);
    let p = params();
    let packed_words: u64 = p.q().iter().chain(p.p()).map(|m| (n * u64::from(m.bits())).div_ceil(32)).sum();
    let limbs = (p.q().len() + p.p().len()) as u64;
    // cso reads b and a of every digit, one word a residue.
    let digits = key(&cso) / (2 * limbs * n * 4);
    assert_eq!(key(&k), digits * packed_words * 4, "seeded packed keys read {} vs {}", key(&k), key(&cso));
    assert!(2 * key(&k) < key(&cso));
}

#[test]
fn compressed_ciphertexts_survive_the_wire() {
    let p = params();
    let s = setup(CpuBackend::new(RingContext::new(&p).unwrap()));
    for variant in Variant::ALL {
        let bxt = Bxt::new(&s.bgv, variant);
        let xs: Vec<_> =
            s.values.iter().take(3).map(|v| bxt.encrypt(&s.sk, &s.bgv.encoder().encode(v).unwrap()).unwrap()).collect();
        let lazy = bxt.mul_plain(&xs[0], &s.weight).unwrap();
        let sum = bxt.add(&xs[1], &xs[2]).unwrap();
        for ct in [&xs[0], &lazy, &sum] {
            let bytes = bxt.to_bytes(ct).unwrap();
            let back = bxt.from_bytes(&bytes).unwrap();
            let (a, b) = (bxt.materialize(ct).unwrap(), bxt.materialize(&back).unwrap());
            for (x, y) in a.polys().iter().zip(b.polys()) {
                assert_eq!(x.buffer(), y.buffer(), "{variant}: wire round trip changed the ciphertext");
            }
            // The plain BGV loader reads the same bytes.
            let plain = s.bgv.ciphertext_from_bytes(&bytes).unwrap();
            assert_eq!(plain.polys()[0].buffer(), a.polys()[0].buffer());
        }
        if variant.packs() {
            let bytes = bxt.to_bytes(&xs[0]).unwrap();
            let plain_len = s.bgv.ciphertext_to_bytes(&bxt.materialize(&xs[0]).unwrap()).unwrap().len();
            assert!(bytes.len() < plain_len, "{variant}: packed {} vs plain {plain_len}", bytes.len());
        }
    }
}

#[test]
fn malformed_compressed_input_is_a_typed_error() {
    let p = params();
    let s = setup(CpuBackend::new(RingContext::new(&p).unwrap()));
    let bxt = Bxt::new(&s.bgv, Variant::Cs);
    let ct = bxt.encrypt(&s.sk, &s.bgv.encoder().encode(&s.values[0]).unwrap()).unwrap();
    let good = bxt.to_bytes(&ct).unwrap();
    // Truncated.
    assert!(matches!(bxt.from_bytes(&good[..good.len() - 3]), Err(Error::LengthMismatch { .. })));
    // 64 bits of ones, which cover at least one whole packed residue of at most 32 bits, set
    // to all ones (>= q for every prime below 2^bits - 1): damage fails the checksum; the same
    // change with the checksum recomputed fails the residue check.
    let mut bad = good.clone();
    let end = bad.len();
    for b in &mut bad[end - 12..end - 4] {
        *b = 0xff;
    }
    assert!(matches!(bxt.from_bytes(&bad), Err(Error::Checksum { .. })));
    update_checksum(&mut bad).unwrap();
    assert!(matches!(bxt.from_bytes(&bad), Err(Error::ResidueOutOfRange { .. })));
    // A bad seed header (generator id) is refused.
    let mut bad_seed = good.clone();
    // Header (28 bytes) + level 4 + degree 1 + correction 4 + noise 8 + tag 1 = 46: generator id.
    let gen_at = HEADER_LEN + 18;
    bad_seed[gen_at] = 9;
    update_checksum(&mut bad_seed).unwrap();
    assert!(matches!(bxt.from_bytes(&bad_seed), Err(Error::UnknownGenerator { id: 9 })));
    let mut bad_len = good.clone();
    bad_len[gen_at + 1] = 31;
    update_checksum(&mut bad_len).unwrap();
    assert!(matches!(bxt.from_bytes(&bad_len), Err(Error::BadSeedLength { found: 31, .. })));
    // Mixing variants' ciphertexts is refused, not mis-evaluated.
    let base = Bxt::new(&s.bgv, Variant::Baseline);
    let plain = base.encrypt(&s.sk, &s.bgv.encoder().encode(&s.values[1]).unwrap()).unwrap();
    assert!(bxt.add(&ct, &plain).is_err());
    assert!(base.add(&ct, &plain).is_err());
    // Unknown variant names are a typed error.
    assert!(matches!(Variant::parse("cso+x"), Err(Error::InvalidField { .. })));
}

/// A 40-input weighted sum: the `b` side runs in chunks that accumulate a partial sum and the
/// lazy `a` half (40 seeds) is generated in chunks; every variant still gives the baseline's
/// bytes, on the CPU and on the GPU.
fn long_sum_words<B: Backend>(make: &dyn Fn() -> B, variant: Variant) -> Vec<Vec<u32>> {
    let bgv = Bgv::new(make()).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[5; 32]).unwrap();
    let bxt = Bxt::new(&bgv, variant);
    let slots = bgv.encoder().slots();
    let xs: Vec<_> = (0..40u64)
        .map(|i| bxt.encrypt(&sk, &bgv.encoder().encode(&vec![i * 17 % 101; slots]).unwrap()).unwrap())
        .collect();
    let terms: Vec<_> = xs.iter().enumerate().map(|(i, x)| (Weight::Int(i as i64 % 7 - 3), x)).collect();
    let sum = bxt.weighted_sum(&terms, None).unwrap();
    if variant.fuses() {
        assert_ne!(sum.forms().1, "lazy", "40 seeds exceed MAX_LAZY_TERMS");
    }
    let want: i64 = (0..40i64).map(|i| (i * 17 % 101) * (i % 7 - 3)).sum();
    let got = bgv.encoder().decode_signed(&bxt.decrypt(&sk, &sum).unwrap()).unwrap();
    assert!(got.iter().all(|&v| v == want), "{variant}: {} != {want}", got[0]);
    let plain = bxt.materialize(&sum).unwrap();
    plain.polys().iter().map(|p| bgv.backend().download(p.buffer()).unwrap()).collect()
}

#[test]
fn long_weighted_sums_run_in_chunks() {
    let p = params();
    let ctx = RingContext::new(&p).unwrap();
    let cpu = || CpuBackend::new(Arc::clone(&ctx));
    let base = long_sum_words(&cpu, Variant::Baseline);
    for v in Variant::ALL.into_iter().skip(1) {
        assert!(long_sum_words(&cpu, v) == base, "{v} differs on the CPU");
    }
    if let Some(dev) = device() {
        let gpu = || GpuBackend::new(Arc::clone(&ctx), Arc::clone(&dev));
        assert!(long_sum_words(&gpu, Variant::Cso) == base, "cso differs on the GPU");
    }
}
