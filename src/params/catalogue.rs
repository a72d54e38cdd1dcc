//! The shipped 128-bit sets, the application sets, the BXT paper's set and the builders of
//! literals and insecure test sets.

use super::primes::{BXT_PRIMES, N13_PRIMES, N14_PRIMES, N15_PRIMES, N16_PRIMES, N17_PRIMES};
use super::{check_count, Parameters, ParametersLiteral, Scheme, SecretDistribution, SecurityLevel};
use super::{MAX_LOG_N, MAX_PRIMES, MIN_LOG_N};
use crate::error::{Error, Result};
use crate::math::primes::ntt_primes;
use crate::math::sampling::SIGMA;
use crate::math::zq::MAX_MODULUS_BITS;

/// Gadget digit count of the shipped BGV sets (the CKKS sets give theirs in [`shipped`]).
pub const SHIPPED_DNUM: usize = 3;
/// `log2(scale)` of the shipped CKKS sets.
pub const SHIPPED_LOG_SCALE: u32 = 30;

/// A shipped set: name, scheme, `log2 N`, plaintext modulus (BGV) or `log2(scale)` (CKKS),
/// number of special primes, digit count, and all primes, special primes first. The primes are
/// exactly those of [`bgv_literal`] / [`ckks_literal`] (checked by a test); they are written out
/// so that a shipped set, and hence its id, never changes.
struct ShippedSet {
    name: &'static str,
    scheme: Scheme,
    log_n: u32,
    plaintext_modulus: Option<u64>,
    log_scale: Option<u32>,
    count_p: usize,
    dnum: usize,
    primes: &'static [u64],
}

impl ShippedSet {
    const fn bgv(name: &'static str, log_n: u32, t: u64, count_p: usize, primes: &'static [u64]) -> Self {
        Self {
            name,
            scheme: Scheme::Bgv,
            log_n,
            plaintext_modulus: Some(t),
            log_scale: None,
            count_p,
            dnum: SHIPPED_DNUM,
            primes,
        }
    }

    const fn ckks(name: &'static str, log_n: u32, count_p: usize, dnum: usize, primes: &'static [u64]) -> Self {
        Self {
            name,
            scheme: Scheme::Ckks,
            log_n,
            plaintext_modulus: None,
            log_scale: Some(SHIPPED_LOG_SCALE),
            count_p,
            dnum,
            primes,
        }
    }
}

/// BGV sets first, then CKKS. For a given `N` both schemes use the same primes (the largest
/// 30-bit ones), split differently between `q` and `p`.
const SHIPPED: [ShippedSet; 9] = [
    ShippedSet::bgv("bgv-n13", 13, 65537, 2, &N13_PRIMES),
    ShippedSet::bgv("bgv-n14", 14, 65537, 4, &N14_PRIMES),
    ShippedSet::bgv("bgv-n15", 15, 65537, 7, &N15_PRIMES),
    ShippedSet::bgv("bgv-n16", 16, 786_433, 15, &N16_PRIMES),
    ShippedSet::bgv("bgv-n17", 17, 786_433, 30, &N17_PRIMES),
    ShippedSet::ckks("ckks-n13", 13, 1, 6, &N13_PRIMES),
    ShippedSet::ckks("ckks-n14", 14, 2, 6, &N14_PRIMES),
    ShippedSet::ckks("ckks-n15", 15, 7, 3, &N15_PRIMES),
    ShippedSet::ckks("ckks-n16", 16, 15, 3, &N16_PRIMES),
];

