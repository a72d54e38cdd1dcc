//! The GPU NTT against the CPU reference, bit for bit: every degree, the smaller tiles of
//! adapters with less workgroup memory, its passes as its dispatches, and the out-of-place
//! inverse whose first pass forms its input (a copy, a product, an automorphism) and may keep it.
//!
//! Without an adapter the tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` (set in CI) turns
//! that into a failure.

#![expect(clippy::unwrap_used, reason = "tests")]

mod common;

use std::sync::Arc;

use common::{device, Rng};
use wgfhe::backend::gpu::{GpuDevice, NttPlan};
use wgfhe::backend::{Backend, CpuBackend, GpuBackend, InverseInput};
use wgfhe::math::primes::ntt_primes;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;

fn gpu_for(p: &Parameters, dev: &Arc<GpuDevice>) -> GpuBackend {
    GpuBackend::new(RingContext::new(p).unwrap(), Arc::clone(dev))
}

/// A CKKS set (insecure, for tests) at `2^log_n` with `limbs` chain primes of different widths
/// (30, 26 and 22 bits where such primes `= 1 mod 2N` exist, else wider) and one 30-bit special
/// prime.
fn ntt_ring(log_n: u32, limbs: usize) -> Parameters {
    let n = 1u64 << log_n;
    let special = ntt_primes(30, n, 1, &[]).unwrap();
    let mut primes: Vec<u64> = Vec::new();
    for bits in [30, 26, 22, 30, 26, 22].into_iter().take(limbs) {
        let taken: Vec<u64> = primes.iter().chain(&special).copied().collect();
        primes.extend(ntt_primes(bits.max(log_n + 4), n, 1, &taken).unwrap());
    }
    let mut lit = params::ckks_literal(&format!("ntt-n{log_n}-l{limbs}"), log_n, limbs, 1, limbs, 16).unwrap();
    lit.q = primes;
    lit.p = special;
    Parameters::new_insecure_for_tests(lit).unwrap()
}

/// Per limb of `basis`: `edges` (as multiples of q plus an offset, clipped to the limb) first,
/// then pseudo-random values below `bound_q * q`.
fn ntt_input(ctx: &RingContext, basis: &[usize], rng: &mut Rng, bound_q: u64, edges: &[(u64, i64)]) -> Vec<u32> {
    let n = ctx.n();
    let mut out = Vec::with_capacity(basis.len() * n);
    for &i in basis {
        let q = u64::from(ctx.modulus(i).unwrap().value());
        for j in 0..n {
            let v = match edges.get(j) {
                Some(&(mul, off)) => (mul * q).checked_add_signed(off).unwrap(),
                None => rng.next() % (bound_q * q),
            };
            out.push(u32::try_from(v).unwrap());
        }
    }
    out
}

/// Forward on inputs in `[0, 4q)` and inverse on inputs in `[0, 2q)` (edge values included), both
/// against the CPU; constant inputs at the top of each range; the round trip. With `plan`, the GPU
/// runs that plan instead of its own.
fn check_ntt(gpu: &GpuBackend, limbs: usize, seed: u64, plan: Option<&NttPlan>) {
    let ctx = Arc::clone(gpu.context());
    let cpu = CpuBackend::new(Arc::clone(&ctx));
    let basis: Vec<usize> = (0..limbs).collect();
    let log_n = ctx.params().log_n();
    let mut rng = Rng(seed);
    let run_gpu = |data: &[u32], inverse: bool| {
        let mut b = gpu.upload(data).unwrap();
        match (plan, inverse) {
            (Some(p), _) => gpu.ntt_with_plan(&mut b, &basis, inverse, p).unwrap(),
            (None, false) => gpu.ntt_forward(&mut b, &basis).unwrap(),
            (None, true) => gpu.ntt_inverse(&mut b, &basis).unwrap(),
        }
        gpu.download(&b).unwrap()
    };
    let run_cpu = |data: &[u32], inverse: bool| {
        let mut b = data.to_vec();
        if inverse {
            cpu.ntt_inverse(&mut b, &basis).unwrap();
        } else {
            cpu.ntt_forward(&mut b, &basis).unwrap();
        }
        b
    };
    let fwd_edges = [(0, 0), (1, -1), (4, -1), (1, 0), (2, -1), (2, 0), (3, 0), (0, 1), (3, 5), (4, -2)];
    let inv_edges = [(0, 0), (1, -1), (2, -1), (1, 0), (0, 1), (2, -2), (1, 1), (0, 2)];
    let n = ctx.n();
    let constant = |mul: u64, off: i64| ntt_input(&ctx, &basis, &mut Rng(0), 1, &vec![(mul, off); n]);
    for (inverse, bound, edges, tops) in
        [(false, 4, &fwd_edges[..], [(4, -1), (1, -1)]), (true, 2, &inv_edges[..], [(2, -1), (1, -1)])]
    {
        let mut inputs =
            vec![ntt_input(&ctx, &basis, &mut rng, bound, edges), ntt_input(&ctx, &basis, &mut rng, 1, &[])];
        inputs.extend(tops.iter().map(|&(m, o)| constant(m, o)));
        for (k, a) in inputs.iter().enumerate() {
            let want = run_cpu(a, inverse);
            assert!(
                run_gpu(a, inverse) == want,
                "ntt {} input {k}, 2^{log_n}, {limbs} limbs, plan {plan:?}",
                if inverse { "inverse" } else { "forward" }
            );
        }
    }
    // Round trip on canonical residues.
    let a = ntt_input(&ctx, &basis, &mut rng, 1, &[(1, -1), (0, 0)]);
    assert!(run_gpu(&run_gpu(&a, false), true) == a, "round trip, 2^{log_n}, {limbs} limbs, plan {plan:?}");
}

