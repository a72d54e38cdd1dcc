//! Key switching, modulus switching and rescaling give the words of the coefficient-domain
//! algorithms they replace, on both backends, and make the documented number of limb-NTTs.
//!
//! The reference below is the algorithm as it was before ModUp reused the digits' own Eval
//! limbs and ModDown and modulus switching transformed only the dropped limbs: written on the
//! host from the math primitives (`NttTable`, `BaseConverter`, `ScaleDown`), it transforms every
//! limb, gathers and merges the digits, and divides in the coefficient domain one step at a
//! time. Every comparison is word for word, over several parameter shapes (dnum 1 to 5, digits
//! of unequal size, more digits than one GPU pass binds, more limbs than one GPU tile), at every
//! level, with the BGV plaintext modulus and without, for stored, seeded, mixed, bit-packed and
//! packed seeded keys, and for keys reduced to the level (or above it). The
//! bodies run on the CPU (`cpu::*`) and on the GPU (`gpu::*`, whose words must also be the
//! CPU's, see `common/backends.rs`).

#![expect(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]

#[path = "common/backends.rs"]
mod backends;
mod common;

use std::sync::Arc;
use wgfhe::rlwe::KeyRequest;

use backends::{cpu_and_gpu, Make, Transcript};
use num_complex::Complex64;
use wgfhe::backend::ledger::{Ledger, Record};
use wgfhe::backend::{Backend, CpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::math::sampling::Purpose;
use wgfhe::params::{self, Parameters, TestRing};
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::ring::RingContext;
use wgfhe::rlwe::{self, Addend, KeySwitchKey, NoiseScale};

cpu_and_gpu!(
    key_switch_matches_the_coefficient_domain_algorithm,
    key_switch_adds_its_addends,
    fused_hmult_is_the_tensor_product_relinearised,
    drop_primes_matches_one_prime_at_a_time,
    mod_switch_and_rescale_match,
);

const T: u32 = 65537;

// ---- the reference: the coefficient-domain algorithms on the host --------------------------

fn ntt(ctx: &RingContext, words: &mut [u32], basis: &[usize], inverse: bool) {
    for (limb, &i) in words.chunks_exact_mut(ctx.n()).zip(basis) {
        let table = ctx.ntt_table(i).unwrap();
        if inverse {
            table.inverse(limb).unwrap();
        } else {
            table.forward(limb).unwrap();
        }
    }
}

/// Divide-and-round of Coeff words over `keep ++ drop` by the product of `drop`.
fn scale_down(ctx: &RingContext, words: &[u32], keep: &[usize], drop: &[usize], t: Option<u32>) -> Vec<u32> {
    let n = ctx.n();
    let mut out = vec![0u32; keep.len() * n];
    ctx.scale_down(keep, drop, t)
        .unwrap()
        .apply(&words[..keep.len() * n], &words[keep.len() * n..], n, &mut out)
        .unwrap();
    out
}

/// Key switching as it was: ModUp of every digit into a full `Q_l P` polynomial (the digit's
/// own limbs copied, every limb transformed), the inner product digit by digit, ModDown of
/// every limb in the coefficient domain. `keys` are the `(b_j, a_j)` words over the full `Q P`.
fn reference_key_switch(
    ctx: &RingContext,
    c: &[u32],
    level: usize,
    keys: &[(Vec<u32>, Vec<u32>)],
    t: Option<u32>,
) -> (Vec<u32>, Vec<u32>) {
    let n = ctx.n();
    let params = ctx.params();
    let q_basis = ctx.q_basis(level).unwrap();
    let p_basis = ctx.p_basis();
    let ext = ctx.qp_basis(level).unwrap();
    let key_basis = ctx.qp_basis(ctx.q_count() - 1).unwrap();
    let mut c_coeff = c.to_vec();
    ntt(ctx, &mut c_coeff, &q_basis, true);
    let mut acc = [vec![0u32; ext.len() * n], vec![0u32; ext.len() * n]];
    let mut j_key = 0;
    for j in 0..params.dnum() {
        let group: Vec<usize> = params.digit_range(j).filter(|&i| i <= level).collect();
        if group.is_empty() {
            continue;
        }
        let rest: Vec<usize> = ext.iter().copied().filter(|i| !group.contains(i)).collect();
        let part: Vec<u32> = group.iter().flat_map(|&i| c_coeff[i * n..(i + 1) * n].to_vec()).collect();
        let mut conv = vec![0u32; rest.len() * n];
        ctx.converter(&group, &rest).unwrap().convert(&part, n, &mut conv).unwrap();
        let mut joined = vec![0u32; ext.len() * n];
        for (pos, &i) in ext.iter().enumerate() {
            let src = match group.iter().position(|&g| g == i) {
                Some(k) => &part[k * n..(k + 1) * n],
                None => {
                    let k = rest.iter().position(|&r| r == i).unwrap();
                    &conv[k * n..(k + 1) * n]
                }
            };
            joined[pos * n..(pos + 1) * n].copy_from_slice(src);
        }
        ntt(ctx, &mut joined, &ext, false);
        let (b, a) = &keys[j_key];
        j_key += 1;
        for (pos, &i) in ext.iter().enumerate() {
            let m = ctx.modulus(i).unwrap();
            let kp = key_basis.iter().position(|&k| k == i).unwrap();
            for x in 0..n {
                let d = joined[pos * n + x];
                acc[0][pos * n + x] = m.add(acc[0][pos * n + x], m.mul(d, b[kp * n + x]));
                acc[1][pos * n + x] = m.add(acc[1][pos * n + x], m.mul(d, a[kp * n + x]));
            }
        }
    }
    let [a0, a1] = acc.map(|mut s| {
        ntt(ctx, &mut s, &ext, true);
        let mut out = scale_down(ctx, &s, &q_basis, &p_basis, t);
        ntt(ctx, &mut out, &q_basis, false);
        out
    });
    (a0, a1)
}

/// Dropping the last `count` primes as it was: per prime, every limb to coefficients, one
/// one-prime divide-and-round, every limb back.
fn reference_drop_primes(ctx: &RingContext, x: &[u32], level: usize, count: usize, t: Option<u32>) -> Vec<u32> {
    let mut x = x.to_vec();
    for l in (level + 1 - count..=level).rev() {
        let basis = ctx.q_basis(l).unwrap();
        ntt(ctx, &mut x, &basis, true);
        x = scale_down(ctx, &x, &basis[..l], &basis[l..], t);
        ntt(ctx, &mut x, &basis[..l], false);
    }
    x
}

/// The `(b_j, a_j)` words of a key (its seeded digits expanded on the host's CPU twin).
fn key_words<B: Backend>(be: &B, ksk: &KeySwitchKey<B>) -> Vec<(Vec<u32>, Vec<u32>)> {
    let full = ksk.expand(be).unwrap();
    full.digits.iter().map(|d| (d.b.to_host(be).unwrap(), d.a.as_ref().unwrap().to_host(be).unwrap())).collect()
}

// ---- the bodies ----------------------------------------------------------------------------

/// `(q_primes, p_primes, dnum)`: dnum 1 to 5, digits of unequal size (4 + 3; 3 + 3 + 1;
/// 2 + 2 + 2 + 2 + 1), five digits (two GPU passes), and 14 + 6 primes (targets and kept
/// limbs beyond one GPU tile of 8).
const SHAPES: [(usize, usize, usize); 6] = [(6, 6, 1), (7, 4, 2), (7, 3, 3), (8, 2, 4), (9, 2, 5), (14, 6, 5)];

fn bgv_params(log_n: u32, (q, p, dnum): (usize, usize, usize)) -> Parameters {
    params::insecure_test_bgv(TestRing { log_n, q_primes: q, p_primes: p, dnum }, u64::from(T)).unwrap()
}

fn key_switch_matches_the_coefficient_domain_algorithm<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    for shape in SHAPES {
        let params = bgv_params(6, shape);
        let be = make(&params);
        let ctx = Arc::clone(be.context());
        let sk = rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap();
        let other = rlwe::gen_secret_key(&be, Some(&[2; 32])).unwrap();
        for (scale, t) in [(NoiseScale(1), None), (NoiseScale(T), Some(T))] {
            let stored = rlwe::gen_key_switch_key(&be, other.eval(), &sk, scale).unwrap();
            let words = key_words(&be, &stored);
            let mut mixed = stored.expand(&be).unwrap();
            for d in mixed.digits.iter_mut().skip(1).step_by(2) {
                d.a = None;
            }
            let seeded = stored.expand(&be).unwrap().seeded();
            let packed = stored.expand(&be).unwrap().packed(&be).unwrap();
            let packed_seeded = seeded.expand(&be).unwrap().seeded().packed(&be).unwrap();
            assert!(packed_seeded.is_packed() && packed_seeded.is_seeded());
            assert_eq!(key_words(&be, &packed_seeded), words);
            for level in 0..params.q().len() {
                let basis = ctx.q_basis(level).unwrap();
                let c = RnsPoly::<B, Eval>::uniform(&be, &[level as u8; 32], Purpose::Ephemeral, 1, basis).unwrap();
                let want = reference_key_switch(&ctx, &c.to_host(&be).unwrap(), level, &words, t);
                // Keys reduced to this level and to the one above, in the stored and the packed
                // seeded forms.
                let above = (level + 1).min(params.q().len() - 1);
                let reduced = stored.at_level(&be, level).unwrap();
                let reduced_packed = packed_seeded.at_level(&be, above).unwrap();
                assert_eq!(reduced.level(&be).unwrap(), level);
                for (form, ksk) in [
                    ("stored", &stored),
                    ("mixed", &mixed),
                    ("seeded", &seeded),
                    ("packed", &packed),
                    ("packed seeded", &packed_seeded),
                    ("reduced to the level", &reduced),
                    ("packed seeded reduced above the level", &reduced_packed),
                ] {
                    let (d0, d1) = rlwe::key_switch(&be, &c, ksk, t).unwrap();
                    let what = format!("{} level {level} t {t:?} {form}", params.name());
                    assert!(d0.to_host(&be).unwrap() == want.0 && d1.to_host(&be).unwrap() == want.1, "{what}");
                    log.record(&be, &what, [&d0, &d1]);
                }
                if level > 0 {
                    let below = packed_seeded.at_level(&be, level - 1).unwrap();
                    assert!(rlwe::key_switch(&be, &c, &below, t).is_err(), "a key below the level is refused");
                }
            }
            // A key generated at a level is the top-level key generated from the same secret
            // state, restricted to that level.
            for level in 0..params.q().len() {
                let sk_again = rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap();
                let at = rlwe::gen_key_switch_key_at(&be, other.eval(), &sk_again, scale, level).unwrap();
                let top = rlwe::gen_key_switch_key(
                    &be,
                    other.eval(),
                    &rlwe::gen_secret_key(&be, Some(&[1; 32])).unwrap(),
                    scale,
                )
                .unwrap();
                assert_eq!(key_words(&be, &at), key_words(&be, &top.at_level(&be, level).unwrap()), "level {level}");
            }
        }
    }
}

