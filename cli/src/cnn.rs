//! `wgfhe mnist --model cnn`: trains (or loads the cached) integer CNN, runs it under encryption
//! on the test images and prints the summary.

use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};
use wgfhe::backend::{Backend, BackendTask};
use wgfhe::compress::Variant;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::{Error, Result};
use wgfhe_mnist::checkpoint::Checkpoint;
use wgfhe_mnist::cnn::{self, CnnConfig, Faults, QuantCnn};
use wgfhe_mnist::cnn_infer::{self, CnnOptions, CnnRun, ReluPath};
use wgfhe_mnist::mnist::{self, Split};

use crate::mnist::{resolve_params, MnistArgs, SHAPE, SHAPE_NOTE};
use crate::output::{self, Trace};

/// Where the model trained with `config` is cached: `DIR/cnn-<first 16 hex digits of the
/// SHA-256 of the configuration's JSON>.json`.
fn cache_path(dir: &Path, config: &CnnConfig) -> Result<PathBuf> {
    let json = serde_json::to_string(config).map_err(|e| Error::json("encoding of the CNN configuration", &e))?;
    let digest = Sha256::digest(json.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Ok(dir.join(format!("cnn-{hex}.json")))
}

/// The cached model for `config`, or a freshly trained one (then cached): `(model, cached)`.
pub(crate) fn model(dir: &Path, config: &CnnConfig, data: &mnist::Mnist, quiet: bool) -> Result<(QuantCnn, bool)> {
    let path = cache_path(dir, config)?;
    if let Ok(text) = std::fs::read_to_string(&path) {
        if let Ok(m) = QuantCnn::from_json(&text) {
            return Ok((m, true));
        }
    }
    let bar = if quiet { indicatif::ProgressBar::hidden() } else { indicatif::ProgressBar::new(config.epochs as u64) };
    bar.set_style(
        indicatif::ProgressStyle::with_template("training the CNN {bar:30} epoch {pos}/{len} [{elapsed}] {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let m = cnn::train(&data.train, config, |r| {
        bar.set_position(r.epoch as u64);
        bar.set_message(format!("loss {:.4}, train accuracy {:.2}%", r.loss, 100.0 * r.train_accuracy));
    })?;
    bar.finish_and_clear();
    // The cache is an optimisation: a failed write only costs a retraining next time.
    let tmp = path.with_extension("json.tmp");
    if std::fs::write(&tmp, m.to_json()?).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
    Ok((m, false))
}

/// The encrypted CNN run, on any backend: `(backend name, run)`.
struct CnnTask<'a, P> {
    model: &'a QuantCnn,
    test: &'a Split,
    options: CnnOptions,
    progress: P,
    trace: Option<&'a mut dyn std::io::Write>,
    checkpoint: Option<&'a mut Checkpoint>,
}

impl<P: FnMut(usize, usize)> BackendTask for CnnTask<'_, P> {
    type Output = (&'static str, CnnRun);

    fn run<B: Backend>(self, backend: B) -> Result<Self::Output> {
        let name = backend.name();
        Ok((
            name,
            cnn_infer::run_cnn_with(
                backend,
                self.model,
                self.test,
                self.options,
                self.checkpoint,
                self.progress,
                self.trace,
            )?,
        ))
    }
}