/// The shipped sets, the BGV ones followed by the CKKS ones. All are 128-bit, ternary secret,
/// sigma 3.19, 30-bit primes with the special primes the largest ones.
///
/// BGV, dnum 3:
///
/// | name | N | t | len(q) + len(p) | log2(QP) | bound |
/// |---|---|---|---|---|---|
/// | `bgv-n13` | 2^13 | 65537 | 5 + 2 | 210.00 | 214 |
/// | `bgv-n14` | 2^14 | 65537 | 10 + 4 | 419.96 | 430 |
/// | `bgv-n15` | 2^15 | 65537 | 21 + 7 | 839.60 | 868 |
/// | `bgv-n16` | 2^16 | 786433 | 43 + 15 | 1736.57 | 1747 |
/// | `bgv-n17` | 2^17 | 786433 | 88 + 30 | 3511.84 | 3523 |
///
/// (65537 = 1 mod 2^17 batches up to N = 2^15; 786433 = 3 * 2^18 + 1 batches up to N = 2^17.)
///
/// CKKS, `log2(scale) = 30`:
///
/// | name | N | len(q) + len(p) | dnum | log2(QP) | bound |
/// |---|---|---|---|---|---|
/// | `ckks-n13` | 2^13 | 6 + 1 | 6 | 210.00 | 214 |
/// | `ckks-n14` | 2^14 | 12 + 2 | 6 | 419.96 | 430 |
/// | `ckks-n15` | 2^15 | 21 + 7 | 3 | 839.60 | 868 |
/// | `ckks-n16` | 2^16 | 43 + 15 | 3 | 1736.57 | 1747 |
#[must_use]
pub fn shipped() -> Vec<ParametersLiteral> {
    SHIPPED
        .iter()
        .map(|s| {
            let (p, q) = s.primes.split_at(s.count_p.min(s.primes.len()));
            ParametersLiteral {
                name: s.name.to_owned(),
                scheme: s.scheme,
                log_n: s.log_n,
                q: q.to_vec(),
                p: p.to_vec(),
                dnum: s.dnum,
                plaintext_modulus: s.plaintext_modulus,
                log_scale: s.log_scale,
                secret: SecretDistribution::Ternary,
                security: SecurityLevel::Bits128,
                sigma: SIGMA,
            }
        })
        .collect()
}

/// The shipped set or application set ([`application_literals`]) called `name`, validated
/// ([`Error::UnknownParameterSet`] if none is called `name`).
pub fn by_name(name: &str) -> Result<Parameters> {
    let lit = shipped()
        .into_iter()
        .chain(application_literals())
        .find(|l| l.name == name)
        .ok_or_else(|| Error::UnknownParameterSet { name: name.to_owned() })?;
    Parameters::new(lit)
}

/// An insecure test set by the name [`insecure_test_bgv`] gives it,
/// `insecure-test-bgv-n{log_n}-q{count_q}-p{count_p}-d{dnum}-t{t}`, or the bootstrapping ring of
/// [`insecure_test_ckks_boot`], `insecure-test-ckks-boot-n{log_n}`: for experiments that must
/// say they are insecure (the CLI asks for `--insecure`). Errors:
/// [`Error::UnknownParameterSet`] for another name; the constructor's errors otherwise.
pub fn insecure_by_name(name: &str) -> Result<Parameters> {
    let unknown = || Error::UnknownParameterSet { name: name.to_owned() };
    if let Some(log_n) = name.strip_prefix("insecure-test-ckks-boot-n") {
        return match log_n.parse::<u32>() {
            Ok(l) if (MIN_LOG_N..=MAX_LOG_N).contains(&l) && l.to_string() == log_n => insecure_test_ckks_boot(l),
            _ => Err(unknown()),
        };
    }
    let rest = name.strip_prefix("insecure-test-bgv-").ok_or_else(unknown)?;
    let mut fields = rest.split('-');
    let mut next = |prefix: char| -> Result<u64> {
        fields.next().and_then(|f| f.strip_prefix(prefix)).and_then(|v| v.parse().ok()).ok_or_else(unknown)
    };
    let (log_n, q, p, d, t) = (next('n')?, next('q')?, next('p')?, next('d')?, next('t')?);
    if fields.next().is_some() || log_n > 17 || q > 256 || p > 256 || d > 256 {
        return Err(unknown());
    }
    insecure_test_bgv(TestRing { log_n: log_n as u32, q_primes: q as usize, p_primes: p as usize, dnum: d as usize }, t)
}

/// Name of the lookup-table set ([`application_literals`]).
pub const LUT_SET: &str = "bgv-lut-n16";

