//! Every kernel of the backend trait (`wgfhe_bench::kernels::KERNELS`), per backend, at
//! N = 2^12..2^16 and 1 and 8 limbs: criterion group `<kernel>`, id `<backend>/<N>/<limbs>`,
//! throughput in bytes moved as counted by the traffic ledger. On lavapipe (CI's software
//! Vulkan) the GPU rows say little about a real GPU. Without an adapter only the CPU rows run.
//! `WGFHE_BENCH_LOG_N=12,14` narrows the sizes.

#![expect(clippy::unwrap_used, missing_docs, reason = "benchmark")]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::ledger::{Ledger, Totals};
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::ring::RingContext;
use wgfhe_bench::kernels::{ring_params, Point, KERNELS};

fn log_ns() -> Vec<u32> {
    std::env::var("WGFHE_BENCH_LOG_N")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| (12..=16).collect())
}

fn bench_on<B: Backend>(c: &mut Criterion, be: B, limbs: usize) {
    let be = Ledger::new(be);
    let n = be.context().n();
    let mut point = Point::new(&be, limbs).unwrap();
    for kernel in KERNELS {
        // One untimed run gives the ledger's bytes.
        point.run(&be, kernel).unwrap();
        be.synchronize().unwrap();
        let t = Totals::of(&be.take());
        let mut group = c.benchmark_group(kernel);
        group.throughput(Throughput::Bytes(t.bytes_read + t.bytes_written));
        group.bench_function(BenchmarkId::new(be.name(), format!("{n}/{limbs}")), |b| {
            b.iter(|| {
                point.run(&be, kernel).unwrap();
                be.synchronize().unwrap();
                be.take();
            });
        });
        group.finish();
    }
}

fn kernels(c: &mut Criterion) {
    let dev = GpuDevice::new().map(Arc::new).map_err(|e| println!("SKIPPED GPU rows: {e}")).ok();
    for log_n in log_ns() {
        for limbs in [1, 8] {
            let p = ring_params(log_n, limbs).unwrap();
            bench_on(c, CpuBackend::new(RingContext::new(&p).unwrap()), limbs);
            if let Some(d) = &dev {
                bench_on(c, GpuBackend::new(RingContext::new(&p).unwrap(), Arc::clone(d)), limbs);
            }
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = kernels
}
criterion_main!(benches);
