//! Bootstrapped Boolean gates and small lookup tables (FHEW / TFHE family) on `u32` words.
//!
//! # Scheme
//!
//! * **LWE** ciphertexts `(a, b)` of dimension `n` modulo a power of two `q` (arithmetic in
//!   `u32` with wrap-around, reduced by masking); phase `b - <a, s> mod q`. A bit `m` is encoded
//!   as `m q / 4`; a `k`-bit message `m` as `m q / 2^(k+1)` (one padding bit). Fresh ciphertexts
//!   are seeded: `a` is ChaCha20 output ([`SeededLweCiphertext`]).
//! * **RLWE / RGSW** over `Z_Q[X]/(X^N + 1)` with one NTT prime `Q < 2^28`; the bootstrapping
//!   key holds, for every blind-rotation step and key, an RGSW encryption of a key bit in the NTT
//!   domain: `2 * digits` rows `(a, a s + e + bit * g_l * (1 or -s))`, `a` seeded.
//! * **Bootstrap** of an LWE ciphertext mod `q` with a test vector `tv`: scale `(a, b)` by `2N/q`
//!   (exact, `q | 2N`), blind-rotate `X^{-b} tv` by `sum a_i s_i` (GINX/CGGI,
//!   the `rotate` module), extract the constant coefficient as an LWE sample of
//!   dimension `N` mod `Q`, switch modulus `Q -> q_ks` (rounding), key-switch `N -> n` modulo
//!   `q_ks` with OpenFHE's table method (the key holds LWE encryptions of `v B_ks^j s_N[i]` for
//!   every digit value `v`; seeded `a`, `u16` words since `q_ks <= 2^16`), switch `q_ks -> q`.
//! * **Gates**: a bootstrap of a linear combination plus a constant with the sign test vector
//!   (`+Q/8` for phases in `[0, q/2)`, `-Q/8` otherwise), then `+q/8`. AND, OR, NAND, NOR,
//!   XOR, XNOR and majority take one bootstrap; NOT none; 3-input AND/OR two; MUX three.
//!   [`GateEvaluator::lut`] bootstraps a `k`-bit message (`k <= 4`) through any table.
//!
//! # Keys and ids
//!
//! [`SecretKey::generate`] derives everything from one seed; its id (the first eight bytes of
//! SHA-256 over a derived seed and the parameter set) travels with every ciphertext and key, and
//! combining objects of different ids is [`Error::GateKeyMismatch`]. The evaluation key is made
//! seeded ([`SeededEvaluationKey`], `b` halves only: what is stored) and expanded for use
//! ([`EvaluationKey`], what is resident).

pub mod gpu;
pub mod params;
pub(crate) mod rotate;

use std::fmt;
use std::sync::Arc;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::math::sampling::{self, stream_id, Purpose, Sampler, Seed};

pub use params::{
    erfc, largest_ntt_prime, GateParams, LweSecret, MarginKind, NoiseReport, RING_Q_1024, RING_Q_256, STD128,
    STD128_BB, STD128_LF, STD128_LUT, TOY,
};
use rotate::{blind_rotate, RingTables, Scratch};

/// A validated parameter set with its tables; shared by keys and evaluators.
#[derive(Debug, Clone)]
pub struct GateContext {
    params: GateParams,
    tables: RingTables,
}

impl GateContext {
    /// Validates `params` ([`GateParams::validate`]) and builds the tables.
    pub fn new(params: GateParams) -> Result<Arc<Self>> {
        params.validate()?;
        let tables = RingTables::new(&params)?;
        Ok(Arc::new(Self { params, tables }))
    }

    /// The shipped set `name` ([`GateParams::by_name`]).
    pub fn by_name(name: &str) -> Result<Arc<Self>> {
        Self::new(GateParams::by_name(name)?)
    }

    /// The parameter set.
    #[must_use]
    pub fn params(&self) -> &GateParams {
        &self.params
    }
}

/// Uniform words mod `2^log_q` of the stream `(seed, purpose, index, 2^log_q)`: word `j` is the
/// `j`-th ChaCha20 output word masked to `log_q` bits.
fn uniform_pow2(seed: &Seed, purpose: Purpose, index: u32, log_q: u32, out: &mut [u32]) -> Result<()> {
    let mut rng = ChaCha20Rng::from_seed(*seed);
    rng.set_stream(stream_id(purpose, index, 1u32 << log_q)?);
    let mask = (1u32 << log_q) - 1;
    for o in out.iter_mut() {
        *o = rng.next_u32() & mask;
    }
    Ok(())
}

fn check_id(expected: u64, found: u64) -> Result<()> {
    if expected == found {
        Ok(())
    } else {
        Err(Error::GateKeyMismatch { expected, found })
    }
}

/// An LWE ciphertext mod `q` of the gate layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LweCiphertext {
    /// The mask, `n` words in `[0, q)`.
    pub a: Vec<u32>,
    /// The body, in `[0, q)`.
    pub b: u32,
    /// Id of the secret key.
    pub key_id: u64,
}