#[test]
fn ntt_matches_cpu_at_every_degree() {
    let Some(dev) = device() else { return };
    for log_n in 1..=17u32 {
        // Lavapipe is slow: fewer limbs at the largest degrees.
        let limbs = match log_n {
            17 => 1,
            15 | 16 => 2,
            _ => 3,
        };
        let gpu = gpu_for(&ntt_ring(log_n, limbs), &dev);
        check_ntt(&gpu, limbs, u64::from(log_n), None);
        if log_n < 15 {
            check_ntt(&gpu, 1, 100 + u64::from(log_n), None);
        }
    }
}

#[test]
fn ntt_smaller_tiles_match_cpu() {
    let Some(dev) = device() else { return };
    // The plans of adapters with 8 KiB and 4 KiB of workgroup memory (2048- and 1024-value
    // tiles): one, two and three passes.
    for storage in [8192u32, 4096] {
        let limits = wgpu::Limits { max_compute_workgroup_storage_size: storage, ..wgpu::Limits::default() };
        for (log_n, limbs) in [(3u32, 2usize), (10, 2), (11, 2), (12, 2), (14, 2), (16, 2), (17, 1)] {
            let plan = NttPlan::new(log_n, &limits).unwrap();
            assert_eq!(plan.log_tile(), if storage == 8192 { 11 } else { 10 });
            let gpu = gpu_for(&ntt_ring(log_n, limbs), &dev);
            check_ntt(&gpu, limbs, 7 * u64::from(log_n), Some(&plan));
        }
    }
    // A plan for another degree, and a tile the device cannot hold, are refused.
    let gpu = gpu_for(&ntt_ring(10, 1), &dev);
    let mut b = gpu.upload(&vec![0; 1024]).unwrap();
    let other = NttPlan::new(11, dev.limits()).unwrap();
    assert!(matches!(
        gpu.ntt_with_plan(&mut b, &[0], false, &other),
        Err(wgfhe::Error::DimensionMismatch { what: "NTT plan's log2 degree", .. })
    ));
}

#[test]
fn ntt_passes_are_its_dispatches() {
    let Some(_) = device() else { return };
    // A device of its own: the dispatch counter is not shared with tests running alongside.
    let dev = Arc::new(GpuDevice::new().unwrap());
    let storage = dev.limits().max_compute_workgroup_storage_size;
    eprintln!("workgroup memory: {storage} bytes, {} invocations", dev.limits().max_compute_invocations_per_workgroup);
    assert!(storage >= 16384, "the device was not given the adapter's workgroup memory (WebGPU: 16 KiB at least)");
    for (log_n, want) in [(1u32, 1u32), (8, 1), (12, 1), (13, 2), (16, 2), (17, 2)] {
        let gpu = gpu_for(&ntt_ring(log_n, 2), &dev);
        assert_eq!(gpu.ntt_passes(log_n).unwrap(), want, "2^{log_n}");
        let mut b = gpu.upload(&vec![1; 2 << log_n]).unwrap();
        for inverse in [false, true] {
            let before = dev.dispatch_count();
            if inverse {
                gpu.ntt_inverse(&mut b, &[0, 1]).unwrap();
            } else {
                gpu.ntt_forward(&mut b, &[0, 1]).unwrap();
            }
            assert_eq!(dev.dispatch_count() - before, u64::from(want), "2^{log_n}, inverse {inverse}");
        }
    }
}

