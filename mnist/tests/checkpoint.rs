//! Checkpoints of encrypted runs (`wgfhe_mnist::checkpoint`) on small insecure sets: a run
//! stopped after any stage and resumed ends with the same scores and the same ciphertext bytes
//! as an uninterrupted run with the same key seed (and as the circuit evaluated without a
//! checkpoint); damaged, truncated or swapped files are typed errors naming the file (a damaged
//! newest stage falls back to the one before it); a checkpoint of another configuration is a
//! typed mismatch. A checkpoint written on the CPU resumes on the GPU with the same bytes.

#![expect(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic, reason = "tests")]

#[path = "common/cnn_fixtures.rs"]
mod cnn_fixtures;
#[path = "../../tests/common/mod.rs"]
mod common;

use cnn_fixtures::{digit_params, images, params, small_model};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use wgfhe::backend::{CpuBackend, GpuBackend};
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant};
use wgfhe::params::{self, Parameters};
use wgfhe::ring::RingContext;
use wgfhe::Error;
use wgfhe_mnist::checkpoint::{Checkpoint, MANIFEST};
use wgfhe_mnist::cnn_infer::{
    checkpoint_stages, run_cnn_with, CnnCircuit, CnnOptions, CnnRun, CnnStats, ReluPath, STAGES,
};
use wgfhe_mnist::infer::{run_lr_with, LrOptions, LrRun};
use wgfhe_mnist::lr::{Dataset, QuantLr};
use wgfhe_mnist::mnist::PIXELS;

const SEED: [u8; 32] = [42; 32];

/// A directory of the test's own, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("wgfhe-checkpoint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn options(variant: Variant, relu: ReluPath) -> CnnOptions {
    // N = 1024: four images per batch; six images make two batches.
    CnnOptions { images: Some(6), variant, relu }
}

/// One CNN run in `dir` (the key seed [`SEED`], `stop` as `stop_after`).
fn cnn(p: &Parameters, dir: &Path, opts: CnnOptions, stop: Option<&str>) -> (Result<CnnRun, Error>, Vec<String>) {
    let mut cp = Checkpoint::open(dir).unwrap().with_key_seed(SEED);
    if let Some(s) = stop {
        cp = cp.stop_after(s);
    }
    let backend = CpuBackend::new(RingContext::new(p).unwrap());
    let run = run_cnn_with(backend, &small_model(), &images(6), opts, Some(&mut cp), |_, _| {}, None);
    (run, cp.notes().to_vec())
}

/// The `.wgfh` files of `dir` with their bytes.
fn stage_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgfh"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

/// What two runs must share: the decrypted outcome.
fn outcome(r: &CnnRun) -> (usize, usize, f64, f64, usize) {
    (r.images, r.batches, r.accuracy, r.emulation_agreement, r.score_mismatches)
}

/// The scores ciphertext of batch 0 computed without any checkpoint, with the same key seed
/// and the same order of draws from it as a checkpointed run, serialised as a checkpoint
/// writes it.
fn plain_scores(p: &Parameters, opts: CnnOptions) -> Vec<u8> {
    let bgv = Bgv::cpu(p).unwrap();
    let model = small_model();
    let circuit = CnnCircuit::with_relu(&bgv, &model, opts.relu).unwrap();
    let sk = bgv.gen_secret_key_from_seed(&SEED).unwrap();
    let bxt = Bxt::new(&bgv, opts.variant);
    let data = images(6);
    let imgs: Vec<&[u8; PIXELS]> = data.images().iter().take(circuit.images_per_batch()).collect();
    // The keys as `run_cnn_with` makes them: the circuit's plan for the first batch.
    let plan = circuit.key_plan(bgv.params(), opts.variant, &imgs).unwrap();
    let keys = bxt.prepare_keys(bgv.gen_planned_keys(&sk, &plan).unwrap()).unwrap();
    let cts: Vec<_> = circuit
        .client_inputs(&imgs, bgv.encoder().slots())
        .unwrap()
        .iter()
        .map(|v| bxt.encrypt(&sk, &bgv.encoder().encode(v).unwrap()).unwrap())
        .collect();
    let scores = circuit.evaluate(&bxt, &keys, &cts, &mut CnnStats::default()).unwrap();
    bgv.ciphertext_to_bytes_packed(&scores).unwrap()
}

