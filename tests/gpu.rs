//! The GPU backend against the CPU reference, bit for bit: fused programs (fixed shapes and
//! random ones, mixed prime widths) compared byte for byte, and the adapter's limits as typed
//! errors; the recording engine (chains recorded into one submission with readbacks in the
//! middle, recycled buffers reused by uploads mid-chain, submissions per HMULT, resident tables),
//! every device path (native or emulated 64-bit products, parameters as immediates or in the
//! arena) and `WGFHE_BACKEND=auto` on software adapters. (Every kernel on seeded random inputs and whole seeded BGV and CKKS programs are
//! compared by `wgfhe verify`, whose harness is tested, on this adapter too, by the binary's
//! unit tests: `cargo test -p wgfhe-cli`.)
//!
//! Without an adapter the tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` (set in CI) turns
//! that into a failure.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

mod common;

use common::{device, Rng};
use wgfhe::rlwe::KeyRequest;

use std::sync::Arc;

use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::CpuBackend;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;

#[test]
fn buffers_beyond_the_adapter_limit_are_typed_errors() {
    let Some(dev) = device() else { return };
    let words = dev.max_binding_words() + 1;
    assert!(matches!(dev.zeros(words), Err(wgfhe::Error::AdapterLimit { .. })));
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 2, p_primes: 1, dnum: 2 }, 65537).unwrap();
    let gpu = wgfhe::backend::GpuBackend::new(RingContext::new(&p).unwrap(), dev);
    use wgfhe::backend::Backend;
    assert!(matches!(gpu.zeros(words), Err(wgfhe::Error::AdapterLimit { .. })));
}

// ---- fused programs -------------------------------------------------------------------------

use wgfhe::backend::fused::{packed_layout, Expr, Format, Operand, Program, Traffic};
use wgfhe::backend::{Backend, GpuBackend};
use wgfhe::math::primes::ntt_primes;
use wgfhe::math::sampling::Purpose;

/// A CKKS set (insecure, for tests) whose primes have different sizes: q of 30, 26, 22 and 18
/// bits, p of 29 and 20 bits.
fn mixed_widths(log_n: u32) -> Parameters {
    let n = 1u64 << log_n;
    let mut primes: Vec<u64> = Vec::new();
    for bits in [30, 26, 22, 18, 29, 20] {
        let p = ntt_primes(bits, n, 1, &primes).unwrap();
        primes.extend(p);
    }
    let mut lit = params::ckks_literal(&format!("mixed-widths-n{log_n}"), log_n, 4, 2, 4, 16).unwrap();
    lit.p = primes.split_off(4);
    lit.q = primes;
    Parameters::new_insecure_for_tests(lit).unwrap()
}

/// One operand, host side.
#[derive(Clone)]
enum Spec {
    Buffer { data: Vec<u32>, basis: Vec<usize>, format: Format },
    Uniform { seed: [u8; 32], purpose: Purpose, index: u32 },
    Scalar(Vec<u32>),
}

/// Random canonical residues over `basis`, stored in `format`.
fn stored(ctx: &RingContext, rng: &mut Rng, basis: &[usize], format: Format) -> Spec {
    let n = ctx.n();
    let limbs: Vec<Vec<u32>> = basis
        .iter()
        .map(|&i| {
            let q = ctx.modulus(i).unwrap().value();
            (0..n).map(|_| (rng.next() % u64::from(q)) as u32).collect()
        })
        .collect();
    let data = match format {
        Format::Words => limbs.concat(),
        Format::Packed => {
            let (layout, total) = packed_layout(ctx, basis).unwrap();
            let mut out = vec![0u32; total];
            for ((limb, (start, words)), &i) in limbs.iter().zip(layout).zip(basis) {
                let bits = ctx.modulus(i).unwrap().bits();
                wgfhe::backend::fused::pack_limb(limb, bits, &mut out[start..start + words]);
            }
            out
        }
    };
    Spec::Buffer { data, basis: basis.to_vec(), format }
}

fn scalars(ctx: &RingContext, rng: &mut Rng, basis: &[usize]) -> Spec {
    Spec::Scalar(basis.iter().map(|&i| (rng.next() % u64::from(ctx.modulus(i).unwrap().value())) as u32).collect())
}

fn seeded(rng: &mut Rng, purpose: Purpose) -> Spec {
    let mut seed = [0u8; 32];
    for b in &mut seed {
        *b = rng.next() as u8;
    }
    Spec::Uniform { seed, purpose, index: rng.below(1000) as u32 }
}

/// Runs the program on `be` and downloads its outputs.
fn run_fused<B: Backend>(be: &B, basis: &[usize], specs: &[Spec], outputs: &[(Expr, Format)]) -> Vec<Vec<u32>> {
    let bufs: Vec<Option<B::Buffer>> = specs
        .iter()
        .map(|s| match s {
            Spec::Buffer { data, .. } => Some(be.upload(data).unwrap()),
            _ => None,
        })
        .collect();
    let operands = specs
        .iter()
        .zip(&bufs)
        .map(|(s, b)| match s {
            Spec::Buffer { basis, format, .. } => Operand::Buffer {
                buf: b.as_ref().unwrap(),
                basis: basis.as_slice(),
                format: *format,
                traffic: Traffic::Ciphertext,
                limb_offset: 0,
            },
            Spec::Uniform { seed, purpose, index } => {
                Operand::Uniform { seed: *seed, purpose: *purpose, index: *index }
            }
            Spec::Scalar(s) => Operand::Scalar(s.clone()),
        })
        .collect();
    let program = Program { basis, operands, outputs: outputs.to_vec() };
    be.fused(&program).unwrap().iter().map(|o| be.download(o).unwrap()).collect()
}

