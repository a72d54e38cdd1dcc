//! The kernels, ledger and anchors benchmark suites at tiny sizes, on the CPU and (when an
//! adapter exists) the GPU: every row is present, the ledger's counts are right and the report
//! parses as JSON with the documented fields. No timing is asserted: speed is for benchmarks.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::compress::Variant;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::Result;
use wgfhe_bench::{anchors, kernels, plots, stages};

fn cpu(p: &Parameters) -> Result<CpuBackend> {
    Ok(CpuBackend::new(RingContext::new(p)?))
}

fn gpu(dev: &Arc<GpuDevice>) -> impl Fn(&Parameters) -> Result<GpuBackend> + '_ {
    move |p| Ok(GpuBackend::new(RingContext::new(p)?, Arc::clone(dev)))
}

fn check_kernels<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, timestamps: bool) {
    for in_flight in [1, 3] {
        let config = kernels::Config { log_ns: vec![6, 7], limbs: vec![1, 2], reps: 2, in_flight };
        let r = kernels::run(make, "test".into(), &config).unwrap();
        assert_eq!(r.in_flight, in_flight);
        check_kernel_report(&r, timestamps);
    }
}

fn check_kernel_report(r: &kernels::Report, timestamps: bool) {
    // Device times exist exactly where the device has timestamps; each is positive and no
    // larger than the wall time of the same round (the wait is part of the wall time).
    assert_eq!(r.timing, if timestamps { kernels::Timing::Device } else { kernels::Timing::Wall });
    for row in &r.rows {
        match row.device_median_ms {
            Some(d) => {
                assert!(timestamps, "{row:?}");
                assert!(d > 0.0 && d <= row.median_ms * 1.001 + 1e-6, "{row:?}");
                assert!(row.device_gbps.unwrap() >= row.gbps * 0.999, "{row:?}");
            }
            None => assert!(!timestamps, "{row:?}"),
        }
    }
    assert_eq!(r.rows.len(), kernels::KERNELS.len() * 4);
    for k in kernels::KERNELS {
        for (n, l) in [(64, 1), (64, 2), (128, 1), (128, 2)] {
            let row = r.rows.iter().find(|x| x.kernel == k && x.n == n && x.limbs == l);
            let row = row.unwrap_or_else(|| panic!("no row for {k} at N = {n}, {l} limbs"));
            assert!(row.bytes > 0, "{row:?}");
            assert_eq!(row.backend, r.header.backend);
            // The ledger's counts scale with the size: twice the limbs, at least twice the bytes
            // of the operands (tables aside).
            if k == "copy" {
                assert_eq!(row.bytes, 2 * 4 * (n * l) as u64);
                assert_eq!(row.modmuls, 0);
            }
            if k == "ntt_forward" {
                assert_eq!(row.modmuls, (l * n / 2 * n.trailing_zeros() as usize) as u64);
            }
        }
    }
    let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    let row = &json["rows"][0];
    for key in ["kernel", "n", "limbs", "backend", "median_ms", "gbps", "arith_intensity", "roofline_fraction"] {
        assert!(!row[key].is_null(), "missing {key} in {row}");
    }
    check_header(&json, &r.header, 2);
    assert!(r.table().lines().count() > r.rows.len());
    let dir = std::env::temp_dir().join(format!("wgfhe-bench-plots-{}-{}", std::process::id(), r.header.backend));
    std::fs::create_dir_all(&dir).unwrap();
    let path = plots::kernel_throughput(r, &dir).unwrap();
    assert!(std::fs::read_to_string(path).unwrap().contains("<svg"));
}

/// The report's header is flattened into its JSON object: the same keys as before the header
/// was one struct.
fn check_header(json: &serde_json::Value, header: &wgfhe_bench::ReportHeader, reps: usize) {
    assert_eq!(json["backend"], header.backend.as_str());
    assert_eq!(json["device"], "test");
    assert_eq!(json["threads"], header.threads);
    assert_eq!(json["reps"], reps);
    assert!(json.get("header").is_none(), "{json}");
}

#[test]
fn kernels_suite_cpu() {
    check_kernels(&cpu, false);
}

