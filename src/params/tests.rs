//! Tests of validation, the catalogues and the wire encoding.

use super::*;
use crate::math::primes::ntt_primes;
use crate::serial::{self, ObjectType};

/// Independent primality by trial division (values < 2^31 only).
fn slow_prime(n: u64) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
}

/// log2 of a big integer from its top 64 bits.
fn big_log2(x: &BigUint) -> f64 {
    let bits = x.bits();
    let shift = bits.saturating_sub(64);
    let top: u64 = (x >> shift).try_into().unwrap();
    shift as f64 + (top as f64).log2()
}

fn product(xs: &[u64]) -> BigUint {
    xs.iter().fold(BigUint::from(1u32), |a, &x| a * x)
}

/// A small valid BGV literal: N = 2^10, 4 chain primes, 2 special primes, dnum 2.
fn small() -> ParametersLiteral {
    bgv_literal("small", 10, 4, 2, 2, 65537).unwrap()
}

fn insecure(lit: ParametersLiteral) -> Result<Parameters> {
    Parameters::new_insecure_for_tests(lit)
}

fn modulus_reason(r: Result<Parameters>) -> &'static str {
    match r {
        Err(Error::InvalidModulus { reason, .. }) => reason,
        other => panic!("expected InvalidModulus, got {other:?}"),
    }
}

fn params_reason(r: Result<Parameters>) -> String {
    match r {
        Err(Error::InvalidParameters { reason }) => reason,
        other => panic!("expected InvalidParameters, got {other:?}"),
    }
}

fn t_reason(r: Result<Parameters>) -> &'static str {
    match r {
        Err(Error::InvalidPlaintextModulus { reason, .. }) => reason,
        other => panic!("expected InvalidPlaintextModulus, got {other:?}"),
    }
}

#[test]
fn shipped_sets_validate_and_fit_their_bounds() {
    // (name, log_n, t, len q, len p, log2(QP) computed outside this crate)
    let want = [
        ("bgv-n13", 13, 65537, 5, 2, 209.997_005_546_076_08),
        ("bgv-n14", 14, 65537, 10, 4, 419.956_604_293_161_43),
        ("bgv-n15", 15, 65537, 21, 7, 839.597_655_987_389_4),
        ("bgv-n16", 16, 786_433, 43, 15, 1_736.570_706_767_111_7),
        ("bgv-n17", 17, 786_433, 88, 30, 3_511.841_821_103_695),
    ];
    let lits: Vec<_> = shipped().into_iter().filter(|l| l.scheme == Scheme::Bgv).collect();
    assert_eq!(lits.len(), want.len());
    // BGV sets come first.
    assert!(shipped()[..want.len()].iter().all(|l| l.scheme == Scheme::Bgv));
    for (lit, (name, log_n, t, lq, lp, log_qp)) in lits.into_iter().zip(want) {
        assert_eq!(lit.name, name);
        let params = Parameters::new(lit.clone()).unwrap();
        assert!(!params.is_insecure());
        assert_eq!(params.log_n(), log_n);
        assert_eq!(params.n(), 1 << log_n);
        assert_eq!(params.plaintext_modulus(), Some(t));
        assert_eq!((params.q().len(), params.p().len()), (lq, lp));
        assert_eq!(params.max_level(), lq - 1);
        assert_eq!(params.dnum(), 3);
        assert_eq!(params.sigma(), 3.19);
        assert_eq!(params.scheme(), Scheme::Bgv);
        assert_eq!(params.security(), SecurityLevel::Bits128);
        assert!(params.batching(), "{name}");
        assert!((params.log_qp() - log_qp).abs() < 1e-6, "{name}");
        // Independently: the table bound from the guidelines, and the primes.
        let bound = [214, 430, 868, 1747, 3523][(log_n - 13) as usize];
        assert_eq!(params.security_bound(), Some(bound));
        assert!(log_qp <= f64::from(bound));
        let two_n = 2u64 << log_n;
        for &x in lit.q.iter().chain(&lit.p) {
            assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30 && x > 1 << 29);
        }
        assert!((t - 1) % two_n == 0 && slow_prime(t));
        // P covers every digit.
        let big_p = product(&lit.p);
        for j in 0..3 {
            assert!(big_p >= product(&lit.q[params.digit_range(j)]));
        }
        // The written-out primes are those of the builder.
        assert_eq!(bgv_literal(name, log_n, lq, lp, 3, t).unwrap(), lit);
        // by_name gives the same set.
        assert_eq!(by_name(name).unwrap(), params);
    }
}

#[test]
fn lut_set_is_secure_and_switchable() {
    let params = by_name(LUT_SET).unwrap();
    assert!(!params.is_insecure());
    assert_eq!((params.q().len(), params.p().len(), params.dnum()), (45, 12, 4));
    assert!(params.log_qp() <= 1747.0, "{}", params.log_qp());
    assert!(params.batching());
    let lit = application_literals().into_iter().find(|l| l.name == LUT_SET).unwrap();
    let big_p = product(&lit.p);
    for j in 0..4 {
        assert!(big_p >= product(&lit.q[params.digit_range(j)]));
    }
}

#[test]
fn cnn_sets_are_secure_and_switchable() {
    for (name, log_n, counts, bound) in [(CNN_SET, 16, (48, 10, 5), 1747.0), (CNN_DIGITS_SET, 17, (84, 21, 4), 3523.0)]
    {
        let params = by_name(name).unwrap();
        assert!(!params.is_insecure());
        assert_eq!(params.log_n(), log_n);
        assert_eq!((params.q().len(), params.p().len(), params.dnum()), counts);
        assert!(params.log_qp() <= bound, "{name}: {}", params.log_qp());
        assert!(params.batching());
        let lit = application_literals().into_iter().find(|l| l.name == name).unwrap();
        let big_p = product(&lit.p);
        for j in 0..counts.2 {
            assert!(big_p >= product(&lit.q[params.digit_range(j)]), "{name} digit {j}");
        }
    }
}

