//! The GPU backend against the CPU reference, bit for bit: every kernel on seeded random inputs
//! (several N and limb counts, sizes that are not multiples of the workgroup size, each run
//! twice), and whole seeded BGV and CKKS programs with every intermediate ciphertext compared.
//! A backend that flips one bit of one kernel's output must make the comparison fail.
//!
//! Without an adapter the tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` (set in CI) turns
//! that into a failure.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    missing_docs,
    reason = "tests"
)]

use std::sync::{Arc, OnceLock};

use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::math::sampling::Purpose;
use wgfhe::params::{self, Parameters};
use wgfhe::poly::RingContext;

/// The shared device, or why there is none.
fn device() -> Option<Arc<GpuDevice>> {
    static DEV: OnceLock<Result<Arc<GpuDevice>, String>> = OnceLock::new();
    let dev = DEV.get_or_init(|| GpuDevice::new().map(Arc::new).map_err(|e| e.to_string()));
    match dev {
        Ok(d) => {
            static ONCE: OnceLock<()> = OnceLock::new();
            ONCE.get_or_init(|| eprintln!("GPU adapter: {:?}", d.summary()));
            Some(Arc::clone(d))
        }
        Err(reason) => {
            assert!(
                std::env::var("WGFHE_REQUIRE_GPU").as_deref() != Ok("1"),
                "WGFHE_REQUIRE_GPU=1 but no GPU: {reason}"
            );
            println!("SKIPPED: {reason}");
            None
        }
    }
}

fn backends(params: &Parameters) -> Option<(CpuBackend, GpuBackend)> {
    let dev = device()?;
    let cpu = CpuBackend::new(RingContext::new(params).unwrap());
    let gpu = GpuBackend::new(RingContext::new(params).unwrap(), dev);
    Some((cpu, gpu))
}

fn random_residues(be: &CpuBackend, basis: &[usize], rng: &mut ChaCha8Rng) -> Vec<u32> {
    let n = be.context().n();
    let mut out = Vec::with_capacity(basis.len() * n);
    for &i in basis {
        let q = be.context().modulus(i).unwrap().value();
        out.extend((0..n).map(|_| rng.random_range(0..q)));
    }
    out
}

