//! Uniform-limb generation (at a prime just below 2^30 and at one rejecting half the
//! candidates): the wide generator (`uniform_limb_at`, every SIMD level the CPU has) against the
//! reference path (`uniform_limb_reference`: `rand_chacha`'s ChaCha12 word by word, each
//! rejected residue's fallback words read by seeking), one limb of N = 2^14 residues, single
//! thread.
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

/// A 27-bit NTT prime just above 2^26: a masked candidate is rejected with probability 0.499,
/// the worst case of the shipped chains (`bgv-bxt-n16` has 14 primes above 0.44).
const Q_HALF: u64 = 67_239_937;

fn bench_uniform_limb(c: &mut Criterion) {
    let mut out = vec![0u32; N];
    for (q, label) in [(Q, "uniform_limb"), (Q_HALF, "uniform_limb_p0.5")] {
        let m = Modulus::new(q).unwrap();
        let mut group = c.benchmark_group(label);
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