/// The program on both backends: identical bytes (and not all zero).
fn check_fused(name: &str, gpu: &GpuBackend, basis: &[usize], specs: &[Spec], outputs: &[(Expr, Format)]) {
    let want = compare_fused(name, gpu, basis, specs, outputs);
    let nonzero = outputs.iter().zip(&want).any(|((e, _), w)| *e != Expr::Sum(vec![]) && w.iter().any(|&x| x != 0));
    assert!(nonzero, "{name}: every output is zero");
}

/// The program on both backends: identical bytes. Returns the outputs.
fn compare_fused(
    name: &str,
    gpu: &GpuBackend,
    basis: &[usize],
    specs: &[Spec],
    outputs: &[(Expr, Format)],
) -> Vec<Vec<u32>> {
    let cpu = CpuBackend::new(Arc::clone(gpu.context()));
    let want = run_fused(&cpu, basis, specs, outputs);
    let got = run_fused(gpu, basis, specs, outputs);
    assert_eq!(want.len(), got.len(), "{name}");
    for (k, (w, g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(w.len(), g.len(), "{name}: output {k} length");
        if let Some(j) = w.iter().zip(g).position(|(a, b)| a != b) {
            panic!("{name}: output {k} ({:?}) differs from the CPU at word {j}: {} vs {}", outputs[k].1, w[j], g[j]);
        }
    }
    want
}

fn gpu_for(p: &Parameters, dev: &Arc<GpuDevice>) -> GpuBackend {
    GpuBackend::new(RingContext::new(p).unwrap(), Arc::clone(dev))
}

/// The fixed programs of the fused-kernel design on a ring: (1) HADD, (2) seeded operands,
/// (3) packed in and out and both conversions, (5) Galois of a sum of a uniform and a stored
/// operand, (6) a tensor product with three outputs, (7) an operand over a superset basis.
fn fixed_programs(gpu: &GpuBackend, seed: u64) {
    let ctx = Arc::clone(gpu.context());
    let mut rng = Rng(seed);
    let all: Vec<usize> = (0..ctx.q_count() + ctx.p_count()).collect();
    let q: Vec<usize> = (0..ctx.q_count()).collect();
    let l = Expr::load;
    let two_n = 2 * ctx.n();

    // (1) HADD-like.
    let specs = vec![stored(&ctx, &mut rng, &q, Format::Words), stored(&ctx, &mut rng, &q, Format::Words)];
    check_fused("hadd", gpu, &q, &specs, &[(Expr::add(l(0), l(1)), Format::Words)]);
    check_fused("hsub neg", gpu, &q, &specs, &[(Expr::sub(l(0), Expr::neg(l(1))), Format::Words)]);

    // (2) Seeded: uniform + stored, uniform * scalar.
    let specs = vec![
        seeded(&mut rng, Purpose::CiphertextA),
        stored(&ctx, &mut rng, &q, Format::Words),
        scalars(&ctx, &mut rng, &q),
    ];
    check_fused(
        "seeded",
        gpu,
        &q,
        &specs,
        &[(Expr::add(l(0), l(1)), Format::Words), (Expr::mul(l(0), l(2)), Format::Words)],
    );
    check_fused("uniform alone", gpu, &q, &specs, &[(l(0), Format::Words)]);

    // (2b) A weighted sum of seeded halves, 16 `scalar x uniform` terms (computed by a loop
    // over the streams) between a stored operand and a stream times a stored operand, plus
    // two of the streams again in a second output.
    let mut specs = vec![stored(&ctx, &mut rng, &q, Format::Words)];
    let mut terms = vec![l(0)];
    for m in 0..16 {
        specs.push(scalars(&ctx, &mut rng, &q));
        specs.push(seeded(&mut rng, Purpose::CiphertextA));
        terms.push(Expr::mul(l(1 + 2 * m), l(2 + 2 * m)));
    }
    terms.push(Expr::mul(l(2), l(0)));
    check_fused("stream loop", gpu, &q, &specs, &[(Expr::Sum(terms.clone()), Format::Words)]);
    // Factors the other way round: the streams' slots come before their scalars'.
    let swapped: Vec<Expr> = (0..16).map(|m| Expr::mul(l(2 + 2 * m), l(1 + 2 * m))).chain([l(0)]).collect();
    check_fused("stream loop, swapped", gpu, &q, &specs, &[(Expr::Sum(swapped.clone()), Format::Words)]);
    // Inside an expression, and (not looped) under a permutation.
    let g = 5 % two_n;
    check_fused(
        "stream loop, nested",
        gpu,
        &q,
        &specs,
        &[
            (Expr::sub(l(0), Expr::Sum(swapped.clone())), Format::Words),
            (Expr::Galois { g, expr: Box::new(Expr::Sum(swapped)) }, Format::Words),
        ],
    );
    check_fused(
        "stream loop and its streams",
        gpu,
        &q,
        &specs,
        &[(Expr::Sum(terms), Format::Words), (Expr::add(l(2), l(4)), Format::Words)],
    );

    // (3) Packed in, packed out, and the conversions.
    let specs = vec![stored(&ctx, &mut rng, &q, Format::Packed), stored(&ctx, &mut rng, &q, Format::Words)];
    check_fused("unpack", gpu, &q, &specs, &[(l(0), Format::Words)]);
    check_fused("pack", gpu, &q, &specs, &[(l(1), Format::Packed)]);
    check_fused("packed to packed", gpu, &q, &specs, &[(l(0), Format::Packed)]);
    check_fused(
        "packed arithmetic",
        gpu,
        &q,
        &specs,
        &[(Expr::mul(l(0), l(1)), Format::Packed), (Expr::add(l(0), l(1)), Format::Words)],
    );
    if let Spec::Buffer { data, .. } = &specs[0] {
        // Packing the unpacked residues again gives the input bytes.
        let out = run_fused(gpu, &q, &specs, &[(l(0), Format::Packed)]);
        assert_eq!(&out[0], data);
    }

    // (5) Galois of a sum of a uniform and a stored operand (and nested, and a plain term).
    let specs = vec![
        seeded(&mut rng, Purpose::KeySwitchA),
        stored(&ctx, &mut rng, &q, Format::Words),
        stored(&ctx, &mut rng, &q, Format::Packed),
    ];
    for g in [3, 5, two_n - 1] {
        check_fused(
            &format!("galois {g}"),
            gpu,
            &q,
            &specs,
            &[
                (Expr::galois(g, Expr::add(l(0), l(1))), Format::Words),
                (Expr::add(Expr::galois(g, Expr::mul(l(0), l(2))), l(0)), Format::Packed),
            ],
        );
    }
    check_fused(
        "nested galois",
        gpu,
        &q,
        &specs,
        &[(Expr::galois(3, Expr::sub(Expr::galois(5, l(0)), l(2))), Format::Words)],
    );

    // (6) Tensor-like: (b0 + a0 s)(b1 + a1 s) with seeded a halves, three outputs.
    let specs = vec![
        stored(&ctx, &mut rng, &q, Format::Words),
        seeded(&mut rng, Purpose::CiphertextA),
        stored(&ctx, &mut rng, &q, Format::Packed),
        seeded(&mut rng, Purpose::CiphertextA),
    ];
    let tensor = [
        (Expr::mul(l(0), l(2)), Format::Words),
        (Expr::add(Expr::mul(l(0), l(3)), Expr::mul(l(1), l(2))), Format::Words),
        (Expr::mul(l(1), l(3)), Format::Packed),
    ];
    check_fused("tensor", gpu, &q, &specs, &tensor);

    // (7) Operands over Q P (in another order) with the output over a subset.
    let mut shuffled = all.clone();
    shuffled.reverse();
    let key_b = stored(&ctx, &mut rng, &shuffled, Format::Words);
    let key_packed = stored(&ctx, &mut rng, &all, Format::Packed);
    let specs =
        vec![key_b, key_packed, stored(&ctx, &mut rng, &[1, 3], Format::Words), seeded(&mut rng, Purpose::KeySwitchA)];
    let sub = [3usize, 1];
    check_fused(
        "superset basis",
        gpu,
        &sub,
        &specs,
        &[
            (Expr::add(Expr::mul(l(0), l(2)), Expr::mul(l(1), l(3))), Format::Words),
            (Expr::sub(l(1), l(0)), Format::Packed),
        ],
    );
    let specials: Vec<usize> = (ctx.q_count()..all.len()).collect();
    check_fused("special primes", gpu, &specials, &specs[..2], &[(Expr::add(l(0), l(1)), Format::Packed)]);

    // An empty sum is zero; no outputs, no dispatch.
    let out = run_fused(gpu, &q, &specs[..1], &[(Expr::Sum(vec![]), Format::Packed), (l(0), Format::Words)]);
    assert!(out[0].iter().all(|&x| x == 0));
    assert!(run_fused(gpu, &q, &specs[..1], &[]).is_empty());
}

#[test]
fn fused_fixed_programs_match_cpu() {
    let Some(dev) = device() else { return };
    fixed_programs(&gpu_for(&mixed_widths(10), &dev), 11);
    fixed_programs(&gpu_for(&mixed_widths(12), &dev), 12);
    // N below the 32 residues of a packed group: one thread per limb.
    fixed_programs(&gpu_for(&mixed_widths(4), &dev), 13);
    fixed_programs(
        &gpu_for(
            &params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)
                .unwrap(),
            &dev,
        ),
        14,
    );
}

