//! Residue number system (RNS) tools on `u32` residues.
//!
//! An integer `x` modulo `Q = q_0 * ... * q_{L-1}` (pairwise coprime `q_i < 2^30`) is held as its
//! residues `x_i = x mod q_i`. Multi-limb data is laid out limb-major: a slice of `L * n` words
//! where limb `i` occupies `[i * n, (i + 1) * n)`. Every residue is canonical, in `[0, q_i)`, on
//! input and on output unless a function says otherwise.
//!
//! * [`RnsBasis`]: CRT reconstruction and decomposition against arbitrary-precision integers
//!   (host-side, used for encoding, decoding and tests).
//! * [`BaseConverter`]: the fast (approximate) base conversion of Bajard et al. and
//!   Halevi-Polyakov-Shoup, the building block of hybrid key switching.
//! * [`ScaleDown`]: divide-and-round by the product of some moduli (CKKS rescale, BGV modulus
//!   switching, key-switch ModDown).
//!
//! Every kernel here computes one exactly defined integer and returns its canonical residue, so
//! any other correct implementation (the WGSL kernels) reproduces the output bit for bit, whatever
//! reduction strategy it uses internally. The definitions are on each function.
//!
//! [`BaseConverter::convert`] and [`ScaleDown::apply`] run one tiled kernel (module `tiled`:
//! lazy `u64` sums with one reduction per output word, tiles of coefficients whose digits stay in
//! L1, precomputed constants, AVX-512 / AVX2 / portable by [`SimdLevel`]); the plain loops of the
//! definitions stay as [`BaseConverter::convert_reference`] and
//! [`ScaleDown::apply_in_place_reference`], which the tests compare it with on every level.

#![expect(clippy::indexing_slicing, reason = "hot loops over slices whose lengths are checked on entry")]

use num_bigint::{BigInt, BigUint, Sign};

use crate::error::{Error, Result};
use crate::math::simd::SimdLevel;
use crate::math::zq::Modulus;

mod tiled;

use tiled::{DstLimb, Extra, Plan, SrcLimb};
pub use tiled::{MAX_PRODUCTS, ROWS_PER_REDUCTION};

/// Number of products `< 2^60` that may be added to a `u64` accumulator holding a value `< 2^30`
/// before it must be reduced: `2^30 + 15 * (2^30 - 1)^2 < 2^64`.
const ACC_TERMS: usize = 15;

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Errors unless the moduli are pairwise coprime.
fn check_pairwise_coprime(moduli: &[Modulus]) -> Result<()> {
    for (i, a) in moduli.iter().enumerate() {
        for b in moduli.iter().skip(i + 1) {
            if gcd(u64::from(a.value()), u64::from(b.value())) != 1 {
                return Err(Error::InvalidModulus {
                    modulus: u64::from(b.value()),
                    reason: "not coprime to another modulus of the RNS basis",
                });
            }
        }
    }
    Ok(())
}

fn check_non_empty(moduli: &[Modulus]) -> Result<()> {
    if moduli.is_empty() {
        return Err(Error::InvalidModulus { modulus: 0, reason: "empty RNS basis" });
    }
    Ok(())
}

/// `limbs * n`, or a size-overflow error.
fn flat_len(limbs: usize, n: usize, what: &'static str) -> Result<usize> {
    limbs.checked_mul(n).ok_or(Error::SizeOverflow { what })
}

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::DimensionMismatch { what, expected, found })
    }
}

/// The first `limbs` limbs, of `n` words each, of a limb-major block of residues;
/// [`Error::DimensionMismatch`] if it holds fewer (or `n` is 0).
pub(crate) fn limbs_of(residues: &[u32], limbs: usize, n: usize) -> Result<std::slice::ChunksExact<'_, u32>> {
    let words = flat_len(limbs, n, "limb-major residues")?;
    match residues.get(..words) {
        Some(block) if n > 0 => Ok(block.chunks_exact(n)),
        _ => Err(Error::DimensionMismatch { what: "limb-major residues", expected: words, found: residues.len() }),
    }
}

/// Calls `f` with the residues of every coefficient `j < n` (one per limb, in limb order) of
/// the first `limbs` limbs of a limb-major block; errors as [`limbs_of`].
pub(crate) fn for_each_coefficient(
    residues: &[u32],
    limbs: usize,
    n: usize,
    mut f: impl FnMut(&[u32]) -> Result<()>,
) -> Result<()> {
    let rows: Vec<&[u32]> = limbs_of(residues, limbs, n)?.collect();
    let mut column = vec![0u32; limbs];
    for j in 0..n {
        for (x, row) in column.iter_mut().zip(&rows) {
            #[expect(clippy::indexing_slicing, reason = "every row is a chunk of exactly n words, and j < n")]
            let value = row[j];
            *x = value;
        }
        f(&column)?;
    }
    Ok(())
}

