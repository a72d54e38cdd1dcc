//! The digit pipeline at a (secure) parameter set, end to end: a homomorphic weighted sum with an
//! exact bound `B`, homomorphic digit extraction (one set of digit tables sharing the powers),
//! the word-wise sign test on the kept digits, and ReLU `x - x [x < 0]`; then the direct ReLU
//! table on the same input for comparison. Prints HMULTs, relinearisations, depth and time of
//! each, and checks every slot against the plaintext model. It first prints the planner's
//! counts (no encryption) of lazy against eager relinearisation for the ReLU table on
//! `[-4095, 4095]`.
//!
//! ```sh
//! cargo run --release --example extract_pipeline -- bgv-lut-n16 8 16 floor 1.0,0.5
//! ```
//! (arguments: parameter set, value width in bits with the sign (`B = 2^(bits-1) - 1`), digit
//! base, `floor` or `balanced`, comma-separated fractions of the digits kept; `plan` as the
//! parameter set prints the plans only).

use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use wgfhe::backend::{Backend, BackendChoice, BackendTask};
use wgfhe::bgv::Bgv;
use wgfhe::compare::digits::Convention;
use wgfhe::compare::extract::{layout_for_bound, relu, relu_model, DigitExtractor};
use wgfhe::compare::{eval_lut, Bounded, Lut};
use wgfhe::params;
use wgfhe::ring::RingContext;

struct Args {
    bits: u32,
    base: u32,
    convention: Convention,
    keeps: Vec<f64>,
}

fn plans(t: u32, args: &Args) -> wgfhe::Result<()> {
    let start = Instant::now();
    let big = Lut::relu(t, 4095)?;
    let cost = big.plan().cost;
    println!(
        "relu on [-4095, 4095] (t = {t}): {} HMULTs, depth {}, {} relinearisations lazily against {} eagerly \
         (compiled and planned in {:.2?})",
        cost.hmults,
        cost.depth,
        cost.relins,
        cost.hmults,
        start.elapsed()
    );
    let bound = (1u64 << (args.bits - 1)) - 1;
    let layout = layout_for_bound(bound, args.base, args.convention)?;
    for &keep in &args.keeps {
        let kept = layout.kept(keep)?;
        let ex = DigitExtractor::top_digits(t, bound, layout, kept)?;
        println!(
            "extract {kept} of {} {} digits (base {}) of |x| <= {bound}: plan {:?} (the tables one by one: {:?})",
            layout.count(),
            args.convention.name(),
            args.base,
            ex.plan(),
            ex.tables().separate_cost()
        );
    }
    Ok(())
}

/// The pipeline, on the backend `WGFHE_BACKEND` chooses.
impl BackendTask for Args {
    type Output = ();

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<()> {
        run(backend, &self)
    }
}

fn run<B: Backend>(backend: B, args: &Args) -> wgfhe::Result<()> {
    let bgv = Bgv::new(backend)?;
    let t = bgv.plaintext_modulus();
    plans(t, args)?;
    let bound = (1u64 << (args.bits - 1)) - 1;
    let layout = layout_for_bound(bound, args.base, args.convention)?;
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation())?;
    let slots = bgv.encoder().slots();
    // z = a + b with |a| <= h, |b| <= B - h: the weighted sum's bound is exactly B.
    let h = (bound / 2) as i64;
    let rest = bound as i64 - h;
    let a: Vec<i64> = (0..slots as i64).map(|i| (i * 7919 + i * i * 31) % (2 * h + 1) - h).collect();
    let b: Vec<i64> = (0..slots as i64).map(|i| (i * 104_729 + 17) % (2 * rest + 1) - rest).collect();
    let enc = |v: &[i64], bd: u64| -> wgfhe::Result<Bounded<B>> {
        Bounded::fresh(&bgv, bgv.encrypt_symmetric(&sk, &bgv.encoder().encode_signed(v)?)?, bd)
    };
    let (ea, eb) = (enc(&a, h as u64)?, enc(&b, rest as u64)?);
    let z = Bounded::weighted_sum(&bgv, &[(1, &ea), (1, &eb)], 0)?;
    let zv: Vec<i64> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    println!(
        "{}: {slots} slots, z = a + b with bound {} (max level {})",
        bgv.params().name(),
        z.bound(),
        bgv.max_level()
    );
    for &keep in &args.keeps {
        let kept = layout.kept(keep)?;
        let start = Instant::now();
        let ex = DigitExtractor::top_digits(t, bound, layout, kept)?;
        let compile = start.elapsed();
        let start = Instant::now();
        let (out, stats) = relu(&bgv, &keys, &z, &ex)?;
        let elapsed = start.elapsed();
        let got = bgv.encoder().decode_signed(&bgv.decrypt(&sk, out.ciphertext())?)?;
        let model: Vec<i64> = zv.iter().map(|&v| relu_model(&layout, kept, v)).collect::<wgfhe::Result<_>>()?;
        let off_model = got.iter().zip(&model).filter(|(g, m)| g != m).count();
        let faults = got.iter().zip(&zv).filter(|(g, v)| **g != (**v).max(0)).count();
        println!(
            "digit ReLU, keep {keep} ({kept} of {} digits): {} HMULTs, {} relinearisations, depth {}, {elapsed:.2?} \
             ({:.1} us per slot; tables compiled in {compile:.2?}), final level {}, noise budget {:.1} bits; \
             {faults} slots differ from max(x, 0), {off_model} from the pruning model",
            layout.count(),
            stats.hmults,
            stats.relins,
            stats.depth,
            elapsed.as_secs_f64() * 1e6 / slots as f64,
            out.ciphertext().level(),
            bgv.noise_budget(&sk, out.ciphertext())?
        );
        if off_model != 0 {
            return Err(wgfhe::Error::Verification {
                what: "the digit ReLU differs".into(),
                reference: "its plaintext model",
            });
        }
    }
    let table = Lut::relu(t, bound)?;
    let start = Instant::now();
    let (out, stats) = eval_lut(&bgv, &keys, &z, &table)?;
    let elapsed = start.elapsed();
    let got = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &out)?)?;
    let wrong = got.iter().zip(&zv).filter(|(g, v)| **g != (**v).max(0)).count();
    println!(
        "direct ReLU table: {} HMULTs, {} relinearisations, depth {}, {elapsed:.2?}, final level {}, {wrong} wrong slots",
        stats.hmults,
        stats.relins,
        stats.depth,
        out.level()
    );
    if wrong != 0 {
        return Err(wgfhe::Error::Verification {
            what: "the direct ReLU table differs".into(),
            reference: "max(x, 0)",
        });
    }
    Ok(())
}

fn main() -> wgfhe::Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    let name = argv.get(1).map_or("bgv-lut-n16", String::as_str);
    let args = Args {
        bits: argv.get(2).and_then(|s| s.parse().ok()).unwrap_or(8).clamp(2, 20),
        base: argv.get(3).and_then(|s| s.parse().ok()).unwrap_or(16),
        convention: if argv.get(4).map(String::as_str) == Some("balanced") {
            Convention::Balanced
        } else {
            Convention::Floor
        },
        keeps: argv.get(5).map_or("1.0", String::as_str).split(',').filter_map(|s| s.parse().ok()).collect(),
    };
    if name == "plan" {
        return plans(786_433, &args);
    }
    let params = params::by_name(name)?;
    BackendChoice::from_name(&std::env::var("WGFHE_BACKEND").unwrap_or_else(|_| "auto".into()))?
        .with_backend(RingContext::new(&params)?, args)
}