#[test]
fn kernels_suite_gpu() {
    // Its own device: the device time between two readings would include other tests' work.
    let Some(dev) = common::own_device() else { return };
    check_kernels(&gpu(&dev), dev.has_timestamps());
}

fn ledger_config() -> stages::Config {
    stages::Config {
        hmult: params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)
            .unwrap(),
        lr: params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)
            .unwrap(),
        cnn: params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 8, p_primes: 2, dnum: 4 }, 65537)
            .unwrap(),
        lr_pixels: 5,
        lr_variant: Variant::Cso,
        relu_domain: 3,
        relu_channels: 1,
        reps: 1,
        threads: vec![1, 2],
        jobs: Vec::new(),
    }
}

fn check_ledger<B: Backend>(make: &dyn Fn(&Parameters) -> Result<B>, timestamps: bool) {
    let r = stages::run(make, "test".into(), &ledger_config()).unwrap();
    // Every job at 1 and then 2 threads.
    let names: Vec<(&str, usize)> = r.jobs.iter().map(|j| (j.job, j.threads)).collect();
    assert_eq!(
        names,
        [
            ("hmult_relin", 1),
            ("hmult_relin", 2),
            ("rotation", 1),
            ("rotation", 2),
            ("lr_batch", 1),
            ("lr_batch", 2),
            ("cnn_relu", 1),
            ("cnn_relu", 2)
        ]
    );
    // The scaling table: each job's total and every stage, 1 against 2 threads, from the jobs'
    // own medians.
    assert_eq!(r.scaling.len(), 4 * (1 + stages::STAGES.len()));
    for x in &r.scaling {
        assert_eq!(x.threads, (1, 2));
        let at = |threads: usize| r.jobs.iter().find(|j| j.job == x.job && j.threads == threads).unwrap();
        let ms = |j: &stages::Job| {
            if x.stage == "total" {
                j.total_ms
            } else {
                j.stages.iter().find(|s| s.stage.name() == x.stage).unwrap().ms
            }
        };
        assert_eq!((x.ms_fewest, x.ms_most), (ms(at(1)), ms(at(2))));
        if let Some(v) = x.speedup {
            assert!((v - x.ms_fewest / x.ms_most).abs() < 1e-12);
        }
    }
    let total = r.scaling.iter().find(|x| x.stage == "total").unwrap();
    assert!(total.speedup.is_some(), "every job takes time");
    for j in &r.jobs {
        assert_eq!(j.stages.len(), stages::STAGES.len());
        let stage = |name: &str| j.stages.iter().find(|s| s.stage.name() == name).unwrap();
        match j.job {
            "hmult_relin" => {
                assert!(stage("ntt").calls > 0 && stage("key_switch_inner_product").calls == 1);
                assert!(stage("basis_conversion").calls > 0);
                assert_eq!(stage("automorphism").calls, 0);
            }
            // c_1(X^g) is formed by ModUp's inverse NTT as it loads c_1 (the `ntt` stage), and
            // c_0(X^g) inside the fused last pass: no automorphism dispatch of its own.
            "rotation" => {
                assert!(stage("ntt").calls > 0 && stage("key_switch_inner_product").calls == 1);
                assert_eq!(stage("automorphism").calls, 0);
            }
            // cso: the weighted sum is one fused kernel.
            "lr_batch" => assert!(stage("fused").calls > 0),
            _ => assert!(stage("key_switch_inner_product").calls > 0, "a table of degree > 1 relinearises"),
        }
        // The GPU engine's cost of one run (the device's counters on the GPU, the ledger's model
        // on the CPU): the schemes flush once at the end of each top-level operation (the ReLU
        // table is several), an NTT at N <= 2^12 is one memory pass and at most 2^17 two (a
        // 4096-value tile in 16 KiB of workgroup memory).
        let e = &j.engine;
        assert_eq!(
            e.counted_by,
            if r.header.backend == "gpu" { stages::CountedBy::Device } else { stages::CountedBy::Model }
        );
        match j.job {
            "hmult_relin" | "rotation" | "lr_batch" => assert_eq!(e.submissions, 1, "{}", j.job),
            _ => assert!(e.submissions > 1),
        }
        assert_eq!(e.ntt_passes, if j.n <= 4096 { 1 } else { 2 });
        // Every stage's GPU dispatches add up to the job's (stages from the timed runs, the job's
        // from the untimed one: the same calls).
        assert_eq!(e.gpu_dispatches, j.stages.iter().map(|s| s.gpu_dispatches).sum::<u64>(), "{}", j.job);
        // An NTT dispatch per memory pass: at least the NTT stage's calls times the passes.
        let ntt = stage("ntt");
        assert_eq!(ntt.gpu_dispatches, ntt.calls * u64::from(e.ntt_passes), "{}", j.job);
        assert!(e.limb_ntts >= ntt.calls && e.bytes_read > 0 && e.bytes_written > 0);
        assert!(e.host_encode_ms >= 0.0);
        // Device time exactly where the device has timestamps; host time per dispatch on the GPU.
        assert_eq!(e.device_ms.is_some(), timestamps, "{e:?}");
        assert!(e.device_ms.is_none_or(|ms| ms > 0.0), "{e:?}");
        assert_eq!(e.host_us_per_dispatch.is_some(), r.header.backend == "gpu" && e.gpu_dispatches > 0);
    }
    let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(json["jobs"][0]["stages"][0]["stage"], "ntt");
    for key in [
        "gpu_dispatches",
        "submissions",
        "uploads",
        "limb_ntts",
        "ntt_passes",
        "bytes_read",
        "bytes_written",
        "host_encode_ms",
        "counted_by",
    ] {
        assert!(json["jobs"].as_array().unwrap().iter().all(|j| !j[key].is_null()), "{key}");
    }
    check_header(&json, &r.header, 1);
    assert!(r.table().contains("key_switch_inner_product"));
    let dir = std::env::temp_dir().join(format!("wgfhe-bench-ledger-{}-{}", std::process::id(), r.header.backend));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(std::fs::read_to_string(plots::stage_ledger(&r, &dir).unwrap()).unwrap().contains("<svg"));
}