/// The addends of relinearisation (`c_0`, `c_1`) and of a rotation (`c_0(X^g)`) are added in
/// ModDown's last pass: the words of the switch followed by separate additions.
fn key_switch_adds_its_addends<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let params = bgv_params(6, (7, 3, 3));
    let be = make(&params);
    let ctx = Arc::clone(be.context());
    let sk = rlwe::gen_secret_key(&be, Some(&[5; 32])).unwrap();
    let other = rlwe::gen_secret_key(&be, Some(&[6; 32])).unwrap();
    let ksk = rlwe::gen_key_switch_key(&be, other.eval(), &sk, NoiseScale(T)).unwrap();
    let g = 5;
    for level in [0, 3, 6] {
        let basis = ctx.q_basis(level).unwrap();
        let poly = |i: u32| RnsPoly::<B, Eval>::uniform(&be, &[9; 32], Purpose::Ephemeral, i, basis.clone()).unwrap();
        let (c, c0, c1) = (poly(0), poly(1), poly(2));
        let (d0, d1) = rlwe::key_switch(&be, &c, &ksk, Some(T)).unwrap();
        let (r0, r1) =
            rlwe::key_switch_add(&be, &c, &ksk, Some(T), [Some(Addend::plain(&c0)), Some(Addend::plain(&c1))]).unwrap();
        assert_eq!(r0.to_host(&be).unwrap(), d0.add(&be, &c0).unwrap().to_host(&be).unwrap(), "level {level}");
        assert_eq!(r1.to_host(&be).unwrap(), d1.add(&be, &c1).unwrap().to_host(&be).unwrap(), "level {level}");
        let (s0, s1) =
            rlwe::key_switch_add(&be, &c, &ksk, Some(T), [Some(Addend { poly: &c0, galois: Some(g) }), None]).unwrap();
        let c0g = c0.automorphism(&be, g).unwrap();
        assert_eq!(s0.to_host(&be).unwrap(), d0.add(&be, &c0g).unwrap().to_host(&be).unwrap(), "level {level}");
        assert_eq!(s1.to_host(&be).unwrap(), d1.to_host(&be).unwrap(), "level {level}");
        log.record(&be, &format!("addends at level {level}"), [&r0, &r1, &s0, &s1]);
    }
}