#[test]
fn bxt_paper_set_is_secure_and_switchable() {
    let lit = bxt_paper_literal();
    let params = by_name(BXT_PAPER_SET).unwrap();
    assert!(!params.is_insecure());
    assert_eq!((params.q().len(), params.p().len(), params.dnum()), (48, 15, 3));
    assert!((params.log_qp() - 1745.57).abs() < 0.01, "{}", params.log_qp());
    assert_eq!(params.security_bound(), Some(1747));
    let two_n = 2u64 << 16;
    for &x in lit.q.iter().chain(&lit.p) {
        assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30);
    }
    let big_p = product(&lit.p);
    for j in 0..3 {
        assert!(big_p >= product(&lit.q[params.digit_range(j)]));
    }
    assert!(params.batching());
}

#[test]
fn shipped_ckks_sets_validate_and_fit_their_bounds() {
    // (name, log_n, len q, len p, dnum, log2(QP) computed outside this crate, bound of the
    // 2024 table)
    let want = [
        ("ckks-n13", 13, 6, 1, 6, 209.997_005_546_076_08, 214),
        ("ckks-n14", 14, 12, 2, 6, 419.956_604_293_161_43, 430),
        ("ckks-n15", 15, 21, 7, 3, 839.597_655_987_389_4, 868),
        ("ckks-n16", 16, 43, 15, 3, 1_736.570_706_767_111_7, 1747),
    ];
    let all = shipped();
    let lits: Vec<_> = all.iter().filter(|l| l.scheme == Scheme::Ckks).cloned().collect();
    assert_eq!(lits.len(), want.len());
    // The CKKS sets follow the BGV ones.
    assert_eq!(&all[all.len() - want.len()..], &lits[..]);
    for (lit, (name, log_n, lq, lp, dnum, log_qp, bound)) in lits.into_iter().zip(want) {
        assert_eq!(lit.name, name);
        let params = Parameters::new(lit.clone()).unwrap();
        assert!(!params.is_insecure());
        assert_eq!(params.scheme(), Scheme::Ckks);
        assert_eq!(params.n(), 1 << log_n);
        assert_eq!(params.log_scale(), Some(30));
        assert_eq!(params.plaintext_modulus(), None);
        assert!(!params.batching());
        assert_eq!((params.q().len(), params.p().len()), (lq, lp));
        assert_eq!(params.dnum(), dnum);
        assert_eq!(params.sigma(), 3.19);
        assert_eq!(params.security(), SecurityLevel::Bits128);
        assert_eq!(params.security_bound(), Some(bound));
        assert!((params.log_qp() - log_qp).abs() < 1e-6, "{name}");
        assert!(big_log2(&(product(&lit.q) * product(&lit.p))) <= f64::from(bound));
        let two_n = 2u64 << log_n;
        for &x in lit.q.iter().chain(&lit.p) {
            assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30 && x > 1 << 29);
        }
        // Special primes are the largest ones; P covers every digit (each non-empty).
        let min_p = lit.p.iter().min().unwrap();
        assert!(lit.q.iter().all(|x| x < min_p));
        let big_p = product(&lit.p);
        let alpha = lq.div_ceil(dnum);
        for j in 0..dnum {
            let digit = &lit.q[j * alpha..((j + 1) * alpha).min(lq)];
            assert!(!digit.is_empty());
            assert_eq!(params.digit_range(j), j * alpha..((j + 1) * alpha).min(lq));
            assert!(big_p >= product(digit), "{name}, digit {j}");
        }
        // The written-out primes are those of the builder.
        assert_eq!(ckks_literal(name, log_n, lq, lp, dnum, 30).unwrap(), lit);
        assert_eq!(by_name(name).unwrap(), params);
    }
}

#[test]
fn shipped_names_are_unique() {
    let mut names: Vec<String> = shipped().into_iter().map(|l| l.name).collect();
    let n = names.len();
    assert_eq!(n, 9);
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n);
}

#[test]
fn ckks_helpers() {
    let p = insecure_test_ckks(TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 }, 25).unwrap();
    assert!(p.is_insecure());
    assert_eq!(p.name(), "insecure-test-ckks-n10-q4-p2-d2-s25");
    assert_eq!((p.scheme(), p.log_scale(), p.plaintext_modulus()), (Scheme::Ckks, Some(25), None));
    assert_eq!((p.q().len(), p.p().len(), p.dnum()), (4, 2, 2));
    // Same primes as the BGV builder.
    let b = bgv_literal("x", 10, 4, 2, 2, 65537).unwrap();
    assert_eq!(p.literal().q, b.q);
    assert_eq!(p.literal().p, b.p);
    // log_scale is checked by the constructor, not the literal builder.
    assert!(ckks_literal("x", 10, 2, 1, 1, 0).is_ok());
    assert!(params_reason(insecure_test_ckks(TestRing { log_n: 10, q_primes: 2, p_primes: 2, dnum: 1 }, 0))
        .contains("log_scale"));
    assert!(params_reason(insecure_test_ckks(TestRing { log_n: 10, q_primes: 2, p_primes: 2, dnum: 1 }, 61))
        .contains("log_scale"));
    assert!(insecure_test_ckks(TestRing { log_n: 10, q_primes: 2, p_primes: 2, dnum: 1 }, 60).is_ok());
    // Builder errors.
    assert!(matches!(ckks_literal("x", 0, 2, 1, 1, 30), Err(Error::InvalidRingDegree { .. })));
    assert!(matches!(ckks_literal("x", 18, 2, 1, 1, 30), Err(Error::InvalidRingDegree { .. })));
    assert!(matches!(ckks_literal("x", 10, 257, 0, 1, 30), Err(Error::CountTooLarge { .. })));
    assert!(matches!(ckks_literal("x", 10, 1, 257, 1, 30), Err(Error::CountTooLarge { .. })));
    assert!(matches!(ckks_literal("x", 17, 250, 0, 1, 30), Err(Error::NotEnoughPrimes { .. })));
    // A CKKS set above its bound is refused by the secure constructor.
    let lit = ckks_literal("too-big", 13, 7, 1, 7, 30).unwrap();
    assert!(matches!(
        Parameters::new(lit),
        Err(Error::InsecureParameters { n: 8192, max_log_qp: 214, security_bits: 128, .. })
    ));
}

