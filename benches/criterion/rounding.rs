//! `RoundingCorrection::apply` (the exact rounding of key switching's ModDown and of rescaling)
//! against the previous CPU implementation, kept below as `previous_apply` (unsigned digits,
//! high-half table terms, `u64` sums reduced every `LAZY_TERMS` terms, blocks of 1024
//! coefficients), on the shapes of a CKKS bootstrap on the `ckks-boot` rings (43 + 15 primes of
//! 30 bits): ModDown of the 15 special primes onto 43 and 24 kept primes ([`Rounding::Joint`]),
//! rescaling by two primes onto 41 and 20 ([`Rounding::PrimeByPrime`]), at N = 2^14.
//! The current rows run at every SIMD level the CPU has (`current_scalar`, `current_avx2`:
//! the portable code; `current_avx512`: the explicit path). Throughput is in coefficients;
//! every row's output is checked equal to the previous one's before timing.
//!
//! ```sh
//! cargo bench --bench rounding
//! ```

#![expect(missing_docs, reason = "criterion macros generate undocumented items")]
#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "benchmark setup")]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wgfhe::math::primes::ntt_primes;
use wgfhe::math::rounding::{Rounding, RoundingCorrection, WideReducer, LAZY_TERMS};
use wgfhe::math::simd::SimdLevel;
use wgfhe::math::zq::Modulus;

const N: usize = 1 << 14;

/// The previous `apply`, from the public tables (the GPU kernels' formula).
fn previous_apply(rc: &RoundingCorrection, dropped: &[u32], n: usize, out: &mut [u32]) {
    const BLOCK: usize = 1024;
    let steps = rc.step_moduli();
    let positions = rc.step_positions();
    let (f, f_shoup) = rc.step_factors();
    let (tri_neg, _, tri_high) = rc.triangle();
    let (keep_neg, _, keep_high) = rc.weights();
    let s_len = steps.len();
    let block = BLOCK.min(n);
    let mut y = vec![0u32; s_len * block];
    let mut acc = vec![0u64; block];
    let reducers: Vec<WideReducer> = steps.iter().map(|d| WideReducer::new(*d)).collect();
    let keep_reducers: Vec<WideReducer> = rc.keep_moduli().iter().map(|k| WideReducer::new(*k)).collect();
    for c0 in (0..n).step_by(block) {
        let len = block.min(n - c0);
        let mut tri = 0usize;
        for (s, red) in reducers.iter().enumerate() {
            let d = steps[s];
            let at = positions[s] * n + c0;
            let x = &dropped[at..at + len];
            let (f, fs) = (f[s], f_shoup[s]);
            let (done, rest) = y.split_at_mut(s * block);
            let ys = &mut rest[..len];
            if s == 0 || rc.rounding() == Rounding::Joint {
                for (o, &xv) in ys.iter_mut().zip(x) {
                    *o = d.mul_shoup(xv, f, fs);
                }
                continue;
            }
            let acc = &mut acc[..len];
            acc.fill(0);
            for (r, yr) in done.chunks_exact(block).enumerate() {
                let (g, gh) = (u64::from(tri_neg[tri + r]), u64::from(tri_high[tri + r]));
                add_terms(acc, &yr[..len], g, gh, steps[r].value() / 2);
                if (r + 1) % LAZY_TERMS == 0 && r + 1 < s {
                    reduce_all(acc, red);
                }
            }
            tri += s;
            for ((o, &xv), &a) in ys.iter_mut().zip(x).zip(acc.iter()) {
                *o = d.add(d.mul_shoup(xv, f, fs), red.reduce(a));
            }
        }
        for (i, red) in keep_reducers.iter().enumerate() {
            let acc = &mut acc[..len];
            acc.fill(0);
            for (s, ys) in y.chunks_exact(block).enumerate() {
                let (w, wh) = (u64::from(keep_neg[i * s_len + s]), u64::from(keep_high[i * s_len + s]));
                add_terms(acc, &ys[..len], w, wh, steps[s].value() / 2);
                if (s + 1) % LAZY_TERMS == 0 && s + 1 < s_len {
                    reduce_all(acc, red);
                }
            }
            for (o, &a) in out[i * n + c0..i * n + c0 + len].iter_mut().zip(acc.iter()) {
                *o = red.reduce(a);
            }
        }
    }
}

#[inline]
fn add_terms(acc: &mut [u64], y: &[u32], w: u64, wh: u64, half: u32) {
    for (a, &v) in acc.iter_mut().zip(y) {
        *a += u64::from(v) * w + if v > half { wh } else { 0 };
    }
}

fn reduce_all(acc: &mut [u64], red: &WideReducer) {
    for a in acc.iter_mut() {
        *a = u64::from(red.reduce(*a));
    }
}

fn bench_apply(c: &mut Criterion) {
    let primes: Vec<Modulus> =
        ntt_primes(30, 2 * N as u64, 58, &[]).unwrap().into_iter().map(|q| Modulus::new(q).unwrap()).collect();
    let mut group = c.benchmark_group("rounding_apply");
    group.throughput(Throughput::Elements(N as u64));
    group.sample_size(20).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    for (rounding, keep_len, drop_len) in [
        (Rounding::Joint, 43, 15),
        (Rounding::Joint, 24, 15),
        (Rounding::PrimeByPrime, 41, 2),
        (Rounding::PrimeByPrime, 20, 2),
    ] {
        let (keep, drop) = (&primes[..keep_len], &primes[keep_len..keep_len + drop_len]);
        let rc = RoundingCorrection::new(keep, drop, None, rounding).unwrap();
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let x: Vec<u32> = drop
            .iter()
            .flat_map(|d| {
                (0..N)
                    .map(|_| {
                        s ^= s << 13;
                        s ^= s >> 7;
                        s ^= s << 17;
                        (s % u64::from(d.value())) as u32
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let (mut new, mut old) = (vec![0u32; keep_len * N], vec![0u32; keep_len * N]);
        previous_apply(&rc, &x, N, &mut old);
        for level in SimdLevel::available() {
            rc.apply_with(&x, N, &mut new, level).unwrap();
            assert_eq!(new, old, "{rounding:?} {keep_len} <- {drop_len} at {level:?}");
        }
        let shape = format!("{rounding:?}_{keep_len}k_{drop_len}d");
        group.bench_with_input(BenchmarkId::new("previous", &shape), &shape, |b, _| {
            b.iter(|| previous_apply(&rc, black_box(&x), N, &mut old));
        });
        for level in SimdLevel::available() {
            group.bench_with_input(BenchmarkId::new(format!("current_{}", level.name()), &shape), &shape, |b, _| {
                b.iter(|| rc.apply_with(black_box(&x), N, &mut new, level).unwrap());
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_apply);
criterion_main!(benches);
