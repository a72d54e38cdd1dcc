//! Hybrid key switching at the RLWE level: `d0 + d1 s = c s' + e` at every level, for the
//! CKKS-style (t = None) and BGV-style (t-preserving) ModDown, for several dnum, with `e` within
//! a bound derived from the algorithm (not from the code) that a wrong key switch exceeds at
//! every level, level 0 included. Written once over the backend: `cpu::*` and `gpu::*` (the
//! GPU's `d0`, `d1` must be the CPU's words, see `common/backends.rs`).

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use backends::{cpu, cpu_and_gpu, Make, Transcript};
use num_bigint::BigInt;
use num_traits::ToPrimitive;
use wgfhe::backend::Backend;
use wgfhe::math::rns::RnsBasis;
use wgfhe::math::sampling::{Purpose, SIGMA};
use wgfhe::params::{self, Parameters};
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::rlwe::{self, NoiseScale};

cpu_and_gpu!(key_switch_dnum_1, key_switch_dnum_2, key_switch_dnum_equals_limbs);

/// `log2` of the largest |coefficient| (centred) of `poly`, and whether every coefficient is
/// divisible by `t`.
fn max_abs<B: Backend>(be: &B, poly: RnsPoly<B, Eval>, t: i64) -> (f64, bool) {
    let ctx = be.context();
    let basis = poly.basis().clone();
    let coeff = poly.into_coeff(be).unwrap().to_host(be).unwrap();
    let rns = RnsBasis::new(&ctx.moduli_of(&basis).unwrap()).unwrap();
    let n = ctx.n();
    let mut max = 0.0f64;
    let mut divisible = true;
    let mut limb = vec![0u32; basis.len()];
    for j in 0..n {
        for (i, v) in limb.iter_mut().enumerate() {
            *v = coeff[i * n + j];
        }
        let c = rns.reconstruct_centered(&limb).unwrap();
        max = max.max(c.magnitude().to_f64().unwrap());
        divisible &= (&c % BigInt::from(t)) == BigInt::from(0);
    }
    (max.max(1.0).log2(), divisible)
}

/// `log2` of the error bound of switching a uniform `c` at `level`, from the algorithm.
///
/// The key for digit `j` is `b_j = -a_j s + E e_j + P g_j s'` (`E` = t or 1, `e_j` Gaussian of
/// deviation sigma); digit `d_j` of `c` is the centred fast base conversion of its residues in
/// the `k_j` primes of the digit below `level` (product `Q_j`), so `E[d_j^2] = k_j Q_j^2 / 12`.
/// Then `sum_j d_j b_j + s sum_j d_j a_j = P c s' + E sum_j d_j e_j`, and ModDown divides by `P`
/// after subtracting `delta_i`, `delta_i = x_i mod P` with `delta_i = 0 mod t`: `|delta_i| / P`
/// is `E` times a sum of `L_P` (special primes) centred terms in `[-1/2, 1/2]`. So
///
/// `e = (E sum_j d_j e_j - delta_0 - delta_1 s) / P`, of variance per coefficient
/// `E^2 (N sigma^2 sum_j k_j Q_j^2 / (12 P^2) + (1 + N) L_P / 12)`
///
/// (`N` bounds the Hamming weight of the ternary `s`). Each coefficient is a sum of many
/// independent terms, near Gaussian: no coefficient of the `N` reaches 8 deviations. The
/// bound is `log2(8 E sigma_e)`, about `log2(t) + 8` bits for BGV at these sizes against the
/// `log2(Q_l) >= 29` of the smallest level: a wrong switch (error about `Q_l / 2`) exceeds it.
fn bound_log2(params: &Parameters, level: usize, e: f64) -> f64 {
    let log_p: f64 = params.p().iter().map(|m| f64::from(m.value()).log2()).sum();
    let n = params.n() as f64;
    let mut digits = 0.0;
    for j in 0..params.dnum() {
        let group: Vec<usize> = params.digit_range(j).filter(|&i| i <= level).collect();
        let log_qj: f64 = group.iter().map(|&i| f64::from(params.q()[i].value()).log2()).sum();
        digits += group.len() as f64 * (2.0 * (log_qj - log_p)).exp2() / 12.0;
    }
    let variance = n * SIGMA * SIGMA * digits + (1.0 + n) * params.p().len() as f64 / 12.0;
    (8.0 * e * variance.sqrt()).log2()
}