/// Runs `wgfhe mnist --model cnn`.
pub(crate) fn run(a: &MnistArgs, variant: Variant) -> Result<()> {
    let relu = if a.relu == "digits" { ReluPath::digits(a.keep)? } else { ReluPath::Table };
    if relu == ReluPath::Table && a.keep != 1.0 {
        return Err(Error::InvalidField { field: "keep", reason: "--keep applies to --relu digits only" });
    }
    let faults = relu.faults();
    if a.fault_aware && faults == Faults::default() {
        return Err(Error::InvalidField {
            field: "fault-aware",
            reason: "--fault-aware needs --relu digits with --keep below 1 (nothing to be aware of otherwise)",
        });
    }
    let default_set = if relu == ReluPath::Table { params::CNN_SET } else { params::CNN_DIGITS_SET };
    let params = resolve_params(a.params.as_deref().unwrap_or(default_set), a.insecure)?;
    let choice = if a.shape_only() { None } else { Some(a.backend_choice()?) };
    let say = |msg: String| a.say(msg);
    let mut trace = Trace::create(a.trace.as_deref())?;
    let mut checkpoint = a.open_checkpoint()?;
    let start = Instant::now();
    let data = a.load_data()?;
    say(format!(
        "MNIST from {}: {} training and {} test images ({:.1?})",
        a.data.display(),
        data.train.len(),
        data.test.len(),
        start.elapsed()
    ));
    let config = if a.fault_aware { CnnConfig { faults, ..CnnConfig::default() } } else { CnnConfig::default() };
    let start = Instant::now();
    let (model, cached) = model(&a.data, &config, &data, a.json)?;
    let plain_accuracy = model.accuracy(&data.test);
    let emulated_accuracy = model.accuracy_with(&data.test, faults);
    let bounds = model.bounds();
    say(format!(
        "integer CNN{} ({} in {:.1?}): plaintext test accuracy {:.2}% on {} images{}; worst-case |pre-activation| \
         conv {}, FC100 {}, scores {}",
        if a.fault_aware { format!(" (fault-aware, dead zone {})", faults.dead_zone) } else { String::new() },
        if cached { "cached" } else { "trained" },
        start.elapsed(),
        100.0 * plain_accuracy,
        data.test.len(),
        if faults == Faults::default() {
            String::new()
        } else {
            format!(", {:.2}% with the ReLU faults of keep {} (plaintext emulation)", 100.0 * emulated_accuracy, a.keep)
        },
        bounds.conv,
        bounds.fc1,
        bounds.fc2
    ));
    let slots = 1usize << params.log_n();
    let per_batch = slots / cnn_infer::BLOCK;
    let total = a.images.unwrap_or(per_batch).min(data.test.len());
    let options = CnnOptions { images: Some(total), variant, relu };
    let Some(choice) = choice else {
        // `--backend shape`.
        return shape_trace(a, &params, &model, &data.test, options);
    };
    let bar = output::image_bar(total, a.json);
    bar.tick();
    let task = CnnTask {
        model: &model,
        test: &data.test,
        options,
        progress: |done: usize, _| bar.set_position(done as u64),
        trace: output::trace_writer(&mut trace),
        checkpoint: checkpoint.as_mut(),
    };
    let result = choice.with_backend(RingContext::new(&params)?, task);
    bar.finish_and_clear();
    output::checkpoint_notes(checkpoint.as_ref());
    let (backend_name, run) = result?;
    output::finish_trace(trace)?;
    if a.json {
        let value = serde_json::json!({
            "model": "cnn",
            "images": run.images,
            "relu": relu.name(),
            "variant": variant.name(),
            "keep": a.keep,
            "kept_digits": match relu { ReluPath::Digits { kept } => Some(kept), ReluPath::Table => None },
            "fault_aware": a.fault_aware,
            "backend": backend_name,
            "params": params.name(),
            "accuracy": run.accuracy,
            "agreement": run.agreement,
            "emulation_agreement": run.emulation_agreement,
            "emulation_accuracy": run.emulation_accuracy,
            "plain_accuracy": plain_accuracy,
            "plain_emulated_accuracy": emulated_accuracy,
            "plain_accuracy_note": "the integer model in plaintext on all 10,000 test images (trained quantisation-aware: there is no separate float model)",
            "batch_ms": run.batch_ms,
            "per_image_ms": run.per_image_ms,
            "peak_device_bytes": run.peak_device_bytes,
            "key_bytes": run.key_bytes,
            "peak_rss_bytes": output::peak_rss_bytes(),
            "peak_rss_note": "VmHWM of the whole process (client key generation, encryption and decryption included); null off Linux",
            "bytes_moved": run.bytes_moved,
            "gpu_dispatches": run.gpu_dispatches,
            "images_per_batch": run.images_per_batch,
            "batches": run.batches,
            "keygen_ms": run.keygen_ms,
            "encrypt_ms": run.encrypt_ms,
            "decrypt_ms": run.decrypt_ms,
            "score_mismatches": run.score_mismatches,
            "table_domains": [run.table_domains.0, run.table_domains.1],
            "stats": run.stats,
            "faults": faults,
            "checkpoint": output::checkpoint_json(checkpoint.as_ref()),
        });
        println!("{value:#}");
    } else {
        println!(
            "encrypted ({}, {}, variant {}, relu {}{}): {} images in {} batch(es) of up to {}, accuracy {:.2}%, \
             agreement with the integer model {:.2}%, with its plaintext emulation {:.2}% ({} images with a score \
             mismatch against the emulation)",
            params.name(),
            backend_name,
            variant.name(),
            relu.name(),
            match relu {
                ReluPath::Digits { kept } => format!(" keeping {kept} of {} digits", cnn_infer::DIGIT_COUNT),
                ReluPath::Table => String::new(),
            },
            run.images,
            run.batches,
            run.images_per_batch,
            100.0 * run.accuracy,
            100.0 * run.agreement,
            100.0 * run.emulation_agreement,
            run.score_mismatches
        );
        let s = &run.stats;
        println!(
            "keys {:.1} s; server {:.1} s per batch ({:.1} ms per image): conv {:.1} s, ReLUs (domains {} and \
             {}) {:.1} + {:.1} s, FC100 {:.1} s, FC10 {:.1} s; {} HMULTs, {} rotations, {} PMULTs",
            run.keygen_ms / 1e3,
            run.batch_ms / 1e3,
            run.per_image_ms,
            s.conv_ms / 1e3,
            run.table_domains.0,
            run.table_domains.1,
            s.relu1_ms / 1e3,
            s.relu2_ms / 1e3,
            s.fc1_ms / 1e3,
            s.fc2_ms / 1e3,
            s.hmults,
            s.rotations,
            s.pmults
        );
        if !s.restored.is_empty() {
            println!("restored from the checkpoint, not computed or timed here: {}", s.restored.join(", "));
        }
        println!(
            "client encryption {:.1} s, decryption {:.2} s; {:.1} MB resident (keys and one batch of inputs), {:.1} GB \
             moved by {} GPU dispatches",
            run.encrypt_ms / 1e3,
            run.decrypt_ms / 1e3,
            run.peak_device_bytes as f64 / 1e6,
            run.bytes_moved as f64 / 1e9,
            run.gpu_dispatches
        );
        println!(
            "evaluation keys held by the server {:.1} MB; peak resident memory of the process {} (client work included)",
            run.key_bytes as f64 / 1e6,
            output::peak_rss_text()
        );
        let stages: Vec<String> = run
            .stats
            .noise
            .iter()
            .map(|n| format!("{} L{} {:.0}/{:.0}", n.stage, n.level, n.noise_bits, n.modulus_bits))
            .collect();
        println!("level and estimated noise/modulus bits after each stage: {}", stages.join(", "));
    }
    // The circuit must compute exactly what its plaintext emulation says (the exact model for
    // the table path and for the unpruned digit path).
    if run.emulation_agreement < 1.0 || run.score_mismatches > 0 {
        return Err(Error::Verification {
            what: "the encrypted CNN scores differ (this is a bug: please report it)".into(),
            reference: "the plaintext emulation of the circuit",
        });
    }
    Ok(())
}