#[test]
fn ledger_suite_cpu() {
    check_ledger(&cpu, false);
}

#[test]
fn ledger_suite_gpu() {
    // A device of its own: the suite reads the device's counters, which tests running alongside
    // would add to.
    let Some(dev) = common::own_device() else { return };
    check_ledger(&gpu(&dev), dev.has_timestamps());
}

#[test]
fn stages_map_every_kernel() {
    assert_eq!(stages::stage_of("ntt_inverse").name(), "ntt");
    assert_eq!(stages::stage_of("scale_down_correction").name(), "basis_conversion");
    assert_eq!(stages::stage_of("base_convert").name(), "basis_conversion");
    assert_eq!(stages::stage_of("uniform").name(), "prng_regeneration");
    assert_eq!(stages::stage_of("gather_limbs").name(), "limb_copies");
    assert_eq!(stages::stage_of("mul_scalar").name(), "elementwise");
    // Every stage sits at its index, and its JSON name is its report name.
    for (i, s) in stages::STAGES.iter().enumerate() {
        assert_eq!(s.index(), i);
        assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        assert_eq!(format!("{s:<20}|"), format!("{:<20}|", s.name()));
    }
    assert_eq!(serde_json::to_value(stages::CountedBy::Device).unwrap(), "device");
}

