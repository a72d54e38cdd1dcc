//! The run driver of the encrypted CNN: both parties of a run in one process (keys, encryption,
//! the server's circuit batch by batch, decryption and the comparison with the plaintext
//! model), its checkpointed form, the shape-only trace, and the statistics a run reports.

use super::*;

/// Counts and stage times of the server's circuit (all batches).
#[derive(Debug, Clone, Default, Serialize)]
pub struct CnnStats {
    /// Ciphertext-ciphertext multiplications (the tables).
    pub hmults: usize,
    /// Slot rotations.
    pub rotations: usize,
    /// Plaintext multiplications (diagonals).
    pub pmults: usize,
    /// Convolution (weighted sums and materialisation). This and the other stage times and
    /// counts are this process's work: a stage restored from a checkpoint
    /// ([`CnnStats::restored`]) adds nothing to them.
    pub conv_ms: f64,
    /// First ReLU tables.
    pub relu1_ms: f64,
    /// FC100.
    pub fc1_ms: f64,
    /// Second ReLU table.
    pub relu2_ms: f64,
    /// FC10.
    pub fc2_ms: f64,
    /// Level and estimated noise after each stage of the last batch (public metadata: the
    /// estimate depends only on the parameters and the plaintext weights).
    pub noise: Vec<StageNoise>,
    /// The digit-table sets evaluated ([`ReluPath::Digits`]), one record per stage: the
    /// largest working set of its evaluations.
    pub table_sets: Vec<TableSetRun>,
    /// The stages restored from a checkpoint instead of computed in this process, as
    /// `"batch B: STAGE"` in pipeline order ([`checkpoint_stages`]; `relu1.<c>` counts the
    /// first `c` channels of the first ReLU): their times and counts are not in these stats.
    pub restored: Vec<String>,
}

impl CnnStats {
    /// Keeps, per stage, the record of the evaluation with the largest working set.
    pub(super) fn record_table_set(&mut self, run: TableSetRun) {
        match self.table_sets.iter_mut().find(|r| r.stage == run.stage) {
            Some(r) if r.peak_bytes_bound < run.peak_bytes_bound => *r = run,
            Some(_) => {}
            None => self.table_sets.push(run),
        }
    }
}

/// One evaluation of a digit-table set: its plan and its measured working set.
#[derive(Debug, Clone, Serialize)]
pub struct TableSetRun {
    /// `relu1` or `relu2`.
    pub stage: &'static str,
    /// Level of the input.
    pub level: usize,
    /// Baby steps of the plan (capped by [`CnnCircuit::with_table_budget`]).
    pub baby_steps: usize,
    /// HMULTs done.
    pub hmults: usize,
    /// Relinearisations done.
    pub relins: usize,
    /// The most ciphertexts the evaluation held at once (counted by the evaluator).
    pub peak_ciphertexts: usize,
    /// `peak_ciphertexts` degree-1 ciphertexts at the input's level, in bytes: a bound on the
    /// working set (the powers sit at or below that level; the temporaries inside one
    /// operation are not counted).
    pub peak_bytes_bound: u64,
}

/// Where a stage left its output ciphertext: level, estimated noise and modulus, in bits.
#[derive(Debug, Clone, Serialize)]
pub struct StageNoise {
    /// Stage name (`conv`, `relu1`, `fc1`, `relu2`, `fc2`).
    pub stage: &'static str,
    /// Level of the output (index of its last chain prime).
    pub level: usize,
    /// log2 of the estimated noise bound.
    pub noise_bits: f64,
    /// log2 of the ciphertext modulus at that level.
    pub modulus_bits: f64,
}

impl StageNoise {
    pub(super) fn of<B: Backend>(bgv: &Bgv<B>, stage: &'static str, ct: &Ciphertext<B>) -> Self {
        Self {
            stage,
            level: ct.level(),
            noise_bits: ct.noise_estimate(),
            modulus_bits: bgv.noise_model().log_q_at(ct.level()),
        }
    }
}