#[test]
fn ckks_literal_with_a_plaintext_modulus_is_refused() {
    for name in ["ckks-n13", "ckks-n16"] {
        let mut lit = shipped().into_iter().find(|l| l.name == name).unwrap();
        lit.plaintext_modulus = Some(65537);
        assert!(params_reason(Parameters::new(lit.clone())).contains("plaintext modulus"));
        assert!(params_reason(insecure(lit)).contains("plaintext modulus"));
    }
    // Also without log_scale, and through the JSON path.
    let mut lit = ckks_literal("x", 10, 2, 1, 1, 30).unwrap();
    lit.plaintext_modulus = Some(3);
    lit.log_scale = None;
    assert!(insecure(lit.clone()).is_err());
    let back = ParametersLiteral::from_json(&lit.to_json().unwrap()).unwrap();
    assert!(insecure(back).is_err());
}

#[test]
fn by_name_unknown_is_an_error() {
    assert_eq!(by_name("bgv-n12"), Err(Error::UnknownParameterSet { name: "bgv-n12".into() }));
    // There is no CKKS set for N = 2^17.
    assert_eq!(by_name("ckks-n17"), Err(Error::UnknownParameterSet { name: "ckks-n17".into() }));
}

#[test]
fn logs_match_big_integer_products() {
    for lit in shipped().into_iter().chain([small()]) {
        let params = insecure(lit.clone()).unwrap();
        let q = product(&lit.q);
        let p = product(&lit.p);
        assert!((params.log_q() - big_log2(&q)).abs() < 1e-6);
        assert!((params.log_p() - big_log2(&p)).abs() < 1e-6);
        assert!((params.log_qp() - big_log2(&(q * p))).abs() < 1e-6);
    }
    let mut lit = small();
    lit.p.clear();
    let params = insecure(lit).unwrap();
    assert_eq!(params.log_p(), 0.0);
    assert_eq!(params.log_qp(), params.log_q());
}

/// The canonical encoding written out by hand, independently of `encode`.
fn hand_encoding(lit: &ParametersLiteral) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(lit.name.len() as u32).to_le_bytes());
    v.extend_from_slice(lit.name.as_bytes());
    v.push(match lit.scheme {
        Scheme::Bgv => 1,
        Scheme::Ckks => 2,
    });
    v.extend_from_slice(&lit.log_n.to_le_bytes());
    v.extend_from_slice(&(lit.q.len() as u32).to_le_bytes());
    v.extend_from_slice(&(lit.p.len() as u32).to_le_bytes());
    for x in lit.q.iter().chain(&lit.p) {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&(lit.dnum as u32).to_le_bytes());
    match lit.scheme {
        Scheme::Bgv => v.extend_from_slice(&lit.plaintext_modulus.unwrap().to_le_bytes()),
        Scheme::Ckks => v.extend_from_slice(&lit.log_scale.unwrap().to_le_bytes()),
    }
    v.push(1);
    let bits: u16 = match lit.security {
        SecurityLevel::Bits128 => 128,
        SecurityLevel::Bits192 => 192,
        SecurityLevel::Bits256 => 256,
    };
    v.extend_from_slice(&bits.to_le_bytes());
    v.extend_from_slice(&lit.sigma.to_bits().to_le_bytes());
    v
}

fn ckks_small() -> ParametersLiteral {
    let mut lit = small();
    lit.name = "ckks-small".into();
    lit.scheme = Scheme::Ckks;
    lit.plaintext_modulus = None;
    lit.log_scale = Some(40);
    lit
}

#[test]
fn id_is_sha256_of_the_canonical_encoding() {
    for lit in shipped().into_iter().chain([small(), ckks_small()]) {
        let params = insecure(lit.clone()).unwrap();
        let enc = hand_encoding(&lit);
        let digest = Sha256::digest(&enc);
        let id = u64::from_le_bytes(digest[..8].try_into().unwrap());
        assert_eq!(params.id(), id);
        // The payload of the wire object is that encoding.
        let bytes = params.to_bytes();
        assert_eq!(&bytes[serial::HEADER_LEN..], &enc[..]);
    }
}

#[test]
fn pinned_id_of_bgv_n13() {
    // Changing the encoding, the primes or any field of bgv-n13 changes this value.
    assert_eq!(by_name("bgv-n13").unwrap().id(), PINNED_N13_ID);
}
/// Computed outside this crate (SHA-256 of the encoding written by hand).
const PINNED_N13_ID: u64 = 0x4014_cf3d_8865_f221;

#[test]
fn pinned_id_of_ckks_n13() {
    // Changing the encoding, the primes or any field of ckks-n13 changes this value.
    assert_eq!(by_name("ckks-n13").unwrap().id(), PINNED_CKKS_N13_ID);
}
/// Computed outside this crate (SHA-256 of the encoding written by hand).
const PINNED_CKKS_N13_ID: u64 = 0xb36d_42db_78b0_3d4e;