/// `prod_{j != skip} m_j mod p` (all factors taken mod `p`); output in `[0, p)`.
fn product_mod(moduli: &[Modulus], skip: Option<usize>, p: &Modulus) -> u32 {
    let mut acc = 1 % p.value();
    for (j, m) in moduli.iter().enumerate() {
        if Some(j) != skip {
            acc = p.mul(acc, p.reduce_u32(m.value()));
        }
    }
    acc
}

/// `a^{-1} mod p`, or an error naming `p`.
fn inverse(p: &Modulus, a: u32) -> Result<u32> {
    p.inv(a).ok_or(Error::InvalidModulus {
        modulus: u64::from(p.value()),
        reason: "not coprime to another modulus of the RNS basis",
    })
}

/// Shoup companions of a table with `per >= 1` consecutive entries per modulus.
fn shoup_table(moduli: &[Modulus], values: &[u32], per: usize) -> Vec<u32> {
    values.chunks(per.max(1)).zip(moduli).flat_map(|(vs, m)| vs.iter().map(move |&v| m.shoup(v))).collect()
}

/// `x mod q` for a multi-word `x`, by Horner over its base-`2^32` digits; output in `[0, q)`.
fn biguint_mod(x: &BigUint, q: &Modulus) -> u32 {
    let qv = u64::from(q.value());
    x.iter_u32_digits().rev().fold(0u64, |r, d| ((r << 32) | u64::from(d)) % qv) as u32
}

/// Adds `sum_j rows_j[k] * coeffs[j]` to `acc[k]` for every `k < n`, where `rows` is limb-major
/// (`coeffs.len() * n` words). Preconditions: `n > 0`, every `acc[k] < 2^30` on entry, every row
/// word and coefficient `< 2^30`. Reduces `acc` mod `p` after every [`ACC_TERMS`] rows, so no
/// `u64` overflows; on exit `acc[k]` is congruent to the exact sum mod `p` (not reduced).
fn accumulate(acc: &mut [u64], rows: &[u32], coeffs: &[u32], n: usize, p: u64) {
    for (j, (row, &c)) in rows.chunks_exact(n).zip(coeffs).enumerate() {
        let c = u64::from(c);
        for (a, &r) in acc.iter_mut().zip(row) {
            *a += u64::from(r) * c;
        }
        if (j + 1) % ACC_TERMS == 0 {
            for a in acc.iter_mut() {
                *a %= p;
            }
        }
    }
}

/// A CRT basis `q_0, ..., q_{L-1}` of pairwise coprime moduli with product `Q`.
#[derive(Debug, Clone)]
pub struct RnsBasis {
    moduli: Vec<Modulus>,
    product: BigUint,
    /// `qhat_i = Q / q_i`.
    qhat: Vec<BigUint>,
    /// `qhat_i^{-1} mod q_i`, in `[0, q_i)`.
    qhat_inv: Vec<u32>,
}

impl RnsBasis {
    /// Builds the basis. Errors with [`Error::InvalidModulus`] if `moduli` is empty (reported
    /// with `modulus: 0`) or two moduli share a factor.
    pub fn new(moduli: &[Modulus]) -> Result<Self> {
        check_non_empty(moduli)?;
        check_pairwise_coprime(moduli)?;
        let product = moduli.iter().fold(BigUint::from(1u32), |acc, m| acc * m.value());
        let qhat = moduli.iter().map(|m| &product / m.value()).collect::<Vec<_>>();
        let qhat_inv = moduli
            .iter()
            .enumerate()
            .map(|(i, m)| inverse(m, product_mod(moduli, Some(i), m)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { moduli: moduli.to_vec(), product, qhat, qhat_inv })
    }

    /// The moduli, in basis order.
    #[must_use]
    pub fn moduli(&self) -> &[Modulus] {
        &self.moduli
    }

    /// Number of moduli `L` (at least 1).
    #[must_use]
    pub fn len(&self) -> usize {
        self.moduli.len()
    }

    /// Always `false`: a basis holds at least one modulus.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.moduli.is_empty()
    }

    /// The product `Q` of the moduli.
    #[must_use]
    pub fn product(&self) -> &BigUint {
        &self.product
    }

