//! One stage of the encrypted CNN alone: the first ReLU on one channel of a full batch of real
//! MNIST test images, with the fused table or the digit path, at any parameter set. Only the
//! relinearisation key is generated, so the stage runs where the whole circuit's rotation keys
//! would not fit in memory (the digit path's secure set `bgv-cnn-n17` on a 24 GB machine).
//! Every slot is checked against the plaintext emulation ([`Faults::relu_requant`]).
//!
//! `cargo run --release --example cnn_relu_stage -- MODEL.json [PARAMS] [lut|digits] [KEEP]`
//! (`MODEL.json`: a model cached by `wgfhe mnist --model cnn` in `data/mnist/`; PARAMS default
//! `bgv-cnn-n17`, or an `insecure-test-bgv-...` name). CPU backend.
//!
//! [`Faults::relu_requant`]: wgfhe_mnist::cnn::Faults::relu_requant

#![expect(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing, reason = "example")]

use std::path::Path;
use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use wgfhe::bgv::Bgv;
use wgfhe::compare::lut::Bounded;
use wgfhe::math::zq::Modulus;
use wgfhe::params;
use wgfhe_mnist::cnn::{patches, QuantCnn, POSITIONS};
use wgfhe_mnist::cnn_infer::{CnnCircuit, CnnStats, ReluPath, BLOCK};
use wgfhe_mnist::mnist;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model_path = args.get(1).expect("usage: cnn_relu_stage MODEL.json [PARAMS] [lut|digits] [KEEP]");
    let name = args.get(2).map_or(params::CNN_DIGITS_SET, String::as_str);
    let relu = match args.get(3).map_or("digits", String::as_str) {
        "lut" => ReluPath::Table,
        _ => ReluPath::digits(args.get(4).map_or(1.0, |k| k.parse().unwrap())).unwrap(),
    };
    let params =
        if name.starts_with("insecure-") { params::insecure_by_name(name) } else { params::by_name(name) }.unwrap();
    let model = QuantCnn::from_json(&std::fs::read_to_string(model_path).unwrap()).unwrap();
    let dir = Path::new(mnist::DEFAULT_DIR);
    mnist::fetch(dir).unwrap();
    let data = mnist::load(dir).unwrap();
    let bgv = Bgv::cpu(&params).unwrap();
    let circuit = CnnCircuit::with_relu(&bgv, &model, relu).unwrap();
    let t = Modulus::new(u64::from(bgv.plaintext_modulus())).unwrap();
    let slots = bgv.encoder().slots();
    // Channel 0's pre-activations of the first slots / 256 test images, in the circuit's layout.
    let mut z = vec![0i64; slots];
    for (i, img) in data.test.images().iter().take(circuit.images_per_batch()).enumerate() {
        let conv = model.conv(&patches(img));
        z[i * BLOCK..i * BLOCK + POSITIONS].copy_from_slice(&conv[..POSITIONS]);
    }
    let clock = Instant::now();
    let sk = bgv.gen_secret_key().unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    let keygen = clock.elapsed().as_secs_f64();
    let v: Vec<u64> = z.iter().map(|&x| u64::from(t.reduce_i64(x))).collect();
    let ct = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&v).unwrap()).unwrap();
    let input = Bounded::fresh(&bgv, ct, model.bounds().conv).unwrap();
    let before = resident_mb();
    let mut stats = CnnStats::default();
    let clock = Instant::now();
    let out = circuit.relu1(&bgv, &keys, &input, &mut stats).unwrap();
    let secs = clock.elapsed().as_secs_f64();
    let got = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &out).unwrap()).unwrap();
    let faults = relu.faults();
    let wrong = z.iter().zip(&got).filter(|(&x, &y)| faults.relu_requant(&model.act1, x) != y).count();
    println!(
        "{name}, relu {} {relu:?}: ReLU1 on one channel of {} images ({} slots): {secs:.1} s, {} HMULTs, level {} -> \
         {}, {wrong} wrong slots; relinearisation key {:.1} s; {before:.0} MB resident before the stage, peak {:.0} MB",
        relu.name(),
        circuit.images_per_batch(),
        slots,
        stats.hmults,
        input.ciphertext().level(),
        out.level(),
        keygen,
        peak_mb()
    );
    assert_eq!(wrong, 0, "a slot differs from the emulation");
}

/// A field of `/proc/self/status` in MB (Linux; 0 elsewhere).
fn status_mb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)?.parse().ok()))
        .map_or(0.0, |kb: f64| kb / 1024.0)
}

fn resident_mb() -> f64 {
    status_mb("VmRSS:")
}

fn peak_mb() -> f64 {
    status_mb("VmHWM:")
}