/// A fresh LWE ciphertext whose mask is the ChaCha20 stream of `seed` (stored form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeededLweCiphertext {
    /// Seed of the mask.
    pub seed: Seed,
    /// The body.
    pub b: u32,
    /// Id of the secret key.
    pub key_id: u64,
}

impl SeededLweCiphertext {
    /// The mask regenerated: an [`LweCiphertext`].
    pub fn expand(&self, ctx: &GateContext) -> Result<LweCiphertext> {
        let mut a = vec![0u32; ctx.params.n];
        uniform_pow2(&self.seed, Purpose::CiphertextA, 0, ctx.params.log_q, &mut a)?;
        Ok(LweCiphertext { a, b: self.b, key_id: self.key_id })
    }
}

/// The secret keys: the LWE key `s` (dimension `n`) and the RLWE key `s_N` (ternary, degree `N`).
pub struct SecretKey {
    ctx: Arc<GateContext>,
    id: u64,
    lwe: Vec<i8>,
    ring: Vec<i8>,
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretKey").field("params", &self.ctx.params.name).field("id", &self.id).finish_non_exhaustive()
    }
}

impl SecretKey {
    /// A secret key from a seed drawn from the operating system ([`crate::math::sampling::fresh_seed`]):
    /// what an application uses ([`SecretKey::generate`] reproduces a key from a known seed, for
    /// tests). Errors: [`Error::Randomness`] if the OS has no randomness to give.
    pub fn random(ctx: &Arc<GateContext>) -> Result<Self> {
        Self::generate(ctx, &crate::math::sampling::fresh_seed()?)
    }

    /// [`SecretKey::evaluation_key`] from a seed drawn from the operating system. Errors:
    /// [`Error::Randomness`], and those of [`SecretKey::evaluation_key`].
    pub fn random_evaluation_key(&self) -> Result<SeededEvaluationKey> {
        self.evaluation_key(&crate::math::sampling::fresh_seed()?)
    }

    /// The keys of `seed`: `s` from the sampler stream `(Secret, 0)`, `s_N` from `(Secret, 1)`.
    pub fn generate(ctx: &Arc<GateContext>, seed: &Seed) -> Result<Self> {
        let p = &ctx.params;
        let mut smp = Sampler::from_seed(seed, Purpose::Secret, 0);
        let lwe = match p.secret {
            LweSecret::Ternary => smp.ternary(p.n),
            LweSecret::Binary => {
                let mut bytes = vec![0u8; p.n];
                smp.fill_bytes(&mut bytes);
                bytes.iter().map(|b| (b & 1) as i8).collect()
            }
            LweSecret::BlockBinary => {
                let t = smp.ternary(p.n / 2);
                t.iter().flat_map(|&v| [i8::from(v == 0), i8::from(v == 1)]).collect()
            }
        };
        let ring = Sampler::from_seed(seed, Purpose::Secret, 1).ternary(p.ring_n());
        let derived = Sampler::from_seed(seed, Purpose::SeedDerivation, 0).next_seed();
        let mut h = Sha256::new();
        h.update(derived);
        h.update(p.to_string().as_bytes());
        let digest: [u8; 32] = h.finalize().into();
        let [b0, b1, b2, b3, b4, b5, b6, b7, ..] = digest;
        let id = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
        Ok(Self { ctx: Arc::clone(ctx), id, lwe, ring })
    }

    /// The key id.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The context.
    #[must_use]
    pub fn context(&self) -> &Arc<GateContext> {
        &self.ctx
    }

    fn inner_q(&self, a: &[u32]) -> u32 {
        a.iter().zip(&self.lwe).fold(0u32, |acc, (&x, &s)| acc.wrapping_add(x.wrapping_mul(s as i32 as u32)))
    }

    /// Encrypts the value `v` (already scaled, mod `q`) with a fresh seed and one Gaussian error
    /// from `rng`.
    pub fn encrypt_raw(&self, v: u32, rng: &mut Sampler) -> Result<SeededLweCiphertext> {
        let p = &self.ctx.params;
        let seed = rng.next_seed();
        let mut a = vec![0u32; p.n];
        uniform_pow2(&seed, Purpose::CiphertextA, 0, p.log_q, &mut a)?;
        let e = rng.gaussian_one();
        let b = self.inner_q(&a).wrapping_add(v).wrapping_add(e as u32) & (p.q() - 1);
        Ok(SeededLweCiphertext { seed, b, key_id: self.id })
    }

    /// Encrypts a bit (`m q / 4`); the expanded ciphertext.
    pub fn encrypt_bit(&self, bit: bool, rng: &mut Sampler) -> Result<LweCiphertext> {
        self.encrypt_raw(u32::from(bit) * (self.ctx.params.q() / 4), rng)?.expand(&self.ctx)
    }