/// Name of the MNIST CNN set ([`application_literals`]).
pub const CNN_SET: &str = "bgv-cnn-n16";

/// Name of the MNIST CNN set for the digit-extraction ReLU path ([`application_literals`]).
pub const CNN_DIGITS_SET: &str = "bgv-cnn-n17";

/// Name of the MNIST logistic-regression set ([`application_literals`]).
pub const LR_SET: &str = "bgv-lr-n13";

/// Sets made for one application, 128-bit secure like the shipped ones, resolved by
/// [`by_name`] and listed by `wgfhe params`:
///
/// | name | N | t | len(q) + len(p) | dnum | log2(QP) | for |
/// |---|---|---|---|---|---|---|
/// | `bgv-lr-n13` | 2^13 | 786433 | 3 + 0 | 1 | 90.0 | one linear layer (MNIST logistic regression: 784 inputs, 8192 images per batch); no key switching |
/// | `bgv-lut-n16` | 2^16 | 786433 | 45 + 12 | 4 | 1706.7 | range-restricted lookup tables (ReLU, sign) up to depth ~15 with linear layers around them |
/// | `bgv-cnn-n16` | 2^16 | 786433 | 48 + 10 | 5 | see `wgfhe params` | the MNIST CNN: two tables of depth 12 and 14 with a plaintext-diagonal product after each (more levels than `bgv-lut-n16` for the same log QP, bought with a larger dnum) |
/// | `bgv-cnn-n17` | 2^17 | 786433 | 84 + 21 | 4 | see `wgfhe params` | the MNIST CNN with `--relu digits`: per ReLU a set of digit tables and the requantisation table (depth 12 / 14), a word-wise sign test (table depth 5 and two scan rounds) and a product; about 70 levels at `N = 2^11`, ~15 more primes for the larger ring's noise and a margin; 512 images per batch |
/// | `bgv-bxt-n16` | 2^16 | 786433 | 48 + 15 | 3 | 1745.6 | the BXT paper's set in u32 primes ([`bxt_paper_literal`]) |
/// | `ckks-boot-n16` | 2^16 | scale `2^30` per prime | 43 + 15 | 3 | 1736.57 | CKKS bootstrapping under two primes per level: a depth-4 layer plus one bootstrap ([`BOOT_BUDGET`], [`ckks_boot_literal`]) |
///
/// The primes of `bgv-lr-n13`, `bgv-lut-n16`, `bgv-cnn-n16` and `bgv-cnn-n17` are those of [`bgv_literal`] (the largest
/// 30-bit primes `= 1 mod 2N`, the special primes the largest).
pub fn application_literals() -> Vec<ParametersLiteral> {
    let mut out = Vec::with_capacity(6);
    if let Ok(l) = bgv_literal(LR_SET, 13, 3, 0, 1, 786_433) {
        out.push(l);
    }
    if let Ok(l) = bgv_literal(LUT_SET, 16, 45, 12, 4, 786_433) {
        out.push(l);
    }
    if let Ok(l) = bgv_literal(CNN_SET, 16, 48, 10, 5, 786_433) {
        out.push(l);
    }
    if let Ok(l) = bgv_literal(CNN_DIGITS_SET, 17, 84, 21, 4, 786_433) {
        out.push(l);
    }
    out.push(bxt_paper_literal());
    if let Ok(l) = ckks_boot_literal(CKKS_BOOT_SET, 16) {
        out.push(l);
    }
    out
}

/// Name of the 128-bit CKKS bootstrapping set ([`ckks_boot_literal`]).
pub const CKKS_BOOT_SET: &str = "ckks-boot-n16";