fn check_kernels(params: &Parameters, seed: u64) {
    let Some((cpu, gpu)) = backends(params) else { return };
    let ctx = cpu.context().clone();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let top = ctx.q_count() - 1;
    let all = ctx.qp_basis(top).unwrap();
    let n = ctx.n();
    let name = params.name().to_string();
    for limbs in [1, all.len()] {
        let basis: Vec<usize> = all.iter().take(limbs).copied().collect();
        let a = random_residues(&cpu, &basis, &mut rng);
        let b = random_residues(&cpu, &basis, &mut rng);
        let c = random_residues(&cpu, &basis, &mut rng);
        let (ga, gb) = (gpu.upload(&a).unwrap(), gpu.upload(&b).unwrap());
        let twice = |label: &str, run: &dyn Fn() -> Vec<u32>, want: Vec<u32>| {
            let first = run();
            let second = run();
            assert_eq!(first, second, "{name}: {label} is not deterministic ({limbs} limbs)");
            let mismatches = first.iter().zip(&want).filter(|(x, y)| x != y).count();
            assert!(
                first.len() == want.len() && mismatches == 0,
                "{name}: {label} differs in {mismatches} words ({limbs} limbs)"
            );
        };
        twice("add", &|| gpu.download(&gpu.add(&ga, &gb, &basis).unwrap()).unwrap(), cpu.add(&a, &b, &basis).unwrap());
        twice("sub", &|| gpu.download(&gpu.sub(&ga, &gb, &basis).unwrap()).unwrap(), cpu.sub(&a, &b, &basis).unwrap());
        twice("neg", &|| gpu.download(&gpu.neg(&ga, &basis).unwrap()).unwrap(), cpu.neg(&a, &basis).unwrap());
        twice("mul", &|| gpu.download(&gpu.mul(&ga, &gb, &basis).unwrap()).unwrap(), cpu.mul(&a, &b, &basis).unwrap());
        let scalars: Vec<u32> = basis.iter().map(|&i| rng.random_range(0..ctx.modulus(i).unwrap().value())).collect();
        twice(
            "mul_scalar",
            &|| gpu.download(&gpu.mul_scalar(&ga, &scalars, &basis).unwrap()).unwrap(),
            cpu.mul_scalar(&a, &scalars, &basis).unwrap(),
        );
        let mut want = c.clone();
        cpu.mul_add(&mut want, &a, &b, &basis).unwrap();
        twice(
            "mul_add",
            &|| {
                let mut acc = gpu.upload(&c).unwrap();
                gpu.mul_add(&mut acc, &ga, &gb, &basis).unwrap();
                gpu.download(&acc).unwrap()
            },
            want,
        );
        for g in [3usize, 5, 2 * n - 1, (25 % (2 * n)) | 1] {
            twice(
                "automorphism",
                &|| gpu.download(&gpu.automorphism(&ga, g, &basis).unwrap()).unwrap(),
                cpu.automorphism(&a, g, &basis).unwrap(),
            );
        }
        let mut want = a.clone();
        cpu.ntt_forward(&mut want, &basis).unwrap();
        twice(
            "ntt_forward",
            &|| {
                let mut x = gpu.upload(&a).unwrap();
                gpu.ntt_forward(&mut x, &basis).unwrap();
                gpu.download(&x).unwrap()
            },
            want,
        );
        let mut want = a.clone();
        cpu.ntt_inverse(&mut want, &basis).unwrap();
        twice(
            "ntt_inverse",
            &|| {
                let mut x = gpu.upload(&a).unwrap();
                gpu.ntt_inverse(&mut x, &basis).unwrap();
                gpu.download(&x).unwrap()
            },
            want,
        );
        twice(
            "uniform",
            &|| gpu.download(&gpu.uniform(&[9; 32], Purpose::CiphertextA, 3, &basis).unwrap()).unwrap(),
            cpu.uniform(&[9; 32], Purpose::CiphertextA, 3, &basis).unwrap(),
        );
        if limbs > 1 {
            let (from, to) = basis.split_at(limbs / 2);
            let part = a[..from.len() * n].to_vec();
            let gpart = gpu.upload(&part).unwrap();
            twice(
                "base_convert",
                &|| gpu.download(&gpu.base_convert(&gpart, from, to).unwrap()).unwrap(),
                cpu.base_convert(&part, from, to).unwrap(),
            );
            for drop in [1, limbs - 1] {
                let keep = &basis[..limbs - drop];
                let dropped = &basis[limbs - drop..];
                for t in [None, Some(65537u32)] {
                    twice(
                        "scale_down",
                        &|| gpu.download(&gpu.scale_down(&ga, keep, dropped, t).unwrap()).unwrap(),
                        cpu.scale_down(&a, keep, dropped, t).unwrap(),
                    );
                }
            }
            let positions: Vec<usize> = (0..limbs).rev().collect();
            twice(
                "gather_limbs",
                &|| gpu.download(&gpu.gather_limbs(&ga, &positions).unwrap()).unwrap(),
                cpu.gather_limbs(&a, &positions).unwrap(),
            );
        }
        // Key-switch inner product: two digits over `basis`, keys over the full basis.
        let kb: Vec<Vec<u32>> = (0..2).map(|_| random_residues(&cpu, &all, &mut rng)).collect();
        let ka: Vec<Vec<u32>> = (0..2).map(|_| random_residues(&cpu, &all, &mut rng)).collect();
        let gkb: Vec<_> = kb.iter().map(|k| gpu.upload(k).unwrap()).collect();
        let gka: Vec<_> = ka.iter().map(|k| gpu.upload(k).unwrap()).collect();
        let (w0, w1) =
            cpu.key_switch_inner_product(&[&a, &b], &basis, &[(&kb[0], &ka[0]), (&kb[1], &ka[1])], &all).unwrap();
        let run = |which: usize| {
            let (o0, o1) = gpu
                .key_switch_inner_product(&[&ga, &gb], &basis, &[(&gkb[0], &gka[0]), (&gkb[1], &gka[1])], &all)
                .unwrap();
            gpu.download(if which == 0 { &o0 } else { &o1 }).unwrap()
        };
        twice("key_switch_inner_product b", &|| run(0), w0);
        twice("key_switch_inner_product a", &|| run(1), w1);
    }
}

#[test]
fn kernels_match_cpu_small_rings() {
    // N = 16 and 128: sizes below and not multiples of the 256-thread workgroup.
    check_kernels(&params::insecure_test_bgv(4, 3, 2, 3, 97).unwrap(), 1);
    check_kernels(&params::insecure_test_bgv(7, 4, 2, 2, 257).unwrap(), 2);
}

#[test]
fn kernels_match_cpu_n1024_to_n16384() {
    check_kernels(&params::insecure_test_bgv(10, 4, 2, 2, 65537).unwrap(), 3);
    check_kernels(&params::insecure_test_ckks(12, 5, 2, 3, 30).unwrap(), 4);
    check_kernels(&params::insecure_test_ckks(14, 3, 1, 3, 30).unwrap(), 5);
}