    /// Encrypts a `bits`-bit message (`m q / 2^(bits+1)`), `1 <= bits <= 4`.
    ///
    /// Errors with [`Error::GateMessage`] if `m >= 2^bits` or `bits` is out of range for `q`.
    pub fn encrypt_message(&self, m: u32, bits: u32, rng: &mut Sampler) -> Result<LweCiphertext> {
        let delta = self.ctx.message_delta(bits)?;
        if u64::from(m) >= 1 << bits {
            return Err(Error::GateMessage { value: u64::from(m), bits });
        }
        self.encrypt_raw(m * delta, rng)?.expand(&self.ctx)
    }

    /// The phase `b - <a, s> mod q`.
    ///
    /// Errors with [`Error::GateKeyMismatch`] for a ciphertext of another key, and
    /// [`Error::DimensionMismatch`] for a wrong mask length.
    pub fn phase(&self, ct: &LweCiphertext) -> Result<u32> {
        check_id(self.id, ct.key_id)?;
        if ct.a.len() != self.lwe.len() {
            return Err(Error::DimensionMismatch { what: "LWE mask", expected: self.lwe.len(), found: ct.a.len() });
        }
        Ok(ct.b.wrapping_sub(self.inner_q(&ct.a)) & (self.ctx.params.q() - 1))
    }

    /// Decrypts a bit: the phase rounded to a multiple of `q/4` is `q/4`.
    pub fn decrypt_bit(&self, ct: &LweCiphertext) -> Result<bool> {
        let q = self.ctx.params.q();
        let ph = self.phase(ct)?;
        Ok(((ph + q / 8) & (q - 1)) / (q / 4) == 1)
    }

    /// Decrypts a `bits`-bit message (rounding to the nearest multiple of `q / 2^(bits+1)`, the
    /// padding bit dropped).
    pub fn decrypt_message(&self, ct: &LweCiphertext, bits: u32) -> Result<u32> {
        let delta = self.ctx.message_delta(bits)?;
        let q = self.ctx.params.q();
        let ph = self.phase(ct)?;
        Ok((((ph + delta / 2) & (q - 1)) / delta) & ((1 << bits) - 1))
    }

    /// The evaluation key (bootstrapping and key-switching keys), seeded by `seed`: errors from
    /// the sampler stream `(Error, 0)` of `seed`, masks from the `KeySwitchA` streams.
    pub fn evaluation_key(&self, seed: &Seed) -> Result<SeededEvaluationKey> {
        let p = &self.ctx.params;
        let t = &self.ctx.tables;
        let m = &t.m;
        let n_ring = p.ring_n();
        let mut errs = Sampler::from_seed(seed, Purpose::Error, 0);
        let mut s_ntt: Vec<u32> = self.ring.iter().map(|&s| m.reduce_i64(i64::from(s))).collect();
        t.ntt.forward(&mut s_ntt)?;
        let keys = p.secret.keys_per_step();
        let rows = p.rows();
        let mut bk_b = Vec::with_capacity(p.steps() * keys * rows * n_ring);
        let mut a = vec![0u32; n_ring];
        let mut e = vec![0u32; n_ring];
        for g in 0..p.steps() {
            for k in 0..keys {
                let bit = self.key_bit(g, k)?;
                for r in 0..rows {
                    let idx = ((g * keys + k) * rows + r) as u32;
                    sampling::uniform_limb(seed, Purpose::KeySwitchA, idx, m, &mut a)?;
                    for (o, x) in e.iter_mut().zip(errs.gaussian(n_ring)) {
                        *o = m.reduce_i64(i64::from(x));
                    }
                    t.ntt.forward(&mut e)?;
                    // Row (c, l): gadget g_l = B^(skipped + l) on component c.
                    let (c, l) = (r / p.digits, r % p.digits);
                    let gl = m.reduce_u64(1u64 << (p.log_bg as usize * (p.skipped + l)));
                    for j in 0..n_ring {
                        let (aj, sj, ej) = (at(&a, j)?, at(&s_ntt, j)?, at(&e, j)?);
                        let mut b = m.add(m.mul(aj, sj), ej);
                        if bit {
                            let add = if c == 1 { gl } else { m.neg(m.mul(gl, sj)) };
                            b = m.add(b, add);
                        }
                        bk_b.push(b);
                    }
                }
            }
        }
        // Key-switching table: entry (i, j, v) encrypts v B^j s_N[i] under s mod q_ks.
        let dks = p.ks_digits();
        let base = 1usize << p.log_bks;
        let mask = (1u32 << p.log_qks) - 1;
        let mut ksk_b = Vec::with_capacity(n_ring * dks * base);
        let mut ka = vec![0u32; p.n];
        for (i, &sn) in self.ring.iter().enumerate() {
            for j in 0..dks {
                for v in 0..base {
                    let idx = ((i * dks + j) * base + v) as u32;
                    uniform_pow2(seed, Purpose::KeySwitchA, idx, p.log_qks, &mut ka)?;
                    let err = errs.gaussian_one();
                    let msg = ((v as u32) << (p.log_bks as usize * j)).wrapping_mul(sn as i32 as u32);
                    let b = self.inner_q(&ka).wrapping_add(msg).wrapping_add(err as u32) & mask;
                    ksk_b.push(b as u16);
                }
            }
        }
        Ok(SeededEvaluationKey { key_id: self.id, seed: *seed, bk_b, ksk_b })
    }