#[test]
fn ids_differ_across_sets_and_fields() {
    let mut ids: Vec<u64> = shipped().into_iter().map(|l| Parameters::new(l).unwrap().id()).collect();
    let base = small();
    ids.push(insecure(base.clone()).unwrap().id());
    let mut l = base.clone();
    l.name.push('x');
    ids.push(insecure(l).unwrap().id());
    let mut l = base.clone();
    l.plaintext_modulus = Some(65539);
    ids.push(insecure(l).unwrap().id());
    let mut l = base.clone();
    l.dnum = 1;
    l.p = bgv_literal("", 10, 10, 10, 1, 2).unwrap().p; // enough P for one digit
    l.q = bgv_literal("", 10, 4, 10, 1, 2).unwrap().q;
    ids.push(insecure(l).unwrap().id());
    let mut l = base;
    l.security = SecurityLevel::Bits192;
    ids.push(insecure(l).unwrap().id());
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n);
}

#[test]
fn ring_degree_range() {
    for log_n in [0u32, 18, 63, 64, u32::MAX] {
        let mut lit = small();
        lit.log_n = log_n;
        assert!(matches!(insecure(lit), Err(Error::InvalidRingDegree { min_log: 1, max_log: 17, .. })));
        assert!(matches!(bgv_literal("x", log_n, 2, 1, 1, 3), Err(Error::InvalidRingDegree { .. })));
    }
    // The smallest degree works through the insecure constructor (primes = 1 mod 4).
    let p = insecure_test_bgv(TestRing { log_n: 1, q_primes: 2, p_primes: 1, dnum: 2 }, 3).unwrap();
    assert_eq!(p.n(), 2);
}

#[test]
fn modulus_checks() {
    let base = small();
    // Composite, = 1 mod 2048: 2049 = 3 * 683.
    let mut l = base.clone();
    l.q[1] = 2049;
    assert_eq!(modulus_reason(insecure(l)), "not prime");
    let mut l = base.clone();
    l.p[0] = 1;
    assert_eq!(modulus_reason(insecure(l)), "not prime");
    // Prime but not 1 mod 2N.
    assert!(slow_prime(1_000_000_007));
    let mut l = base.clone();
    l.q[2] = 1_000_000_007;
    assert_eq!(modulus_reason(insecure(l)), "not 1 mod 2N");
    // Prime, = 1 mod 2N, but too large (3 * 2^30 + 1).
    let mut l = base.clone();
    l.p[1] = 3_221_225_473;
    assert_eq!(modulus_reason(insecure(l)), "not below 2^30");
    // Huge values are refused at once (no slow primality test).
    let mut l = base.clone();
    l.q[0] = u64::MAX;
    assert_eq!(modulus_reason(insecure(l)), "not below 2^30");
    // Repeats within q, and across q and p.
    let mut l = base.clone();
    l.q[3] = l.q[1];
    assert_eq!(modulus_reason(insecure(l)), "repeated in q and p");
    let mut l = base.clone();
    l.p[1] = l.q[0];
    assert_eq!(modulus_reason(insecure(l)), "repeated in q and p");
    // Empty chain.
    let mut l = base;
    l.q.clear();
    assert!(params_reason(insecure(l)).contains("empty"));
}

#[test]
fn plaintext_modulus_checks() {
    let base = small();
    let with_t = |t| {
        let mut l = base.clone();
        l.plaintext_modulus = Some(t);
        insecure(l)
    };
    assert_eq!(t_reason(with_t(0)), "smaller than 2");
    assert_eq!(t_reason(with_t(1)), "smaller than 2");
    assert_eq!(t_reason(with_t(1 << 30)), "not below 2^30");
    assert_eq!(t_reason(with_t(u64::MAX)), "not below 2^30");
    let coprime = "not coprime to every prime of q and p";
    assert_eq!(t_reason(with_t(base.q[1])), coprime);
    assert_eq!(t_reason(with_t(base.p[0])), coprime);
    // Coprime but not below q[0].
    let t = base.q[0] + 2;
    assert!(base.q.iter().chain(&base.p).all(|&x| !t.is_multiple_of(x)));
    assert_eq!(t_reason(with_t(t)), "not smaller than the base prime q[0]");
    // Composite t is allowed (no batching).
    let p = with_t(65536).unwrap();
    assert!(!p.batching());
    assert!(with_t(2).is_ok());
    // BGV needs t and refuses log_scale.
    let mut l = base.clone();
    l.plaintext_modulus = None;
    assert!(params_reason(insecure(l)).contains("plaintext modulus"));
    let mut l = base;
    l.log_scale = Some(40);
    assert!(params_reason(insecure(l)).contains("log_scale"));
}

#[test]
fn ckks_checks() {
    let p = insecure(ckks_small()).unwrap();
    assert_eq!(p.scheme(), Scheme::Ckks);
    assert_eq!(p.log_scale(), Some(40));
    assert_eq!(p.plaintext_modulus(), None);
    assert!(!p.batching());
    for s in [1, 60] {
        let mut l = ckks_small();
        l.log_scale = Some(s);
        assert!(insecure(l).is_ok());
    }
    for s in [Some(0), Some(61), None] {
        let mut l = ckks_small();
        l.log_scale = s;
        assert!(params_reason(insecure(l)).contains("log_scale"));
    }
    let mut l = ckks_small();
    l.plaintext_modulus = Some(65537);
    assert!(params_reason(insecure(l)).contains("plaintext modulus"));
}

#[test]
fn dnum_and_special_primes() {
    let base = small();
    for dnum in [0, 5, usize::MAX] {
        let mut l = base.clone();
        l.dnum = dnum;
        assert!(params_reason(insecure(l)).contains("outside"));
    }
    // 5 primes, dnum 4: alpha 2 leaves only 3 digits.
    let l = bgv_literal("x", 10, 5, 3, 4, 65537).unwrap();
    assert!(params_reason(insecure(l)).contains("empty digit"));
    // P too small: one digit of 5 primes against 2 special primes.
    let l = bgv_literal("x", 10, 5, 2, 1, 65537).unwrap();
    assert!(params_reason(insecure(l)).contains("P is smaller"));
    // Same counts, but P made of the smaller primes: P < the digit.
    let all = ntt_primes(30, 1024, 4, &[]).unwrap();
    let mut l = base.clone();
    l.q = all[..2].to_vec();
    l.p = all[2..].to_vec();
    l.dnum = 1;
    assert!(product(&l.p) < product(&l.q));
    assert!(params_reason(insecure(l.clone())).contains("P is smaller"));
    // Swapped, P larger: fine.
    std::mem::swap(&mut l.q, &mut l.p);
    assert!(insecure(l).is_ok());
    // No special primes: allowed (no key switching).
    let mut l = base;
    l.p.clear();
    let p = insecure(l).unwrap();
    assert!(p.p().is_empty());
}

