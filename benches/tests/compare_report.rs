//! The `compare` suite's report (`wgfhe bench --suite compare`): every comparison row, exact at
//! full precision, and pruning that saves multiplications.

use wgfhe::backend::CpuBackend;
use wgfhe::params;
use wgfhe::ring::RingContext;

#[test]
fn compare_report_has_every_row() {
    // Deeper than test_params: the extract rows run the digit pipeline (depth about 10).
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 22, p_primes: 4, dnum: 6 }, 65537).unwrap();
    let report =
        wgfhe_bench::compare::run_with_extract(CpuBackend::new(RingContext::new(&p).unwrap()), "cpu".into(), 1, 5, 4)
            .unwrap();
    let ops: Vec<&str> = report.rows.iter().map(|r| r.op).collect();
    for op in ["eq", "lt", "max", "relu_lut", "sign_lut", "extract"] {
        assert!(ops.contains(&op), "{op}");
    }
    // Timings are reported (benchmarks judge them); the tests check only the exact counts and
    // error rates.
    for r in &report.rows {
        if r.keep == 1.0 {
            assert_eq!(r.error_rate, 0.0, "{r:?}");
        }
        if (r.op == "lt" || r.op == "extract") && r.inputs == "vs_zero" && r.convention == "floor" {
            assert_eq!(r.error_rate, 0.0, "floor sign test is exact at any pruning: {r:?}");
        }
    }
    // Pruning saves multiplications within a layout.
    for conv in ["floor", "balanced"] {
        let lt: Vec<_> =
            report.rows.iter().filter(|r| r.op == "lt" && r.inputs == "uniform" && r.convention == conv).collect();
        assert_eq!(lt.len(), 4);
        assert!(lt.windows(2).all(|w| w[1].hmults < w[0].hmults), "{conv}");
    }
    // Extraction of only the kept digits: pruning saves multiplications there too.
    for conv in ["floor", "balanced"] {
        let ex: Vec<_> =
            report.rows.iter().filter(|r| r.op == "extract" && r.inputs == "vs_zero" && r.convention == conv).collect();
        assert_eq!(ex.len(), 4, "{conv}");
        assert!(ex.windows(2).all(|w| w[1].hmults <= w[0].hmults), "{conv}");
        assert!(ex[3].hmults < ex[0].hmults, "{conv}");
    }
}