/// `wgfhe mnist --model cnn --backend shape`: the server's ledger trace on the shape-only
/// backend ([`cnn_infer::trace_cnn_shapes`]), and its totals (no scores).
fn shape_trace(a: &MnistArgs, params: &Parameters, model: &QuantCnn, test: &Split, options: CnnOptions) -> Result<()> {
    let mut trace = Trace::create(a.trace.as_deref())?;
    let bar = output::image_bar(options.images.unwrap_or(test.len()), a.json);
    bar.tick();
    let run = cnn_infer::trace_cnn_shapes(
        RingContext::new(params)?,
        model,
        test,
        options,
        |done: usize, _| bar.set_position(done as u64),
        output::trace_writer(&mut trace),
    )?;
    bar.finish_and_clear();
    output::finish_trace(trace)?;
    let relu = options.relu;
    if a.json {
        let value = serde_json::json!({
            "model": "cnn",
            "shape_only": true,
            "note": SHAPE_NOTE,
            "images": run.images,
            "relu": relu.name(),
            "variant": options.variant.name(),
            "keep": a.keep,
            "kept_digits": match relu { ReluPath::Digits { kept } => Some(kept), ReluPath::Table => None },
            "fault_aware": a.fault_aware,
            "backend": SHAPE,
            "params": params.name(),
            "trace": a.trace.as_ref().map(|p| p.display().to_string()),
            "records": run.records,
            "bytes_moved": run.bytes_moved,
            "gpu_dispatches": run.gpu_dispatches,
            "peak_device_bytes": run.peak_device_bytes,
            "key_bytes": run.key_bytes,
            "images_per_batch": run.images_per_batch,
            "batches": run.batches,
            "hmults": run.hmults,
            "rotations": run.rotations,
            "pmults": run.pmults,
            "noise": run.noise,
            "table_sets": run.table_sets,
            "table_domains": [run.table_domains.0, run.table_domains.1],
            "elapsed_ms": run.elapsed_ms,
            "peak_rss_bytes": output::peak_rss_bytes(),
        });
        println!("{value:#}");
    } else {
        println!(
            "shape-only trace ({}, variant {}, relu {}{}): {} images in {} batch(es) of up to {}; nothing computed, \
             decrypted or checked (no scores, no accuracy)",
            params.name(),
            options.variant.name(),
            relu.name(),
            match relu {
                ReluPath::Digits { kept } => format!(" keeping {kept} of {} digits", cnn_infer::DIGIT_COUNT),
                ReluPath::Table => String::new(),
            },
            run.images,
            run.batches,
            run.images_per_batch
        );
        println!(
            "server: {} HMULTs, {} rotations, {} PMULTs; {} ledger records, {:.1} GB moved by {} GPU dispatches; \
             planned keys {:.1} MB, {:.1} MB resident (keys, prepared plaintexts, one batch of inputs)",
            run.hmults,
            run.rotations,
            run.pmults,
            run.records,
            run.bytes_moved as f64 / 1e9,
            run.gpu_dispatches,
            run.key_bytes as f64 / 1e6,
            run.peak_device_bytes as f64 / 1e6
        );
        let stages: Vec<String> = run
            .noise
            .iter()
            .map(|n| format!("{} L{} {:.0}/{:.0}", n.stage, n.level, n.noise_bits, n.modulus_bits))
            .collect();
        println!("level and estimated noise/modulus bits after each stage: {}", stages.join(", "));
        println!(
            "shape run {:.1} s, peak resident memory of the process {}",
            run.elapsed_ms / 1e3,
            output::peak_rss_text()
        );
    }
    Ok(())
}