    /// The bit of key `k` of blind-rotation step `g`. Errors: [`Error::DimensionMismatch`] for a
    /// step past the LWE secret (a key that does not fit its parameters).
    fn key_bit(&self, g: usize, k: usize) -> Result<bool> {
        let index = match self.ctx.params.secret {
            LweSecret::Ternary | LweSecret::Binary => g,
            LweSecret::BlockBinary => 2 * g + k,
        };
        let s = *self.lwe.get(index).ok_or(Error::DimensionMismatch {
            what: "LWE secret",
            expected: index + 1,
            found: self.lwe.len(),
        })?;
        Ok(match self.ctx.params.secret {
            LweSecret::Ternary if k == 0 => s == 1,
            LweSecret::Ternary => s == -1,
            LweSecret::Binary | LweSecret::BlockBinary => s == 1,
        })
    }
}

fn at(v: &[u32], j: usize) -> Result<u32> {
    v.get(j).copied().ok_or(Error::DimensionMismatch { what: "polynomial", expected: j + 1, found: v.len() })
}

impl GateContext {
    /// `q / 2^(bits+1)`; errors with [`Error::GateMessage`] unless `1 <= bits <= 4` and
    /// `2^(bits+3) <= q`.
    fn message_delta(&self, bits: u32) -> Result<u32> {
        if !(1..=4).contains(&bits) || bits + 3 > self.params.log_q {
            return Err(Error::GateMessage { value: 0, bits });
        }
        Ok(self.params.q() >> (bits + 1))
    }
}

/// The evaluation key as stored: seed and `b` halves.
#[derive(Clone, PartialEq, Eq)]
pub struct SeededEvaluationKey {
    /// Id of the secret key.
    pub key_id: u64,
    /// Seed of the masks.
    pub seed: Seed,
    /// `b` halves of the bootstrapping key, `[step][key][row][N]`, NTT domain.
    pub bk_b: Vec<u32>,
    /// `b` words of the key-switching table, `[i][digit][value]`.
    pub ksk_b: Vec<u16>,
}

impl fmt::Debug for SeededEvaluationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeededEvaluationKey").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl SeededEvaluationKey {
    /// Bytes stored: the seed, the `u32` and `u16` words.
    #[must_use]
    pub fn stored_bytes(&self) -> usize {
        32 + 8 + 4 * self.bk_b.len() + 2 * self.ksk_b.len()
    }

    /// The resident key: masks regenerated from the seed.
    ///
    /// Errors with [`Error::DimensionMismatch`] if the word counts do not fit `ctx`.
    pub fn expand(&self, ctx: &Arc<GateContext>) -> Result<EvaluationKey> {
        let p = &ctx.params;
        let n_ring = p.ring_n();
        let keys = p.secret.keys_per_step();
        let rows = p.rows();
        let polys = p.steps() * keys * rows;
        if self.bk_b.len() != polys * n_ring {
            return Err(Error::DimensionMismatch {
                what: "bootstrapping key",
                expected: polys * n_ring,
                found: self.bk_b.len(),
            });
        }
        let dks = p.ks_digits();
        let base = 1usize << p.log_bks;
        let entries = n_ring * dks * base;
        if self.ksk_b.len() != entries {
            return Err(Error::DimensionMismatch {
                what: "key-switching key",
                expected: entries,
                found: self.ksk_b.len(),
            });
        }
        let m = &ctx.tables.m;
        let mut bk = vec![0u32; polys * 2 * n_ring];
        for (idx, (pair, b)) in bk.chunks_exact_mut(2 * n_ring).zip(self.bk_b.chunks_exact(n_ring)).enumerate() {
            let (a, bb) = pair.split_at_mut(n_ring);
            sampling::uniform_limb(&self.seed, Purpose::KeySwitchA, idx as u32, m, a)?;
            bb.copy_from_slice(b);
        }
        let stride = p.n + 1;
        let mut ksk = vec![0u16; entries * stride];
        let mut ka = vec![0u32; p.n];
        for (idx, (row, &b)) in ksk.chunks_exact_mut(stride).zip(&self.ksk_b).enumerate() {
            uniform_pow2(&self.seed, Purpose::KeySwitchA, idx as u32, p.log_qks, &mut ka)?;
            for (o, &x) in row.iter_mut().zip(&ka) {
                *o = x as u16;
            }
            if let Some(last) = row.last_mut() {
                *last = b;
            }
        }
        Ok(EvaluationKey { ctx: Arc::clone(ctx), key_id: self.key_id, bk, ksk })
    }
}