/// Stops a run after `stop` (then after each later stage in turn when `step`), resumes it to
/// the end, and checks it against the uninterrupted run in `whole`: same outcome, same files.
fn stop_and_resume(p: &Parameters, opts: CnnOptions, whole: &Path, name: &str, stops: &[&str]) {
    let (want, _) = cnn(p, whole, opts, None);
    let want = want.unwrap();
    assert_eq!(want.score_mismatches, 0);
    let want_files = stage_files(whole);
    // Two stages kept per batch: the last two of each.
    let kept: Vec<String> =
        (0..2).flat_map(|b| [format!("b{b:06}-fc2-000.wgfh"), format!("b{b:06}-relu2-000.wgfh")]).collect();
    assert_eq!(want_files.keys().cloned().collect::<Vec<_>>(), kept);
    let dir = Scratch::new(name);
    for stop in stops {
        let (run, _) = cnn(p, &dir.0, opts, Some(stop));
        match run {
            Err(Error::CheckpointStopped { batch: 0, stage }) => assert_eq!(stage, *stop),
            other => panic!("stop after {stop}: {other:?}"),
        }
    }
    let (got, notes) = cnn(p, &dir.0, opts, None);
    let got = got.unwrap();
    let last = stops.last().unwrap();
    assert!(notes.iter().any(|n| n.starts_with(&format!("batch 0: resumed after stage {last} "))), "{notes:?}");
    // The stages up to the last stop were restored, not computed: the stats say so.
    let names = checkpoint_stages(small_model().channels);
    let upto = names.iter().position(|n| n == last).unwrap();
    let restored: Vec<String> = names[..=upto].iter().map(|n| format!("batch 0: {n}")).collect();
    assert_eq!(got.stats.restored, restored);
    assert!(want.stats.restored.is_empty());
    assert_eq!(outcome(&got), outcome(&want));
    assert_eq!(stage_files(&dir.0), want_files, "after stopping at {stops:?}");
}

#[test]
fn table_path_resumes_after_every_stage_with_the_same_ciphertexts() {
    let p = params();
    let opts = options(Variant::Cso, ReluPath::Table);
    let whole = Scratch::new("table-whole");
    // Stopped after each stage of the first batch in turn (each run resumes the last one),
    // then resumed to the end.
    // Every stage, including the first ReLU's per-channel parts (`relu1.1` of two channels).
    let stages = checkpoint_stages(small_model().channels);
    assert_eq!(stages, ["conv", "relu1.1", "relu1", "fc1", "relu2", "fc2"]);
    assert!(STAGES.iter().all(|s| stages.iter().any(|t| t == s)));
    let stages: Vec<&str> = stages.iter().map(String::as_str).collect();
    stop_and_resume(&p, opts, &whole.0, "table-steps", &stages);
    // The checkpointed circuit is the plain circuit: the same scores ciphertext.
    assert_eq!(stage_files(&whole.0)["b000000-fc2-000.wgfh"], plain_scores(&p, opts));
    // Stopped once, under every other variant.
    for (variant, stop) in
        [(Variant::Baseline, "fc1"), (Variant::C, "conv"), (Variant::Cs, "relu2"), (Variant::CsoK, "relu1")]
    {
        let opts = options(variant, ReluPath::Table);
        let whole = Scratch::new(&format!("table-{variant}-whole"));
        stop_and_resume(&p, opts, &whole.0, &format!("table-{variant}"), &[stop]);
        assert_eq!(stage_files(&whole.0)["b000000-fc2-000.wgfh"], plain_scores(&p, opts), "{variant}");
    }
}

