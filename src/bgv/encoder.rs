//! BGV plaintexts and their encodings.
//!
//! A [`Plaintext`] is a polynomial with coefficients mod `t`. Two encodings fill it:
//!
//! * **batch** (`t` prime, `t = 1 mod 2N`): `N` slots seen as a `2 x N/2` matrix. Slot `(r, c)`
//!   holds the evaluation of the plaintext polynomial at `psi_t^e` with `e = 3^c mod 2N` for row 0
//!   and `e = -3^c mod 2N` for row 1, so the automorphism `X -> X^(3^k)` rotates both rows left by
//!   `k` and `X -> X^(2N-1)` swaps the rows. The slot vector is row-major: index `r * N/2 + c`.
//!   Encoding is an inverse NTT mod `t`, decoding a forward NTT.
//! * **coefficient**: values are the coefficients themselves (any `t >= 2` coprime to `Q`).

use crate::error::{Error, Result};
use crate::math::ntt::{bit_reverse, NttTable};
use crate::math::zq::Modulus;

/// A BGV plaintext: `N` coefficients mod `t`. Its `Debug` output does not show them.
#[derive(Clone, PartialEq, Eq)]
pub struct Plaintext {
    pub(crate) coeffs: Vec<u32>,
    pub(crate) param_id: u64,
}

impl std::fmt::Debug for Plaintext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plaintext")
            .field("n", &self.coeffs.len())
            .field("param_id", &self.param_id)
            .finish_non_exhaustive()
    }
}

impl Plaintext {
    /// The coefficients (mod t).
    #[must_use]
    pub fn coefficients(&self) -> &[u32] {
        &self.coeffs
    }

    /// Id of the parameters it was made for.
    #[must_use]
    pub fn param_id(&self) -> u64 {
        self.param_id
    }
}

/// The encoder of one parameter set.
#[derive(Debug, Clone)]
pub struct Encoder {
    t: Modulus,
    n: usize,
    param_id: u64,
    ntt: Option<NttTable>,
    /// Eval-domain index of every slot.
    slot_index: Vec<usize>,
}

impl Encoder {
    /// The encoder for `t` and `N = 2^log_n`; batching is set up when `t = 1 mod 2N` is prime.
    pub fn new(t: Modulus, log_n: u32, param_id: u64, batching: bool) -> Result<Self> {
        let n = 1usize << log_n;
        let (ntt, slot_index) = if batching {
            let ntt = NttTable::new(t, n)?;
            let two_n = 2 * n as u64;
            let half = n / 2;
            let mut slot_index = vec![0usize; n];
            let mut e = 1u64;
            for c in 0..half {
                let row1 = two_n - e;
                if let Some(s) = slot_index.get_mut(c) {
                    *s = bit_reverse(((e - 1) / 2) as usize, log_n);
                }
                if let Some(s) = slot_index.get_mut(half + c) {
                    *s = bit_reverse(((row1 - 1) / 2) as usize, log_n);
                }
                e = e * 3 % two_n;
            }
            (Some(ntt), slot_index)
        } else {
            (None, Vec::new())
        };
        Ok(Self { t, n, param_id, ntt, slot_index })
    }