/// The resident evaluation key: the bootstrapping key `[step][key][row][component][N]` (NTT
/// domain, `u32`) and the key-switching table `[i][digit][value][n + 1]` (`u16`, mask then body).
#[derive(Clone)]
pub struct EvaluationKey {
    ctx: Arc<GateContext>,
    key_id: u64,
    bk: Vec<u32>,
    ksk: Vec<u16>,
}

impl fmt::Debug for EvaluationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvaluationKey").field("key_id", &self.key_id).finish_non_exhaustive()
    }
}

impl EvaluationKey {
    /// Resident bytes of the key material.
    #[must_use]
    pub fn resident_bytes(&self) -> usize {
        4 * self.bk.len() + 2 * self.ksk.len()
    }

    /// Bytes of the bootstrapping key alone.
    #[must_use]
    pub fn bootstrapping_key_bytes(&self) -> usize {
        4 * self.bk.len()
    }

    /// The key id.
    #[must_use]
    pub fn key_id(&self) -> u64 {
        self.key_id
    }

    /// The bootstrapping key words.
    #[must_use]
    pub fn bootstrapping_key(&self) -> &[u32] {
        &self.bk
    }

    /// The key-switching table words.
    #[must_use]
    pub fn key_switching_key(&self) -> &[u16] {
        &self.ksk
    }

    /// The context.
    #[must_use]
    pub fn context(&self) -> &Arc<GateContext> {
        &self.ctx
    }
}

/// The output noise of one key pair's bootstraps: mean and variance of the output phase minus
/// its exact value, at `q` ([`SecretKey::output_noise`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyNoise {
    /// Mean: the key-switching table's errors do not average out for one key (each table entry
    /// is reused by every bootstrap), plus the mean of the final rounding.
    pub mean: f64,
    /// Variance around that mean.
    pub variance: f64,
}

impl KeyNoise {
    /// `E[e^2] = variance + mean^2`, what a mean square over many outputs measures.
    #[must_use]
    pub fn second_moment(&self) -> f64 {
        self.variance + self.mean * self.mean
    }
}

impl SecretKey {
    /// The output noise of the bootstraps of `key` (made from this secret key), evaluated for
    /// this key rather than averaged over keys as [`GateParams::noise`] is: the key-switching
    /// table's own errors (recovered with the secret keys; digits uniform over their ranges, a
    /// zero digit adding nothing), the actual `||s_N||^2` and `||s||^2` in the rounding terms, the
    /// exact mean and variance of the final `q_ks -> q` rounding, and the blind rotation as
    /// modelled. Over keys, the second moment averages to [`NoiseReport::output`]; for one key it
    /// differs by the square of the table's mean (at the noise proxy, output means of
    /// `-2.1..1.8` and second moments of `10..15` against the modelled `11.4..12.2`).
    ///
    /// Errors with [`Error::GateKeyMismatch`] for a key of another secret key and
    /// [`Error::DimensionMismatch`] for a table of the wrong size.
    pub fn output_noise(&self, key: &EvaluationKey) -> Result<KeyNoise> {
        check_id(self.id, key.key_id)?;
        let p = &self.ctx.params;
        let (dks, base, stride) = (p.ks_digits(), 1usize << p.log_bks, p.n + 1);
        let entries = p.ring_n() * dks * base;
        if key.ksk.len() != entries * stride {
            return Err(Error::DimensionMismatch {
                what: "key-switching key",
                expected: entries * stride,
                found: key.ksk.len(),
            });
        }
        let qks = 1i64 << p.log_qks;
        let centred = |x: i64| (x + qks / 2).rem_euclid(qks) - qks / 2;
        let (mut ks_mean, mut ks_var) = (0.0, 0.0);
        for (group, &sn) in key.ksk.chunks_exact(dks * base * stride).zip(&self.ring) {
            let sn = i64::from(sn);
            for (j, digit) in group.chunks_exact(base * stride).enumerate() {
                let shift = p.log_bks as usize * j;
                let bits = p.log_bks.min(p.log_qks.saturating_sub(shift as u32));
                let count = 1usize << bits;
                let (mut m1, mut m2) = (0.0, 0.0);
                for (v, row) in digit.chunks_exact(stride).enumerate().take(count).skip(1) {
                    let Some((&body, mask)) = row.split_last() else { continue };
                    let inner: i64 = mask.iter().zip(&self.lwe).map(|(&a, &s)| i64::from(a) * i64::from(s)).sum();
                    let e = centred(i64::from(body) - inner - ((v as i64) << shift) * sn) as f64;
                    m1 += e / count as f64;
                    m2 += e * e / count as f64;
                }
                // The switch subtracts the rows' bodies.
                ks_mean -= m1;
                ks_var += m2 - m1 * m1;
            }
        }
        let weight = |s: &[i8]| s.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>();
        let lwe_sum: f64 = self.lwe.iter().map(|&x| f64::from(x)).sum();
        let (qks, big_q, q) = (qks as f64, f64::from(p.ring_q), f64::from(p.q()));
        let mod_switch = p.noise().blind_rotation * (qks / big_q).powi(2) + (1.0 + weight(&self.ring)) / 12.0;
        // The final rounding drops `down` bits, half up: error (round(t / 2^down) 2^down - t) /
        // 2^down over the residues t, uniform.
        let down = p.log_qks - p.log_q;
        let steps = 1u32 << down;
        let (mut r_mean, mut r_m2) = (0.0, 0.0);
        for t in 0..steps {
            let r = f64::from(((t + steps / 2) >> down) * steps) / f64::from(steps) - f64::from(t) / f64::from(steps);
            r_mean += r / f64::from(steps);
            r_m2 += r * r / f64::from(steps);
        }
        let r_var = r_m2 - r_mean * r_mean;
        Ok(KeyNoise {
            mean: ks_mean * q / qks + r_mean * (1.0 - lwe_sum),
            variance: (mod_switch + ks_var) * (q / qks).powi(2) + (1.0 + weight(&self.lwe)) * r_var,
        })
    }
}