#[test]
fn digit_path_resumes_with_the_same_ciphertexts() {
    let p = digit_params();
    let opts = options(Variant::Cso, ReluPath::Digits { kept: 2 });
    let whole = Scratch::new("digits-whole");
    stop_and_resume(&p, opts, &whole.0, "digits", &["relu1.1", "relu1"]);
    assert_eq!(stage_files(&whole.0)["b000000-fc2-000.wgfh"], plain_scores(&p, opts));
}

static PROBED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[test]
fn the_job_peak_memory_survives_a_restart() {
    let p = params();
    let opts = options(Variant::Cso, ReluPath::Table);
    let dir = Scratch::new("rss");
    let probe = || Some(PROBED.load(std::sync::atomic::Ordering::Relaxed));
    let run = |stop: Option<&str>, rss: u64| {
        PROBED.store(rss, std::sync::atomic::Ordering::Relaxed);
        let mut cp = Checkpoint::open(&dir.0).unwrap().with_key_seed(SEED).with_rss_probe(probe);
        if let Some(s) = stop {
            cp = cp.stop_after(s);
        }
        let backend = CpuBackend::new(RingContext::new(&p).unwrap());
        let run = run_cnn_with(backend, &small_model(), &images(6), opts, Some(&mut cp), |_, _| {}, None);
        (run, cp.job_peak_rss_bytes(), cp.writes().iter().map(|w| w.peak_rss_bytes).collect::<Vec<_>>())
    };
    // The first process peaks higher than the one that resumes it: the job keeps the first's.
    let (first, peak, writes) = run(Some("relu1.1"), 7_000);
    assert!(matches!(first, Err(Error::CheckpointStopped { .. })), "{first:?}");
    assert_eq!(peak, Some(7_000));
    assert_eq!(writes, [Some(7_000), Some(7_000)]);
    let (second, peak, writes) = run(None, 5_000);
    second.unwrap();
    assert_eq!(peak, Some(7_000));
    assert!(!writes.is_empty() && writes.iter().all(|w| *w == Some(5_000)), "{writes:?}");
    // Reopened without a probe, the manifest still holds it.
    assert_eq!(Checkpoint::open(&dir.0).unwrap().job_peak_rss_bytes(), Some(7_000));
}

/// Flips one byte of `dir/name` in the middle.
fn damage(dir: &Path, name: &str) {
    let path = dir.join(name);
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
}