/// `mul_relinearize` (the tensor product computed inside the key switch) gives the words of the
/// tensor product relinearised, at every level, with and without `t`; and BGV's and CKKS's
/// `mul_relin` (fused) the words of `mul` then `relinearize`.
fn fused_hmult_is_the_tensor_product_relinearised<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let params = bgv_params(6, (7, 3, 3));
    let be = make(&params);
    let ctx = Arc::clone(be.context());
    let sk = rlwe::gen_secret_key(&be, Some(&[5; 32])).unwrap();
    let keys = rlwe::gen_evaluation_keys(&be, &sk, &[], NoiseScale(T)).unwrap();
    for level in [0, 3, 6] {
        let basis = ctx.q_basis(level).unwrap();
        let poly = |i: u32| RnsPoly::<B, Eval>::uniform(&be, &[8; 32], Purpose::Ephemeral, i, basis.clone()).unwrap();
        let (a0, a1, b0, b1) = (poly(0), poly(1), poly(2), poly(3));
        for t in [Some(T), None] {
            let [c0, c1, c2] = RnsPoly::tensor(&be, [&a0, &a1], [&b0, &b1]).unwrap();
            let (w0, w1) = rlwe::relinearize(&be, &[c0, c1, c2], &keys, t).unwrap();
            let (f0, f1) = rlwe::mul_relinearize(&be, [&a0, &a1], [&b0, &b1], &keys, t).unwrap();
            assert_eq!(f0.to_host(&be).unwrap(), w0.to_host(&be).unwrap(), "level {level}, t {t:?}");
            assert_eq!(f1.to_host(&be).unwrap(), w1.to_host(&be).unwrap(), "level {level}, t {t:?}");
            log.record(&be, &format!("fused HMULT at level {level}, t {t:?}"), [&f0, &f1]);
        }
    }
    let bgv = Bgv::new(make(&params)).unwrap();
    let bsk = bgv.gen_secret_key_from_seed(&[2; 32]).unwrap();
    let bkeys = bgv.gen_evaluation_keys(&bsk, &KeyRequest::relinearisation()).unwrap();
    let enc = |v: &[u64]| bgv.encrypt_symmetric(&bsk, &bgv.encoder().encode(v).unwrap()).unwrap();
    let (x, y) = (enc(&[3, 4, 5]), enc(&[7, 8, 65536]));
    let fused = bgv.mul_relin(&x, &y, &bkeys).unwrap();
    let plain = bgv.relinearize(&bgv.switch_and_tensor(&x, &y).unwrap(), &bkeys).unwrap();
    assert_eq!((fused.level(), fused.correction_factor()), (plain.level(), plain.correction_factor()));
    for (f, p) in fused.polys().iter().zip(plain.polys()) {
        assert!(f.to_host(bgv.backend()).unwrap() == p.to_host(bgv.backend()).unwrap(), "BGV mul_relin");
    }
    assert_eq!(bgv.encoder().decode(&bgv.decrypt(&bsk, &fused).unwrap()).unwrap()[..3], [21, 32, 65532]);
    let cp = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 6, p_primes: 2, dnum: 3 }, 30).unwrap();
    let ckks = Ckks::new(make(&cp), ScalePolicy::Single).unwrap();
    let csk = ckks.gen_secret_key_from_seed(&[3; 32]).unwrap();
    let ckeys = ckks.gen_evaluation_keys(&csk, &KeyRequest::relinearisation()).unwrap();
    let x = ckks.encrypt_symmetric(&csk, &ckks.encode_real(&[0.5, -0.25]).unwrap()).unwrap();
    let y = ckks.encrypt_symmetric(&csk, &ckks.encode_real(&[0.75, 0.125]).unwrap()).unwrap();
    let fused = ckks.mul_relin(&x, &y, &ckeys).unwrap();
    let plain = ckks.relinearize(&ckks.mul(&x, &y).unwrap(), &ckeys).unwrap();
    assert_eq!((fused.level(), fused.scale()), (plain.level(), plain.scale()));
    for (f, p) in fused.polys().iter().zip(plain.polys()) {
        assert!(f.to_host(ckks.backend()).unwrap() == p.to_host(ckks.backend()).unwrap(), "CKKS mul_relin");
    }
}