/// A random expression over `ops` operands of depth at most `depth`.
fn random_expr(rng: &mut Rng, ops: usize, depth: usize, two_n: usize) -> Expr {
    if depth <= 1 || rng.below(4) == 0 {
        return Expr::load(rng.below(ops));
    }
    let rec = |rng: &mut Rng| Box::new(random_expr(rng, ops, depth - 1, two_n));
    match rng.below(7) {
        0 => Expr::Add(rec(rng), rec(rng)),
        1 => Expr::Sub(rec(rng), rec(rng)),
        2 => Expr::Neg(rec(rng)),
        3 => Expr::Mul(rec(rng), rec(rng)),
        4 => Expr::Sum((0..rng.below(4)).map(|_| *rec(rng)).collect()),
        5 => Expr::Galois { g: 2 * rng.below(two_n / 2) + 1, expr: rec(rng) },
        _ => Expr::Mul(rec(rng), Box::new(Expr::load(rng.below(ops)))),
    }
}

#[test]
fn fused_random_programs_match_cpu() {
    let Some(dev) = device() else { return };
    for (p, seed, count) in [(mixed_widths(10), 21, 24), (mixed_widths(12), 22, 4)] {
        let gpu = gpu_for(&p, &dev);
        let ctx = Arc::clone(gpu.context());
        let mut rng = Rng(seed);
        let all: Vec<usize> = (0..ctx.q_count() + ctx.p_count()).collect();
        for case in 0..count {
            // An output basis: a random non-empty subset of Q P, in random order.
            let mut basis: Vec<usize> = all.iter().copied().filter(|_| rng.below(2) == 0).collect();
            if basis.is_empty() {
                basis.push(rng.below(all.len()));
            }
            let turn = rng.below(basis.len());
            basis.rotate_left(turn);
            let mut specs = Vec::new();
            for _ in 0..1 + rng.below(6) {
                specs.push(match rng.below(5) {
                    0 => seeded(&mut rng, Purpose::CiphertextA),
                    1 => scalars(&ctx, &mut rng, &basis),
                    2 => stored(&ctx, &mut rng, &basis, Format::Packed),
                    3 => stored(&ctx, &mut rng, &all, Format::Words),
                    _ => stored(&ctx, &mut rng, &basis, Format::Words),
                });
            }
            let outputs: Vec<(Expr, Format)> = (0..1 + rng.below(3))
                .map(|_| {
                    let e = random_expr(&mut rng, specs.len(), 5, 2 * ctx.n());
                    (e, if rng.below(2) == 0 { Format::Words } else { Format::Packed })
                })
                .collect();
            compare_fused(&format!("random {seed}/{case}: {outputs:?}"), &gpu, &basis, &specs, &outputs);
        }
    }
}

