//! Encrypted inference of the quantised logistic regression (MNIST 3 vs 8).
//!
//! Packing (the BXT paper's layout, the study's layout 1): one ciphertext per pixel, image `s`
//! of a batch in slot `s`, so a batch holds as many images as there are slots. The client
//! encrypts the 784 pixel ciphertexts with seeded symmetric encryption (their `a` halves stay
//! seeds under every variant but the baseline); the server computes
//! `S = sum_i w_i x_i + b` with the integer weights as scalars and the bias a plaintext
//! prepared once for all batches ([`Bxt::weighted_sum_prepared`]: one fused kernel per 16
//! inputs under `cso`, the `a` half generated at the end); the client
//! decrypts `S` and predicts `S >= 0`. The parameters must hold the model's worst-case
//! bound, `2 bound < t`, or the run is refused ([`Error::BoundTooLarge`]).
//!
//! The decision `S >= 0` is taken by the client after decryption. An encrypted sign would be a
//! lookup table on `[-bound, bound]` (`bound` about `10^5` for 784 four-bit pixels and weights):
//! degree `2 bound`, depth about 18, on 784 ciphertexts at `N = 2^16` (about 9 GB of seeded
//! ciphertexts): out of reach of the machines this was written on, and not run.

use std::time::Instant;

use serde::Serialize;

use super::checkpoint::{sha256_hex, Checkpoint, CheckpointConfig, Digester};
use super::lr::{Dataset, QuantLr};
use wgfhe::backend::ledger::{write_trace, Ledger, Totals};
use wgfhe::backend::{Backend, ShapeBackend};
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, BxtCiphertext, Variant, Weight};
use wgfhe::error::{Error, Result};
use wgfhe::math::zq::Modulus;

/// What an encrypted run measured.
#[derive(Debug, Clone, Serialize)]
pub struct LrRun {
    /// Images classified.
    pub images: usize,
    /// Batches (one per `slots` images).
    pub batches: usize,
    /// Fraction of images whose encrypted prediction is the label.
    pub accuracy: f64,
    /// Fraction of images whose encrypted prediction equals the quantised plaintext model's.
    pub agreement: f64,
    /// Images whose decrypted score differs from the plaintext score (0 when exact).
    pub score_mismatches: usize,
    /// Client encryption time, all batches.
    pub encrypt_ms: f64,
    /// Server time, all batches (the homomorphic layer).
    pub server_ms: f64,
    /// Server time per batch (the mean).
    pub batch_ms: f64,
    /// Server time per image.
    pub per_image_ms: f64,
    /// Client decryption time, all batches.
    pub decrypt_ms: f64,
    /// Bytes the input ciphertexts of one batch keep resident on the backend, plus the result.
    pub peak_device_bytes: u64,
    /// Resident bytes of the evaluation keys the server holds: always 0, the weighted sum
    /// multiplies by integers and adds a plaintext, so no key is generated.
    pub key_bytes: u64,
    /// Bytes read and written by the server's kernels (traffic ledger), all batches.
    pub bytes_moved: u64,
    /// GPU compute dispatches of the server's backend calls, all batches (the traffic ledger's
    /// model of the GPU engine, the same on every backend).
    pub gpu_dispatches: u64,
    /// On a device: host time of building the server's pipelines before the first batch (one
    /// evaluation of the weighted sum on a placeholder input with recording off,
    /// [`Backend::build_pipelines`]), not in `server_ms`; 0 elsewhere.
    pub pipeline_build_ms: f64,
    /// Pipelines that build compiled.
    pub pipelines_prebuilt: u64,
    /// On a device (`None` elsewhere), counted by it inside the timed server evaluations, all
    /// batches: pipelines compiled there (0 when the build before the batches covered them)...
    pub pipelines_built_in_batches: Option<u64>,
    /// ... bytes of data uploaded there (buffers and tables: 0 when the server uploads nothing
    /// but its inputs, which the client uploaded before) ...
    pub server_data_upload_bytes: Option<u64>,
    /// ... and bytes of dispatch parameters uploaded there.
    pub server_parameter_bytes: Option<u64>,
}

/// What [`run_lr`] runs.
#[derive(Debug, Clone, Copy)]
pub struct LrOptions {
    /// The first `images` samples of the data set (all if `None`).
    pub images: Option<usize>,
    /// BXT variant of the inputs and the weighted sum.
    pub variant: Variant,
    /// A timed ledger ([`Ledger::timed`]): the trace records carry each dispatch's
    /// `elapsed_ns`, and each batch's server evaluation runs once untimed first so that pipeline
    /// builds are not counted. Timing serialises the queue: `server_ms` is then slower.
    pub timed: bool,
}