    /// Number of slots (`N`, as a `2 x N/2` matrix), or 0 without batching.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slot_index.len()
    }

    fn batching(&self) -> Result<&NttTable> {
        self.ntt.as_ref().ok_or(Error::BatchingUnavailable { t: u64::from(self.t.value()), n: self.n as u64 })
    }

    fn check_len(&self, len: usize) -> Result<()> {
        if len > self.n {
            return Err(Error::TooManyValues { given: len, slots: self.n });
        }
        Ok(())
    }

    fn reduce_unsigned(&self, values: &[u64]) -> Result<Vec<u32>> {
        let t = u64::from(self.t.value());
        values
            .iter()
            .enumerate()
            .map(
                |(index, &v)| {
                    if v >= t {
                        Err(Error::ValueOutOfRange { index, min: 0, max: (t - 1) as i64 })
                    } else {
                        Ok(v as u32)
                    }
                },
            )
            .collect()
    }

    fn reduce_signed(&self, values: &[i64]) -> Result<Vec<u32>> {
        let t = i64::from(self.t.value());
        let (min, max) = (-(t - 1) / 2, t / 2);
        values
            .iter()
            .enumerate()
            .map(|(index, &v)| {
                if v < min || v > max {
                    Err(Error::ValueOutOfRange { index, min, max })
                } else {
                    Ok(self.t.reduce_i64(v))
                }
            })
            .collect()
    }

    fn batch(&self, values: Vec<u32>) -> Result<Plaintext> {
        let ntt = self.batching()?;
        let mut eval = vec![0u32; self.n];
        for (&v, &i) in values.iter().zip(&self.slot_index) {
            if let Some(slot) = eval.get_mut(i) {
                *slot = v;
            }
        }
        ntt.inverse(&mut eval)?;
        Ok(Plaintext { coeffs: eval, param_id: self.param_id })
    }

    /// Batch-encodes values in `[0, t)` (missing slots are zero).
    pub fn encode(&self, values: &[u64]) -> Result<Plaintext> {
        self.check_len(values.len())?;
        let v = self.reduce_unsigned(values)?;
        self.batch(v)
    }

    /// Batch-encodes signed values in `[-(t-1)/2, t/2]`.
    pub fn encode_signed(&self, values: &[i64]) -> Result<Plaintext> {
        self.check_len(values.len())?;
        let v = self.reduce_signed(values)?;
        self.batch(v)
    }

    /// Coefficient encoding of values in `[0, t)`.
    pub fn encode_coeffs(&self, values: &[u64]) -> Result<Plaintext> {
        self.check_len(values.len())?;
        let mut coeffs = self.reduce_unsigned(values)?;
        coeffs.resize(self.n, 0);
        Ok(Plaintext { coeffs, param_id: self.param_id })
    }

    /// Coefficient encoding of signed values in `[-(t-1)/2, t/2]`.
    pub fn encode_coeffs_signed(&self, values: &[i64]) -> Result<Plaintext> {
        self.check_len(values.len())?;
        let mut coeffs = self.reduce_signed(values)?;
        coeffs.resize(self.n, 0);
        Ok(Plaintext { coeffs, param_id: self.param_id })
    }

    fn check_pt(&self, pt: &Plaintext) -> Result<()> {
        if pt.param_id != self.param_id {
            return Err(Error::ParameterMismatch { expected: self.param_id, found: pt.param_id });
        }
        if pt.coeffs.len() != self.n {
            return Err(Error::DimensionMismatch {
                what: "plaintext coefficients",
                expected: self.n,
                found: pt.coeffs.len(),
            });
        }
        Ok(())
    }

    /// Decodes the slots, values in `[0, t)`.
    pub fn decode(&self, pt: &Plaintext) -> Result<Vec<u64>> {
        self.check_pt(pt)?;
        let ntt = self.batching()?;
        let mut eval = pt.coeffs.clone();
        ntt.forward(&mut eval)?;
        self.slot_index
            .iter()
            .map(|&i| {
                eval.get(i).map(|&v| u64::from(v)).ok_or(Error::DimensionMismatch {
                    what: "slot index",
                    expected: eval.len(),
                    found: i,
                })
            })
            .collect()
    }

    /// Decodes the slots as centred values in `[-(t-1)/2, t/2]`.
    pub fn decode_signed(&self, pt: &Plaintext) -> Result<Vec<i64>> {
        Ok(self.decode(pt)?.into_iter().map(|v| self.t.center(v as u32)).collect())
    }

    /// The coefficients, values in `[0, t)`.
    pub fn decode_coeffs(&self, pt: &Plaintext) -> Result<Vec<u64>> {
        self.check_pt(pt)?;
        Ok(pt.coeffs.iter().map(|&c| u64::from(c)).collect())
    }
}