/// The 16 inputs of `sum_i w_i x_i + b` (x_i stored, w_i scalars, b stored), and the program.
fn weighted_sum(ctx: &RingContext, rng: &mut Rng, q: &[usize], inputs: usize) -> (Vec<Spec>, Vec<(Expr, Format)>) {
    let mut specs = Vec::new();
    let mut terms = Vec::new();
    for i in 0..inputs {
        specs.push(stored(ctx, rng, q, if i % 3 == 2 { Format::Packed } else { Format::Words }));
        specs.push(scalars(ctx, rng, q));
        terms.push(Expr::mul(Expr::load(2 * i + 1), Expr::load(2 * i)));
    }
    specs.push(stored(ctx, rng, q, Format::Words));
    terms.push(Expr::load(2 * inputs));
    (specs, vec![(Expr::Sum(terms), Format::Words)])
}

#[test]
fn fused_sixteen_input_sum_is_one_dispatch() {
    let Some(_) = device() else { return };
    // A device of its own: the dispatch counter is not shared with tests running alongside.
    let dev = Arc::new(GpuDevice::new().unwrap());
    eprintln!("storage buffers per kernel: {}", dev.max_storage_buffers());
    let p = mixed_widths(10);
    let gpu = gpu_for(&p, &dev);
    let ctx = Arc::clone(gpu.context());
    let q: Vec<usize> = (0..ctx.q_count()).collect();
    let mut rng = Rng(31);
    let (specs, outputs) = weighted_sum(&ctx, &mut rng, &q, 16);
    let cpu = run_fused(&CpuBackend::new(Arc::clone(&ctx)), &q, &specs, &outputs);
    let bufs: Vec<_> = specs
        .iter()
        .map(|s| match s {
            Spec::Buffer { data, .. } => Some(gpu.upload(data).unwrap()),
            _ => None,
        })
        .collect();
    let make = || Program {
        basis: &q,
        operands: specs
            .iter()
            .zip(&bufs)
            .map(|(s, b)| match s {
                Spec::Buffer { basis, format, .. } => Operand::Buffer {
                    buf: b.as_ref().unwrap(),
                    basis,
                    format: *format,
                    traffic: Traffic::Ciphertext,
                    limb_offset: 0,
                },
                Spec::Scalar(s) => Operand::Scalar(s.clone()),
                Spec::Uniform { .. } => unreachable!(),
            })
            .collect(),
        outputs: outputs.clone(),
    };
    let (before, pipelines) = (dev.dispatch_count(), dev.pipeline_count());
    let out = gpu.fused(&make()).unwrap();
    assert_eq!(dev.dispatch_count() - before, 1, "the 16-input sum took more than one dispatch");
    assert_eq!(dev.pipeline_count() - pipelines, 1);
    assert_eq!(gpu.download(&out[0]).unwrap(), cpu[0]);
    // The same shape again: one more dispatch, no new pipeline.
    let again = gpu.fused(&make()).unwrap();
    assert_eq!(dev.dispatch_count() - before, 2);
    assert_eq!(dev.pipeline_count() - pipelines, 1);
    assert_eq!(gpu.download(&again[0]).unwrap(), cpu[0]);
}

#[test]
fn fused_programs_beyond_the_binding_limit() {
    let Some(dev) = device() else { return };
    let p = mixed_widths(10);
    let gpu = gpu_for(&p, &dev);
    let ctx = Arc::clone(gpu.context());
    let q: Vec<usize> = (0..ctx.q_count()).collect();
    let max = dev.max_storage_buffers() as usize;
    let mut rng = Rng(41);
    // One output over more buffers than a kernel may bind: a typed error.
    let (specs, outputs) = weighted_sum(&ctx, &mut rng, &q, max);
    let bufs: Vec<_> = specs
        .iter()
        .map(|s| match s {
            Spec::Buffer { data, .. } => Some(gpu.upload(data).unwrap()),
            _ => None,
        })
        .collect();
    let operands = specs
        .iter()
        .zip(&bufs)
        .map(|(s, b)| match s {
            Spec::Buffer { basis, format, .. } => Operand::Buffer {
                buf: b.as_ref().unwrap(),
                basis,
                format: *format,
                traffic: Traffic::Ciphertext,
                limb_offset: 0,
            },
            Spec::Scalar(s) => Operand::Scalar(s.clone()),
            Spec::Uniform { .. } => unreachable!(),
        })
        .collect();
    let program = Program { basis: &q, operands, outputs };
    assert!(matches!(gpu.fused(&program), Err(wgfhe::Error::AdapterLimit { .. })));
    // Three outputs that each fit but together do not: split, and still equal to the CPU.
    let per = (max - 2) / 2;
    let specs: Vec<Spec> = (0..3 * per).map(|_| stored(&ctx, &mut rng, &q, Format::Words)).collect();
    let outputs: Vec<(Expr, Format)> =
        (0..3).map(|o| (Expr::Sum((o * per..(o + 1) * per).map(Expr::load).collect()), Format::Packed)).collect();
    check_fused("split", &gpu, &q, &specs, &outputs);
}

// ---- the recording engine -------------------------------------------------------------------

