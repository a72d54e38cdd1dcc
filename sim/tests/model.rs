//! Known-answer tests of the model on hand-built traces.
#![expect(clippy::unwrap_used, reason = "tests")]

use wgfhe_sim::calibrate;
use wgfhe_sim::gpu::{Gpu, BUILT_IN};
use wgfhe_sim::model::{self, predict, Costs, Mul, Options, Prng, Unpack};
use wgfhe_sim::report;
use wgfhe_sim::trace::{self, Dispatch};

/// A made-up GPU with round numbers, without `SHADER_INT64`.
fn test_gpu(launch_us: f64) -> Gpu {
    test_gpu_int64(launch_us, false)
}

/// [`test_gpu`] with or without `SHADER_INT64`.
fn test_gpu_int64(launch_us: f64, int64: bool) -> Gpu {
    Gpu::from_toml(
        "test",
        &format!(
            r#"
name = "test"
description = "round numbers"
sms = 10
clock_mhz = 1000.0
int_ops_per_clk_per_sm = 64.0
resident_threads_per_sm = 1024
register_file_kb_per_sm = 256
l1_kb_per_sm = 128
l2_mb = 4.0
dram_gbs = 100.0
l2_gbs = 400.0
dram_latency_cycles = 500.0
launch_us = {launch_us}
prng_unit_words_per_clk_per_sm = 16.0
shader_int64 = {int64}
source = "test"
"#
        ),
    )
    .unwrap()
}