#[test]
fn anchors_suite_without_openfhe_says_so() {
    // A reference interpreter that does not exist: the OpenFHE rows must say so, typed.
    let missing = std::env::temp_dir().join(format!("wgfhe-no-openfhe-{}", std::process::id())).join("python");
    let config = anchors::Config {
        ntt_log_ns: vec![8, 9],
        sets: vec![params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)
            .unwrap()],
        reps: 2,
        threads: vec![1, 2],
        openfhe_python: Some(missing),
    };
    let r = anchors::run(&cpu, "test".into(), &config).unwrap();
    // Two NTT rows per N and five scheme rows, each at 1 and 2 threads.
    assert_eq!(r.rows.len(), 2 * (2 * 2 + 5));
    for threads in [1, 2] {
        let anchors: Vec<&str> = r.rows.iter().filter(|row| row.threads == threads).map(|row| row.anchor).collect();
        assert_eq!(
            anchors,
            [
                "ntt_forward",
                "ntt_inverse",
                "ntt_forward",
                "ntt_inverse",
                "hmult_relin",
                "rotation",
                "pmult",
                "padd",
                "hadd"
            ]
        );
    }
    assert_eq!(r.scaling.len(), 2 * 2 + 5);
    for x in &r.scaling {
        let ms = |t: usize| {
            r.rows.iter().find(|row| row.anchor == x.anchor && row.n == x.n && row.threads == t).unwrap().ours_ms
        };
        assert!((x.ours_speedup - ms(1) / ms(2)).abs() < 1e-12, "{x:?}");
        assert_eq!(x.reference_speedup.is_some(), x.anchor.starts_with("ntt"));
    }
    for row in &r.rows {
        if row.anchor.starts_with("ntt") {
            assert_eq!(row.status, anchors::Status::Measured);
            assert!(row.reference_ms.is_some(), "{row:?}");
        } else {
            assert!(
                matches!(&row.status, anchors::Status::Unavailable(why) if why.contains("not installed")),
                "{row:?}"
            );
            assert!(row.reference_ms.is_none() && row.ratio.is_none());
        }
    }
    let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(json["rows"][0]["status"], "measured");
    assert_eq!(json["rows"][8]["anchor"], "hmult_relin");
    assert_eq!(json["rows"][8]["status"], "unavailable");
    assert!(json["rows"][8]["reason"].as_str().unwrap().contains("not installed"));
    assert_eq!(json["rows"][1]["threads"], 2);
    assert_eq!(json["scaling"][0]["threads"], serde_json::json!([1, 2]));
    check_header(&json, &r.header, 2);
    assert!(r.table().contains("unavailable"));
}

#[test]
fn bxt_plots_are_svg() {
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537).unwrap();
    let r = wgfhe_bench::bxt::run_with(cpu(&p).unwrap(), "test".into(), 1, None, false).unwrap();
    let json: serde_json::Value = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    check_header(&json, &r.header, 1);
    let dir = std::env::temp_dir().join(format!("wgfhe-bench-bxt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths = plots::bxt_variants(&r, &dir).unwrap();
    assert_eq!(paths.len(), 2);
    for path in paths {
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("hmult"), "{svg:.200}");
    }
}

/// The gates suite at the insecure toy set, without OpenFHE: one CPU row per gate with the
/// documented fields, sane numbers and no failures.
#[test]
fn gates_suite_runs_at_the_toy_set() {
    use wgfhe::gates::Gate;
    use wgfhe_bench::gates;
    let config = gates::Config {
        sets: vec![wgfhe::gates::TOY.into()],
        gates: vec![Gate::And, Gate::Xor],
        reps: 3,
        warmup: 1,
        batch: 4,
        threads: 1,
        failure_samples: 20,
        openfhe: false,
        openfhe_python: None,
        gpu: None,
        gpu_reps: 1,
    };
    let r = gates::run(&config).unwrap();
    assert_eq!(r.rows.len(), 2);
    let json = serde_json::to_value(&r).unwrap();
    for row in json["rows"].as_array().unwrap() {
        for key in
            ["gate", "params", "backend", "median_ms", "p95_ms", "gates_per_s", "key_bytes", "failure_rate", "ratio"]
        {
            assert!(row.get(key).is_some(), "{key}");
        }
        assert_eq!(row["params"], "gates-toy");
        assert!(row["median_ms"].as_f64().unwrap() > 0.0);
        assert!(row["p95_ms"].as_f64().unwrap() >= row["median_ms"].as_f64().unwrap());
        assert!(row["key_bytes"].as_u64().unwrap() > row["key_bytes_stored"].as_u64().unwrap());
        assert_eq!(row["failure_rate"].as_f64(), Some(0.0));
    }
}