/// Sample extraction from the accumulator `acc` (coefficient form, `a` then `b`), `Q -> q_ks`,
/// table key switch, `q_ks -> q`: the tail of every bootstrap, CPU and GPU alike.
#[expect(clippy::indexing_slicing, reason = "indices below N and n + 1, lengths checked on entry")]
pub(crate) fn extract_and_switch(key: &EvaluationKey, acc: &[u32]) -> Result<LweCiphertext> {
    let ctx = &key.ctx;
    let p = &ctx.params;
    let n_ring = p.ring_n();
    if acc.len() != 2 * n_ring {
        return Err(Error::DimensionMismatch { what: "accumulator", expected: 2 * n_ring, found: acc.len() });
    }
    let big_q = u64::from(p.ring_q);
    let qks = 1u64 << p.log_qks;
    let ms = |x: u32| -> u32 { ((u64::from(x) * qks + big_q / 2) / big_q) as u32 };
    let (acc_a, acc_b) = acc.split_at(n_ring);
    let m = &ctx.tables.m;
    let b = ms(acc_b[0]);
    let dks = p.ks_digits();
    let base = 1usize << p.log_bks;
    let stride = p.n + 1;
    let mask_ks = (qks - 1) as u32;
    let mut sum = vec![0u16; stride];
    let arch = pulp::Arch::new();
    for i in 0..n_ring {
        let ai = if i == 0 { acc_a[0] } else { m.neg(acc_a[n_ring - i]) };
        let mut x = ms(ai) & mask_ks;
        for j in 0..dks {
            let v = (x as usize) & (base - 1);
            x >>= p.log_bks;
            if v == 0 {
                continue;
            }
            let start = ((i * dks + j) * base + v) * stride;
            arch.dispatch(AddRow { sum: &mut sum, row: &key.ksk[start..start + stride] });
        }
    }
    let down = p.log_qks - p.log_q;
    let half = if down == 0 { 0 } else { 1u32 << (down - 1) };
    let q_mask = p.q() - 1;
    let to_q = |x: u32| ((x + half) >> down) & q_mask;
    let a: Vec<u32> = sum[..p.n].iter().map(|&s| to_q(u32::from(s.wrapping_neg()) & mask_ks)).collect();
    let bb = to_q(b.wrapping_sub(u32::from(sum[p.n])) & mask_ks);
    Ok(LweCiphertext { a, b: bb, key_id: key.key_id })
}

/// `sum += row` in `u16` words (wrapping), under the widest SIMD level.
struct AddRow<'a> {
    sum: &'a mut [u16],
    row: &'a [u16],
}

impl pulp::NullaryFnOnce for AddRow<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        for (s, &r) in self.sum.iter_mut().zip(self.row) {
            *s = s.wrapping_add(r);
        }
    }
}

/// Two-input gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Gate {
    /// `a & b`.
    And,
    /// `a | b`.
    Or,
    /// `!(a & b)`.
    Nand,
    /// `!(a | b)`.
    Nor,
    /// `a ^ b`.
    Xor,
    /// `!(a ^ b)`.
    Xnor,
}

impl Gate {
    /// All two-input gates.
    pub const ALL: [Self; 6] = [Self::And, Self::Or, Self::Nand, Self::Nor, Self::Xor, Self::Xnor];

    /// Plain evaluation.
    #[must_use]
    pub fn eval(self, a: bool, b: bool) -> bool {
        match self {
            Self::And => a & b,
            Self::Or => a | b,
            Self::Nand => !(a & b),
            Self::Nor => !(a | b),
            Self::Xor => a ^ b,
            Self::Xnor => !(a ^ b),
        }
    }

