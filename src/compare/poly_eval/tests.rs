use super::*;

fn dense(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            1 + ((s >> 33) % 65536) as u32
        })
        .collect()
}

#[test]
fn formula_matches_the_symbolic_evaluation() {
    let t = Modulus::new(65537).unwrap();
    for d in 0..=140 {
        let c = dense(d + 1, d as u64);
        let parts = Parts { coeffs: &c, even: &[], odd: &[] };
        for k in 2..=d + 2 {
            let sim = simulate(t, parts, Strategy::Direct, k).unwrap();
            let formula = dense_cost(d, k).unwrap();
            assert_eq!((sim.hmults, sim.depth), (formula.hmults, formula.depth), "degree {d}, k = {k}");
            assert!(sim.relins <= sim.hmults, "degree {d}, k = {k}: {sim:?}");
        }
    }
}

#[test]
fn degree_30_costs_11_hmults_at_depth_5() {
    let eager = |hmults, depth| EvalStats { hmults, depth, relins: hmults };
    assert_eq!(best_dense(30, Objective::Hmults), (8, eager(11, 5)));
    assert_eq!(best_dense(30, Objective::Depth), (8, eager(11, 5)));
    // Depth-optimal plans for the large domains: k 2^m = 2^ceil(log2(2B' + 1)).
    assert_eq!(best_dense(8190, Objective::Depth).1, eager(195, 13));
    assert_eq!(best_dense(32766, Objective::Depth).1, eager(388, 15));
    assert_eq!(best_dense(65534, Objective::Depth).1, eager(517, 16));
}

#[test]
fn ceil_log2_small_values() {
    let want = [0, 0, 1, 2, 2, 3, 3, 3, 3, 4];
    for (n, &w) in want.iter().enumerate() {
        assert_eq!(ceil_log2(n), w, "n = {n}");
    }
}

#[test]
fn lazy_relinearisation_saves_on_dense_polynomials() {
    let t = Modulus::new(65537).unwrap();
    // Degree 30, k = 8: 11 HMULTs; relinearised are the operands x^2, x^4 (x^3 = x^2 x,
    // x^5..x^7 and x^8 = x^4 x^4), the giant steps x^8 and x^16, the three quotients q of
    // the merges ... counted exactly by the simulation, and fewer than the HMULTs.
    let c = dense(31, 7);
    let parts = Parts { coeffs: &c, even: &[], odd: &[] };
    let s = simulate(t, parts, Strategy::Direct, 8).unwrap();
    assert_eq!((s.hmults, s.depth), (11, 5));
    assert!(s.relins < s.hmults, "{s:?}");
    // A set of two polynomials shares the 8 HMULTs of the powers.
    let d = dense(31, 8);
    let both = [parts, Parts { coeffs: &d, even: &[], odd: &[] }];
    let set = simulate_set(t, &both, Strategy::Direct, 8).unwrap();
    assert_eq!(set.hmults, 11 + 3);
    assert_eq!(set.depth, 5);
}
