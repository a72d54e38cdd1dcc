//! Uniform-limb generation: the wide generator (`uniform_limb_at`, every SIMD level the CPU
//! has) against the reference path (`uniform_limb_reference`: `rand_chacha`, 64 bytes at a
//! time, the shader's `u32` Horner reduction), one limb of N = 2^14 residues, single thread.
//!
//! With `WGFHE_BENCH_INTERLEAVED=ROUNDS` set, criterion is skipped and the reference and the
//! default path are instead timed alternately, ROUNDS times each, and the medians printed in
//! ns per residue (a side-by-side comparison that shares whatever load the machine has).

#![expect(missing_docs, reason = "criterion macros generate undocumented items")]
#![expect(clippy::unwrap_used, reason = "benchmark setup")]

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use wgfhe::math::sampling::{uniform_limb, uniform_limb_at, uniform_limb_reference, Purpose};
use wgfhe::math::simd::SimdLevel;
use wgfhe::math::zq::Modulus;

const N: usize = 1 << 14;
/// The largest prime below 2^30.
const Q: u64 = (1 << 30) - 35;
const SEED: [u8; 32] = [7; 32];

fn bench_uniform_limb(c: &mut Criterion) {
    let m = Modulus::new(Q).unwrap();
    let mut out = vec![0u32; N];
    let mut group = c.benchmark_group("uniform_limb");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function("reference", |b| {
        b.iter(|| uniform_limb_reference(black_box(&SEED), Purpose::KeySwitchA, 3, &m, &mut out).unwrap());
    });
    for level in SimdLevel::available() {
        group.bench_with_input(BenchmarkId::new("wide", level.name()), &level, |b, &level| {
            b.iter(|| uniform_limb_at(level, black_box(&SEED), Purpose::KeySwitchA, 3, &m, &mut out).unwrap());
        });
    }
    group.finish();
}

/// Median of `rounds` alternating timings of the reference and the default path.
fn interleaved(rounds: usize) {
    let m = Modulus::new(Q).unwrap();
    let (mut a, mut b) = (vec![0u32; N], vec![0u32; N]);
    let (mut t_ref, mut t_new) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        uniform_limb_reference(black_box(&SEED), Purpose::KeySwitchA, 3, &m, &mut a).unwrap();
        t_ref.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        uniform_limb(black_box(&SEED), Purpose::KeySwitchA, 3, &m, &mut b).unwrap();
        t_new.push(t.elapsed().as_secs_f64());
        assert_eq!(a, b, "the paths disagree");
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN) * 1e9 / N as f64
    };
    let (r, n) = (median(&mut t_ref), median(&mut t_new));
    println!(
        "uniform_limb N = {N}, q = {Q}, {rounds} interleaved rounds, level {}: reference {r:.2} ns/residue, \
         wide {n:.2} ns/residue, ratio {:.2}",
        SimdLevel::active().name(),
        r / n
    );
}

criterion_group!(benches, bench_uniform_limb);

fn main() {
    if let Some(rounds) = std::env::var("WGFHE_BENCH_INTERLEAVED").ok().and_then(|r| r.parse().ok()) {
        interleaved(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