fn copy(n: u64, limbs: u64) -> Dispatch {
    let bytes = 4 * n * limbs;
    Dispatch { kernel: "duplicate".into(), n, limbs, bytes_read: bytes, bytes_written: bytes, ..Dispatch::default() }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

#[test]
fn pure_copy_runs_at_dram_bandwidth() {
    let gpu = test_gpu(0.0);
    // 64 MiB read and 64 MiB written, far above L2: every byte crosses DRAM once.
    let d = copy(1 << 16, 256);
    let p = &predict(&gpu, std::slice::from_ref(&d), &Options::software())[0];
    let bytes = 2.0 * d.bytes_read as f64;
    assert!(close(p.seconds, bytes / 100e9), "{} vs {}", p.seconds, bytes / 100e9);
    assert_eq!(p.bound, "dram");
    assert!(close(p.dram_bytes, bytes));
    // The launch overhead adds on top.
    let with_launch = &predict(&test_gpu(5.0), &[d], &Options::software())[0];
    assert!(close(with_launch.seconds, bytes / 100e9 + 5e-6));
}

#[test]
fn compute_bound_kernel_runs_at_integer_peak() {
    let n = 1u64 << 16;
    let d = Dispatch {
        kernel: "mul".into(),
        n,
        limbs: 1,
        bytes_read: 8 * n,
        bytes_written: 4 * n,
        modmuls: 1_000_000_000,
        ..Dispatch::default()
    };
    let peak = 10.0 * 64.0 * 1e9;
    // `mul` reduces with Barrett: 60 operations a product emulated (mul_wide 22 + barrett_wide
    // 38), 18 native (2 + 16), counted by hand from shaders/shared; 6 per output residue.
    let emulated = (1e9 * 60.0 + n as f64 * 6.0) / peak;
    let native = (1e9 * 18.0 + n as f64 * 6.0) / peak;
    // Without SHADER_INT64 the device (Auto) emulates.
    let p = &predict(&test_gpu(0.0), std::slice::from_ref(&d), &Options::software())[0];
    assert_eq!(p.bound, "int");
    assert!(close(p.seconds, emulated), "{} vs {emulated}", p.seconds);
    // With it, native products; --mul emulated forces the other path, --mul native this one.
    let int64 = test_gpu_int64(0.0, true);
    let q = &predict(&int64, std::slice::from_ref(&d), &Options::software())[0];
    assert!(close(q.seconds, native), "{} vs {native}", q.seconds);
    let forced = Options { mul: Mul::Emulated, ..Options::software() };
    assert!(close(predict(&int64, std::slice::from_ref(&d), &forced)[0].seconds, emulated));
    let forced = Options { mul: Mul::Native, ..Options::software() };
    assert!(close(predict(&test_gpu(0.0), std::slice::from_ref(&d), &forced)[0].seconds, native));
    // The NTT's lazy Shoup butterflies are cheaper: 22 emulated (mul_hi 19 + 3), 5 native.
    let ntt = Dispatch { kernel: "ntt_forward".into(), ..d };
    let o = Options::software();
    assert!(close(model::modmul_cost(&ntt.kernel, &o, &test_gpu(0.0)), 22.0));
    assert!(close(model::modmul_cost(&ntt.kernel, &o, &int64), 5.0));
    assert!(close(model::modmul_cost("mul_scalar", &o, &int64), 7.0));
}

#[test]
fn data_centre_gpus_multiply_natively_by_default() {
    for name in ["h100", "h200", "a100-80gb"] {
        let g = Gpu::load(name).unwrap();
        assert!(g.shader_int64, "{name}");
        assert!(Options::software().label_on(&g).contains("native u64 mul"), "{name}");
    }
    let m2 = Gpu::load("apple-m2").unwrap();
    assert!(!m2.shader_int64);
    assert!(Options { mul: Mul::Native, ..Options::software() }.label_on(&m2).contains("native u64 mul (forced)"));
}

#[test]
fn prng_unit_replaces_software_chacha() {
    let gpu = test_gpu(0.0);
    let n = 1u64 << 16;
    let limbs = 8;
    // The ledger's uniform record (generator 2): one word a residue, no modmul.
    let words = n * limbs;
    let d = Dispatch {
        kernel: "uniform".into(),
        n,
        limbs,
        bytes_written: 4 * n * limbs,
        prng_words: words,
        ..Dispatch::default()
    };
    let sw = &predict(&gpu, std::slice::from_ref(&d), &Options::software())[0];
    // One ChaCha12 block (976 operations) per 16 residues: n * limbs / 16 = 32,768 blocks, not
    // one per residue; 6 per residue.
    let blocks = (n * limbs / 16) as f64;
    assert!(close(blocks, 32_768.0));
    let expect_ops = blocks * 976.0 + (n * limbs) as f64 * 6.0;
    assert!(close(sw.int_ops, expect_ops), "{} vs {expect_ops}", sw.int_ops);
    let unit = Options { prng: Prng::Unit, ..Options::software() };
    let hw = &predict(&gpu, &[d], &unit)[0];
    assert!(close(hw.prng_unit_s, words as f64 / (10.0 * 16.0 * 1e9) + 40.0 / 1e9));
    assert!(close(hw.int_ops, (n * limbs) as f64 * 6.0));
    assert!(hw.seconds < sw.seconds, "{} vs {}", hw.seconds, sw.seconds);
}

#[test]
fn a_small_fused_kernel_costs_a_block_per_sixteen_residues() {
    // 16 residues with a uniform operand: 16 words, one block of 976 operations; 16 Barrett
    // products (60 each, emulated); 6 per residue.
    let d = Dispatch {
        kernel: "fused".into(),
        n: 16,
        limbs: 1,
        bytes_written: 64,
        prng_words: 16,
        modmuls: 16,
        ..Dispatch::default()
    };
    let p = &predict(&test_gpu(0.0), &[d], &Options::software())[0];
    assert!(close(p.int_ops, 976.0 + 16.0 * 60.0 + 16.0 * 6.0), "{}", p.int_ops);
}

#[test]
fn converter_removes_unpack_work_and_its_latency_costs_bandwidth() {
    let gpu = test_gpu(0.0);
    let n = 1u64 << 16;
    let limbs = 256;
    // A packed copy: 30-bit residues read packed, written as words.
    let packed = 30 * n * limbs / 8;
    let d = Dispatch {
        kernel: "fused".into(),
        n,
        limbs,
        bytes_read: packed,
        bytes_written: 4 * n * limbs,
        unpacked_residues: n * limbs,
        ..Dispatch::default()
    };
    let sw = &predict(&gpu, std::slice::from_ref(&d), &Options::software())[0];
    let c = Costs::default();
    assert!(close(sw.int_ops, (n * limbs) as f64 * (c.unpack + c.per_residue)));
    let mut last = 0.0;
    for lat in [0.0, 2.0, 8.0, 32.0] {
        let o = Options { unpack: Unpack::Converter { latency_cycles: lat }, ..Options::software() };
        let p = &predict(&gpu, std::slice::from_ref(&d), &o)[0];
        assert!(close(p.int_ops, (n * limbs) as f64 * c.per_residue));
        assert!(p.seconds >= last);
        last = p.seconds;
    }
    let zero = Options { unpack: Unpack::Converter { latency_cycles: 0.0 }, ..Options::software() };
    let p0 = &predict(&gpu, std::slice::from_ref(&d), &zero)[0];
    let p32 =
        &predict(&gpu, &[d], &Options { unpack: Unpack::Converter { latency_cycles: 32.0 }, ..Options::software() })[0];
    assert!(p32.dram_s > p0.dram_s);
}

#[test]
fn chained_kernels_reuse_l2_when_the_working_set_fits() {
    let gpu = test_gpu(0.0);
    // 1 MiB in, 1 MiB out: fits in 3 MiB of usable L2.
    let small = copy(1 << 12, 64);
    let p = predict(&gpu, &[small.clone(), small.clone()], &Options::software());
    assert!(close(p[0].dram_bytes, 2.0 * small.bytes_read as f64));
    assert!(close(p[1].dram_bytes, small.bytes_written as f64), "second copy reads from L2");
    assert!(close(p[1].l2_hit_bytes, small.bytes_read as f64));
    // 64 MiB does not fit: no reuse.
    let big = copy(1 << 16, 256);
    let q = predict(&gpu, &[big.clone(), big.clone()], &Options::software());
    assert!(close(q[1].dram_bytes, 2.0 * big.bytes_read as f64));
}

fn ntt(n: u64, limbs: u64) -> Dispatch {
    // As the ledger writes it: limbs read and written once, full twiddle tables (2N words a
    // limb), N/2 log2 N products a limb.
    let words = n * limbs;
    Dispatch {
        kernel: "ntt_forward".into(),
        n,
        limbs,
        bytes_read: 4 * words + 8 * words,
        bytes_written: 4 * words,
        table_bytes: 8 * words,
        modmuls: words / 2 * u64::from(n.trailing_zeros()),
        ..Dispatch::default()
    }
}

#[test]
fn ntt_passes_follow_the_two_pass_plan() {
    let c = Costs::default();
    assert_eq!(c.ntt_workgroup_bytes, 16384);
    // 16 KiB: a 4096-value tile, one pass up to 2^12, two up to 2^17 (NttPlan's table).
    let want16 = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2];
    let got16: Vec<u64> = (1..=17).map(|k| model::passes(&ntt(1 << k, 1), &c)).collect();
    assert_eq!(got16, want16);
    // Smaller tiles: 8 KiB (2048 values) two passes from 2^12; 4 KiB three from 2^16.
    assert_eq!([11, 12, 17].map(|k| model::ntt_plan_passes(k, 8192)), [1, 2, 2]);
    assert_eq!([10, 11, 15, 16, 17].map(|k| model::ntt_plan_passes(k, 4096)), [1, 2, 2, 3, 3]);
    // More than 16 KiB does not grow the tile.
    assert_eq!(model::ntt_plan_passes(13, 64 * 1024), 2);
    assert_eq!(model::passes(&copy(1 << 16, 1), &c), 1);
    let p = &predict(&test_gpu(2.0), &[ntt(1 << 16, 1)], &Options::software())[0];
    assert_eq!(p.launches, 2);
    assert!(close(p.launch_s, 4e-6));
}