#[test]
fn digit_partition() {
    let all = ntt_primes(30, 1024, 40, &[]).unwrap();
    for len_q in 1..=12usize {
        for dnum in 1..=len_q {
            let alpha = len_q.div_ceil(dnum);
            let non_empty = len_q.div_ceil(alpha);
            let mut lit = small();
            lit.q = all[20..20 + len_q].to_vec();
            lit.p = all[..alpha].to_vec();
            lit.dnum = dnum;
            let r = insecure(lit);
            if non_empty != dnum {
                assert!(r.is_err());
                continue;
            }
            let p = r.unwrap();
            assert_eq!(p.alpha(), alpha);
            // Independent: each index belongs to digit i / alpha.
            let mut seen = vec![usize::MAX; len_q];
            for j in 0..dnum {
                let range = p.digit_range(j);
                assert!(!range.is_empty());
                for i in range {
                    assert_eq!(seen[i], usize::MAX);
                    seen[i] = j;
                }
            }
            for (i, &j) in seen.iter().enumerate() {
                assert_eq!(j, i / alpha);
            }
            assert!(p.digit_range(dnum).is_empty());
            assert!(p.digit_range(usize::MAX).is_empty());
        }
    }
}

#[test]
fn sigma_checks() {
    for s in [0.0, -1.0, 100.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut l = small();
        l.sigma = s;
        assert!(params_reason(insecure(l)).contains("sigma"));
    }
    // The sampler's width is the only one accepted, by every constructor.
    for s in [1e-3, 3.0, 3.2, 100.0] {
        let mut l = small();
        l.sigma = s;
        assert!(params_reason(insecure(l)).contains("3.19"));
        let mut l = shipped().remove(0);
        l.sigma = s;
        assert!(params_reason(Parameters::new(l)).contains("sigma"));
    }
    assert!(insecure(small()).is_ok());
}

#[test]
fn security_bound_is_enforced() {
    // bgv-n13 with one chain prime more: 8 primes, log2(QP) ~ 240 > 214.
    let lit = bgv_literal("too-big", 13, 6, 2, 3, 65537).unwrap();
    match Parameters::new(lit.clone()) {
        Err(Error::InsecureParameters { n, log_qp, max_log_qp, security_bits }) => {
            assert_eq!((n, max_log_qp, security_bits), (8192, 214, 128));
            assert!(log_qp > 239.0 && log_qp < 240.0);
        }
        other => panic!("{other:?}"),
    }
    let p = Parameters::new_insecure_for_tests(lit).unwrap();
    assert!(p.is_insecure());
    assert_eq!(p.security_bound(), Some(214));
    // A higher level lowers the bound: bgv-n14 does not reach 192 bits.
    let mut lit = shipped().remove(1);
    lit.security = SecurityLevel::Bits192;
    assert!(matches!(Parameters::new(lit), Err(Error::InsecureParameters { max_log_qp: 297, security_bits: 192, .. })));
    // No table entry: N = 512, and N = 1024 at 192 bits.
    let small_n = bgv_literal("x", 9, 1, 0, 1, 65537).unwrap();
    assert_eq!(
        Parameters::new(small_n.clone()),
        Err(Error::UnknownSecurityLevel { n: 512, security_bits: 128, secret: "ternary" })
    );
    assert_eq!(insecure(small_n).unwrap().security_bound(), None);
    let mut lit = bgv_literal("x", 10, 1, 0, 1, 65537).unwrap();
    assert!(Parameters::new(lit.clone()).is_err()); // 30 bits > 26
    lit.security = SecurityLevel::Bits192;
    assert!(matches!(Parameters::new(lit), Err(Error::UnknownSecurityLevel { n: 1024, .. })));
    // Exactly at a bound passes; just above fails. A set of N = 2^11 with one prime: 30 <= 36.
    let lit = bgv_literal("x", 11, 1, 0, 1, 65537).unwrap();
    let mut l192 = lit.clone();
    l192.security = SecurityLevel::Bits192;
    assert!(Parameters::new(l192).is_ok());
    let mut l256 = lit;
    l256.security = SecurityLevel::Bits256; // 30 > 27
    assert!(matches!(Parameters::new(l256), Err(Error::InsecureParameters { max_log_qp: 27, .. })));
}

#[test]
fn insecure_marker() {
    let lit = shipped().remove(0);
    let secure = Parameters::new(lit.clone()).unwrap();
    let marked = insecure(lit).unwrap();
    assert!(!secure.is_insecure() && marked.is_insecure());
    assert_eq!(secure.id(), marked.id());
    assert_ne!(secure, marked);
}