/// Runs the quantised model under encryption on `data` as `options` say, on `backend`, calling
/// `progress(done, total)` after each batch. Writes the server's ledger records to `trace`
/// (JSON lines) if given.
pub fn run_lr<B: Backend>(
    backend: B,
    model: &QuantLr,
    data: &Dataset,
    options: LrOptions,
    progress: impl FnMut(usize, usize),
    trace: Option<&mut dyn std::io::Write>,
) -> Result<LrRun> {
    run_lr_with(backend, model, data, options, None, progress, trace)
}

/// The one stage of the LR circuit: the score of a batch.
pub const STAGES: [&str; 1] = ["score"];

/// [`run_lr`] with a checkpoint ([`super::checkpoint`]): with one, all of the key owner's
/// randomness derives from the checkpoint's seed, every batch's inputs are checked against the
/// checkpoint, a batch whose score ciphertext is stored is not evaluated again, and each score
/// computed is written before the next batch starts. Errors, besides [`run_lr`]'s: the
/// checkpoint's ([`Error::CheckpointMismatch`], [`Error::CheckpointFile`], [`Error::Io`],
/// [`Error::CheckpointStopped`]).
pub fn run_lr_with<B: Backend>(
    backend: B,
    model: &QuantLr,
    data: &Dataset,
    options: LrOptions,
    checkpoint: Option<&mut Checkpoint>,
    progress: impl FnMut(usize, usize),
    trace: Option<&mut dyn std::io::Write>,
) -> Result<LrRun> {
    run_lr_server(backend, model, data, options, checkpoint, progress, trace, Client::Verify).map(|(run, _)| run)
}

/// What a shape-only trace of the LR's server computation recorded ([`trace_lr_shapes`]).
/// Nothing was computed or decrypted: no scores, no accuracy.
#[derive(Debug, Clone, Serialize)]
pub struct LrShapeTrace {
    /// Images the batches were laid out for.
    pub images: usize,
    /// Batches.
    pub batches: usize,
    /// Ledger records of the server's evaluation, all batches.
    pub records: u64,
    /// Bytes the server's kernels would read and write.
    pub bytes_moved: u64,
    /// GPU compute dispatches the calls would make.
    pub gpu_dispatches: u64,
    /// Resident bytes of one batch's inputs and the result.
    pub peak_device_bytes: u64,
    /// Wall-clock time of the whole shape-only run, not a server time.
    pub elapsed_ms: f64,
}

/// Records the ledger trace of the LR's server computation as [`run_lr`] would run it with
/// `options` on `data`, on the shape-only backend over `ring` ([`ShapeBackend`]: word counts,
/// no residues): the same records in the same order as a real run's trace (tests/shape_trace.rs
/// checks it against the CPU backend). Nothing is computed, decrypted or checked. A shape-only
/// run has no times: `options.timed` is refused ([`Error::InvalidField`]).
pub fn trace_lr_shapes(
    ring: std::sync::Arc<wgfhe::ring::RingContext>,
    model: &QuantLr,
    data: &Dataset,
    options: LrOptions,
    progress: impl FnMut(usize, usize),
    trace: Option<&mut dyn std::io::Write>,
) -> Result<LrShapeTrace> {
    if options.timed {
        return Err(Error::InvalidField { field: "timed", reason: "a shape-only trace has no dispatch times" });
    }
    let clock = Instant::now();
    let (run, records) =
        run_lr_server(ShapeBackend::new(ring), model, data, options, None, progress, trace, Client::ShapeOnly)?;
    Ok(LrShapeTrace {
        images: run.images,
        batches: run.batches,
        records,
        bytes_moved: run.bytes_moved,
        gpu_dispatches: run.gpu_dispatches,
        peak_device_bytes: run.peak_device_bytes,
        elapsed_ms: clock.elapsed().as_secs_f64() * 1e3,
    })
}

/// What the client does with the server's result in [`run_lr_server`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// Decrypts every batch's scores and checks them against the quantised model.
    Verify,
    /// Nothing: the backend computes shapes only ([`trace_lr_shapes`]).
    ShapeOnly,
}