/// Every intermediate ciphertext of a seeded BGV program, as downloaded words.
fn bgv_transcript<B: Backend>(be: B) -> Vec<Vec<u32>> {
    let bgv = Bgv::new(be).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[7; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &[1, -2], true).unwrap();
    let slots = bgv.encoder().slots();
    let x: Vec<u64> = (0..slots as u64).map(|i| (i * 13 + 5) % 65537).collect();
    let pt = bgv.encoder().encode(&x).unwrap();
    let mut out = Vec::new();
    let mut record = |ct: &wgfhe::bgv::Ciphertext<B>| {
        for p in ct.polys() {
            out.push(p.to_host(bgv.backend()).unwrap());
        }
    };
    let a = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    let b = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    record(&a);
    let prod = bgv.mul_relin(&a, &b, &keys).unwrap();
    record(&prod);
    let rot = bgv.rotate_columns(&prod, 1, &keys).unwrap();
    record(&rot);
    let swap = bgv.rotate_rows(&rot, &keys).unwrap();
    record(&swap);
    let low = bgv.mod_switch(&swap, 1).unwrap();
    record(&low);
    let pm = bgv.mul_plain(&low, &pt).unwrap();
    record(&pm);
    out.push(bgv.decrypt(&sk, &pm).unwrap().coefficients().to_vec());
    out
}

/// Every intermediate ciphertext of a seeded CKKS program.
fn ckks_transcript<B: Backend>(be: B) -> Vec<Vec<u32>> {
    let ckks = Ckks::new(be, ScalePolicy::Single).unwrap();
    let sk = ckks.gen_secret_key_from_seed(&[8; 32]).unwrap();
    let keys = ckks.gen_evaluation_keys(&sk, &[1, 3], true).unwrap();
    let slots = ckks.encoder().max_slots();
    let x: Vec<Complex64> = (0..slots).map(|i| Complex64::new((i as f64 / slots as f64) - 0.5, 0.25)).collect();
    let pt = ckks.encode(&x, ckks.default_scale(), slots, ckks.max_level()).unwrap();
    let mut out = Vec::new();
    let mut record = |ct: &wgfhe::ckks::Ciphertext<B>| {
        for p in ct.polys() {
            out.push(p.to_host(ckks.backend()).unwrap());
        }
    };
    let a = ckks.encrypt_symmetric(&sk, &pt).unwrap();
    record(&a);
    let prod = ckks.rescale(&ckks.mul_relin(&a, &a, &keys).unwrap()).unwrap();
    record(&prod);
    let rot = ckks.rotate(&prod, 3, &keys).unwrap();
    record(&rot);
    let conj = ckks.conjugate(&rot, &keys).unwrap();
    record(&conj);
    let dec = ckks.decrypt(&sk, &conj).unwrap();
    out.push(dec.iter().flat_map(|z| [z.re.to_bits() as u32, (z.re.to_bits() >> 32) as u32]).collect());
    out
}

fn first_difference(a: &[Vec<u32>], b: &[Vec<u32>]) -> Option<(usize, usize)> {
    if a.len() != b.len() {
        return Some((a.len().min(b.len()), 0));
    }
    a.iter().zip(b).enumerate().find_map(|(i, (x, y))| {
        if x.len() != y.len() {
            return Some((i, 0));
        }
        x.iter().zip(y).position(|(u, v)| u != v).map(|j| (i, j))
    })
}

#[test]
fn bgv_programs_identical_on_both_backends() {
    for p in [params::insecure_test_bgv(10, 5, 2, 3, 65537).unwrap(), params::by_name("bgv-n13").unwrap()] {
        let Some((cpu, gpu)) = backends(&p) else { return };
        let (c, g) = (bgv_transcript(cpu), bgv_transcript(gpu));
        assert_eq!(first_difference(&c, &g), None, "{}: CPU and GPU transcripts differ", p.name());
    }
}

#[test]
fn ckks_programs_identical_on_both_backends() {
    for p in [params::insecure_test_ckks(10, 5, 2, 3, 30).unwrap(), params::by_name("ckks-n13").unwrap()] {
        let Some((cpu, gpu)) = backends(&p) else { return };
        let (c, g) = (ckks_transcript(cpu), ckks_transcript(gpu));
        assert_eq!(first_difference(&c, &g), None, "{}: CPU and GPU transcripts differ", p.name());
    }
}

#[test]
fn harness_detects_one_flipped_bit() {
    let p = params::insecure_test_bgv(10, 5, 2, 3, 65537).unwrap();
    let cpu = CpuBackend::new(RingContext::new(&p).unwrap());
    let flip = wgfhe::backend::testing::FlipOneBit::new(CpuBackend::new(RingContext::new(&p).unwrap()), "mul", 3);
    let (c, f) = (bgv_transcript(cpu), bgv_transcript(flip));
    assert!(first_difference(&c, &f).is_some(), "a flipped bit in one mul output went unnoticed");
}