#[test]
fn batching_availability() {
    // Independent check: t prime and 2N | t - 1.
    for (t, log_n) in [
        (12289u64, 10u32),
        (12289, 12),
        (12289, 13),
        (65537, 10),
        (65537, 15),
        (65537, 16),
        (786_433, 16),
        (786_433, 17),
        (65536, 10),
        (17, 3),
    ] {
        let want = slow_prime(t) && (t - 1) % (2u64 << log_n) == 0;
        let p = insecure_test_bgv(TestRing { log_n, q_primes: 2, p_primes: 1, dnum: 2 }, t).unwrap();
        assert_eq!(p.batching(), want, "t = {t}, N = 2^{log_n}");
        assert!(p.is_insecure());
    }
    assert!(insecure_test_bgv(TestRing { log_n: 11, q_primes: 2, p_primes: 1, dnum: 2 }, 12289).unwrap().batching());
    assert!(!insecure_test_bgv(TestRing { log_n: 12, q_primes: 2, p_primes: 1, dnum: 2 }, 12289).unwrap().batching());
    assert!(insecure_test_bgv(TestRing { log_n: 15, q_primes: 2, p_primes: 1, dnum: 2 }, 65537).unwrap().batching());
    assert!(!insecure_test_bgv(TestRing { log_n: 16, q_primes: 2, p_primes: 1, dnum: 2 }, 65537).unwrap().batching());
}

#[test]
fn count_and_name_caps() {
    let mut l = small();
    l.name = "x".repeat(MAX_NAME_LEN + 1);
    assert!(matches!(insecure(l), Err(Error::CountTooLarge { what: "name length", .. })));
    let mut l = small();
    l.name = "é".repeat(MAX_NAME_LEN / 2);
    assert!(insecure(l).is_ok());
    assert!(matches!(bgv_literal("x", 10, 257, 0, 1, 3), Err(Error::CountTooLarge { .. })));
    let mut l = small();
    l.q = vec![3; 300];
    assert!(matches!(insecure(l), Err(Error::CountTooLarge { .. })));
    assert!(matches!(bgv_literal("x", 17, 250, 0, 1, 3), Err(Error::NotEnoughPrimes { .. })));
}

#[test]
fn binary_round_trips() {
    let mut schemes = Vec::new();
    for lit in shipped() {
        let scheme = lit.scheme;
        let p = Parameters::new(lit).unwrap();
        let bytes = p.to_bytes();
        let back = Parameters::from_bytes(&bytes).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.id(), p.id());
        assert_eq!(back.log_scale(), p.log_scale());
        assert_eq!(back.plaintext_modulus(), p.plaintext_modulus());
        let header = serial::read_object(&bytes, ObjectType::Parameters).unwrap().0;
        assert_eq!(header.param_id, p.id());
        assert_eq!(header.scheme, scheme);
        schemes.push(scheme);
    }
    assert!(schemes.contains(&Scheme::Bgv) && schemes.contains(&Scheme::Ckks));
    for lit in [small(), ckks_small()] {
        let p = insecure(lit).unwrap();
        let bytes = p.to_bytes();
        // Insecure sets only load through the test entry point.
        assert!(matches!(
            Parameters::from_bytes(&bytes),
            Err(Error::InsecureParameters { .. } | Error::UnknownSecurityLevel { .. })
        ));
        let back = Parameters::from_bytes_insecure_for_tests(&bytes).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.id(), p.id());
    }
}

fn n13_bytes() -> (Parameters, Vec<u8>) {
    let p = by_name("bgv-n13").unwrap();
    let b = p.to_bytes();
    (p, b)
}

#[test]
fn truncation_at_every_offset() {
    let (p, bytes) = n13_bytes();
    for k in 0..bytes.len() {
        match Parameters::from_bytes(&bytes[..k]) {
            Err(Error::Truncated { .. }) if k < serial::HEADER_LEN => {}
            Err(Error::LengthMismatch { declared, actual }) if k >= serial::HEADER_LEN => {
                assert_eq!(declared as usize, bytes.len() - serial::HEADER_LEN);
                assert_eq!(actual as usize, k - serial::HEADER_LEN);
            }
            other => panic!("k = {k}: {other:?}"),
        }
    }
    // Truncated payloads under a consistent header reach the payload reader.
    let payload = &bytes[serial::HEADER_LEN..];
    for k in 0..payload.len() {
        let obj = serial::write_object(ObjectType::Parameters, Scheme::Bgv, p.id(), &payload[..k]);
        assert!(matches!(Parameters::from_bytes(&obj), Err(Error::Truncated { .. })), "k = {k}");
    }
}