use wgfhe::backend::gpu::{Arithmetic, DeviceOptions};
use wgfhe::backend::BackendChoice;
use wgfhe::bgv::Bgv;

/// A device of its own: its counters are not shared with tests running alongside.
fn own_device(options: DeviceOptions) -> Arc<GpuDevice> {
    Arc::new(GpuDevice::with_options(options).unwrap())
}

fn words_of(spec: Spec) -> Vec<u32> {
    match spec {
        Spec::Buffer { data, .. } => data,
        _ => unreachable!(),
    }
}

fn small_bgv(log_n: u32) -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap()
}

/// Kernels are recorded, not submitted: a chain of them is one submission, at the readback in
/// its middle, and the work recorded after it runs at the next readback, with the same words as
/// the CPU's.
#[test]
fn recorded_chains_with_readbacks_in_the_middle() {
    let Some(_) = device() else { return };
    let dev = own_device(DeviceOptions::default());
    let gpu = gpu_for(&small_bgv(10), &dev);
    let ctx = Arc::clone(gpu.context());
    let cpu = CpuBackend::new(Arc::clone(&ctx));
    let q: Vec<usize> = (0..ctx.q_count()).collect();
    let mut rng = Rng(41);
    let [a_h, b_h, c_h] = [0; 3].map(|_| words_of(stored(&ctx, &mut rng, &q, Format::Words)));
    let g = 5;
    // Every kernel once first: their constant tables are uploaded on first use, then resident.
    let warm = gpu.upload(&a_h).unwrap();
    let mut t = gpu.sub(&gpu.mul(&gpu.add(&warm, &warm, &q).unwrap(), &warm, &q).unwrap(), &warm, &q).unwrap();
    gpu.ntt_inverse(&mut t, &q).unwrap();
    let t = gpu.neg(&gpu.gather_limbs(&gpu.automorphism(&t, g, &q).unwrap(), &[2, 0]).unwrap(), &[q[2], q[0]]).unwrap();
    gpu.download(&t).unwrap();

    let start = dev.counters();
    let (a, b, c) = (gpu.upload(&a_h).unwrap(), gpu.upload(&b_h).unwrap(), gpu.upload(&c_h).unwrap());
    let x = gpu.add(&a, &b, &q).unwrap();
    let mut y = gpu.mul(&x, &c, &q).unwrap();
    gpu.ntt_inverse(&mut y, &q).unwrap();
    let recorded = dev.counters() - start;
    assert_eq!(recorded.submissions, 0, "kernels were submitted one by one");
    assert!(recorded.dispatches >= 3);
    assert_eq!((recorded.uploads, recorded.upload_bytes), (3, 3 * 4 * a_h.len() as u64));
    // A readback in the middle submits everything recorded so far, once.
    let x_h = gpu.download(&x).unwrap();
    let after_read = dev.counters() - start;
    assert_eq!((after_read.submissions, after_read.readbacks), (1, 1));
    // More work on the results, and on buffers read before.
    let z = gpu.sub(&y, &a, &q).unwrap();
    let w = gpu.automorphism(&z, g, &q).unwrap();
    let v = gpu.gather_limbs(&w, &[2, 0]).unwrap();
    assert_eq!((dev.counters() - start).submissions, 1);
    let (y_h, w_h, v_h) = (gpu.download(&y).unwrap(), gpu.download(&w).unwrap(), gpu.download(&v).unwrap());
    // The second readback submitted the rest; the third found nothing new to submit but its copy.
    assert_eq!((dev.counters() - start).submissions, 4);

    let cx = cpu.add(&a_h, &b_h, &q).unwrap();
    let mut cy = cpu.mul(&cx, &c_h, &q).unwrap();
    cpu.ntt_inverse(&mut cy, &q).unwrap();
    let cw = cpu.automorphism(&cpu.sub(&cy, &a_h, &q).unwrap(), g, &q).unwrap();
    assert_eq!(x_h, cx);
    assert_eq!(y_h, cy);
    assert_eq!(w_h, cw);
    assert_eq!(v_h, cpu.gather_limbs(&cw, &[2, 0]).unwrap());
    // Copies of consecutive limbs are one copy command.
    let before = dev.counters();
    let (g3, g2) = (gpu.gather_limbs(&w, &[0, 1, 2]).unwrap(), gpu.gather_limbs(&w, &[3, 1]).unwrap());
    assert_eq!((dev.counters() - before).copies, 3);
    assert_eq!(gpu.download(&g3).unwrap(), cpu.gather_limbs(&cw, &[0, 1, 2]).unwrap());
    assert_eq!(gpu.download(&g2).unwrap(), cpu.gather_limbs(&cw, &[3, 1]).unwrap());
    // `flush` submits without reading back; a second one has nothing to submit.
    let u = gpu.neg(&v, &[q[2], q[0]]).unwrap();
    let before = dev.counters();
    gpu.flush().unwrap();
    gpu.flush().unwrap();
    assert_eq!((dev.counters() - before).submissions, 1);
    assert_eq!(gpu.download(&u).unwrap(), cpu.neg(&v_h, &[q[2], q[0]]).unwrap());
}