#[test]
fn damaged_files_are_typed_errors_naming_them_or_fall_back_to_the_stage_before() {
    let p = params();
    let opts = options(Variant::Cso, ReluPath::Table);
    let dir = Scratch::new("damage");
    let (want, _) = cnn(&p, &dir.0, opts, None);
    let want = want.unwrap();
    let want_files = stage_files(&dir.0);
    let fc2 = "b000001-fc2-000.wgfh";
    let relu2 = "b000001-relu2-000.wgfh";

    // A damaged newest stage: the run falls back to the stage before, recomputes the newest
    // and rewrites it, with the same result.
    damage(&dir.0, fc2);
    let (got, notes) = cnn(&p, &dir.0, opts, None);
    assert_eq!(outcome(&got.unwrap()), outcome(&want));
    assert!(
        notes
            .iter()
            .any(|n| n.contains(fc2) && n.contains("checksum mismatch") && n.contains("falling back to stage relu2")),
        "{notes:?}"
    );
    assert_eq!(stage_files(&dir.0), want_files);

    // Both kept stages damaged: the newest's error, naming its file.
    damage(&dir.0, fc2);
    damage(&dir.0, relu2);
    match cnn(&p, &dir.0, opts, None).0 {
        Err(Error::CheckpointFile { path, cause }) => {
            assert_eq!(path, dir.0.join(fc2));
            assert!(matches!(*cause, Error::Checksum { .. }), "{cause:?}");
        }
        other => panic!("{other:?}"),
    }

    // A truncated file (relu2 of batch 1 restored, fc2 cut short).
    std::fs::write(dir.0.join(relu2), &want_files[relu2]).unwrap();
    std::fs::write(dir.0.join(fc2), &want_files[fc2][..want_files[fc2].len() - 10]).unwrap();
    let (got, notes) = cnn(&p, &dir.0, opts, None);
    assert_eq!(outcome(&got.unwrap()), outcome(&want));
    assert!(notes.iter().any(|n| n.contains(fc2) && n.contains("declared length")), "{notes:?}");
    assert_eq!(stage_files(&dir.0), want_files);

    // A valid object that is not the one listed: batch 0's scores in place of batch 1's (and
    // batch 1's relu2 missing).
    std::fs::write(dir.0.join(fc2), &want_files["b000000-fc2-000.wgfh"]).unwrap();
    std::fs::remove_file(dir.0.join(relu2)).unwrap();
    match cnn(&p, &dir.0, opts, None).0 {
        Err(Error::CheckpointFile { path, cause }) => {
            assert_eq!(path, dir.0.join(fc2));
            assert!(cause.to_string().contains("not the one the manifest lists"), "{cause}");
        }
        other => panic!("{other:?}"),
    }

    // The seed never shows in the checkpoint's Debug form.
    let seed_hex: String = SEED.iter().map(|b| format!("{b:02x}")).collect();
    let cp = Checkpoint::open(&dir.0).unwrap();
    assert!(!format!("{cp:?}").contains(&seed_hex) && format!("{cp:?}").contains("fc2"), "{cp:?}");

    // A manifest that does not parse, or that lists a file that is not the checkpoint's own.
    let manifest = dir.0.join(MANIFEST);
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, &text[..text.len() / 2]).unwrap();
    match Checkpoint::open(&dir.0) {
        Err(e @ Error::CheckpointFile { .. }) => {
            assert!(e.to_string().starts_with(&format!("checkpoint file {}: JSON", manifest.display())), "{e}");
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(&manifest, text.replace("\"b000000-fc2-000.wgfh\"", "\"../elsewhere.wgfh\"")).unwrap();
    assert!(matches!(Checkpoint::open(&dir.0), Err(Error::CheckpointFile { path, .. }) if path == manifest));
}

#[test]
fn a_checkpoint_of_another_configuration_is_refused() {
    let p = params();
    let opts = options(Variant::Cso, ReluPath::Table);
    let dir = Scratch::new("mismatch");
    assert!(matches!(cnn(&p, &dir.0, opts, Some("conv")).0, Err(Error::CheckpointStopped { .. })));
    let field_of = |r: Result<CnnRun, Error>| match r {
        Err(Error::CheckpointMismatch { path, field, .. }) => {
            assert_eq!(path, dir.0.join(MANIFEST));
            field
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(field_of(cnn(&p, &dir.0, options(Variant::Baseline, ReluPath::Table), None).0), "variant");
    assert_eq!(field_of(cnn(&p, &dir.0, CnnOptions { images: Some(5), ..opts }, None).0), "number of images");
    let digits = digit_params();
    assert_eq!(field_of(cnn(&digits, &dir.0, opts, None).0), "parameter set");
    // Another key seed.
    let mut cp = Checkpoint::open(&dir.0).unwrap().with_key_seed([7; 32]);
    let backend = CpuBackend::new(RingContext::new(&p).unwrap());
    let run = run_cnn_with(backend, &small_model(), &images(6), opts, Some(&mut cp), |_, _| {}, None);
    assert_eq!(field_of(run), "key seed");
    // Another model.
    let mut model = small_model();
    model.fc2_b[0] += 1;
    let mut cp = Checkpoint::open(&dir.0).unwrap().with_key_seed(SEED);
    let backend = CpuBackend::new(RingContext::new(&p).unwrap());
    let run = run_cnn_with(backend, &model, &images(6), opts, Some(&mut cp), |_, _| {}, None);
    assert_eq!(field_of(run), "model weights (SHA-256)");
    // Inputs that do not match the recorded digest (keys regenerated differently).
    let manifest = dir.0.join(MANIFEST);
    let mut m: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["batches"][0]["inputs_sha256"] = serde_json::Value::from("00".repeat(32));
    std::fs::write(&manifest, serde_json::to_string(&m).unwrap()).unwrap();
    assert!(field_of(cnn(&p, &dir.0, opts, None).0).starts_with("encrypted inputs"));
    // An unknown stop stage.
    let mut cp = Checkpoint::open(&dir.0).unwrap().stop_after("pool");
    let backend = CpuBackend::new(RingContext::new(&p).unwrap());
    let run = run_cnn_with(backend, &small_model(), &images(6), opts, Some(&mut cp), |_, _| {}, None);
    assert!(matches!(run, Err(Error::InvalidField { field: "stop-after", .. })), "{run:?}");
}

/// A 16-feature logistic regression on random 4-bit pixels: two batches of 1024 slots.
fn lr_run(dir: &Path, stop: Option<&str>) -> (Result<LrRun, Error>, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let dim = 16;
    let n = 1500;
    let q: Vec<u8> = (0..n * dim).map(|_| rng.random_range(0..16)).collect();
    let y: Vec<bool> = (0..n).map(|_| rng.random_bool(0.5)).collect();
    let data = Dataset::new(dim, q, y).unwrap();
    let model = QuantLr::new((0..dim as i64).map(|i| i % 15 - 7).collect(), -3, 4).unwrap();
    let mut cp = Checkpoint::open(dir).unwrap().with_key_seed(SEED);
    if let Some(s) = stop {
        cp = cp.stop_after(s);
    }
    let p =
        params::insecure_test_bgv(params::TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65_537).unwrap();
    let backend = CpuBackend::new(RingContext::new(&p).unwrap());
    let opts = LrOptions { images: None, variant: Variant::Cso, timed: false };
    let run = run_lr_with(backend, &model, &data, opts, Some(&mut cp), |_, _| {}, None);
    (run, cp.notes().to_vec())
}

#[test]
fn lr_resumes_after_a_batch_with_the_same_ciphertexts() {
    let whole = Scratch::new("lr-whole");
    let want = lr_run(&whole.0, None).0.unwrap();
    assert_eq!((want.batches, want.score_mismatches), (2, 0));
    let dir = Scratch::new("lr");
    assert!(matches!(lr_run(&dir.0, Some("score")).0, Err(Error::CheckpointStopped { batch: 0, .. })));
    assert_eq!(stage_files(&dir.0).len(), 1);
    let (got, notes) = lr_run(&dir.0, None);
    let got = got.unwrap();
    assert!(notes.iter().any(|n| n.starts_with("batch 0: resumed after stage score")), "{notes:?}");
    assert_eq!((got.accuracy, got.agreement, got.score_mismatches), (want.accuracy, want.agreement, 0));
    assert_eq!(stage_files(&dir.0), stage_files(&whole.0));
}

#[test]
fn a_cpu_checkpoint_resumes_on_the_gpu_with_the_same_ciphertexts() {
    let p = params();
    let opts = CnnOptions { images: Some(4), ..options(Variant::Cso, ReluPath::Table) };
    let whole = Scratch::new("gpu-whole");
    assert_eq!(cnn(&p, &whole.0, opts, None).0.unwrap().score_mismatches, 0);
    let dir = Scratch::new("gpu");
    assert!(matches!(cnn(&p, &dir.0, opts, Some("relu1")).0, Err(Error::CheckpointStopped { .. })));
    if let Some(dev) = common::device() {
        let mut cp = Checkpoint::open(&dir.0).unwrap().with_key_seed(SEED);
        let backend = GpuBackend::new(RingContext::new(&p).unwrap(), dev);
        let run = run_cnn_with(backend, &small_model(), &images(6), opts, Some(&mut cp), |_, _| {}, None).unwrap();
        assert_eq!(run.score_mismatches, 0);
        assert!(cp.notes().iter().any(|n| n.starts_with("batch 0: resumed after stage relu1 ")), "{:?}", cp.notes());
        assert!(stage_files(&dir.0) == stage_files(&whole.0), "the GPU's resumed ciphertexts differ from the CPU's");
    }
}
