//! The `bxt` suite's report (`wgfhe bench --suite bxt`): every operation and variant has its
//! row, and the byte counts equal counts made here from real buffers.

#![expect(clippy::unwrap_used, reason = "tests")]

use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::compress::Variant;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;

fn params() -> Parameters {
    params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 65537).unwrap()
}

/// The report's byte counts against counts made here from real buffers: a fresh ciphertext of
/// the report's parameters is `C` bytes (its downloaded words, 4 bytes each), HADD reads two
/// ciphertexts and writes one (`2C` and `C` in the baseline; `4C` and `2C` in `baseline64`,
/// whose residues are 8-byte words), a fresh ciphertext is resident as `C` bytes in the
/// baseline, and a key as its buffers' bytes. Timings are only required to be present.
#[test]
fn bxt_report_has_every_row() {
    let p = params();
    let report =
        wgfhe_bench::bxt::run_with(CpuBackend::new(RingContext::new(&p).unwrap()), "cpu".into(), 1, None, false)
            .unwrap();
    // One fresh ciphertext and one relinearisation key of the same parameters, measured.
    let bgv = Bgv::new(CpuBackend::new(RingContext::new(&p).unwrap())).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&[7; 32]).unwrap();
    let be = bgv.backend();
    let values: Vec<u64> = (0..bgv.encoder().slots() as u64).map(|i| i * 7919 % 65537).collect();
    let fresh = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&values).unwrap()).unwrap();
    let c: u64 = fresh.polys().iter().map(|poly| be.download(poly.buffer()).unwrap().len() as u64 * 4).sum();
    assert_eq!(fresh.polys().len(), 2);
    let rk = bgv.gen_relin_key(&sk).unwrap();
    let key: u64 =
        rk.0.digits
            .iter()
            .flat_map(|d| [Some(d.b.buffer()), d.a.as_ref().map(|a| a.buffer())])
            .flatten()
            .map(|buf| be.download(buf).unwrap().len() as u64 * 4)
            .sum();
    let key_b: u64 = rk.0.digits.iter().map(|d| be.download(d.b.buffer()).unwrap().len() as u64 * 4).sum();

    let ops = wgfhe_bench::bxt::OPS;
    assert_eq!(report.rows.len(), ops.len() * (Variant::ALL.len() + 1));
    for op in ops {
        let rows: Vec<_> = report.rows.iter().filter(|r| r.op == op).collect();
        let names: Vec<_> = rows.iter().map(|r| r.variant).collect();
        assert_eq!(names, ["baseline", "baseline64", "c", "cs", "cso", "cso+k"], "{op}");
        let (base, b64) = (rows[0], rows[1]);
        if op == "hadd" {
            assert_eq!((base.ciphertext_bytes, base.bytes_written), (2 * c, c), "baseline HADD");
            assert_eq!((b64.ciphertext_bytes, b64.bytes_written), (4 * c, 2 * c), "baseline64 HADD");
        }
        // baseline64 is computed, not timed.
        assert!(b64.median_ms.is_none() && b64.speedup.is_none());
        assert!(base.median_ms.is_some() && base.speedup.is_some(), "{op} baseline");
        for r in &rows[2..] {
            assert!(r.median_ms.is_some() && r.speedup.is_some(), "{op} {}", r.variant);
            // Every technique moves no more ciphertext bytes than the baseline.
            assert!(r.bytes_read <= base.bytes_read, "{op} {} reads more than the baseline", r.variant);
        }
    }
    let m = &report.memory;
    assert_eq!((m.relin_key_bytes, m.relin_key_seeded_bytes), (key, key_b));
    assert_eq!(2 * key_b, key, "the b halves are half the key");
    assert_eq!(m.galois_key_bytes, key);
    assert_eq!(m.fresh_ciphertext_bytes[0], ("baseline", c));
    let json = serde_json::to_value(&report).unwrap();
    for key in ["params", "backend", "rows"] {
        assert!(json.get(key).is_some(), "{key}");
    }
    for key in [
        "op",
        "variant",
        "bytes_read",
        "bytes_written",
        "prng_words",
        "modmuls",
        "arith_intensity",
        "median_ms",
        "speedup",
    ] {
        assert!(json["rows"][0].get(key).is_some(), "{key}");
    }
}

#[test]
fn timed_bxt_trace_times_every_dispatch_and_counts_packing() {
    let p = params();
    let mut out = Vec::new();
    wgfhe_bench::bxt::run_with(CpuBackend::new(RingContext::new(&p).unwrap()), "cpu".into(), 1, Some(&mut out), true)
        .unwrap();
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty());
    for l in &lines {
        assert!(l["elapsed_ns"].as_u64().is_some(), "{l}");
    }
    let count = |variant: &str, field: &str| -> u64 {
        lines.iter().filter(|l| l["variant"] == variant).map(|l| l[field].as_u64().unwrap_or(0)).sum()
    };
    // Packed variants unpack and pack residues; the unpacked ones never do.
    assert!(count("cs", "unpacked_residues") > 0 && count("cs", "packed_residues") > 0);
    assert_eq!(count("baseline", "unpacked_residues") + count("c", "packed_residues"), 0);
}
