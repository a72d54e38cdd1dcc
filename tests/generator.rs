//! Generator 2 (ChaCha12, masked rejection; `math::sampling`) on the GPU against the CPU
//! reference, bit for bit, on rings whose primes lie just above a power of two, so that almost
//! half of all candidates are rejected and every kernel's fallback path runs: the `uniform`
//! kernel (N below, at and above the 16 residues of a block), the key-switching inner product
//! with seeded (and packed seeded) keys, and fused programs that regenerate streams at the
//! thread's own index, in the weighted-sum loop and at Galois-permuted indices.
//!
//! Without an adapter the tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1` (set in CI)
//! turns that into a failure.

#![expect(clippy::unwrap_used, reason = "tests")]

mod common;

use std::sync::Arc;

use common::device;
use wgfhe::backend::fused::{Expr, Format, Operand, Program};
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::math::sampling::{candidate_mask, rejection_probability, Purpose};
use wgfhe::params::{self, Parameters};
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::{self, NoiseScale};

/// Primality by trial division (values below 2^31).
fn is_prime(n: u64) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
}

/// The `count` smallest NTT primes (`1 mod 2N`) above `2^(bits - 1)`, not in `taken`.
fn primes_above(bits: u32, n: u64, count: usize, taken: &[u64]) -> Vec<u64> {
    (0..)
        .map(|k| (1u64 << (bits - 1)) + 1 + k * 2 * n)
        .filter(|&c| is_prime(c) && !taken.contains(&c))
        .take(count)
        .collect()
}

/// An insecure CKKS ring of degree 2^log_n with 4 + 2 primes of 30, 26, 22, 18 and 29, 20 bits,
/// each just above a power of two: rejection probability above 0.4 for every limb.
fn heavy_rejection(log_n: u32) -> Parameters {
    let n = 1u64 << log_n;
    let mut primes: Vec<u64> = Vec::new();
    for bits in [30, 26, 22, 18, 29, 20] {
        let p = primes_above(bits, n, 1, &primes);
        primes.extend(p);
    }
    for &q in &primes {
        let p = rejection_probability(u32::try_from(q).unwrap());
        assert!(p > 0.4, "q {q} rejects with p = {p}");
    }
    let mut lit = params::ckks_literal(&format!("heavy-rejection-n{log_n}"), log_n, 4, 2, 4, 16).unwrap();
    lit.p = primes.split_off(4);
    lit.q = primes;
    Parameters::new_insecure_for_tests(lit).unwrap()
}

fn backends(p: &Parameters, dev: &Arc<GpuDevice>) -> (CpuBackend, GpuBackend) {
    let ctx = RingContext::new(p).unwrap();
    (CpuBackend::new(Arc::clone(&ctx)), GpuBackend::new(ctx, Arc::clone(dev)))
}

#[test]
fn uniform_kernel_matches_cpu_with_heavy_rejection() {
    let Some(dev) = device() else { return };
    for log_n in [2u32, 3, 4, 5, 8, 11] {
        let (cpu, gpu) = backends(&heavy_rejection(log_n), &dev);
        let basis = cpu.context().qp_basis(3).unwrap();
        for (tag, purpose, index) in
            [(1u8, Purpose::CiphertextA, 0u32), (2, Purpose::KeySwitchA, 7), (3, Purpose::PublicKeyA, 0)]
        {
            let seed = [tag; 32];
            let want = RnsPoly::<CpuBackend, Eval>::uniform(&cpu, &seed, purpose, index, basis.clone()).unwrap();
            let got = RnsPoly::<GpuBackend, Eval>::uniform(&gpu, &seed, purpose, index, basis.clone()).unwrap();
            let (want, got) = (want.to_host(&cpu).unwrap(), got.to_host(&gpu).unwrap());
            assert_eq!(want, got, "log_n {log_n} {purpose:?}");
            // Every residue below its prime; and the words really exercise rejection: at least
            // one masked first candidate per limb of 2^11 residues is rejected, by construction.
            let n = 1usize << log_n;
            for (l, limb) in want.chunks_exact(n).enumerate() {
                let q = gpu.context().modulus(l).unwrap().value();
                assert!(limb.iter().all(|&x| x < q), "log_n {log_n} limb {l}");
                assert!(limb.iter().all(|&x| x <= candidate_mask(q)));
            }
        }
    }
}