#[test]
fn ntt_reads_compact_twiddles_and_passes_reuse_l2() {
    // NttPlan::twiddle_words' documented values with 16 KiB.
    assert_eq!([12, 14, 16, 17].map(|k| model::ntt_twiddle_words(k, 16384)), [4116, 4156, 4324, 4548]);
    // 2^13, one limb, on the test GPU (3 MiB usable L2). By hand: r = 1, lt = 12, so
    // 4 + 2 * 2 + 4096 + 12 * 2 = 4128 words = 16,512 bytes of table instead of 65,536.
    // Pass 1 reads 32 KiB from DRAM and writes 32 KiB; pass 2 reads them from L2 and writes 32
    // KiB: DRAM 32,768 * 3 + 16,512, L2 hits 32,768.
    let d = ntt(1 << 13, 1);
    assert_eq!(model::table_bytes(&d, &Costs::default()), 16_512);
    let p = &predict(&test_gpu(0.0), std::slice::from_ref(&d), &Options::software())[0];
    assert_eq!(p.launches, 2);
    assert!(close(p.dram_bytes, 3.0 * 32_768.0 + 16_512.0), "{}", p.dram_bytes);
    assert!(close(p.l2_hit_bytes, 32_768.0));
    // In 64-bit words (the paper's baseline layout) the compact table doubles too.
    let wide = &wgfhe_sim::report::as_baseline64(std::slice::from_ref(&d), true)[0];
    assert_eq!(model::table_bytes(wide, &Costs::default()), 33_024);
    // A record already under the full size is taken as written.
    let compact = Dispatch { table_bytes: 16_512, bytes_read: 32_768 + 16_512, ..d.clone() };
    assert_eq!(model::table_bytes(&compact, &Costs::default()), 16_512);
    // limb_ntts sets the limb transforms whose tables are read.
    let two = Dispatch { limb_ntts: Some(2), ..ntt(1 << 13, 4) };
    assert_eq!(model::table_bytes(&two, &Costs::default()), 2 * 16_512);
}