#[test]
fn corrupted_objects() {
    let (p, bytes) = n13_bytes();
    let payload = bytes[serial::HEADER_LEN..].to_vec();
    let obj = |payload: &[u8]| serial::write_object(ObjectType::Parameters, Scheme::Bgv, p.id(), payload);
    // Trailing bytes inside the payload.
    let mut long = payload.clone();
    long.push(0);
    assert_eq!(Parameters::from_bytes(&obj(&long)), Err(Error::TrailingBytes { count: 1 }));
    // Trailing bytes after the declared payload.
    let mut b = bytes.clone();
    b.extend_from_slice(&[0, 0]);
    assert!(matches!(Parameters::from_bytes(&b), Err(Error::LengthMismatch { .. })));
    // Declared length differs.
    let mut b = bytes.clone();
    b[16..24].copy_from_slice(&(payload.len() as u64 - 1).to_le_bytes());
    assert_eq!(
        Parameters::from_bytes(&b),
        Err(Error::LengthMismatch { declared: payload.len() as u64 - 1, actual: payload.len() as u64 })
    );
    // Header fields changed by accident fail the checksum; changed on purpose (checksum
    // recomputed), the binding checks catch them.
    for (at, value) in [(8, bytes[8] ^ 1), (7, Scheme::Ckks.tag()), (6, ObjectType::Ciphertext.tag())] {
        let mut b = bytes.clone();
        b[at] = value;
        assert!(matches!(Parameters::from_bytes(&b), Err(Error::Checksum { .. })), "byte {at}");
    }
    let resealed = |at: usize, value: u8| {
        let mut b = bytes.clone();
        b[at] = value;
        serial::update_checksum(&mut b).unwrap();
        b
    };
    // Wrong id in the header.
    assert!(matches!(Parameters::from_bytes(&resealed(8, bytes[8] ^ 1)), Err(Error::ParameterMismatch { .. })));
    // Header scheme differs from the literal's.
    assert!(matches!(Parameters::from_bytes(&resealed(7, Scheme::Ckks.tag())), Err(Error::SchemeMismatch { .. })));
    // Wrong object type, bad magic, bad version.
    assert!(matches!(
        Parameters::from_bytes(&resealed(6, ObjectType::Ciphertext.tag())),
        Err(Error::ObjectTypeMismatch { .. })
    ));
    let mut b = bytes.clone();
    b[0] = b'X';
    assert_eq!(Parameters::from_bytes(&b), Err(Error::BadMagic));
    let mut b = bytes.clone();
    b[4] = 4;
    assert_eq!(Parameters::from_bytes(&b), Err(Error::UnsupportedVersion { version: 4 }));
    // A damaged payload byte fails the checksum.
    let mut b = bytes.clone();
    b[serial::HEADER_LEN + 5] ^= 0x40;
    assert!(matches!(Parameters::from_bytes(&b), Err(Error::Checksum { .. })));
    // A version-1 object (no checksum field) still loads.
    let mut v1 = [&bytes[..24], &bytes[serial::HEADER_LEN..]].concat();
    v1[4] = 1;
    assert_eq!(Parameters::from_bytes(&v1).unwrap(), p);
    // A changed prime (still the same length) fails validation or the id check.
    let mut pl = payload.clone();
    let name_len = p.name().len();
    let q0_at = 4 + name_len + 1 + 4 + 4 + 4;
    pl[q0_at] ^= 0x02;
    assert!(Parameters::from_bytes(&obj(&pl)).is_err());
    // Unknown tags inside the payload.
    let mut pl = payload.clone();
    pl[4 + name_len] = 9; // scheme
    assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "scheme", .. })));
    let secret_at = payload.len() - 8 - 2 - 1;
    let mut pl = payload.clone();
    pl[secret_at] = 2;
    assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "secret", .. })));
    let mut pl = payload.clone();
    pl[secret_at + 1..secret_at + 3].copy_from_slice(&100u16.to_le_bytes());
    assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "security", .. })));
    // Name that is not UTF-8.
    let mut pl = payload;
    pl[4] = 0xff;
    assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::InvalidField { field: "name", .. })));
}

#[test]
fn huge_declared_counts_are_refused_before_allocating() {
    let (p, bytes) = n13_bytes();
    let payload = &bytes[serial::HEADER_LEN..];
    let name_len = p.name().len();
    let obj = |payload: &[u8]| serial::write_object(ObjectType::Parameters, Scheme::Bgv, p.id(), payload);
    // Name length.
    for len in [257u32, u32::MAX] {
        let mut pl = payload.to_vec();
        pl[..4].copy_from_slice(&len.to_le_bytes());
        assert_eq!(
            Parameters::from_bytes(&obj(&pl)),
            Err(Error::CountTooLarge { what: "name length", found: u64::from(len), limit: 256 })
        );
    }
    // Prime counts.
    let count_q_at = 4 + name_len + 1 + 4;
    for (at, what) in [(count_q_at, "number of q primes"), (count_q_at + 4, "number of p primes")] {
        let mut pl = payload.to_vec();
        pl[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            Parameters::from_bytes(&obj(&pl)),
            Err(Error::CountTooLarge { what, found: u64::from(u32::MAX), limit: 256 })
        );
        // A count within the cap but beyond the data: truncation, not a panic.
        let mut pl = payload.to_vec();
        pl[at..at + 4].copy_from_slice(&256u32.to_le_bytes());
        assert!(matches!(Parameters::from_bytes(&obj(&pl)), Err(Error::Truncated { .. })));
    }
}

#[test]
fn insecure_sets_resolve_only_by_their_exact_name() {
    let p = insecure_by_name("insecure-test-bgv-n12-q5-p2-d3-t786433").unwrap();
    assert_eq!((p.n(), p.name()), (4096, "insecure-test-bgv-n12-q5-p2-d3-t786433"));
    for bad in [
        "bgv-n14",
        "insecure-test-bgv-n12-q5-p2-d3",
        "insecure-test-bgv-n12-q5-p2-d3-t786433-x",
        "insecure-test-bgv-n99-q5-p2-d3-t786433",
        "insecure-test-bgv-nx-q5-p2-d3-t786433",
    ] {
        assert!(matches!(insecure_by_name(bad), Err(Error::UnknownParameterSet { .. })), "{bad}");
    }
    // A shipped name is not an insecure one, and by_name never resolves insecure names.
    assert!(by_name("insecure-test-bgv-n12-q5-p2-d3-t786433").is_err());
}

#[test]
fn json_round_trips_and_rejects_unknown_values() {
    for lit in shipped().into_iter().chain([small(), ckks_small()]) {
        let json = lit.to_json().unwrap();
        let back = ParametersLiteral::from_json(&json).unwrap();
        assert_eq!(back, lit);
        assert_eq!(back.sigma.to_bits(), lit.sigma.to_bits());
        assert_eq!(insecure(back).unwrap().id(), insecure(lit).unwrap().id());
    }
    let ckks = by_name("ckks-n13").unwrap().literal().to_json().unwrap();
    assert!(ckks.contains("\"scheme\": \"ckks\""));
    assert!(ckks.contains("\"log_scale\": 30"));
    assert!(ckks.contains("\"plaintext_modulus\": null"));
    let json = shipped().remove(0).to_json().unwrap();
    assert!(json.contains("\"secret\": \"ternary\""));
    assert!(json.contains("\"scheme\": \"bgv\""));
    assert!(json.contains("\"security\": \"bits128\""));
    let gaussian = json.replace("\"ternary\"", "\"gaussian\"");
    assert!(matches!(ParametersLiteral::from_json(&gaussian), Err(Error::Json { .. })));
    let bad_level = json.replace("\"bits128\"", "\"bits100\"");
    assert!(ParametersLiteral::from_json(&bad_level).is_err());
    let extra = json.replacen('{', "{\"extra\": 1,", 1);
    assert!(ParametersLiteral::from_json(&extra).is_err());
    assert!(ParametersLiteral::from_json("{").is_err());
}