/// The level budget a bootstrapping set is sized for, in levels of two primes each (CKKS
/// `ScalePolicy::Double`: one rescale divides by the top two ~30-bit primes, scale ~2^60),
/// on top of the base primes that hold the final message.
///
/// From the top of the chain after ModRaise: CoeffToSlot, EvalMod and SlotToCoeff, then the
/// layer of the next hop, then the base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BootBudget {
    /// Primes below every level (`ScalePolicy::Double::base_primes`, about 30 bits above the
    /// scale).
    pub base_primes: usize,
    /// Primes one level drops (`ScalePolicy::Double::primes_per_level`).
    pub primes_per_level: usize,
    /// Levels of the computation between two bootstraps (the hop's layer).
    pub layer: usize,
    /// Levels of CoeffToSlot (its level budget: one level per factor of the transform).
    pub coeff_to_slot: usize,
    /// Levels of EvalMod (Chebyshev interpolation of the scaled cosine and the double-angle
    /// steps, with the scaling constants folded in).
    pub eval_mod: usize,
    /// Levels of SlotToCoeff.
    pub slot_to_coeff: usize,
}

impl BootBudget {
    /// Levels used by one bootstrap (CoeffToSlot + EvalMod + SlotToCoeff).
    #[must_use]
    pub const fn bootstrap_levels(&self) -> usize {
        self.coeff_to_slot + self.eval_mod + self.slot_to_coeff
    }

    /// Levels of the chain above the base: one bootstrap plus the layer.
    #[must_use]
    pub const fn levels(&self) -> usize {
        self.bootstrap_levels() + self.layer
    }

    /// Chain primes (`len(q)`): the base plus two primes per level.
    #[must_use]
    pub const fn q_primes(&self) -> usize {
        self.base_primes + self.primes_per_level * self.levels()
    }
}

/// The budget of `ckks-boot-n16` and of [`insecure_test_ckks_boot`]: 3 base primes; a depth-4
/// layer; CoeffToSlot 3, EvalMod 10, SlotToCoeff 3 (level budget `[3, 3]` as in OpenFHE's
/// anchor): 20 levels, `3 + 2 * 20 = 43` chain primes.
pub const BOOT_BUDGET: BootBudget =
    BootBudget { base_primes: 3, primes_per_level: 2, layer: 4, coeff_to_slot: 3, eval_mod: 10, slot_to_coeff: 3 };

/// Special primes of the bootstrapping sets: one digit's worth (`alpha = ceil(43 / 3) = 15`).
pub const BOOT_P_PRIMES: usize = 15;

/// Gadget digits of the bootstrapping sets.
pub const BOOT_DNUM: usize = 3;

/// The bootstrapping literal at `N = 2^log_n`: [`ckks_literal`] with [`BOOT_BUDGET`]'s 43
/// chain primes, [`BOOT_P_PRIMES`] special primes, [`BOOT_DNUM`] digits and `log2(scale)` 30
/// (per prime; the working scale under two primes per level is their product, ~2^60).
///
/// At `N = 2^16` (`ckks-boot-n16`): `log2(QP) = 1736.57 <= 1747`, the 128-bit bound of the 2024
/// table for a ternary secret, checked by [`Parameters::new`] like every shipped set. The 58
/// primes are the largest 30-bit primes `= 1 mod 2^17`, those of `ckks-n16` (the bound admits
/// at most 58 such primes), split the same way: the budget was sized to it.
///
/// The digit count: with `q + p <= 58` and `p >= alpha = ceil(q / dnum)` (hybrid key switching
/// needs `P` above every digit), `dnum = 2` leaves `q <= 38` (17 levels, three short of
/// [`BOOT_BUDGET`]); `dnum = 3` is the smallest that fits 20 levels (`q = 43`, `p = 15`), and
/// the smallest keys, since a key holds `dnum` digits over all `q + p` limbs. The key-switching
/// noise `~ sqrt(dnum N / 3) sigma max_digit / P` is about `2^10` as every digit is below `P`.
/// Key sizes per digit at the top level (58 limbs of `N` words): 15.2 MB per polynomial, so
/// 30.4 MB for `(b, a)`, 15.2 MB with `a` seeded, 14.3 MB with `b` also bit-packed to 30 bits;
/// a full top-level key (3 digits) is 91.2 / 45.6 / 42.8 MB. A key at level `l` covers
/// `l + 1 + 15` limbs and only the digits that meet `q_0..q_l`.
///
/// `dnum = 4` (`p = 11`, `q = 47`) would buy two more levels for 4/3 of the key bytes.
pub fn ckks_boot_literal(name: &str, log_n: u32) -> Result<ParametersLiteral> {
    ckks_literal(name, log_n, BOOT_BUDGET.q_primes(), BOOT_P_PRIMES, BOOT_DNUM, SHIPPED_LOG_SCALE)
}

