//! Hybrid key switching at the RLWE level: `d0 + d1 s = c s' + small` at every level, for the
//! CKKS-style (t = None) and BGV-style (t-preserving) ModDown, for several dnum.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

use num_bigint::BigInt;
use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::math::rns::RnsBasis;
use wgfhe::math::sampling::Purpose;
use wgfhe::params;
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::{self, NoiseScale};

/// Largest |coefficient| (centred) of `poly`, and whether every coefficient is divisible by `t`.
fn max_abs(be: &CpuBackend, poly: RnsPoly<CpuBackend, Eval>, t: i64) -> (f64, bool) {
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
        max = max.max(c.magnitude().bits() as f64);
        divisible &= (&c % BigInt::from(t)) == BigInt::from(0);
    }
    (max, divisible)
}

fn check_key_switch(log_n: u32, q: usize, p: usize, dnum: usize) {
    let t = 65537u32;
    let params =
        params::insecure_test_bgv(params::TestRing { log_n, q_primes: q, p_primes: p, dnum }, u64::from(t)).unwrap();
    let be = CpuBackend::new(RingContext::new(&params).unwrap());
    let ctx = be.context().clone();
    let sk = rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap();
    let other = rlwe::gen_secret_key(&be, Some(&[2; 32])).unwrap();
    for (scale, tt) in [(NoiseScale(1), None), (NoiseScale(t), Some(t))] {
        let ksk = rlwe::gen_key_switch_key(&be, other.eval(), &sk, scale).unwrap();
        for level in 0..params.q().len() {
            let basis = ctx.q_basis(level).unwrap();
            let c =
                RnsPoly::<CpuBackend, Eval>::uniform(&be, &[level as u8 + 7; 32], Purpose::Ephemeral, 0, basis.clone())
                    .unwrap();
            let (d0, d1) = rlwe::key_switch(&be, &c, &ksk, tt).unwrap();
            let s = sk.eval().select(&be, &basis).unwrap();
            let s_from = other.eval().select(&be, &basis).unwrap();
            let diff = d0.add(&be, &d1.mul(&be, &s).unwrap()).unwrap().sub(&be, &c.mul(&be, &s_from).unwrap()).unwrap();
            let (bits, divisible) = max_abs(&be, diff, i64::from(t));
            // The error is t * (sum_j d_j e_j / P + rounding): about log2(t) + log2(N) + a few bits,
            // far below log2(Q_l) >= 29.
            let bound = if tt.is_some() { 17.0 + f64::from(log_n) + 12.0 } else { f64::from(log_n) + 12.0 };
            assert!(bits <= bound, "level {level}: key-switch error 2^{bits} above 2^{bound}");
            if tt.is_some() {
                assert!(divisible, "BGV key switching must keep the error a multiple of t");
            }
        }
    }
}

#[test]
fn key_switch_dnum_1() {
    check_key_switch(10, 4, 4, 1);
}

#[test]
fn key_switch_dnum_2() {
    check_key_switch(10, 6, 3, 2);
}

#[test]
fn key_switch_dnum_equals_limbs() {
    check_key_switch(11, 5, 1, 5);
}

#[test]
fn key_switch_without_special_primes_is_refused() {
    let params =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 0, dnum: 3 }, 65537).unwrap();
    let be = CpuBackend::new(RingContext::new(&params).unwrap());
    let sk = rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap();
    assert!(matches!(
        rlwe::gen_key_switch_key(&be, sk.eval(), &sk, NoiseScale(1)),
        Err(wgfhe::Error::KeyDimensions { .. })
    ));
}
