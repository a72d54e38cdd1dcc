//! Exact ReLU by a range-restricted lookup table at a secure parameter set, end to end:
//! encrypt values in `[-B, B]` (one per slot), evaluate the table, decrypt, compare every slot,
//! and print HMULTs, depth, time and the noise budget left.
//!
//! ```sh
//! cargo run --release --example lut_relu -- bgv-lut-n16 13
//! ```
//! (arguments: parameter set, domain width in bits with the sign: `B = 2^(bits-1) - 1`).

use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use wgfhe::backend::{Backend, BackendChoice, BackendTask};
use wgfhe::bgv::Bgv;
use wgfhe::compare::{eval_lut, Bounded, Lut};
use wgfhe::math::zq::Modulus;
use wgfhe::params;
use wgfhe::ring::RingContext;

/// The table evaluation on a domain of `bits` bits, on the backend `WGFHE_BACKEND` chooses.
struct Relu {
    bits: u32,
}

impl BackendTask for Relu {
    type Output = ();

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<()> {
        run(backend, self.bits)
    }
}

fn run<B: Backend>(backend: B, bits: u32) -> wgfhe::Result<()> {
    let bgv = Bgv::new(backend)?;
    let t = bgv.plaintext_modulus();
    let domain = (1u64 << (bits - 1)) - 1;
    let start = Instant::now();
    let table = Lut::relu(t, domain)?;
    println!(
        "{}: t = {t}, relu on [-{domain}, {domain}], degree {}, planned {:?}, compiled in {:.2?}",
        bgv.params().name(),
        table.degree(),
        table.plan().cost,
        start.elapsed()
    );
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation())?;
    let slots = bgv.encoder().slots();
    let tm = Modulus::new(u64::from(t))?;
    let d = domain as i64;
    let values: Vec<i64> = (0..slots as i64).map(|i| (i * 7919 + i * i * 31) % (2 * d + 1) - d).collect();
    let pt = bgv.encoder().encode(&values.iter().map(|&v| u64::from(tm.reduce_i64(v))).collect::<Vec<_>>())?;
    let x = Bounded::fresh(&bgv, bgv.encrypt_symmetric(&sk, &pt)?, domain)?;
    let start = Instant::now();
    let (out, stats) = eval_lut(&bgv, &keys, &x, &table)?;
    let elapsed = start.elapsed();
    let got = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &out)?)?;
    let wrong = got.iter().zip(&values).filter(|(g, v)| **g != (**v).max(0)).count();
    println!(
        "evaluated on {slots} slots in {elapsed:.2?} ({:.1} us per slot): {} HMULTs, depth {}, final level {} of {}, \
         noise budget left {:.1} bits, {wrong} wrong slots",
        elapsed.as_secs_f64() * 1e6 / slots as f64,
        stats.hmults,
        stats.depth,
        out.level(),
        bgv.max_level(),
        bgv.noise_budget(&sk, &out)?
    );
    if wrong != 0 {
        return Err(wgfhe::Error::Verification {
            what: "the decrypted ReLU differs".into(),
            reference: "the clear ReLU",
        });
    }
    Ok(())
}

fn main() -> wgfhe::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("bgv-lut-n16", String::as_str);
    let bits: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(13).clamp(2, 20);
    let params = params::by_name(name)?;
    BackendChoice::from_name(&std::env::var("WGFHE_BACKEND").unwrap_or_else(|_| "auto".into()))?
        .with_backend(RingContext::new(&params)?, Relu { bits })
}
