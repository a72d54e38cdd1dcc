//! Checkpoints of long encrypted runs: each completed stage's ciphertexts on disk, so that a
//! run stopped between stages (a crash, a reboot, `stop_after`) continues from the last
//! complete stage and ends with the same scores, ciphertext for ciphertext.
//!
//! A [`Checkpoint`] is a directory. Its `manifest.json` (JSON, [`serde`]) records the
//! configuration of the run ([`CheckpointConfig`]: parameter set and id, model and the SHA-256
//! of its weights, BXT variant, ReLU path and kept digits, images and the SHA-256 of their
//! pixels and labels), the master seed of the key owner's randomness, and per batch the SHA-256
//! of its encrypted inputs (the fingerprint of the keys: the inputs are encrypted under the
//! regenerated secret key) and the stages completed, each with its files, their lengths and
//! CRC-32C. Each ciphertext is one file `b{batch:06}-{stage}-{index:03}.wgfh` in the
//! checksummed wire format ([`wgfhe::serial`], residues bit-packed). Every file and the
//! manifest are written atomically: to `NAME.tmp`, `fsync`, renamed over `NAME`, then the
//! directory is synced; the manifest is rewritten after a stage's files are in place, so a
//! stage is listed only once all its files are.
//!
//! **Determinism.** A checkpointed run derives all of the key owner's randomness from the
//! manifest's seed ([`wgfhe::bgv::Bgv::gen_secret_key_from_seed`]): the secret key, the
//! evaluation keys and every encryption seed and error. A resumed run regenerates the keys,
//! re-encrypts every batch up to the current one (which replays the key owner's random stream,
//! so no encryption seed is ever reused with another message, and checks each batch's inputs
//! against the recorded digest), skips the server's work of the completed stages and continues
//! from the stored ciphertexts. The server's circuit is deterministic, so the final scores'
//! ciphertexts are bit-identical to an uninterrupted run's with the same seed.
//!
//! **The directory holds secrets.** The seed determines the secret key: the manifest is
//! written with owner-only permissions (on Unix), and a checkpoint directory must be kept like
//! a secret key. It is meant for a client and server in one process (`wgfhe mnist`).
//!
//! **Damage.** A missing, truncated or damaged file, or one that is not the object the manifest
//! lists, is an [`Error::CheckpointFile`] naming it. The last two completed stages of each batch
//! are kept: when the newest cannot be loaded the run falls back to the one before it (the
//! fallback is listed in [`Checkpoint::notes`]) and recomputes the newest; only when neither
//! loads is the newest's error returned. A manifest written by another configuration is an
//! [`Error::CheckpointMismatch`]; a manifest that does not parse is an
//! [`Error::CheckpointFile`].

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use wgfhe::error::{Error, Result};
use wgfhe::math::sampling::{fresh_seed, Seed, SEED_BYTES};

/// File name of the manifest in a checkpoint directory.
pub const MANIFEST: &str = "manifest.json";

/// Version of the manifest layout.
const FORMAT: u32 = 1;

/// Largest manifest read (bytes): a manifest lists a few files per batch.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// Completed stages kept per batch (the newest and the one to fall back to).
const KEPT_STAGES: usize = 2;

/// What a checkpointed run computes: a resumed run must have exactly the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// `lr` or `cnn`.
    pub model: String,
    /// Parameter set name.
    pub params: String,
    /// Parameter id (hexadecimal).
    pub param_id: String,
    /// BXT variant name.
    pub variant: String,
    /// ReLU path (`lut` or `digits`; `None` for the LR).
    pub relu: Option<String>,
    /// Digits kept by the digit ReLU path (`None` otherwise).
    pub kept_digits: Option<usize>,
    /// Images run.
    pub images: usize,
    /// Images per batch.
    pub images_per_batch: usize,
    /// SHA-256 of the model's JSON (its weights).
    pub model_sha256: String,
    /// SHA-256 of the images' pixels and labels.
    pub data_sha256: String,
    /// The stages of one batch, in order.
    pub stages: Vec<String>,
}

/// One file of a stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRecord {
    name: String,
    bytes: u64,
    crc32c: u32,
}

/// One completed stage of a batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageRecord {
    stage: String,
    files: Vec<FileRecord>,
}