    /// `log2(Q)`, computed as `sum_i log2(q_i)` in `f64` (for parameter checks and noise
    /// estimates, not for exact arithmetic).
    #[must_use]
    pub fn log2_product(&self) -> f64 {
        self.moduli.iter().map(|m| f64::from(m.value()).log2()).sum()
    }

    /// `(Q / q_i)^{-1} mod q_i` for each `i`, each in `[0, q_i)`.
    #[must_use]
    pub fn qhat_inv(&self) -> &[u32] {
        &self.qhat_inv
    }

    /// CRT reconstruction: the unique `x` in `[0, Q)` with `x = residues[i] mod q_i` for all `i`.
    ///
    /// Errors with [`Error::DimensionMismatch`] unless `residues.len() == len()`, and with
    /// [`Error::ResidueOutOfRange`] (`limb: i`, `index: 0`) if some `residues[i] >= q_i`.
    pub fn reconstruct(&self, residues: &[u32]) -> Result<BigUint> {
        check_len("RNS residues", self.len(), residues.len())?;
        let mut acc = BigUint::from(0u32);
        for (limb, ((m, &x), (&inv, qhat))) in
            self.moduli.iter().zip(residues).zip(self.qhat_inv.iter().zip(&self.qhat)).enumerate()
        {
            if x >= m.value() {
                return Err(Error::ResidueOutOfRange { limb, index: 0 });
            }
            acc += qhat * m.mul(x, inv);
        }
        Ok(acc % &self.product)
    }

    /// Centred CRT reconstruction: the unique `x` in `(-Q/2, Q/2]` with `x = residues[i] mod q_i`
    /// for all `i` (for even `Q`, `Q/2` itself is returned positive). Errors as
    /// [`reconstruct`](Self::reconstruct).
    pub fn reconstruct_centered(&self, residues: &[u32]) -> Result<BigInt> {
        let x = self.reconstruct(residues)?;
        if &x * 2u32 > self.product {
            Ok(BigInt::from(x) - BigInt::from(self.product.clone()))
        } else {
            Ok(BigInt::from(x))
        }
    }

    /// Residues `x mod q_i`, each in `[0, q_i)`, for any `x >= 0` (not only `x < Q`).
    #[must_use]
    pub fn decompose(&self, x: &BigUint) -> Vec<u32> {
        self.moduli.iter().map(|m| biguint_mod(x, m)).collect()
    }

    /// Residues `x mod q_i`, each the canonical representative in `[0, q_i)`, for any signed `x`.
    #[must_use]
    pub fn decompose_signed(&self, x: &BigInt) -> Vec<u32> {
        let negative = x.sign() == Sign::Minus;
        self.moduli
            .iter()
            .map(|m| {
                let r = biguint_mod(x.magnitude(), m);
                if negative {
                    m.neg(r)
                } else {
                    r
                }
            })
            .collect()
    }
}

/// Fast (approximate) base conversion from a basis `q_0, ..., q_{L-1}` (product `Q`, pairwise
/// coprime) to moduli `p_0, ..., p_{M-1}` (Bajard-Eynard-Hasan-Zucca; Halevi-Polyakov-Shoup).
///
/// For `x` in `[0, Q)` given by its residues `x_i = x mod q_i`, output limb `j` is
///
/// ```text
/// out_j = ( sum_i c_i * (qhat_i mod p_j) ) mod p_j,
/// y_i = [x_i * qhat_i^{-1}]_{q_i} in [0, q_i),   c_i = y_i if y_i <= floor(q_i / 2) else y_i - q_i,
/// ```
///
/// with `qhat_i = Q / q_i` (computed as `sum_i y_i * qhat_i - h * Q` with `h` the number of
/// centred digits). The integer `S = sum_i c_i * qhat_i` satisfies `S = x mod Q` and
/// `|S| <= L * Q / 2`, so `S = x + u * Q` for an integer `u` with `|u| <= ceil(L / 2)`
/// (depending on `x`, not on `j`), and `out_j = (x + u * Q) mod p_j`, canonical in `[0, p_j)`.
/// The digits are centred so that `S` has mean about zero: an unsigned lift (`y_i` in
/// `[0, q_i)`) has mean `L Q / 2`, and a polynomial whose coefficients share that mean has a
/// canonical norm about `sqrt(N)` times larger, which costs CKKS key switching about 10 bits of
/// precision at `N = 2^13`. The `p_j` need not be prime nor coprime to `Q` or to each other.
#[derive(Debug, Clone)]
pub struct BaseConverter {
    from: Vec<Modulus>,
    to: Vec<Modulus>,
    /// `qhat_i^{-1} mod q_i`.
    qhat_inv: Vec<u32>,
    /// Shoup companions of `qhat_inv`.
    qhat_inv_shoup: Vec<u32>,
    /// `qhat_i mod p_j`, layout `[to.len()][from.len()]`.
    qhat_mod_p: Vec<u32>,
    /// Shoup companions of `qhat_mod_p` (with respect to `p_j`).
    qhat_mod_p_shoup: Vec<u32>,
    /// `Q mod p_j`, removed once per centred digit.
    q_mod_p: Vec<u32>,
    /// The constants of the tiled kernel.
    plan: Plan,
}