#[test]
fn ckks_boot_set_is_secure_and_sized_for_a_hop() {
    // 128-bit by the table check of Parameters::new, like every shipped set.
    let params = by_name(CKKS_BOOT_SET).unwrap();
    assert!(!params.is_insecure());
    assert_eq!((params.log_n(), params.scheme()), (16, Scheme::Ckks));
    assert_eq!((params.q().len(), params.p().len(), params.dnum()), (43, 15, 3));
    assert_eq!(params.security_bound(), Some(1747));
    assert!(params.log_qp() <= 1747.0, "{}", params.log_qp());
    let lit = application_literals().into_iter().find(|l| l.name == CKKS_BOOT_SET).unwrap();
    assert!((big_log2(&(product(&lit.q) * product(&lit.p))) - 1_736.570_706_767_111_7).abs() < 1e-6);
    let two_n = 2u64 << 16;
    for &x in lit.q.iter().chain(&lit.p) {
        assert!(slow_prime(x) && x % two_n == 1 && x < 1 << 30);
    }
    let big_p = product(&lit.p);
    for j in 0..3 {
        assert!(big_p >= product(&lit.q[params.digit_range(j)]), "digit {j}");
    }
    // The level budget: 3 base primes + 2 per level for CtS 3, EvalMod 10, StC 3 and a depth-4
    // layer.
    assert_eq!(BOOT_BUDGET.bootstrap_levels(), 16);
    assert_eq!(BOOT_BUDGET.levels(), 20);
    assert_eq!(BOOT_BUDGET.q_primes(), 3 + 2 * (4 + 3 + 10 + 3));
    assert_eq!(params.q().len(), BOOT_BUDGET.q_primes());
    // No room for a smaller dnum: with dnum 2, P must hold ceil(q/2) primes and q + p <= 58.
    let max_primes = lit.q.len() + lit.p.len();
    assert!((1..=max_primes).filter(|q| q + q.div_ceil(2) <= max_primes).max().unwrap() < BOOT_BUDGET.q_primes());
    // One more prime (the next 30-bit prime = 1 mod 2N) would break the bound.
    let over = ckks_literal("over", 16, 44, 15, 3, 30).unwrap();
    assert!(matches!(Parameters::new(over), Err(Error::InsecureParameters { .. })));
}

#[test]
fn insecure_ckks_boot_ring_has_the_same_structure() {
    for log_n in [10, 11] {
        let p = insecure_test_ckks_boot(log_n).unwrap();
        assert!(p.is_insecure());
        assert_eq!(p.n(), 1 << log_n);
        assert_eq!((p.q().len(), p.p().len(), p.dnum()), (43, 15, 3));
        assert_eq!(p.name(), format!("insecure-test-ckks-boot-n{log_n}"));
        assert_eq!(insecure_by_name(p.name()).unwrap(), p);
        // Only as an insecure set: the table refuses it.
        assert!(Parameters::new(p.literal().clone()).is_err());
        assert!(by_name(p.name()).is_err());
    }
    for bad in [
        "insecure-test-ckks-boot-n",
        "insecure-test-ckks-boot-n99",
        "insecure-test-ckks-boot-n011",
        "insecure-test-ckks-boot-n11-x",
    ] {
        assert!(matches!(insecure_by_name(bad), Err(Error::UnknownParameterSet { .. })), "{bad}");
    }
}

/// Every distinct prime of every shipped and application parameter set.
fn shipped_primes() -> Vec<u32> {
    let mut primes: Vec<u32> = shipped()
        .into_iter()
        .chain(application_literals())
        .flat_map(|l| l.q.into_iter().chain(l.p))
        .map(|q| u32::try_from(q).unwrap())
        .collect();
    primes.sort_unstable();
    primes.dedup();
    primes
}

#[test]
fn uniform_rejection_rate_matches_its_formula_for_every_shipped_prime() {
    // Generator 2 (math::sampling): for each prime, 2^20 ChaCha12 words of its stream, masked,
    // counted against the binomial of rejection_probability (6 sd + 1), and the probability
    // against the exact fraction. Here rather than in math because it reads the catalogues.
    use crate::math::sampling::{candidate_mask, rejection_probability, stream_id, Purpose};
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    let primes = shipped_primes();
    assert!(primes.len() >= 20, "{}", primes.len());
    let words = 1usize << 20;
    let (mut lowest, mut highest) = (1.0f64, 0.0f64);
    for (i, &q) in primes.iter().enumerate() {
        let p = rejection_probability(q);
        let range = u64::from(candidate_mask(q)) + 1;
        assert_eq!(p, (range - u64::from(q)) as f64 / range as f64, "q {q}");
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&(900 + i as u64).to_le_bytes());
        let mut rng = rand_chacha::ChaCha12Rng::from_seed(seed);
        rng.set_stream(stream_id(Purpose::KeySwitchA, 0, q).unwrap());
        let mask = candidate_mask(q);
        let rejected = (0..words).filter(|_| rng.next_u32() & mask >= q).count() as f64;
        let mean = p * words as f64;
        let sd = (mean * (1.0 - p)).sqrt();
        assert!((rejected - mean).abs() <= 6.0 * sd + 1.0, "q {q}: {rejected} rejected, expected {mean:.1}");
        lowest = lowest.min(p);
        highest = highest.max(p);
    }
    // The range the sampling docs state: from about 2^-14 (primes just below a power of two)
    // to just under 1/2 (28-bit primes just above 2^27).
    assert!(lowest >= 2f64.powi(-15) && highest < 0.5, "p in [{lowest:e}, {highest:e}]");
}