/// What an encrypted CNN run measured.
#[derive(Debug, Clone, Serialize)]
pub struct CnnRun {
    /// Images classified.
    pub images: usize,
    /// Batches.
    pub batches: usize,
    /// Images per batch (slots / 256).
    pub images_per_batch: usize,
    /// Fraction of images whose encrypted prediction is the label.
    pub accuracy: f64,
    /// How the ReLUs were computed.
    pub relu: ReluPath,
    /// Fraction whose encrypted prediction equals the plaintext integer model's (exact ReLUs).
    pub agreement: f64,
    /// Fraction whose encrypted prediction equals the plaintext emulation of the circuit (the
    /// integer model with the path's ReLU corruption, [`CnnCircuit::expected_scores`]; the
    /// same as `agreement` for the table path and the unpruned digit path).
    pub emulation_agreement: f64,
    /// Accuracy of the plaintext emulation on the same images.
    pub emulation_accuracy: f64,
    /// Images with any decrypted score different from the emulation's (0 when the circuit
    /// computes exactly what the emulation says).
    pub score_mismatches: usize,
    /// Domains of the two tables (the worst-case bounds).
    pub table_domains: (u64, u64),
    /// Key generation (relinearisation and rotation keys), once.
    pub keygen_ms: f64,
    /// Client encryption, all batches.
    pub encrypt_ms: f64,
    /// Server time, all batches.
    pub server_ms: f64,
    /// Server time per batch.
    pub batch_ms: f64,
    /// Server time per image (amortised over the images run).
    pub per_image_ms: f64,
    /// Client decryption, all batches.
    pub decrypt_ms: f64,
    /// Resident bytes of the evaluation keys, the prepared plaintexts ([`PREPARED_BUDGET`] at
    /// most) and one batch's input ciphertexts.
    pub peak_device_bytes: u64,
    /// Resident bytes of the evaluation keys the server holds (relinearisation and rotation
    /// keys, [`EvaluationKeys::resident_bytes`]; seeded under `cso+k`: `b` halves only, bit-packed).
    pub key_bytes: u64,
    /// Bytes read and written by the server's kernels (traffic ledger).
    pub bytes_moved: u64,
    /// GPU compute dispatches of the server's backend calls (the traffic ledger's model of the
    /// GPU engine, the same on every backend).
    pub gpu_dispatches: u64,
    /// Counts and stage times.
    pub stats: CnnStats,
}

/// Images in the first batch of a run of `total` images.
pub(super) fn per_batch(circuit: &CnnCircuit, total: usize) -> usize {
    circuit.images_per_batch().min(total)
}

/// What [`run_cnn`] runs.
#[derive(Debug, Clone, Copy)]
pub struct CnnOptions {
    /// The first `images` images of the split (all if `None`).
    pub images: Option<usize>,
    /// BXT variant of the inputs and the convolution.
    pub variant: Variant,
    /// How the ReLUs are computed.
    pub relu: ReluPath,
}

/// Runs `model` under encryption on `data` as `options` say, on `backend`, calling
/// `progress(done, total)` after each batch and writing the server's ledger records to
/// `trace` if given.
pub fn run_cnn<B: Backend>(
    backend: B,
    model: &QuantCnn,
    data: &Split,
    options: CnnOptions,
    progress: impl FnMut(usize, usize),
    trace: Option<&mut dyn std::io::Write>,
) -> Result<CnnRun> {
    run_cnn_with(backend, model, data, options, None, progress, trace)
}

/// The checkpoint configuration of a CNN run.
pub(super) fn checkpoint_config<B: Backend>(
    bgv: &Bgv<B>,
    model: &QuantCnn,
    data: &Split,
    options: CnnOptions,
    total: usize,
    per_batch: usize,
) -> Result<CheckpointConfig> {
    let mut digest = Digester::default();
    for (img, label) in data.images().iter().zip(data.labels()).take(total) {
        digest.update(img);
        digest.update(&[*label]);
    }
    Ok(CheckpointConfig {
        model: "cnn".into(),
        params: bgv.params().name().to_owned(),
        param_id: format!("{:#018x}", bgv.params().id()),
        variant: options.variant.name().to_owned(),
        relu: Some(options.relu.name().to_owned()),
        kept_digits: match options.relu {
            ReluPath::Digits { kept } => Some(kept),
            ReluPath::Table => None,
        },
        images: total,
        images_per_batch: per_batch,
        model_sha256: crate::checkpoint::sha256_hex(model.to_json()?.as_bytes()),
        data_sha256: digest.finish(),
        stages: checkpoint_stages(model.channels),
    })
}