impl BaseConverter {
    /// Precomputes the conversion tables. Errors with [`Error::InvalidModulus`] if `from` is
    /// empty (`modulus: 0`) or not pairwise coprime. `to` may be empty.
    pub fn new(from: &[Modulus], to: &[Modulus]) -> Result<Self> {
        check_non_empty(from)?;
        check_pairwise_coprime(from)?;
        let qhat_inv = from
            .iter()
            .enumerate()
            .map(|(i, q)| inverse(q, product_mod(from, Some(i), q)))
            .collect::<Result<Vec<_>>>()?;
        let qhat_inv_shoup = from.iter().zip(&qhat_inv).map(|(q, &w)| q.shoup(w)).collect();
        let mut qhat_mod_p = Vec::with_capacity(to.len() * from.len());
        let mut qhat_mod_p_shoup = Vec::with_capacity(to.len() * from.len());
        for p in to {
            for i in 0..from.len() {
                let w = product_mod(from, Some(i), p);
                qhat_mod_p.push(w);
                qhat_mod_p_shoup.push(p.shoup(w));
            }
        }
        let q_mod_p: Vec<u32> = to.iter().map(|p| product_mod(from, None, p)).collect();
        let src = from
            .iter()
            .zip(qhat_inv.iter().zip(&qhat_inv_shoup))
            .map(|(q, (&w, &ws))| SrcLimb { q: q.value(), w, ws, half: q.value() / 2 })
            .collect();
        let dst = to.iter().map(|p| DstLimb::new(p, 0)).collect();
        // Row j: qhat_i mod p_j, then -Q mod p_j for the count of centred digits.
        let coef = qhat_mod_p
            .chunks(from.len())
            .zip(to.iter().zip(&q_mod_p))
            .flat_map(|(row, (p, &qp))| row.iter().copied().chain([p.neg(qp)]))
            .collect();
        Ok(Self {
            from: from.to_vec(),
            to: to.to_vec(),
            qhat_inv,
            qhat_inv_shoup,
            qhat_mod_p,
            qhat_mod_p_shoup,
            q_mod_p,
            plan: Plan::new(src, dst, coef),
        })
    }

    /// Source moduli `q_i`.
    #[must_use]
    pub fn from_moduli(&self) -> &[Modulus] {
        &self.from
    }

    /// Target moduli `p_j`.
    #[must_use]
    pub fn to_moduli(&self) -> &[Modulus] {
        &self.to
    }

    /// `qhat_i^{-1} mod q_i` with `qhat_i = Q / q_i`, one per source modulus, in `[0, q_i)`.
    #[must_use]
    pub fn qhat_inv(&self) -> &[u32] {
        &self.qhat_inv
    }

    /// Shoup companions `floor(qhat_inv[i] * 2^32 / q_i)` of [`qhat_inv`](Self::qhat_inv).
    #[must_use]
    pub fn qhat_inv_shoup(&self) -> &[u32] {
        &self.qhat_inv_shoup
    }

    /// `qhat_i mod p_j`, in `[0, p_j)`, row-major `[to.len()][from.len()]`: entry
    /// `j * from.len() + i`.
    #[must_use]
    pub fn qhat_mod_p(&self) -> &[u32] {
        &self.qhat_mod_p
    }

    /// Shoup companions `floor(qhat_mod_p[j][i] * 2^32 / p_j)`, same layout as
    /// [`qhat_mod_p`](Self::qhat_mod_p).
    #[must_use]
    pub fn qhat_mod_p_shoup(&self) -> &[u32] {
        &self.qhat_mod_p_shoup
    }

    /// `Q mod p_j`, one per target modulus, in `[0, p_j)` (removed once per centred digit).
    #[must_use]
    pub fn q_mod_p(&self) -> &[u32] {
        &self.q_mod_p
    }