/// An explicitly insecure bootstrapping ring for tests: [`ckks_boot_literal`] at
/// `N = 2^log_n` (the same 43 + 15 primes of 30 bits, dnum 3, the same [`BOOT_BUDGET`]) named
/// `"insecure-test-ckks-boot-n{log_n}"`, built with [`Parameters::new_insecure_for_tests`].
/// `log_n = 10` or `11` keeps a bootstrap fast in tests; nothing about it is secure.
pub fn insecure_test_ckks_boot(log_n: u32) -> Result<Parameters> {
    Parameters::new_insecure_for_tests(ckks_boot_literal(&format!("insecure-test-ckks-boot-n{log_n}"), log_n)?)
}

/// Name of the BXT paper's parameter set re-expressed in `u32` primes (see
/// [`bxt_paper_literal`]).
pub const BXT_PAPER_SET: &str = "bgv-bxt-n16";

/// The parameter set of the BXT paper (from GME: N = 2^16, log2 QP = 1728 as 24 + 8 limbs of
/// 54 bits, dnum 3, 23 levels) re-expressed in `u32` primes: two ~30-bit base primes, 23 levels
/// of two ~27-bit primes (a ~2^53.7 level, the paper's scale) and 15 special primes: 48 + 15 =
/// 63 limbs, dnum 3, log2(QP) = 1745.57 <= 1747 (128-bit bound at N = 2^16), t = 786433. Used
/// to compare our traffic with the paper's setting; resolved by [`by_name`] but not listed by
/// [`shipped`].
#[must_use]
pub fn bxt_paper_literal() -> ParametersLiteral {
    let (p, q) = BXT_PRIMES.split_at(15);
    ParametersLiteral {
        name: BXT_PAPER_SET.to_owned(),
        scheme: Scheme::Bgv,
        log_n: 16,
        q: q.to_vec(),
        p: p.to_vec(),
        dnum: SHIPPED_DNUM,
        plaintext_modulus: Some(786_433),
        log_scale: None,
        secret: SecretDistribution::Ternary,
        security: SecurityLevel::Bits128,
        sigma: SIGMA,
    }
}

/// The `count_p + count_q` largest 30-bit primes `= 1 mod 2N` in descending order, split into
/// `(q, p)`: `p` the largest `count_p`, `q` the next `count_q`. Checks `log_n` and the counts.
fn builder_primes(log_n: u32, count_q: usize, count_p: usize) -> Result<(Vec<u64>, Vec<u64>)> {
    if !(MIN_LOG_N..=MAX_LOG_N).contains(&log_n) {
        return Err(Error::InvalidRingDegree {
            n: 1u64.checked_shl(log_n).unwrap_or(u64::MAX),
            min_log: MIN_LOG_N,
            max_log: MAX_LOG_N,
        });
    }
    check_count("number of q primes", count_q as u64, MAX_PRIMES)?;
    check_count("number of p primes", count_p as u64, MAX_PRIMES)?;
    let mut q = ntt_primes(MAX_MODULUS_BITS, 1u64 << log_n, count_p + count_q, &[])?;
    let p = q.drain(..count_p.min(q.len())).collect();
    Ok((q, p))
}