/// A buffer released while commands that read it are recorded (not yet submitted) must not take
/// an upload: the upload's write runs at the start of the next submission, before those
/// commands. Kernel outputs may reuse it (their writes are recorded after the reads).
#[test]
fn recycled_buffers_reused_by_uploads_mid_chain() {
    let Some(_) = device() else { return };
    let dev = own_device(DeviceOptions::default());
    let gpu = gpu_for(&small_bgv(10), &dev);
    let ctx = Arc::clone(gpu.context());
    let cpu = CpuBackend::new(Arc::clone(&ctx));
    let q: Vec<usize> = (0..ctx.q_count()).collect();
    let mut rng = Rng(43);
    for round in 0..4 {
        let [a_h, b_h, c_h, d_h] = [0; 4].map(|_| words_of(stored(&ctx, &mut rng, &q, Format::Words)));
        let start = dev.counters();
        let a = gpu.upload(&a_h).unwrap();
        let b = gpu.upload(&b_h).unwrap();
        let x = gpu.add(&a, &b, &q).unwrap();
        // Released with the add recorded, not submitted; then uploads of the same size class.
        drop(a);
        drop(b);
        let c = gpu.upload(&c_h).unwrap();
        let d = gpu.upload(&d_h).unwrap();
        let y = gpu.mul(&x, &c, &q).unwrap();
        drop(c);
        // Kernel outputs of the same class, possibly on the released buffers.
        let z = gpu.sub(&y, &d, &q).unwrap();
        let t = gpu.mul(&z, &x, &q).unwrap();
        drop(d);
        let e = gpu.upload(&a_h).unwrap();
        let u = gpu.add(&t, &e, &q).unwrap();
        assert_eq!((dev.counters() - start).submissions, 0, "round {round}");
        let cx = cpu.add(&a_h, &b_h, &q).unwrap();
        let cy = cpu.mul(&cx, &c_h, &q).unwrap();
        let cz = cpu.sub(&cy, &d_h, &q).unwrap();
        let ct = cpu.mul(&cz, &cx, &q).unwrap();
        assert_eq!(gpu.download(&u).unwrap(), cpu.add(&ct, &a_h, &q).unwrap(), "round {round}");
        assert_eq!(gpu.download(&x).unwrap(), cx, "round {round}");
        assert_eq!(gpu.download(&y).unwrap(), cy, "round {round}");
        assert_eq!(gpu.download(&z).unwrap(), cz, "round {round}");
    }
}

/// An HMULT with relinearisation is at most two submissions (one here: the schemes flush at the
/// end of the operation), its constant tables stay resident (a second HMULT uploads nothing but
/// at most one parameter arena per submission) and it decrypts to the product.
#[test]
fn hmult_with_relinearisation_is_at_most_two_submissions() {
    let Some(_) = device() else { return };
    let dev = own_device(DeviceOptions::default());
    for p in [small_bgv(10), small_bgv(12)] {
        let bgv = Bgv::new(gpu_for(&p, &dev)).unwrap();
        let sk = bgv.gen_secret_key().unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
        let enc = |v: &[u64]| bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(v).unwrap()).unwrap();
        let (x, y) = (enc(&[1, 2, 3, 4]), enc(&[5, 6, 7, 65536]));
        let mut counts = Vec::new();
        for _ in 0..2 {
            bgv.backend().synchronize().unwrap();
            let before = dev.counters();
            let prod = bgv.mul_relin(&x, &y, &keys).unwrap();
            let during = dev.counters() - before;
            bgv.backend().synchronize().unwrap();
            let all = dev.counters() - before;
            assert!(all.submissions <= 2, "{}: HMULT took {} submissions: {all:?}", p.name(), all.submissions);
            // Dispatches are counted as they are recorded (the wait adds none).
            assert!(during.dispatches > 0 && during.dispatches == all.dispatches, "{all:?}");
            assert_eq!(all.readbacks, 0);
            let got = bgv.encoder().decode(&bgv.decrypt(&sk, &prod).unwrap()).unwrap();
            assert_eq!(got[..4], [5, 12, 21, 65533]);
            counts.push(all);
        }
        eprintln!("{}: first HMULT {:?}, second {:?}", p.name(), counts[0], counts[1]);
        // At most the parameter arena of each submission (nothing where every kernel's
        // parameters are immediates).
        assert!(counts[1].uploads <= counts[1].submissions, "{}: {:?}", p.name(), counts[1]);
    }
}

/// `WGFHE_BACKEND=auto` takes the CPU backend on a software adapter; `gpu` takes any adapter.
#[test]
fn auto_skips_software_adapters() {
    let Some(dev) = device() else { return };
    let software = dev.summary().is_software();
    eprintln!("adapter {:?}: software {software}", dev.summary().name);
    assert_eq!(wgfhe::backend::auto_accepts(dev.summary()), !software);
    let auto = BackendChoice::from_name("auto").unwrap();
    assert_eq!(matches!(auto, BackendChoice::Cpu), software);
    let rejected = GpuDevice::with_options(DeviceOptions { reject_software: true, ..DeviceOptions::default() });
    assert_eq!(matches!(rejected, Err(wgfhe::Error::NoAdapter { .. })), software);
    assert!(matches!(BackendChoice::from_name("gpu").unwrap(), BackendChoice::Gpu(_)));
}

/// The native 64-bit and the emulated arithmetic, and parameters as immediates or in the arena,
/// give the CPU's words: the shared device uses native 64-bit integers and immediates where the
/// adapter has them, and devices of their own are forced onto the other paths.
#[test]
fn every_device_path_matches_cpu() {
    let Some(dev) = device() else { return };
    eprintln!(
        "adapter features: {:?}; arithmetic {:?}; immediates {}",
        dev.summary().features,
        dev.arithmetic(),
        dev.uses_immediates()
    );
    let has = |f: &str| dev.summary().features.iter().any(|x| x == f);
    assert_eq!(dev.arithmetic(), if has("SHADER_INT64") { Arithmetic::NativeInt64 } else { Arithmetic::Emulated });
    if !has("IMMEDIATES") {
        assert!(!dev.uses_immediates());
    }
    let mut devices = vec![dev];
    for (emulate_int64, no_immediates) in [(true, false), (false, true), (true, true)] {
        let d = own_device(DeviceOptions { emulate_int64, no_immediates, ..DeviceOptions::default() });
        if emulate_int64 {
            assert_eq!((d.arithmetic(), d.summary().arithmetic), (Arithmetic::Emulated, Arithmetic::Emulated));
        }
        if no_immediates {
            assert!(!d.uses_immediates());
        }
        devices.push(d);
    }
    for d in &devices {
        fixed_programs(&gpu_for(&mixed_widths(10), d), 51);
        fixed_programs(&gpu_for(&mixed_widths(4), d), 52);
        // A BGV HMULT, rotation and modulus switch, word for word against the CPU.
        let p = small_bgv(10);
        let want = bgv_words(CpuBackend::new(RingContext::new(&p).unwrap()));
        assert_eq!(bgv_words(gpu_for(&p, d)), want, "{:?}, immediates {}", d.arithmetic(), d.uses_immediates());
    }
}