/// [`run_cnn`] with a checkpoint ([`crate::checkpoint`]): with one, all of the key owner's
/// randomness derives from the checkpoint's seed, every batch's inputs are checked against the
/// checkpoint, the completed stages of a batch are loaded instead of computed and each stage
/// computed is written ([`CnnCircuit::evaluate_checkpointed`]). The server's counts and times
/// of a resumed run cover only the stages it computed. Errors, besides [`run_cnn`]'s: the
/// checkpoint's ([`Error::CheckpointMismatch`], [`Error::CheckpointFile`], [`Error::Io`],
/// [`Error::CheckpointStopped`]).
pub fn run_cnn_with<B: Backend>(
    backend: B,
    model: &QuantCnn,
    data: &Split,
    options: CnnOptions,
    checkpoint: Option<&mut Checkpoint>,
    progress: impl FnMut(usize, usize),
    trace: Option<&mut dyn std::io::Write>,
) -> Result<CnnRun> {
    run_cnn_server(backend, model, data, options, checkpoint, progress, trace, Client::Verify).map(|(run, _)| run)
}

/// What a shape-only trace of the CNN's server circuit recorded ([`trace_cnn_shapes`]): the
/// counts that follow from shapes and the noise model. Nothing was computed or decrypted, so
/// there are no scores and no accuracy.
#[derive(Debug, Clone, Serialize)]
pub struct CnnShapeTrace {
    /// Images the batches were laid out for.
    pub images: usize,
    /// Batches.
    pub batches: usize,
    /// Images per batch (slots / 256).
    pub images_per_batch: usize,
    /// How the ReLUs are computed.
    pub relu: ReluPath,
    /// Domains of the two ReLUs' tables.
    pub table_domains: (u64, u64),
    /// Ledger records of the server's evaluation, all batches (one per backend call that is a
    /// kernel, copy or clear: what `trace` received).
    pub records: u64,
    /// Bytes the server's kernels would read and write.
    pub bytes_moved: u64,
    /// GPU compute dispatches the calls would make.
    pub gpu_dispatches: u64,
    /// Resident bytes of the planned evaluation keys (from their shapes).
    pub key_bytes: u64,
    /// Resident bytes of the keys, the prepared plaintexts and one batch's inputs.
    pub peak_device_bytes: u64,
    /// Ciphertext-ciphertext multiplications, rotations and plaintext multiplications.
    pub hmults: usize,
    /// Slot rotations.
    pub rotations: usize,
    /// Plaintext multiplications.
    pub pmults: usize,
    /// Level and estimated noise after each stage of the last batch (the noise model works
    /// on shapes: estimates follow from the plaintexts' norms and the operations).
    pub noise: Vec<StageNoise>,
    /// The digit-table sets' plans and working sets (counted by the evaluator, as in a real
    /// run).
    pub table_sets: Vec<TableSetRun>,
    /// Wall-clock time of the whole shape-only run (key plan, key shapes, encryption and the
    /// circuit on word counts), not a server time.
    pub elapsed_ms: f64,
}