fn check_key_switch<B: Backend>(make: Make<'_, B>, log_n: u32, q: usize, p: usize, dnum: usize, log: &Transcript) {
    let t = 65537u32;
    let params =
        params::insecure_test_bgv(params::TestRing { log_n, q_primes: q, p_primes: p, dnum }, u64::from(t)).unwrap();
    let be = make(&params);
    let ctx = be.context().clone();
    let sk = rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap();
    let other = rlwe::gen_secret_key(&be, Some(&[2; 32])).unwrap();
    for (scale, tt) in [(NoiseScale(1), None), (NoiseScale(t), Some(t))] {
        let ksk = rlwe::gen_key_switch_key(&be, other.eval(), &sk, scale).unwrap();
        for level in 0..params.q().len() {
            let basis = ctx.q_basis(level).unwrap();
            let c =
                RnsPoly::<B, Eval>::uniform(&be, &[level as u8 + 7; 32], Purpose::Ephemeral, 0, basis.clone()).unwrap();
            let (d0, d1) = rlwe::key_switch(&be, &c, &ksk, tt).unwrap();
            log.record(&be, &format!("key switch at level {level}, t {tt:?}"), [&d0, &d1]);
            let s = sk.eval().select(&be, &basis).unwrap();
            let s_from = other.eval().select(&be, &basis).unwrap();
            let d1s = d1.mul(&be, &s).unwrap();
            let diff = d0.add(&be, &d1s).unwrap().sub(&be, &c.mul(&be, &s_from).unwrap()).unwrap();
            let (bits, divisible) = max_abs(&be, diff, i64::from(t));
            let bound = bound_log2(&params, level, f64::from(scale.0));
            let log_q: f64 = (0..=level).map(|i| f64::from(params.q()[i].value()).log2()).sum();
            // The bound means something: a wrong result (|e| about Q_l / 2) is far above it.
            assert!(bound < log_q - 3.0, "level {level}: bound 2^{bound:.1} is vacuous against Q_l = 2^{log_q:.1}");
            assert!(bits <= bound, "level {level}, t {tt:?}: key-switch error 2^{bits:.1} above 2^{bound:.1}");
            if tt.is_some() {
                assert!(divisible, "BGV key switching must keep the error a multiple of t");
            }
            // The same check against the wrong source key fails: the bound can fail.
            let wrong = d0.add(&be, &d1s).unwrap().sub(&be, &c.mul(&be, &s).unwrap()).unwrap();
            let (wrong_bits, _) = max_abs(&be, wrong, i64::from(t));
            assert!(wrong_bits > bound + 2.0, "level {level}: a wrong key switch (2^{wrong_bits:.1}) passes");
        }
    }
}

fn key_switch_dnum_1<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    check_key_switch(make, 10, 4, 4, 1, log);
}

fn key_switch_dnum_2<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    check_key_switch(make, 10, 6, 3, 2, log);
}

fn key_switch_dnum_equals_limbs<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    check_key_switch(make, 10, 5, 1, 5, log);
}

/// One digit per prime at `N = 2^11`, on the CPU.
#[test]
fn key_switch_dnum_equals_limbs_n2048() {
    check_key_switch(&cpu, 11, 5, 1, 5, &Transcript::default());
}

#[test]
fn key_switch_without_special_primes_is_refused() {
    let params =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 0, dnum: 3 }, 65537).unwrap();
    let be = cpu(&params);
    let sk = rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap();
    assert!(matches!(
        rlwe::gen_key_switch_key(&be, sk.eval(), &sk, NoiseScale(1)),
        Err(wgfhe::Error::KeyDimensions { .. })
    ));
}