    /// Converts `n` coefficients: `input` is `from.len() * n` residues (limb-major), `output`
    /// receives `to.len() * n` residues (limb-major), each `out_j` as defined on the type, in
    /// `[0, p_j)`. Input words should be canonical; any `u32` word `w` of limb `i` is read as
    /// `w mod q_i` (the output is the same as for the canonical residue), so nothing panics.
    ///
    /// Errors with [`Error::DimensionMismatch`] on wrong slice lengths and
    /// [`Error::SizeOverflow`] if `len * n` overflows.
    ///
    /// Runs the tiled kernel (tiles of coefficients whose digits stay in L1, lazy `u64` sums with
    /// one reduction per output word; module `tiled`) at the widest SIMD level the CPU has.
    pub fn convert(&self, input: &[u32], n: usize, output: &mut [u32]) -> Result<()> {
        self.convert_with(input, n, output, SimdLevel::active())
    }

    /// [`convert`](Self::convert) at a chosen SIMD level (clamped to what the CPU has): the same
    /// words on every level. For tests and benchmarks.
    pub fn convert_with(&self, input: &[u32], n: usize, output: &mut [u32], level: SimdLevel) -> Result<()> {
        self.check_convert(input, n, output)?;
        self.plan.run(level, input, n, output, Extra::None);
        Ok(())
    }

    fn check_convert(&self, input: &[u32], n: usize, output: &[u32]) -> Result<()> {
        check_len("base conversion input", flat_len(self.from.len(), n, "base conversion input")?, input.len())?;
        check_len("base conversion output", flat_len(self.to.len(), n, "base conversion output")?, output.len())
    }

    /// [`convert`](Self::convert) by the plain loops of the definition: every `y_i` into a
    /// buffer, then per output limb, per input limb, per coefficient, `u64` sums reduced every
    /// 15 terms. The reference the fast path is tested against; slower. Same errors.
    pub fn convert_reference(&self, input: &[u32], n: usize, output: &mut [u32]) -> Result<()> {
        self.check_convert(input, n, output)?;
        if n == 0 {
            return Ok(());
        }
        let y = scale_limbs(&self.from, &self.qhat_inv, &self.qhat_inv_shoup, input, n);
        // Number of digits y_i above q_i / 2, whose centred value is y_i - q_i.
        let high = count_high(&self.from, &y, n);
        let l = self.from.len();
        let mut acc = vec![0u64; n];
        for (((p, coeffs), out_limb), &qp) in
            self.to.iter().zip(self.qhat_mod_p.chunks_exact(l)).zip(output.chunks_exact_mut(n)).zip(&self.q_mod_p)
        {
            acc.fill(0);
            accumulate(&mut acc, &y, coeffs, n, u64::from(p.value()));
            for ((o, &a), &h) in out_limb.iter_mut().zip(&acc).zip(&high) {
                *o = p.sub(p.reduce_u64(a), p.mul(p.reduce_u32(h), qp));
            }
        }
        Ok(())
    }
}

/// Divide-and-round by the product `D` of the dropped moduli `d_0, ..., d_{L-1}`, keeping the
/// moduli `k_0, ..., k_{K-1}` (CKKS rescale, BGV modulus switching, key-switch ModDown).
///
/// Input: an integer `x` modulo `K * D` (`K` the product of the kept moduli) given by its residues
/// modulo the kept and the dropped moduli. Output limb `i` is
///
/// ```text
/// out_i = [(x - delta) * D^{-1}]_{k_i}   in [0, k_i),
/// ```
///
/// where `delta` is an integer with `delta = x mod D` (so the division is exact), defined with the
/// plaintext modulus `t` (`t = 1` when `None`) as
///
/// ```text
/// delta = t * lift(y),   y = [x * t^{-1}]_D in [0, D),
/// ```
///
/// so that `delta = x mod D` and `delta = 0 mod t`; hence `out = x * D^{-1} mod t` (a BGV
/// plaintext is preserved up to the factor `D^{-1} mod t`). `lift(y)` is the integer
///
/// * **one dropped modulus** (`L = 1`, `D = d`): the centred representative `c` of `y` in
///   `(-d/2, d/2]` (`c = y` if `y <= floor(d/2)`, else `y - d`). This is exact rounding:
///   with `t = None`, `out = floor((x + floor(d/2)) / d)`, the nearest integer to `x / d` (a tie,
///   possible only for even `d`, rounds down); with `t`, `|delta| <= t * d / 2`.
/// * **several dropped moduli**: the centred fast base conversion of [`BaseConverter`] applied
///   to the residues of `y`: `lift(y) = y + u * D` for the integer `u` with
///   `|u| <= ceil(L / 2)` defined there (`sum_j c_j * dhat_j = y + u * D`, `c_j` the centred
///   `[y_j * dhat_j^{-1}]_{d_j}`, `dhat_j = D / d_j`), so `|lift(y)| <= L * D / 2` and
///   `|delta| <= t * L * D / 2`: the error `x - out * D` is centred.
///
/// All formulas hold for any integer representative of `x` modulo `K * D`: changing the
/// representative by a multiple of `K * D` changes `out` by a multiple of `K`.
#[derive(Debug, Clone)]
pub struct ScaleDown {
    keep: Vec<Modulus>,
    drop: Vec<Modulus>,
    t: Option<u32>,
    /// `D^{-1} mod k_i`.
    d_inv: Vec<u32>,
    d_inv_shoup: Vec<u32>,
    /// `D mod k_i`.
    d_mod_keep: Vec<u32>,
    /// `t^{-1} * dhat_j^{-1} mod d_j`.
    drop_factor: Vec<u32>,
    drop_factor_shoup: Vec<u32>,
    /// `t * d_j^{-1} mod k_i`, layout `[keep.len()][drop.len()]`.
    lift_matrix: Vec<u32>,
    lift_matrix_shoup: Vec<u32>,
    /// The constants of the tiled kernel.
    plan: Plan,
}