/// Every form of the out-of-place inverse (a copy, a product, automorphisms), kept or not,
/// against the CPU's: the output, the kept input and the sources left as they were; with `plan`
/// the GPU runs that plan instead of its own.
fn check_inverse_from(gpu: &GpuBackend, limbs: usize, seed: u64, plan: Option<&NttPlan>) {
    let ctx = Arc::clone(gpu.context());
    let cpu = CpuBackend::new(Arc::clone(&ctx));
    let basis: Vec<usize> = (0..limbs).collect();
    let log_n = ctx.params().log_n();
    let mut rng = Rng(seed);
    let a = ntt_input(&ctx, &basis, &mut rng, 1, &[(1, -1), (0, 0), (0, 1)]);
    let b = ntt_input(&ctx, &basis, &mut rng, 1, &[(0, 0), (1, -1), (1, -1)]);
    let two_n = 2usize << log_n;
    let g5 = if two_n > 5 { 5 } else { 3 };
    let (ga, gb) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
    let (ca, cb) = (cpu.upload(&a).unwrap(), cpu.upload(&b).unwrap());
    let forms: Vec<(&str, InverseInput<'_, _>, InverseInput<'_, _>)> = vec![
        ("copy", InverseInput::Copy(&ga), InverseInput::Copy(&ca)),
        ("product", InverseInput::Product(&ga, &gb), InverseInput::Product(&ca, &cb)),
        ("automorphism 5", InverseInput::Automorphism(&ga, g5), InverseInput::Automorphism(&ca, g5)),
        ("conjugation", InverseInput::Automorphism(&ga, two_n - 1), InverseInput::Automorphism(&ca, two_n - 1)),
    ];
    for (name, g_in, c_in) in forms {
        for keep in [false, true] {
            let (want, want_kept) = cpu.ntt_inverse_from(c_in, &basis, keep).unwrap();
            let (got, got_kept) = match plan {
                Some(p) => gpu.ntt_inverse_from_with_plan(g_in, &basis, keep, p).unwrap(),
                None => gpu.ntt_inverse_from(g_in, &basis, keep).unwrap(),
            };
            let what = format!("{name}, keep {keep}, 2^{log_n}, {limbs} limbs, plan {plan:?}");
            assert!(gpu.download(&got).unwrap() == cpu.download(&want).unwrap(), "output: {what}");
            assert_eq!(got_kept.is_some(), keep, "{what}");
            if let (Some(g), Some(c)) = (&got_kept, &want_kept) {
                assert!(gpu.download(g).unwrap() == cpu.download(c).unwrap(), "kept input: {what}");
            }
        }
    }
    // The inverse of the product is the in-place inverse of the element-wise product.
    let mut prod = gpu.mul(&ga, &gb, &basis).unwrap();
    gpu.ntt_inverse(&mut prod, &basis).unwrap();
    let (fused, _) = gpu.ntt_inverse_from(InverseInput::Product(&ga, &gb), &basis, false).unwrap();
    assert!(gpu.download(&fused).unwrap() == gpu.download(&prod).unwrap(), "product, 2^{log_n}");
    assert!(gpu.download(&ga).unwrap() == a && gpu.download(&gb).unwrap() == b, "sources changed, 2^{log_n}");
}

#[test]
fn ntt_inverse_from_matches_cpu() {
    let Some(dev) = device() else { return };
    for (log_n, limbs) in [(1u32, 2usize), (4, 2), (11, 2), (12, 3), (13, 2), (16, 2)] {
        let gpu = gpu_for(&ntt_ring(log_n, limbs), &dev);
        check_inverse_from(&gpu, limbs, 31 * u64::from(log_n), None);
    }
    for storage in [8192u32, 4096] {
        let limits = wgpu::Limits { max_compute_workgroup_storage_size: storage, ..wgpu::Limits::default() };
        for (log_n, limbs) in [(10u32, 2usize), (12, 2), (16, 1)] {
            let plan = NttPlan::new(log_n, &limits).unwrap();
            let gpu = gpu_for(&ntt_ring(log_n, limbs), &dev);
            check_inverse_from(&gpu, limbs, 17 * u64::from(log_n), Some(&plan));
        }
    }
    // Sources of the wrong length are typed errors, as on the CPU.
    let gpu = gpu_for(&ntt_ring(10, 2), &dev);
    let short = gpu.upload(&vec![0; 1024]).unwrap();
    let full = gpu.upload(&vec![0; 2048]).unwrap();
    for input in
        [InverseInput::Copy(&short), InverseInput::Product(&full, &short), InverseInput::Automorphism(&short, 5)]
    {
        assert!(matches!(gpu.ntt_inverse_from(input, &[0, 1], true), Err(wgfhe::Error::DimensionMismatch { .. })));
    }
}

#[test]
fn ntt_inverse_from_is_the_transform_s_dispatches() {
    let Some(_) = device() else { return };
    // A device of its own: the dispatch counter is not shared with tests running alongside.
    let dev = Arc::new(GpuDevice::new().unwrap());
    for log_n in [8u32, 13, 16] {
        let gpu = gpu_for(&ntt_ring(log_n, 2), &dev);
        let want = u64::from(gpu.ntt_passes(log_n).unwrap());
        let (a, b) = (gpu.upload(&vec![1; 2 << log_n]).unwrap(), gpu.upload(&vec![2; 2 << log_n]).unwrap());
        for input in [InverseInput::Copy(&a), InverseInput::Product(&a, &b), InverseInput::Automorphism(&a, 3)] {
            let before = dev.dispatch_count();
            drop(gpu.ntt_inverse_from(input, &[0, 1], true).unwrap());
            assert_eq!(dev.dispatch_count() - before, want, "2^{log_n}");
        }
    }
}