/// One batch: the digest of its inputs and its completed stages (oldest first, at most
/// [`KEPT_STAGES`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchRecord {
    batch: usize,
    inputs_sha256: String,
    stages: Vec<StageRecord>,
}

/// The manifest (no `Debug`: it holds the key seed).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    format: u32,
    config: CheckpointConfig,
    /// SHA-256 of the configuration's JSON: the fingerprint a resumed run is checked against
    /// first.
    config_sha256: String,
    /// Master seed of the key owner's randomness (hexadecimal).
    key_seed: String,
    batches: Vec<BatchRecord>,
    /// The largest peak resident memory (bytes) a process of this job reported when it
    /// completed a stage ([`Checkpoint::with_rss_probe`]): the job's peak across restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    peak_rss_bytes: Option<u64>,
}

/// What writing one stage cost.
#[derive(Debug, Clone, Serialize)]
pub struct StageWrite {
    /// Batch index.
    pub batch: usize,
    /// Stage name.
    pub stage: String,
    /// Ciphertext files written.
    pub files: usize,
    /// Bytes written (ciphertexts; the manifest is not counted).
    pub bytes: u64,
    /// Time to serialise the ciphertexts (ms).
    pub serialize_ms: f64,
    /// Time to write, sync and rename the files and the manifest (ms).
    pub write_ms: f64,
    /// The process's peak resident memory when the stage was written (bytes), if a probe
    /// was given ([`Checkpoint::with_rss_probe`]).
    pub peak_rss_bytes: Option<u64>,
}

/// A checkpoint directory (see the [module documentation](self)). Its `Debug` form shows
/// the directory and progress, never the key seed.
pub struct Checkpoint {
    dir: PathBuf,
    manifest: Option<Manifest>,
    seed: Option<Seed>,
    stop_after: Option<String>,
    batch: usize,
    notes: Vec<String>,
    writes: Vec<StageWrite>,
    inputs_ms: f64,
    rss_probe: Option<fn() -> Option<u64>>,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("dir", &self.dir)
            .field("config", &self.manifest.as_ref().map(|m| &m.config))
            .field("completed", &self.completed())
            .field("stop_after", &self.stop_after)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

/// Lowercase hexadecimal.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 in hexadecimal.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// An incremental SHA-256 (for digests of many objects).
#[derive(Debug, Clone, Default)]
pub struct Digester(Sha256);

impl Digester {
    /// Adds `bytes`, prefixed by their length (so that splits cannot collide).
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
    }