/// Key switching at levels 0-3 with a stored, a seeded and a packed seeded key made from fixed
/// secrets on `be`: the words of `(d0, d1)` for every level and form.
fn switch_words<B: Backend>(be: &B) -> Vec<Vec<u32>> {
    let sk = rlwe::gen_secret_key(be, Some(&[1; 32])).unwrap();
    let other = rlwe::gen_secret_key(be, Some(&[2; 32])).unwrap();
    let stored = rlwe::gen_key_switch_key(be, other.eval(), &sk, NoiseScale(1)).unwrap();
    let seeded = stored.expand(be).unwrap().seeded();
    let packed = stored.expand(be).unwrap().seeded().packed(be).unwrap();
    let mut out = Vec::new();
    for level in 0..4 {
        let basis = be.context().q_basis(level).unwrap();
        let c = RnsPoly::<B, Eval>::uniform(be, &[9; 32], Purpose::Ephemeral, 1, basis).unwrap();
        for ksk in [&stored, &seeded, &packed] {
            let (d0, d1) = rlwe::key_switch(be, &c, ksk, None).unwrap();
            out.push(d0.to_host(be).unwrap());
            out.push(d1.to_host(be).unwrap());
        }
    }
    out
}

#[test]
fn seeded_key_switching_matches_cpu_with_heavy_rejection() {
    let Some(dev) = device() else { return };
    for log_n in [3u32, 6, 10] {
        let p = heavy_rejection(log_n);
        let (cpu, gpu) = backends(&p, &dev);
        let (want, got) = (switch_words(&cpu), switch_words(&gpu));
        assert_eq!(want.len(), got.len());
        for (k, (w, g)) in want.iter().zip(&got).enumerate() {
            assert!(w == g, "log_n {log_n}: output {k} (level {}, form {}) differs from the CPU", k / 6, (k / 2) % 3);
        }
        // The three key forms give the same words on one backend.
        for chunk in want.chunks_exact(6) {
            assert!(chunk[0] == chunk[2] && chunk[2] == chunk[4] && chunk[1] == chunk[3] && chunk[3] == chunk[5]);
        }
    }
}

/// Runs `outputs` over the streams `seeds` (operands 0..) and one stored operand (the last).
fn fused<B: Backend>(be: &B, basis: &[usize], seeds: &[[u8; 32]], stored: &[u32], outputs: &[Expr]) -> Vec<Vec<u32>> {
    let buf = be.upload(stored).unwrap();
    let mut operands: Vec<Operand<'_, B>> = seeds
        .iter()
        .enumerate()
        .map(|(i, s)| Operand::Uniform { seed: *s, purpose: Purpose::CiphertextA, index: i as u32 })
        .collect();
    operands.push(Operand::words(&buf, basis));
    // Scalars 1 + i in every limb, after the buffer.
    for i in 0..seeds.len() {
        operands.push(Operand::Scalar(vec![1 + i as u32; basis.len()]));
    }
    let program = Program { basis, operands, outputs: outputs.iter().map(|e| (e.clone(), Format::Words)).collect() };
    be.fused(&program).unwrap().iter().map(|o| be.download(o).unwrap()).collect()
}

#[test]
fn fused_streams_match_cpu_with_heavy_rejection() {
    let Some(dev) = device() else { return };
    let l = Expr::load;
    for log_n in [3u32, 4, 6, 10] {
        let (cpu, gpu) = backends(&heavy_rejection(log_n), &dev);
        let n = 1usize << log_n;
        let basis: Vec<usize> = (0..4).collect();
        let seeds: Vec<[u8; 32]> = (0..16u8).map(|i| [i.wrapping_mul(37).wrapping_add(5); 32]).collect();
        let stored: Vec<u32> = (0..basis.len() * n).map(|i| (i as u32).wrapping_mul(2_654_435_761) >> 20).collect();
        let buffer = seeds.len();
        // (a) stream + stored, stream * stream; (b) the 16-term weighted sum of streams (the
        // kernel's stream loop) plus the stored operand; (c) a stream at Galois-permuted indices.
        let weighted = Expr::Sum(
            (0..seeds.len()).map(|i| Expr::mul(l(buffer + 1 + i), l(i))).chain(std::iter::once(l(buffer))).collect(),
        );
        let outputs = vec![
            Expr::add(l(0), l(buffer)),
            Expr::mul(l(1), l(2)),
            weighted,
            Expr::galois(5, Expr::add(l(3), l(buffer))),
        ];
        let want = fused(&cpu, &basis, &seeds, &stored, &outputs);
        let got = fused(&gpu, &basis, &seeds, &stored, &outputs);
        for (k, (w, g)) in want.iter().zip(&got).enumerate() {
            if let Some(j) = w.iter().zip(g).position(|(a, b)| a != b) {
                panic!("log_n {log_n}: output {k} differs from the CPU at word {j}: {} vs {}", w[j], g[j]);
            }
        }
    }
}