/// `drop_primes` of two polynomials, every level and every count, with and without `t`.
fn drop_primes_matches_one_prime_at_a_time<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let params = bgv_params(6, (14, 6, 5));
    let be = make(&params);
    let ctx = Arc::clone(be.context());
    for level in 1..params.q().len() {
        let basis = ctx.q_basis(level).unwrap();
        let polys: Vec<RnsPoly<B, Eval>> = (0..2)
            .map(|i| RnsPoly::uniform(&be, &[level as u8; 32], Purpose::Ephemeral, i, basis.clone()).unwrap())
            .collect();
        for count in 1..=level {
            for t in [None, Some(T)] {
                let out = rlwe::drop_primes(&be, &polys, count, t).unwrap();
                for (p, o) in polys.iter().zip(&out) {
                    let want = reference_drop_primes(&ctx, &p.to_host(&be).unwrap(), level, count, t);
                    assert!(o.to_host(&be).unwrap() == want, "level {level}, {count} dropped, t {t:?}");
                }
                log.record(&be, &format!("level {level}, {count} dropped, t {t:?}"), &out);
            }
        }
    }
}

/// BGV `mod_switch` by every count and CKKS `rescale` under both policies, from every level.
fn mod_switch_and_rescale_match<B: Backend>(make: Make<'_, B>, log: &Transcript) {
    let bgv = Bgv::new(make(&bgv_params(8, (6, 2, 3)))).unwrap();
    let ctx = Arc::clone(bgv.backend().context());
    let sk = bgv.gen_secret_key_from_seed(&[7; 32]).unwrap();
    let ct = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[1, 2, 3]).unwrap()).unwrap();
    for count in 1..=ct.level() {
        let low = bgv.mod_switch(&ct, count).unwrap();
        for (p, o) in ct.polys().iter().zip(low.polys()) {
            let want = reference_drop_primes(&ctx, &p.to_host(bgv.backend()).unwrap(), ct.level(), count, Some(T));
            assert!(o.to_host(bgv.backend()).unwrap() == want, "BGV mod_switch by {count}");
        }
        log.record(bgv.backend(), &format!("mod_switch by {count}"), low.polys());
    }
    let ring = TestRing { log_n: 8, q_primes: 7, p_primes: 3, dnum: 3 };
    for policy in [ScalePolicy::Single, ScalePolicy::Double] {
        let ckks = Ckks::new(make(&params::insecure_test_ckks(ring, 30).unwrap()), policy).unwrap();
        let ctx = Arc::clone(ckks.backend().context());
        let sk = ckks.gen_secret_key_from_seed(&[8; 32]).unwrap();
        let x = vec![Complex64::new(0.25, -0.5); 4];
        let pt = ckks.encode(&x, ckks.default_scale(), 4, ckks.max_level()).unwrap();
        let mut ct = ckks.encrypt_symmetric(&sk, &pt).unwrap();
        while let Ok(low) = ckks.rescale(&ct) {
            let count = ct.level() - low.level();
            for (p, o) in ct.polys().iter().zip(low.polys()) {
                let want = reference_drop_primes(&ctx, &p.to_host(ckks.backend()).unwrap(), ct.level(), count, None);
                assert!(o.to_host(ckks.backend()).unwrap() == want, "CKKS {policy:?} rescale from {}", ct.level());
            }
            log.record(ckks.backend(), &format!("{policy:?} rescale from {}", ct.level()), low.polys());
            ct = low;
        }
    }
}

