//! The client/server split of the encrypted models: each party's steps on its own, for a client
//! and a server that share only the parameters, the evaluation keys and ciphertexts (as wire
//! bytes). [`super::infer::run_lr`] and [`super::cnn_infer::run_cnn`] play both parties in one
//! process; the Python package (`python/`) uses these steps across processes and machines.
//!
//! | step | party | logistic regression | CNN |
//! |---|---|---|---|
//! | keys | client | none (integer weights, a plaintext bias) | [`super::cnn_infer::CnnCircuit::rotation_steps`] + relinearisation |
//! | inputs | client | [`lr_client_columns`]: one slot vector per pixel | [`cnn_client_columns`]: 25 slot vectors |
//! | evaluation | server | [`lr_server_score`] | [`super::cnn_infer::CnnCircuit::evaluate_with`] |
//! | result | client | slot `s` holds image `s`'s score | [`cnn_scores`]: slots `256 i .. 256 i + 10` |
//!
//! The server never needs the secret key: it holds the evaluation keys, the model (its own
//! plaintext) and the client's ciphertexts.
//!
//! ```
//! use wgfhe::bgv::Bgv;
//! use wgfhe::compress::{Bxt, Variant};
//! use wgfhe_mnist::lr::QuantLr;
//! use wgfhe_mnist::split::{lr_client_columns, lr_server_score};
//! use wgfhe::params::{insecure_test_bgv, TestRing};
//!
//! let p = insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 12289)?;
//! let model = QuantLr::new(vec![3, -2, 1], -4, 4)?;
//! let images: [&[u8]; 2] = [&[1, 2, 3], &[15, 0, 7]];
//! // Client: keys and ciphertexts; only the ciphertexts' bytes leave it.
//! let client = Bgv::cpu(&p)?;
//! let sk = client.gen_secret_key()?;
//! let bxt = Bxt::new(&client, Variant::Cso);
//! let cts = lr_client_columns(&images, 3, client.encoder().slots())?
//!     .iter()
//!     .map(|col| bxt.to_bytes(&bxt.encrypt(&sk, &client.encoder().encode(col)?)?))
//!     .collect::<wgfhe::Result<Vec<_>>>()?;
//! // Server: no secret key.
//! let server = Bgv::cpu(&p)?;
//! let sbxt = Bxt::new(&server, Variant::Cso);
//! let inputs = cts.iter().map(|b| sbxt.from_bytes(b)).collect::<wgfhe::Result<Vec<_>>>()?;
//! let score = sbxt.to_bytes(&lr_server_score(&sbxt, &model, &inputs)?)?;
//! // Client: decrypt.
//! let got = client.encoder().decode_signed(&bxt.decrypt(&sk, &bxt.from_bytes(&score)?)?)?;
//! assert_eq!(got[..2], [3 - 4 + 3 - 4, 45 + 7 - 4]);
//! # Ok::<(), wgfhe::Error>(())
//! ```

use super::cnn::{patches, CLASSES, TAPS};
use super::lr::QuantLr;
use super::mnist::Image;
use wgfhe::backend::Backend;
use wgfhe::compress::{Bxt, BxtCiphertext, Weight};
use wgfhe::error::{Error, Result};
use wgfhe::math::zq::Modulus;

/// Slots per image: each image of a batch owns a block of this many consecutive slots.
pub const BLOCK: usize = 256;

/// The logistic regression's client inputs for one batch: `dim` slot vectors of `slots` values,
/// vector `i` holding pixel `i` of image `s` in slot `s`. Errors: more images than slots, an
/// image without `dim` pixels ([`Error::DimensionMismatch`]).
pub fn lr_client_columns(images: &[&[u8]], dim: usize, slots: usize) -> Result<Vec<Vec<u64>>> {
    if images.len() > slots {
        return Err(Error::DimensionMismatch { what: "images in a batch", expected: slots, found: images.len() });
    }
    let mut cols = vec![vec![0u64; slots]; dim];
    for (s, q) in images.iter().enumerate() {
        if q.len() != dim {
            return Err(Error::DimensionMismatch { what: "sample pixels", expected: dim, found: q.len() });
        }
        for (col, &x) in cols.iter_mut().zip(q.iter()) {
            if let Some(slot) = col.get_mut(s) {
                *slot = u64::from(x);
            }
        }
    }
    Ok(cols)
}