#[test]
fn trace_fields_override_the_plan() {
    let c = Costs::default();
    let gpu = test_gpu(2.0);
    // ntt_passes (passes of one transform on the recording device) replaces the plan's 2, and
    // with no gpu_dispatches the launches follow it. Such a record counts the bytes of all its
    // passes (the ledger's since the two-pass NTT): 3 * 32 KiB each way.
    let one = ntt(1 << 13, 1);
    let d = Dispatch {
        ntt_passes: Some(3),
        bytes_read: 3 * 32_768 + one.table_bytes,
        bytes_written: 3 * 32_768,
        ..one.clone()
    };
    assert_eq!((model::passes(&d, &c), model::launches(&d, &c)), (3, 3));
    let p = &predict(&gpu, std::slice::from_ref(&d), &Options::software())[0];
    // Pass 3 reads what pass 2 wrote: DRAM 32,768 * 4 + 16,512, hits 2 * 32,768.
    assert!(close(p.dram_bytes, 4.0 * 32_768.0 + 16_512.0), "{}", p.dram_bytes);
    assert!(close(p.l2_hit_bytes, 2.0 * 32_768.0));
    assert!(close(p.launch_s, 6e-6));
    // gpu_dispatches sets the launches, not the passes.
    let e = Dispatch { gpu_dispatches: Some(5), ..d.clone() };
    assert_eq!((model::passes(&e, &c), model::launches(&e, &c)), (3, 5));
    let q = &predict(&gpu, std::slice::from_ref(&e), &Options::software())[0];
    assert_eq!(q.launches, 5);
    assert!(close(q.launch_s, 10e-6));
    assert!(close(q.dram_bytes, p.dram_bytes));
    // Any kernel: a fused call split into 3 dispatches launches 3 times and passes once.
    let f = Dispatch { gpu_dispatches: Some(3), ..copy(1 << 12, 2) };
    assert_eq!((model::passes(&f, &c), model::launches(&f, &c)), (1, 3));
    // ntt_passes means nothing on other kernels.
    let g = Dispatch { ntt_passes: Some(4), ..copy(1 << 12, 2) };
    assert_eq!(model::passes(&g, &c), 1);
    // The fields parse from a trace line, and are optional.
    let line = "{\"kernel\":\"ntt_inverse\",\"n\":65536,\"limbs\":3,\"gpu_dispatches\":2,\"limb_ntts\":3,\"ntt_passes\":2}\n{\"kernel\":\"ntt_inverse\",\"n\":65536,\"limbs\":3}\n";
    let t = trace::parse("mem", line.as_bytes()).unwrap();
    assert_eq!((t[0].gpu_dispatches, t[0].limb_ntts, t[0].ntt_passes), (Some(2), Some(3), Some(2)));
    assert_eq!((t[1].gpu_dispatches, t[1].limb_ntts, t[1].ntt_passes), (None, None, None));
}