/// The run of [`run_lr_with`] (with `client` saying whether the scores are decrypted and
/// checked), and the number of ledger records of the server's evaluations.
#[expect(clippy::too_many_arguments, reason = "run_lr_with's arguments and the client's mode")]
fn run_lr_server<B: Backend>(
    backend: B,
    model: &QuantLr,
    data: &Dataset,
    options: LrOptions,
    mut checkpoint: Option<&mut Checkpoint>,
    mut progress: impl FnMut(usize, usize),
    mut trace: Option<&mut dyn std::io::Write>,
    client: Client,
) -> Result<(LrRun, u64)> {
    let LrOptions { images, variant, timed } = options;
    let bgv = Bgv::new(if timed { Ledger::timed(backend) } else { Ledger::new(backend) })?;
    let ledger = bgv.backend();
    let t = u64::from(bgv.plaintext_modulus());
    let bound = model.bound();
    if bound.saturating_mul(2) >= t {
        return Err(Error::BoundTooLarge { bound, limit: (t - 1) / 2 });
    }
    if data.dim() != model.weights().len() {
        return Err(Error::DimensionMismatch { what: "features", expected: model.weights().len(), found: data.dim() });
    }
    let total = images.unwrap_or(data.len()).min(data.len());
    let slots = bgv.encoder().slots();
    if slots == 0 {
        return Err(Error::BatchingUnavailable { t, n: bgv.params().n() as u64 });
    }
    let tm = Modulus::new(t)?;
    let sk = match checkpoint.as_deref_mut() {
        Some(cp) => {
            let mut digest = Digester::default();
            for i in 0..total {
                if let Some((q, label)) = data.sample(i) {
                    digest.update(q);
                    digest.update(&[u8::from(label)]);
                }
            }
            let config = CheckpointConfig {
                model: "lr".into(),
                params: bgv.params().name().to_owned(),
                param_id: format!("{:#018x}", bgv.params().id()),
                variant: variant.name().to_owned(),
                relu: None,
                kept_digits: None,
                images: total,
                images_per_batch: slots,
                model_sha256: sha256_hex(model.to_json()?.as_bytes()),
                data_sha256: digest.finish(),
                stages: STAGES.iter().map(|s| (*s).to_owned()).collect(),
            };
            bgv.gen_secret_key_from_seed(&cp.bind(config)?)?
        }
        None => bgv.gen_secret_key()?,
    };
    let bxt = Bxt::new(&bgv, variant);
    // The bias, prepared once for every batch: the pixel ciphertexts are fresh top-level
    // encryptions, so their weighted sum has the top level's correction factor.
    let top = bgv.max_level();
    let bias = bgv.prepare_plain_with_factor(
        &bgv.encoder().encode(&vec![u64::from(tm.reduce_i64(model.bias())); slots])?,
        top,
        bgv.level_correction(top)?,
    )?;
    // On a device, the server's pipelines are built before the first batch: one weighted sum
    // of placeholder ciphertexts (real encryptions of zeros) with recording off. The fused
    // kernels depend on the terms' formats and on which of them are the same ciphertext, not on
    // their values: `MAX_SUM_INPUTS` distinct placeholders, repeated, give every kernel
    // (at most that many terms) distinct ones, as the real inputs are.
    let (mut pipeline_build_ms, mut pipelines_prebuilt) = (0.0, 0);
    if ledger.device_counters().is_some() {
        let zero = bgv.encoder().encode(&vec![0; slots])?;
        let placeholders = (0..wgfhe::compress::MAX_SUM_INPUTS.min(data.dim()))
            .map(|_| bxt.encrypt(&sk, &zero))
            .collect::<Result<Vec<_>>>()?;
        let terms: Vec<(Weight<'_>, &BxtCiphertext<Ledger<B>>)> =
            model.weights().iter().zip(placeholders.iter().cycle()).map(|(&w, c)| (Weight::Int(w), c)).collect();
        ledger.synchronize()?;
        let clock = Instant::now();
        pipelines_prebuilt =
            ledger.build_pipelines(&mut || bxt.weighted_sum_prepared(&terms, Some(&bias)).map(drop))?;
        pipeline_build_ms = clock.elapsed().as_secs_f64() * 1e3;
        ledger.take();
    }
    let mut in_batches: Option<wgfhe::backend::gpu::DeviceCounters> = None;
    let (mut correct, mut agree, mut mismatches) = (0usize, 0usize, 0usize);
    let (mut encrypt_ms, mut server_ms, mut decrypt_ms) = (0.0, 0.0, 0.0);
    let (mut peak, mut bytes_moved, mut gpu_dispatches, mut batches) = (0u64, 0u64, 0u64, 0usize);
    let mut record_count = 0u64;
    let mut start_index = 0;
    while start_index < total {
        let end = (start_index + slots).min(total);
        let batch: Vec<(&[u8], bool)> = (start_index..end)
            .map(|i| {
                data.sample(i).ok_or(Error::DimensionMismatch { what: "samples", expected: end, found: data.len() })
            })
            .collect::<Result<_>>()?;
        // Client: one ciphertext per pixel, images across slots.
        let clock = Instant::now();
        let mut cts: Vec<BxtCiphertext<Ledger<B>>> = Vec::with_capacity(data.dim());
        for p in 0..data.dim() {
            let column: Vec<u64> = batch
                .iter()
                .map(|(q, _)| {
                    q.get(p).copied().map(u64::from).ok_or(Error::DimensionMismatch {
                        what: "sample pixels",
                        expected: data.dim(),
                        found: q.len(),
                    })
                })
                .collect::<Result<_>>()?;
            cts.push(bxt.encrypt(&sk, &bgv.encoder().encode(&column)?)?);
        }
        encrypt_ms += clock.elapsed().as_secs_f64() * 1e3;
        let mut stored = None;
        if let Some(cp) = checkpoint.as_deref_mut() {
            let clock = Instant::now();
            let mut digest = Digester::default();
            for c in &cts {
                digest.update(&bxt.to_bytes(c)?);
            }
            cp.begin_batch(batches, digest.finish(), clock.elapsed().as_secs_f64() * 1e3)?;
            stored = cp.resume(|bytes| bxt.from_bytes(bytes))?.and_then(|(_, mut v)| v.pop());
        }
        ledger.take();
        // Server: S = sum_i w_i x_i + b.
        let terms: Vec<(Weight<'_>, &BxtCiphertext<Ledger<B>>)> =
            model.weights().iter().zip(&cts).map(|(&w, c)| (Weight::Int(w), c)).collect();
        let score = match stored {
            Some(score) => score,
            None => {
                if timed {
                    drop(bxt.weighted_sum_prepared(&terms, Some(&bias))?);
                    ledger.synchronize()?;
                    ledger.take();
                }
                let before = ledger.device_counters();
                let clock = Instant::now();
                let score = bxt.weighted_sum_prepared(&terms, Some(&bias))?;
                ledger.synchronize()?;
                server_ms += clock.elapsed().as_secs_f64() * 1e3;
                if let (Some(b), Some(a)) = (before, ledger.device_counters()) {
                    let d = a - b;
                    let sum = in_batches.get_or_insert_with(Default::default);
                    sum.pipelines_built += d.pipelines_built;
                    sum.upload_bytes += d.upload_bytes;
                    sum.parameter_bytes += d.parameter_bytes;
                }
                if let Some(cp) = checkpoint.as_deref_mut() {
                    cp.completed_stage(0, 1, |_| bxt.to_bytes(&score))?;
                }
                score
            }
        };
        let records = ledger.take();
        let totals = Totals::of(&records);
        bytes_moved += totals.bytes_read + totals.bytes_written;
        gpu_dispatches += totals.gpu_dispatches;
        record_count += totals.records;
        if let Some(out) = trace.as_mut() {
            write_trace(&records, out)?;
        }
        let resident: u64 = cts.iter().map(|c| c.resident_bytes(ledger)).sum::<u64>() + score.resident_bytes(ledger);
        peak = peak.max(resident);
        drop(cts);
        if client == Client::ShapeOnly {
            batches += 1;
            start_index = end;
            progress(end, total);
            continue;
        }
        // Client: decrypt and decide.
        let clock = Instant::now();
        let got = bgv.encoder().decode_signed(&bxt.decrypt(&sk, &score)?)?;
        decrypt_ms += clock.elapsed().as_secs_f64() * 1e3;
        for ((q, label), s) in batch.iter().zip(&got) {
            let plain = model.score(q)?;
            mismatches += usize::from(plain != *s);
            let pred = *s >= 0;
            correct += usize::from(pred == *label);
            agree += usize::from(pred == (plain >= 0));
        }
        batches += 1;
        start_index = end;
        progress(end, total);
    }
    let n = total.max(1) as f64;
    let run = LrRun {
        images: total,
        batches,
        accuracy: correct as f64 / n,
        agreement: agree as f64 / n,
        score_mismatches: mismatches,
        encrypt_ms,
        server_ms,
        batch_ms: server_ms / batches.max(1) as f64,
        per_image_ms: server_ms / n,
        decrypt_ms,
        peak_device_bytes: peak,
        key_bytes: 0,
        bytes_moved,
        gpu_dispatches,
        pipeline_build_ms,
        pipelines_prebuilt: pipelines_prebuilt as u64,
        pipelines_built_in_batches: in_batches.map(|c| c.pipelines_built),
        server_data_upload_bytes: in_batches.map(|c| c.upload_bytes - c.parameter_bytes),
        server_parameter_bytes: in_batches.map(|c| c.parameter_bytes),
    };
    Ok((run, record_count))
}
