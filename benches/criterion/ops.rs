//! Every scheme operation per backend and BXT variant: PADD, PMULT, HADD, HMULT with
//! relinearisation, HROTATE and the fused 16-input weighted sum (`wgfhe_bench::bxt::OPS`) under
//! each `Variant`, at `bgv-n13` and `bgv-n14` (`WGFHE_BENCH_PARAMS=bgv-n16` for others):
//! criterion group `<op>`, id `<backend>/<params>/<variant>`, throughput in slots (elements).
//! Keys and inputs are made outside the timed region. Without an adapter only the CPU rows run.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, missing_docs, reason = "benchmark")]

use std::sync::Arc;
use wgfhe::rlwe::KeyRequest;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant, Weight};
use wgfhe::params;
use wgfhe::ring::RingContext;
use wgfhe_bench::bxt::{FUSED_INPUTS, OPS};

fn sets() -> Vec<String> {
    std::env::var("WGFHE_BENCH_PARAMS")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_else(|_| vec!["bgv-n13".into(), "bgv-n14".into()])
}

fn bench_on<B: Backend>(c: &mut Criterion, be: B, set: &str) {
    let label = be.name();
    let bgv = Bgv::new(be).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let stored = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
    let seeded = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap().into_seeded();
    let t = u64::from(bgv.plaintext_modulus());
    let slots = bgv.encoder().slots();
    let enc = |k: u64| bgv.encoder().encode(&(0..slots as u64).map(|i| (i * k + 1) % t).collect::<Vec<_>>()).unwrap();
    let fresh: Vec<_> = (0..FUSED_INPUTS as u64).map(|k| bgv.encrypt_symmetric(&sk, &enc(k + 2)).unwrap()).collect();
    let (w, bias) = (enc(5), enc(7));
    for v in Variant::ALL {
        let bxt = Bxt::new(&bgv, v);
        let keys = if v.seeded_keys() { &seeded } else { &stored };
        let xs: Vec<_> = fresh.iter().map(|ct| bxt.compress(ct.duplicate(bgv.backend()).unwrap()).unwrap()).collect();
        for op in OPS {
            let mut group = c.benchmark_group(op);
            group.sample_size(10);
            group.throughput(Throughput::Elements(slots as u64));
            group.bench_function(BenchmarkId::new(label, format!("{set}/{}", v.name())), |b| {
                b.iter(|| {
                    let out = match op {
                        "padd" => bxt.add_plain(&xs[0], &w),
                        "pmult" => bxt.mul_plain(&xs[0], &w),
                        "hadd" => bxt.add(&xs[0], &xs[1]),
                        "hmult" => bxt.mul_relin(&xs[0], &xs[1], keys),
                        "hrotate" => bxt.rotate_columns(&xs[0], 1, keys),
                        _ => {
                            let terms: Vec<_> =
                                xs.iter().enumerate().map(|(i, c)| (Weight::Int(i as i64 % 15 - 7), c)).collect();
                            bxt.weighted_sum(&terms, Some(&bias))
                        }
                    }
                    .unwrap();
                    bgv.backend().synchronize().unwrap();
                    out
                });
            });
            group.finish();
        }
    }
}

fn ops(c: &mut Criterion) {
    let dev = GpuDevice::new().map(Arc::new).map_err(|e| println!("SKIPPED GPU rows: {e}")).ok();
    for set in sets() {
        let p = params::by_name(&set).unwrap();
        bench_on(c, CpuBackend::new(RingContext::new(&p).unwrap()), &set);
        if let Some(d) = &dev {
            bench_on(c, GpuBackend::new(RingContext::new(&p).unwrap(), Arc::clone(d)), &set);
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(2));
    targets = ops
}
criterion_main!(benches);