/// Records the ledger trace of the CNN's server circuit as [`run_cnn`] would run it with
/// `options` on `data`, on the shape-only backend ([`ShapeBackend`]: word counts, no residues)
/// over `ring`: the same keys plan (from the first batch's real images), the same inputs'
/// noise estimates, the same levels, digits and modulus switches, so the same records in the
/// same order as a real run's trace (tests/shape_trace.rs checks it against the CPU backend).
/// Nothing is computed, decrypted or checked: there are no scores. Writes the records to
/// `trace` if given; calls `progress(done, total)` after each batch.
pub fn trace_cnn_shapes(
    ring: std::sync::Arc<wgfhe::ring::RingContext>,
    model: &QuantCnn,
    data: &Split,
    options: CnnOptions,
    progress: impl FnMut(usize, usize),
    trace: Option<&mut dyn std::io::Write>,
) -> Result<CnnShapeTrace> {
    let clock = Instant::now();
    let (run, records) =
        run_cnn_server(ShapeBackend::new(ring), model, data, options, None, progress, trace, Client::ShapeOnly)?;
    Ok(CnnShapeTrace {
        images: run.images,
        batches: run.batches,
        images_per_batch: run.images_per_batch,
        relu: run.relu,
        table_domains: run.table_domains,
        records,
        bytes_moved: run.bytes_moved,
        gpu_dispatches: run.gpu_dispatches,
        key_bytes: run.key_bytes,
        peak_device_bytes: run.peak_device_bytes,
        hmults: run.stats.hmults,
        rotations: run.stats.rotations,
        pmults: run.stats.pmults,
        noise: run.stats.noise,
        table_sets: run.stats.table_sets,
        elapsed_ms: clock.elapsed().as_secs_f64() * 1e3,
    })
}

/// What the client does with the server's result in [`run_cnn_server`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Client {
    /// Decrypts every batch's scores and checks them against the plaintext emulation.
    Verify,
    /// Nothing: the backend computes shapes only ([`trace_cnn_shapes`]).
    ShapeOnly,
}