/// The server's step of the logistic regression: `S = sum_i w_i x_i + b` on one batch's pixel
/// ciphertexts (one per weight, all at one level), the bias prepared at the inputs' level and
/// correction factor. Errors: [`Error::BoundTooLarge`] if the model's worst-case score does not
/// fit the plaintext modulus (`2 bound < t`); [`Error::DimensionMismatch`] for a wrong number
/// of inputs; the evaluator's errors (inputs of other parameters or levels).
pub fn lr_server_score<B: Backend>(
    bxt: &Bxt<'_, B>,
    model: &QuantLr,
    inputs: &[BxtCiphertext<B>],
) -> Result<BxtCiphertext<B>> {
    let bgv = bxt.bgv();
    let t = u64::from(bgv.plaintext_modulus());
    let bound = model.bound();
    if bound.saturating_mul(2) >= t {
        return Err(Error::BoundTooLarge { bound, limit: (t - 1) / 2 });
    }
    if inputs.len() != model.weights().len() {
        return Err(Error::DimensionMismatch {
            what: "input ciphertexts",
            expected: model.weights().len(),
            found: inputs.len(),
        });
    }
    let slots = bgv.encoder().slots();
    if slots == 0 {
        return Err(Error::BatchingUnavailable { t, n: bgv.params().n() as u64 });
    }
    let (level, factor) = inputs.first().map_or((bgv.max_level(), 1), |c| (c.level(), c.correction_factor()));
    let tm = Modulus::new(t)?;
    let bias = bgv.prepare_plain_with_factor(
        &bgv.encoder().encode(&vec![u64::from(tm.reduce_i64(model.bias())); slots])?,
        level,
        factor,
    )?;
    let terms: Vec<(Weight<'_>, &BxtCiphertext<B>)> =
        model.weights().iter().zip(inputs).map(|(&w, c)| (Weight::Int(w), c)).collect();
    bxt.weighted_sum_prepared(&terms, Some(&bias))
}

/// The CNN's client inputs for one batch: the 25 slot vectors of [`super::cnn_infer`]'s packing
/// (image `i` in slots `256 i ..`, its im2col matrix tap by tap). Errors: more images than
/// `slots / 256` ([`Error::DimensionMismatch`]).
pub fn cnn_client_columns(images: &[&Image], slots: usize) -> Result<Vec<Vec<u64>>> {
    let per = slots / BLOCK;
    if images.len() > per {
        return Err(Error::DimensionMismatch { what: "images in a batch", expected: per, found: images.len() });
    }
    let mut cols = vec![vec![0u64; slots]; TAPS];
    for (i, img) in images.iter().enumerate() {
        for (p, patch) in patches(img).iter().enumerate() {
            for (k, &x) in patch.iter().enumerate() {
                if let Some(slot) = cols.get_mut(k).and_then(|c| c.get_mut(i * BLOCK + p)) {
                    *slot = u64::from(x);
                }
            }
        }
    }
    Ok(cols)
}

/// The ten scores of each of the first `images` images of a batch, from the decrypted (signed)
/// slots of the CNN's result. Errors: fewer slots than the images need.
pub fn cnn_scores(slots: &[i64], images: usize) -> Result<Vec<Vec<i64>>> {
    (0..images)
        .map(|i| {
            let range = i * BLOCK..i * BLOCK + CLASSES;
            slots.get(range.clone()).map(<[i64]>::to_vec).ok_or(Error::DimensionMismatch {
                what: "decoded slots",
                expected: range.end,
                found: slots.len(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn lr_columns_put_image_s_in_slot_s() {
        let a: &[u8] = &[1, 2];
        let b: &[u8] = &[3, 4];
        assert_eq!(lr_client_columns(&[a, b], 2, 4).unwrap(), vec![vec![1, 3, 0, 0], vec![2, 4, 0, 0]]);
        assert!(lr_client_columns(&[a, b], 3, 4).is_err());
        assert!(lr_client_columns(&[a, b, a], 2, 2).is_err());
    }

    #[test]
    fn cnn_scores_read_each_block() {
        let mut slots = vec![0i64; 2 * BLOCK];
        slots[BLOCK + 9] = -5;
        let s = cnn_scores(&slots, 2).unwrap();
        assert_eq!(s[1][9], -5);
        assert_eq!(s[0], vec![0; CLASSES]);
        assert!(cnn_scores(&slots, 3).is_err());
        assert!(cnn_client_columns(&[&[0u8; super::super::mnist::PIXELS]; 3], 2 * BLOCK).is_err());
    }
}
