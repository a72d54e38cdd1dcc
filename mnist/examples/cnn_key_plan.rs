//! The evaluation-key set of the encrypted CNN derived from its circuit: which keys, at which
//! levels ([`CnnCircuit::key_plan`], the circuit run on the shape-only backend on the first
//! batch of MNIST test images), and the bytes
//! of that set against every key at the top, stored, seeded and seeded with packed `b` halves
//! (computed from the keys' shapes, [`KeyPlan::resident_bytes`]). With `--generate` the planned
//! keys are also generated on the CPU, seeded and packed, and their resident bytes measured.
//!
//! `cargo run --release --example cnn_key_plan -- MODEL.json [PARAMS] [lut|digits] [KEEP]
//! [--generate]` (`MODEL.json`: a model cached by `wgfhe mnist --model cnn` in `data/mnist/`;
//! PARAMS default `bgv-cnn-n17`).

#![expect(clippy::unwrap_used, clippy::expect_used, reason = "example")]

use std::time::Instant;

use wgfhe::bgv::Bgv;
use wgfhe::compress::Variant;
use wgfhe::params;
use wgfhe::ring::RingContext;
use wgfhe::rlwe::{KeyPlan, KeyStorage};
use wgfhe_mnist::cnn::QuantCnn;
use wgfhe_mnist::cnn_infer::{CnnCircuit, ReluPath};
use wgfhe_mnist::mnist;

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| a != "--generate").collect();
    let generate = std::env::args().any(|a| a == "--generate");
    let model_path = args.get(1).expect("usage: cnn_key_plan MODEL.json [PARAMS] [lut|digits] [KEEP] [--generate]");
    let name = args.get(2).map_or(params::CNN_DIGITS_SET, String::as_str);
    let relu = match args.get(3).map_or("digits", String::as_str) {
        "lut" => ReluPath::Table,
        _ => ReluPath::digits(args.get(4).map_or(0.5, |k| k.parse().unwrap())).unwrap(),
    };
    let params =
        if name.starts_with("insecure-") { params::insecure_by_name(name) } else { params::by_name(name) }.unwrap();
    let model = QuantCnn::from_json(&std::fs::read_to_string(model_path).unwrap()).unwrap();
    let bgv = Bgv::cpu(&params).unwrap();
    let clock = Instant::now();
    let circuit = CnnCircuit::with_relu(&bgv, &model, relu).unwrap();
    println!("{name}, relu {relu:?}: circuit compiled in {:.1} s", clock.elapsed().as_secs_f64());
    let clock = Instant::now();
    let dir = std::path::Path::new(mnist::DEFAULT_DIR);
    mnist::fetch(dir).unwrap();
    let data = mnist::load(dir).unwrap();
    let first: Vec<_> = data.test.images().iter().take(circuit.images_per_batch()).collect();
    let plan = circuit.key_plan(&params, Variant::Cso, &first).unwrap();
    println!("key plan derived in {:.1} s", clock.elapsed().as_secs_f64());
    let elements: Vec<usize> = circuit.rotation_steps().iter().map(|&s| bgv.column_rotation_element(s)).collect();
    let top = KeyPlan::top(params.q().len(), &elements);
    println!("top level {}; relinearisation key at level {:?}", params.q().len() - 1, plan.relin);
    let mut by_level: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    for &l in plan.galois.values() {
        *by_level.entry(l).or_default() += 1;
    }
    println!("rotation keys: {} planned of {} at the top; by level {by_level:?}", plan.galois.len(), top.galois.len());
    let ctx = RingContext::new(&params).unwrap();
    let gb = |b: u64| b as f64 / 1e9;
    for (what, storage) in
        [("stored", KeyStorage::Stored), ("seeded", KeyStorage::Seeded), ("seeded+packed", KeyStorage::SeededPacked)]
    {
        let (t, p) = (top.resident_bytes(&ctx, storage).unwrap(), plan.resident_bytes(&ctx, storage).unwrap());
        println!(
            "{what:>14}: every key at the top {:.3} GB ({t} B), planned {:.3} GB ({p} B), ratio {:.3}",
            gb(t),
            gb(p),
            p as f64 / t as f64
        );
    }
    if generate {
        let clock = Instant::now();
        let sk = bgv.gen_secret_key().unwrap();
        // Key by key (seeded and packed as soon as generated), so the stored form of only one
        // key is ever held.
        let mut keys = wgfhe::rlwe::EvaluationKeys::default();
        let one = KeyPlan { relin: plan.relin, galois: Default::default() };
        keys.relin = bgv.gen_planned_keys(&sk, &one).unwrap().into_seeded().into_packed(bgv.backend()).unwrap().relin;
        for (&g, &level) in &plan.galois {
            let one = KeyPlan { relin: None, galois: [(g, level)].into_iter().collect() };
            let k = bgv.gen_planned_keys(&sk, &one).unwrap().into_seeded().into_packed(bgv.backend()).unwrap();
            keys.galois.extend(k.galois);
        }
        let measured = keys.resident_bytes(bgv.backend());
        println!(
            "generated the planned keys (seeded, packed) in {:.1} s: resident {:.3} GB ({measured} B)",
            clock.elapsed().as_secs_f64(),
            gb(measured)
        );
        assert_eq!(measured, plan.resident_bytes(&ctx, KeyStorage::SeededPacked).unwrap());
    }
}