/// A stand-in for the OpenFHE anchor speaking its `--serve` protocol: ready, one line per
/// request (counted in a file), then the JSON. Checks that the boot suite alternates its
/// timed hops with the anchor's runs and attaches the anchor's JSON.
#[cfg(unix)]
#[test]
fn boot_suite_alternates_with_its_anchor() {
    use std::os::unix::fs::PermissionsExt;
    use wgfhe_bench::boot;

    let dir = std::env::temp_dir().join(format!("wgfhe-boot-anchor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("requests");
    let fake = dir.join("python");
    // Called as `python SCRIPT --serve --runs R ...`: answers each request line after "ready".
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho '{{\"ready\": true}}'\ni=0\nwhile read -r line; do echo \"$line\" >> '{}'; \
             echo \"{{\\\"run\\\": $i}}\"; i=$((i+1)); done\necho \"{{\\\"bootstrap\\\": {{\\\"runs\\\": $i}}, \
             \\\"args\\\": \\\"$*\\\"}}\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = boot::Config {
        params: params::insecure_test_ckks_boot(10).unwrap(),
        slots: None,
        reps: 3,
        hops: 1,
        threads: 1,
        openfhe: true,
        openfhe_python: Some(fake.clone()),
        openfhe_args: vec!["--log-n".into(), "10".into()],
        seed: 5,
    };
    let r = boot::run(&config).unwrap();
    assert_eq!(r.hop_ms_runs.len(), 3);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "run\nrun\nrun\n");
    assert_eq!(r.openfhe["bootstrap"]["runs"], 3, "{}", r.openfhe);
    let args = r.openfhe["args"].as_str().unwrap();
    assert!(args.contains("--serve --runs 3 --threads 1 --log-n 10"), "{args}");
    // A missing interpreter is an error in the report, not a failed run.
    let r = boot::run(&boot::Config { openfhe_python: Some(dir.join("missing")), reps: 1, ..config }).unwrap();
    assert!(r.openfhe["error"].as_str().unwrap().contains("not installed"), "{}", r.openfhe);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The boot suite on the GPU (lavapipe in CI) computes the CPU's words, so its precision ledger
/// is the CPU's to the last bit; its rows read the same key bytes, and without `--timed` they
/// carry no dispatch-time shares (`null`) where the CPU's are measured.
#[test]
fn boot_suite_on_the_gpu_has_the_cpus_precision_ledger() {
    use wgfhe_bench::boot;

    let Some(dev) = common::device() else { return };
    let config = boot::Config {
        params: params::insecure_test_ckks_boot(10).unwrap(),
        slots: None,
        reps: 1,
        hops: 2,
        threads: 1,
        openfhe: false,
        openfhe_python: None,
        openfhe_args: Vec::new(),
        seed: 3,
    };
    let on_cpu = boot::run(&config).unwrap();
    let on_gpu = boot::run_with(gpu(&dev)(&config.params).unwrap(), "test".into(), false, &config).unwrap();
    assert_eq!((on_cpu.header.backend.as_str(), on_gpu.header.backend.as_str()), ("cpu", "gpu"));
    let (c, g) = (&on_cpu.precision, &on_gpu.precision);
    for (x, y) in [(c.input, g.input), (c.after_layer, g.after_layer), (c.after_boot, g.after_boot)] {
        assert_eq!((x.worst.to_bits(), x.median.to_bits()), (y.worst.to_bits(), y.median.to_bits()));
    }
    assert_eq!(c.bits_after_10_hops.to_bits(), g.bits_after_10_hops.to_bits());
    assert_eq!(c.median_after_hops.to_bits(), g.median_after_hops.to_bits());
    assert!(c.bits_after_boot > 15.0, "{c:?}");
    assert_eq!(on_cpu.resident_key_bytes, on_gpu.resident_key_bytes);
    assert_eq!(on_cpu.rows.len(), on_gpu.rows.len());
    for (a, b) in on_cpu.rows.iter().zip(&on_gpu.rows) {
        assert_eq!((a.stage, a.key_bytes), (b.stage, b.key_bytes));
        assert!(a.ntt.is_some() && a.key_switch.is_some(), "{a:?}");
        assert!(b.ntt.is_none() && b.basis_conversion.is_none() && b.key_switch.is_none(), "{b:?}");
    }
    let json: serde_json::Value = serde_json::to_value(&on_gpu).unwrap();
    assert!(json["rows"][0]["ntt"].is_null(), "{json}");
    assert_eq!(json["openfhe"]["skipped"], "--no-openfhe");
    // A backend on another ring is refused.
    let other = params::insecure_test_ckks_boot(11).unwrap();
    let wrong = boot::run_with(gpu(&dev)(&other).unwrap(), "test".into(), false, &config);
    assert!(matches!(wrong, Err(wgfhe::Error::ParameterMismatch { .. })), "{wrong:?}");
}