#[test]
fn calibration_recovers_known_constants() {
    let truth = [2000.0, 300.0, 0.25, 0.5, 3.0, 7.0, 0.0, 1.5];
    let mut t = Vec::new();
    for (i, kernel) in
        ["add", "mul", "fused", "ntt_forward", "uniform", "fused", "duplicate", "base_convert", "scale_down"]
            .iter()
            .enumerate()
    {
        for limbs in 1..6u64 {
            let n = 1u64 << (10 + i % 4);
            let mut d = Dispatch {
                kernel: (*kernel).into(),
                n,
                limbs,
                bytes_read: 8 * n * limbs * (1 + i as u64 % 3),
                bytes_written: 4 * n * limbs,
                modmuls: n * limbs * (i as u64 % 4),
                unpacked_residues: if i % 2 == 0 { n * limbs } else { 0 },
                packed_residues: if i == 2 { n * limbs } else { 0 },
                ..Dispatch::default()
            };
            let x = calibrate::features(&d);
            let ns: f64 = x.iter().zip(&truth).map(|(a, b)| a * b).sum();
            d.elapsed_ns = Some(ns.round() as u64);
            t.push(d);
        }
    }
    let (train, held) = calibrate::split_alternate(&t);
    let fit = calibrate::fit(&train).unwrap();
    for (got, want) in fit.constants.iter().zip(&truth) {
        assert!((got - want).abs() <= 1e-3 * want.max(1.0), "{:?} vs {truth:?}", fit.constants);
    }
    let errs = calibrate::errors(&fit, &held);
    let all = errs.iter().find(|e| e.family == "all").unwrap();
    assert!(all.total_error.abs() < 1e-3 && all.median_abs_error < 1e-3);
    // Untimed traces cannot be fitted.
    let untimed: Vec<Dispatch> = t.iter().map(|d| Dispatch { elapsed_ns: None, ..d.clone() }).collect();
    assert!(calibrate::fit(&untimed).is_err());
}

#[test]
fn traces_parse_and_bad_lines_name_their_line() {
    let text = "{\"op\":\"padd\",\"variant\":\"baseline\",\"kernel\":\"add\",\"n\":8192,\"limbs\":3,\"bytes_read\":196608,\"bytes_written\":98304,\"key_bytes\":0,\"table_bytes\":0,\"plaintext_bytes\":0,\"prng_words\":0,\"modmuls\":0}\n\n{\"kernel\":\"fused\",\"n\":8192,\"limbs\":3,\"bytes_read\":1,\"bytes_written\":2,\"key_bytes\":0,\"table_bytes\":0,\"plaintext_bytes\":0,\"prng_words\":4,\"modmuls\":5,\"unpacked_residues\":6,\"elapsed_ns\":7}\n";
    let t = trace::parse("mem", text.as_bytes()).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].op.as_deref(), Some("padd"));
    assert_eq!(t[1].unpacked_residues, 6);
    assert_eq!(t[1].elapsed_ns, Some(7));
    let err = trace::parse("mem", "{\"kernel\":\"add\"}\n{\"kernel\": 3}\n".as_bytes()).unwrap_err();
    assert!(err.to_string().contains("line 2"), "{err}");
}

#[test]
fn built_in_gpus_load_and_bad_descriptions_are_refused() {
    for (name, _) in BUILT_IN {
        let g = Gpu::load(name).unwrap();
        assert_eq!(g.name, name);
        assert!(g.int_ops_per_s() > 0.0);
    }
    let a6000 = Gpu::load("a6000").unwrap();
    assert_eq!((a6000.sms, a6000.clock_mhz, a6000.l2_mb, a6000.dram_gbs), (84, 1410.0, 6.0, 936.2));
    assert!(Gpu::load("no-such-gpu").is_err());
    let bad = BUILT_IN[0].1.replace("dram_gbs = 936.2", "dram_gbs = 0.0");
    assert!(Gpu::from_toml("bad", &bad).is_err());
}