/// A BGV literal from prime counts: the `count_p + count_q` largest 30-bit primes `= 1 mod 2N`
/// in descending order; `p` takes the largest `count_p` of them (so that `P` covers a digit of
/// `count_p` chain primes), `q` the next `count_q`, `q[0]` the largest of those. Ternary secret,
/// 128-bit level, sigma 3.19. Nothing is validated beyond what building needs: `log_n` in
/// `[1, 17]` ([`Error::InvalidRingDegree`]), counts at most 256 ([`Error::CountTooLarge`]) and
/// enough primes existing ([`Error::NotEnoughPrimes`]).
pub fn bgv_literal(
    name: &str,
    log_n: u32,
    count_q: usize,
    count_p: usize,
    dnum: usize,
    t: u64,
) -> Result<ParametersLiteral> {
    let (q, p) = builder_primes(log_n, count_q, count_p)?;
    Ok(ParametersLiteral {
        name: name.to_owned(),
        scheme: Scheme::Bgv,
        log_n,
        q,
        p,
        dnum,
        plaintext_modulus: Some(t),
        log_scale: None,
        secret: SecretDistribution::Ternary,
        security: SecurityLevel::Bits128,
        sigma: SIGMA,
    })
}

/// A CKKS literal from prime counts, with the primes of [`bgv_literal`] (the `count_p + count_q`
/// largest 30-bit primes `= 1 mod 2N`, descending, `p` the largest `count_p`), no plaintext
/// modulus and the given `log2(scale)`. Ternary secret, 128-bit level, sigma 3.19. Nothing is
/// validated beyond what building needs (`log_scale` included: [`Parameters::new`] checks it):
/// `log_n` in `[1, 17]` ([`Error::InvalidRingDegree`]), counts at most 256
/// ([`Error::CountTooLarge`]) and enough primes existing ([`Error::NotEnoughPrimes`]).
pub fn ckks_literal(
    name: &str,
    log_n: u32,
    count_q: usize,
    count_p: usize,
    dnum: usize,
    log_scale: u32,
) -> Result<ParametersLiteral> {
    let (q, p) = builder_primes(log_n, count_q, count_p)?;
    Ok(ParametersLiteral {
        name: name.to_owned(),
        scheme: Scheme::Ckks,
        log_n,
        q,
        p,
        dnum,
        plaintext_modulus: None,
        log_scale: Some(log_scale),
        secret: SecretDistribution::Ternary,
        security: SecurityLevel::Bits128,
        sigma: SIGMA,
    })
}

/// The shape of an insecure test ring: its degree and prime counts, named so that a call such
/// as `insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)`
/// reads without the signature at hand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TestRing {
    /// `log2 N`, in `[1, 17]`.
    pub log_n: u32,
    /// Number of ciphertext-chain primes (`L + 1`).
    pub q_primes: usize,
    /// Number of special primes of hybrid key switching (0: no key switching).
    pub p_primes: usize,
    /// Number of gadget digits.
    pub dnum: usize,
}

/// An insecure BGV set for tests: [`bgv_literal`] named
/// `"insecure-test-bgv-n{log_n}-q{q_primes}-p{p_primes}-d{dnum}-t{t}"`, built with
/// [`Parameters::new_insecure_for_tests`]. Batching plaintext moduli: 12289 (`= 3 * 2^12 + 1`)
/// for `N <= 2^11`, 65537 for `N <= 2^15`, 786433 for `N <= 2^17`.
pub fn insecure_test_bgv(ring: TestRing, t: u64) -> Result<Parameters> {
    let TestRing { log_n, q_primes, p_primes, dnum } = ring;
    let name = format!("insecure-test-bgv-n{log_n}-q{q_primes}-p{p_primes}-d{dnum}-t{t}");
    Parameters::new_insecure_for_tests(bgv_literal(&name, log_n, q_primes, p_primes, dnum, t)?)
}

/// An insecure CKKS set for tests: [`ckks_literal`] named
/// `"insecure-test-ckks-n{log_n}-q{q_primes}-p{p_primes}-d{dnum}-s{log_scale}"`, built with
/// [`Parameters::new_insecure_for_tests`] (so `log_scale` must be in `[1, 60]`).
pub fn insecure_test_ckks(ring: TestRing, log_scale: u32) -> Result<Parameters> {
    let TestRing { log_n, q_primes, p_primes, dnum } = ring;
    let name = format!("insecure-test-ckks-n{log_n}-q{q_primes}-p{p_primes}-d{dnum}-s{log_scale}");
    Parameters::new_insecure_for_tests(ckks_literal(&name, log_n, q_primes, p_primes, dnum, log_scale)?)
}