/// The run of [`run_cnn_with`] (with `client` saying whether the scores are decrypted and
/// checked), and the number of ledger records of the server's evaluations.
#[expect(clippy::too_many_arguments, reason = "run_cnn_with's arguments and the client's mode")]
pub(super) fn run_cnn_server<B: Backend>(
    backend: B,
    model: &QuantCnn,
    data: &Split,
    options: CnnOptions,
    mut checkpoint: Option<&mut Checkpoint>,
    mut progress: impl FnMut(usize, usize),
    mut trace: Option<&mut dyn std::io::Write>,
    client: Client,
) -> Result<(CnnRun, u64)> {
    let CnnOptions { images, variant, relu } = options;
    let bgv = Bgv::new(Ledger::new(backend))?;
    let ledger = bgv.backend();
    let circuit = CnnCircuit::with_relu(&bgv, model, relu)?;
    let total = images.unwrap_or(data.len()).min(data.len());
    let slots = bgv.encoder().slots();
    let clock = Instant::now();
    let sk = match checkpoint.as_deref_mut() {
        Some(cp) => {
            let config = checkpoint_config(&bgv, model, data, options, total, circuit.images_per_batch())?;
            bgv.gen_secret_key_from_seed(&cp.bind(config)?)?
        }
        None => bgv.gen_secret_key()?,
    };
    let bxt = Bxt::new(&bgv, variant);
    // The keys the circuit's plan for the first batch needs, each at the highest level it is
    // used at.
    let first: Vec<&crate::mnist::Image> = data.images().iter().take(per_batch(&circuit, total)).collect();
    let plan = circuit.key_plan(bgv.params(), variant, &first)?;
    let keys = bxt.prepare_keys(bgv.gen_planned_keys(&sk, &plan)?)?;
    let keygen_ms = clock.elapsed().as_secs_f64() * 1e3;
    let key_bytes = keys.resident_bytes(ledger);
    let mut stats = CnnStats::default();
    // The circuit's plaintexts, prepared on first use and reused by every later batch.
    let mut prepared = PlaintextCache::new(PREPARED_BUDGET);
    let (mut correct, mut agree, mut mismatches, mut batches) = (0usize, 0usize, 0usize, 0usize);
    let (mut emu_agree, mut emu_correct) = (0usize, 0usize);
    let (mut encrypt_ms, mut server_ms, mut decrypt_ms) = (0.0, 0.0, 0.0);
    let (mut peak, mut bytes_moved, mut gpu_dispatches, mut record_count) = (0u64, 0u64, 0u64, 0u64);
    let per = circuit.images_per_batch();
    let mut start = 0;
    while start < total {
        let end = (start + per).min(total);
        let imgs: Vec<&crate::mnist::Image> = data
            .images()
            .get(start..end)
            .ok_or(Error::DimensionMismatch { what: "images", expected: end, found: data.images().len() })?
            .iter()
            .collect();
        let labels = data.labels().get(start..end).ok_or(Error::DimensionMismatch {
            what: "labels",
            expected: end,
            found: data.labels().len(),
        })?;
        let clock = Instant::now();
        let cts = circuit
            .client_inputs(&imgs, slots)?
            .iter()
            .map(|v| bxt.encrypt(&sk, &bgv.encoder().encode(v)?))
            .collect::<Result<Vec<_>>>()?;
        encrypt_ms += clock.elapsed().as_secs_f64() * 1e3;
        if let Some(cp) = checkpoint.as_deref_mut() {
            let clock = Instant::now();
            let mut digest = Digester::default();
            for c in &cts {
                digest.update(&bxt.to_bytes(c)?);
            }
            cp.begin_batch(batches, digest.finish(), clock.elapsed().as_secs_f64() * 1e3)?;
        }
        ledger.take();
        let clock = Instant::now();
        let scores =
            circuit.evaluate_checkpointed(&bxt, &keys, &cts, &mut prepared, &mut stats, checkpoint.as_deref_mut())?;
        ledger.synchronize()?;
        server_ms += clock.elapsed().as_secs_f64() * 1e3;
        let records = ledger.take();
        let totals = Totals::of(&records);
        bytes_moved += totals.bytes_read + totals.bytes_written;
        gpu_dispatches += totals.gpu_dispatches;
        record_count += totals.records;
        if let Some(out) = trace.as_mut() {
            write_trace(&records, out)?;
        }
        peak =
            peak.max(key_bytes + prepared.resident_bytes() + cts.iter().map(|c| c.resident_bytes(ledger)).sum::<u64>());
        drop(cts);
        if client == Client::ShapeOnly {
            batches += 1;
            start = end;
            progress(end, total);
            continue;
        }
        let clock = Instant::now();
        let got = bgv.encoder().decode_signed(&bgv.decrypt(&sk, &scores)?)?;
        decrypt_ms += clock.elapsed().as_secs_f64() * 1e3;
        for (i, (img, &label)) in imgs.iter().zip(labels).enumerate() {
            let scores = i * BLOCK..i * BLOCK + CLASSES;
            let enc: Vec<i64> = got
                .get(scores.clone())
                .ok_or(Error::DimensionMismatch { what: "decoded slots", expected: scores.end, found: got.len() })?
                .to_vec();
            let emulated = circuit.expected_scores(img);
            mismatches += usize::from(enc != emulated);
            let pred = argmax(&enc);
            correct += usize::from(pred == label);
            agree += usize::from(pred == model.predict(img));
            emu_agree += usize::from(pred == argmax(&emulated));
            emu_correct += usize::from(argmax(&emulated) == label);
        }
        batches += 1;
        start = end;
        progress(end, total);
    }
    let n = total.max(1) as f64;
    let run = CnnRun {
        images: total,
        batches,
        images_per_batch: per,
        accuracy: correct as f64 / n,
        relu,
        agreement: agree as f64 / n,
        emulation_agreement: emu_agree as f64 / n,
        emulation_accuracy: emu_correct as f64 / n,
        score_mismatches: mismatches,
        table_domains: circuit.table_domains(),
        keygen_ms,
        encrypt_ms,
        server_ms,
        batch_ms: server_ms / batches.max(1) as f64,
        per_image_ms: server_ms / n,
        decrypt_ms,
        peak_device_bytes: peak,
        key_bytes,
        bytes_moved,
        gpu_dispatches,
        stats,
    };
    Ok((run, record_count))
}