impl ScaleDown {
    /// Precomputes the tables. Errors with [`Error::InvalidModulus`] if `keep` or `drop` is empty
    /// (`modulus: 0`) or the moduli of `keep` and `drop` together are not pairwise coprime, and
    /// with [`Error::InvalidPlaintextModulus`] if `t` is not coprime to every dropped modulus.
    pub fn new(keep: &[Modulus], drop: &[Modulus], t: Option<u32>) -> Result<Self> {
        check_non_empty(keep)?;
        check_non_empty(drop)?;
        let all = keep.iter().chain(drop).copied().collect::<Vec<_>>();
        check_pairwise_coprime(&all)?;
        let t_val = t.unwrap_or(1);
        let t_err = Error::InvalidPlaintextModulus { t: u64::from(t_val), reason: "not coprime to the dropped moduli" };

        let mut d_inv = Vec::with_capacity(keep.len());
        let mut d_mod_keep = Vec::with_capacity(keep.len());
        let mut lift_matrix = Vec::with_capacity(keep.len() * drop.len());
        for k in keep {
            let d = product_mod(drop, None, k);
            d_mod_keep.push(d);
            d_inv.push(inverse(k, d)?);
            let t_k = k.reduce_u32(t_val);
            for dj in drop {
                let inv = inverse(k, k.reduce_u32(dj.value()))?;
                lift_matrix.push(k.mul(t_k, inv));
            }
        }
        let mut drop_factor = Vec::with_capacity(drop.len());
        for (j, dj) in drop.iter().enumerate() {
            let t_inv = dj.inv(dj.reduce_u32(t_val)).ok_or(t_err.clone())?;
            let dhat_inv = inverse(dj, product_mod(drop, Some(j), dj))?;
            drop_factor.push(dj.mul(t_inv, dhat_inv));
        }
        let drop_factor_shoup = shoup_table(drop, &drop_factor, 1);
        let src = drop
            .iter()
            .zip(drop_factor.iter().zip(&drop_factor_shoup))
            .map(|(d, (&w, &ws))| SrcLimb { q: d.value(), w, ws, half: d.value() / 2 })
            .collect();
        let dst = keep.iter().zip(&d_inv).map(|(k, &di)| DstLimb::new(k, di)).collect();
        // Row i: -t d_j^{-1} mod k_i, then t mod k_i for the count of centred digits.
        let coef = lift_matrix
            .chunks(drop.len())
            .zip(keep)
            .flat_map(|(row, k)| row.iter().map(|&m| k.neg(m)).chain([k.reduce_u32(t_val)]))
            .collect();
        Ok(Self {
            d_inv_shoup: shoup_table(keep, &d_inv, 1),
            drop_factor_shoup,
            lift_matrix_shoup: shoup_table(keep, &lift_matrix, drop.len()),
            plan: Plan::new(src, dst, coef),
            keep: keep.to_vec(),
            drop: drop.to_vec(),
            t,
            d_inv,
            d_mod_keep,
            drop_factor,
            lift_matrix,
        })
    }

    /// The kept moduli `k_i`.
    #[must_use]
    pub fn keep_moduli(&self) -> &[Modulus] {
        &self.keep
    }

    /// The dropped moduli `d_j`.
    #[must_use]
    pub fn drop_moduli(&self) -> &[Modulus] {
        &self.drop
    }