    /// Lower-case name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::And => "and",
            Self::Or => "or",
            Self::Nand => "nand",
            Self::Nor => "nor",
            Self::Xor => "xor",
            Self::Xnor => "xnor",
        }
    }

    /// `(sign of the sum, factor, offset in eighths of q)`: the bootstrap input is
    /// `sign * factor * (a + b) + offset * q / 8`.
    const fn linear(self) -> (bool, u32, u32) {
        match self {
            Self::And => (false, 1, 5), // sum - 3q/8
            Self::Or => (false, 1, 7),  // sum - q/8
            Self::Nand => (true, 1, 3), // 3q/8 - sum
            Self::Nor => (true, 1, 1),  // q/8 - sum
            Self::Xor => (false, 2, 6), // 2 sum - q/4
            Self::Xnor => (true, 2, 2), // q/4 - 2 sum
        }
    }
}

/// Evaluates gates with one evaluation key (and per-evaluator scratch space).
#[derive(Debug, Clone)]
pub struct GateEvaluator {
    key: Arc<EvaluationKey>,
    scratch: Scratch,
    sign_tv: Vec<u32>,
}

impl GateEvaluator {
    /// An evaluator of `key`.
    #[must_use]
    pub fn new(key: Arc<EvaluationKey>) -> Self {
        let p = &key.ctx.params;
        let mu = ((u64::from(p.ring_q) + 4) / 8) as u32;
        let sign_tv = vec![mu; p.ring_n()];
        let scratch = Scratch::new(p);
        Self { key, scratch, sign_tv }
    }

    /// The key.
    #[must_use]
    pub fn key(&self) -> &Arc<EvaluationKey> {
        &self.key
    }

    fn check(&self, ct: &LweCiphertext) -> Result<()> {
        check_id(self.key.key_id, ct.key_id)?;
        let n = self.key.ctx.params.n;
        if ct.a.len() != n {
            return Err(Error::DimensionMismatch { what: "LWE mask", expected: n, found: ct.a.len() });
        }
        Ok(())
    }

    /// Bootstraps `ct` through the test vector `tv` (`N` residues mod `Q`): the result's phase
    /// is about `tv[j] q / Q` for an input phase `j q / 2N`, `j < N` (negacyclic beyond).
    pub fn bootstrap(&mut self, ct: &LweCiphertext, tv: &[u32]) -> Result<LweCiphertext> {
        self.check(ct)?;
        let ctx = Arc::clone(&self.key.ctx);
        let p = &ctx.params;
        let n_ring = p.ring_n();
        if tv.len() != n_ring {
            return Err(Error::DimensionMismatch { what: "test vector", expected: n_ring, found: tv.len() });
        }
        let shift = p.log_ring + 1 - p.log_q;
        let two_n_mask = (2u32 << p.log_ring) - 1;
        let a2n: Vec<u32> = ct.a.iter().map(|&x| (x << shift) & two_n_mask).collect();
        let b2n = (ct.b << shift) & two_n_mask;
        blind_rotate(&ctx.tables, p, &self.key.bk, &a2n, b2n, tv, &mut self.scratch)?;
        self.extract_and_switch()
    }

    /// Sample extraction, `Q -> q_ks`, key switch, `q_ks -> q`, from the accumulator in scratch.
    fn extract_and_switch(&mut self) -> Result<LweCiphertext> {
        extract_and_switch(&self.key, &self.scratch.acc)
    }

    fn combine(&self, inputs: &[&LweCiphertext], neg: bool, factor: u32, offset_eighths: u32) -> Result<LweCiphertext> {
        let p = &self.key.ctx.params;
        let q = p.q();
        let mask = q - 1;
        let mut a = vec![0u32; p.n];
        let mut b = 0u32;
        for ct in inputs {
            self.check(ct)?;
            for (o, &x) in a.iter_mut().zip(&ct.a) {
                *o = o.wrapping_add(x);
            }
            b = b.wrapping_add(ct.b);
        }
        let f = if neg { factor.wrapping_neg() } else { factor };
        for o in a.iter_mut() {
            *o = o.wrapping_mul(f) & mask;
        }
        let b = b.wrapping_mul(f).wrapping_add(offset_eighths * (q / 8)) & mask;
        Ok(LweCiphertext { a, b, key_id: self.key.key_id })
    }

    fn sign_bootstrap(&mut self, ct: &LweCiphertext) -> Result<LweCiphertext> {
        let tv = std::mem::take(&mut self.sign_tv);
        let r = self.bootstrap(ct, &tv);
        self.sign_tv = tv;
        let mut out = r?;
        let q = self.key.ctx.params.q();
        out.b = out.b.wrapping_add(q / 8) & (q - 1);
        Ok(out)
    }

    /// The bootstrap input of a two-input gate (linear, no bootstrap).
    pub(crate) fn combine_gate(&self, gate: Gate, a: &LweCiphertext, b: &LweCiphertext) -> Result<LweCiphertext> {
        let (neg, factor, off) = gate.linear();
        self.combine(&[a, b], neg, factor, off)
    }

    /// The bootstrap input of the majority of three (linear, no bootstrap).
    pub(crate) fn combine_majority(
        &self,
        a: &LweCiphertext,
        b: &LweCiphertext,
        c: &LweCiphertext,
    ) -> Result<LweCiphertext> {
        self.combine(&[a, b, c], false, 1, 5)
    }