    /// The digest in hexadecimal.
    #[must_use]
    pub fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

fn parse_seed(text: &str) -> Option<Seed> {
    if text.len() != 2 * SEED_BYTES || !text.is_ascii() {
        return None;
    }
    let mut seed = [0u8; SEED_BYTES];
    for (i, b) in seed.iter_mut().enumerate() {
        *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(seed)
}

/// The file name of ciphertext `index` of `stage` in `batch`.
fn file_name(batch: usize, stage: &str, index: usize) -> String {
    format!("b{batch:06}-{stage}-{index:03}.wgfh")
}

/// A [`Error::CheckpointFile`] for `path`.
fn file_error(path: &Path, cause: Error) -> Error {
    Error::CheckpointFile { path: path.to_path_buf(), cause: Box::new(cause) }
}

/// Writes `m` as `dir/manifest.json`, atomically.
fn save_manifest(dir: &Path, m: &Manifest) -> Result<()> {
    let json = serde_json::to_string_pretty(m).map_err(|e| Error::json("encoding of the manifest", &e))?;
    write_atomic(dir, MANIFEST, json.as_bytes())
}

/// Writes `bytes` to `dir/name` atomically: a temporary file, synced, renamed over the name,
/// then the directory synced. Owner-only permissions on Unix.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(name);
    let tmp = dir.join(format!("{name}.tmp"));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(|e| Error::io("create", Some(&tmp), &e))?;
    file.write_all(bytes).map_err(|e| Error::io("write", Some(&tmp), &e))?;
    file.sync_all().map_err(|e| Error::io("sync", Some(&tmp), &e))?;
    drop(file);
    fs::rename(&tmp, &path).map_err(|e| Error::io("rename into place", Some(&path), &e))?;
    sync_dir(dir)
}

/// Makes a rename in `dir` durable (Unix; elsewhere a no-op).
fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let d = fs::File::open(dir).map_err(|e| Error::io("open the directory", Some(dir), &e))?;
        d.sync_all().map_err(|e| Error::io("sync the directory", Some(dir), &e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

impl Checkpoint {
    /// Opens the checkpoint directory `dir`, creating it if absent, and reads its manifest if
    /// it has one. Errors: [`Error::Io`] if the directory cannot be created or read;
    /// [`Error::CheckpointFile`] (naming the manifest) if the manifest cannot be read, does not
    /// parse, has another format version, or lists files that are not the checkpoint's own.
    pub fn open(dir: &Path) -> Result<Self> {
        fs::create_dir_all(dir).map_err(|e| Error::io("create the directory", Some(dir), &e))?;
        let meta = fs::metadata(dir).map_err(|e| Error::io("read", Some(dir), &e))?;
        if !meta.is_dir() {
            return Err(Error::io(
                "use as a checkpoint directory",
                Some(dir),
                &std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            ));
        }
        let path = dir.join(MANIFEST);
        let manifest = match fs::metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(file_error(&path, Error::io("read", Some(&path), &e))),
            Ok(m) if m.len() > MAX_MANIFEST_BYTES => {
                return Err(file_error(
                    &path,
                    Error::CountTooLarge { what: "manifest bytes", found: m.len(), limit: MAX_MANIFEST_BYTES },
                ))
            }
            Ok(_) => Some(Self::read_manifest(&path)?),
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            manifest,
            seed: None,
            stop_after: None,
            batch: 0,
            notes: Vec::new(),
            writes: Vec::new(),
            inputs_ms: 0.0,
            rss_probe: None,
        })
    }

    fn read_manifest(path: &Path) -> Result<Manifest> {
        let text = fs::read_to_string(path).map_err(|e| file_error(path, Error::io("read", Some(path), &e)))?;
        let m: Manifest =
            serde_json::from_str(&text).map_err(|e| file_error(path, Error::json("decoding of the manifest", &e)))?;
        let bad = |reason: &'static str| file_error(path, Error::InvalidField { field: "manifest", reason });
        if m.format != FORMAT {
            return Err(bad("unknown manifest format version"));
        }
        if parse_seed(&m.key_seed).is_none() {
            return Err(bad("the key seed is not 64 hexadecimal digits"));
        }
        let fingerprint = Self::fingerprint(&m.config)?;
        if fingerprint != m.config_sha256 {
            return Err(bad("the configuration does not match its fingerprint"));
        }
        for (i, b) in m.batches.iter().enumerate() {
            if b.batch != i {
                return Err(bad("batches out of order"));
            }
            if b.stages.len() > KEPT_STAGES {
                return Err(bad("more stages kept than a checkpoint writes"));
            }
            let mut last = None;
            for s in &b.stages {
                let index = m.config.stages.iter().position(|n| *n == s.stage).ok_or_else(|| bad("unknown stage"))?;
                if last.is_some_and(|l| l >= index) {
                    return Err(bad("stages out of order"));
                }
                last = Some(index);
                for (j, f) in s.files.iter().enumerate() {
                    // Only the checkpoint's own names: the run replaces and deletes them.
                    if f.name != file_name(b.batch, &s.stage, j) {
                        return Err(bad("a file name that is not the checkpoint's own"));
                    }
                }
            }
        }
        Ok(m)
    }

    fn fingerprint(config: &CheckpointConfig) -> Result<String> {
        let json = serde_json::to_string(config).map_err(|e| Error::json("encoding of the configuration", &e))?;
        Ok(sha256_hex(json.as_bytes()))
    }

    /// Reads the process's peak resident memory with `probe` (bytes; `None` where unknown)
    /// each time a stage is written, and keeps the largest value of every process of the job
    /// in the manifest ([`Checkpoint::job_peak_rss_bytes`]).
    #[must_use]
    pub fn with_rss_probe(mut self, probe: fn() -> Option<u64>) -> Self {
        self.rss_probe = Some(probe);
        self
    }

    /// The largest peak resident memory the job's processes reported when they wrote a stage
    /// (this one's included), across restarts; `None` if none was probed.
    #[must_use]
    pub fn job_peak_rss_bytes(&self) -> Option<u64> {
        self.manifest.as_ref().and_then(|m| m.peak_rss_bytes)
    }

    /// Uses `seed` as the key owner's master seed when the directory has no manifest yet (by
    /// default a fresh seed from the operating system), and requires it of an existing
    /// manifest. For reproducible tests: two runs with one seed produce the same ciphertexts.
    #[must_use]
    pub fn with_key_seed(mut self, seed: Seed) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Stops the run with [`Error::CheckpointStopped`] once `stage` has been completed (and
    /// written) by this run: for testing resumption. Unknown stage names are refused when the
    /// run starts ([`Error::InvalidField`]).
    #[must_use]
    pub fn stop_after(mut self, stage: &str) -> Self {
        self.stop_after = Some(stage.to_owned());
        self
    }

    /// The directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the resumed run did that a caller may want to report: stages resumed from, and
    /// fallbacks from a damaged stage to the one before it (with the error met).
    #[must_use]
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The stages this run wrote, with their sizes and times.
    #[must_use]
    pub fn writes(&self) -> &[StageWrite] {
        &self.writes
    }

    /// Time spent serialising and hashing the encrypted inputs of every batch for their
    /// digests (ms).
    #[must_use]
    pub fn inputs_digest_ms(&self) -> f64 {
        self.inputs_ms
    }

    /// `(batch, stage)` of every completed stage the manifest lists.
    #[must_use]
    pub fn completed(&self) -> Vec<(usize, String)> {
        self.manifest
            .iter()
            .flat_map(|m| &m.batches)
            .flat_map(|b| b.stages.iter().map(move |s| (b.batch, s.stage.clone())))
            .collect()
    }

    fn manifest_path(&self) -> PathBuf {
        self.dir.join(MANIFEST)
    }

    /// Binds the checkpoint to the run's `config`: checks an existing manifest against it
    /// ([`Error::CheckpointMismatch`] naming the first field that differs) or writes a new one,
    /// and returns the master seed of the key owner.
    pub(crate) fn bind(&mut self, config: CheckpointConfig) -> Result<Seed> {
        if let Some(stop) = &self.stop_after {
            if !config.stages.contains(stop) {
                return Err(Error::InvalidField {
                    field: "stop-after",
                    reason: "not a stage of this model's pipeline",
                });
            }
        }
        let path = self.manifest_path();
        if let Some(m) = &self.manifest {
            let mismatch = |field: &'static str, expected: String, found: String| Error::CheckpointMismatch {
                path: path.clone(),
                field,
                expected,
                found,
            };
            let (a, b) = (&config, &m.config);
            let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
            let num = |v: &Option<usize>| v.map_or_else(|| "none".into(), |k| k.to_string());
            let checks: [(&'static str, String, String); 10] = [
                ("model", a.model.clone(), b.model.clone()),
                ("parameter set", format!("{} ({})", a.params, a.param_id), format!("{} ({})", b.params, b.param_id)),
                ("variant", a.variant.clone(), b.variant.clone()),
                ("ReLU path", opt(&a.relu), opt(&b.relu)),
                ("kept digits", num(&a.kept_digits), num(&b.kept_digits)),
                ("number of images", a.images.to_string(), b.images.to_string()),
                ("images per batch", a.images_per_batch.to_string(), b.images_per_batch.to_string()),
                ("model weights (SHA-256)", a.model_sha256.clone(), b.model_sha256.clone()),
                ("images (SHA-256)", a.data_sha256.clone(), b.data_sha256.clone()),
                ("pipeline stages", a.stages.join(","), b.stages.join(",")),
            ];
            for (field, expected, found) in checks {
                if expected != found {
                    return Err(mismatch(field, expected, found));
                }
            }
            let seed = parse_seed(&m.key_seed)
                .ok_or_else(|| file_error(&path, Error::InvalidField { field: "manifest", reason: "bad key seed" }))?;
            if self.seed.is_some_and(|s| s != seed) {
                return Err(mismatch("key seed", "the seed given".into(), "another seed (not shown)".into()));
            }
            return Ok(seed);
        }
        let seed = match self.seed {
            Some(s) => s,
            None => fresh_seed()?,
        };
        let m = Manifest {
            format: FORMAT,
            config_sha256: Self::fingerprint(&config)?,
            config,
            key_seed: hex(&seed),
            batches: Vec::new(),
            peak_rss_bytes: None,
        };
        save_manifest(&self.dir, &m)?;
        self.manifest = Some(m);
        Ok(seed)
    }

    /// The bound manifest and the directory it is saved in (disjoint borrows of `self`).
    fn manifest_mut(&mut self) -> Result<(&mut Manifest, &Path)> {
        let m =
            self.manifest.as_mut().ok_or(Error::InvalidField { field: "checkpoint", reason: "used before bind" })?;
        Ok((m, &self.dir))
    }

    /// Starts batch `batch`, whose encrypted inputs have the digest `inputs_sha256` (computed
    /// in `digest_ms`): checks it against the manifest's record if the batch was started before
    /// (an [`Error::CheckpointMismatch`] if the regenerated keys or inputs differ), else
    /// records it.
    pub(crate) fn begin_batch(&mut self, batch: usize, inputs_sha256: String, digest_ms: f64) -> Result<()> {
        self.batch = batch;
        self.inputs_ms += digest_ms;
        let path = self.manifest_path();
        let (m, dir) = self.manifest_mut()?;
        match m.batches.get(batch) {
            Some(b) if b.inputs_sha256 != inputs_sha256 => Err(Error::CheckpointMismatch {
                path,
                field: "encrypted inputs (SHA-256: keys regenerated from the seed, images, variant)",
                expected: inputs_sha256,
                found: b.inputs_sha256.clone(),
            }),
            Some(_) => Ok(()),
            None if m.batches.len() == batch => {
                m.batches.push(BatchRecord { batch, inputs_sha256, stages: Vec::new() });
                save_manifest(dir, m)
            }
            None => Err(file_error(&path, Error::InvalidField { field: "manifest", reason: "a batch is missing" })),
        }
    }

    /// The batch being run (set by `begin_batch`).
    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    /// Loads the newest completed stage of the current batch that loads cleanly, parsing each
    /// file with `parse`: `(stage index in the pipeline, objects)`, or `None` if the batch has
    /// no stage. Falls back to the stage before a damaged one (noted); if none loads, the
    /// newest one's [`Error::CheckpointFile`].
    pub(crate) fn resume<T>(&mut self, mut parse: impl FnMut(&[u8]) -> Result<T>) -> Result<Option<(usize, Vec<T>)>> {
        let Some(m) = &self.manifest else { return Ok(None) };
        let Some(b) = m.batches.get(self.batch) else { return Ok(None) };
        let stages = m.config.stages.clone();
        let records = b.stages.clone();
        let mut first_error = None;
        let mut failed: Vec<String> = Vec::new();
        for s in records.iter().rev() {
            let index = stages.iter().position(|n| *n == s.stage).ok_or_else(|| {
                file_error(&self.manifest_path(), Error::InvalidField { field: "manifest", reason: "unknown stage" })
            })?;
            match self.load_stage(s, &mut parse) {
                Ok(objects) => {
                    for f in &failed {
                        self.notes.push(format!("batch {}: {f}; falling back to stage {}", self.batch, s.stage));
                    }
                    self.notes.push(format!(
                        "batch {}: resumed after stage {} ({} file(s) loaded from {})",
                        self.batch,
                        s.stage,
                        objects.len(),
                        self.dir.display()
                    ));
                    return Ok(Some((index, objects)));
                }
                Err(e) => {
                    failed.push(e.to_string());
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(None),
        }
    }

    fn load_stage<T>(&self, s: &StageRecord, parse: &mut impl FnMut(&[u8]) -> Result<T>) -> Result<Vec<T>> {
        let mut out = Vec::with_capacity(s.files.len());
        for f in &s.files {
            let path = self.dir.join(&f.name);
            let meta = fs::metadata(&path).map_err(|e| file_error(&path, Error::io("read", Some(&path), &e)))?;
            if meta.len() != f.bytes {
                return Err(file_error(&path, Error::LengthMismatch { declared: f.bytes, actual: meta.len() }));
            }
            let bytes = fs::read(&path).map_err(|e| file_error(&path, Error::io("read", Some(&path), &e)))?;
            // The object's own checks first (its checksum names damage as such), then whether
            // it is the object the manifest lists.
            let object = parse(&bytes).map_err(|e| file_error(&path, e))?;
            if crc32c::crc32c(&bytes) != f.crc32c {
                return Err(file_error(
                    &path,
                    Error::InvalidField {
                        field: "checkpoint file",
                        reason: "a valid object, but not the one the manifest lists (its CRC-32C differs)",
                    },
                ));
            }
            out.push(object);
        }
        Ok(out)
    }

    /// Records stage `stage_index` of the current batch as completed with `count` objects,
    /// object `i` serialised by `serialize(i)` and written atomically before the next is
    /// serialised (one object's bytes in memory at a time) and before the manifest lists the
    /// stage; drops the stages older than the one before it, and stops the run if
    /// `stop_after` names this stage.
    pub(crate) fn completed_stage(
        &mut self,
        stage_index: usize,
        count: usize,
        mut serialize: impl FnMut(usize) -> Result<Vec<u8>>,
    ) -> Result<()> {
        let batch = self.batch;
        let path = self.manifest_path();
        let stage = self
            .manifest
            .as_ref()
            .and_then(|m| m.config.stages.get(stage_index))
            .cloned()
            .ok_or_else(|| file_error(&path, Error::InvalidField { field: "manifest", reason: "unknown stage" }))?;
        let (mut serialize_ms, mut write_ms) = (0.0, 0.0);
        let mut files = Vec::with_capacity(count);
        for i in 0..count {
            let clock = Instant::now();
            let bytes = serialize(i)?;
            serialize_ms += clock.elapsed().as_secs_f64() * 1e3;
            let clock = Instant::now();
            let name = file_name(batch, &stage, i);
            write_atomic(&self.dir, &name, &bytes)?;
            write_ms += clock.elapsed().as_secs_f64() * 1e3;
            files.push(FileRecord { name, bytes: bytes.len() as u64, crc32c: crc32c::crc32c(&bytes) });
        }
        let bytes = files.iter().map(|f| f.bytes).sum();
        let clock = Instant::now();
        let rss = self.rss_probe.and_then(|probe| probe());
        let (m, dir) = self.manifest_mut()?;
        if let Some(r) = rss {
            m.peak_rss_bytes = Some(m.peak_rss_bytes.map_or(r, |p| p.max(r)));
        }
        let stages = m.config.stages.clone();
        let b = m.batches.get_mut(batch).ok_or_else(|| {
            file_error(&path, Error::InvalidField { field: "manifest", reason: "a batch is missing" })
        })?;
        // Drop this stage and any later one (a fallback recomputes them), then keep the newest.
        b.stages.retain(|s| stages.iter().position(|n| *n == s.stage).is_some_and(|i| i < stage_index));
        b.stages.push(StageRecord { stage: stage.clone(), files });
        let dropped: Vec<StageRecord> =
            b.stages.drain(..b.stages.len().saturating_sub(KEPT_STAGES)).collect::<Vec<_>>();
        save_manifest(dir, m)?;
        for s in &dropped {
            for f in &s.files {
                // Best effort: a file left behind is only unused space.
                let _ = fs::remove_file(self.dir.join(&f.name));
            }
        }
        self.writes.push(StageWrite {
            batch,
            stage: stage.clone(),
            files: count,
            bytes,
            serialize_ms,
            write_ms: write_ms + clock.elapsed().as_secs_f64() * 1e3,
            peak_rss_bytes: rss,
        });
        if self.stop_after.as_deref() == Some(stage.as_str()) {
            return Err(Error::CheckpointStopped { batch, stage });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_round_trip_through_hex_and_bad_ones_are_refused() {
        let seed: Seed = std::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(parse_seed(&hex(&seed)), Some(seed));
        assert_eq!(parse_seed("00"), None);
        assert_eq!(parse_seed(&"zz".repeat(SEED_BYTES)), None);
        assert_eq!(parse_seed(&"é".repeat(SEED_BYTES)), None);
    }

    #[test]
    fn digests_separate_their_parts() {
        let (mut a, mut b) = (Digester::default(), Digester::default());
        a.update(b"ab");
        a.update(b"c");
        b.update(b"a");
        b.update(b"bc");
        assert_ne!(a.finish(), b.finish());
    }
}