// ---- limb-NTTs ---------------------------------------------------------------------------------

/// Limbs transformed (forward and inverse) by the recorded dispatches.
fn ntt_limbs(records: &[Record]) -> usize {
    // In place or out of place (`ntt_inverse_from`): every transform record counts its limbs.
    records.iter().map(|r| r.limb_ntts as usize).sum()
}

/// The documented count of one key switch at `level`:
/// `(l + 1) + sum_j (l + 1 + k - alpha_j) + 2k + 2(l + 1)`, from the parameters' digits.
fn key_switch_ntts(p: &Parameters, level: usize) -> usize {
    let (l1, k) = (level + 1, p.p().len());
    let modup: usize = (0..p.dnum())
        .map(|j| p.digit_range(j).filter(|&i| i <= level).count())
        .filter(|&alpha| alpha > 0)
        .map(|alpha| l1 + k - alpha)
        .sum();
    l1 + modup + 2 * k + 2 * l1
}

/// HMULT with relinearisation and a rotation make exactly the documented number of limb-NTTs
/// at every level of several shapes (counted through the ledger's records); BGV's `mul_relin`
/// adds `l + 1` per polynomial of each operand it switches down from level `l`.
#[test]
fn limb_ntts_per_hmult_and_rotation() {
    for shape in [(5, 2, 3), (9, 2, 5), (6, 6, 1)] {
        let p = bgv_params(10, shape);
        let bgv = Bgv::new(Ledger::new(CpuBackend::new(RingContext::new(&p).unwrap()))).unwrap();
        let sk = bgv.gen_secret_key_from_seed(&[3; 32]).unwrap();
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1])).unwrap();
        let top = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[4, 5]).unwrap()).unwrap();
        let g = bgv.column_rotation_element(1);
        let ctx = Arc::clone(bgv.backend().context());
        for level in 0..p.q().len() {
            // Random polynomials: the counts do not depend on the values (nor on the noise).
            let basis = ctx.q_basis(level).unwrap();
            let polys: Vec<RnsPoly<_, Eval>> = (0..3)
                .map(|i| RnsPoly::uniform(bgv.backend(), &[1; 32], Purpose::Ephemeral, i, basis.clone()).unwrap())
                .collect();
            bgv.backend().take();
            rlwe::relinearize(bgv.backend(), &polys, &keys, Some(T)).unwrap();
            assert_eq!(ntt_limbs(&bgv.backend().take()), key_switch_ntts(&p, level), "{} HMULT at {level}", p.name());
            rlwe::apply_galois(bgv.backend(), &polys[..2], g, &keys, "by 1", Some(T)).unwrap();
            assert_eq!(
                ntt_limbs(&bgv.backend().take()),
                key_switch_ntts(&p, level),
                "{} rotation at {level}",
                p.name()
            );
            // A modulus switch by any count: l + 1 per polynomial.
            if level > 0 {
                let ct = bgv.mod_switch_to_level(&top, level).unwrap();
                bgv.backend().take();
                bgv.mod_switch(&ct, level).unwrap();
                assert_eq!(ntt_limbs(&bgv.backend().take()), 2 * (level + 1), "{} mod switch from {level}", p.name());
            }
        }
        // mul_relin of operands at different levels: the higher one is switched down first.
        let a = bgv.mod_switch_to_level(&top, p.q().len() - 1).unwrap();
        let b = bgv.mod_switch_to_level(&top, p.q().len() - 2).unwrap();
        bgv.backend().take();
        let out = bgv.mul_relin(&a, &b, &keys).unwrap();
        let switched: usize = [&a, &b].iter().filter(|c| c.level() != out.level()).map(|c| 2 * (c.level() + 1)).sum();
        assert_eq!(ntt_limbs(&bgv.backend().take()), switched + key_switch_ntts(&p, out.level()), "{}", p.name());
    }
}

/// The counts of the shipped sets the benchmarks run, at the top level: bgv-n14 (10 + 4 primes,
/// dnum 3) and bgv-n16 (43 + 15 primes, dnum 3), against the previous algorithm's.
#[test]
fn shipped_sets_limb_ntts() {
    for (name, want, before) in [("bgv-n14", 70, 100), ("bgv-n16", 290, 419)] {
        let p = params::by_name(name).unwrap();
        let top = p.q().len() - 1;
        assert_eq!(key_switch_ntts(&p, top), want, "{name}");
        let (l1, k, dnum) = (top + 1, p.p().len(), p.dnum());
        assert_eq!(l1 + dnum * (l1 + k) + 2 * (l1 + k) + 2 * l1, before, "{name}");
    }
}
