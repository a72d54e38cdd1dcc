//! NTT benchmarks: wgfhe's negacyclic NTT against `tfhe-ntt`'s `prime32` plan, same N and
//! prime (the largest 30-bit prime = 1 mod 2N).
//!
//! Our rows run at every SIMD level the CPU has (`scalar`, `avx2`, `avx512`), strict and lazy.
//!
//! Note: `tfhe-ntt`'s inverse leaves out the `N^{-1}` factor (it has a separate `normalize`),
//! while ours folds it into the last stage, so our inverse does slightly more work.

#![expect(missing_docs, reason = "criterion macros generate undocumented items")]
#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "benchmark setup")]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wgfhe::math::ntt::NttTable;
use wgfhe::math::primes::ntt_primes;
use wgfhe::math::simd::SimdLevel;
use wgfhe::math::zq::Modulus;

const LOG_NS: std::ops::RangeInclusive<u32> = 12..=16;

fn input(n: usize, q: u32) -> Vec<u32> {
    // Deterministic pseudo-random residues (xorshift), independent of any crate RNG.
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % u64::from(q)) as u32
        })
        .collect()
}

fn setup(log_n: u32) -> (usize, u32, NttTable, tfhe_ntt::prime32::Plan) {
    let n = 1usize << log_n;
    let q = ntt_primes(30, n as u64, 1, &[]).unwrap()[0];
    let table = NttTable::new(Modulus::new(q).unwrap(), n).unwrap();
    let plan = tfhe_ntt::prime32::Plan::try_new(n, q as u32).unwrap();
    (n, q as u32, table, plan)
}

fn bench_forward(c: &mut Criterion) {
    let mut group = c.benchmark_group("ntt_forward");
    for log_n in LOG_NS {
        let (n, q, table, plan) = setup(log_n);
        let data = input(n, q);
        let mut buf = data.clone();
        group.throughput(Throughput::Elements(n as u64));
        for level in SimdLevel::available() {
            for (name, strict) in [("strict", true), ("lazy", false)] {
                group.bench_with_input(BenchmarkId::new(format!("{}_{name}", level.name()), n), &n, |b, _| {
                    b.iter(|| {
                        buf.copy_from_slice(&data);
                        table.forward_with(black_box(&mut buf), level, strict).unwrap();
                    });
                });
            }
        }
        group.bench_with_input(BenchmarkId::new("tfhe_ntt_prime32_forward", n), &n, |b, _| {
            b.iter(|| {
                buf.copy_from_slice(&data);
                plan.fwd(black_box(&mut buf));
            });
        });
    }
    group.finish();
}

fn bench_inverse(c: &mut Criterion) {
    let mut group = c.benchmark_group("ntt_inverse");
    for log_n in LOG_NS {
        let (n, q, table, plan) = setup(log_n);
        let data = input(n, q);
        let mut buf = data.clone();
        group.throughput(Throughput::Elements(n as u64));
        for level in SimdLevel::available() {
            for (name, strict) in [("strict", true), ("lazy", false)] {
                group.bench_with_input(BenchmarkId::new(format!("{}_{name}", level.name()), n), &n, |b, _| {
                    b.iter(|| {
                        buf.copy_from_slice(&data);
                        table.inverse_with(black_box(&mut buf), level, strict).unwrap();
                    });
                });
            }
        }
        group.bench_with_input(BenchmarkId::new("tfhe_ntt_prime32_inverse", n), &n, |b, _| {
            b.iter(|| {
                buf.copy_from_slice(&data);
                plan.inv(black_box(&mut buf));
            });
        });
        group.bench_with_input(BenchmarkId::new("tfhe_ntt_prime32_inverse_normalized", n), &n, |b, _| {
            b.iter(|| {
                buf.copy_from_slice(&data);
                plan.inv(black_box(&mut buf));
                plan.normalize(black_box(&mut buf));
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_forward, bench_inverse);
criterion_main!(benches);