    /// The plaintext modulus, if any.
    #[must_use]
    pub fn t(&self) -> Option<u32> {
        self.t
    }

    /// `D^{-1} mod k_i`, one per kept modulus, in `[0, k_i)`.
    #[must_use]
    pub fn d_inv(&self) -> &[u32] {
        &self.d_inv
    }

    /// Shoup companions of [`d_inv`](Self::d_inv) (with respect to `k_i`).
    #[must_use]
    pub fn d_inv_shoup(&self) -> &[u32] {
        &self.d_inv_shoup
    }

    /// `D mod k_i`, one per kept modulus, in `[0, k_i)` (used by the centred lift when one
    /// modulus is dropped).
    #[must_use]
    pub fn d_mod_keep(&self) -> &[u32] {
        &self.d_mod_keep
    }

    /// `t^{-1} * (D / d_j)^{-1} mod d_j`, one per dropped modulus, in `[0, d_j)` (`t = 1` when
    /// `None`; for a single dropped modulus this is `t^{-1} mod d`). Multiplying the dropped
    /// residue `x_j` by it gives `z_j = [y_j * dhat_j^{-1}]_{d_j}`.
    #[must_use]
    pub fn drop_factor(&self) -> &[u32] {
        &self.drop_factor
    }

    /// Shoup companions of [`drop_factor`](Self::drop_factor) (with respect to `d_j`).
    #[must_use]
    pub fn drop_factor_shoup(&self) -> &[u32] {
        &self.drop_factor_shoup
    }

    /// `t * d_j^{-1} mod k_i` (equal to `dhat_j * t * D^{-1} mod k_i`), row-major
    /// `[keep.len()][drop.len()]`: entry `i * drop.len() + j`, in `[0, k_i)`.
    #[must_use]
    pub fn lift_matrix(&self) -> &[u32] {
        &self.lift_matrix
    }

    /// Shoup companions of [`lift_matrix`](Self::lift_matrix) (with respect to `k_i`), same
    /// layout.
    #[must_use]
    pub fn lift_matrix_shoup(&self) -> &[u32] {
        &self.lift_matrix_shoup
    }

    /// Computes `out` (`keep.len() * n` residues, limb-major, each in `[0, k_i)`) as defined on the
    /// type, from `input_keep` (`keep.len() * n` residues of `x` modulo the kept moduli) and
    /// `input_drop` (`drop.len() * n` residues modulo the dropped moduli). Input words should be
    /// canonical; any `u32` word `w` of a limb with modulus `m` is read as `w mod m`.
    ///
    /// Errors with [`Error::DimensionMismatch`] on wrong slice lengths and
    /// [`Error::SizeOverflow`] if `len * n` overflows.
    pub fn apply(&self, input_keep: &[u32], input_drop: &[u32], n: usize, out: &mut [u32]) -> Result<()> {
        self.apply_with(input_keep, input_drop, n, out, SimdLevel::active())
    }

    /// [`apply`](Self::apply) at a chosen SIMD level (clamped to what the CPU has): the same
    /// words on every level. For tests and benchmarks.
    pub fn apply_with(
        &self,
        input_keep: &[u32],
        input_drop: &[u32],
        n: usize,
        out: &mut [u32],
        level: SimdLevel,
    ) -> Result<()> {
        self.check_apply(input_keep, input_drop, n)?;
        check_len("scale-down output", input_keep.len(), out.len())?;
        self.plan.run(level, input_drop, n, out, Extra::From(input_keep));
        Ok(())
    }

    /// As [`apply`](Self::apply), overwriting the kept residues `keep_inout` with the output.
    ///
    /// Runs the tiled kernel of [`BaseConverter::convert`] (module `tiled`): with `z_j = [x_j *
    /// drop_factor_j]_{d_j}` and `h` the number of `z_j` above `d_j / 2`, `out_i = (x_i D^{-1} -
    /// sum_j z_j lift_matrix[i][j] + h t) mod k_i`, which is the definition on the type, one
    /// dropped modulus included.
    pub fn apply_in_place(&self, keep_inout: &mut [u32], input_drop: &[u32], n: usize) -> Result<()> {
        self.apply_in_place_with(keep_inout, input_drop, n, SimdLevel::active())
    }

    /// [`apply_in_place`](Self::apply_in_place) at a chosen SIMD level (clamped to what the CPU
    /// has): the same words on every level. For tests and benchmarks.
    pub fn apply_in_place_with(
        &self,
        keep_inout: &mut [u32],
        input_drop: &[u32],
        n: usize,
        level: SimdLevel,
    ) -> Result<()> {
        self.check_apply(keep_inout, input_drop, n)?;
        self.plan.run(level, input_drop, n, keep_inout, Extra::InPlace);
        Ok(())
    }