#[test]
fn paper_comparison_reports_missing_traces() {
    let gpu = test_gpu(1.0);
    let mut bench = Vec::new();
    for op in report::PAPER_OPS {
        for (variant, scale) in [("baseline", 4), ("c", 2), ("cs", 1), ("cso", 1)] {
            let mut d = copy(1 << 14, 4 * scale);
            d.op = Some(op.into());
            d.variant = Some(variant.into());
            bench.push(d);
        }
    }
    let rows = report::compare_paper(&gpu, Some(&bench), &[], &Options::bxt_hardware(2.0));
    let c = rows.iter().find(|r| r.what == "per-op mean" && r.variant == "c").unwrap();
    assert!(c.ours_software.unwrap() > 1.9 && c.ours_software.unwrap() < 2.0);
    let lr = rows.iter().find(|r| r.what == "lr").unwrap();
    assert_eq!(lr.note, "no trace");
    assert!(lr.ours_hardware.is_none());
}

#[test]
fn committed_traces_replay_and_compare_with_the_paper() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let read = |name: &str| trace::read(&dir.join(name)).unwrap();
    let bench = read("bxt-n16-cpu.jsonl.gz");
    assert!(bench.iter().all(|d| d.op.is_some() && d.variant.is_some()));
    // The packed variants unpack residues; the baseline never does.
    assert!(bench.iter().any(|d| d.variant.as_deref() == Some("cs") && d.unpacked_residues > 0));
    assert!(bench.iter().filter(|d| d.variant.as_deref() == Some("baseline")).all(|d| d.unpacked_residues == 0));
    // CSO50: the digit CNN at keep 0.5 (`wgfhe mnist --backend shape` traces, `cnn-cso50-*`).
    let workloads: Vec<report::Workload> = [("lr", "lr"), ("cnn", "cnn"), ("cso50", "cnn-cso50")]
        .into_iter()
        .flat_map(|w| ["baseline", "cso"].map(|v| (w, v)))
        .map(|((w, file), v)| report::Workload {
            name: w.into(),
            variant: v.into(),
            trace: read(&format!("{file}-{v}.jsonl.gz")),
        })
        .collect();
    let gpu = Gpu::load("a6000").unwrap();
    let rows = report::compare_paper(&gpu, Some(&bench), &workloads, &Options::bxt_hardware(2.0));
    for r in &rows {
        let (s, h) = (r.ours_software.unwrap(), r.ours_hardware.unwrap());
        assert!(s.is_finite() && s > 0.0 && h.is_finite() && h > 0.0, "{r:?}");
        // The hardware options never make a compressed variant slower than software.
        assert!(h >= s * 0.999, "{r:?}");
        if r.what == "per-op mean" {
            assert!(r.cause.is_none());
            continue;
        }
        let c = r.cause.as_ref().unwrap();
        assert!((0.0..=1.0).contains(&c.shared_share), "{r:?}");
        assert_eq!(r.note, c.note("cso", r.paper));
        // The LR's variant rewrites the whole weighted sum; the CNNs' leave everything after
        // the convolution (tables, key switching on materialised ciphertexts) as it is.
        if r.what == "lr" {
            assert!(c.shared_share < 0.1, "{c:?}");
        } else {
            assert!(c.shared_share > 0.9, "{c:?}");
            assert!(c.limit.unwrap() < r.paper, "{c:?}");
            assert!(r.note.contains("the paper's"), "{}", r.note);
        }
    }
    assert!(rows.iter().any(|r| r.what == "cso50"));
    // Timed traces carry measurements that calibration can fit.
    let timed = read("bxt-n13-lvp-timed.jsonl.gz");
    assert!(timed.iter().all(|d| d.elapsed_ns.is_some()));
    assert!(calibrate::fit(&timed).is_ok());
}