    /// The sign test vector (`round(Q/8)` everywhere).
    pub(crate) fn sign_test_vector(&self) -> &[u32] {
        &self.sign_tv
    }

    /// A two-input gate: one bootstrap.
    ///
    /// Errors with [`Error::GateKeyMismatch`] if an input belongs to another key.
    pub fn gate(&mut self, gate: Gate, a: &LweCiphertext, b: &LweCiphertext) -> Result<LweCiphertext> {
        let ct = self.combine_gate(gate, a, b)?;
        self.sign_bootstrap(&ct)
    }

    /// `a & b`.
    pub fn and(&mut self, a: &LweCiphertext, b: &LweCiphertext) -> Result<LweCiphertext> {
        self.gate(Gate::And, a, b)
    }

    /// `a | b`.
    pub fn or(&mut self, a: &LweCiphertext, b: &LweCiphertext) -> Result<LweCiphertext> {
        self.gate(Gate::Or, a, b)
    }

    /// `a ^ b`.
    pub fn xor(&mut self, a: &LweCiphertext, b: &LweCiphertext) -> Result<LweCiphertext> {
        self.gate(Gate::Xor, a, b)
    }

    /// `!a`: linear, no bootstrap (`q/4 - ct`).
    pub fn not(&self, a: &LweCiphertext) -> Result<LweCiphertext> {
        self.check(a)?;
        let q = self.key.ctx.params.q();
        let mask = q - 1;
        Ok(LweCiphertext {
            a: a.a.iter().map(|&x| x.wrapping_neg() & mask).collect(),
            b: (q / 4).wrapping_sub(a.b) & mask,
            key_id: a.key_id,
        })
    }

    /// `s ? a : b` as `OR(AND(s, a), AND(!s, b))`: three bootstraps.
    pub fn mux(&mut self, s: &LweCiphertext, a: &LweCiphertext, b: &LweCiphertext) -> Result<LweCiphertext> {
        let x = self.and(s, a)?;
        let ns = self.not(s)?;
        let y = self.and(&ns, b)?;
        self.or(&x, &y)
    }

    /// `a & b & c`: two bootstraps.
    pub fn and3(&mut self, a: &LweCiphertext, b: &LweCiphertext, c: &LweCiphertext) -> Result<LweCiphertext> {
        let x = self.and(a, b)?;
        self.and(&x, c)
    }

    /// `a | b | c`: two bootstraps.
    pub fn or3(&mut self, a: &LweCiphertext, b: &LweCiphertext, c: &LweCiphertext) -> Result<LweCiphertext> {
        let x = self.or(a, b)?;
        self.or(&x, c)
    }

    /// Majority of three: one bootstrap of `a + b + c - 3q/8`.
    pub fn majority(&mut self, a: &LweCiphertext, b: &LweCiphertext, c: &LweCiphertext) -> Result<LweCiphertext> {
        let ct = self.combine_majority(a, b, c)?;
        self.sign_bootstrap(&ct)
    }

    /// Programmable bootstrapping of a `bits`-bit message (`1 <= bits <= 4`, encoded as by
    /// [`SecretKey::encrypt_message`]) through `table` (`2^bits` entries below `2^bits`).
    ///
    /// Errors with [`Error::GateMessage`] for a bad table or width.
    pub fn lut(&mut self, ct: &LweCiphertext, bits: u32, table: &[u32]) -> Result<LweCiphertext> {
        let ctx = Arc::clone(&self.key.ctx);
        let delta = ctx.message_delta(bits)?;
        if table.len() != 1 << bits {
            return Err(Error::GateMessage { value: table.len() as u64, bits });
        }
        if let Some(&bad) = table.iter().find(|&&v| u64::from(v) >= 1 << bits) {
            return Err(Error::GateMessage { value: u64::from(bad), bits });
        }
        let p = &ctx.params;
        let n_ring = p.ring_n();
        let big_q = u64::from(p.ring_q);
        let out_delta = (big_q + (1 << bits)) >> (bits + 1);
        let tv = lut_test_vector(table, n_ring, out_delta, big_q);
        self.check(ct)?;
        let q = p.q();
        let mut shifted = ct.clone();
        shifted.b = shifted.b.wrapping_add(delta / 2) & (q - 1);
        self.bootstrap(&shifted, &tv)
    }
}

/// The test vector of a lookup table of `2^bits` entries for a ring of degree `n_ring`:
/// coefficient `j` holds entry `(j 2^bits) / N` times `out_delta` mod `big_q`, so each entry fills
/// `N / 2^bits` consecutive coefficients (`N >= 16 >= 2^bits` for every valid set).
fn lut_test_vector(table: &[u32], n_ring: usize, out_delta: u64, big_q: u64) -> Vec<u32> {
    let run = n_ring / table.len().max(1);
    table.iter().flat_map(|&v| std::iter::repeat_n((u64::from(v) * out_delta % big_q) as u32, run)).collect()
}

#[cfg(test)]
mod tests;
