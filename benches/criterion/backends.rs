//! CPU against GPU: NTT (N = 2^12..2^16, one limb and many) and HMULT with relinearisation.
//! On lavapipe (CI's software Vulkan) the GPU numbers say little about a real GPU.
//! Run with `cargo bench --bench backends`; without an adapter only the CPU rows run.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, missing_docs, reason = "benchmark")]

use std::sync::Arc;
use wgfhe::rlwe::KeyRequest;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::params;
use wgfhe::ring::RingContext;

fn device() -> Option<Arc<GpuDevice>> {
    match GpuDevice::new() {
        Ok(d) => Some(Arc::new(d)),
        Err(e) => {
            println!("SKIPPED GPU rows: {e}");
            None
        }
    }
}

fn bench_ntt_on<B: Backend>(c: &mut Criterion, be: &B, log_n: u32, limbs: usize) {
    let ctx = be.context();
    let basis: Vec<usize> = (0..limbs).collect();
    let n = ctx.n();
    let host: Vec<u32> = (0..limbs * n).map(|i| (i as u32).wrapping_mul(2_654_435_761) % 1_000_003).collect();
    let mut group = c.benchmark_group("ntt_forward");
    group.throughput(Throughput::Elements((limbs * n) as u64));
    let mut buf = be.upload(&host).unwrap();
    group.bench_function(BenchmarkId::new(be.name(), format!("{}/{limbs}", 1u64 << log_n)), |b| {
        b.iter(|| {
            be.ntt_forward(&mut buf, &basis).unwrap();
            // Keep the data the same between iterations (and finish the GPU work).
            be.ntt_inverse(&mut buf, &basis).unwrap();
        });
    });
    group.finish();
}

fn ntt(c: &mut Criterion) {
    let dev = device();
    for log_n in [12u32, 14, 16] {
        let p = params::insecure_test_ckks(params::TestRing { log_n, q_primes: 8, p_primes: 1, dnum: 8 }, 30).unwrap();
        let cpu = CpuBackend::new(RingContext::new(&p).unwrap());
        for limbs in [1, 8] {
            bench_ntt_on(c, &cpu, log_n, limbs);
            if let Some(d) = &dev {
                let gpu = GpuBackend::new(RingContext::new(&p).unwrap(), Arc::clone(d));
                bench_ntt_on(c, &gpu, log_n, limbs);
            }
        }
    }
}

fn hmult_on<B: Backend>(c: &mut Criterion, be: B, name: &str) {
    let label = be.name();
    let bgv = Bgv::new(be).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[1; 32]).unwrap();
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation()).unwrap();
    let pt = bgv.encoder().encode(&[1, 2, 3]).unwrap();
    let a = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    let b = bgv.encrypt_symmetric(&sk, &pt).unwrap();
    let mut group = c.benchmark_group("hmult_relin");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new(label, name), |bench| {
        bench.iter(|| {
            let r = bgv.mul_relin(&a, &b, &keys).unwrap();
            // Reading one polynomial back waits for the GPU to finish.
            r.polys()[0].to_host(bgv.backend()).unwrap()
        });
    });
    group.finish();
}

fn hmult(c: &mut Criterion) {
    let dev = device();
    for name in ["bgv-n13", "bgv-n14"] {
        let p = params::by_name(name).unwrap();
        hmult_on(c, CpuBackend::new(RingContext::new(&p).unwrap()), name);
        if let Some(d) = &dev {
            hmult_on(c, GpuBackend::new(RingContext::new(&p).unwrap(), Arc::clone(d)), name);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(500)).measurement_time(std::time::Duration::from_secs(2));
    targets = ntt, hmult
}
criterion_main!(benches);