/// A record written by the current ledger (`ntt_passes` present) counts the bytes of all its
/// passes; the model moves each pass's share once per pass, so it predicts the same traffic and
/// time as an old record (one pass's bytes) of the same two-pass transform.
#[test]
fn ntt_bytes_of_all_passes_are_not_counted_twice() {
    let (n, limbs) = (1u64 << 14, 4u64);
    let one_pass = n * limbs * 4;
    let old = Dispatch {
        kernel: "ntt_forward".into(),
        n,
        limbs,
        bytes_read: one_pass,
        bytes_written: one_pass,
        ..Dispatch::default()
    };
    let new = Dispatch {
        bytes_read: 2 * one_pass,
        bytes_written: 2 * one_pass,
        gpu_dispatches: Some(2),
        limb_ntts: Some(limbs),
        ntt_passes: Some(2),
        ..old.clone()
    };
    let gpu = test_gpu(1.0);
    let opts = Options::default();
    let a = &predict(&gpu, &[old], &opts)[0];
    let b = &predict(&gpu, &[new], &opts)[0];
    assert_eq!(a.launches, 2);
    assert_eq!(b.launches, 2);
    assert_eq!(a.dram_bytes, b.dram_bytes);
    assert_eq!(a.l2_hit_bytes, b.l2_hit_bytes);
    assert_eq!(a.seconds, b.seconds);
    // By hand: pass 1 reads the limbs from DRAM and writes them, pass 2 reads them from L2 (just
    // written) and writes them again; the compact twiddles come from DRAM once.
    let table = model::table_bytes(&b_of(n, limbs), &opts.costs) as f64;
    assert_eq!(b.dram_bytes, (3 * one_pass) as f64 + table);
    assert_eq!(b.l2_hit_bytes, one_pass as f64);
}

fn b_of(n: u64, limbs: u64) -> Dispatch {
    Dispatch { kernel: "ntt_forward".into(), n, limbs, ntt_passes: Some(2), ..Dispatch::default() }
}

/// The cause of a workload's speedup: the baseline's dispatches that the variant's trace repeats
/// (matched as multisets of records, whatever their order and labels) and the others, with the
/// predicted seconds of each side summed from the per-dispatch predictions.
#[test]
fn the_cause_splits_shared_and_changed_dispatches() {
    let gpu = test_gpu(1.0);
    let opts = Options::bxt_hardware(2.0);
    let a = copy(1 << 14, 8);
    let b = copy(1 << 14, 32);
    let mut c = ntt(1 << 14, 8);
    c.variant = Some("baseline".into());
    let d = Dispatch {
        kernel: "fused".into(),
        n: 1 << 14,
        limbs: 8,
        bytes_read: 1 << 16,
        bytes_written: 1 << 19,
        ..Dispatch::default()
    };
    // Variant: the same copy and NTT (in another order, another label), a fused kernel instead of
    // the large copy; the baseline's second small copy has no partner.
    let base = vec![a.clone(), b, c.clone(), a.clone()];
    let mut c2 = c.clone();
    c2.variant = Some("cso".into());
    let variant = vec![c2, d, a];
    let cause = report::cause(&gpu, &base, &variant, &opts).unwrap();
    let (pb, pv) = (predict(&gpu, &base, &opts), predict(&gpu, &variant, &opts));
    let tb = model::total(&pb);
    assert_eq!((cause.baseline_dispatches, cause.variant_dispatches, cause.shared_dispatches), (4, 3, 2));
    // Shared: the first `a` and `c` of the baseline; changed: `b` and the second `a`.
    assert!(close(cause.shared_share, (pb[0].seconds + pb[2].seconds) / tb));
    assert!(close(cause.changed_baseline_s, pb[1].seconds + pb[3].seconds));
    assert!(close(cause.changed_variant_s, pv[1].seconds));
    assert!(close(cause.changed_speedup.unwrap(), cause.changed_baseline_s / cause.changed_variant_s));
    assert!(close(cause.limit.unwrap(), 1.0 / cause.shared_share));
    let families: Vec<&str> = cause.shared_families.iter().map(|(f, _)| f.as_str()).collect();
    assert!(families.contains(&"copy") && families.contains(&"ntt") && families.len() == 2, "{families:?}");
    assert!(close(cause.shared_families.iter().map(|(_, s)| s).sum::<f64>(), cause.shared_share));
    assert_eq!(cause.changed_families.len(), 2, "{:?}", cause.changed_families);
    let note = cause.note("cso", 1e6);
    assert!(note.contains("(copy -> fused)") && note.contains("the paper's"), "{note}");
    // Identical traces: everything shared, nothing to speed up.
    let same = report::cause(&gpu, &base, &base, &opts).unwrap();
    assert!(close(same.shared_share, 1.0) && same.changed_speedup.is_none());
    // Nothing shared: no bound.
    let none = report::cause(&gpu, &[copy(1 << 12, 1)], &[copy(1 << 12, 2)], &opts).unwrap();
    assert_eq!((none.shared_dispatches, none.shared_share, none.limit), (0, 0.0, None));
}