/// Device time from timestamp queries: where the adapter has them (lavapipe does) the device
/// measures itself, every submission is timed once waited for, and the device time is positive
/// and no larger than the wall time around it; with timestamps turned off nothing is measured
/// and the words are the same. Devices of their own, so no other test's submissions count.
#[test]
fn device_time_comes_from_timestamps() {
    let Some(shared) = device() else { return };
    let has = |f: &str| shared.summary().features.iter().any(|x| x == f);
    let timestamps = has("TIMESTAMP_QUERY") && has("TIMESTAMP_QUERY_INSIDE_ENCODERS");
    assert_eq!(shared.has_timestamps(), timestamps);
    let p = small_bgv(10);
    let want = bgv_words(CpuBackend::new(RingContext::new(&p).unwrap()));
    let dev = own_device(DeviceOptions::default());
    let be = gpu_for(&p, &dev);
    be.synchronize().unwrap();
    let before = dev.counters();
    let start = std::time::Instant::now();
    assert_eq!(bgv_words(be), want);
    dev.wait().unwrap();
    let wall_ns = u64::try_from(start.elapsed().as_nanos()).unwrap();
    let d = dev.counters() - before;
    assert!(d.submissions > 0, "{d:?}");
    if timestamps {
        assert_eq!(d.timed_submissions, d.submissions, "{d:?}");
        assert!(d.device_ns > 0 && d.device_ns <= wall_ns, "device {} ns, wall {wall_ns} ns", d.device_ns);
    } else {
        assert_eq!((d.device_ns, d.timed_submissions), (0, 0));
    }
    let off = own_device(DeviceOptions { no_timestamps: true, ..DeviceOptions::default() });
    assert!(!off.has_timestamps());
    assert_eq!(bgv_words(gpu_for(&p, &off)), want);
    off.wait().unwrap();
    let c = off.counters();
    assert!(c.submissions > 0);
    assert_eq!((c.device_ns, c.timed_submissions), (0, 0));
}

/// The words of a seeded BGV HMULT, rotation and modulus switch on `be`.
fn bgv_words<B: Backend>(be: B) -> Vec<Vec<u32>> {
    let bgv = Bgv::new(be).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[9; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
    let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[3, 1, 4, 1, 5]).unwrap()).unwrap();
    let prod = bgv.mul_relin(&x, &x, &keys).unwrap();
    let rot = bgv.rotate_columns(&prod, 1, &keys).unwrap();
    let low = bgv.mod_switch(&rot, 1).unwrap();
    [&prod, &rot, &low].iter().flat_map(|c| c.polys().iter().map(|p| p.to_host(bgv.backend()).unwrap())).collect()
}

/// The device counters of an HMULT with relinearisation at the benchmark's rings (bgv-n14 and
/// the BXT paper's bgv-bxt-n16), printed: minutes of key generation on a software adapter, so
/// run on request (`cargo test --release --test gpu -- --ignored --nocapture`).
#[test]
#[ignore = "minutes on a software adapter; prints the counts for reports"]
fn hmult_counters_at_the_benchmark_rings() {
    let Some(_) = device() else { return };
    let dev = own_device(DeviceOptions::default());
    for name in ["bgv-n14", "bgv-bxt-n16"] {
        let p = params::by_name(name).unwrap();
        let bgv = Bgv::new(gpu_for(&p, &dev)).unwrap();
        let sk = bgv.gen_secret_key().unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
        let enc = |v: &[u64]| bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(v).unwrap()).unwrap();
        let (x, y) = (enc(&[1, 2, 3]), enc(&[4, 5, 6]));
        for run in ["first", "second"] {
            bgv.backend().synchronize().unwrap();
            let before = dev.counters();
            let prod = bgv.mul_relin(&x, &y, &keys).unwrap();
            bgv.backend().synchronize().unwrap();
            let c = dev.counters() - before;
            eprintln!("{name}: {run} HMULT {c:?}");
            assert!(c.submissions <= 2);
            drop(prod);
        }
    }
}

// ---- the ledger's model of the engine ---------------------------------------------------------