    fn check_apply(&self, keep_inout: &[u32], input_drop: &[u32], n: usize) -> Result<()> {
        check_len(
            "scale-down kept residues",
            flat_len(self.keep.len(), n, "scale-down kept residues")?,
            keep_inout.len(),
        )?;
        check_len(
            "scale-down dropped residues",
            flat_len(self.drop.len(), n, "scale-down dropped residues")?,
            input_drop.len(),
        )
    }

    /// [`apply_in_place`](Self::apply_in_place) by the plain loops of the definition: every
    /// `z_j` into a buffer; then per kept limb and coefficient (with several dropped moduli, a
    /// middle loop over the dropped limbs accumulating `z_j * lift_matrix[i][j] < 2^60` in `u64`,
    /// reduced every 15 terms). The reference the fast path is tested against. Same errors.
    pub fn apply_in_place_reference(&self, keep_inout: &mut [u32], input_drop: &[u32], n: usize) -> Result<()> {
        self.check_apply(keep_inout, input_drop, n)?;
        if n == 0 {
            return Ok(());
        }
        // z_j = [x_j * t^{-1} * dhat_j^{-1}]_{d_j}, canonical.
        let z = scale_limbs(&self.drop, &self.drop_factor, &self.drop_factor_shoup, input_drop, n);
        let per_keep = self
            .keep
            .iter()
            .zip(self.d_inv.iter().zip(&self.d_inv_shoup))
            .zip(keep_inout.chunks_exact_mut(n))
            .enumerate();
        if let [d] = self.drop.as_slice() {
            // out = x * D^{-1} - c * t * d^{-1}, with c the centred lift of y = z.
            let half = d.value() / 2;
            for (i, ((k, (&di, &dis)), limb)) in per_keep {
                let d_k = self.d_mod_keep[i];
                let (m, ms) = (self.lift_matrix[i], self.lift_matrix_shoup[i]);
                for (xk, &y) in limb.iter_mut().zip(&z) {
                    let y_k = k.reduce_u32(y);
                    let c = if y > half { k.sub(y_k, d_k) } else { y_k };
                    *xk = k.sub(k.mul_shoup(*xk, di, dis), k.mul_shoup(c, m, ms));
                }
            }
        } else {
            // out = x * D^{-1} - sum_j c_j * t * d_j^{-1} with c_j the centred z_j; each
            // c_j = z_j - d_j adds t * d_j * d_j^{-1} = t back.
            let high = count_high(&self.drop, &z, n);
            let t_val = self.t.unwrap_or(1);
            let l = self.drop.len();
            let mut acc = vec![0u64; n];
            for (i, ((k, (&di, &dis)), limb)) in per_keep {
                acc.fill(0);
                let coeffs = &self.lift_matrix[i * l..(i + 1) * l];
                accumulate(&mut acc, &z, coeffs, n, u64::from(k.value()));
                let t_k = k.reduce_u32(t_val);
                for ((xk, &a), &h) in limb.iter_mut().zip(&acc).zip(&high) {
                    let back = k.mul(k.reduce_u32(h), t_k);
                    *xk = k.add(k.sub(k.mul_shoup(*xk, di, dis), k.reduce_u64(a)), back);
                }
            }
        }
        Ok(())
    }
}

/// Limb `i` of `input` times the constant `w[i]` (Shoup, canonical output), limb-major.
fn scale_limbs(moduli: &[Modulus], w: &[u32], ws: &[u32], input: &[u32], n: usize) -> Vec<u32> {
    let mut out = vec![0u32; input.len()];
    for (((m, (&w, &ws)), x_limb), o_limb) in
        moduli.iter().zip(w.iter().zip(ws)).zip(input.chunks_exact(n)).zip(out.chunks_exact_mut(n))
    {
        for (o, &x) in o_limb.iter_mut().zip(x_limb) {
            *o = m.mul_shoup(x, w, ws);
        }
    }
    out
}

/// Per coefficient, how many limbs hold a residue above `q / 2` (whose centred value is
/// `residue - q`).
fn count_high(moduli: &[Modulus], values: &[u32], n: usize) -> Vec<u32> {
    let mut high = vec![0u32; n];
    for (m, limb) in moduli.iter().zip(values.chunks_exact(n)) {
        let half = m.value() / 2;
        for (h, &v) in high.iter_mut().zip(limb) {
            *h += u32::from(v > half);
        }
    }
    high
}

#[cfg(test)]
mod tests;