/// The traffic ledger's model of the GPU engine (`gpu_dispatches`, `gpu_copies`, submissions,
/// readbacks, uploads of the calls; what the ledger suite reports on the CPU backend) is what
/// the device counts for the same calls: for encryption, HMULT with relinearisation, rotation,
/// modulus switching, an addition and decryption, at one and at two NTT passes. Uploads: the
/// model charges a parameter-arena write per submission with a dispatch (a device without
/// immediates); a device with immediates may write fewer.
#[test]
fn ledger_engine_model_matches_the_device() {
    use wgfhe::backend::ledger::Ledger;
    let Some(_) = device() else { return };
    let dev = own_device(DeviceOptions::default());
    for p in [small_bgv(10), small_bgv(13)] {
        let bgv = Bgv::new(Ledger::new(gpu_for(&p, &dev))).unwrap();
        let ledger = bgv.backend();
        let sk = bgv.gen_secret_key().unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
        let pt = bgv.encoder().encode(&[3, 1, 4, 1, 5]).unwrap();
        let x = bgv.encrypt_symmetric(&sk, &pt).unwrap();
        let y = bgv.encrypt_symmetric(&sk, &pt).unwrap();
        type Op<'a> = (&'static str, Box<dyn Fn() + 'a>);
        let ops: Vec<Op<'_>> = vec![
            ("encrypt", Box::new(|| drop(bgv.encrypt_symmetric(&sk, &pt).unwrap()))),
            ("hmult", Box::new(|| drop(bgv.mul_relin(&x, &y, &keys).unwrap()))),
            ("rotation", Box::new(|| drop(bgv.rotate_columns(&x, 1, &keys).unwrap()))),
            ("mod_switch", Box::new(|| drop(bgv.mod_switch(&x, 2).unwrap()))),
            ("add", Box::new(|| drop(bgv.add(&x, &y).unwrap()))),
            ("decrypt", Box::new(|| drop(bgv.decrypt(&sk, &x).unwrap()))),
        ];
        for (name, op) in &ops {
            // Warm-up: pipelines built, constant tables uploaded.
            op();
            ledger.synchronize().unwrap();
            ledger.take_engine();
            let before = dev.counters();
            op();
            ledger.synchronize().unwrap();
            let d = dev.counters() - before;
            let m = ledger.take_engine();
            let what = format!("{name} at 2^{}", p.log_n());
            assert!(m.gpu_dispatches > 0 || *name == "decrypt", "{what}: {m:?}");
            assert_eq!(m.gpu_dispatches, d.dispatches, "{what}: dispatches, model {m:?}, device {d:?}");
            assert_eq!(m.gpu_copies, d.copies, "{what}: copies, model {m:?}, device {d:?}");
            assert_eq!(m.submissions, d.submissions, "{what}: submissions, model {m:?}, device {d:?}");
            assert_eq!(m.readbacks, d.readbacks, "{what}: readbacks, model {m:?}, device {d:?}");
            assert!(d.uploads <= m.uploads, "{what}: uploads, model {m:?}, device {d:?}");
        }
        // Top-level operations submit once (the schemes flush at their end).
        for name in ["hmult", "rotation"] {
            let op = &ops.iter().find(|(n, _)| *n == name).unwrap().1;
            ledger.synchronize().unwrap();
            let before = dev.counters();
            op();
            assert_eq!((dev.counters() - before).submissions, 1, "{name}");
        }
    }
}

/// `build_pipelines` builds what an HMULT dispatches without running it (no dispatch, copy or
/// submission counted), refuses a readback and turns recording back on; the HMULT run after it
/// compiles nothing and decrypts to the product.
#[test]
fn pipelines_are_built_before_the_work() {
    let Some(_) = device() else { return };
    let dev = own_device(DeviceOptions::default());
    let p = small_bgv(10);
    let bgv = Bgv::new(gpu_for(&p, &dev)).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    let t = u64::from(bgv.plaintext_modulus());
    let slots = bgv.encoder().slots();
    let u: Vec<u64> = (0..slots as u64).map(|i| i % t).collect();
    let v: Vec<u64> = (0..slots as u64).map(|i| (3 * i + 1) % t).collect();
    let x = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&u).unwrap()).unwrap();
    let y = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&v).unwrap()).unwrap();
    dev.wait().unwrap();
    let before = dev.counters();
    let built = bgv.backend().build_pipelines(&mut || bgv.mul_relin(&x, &y, &keys).map(drop)).unwrap();
    let d = dev.counters() - before;
    assert!(built > 0 && d.pipelines_built == built as u64, "{built} built, {d:?}");
    assert_eq!((d.dispatches, d.copies, d.submissions, d.readbacks), (0, 0, 0, 0), "{d:?}");
    // A readback has nothing to read: a typed error, and recording is on again after it.
    let r = bgv.backend().build_pipelines(&mut || bgv.decrypt(&sk, &x).map(drop));
    assert!(matches!(r, Err(wgfhe::Error::Backend { .. })), "{r:?}");
    let before = dev.counters();
    let z = bgv.mul_relin(&x, &y, &keys).unwrap();
    dev.wait().unwrap();
    let d = dev.counters() - before;
    assert_eq!(d.pipelines_built, 0, "{d:?}");
    assert!(d.dispatches > 0, "{d:?}");
    let got = bgv.encoder().decode(&bgv.decrypt(&sk, &z).unwrap()).unwrap();
    let want: Vec<u64> = u.iter().zip(&v).map(|(a, b)| a * b % t).collect();
    assert_eq!(got, want);
}

/// `GpuDevice::memory` counts the device memory of the live buffers (wgpu's own count): a new
/// buffer adds at least its size; dropped, it stays in the pool (counted idle, the bytes
/// unchanged); a second buffer of that class reuses it (no bytes added).
#[test]
fn device_memory_counts_the_live_buffers() {
    let Some(dev) = common::own_device() else { return };
    // An odd size, so that no pooled buffer of its class exists yet.
    let words = (1 << 18) + 3;
    let before = dev.memory();
    let buf = dev.output(words).unwrap();
    let with = dev.memory();
    assert!(with.buffer_bytes >= before.buffer_bytes + 4 * words as u64, "{before:?} -> {with:?}");
    assert_eq!(with.buffers, before.buffers + 1);
    dev.pool().recycle(buf);
    dev.wait().unwrap();
    let idle = dev.memory();
    assert_eq!((idle.buffer_bytes, idle.buffers), (with.buffer_bytes, with.buffers), "{idle:?}");
    assert!(idle.pool.bytes >= before.pool.bytes + 4 * words as u64, "{idle:?}");
    let again = dev.output(words).unwrap();
    assert_eq!(dev.memory().buffer_bytes, with.buffer_bytes, "the pooled buffer is reused");
    drop(again);
}
